/*
 * glusterfs2: the write engine (see include/gf2_write.h).
 *
 * Layer: engines.
 *
 * A write, from the VFS entry to its answer:
 *
 *   gf2_write_send --append?--> gf2_settle_sync, offset = size
 *        |
 *        v
 *   gf2_cache_change_begin (DATA [offset, offset + n))
 *        |-- write-caching lease, write cache on: the handle's write
 *        |   cache (made once, with its bracket gf2_cache_queued_new),
 *        |   gf2_cache_queued_begin, gf2_wc_write_send --> done
 *        '-- else gf2_cache_write_begin, gf2_pwrite_send --> done
 *
 * The change ends (prefetching on the file goes on, listings keep its
 * stat again) when the write is on the bricks: the bridge, or the write
 * cache, calls gf2_cache_write_end with the bracket's record.
 *
 * An fsync:
 *
 *   gf2_write_fsync_send --busy file?--> gf2_settle_then --settled--.
 *        |                                                          |
 *        '----------------------------------------------------------+
 *                                                                   v
 *   gf2_write_fsync_start: a directory: nothing (gf2_fsync_none_send);
 *   a handle with a write cache: gf2_wc_fsync_send (its queue first);
 *   else gf2_fsync_send --> an error another handle's queued write of
 *   the file met (gf2_wc_file_error) --> done
 *
 * FLUSH, and the fsync after a WRITE_THROUGH write, answer for the file,
 * not for the handle: Windows opens a file more than once under one
 * lease key and may write through one handle and flush another.  First
 * every write this process acknowledged of the file, through any handle,
 * lands; then this handle's own queue is drained and Gluster's fsync
 * sent.  An error that another handle's queued write met is reported too
 * (that handle keeps it for its own next write, FLUSH or close).
 *
 * Ownership: smbd owns the request and keeps fsp until it is done; what
 * is in flight is a child of the request's state (the bridge orphans a
 * write still in flight, the write cache unlinks a waiter).
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbprofile.h"
#include "lib/util/tevent_unix.h"
#include "gf2_compat.h"
#include "gf2_wcache.h"
#include "gf2_cache.h"
#include "gf2_meta.h"
#include "gf2_settle.h"
#include "gf2_write.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/*
 * The handle holds a write-caching lease or an exclusive or batch oplock,
 * and no break of it is under way: no other opener can exist without a
 * break first, so a write may be acknowledged once queued.
 */
static bool gf2_write_caching(const struct files_struct *fsp)
{
	if (fsp->oplock_type == LEASE_OPLOCK) {
		return fsp->lease != NULL &&
		       (fsp->lease->lease.lease_state & SMB2_LEASE_WRITE) &&
		       !(fsp->lease->lease.lease_flags &
			 SMB2_LEASE_FLAG_BREAK_IN_PROGRESS);
	}
	/* a batch oplock is BATCH_OPLOCK|EXCLUSIVE_OPLOCK */
	if (EXCLUSIVE_OPLOCK_TYPE(fsp->oplock_type)) {
		return fsp->sent_oplock_break == NO_BREAK_SENT;
	}
	return false;
}

/*
 * A POSIX append write (offset VFS_PWRITE_APPEND_OFFSET, gf2_compat.h)
 * goes to the end of the file: the offset becomes the file's size.  The
 * Gluster file was opened with O_APPEND (smbd adds it), so the brick
 * appends even when another client grew the file in between; the size
 * only tells the caches which range changed.
 */
static off_t gf2_write_offset(files_struct *fsp, glfs_fd_t *fd,
			      off_t offset)
{
	struct stat st;

	if (!gf2_is_append_write(fsp, offset)) {
		return offset;
	}
	if (fd == NULL || glfs_fstat(fd, &st) != 0) {
		return offset;	/* the write then fails with EINVAL */
	}
	return st.st_size;
}

struct gf2_write_state {
	bool cached;		/* through the handle's write cache */
	uint64_t ino;
	off_t offset;
	ssize_t ret;
	struct vfs_aio_state aio_state;
};

static void gf2_write_done(struct tevent_req *subreq);

/*
 * The handle's write cache, made by its first cached write.  NULL (no
 * memory, no registry): the write goes directly.
 */
static struct gf2_wc *gf2_write_wc(struct files_struct *fsp,
				   struct tevent_context *ev,
				   const struct gf2_write_file *f)
{
	struct gf2_write_slot *slot = f->slot;

	if (slot->wc != NULL) {
		return slot->wc;
	}
	slot->bracket = gf2_cache_queued_new(fsp, f->change.pf,
					     fsp->file_id.inode);
	if (slot->bracket != NULL) {
		slot->wc = gf2_wc_new(fsp, ev, f->fh, f->st, f->volname,
				      fsp->fsp_name->st.st_ex_ino,
				      f->wc_max_wait_ms, gf2_cache_write_end,
				      slot->bracket);
	}
	if (slot->wc == NULL) {
		TALLOC_FREE(slot->bracket);
	}
	return slot->wc;
}

struct tevent_req *gf2_write_send(TALLOC_CTX *mem_ctx,
				  struct tevent_context *ev,
				  struct files_struct *fsp,
				  const struct gf2_write_file *f,
				  const void *data, size_t n, off_t offset)
{
	struct tevent_req *req = NULL;
	struct tevent_req *subreq = NULL;
	struct gf2_write_state *state = NULL;
	struct gf2_change ch = f->change;
	struct gf2_cache_write *w = NULL;
	bool append = gf2_is_append_write(fsp, offset);
	bool cache = false;

	req = tevent_req_create(mem_ctx, &state, struct gf2_write_state);
	if (req == NULL) {
		return NULL;
	}
	*state = (struct gf2_write_state) {
		.ret = -1, .ino = fsp->file_id.inode,
	};
	if (append) {
		/*
		 * queued bytes first: an append goes after them (if the
		 * wait gave up, what was sent already is still ahead)
		 */
		(void)gf2_settle_sync(f->volname, fsp);
		offset = gf2_write_offset(fsp,
					  f->fh != NULL ? f->fh->fd : NULL,
					  offset);
	}
	state->offset = offset;
	ch.off = offset;
	ch.len = n;
	gf2_cache_change_begin(&ch);
	cache = !append && f->write_cache && f->slot != NULL &&
		f->fh != NULL && f->fh->fd != NULL && gf2_write_caching(fsp);
	if (cache) {
		(void)gf2_write_wc(fsp, ev, f);
	}
	if (f->slot != NULL && f->slot->wc != NULL) {
		/*
		 * Checked on every write: a break stops early answers.
		 * Until the write is on the bricks (queued or not),
		 * listings keep no stat of the file: smbd's stat of a
		 * listed entry waits for the queued bytes, and must then
		 * not be answered with a stat the listing read before
		 * they landed.
		 */
		gf2_cache_queued_begin(f->slot->bracket);
		subreq = gf2_wc_write_send(state, ev, f->slot->wc, cache, data,
					   n, offset);
		if (subreq == NULL) {
			gf2_cache_write_end(f->slot->bracket);
			TALLOC_FREE(req);
			return NULL;
		}
		state->cached = true;
		tevent_req_set_callback(subreq, gf2_write_done, req);
		return req;
	}
	/* until the write ends, listings keep no stat of the file */
	w = gf2_cache_write_begin(ch.pf, fsp->file_id.inode);
	if (w == NULL) {
		gf2_cache_change_end(&ch);
		TALLOC_FREE(req);
		return NULL;
	}
	subreq = gf2_pwrite_send(state, ev, f->fh, data, n, offset,
				 gf2_cache_write_end, w);
	if (subreq == NULL) {
		/* never sent: the change ends here (prefetch goes on) */
		gf2_cache_write_end(w);
		TALLOC_FREE(req);
		return NULL;
	}
	tevent_req_set_callback(subreq, gf2_write_done, req);
	return req;
}

static void gf2_write_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(subreq,
							  struct tevent_req);
	struct gf2_write_state *state = tevent_req_data(
		req, struct gf2_write_state);

	if (state->cached) {
		state->ret = gf2_wc_write_recv(subreq, &state->aio_state);
	} else {
		state->ret = gf2_pwrite_recv(subreq, &state->aio_state);
	}
	TALLOC_FREE(subreq);
	if (state->ret < 0) {
		tevent_req_error(req, state->aio_state.error);
		return;
	}
	gf2_meta_written(state->ino, (uint64_t)state->offset +
			 (uint64_t)state->ret);
	tevent_req_done(req);
}

ssize_t gf2_write_recv(struct tevent_req *req,
		       struct vfs_aio_state *aio_state)
{
	struct gf2_write_state *state = tevent_req_data(
		req, struct gf2_write_state);
	ssize_t ret = -1;
	int err;

	if (tevent_req_is_unix_error(req, &err)) {
		aio_state->error = err;
	} else {
		*aio_state = state->aio_state;
		ret = state->ret;
	}
	tevent_req_received(req);
	return ret;
}

ssize_t gf2_write_sync(struct vfs_handle_struct *handle,
		       struct files_struct *fsp, glfs_fd_t *fd,
		       const struct gf2_write_file *f,
		       const void *data, size_t n, off_t offset)
{
	struct gf2_change ch = f->change;
	ssize_t ret;

	/* queued bytes first: an append goes after them */
	if (gf2_settle_sync(f->volname, fsp) != 0) {
		return -1;
	}
	ch.off = gf2_write_offset(fsp, fd, offset);
	ch.len = n;
	gf2_cache_change_begin(&ch);
	GF2_START_PROFILE_BYTES(handle, syscall_pwrite, n);
	ret = glfs_pwrite(fd, data, n, ch.off, 0, NULL, NULL);
	GF2_END_PROFILE_BYTES(syscall_pwrite);
	gf2_cache_change_end(&ch);
	if (ret > 0) {
		gf2_meta_written(fsp->file_id.inode,
				 (uint64_t)ch.off + (uint64_t)ret);
	}
	return ret;
}

struct gf2_write_fsync_state {
	struct tevent_context *ev;
	struct files_struct *fsp;
	struct gf2_write_file f;
	bool cached;		/* the fsync went through the handle's cache */
	struct gf2_ident as;	/* the fsync may start from a completion */
	struct vfs_aio_state aio_state;
};

static void gf2_write_fsync_start(struct tevent_req *req);
static void gf2_write_fsync_done(struct tevent_req *subreq);

struct tevent_req *gf2_write_fsync_send(TALLOC_CTX *mem_ctx,
					struct tevent_context *ev,
					struct files_struct *fsp,
					const struct gf2_write_file *f)
{
	struct tevent_req *req = NULL;
	struct gf2_write_fsync_state *state = NULL;

	req = tevent_req_create(mem_ctx, &state,
				struct gf2_write_fsync_state);
	if (req == NULL) {
		return NULL;
	}
	*state = (struct gf2_write_fsync_state) {
		.ev = ev, .fsp = fsp, .f = *f,
	};
	if (!gf2_ident_capture(state, &state->as)) {
		tevent_req_oom(req);
		return tevent_req_post(req, ev);
	}
	if (!gf2_settle_then(state, req, ev, f->volname, fsp, &state->as,
			     gf2_write_fsync_start)) {
		gf2_write_fsync_start(req);
	}
	if (!tevent_req_is_in_progress(req)) {
		return tevent_req_post(req, ev);
	}
	return req;
}

/* Settled: the handle's own queue, then Gluster's fsync. */
static void gf2_write_fsync_start(struct tevent_req *req)
{
	struct gf2_write_fsync_state *state = tevent_req_data(
		req, struct gf2_write_fsync_state);
	struct gf2_write_slot *slot = state->f.slot;
	struct tevent_req *subreq = NULL;

	state->cached = !state->f.is_dir && slot != NULL && slot->wc != NULL;
	if (state->f.is_dir) {
		/*
		 * smbd lets a directory opened to add entries be flushed;
		 * a local share answers with fsync(2) of the directory.
		 * Entries are made on the bricks before they answer.
		 */
		subreq = gf2_fsync_none_send(state, state->ev);
	} else if (state->cached) {
		/* what this handle acknowledged goes first, then the fsync */
		subreq = gf2_wc_fsync_send(state, state->ev, slot->wc);
	} else {
		subreq = gf2_fsync_send(state, state->ev, state->f.fh);
	}
	if (tevent_req_nomem(subreq, req)) {
		return;
	}
	tevent_req_set_callback(subreq, gf2_write_fsync_done, req);
}

static void gf2_write_fsync_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(subreq,
							  struct tevent_req);
	struct gf2_write_fsync_state *state = tevent_req_data(
		req, struct gf2_write_fsync_state);
	int ret;
	int err;

	if (state->cached) {
		ret = gf2_wc_fsync_recv(subreq, &state->aio_state);
	} else {
		ret = gf2_fsync_recv(subreq, &state->aio_state);
	}
	TALLOC_FREE(subreq);
	if (ret != 0) {
		tevent_req_error(req, state->aio_state.error);
		return;
	}
	if (state->f.volname != NULL && state->fsp->fsp_name != NULL) {
		err = gf2_wc_file_error(state->f.volname,
					state->fsp->fsp_name->st.st_ex_ino);
		if (err != 0) {
			DBG_NOTICE("%s: a write acknowledged through another "
				   "handle failed: %s\n",
				   fsp_str_dbg(state->fsp), strerror(err));
			state->aio_state.error = err;
			tevent_req_error(req, err);
			return;
		}
	}
	tevent_req_done(req);
}

int gf2_write_fsync_recv(struct tevent_req *req,
			 struct vfs_aio_state *aio_state)
{
	struct gf2_write_fsync_state *state = tevent_req_data(
		req, struct gf2_write_fsync_state);
	int err;

	if (tevent_req_is_unix_error(req, &err)) {
		aio_state->error = err;
		tevent_req_received(req);
		return -1;
	}
	*aio_state = state->aio_state;
	tevent_req_received(req);
	return 0;
}
