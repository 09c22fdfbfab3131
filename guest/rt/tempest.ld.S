/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Linker script of tempest guest programs (run through the C preprocessor
 * by guest/rt/meson.build, which writes tempest.ld in the build tree).
 *
 * Everything lives in RAM from RT_LOAD_ADDR (TEMPEST_LOAD_ADDR), in this
 * order: code and read-only data, data, the boot CPU's TLS block, BSS,
 * the translation-table pool, the program stacks (each with a guard page
 * below it), the exception stacks, the secondary CPUs' TLS blocks, and
 * then the heap up to the end of RAM.  The symbols picolibc expects
 * (__heap_start, __heap_end, __tls_*, __arm64_tls_tcb_offset, ...) are
 * defined as in picolibc.ld.
 */
#include "rt-layout.h"

OUTPUT_FORMAT("elf64-littleaarch64")
OUTPUT_ARCH(aarch64)
ENTRY(_start)

PHDRS
{
    text PT_LOAD FLAGS(5);      /* R X */
    data PT_LOAD FLAGS(6);      /* R W */
    tls PT_TLS;
}

SECTIONS
{
    . = RT_LOAD_ADDR;
    __image_start = .;

    .text : {
        KEEP(*(.text.boot))
        *(.text.unlikely .text.unlikely.*)
        *(.text.startup .text.startup.*)
        /* The message path's two groups, a page each (rt.h, RT_HOT_TX). */
        . = ALIGN(4096);
        __hot_rx_start = .;
        *(.text.hot.tempest_rx)
        __hot_rx_end = .;
        . = ALIGN(4096);
        __hot_tx_start = .;
        *(.text.hot.tempest_tx)
        __hot_tx_end = .;
        *(.text .text.*)
        KEEP(*(.text.vectors))
        *(.gnu.linkonce.t.*)
        KEEP(*(.fini .fini.*))
        __text_end = .;
    } :text
    PROVIDE(__etext = __text_end);
    PROVIDE(_etext = __text_end);
    PROVIDE(etext = __text_end);

    .rodata : {
        *(.rdata)
        *(.rodata .rodata.*)
        *(.gnu.linkonce.r.*)
        *(.data.rel.ro .data.rel.ro.*)
        *(.got .got.*)

        . = ALIGN(8);
        PROVIDE_HIDDEN(__preinit_array_start = .);
        KEEP(*(.preinit_array))
        PROVIDE_HIDDEN(__preinit_array_end = .);

        PROVIDE_HIDDEN(__init_array_start = .);
        KEEP(*(SORT_BY_INIT_PRIORITY(.init_array.*)
               SORT_BY_INIT_PRIORITY(.ctors.*)))
        KEEP(*(.init_array .ctors))
        PROVIDE_HIDDEN(__init_array_end = .);

        PROVIDE_HIDDEN(__fini_array_start = .);
        KEEP(*(SORT_BY_INIT_PRIORITY(.fini_array.*)
               SORT_BY_INIT_PRIORITY(.dtors.*)))
        KEEP(*(.fini_array .dtors))
        PROVIDE_HIDDEN(__fini_array_end = .);
    } :text

    .data : ALIGN(16) {
        __data_start = .;
        *(.data .data.*)
        *(.gnu.linkonce.d.*)
        *(.sdata .sdata.* .sdata2.*)
        *(.gnu.linkonce.s.*)
    } :data

    /*
     * The boot CPU's TLS block, and the template for the others.  Its
     * alignment must stay the input sections' own: ld computes the
     * local-exec offsets from it, and _set_tls() from __tls_align.
     */
    .tdata : {
        *(.tdata .tdata.* .gnu.linkonce.td.*)
        __data_end = .;
        __tdata_end = .;
    } :data :tls
    __tls_base = ADDR(.tdata);
    __tdata_start = ADDR(.tdata);
    __tdata_source = LOADADDR(.tdata);
    __tdata_source_end = LOADADDR(.tdata) + SIZEOF(.tdata);
    __tdata_size = SIZEOF(.tdata);
    __edata = __data_end;
    _edata = __data_end;
    PROVIDE(edata = __data_end);

    .tbss (NOLOAD) : {
        *(.tbss .tbss.* .gnu.linkonce.tb.*)
        *(.tcommon)
        __tls_end = .;
        __tbss_end = .;
    } :data :tls
    __tbss_start = ADDR(.tbss);
    __tbss_offset = ADDR(.tbss) - ADDR(.tdata);
    __tbss_size = SIZEOF(.tbss);
    __tls_size = __tls_end - __tls_base;
    __tls_align = MAX(ALIGNOF(.tdata), ALIGNOF(.tbss));
    __arm64_tls_tcb_offset = MAX(16, __tls_align);
    __bss_start = ADDR(.tbss);

    /* ld does not advance '.' over .tbss: make room for it. */
    .tbss_space (NOLOAD) : {
        . = ADDR(.tbss);
        . = . + SIZEOF(.tbss);
    } :data

    .bss (NOLOAD) : {
        *(.sbss*)
        *(.gnu.linkonce.sb.*)
        *(.bss .bss.*)
        *(.gnu.linkonce.b.*)
        *(COMMON)
        . = ALIGN(16);
        __bss_end = .;
    }
    __non_tls_bss_start = ADDR(.bss);
    __end = __bss_end;
    _end = __bss_end;
    PROVIDE(end = __bss_end);
    __bss_size = __bss_end - __bss_start;

    /* Zeroed by mmu.c page by page as it hands them out. */
    .pt_pool (NOLOAD) : ALIGN(4096) {
        __pt_pool_start = .;
        . += RT_PT_POOL_PAGES * 4096;
        __pt_pool_end = .;
    }

    /* Per CPU: a guard page (left unmapped by mmu.c) and the stack. */
    .stacks (NOLOAD) : ALIGN(4096) {
        __stacks_start = .;
        . += RT_MAX_CPUS * RT_STACK_SLOT;
        __stacks_end = .;
    }

    .exc_stacks (NOLOAD) : ALIGN(4096) {
        __exc_stacks_start = .;
        . += RT_MAX_CPUS * RT_EXC_STACK_SIZE;
        __exc_stacks_end = .;
    }

    /* TLS blocks of CPUs 1..RT_MAX_CPUS-1 (the boot CPU uses .tdata). */
    __rt_tls_block_size = ALIGN(MAX(__tls_size, 1), RT_TLS_ALIGN);
    .tls_blocks (NOLOAD) : ALIGN(RT_TLS_ALIGN) {
        __tls_blocks_start = .;
        . += (RT_MAX_CPUS - 1) * __rt_tls_block_size;
        __tls_blocks_end = .;
    }

    /*
     * The heap runs from here to the end of RAM, which is known only at
     * run time (heap.c); __heap_end is the largest it can be.
     */
    . = ALIGN(16);
    __heap_start = .;
    __heap_end = RT_RAM_BASE + RT_RAM_MAX;
    __heap_size = __heap_end - __heap_start;

    /DISCARD/ : {
        *(.note .note.*)
        *(.eh_frame .eh_frame.*)
        *(.ARM.extab* .gnu.linkonce.armextab.*)
        *(.ARM.exidx*)
    }

    .comment 0 : { *(.comment) }
    .debug 0 : { *(.debug) }
    .debug_aranges 0 : { *(.debug_aranges) }
    .debug_info 0 : { *(.debug_info .gnu.linkonce.wi.*) }
    .debug_abbrev 0 : { *(.debug_abbrev) }
    .debug_line 0 : { *(.debug_line .debug_line.* .debug_line_end) }
    .debug_frame 0 : { *(.debug_frame) }
    .debug_str 0 : { *(.debug_str) }
    .debug_loc 0 : { *(.debug_loc) }
    .debug_macinfo 0 : { *(.debug_macinfo) }
    .debug_ranges 0 : { *(.debug_ranges) }
    .debug_addr 0 : { *(.debug_addr) }
    .debug_line_str 0 : { *(.debug_line_str) }
    .debug_loclists 0 : { *(.debug_loclists) }
    .debug_macro 0 : { *(.debug_macro) }
    .debug_names 0 : { *(.debug_names) }
    .debug_rnglists 0 : { *(.debug_rnglists) }
    .debug_str_offsets 0 : { *(.debug_str_offsets) }
}

ASSERT(__tls_align <= RT_TLS_ALIGN, "TLS alignment above RT_TLS_ALIGN")
ASSERT(__stacks_start % 4096 == 0, "stacks not page aligned")
ASSERT(__exc_stacks_start % 16 == 0, "exception stacks not aligned")
ASSERT(rt_vectors % 2048 == 0, "exception vectors not 2 KiB aligned")
ASSERT(__hot_rx_end - __hot_rx_start <= 4096,
       "RT_HOT_RX code outgrew its page (rt.h)")
ASSERT(__hot_tx_end - __hot_tx_start <= 4096,
       "RT_HOT_TX code outgrew its page (rt.h)")
