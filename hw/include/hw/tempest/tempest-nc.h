/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: the MAGIC-like device of one node of a
 * virtual parallel machine (Stanford FLASH's MAGIC, Wisconsin Tempest).
 *
 * QEMU interface:
 *  + sysbus MMIO region 0: the register file (TEMPEST_NC_SIZE bytes),
 *    laid out as in include/standard-headers/tempest/tempest-hw.h
 *  + sysbus IRQ 0: the node controller interrupt
 *  + QOM link "memory": the MemoryRegion the device's DMA sees (the
 *    board links its system memory); rings, transfers, fetch-and-op and
 *    collective results go through an AddressSpace over it
 *  + QOM property "node-id": this node's index in its cluster
 *  + QOM property "num-nodes": the number of nodes in the cluster
 *  + QOM property "num-cpus": the number of vCPUs of this node
 *  + QOM property "ram-base", "ram-size": the node's guest RAM
 *  + QOM property "cmdline": the program's command line (-append)
 *  + QOM property "fabric": how to reach the other nodes ("unix:DIR",
 *    "tcp:HOST:PORT", ...; see tempest-fabric.h)
 *  + QOM property "cluster-id": the cluster's identity, the same on
 *    every node; a node of another cluster cannot connect
 *  + QOM property "credits": packets in flight per peer and network
 *  + QOM property "fabric-timeout": ms to wait for the other nodes
 *  + QOM property "coll-fanout": children per node of the control
 *    network's combining tree
 *  + QOM property "tagmem-size": bytes of tagged memory (0: none); then
 *    sysbus MMIO region 1 is the tagged memory (map it at
 *    TEMPEST_TAGMEM_BASE) and region 2 the same frames unchecked, a
 *    second RAM region over the same host memory (TEMPEST_TAGMEM_ALIAS)
 *
 * Everything below the state struct is the device's own: its functions
 * are declared in hw/tempest/tempest-nc-internal.h, not here.
 */
#ifndef HW_TEMPEST_TEMPEST_NC_H
#define HW_TEMPEST_TEMPEST_NC_H

#include "hw/sysbus.h"
#include "exec/memory.h"
#include "hw/core/cpu.h"
#include "qemu/queue.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "standard-headers/tempest/tempest-hw.h"
#include "hw/tempest/tempest-fabric.h"

/*
 * How long a halted vCPU waiting for a collective on shared memory yields
 * its host CPU before it sleeps on DONE (CPUIdleSleep.yield_us), when
 * the nodes do not spin ("sleep-yield-us"; 0: it sleeps at once).  500
 * us by default since the twentieth session: a 16-node Barrier on 2
 * cores 77-108 us against 126-173, 64 nodes 524-597 against 668-784, and
 * the 16-, 64- and 256-node radix sorts no slower (docs/strata.rst,
 * "Yielding before the sleep").
 */
#define TEMPEST_NC_SLEEP_YIELD_US 500

/*
 * The time limit of that sleep (CPUIdleSleep.max_ms), a safety net only:
 * a collective's waiter thread looks every 50 ms anyway, and a packet's
 * writer that dies closes its link.  64 idle nodes sleeping on their RQs
 * cost 4.8-9.0% of a core with QEMU's 50 ms (docs/fabric.rst, "A vCPU
 * asleep on its RQ").
 */
#define TEMPEST_NC_SLEEP_MAX_MS 1000

#define TYPE_TEMPEST_NC "tempest-nc"
OBJECT_DECLARE_SIMPLE_TYPE(TempestNCState, TEMPEST_NC)

/* A ring in guest RAM (SQ0, SQ1, RQ, CQ); slots == 0: not set up. */
typedef struct TempestRing {
    uint64_t base;
    uint32_t slots;
    uint32_t idx;       /* SQ: next slot to read; RQ, CQ: next to write */
    uint32_t shift;     /* (1.11) log2 of the slot size; 0: the default */
} TempestRing;

enum {
    FOP_IDLE,
    FOP_PENDING,        /* request sent, reply awaited */
    FOP_DONE,
    FOP_FAILED,
};

typedef struct TempestXferOut TempestXferOut;
typedef struct TempestXferIn TempestXferIn;
typedef struct TempestXferBuf TempestXferBuf;
typedef struct TempestNCHooks TempestNCHooks;

/* Command ops are below this (TEMPEST_CMD_* in tempest-hw.h). */
#define TEMPEST_NC_NUM_OPS      16
/* Engines that may register with the core (tempest-nc-internal.h). */
#define TEMPEST_NC_MAX_ENGINES  8

/*
 * One entry of the channel controller's port table (docs/chan.rst): the
 * paper's state, companion-id and address, and what the device needs
 * beside them.
 */
typedef struct TempestChanPort {
    uint32_t state;             /* TEMPEST_CHAN_ST_* */
    uint32_t comp;              /* companion id, or TEMPEST_CHAN_NONE */
    uint32_t closed;            /* the companion was freed */
    uint32_t presend;           /* a pre-send is out (not ended) */
    uint32_t presend_done;      /* ... and its ACK/NACK is in */
    uint32_t out_status;        /* ... with this status */
    uint32_t out_len;           /* the pre-sent data */
    uint32_t held_len;          /* BUFFERFULL: bytes at buf */
    uint32_t incoming;          /* a long DATA is being stored at buf */
    uint32_t in_len;            /* ... of this length */
    uint32_t go;                /* our long pre-send's transfer started */
    uint32_t tx;                /* pre-sends sent (DATA numbers) */
    uint32_t rx;                /* DATA taken (input or refused) */
    uint64_t out_addr;
    uint64_t buf;               /* address: where the next data goes */
    uint64_t bufsize;
    uint64_t next;              /* INPUTTING: the buffer after this one */
    uint64_t nextsize;
    /* Ports over ports (3.2): */
    uint32_t out_port;          /* the pre-send is the port at cargo */
    uint32_t cargo;             /* ... its index */
    uint32_t via;               /* MIGRATING: the index of t_o */
    uint32_t in_port;           /* INPUTTING: a port is input */
    uint32_t held_port;         /* BUFFERFULL: a port is held, ... */
    uint32_t held_origin;       /* ... the port sent (at its origin) */
    uint32_t held_comp;         /* ... its companion */
    uint32_t held_tx;           /* ... its counters */
    uint32_t held_rx;
    uint32_t result;            /* CONFIRMING: the new port */
    /* READY (docs/chan.rst, "A long DATA"): */
    uint32_t granted;           /* buf offered for DATA rx+1 (IDLE or
                                 * INPUTTING) */
    uint32_t waiting;           /* DATA rx+1 (in_len bytes) too long for
                                 * buf waits at the sender (IDLE) */
    uint32_t last_long;         /* the last DATA taken was long */
    uint32_t ready;             /* the companion's buffer is offered ... */
    uint32_t ready_comp;        /* ... by this companion */
    uint32_t ready_num;         /* ... for our DATA of this number */
    uint64_t ready_addr;        /* ... there, of this size */
    uint64_t ready_size;
    /* The offer withdrawn; INPUT_HERE that keeps the port's buffer: */
    uint32_t withdrawing;       /* WITHDRAW of the offer sent, unanswered */
    uint32_t here;              /* INPUTTING: the data goes on to ... */
    uint64_t here_addr;         /* ... this buffer (copied before ACK) */
    uint64_t here_size;
    /* OUTPUT_INPUT (1.16): the INPUT to start when the output is done */
    uint32_t then_in;           /* OUTPUTTING: an INPUT follows */
    uint32_t then_reason;       /* ... refused then: why (the event's C) */
    uint64_t then_addr;         /* ... its next buffer */
    uint64_t then_size;
} TempestChanPort;

/*
 * One entry of the channel controller's flight recorder (docs/chan.rst,
 * "When a node fails"): a command, a frame sent or taken, a frame
 * dropped, an offer's step or an event posted to the guest.
 */
#define TEMPEST_CHAN_REC 256
typedef struct TempestChanRec {
    int64_t ticks;              /* cpu_get_host_ticks() */
    const char *what;           /* a static string */
    uint32_t a, b, c, d;
    uint64_t e;
} TempestChanRec;

/* One vCPU's command bank (FLASH's initiation protocol). */
typedef struct TempestCmdBank {
    uint64_t arg[TEMPEST_NC_CMD_NUM_ARGS];
    uint32_t op;
    uint32_t reason;
    uint64_t result;
    bool tag_busy;          /* an exclusive tag change is pending */
    uint32_t fop_state;     /* FOP_* */
    uint32_t fop_id;
    uint32_t fop_home;
    uint32_t fop_reason;
    uint64_t fop_value;
} TempestCmdBank;

/* An engine's handler of one command op: TEMPEST_CMD_SUCCESS, RETRY, FAIL. */
typedef uint32_t TempestNCCommandFn(TempestNCState *s, TempestCmdBank *b);

typedef struct TempestTimer {
    uint32_t armed;
    uint32_t id;
    uint64_t deadline_ns;   /* QEMU_CLOCK_VIRTUAL */
    uint64_t order;         /* arm order, to keep equal deadlines in order */
    uint64_t a, b;
} TempestTimer;

/* A packet waiting for room in the RQ (it holds its sender's credit). */
typedef struct TempestInPacket {
    QTAILQ_ENTRY(TempestInPacket) next;
    uint32_t src;
    uint32_t net;
    uint32_t seq;
    uint32_t len;           /* header + payload, <= TEMPEST_PKT_MAX_SIZE */
    uint8_t *data;          /* len bytes of its own */
} TempestInPacket;

/* A control event waiting for room in the CQ. */
typedef struct TempestEvent {
    QTAILQ_ENTRY(TempestEvent) next;
    uint32_t type;
    uint32_t node;
    uint64_t a, b, c;
} TempestEvent;

/* One collective as this node sees it (contributions of its subtree). */
#define TEMPEST_COLL_ROUNDS 4
typedef struct TempestCollRound {
    bool used;
    bool started;           /* this node's own contribution is in */
    bool sent;              /* the subtree's contributions went up */
    bool have_header;
    uint32_t seq;
    uint8_t kind, fn, variant;
    uint16_t lanes;
    uint16_t error;
    uint32_t count;         /* entries gathered */
    uint32_t children_in;   /* children that reported */
    uint32_t children_shm;  /* ... whose subtree has the shared area */
    GByteArray *entries;    /* count entries of 'lanes' lanes each */
    unsigned long *nodes_in;    /* nodes whose entry is in 'entries' */
    unsigned long *children;    /* children that reported */
} TempestCollRound;

typedef struct TempestBcast {
    QSIMPLEQ_ENTRY(TempestBcast) next;
    uint32_t src;
    uint64_t value;
} TempestBcast;

struct TempestNCState {
    /*< private >*/
    SysBusDevice parent_obj;

    /*< public >*/
    MemoryRegion iomem;
    MemoryRegion wait_iomem;    /* the wait window (1.21), inside iomem */
    qemu_irq irq;

    /* Properties */
    uint32_t node_id;
    uint32_t num_nodes;
    uint32_t num_cpus;
    uint64_t ram_base;
    uint64_t ram_size;
    char *cmdline;
    char *fabric_spec;
    char *fabric_key;       /* id of a secret object: the cluster's key */
    char *fabric_shm;       /* tcp: addresses: "auto" or "off" */
    char *fabric_host_id;
    char *fabric_shm_dir;
    TempestFabric *fabric_backend;  /* link: a fabric made with -object */
    MemoryRegion *dma_mr;           /* link "memory": what DMA sees */
    MemoryRegion *ram_mr;           /* link "ram": the guest's RAM */
    uint64_t cluster_id;
    uint32_t credits;
    uint32_t hold_ms;           /* "hold-ms": a packet waits for room (0: not) */
    uint32_t fabric_timeout_ms;
    uint32_t spin_us;               /* "spin-us": the SPIN_US hint */
    uint32_t sleep_yield_us;        /* "sleep-yield-us": CPUIdleSleep's */
    bool poll_hint_on;              /* "poll-hint": POLL_HINT offered */
    bool chan_on;                   /* "chan": FEATURES offers CHAN */
    uint32_t coll_fanout;
    uint64_t tagmem_size;

    /* Guest-visible state */
    uint32_t err_status;
    uint32_t err_info;
    uint32_t err_count;
    uint32_t scratch;
    uint32_t irq_status;
    uint32_t irq_enable;
    uint32_t peers_down;
    uint32_t dropped;
    uint32_t tx_packets;
    uint32_t rx_packets;
    uint32_t send_errors;
    uint32_t tx_stalls;
    TempestRing ring[TEMPEST_NUM_RINGS];
    TempestCmdBank bank[TEMPEST_MAX_CPUS];
    TempestTimer timer[TEMPEST_NC_MAX_TIMERS];
    uint64_t timer_order;
    uint32_t timer_gen;

    /* Device-side queues (bounded: see tempest-nc-msg.c) */
    QTAILQ_HEAD(, TempestInPacket) inq[2];
    QTAILQ_HEAD(, TempestEvent) evq;
    uint32_t evq_len;
    int32_t sq_wait[2];     /* node an SQ waits for credit from, or -1 */
    /* An SQ held for room in a reader's RQ: look again then (msg_sq_hold) */
    QEMUTimer *sq_hold_timer;   /* QEMU_CLOCK_REALTIME */
    int64_t sq_hold_ns;         /* its interval now, 0 after a send */
    int64_t sq_hold_since[2];   /* when each SQ's hold began, or 0 */
    /* An SQ out of credit looks at it again now and then (msg_sq_stall) */
    QEMUTimer *sq_credit_timer; /* QEMU_CLOCK_REALTIME */
    bool sq_wait_credit[2];     /* sq_wait is for credit (not a hold) */
    uint32_t credit_found;      /* credit the timer found before a wake */
    uint32_t credit_look_ms;    /* property credit-look-ms: 0, no timer */
    unsigned long *hold_off;    /* peers a hold gave up on (bit a node) */
    VMChangeStateEntry *msg_vmse;   /* a hold looks again on resume */
    bool rq_hold;           /* migration: queue arriving packets only */

    /* Control network (tempest-nc-coll.c) */
    uint32_t coll_status;
    uint32_t coll_error;
    uint32_t coll_seq_done;
    uint64_t coll_result;
    bool coll_vector;       /* results go to coll_dest */
    uint64_t coll_dest;
    uint8_t coll_kind, coll_fn, coll_variant;   /* our pending collective */
    uint16_t coll_lanes;
    TempestCollRound coll_round[TEMPEST_COLL_ROUNDS];
    bool coll_restored;     /* loaded rounds go up when the VM runs */
    VMChangeStateEntry *coll_vmse;
    /* Combining in the fabric's shared area (tempest-nc-coll-shm.c) */
    bool coll_shm;          /* collectives from coll_shm_base on go there */
    uint32_t coll_shm_base;
    bool coll_shm_pending;  /* our pending collective is one of them */
    uint32_t coll_shm_seg;  /* ... and our contribution to it */
    uint64_t coll_shm_vals[TEMPEST_COLL_MAX_LANES];
    uint32_t coll_shm_count;    /* COLL_SHARED: collectives combined there */
    uint32_t coll_shm_slept;    /* COLL_SLEPT (1.17) */
    uint32_t coll_shm_woken;    /* COLL_WOKEN (1.17) */
    uint32_t coll_shm_waited;   /* COLL_WAITED (1.21) */
    uint32_t bcast_waited;      /* BCAST_WAITED (1.22) */
    uint32_t rx_peers;          /* RX_DIRECT (1.18) */
    uint32_t tx_direct;         /* TX_DIRECT (1.18) */
    uint32_t rx_woken;          /* RX_WOKEN (1.19) */
    struct TempestCollWaiter *coll_waiter;
    /*
     * The vCPU that started the pending collective (it may sleep on its
     * DONE itself, target-patches/0013), and the one that does.
     */
    CPUState *coll_cpu;
    CPUState *coll_watcher;
    CPUIdleSleep coll_idle;     /* what its vCPUs' idle_sleep points to */
    CPUState *rq_watcher;       /* the vCPU asleep on the RQ's tail */
    /*
     * Set by tempest-nc-msg.c: that sleep (CPUIdleSleep's prepare and
     * woken), asked by tempest-nc-coll-shm.c when no collective of the
     * vCPU's own is pending.
     */
    int (*rq_idle_prepare)(TempestNCState *s, CPUState *cpu, uint32_t **word,
                           uint32_t *val);
    void (*rq_idle_woken)(TempestNCState *s, CPUState *cpu);
    uint8_t *coll_watch_area;   /* ... in this area */
    uint32_t coll_watch_round;
    bool coll_watch_sleeps;     /* ... counted in SLEEPERS (not COLL_WAIT) */
    bool coll_wait_quiet;       /* a COLL_WAIT read completes it: no IRQ */
    /* Set by tempest-nc-coll.c: the pending one completed there. */
    void (*coll_shm_done)(TempestNCState *s, uint32_t error,
                          const uint64_t *out, unsigned nout);
    /* ... and reads the broadcast ring (tempest-nc-coll.c's look). */
    void (*bcast_look)(TempestNCState *s);
    QSIMPLEQ_HEAD(, TempestBcast) bcastq;
    uint32_t bcast_len;
    bool bcast_pending;
    bool bcast_cmd_quiet;       /* a BCAST command sends it at once: no IRQ */
    uint32_t bcast_sent;
    uint32_t bcast_lost;
    uint32_t bcast_src;
    uint64_t bcast_value;
    /* Broadcast flow control: the root sends a word only while every
     * node has room for it (tempest-nc-coll.c). */
    uint64_t bcast_seen;        /* words that passed this node (own too) */
    uint64_t bcast_taken;       /* of those, popped by the guest or own */
    uint64_t bcast_reported;    /* the subtree's taken, last sent up */
    uint64_t *bcast_child;      /* per child node: its subtree's taken */
    uint64_t bcast_issued;      /* root: words sent down */
    QSIMPLEQ_HEAD(, TempestBcast) bcast_held;   /* root: waiting for room */
    bool *bcast_holding;        /* root: per node, a word of it held */
    /*
     * While coll_shm: the broadcast ring in the combining area (node 0
     * writes every word there, the others read it: tempest-nc-coll-shm.c)
     * instead of the tree's BCAST_DOWN frames.
     */
    uint64_t bcast_ring_next;   /* the next word to read from it */
    /*
     * (1.24) A writer's last look at the words every node has taken
     * (their least, mod 2^32; valid once looked at): no look at every
     * node's line again while it leaves room.
     */
    uint32_t bcast_room_least;
    bool bcast_room_valid;
    uint32_t bcast_shared;      /* BCAST_SHARED: words read from it */
    uint32_t bcast_written;     /* BCAST_WRITTEN (1.24): words we wrote */
    unsigned bcast_watch;       /* vCPUs asleep on its B_COUNT (BWATCH) */
    unsigned bcast_watch_sleeps; /* ... of them in its futex (1.24) */
    uint8_t *bcast_watch_area;  /* ... of this area */
    /*
     * The vCPUs (bit cpu_index) whose halted sleep began one of those
     * watches (bring_idle_also): only their woken() ends one, so that a
     * sleep that began none cannot end another vCPU's.
     */
    uint64_t bcast_watch_cpus;
    uint32_t aor_set;
    uint32_t aor_global;
    int aor_count;          /* root: nodes whose bit is set */
    bool *aor_bits;         /* root: every node's bit */

    /* Tagged memory (tempest-nc-tags.c) */
    MemoryRegion tagmem;
    MemoryRegion tagmem_unchecked;  /* the same host memory, unchecked */
    void *tagmem_host;          /* the regions exist (first realize) */
    uint32_t tag_blocks;
    uint8_t *tags;              /* one TEMPEST_TAG_* per block */
    uint16_t *tag_restricted;   /* per page: blocks not Writable */
    uint32_t tag_faults;
    uint32_t tag_flushes;

    /* Channel controller (tempest-nc-chan.c) */
    TempestChanPort chan_port[TEMPEST_CHAN_PORTS];
    uint32_t chan_used;         /* ports not EMPTY */
    uint64_t poll_hint;         /* POLL_HINT: the word's address, or 0 */
    uint32_t chan_next;         /* where the next ALLOC starts looking */
    uint32_t chan_dropped;      /* bad or stale CHAN frames */
    uint32_t chan_moves;        /* ports moved away (stage 4 here) */
    uint32_t chan_forwards;     /* FWD sent (stage 5) */
    uint32_t chan_resent;       /* pre-sends sent again (stage 3) */
    uint32_t chan_migdrops;     /* DATA/PORTDATA dropped: port MIGRATING */
    /* The last channel happenings, printed if the node fails (not saved) */
    TempestChanRec chan_rec[TEMPEST_CHAN_REC];
    uint32_t chan_rec_next;     /* entries written (mod TEMPEST_CHAN_REC) */
    int64_t chan_rec_ns0;       /* the clock and the ticks at realize */
    int64_t chan_rec_ticks0;
    Notifier chan_shutdown;
    Notifier dump_shutdown;     /* tempest-nc-dump.c */
    const char *last_drop;      /* why the last frame was dropped, or NULL */
    int last_drop_peer;
    uint32_t exit_status;       /* the guest's EXIT, as written */

    /* Transfer engine (tempest-nc-xfer.c) */
    QTAILQ_HEAD(, TempestXferOut) xfer_out;     /* MAGIC's software queue */
    QTAILQ_HEAD(, TempestXferBuf) xfer_bufs;    /* posted receive buffers */
    GHashTable *xfer_in;                        /* (src, mid) -> XferIn */
    QTAILQ_HEAD(, TempestXferIn) xfer_in_mig;   /* xfer_in, while saved */
    QTAILQ_HEAD(, TempestXferIn) xfer_parked;   /* stored in system space */
    uint64_t xfer_sys_max;      /* system space, bytes (property) */
    uint64_t xfer_sys_used;     /* taken by messages, stored or arriving */
    uint32_t xfer_nparked;
    uint32_t *xfer_in_count;    /* per source: messages being received */
    uint32_t *xfer_in_chan_count;   /* ... of them the channels' */
    QEMUBH *xfer_bh;
    VMChangeStateEntry *xfer_vmse;              /* pauses it while stopped */
    uint32_t xfer_active;
    uint32_t xfer_chan_active;  /* of those, the channel controller's */
    /* Set by the channel controller: its transfers' ends. */
    void (*xfer_chan_sent)(TempestNCState *s, uint64_t cookie,
                           uint32_t status);
    void (*xfer_chan_recv)(TempestNCState *s, uint32_t src, uint64_t addr,
                           uint64_t len, uint64_t cookie);
    /* ... and whether a port here waits for that transfer (a split). */
    bool (*xfer_chan_awaited)(TempestNCState *s, uint32_t src,
                              uint64_t addr, uint64_t len, uint64_t cookie);
    uint32_t xfer_nbufs;
    uint32_t xfer_waiting;
    uint32_t xfer_fop_shared;   /* fetch-and-ops done on a home's mapped RAM */
    uint64_t xfer_put_bytes;    /* sent straight into a peer's mapped RAM */
    uint64_t xfer_pull_bytes;   /* copied here from a peer's mapped RAM */
    uint32_t xfer_next_mid;
    uint32_t xfer_next_fop;
    uint64_t xfer_sent_bytes;
    uint64_t xfer_recv_bytes;

    /* Derived at realize (tempest-nc-core.c unless said) */
    uint32_t cmdline_len;           /* tempest-nc.c */
    AddressSpace *dma_as;           /* over dma_mr; freed through RCU */
    TempestNCCommandFn *cmd[TEMPEST_NC_NUM_OPS];    /* registered by engines */
    const TempestNCHooks *hooks[TEMPEST_NC_MAX_ENGINES];
    unsigned nhooks;
    TempestFabricOps fabric_ops;    /* the engines' callbacks, composed */
    TempestFabric *fabric;
    QEMUTimer *tick_timer;      /* QEMU_CLOCK_VIRTUAL: the next timer */
    QEMUTimer *retry_timer;     /* QEMU_CLOCK_REALTIME: RQ/CQ was full */
    bool retry_due;             /* it fired while stopped: again at cont */
    VMChangeStateEntry *core_vmse;  /* a retry due runs on resume */
    QEMUBH *sq_bh;              /* credit came back: run the send rings */
    /*
     * A send slot being read (TEMPEST_PKT_MAX_SIZE): on the heap, not the
     * stack, where the build's -ftrivial-auto-var-init=zero cleared its
     * 8 KiB for every slot looked at.
     */
    uint8_t *tx_pkt;
    /*
     * Each send ring's guest RAM, mapped once (tempest-nc-msg.c,
     * msg_sq_cache): sq_cache_len 0 until the ring is read, and again
     * when its place changes.
     */
    MemoryRegionCache sq_cache[2];
    uint64_t sq_cache_base[2];
    uint64_t sq_cache_len[2];
    Error *migration_blocker;   /* tempest-nc-ckpt.c */

    /* Whole-cluster checkpoint (tempest-nc-ckpt.c, docs/checkpoint.rst) */
    bool ckpt_mode;             /* "checkpoint": saving allowed, VM stopped */
    bool ckpt_loaded;           /* the state being loaded is a checkpoint's */
    uint64_t ckpt_id;           /* "ckpt-id": which checkpoint */
    uint32_t ckpt_len;          /* ckpt_blob's bytes, while saved or loaded */
    uint8_t *ckpt_blob;         /* the fabric's and control network's state */
    VMChangeStateEntry *ckpt_vmse;  /* leaves checkpoint mode on resume */
};

#endif /* HW_TEMPEST_TEMPEST_NC_H */
