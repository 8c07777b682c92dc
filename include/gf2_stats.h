/*
 * glusterfs2: per-share counters for admins (gf2_stats.c), read with
 * tools/glusterfs2-stats.  Counted in smbd's main thread only.
 *
 * Layer: bridge.
 */

#ifndef GF2_STATS_H
#define GF2_STATS_H

#include <stdint.h>

struct tevent_context;

#define GF2_LAT_BUCKETS 12

struct gf2_counters {
	uint64_t reads;			/* read requests served */
	uint64_t read_bytes;		/* bytes they returned */
	uint64_t read_bytes_prefetch;	/* of which copied from prefetch */
	uint64_t read_bytes_gluster;	/* of which read from Gluster */
	uint64_t read_bytes_shared;	/* of which copied from the node's
					   shared read cache */
	uint64_t prefetch_bytes;	/* read ahead from Gluster */
	uint64_t prefetch_unused;	/* read ahead, thrown away unread */
	uint64_t writes;
	uint64_t write_bytes;
	uint64_t fsyncs;
	uint64_t gluster_errors;	/* asynchronous calls that failed */
	uint64_t gluster_calls;		/* asynchronous calls completed */
	uint64_t wc_writes;		/* writes acknowledged once queued */
	uint64_t wc_sends;		/* gathered writes sent to Gluster */
	uint64_t wc_errors;		/* of which failed */
	uint64_t mem_peak;		/* most bytes of the process's budget
					   held (gf2_stats_mem) */
	/* the shared read cache's node-wide counters, as last seen */
	uint64_t shr_hits;		/* block reads served */
	uint64_t shr_misses;		/* block reads that found nothing */
	uint64_t shr_stale;		/* found stale, or fills refused */
	uint64_t shr_fills;		/* blocks put in */
	uint64_t shr_evictions;		/* valid blocks dropped for room */
	uint64_t shr_invalidations;	/* files' blocks dropped */
	uint64_t lat[GF2_LAT_BUCKETS];	/* their latency histogram */
	uint64_t gluster_call_us;	/* the sum of their latencies */
};

/* One per share and process; lives as long as the process. */
struct gf2_stats {
	struct gf2_stats *prev, *next;
	char *share;
	uint64_t inflight;		/* Gluster calls in flight now */
	struct gf2_counters c;
};

struct gf2_stats *gf2_stats_get(const char *share);
void gf2_stats_changed(struct gf2_stats *st);
void gf2_stats_lat(struct gf2_stats *st, uint64_t usec);
/*
 * The process's one memory budget (glusterfs2:prefetch max memory, for
 * prefetch and the write cache together) holds held bytes now, wc_held
 * of them the write cache's, and has held at most peak: every share of
 * the process reports them (mem_held, mem_held_wc, mem_peak).
 */
void gf2_stats_mem(uint64_t held, uint64_t wc_held, uint64_t peak);
void gf2_stats_connect(struct tevent_context *ev);
void gf2_stats_disconnect(void);

#endif /* GF2_STATS_H */
