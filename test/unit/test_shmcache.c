/*
 * Unit tests for the node-wide read cache (source/gf2_shmcache.c): what
 * is read back is what was inserted, a block of an old generation is
 * never returned, the segment keeps within its size, several processes
 * (forked) share it, a process killed while it holds the lock wedges no
 * other, and readers in other processes never return stale bytes while a
 * writer invalidates and refills the file under them.
 *
 * Children report by exit status (0: every check held); the parent
 * asserts.  Block contents are a function of (generation, block index),
 * so a reader can tell which generation the bytes it got belong to.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <string.h>
#include <stdio.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "gf2_shmcache.h"

#define KiB 1024U
#define MiB (1024U * 1024U)

static void gfid_of(uint8_t *gfid, unsigned n)
{
	unsigned i;

	/* distinct, gfid-like (random-looking) bytes per n */
	for (i = 0; i < GF2_SHC_GFID_LEN; i++) {
		gfid[i] = (uint8_t)((n * 2654435761U) >> ((i % 4) * 8)) ^
			(uint8_t)(i * 37 + n);
	}
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ULL;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dULL;
	x ^= x >> 33;
	return x;
}

/* The bytes of block idx of a file in generation gen. */
static void pattern(uint8_t *buf, uint32_t len, uint64_t gen, uint64_t idx)
{
	uint32_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t w = mix(gen * 0x9e3779b97f4a7c15ULL ^ (idx << 40) ^ i);

		memcpy(buf + i, &w, len - i < 8 ? len - i : 8);
	}
}

static bool is_pattern(const uint8_t *buf, uint32_t len, uint64_t gen,
		       uint64_t idx, uint32_t off)
{
	uint8_t *want = malloc(off + len);
	bool same;

	pattern(want, off + len, gen, idx);
	same = memcmp(want + off, buf, len) == 0;
	free(want);
	return same;
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h = (h ^ p[i]) * 0x100000001b3ULL;
	}
	return h;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The child's exit status, -1 if it did not exit. */
static int reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
		return -1;
	}
	return WEXITSTATUS(st);
}

static struct gf2_shc *anon(uint64_t size, uint32_t bs)
{
	char why[256] = "";
	struct gf2_shc *c = gf2_shc_create_anon(NULL, size, bs, why,
						 sizeof(why));

	if (c == NULL) {
		fail_msg("create_anon: %s", why);
	}
	return c;
}

static void test_bad_parameters(void **state)
{
	struct gf2_shc_geom g;
	char why[256];

	why[0] = '\0';
	assert_int_equal(gf2_shc_geometry(64 * MiB, 0, &g, why, sizeof(why)),
			 EINVAL);
	assert_non_null(strstr(why, "block size 0 is not a power of two"));
	assert_int_equal(gf2_shc_geometry(64 * MiB, 3000, &g, why,
					  sizeof(why)), EINVAL);
	assert_non_null(strstr(why, "3000 is not a power of two"));
	assert_int_equal(gf2_shc_geometry(64 * MiB, 2048, &g, why,
					  sizeof(why)), EINVAL);
	assert_non_null(strstr(why, "outside"));
	assert_int_equal(gf2_shc_geometry(1ULL << 34, 128 * MiB, &g, why,
					  sizeof(why)), EINVAL);
	assert_non_null(strstr(why, "outside"));
	/* four blocks of 1 MiB and their tables do not fit in 4 MiB */
	assert_int_equal(gf2_shc_geometry(4 * MiB, MiB, &g, why,
					  sizeof(why)), EINVAL);
	assert_non_null(strstr(why, "too small"));
	assert_int_equal(gf2_shc_geometry((1ULL << 40) + 1, MiB, &g, why,
					  sizeof(why)), EINVAL);
	assert_non_null(strstr(why, "over the largest"));
	/* why may be left out */
	assert_int_equal(gf2_shc_geometry(0, MiB, &g, NULL, 0), EINVAL);

	why[0] = '\0';
	assert_null(gf2_shc_create_anon(NULL, 64 * MiB, 1000, why,
					sizeof(why)));
	assert_non_null(strstr(why, "not a power of two"));
	why[0] = '\0';
	assert_null(gf2_shc_create_anon(NULL, 100 * KiB, 64 * KiB, why,
					sizeof(why)));
	assert_non_null(strstr(why, "too small"));
}

static void test_attach_checks(void **state)
{
	uint64_t size = 2 * MiB;
	uint8_t *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct gf2_shc *c = NULL;
	char why[256];

	assert_true(mem != MAP_FAILED);
	/* never formatted */
	why[0] = '\0';
	assert_null(gf2_shc_attach(NULL, mem, size, why, sizeof(why)));
	assert_non_null(strstr(why, "not a glusterfs2 shared cache segment"));
	assert_int_equal(gf2_shc_format(mem, size, 64 * KiB, why,
					sizeof(why)), 0);
	c = gf2_shc_attach(NULL, mem, size, why, sizeof(why));
	assert_non_null(c);
	assert_int_equal(gf2_shc_geom(c)->block_size, 64 * KiB);
	TALLOC_FREE(c);
	/* taken for a segment of another size */
	why[0] = '\0';
	assert_null(gf2_shc_attach(NULL, mem, size - 64 * KiB, why,
				   sizeof(why)));
	assert_non_null(strstr(why, "the segment has 2097152 bytes"));
	/* format refuses what geometry refuses */
	why[0] = '\0';
	assert_int_equal(gf2_shc_format(mem, size, 3 * KiB, why, sizeof(why)),
			 EINVAL);
	assert_non_null(strstr(why, "not a power of two"));
	munmap(mem, size);
}

static void test_geometry_fits(void **state)
{
	static const uint64_t sizes[] = {
		5 * MiB, 64 * MiB, 512 * MiB, 4096ULL * MiB, 1ULL << 40,
	};
	struct gf2_shc_geom g;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t tables;

		assert_int_equal(gf2_shc_geometry(sizes[i], MiB, &g, NULL, 0),
				 0);
		/* within the size, and no room for one block more */
		assert_true(g.off_data + (uint64_t)g.n_blocks * MiB <=
			    sizes[i]);
		assert_true(g.off_data + (uint64_t)(g.n_blocks + 1) * MiB +
			    4096 > sizes[i]);
		assert_int_equal(g.off_data % 4096, 0);
		assert_true(g.n_files >= 2 * g.n_blocks);
		/* the tables: a header page, then at most 160 bytes a block */
		tables = g.off_data - 4096;
		assert_true(tables <= 160ULL * g.n_blocks + 2 * 4096);
	}
	assert_int_equal(gf2_shc_geometry(64 * MiB, MiB, &g, NULL, 0), 0);
	assert_int_equal(g.n_blocks, 63);
}

static void test_round_trip(void **state)
{
	struct gf2_shc *c = anon(2 * MiB, 64 * KiB);
	uint8_t gfid[3][GF2_SHC_GFID_LEN];
	uint8_t *in = malloc(64 * KiB);
	uint8_t *out = malloc(64 * KiB);
	uint32_t lens[3] = { 64 * KiB, 64 * KiB, 1000 };	/* EOF inside */
	uint64_t gen[3], sums[3][3], g2;
	unsigned f, i;
	uint32_t got;

	for (f = 0; f < 3; f++) {
		gfid_of(gfid[f], f + 1);
		assert_int_equal(gf2_shc_fill_gen(c, gfid[f], &gen[f]), 0);
		assert_int_equal(gf2_shc_file_gen(c, gfid[f], &g2), 0);
		assert_int_equal(g2, gen[f]);
		for (i = 0; i < 3; i++) {
			pattern(in, lens[i], gen[f], i);
			sums[f][i] = fnv(in, lens[i]);
			assert_int_equal(gf2_shc_insert(c, gfid[f], i, gen[f],
							in, lens[i]), 0);
		}
	}
	for (f = 0; f < 3; f++) {
		for (i = 0; i < 3; i++) {
			memset(out, 0xee, 64 * KiB);
			assert_int_equal(gf2_shc_read(c, gfid[f], i, 0,
						      64 * KiB, out, &got,
						      &g2), 0);
			assert_int_equal(got, lens[i]);
			assert_int_equal(g2, gen[f]);
			assert_int_equal(fnv(out, got), sums[f][i]);
		}
		/* a piece inside a block, and one running past its end */
		assert_int_equal(gf2_shc_read(c, gfid[f], 1, 4000, 5000, out,
					      &got, &g2), 0);
		assert_int_equal(got, 5000);
		assert_true(is_pattern(out, got, gen[f], 1, 4000));
		assert_int_equal(gf2_shc_read(c, gfid[f], 2, 900, 5000, out,
					      &got, &g2), 0);
		assert_int_equal(got, 100);
		assert_true(is_pattern(out, got, gen[f], 2, 900));
		assert_int_equal(gf2_shc_read(c, gfid[f], 2, 1000, 10, out,
					      &got, &g2), 0);
		assert_int_equal(got, 0);
	}
	/* not held: another block, another file; bad arguments */
	assert_int_equal(gf2_shc_read(c, gfid[0], 7, 0, 10, out, &got, &g2),
			 ENOENT);
	gfid_of(in, 99);
	assert_int_equal(gf2_shc_read(c, in, 0, 0, 10, out, &got, &g2),
			 ENOENT);
	assert_int_equal(gf2_shc_file_gen(c, in, &g2), ENOENT);
	assert_int_equal(gf2_shc_read(c, gfid[0], 0, 64 * KiB + 1, 1, out,
				      &got, &g2), EINVAL);
	assert_int_equal(gf2_shc_insert(c, gfid[0], 5, gen[0], out,
					64 * KiB + 1), EINVAL);
	/* the same block again under the same generation */
	pattern(in, 64 * KiB, gen[0], 0);
	assert_int_equal(gf2_shc_insert(c, gfid[0], 0, gen[0], in, 64 * KiB),
			 EEXIST);
	free(in);
	free(out);
	talloc_free(c);
}

static void test_old_generation_never_returned(void **state)
{
	struct gf2_shc *c = anon(2 * MiB, 64 * KiB);
	struct gf2_shc_stats st;
	uint8_t gfid[GF2_SHC_GFID_LEN];
	uint8_t *buf = malloc(64 * KiB);
	uint64_t g1, g2, g3, g;
	uint32_t got;

	gfid_of(gfid, 7);
	/* a fill raced by an invalidation is refused */
	assert_int_equal(gf2_shc_fill_gen(c, gfid, &g1), 0);
	assert_int_equal(gf2_shc_invalidate(c, gfid), 0);
	pattern(buf, 64 * KiB, g1, 0);
	assert_int_equal(gf2_shc_insert(c, gfid, 0, g1, buf, 64 * KiB),
			 ESTALE);
	assert_int_equal(gf2_shc_read(c, gfid, 0, 0, 64 * KiB, buf, &got, &g),
			 ENOENT);

	/* a fill under the new generation is kept ... */
	assert_int_equal(gf2_shc_fill_gen(c, gfid, &g2), 0);
	assert_true(g2 > g1);
	pattern(buf, 64 * KiB, g2, 0);
	assert_int_equal(gf2_shc_insert(c, gfid, 0, g2, buf, 64 * KiB), 0);
	pattern(buf, 64 * KiB, g2, 1);
	assert_int_equal(gf2_shc_insert(c, gfid, 1, g2, buf, 64 * KiB), 0);
	assert_int_equal(gf2_shc_read(c, gfid, 0, 0, 64 * KiB, buf, &got, &g),
			 0);
	assert_int_equal(g, g2);
	assert_true(is_pattern(buf, got, g2, 0, 0));

	/* ... until the file changes: then none of its blocks is served */
	assert_int_equal(gf2_shc_invalidate(c, gfid), 0);
	assert_int_equal(gf2_shc_read(c, gfid, 0, 0, 64 * KiB, buf, &got, &g),
			 ESTALE);
	assert_int_equal(gf2_shc_read(c, gfid, 0, 0, 64 * KiB, buf, &got, &g),
			 ENOENT);
	assert_int_equal(gf2_shc_read(c, gfid, 1, 0, 64 * KiB, buf, &got, &g),
			 ESTALE);
	/* an insert under the former generation stays refused */
	assert_int_equal(gf2_shc_insert(c, gfid, 1, g2, buf, 64 * KiB),
			 ESTALE);
	assert_int_equal(gf2_shc_file_gen(c, gfid, &g3), 0);
	assert_true(g3 > g2);
	pattern(buf, 64 * KiB, g3, 1);
	assert_int_equal(gf2_shc_insert(c, gfid, 1, g3, buf, 64 * KiB), 0);
	assert_int_equal(gf2_shc_read(c, gfid, 1, 0, 64 * KiB, buf, &got, &g),
			 0);
	assert_int_equal(g, g3);
	assert_true(is_pattern(buf, got, g3, 1, 0));

	gf2_shc_stats(c, &st);
	assert_int_equal(st.stale_fills, 2);
	assert_int_equal(st.stale_reads, 2);
	assert_int_equal(st.invalidations, 2);
	assert_int_equal(st.inserts, 3);
	/* block 0's stale copy was freed when found; block 1 refilled */
	assert_int_equal(st.blocks_used, 1);
	free(buf);
	talloc_free(c);
}

static void test_eviction_within_size(void **state)
{
	struct gf2_shc *c = anon(1 * MiB, 16 * KiB);
	const struct gf2_shc_geom *geo = gf2_shc_geom(c);
	uint32_t n = geo->n_blocks;
	struct gf2_shc_stats st;
	uint8_t hot[GF2_SHC_GFID_LEN], cold[GF2_SHC_GFID_LEN];
	uint8_t *buf = malloc(16 * KiB);
	uint64_t hg, cg, g;
	uint32_t i, got, hits = 0, correct = 0;

	assert_true(n >= 40 && n < 64);
	gfid_of(hot, 1);
	gfid_of(cold, 2);
	assert_int_equal(gf2_shc_fill_gen(c, hot, &hg), 0);
	assert_int_equal(gf2_shc_fill_gen(c, cold, &cg), 0);
	pattern(buf, 16 * KiB, hg, 0);
	assert_int_equal(gf2_shc_insert(c, hot, 0, hg, buf, 16 * KiB), 0);
	/* three times as many blocks as fit, the hot one read between */
	for (i = 0; i < 3 * n; i++) {
		pattern(buf, 16 * KiB, cg, i);
		assert_int_equal(gf2_shc_insert(c, cold, i, cg, buf, 16 * KiB),
				 0);
		gf2_shc_stats(c, &st);
		assert_true(st.blocks_used <= n);
		assert_int_equal(gf2_shc_read(c, hot, 0, 0, 16 * KiB, buf,
					      &got, &g), 0);
		assert_true(is_pattern(buf, got, hg, 0, 0));
	}
	gf2_shc_stats(c, &st);
	assert_int_equal(st.blocks_used, n);
	assert_int_equal(st.inserts, 3 * n + 1);
	assert_int_equal(st.evictions, 3 * n + 1 - n);
	/* the oldest cold blocks went, the newest are there, all right */
	assert_int_equal(gf2_shc_read(c, cold, 0, 0, 16 * KiB, buf, &got, &g),
			 ENOENT);
	for (i = 0; i < 3 * n; i++) {
		if (gf2_shc_read(c, cold, i, 0, 16 * KiB, buf, &got, &g) != 0) {
			continue;
		}
		hits += 1;
		correct += is_pattern(buf, got, cg, i, 0) && got == 16 * KiB;
	}
	assert_int_equal(hits, n - 1);
	assert_int_equal(correct, hits);
	assert_int_equal(gf2_shc_read(c, cold, 3 * n - 1, 0, 16 * KiB, buf,
				      &got, &g), 0);
	free(buf);
	talloc_free(c);
}

static void test_many_files(void **state)
{
	/* more files than entries: entries are reused, never mixed up */
	struct gf2_shc *c = anon(1 * MiB, 16 * KiB);
	uint32_t nf = gf2_shc_geom(c)->n_files;
	uint8_t gfid[GF2_SHC_GFID_LEN];
	uint8_t *buf = malloc(16 * KiB);
	uint64_t g;
	uint32_t f, got, hits = 0;

	for (f = 0; f < 4 * nf; f++) {
		gfid_of(gfid, 1000 + f);
		assert_int_equal(gf2_shc_fill_gen(c, gfid, &g), 0);
		/* content says which file: generation and index both */
		pattern(buf, 16 * KiB, g, f);
		assert_int_equal(gf2_shc_insert(c, gfid, f, g, buf, 16 * KiB),
				 0);
	}
	for (f = 0; f < 4 * nf; f++) {
		int ret;

		gfid_of(gfid, 1000 + f);
		ret = gf2_shc_read(c, gfid, f, 0, 16 * KiB, buf, &got, &g);
		assert_true(ret == 0 || ret == ENOENT || ret == ESTALE);
		if (ret == 0) {
			hits += 1;
			assert_true(is_pattern(buf, got, g, f, 0));
		}
	}
	assert_true(hits > 0);
	free(buf);
	talloc_free(c);
}

static void test_shared_across_processes(void **state)
{
	struct gf2_shc *c = anon(2 * MiB, 64 * KiB);
	uint8_t gfid[GF2_SHC_GFID_LEN];
	uint8_t *buf = malloc(64 * KiB);
	uint64_t g, g2;
	uint32_t got;
	pid_t pid;

	gfid_of(gfid, 5);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (gf2_shc_fill_gen(c, gfid, &g) != 0) {
			_exit(1);
		}
		pattern(buf, 64 * KiB, g, 3);
		_exit(gf2_shc_insert(c, gfid, 3, g, buf, 64 * KiB) == 0 ?
		      0 : 2);
	}
	assert_int_equal(reap(pid), 0);
	assert_int_equal(gf2_shc_read(c, gfid, 3, 0, 64 * KiB, buf, &got, &g),
			 0);
	assert_int_equal(got, 64 * KiB);
	assert_true(is_pattern(buf, got, g, 3, 0));

	/* an invalidation in another process is seen here */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		_exit(gf2_shc_invalidate(c, gfid));
	}
	assert_int_equal(reap(pid), 0);
	assert_int_equal(gf2_shc_file_gen(c, gfid, &g2), 0);
	assert_true(g2 > g);
	assert_int_equal(gf2_shc_read(c, gfid, 3, 0, 64 * KiB, buf, &got, &g),
			 ESTALE);
	free(buf);
	talloc_free(c);
}

static void test_named_segment(void **state)
{
	char dir[] = "/tmp/gf2shcXXXXXX";
	char path[64];
	char why[512];
	struct gf2_shc *a = NULL;
	struct gf2_shc *b = NULL;
	uint8_t gfid[GF2_SHC_GFID_LEN];
	uint8_t *buf = malloc(64 * KiB);
	struct stat st;
	uint64_t g;
	uint32_t got;
	pid_t pid;
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/segment", dir);
	gfid_of(gfid, 11);

	a = gf2_shc_open(NULL, path, 2 * MiB, 64 * KiB, why, sizeof(why));
	assert_non_null(a);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 2 * MiB);

	/* another process opens the same file and fills a block */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gf2_shc *c = gf2_shc_open(NULL, path, 2 * MiB, 64 * KiB,
						 NULL, 0);

		if (c == NULL || gf2_shc_fill_gen(c, gfid, &g) != 0) {
			_exit(1);
		}
		pattern(buf, 64 * KiB, g, 0);
		_exit(gf2_shc_insert(c, gfid, 0, g, buf, 64 * KiB) == 0 ?
		      0 : 2);
	}
	assert_int_equal(reap(pid), 0);
	assert_int_equal(gf2_shc_read(a, gfid, 0, 0, 64 * KiB, buf, &got, &g),
			 0);
	assert_true(is_pattern(buf, got, g, 0, 0));

	/* opened again with the same figures: the same, filled segment */
	b = gf2_shc_open(NULL, path, 2 * MiB, 64 * KiB, why, sizeof(why));
	assert_non_null(b);
	assert_int_equal(gf2_shc_read(b, gfid, 0, 0, 64 * KiB, buf, &got, &g),
			 0);
	TALLOC_FREE(b);

	/* other figures are refused, the file is left as it is */
	why[0] = '\0';
	assert_null(gf2_shc_open(NULL, path, 4 * MiB, 64 * KiB, why,
				 sizeof(why)));
	assert_non_null(strstr(why, "another configuration"));
	why[0] = '\0';
	assert_null(gf2_shc_open(NULL, path, 2 * MiB, 32 * KiB, why,
				 sizeof(why)));
	assert_non_null(strstr(why, "blocks of 65536 bytes, not 32768"));
	assert_int_equal(gf2_shc_read(a, gfid, 0, 0, 64 * KiB, buf, &got, &g),
			 0);

	/* a file open to others is refused */
	assert_int_equal(chmod(path, 0644), 0);
	why[0] = '\0';
	assert_null(gf2_shc_open(NULL, path, 2 * MiB, 64 * KiB, why,
				 sizeof(why)));
	assert_non_null(strstr(why, "not a file private"));
	TALLOC_FREE(a);
	unlink(path);

	/* a file whose format never finished (no magic) is formatted */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 2 * MiB), 0);
	close(fd);
	a = gf2_shc_open(NULL, path, 2 * MiB, 64 * KiB, why, sizeof(why));
	assert_non_null(a);
	assert_int_equal(gf2_shc_read(a, gfid, 0, 0, 64 * KiB, buf, &got, &g),
			 ENOENT);
	TALLOC_FREE(a);
	unlink(path);
	rmdir(dir);
	free(buf);
}

static int hold_pipe = -1;

/* In the child: it faulted inside the insert, holding the lock. */
static void hold_forever(int sig)
{
	char x = 'h';

	(void)sig;
	if (write(hold_pipe, &x, 1) != 1) {
		_exit(3);
	}
	for (;;) {
		pause();
	}
}

static void test_dead_lock_holder(void **state)
{
	struct gf2_shc *c = anon(2 * MiB, 64 * KiB);
	struct gf2_shc_stats st;
	uint8_t gfid[GF2_SHC_GFID_LEN];
	uint8_t *buf = malloc(64 * KiB);
	uint64_t g, g0;
	uint32_t got;
	int fds[2];
	char x;
	pid_t pid;

	gfid_of(gfid, 21);
	assert_int_equal(gf2_shc_fill_gen(c, gfid, &g0), 0);
	pattern(buf, 64 * KiB, g0, 0);
	assert_int_equal(gf2_shc_insert(c, gfid, 0, g0, buf, 64 * KiB), 0);
	assert_int_equal(pipe(fds), 0);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = hold_forever };
		uint8_t *src = NULL;
		uint64_t cg;

		close(fds[0]);
		hold_pipe = fds[1];
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		/* a source whose second half faults: the copy into block 1
		 * stops halfway, inside the lock */
		src = mmap(NULL, 64 * KiB, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (src == MAP_FAILED ||
		    gf2_shc_fill_gen(c, gfid, &cg) != 0) {
			_exit(1);
		}
		pattern(src, 64 * KiB, cg, 1);
		mprotect(src + 32 * KiB, 32 * KiB, PROT_NONE);
		gf2_shc_insert(c, gfid, 1, cg, src, 64 * KiB);
		_exit(2);	/* the copy did not fault */
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &x, 1), 1);
	close(fds[0]);
	/* it holds the lock: killed there */
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(reap(pid), -1);

	/* a watchdog: a wedged lock fails the test instead of hanging it */
	alarm(20);
	/* the index was dropped, the half-written block is not served */
	assert_int_equal(gf2_shc_read(c, gfid, 1, 0, 64 * KiB, buf, &got, &g),
			 ENOENT);
	assert_int_equal(gf2_shc_read(c, gfid, 0, 0, 64 * KiB, buf, &got, &g),
			 ENOENT);
	gf2_shc_stats(c, &st);
	assert_int_equal(st.repairs, 1);
	assert_int_equal(st.blocks_used, 0);
	/* a fill begun before the death is refused */
	pattern(buf, 64 * KiB, g0, 2);
	assert_int_equal(gf2_shc_insert(c, gfid, 2, g0, buf, 64 * KiB),
			 ESTALE);
	/* and the cache works on, in this process and in another */
	assert_int_equal(gf2_shc_fill_gen(c, gfid, &g), 0);
	assert_true(g > g0);
	pattern(buf, 64 * KiB, g, 1);
	assert_int_equal(gf2_shc_insert(c, gfid, 1, g, buf, 64 * KiB), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t cg;

		if (gf2_shc_read(c, gfid, 1, 0, 64 * KiB, buf, &got,
				 &cg) != 0) {
			_exit(1);
		}
		_exit(is_pattern(buf, got, cg, 1, 0) && cg == g ? 0 : 2);
	}
	assert_int_equal(reap(pid), 0);
	alarm(0);
	gf2_shc_stats(c, &st);
	assert_int_equal(st.repairs, 1);
	free(buf);
	talloc_free(c);
}

/* Until killed: random fills, reads (checked) and invalidations. */
static void churn(struct gf2_shc *c, uint64_t seed)
{
	uint8_t *buf = malloc(64 * KiB);
	uint8_t gfid[GF2_SHC_GFID_LEN];

	for (;;) {
		uint64_t g, idx;
		uint32_t got;

		seed = mix(seed + 1);
		gfid_of(gfid, 40 + seed % 3);
		idx = (seed >> 8) % 12;
		switch ((seed >> 16) % 4) {
		case 0:
		case 1:
			if (gf2_shc_fill_gen(c, gfid, &g) != 0) {
				_exit(1);
			}
			pattern(buf, 64 * KiB, g, idx);
			gf2_shc_insert(c, gfid, idx, g, buf, 64 * KiB);
			break;
		case 2:
			if (gf2_shc_read(c, gfid, idx, 0, 64 * KiB, buf, &got,
					 &g) == 0 &&
			    !is_pattern(buf, got, g, idx, 0)) {
				_exit(2);
			}
			break;
		default:
			gf2_shc_invalidate(c, gfid);
		}
	}
}

static void test_killed_at_any_point(void **state)
{
	/* processes killed wherever they are, holding the lock or not:
	 * the others go on and never read wrong bytes */
	struct gf2_shc *c = anon(8 * 64 * KiB + 16 * KiB, 64 * KiB);
	struct gf2_shc_stats st;
	uint8_t gfid[GF2_SHC_GFID_LEN];
	uint8_t *buf = malloc(64 * KiB);
	unsigned round, i, hits = 0;

	alarm(60);
	for (round = 0; round < 30; round++) {
		pid_t pids[3];
		uint64_t g, g2;
		uint32_t got;

		for (i = 0; i < 3; i++) {
			pids[i] = fork();
			assert_true(pids[i] >= 0);
			if (pids[i] == 0) {
				churn(c, round * 10 + i);
			}
		}
		usleep(2000 + (round % 7) * 3000);
		for (i = 0; i < 3; i++) {
			int st_;

			kill(pids[i], SIGKILL);
			assert_int_equal(waitpid(pids[i], &st_, 0), pids[i]);
			/* killed, or it failed a check */
			assert_true(WIFSIGNALED(st_));
		}
		/* what is held is right, and the cache works on */
		for (i = 0; i < 36; i++) {
			gfid_of(gfid, 40 + i % 3);
			if (gf2_shc_read(c, gfid, i / 3, 0, 64 * KiB, buf,
					 &got, &g) == 0) {
				assert_true(is_pattern(buf, got, g, i / 3, 0));
				hits += 1;
			}
		}
		gfid_of(gfid, 50);
		assert_int_equal(gf2_shc_fill_gen(c, gfid, &g), 0);
		pattern(buf, 64 * KiB, g, round);
		assert_int_equal(gf2_shc_insert(c, gfid, round, g, buf,
						64 * KiB), 0);
		assert_int_equal(gf2_shc_read(c, gfid, round, 0, 64 * KiB,
					      buf, &got, &g2), 0);
		assert_int_equal(g2, g);
		assert_true(is_pattern(buf, got, g, round, 0));
		gf2_shc_stats(c, &st);
		assert_true(st.blocks_used <= st.n_blocks);
	}
	alarm(0);
	gf2_shc_stats(c, &st);
	print_message("30 rounds: %u hits after the kills, %" PRIu64
		      " repairs\n", hits, st.repairs);
	free(buf);
	talloc_free(c);
}

/*
 * The stress: STRESS_BLOCKS blocks of one file in a segment that holds
 * fewer (STRESS_ROOM), so that blocks are evicted and reused for other
 * blocks of the same generation all the time.  A writer invalidates the
 * file and refills every block with the new generation's bytes, again and
 * again; fillers insert blocks under a generation they took a while
 * before (often stale by then); readers, each in its own process, note
 * the file's generation, read a block, and check that the bytes are those
 * of that block in the generation the read reports and that it is not
 * older than the one they noted.  Shared counts tell the parent what
 * happened.
 */
#define STRESS_BLOCKS 8
#define STRESS_ROOM 5
#define STRESS_BS (64 * KiB)
#define STRESS_READERS 3
#define STRESS_FILLERS 2

struct stress_counts {
	uint64_t hits;
	uint64_t stale_seen;	/* ESTALE answers to readers */
	uint64_t refused;	/* fillers' inserts refused */
	uint64_t rounds;	/* the writer's */
};

#define STRESS_MS 1500		/* the run, if it saw enough by then */
#define STRESS_MAX_MS 15000	/* the run at most, on a busy machine */

/* Run on until STRESS_MS has passed and every race was seen. */
static bool stress_going(struct stress_counts *n, uint64_t start)
{
	uint64_t t = now_ms() - start;

	if (t >= STRESS_MAX_MS) {
		return false;
	}
	return t < STRESS_MS ||
		__atomic_load_n(&n->rounds, __ATOMIC_RELAXED) <= 10 ||
		__atomic_load_n(&n->hits, __ATOMIC_RELAXED) <= 100 ||
		__atomic_load_n(&n->refused, __ATOMIC_RELAXED) == 0 ||
		__atomic_load_n(&n->stale_seen, __ATOMIC_RELAXED) == 0;
}

static int stress_reader(struct gf2_shc *c, const uint8_t *gfid,
			 struct stress_counts *n, uint64_t start)
{
	uint8_t *buf = malloc(STRESS_BS);
	uint64_t seed = getpid();

	while (stress_going(n, start)) {
		uint64_t before, g;
		uint32_t got, off, len;
		uint64_t idx;
		int ret;

		seed = mix(seed + 1);
		idx = seed % STRESS_BLOCKS;
		off = (uint32_t)(seed >> 20) % STRESS_BS;
		len = STRESS_BS - off;
		if (gf2_shc_file_gen(c, gfid, &before) != 0) {
			continue;
		}
		ret = gf2_shc_read(c, gfid, idx, off, len, buf, &got, &g);
		if (ret == ESTALE) {
			__atomic_fetch_add(&n->stale_seen, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (ret == ENOENT) {
			continue;
		}
		if (ret != 0) {
			return 10;
		}
		if (g < before) {
			return 11;	/* older than the file when it began */
		}
		if (got != len || !is_pattern(buf, got, g, idx, off)) {
			return 12;	/* not that generation's bytes */
		}
		__atomic_fetch_add(&n->hits, 1, __ATOMIC_RELAXED);
	}
	free(buf);
	return 0;
}

static int stress_writer(struct gf2_shc *c, const uint8_t *gfid,
			 struct stress_counts *n, uint64_t start)
{
	uint8_t *buf = malloc(STRESS_BS);

	while (stress_going(n, start)) {
		uint64_t g;
		uint64_t i;

		if (gf2_shc_invalidate(c, gfid) != 0 ||
		    gf2_shc_fill_gen(c, gfid, &g) != 0) {
			return 20;
		}
		for (i = 0; i < STRESS_BLOCKS; i++) {
			int ret;

			pattern(buf, STRESS_BS, g, i);
			ret = gf2_shc_insert(c, gfid, i, g, buf, STRESS_BS);
			if (ret != 0 && ret != ESTALE && ret != EEXIST) {
				return 21;
			}
		}
		__atomic_fetch_add(&n->rounds, 1, __ATOMIC_RELAXED);
		usleep(200);
	}
	free(buf);
	return 0;
}

static int stress_filler(struct gf2_shc *c, const uint8_t *gfid,
			 struct stress_counts *n, uint64_t start)
{
	uint8_t *buf = malloc(STRESS_BS);
	uint64_t seed = getpid() * 7;

	while (stress_going(n, start)) {
		uint64_t g, idx;
		int ret;

		seed = mix(seed + 1);
		idx = seed % STRESS_BLOCKS;
		if (gf2_shc_fill_gen(c, gfid, &g) != 0) {
			return 30;
		}
		/* the read from the bricks takes a while */
		usleep(100 + seed % 500);
		pattern(buf, STRESS_BS, g, idx);
		ret = gf2_shc_insert(c, gfid, idx, g, buf, STRESS_BS);
		if (ret == ESTALE) {
			__atomic_fetch_add(&n->refused, 1, __ATOMIC_RELAXED);
		} else if (ret != 0 && ret != EEXIST) {
			return 31;
		}
	}
	free(buf);
	return 0;
}

/* An open that sees other figures than the filler's drops the file. */
static void test_open_check(void **state)
{
	struct gf2_shc *c = anon(8 * MiB, 64 * KiB);
	uint8_t a[GF2_SHC_GFID_LEN] = { 1 };
	uint8_t b[GF2_SHC_GFID_LEN] = { 2 };
	uint8_t buf[100];
	uint8_t out[100];
	uint64_t gen, g2;
	uint32_t got;
	bool dropped = true;

	memset(buf, 0x5a, sizeof(buf));
	/* first open: an entry with a stamp, nothing dropped */
	assert_int_equal(gf2_shc_open_check(c, a, 7, &dropped), 0);
	assert_false(dropped);
	assert_int_equal(gf2_shc_fill_gen(c, a, &gen), 0);
	assert_int_equal(gf2_shc_insert(c, a, 0, gen, buf, sizeof(buf)), 0);
	/* the same figures: still served */
	assert_int_equal(gf2_shc_open_check(c, a, 7, &dropped), 0);
	assert_false(dropped);
	assert_int_equal(gf2_shc_read(c, a, 0, 0, sizeof(out), out, &got,
				      &g2), 0);
	assert_int_equal(got, sizeof(buf));
	assert_memory_equal(out, buf, sizeof(buf));
	/* other figures: stale, and a fill begun before is refused */
	assert_int_equal(gf2_shc_open_check(c, a, 8, &dropped), 0);
	assert_true(dropped);
	assert_int_equal(gf2_shc_read(c, a, 0, 0, sizeof(out), out, &got,
				      &g2), ESTALE);
	assert_int_equal(gf2_shc_insert(c, a, 1, gen, buf, sizeof(buf)),
			 ESTALE);
	/* an entry made by a fill records no stamp: the next open drops */
	assert_int_equal(gf2_shc_fill_gen(c, b, &gen), 0);
	assert_int_equal(gf2_shc_insert(c, b, 0, gen, buf, sizeof(buf)), 0);
	assert_int_equal(gf2_shc_open_check(c, b, 3, &dropped), 0);
	assert_true(dropped);
	assert_int_equal(gf2_shc_read(c, b, 0, 0, sizeof(out), out, &got,
				      &g2), ESTALE);
	TALLOC_FREE(c);
}

/* Dropping everything makes every file's blocks stale. */
static void test_invalidate_all(void **state)
{
	struct gf2_shc *c = anon(8 * MiB, 64 * KiB);
	uint8_t a[GF2_SHC_GFID_LEN] = { 1 };
	uint8_t b[GF2_SHC_GFID_LEN] = { 2 };
	uint8_t buf[100] = { 0 };
	uint8_t out[100];
	uint64_t ga, gb, g2;
	uint32_t got;

	assert_int_equal(gf2_shc_fill_gen(c, a, &ga), 0);
	assert_int_equal(gf2_shc_fill_gen(c, b, &gb), 0);
	assert_int_equal(gf2_shc_insert(c, a, 0, ga, buf, sizeof(buf)), 0);
	assert_int_equal(gf2_shc_insert(c, b, 0, gb, buf, sizeof(buf)), 0);
	assert_int_equal(gf2_shc_invalidate_all(c), 0);
	assert_int_equal(gf2_shc_read(c, a, 0, 0, sizeof(out), out, &got,
				      &g2), ESTALE);
	assert_int_equal(gf2_shc_read(c, b, 0, 0, sizeof(out), out, &got,
				      &g2), ESTALE);
	assert_int_equal(gf2_shc_insert(c, b, 1, gb, buf, sizeof(buf)),
			 ESTALE);
	TALLOC_FREE(c);
}

static void test_invalidation_under_readers(void **state)
{
	struct gf2_shc *c = anon(STRESS_ROOM * STRESS_BS + 16 * KiB,
				 STRESS_BS);
	struct stress_counts *n = NULL;
	struct gf2_shc_stats st;
	uint8_t gfid[GF2_SHC_GFID_LEN];
	pid_t pids[1 + STRESS_FILLERS + STRESS_READERS];
	uint64_t start = now_ms();
	unsigned i;

	assert_int_equal(gf2_shc_geom(c)->n_blocks, STRESS_ROOM);
	n = mmap(NULL, sizeof(*n), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(n != MAP_FAILED);
	memset(n, 0, sizeof(*n));
	gfid_of(gfid, 31);
	for (i = 0; i < sizeof(pids) / sizeof(pids[0]); i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] != 0) {
			continue;
		}
		if (i == 0) {
			_exit(stress_writer(c, gfid, n, start));
		}
		if (i <= STRESS_FILLERS) {
			_exit(stress_filler(c, gfid, n, start));
		}
		_exit(stress_reader(c, gfid, n, start));
	}
	for (i = 0; i < sizeof(pids) / sizeof(pids[0]); i++) {
		int rc = reap(pids[i]);

		if (rc != 0) {
			fail_msg("child %u (%s) ended with %d", i,
				 i == 0 ? "writer" :
				 i <= STRESS_FILLERS ? "filler" : "reader",
				 rc);
		}
	}
	gf2_shc_stats(c, &st);
	print_message("writer rounds %" PRIu64 ", reader hits %" PRIu64
		      ", stale answers %" PRIu64 ", fills refused %" PRIu64
		      "; segment: %" PRIu64 " stale reads, %" PRIu64
		      " stale fills, %" PRIu64 " evictions\n",
		      n->rounds, n->hits, n->stale_seen, n->refused,
		      st.stale_reads, st.stale_fills, st.evictions);
	/* the race was run: reads hit, and invalidations overtook both
	 * fills and reads */
	assert_true(n->rounds > 10);
	assert_true(n->hits > 100);
	assert_true(n->refused > 0);
	assert_true(n->stale_seen > 0);
	assert_true(st.evictions > 100);
	assert_true(st.blocks_used <= st.n_blocks);
	munmap(n, sizeof(*n));
	talloc_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_parameters),
		cmocka_unit_test(test_geometry_fits),
		cmocka_unit_test(test_attach_checks),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_old_generation_never_returned),
		cmocka_unit_test(test_eviction_within_size),
		cmocka_unit_test(test_many_files),
		cmocka_unit_test(test_shared_across_processes),
		cmocka_unit_test(test_named_segment),
		cmocka_unit_test(test_dead_lock_holder),
		cmocka_unit_test(test_killed_at_any_point),
		cmocka_unit_test(test_invalidation_under_readers),
		cmocka_unit_test(test_open_check),
		cmocka_unit_test(test_invalidate_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
