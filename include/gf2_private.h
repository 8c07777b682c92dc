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
	bool upcalls;		/* registered for invalidation events */
};

struct gf2_volume_params {
	const char *volname;
	const struct gf2_volfile_server *servers;
	size_t num_servers;
	bool client_io_threads_off;	/* bypass client-side io-threads */
	const char *logfile;	/* NULL: gfapi's default */
	int loglevel;
	const char *connectpath;	/* snapshot entry point */
};

struct gf2_volume *gf2_volume_get(const struct gf2_volume_params *p);
void gf2_volume_put(struct gf2_volume *vol);
void gf2_volume_loop_gone(void);
void gf2_volume_io_begin(struct gf2_volume *vol);
void gf2_volume_io_end(struct gf2_volume *vol);

struct gf2_pf_config;

/* Per tree connect, stored with SMB_VFS_HANDLE_SET_DATA. */
struct gf2_conn {
	struct gf2_volume *vol;
	glfs_t *fs;
	char *cwd;		/* absolute path inside the volume */
	struct gf2_pf_config *pf;	/* prefetch options of the share */
	struct gf2_stats *st;		/* counters of the share, or NULL */
	uint32_t lock_cache_ms;		/* glusterfs2:posix lock cache */
};

/*
 * Per open file, hung off the fsp (the fsp extension holds a pointer).
 * fd is NULL for path-only handles (O_PATH opens) and for directories:
 * neither costs a descriptor on the bricks.  Directory listings open
 * their own stream in fdopendir and close it in closedir.
 * The handle is its own talloc object: a close that comes while Gluster
 * owns an asynchronous call on it is finished by that call's completion.
 */
struct gf2_pf_file;

struct gf2_fh {
	glfs_fd_t *fd;
	struct gf2_pf_file *pf;	/* prefetch state of the file, lazily */
	struct gf2_volume *vol;
	struct gf2_stats *st;	/* the share's counters, or NULL */
	unsigned inflight;	/* asynchronous calls Gluster owns */
	uint64_t nolocks_until;	/* no other owner's POSIX lock on the file
				   was seen, trusted until this (ms) */
	uint64_t md_stat_puts;	/* gf2_md_stat_puts when a write last
				   dropped the file's kept stat */
	bool closing;		/* closed by smbd, calls still in flight */
	bool is_dir;
	bool nofollow;
};

int gf2_fh_close(struct gf2_fh *fh);

enum gf2_io_op {
	GF2_IO_READ,
	GF2_IO_WRITE,
	GF2_IO_FSYNC,
};

/*
 * One gfapi call in flight (see the ownership notes in gf2_async.c).
 * done_fn runs in smbd's main loop once Gluster has answered.
 */
struct gf2_io {
	struct gf2_fh *fh;
	struct tevent_threaded_context *tctx;
	struct tevent_immediate *im;
	enum gf2_io_op op;
	bool in_flight;
	uint8_t *buf;			/* read buffer, owned by the io */
	size_t buflen;
	void (*done_fn)(struct gf2_io *io);
	void *private_data;		/* owner; NULL once orphaned */
	struct gf2_pf_file *wpf;	/* orphaned write: file to release */
	struct timespec t0;		/* submitted */
	/* Written by Gluster's thread before it schedules im. */
	ssize_t ret;
	int err;
};

struct gf2_io *gf2_io_new(struct tevent_context *ev,
			  struct gf2_fh *fh,
			  enum gf2_io_op op,
			  void (*done_fn)(struct gf2_io *io),
			  void *private_data);
int gf2_io_submit(struct gf2_io *io, const void *wdata, size_t len,
		  off_t offset);

struct vfs_aio_state;

/* The asynchronous bridge (gf2_async.c). */
struct tevent_req *gf2_pread_send(TALLOC_CTX *mem_ctx,
				  struct tevent_context *ev,
				  struct gf2_fh *fh,
				  void *data, size_t n, off_t offset);
ssize_t gf2_pread_recv(struct tevent_req *req,
		       struct vfs_aio_state *aio_state);

/*
 * pf (may be NULL): the file's prefetch state; its overlapping data is
 * dropped before the write is sent, and prefetching pauses until the
 * write is done.
 */
struct tevent_req *gf2_pwrite_send(TALLOC_CTX *mem_ctx,
				   struct tevent_context *ev,
				   struct gf2_fh *fh,
				   struct gf2_pf_file *pf,
				   const void *data, size_t n, off_t offset);
ssize_t gf2_pwrite_recv(struct tevent_req *req,
			struct vfs_aio_state *aio_state);

struct tevent_req *gf2_fsync_send(TALLOC_CTX *mem_ctx,
				  struct tevent_context *ev,
				  struct gf2_fh *fh);
int gf2_fsync_recv(struct tevent_req *req,
		   struct vfs_aio_state *aio_state);

/* Prefetch (gf2_prefetch.c). */
#include "gf2_readahead.h"

struct file_id;

struct gf2_pf_config {
	bool enabled;
	bool strict;		/* serve only under a read lease/oplock */
	uint64_t max_memory;	/* per smbd process */
	uint64_t max_age_ms;
	struct gf2_ra_config ra;
};

/* Per smbd process. */
struct gf2_pf_stats {
	uint64_t used;		/* bytes held, in flight or ready */
	uint64_t issued;	/* bytes asked from Gluster */
	uint64_t completed;	/* bytes that arrived */
	uint64_t served;	/* bytes served to reads from memory */
	uint64_t wasted;	/* bytes dropped unread */
	uint64_t expired;	/* bytes dropped for age */
	uint64_t invalidated;	/* bytes dropped for writes */
	uint64_t hits;		/* reads served at once from memory */
	uint64_t waits;		/* reads that waited for a prefetch */
	uint64_t misses;	/* reads sent to Gluster directly */
	uint64_t upcalls;	/* invalidation events from Gluster */
};

extern struct gf2_pf_stats gf2_pf_stats;

void gf2_pf_set_cap(uint64_t cap);
struct gf2_pf_file *gf2_pf_file_get(const struct file_id *id);
void gf2_pf_file_put(struct gf2_pf_file *pf);
void gf2_pf_invalidate(struct gf2_pf_file *pf, uint64_t off, uint64_t len);
/* Drop the prefetched data of every file with this inode (all: of all). */
void gf2_pf_invalidate_inode(uint64_t ino, bool all);
void gf2_pf_write_begin(struct gf2_pf_file *pf, uint64_t off, uint64_t len);
void gf2_pf_write_end(struct gf2_pf_file *pf);
/* pf NULL: read straight from Gluster. */
struct tevent_req *gf2_pf_read_send(TALLOC_CTX *mem_ctx,
				    struct tevent_context *ev,
				    struct gf2_fh *fh,
				    struct gf2_pf_file *pf,
				    const struct gf2_pf_config *cfg,
				    void *data, size_t n, off_t offset,
				    uint64_t file_size);
ssize_t gf2_pf_read_recv(struct tevent_req *req,
			 struct vfs_aio_state *aio_state);

/* Per-share counters for admins (gf2_stats.c). */
#define GF2_LAT_BUCKETS 12

struct gf2_counters {
	uint64_t reads;			/* read requests served */
	uint64_t read_bytes;		/* bytes they returned */
	uint64_t read_bytes_prefetch;	/* of which copied from prefetch */
	uint64_t read_bytes_gluster;	/* of which read from Gluster */
	uint64_t prefetch_bytes;	/* read ahead from Gluster */
	uint64_t prefetch_unused;	/* read ahead, thrown away unread */
	uint64_t writes;
	uint64_t write_bytes;
	uint64_t fsyncs;
	uint64_t gluster_errors;	/* asynchronous calls that failed */
	uint64_t gluster_calls;		/* asynchronous calls completed */
	uint64_t lat[GF2_LAT_BUCKETS];	/* their latency histogram */
};

struct gf2_stats {
	struct gf2_stats *prev, *next;
	char *share;
	uint64_t inflight;		/* Gluster calls in flight now */
	struct gf2_counters c;
};

struct gf2_stats *gf2_stats_get(const char *share);
void gf2_stats_changed(struct gf2_stats *st);
void gf2_stats_lat(struct gf2_stats *st, uint64_t usec);
void gf2_stats_connect(struct tevent_context *ev);
void gf2_stats_disconnect(void);

/* The monotonic clock, in nanoseconds and in milliseconds. */
static inline uint64_t gf2_now_ns(void)
{
	struct timespec ts;

	clock_gettime_mono(&ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline uint64_t gf2_now_ms(void)
{
	return gf2_now_ns() / 1000000;
}

/* xattr name lists fetched in parallel during listings (gf2_xlist.c). */
bool gf2_xlist_lookup(const char *path, bool nofollow, char *list,
		      size_t size, ssize_t *ret);
void gf2_xlist_fetch(glfs_t *fs, const char *const *paths,
		     const bool *values, size_t n, bool nofollow);

struct gf2_md_cache;
struct gf2_md_cache *gf2_meta_cache(void);
/*
 * Serve kept metadata for at most ms (the shortest any caller asked for
 * in this process; 1 s until then).
 */
void gf2_meta_set_ttl_ms(uint64_t ms);
#define GF2_META_TTL_MS 1000
#define GF2_META_TTL_UPCALL_MAX_MS 60000
void gf2_meta_invalidate_inode(uint64_t ino, bool all);
void gf2_xlist_invalidate_all(void);

/* Gluster upcall invalidation (gf2_upcall.c). */
bool gf2_upcall_register(struct gf2_volume *vol);
void gf2_upcall_unregister(struct gf2_volume *vol);
void gf2_upcall_drain(void);

#endif /* GF2_PRIVATE_H */
