/*
 * Unit tests for the read plan (source/gf2_readplan.c): where a read is
 * answered from, the pieces a read sent to Gluster becomes, and what the
 * pieces add up to.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>

#include "gf2_readplan.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)
#define CHUNK (124 * KiB)

static enum gf2_rp_route route(bool has_pf, bool enabled, bool strict,
			       bool read_caching, int64_t offset, uint64_t n)
{
	struct gf2_rp_read r = {
		.has_pf = has_pf, .enabled = enabled, .strict = strict,
		.read_caching = read_caching, .offset = offset, .n = n,
	};

	return gf2_rp_route(&r);
}

static void test_route(void **state)
{
	/* the usual read of a file with prefetch state */
	assert_int_equal(route(true, true, false, false, 0, 4096),
			 GF2_RP_PREFETCH);
	assert_int_equal(route(true, true, true, true, 4096, 4096),
			 GF2_RP_PREFETCH);
	/* no state, prefetch off, a negative offset, an empty read */
	assert_int_equal(route(false, true, false, false, 0, 4096),
			 GF2_RP_DIRECT);
	assert_int_equal(route(true, false, false, false, 0, 4096),
			 GF2_RP_DIRECT);
	assert_int_equal(route(true, true, false, false, -1, 4096),
			 GF2_RP_DIRECT);
	assert_int_equal(route(true, true, false, true, 0, 0),
			 GF2_RP_DIRECT);
	/* strict without a read lease: what is kept goes, then direct */
	assert_int_equal(route(true, true, true, false, 0, 4096),
			 GF2_RP_DROP_DIRECT);
	assert_int_equal(route(true, false, true, false, 0, 0),
			 GF2_RP_DROP_DIRECT);
	/* strict with nothing kept: nothing to drop */
	assert_int_equal(route(false, true, true, false, 0, 4096),
			 GF2_RP_DIRECT);
}

static void test_piece(void **state)
{
	/* small reads are one piece, whatever is in flight */
	assert_int_equal(gf2_rp_piece(0, CHUNK, 0), 1);
	assert_int_equal(gf2_rp_piece(4096, CHUNK, 0), 4096);
	assert_int_equal(gf2_rp_piece(CHUNK, CHUNK, 5), CHUNK);
	/* up to 1 MiB whole while gfapi's arena for it has room */
	assert_int_equal(gf2_rp_piece(CHUNK + 1, CHUNK, 0), CHUNK + 1);
	assert_int_equal(gf2_rp_piece(MiB, CHUNK, GF2_RP_WHOLE_ARENA - 1),
			 MiB);
	/* in pieces once that many are in flight */
	assert_int_equal(gf2_rp_piece(MiB, CHUNK, GF2_RP_WHOLE_ARENA), CHUNK);
	assert_int_equal(gf2_rp_piece(CHUNK + 1, CHUNK, 9), CHUNK);
	/* larger reads always in pieces */
	assert_int_equal(gf2_rp_piece(MiB + 1, CHUNK, 0), CHUNK);
	assert_int_equal(gf2_rp_piece(8 * MiB, CHUNK, 0), CHUNK);
}

static void test_pieces_cover_the_read(void **state)
{
	const uint64_t sizes[] = { 0, 1, 4096, CHUNK, CHUNK + 1, MiB,
				   MiB + 1, 8 * MiB, 8 * MiB - 3 };
	unsigned s, i, n;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint64_t len = sizes[s];
		uint64_t piece = gf2_rp_piece(len, CHUNK, 1);
		uint64_t sum = 0;

		n = gf2_rp_pieces(len, piece);
		assert_true(n >= 1);
		for (i = 0; i < n; i++) {
			uint64_t l = gf2_rp_piece_len(len, piece, i);

			assert_true(l <= piece);
			/* only an empty read has an empty piece */
			assert_true(l > 0 || len == 0);
			/* every piece but the last is whole */
			if (i + 1 < n) {
				assert_int_equal(l, piece);
			}
			sum += l;
		}
		assert_int_equal(sum, len);
		assert_int_equal(gf2_rp_piece_len(len, piece, n), 0);
	}
	assert_int_equal(gf2_rp_pieces(3 * CHUNK, CHUNK), 3);
	assert_int_equal(gf2_rp_pieces(3 * CHUNK + 1, CHUNK), 4);
	assert_int_equal(gf2_rp_piece_len(3 * CHUNK + 1, CHUNK, 3), 1);
}

static void test_total_stops_at_the_first_short_piece(void **state)
{
	uint64_t all[4] = { CHUNK, CHUNK, CHUNK, 10 };
	uint64_t eof[4] = { CHUNK, 100, 0, 0 };
	/* a piece after a short one may have data: not the file's */
	uint64_t gap[4] = { CHUNK, 100, CHUNK, 10 };
	uint64_t empty[1] = { 0 };

	assert_int_equal(gf2_rp_total(3 * CHUNK + 10, CHUNK, all, 4),
			 3 * CHUNK + 10);
	assert_int_equal(gf2_rp_total(3 * CHUNK + 10, CHUNK, eof, 4),
			 CHUNK + 100);
	assert_int_equal(gf2_rp_total(3 * CHUNK + 10, CHUNK, gap, 4),
			 CHUNK + 100);
	assert_int_equal(gf2_rp_total(0, 1, empty, 1), 0);
	/* one whole piece, end of file inside it */
	eof[0] = 5000;
	assert_int_equal(gf2_rp_total(MiB, MiB, eof, 1), 5000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route),
		cmocka_unit_test(test_piece),
		cmocka_unit_test(test_pieces_cover_the_read),
		cmocka_unit_test(test_total_stops_at_the_first_short_piece),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
