/*
 * glusterfs2: a read cache shared by the processes of one node.
 *
 * Layer: core.
 *
 * Pure logic (libc, pthreads and talloc; no Samba, no gfapi), unit-tested
 * alone (test/unit/test_shmcache.c).  The module serves reads through it
 * with glusterfs2:shared read cache (gf2_shread.c; docs/scale.md, "One
 * hot file, many readers").
 *
 * Segment.  One mapping of a fixed size, given at creation, shared by
 * every process that maps it (fork, or the same file mapped MAP_SHARED):
 *
 *   header     magic, layout version, geometry, the lock, the clock hand,
 *              the generation counter, the counters (one page)
 *   files      file entries keyed by gfid (16 bytes), each with its
 *              generation and the stamp of its last open check; 8-way
 *              set associative, 2 per block
 *   blocks     one descriptor per data block: key (gfid, block index),
 *              the generation it was filled under, length, sequence
 *   buckets    hash chains of the descriptors by key
 *   data       the blocks, block_size bytes each, page aligned
 *
 * Memory: exactly the segment's size, fixed at creation and never grown;
 * the tables take 148 to 152 bytes per block (descriptor 64, bucket 4 to
 * 8, two file entries of 40) and the header a page; the rest is data.  A
 * process's handle is one small talloc'd struct.
 *
 * Generations.  Every generation is drawn from one counter of the
 * segment, so none is given twice, to any file.  A file's entry is made
 * with a fresh generation (gf2_shc_fill_gen) and takes a fresh one at
 * every invalidation; a block is valid only while its file's entry holds
 * the generation it was filled under.  So an invalidation (upcall, lease
 * break, own write, truncate) makes all of the file's blocks stale at
 * once, in O(1); a file entry reused for another file takes its blocks
 * with it; and a fill that began before an invalidation is refused when
 * it is inserted.  Stale blocks are reclaimed by the clock before any
 * valid one is evicted.
 *
 * Locking.  One robust process-shared mutex guards the index (file
 * entries, descriptors, chains, the clock); it is held for a lookup, an
 * invalidation, and an insert including the copy of the block in (at most
 * block_size bytes).  A read copies the block out without the lock, in
 * the manner of a seqlock: the lookup notes the block's sequence, the
 * copy follows, then the sequence and the file's generation are read
 * again; a writer makes the sequence odd before it changes a block and
 * even again after, so a copy that raced a change (the block reused, or
 * the file invalidated) is thrown away and reported stale.  A reader that
 * dies holds nothing.  A process that dies holding the lock (killed
 * mid-copy, say) leaves the mutex owner-dead: the next process to lock
 * it drops the whole index (every block freed and its sequence moved,
 * every file entry given a fresh generation), marks the mutex consistent
 * and goes on; the cache empties but never serves a half-written block,
 * and no process waits on the dead one.  Counted in repairs.
 *
 * Ownership: gf2_shc_create_anon and gf2_shc_open return a handle
 * allocated on mem_ctx that owns its mapping (unmapped when the handle is
 * freed); gf2_shc_attach's handle does not own the memory it is given.
 * A forked child may use its parent's handle.  A handle is used by one
 * thread at a time.
 */

#ifndef GF2_SHMCACHE_H
#define GF2_SHMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <talloc.h>

#define GF2_SHC_GFID_LEN 16

/* block sizes allowed: powers of two in this range */
#define GF2_SHC_BLOCK_MIN (4U * 1024)
#define GF2_SHC_BLOCK_MAX (64U * 1024 * 1024)
/* the fewest blocks a segment may hold */
#define GF2_SHC_MIN_BLOCKS 4U
/* the largest segment */
#define GF2_SHC_SIZE_MAX ((uint64_t)1 << 40)

struct gf2_shc;

/* What a size and a block size give. */
struct gf2_shc_geom {
	uint64_t size;		/* the segment's bytes, all told */
	uint32_t block_size;
	uint32_t n_blocks;	/* data blocks */
	uint32_t n_files;	/* file entries */
	uint32_t n_buckets;	/* hash chains of blocks */
	uint64_t off_files;	/* offsets in the segment */
	uint64_t off_blocks;
	uint64_t off_buckets;
	uint64_t off_data;
};

/* Node-wide counters, kept in the segment. */
struct gf2_shc_stats {
	uint64_t hits;		/* reads answered from a block */
	uint64_t misses;	/* reads that found no block */
	uint64_t stale_reads;	/* reads that found a block of an old
				 * generation, or whose copy raced a change */
	uint64_t stale_fills;	/* inserts refused: the generation moved */
	uint64_t inserts;	/* blocks filled */
	uint64_t dup_fills;	/* inserts of a block already valid */
	uint64_t evictions;	/* valid blocks dropped for room */
	uint64_t invalidations;	/* generations moved by gf2_shc_invalidate */
	uint64_t repairs;	/* index dropped after a dead lock holder */
	uint32_t blocks_used;	/* blocks holding data now (valid or not yet
				 * reclaimed) */
	uint32_t n_blocks;
};

/*
 * The layout of a segment of size bytes with blocks of block_size.
 * 0, or EINVAL with why (a sentence naming the value; why may be NULL)
 * when block_size is 0, not a power of two or outside GF2_SHC_BLOCK_MIN
 * to GF2_SHC_BLOCK_MAX, or size is over GF2_SHC_SIZE_MAX or too small for
 * GF2_SHC_MIN_BLOCKS blocks and their tables.
 */
int gf2_shc_geometry(uint64_t size, uint32_t block_size,
		     struct gf2_shc_geom *g, char *why, size_t why_len);

/*
 * Lay a fresh, empty cache out in mem (size bytes, page aligned, mapped
 * shared by whoever is to use it; gf2_shc_attach then gives handles on
 * it).  Nobody may be using mem meanwhile.  Errors as
 * gf2_shc_geometry; ENOMEM; or the pthread error of the lock's set-up.
 */
int gf2_shc_format(void *mem, uint64_t size, uint32_t block_size,
		   char *why, size_t why_len);

/*
 * A handle on a formatted segment of size bytes at mem (the handle does
 * not own mem).  NULL with why: not a segment of this layout (magic,
 * version) or its geometry does not fit size.
 */
struct gf2_shc *gf2_shc_attach(TALLOC_CTX *mem_ctx, void *mem, uint64_t size,
			       char *why, size_t why_len);

/*
 * An anonymous shared segment (the processes forked after it share it),
 * formatted.  NULL with why.
 */
struct gf2_shc *gf2_shc_create_anon(TALLOC_CTX *mem_ctx, uint64_t size,
				    uint32_t block_size, char *why,
				    size_t why_len);

/*
 * The segment in the file at path, mapped shared, for the processes of a
 * node: created (mode 0600) and formatted if it does not exist or was
 * never completely formatted, under an fcntl lock of the file so that one
 * process formats it; otherwise attached.  Refused (NULL, why): a file
 * not owned by this effective user or open to others, or a segment of
 * another size, block size or layout (other processes may be using it:
 * the caller says which file to remove once they have gone).  The path
 * should be on tmpfs (shared pages of a disk file are written back).
 */
struct gf2_shc *gf2_shc_open(TALLOC_CTX *mem_ctx, const char *path,
			     uint64_t size, uint32_t block_size, char *why,
			     size_t why_len);

/* The segment's layout. */
const struct gf2_shc_geom *gf2_shc_geom(const struct gf2_shc *c);

/*
 * The generation a fill of gfid's blocks is made under, to be passed to
 * gf2_shc_insert: the file's entry is made if there is none (taking the
 * least recently used entry of its set, whose blocks go stale).  Call it
 * before the read whose data is inserted.  0 or EIO (the lock cannot be
 * recovered).
 */
int gf2_shc_fill_gen(struct gf2_shc *c, const uint8_t *gfid, uint64_t *gen);

/* The file's generation now, without making an entry: ENOENT if none. */
int gf2_shc_file_gen(struct gf2_shc *c, const uint8_t *gfid, uint64_t *gen);

/*
 * Keep block idx of gfid: len bytes (at most block_size; fewer where
 * the file ended inside the block) read from the file after
 * gf2_shc_fill_gen gave gen.  0: kept; ESTALE: the file's generation is
 * no longer gen (an invalidation raced the fill) and nothing was kept;
 * EEXIST: that block is already held under gen; EINVAL: len too large;
 * EIO: the lock cannot be recovered.  A clock makes room: a stale block
 * first, else the next valid one not read since it was put in or since
 * the hand last passed.
 */
int gf2_shc_insert(struct gf2_shc *c, const uint8_t *gfid, uint64_t idx,
		   uint64_t gen, const void *src, uint32_t len);

/*
 * Copy bytes [off, off + len) of block idx of gfid to dst, if it is held
 * under the file's current generation.  0: *got bytes copied (fewer than
 * len where the block ends first: the end of the file), *gen the
 * generation they were filled under; ENOENT: not held; ESTALE: held under
 * an old generation (then freed), or changed while being copied (dst may
 * hold anything); EINVAL: off beyond the block size; EIO: the lock cannot
 * be recovered.  ENOENT and ESTALE are both misses to the caller.
 */
int gf2_shc_read(struct gf2_shc *c, const uint8_t *gfid, uint64_t idx,
		 uint32_t off, uint32_t len, void *dst, uint32_t *got,
		 uint64_t *gen);

/*
 * Every block of gfid goes stale, and fills begun before are refused: the
 * file changed (an upcall, a lease break, a write or truncate of this
 * node).  0 (also when the file has no entry: nothing of it is held and
 * no fill of it is under way) or EIO.
 */
int gf2_shc_invalidate(struct gf2_shc *c, const uint8_t *gfid);

/*
 * An open of gfid saw the file as stamp (a digest of its size, change
 * and modification times, never 0): if the file's entry recorded another
 * stamp, every block of it goes stale (*dropped true); the entry then
 * records stamp (made, with a fresh generation, if there was none).  An
 * entry made by gf2_shc_fill_gen records none (0), so the next open
 * drops what was filled under it.  This is how a change that reached
 * this node through no upcall (another head's write while no process
 * here held the file) is noticed.  0 or EIO.
 */
int gf2_shc_open_check(struct gf2_shc *c, const uint8_t *gfid,
		       uint32_t stamp, bool *dropped);

/*
 * Every file's blocks go stale and fills begun before are refused (a
 * process lost track of which files changed).  Counted as one
 * invalidation.  0 or EIO.
 */
int gf2_shc_invalidate_all(struct gf2_shc *c);

/* A snapshot of the counters. */
void gf2_shc_stats(struct gf2_shc *c, struct gf2_shc_stats *st);

#endif
