/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Boot CPU start-up after start.S (MMU on, BSS zeroed, TLS set): console,
 * heap, GIC, secondary CPUs, fabric readiness, constructors, argv,
 * main(), exit.  Also the
 * node information calls and the way out (_exit).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt-internal.h"
#include "args.h"

#define MAX_ARGS    128
#define LSE_MSG     "*** CRASH on boot: this CPU has no LSE atomics " \
                    "(ARMv8.1); use -cpu cortex-a76 or max\n"

struct rt_boot_info rt_info;

static char cmdline[TEMPEST_NC_CMDLINE_MAX + 1];
static char *argv_buf[MAX_ARGS];

void rt_hard_exit(int status)
{
    __asm__ volatile("dsb sy" : : : "memory");
    rt_nc_reg_write(TEMPEST_NC_EXIT, (uint32_t)status & 0xff);
    for (;;) {
        __asm__ volatile("wfi");
    }
}

void rt_exit(int status)
{
    rt_console_flush_self(true);
    rt_hard_exit(status);
}

/* picolibc's exit() ends here, after the atexit handlers. */
void _exit(int status)
{
    rt_exit(status);
}

uint32_t rt_nc_read(unsigned off)
{
    if ((off & 3) || off >= TEMPEST_NC_SIZE) {
        return 0;
    }
    return rt_nc_reg(off);
}

void rt_nc_write(unsigned off, uint32_t v)
{
    if ((off & 3) || off >= TEMPEST_NC_SIZE) {
        return;
    }
    rt_nc_reg_write(off, v);
}

unsigned rt_node_id(void)
{
    return rt_info.node_id;
}

unsigned rt_num_nodes(void)
{
    return rt_info.num_nodes;
}

bool rt_text_contains(const void *pc)
{
    uintptr_t a = (uintptr_t)pc;

    return a >= (uintptr_t)__image_start && a < (uintptr_t)__text_end;
}

unsigned rt_num_cpus(void)
{
    return rt_info.num_cpus;
}

unsigned rt_cpu_id(void)
{
    return rt_cpu_index();
}

uint64_t rt_ram_base(void)
{
    return TEMPEST_RAM_BASE;
}

uint64_t rt_ram_size(void)
{
    return rt_info.ram_size;
}

/* Copies the CMDLINE window with aligned 32-bit loads. */
static void read_cmdline(void)
{
    uint32_t len = 0;
    uint32_t i, w;

    if (rt_nc_reg(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_CMDLINE) {
        len = rt_nc_reg(TEMPEST_NC_CMDLINE_LEN);
    }
    if (len > TEMPEST_NC_CMDLINE_MAX) {
        len = TEMPEST_NC_CMDLINE_MAX;
    }
    for (i = 0; i < len; i += 4) {
        w = rt_nc_reg(TEMPEST_NC_CMDLINE + i);
        cmdline[i] = w & 0xff;
        cmdline[i + 1] = (w >> 8) & 0xff;
        cmdline[i + 2] = (w >> 16) & 0xff;
        cmdline[i + 3] = (w >> 24) & 0xff;
    }
    cmdline[len] = '\0';
}

static void read_node_info(void)
{
    unsigned cpus = rt_nc_reg(TEMPEST_NC_NUM_CPUS);

    rt_info.node_id = rt_nc_reg(TEMPEST_NC_NODE_ID);
    rt_info.num_nodes = rt_nc_reg(TEMPEST_NC_NUM_NODES);
    if (rt_info.num_nodes == 0) {
        rt_info.num_nodes = 1;
    }
    if (cpus == 0) {
        cpus = 1;
    }
    if (cpus > RT_MAX_CPUS) {
        cpus = RT_MAX_CPUS;
    }
    rt_info.num_cpus = cpus;
}

/*
 * The runtime and programs are built for cortex-a76 and use its LSE
 * atomics everywhere (locks included): say so plainly on a CPU without.
 */
static void check_cpu(void)
{
    uint64_t atomic = (RT_READ_SYSREG(id_aa64isar0_el1) >> 20) & 0xf;

    if (atomic < 2) {
        rt_uart_write_raw(LSE_MSG, sizeof(LSE_MSG) - 1);
        rt_hard_exit(TEMPEST_EXIT_CRASH);
    }
}

void rt_boot_main(void)
{
    int argc;

    rt_console_init();
    check_cpu();
    read_node_info();
    rt_heap_init();
    rt_gic_init();
    rt_gic_cpu_init(0);
    rt_smp_start();
    rt_fabric_wait();
    __libc_init_array();

    read_cmdline();
    argc = rt_split_args(cmdline, argv_buf, MAX_ARGS);
    /*
     * Constructors may leave errno set: libgcc's outline-atomics probe
     * (pulled in by libc.a) asks getauxval(), which fails with EINVAL.
     */
    errno = 0;
    exit(main(argc, argv_buf));
}
