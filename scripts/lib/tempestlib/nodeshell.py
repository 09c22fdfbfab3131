# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/tempest ssh K: a shell on Linux node K of a running cluster.

Each Linux node runs busybox's telnetd on port 23 (linux.SHELL_PORT),
forwarded by its QEMU's user network to a host port on 127.0.0.1 that the
launcher writes to ports.txt in the run directory.  This is a small telnet
client: interactive on a terminal, or one command whose output and exit
status it returns.  (A node has no sshd: busybox has none; the forwarded
port is reachable only from this host, and the node's login asks first
for the node's shell token, which the launcher wrote to a file only this
user can read.)
"""

import os
import re
import select
import shlex
import socket
import sys
import termios
import time
import tty

from .common import RUNS, StepError, rel

IAC, DONT, DO, WONT, WILL, SB, SE = 255, 254, 253, 252, 251, 250, 240
ECHO, SGA = 1, 3
BEGIN, END = b"__TEMPEST_B__", b"__TEMPEST_E__"


def node_port(node, run_dir=None, guest_port=23):
    """The host address of node's guest_port: from the run's ports.txt
    (run --linux), or the node's own nodeK.ports (a Slurm task's node)."""
    run_dir = run_dir or os.path.join(RUNS, "latest")
    paths = [os.path.join(run_dir, "ports.txt"),
             os.path.join(run_dir, f"node{node}.ports")]
    found = False
    for path in paths:
        try:
            with open(path) as f:
                found = True
                for line in f:
                    m = re.match(r"node (\d+) tcp (\d+) ([\d.]+):(\d+)",
                                 line)
                    if m and int(m.group(1)) == node and \
                       int(m.group(2)) == guest_port:
                        return m.group(3), int(m.group(4))
        except OSError:
            continue
    if not found:
        raise StepError(f"ssh: no {rel(paths[0])} or {rel(paths[1])}: is "
                        "a --linux run going?")
    raise StepError(f"ssh: node {node} has no port {guest_port} in "
                    f"{rel(run_dir)}")


def shell_token(node, run_dir=None):
    """Node's shell token (the launcher's file, this user's only)."""
    from .linux import shell_token_path
    path = shell_token_path(run_dir or os.path.join(RUNS, "latest"), node)
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        raise StepError(f"ssh: cannot read node {node}'s shell token "
                        f"{rel(path)}: {e.strerror}")


class Telnet:
    """Just enough telnet: the server echoes, everything else refused."""

    def __init__(self, addr, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.create_connection(addr, timeout=5)
                break
            except OSError as e:
                if time.monotonic() > deadline:
                    raise StepError(f"ssh: cannot reach {addr[0]}:{addr[1]}"
                                    f": {e}")
                time.sleep(0.5)
        self.sock.settimeout(None)
        self.pending = b""

    def _answer(self, cmd, opt):
        if cmd == DO:
            reply = WONT
        elif cmd == WILL:
            reply = DO if opt in (ECHO, SGA) else DONT
        else:
            return
        self.sock.sendall(bytes([IAC, reply, opt]))

    def read(self):
        """Data from the node with telnet commands answered and removed;
        b"" when the connection closed."""
        while True:
            data = self.sock.recv(4096)
            if not data:
                return b""
            out = self._strip(data)
            if out:
                return out

    def _strip(self, data):
        buf = self.pending + data
        self.pending = b""
        out = bytearray()
        i = 0
        while i < len(buf):
            b = buf[i]
            if b != IAC:
                out.append(b)
                i += 1
                continue
            if i + 1 >= len(buf):
                self.pending = buf[i:]
                break
            cmd = buf[i + 1]
            if cmd == IAC:
                out.append(IAC)
                i += 2
            elif cmd in (DO, DONT, WILL, WONT):
                if i + 2 >= len(buf):
                    self.pending = buf[i:]
                    break
                self._answer(cmd, buf[i + 2])
                i += 3
            elif cmd == SB:
                end = buf.find(bytes([IAC, SE]), i)
                if end < 0:
                    self.pending = buf[i:]
                    break
                i = end + 2
            else:
                i += 2
        return bytes(out)

    def write(self, data):
        self.sock.sendall(data.replace(bytes([IAC]), bytes([IAC, IAC])))

    def read_until(self, pattern=None):
        """Everything the node sends until pattern (a bytes regex) is in
        it, or until it closes the connection."""
        got = b""
        while True:
            data = self.read()
            if not data:
                return got
            got += data
            if pattern is not None and re.search(pattern, got):
                return got


def interactive(t):
    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd) if os.isatty(fd) else None
    if old:
        tty.setraw(fd)
    try:
        while True:
            r, _, _ = select.select([fd, t.sock], [], [])
            if t.sock in r:
                data = t.read()
                if not data:
                    return 0
                os.write(sys.stdout.fileno(), data)
            if fd in r:
                data = os.read(fd, 1024)
                if not data:
                    return 0
                t.write(data)
    finally:
        if old:
            termios.tcsetattr(fd, termios.TCSADRAIN, old)


def command(t, cmd):
    """Run cmd in the node's shell; returns (status, output)."""
    # The markers are built by the shell, so its echo of these lines
    # does not contain them; the command runs in a subshell, so that its
    # own 'exit' ends only that.
    t.write(b"stty -echo 2>/dev/null; echo __TEMPEST_\"B__\"; (\n"
            + cmd.encode() + b"\n); echo __TEMPEST_\"E__$?\"; exit\n")
    got = t.read_until(END + rb"\d+").replace(b"\r\n", b"\n")
    b = got.find(BEGIN + b"\n")
    m = re.search(END + rb"(\d+)", got)
    body = got[b + len(BEGIN) + 1:m.start()] if b >= 0 and m else got
    return (int(m.group(1)) if m else 255), body.decode("utf-8", "replace")


def ssh_cli(args):
    addr = node_port(args.node, args.run_dir)
    token = shell_token(args.node, args.run_dir)
    t = Telnet(addr)
    # The node's login asks for it first (docs/linux.rst, "Logging in").
    t.write(token.encode() + b"\n")
    if args.command:
        status, text = command(t, " ".join(shlex.quote(a) for a in
                                           args.command)
                               if len(args.command) > 1 else args.command[0])
        sys.stdout.write(text)
        return status
    return interactive(t)
