/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Tempest fabric's shared-memory backend (tempest-fabric-shm): the
 * socket backend, whose links between nodes of one host become shared
 * memory once both ends have proved themselves.
 *
 * The dialling node makes the link: a sealed memfd (it cannot shrink, so
 * a peer cannot make our accesses fault) holding two byte rings, one per
 * direction (fabric-ring.h), and passes it over the Unix socket with its
 * OFFER.  The acceptor checks it, maps it and answers ACK; from then on
 * its frames go into its ring.  The dialler reads the ACK, answers SWITCH
 * and does the same.  Each side reads the other's ring only after the
 * last frame the other sent on the socket, so every frame is delivered
 * once and in order.  The frames are the socket backend's own (DATA under
 * credit, CREDIT, COLL, XFER, BYE), parsed by the same code.
 *
 * After the switch the socket carries only BELL frames, the doorbell of a
 * node that is not polling, and its end (a peer that dies closes it).  A
 * node whose guest polls (tempest_fabric_poll) reads the rings from the
 * polling vCPU: a message then reaches it without its main loop waking.
 * docs/fabric.rst, "Shared memory", says it in full.
 */

#include "qemu/osdep.h"
#include <sys/mman.h>
#include <sys/socket.h>
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/memfd.h"
#include "qemu/units.h"
#include "tempest-fabric-internal.h"
#include "fabric-ring.h"
#include "coll-area.h"
#include "trace.h"

#define FABRIC_SHM_SEALS    (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
/*
 * A guest that stopped writing POLL for this long stopped polling (the
 * default of property poll-idle-ms, which tests make long).
 */
#define FABRIC_POLL_IDLE_MS 1

struct FabricShm {
    void *map;
    size_t map_len;
    FabricRing tx, rx;
    bool tx_on;                 /* our frames go into tx */
    bool rx_on;                 /* the peer's frames come from rx */
    GByteArray *txq;            /* frames waiting for room, from txq_off */
    size_t txq_off;
    uint8_t *rxbuf;             /* FABRIC_RX_BUF: frames are parsed here */
    size_t rx_len;
    bool draining;              /* frames of rx are being handled */
    uint8_t *reserved;          /* fabric_shm_reserve()'s, until commit */
    bool poke_held;             /* its hint waits for the batch's end */
    void *peer_ram;             /* the peer's guest RAM, or NULL */
    uint64_t peer_ram_base, peer_ram_size;
    bool ram_given;             /* our guest RAM went to the peer */
    uint32_t credit_back[2];    /* credit we gave back through rx */
    uint32_t credit_seen[2];    /* credit we took back through tx */
};



/* Ring 0 carries the dialler's frames, ring 1 the acceptor's. */
static void *shm_ring_mem(FabricShm *sh, unsigned ring)
{
    return (uint8_t *)sh->map + FABRIC_LINK_HDR + ring * FABRIC_LINK_SPAN;
}

static void shm_report(FabricSocket *f, unsigned peer, const char *why)
{
    trace_tempest_fabric_shm(f->node, peer, why);
    if (!f->shm_reported) {
        f->shm_reported = true;
        warn_report("tempest fabric: node %u: no shared memory with node "
                    "%u (%s): the socket carries the link", f->node, peer,
                    why);
    }
}

static FabricShm *shm_new(void *map)
{
    FabricShm *sh = g_new0(FabricShm, 1);

    sh->map = map;
    sh->map_len = FABRIC_LINK_BYTES;
    sh->txq = g_byte_array_new();
    sh->rxbuf = g_malloc(FABRIC_RX_BUF);
    return sh;
}

/* Forget the descriptors the peer passed and nobody took. */
static void shm_passed_close(FabricConn *c)
{
    for (int i = 0; i < 2; i++) {
        if (c->passed_fd[i] >= 0) {
            close(c->passed_fd[i]);
            c->passed_fd[i] = -1;
        }
    }
}

/* Take the i-th descriptor the peer passed (-1 if none). */
static int shm_passed_take(FabricConn *c, int i)
{
    int fd = c->passed_fd[i];

    c->passed_fd[i] = -1;
    return fd;
}

void fabric_shm_free(FabricConn *c)
{
    FabricShm *sh = c->shm;

    shm_passed_close(c);
    if (!sh) {
        return;
    }
    if (sh->peer_ram) {
        munmap(sh->peer_ram, sh->peer_ram_size);
    }
    munmap(sh->map, sh->map_len);
    g_byte_array_free(sh->txq, true);
    g_free(sh->rxbuf);
    g_free(sh);
    c->shm = NULL;
}

/* ------------------------------------------------------------------ */
/* Making the link                                                     */
/* ------------------------------------------------------------------ */

ssize_t fabric_shm_read(FabricConn *c, void *buf, size_t len)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * 4)];
    } ctl;
    struct iovec iov = { buf, len };
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
    };
    ssize_t n;

    if (!c->fab->shm) {
        return read(c->fd, buf, len);
    }
    n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC);
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); n >= 0 && cm;
         cm = CMSG_NXTHDR(&msg, cm)) {
        size_t nfds;

        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        /*
         * The descriptors of the last message are kept, at most two (an
         * OFFER's link and RAM): a peer cannot pile them up.
         */
        shm_passed_close(c);
        nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < nfds; i++) {
            int fd;

            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (i < 2) {
                c->passed_fd[i] = fd;
            } else {
                close(fd);
            }
        }
    }
    return n;
}

/* Write the link's header page. */
static void shm_put_header(uint8_t *p, uint64_t cluster, unsigned dialler,
                           unsigned acceptor)
{
    fabric_st32(p + FABRIC_LINK_H_MAGIC, FABRIC_LINK_MAGIC);
    fabric_st32(p + FABRIC_LINK_H_VERSION, FABRIC_LINK_VERSION);
    fabric_st64(p + FABRIC_LINK_H_CLUSTER, cluster);
    fabric_st32(p + FABRIC_LINK_H_DIALLER, dialler);
    fabric_st32(p + FABRIC_LINK_H_ACCEPTOR, acceptor);
    fabric_st32(p + FABRIC_LINK_H_RING, FABRIC_LINK_RING);
}

/* Our RAM in the header (side 0: the dialler's, 1: the acceptor's). */
static int shm_put_ram(FabricSocket *f, uint8_t *map, unsigned side)
{
    TempestFabric *tf = &f->parent_obj;
    bool shared = tf->ram_fd >= 0;

    fabric_st64(map + FABRIC_LINK_H_RAM + 16 * side, shared ? tf->ram_base : 0);
    fabric_st64(map + FABRIC_LINK_H_RAM + 16 * side + 8, shared ? tf->ram_size : 0);
    return shared ? tf->ram_fd : -1;
}

/*
 * Map the peer's RAM that came as fd, if the header announces it (side:
 * the peer's); without it the link works, transfers and fetch-and-op go
 * as frames.  The memfd must be sealed against shrinking (as
 * memory-backend-memfd's are): else the peer could make our accesses
 * fault.
 */
static void shm_map_ram(FabricConn *c, int fd, unsigned side)
{
    FabricShm *sh = c->shm;
    const uint8_t *h = (const uint8_t *)sh->map + FABRIC_LINK_H_RAM + 16 * side;
    uint64_t base = fabric_ld64(h), size = fabric_ld64(h + 8);
    int seals = fd >= 0 ? fcntl(fd, F_GET_SEALS) : -1;
    struct stat st;
    void *ram;

    if (fd < 0 || !size) {
        goto out;
    }
    if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat(fd, &st) < 0 ||
        !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size ||
        size & (qemu_real_host_page_size() - 1) || base + size < base) {
        shm_report(c->fab, c->peer, "its RAM is not a sealed memfd of the "
                   "size it says");
        goto out;
    }
    ram = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ram == MAP_FAILED) {
        shm_report(c->fab, c->peer, "cannot map its RAM");
        goto out;
    }
    sh->peer_ram = ram;
    sh->peer_ram_base = base;
    sh->peer_ram_size = size;
    trace_tempest_fabric_shm(c->fab->node, c->peer, "peer RAM mapped");
out:
    if (fd >= 0) {
        close(fd);
    }
}

void *fabric_shm_peer_ram(FabricConn *c, uint64_t *base, uint64_t *size)
{
    FabricShm *sh = c->shm;

    if (!sh->tx_on || !sh->rx_on || !sh->peer_ram) {
        return NULL;
    }
    *base = sh->peer_ram_base;
    *size = sh->peer_ram_size;
    return sh->peer_ram;
}

bool fabric_shm_ram_given(FabricConn *c)
{
    FabricShm *sh = c->shm;

    return sh->tx_on && sh->rx_on && sh->ram_given;
}

/*
 * Send a FABRIC_SHM step on the socket with up to two descriptors; false
 * if it could not go (the socket's queue must be empty: 12 bytes then go
 * in one call).
 */
static bool shm_send_step(FabricConn *c, uint32_t step, const int *fds,
                          int nfds)
{
    uint8_t frame[FABRIC_HDR_SIZE + 4];
    struct iovec iov = { frame, sizeof(frame) };
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * 2)];
    } ctl;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    struct cmsghdr *cm;

    fabric_put_header(frame, FABRIC_SHM, 0, 4);
    fabric_st32(frame + FABRIC_HDR_SIZE, step);
    if (nfds) {
        memset(&ctl, 0, sizeof(ctl));
        msg.msg_control = ctl.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
    }
    return !sock_pending(c) &&
           sendmsg(c->fd, &msg, MSG_NOSIGNAL) == sizeof(frame);
}

/*
 * Node 0: make the control network's combining area (coll-area.h), which
 * goes to every node with its link's ACK.  Without it (no memfd) the
 * control network keeps its tree.
 */
static void shm_coll_create(FabricSocket *f)
{
    size_t len = coll_area_bytes(f->nodes);
    uint8_t *map;
    int fd;

    fd = qemu_memfd_create("tempest-coll", len, false, 0, FABRIC_SHM_SEALS,
                           NULL);
    if (fd < 0) {
        warn_report("tempest fabric: node 0: no shared combining area "
                    "(memfd): the control network keeps its tree");
        return;
    }
    map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        close(fd);
        warn_report("tempest fabric: node 0: cannot map the shared "
                    "combining area: the control network keeps its tree");
        return;
    }
    fabric_st32(map + COLL_AREA_H_MAGIC, COLL_AREA_MAGIC);
    fabric_st32(map + COLL_AREA_H_VERSION, COLL_AREA_VERSION);
    fabric_st64(map + COLL_AREA_H_CLUSTER, f->cluster);
    fabric_st32(map + COLL_AREA_H_NODES, f->nodes);
    f->coll_map = map;
    f->coll_len = len;
    f->coll_fd = fd;
    f->coll_fd_open = true;
    trace_tempest_fabric_shm(f->node, 0, "combining area made");
}

/*
 * A node other than 0: node 0's combining area came with its ACK (fd).
 * Taken once, and only a sealed file of exactly the size this cluster's
 * area has whose header names this cluster: the area is then never
 * shorter than what is read of it.
 */
static void shm_coll_take(FabricConn *c, int fd)
{
    FabricSocket *f = c->fab;
    size_t len = coll_area_bytes(f->nodes);
    int seals;
    struct stat st;
    uint8_t *map;

    if (fd < 0) {
        return;
    }
    seals = fcntl(fd, F_GET_SEALS);
    if (c->peer != 0 || f->node == 0 || f->coll_map) {
        shm_report(f, c->peer, "a combining area not from node 0, or twice");
        goto out;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size != len || seals < 0 ||
        (seals & FABRIC_SHM_SEALS) != FABRIC_SHM_SEALS) {
        shm_report(f, c->peer, "the combining area is not a sealed memfd "
                   "of its size");
        goto out;
    }
    map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        shm_report(f, c->peer, "cannot map the combining area");
        goto out;
    }
    if (fabric_ld32(map + COLL_AREA_H_MAGIC) != COLL_AREA_MAGIC ||
        fabric_ld32(map + COLL_AREA_H_VERSION) != COLL_AREA_VERSION ||
        fabric_ld64(map + COLL_AREA_H_CLUSTER) != f->cluster ||
        fabric_ld32(map + COLL_AREA_H_NODES) != f->nodes) {
        munmap(map, len);
        shm_report(f, c->peer, "the combining area is not this cluster's");
        goto out;
    }
    f->coll_map = map;
    f->coll_len = len;
    trace_tempest_fabric_shm(f->node, c->peer, "combining area mapped");
out:
    close(fd);
}

void *fabric_shm_coll_area(FabricSocket *f, size_t *len)
{
    *len = f->coll_len;
    return f->coll_map;
}

void fabric_shm_offer(FabricConn *c)
{
    FabricSocket *f = c->fab;
    int fds[2], nfds = 1;
    void *map;
    int fd;

    if (!c->local || !(c->hello_flags & FABRIC_HELLO_SHM) || c->shm ||
        sock_pending(c)) {
        return;
    }
    fd = qemu_memfd_create("tempest-link", FABRIC_LINK_BYTES, false, 0,
                           FABRIC_SHM_SEALS & ~F_SEAL_SEAL, NULL);
    if (fd < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL) < 0) {
        shm_report(f, c->peer, "cannot make a sealed memfd");
        goto out;
    }
    map = mmap(NULL, FABRIC_LINK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
               0);
    if (map == MAP_FAILED) {
        shm_report(f, c->peer, "cannot map the memfd");
        goto out;
    }
    shm_put_header(map, f->cluster, f->node, c->peer);
    c->shm = shm_new(map);
    fabric_ring_format(shm_ring_mem(c->shm, 0), FABRIC_LINK_RING);
    fabric_ring_format(shm_ring_mem(c->shm, 1), FABRIC_LINK_RING);
    fabric_ring_attach(&c->shm->tx, shm_ring_mem(c->shm, 0),
                       FABRIC_LINK_RING, true);
    fabric_ring_attach(&c->shm->rx, shm_ring_mem(c->shm, 1),
                       FABRIC_LINK_RING, false);
    fds[0] = fd;
    fds[1] = shm_put_ram(f, map, 0);
    nfds += fds[1] >= 0;
    c->shm->ram_given = fds[1] >= 0;
    if (!shm_send_step(c, FABRIC_SHM_OFFER, fds, nfds)) {
        shm_report(f, c->peer, "cannot pass the memfd");
        fabric_shm_free(c);
    } else {
        trace_tempest_fabric_shm(f->node, c->peer, "offered");
    }
out:
    if (fd >= 0) {
        close(fd);
    }
}

/* The acceptor: check the dialler's memfd and map it; NULL if not good. */
static const char *shm_take(FabricConn *c)
{
    FabricSocket *f = c->fab;
    int fd = shm_passed_take(c, 0), seals;
    struct stat st;
    uint8_t *map;
    FabricShm *sh;

    if (fd < 0) {
        return "no memfd came with the OFFER";
    }
    seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        st.st_size != (off_t)FABRIC_LINK_BYTES || seals < 0 ||
        (seals & FABRIC_SHM_SEALS) != FABRIC_SHM_SEALS) {
        close(fd);
        return "the OFFER's memfd is not a sealed one of the link's size";
    }
    map = mmap(NULL, FABRIC_LINK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
               0);
    close(fd);
    if (map == MAP_FAILED) {
        return "cannot map the OFFER's memfd";
    }
    sh = shm_new(map);
    if (fabric_ld32(map + FABRIC_LINK_H_MAGIC) != FABRIC_LINK_MAGIC ||
        fabric_ld32(map + FABRIC_LINK_H_VERSION) != FABRIC_LINK_VERSION ||
        fabric_ld64(map + FABRIC_LINK_H_CLUSTER) != f->cluster ||
        fabric_ld32(map + FABRIC_LINK_H_DIALLER) != (uint32_t)c->peer ||
        fabric_ld32(map + FABRIC_LINK_H_ACCEPTOR) != f->node ||
        fabric_ld32(map + FABRIC_LINK_H_RING) != FABRIC_LINK_RING ||
        !fabric_ring_attach(&sh->rx, shm_ring_mem(sh, 0), FABRIC_LINK_RING,
                            false) ||
        !fabric_ring_attach(&sh->tx, shm_ring_mem(sh, 1), FABRIC_LINK_RING,
                            true)) {
        c->shm = sh;
        fabric_shm_free(c);
        return "the OFFER's link is not one for this pair of nodes";
    }
    c->shm = sh;
    shm_map_ram(c, shm_passed_take(c, 1), 0);
    return NULL;
}

/* Start reading the peer's ring: its socket said everything before. */
static void shm_rx_on(FabricConn *c)
{
    c->shm->rx_on = true;
    fabric_ring_set_hint(&c->shm->rx, c->fab->poll_hint);
    fabric_ring_set_sleeping(&c->shm->rx, !c->fab->polling);
}

static void shm_bell(FabricConn *c)
{
    uint8_t frame[FABRIC_HDR_SIZE];

    fabric_put_header(frame, FABRIC_BELL, 0, 0);
    c->fab->up->sock_queue3(c, frame, sizeof(frame), NULL, 0, NULL, 0);
}

/*
 * We published into a ring whose reader polls: set the word its guest
 * watches (its poll hint), if it named one.  That address is the peer's
 * word: used only inside the RAM it mapped to us, 4-aligned; one it
 * cannot have meant (or RAM we could not map) rings the doorbell
 * instead, so nothing waits for a hint that never comes.
 */
static void shm_poke(FabricConn *c)
{
    FabricShm *sh = c->shm;
    uint64_t at = fabric_ring_hint(&sh->tx);
    uint32_t *word;

    if (!at) {
        return;             /* it polls the device on every turn */
    }
    if (!sh->peer_ram || at & 3 || at < sh->peer_ram_base ||
        at - sh->peer_ram_base > sh->peer_ram_size - 4) {
        if (!__atomic_exchange_n(&sh->tx.ctl->belled, 1, __ATOMIC_SEQ_CST)) {
            shm_bell(c);
        }
        return;
    }
    word = (uint32_t *)((uint8_t *)sh->peer_ram + (at - sh->peer_ram_base));
    if (!__atomic_load_n(word, __ATOMIC_RELAXED)) {
        __atomic_store_n(word, 1, __ATOMIC_RELAXED);
    }
}

/* After publishing: the doorbell if the reader sleeps, else its hint. */
static void shm_published(FabricConn *c)
{
    if (fabric_ring_need_bell(&c->shm->tx)) {
        shm_bell(c);
    } else if (c->fab->batching) {
        c->shm->poke_held = true;
        c->fab->pokes_held = true;
    } else {
        shm_poke(c);
    }
}

void fabric_shm_batch(FabricSocket *f, bool on)
{
    if (on) {
        f->batching++;
        return;
    }
    if (f->batching && --f->batching) {
        return;     /* an inner batch: the outer one ends later */
    }
    if (!f->pokes_held) {
        return;
    }
    f->pokes_held = false;
    for (unsigned i = 0; i < f->nodes; i++) {
        FabricConn *c = f->peers[i].conn;

        if (c && c->shm && c->shm->poke_held) {
            c->shm->poke_held = false;
            if (c->shm->tx_on && !c->broken) {
                shm_poke(c);
            }
        }
    }
}

void fabric_shm_direct_published(FabricConn *c)
{
    shm_published(c);
}

RqRecord *fabric_shm_rq_record(FabricConn *c, bool ours)
{
    FabricShm *sh = c->shm;
    /* Side 0 is the dialler's, as for the RAM. */
    unsigned side = (c->called >= 0) == ours ? 0 : 1;

    if (!sh) {
        return NULL;
    }
    return (RqRecord *)((uint8_t *)sh->map + FABRIC_LINK_H_RQ +
                        side * sizeof(RqRecord));
}

bool fabric_shm_tx_idle(FabricConn *c)
{
    FabricShm *sh = c->shm;

    return sh && sh->tx_on && sh->rx_on && !c->broken && !conn_pending(c) &&
           !sh->reserved && fabric_ring_idle(&sh->tx);
}

/* Move queued frames into the ring while it has room. */
static void shm_flush(FabricConn *c)
{
    FabricShm *sh = c->shm;
    bool had = sh->txq->len > sh->txq_off;
    size_t moved = 0;

    while (sh->txq->len > sh->txq_off) {
        struct iovec iov = { sh->txq->data + sh->txq_off,
                             sh->txq->len - sh->txq_off };
        size_t n = fabric_ring_write(&sh->tx, &iov, 1);

        sh->txq_off += n;
        moved += n;
        if (!n && !fabric_ring_wait_room(&sh->tx)) {
            break;      /* rung when the peer makes room */
        }
    }
    if (sh->tx.broken) {
        c->fab->up->drop(c->fab, c->peer, "shared-memory ring broken");
        c->broken = true;
        c->broken_why = "shared-memory ring broken";
        qemu_bh_schedule(c->fab->close_bh);
        return;
    }
    if (moved) {
        shm_published(c);
    }
    if (sh->txq_off == sh->txq->len) {
        g_byte_array_set_size(sh->txq, 0);
        sh->txq_off = 0;
    }
    c->fab->up->update(c);      /* may resume reading a paused peer */
    if (had && sh->txq_off == sh->txq->len) {
        c->fab->up->drained(c);
    }
}

bool fabric_shm_frame(FabricConn *c, const FabricHeader *hdr,
                      const uint8_t *body)
{
    FabricSocket *f = c->fab;
    FabricShm *sh = c->shm;
    bool dialler = c->called >= 0;
    const char *why;
    uint32_t step;
    int fd, fds[2], nfds;
    bool ram;

    if (sh && sh->draining) {
        /* Steps and doorbells come on the socket, never in the ring. */
        f->up->drop(f, c->peer, "a BELL or SHM step inside the ring");
        return true;
    }
    if (hdr->type == FABRIC_BELL) {
        if (!sh || !sh->tx_on) {
            f->up->drop(f, c->peer, "BELL without a shared-memory link");
            return true;
        }
        if (sh->rx_on) {
            fabric_ring_bell_heard(&sh->rx);
        }
        shm_flush(c);
        /* It may have rung for a packet it wrote into our RQ itself. */
        fabric_rq_moved(f);
        return !sh->rx_on || fabric_shm_drain(c, FABRIC_READ_BUDGET);
    }

    step = fabric_ld32(body);
    switch (step) {
    case FABRIC_SHM_OFFER:
        if (dialler || sh || !c->local) {
            f->up->drop(f, c->peer, "unexpected shared-memory OFFER");
            if (!dialler && !sh) {
                f->up->send_u32(c, FABRIC_SHM, 0, FABRIC_SHM_NACK);
            }
            return true;
        }
        why = shm_take(c);
        if (why) {
            shm_report(f, c->peer, why);
            f->up->send_u32(c, FABRIC_SHM, 0, FABRIC_SHM_NACK);
            return true;
        }
        fd = shm_put_ram(f, c->shm->map, 1);
        nfds = 0;
        if (fd >= 0) {
            fds[nfds++] = fd;
        }
        if (f->coll_fd_open) {
            fds[nfds++] = f->coll_fd;   /* node 0: the combining area */
        }
        if (!shm_send_step(c, FABRIC_SHM_ACK, fds, nfds)) {
            /* Not a word could go: the link stays on its socket. */
            fabric_shm_free(c);
            shm_report(f, c->peer, "cannot answer its OFFER");
            return true;
        }
        c->shm->tx_on = true;
        c->shm->ram_given = fd >= 0;
        trace_tempest_fabric_shm(f->node, c->peer, "accepted");
        return true;
    case FABRIC_SHM_ACK:
        if (!dialler || !sh || sh->tx_on) {
            break;
        }
        /* Its RAM if its side of the header says so, then node 0's area. */
        ram = fabric_ld64((uint8_t *)sh->map + FABRIC_LINK_H_RAM + 16 + 8);
        fd = ram ? shm_passed_take(c, 0) : -1;
        shm_coll_take(c, shm_passed_take(c, ram ? 1 : 0));
        shm_map_ram(c, fd, 1);
        shm_rx_on(c);
        f->up->send_u32(c, FABRIC_SHM, 0, FABRIC_SHM_SWITCH);
        sh->tx_on = true;
        trace_tempest_fabric_shm(f->node, c->peer, "switched");
        return fabric_shm_drain(c, FABRIC_READ_BUDGET);
    case FABRIC_SHM_NACK:
        if (!dialler || !sh || sh->tx_on) {
            break;
        }
        fabric_shm_free(c);
        shm_report(f, c->peer, "the peer refused it");
        return true;
    case FABRIC_SHM_SWITCH:
        if (dialler || !sh || sh->rx_on) {
            break;
        }
        shm_rx_on(c);
        return fabric_shm_drain(c, FABRIC_READ_BUDGET);
    }
    f->up->drop(f, c->peer, "unexpected shared-memory step");
    return true;
}

/* ------------------------------------------------------------------ */
/* Moving frames                                                       */
/* ------------------------------------------------------------------ */

bool fabric_shm_sending(FabricConn *c)
{
    return c->shm && c->shm->tx_on;
}

size_t fabric_shm_pending(FabricConn *c)
{
    return c->shm->txq->len - c->shm->txq_off;
}

void fabric_shm_queue3(FabricConn *c, const struct iovec *iov)
{
    FabricShm *sh = c->shm;
    size_t done = 0, skip;

    if (c->broken) {
        return;     /* closing: the peer will be reported down */
    }
    if (sh->txq->len == sh->txq_off) {
        /* Nothing ahead of it: straight from the caller's memory. */
        done = fabric_ring_write(&sh->tx, iov, 3);
        if (sh->tx.broken) {
            shm_flush(c);       /* reports it */
            return;
        }
        if (done) {
            shm_published(c);
        }
    }
    for (int i = 0; i < 3; i++) {
        skip = MIN(done, iov[i].iov_len);
        done -= skip;
        if (iov[i].iov_len > skip) {
            g_byte_array_append(sh->txq, (uint8_t *)iov[i].iov_base + skip,
                                iov[i].iov_len - skip);
        }
    }
    if (sh->txq->len > sh->txq_off &&
        (fabric_ring_wait_room(&sh->tx) || sh->tx.broken)) {
        shm_flush(c);       /* moves what fits now, or reports the break */
    } else if (sh->txq->len > sh->txq_off) {
        c->fab->up->update(c);  /* queued: past FABRIC_TX_PAUSE, pause */
    }
}

/*
 * A frame of len bytes written in place: where in the ring, if the link
 * is in shared memory, nothing waits to go into the ring first (order)
 * and the bytes are free and do not wrap; else NULL.
 */
uint8_t *fabric_shm_reserve(FabricConn *c, size_t len)
{
    FabricShm *sh = c->shm;

    if (!sh || !sh->tx_on || c->broken || sh->txq->len != sh->txq_off) {
        return NULL;
    }
    sh->reserved = fabric_ring_reserve(&sh->tx, len);
    return sh->reserved;
}

/*
 * Publish the frame written in place: its first hlen bytes (its header)
 * from hdr, the body of blen bytes already there.
 */
void fabric_shm_commit(FabricConn *c, const uint8_t *hdr, size_t hlen,
                       size_t blen)
{
    FabricShm *sh = c->shm;

    /* Where it was reserved: the peer's head is not looked at again. */
    memcpy(sh->reserved, hdr, hlen);
    sh->reserved = NULL;
    fabric_ring_commit(&sh->tx, hlen + blen);
    trace_tempest_fabric_shm_in_place_tx(c->fab->node, c->peer, hlen + blen);
    shm_published(c);
}

/*
 * Credit in shared memory (docs/fabric.rst, "Shared memory"): the peer's
 * DATA of network net took n credits we now give back.  Only once our
 * frames go into the ring (the peer then has the link mapped and reads
 * the count); false before, or on a link of sockets: a CREDIT frame then.
 * *wake: the peer waits for credit (a frame in the ring tells it).
 */
bool fabric_shm_credit_back(FabricConn *c, unsigned net, uint32_t n,
                            bool *wake)
{
    FabricShm *sh = c->shm;

    *wake = false;
    if (!sh || !sh->tx_on || c->broken) {
        return false;
    }
    *wake = fabric_ring_credit_back(&sh->rx, net, &sh->credit_back[net], n);
    return true;
}

/*
 * Take the credit of peer's network net that it gave back through its
 * link's memory since we last looked (none on a link of sockets): at
 * most what we can have used, more breaks the link.  wait: we are out of
 * credit; ask to be woken (a CREDIT frame) and look once more.
 */
void fabric_shm_take_credit(FabricSocket *f, unsigned peer, unsigned net,
                            bool wait)
{
    FabricPeer *p = &f->peers[peer];
    FabricConn *c = p->conn;
    FabricShm *sh = c ? c->shm : NULL;
    uint32_t max = f->credits - p->credit[net], n;

    if (!sh || c->broken) {
        return;
    }
    n = fabric_ring_credit_take(&sh->tx, net, &sh->credit_seen[net], max);
    if (!n && wait && !sh->tx.broken) {
        fabric_ring_credit_wait(&sh->tx, net);
        n = fabric_ring_credit_take(&sh->tx, net, &sh->credit_seen[net], max);
    }
    if (sh->tx.broken) {
        f->up->drop(f, peer, "credit beyond what was used");
        c->broken = true;
        c->broken_why = "credit beyond what was used";
        qemu_bh_schedule(f->close_bh);
        return;
    }
    if (n) {
        p->credit[net] += n;
        trace_tempest_fabric_credit(f->node, peer, net, p->credit[net]);
    }
}

void fabric_shm_take_credit_all(FabricSocket *f)
{
    for (unsigned i = 0; i < f->nodes; i++) {
        for (unsigned net = 0; net < 2; net++) {
            if (i != f->node) {
                fabric_shm_take_credit(f, i, net, false);
            }
        }
    }
}

/*
 * The frame at the ring's head, if it is a whole DATA frame that does not
 * wrap: checked on a private copy of its header (fabric_parse(), the same
 * checks as for a frame in rxbuf), handled where it lies (the packet goes
 * from the ring into the node's RQ, or its queue, with no copy here:
 * docs/fabric.rst, "Straight from the ring"), then its room given back.
 * Returns its length, or 0 if it is not such a frame (*want: the length
 * of the whole frame at the head as its header says now, if one is
 * there, else 0: what the caller then reads into rxbuf, so that only
 * that frame goes the long way).
 */
static size_t shm_rx_in_place(FabricConn *c, size_t budget, size_t *want)
{
    FabricShm *sh = c->shm;
    uint8_t head[FABRIC_HDR_SIZE + FABRIC_DATA_MIN];
    const uint8_t *at;
    size_t n = fabric_ring_peek(&sh->rx, &at), flen = 0;
    FabricHeader hdr;
    FabricParse r;
    bool ring_back;

    *want = 0;
    if (!fabric_ring_peek_copy(&sh->rx, head, FABRIC_HDR_SIZE)) {
        return 0;
    }
    hdr.len = fabric_ld32(head + 4);
    if (hdr.len > FABRIC_MAX_BODY) {
        return 0;           /* fatal: found again where it is read */
    }
    *want = FABRIC_HDR_SIZE + hdr.len;
    if (fabric_ld16(head) != FABRIC_DATA || *want > n || *want > budget ||
        *want < sizeof(head)) {
        return 0;
    }
    /* Only this copy is parsed: its bytes are all fabric_parse() reads. */
    memcpy(head, at, sizeof(head));
    if (fabric_ld16(head) != FABRIC_DATA) {
        return 0;           /* changed meanwhile: the long way */
    }
    r = fabric_parse(head, *want, &hdr, &flen);
    if (r == FABRIC_PARSE_BAD) {
        c->fab->up->drop(c->fab, c->peer, "malformed frame");
    } else if (r == FABRIC_PARSE_OK) {
        trace_tempest_fabric_shm_in_place(c->fab->node, c->peer, hdr.net,
                                          hdr.len);
        sh->draining = true;
        c->fab->up->data(c, &hdr, fabric_ld32(head + FABRIC_HDR_SIZE),
                         at + FABRIC_HDR_SIZE + 4);
        sh->draining = false;
    } else {
        return 0;
    }
    fabric_ring_consume(&sh->rx, flen, &ring_back);
    if (ring_back) {
        shm_bell(c);
    }
    return flen;
}

bool fabric_shm_drain(FabricConn *c, size_t budget)
{
    FabricShm *sh = c->shm;

    if (!sh || !sh->rx_on || !c->reading || sh->draining) {
        return true;    /* (a callback of a frame being handled: later) */
    }
    while (budget) {
        bool ring_back;
        size_t n, want = 0, max = MIN(FABRIC_RX_BUF - sh->rx_len, budget);

        if (!sh->rx_len) {
            n = shm_rx_in_place(c, budget, &want);
            if (n) {
                budget -= n;
                sh = c->shm;
                if (!sh || !sh->rx_on || !c->reading) {
                    return true;
                }
                continue;
            }
            if (want && want <= max) {
                max = want;     /* that frame alone: the next may be DATA */
            }
        } else if (sh->rx_len >= FABRIC_HDR_SIZE) {
            /* The rest of the frame begun (its length is our copy's). */
            want = FABRIC_HDR_SIZE + fabric_ld32(sh->rxbuf + 4);
            if (want > sh->rx_len && want - sh->rx_len < max) {
                max = want - sh->rx_len;
            }
        }
        /*
         * Nothing there: return without a write to the ring's control,
         * which the producer reads as it publishes (a POLL looks at
         * every ring, mostly empty: "Lines between the cores").
         */
        if (!fabric_ring_avail(&sh->rx) && !sh->rx.broken) {
            return true;
        }
        /*
         * Until they are handled: a peer's packet written straight into
         * the RQ must not overtake them (tempest-fabric-rq.c).
         */
        fabric_ring_set_parsing(&sh->rx, true);
        n = fabric_ring_read(&sh->rx, sh->rxbuf + sh->rx_len, max,
                             &ring_back);

        if (sh->rx.broken) {
            c->fab->up->drop(c->fab, c->peer, "shared-memory ring broken");
            c->fab->up->close(c, "shared-memory ring broken");
            return false;
        }
        if (ring_back) {
            shm_bell(c);
        }
        if (!n) {
            fabric_ring_set_parsing(&sh->rx, false);
            return true;
        }
        sh->rx_len += n;
        budget -= n;
        /* The buffer holds a largest frame: it always makes progress. */
        sh->draining = true;
        if (!c->fab->up->parse(c, sh->rxbuf, &sh->rx_len)) {
            return false;   /* c and sh are gone */
        }
        sh->draining = false;
        fabric_ring_set_parsing(&sh->rx, false);
        sh = c->shm;
        if (!sh || !sh->rx_on || !c->reading) {
            return true;
        }
    }
    return true;
}

bool fabric_shm_drain_last(FabricConn *c)
{
    FabricShm *sh = c->shm;

    if (!sh || !sh->rx_on) {
        return true;
    }
    c->reading = true;      /* its last words are read even if paused */
    return fabric_shm_drain(c, fabric_ring_avail(&sh->rx));
}

static void shm_drain_all(FabricSocket *f)
{
    for (unsigned i = 0; i < f->nodes; i++) {
        FabricConn *c = f->peers[i].conn;

        if (c && c->shm && c->shm->rx_on) {
            fabric_shm_drain(c, FABRIC_READ_BUDGET);
        }
    }
}

static void shm_drain_bh(void *opaque)
{
    shm_drain_all(opaque);
}

static void shm_set_polling(FabricSocket *f, bool polling)
{
    f->polling = polling;
    if (!polling) {
        fabric_rq_peeks(f, false);  /* (the caller reads the tail after) */
    }
    for (unsigned i = 0; i < f->nodes; i++) {
        FabricConn *c = f->peers[i].conn;

        if (c && c->shm && c->shm->rx_on) {
            fabric_ring_set_sleeping(&c->shm->rx, !polling);
        }
    }
}

static int64_t shm_idle_ns(FabricSocket *f)
{
    /* 0 (not set, or a machine's own fabric): the default. */
    return (int64_t)(f->poll_idle_ms ?: FABRIC_POLL_IDLE_MS) * SCALE_MS;
}

/* The guest's hint word, in its RAM (checked by the caller), or NULL. */
static uint32_t *shm_hint_word(FabricSocket *f)
{
    TempestFabric *tf = &f->parent_obj;

    if (!f->poll_hint || !tf->ram_host || f->poll_hint < tf->ram_base ||
        f->poll_hint - tf->ram_base > tf->ram_size - 4) {
        return NULL;
    }
    return (uint32_t *)((uint8_t *)tf->ram_host +
                        (f->poll_hint - tf->ram_base));
}

void fabric_shm_poll_hint(FabricSocket *f, uint64_t addr)
{
    /*
     * Peers reach the word through our RAM, which they map if they can;
     * a peer that could not rings the doorbell instead (shm_poke).
     */
    f->poll_hint = addr;
    if (!shm_hint_word(f)) {
        f->poll_hint = 0;
    }
    for (unsigned i = 0; i < f->nodes; i++) {
        FabricConn *c = f->peers[i].conn;

        if (c && c->shm && c->shm->rx_on) {
            fabric_ring_set_hint(&c->shm->rx, f->poll_hint);
        }
    }
}

void fabric_shm_poll(FabricSocket *f, bool polling)
{
    uint32_t *hint = shm_hint_word(f);

    if (hint) {
        /* Cleared first: a peer publishing after the look sets it again. */
        __atomic_store_n(hint, 0, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
    if (polling) {
        /*
         * No clock read here (a spinning CPU writes POLL every turn; the
         * host's clock was a seventh of both QEMUs' time in a channel
         * round trip, docs/chan.rst): the idle timer looks at the mark.
         */
        f->polled = true;
        if (!f->polling) {
            shm_set_polling(f, true);
            timer_mod(f->poll_timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                      shm_idle_ns(f));
        }
    } else if (f->polling) {
        shm_set_polling(f, false);
        timer_del(f->poll_timer);
    }
    /* After the flags: what came before a peer could see them is read. */
    shm_drain_all(f);
}

/*
 * The guest stopped polling without saying so (no POLL over a whole idle
 * period: it stopped 1 to 2 periods ago): peers ring again.
 */
static void shm_poll_timeout(void *opaque)
{
    FabricSocket *f = opaque;

    if (!f->polling) {
        return;
    }
    if (f->polled) {
        f->polled = false;
        timer_mod(f->poll_timer, qemu_clock_get_ns(QEMU_CLOCK_REALTIME) +
                  shm_idle_ns(f));
        return;
    }
    fabric_shm_poll(f, false);
    /*
     * And what peers wrote into the RQ straight (a POLL's device looks
     * itself, after the poll: tempest_nc_poll).
     */
    fabric_rq_moved(f);
}

void fabric_shm_exit_flush(FabricConn *c, int64_t deadline_ms)
{
    FabricShm *sh = c->shm;

    if (!sh->tx_on) {
        return;
    }
    while (sh->txq->len > sh->txq_off && !sh->tx.broken &&
           qemu_clock_get_ms(QEMU_CLOCK_REALTIME) < deadline_ms) {
        shm_flush(c);
        if (sh->txq->len > sh->txq_off) {
            g_usleep(100);
        }
    }
    /* The peer may sleep: the BYE is in the ring, wake it to read it. */
    shm_bell(c);
}

/* One ring's shared words, as this side sees them. */
static void shm_dump_ring(GString *out, const char *name, FabricRing *r)
{
    FabricRingCtl *c = r->ctl;

    g_string_append_printf(out, " %s{pos %" PRIu64 " tail %" PRIu64
                           " head %" PRIu64 " sleeping %u belled %u "
                           "tx_waiting %u credit_waiting %u credit_back "
                           "%u/%u broken %d}", name, r->pos,
                           __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE),
                           __atomic_load_n(&c->head, __ATOMIC_ACQUIRE),
                           __atomic_load_n(&c->sleeping, __ATOMIC_RELAXED),
                           __atomic_load_n(&c->belled, __ATOMIC_RELAXED),
                           __atomic_load_n(&c->tx_waiting, __ATOMIC_RELAXED),
                           __atomic_load_n(&c->credit_waiting,
                                           __ATOMIC_RELAXED),
                           __atomic_load_n(&c->credit_back[0],
                                           __ATOMIC_RELAXED),
                           __atomic_load_n(&c->credit_back[1],
                                           __ATOMIC_RELAXED),
                           r->broken);
}

void fabric_shm_dump(FabricConn *c, GString *out)
{
    FabricShm *sh = c->shm;

    g_string_append_printf(out, " shm tx_on %d rx_on %d txq %zu rx_len %zu "
                           "draining %d credit_back %u/%u credit_seen %u/%u",
                           sh->tx_on, sh->rx_on, fabric_shm_pending(c),
                           sh->rx_len, sh->draining, sh->credit_back[0],
                           sh->credit_back[1], sh->credit_seen[0],
                           sh->credit_seen[1]);
    if (sh->tx.ctl) {
        shm_dump_ring(out, "tx", &sh->tx);
    }
    if (sh->rx.ctl) {
        shm_dump_ring(out, "rx", &sh->rx);
    }
}

bool fabric_shm_start(FabricSocket *f, const FabricLinkUp *up,
                      Error **errp)
{
    if (!g_str_has_prefix(f->spec, "unix:") &&
        !g_str_has_prefix(f->spec, "tcp:")) {
        error_setg(errp, "fabric: shared memory needs Unix sockets between "
                   "the nodes (unix:DIR), or TCP addresses whose nodes of "
                   "one host meet on Unix sockets (tcp:...), not '%s'",
                   f->spec);
        return false;
    }
    f->shm = true;
    f->up = up;
    f->coll_fd = -1;
    if (f->node == 0 && f->nodes > 1) {
        shm_coll_create(f);
    }
    f->poll_timer = timer_new_ns(QEMU_CLOCK_REALTIME, shm_poll_timeout, f);
    f->drain_bh = qemu_bh_new(shm_drain_bh, f);
    return true;
}

void fabric_shm_stop(FabricSocket *f)
{
    /* Its lock goes with the area: a restart opens the RQ again. */
    f->rq_open = f->rq_held = false;
    if (f->coll_map) {
        munmap(f->coll_map, f->coll_len);
        f->coll_map = NULL;
    }
    if (f->coll_fd_open) {
        close(f->coll_fd);
        f->coll_fd_open = false;
    }
    if (f->poll_timer) {
        timer_free(f->poll_timer);
        f->poll_timer = NULL;
    }
    if (f->drain_bh) {
        qemu_bh_delete(f->drain_bh);
        f->drain_bh = NULL;
    }
}

/* ------------------------------------------------------------------ */
/* The QOM type                                                        */
/* ------------------------------------------------------------------ */

/* "shm-links" (read-only): the links that went over to shared memory. */
static void shm_get_links(Object *obj, Visitor *v, const char *name,
                          void *opaque, Error **errp)
{
    FabricSocket *f = container_of(TEMPEST_FABRIC(obj), FabricSocket,
                                   parent_obj);
    uint32_t n = 0;

    for (unsigned i = 0; f->peers && i < f->nodes; i++) {
        FabricConn *c = f->peers[i].conn;

        n += c && c->shm && c->shm->tx_on && c->shm->rx_on;
    }
    visit_type_uint32(v, name, &n, errp);
}

static void shm_instance_init(Object *obj)
{
    FabricSocket *f = container_of(TEMPEST_FABRIC(obj), FabricSocket,
                                   parent_obj);

    object_property_add_uint32_ptr(obj, "poll-idle-ms", &f->poll_idle_ms,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_set_description(obj, "poll-idle-ms",
        "a guest that wrote no POLL for this long no longer polls: peers "
        "ring its doorbell again (0: the default, 1 ms)");
}

static void shm_class_init(ObjectClass *oc, void *data)
{
    fabric_host_class_init(oc);

    object_class_property_add(oc, "shm-links", "uint32", shm_get_links,
                              NULL, NULL, NULL);
    object_class_property_set_description(oc, "shm-links",
        "links to peers that are in shared memory now");
}

static const TypeInfo shm_info = {
    .name = TYPE_TEMPEST_FABRIC_SHM,
    .parent = TYPE_TEMPEST_FABRIC_SOCKET,
    .instance_init = shm_instance_init,
    .class_init = shm_class_init,
};

static void shm_register_types(void)
{
    type_register_static(&shm_info);
}

type_init(shm_register_types)
