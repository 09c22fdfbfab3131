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
import queue
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

from .ckpt import QMP, QMPError

QMP_S = 3.0         # a main loop that runs answers at once
GDB_S = 45.0        # per node; the nodes are looked at in parallel
GDB_NODES = 8       # the first nodes only: a run's stop waits for them
# The monitors are asked in parallel, and all of it within RECORD_S: one
# node after the other, 256 nodes at a load average of 230 kept a run's
# stop waiting for more than ten minutes (eighteenth session).
QMP_WORKERS = 16
RECORD_S = 60.0


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


# Guest variables worth seeing in a hang (the libraries' queues, waits
# and counters), printed raw: 32 bytes each, if the program has them.
GUEST_VARS = ("received_all", "backlog", "softq", "abx_pending", "abx_head",
              "cur", "waiters", "polling", "strata_shared", "idle_polls",
              "tppi_sq_waiters", "StrataPortTable", "wake_due")


def _data_symbols(program):
    """{name: address} of the guest program's data."""
    nm = shutil.which("nm") or shutil.which("aarch64-linux-gnu-nm")
    if not nm or not program:
        return {}
    try:
        out = subprocess.run([nm, program], capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {f[2]: int(f[0], 16) for f in (line.split() for line in
                                          out.splitlines())
            if len(f) == 3 and f[1] in "bBdDsS"}


def _symbols(program):
    """[(address, name)] of the guest program's functions, sorted."""
    nm = shutil.which("nm") or shutil.which("aarch64-linux-gnu-nm")
    if not nm or not program:
        return []
    try:
        out = subprocess.run([nm, "-n", program], capture_output=True,
                             text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tTwW":
            syms.append((int(f[0], 16), f[2]))
    return syms


def _where(syms, addr):
    best = None
    for a, name in syms:
        if a > addr:
            break
        best = (a, name)
    return f"{best[1]}+0x{addr - best[0]:x}" if best else "?"


def guest_stack(path, index, syms, frames=16, data=None):
    """Each vCPU's PC and its frame-pointer chain, named from the ELF.
    The VM is stopped while they are read (and let go on after), so that
    the chain is the one of the registers read: a vCPU that ran on
    between the registers and its stack's words left a chain that ended
    in '?' (guest timeout-report-3 failed once in CI so, each of its three
    nodes in a loop of calls, 2026-11-30)."""
    out = []
    try:
        # Short limits: the node may be stuck.
        q = QMP(path, index, timeout=QMP_S, command_timeout=QMP_S)
    except (OSError, ValueError, QMPError) as e:
        return [f"  (QMP: {e})"]

    def hmp(line):
        return q.cmd("human-monitor-command", **{"command-line": line})

    stopped = False
    try:
        if q.cmd("query-status").get("running"):
            q.cmd("stop")
            stopped = True
        regs = hmp("info registers -a")
        for cpu, block in enumerate(re.split(r"(?m)^CPU#\d+", regs)[1:]):
            pc = re.search(r"PC=([0-9a-f]+)", block)
            fp = re.search(r"X29=([0-9a-f]+)", block)
            lr = re.search(r"X30=([0-9a-f]+)", block)
            if not pc:
                continue
            pcv = int(pc.group(1), 16)
            chain = [f"pc {_where(syms, pcv)}"]
            if lr:
                chain.append(f"lr {_where(syms, int(lr.group(1), 16))}")
            f = int(fp.group(1), 16) if fp else 0
            for _ in range(frames):
                if not f or f & 7:
                    break
                words = re.findall(r"0x([0-9a-f]{16})",
                                   hmp(f"x /2gx 0x{f:x}").split(":", 1)[-1])
                if len(words) < 2:
                    break
                nxt, ret = int(words[0], 16), int(words[1], 16)
                chain.append(_where(syms, ret))
                if nxt <= f:
                    break
                f = nxt
            out.append(f"  guest cpu {cpu}: " + " < ".join(chain))
        for name in GUEST_VARS:
            if name in (data or {}):
                words = re.findall(r"0x([0-9a-f]{16})", hmp(
                    f"x /4gx 0x{data[name]:x}").split(":", 1)[-1])
                out.append(f"  guest {name}: " + " ".join(words))
    except (OSError, ValueError, QMPError) as e:
        out.append(f"  (QMP: {e})")
    finally:
        if stopped:
            try:
                q.cmd("cont")
            except (OSError, ValueError, QMPError):
                pass
        q.close()
    return out


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


def _alive(pid):
    """False once the process has ended (a zombie included)."""
    state = _read(f"/proc/{pid}/stat").rsplit(")", 1)[-1].split()
    return bool(state) and state[0] not in "ZX"


def _node(run_dir, qmp_path, i, pid, syms, data):
    """One node's lines: its monitor, its threads, its guest's stack."""
    if not _alive(pid):
        return [f"node {i} (pid {pid}): ended before it was looked at"]
    lines = [f"node {i} (pid {pid}): QMP "
             f"{qmp_answers(qmp_path(run_dir, i))}"]
    lines += threads(pid)
    lines += guest_stack(qmp_path(run_dir, i), i, syms, data=data)
    return lines


def record(run_dir, nodes, qmp_path, program=None):
    """nodes: [(index, pid)] still running; program: the guest ELF, to
    name the guest's stack.  Writes RUN/hang.txt, in at most about
    RECORD_S (a node not looked at by then says so)."""
    lines = []
    syms = _symbols(program)
    data = _data_symbols(program)
    todo = queue.Queue()
    done = {}
    for n in nodes:
        todo.put(n)

    def worker():
        # Daemon threads: one stuck in a monitor keeps nothing waiting.
        while True:
            try:
                i, pid = todo.get_nowait()
            except queue.Empty:
                return
            done[i] = _node(run_dir, qmp_path, i, pid, syms, data)

    workers = [threading.Thread(target=worker, daemon=True)
               for _ in range(min(QMP_WORKERS, len(nodes)))]
    deadline = time.monotonic() + RECORD_S
    for w in workers:
        w.start()
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))
    for i, pid in nodes:
        lines += done.get(i, [f"node {i} (pid {pid}): not looked at in "
                              f"the record's {RECORD_S:g} s"])
    gdb_nodes = [n for n in nodes[:GDB_NODES] if _alive(n[1])]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as ex:
        traces = list(ex.map(lambda n: backtrace(n[1]), gdb_nodes))
    for (i, pid), bt in zip(gdb_nodes, traces):
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
