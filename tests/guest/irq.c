/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checks the runtime's interrupt path (docs/runtime.rst, "Interrupts"):
 * an edge-triggered SPI made pending by software (GICD_ISPENDR) runs its
 * registered handler
 *   1. from the IRQ exception on CPU 0 once IRQs are unmasked, with every
 *      general and FP/SIMD register of the interrupted code preserved;
 *   2. from rt_cpu_sleep() with IRQs masked;
 *   3. on CPU 1 when routed there (if the node has 2 CPUs);
 * and rt_cpu_sleep(us) returns after about that long with nothing
 * pending.  Prints "irq ok" and exits 0, or names what failed and exits 1.
 */
#include <stdio.h>
#include <string.h>

#include "tempest/rt.h"

#define TEST_INTID      (32 + 10)
#define GICD_ISPENDR(n) (TEMPEST_GIC_DIST_BASE + 0x200 + 4 * (n))
#define ROUNDS          200

static volatile unsigned hits; /* volatile: set by handlers */
static volatile unsigned hit_cpu; /* volatile: set by handlers */
static volatile int handler_in_irq; /* volatile: set by handlers */

static void handler(unsigned intid, void *arg)
{
    volatile double d = 1.5; /* volatile: keep the FP work */
    char junk[256];
    unsigned i;

    (void)arg;
    /* Use FP/SIMD registers, as ordinary C code in a handler may. */
    memset(junk, (int)intid, sizeof(junk));
    for (i = 0; i < 8; i++) {
        d = d * 3.25 + junk[i];
    }
    hit_cpu = rt_cpu_id();
    handler_in_irq = rt_in_irq();
    hits++;
}

static void trigger(void)
{
    *(volatile uint32_t *)(uintptr_t)GICD_ISPENDR(TEST_INTID / 32) =
        1U << (TEST_INTID % 32);
}

/* Fills v0..v31 with @in, triggers the SPI, waits, saves them to @out. */
static void fp_round(const uint8_t *in, uint8_t *out)
{
    uintptr_t pend = GICD_ISPENDR(TEST_INTID / 32);
    uint32_t bit = 1U << (TEST_INTID % 32);

    __asm__ volatile(
        "ldp q0, q1, [%0, #0]\n\t"     "ldp q2, q3, [%0, #32]\n\t"
        "ldp q4, q5, [%0, #64]\n\t"    "ldp q6, q7, [%0, #96]\n\t"
        "ldp q8, q9, [%0, #128]\n\t"   "ldp q10, q11, [%0, #160]\n\t"
        "ldp q12, q13, [%0, #192]\n\t" "ldp q14, q15, [%0, #224]\n\t"
        "ldp q16, q17, [%0, #256]\n\t" "ldp q18, q19, [%0, #288]\n\t"
        "ldp q20, q21, [%0, #320]\n\t" "ldp q22, q23, [%0, #352]\n\t"
        "ldp q24, q25, [%0, #384]\n\t" "ldp q26, q27, [%0, #416]\n\t"
        "ldp q28, q29, [%0, #448]\n\t" "ldp q30, q31, [%0, #480]\n\t"
        "str %w3, [%2]\n\t"
        "dsb sy\n\t"
        "isb\n\t"
        "mov x9, #2000\n"
        "1:\n\t"
        "subs x9, x9, #1\n\t"
        "b.ne 1b\n\t"
        "stp q0, q1, [%1, #0]\n\t"     "stp q2, q3, [%1, #32]\n\t"
        "stp q4, q5, [%1, #64]\n\t"    "stp q6, q7, [%1, #96]\n\t"
        "stp q8, q9, [%1, #128]\n\t"   "stp q10, q11, [%1, #160]\n\t"
        "stp q12, q13, [%1, #192]\n\t" "stp q14, q15, [%1, #224]\n\t"
        "stp q16, q17, [%1, #256]\n\t" "stp q18, q19, [%1, #288]\n\t"
        "stp q20, q21, [%1, #320]\n\t" "stp q22, q23, [%1, #352]\n\t"
        "stp q24, q25, [%1, #384]\n\t" "stp q26, q27, [%1, #416]\n\t"
        "stp q28, q29, [%1, #448]\n\t" "stp q30, q31, [%1, #480]\n\t"
        :
        : "r"(in), "r"(out), "r"(pend), "r"(bit)
        : "x9", "memory", "cc",
          "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9",
          "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18",
          "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27",
          "v28", "v29", "v30", "v31");
}

static volatile int cpu1_go; /* volatile: set by handlers */

static void cpu1_wait(void *arg)
{
    unsigned want = *(unsigned *)arg;

    cpu1_go = 1;
    while (hits < want) {
        rt_cpu_sleep(1000);
    }
}

static int fail(const char *what)
{
    printf("irq FAILED: %s (hits %u)\n", what, hits);
    return 1;
}

int main(void)
{
    static uint8_t in[512], out[512];
    unsigned i, k, want;
    uint64_t t0, dt;

    if (rt_irq_register(TEST_INTID, handler, NULL) != 0 ||
        rt_irq_enable_spi(TEST_INTID, 0, true) != 0) {
        return fail("cannot set up the SPI");
    }
    if (rt_irq_register(0, handler, NULL) == 0 ||
        rt_irq_enable_spi(16, 0, true) == 0 ||
        rt_irq_enable_spi(TEST_INTID, 99, true) == 0) {
        return fail("bad arguments accepted");
    }

    /* 1: from the IRQ exception, registers preserved. */
    rt_irq_unmask();
    for (k = 0; k < ROUNDS; k++) {
        for (i = 0; i < sizeof(in); i++) {
            in[i] = (uint8_t)(i * 7 + k);
        }
        want = hits + 1;
        fp_round(in, out);
        if (hits != want) {
            return fail("handler did not run from the IRQ vector");
        }
        if (memcmp(in, out, sizeof(in)) != 0) {
            return fail("FP/SIMD registers changed across an interrupt");
        }
    }
    if (!handler_in_irq || hit_cpu != 0) {
        return fail("rt_in_irq() false in a handler, or wrong CPU");
    }
    if (rt_in_irq()) {
        return fail("rt_in_irq() true outside a handler");
    }

    /* 2: masked, dispatched by rt_cpu_sleep. */
    (void)rt_irq_save();
    want = hits + 1;
    trigger();
    t0 = rt_time_ns();
    while (hits != want && rt_time_ns() - t0 < 1000000000ULL) {
        rt_cpu_sleep(100000);
    }
    if (hits != want) {
        return fail("handler did not run from rt_cpu_sleep");
    }

    /* rt_cpu_sleep with nothing pending: about the time asked. */
    t0 = rt_time_ns();
    rt_cpu_sleep(5000);
    dt = rt_time_ns() - t0;
    if (dt < 4000000ULL || dt > 500000000ULL) {
        printf("slept %llu ns for 5 ms\n", (unsigned long long)dt);
        return fail("rt_cpu_sleep(5000) took the wrong time");
    }

    /* 3: routed to CPU 1, handled while it sleeps. */
    if (rt_num_cpus() > 1) {
        want = hits + 1;
        rt_irq_enable_spi(TEST_INTID, 1, true);
        rt_cpu_call(1, cpu1_wait, &want);
        while (!cpu1_go) {
            /* wait for CPU 1 to sleep */
        }
        trigger();
        rt_cpu_wait(1);
        if (hit_cpu != 1) {
            return fail("the SPI routed to CPU 1 ran elsewhere");
        }
    }
    printf("irq ok: %u interrupts\n", hits);
    return 0;
}
