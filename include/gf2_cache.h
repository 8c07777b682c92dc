/*
 * glusterfs2: the one entry point over both caches (gf2_cache.c).
 *
 * The VFS glue calls gf2_cache_sync at every entry that may answer from
 * a cache: it takes Gluster's pending upcall events and drops what the
 * data cache (prefetch) and the metadata cache hold of the changed
 * files.
 */

#ifndef GF2_CACHE_H
#define GF2_CACHE_H

#include <stdbool.h>
#include <stdint.h>

void gf2_cache_sync(void);
void gf2_cache_invalidate_inode(uint64_t ino, bool all);

#endif /* GF2_CACHE_H */
