/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Stage-1 translation tables and MMU start-up (see mmu.h).
 *
 * mmu_boot_init() runs with the MMU off, where every data access is
 * Device-nGnRnE: nothing here may make an unaligned access or call into
 * libc (whose memset uses DC ZVA, which faults on Device memory), hence
 * strict alignment for the whole file, and atomic stores (which the
 * compiler never turns into a memset call) to clear tables.
 */
#pragma GCC target("strict-align")

#include <stdlib.h>

#include "rt-internal.h"
#include "mmu.h"

#define PTE_VALID           (1ULL << 0)
#define PTE_TABLE           (1ULL << 1)     /* table (L1/L2), page (L3) */
#define PTE_ATTRIDX(i)      ((uint64_t)(i) << 2)
#define PTE_AP_RO           (1ULL << 7)
#define PTE_SH_INNER        (3ULL << 8)
#define PTE_AF              (1ULL << 10)
#define PTE_PXN             (1ULL << 53)
#define PTE_UXN             (1ULL << 54)
#define PTE_ADDR_MASK       0x0000fffffffff000ULL

#define ATTRIDX_DEVICE      0
#define ATTRIDX_NORMAL      1
#define MAIR_DEVICE_NGNRE   0x04ULL
#define MAIR_NORMAL_WB      0xffULL     /* inner/outer WB, RW-allocate */

#define TCR_T0SZ            ((uint64_t)(64 - MMU_VA_BITS))
#define TCR_IRGN0_WBWA      (1ULL << 8)
#define TCR_ORGN0_WBWA      (1ULL << 10)
#define TCR_SH0_INNER       (3ULL << 12)
#define TCR_TG0_4K          (0ULL << 14)
#define TCR_EPD1            (1ULL << 23)
#define TCR_IPS_SHIFT       32

#define SCTLR_M             (1ULL << 0)
#define SCTLR_A             (1ULL << 1)
#define SCTLR_C             (1ULL << 2)
#define SCTLR_SA            (1ULL << 3)
#define SCTLR_I             (1ULL << 12)
#define SCTLR_WXN           (1ULL << 19)
#define SCTLR_EE            (1ULL << 25)

#define ENTRIES             512

struct rt_mmu_cfg rt_mmu_cfg __attribute__((aligned(64)));

static uint64_t *l1_table;
static char *pool_next;
static bool mmu_on;
static uint32_t mmu_lock;

static void mmu_puts(const char *s)
{
    while (*s) {
        rt_mmio_write32(TEMPEST_UART_BASE, (uint8_t)*s++);
    }
}

/*
 * Descriptors are read and written with single-copy-atomic accesses (the
 * table walkers of other CPUs read them concurrently); as atomics, the
 * compiler cannot turn a loop of them into a memset call either.
 */
static uint64_t get_entry(const uint64_t *e)
{
    return __atomic_load_n(e, __ATOMIC_RELAXED);
}

static uint64_t *table_alloc(void)
{
    uint64_t *t;
    int i;

    if (pool_next == NULL) {
        pool_next = __pt_pool_start;
    }
    if (pool_next + MMU_PAGE_SIZE <= __pt_pool_end) {
        t = (uint64_t *)pool_next;
        pool_next += MMU_PAGE_SIZE;
    } else if (mmu_on) {
        /* After boot (segment pages): from the heap, identity-mapped. */
        t = aligned_alloc(MMU_PAGE_SIZE, MMU_PAGE_SIZE);
        if (t == NULL) {
            return NULL;
        }
    } else {
        return NULL;
    }
    for (i = 0; i < ENTRIES; i++) {
        __atomic_store_n(&t[i], 0, __ATOMIC_RELAXED);
    }
    return t;
}

/* Writes a descriptor only after everything it points to is visible. */
static void set_entry(uint64_t *e, uint64_t v)
{
    __asm__ volatile("dsb ishst" : : : "memory");
    __atomic_store_n(e, v, __ATOMIC_RELAXED);
}

static void sync_new_entry(void)
{
    __asm__ volatile("dsb ishst\n\tisb" : : : "memory");
}

static uint64_t leaf_attrs(unsigned attr)
{
    uint64_t d = PTE_AF;

    if ((attr & MMU_TYPE_MASK) == MMU_DEVICE) {
        d |= PTE_ATTRIDX(ATTRIDX_DEVICE) | PTE_PXN | PTE_UXN;
    } else {
        d |= PTE_ATTRIDX(ATTRIDX_NORMAL) | PTE_SH_INNER;
    }
    if (attr & MMU_RO) {
        d |= PTE_AP_RO;
    }
    if (attr & MMU_XN) {
        d |= PTE_PXN | PTE_UXN;
    }
    return d;
}

/*
 * Returns the table the entry @e points to, creating it if @e is invalid
 * and @create.  Sets *@err and returns NULL otherwise.
 */
static uint64_t *next_table(uint64_t *e, bool create, int *err)
{
    uint64_t v = get_entry(e);
    uint64_t *t;

    if (v & PTE_VALID) {
        if (!(v & PTE_TABLE)) {
            *err = MMU_ERR_BUSY;
            return NULL;
        }
        return (uint64_t *)(uintptr_t)(v & PTE_ADDR_MASK);
    }
    if (!create) {
        *err = MMU_ERR_ARG;
        return NULL;
    }
    t = table_alloc();
    if (t == NULL) {
        *err = MMU_ERR_NOMEM;
        return NULL;
    }
    set_entry(e, (uintptr_t)t | PTE_TABLE | PTE_VALID);
    return t;
}

/* IRQs masked: a handler on this CPU may map pages too. */
static uint64_t mmu_lock_take(void)
{
    uint64_t flags = 0;

    if (mmu_on) {
        flags = rt_irq_save();
        rt_spin_lock(&mmu_lock);
    }
    return flags;
}

static void mmu_lock_drop(uint64_t flags)
{
    if (mmu_on) {
        rt_spin_unlock(&mmu_lock);
        rt_irq_restore(flags);
    }
}

static bool va_ok(uint64_t va, uint64_t align)
{
    return !(va & (align - 1)) && va < (1ULL << MMU_VA_BITS);
}

static unsigned idx(uint64_t va, unsigned level)
{
    return (va >> (39 - 9 * level)) & (ENTRIES - 1);
}

int mmu_map_page(uint64_t va, uint64_t pa, unsigned attr)
{
    uint64_t *l2, *l3, *e;
    uint64_t flags;
    int err = 0;

    if (!va_ok(va, MMU_PAGE_SIZE) || (pa & (MMU_PAGE_SIZE - 1)) ||
        (pa & ~PTE_ADDR_MASK)) {
        return MMU_ERR_ARG;
    }
    flags = mmu_lock_take();
    l2 = next_table(&l1_table[idx(va, 1)], true, &err);
    l3 = l2 ? next_table(&l2[idx(va, 2)], true, &err) : NULL;
    if (l3) {
        e = &l3[idx(va, 3)];
        if (get_entry(e) & PTE_VALID) {
            err = MMU_ERR_BUSY;
        } else {
            set_entry(e, pa | leaf_attrs(attr) | PTE_TABLE | PTE_VALID);
            sync_new_entry();
        }
    }
    mmu_lock_drop(flags);
    return err;
}

int mmu_map_block(uint64_t va, uint64_t pa, unsigned attr)
{
    uint64_t *l2, *e;
    uint64_t flags;
    int err = 0;

    if (!va_ok(va, MMU_BLOCK_SIZE) || (pa & (MMU_BLOCK_SIZE - 1)) ||
        (pa & ~PTE_ADDR_MASK)) {
        return MMU_ERR_ARG;
    }
    flags = mmu_lock_take();
    l2 = next_table(&l1_table[idx(va, 1)], true, &err);
    if (l2) {
        e = &l2[idx(va, 2)];
        if (get_entry(e) & PTE_VALID) {
            err = MMU_ERR_BUSY;
        } else {
            set_entry(e, pa | leaf_attrs(attr) | PTE_VALID);
            sync_new_entry();
        }
    }
    mmu_lock_drop(flags);
    return err;
}

int mmu_unmap_page(uint64_t va)
{
    uint64_t *l2, *l3 = NULL, *e;
    uint64_t flags;
    int err = 0;

    if (!va_ok(va, MMU_PAGE_SIZE)) {
        return MMU_ERR_ARG;
    }
    flags = mmu_lock_take();
    l2 = next_table(&l1_table[idx(va, 1)], false, &err);
    if (l2) {
        l3 = next_table(&l2[idx(va, 2)], false, &err);
    }
    if (l3) {
        e = &l3[idx(va, 3)];
        if (!(get_entry(e) & PTE_VALID)) {
            err = MMU_ERR_ARG;
        } else {
            set_entry(e, 0);
            __asm__ volatile("dsb ishst\n\t"
                             "tlbi vale1is, %0\n\t"
                             "dsb ish\n\t"
                             "isb"
                             : : "r"(va >> 12) : "memory");
        }
    } else {
        err = MMU_ERR_ARG;
    }
    mmu_lock_drop(flags);
    return err;
}

static void boot_fail(const char *what)
{
    mmu_puts("*** CRASH on boot: ");
    mmu_puts(what);
    mmu_puts("\n");
    rt_hard_exit(TEMPEST_EXIT_CRASH);
}

/* Identity-maps the 2 MiB blocks covering [base, base + size). */
static void map_device_window(uint64_t base, uint64_t size)
{
    uint64_t a;
    int err;

    for (a = base & ~(MMU_BLOCK_SIZE - 1); a < base + size;
         a += MMU_BLOCK_SIZE) {
        err = mmu_map_block(a, a, MMU_DEVICE);
        if (err != 0 && err != MMU_ERR_BUSY) {
            boot_fail("cannot map a device window");
        }
    }
}

static bool is_guard_page(uint64_t pa)
{
    uint64_t s = (uintptr_t)__stacks_start;
    uint64_t e = (uintptr_t)__stacks_end;

    return pa >= s && pa < e && (pa - s) % RT_STACK_SLOT < RT_GUARD_SIZE;
}

/* RAM in 2 MiB blocks, except 4 KiB pages where the stack guards are. */
static void map_ram(uint64_t size)
{
    uint64_t s = (uintptr_t)__stacks_start;
    uint64_t e = (uintptr_t)__stacks_end;
    uint64_t end = TEMPEST_RAM_BASE + size;
    uint64_t b, p;

    for (b = TEMPEST_RAM_BASE; b < end; b += MMU_BLOCK_SIZE) {
        if (b + MMU_BLOCK_SIZE <= s || b >= e) {
            if (mmu_map_block(b, b, MMU_NORMAL) != 0) {
                boot_fail("cannot map RAM");
            }
            continue;
        }
        for (p = b; p < b + MMU_BLOCK_SIZE; p += MMU_PAGE_SIZE) {
            if (!is_guard_page(p) && mmu_map_page(p, p, MMU_NORMAL) != 0) {
                boot_fail("cannot map RAM pages");
            }
        }
    }
}

/*
 * Tagged memory (TEMPEST_NC_FEAT_TAGS): its unchecked alias is
 * identity-mapped in 2 MiB blocks; the frames themselves are mapped into
 * the user-managed segment page by page (segment.c).
 */
static uint64_t map_tagmem_alias(void)
{
    uint64_t size, a;

    if (!(rt_nc_reg(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_TAGS)) {
        return 0;
    }
    size = rt_nc_reg(TEMPEST_NC_TAGMEM_SIZE_LO) |
           ((uint64_t)rt_nc_reg(TEMPEST_NC_TAGMEM_SIZE_HI) << 32);
    if (size > TEMPEST_TAGMEM_MAX) {
        size = TEMPEST_TAGMEM_MAX;
    }
    size &= ~(MMU_PAGE_SIZE - 1);
    for (a = 0; a < size; a += MMU_BLOCK_SIZE) {
        if (mmu_map_block(TEMPEST_TAGMEM_ALIAS + a, TEMPEST_TAGMEM_ALIAS + a,
                          MMU_NORMAL | MMU_XN) != 0) {
            boot_fail("cannot map the tagged memory alias");
        }
    }
    return size;
}

static uint64_t read_ram_size(void)
{
    uint64_t size = rt_nc_reg(TEMPEST_NC_RAM_SIZE_LO) |
                    ((uint64_t)rt_nc_reg(TEMPEST_NC_RAM_SIZE_HI) << 32);
    uint64_t image = (uintptr_t)__heap_start - TEMPEST_RAM_BASE;

    if (size > TEMPEST_RAM_MAX) {
        size = TEMPEST_RAM_MAX;
    }
    if (size < image) {
        /* A node controller that cannot say: assume the image fits. */
        size = image;
    }
    return size;
}

/* Discards any stale cached copy of the tables written with caches off. */
static void invalidate_tables(void)
{
    uint64_t line = 4ULL << ((RT_READ_SYSREG(ctr_el0) >> 16) & 0xf);
    char *p;

    for (p = __pt_pool_start; p < pool_next; p += line) {
        __asm__ volatile("dc ivac, %0" : : "r"(p) : "memory");
    }
    __asm__ volatile("dsb sy" : : : "memory");
}

void mmu_boot_init(void)
{
    uint64_t size = read_ram_size();
    uint64_t ips = RT_READ_SYSREG(id_aa64mmfr0_el1) & 0xf;
    uint64_t sctlr;

    rt_info.ram_size = size;
    l1_table = table_alloc();
    if (l1_table == NULL) {
        boot_fail("no translation table");
    }
    map_device_window(TEMPEST_GIC_DIST_BASE, TEMPEST_GIC_DIST_SIZE);
    map_device_window(TEMPEST_GIC_REDIST_BASE, TEMPEST_GIC_REDIST_SIZE);
    map_device_window(TEMPEST_UART_BASE, TEMPEST_UART_SIZE);
    map_device_window(TEMPEST_NC_BASE, TEMPEST_NC_SIZE);
    map_ram((size + MMU_BLOCK_SIZE - 1) & ~(MMU_BLOCK_SIZE - 1));
    rt_info.tagmem_size = map_tagmem_alias();
    invalidate_tables();

    if (ips > 5) {
        ips = 5;                /* 48 bits: all a 4 KiB granule takes */
    }
    rt_mmu_cfg.mair = MAIR_DEVICE_NGNRE << (8 * ATTRIDX_DEVICE) |
                      MAIR_NORMAL_WB << (8 * ATTRIDX_NORMAL);
    rt_mmu_cfg.tcr = TCR_T0SZ | TCR_IRGN0_WBWA | TCR_ORGN0_WBWA |
                     TCR_SH0_INNER | TCR_TG0_4K | TCR_EPD1 |
                     ips << TCR_IPS_SHIFT;
    rt_mmu_cfg.ttbr0 = (uintptr_t)l1_table;
    sctlr = RT_READ_SYSREG(sctlr_el1);
    sctlr |= SCTLR_M | SCTLR_C | SCTLR_I | SCTLR_SA;
    sctlr &= ~(SCTLR_A | SCTLR_WXN | SCTLR_EE);
    rt_mmu_cfg.sctlr = sctlr;

    RT_WRITE_SYSREG(mair_el1, rt_mmu_cfg.mair);
    RT_WRITE_SYSREG(tcr_el1, rt_mmu_cfg.tcr);
    RT_WRITE_SYSREG(ttbr0_el1, rt_mmu_cfg.ttbr0);
    __asm__ volatile("isb\n\t"
                     "tlbi vmalle1\n\t"
                     "dsb nsh\n\t"
                     "ic iallu\n\t"
                     "dsb nsh\n\t"
                     "isb" : : : "memory");
    RT_WRITE_SYSREG(sctlr_el1, sctlr);
    __asm__ volatile("isb" : : : "memory");
    mmu_on = true;

    /* Secondary CPUs read rt_mmu_cfg with their caches off. */
    __asm__ volatile("dc cvac, %0\n\tdsb sy" : : "r"(&rt_mmu_cfg) : "memory");
}
