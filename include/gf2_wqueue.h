/*
 * glusterfs2: the rules of the write queue of one handle (pure core).
 *
 * Layer: core.
 *
 * While a handle holds a write-caching lease or oplock, its writes are
 * acknowledged once queued.  Sequential writes are gathered into one
 * buffer (up to merge_max, or one write's length if larger); gathered
 * buffers are sent to Gluster, up to max_inflight at once.  The queue
 * here only decides; the buffers, the gfapi calls and the waiting are the
 * cache layer's (gf2_wcache.c).
 *
 *   write ----> [ gather: off .. off+len, cap reserved ] --send--> fly[i]
 *                                                                   |
 *   error of fly[i] latched in err  <--------------- done(i, err) --'
 *
 * A gather is sent when it is full, or when nothing is in flight (so that
 * a lone write never waits for company), or when a drain asks for it; and
 * never while it overlaps a write still in flight, so that two writes of
 * the same bytes reach the bricks in the order they were acknowledged.
 * Between the queues of one file's handles the cache layer keeps that
 * order with gf2_wq_holds: a write overlapping what another queue holds
 * is not acknowledged (nor queued) until those bytes have landed.
 * Memory: every gather counts its whole capacity from its start to its
 * completion against the process budget shared with prefetch.
 */

#ifndef GF2_WQUEUE_H
#define GF2_WQUEUE_H

#include <stdbool.h>
#include <stdint.h>

#define GF2_WQ_MAX_INFLIGHT 8

struct gf2_wq_ext {
	uint64_t off;
	uint64_t len;
	uint64_t cap;		/* bytes reserved against the budget */
	unsigned writes;	/* client writes gathered in it */
	bool used;
};

struct gf2_wq {
	uint64_t merge_max;
	unsigned max_inflight;	/* at most GF2_WQ_MAX_INFLIGHT */
	struct gf2_wq_ext gather;	/* used: a buffer is being gathered */
	struct gf2_wq_ext fly[GF2_WQ_MAX_INFLIGHT];
	unsigned nfly;
	uint64_t reserved;	/* sum of the caps of gather and fly */
	int err;		/* first error not yet reported, or 0 */
};

enum gf2_wq_place {
	GF2_WQ_APPEND,		/* copy into the gather */
	GF2_WQ_NEW,		/* send the gather (if any), start a new one */
	GF2_WQ_WAIT,		/* wait for a write in flight to finish */
	GF2_WQ_THROUGH,		/* queue empty and no memory: write directly */
};

void gf2_wq_init(struct gf2_wq *q, uint64_t merge_max,
		 unsigned max_inflight);

/*
 * Where a write of [off, off + len) goes; avail: budget left.  For
 * GF2_WQ_NEW, *cap is what the new gather reserves.
 */
enum gf2_wq_place gf2_wq_place(const struct gf2_wq *q, uint64_t off,
			       uint64_t len, uint64_t avail, uint64_t *cap);
void gf2_wq_append(struct gf2_wq *q, uint64_t len);
void gf2_wq_start(struct gf2_wq *q, uint64_t off, uint64_t len,
		  uint64_t cap);

/*
 * Some byte of [off, off + len) is acknowledged in this queue and not yet
 * on the bricks (gathered or in flight).
 */
bool gf2_wq_holds(const struct gf2_wq *q, uint64_t off, uint64_t len);
/* The gather may go now (a free slot, no overlap with what flies). */
bool gf2_wq_can_send(const struct gf2_wq *q);
/* ... and should: full, nothing in flight, or drain. */
bool gf2_wq_should_send(const struct gf2_wq *q, bool drain);
/* Moves the gather to a free slot; returns the slot. */
unsigned gf2_wq_send(struct gf2_wq *q);
/*
 * Slot i finished (err: 0 or an errno).  The first error is latched.
 * Returns the bytes to give back to the budget.
 */
uint64_t gf2_wq_done(struct gf2_wq *q, unsigned i, int err);

/* The latched error, cleared (reported once), or 0. */
int gf2_wq_take_error(struct gf2_wq *q);
bool gf2_wq_idle(const struct gf2_wq *q);
/* Bytes acknowledged and not yet on the bricks. */
uint64_t gf2_wq_queued(const struct gf2_wq *q);

#endif /* GF2_WQUEUE_H */
