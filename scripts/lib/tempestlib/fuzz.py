# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/tempest fuzz: libFuzzer on the node controller and the fabric.

Targets (docs/fuzzing.rst):
  nc      QEMU's generic-fuzz with the tempest-nc configuration
          (target-patches/0003): MMIO on the node controller's registers,
          DMA patterns filling what it reads from guest RAM (the rings)
  fabric  tempest-fabric (tests/fuzz/tempest_fabric_fuzz.c): a fake node 1
          sending frames, floods and disconnects to node 0, with guest
          register pokes between them

Both live in one binary, build/qemu-fuzz/qemu-fuzz-aarch64: the main
build's configuration (build.configure_args) compiled by clang with
libFuzzer, ASan and UBSan, through ccache.  Each run starts from the seed
corpus (tests/fuzz/seeds.py, written to build/fuzz/seeds/TARGET) and the
corpus earlier runs grew (build/fuzz/corpus/TARGET); what crashes, hangs
or trips a sanitizer is saved in build/fuzz/artifacts/TARGET.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import time

from . import build, setup
from .common import ROOT, StepError, rel, say

TARGETS = {"nc": "generic-fuzz-tempest-nc", "fabric": "tempest-fabric"}
FUZZ_BUILD = os.path.join(ROOT, "build", "qemu-fuzz")
FUZZ_BIN = os.path.join(FUZZ_BUILD, "qemu-fuzz-aarch64")
FUZZ_DIR = os.path.join(ROOT, "build", "fuzz")
CRASHERS = os.path.join(ROOT, "tests", "fuzz", "crashers")
INPUT_TIMEOUT = 30      # seconds one input may take before it is a hang
SMOKE_SECONDS = 20      # per target, in the test suite


def configure_args(src):
    """The main build's configuration, by clang, with libFuzzer and the
    address and undefined-behaviour sanitizers; line tables only for
    debug information (enough for file:line in reports, cheaper to
    build)."""
    return build.configure_args(src) + [
        "--cc=clang", "--cxx=clang++", "--enable-fuzzing", "--enable-asan",
        "--enable-ubsan", "--extra-cflags=-gline-tables-only",
    ]


def build_lock():
    """The main build's lock: the QEMU tree is shared, and preparing it
    (patches, overlay) must not happen while the other build compiles."""
    return build.build_lock("fuzz")


def build_fuzz(jobs=None):
    setup.setup_fuzz()
    t0 = time.monotonic()
    with build_lock():
        src = build.prepare_tree()
        build.configure(src, FUZZ_BUILD, configure_args(src))
        build.ninja_with_progress("fuzz: build", FUZZ_BUILD,
                                  ["qemu-fuzz-aarch64"], jobs,
                                  os.path.join(FUZZ_BUILD, "build.log"),
                                  env=build.ccache_env())
    say(f"fuzz: {rel(FUZZ_BIN)} ready in {time.monotonic() - t0:.1f} s")


def symbolizer():
    exe = shutil.which("llvm-symbolizer")
    if exe:
        return exe
    found = sorted(glob.glob("/usr/lib/llvm-*/bin/llvm-symbolizer"))
    return found[-1] if found else None


def fuzz_env(replay=False):
    env = dict(os.environ)
    tmp = os.path.join(FUZZ_DIR, "tmp")     # the fabric target's sockets
    os.makedirs(tmp, exist_ok=True)
    env["TMPDIR"] = tmp
    # Leaks are checked per input by libFuzzer (after an input that
    # allocated more than it freed); halt_on_error makes a UBSan report a
    # crash that libFuzzer saves, not a line in a log.  A 64 MB quarantine
    # (not 256) still catches a use after free within an input, and keeps
    # the process's memory near 300 MB instead of growing past 1 GB.
    env["ASAN_OPTIONS"] = ":".join(filter(None, [
        "detect_leaks=1", "symbolize=1", "handle_abort=1",
        "quarantine_size_mb=64", "allocator_may_return_null=0",
        # A replay unwinds every allocation fully, through glib (built
        # without frame pointers): a leak's report then names its caller.
        "fast_unwind_on_malloc=0" if replay else "",
        env.get("ASAN_OPTIONS")]))
    env["UBSAN_OPTIONS"] = ":".join(filter(None, [
        "halt_on_error=1", "abort_on_error=1", "print_stacktrace=1",
        "symbolize=1", env.get("UBSAN_OPTIONS")]))
    sym = symbolizer()
    if sym:
        env["ASAN_SYMBOLIZER_PATH"] = sym
        env["UBSAN_SYMBOLIZER_PATH"] = sym
    return env


def write_seeds(target):
    """The seed corpus, written afresh from tests/fuzz/seeds.py."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz"))
    import seeds
    out = os.path.join(FUZZ_DIR, "seeds", target)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for name, data in seeds.seeds(target):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    return out


class Stats:
    """What libFuzzer said about a run."""

    def __init__(self):
        self.execs = self.rate = self.cov = self.ft = self.corpus = 0
        self.rss = 0
        self.artifacts = []
        self.reports = []       # first line of each sanitizer/libFuzzer error
        self.ours = [0, 0]      # edges of hw/tempest covered, and in all

    def line(self, line):
        m = re.search(r"cov: (\d+) ft: (\d+) corp: (\d+)", line)
        if m:
            self.cov, self.ft, self.corpus = map(int, m.groups())
        m = re.search(r"exec/s:? (\d+)", line)     # fork mode: no colon
        if m:
            self.rate = int(m.group(1))
        m = re.match(r"#(\d+)", line)
        if m:
            self.execs = max(self.execs, int(m.group(1)))
        m = re.search(r"rss: (\d+)Mb", line)
        if m:
            self.rss = max(self.rss, int(m.group(1)))
        m = re.match(r"stat::number_of_executed_units: (\d+)", line)
        if m:
            self.execs = int(m.group(1))
        m = re.match(r"stat::average_exec_per_sec: (\d+)", line)
        if m:
            self.rate = int(m.group(1))
        m = re.search(r"Test unit written to (\S+)", line)
        if m:
            self.artifacts.append(m.group(1))
        if re.match(r"(==\d+==ERROR: |SUMMARY: |.*runtime error: |"
                    r"tempest-fabric: )", line):
            self.reports.append(line.strip())
        # -print_coverage=1, at the end: per function, edges covered/all
        m = re.match(r"(?:UN)?COVERED_FUNC: hits: \d+ edges: (\d+)/(\d+) "
                     r"\S+ \S*/hw/tempest/", line)
        if m:
            self.ours[0] += int(m.group(1))
            self.ours[1] += int(m.group(2))

    def summary(self):
        ours = f", hw/tempest edges {self.ours[0]}/{self.ours[1]}" \
            if self.ours[1] else ""
        return (f"{self.execs} inputs ({self.rate}/s), cov {self.cov}, "
                f"ft {self.ft}, corpus {self.corpus}{ours}, "
                f"peak rss {self.rss} MB")


def libfuzzer(target, args, log, echo=True, replay=False):
    """Run the fuzz binary on target with libFuzzer's args; returns (exit
    status, Stats).  Everything goes to log; progress lines are echoed
    about every 10 s."""
    cmd = [FUZZ_BIN, f"--fuzz-target={TARGETS[target]}"] + args
    stats = Stats()
    last = time.monotonic()
    with open(log, "w") as lf:
        lf.write(" ".join(cmd) + "\n")
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             errors="replace", env=fuzz_env(replay),
                             stdin=subprocess.DEVNULL, cwd=FUZZ_DIR)
        for line in p.stdout:
            lf.write(line)
            stats.line(line)
            if echo and re.match(r"#\d+\s+(pulse|NEW|REDUCE)", line) and \
               time.monotonic() - last >= 10:
                last = time.monotonic()
                say(f"fuzz: {target}: {line.strip()}")
        rc = p.wait()
    return rc, stats


def fuzz_target(target, seconds, keep_going=False, extra=()):
    """One timed run; returns (ok, Stats)."""
    corpus = os.path.join(FUZZ_DIR, "corpus", target)
    artifacts = os.path.join(FUZZ_DIR, "artifacts", target)
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    seeds = write_seeds(target)
    log = os.path.join(FUZZ_DIR, f"{target}.log")
    args = [corpus, seeds, f"-max_total_time={seconds}",
            f"-timeout={INPUT_TIMEOUT}", "-print_final_stats=1",
            f"-artifact_prefix={artifacts}/", "-max_len=8192",
            "-rss_limit_mb=3072", "-print_coverage=1"]
    if keep_going:
        # Separate processes: a crash is saved and the run goes on.
        args += ["-fork=1", "-ignore_crashes=1", "-ignore_timeouts=1",
                 "-ignore_ooms=1"]
    args += list(extra)
    say(f"fuzz: {target} ({TARGETS[target]}) for {seconds} s "
        f"(log: {rel(log)})")
    t0 = time.monotonic()
    before = set(os.listdir(artifacts))
    rc, stats = libfuzzer(target, args, log)
    # Whatever libFuzzer saved (fork mode says so only in its children's
    # logs): every new file in the artifacts directory.
    stats.artifacts = sorted(os.path.join(artifacts, f)
                             for f in set(os.listdir(artifacts)) - before)
    ok = rc == 0 and not stats.artifacts
    say(f"fuzz: {target}: {'ok' if ok else 'FAILED'} after "
        f"{time.monotonic() - t0:.0f} s: {stats.summary()}")
    for r in stats.reports[:6]:
        say(f"fuzz: {target}:   {r}")
    for a in stats.artifacts:
        say(f"fuzz: {target}: reproducer {rel(a)}; replay with: "
            f"scripts/tempest fuzz --replay {rel(a)}")
    return ok, stats


def crasher_target(path):
    """tests/fuzz/crashers/<target>-<what>.bin: which target replays it."""
    name = os.path.basename(path)
    for t in TARGETS:
        if name.startswith(t + "-"):
            return t
    return None


def replay(path, target=None, echo=True):
    """Run one input once; returns (ok, output)."""
    target = target or crasher_target(path) or "fabric"
    log = os.path.join(FUZZ_DIR, "replay.log")
    os.makedirs(FUZZ_DIR, exist_ok=True)
    rc, stats = libfuzzer(target, [f"-timeout={INPUT_TIMEOUT}",
                                   os.path.abspath(path)], log, echo=False,
                          replay=True)
    with open(log, errors="replace") as f:
        out = f.read()
    if echo:
        print(out[-8000:], end="", flush=True)
    return rc == 0, out


def run_cli(args):
    if not args.no_build:
        setup.setup(quiet=True)
        build_fuzz(args.jobs)
    elif not os.path.exists(FUZZ_BIN):
        raise StepError(f"fuzz: {rel(FUZZ_BIN)} is not built")
    if args.replay:
        bad = 0
        for path in args.replay:
            ok, _ = replay(path, args.target if args.target != "all"
                           else None)
            say(f"fuzz: replay {path}: {'ok' if ok else 'FAILED'}")
            bad += not ok
        return 1 if bad else 0
    targets = list(TARGETS) if args.target == "all" else [args.target]
    failed = []
    results = {}
    for t in targets:
        ok, stats = fuzz_target(t, args.time, args.keep_going,
                                args.libfuzzer_arg or ())
        results[t] = stats
        if not ok:
            failed.append(t)
    for t, st in results.items():
        say(f"fuzz: {t}: {st.summary()}, "
            f"{len(st.artifacts)} reproducer(s)")
    return 1 if failed else 0


def add_arguments(p):
    p.add_argument("--time", type=int, default=60, metavar="S",
                   help="seconds of fuzzing per target (default 60)")
    p.add_argument("--target", choices=list(TARGETS) + ["all"],
                   default="all", help="nc, fabric or all (default all)")
    p.add_argument("--keep-going", action="store_true",
                   help="go on after a crash (libFuzzer -fork=1), "
                   "collecting every reproducer")
    p.add_argument("--replay", nargs="+", metavar="FILE",
                   help="run these inputs once each (target from the name "
                   "<target>-..., or --target)")
    p.add_argument("-j", "--jobs", type=int, default=None,
                   help="parallel build jobs (default: number of cores)")
    p.add_argument("--no-build", action="store_true",
                   help="do not set up or build first")
    p.add_argument("--libfuzzer-arg", action="append", metavar="ARG",
                   help="pass ARG to libFuzzer (repeatable), e.g. "
                   "--libfuzzer-arg=-jobs=2")


def suite(results, k):
    """The test suite 'fuzz': every reproducer in tests/fuzz/crashers
    replayed (each must now run clean), then SMOKE_SECONDS of fuzzing per
    target; any crash, hang or sanitizer report fails."""
    try:
        build_fuzz()
    except StepError as e:
        results.record("fuzz/build", False, "build failed", str(e))
        return
    for path in sorted(glob.glob(os.path.join(CRASHERS, "*"))):
        name = "fuzz/crashers/" + os.path.basename(path)
        if k and k not in name or not crasher_target(path):
            continue
        ok, out = replay(path, echo=False)
        results.record(name, ok, "" if ok else "still crashes",
                       "" if ok else out)
    for t in TARGETS:
        name = f"fuzz/{t}"
        if k and k not in name:
            continue
        ok, stats = fuzz_target(t, SMOKE_SECONDS)
        log = os.path.join(FUZZ_DIR, f"{t}.log")
        detail = stats.summary()
        if stats.artifacts:
            detail += "; reproducer " + rel(stats.artifacts[0])
        out = "" if ok else "\n".join(stats.reports) + "\n" + \
            "".join(open(log, errors="replace").readlines()[-60:])
        results.record(name, ok, detail, out)
