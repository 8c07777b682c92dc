/*
 * Unit tests for the write queue rules (source/gf2_wqueue.c): gathering,
 * when a gather goes, ordering of overlapping writes, the budget, and
 * the latched error.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <errno.h>
#include <cmocka.h>

#include "gf2_wqueue.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)

/* Queue one write the way the cache layer does; returns the placement. */
static enum gf2_wq_place put(struct gf2_wq *q, uint64_t off, uint64_t len,
			     uint64_t avail)
{
	uint64_t cap = 0;
	enum gf2_wq_place p = gf2_wq_place(q, off, len, avail, &cap);

	switch (p) {
	case GF2_WQ_APPEND:
		gf2_wq_append(q, len);
		break;
	case GF2_WQ_NEW:
		if (q->gather.used) {
			(void)gf2_wq_send(q);
		}
		gf2_wq_start(q, off, len, cap);
		break;
	default:
		break;
	}
	return p;
}

static void test_sequential_writes_gather(void **state)
{
	struct gf2_wq q;
	unsigned i;

	gf2_wq_init(&q, 1 * MiB, 4);
	assert_int_equal(put(&q, 0, 64 * KiB, 64 * MiB), GF2_WQ_NEW);
	assert_int_equal(q.reserved, 1 * MiB);
	/* nothing in flight: the first write goes at once */
	assert_true(gf2_wq_should_send(&q, false));
	(void)gf2_wq_send(&q);
	for (i = 1; i < 16; i++) {
		enum gf2_wq_place p = put(&q, i * 64 * KiB, 64 * KiB,
					  64 * MiB);

		assert_int_equal(p, i == 1 ? GF2_WQ_NEW : GF2_WQ_APPEND);
		/* one in flight and not full: keeps gathering */
		assert_false(gf2_wq_should_send(&q, false));
	}
	assert_int_equal(q.gather.len, 15 * 64 * KiB);
	assert_int_equal(q.gather.writes, 15);
	assert_int_equal(gf2_wq_queued(&q), 16 * 64 * KiB);
	/* a drain sends it anyway */
	assert_true(gf2_wq_should_send(&q, true));
	/* the 16th fills it */
	assert_int_equal(put(&q, 16 * 64 * KiB, 64 * KiB, 64 * MiB),
			 GF2_WQ_APPEND);
	assert_true(gf2_wq_should_send(&q, false));
}

static void test_gather_goes_when_nothing_flies(void **state)
{
	struct gf2_wq q;
	unsigned s;

	gf2_wq_init(&q, 1 * MiB, 4);
	put(&q, 0, 4 * KiB, 64 * MiB);
	s = gf2_wq_send(&q);
	put(&q, 4 * KiB, 4 * KiB, 64 * MiB);
	assert_false(gf2_wq_should_send(&q, false));
	assert_int_equal(gf2_wq_done(&q, s, 0), 1 * MiB);
	assert_true(gf2_wq_should_send(&q, false));
	s = gf2_wq_send(&q);
	assert_int_equal(gf2_wq_done(&q, s, 0), 1 * MiB);
	assert_true(gf2_wq_idle(&q));
	assert_int_equal(q.reserved, 0);
	assert_int_equal(gf2_wq_queued(&q), 0);
}

/* What another handle's write must wait for: gathered or in flight. */
static void test_holds(void **state)
{
	struct gf2_wq q;
	unsigned slot;

	gf2_wq_init(&q, 1 * MiB, 4);
	assert_false(gf2_wq_holds(&q, 0, 1 * MiB));
	assert_int_equal(put(&q, 0, 64 * KiB, 64 * MiB), GF2_WQ_NEW);
	slot = gf2_wq_send(&q);
	assert_int_equal(put(&q, 64 * KiB, 64 * KiB, 64 * MiB), GF2_WQ_NEW);
	/* in flight */
	assert_true(gf2_wq_holds(&q, 0, 1));
	assert_true(gf2_wq_holds(&q, 64 * KiB - 1, 1));
	/* gathered */
	assert_true(gf2_wq_holds(&q, 100 * KiB, 4 * KiB));
	assert_true(gf2_wq_holds(&q, 0, 1 * MiB));
	/* beside them, or empty */
	assert_false(gf2_wq_holds(&q, 128 * KiB, 64 * KiB));
	assert_false(gf2_wq_holds(&q, 10 * KiB, 0));
	/* landed: no longer held */
	(void)gf2_wq_done(&q, slot, 0);
	assert_false(gf2_wq_holds(&q, 0, 64 * KiB));
	assert_true(gf2_wq_holds(&q, 64 * KiB, 1));
	slot = gf2_wq_send(&q);
	assert_true(gf2_wq_holds(&q, 64 * KiB, 1));
	(void)gf2_wq_done(&q, slot, EIO);
	assert_false(gf2_wq_holds(&q, 0, 1 * MiB));
	(void)state;
}

static void test_overlap_waits_for_flight(void **state)
{
	struct gf2_wq q;
	unsigned s;

	gf2_wq_init(&q, 1 * MiB, 4);
	put(&q, 0, 64 * KiB, 64 * MiB);
	s = gf2_wq_send(&q);
	/* the same bytes again: gathered, but not sent over the first */
	assert_int_equal(put(&q, 0, 64 * KiB, 64 * MiB), GF2_WQ_NEW);
	assert_false(gf2_wq_can_send(&q));
	assert_false(gf2_wq_should_send(&q, true));
	/* and a third, elsewhere, must wait: the gather cannot go */
	assert_int_equal(put(&q, 10 * MiB, 64 * KiB, 64 * MiB), GF2_WQ_WAIT);
	gf2_wq_done(&q, s, 0);
	assert_true(gf2_wq_should_send(&q, false));
	assert_int_equal(put(&q, 10 * MiB, 64 * KiB, 64 * MiB), GF2_WQ_NEW);
	assert_int_equal(q.nfly, 1);
}

static void test_slots_limit(void **state)
{
	struct gf2_wq q;
	unsigned i;

	gf2_wq_init(&q, 64 * KiB, 2);
	for (i = 0; i < 2; i++) {
		put(&q, i * 64 * KiB, 64 * KiB, 64 * MiB);
		assert_true(gf2_wq_should_send(&q, false));
		(void)gf2_wq_send(&q);
	}
	put(&q, 2 * 64 * KiB, 64 * KiB, 64 * MiB);
	assert_false(gf2_wq_can_send(&q));
	/* full gather, no slot: the next write waits */
	assert_int_equal(put(&q, 3 * 64 * KiB, 64 * KiB, 64 * MiB),
			 GF2_WQ_WAIT);
	assert_int_equal(q.reserved, 3 * 64 * KiB);
}

static void test_budget(void **state)
{
	struct gf2_wq q;
	unsigned s;

	gf2_wq_init(&q, 1 * MiB, 4);
	/* nothing queued and no memory: written directly */
	assert_int_equal(put(&q, 0, 64 * KiB, 512 * KiB), GF2_WQ_THROUGH);
	assert_int_equal(put(&q, 0, 64 * KiB, 1 * MiB), GF2_WQ_NEW);
	s = gf2_wq_send(&q);
	/* something queued and no memory: wait, never write around it */
	assert_int_equal(put(&q, 5 * MiB, 64 * KiB, 0), GF2_WQ_WAIT);
	gf2_wq_done(&q, s, 0);
	assert_int_equal(put(&q, 5 * MiB, 64 * KiB, 0), GF2_WQ_THROUGH);
	/* a write larger than merge_max reserves its own length */
	assert_int_equal(put(&q, 0, 4 * MiB, 64 * MiB), GF2_WQ_NEW);
	assert_int_equal(q.reserved, 4 * MiB);
}

static void test_error_latched_once(void **state)
{
	struct gf2_wq q;
	unsigned a, b;

	gf2_wq_init(&q, 64 * KiB, 4);
	put(&q, 0, 64 * KiB, 64 * MiB);
	a = gf2_wq_send(&q);
	put(&q, 64 * KiB, 64 * KiB, 64 * MiB);
	b = gf2_wq_send(&q);
	assert_int_not_equal(a, b);
	gf2_wq_done(&q, b, ENOTCONN);
	gf2_wq_done(&q, a, EIO);
	/* the first error is kept, and reported once */
	assert_int_equal(gf2_wq_take_error(&q), ENOTCONN);
	assert_int_equal(gf2_wq_take_error(&q), 0);
	assert_true(gf2_wq_idle(&q));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequential_writes_gather),
		cmocka_unit_test(test_gather_goes_when_nothing_flies),
		cmocka_unit_test(test_holds),
		cmocka_unit_test(test_overlap_waits_for_flight),
		cmocka_unit_test(test_slots_limit),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_error_latched_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
