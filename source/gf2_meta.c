/*
 * glusterfs2: the metadata cache.
 *
 * Layer: caches.
 *
 * What is kept, per smbd process, so that the calls smbd makes for every
 * entry right after a listing (and at every open and create) need no
 * Gluster round trip:
 *   - the stat of each listed entry, from readdirplus;
 *   - the values of the xattrs smbd reads everywhere (gf2_meta_kept_name)
 *     fetched with a listing's batch, and what this process's own
 *     getxattr, setxattr and removexattr calls answered or made;
 *   - extended attribute name lists, fetched in parallel during
 *     listings (below);
 *   - whether the caller may search a directory, as Gluster answered
 *     (gf2_meta_get_search).
 * Stats and values live in the pure cache of gf2_mdcache.c; the lists
 * in a bounded list of their own.  Both are keyed by volume, identity
 * and path: one process serves shares of several volumes, whose paths
 * repeat, and several users (logins), whom Gluster answers
 * differently (see "Identities" below).
 *
 * Coherence, the rules every caller follows:
 *   - every change made through this process drops what is kept of the
 *     changed path and of its parent directory's stat (renames and
 *     removals: of everything below it too, and every kept list) before
 *     the change is sent; a change of data or times drops the file's
 *     stat and keeps its xattrs;
 *   - a Gluster upcall drops the changed inode and every kept list
 *     (gf2_cache_sync);
 *   - anything else is served for at most the process's TTL after it
 *     was fetched: GF2_META_TTL_MS (md-cache's default timeout), or on
 *     volumes whose changes Gluster announces md-cache's own timeout, at
 *     most GF2_META_TTL_UPCALL_MAX_MS (gf2_meta_volume_ttl).
 *
 * Lists.  For every entry of a listing smbd asks for the entry's EA
 * size, which costs a listxattr: one Gluster round trip per entry, one
 * after the other.  When smbd asks for the list of an entry of a
 * directory this process is listing, the lists of that entry and of the
 * entries read ahead of smbd in that directory are fetched at once
 * (gf2_meta_fetch_lists), at most GF2_XL_BATCH of them, none started
 * after GF2_XL_BATCH_MS, on up to GF2_XL_THREADS of the bridge's workers
 * (gf2_workers_start), each making its calls as the request's user.
 * smbd's main thread waits for them at most GF2_XL_WAIT_MS
 * (gf2_wait_for).  Memory: at most GF2_XL_MAX lists
 * of at most GF2_XL_LIST_MAX bytes, freed when expired (or, the table
 * full, oldest first); at most GF2_MD_ENTRIES paths of stats and values.
 *
 * Everything here runs in smbd's main thread except the list workers,
 * which touch only their job (path in, buffer and result out).
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "lib/util/dlinklist.h"
#include "gf2_meta.h"
#include "gf2_written.h"

#include <pthread.h>

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

#define GF2_XL_THREADS 8
/*
 * smbd's main loop waits for a batch: at most GF2_XL_BATCH lists, and no
 * job is started after GF2_XL_BATCH_MS (the first always is).  What is
 * left is asked by the next batch, which smbd's next entry starts.
 */
#define GF2_XL_BATCH 32
#define GF2_XL_BATCH_MS 10
/* and waits for the calls started at most this long (then asks itself) */
#define GF2_XL_WAIT_MS 2000
#define GF2_XL_MAX 1024
#define GF2_XL_LIST_MAX 65536
#define GF2_XL_VALUES 3

struct gf2_xl_entry {
	struct gf2_xl_entry *prev, *next;
	const struct gf2_meta_id *ns;	/* volume and identity */
	char *path;
	bool nofollow;
	bool not_link;		/* listed as no symlink: follow or not alike */
	struct timespec at;
	ssize_t len;
	char *list;
};

static struct gf2_xl_entry *gf2_xl_cache;
static unsigned gf2_xl_count;

/* The stats and values of the process: same age bound as the lists. */
#define GF2_MD_ENTRIES 4096

static struct gf2_md_cache *gf2_md;

/*
 * Search permission on directories, as Gluster answered an access(X_OK)
 * of the caller (the glue asks it before every lookup: gf2_lookup).
 * Kept in a cache of its own, per volume and identity like the rest,
 * for at most GF2_META_TTL_MS whatever the volume's upcalls (a mode or
 * ACL change comes with an upcall only for names some client's md-cache
 * registered), dropped with what is kept of the directory on every
 * change this process makes to it, and wholly on every upcall.  The
 * answer is kept as the value of GF2_SEARCH_NAME: present means may
 * search, absent may not.
 */
#define GF2_SEARCH_ENTRIES 1024
#define GF2_SEARCH_NAME "search"

static struct gf2_md_cache *gf2_search;

/*
 * Identities.  What Gluster answered one user is not what it answers
 * another: a lookup inside a directory the second user may not search
 * fails on the bricks, an xattr may be unreadable.  So everything is
 * kept per volume and identity (uid, gid and supplementary groups of
 * the calling thread, which smbd sets for every request): the key
 * space (ns) of the pure cache and of the lists is one of these
 * records.  A change drops what is kept of the path under every
 * identity.  At most GF2_META_IDS identities per process, the least
 * recently used going first with what was kept under it.
 */
#define GF2_META_IDS 64

struct gf2_meta_id {
	struct gf2_meta_id *prev, *next;	/* most recently used first */
	glfs_t *fs;
	struct gf2_ident as;	/* groups: a talloc child of this record */
};

static struct gf2_meta_id *gf2_meta_ids;
static unsigned gf2_meta_nids;

static void gf2_xl_drop_ns(const struct gf2_meta_id *id);

static void gf2_meta_id_free(struct gf2_meta_id *id)
{
	gf2_md_drop_ns(gf2_md, id);
	gf2_md_drop_ns(gf2_search, id);
	gf2_xl_drop_ns(id);
	DLIST_REMOVE(gf2_meta_ids, id);
	gf2_meta_nids -= 1;
	TALLOC_FREE(id);
}

/*
 * The key space of fs for the identity smbd holds now (the request's);
 * made if make (NULL: none yet, or no memory).
 */
static struct gf2_meta_id *gf2_meta_id(glfs_t *fs, bool make)
{
	struct gf2_meta_id *id = NULL;
	struct gf2_ident now;

	if (!gf2_ident_now(&now)) {
		return NULL;
	}
	for (id = gf2_meta_ids; id != NULL; id = id->next) {
		if (id->fs == fs && gf2_ident_equal(&id->as, &now)) {
			break;
		}
	}
	if (id != NULL) {
		if (id != gf2_meta_ids) {
			DLIST_PROMOTE(gf2_meta_ids, id);
		}
		return id;
	}
	if (!make) {
		return NULL;
	}
	while (gf2_meta_nids >= GF2_META_IDS) {
		gf2_meta_id_free(DLIST_TAIL(gf2_meta_ids));
	}
	id = talloc_zero(NULL, struct gf2_meta_id);
	if (id == NULL) {
		return NULL;
	}
	if (!gf2_ident_copy(id, &id->as, &now)) {
		TALLOC_FREE(id);
		return NULL;
	}
	id->fs = fs;
	DLIST_ADD(gf2_meta_ids, id);
	gf2_meta_nids += 1;
	return id;
}

/*
 * How long kept stats and values are served: GF2_META_TTL_MS, or longer
 * on volumes whose changes Gluster announces (gf2_meta_volume_ttl).  Per
 * process: the shortest any tree connect asked for.  Lists are served
 * GF2_META_TTL_MS at most, upcalls or not: Gluster announces an xattr
 * change only for the names some client's md-cache registered, so a
 * user.* attribute set or removed elsewhere comes with no upcall.
 */
static uint64_t gf2_meta_ttl = GF2_META_TTL_MS;
static bool gf2_meta_ttl_set;

static void gf2_meta_set_ttl_ms(uint64_t ms)
{
	if (!gf2_meta_ttl_set || ms < gf2_meta_ttl) {
		gf2_meta_ttl = ms;
		gf2_meta_ttl_set = true;
	}
	if (gf2_md != NULL) {
		gf2_md_set_max_age(gf2_md, gf2_meta_ttl * 1000000ULL);
	}
}

/*
 * With upcalls Gluster announces every change another client makes to
 * what this client has looked at, and the upcall drops what is kept of
 * it: kept metadata may then live as long as md-cache keeps its own (at
 * most GF2_META_TTL_UPCALL_MAX_MS, in case an announcement is lost).
 * Without them, GF2_META_TTL_MS, md-cache's default.
 */
void gf2_meta_volume_ttl(const struct gf2_volume *vol)
{
	if (vol->md_invalidation && vol->upcalls) {
		gf2_meta_set_ttl_ms(MAX(GF2_META_TTL_MS,
					MIN((uint64_t)vol->md_timeout * 1000,
					    GF2_META_TTL_UPCALL_MAX_MS)));
	} else {
		gf2_meta_set_ttl_ms(GF2_META_TTL_MS);
	}
}

struct gf2_md_cache *gf2_meta_cache(void)
{
	if (gf2_md == NULL) {
		gf2_md = gf2_md_new(NULL, GF2_MD_ENTRIES,
				    gf2_meta_ttl * 1000000ULL);
	}
	return gf2_md;
}

/* An upcall: Gluster says ino changed (all: some inode, unknown). */
void gf2_meta_invalidate_inode(uint64_t ino, bool all)
{
	/* lists and search answers are kept by path: any may be touched */
	gf2_meta_drop_lists();
	gf2_md_clear(gf2_search);
	if (all) {
		gf2_md_clear(gf2_md);
		return;
	}
	gf2_md_drop_ino(gf2_md, ino);
}

static void gf2_xl_drop(struct gf2_xl_entry *e)
{
	DLIST_REMOVE(gf2_xl_cache, e);
	gf2_xl_count -= 1;
	TALLOC_FREE(e);
}

/*
 * The volume of fs is released (its last tree connect is gone): drop
 * everything kept of it, since another volume's glfs instance may later
 * be allocated at the same address.
 */
void gf2_meta_forget_volume(glfs_t *fs)
{
	struct gf2_meta_id *id = NULL;
	struct gf2_meta_id *next = NULL;

	for (id = gf2_meta_ids; id != NULL; id = next) {
		next = id->next;
		if (id->fs == fs) {
			gf2_meta_id_free(id);
		}
	}
}

/*
 * How far this process's writes reached: smbd's main thread only.  Zero
 * (a static's start) is gf2_written_init's empty table.
 */
static struct gf2_written gf2_written_here;

void gf2_meta_written(uint64_t ino, uint64_t end)
{
	gf2_written_note(&gf2_written_here, ino, end);
}

void gf2_meta_resized(uint64_t ino)
{
	gf2_written_forget(&gf2_written_here, ino);
}

/*
 * st was just read through fd.  A regular file smaller than this
 * process's own acknowledged writes made it can be md-cache answering a
 * write's reply stat older than a later write's (gf2_written.h): a read
 * of the last byte written goes to the bricks, and its reply's stat
 * replaces md-cache's; then st is read again.  Still smaller: the file
 * did shrink since (another client truncated it), or fd cannot read (a
 * handle opened for writing only); the end is forgotten either way, and
 * st stands.
 */
void gf2_meta_check_size(glfs_fd_t *fd, struct stat *st)
{
	uint64_t end;
	struct stat again;
	char byte;

	if (!S_ISREG(st->st_mode)) {
		return;
	}
	end = gf2_written_end(&gf2_written_here, (uint64_t)st->st_ino);
	if ((uint64_t)st->st_size >= end) {
		return;
	}
	DBG_INFO("size %jd of inode %ju below the %ju this process wrote: "
		 "asking the bricks\n", (intmax_t)st->st_size,
		 (uintmax_t)st->st_ino, (uintmax_t)end);
	if (glfs_pread(fd, &byte, 1, (off_t)(end - 1), 0, NULL) >= 0 &&
	    glfs_fstat(fd, &again) == 0 && again.st_ino == st->st_ino) {
		*st = again;
	}
	if ((uint64_t)st->st_size < end) {
		gf2_written_forget(&gf2_written_here, (uint64_t)st->st_ino);
	}
}

void gf2_meta_write_begin(uint64_t ino)
{
	gf2_md_write_begin(gf2_meta_cache(), ino);
}

void gf2_meta_write_end(uint64_t ino)
{
	gf2_md_write_end(gf2_meta_cache(), ino);
}

static void gf2_xl_drop_ns(const struct gf2_meta_id *id)
{
	struct gf2_xl_entry *e = NULL;
	struct gf2_xl_entry *next = NULL;

	for (e = gf2_xl_cache; e != NULL; e = next) {
		next = e->next;
		if (e->ns == id) {
			gf2_xl_drop(e);
		}
	}
}

void gf2_meta_drop_lists(void)
{
	while (gf2_xl_cache != NULL) {
		gf2_xl_drop(gf2_xl_cache);
	}
}

static void gf2_xl_expire(void)
{
	struct gf2_xl_entry *e = NULL;
	struct gf2_xl_entry *next = NULL;
	struct timespec now;

	clock_gettime_mono(&now);
	for (e = gf2_xl_cache; e != NULL; e = next) {
		next = e->next;
		if (nsec_time_diff(&now, &e->at) / 1000000 >
		    (int64_t)MIN(gf2_meta_ttl, GF2_META_TTL_MS)) {
			gf2_xl_drop(e);
		}
	}
}

/*
 * The kept list of path: returns true and sets *ret (as listxattr would:
 * the length, or -1 with errno ERANGE) if there is one.
 */
bool gf2_meta_get_list(glfs_t *fs, const char *path, bool nofollow,
		       char *list, size_t size, ssize_t *ret)
{
	struct gf2_xl_entry *e = NULL;
	const struct gf2_meta_id *id = gf2_meta_id(fs, false);

	if (id == NULL) {
		return false;
	}
	gf2_xl_expire();
	for (e = gf2_xl_cache; e != NULL; e = e->next) {
		if (e->ns == id && (e->nofollow == nofollow || e->not_link) &&
		    strcmp(e->path, path) == 0) {
			break;
		}
	}
	if (e == NULL) {
		return false;
	}
	if (size == 0) {
		*ret = e->len;
		return true;
	}
	if (size < (size_t)e->len) {
		errno = ERANGE;
		*ret = -1;
		return true;
	}
	/*
	 * Kept until it expires: smbd asks again when a client opens the
	 * entry it has just listed (the EA size of the create response).
	 */
	memcpy(list, e->list, e->len);
	*ret = e->len;
	return true;
}

/*
 * Values fetched with each list, answered later from the metadata cache
 * (gf2_mdcache.c): the DOS attributes smbd reads for every entry of a
 * listing, and the ACL xattrs it reads at every open.  A user.* name
 * missing from the list is known to be absent; the others are asked
 * (md-cache usually has them from readdirplus).
 */
static const char *const gf2_xl_value_names[GF2_XL_VALUES] = {
	"user.DOSATTRIB",
	"system.posix_acl_access",
	"security.NTACL",
};

struct gf2_xl_job {
	char *path;
	bool values;			/* fetch gf2_xl_value_names too */
	char *buf;
	ssize_t ret;
	int err;
	ssize_t vlen[GF2_XL_VALUES];	/* -1 absent, -2 unknown */
	char *vbuf[GF2_XL_VALUES];
	bool done;			/* under the batch's lock */
};

/* name is in the NUL-separated list of len bytes */
static bool gf2_xl_listed(const char *list, ssize_t len, const char *name)
{
	ssize_t i = 0;

	while (i < len) {
		size_t l = strnlen(list + i, len - i);

		if (strncmp(list + i, name, l) == 0 && name[l] == '\0') {
			return true;
		}
		i += l + 1;
	}
	return false;
}

static void gf2_xl_values(glfs_t *fs, bool nofollow, struct gf2_xl_job *j)
{
	size_t v;

	for (v = 0; v < GF2_XL_VALUES; v++) {
		const char *name = gf2_xl_value_names[v];
		bool listed = gf2_xl_listed(j->buf, j->ret, name);
		ssize_t r;

		j->vlen[v] = -2;
		if (!listed && strncmp(name, "user.", 5) == 0) {
			j->vlen[v] = -1;
			continue;
		}
		if (!listed && strncmp(name, "security.", 9) == 0) {
			continue;	/* asked only if smbd wants it */
		}
		if (nofollow) {
			r = glfs_lgetxattr(fs, j->path, name, j->vbuf[v],
					   GF2_MD_VALUE_MAX);
		} else {
			r = glfs_getxattr(fs, j->path, name, j->vbuf[v],
					  GF2_MD_VALUE_MAX);
		}
		if (r >= 0) {
			j->vlen[v] = r;
		} else if (errno == ENODATA || errno == ENOATTR) {
			j->vlen[v] = -1;
		}
	}
}

/*
 * A batch belongs to its gate (gf2_wait.h): the main thread waits for it
 * at most GF2_XL_WAIT_MS, takes what is done, and lets go; a worker
 * still in a Gluster call then frees it when it returns.
 */
struct gf2_xl_batch {
	glfs_t *fs;
	bool nofollow;
	struct gf2_ident as;		/* the request's, for every call */
	struct gf2_xl_job *jobs;
	size_t njobs;
	uint64_t deadline_ns;		/* no job starts after it */
	pthread_mutex_t lock;
	size_t next;			/* guarded by lock */
	bool closed;			/* guarded by lock: no job starts */
};

static void gf2_xl_work(void *arg)
{
	struct gf2_xl_batch *b = arg;

	for (;;) {
		struct gf2_xl_job *j = NULL;

		pthread_mutex_lock(&b->lock);
		if (!b->closed && b->next < b->njobs &&
		    (b->next == 0 || gf2_now_ns() < b->deadline_ns)) {
			j = &b->jobs[b->next++];
		}
		pthread_mutex_unlock(&b->lock);
		if (j == NULL) {
			break;
		}
		if (b->nofollow) {
			j->ret = glfs_llistxattr(b->fs, j->path, j->buf,
						 GF2_XL_LIST_MAX);
		} else {
			j->ret = glfs_listxattr(b->fs, j->path, j->buf,
						GF2_XL_LIST_MAX);
		}
		j->err = j->ret < 0 ? errno : 0;
		if (j->ret >= 0 && j->values) {
			gf2_xl_values(b->fs, b->nofollow, j);
		}
		pthread_mutex_lock(&b->lock);
		j->done = true;
		pthread_mutex_unlock(&b->lock);
	}
}

static void gf2_xl_batch_release(void *arg)
{
	struct gf2_xl_batch *b = arg;

	pthread_mutex_destroy(&b->lock);
	TALLOC_FREE(b);
}

void gf2_meta_fetch_lists(glfs_t *fs, const char *const *paths,
		     const bool *values, size_t n, bool nofollow)
{
	struct gf2_xl_batch *b = NULL;
	struct gf2_wait *gate = NULL;
	struct gf2_md_cache *md = gf2_meta_cache();
	const struct gf2_meta_id *id = NULL;
	struct gf2_ident now;
	uint64_t start = gf2_now_ns();
	uint64_t at;
	size_t asked = n;
	size_t started;
	size_t ndone = 0;
	size_t i;
	size_t v;
	bool *done = NULL;

	if (n == 0) {
		return;
	}
	n = MIN(n, GF2_XL_BATCH);
	id = gf2_meta_id(fs, true);
	if (id == NULL) {
		return;
	}
	gf2_xl_expire();
	b = talloc_zero(NULL, struct gf2_xl_batch);
	if (b == NULL) {
		return;
	}
	b->fs = fs;
	b->nofollow = nofollow;
	b->jobs = talloc_zero_array(b, struct gf2_xl_job, n);
	if (b->jobs == NULL || !gf2_ident_now(&now) ||
	    !gf2_ident_copy(b, &b->as, &now)) {
		TALLOC_FREE(b);
		return;
	}
	for (i = 0; i < n; i++) {
		struct gf2_xl_job *j = &b->jobs[i];

		j->path = talloc_strdup(b->jobs, paths[i]);
		j->ret = -1;
		j->err = EAGAIN;		/* not done */
		j->buf = talloc_size(b->jobs, GF2_XL_LIST_MAX);
		if (j->path == NULL || j->buf == NULL) {
			TALLOC_FREE(b);
			return;
		}
		j->values = values != NULL && values[i] && md != NULL;
		for (v = 0; j->values && v < GF2_XL_VALUES; v++) {
			j->vbuf[v] = talloc_size(b->jobs, GF2_MD_VALUE_MAX);
			if (j->vbuf[v] == NULL) {
				TALLOC_FREE(b);
				return;
			}
		}
	}
	b->njobs = n;
	b->deadline_ns = start + GF2_XL_BATCH_MS * 1000000ULL;
	pthread_mutex_init(&b->lock, NULL);
	gate = gf2_wait_new(gf2_xl_batch_release, b);
	if (gate == NULL) {
		pthread_mutex_destroy(&b->lock);
		TALLOC_FREE(b);
		return;
	}
	done = talloc_zero_array(talloc_tos(), bool, n);
	at = gf2_now_ns();
	started = gf2_workers_start(gate, &b->as, MIN(n, GF2_XL_THREADS),
				    gf2_xl_work, b);
	if (started > 0 && gf2_wait_for(gate, GF2_XL_WAIT_MS) != 0) {
		DBG_NOTICE("listing xattrs: Gluster has not answered in %d "
			   "ms; the lists not fetched are asked one by one\n",
			   GF2_XL_WAIT_MS);
	}
	pthread_mutex_lock(&b->lock);
	b->closed = true;
	for (i = 0; i < n && done != NULL; i++) {
		done[i] = b->jobs[i].done;
		ndone += done[i] ? 1 : 0;
	}
	pthread_mutex_unlock(&b->lock);
	DBG_INFO("%zu of %zu lists fetched, main loop held %" PRIu64 " us\n",
		 ndone, asked, (gf2_now_ns() - start) / 1000);

	/* a job done is never touched by a worker again */
	for (i = 0; i < n && done != NULL; i++) {
		struct gf2_xl_job *j = &b->jobs[i];
		struct gf2_xl_entry *e = NULL;

		if (!done[i] || j->ret < 0) {
			continue;	/* asked again, directly */
		}
		/* the values count from when they were asked for */
		for (v = 0; j->values && v < GF2_XL_VALUES; v++) {
			if (j->vlen[v] >= -1) {
				gf2_md_put_xattr(md, id, j->path,
						 gf2_xl_value_names[v],
						 j->vbuf[v], j->vlen[v], at);
			}
		}
		while (gf2_xl_count >= GF2_XL_MAX) {
			gf2_xl_drop(gf2_xl_cache);	/* oldest first */
		}
		e = talloc_zero(NULL, struct gf2_xl_entry);
		if (e == NULL) {
			continue;
		}
		e->path = talloc_strdup(e, j->path);
		e->list = talloc_memdup(e, j->buf, MAX(j->ret, 1));
		if (e->path == NULL || e->list == NULL) {
			TALLOC_FREE(e);
			continue;
		}
		e->ns = id;
		e->len = j->ret;
		e->nofollow = nofollow;
		e->not_link = values != NULL && values[i];
		clock_gettime_mono(&e->at);
		DLIST_ADD_END(gf2_xl_cache, e);
		gf2_xl_count += 1;
	}
	TALLOC_FREE(done);
	gf2_wait_put(gate);	/* frees b now, or when the last worker ends */
}

/* Kept stats and values: the rules of the comment at the top. */

void gf2_meta_changed(glfs_t *fs, const char *path)
{
	struct gf2_meta_id *id = NULL;

	if (path == NULL) {
		return;
	}
	for (id = gf2_meta_ids; id != NULL; id = id->next) {
		if (id->fs == fs) {
			gf2_md_changed(gf2_md, id, path);
			gf2_md_changed(gf2_search, id, path);
		}
	}
}

void gf2_meta_changed_tree(glfs_t *fs, const char *path)
{
	struct gf2_meta_id *id = NULL;

	if (path == NULL) {
		return;
	}
	for (id = gf2_meta_ids; id != NULL; id = id->next) {
		if (id->fs == fs) {
			gf2_md_changed_tree(gf2_md, id, path);
			gf2_md_changed_tree(gf2_search, id, path);
		}
	}
}

bool gf2_meta_any(void)
{
	struct gf2_md_cache *md = gf2_meta_cache();

	return md != NULL && gf2_md_count(md) > 0;
}

/*
 * A file's data or times changed: its kept stat goes, its xattrs stay.
 * marker (may be NULL) is the handle's: the cache's count of kept stats
 * when it last dropped; until a listing keeps a stat again, the
 * handle's later writes need not name a path (gf2_meta_stat_drop_due).
 */
bool gf2_meta_stat_drop_due(const uint64_t *marker)
{
	struct gf2_md_cache *md = gf2_meta_cache();

	if (md == NULL || gf2_md_count(md) == 0) {
		return false;
	}
	return marker == NULL || *marker != gf2_md_stat_puts(md);
}

void gf2_meta_changed_stat(glfs_t *fs, const char *path, uint64_t *marker)
{
	struct gf2_md_cache *md = gf2_meta_cache();
	struct gf2_meta_id *id = NULL;

	if (md == NULL || path == NULL) {
		return;
	}
	for (id = gf2_meta_ids; id != NULL; id = id->next) {
		if (id->fs == fs) {
			gf2_md_changed_stat(md, id, path);
		}
	}
	if (marker != NULL) {
		*marker = gf2_md_stat_puts(md);
	}
}

bool gf2_meta_kept_name(const char *name)
{
	return strcmp(name, "user.DOSATTRIB") == 0 ||
	       strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0 ||
	       strcmp(name, "security.NTACL") == 0;
}

void gf2_meta_keep_xattr(glfs_t *fs, const char *path, bool is_link,
			 const char *name, const void *value, size_t size,
			 ssize_t ret, int err, uint64_t at)
{
	struct gf2_md_cache *md = gf2_meta_cache();

	const struct gf2_meta_id *id = NULL;

	/* paths are kept as followed: never a symlink's own xattrs */
	if (md == NULL || path == NULL || !gf2_meta_kept_name(name) ||
	    is_link) {
		return;
	}
	id = gf2_meta_id(fs, true);
	if (id == NULL) {
		return;
	}
	if (ret >= 0 && size > 0) {
		gf2_md_put_xattr(md, id, path, name, value, ret, at);
	} else if (ret == -1 && (err == ENODATA || err == ENOATTR)) {
		gf2_md_put_xattr(md, id, path, name, NULL, -1, at);
	}
}

bool gf2_meta_get_xattr(glfs_t *fs, const char *path, const char *name,
			void *value, size_t size, ssize_t *ret)
{
	struct gf2_md_cache *md = gf2_meta_cache();
	const struct gf2_meta_id *id = NULL;
	bool found;
	int err = 0;

	if (md == NULL) {
		return false;
	}
	id = gf2_meta_id(fs, false);
	if (id == NULL) {
		return false;
	}
	found = gf2_md_get_xattr(md, id, path, name, gf2_now_ns(), value,
				 size, ret, &err);
	if (found && *ret == -1) {
		errno = err;
	}
	return found;
}

/*
 * path was just created by this process (O_CREAT|O_EXCL, mkdir): it has
 * no DOS attributes and no NT ACL yet, and no POSIX ACL either when its
 * directory is known to have no default ACL (the only source of one).
 */
void gf2_meta_created(glfs_t *fs, const char *path, bool is_dir,
		      uint64_t at)
{
	struct gf2_md_cache *md = gf2_meta_cache();
	const char *slash = strrchr(path, '/');
	const struct gf2_meta_id *id = NULL;
	char *parent = NULL;
	ssize_t ret = 0;
	int err = 0;

	if (md == NULL || slash == NULL) {
		return;
	}
	id = gf2_meta_id(fs, true);
	if (id == NULL) {
		return;
	}
	gf2_md_put_xattr(md, id, path, "user.DOSATTRIB", NULL, -1, at);
	gf2_md_put_xattr(md, id, path, "security.NTACL", NULL, -1, at);
	parent = talloc_strndup(talloc_tos(), path,
				slash == path ? 1 : (size_t)(slash - path));
	if (parent == NULL) {
		return;
	}
	if (gf2_md_get_xattr(md, id, parent, "system.posix_acl_default",
			     gf2_now_ns(), NULL, 0, &ret, &err) &&
	    ret == -1 && err == ENODATA) {
		gf2_md_put_xattr(md, id, path, "system.posix_acl_access",
				 NULL, -1, at);
		if (is_dir) {
			gf2_md_put_xattr(md, id, path,
					 "system.posix_acl_default", NULL, -1,
					 at);
		}
	}
	TALLOC_FREE(parent);
}

/* kept stats are never symlinks: lstat and stat agree */
bool gf2_meta_get_stat(glfs_t *fs, const char *path, struct stat *st)
{
	struct gf2_md_cache *md = gf2_meta_cache();
	const struct gf2_meta_id *id = NULL;

	if (md == NULL || gf2_md_count(md) == 0) {
		return false;
	}
	id = gf2_meta_id(fs, false);
	return id != NULL &&
	       gf2_md_get_stat(md, id, path, gf2_now_ns(), st);
}

/* Keep the stat readdirplus gave for an entry (not "." or ".."). */
void gf2_meta_keep_listed(glfs_t *fs, const char *dir, const char *name,
			  const struct stat *st, uint64_t now)
{
	struct gf2_md_cache *md = gf2_meta_cache();
	const struct gf2_meta_id *id = NULL;
	char path[PATH_MAX];
	int n;

	if (md == NULL || ISDOT(name) || ISDOTDOT(name) ||
	    st->st_ino == 0 || st->st_mode == 0) {
		return;
	}
	n = snprintf(path, sizeof(path), "%s/%s",
		     strcmp(dir, "/") == 0 ? "" : dir, name);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		return;
	}
	id = gf2_meta_id(fs, true);
	if (id != NULL) {
		gf2_md_put_stat(md, id, path, st, now);
	}
}

/* Search permission on directories: see gf2_search above. */

int gf2_meta_get_search(glfs_t *fs, const char *dir)
{
	const struct gf2_meta_id *id = NULL;
	ssize_t ret = 0;
	int err = 0;

	if (gf2_search == NULL || gf2_md_count(gf2_search) == 0) {
		return -1;
	}
	id = gf2_meta_id(fs, false);
	if (id == NULL ||
	    !gf2_md_get_xattr(gf2_search, id, dir, GF2_SEARCH_NAME,
			      gf2_now_ns(), NULL, 0, &ret, &err)) {
		return -1;
	}
	return ret >= 0 ? 1 : 0;
}

void gf2_meta_keep_search(glfs_t *fs, const char *dir, bool allowed,
			  uint64_t at)
{
	const struct gf2_meta_id *id = NULL;

	if (gf2_search == NULL) {
		gf2_search = gf2_md_new(NULL, GF2_SEARCH_ENTRIES,
					GF2_META_TTL_MS * 1000000ULL);
		if (gf2_search == NULL) {
			return;
		}
	}
	id = gf2_meta_id(fs, true);
	if (id == NULL) {
		return;
	}
	gf2_md_put_xattr(gf2_search, id, dir, GF2_SEARCH_NAME,
			 allowed ? "1" : NULL, allowed ? 1 : -1, at);
}
