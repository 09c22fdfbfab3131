/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: tagged memory (Tempest sections 2 and 3.2).
 *
 * The page frames of the user-managed segment are a RAM region whose
 * 64-byte blocks carry access tags.  The region is registered with TCG's
 * tag check (include/exec/tcg-tagcheck.h): a page with no restricted
 * block keeps the fast path, a page with one is checked on every access.
 *
 * The same frames are mapped a second time, unchecked, for the library and
 * for DMA: a second RAM region over the same host memory (not an alias,
 * which would resolve to the checked region), so the check belongs to
 * the checked region alone.
 *
 * Changing tags (Tempest 3.2.6): a change that only adds access is
 * published at once (release), and a CPU that sees the new tag sees the
 * data written before it.  A change that takes access away runs inside an
 * exclusive section, with every vCPU stopped between instructions, and
 * drops every vCPU's TLB entries of the pages that become restricted
 * (tcg_tagcheck_flush_range; the rest of the TLBs stays): once the
 * command succeeds no CPU can complete an access the new tag forbids.
 * The guest learns that through FLASH's initiation protocol: the first
 * COMMIT answers RETRY while the section is pending, a later one SUCCESS.
 *
 * vCPUs read the tags and the per-page counts of restricted blocks with
 * atomic loads, without the BQL; every write to them is atomic too.  The
 * tables stay valid for an RCU grace period after the hook is withdrawn.
 *
 * Migration: the tags travel in the device's "tags" subsection; the
 * per-page counts are derived from them again on load.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/rcu.h"
#include "exec/cputlb.h"
#include "exec/exec-all.h"
#include "exec/tcg-tagcheck.h"
#include "hw/core/cpu.h"
#include "hw/sysbus.h"
#include "migration/vmstate.h"
#include "system/tcg.h"
#include "tempest-nc-internal.h"
#include "trace.h"

#define BLK_SHIFT           TEMPEST_TAG_BLK_SHIFT
#define BLKS_PER_PAGE       (1 << (TEMPEST_PAGE_SHIFT - BLK_SHIFT))

/* What a tag lets through: 0 nothing, 1 loads, 2 loads and stores. */
static int tag_rank(uint8_t tag)
{
    return tag == TEMPEST_TAG_WRITABLE ? 2 :
           tag == TEMPEST_TAG_READONLY ? 1 : 0;
}

/* TCG hook (vCPU, RCU): does the page at offset hold a restricted block? */
static bool nc_page_restricted(void *opaque, hwaddr offset)
{
    TempestNCState *s = opaque;
    uint16_t *restricted = qatomic_rcu_read(&s->tag_restricted);

    return restricted &&
           qatomic_read(&restricted[offset >> TEMPEST_PAGE_SHIFT]);
}

/*
 * TCG hook (vCPU, RCU): -1 if size bytes at off may be accessed, else an
 * offset from off inside the refusing block.  TCG checks that the range
 * is inside the region.
 */
static int nc_tag_check(void *opaque, hwaddr off, unsigned size,
                        bool is_write)
{
    TempestNCState *s = opaque;
    uint8_t *tags = qatomic_rcu_read(&s->tags);
    uint64_t first = off >> BLK_SHIFT, last = (off + size - 1) >> BLK_SHIFT;
    int need = is_write ? 2 : 1;

    if (!tags) {
        return -1;      /* being unrealized */
    }
    for (uint64_t b = first; b <= last; b++) {
        uint8_t tag = qatomic_load_acquire(&tags[b]);

        if (tag_rank(tag) < need) {
            qatomic_inc(&s->tag_faults);
            trace_tempest_nc_tag_fault(s->node_id, off, size, is_write, tag);
            return b == first ? 0 : (b << BLK_SHIFT) - off;
        }
    }
    return -1;
}

static const TCGTagCheckOps nc_tagcheck_ops = {
    .page_restricted = nc_page_restricted,
    .check = nc_tag_check,
};

/* Pages [lo, hi) of tagged memory (hi == 0: none). */
typedef struct PageRange {
    uint64_t lo, hi;
} PageRange;

/*
 * Set n tags from block first; returns the pages that became restricted
 * (from the first to the last of them; hi is 0 if none did).
 */
static PageRange nc_tags_apply(TempestNCState *s, uint64_t first,
                               uint64_t n, uint8_t tag)
{
    PageRange pages = { 0, 0 };

    for (uint64_t b = first; b < first + n; b++) {
        uint8_t old = qatomic_read(&s->tags[b]);
        uint64_t page = b / BLKS_PER_PAGE;
        uint16_t *count = &s->tag_restricted[page];

        if (old == tag) {
            continue;
        }
        if (old == TEMPEST_TAG_WRITABLE) {
            /* Counted before the tag is published: vCPUs see the page. */
            if (qatomic_fetch_inc(count) == 0) {
                pages.lo = pages.hi ? pages.lo : page;
                pages.hi = page + 1;
            }
        } else if (tag == TEMPEST_TAG_WRITABLE) {
            qatomic_dec(count);
        }
        qatomic_store_release(&s->tags[b], tag);
    }
    return pages;
}

static void nc_flush_own_tlb(CPUState *cpu, run_on_cpu_data data)
{
    tlb_flush(cpu);
}

/*
 * Pages that had the fast path must now take the slow one, outside a
 * vCPU (no vCPU runs guest code, or the VM is stopped): every vCPU
 * flushes its own TLB before it runs guest code again (the work queued
 * here runs before it leaves its loop for guest code).
 */
static void nc_flush_tlbs(void)
{
    CPUState *cpu;

    if (!tcg_enabled()) {
        return;
    }
    CPU_FOREACH(cpu) {
        async_run_on_cpu(cpu, nc_flush_own_tlb, RUN_ON_CPU_NULL);
    }
}

typedef struct TagWork {
    TempestNCState *s;
    TempestCmdBank *bank;
    uint64_t first, n;
    uint8_t tag;
} TagWork;

/*
 * Every vCPU is stopped between instructions: take access away.  Only
 * the TLB entries of the pages that became restricted go (every vCPU's,
 * changed here while they are stopped): a whole flush made the code that
 * ran next refill every page it touched (docs/tempest.rst).
 */
static void nc_tags_exclusive(CPUState *cs, run_on_cpu_data data)
{
    TagWork *w = data.host_ptr;
    TempestNCState *s = w->s;
    PageRange pages;

    if (s->tags) {
        /* (Unrealized meanwhile: nothing is checked any more.) */
        pages = nc_tags_apply(s, w->first, w->n, w->tag);
        if (pages.hi) {
            unsigned dropped = tcg_tagcheck_flush_range(
                pages.lo << TEMPEST_PAGE_SHIFT,
                (pages.hi - pages.lo) << TEMPEST_PAGE_SHIFT);

            trace_tempest_nc_tag_tlb_drop(s->node_id, pages.lo,
                                          pages.hi - pages.lo, dropped);
        }
    }
    qatomic_inc(&s->tag_flushes);
    trace_tempest_nc_tag_exclusive(s->node_id, w->first, w->n, w->tag);
    qatomic_set(&w->bank->tag_busy, false);
    g_free(w);
}

static uint32_t tags_cmd_set(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t addr = b->arg[0], len = b->arg[1], tag = b->arg[2];
    uint64_t first, n;
    bool reduces = false, differs = false;
    TagWork *w;

    if (tag > TEMPEST_TAG_WRITABLE) {
        b->reason = TEMPEST_CMD_E_BAD_TAG;
        return TEMPEST_CMD_FAIL;
    }
    if (!len || len & ((1 << BLK_SHIFT) - 1)) {
        b->reason = TEMPEST_CMD_E_BAD_LEN;
        return TEMPEST_CMD_FAIL;
    }
    addr &= ~(uint64_t)((1 << BLK_SHIFT) - 1);
    if (addr < TEMPEST_TAGMEM_BASE ||
        addr - TEMPEST_TAGMEM_BASE >= s->tagmem_size ||
        len > s->tagmem_size - (addr - TEMPEST_TAGMEM_BASE)) {
        b->reason = TEMPEST_CMD_E_BAD_ADDR;
        return TEMPEST_CMD_FAIL;
    }
    if (qatomic_read(&b->tag_busy)) {
        return TEMPEST_CMD_RETRY;   /* our exclusive section is pending */
    }
    first = (addr - TEMPEST_TAGMEM_BASE) >> BLK_SHIFT;
    n = len >> BLK_SHIFT;
    for (uint64_t i = first; i < first + n; i++) {
        uint8_t old = qatomic_read(&s->tags[i]);

        differs |= old != tag;
        reduces |= tag_rank(tag) < tag_rank(old);
    }
    b->result = n;
    if (!differs) {
        return TEMPEST_CMD_SUCCESS;     /* also: our section has run */
    }
    if (!reduces || !tcg_enabled() || !current_cpu) {
        /* Adds access, or no vCPU runs guest code (qtest): at once. */
        if (nc_tags_apply(s, first, n, tag).hi) {
            nc_flush_tlbs();
        }
        return TEMPEST_CMD_SUCCESS;
    }
    w = g_new(TagWork, 1);
    *w = (TagWork) { s, b, first, n, tag };
    qatomic_set(&b->tag_busy, true);
    async_safe_run_on_cpu(current_cpu, nc_tags_exclusive,
                          RUN_ON_CPU_HOST_PTR(w));
    return TEMPEST_CMD_RETRY;
}

void tempest_nc_tag_upgrade(TempestNCState *s, uint64_t value)
{
    uint64_t first = extract64(value, 0, 32), n = extract64(value, 32, 16);
    uint8_t tag = extract64(value, 48, 16);
    uint64_t blocks = s->tagmem_size >> BLK_SHIFT;

    if (!s->tags || tag > TEMPEST_TAG_WRITABLE || n == 0 ||
        first >= blocks || n > blocks - first) {
        trace_tempest_nc_tag_upgrade_refused(s->node_id, first, n, tag);
        tempest_nc_guest_error(s, TEMPEST_NC_ERR_TAG_REFUSED,
                               TEMPEST_NC_TAG_UPGRADE, 8);
        return;
    }
    for (uint64_t i = first; i < first + n; i++) {
        if (tag_rank(tag) < tag_rank(qatomic_read(&s->tags[i]))) {
            /* Taking access away needs TAG_SET's exclusive section. */
            trace_tempest_nc_tag_upgrade_refused(s->node_id, first, n, tag);
            tempest_nc_guest_error(s, TEMPEST_NC_ERR_TAG_REFUSED,
                                   TEMPEST_NC_TAG_UPGRADE, 8);
            return;
        }
    }
    /* Only adds access: no page becomes restricted, nothing to flush. */
    nc_tags_apply(s, first, n, tag);
}

static uint32_t tags_cmd_get(TempestNCState *s, TempestCmdBank *b)
{
    uint64_t addr = b->arg[0];

    if (addr < TEMPEST_TAGMEM_BASE ||
        addr - TEMPEST_TAGMEM_BASE >= s->tagmem_size) {
        b->reason = TEMPEST_CMD_E_BAD_ADDR;
        return TEMPEST_CMD_FAIL;
    }
    b->result = qatomic_load_acquire(
        &s->tags[(addr - TEMPEST_TAGMEM_BASE) >> BLK_SHIFT]);
    return TEMPEST_CMD_SUCCESS;
}

/* Recount the restricted blocks of every page from the tags. */
static void nc_tags_recount(TempestNCState *s)
{
    uint64_t pages = s->tagmem_size >> TEMPEST_PAGE_SHIFT;

    for (uint64_t p = 0; p < pages; p++) {
        uint16_t n = 0;

        for (unsigned i = 0; i < BLKS_PER_PAGE; i++) {
            n += qatomic_read(&s->tags[p * BLKS_PER_PAGE + i]) !=
                 TEMPEST_TAG_WRITABLE;
        }
        qatomic_set(&s->tag_restricted[p], n);
    }
}

static const TempestNCCommand tags_commands[] = {
    { TEMPEST_CMD_TAG_SET, tags_cmd_set },
    { TEMPEST_CMD_TAG_GET, tags_cmd_get },
    { 0, NULL }
};

static const TempestNCHooks tags_hooks = {
    .name = "tags",
    .commands = tags_commands,
};

static bool tags_realize(TempestNCState *s, Error **errp)
{
    SysBusDevice *sbd = SYS_BUS_DEVICE(s);
    uint64_t blocks = s->tagmem_size >> BLK_SHIFT;

    tempest_nc_register(s, &tags_hooks);
    if (!s->tagmem_size) {
        return true;
    }
    if (s->tagmem_size > TEMPEST_TAGMEM_MAX ||
        s->tagmem_size & ((1 << TEMPEST_PAGE_SHIFT) - 1)) {
        error_setg(errp, "tagmem must be whole pages, at most %llu MiB",
                   TEMPEST_TAGMEM_MAX >> 20);
        return false;
    }
    /*
     * RAM regions live as long as the device (QEMU's rule for regions
     * with host memory): made at the first realize, kept by unrealize.
     */
    if (!s->tagmem_host) {
        if (!memory_region_init_ram(&s->tagmem, OBJECT(s), "tempest.tagmem",
                                    s->tagmem_size, errp)) {
            return false;
        }
        s->tagmem_host = memory_region_get_ram_ptr(&s->tagmem);
        memory_region_init_ram_ptr(&s->tagmem_unchecked, OBJECT(s),
                                   "tempest.tagmem-unchecked",
                                   s->tagmem_size, s->tagmem_host);
        /*
         * Migrated too: dirty pages are tracked per region, so what is
         * written through this window must be sent from it.
         */
        vmstate_register_ram(&s->tagmem_unchecked, DEVICE(s));
        sysbus_init_mmio(sbd, &s->tagmem);
        sysbus_init_mmio(sbd, &s->tagmem_unchecked);
    } else if (memory_region_size(&s->tagmem) != s->tagmem_size) {
        error_setg(errp, "tagmem-size cannot change once tagged memory "
                   "exists (0x%" PRIx64 " bytes)",
                   (uint64_t)memory_region_size(&s->tagmem));
        return false;
    }
    s->tag_blocks = blocks;
    s->tags = g_malloc(blocks);
    memset(s->tags, TEMPEST_TAG_WRITABLE, blocks);
    s->tag_restricted = g_new0(uint16_t, blocks / BLKS_PER_PAGE);
    if (tcg_enabled() &&
        !tcg_tagcheck_register(&s->tagmem, &nc_tagcheck_ops, s, errp)) {
        g_free(s->tags);
        g_free(s->tag_restricted);
        s->tags = NULL;
        s->tag_restricted = NULL;
        return false;
    }
    return true;
}

typedef struct TagTables {
    struct rcu_head rcu;
    uint8_t *tags;
    uint16_t *restricted;
} TagTables;

static void nc_tag_tables_free(TagTables *t)
{
    g_free(t->tags);
    g_free(t->restricted);
    g_free(t);
}

/* Undo tags_realize (the regions stay: see there). */
static void tags_unrealize(TempestNCState *s)
{
    TagTables *t;

    if (!s->tags) {
        return;
    }
    if (tcg_enabled()) {
        tcg_tagcheck_unregister(&s->tagmem);
    }
    /* A vCPU may still be in a hook: free the tables after it is out. */
    t = g_new(TagTables, 1);
    t->tags = s->tags;
    t->restricted = s->tag_restricted;
    qatomic_rcu_set(&s->tags, NULL);
    qatomic_rcu_set(&s->tag_restricted, NULL);
    call_rcu(t, nc_tag_tables_free, rcu);
}

/* Reset runs with every vCPU paused. */
static void tags_reset(TempestNCState *s)
{
    if (s->tags) {
        for (uint64_t b = 0; b < s->tag_blocks; b++) {
            qatomic_set(&s->tags[b], TEMPEST_TAG_WRITABLE);
        }
        nc_tags_recount(s);
    }
    qatomic_set(&s->tag_faults, 0);
    qatomic_set(&s->tag_flushes, 0);
    for (int i = 0; i < TEMPEST_MAX_CPUS; i++) {
        qatomic_set(&s->bank[i].tag_busy, false);
    }
}

static bool nc_tags_needed(void *opaque)
{
    TempestNCState *s = opaque;

    return s->tags != NULL;
}

static int nc_tags_post_load(void *opaque, int version_id)
{
    TempestNCState *s = opaque;

    for (uint64_t b = 0; b < s->tag_blocks; b++) {
        if (s->tags[b] > TEMPEST_TAG_WRITABLE) {
            return -EINVAL;
        }
    }
    nc_tags_recount(s);
    /* The VM is stopped: every vCPU refills its TLB from the new tags. */
    nc_flush_tlbs();
    return 0;
}

/*
 * The tags of a node with tagged memory: one byte per block (the frames
 * themselves are RAM and migrate as RAM).  The sizes must match: the
 * destination is started with the same tagmem.
 */
const VMStateDescription vmstate_tempest_nc_tags = {
    .name = TYPE_TEMPEST_NC "/tags",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = nc_tags_needed,
    .post_load = nc_tags_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(tag_blocks, TempestNCState, NULL),
        VMSTATE_VBUFFER_UINT32(tags, TempestNCState, 1, NULL, tag_blocks),
        VMSTATE_UINT32(tag_faults, TempestNCState),
        VMSTATE_UINT32(tag_flushes, TempestNCState),
        VMSTATE_END_OF_LIST()
    }
};

const TempestNCEngine tempest_nc_tags_engine = {
    .name = "tags",
    .realize = tags_realize,
    .unrealize = tags_unrealize,
    .reset = tags_reset,
};
