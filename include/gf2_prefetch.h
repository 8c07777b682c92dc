/*
 * glusterfs2: the data cache: sequential-read prefetch (gf2_prefetch.c).
 *
 * Above the bridge: reads ahead with gf2_io calls, keeps the data per
 * file and process, serves later reads by copy.  The readahead state
 * machine (gf2_readahead.c) decides what to read.
 */

#ifndef GF2_PREFETCH_H
#define GF2_PREFETCH_H

#include "gf2_bridge.h"
#include "gf2_readahead.h"

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
 * (gf2_wcache.c): what is left, and bytes taken and given back.
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
/* pf NULL: read straight from Gluster. */
struct tevent_req *gf2_pf_read_send(TALLOC_CTX *mem_ctx,
				    struct tevent_context *ev,
				    struct gf2_fh *fh,
				    struct gf2_pf_file *pf,
				    const struct gf2_pf_config *cfg,
				    void *data, size_t n, off_t offset,
				    uint64_t file_size);
ssize_t gf2_pf_read_recv(struct tevent_req *req,
			 struct vfs_aio_state *aio_state);

#endif /* GF2_PREFETCH_H */
