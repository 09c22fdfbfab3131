# SPDX-License-Identifier: GPL-2.0-or-later
"""What a run that timed out was doing, taken before its nodes are stopped
(docs/fabric.rst, "A stopped node's report").

A node's QEMU prints its device's and fabric's state when the launcher's
SIGTERM ends it, but only if its main loop still runs: a node stuck in
host code (a lock, a blocking call) or frozen prints nothing and is
killed after the grace.  So on a timeout the launcher first writes
RUN/hang.txt: per node, each thread's state, CPU time, kernel wait
channel and system call (from /proc), whether its QMP monitor answers
(the main loop runs), and, if gdb is installed, every thread's
backtrace.  Only on a timeout: nothing of it is on a run's path.
"""

import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess

QMP_S = 3.0         # a main loop that runs answers at once
GDB_S = 45.0        # per node; the nodes are looked at in parallel
GDB_NODES = 8       # the first nodes only: a run's stop waits for them


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().strip()
    except OSError as e:
        return f"({e.strerror})"


def threads(pid):
    """Lines: each thread's id, name, state, CPU ticks, wchan, syscall."""
    out = []
    task = f"/proc/{pid}/task"
    try:
        tids = sorted(os.listdir(task), key=int)
    except OSError as e:
        return [f"  (no /proc/{pid}: {e.strerror})"]
    for tid in tids:
        stat = _read(f"{task}/{tid}/stat")
        rest = stat.rsplit(")", 1)[-1].split()
        state = rest[0] if rest else "?"
        ticks = int(rest[11]) + int(rest[12]) if len(rest) > 12 else -1
        out.append(f"  thread {tid} {_read(f'{task}/{tid}/comm')!r}: state "
                   f"{state}, cpu {ticks} ticks, wchan "
                   f"{_read(f'{task}/{tid}/wchan') or '-'}, syscall "
                   f"{_read(f'{task}/{tid}/syscall').split(' ')[0]}")
    return out


def qmp_answers(path):
    """Does the node's QMP monitor answer (its main loop runs)?"""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(QMP_S)
    try:
        s.connect(path)
        greeting = s.recv(4096)
        return f"answers ({len(greeting)} bytes of greeting)" if greeting \
            else "closed"
    except OSError as e:
        return f"does not answer in {QMP_S:g} s ({e})"
    finally:
        s.close()


def backtrace(pid):
    gdb = shutil.which("gdb")
    if not gdb:
        return "  (no gdb)"
    try:
        r = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx",
                            "-ex", "set pagination off",
                            "-ex", "thread apply all bt 25"],
                           capture_output=True, text=True, timeout=GDB_S,
                           stdin=subprocess.DEVNULL)
        return "\n".join("  " + line for line in r.stdout.splitlines()
                         if line.startswith(("#", "Thread")))
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"  (gdb: {e})"


def record(run_dir, nodes, qmp_path):
    """nodes: [(index, pid)] still running.  Writes RUN/hang.txt."""
    lines = []
    for i, pid in nodes:
        lines.append(f"node {i} (pid {pid}): QMP "
                     f"{qmp_answers(qmp_path(run_dir, i))}")
        lines += threads(pid)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as ex:
        traces = list(ex.map(lambda n: backtrace(n[1]), nodes[:GDB_NODES]))
    for (i, pid), bt in zip(nodes, traces):
        lines.append(f"node {i} (pid {pid}): backtraces")
        lines.append(bt)
        try:
            # A gdb killed at its time limit may leave the node stopped.
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
    path = os.path.join(run_dir, "hang.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
