/*
 * glusterfs2: the read engine (gf2_read.c): every read of a client.
 *
 * Layer: engines.
 *
 * The VFS glue hands every read here with what it knows of the file
 * (struct gf2_read_file); the engine settles it after the writes this
 * process acknowledged and has not landed (the write cache), routes it
 * (gf2_rp_route), lets prefetch answer it, and sends what prefetch has
 * not got to Gluster in pieces (gf2_rp_piece).  One request state from
 * the VFS entry to the answer.  With the node's shared read cache
 * (gf2_shread.h) a read is first looked for there; a direct read that
 * covers whole blocks of it fills them.
 */

#ifndef GF2_READ_H
#define GF2_READ_H

#include "gf2_bridge.h"
#include "gf2_prefetch.h"
#include "gf2_settle.h"

struct files_struct;
struct vfs_handle_struct;

/* What the glue knows of the file a read is for. */
struct gf2_read_file {
	struct gf2_fh *fh;		/* NULL: the read fails (EBADF) */
	struct gf2_pf_file **pf_slot;	/* where the handle keeps its
					   prefetch state (NULL: none) */
	const struct file_id *id;	/* the file (fsp's, kept by smbd) */
	const struct gf2_pf_config *cfg;	/* the share's */
	const char *volname;		/* NULL: nothing to settle */
	struct gf2_shr *shr;		/* the node's shared read cache, if
					   the handle may use it (NULL: not) */
	uint64_t shr_ino;		/* the file's key in it */
	uint64_t *shr_contact;		/* when the handle last reached the
					   file on the bricks (ms, mono) */
};

/*
 * The bricks send a client a file's upcalls only while it touched the
 * file within features.cache-invalidation-timeout (60 s by default): a
 * handle whose reads all come from the shared read cache would stop
 * hearing of changes.  So the cache serves a handle only within this
 * long of its last read from (or open on) the bricks; the next read
 * after it goes to Gluster, and the handle is heard again.
 */
#define GF2_SHR_CONTACT_MS 30000

/*
 * A read of n bytes at offset of fsp (smbd keeps fsp until the request
 * is done).  Made as the identity smbd holds now, whenever it goes.
 */
struct tevent_req *gf2_read_send(TALLOC_CTX *mem_ctx,
				 struct tevent_context *ev,
				 struct files_struct *fsp,
				 const struct gf2_read_file *f,
				 void *data, size_t n, off_t offset);
ssize_t gf2_read_recv(struct tevent_req *req,
		      struct vfs_aio_state *aio_state);

/*
 * The synchronous read (SMB_VFS_PREAD): what this process acknowledged
 * of the file lands first (blocking), then one gfapi read.
 */
ssize_t gf2_read_sync(struct vfs_handle_struct *handle,
		      struct files_struct *fsp, glfs_fd_t *fd,
		      const char *volname, void *data, size_t n,
		      off_t offset);

#endif /* GF2_READ_H */
