/*
 * glusterfs2: handles: open and close, the working directory, the share
 * root.
 *
 * Layer: glue.
 *
 * Paths are made absolute against the working directory kept here
 * (chdir_fn) by gf2_paths.c, which this file calls.
 *
 * Handles.  Path-only handles (smbd's O_PATH "pathref" fsps) and
 * directories open nothing on Gluster: a lookup checks that the object
 * exists and has the right type, and operations on them go by path
 * (struct gf2_target).  Only regular files opened for I/O get a glfs_fd.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbprofile.h"
#include <glusterfs/api/glfs-handles.h>
#include "gf2_vfs.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/*
 * open(2) with O_NOFOLLOW: gfapi's glfs_open resolves a symlink at the
 * path and opens its target (it does not interpret O_NOFOLLOW).  Look the
 * name up without following and refuse a symlink; open the path and keep
 * the descriptor only if it is on the object that lookup found, so that
 * no other client's swap between the check and the open redirects it.
 * O_TRUNC is applied once the descriptor is checked.  (No glfs_object:
 * see gf2_t_open, gf2_paths.c.)
 */
static glfs_fd_t *gf2_open_nofollow(glfs_t *fs, const char *path, int flags)
{
	struct stat st;
	struct stat fst;
	glfs_fd_t *fd = NULL;
	int saved_errno;

	if (glfs_lstat(fs, path, &st) != 0) {
		return NULL;
	}
	if (S_ISLNK(st.st_mode)) {
		errno = ELOOP;
		return NULL;
	}
	fd = glfs_open(fs, path, flags & ~O_TRUNC);
	if (fd == NULL) {
		return NULL;
	}
	if (glfs_fstat(fd, &fst) != 0) {
		goto fail;
	}
	if (fst.st_ino != st.st_ino) {
		/* a symlink took the name's place: followed */
		errno = ELOOP;
		goto fail;
	}
	if ((flags & O_TRUNC) && glfs_ftruncate(fd, 0, NULL, NULL) != 0) {
		goto fail;
	}
	return fd;

fail:
	saved_errno = errno;
	glfs_close(fd);
	errno = saved_errno;
	return NULL;
}

/*
 * The node's shared read cache and a file just opened: its stat, fresh
 * from Gluster, is compared with what the segment recorded when the
 * file's blocks were filled, which drops them on a difference (a change
 * by another head or client that reached no process of this node as an
 * upcall).  An open with O_TRUNC changed the data itself.  The inode the
 * handle's reads may use the segment for, 0: none.
 */
static uint64_t gf2_open_shared(struct gf2_conn *c, glfs_fd_t *fd, int flags)
{
	struct stat st;

	if (glfs_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_ino == 0) {
		return 0;
	}
	if (flags & O_TRUNC) {
		gf2_shr_invalidate(st.st_ino);
	}
	if (!gf2_shr_open_check(c->shr, st.st_ino, &st)) {
		return 0;
	}
	return st.st_ino;
}

/* The fsp goes: close its Gluster handle (maybe deferred), drop pf. */
static void gf2_handle_destroy(void *p_data)
{
	struct gf2_handle *h = (struct gf2_handle *)p_data;

	if (h->pf != NULL) {
		gf2_pf_file_put(h->pf);
		h->pf = NULL;
	}
	if (h->fh != NULL) {
		gf2_fh_close(h->fh);
		h->fh = NULL;
	}
}

int gf2_openat(struct vfs_handle_struct *handle,
	       const struct files_struct *dirfsp,
	       const struct smb_filename *smb_fname,
	       files_struct *fsp, const struct vfs_open_how *how)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_handle *h = NULL;
	struct gf2_fh *fh = NULL;
	int flags = how->flags;
	bool nofollow = (flags & O_NOFOLLOW) != 0;
	bool is_dir = false;
	bool exists = false;
	char *path = NULL;
	struct stat st;
	int ret;

	if ((how->resolve & ~GF2_OPEN_HOW_RESOLVE_OK) != 0) {
		/* NO_SYMLINKS, or unknown: smbd falls back (gf2_compat.h) */
		errno = ENOSYS;
		return -1;
	}
	/*
	 * smbd opens with O_NONBLOCK (for kernel oplocks) and makes the
	 * descriptor blocking right after (vfs_set_blocking, gf2_fcntl); a
	 * Gluster descriptor keeps its open flags at the bricks, and keeps
	 * O_NONBLOCK: with locks.mandatory-locking the bricks refuse a
	 * write that conflicts with another client's lock on an O_NONBLOCK
	 * descriptor (as SMB wants) but hold it on a blocking one until the
	 * lock goes.
	 */

	path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	if (path == NULL) {
		return -1;
	}

	GF2_START_PROFILE(handle, syscall_openat);

	fh = gf2_fh_new(c->vol, c->st);
	if (fh == NULL) {
		errno = ENOMEM;
		goto fail;
	}
	fh->snum = SNUM(handle->conn);

	/*
	 * What is there?  A path-only handle needs nothing else; so do
	 * directories.  Use smbd's stat if it has one.
	 */
	if (fsp->fsp_flags.is_pathref || (flags & O_CREAT) == 0) {
		if (VALID_STAT(smb_fname->st) && !fsp->fsp_flags.is_pathref) {
			st.st_mode = smb_fname->st.st_ex_mode;
			st.st_ino = smb_fname->st.st_ex_ino;
			ret = 0;
		} else {
			ret = gf2_lookup(c, path, nofollow, &st);
		}
		if (ret != 0) {
			goto fail;
		}
		exists = true;
		is_dir = S_ISDIR(st.st_mode);
		if ((flags & O_DIRECTORY) && !is_dir) {
			errno = ENOTDIR;
			goto fail;
		}
	}

	if (fsp->fsp_flags.is_pathref) {
		goto done;
	}

	if (exists && S_ISLNK(st.st_mode)) {
		/* O_NOFOLLOW on a symlink */
		errno = ELOOP;
		goto fail;
	}

	if (exists && is_dir) {
		if ((flags & O_ACCMODE) != O_RDONLY) {
			errno = EISDIR;
			goto fail;
		}
		goto done;
	}

	if (VALID_STAT(smb_fname->st) && !S_ISDIR(smb_fname->st.st_ex_mode)) {
		/* acknowledged writes of another handle reach the bricks */
		ret = gf2_wc_open_check(c->vol->volname,
					smb_fname->st.st_ex_ino);
		if (ret != 0) {
			errno = ret;
			goto fail;
		}
	}
	if (flags & (O_CREAT | O_TRUNC)) {
		gf2_change_path(c, GF2_CHANGE_NAME, path);
	}
	if ((flags & O_CREAT) && gf2_parent_check(handle, dirfsp) != 0) {
		goto fail;
	}
	if (flags & O_CREAT) {
		uint64_t at = gf2_now_ns();

		fh->fd = glfs_creat(c->fs, path, flags & ~O_NOFOLLOW,
				    how->mode);
		if (fh->fd != NULL && (flags & O_EXCL)) {
			gf2_meta_created(c->fs, path, false, at);
		}
		if (fh->fd == NULL && errno == EISDIR &&
		    (flags & O_EXCL) == 0 &&
		    (flags & O_ACCMODE) == O_RDONLY) {
			is_dir = true;
			goto done;
		}
	} else if (nofollow) {
		fh->fd = gf2_open_nofollow(c->fs, path, flags & ~O_NOFOLLOW);
	} else {
		fh->fd = glfs_open(c->fs, path, flags);
	}
	if (fh->fd == NULL) {
		goto fail;
	}

done:
	h = VFS_ADD_FSP_EXTENSION(handle, fsp, struct gf2_handle,
				  gf2_handle_destroy);
	if (h == NULL) {
		errno = ENOMEM;
		goto fail;
	}
	if (c->shr != NULL && fh->fd != NULL && !is_dir) {
		h->shr_ino = gf2_open_shared(c, fh->fd, flags);
		h->shr_contact = gf2_now_ms();
	}
	h->fh = fh;
	h->is_dir = is_dir;
	h->nofollow = nofollow;
	h->ino = exists ? st.st_ino : 0;
	fsp->fsp_flags.have_proc_fds = false;
	GF2_END_PROFILE(syscall_openat);
	TALLOC_FREE(path);
	return GF2_FAKE_FD;

fail:
	{
		int saved_errno = errno;

		if (fh != NULL) {
			gf2_fh_close(fh);
		}
		GF2_END_PROFILE(syscall_openat);
		TALLOC_FREE(path);
		errno = saved_errno;
	}
	return -1;
}

int gf2_close(struct vfs_handle_struct *handle, files_struct *fsp)
{
	struct gf2_handle *h = gf2_handle_of(handle, fsp);
	int wc_err = 0;
	int ret;

	if (h == NULL || h->fh == NULL) {
		errno = EBADF;
		return -1;
	}
	GF2_START_PROFILE(handle, syscall_close);
	if (h->wcache.wc != NULL) {
		/* what was acknowledged reaches the bricks first */
		wc_err = gf2_wc_close(h->wcache.wc, h->wcache.bracket);
		h->wcache.wc = NULL;
		h->wcache.bracket = NULL;
	}
	ret = gf2_fh_close(h->fh);
	if (ret == 0 && wc_err != 0) {
		errno = wc_err;
		ret = -1;
	}
	h->fh = NULL;
	VFS_REMOVE_FSP_EXTENSION(handle, fsp);
	GF2_END_PROFILE(syscall_close);
	return ret;
}

int gf2_chdir(struct vfs_handle_struct *handle,
	      const struct smb_filename *smb_fname)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_path(c, c, smb_fname->base_name);
	struct stat st;
	int ret;

	if (path == NULL) {
		return -1;
	}
	GF2_START_PROFILE(handle, syscall_chdir);
	ret = glfs_stat(c->fs, path, &st);
	GF2_END_PROFILE(syscall_chdir);
	if (ret != 0) {
		TALLOC_FREE(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		TALLOC_FREE(path);
		errno = ENOTDIR;
		return -1;
	}
	TALLOC_FREE(c->cwd);
	c->cwd = path;
	return 0;
}

#if SMB_VFS_INTERFACE_VERSION >= 53
/*
 * Tree connect (53): the share's root is the volume's connectpath, looked
 * up through gfapi as every other stat, and handed to smbd as its root
 * handle, which the later calls (disk_free, fstatvfs) name.
 */
int gf2_open_share_root(struct vfs_handle_struct *handle,
			struct files_struct *root_fsp,
			const char *connectpath)
{
	struct smb_filename smb_fname = {
		.base_name = discard_const_p(char, connectpath),
	};

	if (gf2_stat(handle, &smb_fname) != 0) {
		return -1;
	}
	return vfs_set_share_root(root_fsp, connectpath, &smb_fname.st);
}
#else
struct smb_filename *gf2_getwd(struct vfs_handle_struct *handle,
			       TALLOC_CTX *mem_ctx)
{
	struct gf2_conn *c = gf2_conn_of(handle);

	return synthetic_smb_fname(mem_ctx, c->cwd, NULL, NULL, 0, 0);
}
#endif

struct smb_filename *gf2_realpath(struct vfs_handle_struct *handle,
				  TALLOC_CTX *ctx,
				  const struct smb_filename *smb_fname)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct smb_filename *result = NULL;
	char *path = gf2_path(talloc_tos(), c, smb_fname->base_name);
	char *resolved = NULL;
	char *ret = NULL;

	if (path == NULL) {
		return NULL;
	}
	resolved = talloc_zero_size(talloc_tos(), PATH_MAX + 1);
	if (resolved == NULL) {
		TALLOC_FREE(path);
		errno = ENOMEM;
		return NULL;
	}
	GF2_START_PROFILE(handle, syscall_realpath);
	ret = glfs_realpath(c->fs, path, resolved);
	GF2_END_PROFILE(syscall_realpath);
	if (ret != NULL) {
		result = synthetic_smb_fname(ctx, ret, NULL, NULL, 0, 0);
	}
	TALLOC_FREE(path);
	TALLOC_FREE(resolved);
	return result;
}
