/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libtempest's client interface: how another library shares the node
 * controller's rings, its interrupt and its control events with
 * libtempest in one program (docs/tempest.rst, "Other libraries on the
 * same rings").  libstrata is the client today.
 *
 * libtempest's protocol thread stays the one consumer of the receive ring
 * (RQ) and the control event ring (CQ) and the one owner of the node
 * controller's interrupt.  A client names a protocol, the high nibble of
 * the KIND byte of its packets (0 is Tempest's active messages): the
 * protocol thread hands each packet of that protocol to the client's
 * packet() at the packet's turn in the RQ (the client copies it and runs
 * its handlers when it likes), gives every control event to the client's
 * event() after its own handling, and tells the client's irq() when one
 * of the client's interrupt bits fired; after either it wakes the CPUs
 * waiting in tempest_wait() (or tempest_client_wait()).  The client sends
 * through tempest_client_send(), under the same ring locks as
 * libtempest's messages, so a multi-packet Tempest message is never cut
 * by a client's packet.
 *
 * Nothing here is for programs: they use tempest.h.
 */
#ifndef TEMPEST_CLIENT_H
#define TEMPEST_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "tempest/nc.h"

struct tempest_client {
    /* The high nibble of KIND of the client's packets: 1 to 15. */
    uint8_t proto;
    /*
     * Interrupt bits (TEMPEST_NC_IRQ_*) the client waits for besides
     * RQ, CQ and SQ (which libtempest keeps enabled): COLL, BCAST, AOR.
     */
    uint32_t irq_bits;
    /*
     * On the protocol thread, at the packet's turn: a packet of the
     * client's protocol.  @p is valid only during the call (it is freed
     * after); the client copies what it needs and must not block.  Also
     * from tempest_client_poll() on the calling CPU, with its IRQs
     * masked, while the protocol thread is not in a step: never two
     * calls at once.
     */
    void (*packet)(const struct nc_pkt *p);
    /*
     * On the protocol thread: a control event (a copy), after libtempest
     * handled it (peer gone, send error, and libtempest's own: timers,
     * transfers).  May be NULL.
     */
    void (*event)(const struct nc_event *ev);
    /*
     * On the protocol thread's CPU, in its interrupt handler: the
     * interrupt bits of irq_bits, and TEMPEST_NC_IRQ_SQ, that were
     * pending (already acknowledged).  Also from a client's spin
     * (tempest_client_spin_wait) on its own CPU, with the bits of
     * irq_bits it found, possibly while the thread calls it too: it must
     * only note them, atomically.  May be NULL.
     */
    void (*irq)(uint32_t bits);
};

/*
 * tempest_client_register: makes @c (which must stay valid) libtempest's
 * client and enables its interrupt bits at the node controller.  Call it
 * once, from computation code, after start-up (in main).  Returns 0, or
 * -1 if there is a client already, @c is NULL or its proto is not 1 to
 * 15, or libtempest did not start.
 */
int tempest_client_register(const struct tempest_client *c);

/*
 * tempest_client_send: puts one packet (KIND @kind, WORD0 @w0, WORD1
 * @w1, @len bytes of payload from @data, at most TEMPEST_PKT_PAYLOAD)
 * into send ring @net (TEMPEST_NET_REQUEST or _REPLY) for node @dest and
 * rings the doorbell.  From computation code (not a handler of
 * libtempest's).  Never waits: returns false if the ring is full or
 * libtempest holds it for a message (try again after polling), true once
 * the packet is posted.
 */
bool tempest_client_send(unsigned net, unsigned dest, uint8_t kind,
                         uint32_t w0, uint64_t w1, const void *data,
                         uint32_t len);

/*
 * tempest_client_wait: tempest_wait_until() (tempest.h), for a client:
 * returns 1 once cond(arg) is true, 0 at @deadline (rt_time_ns(); 0 for
 * none).  cond() is re-checked whenever the protocol thread wakes
 * waiters: after handlers, after a client's packet or interrupt bit.
 */
int tempest_client_wait(int (*cond)(void *arg), void *arg, uint64_t deadline);

/*
 * tempest_client_spin_wait: tempest_client_wait(), for a wait of the
 * client's own (a collective, a broadcast word) rather than the sleep of
 * a polling loop that has spun already.  On a node with a dedicated
 * protocol thread, where the node spins (the SPIN_US hint), the calling
 * CPU first spins for the spin time and takes what it waits for itself
 * (the client's packets, its interrupt bits), while the thread sleeps:
 * one spinner a node.  The client's interrupt bits may then stay off in
 * IRQ_ENABLE until a client's wait sleeps: a client sleeps only through
 * tempest_client_wait() or this, never in a sleep of its own.
 */
int tempest_client_spin_wait(int (*cond)(void *arg), void *arg,
                             uint64_t deadline);

/*
 * tempest_client_idle_wait: tempest_client_wait(), for the sleep of a
 * client's polling loop that has spun already.  Where the protocol
 * thread sleeps while the client's polls go on (they poll for it) and a
 * sleep costs more than a spin (rt_cpu_sleep_spin_us(): under Linux), the
 * calling CPU spins until @deadline first (at most SPIN_US plus that
 * runtime's spin, then it sleeps), as tempest_client_spin_wait() does:
 * a sleep would give the node back to the thread, and the next packet
 * would wake the thread and then the client through the kernel.
 * Elsewhere the same as tempest_client_wait().
 */
int tempest_client_idle_wait(int (*cond)(void *arg), void *arg,
                             uint64_t deadline);

/*
 * tempest_client_polled: true if the calling CPU is the one the protocol
 * thread shares (a one-vCPU node): a wait there should tell the node
 * controller it polls (nc_poll); on a node with a dedicated protocol
 * thread, that thread does.
 */
bool tempest_client_polled(void);

/*
 * tempest_client_poll: one turn of a client's polling loop, from
 * computation code.  On the CPU the protocol thread shares (a one-vCPU
 * node, tempest_client_polled()) it runs, there and then, the protocol
 * thread's work waiting in memory (packets in the RQ, the client's among
 * them, events in the CQ), so that a loop that reads the rings this way
 * may tell the node controller nc_poll_peek(): peers on this host then
 * write packets straight into the RQ and raise nothing.  With a dedicated
 * protocol thread it hands the client its own packets at the RQ's head
 * (client->packet, on the calling CPU) while the thread is not in a
 * step, and, where the node spins, polls for the thread: the thread
 * sleeps while such polls go on (@in_wait false: a polling loop of the
 * program's, not one inside a wait of the client's, which spins in
 * tempest_client_spin_wait), and each poll then writes POLL when due and
 * wakes the thread for work of its own (docs/tempest.rst, "A client's
 * polls spin for the thread").  Returns true if it ran or handed over
 * any; false at once on the protocol thread, or when nothing waits.
 */
bool tempest_client_poll(bool in_wait);

/*
 * tempest_client_on_protocol_thread: true if the caller runs on the
 * protocol thread (a handler, timer or callback of libtempest's), where a
 * client must not wait for anything.
 */
bool tempest_client_on_protocol_thread(void);

/*
 * tempest_on_event: makes the protocol thread call fn(ev) (@ev a copy)
 * for every control event of type @type that belongs to another library:
 * TEMPEST_EV_CHAN alone (libchan on the channel controller, docs/chan.rst).
 * Call it from a constructor of priority 190 or less (before libtempest
 * starts its protocol thread).  Other types are ignored (libtempest keeps
 * its own).  @fn runs on the protocol thread, must not block, and the
 * CPUs in tempest_wait() are woken after it.
 */
void tempest_on_event(unsigned type, void (*fn)(const struct nc_event *ev));

#endif /* TEMPEST_CLIENT_H */
