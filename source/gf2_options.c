/*
 * glusterfs2: option parsing (pure C, unit-tested in test/unit).
 *
 * Layer: core.
 */

#include "gf2_options.h"
#include "gf2_readahead.h"
#include "gf2_shmcache.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void gf2_err(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void gf2_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errbuf == NULL || errlen == 0) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

static bool gf2_is_sep(char c)
{
	return c == ',' || isspace((unsigned char)c);
}

static int gf2_parse_port(const char *s, size_t len, int *port,
			  char *errbuf, size_t errlen)
{
	char tmp[8];
	char *end = NULL;
	long v;

	if (len == 0 || len >= sizeof(tmp)) {
		gf2_err(errbuf, errlen, "invalid port '%.*s'", (int)len, s);
		return -1;
	}
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	if (!isdigit((unsigned char)tmp[0])) {
		gf2_err(errbuf, errlen, "invalid port '%s'", tmp);
		return -1;
	}
	errno = 0;
	v = strtol(tmp, &end, 10);
	if (errno != 0 || *end != '\0' || v < 1 || v > 65535) {
		gf2_err(errbuf, errlen, "invalid port '%s' (1-65535)", tmp);
		return -1;
	}
	*port = (int)v;
	return 0;
}

/*
 * What may stand in brackets: an IPv6 address (hex digits, ':' and '.'
 * for an embedded IPv4 address; at least one ':'), optionally followed by
 * a zone, '%' and an interface name.  Anything else would be handed to
 * gfapi as a host name no resolver knows, and could not be logged back
 * in a form that parses again.
 */
static bool gf2_valid_ipv6_chars(const char *s, size_t len)
{
	bool colon = false;
	size_t i;

	for (i = 0; i < len && s[i] != '%'; i++) {
		if (s[i] == ':') {
			colon = true;
		} else if (!isxdigit((unsigned char)s[i]) && s[i] != '.') {
			return false;
		}
	}
	if (!colon) {
		return false;
	}
	if (i == len) {
		return true;
	}
	if (i + 1 == len) {
		return false;		/* empty zone */
	}
	for (i++; i < len; i++) {
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '-' && s[i] != '_') {
			return false;
		}
	}
	return true;
}

static int gf2_parse_one_server(const char *s, size_t len,
				struct gf2_volfile_server *srv,
				char *errbuf, size_t errlen)
{
	const char *plus = NULL;
	const char *host = s;
	size_t hostlen;
	const char *end = s + len;
	size_t i;

	memset(srv, 0, sizeof(*srv));
	strcpy(srv->transport, "tcp");

	/* TRANSPORT+ prefix */
	for (i = 0; i < len; i++) {
		if (s[i] == '+') {
			plus = s + i;
			break;
		}
		if (!isalpha((unsigned char)s[i])) {
			break;
		}
	}
	if (plus != NULL) {
		size_t tlen = plus - s;

		if (tlen == 3 && strncasecmp(s, "tcp", 3) == 0) {
			strcpy(srv->transport, "tcp");
		} else if (tlen == 4 && strncasecmp(s, "unix", 4) == 0) {
			strcpy(srv->transport, "unix");
		} else if (tlen == 4 && strncasecmp(s, "rdma", 4) == 0) {
			strcpy(srv->transport, "rdma");
		} else {
			gf2_err(errbuf, errlen,
				"unknown transport '%.*s' in '%.*s' "
				"(tcp, unix or rdma)",
				(int)tlen, s, (int)len, s);
			return -1;
		}
		host = plus + 1;
	}

	if (host == end) {
		gf2_err(errbuf, errlen, "empty host in '%.*s'", (int)len, s);
		return -1;
	}

	if (strcmp(srv->transport, "unix") == 0) {
		hostlen = end - host;
		if (host[0] != '/') {
			gf2_err(errbuf, errlen,
				"unix transport needs an absolute socket "
				"path, got '%.*s'", (int)hostlen, host);
			return -1;
		}
		if (hostlen > GF2_MAX_HOST_LEN) {
			gf2_err(errbuf, errlen, "socket path too long");
			return -1;
		}
		memcpy(srv->host, host, hostlen);
		srv->host[hostlen] = '\0';
		return 0;
	}

	if (host[0] == '[') {
		const char *close = memchr(host, ']', end - host);

		if (close == NULL) {
			gf2_err(errbuf, errlen, "missing ']' in '%.*s'",
				(int)len, s);
			return -1;
		}
		hostlen = close - host - 1;
		if (hostlen == 0) {
			gf2_err(errbuf, errlen, "empty address in '%.*s'",
				(int)len, s);
			return -1;
		}
		if (hostlen > GF2_MAX_HOST_LEN) {
			gf2_err(errbuf, errlen, "address too long");
			return -1;
		}
		if (!gf2_valid_ipv6_chars(host + 1, hostlen)) {
			gf2_err(errbuf, errlen, "'%.*s' in brackets is not an "
				"IPv6 address", (int)hostlen, host + 1);
			return -1;
		}
		memcpy(srv->host, host + 1, hostlen);
		srv->host[hostlen] = '\0';
		if (close + 1 == end) {
			return 0;
		}
		if (close[1] != ':') {
			gf2_err(errbuf, errlen, "unexpected text after ']' in "
				"'%.*s'", (int)len, s);
			return -1;
		}
		return gf2_parse_port(close + 2, end - close - 2, &srv->port,
				      errbuf, errlen);
	} else {
		const char *colon = memchr(host, ':', end - host);
		const char *p = NULL;

		if (colon != NULL &&
		    memchr(colon + 1, ':', end - colon - 1) != NULL) {
			gf2_err(errbuf, errlen, "IPv6 address '%.*s' must be "
				"written in brackets: [ADDR]:PORT",
				(int)(end - host), host);
			return -1;
		}
		hostlen = (colon != NULL ? colon : end) - host;
		if (hostlen == 0) {
			gf2_err(errbuf, errlen, "empty host in '%.*s'",
				(int)len, s);
			return -1;
		}
		if (hostlen > GF2_MAX_HOST_LEN) {
			gf2_err(errbuf, errlen, "host name too long");
			return -1;
		}
		for (p = host; p < host + hostlen; p++) {
			if (!isalnum((unsigned char)*p) && *p != '.' &&
			    *p != '-' && *p != '_') {
				gf2_err(errbuf, errlen,
					"invalid character '%c' in host "
					"'%.*s'", *p, (int)hostlen, host);
				return -1;
			}
		}
		memcpy(srv->host, host, hostlen);
		srv->host[hostlen] = '\0';
		if (colon == NULL) {
			return 0;
		}
		return gf2_parse_port(colon + 1, end - colon - 1, &srv->port,
				      errbuf, errlen);
	}
}

int gf2_parse_volfile_servers(const char *spec,
			      struct gf2_volfile_server *servers,
			      size_t max_servers,
			      size_t *num,
			      char *errbuf, size_t errlen)
{
	const char *p = spec;
	size_t n = 0;

	*num = 0;
	if (spec == NULL) {
		gf2_err(errbuf, errlen, "no volfile server given");
		return -1;
	}

	while (*p != '\0') {
		const char *start = NULL;
		int ret;

		while (*p != '\0' && gf2_is_sep(*p)) {
			p++;
		}
		if (*p == '\0') {
			break;
		}
		start = p;
		while (*p != '\0' && !gf2_is_sep(*p)) {
			p++;
		}
		if (n == max_servers) {
			gf2_err(errbuf, errlen,
				"too many volfile servers (at most %zu)",
				max_servers);
			return -1;
		}
		ret = gf2_parse_one_server(start, p - start, &servers[n],
					   errbuf, errlen);
		if (ret != 0) {
			return -1;
		}
		n++;
	}

	if (n == 0) {
		gf2_err(errbuf, errlen, "no volfile server given");
		return -1;
	}
	*num = n;
	return 0;
}

void gf2_format_volfile_servers(const struct gf2_volfile_server *servers,
				size_t num, char *buf, size_t buflen)
{
	size_t used = 0;
	size_t i;

	if (buflen == 0) {
		return;
	}
	buf[0] = '\0';
	for (i = 0; i < num && used < buflen; i++) {
		const struct gf2_volfile_server *s = &servers[i];
		bool v6 = strcmp(s->transport, "unix") != 0 &&
			  strchr(s->host, ':') != NULL;
		int w;

		if (s->port != 0) {
			w = snprintf(buf + used, buflen - used, "%s%s+%s%s%s:%d",
				     i > 0 ? " " : "", s->transport,
				     v6 ? "[" : "", s->host, v6 ? "]" : "",
				     s->port);
		} else {
			w = snprintf(buf + used, buflen - used, "%s%s+%s%s%s",
				     i > 0 ? " " : "", s->transport,
				     v6 ? "[" : "", s->host, v6 ? "]" : "");
		}
		if (w < 0) {
			return;
		}
		used += (size_t)w;
	}
}

bool gf2_valid_volume_name(const char *name, char *errbuf, size_t errlen)
{
	size_t len;
	size_t i;

	if (name == NULL || name[0] == '\0') {
		gf2_err(errbuf, errlen, "empty volume name");
		return false;
	}
	len = strlen(name);
	if (len > GF2_MAX_VOLUME_LEN) {
		gf2_err(errbuf, errlen, "volume name longer than %d characters",
			GF2_MAX_VOLUME_LEN);
		return false;
	}
	if (name[0] == '-' || name[0] == '.') {
		gf2_err(errbuf, errlen, "volume name '%s' must not start with "
			"'%c'", name, name[0]);
		return false;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (!isalnum(c) && c != '_' && c != '-' && c != '.') {
			gf2_err(errbuf, errlen, "invalid character 0x%02x in "
				"volume name", c);
			return false;
		}
	}
	return true;
}

static int gf2_parse_u64_prefix(const char *s, uint64_t *v, const char **rest,
				char *errbuf, size_t errlen)
{
	char *end = NULL;
	unsigned long long ull;

	while (isspace((unsigned char)*s)) {
		s++;
	}
	if (*s == '\0') {
		gf2_err(errbuf, errlen, "empty value");
		return -1;
	}
	if (*s == '-') {
		gf2_err(errbuf, errlen, "negative value '%s'", s);
		return -1;
	}
	if (!isdigit((unsigned char)*s)) {
		gf2_err(errbuf, errlen, "'%s' is not a number", s);
		return -1;
	}
	errno = 0;
	ull = strtoull(s, &end, 10);
	if (errno == ERANGE) {
		gf2_err(errbuf, errlen, "'%s' is too large", s);
		return -1;
	}
	*v = ull;
	*rest = end;
	return 0;
}

int gf2_parse_size(const char *s, uint64_t min, uint64_t max,
		   uint64_t *out, char *errbuf, size_t errlen)
{
	const char *rest = NULL;
	uint64_t v = 0;
	uint64_t mult = 1;
	char suffix[8];
	size_t slen;

	if (s == NULL) {
		gf2_err(errbuf, errlen, "empty value");
		return -1;
	}
	if (gf2_parse_u64_prefix(s, &v, &rest, errbuf, errlen) != 0) {
		return -1;
	}
	while (isspace((unsigned char)*rest)) {
		rest++;
	}
	slen = strlen(rest);
	while (slen > 0 && isspace((unsigned char)rest[slen - 1])) {
		slen--;
	}
	if (slen >= sizeof(suffix)) {
		gf2_err(errbuf, errlen, "unknown size suffix in '%s'", s);
		return -1;
	}
	memcpy(suffix, rest, slen);
	suffix[slen] = '\0';

	if (slen == 0 || strcasecmp(suffix, "b") == 0) {
		mult = 1;
	} else if (strcasecmp(suffix, "k") == 0 ||
		   strcasecmp(suffix, "kb") == 0 ||
		   strcasecmp(suffix, "kib") == 0) {
		mult = 1ULL << 10;
	} else if (strcasecmp(suffix, "m") == 0 ||
		   strcasecmp(suffix, "mb") == 0 ||
		   strcasecmp(suffix, "mib") == 0) {
		mult = 1ULL << 20;
	} else if (strcasecmp(suffix, "g") == 0 ||
		   strcasecmp(suffix, "gb") == 0 ||
		   strcasecmp(suffix, "gib") == 0) {
		mult = 1ULL << 30;
	} else if (strcasecmp(suffix, "t") == 0 ||
		   strcasecmp(suffix, "tb") == 0 ||
		   strcasecmp(suffix, "tib") == 0) {
		mult = 1ULL << 40;
	} else {
		gf2_err(errbuf, errlen, "unknown size suffix '%s' in '%s' "
			"(K, M, G or T)", suffix, s);
		return -1;
	}
	if (v != 0 && mult > UINT64_MAX / v) {
		gf2_err(errbuf, errlen, "'%s' is too large", s);
		return -1;
	}
	v *= mult;
	if (v < min || v > max) {
		gf2_err(errbuf, errlen, "'%s' is out of range [%" PRIu64
			", %" PRIu64 "]", s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int gf2_parse_int(const char *s, int64_t min, int64_t max,
		  int64_t *out, char *errbuf, size_t errlen)
{
	char *end = NULL;
	long long v;

	if (s == NULL) {
		gf2_err(errbuf, errlen, "empty value");
		return -1;
	}
	while (isspace((unsigned char)*s)) {
		s++;
	}
	if (*s == '\0') {
		gf2_err(errbuf, errlen, "empty value");
		return -1;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s) {
		gf2_err(errbuf, errlen, "'%s' is not a number", s);
		return -1;
	}
	while (isspace((unsigned char)*end)) {
		end++;
	}
	if (*end != '\0') {
		gf2_err(errbuf, errlen, "'%s' is not a number", s);
		return -1;
	}
	if (errno == ERANGE || v < min || v > max) {
		gf2_err(errbuf, errlen, "'%s' is out of range [%" PRId64
			", %" PRId64 "]", s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int gf2_parse_bool(const char *s, bool *out, char *errbuf, size_t errlen)
{
	static const char *yes[] = { "yes", "true", "on", "1" };
	static const char *no[] = { "no", "false", "off", "0" };
	size_t i;

	if (s == NULL || s[0] == '\0') {
		gf2_err(errbuf, errlen, "empty value");
		return -1;
	}
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	gf2_err(errbuf, errlen, "'%s' is not a boolean (yes/no)", s);
	return -1;
}

void gf2_volfile_samba_options(const char *volfile, bool *md_invalidation,
			       bool *nl_cache, unsigned *md_timeout)
{
	const char *p = volfile;
	bool in_mdcache = false;

	*md_invalidation = false;
	*nl_cache = false;
	if (md_timeout != NULL) {
		*md_timeout = 1;	/* md-cache's default */
	}
	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, '\n');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

		while (len > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' ||
				   p[len - 1] == '\r')) {
			len--;
		}
#define GF2_IS(lit) (len == sizeof(lit) - 1 && memcmp(p, lit, len) == 0)
		if (len >= 7 && memcmp(p, "volume ", 7) == 0) {
			in_mdcache = false;
		} else if (GF2_IS("type performance/md-cache")) {
			in_mdcache = true;
		} else if (GF2_IS("type performance/nl-cache")) {
			*nl_cache = true;
		} else if (in_mdcache && GF2_IS("option cache-invalidation on")) {
			*md_invalidation = true;
		} else if (in_mdcache && md_timeout != NULL &&
			   len > 24 && len < 36 &&
			   memcmp(p, "option md-cache-timeout ", 24) == 0) {
			char num[12];
			int64_t v = 0;

			memcpy(num, p + 24, len - 24);
			num[len - 24] = '\0';
			if (gf2_parse_int(num, 0, 600, &v, NULL, 0) == 0) {
				*md_timeout = (unsigned)v;
			}
		}
#undef GF2_IS
		p = end != NULL ? end + 1 : NULL;
	}
}

/* Does pathinfo name the brick path p (len bytes) as "<POSIX(p)"? */
static bool gf2_pathinfo_names(const char *pathinfo, const char *p,
			       size_t len)
{
	const char *at = pathinfo;

	while ((at = strstr(at, "<POSIX(")) != NULL) {
		at += 7;
		if (strncmp(at, p, len) == 0 && at[len] == ')') {
			return true;
		}
	}
	return false;
}

int gf2_volfile_bricks_missing(const char *volfile, const char *pathinfo,
			       unsigned *nbricks, unsigned *nmissing,
			       char *missing, size_t missing_len)
{
	const char *p = volfile;
	const char *host = NULL, *subvol = NULL;
	size_t host_len = 0, subvol_len = 0, used = 0;
	bool in_client = false;

	*nbricks = 0;
	*nmissing = 0;
	if (missing_len > 0) {
		missing[0] = '\0';
	}
	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, '\n');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

		while (len > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' ||
				   p[len - 1] == '\r')) {
			len--;
		}
#define GF2_IS(lit) (len == sizeof(lit) - 1 && memcmp(p, lit, len) == 0)
#define GF2_HAS(lit) (len > sizeof(lit) - 1 && \
		      memcmp(p, lit, sizeof(lit) - 1) == 0)
		if (GF2_IS("type cluster/disperse") ||
		    GF2_HAS("option thin-arbiter ")) {
			return -1;
		} else if (GF2_HAS("volume ")) {
			in_client = false;
			host = subvol = NULL;
		} else if (GF2_IS("type protocol/client")) {
			in_client = true;
		} else if (GF2_HAS("option remote-host ")) {
			host = p + 19;
			host_len = len - 19;
		} else if (GF2_HAS("option remote-subvolume ")) {
			subvol = p + 24;
			subvol_len = len - 24;
		} else if (GF2_IS("end-volume") && in_client &&
			   subvol != NULL &&
			   !(subvol_len >= 5 &&
			     memcmp(subvol, "snapd", 5) == 0)) {
			bool up = gf2_pathinfo_names(pathinfo, subvol,
						     subvol_len);

			*nbricks += 1;
			*nmissing += up ? 0 : 1;
			if (!up && used < missing_len) {
				int n = snprintf(
					missing + used, missing_len - used,
					"%s%.*s:%.*s", used > 0 ? " " : "",
					host != NULL ? (int)host_len : 1,
					host != NULL ? host : "?",
					(int)subvol_len, subvol);

				used += n > 0 ? (size_t)n : 0;
			}
			in_client = false;
		}
#undef GF2_HAS
#undef GF2_IS
		p = end != NULL ? end + 1 : NULL;
	}
	return *nbricks > 0 ? 0 : -1;
}

static const char *const gf2_coherence_names[] = { "age", "strict", NULL };
static const char *const gf2_lock_check_names[] = { "getlk", "lease", NULL };

#define GF2_OPT(field) offsetof(struct gf2_share_options, field)
#define GF2_KiB 1024ULL
#define GF2_MiB (1024ULL * 1024)
#define GF2_GiB (1024ULL * 1024 * 1024)

const struct gf2_opt_def gf2_share_opts[] = {
	{ "loglevel", GF2_OPT_INT, GF2_OPT(loglevel), 7, 0, 9, NULL },
	{ "prefetch", GF2_OPT_BOOL, GF2_OPT(prefetch), 1, 0, 1, NULL },
	{ "prefetch initial window", GF2_OPT_SIZE, GF2_OPT(pf_init_window),
	  GF2_RA_DEFAULT_INIT, 4 * GF2_KiB, 256 * GF2_MiB, NULL },
	{ "prefetch max window", GF2_OPT_SIZE, GF2_OPT(pf_max_window),
	  GF2_RA_DEFAULT_MAX, 64 * GF2_KiB, 256 * GF2_MiB, NULL },
	{ "prefetch direct read size", GF2_OPT_SIZE, GF2_OPT(pf_direct_size),
	  GF2_RA_DEFAULT_DIRECT, 0, 256 * GF2_MiB, NULL },
	{ "prefetch streams", GF2_OPT_INT, GF2_OPT(pf_streams),
	  GF2_RA_DEFAULT_STREAMS, 1, GF2_RA_MAX_STREAMS, NULL },
	{ "prefetch max memory", GF2_OPT_SIZE, GF2_OPT(pf_max_memory),
	  64 * GF2_MiB, 1 * GF2_MiB, 16 * GF2_GiB, NULL },
	{ "prefetch max age", GF2_OPT_INT, GF2_OPT(pf_max_age_ms),
	  250, 1, 3600 * 1000, NULL },
	{ "prefetch coherence", GF2_OPT_ENUM, GF2_OPT(pf_coherence),
	  GF2_COHERENCE_AGE, 0, 1, gf2_coherence_names },
	{ "posix lock cache", GF2_OPT_INT, GF2_OPT(lock_cache_ms),
	  0, 0, 60000, NULL },
	{ "lock check", GF2_OPT_ENUM, GF2_OPT(lock_check),
	  GF2_LOCK_CHECK_GETLK, 0, 1, gf2_lock_check_names },
	{ "client io-threads", GF2_OPT_BOOL, GF2_OPT(client_io_threads),
	  0, 0, 1, NULL },
	{ "event threads", GF2_OPT_INT, GF2_OPT(event_threads), 0, 0, 32,
	  NULL },
	{ "write cache", GF2_OPT_BOOL, GF2_OPT(write_cache), 0, 0, 1, NULL },
	{ "write cache max wait", GF2_OPT_INT, GF2_OPT(wc_max_wait_ms),
	  GF2_WC_DEFAULT_MAX_WAIT_MS, 100, 1800 * 1000, NULL },
	{ "shared read cache", GF2_OPT_SIZE, GF2_OPT(shr_size),
	  0, 0, GF2_SHR_SIZE_MAX, NULL },
	{ "shared read cache block", GF2_OPT_SIZE, GF2_OPT(shr_block),
	  GF2_SHR_DEFAULT_BLOCK, GF2_SHR_BLOCK_MIN, GF2_SHR_BLOCK_MAX, NULL },
};

const size_t gf2_share_nopts = sizeof(gf2_share_opts) /
			       sizeof(gf2_share_opts[0]);

static void gf2_opt_store(struct gf2_share_options *o,
			  const struct gf2_opt_def *d, uint64_t v)
{
	char *p = (char *)o + d->offset;

	switch (d->kind) {
	case GF2_OPT_BOOL:
		*(bool *)p = v != 0;
		break;
	case GF2_OPT_SIZE:
		*(uint64_t *)p = v;
		break;
	case GF2_OPT_INT:
	case GF2_OPT_ENUM:
		*(int64_t *)p = (int64_t)v;
		break;
	}
}

void gf2_share_options_default(struct gf2_share_options *o)
{
	size_t i;

	memset(o, 0, sizeof(*o));
	for (i = 0; i < gf2_share_nopts; i++) {
		gf2_opt_store(o, &gf2_share_opts[i], gf2_share_opts[i].def);
	}
}

int gf2_share_option_set(struct gf2_share_options *o,
			 const struct gf2_opt_def *d, const char *value,
			 char *errbuf, size_t errlen)
{
	uint64_t u = 0;
	int64_t i = 0;
	bool b = false;
	size_t c;

	switch (d->kind) {
	case GF2_OPT_BOOL:
		if (gf2_parse_bool(value, &b, errbuf, errlen) != 0) {
			return -1;
		}
		u = b ? 1 : 0;
		break;
	case GF2_OPT_SIZE:
		if (gf2_parse_size(value, d->min, d->max, &u, errbuf,
				   errlen) != 0) {
			return -1;
		}
		break;
	case GF2_OPT_INT:
		if (gf2_parse_int(value, (int64_t)d->min, (int64_t)d->max, &i,
				  errbuf, errlen) != 0) {
			return -1;
		}
		u = (uint64_t)i;
		break;
	case GF2_OPT_ENUM:
		for (c = 0; d->choices[c] != NULL; c++) {
			if (value != NULL &&
			    strcasecmp(value, d->choices[c]) == 0) {
				break;
			}
		}
		if (d->choices[c] == NULL) {
			gf2_err(errbuf, errlen, "unknown value (%s%s%s)",
				d->choices[0], d->choices[1] ? " or " : "",
				d->choices[1] ? d->choices[1] : "");
			return -1;
		}
		u = c;
		break;
	}
	gf2_opt_store(o, d, u);
	return 0;
}

void gf2_opt_format_default(const struct gf2_opt_def *d, char *buf,
			    size_t buflen)
{
	switch (d->kind) {
	case GF2_OPT_BOOL:
		snprintf(buf, buflen, "%s", d->def ? "yes" : "no");
		break;
	case GF2_OPT_ENUM:
		snprintf(buf, buflen, "%s", d->choices[d->def]);
		break;
	case GF2_OPT_SIZE:
	case GF2_OPT_INT:
		snprintf(buf, buflen, "%" PRIu64, d->def);
		break;
	}
}

int gf2_share_options_check(struct gf2_share_options *o, char *errbuf,
			    size_t errlen)
{
	struct gf2_shc_geom g;
	char why[GF2_ERRLEN];

	if (o->pf_init_window > o->pf_max_window) {
		gf2_err(errbuf, errlen, "glusterfs2:prefetch initial window "
			"is larger than glusterfs2:prefetch max window; "
			"using the max window for both");
		o->pf_init_window = o->pf_max_window;
		return -1;
	}
	if ((o->shr_block & (o->shr_block - 1)) != 0) {
		gf2_err(errbuf, errlen, "glusterfs2:shared read cache block "
			"= %" PRIu64 " is not a power of two; using %u",
			o->shr_block, (unsigned)GF2_SHR_DEFAULT_BLOCK);
		o->shr_block = GF2_SHR_DEFAULT_BLOCK;
		/* and the size is checked against that below */
		if (o->shr_size != 0 &&
		    gf2_shc_geometry(o->shr_size, o->shr_block, &g, NULL,
				     0) != 0) {
			o->shr_size = 0;
		}
		return -1;
	}
	if (o->shr_size != 0 &&
	    gf2_shc_geometry(o->shr_size, o->shr_block, &g, why,
			     sizeof(why)) != 0) {
		gf2_err(errbuf, errlen, "glusterfs2:shared read cache = %"
			PRIu64 ": %s; the shared read cache is off",
			o->shr_size, why);
		o->shr_size = 0;
		return -1;
	}
	return 0;
}
