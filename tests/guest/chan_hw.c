/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The node controller's channel controller (1.8, docs/chan.rst, "The
 * channel controller in the node controller") from guest code, through
 * the device access layer alone (tempest/nc.h), on two nodes:
 *  - each node makes one port with an initial buffer and connects it to
 *    the other node's (port ids are node << 16 | index);
 *  - the first input takes data pre-sent into the initial buffer
 *    (outputdata leaves the sender IDLE; the input names the next
 *    buffer), then the output completes at its COMMIT;
 *  - outputs of 1 byte to 64 MiB from node 0 to a waiting input on node
 *    1 (INPUT event: length and address), each acknowledged (OUTPUT
 *    event), the data checked byte for byte; those over 64 KiB go by
 *    the transfer engine;
 *  - a blocked input sleeps: node 1 inputs and sleeps (WFI, woken by the
 *    node controller's CQ interrupt) while node 0 waits 300 ms before it
 *    outputs; node 1 counts its wake-ups (a spinning wait would count
 *    millions) and prints them with the time it slept.
 * Prints "chan_hw ok".
 *
 * "chan_hw fail": a pre-send held at node 1, then both nodes exit with
 * status 3, for the channel controller's report of a failed node.
 *
 * "chan_hw split ROUNDS": the copy in halves (docs/chan.rst, "The copy
 * in halves"): a channel's transfer of 128 KiB to 4 MiB into a peer on
 * shared memory is copied half by the sender's controller, half by the
 * receiver's.  Node 0 outputs messages of lengths on both sides of every
 * boundary (64 KiB + 1 to 16 MiB + 3) from an odd address into a buffer
 * at an odd address whose surroundings are filled with a guard byte:
 * every byte of each message must be its own (the pattern has the
 * message's number in it and changes every byte) and no byte around it
 * may change.  Then ROUNDS round trips of 128 KiB to 1.1 MiB each way,
 * each message checked to be the next one.  Each node then checks
 * XFER_PULL, the bytes its controller copied: on shared memory (its own
 * transfers went into the peer's mapped RAM, XFER_PUT) exactly the
 * second halves of the messages it took in, else none.  Prints
 * "chan_hw split ok: pulled N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tempest/nc.h"
#include "tempest/rt.h"

#define MAXLEN  (64u << 20)

static unsigned failures;

#define CHECK(cond, ...) do {                                   \
    if (!(cond)) {                                              \
        failures++;                                             \
        printf("FAIL: " __VA_ARGS__);                           \
        printf("\n");                                           \
    }                                                           \
} while (0)

static uint32_t chan(uint64_t op, uint64_t port, uint64_t a2, uint64_t a3,
                     uint64_t *result)
{
    uint32_t reason, st = nc_chan(op, port, a2, a3, result, &reason);

    if (st != TEMPEST_CMD_SUCCESS) {
        printf("chan instruction %u on 0x%x: %s\n", (unsigned)op,
               (unsigned)port, nc_cmd_reason_name(reason));
    }
    return st;
}

static uint64_t pa(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/* The next CHAN event (A, B, C), or 0 after 60 s. */
static int wait_chan(struct nc_event *out)
{
    uint64_t t0 = rt_time_ns();
    struct nc_event *e;

    for (;;) {
        while ((e = nc_cq_peek()) == NULL) {
            if (rt_time_ns() - t0 > 60000000000ULL) {
                return 0;
            }
        }
        *out = *e;
        nc_cq_pop(e);
        nc_rx_doorbell();
        if ((out->ctl & TEMPEST_EV_TYPE_MASK) == TEMPEST_EV_CHAN) {
            return 1;
        }
    }
}

/* A packet to @node on the request network: "my port is ready". */
static void send_ready(unsigned node)
{
    struct nc_pkt *p;

    while ((p = nc_sq_claim(0)) == NULL) {
    }
    p->node = (uint16_t)node;
    p->kind = 0x4c;
    nc_sq_post(0, p, 0);
    nc_sq_doorbell(0);
}

static void wait_ready(void)
{
    struct nc_pkt *p;

    while ((p = nc_rq_peek()) == NULL) {
    }
    CHECK(p->kind == 0x4c, "ready packet of kind %u", p->kind);
    nc_rq_pop(p);
    nc_rx_doorbell();
}

static volatile unsigned irqs;

static void cq_irq(unsigned intid, void *arg)
{
    (void)intid;
    (void)arg;
    nc_irq_ack(TEMPEST_NC_IRQ_CQ);
    irqs++;
}

/* A blocked input sleeps until its data comes (docs/chan.rst). */
static void blocked_input(uint32_t port, uint8_t *buf)
{
    unsigned intid = 32 + TEMPEST_NC_SPI, sleeps = 0;
    struct nc_event ev;
    uint64_t res = 0, t0, flags;

    CHECK(rt_irq_register(intid, cq_irq, NULL) == 0 &&
          rt_irq_enable_spi(intid, 0, false) == 0, "CQ interrupt");
    nc_irq_enable(TEMPEST_NC_IRQ_CQ);
    CHECK(chan(TEMPEST_CHAN_OP_INPUT, port, pa(buf), MAXLEN, &res) ==
          TEMPEST_CMD_SUCCESS && res == 0, "blocked input");
    send_ready(!rt_node_id());
    t0 = rt_time_ns();
    flags = rt_irq_save();
    while (nc_cq_peek() == NULL && rt_time_ns() - t0 < 30000000000ULL) {
        rt_cpu_sleep(1000000);      /* at most 1 s; an IRQ ends it */
        sleeps++;
    }
    rt_irq_restore(flags);
    t0 = rt_time_ns() - t0;
    CHECK(wait_chan(&ev) && ev.b == 4, "blocked input's event");
    printf("chan_hw: blocked input slept %llu ms, %u wake-ups, %u "
           "interrupts\n", (unsigned long long)(t0 / 1000000), sleeps, irqs);
    CHECK(t0 >= 250000000ULL, "woke after %llu ns only",
          (unsigned long long)t0);
    CHECK(sleeps <= 5, "%u wake-ups: not sleeping", sleeps);
}

static uint8_t pattern(size_t i, unsigned seed)
{
    return (uint8_t)(seed + i * 7 + (i >> 9));
}

#define GUARD   0xEE
#define EDGE    256         /* guard bytes checked on each side */
#define SPLIT_MIN   (128u << 10)
#define SPLIT_MAX   (4u << 20)

/* What the receiver's controller copies of a message of @len. */
static uint64_t pulled_of(uint32_t len)
{
    if (len < SPLIT_MIN || len > SPLIT_MAX) {
        return 0;
    }
    return len - ((len / 2) & ~(uint64_t)(TEMPEST_XFER_COMPONENT - 1));
}

/* The first wrong byte of message @seq of @len at @b, or @len. */
static size_t first_wrong(const uint8_t *b, uint32_t len, unsigned seq)
{
    for (size_t i = 0; i < len; i++) {
        if (b[i] != pattern(i, seq)) {
            return i;
        }
    }
    return len;
}

/* Output message @seq of @len from @src; wait until it is input. */
static void split_output(uint32_t port, uint8_t *src, uint32_t len,
                         unsigned seq)
{
    struct nc_event ev;
    uint64_t res = 0;

    for (size_t i = 0; i < len; i++) {
        src[i] = pattern(i, seq);
    }
    CHECK(chan(TEMPEST_CHAN_OP_OUTPUT, port, pa(src), len, &res) ==
          TEMPEST_CMD_SUCCESS, "output %u of %u", seq, len);
    if (res != 1) {
        CHECK(wait_chan(&ev) && ev.a == (port |
              (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32) && ev.b == 0,
              "OUTPUT event of %u: 0x%llx %llu", seq,
              (unsigned long long)ev.a, (unsigned long long)ev.b);
    }
}

#define SPLIT_BUF   (24u << 20)     /* each of the two buffers */

static uint8_t *split_mem[2], *split_buf[2];
static unsigned split_inputs;

/*
 * Input message @seq of @len: it lands in the port's buffer (the two
 * buffers in turn), and the other becomes the buffer of the next input.
 */
static void split_input(uint32_t port, uint32_t len, unsigned seq)
{
    uint8_t *at = split_buf[split_inputs % 2];
    uint8_t *next = split_buf[(split_inputs + 1) % 2];
    struct nc_event ev = { 0 };
    uint64_t res = 0;
    size_t bad;

    split_inputs++;
    CHECK(chan(TEMPEST_CHAN_OP_INPUT, port, pa(next), SPLIT_BUF, &res) ==
          TEMPEST_CMD_SUCCESS, "input %u", seq);
    if (res & TEMPEST_CHAN_PRESENT) {
        ev.b = res & 0xFFFFFFFFu;
        ev.c = pa(at);
    } else {
        CHECK(wait_chan(&ev) && ev.a == (port |
              (uint64_t)TEMPEST_CHAN_EV_INPUT << 32), "INPUT event of %u",
              seq);
    }
    CHECK(ev.b == len && ev.c == pa(at), "message %u: %llu bytes at 0x%llx,"
          " not %u at 0x%llx", seq, (unsigned long long)ev.b,
          (unsigned long long)ev.c, len, (unsigned long long)pa(at));
    bad = first_wrong(at, len, seq);
    CHECK(bad == len, "message %u of %u bytes: byte %zu wrong (0x%02x, not "
          "0x%02x)", seq, len, bad, bad < len ? at[bad] : 0,
          bad < len ? pattern(bad, seq) : 0);
}

/* The guard bytes around the buffer of the next input. */
static void split_guard(uint32_t len)
{
    memset(split_mem[split_inputs % 2], GUARD, len + 2 * EDGE + 8);
}

static bool split_guard_kept(uint32_t len)
{
    const uint8_t *at = split_buf[(split_inputs + 1) % 2];
    unsigned i;

    for (i = 0; i < EDGE && at[-1 - (long)i] == GUARD &&
         at[len + i] == GUARD; i++) {
    }
    return i == EDGE;
}

/* buf and src: MAXLEN bytes each. */
static int split_main(uint32_t port, uint8_t *buf, uint8_t *src,
                      unsigned rounds)
{
    static const uint32_t lens[] = {
        65537, SPLIT_MIN - 1, SPLIT_MIN, SPLIT_MIN + 1, SPLIT_MIN + 63,
        196609, (1u << 20) + 7, SPLIT_MAX - 1, SPLIT_MAX, SPLIT_MAX + 1,
        (16u << 20) + 3,
    };
    const unsigned nlens = sizeof(lens) / sizeof(lens[0]);
    unsigned me = rt_node_id(), other = !me;
    uint64_t expect = 0, pulled;

    split_mem[0] = buf;
    split_mem[1] = buf + MAXLEN / 2;
    split_buf[0] = split_mem[0] + EDGE + 5;    /* odd addresses */
    split_buf[1] = split_mem[1] + EDGE + 3;
    CHECK(chan(TEMPEST_CHAN_OP_BUFFER, port, pa(split_buf[0]), SPLIT_BUF,
               NULL) == TEMPEST_CMD_SUCCESS, "buffer");
    send_ready(other);
    wait_ready();

    /* Node 0 to node 1, every length, guards around the buffer. */
    for (unsigned k = 0; k < nlens; k++) {
        if (me == 0) {
            wait_ready();   /* node 1's buffer is guarded */
            split_output(port, src + 3, lens[k], k);
        } else {
            split_guard(lens[k]);
            send_ready(other);
            split_input(port, lens[k], k);
            CHECK(split_guard_kept(lens[k]), "message %u of %u bytes: "
                  "bytes around it written", k, lens[k]);
            expect += pulled_of(lens[k]);
        }
    }

    /* Round trips, each message the next one of its direction. */
    for (unsigned r = 0; r < rounds; r++) {
        uint32_t len = SPLIT_MIN + (r * 40503u) % (1u << 20);
        unsigned seq = nlens + r;

        if (me == 0) {
            split_output(port, src + 3, len, seq);
            split_input(port, len, seq);
        } else {
            split_input(port, len, seq);
            split_output(port, src + 3, len, seq);
        }
        expect += pulled_of(len);
    }
    pulled = (uint64_t)nc_reg(TEMPEST_NC_XFER_PULL_HI) << 32 |
             nc_reg(TEMPEST_NC_XFER_PULL_LO);
    if (!nc_reg(TEMPEST_NC_XFER_PUT_LO) && !nc_reg(TEMPEST_NC_XFER_PUT_HI)) {
        expect = 0;         /* not on shared memory: no split */
    }
    CHECK(pulled == expect, "pulled %llu bytes, not %llu",
          (unsigned long long)pulled, (unsigned long long)expect);
    CHECK(nc_reg(TEMPEST_NC_CHAN_DROPPED) == 0, "%u frames dropped",
          nc_reg(TEMPEST_NC_CHAN_DROPPED));
    CHECK(nc_reg(TEMPEST_NC_DROPPED) == 0, "%u fabric frames dropped",
          nc_reg(TEMPEST_NC_DROPPED));
    if (failures) {
        printf("chan_hw: %u failures\n", failures);
        return 1;
    }
    printf("chan_hw split ok: pulled %llu\n", (unsigned long long)pulled);
    return 0;
}

/*
 * "chan_hw fail": node 0 outputs 6 bytes that node 1 inputs (node 0's
 * OUTPUT event is in its recorder, with where it went in the CQ), then
 * pre-sends 5 bytes, node 1 sees them held (BUFFERFULL), then both exit
 * with status 3: each node's log must show its channel controller's
 * recorder and port table (docs/chan.rst, "When a node fails").
 */
static int fail_main(uint32_t port, uint8_t *src)
{
    struct nc_event ev;
    uint64_t res = 0;

    if (rt_node_id() == 0) {
        memcpy(src, "first", 6);
        CHECK(chan(TEMPEST_CHAN_OP_OUTPUT, port, pa(src), 6, &res) ==
              TEMPEST_CMD_SUCCESS && res == 0 && wait_chan(&ev) &&
              ev.a == (port | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32),
              "output");
    } else {
        CHECK(chan(TEMPEST_CHAN_OP_INPUT, port, pa(src), 256, &res) ==
              TEMPEST_CMD_SUCCESS &&
              ((res & TEMPEST_CHAN_PRESENT) || wait_chan(&ev)), "input");
    }
    if (rt_node_id() == 0) {
        memcpy(src, "fail", 5);
        CHECK(chan(TEMPEST_CHAN_OP_OUTPUTDATA, port, pa(src), 5, NULL) ==
              TEMPEST_CMD_SUCCESS, "outputdata");
    } else {
        do {
            CHECK(chan(TEMPEST_CHAN_OP_STATE, port, 0, 0, &res) ==
                  TEMPEST_CMD_SUCCESS, "state");
        } while ((res & 0xFF) == TEMPEST_CHAN_ST_IDLE && !failures);
        CHECK((res & 0xFF) == TEMPEST_CHAN_ST_BUFFERFULL, "not BUFFERFULL");
    }
    send_ready(!rt_node_id());
    wait_ready();
    printf("chan_hw fail: exiting with status 3, %u failures\n", failures);
    return failures ? 1 : 3;
}

int main(int argc, char **argv)
{
    static const uint32_t lens[] = {
        1, 2, 3, 100, 4096, 4099, 65535, 65536, 65537, 1u << 20,
        (1u << 20) + 7, 16u << 20, MAXLEN,
    };
    unsigned me = rt_node_id(), other = !me;
    uint32_t port = TEMPEST_CHAN_ID(me, 0);
    uint8_t *init = malloc(256), *buf = malloc(MAXLEN);
    uint8_t *src = malloc(MAXLEN);
    struct nc_event ev;
    uint64_t res = 0;

    if (nc_init() || rt_num_nodes() != 2 || !init || !buf || !src) {
        printf("chan_hw: needs nc_init, 2 nodes and %u MiB\n", 2 * 64);
        return 1;
    }
    CHECK(nc_reg(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_CHAN,
          "no channel controller");
    CHECK(chan(TEMPEST_CHAN_OP_ALLOC, pa(init), 256, 0, &res) ==
          TEMPEST_CMD_SUCCESS && res == port, "alloc: 0x%x", (unsigned)res);
    CHECK(chan(TEMPEST_CHAN_OP_CONNECT, port, TEMPEST_CHAN_ID(other, 0), 0,
               NULL) == TEMPEST_CMD_SUCCESS, "connect");
    send_ready(other);
    wait_ready();
    if (argc > 1 && strcmp(argv[1], "split") == 0) {
        return split_main(port, buf, src, argc > 2 ? atoi(argv[2]) : 20);
    }
    if (argc > 1 && strcmp(argv[1], "fail") == 0) {
        return fail_main(port, src);
    }

    /* The first input, into the initial buffer; outputdata keeps IDLE. */
    if (me == 0) {
        memcpy(src, "tempest", 8);
        CHECK(chan(TEMPEST_CHAN_OP_OUTPUTDATA, port, pa(src), 8, NULL) ==
              TEMPEST_CMD_SUCCESS, "outputdata");
        CHECK(chan(TEMPEST_CHAN_OP_STATE, port, 0, 0, &res) ==
              TEMPEST_CMD_SUCCESS && (res & 0xFFFF) ==
              (TEMPEST_CHAN_ST_IDLE | TEMPEST_CHAN_ST_PRESENT),
              "state after outputdata 0x%llx", (unsigned long long)res);
        send_ready(other);
        wait_ready();       /* node 1 has input it */
        CHECK(chan(TEMPEST_CHAN_OP_OUTPUT, port, 0, 0, &res) ==
              TEMPEST_CMD_SUCCESS && res == 1, "output not done at once");
    } else {
        wait_ready();       /* pre-sent by now, or on its way */
        do {
            CHECK(chan(TEMPEST_CHAN_OP_STATE, port, 0, 0, &res) ==
                  TEMPEST_CMD_SUCCESS, "state");
        } while ((res & 0xFF) == TEMPEST_CHAN_ST_IDLE);
        CHECK((res & 0xFF) == TEMPEST_CHAN_ST_BUFFERFULL, "not BUFFERFULL");
        CHECK(chan(TEMPEST_CHAN_OP_INPUT, port, pa(buf), MAXLEN, &res) ==
              TEMPEST_CMD_SUCCESS && res == (TEMPEST_CHAN_PRESENT | 8),
              "first input 0x%llx", (unsigned long long)res);
        CHECK(memcmp(init, "tempest", 8) == 0, "initial buffer: %.8s",
              (const char *)init);
        send_ready(other);
    }

    /* Outputs of every size to a waiting input. */
    for (unsigned k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        uint32_t len = lens[k];

        if (me == 0) {
            for (size_t i = 0; i < len; i++) {
                src[i] = pattern(i, k);
            }
            wait_ready();   /* node 1 inputs */
            CHECK(chan(TEMPEST_CHAN_OP_OUTPUT, port, pa(src), len, &res) ==
                  TEMPEST_CMD_SUCCESS, "output of %u", len);
            if (res != 1) {
                CHECK(wait_chan(&ev) && ev.a == (port |
                      (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32) && ev.b == 0,
                      "OUTPUT event of %u: 0x%llx %llu", len,
                      (unsigned long long)ev.a, (unsigned long long)ev.b);
            }
        } else {
            size_t bad = len;

            CHECK(chan(TEMPEST_CHAN_OP_INPUT, port, pa(buf), MAXLEN, &res) ==
                  TEMPEST_CMD_SUCCESS && res == 0, "input %u", len);
            send_ready(other);
            CHECK(wait_chan(&ev) && ev.a == (port |
                  (uint64_t)TEMPEST_CHAN_EV_INPUT << 32) && ev.b == len &&
                  ev.c == pa(buf), "INPUT event of %u: 0x%llx %llu", len,
                  (unsigned long long)ev.a, (unsigned long long)ev.b);
            for (size_t i = 0; i < len; i++) {
                if (buf[i] != pattern(i, k)) {
                    bad = i;
                    break;
                }
            }
            CHECK(bad == len, "%u bytes: byte %zu wrong", len, bad);
        }
    }
    if (me == 0) {
        uint64_t t0;

        wait_ready();       /* node 1 inputs, then sleeps */
        t0 = rt_time_ns();
        while (rt_time_ns() - t0 < 300000000ULL) {
        }
        CHECK(chan(TEMPEST_CHAN_OP_OUTPUT, port, pa(src), 4, &res) ==
              TEMPEST_CMD_SUCCESS, "output to the sleeper");
        if (res != 1) {
            CHECK(wait_chan(&ev), "OUTPUT event to the sleeper");
        }
    } else {
        blocked_input(port, buf);
    }
    CHECK(nc_reg(TEMPEST_NC_CHAN_DROPPED) == 0, "%u frames dropped",
          nc_reg(TEMPEST_NC_CHAN_DROPPED));
    if (failures) {
        printf("chan_hw: %u failures\n", failures);
        return 1;
    }
    printf("chan_hw ok\n");
    return 0;
}
