/*
 * glusterfs2: settling (see include/gf2_settle.h).
 *
 * Layer: engines.
 *
 * A read, and a FLUSH, of a file with writes this process acknowledged
 * and has not landed (gf2_wc_file_busy) first waits for them
 * (gf2_wc_settle_send) and then goes on as its request's user: it may go
 * on from a completion, when smbd's main thread holds another identity.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "gf2_compat.h"
#include "gf2_wcache.h"
#include "gf2_settle.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

struct gf2_settle_wait {
	struct tevent_req *req;
	const struct gf2_ident *as;
	void (*start)(struct tevent_req *req);
};

static void gf2_settle_done(struct tevent_req *subreq);

bool gf2_settle_then(TALLOC_CTX *mem_ctx, struct tevent_req *req,
		     struct tevent_context *ev, const char *volname,
		     const struct files_struct *fsp,
		     const struct gf2_ident *as,
		     void (*start)(struct tevent_req *req))
{
	struct tevent_req *subreq = NULL;
	struct gf2_settle_wait *w = NULL;

	if (volname == NULL || fsp->fsp_name == NULL ||
	    !gf2_wc_file_busy(volname, fsp->fsp_name->st.st_ex_ino)) {
		return false;
	}
	subreq = gf2_wc_settle_send(mem_ctx, ev, volname,
				    fsp->fsp_name->st.st_ex_ino);
	if (tevent_req_nomem(subreq, req)) {
		return true;
	}
	w = talloc(subreq, struct gf2_settle_wait);
	if (w == NULL) {
		TALLOC_FREE(subreq);
		tevent_req_oom(req);
		return true;
	}
	*w = (struct gf2_settle_wait) {
		.req = req, .as = as, .start = start,
	};
	tevent_req_set_callback(subreq, gf2_settle_done, w);
	return true;
}

static void gf2_settle_done(struct tevent_req *subreq)
{
	struct gf2_settle_wait w = *(struct gf2_settle_wait *)
		tevent_req_callback_data_void(subreq);
	int err = gf2_wc_settle_recv(subreq);
	bool switched;

	TALLOC_FREE(subreq);	/* and its wait record */
	if (tevent_req_error(w.req, err)) {
		return;
	}
	/* started from a completion: as the request's user */
	switched = gf2_ident_enter(w.as);
	w.start(w.req);
	if (switched) {
		gf2_ident_leave();
	}
}

int gf2_settle_sync(const char *volname, const struct files_struct *fsp)
{
	int err;

	if (volname == NULL || fsp == NULL || fsp->fsp_name == NULL) {
		return 0;
	}
	err = gf2_wc_drain_file_sync(volname, fsp->fsp_name->st.st_ex_ino);
	if (err != 0) {
		errno = err;
		return -1;
	}
	return 0;
}
