/*
 * glusterfs2: per-share counters an admin can read without a debugger.
 *
 * Layer: bridge.
 *
 * Every smbd process (one per client connection) counts, per share, in
 * its main thread: read requests and where their bytes came from
 * (prefetch memory or Gluster), what prefetch read ahead and what of that
 * was never used, writes, fsyncs, the Gluster calls in flight and a
 * latency histogram of the asynchronous Gluster calls.  The memory
 * budget is the process's, not a share's: every share of the process
 * shows what the budget holds now (mem_held, of which the write cache's
 * mem_held_wc) and the most it has held (mem_peak).
 *
 * The counters are written to <lock directory>/glusterfs2/<pid>.stats
 * (write to a temporary file, then rename) at most every
 * GF2_STATS_INTERVAL seconds while they change: a tevent timer armed by
 * the first change, so an idle process never wakes up for this.  When
 * the process's last glusterfs2 tree connect goes, its counters are added
 * to <lock directory>/glusterfs2/totals under an fcntl lock and its own
 * file is removed.  tools/glusterfs2-stats sums the totals and the files
 * of live processes; mem_peak, one process's peak, merges as the largest,
 * and the gauges (inflight, mem_held, mem_held_wc) count only in the
 * files of live processes.
 *
 * File format, one counter per line: "<share>\t<name>\t<value>\n".
 * Share names never contain tabs or newlines (smb.conf section names).
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "lib/util/dlinklist.h"
#include "lib/util/sys_rw_data.h"
#include "gf2_compat.h"
#include "gf2_stats.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

#define GF2_STATS_INTERVAL 2

/* Upper bounds of the latency buckets in microseconds; the last is open. */
static const uint64_t gf2_lat_bounds[GF2_LAT_BUCKETS - 1] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000,
};

static struct gf2_stats *gf2_stats_list;
static struct tevent_context *gf2_stats_ev;
static struct tevent_timer *gf2_stats_timer;
static unsigned gf2_stats_users;	/* tree connects in this process */
/* the process's memory budget, from gf2_stats_mem */
static uint64_t gf2_stats_held;
static uint64_t gf2_stats_held_wc;
static uint64_t gf2_stats_peak;

struct gf2_stats *gf2_stats_get(const char *share)
{
	struct gf2_stats *st = NULL;

	for (st = gf2_stats_list; st != NULL; st = st->next) {
		if (strcmp(st->share, share) == 0) {
			return st;
		}
	}
	/* Lives as long as the process: files and chunks point to it. */
	st = talloc_zero(NULL, struct gf2_stats);
	if (st == NULL) {
		return NULL;
	}
	st->share = talloc_strdup(st, share);
	if (st->share == NULL) {
		TALLOC_FREE(st);
		return NULL;
	}
	DLIST_ADD_END(gf2_stats_list, st);
	return st;
}

void gf2_stats_lat(struct gf2_stats *st, uint64_t usec)
{
	unsigned i;

	for (i = 0; i < GF2_LAT_BUCKETS - 1; i++) {
		if (usec <= gf2_lat_bounds[i]) {
			break;
		}
	}
	st->c.lat[i] += 1;
	st->c.gluster_call_us += usec;
	st->c.gluster_calls += 1;
	gf2_stats_changed(st);
}

void gf2_stats_mem(uint64_t held, uint64_t wc_held, uint64_t peak)
{
	if (held == gf2_stats_held && wc_held == gf2_stats_held_wc &&
	    peak == gf2_stats_peak) {
		return;
	}
	gf2_stats_held = held;
	gf2_stats_held_wc = wc_held;
	gf2_stats_peak = peak;
	gf2_stats_changed(gf2_stats_list);
}

static char *gf2_stats_dir(TALLOC_CTX *mem_ctx)
{
	return lock_path(mem_ctx, "glusterfs2");
}

/* Counters that add up across processes, then the peak. */
#define GF2_STATS_SUMS(X) \
	X(reads) X(read_bytes) X(read_bytes_prefetch) X(read_bytes_gluster) \
	X(prefetch_bytes) X(prefetch_unused) X(writes) X(write_bytes) \
	X(fsyncs) X(gluster_errors) X(gluster_calls) X(wc_writes) X(wc_sends) \
	X(wc_errors) X(gluster_call_us) X(read_bytes_shared)
/* The node's counters of the shared read cache: the largest is newest. */
#define GF2_STATS_NODE(X) \
	X(shr_hits) X(shr_misses) X(shr_stale) X(shr_fills) \
	X(shr_evictions) X(shr_invalidations)
#define GF2_STATS_FIELDS(X) GF2_STATS_SUMS(X) X(mem_peak) GF2_STATS_NODE(X)

static char *gf2_stats_format(TALLOC_CTX *mem_ctx, bool with_gauges)
{
	struct gf2_stats *st = NULL;
	char *out = talloc_strdup(mem_ctx, "");
	unsigned i;

	for (st = gf2_stats_list; st != NULL && out != NULL; st = st->next) {
		st->c.mem_peak = MAX(st->c.mem_peak, gf2_stats_peak);
#define GF2_FMT(f) \
		talloc_asprintf_addbuf(&out, "%s\t" #f "\t%" PRIu64 "\n", \
				       st->share, st->c.f);
		GF2_STATS_FIELDS(GF2_FMT)
#undef GF2_FMT
		for (i = 0; i < GF2_LAT_BUCKETS; i++) {
			if (i < GF2_LAT_BUCKETS - 1) {
				talloc_asprintf_addbuf(
					&out, "%s\tlat_le_%" PRIu64 "us\t%"
					PRIu64 "\n", st->share,
					gf2_lat_bounds[i], st->c.lat[i]);
			} else {
				talloc_asprintf_addbuf(
					&out, "%s\tlat_gt_%" PRIu64 "us\t%"
					PRIu64 "\n", st->share,
					gf2_lat_bounds[i - 1], st->c.lat[i]);
			}
		}
		if (with_gauges) {
			talloc_asprintf_addbuf(&out, "%s\tinflight\t%" PRIu64
					       "\n", st->share, st->inflight);
			talloc_asprintf_addbuf(&out, "%s\tmem_held\t%" PRIu64
					       "\n", st->share, gf2_stats_held);
			talloc_asprintf_addbuf(&out, "%s\tmem_held_wc\t%"
					       PRIu64 "\n", st->share,
					       gf2_stats_held_wc);
		}
	}
	return out;
}

static bool gf2_stats_write_file(const char *path, const char *text)
{
	char *tmp = talloc_asprintf(talloc_tos(), "%s.tmp", path);
	size_t len = strlen(text);
	bool ok = false;
	int fd;

	if (tmp == NULL) {
		return false;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd != -1) {
		ok = (write_data(fd, text, len) == (ssize_t)len);
		ok = (close(fd) == 0) && ok;
		ok = ok && (rename(tmp, path) == 0);
		if (!ok) {
			unlink(tmp);
		}
	}
	TALLOC_FREE(tmp);
	return ok;
}

static void gf2_stats_write_own(void)
{
	TALLOC_CTX *frame = talloc_stackframe();
	char *dir = gf2_stats_dir(frame);
	char *path = NULL;
	char *text = NULL;

	if (dir == NULL) {
		goto out;
	}
	path = talloc_asprintf(frame, "%s/%d.stats", dir, (int)getpid());
	text = gf2_stats_format(frame, true);
	if (path == NULL || text == NULL) {
		goto out;
	}
	become_root();
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		DBG_INFO("mkdir %s: %s\n", dir, strerror(errno));
	}
	if (!gf2_stats_write_file(path, text)) {
		DBG_INFO("cannot write %s: %s\n", path, strerror(errno));
	}
	unbecome_root();
out:
	TALLOC_FREE(frame);
}

static void gf2_stats_timer_fn(struct tevent_context *ev,
			       struct tevent_timer *te,
			       struct timeval now,
			       void *private_data)
{
	gf2_stats_timer = NULL;
	gf2_stats_write_own();
}

void gf2_stats_changed(struct gf2_stats *st)
{
	if (gf2_stats_timer != NULL || gf2_stats_ev == NULL ||
	    gf2_stats_users == 0) {
		return;
	}
	gf2_stats_timer = tevent_add_timer(
		gf2_stats_ev, NULL,
		timeval_current_ofs(GF2_STATS_INTERVAL, 0),
		gf2_stats_timer_fn, NULL);
}

void gf2_stats_connect(struct tevent_context *ev)
{
	gf2_stats_ev = ev;
	gf2_stats_users += 1;
}

/* Add "share\tname\tvalue" lines of text into the process's counters. */
static void gf2_stats_parse_add(const char *text,
				struct gf2_stats **plist, TALLOC_CTX *mem_ctx)
{
	char *copy = talloc_strdup(mem_ctx, text);
	char *line = NULL;
	char *save = NULL;

	if (copy == NULL) {
		return;
	}
	for (line = strtok_r(copy, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char *tab1 = strchr(line, '\t');
		char *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
		struct gf2_stats *st = NULL;
		uint64_t v;
		unsigned i;

		if (tab2 == NULL) {
			continue;
		}
		*tab1 = '\0';
		*tab2 = '\0';
		v = strtoull(tab2 + 1, NULL, 10);
		for (st = *plist; st != NULL; st = st->next) {
			if (strcmp(st->share, line) == 0) {
				break;
			}
		}
		if (st == NULL) {
			st = talloc_zero(mem_ctx, struct gf2_stats);
			if (st == NULL) {
				return;
			}
			st->share = talloc_strdup(st, line);
			DLIST_ADD_END(*plist, st);
		}
#define GF2_ADD(f) \
		if (strcmp(tab1 + 1, #f) == 0) { st->c.f += v; continue; }
		GF2_STATS_SUMS(GF2_ADD)
#undef GF2_ADD
		/* one process's peak: the largest counts, not the sum */
		if (strcmp(tab1 + 1, "mem_peak") == 0) {
			st->c.mem_peak = MAX(st->c.mem_peak, v);
			continue;
		}
#define GF2_MAX(f) \
		if (strcmp(tab1 + 1, #f) == 0) { \
			st->c.f = MAX(st->c.f, v); continue; \
		}
		GF2_STATS_NODE(GF2_MAX)
#undef GF2_MAX
		for (i = 0; i < GF2_LAT_BUCKETS; i++) {
			char name[32];

			if (i < GF2_LAT_BUCKETS - 1) {
				snprintf(name, sizeof(name),
					 "lat_le_%" PRIu64 "us",
					 gf2_lat_bounds[i]);
			} else {
				snprintf(name, sizeof(name),
					 "lat_gt_%" PRIu64 "us",
					 gf2_lat_bounds[i - 1]);
			}
			if (strcmp(tab1 + 1, name) == 0) {
				st->c.lat[i] += v;
				break;
			}
		}
	}
}

/*
 * The process's last tree connect is going: add its counters to the
 * totals file, under an fcntl lock, and remove its own file.
 */
void gf2_stats_disconnect(void)
{
	TALLOC_CTX *frame = NULL;
	struct gf2_stats *merged = NULL;
	struct gf2_stats *st = NULL;
	char *dir = NULL;
	char *totals = NULL;
	char *own = NULL;
	char *text = NULL;
	char *old = NULL;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd;

	SMB_ASSERT(gf2_stats_users > 0);
	gf2_stats_users -= 1;
	if (gf2_stats_users > 0) {
		return;
	}
	TALLOC_FREE(gf2_stats_timer);

	frame = talloc_stackframe();
	dir = gf2_stats_dir(frame);
	if (dir == NULL) {
		goto out;
	}
	totals = talloc_asprintf(frame, "%s/totals", dir);
	own = talloc_asprintf(frame, "%s/%d.stats", dir, (int)getpid());
	if (totals == NULL || own == NULL) {
		goto out;
	}

	become_root();
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		DBG_INFO("mkdir %s: %s\n", dir, strerror(errno));
	}
	fd = open(totals, O_RDWR | O_CREAT, 0644);
	if (fd == -1 || fcntl(fd, F_SETLKW, &fl) == -1) {
		DBG_INFO("cannot lock %s: %s\n", totals, strerror(errno));
		if (fd != -1) {
			close(fd);
		}
		unbecome_root();
		goto out;
	}
	old = fd_load(fd, NULL, 0, frame);
	if (old != NULL) {
		gf2_stats_parse_add(old, &merged, frame);
	}
	text = gf2_stats_format(frame, false);
	if (text != NULL) {
		gf2_stats_parse_add(text, &merged, frame);
	}
	/* format the merged list: swap it in for a moment */
	{
		struct gf2_stats *mine = gf2_stats_list;

		gf2_stats_list = merged;
		text = gf2_stats_format(frame, false);
		gf2_stats_list = mine;
	}
	/*
	 * Rewrite in place: the lock is on this inode, a rename would let
	 * the next process lock a different one.
	 */
	if (text == NULL || ftruncate(fd, 0) != 0 ||
	    pwrite(fd, text, strlen(text), 0) != (ssize_t)strlen(text)) {
		DBG_INFO("cannot update %s: %s\n", totals, strerror(errno));
	} else {
		/* counted in the totals now: start again from zero */
		for (st = gf2_stats_list; st != NULL; st = st->next) {
			ZERO_STRUCT(st->c);
		}
		unlink(own);
	}
	close(fd);	/* releases the lock */
	unbecome_root();
out:
	TALLOC_FREE(frame);
}
