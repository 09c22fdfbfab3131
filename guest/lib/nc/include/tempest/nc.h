/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest-nc: the device access layer of the tempest node controller's
 * messaging interface (tempest/tempest-hw.h, version 1.1): the command
 * bank, the four rings in guest RAM, the doorbells, the interrupt
 * registers and the virtual clock; and the access tags of its tagged
 * memory (version 1.3).
 *
 * It is the one layer that touches those registers and rings; libtempest
 * (and later Strata and the bulk-transfer library) build on it.  It does
 * no locking of its own: one consumer drains the RQ and the CQ (the
 * protocol thread), and the sender of each send ring keeps the ring to
 * itself for as long as it needs (libtempest holds a lock per ring).
 *
 * Rings (allocated by nc_init() in guest RAM, each aligned to its slot
 * size):
 *   SQ0, SQ1  NC_SQ_SLOTS packet slots each of 1 << NC_PKT_SHIFT bytes
 *             (4 KiB, node controller 1.11; 256 bytes before): 256 KiB each
 *   RQ        NC_RQ_SLOTS packet slots of the same size: 1 MiB, enough to
 *             absorb a burst from every peer without holding back their
 *             credit (NC_RQ_SLOTS_GATHER slots of 8 KiB, also 1 MiB, with
 *             gather slots: below)
 *   CQ        NC_CQ_SLOTS event slots (32 bytes): 2 KiB
 * A packet carries up to nc_pkt_payload bytes (4064; 224 with 256-byte
 * slots, when the node controller is older than 1.11 or the memory for
 * larger rings is not there).  Every node of a cluster runs the same
 * library, so every node's slots are the same size (the device drops a
 * packet longer than its RQ's slots).
 * Gather slots (1.15, TEMPEST_NC_FEAT_GATHER; nc_gather_present): a send
 * slot may instead name ranges of RAM the device copies the payload from
 * when it takes the slot (nc_sq_post_gather), a packet of up to
 * nc_rq_payload bytes; the RQ then has NC_RQ_SLOTS_GATHER slots of 8 KiB
 * (NC_RQ_SHIFT_GATHER), so that a 4096-byte message is one packet.  Half
 * as many slots: the same 1 MiB (256 slots of 8 KiB made the one-way
 * stream of small messages 0.8-1.2 us a message against 0.6 us, docs/
 * fabric.rst "Gather sends and RQ_COPY"); nc_rq_slots() says which.
 * RQ and CQ slots are freed lazily: nc_rq_pop()/nc_cq_pop() clear the
 * slot's CTL word at once but ring RQ_DOORBELL only every NC_FREE_BATCH
 * slots, or when the caller asks (nc_rx_doorbell()), e.g. before it
 * sleeps.
 *
 * Polling (version 1.5, TEMPEST_NC_FEAT_POLL): a CPU that spins on the
 * rings says so with nc_poll(true) on every turn, so a fabric with
 * shared-memory links hands it what peers left there without the node's
 * QEMU main loop waking; and nc_poll(false) before it sleeps or goes back
 * to computing, so peers ring the node's doorbell again.
 */
#ifndef TEMPEST_NC_H
#define TEMPEST_NC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tempest/tempest-hw.h"

#define NC_SQ_SLOTS         64
#define NC_PKT_SHIFT        12
#define NC_RQ_SLOTS         256
#define NC_RQ_SHIFT_GATHER  13
#define NC_RQ_SLOTS_GATHER  (NC_RQ_SLOTS / 2)
#define NC_CQ_SLOTS         64
#define NC_FREE_BATCH       32

/* The node controller's interrupt, as a GIC INTID. */
#define NC_INTID            (32 + TEMPEST_NC_SPI)

/* A packet slot (SQ, RQ), laid out as TEMPEST_PKT_* say. */
struct nc_pkt {
    uint32_t ctl;           /* VALID | payload length, written last */
    uint16_t node;          /* SQ: destination; RQ: source */
    uint8_t net;            /* RQ: the network it came on */
    uint8_t kind;           /* the library's, passed on */
    uint32_t seq;           /* RQ: per (source, network) */
    uint32_t word0;         /* the library's, passed on */
    uint64_t word1;         /* the library's, passed on */
    uint64_t word2;         /* the library's, passed on */
    uint8_t data[TEMPEST_PKT_PAYLOAD];
};

/* A control event slot (CQ), laid out as TEMPEST_EV_* say. */
struct nc_event {
    uint32_t ctl;           /* VALID | type */
    uint32_t node;
    uint64_t a;
    uint64_t b;
    uint64_t c;
};

_Static_assert(sizeof(struct nc_pkt) == TEMPEST_PKT_SIZE, "packet slot");
_Static_assert(offsetof(struct nc_pkt, node) == TEMPEST_PKT_NODE, "NODE");
_Static_assert(offsetof(struct nc_pkt, net) == TEMPEST_PKT_NET, "NET");
_Static_assert(offsetof(struct nc_pkt, kind) == TEMPEST_PKT_KIND, "KIND");
_Static_assert(offsetof(struct nc_pkt, seq) == TEMPEST_PKT_SEQ, "SEQ");
_Static_assert(offsetof(struct nc_pkt, word0) == TEMPEST_PKT_WORD0, "WORD0");
_Static_assert(offsetof(struct nc_pkt, word1) == TEMPEST_PKT_WORD1, "WORD1");
_Static_assert(offsetof(struct nc_pkt, word2) == TEMPEST_PKT_WORD2, "WORD2");
_Static_assert(offsetof(struct nc_pkt, data) == TEMPEST_PKT_DATA, "DATA");
_Static_assert(sizeof(struct nc_event) == TEMPEST_EV_SIZE, "event slot");
_Static_assert(offsetof(struct nc_event, a) == TEMPEST_EV_A, "EV_A");
_Static_assert(offsetof(struct nc_event, c) == TEMPEST_EV_C, "EV_C");

/* One ring as the guest sees it (private to the layer; read-only above). */
struct nc_ring {
    uint8_t *base;
    uint32_t slots;         /* a power of 2 */
    uint32_t slot_size;
    uint32_t next;          /* SQ: next slot to fill; RQ, CQ: to read */
    uint32_t freed;         /* RQ, CQ: freed since the last doorbell */
};

extern struct nc_ring nc_rings[TEMPEST_NUM_RINGS];
/* The payload a packet slot of SQ0, SQ1 and the RQ holds (nc_init). */
extern uint32_t nc_pkt_payload;
/* The payload an RQ slot holds: nc_pkt_payload, or more with gathers. */
extern uint32_t nc_rq_payload;
/* True once nc_init() has found TEMPEST_NC_FEAT_GATHER (1.15). */
extern bool nc_gather_present;
/*
 * True once nc_init() has found TEMPEST_NC_FEAT_COLL_WAIT (1.21): a read
 * of TEMPEST_NC_COLL_WAIT waits for the pending collective (tempest-hw.h).
 */
extern bool nc_coll_wait_present;
/*
 * True once nc_init() has found TEMPEST_NC_FEAT_BCAST_WAIT (1.22): a read
 * of TEMPEST_NC_BCAST_WAIT pops a broadcast word after waiting for one.
 */
extern bool nc_bcast_wait_present;

/* A descriptor of a gather slot's payload (TEMPEST_GATHER_*). */
struct nc_gather {
    uint64_t addr;          /* guest physical (= virtual: identity map) */
    uint32_t len;           /* > 0 */
    uint32_t rsvd;          /* 0 */
};

_Static_assert(sizeof(struct nc_gather) == TEMPEST_GATHER_DESC_SIZE,
               "gather descriptor");

/* A copy descriptor of RQ_COPY (TEMPEST_COPY_*). */
struct nc_copy {
    uint64_t src;
    uint64_t dst;
    uint32_t len;
    uint32_t status;        /* the device's answer */
};

_Static_assert(sizeof(struct nc_copy) == TEMPEST_COPY_SIZE, "copy");

/*
 * nc_dma_reachable: returns true if [@p, @p + @len) lies in the RAM the
 * node controller reaches (rt_ram_base(), rt_ram_size()), where a
 * pointer is the guest physical address the device takes.
 */
bool nc_dma_reachable(const void *p, size_t len);

/*
 * nc_rq_copy: (1.15, nc_gather_present) the device copies @len bytes
 * (1 to TEMPEST_PKT_MAX_PAYLOAD) from @src, inside an RQ slot, to @dst
 * (nc_dma_reachable) with one host copy, through the descriptor @d (in
 * reachable RAM, 8-aligned, the caller's alone meanwhile).  Returns 0, or
 * the TEMPEST_NC_ERR_* that refused it (nothing copied).
 */
uint32_t nc_rq_copy(struct nc_copy *d, void *dst, const void *src,
                    uint32_t len);

/* True once nc_init() has found TEMPEST_NC_FEAT_POLL (see nc_poll). */
extern bool nc_poll_present;
/* True once nc_init() has found TEMPEST_NC_FEAT_POLL_PEEKS (nc_poll_peek). */
extern bool nc_poll_peeks_present;
/*
 * The poll hint (TEMPEST_NC_POLL_HINT, 1.9): a word of guest RAM that
 * peers on this host set when a POLL would find something; NULL when the
 * node controller or its fabric has none (then POLL on every turn).
 */
extern volatile uint32_t *nc_poll_hint;
/* A polling CPU writes POLL at least every NC_POLL_EVERY turns. */
#define NC_POLL_EVERY       64
/* True once nc_init() has found TEMPEST_NC_FEAT_CMD_BLOCK (see nc_cmd). */
extern bool nc_cmd_block_present;
/*
 * Counts the commands nc_cmd() and nc_cmd_once() have begun, on any CPU:
 * each writes its CPU's command bank (by the registers, or by a block,
 * which leaves the bank as they would).  A library that stages the bank
 * itself and keeps what it wrote there (libstrata) knows that what it
 * staged may be gone when this moved.
 */
extern uint32_t nc_bank_cmds;
/* True once nc_init() has found TEMPEST_NC_FEAT_TAG_UPGRADE. */
extern bool nc_tag_upgrade_present;
/* What the node controller was last told through POLL (see nc_poll). */
extern bool nc_polling;
/* ... and whether that was POLL_PEEKS (nc_poll_peek). */
extern bool nc_poll_peeking;

/* ---- registers ----------------------------------------------------- */

static inline uint32_t nc_reg(unsigned off)
{
    return *(volatile uint32_t *)(uintptr_t)(TEMPEST_NC_BASE + off); /* MMIO */
}

static inline void nc_reg_write(unsigned off, uint32_t v)
{
    *(volatile uint32_t *)(uintptr_t)(TEMPEST_NC_BASE + off) = v; /* MMIO */
}

/* An aligned 8-byte write: the pair at @off and @off + 4, one access. */
static inline void nc_reg_write64(unsigned off, uint64_t v)
{
    *(volatile uint64_t *)(uintptr_t)(TEMPEST_NC_BASE + off) = v; /* MMIO */
}

static inline uint64_t nc_reg64(unsigned off)
{
    return *(volatile uint64_t *)(uintptr_t)(TEMPEST_NC_BASE + off); /* MMIO */
}

/*
 * nc_ticks: returns the node controller's virtual time in ticks
 * (TEMPEST_TICK_NS each: 1 us), the clock of its timers.
 */
static inline uint64_t nc_ticks(void)
{
    return nc_reg64(TEMPEST_NC_TICKS_LO);
}

/*
 * nc_init: checks that the node controller has the messaging interface
 * (FEATURES MSG, CMD and TIMER), allocates the four rings and sets them
 * up with TEMPEST_CMD_RING_SETUP.  Returns 0, or -1 after printing on the
 * console what is missing or which command failed and why (the rings are
 * then unusable).  Calling it again after success does nothing and
 * returns 0.
 */
int nc_init(void);

/* nc_ready: returns true once nc_init() has succeeded. */
bool nc_ready(void);

/*
 * nc_cmd: runs one command of the calling CPU's command bank: writes
 * @nargs (at most TEMPEST_NC_CMD_NUM_ARGS) arguments from @args and the
 * operation @op, then reads CMD_COMMIT, again while it answers RETRY, at
 * most @tries times (0: forever).  IRQs are masked meanwhile, so an
 * interrupt handler on the same CPU can use the bank too.  Once nc_init()
 * has found CMD_BLOCK (1.14) a try is instead one device access, the
 * command described in a block on the caller's stack (no IRQ masking
 * needed): the bank's 7 accesses of a 4-argument command become 1, the
 * same command run the same way (docs/node-controller.rst); a block the
 * device refuses (a stack outside the RAM it reaches: ERR_STATUS says
 * so) runs through the registers instead.  Returns
 * TEMPEST_CMD_SUCCESS (and the 64-bit result in *@result if @result is not
 * NULL), TEMPEST_CMD_FAIL (the reason in *@reason if not NULL) or
 * TEMPEST_CMD_RETRY when the tries ran out.  Returns TEMPEST_CMD_FAIL
 * with reason TEMPEST_CMD_E_BAD_OP, touching nothing, if @nargs is too
 * large.
 */
uint32_t nc_cmd(uint32_t op, const uint64_t *args, unsigned nargs,
                unsigned tries, uint64_t *result, uint32_t *reason);

/*
 * nc_cmd_once: one try of a command, which stays in the calling CPU's
 * bank: for a command whose RETRY means "begun, look again" (a
 * fetch-and-op waiting for its home node's reply), the next look is a
 * read of TEMPEST_NC_CMD_COMMIT.  One device access with CMD_BLOCK (1.14),
 * else the register sequence.  The caller masks IRQs until it is done
 * with the bank.  Returns as nc_cmd() (@nargs at most
 * TEMPEST_NC_CMD_NUM_ARGS).
 */
uint32_t nc_cmd_once(uint32_t op, const uint64_t *args, unsigned nargs,
                     uint64_t *result, uint32_t *reason);

/*
 * nc_cmd_reason_name, nc_err_name: return a short description of a
 * TEMPEST_CMD_E_* reason or a TEMPEST_NC_ERR_* code ("unknown" for any
 * other value).  Never NULL.
 */
const char *nc_cmd_reason_name(uint32_t reason);
const char *nc_err_name(uint32_t err);

/*
 * nc_failure_pause: a node that ends because a peer is gone (the
 * libraries' "link lost" ends) waits about half a second first, so that
 * the launcher records the node that failed first, not this one.
 */
void nc_failure_pause(void);

/*
 * nc_timer_arm: arms one device timer (TEMPEST_CMD_TIMER_ARM) to post a
 * TEMPEST_EV_TIMER event carrying @a and @b to the CQ after @ticks ticks.
 * Tries once.  Returns TEMPEST_CMD_SUCCESS, TEMPEST_CMD_RETRY (every
 * timer is armed: try later) or TEMPEST_CMD_FAIL (@ticks out of range).
 */
uint32_t nc_timer_arm(uint64_t ticks, uint64_t a, uint64_t b);

/*
 * nc_chan: one instruction of the channel controller (TEMPEST_CMD_CHAN,
 * docs/chan.rst): @op a TEMPEST_CHAN_OP_*, @port, and its two operands
 * (nc_chan6: four, for OUTPUT_INPUT); waits while it answers RETRY.
 * Returns as nc_cmd(), the reason of a failure in *@reason (0
 * otherwise).
 */
static inline uint32_t nc_chan6(uint64_t op, uint64_t port, uint64_t a2,
                                uint64_t a3, uint64_t a4, uint64_t a5,
                                uint64_t *result, uint32_t *reason)
{
    uint64_t args[6] = { op, port, a2, a3, a4, a5 };

    *reason = 0;
    return nc_cmd(TEMPEST_CMD_CHAN, args, a4 || a5 ? 6 : 4, 0, result,
                  reason);
}

static inline uint32_t nc_chan(uint64_t op, uint64_t port, uint64_t a2,
                               uint64_t a3, uint64_t *result,
                               uint32_t *reason)
{
    return nc_chan6(op, port, a2, a3, 0, 0, result, reason);
}

/* ---- tagged memory (version 1.3, tags.c) --------------------------- */

/*
 * nc_tags_present: returns true if the node controller has tagged memory
 * (TEMPEST_NC_FEAT_TAGS and a TAGMEM_SIZE above 0).
 */
bool nc_tags_present(void);

/*
 * nc_tag_set: gives every block of tagged memory in [@pa & ~(block - 1),
 * + @len) the access tag @tag (TEMPEST_TAG_*), with TEMPEST_CMD_TAG_SET.
 * @pa is a physical address in tagged memory (TEMPEST_TAGMEM_BASE +
 * offset), @len a multiple of TEMPEST_TAG_BLK_SIZE.  A change that takes
 * access away is complete on every vCPU when it returns (it reads
 * CMD_COMMIT until SUCCESS); IRQs are masked meanwhile.  Returns 0, or
 * -1 and the device's reason (TEMPEST_CMD_E_*) in *@reason (if not NULL)
 * when the device refuses: bad tag, length or address.
 */
int nc_tag_set(uint64_t pa, uint64_t len, unsigned tag, uint32_t *reason);

/*
 * nc_tag_get: returns the access tag (TEMPEST_TAG_*) of the block of
 * tagged memory holding physical address @pa, or -1 if @pa is not in
 * tagged memory.
 */
int nc_tag_get(uint64_t pa);

/* ---- send rings ---------------------------------------------------- */

/*
 * nc_sq_claim: returns the free slot at the tail of send ring @net
 * (TEMPEST_NET_REQUEST or _REPLY), or NULL if the ring is full (the device
 * has not taken that slot yet: ring the doorbell and try again later).
 * The slot stays the caller's until nc_sq_post().  @net must be 0 or 1.
 */
static inline struct nc_pkt *nc_sq_claim(unsigned net)
{
    struct nc_ring *r = &nc_rings[net];
    struct nc_pkt *p = (struct nc_pkt *)(r->base +
                       (size_t)(r->next & (r->slots - 1)) * r->slot_size);

    if (__atomic_load_n(&p->ctl, __ATOMIC_ACQUIRE) != 0) {
        return NULL;
    }
    return p;
}

/*
 * nc_sq_fill: writes a one-packet message into the claimed slot @p: for
 * node @dest, KIND @kind, WORD0 @w0, WORD1 @w1 (WORD2, NET and SEQ 0:
 * the device writes those it owns), and @len payload bytes from @data.
 */
static inline void nc_sq_fill(struct nc_pkt *p, unsigned dest, uint8_t kind,
                              uint32_t w0, uint64_t w1, const void *data,
                              uint32_t len)
{
    p->node = (uint16_t)dest;
    p->net = 0;
    p->kind = kind;
    p->seq = 0;
    p->word0 = w0;
    p->word1 = w1;
    p->word2 = 0;
    __builtin_memcpy(p->data, data, len);
}

/*
 * nc_sq_post: hands the slot @p (from nc_sq_claim(@net)) to the device
 * with @len payload bytes: writes CTL = VALID | len last, with release
 * ordering, and moves the tail on.  The device sees it at the next
 * doorbell (nc_sq_doorbell).  @len above nc_pkt_payload is the device's
 * to reject (SEND_ERROR event).
 */
static inline void nc_sq_post(unsigned net, struct nc_pkt *p, uint32_t len)
{
    __atomic_store_n(&p->ctl, TEMPEST_PKT_VALID | len, __ATOMIC_RELEASE);
    nc_rings[net].next++;
}

/*
 * nc_sq_post_gather: as nc_sq_post(), for a slot whose payload holds
 * descriptors (struct nc_gather) of the @len bytes to send; the device
 * copies them when it takes the slot, so they must not change until
 * then (nc_sq_drained).  Descriptors that do not add up to @len, or a
 * range outside RAM, are the device's to reject (SEND_ERROR event).
 */
static inline void nc_sq_post_gather(unsigned net, struct nc_pkt *p,
                                     uint32_t len)
{
    __atomic_store_n(&p->ctl, TEMPEST_PKT_VALID | TEMPEST_PKT_GATHER | len,
                     __ATOMIC_RELEASE);
    nc_rings[net].next++;
}

/*
 * nc_sq_drained: returns true if the device has taken every slot posted
 * on send ring @net (the slot before the tail is free again).
 */
static inline bool nc_sq_drained(unsigned net)
{
    struct nc_ring *r = &nc_rings[net];
    struct nc_pkt *p = (struct nc_pkt *)(r->base +
                       (size_t)((r->next - 1) & (r->slots - 1)) *
                       r->slot_size);

    return __atomic_load_n(&p->ctl, __ATOMIC_ACQUIRE) == 0;
}

/* nc_sq_doorbell: tells the device that send ring @net has work. */
static inline void nc_sq_doorbell(unsigned net)
{
    __asm__ volatile("dmb oshst" : : : "memory");
    nc_reg_write(TEMPEST_NC_SQ_DOORBELL, net);
}

/* ---- receive and event rings -------------------------------------- */

/*
 * nc_rq_peek: returns the packet at the head of the RQ if the device has
 * written it (VALID, read with acquire ordering), else NULL.  The slot
 * stays valid until nc_rq_pop().
 */
static inline struct nc_pkt *nc_rq_peek(void)
{
    struct nc_ring *r = &nc_rings[TEMPEST_RING_RQ];
    struct nc_pkt *p = (struct nc_pkt *)(r->base +
                       (size_t)(r->next & (r->slots - 1)) * r->slot_size);

    if (!(__atomic_load_n(&p->ctl, __ATOMIC_ACQUIRE) & TEMPEST_PKT_VALID)) {
        return NULL;
    }
    return p;
}

/* nc_rq_slots: the RQ's slots (NC_RQ_SLOTS, or NC_RQ_SLOTS_GATHER). */
static inline uint32_t nc_rq_slots(void)
{
    return nc_rings[TEMPEST_RING_RQ].slots;
}

/*
 * nc_rq_fill_at_least: returns true if the RQ holds at least @n packets
 * not yet popped (1 <= @n <= nc_rq_slots()): the device writes in order, so
 * that is whether the @n-th slot from the head is valid.
 */
static inline bool nc_rq_fill_at_least(uint32_t n)
{
    struct nc_ring *r = &nc_rings[TEMPEST_RING_RQ];
    struct nc_pkt *p = (struct nc_pkt *)(r->base +
                       (size_t)((r->next + n - 1) & (r->slots - 1)) *
                       r->slot_size);

    return __atomic_load_n(&p->ctl, __ATOMIC_ACQUIRE) & TEMPEST_PKT_VALID;
}

/*
 * nc_rx_doorbell: rings RQ_DOORBELL if any RQ or CQ slot was freed since
 * the last time, so the device can use them.
 */
static inline void nc_rx_doorbell(void)
{
    if (nc_rings[TEMPEST_RING_RQ].freed || nc_rings[TEMPEST_RING_CQ].freed) {
        nc_rings[TEMPEST_RING_RQ].freed = 0;
        nc_rings[TEMPEST_RING_CQ].freed = 0;
        __asm__ volatile("dmb oshst" : : : "memory");
        nc_reg_write(TEMPEST_NC_RQ_DOORBELL, 1);
    }
}

/*
 * A pop of a slot that is not the ring's head (a bug of the caller: the
 * head would then skip a slot still valid, read a lap later, out of
 * order): counted, and reported once on the console.
 */
extern uint32_t nc_pops_misplaced;
void nc_pop_misplaced(unsigned ring, const void *slot);

/*
 * nc_rx_give_back: the slots freed so far given back to the device
 * (every NC_FREE_BATCH of them): by RQ_DOORBELL, or, while this CPU
 * polls, by a POLL as the CPU said it last.  A reader that is never idle
 * (a stream faster than it) writes no other POLL: without these its
 * device would count it as not polling after the fabric's idle period
 * (1 ms), and a peer on this host whose packet found the RQ full would
 * ring its link's doorbell, a socket both QEMUs' main loops then work
 * for, rather than set the poll hint; and what such a peer left in the
 * link's ring would wait there until the RQ was empty (docs/fabric.rst,
 * "A reader that is never idle").  Out of line: it runs once a batch, and
 * the hot code of a reader must fit its page (rt.h, RT_HOT_RX).
 */
void nc_rx_give_back(void);

/* Frees the head slot of @ring (@ctl its CTL word); counts it in freed. */
static inline void nc_ring_pop_quiet(unsigned ring, uint32_t *ctl)
{
    struct nc_ring *r = &nc_rings[ring];

    if ((uint8_t *)ctl != r->base + (size_t)(r->next & (r->slots - 1)) *
                                    r->slot_size) {
        nc_pop_misplaced(ring, ctl);
    }
    __atomic_store_n(ctl, 0, __ATOMIC_RELEASE);
    r->next++;
    r->freed++;
}

static inline void nc_ring_pop(unsigned ring, uint32_t *ctl)
{
    nc_ring_pop_quiet(ring, ctl);
    if (nc_rings[ring].freed >= NC_FREE_BATCH) {
        nc_rx_give_back();
    }
}

/*
 * nc_rq_pop: frees the slot at the head of the RQ (which nc_rq_peek()
 * returned; the caller is done reading it) and moves the head on.  The
 * doorbell is rung every NC_FREE_BATCH slots.
 */
static inline void nc_rq_pop(struct nc_pkt *p)
{
    nc_ring_pop(TEMPEST_RING_RQ, &p->ctl);
}

/*
 * nc_rq_pop_quiet: nc_rq_pop() that gives nothing back by itself: for a
 * CPU that takes from the RQ beside the one that polls (a client of a
 * dedicated protocol thread), whose POLL word it must not write; it rings
 * nc_rx_doorbell() itself.
 */
static inline void nc_rq_pop_quiet(struct nc_pkt *p)
{
    nc_ring_pop_quiet(TEMPEST_RING_RQ, &p->ctl);
}

/* nc_cq_peek: as nc_rq_peek(), for the CQ. */
static inline struct nc_event *nc_cq_peek(void)
{
    struct nc_ring *r = &nc_rings[TEMPEST_RING_CQ];
    struct nc_event *e = (struct nc_event *)(r->base +
                         (size_t)(r->next & (r->slots - 1)) * TEMPEST_EV_SIZE);

    if (!(__atomic_load_n(&e->ctl, __ATOMIC_ACQUIRE) & TEMPEST_EV_VALID)) {
        return NULL;
    }
    return e;
}

/* nc_cq_pop: as nc_rq_pop(), for the CQ. */
static inline void nc_cq_pop(struct nc_event *e)
{
    nc_ring_pop(TEMPEST_RING_CQ, &e->ctl);
}

/* The POLL register's write, after the ring stores before it. */
static inline void nc_poll_reg(uint32_t v)
{
    __asm__ volatile("dmb oshst" : : : "memory");
    nc_reg_write(TEMPEST_NC_POLL, v);
}

/*
 * A POLL write does what RQ_DOORBELL does too (the device looks at the
 * RQ and CQ again): the slots freed so far are given back by it.
 */
static inline void nc_poll_write(uint32_t v)
{
    nc_rings[TEMPEST_RING_RQ].freed = 0;
    nc_rings[TEMPEST_RING_CQ].freed = 0;
    nc_poll_reg(v);
}

/*
 * nc_poll: tells the node controller that the calling CPU polls the rings
 * (@on: take what peers left in shared memory now; the device moves it
 * into the RQ and CQ and raises IRQ_RQ / IRQ_CQ as usual) or stops
 * polling (!@on: it is about to sleep or to compute; peers ring the
 * doorbell from now on).  Writes TEMPEST_NC_POLL; does nothing and
 * returns false when the device has no POLL register (before nc_init()
 * too), else returns true.  Each call is a device access: under TCG it
 * takes QEMU's global lock.
 */
static inline bool nc_poll(bool on)
{
    if (!nc_poll_present) {
        return false;
    }
    /*
     * 0 only if 1 was said, by whoever said it: a sleeper must not leave
     * the node marked polling because another loop marked it (its peers
     * would not ring it until the device's 1 ms fallback).  The flags
     * first: a handler that interrupts this and frees its
     * NC_FREE_BATCH-th slot (nc_rx_give_back) says what this says, not
     * POLL 1 after a POLL 0 that would then be the CPU's last word.
     */
    if (on || nc_polling) {
        nc_polling = on;
        nc_poll_peeking = false;
        nc_poll_write(on ? 1 : 0);
    }
    return true;
}

/*
 * nc_poll_peek: nc_poll(true) from a loop that also reads the RQ's slots
 * itself on every turn (nc_rq_peek): a peer on this host that writes a
 * packet straight into a slot (docs/fabric.rst) then sets neither the
 * poll hint nor the doorbell, which would only cost this loop a POLL; the
 * device's counters and IRQ_RQ follow at the next POLL or doorbell
 * (1.23, TEMPEST_NC_POLL_PEEKS).  Only for such a loop: a loop that
 * waits for IRQ_RQ must say nc_poll(true), on its first turn if
 * nc_poll_peeking (a peeking loop it is nested in said so last).
 * nc_poll(true) before 1.23.
 */
static inline bool nc_poll_peek(void)
{
    if (!nc_poll_peeks_present) {
        return nc_poll(true);
    }
    nc_polling = true;
    nc_poll_peeking = true;
    nc_poll_write(1 | TEMPEST_NC_POLL_PEEKS);
    return true;
}

/*
 * nc_poll_other: nc_poll_peek() (@on) or nc_poll(false) from a CPU that is
 * not the rings' consumer (a client's spin while libtempest's protocol
 * thread owns the RQ and CQ): the same POLL write, but the consumer's
 * counts of slots freed are left alone (the write gives them back too:
 * the consumer's next doorbell is at worst one more than needed, never
 * one fewer, and its counts are not written from two CPUs).
 */
static inline void nc_poll_other(bool on)
{
    if (!nc_poll_present || (!on && !nc_polling)) {
        return;
    }
    nc_polling = on;
    nc_poll_peeking = on && nc_poll_peeks_present;
    nc_poll_reg(on ? 1 | (nc_poll_peeking ? TEMPEST_NC_POLL_PEEKS : 0) : 0);
}

/*
 * nc_poll_due: should turn @turn (counted from the loop's last work) of a
 * polling loop write POLL?  Always without a poll hint; with one, on the
 * first NC_POLL_EVERY turns after work (a message of many packets is
 * still arriving: measured, leaving those to the hint made the 4096-byte
 * round trip slower), when the word is set (a peer left something in
 * shared memory: the POLL takes it and clears the word), when the device
 * does not know yet that the CPU polls, and every NC_POLL_EVERY turns
 * (the device's 1 ms idle check).  Otherwise a plain load, no device
 * access, so a CPU spinning idle leaves QEMU's global lock to the others
 * (a local fault's exception entry needs it).  nc_poll_idle_due: the
 * same without the turns after work (a loop whose last work was no
 * message: libtempest's protocol thread after a fault).
 */
static inline bool nc_poll_idle_due(unsigned turn)
{
    return !nc_poll_hint || !nc_polling || turn % NC_POLL_EVERY == 0 ||
           __atomic_load_n(nc_poll_hint, __ATOMIC_ACQUIRE) != 0;
}

static inline bool nc_poll_due(unsigned turn)
{
    return turn < NC_POLL_EVERY || nc_poll_idle_due(turn);
}

/*
 * nc_spin_us: how long a polling CPU should spin before it sleeps: the
 * launcher's SPIN_US hint (it says 0 when the nodes outnumber the host's
 * cores: a spinning vCPU holds one), or @dflt on a node controller
 * before 1.5.
 */
static inline unsigned nc_spin_us(unsigned dflt)
{
    return nc_poll_present ? nc_reg(TEMPEST_NC_SPIN_US) : dflt;
}

/* ---- interrupt ----------------------------------------------------- */

/* nc_irq_enable: sets IRQ_ENABLE to @bits (TEMPEST_NC_IRQ_*). */
static inline void nc_irq_enable(uint32_t bits)
{
    nc_reg_write(TEMPEST_NC_IRQ_ENABLE, bits);
}

/* nc_irq_ack: clears the IRQ_STATUS bits @bits. */
/*
 * nc_tag_upgrade: sets the tag of the @len bytes of tagged memory at @pa
 * to @tag with one device access (TEMPEST_NC_TAG_UPGRADE), for a change
 * that adds access to every block (the caller knows the old tags);
 * returns 0, or -1 without doing anything if the device has no such
 * register or the run is longer than one write takes: use nc_tag_set().
 */
static inline int nc_tag_upgrade(uint64_t pa, uint64_t len, unsigned tag)
{
    uint64_t nblks = len >> TEMPEST_TAG_BLK_SHIFT;

    if (!nc_tag_upgrade_present || nblks == 0 ||
        nblks > TEMPEST_TAG_UPGRADE_MAX) {
        return -1;
    }
    /* The data written before the upgrade is visible first. */
    __asm__ volatile("dsb ish" : : : "memory");
    nc_reg_write64(TEMPEST_NC_TAG_UPGRADE,
                   TEMPEST_TAG_UPGRADE((pa - TEMPEST_TAGMEM_BASE) >>
                                       TEMPEST_TAG_BLK_SHIFT, nblks, tag));
    return 0;
}

static inline void nc_irq_ack(uint32_t bits)
{
    nc_reg_write(TEMPEST_NC_IRQ_ACK, bits);
}

#endif /* TEMPEST_NC_H */
