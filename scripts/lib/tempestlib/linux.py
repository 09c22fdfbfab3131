# SPDX-License-Identifier: GPL-2.0-or-later
"""Linux nodes: Debian's arm64 kernel, an initramfs of busybox and the
modules a node needs, and what a node's QEMU gets to boot them
(docs/linux.rst).

setup_linux() fetches linux-image-arm64's kernel package and busybox-static
for arm64 with 'apt-get download' through a private apt configuration under
build/linux/apt (APT::Architecture arm64, the host's architecture as a
second one, its own lists, cache and an empty dpkg status; the host's
sources and keys): the host's dpkg architectures and installed packages
are left alone.  The packages are unpacked with 'dpkg-deb -x' into
build/linux/root.  For the node controller's driver it also fetches that
kernel's headers (linux-headers-<release>, its -common) and the host's
linux-kbuild-<major.minor> (fixdep, modpost: host programs), all of the
kernel's version, unpacked into build/linux/kbuild with their absolute
symbolic links made relative, so that the kbuild tree works in place.
build/linux/versions.txt records what was fetched.

driver_module() builds guest/linux/driver (tempest.ko) against those
headers with the host's aarch64 cross compiler into build/linux/driver.
initramfs() writes build/linux/initramfs.cpio (uncompressed: the node's
kernel unpacks it faster than it would inflate it under TCG): busybox, the
modules of MODULES with what they depend on (read from each module's
.modinfo, as the package ships no modules.dep), tempest.ko, their load
order, and /init (INIT below).
"""

import fcntl
import glob
import hashlib
import os
import re
import secrets
import shlex
import shutil
import stat
import subprocess
import time

from .common import (BUILD, ROOT, StepError, rel, run_step, say,
                     write_whole)

LINUX = os.path.join(BUILD, "linux")
APT_DIR = os.path.join(LINUX, "apt")
DEBS = os.path.join(LINUX, "debs")
UNPACKED = os.path.join(LINUX, "root")
VERSIONS = os.path.join(LINUX, "versions.txt")
INITRAMFS = os.path.join(LINUX, "initramfs.cpio")
KBUILD = os.path.join(LINUX, "kbuild")          # headers + kbuild, unpacked
KBUILD_DEBS = os.path.join(LINUX, "debs-kbuild")
DRIVER_SRC = os.path.join(ROOT, "guest", "linux", "driver")
DRIVER_OUT = os.path.join(LINUX, "driver")
HW_INCLUDE = os.path.join(ROOT, "hw", "include", "standard-headers")
CROSS = "aarch64-linux-gnu-"

KERNEL_META = "linux-image-arm64"
BUSYBOX = "busybox-static"

# What /init loads, in this order; their dependencies come first.  Our
# driver (DRIVER) comes last.
MODULES = ["virtio_mmio", "virtio_net", "9pnet_virtio", "9p"]
DRIVER = "tempest"
DEVICE = "/dev/tempest0"

# Where the share and the run directory are mounted in a node.
SHARE_TAG = "tempest"
RUN_TAG = "tempest-run"
RUN_MOUNT = "/run/tempest"
SHELL_PORT = 23         # the node's shell service (telnetd)
NOSHARE_DIR = "/tmp/tempest-job"   # --no-share: the job's copy in a node

# telnetd's login program: the first line must be the node's shell token.
LOGIN = r"""#!/bin/sh
stty -echo 2>/dev/null
IFS= read -r token
stty echo 2>/dev/null
want=$(cat /etc/shell-token 2>/dev/null)
if [ -z "$want" ] || [ "$token" != "$want" ]; then
    echo "tempest: not this node's shell token"
    sleep 1
    exit 1
fi
exec /bin/sh
"""

# TEMPEST_NC_BASE + TEMPEST_NC_EXIT (tempest-hw.h), filled in by initramfs()
INIT = r"""#!/bin/sh
# /init of a Tempest Linux node, written by scripts/lib/tempestlib/linux.py.
# Mounts what a node needs, brings up the NIC and the shared directory,
# runs the job the launcher wrote, and ends QEMU with the job's status
# through the node controller's EXIT register.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /sbin /usr/bin /usr/sbin \
    /root /etc
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts
mount -t devpts devpts /dev/pts

say() { echo "tempest-init: $*"; }

# End the node: drain the console, then write the status to the node
# controller's EXIT register (QEMU exits with it).
finish() {
    sync
    stty -F /dev/console -ixany 2>/dev/null
    devmem @NC_EXIT@ 32 "$1"
    # QEMU ends the node once the fabric has said goodbye to its peers,
    # which takes a moment in a large cluster: still here after that, the
    # write failed.  A power-off would look like status 0, a panic does
    # not (the launcher reports it as a crash).
    sleep 10
    say "could not write the node controller's EXIT register"
    echo c > /proc/sysrq-trigger
}

NODE=0 NODES=1 SHARE= SHELL=0 NOSHARE=0
for arg in $(cat /proc/cmdline); do
    case "$arg" in
    tempest.noshare=*) NOSHARE="${arg#*=}" ;;
    tempest.node=*) NODE="${arg#*=}" ;;
    tempest.nodes=*) NODES="${arg#*=}" ;;
    tempest.share=*) SHARE="${arg#*=}" ;;
    tempest.shell=*) SHELL="${arg#*=}" ;;
    esac
done
export TEMPEST_NODE="$NODE" TEMPEST_NODES="$NODES" HOME=/root
hostname "node$NODE"

while read -r m; do
    insmod "/lib/modules/$m.ko" || say "insmod $m failed"
done < /lib/modules/load-order
# The node controller's driver (docs/linux.rst, "The device from user
# space"), loaded last by the list above.
[ -c @DEVICE@ ] || say "NO @DEVICE@: the node controller's driver \
(@DRIVER@.ko) did not load or bind; 'dmesg | grep tempest' says why"

ip link set lo up
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 &&
    ip route add default via 10.0.2.2 || say "no network (eth0)"
echo "nameserver 10.0.2.3" > /etc/resolv.conf

OPTS=trans=virtio,version=9p2000.L,msize=262144
mkdir -p @RUN_MOUNT@
mount -t 9p -o "$OPTS" @RUN_TAG@ @RUN_MOUNT@ || {
    say "cannot mount the run directory"; finish 125; }
if [ -n "$SHARE" ]; then
    mkdir -p "$SHARE" && mount -t 9p -o "$OPTS" @SHARE_TAG@ "$SHARE" &&
        ln -s "$SHARE" /tempest || say "cannot mount the share at $SHARE"
fi

# The shell service asks for this node's token first (the launcher's
# file, 0600 on the host: other users of the host cannot log in).
cp "@RUN_MOUNT@/node$NODE.shell-token" /etc/shell-token 2>/dev/null &&
    chmod 600 /etc/shell-token || say "no shell token: no shell service"
telnetd -p @SHELL_PORT@ -l /bin/tempest-login

# The job: the program and its arguments, quoted by the launcher.  With
# tempest.noshare=1 the job and the files it names are copied into the
# node and the run directory unmounted first: no share is mounted while
# the program runs, so QEMU can save the node (docs/checkpoint.rst).
JOB=@RUN_MOUNT@/job
if [ "$NOSHARE" = 1 ]; then
    mkdir -p @NOSHARE_DIR@
    cp @RUN_MOUNT@/job @NOSHARE_DIR@/job || say "cannot copy the job"
    while IFS= read -r f; do
        cp -p "@RUN_MOUNT@/$f" "@NOSHARE_DIR@/$f" || say "cannot copy $f"
    done < @RUN_MOUNT@/noshare.list
    JOB=@NOSHARE_DIR@/job
    umount @RUN_MOUNT@ || say "cannot unmount the run directory"
fi
cd /root
say "running the program on node $NODE of $NODES"
. "$JOB" < /dev/null
status=$?
if [ "$SHELL" = 1 ]; then
    say "program exited $status; a shell on node $NODE (exit ends the node)"
    setsid cttyhack sh -l
fi
finish "$status"
"""


def host_arch():
    """The host's dpkg architecture (amd64): kbuild's programs run here."""
    r = subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                       text=True)
    return r.stdout.strip() or "amd64"


def apt_conf():
    """The private apt configuration; apt's state lives under APT_DIR."""
    for d in ("lists/partial", "cache/archives/partial", "prefs"):
        os.makedirs(os.path.join(APT_DIR, d), exist_ok=True)
    status = os.path.join(APT_DIR, "status")
    if not os.path.exists(status):
        open(status, "w").close()
    conf = os.path.join(APT_DIR, "apt.conf")
    archs = ["arm64"] + [a for a in [host_arch()] if a != "arm64"]
    text = "".join(f'{k} "{v}";\n' for k, v in [
        ("APT::Architecture", "arm64"),
        ("Dir::State", APT_DIR),
        ("Dir::State::lists", os.path.join(APT_DIR, "lists")),
        ("Dir::State::status", status),
        ("Dir::Cache", os.path.join(APT_DIR, "cache")),
        ("Dir::Etc::Preferences", "/dev/null"),
        ("Dir::Etc::PreferencesParts", os.path.join(APT_DIR, "prefs")),
        ("APT::Sandbox::User", "root"),
        ("Acquire::Languages", "none"),
        # binary packages only (the host's deb-src entries are not needed)
        ("Acquire::IndexTargets::deb-src::Sources::DefaultEnabled",
         "false"),
    ]) + "APT::Architectures { " + " ".join(f'"{a}";' for a in archs) \
        + " };\n"
    with open(conf, "w") as f:
        f.write(text)
    return dict(os.environ, APT_CONFIG=conf, DEBIAN_FRONTEND="noninteractive")


def versions():
    """{package: version} as recorded by setup_linux, or {}."""
    out = {}
    if os.path.exists(VERSIONS):
        with open(VERSIONS) as f:
            for line in f:
                k, _, v = line.strip().partition(" ")
                if k and v:
                    out[k] = v
    return out


def kernel_release():
    """The release of the unpacked kernel (e.g. 6.1.0-56-arm64), or None."""
    rels = sorted(os.listdir(os.path.join(UNPACKED, "lib/modules"))) \
        if os.path.isdir(os.path.join(UNPACKED, "lib/modules")) else []
    return rels[-1] if rels else None


def kernel_image():
    rel_ = kernel_release()
    path = rel_ and os.path.join(UNPACKED, "boot", f"vmlinuz-{rel_}")
    if not path or not os.path.exists(path):
        raise StepError("run --linux: no kernel; run 'scripts/tempest "
                        "setup'")
    return path


def headers_tree(release=None):
    """The kbuild tree of the kernel's headers (make -C it), or None."""
    release = release or kernel_release()
    path = release and os.path.join(KBUILD, "usr/src",
                                    f"linux-headers-{release}")
    return path if path and os.path.exists(
        os.path.join(path, "scripts/basic/fixdep")) else None


def _available(env, pkg):
    """The versions of pkg the private lists offer, newest first."""
    r = subprocess.run(["apt-cache", "madison", pkg], env=env,
                       capture_output=True, text=True)
    return [f[1].strip() for f in (line.split("|") for line in
                                   r.stdout.splitlines()) if len(f) >= 3]


def kbuild_version(version, offered):
    """The version of linux-kbuild-X.Y to take for a kernel at version:
    the same one if offered, else the newest of the same upstream version
    (Debian rebuilds linux-kbuild on its own: 6.1.192-3 beside headers of
    6.1.192-2; its fixdep and modpost are those of 6.1.192), else None."""
    if version in offered:
        return version
    upstream = version.rsplit("-", 1)[0]
    same = [v for v in offered if v.rsplit("-", 1)[0] == upstream]
    return same[0] if same else None


def kbuild_packages(release, version, env=None):
    """The packages of the headers and kbuild of release, at version (the
    kbuild at the version kbuild_version() picks from what apt offers)."""
    common = release.rsplit("-", 1)[0] + "-common"
    series = ".".join(release.split(".")[:2])
    kbuild = f"linux-kbuild-{series}:{host_arch()}"
    offered = _available(env, kbuild) if env is not None else [version]
    kv = kbuild_version(version, offered)
    if kv is None:
        raise StepError(f"setup: no {kbuild} of the kernel's version "
                        f"{version.rsplit('-', 1)[0]} (apt offers "
                        f"{', '.join(offered) or 'none'})")
    return [f"linux-headers-{release}={version}",
            f"linux-headers-{common}={version}",
            f"{kbuild}={kv}"]


def _fetch(env, pkgs, debs, dest, what):
    """apt-get download pkgs into debs, unpack them into dest (both made
    afresh); returns the 'package version' lines for VERSIONS."""
    shutil.rmtree(debs, ignore_errors=True)
    os.makedirs(debs)
    say(f"setup: Linux nodes: downloading {' '.join(pkgs)} ({what})")
    run_step("setup: apt-get download", ["apt-get", "download", "-q"] + pkgs,
             cwd=debs, env=env, quiet=True)
    shutil.rmtree(dest, ignore_errors=True)
    recorded = []
    for deb in sorted(glob.glob(os.path.join(debs, "*.deb"))):
        info = subprocess.run(["dpkg-deb", "-W", "--showformat",
                               "${Package} ${Version}", deb],
                              capture_output=True, text=True).stdout.split()
        say(f"setup: Linux nodes: unpacking {os.path.basename(deb)}")
        run_step("setup: dpkg-deb -x", ["dpkg-deb", "-x", deb, dest],
                 quiet=True)
        if len(info) == 2:
            recorded.append(f"{info[0]} {info[1]}\n")
    return recorded


def _relocate(top):
    """Make the kbuild tree under top work in place: its absolute symbolic
    links (lib/modules/R/build -> /usr/src/...) point inside top instead,
    relatively, and the headers' Makefile includes -common's Makefile
    beside it instead of /usr/src's."""
    for dirpath, dirs, files in os.walk(top):
        for name in dirs + files:
            link = os.path.join(dirpath, name)
            if os.path.islink(link) and os.readlink(link).startswith("/"):
                target = top + os.readlink(link)
                os.unlink(link)
                os.symlink(os.path.relpath(target, dirpath), link)
    for mk in glob.glob(os.path.join(top, "usr/src/linux-headers-*/Makefile")):
        with open(mk) as f:
            text = f.read()
        fixed = re.sub(r"^include /usr/src/",
                       "include $(dir $(lastword $(MAKEFILE_LIST)))../",
                       text, flags=re.M)
        if fixed != text:
            with open(mk, "w") as f:
                f.write(fixed)


def setup_linux(quiet=False):
    """Fetch and unpack the kernel, busybox, and the kernel's headers and
    kbuild (idempotent)."""
    have = versions()
    kernel = bool(have and kernel_release() and os.path.exists(
        os.path.join(UNPACKED, "bin/busybox")))
    if kernel and headers_tree():
        if not quiet:
            say("setup: Linux nodes: " + ", ".join(
                f"{k} {v}" for k, v in sorted(have.items())))
        return
    if os.geteuid() != 0:
        raise StepError("setup: fetching the arm64 kernel runs apt-get "
                        "(as root)")
    env = apt_conf()
    say(f"setup: Linux nodes: apt-get update for arm64 and {host_arch()} "
        f"(private lists in {rel(APT_DIR)})")
    run_step("setup: apt-get update (arm64)", ["apt-get", "update", "-q"],
             env=env, quiet=True)
    recorded = []
    if not kernel:
        r = subprocess.run(["apt-cache", "depends", KERNEL_META], env=env,
                           capture_output=True, text=True)
        m = re.search(r"Depends: (linux-image-\S+-arm64)\b", r.stdout)
        if not m:
            raise StepError(f"setup: cannot resolve {KERNEL_META} for arm64: "
                            f"{r.stdout.strip()} {r.stderr.strip()}")
        recorded = _fetch(env, [m.group(1), BUSYBOX], DEBS, UNPACKED,
                          "arm64, about 60 MB")
        if os.path.exists(INITRAMFS):
            os.unlink(INITRAMFS)
    else:
        recorded = [f"{k} {v}\n" for k, v in sorted(have.items())
                    if not k.startswith(("linux-headers-", "linux-kbuild-"))]
    release = kernel_release()
    version = dict(line.split() for line in recorded).get(
        f"linux-image-{release}")
    if not version:
        raise StepError(f"setup: no version recorded for linux-image-"
                        f"{release}; delete {rel(LINUX)} and run setup again")
    recorded += _fetch(env, kbuild_packages(release, version, env),
                       KBUILD_DEBS,
                       KBUILD, "headers and kbuild, about 14 MB")
    _relocate(KBUILD)
    if not headers_tree(release):
        raise StepError(f"setup: no kbuild tree for {release} in "
                        f"{rel(KBUILD)} after unpacking")
    with open(VERSIONS, "w") as f:
        f.writelines(recorded)
    say(f"setup: Linux nodes: {release}, busybox in {rel(UNPACKED)}, its "
        f"headers and kbuild in {rel(KBUILD)} ({rel(VERSIONS)})")


def _module_index(release):
    """{name: path} of every module of the kernel (names with '_')."""
    index = {}
    top = os.path.join(UNPACKED, "lib/modules", release, "kernel")
    for dirpath, _, files in os.walk(top):
        for f in files:
            if f.endswith(".ko"):
                index[f[:-3].replace("-", "_")] = os.path.join(dirpath, f)
    return index


def _depends(path):
    with open(path, "rb") as f:
        m = re.search(rb"\0depends=([^\0]*)\0", f.read())
    return [d.decode().replace("-", "_") for d in m.group(1).split(b",")
            if d] if m else []


def module_order(release, wanted=MODULES):
    """The modules to load, each after what it depends on, as paths."""
    index = _module_index(release)
    order = []

    def visit(name, chain):
        name = name.replace("-", "_")
        if name in order:
            return
        if name not in index:
            raise StepError(f"initramfs: module {name} (for "
                            f"{' <- '.join(chain)}) is not in {release}")
        for dep in _depends(index[name]):
            visit(dep, chain + [name])
        order.append(name)

    for w in wanted:
        visit(w, [w])
    return [(n, index[n]) for n in order]


def _nc_exit_address():
    hdr = os.path.join(ROOT, "hw/include/standard-headers/tempest/"
                       "tempest-hw.h")
    vals = {}
    with open(hdr) as f:
        for line in f:
            m = re.match(r"#define\s+(TEMPEST_NC_BASE|TEMPEST_NC_EXIT)\s+"
                         r"(0x[0-9A-Fa-f]+)", line)
            if m:
                vals[m.group(1)] = int(m.group(2), 16)
    return vals["TEMPEST_NC_BASE"] + vals["TEMPEST_NC_EXIT"]


def init_script():
    text = INIT
    for k, v in {"NC_EXIT": f"{_nc_exit_address():#x}",
                 "RUN_MOUNT": RUN_MOUNT, "RUN_TAG": RUN_TAG,
                 "SHARE_TAG": SHARE_TAG,
                 "SHELL_PORT": str(SHELL_PORT), "DEVICE": DEVICE,
                 "DRIVER": DRIVER, "NOSHARE_DIR": NOSHARE_DIR}.items():
        text = text.replace(f"@{k}@", v)
    return text


class Cpio:
    """A newc cpio archive, as the kernel's initramfs unpacker reads it."""

    def __init__(self, f):
        self.f = f
        self.ino = 1

    def _entry(self, name, mode, data=b""):
        name_b = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08X}" for v in [
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0,
            len(name_b), 0])
        self.ino += 1
        self.f.write(hdr.encode() + name_b)
        self.f.write(b"\0" * (-(110 + len(name_b)) % 4))
        self.f.write(data)
        self.f.write(b"\0" * (-len(data) % 4))

    def dir(self, name):
        self._entry(name, stat.S_IFDIR | 0o755)

    def file(self, name, data, mode=0o644):
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name, target):
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def close(self):
        self._entry("TRAILER!!!", 0)


def driver_module(release):
    """Build DRIVER_OUT/tempest.ko (debug information stripped, as Debian
    ships its modules) from guest/linux/driver against the kernel's
    headers, when its inputs changed; returns its path."""
    tree = headers_tree(release)
    if tree is None:
        raise StepError(f"run --linux: no headers for {release} to build "
                        "the node controller's driver; run "
                        "'scripts/tempest setup'")
    sources = sorted(os.listdir(DRIVER_SRC))
    h = hashlib.sha256(release.encode())
    for name in sources:
        with open(os.path.join(DRIVER_SRC, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    with open(os.path.join(HW_INCLUDE, "tempest", "tempest-hw.h"), "rb") as f:
        h.update(f.read())
    ko = os.path.join(DRIVER_OUT, f"{DRIVER}-stripped.ko")
    stamp = os.path.join(DRIVER_OUT, "stamp")
    if os.path.exists(ko) and os.path.exists(stamp) and \
       open(stamp).read() == h.hexdigest():
        return ko
    t0 = time.monotonic()
    shutil.rmtree(DRIVER_OUT, ignore_errors=True)
    os.makedirs(DRIVER_OUT)
    for name in sources:
        shutil.copy(os.path.join(DRIVER_SRC, name), DRIVER_OUT)
    log = os.path.join(DRIVER_OUT, "build.log")
    run_step("initramfs: building the driver (tempest.ko)",
             ["make", "-C", tree, f"M={DRIVER_OUT}", "ARCH=arm64",
              f"CROSS_COMPILE={CROSS}", f"TEMPEST_HW_INCLUDE={HW_INCLUDE}",
              "modules"], log=log)
    run_step("initramfs: stripping tempest.ko",
             [CROSS + "strip", "--strip-debug", "-o", ko,
              os.path.join(DRIVER_OUT, f"{DRIVER}.ko")], log=log + ".strip")
    with open(stamp, "w") as f:
        f.write(h.hexdigest())
    say(f"run: built {rel(ko)} in {time.monotonic() - t0:.1f} s "
        f"(log: {rel(log)})")
    return ko


def initramfs():
    """Build INITRAMFS when its inputs changed; returns its path."""
    os.makedirs(LINUX, exist_ok=True)
    # One launcher at a time builds the driver and the archive.
    with open(os.path.join(LINUX, ".initramfs-lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _initramfs()


def _initramfs():
    release = kernel_release()
    busybox = os.path.join(UNPACKED, "bin/busybox")
    if release is None or not os.path.exists(busybox):
        raise StepError("run --linux: no kernel or busybox; run "
                        "'scripts/tempest setup'")
    mods = module_order(release)
    driver = driver_module(release)
    init = init_script().encode()
    h = hashlib.sha256(init + LOGIN.encode() + release.encode())
    for name, path in mods:
        h.update(name.encode() + b"\0" + str(os.path.getsize(path)).encode())
    with open(driver, "rb") as f:
        h.update(f.read())
    mods.append((DRIVER, driver))
    stamp = INITRAMFS + ".stamp"
    if os.path.exists(INITRAMFS) and os.path.exists(stamp) and \
       open(stamp).read() == h.hexdigest():
        return INITRAMFS
    tmp = INITRAMFS + ".tmp"
    with open(tmp, "wb") as f:
        c = Cpio(f)
        for d in ("bin", "dev", "lib", "lib/modules", "proc", "sys", "run",
                  "tmp", "root", "etc"):
            c.dir(d)
        with open(busybox, "rb") as b:
            c.file("bin/busybox", b.read(), 0o755)
        c.symlink("bin/sh", "busybox")
        c.file("init", init, 0o755)
        c.file("bin/tempest-login", LOGIN.encode(), 0o755)
        for name, path in mods:
            with open(path, "rb") as m:
                c.file(f"lib/modules/{name}.ko", m.read())
        c.file("lib/modules/load-order",
               "".join(n + "\n" for n, _ in mods).encode())
        c.close()
    os.replace(tmp, INITRAMFS)
    with open(stamp, "w") as f:
        f.write(h.hexdigest())
    say(f"run: built {rel(INITRAMFS)} ({release}; modules "
        f"{' '.join(n for n, _ in mods)})")
    return INITRAMFS


def shell_token_path(run_dir, index):
    return os.path.join(run_dir, f"node{index}.shell-token")


def write_shell_token(run_dir, index, token=None):
    """Node index's shell token (a new random one unless given), in a
    file only this user can read (the node reads it through its share at
    boot)."""
    write_whole(shell_token_path(run_dir, index),
                (token or secrets.token_hex(16)) + "\n", 0o600)


def job_script(program, args, cwd):
    """The job /init sources: cd, then the program with its arguments."""
    return (f"cd {shlex.quote(cwd)} 2>/dev/null || cd /root\n"
            + " ".join(shlex.quote(a) for a in [program] + list(args))
            + "\n")
