/*
 * atcalls: what gfapi's *at calls (GFAPI_11.0: glfs_fstatat, glfs_openat,
 * glfs_mkdirat, ...) save against the path calls glusterfs2 makes, on a
 * file DEPTH directories below the volume's root.  Per round, N calls of
 * each: glfs_stat of the full path against glfs_fstatat of the name in an
 * open directory; glfs_open + glfs_close of the full path against
 * glfs_openat + glfs_close; and it checks that a directory made with
 * glfs_mkdirat and a file made with glfs_openat(O_CREAT) get the mode
 * asked for.  Prints per call the wall time and this process's CPU time
 * (gfapi's threads included), in microseconds.
 *
 * Usage: atcalls VOLUME HOST DEPTH N [ROUNDS]
 * Exit status 1 on any error.  Built only against a gfapi that has the
 * *at calls (wscript: HAVE_GFAPI_AT_CALLS).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <glusterfs/api/glfs.h>

static double wall_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return r.ru_utime.tv_sec + r.ru_stime.tv_sec +
	       (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

struct mark {
	double wall;
	double cpu;
};

static struct mark mark_now(void)
{
	struct mark m = { .wall = wall_now(), .cpu = cpu_now() };

	return m;
}

static void print_cost(const char *what, struct mark a, struct mark b, int n)
{
	printf(" %s %.0f us (cpu %.0f)", what, (b.wall - a.wall) / n * 1e6,
	       (b.cpu - a.cpu) / n * 1e6);
}

static bool fail(const char *what)
{
	fprintf(stderr, "atcalls: %s: %s\n", what, strerror(errno));
	return false;
}

static bool check_modes(glfs_t *fs, glfs_fd_t *dir, const char *dpath)
{
	char p[4096];
	struct stat st;
	glfs_fd_t *f = NULL;

	if (glfs_mkdirat(dir, "atcalls-dir", 0751) != 0) {
		return fail("glfs_mkdirat");
	}
	snprintf(p, sizeof(p), "%s/atcalls-dir", dpath);
	if (glfs_stat(fs, p, &st) != 0) {
		return fail("glfs_stat of the new directory");
	}
	printf("glfs_mkdirat mode 0751: %04o\n", st.st_mode & 07777);
	glfs_rmdir(fs, p);
	f = glfs_openat(dir, "atcalls-file", O_CREAT | O_EXCL | O_RDWR, 0640);
	if (f == NULL) {
		return fail("glfs_openat O_CREAT");
	}
	glfs_close(f);
	snprintf(p, sizeof(p), "%s/atcalls-file", dpath);
	if (glfs_stat(fs, p, &st) != 0) {
		return fail("glfs_stat of the new file");
	}
	printf("glfs_openat O_CREAT mode 0640: %04o\n", st.st_mode & 07777);
	glfs_unlink(fs, p);
	return true;
}

int main(int argc, char **argv)
{
	glfs_t *fs = NULL;
	glfs_fd_t *dir = NULL;
	glfs_fd_t *f = NULL;
	char dpath[4096] = "";
	char fpath[4200];
	struct stat st;
	int depth, n, rounds, i, r;

	if (argc < 5 || argc > 6) {
		fprintf(stderr, "usage: atcalls VOLUME HOST DEPTH N [ROUNDS]\n");
		return 2;
	}
	depth = atoi(argv[3]);
	n = atoi(argv[4]);
	rounds = argc > 5 ? atoi(argv[5]) : 3;
	if (depth < 0 || depth > 64 || n < 1 || rounds < 1) {
		fprintf(stderr, "atcalls: DEPTH 0-64, N and ROUNDS >= 1\n");
		return 2;
	}
	fs = glfs_new(argv[1]);
	if (fs == NULL ||
	    glfs_set_volfile_server(fs, "tcp", argv[2], 24007) != 0 ||
	    glfs_set_logging(fs, "/dev/null", 0) != 0 || glfs_init(fs) != 0) {
		fail("connecting to the volume");
		return 1;
	}
	for (i = 0; i < depth; i++) {
		strcat(dpath, i == 0 ? "/atcalls" : "/d");
		if (glfs_mkdir(fs, dpath, 0755) != 0 && errno != EEXIST) {
			fail("glfs_mkdir");
			return 1;
		}
	}
	snprintf(fpath, sizeof(fpath), "%s/f", dpath);
	f = glfs_creat(fs, fpath, O_RDWR, 0644);
	if (f == NULL) {
		fail("glfs_creat");
		return 1;
	}
	glfs_close(f);
	dir = glfs_open(fs, depth > 0 ? dpath : "/", O_RDONLY | O_DIRECTORY);
	if (dir == NULL) {
		fail("glfs_open of the directory");
		return 1;
	}
	if (!check_modes(fs, dir, dpath)) {
		return 1;
	}
	for (r = 0; r < rounds; r++) {
		struct mark m0, m1, m2, m3, m4;

		m0 = mark_now();
		for (i = 0; i < n; i++) {
			if (glfs_stat(fs, fpath, &st) != 0) {
				fail("glfs_stat");
				return 1;
			}
		}
		m1 = mark_now();
		for (i = 0; i < n; i++) {
			if (glfs_fstatat(dir, "f", &st, 0) != 0) {
				fail("glfs_fstatat");
				return 1;
			}
		}
		m2 = mark_now();
		for (i = 0; i < n; i++) {
			f = glfs_open(fs, fpath, O_RDONLY);
			if (f == NULL) {
				fail("glfs_open");
				return 1;
			}
			glfs_close(f);
		}
		m3 = mark_now();
		for (i = 0; i < n; i++) {
			f = glfs_openat(dir, "f", O_RDONLY, 0);
			if (f == NULL) {
				fail("glfs_openat");
				return 1;
			}
			glfs_close(f);
		}
		m4 = mark_now();
		printf("depth %d:", depth);
		print_cost("stat", m0, m1, n);
		print_cost("fstatat", m1, m2, n);
		print_cost("open+close", m2, m3, n);
		print_cost("openat+close", m3, m4, n);
		printf("\n");
	}
	glfs_close(dir);
	glfs_unlink(fs, fpath);
	glfs_fini(fs);
	return 0;
}
