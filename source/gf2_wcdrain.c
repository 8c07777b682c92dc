/*
 * glusterfs2: the write cache's drain: gathers sent to Gluster, calls
 * landed, and the drains that wait for them (see include/gf2_wcache.h;
 * the queue is gf2_wcache.c, the registry across processes gf2_wcreg.c).
 *
 * Layer: caches.
 *
 *   gather --gf2_io_submit--> Gluster --thread_fn: the call's gate opens
 *                                   '--done_fn in the main loop: land
 *
 * Landing a call (gf2_wc_land) gives its memory back, latches its error
 * and tells prefetch the change is on the bricks.  It happens in the main
 * loop, either when the bridge delivers the completion (done_fn) or
 * earlier, when a synchronous drain (close, truncate, stat, a break...)
 * waits for the call's gate (gf2_wait.h, at most max_wait_ms) until
 * Gluster's thread has marked the call answered; the later done_fn then
 * only frees the call.  glfs_pwrite_async copies the data before it
 * returns, so a gather's buffer is freed as soon as it is sent; its
 * capacity stays counted in the shared budget until it lands.  After a
 * landing the queue serves its waiters again through the hook it set in
 * the cache (wc->kick): this file calls the registry, never the queue.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "gf2_prefetch.h"
#include "gf2_wcache_int.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

struct gf2_wc *gf2_wcs;
unsigned gf2_wc_busy;	/* caches of this process not idle */

/* The queue serves its waiters again (gf2_wcache.c). */
static void gf2_wc_kick_im(struct tevent_context *ev,
			   struct tevent_immediate *im, void *private_data)
{
	struct gf2_wc *wc = talloc_get_type_abort(private_data, struct gf2_wc);

	wc->kick(wc);
}

static void gf2_wc_end_im(struct tevent_context *ev,
			  struct tevent_immediate *im, void *private_data)
{
	struct gf2_wc *wc = talloc_get_type_abort(private_data, struct gf2_wc);

	if (!gf2_wq_idle(&wc->q)) {
		/* sent again meanwhile: its landing schedules this again */
		return;
	}
	DBG_NOTICE("%s: the writes queued when the handle closed are on the "
		   "bricks\n", wc->key);
	TALLOC_FREE(wc);
}

/*
 * Keep the busy count in step with the queue; the entry goes once
 * nothing is queued or in flight, and a cache whose handle closed goes
 * with it (not inline: this runs inside drains and sends).
 */
void gf2_wc_track(struct gf2_wc *wc)
{
	bool busy = !gf2_wq_idle(&wc->q);

	if (busy != wc->busy) {
		if (busy) {
			gf2_wc_busy += 1;
		} else {
			gf2_wc_busy -= 1;
		}
		wc->busy = busy;
	}
	if (!busy) {
		gf2_wc_unregister(wc);
		if (wc->detached) {
			tevent_schedule_immediate(wc->end_im, wc->ev,
						  gf2_wc_end_im, wc);
		}
	}
}

/* In Gluster's thread, before the completion goes to the main loop. */
static void gf2_wc_thread_fn(struct gf2_io *io)
{
	struct gf2_wc_call *call = io->private_data;

	gf2_wait_done(call->gate);
}

static int gf2_wc_call_destructor(struct gf2_wc_call *call)
{
	gf2_wait_put(call->gate);
	return 0;
}

/*
 * Bytes of wc landed: the writes of the file's other handles that wait
 * for them (gf2_wc_behind_other) may go on.  Not inline: this runs inside
 * drains and sends.
 */
static void gf2_wc_wake_others(struct gf2_wc *wc)
{
	struct gf2_wc *o = NULL;

	for (o = gf2_wcs; o != NULL; o = o->next) {
		if (o != wc && o->waiters != NULL &&
		    strcmp(o->key, wc->key) == 0) {
			tevent_schedule_immediate(o->im, o->ev, gf2_wc_kick_im,
						  o);
		}
	}
}

static void gf2_wc_land_slot(struct gf2_wc *wc, unsigned slot, int err)
{
	const struct gf2_wq_ext *x = &wc->q.fly[slot];
	unsigned ends = wc->slot_ends[slot];
	uint64_t cap;

	if (err != 0) {
		DBG_ERR("queued write of %" PRIu64 " bytes at offset %" PRIu64
			" (%u client writes, already acknowledged) failed: "
			"%s; the next write, flush or close of the handle "
			"reports it\n", x->len, x->off, x->writes,
			strerror(err));
		if (wc->st != NULL) {
			wc->st->c.wc_errors += 1;
		}
	}
	wc->stalled = false;
	cap = gf2_wq_done(&wc->q, slot, err);
	gf2_pf_mem_give(cap);
	wc->calls[slot] = NULL;
	wc->slot_ends[slot] = 0;
	while (ends-- > 0) {
		if (wc->end_fn != NULL) {
			wc->end_fn(wc->end_arg);
		}
	}
	if (wc->st != NULL) {
		gf2_stats_changed(wc->st);
	}
	gf2_wc_track(wc);
	gf2_wc_wake_others(wc);
}

static void gf2_wc_land(struct gf2_wc *wc, struct gf2_wc_call *call,
			struct gf2_io *io)
{
	uint64_t len = wc->q.fly[call->slot].len;
	int err = 0;

	if (io->ret < 0) {
		err = io->err != 0 ? io->err : EIO;
	} else if ((uint64_t)io->ret != len) {
		/* gfapi writes all or fails; a short write is not retried */
		err = ENOSPC;
	}
	call->landed = true;
	gf2_wc_land_slot(wc, call->slot, err);
}

static void gf2_wc_io_done(struct gf2_io *io)
{
	struct gf2_wc_call *call = io->private_data;
	struct gf2_wc *wc = call->wc;

	if (wc != NULL && !call->landed) {
		gf2_wc_land(wc, call, io);
		wc->kick(wc);
	}
	TALLOC_FREE(io);
}

void gf2_wc_send(struct gf2_wc *wc)
{
	struct gf2_wc_call *call = NULL;
	struct gf2_io *io = NULL;
	uint64_t off = wc->q.gather.off;
	uint64_t len = wc->q.gather.len;
	unsigned slot;
	int err = ENOMEM;

	slot = gf2_wq_send(&wc->q);
	wc->slot_ends[slot] = wc->gather_ends;
	wc->gather_ends = 0;

	io = gf2_io_new(wc->ev, wc->fh, GF2_IO_WRITE, gf2_wc_io_done, NULL);
	if (io != NULL) {
		call = talloc_zero(io, struct gf2_wc_call);
	}
	if (call != NULL) {
		call->gate = gf2_wait_new(NULL, NULL);
		if (call->gate == NULL) {
			call = NULL;
		} else {
			talloc_set_destructor(call, gf2_wc_call_destructor);
		}
	}
	if (call != NULL) {
		/*
		 * Sent from a completion or another request's drain too:
		 * as the user whose writes the gather holds.
		 */
		bool switched = gf2_ident_enter(&wc->gather_as);

		call->wc = wc;
		call->slot = slot;
		io->private_data = call;
		io->thread_fn = gf2_wc_thread_fn;
		wc->calls[slot] = call;
		gf2_wait_add(call->gate);
		err = gf2_io_submit(io, wc->gbuf, len, off);
		if (switched) {
			gf2_ident_leave();
		}
		if (err != 0) {
			gf2_wait_done(call->gate);	/* never went out */
		}
	}
	TALLOC_FREE(wc->gbuf);
	ZERO_STRUCT(wc->gather_as);
	if (err != 0) {
		wc->calls[slot] = NULL;
		TALLOC_FREE(io);
		gf2_wc_land_slot(wc, slot, err);
		return;
	}
	if (wc->st != NULL) {
		wc->st->c.wc_sends += 1;
	}
}

/*
 * Block until the call in slot i arrives, then land it; 0.  smbd's main
 * thread waits here, so not beyond wc->max_wait_ms: a brick that answers
 * Gluster's pings but not the write would otherwise hold the process
 * until Gluster's frame timeout (30 minutes by default).  ETIMEDOUT: the
 * call is still Gluster's (its completion lands it later), and until
 * something of the queue lands, later waits give up at once.
 */
static int gf2_wc_wait_slot(struct gf2_wc *wc, unsigned i)
{
	struct gf2_wc_call *call = wc->calls[i];
	struct gf2_io *io = talloc_parent(call);
	bool arrived;

	if (wc->stalled) {
		return ETIMEDOUT;
	}
	arrived = gf2_wait_for(call->gate, wc->max_wait_ms) == 0;
	if (!arrived) {
		wc->stalled = true;
		DBG_ERR("%s: a queued write of %" PRIu64 " bytes at offset %"
			PRIu64 " has had no answer from Gluster for %" PRIu32
			" ms (glusterfs2:write cache max wait); the call "
			"waiting for it fails with ETIMEDOUT\n", wc->key,
			wc->q.fly[i].len, wc->q.fly[i].off,
			wc->max_wait_ms);
		return ETIMEDOUT;
	}
	gf2_wc_land(wc, call, io);
	return 0;
}

/*
 * Everything queued onto the bricks, blocking.  The error stays latched.
 * 0, or ETIMEDOUT (gf2_wc_wait_slot).
 */
static int gf2_wc_flush(struct gf2_wc *wc)
{
	unsigned i;
	int err;

	while (!gf2_wq_idle(&wc->q)) {
		if (gf2_wq_should_send(&wc->q, true)) {
			gf2_wc_send(wc);
			continue;
		}
		for (i = 0; i < GF2_WQ_MAX_INFLIGHT; i++) {
			if (wc->calls[i] != NULL) {
				break;
			}
		}
		if (i == GF2_WQ_MAX_INFLIGHT) {
			/* cannot happen: in flight without a call */
			DBG_ERR("write queue out of step\n");
			break;
		}
		err = gf2_wc_wait_slot(wc, i);
		if (err != 0) {
			return err;
		}
	}
	return 0;
}

int gf2_wc_drain_sync(struct gf2_wc *wc)
{
	int err = gf2_wc_flush(wc);

	if (wc->waiters != NULL) {
		tevent_schedule_immediate(wc->im, wc->ev, gf2_wc_kick_im, wc);
	}
	if (err != 0) {
		return err;
	}
	return gf2_wq_take_error(&wc->q);
}

int gf2_wc_drain_file_sync(const char *volname, uint64_t ino)
{
	struct gf2_wc *wc = NULL;
	char *key = NULL;
	int ret = 0;
	int err;

	if (gf2_wc_busy == 0) {
		return 0;
	}
	key = gf2_wc_key(talloc_tos(), volname, ino);
	if (key == NULL) {
		return ENOMEM;
	}
	for (wc = gf2_wcs; wc != NULL; wc = wc->next) {
		if (!gf2_wq_idle(&wc->q) && strcmp(wc->key, key) == 0) {
			err = gf2_wc_flush(wc);
			if (ret == 0) {
				ret = err;
			}
			if (wc->waiters != NULL) {
				tevent_schedule_immediate(wc->im, wc->ev,
							  gf2_wc_kick_im, wc);
			}
		}
	}
	TALLOC_FREE(key);
	return ret;
}

/* A cache of this process on the file (key) with bytes not yet landed. */
static struct gf2_wc *gf2_wc_busy_on(const char *key)
{
	struct gf2_wc *wc = NULL;

	for (wc = gf2_wcs; wc != NULL; wc = wc->next) {
		if (!gf2_wq_idle(&wc->q) && strcmp(wc->key, key) == 0) {
			return wc;
		}
	}
	return NULL;
}

bool gf2_wc_file_busy(const char *volname, uint64_t ino)
{
	char *key = NULL;
	bool busy;

	if (gf2_wc_busy == 0) {
		return false;
	}
	key = gf2_wc_key(talloc_tos(), volname, ino);
	if (key == NULL) {
		return false;
	}
	busy = gf2_wc_busy_on(key) != NULL;
	TALLOC_FREE(key);
	return busy;
}

int gf2_wc_file_error(const char *volname, uint64_t ino)
{
	struct gf2_wc *wc = NULL;
	char *key = NULL;
	int err = 0;

	key = gf2_wc_key(talloc_tos(), volname, ino);
	if (key == NULL) {
		return 0;
	}
	for (wc = gf2_wcs; wc != NULL && err == 0; wc = wc->next) {
		if (strcmp(wc->key, key) == 0) {
			err = wc->q.err;
		}
	}
	TALLOC_FREE(key);
	return err;
}

int gf2_wc_open_check(const char *volname, uint64_t ino)
{
	int ret = gf2_wc_drain_file_sync(volname, ino);

	if (ret != 0) {
		return ret;
	}
	return gf2_wc_ask_drain(volname, ino);
}
