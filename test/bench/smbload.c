/*
 * smbload: the SMB load generator of the glusterfs2 benchmark suite.
 *
 * Talks to a share through libsmbclient (new-style context API).  Every
 * client is a process of its own with its own SMBCCTX, hence its own TCP
 * connection and its own smbd on the server; libsmbclient has no
 * asynchronous API, so "N requests in flight" is N clients each with one
 * synchronous request in flight.  Every byte read is checked against the
 * data pattern (pattern.h); what is written is read back (sampled or
 * whole) after the timed part.  A wrong byte fails the run.
 *
 * Clients connect and open their files first, then all start together;
 * connection setup and teardown are not timed.  The process exits with
 * _exit() without logging off: a tree disconnect from the stock
 * vfs_glusterfs takes ~10 s (glfs_fini), which is not what we measure.
 *
 * Prints one JSON object on stdout; exit 0 if every check passed.  Its
 * t_start and t_end are the timed part's bounds on CLOCK_MONOTONIC (in
 * seconds), so that the caller can measure the server's CPU time over
 * exactly that window.
 *
 *   smbload MODE --url URL [options]
 *   modes:
 *     probe       connect to URL (a directory) and list it
 *     seqread     read URL sequentially: --bs, --size, --seed [--seconds]
 *     seqwrite    write URL sequentially (created/truncated), then check
 *                 --samples random 4 KiB blocks: --bs --size --seed
 *                 [--seconds]
 *     randread    --clients readers of random --bs blocks of URL (a file
 *                 of --size bytes) for --seconds
 *     multiread   --clients readers, client i reads URL%02d.dat (seed+i)
 *                 sequentially: --bs --size [--seconds]
 *     multiwrite  --clients writers, client i writes --bs blocks to
 *                 URL%02d.dat sequentially, wrapping at --region bytes, for
 *                 --seconds; each then reads its file back whole
 *     smallread   --clients clients, each opening, reading and closing
 *                 random files URL/f%04d.dat (0 <= i < --files, seed+i,
 *                 --fsize bytes) for --seconds
 *   common: --port N, --user U, --pass P (default: $SMB_USER, $SMB_PASS),
 *           --linger S: each client keeps its connection S seconds after
 *           its timed part (so that the server's RSS can be sampled),
 *           --timeout S: how long a client waits for an answer (a tree
 *           connect included) before it fails; libsmbclient's default
 *           (20 s) if not given
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libsmbclient.h>

#include "pattern.h"

#define MAX_CLIENTS 64
#define LAT_CAP (1u << 21)	/* latencies kept per client */

struct opts {
	const char *mode;
	const char *url;
	const char *user;
	const char *pass;
	int port;
	uint64_t bs;
	uint64_t size;
	uint64_t seed;
	double seconds;
	int clients;
	uint64_t region;
	int files;
	uint64_t fsize;
	int samples;
	double linger;
	double timeout;
};

struct slot {
	uint64_t ops;
	uint64_t bytes;
	uint64_t checked;
	uint64_t t_end;
	uint64_t nlat;
	int failed;
	char err[384];
};

static struct opts O;
static struct slot *SLOTS;
static uint64_t *LATS;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fail(struct slot *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct slot *s, const char *fmt, ...)
{
	va_list ap;
	if (s->failed)
		return;
	s->failed = 1;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
}

/* ---------------------------------------------------------------- */
/* libsmbclient */

static void auth_fn(SMBCCTX *c, const char *srv, const char *shr,
		    char *wg, int wglen, char *un, int unlen,
		    char *pw, int pwlen)
{
	(void)c; (void)srv; (void)shr;
	snprintf(wg, wglen, "%s", "WORKGROUP");
	snprintf(un, unlen, "%s", O.user);
	snprintf(pw, pwlen, "%s", O.pass);
}

static SMBCCTX *new_ctx(struct slot *s)
{
	SMBCCTX *ctx = smbc_new_context();
	if (ctx == NULL) {
		fail(s, "smbc_new_context: %s", strerror(errno));
		return NULL;
	}
	smbc_setDebug(ctx, 0);
	smbc_setFunctionAuthDataWithContext(ctx, auth_fn);
	smbc_setOptionUseKerberos(ctx, 0);
	smbc_setOptionFallbackAfterKerberos(ctx, 1);
	smbc_setOptionNoAutoAnonymousLogin(ctx, 1);
	if (O.port > 0)
		smbc_setPort(ctx, (uint16_t)O.port);
	if (O.timeout > 0)
		smbc_setTimeout(ctx, (int)(O.timeout * 1000));
	if (smbc_init_context(ctx) == NULL) {
		fail(s, "smbc_init_context: %s", strerror(errno));
		return NULL;
	}
	return ctx;
}

static SMBCFILE *xopen(SMBCCTX *ctx, struct slot *s, const char *url,
		       int flags)
{
	SMBCFILE *f = smbc_getFunctionOpen(ctx)(ctx, url, flags, 0644);
	if (f == NULL)
		fail(s, "open %s: %s", url, strerror(errno));
	return f;
}

/* read exactly len bytes (fewer only at end of file) */
static ssize_t xread(SMBCCTX *ctx, SMBCFILE *f, void *buf, size_t len)
{
	size_t got = 0;
	smbc_read_fn rd = smbc_getFunctionRead(ctx);
	while (got < len) {
		ssize_t n = rd(ctx, f, (char *)buf + got, len - got);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static int xseek(SMBCCTX *ctx, SMBCFILE *f, uint64_t off)
{
	return smbc_getFunctionLseek(ctx)(ctx, f, (off_t)off, SEEK_SET) ==
		(off_t)off ? 0 : -1;
}

static void *xalloc(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, n ? n : 1) != 0) {
		fprintf(stderr, "smbload: out of memory\n");
		_exit(3);
	}
	return p;
}

static uint64_t rng_next(uint64_t *st)
{
	uint64_t x = *st;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*st = x;
	return x;
}

/* ---------------------------------------------------------------- */
/* barrier: children say ready, parent says go */

static int ready_pipe[2], go_pipe[2];

static uint64_t wait_go(void)
{
	char c = 'r';
	if (write(ready_pipe[1], &c, 1) != 1)
		_exit(4);
	if (read(go_pipe[0], &c, 1) != 1)
		_exit(4);
	return now_ns();
}

static int past(uint64_t deadline)
{
	return deadline != 0 && now_ns() >= deadline;
}

static uint64_t deadline_from(uint64_t t0)
{
	return O.seconds > 0 ? t0 + (uint64_t)(O.seconds * 1e9) : 0;
}

static void lat_add(struct slot *s, uint64_t *lat, uint64_t ns)
{
	if (s->nlat < LAT_CAP)
		lat[s->nlat++] = ns;
}

/* check a file's size through its open handle */
static int check_size(SMBCCTX *ctx, SMBCFILE *f, struct slot *s,
		      const char *url, uint64_t want, int exact)
{
	struct stat st;
	if (smbc_getFunctionFstat(ctx)(ctx, f, &st) != 0) {
		fail(s, "fstat %s: %s", url, strerror(errno));
		return -1;
	}
	if ((exact && (uint64_t)st.st_size != want) ||
	    (!exact && (uint64_t)st.st_size < want)) {
		fail(s, "%s is %jd bytes, expected %s%" PRIu64, url,
		     (intmax_t)st.st_size, exact ? "" : "at least ", want);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- */
/* workers: one per client process */

static void seq_read_file(SMBCCTX *ctx, struct slot *s, uint64_t *lat,
			  const char *url, uint64_t seed)
{
	SMBCFILE *f = xopen(ctx, s, url, O_RDONLY);
	if (f == NULL || check_size(ctx, f, s, url, O.size, 0) != 0) {
		wait_go();
		return;
	}
	uint8_t *buf = xalloc(O.bs);
	smbc_read_fn rd = smbc_getFunctionRead(ctx);
	uint64_t t0 = wait_go(), dl = deadline_from(t0), off = 0;
	while (off < O.size && !past(dl)) {
		size_t want = O.bs;
		if (O.size - off < want)
			want = O.size - off;
		uint64_t t = now_ns();
		ssize_t n = rd(ctx, f, buf, want);
		lat_add(s, lat, now_ns() - t);
		if (n < 0) {
			fail(s, "read %s at %" PRIu64 ": %s", url, off,
			     strerror(errno));
			break;
		}
		if (n == 0) {
			fail(s, "read %s: end of file at %" PRIu64, url, off);
			break;
		}
		int64_t bad = pat_check(buf, off, (size_t)n, seed);
		if (bad >= 0) {
			fail(s, "read %s: wrong data at offset %" PRId64, url,
			     bad);
			break;
		}
		s->ops++;
		off += (uint64_t)n;
		s->checked += (uint64_t)n;
	}
	s->t_end = now_ns();
	s->bytes = off;
}

static void w_seqread(SMBCCTX *ctx, struct slot *s, uint64_t *lat, int i)
{
	(void)i;
	seq_read_file(ctx, s, lat, O.url, O.seed);
}

static void w_multiread(SMBCCTX *ctx, struct slot *s, uint64_t *lat, int i)
{
	char url[2048];
	snprintf(url, sizeof(url), "%s%02d.dat", O.url, i);
	seq_read_file(ctx, s, lat, url, O.seed + (uint64_t)i);
}

/* read back [0, len) of an open file and check it */
static void read_back(SMBCCTX *ctx, SMBCFILE *f, struct slot *s,
		      const char *url, uint64_t len, uint64_t seed)
{
	size_t bsz = 1 << 20;
	uint8_t *buf = xalloc(bsz);
	uint64_t off = 0;
	if (xseek(ctx, f, 0) != 0) {
		fail(s, "lseek %s: %s", url, strerror(errno));
		free(buf);
		return;
	}
	while (off < len) {
		size_t want = len - off < bsz ? (size_t)(len - off) : bsz;
		ssize_t n = xread(ctx, f, buf, want);
		if (n != (ssize_t)want) {
			fail(s, "read back %s at %" PRIu64 ": %s", url, off,
			     n < 0 ? strerror(errno) : "short read");
			break;
		}
		int64_t bad = pat_check(buf, off, want, seed);
		if (bad >= 0) {
			fail(s, "read back %s: wrong data at offset %" PRId64,
			     url, bad);
			break;
		}
		off += want;
		s->checked += want;
	}
	free(buf);
}

static void w_seqwrite(SMBCCTX *ctx, struct slot *s, uint64_t *lat, int i)
{
	(void)i;
	const char *url = O.url;
	SMBCFILE *f = xopen(ctx, s, url, O_WRONLY | O_CREAT | O_TRUNC);
	if (f == NULL) {
		wait_go();
		return;
	}
	uint8_t *buf = xalloc(O.bs);
	smbc_write_fn wr = smbc_getFunctionWrite(ctx);
	uint64_t t0 = wait_go(), dl = deadline_from(t0), off = 0;
	while (off < O.size && !past(dl)) {
		size_t want = O.bs;
		if (O.size - off < want)
			want = O.size - off;
		pat_fill(buf, off, want, O.seed);
		uint64_t t = now_ns();
		ssize_t n = wr(ctx, f, buf, want);
		lat_add(s, lat, now_ns() - t);
		if (n != (ssize_t)want) {
			fail(s, "write %s at %" PRIu64 ": %s", url, off,
			     n < 0 ? strerror(errno) : "short write");
			break;
		}
		s->ops++;
		off += want;
	}
	if (smbc_getFunctionClose(ctx)(ctx, f) != 0 && !s->failed)
		fail(s, "close %s: %s", url, strerror(errno));
	s->t_end = now_ns();
	s->bytes = off;
	if (s->failed)
		return;

	/* check: exact size, first and last block, random 4 KiB blocks */
	f = xopen(ctx, s, url, O_RDONLY);
	if (f == NULL || check_size(ctx, f, s, url, off, 1) != 0)
		return;
	uint64_t nblk = (off + 4095) / 4096, st = O.seed | 1;
	uint8_t blk[4096];
	for (int k = 0; k < O.samples + 2 && nblk > 0; k++) {
		uint64_t b = k == 0 ? 0 : k == 1 ? nblk - 1
			: rng_next(&st) % nblk;
		uint64_t boff = b * 4096;
		size_t want = off - boff < 4096 ? (size_t)(off - boff) : 4096;
		ssize_t n;
		if (xseek(ctx, f, boff) != 0 ||
		    (n = xread(ctx, f, blk, want)) != (ssize_t)want) {
			fail(s, "read back %s at %" PRIu64 " failed", url,
			     boff);
			return;
		}
		int64_t bad = pat_check(blk, boff, want, O.seed);
		if (bad >= 0) {
			fail(s, "read back %s: wrong data at offset %" PRId64,
			     url, bad);
			return;
		}
		s->checked += want;
	}
}

static void w_randread(SMBCCTX *ctx, struct slot *s, uint64_t *lat, int i)
{
	const char *url = O.url;
	SMBCFILE *f = xopen(ctx, s, url, O_RDONLY);
	if (f == NULL || check_size(ctx, f, s, url, O.size, 0) != 0) {
		wait_go();
		return;
	}
	uint8_t *buf = xalloc(O.bs);
	uint64_t nblk = O.size / O.bs;
	uint64_t st = (O.seed + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1)) | 1;
	smbc_read_fn rd = smbc_getFunctionRead(ctx);
	smbc_lseek_fn sk = smbc_getFunctionLseek(ctx);
	uint64_t t0 = wait_go(), dl = deadline_from(t0);
	while (!past(dl)) {
		uint64_t off = (rng_next(&st) % nblk) * O.bs;
		uint64_t t = now_ns();
		ssize_t n = -1;
		if (sk(ctx, f, (off_t)off, SEEK_SET) == (off_t)off)
			n = rd(ctx, f, buf, O.bs);
		lat_add(s, lat, now_ns() - t);
		if (n != (ssize_t)O.bs) {
			fail(s, "read %s at %" PRIu64 ": %s", url, off,
			     n < 0 ? strerror(errno) : "short read");
			break;
		}
		int64_t bad = pat_check(buf, off, O.bs, O.seed);
		if (bad >= 0) {
			fail(s, "read %s: wrong data at offset %" PRId64, url,
			     bad);
			break;
		}
		s->ops++;
		s->bytes += O.bs;
		s->checked += O.bs;
	}
	s->t_end = now_ns();
}

static void w_multiwrite(SMBCCTX *ctx, struct slot *s, uint64_t *lat, int i)
{
	char url[2048];
	uint64_t seed = O.seed + (uint64_t)i;
	snprintf(url, sizeof(url), "%s%02d.dat", O.url, i);
	SMBCFILE *f = xopen(ctx, s, url, O_RDWR | O_CREAT | O_TRUNC);
	if (f == NULL) {
		wait_go();
		return;
	}
	uint8_t *buf = xalloc(O.bs);
	smbc_write_fn wr = smbc_getFunctionWrite(ctx);
	smbc_lseek_fn sk = smbc_getFunctionLseek(ctx);
	uint64_t t0 = wait_go(), dl = deadline_from(t0), off = 0, hi = 0;
	while (!past(dl)) {
		pat_fill(buf, off, O.bs, seed);
		uint64_t t = now_ns();
		ssize_t n = -1;
		if (sk(ctx, f, (off_t)off, SEEK_SET) == (off_t)off)
			n = wr(ctx, f, buf, O.bs);
		lat_add(s, lat, now_ns() - t);
		if (n != (ssize_t)O.bs) {
			fail(s, "write %s at %" PRIu64 ": %s", url, off,
			     n < 0 ? strerror(errno) : "short write");
			break;
		}
		s->ops++;
		s->bytes += O.bs;
		off += O.bs;
		if (off > hi)
			hi = off;
		if (off + O.bs > O.region)
			off = 0;
	}
	s->t_end = now_ns();
	if (s->failed)
		return;
	if (check_size(ctx, f, s, url, hi, 1) == 0)
		read_back(ctx, f, s, url, hi, seed);
}

static void w_smallread(SMBCCTX *ctx, struct slot *s, uint64_t *lat, int i)
{
	char url[2048];
	uint64_t st = (O.seed + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1)) | 1;
	size_t bufsz = O.fsize + 4096;
	uint8_t *buf = xalloc(bufsz);
	smbc_open_fn op = smbc_getFunctionOpen(ctx);
	smbc_read_fn rd = smbc_getFunctionRead(ctx);
	smbc_close_fn cl = smbc_getFunctionClose(ctx);

	/* connect (tree connect) before the start */
	SMBCFILE *d = smbc_getFunctionOpendir(ctx)(ctx, O.url);
	if (d == NULL) {
		fail(s, "opendir %s: %s", O.url, strerror(errno));
		wait_go();
		return;
	}
	smbc_getFunctionClosedir(ctx)(ctx, d);

	uint64_t t0 = wait_go(), dl = deadline_from(t0);
	while (!past(dl)) {
		int k = (int)(rng_next(&st) % (uint64_t)O.files);
		snprintf(url, sizeof(url), "%s/f%04d.dat", O.url, k);
		uint64_t t = now_ns();
		SMBCFILE *f = op(ctx, url, O_RDONLY, 0);
		ssize_t n = -1;
		int cerr = 0;
		if (f != NULL) {
			n = rd(ctx, f, buf, bufsz);
			cerr = cl(ctx, f);
		}
		lat_add(s, lat, now_ns() - t);
		if (f == NULL || n < 0 || cerr != 0) {
			fail(s, "open/read/close %s: %s", url, strerror(errno));
			break;
		}
		if ((uint64_t)n != O.fsize) {
			fail(s, "%s: read %zd bytes, expected %" PRIu64, url, n,
			     O.fsize);
			break;
		}
		int64_t bad = pat_check(buf, 0, (size_t)n, O.seed + (uint64_t)k);
		if (bad >= 0) {
			fail(s, "%s: wrong data at offset %" PRId64, url, bad);
			break;
		}
		s->ops++;
		s->bytes += (uint64_t)n;
		s->checked += (uint64_t)n;
	}
	s->t_end = now_ns();
}

typedef void (*worker_fn)(SMBCCTX *, struct slot *, uint64_t *, int);

/* ---------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static int run_clients(worker_fn fn, int nclients)
{
	size_t slots_sz = sizeof(struct slot) * (size_t)nclients;
	size_t lat_sz = sizeof(uint64_t) * LAT_CAP * (size_t)nclients;
	SLOTS = mmap(NULL, slots_sz, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	LATS = mmap(NULL, lat_sz, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (SLOTS == MAP_FAILED || LATS == MAP_FAILED) {
		fprintf(stderr, "smbload: mmap: %s\n", strerror(errno));
		return 3;
	}
	memset(SLOTS, 0, slots_sz);
	if (pipe(ready_pipe) != 0 || pipe(go_pipe) != 0) {
		fprintf(stderr, "smbload: pipe: %s\n", strerror(errno));
		return 3;
	}
	pid_t pids[MAX_CLIENTS];
	for (int i = 0; i < nclients; i++) {
		pid_t p = fork();
		if (p < 0) {
			fprintf(stderr, "smbload: fork: %s\n", strerror(errno));
			return 3;
		}
		if (p == 0) {
			struct slot *s = &SLOTS[i];
			close(ready_pipe[0]);
			close(go_pipe[1]);
			SMBCCTX *ctx = new_ctx(s);
			if (ctx == NULL) {
				wait_go();
				s->t_end = now_ns();
				_exit(0);
			}
			fn(ctx, s, LATS + (size_t)i * LAT_CAP, i);
			fflush(NULL);
			if (O.linger > 0)	/* connection kept: RSS sampling */
				usleep((useconds_t)(O.linger * 1e6));
			_exit(0);
		}
		pids[i] = p;
	}
	close(ready_pipe[1]);
	close(go_pipe[0]);

	/* wait for every client to be connected (bounded: 180 s) */
	int ready = 0;
	uint64_t limit = now_ns() + 180ull * 1000000000ull;
	while (ready < nclients) {
		struct pollfd pfd = { .fd = ready_pipe[0], .events = POLLIN };
		int r = poll(&pfd, 1, 1000);
		if (r > 0) {
			char c;
			ssize_t n = read(ready_pipe[0], &c, 1);
			if (n == 1)
				ready++;
			else if (n == 0)
				break;	/* every child gone */
		}
		if (now_ns() > limit)
			break;
	}
	int timed_out = ready < nclients;
	uint64_t t0 = now_ns();
	if (!timed_out) {
		char go[MAX_CLIENTS];
		size_t ngo = (size_t)nclients & (MAX_CLIENTS * 2 - 1);
		memset(go, 'g', sizeof(go));
		if (ngo > sizeof(go) ||
		    write(go_pipe[1], go, ngo) != (ssize_t)ngo)
			timed_out = 1;
	}
	if (timed_out) {
		for (int i = 0; i < nclients; i++)
			kill(pids[i], SIGKILL);
	}
	close(go_pipe[1]);
	for (int i = 0; i < nclients; i++) {
		int st;
		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) &&
		    !SLOTS[i].failed) {
			SLOTS[i].failed = 1;
			snprintf(SLOTS[i].err, sizeof(SLOTS[i].err),
				 timed_out ? "client %d did not connect within "
				 "180 s" : "client %d died (status %d)", i, st);
		}
	}

	/* aggregate */
	uint64_t ops = 0, bytes = 0, checked = 0, tend = t0, nlat = 0;
	const char *err = NULL;
	int nfailed = 0;
	for (int i = 0; i < nclients; i++) {
		struct slot *s = &SLOTS[i];
		ops += s->ops;
		bytes += s->bytes;
		checked += s->checked;
		if (s->t_end > tend)
			tend = s->t_end;
		if (s->failed) {
			nfailed++;
			if (err == NULL)
				err = s->err;
		}
	}
	for (int i = 0; i < nclients; i++)
		nlat += SLOTS[i].nlat;
	uint64_t *all = malloc(sizeof(uint64_t) * (nlat ? nlat : 1));
	size_t k = 0;
	for (int i = 0; i < nclients; i++) {
		memcpy(all + k, LATS + (size_t)i * LAT_CAP,
		       sizeof(uint64_t) * SLOTS[i].nlat);
		k += SLOTS[i].nlat;
	}
	qsort(all, nlat, sizeof(uint64_t), cmp_u64);
	double secs = (double)(tend - t0) / 1e9;
	double p50 = nlat ? all[(size_t)((nlat - 1) * 0.50)] / 1e3 : 0;
	double p99 = nlat ? all[(size_t)((nlat - 1) * 0.99)] / 1e3 : 0;
	double pmax = nlat ? all[nlat - 1] / 1e3 : 0;
	double mean = 0;
	for (size_t j = 0; j < nlat; j++)
		mean += (double)all[j];
	mean = nlat ? mean / (double)nlat / 1e3 : 0;
	free(all);

	printf("{\"mode\": ");
	json_str(O.mode);
	printf(", \"clients\": %d, \"ops\": %" PRIu64 ", \"bytes\": %" PRIu64
	       ", \"checked_bytes\": %" PRIu64 ", \"seconds\": %.6f"
	       ", \"mbps\": %.3f, \"iops\": %.2f"
	       ", \"lat_p50_us\": %.1f, \"lat_p99_us\": %.1f"
	       ", \"lat_max_us\": %.1f, \"lat_mean_us\": %.1f"
	       ", \"lat_samples\": %" PRIu64 ", \"failed_clients\": %d"
	       ", \"t_start\": %.6f, \"t_end\": %.6f"
	       ", \"ok\": %s",
	       nclients, ops, bytes, checked, secs,
	       secs > 0 ? (double)bytes / secs / 1e6 : 0.0,
	       secs > 0 ? (double)ops / secs : 0.0, p50, p99, pmax, mean,
	       nlat, nfailed, (double)t0 / 1e9, (double)tend / 1e9,
	       (nfailed == 0 && ops > 0) ? "true" : "false");
	if (err != NULL) {
		printf(", \"error\": ");
		json_str(err);
	} else if (ops == 0) {
		printf(", \"error\": \"no request completed\"");
	}
	printf("}\n");
	fflush(stdout);
	return (nfailed == 0 && ops > 0) ? 0 : 1;
}

static int do_probe(void)
{
	struct slot s;
	memset(&s, 0, sizeof(s));
	SMBCCTX *ctx = new_ctx(&s);
	int ok = 0;
	if (ctx != NULL) {
		SMBCFILE *d = smbc_getFunctionOpendir(ctx)(ctx, O.url);
		if (d == NULL) {
			fail(&s, "%s: %s", O.url, strerror(errno));
		} else {
			smbc_getFunctionReaddir(ctx)(ctx, d);
			smbc_getFunctionClosedir(ctx)(ctx, d);
			ok = 1;
		}
	}
	printf("{\"mode\": \"probe\", \"ok\": %s", ok ? "true" : "false");
	if (!ok) {
		printf(", \"error\": ");
		json_str(s.err);
	}
	printf("}\n");
	fflush(stdout);
	return ok ? 0 : 1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: smbload probe|seqread|seqwrite|randread|multiread|"
		"multiwrite|smallread --url URL [--port N] [--user U] "
		"[--pass P] [--bs N] [--size N] [--seed N] [--seconds S] "
		"[--clients N] [--region N] [--files N] [--fsize N] "
		"[--samples N] [--linger S] [--timeout S]\n");
	_exit(2);
}

static uint64_t num(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno != 0 || end == s) {
		fprintf(stderr, "smbload: bad number '%s'\n", s);
		_exit(2);
	}
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end != '\0') {
		fprintf(stderr, "smbload: bad number '%s'\n", s);
		_exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	O.mode = argv[1];
	O.user = getenv("SMB_USER");
	O.pass = getenv("SMB_PASS");
	O.bs = 65536;
	O.seed = 1;
	O.clients = 1;
	O.region = 8 << 20;
	O.files = 1000;
	O.fsize = 4096;
	O.samples = 1024;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		if (!strcmp(a, "--url")) O.url = v;
		else if (!strcmp(a, "--user")) O.user = v;
		else if (!strcmp(a, "--pass")) O.pass = v;
		else if (!strcmp(a, "--port")) O.port = (int)num(v);
		else if (!strcmp(a, "--bs")) O.bs = num(v);
		else if (!strcmp(a, "--size")) O.size = num(v);
		else if (!strcmp(a, "--seed")) O.seed = num(v);
		else if (!strcmp(a, "--seconds")) O.seconds = atof(v);
		else if (!strcmp(a, "--clients")) O.clients = (int)num(v);
		else if (!strcmp(a, "--region")) O.region = num(v);
		else if (!strcmp(a, "--files")) O.files = (int)num(v);
		else if (!strcmp(a, "--fsize")) O.fsize = num(v);
		else if (!strcmp(a, "--samples")) O.samples = (int)num(v);
		else if (!strcmp(a, "--linger")) O.linger = atof(v);
		else if (!strcmp(a, "--timeout")) O.timeout = atof(v);
		else usage();
	}
	if (O.url == NULL || O.user == NULL || O.pass == NULL) {
		fprintf(stderr, "smbload: --url, --user and --pass (or "
			"$SMB_USER/$SMB_PASS) are needed\n");
		return 2;
	}
	if (O.clients < 1 || O.clients > MAX_CLIENTS || O.bs == 0 ||
	    O.files < 1 || O.region < O.bs) {
		fprintf(stderr, "smbload: bad --clients/--bs/--files/--region\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);

	if (!strcmp(O.mode, "probe"))
		return do_probe();
	if (!strcmp(O.mode, "seqread"))
		return run_clients(w_seqread, 1);
	if (!strcmp(O.mode, "seqwrite"))
		return run_clients(w_seqwrite, 1);
	if (!strcmp(O.mode, "multiread"))
		return run_clients(w_multiread, O.clients);
	if ((!strcmp(O.mode, "randread") || !strcmp(O.mode, "multiwrite") ||
	     !strcmp(O.mode, "smallread")) && O.seconds <= 0) {
		fprintf(stderr, "smbload: %s needs --seconds\n", O.mode);
		return 2;
	}
	if (!strcmp(O.mode, "randread")) {
		if (O.size < O.bs) {
			fprintf(stderr, "smbload: randread needs --size\n");
			return 2;
		}
		return run_clients(w_randread, O.clients);
	}
	if (!strcmp(O.mode, "multiwrite"))
		return run_clients(w_multiwrite, O.clients);
	if (!strcmp(O.mode, "smallread"))
		return run_clients(w_smallread, O.clients);
	usage();
	return 2;
}
