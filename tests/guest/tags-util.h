/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of the access-control tests (tags_*.c): pages of the
 * user-managed segment, setting a block's tag through a change Table 2
 * allows, reading the device's own tag, and accesses of every kind the
 * node controller checks, each in a small function of its own so that a
 * fault's pc can be checked against it.
 */
#ifndef TAGS_UTIL_H
#define TAGS_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "tempest.h"

/* The address of page @i of the user-managed segment. */
static inline char *tt_page(unsigned i)
{
    return (char *)(uintptr_t)(TPPI_SEGMENT_BASE +
                               (uint64_t)i * TPPI_PAGE_SIZE);
}

/* Gives the block of @va the tag @tag with changes Table 2 allows. */
void tt_set(void *va, TPPI_BlkAccTag tag);

/*
 * Where the data of @va (a mapped page of the segment) is in the
 * unchecked alias of tagged memory, or NULL: reads and writes there
 * never fault.
 */
uint8_t *tt_alias(void *va);

/* The node controller's tag of the block of @va (TAG_GET), or -1. */
int tt_dev_tag(void *va);

/* The name of a tag. */
const char *tt_tag_name(int tag);

/*
 * Block data for the Ba tests: tt_pattern(seed, i) is word i of the
 * pattern of @seed; tt_fill() writes it through the unchecked alias;
 * tt_holds() checks it is there.
 */
uint32_t tt_pattern(unsigned seed, unsigned i);
void tt_fill(void *blk, int len, unsigned seed);
bool tt_holds(void *blk, int len, unsigned seed);

/* Every tag block of [blk, blk + len) has tag @tag (copy and device). */
bool tt_tagged(void *blk, int len, int tag);

/* Accesses, one instruction each (returns the value loaded). */
uint8_t tt_ldrb(void *p);
void tt_strb(void *p, uint8_t v);
uint64_t tt_ldr(void *p);
void tt_str(void *p, uint64_t v);
uint64_t tt_ldp(void *p);               /* LDP: returns the sum */
void tt_stp(void *p, uint64_t a, uint64_t b);
uint64_t tt_ld_q(void *p);              /* LDR q: the low half */
void tt_st_q(void *p, uint64_t v);      /* STR q: v in both halves */
uint64_t tt_ldadd(void *p, uint64_t v); /* LDADD: the old value */
uint64_t tt_swp(void *p, uint64_t v);   /* SWP */
uint64_t tt_ldxr(void *p);              /* LDXR */
void tt_dc_zva(void *p);                /* DC ZVA (a store of a block) */

/* True if @pc is inside accessor @fn (its few instructions). */
bool tt_pc_in(int pc, void *fn);

#endif /* TAGS_UTIL_H */
