/*
 * Unit tests for the metadata kept after listings (source/gf2_mdcache.c).
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <errno.h>
#include <stdio.h>
#include <cmocka.h>

#include "gf2_mdcache.h"

#define MS 1000000ULL
#define AGE (1000 * MS)

static int NS1, NS2;	/* two volumes */

static struct stat st_of(ino_t ino, off_t size, mode_t mode)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_size = size;
	st.st_mode = mode;
	return st;
}

static void test_stat_roundtrip_and_age(void **state)
{
	struct gf2_md_cache *mc = gf2_md_new(NULL, 16, AGE);
	struct stat st = st_of(7, 4096, S_IFREG | 0644);
	struct stat got;

	assert_non_null(mc);
	assert_false(gf2_md_get_stat(mc, &NS1, "/d/a", 0, &got));
	assert_true(gf2_md_put_stat(mc, &NS1, "/d/a", &st, 10 * MS));
	assert_true(gf2_md_get_stat(mc, &NS1, "/d/a", 10 * MS + AGE, &got));
	assert_int_equal(got.st_ino, 7);
	assert_int_equal(got.st_size, 4096);
	/* another volume, another path: not known */
	assert_false(gf2_md_get_stat(mc, &NS2, "/d/a", 10 * MS, &got));
	assert_false(gf2_md_get_stat(mc, &NS1, "/d/ab", 10 * MS, &got));
	/* one nanosecond past the bound: gone, and dropped */
	assert_false(gf2_md_get_stat(mc, &NS1, "/d/a", 10 * MS + AGE + 1,
				     &got));
	assert_int_equal(gf2_md_count(mc), 0);
	/* a clock that went backwards never serves */
	assert_true(gf2_md_put_stat(mc, &NS1, "/d/a", &st, 10 * MS));
	assert_false(gf2_md_get_stat(mc, &NS1, "/d/a", 9 * MS, &got));
	talloc_free(mc);
}

static void test_symlinks_not_kept(void **state)
{
	struct gf2_md_cache *mc = gf2_md_new(NULL, 16, AGE);
	struct stat st = st_of(8, 3, S_IFLNK | 0777);
	struct stat got;

	assert_false(gf2_md_put_stat(mc, &NS1, "/l", &st, 0));
	assert_false(gf2_md_get_stat(mc, &NS1, "/l", 0, &got));
	talloc_free(mc);
}

static void test_bound_oldest_dropped(void **state)
{
	struct gf2_md_cache *mc = gf2_md_new(NULL, 4, AGE);
	struct stat got;
	char path[32];
	int i;

	for (i = 0; i < 10; i++) {
		struct stat st = st_of(100 + i, i, S_IFREG);

		snprintf(path, sizeof(path), "/f%d", i);
		assert_true(gf2_md_put_stat(mc, &NS1, path, &st, 0));
		assert_true(gf2_md_count(mc) <= 4);
	}
	assert_int_equal(gf2_md_count(mc), 4);
	assert_int_equal(gf2_md_stats(mc)->evicted, 6);
	for (i = 0; i < 6; i++) {
		snprintf(path, sizeof(path), "/f%d", i);
		assert_false(gf2_md_get_stat(mc, &NS1, path, 0, &got));
	}
	for (i = 6; i < 10; i++) {
		snprintf(path, sizeof(path), "/f%d", i);
		assert_true(gf2_md_get_stat(mc, &NS1, path, 0, &got));
		assert_int_equal(got.st_ino, 100 + i);
	}
	talloc_free(mc);
}

static void test_xattr_answers(void **state)
{
	struct gf2_md_cache *mc = gf2_md_new(NULL, 16, AGE);
	char buf[64];
	ssize_t ret;
	int err;

	assert_false(gf2_md_get_xattr(mc, &NS1, "/f", "user.DOSATTRIB", 0,
				      buf, sizeof(buf), &ret, &err));
	assert_true(gf2_md_put_xattr(mc, &NS1, "/f", "user.DOSATTRIB",
				     "0x20", 5, 0));
	assert_true(gf2_md_put_xattr(mc, &NS1, "/f", "security.NTACL",
				     NULL, -1, 0));
	/* size 0: the length only */
	assert_true(gf2_md_get_xattr(mc, &NS1, "/f", "user.DOSATTRIB", 0,
				     NULL, 0, &ret, &err));
	assert_int_equal(ret, 5);
	/* too small */
	assert_true(gf2_md_get_xattr(mc, &NS1, "/f", "user.DOSATTRIB", 0,
				     buf, 4, &ret, &err));
	assert_int_equal(ret, -1);
	assert_int_equal(err, ERANGE);
	assert_true(gf2_md_get_xattr(mc, &NS1, "/f", "user.DOSATTRIB", 0,
				     buf, sizeof(buf), &ret, &err));
	assert_int_equal(ret, 5);
	assert_string_equal(buf, "0x20");
	/* known absent */
	assert_true(gf2_md_get_xattr(mc, &NS1, "/f", "security.NTACL", 0,
				     buf, sizeof(buf), &ret, &err));
	assert_int_equal(ret, -1);
	assert_int_equal(err, ENODATA);
	/* never asked: not known */
	assert_false(gf2_md_get_xattr(mc, &NS1, "/f", "user.other", 0,
				      buf, sizeof(buf), &ret, &err));
	/* replaced */
	assert_true(gf2_md_put_xattr(mc, &NS1, "/f", "user.DOSATTRIB",
				     "0x2", 4, 1));
	assert_true(gf2_md_get_xattr(mc, &NS1, "/f", "user.DOSATTRIB", 1,
				     buf, sizeof(buf), &ret, &err));
	assert_int_equal(ret, 4);
	assert_string_equal(buf, "0x2");
	/* expired */
	assert_false(gf2_md_get_xattr(mc, &NS1, "/f", "user.DOSATTRIB",
				      AGE + 2, buf, sizeof(buf), &ret, &err));
	/* too large or too many: refused, nothing wrong is served */
	assert_false(gf2_md_put_xattr(mc, &NS1, "/f", "user.big", buf,
				      GF2_MD_VALUE_MAX + 1, 0));
	assert_true(gf2_md_put_xattr(mc, &NS1, "/f", "user.c", NULL, -1, 0));
	assert_true(gf2_md_put_xattr(mc, &NS1, "/f", "user.d", NULL, -1, 0));
	assert_false(gf2_md_put_xattr(mc, &NS1, "/f", "user.e", NULL, -1, 0));
	assert_false(gf2_md_get_xattr(mc, &NS1, "/f", "user.e", 0,
				      buf, sizeof(buf), &ret, &err));
	talloc_free(mc);
}

static void test_changes_drop_path_and_parent(void **state)
{
	struct gf2_md_cache *mc = gf2_md_new(NULL, 64, AGE);
	struct stat st = st_of(1, 0, S_IFDIR | 0755);
	struct stat got;
	char buf[16];
	ssize_t ret;
	int err;

	assert_true(gf2_md_put_stat(mc, &NS1, "/", &st, 0));
	assert_true(gf2_md_put_stat(mc, &NS1, "/d", &st, 0));
	assert_true(gf2_md_put_stat(mc, &NS1, "/d/f", &st, 0));
	assert_true(gf2_md_put_stat(mc, &NS1, "/d/g", &st, 0));
	assert_true(gf2_md_put_stat(mc, &NS2, "/d/f", &st, 0));
	assert_true(gf2_md_put_xattr(mc, &NS1, "/d", "user.DOSATTRIB", "a", 1,
				     0));
	assert_true(gf2_md_put_xattr(mc, &NS1, "/d/f", "user.DOSATTRIB", "b",
				     1, 0));

	gf2_md_changed(mc, &NS1, "/d/f");
	assert_false(gf2_md_get_stat(mc, &NS1, "/d/f", 0, &got));
	assert_false(gf2_md_get_xattr(mc, &NS1, "/d/f", "user.DOSATTRIB", 0,
				      buf, sizeof(buf), &ret, &err));
	assert_false(gf2_md_get_stat(mc, &NS1, "/d", 0, &got));
	/* an entry's change leaves the directory's xattrs */
	assert_true(gf2_md_get_xattr(mc, &NS1, "/d", "user.DOSATTRIB", 0,
				     buf, sizeof(buf), &ret, &err));
	assert_int_equal(ret, 1);
	assert_memory_equal(buf, "a", 1);
	assert_true(gf2_md_get_stat(mc, &NS1, "/d/g", 0, &got));
	assert_true(gf2_md_get_stat(mc, &NS1, "/", 0, &got));
	assert_true(gf2_md_get_stat(mc, &NS2, "/d/f", 0, &got));
	/* and the directory's own change drops them */
	gf2_md_changed(mc, &NS1, "/d");
	assert_false(gf2_md_get_xattr(mc, &NS1, "/d", "user.DOSATTRIB", 0,
				      buf, sizeof(buf), &ret, &err));

	/* data or times changed: the stat goes, the xattrs stay */
	assert_true(gf2_md_put_stat(mc, &NS1, "/d/g", &st, 0));
	assert_true(gf2_md_put_xattr(mc, &NS1, "/d/g", "user.DOSATTRIB", "c",
				     1, 0));
	gf2_md_changed_stat(mc, &NS1, "/d/g");
	assert_false(gf2_md_get_stat(mc, &NS1, "/d/g", 0, &got));
	assert_true(gf2_md_get_xattr(mc, &NS1, "/d/g", "user.DOSATTRIB", 0,
				     buf, sizeof(buf), &ret, &err));
	assert_memory_equal(buf, "c", 1);

	/* a name in the root: the root is its parent */
	assert_true(gf2_md_put_stat(mc, &NS1, "/x", &st, 0));
	gf2_md_changed(mc, &NS1, "/x");
	assert_false(gf2_md_get_stat(mc, &NS1, "/", 0, &got));
	talloc_free(mc);
}

static void test_stat_puts_counts_kept_stats(void **state)
{
	struct gf2_md_cache *mc = gf2_md_new(NULL, 64, AGE);
	struct stat f = st_of(2, 0, S_IFREG | 0644);
	struct stat l = st_of(3, 0, S_IFLNK | 0777);

	assert_int_equal(gf2_md_stat_puts(mc), 0);
	assert_true(gf2_md_put_stat(mc, &NS1, "/f", &f, 0));
	assert_true(gf2_md_put_xattr(mc, &NS1, "/g", "user.a", NULL, -1, 0));
	assert_false(gf2_md_put_stat(mc, &NS1, "/l", &l, 0));
	assert_int_equal(gf2_md_stat_puts(mc), 1);
	/* drops do not count: a dropped stat stays dropped until a put */
	gf2_md_changed_stat(mc, &NS1, "/f");
	assert_int_equal(gf2_md_stat_puts(mc), 1);
	assert_true(gf2_md_put_stat(mc, &NS1, "/f", &f, 0));
	assert_int_equal(gf2_md_stat_puts(mc), 2);
	talloc_free(mc);
}

static void test_tree_and_inode_drops(void **state)
{
	struct gf2_md_cache *mc = gf2_md_new(NULL, 64, AGE);
	struct stat d = st_of(1, 0, S_IFDIR | 0755);
	struct stat f = st_of(2, 0, S_IFREG | 0644);
	struct stat g = st_of(3, 0, S_IFREG | 0644);
	struct stat got;

	assert_true(gf2_md_put_stat(mc, &NS1, "/a", &d, 0));
	assert_true(gf2_md_put_stat(mc, &NS1, "/a/f", &f, 0));
	assert_true(gf2_md_put_stat(mc, &NS1, "/a/sub/g", &g, 0));
	assert_true(gf2_md_put_stat(mc, &NS1, "/ab", &g, 0));
	assert_true(gf2_md_put_stat(mc, &NS1, "/b/f", &g, 0));
	gf2_md_changed_tree(mc, &NS1, "/a");
	assert_false(gf2_md_get_stat(mc, &NS1, "/a", 0, &got));
	assert_false(gf2_md_get_stat(mc, &NS1, "/a/f", 0, &got));
	assert_false(gf2_md_get_stat(mc, &NS1, "/a/sub/g", 0, &got));
	assert_true(gf2_md_get_stat(mc, &NS1, "/ab", 0, &got));
	assert_true(gf2_md_get_stat(mc, &NS1, "/b/f", 0, &got));

	/* an upcall for inode 3: every path with it */
	gf2_md_drop_ino(mc, 3);
	assert_false(gf2_md_get_stat(mc, &NS1, "/ab", 0, &got));
	assert_false(gf2_md_get_stat(mc, &NS1, "/b/f", 0, &got));

	assert_true(gf2_md_put_stat(mc, &NS1, "/c", &f, 0));
	gf2_md_changed_tree(mc, &NS1, "/");
	assert_int_equal(gf2_md_count(mc), 0);

	assert_true(gf2_md_put_stat(mc, &NS1, "/c", &f, 0));
	gf2_md_clear(mc);
	assert_int_equal(gf2_md_count(mc), 0);
	assert_false(gf2_md_get_stat(mc, &NS1, "/c", 0, &got));
	talloc_free(mc);
}

/* A volume released: its entries go, those of the others stay. */
static void test_volume_dropped(void **state)
{
	struct gf2_md_cache *mc = gf2_md_new(NULL, 64, AGE);
	struct stat f = st_of(2, 10, S_IFREG | 0644);
	struct stat g = st_of(2, 20, S_IFREG | 0644);
	struct stat got;
	ssize_t ret = 0;
	int err = 0;
	int i;

	for (i = 0; i < 20; i++) {
		char path[16];

		snprintf(path, sizeof(path), "/d/f%d", i);
		assert_true(gf2_md_put_stat(mc, &NS1, path, &f, 0));
		assert_true(gf2_md_put_stat(mc, &NS2, path, &g, 0));
	}
	assert_true(gf2_md_put_xattr(mc, &NS1, "/x", "user.DOSATTRIB", "a",
				     1, 0));
	assert_true(gf2_md_put_xattr(mc, &NS2, "/x", "user.DOSATTRIB", "b",
				     1, 0));
	assert_int_equal(gf2_md_count(mc), 42);

	gf2_md_drop_ns(mc, &NS1);
	assert_int_equal(gf2_md_count(mc), 21);
	assert_false(gf2_md_get_stat(mc, &NS1, "/d/f3", 0, &got));
	assert_false(gf2_md_get_xattr(mc, &NS1, "/x", "user.DOSATTRIB", 0,
				      NULL, 0, &ret, &err));
	assert_true(gf2_md_get_stat(mc, &NS2, "/d/f3", 0, &got));
	assert_int_equal(got.st_size, 20);
	assert_true(gf2_md_get_xattr(mc, &NS2, "/x", "user.DOSATTRIB", 0,
				     NULL, 0, &ret, &err));

	/* a new volume at the released one's address starts empty */
	assert_false(gf2_md_get_stat(mc, &NS1, "/d/f19", 0, &got));
	assert_true(gf2_md_put_stat(mc, &NS1, "/d/f19", &g, 0));
	assert_true(gf2_md_get_stat(mc, &NS1, "/d/f19", 0, &got));
	gf2_md_drop_ns(mc, &NS2);
	gf2_md_drop_ns(mc, &NS1);
	assert_int_equal(gf2_md_count(mc), 0);
	gf2_md_drop_ns(NULL, &NS1);
	talloc_free(mc);
}

/* No stat is kept of a file while a write of it is in flight. */
static void test_writes_in_flight(void **state)
{
	struct gf2_md_cache *mc = gf2_md_new(NULL, 64, AGE);
	struct stat f = st_of(7, 10, S_IFREG | 0644);
	struct stat g = st_of(8, 10, S_IFREG | 0644);
	struct stat got;
	int i;

	gf2_md_write_begin(mc, 7);
	gf2_md_write_begin(mc, 7);
	assert_false(gf2_md_put_stat(mc, &NS1, "/f", &f, 0));
	assert_false(gf2_md_put_stat(mc, &NS2, "/f", &f, 0));
	assert_true(gf2_md_put_stat(mc, &NS1, "/g", &g, 0));
	gf2_md_write_end(mc, 7);
	assert_true(gf2_md_writing(mc, 7));
	assert_false(gf2_md_put_stat(mc, &NS1, "/f", &f, 0));
	gf2_md_write_end(mc, 7);
	assert_false(gf2_md_writing(mc, 7));
	assert_true(gf2_md_put_stat(mc, &NS1, "/f", &f, 0));
	assert_true(gf2_md_get_stat(mc, &NS1, "/f", 0, &got));

	/* more inodes than the table: nothing is kept meanwhile */
	for (i = 0; i < GF2_MD_WRITING + 1; i++) {
		gf2_md_write_begin(mc, 100 + i);
	}
	assert_false(gf2_md_put_stat(mc, &NS1, "/g", &g, 0));
	for (i = 0; i < GF2_MD_WRITING + 1; i++) {
		gf2_md_write_end(mc, 100 + i);
	}
	assert_false(gf2_md_writing(mc, 100));
	assert_true(gf2_md_put_stat(mc, &NS1, "/g", &g, 0));
	/* an end without a begin changes nothing */
	gf2_md_write_end(mc, 5);
	assert_true(gf2_md_put_stat(mc, &NS1, "/f", &f, 0));
	talloc_free(mc);
}

static void test_many_paths_hash(void **state)
{
	struct gf2_md_cache *mc = gf2_md_new(NULL, 2000, AGE);
	struct stat got;
	char path[64];
	int i;

	for (i = 0; i < 2000; i++) {
		struct stat st = st_of(i + 1, i, S_IFREG);

		snprintf(path, sizeof(path), "/dir/file-%05d.dat", i);
		assert_true(gf2_md_put_stat(mc, &NS1, path, &st, 0));
	}
	for (i = 0; i < 2000; i += 7) {
		snprintf(path, sizeof(path), "/dir/file-%05d.dat", i);
		gf2_md_changed(mc, &NS1, path);
	}
	for (i = 0; i < 2000; i++) {
		bool ok;

		snprintf(path, sizeof(path), "/dir/file-%05d.dat", i);
		ok = gf2_md_get_stat(mc, &NS1, path, 0, &got);
		assert_int_equal(ok, i % 7 != 0);
		if (ok) {
			assert_int_equal(got.st_size, i);
		}
	}
	talloc_free(mc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat_roundtrip_and_age),
		cmocka_unit_test(test_symlinks_not_kept),
		cmocka_unit_test(test_bound_oldest_dropped),
		cmocka_unit_test(test_xattr_answers),
		cmocka_unit_test(test_changes_drop_path_and_parent),
		cmocka_unit_test(test_stat_puts_counts_kept_stats),
		cmocka_unit_test(test_tree_and_inode_drops),
		cmocka_unit_test(test_volume_dropped),
		cmocka_unit_test(test_writes_in_flight),
		cmocka_unit_test(test_many_paths_hash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
