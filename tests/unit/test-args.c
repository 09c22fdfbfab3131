/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checks rt_split_args() (guest/rt/args.h), the runtime's splitting of the
 * node controller command line into argv: separators, quoting, escapes,
 * the "prog" default, the max_args limit and bad arguments.
 */
#include <glib.h>
#include <string.h>

#include "args.h"

#define ARGV_LEN 16

/* Splits @line and checks the result against the NULL-terminated @want. */
static void check_split(const char *line, int max_args,
                        const char *const *want)
{
    g_autofree char *buf = g_strdup(line);
    char *argv[ARGV_LEN + 1];
    int n = 0;
    int i;

    g_assert_cmpint(max_args, <=, ARGV_LEN);
    memset(argv, 0x55, sizeof(argv));   /* no stale NULLs */
    while (want[n]) {
        n++;
    }
    g_assert_cmpint(rt_split_args(buf, argv, max_args), ==, n);
    for (i = 0; i < n; i++) {
        g_assert_cmpstr(argv[i], ==, want[i]);
    }
    g_assert_null(argv[n]);
}

static void test_empty(void)
{
    const char *const want[] = { "prog", NULL };

    check_split("", ARGV_LEN, want);
    check_split("   \t\n ", ARGV_LEN, want);
}

static void test_single(void)
{
    const char *const want[] = { "hello", NULL };

    check_split("hello", ARGV_LEN, want);
    check_split("  hello", ARGV_LEN, want);
}

static void test_many(void)
{
    const char *const want[] = { "prog", "a", "bb", "ccc", "-x", "42", NULL };

    check_split("prog a bb ccc -x 42", ARGV_LEN, want);
    check_split("prog\ta  bb\n\nccc\r-x \v42", ARGV_LEN, want);
}

static void test_trailing_spaces(void)
{
    const char *const want[] = { "prog", "a", NULL };

    check_split("prog a   ", ARGV_LEN, want);
    check_split("prog a \t\n", ARGV_LEN, want);
}

static void test_quotes(void)
{
    const char *const want1[] = { "prog", "a", "b c", NULL };
    const char *const want2[] = { "prog", "", "x", NULL };
    const char *const want3[] = { "ab cd", "  lead", NULL };
    const char *const want4[] = { "prog", "open quote  to end", NULL };

    check_split("prog a \"b c\"", ARGV_LEN, want1);
    check_split("prog \"\" x", ARGV_LEN, want2);
    check_split("a\"b c\"d \"  lead\"", ARGV_LEN, want3);
    check_split("prog \"open quote  to end", ARGV_LEN, want4);
}

static void test_escapes(void)
{
    const char *const want1[] = { "a b", "q\"q", "back\\slash", NULL };
    const char *const want2[] = { "in \"quotes\" \\", NULL };
    const char *const want3[] = { "end\\", NULL };
    const char *const want4[] = { "x", "y", NULL };

    check_split("a\\ b q\\\"q back\\\\slash", ARGV_LEN, want1);
    check_split("\"in \\\"quotes\\\" \\\\\"", ARGV_LEN, want2);
    check_split("end\\", ARGV_LEN, want3);
    check_split("\\x y", ARGV_LEN, want4);
}

/* The launcher quotes every argument as "..." with \ and " escaped. */
static void test_launcher_quoting(void)
{
    const char *const want[] = { "prog", "1", "two words", "a\"b", "c\\d",
                                 "", NULL };

    check_split("\"prog\" \"1\" \"two words\" \"a\\\"b\" \"c\\\\d\" \"\"",
                ARGV_LEN, want);
}

static void test_max_args(void)
{
    const char *const want2[] = { "a", NULL };
    const char *const want4[] = { "a", "b", "c", NULL };

    check_split("a b c d e", 2, want2);
    check_split("a b c d e", 4, want4);
    check_split("a b c", 4, want4);
}

static void test_bad_arguments(void)
{
    char buf[] = "a b";
    char *argv[4] = { NULL, NULL, NULL, NULL };

    g_assert_cmpint(rt_split_args(NULL, argv, 4), ==, -1);
    g_assert_cmpint(rt_split_args(buf, NULL, 4), ==, -1);
    g_assert_cmpint(rt_split_args(buf, argv, 1), ==, -1);
    g_assert_cmpint(rt_split_args(buf, argv, 0), ==, -1);
    g_assert_cmpint(rt_split_args(buf, argv, -3), ==, -1);
    g_assert_null(argv[0]);
    g_assert_cmpstr(buf, ==, "a b");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rt/args/empty", test_empty);
    g_test_add_func("/rt/args/single", test_single);
    g_test_add_func("/rt/args/many", test_many);
    g_test_add_func("/rt/args/trailing-spaces", test_trailing_spaces);
    g_test_add_func("/rt/args/quotes", test_quotes);
    g_test_add_func("/rt/args/escapes", test_escapes);
    g_test_add_func("/rt/args/launcher-quoting", test_launcher_quoting);
    g_test_add_func("/rt/args/max-args", test_max_args);
    g_test_add_func("/rt/args/bad-arguments", test_bad_arguments);
    return g_test_run();
}
