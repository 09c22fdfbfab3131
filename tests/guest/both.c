/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata and libtempest in one program (issue 12; docs/strata.rst,
 * "Strata with libtempest", and docs/tempest.rst, "Other libraries on the
 * same rings"): after StrataInit(), every Tempest call works, and Strata's
 * active messages and block transfers share the rings with Tempest's.
 * Each phase ends with Strata's Barrier() and reduces a checksum with
 * CombineInt(), compared with what the senders sent:
 *
 *   1. messages: per round, MSGS Tempest messages (TPPI_send_WW) to the
 *      next node, each answered from its handler on the reply network,
 *      interleaved with MSGS Strata messages (SendLeftPollBoth) to the
 *      previous node, each answered from its Strata handler both with a
 *      Strata reply (right network first) and with a Tempest message;
 *      a Strata block transfer (SendBlockXferPollBoth) into a port of the
 *      next node; a Tempest timer (its CQ event must reach libtempest).
 *      Order per source checked for both libraries' messages.
 *   2. a Tempest channel to the next node (its ID sent in a Strata
 *      message, whose handler sets up the destination), CH_BYTES a round,
 *      checked byte by byte; Strata messages in flight meanwhile.
 *      Then the rest of the control network beside Tempest's traffic:
 *      a Broadcast() and a BroadcastVector() from a different node each
 *      round (their interrupt is libtempest's now), CompositeInt(Median).
 *   3. block access faults: a page of the segment whose 64 blocks are
 *      Invalid, filled on read faults from the next node (a Tempest
 *      request, a reply with the block as a Ba item, TPPI_resume_va),
 *      while the program sends a Strata message before every block.
 *
 *   both [ROUNDS [MSGS]]       defaults 3 and 200
 * Prints "both ok" on every node; node 0 also the checksums.
 *
 *   both misuse                a Tempest handler calls Barrier(): the
 *       node fails with StrataFail's report (status 255), not a hang.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"
#include "tempest.h"
#include "tempest/rt.h"

#define MAX_NODES   64
#define XFER_PORT   1
#define XFER_WORDS  300         /* several Xfer packets */
#define CH_BYTES    65541       /* not a multiple of anything */
#define PAGE_MODE   1
#define BLK         TPPI_TAG_BLK_SIZE
#define BLKS        (TPPI_PAGE_SIZE / BLK)
#define WAIT_S      30          /* a wait longer than this is a hang */
#define BVEC        301         /* words of a BroadcastVector */

static int failures;
static int rounds = 3;
static int msgs = 200;
static int next_node, prev_node;

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            failures++; \
            printf("FAIL node %d line %d: ", Self, __LINE__); \
            printf(__VA_ARGS__); \
            printf("\n"); \
        } \
    } while (0)

/* The value message @i of round @r from node @src carries. */
static uint32_t val(int src, int r, int i, int salt)
{
    return (uint32_t)(src + 1) * 1000003u + (uint32_t)r * 7919u +
           (uint32_t)i * 31u + (uint32_t)salt * 65599u;
}

struct want {
    uint64_t n;
};

/*
 * Counters: Tempest's are written by its handlers (the protocol thread),
 * Strata's by Strata's handlers (this thread, when it polls).
 */
static volatile uint64_t t_got, t_replies, t_from_s, t_timers;
static volatile uint32_t t_sum, t_reply_sum;
static uint32_t t_next_seq[MAX_NODES];
static volatile int t_order_errors;

static volatile int s_got, s_replies, s_order_errors, s_xfers, s_opened;
static uint32_t s_sum, s_reply_sum;
static uint32_t s_next_seq[MAX_NODES];

/* This node's messages: sequence numbers, what their replies add to. */
static int t_seq_out, s_seq_out;
static uint32_t want_t_reply, want_s_reply;

/* ---- the handlers --------------------------------------------------- */

static void t_reply_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    t_reply_sum += (uint32_t)TPPI_recv_W();
    t_replies++;
}

static void t_msg_h(TPPI_NodeId src, int size)
{
    uint32_t seq = (uint32_t)TPPI_recv_W();
    uint32_t v = (uint32_t)TPPI_recv_W();

    (void)size;
    if (src >= MAX_NODES || seq != t_next_seq[src]) {
        t_order_errors++;
    } else {
        t_next_seq[src]++;
    }
    t_sum += v;
    t_got++;
    /* From the handler: on the reply network, beside Strata's right. */
    TPPI_send_W(src, t_reply_h, (int)(v ^ 0x5a5a5a5au));
}

static void t_from_s_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    (void)TPPI_recv_W();
    t_from_s++;
}

static void timer_h(void *arg)
{
    (void)arg;
    t_timers++;
}

static void s_reply_h(int v)
{
    s_reply_sum += (uint32_t)v;
    s_replies++;
}

static void s_msg_h(int src, int seq, int v)
{
    if (src < 0 || src >= MAX_NODES || (uint32_t)seq != s_next_seq[src]) {
        s_order_errors++;
    } else {
        s_next_seq[src]++;
    }
    s_sum += (uint32_t)v;
    s_got++;
    /* A Strata reply, and a Tempest message, from a Strata handler. */
    SendBothRLPollRight(src, s_reply_h, (DoubleWord)(uint32_t)~v);
    TPPI_send_W((TPPI_NodeId)src, t_from_s_h, v);
}

/* A Tempest message to the next node. */
static void t_send(uint32_t v)
{
    TPPI_send_WW((TPPI_NodeId)next_node, t_msg_h, t_seq_out++, (int)v);
    want_t_reply += v ^ 0x5a5a5a5au;
}

/* A Strata message to the previous node. */
static void s_send(uint32_t v)
{
    SendLeftPollBoth(prev_node, s_msg_h, (DoubleWord)Self,
                     (DoubleWord)s_seq_out++, (DoubleWord)v);
    want_s_reply += ~v;
}

/*
 * Every node sends as many of each as this one: the Tempest messages of
 * the previous node, the replies to ours, and the Tempest messages the
 * previous node's Strata handlers sent for our Strata messages are in.
 */
static int t_all(void *arg)
{
    (void)arg;
    return t_got >= (uint64_t)t_seq_out && t_replies >= (uint64_t)t_seq_out &&
           t_from_s >= (uint64_t)s_seq_out;
}

static int t_timer_ran(void *arg)
{
    return t_timers >= ((struct want *)arg)->n;
}

/* What this node is waiting for, if it waits too long (a hang). */
static void stuck(const char *what)
{
    struct tempest_stats st;

    tempest_get_stats(&st);
    printf("FAIL node %d: still waiting for %s after %d s: Tempest got %llu "
           "replies %llu from Strata %llu timers %llu (sent %d); Strata got "
           "%d replies %d xfers %d (sent %d); tempest msgs handled %llu "
           "sent %llu sq_full %llu backlog %llu\n", Self, what, WAIT_S,
           (unsigned long long)t_got, (unsigned long long)t_replies,
           (unsigned long long)t_from_s, (unsigned long long)t_timers,
           t_seq_out, s_got, s_replies, s_xfers, s_seq_out,
           (unsigned long long)st.msgs_handled,
           (unsigned long long)st.msgs_sent,
           (unsigned long long)st.sq_full,
           (unsigned long long)st.backlog_pkts);
    StrataExit(1);
}

/* tempest_wait(), but a hang is reported. */
static void t_wait(int (*cond)(void *), void *arg, const char *what)
{
    if (!tempest_wait_until(cond, arg, rt_time_ns() + WAIT_S * 1000000000ULL)) {
        stuck(what);
    }
}

/*
 * Polls Strata's networks until it has handled @n messages and @n replies
 * and @xfers block transfers.
 */
static void s_wait(int n, int xfers)
{
    uint64_t end = rt_time_ns() + WAIT_S * 1000000000ULL;

    while (s_got < n || s_replies < n || s_xfers < xfers) {
        PollBothTilEmpty();
        if (rt_time_ns() > end) {
            stuck("Strata messages");
        }
    }
}

/* ---- phase 1: messages -------------------------------------------- */

static Word xfer_in[XFER_WORDS], xfer_out[XFER_WORDS];

static void xfer_done_h(int port)
{
    (void)port;
    s_xfers++;
}

static void phase_messages(void)
{
    uint32_t sent_t = 0, sent_s = 0, want_t = 0, want_s = 0;
    uint32_t sums[4];
    int r, i, k;
    struct want w;

    for (r = 0; r < rounds; r++) {
        StrataXferHeaderHandler(XFER_PORT, XFER_WORDS, xfer_done_h);
        TPPI_schedule_timer(100 + 10 * Self, timer_h, NULL);
        for (i = 0; i < msgs; i++) {
            uint32_t vt = val(Self, r, i, 1), vs = val(Self, r, i, 2);

            t_send(vt);
            s_send(vs);
            sent_t += vt;
            sent_s += vs;
            want_t += val(prev_node, r, i, 1);
            want_s += val(next_node, r, i, 2);
            if (i == msgs / 2) {
                for (k = 0; k < XFER_WORDS; k++) {
                    xfer_out[k] = val(Self, r, k, 3);
                }
                SendBlockXferPollBoth(next_node, XFER_PORT, 0, xfer_out,
                                      XFER_WORDS);
            }
        }
        s_wait(s_seq_out, r + 1);
        for (k = 0; k < XFER_WORDS; k++) {
            if (xfer_in[k] != val(prev_node, r, k, 3)) {
                CHECK(0, "round %d: block transfer word %d is 0x%x, not "
                      "0x%x", r, k, xfer_in[k], val(prev_node, r, k, 3));
                break;
            }
        }
        t_wait(t_all, NULL, "Tempest messages");
        w.n = (uint64_t)r + 1;
        t_wait(t_timer_ran, &w, "a timer");
        Barrier();
    }
    CHECK(!t_order_errors && !s_order_errors, "%d Tempest and %d Strata "
          "messages out of order", t_order_errors, s_order_errors);
    CHECK(t_sum == want_t, "Tempest messages sum 0x%x, not 0x%x",
          (unsigned)t_sum, (unsigned)want_t);
    CHECK(s_sum == want_s, "Strata messages sum 0x%x, not 0x%x",
          (unsigned)s_sum, (unsigned)want_s);
    CHECK(t_reply_sum == want_t_reply && s_reply_sum == want_s_reply,
          "replies sum 0x%x and 0x%x, not 0x%x and 0x%x",
          (unsigned)t_reply_sum, (unsigned)s_reply_sum,
          (unsigned)want_t_reply, (unsigned)want_s_reply);
    /* Every node received what every node sent, by the control network. */
    sums[0] = (uint32_t)CombineInt((int)sent_t, ReduceAdd);
    sums[1] = (uint32_t)CombineInt((int)t_sum, ReduceAdd);
    sums[2] = (uint32_t)CombineInt((int)sent_s, ReduceAdd);
    sums[3] = (uint32_t)CombineInt((int)s_sum, ReduceAdd);
    CHECK(sums[0] == sums[1] && sums[2] == sums[3], "checksums: Tempest "
          "sent 0x%x received 0x%x, Strata sent 0x%x received 0x%x",
          sums[0], sums[1], sums[2], sums[3]);
    if (Self == 0) {
        printf("messages: checksums 0x%08x 0x%08x\n", sums[1], sums[3]);
    }
}

/* Broadcasts and a composite reduction, with Tempest messages in flight. */
static void phase_broadcast(void)
{
    static Word vin[BVEC], vout[BVEC];
    int r, k, from, median;

    for (r = 0; r < rounds; r++) {
        from = (r + 1) % PartitionSize;
        for (k = 0; k < msgs / 4; k++) {
            t_send(val(Self, r, k, 8));
        }
        if (Self == from) {
            for (k = 0; k < BVEC; k++) {
                vout[k] = val(from, r, k, 9);
            }
            Broadcast((Word)val(from, r, -1, 9));
            BroadcastVector(vin, vout, BVEC);
            ReceiveBroadcastVector(vin, BVEC);      /* returns at once */
        } else {
            Word x = ReceiveBroadcast();

            CHECK(x == (Word)val(from, r, -1, 9), "round %d: broadcast "
                  "0x%x from node %d, not 0x%x", r, (unsigned)x, from,
                  (unsigned)val(from, r, -1, 9));
            ReceiveBroadcastVector(vin, BVEC);
        }
        for (k = 0; k < BVEC; k++) {
            if (vin[k] != (Word)val(from, r, k, 9)) {
                CHECK(0, "round %d: broadcast vector word %d is 0x%x", r, k,
                      (unsigned)vin[k]);
                break;
            }
        }
        median = CompositeInt(Self * 3 + r, Median);
        CHECK(median == (PartitionSize - 1) / 2 * 3 + r, "round %d: median "
              "%d", r, median);
        t_wait(t_all, NULL, "Tempest messages");
        Barrier();
    }
    if (Self == 0) {
        printf("broadcasts: %d rounds\n", rounds);
    }
}

/* ---- phase 2: a Tempest channel, set up through Strata ---------------- */

static uint8_t *ch_src_buf, *ch_dst_buf;
static int ch_out = -1, ch_in = -1;
static volatile uint64_t ch_sent, ch_recv;

static void ch_sent_cb(TPPI_NodeId node, int ch)
{
    (void)node;
    (void)ch;
    ch_sent++;
}

static void ch_recv_cb(TPPI_NodeId node, int ch)
{
    (void)node;
    (void)ch;
    ch_recv++;
}

/* A Strata handler (computation code): the destination's half. */
static void ch_open_h(int src, int ch)
{
    ch_in = ch;
    CHECK(TPPI_set_channel_dst((TPPI_NodeId)src, ch, ch_dst_buf, CH_BYTES,
                               ch_recv_cb) == 1,
          "TPPI_set_channel_dst from node %d refused", src);
    s_opened++;
}

static int ch_established(void *arg)
{
    (void)arg;
    return TPPI_is_channel_established((TPPI_NodeId)next_node, ch_out);
}

static int ch_reset(void *arg)
{
    (void)arg;
    return TPPI_is_channel_reset((TPPI_NodeId)next_node, ch_out);
}

static int ch_ready(void *arg)
{
    (void)arg;
    return TPPI_is_channel_ready((TPPI_NodeId)prev_node, ch_in);
}

static int ch_sent_reach(void *arg)
{
    return ch_sent >= ((struct want *)arg)->n;
}

static uint8_t ch_byte(int src, int r, int i)
{
    return (uint8_t)(val(src, r, i, 4) >> 7);
}

static void phase_channel(void)
{
    uint32_t sent = 0, got = 0, all_sent, all_got;
    int r, i;
    struct want w;

    ch_out = TPPI_set_channel_src((TPPI_NodeId)next_node, ch_sent_cb);
    CHECK(ch_out >= 0, "TPPI_set_channel_src refused");
    SendLeftPollBoth(next_node, ch_open_h, (DoubleWord)Self,
                     (DoubleWord)ch_out);
    while (!s_opened) {
        PollBothTilEmpty();
    }

    t_wait(ch_established, NULL, "the channel");
    for (r = 0; r < rounds; r++) {
        for (i = 0; i < CH_BYTES; i++) {
            ch_src_buf[i] = ch_byte(Self, r, i);
            sent += ch_src_buf[i] * (uint32_t)(i + 1);
        }
        t_wait(ch_reset, NULL, "the channel's reset");
        TPPI_channel_send((TPPI_NodeId)next_node, ch_out, ch_src_buf,
                          CH_BYTES);
        /* Strata messages in flight while the transfer goes. */
        for (i = 0; i < 16; i++) {
            s_send(val(Self, r, i, 5));
        }
        t_wait(ch_ready, NULL, "the channel's data");
        for (i = 0; i < CH_BYTES; i++) {
            if (ch_dst_buf[i] != ch_byte(prev_node, r, i)) {
                CHECK(0, "round %d: channel byte %d is 0x%02x, not 0x%02x",
                      r, i, ch_dst_buf[i], ch_byte(prev_node, r, i));
                break;
            }
            got += ch_dst_buf[i] * (uint32_t)(i + 1);
        }
        TPPI_reset_channel((TPPI_NodeId)prev_node, ch_in);
        w.n = (uint64_t)r + 1;
        t_wait(ch_sent_reach, &w, "the channel's send callback");
        Barrier();
    }
    s_wait(s_seq_out, rounds);
    all_sent = (uint32_t)CombineInt((int)sent, ReduceAdd);
    all_got = (uint32_t)CombineInt((int)got, ReduceAdd);
    CHECK(all_sent == all_got, "channel checksums: sent 0x%x, received "
          "0x%x", all_sent, all_got);
    CHECK(ch_recv == (uint64_t)rounds, "%llu channel receive callbacks, "
          "not %d", (unsigned long long)ch_recv, rounds);
    if (Self == 0) {
        printf("channel: checksum 0x%08x\n", all_got);
    }
}

/* ---- phase 3: block access faults served by Tempest messages ---------- */

static char *page;
static volatile uint64_t blk_served, blk_filled;

static uint32_t blk_word(int home, int b, int i)
{
    return val(home, b, i, 6);
}

/* On the home node: the block's data, as a Ba item of the reply. */
static void fill_h(TPPI_NodeId src, int size)
{
    int b = TPPI_recv_W();

    (void)size;
    TPPI_recv_Ba(page + b * BLK, BLK, TPPI_Blk_Validate_RO);
    /*
     * Counted before the resume: with --smp 2 this handler runs on the
     * protocol thread's vCPU, and the resumed thread could reach its
     * check before a count made after (guest-tcp/both-4-smp2 once saw
     * 63 of 64).
     */
    blk_filled++;
    TPPI_resume_va(page + b * BLK, BLK);
    (void)src;
}

static void fetch_h(TPPI_NodeId src, int size)
{
    uint32_t data[BLK / 4];
    int b = TPPI_recv_W(), i;

    (void)size;
    for (i = 0; i < BLK / 4; i++) {
        data[i] = blk_word(TPPI_self_address, b, i);
    }
    blk_served++;
    TPPI_send_WR(src, fill_h, b, data, BLK);
}

/* A read of an Invalid block: ask its home for it. */
static void read_fault_h(void *va, void *user_ptr, TPPI_NodeId home)
{
    (void)user_ptr;
    TPPI_send_W(home, fetch_h, (int)(((char *)va - page) / BLK));
}

static void phase_faults(void)
{
    struct tempest_stats st;
    uint32_t sum = 0, want = 0, all, all_want;
    int b, i;

    page = (char *)(uintptr_t)TPPI_SEGMENT_BASE;
    TPPI_register_blk_acc_fault_handler(PAGE_MODE, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, read_fault_h);
    CHECK(TPPI_alloc_and_map(page, PAGE_MODE, TPPI_Blk_Invalid,
                             (TPPI_NodeId)next_node, NULL) == 1,
          "TPPI_alloc_and_map refused");
    Barrier();
    for (b = 0; b < BLKS; b++) {
        s_send(val(Self, 9, b, 7));
        for (i = 0; i < BLK / 4; i++) {
            uint32_t v = ((volatile uint32_t *)(page + b * BLK))[i];

            sum += v;
            want += blk_word(next_node, b, i);
            if (v != blk_word(next_node, b, i)) {
                CHECK(0, "block %d word %d is 0x%x, not 0x%x", b, i, v,
                      blk_word(next_node, b, i));
                i = BLK;
                break;
            }
        }
        CHECK(TPPI_get_blk_acc(page + b * BLK) == TPPI_Blk_ReadOnly,
              "block %d is not ReadOnly after its fault", b);
    }
    s_wait(s_seq_out, rounds);
    Barrier();
    tempest_get_stats(&st);
    CHECK(st.blk_faults >= (uint64_t)BLKS && blk_filled == BLKS,
          "%llu block faults, %llu blocks filled, not %d",
          (unsigned long long)st.blk_faults,
          (unsigned long long)blk_filled, BLKS);
    all = (uint32_t)CombineInt((int)sum, ReduceAdd);
    all_want = (uint32_t)CombineInt((int)want, ReduceAdd);
    CHECK(all == all_want, "faults: checksum 0x%x, not 0x%x", all,
          all_want);
    CHECK((int)CombineInt((int)blk_served, ReduceAdd) == BLKS * PartitionSize,
          "blocks served: not %d", BLKS * PartitionSize);
    if (Self == 0) {
        printf("faults: checksum 0x%08x\n", all);
    }
}

static volatile int misuse_done;

static void misuse_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    Barrier();          /* on the protocol thread: refused */
    misuse_done = 1;
}

static int misuse_over(void *arg)
{
    (void)arg;
    return misuse_done;
}

int main(int argc, char **argv)
{
    struct tempest_stats st;
    int total;

    if (argc > 1 && strcmp(argv[1], "misuse") == 0) {
        StrataInit();
        TPPI_send(TPPI_self_address, misuse_h);
        tempest_wait(misuse_over, NULL);
        printf("both: Barrier in a Tempest handler returned\n");
        StrataExit(1);
    }
    if (argc > 1) {
        rounds = atoi(argv[1]);
    }
    if (argc > 2) {
        msgs = atoi(argv[2]);
    }
    /* Before any node can send to it. */
    StrataPortTable[XFER_PORT].base = xfer_in;
    StrataInit();
    if (PartitionSize > MAX_NODES || rounds < 1 || msgs < 2) {
        printf("both: at most %d nodes, ROUNDS >= 1, MSGS >= 2\n",
               MAX_NODES);
        StrataExit(2);
    }
    next_node = (Self + 1) % PartitionSize;
    prev_node = (Self + PartitionSize - 1) % PartitionSize;
    CHECK(TPPI_self_address == (TPPI_NodeId)Self &&
          TPPI_num_nodes == (unsigned)PartitionSize,
          "Tempest says node %u of %u", TPPI_self_address, TPPI_num_nodes);

    /* Before any node can send the channel's ID (phase 2). */
    ch_src_buf = malloc(CH_BYTES);
    ch_dst_buf = malloc(CH_BYTES);
    if (!ch_src_buf || !ch_dst_buf) {
        printf("both: no memory\n");
        StrataExit(2);
    }

    phase_messages();
    phase_broadcast();
    phase_channel();
    phase_faults();

    tempest_get_stats(&st);
    CHECK(st.bad_packets == 0 && st.bad_handlers == 0 && st.unread == 0 &&
          st.overruns == 0 && st.bad_sends == 0,
          "libtempest reports: %llu bad packets, %llu bad handlers",
          (unsigned long long)st.bad_packets,
          (unsigned long long)st.bad_handlers);
    total = CombineInt(failures, ReduceAdd);
    if (total == 0) {
        printf("both ok\n");
    } else {
        printf("both FAILED: %d failures\n", total);
    }
    StrataExit(total ? 1 : 0);
}
