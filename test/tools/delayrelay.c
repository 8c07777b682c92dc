/*
 * delayrelay: a TCP relay that adds a fixed round trip.
 *
 * It listens on a set of TCP ports and forwards every connection it
 * accepts to a target address, holding each direction's bytes for half of
 * the requested round trip before writing them on.  Bytes are never
 * changed, reordered or dropped: each direction is a FIFO of timestamped
 * chunks, released in order once their time has come.
 *
 *   delayrelay [--rtt MS] [--max-queue BYTES] [--parent PID]
 *              [--timeout SECONDS] [--pidfile FILE]
 *              LISTEN_ADDR:PORT[-PORT2]=TARGET_ADDR[:TPORT] ...
 *
 * A range of ports forwards each port to the same port of the target; a
 * single port may name another target port.  --rtt is the added round
 * trip in milliseconds (fractions allowed, e.g. 0.2); each direction is
 * held for half of it, counted from the moment the kernel received the
 * bytes (SO_TIMESTAMPNS), so that the relay's own wake-up latency is part
 * of the hold rather than added to it.  --max-queue bounds the bytes held
 * per direction of a connection (default 4 MiB): a full queue stops
 * reading from that side (TCP's own flow control then pushes back on the
 * sender).  The relay exits on SIGTERM or SIGINT, when the process
 * --parent names is gone, or after --timeout seconds.  It prints "ready"
 * on stdout once every port listens.
 *
 * One thread, one epoll set: the listening sockets, both sockets of every
 * connection, a signalfd and a timerfd armed (nanosecond resolution, timer
 * slack set to 1 ns) for the earliest chunk due.
 */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_MAX (64 * 1024)
#define DEFAULT_MAX_QUEUE (4 * 1024 * 1024)
#define MAX_LISTENERS 16384
/* chunks read from one socket per wake-up: sends due meanwhile go first */
#define READS_PER_WAKE 4

enum ep_kind { EP_LISTEN, EP_SIDE, EP_SIGNAL, EP_TIMER };

struct ep_tag {
	enum ep_kind kind;
	void *ptr;
};

struct listener {
	struct ep_tag tag;
	int fd;
	struct sockaddr_in target;
};

struct chunk {
	struct chunk *next;
	uint64_t due;		/* CLOCK_MONOTONIC ns */
	size_t len;
	size_t off;
	bool eof;		/* no data: shut the writer down when due */
	char data[];
};

struct conn;

/* One direction: bytes read from src, held, written to dst. */
struct flow {
	struct chunk *head;
	struct chunk *tail;
	size_t queued;
	bool src_eof;		/* read returned 0 */
	bool done;		/* EOF forwarded (shutdown of dst) */
};

struct side {
	struct ep_tag tag;
	struct conn *conn;
	int fd;
	uint32_t events;	/* registered epoll events */
};

struct conn {
	struct conn *prev;
	struct conn *next;
	struct side s[2];	/* 0: accepted client, 1: connection to target */
	struct flow f[2];	/* f[i]: read from s[i], written to s[1 - i] */
	bool connected;		/* s[1] connected */
	bool dead;
};

static int epfd = -1;
static int timer_fd = -1;
static uint64_t half_rtt_ns;
/*
 * How much before its time a chunk is sent (ns).  Between the moment the
 * timer is due and the moment the bytes are in the peer's socket lie the
 * timer's wake-up and the relay's own work: on a busy machine tens of
 * microseconds, a tenth of a 0.2 ms round trip.  The timer is armed
 * wake_late_ns before a chunk is due and a chunk that is due within it is
 * sent; wake_late_ns follows the median of the lateness (a step up for
 * each chunk that left after its time, a step down for each that left
 * before), so that half of the chunks leave before their time and half
 * after.  Capped at a third of the hold.
 */
static uint64_t wake_late_ns;
#define WAKE_STEP_NS 500
static size_t max_queue = DEFAULT_MAX_QUEUE;
static struct conn *conns;
static unsigned long n_conns;

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "delayrelay: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void set_nodelay(int fd)
{
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	(void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
}

static void ep_set(struct side *sd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = &sd->tag };

	if (sd->fd < 0 || sd->events == events) {
		return;
	}
	if (epoll_ctl(epfd, EPOLL_CTL_MOD, sd->fd, &ev) != 0) {
		die("epoll_ctl MOD");
	}
	sd->events = events;
}

static void flow_free(struct flow *f)
{
	struct chunk *c = f->head;

	while (c != NULL) {
		struct chunk *n = c->next;

		free(c);
		c = n;
	}
	f->head = f->tail = NULL;
	f->queued = 0;
}

static void conn_close(struct conn *c)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (c->s[i].fd >= 0) {
			close(c->s[i].fd);
			c->s[i].fd = -1;
		}
		flow_free(&c->f[i]);
	}
	c->dead = true;
}

static void conn_reap(void)
{
	struct conn *c = conns;

	while (c != NULL) {
		struct conn *n = c->next;

		if (c->dead) {
			if (c->prev != NULL) {
				c->prev->next = c->next;
			} else {
				conns = c->next;
			}
			if (c->next != NULL) {
				c->next->prev = c->prev;
			}
			free(c);
			n_conns--;
		}
		c = n;
	}
}

static void chunk_append(struct flow *f, struct chunk *ch)
{
	ch->next = NULL;
	if (f->tail != NULL) {
		f->tail->next = ch;
	} else {
		f->head = ch;
	}
	f->tail = ch;
	f->queued += ch->len;
}

/* The arrival time of what recvmsg returned, on CLOCK_MONOTONIC. */
static uint64_t arrival_ns(struct msghdr *msg, uint64_t mono_now)
{
	struct cmsghdr *cm = NULL;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		struct timespec ts;
		uint64_t real_now, real_ts, age;

		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_TIMESTAMPNS) {
			continue;
		}
		memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
		real_ts = (uint64_t)ts.tv_sec * 1000000000ULL +
			  (uint64_t)ts.tv_nsec;
		real_now = now_ns(CLOCK_REALTIME);
		if (real_ts > real_now) {
			return mono_now;
		}
		age = real_now - real_ts;
		/* a wall clock step: ignore a stamp older than a second */
		if (age > 1000000000ULL || age > mono_now) {
			return mono_now;
		}
		return mono_now - age;
	}
	return mono_now;
}

/* Read what side i has for the other side, as long as the queue allows. */
static void side_read(struct conn *c, int i)
{
	struct flow *f = &c->f[i];
	int fd = c->s[i].fd;
	int reads = 0;

	while (!f->src_eof && f->queued < max_queue &&
	       reads++ < READS_PER_WAKE) {
		size_t room = max_queue - f->queued;
		size_t want = room < CHUNK_MAX ? room : CHUNK_MAX;
		struct chunk *ch = malloc(sizeof(*ch) + want);
		char cbuf[CMSG_SPACE(sizeof(struct timespec)) * 2];
		struct iovec iov;
		struct msghdr msg;
		ssize_t n;

		if (ch == NULL) {
			die("malloc");
		}
		iov.iov_base = ch->data;
		iov.iov_len = want;
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		n = recvmsg(fd, &msg, MSG_DONTWAIT);
		if (n < 0) {
			free(ch);
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				return;
			}
			if (errno == EINTR) {
				continue;
			}
			conn_close(c);
			return;
		}
		ch->off = 0;
		ch->eof = false;
		ch->due = arrival_ns(&msg, now_ns(CLOCK_MONOTONIC)) +
			  half_rtt_ns;
		if (n == 0) {
			ch->eof = true;
			ch->len = 0;
			f->src_eof = true;
			chunk_append(f, ch);
			return;
		}
		if ((size_t)n < want) {
			struct chunk *small = realloc(ch, sizeof(*ch) + n);

			if (small != NULL) {
				ch = small;
			}
		}
		ch->len = (size_t)n;
		chunk_append(f, ch);
	}
}

/* a chunk due at due went to send() at sent: adjust how early to send */
static void wake_learn(uint64_t due, uint64_t sent)
{
	uint64_t cap = half_rtt_ns / 3;

	if (sent > due) {
		/* late for want of room in the peer: not the timer's fault */
		if (sent - due > half_rtt_ns) {
			return;
		}
		wake_late_ns += WAKE_STEP_NS;
		if (wake_late_ns > cap) {
			wake_late_ns = cap;
		}
	} else if (wake_late_ns >= WAKE_STEP_NS) {
		wake_late_ns -= WAKE_STEP_NS;
	} else {
		wake_late_ns = 0;
	}
}

/*
 * Write what is due of flow i to the other side.  Returns the time the
 * next chunk is due (0: nothing to wait for: empty, or waiting for the
 * writer to become writable).
 */
static uint64_t flow_flush(struct conn *c, int i, uint64_t now)
{
	struct flow *f = &c->f[i];
	struct side *dst = &c->s[1 - i];

	if (i == 0 && !c->connected) {
		return 0;
	}
	while (f->head != NULL) {
		struct chunk *ch = f->head;
		uint64_t sent;
		ssize_t n;

		if (ch->due > now + wake_late_ns) {
			return ch->due;
		}
		if (ch->eof) {
			(void)shutdown(dst->fd, SHUT_WR);
			f->done = true;
			f->head = NULL;
			f->tail = NULL;
			free(ch);
			return 0;
		}
		sent = now_ns(CLOCK_MONOTONIC);
		n = send(dst->fd, ch->data + ch->off, ch->len - ch->off,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				return 0;
			}
			if (errno == EINTR) {
				continue;
			}
			conn_close(c);
			return 0;
		}
		if (ch->off == 0 && (size_t)n == ch->len) {
			wake_learn(ch->due, sent);
		}
		ch->off += (size_t)n;
		f->queued -= (size_t)n;
		if (ch->off < ch->len) {
			continue;
		}
		f->head = ch->next;
		if (f->head == NULL) {
			f->tail = NULL;
		}
		free(ch);
	}
	return 0;
}

/* Flush both flows, then set what each socket waits for. */
static uint64_t conn_service(struct conn *c, uint64_t now)
{
	uint64_t next = 0;
	int i;

	for (i = 0; i < 2 && !c->dead; i++) {
		uint64_t due = flow_flush(c, i, now);

		if (due != 0 && (next == 0 || due < next)) {
			next = due;
		}
	}
	if (c->dead) {
		return 0;
	}
	if (c->f[0].done && c->f[1].done) {
		conn_close(c);
		return 0;
	}
	for (i = 0; i < 2; i++) {
		struct flow *in = &c->f[i];
		struct flow *out = &c->f[1 - i];
		uint32_t ev = 0;

		if (!in->src_eof && in->queued < max_queue) {
			ev |= EPOLLIN;
		}
		/* writable wanted: a due chunk is waiting for this side */
		if (out->head != NULL &&
		    out->head->due <= now + wake_late_ns) {
			ev |= EPOLLOUT;
		}
		if (i == 1 && !c->connected) {
			ev = EPOLLOUT;
		}
		ep_set(&c->s[i], ev);
	}
	return next;
}

static void conn_new(struct listener *l)
{
	struct conn *c = NULL;
	struct epoll_event ev;
	int cfd, tfd, i;

	cfd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0) {
		return;
	}
	tfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (tfd < 0) {
		close(cfd);
		return;
	}
	set_nodelay(cfd);
	set_nodelay(tfd);
	if (connect(tfd, (struct sockaddr *)&l->target, sizeof(l->target)) !=
		    0 &&
	    errno != EINPROGRESS) {
		close(cfd);
		close(tfd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		die("calloc");
	}
	c->s[0].fd = cfd;
	c->s[1].fd = tfd;
	for (i = 0; i < 2; i++) {
		c->s[i].tag.kind = EP_SIDE;
		c->s[i].tag.ptr = &c->s[i];
		c->s[i].conn = c;
		c->s[i].events = (i == 0) ? EPOLLIN : EPOLLOUT;
		ev.events = c->s[i].events;
		ev.data.ptr = &c->s[i].tag;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->s[i].fd, &ev) != 0) {
			die("epoll_ctl ADD");
		}
	}
	c->next = conns;
	if (conns != NULL) {
		conns->prev = c;
	}
	conns = c;
	n_conns++;
}

static void side_event(struct side *sd, uint32_t events)
{
	struct conn *c = sd->conn;
	int i = (sd == &c->s[0]) ? 0 : 1;

	if (c->dead) {
		return;
	}
	if (i == 1 && !c->connected) {
		int err = 0;
		socklen_t len = sizeof(err);

		if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) {
			return;
		}
		if (getsockopt(sd->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
		    err != 0) {
			/* the target refused: refuse the client likewise */
			struct linger lg = { .l_onoff = 1, .l_linger = 0 };

			(void)setsockopt(c->s[0].fd, SOL_SOCKET, SO_LINGER,
					 &lg, sizeof(lg));
			conn_close(c);
			return;
		}
		c->connected = true;
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		side_read(c, i);
	}
	/* EPOLLOUT: conn_service flushes */
}

/* "ADDR:PORT[-PORT2]=TADDR[:TPORT]" */
static void add_forward(const char *spec, struct listener **ls, int *nls)
{
	char buf[256], *eq, *colon, *dash, *tcolon, *end;
	long p1, p2, tport = -1, p;
	struct in_addr laddr, taddr;

	if (strlen(spec) >= sizeof(buf)) {
		goto bad;
	}
	strcpy(buf, spec);
	eq = strchr(buf, '=');
	if (eq == NULL) {
		goto bad;
	}
	*eq = '\0';
	colon = strrchr(buf, ':');
	if (colon == NULL) {
		goto bad;
	}
	*colon = '\0';
	if (inet_pton(AF_INET, buf, &laddr) != 1) {
		goto bad;
	}
	dash = strchr(colon + 1, '-');
	p1 = strtol(colon + 1, &end, 10);
	if (dash != NULL) {
		if (end != dash) {
			goto bad;
		}
		p2 = strtol(dash + 1, &end, 10);
	} else {
		p2 = p1;
	}
	if (*end != '\0' || p1 < 1 || p2 > 65535 || p2 < p1) {
		goto bad;
	}
	tcolon = strchr(eq + 1, ':');
	if (tcolon != NULL) {
		*tcolon = '\0';
		tport = strtol(tcolon + 1, &end, 10);
		if (*end != '\0' || tport < 1 || tport > 65535 || p1 != p2) {
			goto bad;
		}
	}
	if (inet_pton(AF_INET, eq + 1, &taddr) != 1) {
		goto bad;
	}
	for (p = p1; p <= p2; p++) {
		struct listener *l = NULL;
		struct sockaddr_in sa;
		int one = 1;

		if (*nls >= MAX_LISTENERS) {
			fprintf(stderr, "delayrelay: more than %d ports\n",
				MAX_LISTENERS);
			exit(2);
		}
		l = &(*ls)[(*nls)++];
		l->tag.kind = EP_LISTEN;
		l->tag.ptr = l;
		l->fd = socket(AF_INET,
			       SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (l->fd < 0) {
			die("socket");
		}
		(void)setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one));
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr = laddr;
		sa.sin_port = htons((uint16_t)p);
		if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
			fprintf(stderr, "delayrelay: bind %s:%ld: %s\n",
				buf, p, strerror(errno));
			exit(1);
		}
		if (listen(l->fd, 512) != 0) {
			die("listen");
		}
		memset(&l->target, 0, sizeof(l->target));
		l->target.sin_family = AF_INET;
		l->target.sin_addr = taddr;
		l->target.sin_port = htons((uint16_t)(tport > 0 ? tport : p));
	}
	return;
bad:
	fprintf(stderr, "delayrelay: bad forward '%s' "
		"(ADDR:PORT[-PORT2]=TADDR[:TPORT])\n", spec);
	exit(2);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: delayrelay [--rtt MS] [--max-queue BYTES] "
		"[--parent PID] [--timeout SECONDS] [--pidfile FILE] "
		"ADDR:PORT[-PORT2]=TADDR[:TPORT] ...\n");
	exit(2);
}

static void arm_timer(uint64_t due)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	if (due != 0) {
		due = (due > wake_late_ns) ? due - wake_late_ns : 1;
		its.it_value.tv_sec = (time_t)(due / 1000000000ULL);
		its.it_value.tv_nsec = (long)(due % 1000000000ULL);
	}
	if (timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
		die("timerfd_settime");
	}
}

int main(int argc, char **argv)
{
	struct listener *ls = NULL;
	struct epoll_event ev, evs[128];
	struct rlimit rl;
	const char *pidfile = NULL;
	double rtt_ms = 0;
	long parent = 0;
	double timeout_s = 0;
	uint64_t deadline = 0, armed = UINT64_MAX;
	sigset_t mask;
	int nls = 0, i, sfd;
	bool stop = false;

	/*
	 * Keep freed chunks for the next ones: returning them to the kernel
	 * and faulting fresh pages in for every read cost more than the
	 * copy (four times the throughput with a 4 MiB queue here).
	 */
	(void)mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
	(void)mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
	ls = calloc(MAX_LISTENERS, sizeof(*ls));
	if (ls == NULL) {
		die("calloc");
	}
	/* more descriptors: hundreds of listening ports, two per connection */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (i = 1; i < argc; i++) {
		char *end = NULL;

		if (strcmp(argv[i], "--rtt") == 0 && i + 1 < argc) {
			rtt_ms = strtod(argv[++i], &end);
			if (*end != '\0' || rtt_ms < 0 || rtt_ms > 10000) {
				usage();
			}
		} else if (strcmp(argv[i], "--max-queue") == 0 &&
			   i + 1 < argc) {
			long long q = strtoll(argv[++i], &end, 10);

			if (*end != '\0' || q < CHUNK_MAX) {
				usage();
			}
			max_queue = (size_t)q;
		} else if (strcmp(argv[i], "--parent") == 0 && i + 1 < argc) {
			parent = strtol(argv[++i], &end, 10);
			if (*end != '\0' || parent <= 0) {
				usage();
			}
		} else if (strcmp(argv[i], "--timeout") == 0 &&
			   i + 1 < argc) {
			timeout_s = strtod(argv[++i], &end);
			if (*end != '\0' || timeout_s <= 0) {
				usage();
			}
		} else if (strcmp(argv[i], "--pidfile") == 0 &&
			   i + 1 < argc) {
			pidfile = argv[++i];
		} else if (argv[i][0] == '-') {
			usage();
		} else {
			add_forward(argv[i], &ls, &nls);
		}
	}
	if (nls == 0) {
		usage();
	}
	half_rtt_ns = (uint64_t)(rtt_ms * 1e6 / 2 + 0.5);
	/* wake up when asked, not up to 50 us later */
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0) {
		die("sigprocmask");
	}
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	timer_fd = timerfd_create(CLOCK_MONOTONIC,
				  TFD_NONBLOCK | TFD_CLOEXEC);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || timer_fd < 0 || epfd < 0) {
		die("signalfd/timerfd/epoll");
	}
	{
		static struct ep_tag sig_tag = { EP_SIGNAL, NULL };
		static struct ep_tag tim_tag = { EP_TIMER, NULL };

		ev.events = EPOLLIN;
		ev.data.ptr = &sig_tag;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev) != 0) {
			die("epoll_ctl");
		}
		ev.data.ptr = &tim_tag;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, timer_fd, &ev) != 0) {
			die("epoll_ctl");
		}
	}
	for (i = 0; i < nls; i++) {
		ev.events = EPOLLIN;
		ev.data.ptr = &ls[i].tag;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, ls[i].fd, &ev) != 0) {
			die("epoll_ctl");
		}
	}
	if (timeout_s > 0) {
		deadline = now_ns(CLOCK_MONOTONIC) +
			   (uint64_t)(timeout_s * 1e9);
	}
	if (pidfile != NULL) {
		FILE *pf = fopen(pidfile, "w");

		if (pf == NULL) {
			die(pidfile);
		}
		fprintf(pf, "%d\n", (int)getpid());
		fclose(pf);
	}
	printf("ready\n");
	fflush(stdout);

	while (!stop) {
		uint64_t now, next = 0;
		struct conn *c = NULL;
		int n, k, wait_ms;

		/* the timerfd carries sub-millisecond waits; this is a floor */
		wait_ms = (parent != 0 || deadline != 0) ? 1000 : -1;
		n = epoll_wait(epfd, evs, 128, wait_ms);
		if (n < 0 && errno != EINTR) {
			die("epoll_wait");
		}
		for (k = 0; k < n; k++) {
			struct ep_tag *tag = evs[k].data.ptr;

			switch (tag->kind) {
			case EP_LISTEN:
				conn_new(tag->ptr);
				break;
			case EP_SIDE:
				side_event(tag->ptr, evs[k].events);
				break;
			case EP_SIGNAL:
				stop = true;
				break;
			case EP_TIMER: {
				uint64_t exp;

				(void)read(timer_fd, &exp, sizeof(exp));
				armed = UINT64_MAX;
				break;
			}
			}
		}
		now = now_ns(CLOCK_MONOTONIC);
		for (c = conns; c != NULL; c = c->next) {
			uint64_t due;

			if (c->dead) {
				continue;
			}
			due = conn_service(c, now);
			if (due != 0 && (next == 0 || due < next)) {
				next = due;
			}
		}
		conn_reap();
		if (next != 0 && next != armed) {
			arm_timer(next);
			armed = next;
		}
		if (parent != 0 && kill((pid_t)parent, 0) != 0 &&
		    errno == ESRCH) {
			stop = true;
		}
		if (deadline != 0 && now >= deadline) {
			stop = true;
		}
	}
	while (conns != NULL) {
		conn_close(conns);
		conn_reap();
	}
	for (i = 0; i < nls; i++) {
		close(ls[i].fd);
	}
	if (pidfile != NULL) {
		(void)unlink(pidfile);
	}
	return 0;
}
