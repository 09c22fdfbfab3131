/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libchan: the port table (section 4 of the paper), names, reports and
 * counters.  Only the protocol thread changes the table.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chan-internal.h"

struct cport cp_ports[CHAN_PORTS];
struct chan_stats cp_stats;
static unsigned next_free;      /* where the search for a free entry starts */

chan_port cp_id(const struct cport *p)
{
    return (chan_port)TPPI_self_address << CP_NODE_SHIFT |
           (chan_port)cp_index(p) << CP_INDEX_SHIFT | p->gen;
}

unsigned cp_index(const struct cport *p)
{
    return (unsigned)(p - cp_ports);
}

struct cport *cp_find(chan_port id)
{
    struct cport *p;

    if (CHAN_PORT_NODE(id) != TPPI_self_address) {
        return NULL;
    }
    p = &cp_ports[CHAN_PORT_INDEX(id)];
    if (p->state == CHAN_EMPTY || p->gen != (id & 0xFFU)) {
        return NULL;
    }
    return p;
}

struct cport *cp_new(void)
{
    struct cport *p;
    unsigned k, i;
    uint8_t gen;

    /* Round robin: an entry's name comes back as late as possible. */
    for (k = 0; k < CHAN_PORTS; k++) {
        i = (next_free + k) % CHAN_PORTS;
        p = &cp_ports[i];
        if (p->state != CHAN_EMPTY) {
            continue;
        }
        gen = p->gen ? p->gen : 1;
        memset(p, 0, sizeof(*p));
        p->gen = gen;
        p->state = CHAN_IDLE;
        next_free = (i + 1) % CHAN_PORTS;
        cp_stats.ports_in_use++;
        return p;
    }
    return NULL;
}

void cp_release_held(struct cport *p)
{
    if (p->held == HELD_DATA && p->held_lib) {
        free(p->held_data);
    }
    p->held = HELD_NONE;
    p->held_lib = false;
    p->held_data = NULL;
    p->held_len = 0;
}

void cp_free(struct cport *p)
{
    uint8_t gen = p->gen == 255 ? 1 : p->gen + 1;

    cp_release_held(p);
    memset(p, 0, sizeof(*p));
    p->gen = gen;
    p->state = CHAN_EMPTY;
    cp_stats.ports_in_use--;
}

void cp_complete(struct chan_req *r, int rc)
{
    r->result = rc;
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

void cp_finish(struct cport *p, int rc)
{
    struct chan_req *r = p->waiter;

    p->waiter = NULL;
    if (r) {
        cp_complete(r, rc);
    } else {
        p->out_err = rc;        /* an output started without waiting */
    }
}

void cp_protocol_error(const char *fmt, ...)
{
    char line[200];
    va_list ap;

    cp_stats.protocol_errors++;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("*** chan: node %u: protocol: %s\n", TPPI_self_address, line);
}

const char *cp_fmt_port(char *buf, chan_port p)
{
    snprintf(buf, 16, "%u:%u/%u", CHAN_PORT_NODE(p), CHAN_PORT_INDEX(p),
             (unsigned)(p & 0xFFU));
    return buf;
}

const char *chan_state_name(int state)
{
    static const char *const names[] = {
        [CHAN_EMPTY] = "EMPTY",
        [CHAN_IDLE] = "IDLE",
        [CHAN_INPUTTING] = "INPUTTING",
        [CHAN_OUTPUTTING] = "OUTPUTTING",
        [CHAN_BUFFERFULL] = "BUFFERFULL",
        [CHAN_MIGRATING] = "MIGRATING",
        [CHAN_CONFIRMING] = "CONFIRMING",
    };

    if (state < 0 || state > CHAN_CONFIRMING) {
        return "?";
    }
    return names[state];
}

const char *chan_strerror(int err)
{
    switch (err) {
    case 0:
        return "no error";
    case CHAN_E_BADPORT:
        return "not a port of this node";
    case CHAN_E_STATE:
        return "the port is busy or in the wrong state";
    case CHAN_E_MIGRATING:
        return "the port is migrating";
    case CHAN_E_ARG:
        return "bad argument";
    case CHAN_E_NOPORTS:
        return "no free port";
    case CHAN_E_CLOSED:
        return "the companion port was freed";
    case CHAN_E_TYPE:
        return "data and port mixed up";
    case CHAN_E_TOOBIG:
        return "the data is longer than the buffer";
    case CHAN_E_NOBUF:
        return "the port names no buffer";
    case CHAN_E_CONTEXT:
        return "called from a handler";
    default:
        return "unknown error";
    }
}

void chan_get_stats(struct chan_stats *s)
{
    if (s) {
        memcpy(s, &cp_stats, sizeof(*s));
        if (cp_on_device) {
            cp_dev_stats(s);
        }
    }
}

void chan_dump(void)
{
    static const char *const held[] = { "", " holds data", " holds port" };
    char b1[16], b2[16];
    struct cport *p;
    unsigned i;

    if (cp_on_device) {
        cp_dev_dump();
        return;
    }
    for (i = 0; i < CHAN_PORTS; i++) {
        p = &cp_ports[i];
        if (p->state == CHAN_EMPTY) {
            continue;
        }
        printf("chan: node %u: port %s %s comp %s tx %u rx %u%s%s\n",
               TPPI_self_address, cp_fmt_port(b1, cp_id(p)),
               chan_state_name(p->state), cp_fmt_port(b2, p->comp),
               (unsigned)p->tx, (unsigned)p->rx, held[p->held % 3],
               p->waiter ? " (a call waits)" : "");
    }
}
