/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tempest-fabric: a libFuzzer target that drives a Tempest node's fabric
 * as its peer would (docs/fuzzing.rst).
 *
 * QEMU runs the tempest machine as one node of a two-node cluster on a
 * Unix socket directory, and this harness is the other.  The first byte
 * of an input picks the roles: bit 0 clear, QEMU is node 0 (the root of
 * the combining tree, which accepts) and the harness node 1; set, QEMU is
 * node 1 (a child, which dials node 0) and the harness node 0.  Every
 * input starts from the same state: the node controller is unrealized,
 * given its node id, realized again (a fresh fabric of its own), reset,
 * its RAM arena cleared; the harness connects or accepts, exchanges HELLO
 * and AUTH (the key is the cluster id, as no secret is given), says MESH
 * 1 or 2, and runs the main loop until FABRIC_STATE reads READY.
 *
 * The rest is a sequence of operations separated by "FUZZ" (as in
 * generic-fuzz): the first byte of each picks the operation, the rest are
 * its operands (missing operand bytes read as 0).  Peer operations send
 * frames (raw bytes, or well-formed frames of every type with fuzzed
 * fields), floods, disconnects and strangers' connections, or stop
 * reading; guest operations poke registers, run commands and fill the
 * rings, so that what a peer sends meets the state the device is in.  The
 * main loop runs after every operation, and what the node sends is read,
 * parsed and checked: a node that sends a frame the wire format does not
 * allow is a bug, reported by abort().
 *
 * The operands of every operation are listed in the enum below; the seed
 * corpus (tests/fuzz/seeds.py) writes the same layout.
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>

#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "qemu/units.h"
#include "qom/object.h"
#include "hw/qdev-core.h"
#include "hw/resettable.h"
#include "tests/qtest/libqtest.h"
#include "standard-headers/tempest/tempest-hw.h"
#include "hw/tempest/fabric-proto.h"
/* tempest_nc_fabric_attach/detach: see fresh_node() */
#include "hw/tempest/tempest-nc-internal.h"
#include "fuzz.h"

#define SEPARATOR       "FUZZ"
#define TF_CLUSTER      UINT64_C(0x7e57f0220001)
#define TF_CREDITS      4
#define TF_NODE_TYPE    "tempest-nc"

#define NC(off)         (TEMPEST_NC_BASE + (off))
#define ARENA           (TEMPEST_RAM_BASE + 0x100000)
#define ARENA_SIZE      0x100000
#define RING_AREA(i)    (ARENA + (i) * 0x10000)    /* SQ0 SQ1 RQ CQ */
#define DATA_AREA       (ARENA + 0x40000)
#define DATA_SIZE       (ARENA_SIZE - 0x40000)

#define MAX_STRANGERS   16
#define SETUP_MS        5000    /* to connect and become READY */
#define MAX_FLOOD       2048
#define WRITE_BUDGET    (32 * MiB)      /* bytes to the node per input */
#define RX_SIZE         (FABRIC_HDR_SIZE + FABRIC_MAX_BODY + 64 * KiB)

/* The transfer engine's frame kinds (tempest-nc-xfer.c). */
enum {
    XK_HDR = 1, XK_DATA, XK_GO, XK_ACK, XK_ABORT, XK_FOP_REQ, XK_FOP_REP,
    XK_PUT, XK_SPLIT, XK_UNSPLIT,
    XK_NUM,
};
#define XK_F_CHAN       (1U << 31)      /* HDR: the channel controller's */
#define XK_FILL_MAX     (64 * KiB)      /* a DATA of one fill byte, at most */

/* The channel controller's frame kinds (tempest-nc-chan.c): 1 to 14. */
#define CK_NUM          14

enum {
    OP_RAW,         /* bytes...: written to the link as they are */
    OP_DATA,        /* flags, [seq32], [ctl32], hdr[28], payload... */
    OP_CREDIT,      /* flags, [net8], [count32] */
    OP_COLL,        /* flags, dir, kind, fn, variant, lanes, error16, */
                    /* count16, [seq32], entry bytes... */
    OP_XFER,        /* kind, flags, [mid32], body... (flags 64: a */
                    /* DATA of len32 fill bytes at offset64) */
    OP_MESH,        /* value32 */
    OP_BYE,         /* status32 */
    OP_HELLO,       /* flags, magic32, version32, cluster64, node32, */
                    /* nodes32, credits32 (each used if its flag is set), */
                    /* [mac[32]: an AUTH after it, if flag 64] */
    OP_FLOOD,       /* count16, op, operands of op (frame_ops[op]: */
                    /* ops 0-7, then 8 for OP_CHAN) */
    OP_DISCONNECT,  /* mode, status32 */
    OP_RECONNECT,   /* flags */
    OP_STRANGER,    /* bytes...: a new connection that sends them */
    OP_RUN,         /* loops, ticks32 */
    OP_MMIO_WRITE,  /* reg, size, value64 */
    OP_MMIO_READ,   /* reg, size */
    OP_CMD,         /* op, raw, arg64 x 6 */
    OP_RINGS,       /* log2 slots of SQ0, SQ1, RQ, CQ */
    OP_SEND,        /* flags, kind, len, dest16, word0..2 */
    OP_RQ_FREE,     /* count */
    OP_PAUSE,       /* on: stop reading node 0's bytes (0: read again) */
    OP_DIAL,        /* from32, to32 */
    OP_GONE,        /* node32, exited32, status32 */
    OP_CHAN,        /* kind, flags, [to32 from32] | to8 from8, number32, */
                    /* body... (the channel controller's frames) */
    OP_NUM,
};

/* Registers an MMIO operation picks from (reg < 0x80: this table). */
static const uint16_t regs[] = {
    TEMPEST_NC_MAGIC, TEMPEST_NC_NODE_ID, TEMPEST_NC_NUM_NODES,
    TEMPEST_NC_ERR_STATUS, TEMPEST_NC_ERR_INFO, TEMPEST_NC_ERR_COUNT,
    TEMPEST_NC_SCRATCH, TEMPEST_NC_FABRIC_STATE, TEMPEST_NC_PEERS_UP,
    TEMPEST_NC_PEERS_DOWN, TEMPEST_NC_DROPPED, TEMPEST_NC_TICKS_LO,
    TEMPEST_NC_IRQ_STATUS, TEMPEST_NC_IRQ_ENABLE, TEMPEST_NC_IRQ_ACK,
    TEMPEST_NC_EXIT, TEMPEST_NC_SQ_DOORBELL, TEMPEST_NC_RQ_DOORBELL,
    TEMPEST_NC_SQ0_HEAD, TEMPEST_NC_SQ1_HEAD, TEMPEST_NC_RQ_TAIL,
    TEMPEST_NC_CQ_TAIL, TEMPEST_NC_TX_PACKETS, TEMPEST_NC_RX_PACKETS,
    TEMPEST_NC_SEND_ERRORS, TEMPEST_NC_TX_STALLS, TEMPEST_NC_COLL_STATUS,
    TEMPEST_NC_COLL_SEQ, TEMPEST_NC_COLL_RESULT, TEMPEST_NC_COLL_ERROR,
    TEMPEST_NC_COLL_FANOUT, TEMPEST_NC_BCAST_SENT, TEMPEST_NC_BCAST_AVAIL,
    TEMPEST_NC_BCAST_POP, TEMPEST_NC_BCAST_SRC, TEMPEST_NC_BCAST_VALUE,
    TEMPEST_NC_AOR_SET, TEMPEST_NC_AOR_GLOBAL, TEMPEST_NC_BCAST_LOST,
    TEMPEST_NC_TAG_FAULTS, TEMPEST_NC_CMD_ARG(0), TEMPEST_NC_CMD_ARG(1),
    TEMPEST_NC_CMD_ARG(2), TEMPEST_NC_CMD_ARG(3), TEMPEST_NC_CMD_ARG(4),
    TEMPEST_NC_CMD_ARG(5), TEMPEST_NC_CMD_OP, TEMPEST_NC_CMD_COMMIT,
    TEMPEST_NC_CMD_REASON, TEMPEST_NC_CMD_RESULT, TEMPEST_NC_XFER_ACTIVE,
    TEMPEST_NC_XFER_SENT_LO, TEMPEST_NC_XFER_RECV_LO,
    TEMPEST_NC_XFER_WAITING,
};

typedef struct Cursor {
    const uint8_t *p;
    size_t n;
} Cursor;

/* The harness's side of the link, and what it knows of node 0. */
typedef struct Peer {
    int fd;                     /* our link as node 1, or -1 */
    int strangers[MAX_STRANGERS];
    int nstrangers;
    uint32_t seq_out[2];        /* the next DATA sequence number we send */
    uint32_t owed[2];           /* DATA taken from node 0, not credited */
    uint32_t coll_seq;          /* node 0's collective we would join */
    uint32_t xfer_mid;          /* the last message id node 0 used */
    bool got_hello;             /* node 0's HELLO came, with its nonce */
    bool paused;                /* a slow reader: node 0's bytes wait */
    uint8_t nonce[FABRIC_NONCE_SIZE];       /* node 0's, this link */
    size_t budget;              /* bytes we may still write this input */
    uint8_t *rx;                /* node 0's bytes not yet parsed */
    size_t rx_len;
    unsigned sq_tail[2], sq_slots[2], rq_head, rq_slots;
} Peer;

static Peer peer = { .fd = -1 };
static bool verbose;            /* TEMPEST_FUZZ_VERBOSE: say what happens */
static char *sock_dir;
static char *sock_path[2];      /* DIR/node0.sock, DIR/node1.sock */
static int role;                /* QEMU's node id; the harness is 1 - role */
static int listen_fd = -1;      /* the harness's socket, as node 0 */
static DeviceState *node;
static const uint8_t zeros[ARENA_SIZE];

/* ------------------------------------------------------------------ */
/* Operands                                                            */
/* ------------------------------------------------------------------ */

static uint8_t take8(Cursor *c)
{
    if (!c->n) {
        return 0;
    }
    c->n--;
    return *c->p++;
}

static uint16_t take16(Cursor *c)
{
    uint16_t v = take8(c);

    return v | take8(c) << 8;
}

static uint32_t take32(Cursor *c)
{
    uint32_t v = take16(c);

    return v | (uint32_t)take16(c) << 16;
}

static uint64_t take64(Cursor *c)
{
    uint64_t v = take32(c);

    return v | (uint64_t)take32(c) << 32;
}

/* Up to max bytes into buf (zero-padded to want); returns bytes taken. */
static size_t take_bytes(Cursor *c, uint8_t *buf, size_t want, size_t max)
{
    size_t n = MIN(c->n, max);

    memcpy(buf, c->p, n);
    if (n < want) {
        memset(buf + n, 0, want - n);
    }
    c->p += n;
    c->n -= n;
    return n;
}

/* An address inside the data area, for len bytes. */
static uint64_t data_addr(uint64_t v, uint64_t len)
{
    len = MIN(len, DATA_SIZE);
    return DATA_AREA + v % (DATA_SIZE - len + 1);
}

/* ------------------------------------------------------------------ */
/* The link                                                            */
/* ------------------------------------------------------------------ */

static void pump(QTestState *s, int loops);

/* Check and note one frame node 0 sent us. */
static void peer_frame(const FabricHeader *h, const uint8_t *body)
{
    if (verbose) {
        /* A seed's check: the frames it makes the node send. */
        fprintf(stderr, "tempest-fabric: node sent type %u len %u kind %u\n",
                h->type, h->len, h->len ? body[0] : 0);
    }
    switch (h->type) {
    case FABRIC_HELLO:
        peer.got_hello = true;
        memcpy(peer.nonce, body + 32, FABRIC_NONCE_SIZE);
        break;
    case FABRIC_DATA:
        /* As if the guest took it at once: its credit is ours to give. */
        peer.owed[h->net]++;
        break;
    case FABRIC_COLL:
        /* The collective to answer (a child's UP) or to join next. */
        if (body[4] == FABRIC_COLL_UP) {
            peer.coll_seq = fabric_ld32(body);
        } else if (body[4] == FABRIC_COLL_DOWN) {
            peer.coll_seq = fabric_ld32(body) + 1;
        }
        break;
    case FABRIC_XFER:
        peer.xfer_mid = fabric_ld32(body + 4);
        break;
    }
}

/* Read and parse what node 0 has sent; a frame it may not send aborts. */
static void peer_read(void)
{
    while (peer.fd >= 0 && !peer.paused) {
        ssize_t n;
        size_t off = 0;

        n = recv(peer.fd, peer.rx + peer.rx_len, RX_SIZE - peer.rx_len,
                 MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                close(peer.fd);     /* node 0 closed the link */
                peer.fd = -1;
            }
            return;
        }
        peer.rx_len += n;
        for (;;) {
            FabricHeader h;
            size_t flen = 0;
            FabricParse r = fabric_parse(peer.rx + off, peer.rx_len - off,
                                         &h, &flen);

            if (r == FABRIC_PARSE_NEED_MORE) {
                break;
            }
            if (r != FABRIC_PARSE_OK) {
                fprintf(stderr, "tempest-fabric: node 0 sent a frame the "
                        "wire format does not allow: type %u net %u len %u "
                        "(%s)\n", h.type, h.net, h.len,
                        r == FABRIC_PARSE_BAD ? "malformed" :
                        "impossible length");
                abort();
            }
            peer_frame(&h, peer.rx + off + FABRIC_HDR_SIZE);
            off += flen;
        }
        memmove(peer.rx, peer.rx + off, peer.rx_len - off);
        peer.rx_len -= off;
    }
}

/*
 * Write len bytes to *fdp without blocking QEMU, which runs on this very
 * thread: when the socket is full, run the main loop so that the node
 * reads.  Stops at the input's byte budget or when the link breaks (the
 * main loop may close it: *fdp is read again each time).
 */
static void link_write(QTestState *s, int *fdp, const uint8_t *buf,
                       size_t len)
{
    int stuck = 0;

    len = MIN(len, peer.budget);
    peer.budget -= len;
    while (*fdp >= 0 && len) {
        ssize_t n = send(*fdp, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

        if (n > 0) {
            buf += n;
            len -= n;
            stuck = 0;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
                   stuck++ < 1000) {
            pump(s, 1);
        } else {
            return;     /* broken, or the node stopped reading */
        }
    }
}

static void peer_send(QTestState *s, uint16_t type, uint8_t net,
                      const uint8_t *body, size_t len)
{
    uint8_t hdr[FABRIC_HDR_SIZE];

    fabric_put_header(hdr, type, net, len);
    link_write(s, &peer.fd, hdr, sizeof(hdr));
    link_write(s, &peer.fd, body, len);
}

static void peer_send_u32(QTestState *s, uint16_t type, uint8_t net,
                          uint32_t v)
{
    uint8_t b[4];

    fabric_st32(b, v);
    peer_send(s, type, net, b, sizeof(b));
}

static int unix_connect_path(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    g_assert(fd >= 0);
    g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void send_hello(QTestState *s, const FabricHello *h)
{
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];

    fabric_put_hello(frame, h);
    link_write(s, &peer.fd, frame, sizeof(frame));
}

/* The harness's HELLO, as node 1 - role. */
static FabricHello our_hello(void)
{
    return (FabricHello) {
        .magic = FABRIC_MAGIC, .version = FABRIC_VERSION,
        .cluster = TF_CLUSTER, .node = 1 - role, .nodes = 2,
        .credits = TF_CREDITS, .nonce = "tempest-fuzz-nn",
    };
}

/* The harness's proof that it knows the key (the cluster id). */
static void send_auth(QTestState *s)
{
    uint8_t key[8], mac[FABRIC_AUTH_SIZE];
    FabricHello h = our_hello();

    fabric_st64(key, TF_CLUSTER);
    fabric_auth_mac(key, sizeof(key), peer.nonce, h.nonce, TF_CLUSTER,
                    1 - role, role, mac);
    peer_send(s, FABRIC_AUTH, 0, mac, sizeof(mac));
}

/*
 * Run the main loop until done() or for SETUP_MS of real time: QEMU's
 * dial completes in a thread of its own, which a loaded host may not run
 * for a while.  Busy at first, then sleeping a little between turns.
 */
static bool pump_until(QTestState *s, bool (*done)(QTestState *s))
{
    gint64 end = g_get_monotonic_time() + SETUP_MS * 1000;

    for (int i = 0; !done(s); i++) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        pump(s, 1);
        if (i > 200) {
            g_usleep(50);
        }
    }
    return true;
}

static bool hello_or_closed(QTestState *s)
{
    return peer.fd < 0 || peer.got_hello;
}

/* Run the main loop until QEMU's HELLO has come on the link. */
static bool wait_hello(QTestState *s)
{
    pump_until(s, hello_or_closed);
    return peer.got_hello;
}

static void link_reset(void)
{
    peer.rx_len = 0;
    peer.got_hello = false;
    peer.paused = false;
}

/*
 * Connect to QEMU's socket: HELLO, its HELLO, AUTH; with mesh, also say
 * "connected to every node" (an old frame, dropped now: node 0 is ready
 * once every node has joined it).  As node 1 that is the way in; as node 0 it
 * is a connection QEMU (node 1, which accepts only from nodes above it)
 * must refuse.
 */
static void peer_connect(QTestState *s, bool mesh)
{
    FabricHello h = our_hello();

    if (peer.budget < FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE) {
        /*
         * No HELLO could go: the node would wait for it and we for its
         * answer, SETUP_MS each time (a slow unit, not the node's fault).
         */
        return;
    }
    peer.fd = unix_connect_path(sock_path[role]);
    if (peer.fd < 0) {
        return;
    }
    link_reset();
    send_hello(s, &h);
    if (!wait_hello(s)) {
        return;     /* refused: the link is closed or will be */
    }
    send_auth(s);
    if (mesh) {
        peer_send_u32(s, FABRIC_MESH, 0, FABRIC_MESH_MINE);
    }
}

/* A call from QEMU that says HELLO (one that hangs up is dropped). */
static bool called(QTestState *s)
{
    if (peer.fd < 0) {
        peer.fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK);
        link_reset();
    }
    return peer.fd >= 0 && peer.got_hello;
}

/*
 * As node 0: take QEMU's call (its connect runs in a thread of QEMU's,
 * its completion in the main loop), answer its HELLO with ours and AUTH,
 * and declare the cluster ready (MESH 2).
 */
static void peer_accept(QTestState *s)
{
    FabricHello h = our_hello();

    if (pump_until(s, called)) {
        send_hello(s, &h);
        send_auth(s);
        peer_send_u32(s, FABRIC_MESH, 0, FABRIC_MESH_ALL);
    }
}

static void peer_close_all(void)
{
    if (peer.fd >= 0) {
        close(peer.fd);
        peer.fd = -1;
    }
    for (int i = 0; i < peer.nstrangers; i++) {
        close(peer.strangers[i]);
    }
    peer.nstrangers = 0;
    if (listen_fd >= 0) {
        close(listen_fd);
        listen_fd = -1;
        unlink(sock_path[0]);
    }
}

/* As node 0, the harness listens where node 1 dials: DIR/node0.sock. */
static void peer_listen(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };

    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    g_assert(listen_fd >= 0);
    g_strlcpy(sa.sun_path, sock_path[0], sizeof(sa.sun_path));
    unlink(sock_path[0]);
    g_assert(bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    g_assert(listen(listen_fd, 4) == 0);
}

/* Run QEMU's main loop without blocking, and read what node 0 sent. */
static void pump(QTestState *s, int loops)
{
    for (int i = 0; i < loops; i++) {
        main_loop_wait(true);
        peer_read();
    }
}

/* ------------------------------------------------------------------ */
/* Guest-side helpers                                                  */
/* ------------------------------------------------------------------ */

static uint32_t command(QTestState *s, uint32_t op, const uint64_t *args)
{
    for (int i = 0; i < TEMPEST_NC_CMD_NUM_ARGS; i++) {
        qtest_writeq(s, NC(TEMPEST_NC_CMD_ARG(i)), args[i]);
    }
    qtest_writel(s, NC(TEMPEST_NC_CMD_OP), op);
    return qtest_readl(s, NC(TEMPEST_NC_CMD_COMMIT));
}

static void setup_ring(QTestState *s, unsigned ring, unsigned slots)
{
    const uint64_t args[6] = { ring, RING_AREA(ring), slots };

    if (command(s, TEMPEST_CMD_RING_SETUP, args) == TEMPEST_CMD_SUCCESS) {
        if (ring <= TEMPEST_RING_SQ1) {
            peer.sq_slots[ring] = slots;
            peer.sq_tail[ring] = 0;
        } else if (ring == TEMPEST_RING_RQ) {
            peer.rq_slots = slots;
            peer.rq_head = 0;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Operations                                                          */
/* ------------------------------------------------------------------ */

static void op_raw(QTestState *s, Cursor *c)
{
    link_write(s, &peer.fd, c->p, c->n);
}

static void op_data(QTestState *s, Cursor *c)
{
    uint8_t body[FABRIC_DATA_MAX];
    uint8_t flags = take8(c);
    unsigned net = flags & 1;
    uint32_t seq = flags & 2 ? take32(c) : peer.seq_out[net]++;
    uint32_t ctl = flags & 4 ? take32(c) : 0;
    size_t len;

    fabric_st32(body, seq);
    take_bytes(c, body + 4 + 4, TEMPEST_PKT_DATA - 4, TEMPEST_PKT_DATA - 4);
    len = take_bytes(c, body + 4 + TEMPEST_PKT_DATA, 0,
                     TEMPEST_PKT_MAX_PAYLOAD);
    fabric_st32(body + 4, flags & 4 ? ctl : TEMPEST_PKT_VALID | len);
    peer_send(s, FABRIC_DATA, flags & 8 ? flags >> 4 : net, body,
              4 + TEMPEST_PKT_DATA + len);
}

static void op_credit(QTestState *s, Cursor *c)
{
    uint8_t flags = take8(c);
    unsigned net = flags & 1;
    uint8_t wire_net = flags & 4 ? take8(c) : net;
    uint32_t count = flags & 2 ? take32(c) : peer.owed[net];

    if (!(flags & 2)) {
        peer.owed[net] = 0;
    }
    peer_send_u32(s, FABRIC_CREDIT, wire_net, count);
}

static void op_coll(QTestState *s, Cursor *c)
{
    uint8_t flags = take8(c);
    uint8_t hdr[FABRIC_COLL_HDR];
    unsigned lanes, count;
    size_t esz, len;
    g_autofree uint8_t *body = NULL;
    uint8_t pool[64];
    size_t npool;

    hdr[4] = take8(c) % (FABRIC_COLL_NUM_DIRS + 1);    /* dir */
    hdr[5] = take8(c);                                  /* kind */
    hdr[6] = take8(c);                                  /* fn */
    hdr[7] = take8(c);                                  /* variant */
    lanes = take8(c) % (TEMPEST_COLL_MAX_LANES + 1);
    fabric_st16(hdr + 8, lanes);
    fabric_st16(hdr + 10, take16(c));                   /* error */
    count = take16(c) % (TEMPEST_MAX_NODES + 1);
    fabric_st32(hdr + 12, count);
    fabric_st32(hdr, flags & 1 ? take32(c) :
                peer.coll_seq + ((flags >> 1) & 1));
    npool = take_bytes(c, pool, 0, sizeof(pool));

    esz = FABRIC_COLL_ENTRY(lanes);
    len = FABRIC_COLL_HDR + count * esz;
    body = g_malloc0(len);
    memcpy(body, hdr, sizeof(hdr));
    for (unsigned i = 0; i < count; i++) {
        uint8_t *e = body + FABRIC_COLL_HDR + i * esz;

        /*
         * Entry fields cycle through the pool; the node is 1 (the
         * harness's contribution to node 0, or node 1's result from the
         * harness as node 0) unless flag 4 lets the pool say it too.
         */
        for (size_t b = 0; npool && b < esz; b++) {
            e[b] = pool[(i * esz + b) % npool];
        }
        if (!(flags & 4)) {
            fabric_st32(e, 1);
        }
    }
    peer_send(s, FABRIC_COLL, flags & 8 ? flags >> 4 : 0, body, len);
}

/*
 * A transfer-engine frame (tempest-nc-xfer.c) of any kind, its fields
 * made plausible unless flags say raw (8: fields, 4: the whole body).
 * Flags 64 (with neither 4 nor 16) makes a DATA of up to XK_FILL_MAX
 * bytes of one value at an exact offset: a channel's long DATA arrives
 * in two frames, as a sender whose RAM is not mapped sends it.
 */
static void op_xfer(QTestState *s, Cursor *c)
{
    static uint8_t body[FABRIC_XFER_HDR + 8 + XK_FILL_MAX];
    uint8_t kind = take8(c), flags = take8(c);
    uint8_t *p = body + FABRIC_XFER_HDR;
    size_t n = 0;
    uint64_t len;

    memset(body, 0, FABRIC_XFER_HDR + 40 + TEMPEST_PKT_SIZE);
    body[0] = flags & 1 ? kind : kind % XK_NUM;
    fabric_st32(body + 4, flags & 2 ? take32(c) : peer.xfer_mid);
    if (body[0] == XK_DATA && (flags & (64 | 16 | 4)) == 64) {
        fabric_st64(p, take64(c));
        n = take32(c) % (XK_FILL_MAX + 1);
        memset(p + 8, take8(c), n);
        n += 8;
    } else if (flags & 4) {
        n = take_bytes(c, p, 0, 40 + TEMPEST_PKT_SIZE);
    } else {
        switch (body[0]) {
        case XK_HDR: {  /* u64 len, u64 where, u32 flags, 0, u64 cookie */
            uint64_t where;
            uint32_t xflags;

            len = take64(c);
            where = take64(c);
            xflags = flags & 8 ? take32(c) : take8(c);
            if (!(flags & 8)) {
                /* Typed (bit 0), or the channel controller's (bit 1). */
                xflags = (xflags & TEMPEST_XFER_TYPED) |
                         (xflags & 2 ? XK_F_CHAN : 0);
                /* A length it takes; an address in RAM, or a type. */
                len = 1 + len % 0x10000;
                where = xflags & TEMPEST_XFER_TYPED ? where % 4 :
                        data_addr(where, len);
            }
            fabric_st64(p, len);
            fabric_st64(p + 8, where);
            fabric_st32(p + 16, xflags);
            fabric_st64(p + 24, take64(c));
            n = 32;
            break;
        }
        case XK_DATA:   /* u64 offset, data */
            fabric_st64(p, flags & 8 ? take64(c) : take16(c) * 64ULL);
            n = 8 + take_bytes(c, p + 8, 0, TEMPEST_PKT_SIZE);
            break;
        case XK_ACK:    /* u32 status */
            fabric_st32(p, take32(c));
            n = 4;
            break;
        case XK_FOP_REQ:    /* u32 op, 0, u64 addr, u64 operand, cmp */
            fabric_st32(p, take8(c) % 4);
            fabric_st64(p + 8, flags & 8 ? take64(c) :
                        data_addr(take64(c), 8) & ~7ULL);
            fabric_st64(p + 16, take64(c));
            fabric_st64(p + 24, take64(c));
            n = 32;
            break;
        case XK_FOP_REP:    /* u32 status, 0, u64 old */
            fabric_st32(p, take32(c));
            fabric_st64(p + 8, take64(c));
            n = 16;
            break;
        case XK_PUT:    /* u64 offset, u64 n: stored by the sender */
            fabric_st64(p, flags & 8 ? take64(c) : take32(c));
            fabric_st64(p + 8, flags & 8 ? take64(c) : take32(c));
            n = 16;
            break;
        case XK_SPLIT:  /* u64 offset, u64 src: copy from there on */
            fabric_st64(p, flags & 8 ? take64(c) : take32(c));
            fabric_st64(p + 8, flags & 8 ? take64(c) :
                        data_addr(take64(c), 1));
            n = 16;
            break;
        default:            /* GO, ABORT, UNSPLIT: nothing */
            break;
        }
    }
    peer_send(s, FABRIC_XFER, flags & 16 ? flags >> 5 : 0, body,
              FABRIC_XFER_HDR + n);
}

/*
 * A channel-controller frame (tempest-nc-chan.c): to a port of a few of
 * the node's, from one of ours, or any ids (flags 2); the kind's data
 * fuzzed, its length the kind's or any (flags 4).
 */
static void op_chan(QTestState *s, Cursor *c)
{
    uint8_t body[FABRIC_CHAN_HDR + 128] = { 0 };
    uint8_t kind = take8(c), flags = take8(c);
    size_t n;

    body[0] = flags & 1 ? kind : 1 + kind % CK_NUM;
    if (flags & 2) {
        fabric_st32(body + 4, take32(c));
        fabric_st32(body + 8, take32(c));
    } else {
        fabric_st32(body + 4, TEMPEST_CHAN_ID(role, take8(c) % 8));
        fabric_st32(body + 8, TEMPEST_CHAN_ID(1 - role, take8(c) % 8));
    }
    fabric_st32(body + 12, take32(c));
    n = take_bytes(c, body + FABRIC_CHAN_HDR, 0, 128);
    if (!(flags & 4)) {
        /* The lengths tempest-nc-chan.c takes: BIG/GO 8, PORTDATA 16, */
        /* WIRE 4, FWD 8, READY 16, the rest (WITHDRAW, WITHDRAWN too) */
        /* none (DATA: any). */
        static const uint8_t extra[CK_NUM + 1] = { 0, 0, 0, 0, 0, 8, 8, 16,
                                                   4, 8, 0, 0, 16, 0, 0 };

        n = body[0] == 1 ? n : extra[body[0] % (CK_NUM + 1)];
    }
    peer_send(s, FABRIC_CHAN, 0, body, FABRIC_CHAN_HDR + n);
}

static void op_mesh(QTestState *s, Cursor *c)
{
    peer_send_u32(s, FABRIC_MESH, 0, take32(c));
}

static void op_dial(QTestState *s, Cursor *c)
{
    uint8_t body[FABRIC_DIAL_SIZE];

    fabric_st32(body, take32(c));
    fabric_st32(body + 4, take32(c));
    peer_send(s, FABRIC_DIAL, 0, body, sizeof(body));
}

static void op_gone(QTestState *s, Cursor *c)
{
    uint8_t body[FABRIC_GONE_SIZE];

    fabric_st32(body, take32(c));
    fabric_st32(body + 4, take32(c));
    fabric_st32(body + 8, take32(c));
    peer_send(s, FABRIC_GONE, 0, body, sizeof(body));
}

static void op_bye(QTestState *s, Cursor *c)
{
    peer_send_u32(s, FABRIC_BYE, 0, take32(c));
}

static void op_hello(QTestState *s, Cursor *c)
{
    uint8_t flags = take8(c);
    FabricHello h = our_hello();
    uint32_t magic = take32(c), version = take32(c);
    uint64_t cluster = take64(c);
    uint32_t nd = take32(c), nodes = take32(c), credits = take32(c);

    h.magic = flags & 1 ? magic : h.magic;
    h.version = flags & 2 ? version : h.version;
    h.cluster = flags & 4 ? cluster : h.cluster;
    h.node = flags & 8 ? nd : h.node;
    h.nodes = flags & 16 ? nodes : h.nodes;
    h.credits = flags & 32 ? credits : h.credits;
    send_hello(s, &h);
    if (flags & 64) {
        uint8_t mac[FABRIC_AUTH_SIZE];

        take_bytes(c, mac, sizeof(mac), sizeof(mac));
        peer_send(s, FABRIC_AUTH, 0, mac, sizeof(mac));
    }
}

typedef void OpFn(QTestState *s, Cursor *c);

static OpFn *const frame_ops[] = {
    op_raw, op_data, op_credit, op_coll, op_xfer, op_mesh, op_bye, op_hello,
    op_chan,
};

static void op_flood(QTestState *s, Cursor *c)
{
    unsigned count = 1 + take16(c) % MAX_FLOOD;
    OpFn *fn = frame_ops[take8(c) % ARRAY_SIZE(frame_ops)];

    for (unsigned i = 0; i < count && peer.budget && peer.fd >= 0; i++) {
        Cursor again = *c;

        fn(s, &again);
    }
}

static void op_disconnect(QTestState *s, Cursor *c)
{
    uint8_t mode = take8(c) % 3;

    if (peer.fd < 0) {
        return;
    }
    if (mode == 1) {
        shutdown(peer.fd, SHUT_WR);     /* EOF for the node; we still read */
        return;
    }
    if (mode == 2) {
        peer_send_u32(s, FABRIC_BYE, 0, take32(c));
    }
    close(peer.fd);
    peer.fd = -1;
}

static void op_reconnect(QTestState *s, Cursor *c)
{
    uint8_t flags = take8(c);

    if (peer.fd >= 0) {
        close(peer.fd);
        peer.fd = -1;
    }
    peer_connect(s, flags & 1);
}

static void op_stranger(QTestState *s, Cursor *c)
{
    int fd;

    if (peer.nstrangers == MAX_STRANGERS) {
        return;
    }
    fd = unix_connect_path(sock_path[role]);
    if (fd < 0) {
        return;
    }
    peer.strangers[peer.nstrangers++] = fd;
    link_write(s, &peer.strangers[peer.nstrangers - 1], c->p, c->n);
}

static void op_run(QTestState *s, Cursor *c)
{
    unsigned loops = take8(c) % 16;
    uint32_t ticks = take32(c) % 1000000;

    pump(s, loops + 1);
    if (ticks) {
        qtest_clock_step(s, (uint64_t)ticks * TEMPEST_TICK_NS);
        pump(s, 1);
    }
}

static uint64_t reg_addr(Cursor *c)
{
    uint8_t r = take8(c);

    if (r & 0x80) {
        return NC(take16(c) % TEMPEST_NC_SIZE);
    }
    return NC(regs[r % ARRAY_SIZE(regs)]);
}

static void op_mmio_write(QTestState *s, Cursor *c)
{
    uint64_t addr = reg_addr(c);
    uint8_t size = take8(c) % 4;
    uint64_t v = take64(c);

    switch (size) {
    case 0:
        qtest_writel(s, addr, v);
        break;
    case 1:
        qtest_writeq(s, addr, v);
        break;
    case 2:
        qtest_writew(s, addr, v);
        break;
    default:
        qtest_writeb(s, addr, v);
        break;
    }
}

static void op_mmio_read(QTestState *s, Cursor *c)
{
    uint64_t addr = reg_addr(c);

    switch (take8(c) % 4) {
    case 0:
        qtest_readl(s, addr);
        break;
    case 1:
        qtest_readq(s, addr);
        break;
    case 2:
        qtest_readw(s, addr);
        break;
    default:
        qtest_readb(s, addr);
        break;
    }
}

/*
 * A command.  Unless raw, its arguments are made plausible: nodes 0 or 1,
 * addresses inside the data area, lengths the engine may take, so that
 * most commands succeed and meet the peer's frames.
 */
static void op_cmd(QTestState *s, Cursor *c)
{
    uint8_t op = take8(c), raw = take8(c) & 1;
    uint64_t a[6];

    for (int i = 0; i < 6; i++) {
        a[i] = take64(c);
    }
    op = raw ? op : 1 + op % TEMPEST_CMD_CHAN;
    if (!raw) {
        switch (op) {
        case TEMPEST_CMD_CHAN:
            /* A port of a few on either node; buffers in the arena. */
            a[0] = 1 + a[0] % TEMPEST_CHAN_OP_INPUT_PORT;
            if (a[0] == TEMPEST_CHAN_OP_ALLOC) {
                a[2] %= 0x10000;
                a[1] = data_addr(a[1], a[2]);
                break;
            }
            a[1] = TEMPEST_CHAN_ID(role, a[1] % 8);
            switch (a[0]) {
            case TEMPEST_CHAN_OP_CONNECT:
                a[2] = TEMPEST_CHAN_ID(a[2] & 1 ? 1 - role : role,
                                       (a[2] >> 1) % 8);
                break;
            case TEMPEST_CHAN_OP_OUTPUT_PORT:
                a[2] = TEMPEST_CHAN_ID(role, a[2] % 8);
                break;
            case TEMPEST_CHAN_OP_OUTPUTDATA:
            case TEMPEST_CHAN_OP_OUTPUT:
                /*
                 * Past TEMPEST_CHAN_INLINE: the transfer engine; past
                 * twice that, one a sender may split (XFER_SPLIT_MIN).
                 */
                a[3] %= 4 * TEMPEST_CHAN_INLINE;
                a[2] = data_addr(a[2], a[3]);
                break;
            default:
                /* Past TEMPEST_CHAN_INLINE: an input offers it (READY). */
                a[3] %= 4 * TEMPEST_CHAN_INLINE;
                a[2] = data_addr(a[2], a[3]);
                break;
            }
            break;
        case TEMPEST_CMD_RING_SETUP:
            a[0] %= TEMPEST_NUM_RINGS;
            a[1] = RING_AREA(a[1] % 4);
            a[2] = 1ULL << (a[2] % 8);
            break;
        case TEMPEST_CMD_TIMER_ARM:
            a[0] %= 2000;
            break;
        case TEMPEST_CMD_COLL_START:
            a[0] = 1 + a[0] % 2;
            a[1] = (a[1] & 0xff) % TEMPEST_COLL_NUM_FNS |
                   ((a[1] >> 8 & 0xff) % 3) << 8;
            a[3] = a[0] == TEMPEST_COLL_ALLGATHER ? 0 :
                   a[3] % (TEMPEST_COLL_MAX_LANES + 1);
            if (a[3]) {
                a[2] = data_addr(a[2], a[3] * 8);
            }
            a[4] = data_addr(a[4], TEMPEST_COLL_MAX_LANES * 8);
            a[5] %= 3;
            break;
        case TEMPEST_CMD_XFER:
            a[0] %= 2;
            a[2] = 1 + a[2] % 0x10000;
            a[1] = data_addr(a[1], a[2]);
            a[5] &= TEMPEST_XFER_TYPED;
            a[3] = a[5] ? a[3] % 4 : data_addr(a[3], a[2]);
            break;
        case TEMPEST_CMD_BUF_POST:
            a[0] %= 4;
            a[2] = 1 + a[2] % 0x10000;
            a[1] = data_addr(a[1], a[2]);
            break;
        case TEMPEST_CMD_FOP:
            a[0] %= 2;
            a[1] = data_addr(a[1], 8) & ~7ULL;
            a[2] %= 4;
            break;
        }
    }
    command(s, op, a);
    /* Read COMMIT again: a waiting fetch-and-op answers here. */
    pump(s, 1);
    qtest_readl(s, NC(TEMPEST_NC_CMD_COMMIT));
}

static void op_rings(QTestState *s, Cursor *c)
{
    for (unsigned ring = 0; ring < TEMPEST_NUM_RINGS; ring++) {
        setup_ring(s, ring, 1U << (1 + take8(c) % 6));
    }
}

static void op_send(QTestState *s, Cursor *c)
{
    uint8_t flags = take8(c), kind = take8(c), len = take8(c);
    uint16_t dest = take16(c);
    unsigned ring = flags & 1;
    uint8_t pkt[TEMPEST_PKT_SIZE] = { 0 };
    uint64_t slot;

    if (!peer.sq_slots[ring]) {
        return;
    }
    slot = RING_AREA(ring) + peer.sq_tail[ring] * TEMPEST_PKT_SIZE;
    peer.sq_tail[ring] = (peer.sq_tail[ring] + 1) % peer.sq_slots[ring];
    switch (flags >> 1 & 3) {
    case 0:
        dest = 1 - role;    /* the harness */
        break;
    case 1:
        dest = role;        /* itself */
        break;
    }
    fabric_st16(pkt + TEMPEST_PKT_NODE, dest);
    pkt[TEMPEST_PKT_KIND] = kind;
    fabric_st32(pkt + TEMPEST_PKT_WORD0, take32(c));
    fabric_st64(pkt + TEMPEST_PKT_WORD1, take64(c));
    fabric_st64(pkt + TEMPEST_PKT_WORD2, take64(c));
    qtest_memwrite(s, slot + 4, pkt + 4, sizeof(pkt) - 4);
    qtest_writel(s, slot, TEMPEST_PKT_VALID |
                 (flags & 8 ? len + 200 : len % (TEMPEST_PKT_PAYLOAD + 1)));
    if (!(flags & 16)) {
        qtest_writel(s, NC(TEMPEST_NC_SQ_DOORBELL), ring);
    }
}

static void op_rq_free(QTestState *s, Cursor *c)
{
    unsigned n = 1 + take8(c) % 64;

    if (!peer.rq_slots) {
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        qtest_writel(s, RING_AREA(TEMPEST_RING_RQ) +
                     peer.rq_head * TEMPEST_PKT_SIZE, 0);
        peer.rq_head = (peer.rq_head + 1) % peer.rq_slots;
    }
    qtest_writel(s, NC(TEMPEST_NC_RQ_DOORBELL), 1);
}

static void op_pause(QTestState *s, Cursor *c)
{
    peer.paused = take8(c) != 0;
}

static OpFn *const ops[OP_NUM] = {
    [OP_RAW] = op_raw,
    [OP_DATA] = op_data,
    [OP_CREDIT] = op_credit,
    [OP_COLL] = op_coll,
    [OP_XFER] = op_xfer,
    [OP_MESH] = op_mesh,
    [OP_BYE] = op_bye,
    [OP_HELLO] = op_hello,
    [OP_FLOOD] = op_flood,
    [OP_DISCONNECT] = op_disconnect,
    [OP_RECONNECT] = op_reconnect,
    [OP_STRANGER] = op_stranger,
    [OP_RUN] = op_run,
    [OP_MMIO_WRITE] = op_mmio_write,
    [OP_MMIO_READ] = op_mmio_read,
    [OP_CMD] = op_cmd,
    [OP_RINGS] = op_rings,
    [OP_SEND] = op_send,
    [OP_RQ_FREE] = op_rq_free,
    [OP_PAUSE] = op_pause,
    [OP_DIAL] = op_dial,
    [OP_GONE] = op_gone,
    [OP_CHAN] = op_chan,
};

/* ------------------------------------------------------------------ */
/* The target                                                          */
/* ------------------------------------------------------------------ */

static void rcu_nothing(struct rcu_head *head)
{
}

/*
 * Run every pending RCU callback, as QEMU's monitor does between taking a
 * device away and adding one (drain_call_rcu() in qdev-monitor.c):
 * unrealize leaves some (address_space_destroy's), and realizing the same
 * device again before they ran would hand them its new state.  The RCU
 * thread batches callbacks (30, or 10 ms): it gets 32.
 */
static void rcu_flush(void)
{
    static struct rcu_head nudge[32];

    for (int i = 0; i < ARRAY_SIZE(nudge); i++) {
        call_rcu1(&nudge[i], rcu_nothing);
    }
    drain_call_rcu();
}

static bool ready(QTestState *s)
{
    return qtest_readl(s, NC(TEMPEST_NC_FABRIC_STATE)) ==
           TEMPEST_FABRIC_READY;
}

/*
 * A fresh node with node id role: a new fabric for the node controller,
 * which is then reset, the arena cleared, and the harness joins it as
 * the other node.  The fabric is made again by the functions realize
 * and unrealize use (tempest_nc_fabric_detach/attach), not by a whole
 * unrealize and realize: that needs an RCU drain each time (the DMA
 * address space), and the RCU thread sleeps 10 ms after every batch, so
 * inputs would cost 7 ms more.  TEMPEST_FUZZ_REREALIZE=1 in the
 * environment does the whole unrealize, realize instead (to check that
 * a finding does not come from this shortcut).
 */
static void fresh_node(QTestState *s)
{
    static int rerealize = -1;

    if (rerealize < 0) {
        rerealize = getenv("TEMPEST_FUZZ_REREALIZE") != NULL;
    }
    peer_close_all();
    if (rerealize) {
        object_property_set_bool(OBJECT(node), "realized", false,
                                 &error_abort);
        rcu_flush();
        object_property_set_uint(OBJECT(node), "node-id", role,
                                 &error_abort);
        if (role) {
            peer_listen();
        }
        object_property_set_bool(OBJECT(node), "realized", true,
                                 &error_abort);
    } else {
        tempest_nc_fabric_detach(TEMPEST_NC(node));
        TEMPEST_NC(node)->node_id = role;
        if (role) {
            peer_listen();
        }
        tempest_nc_fabric_attach(TEMPEST_NC(node), &error_abort);
    }
    device_cold_reset(node);
    /* Not qtest_memset(): QEMU 10.0's fuzz wrapper of it leaks its buffer. */
    qtest_memwrite(s, ARENA, zeros, ARENA_SIZE);

    memset(peer.seq_out, 0, sizeof(peer.seq_out));
    memset(peer.owed, 0, sizeof(peer.owed));
    memset(peer.sq_tail, 0, sizeof(peer.sq_tail));
    memset(peer.sq_slots, 0, sizeof(peer.sq_slots));
    peer.rq_head = peer.rq_slots = 0;
    peer.coll_seq = peer.xfer_mid = 0;
    peer.budget = WRITE_BUDGET;
    if (role) {
        peer_accept(s);
    } else {
        peer_connect(s, true);
    }
    if (pump_until(s, ready)) {
        return;
    }
    fprintf(stderr, "tempest-fabric: node %d did not become READY after a "
            "correct HELLO, AUTH and MESH (state %u)\n", role,
            qtest_readl(s, NC(TEMPEST_NC_FABRIC_STATE)));
    abort();
}

static void tempest_fabric_fuzz(QTestState *s, const unsigned char *data,
                                size_t size)
{
    const unsigned char *cmd = data + 1;

    role = size ? data[0] & 1 : 0;
    size = size ? size - 1 : 0;
    fresh_node(s);
    while (cmd && size) {
        const unsigned char *next = memmem(cmd, size, SEPARATOR,
                                           strlen(SEPARATOR));
        size_t len = next ? next - cmd : size;

        if (len) {
            Cursor c = { cmd + 1, len - 1 };

            if (verbose) {
                fprintf(stderr, "tempest-fabric: %" PRId64 " ms: op %u "
                        "(%zu bytes)\n", g_get_monotonic_time() / 1000,
                        cmd[0] % OP_NUM, len - 1);
            }
            ops[cmd[0] % OP_NUM](s, &c);
            pump(s, 2);
        }
        if (!next) {
            break;
        }
        size -= len + strlen(SEPARATOR);
        cmd = next + strlen(SEPARATOR);
    }
    peer.paused = false;
    pump(s, 4);
    if (verbose) {
        fprintf(stderr, "tempest-fabric: dropped %u, chan dropped %u, "
                "received %u bytes\n",
                qtest_readl(s, NC(TEMPEST_NC_DROPPED)),
                qtest_readl(s, NC(TEMPEST_NC_CHAN_DROPPED)),
                qtest_readl(s, NC(TEMPEST_NC_XFER_RECV_LO)));
    }
    peer_close_all();
    pump(s, 1);
}

static void cleanup(void)
{
    for (int i = 0; i < 2; i++) {
        if (sock_path[i]) {
            unlink(sock_path[i]);
        }
    }
    if (sock_dir) {
        rmdir(sock_dir);
    }
}

static void tempest_fabric_pre_vm_init(void)
{
    sock_dir = g_dir_make_tmp("tempest-fuzz-XXXXXX", NULL);
    g_assert(sock_dir);
    for (int i = 0; i < 2; i++) {
        sock_path[i] = g_strdup_printf("%s/node%d.sock", sock_dir, i);
    }
    peer.rx = g_malloc(RX_SIZE);
    verbose = getenv("TEMPEST_FUZZ_VERBOSE") != NULL;
    atexit(cleanup);
}

static GString *tempest_fabric_cmdline(FuzzTarget *t)
{
    GString *cmd = g_string_new(TARGET_NAME);

    /* tagmem=0: its regions are made by realize and never undone. */
    g_string_append_printf(cmd, " -machine tempest,accel=qtest,node-id=0,"
                           "num-nodes=2,fabric=unix:%s,cluster-id=0x%"
                           PRIx64 ",credits=%d,tagmem=0 -m 128M "
                           "-nodefaults -display none ",
                           sock_dir, TF_CLUSTER, TF_CREDITS);
    return cmd;
}

static void tempest_fabric_pre_fuzz(QTestState *s)
{
    Object *obj = object_resolve_path_type("", TF_NODE_TYPE, NULL);

    if (!obj) {
        fprintf(stderr, "tempest-fabric: no %s device\n", TF_NODE_TYPE);
        exit(1);
    }
    node = DEVICE(obj);
}

static void register_tempest_fabric_fuzz_target(void)
{
    fuzz_add_target(&(FuzzTarget){
        .name = "tempest-fabric",
        .description = "Drive a Tempest node's fabric as its peer: frames, "
                       "truncations, floods, disconnects, with guest "
                       "register pokes between them",
        .get_init_cmdline = tempest_fabric_cmdline,
        .pre_vm_init = tempest_fabric_pre_vm_init,
        .pre_fuzz = tempest_fabric_pre_fuzz,
        .fuzz = tempest_fabric_fuzz,
    });
}

fuzz_target_init(register_tempest_fabric_fuzz_target);
