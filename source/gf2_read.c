/*
 * glusterfs2: the read engine (see include/gf2_read.h).
 *
 * Layer: engines.
 *
 * One request state carries a read from the VFS entry to its answer:
 *
 *   gf2_read_send --busy file?--> gf2_settle_then --settled--.
 *        |                                                      |
 *        '------------------------------------------------------+
 *                                                               v
 *   gf2_read_start: the shared read cache, if the handle may use it:
 *        |-- all of it held: gf2_shr_serve --SERVED--> done (copied)
 *        |-- whole blocks in it: gf2_shr_fill_begin, to gf2_read_direct
 *        |   (the answer fills the blocks: gf2_shr_fill)
 *        '-- else, and without it:
 *   gf2_pf_file_of (the handle's prefetch state), gf2_rp_route
 *        |-- PREFETCH: gf2_pf_answer --SERVED--> done (from memory)
 *        |                  |--WAIT--> gf2_pf_wait --SERVED--> done
 *        |                  |                      '--MISS--.
 *        |                  '--MISS-------------------------+
 *        '-- DIRECT, DROP_DIRECT --------------------------+
 *                                                          v
 *   gf2_read_direct: pieces (gf2_rp_piece), all in flight, each into
 *   its part of the reply --last piece--> done (gf2_rp_total)
 *
 * Settling: a read of a file this process acknowledged writes of that
 * are not yet on the bricks first waits for them (gf2_settle_then,
 * gf2_settle.c, without blocking the main loop), so it sees them; the
 * latched error of such a write stays for the next write, FLUSH or
 * close.
 *
 * Identity: gfapi makes every call as the identity the submitting thread
 * holds.  The request captures smbd's identity when it comes in; what it
 * sends later (after settling, from a waiter woken by a completion) is
 * sent as that identity.
 *
 * Ownership: smbd owns the request and keeps fsp until it is done.  The
 * waiter on prefetch's list and the pieces in flight are children of the
 * state: freeing the request unlinks the waiter, and the bridge orphans
 * pieces still in flight (gf2_async.c).
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbprofile.h"
#include "lib/util/tevent_unix.h"
#include "gf2_compat.h"
#include "gf2_cache.h"
#include "gf2_settle.h"
#include "gf2_readplan.h"
#include "gf2_shmcache.h"
#include "gf2_shread.h"
#include "gf2_read.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/*
 * The handle holds a read-caching oplock or lease.  oplock_type is a bit
 * set: a batch oplock is BATCH_OPLOCK|EXCLUSIVE_OPLOCK.
 */
static bool gf2_read_caching(const struct files_struct *fsp)
{
	if (fsp->oplock_type == LEASE_OPLOCK) {
		return fsp->lease != NULL &&
		       (fsp->lease->lease.lease_state & SMB2_LEASE_READ);
	}
	return EXCLUSIVE_OPLOCK_TYPE(fsp->oplock_type) ||
	       LEVEL_II_OPLOCK_TYPE(fsp->oplock_type);
}

/*
 * Direct reads of more than one chunk sent to Gluster whole and not yet
 * answered, in this process (gf2_rp_piece says why they are counted).
 * Measured with test/bench/run --workloads seqread,leaseread against the
 * build that sent every read of up to 1 MiB whole: 1 MiB reads under a
 * lease, 4 or 16 in flight, 1.8-2.5 times less smbd CPU per GiB (about
 * 115,000 page faults per GiB before) and 1.07-1.68 times the speed; one
 * 1 MiB read at a time unchanged.
 */
static unsigned gf2_read_whole_in_flight;

struct gf2_read_state {
	struct tevent_context *ev;
	struct files_struct *fsp;
	struct gf2_read_file f;
	struct gf2_ident as;		/* the SMB request's identity */
	uint8_t *data;
	uint64_t n;
	off_t off;
	ssize_t ret;
	struct gf2_pf_waiter *waiter;	/* waiting for prefetch */
	uint64_t piece;		/* direct: the size of each piece */
	unsigned pieces;	/* direct: pieces in flight */
	uint64_t *got;		/* direct: bytes each piece returned */
	int error;		/* direct: the first piece's error */
	bool shr_fill;		/* direct: fill the shared cache, under */
	uint64_t shr_gen;	/* this generation */
	struct vfs_aio_state aio_state;
	struct timespec start;
	GF2_PROFILE_ASYNC_STATE(profile_bytes);
};

/* One piece of a direct read in flight: a child of its bridge request. */
struct gf2_read_piece {
	struct tevent_req *req;
	unsigned idx;
	bool whole;		/* counted in gf2_read_whole_in_flight */
};

static void gf2_read_start(struct tevent_req *req);
static void gf2_read_woken(void *arg, enum gf2_pfb_serve r, uint64_t got);
static void gf2_read_direct(struct tevent_req *req);
static void gf2_read_piece_done(struct tevent_req *subreq);

enum gf2_read_from { GF2_FROM_GLUSTER, GF2_FROM_PREFETCH, GF2_FROM_SHARED };

/* A read request finished: count it for the share. */
static void gf2_read_count(struct gf2_read_state *state, uint64_t got,
			   enum gf2_read_from from)
{
	struct gf2_stats *st = state->f.fh->st;

	if (st == NULL) {
		return;
	}
	st->c.reads += 1;
	st->c.read_bytes += got;
	switch (from) {
	case GF2_FROM_PREFETCH:
		st->c.read_bytes_prefetch += got;
		break;
	case GF2_FROM_SHARED:
		st->c.read_bytes_shared += got;
		break;
	case GF2_FROM_GLUSTER:
		st->c.read_bytes_gluster += got;
		break;
	}
	if (state->f.shr != NULL) {
		struct gf2_shc_stats n;

		/* the node's figures: the newest of any process is right */
		gf2_shr_stats(state->f.shr, &n);
		st->c.shr_hits = n.hits;
		st->c.shr_misses = n.misses;
		st->c.shr_stale = n.stale_reads + n.stale_fills;
		st->c.shr_fills = n.inserts;
		st->c.shr_evictions = n.evictions;
		st->c.shr_invalidations = n.invalidations;
	}
	gf2_stats_changed(st);
}

/* Served from memory: prefetched data, or the shared read cache. */
static void gf2_read_served_from(struct tevent_req *req, uint64_t got,
				 enum gf2_read_from from)
{
	struct gf2_read_state *state = tevent_req_data(
		req, struct gf2_read_state);
	struct timespec end;

	clock_gettime_mono(&end);
	state->aio_state.duration = nsec_time_diff(&end, &state->start);
	state->ret = got;
	gf2_read_count(state, got, from);
	GF2_PROFILE_ASYNC_END(state->profile_bytes);
	tevent_req_done(req);
}

static void gf2_read_served(struct tevent_req *req, uint64_t got)
{
	gf2_read_served_from(req, got, GF2_FROM_PREFETCH);
}

/*
 * The shared read cache: true when it answered the read, or sent it to
 * Gluster to fill whole blocks of it.  Upcalls are taken first, so that
 * nothing is served that a change heard of already made wrong.  With
 * prefetch coherence strict, only a handle holding a read lease or
 * oplock is served from it (the rule prefetched data follows).
 */
static bool gf2_read_shared(struct tevent_req *req)
{
	struct gf2_read_state *state = tevent_req_data(
		req, struct gf2_read_state);
	struct gf2_shr *shr = state->f.shr;

	if (shr == NULL || state->n == 0) {
		return false;
	}
	if (state->f.cfg->strict && !gf2_read_caching(state->fsp)) {
		return false;
	}
	gf2_cache_sync();
	if (gf2_now_ms() - *state->f.shr_contact < GF2_SHR_CONTACT_MS &&
	    gf2_shr_serve(shr, state->f.shr_ino, state->data, state->off,
			  state->n)) {
		gf2_read_served_from(req, state->n, GF2_FROM_SHARED);
		return true;
	}
	if (!gf2_shr_fill_begin(shr, state->f.shr_ino, state->off, state->n,
				&state->shr_gen)) {
		/* prefetch or a direct read reaches the bricks */
		*state->f.shr_contact = gf2_now_ms();
		return false;
	}
	/* read whole blocks from Gluster once, for the node */
	state->shr_fill = true;
	gf2_read_direct(req);
	return true;
}

struct tevent_req *gf2_read_send(TALLOC_CTX *mem_ctx,
				 struct tevent_context *ev,
				 struct files_struct *fsp,
				 const struct gf2_read_file *f,
				 void *data, size_t n, off_t offset)
{
	struct tevent_req *req = NULL;
	struct gf2_read_state *state = NULL;

	req = tevent_req_create(mem_ctx, &state, struct gf2_read_state);
	if (req == NULL) {
		return NULL;
	}
	*state = (struct gf2_read_state) {
		.ev = ev, .fsp = fsp, .f = *f, .data = data, .n = n,
		.off = offset, .ret = -1,
	};
	if (f->fh == NULL) {
		tevent_req_error(req, EBADF);
		return tevent_req_post(req, ev);
	}
	if (!gf2_ident_capture(state, &state->as)) {
		tevent_req_oom(req);
		return tevent_req_post(req, ev);
	}
	if (gf2_settle_then(state, req, ev, f->volname, fsp, &state->as,
			    gf2_read_start)) {
		if (!tevent_req_is_in_progress(req)) {
			return tevent_req_post(req, ev);
		}
		return req;
	}
	gf2_read_start(req);
	if (!tevent_req_is_in_progress(req)) {
		return tevent_req_post(req, ev);
	}
	return req;
}

/* The read itself: routed, answered by prefetch or sent to Gluster. */
static void gf2_read_start(struct tevent_req *req)
{
	struct gf2_read_state *state = tevent_req_data(
		req, struct gf2_read_state);
	const struct gf2_pf_config *cfg = state->f.cfg;
	struct gf2_pf_file *pf = gf2_pf_file_of(state->f.pf_slot, state->f.id,
						cfg->enabled);
	struct gf2_rp_read r = {
		.has_pf = pf != NULL,
		.enabled = cfg->enabled,
		.strict = cfg->strict,
		.offset = state->off,
		.n = state->n,
	};
	enum gf2_pfb_serve answer;
	uint64_t got = 0;

	clock_gettime_mono(&state->start);
	GF2_PROFILE_ASYNC_START(state->f.fh->snum, syscall_asys_pread,
				state->profile_bytes, state->n);
	if (gf2_read_shared(req)) {
		return;
	}
	if (pf != NULL && cfg->strict) {
		r.read_caching = gf2_read_caching(state->fsp);
	}
	switch (gf2_rp_route(&r)) {
	case GF2_RP_DROP_DIRECT:
		/*
		 * Strict mode without a read lease or oplock: nothing
		 * prefetched may be served, and nothing is read ahead.
		 */
		gf2_pf_invalidate(pf, 0, 0);
		gf2_read_direct(req);
		return;
	case GF2_RP_DIRECT:
		if (pf != NULL) {
			gf2_cache_sync();
		}
		gf2_read_direct(req);
		return;
	case GF2_RP_PREFETCH:
		break;
	}
	gf2_cache_sync();
	answer = gf2_pf_answer(pf, cfg, state->ev, state->f.fh, state->data,
			       state->off, state->n,
			       state->fsp->fsp_name->st.st_ex_size, &got);
	switch (answer) {
	case GF2_PFB_SERVED:
		gf2_read_served(req, got);
		return;
	case GF2_PFB_WAIT:
		/*
		 * Completed from prefetch's walk of its waiters: the
		 * caller's callback must not run inside that walk.
		 */
		tevent_req_defer_callback(req, state->ev);
		state->waiter = gf2_pf_wait(state, pf, state->data, state->off,
					    state->n, gf2_read_woken, req);
		if (tevent_req_nomem(state->waiter, req)) {
			return;
		}
		return;
	case GF2_PFB_MISS:
		break;
	}
	gf2_read_direct(req);
}

/* Prefetch let a waiting read go: served, or to Gluster. */
static void gf2_read_woken(void *arg, enum gf2_pfb_serve r, uint64_t got)
{
	struct tevent_req *req = arg;
	struct gf2_read_state *state = tevent_req_data(
		req, struct gf2_read_state);

	TALLOC_FREE(state->waiter);	/* unlinked already */
	if (r == GF2_PFB_SERVED) {
		gf2_read_served(req, got);
		return;
	}
	gf2_read_direct(req);
}

static int gf2_read_piece_destructor(struct gf2_read_piece *pc)
{
	if (pc->whole) {
		SMB_ASSERT(gf2_read_whole_in_flight > 0);
		gf2_read_whole_in_flight -= 1;
	}
	return 0;
}

/* To Gluster, in the pieces the read plan says, all in flight at once. */
static void gf2_read_direct(struct tevent_req *req)
{
	struct gf2_read_state *state = tevent_req_data(
		req, struct gf2_read_state);
	unsigned n, i;

	state->piece = gf2_rp_piece(state->n, GF2_PF_CHUNK,
				    gf2_read_whole_in_flight);
	n = gf2_rp_pieces(state->n, state->piece);
	state->got = talloc_zero_array(state, uint64_t, n);
	if (tevent_req_nomem(state->got, req)) {
		return;
	}
	state->pieces = 0;
	state->error = 0;
	for (i = 0; i < n; i++) {
		uint64_t at = (uint64_t)i * state->piece;
		uint64_t len = gf2_rp_piece_len(state->n, state->piece, i);
		struct gf2_read_piece *pc = NULL;
		struct tevent_req *subreq = NULL;

		/* a waiter's read is sent from a completion: as its user */
		subreq = gf2_pread_send_as(state, state->ev, state->f.fh,
					   &state->as, state->data + at, len,
					   state->off + at);
		if (subreq == NULL) {
			break;
		}
		pc = talloc_zero(subreq, struct gf2_read_piece);
		if (pc == NULL) {
			TALLOC_FREE(subreq);
			break;
		}
		pc->req = req;
		pc->idx = i;
		if (n == 1 && len > GF2_PF_CHUNK) {
			pc->whole = true;
			gf2_read_whole_in_flight += 1;
			talloc_set_destructor(pc, gf2_read_piece_destructor);
		}
		tevent_req_set_callback(subreq, gf2_read_piece_done, pc);
		state->pieces += 1;
	}
	if (state->pieces == 0) {
		tevent_req_oom(req);
		return;
	}
	if (i < n) {
		/* what was sent completes; the rest counts as failed */
		state->error = ENOMEM;
	}
}

static void gf2_read_piece_done(struct tevent_req *subreq)
{
	struct gf2_read_piece *pc = tevent_req_callback_data(
		subreq, struct gf2_read_piece);
	struct tevent_req *req = pc->req;
	struct gf2_read_state *state = tevent_req_data(
		req, struct gf2_read_state);
	struct vfs_aio_state aio_state = { 0 };
	unsigned idx = pc->idx;
	uint64_t total;
	ssize_t ret;

	ret = gf2_pread_recv(subreq, &aio_state);
	TALLOC_FREE(subreq);	/* and pc */
	if (ret < 0) {
		if (state->error == 0) {
			state->error = aio_state.error;
		}
	} else {
		state->got[idx] = ret;
	}
	if (aio_state.duration > state->aio_state.duration) {
		state->aio_state.duration = aio_state.duration;
	}
	state->pieces -= 1;
	if (state->pieces > 0) {
		return;
	}
	GF2_PROFILE_ASYNC_END(state->profile_bytes);
	if (state->error != 0) {
		tevent_req_error(req, state->error);
		return;
	}
	total = gf2_rp_total(state->n, state->piece, state->got,
			     talloc_array_length(state->got));
	state->ret = total;
	if (state->shr_fill) {
		*state->f.shr_contact = gf2_now_ms();
		(void)gf2_shr_fill(state->f.shr, state->f.shr_ino,
				   state->shr_gen, state->data, state->off,
				   total);
	}
	gf2_read_count(state, total, GF2_FROM_GLUSTER);
	tevent_req_done(req);
}

ssize_t gf2_read_recv(struct tevent_req *req,
		      struct vfs_aio_state *aio_state)
{
	struct gf2_read_state *state = tevent_req_data(
		req, struct gf2_read_state);
	ssize_t ret;

	if (tevent_req_is_unix_error(req, &aio_state->error)) {
		tevent_req_received(req);
		return -1;
	}
	*aio_state = state->aio_state;
	ret = state->ret;
	tevent_req_received(req);
	return ret;
}

ssize_t gf2_read_sync(struct vfs_handle_struct *handle,
		      struct files_struct *fsp, glfs_fd_t *fd,
		      const char *volname, void *data, size_t n,
		      off_t offset)
{
	ssize_t ret;

	if (gf2_settle_sync(volname, fsp) != 0) {
		return -1;
	}
	GF2_START_PROFILE_BYTES(handle, syscall_pread, n);
	ret = glfs_pread(fd, data, n, offset, 0, NULL);
	GF2_END_PROFILE_BYTES(syscall_pread);
	return ret;
}
