# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tests: real programs on booted clusters, through the real launcher.

Each case runs 'scripts/tempest run' as a user would (a separate process,
real QEMUs, real consoles) and checks its exit status, its summary line,
what it streamed with '[node K]' prefixes, and each node's log file.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TEMPEST = os.path.join(ROOT, "scripts", "tempest")
QEMU = os.path.join(ROOT, "build", "qemu", "qemu-system-aarch64")
GUEST = os.path.join(ROOT, "build", "guest")


def prog(name):
    if os.path.isabs(name):
        return name
    if "/" in name:
        return os.path.join(GUEST, "guest", name)
    return os.path.join(GUEST, "tests", "guest", name + ".elf")


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


class Run:
    """Boot a cluster through 'scripts/tempest run' and check the outcome.

    nodes_expect maps a node index, or '*' for every node, to regexes its
    log must match; '{node}' in a regex stands for the node's index.
    """

    def __init__(self, name, program, nodes=1, smp=1, args=(), status=0,
                 nodes_expect=None, stdout_expect=(), summary=None,
                 timeout=60, mem=None, absent=(), files=None):
        self.name = name
        self.program = program
        self.nodes = nodes
        self.smp = smp
        self.args = list(args)
        self.status = status
        self.nodes_expect = nodes_expect or {}
        self.stdout_expect = list(stdout_expect)
        self.summary = summary
        self.timeout = timeout
        self.mem = mem
        self.absent = list(absent)
        self.files = files or {}      # run-dir file -> regexes it must match

    def command(self, run_dir):
        cmd = [sys.executable, TEMPEST, "run", "-n", str(self.nodes),
               "--smp", str(self.smp), "--timeout", str(self.timeout),
               "--run-dir", run_dir]
        if self.mem:
            cmd += ["--mem", self.mem]
        return cmd + [prog(self.program)] + self.args

    def run(self, runs):
        run_dir = os.path.join(runs, self.name)
        shutil.rmtree(run_dir, ignore_errors=True)
        r = subprocess.run(self.command(run_dir), capture_output=True,
                           text=True, errors="replace",
                           timeout=self.timeout + 60,
                           stdin=subprocess.DEVNULL)
        return self.check(r.returncode, r.stdout + r.stderr, run_dir)

    def check(self, rc, out, run_dir):
        problems = []
        if rc != self.status:
            problems.append(f"exit status {rc}, expected {self.status}")
        if self.summary and not re.search(self.summary, out, re.M):
            problems.append(f"no summary matching /{self.summary}/")
        for rx in self.stdout_expect:
            if not re.search(rx, out, re.M):
                problems.append(f"console lacks /{rx}/")
        for rx in self.absent:
            if re.search(rx, out, re.M):
                problems.append(f"console has /{rx}/")
        for name, rxs in self.files.items():
            text = _read(os.path.join(run_dir, name))
            for rx in rxs:
                if not re.search(rx, text, re.M):
                    problems.append(f"{name} lacks /{rx}/")
        for node in range(self.nodes):
            log = _read(os.path.join(run_dir, f"node{node}.log"))
            for key in ("*", node):
                for rx in self.nodes_expect.get(key, []):
                    rx = rx.replace("{node}", str(node))
                    if not re.search(rx, log, re.M):
                        problems.append(f"node{node}.log lacks /{rx}/")
        return (not problems, "; ".join(problems[:3]),
                out if problems else out[-2000:])


class Qemu:
    """Start one QEMU directly and check that it refuses bad settings."""

    def __init__(self, name, args, message):
        self.name = name
        self.args = args
        self.message = message

    def run(self, runs):
        r = subprocess.run([QEMU, "-nodefaults", "-display", "none"]
                           + self.args, capture_output=True, text=True,
                           timeout=30, stdin=subprocess.DEVNULL)
        out = r.stdout + r.stderr
        ok = r.returncode != 0 and re.search(self.message, out)
        return (bool(ok), f"exit {r.returncode}", out)


def _qemus_running(marker):
    """PIDs of processes whose command line contains marker."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


class Interrupt(Run):
    """Ctrl-C on a running cluster stops every node and leaves nothing."""

    def interrupt(self, p, elf):
        os.killpg(p.pid, signal.SIGINT)

    def run(self, runs):
        run_dir = os.path.join(runs, self.name)
        shutil.rmtree(run_dir, ignore_errors=True)
        os.makedirs(run_dir)
        # A private copy of the ELF marks this run's QEMUs in /proc.
        elf = os.path.join(run_dir, "interrupt-marker.elf")
        shutil.copy(prog(self.program), elf)
        cmd = self.command(run_dir)
        cmd[-1 - len(self.args)] = elf
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             stdin=subprocess.DEVNULL,
                             start_new_session=True)
        deadline = time.monotonic() + 30
        started = False
        while time.monotonic() < deadline and p.poll() is None:
            logs = [_read(os.path.join(run_dir, f"node{i}.log"))
                    for i in range(self.nodes)]
            if all("waiting" in log for log in logs):
                started = True
                break
            time.sleep(0.05)
        self.interrupt(p, elf)
        out, _ = p.communicate(timeout=30)
        left = _qemus_running(elf)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        ok, detail, out = self.check(p.returncode, out, run_dir)
        problems = [detail] if detail else []
        if not started:
            problems.append("the nodes never started")
            ok = False
        if left:
            problems.append(f"QEMU processes left behind: {left}")
            ok = False
        return ok, "; ".join(problems), out


class CcRun(Run):
    """A user's own multi-file program, built with 'scripts/tempest cc'."""

    SOURCES = {
        "main.c": """#include <stdio.h>
#include <tempest/rt.h>
int twice(int x);
int main(int argc, char **argv)
{
    printf("%s: node %u says %d\\n", GREETING, rt_node_id(), twice(21));
    return argc == 2 ? 0 : 3;
}
""",
        "more.c": "int twice(int x) { return 2 * x; }\n",
    }

    def run(self, runs):
        work = os.path.join(runs, self.name + "-src")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        for name, text in self.SOURCES.items():
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
        elf = os.path.join(work, "user.elf")
        r = subprocess.run([sys.executable, TEMPEST, "cc", "-O2", "-o", elf,
                            "main.c", "more.c", '-DGREETING="hi there"'],
                           cwd=work, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(elf):
            return False, f"cc exit {r.returncode}", r.stdout + r.stderr
        self.program = elf
        return super().run(runs)


class KillNode(Interrupt):
    """SIGKILL one node's QEMU mid-run; the rest must report it."""

    def __init__(self, *args, victim=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.victim = victim

    def interrupt(self, p, elf):
        marker = f"node-id={self.victim},"
        for pid in _qemus_running(elf):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    os.kill(pid, signal.SIGKILL)


def node_lines(fmt, nodes):
    return [re.escape(fmt.format(node=i)) for i in range(nodes)]


CASES = [
    # Tempest sec. 2 / issue 2: each node knows its id, the node count and
    # its CPUs; the launcher streams every console with a [node K] prefix.
    Run("hello-1", "examples/hello/hello.elf", nodes=1,
        nodes_expect={0: [r"^hello from node 0 of 1: 1 CPUs? online"]},
        summary=r"1 node exited 0"),
    Run("hello-4", "examples/hello/hello.elf", nodes=4, smp=2,
        nodes_expect={"*": [r"^hello from node {node} of 4: 2 CPUs online"]},
        stdout_expect=node_lines("[node {node}] hello from node {node} of 4",
                                 4),
        summary=r"4 nodes exited 0"),
    Run("hello-smp8", "examples/hello/hello.elf", nodes=1, smp=8,
        nodes_expect={0: [r"hello from node 0 of 1: 8 CPUs online"]}),
    # The runtime's crash report: an access to the unmapped user-managed
    # segment ends that node with status 134; the launcher names the node
    # and stops the others.
    Run("crash-unmapped", "crash_unmapped", nodes=3, args=["1"],
        status=134,
        nodes_expect={1: [r"^\*\*\* CRASH", r"[Dd]ata [Aa]bort",
                          r"FAR\s*[:=]?\s*(0x)?0*4000000000",
                          r"read, translation fault", r"user-managed segment",
                          r"ELR", r"x30"]},
        summary=r"node 1 failed with status 134"),
    Run("crash-null", "crash_null", nodes=1, status=134,
        nodes_expect={0: [r"^\*\*\* CRASH", r"FAR\s*[:=]?\s*(0x)?0+\b",
                          r"write, translation fault",
                          r"NULL pointer dereference"]},
        summary=r"node 0 failed with status 134"),
    # exit(n) and return from main end the node with that status.
    Run("exit-status", "exit_code", nodes=2, args=["7"], status=7,
        summary=r"node \d failed with status 7"),
    Run("exit-zero", "exit_code", nodes=2, args=["0"],
        summary=r"2 nodes exited 0"),
    # argv reaches main() intact, spaces, quotes and backslashes included.
    Run("args", "exit_code", nodes=1,
        args=["0", "two words", 'q"uote', "back\\slash", ""],
        nodes_expect={0: [r"^argc=6$", r"^argv\[0\]=<?exit_code\.elf>?$",
                          r"^argv\[2\]=<?two words>?$",
                          r'^argv\[3\]=<?q"uote>?$',
                          r"^argv\[4\]=<?back\\slash>?$",
                          r"^argv\[5\]=<?>?$"]}),
    # Secondary CPUs started through PSCI run code and see shared memory.
    Run("smp-1", "smp", nodes=1, smp=1,
        nodes_expect={0: [r"^smp ok: 1 cpus$"]}),
    Run("smp-4", "smp", nodes=1, smp=4,
        nodes_expect={0: [r"smp ok: 4 cpus"]}),
    Run("malloc", "malloc", nodes=1, mem="64M"),
    # The node controller's identity registers, read by a guest.
    Run("nc-regs", "nc_regs", nodes=3,
        nodes_expect={"*": [r"node_id=(0x)?{node}\b",
                            r"num_nodes=(0x)?3\b",
                            r"page_size=(4096|0x1000)\b"]}),
    # README: a user's own program, several files and cflags, through
    # 'scripts/tempest cc', runs on every node with its arguments.
    CcRun("cc-user-program", "user.elf", nodes=2, args=["x"],
          nodes_expect={"*": [r"^hi there: node {node} says 42$"]},
          summary=r"2 nodes exited 0"),
    # Strata 9.3 and 10 through the launcher: console records become
    # strata.log, states.svg and trace.json, and stay out of the consoles.
    Run("console-records", "records", nodes=3,
        nodes_expect={"*": [r"^records from node {node}$",
                            r"^done {node}$"]},
        absent=[r"\x1e", r"STATE-NAME", r"logged this"],
        files={"strata.log": [r"^\[node 2\] node 2 logged this$"],
               "states.svg": [r"<svg", r"communicate", r"node 2"],
               "trace.json": [r'"traceEvents"', r'"name": "compute"']},
        summary=r"wrote strata.log, states.svg, trace.json"),
    # The launcher's timeout stops a cluster that does not finish.
    Run("timeout", "crash_unmapped", nodes=2, args=["99"], status=124,
        timeout=3, summary=r"timeout after 3 s"),
    Interrupt("ctrl-c", "crash_unmapped", nodes=2, args=["99"], status=130,
              timeout=60, summary=r"interrupted"),
    # The machine refuses impossible settings with a clear error.
    Qemu("machine-bad-node-id",
         ["-M", "tempest,node-id=4,num-nodes=4"],
         r"node-id 4 must be below num-nodes 4"),
    Qemu("machine-too-many-cpus", ["-M", "tempest", "-smp", "9"],
         r"(?i)maximum cpus|max.*8"),
    Qemu("machine-too-much-ram", ["-M", "tempest", "-m", "17G"],
         r"at most 16384 MiB"),
]

# ---------------------------------------------------------------------------
# Messaging (issue 3): the runtime's interrupts, the node controller's
# rings through the device access layer, and libtempest's active messages
# and timers, on clusters joined by the fabric.  Every clean run must print
# no libtempest report ("*** tempest") and no crash.
# ---------------------------------------------------------------------------
CLEAN = [r"\*\*\* tempest", r"\*\*\* CRASH"]


def am(name, program, nodes, smp, args=(), ok=None, timeout=60, **kw):
    """A messaging test: exit 0, '<program> ok' on every node, clean."""
    return Run(name, program, nodes=nodes, smp=smp, args=args,
               nodes_expect={"*": [rf"^{ok or program} ok"]},
               summary=rf"{nodes} nodes? exited 0", timeout=timeout,
               absent=kw.pop("absent", CLEAN), **kw)


CASES += [
    # docs/runtime.rst, Interrupts: an SPI's handler runs from the IRQ
    # vector with every general and FP/SIMD register preserved, from a
    # masked rt_cpu_sleep(), and on CPU 1 when routed there.
    am("irq-smp1", "irq", 1, 1),
    am("irq-smp2", "irq", 1, 2),
    # docs/node-controller.rst 1.1 through tempest/nc.h alone: ring
    # set-up and its refusals, loopback on both networks, send errors,
    # device timers in deadline order.
    am("nc-msg", "nc_msg", 1, 1),
    # Tempest 3.3.2-3.3.4: W, R and F items, the builder, every body size
    # from 0 to TPPI_MAX_AM_BYTES (multi-packet reassembly), echoed and
    # checked byte for byte; on one node (loopback), and on two with the
    # protocol thread interrupt-driven (--smp 1) and on CPU 1 (--smp 2).
    am("am-pingpong-1node", "am_pingpong", 1, 1),
    am("am-pingpong-smp1", "am_pingpong", 2, 1),
    am("am-pingpong-smp2", "am_pingpong", 2, 2),
    # Tempest 3.3.2-3.3.3: handlers sending from handlers (reply network),
    # a token per node around the ring, per-hop checks.
    am("am-ring-4", "am_ring", 4, 2, args=["200"]),
    am("am-ring-8", "am_ring", 8, 1, args=["100"]),
    # Tempest 3.3.2 F items: bodies of every size forwarded hop by hop.
    am("am-forward-4", "am_forward", 4, 2),
    am("am-forward-3-smp1", "am_forward", 3, 1),
    # Tempest 2 and 3.3: 100,000 messages per node, every one counted and
    # checked, in order per sender, nothing lost or duplicated; flow
    # control many-to-one; both protocol-thread modes all-to-all; replies
    # from every handler (the two networks and the backlog: no deadlock).
    am("am-storm-many-4", "am_storm", 4, 2, args=["many", "100000"]),
    am("am-storm-all-4-smp2", "am_storm", 4, 2, args=["all", "100000"]),
    am("am-storm-all-4-smp1", "am_storm", 4, 1, args=["all", "100000"]),
    am("am-storm-reply-4", "am_storm", 4, 2, args=["reply", "100000"]),
    am("am-storm-all-8", "am_storm", 8, 1, args=["all", "100000"]),
    # Tempest 3.5 and 2 (priorities): deadline order beyond the device's
    # 256 timers, equal delays in scheduling order, chained timers, and a
    # timer during a message storm running before the waiting messages.
    am("am-timers-1node", "am_timers", 1, 1),
    am("am-timers-2", "am_timers", 2, 2),
    # Tempest 3.3.3 (the handler must consume the body): unread bytes, a
    # read past the end, a handler outside the code and refused sends are
    # reported and counted, never misparsed.
    am("am-unread", "am_unread", 2, 1, absent=[r"\*\*\* CRASH"],
       stdout_expect=[r"left 12 of the 16 bytes of the message from node "
                      r"\d unread", r"past its end",
                      r"names handler 0x0*10, outside the program's code",
                      r"R item .* not word-aligned: not sent",
                      r"F item outside a message handler: not sent",
                      r"body over TPPI_MAX_AM_BYTES",
                      r"send to node 5, not in the 2-node cluster"]),
    # Issue 3, a node that exits: its peers get the callback (a normal exit
    # is counted, not printed), and see their later send to it rejected.
    am("am-peerdown", "am_peerdown", 3, 2,
       absent=[r"\*\*\* CRASH", r"lost node"],
       stdout_expect=[r"peer-down callback: node 2",
                      r"\*\*\* node \d: send error: to node 2"]),
    # Issue 3, a node killed under the cluster: its peers report it, the
    # launcher names it and its signal, and stops the rest.
    KillNode("am-killed", "am_killed", nodes=3, args=[], status=137,
             victim=2, timeout=60,
             stdout_expect=[r"\*\*\* node 0: lost node 2 \(connection "
                            r"lost\)",
                            r"\*\*\* node 1: lost node 2 \(connection "
                            r"lost\)"],
             summary=r"node 2 failed with status 137 \(killed by signal "
                     r"9\)"),
]
