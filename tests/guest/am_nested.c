/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A handler never runs inside another (Tempest spec 2: the protocol
 * thread runs one handler at a time), also when it waits for room to
 * send while run inline.  On a one-vCPU node a fault runs the protocol
 * thread's work inline, IRQs masked and not in an interrupt; a handler
 * run there that sends more than the send ring and its credits hold
 * waits for room.  It once waited with rt_cpu_sleep(), whose WFI took
 * the node controller's pending interrupt and ran the protocol thread
 * inside the waiting handler: other handlers ran in the middle of it,
 * the global "current message" was overwritten (the handler's next
 * TPPI_recv_W read another message's word) and the receive ring's head
 * could be popped past a slot (its packet read a lap late, out of order).
 *
 * Node 0 sends itself BURST_H(COUNT, MAGIC) with IRQs masked, then reads
 * an invalid block: the fault's inline run takes BURST_H, which reads
 * COUNT, sends COUNT messages to node 1 and then reads MAGIC.  Node 1
 * answers each from its handler, so answers arrive at node 0 while the
 * burst waits for room.  Checked: no answer's handler ran inside the
 * burst, MAGIC read right, every answer counted once, in order.
 * Prints "am_nested ok".  (With a protocol CPU, --smp 2, the same
 * program checks the same on the dedicated thread.)
 */
#include <stdio.h>
#include <stdlib.h>

#include "am-util.h"
#include "tempest/rt.h"

#define MAGIC   0x5a17c0de

static volatile int in_burst;
static volatile uint64_t answers, nested;
static volatile int magic_read = -1;
static uint32_t next_answer;
static volatile int burst_done;

static void answer_h(TPPI_NodeId src, int size)
{
    uint32_t i = (uint32_t)TPPI_recv_W();

    (void)src;
    (void)size;
    if (in_burst) {
        nested++;
    }
    if (i != next_answer) {
        am_fail("answer %u, expected %u", (unsigned)i,
                (unsigned)next_answer);
    }
    next_answer = i + 1;
    answers++;
}

/* Node 1: answers every message from the handler (the reply network). */
static void echo_h(TPPI_NodeId src, int size)
{
    int i = TPPI_recv_W();

    (void)size;
    TPPI_send_W(src, answer_h, i);
}

static void burst_h(TPPI_NodeId src, int size)
{
    int count = TPPI_recv_W(), i;

    (void)src;
    (void)size;
    in_burst = 1;
    for (i = 0; i < count; i++) {
        TPPI_send_W(1, echo_h, i);
    }
    in_burst = 0;
    magic_read = TPPI_recv_W();
    burst_done = 1;
}

static void inline_fault_h(void *va, void *usr, TPPI_NodeId home)
{
    (void)usr;
    (void)home;
    TPPI_change_blk_acc(va, TPPI_TAG_BLK_SIZE, TPPI_Blk_Validate_RO);
    TPPI_resume_va(va, TPPI_TAG_BLK_SIZE);
}

static int burst_over(void *arg)
{
    (void)arg;
    return burst_done;
}

int main(int argc, char **argv)
{
    unsigned count = argc > 1 ? (unsigned)atoi(argv[1]) : 3000;
    char *blk = (char *)(uintptr_t)TPPI_SEGMENT_BASE;
    uint64_t flags, limit;
    int inline_run;

    am_barrier();
    if (TPPI_self_address == 0) {
        TPPI_register_blk_acc_fault_handler(1, TPPI_Blk_Invalid,
                                            TPPI_ReadAccess, inline_fault_h);
        if (!TPPI_alloc_and_map(blk, 1, TPPI_Blk_Invalid, 0, NULL)) {
            am_fail("TPPI_alloc_and_map failed");
        }
        inline_run = tempest_protocol_cpu() == 0;
        flags = rt_irq_save();
        TPPI_send_WW(0, burst_h, (int)count, MAGIC);
        limit = am_ticks() + 10000000ULL;
        while (inline_run && !rt_irq_pending() && am_ticks() < limit) {
            /* the message is in: its interrupt waits, masked */
        }
        (void)*(volatile char *)blk;
        rt_irq_restore(flags);
        tempest_wait(burst_over, NULL);
        am_wait_count(&answers, count);
        printf("am_nested: %u sent from a handler run %s, %llu answers, "
               "%llu of them handled inside it\n", count,
               inline_run ? "inline (by a fault)" : "on the protocol CPU",
               (unsigned long long)answers, (unsigned long long)nested);
        if (nested) {
            am_fail("%llu handlers ran inside the sending handler",
                    (unsigned long long)nested);
        }
        if (magic_read != MAGIC) {
            am_fail("the sending handler's second word read 0x%x, not "
                    "0x%x", (unsigned)magic_read, (unsigned)MAGIC);
        }
    }
    return am_finish("am_nested");
}
