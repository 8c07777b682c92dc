/*
 * glusterfs2: deferred release of what Gluster may still hold.
 *
 * Layer: core.
 *
 * A glfs instance or a file handle has users (tree connects; smbd's open
 * handle) and asynchronous calls in flight.  gfapi drops the completion
 * of a call whose glfs_fd was closed, and glfs_fini frees what callbacks
 * use, so the object is released only when its last user has gone and
 * no call is in flight: by the last put if nothing is in flight then,
 * else by the completion of the last call.  The functions say when that
 * moment has come; the caller releases.
 *
 * Pure (libc only), unit-tested alone (test/unit/test_hold.c).
 */

#ifndef GF2_HOLD_H
#define GF2_HOLD_H

#include <stdbool.h>

struct gf2_hold {
	unsigned users;
	unsigned inflight;
};

void gf2_hold_get(struct gf2_hold *h);
/* A user goes.  True: release the object now. */
bool gf2_hold_put(struct gf2_hold *h);
void gf2_hold_io_begin(struct gf2_hold *h);
/* A call in flight ended.  True: release the object now. */
bool gf2_hold_io_end(struct gf2_hold *h);
/* Its users have gone, calls are still in flight: release deferred. */
bool gf2_hold_deferred(const struct gf2_hold *h);

#endif /* GF2_HOLD_H */
