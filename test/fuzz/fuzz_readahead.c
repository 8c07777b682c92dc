/*
 * Fuzz harness: the readahead state machine (source/gf2_readahead.c),
 * driven the way source/gf2_prefetch.c drives it (gf2_pf_answer, for
 * every read the read engine routes to prefetch).
 *
 * The input is a configuration (in the ranges the glusterfs2: options
 * allow, or zeros for gf2_ra_config_sanitize to fill) and a memory cap,
 * then a sequence of operations:
 *
 *   read      gf2_ra_on_read at an offset near an earlier one or anywhere
 *             (offsets below 2^63 and lengths up to 16 MiB: what smbd
 *             can pass), with avail = cap - memory in use; the window it
 *             asks for is "issued" (a model of gf2_pf_issue: the parts
 *             not already held become buffers in flight, charged to the
 *             memory in use); a read that finds no buffer for a sequential
 *             stream may report a miss (gf2_ra_on_miss)
 *   complete  a buffer in flight becomes ready
 *   consume   a ready buffer is used up or expires and is freed
 *   invalidate  buffers overlapping a range are dropped (a write); a
 *             whole-file invalidation resets the state (truncate)
 *   clock     time moves on (or back)
 *
 * Invariants after every step:
 *   - a window never exceeds the configured maximum, nor the memory
 *     available when it was asked for, nor the file size when known, and
 *     never wraps past 2^64;
 *   - memory in use never exceeds the cap and never goes negative;
 *   - every stream's window is at most the maximum, its frontier at or
 *     after its origin, its covered bytes at most its span;
 *   - a read that starts a new stream never prefetches, and a stream
 *     only prefetches when it is confirmed and dense;
 *   - random access costs nothing: in "random" inputs every read lands
 *     in a slot of its own, far from every other, and no window is ever
 *     asked for.
 */

#include <stdbool.h>

#include "gf2_readahead.h"
#include "fuzz.h"

#define MAX_BUFS 512
#define KiB 1024ULL
#define MiB (1024 * KiB)
#define MAX_LEN (16 * MiB)
#define OFF_LIMIT (1ULL << 63)

struct buf {
	uint64_t off;
	uint64_t len;
	bool ready;
};

struct model {
	struct gf2_ra_state ra;
	struct gf2_ra_config cfg;
	uint64_t cap;
	int64_t used;		/* signed: going negative is a bug */
	struct buf bufs[MAX_BUFS];
	size_t nbufs;
	uint64_t file_size;
	uint64_t now;
	uint64_t last_off[4];
};

static void check_state(const struct model *m)
{
	unsigned i;

	FUZZ_CHECK(m->used >= 0);
	FUZZ_CHECK((uint64_t)m->used <= m->cap);
	for (i = 0; i < GF2_RA_MAX_STREAMS; i++) {
		const struct gf2_ra_stream *s = &m->ra.s[i];

		if (!s->used) {
			continue;
		}
		FUZZ_CHECK(i < m->cfg.streams);
		FUZZ_CHECK(s->size <= m->cfg.max_window);
		FUZZ_CHECK(s->frontier >= s->origin);
		FUZZ_CHECK(s->covered <= s->frontier - s->origin);
	}
}

static void drop(struct model *m, size_t i)
{
	m->used -= (int64_t)m->bufs[i].len;
	m->bufs[i] = m->bufs[m->nbufs - 1];
	m->nbufs--;
}

static const struct buf *find(const struct model *m, uint64_t pos)
{
	size_t i;

	for (i = 0; i < m->nbufs; i++) {
		if (m->bufs[i].off <= pos &&
		    pos - m->bufs[i].off < m->bufs[i].len) {
			return &m->bufs[i];
		}
	}
	return NULL;
}

/*
 * A model of gf2_pf_issue: hold [off, off + len) in buffers of at most
 * 1 MiB (prefetch cuts 124 KiB chunks; the state machine sees only the
 * memory they take, which the model charges alike).
 */
static void issue(struct model *m, uint64_t off, uint64_t len)
{
	uint64_t pos = off;
	uint64_t end = off + len;

	while (pos < end && m->nbufs < MAX_BUFS) {
		const struct buf *b = find(m, pos);
		uint64_t blen;
		size_t i;

		if (b != NULL) {
			pos = b->off + b->len;
			continue;
		}
		blen = end - pos < MiB ? end - pos : MiB;
		for (i = 0; i < m->nbufs; i++) {
			if (m->bufs[i].off > pos &&
			    m->bufs[i].off < pos + blen) {
				blen = m->bufs[i].off - pos;
			}
		}
		m->bufs[m->nbufs++] = (struct buf) { pos, blen, false };
		m->used += (int64_t)blen;
		FUZZ_CHECK((uint64_t)m->used <= m->cap);
		pos += blen;
	}
}

static bool stream_exists_before(const struct gf2_ra_state *before,
				 int idx)
{
	return idx >= 0 && idx < GF2_RA_MAX_STREAMS && before->s[idx].used;
}

static void do_read(struct model *m, uint64_t off, uint64_t len)
{
	struct gf2_ra_state before = m->ra;
	struct gf2_ra_decision d;
	uint64_t avail = m->cap - (uint64_t)m->used;
	const struct gf2_ra_stream *s = NULL;

	gf2_ra_on_read(&m->ra, &m->cfg, off, len, m->file_size, avail,
		       m->now, &d);
#ifdef FUZZ_TRACE
	fprintf(stderr, "read %llu+%llu avail %llu size %llu now %llu -> "
		"stream %d seq %d window %llu+%llu\n",
		(unsigned long long)off, (unsigned long long)len,
		(unsigned long long)avail, (unsigned long long)m->file_size,
		(unsigned long long)m->now, d.stream, d.sequential,
		(unsigned long long)d.off, (unsigned long long)d.len);
	if (d.stream >= 0) {
		const struct gf2_ra_stream *t = &m->ra.s[d.stream];

		fprintf(stderr, "  origin %llu frontier %llu covered %llu "
			"start %llu size %llu marker %llu rate %llu\n",
			(unsigned long long)t->origin,
			(unsigned long long)t->frontier,
			(unsigned long long)t->covered,
			(unsigned long long)t->start,
			(unsigned long long)t->size,
			(unsigned long long)t->marker,
			(unsigned long long)t->rate);
	}
#endif
	if (d.stream >= 0) {
		FUZZ_CHECK((unsigned)d.stream < m->cfg.streams);
		s = &m->ra.s[d.stream];
	}
	if (d.len > 0) {
		FUZZ_CHECK(s != NULL);
		FUZZ_CHECK(d.len <= m->cfg.max_window);
		FUZZ_CHECK(d.len <= avail);
		FUZZ_CHECK(d.off + d.len > d.off);
		if (m->file_size != GF2_RA_SIZE_UNKNOWN) {
			FUZZ_CHECK(d.off + d.len <= m->file_size);
		}
		/* only a stream that existed, is confirmed and dense */
		FUZZ_CHECK(stream_exists_before(&before, d.stream));
		FUZZ_CHECK(s->confirmed);
		FUZZ_CHECK(s->covered >=
			   (s->frontier - s->origin) -
			   (s->frontier - s->origin) / 4);
		/* never behind the reader */
		FUZZ_CHECK(d.off >= s->frontier ||
			   d.off + d.len > s->frontier);
		issue(m, d.off, d.len);
	}
	/* a miss of a sequential read: its data was dropped */
	if (d.sequential && find(m, off) == NULL && (m->now & 1)) {
		gf2_ra_on_miss(&m->ra, d.stream);
	}
	check_state(m);
}

static void fuzz_config(struct model *m, struct fuzz_in *in)
{
	uint8_t sel = fuzz_u8(in);

	if (sel & 1) {
		/* zeros and odd values: what sanitize makes of them */
		m->cfg.init_window = (sel & 2) ? 0 : fuzz_u32(in);
		m->cfg.max_window = (sel & 4) ? 0 : fuzz_u32(in);
		m->cfg.min_window = (sel & 8) ? 0 : fuzz_u32(in);
		m->cfg.streams = fuzz_u8(in);
		m->cfg.max_lead_ms = (sel & 16) ? 0 : fuzz_u32(in);
	} else {
		/* the option ranges, as vfs_glusterfs2.c sets them up */
		m->cfg.init_window = 4 * KiB + fuzz_u32(in) % (256 * MiB);
		m->cfg.max_window = 64 * KiB + fuzz_u32(in) % (256 * MiB);
		if (m->cfg.init_window > m->cfg.max_window) {
			m->cfg.init_window = m->cfg.max_window;
		}
		m->cfg.min_window = m->cfg.init_window < 64 * KiB ?
			m->cfg.init_window : 64 * KiB;
		m->cfg.streams = 1 + fuzz_u8(in) % GF2_RA_MAX_STREAMS;
		m->cfg.max_lead_ms = 1 + fuzz_u32(in) % 1800000;
	}
	gf2_ra_config_sanitize(&m->cfg);
	FUZZ_CHECK(m->cfg.min_window > 0);
	FUZZ_CHECK(m->cfg.min_window <= m->cfg.init_window);
	FUZZ_CHECK(m->cfg.init_window <= m->cfg.max_window);
	FUZZ_CHECK(m->cfg.streams >= 1 &&
		   m->cfg.streams <= GF2_RA_MAX_STREAMS);
	/* sanitizing twice changes nothing */
	FUZZ_CHECK(gf2_ra_config_sanitize(&m->cfg));
	m->cap = (1 * MiB) + (uint64_t)fuzz_u16(in) * 256 * KiB;
}

/*
 * Random access: each read in a slot of its own, slots further apart
 * than any stream tolerance (at most max(max_window, 1 MiB)) plus the
 * longest read; no window may ever be asked for.
 */
static void fuzz_random(struct model *m, struct fuzz_in *in)
{
	uint64_t tol = m->cfg.max_window > MiB ? m->cfg.max_window : MiB;
	uint64_t slot = 2 * (tol + MAX_LEN);
	uint64_t nslots = (OFF_LIMIT - MAX_LEN) / slot;
	static uint8_t seen[8192];
	unsigned steps = 0;

	memset(seen, 0, sizeof(seen));
	while (in->left > 0 && steps++ < 2000) {
		uint64_t k = fuzz_u16(in) % 8192;
		uint64_t off;
		uint64_t len;
		struct gf2_ra_decision d;
		uint64_t avail = m->cap - (uint64_t)m->used;

		if (seen[k]) {
			continue;
		}
		seen[k] = 1;
		/* spread the slots over the whole offset range */
		off = (k * (nslots / 8192)) * slot + fuzz_u16(in) % tol;
		len = 1 + fuzz_u32(in) % MAX_LEN;
		m->now += fuzz_u8(in);
		gf2_ra_on_read(&m->ra, &m->cfg, off, len, m->file_size,
			       avail, m->now, &d);
		FUZZ_CHECK(d.len == 0);
		FUZZ_CHECK(!d.sequential);
		check_state(m);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct model *m = calloc(1, sizeof(*m));
	uint8_t mode;
	unsigned steps = 0;

	if (m == NULL) {
		return 0;
	}
	gf2_ra_init(&m->ra);
	fuzz_config(m, &in);
	mode = fuzz_u8(&in);
	m->file_size = (mode & 2) ? GF2_RA_SIZE_UNKNOWN :
		fuzz_u64(&in) % OFF_LIMIT;
	m->now = (mode & 4) ? 0 : 1 + fuzz_u16(&in);

	if (mode & 1) {
		fuzz_random(m, &in);
		free(m);
		return 0;
	}

	while (in.left > 0 && steps++ < 4000) {
		uint8_t op = fuzz_u8(&in);
		uint64_t off;
		uint64_t len;

		switch (op % 8) {
		case 0:
		case 1:
		case 2: {
			/* read near one of the last offsets */
			unsigned w = (op >> 3) % 4;
			uint64_t base = m->last_off[w];
			int64_t delta = (int16_t)fuzz_u16(&in) *
				(int64_t)((op & 0x40) ? 4096 : 1);

			len = (op & 0x80) ? 65536 : 1 + fuzz_u32(&in) % MAX_LEN;
			off = (delta < 0 && (uint64_t)-delta > base) ? 0 :
				base + delta;
			if (off >= OFF_LIMIT - MAX_LEN) {
				off = OFF_LIMIT - MAX_LEN - 1;
			}
			m->last_off[w] = off + len;
			do_read(m, off, len);
			break;
		}
		case 3:
			/* anywhere */
			off = fuzz_u64(&in) % (OFF_LIMIT - MAX_LEN);
			len = 1 + fuzz_u32(&in) % MAX_LEN;
			m->last_off[op >> 6] = off + len;
			do_read(m, off, len);
			break;
		case 4:
			/* completions */
			if (m->nbufs > 0) {
				m->bufs[fuzz_u8(&in) % m->nbufs].ready = true;
			}
			break;
		case 5:
			/* a buffer consumed, expired or failed */
			if (m->nbufs > 0) {
				drop(m, fuzz_u8(&in) % m->nbufs);
			}
			check_state(m);
			break;
		case 6: {
			/* a write: invalidate a range; whole file: reset */
			size_t i = 0;

			off = fuzz_u64(&in) % OFF_LIMIT;
			len = (op & 0x80) ? 0 : fuzz_u32(&in);
			if (op & 0x40) {
				off = 0;
				len = 0;
			}
			while (i < m->nbufs) {
				const struct buf *b = &m->bufs[i];

				if ((len == 0 || b->off < off + len) &&
				    (len == 0 ? b->off + b->len > off :
				     off < b->off + b->len)) {
					drop(m, i);
				} else {
					i++;
				}
			}
			if (len == 0 && off == 0) {
				gf2_ra_reset(&m->ra);
			}
			if ((op & 0x20) && m->file_size !=
			    GF2_RA_SIZE_UNKNOWN) {
				m->file_size = off + len;
			}
			check_state(m);
			break;
		}
		case 7:
			/* time moves (rarely backwards) */
			if ((op & 0xf8) == 0xf8) {
				m->now = m->now > 1000 ? m->now - 1000 : 1;
			} else {
				m->now += fuzz_u16(&in);
			}
			break;
		}
	}
	free(m);
	return 0;
}
