# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit test of how the test runner reads 'meson test --verbose'
(scripts/lib/tempestlib/testing.py): every TAP subtest line is taken,
also once meson pads the index (ten test programs or more).  With eleven
qtest programs the runner once recorded only the last two programs'
subtests (13 of 89), silently."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts", "lib"))

from tempestlib import testing  # noqa: E402


class MesonParseTest(unittest.TestCase):

    def test_subtests(self):
        for line, name, status in (
                ("\u25b6 3/7 /aarch64/tempest/coll/one-node      OK",
                 "/aarch64/tempest/coll/one-node", "OK"),
                ("\u25b6  1/11 /aarch64/tempest/chan/errors     OK   ",
                 "/aarch64/tempest/chan/errors", "OK"),
                ("\u25b6 11/11 /aarch64/tempest/xfer/self      FAIL",
                 "/aarch64/tempest/xfer/self", "FAIL")):
            m = testing._MESON_SUB.match(line)
            self.assertIsNotNone(m, line)
            self.assertEqual((m.group(1), m.group(2)), (name, status))

    def test_programs(self):
        m = testing._MESON_TEST.match(
            " 8/11 qemu:qtest+qtest-aarch64 / qtest-aarch64/tempest-peer-test"
            "      ERROR           22.41s")
        self.assertEqual((m.group(1), m.group(2)),
                         ("qtest-aarch64/tempest-peer-test", "ERROR"))


if __name__ == "__main__":
    unittest.main()
