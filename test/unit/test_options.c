/*
 * Unit tests for the option parsers (source/gf2_options.c).
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "gf2_options.h"

static void test_servers_default_port(void **state)
{
	struct gf2_volfile_server s[4];
	char err[GF2_ERRLEN] = "";
	size_t n = 0;

	assert_int_equal(gf2_parse_volfile_servers("localhost", s, 4, &n,
						   err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_string_equal(s[0].transport, "tcp");
	assert_string_equal(s[0].host, "localhost");
	assert_int_equal(s[0].port, 0);
}

static void test_servers_list(void **state)
{
	struct gf2_volfile_server s[8];
	char err[GF2_ERRLEN] = "";
	char buf[256];
	size_t n = 0;

	assert_int_equal(gf2_parse_volfile_servers(
		"tcp+host1:24007, host2 unix+/run/glusterd.socket "
		"[::1]:24008 rdma+10.0.0.1",
		s, 8, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 5);
	assert_string_equal(s[0].host, "host1");
	assert_int_equal(s[0].port, 24007);
	assert_string_equal(s[1].host, "host2");
	assert_string_equal(s[2].transport, "unix");
	assert_string_equal(s[2].host, "/run/glusterd.socket");
	assert_string_equal(s[3].host, "::1");
	assert_int_equal(s[3].port, 24008);
	assert_string_equal(s[4].transport, "rdma");

	gf2_format_volfile_servers(s, n, buf, sizeof(buf));
	assert_string_equal(buf, "tcp+host1:24007 tcp+host2 "
			    "unix+/run/glusterd.socket tcp+[::1]:24008 "
			    "rdma+10.0.0.1");
}

/*
 * Brackets hold IPv6 addresses only, and every accepted list logs in a
 * form that parses back to itself (found by test/fuzz/fuzz_options.c:
 * "[=]" was accepted as the host "=", logged as "tcp+=", and a unix
 * socket path with a ':' was logged in brackets).
 */
static void test_servers_brackets_roundtrip(void **state)
{
	static const char *good[] = {
		"[::1]", "[fe80::1%eth0]:24007", "[::ffff:10.0.0.1]:1",
		"unix+/run/a:b.socket", "[2001:DB8::7]",
	};
	static const char *bad[] = {
		"[=]", "[localhost]", "[10.0.0.1]", "[::1%]", "[::1%e/0]",
		"[a/b:c]", "[::g]",
	};
	struct gf2_volfile_server s[2];
	struct gf2_volfile_server again[2];
	char err[GF2_ERRLEN];
	char buf[300];
	size_t n = 0;
	size_t n2 = 0;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(gf2_parse_volfile_servers(good[i], s, 2, &n,
							   err, sizeof(err)),
				 0);
		gf2_format_volfile_servers(s, n, buf, sizeof(buf));
		assert_int_equal(gf2_parse_volfile_servers(buf, again, 2, &n2,
							   err, sizeof(err)),
				 0);
		assert_int_equal(n2, n);
		assert_string_equal(again[0].transport, s[0].transport);
		assert_string_equal(again[0].host, s[0].host);
		assert_int_equal(again[0].port, s[0].port);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(gf2_parse_volfile_servers(bad[i], s, 2, &n,
							   err, sizeof(err)),
				 -1);
		assert_true(strlen(err) > 0);
	}
}

static void test_servers_bad(void **state)
{
	static const char *bad[] = {
		"", "   ", ",", "host:0", "host:65536", "host:abc", "host:",
		"foo+host", "unix+relative.sock", "[::1", "[]:1",
		"::1:24007", "ho st", "h$st", "[::1]x", "tcp+",
	};
	struct gf2_volfile_server s[4];
	char err[GF2_ERRLEN];
	size_t n = 42;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (strcmp(bad[i], "ho st") == 0) {
			/* two hosts, both fine */
			assert_int_equal(gf2_parse_volfile_servers(
				bad[i], s, 4, &n, err, sizeof(err)), 0);
			continue;
		}
		assert_int_equal(gf2_parse_volfile_servers(bad[i], s, 4, &n,
							   err, sizeof(err)),
				 -1);
		assert_true(strlen(err) > 0);
		assert_int_equal(n, 0);
	}
	assert_int_equal(gf2_parse_volfile_servers(NULL, s, 4, &n, err,
						   sizeof(err)), -1);
}

static void test_servers_too_many(void **state)
{
	struct gf2_volfile_server s[2];
	char err[GF2_ERRLEN];
	size_t n = 0;

	assert_int_equal(gf2_parse_volfile_servers("a b c", s, 2, &n, err,
						   sizeof(err)), -1);
	assert_non_null(strstr(err, "too many"));
}

static void test_volume_names(void **state)
{
	char err[GF2_ERRLEN];
	char longname[300];

	assert_true(gf2_valid_volume_name("gv0", err, sizeof(err)));
	assert_true(gf2_valid_volume_name("my_vol-1.x", err, sizeof(err)));
	assert_false(gf2_valid_volume_name("", err, sizeof(err)));
	assert_false(gf2_valid_volume_name(NULL, err, sizeof(err)));
	assert_false(gf2_valid_volume_name("-x", err, sizeof(err)));
	assert_false(gf2_valid_volume_name("a/b", err, sizeof(err)));
	assert_false(gf2_valid_volume_name("a b", err, sizeof(err)));
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_false(gf2_valid_volume_name(longname, err, sizeof(err)));
}

static void test_sizes(void **state)
{
	char err[GF2_ERRLEN];
	uint64_t v = 0;

	assert_int_equal(gf2_parse_size("4096", 0, UINT64_MAX, &v, err,
					sizeof(err)), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(gf2_parse_size("8M", 0, UINT64_MAX, &v, err,
					sizeof(err)), 0);
	assert_int_equal(v, 8 << 20);
	assert_int_equal(gf2_parse_size("2 GiB", 0, UINT64_MAX, &v, err,
					sizeof(err)), 0);
	assert_int_equal(v, 2ULL << 30);
	assert_int_equal(gf2_parse_size("64k", 0, UINT64_MAX, &v, err,
					sizeof(err)), 0);
	assert_int_equal(v, 65536);

	assert_int_equal(gf2_parse_size("", 0, 10, &v, err, sizeof(err)), -1);
	assert_int_equal(gf2_parse_size("-1", 0, 10, &v, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "negative"));
	assert_int_equal(gf2_parse_size("abc", 0, 10, &v, err, sizeof(err)),
			 -1);
	assert_int_equal(gf2_parse_size("10X", 0, 100, &v, err, sizeof(err)),
			 -1);
	assert_int_equal(gf2_parse_size("11", 0, 10, &v, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "out of range"));
	assert_int_equal(gf2_parse_size("99999999999999999999", 0,
					UINT64_MAX, &v, err, sizeof(err)), -1);
	assert_int_equal(gf2_parse_size("17179869184T", 0, UINT64_MAX, &v,
					err, sizeof(err)), -1);
	assert_int_equal(gf2_parse_size(NULL, 0, 10, &v, err, sizeof(err)),
			 -1);
}

static void test_ints_and_bools(void **state)
{
	char err[GF2_ERRLEN];
	int64_t v = 0;
	bool b = false;

	assert_int_equal(gf2_parse_int("7", 0, 9, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 7);
	assert_int_equal(gf2_parse_int(" 3 ", 0, 9, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 3);
	assert_int_equal(gf2_parse_int("10", 0, 9, &v, err, sizeof(err)), -1);
	assert_int_equal(gf2_parse_int("-1", 0, 9, &v, err, sizeof(err)), -1);
	assert_int_equal(gf2_parse_int("x", 0, 9, &v, err, sizeof(err)), -1);
	assert_int_equal(gf2_parse_int("5x", 0, 9, &v, err, sizeof(err)), -1);
	assert_int_equal(gf2_parse_int("", 0, 9, &v, err, sizeof(err)), -1);
	assert_int_equal(gf2_parse_int("99999999999999999999999", 0, 9, &v,
				       err, sizeof(err)), -1);

	assert_int_equal(gf2_parse_bool("Yes", &b, err, sizeof(err)), 0);
	assert_true(b);
	assert_int_equal(gf2_parse_bool("off", &b, err, sizeof(err)), 0);
	assert_false(b);
	assert_int_equal(gf2_parse_bool("maybe", &b, err, sizeof(err)), -1);
	assert_int_equal(gf2_parse_bool("", &b, err, sizeof(err)), -1);
}

static void test_volfile_samba_options(void **state)
{
	const char *plain =
		"volume v-md-cache\n"
		"    type performance/md-cache\n"
		"    subvolumes v-quick-read\n"
		"end-volume\n";
	const char *samba =
		"volume v-nl-cache\n"
		"    type performance/nl-cache\n"
		"    option nl-cache-timeout 600\n"
		"end-volume\n"
		"volume v-md-cache\n"
		"    type performance/md-cache\n"
		"    option cache-invalidation on\n"
		"    option md-cache-timeout 600\n"
		"end-volume\n";
	/* cache-invalidation of another translator does not count */
	const char *other =
		"volume v-md-cache\n"
		"\ttype performance/md-cache\r\n"
		"end-volume\n"
		"volume v-x\n"
		"    type features/upcall\n"
		"    option cache-invalidation on\n"
		"end-volume";
	bool md, nl;
	unsigned timeout = 0;

	gf2_volfile_samba_options(plain, &md, &nl, &timeout);
	assert_false(md);
	assert_false(nl);
	assert_int_equal(timeout, 1);
	gf2_volfile_samba_options(samba, &md, &nl, &timeout);
	assert_true(md);
	assert_true(nl);
	assert_int_equal(timeout, 600);
	gf2_volfile_samba_options(samba, &md, &nl, NULL);
	assert_true(md);
	gf2_volfile_samba_options(other, &md, &nl, &timeout);
	assert_false(md);
	assert_false(nl);
	assert_int_equal(timeout, 1);
	gf2_volfile_samba_options("", &md, &nl, &timeout);
	assert_false(md || nl);
	/* only md-cache's own timeout, and only a sane number */
	gf2_volfile_samba_options("volume a\n type performance/md-cache\n"
				  " option md-cache-timeout 30\n"
				  "volume b\n type performance/io-cache\n"
				  " option md-cache-timeout 99\n",
				  &md, &nl, &timeout);
	assert_int_equal(timeout, 30);
	gf2_volfile_samba_options("volume a\n type performance/md-cache\n"
				  " option md-cache-timeout 60s\n",
				  &md, &nl, &timeout);
	assert_int_equal(timeout, 1);
	gf2_volfile_samba_options("volume a\n type performance/md-cache\n"
				  " option md-cache-timeout 601\n",
				  &md, &nl, &timeout);
	assert_int_equal(timeout, 1);
}

static const struct gf2_opt_def *opt_named(const char *name)
{
	size_t i;

	for (i = 0; i < gf2_share_nopts; i++) {
		if (strcmp(gf2_share_opts[i].name, name) == 0) {
			return &gf2_share_opts[i];
		}
	}
	fail_msg("no option %s", name);
	return NULL;
}

static void test_volfile_bricks_missing(void **state)
{
	static const char dist[] =
		"volume v-client-0\n"
		"    type protocol/client\n"
		"    option remote-host h1\n"
		"    option remote-subvolume /b/one\n"
		"end-volume\n"
		"\n"
		"volume v-client-1\n"
		"    type protocol/client\n"
		"    option remote-subvolume /b/two\n"
		"    option remote-host h2\n"
		"end-volume\n"
		"volume snapd-v\n"
		"    type protocol/client\n"
		"    option remote-host h1\n"
		"    option remote-subvolume snapd-v\n"
		"end-volume\n"
		"volume v-dht\n"
		"    type cluster/distribute\n"
		"    subvolumes v-client-0 v-client-1\n"
		"end-volume\n";
	static const char both[] =
		"((<DISTRIBUTE:v-dht> <POSIX(/b/one):h1:/b/one/> "
		"<POSIX(/b/two):h2:/b/two/>) (v-dht-layout))";
	static const char one[] =
		"((<DISTRIBUTE:v-dht> <POSIX(/b/two):h2:/b/two/>) "
		"(v-dht-layout))";
	/* a path that only starts like a brick's does not name it */
	static const char prefix[] =
		"(<POSIX(/b/one2):h1:/b/one2/> <POSIX(/b/two):h2:/b/two/>)";
	unsigned n = 99, m = 99;
	char missing[64];
	char tiny[6];

	(void)state;
	assert_int_equal(gf2_volfile_bricks_missing(dist, both, &n, &m,
						    missing, sizeof(missing)),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(m, 0);
	assert_string_equal(missing, "");

	assert_int_equal(gf2_volfile_bricks_missing(dist, one, &n, &m,
						    missing, sizeof(missing)),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(m, 1);
	assert_string_equal(missing, "h1:/b/one");

	assert_int_equal(gf2_volfile_bricks_missing(dist, prefix, &n, &m,
						    missing, sizeof(missing)),
			 0);
	assert_int_equal(m, 1);
	assert_string_equal(missing, "h1:/b/one");

	assert_int_equal(gf2_volfile_bricks_missing(dist, "", &n, &m,
						    missing, sizeof(missing)),
			 0);
	assert_int_equal(m, 2);
	assert_string_equal(missing, "h1:/b/one h2:/b/two");

	/* truncated, still terminated, the count complete */
	assert_int_equal(gf2_volfile_bricks_missing(dist, "", &n, &m,
						    tiny, sizeof(tiny)), 0);
	assert_int_equal(m, 2);
	assert_string_equal(tiny, "h1:/b");

	/* no brick, or a graph whose pathinfo need not name every brick */
	assert_int_equal(gf2_volfile_bricks_missing("", both, &n, &m,
						    missing, sizeof(missing)),
			 -1);
	assert_int_equal(gf2_volfile_bricks_missing(
				 "volume v-client-0\n type protocol/client\n"
				 " option remote-subvolume /b/one\n"
				 "end-volume\n"
				 "volume v-disperse-0\n type cluster/disperse\n"
				 "end-volume\n", "", &n, &m,
				 missing, sizeof(missing)), -1);
	assert_int_equal(gf2_volfile_bricks_missing(
				 "volume v-client-0\n type protocol/client\n"
				 " option remote-subvolume /b/one\n"
				 "end-volume\n"
				 "volume v-replicate-0\n type cluster/replicate\n"
				 " option thin-arbiter h3:/ta\n"
				 "end-volume\n", "", &n, &m,
				 missing, sizeof(missing)), -1);
}

static void test_share_option_defaults(void **state)
{
	struct gf2_share_options o;
	char buf[64];

	gf2_share_options_default(&o);
	assert_int_equal(o.loglevel, 7);
	assert_true(o.prefetch);
	assert_int_equal(o.pf_init_window, 256 * 1024);
	assert_int_equal(o.pf_max_window, 8 * 1024 * 1024);
	assert_int_equal(o.pf_streams, 4);
	assert_int_equal(o.pf_max_memory, 64 * 1024 * 1024);
	assert_int_equal(o.pf_max_age_ms, 250);
	assert_int_equal(o.pf_coherence, GF2_COHERENCE_AGE);
	assert_int_equal(o.lock_cache_ms, 0);
	assert_false(o.client_io_threads);
	assert_int_equal(o.event_threads, 0);
	assert_false(o.write_cache);

	gf2_opt_format_default(opt_named("prefetch coherence"), buf,
			       sizeof(buf));
	assert_string_equal(buf, "age");
	gf2_opt_format_default(opt_named("client io-threads"), buf,
			       sizeof(buf));
	assert_string_equal(buf, "no");
	gf2_opt_format_default(opt_named("prefetch max memory"), buf,
			       sizeof(buf));
	assert_string_equal(buf, "67108864");
}

static void test_share_option_set(void **state)
{
	struct gf2_share_options o;
	char err[GF2_ERRLEN];

	gf2_share_options_default(&o);
	assert_int_equal(gf2_share_option_set(&o, opt_named("prefetch"), "no",
					      err, sizeof(err)), 0);
	assert_false(o.prefetch);
	assert_int_equal(gf2_share_option_set(
		&o, opt_named("prefetch max window"), "16M", err,
		sizeof(err)), 0);
	assert_int_equal(o.pf_max_window, 16 * 1024 * 1024);
	assert_int_equal(gf2_share_option_set(
		&o, opt_named("prefetch coherence"), "STRICT", err,
		sizeof(err)), 0);
	assert_int_equal(o.pf_coherence, GF2_COHERENCE_STRICT);
	assert_int_equal(gf2_share_option_set(
		&o, opt_named("posix lock cache"), "250", err, sizeof(err)), 0);
	assert_int_equal(o.lock_cache_ms, 250);
}

static void test_share_option_bad_keeps_default(void **state)
{
	struct gf2_share_options o;
	char err[GF2_ERRLEN];

	gf2_share_options_default(&o);
	assert_int_equal(gf2_share_option_set(&o, opt_named("loglevel"), "10",
					      err, sizeof(err)), -1);
	assert_int_equal(o.loglevel, 7);
	assert_non_null(strstr(err, "10"));
	assert_int_equal(gf2_share_option_set(
		&o, opt_named("prefetch max memory"), "512K", err,
		sizeof(err)), -1);
	assert_int_equal(o.pf_max_memory, 64 * 1024 * 1024);
	assert_int_equal(gf2_share_option_set(
		&o, opt_named("prefetch coherence"), "lazy", err,
		sizeof(err)), -1);
	assert_int_equal(o.pf_coherence, GF2_COHERENCE_AGE);
	assert_non_null(strstr(err, "age or strict"));
	assert_int_equal(gf2_share_option_set(
		&o, opt_named("prefetch streams"), "9", err, sizeof(err)), -1);
	assert_int_equal(o.pf_streams, 4);
	assert_int_equal(gf2_share_option_set(&o, opt_named("prefetch"),
					      "maybe", err, sizeof(err)), -1);
	assert_true(o.prefetch);
	assert_int_equal(gf2_share_option_set(
		&o, opt_named("event threads"), "33", err, sizeof(err)), -1);
	assert_int_equal(gf2_share_option_set(
		&o, opt_named("event threads"), "-1", err, sizeof(err)), -1);
	assert_int_equal(o.event_threads, 0);
	assert_int_equal(gf2_share_option_set(
		&o, opt_named("event threads"), "1", err, sizeof(err)), 0);
	assert_int_equal(o.event_threads, 1);
}

static void test_share_options_check(void **state)
{
	struct gf2_share_options o;
	char err[GF2_ERRLEN];

	gf2_share_options_default(&o);
	assert_int_equal(gf2_share_options_check(&o, err, sizeof(err)), 0);
	o.pf_init_window = 4 * 1024 * 1024;
	o.pf_max_window = 1024 * 1024;
	assert_int_equal(gf2_share_options_check(&o, err, sizeof(err)), -1);
	assert_int_equal(o.pf_init_window, 1024 * 1024);
}

static void test_shared_read_cache_options(void **state)
{
	struct gf2_share_options o;
	const struct gf2_opt_def *size = NULL;
	const struct gf2_opt_def *block = NULL;
	char err[GF2_ERRLEN];
	size_t i;

	for (i = 0; i < gf2_share_nopts; i++) {
		if (strcmp(gf2_share_opts[i].name, "shared read cache") == 0) {
			size = &gf2_share_opts[i];
		}
		if (strcmp(gf2_share_opts[i].name,
			   "shared read cache block") == 0) {
			block = &gf2_share_opts[i];
		}
	}
	assert_non_null(size);
	assert_non_null(block);
	gf2_share_options_default(&o);
	/* off by default, blocks of 1 MiB */
	assert_int_equal(o.shr_size, 0);
	assert_int_equal(o.shr_block, 1024 * 1024);
	assert_int_equal(gf2_share_option_set(&o, size, "512M", err,
					      sizeof(err)), 0);
	assert_int_equal(o.shr_size, 512ULL * 1024 * 1024);
	assert_int_equal(gf2_share_options_check(&o, err, sizeof(err)), 0);
	/* out of range: refused, the value set before stays */
	assert_int_equal(gf2_share_option_set(&o, block, "32K", err,
					      sizeof(err)), -1);
	assert_int_equal(gf2_share_option_set(&o, block, "32M", err,
					      sizeof(err)), -1);
	assert_int_equal(o.shr_block, 1024 * 1024);
	assert_int_equal(gf2_share_option_set(&o, size, "65G", err,
					      sizeof(err)), -1);
	assert_int_equal(o.shr_size, 512ULL * 1024 * 1024);
	/* not a power of two: the default block size */
	assert_int_equal(gf2_share_option_set(&o, block, "768K", err,
					      sizeof(err)), 0);
	assert_int_equal(gf2_share_options_check(&o, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a power of two"));
	assert_int_equal(o.shr_block, 1024 * 1024);
	assert_int_equal(o.shr_size, 512ULL * 1024 * 1024);
	/* too small for its blocks: off */
	assert_int_equal(gf2_share_option_set(&o, size, "2M", err,
					      sizeof(err)), 0);
	assert_int_equal(gf2_share_options_check(&o, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "the shared read cache is off"));
	assert_int_equal(o.shr_size, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_read_cache_options),
		cmocka_unit_test(test_servers_default_port),
		cmocka_unit_test(test_servers_list),
		cmocka_unit_test(test_servers_bad),
		cmocka_unit_test(test_servers_brackets_roundtrip),
		cmocka_unit_test(test_servers_too_many),
		cmocka_unit_test(test_volume_names),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_ints_and_bools),
		cmocka_unit_test(test_volfile_samba_options),
		cmocka_unit_test(test_volfile_bricks_missing),
		cmocka_unit_test(test_share_option_defaults),
		cmocka_unit_test(test_share_option_set),
		cmocka_unit_test(test_share_option_bad_keeps_default),
		cmocka_unit_test(test_share_options_check),
	};

	cmocka_set_message_output(CM_OUTPUT_STDOUT);
	return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
