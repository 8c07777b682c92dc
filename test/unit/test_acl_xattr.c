/*
 * Unit tests for the POSIX ACL xattr format (source/gf2_acl_xattr.c).
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <cmocka.h>

#include "gf2_acl_xattr.h"

#define U GF2_ACL_UNDEFINED_ID

/* The bytes the Linux kernel stores for `setfacl -m u::rw-,g::r--,o::---`. */
static const uint8_t mode_0640[] = {
	0x02, 0x00, 0x00, 0x00,
	0x01, 0x00, 0x06, 0x00, 0xff, 0xff, 0xff, 0xff,
	0x04, 0x00, 0x04, 0x00, 0xff, 0xff, 0xff, 0xff,
	0x20, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
};

/* user::rwx user:1003:r-- group::r-x group:1002:rw- mask::rwx other::--- */
static const uint8_t named[] = {
	0x02, 0x00, 0x00, 0x00,
	0x01, 0x00, 0x07, 0x00, 0xff, 0xff, 0xff, 0xff,
	0x02, 0x00, 0x04, 0x00, 0xeb, 0x03, 0x00, 0x00,
	0x04, 0x00, 0x05, 0x00, 0xff, 0xff, 0xff, 0xff,
	0x08, 0x00, 0x06, 0x00, 0xea, 0x03, 0x00, 0x00,
	0x10, 0x00, 0x07, 0x00, 0xff, 0xff, 0xff, 0xff,
	0x20, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
};

static const struct gf2_acl_entry named_entries[] = {
	{ GF2_ACL_USER_OBJ, 7, U },
	{ GF2_ACL_USER, 4, 1003 },
	{ GF2_ACL_GROUP_OBJ, 5, U },
	{ GF2_ACL_GROUP, 6, 1002 },
	{ GF2_ACL_MASK, 7, U },
	{ GF2_ACL_OTHER, 0, U },
};

static void assert_entries_equal(const struct gf2_acl_entry *a,
				 const struct gf2_acl_entry *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		assert_int_equal(a[i].tag, b[i].tag);
		assert_int_equal(a[i].perm, b[i].perm);
		assert_int_equal(a[i].id, b[i].id);
	}
}

static void test_minimum_acl(void **state)
{
	struct gf2_acl_entry e[3];
	struct gf2_acl_entry d[8];
	uint8_t buf[64];
	size_t n = 0;

	assert_int_equal(gf2_acl_from_mode(0100640, e), 3);
	assert_int_equal(e[0].tag, GF2_ACL_USER_OBJ);
	assert_int_equal(e[0].perm, 6);
	assert_int_equal(e[1].tag, GF2_ACL_GROUP_OBJ);
	assert_int_equal(e[1].perm, 4);
	assert_int_equal(e[2].tag, GF2_ACL_OTHER);
	assert_int_equal(e[2].perm, 0);

	assert_int_equal(gf2_acl_xattr_size(3), sizeof(mode_0640));
	assert_int_equal(gf2_acl_xattr_encode(e, 3, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, mode_0640, sizeof(mode_0640));

	assert_int_equal(gf2_acl_xattr_decode(mode_0640, sizeof(mode_0640),
					      d, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_entries_equal(d, e, 3);
}

static void test_named_round_trip(void **state)
{
	struct gf2_acl_entry e[6];
	struct gf2_acl_entry d[6];
	uint8_t buf[sizeof(named)];
	size_t n = 0;

	memcpy(e, named_entries, sizeof(e));
	assert_int_equal(gf2_acl_xattr_encode(e, 6, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, named, sizeof(named));

	assert_int_equal(gf2_acl_xattr_decode(named, sizeof(named), d, 6, &n),
			 0);
	assert_int_equal(n, 6);
	assert_entries_equal(d, named_entries, 6);

	/* and back again, byte for byte */
	assert_int_equal(gf2_acl_xattr_encode(d, n, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, named, sizeof(named));
}

static void test_many_named(void **state)
{
	struct gf2_acl_entry e[64];
	struct gf2_acl_entry d[64];
	uint8_t buf[4 + 64 * 8];
	size_t n = 0, i, k = 0;

	e[k++] = (struct gf2_acl_entry){ GF2_ACL_OTHER, 1, U };
	for (i = 0; i < 30; i++) {
		/* ids that do not sort the same as signed numbers */
		e[k++] = (struct gf2_acl_entry){ GF2_ACL_GROUP, i % 8,
						 0xfffffff0U - (uint32_t)i };
		e[k++] = (struct gf2_acl_entry){ GF2_ACL_USER, (i + 1) % 8,
						 (uint32_t)i * 1000 };
	}
	e[k++] = (struct gf2_acl_entry){ GF2_ACL_MASK, 7, U };
	e[k++] = (struct gf2_acl_entry){ GF2_ACL_GROUP_OBJ, 0, U };
	e[k++] = (struct gf2_acl_entry){ GF2_ACL_USER_OBJ, 6, U };

	assert_int_equal(gf2_acl_xattr_encode(e, k, buf,
					      gf2_acl_xattr_size(k)), 0);
	assert_int_equal(gf2_acl_xattr_decode(buf, gf2_acl_xattr_size(k), d,
					      64, &n), 0);
	assert_int_equal(n, k);
	assert_int_equal(d[0].tag, GF2_ACL_USER_OBJ);
	for (i = 0; i < 30; i++) {
		assert_int_equal(d[1 + i].tag, GF2_ACL_USER);
		assert_int_equal(d[1 + i].id, i * 1000);
		assert_int_equal(d[32 + i].tag, GF2_ACL_GROUP);
		assert_int_equal(d[32 + i].id, 0xfffffff0U - 29 + i);
	}
	assert_int_equal(d[31].tag, GF2_ACL_GROUP_OBJ);
	assert_int_equal(d[62].tag, GF2_ACL_MASK);
	assert_int_equal(d[63].tag, GF2_ACL_OTHER);
	assert_int_equal(gf2_acl_valid(d, n), 0);
}

static void test_unsorted_input(void **state)
{
	struct gf2_acl_entry e[6] = {
		{ GF2_ACL_OTHER, 0, U },
		{ GF2_ACL_GROUP, 6, 1002 },
		{ GF2_ACL_MASK, 7, U },
		{ GF2_ACL_USER, 4, 1003 },
		{ GF2_ACL_GROUP_OBJ, 5, U },
		/* an id left in an unnamed entry is not stored */
		{ GF2_ACL_USER_OBJ, 7, 42 },
	};
	uint8_t buf[sizeof(named)];

	assert_int_equal(gf2_acl_valid(e, 6), EINVAL);
	assert_int_equal(gf2_acl_xattr_encode(e, 6, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, named, sizeof(named));
	assert_entries_equal(e, named_entries, 6);	/* sorted in place */
	assert_int_equal(gf2_acl_valid(e, 6), 0);
}

static void test_unsorted_stored(void **state)
{
	/* decode keeps the stored order; sorting makes it valid */
	static const uint8_t buf[] = {
		0x02, 0x00, 0x00, 0x00,
		0x20, 0x00, 0x04, 0x00, 0xff, 0xff, 0xff, 0xff,
		0x04, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x06, 0x00, 0x07, 0x00, 0x00, 0x00,
	};
	struct gf2_acl_entry d[3];
	size_t n = 0;

	assert_int_equal(gf2_acl_xattr_decode(buf, sizeof(buf), d, 3, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(d[0].tag, GF2_ACL_OTHER);
	assert_int_equal(d[1].tag, GF2_ACL_GROUP_OBJ);
	assert_int_equal(d[1].id, U);	/* stored 0, not an id */
	assert_int_equal(d[2].tag, GF2_ACL_USER_OBJ);
	assert_int_equal(d[2].id, U);
	assert_int_equal(gf2_acl_valid(d, 3), EINVAL);
	gf2_acl_sort(d, 3);
	assert_int_equal(gf2_acl_valid(d, 3), 0);
}

static void test_bad_version(void **state)
{
	uint8_t buf[sizeof(mode_0640)];
	struct gf2_acl_entry d[3];
	size_t n = 99;
	uint32_t v[] = { 0, 1, 3, 0x02000000 };
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		memcpy(buf, mode_0640, sizeof(buf));
		buf[0] = v[i] & 0xff;
		buf[1] = (v[i] >> 8) & 0xff;
		buf[2] = (v[i] >> 16) & 0xff;
		buf[3] = v[i] >> 24;
		assert_int_equal(gf2_acl_xattr_decode(buf, sizeof(buf), d, 3,
						      &n), EINVAL);
		assert_int_equal(gf2_acl_xattr_count(buf, sizeof(buf), &n),
				 EINVAL);
	}
	assert_int_equal(n, 99);
}

static void test_truncated(void **state)
{
	struct gf2_acl_entry d[8];
	size_t n = 99;
	size_t len;

	for (len = 0; len < sizeof(named); len++) {
		int err = gf2_acl_xattr_decode(named, len, d, 8, &n);

		if (len >= 4 && (len - 4) % 8 == 0) {
			/* a whole number of entries: a shorter valid frame */
			assert_int_equal(err, 0);
			assert_int_equal(n, (len - 4) / 8);
		} else {
			assert_int_equal(err, EINVAL);
		}
	}
	/* the header alone: an empty ACL */
	assert_int_equal(gf2_acl_xattr_decode(named, 4, d, 8, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(gf2_acl_xattr_decode(NULL, 0, d, 8, &n), EINVAL);
}

static void test_too_many(void **state)
{
	size_t max = GF2_ACL_MAX_ENTRIES;
	size_t len = gf2_acl_xattr_size(max + 1);
	uint8_t *buf = calloc(1, len);
	struct gf2_acl_entry *e = calloc(max + 1, sizeof(*e));
	size_t n = 0, i;

	assert_non_null(buf);
	assert_non_null(e);
	assert_int_equal(max, 8191);
	assert_int_equal(gf2_acl_xattr_size(max), 65532);
	buf[0] = 2;
	for (i = 0; i <= max; i++) {
		buf[4 + i * 8] = GF2_ACL_USER;
		buf[4 + i * 8 + 2] = 4;
		buf[4 + i * 8 + 4] = i & 0xff;
		buf[4 + i * 8 + 5] = i >> 8;
	}
	assert_int_equal(gf2_acl_xattr_count(buf, len, &n), E2BIG);
	assert_int_equal(gf2_acl_xattr_decode(buf, len, e, max + 1, &n),
			 E2BIG);

	/* exactly the maximum decodes */
	assert_int_equal(gf2_acl_xattr_decode(buf, len - 8, e, max, &n), 0);
	assert_int_equal(n, max);
	/* but not into fewer slots than it holds */
	assert_int_equal(gf2_acl_xattr_decode(buf, len - 8, e, max - 1, &n),
			 ERANGE);
	assert_int_equal(gf2_acl_xattr_encode(e, max + 1, buf, len), E2BIG);
	free(buf);
	free(e);
}

static void test_decode_bad_entries(void **state)
{
	uint8_t buf[sizeof(named)];
	struct gf2_acl_entry d[6];
	size_t n = 0;

	memcpy(buf, named, sizeof(buf));
	buf[4 + 8 * 2] = 0x40;			/* unknown tag */
	assert_int_equal(gf2_acl_xattr_decode(buf, sizeof(buf), d, 6, &n),
			 EINVAL);

	memcpy(buf, named, sizeof(buf));
	buf[4 + 8 * 2 + 2] = 0x0f;		/* perm beyond rwx */
	assert_int_equal(gf2_acl_xattr_decode(buf, sizeof(buf), d, 6, &n),
			 EINVAL);

	memcpy(buf, named, sizeof(buf));
	memset(&buf[4 + 8 * 1 + 4], 0xff, 4);	/* named user, no id */
	assert_int_equal(gf2_acl_xattr_decode(buf, sizeof(buf), d, 6, &n),
			 EINVAL);

	assert_int_equal(gf2_acl_xattr_decode(named, sizeof(named), d, 5, &n),
			 ERANGE);
}

static void test_encode_invalid(void **state)
{
	static const struct {
		const char *what;
		size_t n;
		struct gf2_acl_entry e[6];
	} bad[] = {
		{ "empty", 0, { { 0 } } },
		{ "no other", 2, { { GF2_ACL_USER_OBJ, 6, U },
				   { GF2_ACL_GROUP_OBJ, 4, U } } },
		{ "no user_obj", 2, { { GF2_ACL_GROUP_OBJ, 4, U },
				      { GF2_ACL_OTHER, 4, U } } },
		{ "two user_obj", 4, { { GF2_ACL_USER_OBJ, 6, U },
				       { GF2_ACL_USER_OBJ, 4, U },
				       { GF2_ACL_GROUP_OBJ, 4, U },
				       { GF2_ACL_OTHER, 4, U } } },
		{ "named, no mask", 4, { { GF2_ACL_USER_OBJ, 6, U },
					 { GF2_ACL_USER, 4, 7 },
					 { GF2_ACL_GROUP_OBJ, 4, U },
					 { GF2_ACL_OTHER, 4, U } } },
		{ "two masks", 5, { { GF2_ACL_USER_OBJ, 6, U },
				    { GF2_ACL_GROUP_OBJ, 4, U },
				    { GF2_ACL_MASK, 4, U },
				    { GF2_ACL_MASK, 6, U },
				    { GF2_ACL_OTHER, 4, U } } },
		{ "same user twice", 6, { { GF2_ACL_USER_OBJ, 6, U },
					  { GF2_ACL_USER, 4, 7 },
					  { GF2_ACL_USER, 6, 7 },
					  { GF2_ACL_GROUP_OBJ, 4, U },
					  { GF2_ACL_MASK, 6, U },
					  { GF2_ACL_OTHER, 4, U } } },
		{ "named, undefined id", 5, { { GF2_ACL_USER_OBJ, 6, U },
					      { GF2_ACL_GROUP, 4, U },
					      { GF2_ACL_GROUP_OBJ, 4, U },
					      { GF2_ACL_MASK, 6, U },
					      { GF2_ACL_OTHER, 4, U } } },
		{ "perm 8", 3, { { GF2_ACL_USER_OBJ, 8, U },
				 { GF2_ACL_GROUP_OBJ, 4, U },
				 { GF2_ACL_OTHER, 4, U } } },
		{ "unknown tag", 4, { { GF2_ACL_USER_OBJ, 6, U },
				      { GF2_ACL_GROUP_OBJ, 4, U },
				      { 0x03, 4, U },
				      { GF2_ACL_OTHER, 4, U } } },
	};
	uint8_t buf[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gf2_acl_entry e[6];

		memcpy(e, bad[i].e, sizeof(e));
		memset(buf, 0xaa, sizeof(buf));
		if (gf2_acl_xattr_encode(e, bad[i].n, buf, sizeof(buf)) !=
		    EINVAL) {
			fail_msg("%s: accepted", bad[i].what);
		}
		assert_int_equal(buf[0], 0xaa);	/* nothing written */
	}
}

static void test_encode_short_buffer(void **state)
{
	struct gf2_acl_entry e[6];
	uint8_t buf[sizeof(named)];

	memcpy(e, named_entries, sizeof(e));
	assert_int_equal(gf2_acl_xattr_encode(e, 6, buf, sizeof(buf) - 1),
			 ERANGE);
	assert_int_equal(gf2_acl_xattr_encode(e, 6, NULL, 0), ERANGE);
}

/*
 * The kernel is the reference: an ACL we encode, set on a file of the
 * local file system, reads back as the same bytes, and sets the group
 * bits of the mode from the mask.  Skipped where the file system has no
 * POSIX ACLs.
 */
static void test_kernel_agrees(void **state)
{
	char path[] = "/tmp/gf2-acl-test-XXXXXX";
	struct gf2_acl_entry e[6];
	uint8_t buf[sizeof(named)];
	uint8_t back[256];
	struct stat st;
	ssize_t len;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);

	memcpy(e, named_entries, sizeof(e));
	e[4].perm = GF2_ACL_READ | GF2_ACL_WRITE;	/* mask rw- */
	assert_int_equal(gf2_acl_xattr_encode(e, 6, buf, sizeof(buf)), 0);
	if (setxattr(path, GF2_ACL_XATTR_ACCESS, buf, sizeof(buf), 0) != 0) {
		int err = errno;

		unlink(path);
		if (err == ENOTSUP) {
			skip();
		}
		fail_msg("setxattr: %s", strerror(err));
	}
	len = getxattr(path, GF2_ACL_XATTR_ACCESS, back, sizeof(back));
	assert_int_equal(len, sizeof(buf));
	assert_memory_equal(back, buf, sizeof(buf));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0760);

	/* a minimum ACL is folded into the mode and the xattr removed */
	gf2_acl_from_mode(0604, e);
	assert_int_equal(gf2_acl_xattr_encode(e, 3, buf, sizeof(buf)), 0);
	assert_int_equal(setxattr(path, GF2_ACL_XATTR_ACCESS, buf,
				  gf2_acl_xattr_size(3), 0), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0604);
	len = getxattr(path, GF2_ACL_XATTR_ACCESS, back, sizeof(back));
	assert_int_equal(len, -1);
	assert_int_equal(errno, ENODATA);

	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimum_acl),
		cmocka_unit_test(test_named_round_trip),
		cmocka_unit_test(test_many_named),
		cmocka_unit_test(test_unsorted_input),
		cmocka_unit_test(test_unsorted_stored),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_too_many),
		cmocka_unit_test(test_decode_bad_entries),
		cmocka_unit_test(test_encode_invalid),
		cmocka_unit_test(test_encode_short_buffer),
		cmocka_unit_test(test_kernel_agrees),
	};

	cmocka_set_message_output(CM_OUTPUT_STDOUT);
	return cmocka_run_group_tests_name("acl_xattr", tests, NULL, NULL);
}
