/*
 * glusterfs2: the read plan (pure core): where a read is answered from,
 * and which pieces a read sent to Gluster becomes.
 *
 * Layer: core.
 *
 * The read engine (gf2_read.c) asks these rules and does what they say;
 * nothing here does I/O.
 *
 * Where (gf2_rp_route): a read whose file has prefetch state is answered
 * by prefetch (served from memory, waiting for a prefetch in flight, or
 * missed) unless prefetch is off for the share, the offset is negative,
 * or the read is empty; in strict coherence without a read-caching
 * oplock or lease the file's prefetched data is dropped first and the
 * read goes to Gluster.  Everything else goes to Gluster directly.
 *
 * Pieces (gf2_rp_piece): gfapi receives each reply into a buffer of the
 * read's size: up to 128 KiB from buffers it keeps and reuses; larger
 * ones from small arenas (two 1 MiB buffers each) that it maps when they
 * are taken and unmaps when they are free again, so that several large
 * replies in flight fault in fresh pages for every reply.  A read of at
 * most chunk bytes is one piece; a larger one of at most GF2_RP_WHOLE_MAX
 * is one piece while fewer than GF2_RP_WHOLE_ARENA such reads are in
 * flight (whole_in_flight), else pieces of chunk bytes; a larger one
 * still is always in pieces.  (Measured, 1 MiB reads: with one at a time
 * whole costs a ninth of the calls and less brick CPU; allowing two whole
 * at a time kept 4 in flight as costly as all whole.)  The pieces are
 * sent together, each into its part of the reply; the read returns the
 * bytes up to the first short piece (the end of the file).
 */

#ifndef GF2_READPLAN_H
#define GF2_READPLAN_H

#include <stdbool.h>
#include <stdint.h>

#define GF2_RP_WHOLE_MAX (1024 * 1024)
#define GF2_RP_WHOLE_ARENA 1

enum gf2_rp_route {
	GF2_RP_DIRECT,		/* to Gluster */
	GF2_RP_DROP_DIRECT,	/* drop the file's prefetched data, then
				   to Gluster */
	GF2_RP_PREFETCH,	/* answered by prefetch */
};

struct gf2_rp_read {
	bool has_pf;		/* the file has prefetch state */
	bool enabled;		/* prefetch is on for the share */
	bool strict;		/* coherence strict */
	bool read_caching;	/* a read-caching oplock or lease is held */
	int64_t offset;
	uint64_t n;
};

enum gf2_rp_route gf2_rp_route(const struct gf2_rp_read *r);

/*
 * The size of the pieces a read of n bytes goes to Gluster in (n itself
 * for one piece; 1 for an empty read, which is one piece of 0 bytes).
 */
uint64_t gf2_rp_piece(uint64_t n, uint64_t chunk, unsigned whole_in_flight);
/* How many pieces of size piece a read of n bytes is (at least 1). */
unsigned gf2_rp_pieces(uint64_t n, uint64_t piece);
/* The length of piece i (of gf2_rp_pieces) of a read of n bytes. */
uint64_t gf2_rp_piece_len(uint64_t n, uint64_t piece, unsigned i);
/*
 * What the read returns: the bytes the pieces got (got[i] for piece i,
 * npieces of them), up to and including the first short piece.
 */
uint64_t gf2_rp_total(uint64_t n, uint64_t piece, const uint64_t *got,
		      unsigned npieces);

#endif /* GF2_READPLAN_H */
