/*
 * glusterfs2: metadata answers kept after a directory listing (stat of
 * each entry from readdirplus, selected xattr values fetched with the
 * listing's parallel batch), so that the calls smbd makes for every entry
 * right after a listing are answered without a Gluster call.
 *
 * Layer: core.
 *
 * Pure bookkeeping (talloc and libc only), unit-tested alone
 * (test/unit/test_mdcache.c).  The module decides what goes in and when
 * to drop it; the rules are in source/gf2_meta.c and docs/design.md
 * ("Metadata kept after listings").
 *
 * Keys are (ns, path): ns tells volumes apart (the glfs instance), path
 * is the absolute path inside the volume.  Every item carries the time
 * it was fetched and is never returned once older than the cache's max
 * age.  At most max_entries paths are kept (the oldest entry is dropped
 * first); an xattr value is kept only up to GF2_MD_VALUE_MAX bytes and
 * at most GF2_MD_XATTRS per path.
 */

#ifndef GF2_MDCACHE_H
#define GF2_MDCACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <talloc.h>

#define GF2_MD_XATTRS 4
#define GF2_MD_VALUE_MAX 4096
#define GF2_MD_NAME_MAX 48

struct gf2_md_cache;

struct gf2_md_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t expired;
	uint64_t evicted;
	uint64_t dropped;
};

struct gf2_md_cache *gf2_md_new(TALLOC_CTX *mem_ctx, unsigned max_entries,
				uint64_t max_age_ns);
void gf2_md_set_max_age(struct gf2_md_cache *mc, uint64_t max_age_ns);
unsigned gf2_md_count(const struct gf2_md_cache *mc);
const struct gf2_md_stats *gf2_md_stats(const struct gf2_md_cache *mc);
/*
 * How many stats were ever kept: while it has not moved, a path whose
 * stat was dropped has none kept again.
 */
uint64_t gf2_md_stat_puts(const struct gf2_md_cache *mc);

/*
 * Writes in flight: a stat fetched while a write of its inode is in
 * flight may show the file before the write (the bricks answer a
 * listing and a write in either order), so it is not kept.  Every
 * gf2_md_write_begin is matched by one gf2_md_write_end.  Inodes are
 * matched alone, whatever the volume (a false match only keeps less).
 * Up to GF2_MD_WRITING inodes are told apart; while more have writes
 * in flight, no stat is kept.
 */
#define GF2_MD_WRITING 64
void gf2_md_write_begin(struct gf2_md_cache *mc, uint64_t ino);
void gf2_md_write_end(struct gf2_md_cache *mc, uint64_t ino);
bool gf2_md_writing(const struct gf2_md_cache *mc, uint64_t ino);

/*
 * The stat of path (as lstat: symlinks are never kept) fetched at now;
 * false if not kept (a symlink, a write in flight, no memory).
 */
bool gf2_md_put_stat(struct gf2_md_cache *mc, const void *ns,
		     const char *path, const struct stat *st, uint64_t now);
bool gf2_md_get_stat(struct gf2_md_cache *mc, const void *ns,
		     const char *path, uint64_t now, struct stat *st);

/*
 * The value of xattr name of path: len bytes of val, or len -1 for "no
 * such attribute" (ENODATA).
 */
bool gf2_md_put_xattr(struct gf2_md_cache *mc, const void *ns,
		      const char *path, const char *name, const void *val,
		      ssize_t len, uint64_t now);
/*
 * As getxattr would answer into buf of size bytes: *ret is the length,
 * or -1 with *err ENODATA (no such attribute) or ERANGE (buf too small;
 * size 0 asks for the length only).  false: not known.
 */
bool gf2_md_get_xattr(struct gf2_md_cache *mc, const void *ns,
		      const char *path, const char *name, uint64_t now,
		      void *buf, size_t size, ssize_t *ret, int *err);

/*
 * path changed: drop what is kept of it, and the stat of its parent
 * directory (an entry's change leaves the directory's xattrs alone).
 */
void gf2_md_changed(struct gf2_md_cache *mc, const void *ns,
		    const char *path);
/*
 * The data or times of path changed (write, truncate, allocation, times):
 * drop its stat, keep its xattrs.
 */
void gf2_md_changed_stat(struct gf2_md_cache *mc, const void *ns,
			 const char *path);
/* path was renamed or removed: drop it, all below it, its parent's stat. */
void gf2_md_changed_tree(struct gf2_md_cache *mc, const void *ns,
			 const char *path);
/* Gluster says the inode changed: drop every path with that st_ino. */
void gf2_md_drop_ino(struct gf2_md_cache *mc, uint64_t ino);
/*
 * The volume ns goes away: drop everything kept under it, before its
 * address can be reused for another volume.
 */
void gf2_md_drop_ns(struct gf2_md_cache *mc, const void *ns);
void gf2_md_clear(struct gf2_md_cache *mc);

#endif /* GF2_MDCACHE_H */
