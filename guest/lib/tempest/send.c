/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest send side: tempest_send_items(), behind every TPPI_send_
 * function, and the message builder.
 *
 * Computation code sends on the request network (SQ0), the protocol
 * thread on the reply network (SQ1); each ring has a lock held across all
 * the packets of one message, so the fragments of a message are
 * contiguous in the sender's stream to each destination on that network,
 * which is what the receiver's reassembly per (source, network) needs.
 * One doorbell per message.
 *
 * Gather sends (node controller 1.15): a message of W and R items of 256
 * bytes or more, each in RAM the device reaches, is one packet whose slot
 * names the items; the device copies them into the frame when it takes
 * the slot, and the sender waits for that (the items are the caller's
 * again when the send returns).  Other messages (F and Ba items, the
 * tagged segment, short ones) are copied into the slots as before.
 *
 * A full ring: the sender rings the doorbell and waits.  Computation code
 * sleeps (at most SQ_WAIT_US at a time), published in tppi_sq_waiters,
 * until the protocol thread sees room and wakes it.  On the protocol
 * thread the sender moves what arrives to the backlog when the RQ is
 * nearly full (tppi_drain_to_backlog), so that the device keeps returning
 * credits while the handler waits for its own, and sleeps until the node
 * controller's IRQ_SQ (a stalled ring moved) on a dedicated CPU.
 */
#include <string.h>

#include "tempest-internal.h"
#include "tempest/client.h"

#define SQ_SPINS        64
#define SQ_WAIT_US      1000    /* computation code: the PT wakes it */
#define SQ_PT_WAIT_US   100     /* the PT: IRQ_SQ wakes it */

/* A message of @pkts packets sent on @net: under tppi_sq_lock[@net]. */
static inline void count_sent(unsigned net, uint32_t pkts)
{
    struct tppi_sent *c = &tppi_sent[net];

    __atomic_store_n(&c->msgs, c->msgs + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&c->pkts, c->pkts + pkts, __ATOMIC_RELAXED);
}

static bool sq_has_room(unsigned net)
{
    return nc_sq_claim(net) != NULL;
}

/*
 * Rings send ring @net's doorbell and waits until ready(@net): the device
 * moves the ring on as credit comes back.
 */
static void sq_wait(unsigned net, bool on_pt, bool (*ready)(unsigned))
{
    unsigned spins = 0, cpu = rt_cpu_id();
    uint64_t flags, now, spin_end = 0;

    nc_sq_doorbell(net);
    while (!ready(net)) {
        if (on_pt) {
            tppi_drain_to_backlog();
        }
        if (++spins < SQ_SPINS) {
            __asm__ volatile("yield");
            continue;
        }
        /*
         * The device may hold the ring while the receiver's RQ is full
         * (its hold-ms, docs/fabric.rst, "Holding for room"): room comes
         * soon.  While this node may spin (tempest_set_spin_us)
         * ring again every SQ_SPINS turns, rather than sleep until the
         * device's hold timer moves the ring and raises IRQ_SQ.
         */
        if (spins == SQ_SPINS && tppi_spin_us()) {
            now = rt_time_ns();
            if (!spin_end) {
                spin_end = now + (uint64_t)tppi_spin_us() * 1000;
            }
            if (now < spin_end) {
                spins = 0;
                nc_sq_doorbell(net);
                continue;
            }
        }
        if (on_pt) {
            /* Woken by IRQ_SQ on a dedicated CPU; spins otherwise. */
            tppi_pt_pause(SQ_PT_WAIT_US);
        } else {
            flags = rt_irq_save();
            __atomic_fetch_or(&tppi_sq_waiters, 1U << cpu, __ATOMIC_SEQ_CST);
            if (!ready(net)) {
                tppi_client_poll_stop();    /* the thread polls meanwhile */
                rt_cpu_sleep(SQ_WAIT_US);
            }
            __atomic_fetch_and(&tppi_sq_waiters, ~(1U << cpu),
                               __ATOMIC_RELAXED);
            rt_irq_restore(flags);
        }
        nc_sq_doorbell(net);
    }
}

static struct nc_pkt *claim_wait(unsigned net, bool on_pt)
{
    struct nc_pkt *p;

    p = nc_sq_claim(net);
    if (p) {
        return p;
    }
    __atomic_fetch_add(&tppi_stats.sq_full, 1, __ATOMIC_RELAXED);
    sq_wait(net, on_pt, sq_has_room);
    return nc_sq_claim(net);
}

/* Where fill() is in the items: item, offset in it, Ba items passed. */
struct cursor {
    unsigned si;
    uint32_t soff;
    unsigned bi;
    const void *const *ba;  /* each Ba item's data (post_with_blocks) */
};

/*
 * A few words (W items: word-aligned, a multiple of 4) copied here: under
 * TCG a call of memcpy(), in another page, and its return each cost a
 * lookup (docs/fabric.rst, "Fewer device accesses and lookups,
 * twenty-fourth session").
 */
#define SMALL_COPY      32

static inline void small_copy(uint8_t *dst, const uint8_t *src, uint32_t n)
{
    uint32_t w;

    for (; n; n -= 4, dst += 4, src += 4) {
        __builtin_memcpy(&w, src, 4);
        __builtin_memcpy(dst, &w, 4);
        __asm__("" : : : "memory");     /* not turned into memcpy() */
    }
}

/* Copies @n bytes of the items at cursor @c to @dst. */
static void fill(uint8_t *dst, uint32_t n, const tempest_item *segs,
                 struct cursor *c)
{
    const tempest_item *s;
    const uint8_t *src;
    uint32_t k;

    while (n) {
        s = &segs[c->si];
        k = (uint32_t)s->len - c->soff;
        if (k > n) {
            k = n;
        }
        if (s->kind == TPPI_SEG_FORWARD) {
            tppi_take(dst, (int)k);
        } else if (k <= SMALL_COPY && !(k & 3) &&
                   s->kind == TPPI_SEG_WORDS) {
            small_copy(dst, (const uint8_t *)s->ptr + c->soff, k);
        } else {
            src = s->kind == TPPI_SEG_BLOCK ? c->ba[c->bi] : s->ptr;
            memcpy(dst, src + c->soff, k);
        }
        dst += k;
        n -= k;
        c->soff += k;
        if (c->soff == (uint32_t)s->len) {
            c->bi += s->kind == TPPI_SEG_BLOCK;
            c->si++;
            c->soff = 0;
        }
    }
}

/* Checks the items; returns the body size, or -1 (reported). */
static int check_segs(const tempest_item *segs, unsigned nsegs,
                      uintptr_t pc)
{
    uint32_t total = 0, fwd = 0, left;
    unsigned i;

    if (nsegs > TEMPEST_MAX_ITEMS) {
        tppi_report(&tppi_stats.bad_sends, "send to handler 0x%lx: %u items, "
                    "over TEMPEST_MAX_ITEMS (%d): not sent",
                    (unsigned long)pc, nsegs, TEMPEST_MAX_ITEMS);
        return -1;
    }
    for (i = 0; i < nsegs; i++) {
        const tempest_item *s = &segs[i];

        if (s->len < 0 || (s->len & 3)) {
            tppi_report(&tppi_stats.bad_sends, "send to handler 0x%lx: item "
                        "%u has length %d, not a multiple of 4: not sent",
                        (unsigned long)pc, i + 1, s->len);
            return -1;
        }
        if (s->kind == TPPI_SEG_BLOCK) {
            if (!tppi_ba_check((void *)s->ptr, s->len, s->chg)) {
                tppi_report(&tppi_stats.bad_sends, "send to handler 0x%lx: "
                            "bad Ba item: not sent", (unsigned long)pc);
                return -1;
            }
        }
        if (s->kind == TPPI_SEG_REGION && s->len &&
            (s->ptr == NULL || ((uintptr_t)s->ptr & 3))) {
            tppi_report(&tppi_stats.bad_sends, "send to handler 0x%lx: R "
                        "item at %p is not word-aligned: not sent",
                        (unsigned long)pc, s->ptr);
            return -1;
        }
        if (s->kind == TPPI_SEG_FORWARD) {
            if (!tppi_in_message_handler()) {
                tppi_report(&tppi_stats.bad_sends, "send to handler 0x%lx: "
                            "F item outside a message handler: not sent",
                            (unsigned long)pc);
                return -1;
            }
            fwd += (uint32_t)s->len;
        }
        total += (uint32_t)s->len;
        if (total > TPPI_MAX_AM_BYTES) {
            tppi_report(&tppi_stats.bad_sends, "send to handler 0x%lx: body "
                        "over TPPI_MAX_AM_BYTES (%d): not sent",
                        (unsigned long)pc, TPPI_MAX_AM_BYTES);
            return -1;
        }
    }
    if (fwd) {
        left = (uint32_t)tppi_recv_left();
        if (fwd > left) {
            tppi_report(&tppi_stats.bad_sends, "send to handler 0x%lx: F "
                        "items forward %u bytes, only %u are left: not sent",
                        (unsigned long)pc, (unsigned)fwd, (unsigned)left);
            return -1;
        }
    }
    return (int)total;
}

/*
 * A message the device can gather (node controller 1.15): of at least
 * GATHER_MIN bytes, W and R items only, each in RAM the device reaches
 * (not the tagged segment), at most TEMPEST_GATHER_MAX_DESC non-empty.
 */
#define GATHER_MIN      256

static bool gatherable(const tempest_item *segs, unsigned nsegs,
                       const void *const *ba, int total)
{
    unsigned i, n = 0;

    if (!nc_gather_present || ba || total < GATHER_MIN ||
        (uint32_t)total > nc_rq_payload) {
        return false;
    }
    for (i = 0; i < nsegs; i++) {
        if (segs[i].kind == TPPI_SEG_FORWARD ||
            segs[i].kind == TPPI_SEG_BLOCK) {
            return false;
        }
        if (segs[i].len == 0) {
            continue;
        }
        if (++n > TEMPEST_GATHER_MAX_DESC ||
            !nc_dma_reachable(segs[i].ptr, (size_t)segs[i].len)) {
            return false;
        }
    }
    return true;
}

static bool sq_taken(unsigned net)
{
    return nc_sq_drained(net);
}

/*
 * The message as one gather packet: the slot names the items, the device
 * copies them into the frame when it takes the slot (one host copy, no
 * guest copy), so the sender waits for that before the items may change.
 */
static void post_gather(TPPI_NodeId dest, uintptr_t handler,
                        const tempest_item *segs, unsigned nsegs, int total)
{
    bool on_pt = tppi_on_protocol_thread();
    unsigned net = on_pt ? TEMPEST_NET_REPLY : TEMPEST_NET_REQUEST;
    struct nc_gather *d;
    struct nc_pkt *p;
    unsigned i, n = 0;

    tppi_lock(&tppi_sq_lock[net]);
    p = claim_wait(net, on_pt);
    p->node = (uint16_t)dest;
    p->net = 0;
    p->kind = TPPI_KIND_AM | TPPI_KIND_FIRST | TPPI_KIND_LAST;
    p->seq = 0;
    p->word0 = (uint32_t)total;
    p->word1 = handler;
    p->word2 = 0;
    d = (struct nc_gather *)p->data;
    for (i = 0; i < nsegs; i++) {
        if (segs[i].len) {
            d[n].addr = (uintptr_t)segs[i].ptr;
            d[n].len = (uint32_t)segs[i].len;
            d[n].rsvd = 0;
            n++;
        }
    }
    nc_sq_post_gather(net, p, (uint32_t)total);
    nc_sq_doorbell(net);
    if (!nc_sq_drained(net)) {
        /* The ring waits for credit: the items stay until it moves. */
        sq_wait(net, on_pt, sq_taken);
    }
    count_sent(net, 1);
    tppi_unlock(&tppi_sq_lock[net]);
}

/* Puts the checked message of @total bytes into the send ring. */
RT_HOT_TX static void post_segs(TPPI_NodeId dest, uintptr_t handler,
                                const tempest_item *segs, unsigned nsegs,
                                const void *const *ba, int total)
{
    bool on_pt = tppi_on_protocol_thread();
    unsigned net = on_pt ? TEMPEST_NET_REPLY : TEMPEST_NET_REQUEST;
    uint32_t off = 0, chunk, pkts = 0;
    struct cursor c = { 0, 0, 0, ba };
    struct nc_pkt *p;

    if (gatherable(segs, nsegs, ba, total)) {
        post_gather(dest, handler, segs, nsegs, total);
        return;
    }
    tppi_lock(&tppi_sq_lock[net]);
    do {
        chunk = (uint32_t)total - off;
        if (chunk > nc_pkt_payload) {
            chunk = nc_pkt_payload;
        }
        p = claim_wait(net, on_pt);
        p->node = (uint16_t)dest;
        p->net = 0;
        p->kind = TPPI_KIND_AM | (off == 0 ? TPPI_KIND_FIRST : 0) |
                  (off + chunk == (uint32_t)total ? TPPI_KIND_LAST : 0);
        p->seq = 0;
        p->word0 = (uint32_t)total;
        p->word1 = handler;
        p->word2 = 0;
        fill(p->data, chunk, segs, &c);
        nc_sq_post(net, p, chunk);
        off += chunk;
        pkts++;
    } while (off < (uint32_t)total);
    nc_sq_doorbell(net);
    count_sent(net, pkts);
    tppi_unlock(&tppi_sq_lock[net]);
}

/*
 * A message with Ba items: each block's tag changes and its data is taken
 * in 3.2.6's order (vm.c), item by item, then the message is sent with
 * the data taken.  Every Ba item is at least a tag block, so the body
 * holds at most MAX_BA of them.
 */
#define MAX_BA  (TPPI_MAX_AM_BYTES / TPPI_TAG_BLK_SIZE)

static int post_with_blocks(TPPI_NodeId dest, uintptr_t handler,
                            const tempest_item *segs, unsigned nsegs,
                            int total)
{
    uint8_t buf[TPPI_MAX_AM_BYTES];
    const void *ba[MAX_BA];
    unsigned i, n = 0;
    uint32_t used = 0;

    for (i = 0; i < nsegs; i++) {
        if (segs[i].kind != TPPI_SEG_BLOCK) {
            continue;
        }
        ba[n] = tppi_ba_send_data((void *)segs[i].ptr, segs[i].len,
                                  segs[i].chg, buf + used);
        if (ba[n] == NULL) {
            tppi_report(&tppi_stats.bad_sends, "send to handler 0x%lx: "
                        "the page of its Ba item %u went away: not sent",
                        (unsigned long)handler, i + 1);
            return -1;
        }
        used += (uint32_t)segs[i].len;
        n++;
    }
    post_segs(dest, handler, segs, nsegs, ba, total);
    return 0;
}

RT_HOT_TX int tempest_send_items(TPPI_NodeId dest, TPPI_MessageHandlerPtr pc,
                                 const tempest_item *segs, unsigned nsegs)
{
    static uintptr_t text_seen = 1;
    uintptr_t handler = (uintptr_t)pc;
    unsigned i;
    int total;

    if (dest >= TPPI_num_nodes) {
        tppi_report(&tppi_stats.bad_sends, "send to node %u, not in the "
                    "%u-node cluster: not sent", dest, TPPI_num_nodes);
        return -1;
    }
    if (!tppi_text_ok(handler, &text_seen) || (handler & 3)) {
        tppi_report(&tppi_stats.bad_sends, "send to node %u names handler "
                    "0x%lx, outside the program's code: not sent", dest,
                    (unsigned long)handler);
        return -1;
    }
    total = check_segs(segs, nsegs, handler);
    if (total < 0) {
        return -1;
    }
    for (i = 0; i < nsegs; i++) {
        if (segs[i].kind == TPPI_SEG_BLOCK) {
            return post_with_blocks(dest, handler, segs, nsegs, total);
        }
    }
    post_segs(dest, handler, segs, nsegs, NULL, total);
    return 0;
}

/* ---- the builder -------------------------------------------------------- */

static int builder_error(tempest_msg *m, const char *what)
{
    if (!m->error) {
        tppi_report(&tppi_stats.bad_sends, "message builder for handler "
                    "0x%lx: %s", (unsigned long)m->pc, what);
    }
    m->error = 1;
    return -1;
}

void tempest_msg_begin(tempest_msg *m, TPPI_NodeId dest,
                       TPPI_MessageHandlerPtr pc)
{
    m->dest = dest;
    m->pc = pc;
    m->error = 0;
    m->nitems = 0;
    m->nwords = 0;
}

static int add_item(tempest_msg *m, int kind, const void *ptr, int len,
                    int chg)
{
    if (m->error) {
        return -1;
    }
    if (m->nitems >= TEMPEST_MSG_ITEMS) {
        return builder_error(m, "more than TEMPEST_MSG_ITEMS items");
    }
    m->item[m->nitems].kind = kind;
    m->item[m->nitems].ptr = ptr;
    m->item[m->nitems].len = len;
    m->item[m->nitems].chg = chg;
    m->nitems++;
    return 0;
}

int tempest_msg_W(tempest_msg *m, int w)
{
    unsigned n = m->nitems;

    if (m->error) {
        return -1;
    }
    if (m->nwords >= TEMPEST_MSG_WORDS) {
        return builder_error(m, "more than TEMPEST_MSG_WORDS words");
    }
    /* A W item right after W items extends them (ptr: first word index). */
    if (!(n && m->item[n - 1].kind == TPPI_SEG_WORDS)) {
        if (add_item(m, TPPI_SEG_WORDS, (const void *)(uintptr_t)m->nwords,
                     0, 0)) {
            return -1;
        }
        n = m->nitems;
    }
    m->item[n - 1].len += 4;
    m->words[m->nwords++] = (uint32_t)w;
    return 0;
}

int tempest_msg_R(tempest_msg *m, const void *va, int len)
{
    if (len < 0 || (len & 3) || (len && (va == NULL || ((uintptr_t)va & 3)))) {
        return builder_error(m, "R item not word-aligned or length not a "
                             "multiple of 4");
    }
    return add_item(m, TPPI_SEG_REGION, va, len, 0);
}

int tempest_msg_F(tempest_msg *m, int len)
{
    if (len < 0 || (len & 3)) {
        return builder_error(m, "F item length not a multiple of 4");
    }
    if (!tppi_in_message_handler()) {
        return builder_error(m, "F item outside a message handler");
    }
    return add_item(m, TPPI_SEG_FORWARD, NULL, len, 0);
}

int tempest_msg_Ba(tempest_msg *m, void *blk_va, int blk_len,
                   TPPI_BlkTagChange chg)
{
    /* Checked (and the tag changed) when the message is sent. */
    return add_item(m, TPPI_SEG_BLOCK, blk_va, blk_len, (int)chg);
}

int tempest_msg_send(tempest_msg *m)
{
    tempest_item segs[TEMPEST_MSG_ITEMS];
    unsigned i;

    if (m->error) {
        tppi_report(&tppi_stats.bad_sends, "message to node %u for handler "
                    "0x%lx has a bad item: not sent", m->dest,
                    (unsigned long)m->pc);
        return -1;
    }
    for (i = 0; i < m->nitems; i++) {
        segs[i].kind = m->item[i].kind;
        segs[i].len = m->item[i].len;
        segs[i].chg = m->item[i].chg;
        segs[i].ptr = m->item[i].kind == TPPI_SEG_WORDS ?
                      &m->words[(uintptr_t)m->item[i].ptr] : m->item[i].ptr;
    }
    return tempest_send_items(m->dest, m->pc, segs, m->nitems);
}
