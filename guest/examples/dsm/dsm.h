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
 * on every node before touching shared memory; it returns once every
 * node has called it (a dsm_barrier), so that no request reaches a node
 * that does not know the block size yet.  Returns 0, or -1 (and prints
 * why, at once) for a bad @block, more than DSM_MAX_NODES nodes or no
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

/*
 * The update protocol (after Falsafi et al., "Application-Specific
 * Protocols for User-Level Shared Memory", SC 1994): for blocks with one
 * writer and a known set of readers, the writer keeps the only Writable
 * copy and its stores do not invalidate anything; the readers keep
 * ReadOnly copies that change only when the writer pushes the block
 * (dsm_push) and the push arrives.  Between a store and the push that
 * carries it, the readers still see the value pushed before: memory is
 * not sequentially consistent for these blocks; a reader orders its
 * loads with dsm_update_wait.  See docs/dsm.rst, "The update protocol".
 */
struct dsm_update_blk {
    void *va;               /* any address in the block */
    TPPI_NodeId writer;     /* the only node that stores to it */
    uint64_t readers;       /* the nodes that load it (bit n: node n) */
};

/* At most this many blocks in the update protocol at once. */
#define DSM_MAX_UPDATE      256

/*
 * dsm_update_begin: puts the @count blocks @b under the update protocol;
 * every node calls it with the same list, when no access to them is in
 * flight (between dsm_barrier()s).  The writer of each block takes its
 * Writable copy (a write miss of the invalidation protocol) and pushes
 * it once: that is push 1 of the block at its readers.  Returns 0, or -1
 * (and prints why) for more than DSM_MAX_UPDATE blocks or a block listed
 * twice.  While a block is in the update protocol, a store by a node
 * other than its writer, or a load by a node that is neither its writer
 * nor a reader, stops the node (an error); a reader's load that finds no
 * copy yet waits for push 1.
 */
int dsm_update_begin(const struct dsm_update_blk *b, int count);

/*
 * dsm_push: from the writer's computation code, sends the block at @va
 * as it is now to each of its readers, which install it (their tag goes
 * ReadOnly if it was not).  Returns the push's number (1 is
 * dsm_update_begin's), or 0 (and prints why) if this node does not write
 * such a block.
 */
unsigned dsm_push(void *va);

/*
 * dsm_update_wait: on a reader, waits until push @n of the block at @va
 * (and so every one before it: pushes arrive in order) has been
 * installed here.  A reader must not load the block while a push it has
 * not waited for may arrive (it could see part of it); the writer must
 * not push again until every reader is done with the copy it has.
 */
void dsm_update_wait(void *va, unsigned n);

/*
 * dsm_update_end: gives every block back to the invalidation protocol;
 * every node calls it, after every push has been waited for.  The
 * readers' copies are dropped (the writer's stays Writable, as the
 * home's directory has it), so sequential consistency holds again.
 */
void dsm_update_end(void);

/* Protocol counters of this node. */
struct dsm_stats {
    uint64_t pages;         /* pages mapped here */
    uint64_t read_misses;   /* read faults served (local or remote) */
    uint64_t write_misses;  /* write faults served */
    uint64_t invalidations; /* invalidations of copies here */
    uint64_t fetches;       /* Writable copies fetched from here */
    uint64_t requests;      /* requests served as a home */
    uint64_t prefetches;    /* dsm_prefetch() calls that started a miss */
    uint64_t pushes;        /* blocks sent by dsm_push (one a reader) */
    uint64_t updates;       /* pushed blocks installed here */
};

/* dsm_get_stats: copies this node's counters to *@s. */
void dsm_get_stats(struct dsm_stats *s);

#endif /* DSM_H */
