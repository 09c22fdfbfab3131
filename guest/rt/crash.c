/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The crash reporter: every exception vector comes here (vectors.S).
 *
 * It writes straight to the UART, without stdio or any lock the crashing
 * CPU might hold.  Whole reports of different CPUs are kept apart by the
 * UART output lock, taken with a timeout (the CPU holding it may itself be
 * the one that crashed).  Then the node ends with TEMPEST_EXIT_CRASH.
 */
#include "rt-internal.h"

#define EC_UNKNOWN          0x00
#define EC_IABT_LOW         0x20
#define EC_IABT_CUR         0x21
#define EC_DABT_LOW         0x24
#define EC_DABT_CUR         0x25

#define ISS_WNR             (1U << 6)
#define ISS_CM              (1U << 8)
#define ISS_FNV             (1U << 10)

#define LOCK_TIMEOUT_MS     1000

static uint8_t in_crash[RT_MAX_CPUS];

/* A line being put together, written out by line_end(). */
struct line {
    char buf[160];
    size_t len;
};

static void put_str(struct line *l, const char *s)
{
    while (*s && l->len < sizeof(l->buf)) {
        l->buf[l->len++] = *s++;
    }
}

static void put_hex(struct line *l, uint64_t v, int digits)
{
    char tmp[16];
    int i;

    for (i = digits - 1; i >= 0; i--) {
        tmp[i] = "0123456789abcdef"[v & 0xf];
        v >>= 4;
    }
    put_str(l, "0x");
    for (i = 0; i < digits && l->len < sizeof(l->buf); i++) {
        l->buf[l->len++] = tmp[i];
    }
}

static void put_dec(struct line *l, uint64_t v)
{
    char tmp[20];
    int n = 0;

    do {
        tmp[n++] = '0' + v % 10;
        v /= 10;
    } while (v);
    while (n > 0 && l->len < sizeof(l->buf)) {
        l->buf[l->len++] = tmp[--n];
    }
}

static void line_end(struct line *l)
{
    put_str(l, "\n");
    rt_uart_write_raw(l->buf, l->len);
    l->len = 0;
}

static const char *ec_name(unsigned ec)
{
    switch (ec) {
    case EC_UNKNOWN:
        return "undefined instruction";
    case 0x01:
        return "trapped WFI/WFE";
    case 0x07:
        return "FP/SIMD access trap";
    case 0x0e:
        return "illegal execution state";
    case 0x15:
        return "SVC (supervisor call)";
    case 0x16:
        return "HVC (hypervisor call)";
    case 0x17:
        return "SMC (secure monitor call)";
    case 0x18:
        return "trapped system register access";
    case 0x19:
        return "SVE access trap";
    case EC_IABT_LOW:
    case EC_IABT_CUR:
        return "instruction abort";
    case 0x22:
        return "PC alignment fault";
    case EC_DABT_LOW:
    case EC_DABT_CUR:
        return "data abort";
    case 0x26:
        return "SP alignment fault";
    case 0x28:
    case 0x2c:
        return "FP exception";
    case 0x2f:
        return "SError";
    case 0x30:
    case 0x31:
        return "hardware breakpoint";
    case 0x32:
    case 0x33:
        return "software step";
    case 0x34:
    case 0x35:
        return "watchpoint";
    case 0x3c:
        return "BRK instruction";
    default:
        return "unknown exception class";
    }
}

/* Describes an instruction/data abort fault status code. */
static void put_fsc(struct line *l, unsigned fsc)
{
    unsigned level = fsc & 3;

    switch (fsc & 0x3c) {
    case 0x00:
        put_str(l, "address size fault, level ");
        put_dec(l, level);
        return;
    case 0x04:
        put_str(l, "translation fault, level ");
        put_dec(l, level);
        return;
    case 0x08:
        put_str(l, "access flag fault, level ");
        put_dec(l, level);
        return;
    case 0x0c:
        put_str(l, "permission fault, level ");
        put_dec(l, level);
        return;
    case 0x14:
        put_str(l, "synchronous external abort on table walk, level ");
        put_dec(l, level);
        return;
    }
    switch (fsc) {
    case 0x10:
        put_str(l, "synchronous external abort");
        return;
    case 0x11:
        put_str(l, "tag check fault");
        return;
    case 0x18:
        put_str(l, "synchronous parity or ECC error");
        return;
    case 0x21:
        put_str(l, "alignment fault");
        return;
    case 0x30:
        put_str(l, "TLB conflict abort");
        return;
    default:
        put_str(l, "fault status ");
        put_hex(l, fsc, 2);
        return;
    }
}

static bool in_window(uint64_t a, uint64_t base, uint64_t size)
{
    return a >= base && a - base < size;
}

/*
 * Says what is at a faulting address, if the runtime knows; @fsc: the
 * abort's fault status code, or -1.
 */
static void put_where(struct line *l, uint64_t far, int fsc)
{
    uint64_t stacks = (uintptr_t)__stacks_start;
    uint64_t off;

    if (far < 0x1000) {
        put_str(l, "  (NULL pointer dereference)");
    } else if (far >= TEMPEST_SEGMENT_BASE &&
               far - TEMPEST_SEGMENT_BASE < TEMPEST_SEGMENT_SIZE) {
        if (fsc == 0x10) {
            put_str(l, "  (Tempest user-managed segment: block access "
                    "fault)");
        } else if ((fsc & 0x3c) == 0x04) {
            put_str(l, "  (Tempest user-managed segment: page fault)");
        } else {
            put_str(l, "  (Tempest user-managed segment)");
        }
    } else if (far >= stacks && far < (uintptr_t)__stacks_end) {
        off = far - stacks;
        if (off % RT_STACK_SLOT < RT_GUARD_SIZE) {
            put_str(l, "  (stack overflow: guard page of cpu ");
            put_dec(l, off / RT_STACK_SLOT);
            put_str(l, ")");
        }
    } else if (in_window(far, TEMPEST_GIC_DIST_BASE,
                         TEMPEST_GIC_REDIST_BASE + TEMPEST_GIC_REDIST_SIZE -
                         TEMPEST_GIC_DIST_BASE)) {
        put_str(l, "  (GIC)");
    } else if (in_window(far, TEMPEST_UART_BASE, TEMPEST_UART_SIZE)) {
        put_str(l, "  (UART)");
    } else if (in_window(far, TEMPEST_NC_BASE, TEMPEST_NC_SIZE)) {
        put_str(l, "  (node controller)");
    } else if (in_window(far, TEMPEST_TAGMEM_BASE, rt_info.tagmem_size)) {
        put_str(l, "  (tagged memory)");
    } else if (in_window(far, TEMPEST_TAGMEM_ALIAS, rt_info.tagmem_size)) {
        put_str(l, "  (tagged memory alias)");
    } else if (far < TEMPEST_RAM_BASE) {
        put_str(l, "  (no device there: unmapped)");
    } else if (far - TEMPEST_RAM_BASE >= rt_info.ram_size) {
        put_str(l, "  (beyond the end of RAM)");
    }
}

static const char *const vector_kind[] = {
    "synchronous", "IRQ", "FIQ", "SError",
};

static const char *const vector_from[] = {
    "from the program (EL1, SP_EL0)",
    "from runtime exception code (EL1, SP_EL1)",
    "from EL0 AArch64",
    "from EL0 AArch32",
};

void rt_crash(unsigned vector, struct rt_frame *f)
{
    unsigned cpu = rt_cpu_index();
    unsigned node = rt_nc_reg(TEMPEST_NC_NODE_ID);
    unsigned kind = vector & 3;
    unsigned ec = (f->esr >> 26) & 0x3f;
    unsigned iss = f->esr & 0x1ffffff;
    bool abort = ec == EC_IABT_LOW || ec == EC_IABT_CUR ||
                 ec == EC_DABT_LOW || ec == EC_DABT_CUR;
    bool mmu_on = RT_READ_SYSREG(sctlr_el1) & 1;
    struct line l;
    int i;

    l.len = 0;      /* no initialiser: it could become a memset call */

    if (cpu >= RT_MAX_CPUS) {
        cpu = 0;
    }
    if (in_crash[cpu]) {
        /* The reporter itself failed: one line, no lock, and out. */
        put_str(&l, "*** CRASH (again, in the crash reporter) on node ");
        put_dec(&l, node);
        put_str(&l, " cpu ");
        put_dec(&l, cpu);
        put_str(&l, ": EC ");
        put_hex(&l, ec, 2);
        put_str(&l, " ELR ");
        put_hex(&l, f->elr, 16);
        put_str(&l, " FAR ");
        put_hex(&l, f->far, 16);
        line_end(&l);
        rt_hard_exit(TEMPEST_EXIT_CRASH);
    }
    in_crash[cpu] = 1;

    /* Atomics need the MMU on; before that only the boot CPU runs. */
    if (mmu_on) {
        rt_console_lock(LOCK_TIMEOUT_MS);
        rt_console_flush_self(false);
    }

    put_str(&l, "*** CRASH on node ");
    put_dec(&l, node);
    put_str(&l, " cpu ");
    put_dec(&l, cpu);
    put_str(&l, ": ");
    if (kind == 0 || kind == 3) {
        put_str(&l, kind == 3 ? "SError" : ec_name(ec));
    } else {
        put_str(&l, vector_kind[kind]);
    }
    put_str(&l, " (EC ");
    put_hex(&l, ec, 2);
    put_str(&l, ")");
    line_end(&l);

    put_str(&l, "    ");
    put_str(&l, vector_kind[kind]);
    put_str(&l, " exception ");
    put_str(&l, vector_from[(vector >> 2) & 3]);
    line_end(&l);

    put_str(&l, "    ESR  ");
    put_hex(&l, f->esr, 16);
    if (kind == 0 && abort) {
        put_str(&l, "  ");
        if (ec == EC_DABT_LOW || ec == EC_DABT_CUR) {
            put_str(&l, (iss & ISS_CM) ? "cache maintenance, " :
                        (iss & ISS_WNR) ? "write, " : "read, ");
        } else {
            put_str(&l, "instruction fetch, ");
        }
        put_fsc(&l, iss & 0x3f);
    } else if (kind == 0 && ec == 0x3c) {
        put_str(&l, "  brk #");
        put_hex(&l, iss & 0xffff, 4);
    } else if (kind == 0 && (ec == 0x15 || ec == 0x16)) {
        put_str(&l, "  imm ");
        put_hex(&l, iss & 0xffff, 4);
    }
    line_end(&l);

    if (kind == 0 && (abort || ec == 0x22 || ec == 0x34 || ec == 0x35)) {
        put_str(&l, "    FAR  ");
        put_hex(&l, f->far, 16);
        if (abort && (iss & ISS_FNV)) {
            put_str(&l, "  (not valid)");
        } else {
            put_where(&l, f->far, abort ? (int)(iss & 0x3f) : -1);
        }
        line_end(&l);
    }

    put_str(&l, "    ELR  ");
    put_hex(&l, f->elr, 16);
    put_str(&l, "  SPSR ");
    put_hex(&l, f->spsr, 8);
    put_str(&l, "  SP ");
    put_hex(&l, f->sp, 16);
    line_end(&l);

    for (i = 0; i < 31; i++) {
        put_str(&l, i % 3 ? "  " : "   ");
        put_str(&l, i < 10 ? " x" : "x");
        put_dec(&l, i);
        put_str(&l, " ");
        put_hex(&l, f->x[i], 16);
        if (i % 3 == 2 || i == 30) {
            line_end(&l);
        }
    }

    put_str(&l, "*** node ");
    put_dec(&l, node);
    put_str(&l, " stopped, exit status ");
    put_dec(&l, TEMPEST_EXIT_CRASH);
    line_end(&l);
    rt_hard_exit(TEMPEST_EXIT_CRASH);
}
