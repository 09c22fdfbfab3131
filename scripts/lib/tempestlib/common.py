# SPDX-License-Identifier: GPL-2.0-or-later
"""Paths, messages and process helpers shared by the tempest commands."""

import contextlib
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.path.join(ROOT, "build")
QEMU_SRC_PARENT = os.path.join(BUILD, "qemu-src")
QEMU_BUILD = os.path.join(BUILD, "qemu")
QEMU_BIN = os.path.join(QEMU_BUILD, "qemu-system-aarch64")
GUEST_BUILD = os.path.join(BUILD, "guest")
GUEST_LINUX_BUILD = os.path.join(BUILD, "guest-linux")
RUNS = os.path.join(BUILD, "runs")


class StepError(Exception):
    """A step failed; the message says which step and why."""


def say(msg):
    """Progress and summaries: standard error, so that standard output
    carries only what a command produces (consoles, results, JSON)."""
    print(f"tempest: {msg}", file=sys.stderr, flush=True)


def fail(msg):
    print(f"tempest: error: {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def stdout_to_stderr():
    """Within the block, everything written to standard output, by Python
    or by any program it runs (a build's progress), goes to standard error
    instead; yields a file on the real standard output."""
    sys.stdout.flush()
    saved = os.dup(1)
    real = os.fdopen(os.dup(saved), "w")
    os.dup2(2, 1)
    try:
        yield real
    finally:
        sys.stdout.flush()
        real.flush()
        os.dup2(saved, 1)
        os.close(saved)
        real.close()


def write_whole(path, text, mode=0o644):
    """text to path, whole or not at all (a reader, or another task of a
    Slurm step writing the same file, never sees half of it); the file
    has mode (before the umask) from its first byte."""
    tmp = os.path.join(os.path.dirname(path),
                       f".{os.path.basename(path)}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def rel(path):
    """A path relative to the current directory when that is shorter."""
    r = os.path.relpath(path)
    return r if len(r) < len(path) else path


def run_step(step, cmd, cwd=None, env=None, log=None, quiet=False):
    """Run cmd as part of 'step'; raise StepError naming the step on failure.

    With log, output goes to that file and its tail is shown on failure.
    """
    if log:
        with open(log, "w") as f:
            r = subprocess.run(cmd, cwd=cwd, env=env, stdout=f,
                               stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise StepError(f"{step} failed (exit {r.returncode}); "
                            f"last lines of {rel(log)}:\n" + tail(log))
        return r
    r = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL if quiet else None)
    if r.returncode != 0:
        raise StepError(f"{step} failed (exit {r.returncode}): "
                        f"{' '.join(cmd)}")
    return r


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


class Stopwatch:
    def __init__(self):
        self.t0 = time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.t0
