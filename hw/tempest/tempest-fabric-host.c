/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Tempest fabric's mixed clusters: nodes addressed by TCP
 * (tcp:H0:P0;H1:P1;...) of which some share a host.  A tempest-fabric-shm
 * node with tcp: addresses listens on TCP and, beside it, on a Unix socket
 * whose name says its cluster, its host and its node:
 *
 *   SHM_DIR/c<cluster, 16 hex>-h<host key, 16 hex>-n<node>.sock
 *
 * where the host key is the start of the SHA-256 of the host identity
 * (the machine's boot id and the user's uid, or the property "host-id",
 * which lets tests make two hosts of one).  A node that dials a peer first
 * looks for that peer's socket under its own host key: found, the link is
 * made on it and becomes shared memory as in a shm:DIR cluster; not found
 * (another host), failing to connect FABRIC_LOCAL_TRIES times (a stale
 * file), or answered by something that does not prove itself to be the
 * node (its HELLO, its AUTH, in FABRIC_HELLO_MS), the link is made over TCP and
 * stays a socket.  Only this host's nodes of this user can reach the
 * directory (mode 0700, owned by the user, checked): a directory that is
 * not so is not used, and every link is TCP.  docs/fabric.rst, "Mixed
 * clusters", says it in full.
 *
 * The socket backend (tempest-fabric.c) calls these functions; they call
 * nothing of it.
 */

#include "qemu/osdep.h"
#include <sys/socket.h>
#include <sys/un.h>
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/sockets.h"
#include "tempest-fabric-internal.h"
#include "trace.h"

/* Attempts on a peer's Unix socket before it is dialled over TCP. */
#define FABRIC_LOCAL_TRIES  3
#define FABRIC_HOST_KEY_LEN 16

/* This host's identity: the property, else boot id and uid. */
static char *host_identity(FabricSocket *f)
{
    g_autofree char *boot = NULL;

    if (f->host_id && *f->host_id) {
        return g_strdup(f->host_id);
    }
    if (!g_file_get_contents("/proc/sys/kernel/random/boot_id", &boot, NULL,
                             NULL)) {
        boot = g_strdup(g_get_host_name());
    }
    g_strstrip(boot);
    return g_strdup_printf("%s:%u", boot, (unsigned)getuid());
}

/* The directory this host's nodes listen in, if it is fit for it. */
static char *host_dir(FabricSocket *f)
{
    const char *run = g_getenv("XDG_RUNTIME_DIR");
    g_autofree char *dir = NULL;
    struct stat st;

    if (f->shm_dir && *f->shm_dir) {
        dir = g_strdup(f->shm_dir);
    } else if (run && run[0] == '/') {
        dir = g_strdup_printf("%s/tempest", run);
    } else {
        dir = g_strdup_printf("/tmp/tempest-%u", (unsigned)getuid());
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        warn_report("tempest fabric: node %u: cannot make %s (%s): every "
                    "link goes over TCP", f->node, dir, strerror(errno));
        return NULL;
    }
    /* Ours alone: nobody else may plant a socket where we look. */
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != getuid() || (st.st_mode & 077)) {
        warn_report("tempest fabric: node %u: %s is not a directory of "
                    "this user's only (mode 0700): every link goes over "
                    "TCP", f->node, dir);
        return NULL;
    }
    return g_steal_pointer(&dir);
}

static char *host_path(FabricSocket *f, unsigned node)
{
    return g_strdup_printf("%s/c%016" PRIx64 "-h%s-n%u.sock", f->local_dir,
                           f->cluster, f->host_key, node);
}

void fabric_host_start(FabricSocket *f)
{
    g_autofree char *id = host_identity(f);
    g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256,
                                                         id, -1);
    g_autofree char *path = NULL;
    struct sockaddr_un sa;
    SocketAddress addr = { .type = SOCKET_ADDRESS_TYPE_UNIX };
    Error *err = NULL;

    f->host_key = g_strndup(sum, FABRIC_HOST_KEY_LEN);
    f->local_fails = g_new0(uint8_t, f->nodes);
    f->local_dir = host_dir(f);
    if (!f->local_dir) {
        return;
    }
    path = host_path(f, f->node);
    if (strlen(path) >= sizeof(sa.sun_path)) {
        warn_report("tempest fabric: node %u: %s is too long a socket name: "
                    "every link goes over TCP", f->node, path);
        g_clear_pointer(&f->local_dir, g_free);
        return;
    }
    unlink(path);           /* a stale one of ours, in our own directory */
    addr.u.q_unix.path = path;
    f->local_listener = qio_channel_socket_new();
    if (qio_channel_socket_listen_sync(f->local_listener, &addr,
                                       fabric_backlog(f->nodes), &err) < 0) {
        warn_reportf_err(err, "tempest fabric: node %u: every link goes "
                         "over TCP: ", f->node);
        object_unref(OBJECT(f->local_listener));
        f->local_listener = NULL;
        g_clear_pointer(&f->local_dir, g_free);
        return;
    }
    qio_channel_set_blocking(QIO_CHANNEL(f->local_listener), false, NULL);
    f->local_path = g_steal_pointer(&path);
    trace_tempest_fabric_listen(f->node, f->local_path);
}

void fabric_host_stop(FabricSocket *f)
{
    if (f->local_listener) {
        qemu_set_fd_handler(f->local_listener->fd, NULL, NULL, NULL);
        object_unref(OBJECT(f->local_listener));
        f->local_listener = NULL;
    }
    if (f->local_path) {
        unlink(f->local_path);
    }
    g_clear_pointer(&f->local_path, g_free);
    g_clear_pointer(&f->local_dir, g_free);
    g_clear_pointer(&f->host_key, g_free);
    g_clear_pointer(&f->local_fails, g_free);
}

char *fabric_host_addr(FabricSocket *f, unsigned i)
{
    g_autofree char *path = NULL;
    struct stat st;

    if (!f->local_path || i >= f->nodes ||
        f->local_fails[i] >= FABRIC_LOCAL_TRIES) {
        return NULL;
    }
    path = host_path(f, i);
    /* No such socket here: the node is on another host (or not up yet). */
    if (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode)) {
        return NULL;
    }
    return g_strdup_printf("unix:%s", path);
}

void fabric_host_failed(FabricSocket *f, unsigned i, bool refused,
                        const char *why)
{
    if (f->local_fails && i < f->nodes &&
        f->local_fails[i] < FABRIC_LOCAL_TRIES) {
        f->local_fails[i] = refused ? FABRIC_LOCAL_TRIES :
                            f->local_fails[i] + 1;
        trace_tempest_fabric_local_failed(f->node, i, f->local_fails[i], why);
    }
}

/* ------------------------------------------------------------------ */
/* Properties                                                          */
/* ------------------------------------------------------------------ */

static FabricSocket *host_sock(Object *obj)
{
    return container_of(TEMPEST_FABRIC(obj), FabricSocket, parent_obj);
}

static bool host_settable(FabricSocket *f, Error **errp)
{
    if (f->parent_obj.ops) {
        error_setg(errp, "the fabric is attached: its host settings are "
                   "fixed");
        return false;
    }
    return true;
}

static char *host_get_id(Object *obj, Error **errp)
{
    return g_strdup(host_sock(obj)->host_id ?: "");
}

static void host_set_id(Object *obj, const char *value, Error **errp)
{
    FabricSocket *f = host_sock(obj);

    if (host_settable(f, errp)) {
        g_free(f->host_id);
        f->host_id = g_strdup(value);
    }
}

static char *host_get_dir(Object *obj, Error **errp)
{
    return g_strdup(host_sock(obj)->shm_dir ?: "");
}

static void host_set_dir(Object *obj, const char *value, Error **errp)
{
    FabricSocket *f = host_sock(obj);

    if (host_settable(f, errp)) {
        g_free(f->shm_dir);
        f->shm_dir = g_strdup(value);
    }
}

void fabric_host_class_init(ObjectClass *oc)
{
    object_class_property_add_str(oc, "host-id", host_get_id, host_set_id);
    object_class_property_set_description(oc, "host-id",
        "this host's identity among the nodes of a tcp: cluster (default: "
        "the boot id and the uid); nodes of one identity share memory");
    object_class_property_add_str(oc, "shm-dir", host_get_dir, host_set_dir);
    object_class_property_set_description(oc, "shm-dir",
        "directory of this host's nodes' Unix sockets in a tcp: cluster "
        "(default $XDG_RUNTIME_DIR/tempest or /tmp/tempest-UID)");
}
