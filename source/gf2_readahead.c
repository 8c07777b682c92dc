/*
 * glusterfs2: sequential-read detection and readahead windows (pure C).
 * See include/gf2_readahead.h for the model and the window diagram.
 *
 * Layer: core.
 */

#include "gf2_readahead.h"

#include <string.h>

/* A read this close to a stream's frontier continues it. */
#define GF2_RA_MIN_TOLERANCE (1024 * 1024ULL)
#define GF2_RA_TOLERANCE_READS 16

void gf2_ra_init(struct gf2_ra_state *st)
{
	memset(st, 0, sizeof(*st));
}

void gf2_ra_reset(struct gf2_ra_state *st)
{
	uint64_t clock = st->clock;

	memset(st, 0, sizeof(*st));
	st->clock = clock;
}

bool gf2_ra_config_sanitize(struct gf2_ra_config *cfg)
{
	struct gf2_ra_config in = *cfg;

	if (cfg->max_window == 0) {
		cfg->max_window = GF2_RA_DEFAULT_MAX;
	}
	if (cfg->init_window == 0) {
		cfg->init_window = GF2_RA_DEFAULT_INIT;
	}
	if (cfg->min_window == 0) {
		cfg->min_window = GF2_RA_DEFAULT_MIN;
	}
	if (cfg->init_window > cfg->max_window) {
		cfg->init_window = cfg->max_window;
	}
	if (cfg->min_window > cfg->init_window) {
		cfg->min_window = cfg->init_window;
	}
	if (cfg->streams == 0) {
		cfg->streams = GF2_RA_DEFAULT_STREAMS;
	}
	if (cfg->streams > GF2_RA_MAX_STREAMS) {
		cfg->streams = GF2_RA_MAX_STREAMS;
	}
	return memcmp(&in, cfg, sizeof(in)) == 0;
}

static uint64_t gf2_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t gf2_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

uint64_t gf2_ra_init_size(const struct gf2_ra_config *cfg, uint64_t len)
{
	return gf2_min(gf2_max(cfg->init_window, 2 * len), cfg->max_window);
}

uint64_t gf2_ra_next_size(const struct gf2_ra_config *cfg, uint64_t cur)
{
	uint64_t next;

	if (cur < cfg->max_window / 16) {
		next = cur * 4;
	} else {
		next = cur * 2;
	}
	return gf2_min(next, cfg->max_window);
}

static uint64_t gf2_ra_tolerance(const struct gf2_ra_config *cfg,
				 const struct gf2_ra_stream *s, uint64_t len)
{
	uint64_t t = GF2_RA_TOLERANCE_READS * gf2_max(len, s->last_len);

	t = gf2_max(t, GF2_RA_MIN_TOLERANCE);
	return gf2_min(t, gf2_max(cfg->max_window, GF2_RA_MIN_TOLERANCE));
}

static bool gf2_ra_continues(const struct gf2_ra_config *cfg,
			     const struct gf2_ra_stream *s,
			     uint64_t off, uint64_t len)
{
	uint64_t tol = gf2_ra_tolerance(cfg, s, len);
	uint64_t end = off + len;

	if (!s->used) {
		return false;
	}
	/* Entirely before the stream's first read: backwards, not ours. */
	if (end <= s->origin) {
		return false;
	}
	if (off > s->frontier + tol) {
		return false;
	}
	if (end + tol < s->frontier) {
		return false;
	}
	return true;
}

/* Sequential enough: reads cover at least 3/4 of what the stream spans. */
static bool gf2_ra_dense(const struct gf2_ra_stream *s)
{
	uint64_t span = s->frontier - s->origin;

	return s->covered >= span - span / 4;
}

static int gf2_ra_victim(struct gf2_ra_state *st,
			 const struct gf2_ra_config *cfg)
{
	unsigned i;
	int victim = 0;

	for (i = 0; i < cfg->streams; i++) {
		if (!st->s[i].used) {
			return (int)i;
		}
		if (st->s[i].last_use < st->s[victim].last_use) {
			victim = (int)i;
		}
	}
	return victim;
}

/*
 * Track the stream's consumption rate from its frontier over time: a
 * sample every GF2_RA_RATE_SAMPLE_MS, smoothed; before the first sample,
 * the average since the stream's first read.
 */
static void gf2_ra_rate(struct gf2_ra_stream *s, uint64_t now_ms)
{
	uint64_t dt;
	uint64_t inst;

	if (now_ms == 0) {
		return;
	}
	if (now_ms < s->rate_t || now_ms < s->t_origin) {
		/* clock went backwards: start measuring again */
		s->t_origin = s->rate_t = now_ms;
		s->rate_f = s->frontier;
		s->rate = 0;
		s->rate_sampled = false;
		return;
	}
	dt = now_ms - s->rate_t;
	if (dt < GF2_RA_RATE_SAMPLE_MS) {
		if (!s->rate_sampled) {
			dt = gf2_max(now_ms - s->t_origin, 1);
			s->rate = (s->frontier - s->origin) * 1000 / dt;
		}
		return;
	}
	inst = s->frontier > s->rate_f ?
		(s->frontier - s->rate_f) * 1000 / dt : 0;
	s->rate = s->rate_sampled ? (3 * s->rate + inst) / 4 : inst;
	s->rate_sampled = true;
	s->rate_t = now_ms;
	s->rate_f = s->frontier;
}

uint64_t gf2_ra_lead_limit(const struct gf2_ra_config *cfg,
			   const struct gf2_ra_stream *s, uint64_t len)
{
	uint64_t lead;

	if (cfg->max_lead_ms == 0 || s->rate == 0) {
		return UINT64_MAX;
	}
	if (s->rate > UINT64_MAX / cfg->max_lead_ms) {
		return UINT64_MAX;
	}
	lead = s->rate * cfg->max_lead_ms / 1000;
	/* Always at least one small window ahead of the reader. */
	return gf2_max(lead, gf2_max(cfg->min_window, 2 * len));
}

/*
 * Issue the window [start, start + size) of stream s, cut at EOF, to the
 * lead limit and to the memory available.  Records it as the newest
 * window on success.
 */
static void gf2_ra_issue(const struct gf2_ra_config *cfg,
			 struct gf2_ra_stream *s,
			 uint64_t start, uint64_t size,
			 uint64_t file_size, uint64_t avail,
			 struct gf2_ra_decision *d)
{
	uint64_t len = size;
	uint64_t lead = gf2_ra_lead_limit(cfg, s, s->last_len);

	if (lead != UINT64_MAX) {
		uint64_t allowed = s->frontier + lead < s->frontier ?
			UINT64_MAX : s->frontier + lead;

		if (start >= allowed ||
		    (allowed - start < cfg->min_window &&
		     allowed - start < len)) {
			/* Far enough ahead: the next read tries again. */
			return;
		}
		len = gf2_min(len, allowed - start);
	}

	if (file_size != GF2_RA_SIZE_UNKNOWN) {
		if (start >= file_size) {
			/* Nothing left to read ahead: stop firing. */
			s->start = start;
			s->size = size;
			s->marker = UINT64_MAX;
			return;
		}
		len = gf2_min(len, file_size - start);
	}
	if (len > avail) {
		d->pressure = true;
		if (avail < cfg->min_window && avail < len) {
			/*
			 * No room: skip, and ramp again from the start once
			 * memory is back.  The marker stays, so the next read
			 * tries again.
			 */
			s->size = 0;
			return;
		}
		len = avail;
	}
	s->start = start;
	s->size = len;
	s->marker = start;
	d->off = start;
	d->len = len;
}

void gf2_ra_on_miss(struct gf2_ra_state *st, int stream)
{
	if (stream < 0 || stream >= GF2_RA_MAX_STREAMS) {
		return;
	}
	if (st->s[stream].used && st->s[stream].confirmed) {
		st->s[stream].size = 0;
	}
}

void gf2_ra_on_read(struct gf2_ra_state *st,
		    const struct gf2_ra_config *cfg,
		    uint64_t off, uint64_t len,
		    uint64_t file_size, uint64_t avail,
		    uint64_t now_ms,
		    struct gf2_ra_decision *d)
{
	struct gf2_ra_stream *s = NULL;
	unsigned i;
	int idx = -1;

	memset(d, 0, sizeof(*d));
	d->stream = -1;
	st->clock += 1;

	if (len == 0 || off + len < off) {
		return;
	}

	for (i = 0; i < cfg->streams; i++) {
		if (gf2_ra_continues(cfg, &st->s[i], off, len)) {
			idx = (int)i;
			break;
		}
	}

	if (idx < 0) {
		/* A new candidate stream; costs nothing until confirmed. */
		idx = gf2_ra_victim(st, cfg);
		s = &st->s[idx];
		memset(s, 0, sizeof(*s));
		s->used = true;
		s->origin = off;
		s->frontier = off + len;
		s->covered = len;
		s->last_len = len;
		s->last_use = st->clock;
		s->t_origin = now_ms;
		s->rate_t = now_ms;
		s->rate_f = s->frontier;
		d->stream = idx;
		return;
	}

	s = &st->s[idx];
	d->stream = idx;
	s->last_use = st->clock;
	s->last_len = len;
	s->covered += len;
	if (off + len > s->frontier) {
		s->frontier = off + len;
	}
	if (s->covered > s->frontier - s->origin) {
		/* re-reads: never count more than the span */
		s->covered = s->frontier - s->origin;
	}
	gf2_ra_rate(s, now_ms);

	if (!gf2_ra_dense(s) || s->frontier <= s->origin + len) {
		/* Strided, or not advanced yet: no prefetch. */
		s->confirmed = false;
		s->size = 0;
		return;
	}

	d->sequential = s->confirmed;

	if (cfg->direct_min != 0 && len >= cfg->direct_min) {
		/* large reads go straight to Gluster: no window */
		s->size = 0;
		return;
	}

	if (!s->confirmed || s->size == 0) {
		s->confirmed = true;
		gf2_ra_issue(cfg, s, s->frontier, gf2_ra_init_size(cfg, len),
			     file_size, avail, d);
		return;
	}

	if (s->frontier > s->marker) {
		/*
		 * The next window follows the newest one, unless the reader
		 * is already past its end (reads larger than the window, or
		 * a read that jumped ahead within the tolerance): then what
		 * lies behind the frontier has been read, and the window
		 * starts at the frontier instead.
		 */
		uint64_t next = s->start + s->size;

		if (next < s->frontier) {
			next = s->frontier;
		}
		gf2_ra_issue(cfg, s, next, gf2_ra_next_size(cfg, s->size),
			     file_size, avail, d);
	}
}
