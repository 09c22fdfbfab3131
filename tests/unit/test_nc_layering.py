# SPDX-License-Identifier: GPL-2.0-or-later
"""The node controller's files call each other in one direction only
(docs/design.rst, "How the node controller is built").

The call graph is read from the objects QEMU's build made of hw/tempest
(build/qemu/libqemu-aarch64-softmmu.a.p/hw_tempest_*.c.o): an object that
leaves a symbol undefined which another of them defines depends on that
one.  The tests fail on any cycle among those objects, naming it with the
symbols of each step, and on any call from a node controller file into
one of its own layer or a layer above it.  They skip when the objects are
not built.  TEMPEST_NC_OBJDIR names another directory of such objects
(for example ones built from an older commit).
"""

import glob
import os
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OBJDIR = os.environ.get("TEMPEST_NC_OBJDIR") or os.path.join(
    ROOT, "build", "qemu", "libqemu-aarch64-softmmu.a.p")
PREFIX = "hw_tempest_"

# The node controller's layers, lowest first: a file may call only files
# of a lower layer (and anything outside hw/tempest/tempest-nc*.c, such as
# the fabric backend, which must not call any of them).  A new
# tempest-nc*.c file must be given its layer here.
NC_LAYERS = {
    "tempest-nc-core": 0,       # IRQ, errors, RAM checks, DMA, CQ, timers
    "tempest-nc-xfer-buf": 1,   # where typed messages land, for xfer
    "tempest-nc-coll-shm": 1,   # combining in the shared area, for coll
    "tempest-nc-msg": 2,        # the engines, side by side
    "tempest-nc-coll": 2,
    "tempest-nc-xfer": 2,
    "tempest-nc-tags": 2,
    "tempest-nc-chan": 3,       # the channel controller, on xfer
    "tempest-nc-ckpt-coll": 3,  # checkpoint: the control network's state
    "tempest-nc-ckpt": 4,       # whole-cluster checkpoint (device level)
    "tempest-nc-dump": 4,       # a stopped node's report
    "tempest-nc": 5,            # the device: MMIO, commands, life cycle
}


def module_name(path):
    """hw_tempest_tempest-nc-msg.c.o -> tempest-nc-msg"""
    base = os.path.basename(path)
    return base[len(PREFIX):].split(".c.o")[0]


def _nm(args, path):
    out = subprocess.run(["nm"] + args + [path], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()}


def graph_of_objects(paths):
    """{module: {module it uses: sorted symbols}} from the objects' symbol
    tables: undefined symbols of one defined (globally) by another."""
    defined, undefined = {}, {}
    for p in paths:
        m = module_name(p)
        defined[m] = _nm(["--defined-only", "--extern-only"], p)
        undefined[m] = _nm(["--undefined-only"], p)
    owner = {}
    for m, syms in defined.items():
        for sym in syms:
            owner.setdefault(sym, m)
    graph = {m: {} for m in defined}
    for m, syms in undefined.items():
        for sym in syms:
            o = owner.get(sym)
            if o and o != m:
                graph[m].setdefault(o, []).append(sym)
    for edges in graph.values():
        for o in edges:
            edges[o].sort()
    return graph


def cycles(graph, limit=50):
    """The elementary cycles of graph, each a list of modules starting at
    its smallest one (at most limit of them; the graphs are small)."""
    found = []
    nodes = sorted(graph)
    for i, start in enumerate(nodes):
        allowed = set(nodes[i:])
        stack = [(start, [start])]
        while stack and len(found) < limit:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, {}), reverse=True):
                if nxt == start:
                    found.append(path[:])
                elif nxt in allowed and nxt not in path:
                    stack.append((nxt, path + [nxt]))
    return found


def describe_cycle(graph, cycle):
    """'a -> b (sym, ...) -> a (sym, ...)'"""
    text = cycle[0]
    for a, b in zip(cycle, cycle[1:] + cycle[:1]):
        syms = graph[a][b]
        more = f", +{len(syms) - 3}" if len(syms) > 3 else ""
        text += f" -> {b} ({', '.join(syms[:3])}{more})"
    return text


def layering_violations(graph, layers):
    """Calls from a node controller file into one not below it."""
    bad = []
    for a in sorted(graph):
        for b, syms in sorted(graph[a].items()):
            if b not in layers:
                continue
            if a not in layers:
                bad.append(f"{a} calls the node controller's {b} by name "
                           f"({', '.join(syms)})")
            elif layers[b] >= layers[a]:
                bad.append(f"{a} (layer {layers[a]}) calls {b} (layer "
                           f"{layers[b]}): {', '.join(syms)}")
    return bad


class CycleFinderTest(unittest.TestCase):
    """The checker itself, on graphs made up for it."""

    def test_names_every_cycle(self):
        g = {"nc": {"msg": ["tempest_nc_commit"]},
             "msg": {"nc": ["tempest_nc_guest_error"],
                     "coll": ["tempest_nc_coll_start"]},
             "coll": {"msg": ["tempest_nc_raise"]},
             "core": {}}
        found = cycles(g)
        self.assertEqual(sorted(found), [["coll", "msg"], ["msg", "nc"]])
        self.assertEqual(describe_cycle(g, ["msg", "nc"]),
                         "msg -> nc (tempest_nc_guest_error) -> msg "
                         "(tempest_nc_commit)")

    def test_acyclic_graph_passes(self):
        g = {"nc": {"msg": ["a"], "core": ["b"]}, "msg": {"core": ["c"]},
             "core": {}}
        self.assertEqual(cycles(g), [])
        self.assertEqual(layering_violations(
            g, {"core": 0, "msg": 1, "nc": 2}), [])

    def test_sideways_and_upward_calls(self):
        g = {"nc": {}, "msg": {"coll": ["x"]}, "coll": {}, "core": {},
             "fabric": {"core": ["y"]}}
        bad = layering_violations(g, {"core": 0, "msg": 1, "coll": 1,
                                      "nc": 2})
        self.assertEqual(len(bad), 2)
        self.assertIn("msg (layer 1) calls coll (layer 1): x", bad)


class NodeControllerLayeringTest(unittest.TestCase):
    """The built node controller."""

    @classmethod
    def setUpClass(cls):
        cls.paths = sorted(glob.glob(os.path.join(OBJDIR, PREFIX + "*.c.o")))
        cls.graph = None
        if cls.paths:
            try:
                cls.graph = graph_of_objects(cls.paths)
            except (OSError, subprocess.CalledProcessError) as e:
                cls.error = str(e)

    def setUp(self):
        why = None
        if not self.paths:
            why = (f"no {PREFIX}*.c.o in {os.path.normpath(OBJDIR)}: build "
                   "QEMU first (scripts/tempest build)")
        elif self.graph is None:
            why = f"cannot read the objects with nm: {self.error}"
        if why:
            print(f"{self.id()}: skipped: {why}", file=sys.stderr)
            self.skipTest(why)

    def test_no_cycle(self):
        found = cycles(self.graph)
        if found:
            self.fail("the node controller's files call each other in "
                      "circles:\n  " + "\n  ".join(
                          describe_cycle(self.graph, c) for c in found))

    def test_layers(self):
        mods = [m for m in self.graph if m.startswith("tempest-nc")]
        unknown = sorted(set(mods) - set(NC_LAYERS))
        self.assertEqual(unknown, [], "node controller files with no layer "
                         "in NC_LAYERS (tests/unit/test_nc_layering.py)")
        bad = layering_violations(self.graph, NC_LAYERS)
        if bad:
            self.fail("calls against the node controller's layering:\n  " +
                      "\n  ".join(bad))


if __name__ == "__main__":
    sys.exit(unittest.main())
