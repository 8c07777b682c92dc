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
#include "gf2_bridge.h"

void gf2_cache_sync(void);
void gf2_cache_invalidate_inode(uint64_t ino, bool all);
/*
 * A tree connect on the volume of fs ends: what is kept of that volume
 * goes with it, so that nothing kept under the address of its glfs
 * instance is served to another instance allocated there later.
 */
void gf2_cache_forget_volume(glfs_t *fs);

#endif /* GF2_CACHE_H */
