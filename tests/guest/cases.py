# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tests: real programs on booted clusters, through the real launcher.

Each case runs 'scripts/tempest run' as a user would (a separate process,
real QEMUs, real consoles) and checks its exit status, its summary line,
what it streamed with '[node K]' prefixes, and each node's log file.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TEMPEST = os.path.join(ROOT, "scripts", "tempest")
# The fabric the clusters of this run use (tests/guest/meson.build runs
# the suite once per fabric; scripts/tempest run reads the same variable).
FABRIC = os.environ.get("TEMPEST_FABRIC") or "shm"
SHM = FABRIC == "shm"
QEMU = os.path.join(ROOT, "build", "qemu", "qemu-system-aarch64")
# TEMPEST_LINUX=1: the same programs built as Linux processes
# (build/guest-linux), each case's cluster booted with --linux
# (tests/linux/cases.py runs a set of the cases this way).
LINUX = os.environ.get("TEMPEST_LINUX") == "1"
GUEST = os.path.join(ROOT, "build", "guest-linux" if LINUX else "guest")
# A Linux node boots in about 2.5 s of one host core before the program
# starts: the nodes of a case boot together on the host's cores.
LINUX_BOOT_S = 15


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
                 timeout=60, mem=None, absent=(), files=None, launch=()):
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
        self.launch = list(launch)    # more options of 'scripts/tempest run'

    def time_limit(self):
        return self.timeout + (LINUX_BOOT_S + 5 * self.nodes if LINUX
                               else 0)

    def command(self, run_dir):
        cmd = [sys.executable, TEMPEST, "run", "-n", str(self.nodes),
               "--smp", str(self.smp), "--timeout", str(self.time_limit()),
               "--run-dir", run_dir] + (["--linux"] if LINUX else [])
        if self.mem:
            cmd += ["--mem", self.mem]
        return cmd + self.launch + [prog(self.program)] + self.args

    def run(self, runs):
        run_dir = os.path.join(runs, self.name)
        shutil.rmtree(run_dir, ignore_errors=True)
        r = subprocess.run(self.command(run_dir), capture_output=True,
                           text=True, errors="replace",
                           timeout=self.time_limit() + 60,
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


class QmpDuringExit:
    """QMP requests that come while QEMU exits (the launcher's timeout
    report asks every node's QMP what it does, as nodes end by
    themselves): QEMU ends cleanly, never with SIGSEGV (target-patches/
    0014: before it, 6 to 13 of 300 such runs crashed in aio_co_wake(),
    so 500 of them all but never miss it).  Two QMP sockets; requests
    flood one while the other says quit."""

    def __init__(self, name, runs=500):
        self.name = name
        self.runs = runs

    @staticmethod
    def _connect(path):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(path)
        s.recv(4096)                    # the greeting
        s.sendall(b'{"execute": "qmp_capabilities"}\n')
        s.recv(4096)
        return s

    def once(self, d):
        a, b = os.path.join(d, "a"), os.path.join(d, "b")
        p = subprocess.Popen([QEMU, "-M", "none", "-display", "none",
                              "-nodefaults",
                              "-qmp", f"unix:{a},server=on,wait=off",
                              "-qmp", f"unix:{b},server=on,wait=off"],
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(b) and time.monotonic() < deadline:
                time.sleep(0.01)
            quitter, flooded = self._connect(a), self._connect(b)
            done = threading.Event()

            def flood():
                try:
                    while not done.is_set():
                        flooded.sendall(b'{"execute": "query-status"}\n')
                        flooded.recv(4096)
                except OSError:
                    pass                # QEMU went: what we wait for

            t = threading.Thread(target=flood)
            t.start()
            time.sleep(0.005)
            quitter.sendall(b'{"execute": "quit"}\n')
            rc = p.wait(timeout=20)
            done.set()
            t.join(timeout=10)
            quitter.close()
            flooded.close()
            return rc, p.stderr.read().decode(errors="replace")
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            for f in (a, b):
                if os.path.exists(f):
                    os.unlink(f)

    def run(self, runs):
        d = os.path.join(runs, self.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        bad = []
        for i in range(self.runs):
            try:
                rc, err = self.once(d)
            except (OSError, subprocess.TimeoutExpired) as e:
                bad.append(f"run {i}: {e}")
                continue
            if rc != 0:
                bad.append(f"run {i}: exit status {rc} {err[-200:]}")
        return (not bad, f"{len(bad)} of {self.runs} runs: "
                f"{'; '.join(bad[:3])}" if bad else "", "")


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
        # A private copy of the ELF marks this run's QEMUs in /proc; on
        # Linux nodes (whose QEMU command line does not name the program)
        # the run directory they share does.
        elf = os.path.join(run_dir, "interrupt-marker.elf")
        shutil.copy(prog(self.program), elf)
        cmd = self.command(run_dir)
        cmd[-1 - len(self.args)] = elf
        if LINUX:
            elf = f"path={os.path.realpath(run_dir)},"
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             stdin=subprocess.DEVNULL,
                             start_new_session=True)
        deadline = time.monotonic() + 30 + (LINUX_BOOT_S + 5 * self.nodes
                                            if LINUX else 0)
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
        # Nodes killed on the launcher's behalf may take a moment to go.
        deadline = time.monotonic() + 5
        left = _qemus_running(elf)
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
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


class KillNodeUnseen(KillNode):
    """SIGKILL one node while the launcher is stopped (SIGSTOP), so that
    the launcher cannot stop the others: they must end by themselves,
    within 30 s, from what their own node controllers report."""

    left = ()

    def interrupt(self, p, elf):
        os.kill(p.pid, signal.SIGSTOP)
        try:
            super().interrupt(p, elf)
            deadline = time.monotonic() + 30
            while True:
                # (The launcher's command line names the ELF too.)
                self.left = [q for q in _qemus_running(elf) if q != p.pid]
                if not self.left or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        finally:
            os.kill(p.pid, signal.SIGCONT)

    def check(self, rc, out, run_dir):
        ok, detail, out = super().check(rc, out, run_dir)
        if self.left:
            left = f"nodes still running 30 s after node {self.victim} " \
                   f"was killed: pids {self.left}"
            return False, "; ".join(x for x in (left, detail) if x), out
        return ok, detail, out


# The summary of a KillNodeUnseen run of 3 nodes whose node 2 is killed:
# the other two ended by themselves, with status 1, and none was stopped.
LOST_SUMMARY = (r"node 2 failed with status 137 \(killed by signal 9\) "
                r"after [\d.]+ s; nodes 0, 1 ended by themselves with "
                r"status 1; none was left to stop")


class KillLauncher(Interrupt):
    """SIGKILL the launcher itself mid-run: no node may outlive it."""

    def interrupt(self, p, elf):
        os.kill(p.pid, signal.SIGKILL)


class Pinned(Interrupt):
    """--pin: while the nodes run, every thread of every node's QEMU (the
    vCPUs, the main loop, the waiters) is bound by the host's kernel to
    the node's share of the launcher's CPUs, dealt out in turn (on: node K
    to CPU K mod their number, with one vCPU a node; --smp CPUs in a row
    with more), or to all of them (off); then Ctrl-C ends the run as in
    ctrl-c."""

    def __init__(self, name, pin, **kw):
        super().__init__(name, "crash_unmapped", args=["99"], status=130,
                         timeout=60, summary=r"interrupted",
                         launch=["--pin", pin], **kw)
        self.pin = pin
        self.seen = []

    def expected(self, node):
        cpus = sorted(os.sched_getaffinity(0))
        if self.pin == "off":
            return set(cpus)
        return {cpus[(node * self.smp + j) % len(cpus)]
                for j in range(self.smp)}

    def interrupt(self, p, elf):
        self.seen = []
        for pid in _qemus_running(elf):
            m = re.search(rb"node-id=(\d+)", open(f"/proc/{pid}/cmdline",
                                                  "rb").read())
            if not m:
                continue
            node = int(m.group(1))
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    got = os.sched_getaffinity(int(tid))
                except OSError:
                    continue            # a thread that just ended
                self.seen.append((node, int(tid), got, self.expected(node)))
        super().interrupt(p, elf)

    def check(self, rc, out, run_dir):
        ok, detail, out = super().check(rc, out, run_dir)
        problems = [detail] if detail else []
        nodes = {node for node, _, _, _ in self.seen}
        if nodes != set(range(self.nodes)):
            problems.append(f"threads seen of nodes {sorted(nodes)} only")
        for node, tid, got, want in self.seen:
            if got != want:
                problems.append(f"node {node} thread {tid}: CPUs "
                                f"{sorted(got)}, expected {sorted(want)}")
        return not problems, "; ".join(problems[:3]), out


class Refused:
    """'scripts/tempest run' with a program or a setting the machine does
    not take: refused at once with a clear message (exit 1), before
    anything is started (no log, no command.txt in the run directory)."""

    def __init__(self, name, opts, message, program="exit_code"):
        self.name = name
        self.opts = list(opts)
        self.message = message
        self.program = program

    def run(self, runs):
        run_dir = os.path.join(runs, self.name)
        shutil.rmtree(run_dir, ignore_errors=True)
        cmd = [sys.executable, TEMPEST, "run", "--run-dir", run_dir] + \
            self.opts + [prog(self.program), "0"]
        r = subprocess.run(cmd, capture_output=True, text=True,
                           errors="replace", timeout=120,
                           stdin=subprocess.DEVNULL)
        out = r.stdout + r.stderr
        problems = []
        if r.returncode != 1:
            problems.append(f"exit status {r.returncode}, expected 1")
        if not re.search(self.message, out, re.M):
            problems.append(f"no message matching /{self.message}/")
        started = os.listdir(run_dir) if os.path.isdir(run_dir) else []
        if started:
            problems.append(f"started anyway: {', '.join(sorted(started))}")
        return not problems, "; ".join(problems), out


class BenchJson:
    """'scripts/tempest bench NAME --json': standard output is JSON alone
    (progress goes to standard error), one row per measurement."""

    def __init__(self, name, bench, opts=()):
        self.name = name
        self.bench = bench
        self.opts = list(opts)

    def run(self, runs):
        cmd = [sys.executable, TEMPEST, "bench", self.bench, "--json"] + \
            self.opts
        r = subprocess.run(cmd, capture_output=True, text=True,
                           errors="replace", timeout=600,
                           stdin=subprocess.DEVNULL)
        problems = []
        if r.returncode != 0:
            problems.append(f"exit status {r.returncode}")
        try:
            rows = json.loads(r.stdout)[self.bench]
            if not rows or not all({"what", "median_s", "ratio"} <= set(row)
                                   for row in rows):
                problems.append("rows without what, median_s, ratio")
        except (ValueError, KeyError, TypeError) as e:
            problems.append(f"stdout is not the JSON of '{self.bench}': {e}")
        if not re.search(rf"^tempest: bench {self.bench}\b", r.stderr, re.M):
            problems.append("no progress on stderr")
        return (not problems, "; ".join(problems),
                f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}")


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
    # docs/fabric.rst, "A stopped node's report": a cluster stopped by
    # the timeout in the middle of its messages and barriers (a program
    # that never ends: how fast the host is does not matter); every node
    # prints its rings and each link's credits (and, on shared memory,
    # the rings' flags), and the launcher wrote what each node's threads
    # were doing before it stopped them.  A node may take its SIGTERM
    # after it saw the others go (their links closed: "gone 1", the
    # link's own fields not printed): a live link's full line is asked of
    # one node, the credits of every node.
    Run("timeout-report-3", "strata_forever", nodes=3, status=124,
        timeout=8, mem="64M",
        summary=r"timeout after 8 s; .*their threads: .*hang\.txt",
        nodes_expect={"*": [
            r"^tempest-nc: node {node}: stopped by a signal at [\d.]+ s",
            r"^  RQ: base 0x[0-9a-f]+ slots \d+ size \d+ idx \d+",
            r"^  SQ0: base 0x[0-9a-f]+ slots \d+ .*valid",
            r"^fabric: node {node} of 3, state \d+, \d+ peers up",
            r"^  peer \d+: gone [01] credit \d+/\d+ allowed \d+/\d+ owed"]},
        stdout_expect=[
            r"\]   peer \d+: gone 0 credit \d+/\d+ allowed \d+/\d+ owed"
            + (r".* shm tx_on 1 rx_on 1 .*tx\{pos \d+ tail \d+ head \d+ "
               r"sleeping [01] belled [01] tx_waiting [01] credit_waiting "
               r"[0-3] credit_back \d+/\d+" if SHM else "")],
        files={"hang.txt": [r"^node 0 \(pid \d+\): QMP answers",
                            r"^  thread \d+ '[^']*': state [A-Z], cpu \d+ "
                            r"ticks, wchan "]
               # the guest's stack, named from the ELF (bare metal)
               # (a name may be a compiler's clone: f.part.0)
               + ([] if LINUX else [r"^  guest cpu 0: pc [\w.]+\+0x[0-9a-f]+ "
                                    r"< lr [\w.]+\+0x[0-9a-f]+ < .*main\+"])}),
    # The same on 16 nodes: the launcher asks the nodes' monitors in
    # parallel, within a bound of its own (scripts/lib/tempestlib/hang.py;
    # one after the other, 256 nodes kept a run's stop waiting for
    # minutes): every node is in the report, the last one too.
    Run("timeout-report-16", "strata_forever", nodes=16, status=124,
        timeout=8, mem="64M",
        summary=r"timeout after 8 s; .*their threads: .*hang\.txt",
        files={"hang.txt": [r"^node 0 \(pid \d+\): QMP answers",
                            r"^node 15 \(pid \d+\): QMP answers"]
               + ([] if LINUX else [r"^  guest cpu 0: pc [\w.]+\+0x"])}),
    Interrupt("ctrl-c", "crash_unmapped", nodes=2, args=["99"], status=130,
              timeout=60, summary=r"interrupted"),
    # Nodes bound to host CPUs (docs/tempest.rst, "Nodes pinned to host
    # CPUs"), and left to the host.
    Pinned("pin-on", "on", nodes=3),
    Pinned("pin-off", "off", nodes=3),
    # A launcher killed outright (SIGKILL: no handler runs) leaves no node
    # behind either.
    KillLauncher("launcher-killed", "crash_unmapped", nodes=2, args=["99"],
                 status=-9, timeout=60),
    # The launcher refuses, at once and before starting any QEMU, what the
    # machine cannot run: anything but an aarch64 ELF executable, and
    # settings beyond the machine's limits (tempest-hw.h) or the device's.
    Refused("run-not-elf", ["-n", "2", "--timeout", "20"],
            r"README\.rst is not an ELF file",
            program=os.path.join(ROOT, "README.rst")),
    Refused("run-host-elf", ["--timeout", "20"],
            r"is an ELF for .*, not aarch64|is a shared object or PIE",
            program="/usr/bin/true"),
    Refused("run-too-many-nodes", ["-n", "5000"],
            r"-n 5000: the machine has 1 to \d+ nodes"),
    Refused("run-too-many-cpus", ["--smp", "9"],
            r"--smp 9: a node has 1 to 8 CPUs"),
    Refused("run-bad-mem", ["--mem", "0"], r"--mem 0M: a node has more"),
    Refused("run-too-much-mem", ["--mem", "17G"],
            r"--mem 17G: .*at most 16384 MiB"),
    Refused("run-bad-tagmem", ["--tagmem", "6K"],
            r"--tagmem 6K: whole 4 KiB pages"),
    Refused("run-bad-credits", ["-n", "2", "--credits", "5000"],
            r"--credits 5000: 1 to 4096"),
    Refused("run-negative-timeout", ["--timeout", "-1"],
            r"--timeout -1: seconds, 0 or more"),
    # Issue 9: 'bench --json' prints JSON alone on standard output.
    BenchJson("bench-json", "boot", ["--repeat", "1", "--no-build"]),
    # The machine refuses impossible settings with a clear error.
    Qemu("machine-bad-node-id",
         ["-M", "tempest,node-id=4,num-nodes=4"],
         r"node-id 4 must be below num-nodes 4"),
    Qemu("machine-too-many-cpus", ["-M", "tempest", "-smp", "9"],
         r"(?i)maximum cpus|max.*8"),
    Qemu("machine-too-much-ram", ["-M", "tempest", "-m", "17G"],
         r"at most 16384 MiB"),
]
# No fabric in it: the shared-memory suite alone runs it.
if SHM:
    CASES += [QmpDuringExit("qmp-during-exit")]

# ---------------------------------------------------------------------------
# Messaging (issue 3): the runtime's interrupts, the node controller's
# rings through the device access layer, and libtempest's active messages
# and timers, on clusters joined by the fabric.  Every clean run must print
# no libtempest report ("*** tempest") and no crash.
# ---------------------------------------------------------------------------
# The last: a channel controller's report, printed only by a failed node.
CLEAN = [r"\*\*\* tempest", r"\*\*\* CRASH",
         r"the channel controller's last \d+"]


# What an AM test's nodes say of the packets that went straight into
# RQs when every one of them had some both ways (am-util.c, am_finish).
DIRECT_BOTH = (r"^node \d+: [1-9]\d* packets from peers straight into its "
               r"RQ, [1-9]\d* of its own into theirs$" if SHM and not LINUX
               else r"^node \d+: \d+ packets from peers straight into its "
               r"RQ, \d+ of its own into theirs$" if SHM else
               r"^node \d+: 0 packets from peers straight into its RQ, 0 "
               r"of its own into theirs$")
# ... and how often a vCPU asleep on its RQ's tail (nodes that do not
# spin, --spin-us 0) was woken there by a peer's packet (1.19).
WOKEN_RQ = (r"^node \d+: woken [1-9]\d* times on its RQ's tail by a "
            r"peer's packet$" if SHM and not LINUX else
            r"^node \d+: woken \d+ times on its RQ's tail by a peer's "
            r"packet$" if SHM else
            r"^node \d+: woken 0 times on its RQ's tail by a peer's "
            r"packet$")


def nested(name, mode, why, absent):
    """strata_forever's nested modes (2 nodes): node 0 must fail at once
    with StrataFail: node 0: @why, never print @absent, never time out."""
    return Run(name, "strata_forever", nodes=2, smp=1, args=[mode],
               mem="64M", status=255, timeout=60,
               summary=r"node 0 failed with status 255",
               nodes_expect={0: [r"StrataFail: node 0: " + why]},
               absent=absent + [r"timed out"])


def am(name, program, nodes, smp, args=(), ok=None, timeout=60,
       nodes_also=(), **kw):
    """A messaging test: exit 0, '<program> ok' on every node, clean
    (and on every node each of nodes_also)."""
    return Run(name, program, nodes=nodes, smp=smp, args=args,
               nodes_expect={"*": [rf"^{ok or program} ok",
                                   *nodes_also]},
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
    # docs/chan.rst, the channel controller in the node controller (1.8)
    # through tempest/nc.h alone: the first input into the initial
    # buffer after a state-keeping outputdata, then outputs of 1 byte to
    # 64 MiB to a waiting input (the transfer engine past 64 KiB), an
    # input blocked 300 ms sleeping until the CQ interrupt.
    am("chan-hw-2", "chan_hw", 2, 1, mem="256M", timeout=180),
    # docs/chan.rst, the copy in halves: a channel's transfer of 128 KiB
    # to 4 MiB copied half by each node's controller on shared memory;
    # lengths on both sides of every boundary between guard bytes, then
    # 40 round trips, every byte its message's, and XFER_PULL exactly
    # the second halves (0 on the socket fabrics).
    am("chan-hw-split-2", "chan_hw", 2, 1, args=["split", "40"],
       ok="chan_hw split", mem="256M", timeout=180),
    # docs/chan.rst, "When a node fails": a node that fails after using
    # channels prints its channel controller's last happenings and its
    # ports in use (node 0's output and its event, with where the event
    # went in the CQ; its pre-send, held at node 1).
    Run("chan-hw-failed-2", "chan_hw", nodes=2, args=["fail"], status=3,
        mem="256M", summary=r"node \d failed with status 3",
        nodes_expect={
            "*": [r"^tempest-nc: node {node}: the channel controller's "
                  r"last \d+ of \d+ happenings"],
            0: [r"^ +-[\d.]+ event 2 port 0x0 value 0x0, CQ tail 1, "
                r"0 queued$",
                r"^ +-[\d.]+ tx kind 1 to 0x10000 from 0x0 number 2 len 5$",
                # comp and closed: the peer may have ended first
                r"^  port 0x0 state 1 comp 0x(10000|ffffffff) tx 2 rx 0 "
                r"presend 1 "],
            1: [r"^ +-[\d.]+ rx from node 0 kind 1 to 0x10000 from 0x0 "
                r"number 2 len 5$",
                r"^  port 0x10000 state 4 comp 0x(0|ffffffff) .* held 5 "]},
        absent=[r"CRASH"]),
    # docs/chan.rst, ports over ports in the device (3.2's five stages as
    # device transitions): the reader end of a channel moved 28 times
    # round a ring of 7 nodes while node 0 outputs to it (data pre-sent
    # to a moving port, sent again at stage 3), every message in order;
    # both ends moving at once right after each input, 1000 rounds (stage
    # 5), some messages by the transfer engine, none lost, none twice;
    # outputdata, then the reader end moves: the pre-sent data (16 B and
    # 70 KB) is sent again and input into the new port's initial buffer,
    # the writer's end refused to move while its pre-send is out.
    # tempest-hw.h, OUTPUT_INPUT (1.16): bench chan's program, a
    # ping-pong whose every turn is one OUTPUT_INPUT and one wait, 4
    # bytes and 1 MiB (the transfer engine, READY) each way.
    Run("chan-hw-turn-2", "bench/chan_bench.elf", nodes=2, args=["200"],
        mem="128M", summary=r"2 nodes exited 0",
        nodes_expect={0: [r"^chan_bench: output_input=1$",
                          r"^chan_bench: size=4 rounds=200 ",
                          r"^chan_bench: size=1048576 rounds=200 "],
                      "*": [r"^chan_bench ok"]},
        absent=CLEAN),
    am("chan-hw-chain-8", "chan_hwmove", 8, 1, args=["chain", "28"],
       ok="chan_hwmove", mem="64M", timeout=180),
    am("chan-hw-both-4", "chan_hwmove", 4, 1, args=["both", "1000"],
       ok="chan_hwmove", mem="64M", timeout=300),
    am("chan-hw-odmove-3", "chan_hwmove", 3, 1, args=["odmove"],
       ok="chan_hwmove", mem="64M", timeout=120),
    # Tempest 3.3.2-3.3.4: W, R and F items, the builder, every body size
    # from 0 to TPPI_MAX_AM_BYTES (multi-packet reassembly), echoed and
    # checked byte for byte; on one node (loopback), and on two with the
    # protocol thread interrupt-driven (--smp 1) and on CPU 1 (--smp 2).
    # On shared memory (bare metal) nearly every packet goes from the
    # sender's device straight into the receiver's RQ slot (1.18,
    # docs/fabric.rst "Straight into the receiver's RQ"): both nodes count
    # some both ways; on sockets and TCP none; alone, none.
    am("am-pingpong-1node", "am_pingpong", 1, 1,
       nodes_also=[r"^node 0: 0 packets from peers straight into its RQ, "
                   r"0 of its own into theirs$"]),
    am("am-pingpong-smp1", "am_pingpong", 2, 1, nodes_also=[DIRECT_BOTH]),
    am("am-pingpong-smp2", "am_pingpong", 2, 2, nodes_also=[DIRECT_BOTH]),
    # Nodes that sleep at once (as when they outnumber the host's cores):
    # on shared memory a halted vCPU sleeps on its RQ's tail, and the
    # peer that writes a packet straight in wakes it (docs/fabric.rst,
    # "A vCPU asleep on its RQ").
    am("am-pingpong-spin0", "am_pingpong", 2, 1, launch=["--spin-us", "0"],
       nodes_also=[DIRECT_BOTH, WOKEN_RQ]),
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
    # On shared memory the senders' devices write into the RQs straight
    # whenever nothing of theirs is still on its way, each taking the
    # receiver's RQ lock, against the receiver's own writes.
    am("am-storm-many-4", "am_storm", 4, 2, args=["many", "100000"]),
    am("am-storm-all-4-smp2", "am_storm", 4, 2, args=["all", "100000"]),
    am("am-storm-all-4-smp1", "am_storm", 4, 1, args=["all", "100000"]),
    am("am-storm-reply-4", "am_storm", 4, 2, args=["reply", "100000"]),
    # tempest.h tempest_wait, tempest_wait_until; docs/tempest.rst "Where
    # handlers run": an idle wait sleeps until an interrupt (a few sleeps
    # for a 300 ms timer, not one a millisecond), a deadline wait returns
    # at its deadline, round trips while the peer waits, and the spins'
    # POLL writes are no guest error; both protocol-thread modes.
    am("am-idle-smp1", "am_idle", 2, 1),
    am("am-idle-smp2", "am_idle", 2, 2),
    am("am-storm-all-8", "am_storm", 8, 1, args=["all", "100000"]),
    # Tempest 3.5 and 2 (priorities): deadline order beyond the device's
    # 256 timers, equal delays in scheduling order, chained timers, and a
    # timer during a message storm running before the waiting messages.
    am("am-timers-1node", "am_timers", 1, 1),
    am("am-timers-2", "am_timers", 2, 2),
    # Tempest 2 (one handler at a time): a handler run inline by a fault
    # on a one-vCPU node that waits for room to send runs no other
    # handler inside it (and with a protocol CPU the same).
    am("am-nested-smp1", "am_nested", 2, 1, args=["3000"]),
    am("am-nested-smp2", "am_nested", 2, 2, args=["3000"]),
    # docs/node-controller.rst "Gather slots" (1.15) through libtempest:
    # W and R items from static and stack buffers, 4 to 4096 bytes around
    # 256 and 4064, each byte checked after the sender overwrote its
    # buffer, echoed from a handler; a 4096-byte message is one packet.
    am("am-gather-smp1", "am_gather", 2, 1),
    am("am-gather-smp2", "am_gather", 2, 2),
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
    # A lost link (here: its peer killed, the launcher stopped so that it
    # cannot end the run) ends a Strata program that polls for what that
    # peer would send: StrataFail, not a wait for ever.
    KillNodeUnseen("strata-link-lost", "strata_forever", nodes=3,
                   args=["poll"], status=137, victim=2, timeout=60,
                   mem="64M",
                   nodes_expect={n: [rf"StrataFail: node {n}: point-to-point "
                                     r"network: the link with a node of "
                                     r"the partition is lost"]
                                 for n in (0, 1)},
                   summary=LOST_SUMMARY),
    # A Strata message handler that calls a barrier while its node waits
    # in another one fails at once, instead of taking the other's place in
    # the wait (node 1 never joins: the wait would last for ever).
    nested("strata-nested-coll", "nested",
           r"a message handler called a control-network operation "
           r"\(.*\) while this node waited for another one",
           [r"nested barrier returned", r"never joined"]),
    # The same with the program's operation split-phase (StartCombineInt)
    # while it polls: the handler's CombineInt would take its place.
    nested("strata-nested-split", "nested-split",
           r"a control-network operation started in a message handler "
           r"while one started by the program was pending",
           [r"the handler's sum"]),
    # The same for a handler's ReceiveBroadcast while the program waits in
    # ReceiveBroadcastVector: it would take the program's word.
    nested("strata-nested-bcast", "nested-bcast",
           r"a message handler called ReceiveBroadcast \(or its Double or "
           r"Vector form\) while this node waited for a broadcast word",
           [r"the handler's word", r"no node broadcast"]),
    # The same for libtempest and libam programs that wait for what the
    # killed node would send, with no peer-down callback: the library ends
    # the others itself (status 1), where before they waited for ever.
    # (nocb: waiting in tempest_wait, which ends the node at once;
    # nocb-spin: in a loop of the program's own, ended by the grace timer.)
    *[KillNodeUnseen(f"am-link-lost{spin}-smp{smp}", "am_killed", nodes=3,
                     smp=smp, args=[f"nocb{spin}"], status=137, victim=2,
                     timeout=60, mem="64M",
                     nodes_expect={n: [rf"\*\*\* tempest: node {n}: the "
                                       r"link with node 2 is lost: ending "
                                       r"this node \(status 1"]
                                   for n in (0, 1)},
                     absent=[r"a count no handler raises"],
                     summary=LOST_SUMMARY)
      for smp in (1, 2) for spin in ("", "-spin")],
    KillNodeUnseen("am-gam-link-lost", "gam_forever", nodes=3,
                   status=137, victim=2, timeout=60, mem="64M",
                   nodes_expect={n: [rf"\*\*\* am: node {n}: the link with "
                                     r"node 2 is lost: ending this node "
                                     r"\(status 1\)"]
                                 for n in (0, 1)},
                   absent=[r"a request no node sent"],
                   summary=LOST_SUMMARY),
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

# ---------------------------------------------------------------------------
# Access control (issue 5): the runtime's fault path, libtempest's virtual
# memory management (Tempest 3.1), block access control (3.2), Ba items
# (3.3) and resumption (3.6) on the node controller's tagged memory, and
# the shared-memory demo built on them (guest/examples/dsm).
# ---------------------------------------------------------------------------
class TagRun(Run):
    """A Run with a tagged-memory size (scripts/tempest run --tagmem)."""

    def __init__(self, *args, tagmem=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.tagmem = tagmem

    def command(self, run_dir):
        cmd = super().command(run_dir)
        if self.tagmem:
            i = cmd.index("--run-dir")
            cmd[i:i] = ["--tagmem", self.tagmem]
        return cmd


def tags(name, program, nodes=1, smp=1, args=(), tagmem=None,
         absent=(r"\*\*\* CRASH",), nodes_expect=None, **kw):
    """An access-control test: exit 0, '<program> ok' on every node unless
    nodes_expect says otherwise."""
    return TagRun(name, program, nodes=nodes, smp=smp, args=args,
                  nodes_expect=nodes_expect or {"*": [rf"^{program} ok"]},
                  summary=rf"{nodes} nodes? exited 0", timeout=60,
                  absent=list(absent), tagmem=tagmem, **kw)


def tags_crash(name, what, smp, why, fsc):
    """A fault that must stop the node with a crash report (status 134)."""
    return Run(name, "tags_crash", nodes=1, smp=smp, args=[what],
               status=134, absent=[r"still running"],
               stdout_expect=[rf"\*\*\* tempest: node 0: cpu \d: {why}"],
               nodes_expect={0: [r"^\*\*\* CRASH on node 0",
                                 rf"FAR .*\(Tempest user-managed segment: "
                                 rf"{fsc}\)"]},
               summary=r"node 0 failed with status 134")


CASES += [
    # Tempest Table 1, 2 and 3.2.7: every (tag, load/store) pair on two
    # page modes faults exactly as Table 1 says, into the handler of
    # (mode, tag, access) with the page's usr_ptr and home; every kind of
    # checked access (pairs, FP/SIMD, atomics, exclusives, DC ZVA, across
    # blocks and pages); the protocol thread interrupt-driven (--smp 1)
    # and on its own CPU (--smp 2).
    tags("tags-table1-smp1", "tags_table1", smp=1, absent=CLEAN),
    tags("tags-table1-smp2", "tags_table1", smp=2, absent=CLEAN),
    # Tempest Table 2 and 3.2.3-3.2.5: all nine changes from every tag
    # they apply to, superblocks, TPPI_change_blk_acc_and_copy.
    tags("tags-table2", "tags_table2", smp=2, absent=CLEAN),
    # Tempest 3.1: every failure of alloc/unmap/remap/get_page_info,
    # fresh pages, remap keeping data and tags, page fault reports,
    # running out of frames (1 MiB of tagged memory), misuse reports.
    tags("tags-vm", "tags_vm", smp=1, tagmem="1M",
         stdout_expect=[r"not a block of the user-managed segment",
                        r"page 0x[0-9a-f]+ of the block is not mapped",
                        r"tag change 9 is not a TPPI_BlkTagChange",
                        r"from is NULL", r"no such page mode, tag or access",
                        r"warning: a handler for read accesses to ReadOnly "
                        r"blocks .* is never called",
                        r"warning: a handler for write accesses to Writable "
                        r"blocks"]),
    # Tempest 3.6 and section 2's priorities: resumed by a timer, by
    # another thread, not by another block, faulting again without a fix,
    # two threads released at once, faults before queued messages.
    tags("tags-resume-smp1", "tags_resume", smp=1, absent=CLEAN),
    tags("tags-resume-smp3", "tags_resume", smp=3, absent=CLEAN),
    # Tempest 3.1: page records read without the library's lock while
    # another vCPU maps, remaps and frees: never one half written.
    tags("tags-records-smp3", "tags_records", smp=3, absent=CLEAN,
         nodes_expect={0: [r"^tags_records ok",
                           r"^records: \d+ rounds, \d+ reads, \d+ found "
                           r"mapped, 0 torn, 0 bad tags"]}),
    # Tempest 3.2.6 under a race: no store lands after a downgrade has
    # returned while another vCPU stores without pause; loads never see
    # data older than an upgrade.  How often the race happened is the
    # host scheduler's doing: printed, never a failure.
    tags("tags-race-smp3", "tags_race", smp=3, absent=CLEAN,
         nodes_expect={0: [r"^tags_race ok",
                           r"^downgrades: \d+ rounds, race exercised .* 0 "
                           r"stores landed after a downgrade",
                           r"^upgrades: \d+ rounds, race exercised"]}),
    # Tempest 3.3.2-3.3.3: Ba items first, in the middle and last, sizes
    # 64 to 2048, tag changes at both ends, to another node and to itself,
    # refusals.
    tags("tags-ba-smp1", "tags_ba", nodes=2, smp=1,
         stdout_expect=[r"bad Ba item: not sent"]),
    tags("tags-ba-smp2", "tags_ba", nodes=2, smp=2,
         stdout_expect=[r"bad Ba item: not sent"]),
    # Tempest 3.3.2, any item list: RR, twelve W, BaBa, WBaRWF from a
    # handler (generated for the program), the builder's W Ba R Ba W, a
    # BaBa with a bad second block refused with no tag changed.
    tags("am-items-smp1", "am_items", nodes=2, smp=1,
         nodes_expect={0: [r"^5 cases acknowledged, 0 bad, 1 WBaRWF back$",
                           r"^am_items ok"],
                       1: [r"^am_items ok"]},
         absent=[r"\*\*\* CRASH", r"wrong at node", r"FAIL"]),
    tags("am-items-smp2", "am_items", nodes=2, smp=2,
         nodes_expect={0: [r"^5 cases acknowledged, 0 bad, 1 WBaRWF back$",
                           r"^am_items ok"],
                       1: [r"^am_items ok"]},
         absent=[r"\*\*\* CRASH", r"wrong at node", r"FAIL"]),
    # Tempest section 2: faults that are no protocol event stop the node
    # with the crash report, after saying why.
    tags_crash("tags-crash-no-handler", "noblk", 2,
               r"block access fault at 0x4000000008 \(pc 0x[0-9a-f]+, "
               r"load\): no handler for reads on Invalid blocks of page "
               r"mode 4", "block access fault"),
    tags_crash("tags-crash-no-page-handler", "nopage", 1,
               r"page fault at 0x4000005010 .*store\): the page is not "
               r"mapped and no page fault handler", "page fault"),
    tags_crash("tags-crash-protocol-thread-smp1", "pt", 1,
               r"block access fault .*: in the protocol thread",
               "block access fault"),
    tags_crash("tags-crash-protocol-thread-smp2", "pt", 2,
               r"block access fault .*: in the protocol thread",
               "block access fault"),
    # The unchecked alias of tagged memory (docs/node-controller.rst 1.3):
    # an Invalid block reads and writes there, then faults through the
    # segment.
    tags_crash("tags-crash-alias", "alias", 1, r"block access fault",
               "block access fault"),
    # The shared-memory demo (Stache-like, guest/examples/dsm): a Jacobi
    # relaxation on 2, 4 and 8 nodes equals, bit for bit, the same sweeps
    # computed alone on node 0; and the explicit-message version.
    tags("dsm-jacobi-2", "examples/dsm/jacobi.elf", nodes=2, smp=2,
         args=["dsm"], absent=CLEAN,
         nodes_expect={0: [r"^jacobi dsm ok: 126x126, 40 sweeps on 2 "
                           r"nodes"]}),
    # dsm_prefetch (the edge rows' misses started at a sweep's start):
    # every node's prefetches started misses, and the result is exact.
    tags("dsm-jacobi-4", "examples/dsm/jacobi.elf", nodes=4, smp=1,
         args=["dsm"], absent=CLEAN,
         nodes_expect={0: [r"^jacobi dsm ok: 126x126, 40 sweeps on 4 "
                           r"nodes"],
                       "*": [r"^node {node}: rows \d+\.\.\d+.* "
                             r"[1-9]\d* prefetches, 0 pushes"]}),
    # Without prefetches: every miss taken where the sweep meets it.
    tags("dsm-jacobi-4-plain", "examples/dsm/jacobi.elf", nodes=4, smp=1,
         args=["dsm-plain"], absent=CLEAN,
         nodes_expect={0: [r"^jacobi dsm ok: 126x126, 40 sweeps on 4 "
                           r"nodes"],
                       "*": [r"^node {node}: rows \d+\.\.\d+.* "
                             r"0 prefetches, 0 pushes"]}),
    tags("dsm-jacobi-8", "examples/dsm/jacobi.elf", nodes=8, smp=1,
         args=["dsm"], absent=CLEAN,
         nodes_expect={0: [r"^jacobi dsm ok: 126x126, 40 sweeps on 8 "
                           r"nodes"]}),
    # The update protocol (docs/dsm.rst, "The update protocol"): edge rows
    # pushed by their writer to the neighbour reading them, no barrier; the
    # result still equals the sequential one bit for bit (a push lost, late
    # or installed in the wrong place changes it), and every node pushed
    # rows and installed its neighbours'.  Heat moves a row a sweep, so on
    # 2 nodes (edge rows 63 and 64) 40 sweeps would leave them 0: 100.
    *[tags(f"dsm-update-jacobi-{k}", "examples/dsm/jacobi.elf", nodes=k,
           smp=2 if k == 2 else 1, args=["dsm-update", "126", str(sw)],
           absent=CLEAN,
           nodes_expect={0: [rf"^jacobi dsm-update ok: 126x126, {sw} sweeps "
                             rf"on {k} nodes"],
                         "*": [r"^node {node}: rows \d+\.\.\d+, .* "
                               r"[1-9]\d* pushes, [1-9]\d* updates$"]})
      for k, sw in ((2, 100), (4, 40), (8, 40))],
    # Bands of one and two rows (14 rows on 12 nodes): a one-row band's
    # row is both its edge rows, pushed once to both neighbours.
    tags("dsm-update-jacobi-12-narrow", "examples/dsm/jacobi.elf", nodes=12,
         smp=1, args=["dsm-update", "14", "30"], absent=CLEAN,
         nodes_expect={0: [r"^jacobi dsm-update ok: 14x14, 30 sweeps on 12 "
                           r"nodes"]}),
    # The update protocol's memory semantics (tests/guest/dsm_update.c):
    # a reader sees the last push, not the writer's later store, until it
    # waits for the next push; after dsm_update_end, the store never
    # pushed (sequential consistency again).
    *[tags(f"dsm-update-protocol-smp{smp}", "dsm_update", nodes=3, smp=smp,
           absent=CLEAN) for smp in (1, 2)],
    # A store to a block of the update protocol by a node not its writer
    # is the program's error: that node stops with status 1, saying why.
    # A one-vCPU wait whose condition loads shared memory: its misses are
    # taken in the wait's spin, where the device's interrupt is off; the
    # reply must still end the miss (it hung, 2026-11-25 review).  The
    # spin forced on: 3 nodes on 2 cores would have none.  With --smp 2
    # the fault's handler woke the waiters and took the waiting CPU's
    # mark: it slept unmarked, for ever (hung 3 of 3, docs/tempest.rst).
    *[tags(f"dsm-wait-shared-smp{smp}", "dsm_update", nodes=3, smp=smp,
           args=["wait-shared"], absent=CLEAN, launch=["--spin-us", "200"],
           nodes_expect={"*": [r"^dsm_update wait-shared ok"]})
      for smp in (1, 2)],
    Run("dsm-update-bad-store", "dsm_update", nodes=3, args=["bad-store"],
        status=1, summary=r"node 1 failed with status 1",
        nodes_expect={1: [r"^dsm: node 1: a store at 0x[0-9a-f]+, in a "
                          r"block of the update protocol that node 0 "
                          r"writes$"]},
        absent=[r"\*\*\* CRASH", r"node 1 stored to node 0's block"]),
    tags("jacobi-msg-8", "examples/dsm/jacobi.elf", nodes=8, smp=1,
         args=["msg"], absent=CLEAN,
         nodes_expect={0: [r"^jacobi msg ok: 126x126, 40 sweeps on 8 "
                           r"nodes"]}),
]

# ---------------------------------------------------------------------------
# Strata (issue 4): libstrata on clusters of 1, 2, 5 and 16 nodes (16 at
# --smp 1 and 64 MiB), through the launcher, which also collects the Strata
# log and the state graphs.  Every clean run prints no library report
# ("*** strata", "StrataFail") and no crash.
# ---------------------------------------------------------------------------
STRATA_CLEAN = [r"\*\*\* strata", r"StrataFail", r"\*\*\* CRASH", r"FAIL"]


class StrataRun(Run):
    """A Run that also checks files of the run directory: files maps a
    file name to regexes it must match, files_absent to regexes it must
    not."""

    def __init__(self, *args, files=None, files_absent=None, **kw):
        super().__init__(*args, **kw)
        self.files = files or {}
        self.files_absent = files_absent or {}

    def check(self, rc, out, run_dir):
        ok, detail, text = super().check(rc, out, run_dir)
        problems = [detail] if detail else []
        for name, rxs in self.files.items():
            content = _read(os.path.join(run_dir, name))
            if not content:
                problems.append(f"no {name}")
                continue
            for rx in rxs:
                if not re.search(rx, content, re.M):
                    problems.append(f"{name} lacks /{rx}/")
        for name, rxs in self.files_absent.items():
            content = _read(os.path.join(run_dir, name))
            for rx in rxs:
                if re.search(rx, content, re.M):
                    problems.append(f"{name} has /{rx}/")
        return (not problems, "; ".join(problems[:3]),
                out if problems else text)


def strata(name, program, nodes, args=(), ok=None, absent=None, **kw):
    """A Strata test: exit 0, '<program> ok' on every node, clean."""
    return StrataRun(name, program, nodes=nodes, smp=1, mem="64M",
                     args=args, timeout=kw.pop("timeout", 60),
                     nodes_expect=kw.pop("nodes_expect",
                                         {"*": [rf"^{ok or program} ok"]}),
                     summary=rf"{nodes} nodes? exited 0",
                     absent=STRATA_CLEAN if absent is None else absent, **kw)


def strata_sizes(name, program, sizes=(1, 2, 5, 16), **kw):
    return [strata(f"{name}-{n}", program, n, **kw) for n in sizes]


def strata_shared(name, program, what, sizes=(1, 2, 5, 16)):
    """strata_sizes whose last node prints "node N: COUNT <what>": above 0
    on shared memory with more than one node, 0 on sockets and TCP (as is
    each COUNT that <what> holds as "{count}")."""
    def count(n):
        return r"[1-9]\d*" if SHM and n > 1 else "0"

    return [strata(f"{name}-{n}", program, n,
                   nodes_expect={"*": [rf"^{program} ok"],
                                 n - 1: [rf"^node {n - 1}: {count(n)} " +
                                         what.replace("{count}", count(n))]})
            for n in sizes]


RADIX = "examples/radix-sort/radix.elf"
EXIT_GONE = [r"\*\*\* CRASH"]
MISMATCH = (r"StrataFail: control network: the nodes started different "
            r"control-network operations")

CASES += (
    # Strata 3 and 9.4: globals and macros, StrataInit twice, ClearMemory,
    # Park-Miller Random (the published 10,000th value) and SetRandomSeed
    # with TIME_BASED_SEED, the calibrated cycle counter, CurrentCycle and
    # ResetCurrentCycle.
    strata_sizes("strata-basics", "strata_basics")
    # Strata 4.1 and 4.2: barriers (a split-phase one cannot finish before
    # the last node starts it), global OR, the asynchronous OR bit, a
    # Start while another operation is pending.
    + strata_sizes("strata-control", "strata_control")
    # Strata 4.3: the fifteen CombineOps, scalar and vector (to 200
    # elements, in place, split-phase), wrap-around, the Max identity,
    # segmented scans on random patterns against the manual's semantics.
    # On shared memory the collectives combine in the shared area
    # (COLL_SHARED counts them; docs/strata.rst, "Combining on shared
    # counters"), on sockets and TCP on the tree.
    + strata_shared("strata-combine", "strata_combine",
                    "collectives combined in the shared area")
    # Strata 4.1 and 4.3 on nodes that halt at once (StrataSetSpin(0), and
    # the launcher's hint SPIN_US 0, as when the nodes outnumber the host's
    # cores). On shared memory a halted vCPU sleeps on the round's DONE
    # itself (target-patches/0013), and a node that computes through a barrier
    # (it arrives first: the others wait for its message) gets IRQ_COLL
    # from its waiter thread, which the last to arrive wakes through the
    # node's WAKE word (docs/strata.rst, "A vCPU that sleeps on DONE"):
    # COLL_SLEPT and COLL_WOKEN (1.17) count both on every node (on
    # sockets and TCP, the tree: neither). By default (sleep-yield-us
    # 500) a waiting node first yields its host CPU for up to 500 us
    # inside a read of COLL_WAIT, and sees DONE there in most collectives
    # (COLL_WAITED, 1.21: docs/strata.rst, "Waiting in a register read");
    # "-noyield" (sleep-yield-us=0): the read returns at once, the vCPU
    # halts and sleeps on DONE at once, and its FUTEX_WAKE ends the sleep.
    + [strata(f"strata-sleep-{n}{tag}", "strata_sleep", n,
              launch=["--spin-us", "0"] + extra,
              nodes_expect={"*": [r"^strata_sleep ok", (
                  rf"area, {slept} ended with a vCPU asleep on DONE, "
                  rf"[1-9]\d* by the waiter, {waited} in a COLL_WAIT read"
                  if SHM and n > 2 else
                  r"area, \d+ ended with a vCPU asleep on DONE, "
                  r"\d+ by the waiter, \d+ in a COLL_WAIT read" if SHM else
                  r" 0 collectives combined in the shared area, 0 ended "
                  r"with a vCPU asleep on DONE, 0 by the waiter, 0 in a "
                  r"COLL_WAIT read")]})
       for n, tag, extra, slept, waited in (
           (2, "", [], r"\d+", r"\d+"),
           (5, "", [], r"\d+", r"[1-9]\d*"),
           (16, "", [], r"\d+", r"[1-9]\d*"),
           (16, "-noyield", ["--qemu-arg=-machine",
                             "--qemu-arg=sleep-yield-us=0"],
            r"[1-9]\d*", "0"))]
    # Strata 4.3.1: the manual's two 16-node segmented-scan examples.
    + [strata("strata-segscan-16", "strata_segscan", 16,
              nodes_expect={"*": [r"^strata_segscan ok"],
                                0: [r"^case 1 \(E N N N\): done",
                                    r"^case 2 \(A N N N\): done"]})]
    # Strata 4.4: words, doubles and vectors (to 10,000 words, paced past
    # the device's queue) from every node, in order; QueryBroadcast. On
    # shared memory the words come by the combining area's ring, which
    # the node that broadcasts a word writes (BCAST_WRITTEN, 1.24; the
    # last node is not node 0, which orders them on the tree) and every
    # node reads (BCAST_SHARED; docs/strata.rst, "Broadcasts on shared
    # memory", "Every node writes the ring"), on sockets and TCP down the
    # tree.
    + strata_shared("strata-bcast", "strata_bcast",
                    "broadcast words read from the shared ring, {count} "
                    "written there")
    # The same on 2 nodes with the launcher's SPIN_US 100 ms (as when
    # every node has a host core): node 1 waits in reads of the wait
    # window that spin, for node 0's late words (broadcast 20 ms after a
    # barrier) in BCAST_WAIT and for its late arrivals (20 ms) in COLL_GO
    # (docs/strata.rst, "Spinning in a register read" and "Broadcasts
    # received in a register read"): BCAST_WAITED and COLL_WAITED above 0
    # on shared memory, 0 on sockets and TCP.
    + [strata("strata-bcast-2-spin", "strata_bcast", 2,
              launch=["--spin-us", "100000"],
              nodes_expect={"*": [r"^strata_bcast ok"],
                            1: [r"^node 1: [1-9]\d* broadcast words read "
                                r"from the shared ring, [1-9]\d* written "
                                r"there, [1-9]\d* popped in a BCAST_WAIT "
                                r"read, [1-9]\d* collectives ended in a "
                                r"COLL_WAIT read" if SHM else
                                r"^node 1: 0 broadcast words read from the "
                                r"shared ring, 0 written there, 0 popped in "
                                r"a BCAST_WAIT read, 0 collectives ended in a "
                                r"COLL_WAIT read"]})]
    # Strata 5: CompositeInt/Uint/Float with Min, Max, Average, Variance
    # and Median (the smaller middle value).
    + strata_sizes("strata-composite", "strata_composite")
    # Strata 6: every Send* with four word arguments, every Poll* against
    # the messages waiting on each network, a request/reply storm; a
    # handler outside the program is reported and dropped.
    + [strata(f"strata-am-{n}", "strata_am", n,
              absent=[r"StrataFail", r"\*\*\* CRASH", r"FAIL"],
              stdout_expect=[r"\*\*\* strata: node \d+: packet from node 0 "
                             r"\(network 0, kind 0x53, 32 bytes\) dropped: "
                             r"its handler is outside the program's code"])
       for n in (1, 2, 5, 16)]
    # Strata 7: block transfers into ports, the header before and after
    # the data (count negative), PortAndOffset*, single-packet Xfers and
    # the Put handlers.
    + strata_sizes("strata-xfer", "strata_xfer")
    # Strata 8: asynchronous multi-block transfers, interleaved, with
    # their accessors and completion callbacks.
    + strata_sizes("strata-abx", "strata_abx")
    # Strata 9.1-9.3: the print queue (handlers included) and its order,
    # StrataLog into the run's strata.log; the debugging library's Log*
    # switches.
    + [strata(f"strata-debug-{n}", "strata_debug", n,
              nodes_expect={"*": [r"^strata_debug ok", r"^StrataLogging=0$",
                                  r"^direct line {node}$[\s\S]*"
                                  r"^queued line {node}$",
                                  r"^queued in a handler on node {node} ",
                                  r"^queued for stderr {node}$",
                                  r"^queued for NULL {node}$",
                                  r"^flood {node} 2999$"]},
              files={"strata.log": [r"^\[node 0\] hello from node 0$",
                                    rf"^\[node {n - 1}\] hello from node "
                                    rf"{n - 1}$",
                                    r"^\[node 0\] a line with a newline$"]},
              files_absent={"strata.log": [r"barrier"]})
       for n in (1, 2, 5, 16)]
    + [strata(f"strata-debugD-{n}", "strata_debugD", n,
              nodes_expect={"*": [r"^strata_debugD ok",
                                  r"^StrataLogging=1$"]},
              files={"strata.log": [r"^\[node 0\] barrier done$",
                                    r"^\[node 0\] combine ReduceAdd start",
                                    r"^\[node 0\] Qprintf: queued line 0",
                                    r"^\[node 0\] hello from node 0$"]
                     + ([r"^\[node 0\] broadcast 0x00000007$",
                         r"^\[node 1\] received broadcast 0x00000007$"]
                        if n > 1 else [])})
       for n in (1, 2, 5)]
    # Strata 10: state graphs: states.svg and trace.json with the named
    # states, nothing recorded while RecordStates is off.
    + [strata(f"strata-states-{n}", "strata_states", n,
              files={"states.svg": [r"<svg", r"compute", r"exchange",
                                    rf"node {n - 1}"],
                     "trace.json": [r'"compute"', r'"exchange"',
                                    r'"traceEvents"'],
                     "strata.log": [r"InitTrace: file states\.sim, title "
                                    r"state test"]},
              files_absent={"trace.json": [r'"state 9"']})
       for n in (1, 5, 16)]
    # Strata 3.5 and 9.2: StrataExit(0) idles handling messages until all
    # nodes are there; a non-zero code, StrataFail, a failed assert and
    # exit() end the whole cluster with that status; returning from main
    # is StrataExit(0); bad calls fail with a message.
    + [strata(f"strata-exit-idle-{n}", "strata_exit", n, args=["idle"],
              nodes_expect={0: [rf"^node 0: {n - 1} replies$"]},
              stdout_expect=[r"node \d+: request from node 0 while "
                             r"exiting"] if n > 1 else [])
       for n in (1, 5)]
    + [strata("strata-exit-return-5", "strata_exit", 5, args=["return"],
              nodes_expect={"*": [r"^node {node} returns$"]})]
    + [StrataRun(f"strata-exit-{mode}-{n}", "strata_exit", nodes=n, smp=1,
                 mem="64M", args=[mode], status=status, timeout=30,
                 summary=rf"node {node} failed with status {status}",
                 stdout_expect=expect, absent=EXIT_GONE)
       for mode, n, node, status, expect in (
           ("code", 5, 1, 3, []),
           ("code", 16, 1, 3, []),
           ("code", 1, 0, 3, []),
           ("fail", 5, 4, 255, [r"\[node 4\] StrataFail: broken 42$"]),
           ("assert", 2, 0, 255, [r"StrataFail: assertion failed on node "
                                  r"0: Self == 99, file .*strata_exit\.c, "
                                  r"line \d+"]),
           ("exit", 2, 0, 5, []),
           ("return7", 3, 0, 7, [r"\[node 0\] node 0 returns"]),
           ("badproc", 1, 0, 255, [r"StrataFail: SendLeftPollBoth: node 1 "
                                   r"is not in the partition of 1"]),
           ("early", 1, 0, 255, [r"StrataFail: Barrier called before "
                                 r"StrataInit"]))]
    # Broadcasts never drop: 100,000 words to slow receivers and a
    # 1,000,000-word BroadcastVector, the network holding the sender.
    + [strata(f"strata-bflood-{n}", "strata_bflood", n, timeout=120)
       for n in (2, 4)]
    # The same with nodes that halt at once (SPIN_US 0): on shared memory
    # a receiver's vCPU sleeps on the ring's count (target-patches/0013's
    # second word), and node 0 holds words while a slow node's queue is
    # full until that node's taking wakes it (B_HELD).
    + [strata("strata-bflood-4-sleep", "strata_bflood", 4, timeout=120,
              launch=["--spin-us", "0"])]
    # Partitions whose size is not a power of two: a hypercube exchange
    # that skips partners beyond the partition reaches every other node;
    # a send beyond it is never delivered and stops the cluster.
    + [strata(f"strata-partition-{n}", "strata_partition", n)
       for n in (5, 12)]
    + [StrataRun(f"strata-partition-stray-{n}", "strata_partition",
                 nodes=n, smp=1, mem="64M", args=["stray"], status=255,
                 timeout=30, summary=rf"node {n - 1} failed with status 255",
                 stdout_expect=[rf"\[node {n - 1}\] StrataFail: "
                                rf"SendLeftPollBoth: node {stray} is not in "
                                rf"the partition of {n}"],
                 absent=EXIT_GONE)
       for n, stray in ((5, 5), (12, 15))]
    # Strata 4.3 misused: CombineVector with different lengths per node
    # ends on every node with StrataFail naming the mismatch: no QEMU
    # crashes (the root over-read its heap), no hang (with 18 or more
    # nodes an inner node's forward was dropped: all waited for ever).
    + [StrataRun(f"strata-mismatch-{n}", "strata_mismatch", nodes=n, smp=1,
                 mem="64M", status=255, timeout=60,
                 summary=r"node \d+ failed with status 255",
                 nodes_expect={0: [MISMATCH], 1: [MISMATCH]},
                 absent=EXIT_GONE + [r"mismatch went unseen",
                                     r"killed by signal", r"timed out"])
       for n in (2, 20)]
    # Strata 1: the radix sort example, sorted and a permutation of its
    # input, with its state graph.
    + [strata(f"strata-radix-{n}", RADIX, n, timeout=90,
              nodes_expect={0: [rf"^radix-sort: {n} nodes x 4096 keys, "
                                r"8-bit digits, 4 passes: sorted in .* "
                                r"match$"]},
              files={"states.svg": [r"scan", r"send", r"wait"],
                     "trace.json": [r'"count"', r'"scan"']})
       for n in (2, 5, 16)]
)

# ---------------------------------------------------------------------------
# Strata and libtempest in one program (issue 12; docs/strata.rst, "Strata
# with libtempest"): after StrataInit, Tempest messages, a channel and
# block access faults, with Strata's messages and block transfers on the
# same rings, phases ended by Barrier and checked by CombineInt; the
# protocol thread interrupt-driven (--smp 1) and on CPU 1 (--smp 2).
# Clean: no library report, no failure, no crash.
# ---------------------------------------------------------------------------
BOTH_CLEAN = [r"\*\*\* tempest", r"\*\*\* strata", r"StrataFail",
              r"\*\*\* CRASH", r"FAIL"]


def both(name, nodes, smp, args=(), **kw):
    return Run(name, "both", nodes=nodes, smp=smp, args=args, mem="64M",
               nodes_expect={"*": [r"^both ok"],
                             0: [r"^messages: checksums", r"^broadcasts: ",
                                 r"^channel: ",
                                 r"^faults: checksum"]},
               summary=rf"{nodes} nodes exited 0", timeout=90,
               absent=BOTH_CLEAN, **kw)


CASES += [
    both("both-4-smp1", 4, 1),
    both("both-4-smp2", 4, 2),
    both("both-16-smp1", 16, 1),
    both("both-16-smp2", 16, 2, args=["2", "100"]),
    # bench strata's program linked with libtempest (strata_bench_shared:
    # nothing of libtempest's sending used, so its client interface must
    # come whole with its constructor; before, libstrata's sends found
    # tempest_client_send NULL and the round trips never ended). Shared,
    # libstrata's Barrier waits in a COLL_WAIT read on shared memory
    # (docs/strata.rst, "Waiting in a register read, shared"): node 0's
    # count above 0 there, 0 on sockets and TCP (the register reads as
    # COLL_STATUS); --smp 1 (this CPU's interrupts open) and --smp 2.
    *[Run(f"both-bench-4-smp{smp}", "bench/strata_bench_shared.elf",
          nodes=4, smp=smp, args=["200"], mem="64M",
          summary=r"4 nodes exited 0",
          nodes_expect={0: [r"^strata_bench: nodes=4 rounds=200 .*"
                            + (r"barrier_waited=[1-9]\d* shared=1 " if SHM
                               else r"barrier_waited=0 shared=1 ")]},
          absent=BOTH_CLEAN) for smp in (1, 2)],
    # Two nodes that spin (each has a host core): libstrata's polls take
    # what libtempest's protocol thread would hand them themselves
    # (tempest_client_poll; docs/strata.rst, "Strata's messages,
    # shared"): with --smp 1 they run the thread's work found in the
    # rings (POLL_PEEKS), with --smp 2 they take Strata's packets at the
    # RQ's head while the dedicated thread is not in a step. On shared
    # memory node 0's polls took some of the 400 replies (polled above
    # 0) where its node spins. With --smp 2 Strata's own waits (its
    # broadcast words, collectives) spin on the program's CPU while the
    # thread sleeps (tempest_client_spin_wait; docs/strata.rst, "Strata's
    # waits, shared, with --smp 2"): on shared memory, where the node
    # spins, some of node 0's ended in that spin (spun above 0; the
    # library before has no such spin), and its protocol thread slept
    # while the program's polls spun for it (yields above 0, docs/
    # tempest.rst "A client's polls spin for the thread"; the library
    # before has no such sleep; 0 with --smp 1, where the polls are the
    # thread's). Where the launcher says no spin, and on sockets and TCP
    # (whose packets may raise the interrupt first), the counts are only
    # printed.
    *[Run(f"both-bench-2-smp{smp}", "bench/strata_bench_shared.elf",
          nodes=2, smp=smp, args=["200"], mem="64M",
          summary=r"2 nodes exited 0",
          nodes_expect={0: [r"^strata_bench: nodes=2 rounds=200 .*shared=1 "
                            + (r"(spin_us=0 polled=\d+ spun=\d+ "
                               r"yields=\d+|"
                               r"spin_us=[1-9]\d* polled=[1-9]\d* "
                               + (r"spun=[1-9]\d* yields=[1-9]\d*"
                                  if smp == 2 else r"spun=0 yields=0")
                               + ")$" if SHM
                               else r"spin_us=\d+ polled=\d+ spun=\d+ "
                                    r"yields=\d+$")]},
          absent=BOTH_CLEAN) for smp in (1, 2)],
    # A Strata call that waits, in a Tempest handler: refused by name.
    Run("both-misuse", "both", nodes=2, smp=1, args=["misuse"], status=255,
        summary=r"node \d+ failed with status 255",
        stdout_expect=[r"StrataFail: node \d: a Strata call that waits, in "
                       r"a handler \(or timer or callback\) of libtempest"],
        absent=[r"\*\*\* CRASH", r"returned"]),
]

# ---------------------------------------------------------------------------
# Bulk transfer (issue 6): Tempest channels (spec 3.4) in libtempest, and
# FLASH-style message passing, memory copy and fetch-and-op (<magic.h>,
# FLASH sections 3 and 3.6) on the node controller's transfer engine.
# A clean run prints no library report and nothing stuck.
# ---------------------------------------------------------------------------
XFER_CLEAN = [r"\*\*\* tempest", r"\*\*\* magic", r"\*\*\* CRASH",
              r"STUCK"]


def xfer(name, program, nodes, smp, args=(), mem="128M", timeout=60,
         absent=None, nodes_expect=None, **kw):
    """A bulk transfer test: exit 0, '<program> ok' on every node."""
    expect = {"*": [rf"^{program} ok"]}
    for key, rxs in (nodes_expect or {}).items():
        expect[key] = expect.get(key, []) + rxs
    return Run(name, program, nodes=nodes, smp=smp, args=args, mem=mem,
               nodes_expect=expect, summary=rf"{nodes} nodes? exited 0",
               timeout=timeout,
               absent=XFER_CLEAN if absent is None else absent, **kw)


CASES += [
    # Tempest 3.4: the channel life cycle on 2 nodes and on 4 (with
    # interrupt-driven protocol threads), sizes 4 bytes to
    # TPPI_MAX_CHANNEL_BYTES (64 MiB) at odd, different alignments; data
    # and the bytes around it checked; callbacks, polls, user pointers.
    xfer("xfer-chan-ring-2", "xfer_chan", 2, 2, args=["ring"], mem="320M",
         nodes_expect={0: [r"^size 4: 2 sends", r"^size 67108864: 2 sends"]}),
    xfer("xfer-chan-ring-4-smp1", "xfer_chan", 4, 1, args=["ring"],
         mem="320M",
         nodes_expect={0: [r"^size 4: 2 sends", r"^size 67108864: 2 sends"]}),
    # Tempest 3.4: 24 channels from every node to every other, all open
    # and sending at once (more than the controller's 64 transfers).
    xfer("xfer-chan-many-4", "xfer_chan", 4, 2, args=["many", "24"],
         nodes_expect={0: [r"^many: 72 channels out of each node"]}),
    # Tempest 3.4.2 and 3.4.1/3.4.3: misuse is refused and reported,
    # never corrupts data; a destination outside the receiver's RAM is
    # refused by its controller.
    xfer("xfer-chanerr", "xfer_chanerr", 2, 2, absent=[r"\*\*\* CRASH"],
         stdout_expect=[
             r"channel 12345 to node 1: send of 1000 bytes .* refused: no "
             r"such channel",
             r"channel 0 to node 1: .* refused: the destination has not "
             r"established the channel",
             r"refused: the destination's buffer is 1000 bytes",
             r"refused: the destination has not reset the channel since "
             r"the previous send",
             r"TPPI_reset_channel: channel 0 from node 0: reset before the "
             r"data arrived: ignored",
             r"already has a destination here: not set",
             r"channel 1 to node 1: node 1 refused the data: the other "
             r"node refused it",
             r"TPPI_destroy_channel_src: no channel 0 to node 1",
             r"TPPI_destroy_channel_dst: no channel 999 from node 0"]),
    # FLASH 3.1-3.4: 16 types, buffers posted in advance and given back,
    # in order per (sender, type); the completion order of 3.4.2;
    # footnote 3: messages with no buffer in system space, then waiting.
    xfer("xfer-msg-2", "xfer_msg", 2, 2, mem="256M",
         nodes_expect={0: [r"^phase A1: 150 messages of 16 types"],
                       1: [r"^phase B: [1-9]\d* messages held back",
                           r"^phase C: 2 messages in \d+ bytes of system "
                           r"space, 1 waiting",
                           r"^phase C: the message waited in system space "
                           r"for its buffer"]}),
    xfer("xfer-msg-4-smp1", "xfer_msg", 4, 1, args=["all", "60"],
         mem="256M"),
    # FLASH written from the paper (Figures 4 and 9, <flash.h>): all-to-all
    # of mixed lengths, a send done before its receiver's bufalloc, 16
    # messages in one 64 KiB bufalloc, fastmemcpy to a global address.
    *[xfer(f"flash-fig4-{n}", "flash_fig4", n, 1, mem="64M",
            nodes_expect={"*": [r"^all-to-all: \d+ messages sent and "
                                r"received", r"^flash_fig4 ok"],
                          0: [r"^early: the send completed before any "
                              r"bufalloc"],
                          1: [r"^many: 16 messages in one 64 KiB buffer"]})
      for n in (2, 4, 16)],
    # FLASH 3.4: a message longer than every posted buffer of its type is
    # refused, reported at both ends, and skipped in the order.
    xfer("xfer-msg-refuse", "xfer_msg", 2, 2, args=["refuse"],
         absent=[r"\*\*\* CRASH", r"\*\*\* tempest"],
         stdout_expect=[r"\*\*\* magic: node 0: message \d+ \(type 700, "
                        r"1048640 bytes\) to node 1 was refused there",
                        r"\*\*\* magic: node 1: a 1048640-byte message of "
                        r"type 700 from node 0 was refused here",
                        r"phase D: the refused message was skipped"]),
    # FLASH 3.5: memory copies between every pair of nodes and to itself.
    xfer("xfer-memcpy-4", "xfer_memcpy", 4, 2, mem="128M", stdout_expect=[
        # Shared memory: copies to a peer go RAM to RAM (XFER_PUT).
        r"node 1: .* [1-9]\d* bytes sent straight into a peer's RAM" if SHM
        else r"node 1: .* 0 bytes sent straight into a peer's RAM"]),
    xfer("xfer-memcpy-1node", "xfer_memcpy", 1, 1),
    # FLASH 3.6: fetch-and-op from every node on one counter (exact),
    # compare-and-swap and swap; with the protocol thread on its own vCPU
    # and interrupt-driven.
    xfer("xfer-fop-4", "xfer_fop", 4, 2, stdout_expect=[
        # Shared memory: every remote fetch-and-op is a host atomic on the
        # home's mapped RAM (FOP_SHARED); sockets: none is.
        r"node 1: .* [1-9]\d* done on a peer's mapped RAM" if SHM else
        r"node 1: .* 0 done on a peer's mapped RAM"]),
    xfer("xfer-fop-3-smp1", "xfer_fop", 3, 1, args=["500"]),
    # FLASH 3.2 and 4.3: every fail case of the initiation protocol, with
    # its reason named; RETRY retried by the library.
    xfer("xfer-fail", "xfer_fail", 2, 2, absent=[r"\*\*\* CRASH", r"STUCK"],
         stdout_expect=[
             r"xfer: node not in the cluster +no such node in the cluster",
             r"xfer: source below RAM +address not inside the node's RAM",
             r"xfer: length 0 +length zero",
             r"xfer: \.\.\. then XFER_SENT from node 1 +the other node "
             r"refused it",
             r"fop: unknown op 7 +no such fetch-and-op",
             r"\*\*\* magic: node 0: magic_send\(type 1, node 2, .*\): no "
             r"such node in the cluster",
             r"retry: 200 transfers of 64 KiB started back to back, all "
             r"sent"]),
    # FLASH 3.3.2 / issue 6: active messages are not held behind a
    # 64 MiB transfer: round trips complete while it is under way.  Their
    # times are printed, not checked ('scripts/tempest bench bulk'
    # measures them).
    xfer("xfer-latency", "xfer_latency", 2, 2, mem="256M",
         nodes_expect={0: [r"^idle: active-message round trip",
                           r"^busy: 64 MiB transfer in .*; [1-9]\d* round "
                           r"trips during it"]}),
]

# ---------------------------------------------------------------------------
# Migratable channels: libchan (<chan.h>, docs/chan.rst), "Hardware
# Migratable Channels" (May, Muller, Sen): on the node controller's
# channel controller, or (TEMPEST_CHAN=soft, the suite guest-chan-soft)
# in software over libtempest's active messages.  A clean run prints no
# library report ("*** chan", "*** tempest"), no failure and no crash.
# ---------------------------------------------------------------------------
CHAN_CLEAN = [r"\*\*\* chan", r"\*\*\* tempest", r"\*\*\* CRASH", r"FAIL"]
# (The refusals chan_data makes on purpose: too long for the buffer, on
# node 1 and, in its turns, once on node 0; a port of the other node.)
CHAN_DATA_CLEAN = [r"\*\*\* chan(?!: node [01]: chan_input\(port [^)]*\): "
                   r"the data is longer than the buffer|: node 0: "
                   r"chan_output(_input)?\(port 1:[^)]*\): not a port of "
                   r"this node)"] + CHAN_CLEAN[1:]
# The path libchan takes: the device's channel controller, or its
# software protocol where the nodes do not offer it (TEMPEST_CHAN=soft).
CHAN_SOFT = os.environ.get("TEMPEST_CHAN") == "soft"
CHAN_PATH = "in software" if CHAN_SOFT else "on the device"

CASES += [
    # Sections 2 and 3.1: input before output and output before input
    # (pre-sent: BUFFERFULL there, OUTPUTTING here until the input), both
    # directions, every length to CHAN_MAX_DATA, input naming where the
    # next data goes (2.1), a channel on one node.
    # On the device also long data (to 1 MiB), whose too-short inputs are
    # refused (CHAN_E_TOOBIG, reported like every refusal) on purpose.
    am("chan-data-smp2", "chan_data", 2, 2, timeout=30,
       absent=CHAN_DATA_CLEAN),
    am("chan-data-smp1", "chan_data", 2, 1, timeout=30,
       absent=CHAN_DATA_CLEAN),
    # Sections 2.2 and 3.1: many messages in order, pre-sent both ways.
    am("chan-stream-2", "chan_stream", 2, 2, args=["2000"], timeout=30,
       absent=CHAN_CLEAN,
       stdout_expect=[r"\[node 1\] 2000 messages each way in \d+ ms"]),
    am("chan-stream-4-smp1", "chan_stream", 4, 1, args=["1000"],
       timeout=30, absent=CHAN_CLEAN),
    # Section 3.2, stages 1-4: a port moved to a third node, its companion
    # then talking to it directly; data BUFFERFULL at the moving port and
    # data sent while it is MIGRATING, both sent again at stage 3; the
    # output end moved while its companion is INPUTTING; 20 more moves.
    am("chan-migrate-3", "chan_migrate", 3, 2, timeout=30,
       absent=CHAN_CLEAN),
    am("chan-migrate-3-smp1", "chan_migrate", 3, 1, timeout=30,
       absent=CHAN_CLEAN),
    # Section 3.2.5, stage 5: both ends of a channel migrating at once, in
    # three orders of input, there and back; wire-ups forwarded.
    am("chan-both-4", "chan_both", 4, 2, args=["12"], timeout=30,
       absent=CHAN_CLEAN,
       stdout_expect=[r"\[node 0\] 24 moves of both ends, \d+ wire-ups "
                      r"forwarded"]),
    am("chan-both-4-smp1", "chan_both", 4, 1, args=["30"], timeout=30,
       absent=CHAN_CLEAN),
    # Section 3.2: a chain of migrations: a port hopping around 4 nodes,
    # data chasing it (BUFFERFULL or in flight at each hop).
    am("chan-chain-4", "chan_chain", 4, 2, args=["10"], timeout=30,
       absent=CHAN_CLEAN,
       stdout_expect=[r"\[node 0\] 40 hops in \d+ ms; \d+ resends"]),
    am("chan-chain-3-smp1", "chan_chain", 3, 1, args=["10"], timeout=30,
       absent=CHAN_CLEAN),
    # Issue 14: a chan_input blocked for 2 s sleeps (a few wake-ups of
    # the waiting CPU and of the protocol thread, counted, not timed); on
    # the device the data comes as its event (no message handled).
    am("chan-sleep-2", "chan_sleep", 2, 2, timeout=30, absent=CHAN_CLEAN,
       stdout_expect=[r"\[node 1\] blocked input: \d+ ms, \d+ waits, \d+ "
                      r"protocol thread sleeps, \d+ messages handled, "
                      + CHAN_PATH]),
    # Section 3's invariants and chan.h: every refusal reported, nothing
    # changed by it; freed companions; an abandoned move.
    am("chan-errors", "chan_errors", 2, 2, timeout=30,
       absent=[r"\*\*\* chan: node \d: protocol", r"\*\*\* tempest",
               r"\*\*\* CRASH", r"FAIL"],
       stdout_expect=[
           r"chan_output\(port 0:0/0\): not a port of this node",
           r"chan_input\(port 1:0/1\): not a port of this node",
           r"chan_state\(port 0:\d+/1\): not a port of this node",
           r"chan_output\(port 0:0/1\): bad argument",
           r"chan_alloc_to\(node 5, key 1\): bad argument",
           r"chan_output_port\(port 0:\d+/1, port 0:\d+/1\): bad argument",
           r"chan_input\(port 0:\d+/1\): the port is busy or in the wrong "
           r"state",
           r"chan_free\(port 0:\d+/1\): the port is busy",
           r"chan_input_next\(port 0:\d+/1\): the port names no buffer",
           r"chan_input\(port 0:\d+/1\): the data is longer than the "
           r"buffer",
           r"chan_alloc: no free port",
           r"chan_input\(port 0:0/1\): called from a handler",
           r"chan_output\(port 0:\d+/\d+\): the port is migrating",
           r"chan_free\(port 0:\d+/\d+\): the port is migrating",
           r"chan_output_port\(port 0:\d+/\d+, port 0:\d+/\d+\): the port "
           r"is migrating",
           r"node 1: chan_free\(port 1:1/1\): the port is busy",
           r"node 1: chan_input\(port 1:1/1\): data and port mixed up",
           r"node 1: chan_input_port\(port 1:1/1\): data and port mixed "
           r"up"]),
]

# docs/fabric.rst, "Mixed clusters": nodes addressed by TCP on two made-up
# hosts (run --fabric auto --hosts 2, nodes in blocks: 0-1 on one host,
# 2-3 on the other) share memory within a host and use TCP across.  In the
# TCP suite only, whose other cases keep every link on TCP (--fabric tcp).
MIXED = ["--fabric", "auto", "--hosts", "2"]
if FABRIC == "tcp":
    CASES += [
        # FLASH 3.6: node 1's fetch-and-ops on node 0's counter and node
        # 2's on node 3's are host atomics on the home's mapped RAM
        # (FOP_SHARED); node 3's, all on nodes 0 and 1, go over TCP.
        xfer("xfer-fop-4-mixed", "xfer_fop", 4, 2, launch=MIXED,
             nodes_expect={
                 1: [r"^node 1: .* [1-9]\d* done on a peer's mapped RAM"],
                 2: [r"^node 2: .* [1-9]\d* done on a peer's mapped RAM"],
                 3: [r"^node 3: .* 0 done on a peer's mapped RAM"]}),
        # FLASH 3.5: copies between every pair, RAM to RAM within a host.
        xfer("xfer-memcpy-4-mixed", "xfer_memcpy", 4, 2, mem="128M",
             launch=MIXED, stdout_expect=[
                 r"node 1: .* [1-9]\d* bytes sent straight into a peer's "
                 r"RAM"]),
        # Every node sending to every other over both kinds of link.
        am("am-storm-all-4-mixed", "am_storm", 4, 2,
           args=["all", "100000"], launch=MIXED),
        # Strata 4 and 6: the control network's tree and two-network
        # active messages over both kinds of link (nodes 0-2 and 3-4).
        strata("strata-control-5-mixed", "strata_control", 5, launch=MIXED),
        # Strata 4.3 on two hosts: nodes 3-4 cannot share node 0's
        # combining area, so every collective stays on the tree
        # (docs/strata.rst, "Combining on shared counters"); on one host
        # over TCP addresses they all combine in the area.
        strata("strata-combine-5-mixed", "strata_combine", 5, launch=MIXED,
               nodes_expect={"*": [r"^strata_combine ok"],
                             1: [r"^node 1: 0 collectives combined in "
                                 r"the shared area"]}),
        strata("strata-combine-5-onehost", "strata_combine", 5,
               launch=["--fabric", "auto"],
               nodes_expect={"*": [r"^strata_combine ok"],
                             4: [r"^node 4: [1-9]\d* collectives combined "
                                 r"in the shared area"]}),
        strata("strata-am-5-mixed", "strata_am", 5, launch=MIXED,
               absent=[r"StrataFail", r"\*\*\* CRASH", r"FAIL"]),
    ]


# ---------------------------------------------------------------------------
# Generic Active Messages (<am.h>, docs/am.rst): GAM 1.1 on the rings and
# the transfer engine.  A clean run prints no library report ("*** am"),
# no failure and no crash.
# ---------------------------------------------------------------------------
GAM_CLEAN = [r"\*\*\* am", r"\*\*\* CRASH", r"FAIL"]


class CreditRun(Run):
    """A Run with packets in flight per peer and network set
    (scripts/tempest run --credits)."""

    def __init__(self, *args, credits=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.credits = credits

    def command(self, run_dir):
        cmd = super().command(run_dir)
        if self.credits:
            i = cmd.index("--run-dir")
            cmd[i:i] = ["--credits", str(self.credits)]
        return cmd


def gam(name, program, nodes, args=(), credits=None, **kw):
    """A GAM test: exit 0, '<program> ok' on every node, clean."""
    return CreditRun(name, program, nodes=nodes, smp=1, args=args,
                     credits=credits,
                     nodes_expect={"*": [rf"^{program} ok"]},
                     summary=rf"{nodes} nodes? exited 0",
                     timeout=kw.pop("timeout", 60),
                     absent=kw.pop("absent", GAM_CLEAN), **kw)


CASES += [
    # docs/am.rst, "Requests and replies": am_request_1..4 and
    # am_reply_1..4, arguments, sources and order checked, one at a time
    # and all in flight; loopback on one node.
    gam("am-gam-pingpong-1node", "gam_pingpong", 1),
    gam("am-gam-pingpong-2", "gam_pingpong", 2),
    # docs/am.rst, "Bulk data": am_store (handler at the destination),
    # am_store_async (end function here) and am_get (handler here), 0
    # bytes to 1 MiB at odd alignments, data, guards and handler
    # arguments checked; 300 stores and 300 gets in flight at once.
    gam("am-gam-bulk-2", "gam_bulk", 2, mem="64M"),
    gam("am-gam-bulk-1node", "gam_bulk", 1, mem="64M"),
    # docs/am.rst, "Deadlock avoidance": a storm of requests all-to-all,
    # then all to node 0 (its reply ring full, requests into the
    # backlog); every request answered once, in order per source.
    gam("am-gam-storm-2", "gam_storm", 2, args=["20000"]),
    gam("am-gam-storm-8", "gam_storm", 8, args=["10000"], timeout=120),
    # The same with 2 packets in flight per peer and network: the reply
    # rings stay full, the backlog takes most messages.
    gam("am-gam-storm-8-credits2", "gam_storm", 8, args=["5000"],
        credits=2, timeout=120),
    # docs/am.rst, "Errors": every misuse returns -1 with its code and a
    # report, and the library goes on working.
    gam("am-gam-errors", "gam_errors", 2, absent=[r"\*\*\* CRASH", r"FAIL"],
        stdout_expect=[
            r"\[node 1\] \*\*\* am: node 1: am_request_1: the library is "
            r"not enabled",
            r"\*\*\* am: node 0: am_request_1: node 2 is not one of the 2 "
            r"nodes",
            r"am_request_1: handler 0x1230 is not in the program's code",
            r"node 0: am_reply_1: not inside a request handler \(in the "
            r"program's code\)",
            r"node 0: am_reply_1: not inside a request handler \(in a reply "
            r"handler\)",
            r"am_store_async: 1073741825 bytes: a block is 0 to 1073741824 "
            r"bytes",
            r"am_store: 64 bytes at 0x1000 are not all in this node's RAM",
            r"node 1: am_reply_1: a reply to node 1 from the handler of a "
            r"request from node 0",
            r"node 1: am_reply_1: this request handler has replied already",
            r"node 1: am_request_1: called from a request handler",
            r"node 1: am_poll: called from a request handler",
            r"node 0: am_store: node 1 refused 64 bytes at 0x1000",
            r"node 0: am_get: node 1 refused 64 bytes at 0x1000: address "
            r"not inside the node's RAM",
            r"node 0: am_store_async: node 1 refused 64 bytes at 0x1000: "
            r"the other node refused it"]),
]

def main(argv):
    """Run the cases as a TAP producer (meson's 'guest' test):
    cases.py [-k SUBSTRING] [--list]."""
    import argparse

    p = argparse.ArgumentParser(prog="cases.py")
    p.add_argument("-k", default=None, help="only cases whose name has it")
    p.add_argument("--list", action="store_true")
    p.add_argument("--runs", default=os.path.join(ROOT, "build",
                                                   "test-runs"))
    a = p.parse_args(argv)
    # The suite runs once per fabric backend (tests/guest/meson.build):
    # the socket run's cases are named guest-socket/...
    suite = "guest" if SHM else "guest-" + FABRIC
    if CHAN_SOFT:
        suite = "guest-chan-soft"
    sel = [c for c in CASES if not a.k or a.k in f"{suite}/{c.name}"]
    if CHAN_SOFT:
        # libchan's cases alone (the chan-hw ones drive the device).
        sel = [c for c in sel
               if getattr(c, "program", "").startswith("chan_") and
               not c.program.startswith("chan_hw")]
    # Each fabric's runs in their own directory: meson runs the three
    # suites side by side.
    runs = os.path.join(a.runs, suite)
    if a.list:
        for c in sel:
            print(f"{suite}/{c.name}")
        return 0
    print(f"1..{len(sel)}", flush=True)
    failed = 0
    for i, c in enumerate(sel, 1):
        t0 = time.monotonic()
        try:
            ok, detail, output = c.run(runs)
        except Exception as e:     # a harness error fails this case only
            ok, detail, output = False, f"harness error: {e!r}", ""
        took = f"{time.monotonic() - t0:.1f} s"
        detail = f"{detail}, {took}" if detail else took
        print(f"{'ok' if ok else 'not ok'} {i} {suite}/{c.name}",
              flush=True)
        print(f"# {detail}", flush=True)
        if not ok:
            failed += 1
            # The detail on stderr: meson shows it with the failure.
            print(f"FAIL {suite}/{c.name} ({detail})", file=sys.stderr)
            for line in output[-6000:].rstrip().splitlines():
                print("    " + line, file=sys.stderr)
            sys.stderr.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
