/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libstrata: the control network (section 4) and composite reductions
 * (section 5), on the node controller's collectives (TEMPEST_CMD_COLL_START,
 * COLL_* registers), broadcasts (TEMPEST_CMD_BCAST, BCAST_*) and
 * asynchronous global OR (AOR_*).
 *
 * The device runs one collective at a time per node.  Every split-phase
 * operation goes through one "pending" record; starting another first
 * completes the pending one and keeps its result for its Complete* call.
 * Combines pass 32-bit values as 64-bit lanes: sign-extended (Add, Max,
 * Or, Xor) or zero-extended (Uadd), results truncated back; the device's
 * Max identity (INT64_MIN) becomes INT_MIN.  Composite reductions gather
 * every node's value (TEMPEST_COLL_ALLGATHER) and compute on each node,
 * in node order, so every node gets the same result.
 */
#include <limits.h>
#include <string.h>

#include "strata-internal.h"

#define LANES               TEMPEST_COLL_MAX_LANES

enum coll_user {
    CU_NONE,
    CU_BARRIER,
    CU_GOR,
    CU_INT,
    CU_VECTOR,
    CU_RAW,
};

struct pending {
    enum coll_user user;
    CombineOp kind;
    /* CU_VECTOR */
    int *to;
    const int *from;
    int n;
    int next;               /* first element of the chunk in progress */
    int lanes;              /* elements in the chunk in progress */
    SegmentType seg;
    unsigned depth;         /* handlers running when it was started */
};

static struct pending pend;
static SegmentType segment = NoBoundary;
static int combine_result;
static Bool gor_result;
static uint64_t lanes_in[LANES] __attribute__((aligned(64)));
static uint64_t lanes_out[LANES] __attribute__((aligned(64)));
static uint64_t *gathered;          /* PartitionSize values */
static uint32_t bcast_issued;       /* broadcasts this node started */
/* The last BroadcastVector of this node, for its ReceiveBroadcastVector. */
static Word *bvec_to;
static int bvec_n = -1;

/* The command bank as we last left it: rewrite only what changed. */
static uint64_t bank_arg[TEMPEST_NC_CMD_NUM_ARGS];
static uint32_t bank_op;
static bool bank_known;

static const uint8_t op_fn[] = {
    [ScanAdd] = TEMPEST_COLL_ADD, [BackScanAdd] = TEMPEST_COLL_ADD,
    [ReduceAdd] = TEMPEST_COLL_ADD,
    [ScanOr] = TEMPEST_COLL_OR, [BackScanOr] = TEMPEST_COLL_OR,
    [ReduceOr] = TEMPEST_COLL_OR,
    [ScanXor] = TEMPEST_COLL_XOR, [BackScanXor] = TEMPEST_COLL_XOR,
    [ReduceXor] = TEMPEST_COLL_XOR,
    [ScanUadd] = TEMPEST_COLL_UADD, [BackScanUadd] = TEMPEST_COLL_UADD,
    [ReduceUadd] = TEMPEST_COLL_UADD,
    [ScanMax] = TEMPEST_COLL_MAX, [BackScanMax] = TEMPEST_COLL_MAX,
    [ReduceMax] = TEMPEST_COLL_MAX,
};

static const char *const op_names[] __attribute__((unused)) = {
    "ScanAdd", "BackScanAdd", "ReduceAdd", "ScanOr", "BackScanOr",
    "ReduceOr", "ScanXor", "BackScanXor", "ReduceXor", "ScanUadd",
    "BackScanUadd", "ReduceUadd", "ScanMax", "BackScanMax", "ReduceMax",
};

/* CombineOp order: Scan, BackScan, Reduce for each function. */
static unsigned op_variant(CombineOp op)
{
    static const uint8_t v[3] = {
        TEMPEST_COLL_SCAN, TEMPEST_COLL_BACKSCAN, TEMPEST_COLL_REDUCE,
    };

    return v[op % 3];
}

static void check_op(CombineOp op, const char *call)
{
    if ((unsigned)op > ReduceMax) {
        StrataFail("%s: %d is not a CombineOp", call, (int)op);
    }
}

void strata_control_init(void)
{
    gathered = calloc((size_t)PartitionSize, sizeof(*gathered));
    if (gathered == NULL) {
        fprintf(stderr, "StrataFail: node %d: out of memory\n", Self);
        rt_exit(1);
    }
}

/* ---- the device ------------------------------------------------------- */

static inline void nc_write64(unsigned off, uint64_t v)
{
    *(volatile uint64_t *)(uintptr_t)(TEMPEST_NC_BASE + off) = v; /* MMIO */
}

/* The command's arguments and op into this CPU's bank (what changed). */
static void bank_stage(uint32_t op, const uint64_t *args, unsigned nargs)
{
    unsigned i;

    __asm__ volatile("dmb osh" : : : "memory");
    for (i = 0; i < nargs; i++) {
        if (!bank_known || bank_arg[i] != args[i]) {
            nc_write64(TEMPEST_NC_CMD_ARG(i), args[i]);
            bank_arg[i] = args[i];
        }
    }
    if (!bank_known || bank_op != op) {
        nc_reg_write(TEMPEST_NC_CMD_OP, op);
        bank_op = op;
    }
    bank_known = true;
}

/*
 * Shared with libtempest, whose commands (nc_cmd, from its interrupt
 * handler on a one-vCPU node too) write this CPU's bank as well: the bank
 * is staged and committed with IRQs masked, and what libstrata staged
 * before is taken as gone if any such command ran since (nc_bank_cmds).
 * Before, every shared command wrote all of its arguments again: seven
 * device accesses a Barrier.  Returns the IRQ flags for bank_unlock().
 */
static uint32_t bank_cmds_seen;

static uint64_t bank_lock(void)
{
    uint64_t flags;
    uint32_t cmds;

    if (!strata_shared) {
        return 0;
    }
    flags = rt_irq_save();
    cmds = __atomic_load_n(&nc_bank_cmds, __ATOMIC_RELAXED);
    if (cmds != bank_cmds_seen) {
        bank_cmds_seen = cmds;
        bank_known = false;
    }
    return flags;
}

static void bank_unlock(uint64_t flags)
{
    if (strata_shared) {
        rt_irq_restore(flags);
    }
}

/* A commit's status @st; the reason of a failure in *reason. */
static uint32_t bank_status(uint32_t st, uint32_t *reason)
{
    if (st == TEMPEST_CMD_FAIL) {
        *reason = nc_reg(TEMPEST_NC_CMD_REASON);
    }
    return st;
}

/* CMD_COMMIT of what is staged; the reason of a failure in *reason. */
static uint32_t bank_commit(uint32_t *reason)
{
    return bank_status(nc_reg(TEMPEST_NC_CMD_COMMIT), reason);
}

/*
 * Runs one command on this CPU's bank; returns its status (RETRY at most
 * once: the caller loops) and the reason of a failure in *reason.
 */
static uint32_t bank_cmd(uint32_t op, const uint64_t *args, unsigned nargs,
                         uint32_t *reason)
{
    uint64_t flags = bank_lock();
    uint32_t st;

    bank_stage(op, args, nargs);
    st = bank_commit(reason);
    bank_unlock(flags);
    return st;
}

/*
 * Where a wait may be a read of COLL_WAIT (1.21) or BCAST_WAIT (1.22):
 * no message of @poll is waiting to be polled (the read does not poll;
 * it returns when a packet comes), and the program spins where the
 * device would (a read spins where the launcher told the nodes to; after
 * StrataSetSpin(0) a wait halts at once).  Shared with libtempest on a
 * one-vCPU node (its protocol thread is this CPU's interrupt handler),
 * also only with this CPU's interrupts open: an interrupt pending was
 * taken before the read, and one raised during it ends the read (the
 * vCPU is kicked), so libtempest's handlers wait for no collective
 * (docs/strata.rst, "Waiting in a register read, shared").  With a
 * dedicated protocol thread the interrupt is that CPU's.
 */
static bool coll_read_waits(unsigned poll)
{
    return nc_coll_wait_present &&
           (strata_spin_turns || !strata_device_spins) &&
           !(strata_shared && tempest_client_polled() && rt_irq_masked()) &&
           !(poll && strata_msgs_waiting(poll));
}

static const char *coll_error_name(uint32_t e)
{
    switch (e) {
    case TEMPEST_COLL_E_MISMATCH:
        return "the nodes started different control-network operations";
    case TEMPEST_COLL_E_PEER_DOWN:
        return "a node of the partition is gone";
    case TEMPEST_COLL_E_DMA:
        return "the result memory is not writable";
    default:
        return "unknown error";
    }
}

static const char *cmd_reason_name(uint32_t r)
{
    switch (r) {
    case TEMPEST_CMD_E_BUSY:
        return "a collective is still pending";
    case TEMPEST_CMD_E_BAD_COLL:
        return "bad collective";
    case TEMPEST_CMD_E_NO_FABRIC:
        return "a node of the partition is gone";
    case TEMPEST_CMD_E_BAD_ADDR:
        return "buffer outside RAM";
    default:
        return nc_cmd_reason_name(r);
    }
}

/*
 * A node is gone.  In StrataExit, nodes that exited with status 0 ended
 * StrataExit themselves, so the last round's outcome (done) holds for
 * this node too: it exits with 0.  Otherwise: say so, give the launcher a
 * moment to record the node that failed first, and end this one.
 */
NORETURN strata_node_gone(const char *what, const char *why)
{
    /* Shared with libtempest, its protocol thread passes the event on. */
    strata_await_peer_events(200);
    strata_take_events();
    if (strata_exiting && strata_peers_failed == 0 &&
        strata_peers_exited > 0) {
        fflush(stdout);
        rt_exit(0);
    }
    fprintf(stderr, "StrataFail: node %d: %s: %s\n", Self, what, why);
    fflush(stderr);
    nc_failure_pause();
    strata_exit_now(1);
}

/*
 * A blocking call (Barrier, GlobalOR, CombineInt, ...) sets go_user to
 * its collective before it starts it: coll_start() then commits through
 * COLL_GO, whose read waits for the collective too, and leaves what it
 * returned in go_status for pending_finish() (GO_NONE: no such read).
 * A split-phase Start* returns at once, as the manual says.
 */
#define GO_NONE 0xFFFFFFFFU
static enum coll_user go_user = CU_NONE;
static uint32_t go_status = GO_NONE;

/*
 * COLL_START staged and committed by a read of COLL_GO, which waits for
 * the collective as COLL_WAIT does.  Shared with libtempest, the bank is
 * held with IRQs masked (bank_lock), so the read's wait is made with them
 * masked: only where this CPU has no interrupt pending (ISR_EL1, no device
 * access), since one raised during the read kicks the vCPU and ends it,
 * and libtempest's handlers so wait for no collective.  With one pending
 * the command is committed alone, and pending_finish() waits in COLL_WAIT
 * after the interrupt has run.  Before, every shared collective was
 * committed alone: the last node to arrive then took IRQ_COLL through
 * libtempest's handler (the exception and four accesses of the GIC and
 * the device) and read COLL_WAIT after it.
 */
static uint32_t bank_go(const uint64_t *args, uint32_t *reason)
{
    uint64_t flags = bank_lock();
    uint32_t st, v;

    bank_stage(TEMPEST_CMD_COLL_START, args, 6);
    if (strata_shared && rt_irq_pending()) {
        st = bank_commit(reason);
    } else {
        v = nc_reg(TEMPEST_NC_COLL_GO);
        if (v < TEMPEST_NC_GO_CMD) {
            st = TEMPEST_CMD_SUCCESS;
            go_status = v;
        } else {
            st = bank_status(v - TEMPEST_NC_GO_CMD, reason);
        }
    }
    bank_unlock(flags);
    return st;
}

static void coll_start(unsigned kind, unsigned fn, unsigned variant,
                       uint64_t value, unsigned lanes, void *dest,
                       unsigned seg, enum coll_user user)
{
    uint64_t args[6] = {
        kind, fn | variant << 8, value, lanes, (uintptr_t)dest, seg,
    };
    uint32_t st, reason = 0;
    /* With the caller's IRQs (coll_read_waits), before bank_go masks. */
    bool go = go_user == user && coll_read_waits(POLL_BOTH);

    go_user = CU_NONE;
    go_status = GO_NONE;
    st = go ? bank_go(args, &reason) :
              bank_cmd(TEMPEST_CMD_COLL_START, args, 6, &reason);
    if (st != TEMPEST_CMD_SUCCESS) {
        if (reason == TEMPEST_CMD_E_NO_FABRIC) {
            strata_node_gone("control network", cmd_reason_name(reason));
        }
        StrataFail("the node controller refused a collective: %s "
                   "(status %u, reason %u)", cmd_reason_name(reason),
                   (unsigned)st, (unsigned)reason);
    }
    if (pend.user == CU_NONE) {
        pend.depth = strata_handler_depth;  /* (not a vector's next chunk) */
    }
    pend.user = user;
}

/* True (and the outcome checked) if the collective's status @st is over. */
static bool coll_status_over(uint32_t st)
{
    if (st == TEMPEST_COLL_ST_PENDING) {
        return false;
    }
    if (st == TEMPEST_COLL_ST_ERROR) {
        uint32_t e = nc_reg(TEMPEST_NC_COLL_ERROR);

        if (e == TEMPEST_COLL_E_PEER_DOWN) {
            strata_node_gone("control network", coll_error_name(e));
        }
        StrataFail("control network: %s (error %u)", coll_error_name(e),
                   (unsigned)e);
    }
    return true;
}

/* True (and the outcome checked) if the device's collective is over. */
static bool coll_over(void)
{
    return coll_status_over(nc_reg(TEMPEST_NC_COLL_STATUS));
}

static bool coll_over_cb(void *arg)
{
    (void)arg;
    return coll_over();
}

static int lane_to_int(uint64_t v, CombineOp op)
{
    if (op_fn[op] == TEMPEST_COLL_MAX && v == (uint64_t)INT64_MIN) {
        return INT_MIN;
    }
    return (int)(uint32_t)v;
}

static uint64_t int_to_lane(int v, CombineOp op)
{
    if (op_fn[op] == TEMPEST_COLL_UADD) {
        return (uint32_t)v;
    }
    return (uint64_t)(int64_t)v;
}

/* Starts the next chunk of the pending vector combine. */
static void vector_chunk_start(void)
{
    int i, n = pend.n - pend.next;

    pend.lanes = n < LANES ? n : LANES;
    for (i = 0; i < pend.lanes; i++) {
        lanes_in[i] = int_to_lane(pend.from[pend.next + i], pend.kind);
    }
    coll_start(TEMPEST_COLL_COMBINE, op_fn[pend.kind],
               op_variant(pend.kind), (uintptr_t)lanes_in,
               (unsigned)pend.lanes, lanes_out, pend.seg, CU_VECTOR);
}

/*
 * The pending collective is over on the device: take its result.  For a
 * vector, starts the next chunk and returns false until the last is in.
 */
static bool pending_take(void)
{
    int i;

    switch (pend.user) {
    case CU_GOR:
        gor_result = nc_reg64(TEMPEST_NC_COLL_RESULT) != 0;
        break;
    case CU_INT:
        combine_result = lane_to_int(nc_reg64(TEMPEST_NC_COLL_RESULT),
                                     pend.kind);
        break;
    case CU_VECTOR:
        for (i = 0; i < pend.lanes; i++) {
            pend.to[pend.next + i] = lane_to_int(lanes_out[i], pend.kind);
        }
        pend.next += pend.lanes;
        if (pend.next < pend.n) {
            vector_chunk_start();
            return false;
        }
        break;
    default:
        break;
    }
    pend.user = CU_NONE;
    return true;
}

/*
 * pending_finish()'s waits in progress: handlers run in them.  A handler
 * that then starts or waits for a control-network operation would finish
 * the one waited for inside the wait, and take its place in it (the wait
 * would go on for the handler's, and its results would be overwritten):
 * it fails, clearly, instead of a hang or a wrong result.
 */
static unsigned coll_waits;

static void nested_check(void)
{
    if (coll_waits) {
        StrataFail("node %d: a message handler called a control-network "
                   "operation (a barrier, combine, scan, composite or "
                   "exit) while this node waited for another one", Self);
    }
}

/*
 * Before a new operation starts (finishing a pending one first): one
 * pending that was started at another handler depth (the program's
 * split-phase one, and now a handler's; or the reverse) would be finished
 * here and its result replaced by the new one's.
 */
static void start_check(void)
{
    nested_check();     /* (inside a wait: said as such) */
    if (pend.user != CU_NONE && pend.depth != strata_handler_depth) {
        StrataFail("node %d: a control-network operation started %s while "
                   "one started %s was pending", Self,
                   strata_handler_depth ? "in a message handler" :
                                          "by the program",
                   pend.depth ? "in a message handler" : "by the program");
    }
}

/* Waits (polling if @poll) until no collective is pending. */
/*
 * Waits for the pending collective, polling @poll.  First in a read of
 * COLL_WAIT (1.21; coll_read_waits()), unless a COLL_GO read already
 * waited: on shared memory, with nodes that do not spin, the device
 * yields the host CPU inside the read until the collective ends, with no
 * halt, wake-up, interrupt or acknowledgement (docs/strata.rst, "Waiting
 * in a register read").  The read returns early (a packet came, a
 * broadcast word, an interrupt, its time ran out), or at once elsewhere:
 * then strata_wait() polls and sleeps.
 */
static void pending_finish(unsigned poll)
{
    nested_check();
    while (pend.user != CU_NONE) {
        uint32_t st = go_status;

        go_status = GO_NONE;
        if (st == GO_NONE) {
            st = coll_read_waits(poll) ? nc_reg(TEMPEST_NC_COLL_WAIT) :
                                         TEMPEST_COLL_ST_PENDING;
        }
        if (!coll_status_over(st)) {
            coll_waits++;
            strata_wait(coll_over_cb, NULL, poll, false);
            coll_waits--;
        }
        pending_take();
    }
}

/* Start*: one operation at a time (the debugging library says so). */
static void start_after_pending(const char *call)
{
#if STRATA_DEBUG_BUILD
    if (pend.user != CU_NONE) {
        StrataLog("%s while another control-network operation is "
                  "pending: completing that one first", call);
    }
#else
    (void)call;
#endif
    start_check();
    pending_finish(POLL_NONE);
}

void strata_coll_finish_pending(void)
{
    pending_finish(POLL_BOTH);
}

/* Query*: true if @user's operation is not pending (taking it if over). */
static Bool pending_query(enum coll_user user)
{
    if (pend.user != user) {
        return True;
    }
    if (!coll_over()) {
        return False;
    }
    return pending_take() ? True : False;
}

/* Complete*: waits, polling, for @user's operation if it is pending. */
static void pending_complete(enum coll_user user)
{
    if (pend.user == user) {
        pending_finish(POLL_BOTH);
    }
}

void strata_coll_u64(unsigned fn, unsigned variant, const uint64_t *in,
                     uint64_t *out, unsigned lanes)
{
    start_check();
    pending_finish(POLL_BOTH);
    memcpy(lanes_in, in, lanes * sizeof(uint64_t));
    go_user = CU_RAW;
    coll_start(TEMPEST_COLL_COMBINE, fn, variant, (uintptr_t)lanes_in,
               lanes, lanes_out, TEMPEST_SEG_NONE, CU_RAW);
    pending_finish(POLL_BOTH);
    memcpy(out, lanes_out, lanes * sizeof(uint64_t));
}

/* ---- 4.1 Barriers ----------------------------------------------------- */

void StartBarrier(void)
{
    strata_require("StartBarrier");
    start_after_pending("StartBarrier");
    STRATA_DBG_LOG(LogBarrier, "barrier start");
    coll_start(TEMPEST_COLL_COMBINE, TEMPEST_COLL_OR, TEMPEST_COLL_REDUCE, 0,
               0, NULL, TEMPEST_SEG_NONE, CU_BARRIER);
}

Bool QueryBarrier(void)
{
    return pending_query(CU_BARRIER);
}

void CompleteBarrier(void)
{
    STRATA_DBG_ENTER(STATE_BARRIER);
    pending_complete(CU_BARRIER);
    STRATA_DBG_LOG(LogBarrier, "barrier done");
    STRATA_DBG_LEAVE();
}

void Barrier(void)
{
    strata_require("Barrier");
    STRATA_DBG_ENTER(STATE_BARRIER);
    go_user = CU_BARRIER;
    StartBarrier();
    pending_complete(CU_BARRIER);
    STRATA_DBG_LOG(LogBarrier, "barrier done");
    STRATA_DBG_LEAVE();
}

/* ---- 4.2 Global OR ---------------------------------------------------- */

void StartGlobalOR(Bool not_done)
{
    strata_require("StartGlobalOR");
    start_after_pending("StartGlobalOR");
    STRATA_DBG_LOG(LogBarrier, "global OR start (%d)", not_done != 0);
    coll_start(TEMPEST_COLL_COMBINE, TEMPEST_COLL_OR, TEMPEST_COLL_REDUCE,
               not_done != 0, 0, NULL, TEMPEST_SEG_NONE, CU_GOR);
}

Bool QueryGlobalOR(void)
{
    return pending_query(CU_GOR);
}

Bool CompleteGlobalOR(void)
{
    pending_complete(CU_GOR);
    STRATA_DBG_LOG(LogBarrier, "global OR done: %d", gor_result);
    return gor_result;
}

Bool GlobalOR(Bool not_done)
{
    Bool r;

    strata_require("GlobalOR");
    STRATA_DBG_ENTER(STATE_BARRIER);
    go_user = CU_GOR;
    StartGlobalOR(not_done);
    r = CompleteGlobalOR();
    STRATA_DBG_LEAVE();
    return r;
}

void SetAsyncGlobalOR(Bool not_done)
{
    nc_reg_write(TEMPEST_NC_AOR_SET, not_done != 0);
}

Bool GetAsyncGlobalOR(void)
{
    return nc_reg(TEMPEST_NC_AOR_GLOBAL) != 0;
}

/* ---- 4.3 Combine operations --------------------------------------------- */

void SetSegment(SegmentType boundary)
{
    if ((unsigned)boundary > ArrayBoundary) {
        StrataFail("SetSegment: %d is not a SegmentType", (int)boundary);
    }
    segment = boundary;
}

SegmentType CurrentSegment(void)
{
    return segment;
}

void StartCombineInt(int value, CombineOp kind)
{
    strata_require("StartCombineInt");
    check_op(kind, "StartCombineInt");
    start_after_pending("StartCombineInt");
    STRATA_DBG_LOG(LogCombine, "combine %s start (%d, segment %d)",
                   op_names[kind], value, (int)segment);
    pend.kind = kind;
    coll_start(TEMPEST_COLL_COMBINE, op_fn[kind], op_variant(kind),
               int_to_lane(value, kind), 0, NULL, segment, CU_INT);
}

Bool QueryCombineInt(void)
{
    return pending_query(CU_INT);
}

int CompleteCombineInt(void)
{
    STRATA_DBG_ENTER(STATE_COMBINE);
    pending_complete(CU_INT);
    STRATA_DBG_LOG(LogCombine, "combine done: %d", combine_result);
    STRATA_DBG_LEAVE();
    return combine_result;
}

int CombineInt(int value, CombineOp kind)
{
    strata_require("CombineInt");
    go_user = CU_INT;
    StartCombineInt(value, kind);
    return CompleteCombineInt();
}

void StartCombineVector(int to[], int from[], CombineOp kind,
                        int num_elements)
{
    strata_require("StartCombineVector");
    check_op(kind, "StartCombineVector");
    if (num_elements <= 0) {
        return;
    }
    if (to == NULL || from == NULL) {
        StrataFail("StartCombineVector: NULL vector");
    }
    start_check();
    pending_finish(POLL_BOTH);
    STRATA_DBG_LOG(LogCombine, "vector combine %s start (%d elements, "
                   "segment %d)", op_names[kind], num_elements,
                   (int)segment);
    pend.kind = kind;
    pend.to = to;
    pend.from = from;
    pend.n = num_elements;
    pend.next = 0;
    pend.seg = segment;
    vector_chunk_start();
}

void CompleteCombineVector(void)
{
    STRATA_DBG_ENTER(STATE_COMBINE);
    pending_complete(CU_VECTOR);
    STRATA_DBG_LOG(LogCombine, "vector combine done");
    STRATA_DBG_LEAVE();
}

void CombineVector(int to[], int from[], CombineOp kind, int num_elements)
{
    strata_require("CombineVector");
    StartCombineVector(to, from, kind, num_elements);
    CompleteCombineVector();
}

/* ---- 4.4 Broadcast operations ------------------------------------------- */

static bool bcast_delivered(void *arg)
{
    (void)arg;
    return nc_reg(TEMPEST_NC_BCAST_SENT) == bcast_issued;
}

static void bcast_word(uint64_t w)
{
    uint64_t args[1] = { w };
    uint32_t st, reason = 0;

    strata_require("Broadcast");
    for (;;) {
        st = bank_cmd(TEMPEST_CMD_BCAST, args, 1, &reason);
        if (st == TEMPEST_CMD_SUCCESS) {
            bcast_issued++;
            return;
        }
        if (st == TEMPEST_CMD_FAIL) {
            if (reason == TEMPEST_CMD_E_NO_FABRIC) {
                strata_node_gone("broadcast", cmd_reason_name(reason));
            }
            StrataFail("broadcast refused: %s", cmd_reason_name(reason));
        }
        /* The previous one is not delivered yet. */
        strata_wait(bcast_delivered, NULL, POLL_NONE, false);
    }
}

static bool bcast_waiting(void *arg)
{
    (void)arg;
    return nc_reg(TEMPEST_NC_BCAST_AVAIL) != 0;
}

/*
 * Pops a word: with BCAST_WAIT (1.22) where a COLL_WAIT read may wait
 * (coll_read_waits()), the device waits for one inside the read as it
 * does for a collective (docs/strata.rst, "Broadcasts received in a
 * register read"); a read that returns 0 (a packet came, an interrupt,
 * the time ran out) falls back to strata_wait(), which polls and halts.
 */
static bool pop_word(void)
{
    return nc_reg(nc_bcast_wait_present && coll_read_waits(POLL_BOTH) ?
                  TEMPEST_NC_BCAST_WAIT : TEMPEST_NC_BCAST_POP) != 0;
}

/*
 * receive_word()'s waits in progress: handlers run in them.  A handler
 * that receives a broadcast word there would take the one the program
 * waits for (a word of its vector, say), and the program would wait for
 * the next, or for ever: it fails, clearly, as a nested collective does.
 */
static unsigned bcast_waits;

static uint64_t receive_word(void)
{
    strata_require("ReceiveBroadcast");
    if (bcast_waits) {
        StrataFail("node %d: a message handler called ReceiveBroadcast "
                   "(or its Double or Vector form) while this node waited "
                   "for a broadcast word: it would take the word waited "
                   "for", Self);
    }
    while (!pop_word()) {
        if (nc_reg(TEMPEST_NC_BCAST_LOST)) {
            /* Only a node controller before 1.6 (or a bad peer). */
            StrataFail("broadcast words were lost: more than %d were "
                       "waiting", TEMPEST_NC_BCAST_FIFO);
        }
        bcast_waits++;
        strata_wait(bcast_waiting, NULL, POLL_BOTH, false);
        bcast_waits--;
    }
    return nc_reg64(TEMPEST_NC_BCAST_VALUE);
}

void Broadcast(Word value)
{
    STRATA_DBG_ENTER(STATE_BROADCAST);
    STRATA_DBG_LOG(LogBroadcast, "broadcast 0x%08x", (unsigned)value);
    bcast_word(value);
    STRATA_DBG_LEAVE();
}

Bool QueryBroadcast(void)
{
    return bcast_delivered(NULL) ? True : False;
}

Word ReceiveBroadcast(void)
{
    Word w;

    STRATA_DBG_ENTER(STATE_BROADCAST);
    w = (Word)receive_word();
    STRATA_DBG_LOG(LogBroadcast, "received broadcast 0x%08x", (unsigned)w);
    STRATA_DBG_LEAVE();
    return w;
}

void BroadcastDouble(double value)
{
    uint64_t w;

    STRATA_DBG_ENTER(STATE_BROADCAST);
    memcpy(&w, &value, sizeof(w));
    STRATA_DBG_LOG(LogBroadcast, "broadcast double %g", value);
    bcast_word(w);
    STRATA_DBG_LEAVE();
}

double ReceiveBroadcastDouble(void)
{
    uint64_t w;
    double d;

    STRATA_DBG_ENTER(STATE_BROADCAST);
    w = receive_word();
    memcpy(&d, &w, sizeof(d));
    STRATA_DBG_LOG(LogBroadcast, "received broadcast double %g", d);
    STRATA_DBG_LEAVE();
    return d;
}

/*
 * Vectors travel two words per device word, back to back: the control
 * network holds the broadcaster while any node's queue is full (node
 * controller 1.6), as the CM-5's did, so nothing is lost and no node
 * waits for another beyond that.
 */
void BroadcastVector(Word to[], Word from[], int num_elements)
{
    int i;

    strata_require("BroadcastVector");
    if (num_elements <= 0) {
        return;
    }
    if (to == NULL || from == NULL) {
        StrataFail("BroadcastVector: NULL vector");
    }
    STRATA_DBG_ENTER(STATE_BROADCAST);
    STRATA_DBG_LOG(LogBroadcast, "broadcast vector of %d words",
                   num_elements);
    for (i = 0; i < num_elements; i += 2) {
        uint64_t w = from[i];

        if (i + 1 < num_elements) {
            w |= (uint64_t)from[i + 1] << 32;
        }
        bcast_word(w);
        to[i] = from[i];
        if (i + 1 < num_elements) {
            to[i + 1] = from[i + 1];
        }
    }
    bvec_to = to;
    bvec_n = num_elements;
    STRATA_DBG_LEAVE();
}

void ReceiveBroadcastVector(Word to[], int num_elements)
{
    int i;

    strata_require("ReceiveBroadcastVector");
    if (num_elements <= 0) {
        return;
    }
    if (to == NULL) {
        StrataFail("ReceiveBroadcastVector: NULL vector");
    }
    if (to == bvec_to && num_elements == bvec_n) {
        /* This node broadcast it: to is filled in already. */
        bvec_to = NULL;
        bvec_n = -1;
        return;
    }
    STRATA_DBG_ENTER(STATE_BROADCAST);
    for (i = 0; i < num_elements; i += 2) {
        uint64_t w = receive_word();

        to[i] = (Word)w;
        if (i + 1 < num_elements) {
            to[i + 1] = (Word)(w >> 32);
        }
    }
    STRATA_DBG_LOG(LogBroadcast, "received vector of %d words",
                   num_elements);
    STRATA_DBG_LEAVE();
}

/* ---- 5 Composite reductions --------------------------------------------- */

/* Every node's value into gathered[], in node order. */
static void gather(uint64_t value)
{
    strata_require("Composite");
    start_check();
    pending_finish(POLL_BOTH);
    go_user = CU_RAW;
    coll_start(TEMPEST_COLL_ALLGATHER, 0, 0, value, 0, gathered,
               TEMPEST_SEG_NONE, CU_RAW);
    pending_finish(POLL_BOTH);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void check_composite(CompositeOp op, const char *call)
{
    if ((unsigned)op > Median) {
        StrataFail("%s: %d is not a CompositeOp", call, (int)op);
    }
}

/* Sample variance, (sum x^2 - (sum x)^2 / n) / (n - 1). */
static double variance(const double *x, int n)
{
    double s = 0, s2 = 0;
    int i;

    if (n < 2) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        s += x[i];
        s2 += x[i] * x[i];
    }
    return (s2 - s * s / n) / (n - 1);
}

/*
 * Integers as int64_t in gathered[] (signed or unsigned 32-bit values);
 * the sum wraps at 32 bits as the device's would.
 */
static int64_t composite_integer(CompositeOp op, bool is_signed)
{
    int64_t *v = (int64_t *)gathered;
    int i, n = PartitionSize;
    uint32_t sum = 0;
    double *d;
    double var;

    switch (op) {
    case Min:
    case Max:
    case Median:
        qsort(v, (size_t)n, sizeof(*v), cmp_i64);
        return op == Min ? v[0] : op == Max ? v[n - 1] : v[(n - 1) / 2];
    case Average:
        for (i = 0; i < n; i++) {
            sum += (uint32_t)v[i];
        }
        if (is_signed) {
            return (int32_t)sum / n;
        }
        return sum / (uint32_t)n;
    default:
        d = (double *)gathered;
        for (i = 0; i < n; i++) {
            d[i] = (double)v[i];
        }
        var = variance(d, n);
        return (int64_t)var;
    }
}

int CompositeInt(int value, CompositeOp op)
{
    check_composite(op, "CompositeInt");
    gather((uint64_t)(int64_t)value);
    return (int)composite_integer(op, true);
}

unsigned CompositeUint(unsigned value, CompositeOp op)
{
    check_composite(op, "CompositeUint");
    gather(value);
    return (unsigned)composite_integer(op, false);
}

float CompositeFloat(float value, CompositeOp op)
{
    double *d = (double *)gathered;
    double s = 0;
    uint32_t bits;
    float f;
    int i, n;

    check_composite(op, "CompositeFloat");
    memcpy(&bits, &value, sizeof(bits));
    gather(bits);
    n = PartitionSize;
    for (i = 0; i < n; i++) {
        bits = (uint32_t)gathered[i];
        memcpy(&f, &bits, sizeof(f));
        d[i] = f;
    }
    switch (op) {
    case Min:
    case Max:
    case Median:
        qsort(d, (size_t)n, sizeof(*d), cmp_double);
        return (float)(op == Min ? d[0] : op == Max ? d[n - 1] :
                       d[(n - 1) / 2]);
    case Average:
        for (i = 0; i < n; i++) {
            s += d[i];
        }
        return (float)(s / n);
    default:
        return (float)variance(d, n);
    }
}
