/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: tagged memory (Tempest sections 2 and 3.2).
 *
 * The page frames of the user-managed segment are a RAM region whose
 * 64-byte blocks carry access tags.  The region is registered with TCG's
 * tag check (include/exec/tcg-tagcheck.h): a page with no restricted
 * block keeps the fast path, a page with one is checked on every access.
 *
 * Changing tags (Tempest 3.2.6): a change that only adds access is
 * published at once (release), and a CPU that sees the new tag sees the
 * data written before it.  A change that takes access away runs inside an
 * exclusive section, with every vCPU stopped between instructions, and
 * flushes their TLBs when a page becomes restricted: once the command
 * succeeds no CPU can complete an access the new tag forbids.  The guest
 * learns that through FLASH's initiation protocol: the first COMMIT
 * answers RETRY while the section is pending, a later one SUCCESS.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "exec/cputlb.h"
#include "exec/exec-all.h"
#include "exec/tcg-tagcheck.h"
#include "hw/core/cpu.h"
#include "hw/sysbus.h"
#include "migration/blocker.h"
#include "system/tcg.h"
#include "hw/tempest/tempest-nc.h"
#include "trace.h"

#define BLK_SHIFT           TEMPEST_TAG_BLK_SHIFT
#define BLKS_PER_PAGE       (1 << (TEMPEST_PAGE_SHIFT - BLK_SHIFT))

/* What a tag lets through: 0 nothing, 1 loads, 2 loads and stores. */
static int tag_rank(uint8_t tag)
{
    return tag == TEMPEST_TAG_WRITABLE ? 2 :
           tag == TEMPEST_TAG_READONLY ? 1 : 0;
}

static bool nc_page_restricted(void *opaque, hwaddr offset)
{
    TempestNCState *s = opaque;

    return qatomic_read(&s->tag_restricted[offset >> TEMPEST_PAGE_SHIFT]);
}

/* The TCG hook: -1 if allowed, else an offset inside the refusing block. */
static int nc_tag_check(void *opaque, const void *haddr, unsigned size,
                        bool is_write)
{
    TempestNCState *s = opaque;
    uintptr_t off = (uintptr_t)haddr - (uintptr_t)s->tagmem_host;
    uint64_t first = off >> BLK_SHIFT, last = (off + size - 1) >> BLK_SHIFT;
    int need = is_write ? 2 : 1;

    for (uint64_t b = first; b <= last; b++) {
        if (tag_rank(qatomic_load_acquire(&s->tags[b])) < need) {
            qatomic_inc(&s->tag_faults);
            trace_tempest_nc_tag_fault(s->node_id, off, size, is_write,
                                       s->tags[b]);
            return b == first ? 0 : (b << BLK_SHIFT) - off;
        }
    }
    return -1;
}

static const TCGTagCheckOps nc_tagcheck_ops = {
    .page_restricted = nc_page_restricted,
    .check = nc_tag_check,
};

/* Set n tags from block first; returns whether a page became restricted. */
static bool nc_tags_apply(TempestNCState *s, uint64_t first, uint64_t n,
                          uint8_t tag)
{
    bool newly_restricted = false;

    for (uint64_t b = first; b < first + n; b++) {
        uint8_t old = s->tags[b];
        uint16_t *count = &s->tag_restricted[b / BLKS_PER_PAGE];

        if (old == tag) {
            continue;
        }
        if (old == TEMPEST_TAG_WRITABLE) {
            newly_restricted |= (*count)++ == 0;
        } else if (tag == TEMPEST_TAG_WRITABLE) {
            (*count)--;
        }
        qatomic_store_release(&s->tags[b], tag);
    }
    return newly_restricted;
}

/* Pages that had the fast path must now take the slow one. */
static void nc_flush_all_tlbs(void)
{
    CPUState *cpu;

    CPU_FOREACH(cpu) {
        tlb_flush(cpu);
    }
}

typedef struct TagWork {
    TempestNCState *s;
    TempestCmdBank *bank;
    uint64_t first, n;
    uint8_t tag;
} TagWork;

/* Every vCPU is stopped between instructions: take access away. */
static void nc_tags_exclusive(CPUState *cs, run_on_cpu_data data)
{
    TagWork *w = data.host_ptr;
    TempestNCState *s = w->s;

    if (nc_tags_apply(s, w->first, w->n, w->tag)) {
        nc_flush_all_tlbs();
    }
    s->tag_flushes++;
    trace_tempest_nc_tag_exclusive(s->node_id, w->first, w->n, w->tag);
    qatomic_set(&w->bank->tag_busy, false);
    g_free(w);
}

uint32_t tempest_nc_tag_set(TempestNCState *s, TempestCmdBank *b)
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
        differs |= s->tags[i] != tag;
        reduces |= tag_rank(tag) < tag_rank(s->tags[i]);
    }
    b->result = n;
    if (!differs) {
        return TEMPEST_CMD_SUCCESS;     /* also: our section has run */
    }
    if (!reduces || !tcg_enabled() || !current_cpu) {
        /* Adds access, or no vCPU runs guest code (qtest): at once. */
        if (nc_tags_apply(s, first, n, tag)) {
            nc_flush_all_tlbs();
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

uint32_t tempest_nc_tag_get(TempestNCState *s, TempestCmdBank *b)
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

void tempest_nc_tags_realize(TempestNCState *s, Error **errp)
{
    SysBusDevice *sbd = SYS_BUS_DEVICE(s);
    uint64_t blocks = s->tagmem_size >> BLK_SHIFT;

    if (!s->tagmem_size) {
        return;
    }
    if (s->tagmem_size > TEMPEST_TAGMEM_MAX ||
        s->tagmem_size & ((1 << TEMPEST_PAGE_SHIFT) - 1)) {
        error_setg(errp, "tagmem must be whole pages, at most %llu MiB",
                   TEMPEST_TAGMEM_MAX >> 20);
        return;
    }
    if (!memory_region_init_ram(&s->tagmem, OBJECT(s), "tempest.tagmem",
                                s->tagmem_size, errp)) {
        return;
    }
    memory_region_init_alias(&s->tagmem_alias, OBJECT(s),
                             "tempest.tagmem-alias", &s->tagmem, 0,
                             s->tagmem_size);
    sysbus_init_mmio(sbd, &s->tagmem);
    sysbus_init_mmio(sbd, &s->tagmem_alias);
    s->tagmem_host = memory_region_get_ram_ptr(&s->tagmem);
    s->tags = g_malloc(blocks);
    memset(s->tags, TEMPEST_TAG_WRITABLE, blocks);
    s->tag_restricted = g_new0(uint16_t, blocks / BLKS_PER_PAGE);
    if (tcg_enabled()) {
        tcg_tagcheck_register(&s->tagmem, &nc_tagcheck_ops, s);
    }
    error_setg(&s->tags_blocker, "%s: tagged memory's tags are not "
               "migrated yet", TYPE_TEMPEST_NC);
    migrate_add_blocker(&s->tags_blocker, errp);
}

void tempest_nc_tags_reset(TempestNCState *s)
{
    if (s->tags) {
        memset(s->tags, TEMPEST_TAG_WRITABLE, s->tagmem_size >> BLK_SHIFT);
        memset(s->tag_restricted, 0, (s->tagmem_size >> TEMPEST_PAGE_SHIFT) *
                                     sizeof(uint16_t));
    }
    s->tag_faults = 0;
    s->tag_flushes = 0;
    for (int i = 0; i < TEMPEST_MAX_CPUS; i++) {
        s->bank[i].tag_busy = false;
    }
}
