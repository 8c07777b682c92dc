/*
 * glusterfs2: declarations of the VFS glue (the top layer): the
 * configuration, and the VFS operations the function table in
 * vfs_glusterfs2.c names.  What the glue's files share (per-connection
 * and per-handle state, paths, lookups, targets) is in gf2_paths.h.
 *
 * Layer: glue.
 */

#ifndef GF2_VFS_H
#define GF2_VFS_H

#include "gf2_paths.h"
#include "gf2_shread.h"
#include "gf2_read.h"
#include "gf2_write.h"

#define GF2_MODULE_NAME "glusterfs2"

/* Returned to smbd as the "fd" of every handle: never a real descriptor. */
#define GF2_FAKE_FD 0x2f2f2f2f

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
