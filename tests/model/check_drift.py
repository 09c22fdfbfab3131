#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Keeps libchan and its Promela model on one transition table.

tests/model/transitions.txt lists, for every message handler and every
call of libchan, the port states it tests, the states it moves a port to
and the messages it sends.  This script reads the same three sets out of
the code itself, following calls to helper functions:

  guest/lib/chan/{proto,calls,table}.c  every handler (*_h) and call
      (exec_*): 'state == CHAN_X', 'case CHAN_X', '->state = CHAN_X', and
      the handlers named in TPPI_send_*() (data_h: DATA, ...);
  tests/model/chan.pml  the inline of the same name: '.state == X',
      '.state = X', 'SEND(.., X, ..)'; code under '#ifdef OPT1/OPT2/
      MUTANT_*' (the wrong variants) is left out;

and fails, naming the function and the difference, unless both match the
table (rows marked 'c' are libchan's alone: not in the model).  A handler
or call in proto.c or calls.c that the table does not list fails too.
It also checks itself: mutations of each side must be caught.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHAN = os.path.join(ROOT, "guest", "lib", "chan")
C_FILES = [os.path.join(CHAN, f) for f in ("proto.c", "calls.c", "table.c")]
PML = os.path.join(HERE, "chan.pml")
TABLE = os.path.join(HERE, "transitions.txt")

STATES = ["EMPTY", "IDLE", "INPUTTING", "OUTPUTTING", "BUFFERFULL",
          "MIGRATING", "CONFIRMING"]
MESSAGES = {"data_h": "DATA", "ack_h": "ACK", "portdata_h": "PORTDATA",
            "wire_h": "WIRE", "fwd_h": "FWD", "delete_h": "DELETE",
            "confirm_h": "CONFIRM", "freed_h": "FREED", "create_h": "CREATE",
            "created_h": "CREATED"}
ST = "|".join(STATES)


def _bodies(text, header):
    """{name: body} of the functions whose definitions @header matches
    (group 1: the name), up to the brace that closes each."""
    out = {}
    for m in re.finditer(header, text, re.M):
        i = text.index("{", m.end() - 1)
        depth = 0
        for j in range(i, len(text)):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    out[m.group(1)] = text[i:j + 1]
                    break
    return out


def _strip_comments(text):
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def _closure(direct, calls):
    """Each function's sets joined with those of what it calls."""
    out = {}

    def get(f, seen):
        if f in out:
            return out[f]
        t, a, s = (set(x) for x in direct[f])
        for g in calls[f]:
            if g not in seen:
                gt, ga, gs = get(g, seen | {g})
                t |= gt
                a |= ga
                s |= gs
        return t, a, s
    for f in direct:
        out[f] = get(f, {f})
    return out


def c_sets(texts):
    """{function: (tested, assigned, sent)} from libchan's C sources."""
    bodies = {}
    for text in texts:
        bodies.update(_bodies(_strip_comments(text),
                              r"^(?:static )?[\w ]+?\*?\b(\w+)\([^;{]*\)\s*\{"))
    direct, calls = {}, {}
    for f, b in bodies.items():
        tested = set(re.findall(rf"state\s*[!=]=\s*CHAN_({ST})\b", b)) | \
            set(re.findall(rf"case CHAN_({ST}):", b))
        assigned = set(re.findall(rf"->state\s*=\s*CHAN_({ST})\b", b))
        sent = set()
        for m in re.finditer(r"TPPI_send_\w+\(([^;]*)\);", b, re.S):
            for h in re.findall(r"\b(\w+_h)\b", m.group(1)):
                if h in MESSAGES:
                    sent.add(MESSAGES[h])
        direct[f] = (tested, assigned, sent)
        calls[f] = {g for g in re.findall(r"\b(\w+)\s*\(", b)
                    if g in bodies and g != f}
    return _closure(_output(direct, calls), calls)


def _output(direct, calls):
    """cp_send_output sends OUTPUT: DATA or PORTDATA, by the port's mode."""
    if "cp_send_output" in direct:
        direct["cp_send_output"] = (set(), set(), {"OUTPUT"})
        calls["cp_send_output"] = set()
    return direct


def _drop_variants(text):
    """The model as built without -DOPT1, -DOPT2 or -DMUTANT_*."""
    out, stack = [], []         # per #if level: (a variant?, skipped?)
    for line in text.splitlines():
        m = re.match(r"\s*#\s*(ifdef|ifndef|if|else|endif)\b(.*)", line)
        if not m:
            if not any(skip for _, skip in stack):
                out.append(line)
            continue
        kw, rest = m.group(1), m.group(2)
        if kw in ("ifdef", "ifndef", "if"):
            variant = bool(re.search(r"\b(OPT\d|MUTANT_\w+)\b", rest))
            stack.append((variant, variant and kw != "ifndef" and
                          "!" not in rest))
        elif kw == "else" and stack:
            variant, skip = stack.pop()
            stack.append((variant, variant and not skip))
        elif kw == "endif" and stack:
            stack.pop()
    return "\n".join(out)


def pml_sets(text):
    """{inline: (tested, assigned, sent)} from the Promela model."""
    text = _drop_variants(_strip_comments(text))
    bodies = _bodies(text, r"^inline (\w+)\([^)]*\)\s*\{")
    direct, calls = {}, {}
    for f, b in bodies.items():
        tested = set(re.findall(rf"\.state\s*[!=]=\s*({ST})\b", b))
        assigned = set(re.findall(rf"\.state\s*=\s*({ST})\b", b))
        if "FIND(" in b:
            tested.add("EMPTY")     # FIND is table.c's cp_find
        sent = set(re.findall(r"SEND\([^,]+,[^,]+,\s*(\w+)", b))
        direct[f] = (tested, assigned, sent)
        calls[f] = {g for g in re.findall(r"\b(\w+)\s*\(", b)
                    if g in bodies and g != f}
    return _closure(_output(direct, calls), calls)


def table(text):
    """{function: [(state, next, sends, c_only)]} from transitions.txt."""
    rows = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"(\w+)\s+(\*|\w+)\s+->\s+(=|\w+)\s+(\S+)(\s+c)?$",
                     line)
        if not m:
            raise SystemExit(f"transitions.txt:{n}: not a row: {line}")
        sends = set() if m.group(4) == "-" else set(m.group(4).split(","))
        rows.setdefault(m.group(1), []).append(
            (m.group(2), m.group(3), sends, bool(m.group(5))))
    return rows


def expected(rows, model):
    """The three sets a function's rows say (the model's: no 'c' rows)."""
    t, a, s = set(), set(), set()
    for state, nxt, sends, c_only in rows:
        if model and c_only:
            continue
        if state != "*":
            t.add(state)
        if nxt != "=":
            a.add(nxt)
        s |= sends
    return t, a, s


def compare(tab, c, pml):
    """The differences, one line each (empty: all agree)."""
    errs = []
    names = ("tests", "moves to", "sends")
    for f, rows in sorted(tab.items()):
        for side, got, model in (("proto.c/calls.c", c, False),
                                 ("chan.pml", pml, True)):
            if model and all(r[3] for r in rows):
                continue            # libchan's alone
            if f not in got:
                errs.append(f"{f}: not in {side}")
                continue
            for name, want, have in zip(names, expected(rows, model),
                                        got[f]):
                if want != have:
                    errs.append(
                        f"{f} ({side}) {name} {sorted(have)}, the table "
                        f"says {sorted(want)}")
    for f in sorted(c):
        if (f.endswith("_h") or f.startswith("exec_")) and f != "cmd_h" \
                and f != "exec" and f not in tab:
            errs.append(f"{f}: in libchan, not in transitions.txt")
    for f in sorted(pml):
        if (f.endswith("_h") or f.startswith("exec_")) and f not in tab:
            errs.append(f"{f}: in chan.pml, not in transitions.txt")
    return errs


def check(c_texts, pml_text, table_text):
    return compare(table(table_text), c_sets(c_texts), pml_sets(pml_text))


def _read(path):
    with open(path) as f:
        return f.read()


def self_test(c_texts, pml_text, table_text):
    """Each mutation of one side must be caught; returns the misses."""
    proto = c_texts[0]
    mutations = [
        ("proto.c ack_h completes to BUFFERFULL",
         [proto.replace("        return;\n    }\n    p->state = CHAN_IDLE;\n"
                        "    cp_finish(p, 0);",
                        "        return;\n    }\n    p->state = "
                        "CHAN_BUFFERFULL;\n    cp_finish(p, 0);")]
         + c_texts[1:], pml_text, table_text),
        ("proto.c delete_h without its CONFIRM",
         [proto.replace("send_confirm(t->comp);", "(void)t;")]
         + c_texts[1:], pml_text, table_text),
        ("chan.pml wire_h at MIGRATING deletes instead of forwarding",
         c_texts, pml_text.replace(
             "send_fwd(me, P[t].comp, new, old, wrx, ti)",
             "send_delete(me, old)"), table_text),
        ("chan.pml wire_h forwards to CONFIRMING",
         c_texts, pml_text.replace(
             ":: P[p].state == MIGRATING ->\n        /* 5:",
             ":: P[p].state == CONFIRMING ->\n        /* 5:"), table_text),
        ("transitions.txt with a row the code lacks",
         c_texts, pml_text,
         table_text + "fwd_h IDLE -> = DELETE\n"),
    ]
    missed = []
    self_test.count = len(mutations)
    for what, c2, p2, t2 in mutations:
        if c2 == c_texts and p2 == pml_text and t2 == table_text:
            missed.append(f"{what}: the mutation did not apply")
        elif not check(c2, p2, t2):
            missed.append(f"{what}: not caught")
    return missed


def main():
    c_texts = [_read(p) for p in C_FILES]
    pml_text, table_text = _read(PML), _read(TABLE)
    errs = check(c_texts, pml_text, table_text)
    for e in errs:
        print("drift: " + e)
    missed = self_test(c_texts, pml_text, table_text)
    for m in missed:
        print("drift self-test: " + m)
    errs += missed
    rows = sum(len(r) for r in table(table_text).values())
    print(f"{'ok' if not errs else 'FAILED'}: {rows} transitions of "
          f"{len(table(table_text))} handlers and calls; libchan and the "
          f"model agree with tests/model/transitions.txt"
          + ("" if not errs else f" ({len(errs)} differences)")
          + f"; {self_test.count} mutations caught")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
