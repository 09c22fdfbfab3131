/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * <flash.h>: Stanford FLASH's base message passing and memory copy with
 * the paper's own names and types (Heinlein et al. 1994, Figures 4 and
 * 9), so that code written from the paper compiles unmodified:
 *
 *     MID *mid = send(Type, DestPID, SourceBuf, Length);
 *     while (!senddone(mid));
 *     bufalloc(BufferSize, Type);
 *     msg = receive(Type, &SenderPID, &Length);   (short, unsigned long)
 *     mid = fastmemcpy(SourceBuf, Length, DestBuf);
 *
 * One implementation: each call is libmagic's (<magic.h>), inline.  The
 * paper's names are send, senddone, bufalloc, receive and fastmemcpy, and
 * MID; ours are flash_self() and flash_nprocs() (the paper's process id
 * and P), bufreturn() (the paper's unnamed "special call" that gives a
 * buffer back), and FLASH_GLOBAL()/flash_global(), which name a
 * destination of fastmemcpy by one address.  See docs/bulk.rst.
 *
 * The names send and receive are POSIX's socket calls too: do not
 * include <sys/socket.h> in the same file.
 */
#ifndef FLASH_H
#define FLASH_H

#include <stdint.h>

#include "magic.h"

/* A message id: opaque, for senddone(); NULL if the send failed. */
typedef struct flash_mid MID;

/* This process's id (0 .. P-1) and the number of processes P. */
static inline int flash_self(void)
{
    return (int)TPPI_self_address;
}

static inline int flash_nprocs(void)
{
    return (int)TPPI_num_nodes;
}

/*
 * A destination for fastmemcpy() named by one address: process @pid's
 * address @local, with pid + 1 in the top 16 bits (guest addresses are
 * below 2^48).  An address with nothing there names this process.
 */
#define FLASH_GLOBAL_SHIFT  48
#define FLASH_GLOBAL(pid, local) \
    ((void *)(((uintptr_t)(pid) + 1) << FLASH_GLOBAL_SHIFT | \
              ((uintptr_t)(local) & ((1ULL << FLASH_GLOBAL_SHIFT) - 1))))

static inline void *flash_global(int pid, void *local)
{
    return FLASH_GLOBAL(pid, local);
}

static inline MID *flash_mid(magic_mid mid)
{
    return (MID *)(uintptr_t)mid;   /* MAGIC_NO_MID is 0: NULL */
}

/*
 * send: sends @Length bytes at @SourceBuf to process @DestPID as a message
 * of type @Type; returns at once (SourceBuf may not change until
 * senddone()).  At the receiver the message lands in buffer space posted
 * with bufalloc(), or waits in system space until some is.  NULL if the
 * send could not start (reported).
 */
static inline MID *send(int Type, int DestPID, const void *SourceBuf,
                        unsigned long Length)
{
    return flash_mid(magic_send((unsigned)Type, (unsigned)DestPID, SourceBuf,
                                Length));
}

/* senddone: 1 once the send (or copy) @mid is complete, else 0. */
static inline int senddone(MID *mid)
{
    return magic_senddone((magic_mid)(uintptr_t)mid) != 0;
}

/*
 * bufalloc: preallocates @BufferSize bytes of buffer space for messages
 * of @Type: they land in it one after another.  Returns the space, or
 * NULL (reported).
 */
static inline void *bufalloc(unsigned long BufferSize, int Type)
{
    return magic_bufalloc(BufferSize, (unsigned)Type);
}

/*
 * receive: the non-blocking receive: the oldest message of @Type, its
 * sender in *@SenderPID and length in *@Length; NULL with *SenderPID = -1
 * if none is there.
 */
static inline char *receive(int Type, short *SenderPID,
                            unsigned long *Length)
{
    int src;
    size_t len;
    char *msg = (char *)magic_receive((unsigned)Type, &src, &len);

    if (SenderPID) {
        *SenderPID = (short)src;
    }
    if (Length) {
        *Length = len;
    }
    return msg;
}

/* bufreturn: gives the space of received message @msg back. */
static inline int bufreturn(char *msg)
{
    return magic_bufreturn(msg);
}

/*
 * fastmemcpy: copies @Length bytes at @SourceBuf to @DestBuf, a
 * FLASH_GLOBAL() address (or a plain one: this process); returns at once.
 */
static inline MID *fastmemcpy(const void *SourceBuf, unsigned long Length,
                              void *DestBuf)
{
    uintptr_t d = (uintptr_t)DestBuf;
    unsigned pid = (unsigned)(d >> FLASH_GLOBAL_SHIFT);

    return flash_mid(magic_fastmemcpy(SourceBuf, Length,
                                      pid ? pid - 1 : TPPI_self_address,
                                      (void *)(d & ((1ULL <<
                                                     FLASH_GLOBAL_SHIFT) -
                                                    1))));
}

#endif /* FLASH_H */
