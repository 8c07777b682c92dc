/*
 * glusterfs2: the node's shared read cache as this process uses it
 * (gf2_shread.c, over the segment of gf2_shmcache.c).
 *
 * Layer: caches.
 *
 * With glusterfs2:shared read cache set, every smbd of the node that
 * serves a share of a volume maps one segment for that volume, a file
 * in Samba's lock directory opened as root (the first smbd creates and
 * formats it).  A read of a file whose open was checked
 * (gf2_shr_open_check) is answered from the segment when every byte of
 * it lies in blocks held there; a direct read from Gluster that covers
 * whole aligned blocks puts them in, under the generation taken before
 * it was sent.  Every change of a file's data this process makes or
 * hears of (the change bracket, upcalls, queued and landed writes) drops
 * the file's blocks through gf2_shr_invalidate.
 *
 * Files are keyed by their inode number (the low 64 bits of the GFID,
 * as smbd's file id and the upcalls name them), one segment per volume.
 *
 * Memory: the segment's size, shared by the node's processes (mapped
 * once per process for the process's life, never grown); a small record
 * per volume in the process.
 */

#ifndef GF2_SHREAD_H
#define GF2_SHREAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct gf2_shr;
struct stat;

/*
 * The segment of volume volname (size bytes in blocks of block_size),
 * opened as root the first time this process asks for it and kept for
 * the process's life.  NULL: refused (another geometry in place, the
 * file cannot be opened, the sizes are not possible): logged once per
 * volume and process; the share then reads as without the option.
 */
struct gf2_shr *gf2_shr_get(const char *volname, uint64_t size,
			    uint32_t block_size);

/* The segment's block size; its file's path (for log lines). */
uint32_t gf2_shr_block_size(const struct gf2_shr *s);
const char *gf2_shr_path(const struct gf2_shr *s);

/*
 * An open of inode ino saw st (the handle's fresh stat): the blocks of
 * the file go if they were filled while it had other figures.  false:
 * the segment could not be used (its lock is lost); the handle then
 * reads only from Gluster.
 */
bool gf2_shr_open_check(struct gf2_shr *s, uint64_t ino,
			const struct stat *st);

/*
 * Copy [off, off + n) of ino into dst if every byte of it is held in
 * whole blocks of the file's current generation: true and all n bytes
 * copied, else false (dst may hold anything).  One block is copied at a
 * time without the segment's lock.
 */
bool gf2_shr_serve(struct gf2_shr *s, uint64_t ino, uint8_t *dst,
		   uint64_t off, uint64_t n);

/*
 * A read of [off, off + n) of ino is about to be sent to Gluster: true
 * and *gen the generation to fill under when the range covers at least
 * one whole aligned block; false: nothing to fill.
 */
bool gf2_shr_fill_begin(struct gf2_shr *s, uint64_t ino, uint64_t off,
			uint64_t n, uint64_t *gen);

/*
 * The read answered got bytes of [off, ...) into src: the whole aligned
 * blocks among them go into the segment under gen (refused when the
 * file's generation moved since).  Returns the blocks kept.
 */
unsigned gf2_shr_fill(struct gf2_shr *s, uint64_t ino, uint64_t gen,
		      const uint8_t *src, uint64_t off, uint64_t got);

/*
 * The data of inode ino changed, or may have (0: of any file): its
 * blocks go stale in every segment this process uses.
 */
void gf2_shr_invalidate(uint64_t ino);

/* The segment's node-wide counters (gf2_shc_stats). */
struct gf2_shc_stats;
void gf2_shr_stats(struct gf2_shr *s, struct gf2_shc_stats *st);

#endif /* GF2_SHREAD_H */
