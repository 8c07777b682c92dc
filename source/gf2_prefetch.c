/*
 * glusterfs2: the data cache: prefetch buffers (see gf2_prefetch.h).
 *
 * Layer: caches.
 *
 * The readahead state machine (gf2_readahead.c) decides what to read
 * ahead; this file reads it: chunks of at most GF2_PF_CHUNK bytes read
 * with the bridge's asynchronous reads, kept per file and served to later
 * reads by copy.  It keeps data and answers: every read of a client comes
 * from the read engine (gf2_read.c), which routes it here
 * (gf2_pf_answer), waits here when told to (gf2_pf_wait), and sends it to
 * Gluster itself when prefetch has not got it.
 *
 * Per file, not per handle: every handle of a file in this smbd process
 * shares one gf2_pf_file (keyed by smbd's file_id), so a write, truncate
 * or fallocate through any of them drops the overlapping prefetched data
 * before it is sent (a handle of a share without prefetch takes the
 * file's state only where another share made one, gf2_pf_file_find), and
 * a prefetch read that was in flight while the file was written is thrown
 * away when it lands (write generation).
 *
 * Memory: every chunk, in flight or ready, is counted against one cap per
 * smbd process (glusterfs2:prefetch max memory).  A window is cut to what
 * is left; expired and consumed chunks go first.
 *
 * Coherence with other writers (other smbd processes, other nodes, FUSE
 * or NFS clients):
 *   - always: when the volume has features.cache-invalidation on, Gluster's
 *     upcall events drop the data of a file changed elsewhere before the
 *     next read is served (gf2_upcall.c, gf2_cache_sync);
 *   - mode "age" (default): a chunk whose read was sent to Gluster more
 *     than "prefetch max age" milliseconds ago is never served, so a reader
 *     sees any change that completed at least that long before its read.
 *   - mode "strict": the read engine routes a read here only while the
 *     handle holds a read-caching oplock or lease (gf2_rp_route); without
 *     one, the file's prefetched data is dropped and the read goes to
 *     Gluster.
 *
 * The chunks themselves - where they are cut, whether a read can be
 * served, invalidation, expiry, memory - are kept by the pure book
 * (gf2_pfbook.c); this file issues their reads through the bridge,
 * reports every event to the book and keeps the reads that wait.
 *
 * Ownership: the book (one per process, never freed) owns files' chunks.
 * A chunk's gf2_io (NULL context) owns the read buffer while Gluster owns
 * the call (see gf2_async.c); the completion hands the buffer to the
 * book, reports the chunk there and frees the io.  A chunk dropped while
 * its read is in flight (its file went away, or a write overlapped it) is
 * orphaned by the book, and that completion report frees it; the reads
 * waiting on it were woken when it was orphaned (gf2_pf_invalidate).
 * Reads waiting for a chunk are waiters on the file's list, owned by the
 * engine's read request; their destructor unlinks them.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "lib/util/dlinklist.h"
#include "gf2_prefetch.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

struct gf2_pf_waiter;

struct gf2_pf_file {
	struct gf2_pf_file *prev, *next;
	struct file_id id;
	unsigned refs;
	struct gf2_ra_state ra;
	struct gf2_pfb_file *bf;	/* its chunks, in the book */
	struct gf2_pf_waiter *waiters;
};

static struct gf2_pf_file *gf2_pf_files;
static struct gf2_pfb *gf2_pf_bk;
/* reads served at once, that waited for a prefetch, that missed */
static uint64_t gf2_pf_hits, gf2_pf_waits, gf2_pf_misses;

/* A chunk freed unread: count it for the share that read it ahead. */
static void gf2_pf_unused(void *owner, uint64_t bytes)
{
	struct gf2_stats *st = owner;

	st->c.prefetch_unused += bytes;
	gf2_stats_changed(st);
}

/*
 * The book of this process, made on first use.  Its cap is 0 until the
 * first tree connect with prefetch on sets it (gf2_pf_set_cap).
 */
static struct gf2_pfb *gf2_pf_book(void)
{
	if (gf2_pf_bk == NULL) {
		gf2_pf_bk = gf2_pfb_new(NULL, GF2_PF_CHUNK, 0, gf2_pf_unused);
	}
	return gf2_pf_bk;
}

/*
 * What the budget holds goes to the counters of the shares (gf2_stats.c)
 * after every change of it.
 */
static void gf2_pf_sync_stats(void)
{
	const struct gf2_pfb_stats *s = gf2_pfb_stats(gf2_pf_bk);

	gf2_stats_mem(s->used, s->wc_used, s->peak);
}

void gf2_pf_set_cap(uint64_t cap)
{
	struct gf2_pfb *b = gf2_pf_book();

	if (b != NULL) {
		gf2_pfb_set_cap(b, cap);
	}
}

uint64_t gf2_pf_mem_avail(void)
{
	struct gf2_pfb *b = gf2_pf_book();

	return b != NULL ? gf2_pfb_avail(b) : 0;
}

void gf2_pf_mem_take(uint64_t n)
{
	gf2_pfb_take(gf2_pf_book(), n);
	gf2_pf_sync_stats();
}

void gf2_pf_mem_give(uint64_t n)
{
	gf2_pfb_give(gf2_pf_book(), n);
	gf2_pf_sync_stats();
}

static void gf2_pf_wake(struct gf2_pf_file *pf);

struct gf2_pf_file *gf2_pf_file_find(const struct file_id *id)
{
	struct gf2_pf_file *pf = NULL;

	for (pf = gf2_pf_files; pf != NULL; pf = pf->next) {
		if (pf->id.devid == id->devid && pf->id.inode == id->inode &&
		    pf->id.extid == id->extid) {
			pf->refs += 1;
			return pf;
		}
	}
	return NULL;
}

struct gf2_pf_file *gf2_pf_file_get(const struct file_id *id)
{
	struct gf2_pf_file *pf = gf2_pf_file_find(id);

	if (pf != NULL) {
		return pf;
	}
	if (gf2_pf_book() == NULL) {
		return NULL;
	}
	pf = talloc_zero(NULL, struct gf2_pf_file);
	if (pf == NULL) {
		return NULL;
	}
	pf->bf = gf2_pfb_file_new(gf2_pf_bk, pf);
	if (pf->bf == NULL) {
		TALLOC_FREE(pf);
		return NULL;
	}
	pf->id = *id;
	pf->refs = 1;
	gf2_ra_init(&pf->ra);
	DLIST_ADD(gf2_pf_files, pf);
	return pf;
}

struct gf2_pf_file *gf2_pf_file_of(struct gf2_pf_file **slot,
				   const struct file_id *id, bool enabled)
{
	if (slot == NULL) {
		return NULL;
	}
	if (*slot == NULL) {
		*slot = enabled ? gf2_pf_file_get(id) : gf2_pf_file_find(id);
	}
	return *slot;
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
	if (DEBUGLVL(DBGLVL_INFO)) {
		const struct gf2_pfb_stats *s = gf2_pfb_stats(gf2_pf_bk);

		DBG_INFO("prefetch totals: issued %" PRIu64 ", arrived %"
			 PRIu64 ", served %" PRIu64 ", wasted %" PRIu64
			 ", expired %" PRIu64 ", invalidated %" PRIu64
			 " (%" PRIu64 " upcalls), held %" PRIu64 "; reads: %"
			 PRIu64 " hits, %" PRIu64 " waits, %" PRIu64
			 " misses\n", s->issued, s->completed, s->served,
			 s->wasted, s->expired, s->invalidated,
			 gf2_upcall_count(), s->used, gf2_pf_hits,
			 gf2_pf_waits, gf2_pf_misses);
	}
	/* Chunks still in flight are orphaned: their completion frees them. */
	gf2_pfb_file_free(pf->bf);
	pf->bf = NULL;
	gf2_pf_sync_stats();
	DLIST_REMOVE(gf2_pf_files, pf);
	TALLOC_FREE(pf);
}

/*
 * Drop prefetched data overlapping [off, off + len) (len 0: to the end of
 * the file), and make reads in flight useless: called before a write,
 * truncate or allocation change is sent to Gluster, and for upcalls.
 *
 * A read waiting on a dropped chunk still in flight is woken here, at
 * once: the chunk is orphaned, no completion of it will be reported for
 * the file, and the file may have no other chunk in flight whose
 * completion would wake it.  Woken, it is served from what is left or
 * read from Gluster (gf2_pf_wake).  So no waiter ever waits on an
 * orphan, and an orphan's completion owes no wake.
 */
void gf2_pf_invalidate(struct gf2_pf_file *pf, uint64_t off, uint64_t len)
{
	unsigned dropped_in_flight = gf2_pfb_invalidate(pf->bf, off, len);

	gf2_pf_sync_stats();
	if (len == 0) {
		gf2_ra_reset(&pf->ra);
	}
	if (dropped_in_flight > 0) {
		gf2_pf_wake(pf);
	}
}

void gf2_pf_invalidate_inode(uint64_t ino, bool all)
{
	struct gf2_pf_file *pf = NULL;

	for (pf = gf2_pf_files; pf != NULL; pf = pf->next) {
		if (all || pf->id.inode == ino) {
			/* keep the streams: the next read refills */
			gf2_pf_invalidate(pf, 0, UINT64_MAX);
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
	gf2_pfb_write_begin(pf->bf);
	gf2_pf_invalidate(pf, off, len);
}

void gf2_pf_write_end(struct gf2_pf_file *pf)
{
	SMB_ASSERT(gf2_pfb_writes_inflight(pf->bf) > 0);
	gf2_pfb_write_end(pf->bf);
	gf2_pf_file_put(pf);
}

/*
 * Drop ready chunks whose read was issued more than max_age ago, in every
 * file of the process.
 */
static void gf2_pf_expire(const struct gf2_pf_config *cfg)
{
	gf2_pfb_expire(gf2_pf_bk, gf2_now_ns(), cfg->max_age_ms);
	gf2_pf_sync_stats();
}

static void gf2_pf_chunk_done(struct gf2_io *io);

static void gf2_pf_issue(struct tevent_context *ev, struct gf2_fh *fh,
			 struct gf2_pf_file *pf, uint64_t off, uint64_t len)
{
	uint64_t pos = off;
	uint64_t clen = 0;

	while (gf2_pfb_next(pf->bf, &pos, off + len, &clen)) {
		struct gf2_pfb_chunk *c = NULL;
		struct gf2_io *io = NULL;
		uint64_t now_ns = gf2_now_ns();
		int err;

		/* The io owns the buffer until the completion (gf2_async.c). */
		io = gf2_io_new(ev, fh, GF2_IO_READ, gf2_pf_chunk_done, NULL);
		if (io == NULL) {
			break;
		}
		io->buf = talloc_size(io, clen);
		io->buflen = clen;
		if (io->buf == NULL) {
			TALLOC_FREE(io);
			break;
		}
		c = gf2_pfb_chunk_new(pf->bf, pos, clen, fh->st, now_ns);
		if (c == NULL) {
			TALLOC_FREE(io);
			break;
		}
		io->private_data = c;

		err = gf2_io_submit(io, NULL, clen, pos);
		if (err != 0) {
			TALLOC_FREE(io);
			gf2_pfb_cancel(c);
			break;
		}
		gf2_pfb_submitted(c);
		if (fh->st != NULL) {
			fh->st->c.prefetch_bytes += clen;
		}
		pos += clen;
	}
	gf2_pf_sync_stats();
}

static enum gf2_pfb_serve gf2_pf_serve(struct gf2_pf_file *pf,
				       uint8_t *data, uint64_t off,
				       uint64_t n, uint64_t *got)
{
	enum gf2_pfb_serve r = gf2_pfb_serve(pf->bf, data, off, n, got);

	gf2_pf_sync_stats();
	return r;
}

/* A read waiting for a chunk in flight (gf2_pf_wait). */
struct gf2_pf_waiter {
	struct gf2_pf_waiter *prev, *next;
	struct gf2_pf_file *pf;	/* NULL once unlinked */
	uint8_t *data;
	uint64_t off;
	uint64_t n;
	void (*fn)(void *arg, enum gf2_pfb_serve r, uint64_t got);
	void *arg;
};

static int gf2_pf_waiter_destructor(struct gf2_pf_waiter *w)
{
	if (w->pf != NULL) {
		DLIST_REMOVE(w->pf->waiters, w);
		w->pf = NULL;
	}
	return 0;
}

struct gf2_pf_waiter *gf2_pf_wait(TALLOC_CTX *mem_ctx,
				  struct gf2_pf_file *pf, uint8_t *data,
				  uint64_t off, uint64_t n,
				  void (*fn)(void *arg, enum gf2_pfb_serve r,
					     uint64_t got),
				  void *arg)
{
	struct gf2_pf_waiter *w = talloc_zero(mem_ctx, struct gf2_pf_waiter);

	if (w == NULL) {
		return NULL;
	}
	*w = (struct gf2_pf_waiter) {
		.pf = pf, .data = data, .off = off, .n = n, .fn = fn,
		.arg = arg,
	};
	talloc_set_destructor(w, gf2_pf_waiter_destructor);
	DLIST_ADD_END(pf->waiters, w);
	return w;
}

/*
 * Try again for every read waiting on this file: one that can be served
 * now, or must go to Gluster, is unlinked and told.
 */
static void gf2_pf_wake(struct gf2_pf_file *pf)
{
	struct gf2_pf_waiter *w = NULL;
	struct gf2_pf_waiter *next = NULL;

	for (w = pf->waiters; w != NULL; w = next) {
		enum gf2_pfb_serve r;
		uint64_t got = 0;

		next = w->next;
		r = gf2_pf_serve(pf, w->data, w->off, w->n, &got);
		if (r == GF2_PFB_WAIT) {
			continue;
		}
		DLIST_REMOVE(pf->waiters, w);
		w->pf = NULL;
		w->fn(w->arg, r, got);
	}
}

static void gf2_pf_chunk_done(struct gf2_io *io)
{
	struct gf2_pfb_chunk *c = io->private_data;
	struct gf2_pfb_file *bf = gf2_pfb_chunk_file(c); /* NULL: orphan */
	enum gf2_pfb_done r;

	/* Takes io->buf if it keeps the data; frees c otherwise. */
	r = gf2_pfb_complete(c, io->ret, &io->buf);
	TALLOC_FREE(io);
	gf2_pf_sync_stats();
	if (r == GF2_PFB_ORPHAN) {
		/* its waiters were woken when it was orphaned */
		return;
	}
	gf2_pf_wake(gf2_pfb_file_private(bf));
}

enum gf2_pfb_serve gf2_pf_answer(struct gf2_pf_file *pf,
				 const struct gf2_pf_config *cfg,
				 struct tevent_context *ev, struct gf2_fh *fh,
				 uint8_t *data, uint64_t off, uint64_t n,
				 uint64_t file_size, uint64_t *got)
{
	struct gf2_ra_decision d;
	enum gf2_pfb_serve r;
	uint64_t now_ms;
	uint64_t avail;

	*got = 0;
	gf2_pf_expire(cfg);
	avail = gf2_pfb_avail(gf2_pf_bk);
	now_ms = gf2_now_ms() + 1;
	gf2_ra_on_read(&pf->ra, &cfg->ra, off, n, file_size, avail, now_ms,
		       &d);
	if (d.len > 0 && gf2_pfb_writes_inflight(pf->bf) == 0) {
		gf2_pf_issue(ev, fh, pf, d.off, d.len);
	}

	r = gf2_pf_serve(pf, data, off, n, got);
	switch (r) {
	case GF2_PFB_SERVED:
		gf2_pf_hits += 1;
		break;
	case GF2_PFB_WAIT:
		gf2_pf_waits += 1;
		break;
	case GF2_PFB_MISS:
		gf2_pf_misses += 1;
		if (d.sequential) {
			/* its data expired or was dropped: refill */
			gf2_ra_on_miss(&pf->ra, d.stream);
		}
		break;
	}
	return r;
}
