/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of the node controller's channel controller (1.8, docs/chan.rst,
 * "The channel controller in the node controller"): the instructions of
 * TEMPEST_CMD_CHAN and every reason they fail for; the paper's initial
 * buffer and state-preserving pre-send on a channel within one node;
 * data between two nodes on the real fabric with its events; and frames
 * a hostile peer sends, each dropped and counted.
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "tempest-qtest.h"
#include "tempest-peer.h"

#define CLUSTER     0xc4a2ULL
#define CQ_BASE     RAM(0x300000)
#define BUF_A       RAM(0x100000)
#define BUF_B       RAM(0x180000)
#define BUF_C       RAM(0x1c0000)
#define SRC         RAM(0x400000)

static uint32_t chan(QTestState *s, uint64_t op, uint64_t port, uint64_t a2,
                     uint64_t a3)
{
    return tq_command(s, TEMPEST_CMD_CHAN, op, port, a2, a3, 0, 0);
}

static uint32_t reason(QTestState *s)
{
    return qtest_readl(s, NC(TEMPEST_NC_CMD_REASON));
}

static uint64_t result(QTestState *s)
{
    return qtest_readq(s, NC(TEMPEST_NC_CMD_RESULT));
}

/* ALLOC with an initial buffer: the new port's id. */
/* Node @id of a 2-node cluster whose sockets are in @dir. */
static QTestState *start_node(const char *dir, int id)
{
    return qtest_initf("-M tempest,node-id=%d,num-nodes=2,fabric=unix:%s,"
                       "cluster-id=0x%llx -m 64M", id, dir,
                       (unsigned long long)CLUSTER);
}

static uint32_t alloc_port(QTestState *s, uint64_t buf, uint64_t size)
{
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_ALLOC, buf, size, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    return result(s);
}

/* The state of port p (STATE's RESULT). */
static uint64_t port_state(QTestState *s, uint32_t p)
{
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_STATE, p, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    return result(s);
}

static void expect_fail(QTestState *s, uint32_t st, uint32_t why)
{
    g_assert_cmpuint(st, ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(reason(s), ==, why);
}

/*
 * Waits (the main loop running) until the bits @mask of port @p's STATE
 * are @want.
 */
static void wait_bits(QTestState *s, uint32_t p, uint64_t mask,
                      uint64_t want)
{
    for (gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
         (port_state(s, p) & mask) != want &&
         g_get_monotonic_time() < end;) {
        g_usleep(500);
    }
    g_assert_cmphex(port_state(s, p) & mask, ==, want);
}

/* Waits (the main loop running) until port @p is in @state. */
static void wait_state(QTestState *s, uint32_t p, unsigned state)
{
    wait_bits(s, p, 0xff, state);
}

/* The test data: @len bytes from @seed. */
static void pattern(uint8_t *b, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++) {
        b[i] = seed + i * 7 + (i >> 8);
    }
}

static void fill(QTestState *s, uint64_t addr, size_t len, uint8_t seed)
{
    g_autofree uint8_t *b = g_malloc(len);

    pattern(b, len, seed);
    qtest_memwrite(s, addr, b, len);
}

static void check(QTestState *s, uint64_t addr, size_t len, uint8_t seed)
{
    g_autofree uint8_t *b = g_malloc(len);

    qtest_memread(s, addr, b, len);
    for (size_t i = 0; i < len; i++) {
        g_assert_cmpuint(b[i], ==, (uint8_t)(seed + i * 7 + (i >> 8)));
    }
}

/* The next control event at CQ slot *idx: its type; A, B, C in ev. */
static uint32_t next_event(QTestState *s, unsigned *idx, uint64_t ev[3])
{
    uint64_t slot = CQ_BASE + (*idx % 64) * TEMPEST_EV_SIZE;
    uint32_t ctl = tq_wait_mem32(s, slot, TEMPEST_EV_VALID,
                                 TEMPEST_EV_VALID);

    g_assert_cmphex(ctl & TEMPEST_EV_VALID, ==, TEMPEST_EV_VALID);
    for (int k = 0; k < 3; k++) {
        ev[k] = qtest_readq(s, slot + TEMPEST_EV_A + 8 * k);
    }
    qtest_writel(s, slot, 0);
    (*idx)++;
    return ctl & TEMPEST_EV_TYPE_MASK;
}

static void setup_cq(QTestState *s)
{
    g_assert_cmpuint(tq_command3(s, TEMPEST_CMD_RING_SETUP, TEMPEST_RING_CQ,
                                 CQ_BASE, 64), ==, TEMPEST_CMD_SUCCESS);
}

/* Both nodes of a 2-node cluster, formed, each with its CQ set up. */
static void start_pair(const char *dir, QTestState *n[2])
{
    for (int i = 0; i < 2; i++) {
        n[i] = start_node(dir, i);
    }
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(tq_wait_reg(n[i], TEMPEST_NC_FABRIC_STATE, ~0,
                                     TEMPEST_FABRIC_READY), ==,
                         TEMPEST_FABRIC_READY);
        setup_cq(n[i]);
    }
}

/*
 * Data of @len bytes waits at the sender for port @p: BUFFER @buf/@size
 * asks for it (GO), it is held (BUFFERFULL), INPUT (BUF_C the next
 * buffer) finds it there.
 */
static void buffer_then_input(QTestState *s, uint32_t p, uint64_t buf,
                              uint64_t size, uint64_t len)
{
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_BUFFER, p, buf, size), ==,
                     TEMPEST_CMD_SUCCESS);
    wait_state(s, p, TEMPEST_CHAN_ST_BUFFERFULL);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, p, BUF_C, 16), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | len);
}

/* OUTPUT_INPUT (1.16): the output @src/@len, then the input (@next). */
static uint32_t output_input(QTestState *s, uint32_t p, uint64_t src,
                             uint64_t len, uint64_t next, uint64_t size)
{
    return tq_command(s, TEMPEST_CMD_CHAN, TEMPEST_CHAN_OP_OUTPUT_INPUT, p,
                      src, len, next, size);
}

/*
 * Spec: TEMPEST_CMD_CHAN's failure reasons (tempest-hw.h): an unknown
 * instruction, a port that is not live here, buffers outside RAM, a bad
 * length, a state that forbids the instruction, a full port table.
 * Nothing changes on a failure.
 */
static void test_errors(void)
{
    QTestState *s = qtest_init("-M tempest -m 64M");
    uint32_t a, b, me = TEMPEST_CHAN_ID(0, 0);

    g_assert_true(qtest_readl(s, NC(TEMPEST_NC_FEATURES)) &
                  TEMPEST_NC_FEAT_CHAN);
    expect_fail(s, chan(s, 0, 0, 0, 0), TEMPEST_CMD_E_BAD_CHAN_OP);
    expect_fail(s, chan(s, 99, 0, 0, 0), TEMPEST_CMD_E_BAD_CHAN_OP);
    /* No port is live yet; ids of other nodes or past the table. */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_STATE, me, 0, 0),
                TEMPEST_CMD_E_BAD_PORT);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT, TEMPEST_CHAN_ID(1, 0), 0,
                        0), TEMPEST_CMD_E_BAD_PORT);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_FREE, TEMPEST_CHAN_PORTS, 0, 0),
                TEMPEST_CMD_E_BAD_PORT);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUT, 1ULL << 40, 0, 0),
                TEMPEST_CMD_E_BAD_PORT);
    /* An initial buffer outside RAM, or wrapping. */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_ALLOC, 0x1000, 16, 0),
                TEMPEST_CMD_E_BAD_ADDR);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_ALLOC, RAM(64 << 20) - 8, 16, 0),
                TEMPEST_CMD_E_BAD_ADDR);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_ALLOC, RAM(0), UINT64_MAX, 0),
                TEMPEST_CMD_E_BAD_ADDR);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_USED)), ==, 0);

    a = alloc_port(s, BUF_A, 4096);
    b = alloc_port(s, 0, 0);
    g_assert_cmphex(port_state(s, a), ==,
                    TEMPEST_CHAN_ST_IDLE | (uint64_t)TEMPEST_CHAN_NONE << 32);
    /* Output and input need a companion. */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUTDATA, a, SRC, 4),
                TEMPEST_CMD_E_PORT_STATE);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT, a, BUF_B, 16),
                TEMPEST_CMD_E_PORT_STATE);
    /* Connect: not to itself, not to a port not live, node in range. */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_CONNECT, a, a, 0),
                TEMPEST_CMD_E_BAD_PORT);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_CONNECT, a, TEMPEST_CHAN_ID(0, 77),
                        0), TEMPEST_CMD_E_BAD_PORT);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_CONNECT, a, TEMPEST_CHAN_ID(1, 0),
                        0), TEMPEST_CMD_E_BAD_PORT);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_CONNECT, a, b, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(port_state(s, b) >> 32, ==, a);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_CONNECT, a, b, 0),
                TEMPEST_CMD_E_PORT_STATE);
    /* Data: too long, outside RAM. */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUTDATA, a, SRC,
                        TEMPEST_CHAN_MAX_DATA + 1), TEMPEST_CMD_E_BAD_LEN);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUT, a, 0x100, 4),
                TEMPEST_CMD_E_BAD_ADDR);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT, a, 0x100, 4),
                TEMPEST_CMD_E_BAD_ADDR);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_BUFFER, a, 0x100, 4),
                TEMPEST_CMD_E_BAD_ADDR);
    g_assert_cmphex(port_state(s, a) & 0xffff, ==, TEMPEST_CHAN_ST_IDLE);
    /*
     * b has no buffer: the pre-send waits at a (b's STATE says WAITING)
     * for a buffer it fits; an INPUT with a shorter one fails TOO_BIG
     * with the length and changes nothing; b holds data: no output.
     */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUTDATA, a, SRC, 4), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(port_state(s, b) & 0xffff, ==,
                    TEMPEST_CHAN_ST_IDLE | TEMPEST_CHAN_ST_WAITING);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT, b, BUF_C, 16),
                TEMPEST_CMD_E_TOO_BIG);
    g_assert_cmpuint(result(s), ==, 4);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUTDATA, b, SRC, 4),
                TEMPEST_CMD_E_PORT_STATE);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT_PORT, b, BUF_C, 16),
                TEMPEST_CMD_E_CHAN_TYPE);
    g_assert_cmphex(port_state(s, b) & 0xffff, ==,
                    TEMPEST_CHAN_ST_IDLE | TEMPEST_CHAN_ST_WAITING);
    /* A buffer it fits: GO, the transfer engine brings it; input. */
    buffer_then_input(s, b, BUF_B, 16, 4);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, a, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 1);
    g_assert_cmphex(port_state(s, b) & 0xffff, ==, TEMPEST_CHAN_ST_IDLE);
    /* One pre-send at a time; not freed while it is out. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_BUFFER, b, BUF_B, 16), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUTDATA, b, SRC, 4), ==,
                     TEMPEST_CMD_SUCCESS);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUTDATA, b, SRC, 4),
                TEMPEST_CMD_E_PORT_STATE);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_FREE, b, 0, 0),
                TEMPEST_CMD_E_PORT_STATE);
    /* a holds b's data: a's buffer may not change under it. */
    g_assert_cmphex(port_state(s, a) & 0xffff, ==,
                    TEMPEST_CHAN_ST_BUFFERFULL);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_BUFFER, a, BUF_C, 16),
                TEMPEST_CMD_E_PORT_STATE);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUT, a, SRC, 4),
                TEMPEST_CMD_E_PORT_STATE);

    /* The table holds TEMPEST_CHAN_PORTS ports, then NO_PORTS. */
    for (unsigned i = 2; i < TEMPEST_CHAN_PORTS; i++) {
        alloc_port(s, 0, 0);
    }
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_USED)), ==,
                     TEMPEST_CHAN_PORTS);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_ALLOC, 0, 0, 0),
                TEMPEST_CMD_E_NO_PORTS);
    /* No guest error: a failed command is no bad access. */
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_COUNT)), ==, 0);
    qtest_quit(s);
}

/*
 * One node: @from outputs @len bytes of @seed to @to, whose input waits:
 * done at once; @to's INPUT event says @where, where the data is.
 */
static void output_to_input(QTestState *s, unsigned *cq, uint32_t from,
                            uint32_t to, size_t len, uint8_t seed,
                            uint64_t where)
{
    uint64_t ev[3];

    fill(s, SRC, len, seed);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, from, SRC, len), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 1);
    g_assert_cmpuint(next_event(s, cq, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, to | (uint64_t)TEMPEST_CHAN_EV_INPUT << 32);
    g_assert_cmpuint(ev[1], ==, len);
    g_assert_cmphex(ev[2], ==, where);
    check(s, where, len, seed);
}

/*
 * Spec: the paper's initial buffer (2.1: data arriving before any input
 * lands in the buffer the port was made with), outputdata changing no
 * state (3.1), input naming the NEXT buffer, output completing at once
 * when the companion has input already, the INPUT event for a waiting
 * input, data too long for a waiting input waiting at the sender (the
 * TOO_BIG event), FREED closing the companion.  A channel within one
 * node.
 */
static void test_local(void)
{
    QTestState *s = qtest_init("-M tempest -m 64M");
    unsigned cq = 0;
    uint64_t ev[3];
    uint32_t a, b;

    setup_cq(s);
    a = alloc_port(s, BUF_A, 256);
    b = alloc_port(s, BUF_B, 256);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_CONNECT, a, b, 0), ==,
                     TEMPEST_CMD_SUCCESS);

    /* outputdata: b's initial buffer has it; a stays IDLE. */
    fill(s, SRC, 200, 1);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUTDATA, a, SRC, 200), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(port_state(s, a) & 0xffff, ==,
                    TEMPEST_CHAN_ST_IDLE | TEMPEST_CHAN_ST_PRESENT);
    g_assert_cmphex(port_state(s, b) & 0xffff, ==,
                    TEMPEST_CHAN_ST_BUFFERFULL);
    check(s, BUF_B, 200, 1);
    /* input: there already; the next data goes to BUF_C. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, b, BUF_C, 256), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | 200);
    g_assert_cmphex(port_state(s, b) & 0xffff, ==, TEMPEST_CHAN_ST_IDLE);
    /* output: the companion has input it: done at the COMMIT. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, a, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 1);
    g_assert_cmphex(port_state(s, a) & 0xffff, ==, TEMPEST_CHAN_ST_IDLE);

    /* Input first (INPUTTING), then output: the INPUT event. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, b, BUF_B, 256), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 0);
    g_assert_cmphex(port_state(s, b) & 0xffff, ==,
                    TEMPEST_CHAN_ST_INPUTTING);
    output_to_input(s, &cq, a, b, 37, 9, BUF_C);

    /* Output first: OUTPUTTING until b inputs; then the OUTPUT event. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, b, SRC, 5), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 0);
    g_assert_cmphex(port_state(s, b) & 0xff, ==, TEMPEST_CHAN_ST_OUTPUTTING);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, a, BUF_C, 16), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | 5);
    g_assert_cmpuint(next_event(s, &cq, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, b | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    g_assert_cmpuint(ev[1], ==, 0);

    /*
     * INPUT_HERE: this input's data goes to the buffer it names, the
     * port's (BUF_C) stays for what comes before the next input; data
     * there already (PRESENT) is copied to the buffer named before the
     * ACK lets the next DATA land in BUF_C (too short for it: TOO_BIG,
     * it stays held); a buffer too short for the data waiting: TOO_BIG,
     * nothing changes.
     */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT_HERE, a, BUF_A + 4096,
                          64), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 0);
    output_to_input(s, &cq, b, a, 30, 21, BUF_A + 4096);
    fill(s, SRC, 12, 23);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, b, SRC, 12), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 0);
    check(s, BUF_C, 12, 23);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT_HERE, a, BUF_A + 4096, 8),
                TEMPEST_CMD_E_TOO_BIG);
    g_assert_cmpuint(result(s), ==, 12);
    g_assert_cmphex(port_state(s, a) & 0xff, ==,
                    TEMPEST_CHAN_ST_BUFFERFULL);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT_HERE, a, BUF_A + 4096,
                          64), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | 12);
    check(s, BUF_A + 4096, 12, 23);
    g_assert_cmpuint(next_event(s, &cq, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, b | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    /* The next DATA lands in BUF_C, not over the data just input. */
    fill(s, SRC, 12, 24);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, b, SRC, 12), ==,
                     TEMPEST_CMD_SUCCESS);
    check(s, BUF_C, 12, 24);
    check(s, BUF_A + 4096, 12, 23);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, a, BUF_C, 16), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | 12);
    g_assert_cmpuint(next_event(s, &cq, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, b | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    fill(s, SRC, 20, 25);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, b, SRC, 20), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(port_state(s, a) & 0xffff, ==,
                    TEMPEST_CHAN_ST_IDLE | TEMPEST_CHAN_ST_WAITING);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT_HERE, a, BUF_A + 4096, 8),
                TEMPEST_CMD_E_TOO_BIG);
    g_assert_cmpuint(result(s), ==, 20);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT_HERE, a, BUF_A + 4096,
                          20), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(next_event(s, &cq, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, a | (uint64_t)TEMPEST_CHAN_EV_INPUT << 32);
    g_assert_cmphex(ev[2], ==, BUF_A + 4096);
    check(s, BUF_A + 4096, 20, 25);
    g_assert_cmpuint(next_event(s, &cq, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, b | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    g_assert_cmphex(port_state(s, a) & 0xffff, ==, TEMPEST_CHAN_ST_IDLE);

    /*
     * Longer than a's buffer (16 bytes) with an input under way: the
     * input ends (TOO_BIG with the length; a port input TYPE), the data
     * waits at b (a WAITING, b OUTPUTTING) until a names a buffer it
     * fits.
     */
    for (int port_input = 0; port_input < 2; port_input++) {
        g_assert_cmpuint(chan(s, port_input ? TEMPEST_CHAN_OP_INPUT_PORT :
                              TEMPEST_CHAN_OP_INPUT, a, BUF_A, 16), ==,
                         TEMPEST_CMD_SUCCESS);
        fill(s, SRC, 40, 11 + port_input);
        g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, b, SRC, 40), ==,
                         TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(result(s), ==, 0);
        g_assert_cmpuint(next_event(s, &cq, ev), ==, TEMPEST_EV_CHAN);
        if (port_input) {
            g_assert_cmphex(ev[0], ==,
                            a | (uint64_t)TEMPEST_CHAN_EV_TYPE << 32);
            g_assert_cmpuint(ev[1], ==, TEMPEST_CMD_E_CHAN_TYPE);
        } else {
            g_assert_cmphex(ev[0], ==,
                            a | (uint64_t)TEMPEST_CHAN_EV_TOO_BIG << 32);
            g_assert_cmpuint(ev[1], ==, TEMPEST_CMD_E_TOO_BIG);
            g_assert_cmpuint(ev[2], ==, 40);
        }
        g_assert_cmphex(port_state(s, a) & 0xffff, ==,
                        TEMPEST_CHAN_ST_IDLE | TEMPEST_CHAN_ST_WAITING);
        g_assert_cmphex(port_state(s, b) & 0xff, ==,
                        TEMPEST_CHAN_ST_OUTPUTTING);
        expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT, a, BUF_A, 16),
                    TEMPEST_CMD_E_TOO_BIG);
        g_assert_cmpuint(result(s), ==, 40);
        buffer_then_input(s, a, BUF_A, 64, 40);
        check(s, BUF_A, 40, 11 + port_input);
        g_assert_cmpuint(next_event(s, &cq, ev), ==, TEMPEST_EV_CHAN);
        g_assert_cmphex(ev[0], ==,
                        b | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
        g_assert_cmpuint(ev[1], ==, 0);
    }

    /* Free b: a waiting input of a ends CLOSED; a is closed for good. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, a, BUF_A, 16), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_FREE, b, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(next_event(s, &cq, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, a | (uint64_t)TEMPEST_CHAN_EV_CLOSED << 32);
    g_assert_cmpuint(ev[1], ==, TEMPEST_CMD_E_CLOSED);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUT, a, SRC, 1),
                TEMPEST_CMD_E_CLOSED);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT, a, BUF_A, 1),
                TEMPEST_CMD_E_CLOSED);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_STATE, b, 0, 0),
                TEMPEST_CMD_E_BAD_PORT);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_FREE, a, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_USED)), ==, 0);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_DROPPED)), ==, 0);
    qtest_quit(s);
}

/*
 * Spec: DATA and ACK between two nodes on the fabric: a waiting input
 * gets the INPUT event with the largest output carried in the message
 * (TEMPEST_CHAN_INLINE) stored straight into its buffer, the output the
 * OUTPUT event.
 */
static void test_pair(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *n[2];
    unsigned cq[2] = { 0, 0 };
    uint32_t p[2];
    uint64_t ev[3];

    start_pair(dir, n);
    for (int i = 0; i < 2; i++) {
        p[i] = alloc_port(n[i], BUF_A, TEMPEST_CHAN_INLINE);
        g_assert_cmphex(p[i], ==, TEMPEST_CHAN_ID(i, 0));
    }
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(chan(n[i], TEMPEST_CHAN_OP_CONNECT, p[i], p[!i],
                              0), ==, TEMPEST_CMD_SUCCESS);
    }
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_INPUT, p[1], BUF_B, 64), ==,
                     TEMPEST_CMD_SUCCESS);
    fill(n[0], SRC, TEMPEST_CHAN_INLINE, 3);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_OUTPUT, p[0], SRC,
                          TEMPEST_CHAN_INLINE), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(n[0]), ==, 0);
    g_assert_cmpuint(next_event(n[1], &cq[1], ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==,
                    p[1] | (uint64_t)TEMPEST_CHAN_EV_INPUT << 32);
    g_assert_cmpuint(ev[1], ==, TEMPEST_CHAN_INLINE);
    g_assert_cmphex(ev[2], ==, BUF_A);
    check(n[1], BUF_A, TEMPEST_CHAN_INLINE, 3);
    g_assert_cmpuint(next_event(n[0], &cq[0], ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==,
                    p[0] | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    g_assert_cmpuint(ev[1], ==, 0);
    /* The other way, pre-sent into node 0's initial buffer. */
    fill(n[1], SRC, 64, 5);
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_OUTPUTDATA, p[1], SRC, 64),
                     ==, TEMPEST_CMD_SUCCESS);
    wait_state(n[0], p[0], TEMPEST_CHAN_ST_BUFFERFULL);
    check(n[0], BUF_A, 64, 5);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(qtest_readl(n[i], NC(TEMPEST_NC_CHAN_DROPPED)), ==,
                         0);
        qtest_quit(n[i]);
    }
    rmdir(dir);
}

/*
 * @len bytes wait at node 1's port p[1] for node 0's p[0]: an INPUT with
 * 100 bytes fails TOO_BIG with the length; a BUFFER it fits (@buf) asks
 * for it; the INPUT (naming @buf, @next bytes, as the next) takes it, at
 * once or by the event; it is the data of @seed; node 1's output ends.
 */
static void take_waiting(QTestState *n[2], const uint32_t p[2],
                         unsigned cq[2], uint64_t buf, size_t len,
                         uint64_t next, uint8_t seed)
{
    uint64_t ev[3];

    expect_fail(n[0], chan(n[0], TEMPEST_CHAN_OP_INPUT, p[0], buf, 100),
                TEMPEST_CMD_E_TOO_BIG);
    g_assert_cmpuint(result(n[0]), ==, len);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_BUFFER, p[0], buf, len), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_INPUT, p[0], buf, next),
                     ==, TEMPEST_CMD_SUCCESS);
    if (result(n[0]) == 0) {
        g_assert_cmpuint(next_event(n[0], &cq[0], ev), ==, TEMPEST_EV_CHAN);
        g_assert_cmphex(ev[0], ==,
                        p[0] | (uint64_t)TEMPEST_CHAN_EV_INPUT << 32);
        g_assert_cmpuint(ev[1], ==, len);
    } else {
        g_assert_cmphex(result(n[0]), ==, TEMPEST_CHAN_PRESENT | len);
    }
    check(n[0], buf, len, seed);
    g_assert_cmpuint(next_event(n[1], &cq[1], ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==,
                    p[1] | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    g_assert_cmpuint(ev[1], ==, 0);
}

/*
 * Spec: outputs longer than TEMPEST_CHAN_INLINE go by the transfer
 * engine straight into the input buffer (BIG, GO, the transfer, ACK):
 * between two nodes, to a waiting input and pre-sent into the initial
 * buffer; waiting at the sender when longer than the buffer (an input
 * under way then ends TEMPEST_CHAN_EV_TOO_BIG); and on one node,
 * pre-sent and to a waiting input (READY, docs/chan.rst "A long DATA").
 * No XFER event reaches the guest: the channel's own events only.
 */
static void test_big(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    const size_t len = 5 * MiB + 3;
    const uint64_t buf = RAM(8 * MiB), src = RAM(24 * MiB) + 1;
    QTestState *n[2];
    unsigned cq[2] = { 0, 0 };
    uint32_t p[2], a, b;
    uint64_t ev[3];

    start_pair(dir, n);
    for (int i = 0; i < 2; i++) {
        p[i] = alloc_port(n[i], buf, len);
    }
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(chan(n[i], TEMPEST_CHAN_OP_CONNECT, p[i], p[!i],
                              0), ==, TEMPEST_CMD_SUCCESS);
    }
    /* To a waiting input. */
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_INPUT, p[1], buf, len), ==,
                     TEMPEST_CMD_SUCCESS);
    fill(n[0], src, len, 11);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_OUTPUT, p[0], src, len), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(next_event(n[1], &cq[1], ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==,
                    p[1] | (uint64_t)TEMPEST_CHAN_EV_INPUT << 32);
    g_assert_cmpuint(ev[1], ==, len);
    g_assert_cmphex(ev[2], ==, buf);
    check(n[1], buf, len, 11);
    g_assert_cmpuint(next_event(n[0], &cq[0], ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==,
                    p[0] | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    g_assert_cmpuint(ev[1], ==, 0);
    /* Pre-sent the other way into node 0's initial buffer. */
    fill(n[1], src, len, 13);
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_OUTPUT, p[1], src, len), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(n[1]), ==, 0);
    wait_state(n[0], p[0], TEMPEST_CHAN_ST_BUFFERFULL);
    check(n[0], buf, len, 13);
    /* Synchronous: the output completes when node 0 inputs. */
    g_assert_cmphex(port_state(n[1], p[1]) & 0xff, ==,
                    TEMPEST_CHAN_ST_OUTPUTTING);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_INPUT, p[0], buf, 100), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(n[0]), ==, TEMPEST_CHAN_PRESENT | len);
    g_assert_cmpuint(next_event(n[1], &cq[1], ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==,
                    p[1] | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    g_assert_cmpuint(ev[1], ==, 0);
    /*
     * Longer than node 0's buffer now (100 bytes): it waits at node 1
     * until node 0 names a buffer it fits (an INPUT with the short one
     * fails TOO_BIG with the length), then comes by the transfer engine.
     */
    fill(n[1], src, len, 15);
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_OUTPUT, p[1], src, len), ==,
                     TEMPEST_CMD_SUCCESS);
    wait_bits(n[0], p[0], TEMPEST_CHAN_ST_WAITING, TEMPEST_CHAN_ST_WAITING);
    take_waiting(n, p, cq, buf, len, 100, 15);
    /*
     * An input under way with a shorter buffer (100 bytes): it ends
     * TOO_BIG with the length, the data waits at node 1 (WAITING), the
     * output goes on; an INPUT naming a buffer it fits asks for it.
     */
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_INPUT, p[0], buf, 100), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(n[0]), ==, 0);
    fill(n[1], src, len, 19);
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_OUTPUT, p[1], src, len), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(next_event(n[0], &cq[0], ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==,
                    p[0] | (uint64_t)TEMPEST_CHAN_EV_TOO_BIG << 32);
    g_assert_cmpuint(ev[1], ==, TEMPEST_CMD_E_TOO_BIG);
    g_assert_cmpuint(ev[2], ==, len);
    g_assert_cmphex(port_state(n[0], p[0]) & 0xffff, ==,
                    TEMPEST_CHAN_ST_IDLE | TEMPEST_CHAN_ST_WAITING);
    g_assert_cmphex(port_state(n[1], p[1]) & 0xff, ==,
                    TEMPEST_CHAN_ST_OUTPUTTING);
    take_waiting(n, p, cq, buf, len, len, 19);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(qtest_readl(n[i], NC(TEMPEST_NC_CHAN_DROPPED)), ==,
                         0);
    }

    /* On one node: the transfer engine copies within the node. */
    a = alloc_port(n[0], 0, 0);
    b = alloc_port(n[0], buf, len);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_CONNECT, a, b, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    fill(n[0], src, len, 17);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_OUTPUTDATA, a, src, len), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(port_state(n[0], a) & 0xffff, ==,
                    TEMPEST_CHAN_ST_IDLE | TEMPEST_CHAN_ST_PRESENT);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_INPUT, b, buf, 8), ==,
                     TEMPEST_CMD_SUCCESS);
    if (result(n[0]) == 0) {
        /* The transfer was still under way: the INPUT event. */
        g_assert_cmpuint(next_event(n[0], &cq[0], ev), ==, TEMPEST_EV_CHAN);
        g_assert_cmphex(ev[0], ==,
                        b | (uint64_t)TEMPEST_CHAN_EV_INPUT << 32);
        g_assert_cmpuint(ev[1], ==, len);
    } else {
        g_assert_cmphex(result(n[0]), ==, TEMPEST_CHAN_PRESENT | len);
    }
    check(n[0], buf, len, 17);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_OUTPUT, a, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(n[0]), ==, 1);
    /* On one node, to a waiting input (its buffer offered: READY). */
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_BUFFER, b, buf, len), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_INPUT, b, buf, 8), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(n[0]), ==, 0);
    fill(n[0], src, len, 19);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_OUTPUT, a, src, len), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(n[0]), ==, 0);
    g_assert_cmpuint(next_event(n[0], &cq[0], ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, b | (uint64_t)TEMPEST_CHAN_EV_INPUT << 32);
    g_assert_cmpuint(ev[1], ==, len);
    check(n[0], buf, len, 19);
    g_assert_cmpuint(next_event(n[0], &cq[0], ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, a | (uint64_t)TEMPEST_CHAN_EV_OUTPUT << 32);
    g_assert_cmpuint(ev[1], ==, 0);
    g_assert_cmpuint(qtest_readl(n[0], NC(TEMPEST_NC_CHAN_DROPPED)), ==, 0);
    for (int i = 0; i < 2; i++) {
        qtest_quit(n[i]);
    }
    rmdir(dir);
}

/*
 * Two channels on one node: a-b (buffers BUF_A, BUF_B) and c-d (c with
 * no buffer, d BUF_C): c-d carries b in the move tests.
 */
static void two_channels(QTestState *s, uint32_t *a, uint32_t *b,
                         uint32_t *c, uint32_t *d)
{
    *a = alloc_port(s, BUF_A, 256);
    *b = alloc_port(s, BUF_B, 256);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_CONNECT, *a, *b, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    *c = alloc_port(s, 0, 0);
    *d = alloc_port(s, BUF_C, 256);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_CONNECT, *c, *d, 0), ==,
                     TEMPEST_CMD_SUCCESS);
}

/* The CHAN event that must come next: its kind and port, B and C. */
static void expect_event(QTestState *s, unsigned *cq, uint32_t port,
                         uint32_t kind, uint64_t b, uint64_t *c)
{
    uint64_t ev[3];

    g_assert_cmpuint(next_event(s, cq, ev), ==, TEMPEST_EV_CHAN);
    g_assert_cmphex(ev[0], ==, port | (uint64_t)kind << 32);
    g_assert_cmpuint(ev[1], ==, b);
    if (c) {
        *c = ev[2];
    }
}

/*
 * One turn of an OUTPUT_INPUT ping-pong between the nodes n[0] and n[1]:
 * node @from outputs @len bytes of pattern @seed and names @next for its
 * input; the other node's input event comes with the bytes in its port's
 * buffer (BUF_A), and @from's port is INPUTTING, started by the device
 * with no OUTPUT event.
 */
static void output_input_turn(QTestState *n[2], unsigned cq[2],
                              const uint32_t p[2], int from, size_t len,
                              uint8_t seed, uint64_t next)
{
    int to = !from;
    uint64_t c;

    fill(n[from], SRC, len, seed);
    g_assert_cmpuint(output_input(n[from], p[from], SRC, len, next, 256),
                     ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(n[from]), ==, 0);
    expect_event(n[to], &cq[to], p[to], TEMPEST_CHAN_EV_INPUT, len, &c);
    g_assert_cmphex(c, ==, BUF_A);
    check(n[to], BUF_A, len, seed);
    wait_state(n[from], p[from], TEMPEST_CHAN_ST_INPUTTING);
}

/*
 * Spec: tempest-hw.h, OUTPUT_INPUT (1.16): refused as OUTPUT is (a
 * pre-send out) and for an input buffer outside RAM, nothing changed;
 * between two nodes the output, then the INPUT started by the device
 * when the ACK comes, with no OUTPUT event: the next event is the
 * INPUT's, with the companion's answer in the port's buffer and the
 * next buffer named; the companion's own OUTPUT_INPUT leaves its port
 * INPUTTING; a companion freed while the output waits: the OUTPUT event
 * with CLOSED and no input started; with the companion on the same node
 * having input already, RESULT 1 and no input started.
 */
static void test_output_input(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *n[2], *s;
    unsigned cq[2] = { 0, 0 }, lcq = 0;
    uint32_t p[2], a, b;
    uint64_t c;

    start_pair(dir, n);
    for (int i = 0; i < 2; i++) {
        p[i] = alloc_port(n[i], BUF_A, 256);
    }
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(chan(n[i], TEMPEST_CHAN_OP_CONNECT, p[i], p[!i],
                              0), ==, TEMPEST_CMD_SUCCESS);
    }
    /* Refusals: the input's buffer outside RAM; a pre-send out. */
    expect_fail(n[0], output_input(n[0], p[0], SRC, 8, RAM(64 * MiB), 16),
                TEMPEST_CMD_E_BAD_ADDR);
    g_assert_cmphex(port_state(n[0], p[0]) & 0xff, ==, TEMPEST_CHAN_ST_IDLE);

    /* Node 1 inputs; node 0's turn: 64 bytes out, then its input. */
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_INPUT, p[1], BUF_B, 256),
                     ==, TEMPEST_CMD_SUCCESS);
    output_input_turn(n, cq, p, 0, 64, 7, BUF_C);
    /* Node 1's turn: 32 bytes back, then its own input. */
    output_input_turn(n, cq, p, 1, 32, 9, BUF_A);
    g_assert_cmphex(port_state(n[0], p[0]) & 0xff, ==, TEMPEST_CHAN_ST_IDLE);

    /* A pre-send out: refused. */
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_OUTPUTDATA, p[0], SRC, 4),
                     ==, TEMPEST_CMD_SUCCESS);
    expect_event(n[1], &cq[1], p[1], TEMPEST_CHAN_EV_INPUT, 4, &c);
    g_assert_cmphex(c, ==, BUF_B);
    expect_fail(n[0], output_input(n[0], p[0], SRC, 8, BUF_C, 16),
                TEMPEST_CMD_E_PORT_STATE);
    wait_bits(n[0], p[0], TEMPEST_CHAN_ST_PRESENT, 0);      /* the ACK */
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_OUTPUT, p[0], 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(n[0]), ==, 1);

    /* The companion freed while the output waits: CLOSED, no input. */
    g_assert_cmpuint(output_input(n[0], p[0], SRC, 16, BUF_C, 256), ==,
                     TEMPEST_CMD_SUCCESS);
    wait_state(n[1], p[1], TEMPEST_CHAN_ST_BUFFERFULL);
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_FREE, p[1], 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    expect_event(n[0], &cq[0], p[0], TEMPEST_CHAN_EV_OUTPUT,
                 TEMPEST_CMD_E_CLOSED, &c);
    g_assert_cmpuint(c, ==, 0);
    g_assert_cmphex(port_state(n[0], p[0]) & 0xff, ==, TEMPEST_CHAN_ST_IDLE);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(qtest_readl(n[i], NC(TEMPEST_NC_CHAN_DROPPED)), ==,
                         0);
        qtest_quit(n[i]);
    }
    rmdir(dir);

    /* One node: the companion has input already, RESULT 1, no input. */
    s = qtest_init("-M tempest -m 64M");
    setup_cq(s);
    a = alloc_port(s, BUF_A, 256);
    b = alloc_port(s, BUF_B, 256);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_CONNECT, a, b, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, b, BUF_C, 256), ==,
                     TEMPEST_CMD_SUCCESS);
    fill(s, SRC, 8, 11);
    g_assert_cmpuint(output_input(s, a, SRC, 8, BUF_C, 256), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 1);
    expect_event(s, &lcq, b, TEMPEST_CHAN_EV_INPUT, 8, &c);
    g_assert_cmphex(c, ==, BUF_B);
    check(s, BUF_B, 8, 11);
    g_assert_cmphex(port_state(s, a) & 0xff, ==, TEMPEST_CHAN_ST_IDLE);
    qtest_quit(s);
}

/*
 * Spec: docs/chan.rst, ports over ports in the device: OUTPUT_PORT and
 * INPUT_PORT on one node (every frame loops back within the COMMIT):
 * the refusals (a port with a pre-send out, a port over itself or over
 * its own channel, data input where a port is held and the other way
 * round, freeing a port that holds a port); stage 1 (MIGRATING, the port
 * data held BUFFERFULL at the carrier's other end, data held at the
 * moved port dropped); stages 2 to 4 at the port input (the new port
 * with the initial buffer named, the pre-sent data sent again to it,
 * the old port EMPTY, the PORT event with the new port, then the
 * OUTPUT event of the carrier); the counters CHAN_MOVES and CHAN_RESENT.
 */
static void test_move_local(void)
{
    QTestState *s = qtest_init("-M tempest -m 64M");
    unsigned cq = 0;
    uint32_t a, b, c, d, n, m;
    uint64_t got = 0;

    setup_cq(s);
    two_channels(s, &a, &b, &c, &d);

    /* a pre-sends 100 bytes: b holds them. */
    fill(s, SRC, 100, 3);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUTDATA, a, SRC, 100), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(port_state(s, b) & 0xff, ==, TEMPEST_CHAN_ST_BUFFERFULL);

    /* Refusals: nothing changes. */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, c, a, 0),
                TEMPEST_CMD_E_PORT_STATE);          /* a's pre-send out */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, c, c, 0),
                TEMPEST_CMD_E_BAD_PORT);            /* over itself */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, c, d, 0),
                TEMPEST_CMD_E_PORT_STATE);          /* over its channel */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, c,
                        TEMPEST_CHAN_ID(0, 99), 0), TEMPEST_CMD_E_BAD_PORT);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT_PORT, b, 0, 0),
                TEMPEST_CMD_E_CHAN_TYPE);           /* b holds data */
    g_assert_cmphex(port_state(s, b) & 0xff, ==, TEMPEST_CHAN_ST_BUFFERFULL);

    /* Stage 1: b goes over c; its data is dropped; d holds the port. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, c, b, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(port_state(s, b) & 0xff, ==, TEMPEST_CHAN_ST_MIGRATING);
    g_assert_cmphex(port_state(s, c) & 0xff, ==, TEMPEST_CHAN_ST_OUTPUTTING);
    g_assert_cmphex(port_state(s, d) & 0xff, ==, TEMPEST_CHAN_ST_BUFFERFULL);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT, b, 0, 0),
                TEMPEST_CMD_E_PORT_STATE);          /* migrating */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT, d, 0, 0),
                TEMPEST_CMD_E_CHAN_TYPE);           /* d holds a port */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_FREE, d, 0, 0),
                TEMPEST_CMD_E_PORT_STATE);          /* it would be lost */
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT_PORT, d, RAM(0x3fffff0),
                        4096), TEMPEST_CMD_E_BAD_ADDR);

    /* Stages 2-4: the new port, the data sent again into its buffer. */
    fill(s, RAM(0x200000), 256, 0);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT_PORT, d, RAM(0x200000),
                          256), ==, TEMPEST_CMD_SUCCESS);
    expect_event(s, &cq, d, TEMPEST_CHAN_EV_PORT, 0, &got);
    n = got;
    expect_event(s, &cq, c, TEMPEST_CHAN_EV_OUTPUT, 0, NULL);
    g_assert_cmphex(TEMPEST_CHAN_ID_NODE(n), ==, 0);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_STATE, b, 0, 0),
                TEMPEST_CMD_E_BAD_PORT);            /* b is gone */
    g_assert_cmphex(port_state(s, n), ==,
                    TEMPEST_CHAN_ST_BUFFERFULL | (uint64_t)a << 32);
    g_assert_cmphex(port_state(s, a) >> 32, ==, n);
    g_assert_cmphex(port_state(s, c) & 0xff, ==, TEMPEST_CHAN_ST_IDLE);
    g_assert_cmphex(port_state(s, d) & 0xff, ==, TEMPEST_CHAN_ST_IDLE);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_MOVES)), ==, 1);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_RESENT)), ==, 1);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, n, BUF_B, 256), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | 100);
    check(s, RAM(0x200000), 100, 3);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, a, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 1);             /* n has input it */

    /* A port input waiting, then data comes: held, the TYPE event. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT_PORT, d, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(port_state(s, d) & 0xff, ==, TEMPEST_CHAN_ST_INPUTTING);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUTDATA, c, SRC, 8), ==,
                     TEMPEST_CMD_SUCCESS);
    expect_event(s, &cq, d, TEMPEST_CHAN_EV_TYPE, TEMPEST_CMD_E_CHAN_TYPE,
                 NULL);
    g_assert_cmphex(port_state(s, d) & 0xff, ==, TEMPEST_CHAN_ST_BUFFERFULL);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, d, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | 8);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, c, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);

    /* The port input first, then the port: stages 1-4 at once. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT_PORT, d, BUF_B, 64), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, c, n, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    expect_event(s, &cq, d, TEMPEST_CHAN_EV_PORT, 0, &got);
    m = got;
    expect_event(s, &cq, c, TEMPEST_CHAN_EV_OUTPUT, 0, NULL);
    g_assert_cmphex(port_state(s, a) >> 32, ==, m);
    g_assert_cmphex(port_state(s, m), ==,
                    TEMPEST_CHAN_ST_IDLE | (uint64_t)a << 32);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_MOVES)), ==, 2);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_DROPPED)), ==, 0);
    qtest_quit(s);
}

/*
 * Spec: tempest-hw.h, FREE with TEMPEST_CHAN_FREE_HELD: a port holding a
 * port sent to it is freed only when the guest says so, and then the
 * FREED makes the sender abandon the move: the moved port is IDLE where
 * it was, wired to itself, so its companion sends again what it had
 * pre-sent (the move's port data is as good as lost, never the port).
 */
static void test_free_held(void)
{
    QTestState *s = qtest_init("-M tempest -m 64M");
    unsigned cq = 0;
    uint32_t a, b, c, d;

    setup_cq(s);
    two_channels(s, &a, &b, &c, &d);
    fill(s, SRC, 40, 7);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, a, SRC, 40), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, c, b, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(port_state(s, d) & 0xffff, ==,
                    TEMPEST_CHAN_ST_BUFFERFULL | TEMPEST_CHAN_ST_HELD_PORT);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_FREE, d, 0, 0),
                TEMPEST_CMD_E_PORT_STATE);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_FREE, d, TEMPEST_CHAN_FREE_HELD,
                          0), ==, TEMPEST_CMD_SUCCESS);
    expect_event(s, &cq, c, TEMPEST_CHAN_EV_OUTPUT, TEMPEST_CMD_E_CLOSED,
                 NULL);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_STATE, d, 0, 0),
                TEMPEST_CMD_E_BAD_PORT);
    /* b is back, a's data sent to it again. */
    g_assert_cmphex(port_state(s, b), ==,
                    TEMPEST_CHAN_ST_BUFFERFULL | (uint64_t)a << 32);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_RESENT)), ==, 1);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, b, BUF_A, 256), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | 40);
    check(s, BUF_B, 40, 7);
    expect_event(s, &cq, a, TEMPEST_CHAN_EV_OUTPUT, 0, NULL);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_DROPPED)), ==, 0);
    qtest_quit(s);
}

/* A CHAN frame from the fake peer: kind, to, from, number, data. */
static void peer_chan(int fd, uint8_t kind, uint32_t to, uint32_t from,
                      uint32_t number, const void *data, size_t len)
{
    g_autofree uint8_t *f = g_malloc0(FABRIC_CHAN_HDR + len);

    f[0] = kind;
    fabric_st32(f + 4, to);
    fabric_st32(f + 8, from);
    fabric_st32(f + 12, number);
    if (len) {
        memcpy(f + FABRIC_CHAN_HDR, data, len);
    }
    peer_send(fd, FABRIC_CHAN, 0, f, FABRIC_CHAN_HDR + len);
}

/*
 * Spec: docs/chan.rst, the messages: a frame that does not name a live
 * port whose companion sent it, from the link's own node, in a state
 * and with a number the protocol allows, is dropped and counted in
 * CHAN_DROPPED; the port is unchanged and a good frame is still taken.
 */
static void test_peer(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0);
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    uint32_t me, them = TEMPEST_CHAN_ID(1, 5), ok = 0x5a5a5a5a;
    static uint8_t big[TEMPEST_CHAN_INLINE + 1];
    unsigned dropped = 0;

    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_FABRIC_STATE, ~0,
                                 TEMPEST_FABRIC_READY), ==,
                     TEMPEST_FABRIC_READY);
    me = alloc_port(s, BUF_A, 64);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_CONNECT, me, them, 0), ==,
                     TEMPEST_CMD_SUCCESS);

    peer_send(fd, FABRIC_CHAN, 0, big, 4);          /* short: the fabric */
    peer_chan(fd, 99, me, them, 1, NULL, 0);        /* unknown kind */
    peer_chan(fd, 1, me, TEMPEST_CHAN_ID(0, 1), 1, NULL, 0);  /* not link */
    peer_chan(fd, 1, TEMPEST_CHAN_ID(0, 9), them, 1, NULL, 0); /* not live */
    peer_chan(fd, 1, TEMPEST_CHAN_ID(2, 0), them, 1, NULL, 0); /* not ours */
    peer_chan(fd, 1, me, TEMPEST_CHAN_ID(1, 6), 1, NULL, 0);  /* not comp */
    peer_chan(fd, 1, me, them, 2, &ok, 4);          /* out of sequence */
    peer_chan(fd, 2, me, them, 1, NULL, 0);         /* ACK, no pre-send */
    peer_chan(fd, 2, me, them, 1, &ok, 4);          /* ACK with data */
    peer_chan(fd, 1, me, them, 1, big, sizeof(big));  /* too long */
    peer_chan(fd, 7, me, them, 1, &ok, 4);          /* PORTDATA, short */
    {
        /* PORTDATA whose origin is not on the link's node */
        uint8_t pd[16];

        fabric_st32(pd, TEMPEST_CHAN_ID(0, 3));
        fabric_st32(pd + 4, TEMPEST_CHAN_NONE);
        fabric_st32(pd + 8, 0);
        fabric_st32(pd + 12, 0);
        peer_chan(fd, 7, me, them, 1, pd, 16);
    }
    /* WIRE for a port whose companion is not the port named as old */
    {
        uint8_t old[4];

        fabric_st32(old, TEMPEST_CHAN_ID(1, 9));
        peer_chan(fd, 8, me, TEMPEST_CHAN_ID(1, 7), 0, old, 4);
    }
    peer_chan(fd, 10, me, them, 0, NULL, 0);        /* DELETE: not moving */
    peer_chan(fd, 11, me, them, 0, NULL, 0);        /* CONFIRM: no input */
    dropped = 14;
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_CHAN_DROPPED, ~0, dropped),
                     ==, dropped);
    g_assert_cmphex(port_state(s, me) & 0xff, ==, TEMPEST_CHAN_ST_IDLE);
    /* A good one is taken; the same number again is a duplicate. */
    peer_chan(fd, 1, me, them, 1, &ok, 4);
    peer_chan(fd, 1, me, them, 1, &ok, 4);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_CHAN_DROPPED, ~0,
                                 dropped + 1), ==, dropped + 1);
    g_assert_cmphex(port_state(s, me) & 0xff, ==,
                    TEMPEST_CHAN_ST_BUFFERFULL);
    g_assert_cmphex(qtest_readl(s, BUF_A), ==, ok);
    close(fd);
    qtest_quit(s);
    rmdir(dir);
}

/* The next CHAN frame the node sends the fake peer: its body. */
static void peer_expect_chan(int fd, uint8_t kind, uint32_t to,
                             uint32_t from, uint32_t number,
                             const uint32_t *words, unsigned nwords)
{
    uint8_t buf[256];
    uint32_t len = peer_read_until(fd, FABRIC_CHAN, buf, sizeof(buf));
    const uint8_t *b = buf + FABRIC_HDR_SIZE;

    g_assert_cmpuint(len, ==, FABRIC_CHAN_HDR + 4 * nwords);
    g_assert_cmpuint(b[0], ==, kind);
    g_assert_cmphex(fabric_ld32(b + 4), ==, to);
    g_assert_cmphex(fabric_ld32(b + 8), ==, from);
    g_assert_cmpuint(fabric_ld32(b + 12), ==, number);
    for (unsigned i = 0; i < nwords; i++) {
        g_assert_cmphex(fabric_ld32(b + FABRIC_CHAN_HDR + 4 * i), ==,
                        words[i]);
    }
}

/*
 * Against a fake peer on @fd, once the fabric is up: port *q (buffer
 * @buf of @size) connected to @p1 there, port *t (no buffer) to @p2.
 */
static void peer_ports(QTestState *s, int fd, uint64_t buf, uint64_t size,
                       uint32_t p1, uint32_t p2, uint32_t *q, uint32_t *t)
{
    peer_set_timeout(fd, 30);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_FABRIC_STATE, ~0,
                                 TEMPEST_FABRIC_READY), ==,
                     TEMPEST_FABRIC_READY);
    *q = alloc_port(s, buf, size);
    *t = alloc_port(s, 0, 0);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_CONNECT, *q, p1, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_CONNECT, *t, p2, 0), ==,
                     TEMPEST_CMD_SUCCESS);
}

/*
 * Spec: docs/chan.rst, ports over ports in the device, against a fake
 * peer on the fabric: stage 1's PORTDATA frame (the port, its companion,
 * its counters); the carrier's companion freed before it took the port:
 * the move is abandoned, the port IDLE here again, a WIRE to itself sent
 * to its companion, the OUTPUT event CLOSED; a port sent by the peer:
 * held, input (the WIRE to its companion with the new port's counters),
 * the final confirmation (the PORT event), then data for the new port
 * stored in its initial buffer; a port receiving a long DATA by the
 * transfer engine is not moved until the data has landed (RETRY).
 */
static void test_move_peer(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0);
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    uint32_t p1 = TEMPEST_CHAN_ID(1, 5), p2 = TEMPEST_CHAN_ID(1, 6);
    uint32_t p3 = TEMPEST_CHAN_ID(1, 7), far = TEMPEST_CHAN_ID(1, 10);
    uint32_t q, t, t2, n, w[4], ok = 0x600dc0de;
    uint8_t pd[16];
    unsigned cq = 0;
    uint64_t got = 0;

    peer_ports(s, fd, BUF_A, 64, p1, p2, &q, &t);
    setup_cq(s);

    /* Stage 1: PORTDATA (origin, companion, tx, rx). */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, t, q, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    w[0] = q;
    w[1] = p1;
    w[2] = 0;
    w[3] = 0;
    peer_expect_chan(fd, 7, p2, t, 1, w, 4);
    g_assert_cmphex(port_state(s, q) & 0xff, ==, TEMPEST_CHAN_ST_MIGRATING);

    /* The carrier's far end freed: the move is abandoned. */
    peer_chan(fd, 4, t, p2, 0, NULL, 0);
    expect_event(s, &cq, t, TEMPEST_CHAN_EV_OUTPUT, TEMPEST_CMD_E_CLOSED,
                 NULL);
    w[0] = q;
    peer_expect_chan(fd, 8, p1, q, 0, w, 1);      /* WIRE to itself */
    g_assert_cmphex(port_state(s, q), ==,
                    TEMPEST_CHAN_ST_IDLE | (uint64_t)p1 << 32);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, t, q, 0),
                TEMPEST_CMD_E_CLOSED);

    /* A port from the peer: held, input, wired, confirmed. */
    t2 = alloc_port(s, 0, 0);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_CONNECT, t2, p3, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    fabric_st32(pd, TEMPEST_CHAN_ID(1, 9));
    fabric_st32(pd + 4, far);
    fabric_st32(pd + 8, 4);
    fabric_st32(pd + 12, 2);
    peer_chan(fd, 7, t2, p3, 1, pd, 16);
    while ((port_state(s, t2) & 0xff) != TEMPEST_CHAN_ST_BUFFERFULL) {
        g_usleep(1000);
    }
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT_PORT, t2, BUF_B, 64), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(port_state(s, t2) & 0xff, ==,
                    TEMPEST_CHAN_ST_CONFIRMING);
    w[0] = TEMPEST_CHAN_ID(1, 9);
    peer_expect_chan(fd, 8, far, TEMPEST_CHAN_ID(0, 3), 2, w, 1);
    peer_chan(fd, 11, t2, p3, 0, NULL, 0);          /* CONFIRM */
    expect_event(s, &cq, t2, TEMPEST_CHAN_EV_PORT, 0, &got);
    n = got;
    g_assert_cmphex(n, ==, TEMPEST_CHAN_ID(0, 3));
    g_assert_cmphex(port_state(s, n), ==,
                    TEMPEST_CHAN_ST_IDLE | (uint64_t)far << 32);
    peer_chan(fd, 1, n, far, 3, &ok, 4);            /* its next DATA */
    while ((port_state(s, n) & 0xff) != TEMPEST_CHAN_ST_BUFFERFULL) {
        g_usleep(1000);
    }
    g_assert_cmphex(qtest_readl(s, BUF_B), ==, ok);

    /*
     * A long DATA being stored into q (BIG answered by GO): q does not
     * move until it has landed (RETRY, nothing changes).
     */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_BUFFER, q, SRC, 0x20000), ==,
                     TEMPEST_CMD_SUCCESS);
    {
        uint8_t len[8];

        fabric_st64(len, TEMPEST_CHAN_INLINE + 100);
        peer_chan(fd, 5, q, p1, 1, len, 8);             /* BIG */
    }
    w[0] = (uint32_t)SRC;
    w[1] = (uint32_t)(SRC >> 32);
    peer_expect_chan(fd, 6, p1, q, 1, w, 2);            /* GO: here */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, t2, q, 0), ==,
                     TEMPEST_CMD_RETRY);
    g_assert_cmphex(port_state(s, q) & 0xff, ==, TEMPEST_CHAN_ST_IDLE);
    g_assert_cmphex(port_state(s, t2) & 0xff, ==, TEMPEST_CHAN_ST_IDLE);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_DROPPED)), ==, 0);
    close(fd);
    qtest_quit(s);
    rmdir(dir);
}

/*
 * Spec: docs/chan.rst, "A long DATA": a port that inputs with a buffer
 * longer than TEMPEST_CHAN_INLINE offers it to its companion (READY:
 * number rx + 1, the buffer, its size); a READY for our next DATA makes
 * the next long output go straight by the transfer engine into the
 * buffer offered (its XFER_HDR names it; no BIG, no GO); a READY for
 * another number is stale: ignored, not counted as dropped.
 */
static void test_ready(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0);
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    uint32_t p1 = TEMPEST_CHAN_ID(1, 5), p2 = TEMPEST_CHAN_ID(1, 6);
    const uint64_t there = 0x40123000, len = TEMPEST_CHAN_INLINE + 100;
    uint32_t in, out, w[4];
    uint8_t offer[16], f[256];
    uint32_t flen;

    peer_ports(s, fd, SRC, 0x20000, p1, p2, &in, &out);

    /* The input's buffer offered. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, in, BUF_B, 64), ==,
                     TEMPEST_CMD_SUCCESS);
    w[0] = (uint32_t)SRC;
    w[1] = (uint32_t)(SRC >> 32);
    w[2] = 0x20000;
    w[3] = 0;
    peer_expect_chan(fd, 12, p1, in, 1, w, 4);

    /* A stale offer, then one for DATA 1: the output goes into it. */
    fabric_st64(offer, there);
    fabric_st64(offer + 8, 0x20000);
    peer_chan(fd, 12, out, p2, 7, offer, 16);
    peer_chan(fd, 12, out, p2, 1, offer, 16);
    /* A DATA out of sequence, dropped: the frames before it are in. */
    peer_chan(fd, 1, out, p2, 9, offer, 4);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_CHAN_DROPPED, ~0, 1), ==, 1);
    fill(s, RAM(0x600000), len, 3);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, out, RAM(0x600000),
                          len), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 0);
    for (;;) {
        uint16_t type = peer_read_frame(fd, f, sizeof(f), &flen);
        const uint8_t *b = f + FABRIC_HDR_SIZE;

        if (type == FABRIC_CHAN) {
            g_assert_cmpuint(b[0], !=, 5);      /* no BIG */
        } else if (type == FABRIC_XFER) {
            g_assert_cmpuint(b[0], ==, 1);      /* XFER_HDR first */
            g_assert_cmpuint(fabric_ld64(b + FABRIC_XFER_HDR), ==, len);
            g_assert_cmphex(fabric_ld64(b + FABRIC_XFER_HDR + 8), ==,
                            there);
            break;
        }
    }
    g_assert_cmphex(port_state(s, out) & 0xff, ==,
                    TEMPEST_CHAN_ST_OUTPUTTING);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_DROPPED)), ==, 1);
    close(fd);
    qtest_quit(s);
    rmdir(dir);
}

/* Buffers of the offer tests, each longer than TEMPEST_CHAN_INLINE. */
#define OX          RAM(0x800000)
#define OY          RAM(0x840000)
#define OZ          RAM(0x880000)
#define OC          RAM(0x8c0000)
#define OSIZE       0x20000
#define OLEN        (TEMPEST_CHAN_INLINE + 100)

/* The fake peer's ports (node 1) of the offer tests. */
#define OP1         TEMPEST_CHAN_ID(1, 5)
#define OP2         TEMPEST_CHAN_ID(1, 6)

/* The end of a test against a fake peer: @dropped frames were dropped. */
static void peer_end(QTestState *s, int fd, const char *dir,
                     unsigned dropped)
{
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_CHAN_DROPPED)), ==,
                     dropped);
    close(fd);
    qtest_quit(s);
    rmdir(dir);
}

/* The channel messages' kinds (tempest-nc-chan.c). */
enum {
    M_DATA = 1, M_ACK, M_NACK, M_FREED, M_BIG, M_GO, M_PORTDATA, M_WIRE,
    M_FWD, M_DELETE, M_CONFIRM, M_READY, M_WITHDRAW, M_WITHDRAWN,
};

/* Instruction @op until it answers other than RETRY: its status. */
static uint32_t chan_retried(QTestState *s, uint64_t op, uint64_t port,
                             uint64_t a2, uint64_t a3)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    uint32_t st;

    while ((st = chan(s, op, port, a2, a3)) == TEMPEST_CMD_RETRY &&
           g_get_monotonic_time() < end) {
        g_usleep(500);
    }
    return st;
}

/* The node's READY: port @from offers @addr (OSIZE) for DATA @number. */
static void expect_ready(int fd, uint32_t to, uint32_t from,
                         uint32_t number, uint64_t addr)
{
    uint32_t w[4] = { (uint32_t)addr, (uint32_t)(addr >> 32), OSIZE, 0 };

    peer_expect_chan(fd, M_READY, to, from, number, w, 4);
}

/* The fake peer's transfer engine frame @kind of message @mid. */
static void peer_xfer(int fd, uint8_t kind, uint32_t mid, const void *body,
                      size_t len)
{
    static uint8_t f[FABRIC_XFER_HDR + 8 + 32 * KiB];

    g_assert_cmpuint(len, <=, sizeof(f) - FABRIC_XFER_HDR);
    memset(f, 0, FABRIC_XFER_HDR);
    f[0] = kind;
    fabric_st32(f + 4, mid);
    memcpy(f + FABRIC_XFER_HDR, body, len);
    peer_send(fd, FABRIC_XFER, 0, f, FABRIC_XFER_HDR + len);
}

/*
 * The fake peer's port @from starts DATA @number (OLEN bytes) to the
 * node's port @to by the transfer engine into @where, as its controller
 * does after GO or READY: XFER_HDR flagged the channel controller's,
 * with the channel's cookie.
 */
static void peer_xfer_hdr(int fd, uint32_t to, uint32_t from,
                          uint32_t number, uint64_t where)
{
    uint8_t h[32] = { 0 };

    fabric_st64(h, OLEN);
    fabric_st64(h + 8, where);
    fabric_st32(h + 16, 1U << 31);                  /* the channel's */
    fabric_st64(h + 24, TEMPEST_CHAN_ID_INDEX(to) |
                (uint64_t)TEMPEST_CHAN_ID_INDEX(from) << 16 |
                (uint64_t)number << 32);
    peer_xfer(fd, 1, number, h, sizeof(h));         /* XFER_HDR */
}

/* Bytes [@from, @to) of message @number (the pattern @seed) as XFER_DATA. */
static void peer_xfer_body(int fd, uint32_t number, uint8_t seed,
                           size_t from, size_t to)
{
    g_autofree uint8_t *d = g_malloc(OLEN);
    g_autofree uint8_t *f = g_malloc(8 + 32 * KiB);
    size_t n;

    pattern(d, OLEN, seed);
    for (size_t off = from; off < to; off += n) {
        n = MIN(to - off, 32 * KiB);
        fabric_st64(f, off);
        memcpy(f + 8, d + off, n);
        peer_xfer(fd, 2, number, f, 8 + n);         /* XFER_DATA */
    }
}

/* The whole of DATA @number (OLEN bytes of the pattern @seed). */
static void peer_xfer_data(int fd, uint32_t to, uint32_t from,
                           uint32_t number, uint64_t where, uint8_t seed)
{
    peer_xfer_hdr(fd, to, from, number, where);
    peer_xfer_body(fd, number, seed, 0, OLEN);
}

/* The peer's BIG for DATA @number (OLEN bytes); the node's GO names @at. */
static void peer_big(int fd, uint32_t to, uint32_t from, uint32_t number,
                     uint64_t at)
{
    uint8_t len[8];
    uint32_t w[2] = { (uint32_t)at, (uint32_t)(at >> 32) };

    fabric_st64(len, OLEN);
    peer_chan(fd, M_BIG, to, from, number, len, 8);
    peer_expect_chan(fd, M_GO, from, to, number, w, 2);
}

/*
 * Against a fake peer: port *in (buffer OX) connected to OP1 there has
 * taken DATA 1 (OLEN bytes by its INPUT's offer): IDLE, with OX offered
 * for DATA 2 with the ACK.  *t: a second port, connected to OP2.
 */
static void offered_port(QTestState *s, int fd, unsigned *cq, uint32_t *in,
                         uint32_t *t)
{
    const uint32_t p1 = OP1, p2 = OP2;

    uint64_t got = 0;

    peer_ports(s, fd, OX, OSIZE, p1, p2, in, t);
    setup_cq(s);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, *in, OX, OSIZE), ==,
                     TEMPEST_CMD_SUCCESS);
    expect_ready(fd, p1, *in, 1, OX);
    peer_xfer_data(fd, *in, p1, 1, OX, 1);
    expect_event(s, cq, *in, TEMPEST_CHAN_EV_INPUT, OLEN, &got);
    g_assert_cmphex(got, ==, OX);
    check(s, OX, OLEN, 1);
    peer_expect_chan(fd, M_ACK, p1, *in, 1, NULL, 0);
    expect_ready(fd, p1, *in, 2, OX);
    g_assert_cmphex(port_state(s, *in), ==,
                    TEMPEST_CHAN_ST_IDLE | (uint64_t)p1 << 32);
}

/*
 * Spec: docs/chan.rst, "A long DATA": the ACK of a long DATA comes with
 * READY for the next one, the port IDLE; data by that offer lands while
 * the port is IDLE (held, BUFFERFULL); BUFFER and FREE of a port whose
 * buffer is offered send WITHDRAW and answer RETRY until WITHDRAWN (then
 * the buffer given back is never asked for again: the next DATA's GO
 * names the new one) or the data lands (then BUFFER finds it held).
 */
static void test_offer_idle(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0);
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    uint32_t in, t;
    unsigned cq = 0;

    offered_port(s, fd, &cq, &in, &t);

    /* DATA 2 by the offer, the port idle: held in OX. */
    peer_xfer_data(fd, in, OP1, 2, OX, 2);
    wait_state(s, in, TEMPEST_CHAN_ST_BUFFERFULL);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, in, OY, OSIZE), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | OLEN);
    check(s, OX, OLEN, 2);
    peer_expect_chan(fd, M_ACK, OP1, in, 2, NULL, 0);
    expect_ready(fd, OP1, in, 3, OY);

    /* BUFFER: WITHDRAW (once), RETRY until WITHDRAWN. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_BUFFER, in, OZ, OSIZE), ==,
                     TEMPEST_CMD_RETRY);
    peer_expect_chan(fd, M_WITHDRAW, OP1, in, 3, NULL, 0);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_BUFFER, in, OZ, OSIZE), ==,
                     TEMPEST_CMD_RETRY);
    peer_chan(fd, M_WITHDRAWN, in, OP1, 3, NULL, 0);
    g_assert_cmpuint(chan_retried(s, TEMPEST_CHAN_OP_BUFFER, in, OZ, OSIZE),
                     ==, TEMPEST_CMD_SUCCESS);
    /* OY is the program's again: DATA 3 asks (BIG), its GO names OZ. */
    fill(s, OY, OLEN, 0xee);
    peer_big(fd, in, OP1, 3, OZ);
    peer_xfer_data(fd, in, OP1, 3, OZ, 3);
    wait_state(s, in, TEMPEST_CHAN_ST_BUFFERFULL);
    check(s, OZ, OLEN, 3);
    check(s, OY, OLEN, 0xee);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, in, OX, OSIZE), ==,
                     TEMPEST_CMD_SUCCESS);
    peer_expect_chan(fd, M_ACK, OP1, in, 3, NULL, 0);
    expect_ready(fd, OP1, in, 4, OX);

    /* The data had gone before the WITHDRAW: it lands, BUFFER refused. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_BUFFER, in, OZ, OSIZE), ==,
                     TEMPEST_CMD_RETRY);
    peer_expect_chan(fd, M_WITHDRAW, OP1, in, 4, NULL, 0);
    peer_xfer_data(fd, in, OP1, 4, OX, 4);
    wait_state(s, in, TEMPEST_CHAN_ST_BUFFERFULL);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_BUFFER, in, OZ, OSIZE),
                TEMPEST_CMD_E_PORT_STATE);
    check(s, OX, OLEN, 4);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, in, OY, OSIZE), ==,
                     TEMPEST_CMD_SUCCESS);
    peer_expect_chan(fd, M_ACK, OP1, in, 4, NULL, 0);
    expect_ready(fd, OP1, in, 5, OY);

    /* FREE: the same; FREED once WITHDRAWN came. */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_FREE, in, 0, 0), ==,
                     TEMPEST_CMD_RETRY);
    peer_expect_chan(fd, M_WITHDRAW, OP1, in, 5, NULL, 0);
    peer_chan(fd, M_WITHDRAWN, in, OP1, 5, NULL, 0);
    g_assert_cmpuint(chan_retried(s, TEMPEST_CHAN_OP_FREE, in, 0, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    peer_expect_chan(fd, M_FREED, OP1, in, 0, NULL, 0);
    peer_end(s, fd, dir, 0);
}

/*
 * Spec: docs/chan.rst, INPUT_HERE: with the port's buffer offered, it
 * keeps the port's buffer (no new READY) and the data, landing there by
 * the offer, is copied to ARG2 before the ACK: the INPUT event names
 * ARG2, and the port's buffer is offered again for the next DATA.
 */
static void test_offer_here(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0);
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    uint32_t in, t;
    unsigned cq = 0;
    uint64_t got = 0;

    offered_port(s, fd, &cq, &in, &t);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT_HERE, in, OC, OSIZE), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 0);
    peer_xfer_data(fd, in, OP1, 2, OX, 2);
    expect_event(s, &cq, in, TEMPEST_CHAN_EV_INPUT, OLEN, &got);
    g_assert_cmphex(got, ==, OC);
    check(s, OC, OLEN, 2);
    /* The ACK; READY 3 offers OX, the port's buffer still (no READY 2). */
    peer_expect_chan(fd, M_ACK, OP1, in, 2, NULL, 0);
    expect_ready(fd, OP1, in, 3, OX);
    peer_end(s, fd, dir, 0);
}

/*
 * Spec: docs/chan.rst, INPUT_HERE: long data landing in the port's
 * buffer (BIG answered by GO) keeps the port's buffer and the data is
 * copied to ARG2 before the ACK, so the next DATA, which may land in the
 * port's buffer as soon as the ACK has gone, cannot overwrite it (the
 * device used to name the port's buffer in the INPUT event and leave the
 * copy to the guest after the ACK: the next DATA overwrote it).  ARG3
 * too short for the data landing: TOO_BIG at once with its length, and
 * the data is held when it has landed.
 */
static void test_here_landing(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0);
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    uint32_t in, t, ok = 0x5a5a5a5a;
    unsigned cq = 0;
    uint64_t got = 0;

    peer_ports(s, fd, OX, OSIZE, OP1, OP2, &in, &t);
    setup_cq(s);
    peer_big(fd, in, OP1, 1, OX);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT_HERE, in, OC, OSIZE), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(result(s), ==, 0);
    peer_xfer_data(fd, in, OP1, 1, OX, 1);
    expect_event(s, &cq, in, TEMPEST_CHAN_EV_INPUT, OLEN, &got);
    peer_expect_chan(fd, M_ACK, OP1, in, 1, NULL, 0);
    /* The next DATA lands in the port's buffer at once. */
    peer_chan(fd, M_DATA, in, OP1, 2, &ok, 4);
    wait_state(s, in, TEMPEST_CHAN_ST_BUFFERFULL);
    g_assert_cmphex(qtest_readl(s, OX), ==, ok);
    /* The input's data is whole where the event says: ARG2. */
    check(s, got, OLEN, 1);
    g_assert_cmphex(got, ==, OC);
    expect_ready(fd, OP1, in, 2, OX);        /* sent after the ACK */
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT, in, OX, OSIZE), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | 4);
    peer_expect_chan(fd, M_ACK, OP1, in, 2, NULL, 0);

    /* Too short for the data landing: TOO_BIG now; it is held. */
    peer_big(fd, in, OP1, 3, OX);
    expect_fail(s, chan(s, TEMPEST_CHAN_OP_INPUT_HERE, in, OC, OLEN - 1),
                TEMPEST_CMD_E_TOO_BIG);
    g_assert_cmpuint(result(s), ==, OLEN);
    peer_xfer_data(fd, in, OP1, 3, OX, 3);
    wait_state(s, in, TEMPEST_CHAN_ST_BUFFERFULL);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_INPUT_HERE, in, OC, OSIZE), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(result(s), ==, TEMPEST_CHAN_PRESENT | OLEN);
    check(s, OC, OLEN, 3);
    peer_end(s, fd, dir, 0);
}

/*
 * Spec: docs/chan.rst, "A long DATA": OUTPUT_PORT of a port whose buffer
 * is offered withdraws the offer first (RETRY until WITHDRAWN), then
 * stage 1 goes on (PORTDATA).  As the writer, the node answers WITHDRAW
 * of an offer for the DATA it has not sent with WITHDRAWN and its next
 * long output asks (BIG) instead of using it.  Malformed or stale offer
 * frames: a READY of a buffer no long data fits, a WITHDRAW of an offer
 * for DATA not yet due, a WITHDRAWN for no offer, and a transfer into an
 * offer withdrawn are dropped and counted; a READY for a DATA that went
 * already is ignored.
 */
static void test_offer_peer(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0);
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    uint32_t in, out, t, w[4];
    uint8_t offer[16], f[256];
    uint32_t flen;
    unsigned cq = 0;

    offered_port(s, fd, &cq, &in, &out);

    /* Bad frames about offers. */
    fabric_st64(offer, RAM(0x600000));
    fabric_st64(offer + 8, TEMPEST_CHAN_INLINE);
    peer_chan(fd, M_READY, out, OP2, 1, offer, 16);   /* too short */
    fabric_st64(offer + 8, OSIZE);
    peer_chan(fd, M_READY, out, OP2, 7, offer, 16);   /* stale: ignored */
    peer_chan(fd, M_WITHDRAW, out, OP2, 5, NULL, 0);  /* not yet due */
    peer_chan(fd, M_WITHDRAWN, out, OP2, 1, NULL, 0); /* no offer */
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_CHAN_DROPPED, ~0, 3), ==, 3);

    /* The node's writer: an offer, withdrawn; the output asks (BIG). */
    peer_chan(fd, M_READY, out, OP2, 1, offer, 16);
    peer_chan(fd, M_WITHDRAW, out, OP2, 1, NULL, 0);
    peer_expect_chan(fd, M_WITHDRAWN, OP2, out, 1, NULL, 0);
    fill(s, SRC, OLEN, 9);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT, out, SRC, OLEN), ==,
                     TEMPEST_CMD_SUCCESS);
    w[0] = OLEN;
    w[1] = 0;
    peer_expect_chan(fd, M_BIG, OP2, out, 1, w, 2);

    /* OUTPUT_PORT of the offering port: WITHDRAW, RETRY until WITHDRAWN. */
    t = alloc_port(s, 0, 0);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_CONNECT, t,
                          TEMPEST_CHAN_ID(1, 7), 0), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, t, in, 0), ==,
                     TEMPEST_CMD_RETRY);
    peer_expect_chan(fd, M_WITHDRAW, OP1, in, 2, NULL, 0);
    g_assert_cmpuint(chan(s, TEMPEST_CHAN_OP_OUTPUT_PORT, t, in, 0), ==,
                     TEMPEST_CMD_RETRY);
    g_assert_cmphex(port_state(s, in) & 0xff, ==, TEMPEST_CHAN_ST_IDLE);
    peer_chan(fd, M_WITHDRAWN, in, OP1, 2, NULL, 0);
    g_assert_cmpuint(chan_retried(s, TEMPEST_CHAN_OP_OUTPUT_PORT, t, in, 0),
                     ==, TEMPEST_CMD_SUCCESS);
    w[0] = in;
    w[1] = OP1;
    w[2] = 0;
    w[3] = 1;
    peer_expect_chan(fd, M_PORTDATA, TEMPEST_CHAN_ID(1, 7), t, 1, w, 4);

    /* A transfer into the offer withdrawn is not taken as data. */
    peer_xfer_data(fd, in, OP1, 2, OX, 2);
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_CHAN_DROPPED, ~0, 4), ==, 4);
    g_assert_cmphex(port_state(s, in) & 0xff, ==, TEMPEST_CHAN_ST_MIGRATING);
    /* Nothing else was sent on the channels (the XFER_ACK only). */
    peer_set_timeout(fd, 1);
    for (;;) {
        ssize_t r = recv(fd, f, FABRIC_HDR_SIZE, MSG_PEEK);

        if (r < (ssize_t)FABRIC_HDR_SIZE) {
            break;
        }
        g_assert_cmpuint(peer_read_frame(fd, f, sizeof(f), &flen), !=,
                         FABRIC_CHAN);
    }
    peer_end(s, fd, dir, 4);
}

/*
 * Spec: docs/chan.rst, "The copy in halves", against a fake peer whose
 * RAM is not mapped here (a socket link): its XFER_SPLIT of a transfer
 * shorter than a sender splits (OLEN, under 128 KiB) is dropped and
 * counted (one that may be split is answered XFER_UNSPLIT: peer test
 * xfer-split-length), and the data it then sends itself is taken whole;
 * a SPLIT after data, one of the wrong size, one for no transfer and an
 * UNSPLIT for no transfer of the node's are dropped and counted.
 */
static void test_split_peer(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *s = start_node(dir, 0);
    int fd = peer_join(dir, 0, 1, 2, CLUSTER, NULL, 0);
    uint8_t split[16];
    uint32_t in, t, dropped;
    unsigned cq = 0;

    offered_port(s, fd, &cq, &in, &t);
    dropped = qtest_readl(s, NC(TEMPEST_NC_DROPPED));

    /* DATA 2 by the offer, the peer asking the node to copy half. */
    peer_xfer_hdr(fd, in, OP1, 2, OX);
    fabric_st64(split, OLEN / 2);
    fabric_st64(split + 8, RAM(0x100000));
    peer_xfer(fd, 9, 2, split, 16);                 /* XFER_SPLIT: short */
    g_assert_cmpuint(tq_wait_reg(s, TEMPEST_NC_DROPPED, ~0, dropped + 1),
                     ==, dropped + 1);
    peer_xfer_body(fd, 2, 2, 0, 32 * KiB);
    peer_xfer(fd, 9, 2, split, 16);                 /* after data */
    peer_xfer(fd, 9, 2, split, 8);                  /* short */
    peer_xfer(fd, 9, 77, split, 16);                /* no transfer */
    peer_xfer(fd, 10, 5, NULL, 0);                  /* UNSPLIT: none */
    peer_xfer_body(fd, 2, 2, 32 * KiB, OLEN);
    wait_state(s, in, TEMPEST_CHAN_ST_BUFFERFULL);
    check(s, OX, OLEN, 2);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_DROPPED)), ==,
                     dropped + 5);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_XFER_PULL_LO)), ==, 0);
    peer_end(s, fd, dir, 0);
}

/*
 * Spec: docs/chan.rst, "A long DATA", on two real nodes: the reader's
 * ACK offers its next buffer and the writer's next long output lands in
 * it while the reader is IDLE; a BUFFER on the reader withdraws the
 * offer (RETRY until the writer's controller answers) and no byte of
 * the next output lands in the buffer given back.
 */
static void test_offer_pair(void)
{
    g_autofree char *dir = g_dir_make_tmp("tempest-chan-XXXXXX", NULL);
    QTestState *n[2];
    uint32_t a, b;
    unsigned cq = 0;

    start_pair(dir, n);
    a = alloc_port(n[0], 0, 0);
    b = alloc_port(n[1], OX, OSIZE);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_CONNECT, a, b, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_CONNECT, b, a, 0), ==,
                     TEMPEST_CMD_SUCCESS);
    for (int k = 0; k < 2; k++) {
        /* DATA 1 (BIG, GO), then DATA 2 by the offer of OY. */
        fill(n[0], SRC, OLEN, 1 + k);
        g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_OUTPUT, a, SRC, OLEN), ==,
                         TEMPEST_CMD_SUCCESS);
        wait_state(n[1], b, TEMPEST_CHAN_ST_BUFFERFULL);
        g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_INPUT, b, k ? OX : OY,
                              OSIZE), ==, TEMPEST_CMD_SUCCESS);
        g_assert_cmphex(result(n[1]), ==, TEMPEST_CHAN_PRESENT | OLEN);
        check(n[1], k ? OY : OX, OLEN, 1 + k);
        expect_event(n[0], &cq, a, TEMPEST_CHAN_EV_OUTPUT, 0, NULL);
    }
    /* OX is offered for DATA 3: BUFFER withdraws it, then OZ. */
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_BUFFER, b, OZ, OSIZE), ==,
                     TEMPEST_CMD_RETRY);
    g_assert_cmpuint(chan_retried(n[1], TEMPEST_CHAN_OP_BUFFER, b, OZ,
                                  OSIZE), ==, TEMPEST_CMD_SUCCESS);
    fill(n[1], OX, OLEN, 0xee);
    fill(n[0], SRC, OLEN, 3);
    g_assert_cmpuint(chan(n[0], TEMPEST_CHAN_OP_OUTPUT, a, SRC, OLEN), ==,
                     TEMPEST_CMD_SUCCESS);
    wait_state(n[1], b, TEMPEST_CHAN_ST_BUFFERFULL);
    check(n[1], OZ, OLEN, 3);
    check(n[1], OX, OLEN, 0xee);
    g_assert_cmpuint(chan(n[1], TEMPEST_CHAN_OP_INPUT, b, OY, OSIZE), ==,
                     TEMPEST_CMD_SUCCESS);
    expect_event(n[0], &cq, a, TEMPEST_CHAN_EV_OUTPUT, 0, NULL);
    for (int i = 0; i < 2; i++) {
        g_assert_cmpuint(qtest_readl(n[i], NC(TEMPEST_NC_CHAN_DROPPED)), ==,
                         0);
        qtest_quit(n[i]);
    }
    rmdir(dir);
}

/*
 * One instruction through a command block at @blk (CMD_BLOCK, 1.14) with
 * @nargs arguments: the STATUS the device wrote there (the block is
 * preset to a value it never writes), its REASON and RESULT in *@why
 * and *@res.
 */
#define BLK_UNSET   0xa5a5a5a5U

static uint32_t chan_block(QTestState *s, uint64_t blk, uint32_t nargs,
                           uint64_t op, uint64_t port, uint64_t a2,
                           uint64_t a3, uint64_t *res, uint32_t *why)
{
    const uint64_t args[] = { op, port, a2, a3 };

    qtest_writel(s, blk + TEMPEST_CMDB_OP, TEMPEST_CMD_CHAN);
    qtest_writel(s, blk + TEMPEST_CMDB_NARGS, nargs);
    for (int i = 0; i < 4; i++) {
        qtest_writeq(s, blk + TEMPEST_CMDB_ARG(i), args[i]);
    }
    qtest_writel(s, blk + TEMPEST_CMDB_STATUS, BLK_UNSET);
    qtest_writel(s, blk + TEMPEST_CMDB_REASON, BLK_UNSET);
    qtest_writeq(s, blk + TEMPEST_CMDB_RESULT, BLK_UNSET);
    qtest_writeq(s, NC(TEMPEST_NC_CMD_BLOCK), blk);
    *res = qtest_readq(s, blk + TEMPEST_CMDB_RESULT);
    *why = qtest_readl(s, blk + TEMPEST_CMDB_REASON);
    return qtest_readl(s, blk + TEMPEST_CMDB_STATUS);
}

/*
 * node-controller.rst, CMD_BLOCK (1.14): the command bank's sequence in
 * one access, the description and answer in RAM.  Instructions of a
 * channel within the node run as through the registers (the bank left as
 * they leave it); a failure's reason comes back in the block; too many
 * arguments fail BAD_OP; a block outside RAM or unaligned, or a 4-byte
 * write, is refused in ERR_STATUS with nothing run or written.
 */
static void test_cmd_block(void)
{
    QTestState *s = qtest_init("-M tempest -m 64M");
    const uint64_t blk = RAM(0x200000);
    uint64_t res;
    uint32_t why, a, b;

    g_assert_true(qtest_readl(s, NC(TEMPEST_NC_FEATURES)) &
                  TEMPEST_NC_FEAT_CMD_BLOCK);
    g_assert_cmpuint(chan_block(s, blk, 4, TEMPEST_CHAN_OP_ALLOC, BUF_A, 256,
                                0, &res, &why), ==, TEMPEST_CMD_SUCCESS);
    a = res;
    g_assert_cmpuint(why, ==, 0);
    g_assert_cmphex(result(s), ==, a);          /* the bank's, as after */
    g_assert_cmpuint(chan_block(s, blk, 4, TEMPEST_CHAN_OP_ALLOC, BUF_B, 256,
                                0, &res, &why), ==, TEMPEST_CMD_SUCCESS);
    b = res;
    g_assert_cmphex(a, !=, b);
    g_assert_cmpuint(chan_block(s, blk, 4, TEMPEST_CHAN_OP_CONNECT, a, b, 0,
                                &res, &why), ==, TEMPEST_CMD_SUCCESS);
    /* outputdata, then input: PRESENT and the length in the block. */
    fill(s, SRC, 200, 3);
    g_assert_cmpuint(chan_block(s, blk, 4, TEMPEST_CHAN_OP_OUTPUTDATA, a,
                                SRC, 200, &res, &why), ==,
                     TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(chan_block(s, blk, 4, TEMPEST_CHAN_OP_INPUT, b, BUF_C,
                                256, &res, &why), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(res, ==, TEMPEST_CHAN_PRESENT | 200);
    check(s, BUF_B, 200, 3);
    g_assert_cmpuint(chan_block(s, blk, 4, TEMPEST_CHAN_OP_OUTPUT, a, 0, 0,
                                &res, &why), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmpuint(res, ==, 1);
    g_assert_cmphex(port_state(s, a) & 0xffff, ==, TEMPEST_CHAN_ST_IDLE);

    /* A failure: the reason in the block, RESULT 0. */
    g_assert_cmpuint(chan_block(s, blk, 4, 99, 0, 0, 0, &res, &why), ==,
                     TEMPEST_CMD_FAIL);
    g_assert_cmpuint(why, ==, TEMPEST_CMD_E_BAD_CHAN_OP);
    g_assert_cmpuint(res, ==, 0);
    /* Arguments not copied keep the bank's: ARG1 is still a's. */
    qtest_writeq(s, NC(TEMPEST_NC_CMD_ARG(1)), a);
    g_assert_cmpuint(chan_block(s, blk, 1, TEMPEST_CHAN_OP_STATE, b, 0, 0,
                                &res, &why), ==, TEMPEST_CMD_SUCCESS);
    g_assert_cmphex(res >> 32, ==, b);          /* a's companion */
    g_assert_cmpuint(chan_block(s, blk, TEMPEST_NC_CMD_NUM_ARGS + 1,
                                TEMPEST_CHAN_OP_STATE, a, 0, 0, &res, &why),
                     ==, TEMPEST_CMD_FAIL);
    g_assert_cmpuint(why, ==, TEMPEST_CMD_E_BAD_OP);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_NONE);

    /* Refused blocks: nothing written, ERR_STATUS says why. */
    qtest_writel(s, blk + TEMPEST_CMDB_STATUS, BLK_UNSET);
    qtest_writeq(s, NC(TEMPEST_NC_CMD_BLOCK), blk + 4);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_VALUE);
    g_assert_cmphex(qtest_readl(s, blk + TEMPEST_CMDB_STATUS), ==,
                    BLK_UNSET);
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    qtest_writeq(s, NC(TEMPEST_NC_CMD_BLOCK), RAM(64 << 20) - 64);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_VALUE);
    qtest_writel(s, NC(TEMPEST_NC_ERR_STATUS), 0);
    qtest_writel(s, NC(TEMPEST_NC_CMD_BLOCK), blk);
    g_assert_cmpuint(qtest_readl(s, NC(TEMPEST_NC_ERR_STATUS)), ==,
                     TEMPEST_NC_ERR_BAD_SIZE);
    g_assert_cmphex(qtest_readl(s, blk + TEMPEST_CMDB_STATUS), ==,
                    BLK_UNSET);
    g_assert_cmpuint(qtest_readq(s, NC(TEMPEST_NC_CMD_BLOCK)), ==, 0);
    qtest_quit(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/tempest/chan/errors", test_errors);
    qtest_add_func("/tempest/chan/local", test_local);
    qtest_add_func("/tempest/chan/pair", test_pair);
    qtest_add_func("/tempest/chan/big", test_big);
    qtest_add_func("/tempest/chan/peer", test_peer);
    qtest_add_func("/tempest/chan/move-local", test_move_local);
    qtest_add_func("/tempest/chan/free-held", test_free_held);
    qtest_add_func("/tempest/chan/move-peer", test_move_peer);
    qtest_add_func("/tempest/chan/ready", test_ready);
    qtest_add_func("/tempest/chan/offer-idle", test_offer_idle);
    qtest_add_func("/tempest/chan/offer-here", test_offer_here);
    qtest_add_func("/tempest/chan/here-landing", test_here_landing);
    qtest_add_func("/tempest/chan/offer-peer", test_offer_peer);
    qtest_add_func("/tempest/chan/offer-pair", test_offer_pair);
    qtest_add_func("/tempest/chan/split-peer", test_split_peer);
    qtest_add_func("/tempest/chan/cmd-block", test_cmd_block);
    qtest_add_func("/tempest/chan/output-input", test_output_input);
    return g_test_run();
}
