/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Tempest segment for a Linux process, its faults, and crash reports.
 *
 * The segment's 4 GiB of addresses are reserved (PROT_NONE) at start, so
 * nothing else lands there; rt_segment_map() maps one page of tagged
 * memory over the reservation through /dev/tempest0, rt_segment_unmap()
 * puts the reservation back (the kernel does the TLB maintenance).
 *
 * A refused access to tagged memory is a synchronous external abort,
 * which Linux turns into SIGBUS (BUS_OBJERR) with si_addr the faulting
 * address; an access to a page not mapped is SIGSEGV on the reservation.
 * Both, inside the segment, go to the hook of rt_fault_register(), on the
 * faulting thread's stack with the runtime's interrupts masked; when it
 * returns true the signal handler returns and the access runs again.
 * Every other fatal signal prints a crash report ("*** CRASH", as on bare
 * metal) and ends the process with TEMPEST_EXIT_CRASH.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "rt-linux.h"

#define PAGE            4096ULL
#define SEG_PAGES       (TEMPEST_SEGMENT_SIZE / PAGE)
#ifndef ESR_MAGIC
#define ESR_MAGIC       0x45535201      /* <asm/sigcontext.h> */
#endif
#define ESR_WNR         (1ULL << 6)
#define ESR_EC(esr)     (((esr) >> 26) & 0x3f)
#define EC_DABT_LOW     0x24

static _Atomic uint64_t mapped[SEG_PAGES / 64];
static _Atomic rt_fault_fn hook;

static bool in_segment(uint64_t va)
{
    return va >= TEMPEST_SEGMENT_BASE &&
           va - TEMPEST_SEGMENT_BASE < TEMPEST_SEGMENT_SIZE;
}

static void *reserve(uint64_t va, uint64_t len, int extra)
{
    return mmap((void *)(uintptr_t)va, len, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra, -1, 0);
}

int rt_segment_map(uint64_t va, uint64_t pa)
{
    uint64_t i = (va - TEMPEST_SEGMENT_BASE) / PAGE, bit = 1ULL << (i % 64);
    void *got;

    if (!in_segment(va) || (va & (PAGE - 1)) || (pa & (PAGE - 1)) ||
        pa < TEMPEST_TAGMEM_BASE ||
        pa - TEMPEST_TAGMEM_BASE >= rtl.tagmem_size) {
        return RT_SEG_ERR_ARG;
    }
    if (atomic_fetch_or(&mapped[i / 64], bit) & bit) {
        return RT_SEG_ERR_BUSY;
    }
    got = mmap((void *)(uintptr_t)va, PAGE, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_FIXED, rtl.fd, (off_t)pa);
    if (got != (void *)(uintptr_t)va) {
        atomic_fetch_and(&mapped[i / 64], ~bit);
        return RT_SEG_ERR_NOMEM;
    }
    return 0;
}

int rt_segment_unmap(uint64_t va)
{
    uint64_t i = (va - TEMPEST_SEGMENT_BASE) / PAGE, bit = 1ULL << (i % 64);

    if (!in_segment(va) || (va & (PAGE - 1)) ||
        !(atomic_load(&mapped[i / 64]) & bit)) {
        return RT_SEG_ERR_ARG;
    }
    if (reserve(va, PAGE, MAP_FIXED) != (void *)(uintptr_t)va) {
        return RT_SEG_ERR_NOMEM;
    }
    atomic_fetch_and(&mapped[i / 64], ~bit);
    return 0;
}

rt_fault_fn rt_fault_register(rt_fault_fn fn)
{
    return atomic_exchange(&hook, fn);
}

/* The ESR the kernel saved in the signal frame, 0 if none. */
static uint64_t frame_esr(const ucontext_t *uc)
{
    const uint8_t *p = (const uint8_t *)uc->uc_mcontext.__reserved;
    const uint8_t *end = p + sizeof(uc->uc_mcontext.__reserved);

    while (p + 8 <= end) {
        uint32_t magic, size;

        memcpy(&magic, p, 4);
        memcpy(&size, p + 4, 4);
        if (magic == 0 || size < 8) {
            break;
        }
        if (magic == ESR_MAGIC && size >= 16) {
            uint64_t esr;

            memcpy(&esr, p + 8, 8);
            return esr;
        }
        p += size;
    }
    return 0;
}

/* What is at a faulting address, as the bare-metal report says it. */
static const char *where(int sig, uint64_t far)
{
    if (far < 0x1000) {
        return "  (NULL pointer dereference)";
    }
    if (!in_segment(far)) {
        return "";
    }
    return sig == SIGBUS ? "  (Tempest user-managed segment: block access "
                           "fault)" :
           sig == SIGSEGV ? "  (Tempest user-managed segment: page fault)" :
           "  (Tempest user-managed segment)";
}

static void crash(int sig, const siginfo_t *si, const ucontext_t *uc,
                  const char *why)
{
    char line[512];
    uint64_t far = (uint64_t)(uintptr_t)si->si_addr;

    snprintf(line, sizeof(line), "*** CRASH on node %u CPU %u: %s (%s)\n"
             "  PC  0x%016llx\n  FAR 0x%016llx%s\n  ESR 0x%08llx\n"
             "*** node %u ends with status %d\n",
             rt_node_id(), rt_cpu_id(), strsignal(sig), why,
             (unsigned long long)uc->uc_mcontext.pc,
             (unsigned long long)far, where(sig, far),
             (unsigned long long)frame_esr(uc), rt_node_id(),
             TEMPEST_EXIT_CRASH);
    fflush(stdout);
    rtl_write_str(line);
    _exit(TEMPEST_EXIT_CRASH);
}

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
    ucontext_t *uc = ctx;
    uint64_t va = (uint64_t)(uintptr_t)si->si_addr, esr = frame_esr(uc);
    rt_fault_fn fn = atomic_load(&hook);
    struct rt_fault f;
    uint64_t flags;
    bool retry;
    int saved = errno;

    if (!in_segment(va) || !fn || si->si_code <= 0 ||
        (esr && ESR_EC(esr) != EC_DABT_LOW)) {
        crash(sig, si, uc, in_segment(va) ? "in the Tempest segment, no "
              "fault hook" : "not in the Tempest segment");
    }
    f.va = va;
    f.pc = uc->uc_mcontext.pc;
    f.cpu = rt_cpu_id();
    f.kind = sig == SIGBUS ? RT_FAULT_BLOCK : RT_FAULT_PAGE;
    f.is_write = (esr & ESR_WNR) != 0;
    flags = rt_irq_save();
    retry = fn(&f);
    rt_irq_restore(flags);
    if (!retry) {
        crash(sig, si, uc, "the fault hook refused it");
    }
    errno = saved;
}

static void on_crash(int sig, siginfo_t *si, void *ctx)
{
    crash(sig, si, ctx, "fatal signal");
}

void rtl_crash_init(void)
{
    static const int fatal[] = { SIGILL, SIGFPE, SIGTRAP };
    struct sigaction sa;
    unsigned i;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
        sigaction(fatal[i], &sa, NULL);
    }
    sa.sa_sigaction = on_fault;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

void rtl_fault_init(void)
{
    if (reserve(TEMPEST_SEGMENT_BASE, TEMPEST_SEGMENT_SIZE,
                MAP_FIXED_NOREPLACE) !=
        (void *)(uintptr_t)TEMPEST_SEGMENT_BASE) {
        rtl_fatal("cannot reserve the Tempest segment's addresses", errno);
    }
}
