# SPDX-License-Identifier: GPL-2.0-or-later
"""The slurm suite: clusters launched as Slurm job steps (docs/slurm.rst).

Nothing is mocked.  As root, the suite makes a private Slurm cluster of
Debian's packages on this machine: a bridge with the controller's address
in this network namespace, and two made-up hosts, h1 and h2, each a
network namespace of its own with a veth on the bridge, its own address
and its own slurmd; one munged (the namespaces share the file system) and
a slurm.conf of the suite's own (ports, directories and names that cannot
meet a real Slurm's).  Then srun runs Tempest programs across both hosts,
8 and 32 tasks: a messaging program, Strata's radix sort and the DSM
Jacobi, each node's output checked, and srun's exit status; and QEMU's
trace of every packet received shows that links between the hosts (TCP:
the hosts cannot share memory) and links inside a host (shared memory,
'switched') both carried the program's messages.  One step has a node
that exits 3: srun's status is not 0, Slurm names the task, its peers
report it.  Everything started is stopped and the namespaces deleted,
even when a case fails.

Without root, or without the packages and no way to install them, the
suite says SKIP and why.
"""

import fcntl
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))

from tempestlib import cluster, setup  # noqa: E402
from tempestlib.common import StepError  # noqa: E402

TEMPEST = os.path.join(ROOT, "scripts", "tempest")
NET = "10.77.0"             # 10.77.0.1 the controller, .11 h1, .12 h2
BRIDGE = "tempest-sbr"
HOSTS = {"h1": 11, "h2": 12}
CLEAN = [r"\*\*\* tempest", r"\*\*\* CRASH"]
TRACE_EVENTS = ["tempest_fabric_rx", "tempest_fabric_shm", "tempest_fabric_connect", "tempest_fabric_accept", "tempest_fabric_peer_up", "tempest_fabric_close", "tempest_fabric_drop", "tempest_fabric_want", "tempest_fabric_dial", "tempest_fabric_local_failed", "tempest_fabric_dial_start", "tempest_fabric_dial_failed"]
STEP_TIMEOUT = 90           # node --timeout: a hung node ends by itself
SRUN_LIMIT = 150            # seconds an srun may take before it is failed
LOCK = "/run/lock/tempest-slurm-suite.lock"


def _run(cmd, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, **kw)
    if check and r.returncode != 0:
        raise StepError(f"{' '.join(cmd)}: exit {r.returncode}: "
                        f"{(r.stdout + r.stderr).strip()[:500]}")
    return r


def netns(host):
    return f"tempest-{host}"


class SlurmCluster:
    """A private Slurm cluster of two hosts in network namespaces."""

    def __init__(self):
        self.dir = None
        self.procs = []
        self.env = None
        self.lock = None

    def conf(self, ctld_port):
        d = self.dir
        short = socket.gethostname().split(".")[0]
        nodes = "".join(f"NodeName={h} NodeAddr={NET}.{a} CPUs=16 "
                        "State=UNKNOWN\n" for h, a in HOSTS.items())
        return f"""# The slurm suite's private cluster (tests/slurm/cases.py)
ClusterName=tempesttest
SlurmctldHost={short}({NET}.1)
SlurmctldPort={ctld_port}
SlurmdPort={ctld_port + 1}
AuthType=auth/munge
AuthInfo=socket={d}/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/spool/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
InactiveLimit=0
MailProg=/bin/true
{nodes}PartitionName=tempest Nodes={','.join(HOSTS)} Default=YES MaxTime=10 \
State=UP OverSubscribe=FORCE
"""

    def start(self):
        # One such cluster on a machine at a time (the names, addresses and
        # namespaces are fixed): a second waits here.  The lock goes when
        # its holder ends, however it ends.
        self.lock = open(LOCK, "w")
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("slurm: another private Slurm cluster of this suite is "
                  "up; waiting", flush=True)
            fcntl.flock(self.lock, fcntl.LOCK_EX)
        self.teardown_net()         # what a killed run may have left
        self.dir = tempfile.mkdtemp(prefix="tempest-slurm-")
        for sub in ("munge", "state", "log", "spool"):
            os.makedirs(os.path.join(self.dir, sub), mode=0o700)
        for h in HOSTS:
            os.makedirs(os.path.join(self.dir, "spool", h), mode=0o700)
        # The network: a bridge here, a namespace and a veth per host.
        _run(["ip", "link", "add", BRIDGE, "type", "bridge"])
        _run(["ip", "addr", "add", f"{NET}.1/24", "dev", BRIDGE])
        _run(["ip", "link", "set", BRIDGE, "up"])
        for h, a in HOSTS.items():
            ns, veth = netns(h), f"tempest-v{h}"
            _run(["ip", "netns", "add", ns])
            _run(["ip", "link", "add", veth, "type", "veth", "peer", "name",
                  "eth0", "netns", ns])
            _run(["ip", "link", "set", veth, "master", BRIDGE, "up"])
            _run(["ip", "-n", ns, "addr", "add", f"{NET}.{a}/24", "dev",
                  "eth0"])
            _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        # munge: one daemon, one key, a socket of our own.
        key = os.path.join(self.dir, "munge", "key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        os.write(fd, os.urandom(1024))
        os.close(fd)
        m = os.path.join(self.dir, "munge")
        self.spawn(["munged", "-F", "-f", f"--socket={m}/sock",
                    f"--key-file={key}", f"--log-file={m}/log",
                    f"--pid-file={m}/pid", f"--seed-file={m}/seed"], "munged")
        self.wait_for(lambda: os.path.exists(f"{m}/sock"), "munged's socket")
        ctld_port = cluster.free_port_base(2)
        conf = os.path.join(self.dir, "slurm.conf")
        with open(conf, "w") as f:
            f.write(self.conf(ctld_port))
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("SLURM")}
        self.env["SLURM_CONF"] = conf
        self.spawn(["slurmctld", "-D", "-i"], "slurmctld")
        for h in HOSTS:
            # nsenter, not 'ip netns exec': that one remounts /sys, and
            # slurmd needs the cgroup file systems under it to start.
            self.spawn(["nsenter", f"--net=/run/netns/{netns(h)}", "slurmd",
                        "-D", "-N", h], f"slurmd-{h}")
        self.wait_for(self.idle, "both slurmds to register", 90)

    def spawn(self, cmd, name):
        log = open(os.path.join(self.dir, "log", name + ".out"), "w")
        p = subprocess.Popen(cmd, env=self.env, stdout=log,
                             stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        log.close()
        p.name = name
        self.procs.append(p)

    def wait_for(self, ready, what, limit=30):
        t0 = time.monotonic()
        while not ready():
            dead = [p.name for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() - t0 > limit:
                raise StepError(f"slurm: waiting for {what}: " +
                                (f"{', '.join(dead)} ended" if dead else
                                 f"not after {limit} s") + "\n" + self.logs())
            time.sleep(0.3)

    def idle(self):
        r = _run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False,
                 env=self.env)
        states = dict(line.split() for line in r.stdout.splitlines()
                      if len(line.split()) == 2)
        return all(states.get(h) == "idle" for h in HOSTS)

    def settle(self, limit=30):
        """After a failed step: cancel what still runs; are both hosts
        idle again within limit seconds?"""
        _run(["scancel", "--partition=tempest"], check=False, env=self.env)
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            if self.idle():
                return True
            time.sleep(0.5)
        return False

    def logs(self):
        out = []
        for path in sorted(os.listdir(os.path.join(self.dir, "log"))):
            with open(os.path.join(self.dir, "log", path),
                      errors="replace") as f:
                out.append(f"--- {path}\n" + "".join(f.readlines()[-15:]))
        return "\n".join(out)

    def srun(self, args, cwd, env=None):
        """srun args (or any command: args[0] is not srun's option), with
        this cluster's configuration; (status, output)."""
        cmd = args if not args[0].startswith("-") else ["srun"] + args
        try:
            r = subprocess.run(cmd, cwd=cwd, env=dict(self.env, **(env or {})),
                               capture_output=True, text=True,
                               errors="replace", timeout=SRUN_LIMIT,
                               stdin=subprocess.DEVNULL)
            return r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"") + (e.stderr or b"")
            return "timeout", out.decode(errors="replace") \
                if isinstance(out, bytes) else out

    def stop(self):
        if self.env:
            _run(["scancel", "--full", "--partition=tempest"], check=False,
                 env=self.env)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 15:
                r = _run(["squeue", "-h"], check=False, env=self.env)
                if r.returncode != 0 or not r.stdout.strip():
                    break
                time.sleep(0.5)
        cluster.stop_processes([p for p in self.procs if p.poll() is None])
        if self.lock:
            self.teardown_net()
            self.lock.close()
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def teardown_net(self):
        """Delete our namespaces (killing whatever still runs in them: the
        jobs' steps) and bridge; quiet when they are not there."""
        for h in HOSTS:
            ns = netns(h)
            if not os.path.exists(f"/run/netns/{ns}"):
                continue
            r = _run(["ip", "netns", "pids", ns], check=False)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), 9)
                except (ValueError, OSError):
                    pass
            _run(["ip", "netns", "del", ns], check=False)
        for h in HOSTS:
            # Gone with its peer in the namespace on Linux, not always here.
            _run(["ip", "link", "del", f"tempest-v{h}"], check=False)
        _run(["ip", "link", "del", BRIDGE], check=False)


def _guest_cases():
    """tests/guest/cases.py, whose Run checks a run's outcome."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "guest_cases_slurm", os.path.join(ROOT, "tests", "guest", "cases.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GUEST = _guest_cases()


class Step(GUEST.Run):
    """One srun step of the suite: the guest suite's Run (node logs,
    output, status, files), launched by srun (or run --slurm) instead of
    run, and with the traffic between and inside the hosts checked."""

    def __init__(self, name, program, tasks, node_opts=(), traffic=True,
                 via_run=False, linux=False, **kw):
        super().__init__(name, program, nodes=tasks, **kw)
        # Linux nodes: the program as built for them (build/guest-linux).
        self.linux = linux
        self.node_opts = list(node_opts) + (["--linux"] if linux else [])
        self.traffic = traffic
        self.via_run = via_run          # run --slurm instead of srun

    def run(self, sc, runs):
        run_dir = os.path.join(runs, self.name)
        shutil.rmtree(run_dir, ignore_errors=True)
        trace = os.path.join(run_dir, "trace")
        os.makedirs(trace)
        events = os.path.join(run_dir, "trace-events")
        with open(events, "w") as f:
            f.write("\n".join(TRACE_EVENTS) + "\n")
        qemu = ["--qemu-arg=-msg", "--qemu-arg=timestamp=on",
                "--qemu-arg=-trace",
                f"--qemu-arg=events={events},file={trace}/qemu-%d.log"]
        per_host = self.nodes // len(HOSTS)
        prog = GUEST.prog(self.program)
        if self.linux:
            prog = os.path.join(ROOT, "build", "guest-linux",
                                os.path.relpath(prog, GUEST.GUEST))
            if not os.path.exists(prog):
                prog = self.program     # a command of the node's own
        if self.via_run:
            cmd = [sys.executable, TEMPEST, "run", "--slurm", "-n",
                   str(self.nodes), "--ntasks-per-node", str(per_host),
                   "--run-dir", run_dir, "--srun-arg=--time=3",
                   "--timeout", str(STEP_TIMEOUT)] + self.node_opts + qemu + [prog] + self.args
        else:
            cmd = ["srun", "-l", f"--ntasks={self.nodes}",
                   f"--ntasks-per-node={per_host}", "--time=3", TEMPEST,
                   "node", "--timeout", str(STEP_TIMEOUT)] + self.node_opts + qemu + [prog] + self.args
        t0 = time.monotonic()
        rc, out = sc.srun(cmd, ROOT, {"TEMPEST_RUN_DIR": run_dir})
        took = time.monotonic() - t0
        ok, detail, _ = self.check(rc, out, run_dir)
        problems = [detail] if not ok else []
        if self.traffic:
            problems += traffic_problems(run_dir, self.nodes)
        return not problems, "; ".join(problems[:3]) or f"{took:.1f} s", \
            " ".join(cmd) + "\n" + out


def traffic_problems(run_dir, tasks):
    """From the nodes' QEMU traces: DATA packets received over links
    between the two hosts (sockets: TCP) and over links inside a host
    that switched to shared memory; no link across hosts in shared
    memory.  The hosts are the ones each node's QEMU was given."""
    hosts = {}
    for i in range(tasks):
        try:
            with open(os.path.join(run_dir, f"node{i}.cmd")) as f:
                m = re.search(r"fabric-host-id=([^,\s]+)", f.read())
        except OSError:
            m = None
        if not m:
            return [f"node{i}.cmd names no fabric-host-id"]
        hosts[i] = m.group(1)
    if len(set(hosts.values())) != len(HOSTS):
        return [f"the nodes were on hosts {sorted(set(hosts.values()))}"]
    rx, switched = {}, set()
    trace = os.path.join(run_dir, "trace")
    for name in os.listdir(trace):
        with open(os.path.join(trace, name), errors="replace") as f:
            for line in f:
                m = re.search(r"tempest_fabric_rx node (\d+) from (\d+) ",
                              line)
                if m:
                    k = (int(m.group(1)), int(m.group(2)))
                    rx[k] = rx.get(k, 0) + 1
                    continue
                m = re.search(r"tempest_fabric_shm node (\d+) peer (\d+) "
                              r"shared memory: switched", line)
                if m:
                    switched.add((int(m.group(1)), int(m.group(2))))
    across = sum(n for (a, b), n in rx.items() if hosts[a] != hosts[b])
    inside = sum(n for (a, b), n in rx.items()
                 if (a, b) in switched or (b, a) in switched)
    wrong = [p for p in switched if hosts[p[0]] != hosts[p[1]]]
    problems = []
    if across < 10:
        problems.append(f"{across} packets between the hosts (TCP)")
    if inside < 10:
        problems.append(f"{inside} packets on shared-memory links")
    if wrong:
        problems.append(f"shared memory across hosts: {sorted(wrong)[:5]}")
    return problems


def label(rank):
    """srun -l's label of a task's lines."""
    return rf"^\s*0*{rank}: "


RADIX_OK = r"^radix-sort: {n} nodes x 4096 keys, 8-bit digits, 4 passes: " \
    r"sorted in .* match$"
STEPS = []
for n in (8, 32):
    STEPS += [
        Step(f"am-ring-{n}", "am_ring", n, args=["100" if n == 8 else "20"],
             nodes_expect={"*": [r"^am_ring ok"]},
             stdout_expect=[label(n - 1) + "am_ring ok"], absent=CLEAN,
             # The rendezvous sealed in the suite's munge credentials.
             files={"rendezvous.txt": [rf"^{n} tasks met task 0 .*; "
                                       r"authenticated by munge"]}),
        Step(f"radix-{n}", "examples/radix-sort/radix.elf", n,
             node_opts=["--mem", "64M"],
             nodes_expect={0: [RADIX_OK.format(n=n)]},
             stdout_expect=[label(0) + "radix-sort: "], absent=CLEAN,
             via_run=n == 8,
             files={"states.svg": [r"<svg"], "trace.json": [r'"scan"']}
             if n == 8 else None),
        Step(f"dsm-jacobi-{n}", "examples/dsm/jacobi.elf", n, args=["dsm"],
             nodes_expect={0: [rf"^jacobi dsm ok: 126x126, 40 sweeps on "
                               rf"{n} nodes"]}, absent=CLEAN),
    ]
STEPS.append(
    # Linux nodes as Slurm tasks: the token ring as Linux processes through
    # /dev/tempest0, 4 a host (a node's boot costs ~2.5 s of a core).
    Step("linux-am-ring-8", "am_ring", 8, args=["100"], linux=True,
         nodes_expect={"*": [r"am_ring ok"]},
         stdout_expect=[label(7) + ".*am_ring ok"], absent=CLEAN))
STEPS.append(
    # A Linux task whose kernel panics ends (QEMU never does by itself):
    # status 134, as with run --linux.
    Step("linux-panic-2", "sh", 2, args=["-c", "echo c > /proc/sysrq-trigger"],
         linux=True, status=134, traffic=False,
         nodes_expect={"*": [r"Kernel panic - not syncing"]},
         stdout_expect=[r"srun: error: h\d: tasks? .*Exited with exit code 134",
                        r"node \d: the kernel panicked"]))
STEPS.append(
    # A node that exits 3 (Strata's StrataExit(3) on node 1): srun's status
    # says so, Slurm names the task, the peers report it and finish.
    Step("exit-3-8", "strata_exit", 8, args=["code"],
         node_opts=["--mem", "64M"], status=3, traffic=False,
         absent=[r"\*\*\* CRASH"],
         stdout_expect=[r"srun: error: h1: task 1: Exited with exit code 3",
                        r"node \d+ is gone \(exit status 3\)"]))


class CkptStep:
    """A checkpoint of a step and its restore on other hosts: a radix sort
    of 8 tasks, 4 a host (block: nodes 0-3 on h1), checkpointed mid-run
    by Slurm's own signal (scancel --signal=USR1, what --signal=USR1@T
    sends before a time limit): task 0 drains and saves every node
    through the step's control connections, the step ends with status 0;
    then run --slurm --restore with the cyclic distribution (nodes 1, 3
    on h2 and 4, 6 on h1 now): the sort finishes with the checksums of an
    uninterrupted run (docs/checkpoint.rst, "Slurm steps").  Before the
    signal, 'scripts/tempest checkpoint RUN' saved the step and let it go
    on; that checkpoint, restored, gives the same checksums too."""

    name = "ckpt-radix-8"
    ARGS = ["524287", "1"]
    DELAY = 1.5     # seconds after every task's QEMU started

    def run(self, sc, runs):
        try:
            return self._run(sc, runs)
        except StepError as e:
            return False, str(e).splitlines()[0][:200], str(e)

    def _run(self, sc, runs):
        radix = GUEST.prog("examples/radix-sort/radix.elf")
        ref = os.path.join(runs, self.name + "-ref")
        r = _run([sys.executable, TEMPEST, "run", "-n", "8", "--mem", "64M",
                  "--quiet", "--run-dir", ref, radix] + self.ARGS,
                 check=False)
        sums = re.search(r"checksums (.*) match", _logs(ref, 1))
        if r.returncode or not sums:
            raise StepError("the uninterrupted run failed\n" + r.stdout +
                            r.stderr + _logs(ref, 8))
        first, again, base = _ckpt_step(runs, self.name, 4)
        p = subprocess.Popen(base + ["-n", "8", "--run-dir", first, "--mem",
                                     "64M", radix] + self.ARGS,
                             env=sc.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             stdin=subprocess.DEVNULL)
        try:
            t0 = time.monotonic()
            while not all(os.path.exists(os.path.join(first, f"node{i}.cmd"))
                          for i in range(8)):
                if p.poll() is not None or time.monotonic() - t0 > 60:
                    raise StepError("the step's nodes did not start\n" +
                                    p.communicate()[0] + _logs(first, 8))
                time.sleep(0.1)
            time.sleep(self.DELAY)
            # 'scripts/tempest checkpoint RUN': task 0 saves, the nodes go
            # on; then Slurm's signal alone: saved into RUN/ckpt-usr1 and
            # stopped.
            went_on = os.path.join(runs, self.name + "-goes-on")
            shutil.rmtree(went_on, ignore_errors=True)
            c = _run([sys.executable, TEMPEST, "checkpoint", first, "-o",
                      went_on], check=False, env=sc.env, timeout=120)
            if c.returncode != 0 or "the nodes go on" not in c.stderr:
                raise StepError("checkpoint RUN of the step failed\n" +
                                c.stdout + c.stderr + _logs(first, 8))
            out = _usr1_and_wait(sc, p)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        ckpt_dir = os.path.join(first, "ckpt-usr1")
        if p.returncode != 0 or "checkpointed to" not in out:
            raise StepError(f"the checkpointed step ended {p.returncode}, "
                            "not saved\n" + out + _logs(first, 8))
        if re.search(r"radix-sort: .* sorted", _logs(first, 1)):
            raise StepError(f"the sort had finished before its checkpoint "
                            f"({self.DELAY} s): not mid-run\n" +
                            _logs(first, 1))
        r = _run(base + ["--restore", ckpt_dir, "--run-dir", again,
                         "--srun-arg=--distribution=cyclic"], check=False,
                 env=sc.env)
        got = re.search(r"radix-sort: .* (sorted) .* checksums (.*) match",
                        _logs(again, 1))
        if r.returncode != 0 or not got or got.group(2) != sums.group(1):
            raise StepError(f"restored: status {r.returncode}, checksums "
                            f"{got and got.group(2)}, uninterrupted "
                            f"{sums.group(1)}\n" + r.stdout + r.stderr +
                            _logs(again, 8))
        if not re.search(r"node 0: 8 nodes restored from .*ckpt-usr1",
                         r.stdout + r.stderr):
            raise StepError("task 0 did not say it restored the nodes\n" +
                            r.stdout + r.stderr)
        moved = [i for i in range(8) if _host(first, i) != _host(again, i)]
        if moved != [1, 3, 4, 6]:
            raise StepError(f"nodes {moved} changed hosts, not 1, 3, 4, 6")
        # The checkpoint the nodes went on from, restored as it was taken.
        third = os.path.join(runs, self.name + "-restored-2")
        shutil.rmtree(third, ignore_errors=True)
        r2 = _run(base + ["--restore", went_on, "--run-dir", third],
                  check=False, env=sc.env)
        got = re.search(r"radix-sort: .* (sorted) .* checksums (.*) match",
                        _logs(third, 1))
        if r2.returncode != 0 or not got or got.group(2) != sums.group(1):
            raise StepError(f"restored from checkpoint RUN: status "
                            f"{r2.returncode}, checksums "
                            f"{got and got.group(2)}, uninterrupted "
                            f"{sums.group(1)}\n" + r2.stdout + r2.stderr +
                            _logs(third, 8))
        saved = re.search(r"checkpoint: 8 nodes saved .* in ([\d.]+) s", out)
        return True, f"saved in {saved and saved.group(1)} s; restored on " \
            f"other hosts: sorted, same checksums", out + r.stdout + r.stderr


def _usr1_and_wait(sc, p):
    """Slurm's own signal to the one job's step (what --signal=USR1@T
    sends before a time limit); then the output of p, its run --slurm."""
    job = _run(["squeue", "-h", "-o", "%i"], env=sc.env).stdout.split()
    if len(job) != 1:
        raise StepError(f"squeue shows jobs {job}")
    _run(["scancel", "--signal=USR1", job[0]], env=sc.env)
    return p.communicate(timeout=SRUN_LIMIT)[0]


def _ckpt_step(runs, name, per_host):
    """The run directories of a checkpointed step and of its restore
    (emptied), and the run --slurm command both start with."""
    first = os.path.join(runs, name)
    again = os.path.join(runs, name + "-restored")
    for d in (first, again):
        shutil.rmtree(d, ignore_errors=True)
    return first, again, [sys.executable, TEMPEST, "run", "--slurm",
                          "--ntasks-per-node", str(per_host),
                          "--srun-arg=--time=3", "--timeout",
                          str(STEP_TIMEOUT), "--quiet"]


def _logs(run_dir, nodes):
    text = []
    for i in range(nodes):
        try:
            with open(os.path.join(run_dir, f"node{i}.log"),
                      errors="replace") as f:
                text.append(f"--- node{i}.log\n" + f.read()[-2000:])
        except OSError:
            pass
    # A run that timed out: what each node's threads were doing.
    try:
        with open(os.path.join(run_dir, "hang.txt"), errors="replace") as f:
            text.append("--- hang.txt\n" + f.read()[:6000])
    except OSError:
        pass
    return "\n".join(text)


def _host(run_dir, i):
    with open(os.path.join(run_dir, f"node{i}.cmd")) as f:
        m = re.search(r"fabric-host-id=([^,\s]+)", f.read())
    return m and m.group(1)


class SshStep:
    """A shell and a forwarded port on a Linux task's node (docs/slurm.rst,
    "Linux nodes"): 2 Linux tasks, one a host, serving HTTP on port 7000
    (node --forward 7000); 'scripts/tempest ssh 1' run on task 1's host
    (its network namespace: the ports are on that host's 127.0.0.1) runs
    a command on node 1 and returns its status, node 1's page comes from
    its forwarded port there; from the other host the port is not
    there."""

    name = "linux-ssh-2"

    def run(self, sc, runs):
        run_dir = os.path.join(runs, self.name)
        shutil.rmtree(run_dir, ignore_errors=True)
        os.makedirs(run_dir)
        serve = ("mkdir -p /tmp/w && echo node$TEMPEST_NODE serves > "
                 "/tmp/w/index.html && httpd -p 7000 -h /tmp/w && sleep 100")
        p = subprocess.Popen(
            ["srun", "-l", "--ntasks=2", "--ntasks-per-node=1", "--time=3",
             TEMPEST, "node", "--linux", "--forward", "7000", "--timeout",
             str(STEP_TIMEOUT), "sh", "-c", serve], cwd=ROOT,
            env=dict(sc.env, TEMPEST_RUN_DIR=run_dir),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            stdin=subprocess.DEVNULL)
        out = ""
        try:
            t0 = time.monotonic()
            while "tempest-init: running" not in _logs(run_dir, 2) or \
                    _logs(run_dir, 2).count("tempest-init: running") < 2:
                if p.poll() is not None or time.monotonic() - t0 > 90:
                    return False, "the Linux tasks did not boot", \
                        _logs(run_dir, 2)
                time.sleep(0.5)
            host = _host(run_dir, 1)
            ssh = [sys.executable, TEMPEST, "ssh", "--run-dir", run_dir, "1",
                   "hostname; exit 5"]
            here = _run(["nsenter", f"--net=/run/netns/{netns(host)}"] + ssh,
                        check=False, timeout=60)
            other = [h for h in HOSTS if h != host][0]
            ports = dict(re.findall(r"tcp (\d+) 127\.0\.0\.1:(\d+)",
                                    GUEST._read(os.path.join(run_dir,
                                                            "node1.ports"))))
            port = ports.get("23")
            # --forward 7000: node 1's web server, from its host.
            page = _run(["nsenter", f"--net=/run/netns/{netns(host)}",
                         sys.executable, "-c",
                         "import urllib.request, time\n"
                         "for i in range(60):\n"
                         "    try:\n"
                         "        print(urllib.request.urlopen('http://"
                         f"127.0.0.1:{ports.get('7000')}/', timeout=5)"
                         ".read().decode(), end=''); break\n"
                         "    except OSError: time.sleep(0.5)\n"],
                        check=False, timeout=90)
            there = _run(["nsenter", f"--net=/run/netns/{netns(other)}",
                          sys.executable, "-c", "import socket; socket."
                          f"create_connection(('127.0.0.1', {port}), 5)"],
                         check=False, timeout=60)
        finally:
            _run(["scancel", "--partition=tempest"], check=False,
                 env=sc.env)
            try:
                out = p.communicate(timeout=60)[0]
            except subprocess.TimeoutExpired:
                p.kill()
                out = p.communicate()[0]
        ok = here.returncode == 5 and re.search(r"^node1$", here.stdout,
                                                 re.M) and \
            there.returncode != 0 and page.stdout == "node1 serves\n"
        detail = (f"ssh on {host}: status {here.returncode}; from {other}: "
                  f"status {there.returncode}; port 7000: "
                  f"{page.stdout.strip()!r}")
        return bool(ok), detail, "\n".join(
            [here.stdout + here.stderr, there.stdout + there.stderr,
             page.stdout + page.stderr, out])


class LinuxCkptStep(CkptStep):
    """Linux tasks checkpointed and restored as a step (docs/
    checkpoint.rst, "Linux nodes"): the DSM Jacobi as Linux processes, 2
    tasks on the two hosts, run --slurm --linux --no-share, saved by
    scancel --signal=USR1 mid-run, restored by run --slurm --restore:
    bit for bit the sequential result."""

    name = "linux-ckpt-2"

    def _run(self, sc, runs):
        jacobi = os.path.join(ROOT, "build", "guest-linux", "guest",
                              "examples", "dsm", "jacobi.elf")
        first, again, base = _ckpt_step(runs, self.name, 1)
        p = subprocess.Popen(base + ["-n", "2", "--run-dir", first,
                                     "--linux", "--no-share", jacobi, "dsm",
                                     "126", "6000"],
                             env=sc.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             stdin=subprocess.DEVNULL)
        try:
            t0 = time.monotonic()
            while _logs(first, 2).count("tempest-init: running") < 2:
                if p.poll() is not None or time.monotonic() - t0 > 90:
                    return False, "the Linux tasks did not boot", \
                        p.communicate()[0] + _logs(first, 2)
                time.sleep(0.3)
            time.sleep(1.5)
            out = _usr1_and_wait(sc, p)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        if p.returncode != 0 or "checkpointed to" not in out:
            return False, f"the step ended {p.returncode}, not saved", \
                out + _logs(first, 2)
        if "jacobi dsm ok" in _logs(first, 1):
            return False, "the program had finished: not mid-run", \
                _logs(first, 1)
        r = _run(base + ["--restore", os.path.join(first, "ckpt-usr1"),
                         "--run-dir", again], check=False, env=sc.env)
        ok = r.returncode == 0 and re.search(
            r"jacobi dsm ok: 126x126, 6000 sweeps on 2 nodes",
            _logs(again, 1))
        return bool(ok), f"restored: status {r.returncode}" + \
            (", the sequential result" if ok else ""), \
            out + r.stdout + r.stderr + _logs(again, 2)


STEPS.append(CkptStep())
STEPS.append(SshStep())
STEPS.append(LinuxCkptStep())


def run(results, runs, k=None):
    steps = [s for s in STEPS if not k or k in f"slurm/{s.name}"]
    if not steps:
        return
    if os.geteuid() != 0:
        print("SKIP slurm (needs root: it starts slurmctld, slurmd and "
              "munged and makes network namespaces)", flush=True)
        return
    try:
        setup.setup_slurm()
    except StepError as e:
        print(f"SKIP slurm (the Slurm packages are missing and could not "
              f"be installed: {e})", flush=True)
        return
    os.makedirs(runs, exist_ok=True)
    sc = SlurmCluster()
    try:
        try:
            sc.start()
        except StepError as e:
            results.record("slurm/cluster", False, "the private Slurm "
                           "cluster did not start", str(e))
            return
        for s in steps:
            ok, detail, out = s.run(sc, runs)
            results.record(f"slurm/{s.name}", ok, detail, out)
            if not ok and not sc.settle():
                results.record("slurm/cluster", False, "a host is down",
                               sc.logs())
                return
    finally:
        sc.stop()


if __name__ == "__main__":
    # python3 tests/slurm/cases.py CMD...: CMD run with the private
    # cluster up (SLURM_CONF set), for debugging; the cluster goes after.
    sc = SlurmCluster()
    try:
        sc.start()
        sys.exit(subprocess.run(sys.argv[1:] or ["sinfo"],
                                env=sc.env).returncode)
    finally:
        sc.stop()
