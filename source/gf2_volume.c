/*
 * glusterfs2: one glfs instance per volume per smbd process.
 *
 * Layer: bridge.
 *
 * Every smbd child serves one client; its tree connects to shares on the
 * same volume (and the same volfile servers and log settings) share one
 * glfs_t.  The instance is created by the first tree connect and torn
 * down by the last disconnect, unless Gluster still owns an asynchronous
 * call on it: then the teardown waits for the last completion
 * (gf2_volume_io_end), because glfs_fini with calls in flight would free
 * what their callbacks are about to touch.
 *
 * glfs_fini of GlusterFS 10 takes several seconds (it waits on its own
 * timer and sweeper threads).  Run in smbd's main loop it would hold every
 * tree disconnect for that long, so it runs in a detached reaper thread;
 * the instance is already unlinked and nothing else refers to it.  An
 * atexit handler waits (bounded) for reapers still running, so that the
 * process does not exit under a half-finished glfs_fini.
 */

#include "includes.h"
#include "lib/util/dlinklist.h"
#include "gf2_bridge.h"

#include <pthread.h>

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

static struct gf2_volume *gf2_volumes;

/* Reaper threads still inside glfs_fini: calls of this gate. */
static struct gf2_wait *gf2_reapers;
static bool gf2_reap_atexit;

#define GF2_REAP_EXIT_WAIT_SECS 20

static void *gf2_reaper(void *arg)
{
	glfs_t *fs = arg;

	glfs_fini(fs);
	gf2_wait_done(gf2_reapers);
	return NULL;
}

/*
 * atexit: wait for the reapers, at most GF2_REAP_EXIT_WAIT_SECS.  Logged
 * from here, the process's main thread: the reapers themselves never log
 * (Samba's debug code is not thread-safe).
 */
static void gf2_reap_wait(void)
{
	struct timespec start;
	struct timespec end;
	unsigned waited_for;
	unsigned left;

	if (gf2_reapers == NULL) {
		return;
	}
	clock_gettime_mono(&start);
	waited_for = gf2_wait_pending(gf2_reapers);
	if (waited_for == 0) {
		return;
	}
	gf2_wait_for(gf2_reapers, GF2_REAP_EXIT_WAIT_SECS * 1000);
	left = gf2_wait_pending(gf2_reapers);
	clock_gettime_mono(&end);
	if (left > 0) {
		DBG_WARNING("%u of %u glfs_fini still running after %d s at "
			    "exit: exiting under them\n", left, waited_for,
			    GF2_REAP_EXIT_WAIT_SECS);
		return;
	}
	DBG_NOTICE("waited %.1f s at exit for %u glfs_fini\n",
		   nsec_time_diff(&end, &start) / 1e9, waited_for);
}

/* glfs_fini of an instance nothing refers to any more, in a reaper. */
static void gf2_reap(glfs_t *fs, const char *volname)
{
	pthread_attr_t attr;
	pthread_t tid;
	int ret = ENOMEM;

	if (gf2_reapers == NULL) {
		/* held for the life of the process */
		gf2_reapers = gf2_wait_new(NULL, NULL);
	}
	if (!gf2_reap_atexit) {
		gf2_reap_atexit = (atexit(gf2_reap_wait) == 0);
	}
	if (gf2_reapers != NULL) {
		gf2_wait_add(gf2_reapers);
		ret = pthread_attr_init(&attr);
	}
	if (ret == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ret = pthread_create(&tid, &attr, gf2_reaper, fs);
		pthread_attr_destroy(&attr);
	}
	if (ret != 0) {
		/* No thread: release it here, slowly but surely. */
		if (gf2_reapers != NULL) {
			gf2_wait_done(gf2_reapers);
		}
		if (glfs_fini(fs) != 0) {
			DBG_WARNING("glfs_fini(%s) failed: %s\n", volname,
				    strerror(errno));
		}
	}
}

static void gf2_volume_destroy(struct gf2_volume *vol)
{
	DLIST_REMOVE(gf2_volumes, vol);
	DBG_NOTICE("releasing volume %s\n", vol->volname);
	if (vol->upcalls) {
		/* before glfs_fini, as gfapi asks */
		gf2_upcall_unregister(vol);
	}

	gf2_reap(vol->fs, vol->volname);
	vol->fs = NULL;
	TALLOC_FREE(vol);
}

/* The client volfile the instance received, or NULL. */
static char *gf2_volfile(TALLOC_CTX *mem_ctx, glfs_t *fs)
{
	char *buf = NULL;
	ssize_t len = glfs_get_volfile(fs, NULL, 0);

	if (len >= 0) {
		return NULL;	/* no volfile to look at */
	}
	buf = talloc_zero_size(mem_ctx, -len + 1);
	if (buf == NULL) {
		return NULL;
	}
	len = glfs_get_volfile(fs, buf, -len);
	if (len <= 0) {
		TALLOC_FREE(buf);
	}
	return buf;
}

/*
 * Read from the client volfile gfapi received what Gluster's "samba"
 * option group turns on (md-cache held coherent by upcalls, the
 * negative-lookup cache, md-cache's timeout), for the caches above to
 * decide on, and warn once per volume instance when it is missing.
 */
static void gf2_volume_check_options(struct gf2_volume *vol)
{
	char *buf = NULL;

	vol->md_timeout = 1;
	buf = gf2_volfile(NULL, vol->fs);
	if (buf == NULL) {
		return;
	}
	gf2_volfile_samba_options(buf, &vol->md_invalidation, &vol->nl_cache,
				  &vol->md_timeout);
	TALLOC_FREE(buf);
	if (!vol->md_invalidation || !vol->nl_cache) {
		DBG_WARNING("volume %s lacks Gluster's 'samba' option group "
			    "(%s%s%s): listings and small files are slower, "
			    "and prefetched data follows other clients only "
			    "within glusterfs2:prefetch max age; to fix: "
			    "gluster volume set %s group samba\n",
			    vol->volname,
			    vol->md_invalidation ?
			    "" : "no md-cache cache-invalidation",
			    (!vol->md_invalidation && !vol->nl_cache) ?
			    ", " : "",
			    vol->nl_cache ? "" : "no nl-cache", vol->volname);
	}
}

/*
 * Set one translator option of the client graph.  A failure is logged;
 * only a required option's failure is returned.
 */
static int gf2_xlator_option(glfs_t *fs, const char *volname,
			     const char *xlator, const char *key,
			     const char *value, const char *what,
			     bool required)
{
	int ret = glfs_set_xlator_option(fs, xlator, key, value);

	if (ret >= 0) {
		return 0;
	}
	if (required) {
		DBG_ERR("volume %s: cannot set %s: %s; refusing to connect\n",
			volname, what, strerror(errno));
		return -1;
	}
	DBG_WARNING("volume %s: cannot %s: %s\n", volname, what,
		    strerror(errno));
	return 0;
}

/* The client graph's options, before glfs_init. */
static int gf2_volume_set_xlators(glfs_t *fs,
				  const struct gf2_volume_params *p)
{
	/*
	 * Samba sends ACL xattrs through POSIX ACL calls: let md-cache
	 * cache them, as the FUSE client does.
	 */
	gf2_xlator_option(fs, p->volname, "*-md-cache", "cache-posix-acl",
			  "true", "enable md-cache POSIX ACL caching", false);
	/*
	 * Let md-cache fetch the xattrs smbd asks for after every listing
	 * (DOS attributes, NT ACLs, streams, fruit metadata) with each
	 * readdirplus and answer those lookups from memory, as the volume
	 * option performance.cache-samba-metadata does.  md-cache's own
	 * coherence rules apply: its timeout, and upcall invalidation when
	 * the volume has features.cache-invalidation on.
	 */
	gf2_xlator_option(fs, p->volname, "*-md-cache",
			  "cache-samba-metadata", "true",
			  "enable md-cache samba metadata caching", false);
	/*
	 * Client-side io-threads sits above md-cache: every call, even one
	 * md-cache answers from memory, would hop to one of its threads and
	 * back.  smbd's calls are either asynchronous already (the data
	 * path) or wait for their answer anyway, so run them in the calling
	 * thread.
	 */
	if (p->client_io_threads_off) {
		gf2_xlator_option(fs, p->volname, "*-io-threads",
				  "pass-through", "true",
				  "bypass client io-threads", false);
	}
	/*
	 * nl-cache (on in Gluster's samba option group) loses names this
	 * client created once gfapi releases a glfs_object of them, which
	 * it does for every upcall it delivers (glfs_free): another
	 * client's change to a file or directory made here hid it from this
	 * process for nl-cache's timeout (600 s in the group), every lookup
	 * answering ENOENT (test_samba_group.py).  Bypass it in this
	 * process's graph; other clients of the volume keep it.
	 */
	/*
	 * gfapi's epoll threads (one process-wide pool, sized by the
	 * largest event-threads of the protocol/client translators; the
	 * volume's client.event-threads, 2 by default): each idle smbd
	 * holds them.  A value here overrides the volume's for this
	 * process only.
	 */
	if (p->event_threads > 0) {
		char n[16];

		snprintf(n, sizeof(n), "%d", p->event_threads);
		gf2_xlator_option(fs, p->volname, "*-client-*",
				  "event-threads", n, "set event-threads",
				  false);
	}
	gf2_xlator_option(fs, p->volname, "*-nl-cache", "pass-through",
			  "true", "bypass nl-cache", false);
	/* The snapshot entry point (.snaps) appears under the share root. */
	gf2_xlator_option(fs, p->volname, "*-snapview-client",
			  "snapdir-entry-path", p->connectpath,
			  "set snapdir-entry-path", false);
	/*
	 * Samba orders writes and flushes itself and relies on a write being
	 * on the bricks once it is acknowledged to the client: bypass
	 * write-behind, as the stock module does.  Without pass-through
	 * support data could be lost, so refuse to connect.
	 */
	return gf2_xlator_option(fs, p->volname, "*-write-behind",
				 "pass-through", "true",
				 "write-behind pass-through", true);
}

/*
 * Is every brick of the client graph connected?  glfs_init returns once
 * every brick connection has come up or failed, and a failed one is only
 * tried again seconds later; meanwhile the instance serves a part of the
 * volume without an error: listings lack the entries of that brick,
 * creates whose names hash to it fail with EIO.  A brick that is down
 * does that, and so does a first handshake that GlusterFS itself turns
 * down: two brick connections of a new instance finishing their
 * handshakes at the same moment can fail one of them ("volume-id
 * changed, can't connect to server"; the shared volume id is written
 * by one handshake while the other compares it).
 *
 * The root's glusterfs.pathinfo names every brick whose connection is
 * up; the volfile names them all.  When the answer is not clear (no
 * volfile, no pathinfo, a disperse graph) the bricks count as connected.
 * Returns false with the missing bricks, "host:path" space separated,
 * in *missing.
 */
static bool gf2_bricks_connected(TALLOC_CTX *mem_ctx, glfs_t *fs,
				 unsigned *nbricks, char **missing)
{
	char *volfile = NULL;
	char *pathinfo = NULL;
	ssize_t len;
	unsigned nmissing = 0;
	bool connected = true;
	int ret;

	*nbricks = 0;
	*missing = NULL;
	volfile = gf2_volfile(mem_ctx, fs);
	if (volfile == NULL) {
		return true;
	}
	len = glfs_getxattr(fs, "/", "glusterfs.pathinfo", NULL, 0);
	if (len <= 0) {
		TALLOC_FREE(volfile);
		return true;
	}
	len += 4096;		/* a brick connecting meanwhile */
	pathinfo = talloc_zero_size(mem_ctx, len + 1);
	*missing = talloc_zero_size(mem_ctx, 1024);
	if (pathinfo == NULL || *missing == NULL) {
		goto done;
	}
	len = glfs_getxattr(fs, "/", "glusterfs.pathinfo", pathinfo, len);
	if (len <= 0) {
		goto done;
	}
	pathinfo[len] = '\0';
	ret = gf2_volfile_bricks_missing(volfile, pathinfo, nbricks,
					 &nmissing, *missing, 1024);
	connected = (ret != 0 || nmissing == 0);
done:
	TALLOC_FREE(volfile);
	TALLOC_FREE(pathinfo);
	if (connected) {
		TALLOC_FREE(*missing);
	}
	return connected;
}

/* A new, initialized instance of the volume, or NULL with errno set. */
static glfs_t *gf2_volume_init_fs(const struct gf2_volume_params *p,
				  const char *servers)
{
	glfs_t *fs = NULL;
	size_t i;
	int ret;

	fs = glfs_new(p->volname);
	if (fs == NULL) {
		DBG_ERR("glfs_new(%s) failed: %s\n", p->volname,
			strerror(errno));
		return NULL;
	}

	for (i = 0; i < p->num_servers; i++) {
		const struct gf2_volfile_server *s = &p->servers[i];

		ret = glfs_set_volfile_server(fs, s->transport, s->host,
					      s->port);
		if (ret < 0) {
			DBG_ERR("volume %s: cannot use volfile server "
				"%s+%s:%d: %s\n", p->volname, s->transport,
				s->host, s->port, strerror(errno));
			goto fail;
		}
	}

	ret = glfs_set_logging(fs, p->logfile, p->loglevel);
	if (ret < 0) {
		DBG_ERR("volume %s: cannot log to %s at level %d: %s\n",
			p->volname, p->logfile ? p->logfile : "(default)",
			p->loglevel, strerror(errno));
		goto fail;
	}

	if (gf2_volume_set_xlators(fs, p) != 0) {
		goto fail;
	}

	gf2_transport_bind();
	ret = glfs_init(fs);
	if (ret < 0) {
		DBG_ERR("volume %s unavailable from volfile servers %s: %s\n",
			p->volname, servers, strerror(errno));
		goto fail;
	}
	return fs;

fail:
	{
		int saved_errno = errno;

		glfs_fini(fs);
		errno = saved_errno;
	}
	return NULL;
}

/*
 * Initialize the volume's instance; when a brick connection is missing
 * right after, initialize one more (the first is released in a reaper)
 * and serve with what that one reaches, warning which bricks it lacks.
 */
static glfs_t *gf2_volume_connect(const struct gf2_volume_params *p,
				  const char *servers)
{
	glfs_t *fs = NULL;
	char *missing = NULL;
	unsigned nbricks = 0;

	fs = gf2_volume_init_fs(p, servers);
	if (fs == NULL ||
	    gf2_bricks_connected(talloc_tos(), fs, &nbricks, &missing)) {
		return fs;
	}
	DBG_WARNING("volume %s: brick %s not connected after init; "
		   "connecting once more\n", p->volname, missing);
	TALLOC_FREE(missing);
	gf2_reap(fs, p->volname);

	fs = gf2_volume_init_fs(p, servers);
	if (fs == NULL ||
	    gf2_bricks_connected(talloc_tos(), fs, &nbricks, &missing)) {
		return fs;
	}
	DBG_WARNING("volume %s: serving without brick %s (%u bricks in "
		    "all) until its connection comes up: entries on it are "
		    "missing meanwhile\n", p->volname, missing, nbricks);
	TALLOC_FREE(missing);
	return fs;
}

struct gf2_volume *gf2_volume_get(const struct gf2_volume_params *p)
{
	struct gf2_volume *vol = NULL;
	char servers[1024];
	char *key = NULL;

	gf2_format_volfile_servers(p->servers, p->num_servers,
				   servers, sizeof(servers));
	key = talloc_asprintf(talloc_tos(), "%s|%s|%s|%d|%s|%d|%d",
			      p->volname, servers,
			      p->logfile ? p->logfile : "", p->loglevel,
			      p->connectpath, (int)p->client_io_threads_off,
			      p->event_threads);
	if (key == NULL) {
		errno = ENOMEM;
		return NULL;
	}

	for (vol = gf2_volumes; vol != NULL; vol = vol->next) {
		if (strcmp(vol->key, key) == 0) {
			gf2_hold_get(&vol->hold);
			TALLOC_FREE(key);
			return vol;
		}
	}

	vol = talloc_zero(NULL, struct gf2_volume);
	if (vol == NULL) {
		TALLOC_FREE(key);
		errno = ENOMEM;
		return NULL;
	}
	vol->key = talloc_move(vol, &key);
	vol->volname = talloc_strdup(vol, p->volname);
	vol->servers = talloc_strdup(vol, servers);
	if (vol->volname == NULL || vol->servers == NULL) {
		TALLOC_FREE(vol);
		errno = ENOMEM;
		return NULL;
	}

	vol->fs = gf2_volume_connect(p, servers);
	if (vol->fs == NULL) {
		int saved_errno = errno;

		TALLOC_FREE(vol);
		errno = saved_errno;
		return NULL;
	}

	vol->upcalls = gf2_upcall_register(vol);
	gf2_volume_check_options(vol);
	gf2_hold_get(&vol->hold);
	DLIST_ADD(gf2_volumes, vol);
	DBG_NOTICE("volume %s connected through %s\n", p->volname, servers);
	return vol;
}

void gf2_volume_put(struct gf2_volume *vol)
{
	if (gf2_hold_put(&vol->hold)) {
		gf2_volume_destroy(vol);
		return;
	}
	if (gf2_hold_deferred(&vol->hold)) {
		DBG_NOTICE("volume %s: %u calls in flight, release deferred\n",
			   vol->volname, vol->hold.inflight);
	}
}

/*
 * smbd's event loop is gone (the process is exiting): completions of calls
 * still in flight will never be processed, so release every volume that
 * no tree connect uses now instead of waiting for them.  glfs_fini waits
 * for the calls Gluster still owns; their callbacks only touch memory
 * that is never freed before exit (the orphaned gf2_io and the threaded
 * context).
 */
void gf2_volume_loop_gone(void)
{
	struct gf2_volume *vol = NULL;
	struct gf2_volume *next = NULL;

	for (vol = gf2_volumes; vol != NULL; vol = next) {
		next = vol->next;
		if (vol->hold.users == 0) {
			DBG_NOTICE("volume %s: %u calls in flight at exit, "
				   "releasing\n", vol->volname,
				   vol->hold.inflight);
			gf2_volume_destroy(vol);
		}
	}
}

void gf2_volume_io_begin(struct gf2_volume *vol)
{
	gf2_hold_io_begin(&vol->hold);
}

void gf2_volume_io_end(struct gf2_volume *vol)
{
	if (gf2_hold_io_end(&vol->hold)) {
		gf2_volume_destroy(vol);
	}
}
