/*
 * glusterfs2: sequential-read detection and readahead window sizing.
 *
 * Layer: core.
 *
 * Pure logic: offsets in, decisions out.  No Samba, gfapi or allocation;
 * unit-tested alone (test/unit/test_readahead.c).
 *
 * Each open file keeps up to GF2_RA_MAX_STREAMS streams.  A read that
 * continues a stream (it starts at or near the stream's frontier, the end
 * of the furthest read seen) confirms it; a read that continues nothing
 * replaces the least recently used stream with a new candidate.  SMB2
 * clients keep several reads in flight, so reads of one stream can arrive
 * permuted: a read counts as continuing a stream when it starts within
 * the stream's tolerance of the frontier (before or after it), and a
 * stream is only trusted while the bytes read cover at least 3/4 of the
 * span it has advanced over.  Strided reads (gaps that are never filled)
 * fail that density test, random reads never continue a stream, and
 * backwards reads start before the tolerance: none of them costs a
 * prefetch or a buffer.
 *
 * Windows, as in Linux's on-demand readahead:
 *
 *              |<------------ size ------------>|
 *   -----------+-------------------------------+-----------> offset
 *              ^start               reader --> ^start + size
 *              ^marker (= start: async_size == size)
 *
 * When a confirmed stream is first seen, the window [frontier, frontier +
 * init) is issued.  Whenever the reader's frontier passes the marker of
 * the newest window, the next window is issued right after it, its size
 * grown x4 while small and x2 after, capped at the maximum.  So the data
 * for the next reads is always in flight or in memory one window ahead of
 * the reader, and a client with one read in flight never waits for the
 * network once the stream is established.
 *
 * Lead limit: prefetched data is only good for a bounded time (the
 * caller's coherence age), so a stream is never read further ahead than
 * it will consume within max_lead_ms at its measured rate (bytes/s of the
 * frontier, sampled every GF2_RA_RATE_SAMPLE_MS and smoothed).  Many slow
 * readers then keep small windows instead of fetching data that expires
 * unread; a fast reader keeps the full window.  A window that the limit
 * cuts to nothing is deferred, and the next read tries again.
 *
 * Large reads: a read of at least direct_min bytes issues no window (the
 * stream is still tracked).  The caller reads it from Gluster as it is,
 * one call into the reply; prefetching it would read the same bytes in
 * chunks and copy them once more, for no gain at that size.
 */

#ifndef GF2_READAHEAD_H
#define GF2_READAHEAD_H

#include <stdbool.h>
#include <stdint.h>

#define GF2_RA_MAX_STREAMS 8

/*
 * The defaults of the prefetch windows and streams (the option table of
 * gf2_options.c takes them from here; so does a zeroed configuration).
 */
#define GF2_RA_DEFAULT_INIT (256 * 1024ULL)
#define GF2_RA_DEFAULT_MAX (8 * 1024 * 1024ULL)
#define GF2_RA_DEFAULT_MIN (64 * 1024ULL)
#define GF2_RA_DEFAULT_STREAMS 4
#define GF2_RA_DEFAULT_DIRECT (1024 * 1024ULL)
#define GF2_RA_SIZE_UNKNOWN UINT64_MAX
#define GF2_RA_RATE_SAMPLE_MS 50

struct gf2_ra_config {
	uint64_t init_window;	/* first window of a confirmed stream */
	uint64_t max_window;	/* cap of every window */
	uint64_t min_window;	/* no window smaller than this is issued */
	unsigned streams;	/* streams tracked per file, 1..MAX_STREAMS */
	uint64_t max_lead_ms;	/* read at most this far ahead; 0: no limit */
	uint64_t direct_min;	/* reads this large issue no window; 0: none */
};

struct gf2_ra_stream {
	bool used;
	bool confirmed;		/* sequential: prefetching */
	uint64_t origin;	/* offset of the first read */
	uint64_t frontier;	/* end of the furthest read */
	uint64_t covered;	/* bytes read since origin */
	uint64_t last_len;	/* length of the last read */
	uint64_t start;		/* newest window issued: [start, start+size) */
	uint64_t size;
	uint64_t marker;	/* next window fires when frontier passes it */
	uint64_t last_use;	/* for LRU replacement */
	uint64_t t_origin;	/* ms of the first read */
	uint64_t rate_t;	/* rate sample: time (ms) and frontier */
	uint64_t rate_f;
	uint64_t rate;		/* bytes per second; 0: not measured yet */
	bool rate_sampled;	/* rate from a full sample period */
};

struct gf2_ra_state {
	struct gf2_ra_stream s[GF2_RA_MAX_STREAMS];
	uint64_t clock;
};

struct gf2_ra_decision {
	uint64_t off;		/* range to prefetch; len == 0: nothing */
	uint64_t len;
	int stream;		/* stream index, -1 if none */
	bool sequential;	/* the read continued a confirmed stream */
	bool pressure;		/* a window was cut or skipped for memory */
};

void gf2_ra_init(struct gf2_ra_state *st);

/*
 * Fill in defaults and clamp a configuration: min <= init <= max,
 * 1 <= streams <= GF2_RA_MAX_STREAMS.  Returns true if nothing changed.
 */
bool gf2_ra_config_sanitize(struct gf2_ra_config *cfg);

/*
 * Account for a read of [off, off+len) and decide what to prefetch.
 * file_size is the current size (GF2_RA_SIZE_UNKNOWN if not known):
 * nothing at or past it is prefetched.  avail is how many bytes of prefetch
 * memory the caller can spend now: a window is cut to fit, or skipped (and
 * the stream's window shrinks back) when less than min_window is left.
 * now_ms is a monotonic clock in milliseconds (0: unknown, no lead limit).
 */
void gf2_ra_on_read(struct gf2_ra_state *st,
		    const struct gf2_ra_config *cfg,
		    uint64_t off, uint64_t len,
		    uint64_t file_size, uint64_t avail,
		    uint64_t now_ms,
		    struct gf2_ra_decision *d);

/*
 * A read of a confirmed stream found its prefetched data gone (expired or
 * dropped): start the stream's windows again at its frontier on the next
 * read instead of waiting for the frontier to pass the old marker.
 */
void gf2_ra_on_miss(struct gf2_ra_state *st, int stream);

/* The lead limit in bytes of a stream (UINT64_MAX: none), for tests. */
uint64_t gf2_ra_lead_limit(const struct gf2_ra_config *cfg,
			   const struct gf2_ra_stream *s, uint64_t len);

/*
 * Forget every stream (the file was written, truncated or invalidated).
 */
void gf2_ra_reset(struct gf2_ra_state *st);

/* The window sizes, exposed for tests. */
uint64_t gf2_ra_init_size(const struct gf2_ra_config *cfg, uint64_t len);
uint64_t gf2_ra_next_size(const struct gf2_ra_config *cfg, uint64_t cur);

#endif /* GF2_READAHEAD_H */
