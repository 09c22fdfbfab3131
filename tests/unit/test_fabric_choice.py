# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of how 'scripts/tempest run' picks the fabric of a cluster
(scripts/lib/tempestlib/cluster.py; docs/fabric.rst, "Choosing the
transport" and "Mixed clusters"): the machine options of each --fabric,
the made-up hosts of --hosts, guest RAM shared where peers may map it,
and TCP ports outside the kernel's ephemeral range."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts", "lib"))

from tempestlib import cluster  # noqa: E402
from tempestlib.common import StepError  # noqa: E402


def machine_of(cmd):
    return cmd[cmd.index("-M") + 1]


class FabricSpecTest(unittest.TestCase):

    def test_kinds(self):
        spec, opts = cluster.fabric_spec(4, False, "/d", "shm")
        self.assertEqual((spec, opts), ("shm:/d", ""))
        spec, opts = cluster.fabric_spec(4, False, "/d", "socket")
        self.assertEqual((spec, opts), ("unix:/d", ""))
        # tcp: every link on TCP, even between nodes of this host.
        spec, opts = cluster.fabric_spec(4, False, "/d", "tcp")
        self.assertRegex(spec, r"^tcp:127\.0\.0\.1:\d+$")
        self.assertEqual(opts, ",fabric-shm=off")
        # --tcp is --fabric tcp, whatever --fabric says.
        self.assertEqual(cluster.fabric_spec(4, True, "/d", "shm")[1],
                         ",fabric-shm=off")
        # auto: TCP addresses, this host's nodes meeting in the run's dir.
        spec, opts = cluster.fabric_spec(4, False, "/d", "auto")
        self.assertRegex(spec, r"^tcp:127\.0\.0\.1:\d+$")
        self.assertEqual(opts, ",fabric-shm=auto,fabric-shm-dir=/d")
        self.assertEqual(cluster.fabric_spec(1, False, "/d", "auto"),
                         (None, ""))

    def test_unknown_kind(self):
        with self.assertRaises(StepError):
            cluster.fabric_kind("udp")

    def test_hosts_in_blocks(self):
        self.assertEqual([cluster.fake_host(i, 4, 2) for i in range(4)],
                         ["host0", "host0", "host1", "host1"])
        self.assertEqual([cluster.fake_host(i, 5, 2) for i in range(5)],
                         ["host0", "host0", "host0", "host1", "host1"])
        self.assertEqual({cluster.fake_host(i, 3, 3) for i in range(3)},
                         {"host0", "host1", "host2"})

    def test_node_command(self):
        spec, opts = cluster.fabric_spec(4, False, "/d", "auto")
        cmd = cluster.node_command(2, 4, "p.elf", [], fabric=spec,
                                   cluster=5, fabric_opts=opts,
                                   host_id="host1")
        m = machine_of(cmd)
        self.assertIn(",fabric-shm=auto,fabric-shm-dir=/d", m)
        self.assertIn(",fabric-host-id=host1", m)
        # Peers of this host map its RAM: a shared memfd.
        self.assertIn("memory-backend=tempest.ram", m)
        spec, opts = cluster.fabric_spec(4, False, "/d", "tcp")
        m = machine_of(cluster.node_command(2, 4, "p.elf", [], fabric=spec,
                                            cluster=5, fabric_opts=opts))
        self.assertIn(",fabric-shm=off", m)
        self.assertNotIn("memory-backend", m)
        self.assertNotIn("fabric-host-id", m)

    def test_ports_below_ephemeral(self):
        low = cluster.ephemeral_low()
        for _ in range(20):
            base = cluster.free_port_base(16)
            if low - 16 > 20000:
                self.assertLessEqual(base + 16, low)


if __name__ == "__main__":
    sys.exit(unittest.main())
