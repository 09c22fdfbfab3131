/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Jacobi relaxation of a square plate, a real parallel program in two
 * versions:
 *
 *   jacobi.elf dsm [N] [ITERS]   on shared memory (dsm.h): the grids live
 *                                in the user-managed segment, every node
 *                                updates its band of rows, reads its
 *                                neighbours' edge rows through the
 *                                coherence protocol, dsm_barrier() between
 *                                sweeps; the misses of the edge rows
 *                                started at a sweep's start
 *                                (dsm_prefetch) and the interior rows
 *                                computed first;
 *   jacobi.elf dsm-plain ...     the same without dsm_prefetch: every
 *                                miss taken when the sweep reaches it;
 *   jacobi.elf dsm-update ...    the same on the update protocol
 *                                (dsm_update_begin): each edge row's
 *                                writer pushes it to the neighbour that
 *                                reads it as soon as it is computed, and
 *                                a node starts a sweep when its
 *                                neighbours' rows of the last one are
 *                                in (no barrier, no miss);
 *   jacobi.elf msg [N] [ITERS]   the same computation with explicit
 *                                messages: private bands with halo rows
 *                                exchanged by TPPI_send_R each sweep,
 *                                the edge rows computed and sent first
 *                                and the interior computed while they
 *                                travel (as dsm-update does).
 *
 * The plate has N x N interior points (N + 2 a multiple of 8, so that a
 * row is whole tag blocks), its top edge held at 1.0 and the others at 0.
 * Node 0 then computes the same sweeps alone in private memory, with the
 * same arithmetic in the same order, and compares every point bit for
 * bit: "jacobi <mode> ok: ..." if they agree, with the time of the
 * parallel sweeps.
 *
 * The DSM version places each page's home on the node that updates its
 * rows (dsm_init with a home function), so a node's own rows are local
 * and only the edge rows move.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm.h"
#include "tempest/rt.h"

static unsigned n = 126;            /* interior points per side */
static unsigned iters = 40;
static unsigned stride;             /* doubles per row: n + 2 */

static double *grid[2];             /* DSM: the two grids, shared */

/* The rows [lo, hi) node @k updates (interior rows are 1 .. n). */
static unsigned band_lo(unsigned k)
{
    return 1 + k * n / TPPI_num_nodes;
}

static unsigned band_hi(unsigned k)
{
    return 1 + (k + 1) * n / TPPI_num_nodes;
}

/* The node that updates row @r (edge rows go with their neighbours). */
static TPPI_NodeId row_node(unsigned r)
{
    TPPI_NodeId k;

    for (k = 0; k + 1 < TPPI_num_nodes; k++) {
        if (r < band_hi(k)) {
            break;
        }
    }
    return k;
}

/* DSM home of a page: the node that updates its first row. */
static TPPI_NodeId page_home(uint64_t page, void *arg)
{
    uint64_t per_grid = (uint64_t)stride * stride * sizeof(double);
    uint64_t off = (page << TPPI_PAGE_SHIFT) % per_grid;

    (void)arg;
    return row_node((unsigned)(off / (stride * sizeof(double))));
}

/* One sweep over rows [lo, hi) of @from into @to. */
static void sweep(const double *from, double *to, unsigned lo, unsigned hi)
{
    unsigned i, j;

    for (i = lo; i < hi; i++) {
        const double *up = from + (i - 1) * stride;
        const double *row = from + i * stride;
        const double *down = from + (i + 1) * stride;
        double *out = to + i * stride;

        for (j = 1; j <= n; j++) {
            out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
        }
    }
}

/* The plate's edges: top 1.0, the rest (interior included) 0. */
static void plate(double *g)
{
    unsigned j;

    for (j = 0; j < stride; j++) {
        g[j] = 1.0;
    }
}

/* Node 0: the whole computation alone, for comparison. */
static double *sequential(void)
{
    size_t bytes = (size_t)stride * stride * sizeof(double);
    double *g[2] = { calloc(1, bytes), calloc(1, bytes) };
    unsigned it;

    if (g[0] == NULL || g[1] == NULL) {
        printf("jacobi: no memory for the sequential run\n");
        exit(1);
    }
    plate(g[0]);
    plate(g[1]);
    for (it = 0; it < iters; it++) {
        sweep(g[it & 1], g[(it + 1) & 1], 1, n + 1);
    }
    free(g[(iters + 1) & 1]);
    return g[iters & 1];
}

/* Compares the parallel result with the sequential one; node 0. */
static int verify(const char *mode, const double *par, uint64_t ns)
{
    const double *seq = sequential();
    unsigned i, j, bad = 0;
    double sum = 0;

    for (i = 0; i < stride; i++) {
        for (j = 0; j < stride; j++) {
            double a = par[i * stride + j], b = seq[i * stride + j];

            if (memcmp(&a, &b, sizeof(a)) != 0) {
                if (bad++ < 5) {
                    printf("jacobi: (%u, %u): %.17g, sequential %.17g\n",
                           i, j, a, b);
                }
            }
            sum += b;
        }
    }
    if (bad) {
        printf("jacobi %s FAILED: %u points differ\n", mode, bad);
        return 1;
    }
    printf("jacobi %s ok: %ux%u, %u sweeps on %u nodes in %llu us, "
           "sum %.12f\n", mode, n, n, iters, TPPI_num_nodes,
           (unsigned long long)(ns / 1000), sum);
    return 0;
}

/* ---- where a node's time goes ------------------------------------------- */

/* Time of a node's sweeps by phase, and its counters over them. */
struct profile {
    uint64_t t0, wait_ns, edge_ns, interior_ns;
    struct tempest_stats st0;
};

static void profile_start(struct profile *p)
{
    memset(p, 0, sizeof(*p));
    tempest_get_stats(&p->st0);
    p->t0 = rt_time_ns();
}

/* Adds the time since *@t to *@acc; *@t becomes now. */
static void lap(uint64_t *t, uint64_t *acc)
{
    uint64_t now = rt_time_ns();

    *acc += now - *t;
    *t = now;
}

/*
 * One line per node, per sweep: microseconds waiting (the barrier, or
 * the neighbours' rows), computing the edge rows (which waits for their
 * misses) and the interior rows, and the messages sent and handled,
 * block access faults, waits that slept and protocol-thread sleeps.
 */
static void profile_print(const struct profile *p, uint64_t ns)
{
    struct tempest_stats st;
    double k = iters ? 1.0 / iters : 0;

    tempest_get_stats(&st);
    printf("node %u: a sweep: %.0f us: %.0f waiting, %.0f edge rows, "
           "%.0f interior; %.1f messages sent, %.1f handled, %.1f faults, "
           "%.1f waits, %.1f sleeps\n", TPPI_self_address, ns * k / 1e3,
           p->wait_ns * k / 1e3, p->edge_ns * k / 1e3,
           p->interior_ns * k / 1e3,
           (st.msgs_sent - p->st0.msgs_sent) * k,
           (st.msgs_handled - p->st0.msgs_handled) * k,
           (st.faults - p->st0.faults) * k, (st.waits - p->st0.waits) * k,
           (st.sleeps - p->st0.sleeps) * k);
}

/* ---- shared memory ------------------------------------------------------ */

/* The largest power of 2 (up to DSM_MAX_BLOCK) dividing a row's bytes. */
static int block_size(void)
{
    int b = TPPI_TAG_BLK_SIZE;

    while (b < DSM_MAX_BLOCK && (stride * sizeof(double)) % (2 * b) == 0) {
        b *= 2;
    }
    return b;
}

/*
 * The update protocol's blocks of both grids: each edge row, written by
 * its band's node, read by the neighbour whose band it borders.  Returns
 * how many, in @b (room for 4 a node).
 */
static int update_rows(struct dsm_update_blk *b)
{
    unsigned g, r;
    TPPI_NodeId k;
    int count = 0;

    for (g = 0; g < 2; g++) {
        for (r = 1; r <= n; r++) {
            uint64_t readers = 0;

            for (k = 0; k < TPPI_num_nodes; k++) {
                if (k != row_node(r) &&
                    (band_lo(k) == r + 1 || band_hi(k) == r)) {
                    readers |= 1ULL << k;
                }
            }
            if (readers) {
                b[count].va = grid[g] + (size_t)r * stride;
                b[count].writer = row_node(r);
                b[count].readers = readers;
                count++;
            }
        }
    }
    return count;
}

/*
 * The sweeps on the update protocol: wait for the neighbours' edge rows
 * of the last sweep (push @pushes[it & 1]), compute our edge rows and push
 * them at once, then the interior while they travel.
 */
static void sweeps_update(unsigned lo, unsigned hi, struct profile *p)
{
    unsigned pushes[2] = { 1, 1 };      /* dsm_update_begin's */
    TPPI_NodeId me = TPPI_self_address;
    uint64_t t = rt_time_ns();
    unsigned it;

    for (it = 0; it <= iters; it++) {
        double *from = grid[it & 1], *to = grid[(it + 1) & 1];

        if (me > 0) {
            dsm_update_wait(from + (size_t)(lo - 1) * stride, pushes[it & 1]);
        }
        if (me + 1 < TPPI_num_nodes) {
            dsm_update_wait(from + (size_t)hi * stride, pushes[it & 1]);
        }
        lap(&t, &p->wait_ns);
        if (it == iters) {
            break;                      /* the last sweep's rows are in */
        }
        sweep(from, to, lo, lo + 1);
        if (hi - 1 > lo) {
            sweep(from, to, hi - 1, hi);
        }
        if (me > 0) {
            dsm_push(to + (size_t)lo * stride);
        }
        if (me + 1 < TPPI_num_nodes && (hi - 1 > lo || me == 0)) {
            dsm_push(to + (size_t)(hi - 1) * stride);
        }
        pushes[(it + 1) & 1]++;
        lap(&t, &p->edge_ns);
        sweep(from, to, lo + 1, hi - 1);
        lap(&t, &p->interior_ns);
    }
}

enum dsm_mode { DSM_PLAIN, DSM_PREFETCH, DSM_UPDATE };

static int run_dsm(enum dsm_mode mode)
{
    unsigned lo = band_lo(TPPI_self_address), hi = band_hi(TPPI_self_address);
    struct dsm_update_blk *upd = NULL;
    struct dsm_stats st;
    struct profile prof;
    uint64_t t, ns, setup_ns = 0;
    unsigned it;

    /* A row is the coherence block: neighbours share whole rows. */
    if (dsm_init(block_size(), page_home, NULL) != 0) {
        return 1;
    }
    grid[0] = (double *)TPPI_SEGMENT_BASE;
    grid[1] = grid[0] + (size_t)stride * stride;
    if (TPPI_self_address == 0) {
        plate(grid[0]);
        plate(grid[1]);
    }
    dsm_barrier();
    if (mode == DSM_UPDATE) {
        /*
         * Set-up, as dsm_init and the message version's allocations: not
         * in the time of the sweeps, printed apart.
         */
        t = rt_time_ns();
        upd = calloc(4 * TPPI_num_nodes, sizeof(*upd));
        if (upd == NULL || dsm_update_begin(upd, update_rows(upd)) != 0) {
            return 1;
        }
        setup_ns = rt_time_ns() - t;
        dsm_barrier();
    }
    profile_start(&prof);
    t = prof.t0;
    for (it = 0; mode != DSM_UPDATE && it < iters; it++) {
        double *from = grid[it & 1], *to = grid[(it + 1) & 1];

        if (mode == DSM_PREFETCH && hi - lo > 2) {
            /*
             * The misses this sweep will take, started now: the
             * neighbours' edge rows we read, our own edge rows whose
             * copies the neighbours hold; the interior rows first, the
             * edge rows (by then here) last.
             */
            dsm_prefetch(from + (size_t)(lo - 1) * stride, 0);
            dsm_prefetch(from + (size_t)hi * stride, 0);
            dsm_prefetch(to + (size_t)lo * stride, 1);
            dsm_prefetch(to + (size_t)(hi - 1) * stride, 1);
            sweep(from, to, lo + 1, hi - 1);
            lap(&t, &prof.interior_ns);
            sweep(from, to, lo, lo + 1);
            sweep(from, to, hi - 1, hi);
            lap(&t, &prof.edge_ns);
        } else {
            sweep(from, to, lo, hi);
            lap(&t, &prof.edge_ns);
        }
        dsm_barrier();
        lap(&t, &prof.wait_ns);
    }
    if (mode == DSM_UPDATE) {
        sweeps_update(lo, hi, &prof);
    }
    ns = rt_time_ns() - prof.t0;
    profile_print(&prof, ns);
    if (mode == DSM_UPDATE) {
        printf("node %u: dsm_update_begin took %llu us\n", TPPI_self_address,
               (unsigned long long)(setup_ns / 1000));
        dsm_update_end();
        free(upd);
    }
    dsm_get_stats(&st);
    printf("node %u: rows %u..%u, %llu pages, %llu read and %llu write "
           "misses, %llu invalidations, %llu fetches, %llu requests "
           "served, %llu prefetches, %llu pushes, %llu updates\n",
           TPPI_self_address, lo, hi - 1,
           (unsigned long long)st.pages, (unsigned long long)st.read_misses,
           (unsigned long long)st.write_misses,
           (unsigned long long)st.invalidations,
           (unsigned long long)st.fetches, (unsigned long long)st.requests,
           (unsigned long long)st.prefetches, (unsigned long long)st.pushes,
           (unsigned long long)st.updates);
    if (TPPI_self_address == 0) {
        /* Reading the whole grid fetches every row from its owner. */
        int ret = verify(mode == DSM_UPDATE ? "dsm-update" : "dsm",
                         grid[iters & 1], ns);

        dsm_barrier();
        return ret;
    }
    dsm_barrier();
    return 0;
}

/* ---- explicit messages ------------------------------------------------- */

static double *band;                /* rows lo - 1 .. hi, twice */
static unsigned band_rows;
static volatile unsigned *halos;    /* [sweep]: halo rows received */
static volatile unsigned rows_in;   /* node 0: result rows received */
static double *result;              /* node 0: the whole grid */

/* A halo row: its sweep and row number, then the row. */
static void halo_h(TPPI_NodeId src, int size)
{
    unsigned it = (unsigned)TPPI_recv_W();
    unsigned r = (unsigned)TPPI_recv_W();
    unsigned lo = band_lo(TPPI_self_address);
    double *g = band + (size_t)(it & 1) * band_rows * stride;

    (void)src;
    (void)size;
    TPPI_recv_R(g + (size_t)(r - (lo - 1)) * stride,
                stride * sizeof(double));
    halos[it]++;
}

/* Node 0: a row of the result. */
static void row_h(TPPI_NodeId src, int size)
{
    unsigned r = (unsigned)TPPI_recv_W();

    (void)src;
    (void)size;
    TPPI_recv_R(result + (size_t)r * stride, stride * sizeof(double));
    rows_in++;
}

/* Both halo rows of sweep *arg are here (a neighbour may be ahead). */
static int halos_in(void *arg)
{
    unsigned it = *(unsigned *)arg;

    unsigned want = (TPPI_self_address > 0 ? 1 : 0) +
                    (TPPI_self_address + 1 < TPPI_num_nodes ? 1 : 0);

    return halos[it] >= want;
}

static int all_rows(void *arg)
{
    (void)arg;
    return rows_in >= n;
}

static int run_msg(void)
{
    TPPI_NodeId me = TPPI_self_address;
    unsigned lo = band_lo(me), hi = band_hi(me), it, next, r;
    struct profile prof;
    uint64_t t, ns;
    double *g, *from, *to;

    band_rows = hi - lo + 2;
    band = calloc((size_t)2 * band_rows * stride, sizeof(double));
    halos = calloc(iters + 2, sizeof(*halos));
    result = me == 0 ? calloc((size_t)stride * stride, sizeof(double)) :
                       NULL;
    if (band == NULL || halos == NULL || (me == 0 && result == NULL)) {
        printf("jacobi: no memory\n");
        return 1;
    }
    if (me == 0) {
        plate(band);
        plate(band + (size_t)band_rows * stride);
        plate(result);
    }
    dsm_barrier();
    profile_start(&prof);
    t = prof.t0;
    for (it = 0; it < iters; it++) {
        /* Shifted so that row lo - 1 of the plate is row 0 of a band. */
        from = band + (size_t)(it & 1) * band_rows * stride -
               (size_t)(lo - 1) * stride;
        to = band + (size_t)((it + 1) & 1) * band_rows * stride -
             (size_t)(lo - 1) * stride;
        /*
         * The edge rows first, sent at once, then the interior while
         * they travel: the schedule of the update protocol's sweeps, so
         * that the two versions compare like with like.
         */
        sweep(from, to, lo, lo + 1);
        if (hi - 1 > lo) {
            sweep(from, to, hi - 1, hi);
        }
        g = band + (size_t)((it + 1) & 1) * band_rows * stride;
        if (me > 0) {
            TPPI_send_WWR(me - 1, halo_h, (int)it + 1, (int)lo,
                          g + stride, stride * sizeof(double));
        }
        if (me + 1 < TPPI_num_nodes) {
            TPPI_send_WWR(me + 1, halo_h, (int)it + 1, (int)(hi - 1),
                          g + (size_t)(hi - lo) * stride,
                          stride * sizeof(double));
        }
        lap(&t, &prof.edge_ns);
        if (hi - 1 > lo + 1) {
            sweep(from, to, lo + 1, hi - 1);
        }
        lap(&t, &prof.interior_ns);
        next = it + 1;
        tempest_wait(halos_in, &next);
        lap(&t, &prof.wait_ns);
    }
    ns = rt_time_ns() - prof.t0;
    profile_print(&prof, ns);
    g = band + (size_t)(iters & 1) * band_rows * stride;
    for (r = lo; r < hi; r++) {
        TPPI_send_WR(0, row_h, (int)r, g + (size_t)(r - lo + 1) * stride,
                     stride * sizeof(double));
    }
    if (me == 0) {
        int ret;

        tempest_wait(all_rows, NULL);
        ret = verify("msg", result, ns);
        dsm_barrier();
        return ret;
    }
    dsm_barrier();
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "dsm";

    if (argc > 2) {
        n = (unsigned)atoi(argv[2]);
    }
    if (argc > 3) {
        iters = (unsigned)atoi(argv[3]);
    }
    stride = n + 2;
    if (n < TPPI_num_nodes || stride % (TPPI_TAG_BLK_SIZE / sizeof(double)) ||
        (uint64_t)2 * stride * stride * sizeof(double) > TPPI_SEGMENT_SIZE) {
        printf("jacobi: N + 2 must be a multiple of %u, N at least the node "
               "count\n", (unsigned)(TPPI_TAG_BLK_SIZE / sizeof(double)));
        return 2;
    }
    if (!strcmp(mode, "dsm")) {
        return run_dsm(DSM_PREFETCH);
    }
    if (!strcmp(mode, "dsm-plain")) {
        return run_dsm(DSM_PLAIN);
    }
    if (!strcmp(mode, "dsm-update")) {
        return run_dsm(DSM_UPDATE);
    }
    if (!strcmp(mode, "msg")) {
        return run_msg();
    }
    printf("usage: jacobi.elf dsm|dsm-plain|dsm-update|msg [N] [ITERS]\n");
    return 2;
}
