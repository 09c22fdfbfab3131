# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of 'scripts/tempest node' (scripts/lib/tempestlib/slurm.py;
docs/slurm.rst, "What a task does" and "Trust"): the step read from
Slurm's environment, the rendezvous ports, the checks of every message,
a real rendezvous on 127.0.0.1 between task 0 and two tasks with
strangers and liars among them, and the node's process in a session of
its own ("One session per node")."""

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
        cid, key, table = got[0]
        self.assertEqual([h for _, _, h in table], ["h1", "h1", "h2"])
        for rank in (1, 2):
            psock, c2, k2, t2 = got[rank]
            self.assertEqual((c2, k2, t2), (cid, key, table))
            self.assertEqual(table[rank][:2],
                             ("127.0.0.1", psock.getsockname()[1]))
            psock.close()
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
        cid, key, table = got[0]
        for rank in (1, 2):
            psock, c2, k2, t2 = got[rank]
            self.assertEqual((c2, k2, t2), (cid, key, table))
            psock.close()
        port.close()


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
