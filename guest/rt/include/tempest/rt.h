/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tempest bare-metal runtime (libtempest-rt): the platform layer a
 * guest program of the tempest machine runs on.
 *
 * What the runtime does before main():
 *  - runs every CPU at EL1 with the MMU and caches on: devices (GIC, UART,
 *    node controller) and RAM are identity-mapped, nothing else is (a NULL
 *    dereference faults, and so does any access to the Tempest
 *    user-managed segment until something maps it);
 *  - gives each CPU a 64 KiB stack with an unmapped guard page below it,
 *    a separate exception stack, and its own thread-local storage (errno);
 *  - starts every configured secondary CPU with PSCI; each waits for work
 *    given to it with rt_cpu_call();
 *  - connects stdin/stdout/stderr to the UART and malloc() to the RAM left
 *    after the program image;
 *  - builds argc/argv from the node controller's command line (QEMU
 *    -append): words separated by whitespace, "..." keeps whitespace, a
 *    backslash escapes the next character.
 * exit(main(argc, argv)) follows.  Any exception on any CPU prints a crash
 * report starting with "*** CRASH" on the UART and ends the node with
 * status TEMPEST_EXIT_CRASH.
 *
 * stdout and stderr are line-buffered per CPU: a line printed by one CPU
 * is never mixed with another CPU's output.  A line without '\n' is
 * written by fflush(), when the buffer is full, at exit, and in a crash
 * report.  stdin returns the characters the UART has already received and
 * reports end-of-file when there are none.
 *
 * All calls may be made from any CPU once main() has started.  This header
 * includes tempest/tempest-hw.h (machine constants, NC register offsets).
 */
#ifndef TEMPEST_RT_H
#define TEMPEST_RT_H

#include <stdint.h>

#include "tempest/tempest-hw.h"

/*
 * rt_node_id: returns this node's number in the cluster, 0..N-1 (the node
 * controller's NODE_ID register, read at boot).
 */
unsigned rt_node_id(void);

/*
 * rt_num_nodes: returns the number of nodes in the cluster, at least 1
 * (NUM_NODES register, read at boot).
 */
unsigned rt_num_nodes(void);

/*
 * rt_num_cpus: returns the number of vCPUs configured for this node
 * (NUM_CPUS register), 1..TEMPEST_MAX_CPUS.  Some of them may have failed
 * to start: see rt_cpus_online().
 */
unsigned rt_num_cpus(void);

/*
 * rt_cpus_online: returns the number of CPUs running the runtime, counted
 * by the CPUs themselves as they come up (the boot CPU included).  By the
 * time main() runs every secondary CPU that could be started is counted.
 */
unsigned rt_cpus_online(void);

/*
 * rt_cpu_id: returns the index of the calling CPU, 0..rt_num_cpus()-1
 * (0 is the boot CPU, which runs main()).
 */
unsigned rt_cpu_id(void);

/*
 * rt_cpu_call: makes the secondary CPU @cpu run fn(arg) and returns 0 at
 * once, without waiting for fn to start or finish.  Returns -1 and does
 * nothing if @fn is NULL, if @cpu is 0, the calling CPU, out of range or a
 * CPU that did not start, or if @cpu is still running an earlier call.
 * Wait for the call with rt_cpu_wait().  fn runs with its own stack and
 * TLS; when it returns the CPU waits for the next call.
 */
int rt_cpu_call(unsigned cpu, void (*fn)(void *), void *arg);

/*
 * rt_cpu_wait: waits until the call last given to @cpu with rt_cpu_call()
 * has returned.  Returns at once if @cpu is idle, out of range, not
 * started, or the calling CPU itself.
 */
void rt_cpu_wait(unsigned cpu);

/*
 * rt_nc_read: returns the 32-bit node controller register at byte offset
 * @off from TEMPEST_NC_BASE (TEMPEST_NC_* in tempest/tempest-hw.h).
 * Returns 0 without touching the device if @off is not 4-byte aligned or
 * not below TEMPEST_NC_SIZE.  Offsets inside the window that name no
 * register are passed to the device, which records the error.
 */
uint32_t rt_nc_read(unsigned off);

/*
 * rt_nc_write: writes @v to the 32-bit node controller register at @off.
 * Does nothing if @off is not 4-byte aligned or not below TEMPEST_NC_SIZE.
 * Writing TEMPEST_NC_EXIT ends the node at once: use rt_exit() for that.
 */
void rt_nc_write(unsigned off, uint32_t v);

/*
 * rt_exit: ends the node with exit status @status & 0xff, from any CPU,
 * without running atexit handlers (exit() runs them and then comes here).
 * The calling CPU's pending stdout line is written first.  Never returns.
 */
void rt_exit(int status) __attribute__((noreturn));

/*
 * rt_ram_size: returns the size in bytes of this node's RAM, which starts
 * at TEMPEST_RAM_BASE (RAM_SIZE registers, read at boot).
 */
uint64_t rt_ram_size(void);

/*
 * rt_puts_raw: writes the string @s to the UART as it is (no newline is
 * added), bypassing stdio and its buffers.  It waits at most about a
 * second for another CPU's output to finish and then writes anyway, so it
 * is usable where stdio is not (before main, in a broken program).  Does
 * nothing if @s is NULL.
 */
void rt_puts_raw(const char *s);

#endif /* TEMPEST_RT_H */
