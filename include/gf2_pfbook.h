/*
 * glusterfs2: the bookkeeping of prefetched data.
 *
 * Layer: core.
 *
 * Pure bookkeeping (talloc and libc only, no I/O), unit-tested alone
 * (test/unit/test_pfbook.c).  source/gf2_prefetch.c is the other half:
 * it decides what to read ahead, issues the reads through gfapi, keeps
 * the reads waiting for data and reports every event here.
 *
 * One book per process holds the files, the memory cap and the counters.
 * A file holds chunks of at most the book's chunk size, in the order they
 * were issued; chunks of a file never overlap.  A chunk is in flight from
 * gf2_pfb_chunk_new until its read is reported (gf2_pfb_complete), then
 * ready: got bytes of data, fewer than its length when the file ended
 * inside it.
 *
 * Writes: every invalidation and every write's end moves the file's write
 * generation; a read that completes under another generation than the one
 * it was issued in, or while a write is in flight, is thrown away.
 *
 * Memory: a chunk counts its full length against the cap from its issue
 * until it is freed.  A ready chunk is freed when reads have consumed it,
 * when it expires, or when a write or a file's end drops it.
 *
 * Ownership: files and chunks are talloc children of the book, and the
 * caller frees neither: files go with gf2_pfb_file_free, chunks inside
 * the book's calls.  A chunk dropped while its read is in flight
 * (invalidated, or its file freed) is unlinked from its file and
 * orphaned; the orphan belongs to its read, and gf2_pfb_complete (or
 * gf2_pfb_cancel) frees it, exactly once.  So the book must outlive
 * every read in flight.
 */

#ifndef GF2_PFBOOK_H
#define GF2_PFBOOK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <talloc.h>

struct gf2_pfb;
struct gf2_pfb_file;
struct gf2_pfb_chunk;

struct gf2_pfb_stats {
	uint64_t used;		/* bytes held, in flight or ready */
	uint64_t wc_used;	/* of used: the write cache's (gf2_pfb_take) */
	uint64_t peak;		/* the most used has been */
	uint64_t issued;	/* bytes asked for (gf2_pfb_submitted) */
	uint64_t completed;	/* bytes that arrived */
	uint64_t served;	/* bytes served to reads */
	uint64_t wasted;	/* bytes that arrived and were dropped unread */
	uint64_t expired;	/* bytes dropped for age */
	uint64_t invalidated;	/* bytes dropped by invalidations */
};

/*
 * unused_fn (may be NULL) is told, for every chunk freed with an owner,
 * how many of its bytes no read was served: its length while in flight,
 * what arrived once ready.
 */
struct gf2_pfb *gf2_pfb_new(TALLOC_CTX *mem_ctx, uint64_t chunk,
			    uint64_t cap,
			    void (*unused_fn)(void *owner, uint64_t bytes));
const struct gf2_pfb_stats *gf2_pfb_stats(const struct gf2_pfb *b);
/* The cap only grows, except while nothing is held. */
void gf2_pfb_set_cap(struct gf2_pfb *b, uint64_t cap);
/* What is left under the cap. */
uint64_t gf2_pfb_avail(const struct gf2_pfb *b);
/*
 * The write cache's bytes, counted in the same budget: take only what
 * gf2_pfb_avail allows; give back what was taken.
 */
void gf2_pfb_take(struct gf2_pfb *b, uint64_t n);
void gf2_pfb_give(struct gf2_pfb *b, uint64_t n);

struct gf2_pfb_file *gf2_pfb_file_new(struct gf2_pfb *b, void *private_data);
void *gf2_pfb_file_private(const struct gf2_pfb_file *f);
/* Frees the ready chunks, orphans those in flight. */
void gf2_pfb_file_free(struct gf2_pfb_file *f);

/*
 * Drop the chunks overlapping [off, off + len) (len 0: to the end of the
 * file) and move the write generation.  Returns how many of them were in
 * flight: a read waiting on one of those must try gf2_pfb_serve again
 * (it answers MISS for their range now), as no completion will be
 * reported for the file.
 */
unsigned gf2_pfb_invalidate(struct gf2_pfb_file *f, uint64_t off,
			    uint64_t len);
/* A write is sent (no completion is accepted until it ends) / ended. */
void gf2_pfb_write_begin(struct gf2_pfb_file *f);
void gf2_pfb_write_end(struct gf2_pfb_file *f);
unsigned gf2_pfb_writes_inflight(const struct gf2_pfb_file *f);

/*
 * Drop ready chunks of every file whose read was issued more than
 * max_age_ms whole milliseconds before now_ns (a clock that went
 * backwards counts as old).
 */
void gf2_pfb_expire(struct gf2_pfb *b, uint64_t now_ns, uint64_t max_age_ms);

/*
 * Issuing a window [off, end): start with *pos = off; while gf2_pfb_next
 * returns true, issue a chunk of *len bytes at *pos, then add *len to
 * *pos.  It skips what chunks cover, stops where one starts, and cuts at
 * the book's chunk size.
 */
bool gf2_pfb_next(const struct gf2_pfb_file *f, uint64_t *pos, uint64_t end,
		  uint64_t *len);
/*
 * A chunk [off, off + len) whose read is about to be submitted, issued at
 * now_ns, in the file's current write generation.  owner is handed to
 * unused_fn.  NULL: out of memory.
 */
struct gf2_pfb_chunk *gf2_pfb_chunk_new(struct gf2_pfb_file *f, uint64_t off,
					uint64_t len, void *owner,
					uint64_t now_ns);
/* Its file, NULL once orphaned. */
struct gf2_pfb_file *gf2_pfb_chunk_file(const struct gf2_pfb_chunk *c);
/* The read was submitted: count it as issued. */
void gf2_pfb_submitted(struct gf2_pfb_chunk *c);
/* The read could not be submitted: frees c. */
void gf2_pfb_cancel(struct gf2_pfb_chunk *c);

enum gf2_pfb_done {
	GF2_PFB_READY,		/* kept: the file's waiting reads go on */
	GF2_PFB_REJECTED,	/* failed, or written meanwhile: freed; the
				   file's waiting reads must try again */
	GF2_PFB_ORPHAN,		/* dropped while in flight: freed */
};

/*
 * The read of c returned ret (bytes, fewer than asked at EOF; < 0 on
 * error) into *buf, a talloc buffer of the chunk's length: READY takes
 * it (*buf becomes NULL).  c is freed unless READY.
 */
enum gf2_pfb_done gf2_pfb_complete(struct gf2_pfb_chunk *c, ssize_t ret,
				   uint8_t **buf);

enum gf2_pfb_serve {
	GF2_PFB_SERVED,
	GF2_PFB_WAIT,
	GF2_PFB_MISS,
};

/*
 * Serve [off, off + n) if ready chunks hold all of it, or all of it up to
 * the file's end: SERVED with *got bytes copied to data (0 when off is at
 * the end), and the chunks this read finished are freed.  Otherwise MISS
 * if some of it is not prefetched, else WAIT (some of it is in flight).
 */
enum gf2_pfb_serve gf2_pfb_serve(struct gf2_pfb_file *f, uint8_t *data,
				 uint64_t off, uint64_t n, uint64_t *got);

#endif /* GF2_PFBOOK_H */
