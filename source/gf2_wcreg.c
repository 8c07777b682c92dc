/*
 * glusterfs2: the write cache's registry across processes (see
 * include/gf2_wcache.h; the queue is gf2_wcache.c, the drain
 * gf2_wcdrain.c).
 *
 * Layer: caches.
 *
 * While a handle has acknowledged bytes not yet on the bricks, an entry
 * (pid, id) for it sits in a tdb in the lock directory, keyed by volume
 * and inode.  An open of the file in another process (gf2_wc_open_check,
 * from openat) finds it, asks for a drain (a time in the record until
 * which the holder caches none of the file's writes) and fails with
 * EAGAIN: smbd takes that for a kernel oplock and retries the open once a
 * second.  An entry names its process by pid and start time, so that a
 * process given the pid of one that crashed is not taken for the holder.
 * smbd runs the whole open again after an oplock or lease break too, so
 * the open that finally succeeds has found no entry after the holder's
 * lease lost its write caching.  Entries of processes that died are
 * dropped by whoever reads them.  A handle's entry is in the tdb before
 * its first byte is acknowledged (if it cannot be added, the write goes to
 * Gluster before it is answered); an entry that cannot be removed once the
 * bytes landed (the tdb refused the change) is removed again every second
 * until it goes, so that a live process never holds other processes'
 * opens of the file for nothing.
 *
 * This file calls neither the queue nor the drain.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "lib/util/dlinklist.h"
#include <tdb.h>
#include "gf2_wcache_int.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/* The name of a file across processes: volume and inode. */
char *gf2_wc_key(TALLOC_CTX *mem_ctx, const char *volname, uint64_t ino)
{
	return talloc_asprintf(mem_ctx, "%s/%" PRIu64, volname, ino);
}

struct gf2_wc_rec_hdr {
	uint64_t drain_until_ms;
	uint32_t n;
	uint32_t pad;
};

struct gf2_wc_rec_ent {
	uint32_t pid;
	uint32_t id;
	uint64_t start;		/* the process's start time, 0: not known */
};

#define GF2_WC_REC_MAX 64

struct gf2_wc_rec {
	struct gf2_wc_rec_hdr h;
	struct gf2_wc_rec_ent e[GF2_WC_REC_MAX];
};

static struct tdb_context *gf2_wc_tdb;
static pid_t gf2_wc_tdb_pid;

struct tdb_context *gf2_wc_db(void)
{
	static bool gf2_wc_tdb_logged;
	char *path = NULL;
	int err;

	if (gf2_wc_tdb != NULL && gf2_wc_tdb_pid == getpid()) {
		return gf2_wc_tdb;
	}
	/* a forked child reopens: tdb locks are per process */
	gf2_wc_tdb = NULL;
	path = lock_path(talloc_tos(), "glusterfs2_wcache.tdb");
	if (path == NULL) {
		return NULL;
	}
	/* the lock directory is root's; the descriptor serves every user */
	become_root();
	gf2_wc_tdb = tdb_open(path, 0, TDB_DEFAULT, O_RDWR | O_CREAT, 0600);
	err = errno;
	unbecome_root();
	if (gf2_wc_tdb == NULL && !gf2_wc_tdb_logged) {
		DBG_ERR("cannot open %s: %s; writes are not cached\n", path,
			strerror(err));
		gf2_wc_tdb_logged = true;
	}
	gf2_wc_tdb_pid = getpid();
	TALLOC_FREE(path);
	return gf2_wc_tdb;
}

static TDB_DATA gf2_wc_tkey(const char *key)
{
	return (TDB_DATA) {
		.dptr = discard_const_p(uint8_t, key), .dsize = strlen(key),
	};
}

static void gf2_wc_rec_read(struct tdb_context *db, TDB_DATA k,
			    struct gf2_wc_rec *r)
{
	TDB_DATA d = tdb_fetch(db, k);

	ZERO_STRUCTP(r);
	if (d.dptr != NULL && d.dsize >= sizeof(r->h) &&
	    d.dsize <= sizeof(*r)) {
		memcpy(r, d.dptr, d.dsize);
		r->h.n = MIN(r->h.n, (d.dsize - sizeof(r->h)) /
			     sizeof(r->e[0]));
	}
	SAFE_FREE(d.dptr);
}

/* false: the tdb kept what it held. */
static bool gf2_wc_rec_write(struct tdb_context *db, TDB_DATA k,
			     const struct gf2_wc_rec *r)
{
	TDB_DATA d = {
		.dptr = discard_const_p(uint8_t, r),
		.dsize = sizeof(r->h) + r->h.n * sizeof(r->e[0]),
	};

	if (r->h.n == 0 && r->h.drain_until_ms <= gf2_now_ms()) {
		if (tdb_delete(db, k) != 0 && tdb_exists(db, k)) {
			DBG_WARNING("tdb_delete: %s\n", tdb_errorstr(db));
			return false;
		}
		return true;
	}
	if (tdb_store(db, k, d, TDB_REPLACE) != 0) {
		DBG_WARNING("tdb_store: %s\n", tdb_errorstr(db));
		return false;
	}
	return true;
}

/*
 * When process pid started (clock ticks after boot, /proc/PID/stat's
 * 22nd field), or 0 if that cannot be read.
 */
static uint64_t gf2_wc_start_time(pid_t pid)
{
	char path[64];
	char buf[1024];
	char *p = NULL;
	char *end = NULL;
	ssize_t n;
	int fd;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		return 0;
	}
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses */
	p = strrchr(buf, ')');
	if (p == NULL) {
		return 0;
	}
	p += 1;
	/* after the name: state is field 3, starttime field 22 */
	for (i = 3; i < 22; i++) {
		p = strchr(p + 1, ' ');
		if (p == NULL) {
			return 0;
		}
	}
	return strtoull(p + 1, &end, 10);
}

/* This process's start time, read once per process. */
static uint64_t gf2_wc_my_start(void)
{
	static pid_t pid;
	static uint64_t start;

	if (pid != getpid()) {
		pid = getpid();
		start = gf2_wc_start_time(pid);
	}
	return start;
}

/*
 * The process that made entry e still runs: its pid exists and, where
 * both start times are known, started when the entry says (not a new
 * process that was given the pid of a crashed one).
 */
static bool gf2_wc_holder_alive(const struct gf2_wc_rec_ent *e)
{
	uint64_t start;

	if (kill(e->pid, 0) != 0 && errno == ESRCH) {
		return false;
	}
	if (e->start == 0) {
		return true;
	}
	start = gf2_wc_start_time(e->pid);
	return start == 0 || start == e->start;
}

/*
 * Add (add) or remove the entry (this process, id) of the file key.
 * false: the tdb could not be changed.
 */
static bool gf2_wc_rec_edit(const char *key, uint32_t id, bool add)
{
	struct tdb_context *db = gf2_wc_db();
	TDB_DATA k = gf2_wc_tkey(key);
	struct gf2_wc_rec r;
	uint32_t me = getpid();
	uint32_t i, j;
	bool ok;

	if (db == NULL || tdb_chainlock(db, k) != 0) {
		return false;
	}
	gf2_wc_rec_read(db, k, &r);
	for (i = 0, j = 0; i < r.h.n; i++) {
		if (r.e[i].pid == me && r.e[i].id == id) {
			continue;
		}
		r.e[j++] = r.e[i];
	}
	if (!add && j == r.h.n) {
		/* not there */
		tdb_chainunlock(db, k);
		return true;
	}
	r.h.n = j;
	if (add) {
		if (r.h.n >= GF2_WC_REC_MAX) {
			tdb_chainunlock(db, k);
			return false;
		}
		r.e[r.h.n++] = (struct gf2_wc_rec_ent) {
			.pid = me, .id = id, .start = gf2_wc_my_start(),
		};
	}
	ok = gf2_wc_rec_write(db, k, &r);
	tdb_chainunlock(db, k);
	return ok;
}

/*
 * Entries of this process whose removal failed, removed again every
 * second (gf2_wc_stale_fn) until the tdb takes the change.  One element
 * per file and handle whose removal failed: a few bytes each, and none
 * while the tdb works.
 */
struct gf2_wc_stale {
	struct gf2_wc_stale *prev, *next;
	pid_t pid;		/* the process that made it: not its children */
	uint32_t id;
	char *key;
};

static struct gf2_wc_stale *gf2_wc_stales;
static struct tevent_timer *gf2_wc_stale_te;

#define GF2_WC_STALE_RETRY_MS 1000

static void gf2_wc_stale_fn(struct tevent_context *ev,
			    struct tevent_timer *te, struct timeval now,
			    void *private_data);

static void gf2_wc_stale_arm(struct tevent_context *ev)
{
	if (gf2_wc_stale_te != NULL || gf2_wc_stales == NULL) {
		return;
	}
	gf2_wc_stale_te = tevent_add_timer(
		ev, ev, timeval_current_ofs_msec(GF2_WC_STALE_RETRY_MS),
		gf2_wc_stale_fn, NULL);
	if (gf2_wc_stale_te == NULL) {
		DBG_ERR("no memory for the registry's retry timer; stale "
			"entries go at the next change of their file\n");
	}
}

static void gf2_wc_stale_drop(const char *key, uint32_t id)
{
	struct gf2_wc_stale *s = NULL;
	struct gf2_wc_stale *next = NULL;

	for (s = gf2_wc_stales; s != NULL; s = next) {
		next = s->next;
		if (s->pid != getpid() ||
		    (s->id == id && strcmp(s->key, key) == 0)) {
			DLIST_REMOVE(gf2_wc_stales, s);
			TALLOC_FREE(s);
		}
	}
}

static void gf2_wc_stale_fn(struct tevent_context *ev,
			    struct tevent_timer *te, struct timeval now,
			    void *private_data)
{
	struct gf2_wc_stale *s = NULL;
	struct gf2_wc_stale *next = NULL;

	TALLOC_FREE(gf2_wc_stale_te);
	for (s = gf2_wc_stales; s != NULL; s = next) {
		next = s->next;
		if (s->pid == getpid() && !gf2_wc_rec_edit(s->key, s->id,
							   false)) {
			continue;
		}
		if (s->pid == getpid()) {
			DBG_NOTICE("%s: this process's registry entry is "
				   "removed\n", s->key);
		}
		DLIST_REMOVE(gf2_wc_stales, s);
		TALLOC_FREE(s);
	}
	gf2_wc_stale_arm(ev);
}

/* The handle holds no acknowledged bytes: its entry goes. */

void gf2_wc_unregister(struct gf2_wc *wc)
{
	struct gf2_wc_stale *s = NULL;

	if (!wc->registered) {
		return;
	}
	wc->registered = false;
	if (gf2_wc_rec_edit(wc->key, wc->id, false)) {
		return;
	}
	DBG_ERR("%s: could not remove this process's entry from the write "
		"cache registry; other processes' opens of the file wait "
		"until it goes (retried every second)\n", wc->key);
	/* process-lifetime list, independent of the handle that goes */
	s = talloc_zero(NULL, struct gf2_wc_stale);
	if (s != NULL) {
		s->key = talloc_strdup(s, wc->key);
	}
	if (s == NULL || s->key == NULL) {
		TALLOC_FREE(s);
		return;
	}
	s->pid = getpid();
	s->id = wc->id;
	DLIST_ADD_END(gf2_wc_stales, s);
	gf2_wc_stale_arm(wc->ev);
}

/*
 * Before the handle's first byte is acknowledged: its entry.  false: it
 * could not be added, and no write may be acknowledged before it lands.
 */
bool gf2_wc_register(struct gf2_wc *wc)
{
	if (wc->registered) {
		return true;
	}
	if (!gf2_wc_rec_edit(wc->key, wc->id, true)) {
		return false;
	}
	gf2_wc_stale_drop(wc->key, wc->id);
	wc->registered = true;
	return true;
}

/* Another process asked for the file to be drained, recently. */
bool gf2_wc_drain_asked(const struct gf2_wc *wc)
{
	struct tdb_context *db = gf2_wc_db();
	struct gf2_wc_rec r;

	if (db == NULL) {
		return true;
	}
	gf2_wc_rec_read(db, gf2_wc_tkey(wc->key), &r);
	return r.h.drain_until_ms > gf2_now_ms();
}

/*
 * Entries of other live processes on the file: ask them for a drain (the
 * record's drain time) and answer EAGAIN; entries of dead processes and
 * of this one are dropped.  0: nobody else holds acknowledged writes.
 */
int gf2_wc_ask_drain(const char *volname, uint64_t ino)
{
	struct tdb_context *db = NULL;
	struct gf2_wc_rec r;
	uint32_t me = getpid();
	uint32_t i, j;
	char *key = NULL;
	TDB_DATA k;
	int ret = 0;

	db = gf2_wc_db();
	if (db == NULL) {
		return 0;
	}
	key = gf2_wc_key(talloc_tos(), volname, ino);
	if (key == NULL) {
		return 0;
	}
	k = gf2_wc_tkey(key);
	if (tdb_chainlock(db, k) != 0) {
		TALLOC_FREE(key);
		return 0;
	}
	gf2_wc_rec_read(db, k, &r);
	if (r.h.n == 0) {
		tdb_chainunlock(db, k);
		TALLOC_FREE(key);
		return 0;
	}
	for (i = 0, j = 0; i < r.h.n; i++) {
		if (r.e[i].pid == me || !gf2_wc_holder_alive(&r.e[i])) {
			continue;
		}
		r.e[j++] = r.e[i];
	}
	r.h.n = j;
	if (j > 0) {
		r.h.drain_until_ms = gf2_now_ms() + GF2_WC_DRAIN_HOLD_MS;
		ret = EAGAIN;
		DBG_INFO("%s: another process holds acknowledged writes; "
			 "the open waits for them\n", key);
	}
	gf2_wc_rec_write(db, k, &r);
	tdb_chainunlock(db, k);
	TALLOC_FREE(key);
	return ret;
}
