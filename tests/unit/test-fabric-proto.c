/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the fabric's frame parser (hw/tempest/fabric-proto.h, the
 * same code the device runs): what is a whole valid frame, what is a bad
 * frame to drop, and what means the byte stream cannot be trusted.
 */
#include <glib.h>

#include "fabric-proto.h"

static size_t data_frame(uint8_t *buf, unsigned net, uint32_t len,
                         uint32_t ctl_len)
{
    memset(buf, 0, FABRIC_HDR_SIZE + FABRIC_DATA_MAX);
    fabric_put_header(buf, FABRIC_DATA, net, FABRIC_DATA_MIN + len);
    fabric_st32(buf + FABRIC_HDR_SIZE, 7);
    fabric_st32(buf + FABRIC_HDR_SIZE + 4 + TEMPEST_PKT_CTL,
                TEMPEST_PKT_VALID | ctl_len);
    return FABRIC_HDR_SIZE + FABRIC_DATA_MIN + len;
}

/* A HELLO round-trips through put/get and parses as one frame. */
static void test_hello(void)
{
    uint8_t buf[FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE];
    FabricHello in = { FABRIC_MAGIC, FABRIC_VERSION, 0x123456789abcdefULL,
                       3, 8, 32, { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                   13, 14, 15, 16 }, FABRIC_HELLO_SHM }, out;
    FabricHeader hdr;
    size_t len = 0;

    fabric_put_hello(buf, &in);
    g_assert_cmpint(fabric_parse(buf, sizeof(buf), &hdr, &len), ==,
                    FABRIC_PARSE_OK);
    g_assert_cmpuint(len, ==, sizeof(buf));
    g_assert_cmpuint(hdr.type, ==, FABRIC_HELLO);
    fabric_get_hello(buf + FABRIC_HDR_SIZE, &out);
    g_assert_cmphex(out.magic, ==, in.magic);
    g_assert_cmphex(out.cluster, ==, in.cluster);
    g_assert_cmpuint(out.node, ==, 3);
    g_assert_cmphex(out.flags, ==, FABRIC_HELLO_SHM);
    g_assert_cmpuint(out.nodes, ==, 8);
    g_assert_cmpuint(out.credits, ==, 32);
    g_assert(memcmp(out.nonce, in.nonce, FABRIC_NONCE_SIZE) == 0);
}

/*
 * AUTH: the MAC depends on the key, on both nonces (in their order), the
 * cluster and both node ids, so a proof is good for one connection only.
 */
static void test_auth_mac(void)
{
    const uint8_t key[] = "the cluster's key", other[] = "another key";
    uint8_t na[FABRIC_NONCE_SIZE] = { 1 }, nb[FABRIC_NONCE_SIZE] = { 2 };
    uint8_t m[FABRIC_AUTH_SIZE], m2[FABRIC_AUTH_SIZE];

    fabric_auth_mac(key, sizeof(key), na, nb, 7, 1, 0, m);
    fabric_auth_mac(key, sizeof(key), na, nb, 7, 1, 0, m2);
    g_assert_true(fabric_mac_equal(m, m2));
    fabric_auth_mac(other, sizeof(other), na, nb, 7, 1, 0, m2);
    g_assert_false(fabric_mac_equal(m, m2));
    fabric_auth_mac(key, sizeof(key), nb, na, 7, 1, 0, m2);
    g_assert_false(fabric_mac_equal(m, m2));
    fabric_auth_mac(key, sizeof(key), na, nb, 8, 1, 0, m2);
    g_assert_false(fabric_mac_equal(m, m2));
    fabric_auth_mac(key, sizeof(key), na, nb, 7, 0, 1, m2);
    g_assert_false(fabric_mac_equal(m, m2));
    m2[0] = m[0];
    memcpy(m2, m, sizeof(m));
    m2[FABRIC_AUTH_SIZE - 1] ^= 1;
    g_assert_false(fabric_mac_equal(m, m2));
}

/* A partial frame asks for more, at every cut point. */
static void test_partial(void)
{
    uint8_t buf[FABRIC_HDR_SIZE + FABRIC_DATA_MAX];
    size_t whole = data_frame(buf, 0, 100, 100), len;
    FabricHeader hdr;

    for (size_t cut = 0; cut < whole; cut++) {
        g_assert_cmpint(fabric_parse(buf, cut, &hdr, &len), ==,
                        FABRIC_PARSE_NEED_MORE);
    }
    g_assert_cmpint(fabric_parse(buf, whole, &hdr, &len), ==,
                    FABRIC_PARSE_OK);
    g_assert_cmpuint(len, ==, whole);
}

/* DATA of every payload size from 0 to the maximum is valid. */
static void test_data_sizes(void)
{
    uint8_t buf[FABRIC_HDR_SIZE + FABRIC_DATA_MAX];
    FabricHeader hdr;
    size_t len;

    for (uint32_t n = 0; n <= TEMPEST_PKT_MAX_PAYLOAD; n++) {
        size_t whole = data_frame(buf, n & 1, n, n);

        g_assert_cmpint(fabric_parse(buf, whole, &hdr, &len), ==,
                        FABRIC_PARSE_OK);
        g_assert_cmpuint(hdr.net, ==, n & 1);
    }
}

/* (1.11) A packet longer than the largest slot is no DATA frame. */
static void test_data_too_long(void)
{
    g_autofree uint8_t *buf = g_malloc0(FABRIC_HDR_SIZE + FABRIC_DATA_MAX +
                                        4);
    FabricHeader hdr;
    size_t len, whole;

    whole = data_frame(buf, 0, TEMPEST_PKT_MAX_PAYLOAD + 4,
                       TEMPEST_PKT_MAX_PAYLOAD + 4);
    g_assert_cmpint(fabric_parse(buf, whole, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
}

/* Whole frames that lie are dropped (BAD), and skipped whole. */
static void test_bad_frames(void)
{
    uint8_t buf[FABRIC_HDR_SIZE + FABRIC_DATA_MAX];
    FabricHeader hdr;
    size_t whole, len;

    whole = data_frame(buf, 0, 16, 200);        /* inner length lies */
    g_assert_cmpint(fabric_parse(buf, whole, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
    g_assert_cmpuint(len, ==, whole);
    whole = data_frame(buf, 2, 16, 16);         /* no network 2 */
    g_assert_cmpint(fabric_parse(buf, whole, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
    fabric_put_header(buf, 77, 0, 4);           /* unknown type */
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 4, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
    g_assert_cmpuint(len, ==, FABRIC_HDR_SIZE + 4);
    fabric_put_header(buf, FABRIC_CREDIT, 0, 8);    /* CREDIT is 4 bytes */
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 8, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
    fabric_put_header(buf, FABRIC_HELLO, 1, FABRIC_HELLO_SIZE);
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + FABRIC_HELLO_SIZE,
                                 &hdr, &len), ==, FABRIC_PARSE_BAD);
    fabric_put_header(buf, FABRIC_MESH, 0, 8);      /* MESH is 4 bytes */
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 8, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
    fabric_put_header(buf, FABRIC_MESH, 0, 4);
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 4, &hdr, &len), ==,
                    FABRIC_PARSE_OK);
    fabric_put_header(buf, FABRIC_DATA, 0, 3);      /* shorter than a slot */
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 3, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
    fabric_put_header(buf, FABRIC_SHM, 0, 4);       /* a step: 4 bytes */
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 4, &hdr, &len), ==,
                    FABRIC_PARSE_OK);
    fabric_put_header(buf, FABRIC_SHM, 0, 8);
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 8, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
    fabric_put_header(buf, FABRIC_BELL, 0, 0);      /* BELL is empty */
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE, &hdr, &len), ==,
                    FABRIC_PARSE_OK);
    g_assert_cmpuint(len, ==, FABRIC_HDR_SIZE);
    fabric_put_header(buf, FABRIC_BELL, 0, 4);
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 4, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
}

/* DIAL is two words, GONE three with exited 0 or 1 (docs/fabric.rst). */
static void test_dial_gone(void)
{
    uint8_t buf[FABRIC_HDR_SIZE + 16] = { 0 };
    FabricHeader hdr;
    size_t len;

    fabric_put_header(buf, FABRIC_DIAL, 0, FABRIC_DIAL_SIZE);
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 8, &hdr, &len), ==,
                    FABRIC_PARSE_OK);
    fabric_put_header(buf, FABRIC_DIAL, 0, 12);
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 12, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
    fabric_put_header(buf, FABRIC_DIAL, 1, FABRIC_DIAL_SIZE);
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 8, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
    fabric_put_header(buf, FABRIC_GONE, 0, FABRIC_GONE_SIZE);
    fabric_st32(buf + FABRIC_HDR_SIZE + 4, 1);
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 12, &hdr, &len), ==,
                    FABRIC_PARSE_OK);
    g_assert_cmpuint(len, ==, FABRIC_HDR_SIZE + FABRIC_GONE_SIZE);
    fabric_st32(buf + FABRIC_HDR_SIZE + 4, 2);      /* exited is a bit */
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 12, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
    fabric_put_header(buf, FABRIC_GONE, 0, 8);
    g_assert_cmpint(fabric_parse(buf, FABRIC_HDR_SIZE + 8, &hdr, &len), ==,
                    FABRIC_PARSE_BAD);
}

/*
 * A length no frame can have means the framing is lost: FATAL at once,
 * without waiting for bytes that would never make sense.
 */
static void test_fatal_length(void)
{
    uint8_t buf[FABRIC_HDR_SIZE];
    FabricHeader hdr;
    size_t len;

    fabric_put_header(buf, FABRIC_DATA, 0, FABRIC_MAX_BODY + 1);
    g_assert_cmpint(fabric_parse(buf, sizeof(buf), &hdr, &len), ==,
                    FABRIC_PARSE_FATAL);
    fabric_put_header(buf, FABRIC_BYE, 0, 0xffffffffU);
    g_assert_cmpint(fabric_parse(buf, sizeof(buf), &hdr, &len), ==,
                    FABRIC_PARSE_FATAL);
}

/* Little-endian helpers are exact at every byte. */
static void test_endian(void)
{
    uint8_t b[8];

    fabric_st64(b, 0x0807060504030201ULL);
    for (int i = 0; i < 8; i++) {
        g_assert_cmpuint(b[i], ==, i + 1);
    }
    g_assert_cmphex(fabric_ld64(b), ==, 0x0807060504030201ULL);
    g_assert_cmphex(fabric_ld32(b + 4), ==, 0x08070605);
    g_assert_cmphex(fabric_ld16(b + 6), ==, 0x0807);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fabric/hello", test_hello);
    g_test_add_func("/fabric/auth-mac", test_auth_mac);
    g_test_add_func("/fabric/partial", test_partial);
    g_test_add_func("/fabric/data-sizes", test_data_sizes);
    g_test_add_func("/fabric/data-too-long", test_data_too_long);
    g_test_add_func("/fabric/bad-frames", test_bad_frames);
    g_test_add_func("/fabric/dial-gone", test_dial_gone);
    g_test_add_func("/fabric/fatal-length", test_fatal_length);
    g_test_add_func("/fabric/endian", test_endian);
    return g_test_run();
}
