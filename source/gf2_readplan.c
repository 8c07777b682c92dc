/*
 * glusterfs2: the read plan (see include/gf2_readplan.h).
 *
 * Layer: core.
 */

#include "gf2_readplan.h"

enum gf2_rp_route gf2_rp_route(const struct gf2_rp_read *r)
{
	if (r->has_pf && r->strict && !r->read_caching) {
		return GF2_RP_DROP_DIRECT;
	}
	if (!r->has_pf || !r->enabled || r->offset < 0 || r->n == 0) {
		return GF2_RP_DIRECT;
	}
	return GF2_RP_PREFETCH;
}

uint64_t gf2_rp_piece(uint64_t n, uint64_t chunk, unsigned whole_in_flight)
{
	if (n == 0) {
		return 1;
	}
	if (n <= chunk) {
		return n;
	}
	if (n <= GF2_RP_WHOLE_MAX && whole_in_flight < GF2_RP_WHOLE_ARENA) {
		return n;
	}
	return chunk;
}

unsigned gf2_rp_pieces(uint64_t n, uint64_t piece)
{
	if (n == 0 || piece == 0) {
		return 1;
	}
	return (unsigned)((n + piece - 1) / piece);
}

uint64_t gf2_rp_piece_len(uint64_t n, uint64_t piece, unsigned i)
{
	uint64_t at = (uint64_t)i * piece;

	if (at >= n) {
		return 0;
	}
	return n - at < piece ? n - at : piece;
}

uint64_t gf2_rp_total(uint64_t n, uint64_t piece, const uint64_t *got,
		      unsigned npieces)
{
	uint64_t total = 0;
	unsigned i;

	for (i = 0; i < npieces; i++) {
		total += got[i];
		if (got[i] < gf2_rp_piece_len(n, piece, i)) {
			break;
		}
	}
	return total;
}
