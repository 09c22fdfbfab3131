/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fake fabric peer for the Tempest qtests: a test process that speaks
 * the wire format (hw/tempest/fabric-proto.h) to a real node controller,
 * correctly up to its HELLO and AUTH and then however the test likes, as a
 * hostile or broken node would.
 */
#ifndef TEMPEST_PEER_H
#define TEMPEST_PEER_H

#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/sockets.h"
#include "hw/tempest/fabric-proto.h"

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

/* Read one frame into buf (of size cap); returns its type, *len its body. */
static inline uint16_t peer_read_frame(int fd, uint8_t *buf, size_t cap,
                                       uint32_t *len)
{
    FabricHeader h = { 0 };
    size_t flen;

    peer_read_all(fd, buf, FABRIC_HDR_SIZE);
    h.len = fabric_ld32(buf + 4);
    g_assert_cmpuint(FABRIC_HDR_SIZE + h.len, <=, cap);
    peer_read_all(fd, buf + FABRIC_HDR_SIZE, h.len);
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + h.len, &h, &flen),
                    ==, FABRIC_PARSE_OK);
    *len = h.len;
    return h.type;
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
 * Connect to node 'to' of the cluster at dir (Unix sockets) as node
 * 'self' of 'nodes', and authenticate with the key (the cluster id when
 * key is NULL).  Returns the socket; the node then counts us as up (node
 * 0 declares the cluster READY once every other node has joined it).
 */
static inline int peer_join(const char *dir, unsigned to, unsigned self,
                            unsigned nodes, uint64_t cluster,
                            const uint8_t *key, size_t key_len)
{
    g_autofree char *path = g_strdup_printf("%s/node%u.sock", dir, to);
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    uint8_t mac[FABRIC_AUTH_SIZE], cid[8];
    FabricHello h, theirs;
    uint32_t len;
    int fd = -1;

    for (int i = 0; i < 2000 && fd < 0; i++) {
        fd = unix_connect(path, NULL);
        if (fd < 0) {
            g_usleep(5000);     /* the node is still starting */
        }
    }
    g_assert_cmpint(fd, >=, 0);
    if (!key) {
        fabric_st64(cid, cluster);
        key = cid;
        key_len = sizeof(cid);
    }
    peer_hello(&h, cluster, self, nodes);
    fabric_put_hello(frame, &h);
    g_assert_cmpint(write(fd, frame, sizeof(frame)), ==, sizeof(frame));
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_HELLO);
    fabric_get_hello(frame + FABRIC_HDR_SIZE, &theirs);
    g_assert_cmpuint(theirs.node, ==, to);
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_AUTH);
    /* The node proves it knows the key too. */
    fabric_auth_mac(key, key_len, h.nonce, theirs.nonce, cluster, to, self,
                    mac);
    g_assert_true(fabric_mac_equal(mac, frame + FABRIC_HDR_SIZE));
    fabric_auth_mac(key, key_len, theirs.nonce, h.nonce, cluster, self, to,
                    mac);
    peer_send(fd, FABRIC_AUTH, 0, mac, sizeof(mac));
    return fd;
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
 * HELLO), authenticating with the cluster id as the key.
 */
static inline int peer_accept(int lfd, unsigned self, unsigned from,
                              unsigned nodes, uint64_t cluster)
{
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    uint8_t mac[FABRIC_AUTH_SIZE], key[8];
    FabricHello h, theirs;
    uint32_t len;
    int fd = accept(lfd, NULL, NULL);

    g_assert_cmpint(fd, >=, 0);
    fabric_st64(key, cluster);
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_HELLO);
    fabric_get_hello(frame + FABRIC_HDR_SIZE, &theirs);
    g_assert_cmpuint(theirs.node, ==, from);
    peer_hello(&h, cluster, self, nodes);
    fabric_put_hello(frame, &h);
    g_assert_cmpint(write(fd, frame, sizeof(frame)), ==, sizeof(frame));
    fabric_auth_mac(key, sizeof(key), theirs.nonce, h.nonce, cluster, self,
                    from, mac);
    peer_send(fd, FABRIC_AUTH, 0, mac, sizeof(mac));
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_AUTH);
    fabric_auth_mac(key, sizeof(key), h.nonce, theirs.nonce, cluster, from,
                    self, mac);
    g_assert_true(fabric_mac_equal(mac, frame + FABRIC_HDR_SIZE));
    return fd;
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
