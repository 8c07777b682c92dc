/*
 * glusterfs2: the rules of the write queue of one handle (see
 * include/gf2_wqueue.h).
 *
 * Layer: core.
 */

#include <string.h>
#include "gf2_wqueue.h"

void gf2_wq_init(struct gf2_wq *q, uint64_t merge_max,
		 unsigned max_inflight)
{
	memset(q, 0, sizeof(*q));
	q->merge_max = merge_max > 0 ? merge_max : 1;
	if (max_inflight < 1) {
		max_inflight = 1;
	}
	if (max_inflight > GF2_WQ_MAX_INFLIGHT) {
		max_inflight = GF2_WQ_MAX_INFLIGHT;
	}
	q->max_inflight = max_inflight;
}

static bool gf2_wq_overlap(const struct gf2_wq_ext *a,
			   const struct gf2_wq_ext *b)
{
	return a->off < b->off + b->len && b->off < a->off + a->len;
}

bool gf2_wq_holds(const struct gf2_wq *q, uint64_t off, uint64_t len)
{
	const struct gf2_wq_ext x = { .off = off, .len = len };
	unsigned i;

	if (len == 0) {
		return false;
	}
	if (q->gather.used && gf2_wq_overlap(&x, &q->gather)) {
		return true;
	}
	for (i = 0; i < GF2_WQ_MAX_INFLIGHT; i++) {
		if (q->fly[i].used && gf2_wq_overlap(&x, &q->fly[i])) {
			return true;
		}
	}
	return false;
}

bool gf2_wq_can_send(const struct gf2_wq *q)
{
	unsigned i;

	if (!q->gather.used || q->nfly >= q->max_inflight) {
		return false;
	}
	for (i = 0; i < GF2_WQ_MAX_INFLIGHT; i++) {
		if (q->fly[i].used && gf2_wq_overlap(&q->gather, &q->fly[i])) {
			return false;
		}
	}
	return true;
}

bool gf2_wq_should_send(const struct gf2_wq *q, bool drain)
{
	if (!gf2_wq_can_send(q)) {
		return false;
	}
	return drain || q->nfly == 0 || q->gather.len >= q->gather.cap;
}

enum gf2_wq_place gf2_wq_place(const struct gf2_wq *q, uint64_t off,
			       uint64_t len, uint64_t avail, uint64_t *cap)
{
	const struct gf2_wq_ext *g = &q->gather;
	uint64_t want = len > q->merge_max ? len : q->merge_max;

	*cap = 0;
	if (g->used && off == g->off + g->len && g->len + len <= g->cap) {
		return GF2_WQ_APPEND;
	}
	if (g->used && !gf2_wq_can_send(q)) {
		return GF2_WQ_WAIT;
	}
	if (want > avail) {
		if (gf2_wq_idle(q)) {
			return GF2_WQ_THROUGH;
		}
		return GF2_WQ_WAIT;
	}
	*cap = want;
	return GF2_WQ_NEW;
}

void gf2_wq_append(struct gf2_wq *q, uint64_t len)
{
	q->gather.len += len;
	q->gather.writes += 1;
}

void gf2_wq_start(struct gf2_wq *q, uint64_t off, uint64_t len,
		  uint64_t cap)
{
	q->gather = (struct gf2_wq_ext) {
		.off = off, .len = len, .cap = cap, .writes = 1, .used = true,
	};
	q->reserved += cap;
}

unsigned gf2_wq_send(struct gf2_wq *q)
{
	unsigned i;

	for (i = 0; i < GF2_WQ_MAX_INFLIGHT; i++) {
		if (!q->fly[i].used) {
			break;
		}
	}
	q->fly[i] = q->gather;
	q->nfly += 1;
	memset(&q->gather, 0, sizeof(q->gather));
	return i;
}

uint64_t gf2_wq_done(struct gf2_wq *q, unsigned i, int err)
{
	uint64_t cap = q->fly[i].cap;

	if (err != 0 && q->err == 0) {
		q->err = err;
	}
	memset(&q->fly[i], 0, sizeof(q->fly[i]));
	q->nfly -= 1;
	q->reserved -= cap;
	return cap;
}

int gf2_wq_take_error(struct gf2_wq *q)
{
	int err = q->err;

	q->err = 0;
	return err;
}

bool gf2_wq_idle(const struct gf2_wq *q)
{
	return !q->gather.used && q->nfly == 0;
}

uint64_t gf2_wq_queued(const struct gf2_wq *q)
{
	uint64_t n = q->gather.len;
	unsigned i;

	for (i = 0; i < GF2_WQ_MAX_INFLIGHT; i++) {
		if (q->fly[i].used) {
			n += q->fly[i].len;
		}
	}
	return n;
}
