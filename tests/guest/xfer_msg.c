/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FLASH 3.1-3.4 (base message passing) through <magic.h>: send returning
 * a message id, senddone, bufalloc of receive buffers in advance, the
 * non-blocking receive from the receive table, buffers given back with
 * bufreturn and freed with buffree, and the completion order of 3.4.2.
 *
 *   xfer_msg all [MSGS]   (default 150)
 *     A  every node sends MSGS messages of 16 types and sizes 1 ..
 *        20000 bytes, at odd alignments, to every other node, into
 *        buffers posted in advance; every message is checked byte for
 *        byte and in send order per (sender, type); then the same again
 *        into the buffers given back with magic_bufreturn();
 *     B  a 32 MiB message then 8 short ones of one type: the short ones
 *        are stored first but received after it (held back);
 *     C  a message sent before its receiver posted any buffer of its
 *        type completes at its sender and waits in the receiver's system
 *        space; with system space full the next one waits holding its
 *        sender (XFER_WAITING); all come once a buffer is posted, into
 *        its space one after another.
 *   xfer_msg refuse
 *     D  a message longer than every posted buffer of its type and than
 *        system space is refused: senddone() says -1, both nodes report
 *        it, and the next message of that type is received in its place.
 * Prints "xfer_msg ok" on every node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am-util.h"
#include "magic.h"
#include "tempest/rt.h"
#include "xfer-util.h"

#define NTYPES      16
#define TYPE0       100
#define MAX_MSG     20000

static unsigned msgs = 150;

static unsigned type_of(unsigned i, unsigned src)
{
    return TYPE0 + (i * 7 + src) % NTYPES;
}

static size_t size_of(unsigned i, unsigned src)
{
    return 1 + (i * 4099 + src * 131) % MAX_MSG;
}

static uint64_t seed_of(unsigned src, unsigned dst, unsigned i,
                        unsigned phase)
{
    return (uint64_t)phase << 48 | (uint64_t)src << 36 |
           (uint64_t)dst << 24 | i;
}

static int send_over(void *arg)
{
    return magic_senddone(*(magic_mid *)arg) != 0;
}

/* magic_sendwait(), but a send that never ends fails the test. */
static int sendwait(magic_mid mid)
{
    xu_need(send_over, &mid, "a send to complete");
    return magic_sendwait(mid);
}

static uint64_t received_count(void)
{
    struct magic_stats st;

    magic_get_stats(&st);
    return st.received;
}

static int more_received(void *arg)
{
    return received_count() > *(uint64_t *)arg;
}

/* ---- A: many types and buffers ----------------------------------------- */

static void phase_a(unsigned phase)
{
    unsigned n = TPPI_num_nodes, me = TPPI_self_address, p, i, t;
    unsigned total = (n - 1) * msgs, got = 0;
    static unsigned next_i[8][NTYPES];
    magic_mid *mids = calloc((size_t)total, sizeof(*mids));
    uint8_t **bufs = calloc((size_t)total, sizeof(*bufs));
    unsigned k = 0;
    uint64_t seen;

    if (mids == NULL || bufs == NULL || n > 8) {
        am_fail("phase A: no memory, or more than 8 nodes");
        return;
    }
    memset(next_i, 0, sizeof(next_i));
    if (phase == 0) {
        /*
         * Every message gets a buffer of its type, posted in advance.
         * The controller gives a message the first posted buffer of its
         * type that is large enough, whichever message it was meant for:
         * every buffer holds the largest message.
         */
        for (p = 0; p < n; p++) {
            for (i = 0; p != me && i < msgs; i++) {
                if (magic_bufalloc(MAX_MSG + (i % 3) * 100,
                                   type_of(i, p)) == NULL) {
                    am_fail("magic_bufalloc failed: %s",
                            magic_strerror(magic_last_error()));
                    return;
                }
            }
        }
    }
    am_barrier();
    for (i = 0; i < msgs; i++) {
        for (p = 0; p < n; p++) {
            size_t len = size_of(i, me);
            unsigned off = i % 8;

            if (p == me) {
                continue;
            }
            bufs[k] = aligned_alloc(64, len + 64);
            xu_fill(bufs[k], len + off, seed_of(me, p, i, phase));
            mids[k] = magic_send(type_of(i, me), p, bufs[k] + off, len);
            if (mids[k] == MAGIC_NO_MID) {
                am_fail("magic_send %u to node %u failed", i, p);
                return;
            }
            k++;
        }
    }
    /* Receive: every type in turn, each message checked in order. */
    while (got < total) {
        unsigned found = 0;

        seen = received_count();
        for (t = 0; t < NTYPES; t++) {
            int src;
            size_t len;
            uint8_t *m;

            while ((m = magic_receive(TYPE0 + t, &src, &len)) != NULL) {
                uint64_t bad;

                found++;
                got++;
                if (src < 0 || (unsigned)src >= n || (unsigned)src == me) {
                    am_fail("message from bad node %d", src);
                    continue;
                }
                /* The next message of this type from src, in order. */
                i = next_i[src][t];
                while (i < msgs && type_of(i, (unsigned)src) != TYPE0 + t) {
                    i++;
                }
                next_i[src][t] = i + 1;
                if (i >= msgs || len != size_of(i, (unsigned)src)) {
                    am_fail("type %u from node %d: %zu bytes, not message "
                            "%u (out of order?)", TYPE0 + t, src, len, i);
                    continue;
                }
                bad = xu_check(m, len, i % 8, seed_of((unsigned)src, me, i,
                                                      phase));
                if (bad) {
                    am_fail("message %u of type %u from node %d: byte %llu "
                            "of %zu differs", i, TYPE0 + t, src,
                            (unsigned long long)bad - 1, len);
                }
                if (phase == 0 ? magic_bufreturn(m) : magic_buffree(m)) {
                    am_fail("giving back the buffer of message %u failed", i);
                }
            }
        }
        if (!found && got < total) {
            if (xu_wait(more_received, &seen, XU_LIMIT_S,
                        "phase A messages") != 0) {
                am_fail("phase A: %u of %u messages received", got, total);
                return;
            }
        }
    }
    for (k = 0; k < total; k++) {
        if (sendwait(mids[k]) != 1) {
            am_fail("send %u did not complete", k);
        }
        free(bufs[k]);
    }
    free(mids);
    free(bufs);
    if (me == 0) {
        printf("phase A%u: %u messages of %d types each way\n", phase,
               total, NTYPES);
    }
}

/* ---- B: completion order ------------------------------------------------ */

#define BIG     (32 << 20)
#define TYPE_B  500

/* The long message waits for a buffer and the eight short ones are parked. */
static int b_engine_ready(void *arg)
{
    (void)arg;
    return rt_nc_read(TEMPEST_NC_XFER_WAITING) == 1 &&
           rt_nc_read(TEMPEST_NC_XFER_PARKED) == 8;
}

static int b_received8(void *arg)
{
    return received_count() >= *(uint64_t *)arg + 8;
}

/*
 * The 32 MiB message is sent first, then eight short ones.  The receiver
 * posts no buffer until the long one waits for one (it is longer than
 * system space) and the short ones are parked in system space; then it
 * posts buffers for the short ones only, so that all eight are stored
 * before the long one whatever the host's scheduling: they must be held
 * back, and magic_receive must still hand out all nine in the order sent.
 */
static void phase_b(void)
{
    struct magic_stats st;
    magic_mid mids[9];
    uint8_t *big, *small[8];
    uint64_t held0, base, t_end;
    int src, j;
    size_t len;

    am_barrier();
    if (TPPI_self_address == 0) {
        big = aligned_alloc(64, BIG);
        xu_fill(big, BIG, 77);
        mids[0] = magic_send(TYPE_B, 1, big, BIG);
        for (j = 0; j < 8; j++) {
            small[j] = aligned_alloc(64, 64);
            xu_fill(small[j], 64, 1000 + j);
            mids[j + 1] = magic_send(TYPE_B, 1, small[j], 64);
        }
        for (j = 0; j < 9; j++) {
            if (sendwait(mids[j]) != 1) {
                am_fail("phase B: send %d failed", j);
            }
        }
        free(big);
        for (j = 0; j < 8; j++) {
            free(small[j]);
        }
    } else if (TPPI_self_address == 1) {
        magic_get_stats(&st);
        held0 = st.held_back;
        base = st.received;
        /* Registers raise no interrupt: look every millisecond. */
        t_end = rt_time_ns() + 20000000000ULL;
        while (!b_engine_ready(NULL) && rt_time_ns() < t_end) {
            tempest_wait_until(b_engine_ready, NULL,
                               rt_time_ns() + 1000000);
        }
        xu_need(b_engine_ready, NULL, "the 32 MiB message waiting and 8 "
                "short ones in system space");
        for (j = 0; j < 8; j++) {
            if (!magic_bufalloc(64, TYPE_B)) {
                am_fail("phase B: bufalloc");
            }
        }
        xu_need(b_received8, &base, "phase B: the short messages stored");
        if (magic_receive(TYPE_B, &src, &len) != NULL) {
            am_fail("phase B: a short message was handed out before the "
                    "long one");
        }
        if (!magic_bufalloc(BIG, TYPE_B)) {
            am_fail("phase B: bufalloc");
        }
        for (j = -1; j < 8; j++) {
            uint8_t *m = magic_receive_wait(TYPE_B, &src, &len);

            if (m == NULL || src != 0 ||
                (j < 0 ? len != BIG || xu_check(m, len, 0, 77) :
                 len != 64 || xu_check(m, len, 0, 1000 + (unsigned)j))) {
                am_fail("phase B: message %d out of order or damaged "
                        "(%zu bytes)", j, m ? len : 0);
            }
            if (m) {
                magic_buffree(m);
            }
        }
        magic_get_stats(&st);
        printf("phase B: %llu messages held back behind the 32 MiB one\n",
               (unsigned long long)(st.held_back - held0));
        if (st.held_back - held0 != 8) {
            am_fail("phase B: %llu short messages held back, not 8",
                    (unsigned long long)(st.held_back - held0));
        }
    }
}

/* ---- C: a message waits for its buffer ----------------------------------- */

#define TYPE_C  600

static volatile int c_sent;     /* volatile: set by a handler */

static void c_sent_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    c_sent = TPPI_recv_W();
}

static int c_sent_cond(void *arg)
{
    (void)arg;
    return c_sent;
}

/* Two messages stored in system space, one waiting for a buffer. */
static int engine_waiting(void *arg)
{
    (void)arg;
    return rt_nc_read(TEMPEST_NC_XFER_WAITING) != 0 &&
           rt_nc_read(TEMPEST_NC_XFER_PARKED) == 2;
}

#define C_BIG   (600 * 1024)    /* two do not fit in 1 MiB of system space */

/*
 * Footnote 3: a message with no buffer completes at its sender (which
 * here waits on senddone before the receiver has called bufalloc) and
 * waits in the receiver's system space; two 600 KiB ones more do not fit
 * there: the first is stored too, the second holds its sender
 * (XFER_WAITING), and nothing is lost once buffers come.
 */
static void phase_c(void)
{
    static uint8_t msg[1000];
    magic_mid mid, big[2];
    uint8_t *m, *data = NULL;
    uint64_t t_end;
    uint32_t used;
    int src, i;
    size_t len;

    am_barrier();
    if (TPPI_self_address == 0) {
        xu_fill(msg, sizeof(msg), 600);
        mid = magic_send(TYPE_C, 1, msg, sizeof(msg));
        if (sendwait(mid) != 1) {
            am_fail("phase C: the send before any bufalloc failed");
        }
        data = malloc(2 * C_BIG);
        if (data == NULL) {
            am_fail("phase C: out of memory");
            return;
        }
        for (i = 0; i < 2; i++) {
            xu_fill(data + i * C_BIG, C_BIG, 610 + i);
            big[i] = magic_send(TYPE_C, 1, data + i * C_BIG, C_BIG);
        }
        /* Said after the first send completed: no buffer was posted. */
        TPPI_send_W(1, c_sent_h, 1);
        for (i = 0; i < 2; i++) {
            if (sendwait(big[i]) != 1) {
                am_fail("phase C: big send %d failed", i);
            }
        }
        free(data);
    } else if (TPPI_self_address == 1) {
        xu_need(c_sent_cond, NULL, "phase C send");
        /* Registers raise no interrupt: look every millisecond. */
        t_end = rt_time_ns() + 20000000000ULL;
        while (!engine_waiting(NULL) && rt_time_ns() < t_end) {
            tempest_wait_until(engine_waiting, NULL, rt_time_ns() + 1000000);
        }
        xu_need(engine_waiting, NULL, "2 messages in system space and one "
                "waiting for a buffer");
        used = rt_nc_read(TEMPEST_NC_XFER_SYS_USED);
        printf("phase C: %u messages in %u bytes of system space, %u "
               "waiting\n", rt_nc_read(TEMPEST_NC_XFER_PARKED), used,
               rt_nc_read(TEMPEST_NC_XFER_WAITING));
        if (rt_nc_read(TEMPEST_NC_XFER_PARKED) != 2 ||
            used < sizeof(msg) + C_BIG || used > 1024 * 1024) {
            am_fail("phase C: system space holds the wrong messages");
        }
        if (magic_receive(TYPE_C, &src, &len) != NULL) {
            am_fail("phase C: received with no buffer posted");
        }
        /* Space for all three, in one buffer. */
        if (magic_bufalloc(4096 + 2 * C_BIG, TYPE_C) == NULL) {
            am_fail("phase C: bufalloc");
            return;
        }
        m = magic_receive_wait(TYPE_C, &src, &len);
        if (m == NULL || src != 0 || len != sizeof(msg) ||
            xu_check(m, len, 0, 600)) {
            am_fail("phase C: wrong message");
        } else {
            printf("phase C: the message waited in system space for its "
                   "buffer\n");
        }
        for (i = 0; i < 2; i++) {
            uint8_t *b = magic_receive_wait(TYPE_C, &src, &len);

            if (b == NULL || len != C_BIG || xu_check(b, len, 0, 610 + i)) {
                am_fail("phase C: big message %d wrong", i);
            }
            if (b && (b < m || b >= m + 4096 + 2 * C_BIG)) {
                am_fail("phase C: big message %d outside the buffer", i);
            }
            magic_buffree(b);
        }
        magic_buffree(m);
        if (rt_nc_read(TEMPEST_NC_XFER_SYS_USED) ||
            rt_nc_read(TEMPEST_NC_XFER_PARKED)) {
            am_fail("phase C: system space not empty at the end");
        }
    }
}

/* ---- D: a message longer than every buffer of its type ------------------- */

#define TYPE_D  700

#define D_LONG  (1024 * 1024 + 64)   /* longer than system space */

static void phase_d(void)
{
    static uint8_t long_msg[D_LONG], short_msg[50];
    struct magic_stats st;
    magic_mid a, b;
    uint8_t *m;
    int src;
    size_t len;

    if (TPPI_self_address == 1) {
        magic_bufalloc(100, TYPE_D);
    }
    am_barrier();
    if (TPPI_self_address == 0) {
        xu_fill(long_msg, sizeof(long_msg), 7001);
        xu_fill(short_msg, sizeof(short_msg), 7002);
        a = magic_send(TYPE_D, 1, long_msg, sizeof(long_msg));
        if (sendwait(a) != -1) {
            am_fail("phase D: the long message was not refused");
        }
        b = magic_send(TYPE_D, 1, short_msg, sizeof(short_msg));
        if (sendwait(b) != 1) {
            am_fail("phase D: the short message failed");
        }
        magic_get_stats(&st);
        if (st.failed != 1) {
            am_fail("phase D: %llu sends failed, not 1",
                    (unsigned long long)st.failed);
        }
    } else if (TPPI_self_address == 1) {
        m = magic_receive_wait(TYPE_D, &src, &len);
        if (m == NULL || len != sizeof(short_msg) ||
            xu_check(m, len, 0, 7002)) {
            am_fail("phase D: the short message did not come in its place");
        } else {
            printf("phase D: the refused message was skipped\n");
        }
        magic_get_stats(&st);
        if (st.skipped != 1) {
            am_fail("phase D: %llu skipped, not 1",
                    (unsigned long long)st.skipped);
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    uint64_t t0 = am_ticks();

    if (argc > 2) {
        msgs = (unsigned)atoi(argv[2]);
    }
    if (TPPI_num_nodes < 2) {
        am_fail("needs 2 nodes or more");
    } else if (strcmp(mode, "refuse") == 0) {
        phase_d();
    } else {
        phase_a(0);
        am_barrier();
        phase_a(1);
        am_barrier();
        phase_b();
        phase_c();
    }
    printf("node %u: done in %llu ms\n", TPPI_self_address,
           (unsigned long long)(am_ticks() - t0) / 1000);
    return am_finish("xfer_msg");
}
