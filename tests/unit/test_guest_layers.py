# SPDX-License-Identifier: GPL-2.0-or-later
"""The layering of the guest libraries (docs/design.rst, "The guest
libraries"): within libtempest, libstrata (and libstrataD) and libam no
source file calls, through any chain of calls, back into itself, and the
core calls no other file of its library.

The graph comes from the built objects (build/guest, one object per
source file): file A depends on file B when A's object has an undefined
symbol (U, or w for a weak reference) that B's object defines.  So
whatever the sources say, this is what the linker sees.

Run alone it prints the graphs and any cycle, and exits 1 on a cycle:
  python3 tests/unit/test_guest_layers.py [GUEST_BUILD_DIR]
"""

import glob
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts", "lib"))

from tempestlib.common import GUEST_BUILD  # noqa: E402

# Each library's object directory (meson's) and its bottom layer.
LIBS = {
    "libtempest": ("guest/lib/tempest/libtempest.a.p", "core"),
    "libstrata": ("guest/lib/strata/libstrata.a.p", "core"),
    "libstrataD": ("guest/lib/strata/libstrataD.a.p", "core"),
    "libam": ("guest/lib/am/libam.a.p", "am"),
}
NM = "aarch64-linux-gnu-nm"
DEFINED = set("TDBRCGSVW")      # nm's global definitions
REFERENCED = set("Uw")          # nm's undefined and weak undefined


def unit_name(obj):
    """The source file an object of meson's comes from, without '.c'."""
    name = os.path.basename(obj)
    name = name.replace("meson-generated_.._", "")
    return name[:-len(".c.o")] if name.endswith(".c.o") else name


def symbols(obj):
    """(defined, referenced): the object's global symbols, by nm."""
    out = subprocess.run([NM, obj], check=True, capture_output=True,
                         text=True).stdout
    defined, referenced = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in REFERENCED:
            referenced.add(parts[1])
        elif len(parts) == 3 and parts[1] in DEFINED:
            defined.add(parts[2])
    return defined, referenced


def call_graph(tables):
    """tables: {unit: (defined, referenced)}.  Returns {unit: {unit:
    sorted symbols}}, the units each one uses and through which
    symbols (every unit a key)."""
    owner = {}
    for unit, (defined, _) in tables.items():
        for sym in defined:
            owner[sym] = unit
    graph = {unit: {} for unit in tables}
    for unit, (_, referenced) in tables.items():
        for sym in referenced:
            to = owner.get(sym)
            if to is not None and to != unit:
                graph[unit].setdefault(to, []).append(sym)
    for edges in graph.values():
        for to in edges:
            edges[to].sort()
    return graph


def library_graph(objdir):
    objs = sorted(glob.glob(os.path.join(objdir, "*.o")))
    return call_graph({unit_name(o): symbols(o) for o in objs})


def cycles(graph, limit=20):
    """The simple cycles of the graph (at most @limit), shortest first:
    each a list of units starting at its least one, that one repeated at
    the end.  Empty if the graph is acyclic (a unit never depends on
    itself: call_graph leaves those out).  The graphs are a few files, so
    a search from each unit is cheap."""
    found = []

    def walk(start, path):
        for w in sorted(graph[path[-1]]):
            if w == start:
                found.append(path + [start])
            elif w > start and w not in path:
                walk(start, path + [w])

    for start in sorted(graph):
        walk(start, [start])
    found.sort(key=lambda c: (len(c), c))
    return found[:limit]


def describe(graph, cycle):
    """'core.c -> timer.c (tppi_timer_event) -> core.c (tppi_report)'."""
    text = cycle[0] + ".c"
    for a, b in zip(cycle, cycle[1:]):
        syms = graph[a][b]
        more = f", +{len(syms) - 3}" if len(syms) > 3 else ""
        text += f" -> {b}.c ({', '.join(syms[:3])}{more})"
    return text


def format_graph(graph):
    lines = []
    for a in sorted(graph):
        for b in sorted(graph[a]):
            lines.append(f"  {a}.c -> {b}.c: {' '.join(graph[a][b])}")
    return "\n".join(lines) or "  (no calls between files)"


class CycleFinderTest(unittest.TestCase):
    """The check itself: it finds and names a cycle, and only a cycle."""

    def test_names_a_cycle(self):
        g = call_graph({
            "core": ({"report", "wait"}, {"timer_event"}),
            "timer": ({"timer_event"}, {"report"}),
            "chan": (set(), {"wait", "timer_event"}),
        })
        found = cycles(g)
        self.assertEqual(found, [["core", "timer", "core"]])
        self.assertEqual(describe(g, found[0]),
                         "core.c -> timer.c (timer_event) -> core.c (report)")

    def test_longer_cycle_and_acyclic_graph(self):
        g = call_graph({
            "a": ({"a1"}, {"b1"}),
            "b": ({"b1"}, {"c1"}),
            "c": ({"c1"}, {"a1"}),
            "d": ({"d1"}, {"a1", "b1"}),
        })
        self.assertEqual(cycles(g), [["a", "b", "c", "a"]])
        g["c"]["b"] = ["b1"]
        self.assertEqual(cycles(g), [["b", "c", "b"], ["a", "b", "c", "a"]])
        g = call_graph({
            "core": ({"x"}, set()),
            "vm": ({"y"}, {"x"}),
            "send": (set(), {"x", "y"}),
        })
        self.assertEqual(cycles(g), [])


class GuestLayersTest(unittest.TestCase):
    """The built libraries (scripts/tempest build) are acyclic, and each
    one's core calls no other file of it."""

    def check_library(self, lib):
        objdir, bottom = LIBS[lib]
        objdir = os.path.join(GUEST_BUILD, objdir)
        if shutil.which(NM) is None:
            self.fail(f"{NM} is not installed (scripts/tempest setup)")
        if not glob.glob(os.path.join(objdir, "*.o")):
            self.fail(f"no objects in {objdir}: build the guest first "
                      "(scripts/tempest build)")
        graph = library_graph(objdir)
        self.assertIn(bottom, graph, f"{lib}: no {bottom}.c object")
        found = cycles(graph)
        self.assertEqual(found, [], f"{lib}: files call each other in a "
                         "circle:\n  " + "\n  ".join(
                             describe(graph, c) for c in found) +
                         "\ncalls between its files:\n" + format_graph(graph))
        self.assertEqual(graph[bottom], {},
                         f"{lib}: {bottom}.c, the bottom layer, calls "
                         "upward:\n" + format_graph({bottom: graph[bottom]}))

    def test_libtempest(self):
        self.check_library("libtempest")

    def test_libstrata(self):
        self.check_library("libstrata")

    def test_libstrataD(self):
        self.check_library("libstrataD")

    def test_libam(self):
        self.check_library("libam")


def main(argv):
    build = argv[1] if len(argv) > 1 else GUEST_BUILD
    status = 0
    for lib, (objdir, bottom) in LIBS.items():
        graph = library_graph(os.path.join(build, objdir))
        print(f"{lib}:\n{format_graph(graph)}")
        for c in cycles(graph):
            print(f"  CYCLE: {describe(graph, c)}")
            status = 1
        if graph.get(bottom):
            print(f"  {bottom}.c calls upward")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
