/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers of the access-control tests: see tags-util.h. */
#include "tags-util.h"
#include "tempest/nc.h"

void tt_set(void *va, TPPI_BlkAccTag tag)
{
    switch (tag) {
    case TPPI_Blk_Busy:
        TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Mark_Busy);
        break;
    case TPPI_Blk_Invalid:
        TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Invalidate);
        break;
    case TPPI_Blk_ReadOnly:
        TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RW);
        TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Downgrade_RO);
        break;
    case TPPI_Blk_Writable:
        TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RW);
        break;
    }
}

uint8_t *tt_alias(void *va)
{
    uint64_t pa = tempest_page_frame(va);

    if (pa == 0) {
        return NULL;
    }
    return (uint8_t *)(uintptr_t)(pa - TEMPEST_TAGMEM_BASE +
                                  TEMPEST_TAGMEM_ALIAS +
                                  ((uintptr_t)va & (TPPI_PAGE_SIZE - 1)));
}

int tt_dev_tag(void *va)
{
    uint64_t pa = tempest_page_frame(va);

    if (pa == 0) {
        return -1;
    }
    return nc_tag_get(pa + ((uintptr_t)va & (TPPI_PAGE_SIZE - 1)));
}

const char *tt_tag_name(int tag)
{
    static const char *const names[] = {
        "Busy", "Invalid", "ReadOnly", "Writable",
    };

    return tag >= 0 && tag < 4 ? names[tag] : "?";
}

__attribute__((noinline)) uint8_t tt_ldrb(void *p)
{
    uint32_t v;

    __asm__ volatile("ldrb %w0, [%1]" : "=r"(v) : "r"(p) : "memory");
    return (uint8_t)v;
}

__attribute__((noinline)) void tt_strb(void *p, uint8_t v)
{
    __asm__ volatile("strb %w0, [%1]" : : "r"(v), "r"(p) : "memory");
}

__attribute__((noinline)) uint64_t tt_ldr(void *p)
{
    uint64_t v;

    __asm__ volatile("ldr %0, [%1]" : "=r"(v) : "r"(p) : "memory");
    return v;
}

__attribute__((noinline)) void tt_str(void *p, uint64_t v)
{
    __asm__ volatile("str %0, [%1]" : : "r"(v), "r"(p) : "memory");
}

__attribute__((noinline)) uint64_t tt_ldp(void *p)
{
    uint64_t a, b;

    __asm__ volatile("ldp %0, %1, [%2]" : "=&r"(a), "=&r"(b) : "r"(p)
                     : "memory");
    return a + b;
}

__attribute__((noinline)) void tt_stp(void *p, uint64_t a, uint64_t b)
{
    __asm__ volatile("stp %0, %1, [%2]" : : "r"(a), "r"(b), "r"(p)
                     : "memory");
}

__attribute__((noinline)) uint64_t tt_ld_q(void *p)
{
    uint64_t v;

    __asm__ volatile("ldr q16, [%1]\n\t"
                     "fmov %0, d16" : "=r"(v) : "r"(p) : "v16", "memory");
    return v;
}

__attribute__((noinline)) void tt_st_q(void *p, uint64_t v)
{
    __asm__ volatile("dup v16.2d, %0\n\t"
                     "str q16, [%1]" : : "r"(v), "r"(p) : "v16", "memory");
}

__attribute__((noinline)) uint64_t tt_ldadd(void *p, uint64_t v)
{
    uint64_t old;

    __asm__ volatile("ldadd %1, %0, [%2]" : "=r"(old) : "r"(v), "r"(p)
                     : "memory");
    return old;
}

__attribute__((noinline)) uint64_t tt_swp(void *p, uint64_t v)
{
    uint64_t old;

    __asm__ volatile("swp %1, %0, [%2]" : "=r"(old) : "r"(v), "r"(p)
                     : "memory");
    return old;
}

__attribute__((noinline)) uint64_t tt_ldxr(void *p)
{
    uint64_t v;

    __asm__ volatile("ldxr %0, [%1]\n\t"
                     "clrex" : "=r"(v) : "r"(p) : "memory");
    return v;
}

__attribute__((noinline)) void tt_dc_zva(void *p)
{
    __asm__ volatile("dc zva, %0" : : "r"(p) : "memory");
}

bool tt_pc_in(int pc, void *fn)
{
    uintptr_t a = (uintptr_t)(uint32_t)pc, f = (uintptr_t)fn;

    return a >= f && a < f + 32;
}

uint32_t tt_pattern(unsigned seed, unsigned i)
{
    return seed * 0x9e3779b9U + i * 0x85ebca6bU;
}

void tt_fill(void *blk, int len, unsigned seed)
{
    uint32_t *w = (uint32_t *)tt_alias(blk);
    int i;

    for (i = 0; i < len / 4; i++) {
        w[i] = tt_pattern(seed, (unsigned)i);
    }
}

bool tt_holds(void *blk, int len, unsigned seed)
{
    uint32_t *w = (uint32_t *)tt_alias(blk);
    int i;

    for (i = 0; i < len / 4; i++) {
        if (w[i] != tt_pattern(seed, (unsigned)i)) {
            return false;
        }
    }
    return true;
}

bool tt_tagged(void *blk, int len, int tag)
{
    int i;

    for (i = 0; i < len; i += TPPI_TAG_BLK_SIZE) {
        if ((int)TPPI_get_blk_acc((char *)blk + i) != tag ||
            tt_dev_tag((char *)blk + i) != tag) {
            return false;
        }
    }
    return true;
}
