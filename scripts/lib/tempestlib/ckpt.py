# SPDX-License-Identifier: GPL-2.0-or-later
"""Whole-cluster checkpoint and restart (docs/checkpoint.rst).

A run's nodes each have a QMP socket in the run directory
(RUN/node<K>.qmp) and the run records how to start them again
(RUN/cluster.json).  checkpoint() brings every node to one quiet cut and
saves each QEMU to CKPT/node<K>.vmstate with QEMU's own migration;
restore_nodes() loads a started cluster from one and lets it go on.
Nothing here but the standard library: a QMP client is a socket and JSON.
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import socket
import time

from .common import StepError, rel, say, write_whole
from .linux import shell_token_path

NC_PATH = "/machine/node-controller"
MANIFEST = "manifest.json"
PROGRAM_COPY = "program.elf"   # the checkpoint's own copy of the program
CLUSTER = "cluster.json"
STOP_FILE = "checkpoint-stop"    # the run ended for this checkpoint
# A Slurm step's checkpoint asked for by 'checkpoint RUN' and its answer.
REQUEST = "checkpoint-request"
RESULT = "checkpoint-result"
# How long a node's QMP socket may take to appear, and a command to answer.
CONNECT_S = 30.0
COMMAND_S = 60.0
# The drain: collections this far apart; the quiet cut is two equal ones.
DRAIN_STEP_S = 0.01


def write_cluster(run_dir, program, args, nodes, smp, mem, cpu, credits,
                  tagmem, spin_us, linux, no_share, extra, restore,
                  fabric=None, tcp=False, hosts=None, forwards=(),
                  slurm=None):
    """RUN/cluster.json: how the run's nodes were started, which a
    checkpoint's manifest extends and a restore (run --restore, node
    --restore) starts them from again; returns it as a dict.  slurm: the
    job step ("JOB.STEP") whose task 0 writes it."""
    info = dict(
        # (A Linux node's program may be a command of its own.)
        program=os.path.abspath(program)
        if os.path.exists(program) or not linux else program,
        args=list(args), nodes=nodes, smp=smp, mem=mem, cpu=cpu,
        credits=credits, tagmem=tagmem, fabric=fabric, tcp=tcp,
        spin_us=spin_us, hosts=hosts, linux=linux, no_share=no_share,
        forwards=list(forwards), extra=list(extra),
        restored_from=restore and os.path.abspath(restore))
    if slurm:
        info["slurm"] = slurm
    with open(os.path.join(run_dir, CLUSTER), "w") as f:
        json.dump(info, f, indent=1)
    return info


def qmp_path(run_dir, index):
    return os.path.join(run_dir, f"node{index}.qmp")


class QMPError(StepError):
    pass


class QMP:
    """A QMP connection to one node: commands in order, events ignored."""

    def __init__(self, path, index, timeout=CONNECT_S,
                 command_timeout=COMMAND_S):
        self.index = index
        self.path = path
        self.command_timeout = command_timeout
        deadline = time.monotonic() + timeout
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.connect(path)
                break
            except OSError as e:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise QMPError(f"node {index}: no QMP at {rel(path)} "
                                   f"after {timeout:g} s ({e.strerror})")
                time.sleep(0.02)
        self.sock.settimeout(command_timeout)
        self.buf = b""
        self._read()                        # the greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        while b"\n" not in self.buf:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise QMPError(f"node {self.index}: QMP did not answer in "
                               f"{self.command_timeout:g} s")
            if not data:
                raise QMPError(f"node {self.index}: QMP closed (the node "
                               "ended?)")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def cmd(self, name, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            rsp = self._read()
            if "return" in rsp:
                return rsp["return"]
            if "error" in rsp:
                raise QMPError(f"node {self.index}: {name}: "
                               f"{rsp['error'].get('desc', rsp['error'])}")
            # an event: not ours to handle

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def connect_all(run_dir, nodes, timeout=CONNECT_S):
    return [QMP(qmp_path(run_dir, i), i, timeout) for i in range(nodes)]


def close_all(conns):
    for c in conns:
        c.close()


def status(conn):
    """(tx, rx, reason or '') of a node's ckpt-status."""
    text = conn.cmd("qom-get", path=NC_PATH, property="ckpt-status")
    parts = text.split(" ", 2)
    return int(parts[0]), int(parts[1]), parts[2] if len(parts) > 2 else ""


def drain(conns, timeout):
    """Wait for a quiet cut of the stopped nodes: every node at rest, the
    frames sent and taken cluster-wide equal, and unchanged between two
    collections (a frame taken between them would change a count).
    Returns the number of collections; raises StepError naming the nodes
    that did not get there."""
    deadline = time.monotonic() + timeout
    last = None
    n = 0
    while True:
        sts = [status(c) for c in conns]
        n += 1
        tx = sum(s[0] for s in sts)
        rx = sum(s[1] for s in sts)
        busy = [(c.index, s[2]) for c, s in zip(conns, sts) if s[2]]
        counts = [(s[0], s[1]) for s in sts]
        if not busy and tx == rx and counts == last:
            return n
        last = counts if not busy and tx == rx else None
        if time.monotonic() > deadline:
            if busy:
                why = "; ".join(f"node {i}: {r}" for i, r in busy[:4])
                more = f" (and {len(busy) - 4} more)" if len(busy) > 4 else ""
                raise StepError(f"checkpoint: the cluster did not drain in "
                                f"{timeout:g} s: {why}{more}")
            raise StepError(f"checkpoint: the cluster did not drain in "
                            f"{timeout:g} s: {tx} frames sent, {rx} taken")
        time.sleep(DRAIN_STEP_S)


def links(conn):
    """{peer: [credit0, credit1, allowed0, allowed1, owed0, owed1,
    seq_out0, seq_out1, seq_in0, seq_in1]} of a node's ckpt-links."""
    text = conn.cmd("qom-get", path=NC_PATH, property="ckpt-links")
    out = {}
    for item in text.split():
        peer, vals = item.split(":")
        out[int(peer)] = [int(v) for v in vals.split(",")]
    return out


def check_cut(conns):
    """The cut is consistent between every pair of nodes a and b: what
    a sent b on each network is what b took (sequence numbers), and the
    credit a holds for b is what b allows less what b owes back (the
    rest is in b's queues).  Raises StepError naming the first pair that
    disagrees."""
    ls = {c.index: links(c) for c in conns}
    for a, la in ls.items():
        for b, lb in ls.items():
            if a == b:
                continue
            x, y = la[b], lb[a]
            for net in (0, 1):
                if x[6 + net] != y[8 + net]:
                    raise StepError(f"checkpoint: node {a} sent node {b} "
                                    f"{x[6 + net]} packets on network {net},"
                                    f" node {b} took {y[8 + net]}: not a "
                                    "consistent cut")
                if x[net] != y[2 + net] - y[4 + net]:
                    raise StepError(f"checkpoint: node {a} holds {x[net]} "
                                    f"credits for node {b} on network {net}, "
                                    f"node {b} allows {y[2 + net]} and owes "
                                    f"{y[4 + net]}: not a consistent cut")


def settled(c, deadline):
    """Wait until a node whose migration has ended is out of the run state
    "finish-migrate": QEMU reports the end before its migration thread
    puts the run state back, and until then refuses 'cont' ("Migration is
    not finalized yet")."""
    while c.cmd("query-status").get("status") == "finish-migrate" and \
            time.monotonic() < deadline:
        time.sleep(0.002)


def wait_migration(conns, timeout, what):
    """Poll query-migrate on every node until each has completed.  A node
    that failed is reported once every node's migration has ended and
    settled (or the time is up), so that the caller's 'cont' finds none
    still saving or in "finish-migrate"."""
    deadline = time.monotonic() + timeout
    pending = list(conns)
    failed = None
    while pending:
        still = []
        for c in pending:
            info = c.cmd("query-migrate")
            st = info.get("status", "none")
            if st not in ("completed", "failed", "cancelled"):
                still.append(c)
                continue
            settled(c, deadline)
            if st != "completed" and failed is None:
                failed = (f"{what}: node {c.index}: migration {st}: "
                          f"{info.get('error-desc', 'no reason given')}"
                          " (the node's log says more)")
        pending = still
        if pending and time.monotonic() > deadline:
            raise StepError(failed or
                            f"{what}: node(s) "
                            f"{', '.join(str(c.index) for c in pending)} "
                            f"not done after {timeout:g} s")
        if pending:
            time.sleep(0.01)
    if failed:
        raise StepError(failed)


def checkpoint(run_dir, out_dir=None, stop=False, timeout=30.0,
               attempts=20):
    """Checkpoint the cluster of run_dir into out_dir (default
    RUN/ckpt-<time>) through the nodes' QMP sockets in run_dir; the nodes
    go on unless stop.  Returns out_dir."""
    with open(os.path.join(run_dir, CLUSTER)) as f:
        info = json.load(f)
    out_dir = out_dir or os.path.join(
        run_dir, "ckpt-" + time.strftime("%Y%m%d-%H%M%S"))
    conns = connect_all(run_dir, info["nodes"], timeout=5.0)
    try:
        return checkpoint_nodes(conns, info, run_dir, out_dir, stop,
                                timeout, attempts)
    finally:
        close_all(conns)


def checkpoint_nodes(conns, info, run_dir, out_dir, stop=False,
                     timeout=30.0, attempts=20):
    """Checkpoint the cluster whose nodes conns reach (anything with
    cmd(name, **args) and index: a QMP, or a Slurm task's relay) into
    out_dir; info: the run's cluster.json, which the manifest extends.

    The nodes are stopped; the drain waits for a quiet cut.  A node that
    cannot be at rest while stopped (a message waiting for a buffer its
    guest must post) makes the launcher let the cluster run 50 ms and try
    again, at most attempts times."""
    nodes = info["nodes"]
    if info.get("linux") and not info.get("no_share"):
        raise StepError("checkpoint: these Linux nodes have the project "
                        "and the run directory mounted (9p), which QEMU "
                        "cannot save: run them with --no-share "
                        "(docs/checkpoint.rst)")
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.monotonic()
    for k in range(attempts):
        for c in conns:
            c.cmd("stop")
        try:
            collections = drain(conns, min(timeout, 2.0)
                                if k < attempts - 1 else timeout)
            break
        except StepError:
            if k == attempts - 1:
                raise
            for c in conns:
                c.cmd("cont")
            time.sleep(0.05)
    t_quiet = time.monotonic() - t0
    ckpt_id = random.getrandbits(63) | 1
    entered = []
    try:
        for c in conns:
            c.cmd("qom-set", path=NC_PATH, property="ckpt-id",
                  value=ckpt_id)
            c.cmd("qom-set", path=NC_PATH, property="checkpoint",
                  value=True)
            entered.append(c)
        # Still quiet: nothing moved while the modes were set.
        drain(conns, 1.0)
        check_cut(conns)
        for c in conns:
            path = os.path.abspath(os.path.join(out_dir,
                                                f"node{c.index}.vmstate"))
            c.cmd("migrate", uri=f"file:{path}")
        wait_migration(conns, timeout, "checkpoint")
    except StepError:
        # Each node on its own: one that refuses does not leave the rest
        # in checkpoint mode or stopped (the first error is the one told).
        for c in entered:
            try:
                c.cmd("qom-set", path=NC_PATH, property="checkpoint",
                      value=False)
            except StepError as e:
                say(f"checkpoint: node {c.index}: {e}")
        if not stop:
            for c in conns:
                try:
                    c.cmd("cont")
                except StepError as e:
                    say(f"checkpoint: node {c.index} not resumed: {e}")
        raise
    elapsed = time.monotonic() - t0
    sizes = [os.path.getsize(os.path.join(out_dir, f"node{i}.vmstate"))
             for i in range(nodes)]
    # The program goes with the checkpoint: restored where its path
    # does not exist (another host), the nodes start from this copy.
    # (A Linux node's program may be a command of its own, not a file.)
    copy = os.path.join(out_dir, PROGRAM_COPY)
    extra = {}
    if os.path.isfile(info["program"]):
        shutil.copyfile(info["program"], copy)
        extra = dict(program_copy=PROGRAM_COPY,
                     program_sha256=file_sha256(copy))
    if info.get("linux"):
        # The restored nodes hold their shell tokens: the new run's files
        # must be these (docs/linux.rst, "Logging in").
        for i in range(nodes):
            src = shell_token_path(run_dir, i)
            if os.path.exists(src):
                shutil.copy2(src, out_dir)
    manifest = dict(info, ckpt_id=ckpt_id, run_dir=os.path.abspath(
        run_dir), taken=time.strftime("%Y-%m-%d %H:%M:%S"),
        sizes=sizes, seconds=round(elapsed, 3),
        drain_seconds=round(t_quiet, 3), collections=collections, **extra)
    with open(os.path.join(out_dir, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
    if stop:
        with open(os.path.join(run_dir, STOP_FILE), "w") as f:
            f.write(os.path.abspath(out_dir) + "\n")
        for c in conns:
            try:
                c.cmd("quit")
            except StepError:
                pass        # it went while answering
    else:
        for c in conns:
            c.cmd("qom-set", path=NC_PATH, property="checkpoint",
                  value=False)
            c.cmd("cont")
    say(f"checkpoint: {nodes} nodes saved to {rel(out_dir)} in "
        f"{elapsed:.2f} s (quiet after {t_quiet:.2f} s, {collections} "
        f"collections; {sum(sizes) / nodes / 1048576:.1f} MiB a node)"
        + ("; the nodes were stopped" if stop else "; the nodes go on"))
    return out_dir


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def restore_program(ckpt_dir, m):
    """The program a restore starts the nodes with: the recorded path if
    it holds the same file, else the checkpoint's copy (a checkpoint moved
    to another host, or the program rebuilt since).  The nodes' RAM comes
    from the checkpoint either way; QEMU loads the file first."""
    path, want = m["program"], m.get("program_sha256")
    if not want or (os.path.exists(path) and file_sha256(path) == want):
        return path
    copy = os.path.join(ckpt_dir, m.get("program_copy", PROGRAM_COPY))
    if not os.path.exists(copy) or file_sha256(copy) != want:
        raise StepError(f"run --restore: {rel(path)} is not the program "
                        f"checkpointed, and {rel(copy)} is missing or "
                        "changed")
    say(f"run --restore: {rel(path)} is not here or differs: starting from "
        f"the checkpoint's copy, {rel(copy)}")
    return os.path.abspath(copy)


def read_manifest(ckpt_dir):
    path = os.path.join(ckpt_dir, MANIFEST)
    try:
        with open(path) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        raise StepError(f"run --restore: {rel(path)}: {e}")
    for i in range(m["nodes"]):
        if not os.path.exists(os.path.join(ckpt_dir, f"node{i}.vmstate")):
            raise StepError(f"run --restore: {rel(ckpt_dir)} has no "
                            f"node{i}.vmstate")
    return m


def restore_nodes(run_dir, ckpt_dir, manifest, alive, timeout=60.0):
    """Load every node of a cluster started with -incoming defer from
    ckpt_dir, check they all hold the same checkpoint, and let them go.
    alive(): False once a node has ended (its log says why)."""
    conns = connect_all(run_dir, manifest["nodes"])
    try:
        return restore_conns(conns, ckpt_dir, manifest, alive, timeout)
    finally:
        close_all(conns)


def restore_conns(conns, ckpt_dir, manifest, alive, timeout=60.0):
    """restore_nodes() through conns (QMPs, or a Slurm step's relays)."""
    t0 = time.monotonic()
    for c in conns:
        path = os.path.abspath(os.path.join(ckpt_dir,
                                            f"node{c.index}.vmstate"))
        c.cmd("migrate-incoming", uri=f"file:{path}")
    deadline = time.monotonic() + timeout
    for c in conns:
        while True:
            st = c.cmd("query-migrate").get("status", "none")
            if st == "completed":
                break
            if st in ("failed", "cancelled"):
                raise StepError(f"restore: node {c.index} could not "
                                "load its state (its log says why)")
            if not alive() or time.monotonic() > deadline:
                raise StepError(f"restore: node {c.index} did not load "
                                "its state (its log says why)")
            time.sleep(0.01)
    ids = {c.index: c.cmd("qom-get", path=NC_PATH, property="ckpt-id")
           for c in conns}
    bad = sorted(i for i, v in ids.items() if v != manifest["ckpt_id"])
    if bad:
        raise StepError("restore: node(s) "
                        f"{', '.join(map(str, bad))} hold the state of "
                        "another checkpoint (ckpt-id "
                        f"{ids[bad[0]]:#x}, the manifest says "
                        f"{manifest['ckpt_id']:#x}): refused")
    for c in conns:
        c.cmd("cont")
    return time.monotonic() - t0


def checkpoint_parser(add_help=True):
    p = argparse.ArgumentParser(
        prog="tempest checkpoint", add_help=add_help,
        description="Checkpoint a running cluster (scripts/tempest run) "
        "at one consistent cut: every node stopped, nothing in flight, "
        "each QEMU saved to a file.  Restart it with 'scripts/tempest run "
        "--restore CKPT'.")
    p.add_argument("run_dir", help="the run's directory (build/runs/...)")
    p.add_argument("-o", "--out", default=None, metavar="CKPT",
                   help="where the checkpoint goes (default: "
                   "RUN_DIR/ckpt-<time>)")
    p.add_argument("--stop", action="store_true",
                   help="end the nodes once saved (default: they go on)")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds the drain and the saves may take "
                   "(default 30)")
    return p


def write_json(path, obj):
    """obj to path, whole or not at all."""
    write_whole(path, json.dumps(obj))


def checkpoint_cli(args):
    try:
        with open(os.path.join(args.run_dir, CLUSTER)) as f:
            info = json.load(f)
    except (OSError, ValueError) as e:
        raise StepError(f"checkpoint: {rel(args.run_dir)} is not a run's "
                        f"directory ({CLUSTER}: {e})")
    if info.get("slurm"):
        # A Slurm step's nodes are reached by its task 0 (docs/
        # checkpoint.rst, "Slurm steps").
        from . import slurm
        slurm.request_checkpoint(args.run_dir, info, args.out, args.stop,
                                 args.timeout)
        return 0
    checkpoint(args.run_dir, args.out, args.stop, args.timeout)
    return 0
