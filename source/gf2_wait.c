/*
 * glusterfs2: the bounded wait for calls handed to other threads (see
 * gf2_wait.h).
 *
 * Layer: core.
 */

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "gf2_wait.h"

struct gf2_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* signalled when a call answers */
	unsigned pending;	/* calls out */
	bool held;		/* the caller has not let go yet */
	void (*release)(void *arg);
	void *arg;
};

struct gf2_wait *gf2_wait_new(void (*release)(void *arg), void *arg)
{
	struct gf2_wait *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;

	if (w == NULL) {
		return NULL;
	}
	if (pthread_condattr_init(&ca) != 0) {
		free(w);
		return NULL;
	}
	/* a bound in elapsed time, not moved by a change of the clock */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&w->cv, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		free(w);
		return NULL;
	}
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&w->mu, NULL);
	w->held = true;
	w->release = release;
	w->arg = arg;
	return w;
}

static void gf2_wait_free(struct gf2_wait *w)
{
	if (w->release != NULL) {
		w->release(w->arg);
	}
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

void gf2_wait_add(struct gf2_wait *w)
{
	pthread_mutex_lock(&w->mu);
	w->pending += 1;
	pthread_mutex_unlock(&w->mu);
}

void gf2_wait_done(struct gf2_wait *w)
{
	bool last;

	pthread_mutex_lock(&w->mu);
	w->pending -= 1;
	last = w->pending == 0 && !w->held;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (last) {
		gf2_wait_free(w);
	}
}

unsigned gf2_wait_pending(struct gf2_wait *w)
{
	unsigned n;

	pthread_mutex_lock(&w->mu);
	n = w->pending;
	pthread_mutex_unlock(&w->mu);
	return n;
}

int gf2_wait_for(struct gf2_wait *w, uint32_t max_ms)
{
	struct timespec until;
	int ret = 0;
	bool out;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += max_ms / 1000;
	until.tv_nsec += (long)(max_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec += 1;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&w->mu);
	while (w->pending > 0 && ret == 0) {
		ret = pthread_cond_timedwait(&w->cv, &w->mu, &until);
	}
	out = w->pending > 0;
	pthread_mutex_unlock(&w->mu);
	return out ? ETIMEDOUT : 0;
}

void gf2_wait_put(struct gf2_wait *w)
{
	bool last;

	if (w == NULL) {
		return;
	}
	pthread_mutex_lock(&w->mu);
	w->held = false;
	last = w->pending == 0;
	pthread_mutex_unlock(&w->mu);
	if (last) {
		gf2_wait_free(w);
	}
}
