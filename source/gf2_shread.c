/*
 * glusterfs2: the node's shared read cache as this process uses it (see
 * include/gf2_shread.h; the segment itself is gf2_shmcache.c).
 *
 * Layer: caches.
 *
 * One record per volume this process has asked for, on a list that
 * lives as long as the process: the segment's handle (NULL once it was
 * refused, so that the refusal is logged once).  The segment is the file
 * glusterfs2_shr.VOLUME in Samba's lock directory (on tmpfs, /run/samba
 * on Debian), opened and mapped as root, mode 0600: the descriptor is
 * closed once mapped, and the mapping serves every user the process
 * switches to.  Only an open handle of the file reads from it: every
 * smbd still opens the file through its own Gluster client, as the user.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "lib/util/dlinklist.h"
#include "gf2_shmcache.h"
#include "gf2_shread.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

struct gf2_shr {
	struct gf2_shr *prev, *next;
	char *volname;
	char *path;
	uint64_t size;
	uint32_t block_size;
	struct gf2_shc *c;	/* NULL: refused */
};

static struct gf2_shr *gf2_shr_list;

/* The key of a file: its inode number where Gluster keeps it in a GFID. */
static void gf2_shr_key(uint64_t ino, uint8_t key[GF2_SHC_GFID_LEN])
{
	int i;

	memset(key, 0, GF2_SHC_GFID_LEN);
	for (i = GF2_SHC_GFID_LEN - 1; i >= 8; i--) {
		key[i] = ino & 0xff;
		ino >>= 8;
	}
}

struct gf2_shr *gf2_shr_get(const char *volname, uint64_t size,
			    uint32_t block_size)
{
	struct gf2_shr *s = NULL;
	char why[256] = "";
	char *name = NULL;

	for (s = gf2_shr_list; s != NULL; s = s->next) {
		if (strcmp(s->volname, volname) == 0) {
			break;
		}
	}
	if (s != NULL) {
		if (s->c != NULL &&
		    (s->size != size || s->block_size != block_size)) {
			DBG_ERR("volume %s: glusterfs2:shared read cache: "
				"this process already uses %s with %" PRIu64
				" bytes in blocks of %" PRIu32 "; a share "
				"asking for other figures uses those\n",
				volname, s->path, s->size, s->block_size);
		}
		return s->c != NULL ? s : NULL;
	}
	/* process-long, as the mapping */
	s = talloc_zero(NULL, struct gf2_shr);
	if (s == NULL) {
		return NULL;
	}
	s->volname = talloc_strdup(s, volname);
	name = talloc_asprintf(s, "glusterfs2_shr.%s", volname);
	s->path = name != NULL ? lock_path(s, name) : NULL;
	if (s->volname == NULL || s->path == NULL) {
		TALLOC_FREE(s);
		return NULL;
	}
	s->size = size;
	s->block_size = block_size;
	become_root();
	s->c = gf2_shc_open(s, s->path, size, block_size, why, sizeof(why));
	unbecome_root();
	if (s->c == NULL) {
		DBG_ERR("volume %s: glusterfs2:shared read cache refused "
			"(%s: %s); the share reads from Gluster as without "
			"it\n", volname, s->path, why);
	}
	DLIST_ADD(gf2_shr_list, s);
	return s->c != NULL ? s : NULL;
}

uint32_t gf2_shr_block_size(const struct gf2_shr *s)
{
	return s->block_size;
}

const char *gf2_shr_path(const struct gf2_shr *s)
{
	return s->path;
}

/* A digest of what an open saw of the file: never 0 (no stamp). */
static uint32_t gf2_shr_stamp(const struct stat *st)
{
	uint64_t v[5] = {
		(uint64_t)st->st_size,
		(uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec,
		(uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec,
	};
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;
	uint32_t r;

	for (i = 0; i < ARRAY_SIZE(v); i++) {
		h ^= v[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	r = (uint32_t)(h ^ (h >> 32));
	return r != 0 ? r : 1;
}

bool gf2_shr_open_check(struct gf2_shr *s, uint64_t ino,
			const struct stat *st)
{
	uint8_t key[GF2_SHC_GFID_LEN];
	bool dropped = false;

	gf2_shr_key(ino, key);
	if (gf2_shc_open_check(s->c, key, gf2_shr_stamp(st), &dropped) != 0) {
		return false;
	}
	if (dropped) {
		DBG_DEBUG("inode %" PRIu64 " changed since its blocks were "
			  "filled: dropped\n", ino);
	}
	return true;
}

bool gf2_shr_serve(struct gf2_shr *s, uint64_t ino, uint8_t *dst,
		   uint64_t off, uint64_t n)
{
	uint8_t key[GF2_SHC_GFID_LEN];
	uint64_t bs = s->block_size;
	uint64_t done = 0;

	if (n == 0) {
		return false;
	}
	gf2_shr_key(ino, key);
	while (done < n) {
		uint64_t at = off + done;
		uint32_t in = at % bs;
		uint32_t want = MIN(bs - in, n - done);
		uint32_t got = 0;
		uint64_t gen;

		if (gf2_shc_read(s->c, key, at / bs, in, want, dst + done,
				 &got, &gen) != 0 || got != want) {
			return false;
		}
		done += got;
	}
	return true;
}

bool gf2_shr_fill_begin(struct gf2_shr *s, uint64_t ino, uint64_t off,
			uint64_t n, uint64_t *gen)
{
	uint8_t key[GF2_SHC_GFID_LEN];
	uint64_t bs = s->block_size;
	uint64_t first = (off + bs - 1) / bs * bs;

	if (first + bs > off + n) {
		return false;	/* no whole block in it */
	}
	gf2_shr_key(ino, key);
	return gf2_shc_fill_gen(s->c, key, gen) == 0;
}

unsigned gf2_shr_fill(struct gf2_shr *s, uint64_t ino, uint64_t gen,
		      const uint8_t *src, uint64_t off, uint64_t got)
{
	uint8_t key[GF2_SHC_GFID_LEN];
	uint64_t bs = s->block_size;
	uint64_t at = (off + bs - 1) / bs * bs;
	unsigned kept = 0;

	gf2_shr_key(ino, key);
	/* whole blocks only: a short one may be a file still growing */
	for (; at + bs <= off + got; at += bs) {
		int ret = gf2_shc_insert(s->c, key, at / bs, gen,
					 src + (at - off), bs);

		if (ret == 0) {
			kept += 1;
		} else if (ret != EEXIST) {
			break;	/* ESTALE: the file changed meanwhile */
		}
	}
	return kept;
}

void gf2_shr_invalidate(uint64_t ino)
{
	uint8_t key[GF2_SHC_GFID_LEN];
	struct gf2_shr *s = NULL;

	gf2_shr_key(ino, key);
	for (s = gf2_shr_list; s != NULL; s = s->next) {
		if (s->c == NULL) {
			continue;
		}
		if (ino == 0) {
			(void)gf2_shc_invalidate_all(s->c);
		} else {
			(void)gf2_shc_invalidate(s->c, key);
		}
	}
}

void gf2_shr_stats(struct gf2_shr *s, struct gf2_shc_stats *st)
{
	gf2_shc_stats(s->c, st);
}
