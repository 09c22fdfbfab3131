/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fabric readiness: before main(), a node whose node controller has a
 * fabric (TEMPEST_NC_FEAT_FABRIC) waits until every node of the cluster
 * is connected (FABRIC_STATE READY; a 1-node cluster is READY at once).
 *
 * The boot CPU sleeps in WFI with the node controller's IRQ_FABRIC
 * enabled (its SPI routed to CPU 0 and handled by the masked sleep), and
 * re-reads the state at least every POLL_US in case an edge is missed
 * (rarely: hundreds of nodes wait at once while the cluster forms, and
 * each wake-up costs its QEMU about 0.2 ms of a host core).
 * If the state becomes FAILED, or is not READY after TIMEOUT_S, the node
 * says so on the console and ends with status FABRIC_EXIT_STATUS.
 */
#include "rt-internal.h"

#define NC_INTID            (32 + TEMPEST_NC_SPI)
#define POLL_US             200000
#define TIMEOUT_S           60
#define NOTE_S              10
#define FABRIC_EXIT_STATUS  1

static void put_dec(char *buf, size_t *n, uint64_t v)
{
    char tmp[20];
    int k = 0;

    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k > 0) {
        buf[(*n)++] = tmp[--k];
    }
}

static void put_str(char *buf, size_t *n, const char *s)
{
    while (*s) {
        buf[(*n)++] = *s++;
    }
}

static const char *state_name(uint32_t state)
{
    switch (state) {
    case TEMPEST_FABRIC_CONNECTING:
        return "CONNECTING";
    case TEMPEST_FABRIC_READY:
        return "READY";
    case TEMPEST_FABRIC_FAILED:
        return "FAILED";
    default:
        return "unknown";
    }
}

/* "tempest-rt: node N: <what> (fabric STATE, peers up U of P)<tail>\n" */
static void report(const char *what, uint32_t state, const char *tail)
{
    char buf[200];
    size_t n = 0;

    put_str(buf, &n, "tempest-rt: node ");
    put_dec(buf, &n, rt_info.node_id);
    put_str(buf, &n, ": ");
    put_str(buf, &n, what);
    put_str(buf, &n, " (fabric state ");
    put_str(buf, &n, state_name(state));
    put_str(buf, &n, " = ");
    put_dec(buf, &n, state);
    put_str(buf, &n, ", peers up ");
    put_dec(buf, &n, rt_nc_reg(TEMPEST_NC_PEERS_UP));
    put_str(buf, &n, " of ");
    put_dec(buf, &n, rt_info.num_nodes - 1);
    put_str(buf, &n, ")");
    put_str(buf, &n, tail);
    put_str(buf, &n, "\n");
    buf[n] = '\0';
    rt_puts_raw(buf);
}

static void fabric_irq(unsigned intid, void *arg)
{
    (void)intid;
    (void)arg;
    rt_nc_reg_write(TEMPEST_NC_IRQ_ACK, TEMPEST_NC_IRQ_FABRIC);
}

void rt_fabric_wait(void)
{
    uint64_t start, now, per_s = rt_ticks_per_ms() * 1000;
    uint32_t state, enable;
    bool noted = false, irq;

    if (!(rt_nc_reg(TEMPEST_NC_FEATURES) & TEMPEST_NC_FEAT_FABRIC)) {
        return;
    }
    state = rt_nc_reg(TEMPEST_NC_FABRIC_STATE);
    if (state == TEMPEST_FABRIC_READY) {
        return;
    }
    enable = rt_nc_reg(TEMPEST_NC_IRQ_ENABLE);
    irq = rt_irq_register(NC_INTID, fabric_irq, NULL) == 0 &&
          rt_irq_enable_spi(NC_INTID, 0, false) == 0;
    if (irq) {
        rt_nc_reg_write(TEMPEST_NC_IRQ_ENABLE,
                        enable | TEMPEST_NC_IRQ_FABRIC);
    }
    start = rt_ticks();
    for (;;) {
        state = rt_nc_reg(TEMPEST_NC_FABRIC_STATE);
        if (state == TEMPEST_FABRIC_READY) {
            break;
        }
        now = rt_ticks();
        if (state == TEMPEST_FABRIC_FAILED) {
            report("the fabric could not form the cluster", state,
                   "; stopping");
            rt_hard_exit(FABRIC_EXIT_STATUS);
        }
        if (now - start > TIMEOUT_S * per_s) {
            report("the fabric is not ready after 60 s", state,
                   "; stopping");
            rt_hard_exit(FABRIC_EXIT_STATUS);
        }
        if (!noted && now - start > NOTE_S * per_s) {
            report("still waiting for the other nodes", state, "");
            noted = true;
        }
        rt_cpu_sleep(POLL_US);
    }
    if (irq) {
        rt_nc_reg_write(TEMPEST_NC_IRQ_ENABLE, enable);
        rt_nc_reg_write(TEMPEST_NC_IRQ_ACK, TEMPEST_NC_IRQ_FABRIC);
        rt_irq_disable_spi(NC_INTID);
        rt_irq_register(NC_INTID, NULL, NULL);
    }
}
