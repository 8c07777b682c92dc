/*
 * glusterfs2: the asynchronous bridge between libgfapi and smbd's tevent
 * loop.
 *
 * Layer: bridge.
 *
 * smbd's main thread submits reads, writes and fsyncs with gfapi's own
 * asynchronous calls (no thread pool of ours).  Gluster completes them in
 * one of its event threads; that thread only stores the result in the
 * gf2_io and schedules a tevent immediate through a threaded context, so
 * that everything else - copying data, continuing a short transfer,
 * finishing the tevent request - happens in smbd's main loop.
 *
 * The SMB user's identity travels with every call: gfapi builds the call
 * frame in the submitting thread from its effective uid, gid and groups.
 * smbd has switched them to the user's when a request comes in, but not
 * when a completion runs in the main loop (they are then whatever the
 * last request, of any user or share, left), so each read, write and
 * fsync request captures the identity when it starts and every call it
 * makes later is submitted under that identity (gf2_ident_enter).
 *
 * Ownership (who frees what):
 *
 *   tevent_req --owns--> state --points to--> gf2_io (talloc NULL ctx)
 *                                              |-- im  (one per call)
 *                                              '-- buf (read bounce buffer)
 *
 *   - While no call is in flight the state owns the gf2_io: the state's
 *     destructor frees it.
 *   - While Gluster owns a call, Gluster may write into io->buf and will
 *     schedule io->im, so neither may go away.  If smbd frees the request
 *     then (cancelled, client gone), the state destructor only clears
 *     io->req: the gf2_io is orphaned, and the completion handler frees it
 *     when it runs.  Nothing of smbd's is touched by a late completion.
 *   - Reads land in io->buf and are copied to the caller's buffer in the
 *     main loop, because the caller's buffer belongs to the SMB request
 *     and can be freed before Gluster answers.  Writes need no bounce
 *     buffer: glfs_pwrite_async copies the data before it returns.
 *   - Each call in flight holds a count on its gf2_fh and its gf2_volume:
 *     a close (gf2_fh_close) or a last disconnect (gf2_volume_put) that
 *     comes while Gluster owns a call is deferred to that call's
 *     completion, because gfapi drops the completion of a call whose
 *     glfs_fd was closed, and glfs_fini frees what callbacks use.
 *   - The threaded context outlives the tevent context it was made for
 *     (see gf2_get_tctx): a completion that arrives after smbd freed its
 *     event context on exit is dropped by tevent, and volumes still
 *     waiting for completions are released then.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbprofile.h"
#include "gf2_compat.h"
#include "lib/util/tevent_unix.h"
#include "lib/util/sys_rw.h"
#include "lib/util/dlinklist.h"
#include "gf2_bridge.h"

#include <pthread.h>

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/*
 * One threaded context per tevent context, made in the main thread.
 *
 * It must outlive the tevent context: smbd frees its event context on the
 * way out (exit_server) while Gluster may still answer calls that were in
 * flight when the client went away, and gf2_io_cbk then schedules on the
 * threaded context from Gluster's thread.  So the gf2_tctx and its
 * threaded context hang off the NULL context and are never freed (one per
 * event context, that is one per process): when the event context goes,
 * tevent detaches the threaded context, and a late completion scheduled
 * on it is dropped harmlessly.  A sentinel allocated under the event
 * context unlinks the entry then, and releases volumes whose teardown
 * was waiting for completions that can no longer arrive.
 */
struct gf2_tctx {
	struct gf2_tctx *prev, *next;
	struct tevent_context *ev;
	struct tevent_threaded_context *tctx;
};

struct gf2_tctx_sentinel {
	struct gf2_tctx *t;
};

static struct gf2_tctx *gf2_tctxs;

static int gf2_tctx_sentinel_destructor(struct gf2_tctx_sentinel *s)
{
	DLIST_REMOVE(gf2_tctxs, s->t);
	s->t->ev = NULL;
	/* No main loop any more: nothing will complete into it. */
	gf2_volume_loop_gone();
	return 0;
}

static struct tevent_threaded_context *gf2_get_tctx(
	struct tevent_context *ev)
{
	struct gf2_tctx *t = NULL;
	struct gf2_tctx_sentinel *s = NULL;

	for (t = gf2_tctxs; t != NULL; t = t->next) {
		if (t->ev == ev) {
			return t->tctx;
		}
	}
	t = talloc_zero(NULL, struct gf2_tctx);
	if (t == NULL) {
		return NULL;
	}
	s = talloc_zero(ev, struct gf2_tctx_sentinel);
	if (s == NULL) {
		TALLOC_FREE(t);
		return NULL;
	}
	t->ev = ev;
	t->tctx = tevent_threaded_context_create(t, ev);
	if (t->tctx == NULL) {
		DBG_ERR("tevent_threaded_context_create failed\n");
		TALLOC_FREE(s);
		TALLOC_FREE(t);
		return NULL;
	}
	s->t = t;
	DLIST_ADD(gf2_tctxs, t);
	talloc_set_destructor(s, gf2_tctx_sentinel_destructor);
	return t->tctx;
}

static void gf2_io_done(struct tevent_context *ev,
			struct tevent_immediate *im,
			void *private_data);

/*
 * From the thread's credentials, which smbd switches with its security
 * context and gfapi builds each call's frame from: smbd's token may
 * already be freed while its context is still set (a close that tears
 * down a session).  The groups live in one buffer of the process, grown
 * as needed: main thread only.
 */
static gid_t *gf2_now_groups;
static size_t gf2_now_ngroups_max;

bool gf2_ident_now(struct gf2_ident *id)
{
	int n;

	*id = (struct gf2_ident) {
		.uid = geteuid(),
		.gid = getegid(),
	};
	for (;;) {
		n = -1;
		if (gf2_now_ngroups_max > 0) {
			/* 0 would ask for the count only */
			n = getgroups(gf2_now_ngroups_max, gf2_now_groups);
		}
		if (n >= 0) {
			break;
		}
		if (gf2_now_ngroups_max > 0 && errno != EINVAL) {
			return false;
		}
		n = getgroups(0, NULL);
		if (n <= 0) {
			if (n < 0) {
				return false;
			}
			break;		/* no supplementary groups */
		}
		gf2_now_groups = talloc_realloc(NULL, gf2_now_groups, gid_t,
						n);
		if (gf2_now_groups == NULL) {
			gf2_now_ngroups_max = 0;
			return false;
		}
		gf2_now_ngroups_max = n;
	}
	id->ngroups = n;
	id->groups = n > 0 ? gf2_now_groups : NULL;
	return true;
}

bool gf2_ident_capture(TALLOC_CTX *mem_ctx, struct gf2_ident *id)
{
	struct gf2_ident now;

	if (!gf2_ident_now(&now)) {
		*id = (struct gf2_ident) { .uid = geteuid(), .gid = getegid() };
		return false;
	}
	return gf2_ident_copy(mem_ctx, id, &now);
}

bool gf2_ident_copy(TALLOC_CTX *mem_ctx, struct gf2_ident *dst,
		    const struct gf2_ident *src)
{
	*dst = *src;
	dst->groups = NULL;
	if (src->ngroups == 0) {
		return true;
	}
	dst->groups = talloc_memdup(mem_ctx, src->groups,
				    src->ngroups * sizeof(gid_t));
	if (dst->groups == NULL) {
		dst->ngroups = 0;
		return false;
	}
	return true;
}

bool gf2_ident_equal(const struct gf2_ident *a, const struct gf2_ident *b)
{
	return a->uid == b->uid && a->gid == b->gid &&
	       a->ngroups == b->ngroups &&
	       (a->ngroups == 0 ||
		memcmp(a->groups, b->groups,
		       a->ngroups * sizeof(gid_t)) == 0);
}

bool gf2_ident_enter(const struct gf2_ident *id)
{
	struct gf2_ident now;

	if (gf2_ident_now(&now) && gf2_ident_equal(&now, id)) {
		return false;
	}
	DBG_DEBUG("call of uid %u made while smbd holds uid %u\n",
		  (unsigned)id->uid, (unsigned)now.uid);
	push_sec_ctx();
	/* No NT token: only Gluster calls run until gf2_ident_leave. */
	set_sec_ctx(id->uid, id->gid, id->ngroups, id->groups, NULL);
	return true;
}

void gf2_ident_leave(void)
{
	pop_sec_ctx();
}

/*
 * Workers: threads of the bridge for the synchronous Gluster calls that
 * gfapi has no asynchronous form of.  gfapi takes a call's identity from
 * the calling thread's fs ids, which a new thread sets first.
 */
struct gf2_worker {
	struct gf2_wait *gate;
	const struct gf2_ident *as;
	void (*fn)(void *arg);
	void *arg;
};

static void *gf2_worker_main(void *p)
{
	struct gf2_worker wk = *(struct gf2_worker *)p;

	free(p);
	if (glfs_setfsuid(wk.as->uid) == 0 && glfs_setfsgid(wk.as->gid) == 0 &&
	    glfs_setfsgroups(wk.as->ngroups, wk.as->groups) == 0) {
		wk.fn(wk.arg);
	}
	/* otherwise nothing done: the caller asks itself */
	gf2_wait_done(wk.gate);
	return NULL;
}

size_t gf2_workers_start(struct gf2_wait *gate, const struct gf2_ident *as,
			 size_t nthreads, void (*fn)(void *arg), void *arg)
{
	pthread_attr_t attr;
	size_t started = 0;

	if (pthread_attr_init(&attr) != 0) {
		return 0;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	while (started < nthreads) {
		struct gf2_worker *wk = malloc(sizeof(*wk));
		pthread_t tid;

		if (wk == NULL) {
			break;
		}
		*wk = (struct gf2_worker) {
			.gate = gate, .as = as, .fn = fn, .arg = arg,
		};
		gf2_wait_add(gate);
		if (pthread_create(&tid, &attr, gf2_worker_main, wk) != 0) {
			gf2_wait_done(gate);
			free(wk);
			break;
		}
		started += 1;
	}
	pthread_attr_destroy(&attr);
	return started;
}

/*
 * Called in a Gluster event thread: record, hand over, touch nothing
 * else.
 */
static void gf2_io_cbk(glfs_fd_t *fd, ssize_t ret,
		       struct glfs_stat *prestat,
		       struct glfs_stat *poststat,
		       void *data)
{
	struct gf2_io *io = data;

	io->ret = ret;
	io->err = ret < 0 ? errno : 0;
	if (ret < 0 && io->err == 0) {
		io->err = EIO;
	}
	if (io->thread_fn != NULL) {
		io->thread_fn(io);
	}
	tevent_threaded_schedule_immediate(io->tctx, io->im, gf2_io_done, io);
}

struct gf2_io *gf2_io_new(struct tevent_context *ev,
			  struct gf2_fh *fh,
			  enum gf2_io_op op,
			  void (*done_fn)(struct gf2_io *io),
			  void *private_data)
{
	struct gf2_io *io = NULL;

	io = talloc_zero(NULL, struct gf2_io);
	if (io == NULL) {
		return NULL;
	}
	io->tctx = gf2_get_tctx(ev);
	if (io->tctx == NULL) {
		TALLOC_FREE(io);
		return NULL;
	}
	io->fh = fh;
	io->op = op;
	io->done_fn = done_fn;
	io->private_data = private_data;
	return io;
}

/*
 * Submit one gfapi call for io.  Returns 0, or an errno if gfapi refused
 * the call (then nothing is in flight).
 */
int gf2_io_submit(struct gf2_io *io, const void *wdata, size_t len,
		  off_t offset)
{
	struct gf2_fh *fh = io->fh;
	int ret;

	/*
	 * A fresh immediate for every call: a continuation is submitted
	 * from inside the previous completion's handler, while tevent still
	 * marks that immediate busy, and Gluster may answer before the
	 * handler returns.  The old one stays a child of io until io goes.
	 */
	io->im = tevent_create_immediate(io);
	if (io->im == NULL) {
		return ENOMEM;
	}

	gf2_hold_io_begin(&fh->hold);
	gf2_volume_io_begin(fh->vol);
	io->in_flight = true;
	clock_gettime_mono(&io->t0);
	if (fh->st != NULL) {
		fh->st->inflight += 1;
	}

	switch (io->op) {
	case GF2_IO_READ:
		ret = glfs_pread_async(fh->fd, io->buf, len, offset, 0,
				       gf2_io_cbk, io);
		break;
	case GF2_IO_WRITE:
		ret = glfs_pwrite_async(fh->fd, wdata, (int)len, offset, 0,
					gf2_io_cbk, io);
		break;
	case GF2_IO_FSYNC:
		ret = glfs_fsync_async(fh->fd, gf2_io_cbk, io);
		break;
	default:
		ret = -1;
		errno = EINVAL;
		break;
	}
	if (ret < 0) {
		int err = errno != 0 ? errno : EIO;

		io->in_flight = false;
		/* its caller holds the handle: never the last */
		(void)gf2_hold_io_end(&fh->hold);
		if (fh->st != NULL) {
			fh->st->inflight -= 1;
		}
		gf2_volume_io_end(fh->vol);
		return err;
	}
	return 0;
}

/*
 * Account for a finished call.  May close the file and release the
 * volume if their owners left while Gluster held the call.
 */
static int gf2_fh_release(struct gf2_fh *fh);

static void gf2_io_release(struct gf2_io *io)
{
	struct gf2_fh *fh = io->fh;
	struct gf2_volume *vol = fh->vol;

	io->in_flight = false;
	if (gf2_hold_io_end(&fh->hold)) {
		gf2_fh_release(fh);
	}
	gf2_volume_io_end(vol);
}

/* state for all three request kinds */
struct gf2_rw_state {
	struct gf2_io *io;
	uint8_t *rdata;			/* caller's read buffer */
	const uint8_t *wdata;		/* caller's write data */
	size_t n;
	off_t offset;
	size_t done;
	struct timespec start;
	struct vfs_aio_state aio_state;
	ssize_t ret;
	void (*end_fn)(void *arg);	/* see gf2_pwrite_send */
	void *end_arg;
	struct gf2_ident as;		/* every call is made as this */
	struct gf2_stats *st;
	enum gf2_io_op op;
	GF2_PROFILE_ASYNC_STATE(profile_bytes);
};

/* Call a request's end hook, once. */
static void gf2_rw_end(void (**pfn)(void *arg), void *arg)
{
	void (*fn)(void *arg) = *pfn;

	if (fn != NULL) {
		*pfn = NULL;
		fn(arg);
	}
}

static int gf2_rw_state_destructor(struct gf2_rw_state *state)
{
	struct gf2_io *io = state->io;

	if (io == NULL) {
		gf2_rw_end(&state->end_fn, state->end_arg);
		return 0;
	}
	state->io = NULL;
	if (io->in_flight) {
		/*
		 * Orphan: gf2_rw_io_done frees it when Gluster answers, and
		 * calls the end hook then.
		 */
		io->private_data = NULL;
		io->end_fn = state->end_fn;
		io->end_arg = state->end_arg;
		state->end_fn = NULL;
		return 0;
	}
	gf2_rw_end(&state->end_fn, state->end_arg);
	TALLOC_FREE(io);
	return 0;
}

static void gf2_rw_finish(struct tevent_req *req, int err)
{
	struct gf2_rw_state *state = tevent_req_data(req,
						     struct gf2_rw_state);
	struct timespec end;

	clock_gettime_mono(&end);
	state->aio_state.duration = nsec_time_diff(&end, &state->start);
	GF2_PROFILE_ASYNC_END(state->profile_bytes);
	gf2_rw_end(&state->end_fn, state->end_arg);
	if (err != 0) {
		state->aio_state.error = err;
		state->ret = -1;
		tevent_req_error(req, err);
		return;
	}
	state->ret = state->done;
	if (state->st != NULL && state->op == GF2_IO_WRITE) {
		state->st->c.writes += 1;
		state->st->c.write_bytes += state->done;
	} else if (state->st != NULL && state->op == GF2_IO_FSYNC) {
		state->st->c.fsyncs += 1;
	}
	tevent_req_done(req);
}

static void gf2_rw_next(struct tevent_req *req)
{
	struct gf2_rw_state *state = tevent_req_data(req,
						     struct gf2_rw_state);
	struct gf2_io *io = state->io;
	size_t len = state->n - state->done;
	off_t off = state->offset + state->done;
	bool switched;
	int err;

	if (io->op == GF2_IO_READ && len > io->buflen) {
		len = io->buflen;
	}
	/* a continuation runs from a completion, under no one's identity */
	switched = gf2_ident_enter(&state->as);
	err = gf2_io_submit(io, state->wdata + state->done, len, off);
	if (switched) {
		gf2_ident_leave();
	}
	if (err != 0) {
		gf2_rw_finish(req, err);
	}
}

/*
 * Main-loop half of a completion: account for it, then hand it to the
 * owner's completion function.
 */
static void gf2_io_done(struct tevent_context *ev,
			struct tevent_immediate *im,
			void *private_data)
{
	struct gf2_io *io = private_data;
	struct gf2_stats *st = io->fh->st;

	if (st != NULL) {
		struct timespec now;

		clock_gettime_mono(&now);
		st->inflight -= 1;
		if (io->ret < 0) {
			st->c.gluster_errors += 1;
		}
		gf2_stats_lat(st, nsec_time_diff(&now, &io->t0) / 1000);
	}
	gf2_io_release(io);
	io->done_fn(io);
}

/* Completion of a read, write or fsync request. */
static void gf2_rw_io_done(struct gf2_io *io)
{
	struct tevent_req *req = io->private_data;
	struct gf2_rw_state *state = NULL;

	if (req == NULL) {
		/* The request went away while Gluster held the call. */
		gf2_rw_end(&io->end_fn, io->end_arg);
		TALLOC_FREE(io);
		return;
	}
	state = tevent_req_data(req, struct gf2_rw_state);

	if (io->ret < 0) {
		gf2_rw_finish(req, io->err);
		return;
	}

	switch (io->op) {
	case GF2_IO_FSYNC:
		gf2_rw_finish(req, 0);
		return;
	case GF2_IO_READ:
		if (io->ret == 0) {
			/* EOF: return what we have */
			gf2_rw_finish(req, 0);
			return;
		}
		memcpy(state->rdata + state->done, io->buf, io->ret);
		state->done += io->ret;
		break;
	case GF2_IO_WRITE:
		if (io->ret == 0) {
			/* No progress: never spin. */
			gf2_rw_finish(req, ENOSPC);
			return;
		}
		state->done += io->ret;
		break;
	}

	if (state->done >= state->n) {
		gf2_rw_finish(req, 0);
		return;
	}
	/* Short transfer: continue with the rest. */
	GF2_PROFILE_ASYNC_SET_BUSY(state->profile_bytes);
	gf2_rw_next(req);
	if (tevent_req_is_in_progress(req)) {
		GF2_PROFILE_ASYNC_SET_IDLE(state->profile_bytes);
	}
}

static struct tevent_req *gf2_rw_send(TALLOC_CTX *mem_ctx,
				      struct tevent_context *ev,
				      struct gf2_fh *fh,
				      enum gf2_io_op op,
				      uint8_t *rdata, const uint8_t *wdata,
				      size_t n, off_t offset,
				      const struct gf2_ident *as,
				      void (*end_fn)(void *arg),
				      void *end_arg)
{
	struct tevent_req *req = NULL;
	struct gf2_rw_state *state = NULL;
	bool ok;

	req = tevent_req_create(mem_ctx, &state, struct gf2_rw_state);
	if (req == NULL) {
		return NULL;
	}
	clock_gettime_mono(&state->start);
	state->rdata = rdata;
	state->wdata = wdata;
	state->n = n;
	state->offset = offset;
	state->op = op;
	state->st = fh != NULL ? fh->st : NULL;
	state->end_fn = end_fn;
	state->end_arg = end_arg;
	talloc_set_destructor(state, gf2_rw_state_destructor);
	if (as != NULL) {
		ok = gf2_ident_copy(state, &state->as, as);
	} else {
		ok = gf2_ident_capture(state, &state->as);
	}
	if (!ok) {
		tevent_req_oom(req);
		return tevent_req_post(req, ev);
	}

	switch (op) {
	case GF2_IO_READ:
		/*
		 * Counted once per SMB read by the caller, which may serve
		 * it from memory instead.
		 */
		break;
	case GF2_IO_WRITE:
		GF2_PROFILE_ASYNC_START(fh != NULL ? fh->snum : -1,
					syscall_asys_pwrite,
					state->profile_bytes, n);
		break;
	case GF2_IO_FSYNC:
		GF2_PROFILE_ASYNC_START(fh != NULL ? fh->snum : -1,
					syscall_asys_fsync,
					state->profile_bytes, 0);
		break;
	}

	if (fh == NULL || fh->fd == NULL) {
		gf2_rw_finish(req, EBADF);
		return tevent_req_post(req, ev);
	}

	if (op != GF2_IO_FSYNC) {
		ok = sys_valid_io_range(offset, n);
		if (!ok || n > INT_MAX) {
			gf2_rw_finish(req, EINVAL);
			return tevent_req_post(req, ev);
		}
		if (n == 0) {
			gf2_rw_finish(req, 0);
			return tevent_req_post(req, ev);
		}
	}

	state->io = gf2_io_new(ev, fh, op, gf2_rw_io_done, req);
	if (tevent_req_nomem(state->io, req)) {
		return tevent_req_post(req, ev);
	}
	if (op == GF2_IO_READ) {
		state->io->buflen = n;
		state->io->buf = talloc_size(state->io, n);
		if (tevent_req_nomem(state->io->buf, req)) {
			return tevent_req_post(req, ev);
		}
	}

	if (op == GF2_IO_FSYNC) {
		bool switched = gf2_ident_enter(&state->as);
		int err = gf2_io_submit(state->io, NULL, 0, 0);

		if (switched) {
			gf2_ident_leave();
		}
		if (err != 0) {
			gf2_rw_finish(req, err);
		}
	} else {
		gf2_rw_next(req);
	}
	if (!tevent_req_is_in_progress(req)) {
		return tevent_req_post(req, ev);
	}
	GF2_PROFILE_ASYNC_SET_IDLE(state->profile_bytes);
	return req;
}

static ssize_t gf2_rw_recv(struct tevent_req *req,
			   struct vfs_aio_state *aio_state)
{
	struct gf2_rw_state *state = tevent_req_data(req,
						     struct gf2_rw_state);
	ssize_t ret;

	if (tevent_req_is_unix_error(req, &aio_state->error)) {
		aio_state->duration = state->aio_state.duration;
		tevent_req_received(req);
		return -1;
	}
	*aio_state = state->aio_state;
	ret = state->ret;
	tevent_req_received(req);
	return ret;
}

struct tevent_req *gf2_pread_send_as(TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct gf2_fh *fh,
				     const struct gf2_ident *as,
				     void *data, size_t n, off_t offset)
{
	return gf2_rw_send(mem_ctx, ev, fh, GF2_IO_READ, data, NULL, n,
			   offset, as, NULL, NULL);
}

ssize_t gf2_pread_recv(struct tevent_req *req,
		       struct vfs_aio_state *aio_state)
{
	return gf2_rw_recv(req, aio_state);
}

struct tevent_req *gf2_pwrite_send(TALLOC_CTX *mem_ctx,
				   struct tevent_context *ev,
				   struct gf2_fh *fh,
				   const void *data, size_t n, off_t offset,
				   void (*end_fn)(void *arg), void *end_arg)
{
	return gf2_rw_send(mem_ctx, ev, fh, GF2_IO_WRITE, NULL, data, n,
			   offset, NULL, end_fn, end_arg);
}

ssize_t gf2_pwrite_recv(struct tevent_req *req,
			struct vfs_aio_state *aio_state)
{
	return gf2_rw_recv(req, aio_state);
}

struct tevent_req *gf2_fsync_send(TALLOC_CTX *mem_ctx,
				  struct tevent_context *ev,
				  struct gf2_fh *fh)
{
	return gf2_rw_send(mem_ctx, ev, fh, GF2_IO_FSYNC, NULL, NULL, 0,
			   0, NULL, NULL, NULL);
}

/*
 * An fsync with nothing to sync: a directory handle holds no Gluster
 * descriptor, and the bricks made its entries before they answered.
 * Completes at once, received by gf2_fsync_recv.
 */
struct tevent_req *gf2_fsync_none_send(TALLOC_CTX *mem_ctx,
				       struct tevent_context *ev)
{
	struct tevent_req *req = NULL;
	struct gf2_rw_state *state = NULL;

	req = tevent_req_create(mem_ctx, &state, struct gf2_rw_state);
	if (req == NULL) {
		return NULL;
	}
	clock_gettime_mono(&state->start);
	state->op = GF2_IO_FSYNC;
	talloc_set_destructor(state, gf2_rw_state_destructor);
	gf2_rw_finish(req, 0);
	return tevent_req_post(req, ev);
}

int gf2_fsync_recv(struct tevent_req *req, struct vfs_aio_state *aio_state)
{
	ssize_t ret = gf2_rw_recv(req, aio_state);

	return ret < 0 ? -1 : 0;
}

struct gf2_fh *gf2_fh_new(struct gf2_volume *vol, struct gf2_stats *st)
{
	struct gf2_fh *fh = talloc_zero(NULL, struct gf2_fh);

	if (fh == NULL) {
		return NULL;
	}
	fh->vol = vol;
	fh->st = st;
	fh->snum = -1;
	gf2_hold_get(&fh->hold);
	return fh;
}

static int gf2_fh_release(struct gf2_fh *fh)
{
	int ret = 0;

	if (fh->fd != NULL) {
		ret = glfs_close(fh->fd);
		fh->fd = NULL;
	}
	TALLOC_FREE(fh);
	return ret;
}

/*
 * Close a handle.  If Gluster still owns a call on it, the close is
 * deferred to that call's completion (gf2_io_release); the handle then
 * belongs to the calls in flight.
 */
int gf2_fh_close(struct gf2_fh *fh)
{
	if (!gf2_hold_put(&fh->hold)) {
		return 0;
	}
	return gf2_fh_release(fh);
}
