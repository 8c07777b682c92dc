/*
 * glusterfs2: what the files of the glue share: the connection and
 * handle of a call, paths, lookups, the targets of calls on an fsp, and
 * changes told to the change bracket.
 *
 * Layer: glue.
 *
 * Paths.  Every Gluster call is made with an absolute path inside the
 * volume (or with a glfs_fd): relative names from smbd are resolved
 * against the working directory this module tracks for the tree connect
 * (chdir_fn, gf2_handles.c), never against the glfs instance's own cwd,
 * which all tree connects of the process share.
 *
 * Handles (gf2_handles.c) and directories (gf2_dir.c) are opened above
 * this file; metadata operations (gf2_metaops.c) call it.  It calls
 * none of them.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbprofile.h"
#include "gf2_paths.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/* One fixed block size, so that stat results are stable between calls. */
#define GF2_BLKSIZE 4096

glfs_fd_t *gf2_io_fd(struct vfs_handle_struct *handle,
		     const struct files_struct *fsp)
{
	struct gf2_handle *h = gf2_handle_of(handle, fsp);

	if (h == NULL) {
		errno = EBADF;
		return NULL;
	}
	if (h->fh->fd == NULL) {
		errno = h->is_dir ? EISDIR : EBADF;
		return NULL;
	}
	return h->fh->fd;
}

/*
 * Join name to base and drop "." components and duplicate slashes.
 * ".." is left for Gluster to resolve.
 */
static char *gf2_join(TALLOC_CTX *mem_ctx, const char *base, const char *name)
{
	char *out = NULL;
	const char *p = NULL;
	size_t len;

	if (name != NULL && name[0] == '/') {
		out = talloc_strdup(mem_ctx, "/");
	} else {
		out = talloc_strdup(mem_ctx, base != NULL ? base : "/");
	}
	if (out == NULL || name == NULL) {
		return out;
	}

	p = name;
	while (*p != '\0') {
		const char *slash = strchr(p, '/');
		size_t clen = slash != NULL ? (size_t)(slash - p) : strlen(p);

		if (clen == 0 || (clen == 1 && p[0] == '.')) {
			/* skip */
		} else {
			len = talloc_get_size(out) - 1;
			if (len > 0 && out[len - 1] != '/') {
				out = talloc_strdup_append_buffer(out, "/");
			}
			if (out == NULL) {
				return NULL;
			}
			out = talloc_strndup_append_buffer(out, p, clen);
			if (out == NULL) {
				return NULL;
			}
		}
		if (slash == NULL) {
			break;
		}
		p = slash + 1;
	}
	return out;
}

char *gf2_path(TALLOC_CTX *mem_ctx, struct gf2_conn *c, const char *name)
{
	char *path = gf2_join(mem_ctx, c->cwd, name);

	if (path == NULL) {
		errno = ENOMEM;
	}
	return path;
}

char *gf2_at_path(TALLOC_CTX *mem_ctx, struct gf2_conn *c,
		  const struct files_struct *dirfsp,
		  const struct smb_filename *smb_fname)
{
	struct smb_filename *full = NULL;
	char *path = NULL;

	if (dirfsp == NULL || fsp_get_pathref_fd(dirfsp) == AT_FDCWD) {
		return gf2_path(mem_ctx, c, smb_fname->base_name);
	}
	full = full_path_from_dirfsp_atname(talloc_tos(), dirfsp, smb_fname);
	if (full == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	path = gf2_path(mem_ctx, c, full->base_name);
	TALLOC_FREE(full);
	return path;
}

char *gf2_fsp_path(TALLOC_CTX *mem_ctx, struct gf2_conn *c,
		   const struct files_struct *fsp)
{
	return gf2_path(mem_ctx, c, fsp->fsp_name->base_name);
}

/*
 * A create, delete or rename names an entry of a directory smbd opened
 * (dirfsp).  A local file system makes it in that directory (the *at
 * calls on its descriptor); gfapi 10 has no such calls, so the path is
 * rebuilt from the directory's name, and gfapi follows a symlink on it:
 * another client that replaced the directory (or one above it) with a
 * symlink since smbd opened it would have the change land elsewhere,
 * outside the share.  So right before the call the path must still name
 * the directory the handle opened: a fresh lstat (not following the
 * last component, never a cache) and its inode number against the one
 * kept at open.  Otherwise ENOENT, which is what a local file system
 * answers for an entry of a directory that was removed under its
 * descriptor.  0: the same directory, or no handle of smbd's to compare
 * with (the share's root, which smbd names by path).
 */
int gf2_parent_check(struct vfs_handle_struct *handle,
		     const struct files_struct *dirfsp)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_handle *h = NULL;
	char *path = NULL;
	struct stat st;
	int ret;

	if (dirfsp == NULL || fsp_get_pathref_fd(dirfsp) == AT_FDCWD) {
		return 0;
	}
	h = gf2_handle_of(handle, dirfsp);
	if (h == NULL || h->ino == 0) {
		return 0;
	}
	path = gf2_fsp_path(talloc_tos(), c, dirfsp);
	if (path == NULL) {
		return -1;
	}
	ret = glfs_lstat(c->fs, path, &st);
	if (ret == 0 && (!S_ISDIR(st.st_mode) || st.st_ino != h->ino)) {
		DBG_NOTICE("%s is no longer the directory smbd opened\n",
			   path);
		errno = ENOENT;
		ret = -1;
	}
	TALLOC_FREE(path);
	return ret;
}

/*
 * May the caller search every directory on the way to path?  The bricks
 * check it for each lookup they receive, but gfapi resolves the
 * directories inside a path from its inode table, and md-cache answers
 * the lookup of an object it holds without asking them: an object that
 * one user of this process looked up would be found for another user
 * who may not search its directory.  So ask Gluster (access X_OK on each
 * directory, as the caller: the bricks' own rule, ACLs included), as a
 * local file system checks each directory of a path it walks, and keep
 * the answers (gf2_meta_get_search).  root may search everything.  A
 * directory access cannot find (removed, replaced by another client
 * since gfapi linked its name) ends the check: the lookup answers
 * whatever it finds there.  0, or -1 with errno EACCES.
 */
static int gf2_may_search_to(glfs_t *fs, const char *path)
{
	char dir[PATH_MAX];
	size_t len = strlen(path);
	size_t i;

	if (geteuid() == 0) {
		return 0;
	}
	if (len >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, len + 1);
	/* "/a/b/c": "/", "/a" and "/a/b" */
	for (i = 0; i < len; i++) {
		const char *d = dir;
		uint64_t at;
		int known;

		if (dir[i] != '/' || i + 1 == len || dir[i + 1] == '/') {
			continue;
		}
		if (i == 0) {
			d = "/";
		} else {
			dir[i] = '\0';
		}
		known = gf2_meta_get_search(fs, d);
		if (known == 0) {
			errno = EACCES;
			return -1;
		}
		if (known < 0) {
			at = gf2_now_ns();
			if (glfs_access(fs, d, X_OK) != 0) {
				if (errno != EACCES) {
					/*
					 * Gone, or no directory: the
					 * lookup itself answers that.
					 */
					return 0;
				}
				gf2_meta_keep_search(fs, d, false, at);
				errno = EACCES;
				return -1;
			}
			gf2_meta_keep_search(fs, d, true, at);
		}
		dir[i] = '/';
	}
	return 0;
}

int gf2_lookup_opened(struct gf2_conn *c, const char *path, bool nofollow,
		      struct stat *st)
{
	gf2_cache_sync();
	if (gf2_meta_get_stat(c->fs, path, st)) {
		return 0;
	}
	if (nofollow) {
		return glfs_lstat(c->fs, path, st);
	}
	return glfs_stat(c->fs, path, st);
}

int gf2_lookup(struct gf2_conn *c, const char *path, bool nofollow,
	       struct stat *st)
{
	int ret;

	/* kept search answers go with the changes Gluster announced */
	gf2_cache_sync();
	if (gf2_may_search_to(c->fs, path) != 0) {
		return -1;
	}
	ret = gf2_lookup_opened(c, path, nofollow, st);
	if (ret != 0 || S_ISDIR(st->st_mode) ||
	    !gf2_wc_file_busy(c->vol->volname, st->st_ino)) {
		return ret;
	}
	/*
	 * This process acknowledged bytes of the file that are still
	 * queued: a stat by path shows them, as one by handle does.  The
	 * wait is bounded (write cache max wait); when it gives up, the
	 * stat is what the bricks have.
	 */
	if (gf2_wc_drain_file_sync(c->vol->volname, st->st_ino) != 0) {
		return 0;
	}
	return nofollow ? glfs_lstat(c->fs, path, st) :
			  glfs_stat(c->fs, path, st);
}

/*
 * A Gluster stat as smbd keeps it.  Directories have size 0, as smbd's
 * own stat calls (sys_stat, sys_fstat, sys_lstat) give them on a local
 * share: the bricks report the brick directory's size (4096 on ext4),
 * which reached clients as the EndOfFile of a CREATE of a directory.
 */
void gf2_stat_ex(struct vfs_handle_struct *handle, struct stat_ex *dst,
		 const struct stat *src)
{
	init_stat_ex_from_stat(dst, src,
			       lp_fake_directory_create_times(
				       SNUM(handle->conn)));
	if (S_ISDIR(src->st_mode)) {
		dst->st_ex_size = 0;
	}
	dst->st_ex_blksize = GF2_BLKSIZE;
}

int gf2_target_of(TALLOC_CTX *mem_ctx, struct vfs_handle_struct *handle,
		  const struct files_struct *fsp, bool need_path,
		  struct gf2_target *t)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_handle *h = gf2_handle_of(handle, fsp);

	*t = (struct gf2_target) {
		.fs = c->fs,
		.fd = h != NULL ? h->fh->fd : NULL,
		.nofollow = h != NULL && h->nofollow,
		.is_link = S_ISLNK(fsp->fsp_name->st.st_ex_mode),
		.is_dir = h != NULL && h->is_dir,
		.ino = h != NULL ? h->ino : 0,
	};
	if (t->fd != NULL && !need_path) {
		return 0;
	}
	t->path = gf2_fsp_path(mem_ctx, c, fsp);
	if (t->path == NULL && t->fd == NULL) {
		return -1;
	}
	return 0;
}

/*
 * A handle without a Gluster fd (a directory, a path-only handle) is
 * changed through its path, but only on the object the handle opened:
 * another Gluster client may have replaced a directory on the path with
 * a symlink that leads out of the share since, and gfapi follows
 * symlinks in the middle of a path.  The change then fails with ENOENT,
 * as it does on a local file system for a handle whose name is gone.
 *
 * The change is made through a descriptor opened on the path
 * (glfs_open, glfs_opendir for a directory) whose inode is checked
 * first, so no swap after the check can redirect it.  Never through a
 * glfs_object: glfs_h_close() resets the inode's lookup count to 0, and
 * on an entry this client created, the nl-cache translator (on in
 * Gluster's samba option group) then answers ENOENT to every later
 * lookup of its name in this process, for its timeout
 * (test_samba_group.py).
 *
 * What has no such descriptor is changed by path after the check: a
 * symlink itself (not following), a special file, an object the user
 * may change but not read.  A swap in the moment between the check and
 * the change is not excluded there.
 */
struct gf2_t_fd {
	glfs_fd_t *fd;
	bool is_dir;
};

static void gf2_t_fd_close(struct gf2_t_fd *tf)
{
	int saved_errno = errno;

	if (tf->fd != NULL) {
		if (tf->is_dir) {
			glfs_closedir(tf->fd);
		} else {
			glfs_close(tf->fd);
		}
		tf->fd = NULL;
	}
	errno = saved_errno;
}

/*
 * 0 with tf->fd set, or with tf->fd NULL when the change is to be made
 * by path (see above); -1/errno when there is nothing to change: the
 * name is gone, or names another object (ENOENT).
 */
static int gf2_t_open(const struct gf2_target *t, bool follow,
		      struct gf2_t_fd *tf)
{
	ino_t want = t->ino;
	struct stat st;

	*tf = (struct gf2_t_fd) { .fd = NULL };
	if (!follow) {
		if (glfs_lstat(t->fs, t->path, &st) != 0) {
			return -1;
		}
		if (want != 0 && st.st_ino != want) {
			goto moved;
		}
		want = st.st_ino;
		if (S_ISLNK(st.st_mode)) {
			return 0;
		}
	}
	/*
	 * A directory needs glfs_opendir: gfapi's glfs_open gives it a
	 * descriptor whose xattr calls fail (EBADFD).  So a descriptor
	 * glfs_open finds on a directory is opened again.
	 */
	tf->is_dir = t->is_dir;
	for (;;) {
		tf->fd = tf->is_dir ? glfs_opendir(t->fs, t->path)
				    : glfs_open(t->fs, t->path, O_RDONLY);
		if (tf->fd == NULL) {
			break;
		}
		if (glfs_fstat(tf->fd, &st) != 0) {
			gf2_t_fd_close(tf);
			return -1;
		}
		if (tf->is_dir || !S_ISDIR(st.st_mode)) {
			break;
		}
		gf2_t_fd_close(tf);
		tf->is_dir = true;
	}
	if (tf->fd == NULL) {
		if (errno != EACCES && errno != EINVAL && errno != EPERM) {
			return -1;
		}
		/*
		 * No descriptor for this object: by path, checked (not
		 * following, the lstat above was the check).
		 */
		if (!follow) {
			return 0;
		}
		if (glfs_stat(t->fs, t->path, &st) != 0) {
			return -1;
		}
	}
	if (want != 0 && st.st_ino != want) {
		gf2_t_fd_close(tf);
		goto moved;
	}
	return 0;

moved:
	DBG_NOTICE("%s is no longer the object opened\n", t->path);
	errno = ENOENT;
	return -1;
}

static int gf2_t_setattrs(const struct gf2_target *t, bool follow,
			  const struct stat *sb, int valid)
{
	struct gf2_t_fd tf;
	uid_t uid = (valid & GFAPI_SET_ATTR_UID) ? sb->st_uid : (uid_t)-1;
	gid_t gid = (valid & GFAPI_SET_ATTR_GID) ? sb->st_gid : (gid_t)-1;
	struct timespec ts[2] = { sb->st_atim, sb->st_mtim };
	int ret = 0;

	if (gf2_t_open(t, follow, &tf) != 0) {
		return -1;
	}
	if (tf.fd != NULL) {
		if (valid & (GFAPI_SET_ATTR_UID | GFAPI_SET_ATTR_GID)) {
			ret = glfs_fchown(tf.fd, uid, gid);
		}
		if (ret == 0 && (valid & GFAPI_SET_ATTR_MODE)) {
			ret = glfs_fchmod(tf.fd, sb->st_mode);
		}
		if (ret == 0 &&
		    (valid & (GFAPI_SET_ATTR_ATIME | GFAPI_SET_ATTR_MTIME))) {
			ret = glfs_futimens(tf.fd, ts);
		}
		gf2_t_fd_close(&tf);
		return ret;
	}
	if (valid & (GFAPI_SET_ATTR_UID | GFAPI_SET_ATTR_GID)) {
		ret = follow ? glfs_chown(t->fs, t->path, uid, gid)
			     : glfs_lchown(t->fs, t->path, uid, gid);
	}
	if (ret == 0 && (valid & GFAPI_SET_ATTR_MODE)) {
		ret = glfs_chmod(t->fs, t->path, sb->st_mode);
	}
	if (ret == 0 &&
	    (valid & (GFAPI_SET_ATTR_ATIME | GFAPI_SET_ATTR_MTIME))) {
		ret = follow ? glfs_utimens(t->fs, t->path, ts)
			     : glfs_lutimens(t->fs, t->path, ts);
	}
	return ret;
}

int gf2_t_chown(const struct gf2_target *t, uid_t uid, gid_t gid)
{
	struct stat sb = { .st_uid = uid, .st_gid = gid };
	int valid = 0;

	if (t->fd != NULL) {
		return glfs_fchown(t->fd, uid, gid);
	}
	if (uid != (uid_t)-1) {
		valid |= GFAPI_SET_ATTR_UID;
	}
	if (gid != (gid_t)-1) {
		valid |= GFAPI_SET_ATTR_GID;
	}
	if (valid == 0) {
		return 0;
	}
	/* nofollow: the symlink itself, as lchown */
	return gf2_t_setattrs(t, !t->nofollow, &sb, valid);
}

/*
 * gfapi has no lchmod: a path-only handle's mode is its target's.  A
 * handle of a symlink checks, as every change by path does, that the
 * name still is the symlink it opened (not following) before the change.
 */
int gf2_t_chmod(const struct gf2_target *t, mode_t mode)
{
	struct stat sb = { .st_mode = mode };

	if (t->fd != NULL) {
		return glfs_fchmod(t->fd, mode);
	}
	if (t->is_link) {
		return gf2_t_setattrs(t, false, &sb, GFAPI_SET_ATTR_MODE);
	}
	return gf2_t_setattrs(t, !t->nofollow, &sb, GFAPI_SET_ATTR_MODE);
}

/* Asks Gluster, never a cache. */
int gf2_t_stat(const struct gf2_target *t, struct stat *st)
{
	if (t->fd != NULL) {
		return glfs_fstat(t->fd, st);
	}
	if (t->nofollow) {
		return glfs_lstat(t->fs, t->path, st);
	}
	return glfs_stat(t->fs, t->path, st);
}

int gf2_t_utimens(const struct gf2_target *t, const struct timespec *ts)
{
	struct stat sb = { .st_atim = ts[0], .st_mtim = ts[1] };

	if (t->fd != NULL) {
		return glfs_futimens(t->fd, ts);
	}
	return gf2_t_setattrs(t, !t->nofollow, &sb,
			      GFAPI_SET_ATTR_ATIME | GFAPI_SET_ATTR_MTIME);
}

ssize_t gf2_t_getxattr(const struct gf2_target *t, const char *name,
		       void *value, size_t size)
{
	if (t->fd != NULL) {
		return glfs_fgetxattr(t->fd, name, value, size);
	}
	if (t->nofollow) {
		return glfs_lgetxattr(t->fs, t->path, name, value, size);
	}
	return glfs_getxattr(t->fs, t->path, name, value, size);
}

ssize_t gf2_t_listxattr(const struct gf2_target *t, char *list,
			size_t size)
{
	if (t->fd != NULL) {
		return glfs_flistxattr(t->fd, list, size);
	}
	if (t->nofollow) {
		return glfs_llistxattr(t->fs, t->path, list, size);
	}
	return glfs_listxattr(t->fs, t->path, list, size);
}

int gf2_t_setxattr(const struct gf2_target *t, const char *name,
		   const void *value, size_t size, int flags)
{
	struct gf2_t_fd tf;
	int ret;

	if (t->fd != NULL) {
		return glfs_fsetxattr(t->fd, name, value, size, flags);
	}
	if (gf2_t_open(t, !t->nofollow, &tf) != 0) {
		return -1;
	}
	if (tf.fd == NULL) {
		return t->nofollow ? glfs_lsetxattr(t->fs, t->path, name, value,
						    size, flags)
				   : glfs_setxattr(t->fs, t->path, name, value,
						   size, flags);
	}
	ret = glfs_fsetxattr(tf.fd, name, value, size, flags);
	gf2_t_fd_close(&tf);
	return ret;
}

int gf2_t_removexattr(const struct gf2_target *t, const char *name)
{
	struct gf2_t_fd tf;
	int ret;

	if (t->fd != NULL) {
		return glfs_fremovexattr(t->fd, name);
	}
	if (gf2_t_open(t, !t->nofollow, &tf) != 0) {
		return -1;
	}
	if (tf.fd == NULL) {
		return t->nofollow ? glfs_lremovexattr(t->fs, t->path, name)
				   : glfs_removexattr(t->fs, t->path, name);
	}
	ret = glfs_fremovexattr(tf.fd, name);
	gf2_t_fd_close(&tf);
	return ret;
}

void gf2_change_path(struct gf2_conn *c, enum gf2_change_kind kind,
		     const char *path)
{
	struct gf2_change ch = {
		.kind = kind,
		.fs = c->fs,
		.path = path,
	};

	gf2_cache_change_begin(&ch);
}

static char *gf2_fsp_ref_path(TALLOC_CTX *mem_ctx, void *arg)
{
	struct gf2_fsp_ref *ref = arg;

	return gf2_fsp_path(mem_ctx, ref->c, ref->fsp);
}

void gf2_change_of_fsp(struct gf2_change *ch, struct gf2_fsp_ref *ref,
		       struct gf2_conn *c, const struct files_struct *fsp,
		       struct gf2_handle *h, enum gf2_change_kind kind)
{
	*ref = (struct gf2_fsp_ref) { .c = c, .fsp = fsp };
	*ch = (struct gf2_change) {
		.kind = kind,
		.fs = c->fs,
		.path_fn = gf2_fsp_ref_path,
		.path_arg = ref,
		.stat_marker = h != NULL ? &h->md_stat_puts : NULL,
		.ino = fsp->file_id.inode,
	};
}

void gf2_change_fsp(struct vfs_handle_struct *handle,
		    const struct files_struct *fsp, enum gf2_change_kind kind)
{
	struct gf2_change ch;
	struct gf2_fsp_ref ref;

	gf2_change_of_fsp(&ch, &ref, gf2_conn_of(handle), fsp,
			  gf2_handle_of(handle, fsp), kind);
	gf2_cache_change_begin(&ch);
}

/* stat family: by path (stat also names the share root at tree connect) */

static int gf2_stat_path(struct vfs_handle_struct *handle,
			 struct smb_filename *smb_fname, bool nofollow)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_path(talloc_tos(), c, smb_fname->base_name);
	struct stat st;
	int ret;

	if (path == NULL) {
		return -1;
	}
	ret = gf2_lookup(c, path, nofollow, &st);
	TALLOC_FREE(path);
	if (ret == 0) {
		gf2_stat_ex(handle, &smb_fname->st, &st);
	}
	return ret;
}

int gf2_stat(struct vfs_handle_struct *handle,
	     struct smb_filename *smb_fname)
{
	int ret;

	GF2_START_PROFILE(handle, syscall_stat);
	ret = gf2_stat_path(handle, smb_fname, false);
	GF2_END_PROFILE(syscall_stat);
	return ret;
}

int gf2_lstat(struct vfs_handle_struct *handle,
	      struct smb_filename *smb_fname)
{
	int ret;

	GF2_START_PROFILE(handle, syscall_lstat);
	ret = gf2_stat_path(handle, smb_fname, true);
	GF2_END_PROFILE(syscall_lstat);
	return ret;
}
