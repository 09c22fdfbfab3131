/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Data over ports ("Hardware Migratable Channels", sections 2 and 3.1),
 * on 2 nodes: the input before the output (INPUTTING: the data goes
 * straight to the inputting process, nothing buffered) and the output
 * before the input (pre-sent: the receiver's port is BUFFERFULL while
 * the sender's stays OUTPUTTING until the input), in both directions of
 * a channel; every length from 0 to CHAN_MAX_DATA at odd alignments;
 * the paper's input naming where the NEXT data goes (2.1, with the
 * loop unrolled over two buffers, and data that came before any buffer
 * was named); an input first too short for the data (CHAN_E_TOOBIG, the
 * data kept, the output not done until it is input); a ping-pong's turns
 * in one call each (chan_output_input); on the device, data past
 * CHAN_MAX_DATA (to 1 MiB) straight
 * into the input's buffer, input first and output first (then it waits at
 * the sender until an input long enough); a channel with both ends on
 * one node; a handler that a
 * fault runs inline (a one-vCPU node) asks chan_state() as any handler
 * may.  Prints "chan_data ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan-util.h"
#include "tempest/rt.h"

#define KEY         1
#define NODE_A      0
#define NODE_B      1

static uint8_t src[CHAN_MAX_DATA + 16] __attribute__((aligned(8)));
static uint8_t dst[CHAN_MAX_DATA + 16] __attribute__((aligned(8)));
static chan_port port;
static chan_port far;           /* the companion, on the other node */

static unsigned me(void)
{
    return TPPI_self_address;
}

/* 3.1: the receiver inputs first; the data is never buffered. */
static void receiver_first(unsigned from, unsigned to, unsigned seed)
{
    uint64_t buffered;
    int n;

    if (me() == to) {
        buffered = cu_stat(CU_STAT(buffered));
        memset(dst, 0, sizeof(dst));
        n = chan_input(port, dst, sizeof(dst));
        CU_EQ(n, 100);
        CU_CHECK(cu_match(dst, 100, seed));
        CU_EQ(cu_stat(CU_STAT(buffered)), buffered);
        CU_EQ(chan_state(port), CHAN_IDLE);
    } else if (me() == from) {
        cu_wait_remote_state(to, far, CHAN_INPUTTING);
        cu_fill(src, 100, seed);
        CU_EQ(chan_output(port, src, 100), 0);
        CU_EQ(chan_state(port), CHAN_IDLE);
    }
    am_barrier();
}

/* 3.1 and 2.2: the sender outputs first; the data is pre-sent. */
static void sender_first(unsigned from, unsigned to, unsigned seed)
{
    int n;

    if (me() == from) {
        cu_fill(src, 333, seed);
        CU_EQ(chan_output_start(port, src, 333), 0);
        CU_EQ(chan_state(port), CHAN_OUTPUTTING);
    }
    am_barrier();
    if (me() == to) {
        cu_wait_state(port, CHAN_BUFFERFULL);
        /* Not acknowledged before the input: still OUTPUTTING there. */
        CU_EQ(cu_remote_state(from, far), CHAN_OUTPUTTING);
        memset(dst, 0, sizeof(dst));
        n = chan_input(port, dst, sizeof(dst));
        CU_EQ(n, 333);
        CU_CHECK(cu_match(dst, 333, seed));
        CU_EQ(chan_state(port), CHAN_IDLE);
    } else if (me() == from) {
        CU_EQ(chan_output_wait(port), 0);
        CU_EQ(chan_state(port), CHAN_IDLE);
    }
    am_barrier();
}

/* Every length, odd alignments, the bytes around the data untouched. */
static void lengths(void)
{
    static const unsigned lens[] = { 0, 1, 2, 3, 4, 5, 7, 8, 63, 64, 65,
                                     255, 1000, 2048, 4077, 4079,
                                     CHAN_MAX_DATA };
    unsigned i, off, len;
    int n;

    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        len = lens[i];
        off = i % 4;
        if (me() == NODE_A) {
            cu_fill(src + off, len, 1000 + i);
            CU_EQ(chan_output(port, src + off, len), 0);
        } else {
            memset(dst, 0xEE, sizeof(dst));
            n = chan_input(port, dst + 4 - off, len);
            CU_EQ(n, (int)len);
            if (!cu_match(dst + 4 - off, len, 1000 + i)) {
                am_fail("%u bytes at offset %u differ", len, 4 - off);
            }
            if (dst[3 - off] != 0xEE || dst[4 - off + len] != 0xEE) {
                am_fail("%u bytes at offset %u: a byte around changed", len,
                        4 - off);
            }
        }
    }
    am_barrier();
}

/*
 * 2.1: input names where the NEXT data goes: the unrolled loop of the
 * paper over buffers a and b; the data of each input is where the
 * previous input (or chan_set_buffer) said.
 */
static void input_next(void)
{
    static uint32_t a[64], b[64], c[64];
    void *where;
    unsigned i;
    int n;

    if (me() == NODE_A) {
        /* Pre-sent before B names a buffer: copied into it later. */
        cu_fill(src, 40, 500);
        CU_EQ(chan_output(port, src, 40), 0);
        for (i = 0; i < 10; i++) {
            cu_fill(src, 4 * (i + 1), 600 + i);
            CU_EQ(chan_output(port, src, 4 * (i + 1)), 0);
        }
    } else {
        cu_wait_state(port, CHAN_BUFFERFULL);
        CU_EQ(chan_set_buffer(port, c, sizeof(c)), 0);
        n = chan_input_next(port, a, sizeof(a), &where);
        CU_EQ(n, 40);
        CU_CHECK(where == c);
        CU_CHECK(cu_match(c, 40, 500));
        for (i = 0; i < 10; i += 2) {
            n = chan_input_next(port, b, sizeof(b), &where);   /* into a */
            CU_EQ(n, 4 * (i + 1));
            CU_CHECK(where == a);
            CU_CHECK(cu_match(a, 4 * (i + 1), 600 + i));
            n = chan_input_next(port, a, sizeof(a), &where);   /* into b */
            CU_EQ(n, 4 * (i + 2));
            CU_CHECK(where == b);
            CU_CHECK(cu_match(b, 4 * (i + 2), 600 + i + 1));
        }
        CU_EQ(chan_set_buffer(port, NULL, 0), 0);
    }
    am_barrier();
}

/*
 * Input first with a buffer too short for the data (2 bytes for 4, 100
 * for CHAN_MAX_DATA): the input gets CHAN_E_TOOBIG, the data is kept
 * for the next input (BUFFERFULL) and the output is not done until it is
 * input, as on the software path (on the device, the input's own buffer
 * is the one the device stores into: the data waits at the sender).
 */
static void short_too_long(void)
{
    static const unsigned lens[] = { 4, CHAN_MAX_DATA };
    static const unsigned shorts[] = { 2, 100 };
    unsigned i;

    for (i = 0; i < 2; i++) {
        if (me() == NODE_A) {
            cu_wait_remote_state(NODE_B, far, CHAN_INPUTTING);
            cu_fill(src, lens[i], 5000 + i);
            CU_EQ(chan_output_start(port, src, lens[i]), 0);
        } else {
            memset(dst, 0xEE, sizeof(dst));
            CU_EQ(chan_input(port, dst, shorts[i]), CHAN_E_TOOBIG);
            CU_EQ(chan_state(port), CHAN_BUFFERFULL);
            CU_CHECK(dst[0] == 0xEE && dst[shorts[i] - 1] == 0xEE);
        }
        am_barrier();
        if (me() == NODE_A) {
            CU_EQ(chan_state(port), CHAN_OUTPUTTING);
        }
        am_barrier();
        if (me() == NODE_B) {
            CU_EQ(chan_input(port, dst, lens[i]), (int)lens[i]);
            CU_CHECK(cu_match(dst, lens[i], 5000 + i));
            CU_EQ(chan_state(port), CHAN_IDLE);
        } else {
            CU_EQ(chan_output_wait(port), 0);
        }
        am_barrier();
    }
}

/*
 * chan_output_input, a ping-pong's turn: A outputs a message of each
 * length and inputs the answer in the same call; B answers each with
 * chan_output_input too (its input is A's next message), the last with
 * chan_output. Data checked both ways. An answer longer than A's buffer:
 * CHAN_E_TOOBIG, kept (BUFFERFULL) for the next chan_input. A port of
 * the other node: CHAN_E_BADPORT. A buffer past CHAN_MAX_DATA: an output
 * and an input. On the device every other call is one OUTPUT_INPUT
 * instruction (chan_stats.turns), in software none.
 */
static void turns(void)
{
    static const unsigned lens[] = { 0, 1, 7, 64, 1000, CHAN_MAX_DATA };
    const unsigned n = sizeof(lens) / sizeof(lens[0]);
    bool dev = chan_max_data() > CHAN_MAX_DATA;
    uint64_t t0 = cu_stat(CU_STAT(turns));
    unsigned i;
    int got;

    if (me() == NODE_A) {
        CU_EQ(chan_output_input(far, src, 1, dst, 1), CHAN_E_BADPORT);
        for (i = 0; i < n; i++) {
            cu_fill(src + 1, lens[i], 6000 + i);
            memset(dst, 0, sizeof(dst));
            got = chan_output_input(port, src + 1, lens[i], dst,
                                    i == 2 ? sizeof(dst) : CHAN_MAX_DATA);
            CU_EQ(got, (int)lens[n - 1 - i]);
            CU_CHECK(cu_match(dst, (size_t)got, 7000 + i));
            CU_EQ(chan_state(port), CHAN_IDLE);
        }
        cu_fill(src, 4, 6100);
        CU_EQ(chan_output_input(port, src, 4, dst, 2), CHAN_E_TOOBIG);
        CU_EQ(chan_state(port), CHAN_BUFFERFULL);
        CU_EQ(chan_input(port, dst, 100), 100);
        CU_CHECK(cu_match(dst, 100, 7100));
        CU_EQ(cu_stat(CU_STAT(turns)) - t0, dev ? n : 0);
    } else {
        got = chan_input(port, dst, CHAN_MAX_DATA);
        for (i = 0; i < n; i++) {
            CU_EQ(got, (int)lens[i]);
            CU_CHECK(cu_match(dst, (size_t)got, 6000 + i));
            cu_fill(src + 3, lens[n - 1 - i], 7000 + i);
            if (i + 1 < n) {
                got = chan_output_input(port, src + 3, lens[n - 1 - i], dst,
                                        CHAN_MAX_DATA);
            } else {
                CU_EQ(chan_output(port, src + 3, lens[n - 1 - i]), 0);
            }
        }
        CU_EQ(chan_input(port, dst, CHAN_MAX_DATA), 4);
        CU_CHECK(cu_match(dst, 4, 6100));
        cu_fill(src, 100, 7100);
        CU_EQ(chan_output(port, src, 100), 0);
        CU_EQ(cu_stat(CU_STAT(turns)) - t0, dev ? n - 1 : 0);
    }
    am_barrier();
}

/*
 * Long data (chan_max_data() past CHAN_MAX_DATA: the device's channel
 * controller): inline DATA past the library's buffer, the 64 KiB frame
 * limit on both sides, and 1 MiB by the transfer engine.  Input first:
 * it lands in the input's buffer, the bytes around untouched.  Output
 * first: it waits at the sender (chan_state() BUFFERFULL), an input too
 * short for it gets CHAN_E_TOOBIG and it waits on, one long enough
 * takes it.  Input first with a buffer too short: the same (the input
 * ends CHAN_E_TOOBIG, the output goes on until the data is input).
 */
static void long_data(void)
{
    static const size_t lens[] = { CHAN_MAX_DATA + 1, 65536, 65537,
                                   1U << 20 };
    size_t big = (1U << 20) + 64, len;
    uint8_t *s, *d;
    unsigned i;
    int n;

    if (chan_max_data() <= CHAN_MAX_DATA) {
        return;                         /* software: CHAN_MAX_DATA */
    }
    s = malloc(big);
    d = malloc(big);
    CU_CHECK(s && d);
    if (!s || !d) {
        return;
    }
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        len = lens[i];
        if (me() == NODE_A) {
            cu_wait_remote_state(NODE_B, far, CHAN_INPUTTING);
            cu_fill(s + 1, len, 2000 + i);
            CU_EQ(chan_output(port, s + 1, len), 0);
        } else {
            memset(d, 0xEE, big);
            n = chan_input(port, d + 3, len + 5);
            CU_EQ(n, (int)len);
            if (!cu_match(d + 3, len, 2000 + i)) {
                am_fail("%u long bytes input first differ", (unsigned)len);
            }
            if (d[2] != 0xEE || d[3 + len] != 0xEE) {
                am_fail("%u long bytes: a byte around changed",
                        (unsigned)len);
            }
        }
        am_barrier();
        if (me() == NODE_A) {
            cu_fill(s, len, 3000 + i);
            CU_EQ(chan_output_start(port, s, len), 0);
        }
        am_barrier();
        if (me() == NODE_B) {
            cu_wait_state(port, CHAN_BUFFERFULL);
            CU_EQ(chan_input(port, d, 100), CHAN_E_TOOBIG);
            CU_EQ(chan_input(port, d, len - 1), CHAN_E_TOOBIG);
            CU_EQ(chan_state(port), CHAN_BUFFERFULL);
            memset(d, 0, big);
            n = chan_input(port, d, big);
            CU_EQ(n, (int)len);
            if (!cu_match(d, len, 3000 + i)) {
                am_fail("%u long bytes output first differ", (unsigned)len);
            }
            CU_EQ(chan_state(port), CHAN_IDLE);
        } else {
            CU_EQ(chan_output_wait(port), 0);
        }
        am_barrier();
        /*
         * Input first with a buffer too short for it: the input gets
         * CHAN_E_TOOBIG and the data waits on (BUFFERFULL; the output
         * is not done) for an input long enough.
         */
        if (me() == NODE_A) {
            cu_wait_remote_state(NODE_B, far, CHAN_INPUTTING);
            cu_fill(s, len, 4000 + i);
            CU_EQ(chan_output_start(port, s, len), 0);
        } else {
            CU_EQ(chan_input(port, d, 100), CHAN_E_TOOBIG);
            CU_EQ(chan_state(port), CHAN_BUFFERFULL);
        }
        am_barrier();
        if (me() == NODE_A) {
            CU_EQ(chan_state(port), CHAN_OUTPUTTING);
        }
        am_barrier();
        if (me() == NODE_B) {
            CU_EQ(chan_input(port, d, len - 1), CHAN_E_TOOBIG);
            memset(d, 0, big);
            n = chan_input(port, d, big);
            CU_EQ(n, (int)len);
            if (!cu_match(d, len, 4000 + i)) {
                am_fail("%u long bytes for a short input differ",
                        (unsigned)len);
            }
            CU_EQ(chan_state(port), CHAN_IDLE);
        } else {
            CU_EQ(chan_output_wait(port), 0);
        }
        am_barrier();
    }
    free(s);
    free(d);
}

/* Both ends on one node (chan_alloc): the same protocol, looped back. */
static void local_channel(void)
{
    chan_port x, y, cx;
    int n;

    CU_EQ(chan_alloc(&x, &y), 0);
    CU_EQ(chan_companion(x, &cx), 0);
    CU_EQ(cx, y);
    CU_EQ(CHAN_PORT_NODE(x), me());
    cu_fill(src, 77, me());
    CU_EQ(chan_output_start(x, src, 77), 0);
    cu_wait_state(y, CHAN_BUFFERFULL);
    n = chan_input(y, dst, sizeof(dst));
    CU_EQ(n, 77);
    CU_CHECK(cu_match(dst, 77, me()));
    CU_EQ(chan_output_wait(x), 0);
    /* and back */
    CU_EQ(chan_output_start(y, src, 5), 0);
    CU_EQ(chan_input(x, dst, 5), 5);
    CU_EQ(chan_output_wait(y), 0);
    CU_EQ(chan_free(x), 0);
    CU_EQ(chan_free(y), 0);
}

static volatile int inline_state = -100;   /* volatile: a handler's */

static void inline_state_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    inline_state = chan_state((chan_port)TPPI_recv_W());
}

static void inline_fault_h(void *va, void *usr, TPPI_NodeId home)
{
    (void)usr;
    (void)home;
    TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RO);
    TPPI_resume_va(va, TPPI_TAG_BLK_SIZE);
}

/*
 * On a one-vCPU node a fault runs the protocol thread inline, IRQs masked
 * and not in an interrupt: a message waiting then is handled there, and
 * its chan_state() must be answered as from the interrupt.  (libchan once
 * took that for computation code, sent the call to itself, and returned
 * the unanswered request's 0.)  With a protocol CPU the same handler runs
 * there: the same answer.
 */
static void handler_inline(void)
{
    char *blk = (char *)(uintptr_t)TPPI_SEGMENT_BASE;
    uint64_t limit, flags;

    TPPI_register_blk_acc_fault_handler(1, TPPI_Blk_Invalid, TPPI_ReadAccess,
                                        inline_fault_h);
    TPPI_alloc_and_map(blk, 1, TPPI_Blk_Invalid, 0, NULL);
    flags = rt_irq_save();
    TPPI_send_W(me(), inline_state_h, (int)port);
    limit = am_ticks() + CU_LIMIT_S * 1000000ULL;
    while (tempest_protocol_cpu() == 0 && !rt_irq_pending() &&
           am_ticks() < limit) {
        /* the message is in: its interrupt waits, masked */
    }
    (void)*(volatile char *)blk;
    rt_irq_restore(flags);
    limit = am_ticks() + CU_LIMIT_S * 1000000ULL;
    while (inline_state == -100 && am_ticks() < limit) {
        cu_sleep_ms(1);
    }
    CU_EQ(inline_state, CHAN_IDLE);
}

int main(void)
{
    unsigned round;

    cu_watchdog(20);
    am_barrier();
    if (me() == NODE_A) {
        CU_EQ(chan_alloc_to(NODE_B, KEY, &port), 0);
    } else {
        CU_EQ(chan_accept(NODE_A, KEY, &port), 0);
    }
    CU_EQ(chan_companion(port, &far), 0);
    CU_EQ(CHAN_PORT_NODE(far), 1 - me());
    CU_EQ(chan_state(port), CHAN_IDLE);
    am_barrier();

    for (round = 0; round < 3; round++) {
        receiver_first(NODE_A, NODE_B, 10 + round);
        receiver_first(NODE_B, NODE_A, 20 + round);
        sender_first(NODE_A, NODE_B, 30 + round);
        sender_first(NODE_B, NODE_A, 40 + round);
    }
    lengths();
    input_next();
    short_too_long();
    turns();
    long_data();
    local_channel();
    handler_inline();

    am_barrier();
    CU_EQ(chan_free(port), 0);
    return cu_finish("chan_data", 0);
}
