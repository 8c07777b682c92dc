/*
 * glusterfs2: how far this process's own writes reached in the files it
 * wrote last, to catch a size Gluster's client answers from its cache
 * that is older than those writes.
 *
 * Layer: core.
 *
 * Why: a brick fills a write's reply stat in two steps (the size, then
 * the change time, taken at least as new as any before), so with writes
 * to one file in flight together the reply of an earlier write may carry
 * the size from before a later one and that later one's change time.
 * md-cache keeps whichever of two replies with equal change times it
 * handles last: the file's size it then answers can be smaller than what
 * this process wrote and was told is on the bricks, until its timeout.
 * Clients that extend a file by writing it (smbclient, Linux and macOS)
 * and read it back at once would get it short.
 *
 * The table keeps, for the last GF2_WRITTEN_SLOTS files written, the end
 * of the furthest write acknowledged.  A stat of one of them smaller than
 * that end is not believed: the caller asks the bricks again (a read
 * there brings a fresh stat into md-cache) and, if the size is still
 * smaller, the file did shrink (another client truncated it) and the end
 * is forgotten.  A truncation by this process forgets it at once.
 *
 * Memory: a fixed array of GF2_WRITTEN_SLOTS entries of 24 bytes, no
 * allocation.  Not thread safe: smbd's main thread only.
 */

#ifndef GF2_WRITTEN_H
#define GF2_WRITTEN_H

#include <stdbool.h>
#include <stdint.h>

#define GF2_WRITTEN_SLOTS 64

struct gf2_written_slot {
	uint64_t ino;		/* 0: free */
	uint64_t end;		/* furthest byte written, exclusive */
	uint64_t used;		/* tick of the last write, for replacement */
};

struct gf2_written {
	struct gf2_written_slot slot[GF2_WRITTEN_SLOTS];
	uint64_t tick;
	uint64_t replaced;	/* slots taken from another file */
};

void gf2_written_init(struct gf2_written *t);

/*
 * A write of file ino ended acknowledged at end (offset + bytes).  A
 * file not in the table takes a free slot or the one written longest
 * ago.  ino 0 and end 0 are ignored.
 */
void gf2_written_note(struct gf2_written *t, uint64_t ino, uint64_t end);

/* The furthest end noted for ino, 0 if none. */
uint64_t gf2_written_end(const struct gf2_written *t, uint64_t ino);

/*
 * Whether a stat of ino giving size is older than this process's own
 * writes: size below the end noted.
 */
bool gf2_written_stale(const struct gf2_written *t, uint64_t ino,
		       uint64_t size);

/* ino's size changed otherwise (truncated here, or shown to shrink). */
void gf2_written_forget(struct gf2_written *t, uint64_t ino);

#endif
