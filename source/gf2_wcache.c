/*
 * glusterfs2: the write cache (see include/gf2_wcache.h).
 *
 * Layer: caches.
 *
 * The rules (what is gathered, when a gather goes, the latched error) are
 * gf2_wqueue.c's; this file holds the buffers and the calls.
 *
 *   client WRITE --> gf2_wc_write_send --> waiters (FIFO) --> gf2_wc_kick
 *        |                                                       |
 *        '<-- acknowledged once copied into the gather <---------'
 *   gather --gf2_io_submit--> Gluster --thread_fn: the call's gate opens
 *                                   '--done_fn in the main loop: land
 *
 * Landing a call (gf2_wc_land) gives its memory back, latches its error
 * and tells prefetch the change is on the bricks.  It happens in the main
 * loop, either when the bridge delivers the completion (done_fn) or
 * earlier, when a synchronous drain (close, truncate, stat, a break...)
 * waits for the call's gate (gf2_wait.h, at most max_wait_ms) until
 * Gluster's thread has marked the call answered; the later done_fn then
 * only frees the call.  glfs_pwrite_async copies the data before it
 * returns, so a gather's buffer is freed as soon as it is sent; its
 * capacity stays counted in the shared budget until it lands.
 *
 * Every call is made as the user of the requests it serves, whatever
 * smbd's main thread holds when it goes (a completion, another user's
 * request or open that drains): a waiter keeps its request's identity,
 * and a gather the identity of its writes, which it holds only of one
 * user (a write of another waits for the gather to go).
 *
 * Across processes: while a handle has acknowledged bytes not yet on the
 * bricks, an entry (pid, id) for it sits in a tdb in the lock directory,
 * keyed by volume and inode.  An open of the file in another process
 * (gf2_wc_open_check, from openat) finds it, asks for a drain (a time in
 * the record until which the holder caches none of the file's writes) and
 * fails with EAGAIN: smbd takes that for a kernel oplock and retries the
 * open once a second.  An entry names its process by pid and start time,
 * so that a process given the pid of one that crashed is not taken for
 * the holder.  smbd runs the whole open again after an oplock or
 * lease break too, so the open that finally succeeds has found no entry
 * after the holder's lease lost its write caching.  Entries of processes
 * that died are dropped by whoever reads them.  A handle's entry is in
 * the tdb before its first byte is acknowledged (if it cannot be added,
 * the write goes to Gluster before it is answered); an entry that cannot
 * be removed once the bytes landed (the tdb refused the change) is
 * removed again every second until it goes, so that a live process never
 * holds other processes' opens of the file for nothing.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "lib/util/tevent_unix.h"
#include "lib/util/dlinklist.h"
#include <tdb.h>
#include "gf2_prefetch.h"
#include "gf2_hold.h"
#include "gf2_wcache.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

struct gf2_wc_call {
	struct gf2_wc *wc;	/* NULL once the cache went (orphan) */
	unsigned slot;
	struct gf2_wait *gate;	/* the write out until Gluster answers */
	bool landed;
};

struct gf2_wc_waiter;

struct gf2_wc {
	struct gf2_wc *prev, *next;	/* gf2_wcs */
	struct tevent_context *ev;
	struct gf2_fh *fh;
	struct gf2_stats *st;
	char *key;
	uint32_t id;
	bool registered;	/* an entry in the tdb */
	bool busy;		/* counted in gf2_wc_busy */
	uint32_t max_wait_ms;	/* a blocking wait for a call, at most */
	bool stalled;		/* a wait gave up; nothing landed since */
	struct gf2_wq q;
	uint8_t *gbuf;		/* the gather's buffer, q.gather.cap bytes */
	struct gf2_ident gather_as;	/* its writes' user (groups: gbuf's) */
	struct gf2_wc_call *calls[GF2_WQ_MAX_INFLIGHT];
	unsigned gather_ends;	/* end_fn calls owed for the gather */
	unsigned slot_ends[GF2_WQ_MAX_INFLIGHT];
	void (*end_fn)(void *arg);
	void *end_arg;
	struct gf2_wc_waiter *waiters;
	struct tevent_immediate *im;
	/*
	 * Its handle closed with bytes still queued (gf2_wc_close): the
	 * cache owns itself, a user of fh and a call's hold on fh's volume,
	 * and frees itself from end_im once everything landed.
	 */
	bool detached;
	struct tevent_immediate *end_im;
};

static struct gf2_wc *gf2_wcs;
static unsigned gf2_wc_busy;	/* caches of this process not idle */
static uint32_t gf2_wc_next_id;

/* -- the registry -------------------------------------------------- */

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

static struct tdb_context *gf2_wc_db(void)
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
static void gf2_wc_unregister(struct gf2_wc *wc)
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
static bool gf2_wc_register(struct gf2_wc *wc)
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
static bool gf2_wc_drain_asked(const struct gf2_wc *wc)
{
	struct tdb_context *db = gf2_wc_db();
	struct gf2_wc_rec r;

	if (db == NULL) {
		return true;
	}
	gf2_wc_rec_read(db, gf2_wc_tkey(wc->key), &r);
	return r.h.drain_until_ms > gf2_now_ms();
}

static void gf2_wc_end_im(struct tevent_context *ev,
			  struct tevent_immediate *im, void *private_data);

/*
 * Keep the busy count in step with the queue; the entry goes once
 * nothing is queued or in flight, and a cache whose handle closed goes
 * with it (not inline: this runs inside drains and sends).
 */
static void gf2_wc_track(struct gf2_wc *wc)
{
	bool busy = !gf2_wq_idle(&wc->q);

	if (busy != wc->busy) {
		if (busy) {
			gf2_wc_busy += 1;
		} else {
			gf2_wc_busy -= 1;
		}
		wc->busy = busy;
	}
	if (!busy) {
		gf2_wc_unregister(wc);
		if (wc->detached) {
			tevent_schedule_immediate(wc->end_im, wc->ev,
						  gf2_wc_end_im, wc);
		}
	}
}

/* -- landing calls --------------------------------------------------- */

/* In Gluster's thread, before the completion goes to the main loop. */
static void gf2_wc_thread_fn(struct gf2_io *io)
{
	struct gf2_wc_call *call = io->private_data;

	gf2_wait_done(call->gate);
}

static int gf2_wc_call_destructor(struct gf2_wc_call *call)
{
	gf2_wait_put(call->gate);
	return 0;
}

static void gf2_wc_kick_im(struct tevent_context *ev,
			   struct tevent_immediate *im, void *private_data);

/*
 * Bytes of wc landed: the writes of the file's other handles that wait
 * for them (gf2_wc_behind_other) may go on.  Not inline: this runs inside
 * drains and sends.
 */
static void gf2_wc_wake_others(struct gf2_wc *wc)
{
	struct gf2_wc *o = NULL;

	for (o = gf2_wcs; o != NULL; o = o->next) {
		if (o != wc && o->waiters != NULL &&
		    strcmp(o->key, wc->key) == 0) {
			tevent_schedule_immediate(o->im, o->ev, gf2_wc_kick_im,
						  o);
		}
	}
}

static void gf2_wc_land_slot(struct gf2_wc *wc, unsigned slot, int err)
{
	const struct gf2_wq_ext *x = &wc->q.fly[slot];
	unsigned ends = wc->slot_ends[slot];
	uint64_t cap;

	if (err != 0) {
		DBG_ERR("queued write of %" PRIu64 " bytes at offset %" PRIu64
			" (%u client writes, already acknowledged) failed: "
			"%s; the next write, flush or close of the handle "
			"reports it\n", x->len, x->off, x->writes,
			strerror(err));
		if (wc->st != NULL) {
			wc->st->c.wc_errors += 1;
		}
	}
	wc->stalled = false;
	cap = gf2_wq_done(&wc->q, slot, err);
	gf2_pf_mem_give(cap);
	wc->calls[slot] = NULL;
	wc->slot_ends[slot] = 0;
	while (ends-- > 0) {
		if (wc->end_fn != NULL) {
			wc->end_fn(wc->end_arg);
		}
	}
	if (wc->st != NULL) {
		gf2_stats_changed(wc->st);
	}
	gf2_wc_track(wc);
	gf2_wc_wake_others(wc);
}

static void gf2_wc_land(struct gf2_wc *wc, struct gf2_wc_call *call,
			struct gf2_io *io)
{
	uint64_t len = wc->q.fly[call->slot].len;
	int err = 0;

	if (io->ret < 0) {
		err = io->err != 0 ? io->err : EIO;
	} else if ((uint64_t)io->ret != len) {
		/* gfapi writes all or fails; a short write is not retried */
		err = ENOSPC;
	}
	call->landed = true;
	gf2_wc_land_slot(wc, call->slot, err);
}

static void gf2_wc_kick(struct gf2_wc *wc);

static void gf2_wc_io_done(struct gf2_io *io)
{
	struct gf2_wc_call *call = io->private_data;
	struct gf2_wc *wc = call->wc;

	if (wc != NULL && !call->landed) {
		gf2_wc_land(wc, call, io);
		gf2_wc_kick(wc);
	}
	TALLOC_FREE(io);
}

static void gf2_wc_send(struct gf2_wc *wc)
{
	struct gf2_wc_call *call = NULL;
	struct gf2_io *io = NULL;
	uint64_t off = wc->q.gather.off;
	uint64_t len = wc->q.gather.len;
	unsigned slot;
	int err = ENOMEM;

	slot = gf2_wq_send(&wc->q);
	wc->slot_ends[slot] = wc->gather_ends;
	wc->gather_ends = 0;

	io = gf2_io_new(wc->ev, wc->fh, GF2_IO_WRITE, gf2_wc_io_done, NULL);
	if (io != NULL) {
		call = talloc_zero(io, struct gf2_wc_call);
	}
	if (call != NULL) {
		call->gate = gf2_wait_new(NULL, NULL);
		if (call->gate == NULL) {
			call = NULL;
		} else {
			talloc_set_destructor(call, gf2_wc_call_destructor);
		}
	}
	if (call != NULL) {
		/*
		 * Sent from a completion or another request's drain too:
		 * as the user whose writes the gather holds.
		 */
		bool switched = gf2_ident_enter(&wc->gather_as);

		call->wc = wc;
		call->slot = slot;
		io->private_data = call;
		io->thread_fn = gf2_wc_thread_fn;
		wc->calls[slot] = call;
		gf2_wait_add(call->gate);
		err = gf2_io_submit(io, wc->gbuf, len, off);
		if (switched) {
			gf2_ident_leave();
		}
		if (err != 0) {
			gf2_wait_done(call->gate);	/* never went out */
		}
	}
	TALLOC_FREE(wc->gbuf);
	ZERO_STRUCT(wc->gather_as);
	if (err != 0) {
		wc->calls[slot] = NULL;
		TALLOC_FREE(io);
		gf2_wc_land_slot(wc, slot, err);
		return;
	}
	if (wc->st != NULL) {
		wc->st->c.wc_sends += 1;
	}
}

/*
 * Block until the call in slot i arrives, then land it; 0.  smbd's main
 * thread waits here, so not beyond wc->max_wait_ms: a brick that answers
 * Gluster's pings but not the write would otherwise hold the process
 * until Gluster's frame timeout (30 minutes by default).  ETIMEDOUT: the
 * call is still Gluster's (its completion lands it later), and until
 * something of the queue lands, later waits give up at once.
 */
static int gf2_wc_wait_slot(struct gf2_wc *wc, unsigned i)
{
	struct gf2_wc_call *call = wc->calls[i];
	struct gf2_io *io = talloc_parent(call);
	bool arrived;

	if (wc->stalled) {
		return ETIMEDOUT;
	}
	arrived = gf2_wait_for(call->gate, wc->max_wait_ms) == 0;
	if (!arrived) {
		wc->stalled = true;
		DBG_ERR("%s: a queued write of %" PRIu64 " bytes at offset %"
			PRIu64 " has had no answer from Gluster for %" PRIu32
			" ms (glusterfs2:write cache max wait); the call "
			"waiting for it fails with ETIMEDOUT\n", wc->key,
			wc->q.fly[i].len, wc->q.fly[i].off,
			wc->max_wait_ms);
		return ETIMEDOUT;
	}
	gf2_wc_land(wc, call, io);
	return 0;
}

/*
 * Everything queued onto the bricks, blocking.  The error stays latched.
 * 0, or ETIMEDOUT (gf2_wc_wait_slot).
 */
static int gf2_wc_flush(struct gf2_wc *wc)
{
	unsigned i;
	int err;

	while (!gf2_wq_idle(&wc->q)) {
		if (gf2_wq_should_send(&wc->q, true)) {
			gf2_wc_send(wc);
			continue;
		}
		for (i = 0; i < GF2_WQ_MAX_INFLIGHT; i++) {
			if (wc->calls[i] != NULL) {
				break;
			}
		}
		if (i == GF2_WQ_MAX_INFLIGHT) {
			/* cannot happen: in flight without a call */
			DBG_ERR("write queue out of step\n");
			break;
		}
		err = gf2_wc_wait_slot(wc, i);
		if (err != 0) {
			return err;
		}
	}
	return 0;
}

/* -- requests ------------------------------------------------------- */

enum gf2_wc_wkind {
	GF2_WC_W_WRITE,
	GF2_WC_W_DRAIN,
	GF2_WC_W_SETTLE,	/* a read waits: nothing of the queue kept */
};

struct gf2_wc_waiter {
	struct gf2_wc_waiter *prev, *next;
	struct tevent_req *req;
	struct gf2_wc *wc;
	enum gf2_wc_wkind kind;
	bool may_cache;
	/*
	 * A write owes one call of end_fn (the change bracket its caller
	 * began) until it hands it on: to the gather (gather_ends) or to
	 * the direct write.  Failed, cancelled or freed before: paid here.
	 */
	bool owes_end;
	struct gf2_ident as;	/* the request's user: every call made as it */
	void (*end_fn)(void *arg);
	void *end_arg;
	const uint8_t *data;
	size_t n;
	off_t offset;
	ssize_t ret;
	struct vfs_aio_state aio_state;
};

static void gf2_wc_waiter_end(struct gf2_wc_waiter *w)
{
	if (!w->owes_end) {
		return;
	}
	w->owes_end = false;
	if (w->end_fn != NULL) {
		w->end_fn(w->end_arg);
	}
}

static int gf2_wc_waiter_destructor(struct gf2_wc_waiter *w)
{
	gf2_wc_waiter_end(w);
	if (w->wc != NULL) {
		DLIST_REMOVE(w->wc->waiters, w);
		w->wc = NULL;
	}
	return 0;
}

static void gf2_wc_unpark(struct gf2_wc_waiter *w)
{
	DLIST_REMOVE(w->wc->waiters, w);
	w->wc = NULL;
}

static void gf2_wc_fail(struct gf2_wc_waiter *w, int err)
{
	gf2_wc_unpark(w);
	gf2_wc_waiter_end(w);
	w->aio_state.error = err;
	w->ret = -1;
	tevent_req_error(w->req, err);
}

static void gf2_wc_direct_done(struct tevent_req *subreq);

/*
 * Written directly (no lease, a drain asked, or no memory with nothing
 * queued): the queue is empty, so nothing acknowledged can pass it.
 */
static void gf2_wc_direct(struct gf2_wc_waiter *w)
{
	struct gf2_wc *wc = w->wc;
	struct tevent_req *subreq = NULL;
	bool switched;

	gf2_wc_unpark(w);
	/* served from a completion, too: the request's user, not smbd's */
	switched = gf2_ident_enter(&w->as);
	subreq = gf2_pwrite_send(w, wc->ev, wc->fh, w->data, w->n,
				 w->offset, w->end_fn, w->end_arg);
	if (switched) {
		gf2_ident_leave();
	}
	if (tevent_req_nomem(subreq, w->req)) {
		gf2_wc_waiter_end(w);
		return;
	}
	/* the direct write calls end_fn */
	w->owes_end = false;
	tevent_req_set_callback(subreq, gf2_wc_direct_done, w->req);
}

static void gf2_wc_direct_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(subreq,
							  struct tevent_req);
	struct gf2_wc_waiter *w = tevent_req_data(req, struct gf2_wc_waiter);

	w->ret = gf2_pwrite_recv(subreq, &w->aio_state);
	TALLOC_FREE(subreq);
	if (w->ret < 0) {
		tevent_req_error(req, w->aio_state.error);
		return;
	}
	tevent_req_done(req);
}

static void gf2_wc_fsync_done(struct tevent_req *subreq);

/* The queue is empty: Gluster's fsync now. */
static void gf2_wc_fsync(struct gf2_wc_waiter *w)
{
	struct gf2_wc *wc = w->wc;
	struct tevent_req *subreq = NULL;
	bool switched;

	gf2_wc_unpark(w);
	switched = gf2_ident_enter(&w->as);
	subreq = gf2_fsync_send(w, wc->ev, wc->fh);
	if (switched) {
		gf2_ident_leave();
	}
	if (tevent_req_nomem(subreq, w->req)) {
		return;
	}
	tevent_req_set_callback(subreq, gf2_wc_fsync_done, w->req);
}

static void gf2_wc_fsync_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(subreq,
							  struct tevent_req);
	struct gf2_wc_waiter *w = tevent_req_data(req, struct gf2_wc_waiter);
	int ret = gf2_fsync_recv(subreq, &w->aio_state);

	TALLOC_FREE(subreq);
	if (ret != 0) {
		tevent_req_error(req, w->aio_state.error);
		return;
	}
	tevent_req_done(req);
}

/* Copy a write into the queue.  false: it must wait. */
static bool gf2_wc_queue(struct gf2_wc_waiter *w)
{
	struct gf2_wc *wc = w->wc;
	uint64_t cap = 0;
	enum gf2_wq_place p;

	if (wc->q.gather.used && !gf2_ident_equal(&wc->gather_as, &w->as)) {
		/* a gather goes to Gluster as one user */
		if (!gf2_wq_can_send(&wc->q)) {
			return false;
		}
		gf2_wc_send(wc);
	}
	p = gf2_wq_place(&wc->q, w->offset, w->n, gf2_pf_mem_avail(), &cap);
	switch (p) {
	case GF2_WQ_WAIT:
		if (gf2_wq_can_send(&wc->q)) {
			gf2_wc_send(wc);
		}
		return false;
	case GF2_WQ_THROUGH:
		gf2_wc_direct(w);
		return true;
	case GF2_WQ_NEW:
		if (!gf2_wc_register(wc)) {
			/* no other process could see these bytes queued */
			if (gf2_wq_idle(&wc->q)) {
				gf2_wc_direct(w);
				return true;
			}
			return false;
		}
		if (wc->q.gather.used) {
			gf2_wc_send(wc);
		}
		wc->gbuf = talloc_size(wc, cap);
		if (wc->gbuf != NULL &&
		    !gf2_ident_copy(wc->gbuf, &wc->gather_as, &w->as)) {
			TALLOC_FREE(wc->gbuf);
		}
		if (wc->gbuf == NULL) {
			if (gf2_wq_idle(&wc->q)) {
				gf2_wc_unregister(wc);
				gf2_wc_direct(w);
				return true;
			}
			return false;
		}
		gf2_pf_mem_take(cap);
		gf2_wq_start(&wc->q, w->offset, w->n, cap);
		memcpy(wc->gbuf, w->data, w->n);
		break;
	case GF2_WQ_APPEND:
		memcpy(wc->gbuf + wc->q.gather.len, w->data, w->n);
		gf2_wq_append(&wc->q, w->n);
		break;
	}
	wc->gather_ends += 1;
	w->owes_end = false;
	gf2_wc_track(wc);
	if (wc->st != NULL) {
		wc->st->c.wc_writes += 1;
		wc->st->c.writes += 1;
		wc->st->c.write_bytes += w->n;
	}
	gf2_wc_unpark(w);
	w->ret = w->n;
	tevent_req_done(w->req);
	return true;
}

/*
 * Another handle of the file in this process holds acknowledged bytes
 * that [off, off + len) overlaps: they reach Gluster first, and the write
 * is acknowledged only after them (the order of acknowledgement is the
 * order on the bricks, whatever the handle).  Sends that handle's gather
 * if it may go.  true: the write waits; gf2_wc_wake_others kicks again.
 */
static bool gf2_wc_behind_other(struct gf2_wc *wc, uint64_t off,
				uint64_t len)
{
	struct gf2_wc *o = NULL;
	bool wait = false;

	for (o = gf2_wcs; o != NULL; o = o->next) {
		if (o == wc || strcmp(o->key, wc->key) != 0 ||
		    !gf2_wq_holds(&o->q, off, len)) {
			continue;
		}
		wait = true;
		if (gf2_wq_can_send(&o->q)) {
			gf2_wc_send(o);
		}
	}
	return wait;
}

/* Serve the waiters in order, as far as the queue allows. */
static void gf2_wc_kick(struct gf2_wc *wc)
{
	struct gf2_wc_waiter *w = NULL;
	int err;

	while ((w = wc->waiters) != NULL) {
		if (w->kind == GF2_WC_W_WRITE && w->may_cache) {
			err = gf2_wq_take_error(&wc->q);
			if (err != 0) {
				gf2_wc_fail(w, err);
				continue;
			}
			if (gf2_wc_drain_asked(wc)) {
				w->may_cache = false;
				continue;
			}
			if (gf2_wc_behind_other(wc, w->offset, w->n)) {
				break;
			}
			if (!gf2_wc_queue(w)) {
				break;
			}
			continue;
		}
		if (!gf2_wq_idle(&wc->q)) {
			if (gf2_wq_should_send(&wc->q, true)) {
				gf2_wc_send(wc);
			}
			break;
		}
		if (w->kind == GF2_WC_W_SETTLE) {
			/* the error stays for the next write, FLUSH, close */
			gf2_wc_unpark(w);
			tevent_req_done(w->req);
			continue;
		}
		err = gf2_wq_take_error(&wc->q);
		if (err != 0) {
			gf2_wc_fail(w, err);
			continue;
		}
		if (w->kind == GF2_WC_W_DRAIN) {
			gf2_wc_fsync(w);
			continue;
		}
		if (gf2_wc_behind_other(wc, w->offset, w->n)) {
			break;
		}
		gf2_wc_direct(w);
	}
	if (gf2_wq_should_send(&wc->q, false)) {
		gf2_wc_send(wc);
	}
}

static void gf2_wc_kick_im(struct tevent_context *ev,
			   struct tevent_immediate *im, void *private_data)
{
	gf2_wc_kick(talloc_get_type_abort(private_data, struct gf2_wc));
}

static struct tevent_req *gf2_wc_park(TALLOC_CTX *mem_ctx,
				      struct tevent_context *ev,
				      struct gf2_wc *wc,
				      enum gf2_wc_wkind kind)
{
	struct tevent_req *req = NULL;
	struct gf2_wc_waiter *w = NULL;

	req = tevent_req_create(mem_ctx, &w, struct gf2_wc_waiter);
	if (req == NULL) {
		return NULL;
	}
	/* completions may come from inside a drain: never call back inline */
	tevent_req_defer_callback(req, ev);
	if (!gf2_ident_capture(w, &w->as)) {
		TALLOC_FREE(req);
		return NULL;
	}
	w->req = req;
	w->wc = wc;
	w->kind = kind;
	talloc_set_destructor(w, gf2_wc_waiter_destructor);
	DLIST_ADD_END(wc->waiters, w);
	return req;
}

struct tevent_req *gf2_wc_write_send(TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct gf2_wc *wc, bool may_cache,
				     const void *data, size_t n,
				     off_t offset)
{
	struct tevent_req *req = NULL;
	struct gf2_wc_waiter *w = NULL;

	req = gf2_wc_park(mem_ctx, ev, wc, GF2_WC_W_WRITE);
	if (req == NULL) {
		return NULL;
	}
	w = tevent_req_data(req, struct gf2_wc_waiter);
	w->may_cache = may_cache && n > 0;
	w->owes_end = true;
	w->end_fn = wc->end_fn;
	w->end_arg = wc->end_arg;
	w->data = data;
	w->n = n;
	w->offset = offset;
	gf2_wc_kick(wc);
	return req;
}

ssize_t gf2_wc_write_recv(struct tevent_req *req,
			  struct vfs_aio_state *aio_state)
{
	struct gf2_wc_waiter *w = tevent_req_data(req, struct gf2_wc_waiter);
	ssize_t ret = -1;
	int err;

	if (tevent_req_is_unix_error(req, &err)) {
		aio_state->error = err;
	} else {
		*aio_state = w->aio_state;
		ret = w->ret;
	}
	tevent_req_received(req);
	return ret;
}

struct tevent_req *gf2_wc_fsync_send(TALLOC_CTX *mem_ctx,
				     struct tevent_context *ev,
				     struct gf2_wc *wc)
{
	struct tevent_req *req = gf2_wc_park(mem_ctx, ev, wc,
					     GF2_WC_W_DRAIN);

	if (req != NULL) {
		gf2_wc_kick(wc);
	}
	return req;
}

int gf2_wc_fsync_recv(struct tevent_req *req,
		      struct vfs_aio_state *aio_state)
{
	struct gf2_wc_waiter *w = tevent_req_data(req, struct gf2_wc_waiter);
	int err;

	if (tevent_req_is_unix_error(req, &err)) {
		aio_state->error = err;
		tevent_req_received(req);
		return -1;
	}
	*aio_state = w->aio_state;
	tevent_req_received(req);
	return 0;
}

int gf2_wc_drain_sync(struct gf2_wc *wc)
{
	int err = gf2_wc_flush(wc);

	if (wc->waiters != NULL) {
		tevent_schedule_immediate(wc->im, wc->ev, gf2_wc_kick_im, wc);
	}
	if (err != 0) {
		return err;
	}
	return gf2_wq_take_error(&wc->q);
}

static char *gf2_wc_key(TALLOC_CTX *mem_ctx, const char *volname,
			uint64_t ino)
{
	return talloc_asprintf(mem_ctx, "%s/%" PRIu64, volname, ino);
}

int gf2_wc_drain_file_sync(const char *volname, uint64_t ino)
{
	struct gf2_wc *wc = NULL;
	char *key = NULL;
	int ret = 0;
	int err;

	if (gf2_wc_busy == 0) {
		return 0;
	}
	key = gf2_wc_key(talloc_tos(), volname, ino);
	if (key == NULL) {
		return ENOMEM;
	}
	for (wc = gf2_wcs; wc != NULL; wc = wc->next) {
		if (!gf2_wq_idle(&wc->q) && strcmp(wc->key, key) == 0) {
			err = gf2_wc_flush(wc);
			if (ret == 0) {
				ret = err;
			}
			if (wc->waiters != NULL) {
				tevent_schedule_immediate(wc->im, wc->ev,
							  gf2_wc_kick_im, wc);
			}
		}
	}
	TALLOC_FREE(key);
	return ret;
}

/* A cache of this process on the file (key) with bytes not yet landed. */
static struct gf2_wc *gf2_wc_busy_on(const char *key)
{
	struct gf2_wc *wc = NULL;

	for (wc = gf2_wcs; wc != NULL; wc = wc->next) {
		if (!gf2_wq_idle(&wc->q) && strcmp(wc->key, key) == 0) {
			return wc;
		}
	}
	return NULL;
}

bool gf2_wc_file_busy(const char *volname, uint64_t ino)
{
	char *key = NULL;
	bool busy;

	if (gf2_wc_busy == 0) {
		return false;
	}
	key = gf2_wc_key(talloc_tos(), volname, ino);
	if (key == NULL) {
		return false;
	}
	busy = gf2_wc_busy_on(key) != NULL;
	TALLOC_FREE(key);
	return busy;
}

int gf2_wc_file_error(const char *volname, uint64_t ino)
{
	struct gf2_wc *wc = NULL;
	char *key = NULL;
	int err = 0;

	key = gf2_wc_key(talloc_tos(), volname, ino);
	if (key == NULL) {
		return 0;
	}
	for (wc = gf2_wcs; wc != NULL && err == 0; wc = wc->next) {
		if (strcmp(wc->key, key) == 0) {
			err = wc->q.err;
		}
	}
	TALLOC_FREE(key);
	return err;
}

/*
 * A read waits, without blocking the main loop, for every cache of the
 * file in this process to land what it acknowledged: a settle waiter on
 * each cache busy when the read came, in turn, once.  Queued after the
 * writes acknowledged before the read, it holds back those that come
 * after it until it is served; those it does not wait for, so that a
 * steady writer on another handle cannot hold the read back for ever.
 */
struct gf2_wc_settle_state {
	struct tevent_context *ev;
	char *key;
	uint32_t *ids;		/* the caches busy when the read came */
	unsigned nids;
	unsigned next;		/* ids[next] is the next to wait for */
};

static void gf2_wc_settle_next(struct tevent_req *req);

static void gf2_wc_settle_done(struct tevent_req *subreq)
{
	struct tevent_req *req = tevent_req_callback_data(subreq,
							  struct tevent_req);

	/* served, or the cache went with its handle (drained at close) */
	TALLOC_FREE(subreq);
	gf2_wc_settle_next(req);
}

static void gf2_wc_settle_next(struct tevent_req *req)
{
	struct gf2_wc_settle_state *state = tevent_req_data(
		req, struct gf2_wc_settle_state);
	struct gf2_wc *wc = NULL;
	struct tevent_req *subreq = NULL;

	while (wc == NULL && state->next < state->nids) {
		uint32_t id = state->ids[state->next++];

		for (wc = gf2_wcs; wc != NULL; wc = wc->next) {
			if (wc->id == id && !gf2_wq_idle(&wc->q) &&
			    strcmp(wc->key, state->key) == 0) {
				break;
			}
		}
	}
	if (wc == NULL) {
		tevent_req_done(req);
		return;
	}
	subreq = gf2_wc_park(state, state->ev, wc, GF2_WC_W_SETTLE);
	if (tevent_req_nomem(subreq, req)) {
		return;
	}
	tevent_req_set_callback(subreq, gf2_wc_settle_done, req);
	gf2_wc_kick(wc);
}

struct tevent_req *gf2_wc_settle_send(TALLOC_CTX *mem_ctx,
				      struct tevent_context *ev,
				      const char *volname, uint64_t ino)
{
	struct tevent_req *req = NULL;
	struct gf2_wc_settle_state *state = NULL;
	struct gf2_wc *wc = NULL;
	unsigned n = 0;

	req = tevent_req_create(mem_ctx, &state, struct gf2_wc_settle_state);
	if (req == NULL) {
		return NULL;
	}
	state->ev = ev;
	state->key = gf2_wc_key(state, volname, ino);
	if (tevent_req_nomem(state->key, req)) {
		return tevent_req_post(req, ev);
	}
	for (wc = gf2_wcs; wc != NULL; wc = wc->next) {
		if (!gf2_wq_idle(&wc->q) && strcmp(wc->key, state->key) == 0) {
			n += 1;
		}
	}
	state->ids = talloc_array(state, uint32_t, MAX(n, 1));
	if (tevent_req_nomem(state->ids, req)) {
		return tevent_req_post(req, ev);
	}
	for (wc = gf2_wcs; wc != NULL && state->nids < n; wc = wc->next) {
		if (!gf2_wq_idle(&wc->q) && strcmp(wc->key, state->key) == 0) {
			state->ids[state->nids++] = wc->id;
		}
	}
	gf2_wc_settle_next(req);
	if (!tevent_req_is_in_progress(req)) {
		return tevent_req_post(req, ev);
	}
	return req;
}

int gf2_wc_settle_recv(struct tevent_req *req)
{
	int err;

	if (tevent_req_is_unix_error(req, &err)) {
		tevent_req_received(req);
		return err;
	}
	tevent_req_received(req);
	return 0;
}

int gf2_wc_open_check(const char *volname, uint64_t ino)
{
	struct tdb_context *db = NULL;
	struct gf2_wc_rec r;
	uint32_t me = getpid();
	uint32_t i, j;
	char *key = NULL;
	TDB_DATA k;
	int ret = 0;

	ret = gf2_wc_drain_file_sync(volname, ino);
	if (ret != 0) {
		return ret;
	}
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

/* -- lifetime ------------------------------------------------------- */

static int gf2_wc_destructor(struct gf2_wc *wc)
{
	struct gf2_wc_waiter *w = NULL;
	unsigned i;

	while ((w = wc->waiters) != NULL) {
		gf2_wc_fail(w, EBADF);
	}
	for (i = 0; i < GF2_WQ_MAX_INFLIGHT; i++) {
		if (wc->calls[i] != NULL) {
			/* its completion frees it */
			wc->calls[i]->wc = NULL;
		}
	}
	if (wc->q.reserved > 0) {
		gf2_pf_mem_give(wc->q.reserved);
	}
	if (wc->busy) {
		gf2_wc_busy -= 1;
	}
	gf2_wc_unregister(wc);
	DLIST_REMOVE(gf2_wcs, wc);
	if (wc->detached) {
		struct gf2_volume *vol = wc->fh->vol;

		(void)gf2_fh_close(wc->fh);
		gf2_volume_io_end(vol);
	}
	return 0;
}

static void gf2_wc_end_im(struct tevent_context *ev,
			  struct tevent_immediate *im, void *private_data)
{
	struct gf2_wc *wc = talloc_get_type_abort(private_data, struct gf2_wc);

	if (!gf2_wq_idle(&wc->q)) {
		/* sent again meanwhile: its landing schedules this again */
		return;
	}
	DBG_NOTICE("%s: the writes queued when the handle closed are on the "
		   "bricks\n", wc->key);
	TALLOC_FREE(wc);
}

int gf2_wc_close(struct gf2_wc *wc, void *end_owner)
{
	int err = gf2_wc_drain_sync(wc);

	if (gf2_wq_idle(&wc->q)) {
		TALLOC_FREE(wc);
		return err;
	}
	/*
	 * The wait gave up with acknowledged bytes still queued or out:
	 * they are not thrown away.  The cache outlives its handle, keeps
	 * its registry entry (other processes' opens wait for it), the
	 * glfs_fd and the volume, and sends what is left as its calls land.
	 * Its memory stays counted in the process's budget until then.
	 */
	talloc_steal(NULL, wc);
	if (end_owner != NULL) {
		talloc_steal(wc, end_owner);
	}
	gf2_hold_get(&wc->fh->hold);
	gf2_volume_io_begin(wc->fh->vol);
	wc->detached = true;
	DBG_ERR("%s: closed with %" PRIu64 " acknowledged bytes not yet on "
		"the bricks; they are sent once Gluster answers (the close "
		"fails with %s)\n", wc->key, gf2_wq_queued(&wc->q),
		strerror(err != 0 ? err : ETIMEDOUT));
	return err != 0 ? err : ETIMEDOUT;
}

struct gf2_wc *gf2_wc_new(TALLOC_CTX *mem_ctx, struct tevent_context *ev,
			  struct gf2_fh *fh, struct gf2_stats *st,
			  const char *volname, uint64_t ino,
			  uint32_t max_wait_ms,
			  void (*end_fn)(void *arg), void *end_arg)
{
	struct gf2_wc *wc = talloc_zero(mem_ctx, struct gf2_wc);

	if (wc == NULL) {
		return NULL;
	}
	wc->key = gf2_wc_key(wc, volname, ino);
	wc->im = tevent_create_immediate(wc);
	wc->end_im = tevent_create_immediate(wc);
	if (wc->key == NULL || wc->im == NULL || wc->end_im == NULL ||
	    gf2_wc_db() == NULL) {
		TALLOC_FREE(wc);
		return NULL;
	}
	wc->ev = ev;
	wc->fh = fh;
	wc->st = st;
	wc->id = ++gf2_wc_next_id;
	wc->max_wait_ms = max_wait_ms;
	wc->end_fn = end_fn;
	wc->end_arg = end_arg;
	gf2_wq_init(&wc->q, GF2_WC_MERGE, GF2_WC_INFLIGHT);
	DLIST_ADD(gf2_wcs, wc);
	talloc_set_destructor(wc, gf2_wc_destructor);
	return wc;
}
