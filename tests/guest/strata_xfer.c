/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata section 7 (block transfers): the port table, SendBlockXferPollBoth
 * and SendBlockXferPollRight of 1 to 5000 words at positive and negative
 * offsets, StrataXferHeaderHandler arriving before the data and after it
 * (the count going negative first), the port handler run exactly once at
 * zero; 7.1: PortAndOffsetCons/Port/Offset at their limits, the four
 * single-packet Xfer sends and the Put1/2/3 handlers.  Each node sends to
 * the next one (to itself on one node).
 */
#include <stdbool.h>
#include <string.h>

#include "strata-util.h"

#define AREA        12000
#define MID         6000

static Word area[AREA];
static Word src[AREA];
/* volatile: set by handlers */
static volatile int done_count[STRATA_NUM_PORTS];

static void port_done(int port)
{
    done_count[port]++;
}

static void other_done(int port)
{
    done_count[port] += 100;
}

static Word pattern(int from, int i)
{
    return (Word)(from << 24) ^ (Word)(i * 2654435761U);
}

static int next_node(void)
{
    return (Self + 1) % PartitionSize;
}

static int prev_node(void)
{
    return (Self + PartitionSize - 1) % PartitionSize;
}

static void port_and_offset(void)
{
    static const int offsets[] = {
        STRATA_MIN_XFER_OFFSET, -12345, -1, 0, 1, 777,
        STRATA_MAX_XFER_OFFSET,
    };
    static const unsigned ports[] = { 0, 1, 2048, STRATA_NUM_PORTS - 1 };
    unsigned p, o, pao;

    CHECK(STRATA_NUM_PORTS == 4096 && STRATA_MIN_XFER_OFFSET == -(1 << 19) &&
          STRATA_MAX_XFER_OFFSET == (1 << 19) - 1, "constants");
    for (p = 0; p < 4; p++) {
        for (o = 0; o < sizeof(offsets) / sizeof(offsets[0]); o++) {
            pao = PortAndOffsetCons(ports[p], offsets[o]);
            CHECK(PortAndOffsetPort(pao) == ports[p] &&
                  PortAndOffsetOffset(pao) == offsets[o],
                  "port %u offset %d: got %u %d", ports[p], offsets[o],
                  PortAndOffsetPort(pao), PortAndOffsetOffset(pao));
            CHECK((pao & 0xfff) == ports[p], "port in the low 12 bits");
        }
    }
}

/* Receiver side of one transfer into port at area[MID + off]. */
static void open_port(unsigned port, int count, void (*h)())
{
    memset(area, 0, sizeof(area));
    StrataPortTable[port].base = area + MID;
    StrataPortTable[port].count = count;
    StrataPortTable[port].handler = h;
    done_count[port] = 0;
}

static bool check_area(int from, int off, int size)
{
    int i, bad = 0;

    for (i = 0; i < AREA; i++) {
        bool in = i >= MID + off && i < MID + off + size;
        Word want = in ? pattern(from, i - MID - off) : 0;

        bad += area[i] != want;
    }
    return bad == 0;
}

/* Data sized @size at @off, the receiver expecting it (count preset). */
static void plain(unsigned port, int size, int off, bool right)
{
    int i;

    open_port(port, size, port_done);
    for (i = 0; i < size; i++) {
        src[i] = pattern(Self, i);
    }
    Barrier();
    if (right) {
        SendBlockXferPollRight(next_node(), port, off, src, size);
    } else {
        SendBlockXferPollBoth(next_node(), port, off, src, size);
    }
    st_wait_count(&done_count[port], 1);
    Barrier();
    CHECK(done_count[port] == 1, "port %u: handler ran %d times", port,
          done_count[port]);
    CHECK(StrataPortTable[port].count == 0, "port %u count %d", port,
          StrataPortTable[port].count);
    CHECK(check_area(prev_node(), off, size), "%d words at offset %d "
          "(%s) arrived wrong", size, off, right ? "PollRight" : "PollBoth");
}

/*
 * The header after all the data: the count goes to -size first and the
 * handler runs when the header brings it to 0.
 */
static void data_first(unsigned port, int size)
{
    int i;

    open_port(port, 0, NULL);
    for (i = 0; i < size; i++) {
        src[i] = pattern(Self, i);
    }
    Barrier();
    SendBlockXferPollRight(next_node(), port, -size / 2, src, size);
    /* The header is sent only after the next barrier. */
    while (StrataPortTable[port].count != -size) {
        PollBothTilEmpty();
    }
    CHECK(StrataPortTable[port].count == -size, "data first: count %d, "
          "expected %d", StrataPortTable[port].count, -size);
    CHECK(done_count[port] == 0, "handler ran before the header");
    Barrier();
    SendLeftPollBoth(next_node(), StrataXferHeaderHandler, port, size,
                     port_done);
    st_wait_count(&done_count[port], 1);
    Barrier();
    CHECK(done_count[port] == 1 && StrataPortTable[port].count == 0,
          "data first: handler %d, count %d", done_count[port],
          StrataPortTable[port].count);
    CHECK(check_area(prev_node(), -size / 2, size), "data first: data");
}

/* The header first: the count rises to size, the data brings it to 0. */
static void header_first(unsigned port, int size, bool handler_set)
{
    open_port(port, 0, handler_set ? other_done : NULL);
    for (int i = 0; i < size; i++) {
        src[i] = pattern(Self, i);
    }
    Barrier();
    SendLeftPollBoth(next_node(), StrataXferHeaderHandler, port, size,
                     port_done);
    while (StrataPortTable[port].count != size) {
        PollBothTilEmpty();
    }
    CHECK(done_count[port] == 0, "header first: handler ran early");
    Barrier();
    SendBlockXferPollBoth(next_node(), port, 0, src, size);
    st_wait_count(&done_count[port], 1);
    Barrier();
    /* The header does not replace a handler already set. */
    CHECK(done_count[port] == (handler_set ? 100 : 1), "header first: "
          "handler %d", done_count[port]);
    CHECK(check_area(prev_node(), 0, size), "header first: data");
}

static void single_packets(unsigned port)
{
    unsigned pao;

    open_port(port, 16 + 6, port_done);
    Barrier();
    pao = PortAndOffsetCons(port, -8);
    SendXferBothRLPollBoth(next_node(), pao, pattern(Self, 0),
                           pattern(Self, 1), pattern(Self, 2),
                           pattern(Self, 3));
    pao = PortAndOffsetCons(port, -4);
    SendXferBothLRPollBoth(next_node(), pao, pattern(Self, 4),
                           pattern(Self, 5), pattern(Self, 6),
                           pattern(Self, 7));
    pao = PortAndOffsetCons(port, 0);
    SendXferBothRLPollRight(next_node(), pao, pattern(Self, 8),
                            pattern(Self, 9), pattern(Self, 10),
                            pattern(Self, 11));
    pao = PortAndOffsetCons(port, 4);
    SendXferBothLRPollRight(next_node(), pao, pattern(Self, 12),
                            pattern(Self, 13), pattern(Self, 14),
                            pattern(Self, 15));
    SendLeftPollBoth(next_node(), StrataXferPut3Handler,
                     PortAndOffsetCons(port, 8), pattern(Self, 16),
                     pattern(Self, 17), pattern(Self, 18));
    SendLeftPollBoth(next_node(), StrataXferPut2Handler,
                     PortAndOffsetCons(port, 11), pattern(Self, 19),
                     pattern(Self, 20));
    SendBothRLPollBoth(next_node(), StrataXferPut1Handler,
                       PortAndOffsetCons(port, 13), pattern(Self, 21));
    st_wait_count(&done_count[port], 1);
    Barrier();
    CHECK(done_count[port] == 1, "single packets: handler %d",
          done_count[port]);
    CHECK(check_area(prev_node(), -8, 22), "single packets: data");
}

int main(void)
{
    static const int sizes[] = { 1, 3, 4, 55, 56, 57, 113, 1000, 5000 };
    unsigned s;

    StrataInit();
    port_and_offset();
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        plain(10 + s, sizes[s], s % 2 ? -(sizes[s] / 3) : (int)s, s % 3 == 2);
    }
    plain(STRATA_NUM_PORTS - 1, 77, -77, false);
    data_first(100, 300);
    data_first(101, 1);
    header_first(200, 500, false);
    header_first(201, 60, true);
    single_packets(300);
    st_finish("strata_xfer");
}
