/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /dev/tempest0 from a Linux node's program (docs/linux.rst, "The device
 * from user space"): the driver tempest.ko as an unprivileged process
 * uses it.  As root it checks the device's mode (0666) and reads
 * /proc/iomem, then drops to nobody (65534) and checks, each one printed:
 * one open at a time (EBUSY); the registers mapped at offset 0 (MAGIC,
 * NODE_ID and NUM_NODES as TEMPEST_NODE and TEMPEST_NODES say); EINVAL
 * for an offset outside every window, a range across a window's end and
 * MAP_PRIVATE; the RAM window refused (EPERM) while it is the kernel's
 * RAM, else mapped at VA == PA and written; the tagged memory alias
 * mapped at VA == PA, written and read back; interrupts: none before the
 * program enables one, an AOR interrupt seen by poll() and read(), the
 * line enabled again by write(1), a collective's interrupt waking a
 * blocked read(); after close, IRQ_ENABLE back to 0 and a new open
 * allowed; a read-only open mapping the registers read-only.  The
 * registers must be Device memory and the memory windows Normal: a
 * misaligned load faults on the one and not the other (checked with more
 * than one CPU only: QEMU checks Device memory's alignment only then).
 * Exits 0 if every check passed, else 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tempest/tempest-hw.h>

#define DEV "/dev/tempest0"
#define NOBODY 65534

static int failures, passed;
static volatile uint32_t *nc;

static void check(int ok, const char *fmt, ...)
{
    va_list ap;

    printf("devnode: %s: ", ok ? "ok" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (ok) {
        passed++;
    } else {
        failures++;
    }
}

/* "" when ok, else ": " and what errno says */
static const char *why(int ok)
{
    static char buf[128];

    if (ok) {
        return "";
    }
    snprintf(buf, sizeof(buf), ": %s", strerror(errno));
    return buf;
}

static uint32_t rd(unsigned off)
{
    return nc[off / 4];
}

static void wr(unsigned off, uint32_t v)
{
    nc[off / 4] = v;
}

static uint64_t rd64(unsigned lo)
{
    return rd(lo) | (uint64_t)rd(lo + 4) << 32;
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
    (void)sig;
    siglongjmp(bus_jmp, 1);
}

/*
 * Does a misaligned 4-byte load at p raise SIGBUS?  It does on Device
 * memory (an alignment fault), not on Normal memory: the one way user
 * space tells the memory type of its mapping.
 */
static int misaligned_faults(const volatile void *p)
{
    struct sigaction sa = { .sa_handler = on_sigbus }, old;
    volatile int faulted = 0;
    uint32_t v;

    sigaction(SIGBUS, &sa, &old);
    if (sigsetjmp(bus_jmp, 1) == 0) {
        __asm__ volatile("ldr %w0, [%1]" : "=r"(v) : "r"(p) : "memory");
    } else {
        faulted = 1;
    }
    sigaction(SIGBUS, &old, NULL);
    return faulted;
}

static void on_alarm(int sig)
{
    static const char msg[] = "devnode: FAIL: a read() still blocked "
                              "after 20 s\n";

    (void)sig;
    write(1, msg, sizeof(msg) - 1);
    _exit(1);
}

/* Does [base, base + size) meet a "System RAM" line of /proc/iomem? */
static int iomem_ram_overlaps(const char *iomem, uint64_t base,
                              uint64_t size)
{
    const char *p = iomem;

    while (p && *p) {
        unsigned long long lo, hi;
        int n = 0;

        if (sscanf(p, " %llx-%llx : %n", &lo, &hi, &n) == 2 && n &&
            !strncmp(p + n, "System RAM", 10) && lo < base + size &&
            base <= hi) {
            return 1;
        }
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return 0;
}

/* A command through the command bank (docs/node-controller.rst). */
static uint32_t nc_command(uint32_t op, const uint64_t *args, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        wr(TEMPEST_NC_CMD_ARG(i), (uint32_t)args[i]);
        wr(TEMPEST_NC_CMD_ARG(i) + 4, (uint32_t)(args[i] >> 32));
    }
    wr(TEMPEST_NC_CMD_OP, op);
    return rd(TEMPEST_NC_CMD_COMMIT);
}

static void *map(int fd, size_t len, int flags, uint64_t off, void *at)
{
    void *p = mmap(at, len, PROT_READ | PROT_WRITE, flags, fd, (off_t)off);

    return p == MAP_FAILED ? NULL : p;
}

static void check_einval(int fd, size_t len, int flags, uint64_t off,
                         const char *what)
{
    void *p = map(fd, len, flags, off, NULL);
    int err = errno;

    check(!p && err == EINVAL, "mmap of %s: %s", what,
          p ? "mapped" : strerror(err));
    if (p) {
        munmap(p, len);
    }
}

static void check_memory(int fd, uint64_t base, uint64_t size, int ram,
                         const char *what)
{
    size_t len = size < 65536 ? size : 65536;
    volatile uint64_t *p;
    int ok = 1;

    p = map(fd, len, MAP_SHARED | MAP_FIXED_NOREPLACE, base,
            (void *)(uintptr_t)base);
    if (ram) {
        check(!p && errno == EPERM, "%s at %#" PRIx64 " is the kernel's "
              "RAM: mmap refused with EPERM (%s)", what, base,
              p ? "mapped!" : strerror(errno));
        if (p) {
            munmap((void *)p, len);
        }
        return;
    }
    check(p == (void *)(uintptr_t)base, "%s mapped at VA == PA %#" PRIx64
          " (%s)", what, base, p ? "yes" : strerror(errno));
    if (!p) {
        return;
    }
    for (size_t i = 0; i < len / 8; i += 64) {
        p[i] = (base + i * 8) ^ 0x5a5a5a5a5a5a5a5aULL;
    }
    for (size_t i = 0; i < len / 8; i += 64) {
        ok &= p[i] == ((base + i * 8) ^ 0x5a5a5a5a5a5a5a5aULL);
    }
    check(ok, "%s: %zu bytes written and read back", what, len);
    check(!misaligned_faults((const volatile char *)p + 1),
          "%s is Normal memory: a misaligned load works", what);
    munmap((void *)p, len);
}

int main(void)
{
    static char iomem[65536];
    const char *env_node = getenv("TEMPEST_NODE");
    const char *env_nodes = getenv("TEMPEST_NODES");
    struct pollfd pfd;
    struct stat st = { 0 };
    uint64_t ram_base, ram_size, tag_size, args[6];
    uint32_t count, count2, v, node;
    cpu_set_t cpu0;
    size_t n = 0;
    FILE *f;
    int fd, fd2, ram, ok;

    setvbuf(stdout, NULL, _IOLBF, 0);
    /* The command bank is per CPU: stay on one */
    CPU_ZERO(&cpu0);
    CPU_SET(0, &cpu0);
    sched_setaffinity(0, sizeof(cpu0), &cpu0);

    ok = stat(DEV, &st) == 0 && S_ISCHR(st.st_mode);
    check(ok, DEV " exists, a character device%s", why(ok));
    check((st.st_mode & 07777) == 0666, DEV " has mode 0666 (%04o)",
          (unsigned)(st.st_mode & 07777));
    f = fopen("/proc/iomem", "r");
    if (f) {
        n = fread(iomem, 1, sizeof(iomem) - 1, f);
        fclose(f);
    }
    iomem[n] = 0;
    if (geteuid() == 0) {
        check(setgroups(0, NULL) == 0 && setgid(NOBODY) == 0 &&
              setuid(NOBODY) == 0, "dropped root for uid %d", NOBODY);
    }

    fd = open(DEV, O_RDWR);
    check(fd >= 0, "open " DEV " as uid %d%s", (int)getuid(), why(fd >= 0));
    if (fd < 0) {
        return 1;
    }
    fd2 = open(DEV, O_RDWR);
    check(fd2 < 0 && errno == EBUSY, "a second open: %s",
          fd2 < 0 ? strerror(errno) : "allowed");

    nc = map(fd, TEMPEST_NC_SIZE, MAP_SHARED, 0, NULL);
    check(nc != NULL, "registers mapped%s", why(nc != NULL));
    if (!nc) {
        return 1;
    }
    node = rd(TEMPEST_NC_NODE_ID);
    check(rd(TEMPEST_NC_MAGIC) == TEMPEST_NC_MAGIC_VALUE, "MAGIC %#x",
          rd(TEMPEST_NC_MAGIC));
    check(env_node && node == strtoul(env_node, NULL, 10),
          "NODE_ID %u, TEMPEST_NODE %s", node, env_node);
    check(env_nodes && rd(TEMPEST_NC_NUM_NODES) == strtoul(env_nodes, NULL,
                                                          10),
          "NUM_NODES %u, TEMPEST_NODES %s", rd(TEMPEST_NC_NUM_NODES),
          env_nodes);

    /* QEMU checks Device memory's alignment only with parallel vCPUs */
    if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
        check(misaligned_faults((const volatile char *)nc +
                                TEMPEST_NC_SCRATCH + 1),
              "the registers are Device memory: a misaligned load faults");
    } else {
        printf("devnode: skipped: the registers' memory type (1 CPU)\n");
    }

    ram_base = rd64(TEMPEST_NC_RAM_BASE_LO);
    ram_size = rd64(TEMPEST_NC_RAM_SIZE_LO);
    tag_size = rd64(TEMPEST_NC_TAGMEM_SIZE_LO);
    check_einval(fd, 4096, MAP_SHARED, TEMPEST_NC_SIZE,
                 "the page after the registers");
    check_einval(fd, 2 * TEMPEST_NC_SIZE, MAP_SHARED, 0,
                 "the registers and past them");
    check_einval(fd, 4096, MAP_PRIVATE, 0, "the registers, MAP_PRIVATE");
    check_einval(fd, 4096, MAP_SHARED, TEMPEST_RAM_BASE + TEMPEST_RAM_MAX,
                 "an address past RAM");
    check_einval(fd, 8192, MAP_SHARED,
                 TEMPEST_TAGMEM_ALIAS + tag_size - 4096,
                 "across the end of tagged memory");
    ram = iomem_ram_overlaps(iomem, ram_base, ram_size);
    check(n > 0 && strstr(iomem, "System RAM"), "/proc/iomem read as root");
    check_memory(fd, ram_base, ram_size, ram, "the NC's RAM window");
    check(tag_size > 0, "tagged memory: %#" PRIx64 " bytes", tag_size);
    check_memory(fd, TEMPEST_TAGMEM_ALIAS, tag_size, 0,
                 "the tagged memory alias");

    /* Interrupts: none while IRQ_ENABLE is 0 (a read must never hang) */
    signal(SIGALRM, on_alarm);
    alarm(20);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    ok = read(fd, &count, 4) < 0 && errno == EAGAIN;
    check(ok, "no event before IRQ_ENABLE: read is EAGAIN%s", why(ok));
    check(read(fd, args, 8) < 0 && errno == EINVAL,
          "read of 8 bytes: EINVAL");
    v = 2;
    check(write(fd, &v, 4) < 0 && errno == EINVAL, "write of 2: EINVAL");
    fcntl(fd, F_SETFL, 0);
    alarm(0);

    /* AOR_GLOBAL changes everywhere once the first node sets its bit */
    wr(TEMPEST_NC_IRQ_ENABLE, TEMPEST_NC_IRQ_AOR);
    wr(TEMPEST_NC_AOR_SET, 1);
    pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
    alarm(20);
    check(poll(&pfd, 1, 20000) == 1 && (pfd.revents & POLLIN),
          "poll: an AOR interrupt (IRQ_STATUS %#x)", rd(TEMPEST_NC_IRQ_STATUS));
    check(read(fd, &count, 4) == 4 && count >= 1, "read: event count %u",
          count);
    alarm(0);
    check(rd(TEMPEST_NC_IRQ_STATUS) & TEMPEST_NC_IRQ_AOR, "IRQ_STATUS AOR");
    wr(TEMPEST_NC_IRQ_ACK, TEMPEST_NC_IRQ_AOR);
    v = 1;
    check(write(fd, &v, 4) == 4, "write 1: line enabled again");
    check(poll(&pfd, 1, 0) == 0, "poll: no event after the acknowledgement");

    /* A blocked read woken by a collective's interrupt (every node) */
    for (int i = 0; i < 200 && rd(TEMPEST_NC_FABRIC_STATE) !=
         TEMPEST_FABRIC_READY; i++) {
        usleep(100000);
    }
    wr(TEMPEST_NC_IRQ_ENABLE, TEMPEST_NC_IRQ_COLL);
    memset(args, 0, sizeof(args));
    args[0] = TEMPEST_COLL_COMBINE;
    args[1] = TEMPEST_COLL_ADD | TEMPEST_COLL_REDUCE << 8;
    args[2] = 1;
    args[5] = TEMPEST_SEG_NONE;
    check(nc_command(TEMPEST_CMD_COLL_START, args, 6) == TEMPEST_CMD_SUCCESS,
          "COLL_START (reason %u)", rd(TEMPEST_NC_CMD_REASON));
    alarm(20);
    check(read(fd, &count2, 4) == 4 && count2 != count,
          "read woken by the collective's interrupt: count %u", count2);
    alarm(0);
    check(rd(TEMPEST_NC_COLL_STATUS) == TEMPEST_COLL_ST_DONE &&
          rd64(TEMPEST_NC_COLL_RESULT) == rd(TEMPEST_NC_NUM_NODES),
          "the sum of 1 over the nodes is %" PRIu64,
          rd64(TEMPEST_NC_COLL_RESULT));
    wr(TEMPEST_NC_IRQ_ACK, TEMPEST_NC_IRQ_COLL);

    /* Close: IRQ_ENABLE back to 0, the device free again */
    munmap((void *)nc, TEMPEST_NC_SIZE);
    close(fd);
    fd = open(DEV, O_RDWR);
    check(fd >= 0, "open again after close%s", why(fd >= 0));
    nc = fd >= 0 ? map(fd, 4096, MAP_SHARED, 0, NULL) : NULL;
    check(nc && rd(TEMPEST_NC_IRQ_ENABLE) == 0, "IRQ_ENABLE 0 after close");

    /* Read-only: MAP_SHARED, PROT_READ of a file opened O_RDONLY */
    if (nc) {
        munmap((void *)nc, 4096);
    }
    close(fd);
    fd = open(DEV, O_RDONLY);
    nc = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    ok = fd >= 0 && nc != MAP_FAILED;
    check(ok && rd(TEMPEST_NC_MAGIC) == TEMPEST_NC_MAGIC_VALUE,
          "registers read through a read-only open and mapping%s", why(ok));
    printf("devnode: node %u: %d passed, %d failed\n", node, passed,
           failures);
    return failures ? 1 : 0;
}
