# SPDX-License-Identifier: GPL-2.0-or-later
"""State graphs (Strata section 10) and the console record protocol.

A console line that starts with the byte 0x1e (ASCII RS) is a record for
the launcher, not output for a person:

  \\x1eLOG <text>                       StrataLog: a line of strata.log
  \\x1eSTATE-NAME <index> <#rrggbb> <name>   declares a state
  \\x1eSTATE <time_ns> <index>          the node entered a state (a
                                       negative index: recording stopped)

At the end of a run the launcher writes, in the run directory, strata.log
(one line per entry, prefixed with the node), and when states were
recorded states.svg (state as colour per node against time: open it in a
browser) and trace.json (Chrome trace-event format: chrome://tracing or
https://ui.perfetto.dev open it).
"""

import html
import json
import os
import re

RECORD = b"\x1e"
_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")
DEFAULT_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]


def split_record(raw):
    """A console line (bytes) as (output, record): the record, without its
    RS, is None when the line has none; the output is what came before it
    (with its newline; empty when the record started the line)."""
    at = raw.find(RECORD)
    if at < 0:
        return raw, None
    return raw[:at] + (b"\n" if at else b""), raw[at + 1:]


class Records:
    """What the nodes of one run sent the launcher."""

    def __init__(self):
        self.log = []           # (node, text)
        self.names = {}         # index -> (name, colour)
        self.states = {}        # node -> [(time_ns, index)]
        self.bad = 0            # malformed records, counted not fatal

    def take(self, node, line):
        """Handle one record line (bytes, without the leading RS)."""
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        kind, _, rest = text.partition(" ")
        try:
            if kind == "LOG":
                self.log.append((node, rest))
            elif kind == "STATE-NAME":
                index, colour, name = rest.split(" ", 2)
                if not _COLOR.match(colour):
                    raise ValueError(colour)
                self.names[int(index)] = (name, colour)
            elif kind == "STATE":
                t, index = rest.split()
                rec = (int(t), int(index))
                self.states.setdefault(node, []).append(rec)
            else:
                raise ValueError(kind)
        except ValueError:
            self.bad += 1

    def write(self, run_dir, nodes):
        """Write strata.log, states.svg and trace.json; return the paths."""
        written = []
        if self.log:
            path = os.path.join(run_dir, "strata.log")
            with open(path, "w") as f:
                for node, text in self.log:
                    f.write(f"[node {node}] {text}\n")
            written.append(path)
        if self.states:
            path = os.path.join(run_dir, "states.svg")
            with open(path, "w") as f:
                f.write(render_svg(self.states, self.names, nodes))
            written.append(path)
            path = os.path.join(run_dir, "trace.json")
            with open(path, "w") as f:
                json.dump(chrome_trace(self.states, self.names), f)
            written.append(path)
        return written


def _name(names, index):
    return names.get(index, (f"state {index}", None))[0]


def _colour(names, index):
    c = names.get(index, (None, None))[1]
    return c or DEFAULT_COLORS[index % len(DEFAULT_COLORS)]


def _spans(states):
    """Per node: (start_ns, end_ns, index), each state until the next; the
    last one ends when the node's last record does (zero length: dropped).
    A negative index marks a gap (RecordStates(False)): nothing is drawn
    until the next state."""
    out = {}
    for node, recs in states.items():
        recs = sorted(recs)
        spans = []
        for (t, idx), nxt in zip(recs, recs[1:] + [None]):
            end = nxt[0] if nxt else t
            if end > t and idx >= 0:
                spans.append((t, end, idx))
        out[node] = spans
    return out


def chrome_trace(states, names):
    """Chrome trace-event JSON: one complete ('X') event per state span."""
    events = []
    for node, spans in sorted(_spans(states).items()):
        events.append({"name": "thread_name", "ph": "M", "pid": 0,
                       "tid": node, "args": {"name": f"node {node}"}})
        for start, end, idx in spans:
            events.append({"name": _name(names, idx), "cat": "state",
                           "ph": "X", "pid": 0, "tid": node,
                           "ts": start / 1000.0, "dur": (end - start) / 1000.0,
                           "args": {"state": idx}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def render_svg(states, names, nodes, width=960, row=22):
    """State as colour per node (rows) against time (x), with a legend."""
    spans = _spans(states)
    times = [t for recs in states.values() for t, _ in recs]
    t0, t1 = (min(times), max(times)) if times else (0, 1)
    span = max(t1 - t0, 1)
    left, top, plot_w = 70, 30, width - 120
    used = sorted({idx for s in spans.values() for _, _, idx in s} |
                  set(names))
    height = top + nodes * row + 50 + 18 * ((len(used) + 3) // 4)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="14">State graph: '
           f'{nodes} nodes, {span / 1e6:.3f} ms</text>']
    for node in range(nodes):
        y = top + node * row
        out.append(f'<text x="{left - 8}" y="{y + row - 7}" '
                   f'text-anchor="end">node {node}</text>')
        out.append(f'<rect x="{left}" y="{y + 2}" width="{plot_w}" '
                   f'height="{row - 4}" fill="#f4f4f4"/>')
        for start, end, idx in spans.get(node, []):
            x = left + plot_w * (start - t0) / span
            w = max(plot_w * (end - start) / span, 0.5)
            out.append(f'<rect x="{x:.2f}" y="{y + 2}" width="{w:.2f}" '
                       f'height="{row - 4}" fill="{_colour(names, idx)}">'
                       f'<title>node {node}: {html.escape(_name(names, idx))}'
                       f' {(end - start) / 1e3:.1f} us</title></rect>')
    axis_y = top + nodes * row + 14
    for k in range(5):
        x = left + plot_w * k / 4
        out.append(f'<text x="{x:.1f}" y="{axis_y}" text-anchor="middle">'
                   f'{span * k / 4 / 1e6:.3f} ms</text>')
    for k, idx in enumerate(used):
        x = left + (k % 4) * (plot_w / 4)
        y = axis_y + 18 + 18 * (k // 4)
        out.append(f'<rect x="{x:.1f}" y="{y - 10}" width="12" height="12" '
                   f'fill="{_colour(names, idx)}"/>')
        out.append(f'<text x="{x + 16:.1f}" y="{y}">'
                   f'{html.escape(_name(names, idx))}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
