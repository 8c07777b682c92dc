/*
 * Unit tests for the deferred release rules (source/gf2_hold.c), driven
 * by a fake gfapi that completes the calls it was given in any order.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "gf2_hold.h"

/* An object with a hold, and a fake gfapi holding its calls. */
struct obj {
	struct gf2_hold hold;
	int released;
};

#define FAKE_MAX 8

struct fake_gfapi {
	struct obj *owner[FAKE_MAX];
	int n;
};

static void fake_submit(struct fake_gfapi *g, struct obj *o)
{
	gf2_hold_io_begin(&o->hold);
	g->owner[g->n++] = o;
}

/* Gluster answers call i: what the completion path does. */
static void fake_complete(struct fake_gfapi *g, int i)
{
	struct obj *o = g->owner[i];

	assert_non_null(o);
	g->owner[i] = NULL;
	if (gf2_hold_io_end(&o->hold)) {
		o->released += 1;
	}
}

static void obj_put(struct obj *o)
{
	if (gf2_hold_put(&o->hold)) {
		o->released += 1;
	}
}

static void test_put_without_calls_releases_now(void **state)
{
	struct obj o = { 0 };

	gf2_hold_get(&o.hold);
	obj_put(&o);
	assert_int_equal(o.released, 1);
	assert_false(gf2_hold_deferred(&o.hold));
}

static void test_put_with_calls_defers_to_last_completion(void **state)
{
	struct fake_gfapi g = { .n = 0 };
	struct obj o = { 0 };

	gf2_hold_get(&o.hold);
	fake_submit(&g, &o);
	fake_submit(&g, &o);
	fake_submit(&g, &o);
	obj_put(&o);
	assert_int_equal(o.released, 0);
	assert_true(gf2_hold_deferred(&o.hold));

	/* out of order: only the last one releases */
	fake_complete(&g, 1);
	assert_int_equal(o.released, 0);
	fake_complete(&g, 2);
	assert_int_equal(o.released, 0);
	fake_complete(&g, 0);
	assert_int_equal(o.released, 1);
	assert_false(gf2_hold_deferred(&o.hold));
}

static void test_completions_while_used_never_release(void **state)
{
	struct fake_gfapi g = { .n = 0 };
	struct obj o = { 0 };

	gf2_hold_get(&o.hold);
	fake_submit(&g, &o);
	fake_complete(&g, 0);
	assert_int_equal(o.released, 0);
	obj_put(&o);
	assert_int_equal(o.released, 1);
}

static void test_several_users(void **state)
{
	struct fake_gfapi g = { .n = 0 };
	struct obj o = { 0 };

	/* two tree connects on one volume, a call in flight */
	gf2_hold_get(&o.hold);
	gf2_hold_get(&o.hold);
	fake_submit(&g, &o);
	obj_put(&o);
	assert_false(gf2_hold_deferred(&o.hold));
	fake_complete(&g, 0);
	assert_int_equal(o.released, 0);
	obj_put(&o);
	assert_int_equal(o.released, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_without_calls_releases_now),
		cmocka_unit_test(
			test_put_with_calls_defers_to_last_completion),
		cmocka_unit_test(test_completions_while_used_never_release),
		cmocka_unit_test(test_several_users),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
