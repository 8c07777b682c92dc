/*
 * patfile: local side of the glusterfs2 benchmark suite's data checks.
 * Writes and checks files in the data pattern of pattern.h (each byte a
 * function of a seed and its offset), and checks a stream that smbclient
 * writes into a FIFO (pipelined reads through `smbclient -c get`).
 *
 *   patfile make PATH SIZE SEED          write PATH (truncated)
 *   patfile check PATH SIZE SEED [all]   check the size and 64 sampled
 *                                        blocks (or every byte with 'all');
 *                                        exit 0 if good
 *   patfile makeset DIR COUNT FSIZE SEED write DIR/f%04d.dat, i < COUNT,
 *                                        seed SEED+i
 *   patfile checkset DIR COUNT FSIZE SEED check those files (every byte)
 *   patfile stream PATH SIZE SEED        read PATH (a FIFO) to its end,
 *                                        check every byte, time it
 *                                        (t_start, t_end: CLOCK_MONOTONIC
 *                                        seconds of the open and of EOF)
 *   patfile now                          print CLOCK_MONOTONIC seconds (the
 *                                        marks around smbclient's put,
 *                                        run from its `!` command)
 *
 * check, checkset and stream print one JSON object; exit 0 if good.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"

#define BUFSZ (1u << 20)

static uint64_t num(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0') {
		fprintf(stderr, "patfile: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static ssize_t read_full(int fd, uint8_t *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int make(const char *path, uint64_t size, uint64_t seed, uint8_t *buf)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "patfile: %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (uint64_t off = 0; off < size;) {
		size_t n = size - off < BUFSZ ? (size_t)(size - off) : BUFSZ;
		pat_fill(buf, off, n, seed);
		if (write_all(fd, buf, n) != 0) {
			fprintf(stderr, "patfile: write %s: %s\n", path,
				strerror(errno));
			close(fd);
			return 1;
		}
		off += n;
	}
	if (close(fd) != 0) {
		fprintf(stderr, "patfile: close %s: %s\n", path,
			strerror(errno));
		return 1;
	}
	return 0;
}

/* 0 if good, else fills err */
static int check(const char *path, uint64_t size, uint64_t seed, int all,
		 uint8_t *buf, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	int rc = 1;
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return 1;
	}
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != size) {
		snprintf(err, errlen, "%s: size %jd, expected %" PRIu64, path,
			 (intmax_t)st.st_size, size);
		goto out;
	}
	uint64_t nblk = (size + BUFSZ - 1) / BUFSZ;
	uint64_t step = all || nblk <= 64 ? 1 : nblk / 64;
	for (uint64_t b = 0; b < nblk; b += step) {
		uint64_t off = b * BUFSZ;
		size_t n = size - off < BUFSZ ? (size_t)(size - off) : BUFSZ;
		if (pread(fd, buf, n, (off_t)off) != (ssize_t)n) {
			snprintf(err, errlen, "%s: short read at %" PRIu64,
				 path, off);
			goto out;
		}
		int64_t bad = pat_check(buf, off, n, seed);
		if (bad >= 0) {
			snprintf(err, errlen, "%s: wrong data at offset %"
				 PRId64, path, bad);
			goto out;
		}
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

static int result(int ok, const char *err, const char *extra)
{
	printf("{\"ok\": %s%s", ok ? "true" : "false", extra ? extra : "");
	if (!ok) {
		printf(", \"error\": \"");
		for (const char *s = err; *s; s++) {
			if (*s == '"' || *s == '\\')
				putchar('\\');
			putchar((unsigned char)*s < 0x20 ? ' ' : *s);
		}
		printf("\"");
	}
	printf("}\n");
	return ok ? 0 : 1;
}

static int stream(const char *path, uint64_t size, uint64_t seed, uint8_t *buf)
{
	char err[512] = "";
	char extra[384];
	int fd = open(path, O_RDONLY);	/* blocks until the writer opens */
	if (fd < 0) {
		snprintf(err, sizeof(err), "%s: %s", path, strerror(errno));
		return result(0, err, NULL);
	}
#ifdef F_SETPIPE_SZ
	fcntl(fd, F_SETPIPE_SZ, 1 << 20);
#endif
	double t0 = now();
	uint64_t off = 0;
	int ok = 1;
	for (;;) {
		ssize_t n = read_full(fd, buf, BUFSZ);
		if (n < 0) {
			snprintf(err, sizeof(err), "read %s: %s", path,
				 strerror(errno));
			ok = 0;
			break;
		}
		if (n == 0)
			break;
		int64_t bad = pat_check(buf, off, (size_t)n, seed);
		if (bad >= 0) {
			snprintf(err, sizeof(err), "wrong data at offset %"
				 PRId64, bad);
			ok = 0;
			break;
		}
		off += (uint64_t)n;
	}
	double t1 = now(), secs = t1 - t0;
	if (ok && off != size) {
		snprintf(err, sizeof(err), "got %" PRIu64 " bytes, expected %"
			 PRIu64, off, size);
		ok = 0;
	}
	/* drain, so that the writer is never stuck on a full pipe */
	while (read(fd, buf, BUFSZ) > 0)
		;
	close(fd);
	snprintf(extra, sizeof(extra), ", \"bytes\": %" PRIu64
		 ", \"checked_bytes\": %" PRIu64 ", \"seconds\": %.6f"
		 ", \"mbps\": %.3f, \"t_start\": %.6f, \"t_end\": %.6f",
		 off, ok ? off : 0, secs,
		 secs > 0 ? (double)off / secs / 1e6 : 0.0, t0, t1);
	return result(ok, err, extra);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "now")) {
		printf("%.6f\n", now());
		return 0;
	}
	if (argc < 5) {
		fprintf(stderr, "usage: patfile make|check|makeset|checkset|"
			"stream PATH SIZE|COUNT [FSIZE] SEED, or now\n");
		return 2;
	}
	uint8_t *buf = malloc(BUFSZ);
	char err[512] = "";
	if (buf == NULL)
		return 3;
	const char *cmd = argv[1], *path = argv[2];
	if (!strcmp(cmd, "make"))
		return make(path, num(argv[3]), num(argv[4]), buf);
	if (!strcmp(cmd, "check")) {
		int all = argc > 5 && !strcmp(argv[5], "all");
		int rc = check(path, num(argv[3]), num(argv[4]), all, buf, err,
			       sizeof(err));
		return result(rc == 0, err, NULL);
	}
	if (!strcmp(cmd, "stream"))
		return stream(path, num(argv[3]), num(argv[4]), buf);
	if (argc < 6) {
		fprintf(stderr, "patfile: %s DIR COUNT FSIZE SEED\n", cmd);
		return 2;
	}
	uint64_t count = num(argv[3]), fsize = num(argv[4]), seed = num(argv[5]);
	char name[4096];
	if (!strcmp(cmd, "makeset")) {
		for (uint64_t i = 0; i < count; i++) {
			snprintf(name, sizeof(name), "%s/f%04" PRIu64 ".dat",
				 path, i);
			if (make(name, fsize, seed + i, buf) != 0)
				return 1;
		}
		return 0;
	}
	if (!strcmp(cmd, "checkset")) {
		char extra[64];
		for (uint64_t i = 0; i < count; i++) {
			snprintf(name, sizeof(name), "%s/f%04" PRIu64 ".dat",
				 path, i);
			if (check(name, fsize, seed + i, 1, buf, err,
				  sizeof(err)) != 0)
				return result(0, err, NULL);
		}
		snprintf(extra, sizeof(extra), ", \"files\": %" PRIu64
			 ", \"checked_bytes\": %" PRIu64, count, count * fsize);
		return result(1, err, extra);
	}
	fprintf(stderr, "patfile: unknown command '%s'\n", cmd);
	return 2;
}
