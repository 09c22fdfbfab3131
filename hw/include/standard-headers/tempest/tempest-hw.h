/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guest-visible contract of the tempest machine: its memory map and
 * the register map of its node controller.
 *
 * This is the ONE definition, included by the QEMU device and board
 * (hw/tempest), by the guest runtime and libraries (guest/), and by the
 * tests.  It depends on nothing: no QEMU, no libc.  docs/node-controller.rst
 * describes the same interface in prose; a change to one is a change to
 * the other.
 */
#ifndef TEMPEST_HW_H
#define TEMPEST_HW_H

/* ------------------------------------------------------------------ */
/* Machine memory map (guest physical addresses)                       */
/* ------------------------------------------------------------------ */
#define TEMPEST_GIC_DIST_BASE       0x08000000ULL
#define TEMPEST_GIC_DIST_SIZE       0x00010000ULL
#define TEMPEST_GIC_REDIST_BASE     0x080A0000ULL
#define TEMPEST_GIC_REDIST_SIZE     0x00100000ULL   /* 8 CPUs x 128 KiB */
#define TEMPEST_UART_BASE           0x09000000ULL
#define TEMPEST_UART_SIZE           0x00001000ULL
#define TEMPEST_NC_BASE             0x0A000000ULL
#define TEMPEST_NC_SIZE             0x00010000ULL
/* virtio-mmio transports for a Linux node's NIC and shared directory */
#define TEMPEST_VIRTIO_BASE         0x0B000000ULL
#define TEMPEST_VIRTIO_SIZE         0x00000200ULL   /* per transport */
#define TEMPEST_VIRTIO_COUNT        8
#define TEMPEST_RAM_BASE            0x40000000ULL
#define TEMPEST_RAM_MAX             (16ULL << 30)   /* 16 GiB */

/*
 * Tagged memory (version 1.3): the page frames of the Tempest user-managed
 * segment.  Every TEMPEST_TAG_BLK_SIZE block carries an access tag that
 * the CPUs' loads and stores are checked against (Tempest Table 1); a
 * conflicting access is a synchronous external abort (DFSC 0x10) with FAR
 * inside the conflicting block.  The same frames appear a second time at
 * TEMPEST_TAGMEM_ALIAS, never checked: for the library and for DMA.
 * Size: machine property tagmem (TAGMEM_SIZE register; 0 = none).
 */
#define TEMPEST_TAGMEM_BASE         0x1000000000ULL  /* 64 GiB */
#define TEMPEST_TAGMEM_ALIAS        0x2000000000ULL  /* 128 GiB */
#define TEMPEST_TAGMEM_MAX          (4ULL << 30)

/*
 * User memory (version 1.6, Linux nodes): with the machine property
 * usermem, this region, not RAM, is the memory the node controller reads
 * and writes (its RAM_BASE and RAM_SIZE registers say so).  The kernel of
 * a Linux node never uses it; a process maps it at VA == PA through the
 * driver (/dev/tempest0), so the addresses it gives the node controller
 * are its own pointers, as on a bare-metal node.  Below 2 GiB, so that
 * a code address fits the int of Tempest's page fault handler.
 */
#define TEMPEST_USERMEM_BASE        0x10000000ULL    /* 256 MiB */
#define TEMPEST_USERMEM_MIN         (2ULL << 20)     /* and granule */
#define TEMPEST_USERMEM_MAX         (768ULL << 20)   /* up to RAM */

/* Shared peripheral interrupts (GIC INTID = 32 + SPI number) */
#define TEMPEST_UART_SPI            1
#define TEMPEST_NC_SPI              2
#define TEMPEST_VIRTIO_SPI          16  /* transport i: SPI 16 + i */

#define TEMPEST_MAX_CPUS            8
#define TEMPEST_MAX_NODES           1024

/*
 * The bare-metal runtime loads a program at this address; the device tree
 * lives at TEMPEST_RAM_BASE, below it.
 */
#define TEMPEST_LOAD_ADDR           (TEMPEST_RAM_BASE + 0x80000ULL)

/*
 * The Tempest user-managed virtual segment (Tempest spec 3.1): the same
 * virtual range on every node, never identity-mapped by the runtime.
 */
#define TEMPEST_SEGMENT_BASE        0x4000000000ULL  /* 256 GiB */
#define TEMPEST_SEGMENT_SIZE        (4ULL << 30)     /* 4 GiB */
#define TEMPEST_PAGE_SHIFT          12
#define TEMPEST_TAG_BLK_SHIFT       6                /* 64-byte blocks */

/* ------------------------------------------------------------------ */
/* Node controller registers (offsets from TEMPEST_NC_BASE)            */
/*                                                                     */
/* All registers are 32 bits wide and take aligned 4-byte accesses; an */
/* aligned 8-byte access reads or writes the pair at offset, offset+4. */
/* Any other size or alignment, and any offset not listed, is a guest  */
/* error: it is logged, reads as 0, writes are ignored, and ERR_STATUS */
/* records it.                                                         */
/* ------------------------------------------------------------------ */

/* Identity and capability (read-only) */
#define TEMPEST_NC_MAGIC            0x000   /* TEMPEST_NC_MAGIC_VALUE */
#define TEMPEST_NC_VERSION          0x004   /* major << 16 | minor */
#define TEMPEST_NC_NODE_ID          0x008   /* this node, 0..NUM_NODES-1 */
#define TEMPEST_NC_NUM_NODES        0x00C   /* nodes in the cluster */
#define TEMPEST_NC_PAGE_SIZE        0x010   /* bytes */
#define TEMPEST_NC_TAG_BLK_SIZE     0x014   /* bytes per access-tag block */
#define TEMPEST_NC_FEATURES         0x018   /* TEMPEST_NC_FEAT_* bits */
#define TEMPEST_NC_NUM_CPUS         0x01C   /* vCPUs of this node */
#define TEMPEST_NC_RAM_BASE_LO      0x020
#define TEMPEST_NC_RAM_BASE_HI      0x024
#define TEMPEST_NC_RAM_SIZE_LO      0x028
#define TEMPEST_NC_RAM_SIZE_HI      0x02C
#define TEMPEST_NC_CMDLINE_LEN      0x030   /* bytes in the CMDLINE window */
#define TEMPEST_NC_SPIN_US          0x034   /* (1.5) how long to poll: hint */

/* Status */
#define TEMPEST_NC_ERR_STATUS       0x040   /* last error; write clears */
#define TEMPEST_NC_ERR_INFO         0x044   /* offset of the last error */
#define TEMPEST_NC_ERR_COUNT        0x048   /* errors since reset */
#define TEMPEST_NC_SCRATCH          0x04C   /* read/write, 0 at reset */

/* Fabric (version 1.1) */
#define TEMPEST_NC_FABRIC_STATE     0x050   /* TEMPEST_FABRIC_* */
#define TEMPEST_NC_PEERS_UP         0x054   /* peers connected now */
#define TEMPEST_NC_PEERS_DOWN       0x058   /* peers lost since ready */
#define TEMPEST_NC_DROPPED          0x05C   /* bad frames from peers */
#define TEMPEST_NC_TICKS_LO         0x060   /* virtual time in ticks (1 us) */
#define TEMPEST_NC_TICKS_HI         0x064

/* Interrupt: level, (IRQ_STATUS & IRQ_ENABLE) != 0 */
#define TEMPEST_NC_IRQ_STATUS       0x068   /* TEMPEST_NC_IRQ_* pending */
#define TEMPEST_NC_IRQ_ENABLE       0x06C   /* read/write */
#define TEMPEST_NC_IRQ_ACK          0x070   /* write 1s: clear those bits */

/* Control */
#define TEMPEST_NC_EXIT             0x080   /* write: end QEMU, status&0xff */
#define TEMPEST_NC_SQ_DOORBELL      0x084   /* write n: send ring n has work */
#define TEMPEST_NC_RQ_DOORBELL      0x088   /* write any value: slots freed */
#define TEMPEST_NC_POLL             0x08C   /* write 1: polling, 0: not (1.5) */
/* POLL: and the CPU reads its RQ's slots on every turn itself (1.23). */
#define TEMPEST_NC_POLL_PEEKS       0x2
#define TEMPEST_NC_SQ0_HEAD         0x090   /* next slot the device reads */
#define TEMPEST_NC_SQ1_HEAD         0x094
#define TEMPEST_NC_RQ_TAIL          0x098   /* next slot the device writes */
#define TEMPEST_NC_CQ_TAIL          0x09C

/* Statistics since reset (read-only) */
#define TEMPEST_NC_TX_PACKETS       0x0A0   /* packets taken from send rings */
#define TEMPEST_NC_RX_PACKETS       0x0A4   /* packets written to the RQ */
#define TEMPEST_NC_SEND_ERRORS      0x0A8   /* send slots rejected */
#define TEMPEST_NC_TX_STALLS        0x0AC   /* times a send waited for credit */

/* Control network (version 1.2): Strata's CM-5 control network */
#define TEMPEST_NC_COLL_STATUS      0x0B0   /* TEMPEST_COLL_ST_* */
#define TEMPEST_NC_COLL_SEQ         0x0B4   /* collectives completed here */
#define TEMPEST_NC_COLL_RESULT      0x0B8   /* 64-bit: scalar result */
#define TEMPEST_NC_COLL_ERROR       0x0C0   /* TEMPEST_COLL_E_* after ERROR */
#define TEMPEST_NC_COLL_FANOUT      0x0C4   /* the combining tree's fan-out */
#define TEMPEST_NC_BCAST_SENT       0x0C8   /* own broadcasts delivered */
#define TEMPEST_NC_BCAST_AVAIL      0x0CC   /* words waiting here */
/* BCAST_POP read: 1 and the next word latched, or 0 if none waits */
#define TEMPEST_NC_BCAST_POP        0x0D0
#define TEMPEST_NC_BCAST_SRC        0x0D4   /* the latched word's sender */
#define TEMPEST_NC_BCAST_VALUE      0x0D8   /* 64-bit: the latched word */
#define TEMPEST_NC_AOR_SET          0x0E0   /* RW: this node's async OR bit */
#define TEMPEST_NC_AOR_GLOBAL       0x0E4   /* RO: OR of every node's bit */
#define TEMPEST_NC_BCAST_LOST       0x0E8   /* words dropped: FIFO full */
/* (1.12) collectives combined in the shared area (shared memory) */
#define TEMPEST_NC_COLL_SHARED      0x0EC

/* Tagged memory (version 1.3) */
#define TEMPEST_NC_TAGMEM_SIZE_LO   0x0F0   /* bytes of tagged memory */
#define TEMPEST_NC_TAGMEM_SIZE_HI   0x0F4
#define TEMPEST_NC_TAG_FAULTS       0x0F8   /* accesses refused by a tag */
#define TEMPEST_NC_TAG_FLUSHES      0x0FC   /* exclusive downgrades done */

/*
 * Command bank (version 1.1), after FLASH's initiation protocol: write the
 * arguments and the operation, then READ CMD_COMMIT, which executes the
 * command and answers TEMPEST_CMD_SUCCESS, _RETRY (out of resources now:
 * try again) or _FAIL (the description is invalid: CMD_REASON says why).
 * Nothing happens before that read.  Every vCPU has its own bank at the
 * same offsets (qtest uses bank 0), so CPUs never see each other's
 * half-written commands.  Arguments are 64-bit (two 32-bit halves).
 */
#define TEMPEST_NC_CMD_ARG(n)       (0x100 + 8 * (n))   /* n = 0..5 */
#define TEMPEST_NC_CMD_NUM_ARGS     6
#define TEMPEST_NC_CMD_OP           0x130   /* TEMPEST_CMD_* */
#define TEMPEST_NC_CMD_COMMIT       0x134   /* read: execute, status */
#define TEMPEST_NC_CMD_REASON       0x138   /* TEMPEST_CMD_E_* after FAIL */
#define TEMPEST_NC_CMD_RESULT       0x140   /* 64-bit result */

/* Transfer engine (version 1.4), statistics since reset */
#define TEMPEST_NC_XFER_ACTIVE      0x180   /* transfers this node sends */
#define TEMPEST_NC_XFER_SENT_LO     0x188   /* bytes sent by transfers */
#define TEMPEST_NC_XFER_SENT_HI     0x18C
#define TEMPEST_NC_XFER_RECV_LO     0x190   /* bytes stored by transfers */
#define TEMPEST_NC_XFER_RECV_HI     0x194
#define TEMPEST_NC_XFER_WAITING     0x198   /* typed messages with no buffer */
#define TEMPEST_NC_FOP_SHARED       0x19C   /* fetch-and-ops on a peer's RAM */
#define TEMPEST_NC_XFER_PUT_LO      0x1A0   /* bytes sent into a peer's RAM */
#define TEMPEST_NC_XFER_PUT_HI      0x1A4
/* (1.6) typed messages held in system space for want of a buffer */
#define TEMPEST_NC_XFER_SYS_USED    0x1A8   /* bytes of system space taken */
#define TEMPEST_NC_XFER_PARKED      0x1AC   /* messages stored there */
/*
 * (1.7) TAG_UPGRADE: one aligned 8-byte write sets the access tag of a
 * run of blocks, when that adds access to every one of them (Invalid to
 * ReadOnly or Writable, ReadOnly to Writable, or no change): the
 * published-at-once half of TEMPEST_CMD_TAG_SET in one device access.
 * A change that would take access away, a range outside tagged memory,
 * or any other access size changes nothing and sets ERR_STATUS
 * (TEMPEST_NC_ERR_TAG_REFUSED, TEMPEST_NC_ERR_BAD_SIZE): use TAG_SET.
 */
#define TEMPEST_NC_TAG_UPGRADE      0x1B0
#define TEMPEST_TAG_UPGRADE(first_blk, nblks, tag) \
    ((uint64_t)(first_blk) | (uint64_t)(nblks) << 32 | (uint64_t)(tag) << 48)
#define TEMPEST_TAG_UPGRADE_MAX     0xFFFF  /* blocks in one write */

/* The channel controller (1.8; MOVES, FWDS, RESENT 1.9), read-only */
#define TEMPEST_NC_CHAN_DROPPED     0x1B8   /* bad or stale CHAN frames */
#define TEMPEST_NC_CHAN_USED        0x1BC   /* ports not EMPTY */
#define TEMPEST_NC_CHAN_MOVES       0x1C0   /* ports moved away (stage 4) */
#define TEMPEST_NC_CHAN_FWDS        0x1C4   /* wire-ups passed on (stage 5) */
#define TEMPEST_NC_CHAN_RESENT      0x1C8   /* pre-sends sent again (3.2) */
/* (1.9) DATA and port data dropped at a MIGRATING port (sent again) */
#define TEMPEST_NC_CHAN_MIGDROPS    0x1CC

/*
 * (1.9) POLL_HINT: one aligned 8-byte write names a 4-byte word of the
 * node's RAM (4-aligned; 0: none) that peers on this host set non-zero
 * when they leave something for a polling node in shared memory; a
 * POLL write clears it before taking what waits.  A polling CPU can so
 * read that word (plain memory) and write POLL only when it is set, or
 * now and then (docs/fabric.rst, "The poll hint").  Everything else that
 * reaches the guest (socket peers, timers, events) is written to the
 * rings without a POLL.  Reads give the word's address, 0 for none; an
 * address outside RAM or not 4-aligned sets ERR_STATUS
 * (TEMPEST_NC_ERR_BAD_VALUE) and the hint off.
 */
#define TEMPEST_NC_POLL_HINT        0x1D0
/*
 * (1.13) bytes of the channel controller's transfers that this node's
 * controller copied from a sender's RAM, mapped here through a
 * shared-memory link: the receiver's half of a copy in halves.
 */
#define TEMPEST_NC_XFER_PULL_LO     0x1D8
#define TEMPEST_NC_XFER_PULL_HI     0x1DC
/*
 * (1.14) CMD_BLOCK: one aligned 8-byte write names a command block in the
 * node's RAM (8-aligned, TEMPEST_CMDB_SIZE bytes) and runs it on the
 * writing vCPU's bank: the device copies NARGS arguments and OP into the
 * bank, executes the command as a read of CMD_COMMIT does, and writes
 * STATUS, REASON and RESULT back into the block, all within that one
 * access (the register sequence of the command bank takes NARGS + 4).
 * NARGS above TEMPEST_NC_CMD_NUM_ARGS: STATUS FAIL, REASON BAD_OP,
 * nothing run.  A block not wholly in RAM or unaligned, or a 4-byte
 * write, sets ERR_STATUS (TEMPEST_NC_ERR_BAD_VALUE, _BAD_SIZE) and
 * touches nothing.  Reads give 0.
 */
#define TEMPEST_NC_CMD_BLOCK        0x1E0
#define TEMPEST_NC_CMD_BLOCK_HI     0x1E4
#define TEMPEST_CMDB_OP             0       /* u32, in: TEMPEST_CMD_* */
#define TEMPEST_CMDB_NARGS          4       /* u32, in: arguments to copy */
#define TEMPEST_CMDB_ARG(n)         (8 + 8 * (n))   /* u64, in; n = 0..5 */
#define TEMPEST_CMDB_STATUS         56      /* u32, out: TEMPEST_CMD_* */
#define TEMPEST_CMDB_REASON         60      /* u32, out: after FAIL */
#define TEMPEST_CMDB_RESULT         64      /* u64, out */
#define TEMPEST_CMDB_SIZE           72
/*
 * (1.15) RQ_COPY, write-only, one aligned 8-byte write: the address of a
 * copy descriptor (TEMPEST_COPY_*, 8-aligned, in RAM).  The device copies
 * LEN bytes (1 to TEMPEST_PKT_MAX_PAYLOAD) from SRC, which must lie inside
 * the RQ, to DST, in RAM outside the RQ, before the write completes, and
 * writes STATUS:
 * 0, or the TEMPEST_NC_ERR_* that refused it (BAD_RANGE; also in
 * ERR_STATUS) with nothing copied.  A descriptor outside RAM: ERR_STATUS
 * BAD_VALUE only.  Any other access: BAD_SIZE.
 */
#define TEMPEST_NC_RQ_COPY          0x1E8
#define TEMPEST_COPY_SRC            0   /* u64 */
#define TEMPEST_COPY_DST            8   /* u64 */
#define TEMPEST_COPY_LEN            16  /* u32 */
#define TEMPEST_COPY_STATUS         20  /* u32, written by the device */
#define TEMPEST_COPY_SIZE           24

/*
 * (1.17) How this node's collectives combined in the shared area ended
 * (docs/strata.rst, "A vCPU that sleeps on DONE"): COLL_SLEPT counts those
 * a halted vCPU waited for on the area's DONE word itself, COLL_WOKEN
 * those whose waiter thread the last to arrive woke through the node's
 * WAKE word.  Read-only.
 */
#define TEMPEST_NC_COLL_SLEPT       0x1F0
#define TEMPEST_NC_COLL_WOKEN       0x1F4

/*
 * (1.18) Packets that went straight from one node controller into the
 * other's RQ slot, both on this host (docs/fabric.rst, "Straight into the
 * receiver's RQ"): RX_DIRECT counts those peers wrote into this node's RQ
 * (RX_PACKETS counts them too), TX_DIRECT those this node wrote into
 * peers' (TX_PACKETS too).  Read-only.
 */
#define TEMPEST_NC_RX_DIRECT        0x1F8
#define TEMPEST_NC_TX_DIRECT        0x1FC

/*
 * (1.19) Sleeps of a halted vCPU on the RQ's tail in the combining area
 * (when the nodes do not spin, SPIN_US 0) that ended with packets a peer
 * wrote straight into the RQ: the writer woke the vCPU's thread itself,
 * with no doorbell (docs/fabric.rst, "A vCPU asleep on its RQ").
 * Read-only.
 */
#define TEMPEST_NC_RX_WOKEN         0x200

/*
 * (1.20) Broadcast words this node took from the combining area's
 * broadcast ring, which replaces the tree once every node combines
 * there (docs/strata.rst, "Broadcasts on shared memory"); 0 on sockets.
 * Until 1.24 node 0 alone wrote the ring, and read none (0 there).
 * Read-only.
 */
#define TEMPEST_NC_BCAST_SHARED     0x204

/*
 * (1.21) Collectives this node's vCPU saw end while it yielded in a
 * COLL_WAIT read (the wait window below).  Read-only.
 */
#define TEMPEST_NC_COLL_WAITED      0x208

/*
 * (1.22) Broadcast words this node popped with a BCAST_WAIT read that
 * waited for them (the wait window below).  Read-only.
 */
#define TEMPEST_NC_BCAST_WAITED     0x20C

/*
 * (1.24) Broadcast words this node wrote into the combining area's ring
 * itself: its own (any node, where before 1.24 each went to node 0
 * first), and on node 0 those of other nodes it held for room
 * (docs/strata.rst, "Every node writes the ring").  0 on sockets.
 * Read-only.
 */
#define TEMPEST_NC_BCAST_WRITTEN    0x210

/* Windows */
#define TEMPEST_NC_CMDLINE          0x1000  /* -append string, NUL padded */
#define TEMPEST_NC_CMDLINE_MAX      0x1000
/*
 * (1.21) The wait window: a page of its own, whose accesses the device
 * takes without the rest of the register file's one-access-at-a-time
 * rule, so that a vCPU may wait in one.  COLL_WAIT (read, 4 bytes): the
 * pending collective's COLL_STATUS, after waiting for it (docs/strata.rst,
 * "Waiting in a register read"): on a cluster that combines on shared
 * memory, with nodes that do not spin (SPIN_US 0) and a SLEEP_YIELD time,
 * a vCPU's read yields its host CPU until the collective ends, a packet
 * or broadcast word comes, an interrupt is raised or that time passes.
 * Elsewhere it reads as COLL_STATUS at once.  A collective the read sees
 * end raises no IRQ_COLL, and a read that returns DONE or ERROR
 * acknowledges IRQ_COLL.  COLL_GO (read, 4 bytes): the start and the wait
 * in one access: it commits the vCPU's command bank as a CMD_COMMIT read
 * does, and if that was a COLL_START that succeeded, reads as COLL_WAIT
 * (a value below TEMPEST_NC_GO_CMD); otherwise nothing waits and the
 * value is TEMPEST_NC_GO_CMD plus the command's status (CMD_REASON says
 * why it failed).  BCAST_WAIT (1.22; read, 4 bytes): BCAST_POP after
 * waiting for a word: where COLL_WAIT would wait (on any node since
 * 1.24, where node 0 wrote the ring alone and did not wait), a vCPU's
 * read with no word to pop yields (or spins) until a word is written
 * into the combining area's ring, a packet comes, an interrupt is
 * raised or that time passes; then it pops as BCAST_POP does (1:
 * BCAST_SRC and BCAST_VALUE hold the word; 0: none); a wait that only
 * a word of the node's own (or a lost one) ended waits again, at most
 * twice.  A read that pops the last word with
 * no broadcast of the node's own in flight acknowledges IRQ_BCAST.
 * Elsewhere it pops at once, with no wait.  Anything else in the window
 * is a guest error.
 */
#define TEMPEST_NC_WAIT             0x2000
#define TEMPEST_NC_WAIT_SIZE        0x1000
#define TEMPEST_NC_COLL_WAIT        (TEMPEST_NC_WAIT + 0x0)
#define TEMPEST_NC_COLL_GO          (TEMPEST_NC_WAIT + 0x4)
#define TEMPEST_NC_BCAST_WAIT       (TEMPEST_NC_WAIT + 0x8)
#define TEMPEST_NC_GO_CMD           0x100

#define TEMPEST_NC_MAGIC_VALUE      0x54504E43U     /* "TPNC" */
#define TEMPEST_NC_VERSION_MAJOR    1
#define TEMPEST_NC_VERSION_MINOR    24
#define TEMPEST_NC_VERSION_VALUE \
    ((TEMPEST_NC_VERSION_MAJOR << 16) | TEMPEST_NC_VERSION_MINOR)

/* TEMPEST_NC_FEATURES bits */
#define TEMPEST_NC_FEAT_EXIT        (1U << 0)   /* EXIT register */
#define TEMPEST_NC_FEAT_CMDLINE     (1U << 1)   /* CMDLINE window */
#define TEMPEST_NC_FEAT_FABRIC      (1U << 2)   /* fabric registers */
#define TEMPEST_NC_FEAT_MSG         (1U << 3)   /* rings and doorbells */
#define TEMPEST_NC_FEAT_TIMER       (1U << 4)   /* TEMPEST_CMD_TIMER_ARM */
#define TEMPEST_NC_FEAT_CMD         (1U << 5)   /* the command bank */
#define TEMPEST_NC_FEAT_COLL        (1U << 6)   /* the control network */
#define TEMPEST_NC_FEAT_TAGS        (1U << 7)   /* tagged memory */
#define TEMPEST_NC_FEAT_XFER        (1U << 8)   /* transfers, fetch-and-op */
#define TEMPEST_NC_FEAT_POLL        (1U << 9)   /* the POLL register */
#define TEMPEST_NC_FEAT_SYSSPACE    (1U << 10)  /* system space, buffer space */
#define TEMPEST_NC_FEAT_TAG_UPGRADE (1U << 11)  /* the TAG_UPGRADE register */
#define TEMPEST_NC_FEAT_CHAN        (1U << 12)  /* (1.8) channel controller */
#define TEMPEST_NC_FEAT_POLL_HINT   (1U << 13)  /* (1.9) POLL_HINT */
#define TEMPEST_NC_FEAT_BIG_SLOTS   (1U << 14)  /* (1.11) packet slot sizes */
#define TEMPEST_NC_FEAT_CMD_BLOCK   (1U << 15)  /* (1.14) CMD_BLOCK */
#define TEMPEST_NC_FEAT_GATHER      (1U << 16)  /* (1.15) gather, RQ_COPY */
#define TEMPEST_NC_FEAT_COLL_WAIT   (1U << 17)  /* (1.21) the wait window */
#define TEMPEST_NC_FEAT_BCAST_WAIT  (1U << 18)  /* (1.22) BCAST_WAIT */
#define TEMPEST_NC_FEAT_POLL_PEEKS  (1U << 19)  /* (1.23) POLL_PEEKS */

/* TEMPEST_NC_FABRIC_STATE values */
#define TEMPEST_FABRIC_CONNECTING   1   /* waiting for the other nodes */
#define TEMPEST_FABRIC_READY        2   /* every node connected (or N = 1) */
#define TEMPEST_FABRIC_FAILED       3   /* could not form the cluster */

/* TEMPEST_NC_IRQ_* bits */
#define TEMPEST_NC_IRQ_RQ           (1U << 0)   /* a message entered the RQ */
#define TEMPEST_NC_IRQ_CQ           (1U << 1)   /* an event entered the CQ */
#define TEMPEST_NC_IRQ_SQ           (1U << 2)   /* a stalled send ring moved */
#define TEMPEST_NC_IRQ_FABRIC       (1U << 3)   /* FABRIC_STATE changed */
#define TEMPEST_NC_IRQ_COLL         (1U << 4)   /* a collective completed */
#define TEMPEST_NC_IRQ_BCAST        (1U << 5)   /* a word came, or ours went */
#define TEMPEST_NC_IRQ_AOR          (1U << 6)   /* AOR_GLOBAL changed */

/* TEMPEST_NC_ERR_STATUS values */
#define TEMPEST_NC_ERR_NONE         0   /* no error since last clear */
#define TEMPEST_NC_ERR_BAD_OFFSET   1   /* no register at that offset */
#define TEMPEST_NC_ERR_BAD_SIZE     2   /* access size or alignment */
#define TEMPEST_NC_ERR_READ_ONLY    3   /* write to a read-only register */
#define TEMPEST_NC_ERR_WRITE_ONLY   4   /* read of a write-only register */
#define TEMPEST_NC_ERR_BAD_DEST     5   /* send to a node not in the cluster */
#define TEMPEST_NC_ERR_BAD_LEN      6   /* send slot length > payload size */
#define TEMPEST_NC_ERR_PEER_DOWN    7   /* send to a node that is gone */
#define TEMPEST_NC_ERR_NO_RING      8   /* doorbell for a ring not set up */
#define TEMPEST_NC_ERR_BAD_VALUE    9   /* doorbell value out of range */
#define TEMPEST_NC_ERR_DMA          10  /* ring memory could not be accessed */
#define TEMPEST_NC_ERR_TAG_REFUSED  11  /* TAG_UPGRADE: no upgrade, or range */
#define TEMPEST_NC_ERR_BAD_RANGE    12  /* (1.15) gather, RQ_COPY range */

/* ------------------------------------------------------------------ */
/* Commands (TEMPEST_NC_CMD_OP)                                        */
/* ------------------------------------------------------------------ */
#define TEMPEST_CMD_SUCCESS         0
#define TEMPEST_CMD_RETRY           1
#define TEMPEST_CMD_FAIL            2

/*
 * ARG0 ring (TEMPEST_RING_*) | slot shift << 8, ARG1 base address, ARG2
 * slots (2^k).  (1.11) The slot shift of SQ0, SQ1 or the RQ: the slot is
 * 1 << shift bytes (TEMPEST_PKT_MIN_SHIFT to TEMPEST_PKT_MAX_SHIFT), so a
 * packet carries up to that minus TEMPEST_PKT_DATA bytes; 0 means
 * TEMPEST_PKT_SIZE.  The CQ takes shift 0 only.
 */
#define TEMPEST_CMD_RING_SETUP      1
#define TEMPEST_RING_SETUP_RING(a0)  ((a0) & 0xFF)
#define TEMPEST_RING_SETUP_SHIFT(a0) (((a0) >> 8) & 0xFF)
/*
 * ARG0 delay in ticks, ARG1 and ARG2 returned in the TIMER event;
 * RESULT: the timer's id.  RETRY while TEMPEST_NC_MAX_TIMERS are armed.
 */
#define TEMPEST_CMD_TIMER_ARM       2

/*
 * ARG0 kind (TEMPEST_COLL_COMBINE or _ALLGATHER); ARG1 fn | variant << 8
 * (COMBINE); ARG2 the value (ARG3 = 0) or the address of ARG3 64-bit lanes
 * (1..TEMPEST_COLL_MAX_LANES); ARG4 where vector or ALLGATHER results go
 * (ALLGATHER: NUM_NODES 64-bit values); ARG5 this node's segment
 * (TEMPEST_SEG_*).  RESULT: the collective's sequence number.  Completion:
 * COLL_STATUS DONE (and IRQ_COLL); a scalar result is in COLL_RESULT.
 * Every node must start the same collectives in the same order.
 */
#define TEMPEST_CMD_COLL_START      3
/*
 * ARG0 the word to broadcast to every other node.  RETRY until the
 * previous broadcast of this node was delivered (BCAST_SENT).
 */
#define TEMPEST_CMD_BCAST           4

/*
 * ARG0 an address in tagged memory (TEMPEST_TAGMEM_BASE + offset), ARG1 a
 * length in bytes (a multiple of the block size, > 0), ARG2 the new tag
 * (TEMPEST_TAG_*) for every block of [ARG0 & ~(block - 1), + ARG1).  A
 * change that reduces access to any block takes effect on every vCPU
 * before the command succeeds: the first COMMIT of such a change answers
 * RETRY while the controller stops the vCPUs; read COMMIT again until it
 * answers SUCCESS (the library spins on it).  RESULT: blocks changed.
 */
#define TEMPEST_CMD_TAG_SET         5
/* ARG0 an address in tagged memory; RESULT: its block's tag. */
#define TEMPEST_CMD_TAG_GET         6

/*
 * The transfer engine, after FLASH's MAGIC (section 3): memory to memory
 * between nodes, cut into cache-line components carrying the message id
 * and an offset, interleaved round-robin with every other transfer and
 * with active messages.  ARG0 the destination node (may be this node);
 * ARG1 the source address (here); ARG2 the length (1..TEMPEST_XFER_MAX,
 * any alignment); ARG3 the destination address there (memory copy), or,
 * with TEMPEST_XFER_TYPED in ARG5, the message type: the receiver's
 * controller puts it in a buffer posted in advance for that type; ARG4 a
 * cookie returned in both completion events.  RESULT: the message id.
 * RETRY while TEMPEST_XFER_MAX_OUT transfers of this node are under way.
 * Completion: XFER_SENT here (the source may be reused and the data is
 * stored there), XFER_RECV there.
 */
#define TEMPEST_CMD_XFER            7
/*
 * ARG0 type, ARG1 address, ARG2 length: a receive buffer for typed
 * transfers of that type (FLASH's bufalloc).  RETRY when the controller
 * holds TEMPEST_XFER_MAX_BUFS posted buffers.
 */
#define TEMPEST_CMD_BUF_POST        8
/*
 * Fetch-and-op at the home node, done by the home node's controller with
 * no guest handler (FLASH 3.6): ARG0 the home node, ARG1 the address there
 * of a 64-bit word (8-byte aligned), ARG2 TEMPEST_FOP_*, ARG3 the operand,
 * ARG4 the value compared (CAS).  The first COMMIT sends the request and
 * answers RETRY; reading COMMIT again answers RETRY until the reply is in,
 * then SUCCESS with the word's old value in RESULT (the waiting read).
 */
#define TEMPEST_CMD_FOP             9
/*
 * (1.8) The channel controller, after "Hardware Migratable Channels"
 * (May, Muller, Sen; docs/chan.rst, "The channel controller"): one
 * command whose ARG0 is the channel instruction, TEMPEST_CHAN_OP_*; ARG1
 * a port of this node (TEMPEST_CHAN_ID: 16-bit node, 16-bit index).
 * Completions that do not happen at the COMMIT come as TEMPEST_EV_CHAN.
 */
#define TEMPEST_CMD_CHAN            10
#define TEMPEST_XFER_TYPED          (1U << 0)   /* ARG5: ARG3 is a type */
#define TEMPEST_XFER_MAX            (1ULL << 30)
#define TEMPEST_XFER_MAX_OUT        64
#define TEMPEST_XFER_MAX_BUFS       1024
#define TEMPEST_XFER_COMPONENT      64          /* bytes, a cache line */
#define TEMPEST_FOP_ADD             0
#define TEMPEST_FOP_SWAP            1
#define TEMPEST_FOP_CAS             2           /* swap if equal */

/*
 * TEMPEST_CMD_CHAN instructions (ARG0).  Every one fails with
 * TEMPEST_CMD_E_BAD_PORT for a port that is not a live port of this
 * node, TEMPEST_CMD_E_PORT_STATE when the port's state forbids it,
 * TEMPEST_CMD_E_BAD_ADDR for a buffer not wholly in the node's RAM.
 * A port's buffer may be offered to its companion for the next data
 * (after a long input; docs/chan.rst, "A long DATA"): BUFFER, FREE and
 * OUTPUT_PORT that would give it up answer TEMPEST_CMD_RETRY until the
 * companion's controller has given the offer back or the data has come.
 *   ALLOC      ARG1 the initial buffer's address, ARG2 its size (0: none).
 *              RESULT: a new IDLE port with no companion.  RETRY never;
 *              TEMPEST_CMD_E_NO_PORTS when the table is full.
 *   CONNECT    ARG1 port, ARG2 its companion's id (on any node; a port of
 *              this node that has no companion either is connected back).
 *              The port must be IDLE with no companion.
 *   FREE       ARG1 port (IDLE or BUFFERFULL, nothing pre-sent; RETRY
 *              while its buffer is offered): EMPTY;
 *              the companion is told (TEMPEST_CHAN_EV_CLOSED there).  A
 *              port holding a port sent to it fails PORT_STATE unless
 *              ARG2 has TEMPEST_CHAN_FREE_HELD: then the sender's move
 *              is abandoned by the FREED (the port stays at the sender).
 *   BUFFER     ARG1 port, ARG2 address, ARG3 size (0: none): the port's
 *              address field, where the next data is stored (RETRY while
 *              the old one is offered).
 *   OUTPUTDATA ARG1 port, ARG2 address, ARG3 length (0 ..
 *              TEMPEST_CHAN_MAX_DATA): the pre-send of section 2.2: the
 *              data is sent now (up to TEMPEST_CHAN_INLINE bytes in the
 *              message; longer, by the transfer engine straight into the
 *              companion's buffer once it has one); the port's state
 *              does not change (3.1).  The data must not change until
 *              the output completes.
 *              One pre-send at a time per port.
 *   OUTPUT     ARG1 port, and, with no OUTPUTDATA before it, ARG2 address
 *              and ARG3 length as for OUTPUTDATA: the port is OUTPUTTING
 *              until the companion inputs.  RESULT 1: already input (done,
 *              no event); 0: TEMPEST_CHAN_EV_OUTPUT comes.
 *   INPUT      ARG1 port, ARG2 the NEXT buffer's address, ARG3 its size:
 *              the paper's input (2.1): this input's data is stored in the
 *              port's buffer, which is swapped with ARG2/ARG3.  RESULT:
 *              bit 32 set, the data was there (BUFFERFULL): bits 31..0 its
 *              length, CMD_ARG... unchanged, no event; clear: INPUTTING
 *              until TEMPEST_CHAN_EV_INPUT (or TEMPEST_CHAN_EV_TOO_BIG:
 *              the data is longer than the buffer and waits at the
 *              sender).  Data waiting at the sender longer than the
 *              port's buffer: TEMPEST_CMD_E_TOO_BIG, RESULT its length.
 *   STATE      ARG1 port: RESULT state (TEMPEST_CHAN_ST_*) | pre-sent (bit
 *              8) | holds a port sent to it (bit 9) | companion id << 32.
 *   OUTPUT_PORT ARG1 the port t to send over, ARG2 the port q sent (the
 *              paper's port output, 3.2 stage 1): q (IDLE or BUFFERFULL,
 *              nothing pre-sent; data held is dropped, its sender sends
 *              it again) becomes MIGRATING, t OUTPUTTING; RETRY while a
 *              long DATA is being stored in q's buffer or q's buffer is
 *              offered.  TEMPEST_CHAN_EV_
 *              OUTPUT on t when q has reached its new place (stage 4;
 *              q is EMPTY then), or B CLOSED if t's companion was freed
 *              (q is IDLE here again).
 *   INPUT_PORT ARG1 the port t, ARG2/ARG3 the initial buffer of the new
 *              port (stage 2): t is CONFIRMING (or INPUTTING until the
 *              port comes) and TEMPEST_CHAN_EV_PORT brings the new port.
 *              A port on which data is held fails TEMPEST_CMD_E_CHAN_TYPE;
 *              a full table TEMPEST_CMD_E_NO_PORTS (the port stays held).
 *   INPUT_HERE ARG1 port, ARG2/ARG3 this input's buffer: as INPUT, but
 *              the data goes to ARG2 and the port's buffer is the next
 *              one (unchanged after the input): as BUFFER ARG2/ARG3 then
 *              INPUT naming the port's old buffer as the next, in one
 *              instruction.  Data in the port's buffer already
 *              (BUFFERFULL) is copied to ARG2 before the ACK: RESULT
 *              PRESENT and the length (longer than ARG3: TOO_BIG, RESULT
 *              the length, it stays held).  Data landing in the port's
 *              buffer (a long DATA under way) or that may land there (the
 *              buffer offered): the port's buffer stays, and the data is
 *              copied to ARG2 before the ACK (the INPUT event's C is
 *              ARG2); landing and longer than ARG3: TOO_BIG at once,
 *              RESULT the length (held once landed); come by the offer
 *              and longer than ARG3: held, TEMPEST_CHAN_EV_TOO_BIG.  Data
 *              waiting at the sender longer than ARG3: the port's buffer
 *              stays, TOO_BIG.  After a TEMPEST_CHAN_EV_TOO_BIG for data
 *              waiting the port's buffer is ARG2.
 *   OUTPUT_INPUT (1.16) ARG1 port, ARG2/ARG3 as OUTPUT's (no OUTPUTDATA
 *              before it), ARG4/ARG5 as INPUT's ARG2/ARG3: OUTPUT, and
 *              when the companion has input the data, INPUT on the same
 *              port at once, with no OUTPUT event between (a ping-pong's
 *              turn: one instruction, one wait).  RESULT 1: the output is
 *              done already (a companion on this node), no input started;
 *              0: TEMPEST_CHAN_EV_INPUT ends it (or what else ends an
 *              INPUT: TOO_BIG, TYPE, CLOSED; the data there already: the
 *              INPUT event at once), or TEMPEST_CHAN_EV_OUTPUT, no input
 *              started, with B why the output failed, or B 0 and C why
 *              the INPUT was refused then (TEMPEST_CMD_E_*).
 */
#define TEMPEST_CHAN_OP_ALLOC       1
#define TEMPEST_CHAN_OP_CONNECT     2
#define TEMPEST_CHAN_OP_FREE        3
#define TEMPEST_CHAN_OP_BUFFER      4
#define TEMPEST_CHAN_OP_OUTPUTDATA  5
#define TEMPEST_CHAN_OP_OUTPUT      6
#define TEMPEST_CHAN_OP_INPUT       7
#define TEMPEST_CHAN_OP_STATE       8
#define TEMPEST_CHAN_OP_OUTPUT_PORT 9           /* (1.9) */
#define TEMPEST_CHAN_OP_INPUT_PORT  10          /* (1.9) */
#define TEMPEST_CHAN_OP_INPUT_HERE  11          /* (1.11) */
#define TEMPEST_CHAN_OP_OUTPUT_INPUT 12         /* (1.16) */

#define TEMPEST_CHAN_PORTS          256         /* the paper's example */
#define TEMPEST_CHAN_MAX_DATA       (1U << 30)  /* an output, at most */
#define TEMPEST_CHAN_INLINE         (64 * 1024) /* longer: transfer engine */
#define TEMPEST_CHAN_ID(node, idx)  (((uint32_t)(node) << 16) | (idx))
#define TEMPEST_CHAN_ID_NODE(id)    ((uint32_t)(id) >> 16)
#define TEMPEST_CHAN_ID_INDEX(id)   ((uint32_t)(id) & 0xFFFFU)
#define TEMPEST_CHAN_NONE           0xFFFFFFFFU /* no companion */
#define TEMPEST_CHAN_PRESENT        (1ULL << 32) /* INPUT RESULT: was there */
#define TEMPEST_CHAN_FREE_HELD      (1U << 0)   /* FREE ARG2: even holding */

/* The paper's seven port states (section 3). */
#define TEMPEST_CHAN_ST_EMPTY       0
#define TEMPEST_CHAN_ST_IDLE        1
#define TEMPEST_CHAN_ST_INPUTTING   2
#define TEMPEST_CHAN_ST_OUTPUTTING  3
#define TEMPEST_CHAN_ST_BUFFERFULL  4
#define TEMPEST_CHAN_ST_MIGRATING   5
#define TEMPEST_CHAN_ST_CONFIRMING  6
#define TEMPEST_CHAN_ST_PRESENT     (1U << 8)   /* STATE: a pre-send is out */
#define TEMPEST_CHAN_ST_HELD_PORT   (1U << 9)   /* STATE: BUFFERFULL, a port */
#define TEMPEST_CHAN_ST_WAITING     (1U << 10)  /* STATE: data waits (1.11) */

/* TEMPEST_NC_CMD_REASON values */
#define TEMPEST_CMD_E_NONE          0
#define TEMPEST_CMD_E_BAD_OP        1   /* no such operation */
#define TEMPEST_CMD_E_BAD_RING      2   /* no such ring */
#define TEMPEST_CMD_E_BAD_ADDR      3   /* not inside the node's RAM */
#define TEMPEST_CMD_E_BAD_ALIGN     4   /* base not aligned to a slot */
#define TEMPEST_CMD_E_BAD_SIZE      5   /* slots not a power of 2 in range */
#define TEMPEST_CMD_E_OVERLAP       6   /* overlaps another ring */
#define TEMPEST_CMD_E_BAD_TICKS     7   /* delay out of range */
#define TEMPEST_CMD_E_BUSY          8   /* a collective is still pending */
/* TEMPEST_CMD_E_BAD_COLL: kind, fn, variant, lanes or segment wrong */
#define TEMPEST_CMD_E_BAD_COLL      9
#define TEMPEST_CMD_E_NO_FABRIC     10  /* the cluster is not formed */
#define TEMPEST_CMD_E_BAD_TAG       11  /* no such tag */
#define TEMPEST_CMD_E_BAD_LEN       12  /* length 0 or not whole blocks */
#define TEMPEST_CMD_E_BAD_NODE      13  /* no such node in the cluster */
#define TEMPEST_CMD_E_PEER_DOWN     14  /* that node is gone */
#define TEMPEST_CMD_E_BAD_FOP       15  /* no such fetch-and-op */
#define TEMPEST_CMD_E_REMOTE        16  /* the other node refused it */
#define TEMPEST_CMD_E_BAD_CHAN_OP   17  /* (1.8) no such channel instruction */
#define TEMPEST_CMD_E_BAD_PORT      18  /* not a live port of this node */
#define TEMPEST_CMD_E_PORT_STATE    19  /* the port's state forbids it */
#define TEMPEST_CMD_E_NO_PORTS      20  /* the port table is full */
#define TEMPEST_CMD_E_CLOSED        21  /* the companion was freed */
#define TEMPEST_CMD_E_TOO_BIG       22  /* longer than the input buffer */
#define TEMPEST_CMD_E_CHAN_TYPE     23  /* data where a port is input or so */

/* Access tags (the Tempest spec's TPPI_BlkAccTag order) */
#define TEMPEST_TAG_BUSY            0   /* loads and stores fault */
#define TEMPEST_TAG_INVALID         1   /* loads and stores fault */
#define TEMPEST_TAG_READONLY        2   /* stores fault */
#define TEMPEST_TAG_WRITABLE        3   /* nothing faults */

/* Collectives */
#define TEMPEST_COLL_COMBINE        1
#define TEMPEST_COLL_ALLGATHER      2
#define TEMPEST_COLL_ADD            0   /* signed add */
#define TEMPEST_COLL_OR             1
#define TEMPEST_COLL_XOR            2
#define TEMPEST_COLL_UADD           3   /* unsigned add */
#define TEMPEST_COLL_MAX            4   /* signed max */
#define TEMPEST_COLL_NUM_FNS        5
#define TEMPEST_COLL_REDUCE         0
#define TEMPEST_COLL_SCAN           1   /* forward, by node number */
#define TEMPEST_COLL_BACKSCAN       2
#define TEMPEST_SEG_NONE            0   /* Strata's NoBoundary */
#define TEMPEST_SEG_ELEMENT         1   /* ElementBoundary */
#define TEMPEST_SEG_ARRAY           2   /* ArrayBoundary */
#define TEMPEST_COLL_MAX_LANES      64
#define TEMPEST_COLL_ST_IDLE        0
#define TEMPEST_COLL_ST_PENDING     1
#define TEMPEST_COLL_ST_DONE        2
#define TEMPEST_COLL_ST_ERROR       3
#define TEMPEST_COLL_E_NONE         0
#define TEMPEST_COLL_E_MISMATCH     1   /* nodes started different ops */
#define TEMPEST_COLL_E_PEER_DOWN    2   /* a node of the tree is gone */
#define TEMPEST_COLL_E_DMA          3   /* result memory not writable */
#define TEMPEST_NC_BCAST_FIFO       4096

#define TEMPEST_NC_MAX_TIMERS       256
#define TEMPEST_TICK_NS             1000        /* a tick is 1 us */
#define TEMPEST_TIMER_MAX_TICKS     (1ULL << 40)

/* ------------------------------------------------------------------ */
/* Rings in guest RAM (after SP Active Messages)                       */
/*                                                                     */
/* SQ0 (request network) and SQ1 (reply network): the guest fills the */
/* slot at its tail, sets its CTL word last (VALID | length), and      */
/* writes the ring number to SQ_DOORBELL.  The device sends slots in   */
/* order until it meets a slot whose CTL has no VALID bit, and frees   */
/* each slot it has taken by writing CTL = 0.  A rejected slot is also */
/* freed, counted in SEND_ERRORS, and reported by a SEND_ERROR event.  */
/*                                                                     */
/* RQ: the device writes each arriving packet into the slot at its     */
/* tail, CTL last (VALID | length), when that slot's CTL is 0; the     */
/* guest handles a slot and frees it by writing CTL = 0 (lazily), then */
/* writes RQ_DOORBELL once it has freed slots.  Packets that find the  */
/* RQ full wait in the device and hold back the sender's credit, so a  */
/* slow receiver throttles its senders.                                */
/*                                                                     */
/* CQ: the same for control events (timers, errors), 32-byte slots.    */
/* ------------------------------------------------------------------ */
#define TEMPEST_RING_SQ0            0
#define TEMPEST_RING_SQ1            1
#define TEMPEST_RING_RQ             2
#define TEMPEST_RING_CQ             3
#define TEMPEST_NUM_RINGS           4
#define TEMPEST_RING_MIN_SLOTS      2
#define TEMPEST_RING_MAX_SLOTS      4096
#define TEMPEST_NET_REQUEST         0
#define TEMPEST_NET_REPLY           1

/* Packet slot (SQ, RQ): 32-byte header, then the payload. */
#define TEMPEST_PKT_SIZE            256
#define TEMPEST_PKT_PAYLOAD         224
/* (1.11) Larger packet slots, chosen per ring at RING_SETUP. */
#define TEMPEST_PKT_MIN_SHIFT       8
#define TEMPEST_PKT_MAX_SHIFT       13
#define TEMPEST_PKT_MAX_SIZE        (1U << TEMPEST_PKT_MAX_SHIFT)
#define TEMPEST_PKT_MAX_PAYLOAD     (TEMPEST_PKT_MAX_SIZE - 32)
#define TEMPEST_PKT_CTL             0   /* u32: VALID | payload length */
#define TEMPEST_PKT_NODE            4   /* u16: SQ destination, RQ source */
#define TEMPEST_PKT_NET             6   /* u8: RQ: the network it came on */
#define TEMPEST_PKT_KIND            7   /* u8: the library's, passed on */
#define TEMPEST_PKT_SEQ             8   /* u32: RQ: per (source, network) */
#define TEMPEST_PKT_WORD0           12  /* u32: the library's, passed on */
#define TEMPEST_PKT_WORD1           16  /* u64: the library's, passed on */
#define TEMPEST_PKT_WORD2           24  /* u64: the library's, passed on */
#define TEMPEST_PKT_DATA            32  /* payload */
#define TEMPEST_PKT_VALID           (1U << 31)
#define TEMPEST_PKT_LEN_MASK        0xFFFFU
/*
 * (1.15) A gather send slot: CTL has GATHER too, and its payload holds
 * descriptors (address, length) of guest RAM whose bytes, in order,
 * make the packet's payload of LEN bytes (up to TEMPEST_PKT_MAX_PAYLOAD,
 * whatever the send slot's size); the device copies them when it takes
 * the slot.
 */
#define TEMPEST_PKT_GATHER          (1U << 30)
#define TEMPEST_GATHER_ADDR         0   /* u64: guest physical address */
#define TEMPEST_GATHER_LEN          8   /* u32: bytes, > 0 */
#define TEMPEST_GATHER_RSVD         12  /* u32: 0 */
#define TEMPEST_GATHER_DESC_SIZE    16
#define TEMPEST_GATHER_MAX_DESC     64

/*
 * XFER_SENT: A the message id, B the cookie, C 0 or why it failed
 *   (TEMPEST_CMD_E_REMOTE: the destination range is not the receiver's
 *   RAM or no buffer of its type is big enough; TEMPEST_CMD_E_PEER_DOWN).
 * XFER_RECV: NODE the sender, A where the data is, B its length (low 31
 *   bits), TEMPEST_EV_XFER_BUF_DONE (typed: the buffer it landed in has
 *   no room left and is no longer posted) and type (high 32 bits, typed
 *   transfers), C the cookie.  (1.6) A typed message lands at the start
 *   of the free space of the oldest buffer of its type with room for it
 *   (64-byte aligned); a buffer stays posted while 64 bytes or more are
 *   left.  Without one, it is stored in the node's system space (machine
 *   property sys-space, default 1 MiB) and its sender completes; it moves
 *   to a buffer, oldest first, when one is posted.  When system space is
 *   full the sender waits for a buffer: never a loss.
 */
#define TEMPEST_EV_XFER_BUF_DONE    (1U << 31)
#define TEMPEST_EV_XFER_SENT        4
#define TEMPEST_EV_XFER_RECV        5

/* Control event slot (CQ). */
#define TEMPEST_EV_SIZE             32
#define TEMPEST_EV_CTL              0   /* u32: VALID | type */
#define TEMPEST_EV_NODE             4   /* u32: the node it concerns */
#define TEMPEST_EV_A                8   /* u64 */
#define TEMPEST_EV_B                16  /* u64 */
#define TEMPEST_EV_C                24  /* u64 */
#define TEMPEST_EV_VALID            (1U << 31)
#define TEMPEST_EV_TYPE_MASK        0xFFU
#define TEMPEST_EV_TIMER            1   /* A, B: ARG1, ARG2 of the arm; C: id */
/* PEER_DOWN: NODE is gone; A 0: it exited with status B; A 1: lost */
#define TEMPEST_EV_PEER_DOWN        2
/* SEND_ERROR: NODE the destination, A the slot, B the ERR code, C ring */
#define TEMPEST_EV_SEND_ERROR       3
/*
 * (1.8) CHAN: NODE this node; A the port id | TEMPEST_CHAN_EV_* << 32;
 *   INPUT: B the length, C the address the data is in (the buffer the
 *   port named; the next one is now the INPUT's ARG2);
 *   OUTPUT: B 0 input by the companion, or TEMPEST_CMD_E_* why not
 *   (TOO_BIG: longer than the companion's buffer; CLOSED);
 *   CLOSED: the companion was freed (an input waiting ends so: B CLOSED).
 *   PORT: an INPUT_PORT ended: B 0 and C the new port (the paper's final
 *   confirmation came), or B NO_PORTS (table full) or CLOSED, or
 *   PEER_DOWN (the sender's node is gone; C the new port, wired up);
 *   TYPE: an INPUT found a port, or an INPUT_PORT data: it is held
 *   (BUFFERFULL), or the data waits at the sender (STATE WAITING), B
 *   TEMPEST_CMD_E_CHAN_TYPE;
 *   TOO_BIG: an INPUT waiting ended: the data is longer than the port's
 *   buffer and waits at the sender (STATE WAITING) for an INPUT or
 *   BUFFER naming one it fits; B TEMPEST_CMD_E_TOO_BIG, C the length.
 */
#define TEMPEST_EV_CHAN             6
#define TEMPEST_CHAN_EV_INPUT       1
#define TEMPEST_CHAN_EV_OUTPUT      2
#define TEMPEST_CHAN_EV_CLOSED      3
#define TEMPEST_CHAN_EV_PORT        4
#define TEMPEST_CHAN_EV_TYPE        5
#define TEMPEST_CHAN_EV_TOO_BIG     6
/* Exit status the runtime uses when a node crashes (exception report) */
#define TEMPEST_EXIT_CRASH          134

#endif /* TEMPEST_HW_H */
