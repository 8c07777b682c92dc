/*
 * mdfloor: the small-file workload of test/bench/run (create, list, read
 * and delete N files of SIZE bytes in a new directory) done with libgfapi
 * directly, making only the Gluster calls that any SMB server on gfapi
 * needs for each step.  Its times are the floor under what a VFS module
 * can reach on the same volume: what is left is the cost of Gluster's own
 * round trips, not of smbd or the module.
 *
 * Per file, one file at a time (as smbclient mput/mget/deltree go):
 *   create  lstat of the new name (does it exist?), creat, fsetxattr of
 *           the DOS attributes, write, close
 *   list    readdirplus of the directory, and listxattr of every entry
 *           (smbd's EA size of each entry) by THREADS threads at once;
 *           "list-noea" is the listing alone (a share with
 *           `ea support = no`); "relist" the same listing again
 *   read    the listing as above (mget expands its wildcard with one),
 *           then per file open, read, close (data checked against what
 *           create wrote)
 *   delete  the listing as above (deltree), then unlink of every entry,
 *           and rmdir
 *
 * Usage: mdfloor VOLUME HOST DIR NFILES SIZE THREADS [LOGFILE]
 * Prints one line per step: "step SECONDS".  Exit status 1 on any error
 * (printed), so a wrong answer is never timed as a right one.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <glusterfs/api/glfs.h>

static glfs_t *fs;
static const char *dir;
static unsigned nfiles;
static size_t fsize;
static unsigned nthreads;

static unsigned next_job;
static unsigned failures;
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char *what, const char *path)
{
	fprintf(stderr, "mdfloor: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void file_path(char *buf, size_t len, unsigned i)
{
	snprintf(buf, len, "%s/f%04u.dat", dir, i);
}

static void fill(uint8_t *buf, unsigned i)
{
	size_t k;

	for (k = 0; k < fsize; k++) {
		buf[k] = (uint8_t)(i * 131 + k * 7);
	}
}

static void step_create(uint8_t *buf)
{
	/* DOS attributes as smbd writes them for a new archive file */
	static const uint8_t dosattrib[24] = { 0x04, 0x00, 0x04, 0x00,
					       0x04, 0x00, 0x20 };
	char path[4096];
	struct stat st;
	unsigned i;

	for (i = 0; i < nfiles; i++) {
		glfs_fd_t *fd = NULL;

		file_path(path, sizeof(path), i);
		if (glfs_lstat(fs, path, &st) == 0 || errno != ENOENT) {
			fail("lstat (expected ENOENT)", path);
		}
		fd = glfs_creat(fs, path, O_CREAT | O_EXCL | O_RDWR, 0644);
		if (fd == NULL) {
			fail("creat", path);
		}
		if (glfs_fsetxattr(fd, "user.DOSATTRIB", dosattrib,
				   sizeof(dosattrib), 0) != 0) {
			fail("fsetxattr", path);
		}
		fill(buf, i);
		if (glfs_write(fd, buf, fsize, 0) != (ssize_t)fsize) {
			fail("write", path);
		}
		if (glfs_close(fd) != 0) {
			fail("close", path);
		}
	}
}

static unsigned list_dir(char ***pnames)
{
	char **names = calloc(nfiles + 2, sizeof(char *));
	glfs_fd_t *d = glfs_opendir(fs, dir);
	unsigned n = 0;

	if (names == NULL || d == NULL) {
		fail("opendir", dir);
	}
	for (;;) {
		struct dirent de;
		struct dirent *res = NULL;
		struct stat st;

		if (glfs_readdirplus_r(d, &st, &de, &res) != 0) {
			fail("readdirplus", dir);
		}
		if (res == NULL) {
			break;
		}
		if (strcmp(de.d_name, ".") == 0 ||
		    strcmp(de.d_name, "..") == 0) {
			continue;
		}
		if (n == nfiles || !S_ISREG(st.st_mode) ||
		    (size_t)st.st_size != fsize) {
			errno = EINVAL;
			fail("unexpected entry", de.d_name);
		}
		names[n++] = strdup(de.d_name);
	}
	glfs_closedir(d);
	if (n != nfiles) {
		errno = ENOENT;
		fail("listing is short", dir);
	}
	*pnames = names;
	return n;
}

static char **listed;

static void *listxattr_worker(void *arg)
{
	char buf[65536];
	char path[4096];

	(void)arg;
	for (;;) {
		unsigned i;

		pthread_mutex_lock(&job_lock);
		i = next_job++;
		pthread_mutex_unlock(&job_lock);
		if (i >= nfiles) {
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, listed[i]);
		if (glfs_llistxattr(fs, path, buf, sizeof(buf)) < 0) {
			fprintf(stderr, "mdfloor: listxattr %s: %s\n", path,
				strerror(errno));
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

/* A listing as smbd makes it: readdirplus, and with_ea the EA lists. */
static unsigned list_entries(bool with_ea, char ***pnames)
{
	pthread_t tids[64];
	unsigned n = list_dir(&listed);
	unsigned i;

	failures = 0;
	if (with_ea) {
		next_job = 0;
		for (i = 0; i < nthreads; i++) {
			if (pthread_create(&tids[i], NULL, listxattr_worker,
					   NULL) != 0) {
				fail("pthread_create", "");
			}
		}
		for (i = 0; i < nthreads; i++) {
			pthread_join(tids[i], NULL);
		}
		if (failures > 0) {
			exit(1);
		}
	}
	*pnames = listed;
	listed = NULL;
	return n;
}

static void free_names(char **names, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		free(names[i]);
	}
	free(names);
}

static void step_list(bool with_ea)
{
	char **names = NULL;
	unsigned n = list_entries(with_ea, &names);

	free_names(names, n);
}

static void step_read(uint8_t *buf, uint8_t *want)
{
	char path[4096];
	unsigned i;

	step_list(true);	/* mget's wildcard */
	for (i = 0; i < nfiles; i++) {
		glfs_fd_t *fd = NULL;

		file_path(path, sizeof(path), i);
		fd = glfs_open(fs, path, O_RDONLY);
		if (fd == NULL) {
			fail("open", path);
		}
		if (glfs_read(fd, buf, fsize + 1, 0) != (ssize_t)fsize) {
			fail("read", path);
		}
		fill(want, i);
		if (memcmp(buf, want, fsize) != 0) {
			errno = EIO;
			fail("data differs", path);
		}
		if (glfs_close(fd) != 0) {
			fail("close", path);
		}
	}
}

static void step_delete(void)
{
	char **names = NULL;
	char path[4096];
	unsigned n = list_entries(true, &names);
	unsigned i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (glfs_unlink(fs, path) != 0) {
			fail("unlink", path);
		}
	}
	free_names(names, n);
	if (glfs_rmdir(fs, dir) != 0) {
		fail("rmdir", dir);
	}
}

int main(int argc, char **argv)
{
	uint8_t *buf = NULL;
	uint8_t *want = NULL;
	double t;

	if (argc < 7 || argc > 8) {
		fprintf(stderr, "usage: mdfloor VOLUME HOST DIR NFILES SIZE "
			"THREADS [LOGFILE]\n");
		return 2;
	}
	dir = argv[3];
	nfiles = strtoul(argv[4], NULL, 10);
	fsize = strtoul(argv[5], NULL, 10);
	nthreads = strtoul(argv[6], NULL, 10);
	if (dir[0] != '/' || nfiles == 0 || nfiles > 100000 || fsize == 0 ||
	    fsize > (1 << 20) || nthreads == 0 || nthreads > 64) {
		fprintf(stderr, "mdfloor: DIR must be absolute, NFILES 1-100000,"
			" SIZE 1-1048576, THREADS 1-64\n");
		return 2;
	}
	buf = malloc(fsize + 1);
	want = malloc(fsize);
	fs = glfs_new(argv[1]);
	if (buf == NULL || want == NULL || fs == NULL ||
	    glfs_set_volfile_server(fs, "tcp", argv[2], 24007) != 0 ||
	    glfs_set_logging(fs, argc == 8 ? argv[7] : "/dev/null", 4) != 0 ||
	    glfs_init(fs) != 0) {
		fail("connecting to volume", argv[1]);
	}
	if (glfs_mkdir(fs, dir, 0755) != 0) {
		fail("mkdir", dir);
	}

	t = now();
	step_create(buf);
	printf("create %.4f\n", now() - t);
	t = now();
	step_list(false);
	printf("list-noea %.4f\n", now() - t);
	t = now();
	step_list(true);
	printf("list %.4f\n", now() - t);
	t = now();
	step_list(true);	/* gfapi keeps no xattr lists */
	printf("relist %.4f\n", now() - t);
	t = now();
	step_read(buf, want);
	printf("read %.4f\n", now() - t);
	t = now();
	step_delete();
	printf("delete %.4f\n", now() - t);
	fflush(stdout);
	/* glfs_fini of gluster 10.3 takes ~10 s: nothing is left to flush */
	_exit(0);
}
