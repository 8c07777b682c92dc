/*
 * glusterfs2: Gluster read leases for smbd's POSIX lock checks.
 *
 * Layer: bridge.
 *
 * Unreached: connect answers `glusterfs2:lock check = lease` as getlk,
 * because the bricks drop a client's leases on a disconnect without a
 * recall and gfapi 10.3 does not tell its application
 * (vfs_glusterfs2.c, docs/design.md).  Kept for a gfapi that does.
 *
 * With `glusterfs2:lock check = lease`, a handle opened for reading takes
 * a Gluster read lease (glfs_lease, GLFS_RD_LEASE) on its file.  The
 * bricks' leases translator recalls it before it lets another client take
 * a POSIX lock on the file, write it or truncate it, and holds that call
 * until the lease is given back.  While the lease is held and not
 * recalled, no lock of another Gluster client can have been granted since
 * it was taken (one check of the whole file after the grant covers the
 * time before), so smbd's lock check is answered "not locked" without a
 * round trip.
 *
 * Threads.  The lease is taken, trusted and dropped by smbd's main
 * thread.  The recall arrives on one of gfapi's synctask threads
 * (gf2_upcall.c): it clears the record's trust flag first and only then
 * gives the lease back, on that thread, so a lease is never given back
 * while a check could still read it as trusted (the flag is a sequentially
 * consistent atomic: every check that read it set happened before the
 * recall cleared it, hence before the lease went back and before the
 * other client's call went on).  Giving it back there, not on the main
 * loop, keeps a synchronous call of smbd's own (a rename or unlink, which
 * the bricks treat as conflicting even from the lease's holder) from
 * waiting on itself.  A recall can also arrive while the grant call is
 * still out, before anything is held: the record remembers it and the
 * taker gives the lease back as soon as the grant answers, never
 * trusting it (the decisions are gf2_leasestate.c's, unit-tested).
 * After a recall the next grant waits (the retry backoff), so that the
 * other client's call, or its retry, gets through first.
 *
 * Records are in one list per process under gf2_lease_mu.  The recall
 * thread counts its give-back on the record's gate (gf2_wait.h) while it
 * runs without the mutex (a syncop may resume on another thread); the
 * main thread's drop waits for the gate, at most GF2_LEASE_WAIT_MS,
 * before the handle's glfs_fd may be closed.  A give-back still out then
 * (a brick that does not answer) leaves the record among the departed,
 * freed by the main thread at a later new or drop once it has answered;
 * the recall's glfs_lease holds its own reference on the fd meanwhile.
 *
 * Lease ids.  All of the process's calls carry one lease id (set on the
 * main thread with glfs_setfsleaseid; gfapi sends the calling thread's id
 * with every fop, asynchronous ones included), and every lease is taken
 * under it: smbd's own writes and POSIX locks (its clients' byte-range
 * locks) then do not recall its own read leases.  The id is drawn per
 * process (smbd forks one per client).
 */

#include "includes.h"
#include "gf2_bridge.h"
#include "gf2_leasestate.h"

#include <pthread.h>

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

struct gf2_lease {
	struct gf2_lease *prev, *next;	/* gf2_leases, under gf2_lease_mu */
	glfs_fd_t *fd;
	bool own_fd;		/* fd opened for the lease, closed with it */
	uint64_t ino;
	struct gf2_leasestate st;	/* under gf2_lease_mu (gf2_leasestate.h) */
	struct gf2_wait *gate;	/* give-backs in flight (recall thread) */
	uint64_t retry_at;	/* main thread: no new lease before (ms) */
	uint32_t backoff_ms;	/* main thread */
};

static pthread_mutex_t gf2_lease_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gf2_lease *gf2_leases;
/* dropped while a give-back was still out: main thread only */
static struct gf2_lease *gf2_leases_departed;

static glfs_leaseid_t gf2_lease_id;
static pid_t gf2_lease_id_pid;

static uint64_t gf2_lease_granted;
static uint64_t gf2_lease_refused;
static uint64_t gf2_lease_recalled;	/* atomic */
static bool gf2_lease_logged;

#define GF2_LEASE_RETRY_MIN_MS 1000
#define GF2_LEASE_RETRY_MAX_MS 16000
#define GF2_LEASE_WAIT_MS 2000

static void gf2_lease_finish(struct gf2_lease *l);

/* Main thread: free the departed records whose give-back has answered. */
static void gf2_lease_sweep(void)
{
	struct gf2_lease *l = gf2_leases_departed;

	while (l != NULL) {
		struct gf2_lease *next = l->next;

		if (gf2_wait_pending(l->gate) == 0) {
			DLIST_REMOVE(gf2_leases_departed, l);
			gf2_lease_finish(l);
		}
		l = next;
	}
}

void gf2_lease_use_id(void)
{
	if (gf2_lease_id_pid != getpid()) {
		do {
			generate_random_buffer((uint8_t *)gf2_lease_id,
					       sizeof(gf2_lease_id));
		} while (all_zero((const uint8_t *)gf2_lease_id,
				  sizeof(gf2_lease_id)));
		gf2_lease_id_pid = getpid();
	}
	if (glfs_setfsleaseid(gf2_lease_id) != 0) {
		DBG_ERR("glfs_setfsleaseid: %s\n", strerror(errno));
	}
}

struct gf2_lease *gf2_lease_new(glfs_fd_t *fd, bool own_fd, uint64_t ino)
{
	struct gf2_lease *l = NULL;

	gf2_lease_sweep();
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		return NULL;
	}
	l->gate = gf2_wait_new(NULL, NULL);
	if (l->gate == NULL) {
		free(l);
		return NULL;
	}
	l->fd = fd;
	l->own_fd = own_fd;
	l->ino = ino;
	pthread_mutex_lock(&gf2_lease_mu);
	DLIST_ADD(gf2_leases, l);
	pthread_mutex_unlock(&gf2_lease_mu);
	return l;
}

bool gf2_lease_trusted(const struct gf2_lease *l)
{
	return gf2_ls_trusted(&l->st);
}

static int gf2_lease_call(glfs_fd_t *fd, glfs_lease_cmds_t cmd)
{
	glfs_lease_t lease = {
		.cmd = cmd,
		.lease_type = GLFS_RD_LEASE,
	};

	memcpy(lease.lease_id, gf2_lease_id, sizeof(lease.lease_id));
	return glfs_lease(fd, &lease, NULL, NULL);
}

/* Main thread: give back a lease held but not trusted (or not wanted). */
static void gf2_lease_give_back(struct gf2_lease *l)
{
	bool held;

	pthread_mutex_lock(&gf2_lease_mu);
	held = gf2_ls_drop(&l->st);
	pthread_mutex_unlock(&gf2_lease_mu);
	if (held && gf2_lease_call(l->fd, GLFS_UNLK_LEASE) != 0) {
		DBG_DEBUG("giving back a read lease: %s\n", strerror(errno));
	}
}

bool gf2_lease_due(const struct gf2_lease *l, uint64_t now)
{
	return now >= l->retry_at;
}

static void gf2_lease_later(struct gf2_lease *l, uint64_t now)
{
	l->backoff_ms = l->backoff_ms == 0 ? GF2_LEASE_RETRY_MIN_MS :
			MIN(l->backoff_ms * 2, GF2_LEASE_RETRY_MAX_MS);
	l->retry_at = now + l->backoff_ms;
}

bool gf2_lease_take(struct gf2_lease *l, const char *volname, uint64_t now)
{
	enum gf2_ls_taken taken;
	bool backoff;
	bool ask;
	int ret;
	int err;

	pthread_mutex_lock(&gf2_lease_mu);
	backoff = gf2_ls_backoff(&l->st);
	ask = !backoff && gf2_ls_take_begin(&l->st);
	pthread_mutex_unlock(&gf2_lease_mu);
	if (backoff) {
		/*
		 * Recalled since the last grant: the other client's call
		 * (or its retry, for those the bricks answer EAGAIN) goes
		 * through before the lease is asked for again.
		 */
		gf2_lease_later(l, now);
		return false;
	}
	if (!ask) {
		return true;	/* held */
	}

	ret = gf2_lease_call(l->fd, GLFS_SET_LEASE);
	err = errno;
	pthread_mutex_lock(&gf2_lease_mu);
	taken = gf2_ls_take_end(&l->st, ret == 0);
	pthread_mutex_unlock(&gf2_lease_mu);
	if (taken == GF2_LS_GIVE_BACK) {
		/* recalled before the grant's answer came: not trusted */
		gf2_lease_granted++;
		__atomic_add_fetch(&gf2_lease_recalled, 1, __ATOMIC_RELAXED);
		if (gf2_lease_call(l->fd, GLFS_UNLK_LEASE) != 0) {
			DBG_DEBUG("giving back a read lease recalled while "
				  "it was granted: %s\n", strerror(errno));
		}
		gf2_lease_later(l, now);
		return false;
	}
	if (taken == GF2_LS_REFUSED) {
		gf2_lease_refused++;
		if (!gf2_lease_logged) {
			gf2_lease_logged = true;
			DBG_NOTICE("volume %s: a Gluster read lease was refused "
				   "(%s; is features.leases on, the bricks "
				   "restarted since?  The bricks also refuse "
				   "one on a file this client created and "
				   "holds open, or that another client has "
				   "open for writing): POSIX lock checks ask "
				   "the bricks until one is granted\n",
				   volname, strerror(err));
		} else {
			DBG_DEBUG("volume %s: read lease refused: %s\n",
				  volname, strerror(err));
		}
		gf2_lease_later(l, now);
		return false;
	}
	gf2_lease_granted++;
	return true;
}

bool gf2_lease_trust(struct gf2_lease *l, uint64_t now)
{
	bool ok;

	pthread_mutex_lock(&gf2_lease_mu);
	ok = gf2_ls_trust(&l->st);	/* not recalled since it was granted */
	if (ok) {
		l->backoff_ms = 0;
	}
	pthread_mutex_unlock(&gf2_lease_mu);
	if (!ok) {
		gf2_lease_later(l, now);
	}
	return ok;
}

void gf2_lease_untrust(struct gf2_lease *l, uint64_t now)
{
	gf2_lease_give_back(l);
	gf2_lease_later(l, now);
}

void gf2_lease_free(struct gf2_lease *l)
{
	if (l == NULL) {
		return;
	}
	pthread_mutex_lock(&gf2_lease_mu);
	DLIST_REMOVE(gf2_leases, l);	/* no recall counts on it from now */
	pthread_mutex_unlock(&gf2_lease_mu);
	gf2_lease_sweep();
	if (gf2_wait_for(l->gate, GF2_LEASE_WAIT_MS) != 0) {
		DBG_WARNING("a recalled read lease has not been given back "
			    "after %d ms; the handle closes without waiting "
			    "further\n", GF2_LEASE_WAIT_MS);
		DLIST_ADD(gf2_leases_departed, l);
		return;
	}
	gf2_lease_finish(l);
}

static void gf2_lease_finish(struct gf2_lease *l)
{
	gf2_lease_give_back(l);
	if (l->own_fd) {
		glfs_close(l->fd);
	}
	gf2_wait_put(l->gate);
	free(l);
}

/*
 * gfapi's thread: the bricks recall the leases on inode ino (all: on
 * every file).  Stop trusting them, then give them back.
 */
void gf2_lease_recall(uint64_t ino, bool all)
{
	struct gf2_lease *l = NULL;
	bool again = true;

	while (again) {
		glfs_fd_t *fd = NULL;

		again = false;
		pthread_mutex_lock(&gf2_lease_mu);
		for (l = gf2_leases; l != NULL; l = l->next) {
			if (!all && l->ino != ino) {
				continue;
			}
			if (gf2_ls_recall(&l->st)) {
				gf2_wait_add(l->gate);
				fd = l->fd;
				break;
			}
		}
		pthread_mutex_unlock(&gf2_lease_mu);
		if (fd == NULL) {
			break;
		}
		__atomic_add_fetch(&gf2_lease_recalled, 1, __ATOMIC_RELAXED);
		if (gf2_lease_call(fd, GLFS_UNLK_LEASE) != 0) {
			DBG_DEBUG("giving back a recalled read lease: %s\n",
				  strerror(errno));
		}
		gf2_wait_done(l->gate);	/* l may go once this is done */
		again = true;
	}
}

void gf2_lease_counts(uint64_t *granted, uint64_t *refused,
		      uint64_t *recalled)
{
	*granted = gf2_lease_granted;
	*refused = gf2_lease_refused;
	*recalled = __atomic_load_n(&gf2_lease_recalled, __ATOMIC_RELAXED);
}
