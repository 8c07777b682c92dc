/*
 * Unit tests for the bounded wait gate (source/gf2_wait.c): the waiter
 * returns when the calls answer or when its bound is up, and the gate
 * outlives the waiter for as long as a call is out.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "gf2_wait.h"

static int released;

static void count_release(void *arg)
{
	int *n = arg;

	*n += 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *answer_later(void *arg)
{
	struct gf2_wait *w = arg;

	usleep(20 * 1000);
	gf2_wait_done(w);
	return NULL;
}

static void test_nothing_out(void **state)
{
	struct gf2_wait *w = gf2_wait_new(count_release, &released);

	released = 0;
	assert_non_null(w);
	assert_int_equal(gf2_wait_pending(w), 0);
	assert_int_equal(gf2_wait_for(w, 0), 0);
	assert_int_equal(gf2_wait_for(w, 1000), 0);
	gf2_wait_put(w);
	/* nothing out: released by the put itself */
	assert_int_equal(released, 1);
}

static void test_bound(void **state)
{
	struct gf2_wait *w = gf2_wait_new(count_release, &released);
	uint64_t t0;

	released = 0;
	gf2_wait_add(w);
	assert_int_equal(gf2_wait_pending(w), 1);
	assert_int_equal(gf2_wait_for(w, 0), ETIMEDOUT);
	t0 = now_ms();
	assert_int_equal(gf2_wait_for(w, 30), ETIMEDOUT);
	/* it waited for its bound */
	assert_true(now_ms() - t0 >= 30);
	gf2_wait_done(w);
	assert_int_equal(gf2_wait_for(w, 0), 0);
	/* still held by the caller */
	assert_int_equal(released, 0);
	gf2_wait_put(w);
	assert_int_equal(released, 1);
}

static void test_answer_wakes(void **state)
{
	struct gf2_wait *w = gf2_wait_new(count_release, &released);
	pthread_t t;

	released = 0;
	gf2_wait_add(w);
	assert_int_equal(pthread_create(&t, NULL, answer_later, w), 0);
	/* a bound far beyond the answer: the answer ends the wait */
	assert_int_equal(gf2_wait_for(w, 60000), 0);
	assert_int_equal(gf2_wait_pending(w), 0);
	pthread_join(t, NULL);
	gf2_wait_put(w);
	assert_int_equal(released, 1);
}

static void test_outlives_waiter(void **state)
{
	struct gf2_wait *w = gf2_wait_new(count_release, &released);
	pthread_t t;

	released = 0;
	gf2_wait_add(w);
	gf2_wait_add(w);
	assert_int_equal(gf2_wait_for(w, 5), ETIMEDOUT);
	/* the waiter gives up and lets go: two calls still out */
	gf2_wait_put(w);
	assert_int_equal(released, 0);
	gf2_wait_done(w);
	assert_int_equal(released, 0);
	/* the last answer, in another thread, releases */
	assert_int_equal(pthread_create(&t, NULL, answer_later, w), 0);
	pthread_join(t, NULL);
	assert_int_equal(released, 1);
}

/*
 * The program is linked with -Wl,--wrap=free (wscript): every free() of
 * this file and of the core goes through here, so a gate that is never
 * freed fails the test without a sanitizer.
 */
void __real_free(void *p);
void __wrap_free(void *p);

static const void *watched;
static int watched_frees;

void __wrap_free(void *p)
{
	if (p != NULL && p == watched) {
		watched_frees += 1;
	}
	__real_free(p);
}

static void test_no_release_fn(void **state)
{
	struct gf2_wait *w = gf2_wait_new(NULL, NULL);

	assert_non_null(w);
	watched = w;
	watched_frees = 0;
	gf2_wait_add(w);
	gf2_wait_put(w);
	/* the call is still out: the gate stays */
	assert_int_equal(watched_frees, 0);
	gf2_wait_done(w);
	/* the last answer after the waiter let go frees it, once */
	assert_int_equal(watched_frees, 1);
	watched = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_out),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_answer_wakes),
		cmocka_unit_test(test_outlives_waiter),
		cmocka_unit_test(test_no_release_fn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
