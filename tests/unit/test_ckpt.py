# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of how the launcher finds and checks a checkpoint's cut
(scripts/lib/tempestlib/ckpt.py; docs/checkpoint.rst, "How a checkpoint
is taken"): the drain waits for every node at rest, the cluster's sent
and taken frames equal and two equal collections in a row, and names the
nodes that never get there; the cut check catches a pair of nodes whose
sequence numbers or credits disagree (a save without the drain); node
commands carry a QMP socket."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts", "lib"))

from tempestlib import ckpt, cluster  # noqa: E402
from tempestlib.common import StepError  # noqa: E402


class FakeNode:
    """A node's QMP as the launcher sees it: ckpt-status from a script of
    answers (the last repeats), ckpt-links fixed."""

    def __init__(self, index, statuses, links=""):
        self.index = index
        self.statuses = list(statuses)
        self.links = links

    def cmd(self, name, **args):
        if args.get("property") == "ckpt-status":
            return self.statuses.pop(0) if len(self.statuses) > 1 else \
                self.statuses[0]
        if args.get("property") == "ckpt-links":
            return self.links
        raise AssertionError(name)


def pair(a_to_b, b_from_a, credit_a, allowed_b, owed_b):
    """ckpt-links of two nodes: network 0 as given, network 1 idle."""
    full = 32
    a = (f"0:{full},{full},{full},{full},0,0,0,0,0,0 "
         f"1:{credit_a},{full},{full},{full},0,0,{a_to_b},0,0,0")
    b = (f"0:{full},{full},{allowed_b},{full},{owed_b},0,0,0,{b_from_a},0 "
         f"1:{full},{full},{full},{full},0,0,0,0,0,0")
    return a, b


class MigratingNode:
    """A node's QMP during the save: query-migrate and query-status from
    scripts of answers (the last repeats); the commands are recorded."""

    def __init__(self, index, migrate, status):
        self.index = index
        self.migrate = list(migrate)
        self.status = list(status)
        self.seen = []

    def cmd(self, name, **args):
        self.seen.append(name)
        script = {"query-migrate": self.migrate,
                  "query-status": self.status}[name]
        st = script.pop(0) if len(script) > 1 else script[0]
        return {"status": st, "error-desc": "pre-save failed"}


class WaitMigrationTest(unittest.TestCase):
    """QEMU reports a migration's end before it puts the run state back
    from finish-migrate, where 'cont' is refused: the wait lasts until
    every node has left it, also when one node's save failed."""

    def test_settled_after_completed(self):
        a = MigratingNode(0, ["active", "completed"],
                          ["finish-migrate", "finish-migrate", "paused"])
        ckpt.wait_migration([a], 5.0, "checkpoint")
        self.assertEqual(a.seen.count("query-status"), 3)

    def test_failure_waits_for_the_others(self):
        a = MigratingNode(0, ["failed"], ["finish-migrate", "paused"])
        b = MigratingNode(1, ["active", "active", "completed"],
                          ["finish-migrate", "postmigrate"])
        with self.assertRaisesRegex(StepError, "node 0: migration failed: "
                                    "pre-save failed"):
            ckpt.wait_migration([a, b], 5.0, "checkpoint")
        self.assertEqual(b.seen.count("query-migrate"), 3)
        self.assertEqual(b.seen[-1], "query-status")
        self.assertEqual(a.seen.count("query-status"), 2)


class DrainTest(unittest.TestCase):

    def test_quiet_after_two_equal_collections(self):
        nodes = [FakeNode(0, ["5 3", "7 4", "7 4"]),
                 FakeNode(1, ["3 4", "4 7", "4 7"])]
        # 8 != 7, then 11 == 11 twice.
        self.assertEqual(ckpt.drain(nodes, 2.0), 3)

    def test_equal_sums_once_are_not_enough(self):
        nodes = [FakeNode(0, ["2 2", "3 2", "3 3", "3 3"]),
                 FakeNode(1, ["2 2", "2 3", "3 3", "3 3"])]
        self.assertEqual(ckpt.drain(nodes, 2.0), 4)

    def test_busy_node_named(self):
        nodes = [FakeNode(0, ["1 1"]),
                 FakeNode(1, ["1 1 a fetch-and-op of CPU 0 waits"])]
        with self.assertRaisesRegex(StepError, "node 1: a fetch-and-op"):
            ckpt.drain(nodes, 0.05)

    def test_frames_in_flight_counted(self):
        nodes = [FakeNode(0, ["9 1"]), FakeNode(1, ["1 8"])]
        with self.assertRaisesRegex(StepError, "10 frames sent, 9 taken"):
            ckpt.drain(nodes, 0.05)


class CutTest(unittest.TestCase):

    def test_consistent(self):
        # a sent b 40, b took 40; b holds 5 of a's packets and owes 3.
        a, b = pair(40, 40, 24, 27, 3)
        ckpt.check_cut([FakeNode(0, [""], a), FakeNode(1, [""], b)])

    def test_packet_in_flight(self):
        a, b = pair(41, 40, 24, 27, 3)
        with self.assertRaisesRegex(StepError, "node 0 sent node 1 41"):
            ckpt.check_cut([FakeNode(0, [""], a), FakeNode(1, [""], b)])

    def test_credit_in_flight(self):
        a, b = pair(40, 40, 24, 32, 0)
        with self.assertRaisesRegex(StepError, "node 0 holds 24 credits"):
            ckpt.check_cut([FakeNode(0, [""], a), FakeNode(1, [""], b)])


class CommandTest(unittest.TestCase):

    def test_qmp_socket(self):
        cmd = cluster.node_command(1, 2, "p.elf", [], qmp="/r/node1.qmp")
        i = cmd.index("-qmp")
        self.assertEqual(cmd[i + 1], "unix:/r/node1.qmp,server=on,wait=off")


if __name__ == "__main__":
    unittest.main()
