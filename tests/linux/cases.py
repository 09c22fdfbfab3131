# SPDX-License-Identifier: GPL-2.0-or-later
"""Linux nodes (docs/linux.rst), through the real launcher.

Each case runs 'scripts/tempest run --linux' as a user would (a separate
process, real QEMUs booting Debian's kernel, real consoles) and checks its
exit status, its summary, what it streamed with '[node K]' prefixes, the
nodes' logs, what a program did with /dev/tempest0, and what crossed the
user network and the 9p share.  Run by
'scripts/tempest test --suite linux' (testing.suite_linux).
"""

import os
import re
import secrets
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TEMPEST = os.path.join(ROOT, "scripts", "tempest")
HERE = os.path.join(ROOT, "tests", "linux")
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))


def _read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def launch(run_dir, nodes, program, args=(), opts=(), timeout=120):
    shutil.rmtree(run_dir, ignore_errors=True)
    return subprocess.Popen(
        [sys.executable, TEMPEST, "run", "--linux", "-n", str(nodes),
         "--timeout", str(timeout), "--run-dir", run_dir] + list(opts)
        + [program] + list(args),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL)


class Failure(Exception):
    pass


def expect(cond, what, out=""):
    if not cond:
        raise Failure(what + ("\n" + out if out else ""))


def linux_program(runs, name, plain=False):
    """tests/linux/NAME.c built with 'scripts/tempest cc --linux' (with
    --plain: glibc alone, no Tempest runtime)."""
    os.makedirs(os.path.join(runs, "bin"), exist_ok=True)
    exe = os.path.join(runs, "bin", name)
    r = subprocess.run([sys.executable, TEMPEST, "cc", "--linux"] +
                       (["--plain"] if plain else []) + ["-O2",
                        "-Wall", "-Werror", "-o", exe,
                        os.path.join(HERE, f"{name}.c")],
                       capture_output=True, text=True)
    expect(r.returncode == 0, "cc --linux failed", r.stdout + r.stderr)
    return exe


def hello_program(runs):
    return linux_program(runs, "hello")


def case_hello(runs):
    """Four Linux nodes each run the program and print what their kernel
    command line says (docs/linux.rst, "Programs"); the run ends 0 only
    when every node's program exited 0 ("Exit status")."""
    exe = hello_program(runs)
    run_dir = os.path.join(runs, "hello")
    p = launch(run_dir, 4, exe, opts=["--smp", "2"])
    out, err = p.communicate()
    both = out + err
    expect(p.returncode == 0, f"exit {p.returncode}", both)
    expect(re.search(r"run: 4 nodes exited 0", err), "no summary", both)
    expect("4/4 Linux nodes running the program" in err,
           "no boot progress line", both)
    for k in range(4):
        line = (rf"\[node {k}\] hello from Linux node {k} of 4: 2 CPUs "
                r"online, kernel \S+-arm64")
        expect(re.search(line, out), f"node {k}: no hello line", both)
        expect(re.search(line[len(rf"\[node {k}\] "):],
                         _read(os.path.join(run_dir, f"node{k}.log"))),
               f"node {k}: no hello line in its log", both)


def case_devnode(runs):
    """The node controller from user space (docs/linux.rst, "The device
    from user space"): /init loads tempest.ko on every node and finds
    /dev/tempest0; tests/linux/devnode.c, on each of 2 nodes, checks the
    device's mode, uses it as an unprivileged user (one open at a time,
    the registers, the windows mmap refuses, tagged memory at VA == PA,
    interrupts through read, poll and write) and exits 0 only if every
    check passed."""
    exe = linux_program(runs, "devnode", plain=True)
    run_dir = os.path.join(runs, "devnode")
    p = launch(run_dir, 2, exe, opts=["--smp", "2"])
    out, err = p.communicate()
    both = out + err
    expect("NO /dev/tempest0" not in out, "/init found no /dev/tempest0",
           both)
    fails = re.findall(r"^\[node \d\] devnode: FAIL: .*$", out, re.M)
    expect(not fails, "; ".join(fails[:3]), both)
    expect(p.returncode == 0, f"exit {p.returncode}", both)
    for k in range(2):
        expect(re.search(rf"^\[node {k}\] devnode: node {k}: [1-9]\d* "
                         r"passed, 0 failed$", out, re.M),
               f"node {k}: no summary line", both)


def case_exit_status(runs):
    """A program's exit status is its node's (docs/linux.rst, "Exit
    status"): node 1 exits 3, so the run fails with 3 and names node 1;
    the others exited 0 or were stopped."""
    exe = hello_program(runs)
    run_dir = os.path.join(runs, "exit-status")
    p = launch(run_dir, 4, exe, ["exit-on", "1", "3"])
    out, err = p.communicate()
    both = out + err
    expect(p.returncode == 3, f"exit {p.returncode}, wanted 3", both)
    expect(re.search(r"node 1 failed with status 3", err),
           "summary does not name node 1 and status 3", both)
    expect("[node 1] node 1 exits 3" in out, "node 1 did not say so", both)


class OneLine(threading.Thread):
    """A host server on 127.0.0.1 that reads one line from one client."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.sock.settimeout(120)
        self.port = self.sock.getsockname()[1]
        self.line = None

    def run(self):
        try:
            conn, _ = self.sock.accept()
            with conn, conn.makefile("r") as f:
                self.line = f.readline().strip()
        except OSError:
            pass
        finally:
            self.sock.close()


def forwarded_port(run_dir, node, guest, p):
    """The host port of node's guest port, from the run's ports.txt."""
    while p.poll() is None:
        m = re.search(rf"node {node} tcp {guest} 127\.0\.0\.1:(\d+)",
                      _read(os.path.join(run_dir, "ports.txt")))
        if m:
            return int(m.group(1))
        time.sleep(0.1)
    return None


def case_network(runs):
    """User networking and the shared directory (docs/linux.rst,
    "Network" and "Files"): node 2 connects to the host at 10.0.2.2; the
    host fetches a page from node 2's port 7000 through the port the
    launcher forwards (run --forward); node 2 reads a file the host put in
    the run directory and writes one the host reads."""
    run_dir = os.path.join(runs, "network")
    token = secrets.token_hex(8)
    server = OneLine()
    server.start()
    # Written before the run: the run directory is made by launch(), so
    # the file goes in right after, before node 2 can look for it.
    p = launch(run_dir, 4, os.path.join(HERE, "net.sh"),
               [str(server.port), token], opts=["--forward", "7000"])
    try:
        for _ in range(100):
            if os.path.isdir(run_dir):
                break
            time.sleep(0.05)
        with open(os.path.join(run_dir, "from-host"), "w") as f:
            f.write(f"host wrote {token}\n")
        port = forwarded_port(run_dir, 2, 7000, p)
        expect(port is not None, "no forwarded port for node 2")
        page, last = None, None
        while p.poll() is None and page is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/",
                                            timeout=10) as r:
                    page = r.read().decode()
            except OSError as e:
                last = e        # node 2's server is not up yet
                time.sleep(0.5)
        # The share, the other way, once node 2 wrote it.
        answer = ""
        while p.poll() is None and not answer.endswith("\n"):
            answer = _read(os.path.join(run_dir, "from-node"))
            time.sleep(0.2)
        open(os.path.join(run_dir, "done"), "w").close()
        out, err = p.communicate(timeout=150)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    both = out + err
    expect(p.returncode == 0, f"exit {p.returncode}", both)
    expect(page == f"node 2 serves {token}\n",
           f"host -> node 2:7000 got {page!r} (last error {last})", both)
    server.join(5)
    expect(server.line == f"node 2 says {token}",
           f"node 2 -> host 10.0.2.2 got {server.line!r}", both)
    expect(answer == f"node 2 read: host wrote {token}\n",
           f"node 2's file in the run directory: {answer!r}", both)


def case_shell(runs):
    """The shell service (docs/linux.rst, "Logging in"): 'scripts/tempest
    ssh 1 CMD' runs CMD on node 1 of a running cluster and returns its
    output and status; a connection without node 1's token (none, a
    guess, node 0's) gets no shell."""
    run_dir = os.path.join(runs, "shell")
    p = launch(run_dir, 2, "sleep", ["600"])
    try:
        port = forwarded_port(run_dir, 1, 23, p)
        expect(port is not None, "no shell port for node 1")
        r = subprocess.run([sys.executable, TEMPEST, "ssh", "--run-dir",
                            run_dir, "1", "hostname; cat /proc/cmdline; "
                            "exit 7"],
                           capture_output=True, text=True, timeout=120)
        # Anyone else on this host reaches the port but not a shell: the
        # login wants the node's token (a file of this user's only).
        mode = os.stat(os.path.join(run_dir, "node1.shell-token")).st_mode
        expect(mode & 0o077 == 0, f"the token file is {oct(mode)}")
        from tempestlib import nodeshell
        for guess in ("", "0" * 32, nodeshell.shell_token(0, run_dir)):
            t = nodeshell.Telnet(("127.0.0.1", port))
            t.write(guess.encode() + b"\nhostname; echo ran-$((6*7))\n")
            got = t.read_until()
            t.sock.close()
            expect(b"not this node's shell token" in got and
                   b"ran-42" not in got,
                   f"a wrong token ({guess[:8]!r}...) was let in",
                   got.decode(errors="replace"))
    finally:
        p.terminate()
        out, err = p.communicate(timeout=30)
    expect(r.returncode == 7, f"ssh exit {r.returncode}, wanted 7",
           r.stdout + r.stderr)
    expect(re.search(r"^node1$", r.stdout, re.M), "no hostname node1",
           r.stdout + r.stderr)
    expect("tempest.node=1 " in r.stdout, "no node 1 command line",
           r.stdout + r.stderr)


def case_panic(runs):
    """A Linux node whose kernel panics is a crashed node (docs/linux.rst,
    "Exit status"): the launcher stops it and the run ends with 134,
    naming the node and the panic, although QEMU itself never exits."""
    run_dir = os.path.join(runs, "panic")
    p = launch(run_dir, 1, "sh", ["-c", "echo c > /proc/sysrq-trigger"])
    out, err = p.communicate()
    both = out + err
    expect(p.returncode == 134, f"exit {p.returncode}, wanted 134", both)
    expect("node 0 failed with status 134" in err and
           "kernel panicked" in err, "summary does not say so", both)
    expect("Kernel panic - not syncing" in
           _read(os.path.join(run_dir, "node0.log")), "no panic in the log",
           both)


def case_poll_kept(runs):
    """A Linux process's rt_cpu_sleep() that only runs an interrupt already
    pending leaves the node controller's POLL as its caller set it
    (docs/linux.rst, "The libraries on Linux"): tests/linux/pollkeep.c
    writes POLL = 1, raises a software interrupt, sleeps (the handler
    runs), then writes a marker (IRQ_ACK = 0) and POLL = 0; QEMU's trace
    of the node controller's register writes must show no POLL write
    between the 1 and the marker.  (The runtime used to write POLL = 0
    there, behind libtempest's back, and peers rang the doorbell instead
    of setting the poll hint.)"""
    exe = linux_program(runs, "pollkeep")
    run_dir = os.path.join(runs, "pollkeep")
    trace = os.path.join(runs, "pollkeep-trace.log")
    if os.path.exists(trace):
        os.unlink(trace)
    p = launch(run_dir, 1, exe,
               opts=["--qemu-arg=-trace",
                     f"--qemu-arg=enable=tempest_nc_write,file={trace}"])
    out, err = p.communicate()
    both = out + err
    expect(p.returncode == 0, f"exit {p.returncode}", both)
    expect("pollkeep: handler ran 1 time(s)" in out, "no handler line", both)
    writes = re.findall(r"tempest_nc_write node 0 offset (0x[0-9a-f]+) "
                        r"value (0x[0-9a-f]+)", _read(trace))
    ack = f"{0x70:#x}"
    poll = f"{0x8c:#x}"
    expect((poll, "0x1") in writes, "no POLL = 1 in the trace",
           "\n".join(map(str, writes)))
    start = writes.index((poll, "0x1"))
    expect((ack, "0x0") in writes[start:], "no marker after POLL = 1",
           "\n".join(map(str, writes)))
    end = start + writes[start:].index((ack, "0x0"))
    between = [w for w in writes[start + 1:end] if w[0] == poll]
    expect(not between, f"POLL written by the runtime: {between}",
           "\n".join(map(str, writes)))


def case_gdb(runs):
    """Debugging a node (docs/linux.rst, "Debugging"): with --gdb 1, node 1
    of a bare-metal pair waits with its CPUs stopped; gdb-multiarch
    attaches, stops at main (a breakpoint in the program's own code),
    and lets it run to the end: the run
    exits 0 with both nodes' greetings."""
    exe = os.path.join(ROOT, "build", "guest", "guest", "examples", "hello",
                       "hello.elf")
    run_dir = os.path.join(runs, "gdb")
    shutil.rmtree(run_dir, ignore_errors=True)
    p = subprocess.Popen(
        [sys.executable, TEMPEST, "run", "-n", "2", "--gdb", "1",
         "--timeout", "120", "--run-dir", run_dir, exe],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL)
    port, err_lines = None, []
    try:
        for line in p.stderr:
            err_lines.append(line)
            m = re.search(r"waits for gdb at 127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        expect(port is not None, "run printed no gdb port",
               "".join(err_lines))
        g = subprocess.run(
            ["gdb-multiarch", "-nx", "-batch", "-ex", "set pagination off",
             "-ex", f"target remote 127.0.0.1:{port}",
             "-ex", "break main", "-ex", "continue",
             "-ex", "info symbol $pc", "-ex", "continue", exe],
            capture_output=True, text=True, timeout=120)
    finally:
        out, err = p.communicate(timeout=120)
    both = g.stdout + g.stderr
    expect(re.search(r"Breakpoint 1(, | at ).*main", both),
           "gdb did not stop at main", both)
    expect(re.search(r"^main(\+\d+)? in section", g.stdout, re.M),
           "the stopped pc is not in main", both)
    expect(p.returncode == 0, f"run exit {p.returncode}, wanted 0",
           out + "".join(err_lines) + err)
    expect(len(re.findall(r"hello from node [01] of 2", out)) == 2,
           "not both nodes' greetings", out)


# The guest suite's programs as Linux processes (docs/linux.rst, "The
# libraries on Linux"): the same sources, built over the Linux runtime in
# build/guest-linux, run by the guest suite's own cases (tests/guest/
# cases.py, TEMPEST_LINUX=1 boots every cluster with --linux) and checked
# the same way: messaging, Strata (barriers, scans, reductions, the radix
# sort), block access faults that run a handler in the process and
# resume, bulk transfers, fetch-and-op, FLASH, channels, GAM; a lost
# link ending the nodes that wait for it.
GUEST_CASES = [
    "hello-4", "am-pingpong-smp1", "am-pingpong-smp2", "am-ring-4",
    "am-storm-all-4-smp2", "am-items-smp2", "am-timers-2",
    "tags-table1-smp2", "tags-resume-smp1", "tags-resume-smp3",
    "tags-ba-smp2", "tags-crash-no-handler", "dsm-jacobi-4",
    "dsm-update-jacobi-4", "dsm-update-protocol-smp2",
    "strata-basics-5", "strata-combine-5", "strata-bcast-5",
    "strata-radix-5", "strata-xfer-5", "strata-am-5",
    "xfer-chan-ring-2", "xfer-fop-4", "xfer-memcpy-4", "flash-fig4-4",
    "chan-data-smp2", "chan-migrate-3", "am-gam-pingpong-2",
    "am-gam-bulk-2", "both-4-smp2", "both-bench-4-smp1",
    "both-bench-4-smp2", "both-bench-2-smp1", "both-bench-2-smp2",
    "am-gather-smp2",
    "am-link-lost-smp2", "am-link-lost-spin-smp2", "am-gam-link-lost",
]


def case_checkpoint(runs):
    """Linux nodes checkpointed and restored (docs/checkpoint.rst, "Linux
    nodes"): the DSM Jacobi as Linux processes on 2 nodes run with
    --no-share, saved mid-run with --stop, restored: the result agrees
    with the sequential one bit for bit ('jacobi dsm ok'), and node 1's
    shell takes the token it had before.  Without --no-share the
    checkpoint is refused, saying why, and the nodes go on."""
    jacobi = os.path.join(ROOT, "build", "guest-linux", "guest", "examples",
                          "dsm", "jacobi.elf")
    # The refusal first: shares mounted.
    run_dir = os.path.join(runs, "ckpt-shared")
    p = launch(run_dir, 1, "sleep", ["30"])
    try:
        wait_booted(run_dir, 1, p)
        r = subprocess.run([sys.executable, TEMPEST, "checkpoint", run_dir],
                           capture_output=True, text=True, timeout=120)
        expect(r.returncode != 0 and "--no-share" in r.stderr,
               "a checkpoint of nodes with shares mounted was not refused",
               r.stdout + r.stderr)
    finally:
        p.terminate()
        p.communicate(timeout=30)
    run_dir = os.path.join(runs, "ckpt")
    ck = os.path.join(runs, "ckpt-saved")
    again = os.path.join(runs, "ckpt-restored")
    for d in (ck, again):
        shutil.rmtree(d, ignore_errors=True)
    p = launch(run_dir, 2, jacobi, ["dsm", "126", "6000"], ["--no-share"],
               timeout=300)
    try:
        wait_booted(run_dir, 2, p)
        time.sleep(1.5)
        r = subprocess.run([sys.executable, TEMPEST, "checkpoint", run_dir,
                            "-o", ck, "--stop"],
                           capture_output=True, text=True, timeout=120)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    expect(r.returncode == 0, "the checkpoint failed", r.stdout + r.stderr)
    expect("checkpointed to" in err, "the run did not end checkpointed",
           out + err)
    expect("jacobi dsm ok" not in _read(os.path.join(run_dir, "node0.log")),
           "the program had finished before the checkpoint: not mid-run")
    p = subprocess.Popen([sys.executable, TEMPEST, "run", "--restore", ck,
                          "--run-dir", again, "--timeout", "300"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, stdin=subprocess.DEVNULL)
    said = ""
    try:
        # Until the launcher says the nodes are restored and running: a
        # connection to a node's forwarded port made while its QEMU still
        # loads the checkpoint is reset (a CI run whose
        # restore took 1.72 s failed so, when this waited for the node's
        # log and then 1 s).
        t0 = time.monotonic()
        while "restored from" not in said:
            if select.select([p.stderr], [], [], 0.5)[0]:
                # The descriptor, not the text wrapper: what the wrapper
                # buffered would not wake select() again.  Read before
                # the launcher's end is looked at: its last words first.
                got = os.read(p.stderr.fileno(), 4096)
                said += got.decode("utf-8", "replace")
                if got:
                    continue
            expect(p.poll() is None and time.monotonic() - t0 < 120,
                   "the restore did not end", said)
        sh = subprocess.run([sys.executable, TEMPEST, "ssh", "--run-dir",
                             again, "1", "hostname"], capture_output=True,
                            text=True, timeout=120)
        out, err = p.communicate(timeout=300)
        err = said + err
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    expect(p.returncode == 0, f"the restored run ended {p.returncode}",
           out + err + _read(os.path.join(again, "node0.log")))
    expect(re.search(r"jacobi dsm ok: 126x126, 6000 sweeps on 2 nodes",
                     _read(os.path.join(again, "node0.log"))),
           "the restored Jacobi did not agree with the sequential one",
           _read(os.path.join(again, "node0.log")))
    expect(sh.returncode == 0 and "node1" in sh.stdout,
           "ssh to a restored node failed", sh.stdout + sh.stderr)


def wait_booted(run_dir, nodes, p, limit=120):
    t0 = time.monotonic()
    while sum("tempest-init: running" in _read(os.path.join(
            run_dir, f"node{i}.log")) for i in range(nodes)) < nodes:
        expect(p.poll() is None and time.monotonic() - t0 < limit,
               "the nodes did not boot",
               _read(os.path.join(run_dir, "node0.log")))
        time.sleep(0.2)


def _guest_cases():
    """tests/guest/cases.py, loaded with TEMPEST_LINUX=1."""
    import importlib.util

    old = os.environ.get("TEMPEST_LINUX")
    os.environ["TEMPEST_LINUX"] = "1"
    try:
        spec = importlib.util.spec_from_file_location(
            "guest_cases_linux", os.path.join(ROOT, "tests", "guest",
                                              "cases.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if old is None:
            del os.environ["TEMPEST_LINUX"]
        else:
            os.environ["TEMPEST_LINUX"] = old
    return {c.name: c for c in mod.CASES}


def guest_case(name):
    def case(runs):
        c = _guest_cases().get(name)
        expect(c is not None, f"tests/guest/cases.py has no case {name}")
        ok, detail, output = c.run(os.path.join(runs, "guest"))
        expect(ok, detail, output)
    case.__name__ = "case_guest_" + name
    return case


CASES = [case_hello, case_devnode, case_exit_status, case_network,
         case_shell, case_panic, case_poll_kept, case_gdb,
         case_checkpoint] + [guest_case(n) for n in GUEST_CASES]
