/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Memory layout constants of the tempest bare-metal runtime, shared by
 * the linker script (tempest.ld.S), the assembly (start.S, vectors.S) and
 * the C code.  Plain numbers only: this file is also run through the C
 * preprocessor for the linker script, which knows no C integer suffixes.
 * rt-internal.h checks at compile time that the values agree with
 * tempest/tempest-hw.h.
 *
 * Private to guest/rt.
 */
#ifndef TEMPEST_RT_LAYOUT_H
#define TEMPEST_RT_LAYOUT_H

/* Where the program is linked and loaded (TEMPEST_LOAD_ADDR). */
#define RT_LOAD_ADDR            0x40080000

/* RAM start and largest size (TEMPEST_RAM_BASE, TEMPEST_RAM_MAX). */
#define RT_RAM_BASE             0x40000000
#define RT_RAM_MAX              0x400000000

/* CPUs the runtime has room for (TEMPEST_MAX_CPUS). */
#define RT_MAX_CPUS             8

/* Program stack of each CPU (SP_EL0), with an unmapped guard page below. */
#define RT_STACK_SIZE           0x10000
#define RT_GUARD_SIZE           0x1000
#define RT_STACK_SLOT           (RT_GUARD_SIZE + RT_STACK_SIZE)

/* Exception stack of each CPU (SP_EL1): the crash reporter runs here. */
#define RT_EXC_STACK_SIZE       0x4000

/* 4 KiB translation tables available to mmu.c. */
#define RT_PT_POOL_PAGES        64

/* Alignment of each secondary CPU's TLS block. */
#define RT_TLS_ALIGN            64

/*
 * The register frame the exception vectors save (struct rt_frame):
 * x0..x30, SP_EL0, ELR_EL1, SPSR_EL1, ESR_EL1, FAR_EL1.
 */
#define RT_FRAME_X(n)           ((n) * 8)
#define RT_FRAME_SP             (31 * 8)
#define RT_FRAME_ELR            (32 * 8)
#define RT_FRAME_SPSR           (33 * 8)
#define RT_FRAME_ESR            (34 * 8)
#define RT_FRAME_FAR            (35 * 8)
#define RT_FRAME_SIZE           (36 * 8)

/*
 * The frame of a synchronous exception from the program (vector 0,
 * struct rt_sync_frame): a struct rt_frame, then FPSR, FPCR and all of
 * q0..q31, so that the fault path can return to the program (fault.c).
 */
#define RT_SYNC_FPSR            (36 * 8)
#define RT_SYNC_FPCR            (37 * 8)
#define RT_SYNC_Q               (38 * 8)        /* q0..q31, 16 bytes each */
#define RT_SYNC_FRAME_SIZE      (RT_SYNC_Q + 32 * 16)

/*
 * The frame an interrupt saves on the interrupted program's stack
 * (vectors.S, struct rt_irq_frame): the caller-saved registers x0..x18,
 * x29, x30, then ELR_EL1, SPSR_EL1, FPSR, FPCR, a pad, and all of q0..q31
 * (the callee may clobber the upper halves of v8..v15).
 */
#define RT_IRQ_X(n)             ((n) * 8)       /* x0..x18, 19: x29 */
#define RT_IRQ_X30              (20 * 8)
#define RT_IRQ_ELR              (21 * 8)
#define RT_IRQ_SPSR             (22 * 8)
#define RT_IRQ_FPSR             (23 * 8)
#define RT_IRQ_FPCR             (24 * 8)
#define RT_IRQ_Q                (26 * 8)        /* q0..q31, 16 bytes each */
#define RT_IRQ_FRAME_SIZE       (RT_IRQ_Q + 32 * 16)

#endif /* TEMPEST_RT_LAYOUT_H */
