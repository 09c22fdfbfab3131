/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Linux runtime's start: open /dev/tempest0, map the node controller
 * and user memory at VA == PA, move the program into user memory, and run
 * main() on a stack there (rt-linux.h says why).
 *
 * The program is linked at TEMPEST_USERMEM_BASE (-Ttext-segment), so the
 * kernel loads it at the addresses of user memory, but into ordinary
 * pages.  Before main (a preinit_array function: after libc's own start,
 * before any constructor) those ranges are copied into user memory
 * through a second mapping, and one mmap() then puts user memory itself at
 * their addresses: the bytes under every pointer, the running code's
 * included, are the same before and after that call.  Nothing may write
 * to the program's memory between the copy and the mmap(): the code in
 * between keeps its state on the (kernel's) stack.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rt-linux.h"

#define PAGE            4096UL
#define MAX_RANGES      32

struct rtl_info rtl = { .fd = -1 };

extern char __executable_start[], etext[];

void rtl_write_str(const char *s)
{
    size_t len = strlen(s);

    while (len) {
        ssize_t n = write(STDOUT_FILENO, s, len);

        if (n <= 0) {
            if (n < 0 && errno == EINTR) {
                continue;
            }
            return;
        }
        s += n;
        len -= (size_t)n;
    }
}

void rtl_fatal(const char *what, int err)
{
    char line[256];

    snprintf(line, sizeof(line), "tempest-rt: %s%s%s\n", what,
             err ? ": " : "", err ? strerror(err) : "");
    rtl_write_str(line);
    _exit(RTL_EXIT_NO_DEVICE);
}

/* ---- identity, time, registers --------------------------------------- */

unsigned rt_node_id(void)
{
    return rtl.node;
}

unsigned rt_num_nodes(void)
{
    return rtl.nodes;
}

unsigned rt_num_cpus(void)
{
    return rtl.cpus;
}

uint64_t rt_ram_base(void)
{
    return rtl.ram_base;
}

uint64_t rt_ram_size(void)
{
    return rtl.ram_size;
}

uint64_t rt_tagmem_size(void)
{
    return rtl.tagmem_size;
}

uint32_t rt_nc_read(unsigned off)
{
    if ((off & 3) || off >= TEMPEST_NC_SIZE) {
        return 0;
    }
    return *(volatile uint32_t *)(uintptr_t)(TEMPEST_NC_BASE + off);
}

void rt_nc_write(unsigned off, uint32_t v)
{
    if ((off & 3) || off >= TEMPEST_NC_SIZE) {
        return;
    }
    *(volatile uint32_t *)(uintptr_t)(TEMPEST_NC_BASE + off) = v;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t rt_time_ns(void)
{
    return mono_ns() - rtl.t0_ns;
}

bool rt_text_contains(const void *pc)
{
    return (const char *)pc >= __executable_start &&
           (const char *)pc < etext;
}

void rt_puts_raw(const char *s)
{
    if (s) {
        rtl_write_str(s);
    }
}

void rt_exit(int status)
{
    fflush(stdout);
    fflush(stderr);
    _exit(status & 0xff);
}

/* ---- moving the program into user memory ------------------------------ */

struct range {
    uint64_t start, end;
    int prot;
};

/* The mappings of /proc/self/maps inside [lo, hi), in order. */
static unsigned read_ranges(uint64_t lo, uint64_t hi, struct range *r)
{
    char buf[8192];
    size_t len = 0;
    ssize_t n;
    unsigned count = 0;
    char *p, *nl;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        rtl_fatal("cannot read /proc/self/maps", errno);
    }
    while (len < sizeof(buf) - 1 &&
           (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0) {
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    for (p = buf; *p; p = nl + 1) {
        unsigned long long s, e;
        char perm[5];

        nl = strchr(p, '\n');
        if (!nl) {
            break;
        }
        if (sscanf(p, "%llx-%llx %4s", &s, &e, perm) != 3 ||
            s < lo || e > hi) {
            continue;
        }
        if (count == MAX_RANGES) {
            rtl_fatal("too many mappings in user memory", 0);
        }
        r[count].start = s;
        r[count].end = e;
        r[count].prot = (perm[0] == 'r' ? PROT_READ : 0) |
                        (perm[1] == 'w' ? PROT_WRITE : 0) |
                        (perm[2] == 'x' ? PROT_EXEC : 0);
        count++;
    }
    return count;
}

/* Maps the driver's window at @off (its physical address, but 0 for the
 * registers) at @va. */
static void map_fixed(uint64_t va, uint64_t off, uint64_t len, int prot,
                      const char *what)
{
    void *got = mmap((void *)(uintptr_t)va, len, prot,
                     MAP_SHARED | MAP_FIXED_NOREPLACE, rtl.fd, (off_t)off);

    if (got != (void *)(uintptr_t)va) {
        char msg[128];

        snprintf(msg, sizeof(msg), "cannot map %s at 0x%llx", what,
                 (unsigned long long)va);
        rtl_fatal(msg, got == MAP_FAILED ? errno : EEXIST);
    }
}

static void move_image(void)
{
    struct range r[MAX_RANGES];
    uint64_t base = rtl.ram_base, end = base + rtl.ram_size, span;
    unsigned n = read_ranges(base, end, r), i;
    uint8_t *tmp;
    void *got;

    if (n == 0 || r[0].start != (uint64_t)(uintptr_t)__executable_start) {
        rtl_fatal("the program is not linked into user memory: build it "
                  "with 'scripts/tempest cc --linux'", 0);
    }
    span = r[n - 1].end - base;
    tmp = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_SHARED, rtl.fd,
               (off_t)base);
    if (tmp == MAP_FAILED) {
        rtl_fatal("cannot map user memory", errno);
    }
    for (i = 0; i < n; i++) {
        memcpy(tmp + (r[i].start - base), (void *)(uintptr_t)r[i].start,
               r[i].end - r[i].start);
    }
    __builtin___clear_cache((char *)tmp, (char *)tmp + span);
    /* From here to the mmap() the program's memory must not change. */
    got = mmap((void *)(uintptr_t)base, span,
               PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED | MAP_FIXED,
               rtl.fd, (off_t)base);
    if (got != (void *)(uintptr_t)base) {
        /* The old mappings may be gone: nothing but _exit is safe. */
        static const char msg[] = "tempest-rt: cannot move the program "
                                  "into user memory\n";
        ssize_t unused = write(STDOUT_FILENO, msg, sizeof(msg) - 1);

        (void)unused;
        _exit(RTL_EXIT_NO_DEVICE);
    }
    munmap(tmp, span);
    for (i = 0; i < n; i++) {
        if (r[i].prot != (PROT_READ | PROT_WRITE | PROT_EXEC)) {
            mprotect((void *)(uintptr_t)r[i].start, r[i].end - r[i].start,
                     r[i].prot);
        }
    }
    rtl.heap_start = (base + span + PAGE - 1) & ~(PAGE - 1);
    rtl.heap_end = end;
    if (rtl.heap_start < end) {
        map_fixed(rtl.heap_start, rtl.heap_start, end - rtl.heap_start,
                  PROT_READ | PROT_WRITE, "the heap in user memory");
    }
}

static uint64_t reg64(unsigned lo)
{
    return rt_nc_read(lo) | (uint64_t)rt_nc_read(lo + 4) << 32;
}

static void rtl_start(int argc, char **argv, char **envp)
{
    cpu_set_t one;

    (void)argc;
    (void)argv;
    (void)envp;
    rtl.t0_ns = mono_ns();
    rtl_crash_init();
    rtl.fd = open(RTL_DEVICE, O_RDWR | O_CLOEXEC);
    if (rtl.fd < 0) {
        rtl_fatal("cannot open " RTL_DEVICE " (a Tempest program runs on a "
                  "Linux node of the tempest machine: scripts/tempest run "
                  "--linux)", errno);
    }
    map_fixed(TEMPEST_NC_BASE, 0, TEMPEST_NC_SIZE, PROT_READ | PROT_WRITE,
              "the node controller");
    if (rt_nc_read(TEMPEST_NC_MAGIC) != TEMPEST_NC_MAGIC_VALUE) {
        rtl_fatal("no tempest node controller behind " RTL_DEVICE, 0);
    }
    rtl.node = rt_nc_read(TEMPEST_NC_NODE_ID);
    rtl.nodes = rt_nc_read(TEMPEST_NC_NUM_NODES);
    rtl.cpus = rt_nc_read(TEMPEST_NC_NUM_CPUS);
    rtl.ram_base = reg64(TEMPEST_NC_RAM_BASE_LO);
    rtl.ram_size = reg64(TEMPEST_NC_RAM_SIZE_LO);
    if (rtl.ram_base != TEMPEST_USERMEM_BASE) {
        rtl_fatal("the node has no user memory (machine property usermem; "
                  "scripts/tempest run --linux gives it)", 0);
    }
    if (rt_nc_read(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_TAGS) {
        rtl.tagmem_size = reg64(TEMPEST_NC_TAGMEM_SIZE_LO);
    }
    move_image();
    rtl_heap_add((void *)(uintptr_t)rtl.heap_start,
                 rtl.heap_end - rtl.heap_start);
    if (rtl.tagmem_size) {
        map_fixed(TEMPEST_TAGMEM_ALIAS, TEMPEST_TAGMEM_ALIAS,
                  rtl.tagmem_size,
                  PROT_READ | PROT_WRITE, "the tagged memory's alias");
    }
    rtl_fault_init();
    /* The libraries' constructors, which come next, run on CPU 0. */
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof(one), &one);
    rtl_cpu_main_init();
    rtl_irq_init();
}

__attribute__((section(".preinit_array"), used))
static void (*const rtl_preinit)(int, char **, char **) = rtl_start;

/* ---- main on a stack in user memory ---------------------------------- */

int __real_main(int argc, char **argv, char **envp);
int __wrap_main(int argc, char **argv, char **envp);

int __wrap_main(int argc, char **argv, char **envp)
{
    uint8_t *stack = aligned_alloc(PAGE, RTL_MAIN_STACK);

    if (!stack) {
        rtl_fatal("no user memory left for main's stack", ENOMEM);
    }
    /* A guard page: running off the stack faults, not corrupts. */
    mprotect(stack, PAGE, PROT_NONE);
    exit(rtl_call_on_stack(__real_main, argc, argv, envp,
                           stack + RTL_MAIN_STACK));
}
