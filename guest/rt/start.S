/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Entry points of the tempest runtime.
 *
 * _start: the boot CPU, entered by QEMU at EL1 with the MMU off.
 * rt_secondary_entry: a secondary CPU started by PSCI CPU_ON, with its CPU
 * index as context id in x0, also at EL1 with the MMU off.
 *
 * Every CPU runs its program code on SP_EL0 (SPSel = 0) and takes
 * exceptions on SP_EL1, a separate per-CPU exception stack, so that a
 * stack overflow still reaches the crash reporter.  TPIDR_EL1 holds the
 * top of the CPU's exception stack (see rt_cpu_index()).
 */
#include "rt-layout.h"

#define CPACR_FPEN      (3 << 20)

    /* \reg = address of \sym (identity mapped, within +-4 GiB) */
    .macro adr_l reg, sym
    adrp    \reg, \sym
    add     \reg, \reg, :lo12:\sym
    .endm

    /*
     * Per-CPU setup common to all CPUs, CPU index in x19, SPSel = 1.
     * Touches no memory, so it runs with the MMU on or off.
     */
    .macro cpu_setup
    mrs     x0, cpacr_el1
    orr     x0, x0, #CPACR_FPEN
    msr     cpacr_el1, x0
    isb

    /* Exception stack: SP_EL1 = TPIDR_EL1 = top of this CPU's slot. */
    adr_l   x0, __exc_stacks_start
    add     x1, x19, #1
    mov     x2, #RT_EXC_STACK_SIZE
    madd    x0, x1, x2, x0
    msr     tpidr_el1, x0
    mov     sp, x0

    /* Program stack: SP_EL0 = top of this CPU's slot (guard page below). */
    adr_l   x0, __stacks_start
    ldr     x2, =RT_STACK_SLOT
    madd    x0, x1, x2, x0
    msr     sp_el0, x0
    msr     spsel, #0

    adr_l   x0, rt_vectors
    msr     vbar_el1, x0
    isb
    /* Report SErrors; IRQ and FIQ stay masked (WFI still wakes on them). */
    msr     daifclr, #4
    mov     x29, #0
    mov     x30, #0
    .endm

    .section .text.boot, "ax"
    .global _start
    .type   _start, %function
_start:
    msr     daifset, #0xf
    mov     x19, #0
    cpu_setup

    /*
     * Zero BSS (TLS .tbss of the boot CPU included) with the MMU off:
     * Device memory takes no unaligned accesses and no DC ZVA, so bytes
     * up to 8-byte alignment, then doublewords, then bytes.
     */
    adr_l   x0, __bss_start
    adr_l   x1, __bss_end
1:  cmp     x0, x1
    b.hs    4f
    tst     x0, #7
    b.eq    2f
    strb    wzr, [x0], #1
    b       1b
2:  sub     x2, x1, x0
    cmp     x2, #8
    b.lo    3f
    str     xzr, [x0], #8
    b       2b
3:  cmp     x0, x1
    b.hs    4f
    strb    wzr, [x0], #1
    b       3b
4:
    bl      mmu_boot_init

    /* The boot CPU's TLS block is the image's own .tdata/.tbss. */
    adr_l   x0, __tls_base
    bl      _set_tls

    bl      rt_boot_main
5:  wfi
    b       5b
    .size   _start, . - _start

    .global rt_secondary_entry
    .type   rt_secondary_entry, %function
rt_secondary_entry:
    msr     daifset, #0xf
    mov     x19, x0

    /* MMU on first, with the boot CPU's tables and registers. */
    adr_l   x1, rt_mmu_cfg
    ldp     x2, x3, [x1]
    ldp     x4, x5, [x1, #16]
    msr     mair_el1, x2
    msr     tcr_el1, x3
    msr     ttbr0_el1, x4
    isb
    tlbi    vmalle1
    dsb     nsh
    ic      iallu
    dsb     nsh
    isb
    msr     sctlr_el1, x5
    isb

    cpu_setup
    mov     x0, x19
    bl      rt_secondary_main
6:  wfi
    b       6b
    .size   rt_secondary_entry, . - rt_secondary_entry
    .ltorg
