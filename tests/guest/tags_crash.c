/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tempest section 2 (what is not a protocol event): faults that stop the
 * node with the runtime's crash report (status 134) after a libtempest
 * line saying why.  The argument chooses one:
 *   noblk   a load from an Invalid block of a page mode with no handler
 *   nopage  a store to an unmapped page with no page fault handler
 *   pt      a message handler (the protocol thread) loads from an
 *           Invalid block (the spec leaves that undefined)
 *   alias   a load from a segment page's frame through its unchecked alias
 *           succeeds whatever the tag (the library's path), then noblk
 */
#include <stdio.h>
#include <string.h>

#include "tags-util.h"
#include "tempest/rt.h"

#define MODE        4

static void loader_h(TPPI_NodeId src, int size)
{
    (void)src;
    (void)size;
    printf("handler loads %llu\n", (unsigned long long)tt_ldr(tt_page(0)));
}

static void some_handler(void *va, void *usr, TPPI_NodeId home)
{
    (void)va;
    (void)usr;
    (void)home;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "noblk";
    char *pg = tt_page(0);

    TPPI_alloc_and_map(pg, MODE, TPPI_Blk_Invalid, 0, NULL);
    /* A handler for another case of the same mode does not help. */
    TPPI_register_blk_acc_fault_handler(MODE, TPPI_Blk_Invalid,
                                        TPPI_WriteAccess, some_handler);
    fflush(stdout);
    if (!strcmp(what, "alias")) {
        tt_alias(pg)[8] = 42;
        printf("alias read %u\n", tt_ldrb(tt_alias(pg) + 8));
        what = "noblk";
    }
    if (!strcmp(what, "noblk")) {
        printf("load %llu\n", (unsigned long long)tt_ldr(pg + 8));
    } else if (!strcmp(what, "nopage")) {
        tt_str(tt_page(5) + 16, 1);
    } else if (!strcmp(what, "pt")) {
        TPPI_send(TPPI_self_address, loader_h);
        tempest_flush(0);
        rt_cpu_sleep(1000000);
    }
    printf("still running\n");
    return 0;
}
