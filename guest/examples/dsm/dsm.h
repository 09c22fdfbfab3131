/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dsm: coherent distributed shared memory built only on the Tempest
 * interface (<tempest.h>), after Stache (Reinhardt, Larus and Wood,
 * "Typhoon and Tempest: User-Level Shared Memory", ISCA 1994).
 *
 * The whole user-managed segment (TPPI_SEGMENT_BASE, TPPI_SEGMENT_SIZE)
 * becomes one shared address space: every node sees the same data at the
 * same addresses, kept coherent block by block (the coherence block, a
 * power of 2 from TPPI_TAG_BLK_SIZE to DSM_MAX_BLOCK: a superblock when
 * larger than a tag block)
 * with a home-based invalidation protocol: many ReadOnly copies or one
 * Writable copy of each block.  Pages are allocated on first touch on
 * every node; a page's home (the node holding its directory and its
 * master copy) is chosen by a function of the page index, the page index
 * modulo the node count unless the program chooses another.  Memory is
 * sequentially consistent: a load returns the last value stored anywhere.
 * See dsm.c for the protocol, docs/dsm.rst for a walk-through.
 *
 * Usage (the same on every node, SPMD):
 *
 *     dsm_init(TPPI_TAG_BLK_SIZE, NULL, NULL);
 *     double *a = (double *)TPPI_SEGMENT_BASE;
 *     ... loads and stores to a[] from main() (computation code) ...
 *     dsm_barrier();
 *
 * Limits: at most DSM_MAX_NODES nodes; the protocol thread itself (any
 * handler) must not touch shared data; pages are never given back.
 */
#ifndef DSM_H
#define DSM_H

#include <stdint.h>

#include "tempest.h"

#define DSM_MAX_NODES       64
/* The largest coherence block: it and two words fit one message. */
#define DSM_MAX_BLOCK       (TPPI_MAX_AM_BYTES / 2)

/* Chooses the home of the page with index @page (0 at TPPI_SEGMENT_BASE). */
typedef TPPI_NodeId (*dsm_home_fn)(uint64_t page, void *arg);

/*
 * dsm_init: registers the protocol's page and block access fault
 * handlers (page mode DSM_MODE), sets the coherence block to @block bytes
 * (a power of 2 from TPPI_TAG_BLK_SIZE to DSM_MAX_BLOCK: data moves and
 * is invalidated in blocks of that size; larger blocks mean fewer misses
 * and more false sharing) and the home function (@home NULL: page %
 * TPPI_num_nodes), all of which must be the same on every node.  Call it
 * on every node before touching shared memory.  Returns 0, or -1 (and
 * prints why) for a bad @block, more than DSM_MAX_NODES nodes or no
 * tagged memory.
 */
#define DSM_MODE            1
int dsm_init(int block, dsm_home_fn home, void *arg);

/*
 * dsm_barrier: returns on every node once every node has called it (node
 * 0 gathers and releases, with active messages).  Shared memory needs no
 * flush around it: stores are coherent as they complete.
 */
void dsm_barrier(void);

/*
 * dsm_prefetch: starts the miss that a load (@write 0) or store (@write 1)
 * at @va would take, without waiting for it: a later access finds the
 * block there, or on its way (Busy: it waits for the reply as a miss
 * would).  Nothing if this node's copy already allows the access.  From
 * computation code; it only moves a miss earlier, so memory stays
 * sequentially consistent.
 */
void dsm_prefetch(void *va, int write);

/* Protocol counters of this node. */
struct dsm_stats {
    uint64_t pages;         /* pages mapped here */
    uint64_t read_misses;   /* read faults served (local or remote) */
    uint64_t write_misses;  /* write faults served */
    uint64_t invalidations; /* invalidations of copies here */
    uint64_t fetches;       /* Writable copies fetched from here */
    uint64_t requests;      /* requests served as a home */
    uint64_t prefetches;    /* dsm_prefetch() calls that started a miss */
};

/* dsm_get_stats: copies this node's counters to *@s. */
void dsm_get_stats(struct dsm_stats *s);

#endif /* DSM_H */
