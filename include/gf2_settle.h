/*
 * glusterfs2: settling (gf2_settle.c): what this process acknowledged of
 * a file and has not landed yet reaches the bricks before a request that
 * reads or changes the file goes on.
 *
 * Layer: engines.
 *
 * Shared by the read and the write engines, and by the glue's
 * synchronous operations (truncate, allocation, locks, times).
 */

#ifndef GF2_SETTLE_H
#define GF2_SETTLE_H

#include "gf2_bridge.h"

struct files_struct;

/*
 * Asynchronously: when this process holds acknowledged writes of fsp's
 * file (volume volname) not yet on the bricks, waits for them without
 * blocking the main loop, then calls start(req) as `as` (the request's
 * identity, captured when it came in; it must live as long as req); a
 * failed wait fails req.  The wait is a talloc child of mem_ctx (req's
 * state).  true: req is taken care of (waiting, or failed for lack of
 * memory); false: nothing to wait for, the caller starts at once.
 */
bool gf2_settle_then(TALLOC_CTX *mem_ctx, struct tevent_req *req,
		     struct tevent_context *ev, const char *volname,
		     const struct files_struct *fsp,
		     const struct gf2_ident *as,
		     void (*start)(struct tevent_req *req));

/*
 * Blocks until everything this process acknowledged of fsp's file is on
 * the bricks: before anything that reads or changes it otherwise.  0, or
 * -1 with errno ETIMEDOUT (see gf2_wc_drain_file_sync).
 */
int gf2_settle_sync(const char *volname, const struct files_struct *fsp);

#endif /* GF2_SETTLE_H */
