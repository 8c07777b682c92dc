/*
 * glusterfs2: deferred release of what Gluster may still hold (see
 * gf2_hold.h).
 *
 * Layer: core.
 */

#include <assert.h>
#include "gf2_hold.h"

void gf2_hold_get(struct gf2_hold *h)
{
	h->users += 1;
}

bool gf2_hold_put(struct gf2_hold *h)
{
	assert(h->users > 0);
	h->users -= 1;
	return h->users == 0 && h->inflight == 0;
}

void gf2_hold_io_begin(struct gf2_hold *h)
{
	h->inflight += 1;
}

bool gf2_hold_io_end(struct gf2_hold *h)
{
	assert(h->inflight > 0);
	h->inflight -= 1;
	return h->users == 0 && h->inflight == 0;
}

bool gf2_hold_deferred(const struct gf2_hold *h)
{
	return h->users == 0 && h->inflight > 0;
}
