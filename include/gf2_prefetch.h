/*
 * glusterfs2: the data cache: sequential-read prefetch (gf2_prefetch.c).
 *
 * Layer: caches.
 *
 * Keeps data and answers: the read engine (gf2_read.c) shows it every
 * read it routes here; it reads ahead what the readahead state machine
 * (gf2_readahead.c) asks for, with the bridge's gf2_io calls, keeps the
 * data per file and process, and answers whether a read is served from
 * memory, must wait for a chunk in flight, or must go to Gluster.  It
 * sends no read of a client itself.
 */

#ifndef GF2_PREFETCH_H
#define GF2_PREFETCH_H

#include "gf2_bridge.h"
#include "gf2_readahead.h"
#include "gf2_pfbook.h"

/*
 * Prefetch reads Gluster in chunks below 128 KiB: gfapi takes reply
 * buffers up to that size from malloc and reuses them, larger ones fault
 * in fresh pages on every reply.  Reads sent to Gluster directly go in
 * pieces of the same size (gf2_readplan.h).
 */
#define GF2_PF_CHUNK (124 * 1024)

struct file_id;

struct gf2_pf_config {
	bool enabled;
	bool strict;		/* serve only under a read lease/oplock */
	uint64_t max_memory;	/* per smbd process */
	uint64_t max_age_ms;
	struct gf2_ra_config ra;
};

void gf2_pf_set_cap(uint64_t cap);
/*
 * The one memory budget of the process, shared with the write cache
 * (gf2_wcache.c, gf2_wcdrain.c): what is left, and bytes taken and given
 * back.
 */
uint64_t gf2_pf_mem_avail(void);
void gf2_pf_mem_take(uint64_t n);
void gf2_pf_mem_give(uint64_t n);
/* The file's prefetch state, made if there is none; with a reference. */
struct gf2_pf_file *gf2_pf_file_get(const struct file_id *id);
/*
 * The file's prefetch state with a reference if a handle of this process
 * made one, else NULL: for shares without prefetch, whose changes must
 * drop what other shares of the process prefetched.
 */
struct gf2_pf_file *gf2_pf_file_find(const struct file_id *id);
void gf2_pf_file_put(struct gf2_pf_file *pf);
/*
 * The prefetch state a handle keeps in *slot, looked up at its first use
 * and kept there (the handle's reference, put when the handle goes):
 * with enabled (prefetch on for the share) made if there is none
 * (gf2_pf_file_get), else only one that another share made
 * (gf2_pf_file_find).  NULL slot: the handle has no glfs_fd, no state.
 */
struct gf2_pf_file *gf2_pf_file_of(struct gf2_pf_file **slot,
				   const struct file_id *id, bool enabled);
void gf2_pf_invalidate(struct gf2_pf_file *pf, uint64_t off, uint64_t len);
/* Drop the prefetched data of every file with this inode (all: of all). */
void gf2_pf_invalidate_inode(uint64_t ino, bool all);
/*
 * A change of [off, off + len) (len 0: to the end) is about to be sent:
 * drop what it overlaps and pause prefetching on the file until
 * gf2_pf_write_end.  Holds a reference on pf meanwhile.
 */
void gf2_pf_write_begin(struct gf2_pf_file *pf, uint64_t off, uint64_t len);
void gf2_pf_write_end(struct gf2_pf_file *pf);
/*
 * A read of [off, off + n) of pf's file (file_size: its size as smbd
 * knows it): the readahead state machine sees it and the window it asks
 * for is read ahead (as smbd's current identity, unless a write of the
 * file is in flight); then SERVED (*got bytes copied into data), WAIT (a
 * chunk it needs is in flight: gf2_pf_wait) or MISS (to Gluster).
 */
enum gf2_pfb_serve gf2_pf_answer(struct gf2_pf_file *pf,
				 const struct gf2_pf_config *cfg,
				 struct tevent_context *ev, struct gf2_fh *fh,
				 uint8_t *data, uint64_t off, uint64_t n,
				 uint64_t file_size, uint64_t *got);
/*
 * The read of [off, off + n) waits for the chunks in flight it needs:
 * fn(arg, r, got) is called once, when a completion or an invalidation
 * lets it be served (SERVED, got bytes copied into data) or sends it to
 * Gluster (MISS); the waiter is unlinked by then.  A talloc child of
 * mem_ctx; freed earlier, it is unlinked and never called.  NULL: no
 * memory.
 */
struct gf2_pf_waiter;
struct gf2_pf_waiter *gf2_pf_wait(TALLOC_CTX *mem_ctx,
				  struct gf2_pf_file *pf, uint8_t *data,
				  uint64_t off, uint64_t n,
				  void (*fn)(void *arg, enum gf2_pfb_serve r,
					     uint64_t got),
				  void *arg);

#endif /* GF2_PREFETCH_H */
