/*
 * glusterfs2: metadata operations: the file system, names, stats,
 * ownership, modes, times and extended attributes.
 *
 * Layer: glue.
 *
 * Every change drops what the metadata cache keeps of what it changes
 * before it is sent (gf2_meta.c states the rules); answers that smbd
 * reads everywhere are kept when this process reads or writes them.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbprofile.h"
#include "gf2_vfs.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

static int gf2_statvfs_path(struct vfs_handle_struct *handle,
			    const struct smb_filename *smb_fname,
			    struct statvfs *st)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_path(talloc_tos(), c, smb_fname->base_name);
	int ret;

	if (path == NULL) {
		return -1;
	}
	ret = glfs_statvfs(c->fs, path, st);
	TALLOC_FREE(path);
	return ret;
}

int gf2_statvfs(struct vfs_handle_struct *handle, GF2_FS_OBJ_PARAM,
		struct vfs_statvfs_struct *out)
{
	struct statvfs st = { 0 };

	if (gf2_statvfs_path(handle, gf2_fs_obj_fname(fs_obj), &st) < 0) {
		return -1;
	}
	ZERO_STRUCTP(out);
	out->OptimalTransferSize = st.f_frsize;
	out->BlockSize = st.f_bsize;
	out->TotalBlocks = st.f_blocks;
	out->BlocksAvail = st.f_bfree;
	out->UserBlocksAvail = st.f_bavail;
	out->TotalFileNodes = st.f_files;
	out->FreeFileNodes = st.f_ffree;
	out->FsIdentifier = st.f_fsid;
	out->FsCapabilities = FILE_CASE_SENSITIVE_SEARCH |
			      FILE_CASE_PRESERVED_NAMES;
	return 0;
}

uint64_t gf2_disk_free(struct vfs_handle_struct *handle, GF2_FS_OBJ_PARAM,
		       uint64_t *bsize, uint64_t *dfree, uint64_t *dsize)
{
	struct statvfs st = { 0 };

	if (gf2_statvfs_path(handle, gf2_fs_obj_fname(fs_obj), &st) < 0) {
		return (uint64_t)-1;
	}
	*bsize = st.f_bsize;
	*dfree = st.f_bavail;
	*dsize = st.f_blocks;
	return *dfree;
}

int gf2_mkdirat(struct vfs_handle_struct *handle,
		struct files_struct *dirfsp,
		const struct smb_filename *smb_fname, mode_t mode)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	uint64_t at;
	int ret;

	if (path == NULL) {
		return -1;
	}
	if (gf2_parent_check(handle, dirfsp) != 0) {
		TALLOC_FREE(path);
		return -1;
	}
	gf2_change_path(c, GF2_CHANGE_NAME, path);
	at = gf2_now_ns();
	GF2_START_PROFILE(handle, syscall_mkdirat);
	ret = glfs_mkdir(c->fs, path, mode);
	GF2_END_PROFILE(syscall_mkdirat);
	if (ret == 0) {
		gf2_meta_created(c->fs, path, true, at);
	}
	TALLOC_FREE(path);
	return ret;
}

int gf2_renameat(struct vfs_handle_struct *handle,
		 struct files_struct *srcdir_fsp,
		 const struct smb_filename *smb_fname_src,
		 struct files_struct *dstdir_fsp,
		 const struct smb_filename *smb_fname_dst
		 GF2_RENAME_HOW_PARAM)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *src = NULL;
	char *dst = NULL;
	int ret = -1;

	if (gf2_rename_how_flags(how) != 0) {
		/*
		 * NO_REPLACE (or a flag of a later release): gfapi cannot
		 * refuse to replace, and EINVAL is what smbd falls back on
		 * (gf2_compat.h).
		 */
		errno = EINVAL;
		return -1;
	}
	src = gf2_at_path(talloc_tos(), c, srcdir_fsp, smb_fname_src);
	dst = gf2_at_path(talloc_tos(), c, dstdir_fsp, smb_fname_dst);
	gf2_change_path(c, GF2_CHANGE_TREE, src);
	gf2_change_path(c, GF2_CHANGE_TREE, dst);
	if (src != NULL && dst != NULL &&
	    gf2_parent_check(handle, srcdir_fsp) == 0 &&
	    (dstdir_fsp == srcdir_fsp ||
	     gf2_parent_check(handle, dstdir_fsp) == 0)) {
		GF2_START_PROFILE(handle, syscall_renameat);
		ret = glfs_rename(c->fs, src, dst);
		GF2_END_PROFILE(syscall_renameat);
	}
	TALLOC_FREE(src);
	TALLOC_FREE(dst);
	return ret;
}

/* stat family */

int gf2_fstat(struct vfs_handle_struct *handle,
	      files_struct *fsp, SMB_STRUCT_STAT *sbuf)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_handle *h = gf2_handle_of(handle, fsp);
	struct stat st;
	int ret;

	if (gf2_settle_sync(gf2_volname(handle), fsp) != 0) {
		return -1;
	}
	GF2_START_PROFILE(handle, syscall_fstat);
	if (h != NULL && h->fh->fd != NULL) {
		ret = glfs_fstat(h->fh->fd, &st);
		if (ret == 0) {
			gf2_meta_check_size(h->fh->fd, &st);
		}
	} else {
		char *path = gf2_fsp_path(talloc_tos(), c, fsp);

		if (path == NULL) {
			GF2_END_PROFILE(syscall_fstat);
			return -1;
		}
		ret = gf2_lookup_opened(c, path, h != NULL && h->nofollow,
					&st);
		TALLOC_FREE(path);
	}
	GF2_END_PROFILE(syscall_fstat);
	if (ret == 0) {
		gf2_stat_ex(handle, sbuf, &st);
	}
	return ret;
}

int gf2_fstatat(struct vfs_handle_struct *handle,
		const struct files_struct *dirfsp,
		const struct smb_filename *smb_fname,
		SMB_STRUCT_STAT *sbuf, int flags)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	struct stat st;
	int ret;

	if (path == NULL) {
		return -1;
	}
	GF2_START_PROFILE(handle, syscall_fstatat);
	ret = gf2_lookup(c, path, (flags & AT_SYMLINK_NOFOLLOW) != 0, &st);
	GF2_END_PROFILE(syscall_fstatat);
	TALLOC_FREE(path);
	if (ret == 0) {
		gf2_stat_ex(handle, sbuf, &st);
	}
	return ret;
}

int gf2_unlinkat(struct vfs_handle_struct *handle,
		 struct files_struct *dirfsp,
		 const struct smb_filename *smb_fname, int flags)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	int ret;

	gf2_change_path(c, GF2_CHANGE_TREE, path);
	if (path == NULL) {
		return -1;
	}
	if (gf2_parent_check(handle, dirfsp) != 0) {
		TALLOC_FREE(path);
		return -1;
	}
	GF2_START_PROFILE(handle, syscall_unlinkat);
	if (flags & AT_REMOVEDIR) {
		ret = glfs_rmdir(c->fs, path);
	} else {
		ret = glfs_unlink(c->fs, path);
	}
	GF2_END_PROFILE(syscall_unlinkat);
	TALLOC_FREE(path);
	return ret;
}

int gf2_fchmod(struct vfs_handle_struct *handle, files_struct *fsp,
	       mode_t mode)
{
	struct gf2_target t;
	int ret = -1;

	gf2_change_fsp(handle, fsp, GF2_CHANGE_ATTRS);
	GF2_START_PROFILE(handle, syscall_fchmod);
	if (gf2_target_of(talloc_tos(), handle, fsp, false, &t) == 0) {
		ret = gf2_t_chmod(&t, mode);
	}
	GF2_END_PROFILE(syscall_fchmod);
	TALLOC_FREE(t.path);
	return ret;
}

int gf2_fchown(struct vfs_handle_struct *handle, files_struct *fsp,
	       uid_t uid, gid_t gid)
{
	struct gf2_target t;
	int ret = -1;

	gf2_change_fsp(handle, fsp, GF2_CHANGE_ATTRS);
	GF2_START_PROFILE(handle, syscall_fchown);
	if (gf2_target_of(talloc_tos(), handle, fsp, false, &t) == 0) {
		ret = gf2_t_chown(&t, uid, gid);
	}
	GF2_END_PROFILE(syscall_fchown);
	TALLOC_FREE(t.path);
	return ret;
}

int gf2_lchown(struct vfs_handle_struct *handle,
	       const struct smb_filename *smb_fname, uid_t uid, gid_t gid)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_path(talloc_tos(), c, smb_fname->base_name);
	int ret;

	if (path == NULL) {
		return -1;
	}
	gf2_change_path(c, GF2_CHANGE_ATTRS, path);
	GF2_START_PROFILE(handle, syscall_lchown);
	ret = glfs_lchown(c->fs, path, uid, gid);
	GF2_END_PROFILE(syscall_lchown);
	TALLOC_FREE(path);
	return ret;
}

/*
 * gfapi's utimens calls set both times whatever they hold: UTIME_OMIT is
 * not honoured and would be stored as a time of 0 s and 999999999 ns
 * (smbd omits the access time whenever it sets only the write time, on
 * close and on its delayed write time update).  An omitted time is
 * therefore the object's current one, asked of Gluster just before.
 */
static int gf2_fill_omitted_times(const struct gf2_target *t,
				  struct timespec times[2])
{
	struct stat st;
	int ret;

	if (!is_omit_timespec(&times[0]) && !is_omit_timespec(&times[1])) {
		return 0;
	}
	ret = gf2_t_stat(t, &st);
	if (ret != 0) {
		return ret;
	}
	if (is_omit_timespec(&times[0])) {
		times[0] = st.st_atim;
	}
	if (is_omit_timespec(&times[1])) {
		times[1] = st.st_mtim;
	}
	return 0;
}

int gf2_fntimes(struct vfs_handle_struct *handle, files_struct *fsp,
		struct smb_file_time *ft)
{
	struct timespec times[2];
	struct gf2_target t;
	int ret = -1;

	if (!is_omit_timespec(&ft->create_time)) {
		/*
		 * As Samba's default VFS: the create time lives in the
		 * DOS attribute xattr (user.DOSATTRIB), written through
		 * our fsetxattr; without it a client's new create time
		 * would be dropped (smbtorture smb2.timestamps).
		 */
		(void)set_create_timespec_ea(fsp, ft->create_time);
	}

	times[0] = ft->atime;
	times[1] = ft->mtime;
	if (is_omit_timespec(&times[0]) && is_omit_timespec(&times[1])) {
		return 0;
	}

	/*
	 * Acknowledged bytes still queued would reach the bricks after the
	 * times and stamp the write time with their own: land them first
	 * (bounded by the write cache's max wait).  smbd sets a time a
	 * client gave again after each write of the handle (Samba 4.23 and
	 * later) and at the close.
	 */
	if (gf2_settle_sync(gf2_volname(handle), fsp) != 0) {
		return -1;
	}
	gf2_change_fsp(handle, fsp, GF2_CHANGE_TIMES);
	GF2_START_PROFILE(handle, syscall_fntimes);
	if (gf2_target_of(talloc_tos(), handle, fsp, false, &t) == 0 &&
	    gf2_fill_omitted_times(&t, times) == 0) {
		ret = gf2_t_utimens(&t, times);
	}
	GF2_END_PROFILE(syscall_fntimes);
	TALLOC_FREE(t.path);
	return ret;
}

int gf2_symlinkat(struct vfs_handle_struct *handle,
		  const struct smb_filename *link_contents,
		  struct files_struct *dirfsp,
		  const struct smb_filename *new_smb_fname)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, new_smb_fname);
	int ret;

	if (path == NULL) {
		return -1;
	}
	if (gf2_parent_check(handle, dirfsp) != 0) {
		TALLOC_FREE(path);
		return -1;
	}
	gf2_change_path(c, GF2_CHANGE_NAME, path);
	GF2_START_PROFILE(handle, syscall_symlinkat);
	ret = glfs_symlink(c->fs, link_contents->base_name, path);
	GF2_END_PROFILE(syscall_symlinkat);
	TALLOC_FREE(path);
	return ret;
}

int gf2_readlinkat(struct vfs_handle_struct *handle,
		   const struct files_struct *dirfsp,
		   const struct smb_filename *smb_fname,
		   char *buf, size_t bufsiz)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	int ret;

	if (path == NULL) {
		return -1;
	}
	GF2_START_PROFILE(handle, syscall_readlinkat);
	ret = glfs_readlink(c->fs, path, buf, bufsiz);
	GF2_END_PROFILE(syscall_readlinkat);
	TALLOC_FREE(path);
	return ret;
}

int gf2_linkat(struct vfs_handle_struct *handle,
	       struct files_struct *srcfsp,
	       const struct smb_filename *old_smb_fname,
	       struct files_struct *dstfsp,
	       const struct smb_filename *new_smb_fname,
	       int flags)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *src = gf2_at_path(talloc_tos(), c, srcfsp, old_smb_fname);
	char *dst = gf2_at_path(talloc_tos(), c, dstfsp, new_smb_fname);
	int ret = -1;

	if (src != NULL && dst != NULL) {
		gf2_change_path(c, GF2_CHANGE_NAME, src);
		gf2_change_path(c, GF2_CHANGE_NAME, dst);
		GF2_START_PROFILE(handle, syscall_linkat);
		ret = glfs_link(c->fs, src, dst);
		GF2_END_PROFILE(syscall_linkat);
	}
	TALLOC_FREE(src);
	TALLOC_FREE(dst);
	return ret;
}

int gf2_mknodat(struct vfs_handle_struct *handle,
		struct files_struct *dirfsp,
		const struct smb_filename *smb_fname,
		mode_t mode, SMB_DEV_T dev)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	int ret;

	if (path == NULL) {
		return -1;
	}
	if (gf2_parent_check(handle, dirfsp) != 0) {
		TALLOC_FREE(path);
		return -1;
	}
	gf2_change_path(c, GF2_CHANGE_NAME, path);
	GF2_START_PROFILE(handle, syscall_mknodat);
	ret = glfs_mknod(c->fs, path, mode, dev);
	GF2_END_PROFILE(syscall_mknodat);
	TALLOC_FREE(path);
	return ret;
}

/*
 * Case-insensitive lookup: Gluster's DHT answers the virtual xattr
 * "glusterfs.get_real_filename:NAME" on a directory with the name as it
 * is stored, in one round trip instead of a directory scan.
 *
 * An xattr name is at most XATTR_NAME_MAX (255) bytes, so names longer
 * than 227 bytes cannot be asked that way (gfapi fails the call, and
 * smbd would refuse a valid 228-255 byte name as OBJECT_NAME_INVALID):
 * for those, NT_STATUS_NOT_SUPPORTED sends smbd to its directory scan.
 */
#define GF2_REAL_FILENAME_KEY "glusterfs.get_real_filename:"
#define GF2_XATTR_NAME_MAX 255

NTSTATUS gf2_get_real_filename_at(struct vfs_handle_struct *handle,
					 struct files_struct *dirfsp,
					 const char *name,
					 TALLOC_CTX *mem_ctx,
					 char **found_name)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char key[NAME_MAX + 64];
	char val[NAME_MAX + 1];
	char *path = NULL;
	const unsigned char *p = NULL;
	ssize_t ret;
	int n;

	/*
	 * Gluster compares names with strcasecmp(3): ASCII only.  A name
	 * with any other character (fullwidth letters, accented ones)
	 * goes to smbd's directory scan, which folds case as Windows does
	 * (smbtorture smb2.charset "Testing wide-a").
	 */
	for (p = (const unsigned char *)name; *p != '\0'; p++) {
		if (*p >= 0x80) {
			return NT_STATUS_NOT_SUPPORTED;
		}
	}

	n = snprintf(key, sizeof(key), GF2_REAL_FILENAME_KEY "%s", name);
	if (n < 0) {
		return NT_STATUS_OBJECT_NAME_INVALID;
	}
	if ((size_t)n >= sizeof(key) || n > GF2_XATTR_NAME_MAX) {
		return NT_STATUS_NOT_SUPPORTED;
	}
	path = gf2_fsp_path(talloc_tos(), c, dirfsp);
	if (path == NULL) {
		return NT_STATUS_NO_MEMORY;
	}
	ret = glfs_getxattr(c->fs, path, key, val, sizeof(val) - 1);
	TALLOC_FREE(path);
	if (ret == -1) {
		if (errno == ENOATTR || errno == ENODATA) {
			errno = ENOENT;
		}
		return map_nt_error_from_unix(errno);
	}
	val[ret] = '\0';
	*found_name = talloc_strdup(mem_ctx, val);
	if (*found_name == NULL) {
		return NT_STATUS_NO_MEMORY;
	}
	return NT_STATUS_OK;
}

/* Extended attributes */

ssize_t gf2_fgetxattr(struct vfs_handle_struct *handle,
		      struct files_struct *fsp, const char *name,
		      void *value, size_t size)
{
	struct gf2_target t;
	bool kept = gf2_meta_kept_name(name);
	uint64_t at;
	ssize_t ret;
	int err;

	gf2_cache_sync();
	if (gf2_target_of(talloc_tos(), handle, fsp,
			  kept || gf2_meta_any(), &t) != 0) {
		return -1;
	}
	if (t.path != NULL && gf2_meta_any() &&
	    gf2_meta_get_xattr(t.fs, t.path, name, value, size, &ret)) {
		err = errno;
		TALLOC_FREE(t.path);
		errno = err;
		return ret;
	}
	at = gf2_now_ns();
	ret = gf2_t_getxattr(&t, name, value, size);
	err = errno;
	gf2_meta_keep_xattr(t.fs, t.path, t.is_link, name, value, size, ret,
			    err, at);
	TALLOC_FREE(t.path);
	errno = err;
	return ret;
}

ssize_t gf2_flistxattr(struct vfs_handle_struct *handle,
		       struct files_struct *fsp, char *list, size_t size)
{
	struct gf2_target t;
	ssize_t ret;

	/* kept lists are answered below: announced changes first */
	gf2_cache_sync();
	if (gf2_target_of(talloc_tos(), handle, fsp, true, &t) != 0) {
		return -1;
	}
	/*
	 * An open handle is on what the path leads to: a list fetched
	 * following it, or one of an entry that is no symlink, serves.
	 */
	if (t.path != NULL &&
	    gf2_meta_get_list(t.fs, t.path,
			      t.fd != NULL ? false : t.nofollow, list, size,
			      &ret)) {
		TALLOC_FREE(t.path);
		return ret;
	}
	if (t.fd == NULL) {
		gf2_dir_fetch_lists(t.fs, t.path, t.nofollow);
		if (gf2_meta_get_list(t.fs, t.path, t.nofollow, list, size,
				      &ret)) {
			TALLOC_FREE(t.path);
			return ret;
		}
	}
	ret = gf2_t_listxattr(&t, list, size);
	TALLOC_FREE(t.path);
	return ret;
}

int gf2_fremovexattr(struct vfs_handle_struct *handle,
		     struct files_struct *fsp, const char *name)
{
	struct gf2_target t;
	struct gf2_change ch;
	uint64_t at;
	int ret;

	ret = gf2_target_of(talloc_tos(), handle, fsp, true, &t);
	/* kept xattr lists and values may now be wrong */
	ch = (struct gf2_change) {
		.kind = GF2_CHANGE_XATTR, .fs = t.fs, .path = t.path,
	};
	gf2_cache_change_begin(&ch);
	if (ret != 0) {
		return -1;
	}
	at = gf2_now_ns();
	ret = gf2_t_removexattr(&t, name);
	if (ret == 0) {
		/* what this process did is what is there now */
		gf2_meta_keep_xattr(t.fs, t.path, t.is_link, name, NULL, 0,
				    -1, ENODATA, at);
	}
	TALLOC_FREE(t.path);
	return ret;
}

int gf2_fsetxattr(struct vfs_handle_struct *handle,
		  struct files_struct *fsp, const char *name,
		  const void *value, size_t size, int flags)
{
	struct gf2_target t;
	struct gf2_change ch;
	uint64_t at;
	int ret;

	ret = gf2_target_of(talloc_tos(), handle, fsp, true, &t);
	/* kept xattr lists and values may now be wrong */
	ch = (struct gf2_change) {
		.kind = GF2_CHANGE_XATTR, .fs = t.fs, .path = t.path,
	};
	gf2_cache_change_begin(&ch);
	if (ret != 0) {
		return -1;
	}
	at = gf2_now_ns();
	ret = gf2_t_setxattr(&t, name, value, size, flags);
	if (ret == 0 && size > 0) {
		/* what this process wrote is what is there now */
		gf2_meta_keep_xattr(t.fs, t.path, t.is_link, name, value,
				    size, size, 0, at);
	}
	TALLOC_FREE(t.path);
	return ret;
}
