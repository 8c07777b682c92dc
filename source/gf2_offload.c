/*
 * glusterfs2: server-side copy (FSCTL_SRV_COPYCHUNK and _WRITE).
 *
 * Layer: glue.
 *
 * Samba's default VFS copies a chunk with copy_file_range(2) on the two
 * kernel descriptors of the handles.  A Gluster handle has none (smbd
 * holds a placeholder descriptor), so that call fails with EBADF and the
 * client gets NT_STATUS_INVALID_HANDLE: the stock vfs_glusterfs module
 * fails every copy-chunk that way.  This module answers the copy itself:
 *
 *   offload_read (FSCTL_SRV_REQUEST_RESUME_KEY): a resume key for the
 *     source handle, kept in this module's token database;
 *   offload_write (FSCTL_SRV_COPYCHUNK*): the key looked up, the handles
 *     checked as Samba's default VFS checks them, then a loop
 *
 *       [source user] strict read-lock check -> SMB_VFS_PREAD_SEND
 *         -> [destination user] strict write-lock check
 *         -> SMB_VFS_PWRITE_SEND -> next chunk ...
 *
 *     through the whole VFS stack, so streams_xattr serves streams, our
 *     prefetch buffers see the writes, and every Gluster call runs as
 *     the user of the handle it is made on.
 *
 * The request runs under the identity of the destination's user when it
 * ends (the cleanup function puts it back), as smbd expects.
 *
 * The source handle is used across the asynchronous steps, but the
 * request that copies is not one of the source's own: a client may close
 * the source meanwhile.  So the request is registered with the source
 * handle as smbd registers its own reads and writes (aio_add_req_to_fsp):
 * smbd's close of the source then waits until the piece in flight is
 * done, and the handle, its Gluster fd and its prefetch state (with any
 * read waiting on it) stay until then.  smbd copies a copy-chunk request
 * chunk by chunk, looking the resume key up again for each: a source that
 * is closing answers the next chunk as a closed one's key would.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbd/globals.h"
#include "lib/util/tevent_ntstatus.h"
#include "librpc/gen_ndr/ioctl.h"
#include "modules/offload_token.h"
#include "gf2_compat.h"
#include "gf2_offload.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/* at most this much in one read/write pair */
#define GF2_OFFLOAD_CHUNK (1024 * 1024)

/* resume keys handed out by this module (one database per smbd) */
static struct vfs_offload_ctx *gf2_offload_ctx;

struct gf2_offload_read_state {
	DATA_BLOB token;
};

struct tevent_req *gf2_offload_read_send(TALLOC_CTX *mem_ctx,
					 struct tevent_context *ev,
					 struct vfs_handle_struct *handle,
					 struct files_struct *fsp,
					 uint32_t fsctl,
					 uint32_t ttl,
					 off_t offset,
					 size_t to_copy)
{
	struct tevent_req *req = NULL;
	struct gf2_offload_read_state *state = NULL;
	NTSTATUS status;

	req = tevent_req_create(mem_ctx, &state,
				struct gf2_offload_read_state);
	if (req == NULL) {
		return NULL;
	}
	if (fsctl != FSCTL_SRV_REQUEST_RESUME_KEY) {
		tevent_req_nterror(req, NT_STATUS_INVALID_DEVICE_REQUEST);
		return tevent_req_post(req, ev);
	}
	status = vfs_offload_token_ctx_init(fsp->conn->sconn->client,
					    &gf2_offload_ctx);
	if (tevent_req_nterror(req, status)) {
		return tevent_req_post(req, ev);
	}
	status = vfs_offload_token_create_blob(state, fsp, fsctl,
					       &state->token);
	if (tevent_req_nterror(req, status)) {
		return tevent_req_post(req, ev);
	}
	status = vfs_offload_token_db_store_fsp(gf2_offload_ctx, fsp,
						&state->token);
	if (tevent_req_nterror(req, status)) {
		return tevent_req_post(req, ev);
	}
	tevent_req_done(req);
	return tevent_req_post(req, ev);
}

NTSTATUS gf2_offload_read_recv(struct tevent_req *req,
			       struct vfs_handle_struct *handle,
			       TALLOC_CTX *mem_ctx,
			       uint32_t *flags,
			       uint64_t *xferlen,
			       DATA_BLOB *token)
{
	struct gf2_offload_read_state *state = tevent_req_data(
		req, struct gf2_offload_read_state);
	NTSTATUS status;

	if (tevent_req_is_nterror(req, &status)) {
		tevent_req_received(req);
		return status;
	}
	*flags = 0;
	*xferlen = 0;
	token->length = state->token.length;
	token->data = talloc_move(mem_ctx, &state->token.data);
	tevent_req_received(req);
	return NT_STATUS_OK;
}

struct gf2_offload_write_state {
	struct tevent_context *ev;
	struct files_struct *src_fsp;
	struct files_struct *dst_fsp;	/* NULL once the identity is back */
	off_t src_off;
	off_t dst_off;
	off_t remaining;
	off_t copied;
	size_t io_size;
	uint8_t *buf;
	bool identity_lost;	/* could not go back to dst_fsp's user */
};

static void gf2_offload_write_cleanup(struct tevent_req *req,
				      enum tevent_req_state req_state)
{
	struct gf2_offload_write_state *state = tevent_req_data(
		req, struct gf2_offload_write_state);
	bool ok;

	if (state->dst_fsp == NULL) {
		return;
	}
	if (req_state == TEVENT_REQ_RECEIVED) {
		/*
		 * Freed before it finished (smbd's exit frees the requests
		 * registered with a handle): nothing continues after it, and
		 * the destination may be gone already.
		 */
		state->dst_fsp = NULL;
		return;
	}
	/*
	 * smbd continues as the destination handle's user.  If that user
	 * cannot be entered again (its session or share is gone), the
	 * copy fails in _recv: the next request enters its own user.
	 */
	ok = change_to_user_and_service_by_fsp(state->dst_fsp);
	if (!ok) {
		DBG_ERR("cannot switch back to the user of %s\n",
			fsp_str_dbg(state->dst_fsp));
		state->identity_lost = true;
	}
	state->dst_fsp = NULL;
}

static bool gf2_offload_lock_ok(struct files_struct *fsp, off_t off,
				off_t len, enum brl_type type)
{
	struct lock_struct lck;

	gf2_init_strict_lock(fsp, fsp->op->global->open_persistent_id,
			     off, len, type, &lck);
	return SMB_VFS_STRICT_LOCK_CHECK(fsp->conn, fsp, &lck);
}

static NTSTATUS gf2_offload_write_next(struct tevent_req *req);
static void gf2_offload_write_read_done(struct tevent_req *subreq);
static void gf2_offload_write_write_done(struct tevent_req *subreq);

struct tevent_req *gf2_offload_write_send(struct vfs_handle_struct *handle,
					  TALLOC_CTX *mem_ctx,
					  struct tevent_context *ev,
					  uint32_t fsctl,
					  DATA_BLOB *token,
					  off_t transfer_offset,
					  struct files_struct *dest_fsp,
					  off_t dest_off,
					  off_t to_copy)
{
	struct tevent_req *req = NULL;
	struct gf2_offload_write_state *state = NULL;
	struct files_struct *src_fsp = NULL;
	NTSTATUS status;
	bool ok;

	req = tevent_req_create(mem_ctx, &state,
				struct gf2_offload_write_state);
	if (req == NULL) {
		return NULL;
	}
	*state = (struct gf2_offload_write_state) {
		.ev = ev,
		.dst_fsp = dest_fsp,
		.src_off = transfer_offset,
		.dst_off = dest_off,
		.remaining = to_copy,
	};
	tevent_req_set_cleanup_fn(req, gf2_offload_write_cleanup);

	switch (fsctl) {
	case FSCTL_SRV_COPYCHUNK:
	case FSCTL_SRV_COPYCHUNK_WRITE:
		break;
	case FSCTL_OFFLOAD_WRITE:
		tevent_req_nterror(req, NT_STATUS_NOT_IMPLEMENTED);
		return tevent_req_post(req, ev);
	case FSCTL_DUP_EXTENTS_TO_FILE:
		/* no copy-on-write clones on Gluster */
		tevent_req_nterror(req, NT_STATUS_INVALID_PARAMETER);
		return tevent_req_post(req, ev);
	default:
		tevent_req_nterror(req, NT_STATUS_INTERNAL_ERROR);
		return tevent_req_post(req, ev);
	}

	if (to_copy == 0) {
		tevent_req_done(req);
		return tevent_req_post(req, ev);
	}
	/* off_t is signed: keep offset + length representable */
	if (to_copy < 0 ||
	    transfer_offset < 0 || transfer_offset > INT64_MAX - to_copy ||
	    dest_off < 0 || dest_off > INT64_MAX - to_copy) {
		tevent_req_nterror(req, NT_STATUS_INVALID_PARAMETER);
		return tevent_req_post(req, ev);
	}

	if (gf2_offload_ctx == NULL) {
		/* no resume key was ever handed out by this smbd */
		tevent_req_nterror(req, NT_STATUS_OBJECT_NAME_NOT_FOUND);
		return tevent_req_post(req, ev);
	}
	status = vfs_offload_token_db_fetch_fsp(gf2_offload_ctx, token,
						&src_fsp);
	if (tevent_req_nterror(req, status)) {
		return tevent_req_post(req, ev);
	}
	if (src_fsp->fsp_flags.closing) {
		/* its key goes with it */
		tevent_req_nterror(req, NT_STATUS_OBJECT_NAME_NOT_FOUND);
		return tevent_req_post(req, ev);
	}
	status = vfs_offload_token_check_handles(fsctl, src_fsp, dest_fsp);
	if (tevent_req_nterror(req, status)) {
		return tevent_req_post(req, ev);
	}

	ok = change_to_user_and_service_by_fsp(src_fsp);
	if (!ok) {
		tevent_req_nterror(req, NT_STATUS_ACCESS_DENIED);
		return tevent_req_post(req, ev);
	}
	state->src_fsp = src_fsp;
	/* the source's close waits for this request (see the top) */
	if (!aio_add_req_to_fsp(src_fsp, req)) {
		tevent_req_nterror(req, NT_STATUS_NO_MEMORY);
		return tevent_req_post(req, ev);
	}

	status = vfs_stat_fsp(src_fsp);
	if (tevent_req_nterror(req, status)) {
		return tevent_req_post(req, ev);
	}
	if (src_fsp->fsp_name->st.st_ex_size < transfer_offset + to_copy) {
		/* what Windows answers for a range past the end of file */
		tevent_req_nterror(req, NT_STATUS_INVALID_VIEW_SIZE);
		return tevent_req_post(req, ev);
	}

	state->buf = talloc_array(state, uint8_t,
				  MIN(to_copy, GF2_OFFLOAD_CHUNK));
	if (tevent_req_nomem(state->buf, req)) {
		return tevent_req_post(req, ev);
	}
	status = gf2_offload_write_next(req);
	if (tevent_req_nterror(req, status)) {
		return tevent_req_post(req, ev);
	}
	return req;
}

/* Read the next piece of the source, as the source handle's user. */
static NTSTATUS gf2_offload_write_next(struct tevent_req *req)
{
	struct gf2_offload_write_state *state = tevent_req_data(
		req, struct gf2_offload_write_state);
	struct tevent_req *subreq = NULL;

	state->io_size = MIN(state->remaining,
			     talloc_array_length(state->buf));
	if (!gf2_offload_lock_ok(state->src_fsp, state->src_off,
				 state->io_size, READ_LOCK)) {
		return NT_STATUS_FILE_LOCK_CONFLICT;
	}
	subreq = SMB_VFS_PREAD_SEND(state, state->ev, state->src_fsp,
				    state->buf, state->io_size,
				    state->src_off);
	if (subreq == NULL) {
		return NT_STATUS_NO_MEMORY;
	}
	tevent_req_set_callback(subreq, gf2_offload_write_read_done, req);
	return NT_STATUS_OK;
}

/*
 * One piece's read or write came back with n bytes: anything but the
 * whole piece fails the copy.  Returns true to go on.
 */
static bool gf2_offload_io_done(struct tevent_req *req,
				struct files_struct *fsp, const char *what,
				ssize_t n, const struct vfs_aio_state *aio)
{
	struct gf2_offload_write_state *state = tevent_req_data(
		req, struct gf2_offload_write_state);

	if (n == -1) {
		DBG_NOTICE("%s of %s failed: %s\n", what, fsp_str_dbg(fsp),
			   strerror(aio->error));
		tevent_req_nterror(req, map_nt_error_from_unix(aio->error));
		return false;
	}
	if ((size_t)n != state->io_size) {
		DBG_NOTICE("short %s of %s: %zd of %zu\n", what,
			   fsp_str_dbg(fsp), n, state->io_size);
		tevent_req_nterror(req, NT_STATUS_IO_DEVICE_ERROR);
		return false;
	}
	return true;
}

static void gf2_offload_write_read_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(
		subreq, struct tevent_req);
	struct gf2_offload_write_state *state = tevent_req_data(
		req, struct gf2_offload_write_state);
	struct vfs_aio_state aio_state = { 0 };
	ssize_t nread;

	nread = SMB_VFS_PREAD_RECV(subreq, &aio_state);
	TALLOC_FREE(subreq);
	/* the size was checked: a short read means the source shrank */
	if (!gf2_offload_io_done(req, state->src_fsp, "read", nread,
				 &aio_state)) {
		return;
	}
	state->src_off += nread;

	if (!change_to_user_and_service_by_fsp(state->dst_fsp)) {
		tevent_req_nterror(req, NT_STATUS_INTERNAL_ERROR);
		return;
	}
	if (!gf2_offload_lock_ok(state->dst_fsp, state->dst_off,
				 state->io_size, WRITE_LOCK)) {
		tevent_req_nterror(req, NT_STATUS_FILE_LOCK_CONFLICT);
		return;
	}
	subreq = SMB_VFS_PWRITE_SEND(state, state->ev, state->dst_fsp,
				     state->buf, state->io_size,
				     state->dst_off);
	if (tevent_req_nomem(subreq, req)) {
		return;
	}
	tevent_req_set_callback(subreq, gf2_offload_write_write_done, req);
}

static void gf2_offload_write_write_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(
		subreq, struct tevent_req);
	struct gf2_offload_write_state *state = tevent_req_data(
		req, struct gf2_offload_write_state);
	struct vfs_aio_state aio_state = { 0 };
	ssize_t nwritten;
	NTSTATUS status;

	nwritten = SMB_VFS_PWRITE_RECV(subreq, &aio_state);
	TALLOC_FREE(subreq);
	if (!gf2_offload_io_done(req, state->dst_fsp, "write", nwritten,
				 &aio_state)) {
		return;
	}
	state->dst_off += nwritten;
	state->copied += nwritten;
	state->remaining -= nwritten;
	if (state->remaining == 0) {
		tevent_req_done(req);
		return;
	}
	if (!change_to_user_and_service_by_fsp(state->src_fsp)) {
		tevent_req_nterror(req, NT_STATUS_INTERNAL_ERROR);
		return;
	}
	status = gf2_offload_write_next(req);
	if (tevent_req_nterror(req, status)) {
		return;
	}
}

NTSTATUS gf2_offload_write_recv(struct vfs_handle_struct *handle,
				struct tevent_req *req,
				off_t *copied)
{
	struct gf2_offload_write_state *state = tevent_req_data(
		req, struct gf2_offload_write_state);
	NTSTATUS status;

	if (tevent_req_is_nterror(req, &status)) {
		DBG_DEBUG("copy chunk failed: %s\n", nt_errstr(status));
		*copied = 0;
		tevent_req_received(req);
		return status;
	}
	if (state->identity_lost) {
		*copied = 0;
		tevent_req_received(req);
		return NT_STATUS_INTERNAL_ERROR;
	}
	*copied = state->copied;
	tevent_req_received(req);
	return NT_STATUS_OK;
}
