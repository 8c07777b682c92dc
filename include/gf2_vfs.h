/*
 * glusterfs2: declarations shared by the files of the VFS glue (the top
 * layer): per-connection and per-handle state, paths, the configuration,
 * and the VFS operations the function table in vfs_glusterfs2.c names.
 *
 * Layer: glue.
 */

#ifndef GF2_VFS_H
#define GF2_VFS_H

#include "gf2_compat.h"
#include "gf2_bridge.h"
#include "gf2_prefetch.h"
#include "gf2_meta.h"
#include "gf2_cache.h"
#include "gf2_wcache.h"
#include "gf2_read.h"
#include "gf2_write.h"

#define GF2_MODULE_NAME "glusterfs2"

/* Returned to smbd as the "fd" of every handle: never a real descriptor. */
#define GF2_FAKE_FD 0x2f2f2f2f

/* Per tree connect, stored with SMB_VFS_HANDLE_SET_DATA. */
struct gf2_conn {
	struct gf2_volume *vol;
	glfs_t *fs;
	char *cwd;		/* absolute path inside the volume */
	struct gf2_pf_config *pf;	/* prefetch options of the share */
	struct gf2_stats *st;		/* counters of the share, or NULL */
	uint32_t lock_cache_ms;		/* glusterfs2:posix lock cache */
	bool lock_lease;		/* glusterfs2:lock check = lease */
	bool write_cache;		/* glusterfs2:write cache */
	uint32_t wc_max_wait_ms;	/* glusterfs2:write cache max wait */
};

/*
 * Per open file: the fsp extension (VFS_ADD_FSP_EXTENSION; its memory
 * belongs to the fsp).  fh is the Gluster handle, which may outlive the
 * fsp while Gluster owns a call on it (gf2_fh_close); pf is the file's
 * prefetch state, a reference dropped with the extension.
 */
struct gf2_handle {
	struct gf2_fh *fh;
	struct gf2_pf_file *pf;	/* prefetch state of the file, lazily */
	struct gf2_write_slot wcache;	/* from the first cached write */
	uint64_t nolocks_until;	/* no other owner's POSIX lock on the file
				   was seen, trusted until this (ms) */
	uint64_t md_stat_puts;	/* see gf2_meta_stat_drop_due */
	struct gf2_lease *lease;	/* glusterfs2:lock check = lease */
	int fd_flags;		/* what fh->fd was opened with */
	bool lease_fd_failed;	/* no descriptor to take a lease on */
	ino_t ino;		/* what the path named at open (0: unknown) */
	bool is_dir;
	bool nofollow;
};

struct gf2_conn *gf2_conn_of(struct vfs_handle_struct *handle);
struct gf2_handle *gf2_handle_of(struct vfs_handle_struct *handle,
				 const struct files_struct *fsp);
/* The glfs_fd to take fsp's read lease on (gf2_handles.c). */
glfs_fd_t *gf2_lease_fd(struct gf2_conn *c, const files_struct *fsp,
			struct gf2_handle *h, bool *own);
/* The glfs_fd of an fsp opened for I/O, or NULL with errno set. */
glfs_fd_t *gf2_io_fd(struct vfs_handle_struct *handle,
		     const struct files_struct *fsp);

/* Paths (gf2_handles.c): absolute inside the volume, talloc'd. */
char *gf2_path(TALLOC_CTX *mem_ctx, struct gf2_conn *c, const char *name);
char *gf2_at_path(TALLOC_CTX *mem_ctx, struct gf2_conn *c,
		  const struct files_struct *dirfsp,
		  const struct smb_filename *smb_fname);
char *gf2_fsp_path(TALLOC_CTX *mem_ctx, struct gf2_conn *c,
		   const struct files_struct *fsp);
/* dirfsp's path still names the directory smbd opened (else ENOENT). */
int gf2_parent_check(struct vfs_handle_struct *handle,
		     const struct files_struct *dirfsp);
/* A path walk: the caller must be allowed to search its directories. */
int gf2_lookup(struct gf2_conn *c, const char *path, bool nofollow,
	       struct stat *st);
/* The stat of an object the caller has open (as fstat: no path walk). */
int gf2_lookup_opened(struct gf2_conn *c, const char *path, bool nofollow,
		      struct stat *st);
void gf2_stat_ex(struct vfs_handle_struct *handle, struct stat_ex *dst,
		 const struct stat *src);

/*
 * What a call on an fsp goes by: its glfs_fd when it has one, else its
 * path, not following a final symlink when the handle was opened with
 * O_NOFOLLOW.  One wrapper per gfapi call family.
 */
struct gf2_target {
	glfs_t *fs;
	glfs_fd_t *fd;
	char *path;		/* NULL when fd serves */
	bool nofollow;
	bool is_link;		/* smbd's stat says symlink */
	bool is_dir;		/* the handle opened a directory */
	ino_t ino;		/* path calls: the object opened (0: any) */
};

/* need_path: build the path even when there is an fd.  0 or -1/errno. */
int gf2_target_of(TALLOC_CTX *mem_ctx, struct vfs_handle_struct *handle,
		  const struct files_struct *fsp, bool need_path,
		  struct gf2_target *t);
int gf2_t_chown(const struct gf2_target *t, uid_t uid, gid_t gid);
int gf2_t_chmod(const struct gf2_target *t, mode_t mode);
int gf2_t_stat(const struct gf2_target *t, struct stat *st);
int gf2_t_utimens(const struct gf2_target *t, const struct timespec *ts);
ssize_t gf2_t_getxattr(const struct gf2_target *t, const char *name,
		       void *value, size_t size);
ssize_t gf2_t_listxattr(const struct gf2_target *t, char *list,
			size_t size);
int gf2_t_setxattr(const struct gf2_target *t, const char *name,
		   const void *value, size_t size, int flags);
int gf2_t_removexattr(const struct gf2_target *t, const char *name);

/*
 * A change of the object at the absolute path (may be NULL) of c's
 * volume, told to the change bracket before it is sent.
 */
void gf2_change_path(struct gf2_conn *c, enum gf2_change_kind kind,
		     const char *path);
/*
 * A change of fsp for the change bracket (gf2_cache_change_begin): its
 * path is made from *ref (the caller's, kept until the bracket began)
 * only when something kept needs it.  h: fsp's handle, or NULL.
 */
struct gf2_fsp_ref {
	struct gf2_conn *c;
	const struct files_struct *fsp;
};
void gf2_change_of_fsp(struct gf2_change *ch, struct gf2_fsp_ref *ref,
		       struct gf2_conn *c, const struct files_struct *fsp,
		       struct gf2_handle *h, enum gf2_change_kind kind);
/* A change of fsp that needs no end (not DATA), told to the bracket. */
void gf2_change_fsp(struct vfs_handle_struct *handle,
		    const struct files_struct *fsp, enum gf2_change_kind kind);

/* The name of the volume behind handle, or NULL. */
static inline const char *gf2_volname(struct vfs_handle_struct *handle)
{
	struct gf2_conn *c = gf2_conn_of(handle);

	return c != NULL ? c->vol->volname : NULL;
}

/* Configuration (gf2_config.c). */
struct gf2_share_config {
	const char *volname;
	struct gf2_volfile_server servers[GF2_MAX_VOLFILE_SERVERS];
	size_t num_servers;
	char *logfile;		/* NULL: gfapi's default */
	struct gf2_share_options o;
};

int gf2_config_load(TALLOC_CTX *mem_ctx, int snum, const char *service,
		    struct gf2_share_config *cfg);
void gf2_config_prefetch(const struct gf2_share_options *o,
			 struct gf2_pf_config *pf);

/* VFS operations, by file. */

/* gf2_handles.c */
int gf2_openat(struct vfs_handle_struct *handle,
	       const struct files_struct *dirfsp,
	       const struct smb_filename *smb_fname,
	       files_struct *fsp, const struct vfs_open_how *how);
int gf2_close(struct vfs_handle_struct *handle, files_struct *fsp);
int gf2_chdir(struct vfs_handle_struct *handle,
	      const struct smb_filename *smb_fname);
#if SMB_VFS_INTERFACE_VERSION >= 53
int gf2_open_share_root(struct vfs_handle_struct *handle,
			struct files_struct *root_fsp,
			const char *connectpath);
#else
struct smb_filename *gf2_getwd(struct vfs_handle_struct *handle,
			       TALLOC_CTX *mem_ctx);
#endif
struct smb_filename *gf2_realpath(struct vfs_handle_struct *handle,
				  TALLOC_CTX *ctx,
				  const struct smb_filename *smb_fname);

/* gf2_dir.c */
DIR *gf2_fdopendir(struct vfs_handle_struct *handle, files_struct *fsp,
		   const char *mask, uint32_t attributes);
struct dirent *gf2_readdir(struct vfs_handle_struct *handle,
			   struct files_struct *dirfsp, DIR *dirp
			   GF2_READDIR_STAT_PARAM);
long gf2_telldir(struct vfs_handle_struct *handle, DIR *dirp);
void gf2_seekdir(struct vfs_handle_struct *handle, DIR *dirp, long offset);
void gf2_rewind_dir(struct vfs_handle_struct *handle, DIR *dirp);
int gf2_closedir(struct vfs_handle_struct *handle, DIR *dirp);
void gf2_dir_fetch_lists(glfs_t *fs, const char *path, bool nofollow);

/* gf2_metaops.c */
int gf2_statvfs(struct vfs_handle_struct *handle, GF2_FS_OBJ_PARAM,
		struct vfs_statvfs_struct *out);
uint64_t gf2_disk_free(struct vfs_handle_struct *handle, GF2_FS_OBJ_PARAM,
		       uint64_t *bsize, uint64_t *dfree, uint64_t *dsize);
int gf2_mkdirat(struct vfs_handle_struct *handle,
		struct files_struct *dirfsp,
		const struct smb_filename *smb_fname, mode_t mode);
int gf2_renameat(struct vfs_handle_struct *handle,
		 struct files_struct *srcdir_fsp,
		 const struct smb_filename *smb_fname_src,
		 struct files_struct *dstdir_fsp,
		 const struct smb_filename *smb_fname_dst
		 GF2_RENAME_HOW_PARAM);
int gf2_stat(struct vfs_handle_struct *handle,
	     struct smb_filename *smb_fname);
int gf2_lstat(struct vfs_handle_struct *handle,
	      struct smb_filename *smb_fname);
int gf2_fstat(struct vfs_handle_struct *handle, files_struct *fsp,
	      SMB_STRUCT_STAT *sbuf);
int gf2_fstatat(struct vfs_handle_struct *handle,
		const struct files_struct *dirfsp,
		const struct smb_filename *smb_fname,
		SMB_STRUCT_STAT *sbuf, int flags);
int gf2_unlinkat(struct vfs_handle_struct *handle,
		 struct files_struct *dirfsp,
		 const struct smb_filename *smb_fname, int flags);
int gf2_fchmod(struct vfs_handle_struct *handle, files_struct *fsp,
	       mode_t mode);
int gf2_fchown(struct vfs_handle_struct *handle, files_struct *fsp,
	       uid_t uid, gid_t gid);
int gf2_lchown(struct vfs_handle_struct *handle,
	       const struct smb_filename *smb_fname, uid_t uid, gid_t gid);
int gf2_fntimes(struct vfs_handle_struct *handle, files_struct *fsp,
		struct smb_file_time *ft);
int gf2_symlinkat(struct vfs_handle_struct *handle,
		  const struct smb_filename *link_contents,
		  struct files_struct *dirfsp,
		  const struct smb_filename *new_smb_fname);
int gf2_readlinkat(struct vfs_handle_struct *handle,
		   const struct files_struct *dirfsp,
		   const struct smb_filename *smb_fname,
		   char *buf, size_t bufsiz);
int gf2_linkat(struct vfs_handle_struct *handle,
	       struct files_struct *srcfsp,
	       const struct smb_filename *old_smb_fname,
	       struct files_struct *dstfsp,
	       const struct smb_filename *new_smb_fname, int flags);
int gf2_mknodat(struct vfs_handle_struct *handle,
		struct files_struct *dirfsp,
		const struct smb_filename *smb_fname, mode_t mode,
		SMB_DEV_T dev);
NTSTATUS gf2_get_real_filename_at(struct vfs_handle_struct *handle,
				  struct files_struct *dirfsp,
				  const char *name, TALLOC_CTX *mem_ctx,
				  char **found_name);
ssize_t gf2_fgetxattr(struct vfs_handle_struct *handle,
		      struct files_struct *fsp, const char *name,
		      void *value, size_t size);
ssize_t gf2_flistxattr(struct vfs_handle_struct *handle,
		       struct files_struct *fsp, char *list, size_t size);
int gf2_fremovexattr(struct vfs_handle_struct *handle,
		     struct files_struct *fsp, const char *name);
int gf2_fsetxattr(struct vfs_handle_struct *handle,
		  struct files_struct *fsp, const char *name,
		  const void *value, size_t size, int flags);

/* gf2_dataops.c */
ssize_t gf2_pread(struct vfs_handle_struct *handle, files_struct *fsp,
		  void *data, size_t n, off_t offset);
ssize_t gf2_pwrite(struct vfs_handle_struct *handle, files_struct *fsp,
		   const void *data, size_t n, off_t offset);
struct tevent_req *gf2_pread_send_fn(struct vfs_handle_struct *handle,
				     TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct files_struct *fsp,
				     void *data, size_t n, off_t offset);
ssize_t gf2_pread_recv_fn(struct tevent_req *req,
			  struct vfs_aio_state *aio_state);
struct tevent_req *gf2_pwrite_send_fn(struct vfs_handle_struct *handle,
				      TALLOC_CTX *mem_ctx,
				      struct tevent_context *ev,
				      struct files_struct *fsp,
				      const void *data, size_t n,
				      off_t offset);
ssize_t gf2_pwrite_recv_fn(struct tevent_req *req,
			   struct vfs_aio_state *aio_state);
struct tevent_req *gf2_fsync_send_fn(struct vfs_handle_struct *handle,
				     TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct files_struct *fsp);
int gf2_fsync_recv_fn(struct tevent_req *req,
		      struct vfs_aio_state *aio_state);
off_t gf2_lseek(struct vfs_handle_struct *handle, files_struct *fsp,
		off_t offset, int whence);
int gf2_ftruncate(struct vfs_handle_struct *handle, files_struct *fsp,
		  off_t len);
int gf2_fallocate(struct vfs_handle_struct *handle,
		  struct files_struct *fsp, uint32_t mode,
		  off_t offset, off_t len);
bool gf2_lock(struct vfs_handle_struct *handle, files_struct *fsp,
	      int op, off_t offset, off_t count, int type);
bool gf2_getlock(struct vfs_handle_struct *handle, files_struct *fsp,
		 off_t *poffset, off_t *pcount, int *ptype, pid_t *ppid);

#endif /* GF2_VFS_H */
