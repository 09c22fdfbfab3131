# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/tempest run: boot an N-node cluster, one QEMU per node.

Every node's console is streamed with a '[node K]' prefix and written to
its own log file in a run directory.  The run ends with 0 only if every node
exited 0; otherwise with the first failing node's status and a one-line
summary naming it.  On Ctrl-C, on timeout, or when one node fails, the other
nodes are stopped; no process is left behind, not even when the launcher
itself is killed (see Watchdog).

Nothing is started before the program and the settings are known to be
ones the machine accepts: an aarch64 ELF executable, and every machine
limit as hw/include/standard-headers/tempest/tempest-hw.h states it.

With --linux every node boots Debian's arm64 kernel and runs the program
as a Linux process (linux.py, docs/linux.rst): a NIC on QEMU's user
network with the node's shell service forwarded to the host, the
project directory and the run directory shared over 9p, and the program's
exit status reported through the node controller as a bare-metal
program's is, so the same rules decide the run.
"""

import argparse
import ast
import math
import operator
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from . import ckpt
from . import hang
from . import linux as lx
from .common import QEMU_BIN, ROOT, RUNS, StepError, rel, say, write_whole
from .stategraph import Records, split_record

HW_HEADER = os.path.join(ROOT, "hw", "include", "standard-headers",
                         "tempest", "tempest-hw.h")
# The node controller's realize refuses other credit counts
# (hw/tempest/tempest-nc.c); the header does not name this limit.
MAX_CREDITS = 4096
STATUS_TIMEOUT = 124
STATUS_INTERRUPTED = 130
STATUS_CRASH = 134    # TEMPEST_EXIT_CRASH; also a Linux node's kernel panic
PANIC = b"Kernel panic - not syncing"
# A Linux node's /init prints this just before it runs the program.
BOOTED = b"tempest-init: running "
FAIL_GRACE = 0.5      # seconds the others get to report a failed node
# After a timeout, seconds a node gets to take SIGTERM and print its
# report before SIGKILL: at a load average of 59 a node's main loop was
# seen to answer its monitor only after 1.3 s, near the usual 2 s.
TIMEOUT_GRACE = 10.0


def parse_mem(text):
    m = re.fullmatch(r"(\d+)([KMGkmg]?)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad memory size '{text}' "
                                          "(use e.g. 256M or 1G)")
    return text.upper() if m.group(2) else text + "M"


def positive(text):
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return v


def run_parser(add_help=True):
    p = argparse.ArgumentParser(
        prog="tempest run", add_help=add_help,
        description="Boot an N-node cluster running prog.elf on every node.")
    p.add_argument("-n", "--nodes", type=positive, default=1,
                   help="number of nodes (default 1)")
    p.add_argument("--smp", type=positive, default=1,
                   help="vCPUs per node, 1 to 8 (default 1)")
    p.add_argument("--mem", type=parse_mem, default=None,
                   help="RAM per node (default 128M, with --linux 256M)")
    p.add_argument("--tagmem", type=parse_mem, default=None,
                   help="tagged memory for Tempest user-managed pages "
                        "(machine default 64M; 0 for none)")
    p.add_argument("--cpu", default=None,
                   help="CPU model (default: the machine's, cortex-a76)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds before the run is stopped (0: never; "
                        "default 120, with --linux 120 + 10 per node, never "
                        "with --shell or --gdb)")
    p.add_argument("--run-dir", default=None,
                   help="directory for the per-node logs (default: "
                        "build/runs/<time>-<program>)")
    p.add_argument("--quiet", action="store_true",
                   help="do not stream the consoles (logs are still "
                        "written)")
    p.add_argument("--tcp", action="store_true",
                   help="join the nodes over TCP on 127.0.0.1 instead of "
                        "Unix-domain sockets (as --fabric tcp)")
    p.add_argument("--fabric", choices=FABRICS, default=None,
                   help="shm: Unix sockets whose links become shared "
                        "memory; socket: the Unix sockets carry "
                        "everything; tcp: TCP on 127.0.0.1 carries "
                        "everything; auto: TCP addresses, and the nodes of "
                        "one host share memory (see --hosts) "
                        f"(default: ${FABRIC_ENV} or shm)")
    p.add_argument("--hosts", type=positive, default=None, metavar="H",
                   help="with --fabric auto: make believe the nodes are on "
                        "H hosts, in blocks (-n 4 --hosts 2: nodes 0-1 on "
                        "one, 2-3 on the other); links across them stay "
                        "TCP")
    p.add_argument("--spin-us", type=int, default=None, metavar="US",
                   help="how long a node's runtime polls for messages "
                        "before it sleeps (default: 50 when every node has "
                        "a host core, else 0)")
    p.add_argument("--pin", choices=PIN_MODES, default="auto",
                   help="bind each node's QEMU to host CPUs (taskset): "
                        "auto (default) when the nodes need more CPUs "
                        "than the host gives this launcher, on always, "
                        "off never (docs/tempest.rst, \"Nodes pinned to "
                        "host CPUs\")")
    p.add_argument("--credits", type=positive, default=None,
                   help="packets in flight per peer and network "
                        "(machine default 32)")
    p.add_argument("--linux", action="store_true",
                   help="boot Debian's arm64 kernel on every node and run "
                        "the program (a static aarch64 Linux executable, "
                        "a script, or a command of the node's busybox) as "
                        "a Linux process (docs/linux.rst)")
    p.add_argument("--no-share", action="store_true",
                   help="with --linux: no directory is shared into the "
                        "nodes while the program runs (it is copied in at "
                        "boot, and runs in /root); what a checkpoint of "
                        "Linux nodes needs (docs/checkpoint.rst)")
    p.add_argument("--shell", type=int, default=None, metavar="K",
                   help="with --linux: node K's console is this terminal; "
                        "after the program a shell runs there, and the "
                        "node ends when it exits (no timeout)")
    p.add_argument("--forward", type=int, action="append", default=[],
                   metavar="PORT", help="with --linux: forward TCP port "
                   "PORT of every node to a host port on 127.0.0.1 (the "
                   "launcher prints which; repeatable)")
    p.add_argument("--gdb", type=int, default=None, metavar="K",
                   help="node K waits for a debugger on QEMU's gdbstub "
                        "(the launcher prints where; no timeout)")
    p.add_argument("--qemu-arg", action="append", default=[],
                   metavar="ARG", help="extra QEMU argument for every node "
                   "(repeatable), e.g. --qemu-arg=-d --qemu-arg=guest_errors")
    p.add_argument("--slurm", action="store_true",
                   help="run the cluster as a Slurm job step: srun starts "
                   "'scripts/tempest node' as N tasks, one node each, on "
                   "the hosts Slurm gives (docs/slurm.rst)")
    p.add_argument("--ntasks-per-node", type=positive, default=None,
                   metavar="K", help="with --slurm: K nodes per Slurm "
                   "node (srun's option)")
    p.add_argument("--srun-arg", action="append", default=[],
                   metavar="ARG", help="with --slurm: an extra srun "
                   "argument (repeatable), e.g. --srun-arg=--partition=p")
    p.add_argument("--restore", default=None, metavar="CKPT",
                   help="start the cluster from a checkpoint's directory "
                   "(scripts/tempest checkpoint, or SIGUSR1 to the "
                   "launcher): the program, its arguments and the "
                   "machine's settings are the checkpoint's "
                   "(docs/checkpoint.rst)")
    p.add_argument("program", nargs="?", default=None,
                   help="the guest ELF (scripts/tempest cc)")
    p.add_argument("args", nargs=argparse.REMAINDER,
                   help="arguments passed to main() on every node")
    return p


def quote_arg(arg):
    """Quote one argument the way the guest runtime's rt_split_args reads it."""
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def guest_cmdline(program, args):
    return " ".join(quote_arg(a) for a in
                    [os.path.basename(program)] + list(args))


MEM_UNITS = {"": 1 << 20, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def mem_bytes(text):
    """Bytes of a size as parse_mem writes it (a number and K, M or G)."""
    m = re.fullmatch(r"(\d+)([KMGkmg]?)", text)
    if not m:
        raise StepError(f"run: bad memory size '{text}' (use e.g. 256M)")
    return int(m.group(1)) * MEM_UNITS[m.group(2).upper()]


_C_OPS = {ast.Add: operator.add, ast.Sub: operator.sub,
          ast.Mult: operator.mul, ast.LShift: operator.lshift,
          ast.RShift: operator.rshift, ast.BitOr: operator.or_}


def _c_int(expr):
    """The value of a C integer constant expression of the header (numbers
    with U/L suffixes, parentheses, + - * << >> |), or None."""
    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _C_OPS:
            return _C_OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError(expr)

    expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr)
    try:
        return value(ast.parse(expr, mode="eval").body)
    except (SyntaxError, ValueError):
        return None


def machine_limits(header=HW_HEADER):
    """The machine's limits, read from the header the device is built with
    (nodes, CPUs, RAM, tagged memory and its page size)."""
    want = {"TEMPEST_MAX_NODES": "nodes", "TEMPEST_MAX_CPUS": "cpus",
            "TEMPEST_RAM_MAX": "ram", "TEMPEST_TAGMEM_MAX": "tagmem",
            "TEMPEST_PAGE_SHIFT": "page_shift"}
    limits = {}
    try:
        with open(header) as f:
            for line in f:
                m = re.match(r"#define\s+(TEMPEST_\w+)\s+(.*?)\s*"
                             r"(?:/\*.*)?$", line)
                if m and m.group(1) in want:
                    limits[want[m.group(1)]] = _c_int(m.group(2))
    except OSError as e:
        raise StepError(f"run: cannot read the machine's limits: {e}")
    missing = [k for k, v in want.items() if limits.get(v) is None]
    if missing:
        raise StepError(f"run: {rel(header)} defines no usable "
                        f"{', '.join(missing)}")
    limits["credits"] = MAX_CREDITS
    return limits


ELF_MACHINES = {3: "x86 (i386)", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64",
                22: "s390", 40: "32-bit ARM", 62: "x86-64", 183: "aarch64",
                243: "RISC-V"}
EM_AARCH64 = 183
ET_EXEC = 2


def check_program(path):
    """Refuse at once anything but an aarch64 ELF executable (what the
    tempest machine's loader boots; anything else it would load as a raw
    image and run as garbage until the timeout)."""
    if not os.path.isfile(path):
        raise StepError(f"run: no such program: {path}")
    try:
        with open(path, "rb") as f:
            h = f.read(64)
    except OSError as e:
        raise StepError(f"run: cannot read {path}: {e.strerror}")
    what = None
    if len(h) < 20 or h[:4] != b"\x7fELF":
        what = "is not an ELF file"
    elif h[4] != 2:
        what = ("is a 32-bit ELF (ELFCLASS32)" if h[4] == 1 else
                f"has ELF class {h[4]}") + ", not ELFCLASS64"
    elif h[5] != 1:
        what = ("is a big-endian ELF" if h[5] == 2 else
                f"has ELF data encoding {h[5]}") + ", not little-endian"
    else:
        e_type = int.from_bytes(h[16:18], "little")
        e_machine = int.from_bytes(h[18:20], "little")
        if e_machine != EM_AARCH64:
            name = ELF_MACHINES.get(e_machine, "another architecture")
            what = f"is an ELF for {name} (e_machine {e_machine}), not aarch64"
        elif e_type != ET_EXEC:
            kind = {1: "a relocatable object (ET_REL)",
                    3: "a shared object or PIE (ET_DYN)",
                    4: "a core dump (ET_CORE)"}.get(e_type,
                                                    f"ELF type {e_type}")
            what = f"is {kind}, not an executable (ET_EXEC)"
    if what:
        raise StepError(f"run: {path} {what}; the tempest machine runs "
                        "aarch64 ELF executables built with 'scripts/tempest "
                        "cc'")


PT_INTERP = 3


def check_linux_program(path):
    """What a Linux node runs: a static aarch64 ELF executable (ET_EXEC, or
    ET_DYN without an interpreter: static-pie), a script ('#!'), or, for
    a name with no '/' that is no file here, a command of the node's
    busybox.  Returns False for such a command, True for a file."""
    if not os.path.exists(path) and "/" not in path:
        return False
    if not os.path.isfile(path):
        raise StepError(f"run: no such program: {path}")
    with open(path, "rb") as f:
        h = f.read(64)
        if h[:2] == b"#!":
            return True
        what = None
        if len(h) < 64 or h[:4] != b"\x7fELF":
            what = "is neither an ELF file nor a script"
        elif h[4] != 2 or h[5] != 1 or \
                int.from_bytes(h[18:20], "little") != EM_AARCH64:
            what = "is not a 64-bit little-endian aarch64 ELF"
        elif int.from_bytes(h[16:18], "little") not in (ET_EXEC, 3):
            what = "is not an executable"
        else:
            phoff = int.from_bytes(h[32:40], "little")
            phentsize = int.from_bytes(h[54:56], "little")
            for i in range(int.from_bytes(h[56:58], "little")):
                f.seek(phoff + i * phentsize)
                if int.from_bytes(f.read(4), "little") == PT_INTERP:
                    what = ("is dynamically linked (a node has no shared "
                            "libraries)")
                    break
    if what:
        raise StepError(f"run --linux: {path} {what}; build programs with "
                        "'scripts/tempest cc --linux' (static, glibc)")
    return True


def check_settings(nodes, smp, mem, tagmem, credits, timeout, limits=None):
    """Refuse any setting the machine would refuse, before starting it."""
    lim = limits or machine_limits()
    problems = []
    if not 1 <= nodes <= lim["nodes"]:
        problems.append(f"-n {nodes}: the machine has 1 to {lim['nodes']} "
                        "nodes")
    if not 1 <= smp <= lim["cpus"]:
        problems.append(f"--smp {smp}: a node has 1 to {lim['cpus']} CPUs")
    ram = mem_bytes(mem)
    if not 0 < ram <= lim["ram"]:
        problems.append(f"--mem {mem}: a node has more than 0 and at most "
                        f"{lim['ram'] >> 20} MiB of RAM")
    if tagmem is not None:
        tm, page = mem_bytes(tagmem), 1 << lim["page_shift"]
        if tm > lim["tagmem"] or tm % page:
            problems.append(f"--tagmem {tagmem}: whole {page >> 10} KiB "
                            f"pages, at most {lim['tagmem'] >> 20} MiB (0: "
                            "none)")
    if credits is not None and not 1 <= credits <= lim["credits"]:
        problems.append(f"--credits {credits}: 1 to {lim['credits']}")
    if not (math.isfinite(timeout) and timeout >= 0):
        problems.append(f"--timeout {timeout:g}: seconds, 0 or more (0: "
                        "never)")
    if problems:
        raise StepError("run: refused before starting anything: " +
                        "; ".join(problems))


def _start_time(pid):
    """A process's start time (/proc/PID/stat field 22): with the pid, it
    names one process even after the pid is recycled; None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


class Watchdog:
    """Kills the nodes if the launcher dies without stopping them.

    subprocess.Popen's preexec_fn (which the launcher used to set each
    QEMU's PR_SET_PDEATHSIG) is unsafe while other threads run, and the
    console readers do; nothing but code run in the child between fork and
    exec, or a wrapper program, can set a child's parent-death signal.  So
    each node is started in its own process group (process_group=0: Ctrl-C
    on the terminal reaches only the launcher, which stops the nodes
    itself), and this small process, in its own session, holds the read
    end of a pipe whose only write end the launcher holds.  The launcher
    tells it each node's pid and start time as it starts it (the node
    cannot have been reaped yet, so the pid is still the node's); the
    watchdog takes a pidfd of it, which from then on names that process
    and no other.  When the pipe closes (the launcher ended, even by
    SIGKILL) it SIGKILLs every node still alive through its pidfd; nodes
    already gone are left alone, a recycled pid is never hit.  A watchdog
    that dies makes the launcher's next write fail, which stops the run
    loudly.  (A node started in the instant between Popen returning and
    the launcher telling the watchdog could outlive a launcher SIGKILLed
    in that instant; PR_SET_PDEATHSIG set after fork had the same kind of
    window.)
    """

    CODE = r"""
import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
def start(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
nodes = []
for line in sys.stdin:
    pid, t = int(line.split()[0]), line.split()[1]
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        continue
    except OSError:
        fd = None                   # no pidfds: check the start time again
    if start(pid) == t:
        nodes.append((pid, t, fd))
    elif fd is not None:
        os.close(fd)
for pid, t, fd in nodes:
    try:
        if fd is not None:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        elif start(pid) == t:
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
"""

    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", self.CODE],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            start_new_session=True, text=True, bufsize=1)

    def watch(self, pid):
        """Kill pid, a child not yet reaped, if the launcher dies."""
        try:
            self.proc.stdin.write(f"{pid} {_start_time(pid)}\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise StepError("run: the launcher's watchdog ended (exit "
                            f"{self.proc.poll()}); stopping the run")

    def close(self):
        """The run is over and every node was stopped: the watchdog ends
        on its own (nothing it watches is alive); not waited for, so that
        a short run does not wait for its start-up."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.poll()


class Node:
    def __init__(self, index, cmd, log_path):
        self.index = index
        self.cmd = cmd
        self.log_path = log_path
        self.proc = None
        self.status = None        # exit status once ended
        self.killed = False       # stopped by the launcher
        self.sigkilled = False    # ... and SIGTERM did not end it
        self.signal = None        # the signal that ended it, if any
        self.reader = None
        self.err_reader = None    # QEMU's own messages (not --shell's)
        self.log = None           # the node log both readers write
        self.log_lock = threading.Lock()
        self.booted = None        # Linux: seconds from start to the program
        self.panicked = False     # Linux: the kernel panicked


class RunResult:
    def __init__(self, status, statuses, run_dir, summary, elapsed,
                 outputs=(), booted=()):
        self.status = status          # the launcher's exit status
        self.statuses = statuses      # per node: exit status or None
        self.run_dir = run_dir
        self.summary = summary
        self.elapsed = elapsed
        self.outputs = list(outputs)  # strata.log, states.svg, trace.json
        self.booted = list(booted)    # Linux: per node, s to its program

    def log(self, node):
        with open(os.path.join(self.run_dir, f"node{node}.log"),
                  errors="replace") as f:
            return f.read()


def status_of(returncode):
    return 128 - returncode if returncode < 0 else returncode


def ephemeral_low():
    """The lowest port the kernel gives connect()s (32768 if unknown)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def bind_free_ports(count, host="127.0.0.1"):
    """count free consecutive TCP ports on host, below the kernel's
    ephemeral range when there is room: the nodes' own connects (and
    everyone else's) take ports from that range, and took a node's port
    before it listened (strata-debug-16 over TCP).  Returns the sockets,
    bound and not listening: while they are open nobody else can bind
    those ports (slurm.py holds its node's until it starts QEMU)."""
    top = ephemeral_low()
    top = top if top - count > 20000 else 60000
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(200):
        base = random.randrange(20000, top - count)
        socks = []
        try:
            for i in range(count):
                s = socket.socket(family, socket.SOCK_STREAM)
                socks.append(s)
                s.bind((host, base + i))
            return socks
        except OSError:
            for s in socks:
                s.close()
    raise StepError(f"run: found no {count} free consecutive TCP ports on "
                    f"{host}")


def free_port_base(count):
    """A base port with count free consecutive TCP ports on 127.0.0.1."""
    socks = bind_free_ports(count)
    base = socks[0].getsockname()[1]
    for s in socks:
        s.close()
    return base


FABRICS = ("shm", "socket", "tcp", "auto")
SPIN_US = 50        # TEMPEST_SPIN_US_DEFAULT
FABRIC_ENV = "TEMPEST_FABRIC"
# TEMPEST_CHAN=soft: the node controllers do not offer their channel
# controller (machine property chan=off), so libchan runs its software
# protocol over active messages (docs/chan.rst, A/B of the two paths).
CHAN_ENV = "TEMPEST_CHAN"


def fabric_kind(kind=None):
    """The fabric a run uses: kind, else $TEMPEST_FABRIC, else shm."""
    kind = kind or os.environ.get(FABRIC_ENV) or "shm"
    if kind not in FABRICS:
        raise StepError(f"run: fabric '{kind}' is none of "
                        f"{', '.join(FABRICS)}")
    return kind


def fabric_spec(nodes, tcp, sock_dir, kind=None):
    """The machine's fabric= of a run and the options that go with it."""
    if nodes == 1:
        return None, ""
    kind = "tcp" if tcp else fabric_kind(kind)
    if kind in ("tcp", "auto"):
        spec = f"tcp:127.0.0.1:{free_port_base(nodes)}"
        if kind == "tcp":
            # Every link on TCP, even between the nodes of this host.
            return spec, ",fabric-shm=off"
        # The nodes of this host meet on Unix sockets in the run's own
        # directory and share memory (docs/fabric.rst, "Mixed clusters").
        return spec, f",fabric-shm=auto,fabric-shm-dir={sock_dir}"
    if kind == "shm":
        return f"shm:{sock_dir}", ""
    return f"unix:{sock_dir}", ""


def spin_default(spin_us, nodes_here):
    """The spin-us of nodes_here nodes on this host: spin_us if given,
    else SPIN_US while every node has a host core (of those this launcher
    may use: its affinity, as pin_cpus), else 0 (a polling node takes a
    host core: docs/tempest.rst, "Waiting and spinning")."""
    if spin_us is not None:
        return spin_us
    return SPIN_US if nodes_here <= len(os.sched_getaffinity(0)) else 0


PIN_MODES = ("auto", "on", "off")


def pin_cpus(index, nodes, smp, pin="auto"):
    """The host CPUs node index of nodes (smp vCPUs each) is bound to, as
    taskset's list ("0", "2,3"), or None where it is left to the host's
    scheduler: pin "off", or "auto" while every vCPU has a CPU of its own.
    The CPUs this launcher may use, dealt out in turn: with more vCPUs
    than CPUs, the host's scheduler moved the nodes between its CPUs at
    every wake-up, and two nodes that talked often waited in one CPU's
    queue while the other was idle (docs/tempest.rst, "Nodes pinned to
    host CPUs").  A node whose share is every CPU is not bound."""
    cpus = sorted(os.sched_getaffinity(0))
    if pin == "off" or (pin == "auto" and nodes * smp <= len(cpus)):
        return None
    mine = sorted({cpus[(index * smp + j) % len(cpus)] for j in range(smp)})
    if len(mine) == len(cpus):
        return None
    return ",".join(map(str, mine))


def fake_host(index, nodes, hosts):
    """The host node index makes believe it is on: blocks of nodes."""
    return f"host{index * hosts // nodes}"


# TEMPEST_USERMEM_MAX (tempest-hw.h): a Linux node's user memory is as
# large as its RAM up to this.
USERMEM_MAX = 768 << 20


def _bytes(size):
    """A QEMU size ("256M", "1G", "1048576") in bytes."""
    m = re.fullmatch(r"(\d+)([KMGT]?)i?B?", str(size).strip(), re.I)
    if not m:
        raise StepError(f"run: memory size '{size}' is not a size")
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2).upper() or " "))


def node_command(index, nodes, program, args, smp=1, mem="128M", cpu=None,
                 extra=(), fabric=None, cluster=0, credits=None,
                 tagmem=None, key_file=None, spin_us=None, fabric_opts="",
                 host_id=None, boot=None, qmp=None):
    """QEMU's command line for one node; boot, if given, replaces the
    bare-metal -kernel and -append (LinuxRun.boot); qmp: the path of its
    QMP socket (checkpoints use it: docs/checkpoint.rst)."""
    machine = f"tempest,node-id={index},num-nodes={nodes}"
    secret = []
    if tagmem:
        machine += f",tagmem={tagmem}"
    if fabric:
        machine += f",fabric={fabric},cluster-id={cluster:#x}"
        machine += fabric_opts
        if host_id:
            machine += f",fabric-host-id={host_id}"
        # Node 0's wait for the cluster starts when it starts; the last
        # QEMU of a large cluster starts much later on a small host
        # (256 nodes on 2 cores: about 25 s), so the wait grows with it.
        machine += f",fabric-timeout={30000 + 200 * nodes}"
    if fabric and key_file:
        # The key stays off the command line (anyone can read that in
        # /proc): QEMU reads it from a file only this user can open.
        machine += ",fabric-key=tempest-key"
        secret = ["-object", f"secret,id=tempest-key,file={key_file}"]
    if credits:
        machine += f",credits={credits}"
    if spin_us is not None:
        machine += f",spin-us={spin_us}"
    if os.environ.get(CHAN_ENV) == "soft":
        machine += ",chan=off"
    ram = []
    if boot:
        # A Linux node: its processes' memory for the node controller, as
        # large as its RAM (pages cost only once touched), in a memfd
        # peers on this host map like RAM (docs/linux.rst).
        machine += ",usermem=tempest.user"
        ram = ["-object", f"memory-backend-memfd,id=tempest.user,"
               f"size={min(_bytes(mem), USERMEM_MAX)},share=on"]
    elif fabric and (fabric.startswith("shm:") or
                     "fabric-shm=auto" in fabric_opts):
        # RAM in a sealed memfd that peers on this host map: transfers and
        # fetch-and-op go straight to it (docs/fabric.rst, "Shared
        # memory").
        machine += ",memory-backend=tempest.ram"
        ram = ["-object", f"memory-backend-memfd,id=tempest.ram,size={mem},"
               "share=on"]
    cmd = [QEMU_BIN, "-M", machine, "-smp", str(smp), "-m", mem,
           "-nodefaults", "-no-user-config", "-display", "none",
           "-serial", "stdio"] + (boot or [
               "-kernel", program, "-append", guest_cmdline(program, args)]) \
        + secret + ram
    if cpu:
        cmd += ["-cpu", cpu]
    if qmp:
        cmd += ["-qmp", f"unix:{qmp},server=on,wait=off"]
    return cmd + list(extra)


class LinuxRun:
    """What the nodes of a --linux run share: kernel, initramfs, the job
    (written to the run directory, shared into each node), host ports."""

    def __init__(self, program, args, run_dir, nodes, forwards=(),
                 shell=None, forward=True, no_share=False, tokens=None):
        """forward=False: no host port reaches the nodes (a Slurm task's
        node: its host's other tasks pick their ports at the same time).
        no_share: nothing shared while the program runs (the program is
        copied in at boot: docs/linux.rst, "Files").  tokens: the
        directory whose nodeK.shell-token the nodes hold already (a
        restored checkpoint's)."""
        self.kernel = lx.kernel_image()
        self.initrd = lx.initramfs()
        self.nodes = nodes
        self.share = os.path.realpath(ROOT)
        self.run_dir = os.path.realpath(run_dir)
        self.shell = shell
        self.no_share = no_share
        self.tokens = tokens
        self.forwards = ([lx.SHELL_PORT] + [p for p in forwards
                                            if p != lx.SHELL_PORT]) \
            if forward else []
        self.port_base = free_port_base(nodes * len(self.forwards)) \
            if forward else 0
        copied = []
        if not os.path.exists(program):
            node_prog = program             # a command of the node's own
        else:
            real = os.path.realpath(program)
            if real.startswith(self.share + os.sep) and not no_share:
                node_prog = real
            else:
                if os.path.dirname(real) != self.run_dir:
                    shutil.copy2(real, self.run_dir)
                copied.append(os.path.basename(real))
                node_prog = os.path.join(lx.NOSHARE_DIR if no_share else
                                         lx.RUN_MOUNT, copied[0])
        cwd = os.path.realpath(os.getcwd())
        if not (cwd + os.sep).startswith(self.share + os.sep):
            cwd = self.share
        if no_share:
            cwd = "/root"
            write_whole(os.path.join(self.run_dir, "noshare.list"),
                        "".join(c + "\n" for c in copied))
        # Whole: every task of a Slurm step writes them.
        write_whole(os.path.join(self.run_dir, "job"),
                    lx.job_script(node_prog, args, cwd))
        if forward:
            with open(os.path.join(self.run_dir, "ports.txt"), "w") as f:
                for i in range(nodes):
                    for guest, host in self.ports(i):
                        f.write(f"node {i} tcp {guest} 127.0.0.1:{host}\n")

    def ports(self, index):
        """(guest port, host port) pairs forwarded for node index."""
        base = self.port_base + index * len(self.forwards)
        return [(g, base + j) for j, g in enumerate(self.forwards)]

    def boot(self, index, own_ports=None):
        """QEMU's arguments for node index; own_ports: [(guest port, host
        port of 127.0.0.1)] where the run has no forwards of its own (a
        Slurm task's node: its shell and --forward ports, written to
        RUN/node<K>.ports)."""
        token = None
        if self.tokens:
            with open(lx.shell_token_path(self.tokens, index)) as f:
                token = f.read().strip()
        lx.write_shell_token(self.run_dir, index, token)
        # cryptomgr.notests: the crypto self-tests took a third of the
        # boot's CPU time (3.8 s to 2.5 s a node under TCG).
        # norandmaps: a program's heap (brk) starts right after its bss,
        # inside the user memory it is moved into (guest/rt-linux).
        cmdline = ("console=ttyAMA0 quiet cryptomgr.notests=1 norandmaps mitigations=off "
                   f"tempest.node={index} "
                   f"tempest.nodes={self.nodes}"
                   + (" tempest.noshare=1" if self.no_share else
                      "" if " " in self.share else
                      f" tempest.share={self.share}")
                   + (" tempest.shell=1" if index == self.shell else ""))
        ports = self.ports(index)
        if own_ports:
            ports = list(own_ports)
            with open(os.path.join(self.run_dir, f"node{index}.ports"),
                      "w") as f:
                for guest, host in ports:
                    f.write(f"node {index} tcp {guest} 127.0.0.1:{host}\n")
        fwd = "".join(f",hostfwd=tcp:127.0.0.1:{h}-:{g}" for g, h in ports)
        return ["-kernel", self.kernel, "-initrd", self.initrd,
                "-append", cmdline,
                "-netdev", "user,id=net0" + fwd,
                "-device", "virtio-net-device,netdev=net0",
                "-fsdev", f"local,id=run,path={self.run_dir},"
                "security_model=none",
                "-device", "virtio-9p-device,fsdev=run,"
                f"mount_tag={lx.RUN_TAG}"] + ([] if self.no_share else [
                    "-fsdev", f"local,id=share,path={self.share},"
                    "security_model=none",
                    "-device", "virtio-9p-device,fsdev=share,"
                    f"mount_tag={lx.SHARE_TAG}"])


def new_run_dir(program):
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = os.path.splitext(os.path.basename(program))[0]
    os.makedirs(RUNS, exist_ok=True)
    for i in range(1000):
        d = os.path.join(RUNS, f"{stamp}-{base}" + (f"-{i}" if i else ""))
        try:
            os.makedirs(d)
            break
        except FileExistsError:
            continue
    latest = os.path.join(RUNS, "latest")
    try:
        if os.path.islink(latest):
            os.unlink(latest)
        os.symlink(os.path.basename(d), latest)
    except OSError:
        pass
    return d


def run_cluster(program, nodes, args=(), smp=1, mem=None, cpu=None,
                timeout=120, run_dir=None, echo=True, extra=(), out=None,
                tcp=False, credits=None, tagmem=None, fabric=None,
                spin_us=None, hosts=None, linux=False, shell=None,
                forwards=(), gdb=None, restore=None, no_share=False,
                pin="auto"):
    """Boot the cluster and wait for it; returns a RunResult.  A program or
    a setting the machine would refuse raises StepError before anything is
    started.  linux: boot Linux nodes (LinuxRun); shell, forwards: their
    console shell and forwarded ports; gdb: the node waiting for gdb;
    restore: a checkpoint's directory to start from (docs/checkpoint.rst).
    SIGUSR1 checkpoints the cluster into RUN/ckpt-usr1 and ends it.
    pin: bind the nodes to host CPUs (pin_cpus; not part of a checkpoint:
    a restore places its nodes on the host it runs on)."""
    mem = mem or ("256M" if linux else "128M")
    if linux:
        check_linux_program(program)
    else:
        check_program(program)
        if shell is not None or forwards:
            raise StepError("run: --shell and --forward need --linux")
    check_settings(nodes, smp, mem, tagmem, credits, timeout)
    for what, k in (("--shell", shell), ("--gdb", gdb)):
        if k is not None and not 0 <= k < nodes:
            raise StepError(f"run: {what} {k}: nodes are 0 to {nodes - 1}")
    for port in forwards:
        if not 1 <= port <= 65535:
            raise StepError(f"run: --forward {port}: not a TCP port")
    fabric = fabric_kind(fabric)
    if hosts is not None and (fabric != "auto" or tcp):
        raise StepError("run: --hosts needs --fabric auto")
    if hosts is not None and not 1 <= hosts <= nodes:
        raise StepError(f"run: --hosts must be 1 to {nodes} (the nodes)")
    if spin_us is not None and not 0 <= spin_us <= 1000000:
        raise StepError("run: --spin-us must be 0 to 1000000")
    if pin not in PIN_MODES:
        raise StepError(f"run: --pin {pin}: one of {', '.join(PIN_MODES)}")
    spin = spin_default(spin_us, nodes)
    if not os.path.exists(QEMU_BIN):
        raise StepError("run: QEMU is not built; run 'scripts/tempest build'")
    out = out or sys.stdout
    run_dir = run_dir or new_run_dir(program)
    os.makedirs(run_dir, exist_ok=True)
    if no_share and not linux:
        raise StepError("run: --no-share needs --linux")
    manifest = ckpt.read_manifest(restore) if restore else None
    if len(ckpt.qmp_path(run_dir, nodes - 1)) > 100:
        raise StepError(f"run: the run directory's path {run_dir} is too "
                        "long for its QMP sockets (Unix paths hold 108 "
                        "bytes); give a shorter --run-dir")
    ckpt.write_cluster(run_dir, program, args, nodes, smp, mem, cpu, credits,
                       tagmem, spin_us, linux, no_share, extra, restore,
                       fabric, tcp, hosts, forwards)
    lrun = LinuxRun(program, args, run_dir, nodes, forwards, shell,
                    no_share=no_share, tokens=restore) if linux else None
    print_lock = threading.Lock()
    width = len(str(nodes - 1))
    records = Records()
    t0 = time.monotonic()

    def pump_raw(node):
        """The --shell node: its console as it comes, to this terminal."""
        with open(node.log_path, "wb") as log:
            while True:
                raw = os.read(node.proc.stdout.fileno(), 4096)
                if not raw:
                    break
                log.write(raw)
                log.flush()
                if node.booted is None and BOOTED in raw:
                    node.booted = time.monotonic() - t0
                if PANIC in raw:
                    node.panicked = True
                with print_lock:
                    out.write(raw.decode("utf-8", "replace"))
                    out.flush()

    def log_line(node, raw):
        """One line into the node's log and, if echoed, to out."""
        with node.log_lock:
            if node.log.closed:     # a reader the launcher gave up on
                return
            node.log.write(raw)
            node.log.flush()
        if echo and shell is None:
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            with print_lock:
                out.write(f"[node {node.index:>{width}}] {text}\n")
                out.flush()

    def pump(node):
        if node.index == shell:
            return pump_raw(node)
        for raw in iter(node.proc.stdout.readline, b""):
            if lrun and node.booted is None and BOOTED in raw:
                node.booted = time.monotonic() - t0
            if lrun and PANIC in raw:
                node.panicked = True
            raw, record = split_record(raw)
            if record is not None:
                with print_lock:
                    records.take(node.index, record)
                if not raw:
                    continue
            log_line(node, raw)

    def pump_err(node):
        """QEMU's own messages (its stderr) in whole lines: on the
        console's pipe, written a byte at a time by the UART, one could
        land inside a line of the guest's, and split a record."""
        for raw in iter(node.proc.stderr.readline, b""):
            log_line(node, raw)

    # Sockets live in a short private directory (Unix paths are limited
    # to 108 bytes; mkdtemp makes it 0700); the cluster's key, a random
    # one per run in a file of that directory, keeps other clusters' nodes
    # and other users out (docs/fabric.rst, "Trust").
    sock_dir = tempfile.mkdtemp(prefix="tempest-")
    fabric, fabric_opts = fabric_spec(nodes, tcp, sock_dir, fabric)
    cluster = random.getrandbits(63) | 1
    key_file = os.path.join(sock_dir, "key")
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    gdb_port = free_port_base(1) if gdb is not None else None
    ns = []
    for i in range(nodes):
        more = list(extra)
        if i == gdb:
            more += ["-gdb", f"tcp:127.0.0.1:{gdb_port}", "-S"]
        if restore:
            # Made and linked as at boot, then loaded (QMP) and let go.
            more += ["-S", "-incoming", "defer"]
        ns.append(Node(i, node_command(i, nodes, program, args, smp, mem,
                                       cpu, more, fabric, cluster, credits,
                                       tagmem, key_file, spin, fabric_opts,
                                       fake_host(i, nodes, hosts)
                                       if hosts else None,
                                       lrun.boot(i) if lrun else None,
                                       ckpt.qmp_path(run_dir, i)),
                       os.path.join(run_dir, f"node{i}.log")))
        cpus = pin_cpus(i, nodes, smp, pin)
        if cpus is not None:
            ns[-1].cmd = ["taskset", "-c", cpus] + ns[-1].cmd
    with open(os.path.join(run_dir, "command.txt"), "w") as f:
        for n in ns:
            f.write(" ".join(n.cmd) + "\n")
    if echo and ns[0].cmd[0] == "taskset":
        say(f"run: {nodes} node{'s' if nodes > 1 else ''} on "
            f"{len(os.sched_getaffinity(0))} host CPUs, each bound to its "
            "share (taskset, in command.txt; --pin off leaves them to the "
            "host)")

    if lrun:
        say(f"run: booting {nodes} Linux node{'s' if nodes > 1 else ''} "
            f"({os.path.basename(lrun.kernel)}); shells on 127.0.0.1:"
            + (f"{lrun.ports(0)[0][1]}" if nodes == 1 else
               f"{lrun.ports(0)[0][1]}..{lrun.ports(nodes - 1)[0][1]}")
            + " ('scripts/tempest ssh K')")
        for port in forwards:
            say(f"run: node port {port} is 127.0.0.1:" + ", ".join(
                str(dict(lrun.ports(i))[port]) for i in range(nodes))
                + " (node 0, 1, ...; all in ports.txt)")
    if gdb is not None:
        say(f"run: node {gdb} waits for gdb at 127.0.0.1:{gdb_port} "
            f"(gdb-multiarch -ex 'target remote 127.0.0.1:{gdb_port}')")
    t0 = time.monotonic()
    interrupted = []
    old_int = signal.getsignal(signal.SIGINT)
    old_term = signal.getsignal(signal.SIGTERM)

    usr1 = []
    old_usr1 = signal.getsignal(signal.SIGUSR1)

    def on_signal(signum, frame):
        interrupted.append(signum)

    def on_usr1(signum, frame):
        usr1.append(signum)

    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGUSR1, on_usr1)
    restore_error = None
    restored_in = None
    checkpointed = None
    watchdog = None
    try:
        watchdog = Watchdog()
        for n in ns:
            # Its own process group: Ctrl-C reaches the launcher only.
            n.proc = subprocess.Popen(n.cmd, stdin=None if n.index == shell
                                      else subprocess.DEVNULL,
                                      stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT
                                      if n.index == shell else
                                      subprocess.PIPE,
                                      # the --shell node reads the
                                      # terminal: it must be in the
                                      # foreground group (QEMU puts the
                                      # terminal in raw mode, so Ctrl-C
                                      # goes to the node's shell)
                                      process_group=None
                                      if n.index == shell else 0)
            watchdog.watch(n.proc.pid)
            if n.index != shell:
                n.log = open(n.log_path, "wb")
                n.err_reader = threading.Thread(target=pump_err, args=(n,),
                                                daemon=True)
                n.err_reader.start()
            n.reader = threading.Thread(target=pump, args=(n,), daemon=True)
            n.reader.start()
        if restore:
            try:
                took = restored_in = ckpt.restore_nodes(
                    run_dir, restore, manifest,
                    lambda: all(n.proc.poll() is None for n in ns))
                say(f"run: {nodes} nodes restored from {rel(restore)} in "
                    f"{took:.2f} s; their output goes on in the new "
                    f"node logs of {rel(run_dir)}")
                t0 = time.monotonic()
            except StepError as e:
                restore_error = str(e)
                _stop(ns)

        first_fail = None
        fail_time = None
        timed_out = False
        booted_told, told_t = 0, time.monotonic()
        while True:
            running = 0
            failed_now = []
            if lrun:
                booted = sum(n.booted is not None for n in ns)
                now = time.monotonic()
                if booted > booted_told and (booted == nodes or
                                             now - told_t > 2):
                    say(f"run: {booted}/{nodes} Linux nodes running the "
                        f"program ({now - t0:.1f} s)")
                    booted_told, told_t = booted, now
            for n in ns:
                if n.status is None and n.panicked and not n.killed:
                    # A panicked kernel never ends QEMU itself.
                    n.proc.kill()
                    n.proc.wait()
                    n.status = STATUS_CRASH
                    failed_now.append(n)
                    continue
                if n.status is None:
                    rc = n.proc.poll()
                    if rc is None:
                        running += 1
                        continue
                    n.status = status_of(rc)
                    n.signal = -rc if rc < 0 else None
                    if n.status != 0 and not n.killed:
                        failed_now.append(n)
            if failed_now and first_fail is None:
                # Seen in one sweep: a node killed by a signal is the cause,
                # the others are likely reporting its loss.
                failed_now.sort(key=lambda n: (n.signal is None, n.index))
                first_fail = failed_now[0]
                fail_time = time.monotonic()
            if running == 0:
                break
            if usr1 and checkpointed is None and not interrupted:
                # Slurm's warning before the time limit: save and end.
                usr1.clear()
                try:
                    checkpointed = ckpt.checkpoint(
                        run_dir, os.path.join(run_dir, "ckpt-usr1"),
                        stop=True)
                except StepError as e:
                    say(str(e))
                    checkpointed = ""
                _stop(ns)
                continue
            if interrupted:
                _stop(ns)
                continue
            # Give the survivors a moment to report a lost node, then stop.
            if first_fail is not None and \
               time.monotonic() - fail_time > FAIL_GRACE:
                _stop(ns)
                continue
            if timeout and time.monotonic() - t0 > timeout:
                timed_out = True
                # What they were doing, before the SIGTERM changes it.
                hang_file = hang.record(
                    run_dir, [(n.index, n.proc.pid) for n in ns
                              if n.proc and n.proc.poll() is None],
                    ckpt.qmp_path, None if lrun else program)
                _stop(ns, TIMEOUT_GRACE)
                continue
            time.sleep(0.01)
    finally:
        _stop(ns)
        if watchdog:
            watchdog.close()
        for n in ns:
            for r in (n.reader, n.err_reader):
                if r:
                    r.join(timeout=5)
            if n.log:
                with n.log_lock:
                    n.log.close()
        shutil.rmtree(sock_dir, ignore_errors=True)
        if in_main:
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGTERM, old_term)
            signal.signal(signal.SIGUSR1, old_usr1)

    elapsed = time.monotonic() - t0
    statuses = [None if n.killed else n.status for n in ns]
    sigkilled = [str(n.index) for n in ns if n.sigkilled]
    stop_file = os.path.join(run_dir, ckpt.STOP_FILE)
    if checkpointed is None and os.path.exists(stop_file):
        with open(stop_file) as f:
            checkpointed = f.read().strip()
    outputs = records.write(run_dir, nodes)
    logs = rel(run_dir)
    if restore_error:
        status = 1
        summary = f"{restore_error}; all nodes stopped (logs: {logs})"
    elif checkpointed:
        status = 0
        summary = (f"checkpointed to {rel(checkpointed)} and stopped "
                   f"(restart: scripts/tempest run --restore "
                   f"{rel(checkpointed)})")
    elif checkpointed == "":
        status = 1
        summary = f"SIGUSR1: the checkpoint failed; all nodes stopped " \
                  f"(logs: {logs})"
    elif first_fail is not None:
        status = first_fail.status
        how = (f" (killed by signal {first_fail.signal})"
               if first_fail.signal else "")
        if first_fail.panicked:
            how = " (its kernel panicked)"
        # Nodes that ended by themselves meanwhile (a lost link ends a
        # node that waits for it), by status; the rest were stopped.
        ended = {}
        for n in ns:
            if n is not first_fail and not n.killed and n.status is not None:
                ended.setdefault(n.status, []).append(str(n.index))
        also = "".join(f"; node{'s' if len(ix) > 1 else ''} {', '.join(ix)} "
                       f"ended by {'themselves' if len(ix) > 1 else 'itself'}"
                       f" with status {st}"
                       for st, ix in sorted(ended.items()))
        stopped = ("the others were stopped" if
                   sum(len(ix) for ix in ended.values()) < len(ns) - 1
                   else "none was left to stop")
        summary = (f"node {first_fail.index} failed with status {status}{how} "
                   f"after {elapsed:.2f} s{also}; {stopped} "
                   f"(log: {rel(first_fail.log_path)})")
    elif interrupted:
        status = STATUS_INTERRUPTED
        summary = f"interrupted; all nodes stopped (logs: {logs})"
    elif timed_out:
        status = STATUS_TIMEOUT
        alive = [str(n.index) for n in ns if n.killed]
        summary = (f"timeout after {timeout:g} s; node(s) "
                   f"{', '.join(alive)} still running were stopped "
                   f"(logs: {logs}; their threads: {rel(hang_file)})")
    else:
        status = 0
        summary = (f"{nodes} node{'s' if nodes > 1 else ''} exited 0 in "
                   f"{elapsed:.2f} s (logs: {logs})")
    if restored_in is not None:
        summary += (f"; restored from {rel(restore)} in {restored_in:.2f} s"
                    " (the time above is since)")
    if outputs:
        summary += "; wrote " + ", ".join(os.path.basename(p)
                                          for p in outputs)
    if sigkilled:
        summary += (f"; node(s) {', '.join(sigkilled)} did not end on "
                    f"SIGTERM in {TIMEOUT_GRACE if timed_out else 2.0:g} s "
                    f"and were killed")
    if records.bad:
        summary += f"; {records.bad} malformed records ignored"
    with open(os.path.join(run_dir, "summary.txt"), "w") as f:
        f.write(summary + "\n")
    return RunResult(status, statuses, run_dir, summary, elapsed, outputs,
                     [n.booted for n in ns])


def _stop(ns, grace=2.0):
    """Stop every node still running: SIGTERM, then SIGKILL after grace."""
    live = [n for n in ns if n.proc and n.proc.poll() is None]
    for n in live:
        n.killed = True
    killed = stop_processes([n.proc for n in live], grace)
    for n in live:
        n.sigkilled = n.proc in killed
    for n in live:
        if n.status is None:
            n.status = status_of(n.proc.returncode)


def stop_processes(procs, grace=2.0):
    """SIGTERM each process, then SIGKILL those still alive after grace;
    waits for them all.  Returns those it had to SIGKILL."""
    killed = []
    for p in procs:
        try:
            p.terminate()
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            killed.append(p)
    return killed


def run_cli(args):
    if args.slurm:
        from . import slurm
        return slurm.run_slurm(args)
    if args.ntasks_per_node or args.srun_arg:
        raise StepError("run: --ntasks-per-node and --srun-arg need --slurm")
    if args.restore:
        return restore_cli(args)
    if not args.program:
        raise StepError("run: which program? (scripts/tempest run -n N "
                        "prog.elf)")
    timeout = args.timeout
    if timeout is None:
        # A person at a shell or a debugger takes the time they need.
        # Linux nodes share the host's cores while they boot (about 2.5 s
        # of CPU each): their runs get 10 s more per node.
        timeout = 0 if args.shell is not None or args.gdb is not None \
            else 120 + (10 * args.nodes if args.linux else 0)
    res = run_cluster(args.program, args.nodes, args.args, smp=args.smp,
                      mem=args.mem, cpu=args.cpu, timeout=timeout,
                      run_dir=args.run_dir, echo=not args.quiet,
                      extra=args.qemu_arg, tcp=args.tcp,
                      credits=args.credits, tagmem=args.tagmem,
                      fabric=args.fabric, spin_us=args.spin_us,
                      hosts=args.hosts, linux=args.linux,
                      shell=args.shell, forwards=args.forward, gdb=args.gdb,
                      no_share=args.no_share, pin=args.pin)
    say(f"run: {res.summary}")
    return res.status


def restore_cli(args):
    """run --restore CKPT: the checkpoint's cluster, as it was started."""
    m = ckpt.read_manifest(args.restore)
    if args.program and os.path.abspath(args.program) != m["program"]:
        raise StepError(f"run --restore: the checkpoint is of "
                        f"{rel(m['program'])}, not {args.program}")
    program = ckpt.restore_program(args.restore, m)
    res = run_cluster(program, m["nodes"], m["args"], smp=m["smp"],
                      mem=m["mem"], cpu=m["cpu"],
                      timeout=120 if args.timeout is None else args.timeout,
                      run_dir=args.run_dir or new_run_dir(m["program"]),
                      echo=not args.quiet, extra=m["extra"] + args.qemu_arg,
                      tcp=m["tcp"], credits=m["credits"], tagmem=m["tagmem"],
                      fabric=m["fabric"], spin_us=m["spin_us"],
                      hosts=m["hosts"], restore=args.restore,
                      linux=bool(m.get("linux")),
                      no_share=bool(m.get("no_share")),
                      forwards=m.get("forwards") or [], pin=args.pin)
    say(f"run: {res.summary}")
    return res.status
