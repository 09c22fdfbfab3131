/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Ports over ports in the node controller's channel controller (1.8,
 * docs/chan.rst, "Ports over ports in the device"), from guest code
 * through tempest/nc.h alone.  One program, three tests (argv[1]):
 *
 *  chain N   8 nodes: node 0 outputs messages over one channel whose
 *            reader end moves N times round the ring of nodes 1..7 (a
 *            carrier channel from each to the next); each holder inputs
 *            0 to 3 messages, then sends the port on, so data is pre-sent
 *            to a port that then moves (dropped, sent again at stage 3)
 *            and the next holder's port input comes before or after the
 *            port data; the last holder inputs the rest.
 *  both N    4 nodes: the writer end of one channel moves between nodes
 *            0 and 2, the reader end between 1 and 3, both right after
 *            the same input, N times each (stage 5, both ends migrating
 *            at once), with 1 to 3 messages a round, some over 64 KiB
 *            (the transfer engine), the new writer outputting at once
 *            while the reader end may still be moving.
 *  odmove    3 nodes: outputdata (the state-keeping pre-send), then the
 *            reader end moves before it inputs: the data held there is
 *            dropped and sent again to the new place (stage 3), where the
 *            first input takes it into the initial buffer the port input
 *            named; the writer's port cannot move while its pre-send is
 *            out, and moves once its output is done; 17 bytes and 74,985.
 *
 * Every message carries its number and a pattern: each is checked byte
 * for byte, in order, none missing or twice; every output and port move
 * must complete with status 0, and no node may drop a frame
 * (TEMPEST_NC_CHAN_DROPPED).  Prints "chan_hwmove ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tempest/nc.h"
#include "tempest/rt.h"

#define MAXMSG      (256u * 1024)
#define BARRIER     0x4d

static unsigned failures;
static unsigned me, nodes;

#define CHECK(cond, ...) do {                                   \
    if (!(cond)) {                                              \
        failures++;                                             \
        printf("FAIL: " __VA_ARGS__);                           \
        printf("\n");                                           \
    }                                                           \
} while (0)

static uint64_t pa(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

static uint32_t chan(uint64_t op, uint64_t port, uint64_t a2, uint64_t a3,
                     uint64_t *result)
{
    uint32_t reason, st = nc_chan(op, port, a2, a3, result, &reason);

    if (st != TEMPEST_CMD_SUCCESS) {
        printf("FAIL: chan instruction %u on 0x%x: reason %u\n",
               (unsigned)op, (unsigned)port, reason);
        failures++;
    }
    return st;
}

static unsigned port_state(uint32_t port)
{
    uint64_t res = 0;

    chan(TEMPEST_CHAN_OP_STATE, port, 0, 0, &res);
    return (unsigned)(res & 0x1FF);
}

/* ---- events: CHAN events kept until the one waited for ---------------- */

#define STASH 64
static struct nc_event stash[STASH];
static unsigned stashed;

/*
 * Where the CQ stands, printed when an event did not come: the slot this
 * program reads next against the device's tail (CQ_TAIL: the events it
 * wrote), every slot still valid, and the events kept aside.  With the
 * device's recorder ("event ... CQ tail N": the event went into slot
 * N - 1) it tells an event never written from one written where this
 * program had passed already (docs/chan.rst, "When a node fails").
 */
static void cq_dump(void)
{
    const struct nc_ring *r = &nc_rings[TEMPEST_RING_CQ];

    printf("node %u: CQ: next %u (slot %u), device's tail %u; valid:", me,
           (unsigned)r->next, (unsigned)(r->next & (r->slots - 1)),
           (unsigned)nc_reg(TEMPEST_NC_CQ_TAIL));
    for (uint32_t i = 0; i < r->slots; i++) {
        const struct nc_event *e =
            (const struct nc_event *)(r->base + (size_t)i * TEMPEST_EV_SIZE);
        uint32_t ctl = __atomic_load_n(&e->ctl, __ATOMIC_ACQUIRE);

        if (ctl & TEMPEST_EV_VALID) {
            printf(" %u:%u/0x%llx", (unsigned)i,
                   (unsigned)(ctl & TEMPEST_EV_TYPE_MASK),
                   (unsigned long long)e->a);
        }
    }
    printf("; kept aside:");
    for (unsigned i = 0; i < stashed; i++) {
        printf(" 0x%llx", (unsigned long long)stash[i].a);
    }
    printf("\n");
}

/* The CHAN event of @port and @kind (B, C in *ev); 0 after 60 s. */
static int wait_ev(uint32_t port, uint32_t kind, struct nc_event *ev)
{
    uint64_t want = port | (uint64_t)kind << 32, t0 = rt_time_ns();
    struct nc_event *e;

    for (;;) {
        for (unsigned i = 0; i < stashed; i++) {
            if (stash[i].a == want) {
                *ev = stash[i];
                stash[i] = stash[--stashed];
                return 1;
            }
        }
        while ((e = nc_cq_peek()) == NULL) {
            if (rt_time_ns() - t0 > 60000000000ULL) {
                printf("FAIL: node %u: no event %u for port 0x%x\n", me,
                       kind, port);
                cq_dump();
                failures++;
                return 0;
            }
        }
        if ((e->ctl & TEMPEST_EV_TYPE_MASK) == TEMPEST_EV_CHAN) {
            if (stashed == STASH) {
                printf("FAIL: node %u: too many events\n", me);
                failures++;
                stashed = 0;
            }
            stash[stashed++] = *e;
        }
        nc_cq_pop(e);
        nc_rx_doorbell();
    }
}

/* ---- a barrier of every node, through node 0 --------------------------- */

static void send_pkt(unsigned node, uint64_t word)
{
    struct nc_pkt *p;

    while ((p = nc_sq_claim(0)) == NULL) {
    }
    p->node = (uint16_t)node;
    p->kind = BARRIER;
    p->word1 = word;
    nc_sq_post(0, p, 0);
    nc_sq_doorbell(0);
}

static uint64_t recv_pkt(void)
{
    struct nc_pkt *p;
    uint64_t word;

    while ((p = nc_rq_peek()) == NULL) {
    }
    CHECK(p->kind == BARRIER, "packet of kind %u", p->kind);
    word = p->word1;
    nc_rq_pop(p);
    nc_rx_doorbell();
    return word;
}

/* A barrier; node 0 gets the sum of every node's @word. */
static uint64_t barrier_sum(uint64_t word)
{
    if (me == 0) {
        for (unsigned i = 1; i < nodes; i++) {
            word += recv_pkt();
        }
        for (unsigned i = 1; i < nodes; i++) {
            send_pkt(i, 0);
        }
    } else {
        send_pkt(0, word);
        recv_pkt();
    }
    return word;
}

static void barrier(void)
{
    barrier_sum(0);
}

/*
 * The channel controllers' counters summed over the cluster (node 0):
 * ports moved away (stage 4), wire-ups forwarded (stage 5), pre-sends
 * sent again (stage 3).
 */
static void cluster_counts(unsigned *moves, unsigned *fwds, unsigned *resent)
{
    *moves = (unsigned)barrier_sum(nc_reg(TEMPEST_NC_CHAN_MOVES));
    *fwds = (unsigned)barrier_sum(nc_reg(TEMPEST_NC_CHAN_FWDS));
    *resent = (unsigned)barrier_sum(nc_reg(TEMPEST_NC_CHAN_RESENT));
}

/* ---- messages ----------------------------------------------------------- */

static uint8_t pattern(uint32_t seq, uint32_t i)
{
    return (uint8_t)(seq * 13 + i * 7 + (i >> 8));
}

/* Message @seq's length: 16 to 215 bytes, every 37th over 64 KiB. */
static uint32_t msg_len(uint32_t seq)
{
    return seq % 37 == 5 ? 70000 + (seq * 997) % 120000 : 16 + seq % 200;
}

static void msg_fill(uint8_t *b, uint32_t seq)
{
    uint32_t len = msg_len(seq);

    memcpy(b, &seq, 4);
    for (uint32_t i = 4; i < len; i++) {
        b[i] = pattern(seq, i);
    }
}

static void msg_check(const uint8_t *b, uint32_t len, uint32_t seq)
{
    uint32_t got;

    memcpy(&got, b, 4);
    if (got != seq || len != msg_len(seq)) {
        CHECK(0, "node %u: message %u (%u bytes) where %u (%u bytes) was "
              "due", me, got, len, seq, msg_len(seq));
        return;
    }
    for (uint32_t i = 4; i < len; i++) {
        if (b[i] != pattern(seq, i)) {
            CHECK(0, "node %u: message %u byte %u wrong", me, seq, i);
            return;
        }
    }
}

/* Output message @seq on @port and wait until it is input. */
static void output_msg(uint32_t port, uint8_t *src, uint32_t seq)
{
    struct nc_event ev;
    uint64_t res = 0;

    msg_fill(src, seq);
    if (chan(TEMPEST_CHAN_OP_OUTPUT, port, pa(src), msg_len(seq), &res) !=
        TEMPEST_CMD_SUCCESS || res == 1) {
        return;
    }
    if (wait_ev(port, TEMPEST_CHAN_EV_OUTPUT, &ev)) {
        CHECK(ev.b == 0, "node %u: output %u ended %llu", me, seq,
              (unsigned long long)ev.b);
    }
}

/*
 * A port being read, with the two buffers it alternates between (the
 * paper's input: the data is in the port's buffer, the input names the
 * next).
 */
struct reader {
    uint32_t port;
    uint8_t *cur, *other;
};

static void input_msg(struct reader *r, uint32_t seq)
{
    struct nc_event ev;
    uint64_t res = 0;
    uint8_t *t;

    if (chan(TEMPEST_CHAN_OP_INPUT, r->port, pa(r->other), MAXMSG, &res) !=
        TEMPEST_CMD_SUCCESS) {
        return;
    }
    if (res & TEMPEST_CHAN_PRESENT) {
        msg_check(r->cur, (uint32_t)res, seq);
    } else if (wait_ev(r->port, TEMPEST_CHAN_EV_INPUT, &ev)) {
        CHECK(ev.c == pa(r->cur), "node %u: input %u at 0x%llx", me, seq,
              (unsigned long long)ev.c);
        msg_check(r->cur, (uint32_t)ev.b, seq);
    }
    t = r->cur;
    r->cur = r->other;
    r->other = t;
}

/* Send @port over @carrier (stage 1) and wait for stage 4. */
static void move_out(uint32_t carrier, uint32_t port)
{
    struct nc_event ev;

    if (chan(TEMPEST_CHAN_OP_OUTPUT_PORT, carrier, port, 0, NULL) ==
        TEMPEST_CMD_SUCCESS && wait_ev(carrier, TEMPEST_CHAN_EV_OUTPUT,
                                       &ev)) {
        CHECK(ev.b == 0, "node %u: port move ended %llu", me,
              (unsigned long long)ev.b);
    }
}

/* Input a port over @carrier, its initial buffer @buf: the new port. */
static uint32_t move_in(uint32_t carrier, uint8_t *buf)
{
    struct nc_event ev;

    if (chan(TEMPEST_CHAN_OP_INPUT_PORT, carrier, pa(buf), MAXMSG, NULL) !=
        TEMPEST_CMD_SUCCESS || !wait_ev(carrier, TEMPEST_CHAN_EV_PORT, &ev)) {
        return TEMPEST_CHAN_NONE;
    }
    CHECK(ev.b == 0 && TEMPEST_CHAN_ID_NODE(ev.c) == me,
          "node %u: port input ended %llu, port 0x%llx", me,
          (unsigned long long)ev.b, (unsigned long long)ev.c);
    return (uint32_t)ev.c;
}

/* Make a port of index @idx on this node, connected to @comp. */
static uint32_t make_port(unsigned idx, uint32_t comp, uint8_t *buf)
{
    uint64_t res = 0;
    uint32_t want = TEMPEST_CHAN_ID(me, idx);

    CHECK(chan(TEMPEST_CHAN_OP_ALLOC, buf ? pa(buf) : 0, buf ? MAXMSG : 0, 0,
               &res) == TEMPEST_CMD_SUCCESS && res == want,
          "alloc: 0x%llx, not 0x%x", (unsigned long long)res, want);
    if (comp != TEMPEST_CHAN_NONE) {
        chan(TEMPEST_CHAN_OP_CONNECT, want, comp, 0, NULL);
    }
    return want;
}

/* Let the next port made here have index @idx (the table is round robin). */
static void skip_to(unsigned idx)
{
    uint64_t res = 0;

    do {
        if (chan(TEMPEST_CHAN_OP_ALLOC, 0, 0, 0, &res) !=
            TEMPEST_CMD_SUCCESS) {
            return;
        }
        chan(TEMPEST_CHAN_OP_FREE, res, 0, 0, NULL);
    } while (TEMPEST_CHAN_ID_INDEX(res) != idx - 1);
}

static uint8_t *bufs[3];

/* ---- chain -------------------------------------------------------------- */

#define RING    7       /* nodes 1..7 */
#define LAST    10      /* messages the last holder inputs */

static unsigned ring_next(unsigned k)
{
    return k == RING ? 1 : k + 1;
}

static unsigned ring_prev(unsigned k)
{
    return k == 1 ? RING : k - 1;
}

static unsigned holder(unsigned hop)
{
    return 1 + hop % RING;
}

static void test_chain(unsigned hops)
{
    uint32_t total = LAST, seq = 1;
    struct reader r = { TEMPEST_CHAN_NONE, bufs[0], bufs[1] };
    uint32_t cin = 0, cout = 0;
    unsigned moves, fwds, resent;

    for (unsigned h = 0; h < hops; h++) {
        total += h % 4;
    }
    if (me == 0) {
        make_port(0, TEMPEST_CHAN_ID(1, 2), NULL);
    } else {
        cin = make_port(0, TEMPEST_CHAN_ID(ring_prev(me), 1), NULL);
        cout = make_port(1, TEMPEST_CHAN_ID(ring_next(me), 0), NULL);
        if (me == 1) {
            r.port = make_port(2, TEMPEST_CHAN_ID(0, 0), bufs[0]);
        }
    }
    barrier();
    if (me == 0) {
        for (seq = 1; seq <= total; seq++) {
            output_msg(TEMPEST_CHAN_ID(0, 0), bufs[2], seq);
        }
    } else {
        for (unsigned h = 0; h <= hops; h++) {
            unsigned n = h < hops ? h % 4 : total - seq + 1;

            if (holder(h) != me) {
                seq += n;
                continue;
            }
            if (h > 0) {
                r.port = move_in(cin, bufs[0]);
                r.cur = bufs[0];
                r.other = bufs[1];
            }
            for (unsigned i = 0; i < n; i++, seq++) {
                input_msg(&r, seq);
            }
            if (h < hops) {
                uint32_t reason;

                move_out(cout, r.port);
                /* Stage 4 freed it: no longer a port of this node. */
                CHECK(nc_chan(TEMPEST_CHAN_OP_STATE, r.port, 0, 0, NULL,
                              &reason) == TEMPEST_CMD_FAIL &&
                      reason == TEMPEST_CMD_E_BAD_PORT,
                      "node %u: moved port still there", me);
            } else {
                CHECK(port_state(r.port) == TEMPEST_CHAN_ST_IDLE,
                      "node %u: last holder's port not IDLE", me);
                printf("chan_hwmove: chain: %u moves round nodes 1-%u, %u "
                       "messages in order\n", hops, RING, total);
            }
        }
    }
    cluster_counts(&moves, &fwds, &resent);
    if (me == 0) {
        printf("chan_hwmove: chain: %u ports moved, %u forwards, %u "
               "pre-sends sent again\n", moves, fwds, resent);
        CHECK(moves == hops && fwds == 0, "%u moves, %u forwards", moves,
              fwds);
    }
}

/* ---- both --------------------------------------------------------------- */

static void test_both(unsigned rounds)
{
    unsigned partner = me ^ 2;
    bool writer = !(me & 1);
    bool first = me < 2;                /* holds the end in round 0 */
    uint32_t end = TEMPEST_CHAN_NONE, cout, cin, seq = 1;
    struct reader r = { 0, bufs[0], bufs[1] };
    unsigned moves, fwds, resent;

    if (first) {
        end = make_port(0, TEMPEST_CHAN_ID(me ^ 1, 0), bufs[0]);
        r.port = end;
    } else {
        make_port(0, TEMPEST_CHAN_NONE, NULL);      /* the same layout */
    }
    cout = make_port(1, TEMPEST_CHAN_ID(partner, 2), NULL);
    cin = make_port(2, TEMPEST_CHAN_ID(partner, 1), NULL);
    barrier();
    for (unsigned round = 0; round < rounds; round++) {
        unsigned n = 1 + round % 3;
        bool mine = (round & 1) == !first;

        if (!mine) {
            seq += n;
            if (round + 1 < rounds) {
                if (round % 5 == 2) {
                    uint64_t t0 = rt_time_ns();

                    while (rt_time_ns() - t0 < 100000) {
                        /* the port data may be there first */
                    }
                }
                end = move_in(cin, bufs[0]);
                r.port = end;
                r.cur = bufs[0];
                r.other = bufs[1];
            }
            continue;
        }
        for (unsigned i = 0; i < n; i++, seq++) {
            if (writer) {
                output_msg(end, bufs[2], seq);
            } else {
                input_msg(&r, seq);
            }
        }
        if (round + 1 < rounds) {
            move_out(cout, end);
        }
        if (failures) {
            printf("chan_hwmove: both: failed in round %u\n", round);
            break;
        }
    }
    if (((rounds - 1) & 1) == !first) {
        CHECK(port_state(end) == TEMPEST_CHAN_ST_IDLE,
              "node %u: the end is not IDLE at the end", me);
    }
    if (me == 1 || me == 3) {
        printf("chan_hwmove: both: node %u: %u rounds, both ends moved "
               "each round, %u messages in order\n", me, rounds, seq - 1);
    }
    cluster_counts(&moves, &fwds, &resent);
    if (me == 0) {
        /* Both ends moving at once must have happened (stage 5). */
        printf("chan_hwmove: both: %u ports moved, %u forwards (stage 5), "
               "%u pre-sends sent again\n", moves, fwds, resent);
        CHECK(moves == 2 * (rounds - 1) && fwds > 0,
              "%u moves, %u forwards", moves, fwds);
    }
}

/* ---- outputdata, then migration ---------------------------------------- */

static void test_odmove(void)
{
    unsigned moves, fwds, resent;

    static const uint32_t seqs[] = { 1, 5 };  /* 17 bytes; 74,985 */
    struct nc_event ev;
    uint64_t res = 0;
    uint32_t reason;

    for (unsigned k = 0; k < 2; k++) {
        uint32_t seq = seqs[k], w = 0, c = 0, rd = 0, b = 8 * (k + 1);

        /*
         * Fresh ports each round, from index b on every node: b the
         * channel, b + 1 a carrier 0->2, b + 2 a carrier 1->2.
         */
        skip_to(b);
        if (me == 0) {
            w = make_port(b, TEMPEST_CHAN_ID(1, b), NULL);
            c = make_port(b + 1, TEMPEST_CHAN_ID(2, b + 1), NULL);
            make_port(b + 2, TEMPEST_CHAN_NONE, NULL);
        } else if (me == 1) {
            rd = make_port(b, TEMPEST_CHAN_ID(0, b), bufs[0]);
            make_port(b + 1, TEMPEST_CHAN_NONE, NULL);
            c = make_port(b + 2, TEMPEST_CHAN_ID(2, b + 2), NULL);
        } else {
            make_port(b, TEMPEST_CHAN_NONE, NULL);
            make_port(b + 1, TEMPEST_CHAN_ID(0, b + 1), NULL);
            make_port(b + 2, TEMPEST_CHAN_ID(1, b + 2), NULL);
        }
        barrier();
        if (me == 0) {
            msg_fill(bufs[2], seq);
            chan(TEMPEST_CHAN_OP_OUTPUTDATA, w, pa(bufs[2]), msg_len(seq),
                 NULL);
            CHECK(port_state(w) ==
                  (TEMPEST_CHAN_ST_IDLE | TEMPEST_CHAN_ST_PRESENT),
                  "outputdata changed the state: 0x%x", port_state(w));
            CHECK(nc_chan(TEMPEST_CHAN_OP_OUTPUT_PORT, c, w, 0, NULL,
                          &reason) == TEMPEST_CMD_FAIL &&
                  reason == TEMPEST_CMD_E_PORT_STATE,
                  "a port with a pre-send out moved (reason %u)", reason);
        }
        barrier();                      /* 1: pre-sent */
        if (me == 1) {
            uint64_t t0 = rt_time_ns();

            while (port_state(rd) != TEMPEST_CHAN_ST_BUFFERFULL &&
                   rt_time_ns() - t0 < 30000000000ULL) {
            }
            CHECK(port_state(rd) == TEMPEST_CHAN_ST_BUFFERFULL,
                  "pre-sent data not held");
            chan(TEMPEST_CHAN_OP_OUTPUT_PORT, c, rd, 0, NULL);
            CHECK(port_state(rd) == TEMPEST_CHAN_ST_MIGRATING,
                  "port not MIGRATING");
        }
        barrier();                      /* 2: moving */
        if (me == 2) {
            struct reader r;

            /* The first input goes to the initial buffer it names. */
            memset(bufs[0], 0, MAXMSG);
            r.port = move_in(TEMPEST_CHAN_ID(2, b + 2), bufs[0]);
            r.cur = bufs[0];
            r.other = bufs[1];
            input_msg(&r, seq);
            /* Then the writer's end comes here too. */
            w = move_in(TEMPEST_CHAN_ID(2, b + 1), bufs[2]);
            msg_fill(bufs[2], seq + 1);
            chan(TEMPEST_CHAN_OP_OUTPUTDATA, w, pa(bufs[2]),
                 msg_len(seq + 1), NULL);
            input_msg(&r, seq + 1);
            CHECK(chan(TEMPEST_CHAN_OP_OUTPUT, w, 0, 0, &res) ==
                  TEMPEST_CMD_SUCCESS && res == 1,
                  "output after its input not done at once");
            printf("chan_hwmove: odmove: %u bytes pre-sent, the reader "
                   "moved, input at the new place\n", msg_len(seq));
        } else if (me == 1) {
            if (wait_ev(c, TEMPEST_CHAN_EV_OUTPUT, &ev)) {
                CHECK(ev.b == 0, "move ended %llu", (unsigned long long)ev.b);
            }
        } else {
            /* The output completes once the new port has input it. */
            if (chan(TEMPEST_CHAN_OP_OUTPUT, w, 0, 0, &res) ==
                TEMPEST_CMD_SUCCESS && res != 1 &&
                wait_ev(w, TEMPEST_CHAN_EV_OUTPUT, &ev)) {
                CHECK(ev.b == 0, "output ended %llu",
                      (unsigned long long)ev.b);
            }
            move_out(c, w);
        }
        barrier();
    }
    cluster_counts(&moves, &fwds, &resent);
    if (me == 0) {
        /* Each pre-send was sent again to the reader's new place. */
        printf("chan_hwmove: odmove: %u ports moved, %u pre-sends sent "
               "again\n", moves, resent);
        CHECK(moves == 4 && resent == 2, "%u moves, %u resent", moves,
              resent);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 0;

    if (nc_init()) {
        printf("chan_hwmove: needs nc_init\n");
        return 1;
    }
    me = rt_node_id();
    nodes = rt_num_nodes();
    for (unsigned i = 0; i < 3; i++) {
        bufs[i] = malloc(MAXMSG);
        if (!bufs[i]) {
            printf("chan_hwmove: no memory\n");
            return 1;
        }
    }
    CHECK(nc_reg(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_CHAN,
          "no channel controller");
    if (!strcmp(mode, "chain") && nodes == 8 && n) {
        test_chain(n);
    } else if (!strcmp(mode, "both") && nodes == 4 && n) {
        test_both(n);
    } else if (!strcmp(mode, "odmove") && nodes == 3) {
        test_odmove();
    } else {
        printf("chan_hwmove: chain N (8 nodes), both N (4), odmove (3)\n");
        return 1;
    }
    CHECK(nc_reg(TEMPEST_NC_CHAN_DROPPED) == 0, "node %u: %u frames dropped",
          me, nc_reg(TEMPEST_NC_CHAN_DROPPED));
    if (failures) {
        printf("chan_hwmove: %u failures\n", failures);
        return 1;
    }
    printf("chan_hwmove ok\n");
    return 0;
}
