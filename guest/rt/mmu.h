/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Stage-1 EL1 translation tables of the tempest runtime (private).
 *
 * One set of tables, shared by every CPU: 4 KiB granule, 39-bit virtual
 * addresses starting at level 1 (TTBR0_EL1 only, T0SZ=25, EPD1=1).
 * MAIR_EL1 attribute 0 is Device-nGnRE, attribute 1 Normal write-back
 * read/write-allocate, inner shareable.  Tables come from a static pool
 * of RT_PT_POOL_PAGES pages (tempest.ld.S) and, once the pool is used up
 * after boot, from the heap; they are never freed.
 *
 * The boot CPU builds the identity map in mmu_boot_init(); the secondary
 * CPUs load the same registers from rt_mmu_cfg in start.S.  Afterwards
 * mmu_map_page()/mmu_unmap_page() change the live tables (for instance
 * to map the Tempest user-managed segment) and keep every CPU's TLB in
 * step.
 */
#ifndef TEMPEST_RT_MMU_H
#define TEMPEST_RT_MMU_H

#include <stdint.h>

/* Attributes of a mapping: one memory type, optionally ORed with flags. */
#define MMU_DEVICE      0x0u        /* Device-nGnRE, never executable */
#define MMU_NORMAL      0x1u        /* Normal cacheable, inner shareable */
#define MMU_TYPE_MASK   0x1u
#define MMU_RO          0x10u       /* read-only */
#define MMU_XN          0x20u       /* not executable */

#define MMU_PAGE_SIZE   0x1000ULL
#define MMU_BLOCK_SIZE  0x200000ULL
#define MMU_VA_BITS     39

/* Error returns of the mapping calls. */
#define MMU_ERR_ARG     (-1)    /* misaligned or out of range */
#define MMU_ERR_NOMEM   (-2)    /* table pool exhausted */
#define MMU_ERR_BUSY    (-3)    /* already mapped, or inside a block */

/*
 * What start.S loads on a secondary CPU to turn its MMU on: written by
 * mmu_boot_init() and cleaned to memory for CPUs whose caches are off.
 */
struct rt_mmu_cfg {
    uint64_t mair;
    uint64_t tcr;
    uint64_t ttbr0;
    uint64_t sctlr;
};
extern struct rt_mmu_cfg rt_mmu_cfg;

/*
 * mmu_boot_init: on the boot CPU, with the MMU off and BSS zeroed: reads
 * the RAM size from the node controller into rt_info.ram_size, builds the
 * identity map (device windows, RAM in 2 MiB blocks except the 4 KiB
 * pages around the stacks so that each stack's guard page is unmapped,
 * and the unchecked alias of tagged memory, whose size goes to
 * rt_info.tagmem_size), and turns on the MMU and caches.  Stops the node with
 * TEMPEST_EXIT_CRASH if the pool is too small.
 */
void mmu_boot_init(void);

/*
 * mmu_map_page: maps the 4 KiB page at virtual address @va to physical
 * @pa with attributes @attr (MMU_*), creating level 2/3 tables as needed.
 * Returns 0, or MMU_ERR_ARG if @va or @pa is not page aligned or @va is
 * beyond the 39-bit range, MMU_ERR_NOMEM if no table is left, MMU_ERR_BUSY
 * if @va is already mapped (by a page or a 2 MiB block).  Safe to call
 * from any CPU after boot, interrupt handlers included (the tables' lock
 * masks IRQs).
 */
int mmu_map_page(uint64_t va, uint64_t pa, unsigned attr);

/*
 * mmu_map_block: maps the 2 MiB block at @va to @pa (both 2 MiB aligned).
 * Returns as mmu_map_page(); MMU_ERR_BUSY also if a level 3 table already
 * covers @va.
 */
int mmu_map_block(uint64_t va, uint64_t pa, unsigned attr);

/*
 * mmu_unmap_page: removes the 4 KiB page mapping at @va and invalidates it
 * in every CPU's TLB.  Returns 0, MMU_ERR_ARG if @va is misaligned or out
 * of range or not mapped by a page (a 2 MiB block is left alone).
 */
int mmu_unmap_page(uint64_t va);

#endif /* TEMPEST_RT_MMU_H */
