# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/tempest setup: Debian packages, apt sources, QEMU's source.

Everything comes from Debian's archive, through the mirror the machine's
own apt configuration already names: the build and guest toolchains, meson
>= 1.5 and python3-pycotap (from bookworm-backports on Debian 12), the
source of the trixie suite's qemu (10.0.x) with Debian's patches applied by
'apt-get source', and, for Linux nodes, the arm64 kernel and busybox
(downloaded, never installed: linux.py).  Every step is idempotent: a
second run changes nothing.
"""

import glob
import os
import re
import shutil
import subprocess

from . import linux
from .common import QEMU_SRC_PARENT, StepError, run_step, say

SOURCES_FILE = "/etc/apt/sources.list.d/tempest.sources"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"

PACKAGES = [
    # fetching and tracking QEMU's source
    "dpkg-dev", "git", "ca-certificates",
    # building QEMU (aarch64-softmmu, no default features)
    "gcc", "libc6-dev", "make", "ninja-build", "pkg-config", "ccache",
    "python3", "python3-venv", "perl",
    "libglib2.0-dev", "libslirp-dev", "libfdt-dev",
    "zlib1g-dev",
    # the guest toolchain
    "gcc-aarch64-linux-gnu", "binutils-aarch64-linux-gnu",
    "picolibc-aarch64-linux-gnu",
    # QEMU's TCG system tests (suite tcg) include glibc's headers
    "libc6-dev-arm64-cross",
    # debugging a node: run --gdb K (suite linux, case gdb)
    "gdb-multiarch",
    # taskset: run --pin binds nodes to host CPUs (Essential, said anyway)
    "util-linux",
]
# On Debian 12 these come from bookworm-backports (QEMU 10 needs meson 1.5).
NEWER_PACKAGES = ["meson", "python3-pycotap"]
# Only for 'scripts/tempest fuzz' and the test suite 'fuzz', installed when
# they run: clang with libFuzzer, ASan and UBSan (clang-14 and
# libclang-rt-14-dev on Debian 12), and llvm-symbolizer for their reports.
FUZZ_PACKAGES = ["clang", "libclang-rt-dev", "llvm"]
# Only for 'scripts/tempest setup --slurm' and the test suite 'slurm':
# Slurm's controller, node daemon and commands, munge (its
# authentication), and ip/nsenter/bridge for the suite's made-up hosts
# (iproute2; nsenter is util-linux, always there).
SLURM_PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge",
                  "iproute2"]
# Only for the test suite 'model', installed when it runs: the SPIN model
# checker (it compiles its verifiers with gcc, from PACKAGES).
MODEL_PACKAGES = ["spin"]
MIN_MESON = (1, 5, 0)
QEMU_SERIES = "10.0."


def os_release():
    info = {}
    try:
        with open("/etc/os-release") as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                info[k] = v.strip('"')
    except OSError:
        pass
    return info


def debian_mirror(codename):
    """The Debian archive URI the machine's apt sources already use."""
    stanzas = []
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        if path == SOURCES_FILE:
            continue
        with open(path) as f:
            for block in f.read().split("\n\n"):
                fields = {}
                for line in block.splitlines():
                    if ":" in line and not line.startswith("#"):
                        k, _, v = line.partition(":")
                        fields[k.strip().lower()] = v.split()
                stanzas.append(fields)
    for path in ["/etc/apt/sources.list"] + sorted(
            glob.glob("/etc/apt/sources.list.d/*.list")):
        try:
            with open(path) as f:
                for line in f:
                    m = re.match(r"\s*(deb|deb-src)\s+(\[[^\]]*\]\s+)?(\S+)"
                                 r"\s+(\S+)", line)
                    if m:
                        stanzas.append({"types": [m.group(1)],
                                        "uris": [m.group(3)],
                                        "suites": [m.group(4)]})
        except OSError:
            pass
    for s in stanzas:
        if codename in s.get("suites", []) and s.get("uris"):
            uri = s["uris"][0]
            if "security" not in uri:
                return uri
    raise StepError(
        "setup: could not find the Debian archive in the apt sources "
        f"(no entry for suite '{codename}' in /etc/apt/sources.list*)")


def have_deb_src(suite):
    for path in glob.glob("/etc/apt/sources.list.d/*.sources"):
        if path == SOURCES_FILE:
            continue
        with open(path) as f:
            text = f.read()
        for block in text.split("\n\n"):
            if re.search(r"^Types:.*deb-src", block, re.M) and \
               re.search(rf"^Suites:.*\b{suite}\b", block, re.M):
                return True
    for path in ["/etc/apt/sources.list"] + glob.glob(
            "/etc/apt/sources.list.d/*.list"):
        try:
            with open(path) as f:
                if re.search(rf"^\s*deb-src\s.*\s{suite}\s", f.read(), re.M):
                    return True
        except OSError:
            pass
    return False


def wanted_sources(codename):
    uri = debian_mirror(codename)
    blocks = []
    if codename == "bookworm":
        blocks.append(f"Types: deb\nURIs: {uri}\nSuites: bookworm-backports\n"
                      f"Components: main\nSigned-By: {KEYRING}\n")
    if not have_deb_src("trixie"):
        blocks.append(f"Types: deb-src\nURIs: {uri}\nSuites: trixie\n"
                      f"Components: main\nSigned-By: {KEYRING}\n")
    if not blocks:
        return None
    return ("# Written by scripts/tempest setup: QEMU's source from trixie"
            + (", meson from bookworm-backports" if codename == "bookworm"
               else "") + ".\n" + "\n".join(blocks))


def installed(pkgs):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\n"]
                       + pkgs, capture_output=True, text=True)
    ok = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[-1] == "installed":
            ok.add(parts[0])
    return ok


def meson_version():
    exe = shutil.which("meson")
    if not exe:
        return None
    r = subprocess.run([exe, "--version"], capture_output=True, text=True)
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", r.stdout.strip())
    return tuple(int(x) for x in m.groups()) if m else None


def qemu_source_dir():
    """The unpacked QEMU source tree, or None."""
    dirs = sorted(d for d in glob.glob(os.path.join(QEMU_SRC_PARENT,
                                                    "qemu-10.0.*"))
                  if os.path.isdir(d) and not d.endswith(".git"))
    return dirs[-1] if dirs else None


def setup(quiet=False):
    info = os_release()
    codename = info.get("VERSION_CODENAME", "")
    if info.get("ID") != "debian" or codename not in ("bookworm", "trixie"):
        raise StepError("setup: this needs Debian 12 (bookworm) or 13 "
                        f"(trixie); this is {info.get('PRETTY_NAME', '?')}")
    need_root = os.geteuid() != 0
    apt_env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")

    # 1. apt sources (idempotent: written only when different)
    text = wanted_sources(codename)
    old = None
    if os.path.exists(SOURCES_FILE):
        with open(SOURCES_FILE) as f:
            old = f.read()
    changed = False
    if text is not None and text != old:
        if need_root:
            raise StepError(f"setup: writing {SOURCES_FILE} needs root")
        with open(SOURCES_FILE, "w") as f:
            f.write(text)
        say(f"setup: wrote {SOURCES_FILE}")
        changed = True

    missing = [p for p in PACKAGES + NEWER_PACKAGES
               if p not in installed(PACKAGES + NEWER_PACKAGES)]
    src = qemu_source_dir()
    mv = meson_version()
    if changed or missing or src is None or (mv and mv < MIN_MESON):
        if need_root:
            raise StepError("setup: installing packages needs root "
                            f"(missing: {' '.join(missing) or 'none'})")
        say("setup: apt-get update")
        run_step("setup: apt-get update", ["apt-get", "update", "-q"],
                 env=apt_env, quiet=True)

    # 2. packages
    base_missing = [p for p in missing if p in PACKAGES]
    if base_missing:
        say(f"setup: installing {' '.join(base_missing)}")
        run_step("setup: installing packages",
                 ["apt-get", "install", "-y", "-q", "--no-install-recommends"]
                 + base_missing, env=apt_env, quiet=True)
    if [p for p in missing if p in NEWER_PACKAGES] or (mv and mv < MIN_MESON):
        target = ["-t", "bookworm-backports"] if codename == "bookworm" else []
        say(f"setup: installing {' '.join(NEWER_PACKAGES)}"
            + (" from bookworm-backports" if target else ""))
        run_step("setup: installing meson",
                 ["apt-get", "install", "-y", "-q", "--no-install-recommends"]
                 + target + NEWER_PACKAGES, env=apt_env, quiet=True)
    mv = meson_version()
    if mv is None or mv < MIN_MESON:
        raise StepError(f"setup: meson >= 1.5 is needed, found {mv}")

    # 3. QEMU's source, with Debian's patches applied by apt-get source
    if src is None:
        os.makedirs(QEMU_SRC_PARENT, exist_ok=True)
        say("setup: fetching QEMU's source (apt-get source qemu/trixie)")
        run_step("setup: apt-get source qemu/trixie",
                 ["apt-get", "source", "-q", "qemu/trixie"],
                 cwd=QEMU_SRC_PARENT, quiet=True)
        src = qemu_source_dir()
        if src is None:
            raise StepError("setup: apt-get source did not unpack a QEMU "
                            f"{QEMU_SERIES}x tree in {QEMU_SRC_PARENT}")
    if not quiet:
        say(f"setup: toolchains installed; meson {'.'.join(map(str, mv))}; "
            f"QEMU source {os.path.basename(src)}")

    # 4. Linux nodes: Debian's arm64 kernel and busybox, unpacked in build/
    linux.setup_linux(quiet=quiet)


def install_extra(packages, what):
    """Installs those of @packages (a suite's own, beyond PACKAGES) that are
    missing, from Debian's archive; @what names them in messages."""
    missing = [p for p in packages if p not in installed(packages)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise StepError(f"setup: installing {what} needs root "
                        f"(missing: {' '.join(missing)})")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    say("setup: apt-get update")
    run_step("setup: apt-get update", ["apt-get", "update", "-q"],
             env=env, quiet=True)
    say(f"setup: installing {' '.join(missing)} ({what})")
    run_step(f"setup: installing {what}",
             ["apt-get", "install", "-y", "-q", "--no-install-recommends"]
             + missing, env=env, quiet=True)


def setup_model():
    """What the test suite 'model' needs beyond setup(): MODEL_PACKAGES."""
    install_extra(MODEL_PACKAGES, "the model checker")


def setup_slurm():
    """What 'run --slurm' and the test suite 'slurm' need: SLURM_PACKAGES
    (the suite starts its own daemons; Debian's services are not used)."""
    install_extra(SLURM_PACKAGES, "the Slurm packages")


def setup_fuzz():
    """What the fuzz build needs beyond setup(): FUZZ_PACKAGES, and
    ccache's clang links (made by ccache only for compilers it has seen)."""
    install_extra(FUZZ_PACKAGES, "the fuzzing toolchain")
    if os.path.isdir("/usr/lib/ccache") and \
       not os.path.exists("/usr/lib/ccache/clang") and \
       shutil.which("update-ccache-symlinks") and os.geteuid() == 0:
        run_step("setup: update-ccache-symlinks", ["update-ccache-symlinks"],
                 quiet=True)
