/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller (after Stanford FLASH's MAGIC): the device.
 *
 * This file decodes the registers, dispatches committed commands through
 * the table the engines filled (tempest-nc-internal.h), and runs the life
 * cycle: realize (the core, then each engine, then the fabric and the
 * migration blocker, undone in reverse on failure), unrealize, reset and
 * the VMState, with one subsection per engine.  The register map is
 * defined in ONE place, include/standard-headers/tempest/tempest-hw.h,
 * and described in docs/node-controller.rst.
 */

#include "qemu/osdep.h"
#include "exec/tcg-mmio-fast.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "hw/irq.h"
#include "hw/qdev-properties.h"
#include "hw/registerfields.h"
#include "migration/blocker.h"
#include "migration/vmstate.h"
#include "system/runstate.h"
#include "hw/core/cpu.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "tempest-nc-internal.h"
#include "trace.h"

REG32(MAGIC, TEMPEST_NC_MAGIC)
REG32(VERSION, TEMPEST_NC_VERSION)
REG32(NODE_ID, TEMPEST_NC_NODE_ID)
REG32(NUM_NODES, TEMPEST_NC_NUM_NODES)
REG32(PAGE_SIZE, TEMPEST_NC_PAGE_SIZE)
REG32(TAG_BLK_SIZE, TEMPEST_NC_TAG_BLK_SIZE)
REG32(FEATURES, TEMPEST_NC_FEATURES)
REG32(NUM_CPUS, TEMPEST_NC_NUM_CPUS)
REG32(RAM_BASE_LO, TEMPEST_NC_RAM_BASE_LO)
REG32(RAM_BASE_HI, TEMPEST_NC_RAM_BASE_HI)
REG32(RAM_SIZE_LO, TEMPEST_NC_RAM_SIZE_LO)
REG32(RAM_SIZE_HI, TEMPEST_NC_RAM_SIZE_HI)
REG32(CMDLINE_LEN, TEMPEST_NC_CMDLINE_LEN)
REG32(SPIN_US, TEMPEST_NC_SPIN_US)
REG32(ERR_STATUS, TEMPEST_NC_ERR_STATUS)
REG32(ERR_INFO, TEMPEST_NC_ERR_INFO)
REG32(ERR_COUNT, TEMPEST_NC_ERR_COUNT)
REG32(SCRATCH, TEMPEST_NC_SCRATCH)
REG32(EXIT, TEMPEST_NC_EXIT)
    FIELD(EXIT, STATUS, 0, 8)
REG32(FABRIC_STATE, TEMPEST_NC_FABRIC_STATE)
REG32(PEERS_UP, TEMPEST_NC_PEERS_UP)
REG32(PEERS_DOWN, TEMPEST_NC_PEERS_DOWN)
REG32(DROPPED, TEMPEST_NC_DROPPED)
REG32(TICKS_LO, TEMPEST_NC_TICKS_LO)
REG32(TICKS_HI, TEMPEST_NC_TICKS_HI)
REG32(IRQ_STATUS, TEMPEST_NC_IRQ_STATUS)
REG32(IRQ_ENABLE, TEMPEST_NC_IRQ_ENABLE)
REG32(IRQ_ACK, TEMPEST_NC_IRQ_ACK)
REG32(SQ_DOORBELL, TEMPEST_NC_SQ_DOORBELL)
REG32(RQ_DOORBELL, TEMPEST_NC_RQ_DOORBELL)
REG32(POLL, TEMPEST_NC_POLL)
REG32(SQ0_HEAD, TEMPEST_NC_SQ0_HEAD)
REG32(SQ1_HEAD, TEMPEST_NC_SQ1_HEAD)
REG32(RQ_TAIL, TEMPEST_NC_RQ_TAIL)
REG32(CQ_TAIL, TEMPEST_NC_CQ_TAIL)
REG32(TX_PACKETS, TEMPEST_NC_TX_PACKETS)
REG32(RX_PACKETS, TEMPEST_NC_RX_PACKETS)
REG32(SEND_ERRORS, TEMPEST_NC_SEND_ERRORS)
REG32(TX_STALLS, TEMPEST_NC_TX_STALLS)
REG32(CMD_OP, TEMPEST_NC_CMD_OP)
REG32(CMD_COMMIT, TEMPEST_NC_CMD_COMMIT)
REG32(CMD_REASON, TEMPEST_NC_CMD_REASON)
REG32(CMD_RESULT_LO, TEMPEST_NC_CMD_RESULT)
REG32(CMD_RESULT_HI, TEMPEST_NC_CMD_RESULT + 4)
REG32(COLL_STATUS, TEMPEST_NC_COLL_STATUS)
REG32(COLL_SEQ, TEMPEST_NC_COLL_SEQ)
REG32(COLL_RESULT_LO, TEMPEST_NC_COLL_RESULT)
REG32(COLL_RESULT_HI, TEMPEST_NC_COLL_RESULT + 4)
REG32(COLL_ERROR, TEMPEST_NC_COLL_ERROR)
REG32(COLL_FANOUT, TEMPEST_NC_COLL_FANOUT)
REG32(BCAST_SENT, TEMPEST_NC_BCAST_SENT)
REG32(BCAST_AVAIL, TEMPEST_NC_BCAST_AVAIL)
REG32(BCAST_POP, TEMPEST_NC_BCAST_POP)
REG32(BCAST_SRC, TEMPEST_NC_BCAST_SRC)
REG32(BCAST_VALUE_LO, TEMPEST_NC_BCAST_VALUE)
REG32(BCAST_VALUE_HI, TEMPEST_NC_BCAST_VALUE + 4)
REG32(AOR_SET, TEMPEST_NC_AOR_SET)
    FIELD(AOR_SET, BIT, 0, 1)
REG32(AOR_GLOBAL, TEMPEST_NC_AOR_GLOBAL)
REG32(BCAST_LOST, TEMPEST_NC_BCAST_LOST)
REG32(TAGMEM_SIZE_LO, TEMPEST_NC_TAGMEM_SIZE_LO)
REG32(TAGMEM_SIZE_HI, TEMPEST_NC_TAGMEM_SIZE_HI)
REG32(TAG_FAULTS, TEMPEST_NC_TAG_FAULTS)
REG32(TAG_FLUSHES, TEMPEST_NC_TAG_FLUSHES)
REG32(XFER_ACTIVE, TEMPEST_NC_XFER_ACTIVE)
REG32(XFER_SENT_LO, TEMPEST_NC_XFER_SENT_LO)
REG32(XFER_SENT_HI, TEMPEST_NC_XFER_SENT_HI)
REG32(XFER_RECV_LO, TEMPEST_NC_XFER_RECV_LO)
REG32(XFER_RECV_HI, TEMPEST_NC_XFER_RECV_HI)
REG32(XFER_WAITING, TEMPEST_NC_XFER_WAITING)
REG32(FOP_SHARED, TEMPEST_NC_FOP_SHARED)
REG32(COLL_SHARED, TEMPEST_NC_COLL_SHARED)
REG32(COLL_SLEPT, TEMPEST_NC_COLL_SLEPT)
REG32(COLL_WOKEN, TEMPEST_NC_COLL_WOKEN)
REG32(RX_DIRECT, TEMPEST_NC_RX_DIRECT)
REG32(TX_DIRECT, TEMPEST_NC_TX_DIRECT)
REG32(RX_WOKEN, TEMPEST_NC_RX_WOKEN)
REG32(BCAST_SHARED, TEMPEST_NC_BCAST_SHARED)
REG32(COLL_WAITED, TEMPEST_NC_COLL_WAITED)
REG32(BCAST_WAITED, TEMPEST_NC_BCAST_WAITED)
REG32(BCAST_WRITTEN, TEMPEST_NC_BCAST_WRITTEN)
REG32(XFER_PUT_LO, TEMPEST_NC_XFER_PUT_LO)
REG32(XFER_PUT_HI, TEMPEST_NC_XFER_PUT_HI)
REG32(XFER_SYS_USED, TEMPEST_NC_XFER_SYS_USED)
REG32(XFER_PARKED, TEMPEST_NC_XFER_PARKED)
REG32(TAG_UPGRADE, TEMPEST_NC_TAG_UPGRADE)
REG32(TAG_UPGRADE_HI, TEMPEST_NC_TAG_UPGRADE + 4)
REG32(CHAN_DROPPED, TEMPEST_NC_CHAN_DROPPED)
REG32(CHAN_USED, TEMPEST_NC_CHAN_USED)
REG32(CHAN_MOVES, TEMPEST_NC_CHAN_MOVES)
REG32(CHAN_FWDS, TEMPEST_NC_CHAN_FWDS)
REG32(CHAN_RESENT, TEMPEST_NC_CHAN_RESENT)
REG32(CHAN_MIGDROPS, TEMPEST_NC_CHAN_MIGDROPS)
REG32(POLL_HINT, TEMPEST_NC_POLL_HINT)
REG32(POLL_HINT_HI, TEMPEST_NC_POLL_HINT + 4)
REG32(RQ_COPY, TEMPEST_NC_RQ_COPY)
REG32(RQ_COPY_HI, TEMPEST_NC_RQ_COPY + 4)
REG32(XFER_PULL_LO, TEMPEST_NC_XFER_PULL_LO)
REG32(XFER_PULL_HI, TEMPEST_NC_XFER_PULL_HI)
REG32(CMD_BLOCK, TEMPEST_NC_CMD_BLOCK)
REG32(CMD_BLOCK_HI, TEMPEST_NC_CMD_BLOCK_HI)

#define TEMPEST_NC_FEATURES_V1 \
    (TEMPEST_NC_FEAT_EXIT | TEMPEST_NC_FEAT_CMDLINE | TEMPEST_NC_FEAT_FABRIC | \
     TEMPEST_NC_FEAT_MSG | TEMPEST_NC_FEAT_TIMER | TEMPEST_NC_FEAT_CMD | \
     TEMPEST_NC_FEAT_COLL | TEMPEST_NC_FEAT_TAGS | TEMPEST_NC_FEAT_XFER | \
     TEMPEST_NC_FEAT_POLL | TEMPEST_NC_FEAT_SYSSPACE | \
     TEMPEST_NC_FEAT_TAG_UPGRADE | TEMPEST_NC_FEAT_CHAN | \
     TEMPEST_NC_FEAT_POLL_HINT | TEMPEST_NC_FEAT_BIG_SLOTS | \
     TEMPEST_NC_FEAT_CMD_BLOCK | \
     TEMPEST_NC_FEAT_GATHER | TEMPEST_NC_FEAT_COLL_WAIT | \
     TEMPEST_NC_FEAT_BCAST_WAIT | TEMPEST_NC_FEAT_POLL_PEEKS)
#define CMD_ARGS_END TEMPEST_NC_CMD_ARG(TEMPEST_NC_CMD_NUM_ARGS)

/* The engines, in the order they are realized (and reset). */
static const TempestNCEngine *const tempest_nc_engines[] = {
    &tempest_nc_tags_engine,
    &tempest_nc_msg_engine,
    &tempest_nc_coll_engine,
    &tempest_nc_xfer_engine,
    &tempest_nc_chan_engine,
};

/* The accessing vCPU's command bank; bank 0 for qtest (no CPU). */
static TempestCmdBank *tempest_nc_bank(TempestNCState *s)
{
    int cpu = current_cpu ? current_cpu->cpu_index : 0;

    return &s->bank[cpu < TEMPEST_MAX_CPUS ? cpu : 0];
}

/*
 * FLASH's final read: the engine that registered the op validates, then
 * acts; nothing happened before.
 */
static uint32_t tempest_nc_commit(TempestNCState *s, TempestCmdBank *b)
{
    TempestNCCommandFn *fn = b->op < TEMPEST_NC_NUM_OPS ? s->cmd[b->op] :
                             NULL;
    uint32_t status;

    b->reason = TEMPEST_CMD_E_NONE;
    b->result = 0;
    status = fn ? fn(s, b) : tempest_nc_cmd_fail(b, TEMPEST_CMD_E_BAD_OP);
    trace_tempest_nc_command(s->node_id, b->op, b->arg[0], b->arg[1],
                             status, b->reason);
    if (status == TEMPEST_CMD_FAIL) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: node %u: command %u failed, "
                      "reason %u\n", TYPE_TEMPEST_NC, s->node_id, b->op,
                      b->reason);
    }
    return status;
}

/*
 * CMD_BLOCK: the command bank's register sequence in one access, the
 * command's description and its answer in a block of the guest's RAM at
 * @addr (TEMPEST_CMDB_*).  The bank is the writing vCPU's, left as the
 * register sequence would leave it.
 */
static void tempest_nc_cmd_block(TempestNCState *s, uint64_t addr)
{
    TempestCmdBank *b = tempest_nc_bank(s);
    uint8_t in[TEMPEST_CMDB_STATUS];
    uint8_t out[TEMPEST_CMDB_SIZE - TEMPEST_CMDB_STATUS];
    uint32_t nargs, status, reason;
    uint64_t result = 0;

    if (!QEMU_IS_ALIGNED(addr, 8) ||
        !tempest_nc_in_ram(s, addr, TEMPEST_CMDB_SIZE) ||
        !tempest_nc_dma_read(s, addr, in, sizeof(in))) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_VALUE, A_CMD_BLOCK, 8);
        return;
    }
    nargs = ldl_le_p(in + TEMPEST_CMDB_NARGS);
    if (nargs > TEMPEST_NC_CMD_NUM_ARGS) {
        /* As the library's nc_cmd(): refused, the bank untouched. */
        status = TEMPEST_CMD_FAIL;
        reason = TEMPEST_CMD_E_BAD_OP;
    } else {
        for (uint32_t i = 0; i < nargs; i++) {
            b->arg[i] = ldq_le_p(in + TEMPEST_CMDB_ARG(i));
        }
        b->op = ldl_le_p(in + TEMPEST_CMDB_OP);
        status = tempest_nc_commit(s, b);
        reason = b->reason;
        result = b->result;
    }
    stl_le_p(out, status);
    /* Offsets within out: a pointer past out's end is undefined. */
    stl_le_p(out + (TEMPEST_CMDB_REASON - TEMPEST_CMDB_STATUS), reason);
    stq_le_p(out + (TEMPEST_CMDB_RESULT - TEMPEST_CMDB_STATUS), result);
    trace_tempest_nc_cmd_block(s->node_id, addr, nargs, status);
    if (!tempest_nc_dma_write(s, addr + TEMPEST_CMDB_STATUS, out,
                              sizeof(out))) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_VALUE, A_CMD_BLOCK, 8);
    }
}

static bool tempest_nc_read32(TempestNCState *s, hwaddr offset,
                              uint32_t *value)
{
    switch (offset) {
    case A_MAGIC:
        *value = TEMPEST_NC_MAGIC_VALUE;
        return true;
    case A_VERSION:
        *value = TEMPEST_NC_VERSION_VALUE;
        return true;
    case A_NODE_ID:
        *value = s->node_id;
        return true;
    case A_NUM_NODES:
        *value = s->num_nodes;
        return true;
    case A_PAGE_SIZE:
        *value = 1U << TEMPEST_PAGE_SHIFT;
        return true;
    case A_TAG_BLK_SIZE:
        *value = 1U << TEMPEST_TAG_BLK_SHIFT;
        return true;
    case A_FEATURES:
        *value = TEMPEST_NC_FEATURES_V1 &
                 ~(s->poll_hint_on ? 0 : TEMPEST_NC_FEAT_POLL_HINT) &
                 ~(s->chan_on ? 0 : TEMPEST_NC_FEAT_CHAN);
        return true;
    case A_NUM_CPUS:
        *value = s->num_cpus;
        return true;
    case A_RAM_BASE_LO:
        *value = extract64(s->ram_base, 0, 32);
        return true;
    case A_RAM_BASE_HI:
        *value = extract64(s->ram_base, 32, 32);
        return true;
    case A_RAM_SIZE_LO:
        *value = extract64(s->ram_size, 0, 32);
        return true;
    case A_RAM_SIZE_HI:
        *value = extract64(s->ram_size, 32, 32);
        return true;
    case A_CMDLINE_LEN:
        *value = s->cmdline_len;
        return true;
    case A_SPIN_US:
        *value = s->spin_us;
        return true;
    case A_ERR_STATUS:
        *value = s->err_status;
        return true;
    case A_ERR_INFO:
        *value = s->err_info;
        return true;
    case A_ERR_COUNT:
        *value = s->err_count;
        return true;
    case A_SCRATCH:
        *value = s->scratch;
        return true;
    case A_FABRIC_STATE:
        *value = tempest_fabric_state(s->fabric);
        return true;
    case A_PEERS_UP:
        *value = tempest_fabric_peers_up(s->fabric);
        return true;
    case A_PEERS_DOWN:
        *value = s->peers_down;
        return true;
    case A_DROPPED:
        *value = s->dropped;
        return true;
    case A_TICKS_LO:
    case A_TICKS_HI:
        *value = extract64(qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) /
                           TEMPEST_TICK_NS, offset == A_TICKS_LO ? 0 : 32, 32);
        return true;
    case A_IRQ_STATUS:
        *value = s->irq_status;
        return true;
    case A_IRQ_ENABLE:
        *value = s->irq_enable;
        return true;
    case A_SQ0_HEAD:
    case A_SQ1_HEAD:
        *value = s->ring[(offset - A_SQ0_HEAD) / 4].idx;
        return true;
    case A_RQ_TAIL:
        tempest_nc_rq_sync(s);
        *value = s->ring[TEMPEST_RING_RQ].idx;
        return true;
    case A_CQ_TAIL:
        *value = s->ring[TEMPEST_RING_CQ].idx;
        return true;
    case A_TX_PACKETS:
        *value = s->tx_packets;
        return true;
    case A_RX_PACKETS:
        tempest_nc_rq_sync(s);
        *value = s->rx_packets;
        return true;
    case A_SEND_ERRORS:
        *value = s->send_errors;
        return true;
    case A_TX_STALLS:
        *value = s->tx_stalls;
        return true;
    case A_CMD_OP:
        *value = tempest_nc_bank(s)->op;
        return true;
    case A_CMD_COMMIT:
        *value = tempest_nc_commit(s, tempest_nc_bank(s));
        return true;
    case A_CMD_REASON:
        *value = tempest_nc_bank(s)->reason;
        return true;
    case A_CMD_RESULT_LO:
    case A_CMD_RESULT_HI:
        *value = extract64(tempest_nc_bank(s)->result,
                           offset == A_CMD_RESULT_LO ? 0 : 32, 32);
        return true;
    case A_COLL_STATUS:
        /* Spinning on it sees a collective combined in the shared area. */
        tempest_nc_coll_shm_check(s);
        *value = s->coll_status;
        return true;
    case A_COLL_SHARED:
        *value = s->coll_shm_count;
        return true;
    case A_COLL_SLEPT:
        *value = s->coll_shm_slept;
        return true;
    case A_COLL_WOKEN:
        *value = s->coll_shm_woken;
        return true;
    case A_COLL_WAITED:
        *value = s->coll_shm_waited;
        return true;
    case A_BCAST_WAITED:
        *value = s->bcast_waited;
        return true;
    case A_RX_DIRECT:
        tempest_nc_rq_sync(s);
        *value = s->rx_peers;
        return true;
    case A_TX_DIRECT:
        *value = s->tx_direct;
        return true;
    case A_RX_WOKEN:
        *value = s->rx_woken;
        return true;
    case A_COLL_SEQ:
        *value = s->coll_seq_done;
        return true;
    case A_COLL_RESULT_LO:
    case A_COLL_RESULT_HI:
        *value = extract64(s->coll_result,
                           offset == A_COLL_RESULT_LO ? 0 : 32, 32);
        return true;
    case A_COLL_ERROR:
        *value = s->coll_error;
        return true;
    case A_COLL_FANOUT:
        *value = s->coll_fanout;
        return true;
    case A_BCAST_SENT:
        tempest_nc_bcast_look(s);
        *value = s->bcast_sent;
        return true;
    case A_BCAST_AVAIL:
        tempest_nc_bcast_look(s);
        *value = s->bcast_len;
        return true;
    case A_BCAST_SHARED:
        *value = s->bcast_shared;
        return true;
    case A_BCAST_WRITTEN:
        *value = s->bcast_written;
        return true;
    case A_BCAST_POP:
        *value = tempest_nc_bcast_pop(s);
        return true;
    case A_BCAST_SRC:
        *value = s->bcast_src;
        return true;
    case A_BCAST_VALUE_LO:
    case A_BCAST_VALUE_HI:
        *value = extract64(s->bcast_value,
                           offset == A_BCAST_VALUE_LO ? 0 : 32, 32);
        return true;
    case A_AOR_SET:
        *value = s->aor_set;
        return true;
    case A_AOR_GLOBAL:
        *value = s->aor_global;
        return true;
    case A_BCAST_LOST:
        *value = s->bcast_lost;
        return true;
    case A_TAGMEM_SIZE_LO:
    case A_TAGMEM_SIZE_HI:
        *value = extract64(s->tagmem_size,
                           offset == A_TAGMEM_SIZE_LO ? 0 : 32, 32);
        return true;
    case A_TAG_FAULTS:
        *value = qatomic_read(&s->tag_faults);
        return true;
    case A_TAG_FLUSHES:
        *value = qatomic_read(&s->tag_flushes);
        return true;
    case A_XFER_ACTIVE:
        *value = s->xfer_active;
        return true;
    case A_XFER_SENT_LO:
    case A_XFER_SENT_HI:
        *value = extract64(s->xfer_sent_bytes,
                           offset == A_XFER_SENT_LO ? 0 : 32, 32);
        return true;
    case A_XFER_RECV_LO:
    case A_XFER_RECV_HI:
        *value = extract64(s->xfer_recv_bytes,
                           offset == A_XFER_RECV_LO ? 0 : 32, 32);
        return true;
    case A_XFER_WAITING:
        *value = s->xfer_waiting;
        return true;
    case A_FOP_SHARED:
        *value = s->xfer_fop_shared;
        return true;
    case A_XFER_PUT_LO:
    case A_XFER_PUT_HI:
        *value = extract64(s->xfer_put_bytes,
                           offset == A_XFER_PUT_LO ? 0 : 32, 32);
        return true;
    case A_XFER_PULL_LO:
    case A_XFER_PULL_HI:
        *value = extract64(s->xfer_pull_bytes,
                           offset == A_XFER_PULL_LO ? 0 : 32, 32);
        return true;
    case A_CMD_BLOCK:
    case A_CMD_BLOCK_HI:
        *value = 0;         /* write-only in effect: nothing is kept */
        return true;
    case A_XFER_SYS_USED:
        *value = s->xfer_sys_used;
        return true;
    case A_XFER_PARKED:
        *value = s->xfer_nparked;
        return true;
    case A_CHAN_DROPPED:
        *value = s->chan_dropped;
        return true;
    case A_CHAN_USED:
        *value = s->chan_used;
        return true;
    case A_CHAN_MOVES:
        *value = s->chan_moves;
        return true;
    case A_CHAN_FWDS:
        *value = s->chan_forwards;
        return true;
    case A_CHAN_RESENT:
        *value = s->chan_resent;
        return true;
    case A_CHAN_MIGDROPS:
        *value = s->chan_migdrops;
        return true;
    case A_POLL_HINT:
        *value = extract64(s->poll_hint, 0, 32);
        return true;
    case A_POLL_HINT_HI:
        *value = extract64(s->poll_hint, 32, 32);
        return true;
    case A_EXIT:
    case A_IRQ_ACK:
    case A_SQ_DOORBELL:
    case A_RQ_DOORBELL:
    case A_POLL:
    case A_TAG_UPGRADE:
    case A_TAG_UPGRADE_HI:
    case A_RQ_COPY:
    case A_RQ_COPY_HI:
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_WRITE_ONLY, offset, 4);
        *value = 0;
        return false;
    }

    if (offset >= TEMPEST_NC_CMD_ARG(0) && offset < CMD_ARGS_END) {
        uint64_t arg = tempest_nc_bank(s)->arg[(offset - TEMPEST_NC_CMD_ARG(0))
                                               / 8];

        *value = extract64(arg, offset & 4 ? 32 : 0, 32);
        return true;
    }

    if (offset >= TEMPEST_NC_CMDLINE &&
        offset < TEMPEST_NC_CMDLINE + TEMPEST_NC_CMDLINE_MAX) {
        hwaddr pos = offset - TEMPEST_NC_CMDLINE;
        uint32_t v = 0;

        for (int i = 0; i < 4; i++) {
            if (pos + i < s->cmdline_len) {
                v |= (uint32_t)(uint8_t)s->cmdline[pos + i] << (8 * i);
            }
        }
        *value = v;
        return true;
    }

    tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_OFFSET, offset, 4);
    *value = 0;
    return false;
}

static void tempest_nc_write32(TempestNCState *s, hwaddr offset,
                               uint32_t value)
{
    switch (offset) {
    case A_ERR_STATUS:
        s->err_status = TEMPEST_NC_ERR_NONE;
        s->err_info = 0;
        return;
    case A_SCRATCH:
        s->scratch = value;
        return;
    case A_EXIT:
        /*
         * Never wait here (a vCPU holds the BQL): the BYE is queued, and
         * the fabric flushes what it can when the main loop tears down.
         * Frames still waiting for a link go first: then the fabric says
         * when (nc_fabric_bye_done).
         */
        value = FIELD_EX32(value, EXIT, STATUS);
        trace_tempest_nc_exit(s->node_id, value);
        s->exit_status = value;
        if (tempest_fabric_bye(s->fabric, value)) {
            qemu_system_shutdown_request_with_code(
                SHUTDOWN_CAUSE_GUEST_SHUTDOWN, value);
        }
        return;
    case A_IRQ_ENABLE:
        s->irq_enable = value;
        tempest_nc_update_irq(s);
        return;
    case A_IRQ_ACK:
        tempest_nc_lower(s, value);
        return;
    case A_SQ_DOORBELL:
        tempest_nc_sq_doorbell(s, value);
        return;
    case A_RQ_DOORBELL:
        tempest_nc_rq_doorbell(s);
        return;
    case A_POLL:
        if (value > (1 | TEMPEST_NC_POLL_PEEKS) ||
            value == TEMPEST_NC_POLL_PEEKS) {
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_VALUE, offset, 4);
            return;
        }
        tempest_nc_poll(s, value & 1, value & TEMPEST_NC_POLL_PEEKS);
        tempest_nc_coll_shm_check(s);
        return;
    case A_CMD_OP:
        tempest_nc_bank(s)->op = value;
        return;
    case A_AOR_SET:
        tempest_nc_aor_write(s, FIELD_EX32(value, AOR_SET, BIT));
        return;
    case A_MAGIC:
    case A_VERSION:
    case A_NODE_ID:
    case A_NUM_NODES:
    case A_PAGE_SIZE:
    case A_TAG_BLK_SIZE:
    case A_FEATURES:
    case A_NUM_CPUS:
    case A_RAM_BASE_LO:
    case A_RAM_BASE_HI:
    case A_RAM_SIZE_LO:
    case A_RAM_SIZE_HI:
    case A_CMDLINE_LEN:
    case A_SPIN_US:
    case A_ERR_INFO:
    case A_ERR_COUNT:
    case A_FABRIC_STATE:
    case A_PEERS_UP:
    case A_PEERS_DOWN:
    case A_DROPPED:
    case A_TICKS_LO:
    case A_TICKS_HI:
    case A_IRQ_STATUS:
    case A_SQ0_HEAD:
    case A_SQ1_HEAD:
    case A_RQ_TAIL:
    case A_CQ_TAIL:
    case A_TX_PACKETS:
    case A_RX_PACKETS:
    case A_SEND_ERRORS:
    case A_TX_STALLS:
    case A_CMD_COMMIT:
    case A_CMD_REASON:
    case A_CMD_RESULT_LO:
    case A_CMD_RESULT_HI:
    case A_COLL_STATUS:
    case A_COLL_SEQ:
    case A_COLL_RESULT_LO:
    case A_COLL_RESULT_HI:
    case A_COLL_ERROR:
    case A_COLL_FANOUT:
    case A_BCAST_SENT:
    case A_BCAST_AVAIL:
    case A_BCAST_POP:
    case A_BCAST_SRC:
    case A_BCAST_VALUE_LO:
    case A_BCAST_VALUE_HI:
    case A_AOR_GLOBAL:
    case A_BCAST_LOST:
    case A_COLL_SHARED:
    case A_COLL_SLEPT:
    case A_COLL_WOKEN:
    case A_RX_DIRECT:
    case A_TX_DIRECT:
    case A_RX_WOKEN:
    case A_BCAST_SHARED:
    case A_COLL_WAITED:
    case A_BCAST_WAITED:
    case A_BCAST_WRITTEN:
    case A_TAGMEM_SIZE_LO:
    case A_TAGMEM_SIZE_HI:
    case A_TAG_FAULTS:
    case A_TAG_FLUSHES:
    case A_XFER_ACTIVE:
    case A_XFER_SENT_LO:
    case A_XFER_SENT_HI:
    case A_XFER_RECV_LO:
    case A_XFER_RECV_HI:
    case A_XFER_WAITING:
    case A_FOP_SHARED:
    case A_XFER_PUT_LO:
    case A_XFER_PUT_HI:
    case A_XFER_SYS_USED:
    case A_XFER_PARKED:
    case A_CHAN_DROPPED:
    case A_CHAN_USED:
    case A_CHAN_MOVES:
    case A_CHAN_FWDS:
    case A_CHAN_RESENT:
    case A_CHAN_MIGDROPS:
    case A_XFER_PULL_LO:
    case A_XFER_PULL_HI:
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_READ_ONLY, offset, 4);
        return;
    case A_TAG_UPGRADE:
    case A_TAG_UPGRADE_HI:
    case A_POLL_HINT:
    case A_POLL_HINT_HI:
    case A_CMD_BLOCK:
    case A_CMD_BLOCK_HI:
    case A_RQ_COPY:
    case A_RQ_COPY_HI:
        /* One 8-byte write or nothing (tempest_nc_write). */
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_SIZE, offset, 4);
        return;
    }

    if (offset >= TEMPEST_NC_CMD_ARG(0) && offset < CMD_ARGS_END) {
        uint64_t *arg = &tempest_nc_bank(s)->arg[(offset -
                                                  TEMPEST_NC_CMD_ARG(0)) / 8];

        *arg = deposit64(*arg, offset & 4 ? 32 : 0, 32, value);
        return;
    }

    if (offset >= TEMPEST_NC_CMDLINE &&
        offset < TEMPEST_NC_CMDLINE + TEMPEST_NC_CMDLINE_MAX) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_READ_ONLY, offset, 4);
        return;
    }
    tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_OFFSET, offset, 4);
}

/*
 * (The MMIO callbacks take their opaque as it is: it is always the
 * device, and QOM's checked cast cost about 2% of a 16-node barrier.)
 *
 * Registers take aligned 4-byte accesses; an aligned 8-byte access covers
 * the pair at offset and offset + 4.  Anything else is a guest error that
 * reads as 0 and writes nothing.
 */
static uint64_t tempest_nc_read(void *opaque, hwaddr offset, unsigned size)
{
    TempestNCState *s = opaque;
    uint32_t lo = 0, hi = 0;
    uint64_t value = 0;

    if (size == 4 && QEMU_IS_ALIGNED(offset, 4)) {
        tempest_nc_read32(s, offset, &lo);
        value = lo;
    } else if (size == 8 && QEMU_IS_ALIGNED(offset, 8)) {
        tempest_nc_read32(s, offset, &lo);
        tempest_nc_read32(s, offset + 4, &hi);
        value = deposit64(lo, 32, 32, hi);
    } else {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_SIZE, offset, size);
    }
    trace_tempest_nc_read(s->node_id, offset, value, size);
    return value;
}

static void tempest_nc_write(void *opaque, hwaddr offset, uint64_t value,
                             unsigned size)
{
    TempestNCState *s = opaque;

    trace_tempest_nc_write(s->node_id, offset, value, size);
    if (offset == A_TAG_UPGRADE && size == 8) {
        tempest_nc_tag_upgrade(s, value);
        return;
    }
    if (offset == A_POLL_HINT && size == 8 && s->poll_hint_on) {
        tempest_nc_poll_hint(s, value);
        return;
    }
    if (offset == A_CMD_BLOCK && size == 8) {
        tempest_nc_cmd_block(s, value);
        return;
    }
    if (offset == A_RQ_COPY && size == 8) {
        tempest_nc_rq_copy(s, value);
        return;
    }
    if (size == 4 && QEMU_IS_ALIGNED(offset, 4)) {
        tempest_nc_write32(s, offset, value);
    } else if (size == 8 && QEMU_IS_ALIGNED(offset, 8)) {
        tempest_nc_write32(s, offset, extract64(value, 0, 32));
        tempest_nc_write32(s, offset + 4, extract64(value, 32, 32));
    } else {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_SIZE, offset, size);
    }
}

/* Every size reaches the callbacks, which reject the bad ones. */
#define TEMPEST_NC_ANY_ACCESS \
    .endianness = DEVICE_LITTLE_ENDIAN, \
    .valid.min_access_size = 1, \
    .valid.max_access_size = 8, \
    .valid.unaligned = true, \
    .impl.min_access_size = 1, \
    .impl.max_access_size = 8, \
    .impl.unaligned = true

static const MemoryRegionOps tempest_nc_ops = {
    .read = tempest_nc_read,
    .write = tempest_nc_write,
    TEMPEST_NC_ANY_ACCESS,
};

/* The wait window's registers (all read-only). */
static bool wait_reg(hwaddr reg)
{
    return reg == TEMPEST_NC_COLL_WAIT || reg == TEMPEST_NC_COLL_GO ||
           reg == TEMPEST_NC_BCAST_WAIT;
}

/*
 * The wait window (1.21): COLL_WAIT, COLL_GO and BCAST_WAIT (1.22),
 * reads a vCPU may wait in.  Its own region, without the re-entrancy
 * guard of the register file's: the read lets the BQL go while it
 * yields, and another vCPU of the node may use the register file (or
 * this window) meanwhile.  Only a CPU's access waits (a DMA's attributes
 * are unspecified: a transfer pointed at the window reads the status at
 * once).
 */
static MemTxResult tempest_nc_wait_read(void *opaque, hwaddr offset,
                                        uint64_t *data, unsigned size,
                                        MemTxAttrs attrs)
{
    TempestNCState *s = opaque;
    hwaddr reg = TEMPEST_NC_WAIT + offset;

    *data = 0;
    if (!wait_reg(reg)) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_OFFSET, reg, size);
    } else if (size != 4) {
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_BAD_SIZE, reg, size);
    } else if (reg == TEMPEST_NC_COLL_WAIT) {
        *data = tempest_nc_coll_wait(s, !attrs.unspecified);
    } else if (reg == TEMPEST_NC_BCAST_WAIT) {
        *data = tempest_nc_bcast_wait(s, !attrs.unspecified);
    } else {
        /* COLL_GO: CMD_COMMIT, and COLL_WAIT after a COLL_START. */
        TempestCmdBank *b = tempest_nc_bank(s);
        uint32_t st = tempest_nc_commit(s, b);

        *data = st == TEMPEST_CMD_SUCCESS && b->op == TEMPEST_CMD_COLL_START ?
                tempest_nc_coll_wait(s, !attrs.unspecified) :
                TEMPEST_NC_GO_CMD + st;
    }
    trace_tempest_nc_read(s->node_id, reg, *data, size);
    return MEMTX_OK;
}

static MemTxResult tempest_nc_wait_write(void *opaque, hwaddr offset,
                                         uint64_t value, unsigned size,
                                         MemTxAttrs attrs)
{
    TempestNCState *s = opaque;
    hwaddr reg = TEMPEST_NC_WAIT + offset;

    trace_tempest_nc_write(s->node_id, reg, value, size);
    tempest_nc_guest_error(s, wait_reg(reg) ? TEMPEST_NC_ERR_READ_ONLY :
                                              TEMPEST_NC_ERR_BAD_OFFSET,
                           reg, size);
    return MEMTX_OK;
}

static const MemoryRegionOps tempest_nc_wait_ops = {
    .read_with_attrs = tempest_nc_wait_read,
    .write_with_attrs = tempest_nc_wait_write,
    TEMPEST_NC_ANY_ACCESS,
};

static void tempest_nc_reset_hold(Object *obj, ResetType type)
{
    TempestNCState *s = TEMPEST_NC(obj);

    trace_tempest_nc_reset(s->node_id);
    tempest_nc_core_reset(s);
    s->scratch = 0;
    memset(s->bank, 0, sizeof(s->bank));
    for (int i = 0; i < ARRAY_SIZE(tempest_nc_engines); i++) {
        tempest_nc_engines[i]->reset(s);
    }
    tempest_nc_update_irq(s);
}

static void tempest_nc_init(Object *obj)
{
    TempestNCState *s = TEMPEST_NC(obj);
    SysBusDevice *sbd = SYS_BUS_DEVICE(obj);

    memory_region_init_io(&s->iomem, obj, &tempest_nc_ops, s,
                          TYPE_TEMPEST_NC, TEMPEST_NC_SIZE);
    memory_region_init_io(&s->wait_iomem, obj, &tempest_nc_wait_ops, s,
                          TYPE_TEMPEST_NC "-wait", TEMPEST_NC_WAIT_SIZE);
    s->wait_iomem.disable_reentrancy_guard = true;
    sysbus_init_mmio(sbd, &s->iomem);
    sysbus_init_irq(sbd, &s->irq);
}

static void tempest_nc_realize(DeviceState *dev, Error **errp)
{
    ERRP_GUARD();
    TempestNCState *s = TEMPEST_NC(dev);
    size_t len = s->cmdline ? strlen(s->cmdline) : 0;
    int i;

    if (s->num_nodes < 1 || s->num_nodes > TEMPEST_MAX_NODES) {
        error_setg(errp, "num-nodes must be between 1 and %d (got %u)",
                   TEMPEST_MAX_NODES, s->num_nodes);
        return;
    }
    if (s->node_id >= s->num_nodes) {
        error_setg(errp, "node-id %u is not below num-nodes %u",
                   s->node_id, s->num_nodes);
        return;
    }
    if (s->num_cpus < 1 || s->num_cpus > TEMPEST_MAX_CPUS) {
        error_setg(errp, "num-cpus must be between 1 and %d (got %u)",
                   TEMPEST_MAX_CPUS, s->num_cpus);
        return;
    }
    if (s->coll_fanout < 2 || s->coll_fanout > 64) {
        error_setg(errp, "coll-fanout must be between 2 and 64 (got %u)",
                   s->coll_fanout);
        return;
    }
    if (s->credits < 1 || s->credits > 4096) {
        error_setg(errp, "credits must be between 1 and 4096 (got %u)",
                   s->credits);
        return;
    }
    if (len >= TEMPEST_NC_CMDLINE_MAX) {
        error_setg(errp, "the command line is %zu bytes; at most %d fit",
                   len, TEMPEST_NC_CMDLINE_MAX - 1);
        return;
    }
    s->cmdline_len = len;
    if (!tempest_nc_core_realize(s, errp)) {
        return;
    }
    for (i = 0; i < ARRAY_SIZE(tempest_nc_engines); i++) {
        if (!tempest_nc_engines[i]->realize(s, errp)) {
            goto fail;
        }
    }
    if (!tempest_nc_fabric_attach(s, errp)) {
        goto fail;
    }
    if (!tempest_nc_ckpt_block(s, errp)) {
        tempest_nc_fabric_detach(s);
        goto fail;
    }
    tempest_nc_ckpt_realize(s);
    tempest_nc_dump_realize(s);
    /*
     * No access of ours looks at the CPU's state: TCG need not end a
     * translation block at each one (1-3 us each otherwise).  (The
     * window goes in here, not at init: the target's page size is known
     * by now.)
     */
    memory_region_add_subregion(&s->iomem, TEMPEST_NC_WAIT, &s->wait_iomem);
    tcg_mmio_fast_register(&s->iomem);
    tcg_mmio_fast_register(&s->wait_iomem);
    return;

fail:
    while (i-- > 0) {
        tempest_nc_engines[i]->unrealize(s);
    }
    tempest_nc_core_unrealize(s);
}

/* Undo realize, in reverse. */
static void tempest_nc_unrealize(DeviceState *dev)
{
    TempestNCState *s = TEMPEST_NC(dev);

    tcg_mmio_fast_unregister(&s->wait_iomem);
    tcg_mmio_fast_unregister(&s->iomem);
    memory_region_del_subregion(&s->iomem, &s->wait_iomem);
    tempest_nc_dump_unrealize(s);
    tempest_nc_ckpt_unrealize(s);
    migrate_del_blocker(&s->migration_blocker);
    tempest_nc_fabric_detach(s);
    for (int i = ARRAY_SIZE(tempest_nc_engines) - 1; i >= 0; i--) {
        tempest_nc_engines[i]->unrealize(s);
    }
    tempest_nc_core_unrealize(s);
}

/*
 * Peers write into the RQ no more, and what they wrote is counted before
 * the RQ's tail is saved; it opens again at the guest's next POLL or
 * doorbell.
 */
static int tempest_nc_pre_save(void *opaque)
{
    tempest_nc_rq_close(opaque);
    return 0;
}

static int tempest_nc_pre_load(void *opaque)
{
    TEMPEST_NC(opaque)->ckpt_loaded = false;
    return 0;
}

static int tempest_nc_post_load(void *opaque, int version_id)
{
    TempestNCState *s = TEMPEST_NC(opaque);
    int ret = tempest_nc_core_post_load(s);

    for (int i = 0; i < ARRAY_SIZE(tempest_nc_engines) && !ret; i++) {
        if (tempest_nc_engines[i]->post_load) {
            ret = tempest_nc_engines[i]->post_load(s);
        }
    }
    s->ckpt_loaded = false;
    return ret;
}

static const VMStateDescription vmstate_tempest_ring = {
    .name = "tempest-nc/ring",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(base, TempestRing),
        VMSTATE_UINT32(slots, TempestRing),
        VMSTATE_UINT32(idx, TempestRing),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_tempest_bank = {
    .name = "tempest-nc/bank",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64_ARRAY(arg, TempestCmdBank, TEMPEST_NC_CMD_NUM_ARGS),
        VMSTATE_UINT32(op, TempestCmdBank),
        VMSTATE_UINT32(reason, TempestCmdBank),
        VMSTATE_UINT64(result, TempestCmdBank),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription vmstate_tempest_timer = {
    .name = "tempest-nc/timer",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(armed, TempestTimer),
        VMSTATE_UINT32(id, TempestTimer),
        VMSTATE_UINT64(deadline_ns, TempestTimer),
        VMSTATE_UINT64(order, TempestTimer),
        VMSTATE_UINT64(a, TempestTimer),
        VMSTATE_UINT64(b, TempestTimer),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The state of a node that can be saved: one alone in its cluster, or
 * any node of a cluster at a checkpoint's quiet cut (otherwise a node
 * joined to others by live sockets has a migration blocker).  One
 * subsection per engine, sent when it holds something, after the
 * checkpoint's own (tempest-nc-ckpt.c).
 */
static const VMStateDescription vmstate_tempest_nc = {
    .name = TYPE_TEMPEST_NC,
    .version_id = 3,
    .minimum_version_id = 3,
    .pre_save = tempest_nc_pre_save,
    .pre_load = tempest_nc_pre_load,
    .post_load = tempest_nc_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(err_status, TempestNCState),
        VMSTATE_UINT32(err_info, TempestNCState),
        VMSTATE_UINT32(err_count, TempestNCState),
        VMSTATE_UINT32(scratch, TempestNCState),
        VMSTATE_UINT32(irq_status, TempestNCState),
        VMSTATE_UINT32(irq_enable, TempestNCState),
        VMSTATE_UINT32(peers_down, TempestNCState),
        VMSTATE_UINT32(dropped, TempestNCState),
        VMSTATE_UINT32(tx_packets, TempestNCState),
        VMSTATE_UINT32(rx_packets, TempestNCState),
        VMSTATE_UINT32(send_errors, TempestNCState),
        VMSTATE_UINT32(tx_stalls, TempestNCState),
        VMSTATE_STRUCT_ARRAY(ring, TempestNCState, TEMPEST_NUM_RINGS, 1,
                             vmstate_tempest_ring, TempestRing),
        VMSTATE_STRUCT_ARRAY(bank, TempestNCState, TEMPEST_MAX_CPUS, 1,
                             vmstate_tempest_bank, TempestCmdBank),
        VMSTATE_STRUCT_ARRAY(timer, TempestNCState, TEMPEST_NC_MAX_TIMERS, 1,
                             vmstate_tempest_timer, TempestTimer),
        VMSTATE_UINT64(timer_order, TempestNCState),
        VMSTATE_UINT32(timer_gen, TempestNCState),
        VMSTATE_UINT32(coll_status, TempestNCState),
        VMSTATE_UINT32(coll_error, TempestNCState),
        VMSTATE_UINT32(coll_seq_done, TempestNCState),
        VMSTATE_UINT64(coll_result, TempestNCState),
        VMSTATE_UINT32(bcast_sent, TempestNCState),
        VMSTATE_UINT32(aor_set, TempestNCState),
        VMSTATE_UINT32(aor_global, TempestNCState),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_tempest_nc_ckpt,
        &vmstate_tempest_nc_msg,
        &vmstate_tempest_nc_coll,
        &vmstate_tempest_nc_xfer,
        &vmstate_tempest_nc_tags,
        &vmstate_tempest_nc_chan,
        &vmstate_tempest_nc_poll_hint,
        &vmstate_tempest_nc_slots,
        NULL
    }
};

static const Property tempest_nc_properties[] = {
    DEFINE_PROP_UINT32("node-id", TempestNCState, node_id, 0),
    DEFINE_PROP_UINT32("num-nodes", TempestNCState, num_nodes, 1),
    DEFINE_PROP_UINT32("num-cpus", TempestNCState, num_cpus, 1),
    DEFINE_PROP_UINT64("ram-base", TempestNCState, ram_base, 0),
    DEFINE_PROP_UINT64("ram-size", TempestNCState, ram_size, 0),
    DEFINE_PROP_STRING("cmdline", TempestNCState, cmdline),
    DEFINE_PROP_STRING("fabric", TempestNCState, fabric_spec),
    DEFINE_PROP_STRING("fabric-key", TempestNCState, fabric_key),
    DEFINE_PROP_STRING("fabric-shm", TempestNCState, fabric_shm),
    DEFINE_PROP_STRING("fabric-host-id", TempestNCState, fabric_host_id),
    DEFINE_PROP_STRING("fabric-shm-dir", TempestNCState, fabric_shm_dir),
    DEFINE_PROP_LINK("fabric-backend", TempestNCState, fabric_backend,
                     TYPE_TEMPEST_FABRIC, TempestFabric *),
    DEFINE_PROP_LINK("memory", TempestNCState, dma_mr, TYPE_MEMORY_REGION,
                     MemoryRegion *),
    DEFINE_PROP_LINK("ram", TempestNCState, ram_mr, TYPE_MEMORY_REGION,
                     MemoryRegion *),
    DEFINE_PROP_UINT64("cluster-id", TempestNCState, cluster_id, 0),
    DEFINE_PROP_UINT32("credits", TempestNCState, credits, 32),
    DEFINE_PROP_UINT32("spin-us", TempestNCState, spin_us, 50),
    DEFINE_PROP_UINT32("sleep-yield-us", TempestNCState, sleep_yield_us,
                       TEMPEST_NC_SLEEP_YIELD_US),
    DEFINE_PROP_BOOL("poll-hint", TempestNCState, poll_hint_on, true),
    DEFINE_PROP_BOOL("chan", TempestNCState, chan_on, true),
    DEFINE_PROP_UINT32("fabric-timeout", TempestNCState, fabric_timeout_ms,
                       30000),
    DEFINE_PROP_UINT32("coll-fanout", TempestNCState, coll_fanout, 16),
    DEFINE_PROP_UINT32("hold-ms", TempestNCState, hold_ms, 2),
    DEFINE_PROP_UINT32("credit-look-ms", TempestNCState, credit_look_ms, 10),
    DEFINE_PROP_UINT64("tagmem-size", TempestNCState, tagmem_size, 0),
    DEFINE_PROP_UINT64("sys-space", TempestNCState, xfer_sys_max, 1 * MiB),
};

static void tempest_nc_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    dc->desc = "Tempest node controller";
    dc->realize = tempest_nc_realize;
    dc->unrealize = tempest_nc_unrealize;
    dc->vmsd = &vmstate_tempest_nc;
    rc->phases.hold = tempest_nc_reset_hold;
    device_class_set_props(dc, tempest_nc_properties);
    tempest_nc_ckpt_class_init(klass);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo tempest_nc_info = {
    .name = TYPE_TEMPEST_NC,
    .parent = TYPE_SYS_BUS_DEVICE,
    .instance_size = sizeof(TempestNCState),
    .instance_init = tempest_nc_init,
    .class_init = tempest_nc_class_init,
};

static void tempest_nc_register_types(void)
{
    type_register_static(&tempest_nc_info);
}

type_init(tempest_nc_register_types)
