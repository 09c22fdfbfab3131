/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Command-line splitting (see args.h).  Pure C, no libc calls, so that it
 * builds both for the guest and natively for the unit tests.
 */
#include <stddef.h>

#include "args.h"

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

int rt_split_args(char *buf, char **argv, int max_args)
{
    static char prog[] = "prog";
    char *in = buf;
    char *out;
    int argc = 0;
    int quoted;

    if (buf == NULL || argv == NULL || max_args < 2) {
        return -1;
    }
    for (;;) {
        while (is_space(*in)) {
            in++;
        }
        if (*in == '\0' || argc == max_args - 1) {
            break;
        }
        /* A word: copy it onto itself, dropping quotes and escapes. */
        argv[argc++] = out = in;
        quoted = 0;
        while (*in != '\0' && (quoted || !is_space(*in))) {
            if (*in == '\\' && in[1] != '\0') {
                *out++ = in[1];
                in += 2;
            } else if (*in == '"') {
                quoted = !quoted;
                in++;
            } else {
                *out++ = *in++;
            }
        }
        if (*in != '\0') {
            in++;               /* the separator, now the terminator */
        }
        *out = '\0';
    }
    if (argc == 0) {
        argv[argc++] = prog;
    }
    argv[argc] = NULL;
    return argc;
}
