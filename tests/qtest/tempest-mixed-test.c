/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest of mixed clusters (docs/fabric.rst, "Mixed clusters"): nodes
 * addressed by TCP (tcp:H0:P0;H1:P1;...) whose nodes of one host share
 * memory and whose other links stay TCP; real QEMUs on the real fabric,
 * two hosts made of one by the host-id property.  Also: fabric-shm=off
 * keeps every link on TCP; a peer on TCP that claims shared memory, a
 * stranger's socket where a node of this host should be, and a directory
 * others could write to are refused, and the links are made over TCP.
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <netinet/in.h>
#include "tempest-qtest.h"
#include "qemu/bswap.h"
#include "tempest-peer.h"

#define SQ0_BASE    RAM(0x100000)
#define RQ_BASE     RAM(0x200000)
#define CQ_BASE     RAM(0x300000)
#define CLUSTER     0x3a1ed0001ULL
#define FAB         "/objects/fab"
#define MAX_NODES   4

typedef struct Mixed {
    char *dir;                  /* the nodes' shm-dir */
    char *addr;                 /* tcp:127.0.0.1:P0;... */
    unsigned nodes;
    int port[MAX_NODES];
    QTestState *node[MAX_NODES];
} Mixed;

/* A TCP port nobody listens on now (the kernel's pick). */
static int free_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
    close(fd);
    return ntohs(sa.sin_port);
}

/* A connection to 127.0.0.1:port, or -1. */
static int tcp_connect(int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(port);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void mixed_init(Mixed *m, unsigned nodes)
{
    g_autoptr(GString) addr = g_string_new("tcp:");

    memset(m, 0, sizeof(*m));
    m->nodes = nodes;
    m->dir = g_dir_make_tmp("tempest-mixed-XXXXXX", NULL);
    g_assert(m->dir);
    for (unsigned i = 0; i < nodes; i++) {
        m->port[i] = free_port();
        g_string_append_printf(addr, "%s127.0.0.1:%d", i ? ";" : "",
                               m->port[i]);
    }
    m->addr = g_string_free(g_steal_pointer(&addr), false);
}

/* Node i as an -object tempest-fabric-shm on host 'host'. */
static QTestState *start_obj(Mixed *m, unsigned i, const char *host)
{
    /* The shell runs QEMU: the addresses' ';' are quoted. */
    return qtest_initf("-object 'tempest-fabric-shm,id=fab,addr=%s,"
                       "node-id=%u,num-nodes=%u,cluster-id=%llu,"
                       "host-id=%s,shm-dir=%s' "
                       "-M tempest,node-id=%u,num-nodes=%u,"
                       "fabric-backend=fab -m 64M", m->addr, i, m->nodes,
                       (unsigned long long)CLUSTER, host, m->dir, i,
                       m->nodes);
}

/* Node i with the machine's own options (fabric-shm=shm). */
static QTestState *start_machine(Mixed *m, unsigned i, const char *shm)
{
    return qtest_initf("-M 'tempest,node-id=%u,num-nodes=%u,fabric=%s,"
                       "cluster-id=%llu,fabric-shm=%s,fabric-shm-dir=%s' "
                       "-m 64M", i, m->nodes, m->addr,
                       (unsigned long long)CLUSTER, shm, m->dir);
}

static void mixed_ready(Mixed *m)
{
    for (unsigned i = 0; i < m->nodes; i++) {
        if (!m->node[i]) {
            continue;
        }
        g_assert_cmpuint(tq_wait_reg(m->node[i], TEMPEST_NC_FABRIC_STATE, ~0,
                                     TEMPEST_FABRIC_READY), ==,
                         TEMPEST_FABRIC_READY);
        g_assert_cmpuint(tq_command3(m->node[i], TEMPEST_CMD_RING_SETUP,
                                     TEMPEST_RING_SQ0, SQ0_BASE, 16), ==,
                         TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(tq_command3(m->node[i], TEMPEST_CMD_RING_SETUP,
                                     TEMPEST_RING_RQ, RQ_BASE, 16), ==,
                         TEMPEST_CMD_SUCCESS);
        g_assert_cmpuint(tq_command3(m->node[i], TEMPEST_CMD_RING_SETUP,
                                     TEMPEST_RING_CQ, CQ_BASE, 16), ==,
                         TEMPEST_CMD_SUCCESS);
    }
}

static void put_packet(QTestState *s, unsigned slot, uint16_t dest,
                       uint64_t word1)
{
    uint8_t pkt[TEMPEST_PKT_SIZE] = { 0 };
    uint64_t addr = SQ0_BASE + slot * TEMPEST_PKT_SIZE;

    stw_le_p(pkt + TEMPEST_PKT_NODE, dest);
    stq_le_p(pkt + TEMPEST_PKT_WORD1, word1);
    qtest_memwrite(s, addr + 4, pkt + 4, TEMPEST_PKT_SIZE - 4);
    qtest_writel(s, addr, TEMPEST_PKT_VALID | 8);
}

/*
 * Every node sends a packet to every other (links are made on first
 * use), and each receives nodes - 1 of them.
 */
static void mixed_all_pairs(Mixed *m)
{
    for (unsigned i = 0; i < m->nodes; i++) {
        unsigned slot = 0;

        for (unsigned j = 0; j < m->nodes; j++) {
            if (j != i) {
                put_packet(m->node[i], slot++, j, 0x100 * i + j);
            }
        }
        qtest_writel(m->node[i], NC(TEMPEST_NC_SQ_DOORBELL),
                     TEMPEST_RING_SQ0);
    }
    for (unsigned i = 0; i < m->nodes; i++) {
        for (unsigned k = 0; k + 1 < m->nodes; k++) {
            uint64_t slot = RQ_BASE + k * TEMPEST_PKT_SIZE;
            uint64_t w;

            g_assert_cmphex(tq_wait_mem32(m->node[i], slot, ~0,
                                          TEMPEST_PKT_VALID | 8), ==,
                            TEMPEST_PKT_VALID | 8);
            w = qtest_readq(m->node[i], slot + TEMPEST_PKT_WORD1);
            g_assert_cmphex(w & 0xff, ==, i);
        }
        g_assert_cmpuint(qtest_readl(m->node[i], NC(TEMPEST_NC_PEERS_UP)),
                         ==, m->nodes - 1);
    }
}

/* The Unix socket node 'node' listens at on host 'host' (fabric-host.c). */
static char *host_sock(Mixed *m, const char *host, unsigned node)
{
    g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256,
                                                         host, -1);

    return g_strdup_printf("%s/c%016llx-h%.16s-n%u.sock", m->dir,
                           (unsigned long long)CLUSTER, sum, node);
}

/* How many of a node's links are in shared memory now (20 s to settle). */
static unsigned links_mapped(QTestState *s, unsigned want)
{
    gint64 end = g_get_monotonic_time() + TQ_WAIT_US;
    pid_t pid = qtest_pid(s);
    unsigned n;

    while ((n = peer_memfd_count(pid, "tempest-link", false)) != want &&
           g_get_monotonic_time() < end) {
        g_usleep(1000);
    }
    return n;
}

/* Stop the nodes; each removes its Unix socket as it stops. */
static void mixed_end(Mixed *m)
{
    g_autoptr(GDir) d = NULL;
    const char *e;

    for (unsigned i = 0; i < m->nodes; i++) {
        if (m->node[i]) {
            qtest_quit(m->node[i]);
        }
    }
    d = g_dir_open(m->dir, 0, NULL);
    while (d && (e = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(m->dir, e, NULL);

        g_assert_false(g_str_has_suffix(e, ".sock"));
        unlink(p);
    }
    rmdir(m->dir);
    g_free(m->dir);
    g_free(m->addr);
}

/*
 * "Mixed clusters": four nodes addressed by TCP on two hosts (host-id A
 * for nodes 0 and 1, B for 2 and 3).  Each node listens on its host's
 * Unix socket; once every pair has a link, the two links within a host
 * are shared memory (shm-links 1 and one mapped link on every node) and
 * the four across hosts are TCP (PEERS_UP 3), with nothing dropped.
 */
static void test_two_hosts(void)
{
    static const char *const host[] = { "A", "A", "B", "B" };
    Mixed m;

    mixed_init(&m, 4);
    for (unsigned i = 0; i < 4; i++) {
        m.node[i] = start_obj(&m, i, host[i]);
    }
    mixed_ready(&m);
    for (unsigned i = 0; i < 4; i++) {
        g_autofree char *p = host_sock(&m, host[i], i);

        /* Under its own host's name, and no other. */
        g_assert_true(g_file_test(p, G_FILE_TEST_EXISTS));
        g_free(p);
        p = host_sock(&m, strcmp(host[i], "A") ? "A" : "B", i);
        g_assert_false(g_file_test(p, G_FILE_TEST_EXISTS));
    }
    mixed_all_pairs(&m);
    for (unsigned i = 0; i < 4; i++) {
        g_assert_cmpuint(peer_wait_shm_links(m.node[i], FAB, 1), ==, 1);
        g_assert_cmpuint(links_mapped(m.node[i], 1), ==, 1);
        g_assert_cmpuint(qtest_readl(m.node[i], NC(TEMPEST_NC_DROPPED)), ==,
                         0);
    }
    mixed_end(&m);
}

/*
 * "Mixed clusters", the machine's options: two nodes of one host with
 * fabric=tcp:... share memory by default (fabric-shm=auto) and with
 * fabric-shm=off use TCP only: no Unix socket, no mapped link.
 */
static void test_machine_option(gconstpointer data)
{
    const char *shm = data;
    bool on = !strcmp(shm, "auto");
    Mixed m;

    mixed_init(&m, 2);
    for (unsigned i = 0; i < 2; i++) {
        m.node[i] = start_machine(&m, i, shm);
    }
    mixed_ready(&m);
    mixed_all_pairs(&m);
    for (unsigned i = 0; i < 2; i++) {
        g_autoptr(GDir) d = g_dir_open(m.dir, 0, NULL);
        unsigned socks = 0;
        const char *e;

        while ((e = g_dir_read_name(d))) {
            socks += g_str_has_suffix(e, ".sock");
        }
        g_assert_cmpuint(socks, ==, on ? 2 : 0);
        g_assert_cmpuint(links_mapped(m.node[i], on), ==, on);
    }
    mixed_end(&m);
}

/*
 * "Trust": a peer on TCP can claim shared memory in its HELLO and send
 * an OFFER; neither is believed.  The node's own HELLO on TCP offers
 * none, the OFFER is answered NACK and counted, a BELL too, and the link
 * goes on as a socket.
 */
static void test_tcp_offer(void)
{
    uint8_t buf[512];
    uint32_t flags = ~0u;
    Mixed m;
    int fd = -1;

    mixed_init(&m, 2);
    m.node[0] = start_obj(&m, 0, "A");
    for (int i = 0; i < 2000 && fd < 0; i++) {
        fd = tcp_connect(m.port[0]);
        if (fd < 0) {
            g_usleep(5000);
        }
    }
    g_assert_cmpint(fd, >=, 0);
    peer_set_timeout(fd, 20);
    peer_handshake(fd, 0, 1, 2, CLUSTER, NULL, 0, FABRIC_HELLO_SHM, &flags);
    g_assert_cmphex(flags & FABRIC_HELLO_SHM, ==, 0);
    mixed_ready(&m);
    peer_read_until(fd, FABRIC_MESH, buf, sizeof(buf));

    peer_shm_step(fd, FABRIC_SHM_OFFER, -1);
    g_assert_cmpuint(peer_read_until(fd, FABRIC_SHM, buf, sizeof(buf)), ==,
                     4);
    g_assert_cmpuint(fabric_ld32(buf + FABRIC_HDR_SIZE), ==,
                     FABRIC_SHM_NACK);
    peer_send(fd, FABRIC_BELL, 0, NULL, 0);
    g_assert_cmpuint(tq_wait_reg(m.node[0], TEMPEST_NC_DROPPED, ~0, 2), ==,
                     2);
    g_assert_cmpuint(peer_shm_links(m.node[0], FAB), ==, 0);

    /* The link works: a packet from the node arrives on the socket. */
    put_packet(m.node[0], 0, 1, 42);
    qtest_writel(m.node[0], NC(TEMPEST_NC_SQ_DOORBELL), TEMPEST_RING_SQ0);
    peer_read_until(fd, FABRIC_DATA, buf, sizeof(buf));
    g_assert_cmpuint(peer_frame_len(buf, sizeof(buf)), ==,
                     FABRIC_DATA_MIN + 8);
    g_assert_cmpuint(qtest_readl(m.node[0], NC(TEMPEST_NC_PEERS_UP)), ==, 1);
    close(fd);
    mixed_end(&m);
}

/*
 * "Mixed clusters" and "Trust": a stranger's socket where node 1 (host
 * A) looks for node 0 on its host (node 0 is on host B).  It answers as
 * node 0 saying it takes shared memory, but cannot prove it knows the
 * key: node 1 refuses it (counted), does not try it again, and reaches
 * node 0 over TCP; nothing is shared.
 */
static void test_planted_socket(void)
{
    g_autofree char *path = NULL;
    uint8_t frame[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    uint8_t mac[FABRIC_AUTH_SIZE] = { 0 };
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    FabricHello h;
    uint32_t len;
    Mixed m;
    int lfd, fd;

    mixed_init(&m, 2);
    path = host_sock(&m, "A", 0);
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
    g_assert_cmpint(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(listen(lfd, 4), ==, 0);

    m.node[1] = start_obj(&m, 1, "A");
    fd = accept(lfd, NULL, NULL);
    g_assert_cmpint(fd, >=, 0);
    peer_set_timeout(fd, 20);
    g_assert_cmpuint(peer_read_frame(fd, frame, sizeof(frame), &len), ==,
                     FABRIC_HELLO);
    peer_hello(&h, CLUSTER, 0, 2);
    h.flags = FABRIC_HELLO_SHM;
    fabric_put_hello(frame, &h);
    g_assert_cmpint(write(fd, frame, sizeof(frame)), ==, sizeof(frame));
    peer_send(fd, FABRIC_AUTH, 0, mac, sizeof(mac));
    g_assert_cmpuint(tq_wait_reg(m.node[1], TEMPEST_NC_DROPPED, ~0, 1), ==,
                     1);

    m.node[0] = start_obj(&m, 0, "B");
    mixed_ready(&m);
    mixed_all_pairs(&m);
    for (unsigned i = 0; i < 2; i++) {
        g_assert_cmpuint(peer_shm_links(m.node[i], FAB), ==, 0);
        g_assert_cmpuint(links_mapped(m.node[i], 0), ==, 0);
    }
    g_assert_cmpuint(qtest_readl(m.node[1], NC(TEMPEST_NC_DROPPED)), ==, 1);
    close(fd);
    close(lfd);
    unlink(path);
    mixed_end(&m);
}

/*
 * "Mixed clusters": a shm-dir that others could write to is not used:
 * the nodes listen on TCP only and every link is a socket.
 */
static void test_unsafe_dir(void)
{
    Mixed m;

    mixed_init(&m, 2);
    g_assert_cmpint(chmod(m.dir, 0755), ==, 0);
    for (unsigned i = 0; i < 2; i++) {
        m.node[i] = start_obj(&m, i, "A");
    }
    mixed_ready(&m);
    mixed_all_pairs(&m);
    for (unsigned i = 0; i < 2; i++) {
        g_autofree char *p = host_sock(&m, "A", i);

        g_assert_false(g_file_test(p, G_FILE_TEST_EXISTS));
        g_assert_cmpuint(peer_shm_links(m.node[i], FAB), ==, 0);
    }
    mixed_end(&m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/tempest/fabric-mixed/two-hosts", test_two_hosts);
    qtest_add_data_func("/tempest/fabric-mixed/machine-auto", "auto",
                        test_machine_option);
    qtest_add_data_func("/tempest/fabric-mixed/machine-off", "off",
                        test_machine_option);
    qtest_add_func("/tempest/fabric-mixed/tcp-offer", test_tcp_offer);
    qtest_add_func("/tempest/fabric-mixed/planted-socket",
                   test_planted_socket);
    qtest_add_func("/tempest/fabric-mixed/unsafe-dir", test_unsafe_dir);
    return g_test_run();
}
