/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest: virtual memory management (Tempest spec 3.1), block access
 * control (3.2), block access and page faults (section 2) and thread
 * resumption (3.6).
 *
 * Pages.  A user-managed page is a 4 KiB page of the segment mapped by the
 * runtime (rt_segment_map) to a frame of the node controller's tagged
 * memory.  Frames come from a stack of free frame numbers, lowest first,
 * every block of a free frame Writable (as at reset: an upgrade when a
 * page is freed costs little, and most pages are mapped Writable);
 * a page's record (frame, mode, home, usr_ptr) lives in a two-level table
 * indexed by page number, leaves allocated on first use.  The frame's
 * data is moved through its unchecked alias (TEMPEST_TAGMEM_ALIAS), never
 * through the segment, so the library itself never faults.
 *
 * Tags.  The node controller holds the tags and checks every access; the
 * library keeps a copy (2 bits a block, per frame) so that reading a tag
 * (TPPI_get_blk_acc, choosing a fault handler) costs no device command.
 * Every change goes through tag_change(): TEMPEST_CMD_TAG_SET, which for
 * a change that takes access away returns only once no vCPU can complete
 * an access the new tag forbids (3.2.6).  Data and tag move in the order
 * 3.2.6 asks: a change that takes access away (Downgrade_RO, Invalidate,
 * Mark_Busy) first and then the data is read or written; any other change
 * after the data.
 *
 * Faults.  The runtime calls fault_hook() on the faulting CPU.  It
 * records (va, pc, is_write, kind) in that CPU's slot, marks it QUEUED
 * with an arrival number, wakes the protocol thread (rt_cpu_wake on a
 * dedicated CPU; on a one-vCPU node it runs, inline, what the node
 * controller's interrupt would run: tppi_run_protocol_thread) and waits,
 * polling for the spin time (tppi_spin_masked, spin_us) and then sleeping
 * in WFI, until TPPI_resume_va() marks
 * the slot RESUMED; the instruction is then retried.  The protocol thread
 * takes QUEUED slots in arrival order before any timer or message
 * (fault_step, the core's TPPI_WORK_FAULTS work, first thing in each of
 * its steps) and calls the handler the fault needs given the page's mode
 * and the block's tag *now*: if the access is allowed by then, or the
 * page is mapped by then, the thread is resumed without a handler.  A
 * fault of the protocol thread itself, one before libtempest started, or
 * one no handler is registered for, goes back to the runtime as a crash
 * report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tempest-internal.h"

#define SEG_PAGES           (TEMPEST_SEGMENT_SIZE >> TPPI_PAGE_SHIFT)
#define LEAF_SHIFT          9
#define LEAF_PAGES          (1U << LEAF_SHIFT)
#define NUM_LEAVES          (SEG_PAGES >> LEAF_SHIFT)
#define BLKS_PER_PAGE       (TPPI_PAGE_SIZE / TPPI_TAG_BLK_SIZE)
#define SHADOW_WORDS        (BLKS_PER_PAGE / 16)    /* 2 bits a block */
/*
 * Polls of a faulting CPU before it sleeps (about 20 us under TCG).  The
 * clock is not read while polling: under TCG reading CNTPCT takes QEMU's
 * global lock, which the protocol thread's device accesses need.
 */

/* A user-managed page. */
struct vm_page {
    uint32_t frame1;        /* its frame number + 1; 0: not mapped */
    TPPI_PageMode mode;
    TPPI_NodeId home;
    void *usr_ptr;
};

/* Fault slot states. */
enum {
    FS_IDLE,                /* no fault */
    FS_QUEUED,              /* waiting for the protocol thread */
    FS_RUNNING,             /* its handler was called: waiting to resume */
    FS_RESUMED,             /* TPPI_resume_va(): retry the access */
};

/* The fault a CPU is suspended on. */
struct fault_slot {
    uint64_t va;
    uint64_t pc;
    uint32_t seq;
    int kind;               /* RT_FAULT_BLOCK or RT_FAULT_PAGE */
    bool is_write;
    uint32_t state;
} __attribute__((aligned(64)));

static struct vm_page *leaves[NUM_LEAVES];
static uint32_t *free_frames;   /* a stack, lowest frame on top */
static uint32_t nfree;
static uint32_t nframes;
static uint32_t *shadow;        /* SHADOW_WORDS per frame */
static bool vm_ready;
static uint32_t vm_lock;
static uint32_t vm_seq;         /* odd while a page record changes */

static TPPI_PageFaultHandlerPtr page_handler;
static TPPI_BlkAccFaultHandlerPtr
    blk_handlers[TPPI_NUM_PAGE_MODES][TPPI_NUM_BLK_ACC_TAGS][2];

static struct fault_slot slots[TEMPEST_MAX_CPUS];
static uint32_t fault_seq;
/*
 * How many slots are FS_QUEUED (counted up before a slot becomes so,
 * down after it stops being so): the protocol thread asks on every turn
 * of its spin and every step whether a fault waits, and a look at all
 * TEMPEST_MAX_CPUS slots was a sixth of a one-vCPU node's guest
 * instructions per message round trip (docs/fabric.rst, "Warm and cold,
 * thirteenth session").  Never 0 while a slot is queued.
 */
static uint32_t slots_queued;

static const char *const tag_names[TPPI_NUM_BLK_ACC_TAGS] = {
    [TPPI_Blk_Busy] = "Busy",
    [TPPI_Blk_Invalid] = "Invalid",
    [TPPI_Blk_ReadOnly] = "ReadOnly",
    [TPPI_Blk_Writable] = "Writable",
};

_Static_assert(TPPI_Blk_Busy == TEMPEST_TAG_BUSY &&
               TPPI_Blk_Invalid == TEMPEST_TAG_INVALID &&
               TPPI_Blk_ReadOnly == TEMPEST_TAG_READONLY &&
               TPPI_Blk_Writable == TEMPEST_TAG_WRITABLE,
               "TPPI_BlkAccTag and the device's tags differ");
_Static_assert(BLKS_PER_PAGE % 16 == 0, "shadow words");

/* ---- locking -------------------------------------------------------- */

/* IRQs masked: on a one-vCPU node handlers are interrupt handlers. */
static uint64_t lock_take(void)
{
    uint64_t flags;

    for (;;) {
        flags = rt_irq_save();
        if (!__atomic_exchange_n(&vm_lock, 1, __ATOMIC_ACQUIRE)) {
            return flags;
        }
        rt_irq_restore(flags);
        while (__atomic_load_n(&vm_lock, __ATOMIC_RELAXED)) {
            __asm__ volatile("yield");
        }
    }
}

static void lock_drop(uint64_t flags)
{
    __atomic_store_n(&vm_lock, 0, __ATOMIC_RELEASE);
    rt_irq_restore(flags);
}

/*
 * Page records are read without the lock (page_get: a seqlock, so that a
 * tag change or a fault's dispatch costs no IRQ masking and no atomic
 * exchange); whoever changes one holds the lock and brackets the change
 * with these two.
 */
static void rec_change_begin(void)
{
    __atomic_store_n(&vm_seq, vm_seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void rec_change_end(void)
{
    __atomic_store_n(&vm_seq, vm_seq + 1, __ATOMIC_RELEASE);
}

/* ---- addresses and records --------------------------------------------- */

static bool in_segment(uintptr_t va)
{
    return va >= TPPI_SEGMENT_BASE &&
           va - TPPI_SEGMENT_BASE < TPPI_SEGMENT_SIZE;
}

static uint64_t frame_pa(uint32_t frame)
{
    return TEMPEST_TAGMEM_BASE + ((uint64_t)frame << TPPI_PAGE_SHIFT);
}

static uint8_t *frame_alias(uint32_t frame)
{
    return (uint8_t *)(uintptr_t)(TEMPEST_TAGMEM_ALIAS +
                                  ((uint64_t)frame << TPPI_PAGE_SHIFT));
}

/* The record of the page holding @va (in the segment), or NULL; locked. */
static struct vm_page *page_rec(uintptr_t va, bool create)
{
    uint64_t pn = (va - TPPI_SEGMENT_BASE) >> TPPI_PAGE_SHIFT;
    struct vm_page **leaf = &leaves[pn >> LEAF_SHIFT];

    if (*leaf == NULL) {
        if (!create) {
            return NULL;
        }
        struct vm_page *fresh = calloc(LEAF_PAGES, sizeof(struct vm_page));

        if (fresh == NULL) {
            return NULL;
        }
        /* Zeroed before page_get() can see it. */
        __atomic_store_n(leaf, fresh, __ATOMIC_RELEASE);
    }
    return &(*leaf)[pn & (LEAF_PAGES - 1)];
}

/*
 * Copies the record of the mapped page holding @va to *@out; returns
 * false if @va is outside the segment or not mapped.  Without the lock:
 * a copy taken while no change was under way (vm_seq even and unchanged
 * around it), else again.  A change holds the lock with IRQs masked, so
 * it never waits on a reader of its own CPU.
 */
static bool page_get(uintptr_t va, struct vm_page *out)
{
    uint64_t pn = (va - TPPI_SEGMENT_BASE) >> TPPI_PAGE_SHIFT;
    struct vm_page *leaf, *p;
    uint32_t seq;
    bool ok;

    if (!in_segment(va)) {
        return false;
    }
    for (;;) {
        seq = __atomic_load_n(&vm_seq, __ATOMIC_ACQUIRE);
        if (seq & 1) {
            __asm__ volatile("yield");
            continue;
        }
        leaf = __atomic_load_n(&leaves[pn >> LEAF_SHIFT], __ATOMIC_ACQUIRE);
        ok = false;
        if (leaf) {
            p = &leaf[pn & (LEAF_PAGES - 1)];
            out->frame1 = __atomic_load_n(&p->frame1, __ATOMIC_RELAXED);
            out->mode = __atomic_load_n(&p->mode, __ATOMIC_RELAXED);
            out->home = __atomic_load_n(&p->home, __ATOMIC_RELAXED);
            out->usr_ptr = __atomic_load_n(&p->usr_ptr, __ATOMIC_RELAXED);
            ok = out->frame1 != 0;
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&vm_seq, __ATOMIC_RELAXED) == seq) {
            return ok;
        }
    }
}

/* ---- the frame allocator and the tag copy ------------------------------ */

/* Sets up the allocator at first use; locked.  False: no tagged memory. */
static bool vm_init_locked(void)
{
    uint64_t bytes = rt_tagmem_size();
    uint32_t n, i;

    if (vm_ready) {
        return nframes != 0;
    }
    vm_ready = true;
    n = (uint32_t)(bytes >> TPPI_PAGE_SHIFT);
    if (n == 0 || !nc_tags_present()) {
        return false;
    }
    free_frames = malloc((size_t)n * sizeof(uint32_t));
    shadow = malloc((size_t)n * SHADOW_WORDS * sizeof(uint32_t));
    if (free_frames == NULL || shadow == NULL) {
        free(free_frames);
        free(shadow);
        tppi_report(NULL, "no memory for the tags of %u pages of tagged "
                    "memory: no user-managed pages", (unsigned)n);
        return false;
    }
    for (i = 0; i < n; i++) {
        free_frames[i] = n - 1 - i;
    }
    /* The device starts every block Writable (3: both bits set). */
    memset(shadow, 0xff, (size_t)n * SHADOW_WORDS * sizeof(uint32_t));
    nfree = n;
    nframes = n;
    return true;
}

static unsigned shadow_get(uint32_t frame, unsigned blk)
{
    uint32_t w = __atomic_load_n(&shadow[frame * SHADOW_WORDS + blk / 16],
                                 __ATOMIC_ACQUIRE);

    return (w >> (2 * (blk % 16))) & 3;
}

/*
 * Records tag @tag for blocks [@blk, @blk + @n) of @frame: one atomic
 * update per word, so that a reader never sees a tag half changed.
 */
static void shadow_set(uint32_t frame, unsigned blk, unsigned n, unsigned tag)
{
    uint32_t *w, old, mask, bits;
    unsigned b = blk, end = blk + n, k;

    while (b < end) {
        w = &shadow[frame * SHADOW_WORDS + b / 16];
        mask = 0;
        bits = 0;
        for (k = b; k < end && k / 16 == b / 16; k++) {
            mask |= 3U << (2 * (k % 16));
            bits |= tag << (2 * (k % 16));
        }
        old = __atomic_load_n(w, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(w, &old, (old & ~mask) | bits,
                                            true, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED)) {
            /* another block of the word changed: again */
        }
        b = k;
    }
}

static bool shadow_all(uint32_t frame, unsigned tag)
{
    uint32_t want = 0x55555555U * tag;
    unsigned i;

    for (i = 0; i < SHADOW_WORDS; i++) {
        if (shadow[frame * SHADOW_WORDS + i] != want) {
            return false;
        }
    }
    return true;
}

/*
 * Gives blocks [@off, @off + @len) of @frame (whole blocks) the tag
 * @tag, on the device and in the copy.  Returns false if the device
 * refused (reported).
 */
/* What a tag lets through: 0 nothing, 1 loads, 2 loads and stores. */
static unsigned tag_rank(unsigned tag)
{
    return tag == TPPI_Blk_Writable ? 2 : tag == TPPI_Blk_ReadOnly ? 1 : 0;
}

/* True if setting @tag on those blocks adds access to every one. */
static bool adds_access(uint32_t frame, unsigned off, unsigned len,
                        unsigned tag)
{
    unsigned b;

    for (b = off / TPPI_TAG_BLK_SIZE; b < (off + len) / TPPI_TAG_BLK_SIZE;
         b++) {
        if (tag_rank(shadow_get(frame, b)) > tag_rank(tag)) {
            return false;
        }
    }
    return true;
}

static bool tag_change(uint32_t frame, unsigned off, unsigned len,
                       unsigned tag)
{
    uint32_t reason = 0;

    /* An upgrade: one device access (TAG_UPGRADE), no command. */
    if (adds_access(frame, off, len, tag) &&
        nc_tag_upgrade(frame_pa(frame) + off, len, tag) == 0) {
        shadow_set(frame, off / TPPI_TAG_BLK_SIZE, len / TPPI_TAG_BLK_SIZE,
                   tag);
        return true;
    }
    if (nc_tag_set(frame_pa(frame) + off, len, tag, &reason) != 0) {
        tppi_report(NULL, "setting tag %u on %u bytes of frame %u failed: "
                    "%s", tag, len, (unsigned)frame,
                    nc_cmd_reason_name(reason));
        return false;
    }
    shadow_set(frame, off / TPPI_TAG_BLK_SIZE, len / TPPI_TAG_BLK_SIZE, tag);
    return true;
}

/* ---- 3.1: pages ------------------------------------------------------- */

int TPPI_alloc_and_map(void *pg, TPPI_PageMode mode, TPPI_BlkAccTag acc,
                       TPPI_NodeId home, void *usr_ptr)
{
    uintptr_t va = (uintptr_t)pg;
    struct vm_page *p;
    uint32_t frame;
    uint64_t flags;

    if ((va & (TPPI_PAGE_SIZE - 1)) || !in_segment(va) ||
        mode >= TPPI_NUM_PAGE_MODES || (unsigned)acc > TPPI_MAX_BLK_ACC_TAG) {
        return 0;
    }
    flags = lock_take();
    if (!vm_init_locked() || nfree == 0) {
        lock_drop(flags);
        return 0;
    }
    p = page_rec(va, true);
    if (p == NULL || p->frame1) {
        lock_drop(flags);
        return 0;
    }
    /* Reserve the page: a fault on it meanwhile is retried. */
    frame = free_frames[--nfree];
    rec_change_begin();
    p->frame1 = frame + 1;
    p->mode = mode;
    p->home = home;
    p->usr_ptr = usr_ptr;
    rec_change_end();
    lock_drop(flags);

    /* A fresh page: zeroed, every block tagged acc, and only then mapped. */
    memset(frame_alias(frame), 0, TPPI_PAGE_SIZE);
    if ((shadow_all(frame, acc) ||
         tag_change(frame, 0, TPPI_PAGE_SIZE, acc)) &&
        rt_segment_map(va, frame_pa(frame)) == 0) {
        return 1;
    }
    flags = lock_take();
    rec_change_begin();
    p->frame1 = 0;
    rec_change_end();
    free_frames[nfree++] = frame;
    lock_drop(flags);
    return 0;
}

int TPPI_unmap_and_free(void *pg)
{
    uintptr_t va = (uintptr_t)pg;
    struct vm_page *p;
    uint32_t frame;
    uint64_t flags;

    if ((va & (TPPI_PAGE_SIZE - 1)) || !in_segment(va)) {
        return 0;
    }
    flags = lock_take();
    p = page_rec(va, false);
    if (p == NULL || p->frame1 == 0 || rt_segment_unmap(va) != 0) {
        lock_drop(flags);
        return 0;
    }
    frame = p->frame1 - 1;
    rec_change_begin();
    p->frame1 = 0;
    rec_change_end();
    lock_drop(flags);
    /* A free frame is all Writable: most pages are mapped so. */
    if (!shadow_all(frame, TPPI_Blk_Writable)) {
        tag_change(frame, 0, TPPI_PAGE_SIZE, TPPI_Blk_Writable);
    }
    flags = lock_take();
    free_frames[nfree++] = frame;
    lock_drop(flags);
    return 1;
}

int TPPI_remap(void *old_pg, void *new_pg)
{
    uintptr_t ova = (uintptr_t)old_pg, nva = (uintptr_t)new_pg;
    struct vm_page *op, *np;
    uint64_t flags;

    if ((ova & (TPPI_PAGE_SIZE - 1)) || (nva & (TPPI_PAGE_SIZE - 1)) ||
        !in_segment(ova) || !in_segment(nva)) {
        return 0;
    }
    flags = lock_take();
    op = page_rec(ova, false);
    np = page_rec(nva, true);
    if (op == NULL || op->frame1 == 0 || np == NULL) {
        lock_drop(flags);
        return 0;
    }
    if (ova == nva) {
        lock_drop(flags);
        return 1;
    }
    if (np->frame1 || rt_segment_map(nva, frame_pa(op->frame1 - 1)) != 0) {
        lock_drop(flags);
        return 0;
    }
    /* The same frame: data, tags, mode, home and usr_ptr go with it. */
    rec_change_begin();
    *np = *op;
    op->frame1 = 0;
    rec_change_end();
    rt_segment_unmap(ova);
    lock_drop(flags);
    return 1;
}

void TPPI_register_page_fault_handler(TPPI_PageFaultHandlerPtr fn)
{
    __atomic_store_n(&page_handler, fn, __ATOMIC_RELEASE);
}

int TPPI_get_page_info(void *va, TPPI_PageInfo *info_ptr)
{
    struct vm_page p;

    if (!in_segment((uintptr_t)va) ||
        ((uintptr_t)info_ptr & (_Alignof(TPPI_PageInfo) - 1))) {
        return -1;
    }
    if (!page_get((uintptr_t)va, &p)) {
        return 0;
    }
    if (info_ptr) {
        info_ptr->mode = p.mode;
        info_ptr->usr_ptr = p.usr_ptr;
        info_ptr->home = p.home;
    }
    return 1;
}

void *TPPI_get_page_user_ptr(void *va)
{
    struct vm_page p;

    return page_get((uintptr_t)va, &p) ? p.usr_ptr : NULL;
}

TPPI_PageMode TPPI_get_page_mode(void *va)
{
    struct vm_page p;

    return page_get((uintptr_t)va, &p) ? p.mode : 0;
}

TPPI_NodeId TPPI_get_page_home(void *va)
{
    struct vm_page p;

    return page_get((uintptr_t)va, &p) ? p.home : 0;
}

uint64_t tempest_page_frame(void *va)
{
    struct vm_page p;

    if (!page_get((uintptr_t)va, &p)) {
        return 0;
    }
    return frame_pa(p.frame1 - 1);
}

/* ---- 3.2: blocks -------------------------------------------------------- */

/* The tag a change leaves, or -1 for TPPI_Blk_No_Tag_Change. */
static int chg_target(TPPI_BlkTagChange chg)
{
    switch (chg) {
    case TPPI_Blk_Validate_RW:
    case TPPI_Blk_Upgrade_RW:
        return TPPI_Blk_Writable;
    case TPPI_Blk_Validate_RO:
    case TPPI_Blk_Downgrade_RO:
        return TPPI_Blk_ReadOnly;
    case TPPI_Blk_Invalidate:
    case TPPI_Blk_Busy_To_Invalid:
        return TPPI_Blk_Invalid;
    case TPPI_Blk_Mark_Busy:
    case TPPI_Blk_Invalid_To_Busy:
        return TPPI_Blk_Busy;
    default:
        return -1;
    }
}

/*
 * True if the change takes access away from the blocks Table 2 lets it
 * apply to: the tag changes before the data moves.
 */
static bool chg_reduces(TPPI_BlkTagChange chg)
{
    return chg == TPPI_Blk_Downgrade_RO || chg == TPPI_Blk_Invalidate ||
           chg == TPPI_Blk_Mark_Busy;
}

static bool chg_valid(TPPI_BlkTagChange chg)
{
    return (unsigned)chg <= TPPI_Blk_Busy_To_Invalid;
}

/*
 * Checks a block specifier (3.2.3): @len a power of 2 of at least
 * TPPI_TAG_BLK_SIZE, the block [@va & ~(len - 1), + len) inside the
 * segment.  Sets *@base; reports and returns false otherwise.
 */
static bool blk_spec(const char *who, void *blk_va, int blk_len,
                     uintptr_t *base)
{
    uintptr_t b = (uintptr_t)blk_va & ~((uintptr_t)blk_len - 1);

    if (blk_len < TPPI_TAG_BLK_SIZE || (blk_len & (blk_len - 1)) ||
        !in_segment(b) || (uint64_t)blk_len > TPPI_SEGMENT_SIZE -
                                              (b - TPPI_SEGMENT_BASE)) {
        tppi_report(&tppi_stats.bad_blocks, "%s(%p, %d): not a block of the "
                    "user-managed segment (the length must be a power of 2 "
                    "of at least %d): ignored", who, blk_va, blk_len,
                    TPPI_TAG_BLK_SIZE);
        return false;
    }
    *base = b;
    return true;
}

static bool chg_check(const char *who, TPPI_BlkTagChange chg)
{
    if (!chg_valid(chg)) {
        tppi_report(&tppi_stats.bad_blocks, "%s: tag change %d is not a "
                    "TPPI_BlkTagChange: ignored", who, (int)chg);
        return false;
    }
    return true;
}

/*
 * The frame and offset of the part of block [@base, + @len) on the page
 * of @va; reports and returns false if that page is not mapped.
 */
static bool blk_page(const char *who, uintptr_t va, struct vm_page *p)
{
    if (!page_get(va, p)) {
        tppi_report(&tppi_stats.bad_blocks, "%s: page 0x%lx of the block "
                    "is not mapped: skipped", who,
                    (unsigned long)(va & ~(uintptr_t)(TPPI_PAGE_SIZE - 1)));
        return false;
    }
    return true;
}

/* Length of the part of [@va, @end) on @va's page. */
static unsigned page_part(uintptr_t va, uintptr_t end)
{
    uintptr_t next = (va | (TPPI_PAGE_SIZE - 1)) + 1;

    return (unsigned)((end < next ? end : next) - va);
}

/* Copies @n bytes from @src (anywhere; the segment through the alias). */
static void copy_from(uint8_t *dst, const void *src, unsigned n)
{
    uintptr_t s = (uintptr_t)src;
    struct vm_page p;
    unsigned k;

    while (n) {
        if (!in_segment(s)) {
            memcpy(dst, (const void *)s, n);
            return;
        }
        k = page_part(s, s + n);
        if (page_get(s, &p)) {
            memcpy(dst, frame_alias(p.frame1 - 1) +
                   (s & (TPPI_PAGE_SIZE - 1)), k);
        } else {
            memset(dst, 0, k);
        }
        dst += k;
        s += k;
        n -= k;
    }
}

TPPI_BlkAccTag TPPI_get_blk_acc(void *va)
{
    struct vm_page p;

    if (!page_get((uintptr_t)va, &p)) {
        return TPPI_Blk_Invalid;
    }
    return (TPPI_BlkAccTag)shadow_get(p.frame1 - 1,
                                      ((uintptr_t)va & (TPPI_PAGE_SIZE - 1)) /
                                      TPPI_TAG_BLK_SIZE);
}

/*
 * The work of TPPI_change_blk_acc(_and_copy): page by page, the tag and
 * (if @from) the data in 3.2.6's order.
 */
static void change_blk(const char *who, void *blk_va, int blk_len,
                       TPPI_BlkTagChange chg, const void *from)
{
    uintptr_t base, va, end;
    int tag = chg_target(chg);
    bool tag_first = chg_reduces(chg);
    const uint8_t *src = from;
    struct vm_page p;
    unsigned n, off;

    if (!blk_spec(who, blk_va, blk_len, &base) || !chg_check(who, chg)) {
        return;
    }
    end = base + (unsigned)blk_len;
    for (va = base; va < end; va += n, src += n) {
        n = page_part(va, end);
        if (!blk_page(who, va, &p)) {
            continue;
        }
        off = va & (TPPI_PAGE_SIZE - 1);
        if (tag >= 0 && tag_first) {
            tag_change(p.frame1 - 1, off, n, (unsigned)tag);
        }
        if (from) {
            copy_from(frame_alias(p.frame1 - 1) + off, src, n);
        }
        if (tag >= 0 && !tag_first) {
            tag_change(p.frame1 - 1, off, n, (unsigned)tag);
        }
    }
}

void TPPI_change_blk_acc(void *blk_va, int blk_len, TPPI_BlkTagChange chg)
{
    change_blk("TPPI_change_blk_acc", blk_va, blk_len, chg, NULL);
}

void TPPI_change_blk_acc_and_copy(void *blk_va, int blk_len,
                                  TPPI_BlkTagChange chg, void *from)
{
    if (from == NULL) {
        tppi_report(&tppi_stats.bad_blocks, "TPPI_change_blk_acc_and_copy"
                    "(%p, %d): from is NULL: ignored", blk_va, blk_len);
        return;
    }
    change_blk("TPPI_change_blk_acc_and_copy", blk_va, blk_len, chg, from);
}

/* ---- Ba items (3.3.2, 3.3.3) ------------------------------------------- */

bool tppi_ba_check(void *blk_va, int blk_len, TPPI_BlkTagChange chg)
{
    uintptr_t base;
    struct vm_page p;

    return blk_spec("Ba item", blk_va, blk_len, &base) &&
           chg_check("Ba item", chg) &&
           blk_page("Ba item", base, &p);
}

const void *tppi_ba_send_data(void *blk_va, int blk_len,
                              TPPI_BlkTagChange chg, void *buf)
{
    uintptr_t base = (uintptr_t)blk_va & ~((uintptr_t)blk_len - 1);
    unsigned off = base & (TPPI_PAGE_SIZE - 1);
    int tag = chg_target(chg);
    struct vm_page p;
    uint8_t *data;

    if (!page_get(base, &p)) {
        return NULL;
    }
    data = frame_alias(p.frame1 - 1) + off;
    if (tag < 0) {
        return data;
    }
    if (chg_reduces(chg)) {
        /* Every write that completed before the change is in the data. */
        tag_change(p.frame1 - 1, off, (unsigned)blk_len, (unsigned)tag);
        return data;
    }
    memcpy(buf, data, (size_t)blk_len);
    tag_change(p.frame1 - 1, off, (unsigned)blk_len, (unsigned)tag);
    return buf;
}

void TPPI_recv_Ba(void *blk_va, int blk_len, TPPI_BlkTagChange chg)
{
    uintptr_t base;
    int tag = chg_target(chg);
    struct vm_page p;
    unsigned off;
    uint8_t *data;
    int got;

    if (!tppi_in_message_handler()) {
        tppi_report(&tppi_stats.overruns, "TPPI_recv_Ba called outside a "
                    "message handler");
        return;
    }
    if (!blk_spec("TPPI_recv_Ba", blk_va, blk_len, &base) ||
        !chg_check("TPPI_recv_Ba", chg) || blk_len > TPPI_PAGE_SIZE ||
        !blk_page("TPPI_recv_Ba", base, &p)) {
        /* Nothing written: the bytes are consumed all the same. */
        if (blk_len > 0) {
            tppi_take(NULL, blk_len);
        }
        return;
    }
    off = base & (TPPI_PAGE_SIZE - 1);
    data = frame_alias(p.frame1 - 1) + off;
    if (tag >= 0 && chg_reduces(chg)) {
        tag_change(p.frame1 - 1, off, (unsigned)blk_len, (unsigned)tag);
    }
    got = tppi_recv_into(data, blk_len);
    if (got < blk_len) {
        memset(data + got, 0, (size_t)(blk_len - got));
    }
    if (tag >= 0 && !chg_reduces(chg)) {
        /* The data is visible before any access the new tag allows. */
        tag_change(p.frame1 - 1, off, (unsigned)blk_len, (unsigned)tag);
    }
}

/* ---- 3.2.7: block access fault handlers --------------------------------- */

void TPPI_register_blk_acc_fault_handler(TPPI_PageMode mode,
                                         TPPI_BlkAccTag tag, int acc,
                                         TPPI_BlkAccFaultHandlerPtr fn)
{
    if (mode >= TPPI_NUM_PAGE_MODES || (unsigned)tag > TPPI_MAX_BLK_ACC_TAG ||
        (acc != TPPI_ReadAccess && acc != TPPI_WriteAccess)) {
        tppi_report(&tppi_stats.bad_blocks, "TPPI_register_blk_acc_fault_"
                    "handler(mode %u, tag %d, acc %d): no such page mode, "
                    "tag or access: ignored", (unsigned)mode, (int)tag, acc);
        return;
    }
    if (fn && (tag == TPPI_Blk_Writable ||
               (tag == TPPI_Blk_ReadOnly && acc == TPPI_ReadAccess))) {
        tppi_report(NULL, "warning: a handler for %s accesses to %s blocks "
                    "(page mode %u) is never called: those accesses do not "
                    "fault (Tempest Table 1)",
                    acc == TPPI_ReadAccess ? "read" : "write",
                    tag_names[tag], (unsigned)mode);
    }
    __atomic_store_n(&blk_handlers[mode][tag][acc], fn, __ATOMIC_RELEASE);
}

/* ---- faults ------------------------------------------------------------ */

static bool tag_allows(unsigned tag, bool is_write)
{
    return tag == TPPI_Blk_Writable ||
           (tag == TPPI_Blk_ReadOnly && !is_write);
}

/* True if a fault waits for the protocol thread. */
static bool fault_pending(void)
{
    unsigned i;

    if (!__atomic_load_n(&slots_queued, __ATOMIC_ACQUIRE)) {
        return false;
    }
    for (i = 0; i < TEMPEST_MAX_CPUS; i++) {
        if (__atomic_load_n(&slots[i].state, __ATOMIC_RELAXED) ==
            FS_QUEUED) {
            return true;
        }
    }
    return false;
}

/* Says why a fault cannot be handled, before the crash report. */
static void fault_refused(const struct rt_fault *f, const char *why)
{
    tppi_report(NULL, "cpu %u: %s fault at 0x%lx (pc 0x%lx, %s): %s",
                f->cpu, f->kind == RT_FAULT_PAGE ? "page" : "block access",
                (unsigned long)f->va, (unsigned long)f->pc,
                f->is_write ? "store" : "load", why);
}

/*
 * The runtime's fault hook, on the faulting CPU (see the top of this
 * file).  Returns true when the access may be retried.
 */
static int slot_resumed(void *arg)
{
    struct fault_slot *s = arg;

    return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == FS_RESUMED;
}

static bool fault_hook(const struct rt_fault *f)
{
    struct fault_slot *s;
    struct vm_page p;
    unsigned tag, mode;
    bool paused;

    if (!tppi_started() || f->cpu >= TEMPEST_MAX_CPUS) {
        return false;
    }
    if (tppi_on_protocol_thread()) {
        fault_refused(f, "in the protocol thread (handlers must not touch "
                      "tagged memory the tags forbid)");
        return false;
    }
    if (page_get(f->va, &p) && f->kind == RT_FAULT_BLOCK) {
        tag = shadow_get(p.frame1 - 1, (f->va & (TPPI_PAGE_SIZE - 1)) /
                         TPPI_TAG_BLK_SIZE);
        mode = p.mode;
        if (!tag_allows(tag, f->is_write) &&
            !__atomic_load_n(&blk_handlers[mode][tag][f->is_write],
                             __ATOMIC_ACQUIRE)) {
            char why[96];

            snprintf(why, sizeof(why), "no handler for %s on %s blocks of "
                     "page mode %u", f->is_write ? "writes" : "reads",
                     tag_names[tag], mode);
            fault_refused(f, why);
            return false;
        }
    } else if (!__atomic_load_n(&page_handler, __ATOMIC_ACQUIRE)) {
        fault_refused(f, "the page is not mapped and no page fault handler "
                      "is registered");
        return false;
    }

    s = &slots[f->cpu];
    s->va = f->va;
    s->pc = f->pc;
    s->kind = f->kind;
    s->is_write = f->is_write;
    s->seq = __atomic_fetch_add(&fault_seq, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&slots_queued, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&s->state, FS_QUEUED, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&tppi_stats.faults, 1, __ATOMIC_RELAXED);
    /*
     * A fault in a client's spin, or in its polling loop: the thread
     * polls again meanwhile.
     */
    paused = tppi_client_spin_pause();
    tppi_client_poll_stop();
    tppi_run_protocol_thread();

    /*
     * Poll for the spin time (a handler, here or after a message from
     * another node, answers in microseconds), then sleep.
     */
    while (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != FS_RESUMED) {
        if (tppi_spin_masked(slot_resumed, s)) {
            break;
        }
        /*
         * IRQs are masked: slot_resume()'s wake-up (or, on a one-vCPU
         * node, the interrupt whose handler resumes us) ends the WFI.
         */
        rt_cpu_sleep(0);
    }
    __atomic_store_n(&s->state, FS_IDLE, __ATOMIC_RELEASE);
    tppi_client_spin_resume(paused);
    return true;
}

/* Marks slot @s resumed (from QUEUED or RUNNING) and wakes its CPU. */
static void slot_resume(unsigned cpu)
{
    struct fault_slot *s = &slots[cpu];
    uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

    while (st == FS_QUEUED || st == FS_RUNNING) {
        if (__atomic_compare_exchange_n(&s->state, &st, FS_RESUMED, false,
                                        __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            if (st == FS_QUEUED) {
                __atomic_fetch_sub(&slots_queued, 1, __ATOMIC_RELEASE);
            }
            __atomic_fetch_add(&tppi_stats.resumes, 1, __ATOMIC_RELAXED);
            rt_cpu_wake(cpu);
            return;
        }
    }
}

void TPPI_resume_va(void *blk_va, int blk_len)
{
    uintptr_t base, pg, va;
    unsigned cpu;
    uint32_t st;

    if (!blk_spec("TPPI_resume_va", blk_va, blk_len, &base)) {
        return;
    }
    for (cpu = 0; cpu < TEMPEST_MAX_CPUS; cpu++) {
        st = __atomic_load_n(&slots[cpu].state, __ATOMIC_ACQUIRE);
        if (st != FS_QUEUED && st != FS_RUNNING) {
            continue;
        }
        va = slots[cpu].va;
        pg = va & ~(uintptr_t)(TPPI_PAGE_SIZE - 1);
        /* A block fault: its block; a page fault: any block of its page. */
        if (va - base < (unsigned)blk_len ||
            (slots[cpu].kind == RT_FAULT_PAGE &&
             base < pg + TPPI_PAGE_SIZE && pg < base + (unsigned)blk_len)) {
            slot_resume(cpu);
        }
    }
}

/* Runs the handler fault slot @cpu needs (protocol thread). */
static void dispatch(unsigned cpu)
{
    struct fault_slot *s = &slots[cpu];
    uintptr_t va = s->va;
    bool w = s->is_write;
    TPPI_BlkAccFaultHandlerPtr bh;
    TPPI_PageFaultHandlerPtr ph;
    struct vm_page p;
    unsigned tag;

    if (!page_get(va, &p)) {
        __atomic_fetch_add(&tppi_stats.page_faults, 1, __ATOMIC_RELAXED);
        ph = __atomic_load_n(&page_handler, __ATOMIC_ACQUIRE);
        if (ph == NULL) {
            /* Retried: the fault comes back as a crash report. */
            slot_resume(cpu);
            return;
        }
        ph((void *)va, (int)s->pc, w);
        return;
    }
    if (s->kind == RT_FAULT_PAGE) {
        slot_resume(cpu);       /* mapped meanwhile */
        return;
    }
    tag = shadow_get(p.frame1 - 1, (va & (TPPI_PAGE_SIZE - 1)) /
                     TPPI_TAG_BLK_SIZE);
    if (tag_allows(tag, w)) {
        slot_resume(cpu);       /* the tag changed meanwhile */
        return;
    }
    __atomic_fetch_add(&tppi_stats.blk_faults, 1, __ATOMIC_RELAXED);
    bh = __atomic_load_n(&blk_handlers[p.mode][tag][w], __ATOMIC_ACQUIRE);
    if (bh == NULL) {
        slot_resume(cpu);
        return;
    }
    bh((void *)va, p.usr_ptr, p.home);
}

/*
 * Runs the handler of the earliest fault waiting, if there is one; returns
 * true if there was one.  First thing in every step of the protocol
 * thread (faults come before timers and messages).
 */
static bool fault_step(void)
{
    unsigned cpu, best = TEMPEST_MAX_CPUS;
    uint32_t st;

    if (!__atomic_load_n(&slots_queued, __ATOMIC_ACQUIRE)) {
        return false;
    }
    for (cpu = 0; cpu < TEMPEST_MAX_CPUS; cpu++) {
        if (__atomic_load_n(&slots[cpu].state, __ATOMIC_ACQUIRE) ==
                FS_QUEUED &&
            (best == TEMPEST_MAX_CPUS ||
             (int32_t)(slots[cpu].seq - slots[best].seq) < 0)) {
            best = cpu;
        }
    }
    if (best == TEMPEST_MAX_CPUS) {
        return false;
    }
    st = FS_QUEUED;
    if (__atomic_compare_exchange_n(&slots[best].state, &st, FS_RUNNING,
                                    false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        __atomic_fetch_sub(&slots_queued, 1, __ATOMIC_RELEASE);
        dispatch(best);
    }
    return true;
}

TPPI_REGISTER
static void vm_register(void)
{
    static const struct tppi_work w = { fault_pending, fault_step,
                                        &slots_queued };

    tppi_on_work(TPPI_WORK_FAULTS, &w);
    rt_fault_register(fault_hook);
}
