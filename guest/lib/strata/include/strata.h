/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libstrata: the C binding of Strata (Brewer and Blumofe, "Strata: A
 * Multi-Layer Communications Library", version 2.0 beta, MIT LCS 1994)
 * on the tempest machine.  Section numbers below are the manual's;
 * docs/strata.rst says how each part maps onto the node controller.
 *
 * Execution model, as on the CM-5:
 *  - One thread of control per node (CPU 0); interrupts stay off.  A
 *    handler runs only when the program polls: in a Poll* call, in a
 *    Send* call (which polls as its name says), or while a blocking call
 *    (one not marked ATOMIC) waits.  ATOMIC calls never poll.
 *  - The control network (barriers, global OR, combines, broadcasts) is
 *    done by the node controllers as a combining tree (version 1.2 of the
 *    device); every node must start the same control operations in the
 *    same order.
 *  - Two data networks: "left" is the device's request network, "right"
 *    its reply network.  A message is a handler and four word
 *    arguments.
 *  - A call given arguments it cannot honour (a node outside the
 *    partition, a port out of range, an unknown CombineOp, ...) ends the
 *    program through StrataFail() with a message naming the call, unless
 *    its description says otherwise.
 *  - With libtempest in the same program (any TPPI_ or tempest_ call):
 *    StrataInit() makes libstrata a client of libtempest's protocol
 *    thread, which owns the rings and the interrupt (docs/strata.rst,
 *    "Strata with libtempest").  Every call above behaves the same;
 *    Strata's handlers still run only when the program polls, while
 *    libtempest's run as libtempest says (on a one-vCPU node, from its
 *    interrupt, anywhere).  Strata calls belong to computation code: one
 *    that waits, called from a handler of libtempest's, ends the node
 *    with StrataFail().
 *
 * Names are the manual's.  The few additions, marked "extension", are
 * StrataSetSpin(), SetStateName(), STRATA_CYCLE_HZ and
 * StrataTimingOverhead; strata_cycles64(), STRATA_SYM and the Send*
 * macros' padding are this header's own machinery.
 *
 * Debugging mode (section 9.3): compile with -DSTRATA_DEBUG.  Every
 * Strata symbol is then renamed (strataD_*), so the program links with
 * libstrataD.a, the debugging library, instead of libstrata.a; both are
 * on the link line of 'scripts/tempest cc'.  All files of one program
 * must agree on STRATA_DEBUG.
 *
 * strata.h redefines exit() and assert() (section 3.5, 9.2): include it
 * after <stdlib.h> and <assert.h>.
 */
#ifndef STRATA_H
#define STRATA_H

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef STRATA_DEBUG
#define STRATA_SYM(name)    __asm__("strataD_" #name)
#else
#define STRATA_SYM(name)
#endif

/* ---- 3.1 Type qualifiers -------------------------------------------- */
#define ATOMIC                  /* does not poll */
#define NORETURN                __attribute__((noreturn)) void
#define HANDLER                 /* runs as a message handler */
#define INLINE                  inline

/* ---- 3.3 Types --------------------------------------------------------- */
typedef uint32_t Word;
typedef uint64_t DoubleWord;
typedef int Bool;
#ifndef True
#define True                    1
#define False                   0
#endif

/* ---- 3.2 Globals -------------------------------------------------------- */
/* This node's number, 0 .. PartitionSize - 1 (set by StrataInit). */
extern int Self STRATA_SYM(Self);
/* The number of nodes. */
extern int PartitionSize STRATA_SYM(PartitionSize);
/*
 * log2 of PartitionSize, rounded up (the CM-5's partitions were powers of
 * two; here any size from 1 to 1024 is possible): 0 for one node, 3 for 5.
 */
extern int logPartitionSize STRATA_SYM(logPartitionSize);
/* (1 << logPartitionSize) - 1: the bits a node number may have. */
extern int PartitionMask STRATA_SYM(PartitionMask);
/* "Strata 2.0 beta (tempest) <date>" */
extern char *StrataVersion STRATA_SYM(StrataVersion);
extern float StrataVersionNumber STRATA_SYM(StrataVersionNumber);

/* ---- 3.4 Macros --------------------------------------------------------- */
#define LEFTMOST                (Self == 0)
#define RIGHTMOST               (Self == PartitionSize - 1)

/* ---- 3.5 Procedures ----------------------------------------------------- */
/*
 * StrataInit: initialises Strata; call it on every node before any other
 * Strata call except InitTrace() and the ATOMIC helpers of 3.6 and 9.4.
 * It sets up the device's rings, the globals, the random seed (Self + 1),
 * the cycle counter and its calibration, sets this node's asynchronous
 * global-OR bit to True, and ends with a barrier, whose end is the time
 * origin of state graphs.  Interrupts stay off (with libtempest in the
 * program, they stay as libtempest set them).  A node controller
 * without messaging or the control network ends the node with status 1
 * and a message.  A second call does nothing.
 */
void StrataInit(void) STRATA_SYM(StrataInit);

/*
 * StrataExit: ends the program.  code 0: the node writes out its queued
 * Qprintf()s and recorded states, then idles, handling messages, until
 * every node has reached StrataExit and no message is in flight, and
 * exits with status 0.  Any other code: the node exits at once with
 * status code & 0xff (-1 gives 255), and the launcher stops the other
 * nodes.  Returning from main() behaves as StrataExit(0) with main's
 * status.  Never returns.
 */
NORETURN StrataExit(int code) STRATA_SYM(StrataExit);

/*
 * StrataFail: prints "StrataFail: " and the printf-style message on
 * stderr (and in the Strata log), then StrataExit(-1): status 255.
 */
NORETURN StrataFail(const char *fmt, ...) STRATA_SYM(StrataFail)
    __attribute__((format(printf, 1, 2)));

/*
 * ClearMemory: zeroes length_in_bytes bytes at region with 64-bit stores
 * (bytes at unaligned ends).  A NULL region with length 0 does nothing.
 */
ATOMIC void ClearMemory(void *region, unsigned length_in_bytes)
    STRATA_SYM(ClearMemory);

/* ---- 3.6 Random-number generator --------------------------------------- */
/* SetRandomSeed(TIME_BASED_SEED) picks a seed from the clock and Self. */
#define TIME_BASED_SEED         0xFFFFFFFFU

/*
 * Random: returns the next value of this node's Park-Miller "minimal
 * standard" generator (seed = seed * 16807 mod (2^31 - 1)), in
 * 1 .. 2^31 - 2.  The default seed is Self + 1.
 */
ATOMIC unsigned Random(void) STRATA_SYM(Random);

/*
 * SetRandomSeed: sets this node's seed and returns the seed actually
 * used: seed mod (2^31 - 1), or 1 if that is 0; for TIME_BASED_SEED one
 * made from the cycle counter and Self.  Passing the returned value again
 * repeats the sequence.
 */
ATOMIC unsigned SetRandomSeed(unsigned seed) STRATA_SYM(SetRandomSeed);

/* ---- 4.1 Barriers ------------------------------------------------------- */
/*
 * Only one control-network operation is in progress on a node at a time:
 * a Start* while another split-phase operation is pending first waits
 * (without polling) until that one completes, keeping its result for its
 * Complete* call.  A control-network failure (nodes starting different
 * operations, a node gone) ends the program through StrataFail().
 */

/* Barrier: returns when every node has reached it (GlobalOR(False)). */
void Barrier(void) STRATA_SYM(Barrier);
/* StartBarrier: starts a split-phase barrier. */
ATOMIC void StartBarrier(void) STRATA_SYM(StartBarrier);
/* QueryBarrier: True iff the last barrier has completed. */
ATOMIC Bool QueryBarrier(void) STRATA_SYM(QueryBarrier);
/* CompleteBarrier: returns when the last barrier has completed. */
void CompleteBarrier(void) STRATA_SYM(CompleteBarrier);

/* ---- 4.2 Global OR ------------------------------------------------------ */
/* GlobalOR: returns True iff some node passed a non-zero not_done. */
Bool GlobalOR(Bool not_done) STRATA_SYM(GlobalOR);
/* StartGlobalOR: starts a split-phase global OR. */
ATOMIC void StartGlobalOR(Bool not_done) STRATA_SYM(StartGlobalOR);
/* QueryGlobalOR: True iff the last global OR has completed. */
ATOMIC Bool QueryGlobalOR(void) STRATA_SYM(QueryGlobalOR);
/*
 * CompleteGlobalOR: returns the result of the last global OR, waiting for
 * it if needed (False if no global OR was ever started).
 */
Bool CompleteGlobalOR(void) STRATA_SYM(CompleteGlobalOR);
/*
 * SetAsyncGlobalOR: sets this node's asynchronous global-OR bit (True
 * after StrataInit).  It reaches the other nodes within a few network
 * hops.
 */
ATOMIC void SetAsyncGlobalOR(Bool not_done) STRATA_SYM(SetAsyncGlobalOR);
/*
 * GetAsyncGlobalOR: True iff some node's asynchronous bit is set, as far
 * as this node knows yet (the value is eventually consistent).
 */
ATOMIC Bool GetAsyncGlobalOR(void) STRATA_SYM(GetAsyncGlobalOR);

/* ---- 4.3 Combine operations --------------------------------------------- */
typedef enum {
    ScanAdd, BackScanAdd, ReduceAdd,
    ScanOr, BackScanOr, ReduceOr,
    ScanXor, BackScanXor, ReduceXor,
    ScanUadd, BackScanUadd, ReduceUadd,
    ScanMax, BackScanMax, ReduceMax
} CombineOp;

/*
 * Scans are exclusive: node i gets the combination of the values of the
 * nodes before it in its segment (after it, for BackScan); the first node
 * of a segment gets the identity (0; INT_MIN for Max).  Add and Max are
 * signed, Uadd unsigned; sums wrap at 32 bits.
 */

/* ---- 4.3.1 Segmented scans ---------------------------------------------- */
typedef enum {
    NoBoundary, ElementBoundary, ArrayBoundary
} SegmentType;

/*
 * SetSegment: sets this node's segment boundary for the scans it starts
 * from now on (NoBoundary everywhere at first: one segment).  A value
 * that is not a SegmentType fails.
 */
ATOMIC void SetSegment(SegmentType boundary) STRATA_SYM(SetSegment);
/* CurrentSegment: returns this node's segment setting. */
ATOMIC SegmentType CurrentSegment(void) STRATA_SYM(CurrentSegment);

/* ---- 4.3.2 Combine procedures ------------------------------------------- */
/* CombineInt: every node contributes value; returns this node's result. */
int CombineInt(int value, CombineOp kind) STRATA_SYM(CombineInt);
/* StartCombineInt: starts a split-phase CombineInt. */
ATOMIC void StartCombineInt(int value, CombineOp kind)
    STRATA_SYM(StartCombineInt);
/* QueryCombineInt: True iff the last combine has completed. */
ATOMIC Bool QueryCombineInt(void) STRATA_SYM(QueryCombineInt);
/*
 * CompleteCombineInt: returns the result of the pending (or last)
 * CombineInt, waiting for it if needed (0 if none was ever started).
 */
int CompleteCombineInt(void) STRATA_SYM(CompleteCombineInt);
/*
 * CombineVector: element-wise combine of num_elements ints: from is this
 * node's contribution, to (which may be from) receives the results.
 * Every node must pass the same num_elements; 0 or less does nothing.
 * The device combines up to 64 elements at a time.
 */
void CombineVector(int to[], int from[], CombineOp kind, int num_elements)
    STRATA_SYM(CombineVector);
/*
 * StartCombineVector: starts a split-phase CombineVector.  from must stay
 * unchanged and to untouched until CompleteCombineVector(); past 64
 * elements the rest is done by CompleteCombineVector.
 */
void StartCombineVector(int to[], int from[], CombineOp kind,
                        int num_elements) STRATA_SYM(StartCombineVector);
/* CompleteCombineVector: waits until the pending vector combine is done. */
void CompleteCombineVector(void) STRATA_SYM(CompleteCombineVector);

/* ---- 4.4 Broadcast operations ------------------------------------------- */
/*
 * Broadcasts from all nodes reach every other node in one order; a node
 * never receives its own.  A node can hold 4096 undelivered words (a
 * BroadcastVector paces itself with barriers past that).
 */

/*
 * Broadcast: sends value to every other node.  Waits (without polling)
 * while this node's previous broadcast is undelivered.
 */
ATOMIC void Broadcast(Word value) STRATA_SYM(Broadcast);
/* QueryBroadcast: True iff this node's last broadcast has been delivered. */
ATOMIC Bool QueryBroadcast(void) STRATA_SYM(QueryBroadcast);
/* ReceiveBroadcast: waits for and returns the next broadcast word. */
Word ReceiveBroadcast(void) STRATA_SYM(ReceiveBroadcast);
/* BroadcastDouble: sends a double to every other node (one word here). */
ATOMIC void BroadcastDouble(double value) STRATA_SYM(BroadcastDouble);
/* ReceiveBroadcastDouble: waits for and returns the next broadcast. */
double ReceiveBroadcastDouble(void) STRATA_SYM(ReceiveBroadcastDouble);
/*
 * BroadcastVector: sends num_elements words of from to every other node
 * (two per device word) and copies them to to.  Returns when all are
 * sent.  Every other node must call ReceiveBroadcastVector with the same
 * num_elements; the broadcaster may too, with the same to (it returns at
 * once).
 */
void BroadcastVector(Word to[], Word from[], int num_elements)
    STRATA_SYM(BroadcastVector);
/* ReceiveBroadcastVector: receives num_elements words into to. */
void ReceiveBroadcastVector(Word to[], int num_elements)
    STRATA_SYM(ReceiveBroadcastVector);

/* ---- 5 Composite reductions --------------------------------------------- */
typedef enum {
    Min, Max, Average, Variance, Median
} CompositeOp;

/*
 * Every node contributes a value and every node gets the same result:
 * Min, Max; Average (the sum wraps as ReduceAdd's, then is divided,
 * rounding toward zero); Variance, the sample variance (0 on one node),
 * computed as (sum x^2 - (sum x)^2 / n) / (n - 1) in double precision;
 * Median, the smaller middle value for an even count.  Segments are
 * ignored.  An unknown op fails.
 */
int CompositeInt(int value, CompositeOp op) STRATA_SYM(CompositeInt);
unsigned CompositeUint(unsigned value, CompositeOp op)
    STRATA_SYM(CompositeUint);
float CompositeFloat(float value, CompositeOp op) STRATA_SYM(CompositeFloat);

/* ---- 6 Data-network primitives ------------------------------------------ */
/*
 * The Send* calls take a handler and up to four arguments; the handler
 * runs on node proc as handler(arg1, arg2, arg3, arg4) when proc polls.
 * Arguments travel as 64-bit words: integers (of at most 64 bits) and
 * pointers arrive intact; floating-point arguments are not supported.
 * Missing arguments arrive as 0.  Messages from one node on one network
 * are handled in the order they were sent.  A proc outside the partition
 * or a NULL handler fails; a handler address outside the program's code
 * is reported on the receiver and the message dropped.
 */
void SendBothRLPollBoth(int proc, void (*handler)(), ...)
    STRATA_SYM(SendBothRLPollBoth);
void SendBothLRPollBoth(int proc, void (*handler)(), ...)
    STRATA_SYM(SendBothLRPollBoth);
void SendBothRLPollRight(int proc, void (*handler)(), ...)
    STRATA_SYM(SendBothRLPollRight);
void SendBothLRPollRight(int proc, void (*handler)(), ...)
    STRATA_SYM(SendBothLRPollRight);
void SendLeftPollBoth(int proc, void (*handler)(), ...)
    STRATA_SYM(SendLeftPollBoth);

#ifndef STRATA_NO_SEND_MACROS
/* Pad the arguments so that the library always reads four. */
#define SendBothRLPollBoth(proc, ...) \
    SendBothRLPollBoth(proc, __VA_ARGS__, (DoubleWord)0, (DoubleWord)0, \
        (DoubleWord)0, (DoubleWord)0)
#define SendBothLRPollBoth(proc, ...) \
    SendBothLRPollBoth(proc, __VA_ARGS__, (DoubleWord)0, (DoubleWord)0, \
        (DoubleWord)0, (DoubleWord)0)
#define SendBothRLPollRight(proc, ...) \
    SendBothRLPollRight(proc, __VA_ARGS__, (DoubleWord)0, (DoubleWord)0, \
        (DoubleWord)0, (DoubleWord)0)
#define SendBothLRPollRight(proc, ...) \
    SendBothLRPollRight(proc, __VA_ARGS__, (DoubleWord)0, (DoubleWord)0, \
        (DoubleWord)0, (DoubleWord)0)
#define SendLeftPollBoth(proc, ...) \
    SendLeftPollBoth(proc, __VA_ARGS__, (DoubleWord)0, (DoubleWord)0, \
        (DoubleWord)0, (DoubleWord)0)
#endif

/* ---- 6.2 Receiving messages --------------------------------------------- */
/* PollLeft: handles at most one message of the left network. */
void PollLeft(void) STRATA_SYM(PollLeft);
/* PollRight: handles at most one message of the right network. */
void PollRight(void) STRATA_SYM(PollRight);
/* PollBoth: PollLeft() then PollRight(). */
void PollBoth(void) STRATA_SYM(PollBoth);
/* PollLeftTilEmpty: handles left messages until none is pending. */
void PollLeftTilEmpty(void) STRATA_SYM(PollLeftTilEmpty);
/* PollRightTilEmpty: handles right messages until none is pending. */
void PollRightTilEmpty(void) STRATA_SYM(PollRightTilEmpty);
/* PollBothTilEmpty: handles messages until neither network has one. */
void PollBothTilEmpty(void) STRATA_SYM(PollBothTilEmpty);
/*
 * PollLeftThenBothTilEmpty: polls the left network; if it had a message,
 * goes on as PollBothTilEmpty().
 */
void PollLeftThenBothTilEmpty(void) STRATA_SYM(PollLeftThenBothTilEmpty);
/* PollRightThenBothTilEmpty: the same, starting with the right network. */
void PollRightThenBothTilEmpty(void) STRATA_SYM(PollRightThenBothTilEmpty);

/* ---- 7 Block transfers -------------------------------------------------- */
#define STRATA_NUM_PORTS        4096
#define STRATA_MIN_XFER_OFFSET  (-(1 << 19))
#define STRATA_MAX_XFER_OFFSET  ((1 << 19) - 1)

typedef struct {
    Word *base;             /* where offset 0 of a transfer lands */
    int count;              /* words still expected; handler at 0 */
    void (*handler)();      /* handler(port_num) when count reaches 0 */
    int user1;
    int user2;
    int user3;
    int user4;
    int user5;
} StrataPort;

extern StrataPort StrataPortTable[STRATA_NUM_PORTS]
    STRATA_SYM(StrataPortTable);

/*
 * SendBlockXferPollBoth: sends size words from buffer to port port_num of
 * node proc, stored at StrataPortTable[port_num].base + offset there;
 * each arriving packet subtracts its words from the port's count and the
 * port's handler runs when the count reaches 0.  Packets go on both
 * networks (up to 56 words each); polls both.  The destination port's
 * base must be set before data arrives (a packet for a port with no base
 * is reported and dropped).  size 0 or less sends nothing.  A port out of
 * range, an offset below STRATA_MIN_XFER_OFFSET or offset + size above
 * STRATA_MAX_XFER_OFFSET fails.
 */
void SendBlockXferPollBoth(int proc, unsigned port_num, int offset,
                           Word *buffer, int size)
    STRATA_SYM(SendBlockXferPollBoth);
/* SendBlockXferPollRight: the same, polling only the right network. */
void SendBlockXferPollRight(int proc, unsigned port_num, int offset,
                            Word *buffer, int size)
    STRATA_SYM(SendBlockXferPollRight);

/*
 * StrataXferHeaderHandler: adds size to the port's count, sets its
 * handler if it has none, and runs the handler if the count is then 0
 * (data that arrived first left it negative).  Send it as an active
 * message: SendLeftPollBoth(proc, StrataXferHeaderHandler, port, size,
 * handler).  A port out of range is reported and ignored.
 */
HANDLER void StrataXferHeaderHandler(int port_num, int size,
                                     void (*handler)())
    STRATA_SYM(StrataXferHeaderHandler);

/* ---- 7.1 Xfer messages -------------------------------------------------- */
/*
 * PortAndOffsetCons: packs port_num (low 12 bits) and offset (high 20
 * bits, signed) into one word; out-of-range values are truncated to
 * their fields.
 */
static INLINE unsigned PortAndOffsetCons(unsigned port_num, int offset)
{
    return (port_num & (STRATA_NUM_PORTS - 1)) | ((unsigned)offset << 12);
}

/* PortAndOffsetPort: the port number of a packed port_and_offset. */
static INLINE unsigned PortAndOffsetPort(unsigned port_and_offset)
{
    return port_and_offset & (STRATA_NUM_PORTS - 1);
}

/* PortAndOffsetOffset: the (signed) offset of a packed port_and_offset. */
static INLINE int PortAndOffsetOffset(unsigned port_and_offset)
{
    return (int)port_and_offset >> 12;
}

/*
 * Single-packet Xfer messages: four words to port_and_offset on node
 * proc, choosing and polling the networks as the Send* of section 6.
 */
void SendXferBothRLPollBoth(int proc, unsigned port_and_offset, Word data1,
                            Word data2, Word data3, Word data4)
    STRATA_SYM(SendXferBothRLPollBoth);
void SendXferBothLRPollBoth(int proc, unsigned port_and_offset, Word data1,
                            Word data2, Word data3, Word data4)
    STRATA_SYM(SendXferBothLRPollBoth);
void SendXferBothRLPollRight(int proc, unsigned port_and_offset, Word data1,
                             Word data2, Word data3, Word data4)
    STRATA_SYM(SendXferBothRLPollRight);
void SendXferBothLRPollRight(int proc, unsigned port_and_offset, Word data1,
                             Word data2, Word data3, Word data4)
    STRATA_SYM(SendXferBothLRPollRight);

/*
 * The Put handlers, for the 1 to 3 words left over: send them as active
 * messages (e.g. SendLeftPollBoth(proc, StrataXferPut2Handler, pao, d1,
 * d2)); each stores its words at the port, subtracts them from its count
 * and runs its handler at 0.  A port with no base is reported.
 */
HANDLER void StrataXferPut3Handler(unsigned port_and_offset, Word data1,
                                   Word data2, Word data3)
    STRATA_SYM(StrataXferPut3Handler);
HANDLER void StrataXferPut2Handler(unsigned port_and_offset, Word data1,
                                   Word data2)
    STRATA_SYM(StrataXferPut2Handler);
HANDLER void StrataXferPut1Handler(unsigned port_and_offset, Word data1)
    STRATA_SYM(StrataXferPut1Handler);

/* ---- 8 Multi-block transfer --------------------------------------------- */
/* A pending asynchronous transfer; -1 is never one. */
typedef int ABXid;

/*
 * AsyncBlockXfer: queues a block transfer (arguments as
 * SendBlockXferPollBoth) and returns its id; nothing is sent yet.
 * complete, if not NULL, runs as complete(id, buffer) once the last
 * packet is sent.  Bad arguments fail as SendBlockXferPollBoth's; with
 * 4096 transfers pending it first services them until one finishes.
 */
ABXid AsyncBlockXfer(int proc, unsigned port, int offset, Word *buffer,
                     int size, void (*complete)(ABXid id, Word *buffer))
    STRATA_SYM(AsyncBlockXfer);
/*
 * ServiceAllTransfers: sends up to 2 * rounds packets of every pending
 * transfer, one transfer after the other in turn (so their packets
 * interleave), polling both networks; rounds -1: until none is pending.
 * rounds 0 does nothing.
 */
void ServiceAllTransfers(int rounds) STRATA_SYM(ServiceAllTransfers);
/* CompleteTransfer: sends what is left of transfer id (none if done). */
void CompleteTransfer(ABXid id) STRATA_SYM(CompleteTransfer);
/*
 * The transfer's destination node, port, offset, buffer and words not
 * yet sent; for an id that is not pending: -1, 0, 0, NULL and 0.
 */
int GetABXproc(ABXid id) STRATA_SYM(GetABXproc);
unsigned GetABXport(ABXid id) STRATA_SYM(GetABXport);
int GetABXoffset(ABXid id) STRATA_SYM(GetABXoffset);
Word *GetABXbuffer(ABXid id) STRATA_SYM(GetABXbuffer);
int GetABXremaining(ABXid id) STRATA_SYM(GetABXremaining);

/* ---- 9.1 Printing in handlers ------------------------------------------- */
/*
 * Qprintf: queues a printf to stdout without polling or allocating;
 * returns the number of characters of the message.  A message that does
 * not fit the queue (64 KiB, 1024 messages) first empties it.
 * Qfprintf: the same for the stream out (NULL: stdout).
 */
ATOMIC int Qprintf(const char *format, ...) STRATA_SYM(Qprintf)
    __attribute__((format(printf, 1, 2)));
ATOMIC int Qfprintf(FILE *out, const char *format, ...) STRATA_SYM(Qfprintf)
    __attribute__((format(printf, 2, 3)));
/*
 * EmptyPrintQ: writes the queued messages in order and returns how many
 * there were.  (Writing to the console never polls here, so unlike the
 * CM-5's it is safe anywhere.)
 */
int EmptyPrintQ(void) STRATA_SYM(EmptyPrintQ);
/* The queued text: NUL-terminated strings packed one after the other. */
extern char *StrataQueue STRATA_SYM(StrataQueue);
extern int StrataQueueLength STRATA_SYM(StrataQueueLength);

/* ---- 9.2 Assertion checking --------------------------------------------- */
#undef assert
#ifdef NDEBUG
#define assert(x)               ((void)0)
#else
#define assert(x) \
    ((x) ? (void)0 : StrataFail("assertion failed on node %d: %s, " \
                                "file %s, line %d", Self, #x, __FILE__, \
                                __LINE__))
#endif

/* Section 3.5: exit goes through StrataExit. */
#ifndef STRATA_NO_EXIT_MACRO
#define exit(code)              StrataExit(code)
#endif

/* ---- 9.3 Debugging mode and logging ------------------------------------- */
/*
 * In the debugging library (STRATA_DEBUG) StrataLogging is True and the
 * Log* switches (default False) log each barrier, broadcast, combine and
 * Qprintf.  It also logs a Start* that finds another operation pending, a
 * port given more words than it expects and SetState of a non-state,
 * fails ClearMemory(NULL, n > 0), and marks its own states 2 to 7 in the
 * state graph.  The switches exist in both libraries; the normal one
 * ignores them.
 */
extern Bool StrataLogging STRATA_SYM(StrataLogging);
extern Bool LogBarrier STRATA_SYM(LogBarrier);
extern Bool LogBroadcast STRATA_SYM(LogBroadcast);
extern Bool LogCombine STRATA_SYM(LogCombine);
extern Bool LogQprintf STRATA_SYM(LogQprintf);

/*
 * StrataLog: adds one line to the run's Strata log (strata.log in the
 * run directory, each line prefixed "[node K]" by the launcher).  ATOMIC;
 * usable anywhere, handlers included; lines longer than 200 characters
 * are cut.
 */
ATOMIC void StrataLog(const char *fmt, ...) STRATA_SYM(StrataLog)
    __attribute__((format(printf, 1, 2)));

/* ---- 9.4 Timing functions ----------------------------------------------- */
/*
 * Cycles are the generic timer's virtual count (CNTVCT_EL0, which EL1 and
 * a Linux process at EL0 may both read) in units of STRATA_CYCLE_HZ
 * (extension) whatever the timer's frequency.  Not the PMU's PMCCNTR_EL0:
 * QEMU reads that under its global lock, the virtual count without it
 * (target-patches/0006), and a Linux process may not read it.
 */
#define STRATA_CYCLE_HZ         1000000000U

/*
 * StrataTimingOverhead (extension): the cost in cycles of an adjacent
 * CycleCount()/ElapsedCycles() pair, measured by StrataInit.
 */
extern unsigned StrataTimingOverhead STRATA_SYM(StrataTimingOverhead);

static INLINE DoubleWord strata_cycles64(void)
{
    DoubleWord v, f;

    __asm__ volatile("mrs %0, cntfrq_el0\n\tmrs %1, cntvct_el0"
                     : "=r"(f), "=r"(v));
    if (f && f != STRATA_CYCLE_HZ) {
        v = (v / f) * STRATA_CYCLE_HZ + (v % f) * STRATA_CYCLE_HZ / f;
    }
    return v;
}

/* CycleCount (ATOMIC): returns the low 32 bits of the cycle counter. */
static INLINE unsigned CycleCount(void)
{
    return (unsigned)strata_cycles64();
}

/*
 * ElapsedCycles (ATOMIC): cycles since start_count (a CycleCount()
 * value), less the cost of the two calls, so two adjacent calls give 0
 * (nearly always; never less than 0).
 */
static INLINE unsigned ElapsedCycles(unsigned start_count)
{
    unsigned e = CycleCount() - start_count;

    return e > StrataTimingOverhead ? e - StrataTimingOverhead : 0;
}

/* CyclesToSeconds (ATOMIC): converts cycles to seconds. */
static INLINE double CyclesToSeconds(unsigned cycles)
{
    return (double)cycles / STRATA_CYCLE_HZ;
}

/* CurrentCycle64: cycles since StrataInit (64 bits). */
DoubleWord CurrentCycle64(void) STRATA_SYM(CurrentCycle64);
/* CurrentCycle: cycles since StrataInit or the last ResetCurrentCycle. */
ATOMIC unsigned CurrentCycle(void) STRATA_SYM(CurrentCycle);
/*
 * ResetCurrentCycle: a barrier, then CurrentCycle's origin is now on
 * every node; state-graph times restart there too (states recorded and
 * not yet output are dropped), and ElapsedCycles is calibrated again.
 * Call it on all nodes.
 */
void ResetCurrentCycle(void) STRATA_SYM(ResetCurrentCycle);

/* ---- 10 Graphics -------------------------------------------------------- */
#define STRATA_MAX_STATES       16
#define STRATA_STATE_LOG        2048
/* The states the debugging library uses (section 10). */
#define STATE_IDLE              0
#define STATE_BUSY              1
#define STATE_LOGGING           2
#define STATE_QPRINTF           3
#define STATE_EMPTYPRINTQ       4
#define STATE_BROADCAST         5
#define STATE_COMBINE           6
#define STATE_BARRIER           7

/*
 * InitTrace: turns state recording on for this run; call it on every
 * node, before or after StrataInit.  file and title (either may be NULL)
 * are written to the Strata log; the launcher names its outputs
 * states.svg and trace.json in the run directory.
 */
void InitTrace(const char *file, const char *title) STRATA_SYM(InitTrace);
/*
 * SetState: this node enters state (0 .. STRATA_MAX_STATES - 1), at the
 * current time; returns the previous state.  Recorded only after
 * InitTrace and while RecordStates is on; a state out of range is
 * ignored (and returned as the old state is not changed).
 */
ATOMIC int SetState(int state) STRATA_SYM(SetState);
/* RecordStates: turns recording on or off here; returns the old setting. */
Bool RecordStates(Bool on) STRATA_SYM(RecordStates);
/*
 * OutputStateLog: writes this node's recorded states to the launcher
 * (console records) and empties the buffer, then a barrier: call it on
 * every node.  A buffer of STRATA_STATE_LOG changes that fills up is
 * written out by itself; StrataExit writes what is left.
 */
void OutputStateLog(void) STRATA_SYM(OutputStateLog);
/*
 * SetStateName (extension; the role of the CM-5's graph-specification
 * file): names state (0 .. STRATA_MAX_STATES - 1) in the graphs, with
 * colour "#rrggbb" (NULL: a default).  States 0 to 7 have the names of
 * section 10 until renamed.  Returns 0, or -1 for a state out of range, a
 * NULL or empty name, or a malformed colour.
 */
int SetStateName(int state, const char *name, const char *colour)
    STRATA_SYM(SetStateName);

/*
 * StrataSetSpin (extension): how long a blocking call spins before it
 * sleeps until the node controller interrupts (default 0: it sleeps at
 * once, which is fastest when the host has fewer cores than the cluster
 * has vCPUs).  A polling loop that finds nothing for about as long (at
 * least 64 empty polls) also sleeps, 50 us at most, waking at the next
 * message.  Returns the old value.
 */
unsigned StrataSetSpin(unsigned us) STRATA_SYM(StrataSetSpin);

#endif /* STRATA_H */
