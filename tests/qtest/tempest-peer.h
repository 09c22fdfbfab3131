/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fake fabric peer for the Tempest qtests: a test process that speaks
 * the wire format (hw/tempest/fabric-proto.h) to a real node controller,
 * correctly up to its HELLO and AUTH and then however the test likes, as a
 * hostile or broken node would; over a socket, or over a shared-memory
 * link it makes (or is offered) as tempest-fabric-shm.c does.
 */
#ifndef TEMPEST_PEER_H
#define TEMPEST_PEER_H

#include <sys/mman.h>
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/memfd.h"
#include "qemu/sockets.h"
#include "qobject/qdict.h"
#include "libqtest.h"
#include "hw/tempest/fabric-proto.h"
#include "hw/tempest/fabric-ring.h"

/* Send one frame (header, then body if any). */
static inline void peer_send(int fd, uint16_t type, uint8_t net,
                             const void *body, uint32_t len)
{
    uint8_t hdr[FABRIC_HDR_SIZE];

    fabric_put_header(hdr, type, net, len);
    g_assert_cmpint(write(fd, hdr, sizeof(hdr)), ==, sizeof(hdr));
    if (body && len) {
        g_assert_cmpint(write(fd, body, len), ==, len);
    }
}

/* Read exactly len bytes (blocking). */
static inline void peer_read_all(int fd, void *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = read(fd, (uint8_t *)buf + got, len - got);

        g_assert_cmpint(n, >, 0);
        got += n;
    }
}

/* The body length of the frame whose header is at buf (of size cap). */
static inline uint32_t peer_frame_len(const uint8_t *buf, size_t cap)
{
    uint32_t len = fabric_ld32(buf + 4);

    g_assert_cmpuint(FABRIC_HDR_SIZE + len, <=, cap);
    return len;
}

/* The whole frame at buf (body len) must parse: its type. */
static inline uint16_t peer_frame_type(const uint8_t *buf, uint32_t len)
{
    FabricHeader h = { 0 };
    size_t flen;

    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + len, &h, &flen),
                    ==, FABRIC_PARSE_OK);
    return h.type;
}

/* Read one frame into buf (of size cap); returns its type, *len its body. */
static inline uint16_t peer_read_frame(int fd, uint8_t *buf, size_t cap,
                                       uint32_t *len)
{
    peer_read_all(fd, buf, FABRIC_HDR_SIZE);
    *len = peer_frame_len(buf, cap);
    peer_read_all(fd, buf + FABRIC_HDR_SIZE, *len);
    return peer_frame_type(buf, *len);
}

/* Read frames until one of type 'type' (its frame in buf); its length. */
static inline uint32_t peer_read_until(int fd, uint16_t type, uint8_t *buf,
                                       size_t cap)
{
    uint32_t len;

    while (peer_read_frame(fd, buf, cap, &len) != type) {
        /* MESH and the like: not what the caller waits for */
    }
    return len;
}

/*
 * Reads on fd fail after secs seconds with nothing to read (so a frame
 * that never comes fails the test instead of hanging it).
 */
static inline void peer_set_timeout(int fd, unsigned secs)
{
    struct timeval tv = { .tv_sec = secs };

    g_assert_cmpint(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
                               sizeof(tv)), ==, 0);
}

/* Send a frame of two or three u32 (DIAL, GONE). */
static inline void peer_send_words(int fd, uint16_t type, uint32_t a,
                                   uint32_t b, int c)
{
    uint8_t body[12];

    fabric_st32(body, a);
    fabric_st32(body + 4, b);
    fabric_st32(body + 8, c);
    peer_send(fd, type, 0, body, c < 0 ? 8 : 12);
}

/* As node 0: every node has joined, the cluster is ready (MESH_ALL). */
static inline void peer_mesh_all(int fd)
{
    uint8_t kind[4];

    fabric_st32(kind, FABRIC_MESH_ALL);
    peer_send(fd, FABRIC_MESH, 0, kind, sizeof(kind));
}

/* A correct HELLO of node self of nodes, with a fresh random nonce. */
static inline void peer_hello(FabricHello *h, uint64_t cluster,
                              unsigned self, unsigned nodes)
{
    *h = (FabricHello) {
        .magic = FABRIC_MAGIC, .version = FABRIC_VERSION, .cluster = cluster,
        .node = self, .nodes = nodes, .credits = 32,
    };
    for (int i = 0; i < FABRIC_NONCE_SIZE; i++) {
        h->nonce[i] = g_random_int();
    }
}

/*
 * On fd, connected to node 'to', join as node 'self' of 'nodes' with
 * HELLO flags 'flags', and authenticate with the key (the cluster id when
 * key is NULL).  The node then counts us as up (node 0 declares the
 * cluster READY once every other node has joined it), and *their_flags
 * (if not NULL) holds its HELLO's flags.
 */
static inline void peer_handshake_finish(int fd, const FabricHello *mine,
                                         unsigned to, const uint8_t *key,
                                         size_t key_len,
                                         uint32_t *their_flags);

static inline void peer_handshake(int fd, unsigned to, unsigned self,
                                  unsigned nodes, uint64_t cluster,
                                  const uint8_t *key, size_t key_len,
                                  uint32_t flags, uint32_t *their_flags)
{
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    FabricHello h;

    peer_hello(&h, cluster, self, nodes);
    h.flags = flags;
    fabric_put_hello(frame, &h);
    g_assert_cmpint(write(fd, frame, sizeof(frame)), ==, sizeof(frame));
    peer_handshake_finish(fd, &h, to, key, key_len, their_flags);
}

/*
 * The rest of peer_handshake() once our HELLO (mine) is sent: the node's
 * HELLO and AUTH, then ours (the key is the cluster id when key is NULL).
 */
static inline void peer_handshake_finish(int fd, const FabricHello *mine,
                                         unsigned to, const uint8_t *key,
                                         size_t key_len,
                                         uint32_t *their_flags)
{
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    uint8_t mac[FABRIC_AUTH_SIZE], cid[8];
    uint64_t cluster = mine->cluster;
    unsigned self = mine->node;
    FabricHello h = *mine, theirs;
    uint32_t len;

    if (!key) {
        fabric_st64(cid, cluster);
        key = cid;
        key_len = sizeof(cid);
    }
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_HELLO);
    fabric_get_hello(frame + FABRIC_HDR_SIZE, &theirs);
    g_assert_cmpuint(theirs.node, ==, to);
    if (their_flags) {
        *their_flags = theirs.flags;
    }
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_AUTH);
    /* The node proves it knows the key too. */
    fabric_auth_mac(key, key_len, h.nonce, theirs.nonce, cluster, to, self,
                    mac);
    g_assert_true(fabric_mac_equal(mac, frame + FABRIC_HDR_SIZE));
    fabric_auth_mac(key, key_len, theirs.nonce, h.nonce, cluster, self, to,
                    mac);
    peer_send(fd, FABRIC_AUTH, 0, mac, sizeof(mac));
}

/*
 * Connect to node 'to' of the cluster at dir (Unix sockets) and join it
 * (peer_handshake).  Returns the socket.
 */
/* Connect to node 'to' of the cluster at dir (Unix sockets), nothing sent. */
static inline int peer_connect(const char *dir, unsigned to)
{
    g_autofree char *path = g_strdup_printf("%s/node%u.sock", dir, to);
    int fd = -1;

    for (int i = 0; i < 2000 && fd < 0; i++) {
        fd = unix_connect(path, NULL);
        if (fd < 0) {
            g_usleep(5000);     /* the node is still starting */
        }
    }
    g_assert_cmpint(fd, >=, 0);
    return fd;
}

static inline int peer_join_flags(const char *dir, unsigned to,
                                  unsigned self, unsigned nodes,
                                  uint64_t cluster, const uint8_t *key,
                                  size_t key_len, uint32_t flags,
                                  uint32_t *their_flags)
{
    int fd = peer_connect(dir, to);

    peer_handshake(fd, to, self, nodes, cluster, key, key_len, flags,
                   their_flags);
    return fd;
}

/* peer_join_flags() with no HELLO flags: a node that takes no shm link. */
static inline int peer_join(const char *dir, unsigned to, unsigned self,
                            unsigned nodes, uint64_t cluster,
                            const uint8_t *key, size_t key_len)
{
    return peer_join_flags(dir, to, self, nodes, cluster, key, key_len, 0,
                           NULL);
}

/* Listen as node 'self' of the cluster at dir (Unix sockets). */
static inline int peer_listen(const char *dir, unsigned self, int backlog)
{
    g_autofree char *path = g_strdup_printf("%s/node%u.sock", dir, self);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    g_assert_cmpint(fd, >=, 0);
    g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(listen(fd, backlog), ==, 0);
    return fd;
}

/*
 * Accept node 'from' on lfd as node 'self' (the side that answers a
 * HELLO) with HELLO flags 'flags', authenticating with the cluster id as
 * the key; *their_flags (if not NULL) gets the flags of the node's HELLO.
 */
static inline void peer_answer(int fd, unsigned self, unsigned from,
                               unsigned nodes, uint64_t cluster,
                               uint32_t flags, uint32_t *their_flags,
                               unsigned pause_us);

static inline int peer_accept_flags(int lfd, unsigned self, unsigned from,
                                    unsigned nodes, uint64_t cluster,
                                    uint32_t flags, uint32_t *their_flags)
{
    int fd = accept(lfd, NULL, NULL);

    g_assert_cmpint(fd, >=, 0);
    peer_answer(fd, self, from, nodes, cluster, flags, their_flags, 0);
    return fd;
}

/*
 * peer_accept_flags() on a connection already accepted, pausing pause_us
 * between our HELLO and our AUTH.
 */
static inline void peer_answer(int fd, unsigned self, unsigned from,
                               unsigned nodes, uint64_t cluster,
                               uint32_t flags, uint32_t *their_flags,
                               unsigned pause_us)
{
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    uint8_t mac[FABRIC_AUTH_SIZE], key[8];
    FabricHello h, theirs;
    uint32_t len;

    fabric_st64(key, cluster);
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_HELLO);
    fabric_get_hello(frame + FABRIC_HDR_SIZE, &theirs);
    g_assert_cmpuint(theirs.node, ==, from);
    if (their_flags) {
        *their_flags = theirs.flags;
    }
    peer_hello(&h, cluster, self, nodes);
    h.flags = flags;
    fabric_put_hello(frame, &h);
    g_assert_cmpint(write(fd, frame, sizeof(frame)), ==, sizeof(frame));
    g_usleep(pause_us);
    fabric_auth_mac(key, sizeof(key), theirs.nonce, h.nonce, cluster, self,
                    from, mac);
    peer_send(fd, FABRIC_AUTH, 0, mac, sizeof(mac));
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_AUTH);
    fabric_auth_mac(key, sizeof(key), h.nonce, theirs.nonce, cluster, from,
                    self, mac);
    g_assert_true(fabric_mac_equal(mac, frame + FABRIC_HDR_SIZE));
}

/* peer_accept_flags() with no HELLO flags. */
static inline int peer_accept(int lfd, unsigned self, unsigned from,
                              unsigned nodes, uint64_t cluster)
{
    return peer_accept_flags(lfd, self, from, nodes, cluster, 0, NULL);
}

/*
 * Read exactly len bytes from fd with recvmsg(), keeping in *passed the
 * last descriptor that came with them (SCM_RIGHTS), if any.
 */
static inline void peer_recv_all(int fd, void *buf, size_t len, int *passed)
{
    size_t got = 0;

    while (got < len) {
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(sizeof(int) * 4)];
        } ctl;
        struct iovec iov = { (uint8_t *)buf + got, len - got };
        struct msghdr msg = {
            .msg_iov = &iov, .msg_iovlen = 1,
            .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
        };
        ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);

        g_assert_cmpint(n, >, 0);
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm;
             cm = CMSG_NXTHDR(&msg, cm)) {
            if (cm->cmsg_level == SOL_SOCKET &&
                cm->cmsg_type == SCM_RIGHTS) {
                size_t nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

                for (size_t i = 0; i < nfds; i++) {
                    if (*passed >= 0) {
                        close(*passed);
                    }
                    memcpy(passed, CMSG_DATA(cm) + i * sizeof(int),
                           sizeof(int));
                }
            }
        }
        got += n;
    }
}

/* peer_read_frame() through peer_recv_all(). */
static inline uint16_t peer_recv_frame(int fd, uint8_t *buf, size_t cap,
                                       uint32_t *len, int *passed)
{
    peer_recv_all(fd, buf, FABRIC_HDR_SIZE, passed);
    *len = peer_frame_len(buf, cap);
    peer_recv_all(fd, buf + FABRIC_HDR_SIZE, *len, passed);
    return peer_frame_type(buf, *len);
}

/* Build a COLL frame body: header, then count entries of lanes lanes. */
static inline GByteArray *peer_coll(uint32_t seq, uint8_t dir, uint8_t kind,
                                    uint8_t fn, uint8_t variant,
                                    uint16_t lanes, uint16_t error)
{
    GByteArray *b = g_byte_array_new();
    uint8_t h[FABRIC_COLL_HDR] = { 0 };

    fabric_st32(h, seq);
    h[4] = dir;
    h[5] = kind;
    h[6] = fn;
    h[7] = variant;
    fabric_st16(h + 8, lanes);
    fabric_st16(h + 10, error);
    g_byte_array_append(b, h, sizeof(h));
    return b;
}

static inline void peer_coll_entry(GByteArray *b, uint32_t node, uint32_t seg,
                                   unsigned lanes, uint64_t value)
{
    uint8_t e[FABRIC_COLL_ENTRY(TEMPEST_COLL_MAX_LANES)] = { 0 };

    fabric_st32(e, node);
    fabric_st32(e + 4, seg);
    for (unsigned l = 0; l < lanes; l++) {
        fabric_st64(e + 8 + 8 * l, value + l);
    }
    g_byte_array_append(b, e, FABRIC_COLL_ENTRY(lanes));
    fabric_st32(b->data + 12, fabric_ld32(b->data + 12) + 1);
}

/*
 * A shared-memory link as tempest-fabric-shm.c makes it (docs/fabric.rst,
 * "Shared memory"): a header page, then ring 0 (the dialler's frames) and
 * ring 1 (the acceptor's), each on its own pages: the layout of
 * fabric-ring.h (FABRIC_LINK_*), the seals of tempest-fabric-shm.c.
 */
#define PEER_SHM_SEALS      (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* The fake dialler's side of a link: ring 0 it writes, ring 1 it reads. */
typedef struct PeerShm {
    int fd;
    uint8_t *map;
    size_t len;
    FabricRing tx, rx;
} PeerShm;

/*
 * Make a link's memfd of len bytes whose header names cluster, dialler
 * and acceptor, with both rings formatted and attached (when they fit),
 * then add seals (0: none; the memfd is made able to take them).
 */
static inline void peer_shm_make(PeerShm *m, size_t len, unsigned seals,
                                 uint64_t cluster, uint32_t dialler,
                                 uint32_t acceptor)
{
    m->len = len;
    m->fd = memfd_create("tempest-fake-link",
                         MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(m->fd, >=, 0);
    g_assert_cmpint(ftruncate(m->fd, len), ==, 0);
    m->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    g_assert(m->map != MAP_FAILED);
    fabric_st32(m->map, FABRIC_LINK_MAGIC);
    fabric_st32(m->map + 4, FABRIC_LINK_VERSION);
    fabric_st64(m->map + 8, cluster);
    fabric_st32(m->map + 16, dialler);
    fabric_st32(m->map + 20, acceptor);
    fabric_st32(m->map + 24, FABRIC_LINK_RING);
    if (len >= FABRIC_LINK_BYTES) {
        for (unsigned i = 0; i < 2; i++) {
            uint8_t *mem = m->map + FABRIC_LINK_HDR + i * FABRIC_LINK_SPAN;

            fabric_ring_format(mem, FABRIC_LINK_RING);
            g_assert_true(fabric_ring_attach(i ? &m->rx : &m->tx, mem,
                                             FABRIC_LINK_RING, i == 0));
        }
    }
    if (seals) {
        g_assert_cmpint(fcntl(m->fd, F_ADD_SEALS, seals), ==, 0);
    }
}

/* A correct link from node dialler to node acceptor of cluster. */
static inline void peer_shm_make_good(PeerShm *m, uint64_t cluster,
                                      uint32_t dialler, uint32_t acceptor)
{
    peer_shm_make(m, FABRIC_LINK_BYTES, PEER_SHM_SEALS, cluster, dialler,
                  acceptor);
}

static inline void peer_shm_free(PeerShm *m)
{
    if (m->map) {
        munmap(m->map, m->len);
        m->map = NULL;
    }
    if (m->fd >= 0) {
        close(m->fd);
        m->fd = -1;
    }
}

/* The control block of ring i (0: the dialler's, 1: the acceptor's). */
static inline FabricRingCtl *peer_shm_ctl(PeerShm *m, unsigned i)
{
    return (FabricRingCtl *)(m->map + FABRIC_LINK_HDR + i * FABRIC_LINK_SPAN);
}

/*
 * Send a FABRIC_SHM frame of step 'step' on fd, passing the nfds (0 to
 * 2) descriptors fds with it (SCM_RIGHTS).
 */
static inline void peer_shm_step_fds(int fd, uint32_t step, const int *fds,
                                     int nfds)
{
    uint8_t frame[FABRIC_HDR_SIZE + 4];
    struct iovec iov = { frame, sizeof(frame) };
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(2 * sizeof(int))];
    } ctl;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    struct cmsghdr *cm;

    g_assert_cmpint(nfds, <=, 2);
    fabric_put_header(frame, FABRIC_SHM, 0, 4);
    fabric_st32(frame + FABRIC_HDR_SIZE, step);
    if (nfds) {
        memset(&ctl, 0, sizeof(ctl));
        msg.msg_control = ctl.buf;
        msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
    }
    g_assert_cmpint(sendmsg(fd, &msg, MSG_NOSIGNAL), ==, sizeof(frame));
}

/* The same with memfd passed, unless it is negative. */
static inline void peer_shm_step(int fd, uint32_t step, int memfd)
{
    peer_shm_step_fds(fd, step, &memfd, memfd >= 0);
}

/* Write one whole frame into ring r (it must have room). */
static inline void peer_ring_send(FabricRing *r, uint16_t type, uint8_t net,
                                  const void *body, uint32_t len)
{
    uint8_t hdr[FABRIC_HDR_SIZE];
    struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)body, len } };

    fabric_put_header(hdr, type, net, len);
    g_assert_cmpuint(fabric_ring_write(r, iov, body ? 2 : 1), ==,
                     FABRIC_HDR_SIZE + (body ? len : 0));
}

/* Take exactly len bytes from ring r, waiting at most 20 s for them. */
static inline void peer_ring_read_all(FabricRing *r, uint8_t *buf,
                                      size_t len)
{
    gint64 end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    size_t got = 0;
    bool ring_back;

    while (got < len) {
        size_t n = fabric_ring_read(r, buf + got, len - got, &ring_back);

        g_assert_false(r->broken);
        got += n;
        if (!n) {
            g_assert_cmpint(g_get_monotonic_time(), <, end);
            g_usleep(200);
        }
    }
}

/* Read one frame from ring r into buf (of size cap); returns its type. */
static inline uint16_t peer_ring_read_frame(FabricRing *r, uint8_t *buf,
                                            size_t cap, uint32_t *len)
{
    peer_ring_read_all(r, buf, FABRIC_HDR_SIZE);
    *len = peer_frame_len(buf, cap);
    peer_ring_read_all(r, buf + FABRIC_HDR_SIZE, *len);
    return peer_frame_type(buf, *len);
}

/* How many of a process's open descriptors link to what starts with prefix. */
static inline unsigned peer_fd_count(pid_t pid, const char *prefix)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/fd", (int)pid);
    GDir *d = g_dir_open(path, 0, NULL);
    const char *e;
    unsigned n = 0;

    g_assert(d);
    while ((e = g_dir_read_name(d))) {
        g_autofree char *fd = g_strdup_printf("%s/%s", path, e);
        g_autofree char *to = g_file_read_link(fd, NULL);

        n += to && g_str_has_prefix(to, prefix);
    }
    g_dir_close(d);
    return n;
}

/*
 * How many of a process's mappings (or, with fds, its open descriptors)
 * are of the memfd called name.
 */
static inline unsigned peer_memfd_count(pid_t pid, const char *name,
                                        bool fds)
{
    g_autofree char *needle = g_strdup_printf("/memfd:%s ", name);
    g_autofree char *path = NULL;
    g_autofree char *text = NULL;
    unsigned n = 0;

    if (fds) {
        /* A link reads "/memfd:NAME (deleted)". */
        return peer_fd_count(pid, needle);
    }
    path = g_strdup_printf("/proc/%d/maps", (int)pid);
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    for (const char *p = text; (p = strstr(p, needle)); p++) {
        n++;
    }
    return n;
}

/*
 * The "shm-links" of the tempest-fabric-shm object at path (its links in
 * shared memory), through QMP.
 */
static inline uint32_t peer_shm_links(QTestState *s, const char *path)
{
    QDict *r = qtest_qmp(s, "{ 'execute': 'qom-get', 'arguments': "
                         "{ 'path': %s, 'property': 'shm-links' } }", path);
    uint32_t n;

    g_assert(qdict_haskey(r, "return"));
    n = qdict_get_int(r, "return");
    qobject_unref(r);
    return n;
}

/* Wait (at most 20 s) until it has want links; returns the last count. */
static inline uint32_t peer_wait_shm_links(QTestState *s, const char *path,
                                           uint32_t want)
{
    gint64 end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    uint32_t n;

    while ((n = peer_shm_links(s, path)) != want &&
           g_get_monotonic_time() < end) {
        g_usleep(1000);
    }
    return n;
}

/* Resident memory of a process, in KiB (from /proc). */
static inline long peer_rss_kib(pid_t pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status", (int)pid);
    g_autofree char *text = NULL;
    const char *p, *end;
    long kib;

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        return -1;
    }
    p = strstr(text, "VmRSS:");
    return p && qemu_strtol(p + 6, &end, 10, &kib) == 0 ? kib : -1;
}

#endif /* TEMPEST_PEER_H */
