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
#define TEMPEST_RAM_BASE            0x40000000ULL
#define TEMPEST_RAM_MAX             (16ULL << 30)   /* 16 GiB */

/* Shared peripheral interrupts (GIC INTID = 32 + SPI number) */
#define TEMPEST_UART_SPI            1
#define TEMPEST_NC_SPI              2

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

/* Status */
#define TEMPEST_NC_ERR_STATUS       0x040   /* last error; write clears */
#define TEMPEST_NC_ERR_INFO         0x044   /* offset of the last error */
#define TEMPEST_NC_ERR_COUNT        0x048   /* errors since reset */
#define TEMPEST_NC_SCRATCH          0x04C   /* read/write, 0 at reset */

/* Control */
#define TEMPEST_NC_EXIT             0x080   /* write: end QEMU, status&0xff */

/* Windows */
#define TEMPEST_NC_CMDLINE          0x1000  /* -append string, NUL padded */
#define TEMPEST_NC_CMDLINE_MAX      0x1000

#define TEMPEST_NC_MAGIC_VALUE      0x54504E43U     /* "TPNC" */
#define TEMPEST_NC_VERSION_MAJOR    1
#define TEMPEST_NC_VERSION_MINOR    0
#define TEMPEST_NC_VERSION_VALUE \
    ((TEMPEST_NC_VERSION_MAJOR << 16) | TEMPEST_NC_VERSION_MINOR)

/* TEMPEST_NC_FEATURES bits */
#define TEMPEST_NC_FEAT_EXIT        (1U << 0)   /* EXIT register */
#define TEMPEST_NC_FEAT_CMDLINE     (1U << 1)   /* CMDLINE window */

/* TEMPEST_NC_ERR_STATUS values */
#define TEMPEST_NC_ERR_NONE         0   /* no error since last clear */
#define TEMPEST_NC_ERR_BAD_OFFSET   1   /* no register at that offset */
#define TEMPEST_NC_ERR_BAD_SIZE     2   /* access size or alignment */
#define TEMPEST_NC_ERR_READ_ONLY    3   /* write to a read-only register */
#define TEMPEST_NC_ERR_WRITE_ONLY   4   /* read of a write-only register */

/* Exit status the runtime uses when a node crashes (exception report) */
#define TEMPEST_EXIT_CRASH          134

#endif /* TEMPEST_HW_H */
