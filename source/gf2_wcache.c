/*
 * glusterfs2: the write cache's queue: client writes, fsyncs and reads
 * that wait for it, served in order, and the cache's lifetime (see
 * include/gf2_wcache.h).
 *
 * Layer: caches.
 *
 * The rules (what is gathered, when a gather goes, the latched error) are
 * gf2_wqueue.c's; this file holds the waiters and the gather's buffer.
 * Sending and landing the gathers is the drain's (gf2_wcdrain.c), the
 * entries that make other processes' opens wait the registry's
 * (gf2_wcreg.c); both are below this file.
 *
 *   client WRITE --> gf2_wc_write_send --> waiters (FIFO) --> gf2_wc_kick
 *        |                                                       |
 *        '<-- acknowledged once copied into the gather <---------'
 *   gather --gf2_wc_send (gf2_wcdrain.c)--> Gluster; a landing kicks again
 *
 * Every call is made as the user of the requests it serves, whatever
 * smbd's main thread holds when it goes (a completion, another user's
 * request or open that drains): a waiter keeps its request's identity,
 * and a gather the identity of its writes, which it holds only of one
 * user (a write of another waits for the gather to go).
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "lib/util/tevent_unix.h"
#include "lib/util/dlinklist.h"
#include "gf2_prefetch.h"
#include "gf2_hold.h"
#include "gf2_wcache_int.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

static uint32_t gf2_wc_next_id;

/* -- requests ------------------------------------------------------- */

enum gf2_wc_wkind {
	GF2_WC_W_WRITE,
	GF2_WC_W_DRAIN,
	GF2_WC_W_SETTLE,	/* a read waits: nothing of the queue kept */
};

struct gf2_wc_waiter {
	struct gf2_wc_waiter *prev, *next;
	struct tevent_req *req;
	struct gf2_wc *wc;
	enum gf2_wc_wkind kind;
	bool may_cache;
	/*
	 * A write owes one call of end_fn (the change bracket its caller
	 * began) until it hands it on: to the gather (gather_ends) or to
	 * the direct write.  Failed, cancelled or freed before: paid here.
	 */
	bool owes_end;
	struct gf2_ident as;	/* the request's user: every call made as it */
	void (*end_fn)(void *arg);
	void *end_arg;
	const uint8_t *data;
	size_t n;
	off_t offset;
	ssize_t ret;
	struct vfs_aio_state aio_state;
};

static void gf2_wc_waiter_end(struct gf2_wc_waiter *w)
{
	if (!w->owes_end) {
		return;
	}
	w->owes_end = false;
	if (w->end_fn != NULL) {
		w->end_fn(w->end_arg);
	}
}

static int gf2_wc_waiter_destructor(struct gf2_wc_waiter *w)
{
	gf2_wc_waiter_end(w);
	if (w->wc != NULL) {
		DLIST_REMOVE(w->wc->waiters, w);
		w->wc = NULL;
	}
	return 0;
}

static void gf2_wc_unpark(struct gf2_wc_waiter *w)
{
	DLIST_REMOVE(w->wc->waiters, w);
	w->wc = NULL;
}

static void gf2_wc_fail(struct gf2_wc_waiter *w, int err)
{
	gf2_wc_unpark(w);
	gf2_wc_waiter_end(w);
	w->aio_state.error = err;
	w->ret = -1;
	tevent_req_error(w->req, err);
}

static void gf2_wc_direct_done(struct tevent_req *subreq);

/*
 * Written directly (no lease, a drain asked, or no memory with nothing
 * queued): the queue is empty, so nothing acknowledged can pass it.
 */
static void gf2_wc_direct(struct gf2_wc_waiter *w)
{
	struct gf2_wc *wc = w->wc;
	struct tevent_req *subreq = NULL;
	bool switched;

	gf2_wc_unpark(w);
	/* served from a completion, too: the request's user, not smbd's */
	switched = gf2_ident_enter(&w->as);
	subreq = gf2_pwrite_send(w, wc->ev, wc->fh, w->data, w->n,
				 w->offset, w->end_fn, w->end_arg);
	if (switched) {
		gf2_ident_leave();
	}
	if (tevent_req_nomem(subreq, w->req)) {
		gf2_wc_waiter_end(w);
		return;
	}
	/* the direct write calls end_fn */
	w->owes_end = false;
	tevent_req_set_callback(subreq, gf2_wc_direct_done, w->req);
}

static void gf2_wc_direct_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(subreq,
							  struct tevent_req);
	struct gf2_wc_waiter *w = tevent_req_data(req, struct gf2_wc_waiter);

	w->ret = gf2_pwrite_recv(subreq, &w->aio_state);
	TALLOC_FREE(subreq);
	if (w->ret < 0) {
		tevent_req_error(req, w->aio_state.error);
		return;
	}
	tevent_req_done(req);
}

static void gf2_wc_fsync_done(struct tevent_req *subreq);

/* The queue is empty: Gluster's fsync now. */
static void gf2_wc_fsync(struct gf2_wc_waiter *w)
{
	struct gf2_wc *wc = w->wc;
	struct tevent_req *subreq = NULL;
	bool switched;

	gf2_wc_unpark(w);
	switched = gf2_ident_enter(&w->as);
	subreq = gf2_fsync_send(w, wc->ev, wc->fh);
	if (switched) {
		gf2_ident_leave();
	}
	if (tevent_req_nomem(subreq, w->req)) {
		return;
	}
	tevent_req_set_callback(subreq, gf2_wc_fsync_done, w->req);
}

static void gf2_wc_fsync_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(subreq,
							  struct tevent_req);
	struct gf2_wc_waiter *w = tevent_req_data(req, struct gf2_wc_waiter);
	int ret = gf2_fsync_recv(subreq, &w->aio_state);

	TALLOC_FREE(subreq);
	if (ret != 0) {
		tevent_req_error(req, w->aio_state.error);
		return;
	}
	tevent_req_done(req);
}

/* Copy a write into the queue.  false: it must wait. */
static bool gf2_wc_queue(struct gf2_wc_waiter *w)
{
	struct gf2_wc *wc = w->wc;
	uint64_t cap = 0;
	enum gf2_wq_place p;

	if (wc->q.gather.used && !gf2_ident_equal(&wc->gather_as, &w->as)) {
		/* a gather goes to Gluster as one user */
		if (!gf2_wq_can_send(&wc->q)) {
			return false;
		}
		gf2_wc_send(wc);
	}
	p = gf2_wq_place(&wc->q, w->offset, w->n, gf2_pf_mem_avail(), &cap);
	switch (p) {
	case GF2_WQ_WAIT:
		if (gf2_wq_can_send(&wc->q)) {
			gf2_wc_send(wc);
		}
		return false;
	case GF2_WQ_THROUGH:
		gf2_wc_direct(w);
		return true;
	case GF2_WQ_NEW:
		if (!gf2_wc_register(wc)) {
			/* no other process could see these bytes queued */
			if (gf2_wq_idle(&wc->q)) {
				gf2_wc_direct(w);
				return true;
			}
			return false;
		}
		if (wc->q.gather.used) {
			gf2_wc_send(wc);
		}
		wc->gbuf = talloc_size(wc, cap);
		if (wc->gbuf != NULL &&
		    !gf2_ident_copy(wc->gbuf, &wc->gather_as, &w->as)) {
			TALLOC_FREE(wc->gbuf);
		}
		if (wc->gbuf == NULL) {
			if (gf2_wq_idle(&wc->q)) {
				gf2_wc_unregister(wc);
				gf2_wc_direct(w);
				return true;
			}
			return false;
		}
		gf2_pf_mem_take(cap);
		gf2_wq_start(&wc->q, w->offset, w->n, cap);
		memcpy(wc->gbuf, w->data, w->n);
		break;
	case GF2_WQ_APPEND:
		memcpy(wc->gbuf + wc->q.gather.len, w->data, w->n);
		gf2_wq_append(&wc->q, w->n);
		break;
	}
	wc->gather_ends += 1;
	w->owes_end = false;
	gf2_wc_track(wc);
	if (wc->st != NULL) {
		wc->st->c.wc_writes += 1;
		wc->st->c.writes += 1;
		wc->st->c.write_bytes += w->n;
	}
	gf2_wc_unpark(w);
	w->ret = w->n;
	tevent_req_done(w->req);
	return true;
}

/*
 * Another handle of the file in this process holds acknowledged bytes
 * that [off, off + len) overlaps: they reach Gluster first, and the write
 * is acknowledged only after them (the order of acknowledgement is the
 * order on the bricks, whatever the handle).  Sends that handle's gather
 * if it may go.  true: the write waits; gf2_wc_wake_others kicks again.
 */
static bool gf2_wc_behind_other(struct gf2_wc *wc, uint64_t off,
				uint64_t len)
{
	struct gf2_wc *o = NULL;
	bool wait = false;

	for (o = gf2_wcs; o != NULL; o = o->next) {
		if (o == wc || strcmp(o->key, wc->key) != 0 ||
		    !gf2_wq_holds(&o->q, off, len)) {
			continue;
		}
		wait = true;
		if (gf2_wq_can_send(&o->q)) {
			gf2_wc_send(o);
		}
	}
	return wait;
}

/* Serve the waiters in order, as far as the queue allows. */
static void gf2_wc_kick(struct gf2_wc *wc)
{
	struct gf2_wc_waiter *w = NULL;
	int err;

	while ((w = wc->waiters) != NULL) {
		if (w->kind == GF2_WC_W_WRITE && w->may_cache) {
			err = gf2_wq_take_error(&wc->q);
			if (err != 0) {
				gf2_wc_fail(w, err);
				continue;
			}
			if (gf2_wc_drain_asked(wc)) {
				w->may_cache = false;
				continue;
			}
			if (gf2_wc_behind_other(wc, w->offset, w->n)) {
				break;
			}
			if (!gf2_wc_queue(w)) {
				break;
			}
			continue;
		}
		if (!gf2_wq_idle(&wc->q)) {
			if (gf2_wq_should_send(&wc->q, true)) {
				gf2_wc_send(wc);
			}
			break;
		}
		if (w->kind == GF2_WC_W_SETTLE) {
			/* the error stays for the next write, FLUSH, close */
			gf2_wc_unpark(w);
			tevent_req_done(w->req);
			continue;
		}
		err = gf2_wq_take_error(&wc->q);
		if (err != 0) {
			gf2_wc_fail(w, err);
			continue;
		}
		if (w->kind == GF2_WC_W_DRAIN) {
			gf2_wc_fsync(w);
			continue;
		}
		if (gf2_wc_behind_other(wc, w->offset, w->n)) {
			break;
		}
		gf2_wc_direct(w);
	}
	if (gf2_wq_should_send(&wc->q, false)) {
		gf2_wc_send(wc);
	}
}

static struct tevent_req *gf2_wc_park(TALLOC_CTX *mem_ctx,
				      struct tevent_context *ev,
				      struct gf2_wc *wc,
				      enum gf2_wc_wkind kind)
{
	struct tevent_req *req = NULL;
	struct gf2_wc_waiter *w = NULL;

	req = tevent_req_create(mem_ctx, &w, struct gf2_wc_waiter);
	if (req == NULL) {
		return NULL;
	}
	/* completions may come from inside a drain: never call back inline */
	tevent_req_defer_callback(req, ev);
	if (!gf2_ident_capture(w, &w->as)) {
		TALLOC_FREE(req);
		return NULL;
	}
	w->req = req;
	w->wc = wc;
	w->kind = kind;
	talloc_set_destructor(w, gf2_wc_waiter_destructor);
	DLIST_ADD_END(wc->waiters, w);
	return req;
}

struct tevent_req *gf2_wc_write_send(TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct gf2_wc *wc, bool may_cache,
				     const void *data, size_t n,
				     off_t offset)
{
	struct tevent_req *req = NULL;
	struct gf2_wc_waiter *w = NULL;

	req = gf2_wc_park(mem_ctx, ev, wc, GF2_WC_W_WRITE);
	if (req == NULL) {
		return NULL;
	}
	w = tevent_req_data(req, struct gf2_wc_waiter);
	w->may_cache = may_cache && n > 0;
	w->owes_end = true;
	w->end_fn = wc->end_fn;
	w->end_arg = wc->end_arg;
	w->data = data;
	w->n = n;
	w->offset = offset;
	gf2_wc_kick(wc);
	return req;
}

ssize_t gf2_wc_write_recv(struct tevent_req *req,
			  struct vfs_aio_state *aio_state)
{
	struct gf2_wc_waiter *w = tevent_req_data(req, struct gf2_wc_waiter);
	ssize_t ret = -1;
	int err;

	if (tevent_req_is_unix_error(req, &err)) {
		aio_state->error = err;
	} else {
		*aio_state = w->aio_state;
		ret = w->ret;
	}
	tevent_req_received(req);
	return ret;
}

struct tevent_req *gf2_wc_fsync_send(TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct gf2_wc *wc)
{
	struct tevent_req *req = gf2_wc_park(mem_ctx, ev, wc,
					     GF2_WC_W_DRAIN);

	if (req != NULL) {
		gf2_wc_kick(wc);
	}
	return req;
}

int gf2_wc_fsync_recv(struct tevent_req *req,
		      struct vfs_aio_state *aio_state)
{
	struct gf2_wc_waiter *w = tevent_req_data(req, struct gf2_wc_waiter);
	int err;

	if (tevent_req_is_unix_error(req, &err)) {
		aio_state->error = err;
		tevent_req_received(req);
		return -1;
	}
	*aio_state = w->aio_state;
	tevent_req_received(req);
	return 0;
}

/*
 * A read waits, without blocking the main loop, for every cache of the
 * file in this process to land what it acknowledged: a settle waiter on
 * each cache busy when the read came, in turn, once.  Queued after the
 * writes acknowledged before the read, it holds back those that come
 * after it until it is served; those it does not wait for, so that a
 * steady writer on another handle cannot hold the read back for ever.
 */
struct gf2_wc_settle_state {
	struct tevent_context *ev;
	char *key;
	uint32_t *ids;		/* the caches busy when the read came */
	unsigned nids;
	unsigned next;		/* ids[next] is the next to wait for */
};

static void gf2_wc_settle_next(struct tevent_req *req);

static void gf2_wc_settle_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(subreq,
							  struct tevent_req);

	/* served, or the cache went with its handle (drained at close) */
	TALLOC_FREE(subreq);
	gf2_wc_settle_next(req);
}

static void gf2_wc_settle_next(struct tevent_req *req)
{
	struct gf2_wc_settle_state *state = tevent_req_data(
		req, struct gf2_wc_settle_state);
	struct gf2_wc *wc = NULL;
	struct tevent_req *subreq = NULL;

	while (wc == NULL && state->next < state->nids) {
		uint32_t id = state->ids[state->next++];

		for (wc = gf2_wcs; wc != NULL; wc = wc->next) {
			if (wc->id == id && !gf2_wq_idle(&wc->q) &&
			    strcmp(wc->key, state->key) == 0) {
				break;
			}
		}
	}
	if (wc == NULL) {
		tevent_req_done(req);
		return;
	}
	subreq = gf2_wc_park(state, state->ev, wc, GF2_WC_W_SETTLE);
	if (tevent_req_nomem(subreq, req)) {
		return;
	}
	tevent_req_set_callback(subreq, gf2_wc_settle_done, req);
	gf2_wc_kick(wc);
}

struct tevent_req *gf2_wc_settle_send(TALLOC_CTX *mem_ctx,
				      struct tevent_context *ev,
				      const char *volname, uint64_t ino)
{
	struct tevent_req *req = NULL;
	struct gf2_wc_settle_state *state = NULL;
	struct gf2_wc *wc = NULL;
	unsigned n = 0;

	req = tevent_req_create(mem_ctx, &state, struct gf2_wc_settle_state);
	if (req == NULL) {
		return NULL;
	}
	state->ev = ev;
	state->key = gf2_wc_key(state, volname, ino);
	if (tevent_req_nomem(state->key, req)) {
		return tevent_req_post(req, ev);
	}
	for (wc = gf2_wcs; wc != NULL; wc = wc->next) {
		if (!gf2_wq_idle(&wc->q) && strcmp(wc->key, state->key) == 0) {
			n += 1;
		}
	}
	state->ids = talloc_array(state, uint32_t, MAX(n, 1));
	if (tevent_req_nomem(state->ids, req)) {
		return tevent_req_post(req, ev);
	}
	for (wc = gf2_wcs; wc != NULL && state->nids < n; wc = wc->next) {
		if (!gf2_wq_idle(&wc->q) && strcmp(wc->key, state->key) == 0) {
			state->ids[state->nids++] = wc->id;
		}
	}
	gf2_wc_settle_next(req);
	if (!tevent_req_is_in_progress(req)) {
		return tevent_req_post(req, ev);
	}
	return req;
}

int gf2_wc_settle_recv(struct tevent_req *req)
{
	int err;

	if (tevent_req_is_unix_error(req, &err)) {
		tevent_req_received(req);
		return err;
	}
	tevent_req_received(req);
	return 0;
}

/* -- lifetime ------------------------------------------------------- */

static int gf2_wc_destructor(struct gf2_wc *wc)
{
	struct gf2_wc_waiter *w = NULL;
	unsigned i;

	while ((w = wc->waiters) != NULL) {
		gf2_wc_fail(w, EBADF);
	}
	for (i = 0; i < GF2_WQ_MAX_INFLIGHT; i++) {
		if (wc->calls[i] != NULL) {
			/* its completion frees it */
			wc->calls[i]->wc = NULL;
		}
	}
	if (wc->q.reserved > 0) {
		gf2_pf_mem_give(wc->q.reserved);
	}
	if (wc->busy) {
		gf2_wc_busy -= 1;
	}
	gf2_wc_unregister(wc);
	DLIST_REMOVE(gf2_wcs, wc);
	if (wc->detached) {
		struct gf2_volume *vol = wc->fh->vol;

		(void)gf2_fh_close(wc->fh);
		gf2_volume_io_end(vol);
	}
	return 0;
}

int gf2_wc_close(struct gf2_wc *wc, void *end_owner)
{
	int err = gf2_wc_drain_sync(wc);

	if (gf2_wq_idle(&wc->q)) {
		TALLOC_FREE(wc);
		return err;
	}
	/*
	 * The wait gave up with acknowledged bytes still queued or out:
	 * they are not thrown away.  The cache outlives its handle, keeps
	 * its registry entry (other processes' opens wait for it), the
	 * glfs_fd and the volume, and sends what is left as its calls land.
	 * Its memory stays counted in the process's budget until then.
	 */
	talloc_steal(NULL, wc);
	if (end_owner != NULL) {
		talloc_steal(wc, end_owner);
	}
	gf2_hold_get(&wc->fh->hold);
	gf2_volume_io_begin(wc->fh->vol);
	wc->detached = true;
	DBG_ERR("%s: closed with %" PRIu64 " acknowledged bytes not yet on "
		"the bricks; they are sent once Gluster answers (the close "
		"fails with %s)\n", wc->key, gf2_wq_queued(&wc->q),
		strerror(err != 0 ? err : ETIMEDOUT));
	return err != 0 ? err : ETIMEDOUT;
}

struct gf2_wc *gf2_wc_new(TALLOC_CTX *mem_ctx, struct tevent_context *ev,
			  struct gf2_fh *fh, struct gf2_stats *st,
			  const char *volname, uint64_t ino,
			  uint32_t max_wait_ms,
			  void (*end_fn)(void *arg), void *end_arg)
{
	struct gf2_wc *wc = talloc_zero(mem_ctx, struct gf2_wc);

	if (wc == NULL) {
		return NULL;
	}
	wc->key = gf2_wc_key(wc, volname, ino);
	wc->im = tevent_create_immediate(wc);
	wc->end_im = tevent_create_immediate(wc);
	if (wc->key == NULL || wc->im == NULL || wc->end_im == NULL ||
	    gf2_wc_db() == NULL) {
		TALLOC_FREE(wc);
		return NULL;
	}
	wc->ev = ev;
	wc->fh = fh;
	wc->st = st;
	wc->id = ++gf2_wc_next_id;
	wc->max_wait_ms = max_wait_ms;
	wc->end_fn = end_fn;
	wc->end_arg = end_arg;
	wc->kick = gf2_wc_kick;
	gf2_wq_init(&wc->q, GF2_WC_MERGE, GF2_WC_INFLIGHT);
	DLIST_ADD(gf2_wcs, wc);
	talloc_set_destructor(wc, gf2_wc_destructor);
	return wc;
}
