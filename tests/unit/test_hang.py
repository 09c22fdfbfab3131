# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of the timeout's report (scripts/lib/tempestlib/hang.py;
docs/fabric.rst, "A stopped node's report") on real processes: a node
whose process has ended is named as ended, not asked; nodes whose
monitors do not answer are asked in parallel and, past the record's
bound, named as not looked at, so that the run's stop does not wait on
them (256 nodes, one after the other, kept it waiting for minutes)."""

import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts", "lib"))

from tempestlib import hang  # noqa: E402


class HangRecordTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.procs = []
        self.saved = (hang.RECORD_S, hang.GDB_NODES)
        hang.GDB_NODES = 0      # gdb is not what is tested here

    def tearDown(self):
        hang.RECORD_S, hang.GDB_NODES = self.saved
        for p in self.procs:
            p.kill()
            p.wait()
        self.dir.cleanup()

    def spawn(self, argv):
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def qmp_path(self, run_dir, i):
        # No monitor listens there: a connection is retried for QMP_S.
        return os.path.join(run_dir, f"node{i}.qmp")

    def record(self, nodes):
        path = hang.record(self.dir.name, nodes, self.qmp_path)
        with open(path) as f:
            return f.read()

    def test_ended_node_is_not_asked(self):
        p = self.spawn(["true"])
        # Ended but not reaped: a zombie, as a node the launcher has not
        # polled yet.
        while hang._alive(p.pid):
            os.sched_yield()
        text = self.record([(0, p.pid)])
        self.assertIn(f"node 0 (pid {p.pid}): ended before it was looked "
                      f"at", text)
        self.assertNotIn("QMP", text)

    def test_bound_names_the_nodes_not_looked_at(self):
        # Each of these needs at least QMP_S (3 s) to give up on its
        # monitor; the bound is far below it, so none is done by then.
        hang.RECORD_S = 0.2
        nodes = [(i, self.spawn(["sleep", "60"]).pid) for i in range(40)]
        text = self.record(nodes)
        for i, pid in nodes:
            self.assertIn(f"node {i} (pid {pid}): not looked at in the "
                          f"record's 0.2 s", text)

    def test_live_node_without_monitor_is_reported(self):
        hang.RECORD_S = 30.0
        p = self.spawn(["sleep", "60"])
        text = self.record([(3, p.pid)])
        self.assertIn(f"node 3 (pid {p.pid}): QMP does not answer", text)
        self.assertRegex(text, r"(?m)^  thread \d+ 'sleep': state [A-Z]")
        self.assertIn("(QMP: node 3: no QMP at", text)


if __name__ == "__main__":
    unittest.main()
