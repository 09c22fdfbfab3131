/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: a stopped node's report (docs/fabric.rst, "A
 * stopped node's report").  When a signal ends the node's QEMU (the
 * launcher stopping a cluster that timed out, or one of whose nodes
 * failed), the device prints to the node's log what a hang needs: its
 * rings as the device sees them and the slots valid in guest memory, the
 * queues, counters and pending collective and transfers, the vCPUs'
 * sleep, and every link of the fabric (credits both ways, sequence
 * numbers, the shared-memory rings and their flags).  It only reads, and
 * only then: nothing of it is on the path of a message.
 */

#include "qemu/osdep.h"
#include "hw/core/cpu.h"
#include "system/qtest.h"
#include "system/runstate.h"
#include "qemu/timer.h"
#include "tempest-nc-internal.h"
#include "tempest-nc-xfer.h"

static const char *const dump_ring_name[TEMPEST_NUM_RINGS] = {
    "SQ0", "SQ1", "RQ", "CQ",
};

/* A ring: the device's index, and which of its slots are valid now. */
static void dump_ring(TempestNCState *s, GString *out, unsigned ring)
{
    TempestRing *r = &s->ring[ring];
    uint32_t size = tempest_nc_ring_slot_size(r, ring), valid = 0;
    uint32_t first = UINT32_MAX;

    if (!r->slots) {
        return;
    }
    for (uint32_t i = 0; i < r->slots; i++) {
        uint32_t ctl = 0;

        if (tempest_nc_dma_read(s, r->base + (uint64_t)i * size, &ctl, 4) &&
            (le32_to_cpu(ctl) & TEMPEST_PKT_VALID)) {
            valid++;
            if (first == UINT32_MAX) {
                first = i;
            }
        }
    }
    g_string_append_printf(out, "  %s: base 0x%" PRIx64 " slots %u size %u "
                           "idx %u (slot %u), %u valid", dump_ring_name[ring],
                           r->base, r->slots, size, r->idx,
                           r->idx & (r->slots - 1), valid);
    if (valid) {
        g_string_append_printf(out, " (first slot %u)", first);
    }
    g_string_append_c(out, '\n');
}

static void dump_at_shutdown(Notifier *n, void *data)
{
    TempestNCState *s = container_of(n, TempestNCState, dump_shutdown);
    ShutdownCause cause = *(ShutdownCause *)data;
    g_autoptr(GString) out = NULL;
    TempestInPacket *p;
    TempestXferOut *x;
    unsigned inq[2] = { 0, 0 };
    CPUState *cs;

    /* (qtest_quit() ends every QEMU of a qtest with SIGTERM.) */
    if (cause != SHUTDOWN_CAUSE_HOST_SIGNAL || s->num_nodes < 2 ||
        qtest_enabled()) {
        return;
    }
    out = g_string_new(NULL);
    g_string_append_printf(out, "tempest-nc: node %u: stopped by a signal "
                           "at %.6f s of the host's monotonic clock; its "
                           "state:\n", s->node_id,
                           qemu_clock_get_ns(QEMU_CLOCK_REALTIME) / 1e9);
    CPU_FOREACH(cs) {
        g_string_append_printf(out, "  cpu %d: halted %u\n", cs->cpu_index,
                               cs->halted);
    }
    for (unsigned net = 0; net < 2; net++) {
        QTAILQ_FOREACH(p, &s->inq[net], next) {
            inq[net]++;
        }
    }
    g_string_append_printf(out, "  irq status 0x%x enable 0x%x; tx %u rx %u "
                           "stalls %u send errors %u dropped %u peers down "
                           "%u; err status %u count %u; sq_wait %d/%d "
                           "(credit %d/%d, found by the timer %u); "
                           "inq %u/%u rq_hold %d; events queued %u\n",
                           s->irq_status, s->irq_enable, s->tx_packets,
                           s->rx_packets, s->tx_stalls, s->send_errors,
                           s->dropped, s->peers_down, s->err_status,
                           s->err_count, s->sq_wait[0], s->sq_wait[1],
                           s->sq_wait_credit[0], s->sq_wait_credit[1],
                           s->credit_found, inq[0], inq[1], s->rq_hold,
                           s->evq_len);
    if (s->last_drop) {
        g_string_append_printf(out, "  last frame dropped: from node %d, "
                               "%s\n", s->last_drop_peer, s->last_drop);
    }
    for (unsigned ring = 0; ring < TEMPEST_NUM_RINGS; ring++) {
        dump_ring(s, out, ring);
    }
    g_string_append_printf(out, "  coll: status %u seq done %u kind %u "
                           "shm %d pending %d (from %u, %u combined); bcast "
                           "queued %u pending %d held %d seen %" PRIu64
                           " taken %" PRIu64 " issued %" PRIu64 " ring %"
                           PRIu64 " (%u read, %u written, %u lost)\n",
                           s->coll_status,
                           s->coll_seq_done, s->coll_kind, s->coll_shm,
                           s->coll_shm_pending, s->coll_shm_base,
                           s->coll_shm_count, s->bcast_len, s->bcast_pending,
                           !QSIMPLEQ_EMPTY(&s->bcast_held), s->bcast_seen,
                           s->bcast_taken, s->bcast_issued,
                           s->bcast_ring_next, s->bcast_shared,
                           s->bcast_written, s->bcast_lost);
    g_string_append_printf(out, "  xfer: active %u waiting %u bufs %u "
                           "parked %u; sent %" PRIu64 " recv %" PRIu64
                           " put %" PRIu64 " pull %" PRIu64 " bytes\n",
                           s->xfer_active, s->xfer_waiting, s->xfer_nbufs,
                           s->xfer_nparked, s->xfer_sent_bytes,
                           s->xfer_recv_bytes, s->xfer_put_bytes,
                           s->xfer_pull_bytes);
    QTAILQ_FOREACH(x, &s->xfer_out, next) {
        g_string_append_printf(out, "    out mid %u to %u len %" PRIu64
                               " sent %" PRIu64 " state %u direct %d\n",
                               x->mid, x->dest, x->len, x->sent, x->state,
                               x->direct);
    }
    tempest_fabric_dump(s->fabric, out);
    fputs(out->str, stderr);
    fflush(stderr);
}

void tempest_nc_dump_realize(TempestNCState *s)
{
    s->dump_shutdown.notify = dump_at_shutdown;
    qemu_register_shutdown_notifier(&s->dump_shutdown);
}

void tempest_nc_dump_unrealize(TempestNCState *s)
{
    notifier_remove(&s->dump_shutdown);
}
