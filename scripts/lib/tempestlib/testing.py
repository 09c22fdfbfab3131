# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/tempest test: every test suite, one summary.

Suites, by layer:
  unit   host unit tests (GLib g_test) built by the top-level meson project
  qtest  the node controller driven by qtest, no guest CPU
  tcg    QEMU's own TCG system tests that cover the patched softmmu TLB
         (tests/tcg/multiarch/system: memory, interrupt, hello), built from
         the QEMU tree and run on the tempest machine
  guest  real programs on booted clusters, through the real launcher
  ckpt   whole-cluster checkpoint and restart (tests/ckpt): radix sort on
         16 nodes, DSM Jacobi on 8, 64 MiB blocks under an AM storm,
         checkpointed mid-run, killed, restored, same results; mixed
         checkpoints and single nodes refused
  linux  clusters of Linux nodes (run --linux): programs, exit statuses,
         the node controller's driver (/dev/tempest0), the user network
         both ways, the shared directory, the shell
  style  QEMU's checkpatch.pl on our QEMU-side sources
  slurm  clusters launched as Slurm job steps (srun ... scripts/tempest
         node) on a private Slurm cluster of two hosts in network
         namespaces (root; docs/slurm.rst)
  fuzz   a short libFuzzer run of the node controller and the fabric, and
         every saved reproducer replayed (scripts/tempest fuzz)
  model  libchan's migration protocol model-checked with SPIN
         (tests/model: no deadlock, no data lost or duplicated, the
         paper's two incorrect optimisations found wrong, the model and
         proto.c kept to one transition table)

The last line is 'N passed, M failed'; the exit status is 0 only if every
test passed.
"""

import glob
import os
import re
import shlex
import subprocess
import sys
import time
import unittest

from .common import GUEST_BUILD, QEMU_BIN, QEMU_BUILD, ROOT, rel
from .setup import qemu_source_dir

SUITES = ["unit", "qtest", "tcg", "guest", "ckpt", "linux", "slurm",
          "style", "fuzz", "model"]
TCG_TESTS = os.path.join(ROOT, "build", "tcg-tests")
TEST_RUNS = os.path.join(ROOT, "build", "test-runs")


class Results:
    def __init__(self, verbose):
        self.passed = []
        self.failed = []
        self.verbose = verbose

    def record(self, name, ok, detail="", output=""):
        if ok:
            self.passed.append(name)
            print(f"PASS {name}" + (f"  ({detail})" if detail else ""),
                  flush=True)
            if self.verbose and output:
                print(_indent(output), flush=True)
        else:
            self.failed.append(name)
            print(f"FAIL {name}" + (f"  ({detail})" if detail else ""),
                  flush=True)
            if output.startswith("why:\n"):
                why, _, output = output.partition("\n...\n")
                print(_indent(why[:4000]) + "\n    ...", flush=True)
            if output:
                print(_indent(output[-6000:]), flush=True)


def _indent(text):
    return "\n".join("    " + line for line in text.rstrip().splitlines())


def _tap(results, suite, cmd, env=None, cwd=None, timeout=600):
    """Run a TAP-speaking test program; one result per 'ok'/'not ok'."""
    try:
        r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True,
                           text=True, errors="replace", timeout=timeout,
                           stdin=subprocess.DEVNULL)
        out, rc = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or "") + (e.stderr or ""), "timeout"
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
    seen = 0
    for line in out.splitlines():
        m = re.match(r"^(not ok|ok)\s+\d+\s+(?:-\s+)?(\S+)(.*)$", line)
        if m:
            seen += 1
            skipped = "# SKIP" in m.group(3)
            name = f"{suite}{m.group(2)}" if m.group(2).startswith("/") \
                else f"{suite}/{m.group(2)}"
            if skipped:
                print(f"SKIP {name}", flush=True)
                continue
            results.record(name, m.group(1) == "ok",
                           output="" if m.group(1) == "ok" else out)
    if seen == 0 or rc not in (0,):
        results.record(f"{suite}/{os.path.basename(cmd[0])}", False,
                       f"exit {rc}, {seen} results", _broken_text(out))


# meson test --verbose: a TAP subtest ("▶ 3/7 NAME  OK"), and a test's
# own line ("3/7 project:suite / NAME  OK  1.2s").
# (meson pads the index: "\u25b6  1/11" once there are ten tests or more)
_MESON_SUB = re.compile(r"^\s*\u25b6\s+\d+/\d+ (\S+)\s+"
                        r"(OK|FAIL|SKIP|ERROR)\b")
_MESON_TEST = re.compile(r"^\s*\d+/\d+ (?:\S+ / )?(\S+)\s+"
                         r"(OK|FAIL|SKIP|TIMEOUT|"
                         r"ERROR|EXPECTEDFAIL|UNEXPECTEDPASS)\b")


def _failure_text(out, name):
    """What a failed subtest said: its own block when the test printed one
    ('FAIL name ...' on stderr, as cases.py does), else all of it."""
    at = out.find(f"FAIL {name} (")
    if at < 0:
        return out
    end = out.find("\nFAIL ", at + 1)
    return out[at:end if end > 0 else len(out)]


# What says why a test program failed as a whole: glib's assertion
# ("Bail out!", which meson shows as a subtest named "ERROR:..."; "**"),
# a signal, meson's own TAP complaints.
_WHY = re.compile(r"Bail out!|^\s*\*\*|ERROR:|[Aa]ssertion|killed by signal|"
                  r"Too (few|many) tests|timed out|^\s*not ok")
_MESON_RUNNING = re.compile(r"^\s*\d+/\d+ (?:\S+ / )?(\S+)\s+RUNNING\b")


def _program_text(out, name):
    """meson test --verbose's part for program @name: from its RUNNING
    line to the next program's (its subtests, its own line, then its
    stderr); all of @out if it is not found."""
    lines = out.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if (m := _MESON_RUNNING.match(line)) and m.group(1) == name),
                 None)
    if start is None:
        return out
    end = next((i for i in range(start + 1, len(lines))
                if _MESON_RUNNING.match(lines[i]) or
                lines[i].startswith("Summary of Failures")), len(lines))
    return "\n".join(lines[start:end]) + "\n"


def _broken_text(out):
    """A failed program's output with the lines that say why first (the
    tail of a long output is usually its stderr, or another test's)."""
    why = [line for line in out.splitlines() if _WHY.search(line)]
    if not why:
        return out
    return "why:\n" + "\n".join(why[-40:]) + "\n...\n" + out


def _meson(results, suite, build_dir, names, test_args=(), mult=10):
    """Run tests registered with meson (meson test, the ecosystem's way)
    and record each TAP subtest; a test that fails as a whole (a crash, a
    timeout, no results) is recorded too, with its output."""
    cmd = ["meson", "test", "-C", build_dir, "--no-rebuild", "--verbose",
           "--num-processes", "1", "--timeout-multiplier", str(mult)]
    if test_args:
        cmd.append("--test-args=" + " ".join(shlex.quote(a)
                                             for a in test_args))
    cmd += list(names)
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                       stdin=subprocess.DEVNULL)
    _meson_record(results, suite, r.stdout + r.stderr, r.returncode)


def _meson_record(results, suite, out, returncode=1):
    """Record what meson test --verbose printed: each TAP subtest, and
    each program that failed as a whole, with what said why."""
    seen = 0
    broken = set()
    for line in out.splitlines():
        m = _MESON_SUB.match(line)
        if m:
            seen += 1
            name = m.group(1)
            name = f"{suite}{name}" if name.startswith("/") else \
                name if name.startswith(suite + "/") else f"{suite}/{name}"
            if m.group(2) == "SKIP":
                print(f"SKIP {name}", flush=True)
            else:
                results.record(name, m.group(2) == "OK",
                               output="" if m.group(2) == "OK" else
                               _failure_text(out, name))
            continue
        m = _MESON_TEST.match(line)
        if m and m.group(2) not in ("OK", "SKIP", "EXPECTEDFAIL") and \
                m.group(1) not in broken:
            broken.add(m.group(1))
            results.record(f"{suite}/{m.group(1)}", False, m.group(2),
                           _broken_text(_program_text(out, m.group(1))))
    if seen == 0 and not broken and returncode != 0:
        results.record(f"{suite}/meson", False, f"exit {returncode}", out)


class _UnitResult(unittest.TestResult):
    """Report each Python unit test as it ends."""

    def __init__(self, results, module):
        super().__init__()
        self.results = results
        self.module = module

    def _name(self, test):
        return f"unit/{self.module}/{test.id().rsplit('.', 1)[-1]}"

    def addSuccess(self, test):
        self.results.record(self._name(test), True)

    def addFailure(self, test, err):
        self.results.record(self._name(test), False,
                            output=self._exc_info_to_string(err, test))

    addError = addFailure


def _test_programs(results, suite, build_dir, pattern):
    """The built test executables matching pattern (a failure if none)."""
    tests = [t for t in sorted(glob.glob(os.path.join(build_dir, pattern)))
             if os.path.isfile(t) and os.access(t, os.X_OK)]
    if not tests:
        results.record(suite, False, f"no {suite} test programs were built")
    return tests


def suite_unit_python(results, k):
    """Host unit tests of the launcher's own logic (tests/unit/test_*.py)."""
    here = os.path.join(ROOT, "tests", "unit")
    sys.path.insert(0, here)
    for path in sorted(glob.glob(os.path.join(here, "test_*.py"))):
        module = os.path.basename(path)[:-3]
        if k and k not in module:
            continue
        suite = unittest.defaultTestLoader.loadTestsFromName(module)
        suite.run(_UnitResult(results, module))


def suite_unit(results, k):
    suite_unit_python(results, k)
    tests = _test_programs(results, "unit", GUEST_BUILD, "tests/unit/test-*")
    names = [os.path.basename(t)[len("test-"):] for t in tests
             if not k or k in os.path.basename(t)]
    if names:
        _meson(results, "unit", GUEST_BUILD, names)


def suite_qtest(results, k):
    """Our qtests, registered in QEMU's qtest suite by target-patches/0001,
    through QEMU's own 'meson test' (its environment, its timeouts)."""
    tests = _test_programs(results, "qtest", QEMU_BUILD,
                           "tests/qtest/tempest-*")
    names = ["qtest-aarch64/" + os.path.basename(t) for t in tests
             if not k or k in os.path.basename(t)]
    if names:
        _meson(results, "qtest", QEMU_BUILD, names)


def suite_tcg(results, k):
    """QEMU's own TCG system tests over the loads and stores our TLB patch
    touches: every size and alignment (memory; again with SVE), interrupts,
    and the harness itself (hello).  Their harness (boot.S, kernel.ld) is
    for a virt-like map, which the tempest machine shares."""
    src = qemu_source_dir()
    tcg = os.path.join(src, "tests", "tcg") if src else ""
    if not os.path.isdir(tcg):
        results.record("tcg", False, "no QEMU tree")
        return
    os.makedirs(TCG_TESTS, exist_ok=True)
    cc = ["aarch64-linux-gnu-gcc", "-fno-pie", "-no-pie",
          "-mno-outline-atomics", "-nostdlib", "-ggdb",
          "-I" + os.path.join(tcg, "minilib")]
    link = ["-Wl,-T" + os.path.join(tcg, "aarch64/system/kernel.ld"),
            "-static", "-nostdlib", "boot.o", "printf.o", "-lgcc"]
    steps = [
        cc + ["-O0", "-x", "assembler-with-cpp", "-Wa,--noexecstack", "-c",
              os.path.join(tcg, "aarch64/system/boot.S"), "-o", "boot.o"],
        cc + ["-O0", "-fno-stack-protector", "-c",
              os.path.join(tcg, "minilib/printf.c"), "-o", "printf.o"],
    ]
    tests = {
        "hello": ["-O0"], "interrupt": ["-O0"],
        "memory": ["-O0", "-DCHECK_UNALIGNED=1"],
        "memory-sve": ["-O3", "-march=armv8.1-a+sve", "-DCHECK_UNALIGNED=1"],
    }
    for name, flags in tests.items():
        c = os.path.join(tcg, "multiarch/system",
                         name.split("-")[0] + ".c")
        steps.append(cc + flags + [c, "-o", name] + link)
    for cmd in steps:
        r = subprocess.run(cmd, cwd=TCG_TESTS, capture_output=True, text=True)
        if r.returncode != 0:
            results.record("tcg/build", False, "compile failed",
                           " ".join(cmd) + "\n" + r.stdout + r.stderr)
            return
    for name in tests:
        if k and k not in name:
            continue
        cmd = [QEMU_BIN, "-M", "tempest,tagmem=0", "-cpu", "max",
               "-nodefaults", "-display", "none",
               "-semihosting-config", "enable=on,target=native",
               "-chardev", "stdio,id=c", "-serial", "chardev:c",
               "-kernel", os.path.join(TCG_TESTS, name)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=300, stdin=subprocess.DEVNULL)
            out, rc = r.stdout + r.stderr, r.returncode
        except subprocess.TimeoutExpired:
            out, rc = "timeout", "timeout"
        ok = rc == 0 and ("memory" not in name or
                          "Test complete: PASSED" in out)
        results.record(f"tcg/{name}", ok, f"exit {rc}", out[-3000:])


def suite_guest(results, k):
    """tests/guest/cases.py, registered with meson as the TAP tests 'guest'
    (the shared-memory fabric), 'guest-socket' (every link its Unix
    socket) and 'guest-tcp' (TCP), and 'guest-chan-soft' (libchan's cases
    on its software protocol); tests/guest/meson.build."""
    for name in ("guest", "guest-socket", "guest-tcp", "guest-chan-soft"):
        _meson(results, name, GUEST_BUILD, [name],
               test_args=["-k", k] if k else [])


def _run_cases(results, runs, suite, cases, failure, k):
    """Each case(runs) of cases whose name SUITE/NAME contains k: passed
    if it returns (what it returns is said beside its time), failed if it
    raises (failure: its first line, the rest as the details)."""
    os.makedirs(runs, exist_ok=True)
    for case in cases:
        name = f"{suite}/" + case.__name__[len("case_"):]
        if k and k not in name:
            continue
        t0 = time.monotonic()
        try:
            said = case(runs)
            results.record(name, True, f"{time.monotonic() - t0:.1f} s" +
                           (f"; {said}" if said else ""))
        except failure as e:
            results.record(name, False, str(e).split("\n")[0], str(e))
        except Exception as e:  # noqa: BLE001 - a broken case is a failure
            results.record(name, False, f"{type(e).__name__}: {e}")


def _cases(suite, results, k):
    """tests/SUITE/cases.py, each case's runs in build/test-runs/SUITE/:
    its CASES (and their Failure) through _run_cases, or its own run()."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        f"{suite}_cases", os.path.join(ROOT, "tests", suite, "cases.py"))
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    runs = os.path.join(TEST_RUNS, suite)
    if hasattr(cases, "run"):
        cases.run(results, runs, k)
    else:
        _run_cases(results, runs, suite, cases.CASES, cases.Failure, k)


def suite_linux(results, k):
    """tests/linux/cases.py: Linux nodes through 'scripts/tempest run
    --linux'."""
    _cases("linux", results, k)


def suite_ckpt(results, k):
    """tests/ckpt/cases.py: clusters checkpointed mid-run and restored
    (docs/checkpoint.rst)."""
    _cases("ckpt", results, k)


def suite_slurm(results, k):
    """tests/slurm/cases.py: Slurm job steps on a private Slurm cluster
    of two hosts in network namespaces (skipped without root)."""
    _cases("slurm", results, k)


def suite_style(results, k):
    suite_warnings(results)
    src = qemu_source_dir()
    checkpatch = os.path.join(src, "scripts", "checkpatch.pl") if src else ""
    if not os.path.exists(checkpatch):
        results.record("style/checkpatch", False, "no QEMU tree")
        return
    files = sorted(glob.glob(os.path.join(ROOT, "hw/tempest/*.[ch]")) +
                   glob.glob(os.path.join(ROOT, "hw/include/**/*.h"),
                             recursive=True) +
                   glob.glob(os.path.join(ROOT, "tests/qtest/*.[ch]")))
    for f in files:
        name = "style/" + os.path.relpath(f, ROOT)
        if k and k not in name:
            continue
        # Relative paths: checkpatch applies its tests/ rules by path.
        r = subprocess.run(["perl", checkpatch, "--no-tree", "--terse",
                            "-f", os.path.relpath(f, ROOT)],
                           capture_output=True, text=True, cwd=ROOT)
        out = r.stdout + r.stderr
        results.record(name, r.returncode == 0,
                       "" if r.returncode == 0 else "checkpatch", out)


def suite_warnings(results):
    """Our QEMU-side files must compile without a warning (QEMU itself is
    built without -Werror; what ninja compiled last is in build.log)."""
    log = os.path.join(QEMU_BUILD, "build.log")
    lines, ours = [], False
    try:
        with open(log, errors="replace") as f:
            for line in f:
                if line.startswith("["):
                    # A new ninja step: is it compiling one of our files?
                    ours = bool(re.search(r"hw_tempest_|tempest-nc-test",
                                          line))
                elif ours and "warning:" in line:
                    lines.append(line)
    except OSError:
        pass
    results.record("style/compiler-warnings", not lines,
                   f"{len(lines)} in our files" if lines else "",
                   "".join(lines))


def suite_fuzz(results, k):
    from . import fuzz
    fuzz.suite(results, k)


def suite_model(results, k):
    from . import model
    model.suite(results, k)


RUNNERS = {"unit": suite_unit, "qtest": suite_qtest, "tcg": suite_tcg,
           "guest": suite_guest, "ckpt": suite_ckpt, "linux": suite_linux, "slurm": suite_slurm,
           "style": suite_style, "fuzz": suite_fuzz, "model": suite_model}


def run_suites(suites, k=None, verbose=False):
    results = Results(verbose)
    t0 = time.monotonic()
    for s in suites or SUITES:
        print(f"== {s}", flush=True)
        RUNNERS[s](results, k)
    print(f"== {time.monotonic() - t0:.1f} s; logs of guest runs in "
          f"{rel(TEST_RUNS)}", flush=True)
    if results.failed:
        print("failed: " + " ".join(results.failed), flush=True)
    print(f"{len(results.passed)} passed, {len(results.failed)} failed",
          flush=True)
    return 0 if not results.failed and results.passed else 1
