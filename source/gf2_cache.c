/*
 * glusterfs2: the one entry point over both caches (see gf2_cache.h).
 *
 * Layer: caches.
 */

#include "includes.h"
#include "gf2_prefetch.h"
#include "gf2_meta.h"
#include "gf2_shread.h"
#include "gf2_cache.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

void gf2_cache_invalidate_inode(uint64_t ino, bool all)
{
	gf2_pf_invalidate_inode(ino, all);
	gf2_meta_invalidate_inode(ino, all);
	gf2_shr_invalidate(all ? 0 : ino);
}

/* The path of the change's object, made when the rule needs it. */
static const char *gf2_cache_change_path(TALLOC_CTX *mem_ctx,
					 const struct gf2_change *ch)
{
	if (ch->path != NULL || ch->path_fn == NULL) {
		return ch->path;
	}
	return ch->path_fn(mem_ctx, ch->path_arg);
}

/*
 * The file's data or times changed: its kept stat goes, its xattrs stay.
 * A handle (stat_marker) names no path again until a listing keeps a
 * stat again.
 */
static void gf2_cache_drop_stat(const struct gf2_change *ch)
{
	TALLOC_CTX *frame = NULL;

	if (!gf2_meta_stat_drop_due(ch->stat_marker)) {
		return;
	}
	frame = talloc_stackframe();
	gf2_meta_changed_stat(ch->fs, gf2_cache_change_path(frame, ch),
			      ch->stat_marker);
	TALLOC_FREE(frame);
}

/*
 * Everything kept of the path (and below it).  A path made on demand is
 * made only while anything is kept.
 */
static void gf2_cache_drop_path(const struct gf2_change *ch, bool tree)
{
	TALLOC_CTX *frame = NULL;
	const char *path = NULL;

	if (ch->path == NULL && !gf2_meta_any()) {
		return;
	}
	frame = talloc_stackframe();
	path = gf2_cache_change_path(frame, ch);
	if (tree) {
		gf2_meta_changed_tree(ch->fs, path);
	} else {
		gf2_meta_changed(ch->fs, path);
	}
	TALLOC_FREE(frame);
}

void gf2_cache_change_begin(const struct gf2_change *ch)
{
	unsigned drops = gf2_change_drops(ch->kind);

	if (drops & GF2_DROP_LISTS) {
		gf2_meta_drop_lists();
	}
	if (drops & GF2_DROP_DATA) {
		gf2_shr_invalidate(ch->ino);
		if (ch->pf != NULL) {
			gf2_pf_write_begin(ch->pf, ch->off, ch->len);
		}
	}
	if (drops & GF2_DROP_STAT) {
		gf2_cache_drop_stat(ch);
	}
	if (drops & (GF2_DROP_PATH | GF2_DROP_TREE)) {
		gf2_cache_drop_path(ch, (drops & GF2_DROP_TREE) != 0);
	}
}

void gf2_cache_change_end(const struct gf2_change *ch)
{
	if (!(gf2_change_drops(ch->kind) & GF2_DROP_DATA)) {
		return;
	}
	/*
	 * Again once the change is on the bricks: another process may
	 * have filled blocks from what the bricks held before it landed.
	 */
	gf2_shr_invalidate(ch->ino);
	if (ch->pf != NULL) {
		gf2_pf_write_end(ch->pf);
	}
}

struct gf2_cache_write {
	struct gf2_pf_file *pf;
	uint64_t ino;
	bool queued;		/* a write cache's, kept across writes */
};

struct gf2_cache_write *gf2_cache_write_begin(struct gf2_pf_file *pf,
					      uint64_t ino)
{
	struct gf2_cache_write *w = talloc_zero(NULL, struct gf2_cache_write);

	if (w == NULL) {
		return NULL;
	}
	w->pf = pf;
	w->ino = ino;
	gf2_meta_write_begin(ino);
	return w;
}

void gf2_cache_write_end(void *arg)
{
	struct gf2_cache_write *w = arg;

	/* on the bricks (or failed): what was filled before it landed goes */
	gf2_shr_invalidate(w->ino);
	if (w->pf != NULL) {
		gf2_pf_write_end(w->pf);
	}
	gf2_meta_write_end(w->ino);
	if (!w->queued) {
		talloc_free(w);
	}
}

struct gf2_cache_write *gf2_cache_queued_new(TALLOC_CTX *mem_ctx,
					     struct gf2_pf_file *pf,
					     uint64_t ino)
{
	struct gf2_cache_write *w = talloc_zero(mem_ctx,
						struct gf2_cache_write);

	if (w == NULL) {
		return NULL;
	}
	w->pf = pf;
	w->ino = ino;
	w->queued = true;
	return w;
}

void gf2_cache_queued_begin(struct gf2_cache_write *w)
{
	/* queued: its bytes are the file's now, whatever the bricks hold */
	gf2_shr_invalidate(w->ino);
	gf2_meta_write_begin(w->ino);
}

void gf2_cache_forget_volume(glfs_t *fs)
{
	/* prefetched data is kept by file id and handle, not by volume */
	gf2_meta_forget_volume(fs);
}

void gf2_cache_sync(void)
{
	uint64_t inos[GF2_UPCALL_QUEUE];
	bool all = false;
	unsigned n;
	unsigned i;

	n = gf2_upcall_take(inos, &all);
	if (n == 0 && !all) {
		return;
	}
	if (all) {
		DBG_INFO("upcall queue overflow: dropping everything kept\n");
		gf2_cache_invalidate_inode(0, true);
		return;
	}
	for (i = 0; i < n; i++) {
		gf2_cache_invalidate_inode(inos[i], false);
	}
}
