# SPDX-License-Identifier: GPL-2.0-or-later
"""Seed corpora for the fuzz targets (scripts/tempest fuzz, docs/fuzzing.rst).

Each seed is a real sequence, taken from what the qtests and the guest
libraries do: the command bank's commit reads, ring setup, doorbells,
timers, collectives, broadcasts, transfers, fetch-and-op, tags; and for the
fabric, the frames a peer exchanges in each of those.  The fuzzer starts
from them and mutates, so it begins deep inside the device instead of at
its magic register.

Numbers come from the one register map and wire format
(hw/include/standard-headers/tempest/tempest-hw.h, hw/tempest/fabric-proto.h),
read here, so that a change there changes the seeds too.
"""

import os
import re
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
HEADERS = ["hw/include/standard-headers/tempest/tempest-hw.h",
           "hw/tempest/fabric-proto.h"]
SEP = b"FUZZ"


def _constants():
    """#defines and enum members of the headers, evaluated."""
    c = {}
    for h in HEADERS:
        text = open(os.path.join(ROOT, h)).read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        for m in re.finditer(r"^#define\s+(\w+)\s+(.+)$", text, re.M):
            expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uU]?[lL]{0,2}\b",
                          r"\1", m.group(2))
            try:
                c[m.group(1)] = int(eval(expr, {}, dict(c)))
            except Exception:
                pass
        for body in re.findall(r"enum\s*{([^}]*)}", text):
            v = -1
            for item in body.split(","):
                item = item.strip()
                if not item:
                    continue
                name, _, val = item.partition("=")
                v = int(eval(val, {}, dict(c))) if val.strip() else v + 1
                c[name.strip()] = v
    return c


K = _constants()


def u16(v):
    return struct.pack("<H", v & 0xffff)


def u32(v):
    return struct.pack("<I", v & 0xffffffff)


def u64(v):
    return struct.pack("<Q", v & 0xffffffffffffffff)


def join(ops):
    return SEP.join(ops)


RAM = K["TEMPEST_RAM_BASE"]
ARENA = RAM + 0x100000          # as in tempest_fabric_fuzz.c
RING = [ARENA + i * 0x10000 for i in range(4)]
DATA = ARENA + 0x40000


def cmd_arg(n):
    """TEMPEST_NC_CMD_ARG(n), a function-like macro: read its formula."""
    text = open(os.path.join(ROOT, HEADERS[0])).read()
    m = re.search(r"TEMPEST_NC_CMD_ARG\(n\)\s+\((0x[0-9a-fA-F]+) \+ (\d+) \* "
                  r"\(n\)\)", text)
    return int(m.group(1), 16) + int(m.group(2)) * n


# ------------------------------------------------------------------
# generic-fuzz-tempest-nc: QEMU's generic-fuzz input format
# (tests/qtest/fuzz/generic_fuzz.c): opcode, then the operation's struct
# as the compiler lays it out, operations separated by "FUZZ".
# ------------------------------------------------------------------

G_READ, G_WRITE, G_DMA, G_CLEAR_DMA, G_STEP = 2, 3, 7, 8, 9
BYTE, WORD, LONG, QUAD = 0, 1, 2, 3


def gw(off, val, size=LONG):
    """write: u8 size, u8 region, 2 bytes padding, u32 offset, u64 value"""
    return bytes([G_WRITE, size, 0, 0, 0]) + u32(off) + u64(val)


def gr(off, size=LONG):
    """read: u8 size, u8 region, 2 bytes padding, u32 offset"""
    return bytes([G_READ, size, 0, 0, 0]) + u32(off)


def gdma(data):
    """a DMA pattern: what the device reads from RAM is filled with it"""
    return bytes([G_DMA, 0, 0]) + data


def gstep():
    return bytes([G_STEP])


def gcmd(op, *args):
    args = list(args) + [0] * (6 - len(args))
    ops = [gw(cmd_arg(i), a, QUAD) for i, a in enumerate(args)]
    return ops + [gw(K["TEMPEST_NC_CMD_OP"], op),
                  gr(K["TEMPEST_NC_CMD_COMMIT"]),
                  gr(K["TEMPEST_NC_CMD_REASON"]),
                  gr(K["TEMPEST_NC_CMD_RESULT"], QUAD)]


def packet(dest, length, kind=0, fill=0x5a):
    """a send-ring slot: CTL (VALID | length), destination, kind, words"""
    pkt = bytearray(K["TEMPEST_PKT_SIZE"])
    struct.pack_into("<I", pkt, K["TEMPEST_PKT_CTL"],
                     K["TEMPEST_PKT_VALID"] | length)
    struct.pack_into("<H", pkt, K["TEMPEST_PKT_NODE"], dest)
    pkt[K["TEMPEST_PKT_KIND"]] = kind
    struct.pack_into("<Q", pkt, K["TEMPEST_PKT_WORD1"], 0x1122334455667788)
    for i in range(length):
        pkt[K["TEMPEST_PKT_DATA"] + i] = (fill + i) & 0xff
    return bytes(pkt)


def g_rings(slots=16):
    ops = []
    for ring in range(4):
        ops += gcmd(K["TEMPEST_CMD_RING_SETUP"], ring, RING[ring], slots)
    return ops


def nc_seeds():
    k = K
    r = {}
    r["identity"] = [gr(k[n]) for n in (
        "TEMPEST_NC_MAGIC", "TEMPEST_NC_VERSION", "TEMPEST_NC_NODE_ID",
        "TEMPEST_NC_NUM_NODES", "TEMPEST_NC_FEATURES", "TEMPEST_NC_NUM_CPUS",
        "TEMPEST_NC_RAM_SIZE_LO", "TEMPEST_NC_CMDLINE_LEN",
        "TEMPEST_NC_FABRIC_STATE", "TEMPEST_NC_TAGMEM_SIZE_LO")] + \
        [gr(k["TEMPEST_NC_TICKS_LO"], QUAD), gr(k["TEMPEST_NC_CMDLINE"])]
    r["bad-accesses"] = [
        gw(0x3, 1, BYTE), gr(0x2, WORD), gw(k["TEMPEST_NC_MAGIC"], 1),
        gr(k["TEMPEST_NC_EXIT"]), gw(0x7f0, 5), gr(0xfffc),
        gr(k["TEMPEST_NC_ERR_STATUS"]), gr(k["TEMPEST_NC_ERR_INFO"]),
        gw(k["TEMPEST_NC_ERR_STATUS"], 0), gr(k["TEMPEST_NC_ERR_COUNT"])]
    r["irq"] = [gw(k["TEMPEST_NC_IRQ_ENABLE"], 0x7f),
                gw(k["TEMPEST_NC_SCRATCH"], 0x12345678),
                gr(k["TEMPEST_NC_IRQ_STATUS"]),
                gw(k["TEMPEST_NC_IRQ_ACK"], 0xffffffff)]
    # A packet to itself through SQ0: the device reads the slot (filled by
    # the DMA pattern), loops it back into the RQ.
    for name, pat in (("loopback", packet(0, 16, 7)),
                      ("loopback-long", packet(0, 224, 1)),
                      ("send-bad-dest", packet(9, 8)),
                      ("send-bad-len", u32(k["TEMPEST_PKT_VALID"] | 300) +
                       bytes(252))):
        r[name] = g_rings() + [
            gdma(pat), gw(k["TEMPEST_NC_SQ_DOORBELL"], 0), gstep(),
            bytes([G_CLEAR_DMA]), gr(k["TEMPEST_NC_TX_PACKETS"]),
            gr(k["TEMPEST_NC_RQ_TAIL"]),
            gw(k["TEMPEST_NC_RQ_DOORBELL"], 1),
            gw(k["TEMPEST_NC_SQ_DOORBELL"], 1),
            gr(k["TEMPEST_NC_SEND_ERRORS"]), gr(k["TEMPEST_NC_CQ_TAIL"])]
    r["rings-bad"] = gcmd(k["TEMPEST_CMD_RING_SETUP"], 0, 0x1000, 16) + \
        gcmd(k["TEMPEST_CMD_RING_SETUP"], 0, RING[0] + 8, 16) + \
        gcmd(k["TEMPEST_CMD_RING_SETUP"], 0, RING[0], 24) + \
        gcmd(k["TEMPEST_CMD_RING_SETUP"], 7, RING[0], 16) + \
        gcmd(k["TEMPEST_CMD_RING_SETUP"], 0, RING[0], 16) + \
        gcmd(k["TEMPEST_CMD_RING_SETUP"], 2, RING[0] + 256, 4) + \
        gcmd(99) + [gw(k["TEMPEST_NC_SQ_DOORBELL"], 5)]
    r["timers"] = g_rings() + \
        gcmd(k["TEMPEST_CMD_TIMER_ARM"], 300, 0x1000, 0x2000) + \
        gcmd(k["TEMPEST_CMD_TIMER_ARM"], 5, 0x1001, 0x2001) + \
        gcmd(k["TEMPEST_CMD_TIMER_ARM"], 1 << 41) + \
        [gstep(), gstep(), gstep(), gr(k["TEMPEST_NC_CQ_TAIL"])]
    r["coll-scalar"] = g_rings() + gcmd(
        k["TEMPEST_CMD_COLL_START"], k["TEMPEST_COLL_COMBINE"],
        k["TEMPEST_COLL_ADD"], 42, 0, 0, 0) + [
        gr(k["TEMPEST_NC_COLL_STATUS"]), gr(k["TEMPEST_NC_COLL_RESULT"], QUAD),
        gr(k["TEMPEST_NC_COLL_SEQ"])]
    r["coll-vector"] = [gdma(u64(7) + u64(3))] + gcmd(
        k["TEMPEST_CMD_COLL_START"], k["TEMPEST_COLL_COMBINE"],
        k["TEMPEST_COLL_MAX"] | k["TEMPEST_COLL_SCAN"] << 8, DATA, 8,
        DATA + 0x1000, k["TEMPEST_SEG_ELEMENT"]) + [
        gr(k["TEMPEST_NC_COLL_STATUS"]), gr(k["TEMPEST_NC_COLL_ERROR"])]
    r["coll-allgather"] = gcmd(
        k["TEMPEST_CMD_COLL_START"], k["TEMPEST_COLL_ALLGATHER"], 0, 99, 0,
        DATA + 0x2000, 0) + gcmd(
        k["TEMPEST_CMD_COLL_START"], k["TEMPEST_COLL_COMBINE"],
        k["TEMPEST_COLL_XOR"] | k["TEMPEST_COLL_BACKSCAN"] << 8, 5)
    r["bcast-aor"] = gcmd(k["TEMPEST_CMD_BCAST"], 0xabcdef) + gcmd(
        k["TEMPEST_CMD_BCAST"], 2) + [
        gr(k["TEMPEST_NC_BCAST_SENT"]), gr(k["TEMPEST_NC_BCAST_AVAIL"]),
        gr(k["TEMPEST_NC_BCAST_POP"]), gr(k["TEMPEST_NC_BCAST_VALUE"], QUAD),
        gw(k["TEMPEST_NC_AOR_SET"], 1), gr(k["TEMPEST_NC_AOR_GLOBAL"]),
        gw(k["TEMPEST_NC_AOR_SET"], 0), gr(k["TEMPEST_NC_AOR_GLOBAL"])]
    tag = k["TEMPEST_TAGMEM_BASE"]
    r["tags"] = gcmd(k["TEMPEST_CMD_TAG_SET"], tag, 4096,
                     k["TEMPEST_TAG_READONLY"]) + \
        gcmd(k["TEMPEST_CMD_TAG_GET"], tag + 64) + \
        gcmd(k["TEMPEST_CMD_TAG_SET"], tag + 128, 64,
             k["TEMPEST_TAG_INVALID"]) + \
        [gr(k["TEMPEST_NC_CMD_COMMIT"])] + \
        gcmd(k["TEMPEST_CMD_TAG_SET"], tag, 4096,
             k["TEMPEST_TAG_WRITABLE"]) + \
        gcmd(k["TEMPEST_CMD_TAG_SET"], tag + 3, 0, 9) + \
        [gr(k["TEMPEST_NC_TAG_FLUSHES"])]
    r["xfer-self"] = g_rings() + gcmd(
        k["TEMPEST_CMD_XFER"], 0, DATA, 300, DATA + 0x8000, 77, 0) + [
        gstep(), gr(k["TEMPEST_NC_XFER_ACTIVE"]),
        gr(k["TEMPEST_NC_XFER_RECV_LO"]), gr(k["TEMPEST_NC_CQ_TAIL"])]
    r["xfer-typed-self"] = g_rings() + gcmd(
        k["TEMPEST_CMD_BUF_POST"], 3, DATA + 0x10000, 4096) + gcmd(
        k["TEMPEST_CMD_XFER"], 0, DATA, 1000, 3, 5,
        k["TEMPEST_XFER_TYPED"]) + gcmd(
        k["TEMPEST_CMD_XFER"], 0, DATA, 100, 2, 6,
        k["TEMPEST_XFER_TYPED"]) + [
        gstep(), gr(k["TEMPEST_NC_XFER_WAITING"])] + gcmd(
        k["TEMPEST_CMD_BUF_POST"], 2, DATA + 0x20000, 128)
    r["fop-self"] = gcmd(k["TEMPEST_CMD_FOP"], 0, DATA, k["TEMPEST_FOP_ADD"],
                         5) + [gr(k["TEMPEST_NC_CMD_COMMIT"])] + gcmd(
        k["TEMPEST_CMD_FOP"], 0, DATA, k["TEMPEST_FOP_CAS"], 9, 5) + gcmd(
        k["TEMPEST_CMD_FOP"], 0, DATA + 3, 7)
    return r


# ------------------------------------------------------------------
# tempest-fabric: the harness's own format (tests/fuzz/tempest_fabric_fuzz.c)
# ------------------------------------------------------------------

(OP_RAW, OP_DATA, OP_CREDIT, OP_COLL, OP_XFER, OP_MESH, OP_BYE, OP_HELLO,
 OP_FLOOD, OP_DISCONNECT, OP_RECONNECT, OP_STRANGER, OP_RUN, OP_MMIO_WRITE,
 OP_MMIO_READ, OP_CMD, OP_RINGS, OP_SEND, OP_RQ_FREE, OP_PAUSE, OP_DIAL,
 OP_GONE, OP_CHAN) = range(23)
# The channel controller's frame kinds (tempest-nc-chan.c).
(CK_DATA, CK_ACK, CK_NACK, CK_FREED, CK_BIG, CK_GO, CK_PORTDATA, CK_WIRE,
 CK_FWD, CK_DELETE, CK_CONFIRM, CK_READY, CK_WITHDRAW,
 CK_WITHDRAWN) = range(1, 15)
# The transfer engine's (tempest-nc-xfer.c).
(XK_HDR, XK_DATA, XK_GO, XK_ACK, XK_ABORT, XK_FOP_REQ, XK_FOP_REP, XK_PUT,
 XK_SPLIT, XK_UNSPLIT) = range(1, 11)
XK_F_CHAN = 1 << 31             # HDR flag: the channel controller's
XF_MID, XF_RAW, XF_FILL = 2, 8, 64      # op_xfer's flags


def f_rings(sq=3, rq=3, cq=3):
    """slots 2 << n"""
    return bytes([OP_RINGS, sq, sq, rq, cq])


def f_data(net=0, kind=0, payload=b"hello", word1=0):
    hdr = u16(1) + bytes([net, kind]) + u32(0) + u32(0xabc) + u64(word1) + \
        u64(0)
    return bytes([OP_DATA, net]) + hdr + payload


def f_credit(net=0):
    return bytes([OP_CREDIT, net])


def f_coll(direction, kind=1, fn=0, variant=0, lanes=1, count=1, pool=b"",
           flags=0, error=0):
    return bytes([OP_COLL, flags, direction, kind, fn, variant, lanes]) + \
        u16(error) + u16(count) + pool


def f_xfer(kind, body=b"", flags=0):
    return bytes([OP_XFER, kind, flags]) + body


def f_xmid(kind, mid, body=b"", flags=0):
    """A transfer frame with message id mid (flags XF_MID)."""
    return f_xfer(kind, u32(mid) + body, flags | XF_MID)


def f_xfill(mid, offset, length, byte):
    """A DATA of length bytes of one value at offset (flags XF_FILL)."""
    return f_xmid(XK_DATA, mid, u64(offset) + u32(length) + bytes([byte]),
                  XF_FILL)


def f_cmd(op, *args):
    """op is TEMPEST_CMD_*; arguments chosen to survive the harness's
    fixups (op_cmd) unchanged where it matters."""
    args = list(args) + [0] * (6 - len(args))
    return bytes([OP_CMD, op - 1, 0]) + b"".join(u64(a) for a in args)


def f_chan(kind, to, frm, number=0, body=b"", flags=0):
    """to: a port index of the node, frm: one of ours (flags 2: ids)."""
    ids = u32(to) + u32(frm) if flags & 2 else bytes([to, frm])
    return bytes([OP_CHAN, kind - 1, flags]) + ids + u32(number) + body


def f_chop(op, *args):
    """TEMPEST_CMD_CHAN's instruction op (TEMPEST_CHAN_OP_ name)."""
    return f_cmd(K["TEMPEST_CMD_CHAN"], K["TEMPEST_CHAN_OP_" + op] - 1,
                 *args)


def f_run(loops=4, ticks=0):
    return bytes([OP_RUN, loops]) + u32(ticks)


def f_w(off, value, size=0):
    return bytes([OP_MMIO_WRITE, 0x80]) + u16(off) + bytes([size]) + \
        u64(value)


def f_r(off, size=0):
    return bytes([OP_MMIO_READ, 0x80]) + u16(off) + bytes([size])


def f_send(ring=0, dest_mode=0, kind=0, length=16):
    return bytes([OP_SEND, ring | dest_mode << 1, kind, length]) + u16(0) + \
        u32(0x1234) + u64(0x55) + u64(0x66)


def entry(node, seg, *lanes):
    return u32(node) + u32(seg) + b"".join(u64(v) for v in lanes)


def fabric_seeds():
    k = K
    st = k["TEMPEST_NC_COLL_STATUS"]
    r = {}
    r["data-in"] = [f_rings(), f_data(0, 3, b"x" * 40), f_data(0),
                    f_data(1, 9, b"y" * 224), f_run(),
                    f_r(k["TEMPEST_NC_RX_PACKETS"]), bytes([OP_RQ_FREE, 2]),
                    f_credit(0), f_credit(1)]
    r["data-out"] = [f_rings(), f_send(0), f_send(0, 0, 1, 224),
                     f_send(1, 0, 2, 0), f_send(0, 1), f_run(),
                     f_credit(0), f_credit(1), f_send(0, 2, 0, 8),
                     f_r(k["TEMPEST_NC_TX_STALLS"])]
    r["flow-control"] = [f_rings(3, 0, 3),
                         bytes([OP_FLOOD]) + u16(40) + bytes([OP_DATA, 0]),
                         f_run(8), bytes([OP_RQ_FREE, 1]), f_run(),
                         bytes([OP_RQ_FREE, 3]), f_credit(0)]
    r["coll-combine"] = [f_rings(), f_cmd(k["TEMPEST_CMD_COLL_START"], 0,
                                          k["TEMPEST_COLL_ADD"], 5),
                         f_coll(k["FABRIC_COLL_UP"],
                                pool=entry(1, 0, 37)), f_run(),
                         f_r(st), f_r(k["TEMPEST_NC_COLL_RESULT"], 1)]
    r["coll-child-first"] = [f_coll(k["FABRIC_COLL_UP"], fn=1,
                                    pool=entry(1, 0, 3)),
                             f_cmd(k["TEMPEST_CMD_COLL_START"], 0, 1, 4),
                             f_run(), f_r(st),
                             f_coll(k["FABRIC_COLL_UP"], fn=1,
                                    pool=entry(1, 0, 3)),
                             f_cmd(k["TEMPEST_CMD_COLL_START"], 0, 1, 4)]
    r["coll-vector-scan"] = [f_cmd(k["TEMPEST_CMD_COLL_START"], 0,
                                   k["TEMPEST_COLL_UADD"] |
                                   k["TEMPEST_COLL_SCAN"] << 8, 0, 4, 64, 1),
                             f_coll(k["FABRIC_COLL_UP"], fn=3, variant=1,
                                    lanes=4, pool=entry(1, 1, 1, 2, 3, 4)),
                             f_run(), f_r(st),
                             f_r(k["TEMPEST_NC_COLL_ERROR"])]
    r["coll-allgather"] = [f_cmd(k["TEMPEST_CMD_COLL_START"], 1, 0, 7, 0,
                                 128),
                           f_coll(k["FABRIC_COLL_UP"], kind=2, lanes=1,
                                  pool=entry(1, 0, 8)), f_run(), f_r(st)]
    r["coll-mismatch"] = [f_cmd(k["TEMPEST_CMD_COLL_START"], 0, 0, 5),
                          f_coll(k["FABRIC_COLL_UP"], lanes=3,
                                 pool=entry(1, 0, 1, 2, 3)), f_run(),
                          f_r(st), f_coll(k["FABRIC_COLL_DOWN"]),
                          f_coll(k["FABRIC_COLL_UP"], count=2, flags=4,
                                 pool=entry(1, 0, 1) + entry(5, 0, 1))]
    r["bcast"] = [f_cmd(k["TEMPEST_CMD_BCAST"], 0x77), f_run(),
                  f_r(k["TEMPEST_NC_BCAST_SENT"]),
                  f_coll(k["FABRIC_BCAST_UP"], kind=0,
                         pool=entry(1, 0, 0x99)), f_run(),
                  f_r(k["TEMPEST_NC_BCAST_AVAIL"]),
                  f_r(k["TEMPEST_NC_BCAST_POP"]),
                  f_r(k["TEMPEST_NC_BCAST_VALUE"], 1),
                  f_coll(k["FABRIC_BCAST_ACK"], kind=0, lanes=0, count=0)]
    r["aor"] = [f_coll(k["FABRIC_AOR_UP"], kind=0, lanes=0,
                       pool=entry(1, 1)), f_run(),
                f_r(k["TEMPEST_NC_AOR_GLOBAL"]),
                f_w(k["TEMPEST_NC_AOR_SET"], 1),
                f_coll(k["FABRIC_AOR_UP"], kind=0, lanes=0,
                       pool=entry(1, 0)),
                f_w(k["TEMPEST_NC_AOR_SET"], 0),
                f_coll(k["FABRIC_AOR_DOWN"], kind=0, lanes=0,
                       pool=entry(0, 1))]
    hdr = u64(299) + u64(0x100) + bytes([0]) + u64(5)
    r["xfer-in"] = [f_rings(), f_xfer(XK_HDR, hdr),
                    f_xfer(XK_DATA, u16(0) + b"a" * 256),
                    f_xfer(XK_DATA, u16(4) + b"b" * 44), f_run(),
                    f_r(k["TEMPEST_NC_XFER_RECV_LO"])]
    typed = u64(99) + u64(0) + bytes([1]) + u64(6)
    r["xfer-in-typed"] = [f_rings(), f_cmd(k["TEMPEST_CMD_BUF_POST"], 0,
                                           0x2000, 4096),
                          f_xfer(XK_HDR, typed), f_run(),
                          f_xfer(XK_DATA, u16(0) + b"t" * 100), f_run(),
                          f_xfer(XK_HDR, typed, flags=2) + u32(7),
                          f_r(k["TEMPEST_NC_XFER_WAITING"]),
                          f_xfer(XK_ABORT)]
    r["xfer-out"] = [f_rings(), f_cmd(k["TEMPEST_CMD_XFER"], 1, 0x100, 499,
                                      0x800, 3), f_run(),
                     f_xfer(XK_ACK, u32(0)), f_run(),
                     f_r(k["TEMPEST_NC_XFER_ACTIVE"])]
    r["xfer-out-typed"] = [f_rings(), f_cmd(k["TEMPEST_CMD_XFER"], 1, 0x100,
                                            99, 2, 3, 1), f_run(),
                           f_xfer(XK_GO), f_run(), f_xfer(XK_ACK, u32(0)),
                           f_cmd(k["TEMPEST_CMD_XFER"], 1, 0, 9, 1, 4, 1),
                           f_xfer(XK_ACK, u32(16))]
    r["fop-in"] = [f_xfer(XK_FOP_REQ, bytes([0]) + u64(8) + u64(5) +
                          u64(0)), f_run(),
                   f_xfer(XK_FOP_REQ, bytes([2]) + u64(8) + u64(1) + u64(5)),
                   f_xfer(XK_FOP_REQ, b"\x01" * 8, flags=4)]
    r["fop-out"] = [f_cmd(k["TEMPEST_CMD_FOP"], 1, 16, 0, 3), f_run(),
                    f_xfer(XK_FOP_REP, u32(0) + u64(41)), f_run(),
                    f_r(k["TEMPEST_NC_CMD_COMMIT"]),
                    f_r(k["TEMPEST_NC_CMD_RESULT"], 1)]
    # The channel controller: data, a port moved and the move abandoned
    # (the carrier's far end freed), a port from the peer input and
    # confirmed, stage 5's forward, a long pre-send's GO.
    r["chan-move"] = [f_rings(), f_chop("ALLOC", 0x100, 64),
                      f_chop("ALLOC", 0x200, 0),
                      f_chop("CONNECT", 0, 5 << 1 | 1),
                      f_chop("CONNECT", 1, 6 << 1 | 1),
                      f_chan(CK_DATA, 0, 5, 1, b"abcd"), f_run(),
                      f_chop("OUTPUT_PORT", 1, 0), f_run(),
                      f_chan(CK_FREED, 1, 6), f_run(),
                      f_chop("OUTPUT_PORT", 1, 0),
                      f_chan(CK_WIRE, 0, 7, 0, u32(0x10005)), f_run(),
                      f_chan(CK_DELETE, 0, 5), f_chan(CK_ACK, 0, 5, 1),
                      f_r(k["TEMPEST_NC_CHAN_DROPPED"])]
    r["chan-port-in"] = [f_rings(), f_chop("ALLOC", 0x100, 64),
                         f_chop("CONNECT", 0, 3 << 1 | 1),
                         f_chan(CK_PORTDATA, 0, 3, 1, u32(0x10009) +
                                u32(0x1000a) + u32(4) + u32(2)), f_run(),
                         f_chop("INPUT_PORT", 0, 0x300, 64), f_run(),
                         f_chan(CK_FWD, 0, 3, 2, u32(0x1000b) +
                                u32(0x10009)),
                         f_chan(CK_CONFIRM, 0, 3), f_run(),
                         f_chan(CK_DATA, 1, 10, 3, b"wxyz"), f_run(),
                         f_r(k["TEMPEST_NC_CHAN_USED"])]
    r["chan-big"] = [f_rings(), f_chop("ALLOC", 0x100, 0),
                     f_chop("CONNECT", 0, 2 << 1 | 1),
                     f_chop("OUTPUTDATA", 0, 0x1000, 70000), f_run(),
                     f_chan(CK_GO, 0, 2, 1, u64(DATA + 0x20000)), f_run(),
                     f_chan(CK_BIG, 0, 2, 1, u64(80000)),
                     f_chan(CK_ACK, 0, 2, 1), f_run()]
    # READY: the peer's buffer offered, a long output straight into it;
    # an input with a long buffer offering ours
    r["chan-ready"] = [f_rings(), f_chop("ALLOC", 0x100, 0),
                       f_chop("CONNECT", 0, 2 << 1 | 1),
                       f_chan(CK_READY, 0, 2, 1, u64(DATA + 0x20000) +
                              u64(0x20000)), f_run(),
                       f_chop("OUTPUTDATA", 0, 0x1000, 70000), f_run(),
                       f_chop("BUFFER", 0, 0x30000, 0x18000),
                       f_chan(CK_ACK, 0, 2, 1), f_run(),
                       f_chop("INPUT", 0, 0x60000, 0x18000), f_run()]
    # PUT: an untyped transfer counted on (over a socket, where the peer
    # cannot have stored anything: dropped), out of place, and into
    # system space (a typed message with no buffer posted)
    r["xfer-put"] = [f_rings(),
                     f_xmid(XK_HDR, 0x71, u64(4095) + u64(0x1000) +
                            bytes([0]) + u64(1)),
                     f_xmid(XK_PUT, 0x71, u32(0) + u32(2048)),
                     f_xmid(XK_PUT, 0x71, u32(2048) + u32(2048)), f_run(),
                     f_xmid(XK_PUT, 0x71, u32(4096) + u32(1)),
                     f_xmid(XK_HDR, 0x72, u64(99) + u64(0) + bytes([1]) +
                            u64(2)),
                     f_xmid(XK_PUT, 0x72, u32(0) + u32(100)),
                     f_xmid(XK_PUT, 0x73, u32(0) + u32(100)), f_run(),
                     f_r(k["TEMPEST_NC_XFER_RECV_LO"]),
                     f_r(k["TEMPEST_NC_DROPPED"])]
    # A channel's long DATA into a port that inputs (BIG, GO, a transfer
    # with the channel flag, the sender's SPLIT: with no RAM mapped the
    # node answers UNSPLIT, and the data comes in two frames), then the
    # offer of the next buffer (READY 2) withdrawn by BUFFER: WITHDRAW,
    # our WITHDRAWN (a wrong one first), BUFFER again.  Late UNSPLIT and
    # PUT after it.
    # (160 KiB: a sender splits 128 KiB to 4 MiB, XFER_SPLIT_MIN.)
    cookie = 0 | 2 << 16 | 1 << 32
    n = 0x28000
    r["chan-long-in"] = [f_rings(), f_chop("ALLOC", 0x100, 0),
                         f_chop("CONNECT", 0, 2 << 1 | 1),
                         f_chop("BUFFER", 0, 0x20000, 0x30000),
                         f_chop("INPUT", 0, 0x60000, 0x30000), f_run(),
                         f_chan(CK_BIG, 0, 2, 1, u64(n)), f_run(),
                         f_xmid(XK_HDR, 0x77, u64(n) +
                                u64(DATA + 0x20000) + u32(XK_F_CHAN) +
                                u64(cookie), XF_RAW),
                         f_xmid(XK_SPLIT, 0x77, u32(n // 2) + u64(0x100)),
                         f_run(),
                         f_xfill(0x77, 0, 65536, 0xab),
                         f_xfill(0x77, 65536, 65536, 0xcd),
                         f_xfill(0x77, 131072, n - 131072, 0xef),
                         f_run(), f_r(k["TEMPEST_NC_CHAN_DROPPED"]),
                         f_chop("BUFFER", 0, 0x40000, 0x30000), f_run(),
                         f_chan(CK_WITHDRAWN, 0, 2, 3),
                         f_chan(CK_WITHDRAWN, 0, 2, 2), f_run(),
                         f_chop("BUFFER", 0, 0x40000, 0x30000),
                         f_xmid(XK_UNSPLIT, 0x77),
                         f_xmid(XK_PUT, 0x77, u32(0) + u32(16)),
                         f_r(k["TEMPEST_NC_CHAN_DROPPED"])]
    # The peer's offer (READY) given back (WITHDRAW: our WITHDRAWN), again,
    # for DATA not to come and for none; offered again and used by a long
    # output, whose transfer the node cannot split (no RAM mapped): a
    # WITHDRAW after it, an UNSPLIT for it, its ACK.
    r["chan-withdraw"] = [f_rings(), f_chop("ALLOC", 0x100, 0),
                          f_chop("CONNECT", 0, 2 << 1 | 1),
                          f_chan(CK_READY, 0, 2, 1, u64(DATA + 0x20000) +
                                 u64(0x20000)), f_run(),
                          f_chan(CK_WITHDRAW, 0, 2, 1),
                          f_chan(CK_WITHDRAW, 0, 2, 1),
                          f_chan(CK_WITHDRAW, 0, 2, 9),
                          f_chan(CK_WITHDRAW, 0, 2, 0),
                          f_chan(CK_WITHDRAWN, 0, 2, 1), f_run(),
                          f_chan(CK_READY, 0, 2, 1, u64(DATA + 0x20000) +
                                 u64(0x20000)), f_run(),
                          f_chop("OUTPUTDATA", 0, 0x1000, 70000), f_run(),
                          f_chan(CK_WITHDRAW, 0, 2, 1),
                          f_xfer(XK_UNSPLIT), f_run(),
                          f_xfer(XK_ACK, u32(0)),
                          f_chan(CK_ACK, 0, 2, 1), f_run(),
                          f_r(k["TEMPEST_NC_CHAN_DROPPED"])]
    # A peer that stops reading and asks for its offer back again and
    # again: each WITHDRAW answered (FLOOD of frame op 8, OP_CHAN)
    r["chan-withdraw-flood"] = [f_rings(), f_chop("ALLOC", 0x100, 0),
                                f_chop("CONNECT", 0, 2 << 1 | 1),
                                bytes([OP_PAUSE, 1]),
                                bytes([OP_FLOOD]) + u16(2047) + bytes([8]) +
                                f_chan(CK_WITHDRAW, 0, 2, 1)[1:], f_run(8),
                                bytes([OP_PAUSE, 0]), f_run(8),
                                f_r(k["TEMPEST_NC_CHAN_DROPPED"])]
    r["timers"] = [f_rings(), f_cmd(k["TEMPEST_CMD_TIMER_ARM"], 300, 1, 2),
                   f_cmd(k["TEMPEST_CMD_TIMER_ARM"], 5, 3, 4),
                   f_run(1, 100), f_run(1, 1000)]
    # DIAL and GONE a node 1 sends, and ones naming impossible nodes
    r["peer-dial-gone"] = [f_rings(), bytes([OP_DIAL]) + u32(1) + u32(2),
                           bytes([OP_DIAL]) + u32(0) + u32(1),
                           bytes([OP_GONE]) + u32(1) + u32(1) + u32(3),
                           bytes([OP_GONE]) + u32(5) + u32(2) + u32(0),
                           f_run(), f_r(k["TEMPEST_NC_DROPPED"]),
                           f_r(k["TEMPEST_NC_PEERS_DOWN"])]
    r["peer-bye"] = [f_rings(), bytes([OP_BYE]) + u32(3),
                     bytes([OP_DISCONNECT, 0]), f_run(),
                     f_r(k["TEMPEST_NC_PEERS_DOWN"]), f_send(0),
                     f_r(k["TEMPEST_NC_ERR_STATUS"]),
                     bytes([OP_RECONNECT, 1]), f_run()]
    r["peer-lost-midway"] = [f_rings(), f_cmd(k["TEMPEST_CMD_COLL_START"], 0,
                                              0, 1),
                             f_cmd(k["TEMPEST_CMD_XFER"], 1, 0, 5000, 0),
                             f_cmd(k["TEMPEST_CMD_FOP"], 1, 8, 1, 1),
                             f_cmd(k["TEMPEST_CMD_BCAST"], 1),
                             bytes([OP_DISCONNECT, 1]), f_run(), f_r(st),
                             bytes([OP_DISCONNECT, 0])]
    # a HELLO header and no body; zeros; nothing
    r["strangers"] = [bytes([OP_STRANGER]) + u16(k["FABRIC_HELLO"]) +
                      bytes(2) + u32(k["FABRIC_HELLO_SIZE"]),
                      bytes([OP_STRANGER]) + bytes(40),
                      bytes([OP_STRANGER]), f_run(),
                      bytes([OP_HELLO, 0x08]) + u32(0) * 2 + u64(0) + u32(0)]
    r["malformed"] = [bytes([OP_RAW]) + u16(99) + bytes([0, 0]) + u32(4) +
                      u32(1),
                      bytes([OP_HELLO, 0]),
                      bytes([OP_DATA, 4]) + u32(200) + bytes(28) + b"z" * 16,
                      bytes([OP_DATA, 2]) + u32(5) + bytes(28),
                      bytes([OP_CREDIT, 6, 7]) + u32(1),
                      bytes([OP_CREDIT, 2]) + u32(1000),
                      bytes([OP_MESH]) + u32(2), f_run(),
                      f_r(k["TEMPEST_NC_DROPPED"]),
                      bytes([OP_RAW]) + u16(2) + bytes([0, 0]) +
                      u32(0x7fffffff)]
    r["exit"] = [f_rings(), f_w(k["TEMPEST_NC_EXIT"], 7), f_run()]
    # A peer that stops reading while node 0 sends a big transfer and
    # answers a flood of fetch-and-op requests, then reads again.
    r["slow-reader"] = [f_rings(), bytes([OP_PAUSE, 1]),
                        f_cmd(k["TEMPEST_CMD_XFER"], 1, 0, 0xffff, 0),
                        f_run(8),
                        bytes([OP_FLOOD]) + u16(2000) + bytes([OP_XFER]) +
                        f_xfer(XK_FOP_REQ, bytes([0]) + u64(8) + u64(1) +
                               u64(0))[1:],
                        f_run(8), bytes([OP_PAUSE, 0]), f_run(8),
                        f_xfer(XK_ACK, u32(0))]
    return r


def child_seeds():
    """QEMU as node 1, the harness node 0: the root's side of each
    exchange (results down the tree, broadcasts, the async OR)."""
    k = K
    st = k["TEMPEST_NC_COLL_STATUS"]
    r = {}
    r["coll"] = [f_cmd(k["TEMPEST_CMD_COLL_START"], 0, k["TEMPEST_COLL_ADD"],
                       5), f_run(),
                 f_coll(k["FABRIC_COLL_DOWN"], pool=entry(1, 0, 42)),
                 f_run(), f_r(st), f_r(k["TEMPEST_NC_COLL_RESULT"], 1),
                 f_coll(k["FABRIC_COLL_DOWN"], pool=entry(1, 0, 42))]
    r["coll-vector"] = [f_cmd(k["TEMPEST_CMD_COLL_START"], 0,
                              k["TEMPEST_COLL_MAX"] |
                              k["TEMPEST_COLL_SCAN"] << 8, 0, 4, 64, 1),
                        f_run(),
                        f_coll(k["FABRIC_COLL_DOWN"], fn=4, variant=1,
                               lanes=4, pool=entry(1, 1, 1, 2, 3, 4)),
                        f_run(), f_r(st), f_r(k["TEMPEST_NC_COLL_ERROR"])]
    # Results with fewer lanes than the node asked for (issue 9, 2).
    r["coll-down-short"] = [f_cmd(k["TEMPEST_CMD_COLL_START"], 0,
                                  k["TEMPEST_COLL_ADD"], 0, 8, 64),
                            f_run(),
                            f_coll(k["FABRIC_COLL_DOWN"], lanes=1,
                                   pool=entry(1, 0, 7)), f_run(), f_r(st)]
    r["allgather"] = [f_cmd(k["TEMPEST_CMD_COLL_START"], 1, 0, 9, 0, 128),
                      f_run(),
                      f_coll(k["FABRIC_COLL_DOWN"], kind=2, count=2, flags=4,
                             pool=entry(0, 0, 3) + entry(1, 0, 9)),
                      f_run(), f_r(st)]
    r["bcast"] = [f_cmd(k["TEMPEST_CMD_BCAST"], 0x77), f_run(),
                  f_coll(k["FABRIC_BCAST_ACK"], kind=0, lanes=0, count=0),
                  f_r(k["TEMPEST_NC_BCAST_SENT"]),
                  f_coll(k["FABRIC_BCAST_DOWN"], kind=0, flags=4,
                         pool=entry(0, 0, 0x99)), f_run(),
                  f_r(k["TEMPEST_NC_BCAST_POP"]),
                  f_r(k["TEMPEST_NC_BCAST_VALUE"], 1)]
    r["aor"] = [f_w(k["TEMPEST_NC_AOR_SET"], 1), f_run(),
                f_coll(k["FABRIC_AOR_DOWN"], kind=0, lanes=0, flags=4,
                       pool=entry(0, 1)), f_run(),
                f_r(k["TEMPEST_NC_AOR_GLOBAL"]),
                bytes([OP_MESH]) + u32(k["FABRIC_MESH_ALL"]),
                bytes([OP_MESH]) + u32(k["FABRIC_MESH_MINE"])]
    return r


def seeds(target):
    """(file name, bytes) of every seed of target ('nc' or 'fabric').  A
    fabric input starts with the roles: 0, QEMU is node 0 and the harness
    node 1; 1, the other way round.  Every fabric seed is given in both."""
    if target == "nc":
        return [(name, join(ops)) for name, ops in sorted(nc_seeds().items())]
    out = []
    for name, ops in sorted(fabric_seeds().items()):
        out.append(("node0-" + name, b"\0" + join(ops)))
        out.append(("node1-" + name, b"\1" + join(ops)))
    for name, ops in sorted(child_seeds().items()):
        out.append(("node1-child-" + name, b"\1" + join(ops)))
    return out


if __name__ == "__main__":
    for t in ("nc", "fabric"):
        for name, data in seeds(t):
            print(t, name, len(data))
