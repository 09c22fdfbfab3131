/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * EL1 exception vectors of the tempest runtime.  No exception is
 * expected: every entry saves all registers in a struct rt_frame on this
 * CPU's exception stack and calls rt_crash(vector, frame), which reports
 * and ends the node.
 *
 * SP_EL1 is reset from TPIDR_EL1 on every entry (nothing ever returns),
 * so an exception inside the crash reporter still finds a good stack.
 * x0 is parked in TPIDRRO_EL0, which the runtime does not otherwise use.
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

    .section .text.vectors, "ax"
    .balign 0x800
    .global rt_vectors
rt_vectors:
    /* Current EL with SP_EL0: the program. */
    ventry  0
    ventry  1
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
