/*
 * glusterfs2: the write cache's internal declarations, shared by its
 * three files: the queue (gf2_wcache.c) calls the drain (gf2_wcdrain.c)
 * and the registry (gf2_wcreg.c); the drain calls the registry, and
 * tells the queue of a landing through the cache's kick hook.
 *
 * Layer: caches.
 */

#ifndef GF2_WCACHE_INT_H
#define GF2_WCACHE_INT_H

#include "gf2_wcache.h"

struct gf2_wc_call {
	struct gf2_wc *wc;	/* NULL once the cache went (orphan) */
	unsigned slot;
	struct gf2_wait *gate;	/* the write out until Gluster answers */
	bool landed;
};

struct gf2_wc_waiter;

struct gf2_wc {
	struct gf2_wc *prev, *next;	/* gf2_wcs */
	struct tevent_context *ev;
	struct gf2_fh *fh;
	struct gf2_stats *st;
	char *key;
	uint32_t id;
	bool registered;	/* an entry in the tdb */
	bool busy;		/* counted in gf2_wc_busy */
	uint32_t max_wait_ms;	/* a blocking wait for a call, at most */
	bool stalled;		/* a wait gave up; nothing landed since */
	struct gf2_wq q;
	uint8_t *gbuf;		/* the gather's buffer, q.gather.cap bytes */
	struct gf2_ident gather_as;	/* its writes' user (groups: gbuf's) */
	struct gf2_wc_call *calls[GF2_WQ_MAX_INFLIGHT];
	unsigned gather_ends;	/* end_fn calls owed for the gather */
	unsigned slot_ends[GF2_WQ_MAX_INFLIGHT];
	void (*end_fn)(void *arg);
	void *end_arg;
	struct gf2_wc_waiter *waiters;
	struct tevent_immediate *im;	/* for kick */
	/* the queue's: serve the waiters again (gf2_wc_kick) */
	void (*kick)(struct gf2_wc *wc);
	/*
	 * Its handle closed with bytes still queued (gf2_wc_close): the
	 * cache owns itself, a user of fh and a call's hold on fh's volume,
	 * and frees itself from end_im once everything landed.
	 */
	bool detached;
	struct tevent_immediate *end_im;
};

/* The drain (gf2_wcdrain.c). */
extern struct gf2_wc *gf2_wcs;		/* every cache of the process */
extern unsigned gf2_wc_busy;		/* caches of this process not idle */
void gf2_wc_track(struct gf2_wc *wc);
void gf2_wc_send(struct gf2_wc *wc);

/* The registry (gf2_wcreg.c). */
char *gf2_wc_key(TALLOC_CTX *mem_ctx, const char *volname, uint64_t ino);
struct tdb_context *gf2_wc_db(void);
bool gf2_wc_register(struct gf2_wc *wc);
void gf2_wc_unregister(struct gf2_wc *wc);
bool gf2_wc_drain_asked(const struct gf2_wc *wc);
int gf2_wc_ask_drain(const char *volname, uint64_t ino);

#endif /* GF2_WCACHE_INT_H */
