/*
 * Unit tests for the change rules (source/gf2_change.c): what each change
 * made through the process drops.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>

#include "gf2_change.h"

static void test_data(void **state)
{
	/* a write drops its range and the stat, and nothing by path */
	assert_int_equal(gf2_change_drops(GF2_CHANGE_DATA),
			 GF2_DROP_DATA | GF2_DROP_STAT);
	/* times: the stat only, the xattrs and the data stay */
	assert_int_equal(gf2_change_drops(GF2_CHANGE_TIMES), GF2_DROP_STAT);
}

static void test_paths(void **state)
{
	/* mode, owner, a new name: the path, the lists stay */
	assert_int_equal(gf2_change_drops(GF2_CHANGE_ATTRS), GF2_DROP_PATH);
	assert_int_equal(gf2_change_drops(GF2_CHANGE_NAME), GF2_DROP_PATH);
	/* an xattr change: the path and every list */
	assert_int_equal(gf2_change_drops(GF2_CHANGE_XATTR),
			 GF2_DROP_PATH | GF2_DROP_LISTS);
	/* rename, removal: what is below too, and every list */
	assert_int_equal(gf2_change_drops(GF2_CHANGE_TREE),
			 GF2_DROP_TREE | GF2_DROP_LISTS);
}

static void test_only_data_pauses_prefetch(void **state)
{
	enum gf2_change_kind k;

	for (k = GF2_CHANGE_DATA; k <= GF2_CHANGE_TREE; k++) {
		unsigned d = gf2_change_drops(k);

		/* every change drops something */
		assert_int_not_equal(d, 0);
		assert_int_equal((d & GF2_DROP_DATA) != 0,
				 k == GF2_CHANGE_DATA);
	}
}

static void test_unknown_kind(void **state)
{
	/* a kind the table does not know drops the most it can */
	assert_int_equal(gf2_change_drops((enum gf2_change_kind)99),
			 GF2_DROP_TREE | GF2_DROP_LISTS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_data),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_only_data_pauses_prefetch),
		cmocka_unit_test(test_unknown_kind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
