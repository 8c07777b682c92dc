/*
 * Unit tests for the Samba release check (source/gf2_sambaver.c): which
 * version strings parse, and which running smbd a module compiled for
 * one release accepts.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "gf2_sambaver.h"

static void test_parse(void **state)
{
	struct gf2_samba_version v = { 0 };

	(void)state;
	assert_true(gf2_samba_version_parse("4.17.12-Debian", &v));
	assert_int_equal(v.major, 4);
	assert_int_equal(v.minor, 17);
	assert_int_equal(v.release, 12);
	assert_true(gf2_samba_version_parse("4.25.0rc1", &v));
	assert_int_equal(v.minor, 25);
	assert_int_equal(v.release, 0);
	assert_true(gf2_samba_version_parse("4.22.11", &v));
	assert_int_equal(v.release, 11);
	assert_true(gf2_samba_version_parse("4.21.3-Ubuntu", &v));
	assert_int_equal(v.minor, 21);
}

static void test_parse_bad(void **state)
{
	struct gf2_samba_version v = { 7, 7, 7 };
	const char *bad[] = {
		"", "4", "4.17", "4.17.", ".4.17.12", "4..12", "a.b.c",
		"4.17.12.1", "4.17.x", "-4.17.12", "4.1234567.0",
		" 4.17.12",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_false(gf2_samba_version_parse(bad[i], &v));
	}
	assert_false(gf2_samba_version_parse(NULL, &v));
	assert_false(gf2_samba_version_parse("4.17.12", NULL));
	/* a failed parse leaves the result alone */
	assert_int_equal(v.major, 7);
	assert_int_equal(v.minor, 7);
	assert_int_equal(v.release, 7);
}

static void test_match(void **state)
{
	(void)state;
	assert_int_equal(gf2_samba_version_match("4.17.12", "4.17.12-Debian"),
			 GF2_SAMBA_SAME);
	assert_int_equal(gf2_samba_version_match("4.17.12", "4.17.13-Debian"),
			 GF2_SAMBA_SAME_SERIES);
	assert_int_equal(gf2_samba_version_match("4.24.7", "4.24.8"),
			 GF2_SAMBA_SAME_SERIES);
	/* interface 49 for all three: the series tells them apart */
	assert_int_equal(gf2_samba_version_match("4.19.9", "4.20.1"),
			 GF2_SAMBA_OTHER_SERIES);
	assert_int_equal(gf2_samba_version_match("4.17.12", "4.16.12-Debian"),
			 GF2_SAMBA_OTHER_SERIES);
	assert_int_equal(gf2_samba_version_match("4.17.12", "5.17.12"),
			 GF2_SAMBA_OTHER_SERIES);
	assert_int_equal(gf2_samba_version_match("4.17.12", "garbage"),
			 GF2_SAMBA_UNKNOWN);
	assert_int_equal(gf2_samba_version_match("", "4.17.12"),
			 GF2_SAMBA_UNKNOWN);
	assert_int_equal(gf2_samba_version_match("4.17.12", NULL),
			 GF2_SAMBA_UNKNOWN);
}

static void test_usable(void **state)
{
	(void)state;
	assert_true(gf2_samba_version_usable(GF2_SAMBA_SAME));
	assert_true(gf2_samba_version_usable(GF2_SAMBA_SAME_SERIES));
	assert_false(gf2_samba_version_usable(GF2_SAMBA_OTHER_SERIES));
	assert_false(gf2_samba_version_usable(GF2_SAMBA_UNKNOWN));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_usable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
