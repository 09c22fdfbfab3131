/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strata section 5 (composite reductions): CompositeInt, CompositeUint
 * and CompositeFloat with Min, Max, Average (wrapping as ReduceAdd /
 * ReduceUadd), Variance (the sample variance, 0 on one node) and Median
 * (the smaller middle value), checked against values every node can
 * compute for every other.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "strata-util.h"

static int ival(int i)
{
    return (i * 37 % 11) * (i % 2 ? -3 : 5) - 7;
}

static unsigned uval(int i)
{
    return 4000000000U - (unsigned)(i * 12345 % 977) * 3U;
}

static float fval(int i)
{
    return (float)(i % 5) * 1.5f - (float)i * 0.25f;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return x < y ? -1 : x > y;
}

static int cmp_uns(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

    return x < y ? -1 : x > y;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;

    return x < y ? -1 : x > y;
}

static int iv[1024];
static unsigned uv[1024];
static float fv[1024];

int main(void)
{
    int n, i, got;
    unsigned ugot, usum = 0;
    float fgot;
    double s = 0, s2 = 0, var, fs = 0, fs2 = 0, fvar;
    int32_t isum = 0;

    StrataInit();
    n = PartitionSize;
    for (i = 0; i < n; i++) {
        iv[i] = ival(i);
        uv[i] = uval(i);
        fv[i] = fval(i);
        isum = (int32_t)((uint32_t)isum + (uint32_t)iv[i]);
        usum += uv[i];
        s += iv[i];
        s2 += (double)iv[i] * iv[i];
        fs += fv[i];
        fs2 += (double)fv[i] * fv[i];
    }
    var = n > 1 ? (s2 - s * s / n) / (n - 1) : 0;
    fvar = n > 1 ? (fs2 - fs * fs / n) / (n - 1) : 0;
    qsort(iv, (size_t)n, sizeof(int), cmp_int);
    qsort(uv, (size_t)n, sizeof(unsigned), cmp_uns);
    qsort(fv, (size_t)n, sizeof(float), cmp_float);

    got = CompositeInt(ival(Self), Min);
    CHECK(got == iv[0], "int Min %d, expected %d", got, iv[0]);
    got = CompositeInt(ival(Self), Max);
    CHECK(got == iv[n - 1], "int Max %d, expected %d", got, iv[n - 1]);
    got = CompositeInt(ival(Self), Average);
    CHECK(got == isum / n, "int Average %d, expected %d", got, isum / n);
    got = CompositeInt(ival(Self), Variance);
    CHECK(got == (int)var, "int Variance %d, expected %d", got, (int)var);
    got = CompositeInt(ival(Self), Median);
    CHECK(got == iv[(n - 1) / 2], "int Median %d, expected %d", got,
          iv[(n - 1) / 2]);
    /* Average overflows as ReduceAdd does. */
    got = CompositeInt(INT_MAX, Average);
    CHECK(got == (int)((uint32_t)INT_MAX * (uint32_t)n) / n,
          "int Average wrap %d", got);

    ugot = CompositeUint(uval(Self), Min);
    CHECK(ugot == uv[0], "uint Min %u, expected %u", ugot, uv[0]);
    ugot = CompositeUint(uval(Self), Max);
    CHECK(ugot == uv[n - 1], "uint Max %u", ugot);
    ugot = CompositeUint(uval(Self), Average);
    CHECK(ugot == usum / (unsigned)n, "uint Average %u, expected %u", ugot,
          usum / (unsigned)n);
    ugot = CompositeUint(uval(Self), Median);
    CHECK(ugot == uv[(n - 1) / 2], "uint Median %u", ugot);
    ugot = CompositeUint((unsigned)Self * 2, Variance);
    CHECK(n > 1 ? ugot == (unsigned)((double)n * (n + 1) / 3) : ugot == 0,
          "uint Variance %u", ugot);

    fgot = CompositeFloat(fval(Self), Min);
    CHECK(fgot == fv[0], "float Min %g, expected %g", fgot, fv[0]);
    fgot = CompositeFloat(fval(Self), Max);
    CHECK(fgot == fv[n - 1], "float Max %g", fgot);
    fgot = CompositeFloat(fval(Self), Median);
    CHECK(fgot == fv[(n - 1) / 2], "float Median %g, expected %g", fgot,
          fv[(n - 1) / 2]);
    fgot = CompositeFloat(fval(Self), Average);
    CHECK(fabs(fgot - fs / n) < 1e-5, "float Average %g, expected %g",
          fgot, fs / n);
    fgot = CompositeFloat(fval(Self), Variance);
    CHECK(fabs(fgot - fvar) < 1e-4 * (1 + fvar), "float Variance %g, "
          "expected %g", fgot, fvar);
    /* One node, or all equal: variance 0. */
    CHECK(CompositeFloat(2.5f, Variance) == 0.0f, "variance of equals");
    CHECK(CompositeInt(Self == 0 ? 1 : 3, Median) == (n > 2 ? 3 : 1),
          "median, smaller middle");
    st_finish("strata_composite");
}
