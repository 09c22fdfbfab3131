/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Tempest fabric: reliable, ordered, flow-controlled packet delivery
 * between the node controllers of one cluster.
 *
 * Every pair of nodes that talk shares one stream socket (Unix-domain for
 * nodes on one host, TCP for nodes on several), made on first use: every
 * node connects to node 0 at start, and of any other pair the higher
 * node dials the lower one when either needs the link (the lower one
 * asks through node 0).  Each side greets the other
 * with a HELLO naming the cluster, so a node cannot join the wrong one.
 * Data moves under credit-based flow control, per peer and per logical
 * network: a sender holds 'credits' packets' worth of credit and gets it
 * back as the receiver moves packets into its guest's receive ring, so a
 * slow receiver throttles its senders and memory stays bounded.  A peer
 * that disconnects is reported, never waited on; a malformed frame is
 * dropped and counted.  Everything runs in QEMU's main loop under the BQL.
 */
#ifndef HW_TEMPEST_TEMPEST_FABRIC_H
#define HW_TEMPEST_TEMPEST_FABRIC_H

#include "qapi/error.h"
#include "qom/object.h"

/*
 * A fabric is a QOM backend object (-object tempest-fabric-socket,...,
 * or made by the node controller from its own properties), attached to
 * one node controller, which gives it the callbacks below.  The socket
 * backend is the one of today; a shared-memory backend implements the
 * same class.
 */
#define TYPE_TEMPEST_FABRIC "tempest-fabric"
#define TYPE_TEMPEST_FABRIC_SOCKET "tempest-fabric-socket"
/*
 * Sockets, and shared memory between the nodes that share a host: with
 * addr=unix:DIR every link; with addr=tcp:... the links between nodes of
 * one host (properties host-id and shm-dir; docs/fabric.rst, "Mixed
 * clusters"), the others staying TCP.  Read-only "shm-links": its links
 * in shared memory now.
 */
#define TYPE_TEMPEST_FABRIC_SHM "tempest-fabric-shm"
OBJECT_DECLARE_TYPE(TempestFabric, TempestFabricClass, TEMPEST_FABRIC)

typedef struct TempestFabricOps {
    /* A DATA packet (32-byte header + payload) from peer on net. */
    void (*packet)(void *opaque, unsigned peer, unsigned net, uint32_t seq,
                   const uint8_t *pkt, size_t len);
    /* peer has credit again on net after running out. */
    void (*credit)(void *opaque, unsigned peer, unsigned net);
    /* peer is gone: it exited with status (exited) or was lost. */
    void (*peer_down)(void *opaque, unsigned peer, bool exited,
                      uint32_t status);
    /* The cluster is complete (READY) or cannot form (FAILED). */
    void (*state)(void *opaque, int state);
    /* A control-network frame from peer (layout in fabric-proto.h). */
    void (*coll)(void *opaque, unsigned peer, const uint8_t *body,
                 size_t len);
    /* A transfer-engine frame from peer (layout in fabric-proto.h). */
    void (*xfer)(void *opaque, unsigned peer, const uint8_t *body,
                 size_t len);
    /* A channel-controller frame from peer (layout in fabric-proto.h). */
    void (*chan)(void *opaque, unsigned peer, const uint8_t *body,
                 size_t len);
    /* The queue of frames waiting for peer's socket became empty. */
    void (*tx_drained)(void *opaque, unsigned peer);
    /* A frame from peer (or -1: before its HELLO) was dropped. */
    void (*dropped)(void *opaque, int peer, const char *why);
    /* The BYEs tempest_fabric_bye() held back are queued now. */
    void (*bye_done)(void *opaque, uint32_t status);
    /*
     * Peers may have written into the RQ straight (tempest_fabric_rq_open):
     * look at its tail (tempest_fabric_rq_tail).  Optional.
     */
    void (*rq_moved)(void *opaque);
} TempestFabricOps;

struct TempestFabric {
    Object parent_obj;
    /* Properties: the same on every backend */
    uint32_t node;              /* "node-id" */
    uint32_t nodes;             /* "num-nodes" */
    uint64_t cluster;           /* "cluster-id" */
    uint32_t credits;           /* "credits" */
    uint32_t timeout_ms;        /* "timeout" */
    char *key_secret;           /* "key": id of a secret object */
    /* Set while attached */
    const TempestFabricOps *ops;
    void *opaque;
    uint8_t *key;               /* the cluster's key (AUTH) */
    size_t key_len;
    /* This node's RAM, if it is shared memory (tempest_fabric_share_ram) */
    int ram_fd;
    void *ram_host;
    uint64_t ram_base, ram_size;
    struct TempestFabricClass *fc;
};

/* What a backend implements; see the functions below for each. */
struct TempestFabricClass {
    ObjectClass parent_class;
    bool (*start)(TempestFabric *f, Error **errp);
    void (*stop)(TempestFabric *f);
    int (*state)(TempestFabric *f);
    unsigned (*peers_up)(TempestFabric *f);
    bool (*peer_up)(TempestFabric *f, unsigned peer);
    bool (*can_send)(TempestFabric *f, unsigned peer, unsigned net);
    void (*send)(TempestFabric *f, unsigned peer, unsigned net,
                 const uint8_t *pkt, size_t len);
    uint8_t *(*send_begin)(TempestFabric *f, unsigned peer, size_t len);
    void (*send_commit)(TempestFabric *f, unsigned peer, unsigned net,
                        size_t len);
    void (*return_credits)(TempestFabric *f, unsigned peer, unsigned net,
                           unsigned n);
    void (*send_coll)(TempestFabric *f, unsigned peer, const uint8_t *body,
                      size_t len);
    void (*send_xfer)(TempestFabric *f, unsigned peer, const uint8_t *head,
                      size_t head_len, const uint8_t *body,
                      size_t body_len);
    void (*send_chan)(TempestFabric *f, unsigned peer, const uint8_t *head,
                      size_t head_len, const uint8_t *body,
                      size_t body_len);
    size_t (*tx_queued)(TempestFabric *f, unsigned peer);
    bool (*bye)(TempestFabric *f, uint32_t status);
    /* Optional: only a backend with shared-memory links has them. */
    void (*poll)(TempestFabric *f, bool polling);
    void *(*peer_ram)(TempestFabric *f, unsigned peer, uint64_t *base,
                      uint64_t *size);
    bool (*ram_given)(TempestFabric *f, unsigned peer);
    void (*poll_hint)(TempestFabric *f, uint64_t addr);
    void (*batch)(TempestFabric *f, bool on);
    void *(*coll_area)(TempestFabric *f, size_t *len);
    bool (*rq_open)(TempestFabric *f, uint64_t base, uint32_t slots,
                    uint32_t slot_size, uint32_t tail);
    bool (*rq_close)(TempestFabric *f, uint32_t *tail);
    int (*rq_take)(TempestFabric *f, uint32_t *tail);
    void (*rq_give)(TempestFabric *f, uint32_t tail);
    bool (*rq_tail)(TempestFabric *f, uint32_t *tail);
    uint32_t *(*rq_sleep)(TempestFabric *f, bool on, uint32_t *tail);
    void (*rq_peeks)(TempestFabric *f, bool on);
    uint8_t *(*direct_begin)(TempestFabric *f, unsigned peer, unsigned net,
                             size_t len, uint32_t *seq, bool *full);
    void (*direct_end)(TempestFabric *f, unsigned peer, unsigned net,
                       uint32_t ctl);
    /* Optional: whole-cluster checkpoint (docs/checkpoint.rst). */
    bool (*ckpt_quiet)(TempestFabric *f, uint64_t *tx, uint64_t *rx,
                       Error **errp);
    void (*ckpt_save)(TempestFabric *f, GByteArray *out);
    char *(*ckpt_links)(TempestFabric *f);
    /* Optional: every link's state as text (a stopped node's report). */
    void (*dump)(TempestFabric *f, GString *out);
    bool (*ckpt_load)(TempestFabric *f, const uint8_t *buf, size_t len,
                      size_t *used, Error **errp);
};

/*
 * Attach the fabric to its node controller and start it (listen,
 * connect).  Fails if it is attached already or its properties are
 * impossible.  Detach stops it: every link closed, every buffer freed.
 */
bool tempest_fabric_attach(TempestFabric *f, const TempestFabricOps *ops,
                           void *opaque, Error **errp);
void tempest_fabric_detach(TempestFabric *f);

/*
 * A fabric made and attached in one step (the node controller's own, from
 * its properties).  spec: "unix:DIR" (node i listens at DIR/node<i>.sock),
 * "shm:DIR" (the same sockets, and every link a shared-memory one: the
 * tempest-fabric-shm backend), "tcp:HOST:PORT" (node i listens at
 * HOST:PORT+i), or "tcp:H0:P0;H1:P1;..." (one address per node).  With one node no socket
 * is made and the fabric is ready.  With tcp: addresses the nodes of one
 * host share memory (tempest-fabric-shm, docs/fabric.rst "Mixed
 * clusters"), unless local->tcp_only; local (may be NULL) also says how
 * such a node knows its host.  key_secret: the id of a secret object
 * (-object secret,id=...,file=...) holding the cluster's key, or NULL or
 * "" for the cluster id.  tempest_fabric_free() detaches and drops it.
 */
typedef struct TempestFabricLocal {
    bool tcp_only;          /* machine fabric-shm=off */
    const char *host_id;    /* NULL or "": this host's own identity */
    const char *shm_dir;    /* NULL or "": the default directory */
} TempestFabricLocal;

TempestFabric *tempest_fabric_new(const char *spec,
                                  const TempestFabricLocal *local,
                                  uint64_t cluster,
                                  const char *key_secret,
                                  unsigned node, unsigned nodes,
                                  unsigned credits, unsigned timeout_ms,
                                  const TempestFabricOps *ops, void *opaque,
                                  Error **errp);
void tempest_fabric_free(TempestFabric *f);

int tempest_fabric_state(TempestFabric *f);     /* TEMPEST_FABRIC_* */
unsigned tempest_fabric_peers_up(TempestFabric *f);
bool tempest_fabric_peer_up(TempestFabric *f, unsigned peer);
/* May a DATA packet go to peer on net now (peer up, credit left)? */
bool tempest_fabric_can_send(TempestFabric *f, unsigned peer, unsigned net);
/*
 * Send one packet (header + payload); uses one credit.  peer may be this
 * node itself: the packet comes back through ops->packet.
 */
void tempest_fabric_send(TempestFabric *f, unsigned peer, unsigned net,
                         const uint8_t *pkt, size_t len);
/*
 * Build a packet of len bytes where it will travel (a shared-memory
 * ring's free bytes, when nothing for peer waits ahead of it), then send
 * it with tempest_fabric_send_commit(), as tempest_fabric_send() would
 * have (may it go: tempest_fabric_can_send(), checked first).  NULL:
 * build it elsewhere and send it with tempest_fabric_send().  Nothing
 * is sent, and nothing else may be sent, until the commit; a packet not
 * committed is forgotten.
 */
uint8_t *tempest_fabric_send_begin(TempestFabric *f, unsigned peer,
                                   size_t len);
void tempest_fabric_send_commit(TempestFabric *f, unsigned peer,
                                unsigned net, size_t len);
/* The guest took n packets from peer on net: give their credit back. */
void tempest_fabric_return_credits(TempestFabric *f, unsigned peer,
                                   unsigned net, unsigned n);
/*
 * Send a control-network frame body to peer (not this node).  These are
 * not under credit: the control network bounds them itself.
 */
void tempest_fabric_send_coll(TempestFabric *f, unsigned peer,
                              const uint8_t *body, size_t len);
/*
 * Send a transfer-engine frame to peer (not this node): head then body,
 * one frame.  Not under credit: the engine bounds what it queues with
 * tempest_fabric_tx_queued() and waits for ops->tx_drained.
 */
void tempest_fabric_send_xfer(TempestFabric *f, unsigned peer,
                              const uint8_t *head, size_t head_len,
                              const uint8_t *body, size_t body_len);
/*
 * Send a channel-controller frame to peer (not this node): head then
 * body, one frame, in order with every other frame to peer.  Not under
 * credit: each one answers a guest command or a frame that came in.
 */
void tempest_fabric_send_chan(TempestFabric *f, unsigned peer,
                              const uint8_t *head, size_t head_len,
                              const uint8_t *body, size_t body_len);
/* Bytes queued for peer's socket and not yet written. */
size_t tempest_fabric_tx_queued(TempestFabric *f, unsigned peer);
/*
 * Tell every peer this node exits with status, as far as can be sent.
 * True when the BYEs are queued.  False when frames still wait for links
 * being made (links are made on first use): those go first, then the
 * BYEs (at most a few seconds later), and then ops->bye_done is called;
 * the node should not end before.  Never waits.
 */
bool tempest_fabric_bye(TempestFabric *f, uint32_t status);
/*
 * The guest polls (polling) or has stopped polling (it is about to sleep
 * or to compute): take what peers left in shared memory now, and from
 * now on let them ring this node's doorbell only when it is not polling.
 * A backend without shared memory has nothing to do.
 */
void tempest_fabric_poll(TempestFabric *f, bool polling);
/*
 * The poll hint (TEMPEST_NC_POLL_HINT): addr, a 4-aligned word of the
 * guest's RAM (checked by the caller), is what peers on this host set
 * after leaving something for a polling node in shared memory; a poll
 * clears it first.  0 turns it off.  A backend without shared memory has
 * nothing to do: what comes through it reaches the guest without a poll.
 */
void tempest_fabric_poll_hint(TempestFabric *f, uint64_t addr);
/*
 * Frames sent between batch(true) and batch(false) tell a polling reader
 * on this host that they are there (its poll hint) once, at the end,
 * rather than each one at once; a sleeping reader is rung as always.
 * Batches nest: the outermost one's end tells.
 */
void tempest_fabric_batch(TempestFabric *f, bool on);
/*
 * This node's guest RAM is shared memory: fd (a sealed memfd, e.g. of
 * memory-backend-memfd,share=on) mapped here at host, the guest's
 * [base, base + size).  A backend with shared-memory links offers it to
 * its peers on this host, which map it (bulk copies, fetch-and-op).
 */
void tempest_fabric_share_ram(TempestFabric *f, int fd, void *host,
                              uint64_t base, uint64_t size);
/*
 * peer's guest RAM mapped in this process, and its guest base and size;
 * NULL if it is not (another host, a socket link, not shared).
 */
void *tempest_fabric_peer_ram(TempestFabric *f, unsigned peer,
                              uint64_t *base, uint64_t *size);
/*
 * Whether peer has our guest RAM mapped, on a shared-memory link that
 * is on: only then can it store into it (a transfer's XFER_PUT).
 */
bool tempest_fabric_ram_given(TempestFabric *f, unsigned peer);
/*
 * The control network's shared combining area (hw/tempest/coll-area.h)
 * and its size: made by node 0 of a cluster on shared memory and passed
 * to each node with its link to node 0; NULL without one.  Every node of
 * the cluster writes it: whatever is read from it must be checked.
 */
void *tempest_fabric_coll_area(TempestFabric *f, size_t *len);

/*
 * The RQ that peers on this host write straight into (hw/tempest/
 * rq-lock.h, docs/fabric.rst "Straight into the receiver's RQ"), on a
 * backend with shared-memory links and a combining area, when this
 * node's RAM is shared; elsewhere these do nothing (open false, take 0).
 *
 * rq_open: the guest's RQ (base, slots, slot_size, all checked by the
 * caller) with its tail at tail is open to peers from now on; false if
 * it cannot be (not yet: the area comes with the link to node 0; a peer
 * holds the lock a moment).  Cheap when open already.  rq_close: no peer
 * writes into it from now on; true, with the tail it reached, if it was
 * open (waits a few milliseconds at most for a peer in the middle of a
 * write; one that holds on longer loses its link).
 *
 * Our own writes into an open RQ: rq_take returns 0 (not open: write as
 * always), 1 (taken: *tail is where peers left the tail; write there,
 * then rq_give with the new tail) or -1 (a peer is writing: try again a
 * moment later).  rq_tail: the tail peers reached (false if not open),
 * for rq_moved and the registers.
 *
 * rq_sleep(on): a vCPU of ours is about to sleep on the RQ's tail
 * (CPUIdleSleep, target-patches/0013): said in our line, so that a peer
 * that writes a packet wakes it with a FUTEX_WAKE on the tail and rings
 * no doorbell.  Returns the futex word (NULL if the RQ is not open) and
 * *tail, the tail read after saying so: the caller takes what arrived up
 * to there before it sleeps, and sleeps only while the word holds it.
 * rq_sleep(off): the vCPU is awake; the caller then reads the tail again.
 *
 * rq_peeks(on): our guest polls and reads its RQ's slots itself on every
 * turn (POLL with POLL_PEEKS, 1.23): a peer that writes a packet straight
 * in then sets neither our poll hint nor our doorbell (a vCPU asleep on
 * the tail is still woken).  rq_peeks(off), before the caller reads the
 * tail (POLL without it, and when the guest stops polling): peers poke
 * again.  The backend clears it itself when the guest stops polling
 * without a word.
 */
bool tempest_fabric_rq_open(TempestFabric *f, uint64_t base, uint32_t slots,
                            uint32_t slot_size, uint32_t tail);
bool tempest_fabric_rq_close(TempestFabric *f, uint32_t *tail);
int tempest_fabric_rq_take(TempestFabric *f, uint32_t *tail);
void tempest_fabric_rq_give(TempestFabric *f, uint32_t tail);
bool tempest_fabric_rq_tail(TempestFabric *f, uint32_t *tail);
uint32_t *tempest_fabric_rq_sleep(TempestFabric *f, bool on, uint32_t *tail);
void tempest_fabric_rq_peeks(TempestFabric *f, bool on);
/*
 * A DATA packet of len bytes to peer on net written straight into its RQ
 * slot (may it go: tempest_fabric_can_send(), checked first): the slot's
 * host address, NULL if it cannot go so (its RQ is not open, or busy, or
 * full, or its slots too small; or frames to it are still on their way,
 * which it must take first).  *seq: its sequence number.  The caller
 * writes the whole slot but its first 4 bytes (CTL, the packet header's
 * NODE, NET and SEQ as the receiver's device would), then calls
 * direct_end with the CTL to give it (VALID | length), or 0 to give the
 * slot back unwritten.  Nothing else may be sent in between.  *full, set
 * with NULL: its RQ is open but full (the caller may wait for room rather
 * than send another way: docs/fabric.rst, "Holding for room").
 */
uint8_t *tempest_fabric_direct_begin(TempestFabric *f, unsigned peer,
                                     unsigned net, size_t len, uint32_t *seq,
                                     bool *full);
void tempest_fabric_direct_end(TempestFabric *f, unsigned peer, unsigned net,
                               uint32_t ctl);

/*
 * Whole-cluster checkpoint (docs/checkpoint.rst).  tx and rx: the frames
 * this node has sent to its peers and taken from them since it started
 * (a cut is quiet when the cluster's sums agree and stay put).  False,
 * with the reason in errp, while something of this node is not at rest:
 * frames waiting for a link or in a queue, a peer gone, the cluster not
 * formed.  A backend without the hooks is quiet with nothing to save.
 */
bool tempest_fabric_ckpt_quiet(TempestFabric *f, uint64_t *tx, uint64_t *rx,
                               Error **errp);
/*
 * The links' flow control as text, per peer "node:credit,credit,allowed,
 * allowed,owed,owed,seq_out,seq_out,seq_in,seq_in" (both networks),
 * peers separated by spaces, for the launcher to check a cut.
 */
char *tempest_fabric_ckpt_links(TempestFabric *f);
/*
 * Append every link's state (credits, sequence numbers, queues, the
 * shared-memory rings and flags) to out, one line a peer: what a node
 * stopped by a signal prints (docs/fabric.rst, "A stopped node's report").
 */
void tempest_fabric_dump(TempestFabric *f, GString *out);
/* Append what the links' flow control holds (credits, sequences). */
void tempest_fabric_ckpt_save(TempestFabric *f, GByteArray *out);
/*
 * Take back what ckpt_save wrote at buf (len bytes available), setting
 * *used; false, with errp set, on anything that does not fit this
 * fabric (its node count, its credit setting, impossible counts).
 */
bool tempest_fabric_ckpt_load(TempestFabric *f, const uint8_t *buf,
                              size_t len, size_t *used, Error **errp);

#endif /* HW_TEMPEST_TEMPEST_FABRIC_H */
