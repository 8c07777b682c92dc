/*
 * Unit tests for the readahead state machine (source/gf2_readahead.c).
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "gf2_readahead.h"

#define KiB 1024ULL
#define MiB (1024 * 1024ULL)
#define NOSIZE GF2_RA_SIZE_UNKNOWN
#define LOTS (1ULL << 40)

static struct gf2_ra_config cfg(void)
{
	struct gf2_ra_config c = {
		.init_window = 256 * KiB,
		.max_window = 8 * MiB,
		.min_window = 64 * KiB,
		.streams = 4,
	};
	return c;
}

static const struct gf2_ra_config cfg_default = {
	.init_window = 256 * KiB,
	.max_window = 8 * MiB,
	.min_window = 64 * KiB,
	.streams = 4,
};

/* Issued windows, to check that reads were prefetched in time. */
struct issued {
	uint64_t off[4096];
	uint64_t len[4096];
	size_t n;
	uint64_t bytes;
};

static void note(struct issued *is, const struct gf2_ra_decision *d)
{
	if (d->len == 0) {
		return;
	}
	assert_true(is->n < 4096);
	is->off[is->n] = d->off;
	is->len[is->n] = d->len;
	is->n++;
	is->bytes += d->len;
}

static int covered(const struct issued *is, uint64_t off, uint64_t len)
{
	uint64_t pos = off;
	size_t i;
	int progress = 1;

	while (pos < off + len && progress) {
		progress = 0;
		for (i = 0; i < is->n; i++) {
			if (is->off[i] <= pos && pos < is->off[i] + is->len[i]) {
				pos = is->off[i] + is->len[i];
				progress = 1;
			}
		}
	}
	return pos >= off + len;
}

static void test_sizes(void **state)
{
	struct gf2_ra_config c = cfg();

	assert_true(gf2_ra_config_sanitize(&c));
	assert_int_equal(gf2_ra_init_size(&c, 64 * KiB), 256 * KiB);
	assert_int_equal(gf2_ra_init_size(&c, 1 * MiB), 2 * MiB);
	assert_int_equal(gf2_ra_init_size(&c, 64 * MiB), 8 * MiB);
	assert_int_equal(gf2_ra_next_size(&c, 256 * KiB), 1 * MiB);
	assert_int_equal(gf2_ra_next_size(&c, 1 * MiB), 2 * MiB);
	assert_int_equal(gf2_ra_next_size(&c, 4 * MiB), 8 * MiB);
	assert_int_equal(gf2_ra_next_size(&c, 8 * MiB), 8 * MiB);
}

static void test_sanitize(void **state)
{
	struct gf2_ra_config c = { 0 };

	assert_false(gf2_ra_config_sanitize(&c));
	assert_true(c.min_window <= c.init_window);
	assert_true(c.init_window <= c.max_window);
	assert_true(c.streams >= 1 && c.streams <= GF2_RA_MAX_STREAMS);

	c.init_window = 64 * MiB;
	c.max_window = 1 * MiB;
	c.min_window = 2 * MiB;
	c.streams = 99;
	assert_false(gf2_ra_config_sanitize(&c));
	assert_int_equal(c.init_window, 1 * MiB);
	assert_int_equal(c.min_window, 1 * MiB);
	assert_int_equal(c.streams, GF2_RA_MAX_STREAMS);
}

/* One read in flight, 64 KiB at a time: after two reads, every read is
 * covered by a window issued before it, and the windows ramp to the cap. */
static void test_sequential(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	struct issued *is = calloc(1, sizeof(*is));
	uint64_t off;
	uint64_t maxlen = 0;
	size_t i;

	gf2_ra_init(&st);
	for (off = 0; off < 256 * MiB; off += 64 * KiB) {
		if (off >= 128 * KiB) {
			assert_true(covered(is, off, 64 * KiB));
		}
		gf2_ra_on_read(&st, &c, off, 64 * KiB, NOSIZE, LOTS, 0, &d);
		note(is, &d);
	}
	/* windows are contiguous, ramp up and stop at the cap */
	for (i = 1; i < is->n; i++) {
		assert_int_equal(is->off[i], is->off[i - 1] + is->len[i - 1]);
		assert_true(is->len[i] >= is->len[i - 1]);
		if (is->len[i] > maxlen) {
			maxlen = is->len[i];
		}
	}
	assert_int_equal(maxlen, 8 * MiB);
	assert_int_equal(is->len[0], 256 * KiB);
	/* never more than two windows ahead of the reader */
	assert_true(is->off[is->n - 1] + is->len[is->n - 1] <=
		    256 * MiB + 2 * 8 * MiB);
	free(is);
}

/* Reads that arrive permuted, as from a client with 8 in flight. */
static void test_out_of_order(void **state)
{
	static const int perm[8] = { 2, 0, 1, 5, 3, 4, 7, 6 };
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	struct issued *is = calloc(1, sizeof(*is));
	uint64_t base;
	int seq = 0;
	int j;

	gf2_ra_init(&st);
	for (base = 0; base < 64 * MiB; base += 8 * 64 * KiB) {
		for (j = 0; j < 8; j++) {
			uint64_t off = base + perm[j] * 64 * KiB;

			gf2_ra_on_read(&st, &c, off, 64 * KiB, NOSIZE, LOTS, 0,
				       &d);
			note(is, &d);
			seq += d.sequential;
		}
	}
	assert_true(is->n > 5);
	/* the tail of the file was read ahead well before the reader */
	assert_true(covered(is, 32 * MiB, 32 * MiB - 1 * MiB));
	assert_true(seq > 900);
	free(is);
}

/* Random 4 KiB reads: nothing is prefetched. */
static void test_random(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	uint64_t x = 88172645463325252ULL;
	int i;

	gf2_ra_init(&st);
	for (i = 0; i < 100000; i++) {
		uint64_t off;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		off = (x % (1ULL << 30)) & ~4095ULL;
		gf2_ra_on_read(&st, &c, off, 4096, 1ULL << 30, LOTS, 0, &d);
		assert_int_equal(d.len, 0);
	}
}

/* Strided reads (every other 64 KiB block): nothing is prefetched. */
static void test_strided(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	uint64_t stride;

	for (stride = 128 * KiB; stride <= 4 * MiB; stride *= 2) {
		uint64_t off;

		gf2_ra_init(&st);
		for (off = 0; off < 512 * MiB; off += stride) {
			gf2_ra_on_read(&st, &c, off, 64 * KiB, NOSIZE, LOTS, 0,
				       &d);
			assert_int_equal(d.len, 0);
		}
	}
}

/* Reading a file backwards: nothing is prefetched. */
static void test_backwards(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	uint64_t off;

	gf2_ra_init(&st);
	for (off = 256 * MiB; off > 0; off -= 64 * KiB) {
		gf2_ra_on_read(&st, &c, off - 64 * KiB, 64 * KiB, NOSIZE,
			       LOTS, 0, &d);
		assert_int_equal(d.len, 0);
	}
}

/* Four readers interleaved in one file: each is detected and served. */
static void test_interleaved(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	struct issued *is = calloc(1, sizeof(*is));
	uint64_t step;
	int r;
	int misses = 0;

	gf2_ra_init(&st);
	for (step = 0; step < 2048; step++) {
		for (r = 0; r < 4; r++) {
			uint64_t off = (uint64_t)r * 1024 * MiB +
				       step * 64 * KiB;

			if (step >= 2 && !covered(is, off, 64 * KiB)) {
				misses++;
			}
			gf2_ra_on_read(&st, &c, off, 64 * KiB, NOSIZE, LOTS, 0,
				       &d);
			note(is, &d);
		}
	}
	assert_int_equal(misses, 0);
	free(is);
}

/* More interleaved readers than streams: no crash, LRU keeps working. */
static void test_too_many_streams(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	uint64_t step;
	int r;

	c.streams = 2;
	gf2_ra_init(&st);
	for (step = 0; step < 1000; step++) {
		for (r = 0; r < 5; r++) {
			gf2_ra_on_read(&st, &c,
				       (uint64_t)r * 1024 * MiB +
				       step * 64 * KiB, 64 * KiB, NOSIZE, LOTS, 0,
				       &d);
			assert_true(d.stream >= 0 && d.stream < 2);
		}
	}
}

/* Nothing is prefetched at or past EOF, and windows stop at EOF. */
static void test_eof(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	uint64_t size = 3 * MiB + 100;
	uint64_t off;
	uint64_t total = 0;

	gf2_ra_init(&st);
	for (off = 0; off < size + 10 * MiB; off += 64 * KiB) {
		gf2_ra_on_read(&st, &c, off, 64 * KiB, size, LOTS, 0, &d);
		if (d.len > 0) {
			assert_true(d.off < size);
			assert_true(d.off + d.len <= size);
			total += d.len;
		}
	}
	assert_true(total <= size);
	assert_true(total > 2 * MiB);
}

/* Windows never exceed the memory the caller can spend; with none left,
 * nothing is issued, and prefetch resumes when memory returns. */
static void test_memory_pressure(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	uint64_t off;
	int pressure = 0;
	int resumed = 0;

	gf2_ra_init(&st);
	for (off = 0; off < 64 * MiB; off += 64 * KiB) {
		uint64_t avail = off < 32 * MiB ? 512 * KiB : 0;

		if (off >= 48 * MiB) {
			avail = LOTS;
		}
		gf2_ra_on_read(&st, &c, off, 64 * KiB, NOSIZE, avail, 0, &d);
		assert_true(d.len <= avail);
		pressure += d.pressure;
		if (off >= 48 * MiB && d.len > 0) {
			resumed++;
		}
		if (off >= 32 * MiB && off < 48 * MiB) {
			assert_int_equal(d.len, 0);
		}
	}
	assert_true(pressure > 0);
	assert_true(resumed > 0);
}

/* A reset forgets everything: the next reads must confirm again. */
static void test_reset(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	uint64_t off;

	gf2_ra_init(&st);
	for (off = 0; off < 4 * MiB; off += 64 * KiB) {
		gf2_ra_on_read(&st, &c, off, 64 * KiB, NOSIZE, LOTS, 0, &d);
	}
	gf2_ra_reset(&st);
	gf2_ra_on_read(&st, &c, off, 64 * KiB, NOSIZE, LOTS, 0, &d);
	assert_int_equal(d.len, 0);
	assert_false(d.sequential);
}

/*
 * A slow reader (64 KiB every 4 ms: 16 MB/s) with a 125 ms lead limit:
 * once its rate is measured, the data issued never runs more than the
 * limit (plus one window being consumed) ahead of it, and every read is
 * still covered in time.  Returns the largest lead seen after warm-up.
 */
static uint64_t run_paced(uint64_t len, uint64_t ms_per_read,
			  uint64_t lead_ms, uint64_t total)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	struct issued *is = calloc(1, sizeof(*is));
	uint64_t off;
	uint64_t now = 1000;
	uint64_t issued_end = 0;
	uint64_t maxlead = 0;

	c.max_lead_ms = lead_ms;
	gf2_ra_init(&st);
	for (off = 0; off < total; off += len) {
		if (off >= 4 * len) {
			assert_true(covered(is, off, len));
		}
		gf2_ra_on_read(&st, &c, off, len, NOSIZE, LOTS, now, &d);
		note(is, &d);
		if (d.len > 0) {
			issued_end = d.off + d.len;
		}
		if (off >= 4 * MiB && issued_end - (off + len) > maxlead) {
			maxlead = issued_end - (off + len);
		}
		now += ms_per_read;
	}
	free(is);
	return maxlead;
}

static void test_lead_limit(void **state)
{
	/* 16 MB/s for 125 ms: about 2 MB ahead, not the 8 MiB window */
	uint64_t slow = run_paced(64 * KiB, 4, 125, 64 * MiB);
	/* 1 GB/s: the limit (125 MB) is above the window: full windows */
	uint64_t fast = run_paced(1 * MiB, 1, 125, 256 * MiB);
	/* no limit */
	uint64_t none = run_paced(64 * KiB, 4, 0, 64 * MiB);

	assert_true(slow <= 3 * MiB);
	assert_true(slow >= 1 * MiB);
	assert_true(fast >= 8 * MiB);
	assert_true(none >= 8 * MiB);
}

/* After its data is lost (expired), a stream refills from its frontier. */
static void test_miss_refill(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	uint64_t off;

	gf2_ra_init(&st);
	for (off = 0; off < 32 * MiB; off += 64 * KiB) {
		gf2_ra_on_read(&st, &c, off, 64 * KiB, NOSIZE, LOTS, 0, &d);
	}
	/* the next read is inside the newest window: nothing to issue */
	gf2_ra_on_read(&st, &c, off, 64 * KiB, NOSIZE, LOTS, 0, &d);
	assert_true(d.sequential);
	assert_int_equal(d.len, 0);
	gf2_ra_on_miss(&st, d.stream);
	off += 64 * KiB;
	gf2_ra_on_read(&st, &c, off, 64 * KiB, NOSIZE, LOTS, 0, &d);
	assert_int_equal(d.off, off + 64 * KiB);
	assert_true(d.len >= 256 * KiB);
	/* misses of unknown or unconfirmed streams are ignored */
	gf2_ra_on_miss(&st, -1);
	gf2_ra_on_miss(&st, GF2_RA_MAX_STREAMS);
}

/*
 * Reads larger than the window (max window 64K, 1 MiB reads): every
 * window issued after the first lies ahead of the reader, never behind
 * its frontier (found by test/fuzz/fuzz_readahead.c: the next window
 * followed the previous one even when the reader had passed its end, so
 * each read fetched 64K it had already read).
 */
static void test_reads_larger_than_window(void **state)
{
	struct gf2_ra_config c = {
		.init_window = 64 * KiB,
		.max_window = 64 * KiB,
		.min_window = 64 * KiB,
		.streams = 4,
	};
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	uint64_t off;
	unsigned windows = 0;

	gf2_ra_init(&st);
	for (off = 0; off < 64 * MiB; off += MiB) {
		gf2_ra_on_read(&st, &c, off, MiB, NOSIZE, LOTS, 0, &d);
		if (d.len > 0) {
			windows++;
			assert_true(d.off >= off + MiB);
			assert_true(d.len <= 64 * KiB);
		}
	}
	assert_true(windows >= 60);

	/* a small read, then one that jumps far past the window */
	gf2_ra_init(&st);
	gf2_ra_on_read(&st, &cfg_default, 0, 15 * MiB, NOSIZE, LOTS, 0, &d);
	gf2_ra_on_read(&st, &cfg_default, 15 * MiB, 64 * KiB, NOSIZE, LOTS, 0,
		       &d);
	assert_int_equal(d.off, 15 * MiB + 64 * KiB);
	gf2_ra_on_read(&st, &cfg_default, 15 * MiB + 64 * KiB, 12 * MiB,
		       NOSIZE, LOTS, 0, &d);
	assert_true(d.len > 0);
	assert_true(d.off >= 27 * MiB + 64 * KiB);
}

/* Reads of at least direct_min bytes issue no window; smaller ones do. */
static void test_direct_reads(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;
	uint64_t off;
	struct issued is = { .n = 0 };

	c.direct_min = MiB;
	gf2_ra_init(&st);
	for (off = 0; off < 64 * MiB; off += MiB) {
		gf2_ra_on_read(&st, &c, off, MiB, NOSIZE, LOTS, 0, &d);
		assert_int_equal(d.len, 0);
	}
	/* just below the limit: prefetched as before */
	gf2_ra_init(&st);
	for (off = 0; off < 64 * MiB; off += MiB - 4 * KiB) {
		gf2_ra_on_read(&st, &c, off, MiB - 4 * KiB, NOSIZE, LOTS, 0,
			       &d);
		note(&is, &d);
	}
	assert_true(is.n > 0);

	/* the stream stays tracked: small reads after large ones prefetch */
	gf2_ra_init(&st);
	gf2_ra_on_read(&st, &c, 0, 2 * MiB, NOSIZE, LOTS, 0, &d);
	gf2_ra_on_read(&st, &c, 2 * MiB, 2 * MiB, NOSIZE, LOTS, 0, &d);
	assert_int_equal(d.len, 0);
	gf2_ra_on_read(&st, &c, 4 * MiB, 64 * KiB, NOSIZE, LOTS, 0, &d);
	assert_true(d.len > 0);
	assert_int_equal(d.off, 4 * MiB + 64 * KiB);

	/* 0: every size prefetches */
	c.direct_min = 0;
	gf2_ra_init(&st);
	is.n = 0;
	for (off = 0; off < 64 * MiB; off += MiB) {
		gf2_ra_on_read(&st, &c, off, MiB, NOSIZE, LOTS, 0, &d);
		note(&is, &d);
	}
	assert_true(is.n > 0);
	(void)state;
}

static void test_degenerate(void **state)
{
	struct gf2_ra_config c = cfg();
	struct gf2_ra_state st;
	struct gf2_ra_decision d;

	gf2_ra_init(&st);
	gf2_ra_on_read(&st, &c, 0, 0, NOSIZE, LOTS, 0, &d);
	assert_int_equal(d.len, 0);
	gf2_ra_on_read(&st, &c, UINT64_MAX - 10, 4096, NOSIZE, LOTS, 0, &d);
	assert_int_equal(d.len, 0);
	gf2_ra_on_read(&st, &c, UINT64_MAX - 8192, 4096, NOSIZE, LOTS, 0, &d);
	gf2_ra_on_read(&st, &c, UINT64_MAX - 4096, 4095, NOSIZE, LOTS, 0, &d);
	assert_true(d.len == 0 || d.off + d.len >= d.off);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_sequential),
		cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_strided),
		cmocka_unit_test(test_backwards),
		cmocka_unit_test(test_interleaved),
		cmocka_unit_test(test_too_many_streams),
		cmocka_unit_test(test_eof),
		cmocka_unit_test(test_memory_pressure),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_lead_limit),
		cmocka_unit_test(test_miss_refill),
		cmocka_unit_test(test_reads_larger_than_window),
		cmocka_unit_test(test_direct_reads),
		cmocka_unit_test(test_degenerate),
	};

	cmocka_set_message_output(CM_OUTPUT_STDOUT);
	return cmocka_run_group_tests_name("readahead", tests, NULL, NULL);
}
