/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dsm: coherent distributed shared memory on the Tempest interface, after
 * Stache (Reinhardt, Larus and Wood, ISCA 1994).  Read this file top to
 * bottom: it is meant as the example to copy.  docs/dsm.rst walks
 * through it with message diagrams.
 *
 * What Tempest gives us, and how it is used
 * -----------------------------------------
 *  - Page faults (3.1.4): the first touch of a page of the segment on a
 *    node maps it there (TPPI_alloc_and_map).  At the page's home it is
 *    mapped Writable with a directory as its usr_ptr; elsewhere Invalid.
 *  - Block access tags (3.2): each node's tags say what its copy of each
 *    block may do: Writable (the only copy), ReadOnly (one of several),
 *    Invalid (no copy) or Busy (no copy and a request for one on its way).
 *  - Block access faults (3.2.7): a load of an Invalid block, a store to an
 *    Invalid or ReadOnly block, runs a handler on the protocol thread that
 *    asks the home for the block; the faulting thread waits.
 *  - Ba items (3.3): data moves with its tag change in one operation, with
 *    3.2.6's guarantee (a copy taken away is read after its tag changed).
 *  - TPPI_resume_va (3.6): the reply's handler installs the block and lets
 *    the waiting threads retry.
 *
 * The protocol (home-based invalidation, block by block)
 * -------------------------------------------------------
 * The home of a page keeps, for each block, a directory entry: the remote
 * nodes holding a ReadOnly copy (sharers), or the one remote node holding
 * the Writable copy (owner).  The home's own tag follows from it: Invalid
 * if a remote node owns the block, ReadOnly if there are sharers,
 * Writable otherwise.  The home serves one request per block at a time,
 * in arrival order; a request that finds the block busy waits in a queue.
 *
 *   requester                      home                       others
 *   load/store faults
 *   tag -> Busy
 *   GET(blk, write) ----------->   owner?  FETCH(blk, write) -----> owner
 *                                          <------ WB(blk) + data, its copy
 *                                               Invalid (write) or ReadOnly
 *                                  write?  INV(blk) ---------------> sharers
 *                                          <--------------- ACK(blk), copy
 *                                                                  Invalid
 *   <---------- PUT(blk, write) + data; the home's copy goes Invalid
 *               (write) or ReadOnly (read) in the same Ba operation
 *   tag -> Writable / ReadOnly
 *   TPPI_resume_va: retry
 *
 * A fault at the home itself is a request like any other, served without
 * messages to itself.  Every message is sent from a handler, so all of
 * them travel on the reply network, where libtempest keeps each pair of
 * nodes in order: a PUT always arrives before a later INV or FETCH for
 * the same block, which is what keeps the protocol free of races.  A
 * requester whose copy is invalidated while its own request is on its
 * way (its tag is Busy) just acknowledges: the reply brings fresh data.
 *
 * The update protocol (after Falsafi et al., SC 1994)
 * ----------------------------------------------------
 * For a block with one writer and known readers (a stencil's edge row),
 * invalidating the readers' copies at every store and fetching them back
 * at every load costs two round trips where one message would do.
 * dsm_update_begin() takes such blocks out of the invalidation protocol:
 * the writer keeps the Writable copy, the readers ReadOnly copies, and
 *
 *   writer                                      each reader
 *   stores (no fault)
 *   dsm_push(blk) --- PUSH(blk, n) + data ---->  TPPI_recv_Ba: install,
 *                                                tag -> ReadOnly
 *                                                dsm_update_wait(blk, n)
 *                                                returns
 *
 * PUSH is sent from computation code, so on the request network, in
 * order between two nodes: push n arrives after push n - 1.  The home's
 * directory keeps naming the writer as the owner; dsm_update_end() drops
 * the readers' copies, which makes that true again.
 */
#include <stdio.h>
#include <stdlib.h>

#include "dsm.h"
#include "tempest/rt.h"

#define MAX_BLKS        (TPPI_PAGE_SIZE / TPPI_TAG_BLK_SIZE)
#define NO_OWNER        (-1)

/* A request waiting at the home. */
struct req {
    struct req *next;
    TPPI_NodeId node;
    bool write;
};

/* The home's directory entry of one block. */
struct dir_entry {
    uint64_t sharers;       /* remote nodes with a ReadOnly copy */
    int owner;              /* remote node with the Writable copy */
    bool busy;              /* serving cur */
    bool local;             /* this node's own request is queued or served */
    unsigned acks;          /* invalidation acks still to come */
    struct req cur;         /* the request being served */
    struct req *head, *tail;    /* requests waiting behind it */
};

/* A page's directory, its usr_ptr at the home: one entry a block. */
struct dir_page {
    struct dir_entry e[MAX_BLKS];
};

/*
 * A block under the update protocol, in a table hashed by the block's
 * offset (open addressing; written by computation code only between
 * barriers, read by handlers).
 */
struct upd {
    bool used;
    int off;                /* the block's offset in the segment */
    TPPI_NodeId writer;
    uint64_t readers;
    unsigned sent;          /* the writer: pushes sent */
    volatile unsigned got;  /* a reader: the last push installed */
};

#define UPD_SLOTS       (2 * DSM_MAX_UPDATE)

static struct upd upd_tab[UPD_SLOTS];
static unsigned upd_count;

/*
 * The coherence unit: a (super)block of unit bytes (3.2.3), the same on
 * every node.  Its tag changes and Ba items name the whole unit.
 */
static int unit = TPPI_TAG_BLK_SIZE;
static dsm_home_fn home_fn;
static void *home_arg;
static struct dsm_stats stats;

/* ---- addresses ---------------------------------------------------------- */

static char *blk_of(void *va)
{
    return (char *)((uintptr_t)va & ~(uintptr_t)(unit - 1));
}

static char *page_of(void *va)
{
    return (char *)((uintptr_t)va & ~(uintptr_t)(TPPI_PAGE_SIZE - 1));
}

/* Blocks travel in messages as their offset in the segment (one word). */
static int off_of(void *blk)
{
    return (int)(uint32_t)((uintptr_t)blk - TPPI_SEGMENT_BASE);
}

static char *blk_at(int off)
{
    return (char *)(uintptr_t)(TPPI_SEGMENT_BASE + (uint32_t)off);
}

static TPPI_NodeId home_of(void *va)
{
    uint64_t page = ((uintptr_t)va - TPPI_SEGMENT_BASE) >> TPPI_PAGE_SHIFT;

    return home_fn ? home_fn(page, home_arg) % TPPI_num_nodes :
                     (TPPI_NodeId)(page % TPPI_num_nodes);
}

/* The update table's slot of the block at @off: its entry, or a free one. */
static struct upd *upd_slot(int off)
{
    unsigned i = ((uint32_t)off / (unsigned)unit) % UPD_SLOTS;

    while (upd_tab[i].used && upd_tab[i].off != off) {
        i = (i + 1) % UPD_SLOTS;
    }
    return &upd_tab[i];
}

/* The update protocol's entry of the block holding @va, or NULL. */
static struct upd *upd_find(void *va)
{
    struct upd *u;

    if (upd_count == 0) {
        return NULL;
    }
    u = upd_slot(off_of(blk_of(va)));
    return u->used ? u : NULL;
}

static bool upd_reads(const struct upd *u)
{
    return (u->readers & (1ULL << TPPI_self_address)) != 0;
}

/* ---- tags --------------------------------------------------------------- */

/*
 * The change (Table 2, the preferred one) that takes the block from its
 * current tag to @want.
 */
static TPPI_BlkTagChange change_to(void *blk, TPPI_BlkAccTag want)
{
    TPPI_BlkAccTag cur = TPPI_get_blk_acc(blk);

    if (cur == want) {
        return TPPI_Blk_No_Tag_Change;
    }
    switch (want) {
    case TPPI_Blk_Writable:
        return cur == TPPI_Blk_ReadOnly ? TPPI_Blk_Upgrade_RW :
                                          TPPI_Blk_Validate_RW;
    case TPPI_Blk_ReadOnly:
        return cur == TPPI_Blk_Writable ? TPPI_Blk_Downgrade_RO :
                                          TPPI_Blk_Validate_RO;
    case TPPI_Blk_Busy:
        return cur == TPPI_Blk_Invalid ? TPPI_Blk_Invalid_To_Busy :
                                         TPPI_Blk_Mark_Busy;
    default:
        return cur == TPPI_Blk_Busy ? TPPI_Blk_Busy_To_Invalid :
                                      TPPI_Blk_Invalidate;
    }
}

/* What the home's own copy may do, given the directory. */
static TPPI_BlkAccTag home_tag(const struct dir_entry *e)
{
    if (e->owner != NO_OWNER) {
        return TPPI_Blk_Invalid;
    }
    return e->sharers ? TPPI_Blk_ReadOnly : TPPI_Blk_Writable;
}

/* ---- pages -------------------------------------------------------------- */

/* Maps the page of @va here if it is not yet: first touch. */
static void map_page(void *va)
{
    char *pg = page_of(va);
    TPPI_NodeId home = home_of(pg);
    struct dir_page *dir = NULL;
    unsigned i;
    int ok;

    if (TPPI_get_page_info(pg, NULL) == 1) {
        return;
    }
    if (home == TPPI_self_address) {
        /* The master copy: Writable, zero, with its directory. */
        dir = calloc(1, sizeof(*dir));
        if (dir == NULL) {
            printf("dsm: node %u: no memory for a directory\n",
                   TPPI_self_address);
            rt_exit(1);
        }
        for (i = 0; i < MAX_BLKS; i++) {
            dir->e[i].owner = NO_OWNER;
        }
        ok = TPPI_alloc_and_map(pg, DSM_MODE, TPPI_Blk_Writable, home, dir);
    } else {
        ok = TPPI_alloc_and_map(pg, DSM_MODE, TPPI_Blk_Invalid, home, NULL);
    }
    if (!ok) {
        printf("dsm: node %u: cannot map page %p: out of tagged memory "
               "(scripts/tempest run --tagmem)\n", TPPI_self_address, pg);
        rt_exit(1);
    }
    stats.pages++;
}

/* The home's directory entry of block @b (mapping the page if need be). */
static struct dir_entry *dir_of(void *b)
{
    struct dir_page *dir;

    map_page(b);
    dir = TPPI_get_page_user_ptr(b);
    return &dir->e[((uintptr_t)b & (TPPI_PAGE_SIZE - 1)) / unit];
}

static void page_fault(void *va, int pc, int is_write)
{
    (void)pc;
    (void)is_write;
    map_page(va);
    /* Its blocks' tags decide what happens when the access is retried. */
    TPPI_resume_va(va, TPPI_PAGE_SIZE);
}

/* ---- the home ------------------------------------------------------------ */

static void serve(char *blk, struct dir_entry *e, TPPI_NodeId node,
                  bool write);
static void fetch_h(TPPI_NodeId src, int size);
static void inv_h(TPPI_NodeId src, int size);
static void put_h(TPPI_NodeId src, int size);

/* Step 3: the requester gets the block; then the next request. */
static void grant(char *blk, struct dir_entry *e)
{
    struct req r = e->cur;
    struct req *next;

    if (r.write) {
        e->sharers = 0;
        e->owner = r.node == TPPI_self_address ? NO_OWNER : (int)r.node;
    } else if (r.node != TPPI_self_address) {
        e->sharers |= 1ULL << r.node;
    }
    if (r.node == TPPI_self_address) {
        TPPI_change_blk_acc(blk, unit, change_to(blk, home_tag(e)));
        e->local = false;
        TPPI_resume_va(blk, unit);
    } else {
        /* Our copy's new tag and the data leave in one Ba operation. */
        TPPI_send_WWBa(r.node, put_h, off_of(blk), r.write, blk, unit,
                       change_to(blk, home_tag(e)));
    }
    e->busy = false;
    next = e->head;
    if (next) {
        e->head = next->next;
        if (e->head == NULL) {
            e->tail = NULL;
        }
        r = *next;
        free(next);
        serve(blk, e, r.node, r.write);
    }
}

/* Step 2: a writer needs every other copy gone first. */
static void invalidate_or_grant(char *blk, struct dir_entry *e)
{
    uint64_t others;
    TPPI_NodeId n;

    if (e->cur.write) {
        others = e->sharers & ~(1ULL << e->cur.node);
        e->acks = 0;
        for (n = 0; n < TPPI_num_nodes; n++) {
            if (others & (1ULL << n)) {
                TPPI_send_W(n, inv_h, off_of(blk));
                e->acks++;
            }
        }
        if (e->acks) {
            return;         /* continues in ack_h() */
        }
    }
    grant(blk, e);
}

/* Step 1: a remote owner gives the block back first. */
static void serve(char *blk, struct dir_entry *e, TPPI_NodeId node,
                  bool write)
{
    e->busy = true;
    e->cur.node = node;
    e->cur.write = write;
    stats.requests++;
    if (e->owner != NO_OWNER) {
        TPPI_send_WW((TPPI_NodeId)e->owner, fetch_h, off_of(blk), write);
        return;             /* continues in wb_h() */
    }
    invalidate_or_grant(blk, e);
}

/* A request reaches the home: served now, or queued behind another. */
static void home_request(char *blk, TPPI_NodeId node, bool write)
{
    struct dir_entry *e = dir_of(blk);
    struct req *r;

    if (!e->busy) {
        serve(blk, e, node, write);
        return;
    }
    r = malloc(sizeof(*r));
    if (r == NULL) {
        printf("dsm: node %u: no memory for a request\n",
               TPPI_self_address);
        rt_exit(1);
    }
    r->next = NULL;
    r->node = node;
    r->write = write;
    if (e->tail) {
        e->tail->next = r;
    } else {
        e->head = r;
    }
    e->tail = r;
}

/* GET(blk, write): a node wants a copy. */
static void get_h(TPPI_NodeId src, int size)
{
    char *blk = blk_at(TPPI_recv_W());
    bool write = TPPI_recv_W();

    (void)size;
    home_request(blk, src, write);
}

/* WB(blk) + data: the former owner's copy, now ReadOnly or gone. */
static void wb_h(TPPI_NodeId src, int size)
{
    char *blk = blk_at(TPPI_recv_W());
    struct dir_entry *e = dir_of(blk);

    (void)size;
    TPPI_recv_Ba(blk, unit, TPPI_Blk_No_Tag_Change);
    if (!e->cur.write) {
        e->sharers |= 1ULL << src;
    }
    e->owner = NO_OWNER;
    invalidate_or_grant(blk, e);
}

/* ACK(blk): a sharer dropped its copy. */
static void ack_h(TPPI_NodeId src, int size)
{
    char *blk = blk_at(TPPI_recv_W());
    struct dir_entry *e = dir_of(blk);

    (void)src;
    (void)size;
    if (--e->acks == 0) {
        grant(blk, e);
    }
}

/* ---- the other nodes ----------------------------------------------------- */

/* PUT(blk, write) + data: our request is granted. */
static void put_h(TPPI_NodeId src, int size)
{
    char *blk = blk_at(TPPI_recv_W());
    bool write = TPPI_recv_W();

    (void)src;
    (void)size;
    TPPI_recv_Ba(blk, unit, write ? TPPI_Blk_Validate_RW :
                                   TPPI_Blk_Validate_RO);
    TPPI_resume_va(blk, unit);
}

/* INV(blk): drop our ReadOnly copy (a Busy one is being replaced). */
static void inv_h(TPPI_NodeId src, int size)
{
    char *blk = blk_at(TPPI_recv_W());

    (void)size;
    if (TPPI_get_blk_acc(blk) != TPPI_Blk_Busy) {
        TPPI_change_blk_acc(blk, unit, TPPI_Blk_Invalidate);
    }
    stats.invalidations++;
    TPPI_send_W(src, ack_h, off_of(blk));
}

/* FETCH(blk, write): give our Writable copy back to the home. */
static void fetch_h(TPPI_NodeId src, int size)
{
    char *blk = blk_at(TPPI_recv_W());
    bool write = TPPI_recv_W();

    (void)size;
    stats.fetches++;
    TPPI_send_WBa(src, wb_h, off_of(blk), blk, unit,
                  change_to(blk, write ? TPPI_Blk_Invalid :
                                         TPPI_Blk_ReadOnly));
}

/* ---- faults -------------------------------------------------------------- */

/* Ask the home for @blk (a miss, or a prefetch): grant() resumes us. */
static void request(char *blk, bool write, TPPI_NodeId home)
{
    struct dir_entry *e;

    if (home == TPPI_self_address) {
        e = dir_of(blk);
        if (!e->local) {
            e->local = true;
            home_request(blk, home, write);
        }
        return;             /* grant() resumes us */
    }
    TPPI_change_blk_acc(blk, unit, change_to(blk, TPPI_Blk_Busy));
    TPPI_send_WW(home, get_h, off_of(blk), write);
}

/*
 * A miss on a block under the update protocol that is not its writer's:
 * a reader's load waits for the first push (which resumes it), anything
 * else is the program's error.
 */
static void update_miss(struct upd *u, void *va, bool write)
{
    if (!write && upd_reads(u)) {
        if (TPPI_get_blk_acc(va) == TPPI_Blk_ReadOnly) {
            TPPI_resume_va(blk_of(va), unit);   /* it came meanwhile */
        }
        return;
    }
    printf("dsm: node %u: a %s at %p, in a block of the update protocol "
           "that node %u writes\n", TPPI_self_address,
           write ? "store" : "load by a node not reading it", va,
           u->writer);
    rt_exit(1);
}

/* A load or store our copy does not allow: ask the home. */
static void miss(void *va, bool write, TPPI_NodeId home)
{
    struct upd *u = upd_find(va);

    if (u && u->writer != TPPI_self_address) {
        update_miss(u, va, write);
        return;
    }
    if (write) {
        stats.write_misses++;
    } else {
        stats.read_misses++;
    }
    request(blk_of(va), write, home);
}

/*
 * PREFETCH(blk, write), from this node to itself: the protocol's state
 * changes only in handlers, so dsm_prefetch() asks its own protocol
 * thread to do what a fault would.
 */
static void prefetch_h(TPPI_NodeId src, int size)
{
    char *blk = blk_at(TPPI_recv_W());
    bool write = TPPI_recv_W();
    TPPI_BlkAccTag tag;
    struct upd *u;

    (void)size;
    if (src != TPPI_self_address) {
        return;
    }
    map_page(blk);
    u = upd_find(blk);
    if (u && u->writer != TPPI_self_address) {
        return;             /* pushed, not fetched */
    }
    tag = TPPI_get_blk_acc(blk);
    if (tag == TPPI_Blk_Writable || tag == TPPI_Blk_Busy ||
        (tag == TPPI_Blk_ReadOnly && !write)) {
        return;             /* there, or on its way */
    }
    stats.prefetches++;
    request(blk, write, home_of(blk));
}

void dsm_prefetch(void *va, int write)
{
    TPPI_send_WW(TPPI_self_address, prefetch_h, off_of(blk_of(va)),
                 write != 0);
}

static void read_miss(void *va, void *usr_ptr, TPPI_NodeId home)
{
    (void)usr_ptr;
    miss(va, false, home);
}

static void write_miss(void *va, void *usr_ptr, TPPI_NodeId home)
{
    (void)usr_ptr;
    miss(va, true, home);
}

/* A Busy block: our request is on its way; its reply resumes us. */
static void busy(void *va, void *usr_ptr, TPPI_NodeId home)
{
    (void)va;
    (void)usr_ptr;
    (void)home;
}

/* ---- set-up and barrier -------------------------------------------------- */

int dsm_init(int block, dsm_home_fn home, void *arg)
{
    if (block < TPPI_TAG_BLK_SIZE || block > DSM_MAX_BLOCK ||
        (block & (block - 1))) {
        printf("dsm: a coherence block of %d bytes: it must be a power of 2 "
               "from %d to %d\n", block, TPPI_TAG_BLK_SIZE, DSM_MAX_BLOCK);
        return -1;
    }
    if (TPPI_num_nodes > DSM_MAX_NODES) {
        printf("dsm: %u nodes: at most %d\n", TPPI_num_nodes, DSM_MAX_NODES);
        return -1;
    }
    if (rt_tagmem_size() == 0) {
        printf("dsm: node %u has no tagged memory\n", TPPI_self_address);
        return -1;
    }
    unit = block;
    home_fn = home;
    home_arg = arg;
    TPPI_register_page_fault_handler(page_fault);
    TPPI_register_blk_acc_fault_handler(DSM_MODE, TPPI_Blk_Invalid,
                                        TPPI_ReadAccess, read_miss);
    TPPI_register_blk_acc_fault_handler(DSM_MODE, TPPI_Blk_Invalid,
                                        TPPI_WriteAccess, write_miss);
    TPPI_register_blk_acc_fault_handler(DSM_MODE, TPPI_Blk_ReadOnly,
                                        TPPI_WriteAccess, write_miss);
    TPPI_register_blk_acc_fault_handler(DSM_MODE, TPPI_Blk_Busy,
                                        TPPI_ReadAccess, busy);
    TPPI_register_blk_acc_fault_handler(DSM_MODE, TPPI_Blk_Busy,
                                        TPPI_WriteAccess, busy);
    /*
     * No node asks us for a block before we know its size: a request
     * handled with the default one reads past the message's end.
     */
    dsm_barrier();
    return 0;
}

static volatile unsigned arrived;   /* node 0: arrivals, all epochs */
static volatile unsigned released;  /* the last epoch released */
static unsigned epoch;

static void arrive_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    arrived++;
}

static void release_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    released = (unsigned)TPPI_recv_W();
}

static int all_arrived(void *arg)
{
    (void)arg;
    return arrived >= epoch * (TPPI_num_nodes - 1);
}

static int is_released(void *arg)
{
    (void)arg;
    return released >= epoch;
}

void dsm_barrier(void)
{
    TPPI_NodeId n;

    epoch++;
    if (TPPI_self_address != 0) {
        TPPI_send(0, arrive_h);
        tempest_wait(is_released, NULL);
        return;
    }
    tempest_wait(all_arrived, NULL);
    for (n = 1; n < TPPI_num_nodes; n++) {
        TPPI_send_W(n, release_h, (int)epoch);
    }
}

/* ---- the update protocol ------------------------------------------------ */

/* PUSH(blk, n) + data: push n of a block we read. */
static void push_h(TPPI_NodeId src, int size)
{
    char *blk = blk_at(TPPI_recv_W());
    unsigned n = (unsigned)TPPI_recv_W();
    struct upd *u = upd_find(blk);
    bool was_ro;

    (void)size;
    if (u == NULL || u->writer != src || !upd_reads(u)) {
        printf("dsm: node %u: a push of %p from node %u, which is not "
               "a block it writes and we read\n", TPPI_self_address, blk,
               src);
        rt_exit(1);
    }
    map_page(blk);
    was_ro = TPPI_get_blk_acc(blk) == TPPI_Blk_ReadOnly;
    TPPI_recv_Ba(blk, unit, change_to(blk, TPPI_Blk_ReadOnly));
    u->got = n;
    stats.updates++;
    if (!was_ro) {
        TPPI_resume_va(blk, unit);  /* loads that waited for push 1 */
    }
}

int dsm_update_begin(const struct dsm_update_blk *b, int count)
{
    struct upd *u;
    int i;

    if (count < 0 || upd_count + (unsigned)count > DSM_MAX_UPDATE) {
        printf("dsm: %d blocks in the update protocol: at most %d\n",
               count + (int)upd_count, DSM_MAX_UPDATE);
        return -1;
    }
    for (i = 0; i < count; i++) {
        u = upd_slot(off_of(blk_of(b[i].va)));
        if (u->used) {
            printf("dsm: block %p listed twice for the update protocol\n",
                   blk_of(b[i].va));
            return -1;
        }
        u->off = off_of(blk_of(b[i].va));
        u->writer = b[i].writer;
        u->readers = b[i].readers & ~(1ULL << b[i].writer);
        u->sent = 0;
        u->got = 0;
        u->used = true;
        upd_count++;
    }
    /* Every node knows the blocks before a push can reach it. */
    dsm_barrier();
    for (i = 0; i < count; i++) {
        volatile char *p = blk_of(b[i].va);     /* a real store */

        if (b[i].writer == TPPI_self_address) {
            /* The Writable copy, through the invalidation protocol. */
            if (TPPI_get_blk_acc((char *)p) != TPPI_Blk_Writable) {
                dsm_prefetch((char *)p, 1);
                *p = *p;
            }
            dsm_push((char *)p);
        }
    }
    return 0;
}

unsigned dsm_push(void *va)
{
    struct upd *u = upd_find(va);
    char *blk = blk_of(va);
    TPPI_NodeId n;

    if (u == NULL || u->writer != TPPI_self_address) {
        printf("dsm: node %u: dsm_push(%p): not a block this node writes "
               "in the update protocol\n", TPPI_self_address, va);
        return 0;
    }
    u->sent++;
    for (n = 0; n < TPPI_num_nodes; n++) {
        if ((u->readers >> n) & 1) {
            TPPI_send_WWR(n, push_h, u->off, (int)u->sent, blk, unit);
            stats.pushes++;
        }
    }
    return u->sent;
}

struct upd_wait {
    const struct upd *u;
    unsigned n;
};

static int pushed(void *arg)
{
    const struct upd_wait *w = arg;

    return w->u->got >= w->n;
}

void dsm_update_wait(void *va, unsigned n)
{
    struct upd_wait w = { upd_find(va), n };

    if (w.u == NULL || !upd_reads(w.u)) {
        printf("dsm: node %u: dsm_update_wait(%p): not a block this node "
               "reads in the update protocol\n", TPPI_self_address, va);
        return;
    }
    tempest_wait(pushed, &w);
}

void dsm_update_end(void)
{
    unsigned i;

    /* No push is on its way; after the barrier, no handler reads these. */
    dsm_barrier();
    for (i = 0; i < UPD_SLOTS; i++) {
        struct upd *u = &upd_tab[i];

        if (u->used && upd_reads(u)) {
            char *blk = blk_at(u->off);

            TPPI_change_blk_acc(blk, unit, change_to(blk, TPPI_Blk_Invalid));
        }
        u->used = false;
    }
    upd_count = 0;
    /* Every copy is where the directories say before anyone asks. */
    dsm_barrier();
}

void dsm_get_stats(struct dsm_stats *s)
{
    *s = stats;
}
