/*
 * glusterfs2: the bridge between libgfapi and smbd's tevent loop.
 *
 * Layer: bridge.
 *
 * The lowest layer of the module: glfs instances shared per process
 * (gf2_volume.c), handles and asynchronous calls completed into tevent
 * (gf2_async.c), and Gluster's upcall queue (gf2_upcall.c).  It knows
 * nothing of the caches above it; those pass hooks where they must hear
 * of a call's end.  Included only by files built against smbd's headers.
 */

#ifndef GF2_BRIDGE_H
#define GF2_BRIDGE_H

#include <glusterfs/api/glfs.h>
#include "gf2_hold.h"
#include "gf2_options.h"
#include "gf2_stats.h"
#include "gf2_wait.h"

struct tevent_context;
struct tevent_req;
struct vfs_aio_state;

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
	struct gf2_hold hold;	/* users: its tree connects */
	bool upcalls;		/* registered for invalidation events */
	/* What the client volfile gfapi received turns on. */
	bool md_invalidation;	/* md-cache cache-invalidation */
	bool nl_cache;
	unsigned md_timeout;	/* md-cache timeout, seconds */
};

struct gf2_volume_params {
	const char *volname;
	const struct gf2_volfile_server *servers;
	size_t num_servers;
	bool client_io_threads_off;	/* bypass client-side io-threads */
	int event_threads;	/* gfapi's epoll threads; 0: the volume's */
	const char *logfile;	/* NULL: gfapi's default */
	int loglevel;
	const char *connectpath;	/* snapshot entry point */
};

struct gf2_volume *gf2_volume_get(const struct gf2_volume_params *p);
/*
 * Before the first glfs_init of the process: link Gluster's socket
 * transport to libglusterfs' own helpers (gf2_transport.c).
 */
void gf2_transport_bind(void);
void gf2_volume_put(struct gf2_volume *vol);
void gf2_volume_loop_gone(void);
void gf2_volume_io_begin(struct gf2_volume *vol);
void gf2_volume_io_end(struct gf2_volume *vol);

/*
 * A Gluster file handle.  fd is NULL for handles that open nothing on
 * Gluster (path-only handles, directories).  The handle is its own
 * talloc object (NULL context): a close that comes while Gluster owns an
 * asynchronous call on it is finished by that call's completion
 * (gf2_fh_close).
 */
struct gf2_fh {
	glfs_fd_t *fd;
	struct gf2_volume *vol;
	struct gf2_stats *st;	/* the share's counters, or NULL */
	int snum;		/* the share's number (smbd's profile), or -1 */
	struct gf2_hold hold;	/* user: smbd's open handle */
};

struct gf2_fh *gf2_fh_new(struct gf2_volume *vol, struct gf2_stats *st);
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
	/* may be NULL: called in Gluster's thread once ret and err are set */
	void (*thread_fn)(struct gf2_io *io);
	void *private_data;		/* owner; NULL once orphaned */
	void (*end_fn)(void *arg);	/* orphaned request's end hook */
	void *end_arg;
	struct timespec t0;		/* submitted */
	/* Written by Gluster's thread before it schedules im. */
	ssize_t ret;
	int err;
};

/*
 * The identity a Gluster call is made as.  gfapi builds each call's frame
 * from the submitting thread's effective uid, gid and groups, that is
 * from whatever security context smbd's main thread holds at that moment;
 * a call made later on behalf of a request (a short transfer's
 * continuation, a read a prefetch waiter issues when it wakes) must be
 * made as the request's user, captured when the request came in.
 */
struct gf2_ident {
	uid_t uid;
	gid_t gid;
	uint32_t ngroups;
	gid_t *groups;		/* talloc child of mem_ctx of the capture */
};

/* The identity smbd holds now.  false: out of memory. */
bool gf2_ident_capture(TALLOC_CTX *mem_ctx, struct gf2_ident *id);
/* *dst becomes src (groups copied under mem_ctx).  false: no memory. */
bool gf2_ident_copy(TALLOC_CTX *mem_ctx, struct gf2_ident *dst,
		    const struct gf2_ident *src);
bool gf2_ident_equal(const struct gf2_ident *a, const struct gf2_ident *b);
/*
 * The identity Gluster calls of the main thread are made as now (the
 * thread's credentials), not copied: groups stay valid until the next
 * call.  false: it could not be read.
 */
bool gf2_ident_now(struct gf2_ident *id);
/*
 * Make Gluster calls as id until gf2_ident_leave; true if smbd's context
 * had to be switched (then gf2_ident_leave must follow).
 */
bool gf2_ident_enter(const struct gf2_ident *id);
void gf2_ident_leave(void);

/*
 * Run fn(arg) on up to nthreads new threads of the bridge, for the
 * synchronous Gluster calls gfapi has no asynchronous form of; each
 * makes its calls as `as` and holds a call of gate until fn returns (the
 * caller waits with gf2_wait_for and keeps `as` and arg alive until the
 * gate is released).  The number of threads started.
 */
size_t gf2_workers_start(struct gf2_wait *gate, const struct gf2_ident *as,
			 size_t nthreads, void (*fn)(void *arg), void *arg);

struct gf2_io *gf2_io_new(struct tevent_context *ev,
			  struct gf2_fh *fh,
			  enum gf2_io_op op,
			  void (*done_fn)(struct gf2_io *io),
			  void *private_data);
int gf2_io_submit(struct gf2_io *io, const void *wdata, size_t len,
		  off_t offset);

/*
 * Whole reads, writes and fsyncs as tevent requests.  A read is made as
 * `as` (captured when its request came in) rather than as smbd is now.
 */
struct tevent_req *gf2_pread_send_as(TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct gf2_fh *fh,
				     const struct gf2_ident *as,
				     void *data, size_t n, off_t offset);
ssize_t gf2_pread_recv(struct tevent_req *req,
		       struct vfs_aio_state *aio_state);

/*
 * end_fn (may be NULL) is called with end_arg exactly once, in the main
 * loop, when no gfapi call of the request is in flight any more: when it
 * finishes, or when smbd freed it and Gluster answered the orphan.
 */
struct tevent_req *gf2_pwrite_send(TALLOC_CTX *mem_ctx,
				   struct tevent_context *ev,
				   struct gf2_fh *fh,
				   const void *data, size_t n, off_t offset,
				   void (*end_fn)(void *arg), void *end_arg);
ssize_t gf2_pwrite_recv(struct tevent_req *req,
			struct vfs_aio_state *aio_state);

struct tevent_req *gf2_fsync_send(TALLOC_CTX *mem_ctx,
				  struct tevent_context *ev,
				  struct gf2_fh *fh);
/* an fsync of a handle without a descriptor (a directory): done at once */
struct tevent_req *gf2_fsync_none_send(TALLOC_CTX *mem_ctx,
				       struct tevent_context *ev);
int gf2_fsync_recv(struct tevent_req *req,
		   struct vfs_aio_state *aio_state);

/*
 * Gluster upcall invalidation (gf2_upcall.c).  Gluster's thread queues
 * the inode of every changed file; gf2_upcall_take hands the queue to
 * the main loop.  *all: the queue overflowed (or an event named no
 * inode), so everything must be treated as changed.
 */
#define GF2_UPCALL_QUEUE 256

bool gf2_upcall_register(struct gf2_volume *vol);
void gf2_upcall_unregister(struct gf2_volume *vol);
unsigned gf2_upcall_take(uint64_t inos[GF2_UPCALL_QUEUE], bool *all);
/* Events the main loop took so far in this process (for logs). */
uint64_t gf2_upcall_count(void);

#endif /* GF2_BRIDGE_H */
