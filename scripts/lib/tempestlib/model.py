# SPDX-License-Identifier: GPL-2.0-or-later
"""The test suite 'model': libchan's migration protocol model-checked.

tests/model/chan.pml is a Promela model of guest/lib/chan/proto.c
(docs/chan.rst, "The protocol, model-checked").  Each check runs SPIN
('spin -a', gcc on the verifier pan.c, pan) in build/model/NAME and reads
'errors: N' and the state counts from pan's report:

  safety, data3, reader-twice, four
                                the protocol under four bounds (four: on
      four nodes, the writer end moving 0 -> 2 -> 0 and the reader end
      1 -> 3, as guest case chan-hw-both-4 moves them): no
      assertion fails (no value lost, duplicated or out of order, no
      message the protocol says cannot come), no invalid end state (no
      deadlock), and at the end the two current ends name each other;
  opt1, opt1-runaway, opt2      the two incorrect optimisations of the
      paper's section 3.2.7 (-DOPT1, -DOPT2): pass only if SPIN finds the
      counterexample (breadth first: the shortest), printed as messages;
  mutant-no-resend              proto.c's stage 3 without its resend of
      pre-sent data: must fail too (the checks can fail);
  drift                         tests/model/check_drift.py: proto.c,
      calls.c, chan.pml and the device's channel controller
      (hw/tempest/tempest-nc-chan.c) make the transitions of
      tests/model/transitions.txt, no more, no fewer.
"""

import os
import re
import shutil
import subprocess
import sys
import time

from .common import ROOT, StepError
from .setup import setup_model

MODEL_DIR = os.path.join(ROOT, "tests", "model")
MODEL = os.path.join(MODEL_DIR, "chan.pml")
WORK = os.path.join(ROOT, "build", "model")
PAN_CFLAGS = ["-O1", "-DSAFETY", "-DMEMLIM=1024", "-DVECTORSZ=2048"]
RUN_SECONDS = 120

# name: (spin -D options, pan's compile options, a violation is expected)
CHECKS = {
    "safety": ([], ["-DCOLLAPSE"], False),
    "data3": (["-DND=3"], ["-DCOLLAPSE"], False),
    "reader-twice": (["-DRHOPS=2"], ["-DCOLLAPSE"], False),
    "four": (["-DFOUR", "-DWHOPS=2"], ["-DCOLLAPSE"], False),
    "opt1": (["-DOPT1"], ["-DBFS"], True),
    "opt1-runaway": (["-DOPT1", "-DWHOPS=0", "-DRHOPS=2"], ["-DBFS"], True),
    "opt2": (["-DOPT2"], ["-DBFS"], True),
    "mutant-no-resend": (["-DMUTANT_NO_RESEND"], ["-DBFS"], True),
}


class Pan:
    """What pan said: errors, states, memory, time, the error's depth."""

    def __init__(self, out):
        self.out = out

        def num(pattern, conv=int):
            m = re.search(pattern, out)
            return conv(m.group(1)) if m else None
        self.errors = num(r"errors: (\d+)")
        self.stored = num(r"(\d+) states, stored")
        self.transitions = num(r"(\d+) transitions")
        self.memory = num(r"([\d.]+)\s+total actual memory usage", float)
        self.seconds = num(r"elapsed time ([\d.e+-]+) seconds", float)
        self.depth = num(r"at depth (\d+)\)")
        m = re.search(r"pan:1: (.*?) \(at depth", out)
        self.what = m.group(1) if m else ""

    def summary(self):
        return (f"{self.stored} states, {self.transitions} transitions, "
                f"{self.memory} MB, {self.seconds} s")


def _run(cmd, cwd, timeout=RUN_SECONDS):
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                           errors="replace", timeout=timeout,
                           stdin=subprocess.DEVNULL)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return "timeout", out


def verify(name, defines, cflags):
    """spin -a, gcc, pan for one check; returns (Pan or None, log text)."""
    work = os.path.join(WORK, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    shutil.copy(MODEL, os.path.join(work, "chan.pml"))
    steps = [["spin", "-a"] + defines + ["chan.pml"],
             ["gcc"] + PAN_CFLAGS + cflags + ["-o", "pan", "pan.c"],
             ["./pan", "-m200000"]]
    log = ""
    for cmd in steps:
        rc, out = _run(cmd, work)
        log += "$ " + " ".join(cmd) + "\n" + out
        if rc not in (0,) and cmd[0] != "./pan":
            return None, log
        if rc == "timeout":
            return None, log + f"\n(timed out after {RUN_SECONDS} s)"
    with open(os.path.join(work, "pan.log"), "w") as f:
        f.write(log)
    return Pan(out), log


def counterexample(name, defines):
    """The trail pan wrote, replayed as the protocol's messages."""
    work = os.path.join(WORK, name)
    rc, out = _run(["spin", "-t", "-s", "-r"] + defines + ["chan.pml"], work)
    lines = [re.sub(r"\s+", " ", line.strip()) for line in out.splitlines()
             if re.search(r" (Send|Recv) |violated|failed assertion|"
                          r"trail ends", line)]
    return "\n".join(lines)


def where(trail):
    """' in INLINE (chan.pml:N)' for the assertion a trail ends at."""
    m = re.search(r"chan\.pml:(\d+), Error", trail)
    if not m:
        return ""
    line = int(m.group(1))
    with open(MODEL) as f:
        lines = f.read().splitlines()[:line]
    names = [re.match(r"(?:inline|proctype) (\w+)", t) for t in lines]
    names = [n.group(1) for n in names if n]
    return f" in {names[-1]} (chan.pml:{line})" if names else \
        f" (chan.pml:{line})"


def drift():
    """tests/model/check_drift.py; returns (ok, its output)."""
    rc, out = _run([sys.executable, os.path.join(MODEL_DIR,
                                                 "check_drift.py")], ROOT)
    return rc == 0, out


def suite(results, k):
    try:
        setup_model()
    except StepError as e:
        results.record("model/setup", False, "spin not installed", str(e))
        return
    for name, (defines, cflags, want_error) in CHECKS.items():
        if k and k not in f"model/{name}":
            continue
        t0 = time.monotonic()
        pan, log = verify(name, defines, cflags)
        if pan is None or pan.errors is None:
            results.record(f"model/{name}", False, "spin or pan failed", log)
            continue
        took = f"{time.monotonic() - t0:.1f} s in all"
        if want_error:
            ok = pan.errors > 0
            trail = counterexample(name, defines) if ok else ""
            detail = (f"SPIN found: {pan.what}{where(trail)}, trail of "
                      f"{pan.depth} steps; "
                      f"{pan.summary()}" if ok else
                      f"no counterexample: {pan.summary()}")
            results.record(f"model/{name}", ok, detail,
                           trail if ok else log)
        else:
            ok = pan.errors == 0
            results.record(f"model/{name}", ok,
                           f"{pan.errors} errors, {pan.summary()}; {took}",
                           pan.out if ok else log)
    if not k or k in "model/drift":
        ok, out = drift()
        results.record("model/drift", ok, out.strip().splitlines()[-1]
                       if out.strip() else "", out)
