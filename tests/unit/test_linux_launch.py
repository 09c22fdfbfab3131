# SPDX-License-Identifier: GPL-2.0-or-later
"""Unit tests of what the launcher prepares for Linux nodes
(scripts/lib/tempestlib/linux.py, cluster.check_linux_program;
docs/linux.rst): the initramfs archive format, the job's quoting, the
module order, and which programs a Linux node is refused."""

import io
import os
import shlex
import stat
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "scripts", "lib"))

from tempestlib import linux  # noqa: E402
from tempestlib.cluster import check_linux_program  # noqa: E402
from tempestlib.common import StepError  # noqa: E402


def read_cpio(data):
    """{name: (mode, contents)} of a newc archive, as the kernel reads it."""
    out, pos = {}, 0
    while True:
        hdr = data[pos:pos + 110]
        assert hdr[:6] == b"070701", hdr[:6]
        f = [int(hdr[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = f[1], f[6], f[11]
        pos += 110
        name = data[pos:pos + namesize - 1].decode()
        pos += namesize
        pos += -pos % 4
        body = data[pos:pos + size]
        pos += size
        pos += -pos % 4
        if name == "TRAILER!!!":
            return out
        out[name] = (mode, body)


def elf(machine=183, e_type=2, interp=False):
    """A minimal 64-bit little-endian ELF header with one program header."""
    h = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    h += struct.pack("<HHIQQQIHHHHHH", e_type, machine, 1, 0, 64, 0, 0, 64,
                     56, 1, 0, 0, 0)
    ph = struct.pack("<IIQQQQQQ", 3 if interp else 1, 0, 0, 0, 0, 0, 0, 0)
    return h + ph


class Initramfs(unittest.TestCase):
    def test_cpio_round_trip(self):
        """Directories, files with their modes, symlinks and odd sizes
        survive (newc, 4-byte padding)."""
        buf = io.BytesIO()
        c = linux.Cpio(buf)
        c.dir("bin")
        c.file("bin/busybox", b"x" * 5, 0o755)
        c.symlink("bin/sh", "busybox")
        c.file("init", b"#!/bin/sh\n", 0o755)
        c.close()
        got = read_cpio(buf.getvalue())
        self.assertTrue(stat.S_ISDIR(got["bin"][0]))
        self.assertEqual(got["bin/busybox"], (stat.S_IFREG | 0o755, b"xxxxx"))
        self.assertEqual(got["bin/sh"], (stat.S_IFLNK | 0o777, b"busybox"))
        self.assertEqual(got["init"][1], b"#!/bin/sh\n")

    def test_init_names_the_exit_register(self):
        """/init writes the status to TEMPEST_NC_BASE + TEMPEST_NC_EXIT."""
        text = linux.init_script()
        self.assertIn("devmem 0xa000080 32", text)
        self.assertNotIn("@", text.replace("$@", ""))

    def test_job_quotes_arguments(self):
        """Arguments reach the program as given (shell quoting)."""
        job = linux.job_script("/p/prog", ["a b", "it's", "$HOME", ""],
                               "/p")
        self.assertEqual(shlex.split(job.splitlines()[1]),
                         ["/p/prog", "a b", "it's", "$HOME", ""])


class Programs(unittest.TestCase):
    def check(self, data):
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(data)
        try:
            return check_linux_program(f.name)
        finally:
            os.unlink(f.name)

    def test_static_and_scripts_run(self):
        self.assertTrue(self.check(elf()))
        self.assertTrue(self.check(elf(e_type=3)))    # static-pie
        self.assertTrue(self.check(b"#!/bin/sh\nexit 0\n"))

    def test_node_commands(self):
        """A bare name that is no file is a command of the node."""
        self.assertFalse(check_linux_program("no-such-command-here"))

    def test_refused(self):
        for data, why in ((elf(interp=True), "dynamically linked"),
                          (elf(machine=62), "not a 64-bit"),
                          (elf(e_type=1), "not an executable"),
                          (b"hello", "neither an ELF")):
            with self.assertRaisesRegex(StepError, why):
                self.check(data)
        with self.assertRaisesRegex(StepError, "no such program"):
            check_linux_program("./no/such/prog")


class KbuildVersion(unittest.TestCase):
    """Which linux-kbuild to fetch beside a kernel's headers: Debian
    rebuilds linux-kbuild on its own (6.1.192-3 beside a kernel and
    headers of 6.1.192-2), and apt-get download of the kernel's exact
    version then fails."""

    def test_same_version_first(self):
        self.assertEqual(linux.kbuild_version(
            "6.1.192-2", ["6.1.192-3", "6.1.192-2", "6.1.176-1"]),
            "6.1.192-2")

    def test_newest_of_the_same_upstream_version(self):
        self.assertEqual(linux.kbuild_version(
            "6.1.192-2", ["6.1.192-3", "6.1.176-1"]), "6.1.192-3")

    def test_no_other_upstream_version(self):
        self.assertIsNone(linux.kbuild_version(
            "6.1.192-2", ["6.1.193-1", "6.1.176-1"]))
        self.assertIsNone(linux.kbuild_version("6.1.192-2", []))


if __name__ == "__main__":
    unittest.main()
