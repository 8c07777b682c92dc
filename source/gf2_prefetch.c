/*
 * glusterfs2: prefetch buffers.
 *
 * The readahead state machine (gf2_readahead.c) decides what to read
 * ahead; this file owns the data: chunks of at most GF2_PF_CHUNK bytes read
 * with gfapi's asynchronous reads, kept per file and served to later reads
 * by copy.
 *
 * Per file, not per handle: every handle of a file in this smbd process
 * shares one gf2_pf_file (keyed by smbd's file_id), so a write, truncate or
 * fallocate through any of them drops the overlapping prefetched data
 * before it is sent, and a prefetch read that was in flight while the file
 * was written is thrown away when it lands (write generation).
 *
 * Memory: every chunk, in flight or ready, is counted against one cap per
 * smbd process (glusterfs2:prefetch max memory).  A window is cut to what
 * is left; expired and consumed chunks go first.
 *
 * Coherence with other writers (other smbd processes, other nodes, FUSE
 * or NFS clients):
 *   - always: when the volume has features.cache-invalidation on, Gluster's
 *     upcall events drop the data of a file changed elsewhere before the
 *     next read is served (gf2_upcall.c);
 *   - mode "age" (default): a chunk whose read was sent to Gluster more
 *     than "prefetch max age" milliseconds ago is never served, so a reader
 *     sees any change that completed at least that long before its read.
 *   - mode "strict": prefetched data is read and served only while the
 *     handle holds a read-caching oplock or lease, that is while the client
 *     itself is allowed to cache the file.  Without one, reads go straight
 *     to Gluster.
 *
 * Ownership: a chunk is a talloc child of nothing (NULL context) and sits
 * on its file's list.  While its gfapi read is in flight the gf2_io is
 * owned by Gluster (see gf2_async.c); if the file goes away meanwhile, the
 * chunk is unlinked and orphaned (chunk->pf == NULL) and its completion
 * frees it.  Reads waiting for a chunk are tevent requests on the file's
 * waiter list; their destructor unlinks them.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbprofile.h"
#include "lib/util/tevent_unix.h"
#include "lib/util/dlinklist.h"
#include "gf2_prefetch.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/*
 * Prefetch reads Gluster in chunks of 124 KiB.  gfapi receives a reply
 * into buffers sized for the whole RPC record (payload plus a few hundred
 * bytes of headers).  Up to 128 KiB those come from malloc and are reused;
 * larger ones come from gfapi's iobuf arenas, which hold only two 1 MiB
 * buffers each and are mapped and unmapped as prefetch keeps more in
 * flight (or, above 1 MiB, from calloc, which zeroes each one).  With
 * 1 MiB chunks every page of every reply faulted in fresh: ~180,000 page
 * faults per GiB read and a tenth of smbd's CPU; with 124 KiB, almost none.
 */
#define GF2_PF_CHUNK (124 * 1024)

struct gf2_pf_chunk {
	struct gf2_pf_chunk *prev, *next;
	struct gf2_pf_file *pf;		/* NULL once orphaned */
	struct gf2_io *io;		/* while in flight */
	uint64_t off;
	uint64_t len;
	uint64_t got;			/* valid bytes; < len: EOF there */
	uint64_t served;
	uint64_t gen;			/* pf->wgen when issued */
	uint8_t *data;
	struct timespec issued_at;	/* the data is at least this fresh */
	int stream;
	bool ready;
	bool dead;			/* failed or invalidated */
	struct gf2_stats *st;		/* share that read it ahead */
};

struct gf2_pf_waiter;

struct gf2_pf_file {
	struct gf2_pf_file *prev, *next;
	struct file_id id;
	unsigned refs;
	struct gf2_ra_state ra;
	struct gf2_pf_chunk *chunks;
	struct gf2_pf_waiter *waiters;
	uint64_t wgen;
	unsigned writes_inflight;
};

static struct gf2_pf_file *gf2_pf_files;
static uint64_t gf2_pf_cap = 64 * 1024 * 1024;
struct gf2_pf_stats gf2_pf_stats;

void gf2_pf_set_cap(uint64_t cap)
{
	if (cap > gf2_pf_cap || gf2_pf_stats.used == 0) {
		gf2_pf_cap = cap;
	}
}

static int gf2_pf_chunk_destructor(struct gf2_pf_chunk *c)
{
	uint64_t had = c->ready ? c->got : c->len;

	gf2_pf_stats.used -= c->len;
	if (c->ready && c->got > c->served) {
		gf2_pf_stats.wasted += c->got - c->served;
	}
	if (c->st != NULL && had > c->served) {
		c->st->c.prefetch_unused += had - c->served;
		gf2_stats_changed(c->st);
	}
	if (c->pf != NULL) {
		DLIST_REMOVE(c->pf->chunks, c);
		c->pf = NULL;
	}
	return 0;
}

static void gf2_pf_chunk_drop(struct gf2_pf_chunk *c)
{
	if (c->io != NULL) {
		/* Gluster owns the read: orphan, freed at completion. */
		DLIST_REMOVE(c->pf->chunks, c);
		c->pf = NULL;
		c->dead = true;
		return;
	}
	TALLOC_FREE(c);
}

static void gf2_pf_wake(struct gf2_pf_file *pf);

struct gf2_pf_file *gf2_pf_file_get(const struct file_id *id)
{
	struct gf2_pf_file *pf = NULL;

	for (pf = gf2_pf_files; pf != NULL; pf = pf->next) {
		if (pf->id.devid == id->devid && pf->id.inode == id->inode &&
		    pf->id.extid == id->extid) {
			pf->refs += 1;
			return pf;
		}
	}
	pf = talloc_zero(NULL, struct gf2_pf_file);
	if (pf == NULL) {
		return NULL;
	}
	pf->id = *id;
	pf->refs = 1;
	gf2_ra_init(&pf->ra);
	DLIST_ADD(gf2_pf_files, pf);
	return pf;
}

void gf2_pf_file_put(struct gf2_pf_file *pf)
{
	SMB_ASSERT(pf->refs > 0);
	pf->refs -= 1;
	if (pf->refs > 0) {
		return;
	}
	/* No handle left, so no reads and no waiters. */
	SMB_ASSERT(pf->waiters == NULL);
	DBG_INFO("prefetch totals: issued %" PRIu64 ", arrived %" PRIu64
		 ", served %" PRIu64 ", wasted %" PRIu64 ", expired %" PRIu64
		 ", invalidated %" PRIu64 " (%" PRIu64 " upcalls), held %" PRIu64
		 "; reads: %" PRIu64 " hits, %" PRIu64 " waits, %" PRIu64
		 " misses\n",
		 gf2_pf_stats.issued, gf2_pf_stats.completed,
		 gf2_pf_stats.served, gf2_pf_stats.wasted,
		 gf2_pf_stats.expired, gf2_pf_stats.invalidated,
		 gf2_pf_stats.upcalls, gf2_pf_stats.used, gf2_pf_stats.hits, gf2_pf_stats.waits,
		 gf2_pf_stats.misses);
	while (pf->chunks != NULL) {
		gf2_pf_chunk_drop(pf->chunks);
	}
	DLIST_REMOVE(gf2_pf_files, pf);
	TALLOC_FREE(pf);
}

/*
 * Drop prefetched data overlapping [off, off + len) (len 0: to the end of
 * the file), and make reads in flight useless: called before a write,
 * truncate or allocation change is sent to Gluster.
 */
void gf2_pf_invalidate(struct gf2_pf_file *pf, uint64_t off, uint64_t len)
{
	struct gf2_pf_chunk *c = NULL;
	struct gf2_pf_chunk *next = NULL;
	uint64_t end = len == 0 ? UINT64_MAX : off + len;

	pf->wgen += 1;
	for (c = pf->chunks; c != NULL; c = next) {
		next = c->next;
		if (c->off < end && off < c->off + c->len) {
			gf2_pf_stats.invalidated += c->len;
			gf2_pf_chunk_drop(c);
		}
	}
	if (len == 0) {
		gf2_ra_reset(&pf->ra);
	}
}

void gf2_pf_invalidate_inode(uint64_t ino, bool all)
{
	struct gf2_pf_file *pf = NULL;

	for (pf = gf2_pf_files; pf != NULL; pf = pf->next) {
		if (all || pf->id.inode == ino) {
			/* keep the streams: the next read refills */
			gf2_pf_invalidate(pf, 0, UINT64_MAX);
			gf2_pf_wake(pf);
		}
	}
}

/*
 * A write is about to be sent: drop what it overlaps and pause prefetching
 * on the file until gf2_pf_write_end.  Holds a reference on pf meanwhile.
 */
void gf2_pf_write_begin(struct gf2_pf_file *pf, uint64_t off, uint64_t len)
{
	pf->refs += 1;
	pf->writes_inflight += 1;
	gf2_pf_invalidate(pf, off, len);
}

void gf2_pf_write_end(struct gf2_pf_file *pf)
{
	SMB_ASSERT(pf->writes_inflight > 0);
	pf->writes_inflight -= 1;
	pf->wgen += 1;
	gf2_pf_file_put(pf);
}

static uint64_t gf2_ms_since(const struct timespec *then,
			     const struct timespec *now)
{
	return nsec_time_diff(now, then) / 1000000;
}

/*
 * Drop ready chunks whose read was issued more than max_age ago, in every
 * file of the process.
 */
static void gf2_pf_expire(const struct gf2_pf_config *cfg)
{
	struct gf2_pf_file *pf = NULL;
	struct timespec now;

	clock_gettime_mono(&now);
	for (pf = gf2_pf_files; pf != NULL; pf = pf->next) {
		struct gf2_pf_chunk *c = NULL;
		struct gf2_pf_chunk *next = NULL;

		for (c = pf->chunks; c != NULL; c = next) {
			next = c->next;
			if (c->ready &&
			    gf2_ms_since(&c->issued_at, &now) >
			    cfg->max_age_ms) {
				gf2_pf_stats.expired += c->got - c->served;
				gf2_pf_chunk_drop(c);
			}
		}
	}
}

static struct gf2_pf_chunk *gf2_pf_find(struct gf2_pf_file *pf,
					uint64_t pos)
{
	struct gf2_pf_chunk *c = NULL;

	for (c = pf->chunks; c != NULL; c = c->next) {
		if (!c->dead && c->off <= pos && pos < c->off + c->len) {
			return c;
		}
	}
	return NULL;
}

static void gf2_pf_chunk_done(struct gf2_io *io);

static void gf2_pf_issue(struct tevent_context *ev, struct gf2_fh *fh,
			 struct gf2_pf_file *pf, uint64_t off, uint64_t len,
			 int stream)
{
	uint64_t pos = off;
	uint64_t end = off + len;

	while (pos < end) {
		struct gf2_pf_chunk *c = gf2_pf_find(pf, pos);
		uint64_t clen;
		int err;

		if (c != NULL) {
			pos = c->off + c->len;
			continue;
		}
		clen = MIN(end - pos, GF2_PF_CHUNK);
		/* stop where an existing chunk starts */
		for (c = pf->chunks; c != NULL; c = c->next) {
			if (!c->dead && c->off > pos && c->off < pos + clen) {
				clen = c->off - pos;
			}
		}
		c = talloc_zero(NULL, struct gf2_pf_chunk);
		if (c == NULL) {
			return;
		}
		c->off = pos;
		c->len = clen;
		c->gen = pf->wgen;
		c->stream = stream;
		c->st = fh->st;
		clock_gettime_mono(&c->issued_at);
		c->io = gf2_io_new(ev, fh, GF2_IO_READ, gf2_pf_chunk_done, c);
		if (c->io == NULL) {
			TALLOC_FREE(c);
			return;
		}
		c->io->buf = talloc_size(c->io, clen);
		c->io->buflen = clen;
		if (c->io->buf == NULL) {
			TALLOC_FREE(c->io);
			TALLOC_FREE(c);
			return;
		}
		c->pf = pf;
		gf2_pf_stats.used += clen;
		talloc_set_destructor(c, gf2_pf_chunk_destructor);
		DLIST_ADD_END(pf->chunks, c);

		err = gf2_io_submit(c->io, NULL, clen, pos);
		if (err != 0) {
			TALLOC_FREE(c->io);
			TALLOC_FREE(c);
			return;
		}
		gf2_pf_stats.issued += clen;
		if (c->st != NULL) {
			c->st->c.prefetch_bytes += clen;
		}
		pos += clen;
	}
}

enum gf2_pf_serve {
	GF2_PF_SERVED,
	GF2_PF_WAIT,
	GF2_PF_MISS,
};

/*
 * Serve [off, off + n) from ready chunks if they hold all of it (or all
 * of it up to EOF).  Returns SERVED with *got bytes copied, WAIT if some
 * of it is still in flight, MISS if some of it is not prefetched.
 */
static enum gf2_pf_serve gf2_pf_serve(struct gf2_pf_file *pf,
				      uint8_t *data, uint64_t off,
				      uint64_t n, uint64_t *got)
{
	uint64_t pos = off;
	uint64_t end = off + n;
	bool wait = false;
	bool eof = false;

	while (pos < end) {
		struct gf2_pf_chunk *c = gf2_pf_find(pf, pos);

		if (c == NULL) {
			return GF2_PF_MISS;
		}
		if (!c->ready) {
			wait = true;
			pos = c->off + c->len;
			continue;
		}
		if (pos >= c->off + c->got) {
			/* EOF inside this chunk */
			eof = true;
			break;
		}
		pos = MIN(end, c->off + c->got);
		if (c->got < c->len && pos == c->off + c->got) {
			eof = true;
			break;
		}
	}
	if (wait) {
		return GF2_PF_WAIT;
	}
	end = eof ? MIN(pos, end) : end;

	pos = off;
	while (pos < end) {
		struct gf2_pf_chunk *c = gf2_pf_find(pf, pos);
		uint64_t take = MIN(end, c->off + c->got) - pos;

		memcpy(data + (pos - off), c->data + (pos - c->off), take);
		c->served += take;
		pos += take;
	}
	*got = end - off;
	gf2_pf_stats.served += *got;

	/* Chunks this read finished are consumed: give the memory back. */
	{
		struct gf2_pf_chunk *c = NULL;
		struct gf2_pf_chunk *next = NULL;

		for (c = pf->chunks; c != NULL; c = next) {
			next = c->next;
			if (c->ready && c->off + c->got <= end &&
			    c->served >= c->got) {
				TALLOC_FREE(c);
			}
		}
	}
	return GF2_PF_SERVED;
}

/* A read served from prefetch, waiting for prefetch, or read directly. */
struct gf2_pf_waiter {
	struct gf2_pf_waiter *prev, *next;
	struct tevent_req *req;
};

struct gf2_pf_read_state {
	struct tevent_context *ev;
	struct gf2_fh *fh;
	struct gf2_pf_file *pf;
	struct gf2_pf_waiter *waiter;
	uint8_t *data;
	uint64_t n;
	uint64_t off;
	ssize_t ret;
	struct vfs_aio_state aio_state;
	struct timespec start;
	SMBPROFILE_BYTES_ASYNC_STATE(profile_bytes);
};

static void gf2_pf_read_direct_done(struct tevent_req *subreq);

static int gf2_pf_read_state_destructor(struct gf2_pf_read_state *state)
{
	if (state->waiter != NULL) {
		DLIST_REMOVE(state->pf->waiters, state->waiter);
		TALLOC_FREE(state->waiter);
	}
	return 0;
}

/* A read request finished: count it for the share. */
static void gf2_pf_count(struct gf2_pf_read_state *state, uint64_t got,
			 bool from_prefetch)
{
	struct gf2_stats *st = state->fh != NULL ? state->fh->st : NULL;

	if (st == NULL) {
		return;
	}
	st->c.reads += 1;
	st->c.read_bytes += got;
	if (from_prefetch) {
		st->c.read_bytes_prefetch += got;
	} else {
		st->c.read_bytes_gluster += got;
	}
	gf2_stats_changed(st);
}

static void gf2_pf_read_finish(struct tevent_req *req, uint64_t got)
{
	struct gf2_pf_read_state *state = tevent_req_data(
		req, struct gf2_pf_read_state);
	struct timespec end;

	clock_gettime_mono(&end);
	state->aio_state.duration = nsec_time_diff(&end, &state->start);
	state->ret = got;
	gf2_pf_count(state, got, true);
	SMBPROFILE_BYTES_ASYNC_END(state->profile_bytes);
	tevent_req_done(req);
}

static void gf2_pf_read_direct(struct tevent_req *req)
{
	struct gf2_pf_read_state *state = tevent_req_data(
		req, struct gf2_pf_read_state);
	struct tevent_req *subreq = NULL;

	subreq = gf2_pread_send(state, state->ev, state->fh, state->data,
				state->n, state->off);
	if (tevent_req_nomem(subreq, req)) {
		return;
	}
	tevent_req_set_callback(subreq, gf2_pf_read_direct_done, req);
}

static void gf2_pf_read_direct_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(
		subreq, struct tevent_req);
	struct gf2_pf_read_state *state = tevent_req_data(
		req, struct gf2_pf_read_state);
	ssize_t ret;

	ret = gf2_pread_recv(subreq, &state->aio_state);
	TALLOC_FREE(subreq);
	SMBPROFILE_BYTES_ASYNC_END(state->profile_bytes);
	if (ret < 0) {
		tevent_req_error(req, state->aio_state.error);
		return;
	}
	state->ret = ret;
	gf2_pf_count(state, ret, false);
	tevent_req_done(req);
}

/* Try again for every read waiting on this file. */
static void gf2_pf_wake(struct gf2_pf_file *pf)
{
	struct gf2_pf_waiter *w = NULL;
	struct gf2_pf_waiter *next = NULL;

	for (w = pf->waiters; w != NULL; w = next) {
		struct tevent_req *req = w->req;
		struct gf2_pf_read_state *state = tevent_req_data(
			req, struct gf2_pf_read_state);
		enum gf2_pf_serve r;
		uint64_t got = 0;

		next = w->next;
		r = gf2_pf_serve(pf, state->data, state->off, state->n, &got);
		if (r == GF2_PF_WAIT) {
			continue;
		}
		DLIST_REMOVE(pf->waiters, w);
		state->waiter = NULL;
		TALLOC_FREE(w);
		if (r == GF2_PF_SERVED) {
			gf2_pf_read_finish(req, got);
		} else {
			gf2_pf_read_direct(req);
		}
	}
}

static void gf2_pf_chunk_done(struct gf2_io *io)
{
	struct gf2_pf_chunk *c = io->private_data;
	struct gf2_pf_file *pf = c->pf;

	c->io = NULL;
	if (pf == NULL || c->dead) {
		/* Orphaned or invalidated while Gluster held it. */
		TALLOC_FREE(io);
		TALLOC_FREE(c);
		return;
	}
	if (io->ret < 0 || c->gen != pf->wgen || pf->writes_inflight > 0) {
		/* Failed, or the file was written meanwhile: useless. */
		c->dead = true;
		TALLOC_FREE(io);
		TALLOC_FREE(c);
		gf2_pf_wake(pf);
		return;
	}
	c->data = talloc_move(c, &io->buf);
	c->got = io->ret;
	c->ready = true;
	gf2_pf_stats.completed += c->got;
	TALLOC_FREE(io);
	gf2_pf_wake(pf);
}

struct tevent_req *gf2_pf_read_send(TALLOC_CTX *mem_ctx,
				    struct tevent_context *ev,
				    struct gf2_fh *fh,
				    struct gf2_pf_file *pf,
				    const struct gf2_pf_config *cfg,
				    void *data, size_t n, off_t offset,
				    uint64_t file_size)
{
	struct tevent_req *req = NULL;
	struct gf2_pf_read_state *state = NULL;
	struct gf2_ra_decision d;
	enum gf2_pf_serve r;
	uint64_t now_ms;
	uint64_t avail;
	uint64_t got = 0;

	req = tevent_req_create(mem_ctx, &state, struct gf2_pf_read_state);
	if (req == NULL) {
		return NULL;
	}
	clock_gettime_mono(&state->start);
	SMBPROFILE_BYTES_ASYNC_START(syscall_asys_pread, profile_p,
				     state->profile_bytes, n);
	state->ev = ev;
	state->fh = fh;
	state->pf = pf;
	state->data = data;
	state->n = n;
	state->off = offset;
	talloc_set_destructor(state, gf2_pf_read_state_destructor);

	if (pf == NULL || !cfg->enabled || offset < 0 || n == 0) {
		gf2_pf_read_direct(req);
		if (!tevent_req_is_in_progress(req)) {
			return tevent_req_post(req, ev);
		}
		return req;
	}

	gf2_pf_expire(cfg);
	avail = gf2_pf_cap > gf2_pf_stats.used ?
		gf2_pf_cap - gf2_pf_stats.used : 0;
	now_ms = gf2_now_ms() + 1;
	gf2_ra_on_read(&pf->ra, &cfg->ra, offset, n, file_size, avail,
		       now_ms, &d);
	if (d.len > 0 && pf->writes_inflight == 0) {
		gf2_pf_issue(ev, fh, pf, d.off, d.len, d.stream);
	}

	r = gf2_pf_serve(pf, data, offset, n, &got);
	switch (r) {
	case GF2_PF_SERVED:
		gf2_pf_stats.hits += 1;
		gf2_pf_read_finish(req, got);
		return tevent_req_post(req, ev);
	case GF2_PF_WAIT:
		gf2_pf_stats.waits += 1;
		/*
		 * Completed from gf2_pf_wake while it walks the waiter list:
		 * the caller's callback must not run inside that walk.
		 */
		tevent_req_defer_callback(req, ev);
		state->waiter = talloc_zero(state, struct gf2_pf_waiter);
		if (tevent_req_nomem(state->waiter, req)) {
			return tevent_req_post(req, ev);
		}
		state->waiter->req = req;
		DLIST_ADD_END(pf->waiters, state->waiter);
		return req;
	case GF2_PF_MISS:
		gf2_pf_stats.misses += 1;
		if (d.sequential) {
			/* its data expired or was dropped: refill */
			gf2_ra_on_miss(&pf->ra, d.stream);
		}
		break;
	}
	gf2_pf_read_direct(req);
	if (!tevent_req_is_in_progress(req)) {
		return tevent_req_post(req, ev);
	}
	return req;
}

ssize_t gf2_pf_read_recv(struct tevent_req *req,
			 struct vfs_aio_state *aio_state)
{
	struct gf2_pf_read_state *state = tevent_req_data(
		req, struct gf2_pf_read_state);
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
