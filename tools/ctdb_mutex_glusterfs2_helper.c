/*
 * ctdb_mutex_glusterfs2_helper: a CTDB cluster lock (mutex helper) held
 * through libgfapi on a file in a Gluster volume, without a FUSE mount.
 *
 *   cluster lock = !/usr/libexec/glusterfs2/ctdb_mutex_glusterfs2_helper
 *                    SERVERS VOLUME PATH [RECHECK_SECS [LOGFILE]]
 *
 * SERVERS is a comma-separated list of volfile servers (host or
 * host:port, port 24007 by default), PATH the lock file inside VOLUME
 * (created if missing).
 *
 * CTDB's mutex helper protocol (ctdb/server/ctdb_cluster_mutex.c): the
 * helper writes one byte to stdout, '0' when it holds the lock, '1' when
 * another holder has it, '3' on any error; ctdbd answers '2' itself when
 * the helper takes too long.  After '0' the helper keeps the lock for as
 * long as it runs: ctdbd releases it with SIGTERM, and the helper's exit
 * tells ctdbd that the lock is lost.  So the helper exits when
 *   - it gets SIGTERM or SIGINT (the lock is released first),
 *   - its parent (ctdbd) is gone,
 *   - the lock is lost: every RECHECK_SECS (default 5, 0 = never) it
 *     checks that PATH still names the file it locked and takes the same
 *     lock again; a removed or replaced file, a lock now held by somebody
 *     else (a brick's locks-revocation) or a volume that no longer answers
 *     ends it, with the reason on stderr.  A check still unanswered
 *     after RECHECK_SECS counts as lost too: gfapi calls block until
 *     Gluster's ping timeout (42 s by default) during a partition or on a
 *     hung brick, while the bricks may already give the lock to another
 *     node's helper.  A watchdog thread ends the helper then, and
 *     likewise when the release after SIGTERM is not answered in time.
 *
 * Copyright (C) glusterfs2 authors
 * GNU GPL version 3 or later.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glusterfs/api/glfs.h>

#define GF2_MUTEX_DEFAULT_RECHECK 5
#define GF2_MUTEX_MAX_RECHECK 3600
#define GF2_MUTEX_GLUSTERD_PORT 24007

static const char *progname = "ctdb_mutex_glusterfs2_helper";
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

/*
 * The watchdog.  The main thread sets call_since (a CLOCK_MONOTONIC
 * second, 0 outside) around every Gluster call it makes while holding
 * the lock, and call_what to what it is doing; the watchdog ends the
 * process when a call has run for longer than call_bound seconds.
 */
static _Atomic long call_since;
static const char *_Atomic call_what;
static long call_bound;

static long mono_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec;
}

static void call_begin(const char *what)
{
	atomic_store(&call_what, what);
	atomic_store(&call_since, mono_secs());
}

static void call_end(void)
{
	atomic_store(&call_since, 0);
}

static void *watchdog(void *arg)
{
	for (;;) {
		long since = atomic_load(&call_since);
		const char *what = atomic_load(&call_what);

		if (since != 0 && mono_secs() - since > call_bound) {
			fprintf(stderr, "%s: %s - not answered within %ld s\n",
				progname, what != NULL ? what : "call",
				call_bound);
			_exit(1);
		}
		sleep(1);
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr,
		"Usage: %s SERVERS VOLUME PATH [RECHECK_SECS [LOGFILE]]\n"
		"  SERVERS: volfile servers, host[:port][,host[:port]...]\n"
		"  RECHECK_SECS: 0 to %d, default %d (0: no recheck)\n",
		progname, GF2_MUTEX_MAX_RECHECK, GF2_MUTEX_DEFAULT_RECHECK);
}

static bool parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end = NULL;
	unsigned long v;

	if (s == NULL || *s == '\0' || *s == '-' || *s == '+') {
		return false;
	}
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v > max) {
		return false;
	}
	*out = v;
	return true;
}

/*
 * Adds every server of "host[:port],host[:port]" to fs.  Returns false
 * (with a message) for an empty or malformed list.
 */
static bool add_servers(glfs_t *fs, const char *list)
{
	char *copy, *tok, *save = NULL;
	int n = 0;

	copy = strdup(list);
	if (copy == NULL) {
		fprintf(stderr, "%s: out of memory\n", progname);
		return false;
	}
	for (tok = strtok_r(copy, ",", &save);
	     tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned long port = GF2_MUTEX_GLUSTERD_PORT;
		char *colon = strrchr(tok, ':');

		if (colon != NULL && strchr(tok, ']') == NULL &&
		    colon == strchr(tok, ':')) {
			*colon = '\0';
			if (!parse_uint(colon + 1, 65535, &port) || port == 0) {
				fprintf(stderr, "%s: bad port in server '%s:%s'\n",
					progname, tok, colon + 1);
				free(copy);
				return false;
			}
		}
		if (*tok == '\0') {
			fprintf(stderr, "%s: empty server name in '%s'\n",
				progname, list);
			free(copy);
			return false;
		}
		if (glfs_set_volfile_server(fs, "tcp", tok, (int)port) != 0) {
			fprintf(stderr, "%s: volfile server '%s': %s\n",
				progname, tok, strerror(errno));
			free(copy);
			return false;
		}
		n++;
	}
	free(copy);
	if (n == 0) {
		fprintf(stderr, "%s: no volfile server given\n", progname);
		return false;
	}
	return true;
}

static int lock_byte0(glfs_fd_t *fd)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = 0,
		.l_len = 1,
	};

	if (glfs_posix_lock(fd, F_SETLK, &fl) != 0) {
		return errno;
	}
	return 0;
}

static void unlock_byte0(glfs_fd_t *fd)
{
	struct flock fl = {
		.l_type = F_UNLCK,
		.l_whence = SEEK_SET,
		.l_start = 0,
		.l_len = 1,
	};

	(void)glfs_posix_lock(fd, F_SETLK, &fl);
}

/*
 * Is the lock still ours?  Returns NULL if so, else why not.
 */
static const char *lock_check(glfs_t *fs, glfs_fd_t *fd, const char *path,
			      char *buf, size_t buflen)
{
	struct stat held, named;
	int ret;

	if (glfs_fstat(fd, &held) != 0) {
		snprintf(buf, buflen, "lock file check failed (%s)",
			 strerror(errno));
		return buf;
	}
	if (glfs_stat(fs, path, &named) != 0) {
		snprintf(buf, buflen, "lock file \"%s\" is gone (%s)", path,
			 strerror(errno));
		return buf;
	}
	if (held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
		snprintf(buf, buflen, "lock file \"%s\" was replaced", path);
		return buf;
	}
	/*
	 * Taking a lock we hold again succeeds for the same owner; it fails
	 * if the bricks gave the range to somebody else meanwhile.
	 */
	ret = lock_byte0(fd);
	if (ret != 0) {
		snprintf(buf, buflen, "lock on \"%s\" no longer held (%s)",
			 path, strerror(ret));
		return buf;
	}
	return NULL;
}

static bool parent_gone(pid_t ppid)
{
	if (getppid() != ppid) {
		return true;
	}
	return kill(ppid, 0) == -1 && errno == ESRCH;
}

static void answer(char c)
{
	ssize_t n;

	do {
		n = write(STDOUT_FILENO, &c, 1);
	} while (n == -1 && errno == EINTR);
}

int main(int argc, char *argv[])
{
	const char *servers, *volume, *path, *logfile = NULL;
	unsigned long recheck = GF2_MUTEX_DEFAULT_RECHECK;
	struct sigaction sa = { .sa_handler = on_stop_signal };
	char owner[64], why[PATH_MAX + 128];
	const char *lost = NULL;
	glfs_t *fs = NULL;
	glfs_fd_t *fd = NULL;
	time_t next_check;
	pthread_t dog;
	pid_t ppid;
	int ret;

	if (argc > 0 && argv[0] != NULL) {
		const char *slash = strrchr(argv[0], '/');
		progname = slash != NULL ? slash + 1 : argv[0];
	}
	if (argc < 4 || argc > 6) {
		usage();
		answer('3');
		return 1;
	}
	servers = argv[1];
	volume = argv[2];
	path = argv[3];
	if (argc >= 5 && !parse_uint(argv[4], GF2_MUTEX_MAX_RECHECK, &recheck)) {
		fprintf(stderr, "%s: bad RECHECK_SECS '%s'\n", progname, argv[4]);
		usage();
		answer('3');
		return 1;
	}
	if (argc >= 6) {
		logfile = argv[5];
	}
	if (*volume == '\0' || *path != '/') {
		fprintf(stderr, "%s: VOLUME must be named and PATH absolute "
			"inside it (got '%s' '%s')\n", progname, volume, path);
		answer('3');
		return 1;
	}

	ppid = getppid();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	fs = glfs_new(volume);
	if (fs == NULL) {
		fprintf(stderr, "%s: glfs_new(%s): %s\n", progname, volume,
			strerror(errno));
		answer('3');
		return 1;
	}
	if (!add_servers(fs, servers)) {
		answer('3');
		glfs_fini(fs);
		return 1;
	}
	/*
	 * The recheck must see another client's unlink or rename of the
	 * lock file at once, not md-cache's copy of the old lookup.
	 */
	if (glfs_set_xlator_option(fs, "*-md-cache", "md-cache-timeout",
				   "0") != 0) {
		fprintf(stderr, "%s: cannot turn off md-cache: %s\n",
			progname, strerror(errno));
	}
	if (logfile != NULL) {
		(void)glfs_set_logging(fs, logfile, 7);
	}
	if (glfs_init(fs) != 0) {
		fprintf(stderr, "%s: cannot reach volume '%s' at '%s': %s\n",
			progname, volume, servers, strerror(errno));
		answer('3');
		glfs_fini(fs);
		return 1;
	}

	fd = glfs_creat(fs, path, O_RDWR, 0600);
	if (fd == NULL) {
		fprintf(stderr, "%s: cannot open lock file \"%s\" on %s: %s\n",
			progname, path, volume, strerror(errno));
		answer('3');
		glfs_fini(fs);
		return 1;
	}
	/* one owner per helper process, whatever the host */
	gethostname(owner, sizeof(owner) - 24);
	owner[sizeof(owner) - 24] = '\0';
	snprintf(owner + strlen(owner), 24, ":%ld", (long)getpid());
	if (glfs_fd_set_lkowner(fd, owner, (int)strlen(owner)) != 0) {
		fprintf(stderr, "%s: cannot set the lock owner: %s\n",
			progname, strerror(errno));
		answer('3');
		glfs_close(fd);
		glfs_fini(fs);
		return 1;
	}

	ret = lock_byte0(fd);
	if (ret == EAGAIN || ret == EACCES) {
		/* contention: somebody else holds it, say nothing more */
		answer('1');
		glfs_close(fd);
		glfs_fini(fs);
		return 0;
	}
	if (ret != 0) {
		fprintf(stderr, "%s: cannot lock \"%s\" on %s: %s\n",
			progname, path, volume, strerror(ret));
		answer('3');
		glfs_close(fd);
		glfs_fini(fs);
		return 1;
	}
	answer('0');

	call_bound = recheck != 0 ? (long)recheck :
		GF2_MUTEX_DEFAULT_RECHECK;
	ret = pthread_create(&dog, NULL, watchdog, NULL);
	if (ret != 0) {
		fprintf(stderr, "%s: cannot start the watchdog: %s\n",
			progname, strerror(ret));
		_exit(1);
	}

	next_check = time(NULL) + (time_t)recheck;
	while (stop_signal == 0) {
		sleep(1);
		if (stop_signal != 0) {
			break;
		}
		if (parent_gone(ppid)) {
			fprintf(stderr, "%s: parent %ld gone, releasing\n",
				progname, (long)ppid);
			break;
		}
		if (recheck == 0 || time(NULL) < next_check) {
			continue;
		}
		call_begin("lock lost - lock check");
		lost = lock_check(fs, fd, path, why, sizeof(why));
		call_end();
		if (lost != NULL) {
			fprintf(stderr, "%s: lock lost - %s\n", progname, lost);
			break;
		}
		next_check = time(NULL) + (time_t)recheck;
	}

	if (lost != NULL) {
		/*
		 * Nothing to release, and a volume in trouble can keep
		 * glfs_fini waiting: the exit is what ctdbd must see, now.
		 */
		_exit(1);
	}
	/*
	 * The unlock is synchronous; the exit closes the connection, which
	 * releases the lock on the bricks too if the unlock does not come
	 * back in time.
	 */
	call_begin("release");
	unlock_byte0(fd);
	glfs_close(fd);
	call_end();
	_exit(0);
}
