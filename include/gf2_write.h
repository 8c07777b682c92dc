/*
 * glusterfs2: the write engine (gf2_write.c): every write and fsync of a
 * client.
 *
 * Layer: engines.
 *
 * The VFS glue hands every write and FLUSH here with what it knows of
 * the file (struct gf2_write_file).  A write takes its offset (an
 * append: the file's size, after what this process queued lands), goes
 * through the change bracket (gf2_cache_change_begin), and is sent
 * through the handle's write cache under a write-caching lease with the
 * share's write cache on, else to Gluster directly.  An fsync settles
 * the file, drains the handle's write cache and sends Gluster's fsync.
 * One request state per request, from the VFS entry to the answer.
 */

#ifndef GF2_WRITE_H
#define GF2_WRITE_H

#include "gf2_bridge.h"
#include "gf2_cache.h"

struct files_struct;
struct vfs_handle_struct;
struct gf2_wc;
struct gf2_cache_write;

/* A handle's write cache, made by its first cached write. */
struct gf2_write_slot {
	struct gf2_wc *wc;
	struct gf2_cache_write *bracket;	/* wc's end hook argument */
};

/* What the glue knows of the file a write or fsync is for. */
struct gf2_write_file {
	struct gf2_fh *fh;		/* NULL: the call fails (EBADF) */
	struct gf2_write_slot *slot;	/* the handle's, or NULL */
	bool is_dir;			/* fsync: nothing to sync */
	const char *volname;		/* NULL: nothing to settle */
	struct gf2_stats *st;		/* the share's counters, or NULL */
	bool write_cache;		/* glusterfs2:write cache */
	uint32_t wc_max_wait_ms;	/* glusterfs2:write cache max wait */
	/* writes: the DATA change of the file (off and len: the engine's) */
	struct gf2_change change;
};

/*
 * A write of n bytes at offset of fsp (smbd keeps fsp until the request
 * is done).  NULL: no memory.
 */
struct tevent_req *gf2_write_send(TALLOC_CTX *mem_ctx,
				  struct tevent_context *ev,
				  struct files_struct *fsp,
				  const struct gf2_write_file *f,
				  const void *data, size_t n, off_t offset);
ssize_t gf2_write_recv(struct tevent_req *req,
		       struct vfs_aio_state *aio_state);

/*
 * The synchronous write (SMB_VFS_PWRITE) on fd: what this process
 * acknowledged of the file lands first (blocking), then one gfapi write
 * inside the change bracket.
 */
ssize_t gf2_write_sync(struct vfs_handle_struct *handle,
		       struct files_struct *fsp, glfs_fd_t *fd,
		       const struct gf2_write_file *f,
		       const void *data, size_t n, off_t offset);

/*
 * FLUSH, and the fsync after a WRITE_THROUGH write: answers for the
 * file, not for the handle (see gf2_write.c).
 */
struct tevent_req *gf2_write_fsync_send(TALLOC_CTX *mem_ctx,
					struct tevent_context *ev,
					struct files_struct *fsp,
					const struct gf2_write_file *f);
int gf2_write_fsync_recv(struct tevent_req *req,
			 struct vfs_aio_state *aio_state);

#endif /* GF2_WRITE_H */
