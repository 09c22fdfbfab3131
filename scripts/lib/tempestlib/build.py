# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/tempest build: patch, overlay, configure and build QEMU; build
the guest side.

The QEMU tree unpacked by setup is put under git (tag 'debian-base') so that
target-patches/*.patch can be applied, and re-applied cleanly when they
change, by resetting to that tag.  Our sources are overlaid by symbolic
links, so an edit in hw/ is seen by ninja at once and rebuilds in seconds.
"""

import contextlib
import fcntl
import glob
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

from .common import (GUEST_BUILD, GUEST_LINUX_BUILD, QEMU_BIN, QEMU_BUILD,
                     ROOT, StepError, rel, run_step, say, tail)
from .setup import qemu_source_dir

GIT = ["git", "-c", "user.name=tempest", "-c", "user.email=build@tempest",
       "-c", "advice.detachedHead=false"]
BASE_TAG = "debian-base"
PATCH_STAMP = ".tempest-patches"

# (path in this repository, path in the QEMU tree)
OVERLAY = [
    ("hw/tempest", "hw/tempest"),
    ("hw/include/hw/tempest", "include/hw/tempest"),
    ("hw/include/standard-headers/tempest",
     "include/standard-headers/tempest"),
    ("hw/configs/tempest-devices.mak",
     "configs/devices/aarch64-softmmu/tempest.mak"),
    # the fabric fuzz target (target-patches/0003 builds it with fuzzing)
    ("tests/fuzz/tempest_fabric_fuzz.c",
     "tests/qtest/fuzz/tempest_fabric_fuzz.c"),
]


def qemu_targets():
    """QEMU itself and our qtests (each listed in target-patches/0001)."""
    return ["qemu-system-aarch64"] + [
        "tests/qtest/" + os.path.basename(f)[:-2]
        for f in sorted(glob.glob(os.path.join(ROOT, "tests/qtest/*.c")))]


def configure_args(src):
    return [
        os.path.join(src, "configure"),
        "--target-list=aarch64-softmmu",
        "--without-default-features",
        "--without-default-devices",
        "--with-devices-aarch64=tempest",
        "--enable-tcg", "--enable-slirp", "--enable-fdt=system",
        # the shared directory of Linux nodes (9p over virtio); glibc's
        # <sys/xattr.h> serves as libattr, so no package is needed
        "--enable-virtfs", "--enable-attr",
        "--disable-docs", "--disable-install-blobs", "--disable-werror",
        "--python=/usr/bin/python3",
    ]


def ccache_env():
    env = dict(os.environ)
    if os.path.isdir("/usr/lib/ccache"):
        env["PATH"] = "/usr/lib/ccache:" + env.get("PATH", "")
        # Paths inside the checkout are hashed relative to it, so a clean
        # clone elsewhere (CI) hits what an earlier build cached.
        env.setdefault("CCACHE_BASEDIR", ROOT)
        env.setdefault("CCACHE_NOHASHDIR", "1")
    return env


def git_dir(src):
    """Our record of the QEMU tree lives beside it, not in it: QEMU's
    configure turns -Werror on for every file when it finds a .git."""
    return src + ".git"


def git(src, *args, check=True, capture=False):
    r = subprocess.run(GIT + ["--git-dir", git_dir(src), "--work-tree", src]
                       + list(args), cwd=src, text=True,
                       stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE if capture else
                       subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if check and r.returncode != 0:
        raise StepError(f"build: git {' '.join(args)} failed in "
                        f"{rel(src)}: {r.stderr.strip()}")
    return r


def patches():
    return sorted(glob.glob(os.path.join(ROOT, "target-patches", "*.patch")))


def patch_hash(files):
    h = hashlib.sha256()
    for p in files:
        h.update(os.path.basename(p).encode() + b"\0")
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def prepare_tree():
    """Put the QEMU tree under git, apply our patches, overlay hw/."""
    src = qemu_source_dir()
    if src is None:
        raise StepError("build: no QEMU source; run 'scripts/tempest setup'")
    if os.path.isdir(os.path.join(src, ".git")):
        os.rename(os.path.join(src, ".git"), git_dir(src))
    if not os.path.isdir(git_dir(src)):
        say(f"build: recording {os.path.basename(src)} (with Debian's "
            "patches) as the base for ours")
        git(src, "init", "-q")
        git(src, "add", "-A")
        git(src, "commit", "-q", "-m", "QEMU with Debian's patches")
        git(src, "tag", BASE_TAG)

    files = patches()
    want = patch_hash(files)
    stamp = git_dir(src) + PATCH_STAMP
    have = open(stamp).read().strip() if os.path.exists(stamp) else None
    if have != want:
        if have is not None:
            say("build: target-patches changed; resetting the QEMU tree to "
                "Debian's and re-applying")
        git(src, "reset", "-q", "--hard", BASE_TAG)
        # Files a patch created are untracked: remove them too.  (The
        # overlay's links go as well; they are made again below.)
        git(src, "clean", "-fdq")
        for p in files:
            r = git(src, "apply", "--index", "--whitespace=nowarn", p,
                    check=False)
            if r.returncode != 0:
                git(src, "reset", "-q", "--hard", BASE_TAG)
                git(src, "clean", "-fdq")
                raise StepError(f"build: patch {os.path.relpath(p, ROOT)} "
                                f"does not apply:\n{r.stderr.strip()}")
            say(f"build: applied {os.path.relpath(p, ROOT)}")
        with open(stamp, "w") as f:
            f.write(want + "\n")

    links = list(OVERLAY)
    qtests = sorted(glob.glob(os.path.join(ROOT, "tests/qtest/*.c")))
    for f in qtests + sorted(glob.glob(os.path.join(ROOT,
                                                    "tests/qtest/*.h"))):
        links.append((os.path.relpath(f, ROOT),
                      "tests/qtest/" + os.path.basename(f)))
    # The patch reads our qtests' names from this file.
    names = "".join(os.path.basename(f)[:-2] + "\n" for f in qtests)
    listing = os.path.join(src, "tests/qtest/tempest-qtests.txt")
    if not os.path.exists(listing) or open(listing).read() != names:
        with open(listing, "w") as f:
            f.write(names)
    for ours, theirs in links:
        target = os.path.join(ROOT, ours)
        link = os.path.join(src, theirs)
        if os.path.islink(link):
            if os.readlink(link) == target:
                continue
            os.unlink(link)
        elif os.path.isdir(link):
            shutil.rmtree(link)
        elif os.path.exists(link):
            os.unlink(link)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)
    return src


def configure(src, build_dir=QEMU_BUILD, args=None):
    """Configure a QEMU build in build_dir (by default the main build with
    configure_args) unless it already is, with the same arguments."""
    args = args or configure_args(src)
    stamp = os.path.join(build_dir, ".tempest-configure")
    want = "\n".join(args) + "\n"
    if os.path.exists(os.path.join(build_dir, "build.ninja")) and \
       os.path.exists(stamp) and open(stamp).read() == want:
        return
    if os.path.exists(build_dir):
        shutil.rmtree(build_dir)
    os.makedirs(build_dir)
    log = os.path.join(build_dir, "configure.log")
    say(f"build: configuring QEMU in {rel(build_dir)} (log: {rel(log)})")
    run_step("build: QEMU configure", args, cwd=build_dir,
             env=ccache_env(), log=log)
    with open(stamp, "w") as f:
        f.write(want)


def ninja_with_progress(step, build_dir, targets, jobs, log, env=None):
    """Run ninja, printing a progress line every 10% or 20 s, every
    warning and error at once, and the tail of the log on failure."""
    cmd = ["ninja", "-C", build_dir] + (["-j", str(jobs)] if jobs else []) \
        + targets
    prog = re.compile(r"^\[(\d+)/(\d+)\]")
    last_pct, last_t = -10, time.monotonic()
    with open(log, "w") as lf:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             errors="replace", env=env,
                             stdin=subprocess.DEVNULL)
        for line in p.stdout:
            lf.write(line)
            m = prog.match(line)
            if m:
                n, total = int(m.group(1)), int(m.group(2))
                pct = 100 * n // max(total, 1)
                now = time.monotonic()
                if pct >= last_pct + 10 or now - last_t > 20:
                    say(f"{step}: {n}/{total} ({pct}%)")
                    last_pct, last_t = pct, now
            elif "warning:" in line or "error:" in line:
                print(line, end="", flush=True)
        rc = p.wait()
    if rc != 0:
        raise StepError(f"{step} failed (ninja exit {rc}); last lines of "
                        f"{rel(log)}:\n" + tail(log, 40))


def qemu_version():
    r = subprocess.run([QEMU_BIN, "--version"], capture_output=True,
                       text=True)
    return r.stdout.splitlines()[0] if r.stdout else "?"


def build_qemu(jobs):
    t0 = time.monotonic()
    src = prepare_tree()
    configure(src)
    ninja_with_progress("build: QEMU", QEMU_BUILD, qemu_targets(), jobs,
                        os.path.join(QEMU_BUILD, "build.log"),
                        env=ccache_env())
    say(f"build: {qemu_version()} ready in {time.monotonic() - t0:.1f} s: "
        f"{rel(QEMU_BIN)}")


def build_guest(jobs):
    """The guest programs twice from the same sources: bare metal
    (build/guest) and as Linux processes (build/guest-linux)."""
    for name, out, cross in (
            ("guest", GUEST_BUILD, "aarch64-tempest.ini"),
            ("guest-linux", GUEST_LINUX_BUILD, "aarch64-linux.ini")):
        cross = os.path.join(ROOT, "guest/cross", cross)
        if not os.path.exists(os.path.join(out, "build.ninja")):
            log = os.path.join(ROOT, "build", f"{name}-setup.log")
            say(f"build: configuring the {name} build (log: {rel(log)})")
            if os.path.exists(out):
                shutil.rmtree(out)
            run_step(f"build: meson setup ({name})",
                     ["meson", "setup", out, ROOT, "--cross-file", cross],
                     log=log)
        ninja_with_progress(f"build: {name}", out, [], jobs,
                            os.path.join(ROOT, "build", f"{name}-build.log"))
    say("build: guest runtime, libraries, examples and tests ready in "
        f"{rel(GUEST_BUILD)} (bare metal) and {rel(GUEST_LINUX_BUILD)} "
        "(Linux processes)")


@contextlib.contextmanager
def build_lock(who="build"):
    """One build at a time per tree: a second 'build', 'test', 'bench' or
    'fuzz' started meanwhile waits here instead of racing ninja and the
    patches of the shared QEMU tree."""
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    with open(os.path.join(ROOT, "build", ".build-lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"{who}: another build of this tree is running; waiting")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build_all(jobs=None):
    with build_lock():
        build_qemu(jobs)
        build_guest(jobs)


def guest_program(relpath):
    path = os.path.join(GUEST_BUILD, "guest", relpath)
    if not os.path.exists(path):
        raise StepError(f"{rel(path)} is not built; run 'scripts/tempest "
                        "build'")
    return path


def cc_flags(linux=False):
    path = (os.path.join(GUEST_LINUX_BUILD, "guest/rt-linux/cc-flags.txt")
            if linux else os.path.join(GUEST_BUILD, "guest/rt/cc-flags.txt"))
    if not os.path.exists(path):
        build_guest(None)
    flags = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            flags[k] = shlex.split(v)
    return flags.get("CFLAGS", []), flags.get("LDFLAGS", [])


def guest_cc(args):
    if args and args[0] == "--":
        args = args[1:]
    linux = bool(args) and args[0] == "--linux"
    if linux:
        # A program for Linux nodes: glibc, static (a node's initramfs has
        # no shared libraries), over the Linux runtime (guest/rt-linux)
        # with the same libraries and headers as a bare-metal program.
        args = args[1:]
        if args and args[0] == "--plain":
            # glibc alone: a program that opens /dev/tempest0 itself.
            inc = os.path.join(ROOT, "hw/include/standard-headers")
            return subprocess.run(["aarch64-linux-gnu-gcc", "-static", "-I",
                                   inc] + args[1:]).returncode
    if not args:
        raise StepError("cc: usage: scripts/tempest cc [--linux] -o prog "
                        "prog.c [more.c] [cflags]")
    cflags, ldflags = cc_flags(linux)
    extra = send_extra_header(args)
    cmd = (["aarch64-linux-gnu-gcc"] + cflags + ["-include", extra] + args +
           ldflags)
    return subprocess.run(cmd).returncode


def send_extra_header(args):
    """The TPPI_send_ functions the program's sources name beyond the
    library's (Tempest 3.3.2: any item list), generated into a header
    that the compiler force-includes (guest/lib/tempest/gen-send.py)."""
    srcs = [a for a in args if a.endswith(".c") and os.path.isfile(a)]
    dirs = {os.path.dirname(os.path.abspath(a)) for a in srcs}
    srcs += sorted(h for d in dirs for h in glob.glob(os.path.join(d, "*.h")))
    key = hashlib.sha256("\0".join(os.path.abspath(a) for a in srcs)
                         .encode()).hexdigest()[:16]
    out_dir = os.path.join(ROOT, "build", "cc-gen")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, f"tempest-send-{key}.h")
    gen = os.path.join(ROOT, "guest", "lib", "tempest", "gen-send.py")
    r = subprocess.run([sys.executable, gen, "extra", out] + srcs,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise StepError(f"cc: gen-send.py failed: {r.stderr.strip()}")
    return out
