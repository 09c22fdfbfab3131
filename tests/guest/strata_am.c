/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata section 6 (data-network primitives): every Send* variant carries
 * a handler and four word arguments (64-bit values and pointers intact,
 * missing ones 0); every Poll* variant handles exactly the messages of
 * the networks it names (checked with the messages already waiting in
 * the receive ring); a storm of requests answered from handlers on the
 * right network, every message counted; a handler address outside the
 * program is reported and dropped.
 */
#include "strata-util.h"
#include "tempest/nc.h"

#define STORM       400

/* volatile: set by handlers */
static volatile int got_args, left_n, right_n, requests, replies;
static int arg_errors;
static int marker;

static void args_h(int src, DoubleWord big, int *ptr, int neg)
{
    if (src != (Self + PartitionSize - 1) % PartitionSize ||
        big != 0x123456789abcdef0ULL || ptr != &marker || neg != -7) {
        arg_errors++;
    }
    got_args++;
}

static void one_arg_h(int a, int b, int c, int d)
{
    if (a != 99 || b || c || d) {
        arg_errors++;
    }
    got_args++;
}

static void left_h(void)
{
    left_n++;
}

static void right_h(void)
{
    right_n++;
}

static void reply_h(void)
{
    replies++;
}

static void request_h(int src, int i)
{
    requests++;
    /* Replies alternate RL and LR, polling only the right network. */
    if (i & 1) {
        SendBothRLPollRight(src, reply_h);
    } else {
        SendBothLRPollRight(src, reply_h);
    }
}

static void send_args(void)
{
    int to = (Self + 1) % PartitionSize;
    DoubleWord big = 0x123456789abcdef0ULL;

    SendBothRLPollBoth(to, args_h, Self, big, &marker, -7);
    SendBothLRPollBoth(to, args_h, Self, big, &marker, -7);
    SendBothRLPollRight(to, args_h, Self, big, &marker, -7);
    SendBothLRPollRight(to, args_h, Self, big, &marker, -7);
    SendLeftPollBoth(to, args_h, Self, big, &marker, -7);
    SendLeftPollBoth(to, one_arg_h, 99);
    st_wait_count(&got_args, 6);
    CHECK(arg_errors == 0, "%d messages had wrong arguments", arg_errors);
}

/* A barrier that never polls: messages stay where they are. */
static void quiet_barrier(void)
{
    StartBarrier();
    while (!QueryBarrier()) {
        /* ATOMIC: no handler runs */
    }
}

/*
 * Node 0 sends @l left and @r right messages to node 1; node 1 waits
 * until all are in its receive ring.
 */
static void batch(int l, int r)
{
    int to = 1, i;

    quiet_barrier();        /* node 1 is done with the last batch */
    left_n = 0;
    right_n = 0;
    if (Self == 0) {
        for (i = 0; i < l; i++) {
            SendLeftPollBoth(to, left_h);
        }
        for (i = 0; i < r; i++) {
            SendBothRLPollRight(to, right_h);
        }
    }
    quiet_barrier();
    if (Self == to && l + r) {
        while (!nc_rq_fill_at_least((uint32_t)(l + r))) {
            /* the packets are on their way */
        }
    }
}

#define EXPECT(l, r, what) \
    CHECK(left_n == (l) && right_n == (r), "%s: %d left and %d right " \
          "handled, expected %d and %d", what, left_n, right_n, l, r)

static void polls(void)
{
    bool rx = Self == 1;

    if (PartitionSize == 1) {
        return;     /* every send polls: a node cannot queue to itself */
    }
    batch(3, 3);
    if (rx) {
        PollRight();
        EXPECT(0, 1, "PollRight");
        PollLeft();
        EXPECT(1, 1, "PollLeft");
        PollBoth();
        EXPECT(2, 2, "PollBoth");
        PollLeftTilEmpty();
        EXPECT(3, 2, "PollLeftTilEmpty");
        PollRightTilEmpty();
        EXPECT(3, 3, "PollRightTilEmpty");
        PollBoth();
        EXPECT(3, 3, "PollBoth when empty");
    }
    batch(2, 4);
    if (rx) {
        PollLeftThenBothTilEmpty();
        EXPECT(2, 4, "PollLeftThenBothTilEmpty");
    }
    batch(0, 2);
    if (rx) {
        PollLeftThenBothTilEmpty();
        EXPECT(0, 0, "PollLeftThenBothTilEmpty with no left message");
        PollRightThenBothTilEmpty();
        EXPECT(0, 2, "PollRightThenBothTilEmpty");
    }
    batch(3, 0);
    if (rx) {
        PollRightThenBothTilEmpty();
        EXPECT(0, 0, "PollRightThenBothTilEmpty with no right message");
        PollBothTilEmpty();
        EXPECT(3, 0, "PollBothTilEmpty");
    }
    quiet_barrier();
}

/* Every node sends STORM requests to every node, mixing the variants. */
static void storm(void)
{
    int to, i;

    requests = 0;
    replies = 0;
    Barrier();
    for (i = 0; i < STORM; i++) {
        for (to = 0; to < PartitionSize; to++) {
            switch ((i + to) % 5) {
            case 0:
                SendBothRLPollBoth(to, request_h, Self, i);
                break;
            case 1:
                SendBothLRPollBoth(to, request_h, Self, i);
                break;
            case 2:
                SendLeftPollBoth(to, request_h, Self, i);
                break;
            case 3:
                SendBothRLPollRight(to, request_h, Self, i);
                PollLeft();
                break;
            default:
                SendBothLRPollRight(to, request_h, Self, i);
                PollLeft();
                break;
            }
        }
    }
    st_wait_count(&replies, STORM * PartitionSize);
    st_wait_count(&requests, STORM * PartitionSize);
    Barrier();
    CHECK(requests == STORM * PartitionSize && replies == requests,
          "storm: %d requests and %d replies, expected %d", requests,
          replies, STORM * PartitionSize);
}

int main(void)
{
    StrataInit();
    send_args();
    Barrier();
    polls();
    storm();
    if (Self == 0) {
        SendLeftPollBoth(PartitionSize - 1, (void (*)())0x10);
    }
    st_finish("strata_am");
}
