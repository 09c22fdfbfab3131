/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * EL1 exception vectors of the tempest runtime.
 *
 * An IRQ taken from the program (EL1 on SP_EL0, vector 1) is handled and
 * returned from: the entry switches to SP_EL0, saves the caller-saved
 * registers and all of the FP/SIMD registers in a struct rt_irq_frame on
 * the interrupted stack, calls rt_irq_handle() (gic.c), which
 * acknowledges and dispatches every pending interrupt, and returns with
 * ERET (which restores SPSel from SPSR_EL1).  Handlers run with IRQs
 * masked, so interrupts never nest.
 *
 * A synchronous exception from the program (vector 0) may be a Tempest
 * fault the program survives (a block access fault or a page fault in the
 * user-managed segment, fault.c): its entry saves every register, FP/SIMD
 * included, in a struct rt_sync_frame on this CPU's exception stack and
 * calls rt_sync_exception(frame), which either returns (the fault was
 * dealt with: the registers are restored and ERET retries the access) or
 * reports the crash and ends the node.
 *
 * No other exception is expected: every other entry saves all registers
 * in a struct rt_frame on this CPU's exception stack and calls
 * rt_crash(vector, frame), which reports and ends the node.  SP_EL1 is
 * reset from TPIDR_EL1 on every entry from the program and on those that
 * never return, so an exception inside the crash reporter or an interrupt
 * handler still finds a good stack (vector 0 is only taken from code on
 * SP_EL0, never while the fault path uses SP_EL1).  x0 is parked in
 * TPIDRRO_EL0, which the runtime does not otherwise use.
 */
#include "rt-layout.h"

    .macro ventry index
    .balign 0x80
    msr     tpidrro_el0, x0
    mrs     x0, tpidr_el1
    mov     sp, x0
    mrs     x0, tpidrro_el0
    sub     sp, sp, #RT_FRAME_SIZE
    stp     x0, x1, [sp, #RT_FRAME_X(0)]
    mov     x0, #\index
    b       rt_vector_common
    .endm

    /* Synchronous exception from the program: maybe a Tempest fault. */
    .macro vsync
    .balign 0x80
    msr     tpidrro_el0, x0
    mrs     x0, tpidr_el1
    mov     sp, x0
    mrs     x0, tpidrro_el0
    sub     sp, sp, #RT_SYNC_FRAME_SIZE
    stp     x0, x1, [sp, #RT_FRAME_X(0)]
    b       rt_sync_vector
    .endm

    /* IRQ from the program: run on its own stack (SP_EL0), return. */
    .macro virq
    .balign 0x80
    msr     spsel, #0
    sub     sp, sp, #RT_IRQ_FRAME_SIZE
    stp     x0, x1, [sp, #RT_IRQ_X(0)]
    b       rt_irq_vector
    .endm

    .section .text.vectors, "ax"
    .balign 0x800
    .global rt_vectors
rt_vectors:
    /* Current EL with SP_EL0: the program. */
    vsync
    virq
    ventry  2
    ventry  3
    /* Current EL with SP_EL1: the runtime's own exception paths, boot. */
    ventry  4
    ventry  5
    ventry  6
    ventry  7
    /* Lower EL, AArch64 and AArch32: never used. */
    ventry  8
    ventry  9
    ventry  10
    ventry  11
    ventry  12
    ventry  13
    ventry  14
    ventry  15

    /*
     * \op (stp or ldp) the pairs x2..x17 at \base + 8 * n from sp: the
     * caller-saved registers common to every frame.
     */
    .macro  xpairs_2_17 op, base
    \op     x2, x3, [sp, #(\base + 2 * 8)]
    \op     x4, x5, [sp, #(\base + 4 * 8)]
    \op     x6, x7, [sp, #(\base + 6 * 8)]
    \op     x8, x9, [sp, #(\base + 8 * 8)]
    \op     x10, x11, [sp, #(\base + 10 * 8)]
    \op     x12, x13, [sp, #(\base + 12 * 8)]
    \op     x14, x15, [sp, #(\base + 14 * 8)]
    \op     x16, x17, [sp, #(\base + 16 * 8)]
    .endm

    /* \op (stp or ldp) x2..x29 in a struct rt_frame at sp. */
    .macro  frame_x2_x29 op
    xpairs_2_17 \op, RT_FRAME_X(0)
    \op     x18, x19, [sp, #RT_FRAME_X(18)]
    \op     x20, x21, [sp, #RT_FRAME_X(20)]
    \op     x22, x23, [sp, #RT_FRAME_X(22)]
    \op     x24, x25, [sp, #RT_FRAME_X(24)]
    \op     x26, x27, [sp, #RT_FRAME_X(26)]
    \op     x28, x29, [sp, #RT_FRAME_X(28)]
    .endm

    /*
     * Complete the struct rt_frame at sp whose x0 and x1 are already
     * saved: x2..x30, SP_EL0, ELR, SPSR, ESR and FAR.  Clobbers x1..x5.
     */
    .macro  frame_save
    frame_x2_x29 stp
    mrs     x1, sp_el0
    stp     x30, x1, [sp, #RT_FRAME_X(30)]
    mrs     x2, elr_el1
    mrs     x3, spsr_el1
    stp     x2, x3, [sp, #RT_FRAME_ELR]
    mrs     x4, esr_el1
    mrs     x5, far_el1
    stp     x4, x5, [sp, #RT_FRAME_ESR]
    .endm

    /* \op (stp or ldp) q0..q31 at sp + \base.  Clobbers x0. */
    .macro  fpsimd op, base
    add     x0, sp, #\base
    \op     q0, q1, [x0, #0]
    \op     q2, q3, [x0, #32]
    \op     q4, q5, [x0, #64]
    \op     q6, q7, [x0, #96]
    \op     q8, q9, [x0, #128]
    \op     q10, q11, [x0, #160]
    \op     q12, q13, [x0, #192]
    \op     q14, q15, [x0, #224]
    \op     q16, q17, [x0, #256]
    \op     q18, q19, [x0, #288]
    \op     q20, q21, [x0, #320]
    \op     q22, q23, [x0, #352]
    \op     q24, q25, [x0, #384]
    \op     q26, q27, [x0, #416]
    \op     q28, q29, [x0, #448]
    \op     q30, q31, [x0, #480]
    .endm

rt_irq_vector:
    xpairs_2_17 stp, RT_IRQ_X(0)
    stp     x18, x29, [sp, #RT_IRQ_X(18)]
    mrs     x0, elr_el1
    stp     x30, x0, [sp, #RT_IRQ_X30]
    mrs     x1, spsr_el1
    mrs     x2, fpsr
    stp     x1, x2, [sp, #RT_IRQ_SPSR]
    mrs     x3, fpcr
    str     x3, [sp, #RT_IRQ_FPCR]
    fpsimd  stp, RT_IRQ_Q
    bl      rt_irq_handle
    fpsimd  ldp, RT_IRQ_Q
    ldr     x3, [sp, #RT_IRQ_FPCR]
    msr     fpcr, x3
    ldp     x1, x2, [sp, #RT_IRQ_SPSR]
    msr     spsr_el1, x1
    msr     fpsr, x2
    ldp     x30, x0, [sp, #RT_IRQ_X30]
    msr     elr_el1, x0
    ldp     x18, x29, [sp, #RT_IRQ_X(18)]
    xpairs_2_17 ldp, RT_IRQ_X(0)
    ldp     x0, x1, [sp, #RT_IRQ_X(0)]
    add     sp, sp, #RT_IRQ_FRAME_SIZE
    eret

rt_vector_common:
    frame_save
    mov     x1, sp
    mov     x29, #0
    bl      rt_crash
1:  wfi
    b       1b

    /*
     * The synchronous exception of vector 0: save everything, let
     * rt_sync_exception() decide (it does not return if the node stops),
     * restore everything and retry the instruction.
     */
rt_sync_vector:
    frame_save
    mrs     x6, fpsr
    mrs     x7, fpcr
    stp     x6, x7, [sp, #RT_SYNC_FPSR]
    fpsimd  stp, RT_SYNC_Q
    mov     x0, sp
    mov     x29, #0
    bl      rt_sync_exception
    fpsimd  ldp, RT_SYNC_Q
    ldp     x6, x7, [sp, #RT_SYNC_FPSR]
    msr     fpsr, x6
    msr     fpcr, x7
    ldp     x2, x3, [sp, #RT_FRAME_ELR]
    msr     elr_el1, x2
    msr     spsr_el1, x3
    frame_x2_x29 ldp
    ldr     x30, [sp, #RT_FRAME_X(30)]
    ldp     x0, x1, [sp, #RT_FRAME_X(0)]
    add     sp, sp, #RT_SYNC_FRAME_SIZE
    eret

    /*
     * uint64_t rt_call_on_stack(uint64_t (*fn)(void *), void *arg,
     * uintptr_t sp): calls fn(arg) with the stack pointer set to @sp (16
     * byte aligned) and returns what it returns, on the caller's stack.
     * The fault path uses it to run on the program's own stack.
     */
    .text
    .global rt_call_on_stack
    .type   rt_call_on_stack, %function
rt_call_on_stack:
    stp     x29, x30, [sp, #-32]!
    str     x19, [sp, #16]
    mov     x29, sp
    mov     x19, sp
    mov     sp, x2
    mov     x3, x0
    mov     x0, x1
    blr     x3
    mov     sp, x19
    ldr     x19, [sp, #16]
    ldp     x29, x30, [sp], #32
    ret
    .size   rt_call_on_stack, . - rt_call_on_stack
