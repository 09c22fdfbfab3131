/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * int rtl_call_on_stack(fn, argc, argv, envp, sp): fn(argc, argv, envp)
 * with the stack pointer at @sp (16-byte aligned), back on the caller's
 * stack afterwards.
 */
    .text
    .global rtl_call_on_stack
    .type rtl_call_on_stack, %function
rtl_call_on_stack:
    stp     x29, x30, [sp, #-32]!
    str     x19, [sp, #16]
    mov     x29, sp
    mov     x19, sp
    and     x4, x4, #~15
    mov     x9, x0
    mov     x0, x1
    mov     x1, x2
    mov     x2, x3
    mov     sp, x4
    blr     x9
    mov     sp, x19
    ldr     x19, [sp, #16]
    ldp     x29, x30, [sp], #32
    ret
    .size rtl_call_on_stack, . - rtl_call_on_stack
    .section .note.GNU-stack, "", %progbits
