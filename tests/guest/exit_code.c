/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checks argv from the node controller command line and the exit status:
 * prints "argc=N" and "argv[i]=<...>" for each argument, then exits with
 * the integer given as argv[1] (0 without one).
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int i;

    printf("argc=%d\n", argc);
    for (i = 0; i < argc; i++) {
        printf("argv[%d]=<%s>\n", i, argv[i]);
    }
    return argc > 1 ? (int)strtol(argv[1], NULL, 0) : 0;
}
