# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of 'scripts/tempest node' (scripts/lib/tempestlib/slurm.py;
docs/slurm.rst, "What a task does" and "Trust"): the step read from
Slurm's environment, the rendezvous ports, the checks of every message,
a real rendezvous on 127.0.0.1 between task 0 and two tasks with
strangers and liars among them, the control connection it leaves and a
task's Agent on a real QEMU (docs/checkpoint.rst, "Slurm steps"), and the
node's process in a session of its own ("One session per node")."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts", "lib"))

from tempestlib import slurm  # noqa: E402
from tempestlib.common import StepError  # noqa: E402

ENV = {"SLURM_STEP_NUM_TASKS": "3", "SLURM_PROCID": "0",
       "SLURM_LOCALID": "0", "SLURM_NODEID": "0", "SLURM_JOB_ID": "77",
       "SLURM_STEP_ID": "4", "SLURMD_NODENAME": "h1",
       "SLURM_STEP_NODELIST": "h[1-2]", "SLURM_STEP_TASKS_PER_NODE": "2,1"}


def step(**kw):
    return slurm.Step(dict(ENV, **{k: str(v) for k, v in kw.items()}))


class StepTest(unittest.TestCase):

    def test_env(self):
        s = step(SLURM_PROCID=2, SLURM_NODEID=1)
        self.assertEqual((s.rank, s.ntasks, s.job, s.step, s.host),
                         (2, 3, 77, 4, "h1"))
        self.assertEqual(s.tasks_here(), 1)
        self.assertEqual(step(SLURM_STEP_TASKS_PER_NODE="16(x2)",
                              SLURM_NODEID=1).tasks_here(), 16)

    def test_refused(self):
        with self.assertRaisesRegex(StepError, "not in a Slurm job step"):
            slurm.Step({})
        with self.assertRaisesRegex(StepError, "task 3 of a step of 3"):
            step(SLURM_PROCID=3)
        with self.assertRaisesRegex(StepError, "is not a number"):
            step(SLURM_PROCID="-1")
        # The host name goes into QEMU's -M: nothing but a name.
        with self.assertRaisesRegex(StepError, "not a Slurm node name"):
            step(SLURMD_NODENAME="h1,fabric=unix:/x")

    def test_ports(self):
        a = slurm.rendezvous_ports(step())
        self.assertEqual(a, slurm.rendezvous_ports(step(SLURM_PROCID=1)))
        self.assertEqual(len(a), slurm.RDV_CANDIDATES)
        self.assertTrue(all(20000 <= p < 32000 for p in a))
        self.assertNotEqual(a, slurm.rendezvous_ports(step(SLURM_STEP_ID=5)))
        self.assertEqual(slurm.rendezvous_ports(
            step(SLURM_STEP_RESV_PORTS="12000-12002,12010")),
            [12000, 12001, 12002, 12010])


def hello(**kw):
    m = {"proto": slurm.RDV_PROTO, "job": 77, "step": 4, "rank": 1,
         "port": 5000, "host": "h2"}
    m.update(kw)
    return json.dumps(m).encode()


class ChecksTest(unittest.TestCase):

    def test_hello(self):
        s = step()
        self.assertEqual(slurm.check_hello(hello(), s), (1, 5000, "h2"))
        for bad, why in ((b"\xff", "JSON"), (b"[]", "not a tempest"),
                         (hello(step=5), "for step 77.5"),
                         (hello(rank=0), "bad rank"),
                         (hello(rank=3), "bad rank"),
                         (hello(rank=True), "bad rank"),
                         (hello(port=0), "bad port"),
                         (hello(port="80"), "bad port"),
                         (hello(host="a b"), "bad host")):
            with self.assertRaisesRegex(ValueError, why):
                slurm.check_hello(bad, s)

    def test_table(self):
        s = step(SLURM_PROCID=1)
        me = ("10.0.0.2", 6000, "h2")
        good = {"proto": slurm.RDV_PROTO, "cluster": 5, "key": "ab" * 32,
                "nodes": [["10.0.0.1", 6000, "h1"], list(me),
                          ["::1", 7, "h2"]]}
        cid, key, table = slurm.check_table(json.dumps(good).encode(), s, me)
        self.assertEqual((cid, table[2]), (5, ("::1", 7, "h2")))
        for change, why in (({"cluster": 0}, "cluster"),
                            ({"key": "x"}, "bad key"),
                            ({"nodes": good["nodes"][:2]}, "2 nodes"),
                            ({"nodes": [["h1", 1, "h1"]] + good["nodes"][1:]},
                             "bad address"),
                            ({"nodes": [good["nodes"][0], ["10.0.0.2", 6001,
                                                           "h2"],
                                        good["nodes"][2]]}, "this task is"),
                            ({"error": "no"}, "task 0 refused")):
            with self.assertRaisesRegex(ValueError, why):
                slurm.check_table(json.dumps(dict(good, **change)).encode(),
                                  s, me)


class RendezvousTest(unittest.TestCase):
    """Task 0 and tasks 1 and 2 meet on 127.0.0.1, through the real
    sockets; strangers connect first and are refused or dropped."""

    def test_meet(self):
        s0 = step()
        port = slurm.cluster.bind_free_ports(1)[0]
        got = {}

        def task0():
            got[0] = slurm.serve(s0, "127.0.0.1", port,
                                 time.monotonic() + 20)

        t = threading.Thread(target=task0)
        t.start()
        rdv = None
        for _ in range(100):
            for p in slurm.rendezvous_ports(s0):
                try:
                    rdv = socket.create_connection(("127.0.0.1", p), 1)
                    break
                except OSError:
                    continue
            if rdv:
                break
            time.sleep(0.05)
        self.assertIsNotNone(rdv, "task 0 does not listen")
        # A stranger who says nothing stays open meanwhile; one sends
        # garbage, one another step's registration: both are refused.
        addr = rdv.getpeername()
        junk = socket.create_connection(addr)
        junk.sendall(b"GET / HTTP/1.0\n")
        self.assertIn(b"not a JSON", junk.recv(4096))
        other = socket.create_connection(addr)
        other.sendall(hello(job=78) + b"\n")
        self.assertIn(b"for step 78.4", other.recv(4096))

        def task(rank):
            s = step(SLURM_PROCID=rank, SLURMD_NODENAME=f"h{rank}")
            got[rank] = slurm.register(s, "127.0.0.1", time.monotonic() + 20)

        ts = [threading.Thread(target=task, args=(r,)) for r in (1, 2)]
        for x in ts:
            x.start()
        for x in ts:
            x.join(30)
        t.join(30)
        # A second rank 1 after the table: nobody listens any more.
        for c in (rdv, junk, other):
            c.close()
        cid, key, table, ctls = got[0]
        self.assertEqual([h for _, _, h in table], ["h1", "h1", "h2"])
        self.assertEqual(sorted(ctls), [1, 2])
        for rank in (1, 2):
            psock, c2, k2, t2, ctl = got[rank]
            self.assertEqual((c2, k2, t2), (cid, key, table))
            self.assertEqual(table[rank][:2],
                             ("127.0.0.1", psock.getsockname()[1]))
            psock.close()
            # The rendezvous connection stays open as the control
            # connection: task 0 asks, the task answers, both checked.
            ctls[rank].send({"qmp": "stop", "id": 1})
            self.assertEqual(ctl.recv(5), {"qmp": "stop", "id": 1})
            ctl.send({"id": 1, "return": {}})
            self.assertEqual(ctls[rank].recv(5), {"id": 1, "return": {}})
            ctl.close()
            ctls[rank].close()
        port.close()

    def test_nobody(self):
        s = step(SLURM_PROCID=1, SLURM_JOB_ID=99)
        with self.assertRaisesRegex(StepError, "found no task 0"):
            slurm.register(s, "127.0.0.1", time.monotonic() + 0.5)


@unittest.skipUnless(shutil.which("munged") and shutil.which("munge"),
                     "no munge here (the slurm suite installs it)")
class MungeTest(unittest.TestCase):
    """The rendezvous sealed in munge credentials, with a munged of the
    test's own (its own key and socket): tasks meet; a plain
    registration, a forged credential and a plain answer are refused."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tempest-munge-")
        key = os.path.join(cls.dir, "key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o600)
        cls.sock = os.path.join(cls.dir, "sock")
        subprocess.run(["munged", "-f", f"--key-file={key}",
                        f"--socket={cls.sock}",
                        f"--pid-file={cls.dir}/pid",
                        f"--seed-file={cls.dir}/seed",
                        f"--log-file={cls.dir}/log"], check=True,
                       capture_output=True)
        cls.auth = slurm.Munge(cls.sock)

    @classmethod
    def tearDownClass(cls):
        try:
            with open(os.path.join(cls.dir, "pid")) as f:
                os.kill(int(f.read()), 15)
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_sealed(self):
        s = step()
        cred = self.auth.encode(hello())
        m = slurm._line({"proto": slurm.RDV_PROTO, "munge": cred.decode()})
        self.assertEqual(slurm.check_hello(m.rstrip(), s, self.auth),
                         (1, 5000, "h2"))
        for data, why in ((hello(), "unauthenticated registration"),
                          (slurm._line({"proto": slurm.RDV_PROTO,
                                        "munge": "MUNGE:AAAA:"}).rstrip(),
                           "bad munge credential"),
                          # a credential decodes once (munged's replay
                          # cache): the same registration again is refused
                          (m.rstrip(), "bad munge credential")):
            with self.assertRaisesRegex(ValueError, why):
                slurm.check_hello(data, s, self.auth)
        with self.assertRaisesRegex(ValueError, "no munge here"):
            slurm.check_hello(m.rstrip(), s)
        with self.assertRaisesRegex(ValueError, "unauthenticated answer"):
            slurm.check_table(b'{"proto": "%s", "cluster": 1}'
                              % slurm.RDV_PROTO.encode(), s,
                              ("127.0.0.1", 6000, "h1"), self.auth)

    def test_meet(self):
        s0 = step()
        port = slurm.cluster.bind_free_ports(1)[0]
        got = {}

        def task0():
            got[0] = slurm.serve(s0, "127.0.0.1", port,
                                 time.monotonic() + 20, self.auth)

        def task(rank):
            s = step(SLURM_PROCID=rank, SLURMD_NODENAME=f"h{rank}")
            got[rank] = slurm.register(s, "127.0.0.1", time.monotonic() + 20,
                                       self.auth)

        ts = [threading.Thread(target=task0)] + [
            threading.Thread(target=task, args=(r,)) for r in (1, 2)]
        for x in ts:
            x.start()
        for x in ts:
            x.join(30)
        cid, key, table, ctls = got[0]
        for rank in (1, 2):
            psock, c2, k2, t2, ctl = got[rank]
            self.assertEqual((c2, k2, t2), (cid, key, table))
            psock.close()
            ctl.close()
            ctls[rank].close()
        port.close()


class FdsTest(unittest.TestCase):
    """Task 0's limit of open files grows with the step (a control
    connection a task); beyond the hard limit the step is refused at
    once, naming it."""

    def test_limit(self):
        # In a child whose limits are 256 and 4096 (this process may not
        # raise its hard limit again).
        import resource
        code = ("import resource, sys; sys.path.insert(0, %r); "
                "from tempestlib import slurm; slurm._fds_for(2000); "
                "print(resource.getrlimit(resource.RLIMIT_NOFILE)); "
                "slurm._fds_for(5000)" % os.path.join(
                    os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "scripts", "lib"))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                           text=True, timeout=60, preexec_fn=lambda:
                           resource.setrlimit(resource.RLIMIT_NOFILE,
                                              (256, 4096)))
        self.assertIn("(2064, 4096)", r.stdout, r.stderr)
        self.assertIn("hard limit is 4096", r.stderr)


class ControlTest(unittest.TestCase):
    """The step's control connection over a real socket pair: what task 0
    and a task send each other arrives; a message with the wrong key, one
    replayed, one altered, one too long, or not a JSON object ends the
    connection."""

    KEY = "ab" * 32

    def pair(self, key=None, rank=3):
        a, b = socket.socketpair()
        return (slurm.Control(a, self.KEY, rank, True),
                slurm.Control(b, key or self.KEY, rank, False))

    def test_both_ways(self):
        t0, t = self.pair()
        for i in range(3):
            t0.send({"qmp": "query-migrate", "id": i})
            self.assertEqual(t.recv(5), {"qmp": "query-migrate", "id": i})
            t.send({"id": i, "return": {"status": "completed"}})
            self.assertEqual(t0.recv(5)["return"], {"status": "completed"})
        t.send({"usr1": True})
        self.assertTrue(t0.recv(5)["usr1"])

    def test_refused(self):
        def raw(ctl, line):
            ctl.sock.sendall(line)

        # Another key (a process that does not belong to the step).
        t0, t = self.pair(key="cd" * 32)
        t0.send({"qmp": "quit", "id": 1})
        with self.assertRaisesRegex(slurm.ControlError, "does not check"):
            t.recv(5)
        # A message sent again (its number is the previous one's).
        t0, t = self.pair()
        t0.send({"id": 1})
        line = t.sock.recv(4096)
        t.buf = line + line
        self.assertEqual(t.recv(5), {"id": 1})
        with self.assertRaisesRegex(slurm.ControlError, "does not check"):
            t.recv(5)
        # The same line of another rank's connection.
        t0, t = self.pair(rank=4)
        t0.send({"id": 1})
        t2 = slurm.Control(socket.socketpair()[1], self.KEY, 5, False,
                           t.sock.recv(4096))
        with self.assertRaisesRegex(slurm.ControlError, "does not check"):
            t2.recv(5)
        # Altered on the way.
        t0, t = self.pair()
        t0.send({"qmp": "stop", "id": 1})
        t.buf = t.sock.recv(4096).replace(b"stop", b"quit")
        with self.assertRaisesRegex(slurm.ControlError, "does not check"):
            t.recv(5)
        # Too long, without a newline.
        t0, t = self.pair()
        threading.Thread(target=raw, args=(t0, b"x" * (slurm.CTL_LINE_MAX
                                                         + 70000)),
                         daemon=True).start()
        with self.assertRaisesRegex(slurm.ControlError, "too long"):
            t.recv(5)
        # Checked, but not an object.
        t0, t = self.pair()
        body = b"[1,2]"
        raw(t0, t0._mac(t0.tx_dir, 0, body) + b" " + body + b"\n")
        with self.assertRaisesRegex(slurm.ControlError, "not a JSON object"):
            t.recv(5)
        # Closed, and silent.
        t0, t = self.pair()
        with self.assertRaisesRegex(slurm.ControlError, "no answer"):
            t.recv(0.2)
        t0.close()
        with self.assertRaisesRegex(slurm.ControlError, "closed"):
            t.recv(5)


@unittest.skipUnless(os.path.exists(slurm.QEMU_BIN), "QEMU is not built")
class AgentTest(unittest.TestCase):
    """A task's Agent between its control connection and a real QEMU's QMP
    socket: task 0's checkpoint commands run and are answered; any other
    command, and a migration anywhere but to a file, are refused; task 0's
    word that the step failed is taken."""

    def test_agent(self):
        d = tempfile.mkdtemp(prefix="tempest-unit-agent-")
        qmp = os.path.join(d, "qmp")
        q = subprocess.Popen([slurm.QEMU_BIN, "-M", "tempest", "-S",
                              "-display", "none", "-nodefaults",
                              "-qmp", f"unix:{qmp},server=on,wait=off"],
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            a, b = socket.socketpair()
            t0 = slurm.Control(a, ControlTest.KEY, 2, True)
            agent = slurm.Agent(slurm.Control(b, ControlTest.KEY, 2, False),
                                qmp, 2)
            agent.start()
            relay = slurm.Relay(t0, 2)
            self.assertEqual(relay.cmd("query-migrate"), {})
            self.assertEqual(relay.cmd("qom-get", path=slurm.ckpt.NC_PATH,
                                       property="checkpoint"), False)
            for name, args, why in (
                    ("system_reset", {}, "not a command task 0 may relay"),
                    ("human-monitor-command", {"command-line": "info"},
                     "not a command"),
                    ("migrate", {"uri": "exec:true"}, "only to or from a "
                     "file"),
                    ("migrate", {"uri": "file:relative"}, "only to or from")):
                with self.assertRaisesRegex(StepError, why):
                    relay.cmd(name, **args)
            self.assertIsNone(q.poll())
            t0.send({"fail": "task 5 could not load its state"})
            agent.join(5)
            self.assertEqual(agent.failed, "task 5 could not load its state")
        finally:
            q.kill()
            q.wait()
            shutil.rmtree(d, ignore_errors=True)


class NodeProcessTest(unittest.TestCase):
    """The node's process as _run_qemu starts it: a session of its own, so
    a scheduling group of its own (docs/slurm.rst, "One session per
    node"), its output in nodeK.log and its status returned."""

    def test_own_session(self):
        d = tempfile.mkdtemp(prefix="tempest-unit-node-")
        try:
            # A stand-in for QEMU: says its pid, session and process group.
            cmd = ["/bin/sh", "-c", 'echo "node $$ $(ps -o sid= -o pgid= '
                   '-p $$)"; exit 3']
            status = slurm._run_qemu(cmd, d, 5, 30)
            with open(os.path.join(d, "node5.log")) as f:
                words = f.read().split()
        finally:
            shutil.rmtree(d, ignore_errors=True)
        self.assertEqual(status, 3)
        self.assertEqual(words[0], "node", words)
        pid, sid, pgid = (int(w) for w in words[1:4])
        self.assertEqual(sid, pid)          # it leads a new session ...
        self.assertEqual(pgid, pid)         # ... and its process group
        self.assertNotEqual(sid, os.getsid(0))


if __name__ == "__main__":
    unittest.main()
