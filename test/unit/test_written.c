/*
 * Unit tests for the table of how far this process's writes reached
 * (source/gf2_written.c): the furthest end per file, a size below it
 * called stale, forgetting, and replacement of the file written longest
 * ago when the table is full.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "gf2_written.h"

static void test_furthest_end(void **state)
{
	struct gf2_written t;

	gf2_written_init(&t);
	assert_int_equal(gf2_written_end(&t, 7), 0);
	assert_false(gf2_written_stale(&t, 7, 0));
	/* writes in flight together end in any order */
	gf2_written_note(&t, 7, 8 << 20);
	gf2_written_note(&t, 7, (8 << 20) + 123);
	gf2_written_note(&t, 7, 4 << 20);
	assert_int_equal(gf2_written_end(&t, 7), (8 << 20) + 123);
	/* the size of a reply from before the last write is not believed */
	assert_true(gf2_written_stale(&t, 7, 8 << 20));
	assert_false(gf2_written_stale(&t, 7, (8 << 20) + 123));
	/* grown further by another client: fine */
	assert_false(gf2_written_stale(&t, 7, 9 << 20));
	/* another file knows nothing of it */
	assert_false(gf2_written_stale(&t, 8, 0));
}

static void test_ignored(void **state)
{
	struct gf2_written t;

	gf2_written_init(&t);
	gf2_written_note(&t, 0, 100);
	gf2_written_note(&t, 5, 0);
	assert_int_equal(gf2_written_end(&t, 0), 0);
	assert_int_equal(gf2_written_end(&t, 5), 0);
	assert_int_equal(t.tick, 0);
}

static void test_forget(void **state)
{
	struct gf2_written t;

	gf2_written_init(&t);
	gf2_written_note(&t, 7, 1000);
	gf2_written_note(&t, 9, 2000);
	gf2_written_forget(&t, 7);
	assert_false(gf2_written_stale(&t, 7, 10));
	assert_int_equal(gf2_written_end(&t, 9), 2000);
	/* written again after the truncation: counts from there */
	gf2_written_note(&t, 7, 50);
	assert_int_equal(gf2_written_end(&t, 7), 50);
	gf2_written_forget(&t, 12345);	/* not there: nothing */
	assert_int_equal(gf2_written_end(&t, 9), 2000);
}

static void test_full_replaces_longest_ago(void **state)
{
	struct gf2_written t;
	uint64_t i;

	gf2_written_init(&t);
	for (i = 1; i <= GF2_WRITTEN_SLOTS; i++) {
		gf2_written_note(&t, i, i * 10);
	}
	assert_int_equal(t.replaced, 0);
	/* file 1 written again: file 2 is now the one written longest ago */
	gf2_written_note(&t, 1, 11);
	gf2_written_note(&t, 1000, 5);
	assert_int_equal(t.replaced, 1);
	assert_int_equal(gf2_written_end(&t, 2), 0);
	assert_int_equal(gf2_written_end(&t, 1), 11);
	assert_int_equal(gf2_written_end(&t, 1000), 5);
	for (i = 3; i <= GF2_WRITTEN_SLOTS; i++) {
		assert_int_equal(gf2_written_end(&t, i), i * 10);
	}
	/* a new file takes a fresh slot's end, not the replaced one's */
	gf2_written_note(&t, 2000, 1);
	assert_int_equal(gf2_written_end(&t, 2000), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_furthest_end),
		cmocka_unit_test(test_ignored),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_full_replaces_longest_ago),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
