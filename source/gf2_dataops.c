/*
 * glusterfs2: data operations: reads, writes, fsync, truncate, allocation
 * and byte-range locks.
 *
 * Layer: glue.
 *
 * Reads are handed to the read engine (gf2_read.c), which settles them,
 * lets prefetch answer them or sends them to Gluster.  Writes and fsyncs
 * go to the write cache (gf2_wcache.c) or to the bridge from here.  Every
 * change of a file's data is bracketed by gf2_change_begin/end: the overlapping
 * prefetched data is dropped and prefetching paused until the change is
 * on the bricks, and the file's kept stat is dropped.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbprofile.h"
#include "lib/util/tevent_unix.h"
#include "gf2_vfs.h"

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
 * The prefetch state of the file behind fsp, shared by all its handles in
 * this process.  With prefetch off for the share, only one that another
 * share made (its changes must drop what that one prefetched; its reads
 * go to Gluster), else NULL.
 */
static struct gf2_pf_file *gf2_handle_pf(struct gf2_conn *c,
					 const struct files_struct *fsp,
					 struct gf2_handle *h)
{
	if (h == NULL || h->fh->fd == NULL) {
		return NULL;
	}
	if (h->pf == NULL) {
		h->pf = c->pf->enabled ? gf2_pf_file_get(&fsp->file_id) :
					 gf2_pf_file_find(&fsp->file_id);
	}
	return h->pf;
}

/*
 * [off, off + len) of fsp's data is about to change (len 0: from off to
 * the end, and the size).  Returns the prefetch state to pass to
 * gf2_change_end once the change is on the bricks (may be NULL).
 */
static struct gf2_pf_file *gf2_change_begin(struct vfs_handle_struct *handle,
					    files_struct *fsp,
					    struct gf2_handle *h,
					    uint64_t off, uint64_t len)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_pf_file *pf = gf2_handle_pf(c, fsp, h);

	if (pf != NULL) {
		gf2_pf_write_begin(pf, off, len);
	}
	gf2_meta_changed_stat_fsp(c, fsp, h);
	return pf;
}

static void gf2_change_end(void *arg)
{
	struct gf2_pf_file *pf = arg;

	if (pf != NULL) {
		gf2_pf_write_end(pf);
	}
}

ssize_t gf2_pread(struct vfs_handle_struct *handle, files_struct *fsp,
		  void *data, size_t n, off_t offset)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);

	if (fd == NULL) {
		return -1;
	}
	return gf2_read_sync(handle, fsp, fd, gf2_volname(handle), data, n,
			     offset);
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

ssize_t gf2_pwrite(struct vfs_handle_struct *handle, files_struct *fsp,
		   const void *data, size_t n, off_t offset)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct gf2_pf_file *pf = NULL;
	ssize_t ret;

	if (fd == NULL) {
		return -1;
	}
	/* queued bytes first: an append goes after them */
	if (gf2_settle_sync(gf2_volname(handle), fsp) != 0) {
		return -1;
	}
	offset = gf2_write_offset(fsp, fd, offset);
	pf = gf2_change_begin(handle, fsp, gf2_handle_of(handle, fsp),
			      offset, n);
	GF2_START_PROFILE_BYTES(handle, syscall_pwrite, n);
	ret = glfs_pwrite(fd, data, n, offset, 0, NULL, NULL);
	GF2_END_PROFILE_BYTES(syscall_pwrite);
	gf2_change_end(pf);
	return ret;
}

struct tevent_req *gf2_pread_send_fn(struct vfs_handle_struct *handle,
				     TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct files_struct *fsp,
				     void *data, size_t n, off_t offset)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_handle *h = gf2_handle_of(handle, fsp);
	struct gf2_read_file f = {
		.fh = h != NULL ? h->fh : NULL,
		.pf = gf2_handle_pf(c, fsp, h),
		.cfg = c->pf,
		.volname = c->vol->volname,
	};

	return gf2_read_send(mem_ctx, ev, fsp, &f, data, n, offset);
}

ssize_t gf2_pread_recv_fn(struct tevent_req *req,
			  struct vfs_aio_state *aio_state)
{
	return gf2_read_recv(req, aio_state);
}

struct tevent_req *gf2_pwrite_send_fn(struct vfs_handle_struct *handle,
				      TALLOC_CTX *mem_ctx,
				      struct tevent_context *ev,
				      struct files_struct *fsp,
				      const void *data, size_t n,
				      off_t offset)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_handle *h = gf2_handle_of(handle, fsp);
	struct gf2_pf_file *pf = NULL;
	struct gf2_cache_write *w = NULL;
	bool append = gf2_is_append_write(fsp, offset);
	bool cache = false;

	if (append) {
		/*
		 * queued bytes first: an append goes after them (if the
		 * wait gave up, what was sent already is still ahead)
		 */
		(void)gf2_settle_sync(gf2_volname(handle), fsp);
		offset = gf2_write_offset(fsp, gf2_io_fd(handle, fsp), offset);
	}
	pf = gf2_change_begin(handle, fsp, h, offset, n);
	cache = !append && c != NULL && c->write_cache && h != NULL &&
		h->fh != NULL && h->fh->fd != NULL && gf2_write_caching(fsp);
	if (cache && h->wc == NULL) {
		/* NULL (no memory, no registry): written directly */
		h->wc_bracket = gf2_cache_queued_new(fsp, pf,
						     fsp->file_id.inode);
		if (h->wc_bracket != NULL) {
			h->wc = gf2_wc_new(fsp, ev, h->fh, c->st,
					   c->vol->volname,
					   fsp->fsp_name->st.st_ex_ino,
					   c->wc_max_wait_ms,
					   gf2_cache_write_end, h->wc_bracket);
		}
		if (h->wc == NULL) {
			TALLOC_FREE(h->wc_bracket);
		}
	}
	if (h != NULL && h->wc != NULL) {
		/*
		 * Checked on every write: a break stops early answers.
		 * Until the write is on the bricks (queued or not),
		 * listings keep no stat of the file: smbd's stat of a
		 * listed entry waits for the queued bytes, and must then
		 * not be answered with a stat the listing read before
		 * they landed.
		 */
		struct tevent_req *req = NULL;

		gf2_cache_queued_begin(h->wc_bracket);
		req = gf2_wc_write_send(mem_ctx, ev, h->wc, cache, data, n,
					offset);
		if (req == NULL) {
			gf2_cache_write_end(h->wc_bracket);
		}
		return req;
	}
	/* until the write ends, listings keep no stat of the file */
	w = gf2_cache_write_begin(pf, fsp->file_id.inode);
	if (w == NULL) {
		gf2_change_end(pf);
		return NULL;
	}
	return gf2_pwrite_send(mem_ctx, ev, h != NULL ? h->fh : NULL, data, n,
			       offset, gf2_cache_write_end, w);
}

ssize_t gf2_pwrite_recv_fn(struct tevent_req *req,
			   struct vfs_aio_state *aio_state)
{
	if (gf2_wc_is_req(req)) {
		return gf2_wc_write_recv(req, aio_state);
	}
	return gf2_pwrite_recv(req, aio_state);
}

/*
 * FLUSH, and the fsync after a WRITE_THROUGH write, answer for the file,
 * not for the handle: Windows opens a file more than once under one lease
 * key and may write through one handle and flush another.  First every
 * write this process acknowledged of the file, through any handle, lands
 * (gf2_wc_settle_send, without blocking the main loop); then this
 * handle's own queue is drained and Gluster's fsync sent.  An error that
 * another handle's queued write met is reported too (that handle keeps
 * it for its own next write, FLUSH or close).  smbd keeps fsp until the
 * request is done.
 */
struct gf2_file_fsync_state {
	struct vfs_handle_struct *handle;
	struct tevent_context *ev;
	struct files_struct *fsp;
	bool cached;		/* the fsync went through the handle's cache */
	struct gf2_ident as;	/* the fsync may start from a completion */
	struct vfs_aio_state aio_state;
};

static void gf2_file_fsync_settled(struct tevent_req *subreq);
static void gf2_file_fsync_done(struct tevent_req *subreq);

static bool gf2_file_fsync_start(struct tevent_req *req)
{
	struct gf2_file_fsync_state *state = tevent_req_data(
		req, struct gf2_file_fsync_state);
	struct gf2_handle *h = gf2_handle_of(state->handle, state->fsp);
	struct tevent_req *subreq = NULL;

	state->cached = h != NULL && !h->is_dir && h->wc != NULL;
	if (h != NULL && h->is_dir) {
		/*
		 * smbd lets a directory opened to add entries be flushed;
		 * a local share answers with fsync(2) of the directory.
		 * Entries are made on the bricks before they answer.
		 */
		subreq = gf2_fsync_none_send(state, state->ev);
	} else if (state->cached) {
		/* what this handle acknowledged goes first, then the fsync */
		subreq = gf2_wc_fsync_send(state, state->ev, h->wc);
	} else {
		subreq = gf2_fsync_send(state, state->ev,
					h != NULL ? h->fh : NULL);
	}
	if (tevent_req_nomem(subreq, req)) {
		return false;
	}
	tevent_req_set_callback(subreq, gf2_file_fsync_done, req);
	return true;
}

struct tevent_req *gf2_fsync_send_fn(struct vfs_handle_struct *handle,
				     TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct files_struct *fsp)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct tevent_req *req = NULL;
	struct tevent_req *subreq = NULL;
	struct gf2_file_fsync_state *state = NULL;

	req = tevent_req_create(mem_ctx, &state, struct gf2_file_fsync_state);
	if (req == NULL) {
		return NULL;
	}
	*state = (struct gf2_file_fsync_state) {
		.handle = handle, .ev = ev, .fsp = fsp,
	};
	if (!gf2_ident_capture(state, &state->as)) {
		tevent_req_oom(req);
		return tevent_req_post(req, ev);
	}
	if (c == NULL || fsp->fsp_name == NULL ||
	    !gf2_wc_file_busy(c->vol->volname,
			      fsp->fsp_name->st.st_ex_ino)) {
		if (!gf2_file_fsync_start(req)) {
			return tevent_req_post(req, ev);
		}
		return req;
	}
	subreq = gf2_wc_settle_send(state, ev, c->vol->volname,
				    fsp->fsp_name->st.st_ex_ino);
	if (tevent_req_nomem(subreq, req)) {
		return tevent_req_post(req, ev);
	}
	tevent_req_set_callback(subreq, gf2_file_fsync_settled, req);
	return req;
}

static void gf2_file_fsync_settled(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(subreq,
							  struct tevent_req);
	struct gf2_file_fsync_state *state = tevent_req_data(
		req, struct gf2_file_fsync_state);
	int err = gf2_wc_settle_recv(subreq);
	bool switched;

	TALLOC_FREE(subreq);
	if (tevent_req_error(req, err)) {
		return;
	}
	switched = gf2_ident_enter(&state->as);
	(void)gf2_file_fsync_start(req);
	if (switched) {
		gf2_ident_leave();
	}
}

static void gf2_file_fsync_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(subreq,
							  struct tevent_req);
	struct gf2_file_fsync_state *state = tevent_req_data(
		req, struct gf2_file_fsync_state);
	struct gf2_conn *c = gf2_conn_of(state->handle);
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
	if (c != NULL && state->fsp->fsp_name != NULL) {
		err = gf2_wc_file_error(c->vol->volname,
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

int gf2_fsync_recv_fn(struct tevent_req *req,
		      struct vfs_aio_state *aio_state)
{
	struct gf2_file_fsync_state *state = tevent_req_data(
		req, struct gf2_file_fsync_state);
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

off_t gf2_lseek(struct vfs_handle_struct *handle, files_struct *fsp,
		off_t offset, int whence)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);

	if (fd == NULL) {
		return -1;
	}
	return glfs_lseek(fd, offset, whence);
}

int gf2_ftruncate(struct vfs_handle_struct *handle, files_struct *fsp,
		  off_t len)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct gf2_pf_file *pf = NULL;
	int ret;

	if (fd == NULL) {
		return -1;
	}
	if (gf2_settle_sync(gf2_volname(handle), fsp) != 0) {
		return -1;
	}
	pf = gf2_change_begin(handle, fsp, gf2_handle_of(handle, fsp), 0, 0);
	GF2_START_PROFILE(handle, syscall_ftruncate);
	ret = glfs_ftruncate(fd, len, NULL, NULL);
	GF2_END_PROFILE(syscall_ftruncate);
	gf2_change_end(pf);
	return ret;
}

int gf2_fallocate(struct vfs_handle_struct *handle,
		  struct files_struct *fsp, uint32_t mode,
		  off_t offset, off_t len)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct gf2_pf_file *pf = NULL;
	int keep_size = mode & VFS_FALLOCATE_FL_KEEP_SIZE;
	int punch_hole = mode & VFS_FALLOCATE_FL_PUNCH_HOLE;
	int ret;

	if (fd == NULL) {
		return -1;
	}
	mode &= ~(VFS_FALLOCATE_FL_KEEP_SIZE | VFS_FALLOCATE_FL_PUNCH_HOLE);
	if (mode != 0) {
		errno = ENOTSUP;
		return -1;
	}
	if (gf2_settle_sync(gf2_volname(handle), fsp) != 0) {
		return -1;
	}
	pf = gf2_change_begin(handle, fsp, gf2_handle_of(handle, fsp), 0, 0);
	GF2_START_PROFILE(handle, syscall_fallocate);
	if (punch_hole) {
		ret = glfs_discard(fd, offset, len);
	} else {
		ret = glfs_fallocate(fd, keep_size, offset, len);
	}
	GF2_END_PROFILE(syscall_fallocate);
	gf2_change_end(pf);
	return ret;
}

bool gf2_lock(struct vfs_handle_struct *handle, files_struct *fsp,
	      int op, off_t offset, off_t count, int type)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct flock fl = { 0 };
	int ret;

	if (fd == NULL) {
		return false;
	}
	if (gf2_settle_sync(gf2_volname(handle), fsp) != 0) {
		return false;
	}
	GF2_START_PROFILE(handle, syscall_fcntl_lock);
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = offset;
	fl.l_len = count;
	fl.l_pid = 0;
	ret = glfs_posix_lock(fd, op, &fl);
	GF2_END_PROFILE(syscall_fcntl_lock);

	if (op == F_GETLK) {
		/* lock query: true if there is a conflicting lock */
		if (ret == -1) {
			return false;
		}
		if (fl.l_type != F_UNLCK && fl.l_pid != 0 &&
		    fl.l_pid != getpid()) {
			return true;
		}
		return false;
	}
	return ret != -1;
}

/*
 * smbd asks whether another process holds a POSIX lock on the range of
 * every read and write of a handle without a lease (strict locking =
 * auto, posix locking = yes): on Gluster a synchronous round trip to the
 * brick, on smbd's main loop, per request.  SMB clients' own locks are in
 * smbd's lock database and checked before this; what this finds are
 * locks of other Gluster clients (FUSE, NFS).  0 (the default): every
 * check asks Gluster, as the stock module does, and a lock another client
 * took is seen by the next request.  With a lock cache of N ms the module
 * asks once for the whole file; when no other owner holds a lock anywhere
 * in it, the answer "not locked" is given for N ms without asking again,
 * so a lock another client takes meanwhile is seen up to N ms late
 * (smbd's check-then-read lets a lock taken between check and read pass
 * either way).
 */
static bool gf2_getlock_probe(struct vfs_handle_struct *handle,
			      glfs_fd_t *fd, struct flock *fl)
{
	int ret;

	GF2_START_PROFILE(handle, syscall_fcntl_getlock);
	ret = glfs_posix_lock(fd, F_GETLK, fl);
	GF2_END_PROFILE(syscall_fcntl_getlock);
	return ret != -1;
}

/*
 * glusterfs2:lock check = lease (gf2_lease.c): true when a read lease on
 * the file, held and not recalled, answers the check.  The first check
 * of a handle (and the first after a refusal or a recall, once the
 * bricks may grant one again) asks for the lease and then whether any
 * lock of another owner exists anywhere in the file: locks granted
 * before the lease are not recalled, later ones are.  Until one is
 * trusted, checks ask the bricks.
 */
static bool gf2_getlock_lease(struct vfs_handle_struct *handle,
			      struct gf2_conn *c, struct gf2_handle *h,
			      files_struct *fsp, glfs_fd_t *fd)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
	};
	uint64_t now;

	if (!c->vol->lease_recalls || !fsp->fsp_flags.can_read) {
		return false;
	}
	if (h->lease == NULL) {
		glfs_fd_t *lfd = NULL;
		bool own = false;

		if (h->lease_fd_failed) {
			return false;
		}
		lfd = gf2_lease_fd(c, fsp, h, &own);
		if (lfd != NULL) {
			h->lease = gf2_lease_new(lfd, own, fsp->file_id.inode);
		}
		if (h->lease == NULL) {
			if (own) {
				glfs_close(lfd);
			}
			h->lease_fd_failed = true;
			return false;
		}
	}
	if (gf2_lease_trusted(h->lease)) {
		return true;
	}
	now = gf2_now_ms();
	if (!gf2_lease_due(h->lease, now) ||
	    !gf2_lease_take(h->lease, c->vol->volname, now)) {
		return false;
	}
	if (!gf2_getlock_probe(handle, fd, &fl) || fl.l_type != F_UNLCK) {
		gf2_lease_untrust(h->lease, now);
		return false;
	}
	return gf2_lease_trust(h->lease, now);
}

bool gf2_getlock(struct vfs_handle_struct *handle,
		 files_struct *fsp, off_t *poffset, off_t *pcount,
		 int *ptype, pid_t *ppid)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_handle *h = gf2_handle_of(handle, fsp);
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct flock fl = { 0 };
	uint64_t now;

	if (fd == NULL) {
		return false;
	}
	if (c != NULL && c->lock_lease && h != NULL &&
	    gf2_getlock_lease(handle, c, h, fsp, fd)) {
		*ptype = F_UNLCK;
		return true;
	}
	if (c != NULL && c->lock_cache_ms > 0 && h != NULL) {
		now = gf2_now_ms();
		if (now < h->nolocks_until) {
			*ptype = F_UNLCK;
			return true;
		}
		/* any lock of another owner anywhere in the file? */
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		fl.l_start = 0;
		fl.l_len = 0;
		if (gf2_getlock_probe(handle, fd, &fl) && fl.l_type == F_UNLCK) {
			h->nolocks_until = now + c->lock_cache_ms;
			*ptype = F_UNLCK;
			return true;
		}
		ZERO_STRUCT(fl);
	}
	fl.l_type = *ptype;
	fl.l_whence = SEEK_SET;
	fl.l_start = *poffset;
	fl.l_len = *pcount;
	fl.l_pid = 0;
	if (!gf2_getlock_probe(handle, fd, &fl)) {
		return false;
	}
	*ptype = fl.l_type;
	*poffset = fl.l_start;
	*pcount = fl.l_len;
	*ppid = fl.l_pid;
	return true;
}
