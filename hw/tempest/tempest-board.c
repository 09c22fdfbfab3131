/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tempest machine: one node of a virtual parallel machine.
 *
 * An aarch64 node with 1 to 8 vCPUs at EL1, a GICv3, a PL011 UART, the
 * generic timer, QEMU's PSCI (HVC conduit) for secondary CPUs, RAM at
 * 0x40000000, the Tempest node controller, and virtio-mmio transports into
 * which a Linux node plugs its NIC and shared directory (-device
 * virtio-net-device, virtio-9p-device; empty transports cost nothing).
 * The memory map is defined in include/standard-headers/tempest/tempest-hw.h
 * and documented in docs/machine.rst.
 *
 * Machine properties:
 *  + node-id: this node's index in its cluster (0 .. num-nodes - 1)
 *  + num-nodes: the number of nodes in the cluster
 *  + fabric: how the nodes reach each other: unix:DIR, tcp:HOST:PORT or
 *    tcp:H0:P0;H1:P1;... (see include/hw/tempest/tempest-fabric.h)
 *  + fabric-shm: auto (default: with tcp: addresses, the nodes of one host
 *    share memory) or off (every link on its TCP socket)
 *  + fabric-host-id, fabric-shm-dir: how a tcp: node finds the nodes of
 *    its host (docs/fabric.rst, "Mixed clusters")
 *  + cluster-id: the cluster's identity (the same on every node)
 *  + credits: packets in flight per peer and logical network (32)
 *  + fabric-timeout: ms to wait for the whole cluster to connect (30000)
 *  + tagmem: bytes of tagged memory for Tempest pages (64 MiB; 0 none)
 *  + usermem: id of a memory backend mapped at TEMPEST_USERMEM_BASE as the
 *    memory the node controller reaches instead of RAM (a Linux node: the
 *    kernel never sees it, its processes map it at VA == PA through the
 *    driver; docs/linux.rst)
 *
 * -kernel loads a bare-metal ELF (entered at EL1, MMU off, x0 = 0) or a
 * Linux kernel Image (with -initrd; docs/linux.rst).  For an ELF the
 * device tree is placed at the base of RAM when the ELF leaves room for
 * it; Linux gets it in x0 as usual.
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/error-report.h"
#include "qemu/units.h"
#include "exec/address-spaces.h"
#include "system/device_tree.h"
#include "system/system.h"
#include "hw/arm/boot.h"
#include "hw/arm/bsa.h"
#include "hw/arm/fdt.h"
#include "hw/boards.h"
#include "hw/char/pl011.h"
#include "hw/intc/arm_gicv3_common.h"
#include "hw/qdev-properties.h"
#include "hw/sysbus.h"
#include "hw/tempest/tempest-nc.h"
#include "hw/virtio/virtio-mmio.h"
#include "system/hostmem.h"
#include "migration/vmstate.h"
#include "qobject/qlist.h"
#include "target/arm/cpu.h"
#include "target/arm/gtimer.h"
#include "standard-headers/tempest/tempest-hw.h"
#include "trace.h"

#include <libfdt.h>

#define TYPE_TEMPEST_MACHINE MACHINE_TYPE_NAME("tempest")
OBJECT_DECLARE_SIMPLE_TYPE(TempestMachineState, TEMPEST_MACHINE)

/* SPIs used by the board; the GIC gets 32 internal interrupts on top. */
#define TEMPEST_NUM_SPIS 64

enum {
    TMAP_GIC_DIST,
    TMAP_GIC_REDIST,
    TMAP_UART,
    TMAP_NC,
    TMAP_VIRTIO,
    TMAP_MEM,
};

static const MemMapEntry tempest_memmap[] = {
    [TMAP_GIC_DIST] =    { TEMPEST_GIC_DIST_BASE, TEMPEST_GIC_DIST_SIZE },
    [TMAP_GIC_REDIST] =  { TEMPEST_GIC_REDIST_BASE,
                              TEMPEST_GIC_REDIST_SIZE },
    [TMAP_UART] =        { TEMPEST_UART_BASE, TEMPEST_UART_SIZE },
    [TMAP_NC] =          { TEMPEST_NC_BASE, TEMPEST_NC_SIZE },
    [TMAP_VIRTIO] =      { TEMPEST_VIRTIO_BASE, TEMPEST_VIRTIO_SIZE },
    [TMAP_MEM] =         { TEMPEST_RAM_BASE, TEMPEST_RAM_MAX },
};

static const int tempest_irqmap[] = {
    [TMAP_UART] = TEMPEST_UART_SPI,
    [TMAP_NC] = TEMPEST_NC_SPI,
    [TMAP_VIRTIO] = TEMPEST_VIRTIO_SPI,
};

struct TempestMachineState {
    MachineState parent_obj;

    struct arm_boot_info bootinfo;
    DeviceState *gic;
    TempestNCState nc;
    void *fdt;
    int fdt_size;
    uint32_t gic_phandle;
    uint32_t clock_phandle;

    /* Properties */
    uint32_t node_id;
    uint32_t num_nodes;
    char *fabric;
    char *fabric_key;
    char *fabric_backend;
    char *fabric_shm;
    char *fabric_host_id;
    char *fabric_shm_dir;
    uint64_t cluster_id;
    uint32_t credits;
    uint32_t fabric_timeout;
    uint32_t spin_us;
    uint32_t sleep_yield_us;
    bool poll_hint;
    bool chan;
    uint64_t tagmem;
    char *usermem;
};

static void create_fdt(TempestMachineState *tms)
{
    MachineState *ms = MACHINE(tms);
    void *fdt = create_device_tree(&tms->fdt_size);
    char *name;

    if (!fdt) {
        error_report("tempest: create_device_tree() failed");
        exit(1);
    }
    tms->fdt = fdt;
    tms->gic_phandle = qemu_fdt_alloc_phandle(fdt);
    tms->clock_phandle = qemu_fdt_alloc_phandle(fdt);

    qemu_fdt_setprop_string(fdt, "/", "compatible", "qemu,tempest");
    qemu_fdt_setprop_string(fdt, "/", "model", "Tempest node");
    qemu_fdt_setprop_cell(fdt, "/", "#address-cells", 2);
    qemu_fdt_setprop_cell(fdt, "/", "#size-cells", 2);
    qemu_fdt_setprop_cell(fdt, "/", "interrupt-parent", tms->gic_phandle);
    qemu_fdt_add_subnode(fdt, "/chosen");

    name = g_strdup_printf("/memory@%" PRIx64, tempest_memmap[TMAP_MEM].base);
    qemu_fdt_add_subnode(fdt, name);
    qemu_fdt_setprop_string(fdt, name, "device_type", "memory");
    qemu_fdt_setprop_sized_cells(fdt, name, "reg",
                                 2, tempest_memmap[TMAP_MEM].base,
                                 2, ms->ram_size);
    g_free(name);

    /* A fixed clock for the UART, as Linux's pl011 driver wants one. */
    qemu_fdt_add_subnode(fdt, "/apb-pclk");
    qemu_fdt_setprop_string(fdt, "/apb-pclk", "compatible", "fixed-clock");
    qemu_fdt_setprop_cell(fdt, "/apb-pclk", "#clock-cells", 0);
    qemu_fdt_setprop_cell(fdt, "/apb-pclk", "clock-frequency", 24000000);
    qemu_fdt_setprop_string(fdt, "/apb-pclk", "clock-output-names", "clk24mhz");
    qemu_fdt_setprop_cell(fdt, "/apb-pclk", "phandle", tms->clock_phandle);
}

static void fdt_add_cpu_nodes(TempestMachineState *tms)
{
    void *fdt = tms->fdt;
    int smp_cpus = MACHINE(tms)->smp.cpus;

    qemu_fdt_add_subnode(fdt, "/cpus");
    qemu_fdt_setprop_cell(fdt, "/cpus", "#address-cells", 1);
    qemu_fdt_setprop_cell(fdt, "/cpus", "#size-cells", 0);

    /* Added in reverse so that they appear in order in the blob. */
    for (int cpu = smp_cpus - 1; cpu >= 0; cpu--) {
        ARMCPU *armcpu = ARM_CPU(qemu_get_cpu(cpu));
        char *name = g_strdup_printf("/cpus/cpu@%d", cpu);

        qemu_fdt_add_subnode(fdt, name);
        qemu_fdt_setprop_string(fdt, name, "device_type", "cpu");
        qemu_fdt_setprop_string(fdt, name, "compatible",
                                armcpu->dtb_compatible);
        qemu_fdt_setprop_cell(fdt, name, "reg", armcpu->mp_affinity);
        if (smp_cpus > 1) {
            qemu_fdt_setprop_string(fdt, name, "enable-method", "psci");
        }
        g_free(name);
    }

    qemu_fdt_add_subnode(fdt, "/timer");
    qemu_fdt_setprop_string(fdt, "/timer", "compatible", "arm,armv8-timer");
    qemu_fdt_setprop(fdt, "/timer", "always-on", NULL, 0);
    qemu_fdt_setprop_cells(fdt, "/timer", "interrupts",
        GIC_FDT_IRQ_TYPE_PPI, INTID_TO_PPI(ARCH_TIMER_S_EL1_IRQ),
        GIC_FDT_IRQ_FLAGS_LEVEL_HI,
        GIC_FDT_IRQ_TYPE_PPI, INTID_TO_PPI(ARCH_TIMER_NS_EL1_IRQ),
        GIC_FDT_IRQ_FLAGS_LEVEL_HI,
        GIC_FDT_IRQ_TYPE_PPI, INTID_TO_PPI(ARCH_TIMER_VIRT_IRQ),
        GIC_FDT_IRQ_FLAGS_LEVEL_HI,
        GIC_FDT_IRQ_TYPE_PPI, INTID_TO_PPI(ARCH_TIMER_NS_EL2_IRQ),
        GIC_FDT_IRQ_FLAGS_LEVEL_HI);
}

static void create_cpus(TempestMachineState *tms)
{
    MachineState *ms = MACHINE(tms);

    for (unsigned n = 0; n < ms->smp.cpus; n++) {
        Object *cpuobj = object_new(ms->cpu_type);

        object_property_set_int(cpuobj, "mp-affinity", n, &error_abort);
        /* Bare-metal programs and Linux run at EL1; PSCI is QEMU's. */
        if (object_property_find(cpuobj, "has_el3")) {
            object_property_set_bool(cpuobj, "has_el3", false, &error_abort);
        }
        if (object_property_find(cpuobj, "has_el2")) {
            object_property_set_bool(cpuobj, "has_el2", false, &error_abort);
        }
        object_property_set_link(cpuobj, "memory",
                                 OBJECT(get_system_memory()), &error_abort);
        qdev_realize(DEVICE(cpuobj), NULL, &error_fatal);
        object_unref(cpuobj);
    }
}

static void create_gic(TempestMachineState *tms)
{
    unsigned int smp_cpus = MACHINE(tms)->smp.cpus;
    SysBusDevice *gicbusdev;
    QList *redist_region_count;
    char *name;

    tms->gic = qdev_new(gicv3_class_name());
    qdev_prop_set_uint32(tms->gic, "revision", 3);
    qdev_prop_set_uint32(tms->gic, "num-cpu", smp_cpus);
    qdev_prop_set_uint32(tms->gic, "num-irq", TEMPEST_NUM_SPIS + 32);
    qdev_prop_set_bit(tms->gic, "has-security-extensions", false);
    redist_region_count = qlist_new();
    qlist_append_int(redist_region_count, smp_cpus);
    qdev_prop_set_array(tms->gic, "redist-region-count", redist_region_count);

    gicbusdev = SYS_BUS_DEVICE(tms->gic);
    sysbus_realize_and_unref(gicbusdev, &error_fatal);
    sysbus_mmio_map(gicbusdev, 0, tempest_memmap[TMAP_GIC_DIST].base);
    sysbus_mmio_map(gicbusdev, 1, tempest_memmap[TMAP_GIC_REDIST].base);

    /*
     * Each CPU's generic timer outputs go to their PPIs; the GIC's
     * IRQ/FIQ/VIRQ/VFIQ outputs go to the CPU's inputs.
     */
    for (unsigned i = 0; i < smp_cpus; i++) {
        DeviceState *cpudev = DEVICE(qemu_get_cpu(i));
        int intidbase = TEMPEST_NUM_SPIS + i * GIC_INTERNAL;
        const int timer_irq[] = {
            [GTIMER_PHYS] = ARCH_TIMER_NS_EL1_IRQ,
            [GTIMER_VIRT] = ARCH_TIMER_VIRT_IRQ,
            [GTIMER_HYP]  = ARCH_TIMER_NS_EL2_IRQ,
            [GTIMER_SEC]  = ARCH_TIMER_S_EL1_IRQ,
            [GTIMER_HYPVIRT] = ARCH_TIMER_NS_EL2_VIRT_IRQ,
            [GTIMER_S_EL2_PHYS] = ARCH_TIMER_S_EL2_IRQ,
            [GTIMER_S_EL2_VIRT] = ARCH_TIMER_S_EL2_VIRT_IRQ,
        };

        for (int irq = 0; irq < ARRAY_SIZE(timer_irq); irq++) {
            qdev_connect_gpio_out(cpudev, irq,
                                  qdev_get_gpio_in(tms->gic,
                                                   intidbase + timer_irq[irq]));
        }
        qdev_connect_gpio_out_named(cpudev, "gicv3-maintenance-interrupt", 0,
                                    qdev_get_gpio_in(tms->gic, intidbase
                                                     + ARCH_GIC_MAINT_IRQ));
        qdev_connect_gpio_out_named(cpudev, "pmu-interrupt", 0,
                                    qdev_get_gpio_in(tms->gic, intidbase
                                                     + VIRTUAL_PMU_IRQ));
        sysbus_connect_irq(gicbusdev, i, qdev_get_gpio_in(cpudev, ARM_CPU_IRQ));
        sysbus_connect_irq(gicbusdev, i + smp_cpus,
                           qdev_get_gpio_in(cpudev, ARM_CPU_FIQ));
        sysbus_connect_irq(gicbusdev, i + 2 * smp_cpus,
                           qdev_get_gpio_in(cpudev, ARM_CPU_VIRQ));
        sysbus_connect_irq(gicbusdev, i + 3 * smp_cpus,
                           qdev_get_gpio_in(cpudev, ARM_CPU_VFIQ));
    }

    name = g_strdup_printf("/intc@%" PRIx64,
                           tempest_memmap[TMAP_GIC_DIST].base);
    qemu_fdt_add_subnode(tms->fdt, name);
    qemu_fdt_setprop_string(tms->fdt, name, "compatible", "arm,gic-v3");
    qemu_fdt_setprop_cell(tms->fdt, name, "#interrupt-cells", 3);
    qemu_fdt_setprop(tms->fdt, name, "interrupt-controller", NULL, 0);
    qemu_fdt_setprop_cell(tms->fdt, name, "#redistributor-regions", 1);
    qemu_fdt_setprop_sized_cells(tms->fdt, name, "reg",
        2, tempest_memmap[TMAP_GIC_DIST].base,
        2, tempest_memmap[TMAP_GIC_DIST].size,
        2, tempest_memmap[TMAP_GIC_REDIST].base,
        2, (uint64_t)smp_cpus * GICV3_REDIST_SIZE);
    qemu_fdt_setprop_cell(tms->fdt, name, "phandle", tms->gic_phandle);
    g_free(name);
}

static void create_uart(TempestMachineState *tms)
{
    hwaddr base = tempest_memmap[TMAP_UART].base;
    int irq = tempest_irqmap[TMAP_UART];
    DeviceState *dev = qdev_new(TYPE_PL011);
    SysBusDevice *s = SYS_BUS_DEVICE(dev);
    char *name;

    qdev_prop_set_chr(dev, "chardev", serial_hd(0));
    sysbus_realize_and_unref(s, &error_fatal);
    sysbus_mmio_map(s, 0, base);
    sysbus_connect_irq(s, 0, qdev_get_gpio_in(tms->gic, irq));

    name = g_strdup_printf("/pl011@%" PRIx64, base);
    qemu_fdt_add_subnode(tms->fdt, name);
    qemu_fdt_setprop(tms->fdt, name, "compatible", "arm,pl011\0arm,primecell",
                     sizeof("arm,pl011\0arm,primecell"));
    qemu_fdt_setprop_sized_cells(tms->fdt, name, "reg", 2, base,
                                 2, tempest_memmap[TMAP_UART].size);
    qemu_fdt_setprop_cells(tms->fdt, name, "interrupts",
                           GIC_FDT_IRQ_TYPE_SPI, irq,
                           GIC_FDT_IRQ_FLAGS_LEVEL_HI);
    qemu_fdt_setprop_cells(tms->fdt, name, "clocks",
                           tms->clock_phandle, tms->clock_phandle);
    qemu_fdt_setprop(tms->fdt, name, "clock-names", "uartclk\0apb_pclk",
                     sizeof("uartclk\0apb_pclk"));
    qemu_fdt_setprop_string(tms->fdt, "/chosen", "stdout-path", name);
    g_free(name);
}

/*
 * The memory backend @id as the node controller's memory, mapped at
 * TEMPEST_USERMEM_BASE (not in the device tree's /memory: the kernel of a
 * Linux node never uses it; its processes map it through the driver).
 */
static MemoryRegion *create_usermem(const char *id)
{
    Object *o = object_resolve_path_component(object_get_objects_root(), id);
    HostMemoryBackend *be;
    MemoryRegion *mr;

    if (!o || !object_dynamic_cast(o, TYPE_MEMORY_BACKEND)) {
        error_report("usermem: no memory backend '%s' (make one with "
                     "-object memory-backend-memfd,id=%s,size=...)", id, id);
        exit(1);
    }
    be = MEMORY_BACKEND(o);
    if (host_memory_backend_is_mapped(be)) {
        error_report("usermem: memory backend '%s' is already in use", id);
        exit(1);
    }
    mr = host_memory_backend_get_memory(be);
    if (memory_region_size(mr) < TEMPEST_USERMEM_MIN ||
        memory_region_size(mr) > TEMPEST_USERMEM_MAX ||
        memory_region_size(mr) % TEMPEST_USERMEM_MIN) {
        error_report("usermem: '%s' has %" PRIu64 " bytes: it must be a "
                     "multiple of %llu MiB, at most %llu MiB", id,
                     (uint64_t)memory_region_size(mr),
                     TEMPEST_USERMEM_MIN / MiB, TEMPEST_USERMEM_MAX / MiB);
        exit(1);
    }
    host_memory_backend_set_mapped(be, true);
    memory_region_add_subregion(get_system_memory(), TEMPEST_USERMEM_BASE,
                                mr);
    /*
     * Migrated (a checkpoint, docs/checkpoint.rst) like the RAM: the Linux
     * processes' memory lives here.  Without this a saved node came back
     * with its processes' code and data zeroed.
     */
    vmstate_register_ram_global(mr);
    return mr;
}

static void create_nc(TempestMachineState *tms)
{
    MachineState *ms = MACHINE(tms);
    hwaddr base = tempest_memmap[TMAP_NC].base;
    int irq = tempest_irqmap[TMAP_NC];
    DeviceState *dev = DEVICE(&tms->nc);
    SysBusDevice *s = SYS_BUS_DEVICE(dev);
    MemoryRegion *nc_mem = ms->ram;
    hwaddr nc_mem_base = tempest_memmap[TMAP_MEM].base;
    char *name;

    if (*tms->usermem) {
        nc_mem = create_usermem(tms->usermem);
        nc_mem_base = TEMPEST_USERMEM_BASE;
    }

    qdev_prop_set_uint32(dev, "node-id", tms->node_id);
    qdev_prop_set_uint32(dev, "num-nodes", tms->num_nodes);
    qdev_prop_set_uint32(dev, "num-cpus", ms->smp.cpus);
    qdev_prop_set_uint64(dev, "ram-base", nc_mem_base);
    qdev_prop_set_uint64(dev, "ram-size", memory_region_size(nc_mem));
    qdev_prop_set_string(dev, "cmdline",
                         ms->kernel_cmdline ? ms->kernel_cmdline : "");
    qdev_prop_set_string(dev, "fabric", tms->fabric);
    object_property_set_link(OBJECT(dev), "ram", OBJECT(nc_mem),
                             &error_abort);
    qdev_prop_set_string(dev, "fabric-key", tms->fabric_key);
    qdev_prop_set_string(dev, "fabric-shm", tms->fabric_shm);
    qdev_prop_set_string(dev, "fabric-host-id", tms->fabric_host_id);
    qdev_prop_set_string(dev, "fabric-shm-dir", tms->fabric_shm_dir);
    if (*tms->fabric_backend) {
        Object *fb = object_resolve_path_component(object_get_objects_root(),
                                                   tms->fabric_backend);

        if (!fb || !object_dynamic_cast(fb, TYPE_TEMPEST_FABRIC)) {
            error_report("fabric-backend: no fabric object '%s' (make one "
                         "with -object tempest-fabric-socket,id=%s,...)",
                         tms->fabric_backend, tms->fabric_backend);
            exit(1);
        }
        object_property_set_link(OBJECT(dev), "fabric-backend", fb,
                                 &error_fatal);
    }
    qdev_prop_set_uint64(dev, "cluster-id", tms->cluster_id);
    qdev_prop_set_uint32(dev, "credits", tms->credits);
    qdev_prop_set_uint32(dev, "fabric-timeout", tms->fabric_timeout);
    qdev_prop_set_uint32(dev, "spin-us", tms->spin_us);
    qdev_prop_set_uint32(dev, "sleep-yield-us", tms->sleep_yield_us);
    qdev_prop_set_bit(dev, "poll-hint", tms->poll_hint);
    qdev_prop_set_bit(dev, "chan", tms->chan);
    qdev_prop_set_uint64(dev, "tagmem-size", tms->tagmem);
    object_property_set_link(OBJECT(dev), "memory",
                             OBJECT(get_system_memory()), &error_fatal);
    sysbus_realize(s, &error_fatal);
    sysbus_mmio_map(s, 0, base);
    sysbus_connect_irq(s, 0, qdev_get_gpio_in(tms->gic, irq));
    if (tms->tagmem) {
        sysbus_mmio_map(s, 1, TEMPEST_TAGMEM_BASE);
        sysbus_mmio_map(s, 2, TEMPEST_TAGMEM_ALIAS);
    }

    name = g_strdup_printf("/node-controller@%" PRIx64, base);
    qemu_fdt_add_subnode(tms->fdt, name);
    /* The version says which register map a driver binds to. */
    qemu_fdt_setprop(tms->fdt, name, "compatible",
                     "tempest,nc-1.7\0tempest,node-controller",
                     sizeof("tempest,nc-1.7\0tempest,node-controller"));
    qemu_fdt_setprop_sized_cells(tms->fdt, name, "reg", 2, base,
                                 2, tempest_memmap[TMAP_NC].size);
    qemu_fdt_setprop_cells(tms->fdt, name, "interrupts",
                           GIC_FDT_IRQ_TYPE_SPI, irq,
                           GIC_FDT_IRQ_FLAGS_LEVEL_HI);
    qemu_fdt_setprop_cell(tms->fdt, name, "node-id", tms->node_id);
    qemu_fdt_setprop_cell(tms->fdt, name, "num-nodes", tms->num_nodes);
    g_free(name);
}

/*
 * TEMPEST_VIRTIO_COUNT virtio-mmio transports, each with its own SPI.  A
 * -device virtio-*-device plugs into the first free one.
 */
static void create_virtio_transports(TempestMachineState *tms)
{
    hwaddr size = tempest_memmap[TMAP_VIRTIO].size;

    for (int i = 0; i < TEMPEST_VIRTIO_COUNT; i++) {
        hwaddr base = tempest_memmap[TMAP_VIRTIO].base + i * size;
        int irq = tempest_irqmap[TMAP_VIRTIO] + i;

        DeviceState *dev = qdev_new(TYPE_VIRTIO_MMIO);

        /* Virtio 1.x (transport version 2), as Linux prefers. */
        qdev_prop_set_bit(dev, "force-legacy", false);
        sysbus_realize_and_unref(SYS_BUS_DEVICE(dev), &error_fatal);
        sysbus_mmio_map(SYS_BUS_DEVICE(dev), 0, base);
        sysbus_connect_irq(SYS_BUS_DEVICE(dev), 0,
                           qdev_get_gpio_in(tms->gic, irq));
    }

    /* Added in reverse so that they appear in order in the blob. */
    for (int i = TEMPEST_VIRTIO_COUNT - 1; i >= 0; i--) {
        hwaddr base = tempest_memmap[TMAP_VIRTIO].base + i * size;
        int irq = tempest_irqmap[TMAP_VIRTIO] + i;
        char *name = g_strdup_printf("/virtio_mmio@%" PRIx64, base);

        qemu_fdt_add_subnode(tms->fdt, name);
        qemu_fdt_setprop_string(tms->fdt, name, "compatible", "virtio,mmio");
        qemu_fdt_setprop_sized_cells(tms->fdt, name, "reg", 2, base, 2, size);
        qemu_fdt_setprop_cells(tms->fdt, name, "interrupts",
                               GIC_FDT_IRQ_TYPE_SPI, irq,
                               GIC_FDT_IRQ_FLAGS_EDGE_LO_HI);
        qemu_fdt_setprop(tms->fdt, name, "dma-coherent", NULL, 0);
        g_free(name);
    }
}

static void *tempest_dtb(const struct arm_boot_info *binfo, int *fdt_size)
{
    const TempestMachineState *tms =
        container_of(binfo, TempestMachineState, bootinfo);

    *fdt_size = tms->fdt_size;
    return tms->fdt;
}

static void tempest_init(MachineState *machine)
{
    TempestMachineState *tms = TEMPEST_MACHINE(machine);

    if (tms->num_nodes < 1 || tms->num_nodes > TEMPEST_MAX_NODES) {
        error_report("tempest: num-nodes must be between 1 and %d (got %u)",
                     TEMPEST_MAX_NODES, tms->num_nodes);
        exit(1);
    }
    if (tms->node_id >= tms->num_nodes) {
        error_report("tempest: node-id %u must be below num-nodes %u",
                     tms->node_id, tms->num_nodes);
        exit(1);
    }
    if (machine->ram_size > tempest_memmap[TMAP_MEM].size) {
        error_report("tempest: at most %" PRIu64 " MiB of RAM (asked for %"
                     PRIu64 " MiB)", tempest_memmap[TMAP_MEM].size / MiB,
                     (uint64_t)machine->ram_size / MiB);
        exit(1);
    }
    trace_tempest_board_init(tms->node_id, tms->num_nodes, machine->smp.cpus,
                             machine->ram_size);

    create_cpus(tms);
    memory_region_add_subregion(get_system_memory(),
                                tempest_memmap[TMAP_MEM].base,
                                machine->ram);
    create_fdt(tms);
    fdt_add_cpu_nodes(tms);
    create_gic(tms);
    create_uart(tms);
    create_nc(tms);
    create_virtio_transports(tms);

    tms->bootinfo.ram_size = machine->ram_size;
    tms->bootinfo.board_id = -1;
    tms->bootinfo.loader_start = tempest_memmap[TMAP_MEM].base;
    tms->bootinfo.get_dtb = tempest_dtb;
    tms->bootinfo.psci_conduit = QEMU_PSCI_CONDUIT_HVC;
    arm_load_kernel(ARM_CPU(first_cpu), machine, &tms->bootinfo);
}

static void tempest_get_size(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    uint64_t *field = opaque;

    visit_type_size(v, name, field, errp);
}

static void tempest_set_size(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    uint64_t *field = opaque;

    visit_type_size(v, name, field, errp);
}

static bool tempest_get_poll_hint(Object *obj, Error **errp)
{
    return TEMPEST_MACHINE(obj)->poll_hint;
}

static void tempest_set_poll_hint(Object *obj, bool value, Error **errp)
{
    TEMPEST_MACHINE(obj)->poll_hint = value;
}

static bool tempest_get_chan(Object *obj, Error **errp)
{
    return TEMPEST_MACHINE(obj)->chan;
}

static void tempest_set_chan(Object *obj, bool value, Error **errp)
{
    TEMPEST_MACHINE(obj)->chan = value;
}

static char *tempest_get_fabric(Object *obj, Error **errp)
{
    return g_strdup(TEMPEST_MACHINE(obj)->fabric);
}

static void tempest_set_fabric(Object *obj, const char *value, Error **errp)
{
    TempestMachineState *tms = TEMPEST_MACHINE(obj);

    g_free(tms->fabric);
    tms->fabric = g_strdup(value);
}

static char *tempest_get_fabric_key(Object *obj, Error **errp)
{
    return g_strdup(TEMPEST_MACHINE(obj)->fabric_key);
}

static void tempest_set_fabric_key(Object *obj, const char *value,
                                   Error **errp)
{
    TempestMachineState *tms = TEMPEST_MACHINE(obj);

    g_free(tms->fabric_key);
    tms->fabric_key = g_strdup(value);
}

static char *tempest_get_fabric_backend(Object *obj, Error **errp)
{
    return g_strdup(TEMPEST_MACHINE(obj)->fabric_backend);
}

static void tempest_set_fabric_backend(Object *obj, const char *value,
                                       Error **errp)
{
    TempestMachineState *tms = TEMPEST_MACHINE(obj);

    g_free(tms->fabric_backend);
    tms->fabric_backend = g_strdup(value);
}

/* fabric-shm, fabric-host-id, fabric-shm-dir: plain strings. */
#define TEMPEST_STR_PROP(field)                                             \
static char *tempest_get_##field(Object *obj, Error **errp)                 \
{                                                                           \
    return g_strdup(TEMPEST_MACHINE(obj)->field);                           \
}                                                                           \
static void tempest_set_##field(Object *obj, const char *value,             \
                                Error **errp)                               \
{                                                                           \
    TempestMachineState *tms = TEMPEST_MACHINE(obj);                        \
                                                                            \
    g_free(tms->field);                                                     \
    tms->field = g_strdup(value);                                           \
}

TEMPEST_STR_PROP(fabric_shm)
TEMPEST_STR_PROP(usermem)
TEMPEST_STR_PROP(fabric_host_id)
TEMPEST_STR_PROP(fabric_shm_dir)

static void tempest_instance_init(Object *obj)
{
    TempestMachineState *tms = TEMPEST_MACHINE(obj);

    tms->node_id = 0;
    tms->num_nodes = 1;
    tms->fabric = g_strdup("");
    tms->fabric_key = g_strdup("");
    tms->fabric_backend = g_strdup("");
    tms->fabric_shm = g_strdup("auto");
    tms->fabric_host_id = g_strdup("");
    tms->fabric_shm_dir = g_strdup("");
    tms->usermem = g_strdup("");
    tms->credits = 32;
    tms->fabric_timeout = 30000;
    tms->spin_us = 50;
    tms->sleep_yield_us = TEMPEST_NC_SLEEP_YIELD_US;
    tms->poll_hint = true;
    tms->chan = true;
    tms->tagmem = 64 * MiB;
    object_property_add(obj, "tagmem", "size", tempest_get_size,
                        tempest_set_size, NULL, &tms->tagmem);
    object_property_set_description(obj, "tagmem", "Bytes of tagged memory "
                                    "for Tempest user-managed pages "
                                    "(0: none)");
    object_property_add_str(obj, "usermem", tempest_get_usermem,
                            tempest_set_usermem);
    object_property_set_description(obj, "usermem", "Id of a memory "
                                    "backend mapped at TEMPEST_USERMEM_BASE "
                                    "as the node controller's memory "
                                    "instead of RAM (Linux nodes)");
    object_property_add_str(obj, "fabric", tempest_get_fabric,
                            tempest_set_fabric);
    object_property_set_description(obj, "fabric", "How the nodes reach "
                                    "each other: unix:DIR, tcp:HOST:PORT or "
                                    "tcp:H0:P0;H1:P1;...");
    object_property_add_str(obj, "fabric-backend", tempest_get_fabric_backend,
                            tempest_set_fabric_backend);
    object_property_set_description(obj, "fabric-backend", "Id of a fabric "
                                    "object (-object tempest-fabric-socket) "
                                    "instead of fabric=");
    object_property_add_str(obj, "fabric-shm", tempest_get_fabric_shm,
                            tempest_set_fabric_shm);
    object_property_set_description(obj, "fabric-shm", "With tcp: "
                                    "addresses: auto (the nodes of one "
                                    "host share memory) or off (TCP only)");
    object_property_add_str(obj, "fabric-host-id",
                            tempest_get_fabric_host_id,
                            tempest_set_fabric_host_id);
    object_property_set_description(obj, "fabric-host-id", "This host's "
                                    "identity in a tcp: cluster (default: "
                                    "boot id and uid)");
    object_property_add_str(obj, "fabric-shm-dir",
                            tempest_get_fabric_shm_dir,
                            tempest_set_fabric_shm_dir);
    object_property_set_description(obj, "fabric-shm-dir", "Directory of "
                                    "this host's nodes' Unix sockets in a "
                                    "tcp: cluster");
    object_property_add_str(obj, "fabric-key", tempest_get_fabric_key,
                            tempest_set_fabric_key);
    object_property_set_description(obj, "fabric-key", "Id of a secret "
                                    "object holding the cluster's key "
                                    "(default: the cluster id)");
    object_property_add_uint64_ptr(obj, "cluster-id", &tms->cluster_id,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "cluster-id",
                                    "The cluster's identity, the same on "
                                    "every node");
    object_property_add_uint32_ptr(obj, "credits", &tms->credits,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "credits", "Packets in flight per "
                                    "peer and logical network");
    object_property_add_uint32_ptr(obj, "fabric-timeout",
                                   &tms->fabric_timeout,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "fabric-timeout", "Milliseconds "
                                    "to wait for the cluster to connect");
    object_property_add_uint32_ptr(obj, "spin-us", &tms->spin_us,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "spin-us", "How long the guest "
                                    "runtime polls for messages before it "
                                    "sleeps (a hint, NC register SPIN_US)");
    object_property_add_uint32_ptr(obj, "sleep-yield-us",
                                   &tms->sleep_yield_us,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "sleep-yield-us", "How long a "
                                    "halted vCPU that waits for a "
                                    "collective on shared memory yields "
                                    "its host CPU before it sleeps (when "
                                    "spin-us is 0; 500 by default; 0: it "
                                    "sleeps at once)");
    object_property_add_bool(obj, "poll-hint", tempest_get_poll_hint,
                             tempest_set_poll_hint);
    object_property_set_description(obj, "poll-hint", "Offer the guest the "
                                    "node controller's POLL_HINT register "
                                    "(off: it writes POLL on every turn)");
    object_property_add_bool(obj, "chan", tempest_get_chan,
                             tempest_set_chan);
    object_property_set_description(obj, "chan", "Offer the guest the "
                                    "channel controller (FEATURES bit "
                                    "CHAN; off: libchan runs its software "
                                    "protocol)");
    object_property_add_uint32_ptr(obj, "node-id", &tms->node_id,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "node-id",
                                    "This node's index in its cluster");
    object_property_add_uint32_ptr(obj, "num-nodes", &tms->num_nodes,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "num-nodes",
                                    "The number of nodes in the cluster");
    object_initialize_child(obj, "node-controller", &tms->nc,
                            TYPE_TEMPEST_NC);
}

static void tempest_class_init(ObjectClass *oc, void *data)
{
    MachineClass *mc = MACHINE_CLASS(oc);
    static const char * const valid_cpu_types[] = {
        ARM_CPU_TYPE_NAME("cortex-a57"),
        ARM_CPU_TYPE_NAME("cortex-a72"),
        ARM_CPU_TYPE_NAME("cortex-a76"),
        ARM_CPU_TYPE_NAME("neoverse-n1"),
        ARM_CPU_TYPE_NAME("max"),
        NULL,
    };

    mc->desc = "Tempest parallel machine node (aarch64)";
    mc->init = tempest_init;
    mc->default_cpu_type = ARM_CPU_TYPE_NAME("cortex-a76");
    mc->valid_cpu_types = valid_cpu_types;
    mc->default_cpus = 1;
    mc->max_cpus = TEMPEST_MAX_CPUS;
    mc->default_ram_size = 128 * MiB;
    mc->default_ram_id = "tempest.ram";
    mc->minimum_page_bits = 12;
    mc->no_cdrom = 1;
    mc->no_floppy = 1;
    mc->no_parallel = 1;
}

static const TypeInfo tempest_machine_info = {
    .name = TYPE_TEMPEST_MACHINE,
    .parent = TYPE_MACHINE,
    .instance_size = sizeof(TempestMachineState),
    .instance_init = tempest_instance_init,
    .class_init = tempest_class_init,
};

static void tempest_machine_register_types(void)
{
    type_register_static(&tempest_machine_info);
}

type_init(tempest_machine_register_types)
