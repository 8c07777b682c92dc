/*
 * glusterfs2: option parsing without any Samba or gfapi dependency.
 *
 * Layer: core.
 *
 * Everything here is pure: strings in, values or a readable error out.
 * The VFS glue logs the error and falls back to the documented default
 * (or refuses the tree connect where no safe default exists).
 */

#ifndef GF2_OPTIONS_H
#define GF2_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GF2_MAX_VOLFILE_SERVERS 16
#define GF2_MAX_HOST_LEN 255
#define GF2_MAX_VOLUME_LEN 255
#define GF2_DEFAULT_VOLFILE_SERVER "localhost"
#define GF2_ERRLEN 256

struct gf2_volfile_server {
	char transport[8];		/* "tcp", "unix" or "rdma" */
	char host[GF2_MAX_HOST_LEN + 1];	/* host, address or socket path */
	int port;			/* 0: gfapi default (24007) */
};

/*
 * Parse a list of volfile servers separated by white space or commas.
 * Each entry is [TRANSPORT+]HOST[:PORT], HOST may be an IPv6 address in
 * brackets, and "unix+/path/to/socket" names a local socket (no port).
 * Returns 0 and fills servers[0..*num-1], or -1 with errbuf filled.
 */
int gf2_parse_volfile_servers(const char *spec,
			      struct gf2_volfile_server *servers,
			      size_t max_servers,
			      size_t *num,
			      char *errbuf, size_t errlen);

/*
 * Format a parsed server list back into one readable line, for logs.
 */
void gf2_format_volfile_servers(const struct gf2_volfile_server *servers,
				size_t num, char *buf, size_t buflen);

/*
 * A Gluster volume name: 1..255 characters of [A-Za-z0-9_.-], not starting
 * with '-' or '.'.
 */
bool gf2_valid_volume_name(const char *name, char *errbuf, size_t errlen);

/*
 * Parse an unsigned integer with an optional binary size suffix
 * (K, M, G, T; also KiB, MiB, ...), and check it lies in [min, max].
 * Returns 0 or -1 with errbuf filled (empty, not a number, negative,
 * out of range, unknown suffix).
 */
int gf2_parse_size(const char *s, uint64_t min, uint64_t max,
		   uint64_t *out, char *errbuf, size_t errlen);

/*
 * Parse a plain integer (no suffix) in [min, max].
 */
int gf2_parse_int(const char *s, int64_t min, int64_t max,
		  int64_t *out, char *errbuf, size_t errlen);

/*
 * Parse a boolean the way smb.conf does (yes/no, true/false, on/off, 1/0).
 */
int gf2_parse_bool(const char *s, bool *out, char *errbuf, size_t errlen);

/*
 * Look at a client volfile (the text gfapi received) for what Gluster's
 * "samba" option group turns on: md-cache's cache-invalidation and the
 * nl-cache translator; and, when md_timeout is not NULL, md-cache's
 * timeout in seconds (its default, 1, when the volfile sets none or a
 * value that is not a number from 0 to 600).
 */
void gf2_volfile_samba_options(const char *volfile, bool *md_invalidation,
			       bool *nl_cache, unsigned *md_timeout);

/*
 * The bricks a client volfile connects to (its protocol/client
 * translators, snapd's left out) that a pathinfo value of the volume root
 * (the glusterfs.pathinfo virtual xattr, which names every brick whose
 * connection is up as "<POSIX(brick path):host:...>") does not name.
 * Sets *nbricks and *nmissing and writes "host:path" of each missing
 * brick, space separated, to missing (truncated to missing_len).
 * Returns -1 when the volfile cannot be judged this way: no brick in it,
 * or a disperse or thin-arbiter graph, whose pathinfo need not name every
 * brick.
 */
int gf2_volfile_bricks_missing(const char *volfile, const char *pathinfo,
			       unsigned *nbricks, unsigned *nmissing,
			       char *missing, size_t missing_len);

/*
 * The per-share options with a safe default, in one table: name (after
 * "glusterfs2:"), kind, default and range.  Every default is defined
 * here and nowhere else.  A bad value is reported and the default used.
 */
enum gf2_opt_kind {
	GF2_OPT_BOOL,
	GF2_OPT_INT,
	GF2_OPT_SIZE,		/* with K/M/G/T suffixes */
	GF2_OPT_ENUM,		/* value: index into choices */
};

enum gf2_coherence {
	GF2_COHERENCE_AGE,
	GF2_COHERENCE_STRICT,
};

/* glusterfs2:lock check: how smbd's POSIX lock checks are answered */
enum gf2_lock_check {
	GF2_LOCK_CHECK_GETLK,	/* F_GETLK on the bricks (maybe cached) */
	GF2_LOCK_CHECK_LEASE,	/* accepted, answered as getlk (logged) */
};

/*
 * How long smbd waits at most for a queued write to be answered by
 * Gluster (ms): GlusterFS's default network.ping-timeout, the time in
 * which a brick that does not answer at all is given up.
 */
#define GF2_WC_DEFAULT_MAX_WAIT_MS 42000

/* glusterfs2:shared read cache block: its default and range */
#define GF2_SHR_DEFAULT_BLOCK (1024U * 1024)
#define GF2_SHR_BLOCK_MIN (64U * 1024)
#define GF2_SHR_BLOCK_MAX (16U * 1024 * 1024)
/* glusterfs2:shared read cache: the largest segment (64 GiB) */
#define GF2_SHR_SIZE_MAX (64ULL * 1024 * 1024 * 1024)

struct gf2_share_options {
	int64_t loglevel;
	bool prefetch;
	uint64_t pf_init_window;
	uint64_t pf_max_window;
	uint64_t pf_direct_size;
	int64_t pf_streams;
	uint64_t pf_max_memory;
	int64_t pf_max_age_ms;
	int64_t pf_coherence;		/* enum gf2_coherence */
	int64_t lock_cache_ms;
	int64_t lock_check;		/* enum gf2_lock_check */
	bool client_io_threads;
	int64_t event_threads;		/* 0: the volume's client.event-threads */
	bool write_cache;		/* early write acknowledgement under a lease */
	int64_t wc_max_wait_ms;		/* bound of a wait for queued writes */
	uint64_t shr_size;		/* the node's shared read cache of the
					   volume, bytes (0: none) */
	uint64_t shr_block;		/* its block size */
};

struct gf2_opt_def {
	const char *name;
	enum gf2_opt_kind kind;
	size_t offset;			/* in struct gf2_share_options */
	uint64_t def;
	uint64_t min;
	uint64_t max;
	const char *const *choices;	/* GF2_OPT_ENUM, NULL-terminated */
};

extern const struct gf2_opt_def gf2_share_opts[];
extern const size_t gf2_share_nopts;

void gf2_share_options_default(struct gf2_share_options *o);

/*
 * Set option d from its smb.conf value.  Returns 0, or -1 with errbuf
 * filled (the option keeps its default).
 */
int gf2_share_option_set(struct gf2_share_options *o,
			 const struct gf2_opt_def *d, const char *value,
			 char *errbuf, size_t errlen);

/* The default of d as smb.conf would spell it, for log lines. */
void gf2_opt_format_default(const struct gf2_opt_def *d, char *buf,
			    size_t buflen);

/*
 * Rules between options: an initial prefetch window larger than the max
 * window is cut to it; a shared read cache block size that is not a
 * power of two is the default; a shared read cache too small for its
 * blocks and tables is off.  Returns 0, or -1 with errbuf saying what was
 * corrected.
 */
int gf2_share_options_check(struct gf2_share_options *o, char *errbuf,
			    size_t errlen);

#endif /* GF2_OPTIONS_H */
