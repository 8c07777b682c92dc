/*
 * Unit tests for the bookkeeping of prefetched data (source/gf2_pfbook.c).
 *
 * A fake gfapi stands in for Gluster: it records the reads the tests
 * issue (as source/gf2_prefetch.c does: a talloc buffer per read, owned
 * by the read until its completion is reported) and completes them later
 * in any order, with the file's bytes up to its size, or an error.  Run
 * under valgrind or ASan: orphans must be freed exactly once, at their
 * completion.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "gf2_pfbook.h"

#define CH 16			/* the book's chunk size in these tests */
#define MS 1000000ULL		/* ns */
#define MAX_READS 4096

static int OWNER;		/* the share that reads ahead */

static uint64_t unused_bytes;

static void count_unused(void *owner, uint64_t bytes)
{
	assert_ptr_equal(owner, &OWNER);
	unused_bytes += bytes;
}

/* The file's byte at pos. */
static uint8_t byte_at(uint64_t pos)
{
	return (uint8_t)(pos * 31 + 7);
}

enum outcome {
	OK,		/* the file's bytes up to its size */
	FAIL,		/* an error */
};

struct fake_read {
	struct gf2_pfb_chunk *c;
	uint64_t off;
	uint64_t len;
	uint8_t *buf;
	bool done;
};

struct fake_gfapi {
	struct fake_read r[MAX_READS];
	unsigned n;
	uint64_t size;		/* the file ends here */
	bool refuse;		/* submissions fail */
};

static struct fake_gfapi G;

static struct gf2_pfb *setup_book(uint64_t cap, uint64_t size)
{
	struct gf2_pfb *b = gf2_pfb_new(NULL, CH, cap, count_unused);

	assert_non_null(b);
	memset(&G, 0, sizeof(G));
	G.size = size;
	unused_bytes = 0;
	return b;
}

/*
 * Issue the window [off, off + len) as gf2_prefetch.c does.  Returns how
 * many reads were submitted.
 */
static unsigned issue(struct gf2_pfb_file *f, uint64_t off, uint64_t len,
		      uint64_t now_ns)
{
	uint64_t pos = off;
	uint64_t clen = 0;
	unsigned n = 0;

	while (gf2_pfb_next(f, &pos, off + len, &clen)) {
		struct fake_read *r = NULL;
		uint8_t *buf = talloc_size(NULL, clen);
		struct gf2_pfb_chunk *c = NULL;

		assert_non_null(buf);
		assert_true(clen > 0 && clen <= CH);
		c = gf2_pfb_chunk_new(f, pos, clen, &OWNER, now_ns);
		assert_non_null(c);
		if (G.refuse) {
			talloc_free(buf);
			gf2_pfb_cancel(c);
			break;
		}
		assert_true(G.n < MAX_READS);
		r = &G.r[G.n++];
		r->c = c;
		r->off = pos;
		r->len = clen;
		r->buf = buf;
		r->done = false;
		gf2_pfb_submitted(c);
		pos += clen;
		n += 1;
	}
	return n;
}

/* Gluster answers read i. */
static enum gf2_pfb_done complete(unsigned i, enum outcome o)
{
	struct fake_read *r = &G.r[i];
	enum gf2_pfb_done d;
	ssize_t ret = -1;

	assert_true(i < G.n);
	assert_false(r->done);
	if (o == OK) {
		uint64_t k;

		ret = 0;
		for (k = 0; k < r->len && r->off + k < G.size; k++) {
			r->buf[k] = byte_at(r->off + k);
			ret += 1;
		}
	}
	d = gf2_pfb_complete(r->c, ret, &r->buf);
	if (d == GF2_PFB_READY) {
		assert_null(r->buf);
	}
	/* the read's own buffer goes with it, as a gf2_io's does */
	TALLOC_FREE(r->buf);
	r->done = true;
	r->c = NULL;
	return d;
}

/* Serve [off, off + n) and check what was copied. */
static enum gf2_pfb_serve serve(struct gf2_pfb_file *f, uint64_t off,
				uint64_t n, uint64_t *got)
{
	uint8_t buf[4 * CH * 8];
	enum gf2_pfb_serve s;
	uint64_t k;

	assert_true(n <= sizeof(buf));
	memset(buf, 0xee, sizeof(buf));
	*got = UINT64_MAX;
	s = gf2_pfb_serve(f, buf, off, n, got);
	if (s != GF2_PFB_SERVED) {
		assert_int_equal(*got, UINT64_MAX);
		return s;
	}
	assert_true(*got <= n);
	for (k = 0; k < *got; k++) {
		assert_int_equal(buf[k], byte_at(off + k));
	}
	for (; k < n; k++) {
		assert_int_equal(buf[k], 0xee);
	}
	return s;
}

static uint64_t used(const struct gf2_pfb *b)
{
	return gf2_pfb_stats(b)->used;
}

/* No byte held, and nothing left in the book but its files. */
static void assert_empty(struct gf2_pfb *b, unsigned files)
{
	assert_int_equal(used(b), 0);
	assert_int_equal(talloc_total_blocks(b), 1 + files);
}

static void test_issue_cuts_around_chunks(void **state)
{
	struct gf2_pfb *b = setup_book(1024, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	uint64_t pos, len;
	unsigned i, j;

	/* a window is cut at the chunk size */
	assert_int_equal(issue(f, 0, 40, 0), 3);
	assert_int_equal(G.r[0].off, 0);
	assert_int_equal(G.r[0].len, 16);
	assert_int_equal(G.r[1].off, 16);
	assert_int_equal(G.r[2].off, 32);
	assert_int_equal(G.r[2].len, 8);
	/* an overlapping window skips what is covered */
	assert_int_equal(issue(f, 8, 64, 0), 2);
	assert_int_equal(G.r[3].off, 40);
	assert_int_equal(G.r[3].len, 16);
	assert_int_equal(G.r[4].off, 56);
	assert_int_equal(G.r[4].len, 16);
	/* and a covered window issues nothing */
	assert_int_equal(issue(f, 0, 72, 0), 0);
	pos = 3;
	assert_false(gf2_pfb_next(f, &pos, 72, &len));
	assert_int_equal(pos, 72);

	/* a gap is cut where a chunk starts, and the chunk is skipped */
	assert_int_equal(issue(f, 100, 6, 0), 1);	/* [100, 106) */
	assert_int_equal(issue(f, 90, 30, 0), 2);
	assert_int_equal(G.r[6].off, 90);
	assert_int_equal(G.r[6].len, 10);
	assert_int_equal(G.r[7].off, 106);
	assert_int_equal(G.r[7].len, 14);

	/* no two chunks overlap */
	for (i = 0; i < G.n; i++) {
		for (j = i + 1; j < G.n; j++) {
			assert_true(G.r[i].off + G.r[i].len <= G.r[j].off ||
				    G.r[j].off + G.r[j].len <= G.r[i].off);
		}
	}
	assert_int_equal(used(b), 72 + 6 + 24);
	assert_int_equal(gf2_pfb_stats(b)->issued, 72 + 6 + 24);

	/* freed with everything in flight: the orphans go at completion */
	gf2_pfb_file_free(f);
	assert_int_equal(used(b), 102);
	for (i = 0; i < G.n; i++) {
		assert_int_equal(complete(i, OK), GF2_PFB_ORPHAN);
	}
	assert_empty(b, 0);
	assert_int_equal(unused_bytes, 102);
	talloc_free(b);
}

static void test_serve_hit_wait_miss(void **state)
{
	struct gf2_pfb *b = setup_book(1024, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	uint64_t got;

	assert_int_equal(issue(f, 0, 32, 0), 2);
	assert_int_equal(serve(f, 0, 8, &got), GF2_PFB_WAIT);
	/* the second read lands first */
	assert_int_equal(complete(1, OK), GF2_PFB_READY);
	assert_int_equal(serve(f, 0, 8, &got), GF2_PFB_WAIT);
	assert_int_equal(serve(f, 16, 8, &got), GF2_PFB_SERVED);
	assert_int_equal(got, 8);
	/* partly in flight: wait; partly not prefetched: miss */
	assert_int_equal(serve(f, 8, 16, &got), GF2_PFB_WAIT);
	assert_int_equal(serve(f, 8, 32, &got), GF2_PFB_MISS);
	assert_int_equal(serve(f, 24, 16, &got), GF2_PFB_MISS);
	assert_int_equal(serve(f, 40, 8, &got), GF2_PFB_MISS);
	assert_int_equal(complete(0, OK), GF2_PFB_READY);
	/* across both chunks */
	assert_int_equal(serve(f, 4, 20, &got), GF2_PFB_SERVED);
	assert_int_equal(got, 20);
	assert_int_equal(gf2_pfb_stats(b)->served, 28);
	assert_int_equal(gf2_pfb_stats(b)->completed, 32);

	gf2_pfb_file_free(f);
	assert_empty(b, 0);
	talloc_free(b);
}

static void test_serve_eof(void **state)
{
	struct gf2_pfb *b = setup_book(1024, 20);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	uint64_t got;

	/* the file ends inside the second chunk */
	assert_int_equal(issue(f, 0, 32, 0), 2);
	assert_int_equal(complete(0, OK), GF2_PFB_READY);
	assert_int_equal(complete(1, OK), GF2_PFB_READY);
	assert_int_equal(gf2_pfb_stats(b)->completed, 20);
	/* at and after the end, inside the chunk: nothing, served */
	assert_int_equal(serve(f, 20, 10, &got), GF2_PFB_SERVED);
	assert_int_equal(got, 0);
	assert_int_equal(serve(f, 25, 4, &got), GF2_PFB_SERVED);
	assert_int_equal(got, 0);
	assert_int_equal(serve(f, 30, 4, &got), GF2_PFB_SERVED);
	assert_int_equal(got, 0);
	/* beyond the chunk that saw the end: not prefetched */
	assert_int_equal(serve(f, 32, 4, &got), GF2_PFB_MISS);
	assert_int_equal(used(b), 32);
	/* up to the end: short, and the last chunk is consumed */
	assert_int_equal(serve(f, 12, 16, &got), GF2_PFB_SERVED);
	assert_int_equal(got, 8);
	assert_int_equal(used(b), 16);
	assert_int_equal(serve(f, 20, 4, &got), GF2_PFB_MISS);
	gf2_pfb_file_free(f);
	assert_empty(b, 0);
	talloc_free(b);

	/* the file ends where a chunk ends: the next one holds nothing */
	b = setup_book(1024, 32);
	f = gf2_pfb_file_new(b, NULL);
	assert_int_equal(issue(f, 0, 48, 0), 3);
	assert_int_equal(complete(2, OK), GF2_PFB_READY);
	assert_int_equal(complete(1, OK), GF2_PFB_READY);
	assert_int_equal(serve(f, 16, 8, &got), GF2_PFB_SERVED);
	assert_int_equal(serve(f, 24, 16, &got), GF2_PFB_SERVED);
	assert_int_equal(got, 8);
	/* both chunks consumed, the empty one too */
	assert_int_equal(used(b), 16);
	assert_int_equal(serve(f, 32, 4, &got), GF2_PFB_MISS);
	assert_int_equal(serve(f, 0, 8, &got), GF2_PFB_WAIT);
	gf2_pfb_file_free(f);
	assert_int_equal(complete(0, OK), GF2_PFB_ORPHAN);
	assert_empty(b, 0);
	talloc_free(b);
}

static void test_consume_frees_memory(void **state)
{
	struct gf2_pfb *b = setup_book(1024, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	uint64_t got;

	assert_int_equal(issue(f, 0, 48, 0), 3);
	assert_int_equal(used(b), 48);
	assert_int_equal(complete(0, OK), GF2_PFB_READY);
	assert_int_equal(complete(1, OK), GF2_PFB_READY);
	assert_int_equal(complete(2, OK), GF2_PFB_READY);
	assert_int_equal(used(b), 48);
	/* a read to a chunk's end consumes it */
	assert_int_equal(serve(f, 0, 16, &got), GF2_PFB_SERVED);
	assert_int_equal(used(b), 32);
	assert_int_equal(serve(f, 0, 4, &got), GF2_PFB_MISS);
	/* a part of a chunk does not */
	assert_int_equal(serve(f, 16, 8, &got), GF2_PFB_SERVED);
	assert_int_equal(used(b), 32);
	assert_int_equal(serve(f, 24, 8, &got), GF2_PFB_SERVED);
	assert_int_equal(used(b), 16);
	/* half of the last chunk read, then the file goes: half wasted */
	assert_int_equal(serve(f, 32, 8, &got), GF2_PFB_SERVED);
	assert_int_equal(gf2_pfb_stats(b)->wasted, 0);
	assert_int_equal(unused_bytes, 0);
	gf2_pfb_file_free(f);
	assert_int_equal(gf2_pfb_stats(b)->wasted, 8);
	assert_int_equal(unused_bytes, 8);
	assert_int_equal(gf2_pfb_stats(b)->served, 40);
	assert_empty(b, 0);
	talloc_free(b);
}

static void test_invalidate_ready_and_in_flight(void **state)
{
	struct gf2_pfb *b = setup_book(1024, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	uint64_t got;

	assert_int_equal(issue(f, 0, 48, 0), 3);
	assert_int_equal(complete(0, OK), GF2_PFB_READY);
	/* drop the chunk in flight in the middle: orphaned */
	assert_int_equal(gf2_pfb_invalidate(f, 20, 4), 1);
	assert_int_equal(gf2_pfb_stats(b)->invalidated, 16);
	assert_null(gf2_pfb_chunk_file(G.r[1].c));
	assert_ptr_equal(gf2_pfb_chunk_file(G.r[2].c), f);
	/* held until Gluster gives its buffer back */
	assert_int_equal(used(b), 48);
	assert_int_equal(serve(f, 16, 8, &got), GF2_PFB_MISS);
	assert_int_equal(serve(f, 0, 8, &got), GF2_PFB_SERVED);
	/* a range that touches no chunk drops nothing */
	assert_int_equal(gf2_pfb_invalidate(f, 16, 16), 0);
	assert_int_equal(gf2_pfb_invalidate(f, 48, 100), 0);
	assert_int_equal(complete(1, OK), GF2_PFB_ORPHAN);
	assert_int_equal(used(b), 32);
	/* to the end: the ready chunk is freed, the other orphaned */
	assert_int_equal(gf2_pfb_invalidate(f, 4, 0), 1);
	assert_int_equal(used(b), 16);
	assert_int_equal(gf2_pfb_stats(b)->wasted, 8);
	assert_int_equal(gf2_pfb_stats(b)->invalidated, 48);
	assert_int_equal(serve(f, 8, 8, &got), GF2_PFB_MISS);
	/* an orphan whose read failed is freed all the same */
	assert_int_equal(complete(2, FAIL), GF2_PFB_ORPHAN);
	assert_empty(b, 1);
	/* what arrived and was dropped, and what never arrived */
	assert_int_equal(unused_bytes, 8 + 16 + 16);
	assert_int_equal(gf2_pfb_stats(b)->completed, 16);
	gf2_pfb_file_free(f);
	assert_empty(b, 0);
	talloc_free(b);
}

static void test_generation_and_writes_in_flight(void **state)
{
	struct gf2_pfb *b = setup_book(1024, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	uint64_t got;

	/* a write elsewhere in the file still loses the read in flight */
	assert_int_equal(issue(f, 0, 16, 0), 1);
	assert_int_equal(gf2_pfb_invalidate(f, 100, 10), 0);
	assert_int_equal(complete(0, OK), GF2_PFB_REJECTED);
	assert_int_equal(used(b), 0);
	assert_int_equal(unused_bytes, 16);
	assert_int_equal(gf2_pfb_stats(b)->completed, 0);

	/* a read landing while a write is in flight is thrown away */
	assert_int_equal(issue(f, 0, 16, 0), 1);
	gf2_pfb_write_begin(f);
	assert_int_equal(gf2_pfb_writes_inflight(f), 1);
	assert_int_equal(complete(1, OK), GF2_PFB_REJECTED);
	assert_int_equal(serve(f, 0, 16, &got), GF2_PFB_MISS);
	/* a read issued during the write lands after it: its end moved on */
	assert_int_equal(issue(f, 0, 16, 0), 1);
	gf2_pfb_write_end(f);
	assert_int_equal(gf2_pfb_writes_inflight(f), 0);
	assert_int_equal(complete(2, OK), GF2_PFB_REJECTED);

	/* two writes: rejected until both ended */
	assert_int_equal(issue(f, 0, 16, 0), 1);
	gf2_pfb_write_begin(f);
	gf2_pfb_write_begin(f);
	gf2_pfb_write_end(f);
	assert_int_equal(complete(3, OK), GF2_PFB_REJECTED);
	gf2_pfb_write_end(f);

	/* a failed read is rejected; a read after the writes is kept */
	assert_int_equal(issue(f, 0, 32, 0), 2);
	assert_int_equal(complete(5, FAIL), GF2_PFB_REJECTED);
	assert_int_equal(complete(4, OK), GF2_PFB_READY);
	assert_int_equal(serve(f, 0, 16, &got), GF2_PFB_SERVED);
	assert_int_equal(got, 16);
	assert_int_equal(serve(f, 16, 16, &got), GF2_PFB_MISS);
	assert_int_equal(unused_bytes, 16 * 5);
	assert_empty(b, 1);
	gf2_pfb_file_free(f);
	talloc_free(b);
}

static void test_expiry_by_age(void **state)
{
	struct gf2_pfb *b = setup_book(1024, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	struct gf2_pfb_file *g = gf2_pfb_file_new(b, NULL);
	uint64_t got;

	assert_int_equal(issue(f, 0, 16, 10 * MS), 1);
	assert_int_equal(issue(f, 16, 16, 15 * MS), 1);
	assert_int_equal(issue(g, 0, 16, 10 * MS), 1);
	/* stays in flight */
	assert_int_equal(issue(f, 32, 16, 10 * MS), 1);
	assert_int_equal(complete(0, OK), GF2_PFB_READY);
	assert_int_equal(complete(1, OK), GF2_PFB_READY);
	assert_int_equal(complete(2, OK), GF2_PFB_READY);
	assert_int_equal(serve(f, 0, 4, &got), GF2_PFB_SERVED);

	/* whole milliseconds: 1000.999 ms old is not older than 1000 */
	gf2_pfb_expire(b, 1010 * MS, 1000);
	gf2_pfb_expire(b, 1011 * MS - 1, 1000);
	assert_int_equal(used(b), 64);
	/* in every file; a read in flight never expires */
	gf2_pfb_expire(b, 1011 * MS, 1000);
	assert_int_equal(used(b), 32);
	assert_int_equal(gf2_pfb_stats(b)->expired, 12 + 16);
	assert_int_equal(serve(f, 4, 4, &got), GF2_PFB_MISS);
	assert_int_equal(serve(g, 0, 4, &got), GF2_PFB_MISS);
	assert_int_equal(serve(f, 16, 4, &got), GF2_PFB_SERVED);
	gf2_pfb_expire(b, 1016 * MS, 1000);
	assert_int_equal(gf2_pfb_stats(b)->expired, 12 + 16 + 12);
	assert_int_equal(used(b), 16);
	assert_int_equal(serve(f, 32, 4, &got), GF2_PFB_WAIT);

	/* a clock that went backwards counts as old */
	assert_int_equal(complete(3, OK), GF2_PFB_READY);
	gf2_pfb_expire(b, 9 * MS, 1000);
	assert_empty(b, 2);
	gf2_pfb_file_free(f);
	gf2_pfb_file_free(g);
	assert_empty(b, 0);
	talloc_free(b);
}

static void test_memory_accounting(void **state)
{
	struct gf2_pfb *b = setup_book(64, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	uint64_t got;
	unsigned i;

	assert_int_equal(gf2_pfb_avail(b), 64);
	assert_int_equal(issue(f, 0, 48, 0), 3);
	assert_int_equal(gf2_pfb_avail(b), 16);
	/* the cap only shrinks while nothing is held */
	gf2_pfb_set_cap(b, 32);
	assert_int_equal(gf2_pfb_avail(b), 16);
	gf2_pfb_set_cap(b, 128);
	assert_int_equal(gf2_pfb_avail(b), 80);
	/* the book does not cut windows: the caller sizes them by avail */
	assert_int_equal(issue(f, 48, 96, 0), 6);
	assert_int_equal(gf2_pfb_avail(b), 0);
	gf2_pfb_set_cap(b, 32);
	assert_int_equal(gf2_pfb_avail(b), 0);

	/* a submission refused: its chunk is dropped at once */
	G.refuse = true;
	assert_int_equal(issue(f, 200, 16, 0), 0);
	G.refuse = false;
	assert_int_equal(used(b), 144);
	assert_int_equal(gf2_pfb_stats(b)->issued, 144);
	assert_int_equal(unused_bytes, 16);

	for (i = G.n; i-- > 0;) {
		assert_int_equal(complete(i, OK), GF2_PFB_READY);
	}
	assert_int_equal(serve(f, 0, 144, &got), GF2_PFB_SERVED);
	assert_int_equal(got, 144);
	assert_empty(b, 1);
	gf2_pfb_set_cap(b, 32);
	assert_int_equal(gf2_pfb_avail(b), 32);
	assert_int_equal(gf2_pfb_stats(b)->wasted, 0);
	assert_int_equal(unused_bytes, 16);
	gf2_pfb_file_free(f);
	assert_empty(b, 0);
	talloc_free(b);
}

/* The write cache's bytes count in the same budget as prefetch's. */
static void test_shared_budget(void **state)
{
	struct gf2_pfb *b = setup_book(64, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	unsigned i;

	gf2_pfb_take(b, 40);
	assert_int_equal(gf2_pfb_avail(b), 24);
	assert_int_equal(gf2_pfb_stats(b)->wc_used, 40);
	/* prefetch sizes its window by what is left */
	assert_int_equal(issue(f, 0, gf2_pfb_avail(b), 0), 2);
	assert_int_equal(gf2_pfb_avail(b), 0);
	gf2_pfb_give(b, 40);
	assert_int_equal(gf2_pfb_avail(b), 40);
	assert_int_equal(gf2_pfb_stats(b)->wc_used, 0);
	for (i = G.n; i-- > 0;) {
		complete(i, OK);
	}
	gf2_pfb_file_free(f);
	assert_empty(b, 0);
	talloc_free(b);
}

/*
 * The peak is the most the budget has held, prefetch's chunks and the
 * write cache's bytes together; it never goes down.
 */
static void test_peak(void **state)
{
	struct gf2_pfb *b = setup_book(64, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	uint64_t got;
	unsigned i;

	assert_int_equal(gf2_pfb_stats(b)->peak, 0);
	assert_int_equal(issue(f, 0, 32, 0), 2);
	assert_int_equal(gf2_pfb_stats(b)->peak, 32);
	gf2_pfb_take(b, 24);
	assert_int_equal(gf2_pfb_stats(b)->peak, 56);
	gf2_pfb_give(b, 24);
	gf2_pfb_take(b, 8);
	assert_int_equal(used(b), 40);
	assert_int_equal(gf2_pfb_stats(b)->peak, 56);
	/* a refused submission held its chunk for a moment */
	G.refuse = true;
	assert_int_equal(issue(f, 32, 16, 0), 0);
	G.refuse = false;
	assert_int_equal(gf2_pfb_stats(b)->peak, 56);
	assert_int_equal(issue(f, 32, 24, 0), 2);
	assert_int_equal(used(b), 64);
	assert_int_equal(gf2_pfb_stats(b)->peak, 64);
	for (i = G.n; i-- > 0;) {
		assert_int_equal(complete(i, OK), GF2_PFB_READY);
	}
	assert_int_equal(serve(f, 0, 56, &got), GF2_PFB_SERVED);
	gf2_pfb_give(b, 8);
	assert_empty(b, 1);
	assert_int_equal(gf2_pfb_stats(b)->peak, 64);
	gf2_pfb_file_free(f);
	assert_empty(b, 0);
	talloc_free(b);
}

static void test_file_free_with_reads_in_flight(void **state)
{
	struct gf2_pfb *b = setup_book(1024, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, &OWNER);
	struct gf2_pfb_file *g = gf2_pfb_file_new(b, NULL);
	struct gf2_pfb_file *h = gf2_pfb_file_new(b, NULL);
	uint64_t got;

	assert_ptr_equal(gf2_pfb_file_private(f), &OWNER);
	assert_int_equal(issue(f, 0, 48, 0), 3);
	assert_int_equal(issue(g, 0, 16, 0), 1);
	assert_ptr_equal(gf2_pfb_chunk_file(G.r[3].c), g);
	assert_int_equal(complete(1, OK), GF2_PFB_READY);
	/* the ready chunk goes, the two in flight are orphaned */
	gf2_pfb_file_free(f);
	assert_int_equal(used(b), 48);
	assert_int_equal(gf2_pfb_stats(b)->wasted, 16);
	/* the other files are untouched, the list too (middle, head) */
	assert_int_equal(complete(3, OK), GF2_PFB_READY);
	assert_int_equal(serve(g, 0, 16, &got), GF2_PFB_SERVED);
	gf2_pfb_file_free(h);
	assert_int_equal(complete(2, OK), GF2_PFB_ORPHAN);
	assert_int_equal(complete(0, FAIL), GF2_PFB_ORPHAN);
	assert_empty(b, 1);
	gf2_pfb_expire(b, UINT64_MAX, 0);
	gf2_pfb_file_free(g);
	assert_empty(b, 0);
	talloc_free(b);
}

/*
 * A read waits on a chunk whose read is in flight; a write drops that
 * chunk.  The chunk's completion is an orphan's and names no file, so a
 * caller that wakes a file's waiting reads only on that file's
 * completions never wakes this one: the invalidation's return value is
 * what tells that a wake is due, and the read then learns from
 * gf2_pfb_serve that it must go to Gluster.
 */
static void test_waiter_on_invalidated_chunk_must_retry(void **state)
{
	struct gf2_pfb *b = setup_book(1024, 1024);
	struct gf2_pfb_file *f = gf2_pfb_file_new(b, NULL);
	uint64_t got;

	assert_int_equal(issue(f, 0, 16, 0), 1);
	assert_int_equal(serve(f, 0, 8, &got), GF2_PFB_WAIT);

	gf2_pfb_write_begin(f);
	assert_int_equal(gf2_pfb_invalidate(f, 4, 2), 1);	/* wake due */
	assert_int_equal(serve(f, 0, 8, &got), GF2_PFB_MISS);	/* retry */
	gf2_pfb_write_end(f);

	/* nothing of the file is in flight any more: no other wake comes */
	assert_null(gf2_pfb_chunk_file(G.r[0].c));
	assert_int_equal(complete(0, OK), GF2_PFB_ORPHAN);
	assert_empty(b, 1);
	gf2_pfb_file_free(f);
	talloc_free(b);
}

/*
 * Random issues, completions in any order, invalidations, expiries and
 * reads over a few files: every served byte is the file's, and nothing is
 * left once every read has completed and the files are gone.
 */
static void test_random_histories(void **state)
{
	unsigned seed;

	for (seed = 1; seed <= 40; seed++) {
		struct gf2_pfb *b = setup_book(1 << 20, 700);
		struct gf2_pfb_file *f[3];
		uint64_t now = 0;
		unsigned step, i;

		srandom(seed);
		for (i = 0; i < 3; i++) {
			f[i] = gf2_pfb_file_new(b, NULL);
		}
		for (step = 0; step < 600; step++) {
			struct gf2_pfb_file *x = f[random() % 3];
			uint64_t off = random() % 800;
			uint64_t n = 1 + random() % 60;
			uint64_t got;
			unsigned k;

			now += random() % (3 * MS);
			assert_true(used(b) <= gf2_pfb_stats(b)->peak);
			switch (random() % 8) {
			case 0:
			case 1:
				if (G.n + 64 < MAX_READS) {
					issue(x, off, n, now);
				}
				break;
			case 2:
			case 3:
				/* some pending read, not the oldest */
				k = G.n > 0 ? random() % G.n : 0;
				for (i = 0; i < G.n; i++) {
					unsigned j = (k + i) % G.n;

					if (!G.r[j].done) {
						complete(j, random() % 5 == 0 ?
							 FAIL : OK);
						break;
					}
				}
				break;
			case 4:
				gf2_pfb_invalidate(x, off,
						   random() % 4 == 0 ? 0 : n);
				break;
			case 5:
				gf2_pfb_expire(b, now, 200);
				break;
			default:
				serve(x, off, n, &got);
				break;
			}
		}
		for (i = 0; i < 3; i++) {
			gf2_pfb_file_free(f[i]);
		}
		for (i = 0; i < G.n; i++) {
			if (!G.r[i].done) {
				assert_int_equal(complete(i, OK),
						 GF2_PFB_ORPHAN);
			}
		}
		assert_empty(b, 0);
		talloc_free(b);
	}
}

static void test_zero_chunk_refused(void **state)
{
	assert_null(gf2_pfb_new(NULL, 0, 1024, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_issue_cuts_around_chunks),
		cmocka_unit_test(test_serve_hit_wait_miss),
		cmocka_unit_test(test_serve_eof),
		cmocka_unit_test(test_consume_frees_memory),
		cmocka_unit_test(test_invalidate_ready_and_in_flight),
		cmocka_unit_test(test_generation_and_writes_in_flight),
		cmocka_unit_test(test_expiry_by_age),
		cmocka_unit_test(test_memory_accounting),
		cmocka_unit_test(test_shared_budget),
		cmocka_unit_test(test_peak),
		cmocka_unit_test(test_file_free_with_reads_in_flight),
		cmocka_unit_test(test_waiter_on_invalidated_chunk_must_retry),
		cmocka_unit_test(test_random_histories),
		cmocka_unit_test(test_zero_chunk_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
