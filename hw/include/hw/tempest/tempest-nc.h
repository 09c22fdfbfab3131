/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest node controller: the MAGIC-like device of one node of a
 * virtual parallel machine (Stanford FLASH's MAGIC, Wisconsin Tempest).
 *
 * QEMU interface:
 *  + sysbus MMIO region 0: the register file (TEMPEST_NC_SIZE bytes),
 *    laid out as in include/standard-headers/tempest/tempest-hw.h
 *  + sysbus IRQ 0: the node controller interrupt (unused by version 1.0)
 *  + QOM property "node-id": this node's index in its cluster
 *  + QOM property "num-nodes": the number of nodes in the cluster
 *  + QOM property "num-cpus": the number of vCPUs of this node
 *  + QOM property "ram-base", "ram-size": the node's guest RAM
 *  + QOM property "cmdline": the program's command line (-append)
 */
#ifndef HW_TEMPEST_TEMPEST_NC_H
#define HW_TEMPEST_TEMPEST_NC_H

#include "hw/sysbus.h"
#include "qom/object.h"

#define TYPE_TEMPEST_NC "tempest-nc"
OBJECT_DECLARE_SIMPLE_TYPE(TempestNCState, TEMPEST_NC)

struct TempestNCState {
    /*< private >*/
    SysBusDevice parent_obj;

    /*< public >*/
    MemoryRegion iomem;
    qemu_irq irq;

    /* Properties */
    uint32_t node_id;
    uint32_t num_nodes;
    uint32_t num_cpus;
    uint64_t ram_base;
    uint64_t ram_size;
    char *cmdline;

    /* Guest-visible state */
    uint32_t err_status;
    uint32_t err_info;
    uint32_t err_count;
    uint32_t scratch;

    /* Derived at realize */
    uint32_t cmdline_len;
};

#endif /* HW_TEMPEST_TEMPEST_NC_H */
