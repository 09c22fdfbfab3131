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

rt_irq_vector:
    stp     x2, x3, [sp, #RT_IRQ_X(2)]
    stp     x4, x5, [sp, #RT_IRQ_X(4)]
    stp     x6, x7, [sp, #RT_IRQ_X(6)]
    stp     x8, x9, [sp, #RT_IRQ_X(8)]
    stp     x10, x11, [sp, #RT_IRQ_X(10)]
    stp     x12, x13, [sp, #RT_IRQ_X(12)]
    stp     x14, x15, [sp, #RT_IRQ_X(14)]
    stp     x16, x17, [sp, #RT_IRQ_X(16)]
    stp     x18, x29, [sp, #RT_IRQ_X(18)]
    mrs     x0, elr_el1
    stp     x30, x0, [sp, #RT_IRQ_X30]
    mrs     x1, spsr_el1
    mrs     x2, fpsr
    stp     x1, x2, [sp, #RT_IRQ_SPSR]
    mrs     x3, fpcr
    str     x3, [sp, #RT_IRQ_FPCR]
    add     x0, sp, #RT_IRQ_Q
    stp     q0, q1, [x0, #0]
    stp     q2, q3, [x0, #32]
    stp     q4, q5, [x0, #64]
    stp     q6, q7, [x0, #96]
    stp     q8, q9, [x0, #128]
    stp     q10, q11, [x0, #160]
    stp     q12, q13, [x0, #192]
    stp     q14, q15, [x0, #224]
    stp     q16, q17, [x0, #256]
    stp     q18, q19, [x0, #288]
    stp     q20, q21, [x0, #320]
    stp     q22, q23, [x0, #352]
    stp     q24, q25, [x0, #384]
    stp     q26, q27, [x0, #416]
    stp     q28, q29, [x0, #448]
    stp     q30, q31, [x0, #480]
    bl      rt_irq_handle
    add     x0, sp, #RT_IRQ_Q
    ldp     q0, q1, [x0, #0]
    ldp     q2, q3, [x0, #32]
    ldp     q4, q5, [x0, #64]
    ldp     q6, q7, [x0, #96]
    ldp     q8, q9, [x0, #128]
    ldp     q10, q11, [x0, #160]
    ldp     q12, q13, [x0, #192]
    ldp     q14, q15, [x0, #224]
    ldp     q16, q17, [x0, #256]
    ldp     q18, q19, [x0, #288]
    ldp     q20, q21, [x0, #320]
    ldp     q22, q23, [x0, #352]
    ldp     q24, q25, [x0, #384]
    ldp     q26, q27, [x0, #416]
    ldp     q28, q29, [x0, #448]
    ldp     q30, q31, [x0, #480]
    ldr     x3, [sp, #RT_IRQ_FPCR]
    msr     fpcr, x3
    ldp     x1, x2, [sp, #RT_IRQ_SPSR]
    msr     spsr_el1, x1
    msr     fpsr, x2
    ldp     x30, x0, [sp, #RT_IRQ_X30]
    msr     elr_el1, x0
    ldp     x18, x29, [sp, #RT_IRQ_X(18)]
    ldp     x16, x17, [sp, #RT_IRQ_X(16)]
    ldp     x14, x15, [sp, #RT_IRQ_X(14)]
    ldp     x12, x13, [sp, #RT_IRQ_X(12)]
    ldp     x10, x11, [sp, #RT_IRQ_X(10)]
    ldp     x8, x9, [sp, #RT_IRQ_X(8)]
    ldp     x6, x7, [sp, #RT_IRQ_X(6)]
    ldp     x4, x5, [sp, #RT_IRQ_X(4)]
    ldp     x2, x3, [sp, #RT_IRQ_X(2)]
    ldp     x0, x1, [sp, #RT_IRQ_X(0)]
    add     sp, sp, #RT_IRQ_FRAME_SIZE
    eret

rt_vector_common:
    stp     x2, x3, [sp, #RT_FRAME_X(2)]
    stp     x4, x5, [sp, #RT_FRAME_X(4)]
    stp     x6, x7, [sp, #RT_FRAME_X(6)]
    stp     x8, x9, [sp, #RT_FRAME_X(8)]
    stp     x10, x11, [sp, #RT_FRAME_X(10)]
    stp     x12, x13, [sp, #RT_FRAME_X(12)]
    stp     x14, x15, [sp, #RT_FRAME_X(14)]
    stp     x16, x17, [sp, #RT_FRAME_X(16)]
    stp     x18, x19, [sp, #RT_FRAME_X(18)]
    stp     x20, x21, [sp, #RT_FRAME_X(20)]
    stp     x22, x23, [sp, #RT_FRAME_X(22)]
    stp     x24, x25, [sp, #RT_FRAME_X(24)]
    stp     x26, x27, [sp, #RT_FRAME_X(26)]
    stp     x28, x29, [sp, #RT_FRAME_X(28)]
    mrs     x1, sp_el0
    stp     x30, x1, [sp, #RT_FRAME_X(30)]
    mrs     x2, elr_el1
    mrs     x3, spsr_el1
    stp     x2, x3, [sp, #RT_FRAME_ELR]
    mrs     x4, esr_el1
    mrs     x5, far_el1
    stp     x4, x5, [sp, #RT_FRAME_ESR]
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
    stp     x2, x3, [sp, #RT_FRAME_X(2)]
    stp     x4, x5, [sp, #RT_FRAME_X(4)]
    stp     x6, x7, [sp, #RT_FRAME_X(6)]
    stp     x8, x9, [sp, #RT_FRAME_X(8)]
    stp     x10, x11, [sp, #RT_FRAME_X(10)]
    stp     x12, x13, [sp, #RT_FRAME_X(12)]
    stp     x14, x15, [sp, #RT_FRAME_X(14)]
    stp     x16, x17, [sp, #RT_FRAME_X(16)]
    stp     x18, x19, [sp, #RT_FRAME_X(18)]
    stp     x20, x21, [sp, #RT_FRAME_X(20)]
    stp     x22, x23, [sp, #RT_FRAME_X(22)]
    stp     x24, x25, [sp, #RT_FRAME_X(24)]
    stp     x26, x27, [sp, #RT_FRAME_X(26)]
    stp     x28, x29, [sp, #RT_FRAME_X(28)]
    mrs     x1, sp_el0
    stp     x30, x1, [sp, #RT_FRAME_X(30)]
    mrs     x2, elr_el1
    mrs     x3, spsr_el1
    stp     x2, x3, [sp, #RT_FRAME_ELR]
    mrs     x4, esr_el1
    mrs     x5, far_el1
    stp     x4, x5, [sp, #RT_FRAME_ESR]
    mrs     x6, fpsr
    mrs     x7, fpcr
    stp     x6, x7, [sp, #RT_SYNC_FPSR]
    add     x0, sp, #RT_SYNC_Q
    stp     q0, q1, [x0, #0]
    stp     q2, q3, [x0, #32]
    stp     q4, q5, [x0, #64]
    stp     q6, q7, [x0, #96]
    stp     q8, q9, [x0, #128]
    stp     q10, q11, [x0, #160]
    stp     q12, q13, [x0, #192]
    stp     q14, q15, [x0, #224]
    stp     q16, q17, [x0, #256]
    stp     q18, q19, [x0, #288]
    stp     q20, q21, [x0, #320]
    stp     q22, q23, [x0, #352]
    stp     q24, q25, [x0, #384]
    stp     q26, q27, [x0, #416]
    stp     q28, q29, [x0, #448]
    stp     q30, q31, [x0, #480]
    mov     x0, sp
    mov     x29, #0
    bl      rt_sync_exception
    add     x0, sp, #RT_SYNC_Q
    ldp     q0, q1, [x0, #0]
    ldp     q2, q3, [x0, #32]
    ldp     q4, q5, [x0, #64]
    ldp     q6, q7, [x0, #96]
    ldp     q8, q9, [x0, #128]
    ldp     q10, q11, [x0, #160]
    ldp     q12, q13, [x0, #192]
    ldp     q14, q15, [x0, #224]
    ldp     q16, q17, [x0, #256]
    ldp     q18, q19, [x0, #288]
    ldp     q20, q21, [x0, #320]
    ldp     q22, q23, [x0, #352]
    ldp     q24, q25, [x0, #384]
    ldp     q26, q27, [x0, #416]
    ldp     q28, q29, [x0, #448]
    ldp     q30, q31, [x0, #480]
    ldp     x6, x7, [sp, #RT_SYNC_FPSR]
    msr     fpsr, x6
    msr     fpcr, x7
    ldp     x2, x3, [sp, #RT_FRAME_ELR]
    msr     elr_el1, x2
    msr     spsr_el1, x3
    ldp     x2, x3, [sp, #RT_FRAME_X(2)]
    ldp     x4, x5, [sp, #RT_FRAME_X(4)]
    ldp     x6, x7, [sp, #RT_FRAME_X(6)]
    ldp     x8, x9, [sp, #RT_FRAME_X(8)]
    ldp     x10, x11, [sp, #RT_FRAME_X(10)]
    ldp     x12, x13, [sp, #RT_FRAME_X(12)]
    ldp     x14, x15, [sp, #RT_FRAME_X(14)]
    ldp     x16, x17, [sp, #RT_FRAME_X(16)]
    ldp     x18, x19, [sp, #RT_FRAME_X(18)]
    ldp     x20, x21, [sp, #RT_FRAME_X(20)]
    ldp     x22, x23, [sp, #RT_FRAME_X(22)]
    ldp     x24, x25, [sp, #RT_FRAME_X(24)]
    ldp     x26, x27, [sp, #RT_FRAME_X(26)]
    ldp     x28, x29, [sp, #RT_FRAME_X(28)]
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
