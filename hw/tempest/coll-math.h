/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The arithmetic of the control network's combine operations (Strata
 * section 4.3): the five associative functions, reductions, forward and
 * backward scans, and segmented scans with the exact ElementBoundary and
 * ArrayBoundary semantics of section 4.3.1.
 *
 * Pure C with no QEMU dependency: the node controller runs it at the root
 * of the combining tree, and the host unit tests check it against the
 * manual's examples.  Lanes are 64-bit; 32-bit Strata values are passed
 * sign-extended (ADD, MAX) or zero-extended (UADD) and truncated again,
 * which gives 32-bit results exactly.
 */
#ifndef HW_TEMPEST_COLL_MATH_H
#define HW_TEMPEST_COLL_MATH_H

#include <stdint.h>

#include "standard-headers/tempest/tempest-hw.h"

static inline uint64_t coll_identity(unsigned fn)
{
    return fn == TEMPEST_COLL_MAX ? (uint64_t)INT64_MIN : 0;
}

static inline uint64_t coll_apply(unsigned fn, uint64_t a, uint64_t b)
{
    switch (fn) {
    case TEMPEST_COLL_ADD:
    case TEMPEST_COLL_UADD:
        return a + b;
    case TEMPEST_COLL_OR:
        return a | b;
    case TEMPEST_COLL_XOR:
        return a ^ b;
    case TEMPEST_COLL_MAX:
        return (int64_t)a > (int64_t)b ? a : b;
    }
    return 0;
}

/*
 * Combine nodes' values: in[i * lanes + l] is node i's lane l, seg[i] its
 * segment type; out gets each node's result, laid out the same way.
 *
 *  REDUCE: every node gets fn over all nodes (segments ignored).
 *  SCAN: node i gets fn over the nodes before it in its segment (exclusive;
 *  the first node gets the identity).  An ElementBoundary at node i starts
 *  a segment there: i gets the identity.  An ArrayBoundary at node i gives
 *  i the value accumulated so far (the previous segment's), but does not
 *  pass it on: the accumulation restarts with i's own value.
 *  BACKSCAN: the same from the highest node down; a node's boundary then
 *  closes its segment on the side of the lower nodes, as the hardware's
 *  backward scan sees it: the boundary belongs to the node below it.
 */
static inline void coll_combine(unsigned fn, unsigned variant, unsigned nodes,
                                unsigned lanes, const uint8_t *seg,
                                const uint64_t *in, uint64_t *out)
{
    for (unsigned l = 0; l < lanes; l++) {
        uint64_t acc = coll_identity(fn);

        if (variant == TEMPEST_COLL_REDUCE) {
            for (unsigned i = 0; i < nodes; i++) {
                acc = coll_apply(fn, acc, in[i * lanes + l]);
            }
            for (unsigned i = 0; i < nodes; i++) {
                out[i * lanes + l] = acc;
            }
            continue;
        }
        for (unsigned k = 0; k < nodes; k++) {
            unsigned i = variant == TEMPEST_COLL_SCAN ? k : nodes - 1 - k;
            /* Backward: the boundary between i and i + 1 is i + 1's. */
            unsigned b = variant == TEMPEST_COLL_SCAN ? seg[i] :
                         (i + 1 < nodes ? seg[i + 1] : TEMPEST_SEG_NONE);
            uint64_t v = in[i * lanes + l];

            if (variant == TEMPEST_COLL_BACKSCAN && k == 0) {
                b = TEMPEST_SEG_NONE;
            }
            if (b == TEMPEST_SEG_ELEMENT) {
                acc = coll_identity(fn);
                out[i * lanes + l] = acc;
                acc = coll_apply(fn, acc, v);
            } else if (b == TEMPEST_SEG_ARRAY) {
                out[i * lanes + l] = acc;
                acc = coll_apply(fn, coll_identity(fn), v);
            } else {
                out[i * lanes + l] = acc;
                acc = coll_apply(fn, acc, v);
            }
        }
    }
}

#endif /* HW_TEMPEST_COLL_MATH_H */
