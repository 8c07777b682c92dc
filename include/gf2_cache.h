/*
 * glusterfs2: the one entry point over both caches (gf2_cache.c).
 *
 * Layer: caches.
 *
 * The VFS glue calls gf2_cache_sync at every entry that may answer from
 * a cache: it takes Gluster's pending upcall events and drops what the
 * data cache (prefetch) and the metadata cache hold of the changed
 * files.  Every change made through this process, of data or metadata,
 * is told to the change bracket (gf2_cache_change_begin) before it is
 * sent; an asynchronous write keeps listings off the file's stat until
 * it is on the bricks (gf2_cache_write_begin/end).
 */

#ifndef GF2_CACHE_H
#define GF2_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include "gf2_bridge.h"
#include "gf2_change.h"

struct gf2_pf_file;

/*
 * The change bracket: every change made through this process is told
 * here before it is sent, so that nothing kept answers with what it was
 * before; what each kind drops is the core's rule (gf2_change.h).
 */
struct gf2_change {
	enum gf2_change_kind kind;
	glfs_t *fs;
	/*
	 * absolute; NULL: path_fn(mem_ctx, path_arg) makes it when it is
	 * needed (a stat to drop, anything kept at all), or nothing
	 */
	const char *path;
	char *(*path_fn)(TALLOC_CTX *mem_ctx, void *path_arg);
	void *path_arg;
	/* the handle's (see gf2_meta_stat_drop_due), or NULL */
	uint64_t *stat_marker;
	/* DATA: the file's inode (0: not known; the shared read cache then
	 * drops every file's blocks) */
	uint64_t ino;
	/* DATA: the file's prefetch state (may be NULL) and the range */
	struct gf2_pf_file *pf;
	uint64_t off;
	uint64_t len;		/* 0: from off to the end, and the size */
};

/*
 * ch is about to be sent: drop what it makes wrong (gf2_change_drops); a
 * DATA change also pauses prefetching on pf until gf2_cache_change_end,
 * called once the change is on the bricks or failed (for other kinds it
 * does nothing).
 */
void gf2_cache_change_begin(const struct gf2_change *ch);
void gf2_cache_change_end(const struct gf2_change *ch);

void gf2_cache_sync(void);
void gf2_cache_invalidate_inode(uint64_t ino, bool all);
/*
 * A tree connect on the volume of fs ends: what is kept of that volume
 * goes with it, so that nothing kept under the address of its glfs
 * instance is served to another instance allocated there later.
 */
void gf2_cache_forget_volume(glfs_t *fs);
/*
 * An asynchronous write of inode ino is about to be sent, after
 * gf2_pf_write_begin on pf (may be NULL): until gf2_cache_write_end
 * (the write's end hook, called once with the record) no listing keeps
 * a stat of the file, and then prefetching on pf resumes.  NULL: out of
 * memory, nothing begun.
 */
struct gf2_cache_write;
struct gf2_cache_write *gf2_cache_write_begin(struct gf2_pf_file *pf,
					      uint64_t ino);
void gf2_cache_write_end(void *arg);
/*
 * The same bracket for the writes of a handle's write cache, which are
 * acknowledged before they reach the bricks: one record for them all,
 * owned by mem_ctx (NULL: out of memory).  gf2_cache_queued_begin before
 * each write (after gf2_pf_write_begin on pf); gf2_cache_write_end with
 * the record once per write, when it is on the bricks or failed.
 */
struct gf2_cache_write *gf2_cache_queued_new(TALLOC_CTX *mem_ctx,
					     struct gf2_pf_file *pf,
					     uint64_t ino);
void gf2_cache_queued_begin(struct gf2_cache_write *w);

#endif /* GF2_CACHE_H */
