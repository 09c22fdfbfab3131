/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The console: picolibc tinystdio streams on the PL011 UART.
 *
 * Output is buffered per CPU up to the end of a line (or LINE_LEN bytes,
 * or fflush) and then written whole under the UART output lock, so lines
 * of different CPUs never mix.  '\n' is written as it is.  Interrupt
 * handlers have a line buffer of their own on each CPU, and the lock masks
 * IRQs while it is held, so a handler's line never lands inside the line
 * of the code it interrupted.
 */
#include <stdio.h>

#include "rt-internal.h"

#define UART_DR         0x00
#define UART_FR         0x18
#define UART_IBRD       0x24
#define UART_FBRD       0x28
#define UART_LCR_H      0x2c
#define UART_CR         0x30
#define UART_IMSC       0x38

#define FR_RXFE         (1U << 4)
#define FR_TXFF         (1U << 5)
#define LCR_FEN         (1U << 4)
#define LCR_WLEN8       (3U << 5)
#define CR_UARTEN       (1U << 0)
#define CR_TXE          (1U << 8)
#define CR_RXE          (1U << 9)

#define LINE_LEN        256
#define RAW_TIMEOUT_MS  1000

struct cpu_line {
    char buf[LINE_LEN];
    unsigned len;
} __attribute__((aligned(64)));

/* [cpu][0]: the CPU's code, [cpu][1]: its interrupt handlers. */
static struct cpu_line lines[RT_MAX_CPUS][2];

/* The UART output lock: 0 or the owning CPU's index + 1; recursive. */
static uint32_t console_owner;
static unsigned console_depth;
static uint64_t console_irq_flags;

static struct cpu_line *my_line(void)
{
    return &lines[rt_cpu_index()][rt_irq_depth_self() ? 1 : 0];
}

static uint32_t uart_reg(unsigned off)
{
    return rt_mmio_read32(TEMPEST_UART_BASE + off);
}

static void uart_reg_write(unsigned off, uint32_t v)
{
    rt_mmio_write32(TEMPEST_UART_BASE + off, v);
}

void rt_console_init(void)
{
    uart_reg_write(UART_CR, 0);
    uart_reg_write(UART_IBRD, 13);      /* 115200 baud from 24 MHz */
    uart_reg_write(UART_FBRD, 1);
    uart_reg_write(UART_LCR_H, LCR_FEN | LCR_WLEN8);
    uart_reg_write(UART_IMSC, 0);
    uart_reg_write(UART_CR, CR_UARTEN | CR_TXE | CR_RXE);
}

void rt_uart_write_raw(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        while (uart_reg(UART_FR) & FR_TXFF) {
            /* wait for room in the FIFO */
        }
        uart_reg_write(UART_DR, (uint8_t)s[i]);
    }
}

bool rt_console_lock(unsigned timeout_ms)
{
    uint32_t me = rt_cpu_index() + 1;
    uint64_t deadline = 0;
    uint32_t expected;
    uint64_t flags;

    if (__atomic_load_n(&console_owner, __ATOMIC_RELAXED) == me) {
        console_depth++;
        return true;
    }
    if (timeout_ms) {
        deadline = rt_ticks() + timeout_ms * rt_ticks_per_ms();
    }
    for (;;) {
        expected = 0;
        flags = rt_irq_save();
        if (__atomic_compare_exchange_n(&console_owner, &expected, me, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            console_depth = 1;
            console_irq_flags = flags;
            return true;
        }
        rt_irq_restore(flags);
        if (timeout_ms && rt_ticks() > deadline) {
            return false;
        }
        __asm__ volatile("yield");
    }
}

void rt_console_unlock(void)
{
    uint64_t flags;

    if (--console_depth == 0) {
        flags = console_irq_flags;
        __atomic_store_n(&console_owner, 0, __ATOMIC_RELEASE);
        rt_irq_restore(flags);
    }
}

void rt_console_flush_self(bool locked)
{
    struct cpu_line *l = my_line();

    if (l->len == 0) {
        return;
    }
    if (locked) {
        rt_console_lock(0);
    }
    rt_uart_write_raw(l->buf, l->len > LINE_LEN ? LINE_LEN : l->len);
    l->len = 0;
    if (locked) {
        rt_console_unlock();
    }
}

void rt_puts_raw(const char *s)
{
    bool locked;
    size_t n = 0;

    if (s == NULL) {
        return;
    }
    while (s[n]) {
        n++;
    }
    locked = rt_console_lock(RAW_TIMEOUT_MS);
    rt_console_flush_self(false);
    rt_uart_write_raw(s, n);
    if (locked) {
        rt_console_unlock();
    }
}

static int uart_put(char c, FILE *f)
{
    struct cpu_line *l = my_line();

    (void)f;
    l->buf[l->len++] = c;
    if (c == '\n' || l->len >= LINE_LEN) {
        rt_console_flush_self(true);
    }
    return (unsigned char)c;
}

static int uart_flush(FILE *f)
{
    (void)f;
    rt_console_flush_self(true);
    return 0;
}

static int uart_get(FILE *f)
{
    (void)f;
    rt_console_flush_self(true);
    if (uart_reg(UART_FR) & FR_RXFE) {
        return _FDEV_EOF;
    }
    return uart_reg(UART_DR) & 0xff;
}

static FILE uart_out = FDEV_SETUP_STREAM(uart_put, NULL, uart_flush,
                                         _FDEV_SETUP_WRITE);
static FILE uart_in = FDEV_SETUP_STREAM(NULL, uart_get, NULL,
                                        _FDEV_SETUP_READ);

FILE *const stdin = &uart_in;
FILE *const stdout = &uart_out;
FILE *const stderr = &uart_out;
