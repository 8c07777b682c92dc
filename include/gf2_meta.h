/*
 * glusterfs2: the metadata cache (gf2_meta.c): stats, selected xattr
 * values and xattr name lists kept after listings and after this
 * process's own calls, with their coherence rules and lifetime.
 *
 * Layer: caches.
 *
 * Above the bridge; the pure bookkeeping of stats and values is
 * gf2_mdcache.c.  Paths are absolute paths inside the volume of fs.
 */

#ifndef GF2_META_H
#define GF2_META_H

#include "gf2_bridge.h"
#include "gf2_mdcache.h"

#define GF2_META_TTL_MS 1000
#define GF2_META_TTL_UPCALL_MAX_MS 60000

struct gf2_md_cache *gf2_meta_cache(void);
/* Serve kept metadata as long as vol's coherence allows. */
void gf2_meta_volume_ttl(const struct gf2_volume *vol);
void gf2_meta_invalidate_inode(uint64_t ino, bool all);
/* fs goes away: drop what is kept of its volume. */
void gf2_meta_forget_volume(glfs_t *fs);

/* Anything kept at all (a cheap test before building a path). */
bool gf2_meta_any(void);

/* Changes made through this process, before they are sent. */
void gf2_meta_changed(glfs_t *fs, const char *path);
/* a rename or removal: path and everything below it */
void gf2_meta_changed_tree(glfs_t *fs, const char *path);
bool gf2_meta_stat_drop_due(const uint64_t *marker);
/* An asynchronous write of ino is in flight: listings keep no stat of it. */
void gf2_meta_write_begin(uint64_t ino);
void gf2_meta_write_end(uint64_t ino);
void gf2_meta_changed_stat(glfs_t *fs, const char *path, uint64_t *marker);
/*
 * How far this process's acknowledged writes reached (gf2_written.h): a
 * write of ino ended at end; ino's size changed otherwise (truncated,
 * allocated); and a stat of ino, through fd, checked against them: a size
 * below what this process wrote is asked of the bricks again (see
 * gf2_meta_check_size in gf2_meta.c).
 */
void gf2_meta_written(uint64_t ino, uint64_t end);
void gf2_meta_resized(uint64_t ino);
void gf2_meta_check_size(glfs_fd_t *fd, struct stat *st);
void gf2_meta_created(glfs_t *fs, const char *path, bool is_dir,
		      uint64_t at);

/* Stats. */
bool gf2_meta_get_stat(glfs_t *fs, const char *path, struct stat *st);
void gf2_meta_keep_listed(glfs_t *fs, const char *dir, const char *name,
			  const struct stat *st, uint64_t now);

/* Values of the xattrs smbd reads everywhere. */
bool gf2_meta_kept_name(const char *name);
/* true: *ret is the answer (-1 with errno set: no such attribute) */
bool gf2_meta_get_xattr(glfs_t *fs, const char *path, const char *name,
			void *value, size_t size, ssize_t *ret);
/* What a getxattr answered (ret, errno err), asked at at. */
void gf2_meta_keep_xattr(glfs_t *fs, const char *path, bool is_link,
			 const char *name, const void *value, size_t size,
			 ssize_t ret, int err, uint64_t at);

/*
 * May the caller search directory dir, as Gluster last answered it
 * (1 yes, 0 no, -1 not known), and keeping such an answer, asked at at.
 */
int gf2_meta_get_search(glfs_t *fs, const char *dir);
void gf2_meta_keep_search(glfs_t *fs, const char *dir, bool allowed,
			  uint64_t at);

/* Name lists. */
bool gf2_meta_get_list(glfs_t *fs, const char *path, bool nofollow,
		       char *list, size_t size, ssize_t *ret);
void gf2_meta_fetch_lists(glfs_t *fs, const char *const *paths,
			  const bool *values, size_t n, bool nofollow);
void gf2_meta_drop_lists(void);

#endif /* GF2_META_H */
