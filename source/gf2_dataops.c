/*
 * glusterfs2: data operations: reads, writes, fsync, truncate, allocation
 * and byte-range locks.
 *
 * Layer: glue.
 *
 * Reads are handed to the read engine (gf2_read.c), writes and fsyncs to
 * the write engine (gf2_write.c), with what the glue knows of the file.
 * Every change of a file's data goes through the change bracket
 * (gf2_cache_change_begin/end, gf2_cache.c): the overlapping prefetched
 * data is dropped and prefetching paused until the change is on the
 * bricks, and the file's kept stat is dropped.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbprofile.h"
#include "lib/util/tevent_unix.h"
#include "gf2_vfs.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/*
 * Where fsp's handle keeps the prefetch state of its file (shared by all
 * the file's handles in this process; gf2_pf_file_of looks it up at its
 * first use): NULL when the handle has no glfs_fd.
 */
static struct gf2_pf_file **gf2_handle_pf_slot(struct gf2_handle *h)
{
	if (h == NULL || h->fh->fd == NULL) {
		return NULL;
	}
	return &h->pf;
}

/*
 * What the glue knows of fsp's file for the write engine, and the DATA
 * change of it for the change bracket (ref: where its path is made from,
 * the caller's).  data: the request changes the data, so the file's
 * prefetch state is wanted (and made, with prefetch on); an fsync
 * changes nothing.
 */
static void gf2_write_file_of(struct gf2_write_file *f,
			      struct gf2_fsp_ref *ref,
			      struct vfs_handle_struct *handle,
			      const struct files_struct *fsp, bool data)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_handle *h = gf2_handle_of(handle, fsp);

	*f = (struct gf2_write_file) {
		.fh = h != NULL ? h->fh : NULL,
		.slot = h != NULL ? &h->wcache : NULL,
		.is_dir = h != NULL && h->is_dir,
		.volname = c != NULL ? c->vol->volname : NULL,
		.st = c != NULL ? c->st : NULL,
		.write_cache = c != NULL && c->write_cache,
		.wc_max_wait_ms = c != NULL ? c->wc_max_wait_ms : 0,
	};
	gf2_change_of_fsp(&f->change, ref, c, fsp, h, GF2_CHANGE_DATA);
	if (data) {
		f->change.pf = gf2_pf_file_of(gf2_handle_pf_slot(h),
					      &fsp->file_id, c->pf->enabled);
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

ssize_t gf2_pwrite(struct vfs_handle_struct *handle, files_struct *fsp,
		   const void *data, size_t n, off_t offset)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct gf2_write_file f;
	struct gf2_fsp_ref ref;

	if (fd == NULL) {
		return -1;
	}
	gf2_write_file_of(&f, &ref, handle, fsp, true);
	return gf2_write_sync(handle, fsp, fd, &f, data, n, offset);
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
		.pf_slot = gf2_handle_pf_slot(h),
		.id = &fsp->file_id,
		.cfg = c->pf,
		.volname = c->vol->volname,
	};

	if (c->shr != NULL && h != NULL && h->shr_ino != 0 &&
	    h->shr_ino == fsp->file_id.inode) {
		f.shr = c->shr;
		f.shr_ino = h->shr_ino;
		f.shr_contact = &h->shr_contact;
	}
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
	struct gf2_write_file f;
	struct gf2_fsp_ref ref;

	gf2_write_file_of(&f, &ref, handle, fsp, true);
	return gf2_write_send(mem_ctx, ev, fsp, &f, data, n, offset);
}

ssize_t gf2_pwrite_recv_fn(struct tevent_req *req,
			   struct vfs_aio_state *aio_state)
{
	return gf2_write_recv(req, aio_state);
}

struct tevent_req *gf2_fsync_send_fn(struct vfs_handle_struct *handle,
				     TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct files_struct *fsp)
{
	struct gf2_write_file f;
	struct gf2_fsp_ref ref;

	gf2_write_file_of(&f, &ref, handle, fsp, false);
	return gf2_write_fsync_send(mem_ctx, ev, fsp, &f);
}

int gf2_fsync_recv_fn(struct tevent_req *req,
		      struct vfs_aio_state *aio_state)
{
	return gf2_write_fsync_recv(req, aio_state);
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
	struct gf2_write_file f;
	struct gf2_fsp_ref ref;
	int ret;

	if (fd == NULL) {
		return -1;
	}
	if (gf2_settle_sync(gf2_volname(handle), fsp) != 0) {
		return -1;
	}
	/* the whole file: from 0 to the end, and the size */
	gf2_write_file_of(&f, &ref, handle, fsp, true);
	gf2_cache_change_begin(&f.change);
	GF2_START_PROFILE(handle, syscall_ftruncate);
	ret = glfs_ftruncate(fd, len, NULL, NULL);
	GF2_END_PROFILE(syscall_ftruncate);
	gf2_cache_change_end(&f.change);
	gf2_meta_resized(fsp->file_id.inode);
	return ret;
}

int gf2_fallocate(struct vfs_handle_struct *handle,
		  struct files_struct *fsp, uint32_t mode,
		  off_t offset, off_t len)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct gf2_write_file f;
	struct gf2_fsp_ref ref;
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
	/* the whole file: from 0 to the end, and the size */
	gf2_write_file_of(&f, &ref, handle, fsp, true);
	gf2_cache_change_begin(&f.change);
	GF2_START_PROFILE(handle, syscall_fallocate);
	if (punch_hole) {
		ret = glfs_discard(fd, offset, len);
	} else {
		ret = glfs_fallocate(fd, keep_size, offset, len);
	}
	GF2_END_PROFILE(syscall_fallocate);
	gf2_cache_change_end(&f.change);
	gf2_meta_resized(fsp->file_id.inode);
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
