/*
 * glusterfs2: the change rules (pure core): what a change made through
 * this process makes wrong in what the process keeps.
 *
 * Layer: core.
 *
 * The caches' change bracket (gf2_cache_change_begin, gf2_cache.c) asks
 * gf2_change_drops for every change before it is sent and drops what it
 * says; nothing here touches a cache.
 *
 *   change                                   drops
 *   DATA   write, truncate, allocation       the prefetched data of the
 *                                            range (prefetching paused
 *                                            until the change ends), the
 *                                            stat
 *   TIMES  a time change                     the stat
 *   ATTRS  mode, owner                       the path: everything kept
 *   NAME   create, mkdir, symlink, mknod,    of it (stat, values, search
 *          link, an open that truncates       answer) and the stat of its
 *                                            parent directory
 *   XATTR  setxattr, removexattr             the path, every xattr list
 *   TREE   rename, removal                   the path and everything
 *                                            below it, every xattr list
 */

#ifndef GF2_CHANGE_H
#define GF2_CHANGE_H

enum gf2_change_kind {
	GF2_CHANGE_DATA,
	GF2_CHANGE_TIMES,
	GF2_CHANGE_ATTRS,
	GF2_CHANGE_NAME,
	GF2_CHANGE_XATTR,
	GF2_CHANGE_TREE,
};

/* What a change drops (gf2_change_drops), a set of these. */
#define GF2_DROP_DATA	0x01	/* the range's data; prefetch paused */
#define GF2_DROP_STAT	0x02	/* the object's kept stat */
#define GF2_DROP_PATH	0x04	/* all kept of the path, the parent's stat */
#define GF2_DROP_TREE	0x08	/* the path and everything below it */
#define GF2_DROP_LISTS	0x10	/* every kept xattr name list */

unsigned gf2_change_drops(enum gf2_change_kind kind);

#endif /* GF2_CHANGE_H */
