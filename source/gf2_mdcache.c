/*
 * glusterfs2: metadata kept after a listing; see include/gf2_mdcache.h.
 *
 * Layer: core.
 *
 * A hash table of paths (chained) and a list of the entries in the order
 * they were last filled, oldest first: the oldest is dropped when the
 * table is full.  Expired items are dropped when they are asked for.
 */

#include "gf2_mdcache.h"

#include <errno.h>
#include <string.h>

#define GF2_MD_MIN_BUCKETS 64

struct gf2_md_xattr {
	char name[GF2_MD_NAME_MAX];
	uint64_t at;
	ssize_t len;		/* -1: no such attribute */
	uint8_t *val;
};

struct gf2_md_entry {
	struct gf2_md_entry *older, *newer;	/* fill order */
	struct gf2_md_entry *hnext;		/* hash chain */
	const void *ns;
	char *path;
	uint32_t hash;
	bool have_stat;
	uint64_t st_at;
	struct stat st;
	unsigned nx;
	struct gf2_md_xattr x[GF2_MD_XATTRS];
};

struct gf2_md_cache {
	struct gf2_md_entry **buckets;
	uint32_t nbuckets;		/* power of two */
	struct gf2_md_entry *oldest, *newest;
	unsigned count;
	unsigned max_entries;
	uint64_t stat_puts;		/* stats ever kept, for gf2_md_stat_puts */
	uint64_t max_age_ns;
	struct gf2_md_stats stats;
	/* inodes with writes in flight, and writes beyond the table */
	struct {
		uint64_t ino;
		unsigned n;
	} writing[GF2_MD_WRITING];
	unsigned writing_overflow;
};

static uint32_t gf2_md_hash(const void *ns, const char *path)
{
	uint32_t h = 2166136261u;
	uintptr_t p = (uintptr_t)ns;
	size_t i;

	for (i = 0; i < sizeof(p); i++) {
		h = (h ^ ((p >> (8 * i)) & 0xff)) * 16777619u;
	}
	for (; *path != '\0'; path++) {
		h = (h ^ (uint8_t)*path) * 16777619u;
	}
	return h;
}

struct gf2_md_cache *gf2_md_new(TALLOC_CTX *mem_ctx, unsigned max_entries,
				uint64_t max_age_ns)
{
	struct gf2_md_cache *mc = NULL;
	uint32_t n = GF2_MD_MIN_BUCKETS;

	if (max_entries == 0) {
		return NULL;
	}
	mc = talloc_zero(mem_ctx, struct gf2_md_cache);
	if (mc == NULL) {
		return NULL;
	}
	while (n < max_entries && n < (1u << 20)) {
		n <<= 1;
	}
	mc->buckets = talloc_zero_array(mc, struct gf2_md_entry *, n);
	if (mc->buckets == NULL) {
		TALLOC_FREE(mc);
		return NULL;
	}
	mc->nbuckets = n;
	mc->max_entries = max_entries;
	mc->max_age_ns = max_age_ns;
	return mc;
}

void gf2_md_set_max_age(struct gf2_md_cache *mc, uint64_t max_age_ns)
{
	mc->max_age_ns = max_age_ns;
}

unsigned gf2_md_count(const struct gf2_md_cache *mc)
{
	return mc->count;
}

uint64_t gf2_md_stat_puts(const struct gf2_md_cache *mc)
{
	return mc->stat_puts;
}

const struct gf2_md_stats *gf2_md_stats(const struct gf2_md_cache *mc)
{
	return &mc->stats;
}

static struct gf2_md_entry **gf2_md_slot(struct gf2_md_cache *mc,
					 const void *ns, const char *path,
					 uint32_t hash)
{
	struct gf2_md_entry **pe = &mc->buckets[hash & (mc->nbuckets - 1)];

	while (*pe != NULL) {
		struct gf2_md_entry *e = *pe;

		if (e->hash == hash && e->ns == ns &&
		    strcmp(e->path, path) == 0) {
			break;
		}
		pe = &e->hnext;
	}
	return pe;
}

static void gf2_md_unlink_age(struct gf2_md_cache *mc, struct gf2_md_entry *e)
{
	if (e->older != NULL) {
		e->older->newer = e->newer;
	} else {
		mc->oldest = e->newer;
	}
	if (e->newer != NULL) {
		e->newer->older = e->older;
	} else {
		mc->newest = e->older;
	}
	e->older = e->newer = NULL;
}

static void gf2_md_link_newest(struct gf2_md_cache *mc,
			       struct gf2_md_entry *e)
{
	e->older = mc->newest;
	e->newer = NULL;
	if (mc->newest != NULL) {
		mc->newest->newer = e;
	} else {
		mc->oldest = e;
	}
	mc->newest = e;
}

static void gf2_md_free(struct gf2_md_cache *mc, struct gf2_md_entry *e)
{
	struct gf2_md_entry **pe = gf2_md_slot(mc, e->ns, e->path, e->hash);

	if (*pe == e) {
		*pe = e->hnext;
	}
	gf2_md_unlink_age(mc, e);
	mc->count -= 1;
	TALLOC_FREE(e);
}

static struct gf2_md_entry *gf2_md_find(struct gf2_md_cache *mc,
					const void *ns, const char *path)
{
	uint32_t hash = gf2_md_hash(ns, path);

	return *gf2_md_slot(mc, ns, path, hash);
}

/* The entry of path, created (newest) if needed; NULL without memory. */
static struct gf2_md_entry *gf2_md_fill(struct gf2_md_cache *mc,
					const void *ns, const char *path)
{
	uint32_t hash = gf2_md_hash(ns, path);
	struct gf2_md_entry **pe = gf2_md_slot(mc, ns, path, hash);
	struct gf2_md_entry *e = *pe;

	if (e != NULL) {
		gf2_md_unlink_age(mc, e);
		gf2_md_link_newest(mc, e);
		return e;
	}
	while (mc->count >= mc->max_entries && mc->oldest != NULL) {
		gf2_md_free(mc, mc->oldest);
		mc->stats.evicted += 1;
		/* the chain may have changed */
		pe = gf2_md_slot(mc, ns, path, hash);
	}
	e = talloc_zero(mc, struct gf2_md_entry);
	if (e == NULL) {
		return NULL;
	}
	e->path = talloc_strdup(e, path);
	if (e->path == NULL) {
		TALLOC_FREE(e);
		return NULL;
	}
	e->ns = ns;
	e->hash = hash;
	*pe = e;
	gf2_md_link_newest(mc, e);
	mc->count += 1;
	return e;
}

static bool gf2_md_fresh(const struct gf2_md_cache *mc, uint64_t at,
			 uint64_t now)
{
	return now >= at && now - at <= mc->max_age_ns;
}

void gf2_md_write_begin(struct gf2_md_cache *mc, uint64_t ino)
{
	unsigned i;
	unsigned free_slot = GF2_MD_WRITING;

	if (mc == NULL) {
		return;
	}
	for (i = 0; i < GF2_MD_WRITING; i++) {
		if (mc->writing[i].n > 0 && mc->writing[i].ino == ino) {
			mc->writing[i].n += 1;
			return;
		}
		if (mc->writing[i].n == 0 && free_slot == GF2_MD_WRITING) {
			free_slot = i;
		}
	}
	if (free_slot == GF2_MD_WRITING) {
		mc->writing_overflow += 1;
		return;
	}
	mc->writing[free_slot].ino = ino;
	mc->writing[free_slot].n = 1;
}

void gf2_md_write_end(struct gf2_md_cache *mc, uint64_t ino)
{
	unsigned i;

	if (mc == NULL) {
		return;
	}
	for (i = 0; i < GF2_MD_WRITING; i++) {
		if (mc->writing[i].n > 0 && mc->writing[i].ino == ino) {
			mc->writing[i].n -= 1;
			return;
		}
	}
	if (mc->writing_overflow > 0) {
		mc->writing_overflow -= 1;
	}
}

bool gf2_md_writing(const struct gf2_md_cache *mc, uint64_t ino)
{
	unsigned i;

	if (mc->writing_overflow > 0) {
		return true;
	}
	for (i = 0; i < GF2_MD_WRITING; i++) {
		if (mc->writing[i].n > 0 && mc->writing[i].ino == ino) {
			return true;
		}
	}
	return false;
}

bool gf2_md_put_stat(struct gf2_md_cache *mc, const void *ns,
		     const char *path, const struct stat *st, uint64_t now)
{
	struct gf2_md_entry *e = NULL;

	if (S_ISLNK(st->st_mode)) {
		return false;
	}
	if (gf2_md_writing(mc, (uint64_t)st->st_ino)) {
		/* fetched while the file changes: maybe from before */
		return false;
	}
	e = gf2_md_fill(mc, ns, path);
	if (e == NULL) {
		return false;
	}
	e->st = *st;
	e->st_at = now;
	e->have_stat = true;
	mc->stat_puts += 1;
	return true;
}

bool gf2_md_get_stat(struct gf2_md_cache *mc, const void *ns,
		     const char *path, uint64_t now, struct stat *st)
{
	struct gf2_md_entry *e = gf2_md_find(mc, ns, path);

	if (e == NULL || !e->have_stat) {
		mc->stats.misses += 1;
		return false;
	}
	if (!gf2_md_fresh(mc, e->st_at, now)) {
		mc->stats.expired += 1;
		gf2_md_free(mc, e);
		return false;
	}
	*st = e->st;
	mc->stats.hits += 1;
	return true;
}

bool gf2_md_put_xattr(struct gf2_md_cache *mc, const void *ns,
		      const char *path, const char *name, const void *val,
		      ssize_t len, uint64_t now)
{
	struct gf2_md_entry *e = NULL;
	struct gf2_md_xattr *x = NULL;
	unsigned i;

	if (strlen(name) >= GF2_MD_NAME_MAX || len > GF2_MD_VALUE_MAX ||
	    len < -1 || (len > 0 && val == NULL)) {
		return false;
	}
	e = gf2_md_fill(mc, ns, path);
	if (e == NULL) {
		return false;
	}
	for (i = 0; i < e->nx; i++) {
		if (strcmp(e->x[i].name, name) == 0) {
			x = &e->x[i];
			break;
		}
	}
	if (x == NULL) {
		if (e->nx == GF2_MD_XATTRS) {
			return false;
		}
		x = &e->x[e->nx++];
		memcpy(x->name, name, strlen(name) + 1);
	}
	TALLOC_FREE(x->val);
	x->len = len;
	x->at = now;
	if (len > 0) {
		x->val = talloc_memdup(e, val, len);
		if (x->val == NULL) {
			x->len = -2;	/* unknown */
			return false;
		}
	}
	return true;
}

bool gf2_md_get_xattr(struct gf2_md_cache *mc, const void *ns,
		      const char *path, const char *name, uint64_t now,
		      void *buf, size_t size, ssize_t *ret, int *err)
{
	struct gf2_md_entry *e = gf2_md_find(mc, ns, path);
	unsigned i;

	if (e == NULL) {
		mc->stats.misses += 1;
		return false;
	}
	for (i = 0; i < e->nx; i++) {
		struct gf2_md_xattr *x = &e->x[i];

		if (strcmp(x->name, name) != 0) {
			continue;
		}
		if (x->len < -1) {
			break;
		}
		if (!gf2_md_fresh(mc, x->at, now)) {
			mc->stats.expired += 1;
			x->len = -2;
			TALLOC_FREE(x->val);
			break;
		}
		mc->stats.hits += 1;
		if (x->len == -1) {
			*ret = -1;
			*err = ENODATA;
			return true;
		}
		if (size == 0) {
			*ret = x->len;
			*err = 0;
			return true;
		}
		if (size < (size_t)x->len) {
			*ret = -1;
			*err = ERANGE;
			return true;
		}
		memcpy(buf, x->val, x->len);
		*ret = x->len;
		*err = 0;
		return true;
	}
	mc->stats.misses += 1;
	return false;
}

static void gf2_md_drop_path(struct gf2_md_cache *mc, const void *ns,
			     const char *path)
{
	struct gf2_md_entry *e = gf2_md_find(mc, ns, path);

	if (e != NULL) {
		gf2_md_free(mc, e);
		mc->stats.dropped += 1;
	}
}

static void gf2_md_drop_stat(struct gf2_md_cache *mc, const void *ns,
			     const char *path)
{
	struct gf2_md_entry *e = gf2_md_find(mc, ns, path);

	if (e == NULL || !e->have_stat) {
		return;
	}
	mc->stats.dropped += 1;
	if (e->nx == 0) {
		gf2_md_free(mc, e);
		return;
	}
	e->have_stat = false;
}

/*
 * A change to an entry of a directory changes the directory's stat (times,
 * link count), not its extended attributes: keep those.
 */
static void gf2_md_drop_parent_stat(struct gf2_md_cache *mc, const void *ns,
				    const char *path)
{
	const char *slash = strrchr(path, '/');
	char parent[4096];
	size_t len;

	if (slash == NULL) {
		return;
	}
	len = slash == path ? 1 : (size_t)(slash - path);
	if (len >= sizeof(parent)) {
		gf2_md_clear(mc);	/* cannot name it: drop everything */
		return;
	}
	memcpy(parent, path, len);
	parent[len] = '\0';
	gf2_md_drop_stat(mc, ns, parent);
}

void gf2_md_changed_stat(struct gf2_md_cache *mc, const void *ns,
			 const char *path)
{
	if (mc == NULL || mc->count == 0) {
		return;
	}
	gf2_md_drop_stat(mc, ns, path);
}

void gf2_md_changed(struct gf2_md_cache *mc, const void *ns,
		    const char *path)
{
	if (mc == NULL || mc->count == 0) {
		return;
	}
	gf2_md_drop_path(mc, ns, path);
	gf2_md_drop_parent_stat(mc, ns, path);
}

void gf2_md_changed_tree(struct gf2_md_cache *mc, const void *ns,
			 const char *path)
{
	struct gf2_md_entry *e = NULL;
	struct gf2_md_entry *next = NULL;
	size_t len = strlen(path);

	if (mc == NULL || mc->count == 0) {
		return;
	}
	gf2_md_changed(mc, ns, path);
	if (len == 1 && path[0] == '/') {
		len = 0;	/* everything is below the root */
	}
	for (e = mc->oldest; e != NULL; e = next) {
		next = e->newer;
		if (e->ns == ns && strncmp(e->path, path, len) == 0 &&
		    e->path[len] == '/') {
			gf2_md_free(mc, e);
			mc->stats.dropped += 1;
		}
	}
}

void gf2_md_drop_ino(struct gf2_md_cache *mc, uint64_t ino)
{
	struct gf2_md_entry *e = NULL;
	struct gf2_md_entry *next = NULL;

	if (mc == NULL) {
		return;
	}
	for (e = mc->oldest; e != NULL; e = next) {
		next = e->newer;
		if (!e->have_stat || (uint64_t)e->st.st_ino == ino) {
			gf2_md_free(mc, e);
			mc->stats.dropped += 1;
		}
	}
}

void gf2_md_drop_ns(struct gf2_md_cache *mc, const void *ns)
{
	struct gf2_md_entry *e = NULL;
	struct gf2_md_entry *next = NULL;

	if (mc == NULL) {
		return;
	}
	for (e = mc->oldest; e != NULL; e = next) {
		next = e->newer;
		if (e->ns == ns) {
			gf2_md_free(mc, e);
			mc->stats.dropped += 1;
		}
	}
}

void gf2_md_clear(struct gf2_md_cache *mc)
{
	if (mc == NULL) {
		return;
	}
	while (mc->oldest != NULL) {
		gf2_md_free(mc, mc->oldest);
		mc->stats.dropped += 1;
	}
}
