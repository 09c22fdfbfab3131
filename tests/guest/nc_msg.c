/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The node controller's messaging interface through the device access
 * layer alone (tempest/nc.h; docs/node-controller.rst version 1.1), on
 * one node, no libtempest:
 *  - nc_init() sets up the four rings with TEMPEST_CMD_RING_SETUP;
 *  - RING_SETUP refuses a bad ring, a misaligned base, a slot count that
 *    is not a power of 2 and memory outside RAM, each with its reason;
 *  - a packet sent to this node on SQ0 and on SQ1 comes back in the RQ
 *    with source, network, KIND, WORD0-2 and payload intact, in order;
 *  - (1.11) nc_init() takes 4 KiB packet slots (a payload of 4064 bytes)
 *    when the device has them, and RING_SETUP refuses a slot shift out
 *    of range;
 *  - a slot to a node not in the cluster and one longer than a payload
 *    are rejected with SEND_ERROR events in the CQ;
 *  - (1.15) gather slots: payloads of 4 to 8160 bytes (around 4064 and
 *    4096) copied by the device from one to three ranges of RAM come
 *    back whole in the RQ's 8 KiB slots, byte for byte; a range outside
 *    RAM, one that runs past its end and one at address 0 are refused
 *    (SEND_ERROR BAD_RANGE, ERR_STATUS), and descriptors that do not
 *    add up to the length, or a set reserved word, or a length over
 *    8160, too (BAD_LEN), with nothing sent;
 *  - (1.15) nc_rq_copy() copies a received payload out of its RQ slot
 *    byte for byte; a source outside the RQ and a destination running
 *    past the end of RAM are refused (BAD_RANGE) with nothing copied;
 *  - TEMPEST_CMD_TIMER_ARM posts TIMER events carrying its arguments,
 *    in deadline order, not before the delay (TICKS register).
 * Prints "nc_msg ok".
 */
#include <stdio.h>
#include <string.h>

#include "tempest/nc.h"
#include "tempest/rt.h"

static unsigned failures;

#define CHECK(cond, ...) do {                                   \
    if (!(cond)) {                                              \
        failures++;                                             \
        printf("FAIL: " __VA_ARGS__);                           \
        printf("\n");                                           \
    }                                                           \
} while (0)

static struct nc_pkt *wait_rq(void)
{
    uint64_t t0 = rt_time_ns();
    struct nc_pkt *p;

    while ((p = nc_rq_peek()) == NULL) {
        if (rt_time_ns() - t0 > 2000000000ULL) {
            return NULL;
        }
    }
    return p;
}

static struct nc_event *wait_cq(void)
{
    uint64_t t0 = rt_time_ns();
    struct nc_event *e;

    while ((e = nc_cq_peek()) == NULL) {
        if (rt_time_ns() - t0 > 2000000000ULL) {
            return NULL;
        }
    }
    return e;
}

static void bad_setup(uint64_t ring, uint64_t base, uint64_t slots,
                      uint32_t want)
{
    uint64_t args[3] = { ring, base, slots };
    uint32_t reason = 0;
    uint32_t st = nc_cmd(TEMPEST_CMD_RING_SETUP, args, 3, 0, NULL, &reason);

    CHECK(st == TEMPEST_CMD_FAIL && reason == want,
          "RING_SETUP(%llu, 0x%llx, %llu): status %u reason %u (%s), "
          "expected reason %u", (unsigned long long)ring,
          (unsigned long long)base, (unsigned long long)slots,
          (unsigned)st, (unsigned)reason, nc_cmd_reason_name(reason),
          (unsigned)want);
}

static void send_self(unsigned net, uint32_t len, uint8_t seed)
{
    struct nc_pkt *p = nc_sq_claim(net);
    uint32_t i;

    CHECK(p != NULL, "SQ%u full", net);
    if (!p) {
        return;
    }
    p->node = (uint16_t)rt_node_id();
    p->kind = (uint8_t)(0x40 | net);
    p->word0 = 0x11110000u + seed;
    p->word1 = 0x2222222200000000ULL + seed;
    p->word2 = 0x3333333300000000ULL + seed;
    for (i = 0; i < len; i++) {
        ((uint8_t *)p + TEMPEST_PKT_DATA)[i] = (uint8_t)(seed + i);
    }
    nc_sq_post(net, p, len);
    nc_sq_doorbell(net);
}

static void recv_self(unsigned net, uint32_t len, uint8_t seed)
{
    struct nc_pkt *p = wait_rq();
    uint32_t i;

    CHECK(p != NULL, "packet %u did not come back", seed);
    if (!p) {
        return;
    }
    CHECK((p->ctl & TEMPEST_PKT_LEN_MASK) == len && p->node == rt_node_id()
          && p->net == net && p->kind == (0x40 | net) &&
          p->word0 == 0x11110000u + seed &&
          p->word1 == 0x2222222200000000ULL + seed &&
          p->word2 == 0x3333333300000000ULL + seed,
          "packet %u: ctl 0x%x node %u net %u kind 0x%x words 0x%x", seed,
          (unsigned)p->ctl, p->node, p->net, p->kind, (unsigned)p->word0);
    for (i = 0; i < len; i++) {
        if (((uint8_t *)p + TEMPEST_PKT_DATA)[i] != (uint8_t)(seed + i)) {
            CHECK(0, "packet %u: payload byte %u differs", seed, i);
            break;
        }
    }
    nc_rq_pop(p);
}

/* Source of the gather sends: byte i is gsrc_byte(i). */
static uint8_t gsrc[TEMPEST_PKT_MAX_PAYLOAD + 64] __attribute__((aligned(8)));

static uint8_t gsrc_byte(uint32_t i)
{
    return (uint8_t)(i * 13 + (i >> 8) + 5);
}

/*
 * A gather slot to this node on SQ0 of @len bytes (CTL's length) from
 * @n descriptors: descriptor k covers @cut[k] to @cut[k + 1] of gsrc
 * (@addr non-zero: descriptor 0 names @addr instead).  @rsvd: the last
 * descriptor's reserved word.
 */
static void send_gather(uint32_t len, const uint32_t *cut, unsigned n,
                        uint64_t addr, uint32_t rsvd)
{
    struct nc_pkt *p = nc_sq_claim(0);
    struct nc_gather *d;
    unsigned k;

    CHECK(p != NULL, "SQ0 full");
    if (!p) {
        return;
    }
    p->node = (uint16_t)rt_node_id();
    p->kind = 0x47;
    p->word0 = len;
    p->word1 = 0x6a7e;
    p->word2 = 0;
    d = (struct nc_gather *)p->data;
    for (k = 0; k < n; k++) {
        d[k].addr = (uintptr_t)gsrc + cut[k];
        d[k].len = cut[k + 1] - cut[k];
        d[k].rsvd = k + 1 == n ? rsvd : 0;
    }
    if (addr) {
        d[0].addr = addr;
    }
    nc_sq_post_gather(0, p, len);
    nc_sq_doorbell(0);
}

/* nc_rq_copy: the payload @b of @len bytes, out of its RQ slot. */
static void copy_out(const uint8_t *b, uint32_t len)
{
    static uint8_t dst[TEMPEST_PKT_MAX_PAYLOAD + 8];
    static struct nc_copy d;
    uint64_t ram_end = TEMPEST_RAM_BASE + rt_ram_size();
    uint32_t st, j;

    memset(dst, 0, sizeof(dst));
    st = nc_rq_copy(&d, dst + 4, b, len);
    CHECK(st == 0, "RQ_COPY of %u bytes: status %u", (unsigned)len,
          (unsigned)st);
    for (j = 0; j < len && st == 0; j++) {
        if (dst[4 + j] != gsrc_byte(j)) {
            CHECK(0, "RQ_COPY of %u bytes: byte %u is 0x%02x", (unsigned)len,
                  (unsigned)j, dst[4 + j]);
            break;
        }
    }
    CHECK(dst[3] == 0 && dst[4 + len] == 0, "RQ_COPY of %u bytes wrote "
          "outside its destination", (unsigned)len);
    memset(dst, 0, sizeof(dst));
    st = nc_rq_copy(&d, dst, gsrc, len);
    CHECK(st == TEMPEST_NC_ERR_BAD_RANGE && dst[0] == 0,
          "RQ_COPY from outside the RQ: status %u", (unsigned)st);
    st = nc_rq_copy(&d, (void *)(uintptr_t)(ram_end - len / 2), b, len);
    CHECK(st == TEMPEST_NC_ERR_BAD_RANGE,
          "RQ_COPY running past RAM: status %u", (unsigned)st);
}

static void gather_cases(void)
{
    static const uint32_t lens[] = { 4, 4064, 4065, 4096, 4128, 8160 };
    uint64_t ram_end = TEMPEST_RAM_BASE + rt_ram_size();
    uint32_t cut[4], i, k, len, errs0;
    struct nc_event *e;
    struct nc_pkt *p;
    const uint8_t *b;

    CHECK(nc_gather_present && nc_rq_payload == TEMPEST_PKT_MAX_PAYLOAD,
          "gather slots: present %d, RQ payload %u", nc_gather_present,
          (unsigned)nc_rq_payload);
    if (!nc_gather_present) {
        return;
    }
    for (i = 0; i < sizeof(gsrc); i++) {
        gsrc[i] = gsrc_byte(i);
    }
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        len = lens[i];
        /* 1, 2 and 3 descriptors: cuts at a third and two thirds. */
        for (k = 1; k <= 3 && k <= len; k++) {
            cut[0] = 0;
            cut[1] = k == 1 ? len : len / 3;
            cut[2] = k == 2 ? len : 2 * len / 3;
            cut[3] = len;
            send_gather(len, cut, k, 0, 0);
            p = wait_rq();
            CHECK(p && (p->ctl & TEMPEST_PKT_LEN_MASK) == len &&
                  p->kind == 0x47 && p->word0 == len && p->word1 == 0x6a7e,
                  "gather of %u bytes in %u: ctl 0x%x", (unsigned)len,
                  (unsigned)k, p ? (unsigned)p->ctl : 0u);
            if (!p) {
                continue;
            }
            b = (const uint8_t *)p + TEMPEST_PKT_DATA;
            for (uint32_t j = 0; j < len; j++) {
                if (b[j] != gsrc_byte(j)) {
                    CHECK(0, "gather of %u bytes in %u: byte %u is 0x%02x",
                          (unsigned)len, (unsigned)k, (unsigned)j, b[j]);
                    break;
                }
            }
            copy_out(b, len);
            nc_rq_pop(p);
        }
    }
    nc_rx_doorbell();

    /* Refused: each one SEND_ERROR, ERR_STATUS, no packet. */
    errs0 = nc_reg(TEMPEST_NC_SEND_ERRORS);
    cut[0] = 0;
    cut[1] = 64;
    cut[2] = 128;
    send_gather(64, cut, 1, ram_end, 0);                /* past RAM */
    CHECK(nc_reg(TEMPEST_NC_ERR_STATUS) == TEMPEST_NC_ERR_BAD_RANGE,
          "gather from outside RAM: ERR_STATUS %u",
          (unsigned)nc_reg(TEMPEST_NC_ERR_STATUS));
    send_gather(64, cut, 1, ram_end - 32, 0);           /* runs past it */
    send_gather(64, cut, 1, 8, 0);                      /* low memory */
    send_gather(128, cut, 1, 0, 0);                     /* short */
    send_gather(100, cut, 2, 0, 0);                     /* too much */
    send_gather(128, cut, 2, 0, 1);                     /* reserved */
    send_gather(TEMPEST_PKT_MAX_PAYLOAD + 4, cut, 1, 0, 0);
    CHECK(nc_reg(TEMPEST_NC_SEND_ERRORS) - errs0 == 7,
          "gather refusals: %u send errors, not 7",
          (unsigned)(nc_reg(TEMPEST_NC_SEND_ERRORS) - errs0));
    CHECK(nc_reg(TEMPEST_NC_ERR_STATUS) == TEMPEST_NC_ERR_BAD_LEN,
          "gather too long: ERR_STATUS %u",
          (unsigned)nc_reg(TEMPEST_NC_ERR_STATUS));
    for (i = 0; i < 7; i++) {
        uint32_t want = i < 3 ? TEMPEST_NC_ERR_BAD_RANGE :
                        TEMPEST_NC_ERR_BAD_LEN;

        e = wait_cq();
        CHECK(e && (e->ctl & TEMPEST_EV_TYPE_MASK) == TEMPEST_EV_SEND_ERROR &&
              e->b == want, "gather refusal %u: ctl 0x%x b %llu", i,
              e ? (unsigned)e->ctl : 0u, e ? (unsigned long long)e->b : 0ULL);
        if (e) {
            nc_cq_pop(e);
        }
    }
    CHECK(nc_rq_peek() == NULL, "a refused gather slot sent a packet");
    CHECK(nc_sq_drained(0), "refused gather slots not freed");
}

int main(void)
{
    uint64_t ram_end = TEMPEST_RAM_BASE + rt_ram_size();
    static uint8_t spare[8192] __attribute__((aligned(4096)));
    struct nc_event *e;
    struct nc_pkt *p;
    unsigned i;

    if (nc_init() != 0) {
        printf("nc_msg FAILED: nc_init\n");
        return 1;
    }
    bad_setup(TEMPEST_NUM_RINGS, (uintptr_t)spare, 4,
              TEMPEST_CMD_E_BAD_RING);
    bad_setup(TEMPEST_RING_SQ0, (uintptr_t)spare + 8, 4,
              TEMPEST_CMD_E_BAD_ALIGN);
    bad_setup(TEMPEST_RING_SQ0, (uintptr_t)spare, 3,
              TEMPEST_CMD_E_BAD_SIZE);
    bad_setup(TEMPEST_RING_SQ0, ram_end, 4, TEMPEST_CMD_E_BAD_ADDR);
    bad_setup(TEMPEST_RING_SQ0 | (TEMPEST_PKT_MAX_SHIFT + 1) << 8,
              (uintptr_t)spare, 4, TEMPEST_CMD_E_BAD_SIZE);
    bad_setup(TEMPEST_RING_CQ | TEMPEST_PKT_MIN_SHIFT << 8,
              (uintptr_t)spare, 4, TEMPEST_CMD_E_BAD_SIZE);
    CHECK(nc_pkt_payload == ((nc_reg(TEMPEST_NC_FEATURES) &
                              TEMPEST_NC_FEAT_BIG_SLOTS) ?
                             (1U << NC_PKT_SHIFT) - TEMPEST_PKT_DATA :
                             TEMPEST_PKT_PAYLOAD),
          "packet payload %u", (unsigned)nc_pkt_payload);

    /* Loopback, both networks, payloads from 0 to the maximum. */
    for (i = 0; i < 6; i++) {
        send_self(i & 1, i * 44, (uint8_t)i);
    }
    for (i = 0; i < 6; i++) {
        recv_self(i & 1, i * 44, (uint8_t)i);
    }
    send_self(0, TEMPEST_PKT_PAYLOAD, 98);
    recv_self(0, TEMPEST_PKT_PAYLOAD, 98);
    send_self(1, nc_pkt_payload, 99);
    recv_self(1, nc_pkt_payload, 99);
    nc_rx_doorbell();

    /* Rejected slots: bad destination, bad length. */
    p = nc_sq_claim(0);
    p->node = (uint16_t)(rt_num_nodes() + 7);
    nc_sq_post(0, p, 4);
    p = nc_sq_claim(0);
    p->node = (uint16_t)rt_node_id();
    nc_sq_post(0, p, nc_pkt_payload + 1);
    nc_sq_doorbell(0);
    for (i = 0; i < 2; i++) {
        uint32_t want = i ? TEMPEST_NC_ERR_BAD_LEN : TEMPEST_NC_ERR_BAD_DEST;

        e = wait_cq();
        CHECK(e && (e->ctl & TEMPEST_EV_TYPE_MASK) == TEMPEST_EV_SEND_ERROR &&
              e->b == want && e->c == 0,
              "send error event %u: ctl 0x%x b %llu", i,
              e ? (unsigned)e->ctl : 0u,
              e ? (unsigned long long)e->b : 0ULL);
        if (e) {
            nc_cq_pop(e);
        }
    }

    gather_cases();

    /*
     * Timers: armed out of order, they fire in deadline order.  Each
     * deadline is its delay after the moment of its arming, which lies
     * between the ticks read before and after it; the host may hold this
     * vCPU anywhere, so order is checked only between timers whose
     * deadlines cannot be the other way round.
     */
    {
        static const uint64_t delay[4] = { 0, 1000, 2000, 3000 };
        static const unsigned arm_order[3] = { 3, 1, 2 };
        uint64_t lo[4], hi[4];
        unsigned got[3], k, j, id;

        for (k = 0; k < 3; k++) {
            id = arm_order[k];
            lo[id] = nc_ticks() + delay[id];
            CHECK(nc_timer_arm(delay[id], id, 11 * id) ==
                  TEMPEST_CMD_SUCCESS, "arm %u", id);
            hi[id] = nc_ticks() + delay[id];
        }
        for (k = 0; k < 3; k++) {
            e = wait_cq();
            id = e ? (unsigned)e->a : 0;
            got[k] = id;
            CHECK(e && (e->ctl & TEMPEST_EV_TYPE_MASK) == TEMPEST_EV_TIMER &&
                  id >= 1 && id <= 3 && e->b == 11 * id &&
                  nc_ticks() >= lo[id],
                  "timer event %u: ctl 0x%x a %llu b %llu", k,
                  e ? (unsigned)e->ctl : 0u,
                  e ? (unsigned long long)e->a : 0ULL,
                  e ? (unsigned long long)e->b : 0ULL);
            if (e) {
                nc_cq_pop(e);
            }
            if (id < 1 || id > 3) {
                got[k] = 0;
            }
        }
        for (k = 0; k < 3; k++) {
            for (j = k + 1; j < 3; j++) {
                CHECK(!got[k] || !got[j] || (got[k] != got[j] &&
                      hi[got[j]] >= lo[got[k]]),
                      "timer %u fired before timer %u, whose deadline was "
                      "earlier (or twice)", got[k], got[j]);
            }
        }
    }
    nc_rx_doorbell();
    printf("nc_msg %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
