/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of the bulk transfer tests (xfer_*.c): data patterns that can
 * be checked at any alignment, a word at a time.
 *
 * The pattern of @seed is a stream of bytes: byte p is byte (p & 7)
 * (little-endian) of the 64-bit word xu_word(seed, p >> 3).  A sender
 * fills a buffer with the stream from position 0 and sends the part
 * starting at some offset; the receiver checks what it got against the
 * stream from that offset.
 */
#ifndef XFER_UTIL_H
#define XFER_UTIL_H

#include <stdint.h>

/* Word @k of the pattern of @seed. */
uint64_t xu_word(uint64_t seed, uint64_t k);

/*
 * Fills @base (8-byte aligned) with the first @bytes bytes of the pattern
 * of @seed, rounded up to whole words.
 */
void xu_fill(void *base, uint64_t bytes, uint64_t seed);

/*
 * Checks that the @len bytes at @dst (any alignment) are the pattern of
 * @seed from position @off.  Returns 0, or 1 + the index of the first
 * byte that differs.
 */
uint64_t xu_check(const void *dst, uint64_t len, uint64_t off,
                  uint64_t seed);

/*
 * xu_wait: tempest_wait(cond, arg) for at most @limit_s seconds; then it
 * prints "STUCK: <what>" with the transfer engine's registers and
 * returns -1 (0 when cond came true).
 */
int xu_wait(int (*cond)(void *), void *arg, unsigned limit_s,
            const char *what);

/*
 * xu_need, xu_need_count: wait (XU_LIMIT_S at most) until cond(arg), or
 * until *@counter >= @want; on the time limit print "FAIL: stuck ..."
 * and end the node with status 3.
 */
#define XU_LIMIT_S      20
void xu_need(int (*cond)(void *), void *arg, const char *what);
/* volatile: the counter is set by handlers */
void xu_need_count(const volatile uint64_t *counter, uint64_t want,
                   const char *what);

/* Reads the node controller's 64-bit register at @off (statistics). */
uint64_t xu_reg64(unsigned off);

#endif /* XFER_UTIL_H */
