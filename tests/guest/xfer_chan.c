/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest spec 3.4 (bulk data transfer channels), the whole life cycle:
 * set_channel_src, the ID passed in an active message, set_channel_dst,
 * the "established" poll, sends of exactly the destination's size, the
 * send and receive callbacks, is_channel_ready, reset_channel and the
 * "reset" poll, the user pointers of both endpoints, and destroying both
 * endpoints; data checked byte for byte, and the bytes around each
 * destination buffer checked untouched.
 *
 *   xfer_chan ring [MAX [ROUNDS]]   every node sends to the next one
 *       (a ring) on one channel per size, sizes 4 bytes .. MAX (default
 *       TPPI_MAX_CHANNEL_BYTES), source and destination at odd, different
 *       alignments, ROUNDS sends per channel (default 2)
 *   xfer_chan many [PER_PEER]       PER_PEER (default 24) channels from
 *       every node to every other, all open and sending at once (more
 *       than the controller's 64 transfers in flight: RETRY is retried)
 * Prints "xfer_chan ok" on every node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am-util.h"
#include "tempest.h"
#include "xfer-util.h"

#define MAX_SIZES   32
#define MAX_MANY    64

static const int sizes_all[] = {
    4, 5, 8, 63, 64, 65, 100, 1000, 4096, 4099, 65541, 1 << 20,
    (1 << 20) + 3, 8 << 20, TPPI_MAX_CHANNEL_BYTES,
};

/* What the previous node told us about its channel for size k. */
struct open_req {
    int ch;
    int size;
    int src_off;
    volatile int valid;     /* volatile: set by handlers */
};

static struct open_req opens[MAX_SIZES];
static struct open_req many_opens[8][MAX_MANY];
static uint64_t sent_count, recv_count;     /* by the callbacks */
static uint64_t sent_want, recv_want;       /* what main has waited for */
static int src_tag, dst_tag;

static void open_h(TPPI_NodeId src, int size)
{
    unsigned k = (unsigned)TPPI_recv_W();
    struct open_req *o;

    (void)size;
    if (k >= MAX_SIZES + MAX_MANY || (k >= MAX_SIZES && src >= 8)) {
        (void)TPPI_recv_W();
        (void)TPPI_recv_W();
        (void)TPPI_recv_W();
        am_fail("open for bad index %u", k);
        return;
    }
    o = k < MAX_SIZES ? &opens[k] : &many_opens[src][k - MAX_SIZES];
    o->ch = TPPI_recv_W();
    o->size = TPPI_recv_W();
    o->src_off = TPPI_recv_W();
    o->valid = 1;
}

static void sent_cb(TPPI_NodeId node, int ch)
{
    if (TPPI_get_channel_src_user_ptr(node, ch) != &src_tag) {
        am_fail("send callback: channel %d to node %u has the wrong user "
                "pointer", ch, node);
    }
    __atomic_fetch_add(&sent_count, 1, __ATOMIC_RELAXED);
}

static void recv_cb(TPPI_NodeId node, int ch)
{
    if (!TPPI_is_channel_ready(node, ch)) {
        am_fail("receive callback: channel %d from node %u not ready", ch,
                node);
    }
    __atomic_fetch_add(&recv_count, 1, __ATOMIC_RELAXED);
}

struct chan_key {
    TPPI_NodeId node;
    int ch;
};

static int is_established(void *arg)
{
    struct chan_key *c = arg;

    return TPPI_is_channel_established(c->node, c->ch);
}

static int is_reset(void *arg)
{
    struct chan_key *c = arg;

    return TPPI_is_channel_reset(c->node, c->ch);
}

static int is_ready(void *arg)
{
    struct chan_key *c = arg;

    return TPPI_is_channel_ready(c->node, c->ch);
}

static int opened(void *arg)
{
    return ((struct open_req *)arg)->valid;
}

static uint64_t seed_of(unsigned node, unsigned k, unsigned r)
{
    return (uint64_t)node << 40 | (uint64_t)k << 20 | r;
}

/* ---- ring: one channel per size to the next node ----------------------- */

static void ring(int max, int rounds)
{
    unsigned next = (TPPI_self_address + 1) % TPPI_num_nodes;
    unsigned prev = (TPPI_self_address + TPPI_num_nodes - 1) %
                    TPPI_num_nodes;
    uint8_t *src_area = aligned_alloc(64, (size_t)max + 128);
    uint8_t *dst_area = aligned_alloc(64, (size_t)max + 128);
    unsigned k, nsizes = 0;
    int r;

    if (src_area == NULL || dst_area == NULL) {
        am_fail("no memory for %d-byte buffers", max);
        return;
    }
    for (k = 0; k < sizeof(sizes_all) / sizeof(sizes_all[0]); k++) {
        if (sizes_all[k] <= max) {
            nsizes = k + 1;
        }
    }
    for (k = 0; k < nsizes; k++) {
        int size = sizes_all[k];
        int soff = (int)(k * 13 % 64), doff = (int)(k * 29 % 61) + 1;
        struct chan_key out, in;
        uint64_t t0 = am_ticks(), bad;
        uint8_t *dbuf = dst_area + doff;

        out.node = next;
        out.ch = TPPI_set_channel_src(next, sent_cb);
        if (out.ch < 0) {
            am_fail("TPPI_set_channel_src(%u) failed", next);
            return;
        }
        TPPI_set_channel_src_user_ptr(next, out.ch, &src_tag);
        if (TPPI_is_channel_established(next, out.ch) ||
            TPPI_is_channel_reset(next, out.ch)) {
            am_fail("channel %d established before its destination", out.ch);
        }
        TPPI_send_WWWW(next, open_h, (int)k, out.ch, size, soff);

        xu_need(opened, &opens[k], "the open message");
        in.node = prev;
        in.ch = opens[k].ch;
        if (opens[k].size != size) {
            am_fail("size %u: the previous node opened %d bytes", k,
                    opens[k].size);
        }
        if (TPPI_set_channel_dst(prev, in.ch, dbuf, size, recv_cb) != 1) {
            am_fail("TPPI_set_channel_dst(%u, %d, %d bytes) failed", prev,
                    in.ch, size);
            return;
        }
        TPPI_set_channel_dst_user_ptr(prev, in.ch, &dst_tag);
        xu_need(is_established, &out, "establishment");

        for (r = 0; r < rounds; r++) {
            int rc;

            dbuf[-1] = 0xA5;
            dbuf[size] = 0x5A;
            xu_fill(src_area, (uint64_t)soff + size,
                    seed_of(TPPI_self_address, k, r));
            xu_need(is_reset, &out, "the reset notification");
            rc = tempest_channel_send(next, out.ch, src_area + soff, size);
            if (rc != TEMPEST_CHAN_OK) {
                am_fail("size %d round %d: send refused: %s", size, r,
                        tempest_channel_strerror(rc));
                return;
            }
            xu_need(is_ready, &in, "the data");
            xu_need_count(&recv_count, ++recv_want, "receive callbacks");
            if (TPPI_get_channel_dst_user_ptr(prev, in.ch) != &dst_tag) {
                am_fail("size %d: wrong destination user pointer", size);
            }
            bad = xu_check(dbuf, (uint64_t)size, (uint64_t)opens[k].src_off,
                           seed_of(prev, k, r));
            if (bad) {
                am_fail("size %d round %d: byte %llu of %d differs", size, r,
                        (unsigned long long)bad - 1, size);
            }
            if (dbuf[-1] != 0xA5 || dbuf[size] != 0x5A) {
                am_fail("size %d round %d: a byte around the buffer changed",
                        size, r);
            }
            TPPI_reset_channel(prev, in.ch);
            /* (Only the last: the next send may already be in.) */
            if (r == rounds - 1 && TPPI_is_channel_ready(prev, in.ch)) {
                am_fail("size %d: still ready after the reset", size);
            }
            xu_need_count(&sent_count, ++sent_want, "send callbacks");
        }
        /* The last reset notification comes before the source goes. */
        xu_need(is_reset, &out, "the reset notification");
        TPPI_destroy_channel_src(next, out.ch);
        TPPI_destroy_channel_dst(prev, in.ch);
        if (TPPI_is_channel_ready(prev, in.ch) ||
            TPPI_is_channel_established(next, out.ch)) {
            am_fail("size %d: a destroyed channel still answers", size);
        }
        if (TPPI_self_address == 0) {
            printf("size %d: %d sends, %llu us\n", size, rounds,
                   (unsigned long long)(am_ticks() - t0));
        }
    }
    free(src_area);
    free(dst_area);
}

/* ---- many: PER_PEER channels to every other node, all at once ----------- */

static uint8_t *dst_of[8][MAX_MANY];

static void many(int per_peer)
{
    unsigned n = TPPI_num_nodes, me = TPPI_self_address, peer, i, nout = 0;
    static struct chan_key out[8 * MAX_MANY];
    static uint8_t *sbuf[8 * MAX_MANY];
    static int size[8 * MAX_MANY];
    uint64_t bad;
    struct open_req *o;
    int r;

    if (n > 8 || per_peer > MAX_MANY) {
        am_fail("many: at most 8 nodes and %d channels per peer", MAX_MANY);
        return;
    }
    for (peer = 0; peer < n; peer++) {
        for (i = 0; peer != me && i < (unsigned)per_peer; i++) {
            size[nout] = 64 + (int)((i * 7919 + peer * 104729) % 20000);
            out[nout].node = peer;
            out[nout].ch = TPPI_set_channel_src(peer, sent_cb);
            TPPI_set_channel_src_user_ptr(peer, out[nout].ch, &src_tag);
            sbuf[nout] = malloc((size_t)size[nout] + 8);
            TPPI_send_WWWW(peer, open_h, (int)(MAX_SIZES + i), out[nout].ch,
                           size[nout], 0);
            nout++;
        }
    }
    for (peer = 0; peer < n; peer++) {
        for (i = 0; peer != me && i < (unsigned)per_peer; i++) {
            o = &many_opens[peer][i];
            xu_need(opened, o, "the open messages");
            dst_of[peer][i] = malloc((size_t)o->size + 2);
            if (TPPI_set_channel_dst(peer, o->ch, dst_of[peer][i] + 1,
                                     o->size, recv_cb) != 1) {
                am_fail("many: set_channel_dst failed");
                return;
            }
            TPPI_set_channel_dst_user_ptr(peer, o->ch, &dst_tag);
        }
    }
    for (i = 0; i < nout; i++) {
        xu_need(is_established, &out[i], "establishment");
    }
    for (r = 0; r < 2; r++) {
        recv_want += (uint64_t)(n - 1) * per_peer;
        sent_want += nout;
        for (i = 0; i < nout; i++) {
            xu_fill(sbuf[i], (uint64_t)size[i],
                    seed_of(me, out[i].node * 1000 + out[i].ch, r));
            xu_need(is_reset, &out[i], "the reset notification");
            if (tempest_channel_send(out[i].node, out[i].ch, sbuf[i],
                                     size[i]) != TEMPEST_CHAN_OK) {
                am_fail("many: send %u refused", i);
            }
        }
        xu_need_count(&recv_count, recv_want, "receive callbacks");
        for (peer = 0; peer < n; peer++) {
            for (i = 0; peer != me && i < (unsigned)per_peer; i++) {
                o = &many_opens[peer][i];
                if (!TPPI_is_channel_ready(peer, o->ch)) {
                    am_fail("many: channel %d from %u not ready", o->ch,
                            peer);
                    continue;
                }
                bad = xu_check(dst_of[peer][i] + 1, (uint64_t)o->size, 0,
                               seed_of(peer, me * 1000 + o->ch, r));
                if (bad) {
                    am_fail("many: channel %d from node %u round %d: byte "
                            "%llu differs", o->ch, peer, r,
                            (unsigned long long)bad - 1);
                }
                TPPI_reset_channel(peer, o->ch);
            }
        }
        xu_need_count(&sent_count, sent_want, "send callbacks");
    }
    for (i = 0; i < nout; i++) {
        xu_need(is_reset, &out[i], "the reset notification");
        TPPI_destroy_channel_src(out[i].node, out[i].ch);
        free(sbuf[i]);
    }
    for (peer = 0; peer < n; peer++) {
        for (i = 0; peer != me && i < (unsigned)per_peer; i++) {
            TPPI_destroy_channel_dst(peer, many_opens[peer][i].ch);
            free(dst_of[peer][i]);
        }
    }
    if (me == 0) {
        printf("many: %u channels out of each node, 2 rounds\n", nout);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ring";
    struct tempest_channel_stats cs;
    uint64_t t0 = am_ticks();

    if (strcmp(mode, "many") == 0) {
        many(argc > 2 ? atoi(argv[2]) : 24);
    } else {
        ring(argc > 2 ? atoi(argv[2]) : TPPI_MAX_CHANNEL_BYTES,
             argc > 3 ? atoi(argv[3]) : 2);
    }
    tempest_get_channel_stats(&cs);
    if (cs.errors) {
        am_fail("%llu channel errors reported", (unsigned long long)cs.errors);
    }
    printf("node %u: %llu sends (%llu bytes), %llu received (%llu bytes) "
           "in %llu ms\n", TPPI_self_address, (unsigned long long)cs.sends,
           (unsigned long long)cs.bytes_sent, (unsigned long long)cs.recvs,
           (unsigned long long)cs.bytes_received,
           (unsigned long long)(am_ticks() - t0) / 1000);
    return am_finish("xfer_chan");
}
