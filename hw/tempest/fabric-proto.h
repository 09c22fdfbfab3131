/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Tempest fabric's wire format: frames exchanged between the node
 * controllers of one cluster over a stream socket (Unix or TCP).
 *
 * Pure C with no QEMU dependency, so that the host unit tests check the
 * same parser the device uses.  All fields are little-endian.
 *
 *   frame   = header (8 bytes) + body (len bytes)
 *   header  = u16 type | u8 net | u8 flags | u32 len
 *
 *   HELLO   body: u32 magic, u32 version, u64 cluster, u32 node,
 *                 u32 nodes, u32 credits, u32 reserved,
 *                 u8 nonce[16]                               (48 bytes)
 *   AUTH    body: u8 mac[32]: HMAC-SHA256 under the cluster's key of
 *                 "tempest-auth", the receiver's nonce, the sender's
 *                 nonce, the cluster, the sender's and receiver's node
 *                 ids (fabric_auth_mac): the sender knows the key
 *   DATA    body: u32 seq, then a packet slot: the 32-byte packet header
 *                 of tempest-hw.h and 0..224 payload bytes
 *   CREDIT  body: u32 count: the sender may send count more DATA frames
 *                 on network net
 *   BYE     body: u32 status: the node is exiting with this status
 *   MESH    body: u32 kind: 2 (from node 0) "every node has joined me":
 *                 the cluster is ready (kind 1, once "I am connected to
 *                 every node", is no longer sent and is dropped)
 *   DIAL    body: u32 from, u32 to: node 'from' wants a link with the
 *                 higher node 'to', which dials it; sent to node 0, which
 *                 relays it to 'to' (docs/fabric.rst, "Forming the
 *                 cluster")
 *   GONE    body: u32 node, u32 exited, u32 status: from node 0 only,
 *                 "node went": exited (1, with its status) or lost (0)
 *   XFER    body: the transfer engine (tempest-nc-xfer.c): u8 kind,
 *                 3 bytes 0, u32 message id, then what the kind carries
 *   CHAN    body: the channel controller (tempest-nc-chan.c): u8 kind,
 *                 3 bytes 0, u32 to, u32 from, u32 number, then the
 *                 kind's data (docs/chan.rst)
 *   COLL    body: the control network (tempest-nc-coll.c):
 *                 u32 seq, u8 dir, u8 kind, u8 fn, u8 variant,
 *                 u16 lanes, u16 error, u32 count,
 *                 then count entries of u32 node, u32 seg, u64 lanes[lanes]
 */
#ifndef HW_TEMPEST_FABRIC_PROTO_H
#define HW_TEMPEST_FABRIC_PROTO_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <glib.h>

#include "standard-headers/tempest/tempest-hw.h"

#define FABRIC_MAGIC            0x54504642U     /* "TPFB" */
#define FABRIC_VERSION          2
#define FABRIC_HDR_SIZE         8
#define FABRIC_HELLO_SIZE       48
#define FABRIC_NONCE_SIZE       16
#define FABRIC_AUTH_SIZE        32
#define FABRIC_DATA_MIN         (4 + TEMPEST_PKT_DATA)
#define FABRIC_DATA_MAX         (4 + TEMPEST_PKT_MAX_SIZE)
#define FABRIC_COLL_HDR         16
#define FABRIC_COLL_ENTRY(lanes) (8 + 8 * (lanes))
/* The largest frame: a gather of every node's full vector. */
#define FABRIC_MAX_BODY         (FABRIC_COLL_HDR + TEMPEST_MAX_NODES * \
                                 FABRIC_COLL_ENTRY(TEMPEST_COLL_MAX_LANES))

enum {
    FABRIC_HELLO = 1,
    FABRIC_DATA = 2,
    FABRIC_CREDIT = 3,
    FABRIC_BYE = 4,
    FABRIC_COLL = 5,
    FABRIC_XFER = 6,
    FABRIC_MESH = 7,
    FABRIC_AUTH = 8,
    FABRIC_SHM = 9,         /* setting up a shared-memory link (u32 step) */
    FABRIC_BELL = 10,       /* doorbell of a shared-memory link (empty) */
    FABRIC_DIAL = 11,       /* u32 from, u32 to: 'to', dial 'from' */
    FABRIC_GONE = 12,       /* u32 node, u32 exited, u32 status */
    FABRIC_CHAN = 13,       /* the channel controller's messages */
};

#define FABRIC_DIAL_SIZE        8
#define FABRIC_GONE_SIZE        12

#define FABRIC_MESH_MINE        1
#define FABRIC_MESH_ALL         2

/* HELLO flags */
#define FABRIC_HELLO_SHM        (1U << 0)   /* can take a shared-memory link */

/* FABRIC_SHM steps (docs/fabric.rst, "Shared memory") */
enum {
    FABRIC_SHM_OFFER = 1,   /* dialler: the link's file is ready */
    FABRIC_SHM_ACK = 2,     /* acceptor: mapped; my frames go there now */
    FABRIC_SHM_NACK = 3,    /* acceptor: could not; stay on the socket */
    FABRIC_SHM_SWITCH = 4,  /* dialler: my frames go there now */
};

#define FABRIC_XFER_HDR         8       /* kind, 3 bytes 0, message id */
#define FABRIC_CHAN_HDR         16      /* kind, 0, 0, 0, to, from, number */

/* COLL directions */
enum {
    FABRIC_COLL_UP,         /* contributions of a subtree, to the parent */
    FABRIC_COLL_DOWN,       /* results for a subtree, to a child */
    FABRIC_BCAST_UP,        /* a broadcast word, to the root */
    FABRIC_BCAST_DOWN,      /* a broadcast word, down the tree */
    FABRIC_BCAST_ACK,       /* from the root: the broadcast went out */
    FABRIC_AOR_UP,          /* a node's async-OR bit, to the root */
    FABRIC_AOR_DOWN,        /* the new global async OR, from the root */
    FABRIC_BCAST_CREDIT,    /* broadcast words a subtree has taken, up */
    /*
     * UP and DOWN, and: the subtree has the shared combining area (up);
     * every node has it, the next collectives combine there (down).
     */
    FABRIC_COLL_UP_SHM,
    FABRIC_COLL_DOWN_SHM,
    FABRIC_COLL_NUM_DIRS,
};

typedef struct FabricHeader {
    uint16_t type;
    uint8_t net;
    uint8_t flags;
    uint32_t len;
} FabricHeader;

typedef struct FabricHello {
    uint32_t magic;
    uint32_t version;
    uint64_t cluster;
    uint32_t node;
    uint32_t nodes;
    uint32_t credits;
    uint8_t nonce[FABRIC_NONCE_SIZE];
    uint32_t flags;         /* FABRIC_HELLO_* (body offset 28) */
} FabricHello;

/* What a parser makes of the bytes it has. */
typedef enum {
    FABRIC_PARSE_NEED_MORE, /* not a whole frame yet */
    FABRIC_PARSE_OK,        /* a valid frame */
    FABRIC_PARSE_BAD,       /* a whole frame, invalid: drop it, go on */
    FABRIC_PARSE_FATAL,     /* the stream cannot be trusted: close it */
} FabricParse;

static inline uint16_t fabric_ld16(const uint8_t *p)
{
    return p[0] | (p[1] << 8);
}

static inline uint32_t fabric_ld32(const uint8_t *p)
{
    return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t fabric_ld64(const uint8_t *p)
{
    return fabric_ld32(p) | ((uint64_t)fabric_ld32(p + 4) << 32);
}

static inline void fabric_st16(uint8_t *p, uint16_t v)
{
    p[0] = v;
    p[1] = v >> 8;
}

static inline void fabric_st32(uint8_t *p, uint32_t v)
{
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
}

static inline void fabric_st64(uint8_t *p, uint64_t v)
{
    fabric_st32(p, v);
    fabric_st32(p + 4, v >> 32);
}

static inline void fabric_put_header(uint8_t *p, uint16_t type, uint8_t net,
                                     uint32_t len)
{
    fabric_st16(p, type);
    p[2] = net;
    p[3] = 0;
    fabric_st32(p + 4, len);
}

static inline void fabric_put_hello(uint8_t *p, const FabricHello *h)
{
    fabric_put_header(p, FABRIC_HELLO, 0, FABRIC_HELLO_SIZE);
    p += FABRIC_HDR_SIZE;
    memset(p, 0, FABRIC_HELLO_SIZE);
    fabric_st32(p, h->magic);
    fabric_st32(p + 4, h->version);
    fabric_st64(p + 8, h->cluster);
    fabric_st32(p + 16, h->node);
    fabric_st32(p + 20, h->nodes);
    fabric_st32(p + 24, h->credits);
    fabric_st32(p + 28, h->flags);
    memcpy(p + 32, h->nonce, FABRIC_NONCE_SIZE);
}

static inline void fabric_get_hello(const uint8_t *body, FabricHello *h)
{
    h->magic = fabric_ld32(body);
    h->version = fabric_ld32(body + 4);
    h->cluster = fabric_ld64(body + 8);
    h->node = fabric_ld32(body + 16);
    h->nodes = fabric_ld32(body + 20);
    h->credits = fabric_ld32(body + 24);
    h->flags = fabric_ld32(body + 28);
    memcpy(h->nonce, body + 32, FABRIC_NONCE_SIZE);
}

/*
 * The proof that node 'from' knows the cluster's key, for node 'to' whose
 * HELLO carried nonce_to (so it cannot be replayed to another connection).
 */
static inline void fabric_auth_mac(const uint8_t *key, size_t key_len,
                                   const uint8_t *nonce_to,
                                   const uint8_t *nonce_from,
                                   uint64_t cluster, uint32_t from,
                                   uint32_t to,
                                   uint8_t mac[FABRIC_AUTH_SIZE])
{
    GHmac *h = g_hmac_new(G_CHECKSUM_SHA256, key, key_len);
    uint8_t ids[16];
    gsize len = FABRIC_AUTH_SIZE;

    fabric_st64(ids, cluster);
    fabric_st32(ids + 8, from);
    fabric_st32(ids + 12, to);
    g_hmac_update(h, (const guchar *)"tempest-auth", 12);
    g_hmac_update(h, nonce_to, FABRIC_NONCE_SIZE);
    g_hmac_update(h, nonce_from, FABRIC_NONCE_SIZE);
    g_hmac_update(h, ids, sizeof(ids));
    g_hmac_get_digest(h, mac, &len);
    g_hmac_unref(h);
}

/* Compare two MACs in time that does not depend on where they differ. */
static inline bool fabric_mac_equal(const uint8_t *a, const uint8_t *b)
{
    uint8_t d = 0;

    for (int i = 0; i < FABRIC_AUTH_SIZE; i++) {
        d |= a[i] ^ b[i];
    }
    return d == 0;
}

/*
 * Parse the frame at the start of buf (avail bytes).  On OK or BAD,
 * *frame_len is the whole frame's size, to skip.  A length that no valid
 * frame has is FATAL: the byte stream has lost its framing.
 */
static inline FabricParse fabric_parse(const uint8_t *buf, size_t avail,
                                       FabricHeader *hdr, size_t *frame_len)
{
    uint32_t plen;

    if (avail < FABRIC_HDR_SIZE) {
        return FABRIC_PARSE_NEED_MORE;
    }
    hdr->type = fabric_ld16(buf);
    hdr->net = buf[2];
    hdr->flags = buf[3];
    hdr->len = fabric_ld32(buf + 4);
    if (hdr->len > FABRIC_MAX_BODY) {
        return FABRIC_PARSE_FATAL;
    }
    if (avail < FABRIC_HDR_SIZE + hdr->len) {
        return FABRIC_PARSE_NEED_MORE;
    }
    *frame_len = FABRIC_HDR_SIZE + hdr->len;

    switch (hdr->type) {
    case FABRIC_HELLO:
        return hdr->len == FABRIC_HELLO_SIZE && hdr->net == 0 ?
               FABRIC_PARSE_OK : FABRIC_PARSE_BAD;
    case FABRIC_DATA:
        if (hdr->len < FABRIC_DATA_MIN || hdr->net > TEMPEST_NET_REPLY) {
            return FABRIC_PARSE_BAD;
        }
        /* The packet's own length must be what the frame carries. */
        plen = fabric_ld32(buf + FABRIC_HDR_SIZE + 4 + TEMPEST_PKT_CTL) &
               TEMPEST_PKT_LEN_MASK;
        return plen <= TEMPEST_PKT_MAX_PAYLOAD &&
               hdr->len == FABRIC_DATA_MIN + plen ?
               FABRIC_PARSE_OK : FABRIC_PARSE_BAD;
    case FABRIC_CREDIT:
        return hdr->len == 4 && hdr->net <= TEMPEST_NET_REPLY ?
               FABRIC_PARSE_OK : FABRIC_PARSE_BAD;
    case FABRIC_BYE:
        return hdr->len == 4 ? FABRIC_PARSE_OK : FABRIC_PARSE_BAD;
    case FABRIC_MESH:
        return hdr->len == 4 && hdr->net == 0 ? FABRIC_PARSE_OK :
               FABRIC_PARSE_BAD;
    case FABRIC_AUTH:
        return hdr->len == FABRIC_AUTH_SIZE && hdr->net == 0 ?
               FABRIC_PARSE_OK : FABRIC_PARSE_BAD;
    case FABRIC_SHM:
        return hdr->len == 4 && hdr->net == 0 ? FABRIC_PARSE_OK :
               FABRIC_PARSE_BAD;
    case FABRIC_BELL:
        return hdr->len == 0 && hdr->net == 0 ? FABRIC_PARSE_OK :
               FABRIC_PARSE_BAD;
    case FABRIC_DIAL:
        return hdr->len == FABRIC_DIAL_SIZE && hdr->net == 0 ?
               FABRIC_PARSE_OK : FABRIC_PARSE_BAD;
    case FABRIC_GONE:
        return hdr->len == FABRIC_GONE_SIZE && hdr->net == 0 &&
               fabric_ld32(buf + FABRIC_HDR_SIZE + 4) <= 1 ?
               FABRIC_PARSE_OK : FABRIC_PARSE_BAD;
    case FABRIC_COLL: {
        const uint8_t *b = buf + FABRIC_HDR_SIZE;
        uint32_t lanes, count;

        if (hdr->len < FABRIC_COLL_HDR) {
            return FABRIC_PARSE_BAD;
        }
        lanes = fabric_ld16(b + 8);
        count = fabric_ld32(b + 12);
        return b[4] < FABRIC_COLL_NUM_DIRS &&
               lanes <= TEMPEST_COLL_MAX_LANES &&
               count <= TEMPEST_MAX_NODES &&
               hdr->len == FABRIC_COLL_HDR +
                           count * FABRIC_COLL_ENTRY(lanes) ?
               FABRIC_PARSE_OK : FABRIC_PARSE_BAD;
    }
    case FABRIC_CHAN:
        /* The kinds and their sizes are checked by the channel engine. */
        return hdr->len >= FABRIC_CHAN_HDR && hdr->net == 0 ?
               FABRIC_PARSE_OK : FABRIC_PARSE_BAD;
    case FABRIC_XFER:
        /* The kinds and their sizes are checked by the transfer engine. */
        return hdr->len >= FABRIC_XFER_HDR && hdr->net == 0 ?
               FABRIC_PARSE_OK : FABRIC_PARSE_BAD;
    default:
        return FABRIC_PARSE_BAD;
    }
}

#endif /* HW_TEMPEST_FABRIC_PROTO_H */
