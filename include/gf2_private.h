/*
 * glusterfs2: state shared between the VFS glue, the volume cache and the
 * asynchronous bridge.  Included only by files built against smbd's
 * headers.
 */

#ifndef GF2_PRIVATE_H
#define GF2_PRIVATE_H

#include <glusterfs/api/glfs.h>
#include "gf2_options.h"

struct tevent_context;
struct tevent_req;
struct files_struct;

/*
 * One glfs instance per volume (and volfile server list) per smbd
 * process, shared by every tree connect of that process that names it.
 * Released when the last tree connect goes and no asynchronous call is
 * still owned by Gluster (see gf2_volume_put and gf2_volume_io_end).
 */
struct gf2_volume {
	struct gf2_volume *prev, *next;
	char *key;
	char *volname;
	char *servers;		/* formatted server list, for logs */
	glfs_t *fs;
	unsigned tcons;		/* tree connects using it */
	unsigned inflight;	/* asynchronous calls Gluster still owns */
};

struct gf2_volume_params {
	const char *volname;
	const struct gf2_volfile_server *servers;
	size_t num_servers;
	const char *logfile;	/* NULL: gfapi's default */
	int loglevel;
	const char *connectpath;	/* snapshot entry point */
};

struct gf2_volume *gf2_volume_get(const struct gf2_volume_params *p);
void gf2_volume_put(struct gf2_volume *vol);
void gf2_volume_io_begin(struct gf2_volume *vol);
void gf2_volume_io_end(struct gf2_volume *vol);

/* Per tree connect, stored with SMB_VFS_HANDLE_SET_DATA. */
struct gf2_conn {
	struct gf2_volume *vol;
	glfs_t *fs;
	char *cwd;		/* absolute path inside the volume */
};

/*
 * Per open file, hung off the fsp (the fsp extension holds a pointer).
 * fd is NULL for path-only handles (O_PATH opens) and for directories:
 * neither costs a descriptor on the bricks.  Directory listings open
 * their own stream in fdopendir and close it in closedir.
 * The handle is its own talloc object: a close that comes while Gluster
 * owns an asynchronous call on it is finished by that call's completion.
 */
struct gf2_fh {
	glfs_fd_t *fd;
	struct gf2_volume *vol;
	unsigned inflight;	/* asynchronous calls Gluster owns */
	bool closing;		/* closed by smbd, calls still in flight */
	bool is_dir;
	bool nofollow;
};

int gf2_fh_close(struct gf2_fh *fh);

struct vfs_aio_state;

/* The asynchronous bridge (gf2_async.c). */
struct tevent_req *gf2_pread_send(TALLOC_CTX *mem_ctx,
				  struct tevent_context *ev,
				  struct gf2_fh *fh,
				  void *data, size_t n, off_t offset);
ssize_t gf2_pread_recv(struct tevent_req *req,
		       struct vfs_aio_state *aio_state);

struct tevent_req *gf2_pwrite_send(TALLOC_CTX *mem_ctx,
				   struct tevent_context *ev,
				   struct gf2_fh *fh,
				   const void *data, size_t n, off_t offset);
ssize_t gf2_pwrite_recv(struct tevent_req *req,
			struct vfs_aio_state *aio_state);

struct tevent_req *gf2_fsync_send(TALLOC_CTX *mem_ctx,
				  struct tevent_context *ev,
				  struct gf2_fh *fh);
int gf2_fsync_recv(struct tevent_req *req,
		   struct vfs_aio_state *aio_state);

#endif /* GF2_PRIVATE_H */
