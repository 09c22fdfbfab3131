# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of the launcher's record parser and state-graph renderers
(scripts/lib/tempestlib/stategraph.py; Strata section 10)."""

import json
import os
import sys
import tempfile
import unittest
import xml.dom.minidom

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts", "lib"))

from tempestlib.stategraph import Records  # noqa: E402


def sample():
    r = Records()
    r.take(0, b"STATE-NAME 0 #ff0000 compute\n")
    r.take(0, b"STATE-NAME 1 #00ff00 idle <&>\n")
    r.take(0, b"STATE 0 0\n")
    r.take(0, b"STATE 2000000 1\n")
    r.take(0, b"STATE 3000000 0\n")
    r.take(1, b"STATE 500000 1\n")
    r.take(1, b"STATE 3000000 1\n")
    r.take(1, b"LOG sorted 42 keys\n")
    return r


class RecordsTest(unittest.TestCase):
    def test_parses_every_kind(self):
        r = sample()
        self.assertEqual(r.names[1], ("idle <&>", "#00ff00"))
        self.assertEqual(r.states[0], [(0, 0), (2000000, 1), (3000000, 0)])
        self.assertEqual(r.log, [(1, "sorted 42 keys")])
        self.assertEqual(r.bad, 0)

    def test_malformed_records_are_counted_not_fatal(self):
        r = Records()
        for bad in (b"STATE x 1", b"STATE-NAME 0 red x", b"NOPE 1",
                    b"STATE 1", b"\xff\xfe"):
            r.take(0, bad)
        self.assertEqual(r.bad, 5)
        self.assertEqual(r.states, {})

    def test_writes_log_svg_and_trace(self):
        with tempfile.TemporaryDirectory() as d:
            paths = sample().write(d, 2)
            self.assertEqual(sorted(os.path.basename(p) for p in paths),
                             ["states.svg", "strata.log", "trace.json"])
            with open(os.path.join(d, "strata.log")) as f:
                self.assertEqual(f.read(), "[node 1] sorted 42 keys\n")
            svg = xml.dom.minidom.parse(os.path.join(d, "states.svg"))
            fills = [e.getAttribute("fill")
                     for e in svg.getElementsByTagName("rect")]
            self.assertIn("#ff0000", fills)
            self.assertIn("#00ff00", fills)
            texts = "".join(t.firstChild.data for t in
                            svg.getElementsByTagName("text") if t.firstChild)
            self.assertIn("idle <&>", texts)
            with open(os.path.join(d, "trace.json")) as f:
                trace = json.load(f)
            spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
            # node 0: compute 0-2 ms, idle 2-3 ms; node 1: idle 0.5-3 ms.
            self.assertEqual(
                sorted((e["tid"], e["name"], e["ts"], e["dur"])
                       for e in spans),
                [(0, "compute", 0.0, 2000.0), (0, "idle <&>", 2000.0, 1000.0),
                 (1, "idle <&>", 500.0, 2500.0)])

    def test_negative_state_is_a_gap(self):
        r = Records()
        r.take(0, b"STATE 0 1\n")
        r.take(0, b"STATE 1000 -1\n")
        r.take(0, b"STATE 5000 1\n")
        r.take(0, b"STATE 6000 0\n")
        with tempfile.TemporaryDirectory() as d:
            r.write(d, 1)
            with open(os.path.join(d, "trace.json")) as f:
                spans = [(e["ts"], e["dur"]) for e in json.load(f)
                         ["traceEvents"] if e["ph"] == "X"]
        self.assertEqual(spans, [(0.0, 1.0), (5.0, 1.0)])

    def test_nothing_recorded_writes_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(Records().write(d, 4), [])
            self.assertEqual(os.listdir(d), [])


if __name__ == "__main__":
    unittest.main()
