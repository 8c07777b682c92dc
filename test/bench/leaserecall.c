/*
 * leaserecall: what a Gluster read lease (glfs_lease, GLFS_RD_LEASE) held
 * by a gfapi client tells it about other clients, measured on a volume
 * with features.leases on (the bricks restarted after setting it: the
 * leases translator does not take it live).
 *
 * For each thing a FUSE client does to the file -- take a write lock,
 * take a read lock, write a byte, truncate -- the file is opened through
 * gfapi under a fresh lease id and a read lease taken; a child process
 * then does the thing through the FUSE mount.  The parent waits up to 3 s
 * for the lease recall upcall, holds the lease HOLD_MS more, and gives it
 * back.  Printed per case, one JSON object a line: whether the lease was
 * granted, when the recall came, when the FUSE call returned (all in ms
 * since the child started), when the lease was given back, and for the
 * write lock whether gfapi's F_GETLK then sees it.  A FUSE call that
 * returns only after the lease was given back was held by the bricks
 * until then.
 *
 * Usage: leaserecall VOLUME HOST PATH FUSE_PATH [CASE]
 *        (PATH: the file in the volume; FUSE_PATH: the same file through
 *        a FUSE mount of the volume; both must exist; CASE 0-3: only that
 *        one.  After a recall the bricks refuse a new lease on the file
 *        for several seconds (EINVAL): a fresh file per case measures
 *        each at once.)
 * Exit status 1 on a gfapi error or when no lease is granted at all.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <glusterfs/api/glfs.h>

#define HOLD_MS 1000
#define RECALL_WAIT_MS 3000

static volatile int recalls;
static double t_recall;

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void upcall_cb(glfs_upcall_t *up, void *data)
{
	(void)data;
	if (glfs_upcall_get_reason(up) == GLFS_UPCALL_RECALL_LEASE &&
	    recalls++ == 0) {
		t_recall = now_ms();
	}
	glfs_free(up);
}

enum fuse_op { OP_WRLOCK, OP_RDLOCK, OP_WRITE, OP_TRUNCATE, OP_COUNT };
static const char *op_names[OP_COUNT] = {
	"write lock", "read lock", "write", "truncate"
};

/* the child: the FUSE client; writes its return time to fd wfd */
static void fuse_client(const char *path, enum fuse_op op, int wfd)
{
	struct flock fl = {
		.l_type = op == OP_RDLOCK ? F_RDLCK : F_WRLCK,
		.l_whence = SEEK_SET, .l_start = 0, .l_len = 4096,
	};
	double t;
	int fd, ret = -1;

	fd = open(path, O_RDWR);
	if (fd != -1) {
		switch (op) {
		case OP_WRLOCK:
		case OP_RDLOCK:
			ret = fcntl(fd, F_SETLK, &fl);
			break;
		case OP_WRITE:
			ret = pwrite(fd, "x", 1, 0) == 1 ? 0 : -1;
			break;
		default:
			ret = ftruncate(fd, 1 << 20);
			break;
		}
	}
	t = now_ms();
	if (write(wfd, &t, sizeof(t)) != sizeof(t) || ret != 0) {
		_exit(1);
	}
	/* a lock is held a while: the parent's F_GETLK must see it */
	usleep(HOLD_MS * 1000);
	_exit(0);
}

static bool take_lease(glfs_fd_t *fd, glfs_lease_t *l, int *err)
{
	int tries;

	/*
	 * refused (EPERM, EINVAL) for a while after a recall, while the
	 * other client's lock or open of the previous case goes away
	 */
	for (tries = 0; tries < 100; tries++) {
		l->cmd = GLFS_SET_LEASE;
		l->lease_type = GLFS_RD_LEASE;
		if (glfs_lease(fd, l, NULL, NULL) == 0) {
			return true;
		}
		*err = errno;
		if (errno != EPERM && errno != EAGAIN && errno != EINVAL) {
			return false;
		}
		usleep(100 * 1000);
	}
	return false;
}

int main(int argc, char **argv)
{
	glfs_t *fs;
	int granted = 0, op, first = 0, last = OP_COUNT - 1;

	if (argc == 6) {
		first = last = atoi(argv[5]);
	}
	if ((argc != 5 && argc != 6) || first < 0 || first >= OP_COUNT) {
		fprintf(stderr, "usage: leaserecall VOLUME HOST PATH "
			"FUSE_PATH [CASE 0-%d]\n", OP_COUNT - 1);
		return 2;
	}
	fs = glfs_new(argv[1]);
	if (fs == NULL || glfs_set_volfile_server(fs, "tcp", argv[2],
						  24007) != 0 ||
	    glfs_set_logging(fs, "/dev/null", 0) != 0 || glfs_init(fs) != 0) {
		fprintf(stderr, "leaserecall: volume %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	if (glfs_upcall_register(fs, GLFS_EVENT_RECALL_LEASE, upcall_cb,
				 NULL) <= 0) {
		fprintf(stderr, "leaserecall: upcall register: %s\n",
			strerror(errno));
		return 1;
	}
	srandom(getpid());
	for (op = first; op <= last; op++) {
		glfs_lease_t l = { 0 };
		glfs_fd_t *fd;
		double t0, t_fuse = -1, t_back = -1, end;
		int pipefd[2], err = 0, status = 0, i;
		bool have;
		pid_t pid;

		for (i = 0; i < GLFS_LEASE_ID_SIZE; i++) {
			l.lease_id[i] = random();
		}
		glfs_setfsleaseid(l.lease_id);
		fd = glfs_open(fs, argv[3], O_RDWR);
		if (fd == NULL) {
			fprintf(stderr, "leaserecall: open %s: %s\n", argv[3],
				strerror(errno));
			return 1;
		}
		have = take_lease(fd, &l, &err);
		granted += have;
		recalls = 0;
		if (pipe(pipefd) != 0) {
			return 1;
		}
		fflush(stdout);
		t0 = now_ms();
		pid = fork();
		if (pid == 0) {
			close(pipefd[0]);
			fuse_client(argv[4], op, pipefd[1]);
		}
		close(pipefd[1]);
		end = t0 + RECALL_WAIT_MS;
		while (have && recalls == 0 && now_ms() < end) {
			usleep(1000);
		}
		if (have) {
			if (recalls > 0) {
				usleep(HOLD_MS * 1000);
			}
			l.cmd = GLFS_UNLK_LEASE;
			if (glfs_lease(fd, &l, NULL, NULL) != 0) {
				fprintf(stderr, "leaserecall: unlock lease: "
					"%s\n", strerror(errno));
			}
			t_back = now_ms();
		}
		if (read(pipefd[0], &t_fuse, sizeof(t_fuse)) !=
		    sizeof(t_fuse)) {
			t_fuse = -1;
		}
		printf("{\"fuse\": \"%s\", \"lease\": \"%s\", "
		       "\"recall_ms\": %.1f, \"fuse_returned_ms\": %.1f, "
		       "\"lease_back_ms\": %.1f",
		       op_names[op], have ? "granted" : strerror(err),
		       recalls > 0 ? t_recall - t0 : -1.0,
		       t_fuse >= 0 ? t_fuse - t0 : -1.0,
		       t_back >= 0 ? t_back - t0 : -1.0);
		if (op == OP_WRLOCK) {
			struct flock fl = {
				.l_type = F_RDLCK, .l_whence = SEEK_SET,
				.l_start = 0, .l_len = 4096,
			};

			if (glfs_posix_lock(fd, F_GETLK, &fl) == 0) {
				printf(", \"getlk_after\": \"%s\"",
				       fl.l_type == F_UNLCK ? "unlocked" :
				       "locked");
			}
		}
		printf("}\n");
		waitpid(pid, &status, 0);
		close(pipefd[0]);
		glfs_close(fd);
		/* let the bricks release the FUSE client's open */
		usleep(500 * 1000);
	}
	return granted > 0 ? 0 : 1;
}
