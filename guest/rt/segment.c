/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Tempest user-managed segment (TEMPEST_SEGMENT_BASE): mapping its
 * pages to tagged-memory frames, and turning its faults into calls of the
 * hook a library registered instead of crash reports.
 *
 * The faults: a synchronous exception from the program (vectors.S, vector
 * 0) whose ESR says data abort from EL1 with FAR valid and inside the
 * segment, and whose fault status is either
 *   0x10, synchronous external abort: the node controller refused the
 *        access because of a block's access tag (a block access fault), or
 *   0x04..0x07, translation fault: the page is not mapped (a page fault),
 * goes to the registered hook, run on the program's own stack below the
 * interrupted code's SP_EL0 (still at EL1 on SP_EL1, IRQs masked: a
 * nested exception is a crash report).  The hook returns true once the
 * thread may retry the access (every register is then restored and the
 * instruction re-executed) or false, and anything else is a crash report.
 */
#include "rt-internal.h"
#include "mmu.h"

#define EC_DABT_CUR         0x25
#define ISS_WNR             (1U << 6)
#define ISS_CM              (1U << 8)
#define ISS_FNV             (1U << 10)
#define DFSC_EXT_ABORT      0x10
#define DFSC_TRANSLATION    0x04        /* 0x04..0x07: levels 0..3 */

static rt_fault_fn fault_hook;

uint64_t rt_tagmem_size(void)
{
    return rt_info.tagmem_size;
}

static bool in_segment(uint64_t va)
{
    return va >= TEMPEST_SEGMENT_BASE &&
           va - TEMPEST_SEGMENT_BASE < TEMPEST_SEGMENT_SIZE;
}

static void tlb_invalidate(uint64_t va)
{
    __asm__ volatile("dsb ishst\n\t"
                     "tlbi vae1is, %0\n\t"
                     "dsb ish\n\t"
                     "isb"
                     : : "r"(va >> 12) : "memory");
}

int rt_segment_map(uint64_t va, uint64_t pa)
{
    int err;

    if ((va & (MMU_PAGE_SIZE - 1)) || !in_segment(va) ||
        (pa & (MMU_PAGE_SIZE - 1)) || pa < TEMPEST_TAGMEM_BASE ||
        pa - TEMPEST_TAGMEM_BASE >= rt_info.tagmem_size) {
        return RT_SEG_ERR_ARG;
    }
    err = mmu_map_page(va, pa, MMU_NORMAL | MMU_XN);
    if (err == MMU_ERR_NOMEM) {
        return RT_SEG_ERR_NOMEM;
    }
    if (err != 0) {
        return err == MMU_ERR_BUSY ? RT_SEG_ERR_BUSY : RT_SEG_ERR_ARG;
    }
    /* Nothing can be cached for an invalid entry, but be plain about it. */
    tlb_invalidate(va);
    return 0;
}

int rt_segment_unmap(uint64_t va)
{
    if ((va & (MMU_PAGE_SIZE - 1)) || !in_segment(va)) {
        return RT_SEG_ERR_ARG;
    }
    /* mmu_unmap_page() invalidates the entry in every CPU's TLB. */
    return mmu_unmap_page(va) == 0 ? 0 : RT_SEG_ERR_ARG;
}

rt_fault_fn rt_fault_register(rt_fault_fn fn)
{
    return __atomic_exchange_n(&fault_hook, fn, __ATOMIC_ACQ_REL);
}

struct hook_call {
    rt_fault_fn fn;
    struct rt_fault fault;
};

static uint64_t call_hook(void *arg)
{
    struct hook_call *c = arg;

    return c->fn(&c->fault) ? 1 : 0;
}

void rt_sync_exception(struct rt_sync_frame *f)
{
    uint64_t esr = f->base.esr;
    unsigned ec = (esr >> 26) & 0x3f;
    unsigned iss = esr & 0x1ffffff;
    unsigned dfsc = iss & 0x3f;
    struct hook_call c;
    int kind = 0;

    if (ec == EC_DABT_CUR && !(iss & ISS_FNV) && in_segment(f->base.far)) {
        if (dfsc == DFSC_EXT_ABORT) {
            kind = RT_FAULT_BLOCK;
        } else if ((dfsc & 0x3c) == DFSC_TRANSLATION) {
            kind = RT_FAULT_PAGE;
        }
    }
    c.fn = __atomic_load_n(&fault_hook, __ATOMIC_ACQUIRE);
    if (kind && c.fn) {
        c.fault.va = f->base.far;
        c.fault.pc = f->base.elr;
        c.fault.cpu = rt_cpu_index();
        c.fault.kind = kind;
        /* A cache maintenance instruction (DC CIVAC...) only reads. */
        c.fault.is_write = (iss & ISS_WNR) && !(iss & ISS_CM);
        /* AAPCS64 has no red zone: everything below SP_EL0 is free. */
        if (rt_call_on_stack(call_hook, &c, f->base.sp & ~(uint64_t)15)) {
            return;
        }
    }
    rt_crash(0, &f->base);
}
