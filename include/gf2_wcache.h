/*
 * glusterfs2: the write cache (cache layer): writes acknowledged once
 * queued while the handle holds a write-caching lease or oplock.
 *
 * Layer: caches.
 *
 * The write engine (gf2_write.c) decides whether a write may be cached
 * (the lease state, the option); it and the glue call the sync points.
 * Three files implement it: the queue (gf2_wcache.c) keeps the waiting
 * requests and the gather's buffer; the drain (gf2_wcdrain.c) sends the
 * gathers with the bridge's asynchronous writes and waits for them; the
 * registry (gf2_wcreg.c) keeps the per-head entries that make another
 * process's open of the file wait until every acknowledged byte is on
 * the bricks.
 */

#ifndef GF2_WCACHE_H
#define GF2_WCACHE_H

#include "gf2_bridge.h"
#include "gf2_wqueue.h"

/* Writes are gathered into buffers of this size, at most this many sent. */
#define GF2_WC_MERGE (1024 * 1024)
#define GF2_WC_INFLIGHT 4

/*
 * After another process asked for a file to be drained, none of its
 * writes is cached for this long (ms), so that a steady writer lets the
 * opener in; the opener's own retries re-arm it.
 */
#define GF2_WC_DRAIN_HOLD_MS 5000

struct gf2_wc;

/*
 * The write cache of one handle.  key names the file across processes
 * (volume and inode, see gf2_wc_key); end_fn/end_arg (may be NULL) are
 * called once per queued write when it is on the bricks.
 */
struct gf2_wc *gf2_wc_new(TALLOC_CTX *mem_ctx, struct tevent_context *ev,
			  struct gf2_fh *fh, struct gf2_stats *st,
			  const char *volname, uint64_t ino,
			  uint32_t max_wait_ms,
			  void (*end_fn)(void *arg), void *end_arg);

/*
 * A write through the cache.  may_cache: the handle holds a write-caching
 * lease or oplock and no break is in progress.  Without it, or when
 * another process asked for the file, the write waits until the queue is
 * empty and is then written directly.  A latched error of an earlier
 * queued write fails this write.
 */
struct tevent_req *gf2_wc_write_send(TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct gf2_wc *wc, bool may_cache,
				     const void *data, size_t n,
				     off_t offset);
ssize_t gf2_wc_write_recv(struct tevent_req *req,
			  struct vfs_aio_state *aio_state);

/*
 * FLUSH: completes once everything queued before it is on the bricks and
 * Gluster's fsync returned; fails with a latched error of a queued write.
 */
struct tevent_req *gf2_wc_fsync_send(TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct gf2_wc *wc);
int gf2_wc_fsync_recv(struct tevent_req *req,
		      struct vfs_aio_state *aio_state);

/*
 * Blocks until everything queued is on the bricks.  Returns 0, or the
 * latched error (reported once, and logged when it was latched).
 */
int gf2_wc_drain_sync(struct gf2_wc *wc);

/*
 * The handle closes: drains as gf2_wc_drain_sync and frees wc.  If the
 * wait gave up (ETIMEDOUT) with acknowledged bytes still queued or out,
 * nothing of them is dropped: wc outlives the handle (taking end_owner,
 * the talloc parent of its end_arg, or NULL, with it), keeps its
 * registry entry, a user of its gf2_fh and a hold on the volume, sends
 * what is left as Gluster answers, and frees itself once all of it
 * landed.  Returns 0, the latched error, or ETIMEDOUT (wc then detached);
 * the caller must not touch wc afterwards.
 */
int gf2_wc_close(struct gf2_wc *wc, void *end_owner);
/*
 * Drain every handle of this process on the file (volume, inode): 0, or
 * ETIMEDOUT when Gluster left a queued write unanswered for the share's
 * write cache max wait (the latched errors stay).
 */
int gf2_wc_drain_file_sync(const char *volname, uint64_t ino);

/* This process holds acknowledged bytes of the file not yet landed. */
bool gf2_wc_file_busy(const char *volname, uint64_t ino);
/*
 * Completes, without blocking, once every write this process acknowledged
 * of the file (volume, inode) before it is on the bricks: a read of the
 * file waits for it.  A latched error is left for the next write, FLUSH or
 * close of its handle.  0, or an errno (no memory).
 */
struct tevent_req *gf2_wc_settle_send(TALLOC_CTX *mem_ctx,
				      struct tevent_context *ev,
				      const char *volname, uint64_t ino);
int gf2_wc_settle_recv(struct tevent_req *req);

/*
 * An error a queued write of the file (volume, inode) met on the bricks
 * that the handle which wrote it has not reported yet, or 0.  Left
 * latched: that handle still reports it at its next write, FLUSH or
 * close.
 */
int gf2_wc_file_error(const char *volname, uint64_t ino);

/*
 * Another handle is being opened on the file: drain this process's
 * queues of it, and ask other processes to drain theirs.  Returns 0, or
 * EAGAIN while another process still holds acknowledged bytes of it
 * (smbd then retries the open).
 */
int gf2_wc_open_check(const char *volname, uint64_t ino);

#endif /* GF2_WCACHE_H */
