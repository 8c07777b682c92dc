/*
 * glusterfs2: what the files of the glue share (gf2_paths.c): the
 * per-connection and per-handle state, paths, lookups, the targets of
 * calls on an fsp, and changes told to the change bracket.
 *
 * Layer: glue.
 */

#ifndef GF2_PATHS_H
#define GF2_PATHS_H

#include "gf2_compat.h"
#include "gf2_bridge.h"
#include "gf2_prefetch.h"
#include "gf2_meta.h"
#include "gf2_cache.h"
#include "gf2_wcache.h"
#include "gf2_write.h"

/* Per tree connect, stored with SMB_VFS_HANDLE_SET_DATA. */
struct gf2_conn {
	struct gf2_volume *vol;
	glfs_t *fs;
	char *cwd;		/* absolute path inside the volume */
	struct gf2_pf_config *pf;	/* prefetch options of the share */
	struct gf2_stats *st;		/* counters of the share, or NULL */
	uint32_t lock_cache_ms;		/* glusterfs2:posix lock cache */
	bool write_cache;		/* glusterfs2:write cache */
	uint32_t wc_max_wait_ms;	/* glusterfs2:write cache max wait */
	struct gf2_shr *shr;		/* the node's shared read cache of
					   the volume (NULL: not used) */
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
	ino_t ino;		/* what the path named at open (0: unknown) */
	uint64_t shr_ino;	/* the shared read cache may serve the
				   handle's reads of this inode (0: not) */
	uint64_t shr_contact;	/* see GF2_SHR_CONTACT_MS */
	bool is_dir;
	bool nofollow;
};

/*
 * The connection and the handle of a call: inline, so that every entry
 * of the glue goes from smbd's call straight down to what serves it.
 */
static inline struct gf2_conn *gf2_conn_of(struct vfs_handle_struct *handle)
{
	struct gf2_conn *c = NULL;

	SMB_VFS_HANDLE_GET_DATA(handle, c, struct gf2_conn,
				smb_panic("glusterfs2: no connection data"));
	return c;
}

static inline struct gf2_handle *gf2_handle_of(
	struct vfs_handle_struct *handle, const struct files_struct *fsp)
{
	return (struct gf2_handle *)VFS_FETCH_FSP_EXTENSION(handle, fsp);
}
/* The glfs_fd of an fsp opened for I/O, or NULL with errno set. */
glfs_fd_t *gf2_io_fd(struct vfs_handle_struct *handle,
		     const struct files_struct *fsp);

/* Paths: absolute inside the volume, talloc'd. */
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

/* The stat family by path: stat follows a final symlink, lstat does not. */
int gf2_stat(struct vfs_handle_struct *handle,
	     struct smb_filename *smb_fname);
int gf2_lstat(struct vfs_handle_struct *handle,
	      struct smb_filename *smb_fname);

#endif /* GF2_PATHS_H */
