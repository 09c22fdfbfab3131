#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Keeps libchan, its Promela model and the device on one transition table.

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

  hw/tempest/tempest-nc-chan.c  the device function each 'device' line
      of the table names: 'state == TEMPEST_CHAN_ST_X', '->state =
      TEMPEST_CHAN_ST_X', 'chan_send(s, CHAN_MSG_X' (and its helpers);

and fails, naming the function and the difference, unless all three
match the table (rows marked 'c' are not in the model, 'l' not in the
device, 'd' the device's alone).  A handler or call in proto.c or calls.c,
or a chan_rx_* / chan_op_* function of the device, that the table does
not list fails too.  It also checks itself: mutations of each side must
be caught.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHAN = os.path.join(ROOT, "guest", "lib", "chan")
C_FILES = [os.path.join(CHAN, f) for f in ("proto.c", "calls.c", "table.c")]
PML = os.path.join(HERE, "chan.pml")
DEVICE = os.path.join(ROOT, "hw", "tempest", "tempest-nc-chan.c")
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


def dev_sets(text):
    """{function: (tested, assigned, sent)} from the device's C source."""
    bodies = _bodies(_strip_comments(text),
                     r"^(?:static )?[\w ]+?\*?\b(\w+)\([^;{]*\)\s*\{")
    bodies = {f: b for f, b in bodies.items() if not f.isupper()}
    direct, calls = {}, {}
    for f, b in bodies.items():
        tested = set(re.findall(
            rf"state\s*[!=]=\s*TEMPEST_CHAN_ST_({ST})\b", b))
        assigned = set(re.findall(
            rf"->state\s*=\s*TEMPEST_CHAN_ST_({ST})\b", b))
        sent = set(re.findall(r"chan_send\(s,\s*CHAN_MSG_(\w+)", b))
        direct[f] = (tested, assigned, sent)
        calls[f] = {g for g in re.findall(r"\b(\w+)\s*\(", b)
                    if g in bodies and g != f}
    # Senders: a frame leaves; chan_send's loopback is not a call.
    # chan_offer's READY is the device's own hint and chan_withdraw's
    # WITHDRAW takes it back, chan_send_go's GO its transfer engine's
    # request (no state changes: BIG/GO below).  chan_then_input is
    # OUTPUT_INPUT's input, started when the output ends (only after that
    # instruction, the device's own: not followed from the handlers that
    # end an output).
    for f, msg in (("chan_send", None), ("chan_offer", None),
                   ("chan_withdraw", None), ("chan_send_go", None),
                   ("chan_then_input", None),
                   ("chan_send_output", "OUTPUT"),
                   ("chan_send_wire", "WIRE"),
                   ("chan_send_delete", "DELETE")):
        if f in direct:
            direct[f] = (set(), set(), {msg} if msg else set())
            calls[f] = set()
    return _closure(direct, calls)


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
        if line.startswith("device "):
            continue
        m = re.match(r"(\w+)\s+(\*|\w+)\s+->\s+(=|\w+)\s+(\S+)"
                     r"(?:\s+([cld]+))?$", line)
        if not m:
            raise SystemExit(f"transitions.txt:{n}: not a row: {line}")
        sends = set() if m.group(4) == "-" else set(m.group(4).split(","))
        rows.setdefault(m.group(1), []).append(
            (m.group(2), m.group(3), sends, m.group(5) or ""))
    return rows


def devices(text):
    """[(handler or '-', device function)] from the 'device' lines."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].split()
        if len(line) == 3 and line[0] == "device":
            out.append((line[1], line[2]))
    return out


def expected(rows, side):
    """The three sets a function's rows say for @side: 'libchan' (no 'd'
    rows), 'model' (no 'c' or 'd' rows) or 'device' (no 'l' rows; no
    EMPTY tested)."""
    skip = {"libchan": "d", "model": "cd", "device": "l"}[side]
    t, a, s = set(), set(), set()
    for state, nxt, sends, flags in rows:
        if any(f in skip for f in flags):
            continue
        if state != "*":
            t.add(state)
        if nxt != "=":
            a.add(nxt)
        s |= sends
    if side == "device":
        t.discard("EMPTY")
    return t, a, s


def compare(tab, c, pml, dev=None, devmap=()):
    """The differences, one line each (empty: all agree)."""
    errs = []
    names = ("tests", "moves to", "sends")
    for f, rows in sorted(tab.items()):
        for side, got, kind in (("proto.c/calls.c", c, "libchan"),
                                ("chan.pml", pml, "model")):
            if kind == "model" and all("c" in r[3] or "d" in r[3]
                                       for r in rows):
                continue            # libchan's alone
            if f not in got:
                errs.append(f"{f}: not in {side}")
                continue
            for name, want, have in zip(names, expected(rows, kind),
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
    if dev is None:
        return errs
    for h, fn in devmap:
        if fn not in dev:
            errs.append(f"{fn}: not in tempest-nc-chan.c")
        elif h != "-" and h not in tab:
            errs.append(f"device {h}: no rows in transitions.txt")
        elif h != "-":
            have_t, have_a, have_s = dev[fn]
            for name, want, have in zip(names, expected(tab[h], "device"),
                                        (have_t - {"EMPTY"}, have_a,
                                         have_s)):
                if want != have:
                    errs.append(
                        f"{h} (device {fn}) {name} {sorted(have)}, the "
                        f"table says {sorted(want)}")
    listed = {fn for _, fn in devmap}
    for fn in sorted(dev):
        if re.match(r"chan_(rx|op)_", fn) and fn not in listed:
            errs.append(f"{fn}: in the device, not in transitions.txt")
    return errs


def check(c_texts, pml_text, table_text, dev_text=None):
    return compare(table(table_text), c_sets(c_texts), pml_sets(pml_text),
                   None if dev_text is None else dev_sets(dev_text),
                   devices(table_text))


def _read(path):
    with open(path) as f:
        return f.read()


def self_test(c_texts, pml_text, table_text, dev_text):
    """Each mutation of one side must be caught; returns the misses."""
    proto = c_texts[0]
    dev_mutations = [
        ("device chan_rx_wire deletes instead of forwarding",
         dev_text.replace("chan_send(s, CHAN_MSG_FWD,",
                          "chan_send(s, CHAN_MSG_DELETE,")),
        ("device chan_rx_confirm makes the port BUFFERFULL",
         dev_text.replace("        return;\n    }\n    p->state = "
                          "TEMPEST_CHAN_ST_IDLE;\n    chan_event(s, p, "
                          "TEMPEST_CHAN_EV_PORT",
                          "        return;\n    }\n    p->state = "
                          "TEMPEST_CHAN_ST_BUFFERFULL;\n    chan_event(s, "
                          "p, TEMPEST_CHAN_EV_PORT")),
        ("device chan_rx_fwd without 5.2",
         dev_text.replace("} else if (p->state == "
                          "TEMPEST_CHAN_ST_CONFIRMING) {\n        /* 5.2",
                          "} else if (0) {\n        /* 5.2")),
    ]
    missed = []
    for what, d2 in dev_mutations:
        if d2 == dev_text:
            missed.append(f"{what}: the mutation did not apply")
        elif not check(c_texts, pml_text, table_text, d2):
            missed.append(f"{what}: not caught")
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
    self_test.count = len(mutations) + len(dev_mutations)
    for what, c2, p2, t2 in mutations:
        if c2 == c_texts and p2 == pml_text and t2 == table_text:
            missed.append(f"{what}: the mutation did not apply")
        elif not check(c2, p2, t2):
            missed.append(f"{what}: not caught")
    return missed


def main():
    c_texts = [_read(p) for p in C_FILES]
    pml_text, table_text = _read(PML), _read(TABLE)
    dev_text = _read(DEVICE)
    errs = check(c_texts, pml_text, table_text, dev_text)
    for e in errs:
        print("drift: " + e)
    missed = self_test(c_texts, pml_text, table_text, dev_text)
    for m in missed:
        print("drift self-test: " + m)
    errs += missed
    rows = sum(len(r) for r in table(table_text).values())
    ndev = len([h for h, _ in devices(table_text) if h != "-"])
    print(f"{'ok' if not errs else 'FAILED'}: {rows} transitions of "
          f"{len(table(table_text))} handlers and calls; libchan, the "
          f"model and the device ({ndev} functions) agree with "
          f"tests/model/transitions.txt"
          + ("" if not errs else f" ({len(errs)} differences)")
          + f"; {self_test.count} mutations caught")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
