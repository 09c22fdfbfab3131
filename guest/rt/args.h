/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Command-line splitting for the tempest runtime (private; also built
 * natively by tests/unit/test-args.c).  No hardware dependency.
 */
#ifndef TEMPEST_RT_ARGS_H
#define TEMPEST_RT_ARGS_H

/*
 * rt_split_args: splits the NUL-terminated string @buf in place into
 * words and stores pointers to them in @argv, followed by a NULL pointer.
 *
 * Whitespace (space, tab, newline, carriage return, vertical tab, form
 * feed) separates words.  A double-quoted span keeps its whitespace; the
 * quotes themselves are removed, and "" is an empty word.  A backslash,
 * inside or outside quotes, makes the next character literal (a trailing
 * backslash is kept as it is).  An unterminated quote runs to the end.
 *
 * @argv has room for @max_args pointers: at most @max_args - 1 words are
 * stored and later words are ignored.  When @buf holds no word, argv[0]
 * is "prog" (a static string).
 *
 * Returns the number of words stored (argc, at least 1), or -1 without
 * touching anything if @buf or @argv is NULL or @max_args is below 2.
 */
int rt_split_args(char *buf, char **argv, int max_args);

#endif /* TEMPEST_RT_ARGS_H */
