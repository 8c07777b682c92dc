/*
 * glusterfs2: a read cache shared by the processes of one node
 * (include/gf2_shmcache.h says what it keeps, its bound and its locking).
 *
 * Layer: core.
 *
 * Everything below lives in the shared segment but the handle.  Fields
 * that a reader reads without the lock (a block's sequence, a file
 * entry's generation) and the counters are read and written with atomic
 * builtins; all else changes only under the segment's lock.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gf2_shmcache.h"

#define SHC_MAGIC 0x6766327368636331ULL		/* "gf2shcc1" */
#define SHC_VERSION 2U
#define SHC_PAGE 4096U
#define SHC_WAYS 8U		/* file entries per set */
#define SHC_NONE UINT32_MAX

enum shc_state { SHC_FREE = 0, SHC_VALID = 1 };

struct shc_file {
	uint64_t gen;		/* atomic: a reader checks it unlocked */
	uint64_t last_use;	/* the tick of its last use */
	uint8_t gfid[GF2_SHC_GFID_LEN];
	uint32_t used;
	uint32_t stamp;		/* the last open check's (0: none) */
};

struct shc_block {
	uint64_t seq;		/* atomic: odd while the block changes */
	uint64_t gen;		/* the generation it was filled under */
	uint8_t gfid[GF2_SHC_GFID_LEN];
	uint64_t idx;		/* block index in the file */
	uint32_t len;		/* bytes held */
	uint32_t fslot;		/* its file's entry */
	uint32_t next;		/* hash chain */
	uint8_t state;
	uint8_t ref;		/* read since the clock hand last passed */
	uint8_t pad[10];
};

struct shc_counters {
	uint64_t hits;
	uint64_t misses;
	uint64_t stale_reads;
	uint64_t stale_fills;
	uint64_t inserts;
	uint64_t dup_fills;
	uint64_t evictions;
	uint64_t invalidations;
	uint64_t repairs;
};

struct shc_header {
	uint64_t magic;		/* written last by the format */
	uint32_t version;
	uint32_t header_size;
	struct gf2_shc_geom geom;
	pthread_mutex_t lock;
	uint64_t gen_counter;	/* the last generation given */
	uint64_t tick;		/* file entries' use order */
	uint32_t hand;		/* the clock */
	uint32_t blocks_used;
	struct shc_counters n;
};

_Static_assert(sizeof(struct shc_header) <= SHC_PAGE,
	       "the header fits its page");
_Static_assert(sizeof(struct shc_block) == 64, "a descriptor is 64 bytes");
_Static_assert(sizeof(struct shc_file) == 40, "a file entry is 40 bytes");

struct gf2_shc {
	uint8_t *base;
	uint64_t size;
	bool owns_map;
	struct shc_header *h;
	struct shc_file *files;
	struct shc_block *blocks;
	uint32_t *buckets;
	uint8_t *data;
};

static void shc_why(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void shc_why(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (why == NULL || why_len == 0) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

static uint64_t shc_round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

static uint32_t shc_pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v) {
		p <<= 1;
	}
	return p;
}

/* The tables' layout for n blocks; the data's offset is the total. */
static void shc_layout(uint32_t n, uint32_t block_size,
		       struct gf2_shc_geom *g)
{
	g->block_size = block_size;
	g->n_blocks = n;
	g->n_files = (uint32_t)shc_round_up(2 * (uint64_t)n, SHC_WAYS);
	g->n_buckets = shc_pow2_at_least(n);
	g->off_files = SHC_PAGE;
	g->off_blocks = shc_round_up(g->off_files + (uint64_t)g->n_files *
				     sizeof(struct shc_file), 64);
	g->off_buckets = g->off_blocks + (uint64_t)n *
		sizeof(struct shc_block);
	g->off_data = shc_round_up(g->off_buckets + (uint64_t)g->n_buckets *
				   sizeof(uint32_t), SHC_PAGE);
}

static uint64_t shc_total(uint32_t n, uint32_t block_size)
{
	struct gf2_shc_geom g;

	shc_layout(n, block_size, &g);
	return g.off_data + (uint64_t)n * block_size;
}

int gf2_shc_geometry(uint64_t size, uint32_t block_size,
		     struct gf2_shc_geom *g, char *why, size_t why_len)
{
	uint64_t n;

	if (block_size == 0 || (block_size & (block_size - 1)) != 0) {
		shc_why(why, why_len, "block size %" PRIu32 " is not a power "
			"of two", block_size);
		return EINVAL;
	}
	if (block_size < GF2_SHC_BLOCK_MIN || block_size > GF2_SHC_BLOCK_MAX) {
		shc_why(why, why_len, "block size %" PRIu32 " is outside "
			"%u to %u bytes", block_size, GF2_SHC_BLOCK_MIN,
			GF2_SHC_BLOCK_MAX);
		return EINVAL;
	}
	if (size > GF2_SHC_SIZE_MAX) {
		shc_why(why, why_len, "size %" PRIu64 " is over the largest "
			"segment, %" PRIu64 " bytes", size, GF2_SHC_SIZE_MAX);
		return EINVAL;
	}
	/* an estimate from below (the tables take under 160 bytes a block),
	 * then as many more as fit */
	n = size > SHC_PAGE * 2 ? (size - SHC_PAGE * 2) /
		((uint64_t)block_size + 160) : 0;
	while (n > 0 && shc_total((uint32_t)n, block_size) > size) {
		n -= 1;
	}
	while (shc_total((uint32_t)n + 1, block_size) <= size) {
		n += 1;
	}
	if (n < GF2_SHC_MIN_BLOCKS) {
		shc_why(why, why_len, "size %" PRIu64 " is too small for "
			"%u blocks of %" PRIu32 " bytes and their tables "
			"(%" PRIu64 " bytes at least)", size,
			GF2_SHC_MIN_BLOCKS, block_size,
			shc_total(GF2_SHC_MIN_BLOCKS, block_size));
		return EINVAL;
	}
	shc_layout((uint32_t)n, block_size, g);
	g->size = size;
	return 0;
}

/* Hashing: gfids are random; the mix spreads block indexes. */

static uint64_t shc_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t shc_gfid_hash(const uint8_t *gfid)
{
	uint64_t a, b;

	memcpy(&a, gfid, 8);
	memcpy(&b, gfid + 8, 8);
	return shc_mix(a ^ shc_mix(b));
}

static uint32_t shc_bucket(const struct gf2_shc *c, const uint8_t *gfid,
			   uint64_t idx)
{
	uint64_t x = shc_gfid_hash(gfid) ^ (idx * 0x9e3779b97f4a7c15ULL);

	return (uint32_t)(shc_mix(x) & (c->h->geom.n_buckets - 1));
}

static uint64_t shc_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void shc_count(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

static uint8_t *shc_data(const struct gf2_shc *c, uint32_t b)
{
	return c->data + (uint64_t)b * c->h->geom.block_size;
}

/*
 * After a process died holding the lock: it may have been anywhere in a
 * change of the index or of a block.  Drop all of it: every block free
 * with its sequence moved (a copy in progress elsewhere fails its check),
 * every file entry unused with a fresh generation (fills in progress are
 * refused).
 */
static void shc_repair(struct gf2_shc *c)
{
	struct shc_header *h = c->h;
	uint32_t i;

	for (i = 0; i < h->geom.n_blocks; i++) {
		struct shc_block *d = &c->blocks[i];
		uint64_t s = __atomic_load_n(&d->seq, __ATOMIC_RELAXED);

		__atomic_store_n(&d->seq, (s | 1) + 1, __ATOMIC_RELEASE);
		d->state = SHC_FREE;
		d->ref = 0;
		d->next = SHC_NONE;
	}
	for (i = 0; i < h->geom.n_buckets; i++) {
		c->buckets[i] = SHC_NONE;
	}
	for (i = 0; i < h->geom.n_files; i++) {
		c->files[i].used = 0;
		__atomic_store_n(&c->files[i].gen, ++h->gen_counter,
				 __ATOMIC_RELEASE);
	}
	h->hand = 0;
	h->blocks_used = 0;
	shc_count(&h->n.repairs);
}

/* 0, or EIO: the lock cannot be had (not recoverable). */
static int shc_lock(struct gf2_shc *c)
{
	int ret = pthread_mutex_lock(&c->h->lock);

	if (ret == EOWNERDEAD) {
		shc_repair(c);
		ret = pthread_mutex_consistent(&c->h->lock);
		if (ret != 0) {
			pthread_mutex_unlock(&c->h->lock);
			return EIO;
		}
		return 0;
	}
	return ret == 0 ? 0 : EIO;
}

static void shc_unlock(struct gf2_shc *c)
{
	pthread_mutex_unlock(&c->h->lock);
}

/* Under the lock: the entry of gfid, or SHC_NONE. */
static uint32_t shc_find_file(const struct gf2_shc *c, const uint8_t *gfid)
{
	uint32_t sets = c->h->geom.n_files / SHC_WAYS;
	uint32_t first = (uint32_t)(shc_gfid_hash(gfid) % sets) * SHC_WAYS;
	uint32_t i;

	for (i = first; i < first + SHC_WAYS; i++) {
		if (c->files[i].used &&
		    memcmp(c->files[i].gfid, gfid, GF2_SHC_GFID_LEN) == 0) {
			return i;
		}
	}
	return SHC_NONE;
}

/* Under the lock: an entry for gfid, made if there is none. */
static uint32_t shc_make_file(struct gf2_shc *c, const uint8_t *gfid)
{
	struct shc_header *h = c->h;
	uint32_t sets = h->geom.n_files / SHC_WAYS;
	uint32_t first = (uint32_t)(shc_gfid_hash(gfid) % sets) * SHC_WAYS;
	uint32_t f = shc_find_file(c, gfid);
	uint32_t i;

	if (f != SHC_NONE) {
		return f;
	}
	f = first;
	for (i = first; i < first + SHC_WAYS; i++) {
		if (!c->files[i].used) {
			f = i;
			break;
		}
		if (c->files[i].last_use < c->files[f].last_use) {
			f = i;
		}
	}
	/* a fresh generation first: the former file's blocks go stale */
	c->files[f].used = 0;
	__atomic_store_n(&c->files[f].gen, ++h->gen_counter,
			 __ATOMIC_RELEASE);
	memcpy(c->files[f].gfid, gfid, GF2_SHC_GFID_LEN);
	c->files[f].stamp = 0;
	c->files[f].used = 1;
	return f;
}

static void shc_touch(struct gf2_shc *c, uint32_t f)
{
	c->files[f].last_use = ++c->h->tick;
}

/* Under the lock: the held block (gfid, idx), or SHC_NONE. */
static uint32_t shc_find_block(const struct gf2_shc *c, const uint8_t *gfid,
			       uint64_t idx)
{
	uint32_t b = c->buckets[shc_bucket(c, gfid, idx)];
	uint32_t steps;

	for (steps = 0; b < c->h->geom.n_blocks &&
	     steps < c->h->geom.n_blocks; steps++) {
		const struct shc_block *d = &c->blocks[b];

		if (d->state == SHC_VALID && d->idx == idx &&
		    memcmp(d->gfid, gfid, GF2_SHC_GFID_LEN) == 0) {
			return b;
		}
		b = d->next;
	}
	return SHC_NONE;
}

static void shc_unlink(struct gf2_shc *c, uint32_t b)
{
	struct shc_block *d = &c->blocks[b];
	uint32_t *link = &c->buckets[shc_bucket(c, d->gfid, d->idx)];
	uint32_t steps;

	for (steps = 0; *link < c->h->geom.n_blocks &&
	     steps < c->h->geom.n_blocks; steps++) {
		if (*link == b) {
			*link = d->next;
			break;
		}
		link = &c->blocks[*link].next;
	}
	d->next = SHC_NONE;
}

/* Under the lock: the block is held under its file's generation now. */
static bool shc_current(const struct gf2_shc *c, const struct shc_block *d)
{
	const struct shc_file *f = NULL;

	if (d->state != SHC_VALID || d->fslot >= c->h->geom.n_files) {
		return false;
	}
	f = &c->files[d->fslot];
	return f->used && f->gen == d->gen &&
		memcmp(f->gfid, d->gfid, GF2_SHC_GFID_LEN) == 0;
}

/* Under the lock: mark a block changing (odd sequence). */
static void shc_begin_change(struct shc_block *d)
{
	uint64_t s = __atomic_load_n(&d->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&d->seq, s | 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void shc_end_change(struct shc_block *d)
{
	uint64_t s = __atomic_load_n(&d->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&d->seq, s + 1, __ATOMIC_RELEASE);
}

/* Under the lock: a held block freed. */
static void shc_free_block(struct gf2_shc *c, uint32_t b)
{
	struct shc_block *d = &c->blocks[b];

	shc_begin_change(d);
	shc_unlink(c, b);
	d->state = SHC_FREE;
	d->ref = 0;
	shc_end_change(d);
	c->h->blocks_used -= 1;
}

/*
 * Under the lock: a block to fill, unlinked and still counted as used.
 * The clock: a free block, or a stale one, is taken at once; a valid one
 * read (or filled twice) since it was put in or the hand last passed
 * loses its mark and is passed; the first valid one without the mark is
 * evicted.  Two turns at most.
 */
static uint32_t shc_victim(struct gf2_shc *c)
{
	struct shc_header *h = c->h;
	uint32_t n = h->geom.n_blocks;
	uint32_t steps;
	uint32_t b = 0;

	for (steps = 0; steps < 2 * n + 1; steps++) {
		struct shc_block *d = NULL;

		b = h->hand % n;
		d = &c->blocks[b];
		h->hand = (b + 1) % n;
		if (d->state != SHC_VALID) {
			h->blocks_used += 1;
			return b;
		}
		if (!shc_current(c, d)) {
			/* stale: reclaimed, not evicted */
			break;
		}
		if (!d->ref) {
			shc_count(&h->n.evictions);
			break;
		}
		d->ref = 0;
	}
	shc_begin_change(&c->blocks[b]);
	shc_unlink(c, b);
	c->blocks[b].state = SHC_FREE;
	shc_end_change(&c->blocks[b]);
	return b;
}

static int shc_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t attr;
	int ret;

	ret = pthread_mutexattr_init(&attr);
	if (ret != 0) {
		return ret;
	}
	ret = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	if (ret == 0) {
		ret = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	}
	if (ret == 0) {
		ret = pthread_mutex_init(m, &attr);
	}
	pthread_mutexattr_destroy(&attr);
	return ret;
}

int gf2_shc_format(void *mem, uint64_t size, uint32_t block_size,
		   char *why, size_t why_len)
{
	struct shc_header *h = mem;
	struct gf2_shc_geom g;
	struct shc_file *files = NULL;
	struct shc_block *blocks = NULL;
	uint32_t *buckets = NULL;
	uint32_t i;
	int ret;

	ret = gf2_shc_geometry(size, block_size, &g, why, why_len);
	if (ret != 0) {
		return ret;
	}
	__atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
	memset(mem, 0, g.off_data);
	h->version = SHC_VERSION;
	h->header_size = sizeof(*h);
	h->geom = g;
	ret = shc_mutex_init(&h->lock);
	if (ret != 0) {
		shc_why(why, why_len, "the segment's lock: %s",
			strerror(ret));
		return ret;
	}
	files = (struct shc_file *)((uint8_t *)mem + g.off_files);
	blocks = (struct shc_block *)((uint8_t *)mem + g.off_blocks);
	buckets = (uint32_t *)((uint8_t *)mem + g.off_buckets);
	for (i = 0; i < g.n_files; i++) {
		files[i].gen = ++h->gen_counter;
	}
	for (i = 0; i < g.n_blocks; i++) {
		blocks[i].next = SHC_NONE;
	}
	for (i = 0; i < g.n_buckets; i++) {
		buckets[i] = SHC_NONE;
	}
	__atomic_store_n(&h->magic, SHC_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

struct gf2_shc *gf2_shc_attach(TALLOC_CTX *mem_ctx, void *mem, uint64_t size,
			       char *why, size_t why_len)
{
	struct shc_header *h = mem;
	struct gf2_shc_geom g;
	struct gf2_shc *c = NULL;

	if (size < SHC_PAGE || shc_load(&h->magic) != SHC_MAGIC) {
		shc_why(why, why_len, "not a glusterfs2 shared cache segment");
		return NULL;
	}
	if (h->version != SHC_VERSION || h->header_size != sizeof(*h)) {
		shc_why(why, why_len, "a segment of layout %" PRIu32 ", not "
			"%u", h->version, SHC_VERSION);
		return NULL;
	}
	if (gf2_shc_geometry(size, h->geom.block_size, &g, why,
			     why_len) != 0) {
		return NULL;
	}
	if (h->geom.size != size ||
	    memcmp(&g, &h->geom, sizeof(g)) != 0) {
		shc_why(why, why_len, "the segment has %" PRIu64 " bytes in "
			"blocks of %" PRIu32 ", not %" PRIu64, h->geom.size,
			h->geom.block_size, size);
		return NULL;
	}
	c = talloc_zero(mem_ctx, struct gf2_shc);
	if (c == NULL) {
		shc_why(why, why_len, "no memory");
		return NULL;
	}
	c->base = mem;
	c->size = size;
	c->h = h;
	c->files = (struct shc_file *)(c->base + g.off_files);
	c->blocks = (struct shc_block *)(c->base + g.off_blocks);
	c->buckets = (uint32_t *)(c->base + g.off_buckets);
	c->data = c->base + g.off_data;
	return c;
}

static int shc_unmap(struct gf2_shc *c)
{
	if (c->owns_map) {
		munmap(c->base, c->size);
	}
	return 0;
}

static struct gf2_shc *shc_own(struct gf2_shc *c)
{
	c->owns_map = true;
	talloc_set_destructor(c, shc_unmap);
	return c;
}

struct gf2_shc *gf2_shc_create_anon(TALLOC_CTX *mem_ctx, uint64_t size,
				    uint32_t block_size, char *why,
				    size_t why_len)
{
	struct gf2_shc_geom g;
	struct gf2_shc *c = NULL;
	void *mem = NULL;

	if (gf2_shc_geometry(size, block_size, &g, why, why_len) != 0) {
		return NULL;
	}
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		shc_why(why, why_len, "mmap of %" PRIu64 " bytes: %s", size,
			strerror(errno));
		return NULL;
	}
	if (gf2_shc_format(mem, size, block_size, why, why_len) != 0) {
		munmap(mem, size);
		return NULL;
	}
	c = gf2_shc_attach(mem_ctx, mem, size, why, why_len);
	if (c == NULL) {
		munmap(mem, size);
		return NULL;
	}
	return shc_own(c);
}

static int shc_flock(int fd, short type)
{
	struct flock fl = {
		.l_type = type, .l_whence = SEEK_SET, .l_start = 0,
		.l_len = 0,
	};
	int ret;

	do {
		ret = fcntl(fd, F_SETLKW, &fl);
	} while (ret == -1 && errno == EINTR);
	return ret;
}

/* Under the file's lock: the mapped segment, formatted if need be. */
static struct gf2_shc *shc_open_locked(TALLOC_CTX *mem_ctx, int fd,
				       const char *path, uint64_t size,
				       uint32_t block_size, char *why,
				       size_t why_len)
{
	struct gf2_shc *c = NULL;
	struct stat st;
	void *mem = NULL;

	if (fstat(fd, &st) != 0) {
		shc_why(why, why_len, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		shc_why(why, why_len, "%s is not a file private to uid %u "
			"(mode 0600)", path, (unsigned)geteuid());
		return NULL;
	}
	if (st.st_size == 0 && ftruncate(fd, (off_t)size) != 0) {
		shc_why(why, why_len, "%s: ftruncate: %s", path,
			strerror(errno));
		return NULL;
	}
	if (st.st_size != 0 && (uint64_t)st.st_size != size) {
		shc_why(why, why_len, "%s has %jd bytes, not %" PRIu64 ": "
			"it is another configuration's; remove it once the "
			"processes using it have gone", path,
			(intmax_t)st.st_size, size);
		return NULL;
	}
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		shc_why(why, why_len, "%s: mmap: %s", path, strerror(errno));
		return NULL;
	}
	if (shc_load(&((struct shc_header *)mem)->magic) != SHC_MAGIC &&
	    gf2_shc_format(mem, size, block_size, why, why_len) != 0) {
		/* never formatted to the end (its maker died): nobody can
		 * have attached to it */
		munmap(mem, size);
		return NULL;
	}
	c = gf2_shc_attach(mem_ctx, mem, size, why, why_len);
	if (c == NULL) {
		munmap(mem, size);
		return NULL;
	}
	if (c->h->geom.block_size != block_size) {
		shc_why(why, why_len, "%s holds blocks of %" PRIu32 " bytes, "
			"not %" PRIu32 ": it is another configuration's; "
			"remove it once the processes using it have gone",
			path, c->h->geom.block_size, block_size);
		TALLOC_FREE(c);
		munmap(mem, size);
		return NULL;
	}
	return shc_own(c);
}

struct gf2_shc *gf2_shc_open(TALLOC_CTX *mem_ctx, const char *path,
			     uint64_t size, uint32_t block_size, char *why,
			     size_t why_len)
{
	struct gf2_shc_geom g;
	struct gf2_shc *c = NULL;
	int fd;

	if (gf2_shc_geometry(size, block_size, &g, why, why_len) != 0) {
		return NULL;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		shc_why(why, why_len, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (shc_flock(fd, F_WRLCK) != 0) {
		shc_why(why, why_len, "%s: lock: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	c = shc_open_locked(mem_ctx, fd, path, size, block_size, why,
			    why_len);
	shc_flock(fd, F_UNLCK);
	close(fd);
	return c;
}

const struct gf2_shc_geom *gf2_shc_geom(const struct gf2_shc *c)
{
	return &c->h->geom;
}

int gf2_shc_fill_gen(struct gf2_shc *c, const uint8_t *gfid, uint64_t *gen)
{
	uint32_t f;

	if (shc_lock(c) != 0) {
		return EIO;
	}
	f = shc_make_file(c, gfid);
	shc_touch(c, f);
	*gen = c->files[f].gen;
	shc_unlock(c);
	return 0;
}

int gf2_shc_file_gen(struct gf2_shc *c, const uint8_t *gfid, uint64_t *gen)
{
	uint32_t f;

	if (shc_lock(c) != 0) {
		return EIO;
	}
	f = shc_find_file(c, gfid);
	if (f != SHC_NONE) {
		*gen = c->files[f].gen;
	}
	shc_unlock(c);
	return f == SHC_NONE ? ENOENT : 0;
}

int gf2_shc_insert(struct gf2_shc *c, const uint8_t *gfid, uint64_t idx,
		   uint64_t gen, const void *src, uint32_t len)
{
	struct shc_header *h = c->h;
	struct shc_block *d = NULL;
	uint32_t f, b;

	if (len > h->geom.block_size) {
		return EINVAL;
	}
	if (shc_lock(c) != 0) {
		return EIO;
	}
	f = shc_find_file(c, gfid);
	if (f == SHC_NONE || c->files[f].gen != gen) {
		shc_count(&h->n.stale_fills);
		shc_unlock(c);
		return ESTALE;
	}
	shc_touch(c, f);
	b = shc_find_block(c, gfid, idx);
	if (b != SHC_NONE && c->blocks[b].gen == gen) {
		c->blocks[b].ref = 1;
		shc_count(&h->n.dup_fills);
		shc_unlock(c);
		return EEXIST;
	}
	if (b != SHC_NONE) {
		/* held under an old generation: filled anew in place */
		shc_begin_change(&c->blocks[b]);
		shc_unlink(c, b);
	} else {
		b = shc_victim(c);
		shc_begin_change(&c->blocks[b]);
	}
	d = &c->blocks[b];
	memcpy(d->gfid, gfid, GF2_SHC_GFID_LEN);
	d->idx = idx;
	d->gen = gen;
	d->fslot = f;
	d->len = len;
	memcpy(shc_data(c, b), src, len);
	d->state = SHC_VALID;
	/* kept past the hand only once read (by another process, mostly:
	 * the filler answers its own read from what it inserts) */
	d->ref = 0;
	d->next = c->buckets[shc_bucket(c, gfid, idx)];
	c->buckets[shc_bucket(c, gfid, idx)] = b;
	shc_end_change(d);
	shc_count(&h->n.inserts);
	shc_unlock(c);
	return 0;
}

int gf2_shc_read(struct gf2_shc *c, const uint8_t *gfid, uint64_t idx,
		 uint32_t off, uint32_t len, void *dst, uint32_t *got,
		 uint64_t *gen)
{
	struct shc_header *h = c->h;
	struct shc_block *d = NULL;
	uint64_t seq, g;
	uint32_t f, b, n;

	if (off > h->geom.block_size) {
		return EINVAL;
	}
	if (shc_lock(c) != 0) {
		return EIO;
	}
	f = shc_find_file(c, gfid);
	b = f == SHC_NONE ? SHC_NONE : shc_find_block(c, gfid, idx);
	if (b == SHC_NONE) {
		shc_count(&h->n.misses);
		shc_unlock(c);
		return ENOENT;
	}
	d = &c->blocks[b];
	if (!shc_current(c, d)) {
		shc_free_block(c, b);
		shc_count(&h->n.stale_reads);
		shc_unlock(c);
		return ESTALE;
	}
	shc_touch(c, f);
	d->ref = 1;
	seq = __atomic_load_n(&d->seq, __ATOMIC_ACQUIRE);
	g = d->gen;
	n = d->len < h->geom.block_size ? d->len : h->geom.block_size;
	n = off >= n ? 0 : n - off;
	n = n < len ? n : len;
	shc_unlock(c);

	/*
	 * Unlocked: a writer may reuse the block or the file may change
	 * meanwhile.  The copy races the writer by design (a seqlock's
	 * read); it is used only if neither the block's sequence nor the
	 * file's generation moved.
	 */
	memcpy(dst, shc_data(c, b) + off, n);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&d->seq, __ATOMIC_RELAXED) != seq ||
	    __atomic_load_n(&c->files[f].gen, __ATOMIC_RELAXED) != g) {
		shc_count(&h->n.stale_reads);
		return ESTALE;
	}
	shc_count(&h->n.hits);
	*got = n;
	*gen = g;
	return 0;
}

int gf2_shc_invalidate(struct gf2_shc *c, const uint8_t *gfid)
{
	struct shc_header *h = c->h;
	uint32_t f;

	if (shc_lock(c) != 0) {
		return EIO;
	}
	f = shc_find_file(c, gfid);
	if (f != SHC_NONE) {
		__atomic_store_n(&c->files[f].gen, ++h->gen_counter,
				 __ATOMIC_RELEASE);
		shc_count(&h->n.invalidations);
	}
	shc_unlock(c);
	return 0;
}

int gf2_shc_open_check(struct gf2_shc *c, const uint8_t *gfid,
		       uint32_t stamp, bool *dropped)
{
	struct shc_header *h = c->h;
	uint32_t f;

	*dropped = false;
	if (shc_lock(c) != 0) {
		return EIO;
	}
	f = shc_find_file(c, gfid);
	if (f == SHC_NONE) {
		/* a fresh generation: nothing of the file is held */
		f = shc_make_file(c, gfid);
	} else if (c->files[f].stamp != stamp) {
		__atomic_store_n(&c->files[f].gen, ++h->gen_counter,
				 __ATOMIC_RELEASE);
		shc_count(&h->n.invalidations);
		*dropped = true;
	}
	c->files[f].stamp = stamp;
	shc_touch(c, f);
	shc_unlock(c);
	return 0;
}

int gf2_shc_invalidate_all(struct gf2_shc *c)
{
	struct shc_header *h = c->h;
	uint32_t i;

	if (shc_lock(c) != 0) {
		return EIO;
	}
	for (i = 0; i < h->geom.n_files; i++) {
		if (c->files[i].used) {
			__atomic_store_n(&c->files[i].gen, ++h->gen_counter,
					 __ATOMIC_RELEASE);
		}
	}
	shc_count(&h->n.invalidations);
	shc_unlock(c);
	return 0;
}

void gf2_shc_stats(struct gf2_shc *c, struct gf2_shc_stats *st)
{
	struct shc_header *h = c->h;

	st->hits = shc_load(&h->n.hits);
	st->misses = shc_load(&h->n.misses);
	st->stale_reads = shc_load(&h->n.stale_reads);
	st->stale_fills = shc_load(&h->n.stale_fills);
	st->inserts = shc_load(&h->n.inserts);
	st->dup_fills = shc_load(&h->n.dup_fills);
	st->evictions = shc_load(&h->n.evictions);
	st->invalidations = shc_load(&h->n.invalidations);
	st->repairs = shc_load(&h->n.repairs);
	st->blocks_used = __atomic_load_n(&h->blocks_used, __ATOMIC_RELAXED);
	st->n_blocks = h->geom.n_blocks;
}
