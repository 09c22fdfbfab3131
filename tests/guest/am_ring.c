/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Token ring (Tempest spec 3.3.2-3.3.3, handlers sending from handlers on
 * the reply network): every node starts one token carrying a hop count
 * and a 64-byte payload; each hop's handler checks that the token came
 * from the previous node with the right count and passes it on to the
 * next node ((self + 1) % N) with a W and an F item; after ROUNDS laps
 * it is back home, where the payload is checked.  Usage: am_ring
 * [ROUNDS].  Prints "am_ring ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am-util.h"

#define PAYLOAD     64

static unsigned rounds = 200;
static uint64_t done;
static uint64_t hops;

static void token_h(TPPI_NodeId src, int size)
{
    unsigned origin = (unsigned)TPPI_recv_W();
    unsigned hop = (unsigned)TPPI_recv_W();
    TPPI_NodeId n = TPPI_num_nodes;
    uint32_t payload[PAYLOAD / 4];
    unsigned i;

    hops++;
    if (size != 8 + PAYLOAD || src != (TPPI_self_address + n - 1) % n ||
        (origin + hop) % n != TPPI_self_address) {
        am_fail("token from %u (origin %u, hop %u, %d bytes) at node %u",
                src, origin, hop, size, TPPI_self_address);
    }
    if (hop == rounds * n) {
        TPPI_recv_R(payload, PAYLOAD);
        for (i = 0; i < PAYLOAD / 4; i++) {
            if (payload[i] != origin * 1000 + i) {
                am_fail("token of node %u came back damaged", origin);
                break;
            }
        }
        done++;
        return;
    }
    TPPI_send_WWF((TPPI_self_address + 1) % n, token_h, (int)origin,
                  (int)(hop + 1), PAYLOAD);
}

int main(int argc, char **argv)
{
    uint32_t payload[PAYLOAD / 4];
    unsigned i;

    if (argc > 1) {
        rounds = (unsigned)atoi(argv[1]);
    }
    for (i = 0; i < PAYLOAD / 4; i++) {
        payload[i] = TPPI_self_address * 1000 + i;
    }
    am_barrier();
    TPPI_send_WWR((TPPI_self_address + 1) % TPPI_num_nodes, token_h,
                  (int)TPPI_self_address, 1, payload, PAYLOAD);
    am_wait_count(&done, 1);
    printf("token back after %u laps of %u nodes; %llu hops handled here\n",
           rounds, TPPI_num_nodes, (unsigned long long)hops);
    return am_finish("am_ring");
}
