/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest-nc: ring allocation and set-up, the command bank, names of
 * codes.  The ring fast paths are inline in tempest/nc.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tempest/nc.h"
#include "tempest/rt.h"

#define NEED_FEATURES   (TEMPEST_NC_FEAT_MSG | TEMPEST_NC_FEAT_TIMER | \
                         TEMPEST_NC_FEAT_CMD)
/* The rings, timers and command bank came with version 1.1. */
#define NEED_VERSION    ((1U << 16) | 1U)

struct nc_ring nc_rings[TEMPEST_NUM_RINGS];
uint32_t nc_pkt_payload = TEMPEST_PKT_PAYLOAD;
uint32_t nc_rq_payload = TEMPEST_PKT_PAYLOAD;
bool nc_gather_present;
bool nc_coll_wait_present;
bool nc_bcast_wait_present;
bool nc_poll_present;
bool nc_poll_peeks_present;
bool nc_tag_upgrade_present;
bool nc_cmd_block_present;
uint32_t nc_bank_cmds;
bool nc_polling;
bool nc_poll_peeking;
volatile uint32_t *nc_poll_hint;

static bool ready;
uint32_t nc_pops_misplaced;

static const char *const ring_names[TEMPEST_NUM_RINGS] = {
    "SQ0", "SQ1", "RQ", "CQ",
};

const char *nc_cmd_reason_name(uint32_t reason)
{
    switch (reason) {
    case TEMPEST_CMD_E_NONE:
        return "no reason";
    case TEMPEST_CMD_E_BAD_OP:
        return "no such operation";
    case TEMPEST_CMD_E_BAD_RING:
        return "no such ring";
    case TEMPEST_CMD_E_BAD_ADDR:
        return "address not inside the node's RAM";
    case TEMPEST_CMD_E_BAD_ALIGN:
        return "not aligned (a ring to its slot size, a fetch-and-op "
               "word to 8 bytes)";
    case TEMPEST_CMD_E_BAD_SIZE:
        return "slot count not a power of 2 in range";
    case TEMPEST_CMD_E_OVERLAP:
        return "overlaps another ring";
    case TEMPEST_CMD_E_BAD_TICKS:
        return "delay out of range";
    case TEMPEST_CMD_E_BAD_TAG:
        return "no such access tag";
    case TEMPEST_CMD_E_BAD_LEN:
        return "length zero, too long, or not whole blocks";
    case TEMPEST_CMD_E_BAD_NODE:
        return "no such node in the cluster";
    case TEMPEST_CMD_E_PEER_DOWN:
        return "that node is gone";
    case TEMPEST_CMD_E_BAD_FOP:
        return "no such fetch-and-op";
    case TEMPEST_CMD_E_REMOTE:
        return "the other node refused it (outside its RAM, or no "
               "posted buffer large enough)";
    case TEMPEST_CMD_E_BAD_CHAN_OP:
        return "no such channel instruction";
    case TEMPEST_CMD_E_BAD_PORT:
        return "not a live port of this node";
    case TEMPEST_CMD_E_PORT_STATE:
        return "the port's state forbids it";
    case TEMPEST_CMD_E_NO_PORTS:
        return "the port table is full";
    case TEMPEST_CMD_E_CLOSED:
        return "the companion was freed";
    case TEMPEST_CMD_E_TOO_BIG:
        return "longer than the input buffer";
    case TEMPEST_CMD_E_CHAN_TYPE:
        return "data where a port is input, or a port where data is";
    default:
        return "unknown";
    }
}

const char *nc_err_name(uint32_t err)
{
    switch (err) {
    case TEMPEST_NC_ERR_NONE:
        return "no error";
    case TEMPEST_NC_ERR_BAD_OFFSET:
        return "no register at that offset";
    case TEMPEST_NC_ERR_BAD_SIZE:
        return "bad access size or alignment";
    case TEMPEST_NC_ERR_READ_ONLY:
        return "write to a read-only register";
    case TEMPEST_NC_ERR_WRITE_ONLY:
        return "read of a write-only register";
    case TEMPEST_NC_ERR_BAD_DEST:
        return "destination not in the cluster";
    case TEMPEST_NC_ERR_BAD_LEN:
        return "length larger than a packet payload";
    case TEMPEST_NC_ERR_PEER_DOWN:
        return "destination node is gone";
    case TEMPEST_NC_ERR_NO_RING:
        return "ring not set up";
    case TEMPEST_NC_ERR_BAD_VALUE:
        return "doorbell value out of range";
    case TEMPEST_NC_ERR_DMA:
        return "ring memory not accessible";
    case TEMPEST_NC_ERR_TAG_REFUSED:
        return "TAG_UPGRADE that takes access away, or out of range";
    case TEMPEST_NC_ERR_BAD_RANGE:
        return "gather or RQ_COPY range refused";
    default:
        return "unknown";
    }
}

/* A command block (TEMPEST_NC_CMD_BLOCK, 1.14), in the caller's RAM. */
struct nc_cmd_block {
    uint32_t op;
    uint32_t nargs;
    uint64_t arg[TEMPEST_NC_CMD_NUM_ARGS];
    uint32_t status;
    uint32_t reason;
    uint64_t result;
};

_Static_assert(sizeof(struct nc_cmd_block) == TEMPEST_CMDB_SIZE, "block");
_Static_assert(offsetof(struct nc_cmd_block, nargs) == TEMPEST_CMDB_NARGS,
               "NARGS");
_Static_assert(offsetof(struct nc_cmd_block, arg) == TEMPEST_CMDB_ARG(0),
               "ARG");
_Static_assert(offsetof(struct nc_cmd_block, status) == TEMPEST_CMDB_STATUS,
               "STATUS");
_Static_assert(offsetof(struct nc_cmd_block, reason) == TEMPEST_CMDB_REASON,
               "REASON");
_Static_assert(offsetof(struct nc_cmd_block, result) == TEMPEST_CMDB_RESULT,
               "RESULT");

/* A STATUS the device never writes: the block was refused, not run. */
#define CMDB_UNSET          0xFFFFFFFFU

/*
 * nc_cmd() with one device access a try: the description and the answer
 * in a block on this stack (guest physical address == pointer, on bare
 * metal and in a Linux process alike).  No IRQ masking: nothing of the
 * command waits in the bank between accesses for a handler to disturb.
 * Returns CMDB_UNSET, nothing run, if the device refused the block (a
 * stack outside the RAM it reaches): the caller uses the registers.
 */
static uint32_t cmd_block(uint32_t op, const uint64_t *args, unsigned nargs,
                          unsigned tries, uint64_t *result, uint32_t *reason)
{
    struct nc_cmd_block blk;
    volatile struct nc_cmd_block *v = &blk;
    unsigned n = 0;
    uint32_t status;

    blk.op = op;
    blk.nargs = nargs;
    memcpy(blk.arg, args, nargs * sizeof(args[0]));
    for (;;) {
        blk.status = CMDB_UNSET;
        /* The device reads the block at the access. */
        __asm__ volatile("dmb oshst" : : : "memory");
        nc_reg_write64(TEMPEST_NC_CMD_BLOCK, (uintptr_t)&blk);
        __asm__ volatile("" : : : "memory");
        status = v->status;
        if (status == CMDB_UNSET) {
            return status;
        }
        if (status != TEMPEST_CMD_RETRY || (tries && ++n >= tries)) {
            break;
        }
        __asm__ volatile("yield");
    }
    if (status == TEMPEST_CMD_SUCCESS && result) {
        *result = v->result;
    }
    if (status == TEMPEST_CMD_FAIL && reason) {
        *reason = v->reason;
    }
    return status;
}

/*
 * One try of a command through the calling CPU's bank registers, its
 * result or reason read as the status says (IRQs are the caller's).
 */
static uint32_t cmd_regs(uint32_t op, const uint64_t *args, unsigned nargs,
                         uint64_t *result, uint32_t *reason)
{
    uint32_t status;

    /* One 8-byte access an argument: each access is a VM exit. */
    for (unsigned i = 0; i < nargs; i++) {
        nc_reg_write64(TEMPEST_NC_CMD_ARG(i), args[i]);
    }
    nc_reg_write(TEMPEST_NC_CMD_OP, op);
    status = nc_reg(TEMPEST_NC_CMD_COMMIT);
    if (status == TEMPEST_CMD_SUCCESS && result) {
        *result = nc_reg64(TEMPEST_NC_CMD_RESULT);
    }
    if (status == TEMPEST_CMD_FAIL && reason) {
        *reason = nc_reg(TEMPEST_NC_CMD_REASON);
    }
    return status;
}

uint32_t nc_cmd(uint32_t op, const uint64_t *args, unsigned nargs,
                unsigned tries, uint64_t *result, uint32_t *reason)
{
    uint32_t status;
    uint64_t flags;
    unsigned n = 0;

    if (nargs > TEMPEST_NC_CMD_NUM_ARGS) {
        if (reason) {
            *reason = TEMPEST_CMD_E_BAD_OP;
        }
        return TEMPEST_CMD_FAIL;
    }
    __atomic_fetch_add(&nc_bank_cmds, 1, __ATOMIC_RELAXED);
    if (nc_cmd_block_present) {
        status = cmd_block(op, args, nargs, tries, result, reason);
        if (status != CMDB_UNSET) {
            return status;
        }
    }
    for (;;) {
        flags = rt_irq_save();
        status = cmd_regs(op, args, nargs, result, reason);
        rt_irq_restore(flags);
        if (status != TEMPEST_CMD_RETRY || (tries && ++n >= tries)) {
            return status;
        }
        __asm__ volatile("yield");
    }
}

uint32_t nc_cmd_once(uint32_t op, const uint64_t *args, unsigned nargs,
                     uint64_t *result, uint32_t *reason)
{
    uint32_t status;

    __atomic_fetch_add(&nc_bank_cmds, 1, __ATOMIC_RELAXED);
    if (nc_cmd_block_present) {
        status = cmd_block(op, args, nargs, 1, result, reason);
        if (status != CMDB_UNSET) {
            return status;
        }
    }
    return cmd_regs(op, args, nargs, result, reason);
}

uint32_t nc_timer_arm(uint64_t ticks, uint64_t a, uint64_t b)
{
    uint64_t args[3] = { ticks, a, b };

    return nc_cmd(TEMPEST_CMD_TIMER_ARM, args, 3, 1, NULL, NULL);
}

/*
 * Sets up @ring with @slots slots of 1 << @shift bytes (@shift 0: the
 * default size, @slot_size).  Only each slot's CTL word is cleared: a
 * large slot's pages are touched only as far as packets fill them.
 */
static int setup_ring(unsigned ring, uint32_t slots, uint32_t slot_size,
                      unsigned shift)
{
    struct nc_ring *r = &nc_rings[ring];
    size_t bytes;
    uint64_t args[3];
    uint32_t status, reason = 0;

    if (shift) {
        slot_size = 1U << shift;
    }
    bytes = (size_t)slots * slot_size;
    r->base = aligned_alloc(slot_size, bytes);
    if (r->base == NULL) {
        printf("tempest-nc: node %u: no memory for the %s ring "
               "(%zu bytes)\n", rt_node_id(), ring_names[ring], bytes);
        return -1;
    }
    for (uint32_t i = 0; i < slots; i++) {
        memset(r->base + (size_t)i * slot_size, 0,
               slot_size < 64 ? slot_size : 64);
    }
    r->slots = slots;
    r->slot_size = slot_size;
    r->next = 0;
    r->freed = 0;
    args[0] = ring | (uint64_t)shift << 8;
    args[1] = (uintptr_t)r->base;
    args[2] = slots;
    status = nc_cmd(TEMPEST_CMD_RING_SETUP, args, 3, 0, NULL, &reason);
    if (status != TEMPEST_CMD_SUCCESS) {
        printf("tempest-nc: node %u: setting up the %s ring (%u slots at "
               "%p) failed: %s (reason %u)\n", rt_node_id(),
               ring_names[ring], (unsigned)slots, (void *)r->base,
               nc_cmd_reason_name(reason), (unsigned)reason);
        return -1;
    }
    return 0;
}

/*
 * A cache line of its own for the word peers set, named to the device;
 * kept only if the device's fabric took it (it reads back).
 */
static void setup_poll_hint(void)
{
    uint32_t *word = aligned_alloc(64, 64);

    if (word == NULL) {
        return;
    }
    memset(word, 0, 64);
    nc_reg_write64(TEMPEST_NC_POLL_HINT, (uintptr_t)word);
    if (nc_reg64(TEMPEST_NC_POLL_HINT) == (uintptr_t)word) {
        nc_poll_hint = word;
    } else {
        free(word);
    }
}

int nc_init(void)
{
    uint32_t features = nc_reg(TEMPEST_NC_FEATURES);
    unsigned shift = 0, rq_shift;

    if (ready) {
        return 0;
    }
    if ((features & NEED_FEATURES) != NEED_FEATURES ||
        nc_reg(TEMPEST_NC_VERSION) < NEED_VERSION ||
        (nc_reg(TEMPEST_NC_VERSION) >> 16) != TEMPEST_NC_VERSION_MAJOR) {
        printf("tempest-nc: node %u: the node controller (version "
               "0x%08lx, features 0x%08lx) has no messaging interface: "
               "version 1.1 or later with features MSG, TIMER and CMD is "
               "needed\n",
               rt_node_id(), (unsigned long)nc_reg(TEMPEST_NC_VERSION),
               (unsigned long)features);
        return -1;
    }
    /* Larger packet slots (1.11): a 4096-byte message in two packets. */
    if ((features & TEMPEST_NC_FEAT_BIG_SLOTS) &&
        nc_reg(TEMPEST_NC_VERSION) >= ((1U << 16) | 11U)) {
        shift = NC_PKT_SHIFT;
    }
    /* Gather slots (1.15): a 4096-byte message in one packet. */
    nc_gather_present = shift && (features & TEMPEST_NC_FEAT_GATHER) &&
                        nc_reg(TEMPEST_NC_VERSION) >= ((1U << 16) | 15U);
    rq_shift = nc_gather_present ? NC_RQ_SHIFT_GATHER : shift;
    if (setup_ring(TEMPEST_RING_SQ0, NC_SQ_SLOTS, TEMPEST_PKT_SIZE, shift) ||
        setup_ring(TEMPEST_RING_SQ1, NC_SQ_SLOTS, TEMPEST_PKT_SIZE, shift) ||
        setup_ring(TEMPEST_RING_RQ, nc_gather_present ? NC_RQ_SLOTS_GATHER :
                   NC_RQ_SLOTS, TEMPEST_PKT_SIZE, rq_shift) ||
        setup_ring(TEMPEST_RING_CQ, NC_CQ_SLOTS, TEMPEST_EV_SIZE, 0)) {
        return -1;
    }
    nc_pkt_payload = (1U << (shift ? shift : TEMPEST_PKT_MIN_SHIFT)) -
                     TEMPEST_PKT_DATA;
    nc_rq_payload = (1U << (rq_shift ? rq_shift : TEMPEST_PKT_MIN_SHIFT)) -
                    TEMPEST_PKT_DATA;
    nc_poll_present = (features & TEMPEST_NC_FEAT_POLL) &&
                      nc_reg(TEMPEST_NC_VERSION) >= ((1U << 16) | 5U);
    nc_poll_peeks_present = nc_poll_present &&
                            (features & TEMPEST_NC_FEAT_POLL_PEEKS) &&
                            nc_reg(TEMPEST_NC_VERSION) >= ((1U << 16) | 23U);
    nc_tag_upgrade_present = (features & TEMPEST_NC_FEAT_TAG_UPGRADE) &&
                             nc_reg(TEMPEST_NC_VERSION) >= ((1U << 16) | 7U);
    nc_cmd_block_present = (features & TEMPEST_NC_FEAT_CMD_BLOCK) &&
                           nc_reg(TEMPEST_NC_VERSION) >= ((1U << 16) | 14U);
    nc_coll_wait_present = (features & TEMPEST_NC_FEAT_COLL_WAIT) &&
                           nc_reg(TEMPEST_NC_VERSION) >= ((1U << 16) | 21U);
    nc_bcast_wait_present = (features & TEMPEST_NC_FEAT_BCAST_WAIT) &&
                            nc_reg(TEMPEST_NC_VERSION) >= ((1U << 16) | 22U);
    if (nc_poll_present && (features & TEMPEST_NC_FEAT_POLL_HINT) &&
        nc_reg(TEMPEST_NC_VERSION) >= ((1U << 16) | 9U)) {
        setup_poll_hint();
    }
    ready = true;
    return 0;
}

void nc_pop_misplaced(unsigned ring, const void *slot)
{
    const struct nc_ring *r = &nc_rings[ring];

    if (__atomic_fetch_add(&nc_pops_misplaced, 1, __ATOMIC_RELAXED) == 0) {
        printf("tempest-nc: node %u: %s slot %lu popped while its head is "
               "slot %lu (a library bug: a packet or event is skipped and "
               "read a lap late)\n", rt_node_id(), ring_names[ring],
               (unsigned long)(((const uint8_t *)slot - r->base) /
                               r->slot_size),
               (unsigned long)(r->next & (r->slots - 1)));
    }
}

bool nc_dma_reachable(const void *p, size_t len)
{
    uint64_t a = (uintptr_t)p, base = rt_ram_base(), size = rt_ram_size();

    return a >= base && a - base <= size && len <= size - (a - base);
}

uint32_t nc_rq_copy(struct nc_copy *d, void *dst, const void *src,
                    uint32_t len)
{
    d->src = (uintptr_t)src;
    d->dst = (uintptr_t)dst;
    d->len = len;
    d->status = TEMPEST_NC_ERR_BAD_VALUE;   /* if the device never saw it */
    __asm__ volatile("dmb oshst" : : : "memory");
    nc_reg_write64(TEMPEST_NC_RQ_COPY, (uintptr_t)d);
    return __atomic_load_n(&d->status, __ATOMIC_ACQUIRE);
}

bool nc_ready(void)
{
    return ready;
}

void nc_failure_pause(void)
{
    uint64_t end = rt_time_ns() + 500000000ULL;

    while (rt_time_ns() < end) {
        rt_cpu_sleep(100000);
    }
}

/* Every NC_FREE_BATCH slots freed (nc.h). */
void nc_rx_give_back(void)
{
    if (!nc_polling) {
        nc_rx_doorbell();
    } else if (nc_poll_peeking) {
        nc_poll_peek();
    } else {
        nc_poll(true);
    }
}
