/*
 * pingpong: measures TCP round trips (the test of delayrelay).
 *
 *   pingpong serve [ADDR:]PORT [SECONDS]
 *       Echo server on ADDR:PORT (ADDR 127.0.0.1 when not given): echoes
 *       every connection's bytes back (one thread per connection); exits
 *       after SECONDS (default 120) or when its parent is gone.  Prints
 *       "ready" once it listens.
 *   pingpong probe COUNT SIZE [ADDR:]PORT...
 *       One connection to each ADDR:PORT (ADDR 127.0.0.1 when not given;
 *       TCP_NODELAY), then COUNT rounds; each round sends SIZE bytes on
 *       every connection in turn and waits for the echo, so that the paths
 *       are measured interleaved under the same load.  The first tenth of
 *       the rounds warms up and is not counted.  Prints one line per
 *       endpoint: "[ADDR:]PORT median_us p10_us p90_us diff_us" (the
 *       endpoint as given): diff_us is the median over the rounds of this
 *       endpoint's round trip minus the first one's in the same round (0
 *       for the first).
 */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "pingpong: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int full_io(int fd, char *buf, size_t len, int reading)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = reading ? read(fd, buf + done, len - done)
				    : write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

/* "[ADDR:]PORT" (an IPv4 address, 127.0.0.1 when not given) into sa */
static int parse_endpoint(const char *spec, struct sockaddr_in *sa)
{
	const char *colon = strrchr(spec, ':');
	const char *port = spec;
	char addr[INET_ADDRSTRLEN];
	char *end = NULL;
	long n;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (colon != NULL) {
		size_t len = (size_t)(colon - spec);

		if (len == 0 || len >= sizeof(addr)) {
			return -1;
		}
		memcpy(addr, spec, len);
		addr[len] = '\0';
		if (inet_pton(AF_INET, addr, &sa->sin_addr) != 1) {
			return -1;
		}
		port = colon + 1;
	}
	n = strtol(port, &end, 10);
	if (end == port || *end != '\0' || n <= 0 || n > 65535) {
		return -1;
	}
	sa->sin_port = htons((uint16_t)n);
	return 0;
}

static void *echo(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[65536];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0 || full_io(fd, buf, (size_t)n, 0) != 0) {
			break;
		}
	}
	close(fd);
	return NULL;
}

static void *watchdog(void *arg)
{
	long seconds = (long)(intptr_t)arg;
	pid_t parent = getppid();
	long i;

	for (i = 0; i < seconds * 10; i++) {
		struct timespec ts = { 0, 100000000 };

		nanosleep(&ts, NULL);
		if (getppid() != parent) {
			break;
		}
	}
	exit(0);
	return NULL;
}

static int serve(const char *spec, long seconds)
{
	struct sockaddr_in sa;
	pthread_t t;
	int one = 1, lfd;

	if (parse_endpoint(spec, &sa) != 0) {
		fprintf(stderr, "pingpong: not [ADDR:]PORT: %s\n", spec);
		return 2;
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		die("socket");
	}
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(lfd, 64) != 0) {
		die("bind/listen");
	}
	if (pthread_create(&t, NULL, watchdog, (void *)(intptr_t)seconds) !=
	    0) {
		die("pthread_create");
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED) {
				continue;
			}
			die("accept");
		}
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
				 sizeof(one));
		if (pthread_create(&t, NULL, echo, (void *)(intptr_t)fd) != 0) {
			die("pthread_create");
		}
		pthread_detach(t);
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int probe(long count, long size, int nports, char **ports)
{
	int *fds = calloc((size_t)nports, sizeof(int));
	uint64_t **rtt = calloc((size_t)nports, sizeof(uint64_t *));
	char *buf = malloc((size_t)size), *back = malloc((size_t)size);
	double *diff = NULL, *diffs = calloc((size_t)nports, sizeof(double));
	long warm = count / 10, r;
	int i, one = 1;

	if (fds == NULL || rtt == NULL || buf == NULL || back == NULL ||
	    diffs == NULL) {
		die("malloc");
	}
	for (i = 0; i < nports; i++) {
		struct sockaddr_in sa;

		if (parse_endpoint(ports[i], &sa) != 0) {
			fprintf(stderr, "pingpong: not [ADDR:]PORT: %s\n",
				ports[i]);
			return 2;
		}
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[i] < 0 ||
		    connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) != 0) {
			die(ports[i]);
		}
		(void)setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one,
				 sizeof(one));
		rtt[i] = calloc((size_t)count, sizeof(uint64_t));
		if (rtt[i] == NULL) {
			die("calloc");
		}
	}
	for (r = 0; r < count + warm; r++) {
		for (i = 0; i < nports; i++) {
			uint64_t t0;

			memset(buf, (int)(r & 0xff), (size_t)size);
			t0 = now_ns();
			if (full_io(fds[i], buf, (size_t)size, 0) != 0 ||
			    full_io(fds[i], back, (size_t)size, 1) != 0) {
				die("echo");
			}
			if (memcmp(buf, back, (size_t)size) != 0) {
				fprintf(stderr, "pingpong: echo differs\n");
				return 1;
			}
			if (r >= warm) {
				rtt[i][r - warm] = now_ns() - t0;
			}
		}
	}
	diff = calloc((size_t)count, sizeof(double));
	if (diff == NULL) {
		die("calloc");
	}
	for (i = nports - 1; i >= 0; i--) {
		for (r = 0; r < count; r++) {
			diff[r] = (double)rtt[i][r] - (double)rtt[0][r];
		}
		qsort(diff, (size_t)count, sizeof(double), cmp_double);
		diffs[i] = diff[count / 2];
	}
	for (i = 0; i < nports; i++) {
		qsort(rtt[i], (size_t)count, sizeof(uint64_t), cmp_u64);
		printf("%s %.1f %.1f %.1f %.1f\n", ports[i],
		       rtt[i][count / 2] / 1e3, rtt[i][count / 10] / 1e3,
		       rtt[i][count * 9 / 10] / 1e3, diffs[i] / 1e3);
		close(fds[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "serve") == 0) {
		return serve(argv[2], argc > 3 ? atol(argv[3]) : 120);
	}
	if (argc >= 5 && strcmp(argv[1], "probe") == 0 &&
	    atol(argv[2]) >= 10 && atol(argv[3]) >= 1) {
		return probe(atol(argv[2]), atol(argv[3]), argc - 4, argv + 4);
	}
	fprintf(stderr, "usage: pingpong serve [ADDR:]PORT [SECONDS] | "
		"pingpong probe COUNT SIZE [ADDR:]PORT...\n");
	return 2;
}
