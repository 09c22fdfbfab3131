# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/tempest node, run --slurm: a cluster launched as a Slurm job step.

  srun -l -n 64 [--ntasks-per-node K] scripts/tempest node prog.elf args

Every task of the step is one node: node id from the task's rank
(SLURM_PROCID), node count from the step (SLURM_STEP_NUM_TASKS).  The tasks
meet through a rendezvous of their own, with task 0: each task binds a
free TCP port on the address it reaches task 0 from and registers it; when
every task has, task 0 answers each with the table of every node's address
and port and the cluster's identity and key, which it made up.  Then each
task starts its QEMU with those addresses (fabric=tcp:A0:P0;A1:P1;...), the
Slurm node's name as its host identity and a directory of this host and
step for the Unix sockets: the nodes of one host share memory, the links
between hosts are TCP (docs/fabric.rst, "Mixed clusters").

The node's console goes to standard output (srun -l labels it with the
rank) and to nodeK.log in the run directory; the task's exit status is the
node's, by run's rules.  docs/slurm.rst says how to use it.

The rendezvous trusts nothing it reads: every message is bounded in size
and time, and checked field by field.  Where Slurm's munge is there (the
munge and unmunge commands, the socket of Slurm's AuthInfo), every
registration is a munge credential of the task's user and task 0's answer
is one credential per task that only that user can decode: a process of
another user can neither claim a rank nor learn the cluster's key
(docs/slurm.rst, "Trust").
"""

import argparse
import hashlib
import hmac
import ipaddress
import json
import os
import re
import resource
import secrets
import select
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from . import ckpt, cluster
from . import linux as lx
from .common import QEMU_BIN, StepError, rel, say
from .stategraph import split_record

RDV_CANDIDATES = 8          # ports task 0 may listen on, in order
RDV_HELLO_MAX = 2048        # bytes of a task's registration
RDV_TABLE_MAX = 2 << 20     # bytes of task 0's answer (munged: base64)
RDV_TIMEOUT = 120.0         # seconds for the whole rendezvous
RDV_PROTO = "tempest-rdv-1"
CTL_LINE_MAX = 1 << 20      # bytes of one control message
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RUN_DIR_ENV = "TEMPEST_RUN_DIR"


class Step:
    """What a task knows of its step, from Slurm's environment."""

    def __init__(self, env):
        def num(*names, lo=0):
            for n in names:
                v = env.get(n)
                if v is not None:
                    if not re.fullmatch(r"\d{1,9}", v) or int(v) < lo:
                        raise StepError(f"node: ${n}='{v}' is not a number "
                                        f"of at least {lo}")
                    return int(v)
            raise StepError("node: not in a Slurm job step (no $" +
                            " or $".join(names) + "); run it under srun")

        self.ntasks = num("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS",
                          "SLURM_NPROCS", lo=1)
        self.rank = num("SLURM_PROCID")
        self.localid = num("SLURM_LOCALID")
        self.nodeid = num("SLURM_NODEID")
        self.job = num("SLURM_JOB_ID", "SLURM_JOBID")
        self.step = num("SLURM_STEP_ID", "SLURM_STEPID")
        if self.rank >= self.ntasks:
            raise StepError(f"node: task {self.rank} of a step of "
                            f"{self.ntasks} tasks")
        self.host = env.get("SLURMD_NODENAME", "")
        if not NAME.match(self.host):
            raise StepError(f"node: $SLURMD_NODENAME='{self.host}' is not "
                            "a Slurm node name")
        self.nodelist = env.get("SLURM_STEP_NODELIST") or \
            env.get("SLURM_JOB_NODELIST") or ""
        self.tasks_per_node = env.get("SLURM_STEP_TASKS_PER_NODE") or \
            env.get("SLURM_TASKS_PER_NODE") or ""
        self.resv_ports = env.get("SLURM_STEP_RESV_PORTS", "")

    def tasks_here(self):
        """Tasks of the step on this task's Slurm node ("3,1",
        "16(x2)" ...); the step's size if Slurm does not say."""
        counts = []
        for part in self.tasks_per_node.split(","):
            m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
            if not m:
                return self.ntasks
            counts += [int(m.group(1))] * int(m.group(2) or 1)
        return counts[self.nodeid] if self.nodeid < len(counts) \
            else self.ntasks


def _scontrol(*args):
    try:
        r = subprocess.run(["scontrol"] + list(args), capture_output=True,
                           text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise StepError(f"node: scontrol {' '.join(args)}: {e}")
    if r.returncode != 0:
        raise StepError(f"node: scontrol {' '.join(args)} failed: "
                        f"{r.stderr.strip()[:300]}")
    return r.stdout


class Munge:
    """Credentials of munge (Slurm's authentication) through its commands:
    what a task of this user says, and what only this user can read."""

    def __init__(self, sock=None):
        self.sock = sock        # munged's socket, or None for its default

    def _run(self, prog, data, *opts):
        cmd = [prog] + (["-S", self.sock] if self.sock else []) + list(opts)
        try:
            return subprocess.run(cmd, input=data, capture_output=True,
                                  timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise StepError(f"node: rendezvous: {prog}: {e}")

    def encode(self, payload, uid=None):
        """A credential (bytes) of payload, decodable only by uid if
        given."""
        r = self._run("munge", payload,
                      *(["-u", str(uid)] if uid is not None else []))
        if r.returncode != 0:
            raise StepError("node: rendezvous: munge: " + r.stderr.decode(
                errors="replace").strip()[:300] + " (is munged running?)")
        return r.stdout.strip()

    def decode(self, cred):
        """The payload of a credential of this user; ValueError if it is
        not one (forged, another user's, replayed, expired)."""
        r = self._run("unmunge", cred, "-k", "UID", "-N")
        if r.returncode != 0:
            raise ValueError("a bad munge credential: " + r.stderr.decode(
                errors="replace").strip()[:200])
        head, _, payload = r.stdout.partition(b"\n\n")
        m = re.match(rb"UID:\s+(\d+)\s*$", head)
        if not m or int(m.group(1)) != os.getuid():
            raise ValueError("a munge credential of another user")
        return payload

    @classmethod
    def for_step(cls, env):
        """The step's munge (the socket of Slurm's AuthInfo), or None:
        $TEMPEST_RDV_AUTH=none, or no munge commands here."""
        if env.get("TEMPEST_RDV_AUTH") == "none":
            return None
        if not (shutil.which("munge") and shutil.which("unmunge")):
            say("node: no munge here: the rendezvous is not authenticated "
                "(docs/slurm.rst, 'Trust')")
            return None
        m = re.search(r"^AuthInfo\s*=.*\bsocket=([^,\s]+)",
                      _scontrol("show", "config"), re.M)
        return cls(m.group(1) if m else None)


def _sealed(m, auth, what):
    """The message inside a munge credential m['munge'] (auth given), or m
    itself (no auth); ValueError if it is not sealed as it must be."""
    if auth is None:
        if "munge" in m:
            raise ValueError(f"a munged {what}, and no munge here")
        return m
    if "error" in m:
        return m
    cred = m.get("munge")
    if not isinstance(cred, str):
        raise ValueError(f"an unauthenticated {what} (munge wanted)")
    return _message(auth.decode(cred.encode()), what)


def first_host(nodelist):
    """The first Slurm node of a node list (task 0's, with Slurm's block
    and cyclic distributions)."""
    names = _scontrol("show", "hostnames", nodelist).split()
    if not names or not NAME.match(names[0]):
        raise StepError(f"node: no node names in the step's node list "
                        f"'{nodelist}'")
    return names[0]


def node_address(name):
    """The address of Slurm node name: its NodeAddr (which may be a host
    name) resolved, the node's name resolved if Slurm does not know it."""
    addr = name
    try:
        m = re.search(r"\bNodeAddr=(\S+)",
                      _scontrol("-o", "show", "node", name))
        if m:
            addr = m.group(1)
    except StepError:
        pass
    try:
        infos = socket.getaddrinfo(addr, None, type=socket.SOCK_STREAM)
    except OSError as e:
        raise StepError(f"node: cannot resolve node {name}'s address "
                        f"'{addr}': {e}")
    v4 = [i for i in infos if i[0] == socket.AF_INET]
    return (v4 or infos)[0][4][0]


def rendezvous_ports(step):
    """The ports task 0 may listen on: the step's reserved ports
    (srun --resv-ports, MpiParams=ports=...) if Slurm gave some, else ports
    derived from the job and step ids, the same on every task."""
    ports = []
    for part in step.resv_ports.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if m:
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            ports += list(range(lo, min(hi, lo + RDV_CANDIDATES) + 1))
    ports = [p for p in ports if 1024 <= p <= 65535][:RDV_CANDIDATES]
    if ports:
        return ports
    for i in range(RDV_CANDIDATES):
        h = hashlib.sha256(f"{step.job}.{step.step}.{i}".encode()).digest()
        ports.append(20000 + int.from_bytes(h[:4], "big") % 12000)
    return ports


def _check_addr(text):
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ValueError(f"bad address {text!r}")


def _check_port(v):
    if type(v) is not int or not 1 <= v <= 65535:
        raise ValueError(f"bad port {v!r}")
    return v


def _check_name(v):
    if not isinstance(v, str) or not NAME.match(v):
        raise ValueError(f"bad host name {v!r}")
    return v


def _message(data, what):
    """A rendezvous message (bytes, one JSON object of ours) as a dict."""
    try:
        m = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"not a JSON {what}")
    if not isinstance(m, dict) or m.get("proto") != RDV_PROTO:
        raise ValueError(f"not a tempest rendezvous {what}")
    return m


def check_hello(data, step, auth=None):
    """A task's registration (bytes, one JSON line; a munge credential of
    it if auth): (rank, port, host); ValueError says what is wrong."""
    m = _sealed(_message(data, "registration"), auth, "registration")
    if m.get("job") != step.job or m.get("step") != step.step:
        raise ValueError(f"for step {m.get('job')}.{m.get('step')}, not "
                         f"{step.job}.{step.step}")
    rank = m.get("rank")
    if type(rank) is not int or not 1 <= rank < step.ntasks:
        raise ValueError(f"bad rank {rank!r}")
    return rank, _check_port(m.get("port")), _check_name(m.get("host"))


def check_table(data, step, me, auth=None):
    """Task 0's answer (bytes, one JSON line; a munge credential of it if
    auth): (cluster id, key, [(addr, port, host)] per rank); ValueError
    says what is wrong with it."""
    m = _sealed(_message(data, "answer"), auth, "answer")
    if "error" in m:
        raise ValueError(f"task 0 refused: {str(m['error'])[:200]}")
    cid, key, nodes = m.get("cluster"), m.get("key"), m.get("nodes")
    if type(cid) is not int or not 0 < cid < 1 << 63:
        raise ValueError("bad cluster id")
    if not isinstance(key, str) or not re.fullmatch(r"[0-9a-f]{64}", key):
        raise ValueError("bad key")
    if not isinstance(nodes, list) or len(nodes) != step.ntasks:
        size = len(nodes) if isinstance(nodes, list) else "?"
        raise ValueError(f"a table of {size} nodes for {step.ntasks} tasks")
    table = []
    for n in nodes:
        if not isinstance(n, list) or len(n) != 3:
            raise ValueError("bad table entry")
        table.append((_check_addr(n[0]), _check_port(n[1]),
                      _check_name(n[2])))
    if table[step.rank] != me:
        raise ValueError(f"the table says this task is {table[step.rank]}, "
                         f"not {me}")
    return cid, key, table


def _line(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


class ControlError(StepError):
    pass


class Control:
    """The step's control connection between task 0 and one other task:
    the rendezvous connection, kept open for the step's life.  Task 0
    sends it the QMP commands of a checkpoint or a restore (Relay), the
    task answers and asks for a checkpoint when it gets SIGUSR1.

    The peer is trusted no more than in the rendezvous: a message is one
    line, '<mac> <json>', of at most CTL_LINE_MAX bytes, the MAC an
    HMAC-SHA256 under the cluster's key (which only the step's tasks
    know) of the direction, the task's rank, the message's number and the
    JSON.  A line that is too long, does not check, is out of sequence or
    is not a JSON object ends the connection (ControlError)."""

    def __init__(self, sock, key, rank, task0, buf=b""):
        self.sock = sock
        self.key = bytes.fromhex(key)
        self.rank = rank
        self.tx_dir, self.rx_dir = (b"0>", b">0") if task0 else \
            (b">0", b"0>")
        self.tx_seq = self.rx_seq = 0
        self.buf = buf
        self.lock = threading.Lock()        # senders: two threads
        self.closed = False

    def _mac(self, direction, seq, body):
        return hmac.new(self.key, direction + b"%d:%d:" % (self.rank, seq)
                        + body, hashlib.sha256).hexdigest().encode()

    def send(self, obj):
        body = json.dumps(obj, separators=(",", ":")).encode()
        with self.lock:
            line = self._mac(self.tx_dir, self.tx_seq, body) + b" " + body
            self.tx_seq += 1
            try:
                self.sock.sendall(line + b"\n")
            except OSError as e:
                self.closed = True
                raise ControlError(f"task {self.rank}: the control "
                                   f"connection is gone ({e})")

    def fileno(self):
        return self.sock.fileno()

    def pending(self):
        """A whole line is buffered already."""
        return b"\n" in self.buf

    def recv(self, timeout=None):
        """The next message (a dict); ControlError if the connection ends,
        times out (timeout seconds) or carries anything but our lines."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            if len(self.buf) > CTL_LINE_MAX:
                self._fail("a line too long")
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise ControlError(f"task {self.rank}: no answer on the "
                                   f"control connection in {timeout:g} s")
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                continue
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                self.closed = True
                raise ControlError(f"task {self.rank}: the control "
                                   "connection is closed (the task ended?)")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        mac, _, body = line.partition(b" ")
        if not hmac.compare_digest(mac, self._mac(self.rx_dir, self.rx_seq,
                                                  body)):
            self._fail("a message that does not check (wrong key, or out "
                       "of sequence)")
        self.rx_seq += 1
        try:
            m = json.loads(body)
        except ValueError:
            m = None
        if not isinstance(m, dict):
            self._fail("not a JSON object")
        return m

    def _fail(self, why):
        self.close()
        raise ControlError(f"task {self.rank}: control connection dropped: "
                           f"{why}")

    def close(self):
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass


def serve(step, addr, port_sock, deadline, auth=None):
    """Task 0: listen on the first free candidate port of addr, take every
    other task's registration, answer each with the table (auth: a Munge,
    registrations and answers sealed in its credentials).  Returns
    (cluster id, key, table, {rank: Control})."""
    lsock = None
    for port in rendezvous_ports(step):
        s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, port))
            s.listen(min(step.ntasks, 1024))
            lsock = s
            break
        except OSError:
            s.close()
    if lsock is None:
        raise StepError(f"node: task 0 could not listen on any of the "
                        f"rendezvous ports {rendezvous_ports(step)} of {addr}")
    cid = secrets.randbits(63) | 1
    key = secrets.token_hex(32)
    table = [None] * step.ntasks
    table[0] = (addr, port_sock.getsockname()[1], step.host)
    conns = {}      # socket -> received bytes; rank once registered
    ranks = {}
    sel = selectors.DefaultSelector()
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ)

    def drop(c):
        sel.unregister(c)
        conns.pop(c, None)
        c.close()

    done = False
    try:
        while len(ranks) < step.ntasks - 1:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = [str(i) for i in range(1, step.ntasks)
                           if table[i] is None]
                raise StepError(
                    f"node: rendezvous: task(s) {', '.join(missing[:20])}"
                    f"{' ...' if len(missing) > 20 else ''} never "
                    f"registered with task 0 at {addr}:"
                    f"{lsock.getsockname()[1]}")
            for k, _ in sel.select(timeout=min(left, 1.0)):
                if k.fileobj is lsock:
                    try:
                        c, _peer = lsock.accept()
                    except OSError:
                        continue
                    if len(conns) >= 2 * step.ntasks:
                        c.close()       # bounded: strangers cannot pile up
                        continue
                    c.setblocking(False)
                    conns[c] = b""
                    sel.register(c, selectors.EVENT_READ)
                    continue
                c = k.fileobj
                try:
                    data = c.recv(RDV_HELLO_MAX)
                except OSError:
                    data = b""
                if not data or c in ranks.values():
                    drop(c)         # gone, or talking after registering
                    continue
                conns[c] += data
                if b"\n" not in conns[c]:
                    if len(conns[c]) >= RDV_HELLO_MAX:
                        drop(c)
                    continue
                try:
                    rank, port, host = check_hello(
                        conns[c].split(b"\n", 1)[0], step, auth)
                    if table[rank] is not None:
                        raise ValueError(f"rank {rank} registered twice")
                    peer = _check_addr(c.getpeername()[0])
                except (ValueError, OSError) as e:
                    try:
                        c.setblocking(True)
                        c.settimeout(1)
                        c.sendall(_line({"proto": RDV_PROTO,
                                         "error": str(e)}))
                    except OSError:
                        pass
                    drop(c)
                    continue
                # The address is the one the task reached us from, not one
                # it claims.
                table[rank] = (peer, port, host)
                ranks[rank] = c
                sel.unregister(c)
                del conns[c]
        answer = _line({"proto": RDV_PROTO, "cluster": cid, "key": key,
                        "nodes": [list(t) for t in table]})
        for rank, c in ranks.items():
            # One credential a task: munged refuses one decoded twice.
            sealed = answer if auth is None else _line(
                {"proto": RDV_PROTO, "munge": auth.encode(
                    answer.rstrip(b"\n"), os.getuid()).decode()})
            try:
                c.setblocking(True)
                c.settimeout(max(1.0, deadline - time.monotonic()))
                c.sendall(sealed)
            except OSError as e:
                raise StepError(f"node: rendezvous: cannot answer task "
                                f"{rank}: {e}")
        done = True
    finally:
        for c in list(conns) + ([] if done else list(ranks.values())):
            c.close()
        sel.close()
        lsock.close()
    # Each task's connection stays open: the step's control connection,
    # on which a checkpoint or a restore is run.
    for c in ranks.values():
        c.settimeout(None)
    return cid, key, table, {r: Control(c, key, r, True)
                             for r, c in ranks.items()}


def register(step, server, deadline, auth=None):
    """Any other task: find task 0 at one of its candidate ports, register
    a port of this host, return (port socket, cluster id, key, table,
    the connection to task 0 as the step's Control) (auth: a Munge, as
    for serve())."""
    ports = rendezvous_ports(step)
    why = "no answer"
    while time.monotonic() < deadline:
        for port in ports:
            try:
                c = socket.create_connection((server, port), timeout=2)
            except OSError as e:
                why = f"{server}:{port}: {e.strerror or e}"
                continue
            psock = None
            try:
                mine = c.getsockname()[0]
                psock = cluster.bind_free_ports(1, mine)[0]
                me = (_check_addr(mine), psock.getsockname()[1], step.host)
                c.settimeout(max(1.0, deadline - time.monotonic()))
                hello = _line({"proto": RDV_PROTO, "job": step.job,
                               "step": step.step, "rank": step.rank,
                               "port": me[1], "host": step.host})
                if auth is not None:
                    hello = _line({"proto": RDV_PROTO, "munge": auth.encode(
                        hello.rstrip(b"\n")).decode()})
                c.sendall(hello)
                data = b""
                while b"\n" not in data:
                    more = c.recv(65536)
                    if not more:
                        break
                    data += more
                    if len(data) > RDV_TABLE_MAX:
                        raise ValueError("an answer too large")
                line, rest = data.split(b"\n", 1)
                cid, key, table = check_table(line, step, me, auth)
                c.settimeout(None)
                ctl, c = Control(c, key, step.rank, False, rest), None
                return psock, cid, key, table, ctl
            except (OSError, ValueError) as e:
                why = f"{server}:{port}: {e}"
                if psock:
                    psock.close()
                if isinstance(e, ValueError) and "refused" in str(e):
                    raise StepError(f"node: rendezvous: {why}")
            finally:
                if c is not None:
                    c.close()
        time.sleep(0.2)
    raise StepError(f"node: rendezvous: task {step.rank} found no task 0 "
                    f"of step {step.job}.{step.step} ({why})")


def shm_dir(step):
    """A directory of this host and step for the nodes' Unix sockets."""
    base = os.environ.get("TMPDIR") or "/tmp"
    d = os.path.join(base, f"tempest-{os.getuid()}-{step.job}.{step.step}-"
                     f"{step.host}")
    # c<16>-h<16>-n<node>.sock must fit in sun_path (108 bytes).
    if len(d) > 60:
        d = os.path.join("/tmp", f"tempest-{os.getuid()}-{step.job}."
                         f"{step.step}-{step.host}")
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass        # another task of this host; QEMU checks it is safe
    return d


def node_parser(add_help=True):
    p = argparse.ArgumentParser(
        prog="tempest node", add_help=add_help,
        description="One node of a cluster launched as a Slurm job step "
        "(srun -l -n N scripts/tempest node prog.elf args); docs/slurm.rst.")
    p.add_argument("--smp", type=cluster.positive, default=1,
                   help="vCPUs per node, 1 to 8 (default 1)")
    p.add_argument("--mem", type=cluster.parse_mem, default=None,
                   help="RAM per node (default 128M, with --linux 256M)")
    p.add_argument("--linux", action="store_true",
                   help="boot Debian's arm64 kernel and run the program as "
                   "a Linux process (docs/linux.rst; built with "
                   "'scripts/tempest cc --linux')")
    p.add_argument("--no-share", action="store_true",
                   help="with --linux: no directory shared into the node "
                   "while the program runs (what a checkpoint needs; "
                   "docs/linux.rst, \"Files\")")
    p.add_argument("--forward", type=int, action="append", default=[],
                   metavar="PORT", help="with --linux: forward the node's "
                   "TCP port PORT to a free port of this host's 127.0.0.1 "
                   "(written to RUN/nodeK.ports; repeatable)")
    p.add_argument("--tagmem", type=cluster.parse_mem, default=None,
                   help="tagged memory (machine default 64M; 0 for none)")
    p.add_argument("--cpu", default=None, help="CPU model")
    p.add_argument("--credits", type=cluster.positive, default=None,
                   help="packets in flight per peer and network")
    p.add_argument("--spin-us", type=int, default=None, metavar="US",
                   help="how long a node polls before it sleeps (default: "
                   "50 when every task of this host has a core, else 0)")
    p.add_argument("--timeout", type=float, default=0,
                   help="seconds before the node is stopped (default 0: "
                   "never; Slurm's time limit applies)")
    p.add_argument("--rendezvous-timeout", type=float, default=RDV_TIMEOUT,
                   help=f"seconds for the tasks to meet (default "
                   f"{RDV_TIMEOUT:g})")
    p.add_argument("--restore", default=None, metavar="CKPT",
                   help="start this task's node from checkpoint CKPT (of "
                   "SIGUSR1 to a step, or of scripts/tempest checkpoint); "
                   "program, arguments and settings come from it "
                   "(docs/checkpoint.rst)")
    p.add_argument("--qemu-arg", action="append", default=[],
                   metavar="ARG", help="extra QEMU argument (repeatable)")
    p.add_argument("program", nargs="?", default=None,
                   help="the guest ELF (scripts/tempest cc)")
    p.add_argument("args", nargs=argparse.REMAINDER,
                   help="arguments passed to main() on every node")
    return p


# What task 0 may have a task's QEMU do (Relay): a checkpoint's and a
# restore's commands, nothing else.
RELAYED = {"stop", "cont", "qom-get", "qom-set", "migrate",
           "migrate-incoming", "query-migrate", "query-status", "quit"}


class Relay:
    """Task 0's handle on another task's node, for ckpt's functions: QMP's
    cmd(), each command carried on the control connection to the task,
    which runs it on its QEMU's QMP socket and answers."""

    def __init__(self, ctl, index):
        self.ctl = ctl
        self.index = index
        self.n = 0

    def cmd(self, name, **args):
        self.n += 1
        self.ctl.send({"qmp": name, "args": args, "id": self.n})
        while True:
            m = self.ctl.recv(ckpt.COMMAND_S + 10)
            if m.get("usr1"):
                continue        # it got the signal too: this is its answer
            if m.get("id") != self.n:
                raise ControlError(f"task {self.index}: answered {m!r:.80} "
                                   f"to command {self.n}")
            if "error" in m:
                raise ckpt.QMPError(f"node {self.index}: {name}: "
                                    f"{str(m['error'])[:300]}")
            return m.get("return")


class Coordinator(threading.Thread):
    """Task 0's side of the control connections: a restore (every node
    loaded, the ids compared, then all let go), and a checkpoint when task
    0 or any task gets SIGUSR1 (Slurm's warning before a time limit:
    scancel --signal=USR1, sbatch --signal=USR1@T).  The checkpoint goes
    to RUN/ckpt-usr1 and the nodes end; a failure ends every node with
    status 1 (a restore) or as the run would (a checkpoint)."""

    def __init__(self, ctls, qmp, run_dir, info, restore=None,
                 manifest=None):
        super().__init__(daemon=True)
        self.ctls = ctls
        self.qmp = qmp
        self.run_dir = run_dir
        self.info = info
        self.restore = restore
        self.manifest = manifest
        self.usr1 = threading.Event()
        self.ended = threading.Event()      # task 0's own node ended
        self.failed = None
        self.saved = None

    def _conns(self, local):
        # Task 0's own node last: it quits last after a checkpoint, so
        # this process lives until the others have been told.
        return [Relay(self.ctls[r], r) for r in sorted(self.ctls)] + [local]

    def ask_checkpoint(self):
        """This task got SIGUSR1."""
        self.usr1.set()

    def _fail(self, why):
        self.failed = why
        for ctl in self.ctls.values():
            try:
                ctl.send({"fail": why[:300]})
            except StepError:
                pass

    def run(self):
        local = None
        try:
            local = ckpt.QMP(self.qmp, 0)
            if self.restore:
                took = ckpt.restore_conns(
                    self._conns(local), self.restore, self.manifest,
                    lambda: not self.ended.is_set())
                say(f"node 0: {len(self.ctls) + 1} nodes restored from "
                    f"{rel(self.restore)} in {took:.2f} s")
            while not self.ended.is_set():
                live = [c for c in self.ctls.values() if not c.closed]
                ready = [c for c in live if c.pending()] or \
                    (select.select(live, [], [], 0.1)[0] if live else
                     time.sleep(0.1) or [])
                for c in ready:
                    try:
                        if c.recv().get("usr1"):
                            self.usr1.set()
                    except ControlError:
                        c.close()       # its node ended: no more commands
                if self.usr1.is_set() and not self.ended.is_set():
                    self.usr1.clear()
                    if self._checkpoint(local):
                        return          # the nodes were stopped
        except StepError as e:
            self._fail(str(e))
        finally:
            if local:
                local.close()

    def _checkpoint(self, local):
        """One checkpoint: as RUN/checkpoint-request asks (written by
        'scripts/tempest checkpoint RUN' before its signal), else into
        RUN/ckpt-usr1 and stop.  Returns True if the nodes were stopped;
        raises StepError (all nodes end) only for a failure after which
        they cannot go on."""
        out, stop = os.path.join(self.run_dir, "ckpt-usr1"), True
        req_path = os.path.join(self.run_dir, ckpt.REQUEST)
        try:
            with open(req_path) as f:
                req = json.load(f)
            os.unlink(req_path)
            if isinstance(req.get("out"), str) and req["out"]:
                out = req["out"]
            stop = req.get("stop") is True
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError) as e:
            say(f"node 0: ignored {rel(req_path)}: {e}")
        result = {"out": os.path.abspath(out), "stop": stop, "error": None}
        # Linux nodes with shares mounted are refused by checkpoint_nodes
        # before any node stops: they go on.
        refused = self.info.get("linux") and not self.info.get("no_share")
        try:
            say(f"node 0: SIGUSR1: checkpointing the step's "
                f"{len(self.ctls) + 1} nodes to {rel(out)}"
                + ("" if stop else "; they go on"))
            saved = ckpt.checkpoint_nodes(self._conns(local), self.info,
                                          self.run_dir, out, stop=stop)
        except StepError as e:
            result["error"] = str(e)
            say(f"node 0: {e}" + ("" if stop else "; the nodes go on"))
            if stop and not refused:
                raise
            return False
        finally:
            ckpt.write_json(os.path.join(self.run_dir, ckpt.RESULT), result)
        if stop:
            self.saved = saved
        return stop


class Agent(threading.Thread):
    """Any other task's side of its control connection: runs task 0's
    commands (only RELAYED ones; a migration only to a file) on its
    node's QMP socket and answers; takes task 0's word that the step
    failed."""

    def __init__(self, ctl, qmp, rank):
        super().__init__(daemon=True)
        self.ctl = ctl
        self.qmp = qmp
        self.rank = rank
        self.failed = None
        self.saved = False

    def ask_checkpoint(self):
        """This task got SIGUSR1: task 0 takes the checkpoint."""
        try:
            self.ctl.send({"usr1": True})
        except StepError:
            pass        # task 0 is gone: nothing to checkpoint with

    def run(self):
        conn = None
        try:
            while True:
                try:
                    m = self.ctl.recv()
                except ControlError:
                    return
                if "fail" in m:
                    self.failed = str(m["fail"])[:300]
                    return
                name, args = m.get("qmp"), m.get("args")
                if not isinstance(args, dict):
                    args = {}
                try:
                    if name not in RELAYED:
                        raise StepError(f"{name!r:.40} is not a command "
                                        "task 0 may relay")
                    if name in ("migrate", "migrate-incoming") and not \
                            str(args.get("uri", "")).startswith("file:/"):
                        raise StepError("a migration only to or from a "
                                        "file")
                    if conn is None:
                        conn = ckpt.QMP(self.qmp, self.rank)
                    rsp = {"id": m.get("id"), "return": conn.cmd(name,
                                                                 **args)}
                    if name == "migrate":
                        self.saved = True
                except StepError as e:
                    rsp = {"id": m.get("id"), "error": str(e)}
                try:
                    self.ctl.send(rsp)
                except StepError:
                    return
        finally:
            if conn:
                conn.close()


def _fds_for(ntasks):
    """Task 0 keeps a control connection to every other task: raise its
    limit of open files as far as the hard limit allows, or say at once
    that the step is too large for it."""
    want = ntasks + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            raise StepError(f"node: task 0 needs {want} open files for "
                            f"{ntasks} tasks; the hard limit is {hard} "
                            "(ulimit -Hn, or Slurm's PropagateResourceLimits)")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def _node_settings(a):
    """a's settings, from the checkpoint's manifest for --restore (the
    command line's --qemu-arg after the manifest's); returns the
    manifest or None."""
    if not a.restore:
        if not a.program:
            raise StepError("node: which program? (srun ... scripts/tempest "
                            "node prog.elf args)")
        return None
    m = ckpt.read_manifest(a.restore)
    if a.program and os.path.abspath(a.program) != m["program"]:
        raise StepError(f"node --restore: the checkpoint is of "
                        f"{rel(m['program'])}, not {a.program}")
    a.program = ckpt.restore_program(a.restore, m)
    a.args = list(m["args"])
    a.smp, a.mem, a.cpu = m["smp"], m["mem"], m["cpu"]
    a.credits, a.tagmem = m["credits"], m["tagmem"]
    a.linux, a.no_share = bool(m.get("linux")), bool(m.get("no_share"))
    if a.spin_us is None:
        a.spin_us = m.get("spin_us")
    a.qemu_arg = list(m.get("extra") or []) + list(a.qemu_arg)
    a.forward = list(m.get("forwards") or []) + list(a.forward)
    return m


def run_node(a, env=None):
    """scripts/tempest node: meet the step's other tasks, run this task's
    node; returns its exit status."""
    usr1 = []
    # Before anything: SIGUSR1's default would end the task.
    old_usr1 = signal.signal(signal.SIGUSR1, lambda s, f: usr1.append(s))
    try:
        return _run_node(a, usr1, env)
    finally:
        signal.signal(signal.SIGUSR1, old_usr1)


def _run_node(a, usr1, env=None):
    env = os.environ if env is None else env
    step = Step(env)
    manifest = _node_settings(a)
    if manifest and manifest["nodes"] != step.ntasks:
        raise StepError(f"node --restore: the checkpoint has "
                        f"{manifest['nodes']} nodes, the step "
                        f"{step.ntasks} tasks")
    mem = a.mem or ("256M" if a.linux else "128M")
    if a.linux:
        cluster.check_linux_program(a.program)
    else:
        cluster.check_program(a.program)
        if a.no_share or a.forward:
            raise StepError("node: --no-share and --forward need --linux")
    for port in a.forward:
        if not 1 <= port <= 65535:
            raise StepError(f"node: --forward {port}: not a TCP port")
    cluster.check_settings(step.ntasks, a.smp, mem, a.tagmem, a.credits,
                           a.timeout)
    if not os.path.exists(QEMU_BIN):
        raise StepError("node: QEMU is not built; run 'scripts/tempest "
                        "build'")
    run_dir = env.get(RUN_DIR_ENV) or os.path.abspath(
        f"tempest-slurm-{step.job}.{step.step}")
    os.makedirs(run_dir, exist_ok=True)
    deadline = time.monotonic() + a.rendezvous_timeout
    private = tempfile.mkdtemp(prefix="tempest-node-")
    qmp = os.path.join(private, "qmp")
    psock = None
    shell_socks = []
    sockdir = None
    ctls = {}
    try:
        fabric, opts, cid, key_file = None, "", 0, None
        if step.ntasks > 1:
            server = node_address(first_host(step.nodelist)) \
                if step.rank else None
            auth = Munge.for_step(env)
            if step.rank == 0:
                _fds_for(step.ntasks)
                psock = cluster.bind_free_ports(
                    1, node_address(step.host))[0]
                cid, key, table, ctls = serve(step, psock.getsockname()[0],
                                              psock, deadline, auth)
                with open(os.path.join(run_dir, "rendezvous.txt"), "w") as f:
                    f.write(f"{step.ntasks} tasks met task 0 of step "
                            f"{step.job}.{step.step}; " +
                            (f"authenticated by munge (socket "
                             f"{auth.sock or 'the default'})" if auth else
                             "not authenticated (no munge)") + "\n")
            else:
                psock, cid, key, table, ctl = register(step, server,
                                                       deadline, auth)
                ctls = {0: ctl}
            fabric = "tcp:" + ";".join(
                (f"[{h}]" if ":" in h else h) + f":{p}" for h, p, _ in table)
            sockdir = shm_dir(step)
            opts = f",fabric-shm=auto,fabric-shm-dir={sockdir}"
            key_file = os.path.join(private, "key")
            fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         0o600)
            with os.fdopen(fd, "w") as f:
                f.write(key)
        spin = cluster.spin_default(a.spin_us, step.tasks_here())
        boot = None
        if a.linux:
            # The node's shell service and --forward ports on ports of this
            # host's 127.0.0.1, held until QEMU binds them (scripts/tempest
            # ssh K, run on this host: docs/slurm.rst).
            guests = [lx.SHELL_PORT] + [g for g in a.forward
                                        if g != lx.SHELL_PORT]
            shell_socks = [cluster.bind_free_ports(1, "127.0.0.1")[0]
                           for _ in guests]
            boot = cluster.LinuxRun(a.program, a.args, run_dir, step.ntasks,
                                    forward=False, no_share=a.no_share,
                                    tokens=a.restore).boot(
                step.rank, [(g, sk.getsockname()[1])
                            for g, sk in zip(guests, shell_socks)])
        more = list(a.qemu_arg)
        if manifest:
            # Made and linked as at boot, then loaded and let go by task 0.
            more += ["-S", "-incoming", "defer"]
        cmd = cluster.node_command(step.rank, step.ntasks, a.program, a.args,
                                   a.smp, mem, a.cpu, more, fabric,
                                   cid, a.credits, a.tagmem, key_file, spin,
                                   opts, step.host if fabric else None,
                                   boot=boot, qmp=qmp)
        with open(os.path.join(run_dir, f"node{step.rank}.cmd"), "w") as f:
            f.write(" ".join(cmd) + "\n")
        if step.rank == 0:
            info = ckpt.write_cluster(
                run_dir, a.program, a.args, step.ntasks, a.smp, mem, a.cpu,
                a.credits, a.tagmem, a.spin_us, a.linux, a.no_share,
                a.qemu_arg, a.restore, forwards=a.forward,
                slurm=f"{step.job}.{step.step}")
            control = Coordinator(ctls, qmp, run_dir, info, a.restore,
                                  manifest)
        else:
            control = Agent(ctls[0], qmp, step.rank) if ctls else None
        if psock:
            psock.close()       # QEMU binds it now
            psock = None
        for sk in shell_socks:
            sk.close()
        shell_socks = []
        return _run_qemu(cmd, run_dir, step.rank, a.timeout, a.linux,
                         control, usr1)
    finally:
        for sock in [psock] + shell_socks:
            if sock:
                sock.close()
        for c in ctls.values():
            c.close()
        shutil.rmtree(private, ignore_errors=True)
        if sockdir:
            try:
                os.rmdir(sockdir)   # the last node of the host removes it
            except OSError:
                pass


def _run_qemu(cmd, run_dir, rank, timeout, linux=False, control=None,
              usr1=()):
    """Run one node's QEMU: its console to standard output and nodeK.log,
    its records to nodeK.records; returns its status by run's rules (a
    Linux node whose kernel panics: STATUS_CRASH, as run --linux).
    control: the task's Coordinator or Agent (started with QEMU); usr1:
    SIGUSR1s received (a list the handler appends to)."""
    stop = []
    panicked = []

    def on_signal(signum, frame):
        stop.append(signum)

    old = {s: signal.signal(s, on_signal)
           for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    watchdog = cluster.Watchdog()
    # The node in a session of its own, so in a scheduling group of its own
    # where the kernel groups by session (autogroup): slurmstepd makes one
    # session of all the step's tasks of a host, and when two such groups
    # shared cores (two made-up hosts on one machine) Linux 6.18 starved one
    # of them for tens of seconds at a time (docs/slurm.rst, "One session
    # per node").  Its own session is its own process group too, which the
    # launcher stops as before.
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    watchdog.watch(proc.pid)
    if control:
        control.start()
    out = sys.stdout.buffer

    def pump():
        with open(os.path.join(run_dir, f"node{rank}.log"), "wb") as log, \
                open(os.path.join(run_dir, f"node{rank}.records"),
                     "wb") as rec:
            for raw in iter(proc.stdout.readline, b""):
                if linux and cluster.PANIC in raw:
                    panicked.append(True)
                raw, record = split_record(raw)
                if record is not None:
                    rec.write(record)
                    if not raw:
                        continue
                log.write(raw)
                log.flush()
                out.write(raw)
                out.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    t0 = time.monotonic()
    status = None
    told = 0
    try:
        while proc.poll() is None:
            if stop or panicked or (control and control.failed) or \
                    (timeout and time.monotonic() - t0 > timeout):
                break
            if len(usr1) > told and control:
                told = len(usr1)
                control.ask_checkpoint()
            time.sleep(0.05)
        if proc.poll() is None and panicked and not stop:
            # A panicked kernel never ends QEMU itself.
            time.sleep(0.5)     # the panic's last lines
            cluster.stop_processes([proc])
            status = cluster.STATUS_CRASH
            say(f"node {rank}: the kernel panicked")
        elif proc.poll() is None and control and control.failed:
            cluster.stop_processes([proc])
            status = 1
            say(f"node {rank}: stopped: {control.failed}")
        elif proc.poll() is None:
            cluster.stop_processes([proc])
            status = 128 + stop[0] if stop else cluster.STATUS_TIMEOUT
            say(f"node {rank}: " + (f"stopped by signal {stop[0]}" if stop
                                    else f"timeout after {timeout:g} s"))
        else:
            status = cluster.status_of(proc.returncode)
            if isinstance(control, Coordinator):
                # Node 0 quits last after a checkpoint: the others have
                # been told; let the thread finish its words.
                control.ended.set()
                control.join(timeout=ckpt.COMMAND_S)
                if control.failed:
                    say(f"node {rank}: {control.failed}")
                    status = status or 1
                elif control.saved:
                    say(f"node {rank}: checkpointed to "
                        f"{rel(control.saved)} and stopped")
            elif control and control.saved and status == 0:
                say(f"node {rank}: checkpointed and stopped")
    finally:
        if control and isinstance(control, Coordinator):
            control.ended.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        watchdog.close()
        reader.join(timeout=5)
        for s, h in old.items():
            signal.signal(s, h)
    return status


def merge_records(run_dir, nodes):
    """run --slurm, after the step: the nodes' records as one run's
    (strata.log, states.svg, trace.json); returns the files written."""
    from .stategraph import Records
    records = Records()
    for i in range(nodes):
        try:
            with open(os.path.join(run_dir, f"node{i}.records"), "rb") as f:
                for line in f:
                    records.take(i, line)
        except OSError:
            pass
    return records.write(run_dir, nodes)


def run_slurm(a):
    """scripts/tempest run --slurm: the cluster as a job step of srun's;
    returns srun's exit status.  SIGUSR1 to it goes to srun, which passes
    it to every task: the step is checkpointed (docs/checkpoint.rst)."""
    if shutil.which("srun") is None:
        raise StepError("run --slurm: no srun here (Debian: apt-get install "
                        "slurm-client)")
    for opt, bad in (("--shell", a.shell is not None),
                     ("--gdb", a.gdb is not None), ("--hosts", a.hosts),
                     ("--fabric", a.fabric),
                     ("--tcp", a.tcp)):
        if bad:
            raise StepError(f"run --slurm: {opt} is not supported with "
                            "--slurm (docs/slurm.rst)")
    manifest = None
    if a.restore:
        manifest = ckpt.read_manifest(a.restore)
        a.nodes = manifest["nodes"]
        program = manifest["program"]
        mem = manifest["mem"]
    else:
        if not a.program:
            raise StepError("run: which program? (scripts/tempest run "
                            "--slurm -n N prog.elf)")
        if a.linux:
            cluster.check_linux_program(a.program)
        else:
            cluster.check_program(a.program)
        program = a.program
        mem = a.mem or ("256M" if a.linux else "128M")
    timeout = (120 + (10 * a.nodes if a.linux else 0)
               if a.timeout is None else a.timeout)
    if not manifest:
        cluster.check_settings(a.nodes, a.smp, mem, a.tagmem, a.credits,
                               timeout)
    run_dir = os.path.abspath(a.run_dir or cluster.new_run_dir(program))
    os.makedirs(run_dir, exist_ok=True)
    tempest = os.path.join(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))), "tempest")
    cmd = ["srun", "--label", f"--ntasks={a.nodes}"]
    if a.ntasks_per_node:
        cmd.append(f"--ntasks-per-node={a.ntasks_per_node}")
    cmd += list(a.srun_arg)
    cmd += [tempest, "node", "--timeout", f"{timeout:g}"]
    if manifest:
        # The program, its arguments and the settings are the
        # checkpoint's; more --qemu-arg may be given.
        cmd += ["--restore", os.path.abspath(a.restore)]
    else:
        cmd += ["--smp", str(a.smp), "--mem", mem] + \
            (["--linux"] if a.linux else []) + \
            (["--no-share"] if a.no_share else [])
        for opt, v in (("--tagmem", a.tagmem), ("--cpu", a.cpu),
                       ("--credits", a.credits), ("--spin-us", a.spin_us)):
            if v is not None:
                cmd += [opt, str(v)]
    for port in a.forward:
        cmd.append(f"--forward={port}")
    for q in a.qemu_arg:
        cmd.append(f"--qemu-arg={q}")
    if not manifest:
        cmd += [os.path.abspath(a.program)] + list(a.args)
    with open(os.path.join(run_dir, "command.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    stop_file = os.path.join(run_dir, ckpt.STOP_FILE)
    if os.path.exists(stop_file):
        os.unlink(stop_file)
    t0 = time.monotonic()
    env = dict(os.environ, **{RUN_DIR_ENV: run_dir})
    out = None if not a.quiet else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                            stdout=out)
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        # srun passes the signal on to every task (srun(1), "Signals").
        old = signal.signal(signal.SIGUSR1,
                            lambda s, f: proc.send_signal(signal.SIGUSR1))
    try:
        rc = proc.wait()
    finally:
        if in_main:
            signal.signal(signal.SIGUSR1, old)
    status = cluster.status_of(rc)
    outputs = merge_records(run_dir, a.nodes)
    summary = (f"{a.nodes} task{'s' if a.nodes > 1 else ''} exited 0"
               if status == 0 else f"srun exited with status {status}") + \
        f" in {time.monotonic() - t0:.2f} s (logs: {rel(run_dir)})"
    if os.path.exists(stop_file):
        with open(stop_file) as f:
            where = f.read().strip()
        summary += (f"; checkpointed to {rel(where)} and stopped (restart: "
                    f"scripts/tempest run --slurm --restore {rel(where)})")
    if manifest:
        summary += f"; restored from {rel(a.restore)}"
    if outputs:
        summary += "; wrote " + ", ".join(os.path.basename(p)
                                          for p in outputs)
    with open(os.path.join(run_dir, "summary.txt"), "w") as f:
        f.write(summary + "\n")
    say(f"run: {summary}")
    return status


def request_checkpoint(run_dir, info, out=None, stop=False, timeout=30.0):
    """scripts/tempest checkpoint RUN of a Slurm step: the request in the
    run directory, then Slurm's SIGUSR1 to the step (scancel), whose task
    0 takes the checkpoint and answers in RUN/checkpoint-result."""
    step = info.get("slurm")
    if not isinstance(step, str) or not re.fullmatch(r"\d+\.\d+", step):
        raise StepError(f"checkpoint: {rel(run_dir)} names no Slurm step")
    if shutil.which("scancel") is None:
        raise StepError("checkpoint: no scancel here (a Slurm step is "
                        "signalled through Slurm)")
    result = os.path.join(run_dir, ckpt.RESULT)
    if os.path.exists(result):
        os.unlink(result)
    out = os.path.abspath(out or os.path.join(
        run_dir, "ckpt-" + time.strftime("%Y%m%d-%H%M%S")))
    ckpt.write_json(os.path.join(run_dir, ckpt.REQUEST),
                    {"out": out, "stop": bool(stop)})
    r = subprocess.run(["scancel", "--signal=USR1", step],
                       capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    if r.returncode != 0:
        raise StepError(f"checkpoint: scancel --signal=USR1 {step}: "
                        f"{(r.stdout + r.stderr).strip()[:300]}")
    deadline = time.monotonic() + timeout + 30
    while not os.path.exists(result):
        if time.monotonic() > deadline:
            raise StepError(f"checkpoint: step {step} did not answer in "
                            f"{timeout + 30:g} s ({rel(result)})")
        time.sleep(0.1)
    with open(result) as f:
        got = json.load(f)
    if got.get("error"):
        raise StepError(f"checkpoint: step {step}: {got['error']}")
    say(f"checkpoint: step {step} saved to {rel(got['out'])}"
        + ("; the nodes were stopped" if got.get("stop") else
           "; the nodes go on"))
    return got["out"]
