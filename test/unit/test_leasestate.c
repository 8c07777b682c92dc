/*
 * Unit tests for the read lease state (source/gf2_leasestate.c): a
 * lease is trusted only while it is held and no recall has come since
 * it was asked for, whichever moment the recall arrives at; a stub of
 * the bricks' grant call delivers the recall where the test says.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <pthread.h>
#include <cmocka.h>

#include "gf2_leasestate.h"

/* The record's mutex, as gf2_lease.c holds it around each call. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* What the upcall thread did with a recall: gave the lease back? */
static int given_back_by_recall;

static void deliver_recall(struct gf2_leasestate *s)
{
	pthread_mutex_lock(&mu);
	if (gf2_ls_recall(s)) {
		given_back_by_recall++;
	}
	pthread_mutex_unlock(&mu);
}

/*
 * The bricks' grant call, made without the mutex (as glfs_lease is).
 * recall_inside: the bricks grant, another client's call conflicts at
 * once, and the recall reaches the upcall thread before the grant's
 * answer reaches the caller.
 */
static bool stub_grant(struct gf2_leasestate *s, bool grant,
		       bool recall_inside)
{
	if (grant && recall_inside) {
		deliver_recall(s);
	}
	return grant;
}

/* The main thread's take, then trust, as gf2_lease.c does them. */
static enum gf2_ls_taken take(struct gf2_leasestate *s, bool grant,
			      bool recall_inside)
{
	enum gf2_ls_taken r;
	bool granted;
	bool ask;

	pthread_mutex_lock(&mu);
	ask = gf2_ls_take_begin(s);
	pthread_mutex_unlock(&mu);
	if (!ask) {
		return GF2_LS_HELD;
	}
	granted = stub_grant(s, grant, recall_inside);
	pthread_mutex_lock(&mu);
	r = gf2_ls_take_end(s, granted);
	pthread_mutex_unlock(&mu);
	return r;
}

static bool trust(struct gf2_leasestate *s)
{
	bool ok;

	pthread_mutex_lock(&mu);
	ok = gf2_ls_trust(s);
	pthread_mutex_unlock(&mu);
	return ok;
}

static int setup(void **state)
{
	(void)state;
	given_back_by_recall = 0;
	return 0;
}

static void test_granted_then_trusted(void **state)
{
	struct gf2_leasestate s = { 0 };

	(void)state;
	assert_false(gf2_ls_trusted(&s));
	assert_int_equal(take(&s, true, false), GF2_LS_HELD);
	assert_false(gf2_ls_trusted(&s));	/* not before the probe */
	assert_true(trust(&s));
	assert_true(gf2_ls_trusted(&s));
	/* held: a second take asks nothing */
	assert_int_equal(take(&s, false, false), GF2_LS_HELD);
	assert_true(gf2_ls_trusted(&s));
}

static void test_refused_never_trusted(void **state)
{
	struct gf2_leasestate s = { 0 };

	(void)state;
	assert_int_equal(take(&s, false, false), GF2_LS_REFUSED);
	assert_false(trust(&s));
	assert_false(gf2_ls_trusted(&s));
}

static void test_recall_inside_grant_is_not_lost(void **state)
{
	struct gf2_leasestate s = { 0 };

	(void)state;
	/*
	 * The recall came before the grant's answer: nothing was held
	 * yet, so the upcall thread gave nothing back; the lease the
	 * bricks granted must be given back by the taker, never trusted.
	 */
	assert_int_equal(take(&s, true, true), GF2_LS_GIVE_BACK);
	assert_int_equal(given_back_by_recall, 0);
	assert_false(trust(&s));
	assert_false(gf2_ls_trusted(&s));
	assert_false(s.held);
	/* and the next grant waits */
	assert_true(gf2_ls_backoff(&s));
	assert_false(gf2_ls_backoff(&s));
	/* a later grant without a recall is trusted again */
	assert_int_equal(take(&s, true, false), GF2_LS_HELD);
	assert_true(trust(&s));
}

static void test_recall_after_trust(void **state)
{
	struct gf2_leasestate s = { 0 };

	(void)state;
	assert_int_equal(take(&s, true, false), GF2_LS_HELD);
	assert_true(trust(&s));
	deliver_recall(&s);
	assert_int_equal(given_back_by_recall, 1);
	assert_false(gf2_ls_trusted(&s));
	assert_false(trust(&s));
	/* a second recall finds nothing to give back */
	deliver_recall(&s);
	assert_int_equal(given_back_by_recall, 1);
	assert_true(gf2_ls_backoff(&s));
	assert_false(gf2_ls_backoff(&s));
}

static void test_recall_between_grant_and_trust(void **state)
{
	struct gf2_leasestate s = { 0 };

	(void)state;
	assert_int_equal(take(&s, true, false), GF2_LS_HELD);
	deliver_recall(&s);		/* during the probe */
	assert_int_equal(given_back_by_recall, 1);
	assert_false(trust(&s));
	assert_false(gf2_ls_trusted(&s));
}

static void test_drop(void **state)
{
	struct gf2_leasestate s = { 0 };

	(void)state;
	assert_false(gf2_ls_drop(&s));
	assert_int_equal(take(&s, true, false), GF2_LS_HELD);
	assert_true(trust(&s));
	assert_true(gf2_ls_drop(&s));
	assert_false(gf2_ls_trusted(&s));
	assert_false(gf2_ls_drop(&s));
	/* given back by the holder, not recalled: no wait */
	assert_false(gf2_ls_backoff(&s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_granted_then_trusted, setup),
		cmocka_unit_test_setup(test_refused_never_trusted, setup),
		cmocka_unit_test_setup(test_recall_inside_grant_is_not_lost,
				       setup),
		cmocka_unit_test_setup(test_recall_after_trust, setup),
		cmocka_unit_test_setup(test_recall_between_grant_and_trust,
				       setup),
		cmocka_unit_test_setup(test_drop, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
