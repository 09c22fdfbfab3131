# SPDX-License-Identifier: GPL-2.0-or-later
"""Whole-cluster checkpoint and restart (docs/checkpoint.rst), through the
real launcher: real clusters run with 'scripts/tempest run', are
checkpointed mid-run with 'scripts/tempest checkpoint' (or SIGUSR1 to
the launcher), killed, and started again with 'scripts/tempest run
--restore'; the restored program must finish with the result of an
uninterrupted run.  The refusals are tested too: a checkpoint mixed from
two, and a node saved alone.  Run by 'scripts/tempest test --suite ckpt'
(testing.suite_ckpt).
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TEMPEST = os.path.join(ROOT, "scripts", "tempest")
HERE = os.path.join(ROOT, "tests", "ckpt")
GUEST = os.path.join(ROOT, "build", "guest", "guest")
RADIX = os.path.join(GUEST, "examples", "radix-sort", "radix.elf")
JACOBI = os.path.join(GUEST, "examples", "dsm", "jacobi.elf")
LATE = os.path.join(ROOT, "build", "guest", "tests", "guest",
                    "strata_late.elf")
CHAN_HW = os.path.join(ROOT, "build", "guest", "tests", "guest",
                       "chan_hw.elf")
BFLOOD = os.path.join(ROOT, "build", "guest", "tests", "guest",
                      "strata_bflood.elf")


class Failure(Exception):
    pass


def expect(cond, what, out=""):
    if not cond:
        raise Failure(what + ("\n" + out[-4000:] if out else ""))


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def logs(run_dir):
    # hang.txt: a run that timed out, what each node's threads were doing.
    return "".join(_read(os.path.join(run_dir, f))
                   for f in sorted(os.listdir(run_dir))
                   if re.fullmatch(r"node\d+\.log|hang\.txt", f))


def tempest(*args, timeout=180):
    """scripts/tempest ARGS to its end: (exit status, output)."""
    r = subprocess.run([sys.executable, TEMPEST] + list(args),
                       capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout + r.stderr


def launch(run_dir, nodes, program, args=(), opts=()):
    """A run in the background (its own session: the test kills it)."""
    shutil.rmtree(run_dir, ignore_errors=True)
    return subprocess.Popen(
        [sys.executable, TEMPEST, "run", "-n", str(nodes), "--quiet",
         "--timeout", "300", "--run-dir", run_dir] + list(opts)
        + [program] + list(args),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        stdin=subprocess.DEVNULL, start_new_session=True)


def wait_qmp(run_dir, nodes, limit=60):
    """Until every node's QMP socket answers (the cluster is up)."""
    deadline = time.monotonic() + limit
    for i in range(nodes):
        path = os.path.join(run_dir, f"node{i}.qmp")
        while True:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(path)
                s.close()
                break
            except OSError:
                s.close()
                expect(time.monotonic() < deadline,
                       f"node {i}'s QMP socket never answered")
                time.sleep(0.05)


def kill_run(p):
    """The cluster killed: SIGKILL to the launcher (its watchdog kills the
    nodes), as a batch system ending a job would."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    time.sleep(0.5)


def restore(ckpt, run_dir):
    shutil.rmtree(run_dir, ignore_errors=True)
    return tempest("run", "--restore", ckpt, "--run-dir", run_dir,
                   "--quiet", "--timeout", "240")


def qmp_stop(run_dir, nodes):
    """Every node paused ('stop' through its QMP socket, qmp() below)."""
    for i in range(nodes):
        rsp = qmp(os.path.join(run_dir, f"node{i}.qmp"), ("stop", {}))[0]
        expect("return" in rsp, f"node {i}: stop: {rsp}")


def wait_log(run_dir, pattern, limit=120):
    """Until pattern is in the run's logs."""
    deadline = time.monotonic() + limit
    while not re.search(pattern, logs(run_dir), re.M):
        expect(time.monotonic() < deadline,
               f"no {pattern!r} in the logs after {limit} s", logs(run_dir))
        time.sleep(0.05)


def checkpoint_mid_run(runs, name, nodes, program, args, opts, delay,
                       done_re, stop=False, ready=None):
    """Run, checkpoint after delay s (the program must not have finished:
    done_re not yet in the logs), kill the cluster, restore it; returns
    (the restored run's directory, the restore's output).

    With ready (a pattern the program prints as it goes), the delay runs
    from when ready is in the logs, not from the start: the cut is where
    the program has got to, whatever the host's speed.  Either way the
    test pauses every node itself before 'tempest checkpoint' (which
    finds them paused, and lets them go on, or ends them with stop, once
    saved), so that the program cannot end while that command starts: a
    Python process on a host whose CPUs the nodes keep busy took 3 to 11
    s to start here.  A running cluster is checkpointed by the launcher
    in case_jacobi_8 and by 'tempest checkpoint' in case_moved and
    case_mixed_refused."""
    run_dir = os.path.join(runs, name)
    ckpt = os.path.join(runs, name + "-ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    p = launch(run_dir, nodes, program, args, opts)
    try:
        wait_qmp(run_dir, nodes)
        if ready:
            wait_log(run_dir, ready)
        time.sleep(delay)
        qmp_stop(run_dir, nodes)
        expect(not re.search(done_re, logs(run_dir)),
               f"the program had finished before its checkpoint ({delay} s"
               + (f" after {ready!r}" if ready else "") + "): not mid-run",
               logs(run_dir))
        rc, out = tempest("checkpoint", run_dir, "-o", ckpt,
                          *(["--stop"] if stop else []))
        expect(rc == 0, "checkpoint failed", out)
    finally:
        kill_run(p)
    m = json.load(open(os.path.join(ckpt, "manifest.json")))
    expect(m["nodes"] == nodes and len(m["sizes"]) == nodes,
           "manifest.json does not describe the cluster", json.dumps(m))
    again = os.path.join(runs, name + "-restored")
    rc, out = restore(ckpt, again)
    expect(rc == 0, f"the restored run ended {rc}", out + logs(again))
    expect("restored from" in out, "the launcher did not say it restored",
           out)
    return again, out, m


def radix_reference(runs, name, nodes, args):
    """The checksums of an uninterrupted radix sort (run dir runs/name)."""
    ref = os.path.join(runs, name)
    rc, out = tempest("run", "-n", str(nodes), "--mem", "64M", "--quiet",
                      "--run-dir", ref, RADIX, *args)
    expect(rc == 0, "the uninterrupted run failed", out)
    sums = re.search(r"checksums (.*) match", logs(ref))
    expect(sums, "the uninterrupted run printed no checksums", logs(ref))
    return sums.group(1)


def expect_radix_sums(run_dir, sums):
    """The radix sort of run_dir sorted, with checksums sums."""
    got = re.search(r"radix-sort: .* (sorted) .* checksums (.*) match",
                    logs(run_dir))
    expect(got and got.group(2) == sums,
           f"restored: {got and got.group(2)}, uninterrupted: {sums}",
           logs(run_dir))


def case_radix_16(runs):
    """A Strata radix sort on 16 nodes (collectives, active messages and
    block transfers), checkpointed mid-run, the cluster killed and
    restored: it finishes sorted with the checksums of an uninterrupted
    run (docs/checkpoint.rst, "What is saved")."""
    args = ["300000", "1"]
    sums = radix_reference(runs, "radix-ref", 16, args)
    again, out, m = checkpoint_mid_run(runs, "radix", 16, RADIX, args,
                                       ["--mem", "64M"], 1.5,
                                       r"radix-sort: \d+ nodes")
    expect_radix_sums(again, sums)


def case_jacobi_8(runs):
    """The DSM Jacobi (tagged memory, block faults, protocol messages) on
    8 nodes, saved by SIGUSR1 to the launcher (Slurm's warning before a
    time limit: checkpoint, then end), restored: the same grid as the
    sequential run and as an uninterrupted one (its sum)."""
    # 3,000 sweeps: 5.8 s on the VM of 2026-12-02, against the 1.5 s
    # after which SIGUSR1 cuts it (1,200 took 2.8 s: a host 1.6 times as
    # fast would have ended it first).
    args = ["dsm", "126", "3000"]
    ref = os.path.join(runs, "jacobi-ref")
    rc, out = tempest("run", "-n", "8", "--mem", "64M", "--quiet",
                      "--run-dir", ref, JACOBI, *args)
    expect(rc == 0, "the uninterrupted run failed", out)
    ref_sum = re.search(r"jacobi dsm ok: .* sum (\S+)", logs(ref))
    expect(ref_sum, "the uninterrupted run printed no sum", logs(ref))
    run_dir = os.path.join(runs, "jacobi")
    p = launch(run_dir, 8, JACOBI, args, ["--mem", "64M"])
    wait_qmp(run_dir, 8)
    time.sleep(1.5)
    os.killpg(p.pid, signal.SIGUSR1)
    try:
        out, _ = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        kill_run(p)
        raise Failure("the run did not end after SIGUSR1")
    expect(p.returncode == 0 and "checkpointed to" in out,
           f"SIGUSR1: the run ended {p.returncode}", out)
    expect("jacobi dsm ok" not in logs(run_dir),
           "the program had finished before SIGUSR1: not mid-run")
    ckpt = os.path.join(run_dir, "ckpt-usr1")
    again = os.path.join(runs, "jacobi-restored")
    rc, out = restore(ckpt, again)
    expect(rc == 0, f"the restored run ended {rc}", out + logs(again))
    got = re.search(r"jacobi dsm ok: .* sum (\S+)", logs(again))
    expect(got and got.group(1) == ref_sum.group(1),
           f"restored: {got and got.group(1)}, uninterrupted "
           f"{ref_sum.group(1)}", logs(again))


def case_late_8(runs):
    """Strata collectives with one node late in turn (strata_late: the
    others wait in a collective most of the time), on 8 nodes,
    checkpointed mid-run and restored: on shared memory collectives are
    pending in the shared combining area at the cut; the restored cluster
    combines them on the tree, then in the area again (COLL_SHARED), and
    every reduction and scan is right (docs/checkpoint.rst, "What is
    saved"; docs/strata.rst, "Combining on shared counters")."""
    again, out, m = checkpoint_mid_run(runs, "late", 8, LATE, ["40"],
                                       ["--mem", "64M"], 0,
                                       r"strata_late ok",
                                       ready=r"^strata_late: round 10 ")
    text = logs(again)
    expect(len(re.findall(r"^strata_late ok", text, re.M)) == 8,
           "the restored run did not end ok on every node", text)
    expect(re.search(r"node 7: 40 rounds; [1-9]\d* collectives combined "
                     r"in the shared area", text),
           "the restored run did not combine in the shared area", text)


def case_bflood_4(runs):
    """Strata broadcasts under pressure (strata_bflood: node 0 floods
    words to slow receivers, 30 rounds of 100,000), on 4 nodes that halt
    at once, checkpointed mid-run and restored: on shared memory the words
    come by the combining area's ring, which is not saved, so each node
    reads it before its cut and node 0 saves the words it holds for room;
    the restored cluster sends them down the tree, then by a new ring.
    Every word arrives in order and none is lost (docs/strata.rst,
    "Broadcasts on shared memory")."""
    again, out, m = checkpoint_mid_run(runs, "bflood", 4, BFLOOD, ["30"],
                                       ["--mem", "64M", "--spin-us", "0"],
                                       0, r"strata_bflood ok",
                                       ready=r"^strata_bflood: round 2 ")
    text = logs(again)
    expect(len(re.findall(r"^strata_bflood ok", text, re.M)) == 4,
           "the restored run did not end ok on every node", text)


def storm_program(runs):
    os.makedirs(os.path.join(runs, "bin"), exist_ok=True)
    exe = os.path.join(runs, "bin", "xfer_storm.elf")
    rc, out = tempest("cc", "-O2", "-Wall", "-Werror", "-o", exe,
                      os.path.join(HERE, "xfer_storm.c"))
    expect(rc == 0, "cc xfer_storm.c failed", out)
    return exe


def case_xfer_storm(runs):
    """Four checkpoints, at four points of a run in which 64 MiB blocks
    move between 2 nodes under a storm of active messages, each restored:
    every word of every block and every request and reply arrived exactly
    once and in order (the program checks) and the checksums are an
    uninterrupted run's.  How many transfers each save held (its trace)
    is reported."""
    exe = storm_program(runs)
    args = ["20"]
    opts = ["--mem", "256M"]
    ref = os.path.join(runs, "storm-ref")
    rc, out = tempest("run", "-n", "2", "--quiet", "--run-dir", ref,
                      *opts, exe, *args)
    expect(rc == 0, "the uninterrupted run failed", out + logs(ref))
    ref_sums = sorted(re.findall(r"xfer_storm ok: .*", logs(ref)))
    expect(len(ref_sums) == 2, "the uninterrupted run printed no result",
           logs(ref))
    tries = []
    for k in range(4):
        name = f"storm{k}"
        again, out, m = checkpoint_mid_run(
            runs, name, 2, exe, args, opts + [
                "--qemu-arg=-d", "--qemu-arg=trace:tempest_nc_ckpt_save"],
            1.2 + 0.35 * k, r"xfer_storm ok", stop=True)
        saved = logs(os.path.join(runs, name))
        under_way = re.findall(r"(\d+) transfers under way", saved)
        got = sorted(re.findall(r"xfer_storm ok: .*", logs(again)))
        expect(got == ref_sums, f"restored: {got}, uninterrupted: "
               f"{ref_sums}", logs(again))
        tries.append(sum(int(n) for n in under_way))
    # Whether a save holds a transfer depends on where the host's
    # scheduling put the cut (the drain lets what is in flight land):
    # reported, not asserted; what is asserted is exact delivery after
    # each of the four restores.
    return f"transfers under way at the 4 saves: {tries}"


def case_chan_split(runs):
    """Channel data copied in halves (docs/chan.rst, "The copy in
    halves": on shared memory each node's controller copies half of a
    long message) checkpointed at three points of a run of 300 round
    trips of 128 KiB to 1.1 MiB each way, each restored: every message
    arrives whole, once and in order (chan_hw split checks every byte
    and the guard bytes around it), and XFER_PULL, which is saved,
    counts exactly the second halves across the cut: the same result as
    an uninterrupted run.  A half never waits in a save: the receiver
    copies its half when the SPLIT frame lands, which the drain lets
    happen."""
    args = ["split", "300"]
    opts = ["--mem", "256M"]
    ref = os.path.join(runs, "chansplit-ref")
    rc, out = tempest("run", "-n", "2", "--quiet", "--run-dir", ref,
                      *opts, CHAN_HW, *args)
    expect(rc == 0, "the uninterrupted run failed", out + logs(ref))
    want = sorted(re.findall(r"chan_hw split ok: .*", logs(ref)))
    expect(len(want) == 2 and "pulled 0" not in want[0],
           "the uninterrupted run split nothing", logs(ref))
    for k in range(3):
        again, out, m = checkpoint_mid_run(
            runs, f"chansplit{k}", 2, CHAN_HW, args, opts, 1.0 + 0.6 * k,
            r"chan_hw split ok", stop=True)
        got = sorted(re.findall(r"chan_hw split ok: .*", logs(again)))
        expect(got == want, f"restored: {got}, uninterrupted: {want}",
               logs(again))
    return f"uninterrupted and restored: {want}"


def case_mixed_refused(runs):
    """A checkpoint one of whose nodes comes from another checkpoint is
    refused before any node runs, naming the node (docs/checkpoint.rst,
    "Restoring")."""
    run_dir = os.path.join(runs, "mixed")
    # A program that outlasts both checkpoints on any host (the restore is
    # refused before it runs): a radix sort could end between them.
    p = launch(run_dir, 4, JACOBI, ["dsm", "126", "100000"],
               ["--mem", "64M"])
    a, b = (os.path.join(runs, f"mixed-{x}") for x in "ab")
    try:
        wait_qmp(run_dir, 4)
        time.sleep(0.5)
        for d in (a, b):
            shutil.rmtree(d, ignore_errors=True)
            rc, out = tempest("checkpoint", run_dir, "-o", d)
            expect(rc == 0, "checkpoint failed", out)
            time.sleep(0.3)
    finally:
        kill_run(p)
    shutil.copy(os.path.join(b, "node2.vmstate"),
                os.path.join(a, "node2.vmstate"))
    rc, out = restore(a, os.path.join(runs, "mixed-restored"))
    expect(rc != 0 and "node(s) 2 hold the state of another checkpoint" in
           out, f"a mixed checkpoint was not refused (exit {rc})", out)


def qmp(path, *cmds):
    """Run QMP commands on one socket; the answers, in order."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    f = s.makefile("rw")
    f.readline()
    out = []
    for c in (("qmp_capabilities", {}),) + cmds:
        f.write(json.dumps({"execute": c[0], "arguments": c[1]}) + "\n")
        f.flush()
        while True:
            rsp = json.loads(f.readline())
            if "return" in rsp or "error" in rsp:
                out.append(rsp)
                break
    s.close()
    return out[1:]


def case_node_alone_refused(runs):
    """A node of a running cluster cannot be saved alone: migrate is
    refused by its blocker, which names the checkpoint; checkpoint mode
    is refused while the node runs; the cluster is unharmed and ends 0."""
    run_dir = os.path.join(runs, "alone")
    p = launch(run_dir, 2, RADIX, ["200000", "1"], ["--mem", "64M"])
    try:
        wait_qmp(run_dir, 2)
        path = os.path.join(run_dir, "node1.qmp")
        mig, mode = qmp(path, ("migrate", {"uri": "file:" + os.path.join(
                            runs, "alone.vmstate")}),
                        ("qom-set", {"path": "/machine/node-controller",
                                     "property": "checkpoint",
                                     "value": True}))
        expect("error" in mig and "checkpoint" in mig["error"]["desc"],
               f"migrate of one node was not refused: {mig}")
        expect("error" in mode and "stop the VM" in mode["error"]["desc"],
               f"checkpoint mode of a running node: {mode}")
        out, _ = p.communicate(timeout=120)
    finally:
        kill_run(p)
    expect(p.returncode == 0, f"the cluster ended {p.returncode}", out)


def case_moved(runs):
    """A checkpoint restored elsewhere (docs/checkpoint.rst, "Other
    hosts"): a radix sort on 8 nodes run from a program that is then
    deleted, checkpointed with --stop, the checkpoint's directory moved,
    and restored from there in a network namespace of its own (as root;
    else in this one): the nodes start from the checkpoint's copy of the
    program and finish with the uninterrupted run's checksums."""
    # 8 nodes of 500,000 keys (at most 524,287 a node), so that the
    # checkpoint taken 0.5 s after the nodes answer QMP finds the sort
    # mid-run on a loaded host (4 nodes of 400,000 could finish in 2.1 s,
    # and a loaded CI host's checkpoint then came after the end).
    args = ["500000", "1"]
    sums = radix_reference(runs, "moved-ref", 8, args)
    bin_dir = os.path.join(runs, "moved-bin")
    os.makedirs(bin_dir, exist_ok=True)
    prog = os.path.join(bin_dir, "radix.elf")
    shutil.copyfile(RADIX, prog)
    run_dir = os.path.join(runs, "moved")
    ckpt = os.path.join(runs, "moved-ckpt")
    far = os.path.join(runs, "moved-far")
    for d in (ckpt, far):
        shutil.rmtree(d, ignore_errors=True)
    p = launch(run_dir, 8, prog, args, ["--mem", "64M"])
    try:
        wait_qmp(run_dir, 8)
        time.sleep(0.5)
        rc, out = tempest("checkpoint", run_dir, "-o", ckpt, "--stop")
        expect(rc == 0, "checkpoint failed", out)
        expect(not re.search(r"radix-sort: \d+ nodes", logs(run_dir)),
               "the program had finished before its checkpoint: not "
               "mid-run", logs(run_dir))
    finally:
        kill_run(p)
    os.unlink(prog)
    os.rename(ckpt, far)
    again = os.path.join(runs, "moved-restored")
    shutil.rmtree(again, ignore_errors=True)
    cmd = [sys.executable, TEMPEST, "run", "--restore", far, "--run-dir",
           again, "--quiet", "--timeout", "240"]
    netns = os.geteuid() == 0 and shutil.which("unshare")
    if netns:
        cmd = ["unshare", "--net"] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       stdin=subprocess.DEVNULL)
    out = r.stdout + r.stderr
    expect(r.returncode == 0, f"the restored run ended {r.returncode}",
           out + logs(again))
    expect("checkpoint's copy" in out,
           "the restore did not say it used the checkpoint's program", out)
    expect_radix_sums(again, sums)
    return ("restored in a network namespace of its own" if netns else
            "restored in this network namespace (not root)")


CASES = [case_radix_16, case_jacobi_8, case_late_8, case_bflood_4,
         case_xfer_storm, case_chan_split,
         case_mixed_refused, case_node_alone_refused, case_moved]
