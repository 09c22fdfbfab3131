# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit test of how the test runner reads 'meson test --verbose'
(scripts/lib/tempestlib/testing.py): every TAP subtest line is taken,
also once meson pads the index (ten test programs or more).  With eleven
qtest programs the runner once recorded only the last two programs'
subtests (13 of 89), silently."""

import contextlib
import io
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

    def test_why_first(self):
        """A program that bails out (meson --verbose's form of it, two
        programs): its own assertion is printed first, not lost above the
        last 6000 characters of noise (a CI failure once showed only the
        noise), and the other program's lines are not in its record."""
        bail = ("ERROR:../tests/qtest/tempest-migration-test.c:715:"
                "test_xfer_system_space: assertion failed")
        prog = "qtest-aarch64/tempest-migration-test"
        out = (f" 5/11 qemu:qtest+qtest-aarch64 / {prog}  RUNNING\n"
               "\u25b6 5/11 /aarch64/tempest/migration/timer OK\n"
               f"\u25b6 5/11 {bail} ERROR\n"
               f" 5/11 qemu:qtest+qtest-aarch64 / {prog}  ERROR  9.1s  "
               "killed by signal 6 SIGABRT\n"
               "stderr:\n" + "qemu: warning: lost node 1\n" * 3000 +
               " 6/11 qemu:qtest+qtest-aarch64 / qtest-aarch64/tempest-nc-"
               "test  RUNNING\n"
               "Bail out! ERROR:other.c:1:f: assertion failed\n")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            testing._meson_record(testing.Results(False), "qtest", out)
        lines = printed.getvalue().splitlines()
        self.assertEqual(lines[0],
                         "PASS qtest/aarch64/tempest/migration/timer")
        self.assertEqual(lines[1], f"FAIL qtest/{prog}  (ERROR)")
        self.assertEqual(lines[2], "    why:")
        self.assertIn(bail, lines[3])
        self.assertNotIn("other.c", printed.getvalue())
        self.assertEqual(testing._broken_text("noise\n"), "noise\n")

if __name__ == "__main__":
    unittest.main()
