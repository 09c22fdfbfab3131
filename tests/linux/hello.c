/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hello for Linux nodes (docs/linux.rst, "Programs"): prints what the
 * node learns from its kernel command line (tempest.node, tempest.nodes),
 * the CPUs Linux brought up and the kernel's release, then exits with the
 * status given as "exit-on NODE STATUS" arguments, if any, else 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static long cmdline_value(const char *cmdline, const char *key)
{
    const char *p = strstr(cmdline, key);

    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

int main(int argc, char **argv)
{
    char cmdline[4096] = "";
    struct utsname u;
    FILE *f = fopen("/proc/cmdline", "r");
    long node, nodes;

    if (!f || !fgets(cmdline, sizeof(cmdline), f)) {
        perror("/proc/cmdline");
        return 1;
    }
    fclose(f);
    node = cmdline_value(cmdline, "tempest.node=");
    nodes = cmdline_value(cmdline, "tempest.nodes=");
    uname(&u);
    printf("hello from Linux node %ld of %ld: %ld CPUs online, kernel %s\n",
           node, nodes, sysconf(_SC_NPROCESSORS_ONLN), u.release);
    for (int i = 1; i + 2 < argc; i += 3) {
        if (!strcmp(argv[i], "exit-on") && atol(argv[i + 1]) == node) {
            printf("node %ld exits %s\n", node, argv[i + 2]);
            return atoi(argv[i + 2]);
        }
    }
    return 0;
}
