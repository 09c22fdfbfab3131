/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Linux runtime's internals (libtempest-rt-linux): the platform layer
 * of tempest/rt.h for a program that runs as a Linux process on a Linux
 * node, reaching the node controller through /dev/tempest0
 * (docs/linux.rst, "The libraries on Linux").
 *
 * The rule that makes the libraries run unchanged: every address the
 * program gives the node controller is its own pointer, as on bare metal.
 * So the process maps, each at VA == PA,
 *  - the node controller's registers at TEMPEST_NC_BASE;
 *  - the node's user memory (TEMPEST_USERMEM_BASE, the only memory the
 *    node controller reaches on a Linux node), into which the program is
 *    linked (-Ttext-segment) and moved before main: text, data, bss, the
 *    heap (this runtime's malloc) and the stacks of main and of every
 *    rt_cpu_call() thread;
 *  - the unchecked alias of tagged memory at TEMPEST_TAGMEM_ALIAS;
 * and the Tempest segment page by page (rt_segment_map).
 */
#ifndef RT_LINUX_H
#define RT_LINUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tempest/rt.h"

#define RTL_DEVICE          "/dev/tempest0"
#define RTL_MAIN_STACK      (1U << 20)      /* main's stack in user memory */
#define RTL_CPU_STACK       (256U << 10)    /* an rt_cpu_call thread's */
#define RTL_EXIT_NO_DEVICE  125             /* the node cannot run it */

/* What init found; read-only after it. */
struct rtl_info {
    int fd;                 /* /dev/tempest0 */
    unsigned node, nodes, cpus;
    uint64_t ram_base, ram_size;    /* the node controller's memory */
    uint64_t tagmem_size;
    uint64_t heap_start, heap_end;  /* user memory after the image */
    uint64_t t0_ns;
};

extern struct rtl_info rtl;

/* init.c */
void rtl_fatal(const char *what, int err) __attribute__((noreturn));
void rtl_write_str(const char *s);

/* heap.c: the allocator's memory once user memory is mapped. */
void rtl_heap_add(void *start, size_t len);

/* irq.c */
void rtl_irq_init(void);
void rtl_cpu_main_init(void);
void rtl_dispatch(void);

/* fault.c */
void rtl_fault_init(void);
void rtl_crash_init(void);

/* stack.S: fn(argc, argv, envp) on the stack whose top is @sp. */
int rtl_call_on_stack(int (*fn)(int, char **, char **), int argc,
                      char **argv, char **envp, void *sp);

#endif /* RT_LINUX_H */
