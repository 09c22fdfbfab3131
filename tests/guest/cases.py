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
                 timeout=60, mem=None, absent=()):
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
        os.killpg(p.pid, signal.SIGINT)
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
