/*
 * Fuzz harness: option parsing (source/gf2_options.c).
 *
 * Input: byte 0 selects the bounds given to gf2_parse_size/int and the
 * buffer size given to gf2_format_volfile_servers; the rest is the option
 * value (also read as a client volfile).  Every parser runs on it.
 *
 * Invariants:
 *   - nothing crashes or reads/writes out of bounds (ASan, UBSan);
 *   - a failure fills errbuf with a non-empty, terminated message;
 *   - volfile servers: 1..max entries, known transport, a terminated
 *     non-empty host of at most GF2_MAX_HOST_LEN bytes, port 0..65535, a
 *     unix entry has an absolute path and no port, a tcp/rdma host holds no
 *     separator; the formatted list parses back to the same servers;
 *     formatting into any buffer size stays inside it and terminates;
 *   - a volume name is accepted exactly when it is 1..255 characters of
 *     [A-Za-z0-9_.-] not starting with '-' or '.';
 *   - a parsed size or integer lies in [min, max]; a size printed as a
 *     plain number parses back to itself;
 *   - a boolean is accepted exactly when it is one of smb.conf's words;
 *   - the volfile check only reports what the text contains.
 */

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <strings.h>

#include "gf2_options.h"
#include "fuzz.h"

static const uint64_t size_bounds[][2] = {
	{ 0, UINT64_MAX },
	{ 4096, 256ULL << 20 },			/* prefetch initial window */
	{ 64ULL << 10, 256ULL << 20 },		/* prefetch max window */
	{ 1ULL << 20, 16ULL << 30 },		/* prefetch max memory */
	{ 1, 1 },
	{ UINT64_MAX - 1, UINT64_MAX },
	{ 0, 0 },
	{ 5, 3 },				/* empty range */
};

static const int64_t int_bounds[][2] = {
	{ INT64_MIN, INT64_MAX },
	{ 0, 9 },				/* loglevel */
	{ 1, 3600000 },				/* prefetch max age */
	{ 1, 8 },				/* prefetch streams */
	{ -5, -1 },
	{ INT64_MAX, INT64_MAX },
	{ INT64_MIN, INT64_MIN },
	{ 0, 0 },
};

static void check_err(const char *err)
{
	size_t n = strnlen(err, GF2_ERRLEN);

	FUZZ_CHECK(n > 0);
	FUZZ_CHECK(n < GF2_ERRLEN);
}

static bool is_sep(char c)
{
	return c == ',' || isspace((unsigned char)c);
}

static void check_server(const struct gf2_volfile_server *s)
{
	size_t hl = strnlen(s->host, sizeof(s->host));
	size_t i;

	FUZZ_CHECK(strcmp(s->transport, "tcp") == 0 ||
		   strcmp(s->transport, "unix") == 0 ||
		   strcmp(s->transport, "rdma") == 0);
	FUZZ_CHECK(hl > 0 && hl <= GF2_MAX_HOST_LEN);
	FUZZ_CHECK(s->port >= 0 && s->port <= 65535);
	for (i = 0; i < hl; i++) {
		FUZZ_CHECK(!is_sep(s->host[i]));
	}
	if (strcmp(s->transport, "unix") == 0) {
		FUZZ_CHECK(s->host[0] == '/');
		FUZZ_CHECK(s->port == 0);
	}
}

static bool same_server(const struct gf2_volfile_server *a,
			const struct gf2_volfile_server *b)
{
	return strcmp(a->transport, b->transport) == 0 &&
	       strcmp(a->host, b->host) == 0 && a->port == b->port;
}

static void fuzz_servers(const char *s, size_t fmtlen)
{
	struct gf2_volfile_server srv[GF2_MAX_VOLFILE_SERVERS];
	struct gf2_volfile_server again[GF2_MAX_VOLFILE_SERVERS];
	char err[GF2_ERRLEN];
	char line[GF2_MAX_VOLFILE_SERVERS * (GF2_MAX_HOST_LEN + 32)];
	size_t num = 99;
	size_t num2 = 99;
	size_t maxn = 1 + fmtlen % GF2_MAX_VOLFILE_SERVERS;
	char *small = NULL;
	size_t i;
	int ret;

	memset(err, 0, sizeof(err));
	ret = gf2_parse_volfile_servers(s, srv, maxn, &num, err, sizeof(err));
	if (ret != 0) {
		FUZZ_CHECK(ret == -1);
		FUZZ_CHECK(num == 0);
		check_err(err);
		return;
	}
	FUZZ_CHECK(num >= 1 && num <= maxn);
	for (i = 0; i < num; i++) {
		check_server(&srv[i]);
	}

	/* The log line parses back to the same list. */
	gf2_format_volfile_servers(srv, num, line, sizeof(line));
	FUZZ_CHECK(strnlen(line, sizeof(line)) < sizeof(line));
	memset(err, 0, sizeof(err));
	ret = gf2_parse_volfile_servers(line, again, maxn, &num2, err,
					sizeof(err));
	if (ret != 0) {
		fprintf(stderr, "formatted '%s' does not parse: %s\n", line,
			err);
	}
	FUZZ_CHECK(ret == 0);
	FUZZ_CHECK(num2 == num);
	for (i = 0; i < num; i++) {
		FUZZ_CHECK(same_server(&srv[i], &again[i]));
	}

	/* Any buffer size: stays inside, terminated (ASan sees overruns). */
	small = malloc(fmtlen + 1);
	FUZZ_CHECK(small != NULL);
	gf2_format_volfile_servers(srv, num, small, fmtlen);
	if (fmtlen > 0) {
		FUZZ_CHECK(strnlen(small, fmtlen) < fmtlen);
		FUZZ_CHECK(strncmp(small, line, strlen(small)) == 0);
	}
	free(small);
}

static void fuzz_volume(const char *s)
{
	char err[GF2_ERRLEN];
	size_t len = strlen(s);
	bool want = len >= 1 && len <= GF2_MAX_VOLUME_LEN &&
		    s[0] != '-' && s[0] != '.';
	size_t i;

	for (i = 0; want && i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		want = isalnum(c) || c == '_' || c == '-' || c == '.';
	}
	memset(err, 0, sizeof(err));
	if (gf2_valid_volume_name(s, err, sizeof(err))) {
		FUZZ_CHECK(want);
	} else {
		FUZZ_CHECK(!want);
		check_err(err);
	}
}

static void fuzz_size(const char *s, unsigned sel)
{
	uint64_t min = size_bounds[sel % 8][0];
	uint64_t max = size_bounds[sel % 8][1];
	uint64_t v = 0;
	uint64_t v2 = 0;
	char err[GF2_ERRLEN];
	char num[32];

	memset(err, 0, sizeof(err));
	if (gf2_parse_size(s, min, max, &v, err, sizeof(err)) != 0) {
		check_err(err);
		return;
	}
	FUZZ_CHECK(v >= min && v <= max);
	snprintf(num, sizeof(num), "%" PRIu64, v);
	FUZZ_CHECK(gf2_parse_size(num, min, max, &v2, err, sizeof(err)) == 0);
	FUZZ_CHECK(v2 == v);
}

static void fuzz_int(const char *s, unsigned sel)
{
	int64_t min = int_bounds[sel % 8][0];
	int64_t max = int_bounds[sel % 8][1];
	int64_t v = 0;
	int64_t v2 = 0;
	char err[GF2_ERRLEN];
	char num[32];

	memset(err, 0, sizeof(err));
	if (gf2_parse_int(s, min, max, &v, err, sizeof(err)) != 0) {
		check_err(err);
		return;
	}
	FUZZ_CHECK(v >= min && v <= max);
	snprintf(num, sizeof(num), "%" PRId64, v);
	FUZZ_CHECK(gf2_parse_int(num, min, max, &v2, err, sizeof(err)) == 0);
	FUZZ_CHECK(v2 == v);
}

static void fuzz_bool(const char *s)
{
	static const char *words[] = { "yes", "true", "on", "1",
				       "no", "false", "off", "0" };
	char err[GF2_ERRLEN];
	bool v = false;
	int want = -1;
	size_t i;

	for (i = 0; i < 8; i++) {
		if (strcasecmp(s, words[i]) == 0) {
			want = i < 4;
		}
	}
	memset(err, 0, sizeof(err));
	if (gf2_parse_bool(s, &v, err, sizeof(err)) == 0) {
		FUZZ_CHECK(want != -1);
		FUZZ_CHECK((int)v == want);
	} else {
		FUZZ_CHECK(want == -1);
		check_err(err);
	}
}

static void fuzz_volfile(const char *s)
{
	bool md = true;
	bool nl = true;
	unsigned timeout = 12345;

	gf2_volfile_samba_options(s, &md, &nl, &timeout);
	FUZZ_CHECK(timeout <= 600);
	if (strstr(s, "type performance/nl-cache") == NULL) {
		FUZZ_CHECK(!nl);
	}
	if (strstr(s, "option cache-invalidation on") == NULL ||
	    strstr(s, "type performance/md-cache") == NULL) {
		FUZZ_CHECK(!md);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned sel;
	char *s = NULL;

	if (size < 1) {
		return 0;
	}
	sel = data[0];
	s = malloc(size);
	if (s == NULL) {
		return 0;
	}
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';

	fuzz_servers(s, sel % 64);
	fuzz_volume(s);
	fuzz_size(s, sel);
	fuzz_int(s, sel >> 3);
	fuzz_bool(s);
	fuzz_volfile(s);

	free(s);
	return 0;
}
