/*
 * glusterfs2: the bookkeeping of prefetched data; see include/gf2_pfbook.h.
 *
 * Layer: core.
 *
 * A file's chunks sit on a list in issue order and are found by walking
 * it: a file holds a few windows' worth of chunks at most.  A chunk on a
 * file's list is never an orphan; an orphan is on no list and only its
 * completion (gf2_pfb_complete) or gf2_pfb_cancel reaches it again.
 */

#include "gf2_pfbook.h"

#include <string.h>

struct gf2_pfb_chunk {
	struct gf2_pfb_chunk *prev, *next;
	struct gf2_pfb *b;
	struct gf2_pfb_file *f;		/* NULL once orphaned */
	uint64_t off;
	uint64_t len;
	uint64_t got;			/* valid bytes; < len: EOF there */
	uint64_t served;
	uint64_t gen;			/* f->wgen when issued */
	uint64_t issued_ns;		/* the data is at least this fresh */
	uint8_t *data;			/* once ready, child of c */
	void *owner;
	bool ready;
};

struct gf2_pfb_file {
	struct gf2_pfb_file *prev, *next;
	struct gf2_pfb *b;
	struct gf2_pfb_chunk *first, *last;
	void *private_data;
	uint64_t wgen;
	unsigned writes_inflight;
};

struct gf2_pfb {
	struct gf2_pfb_file *files;
	uint64_t chunk;
	uint64_t cap;
	void (*unused_fn)(void *owner, uint64_t bytes);
	struct gf2_pfb_stats stats;
};

static uint64_t pfb_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

struct gf2_pfb *gf2_pfb_new(TALLOC_CTX *mem_ctx, uint64_t chunk,
			    uint64_t cap,
			    void (*unused_fn)(void *owner, uint64_t bytes))
{
	struct gf2_pfb *b = NULL;

	if (chunk == 0) {
		return NULL;
	}
	b = talloc_zero(mem_ctx, struct gf2_pfb);
	if (b == NULL) {
		return NULL;
	}
	b->chunk = chunk;
	b->cap = cap;
	b->unused_fn = unused_fn;
	return b;
}

const struct gf2_pfb_stats *gf2_pfb_stats(const struct gf2_pfb *b)
{
	return &b->stats;
}

void gf2_pfb_set_cap(struct gf2_pfb *b, uint64_t cap)
{
	if (cap > b->cap || b->stats.used == 0) {
		b->cap = cap;
	}
}

uint64_t gf2_pfb_avail(const struct gf2_pfb *b)
{
	return b->cap > b->stats.used ? b->cap - b->stats.used : 0;
}

/* n more bytes are held: the peak follows. */
static void pfb_hold(struct gf2_pfb *b, uint64_t n)
{
	b->stats.used += n;
	if (b->stats.used > b->stats.peak) {
		b->stats.peak = b->stats.used;
	}
}

void gf2_pfb_take(struct gf2_pfb *b, uint64_t n)
{
	pfb_hold(b, n);
	b->stats.wc_used += n;
}

void gf2_pfb_give(struct gf2_pfb *b, uint64_t n)
{
	b->stats.used -= n;
	b->stats.wc_used -= n;
}

static void pfb_chunk_append(struct gf2_pfb_file *f, struct gf2_pfb_chunk *c)
{
	c->f = f;
	c->prev = f->last;
	c->next = NULL;
	if (f->last != NULL) {
		f->last->next = c;
	} else {
		f->first = c;
	}
	f->last = c;
}

static void pfb_chunk_unlink(struct gf2_pfb_chunk *c)
{
	struct gf2_pfb_file *f = c->f;

	if (c->prev != NULL) {
		c->prev->next = c->next;
	} else {
		f->first = c->next;
	}
	if (c->next != NULL) {
		c->next->prev = c->prev;
	} else {
		f->last = c->prev;
	}
	c->prev = c->next = NULL;
	c->f = NULL;
}

static void pfb_chunk_free(struct gf2_pfb_chunk *c)
{
	struct gf2_pfb *b = c->b;
	uint64_t had = c->ready ? c->got : c->len;

	b->stats.used -= c->len;
	if (c->ready && c->got > c->served) {
		b->stats.wasted += c->got - c->served;
	}
	if (c->owner != NULL && had > c->served && b->unused_fn != NULL) {
		b->unused_fn(c->owner, had - c->served);
	}
	if (c->f != NULL) {
		pfb_chunk_unlink(c);
	}
	talloc_free(c);
}

/*
 * Free c, or, while its read is in flight, orphan it: the read may still
 * land in its buffer, so it is freed when the completion is reported.
 */
static void pfb_chunk_drop(struct gf2_pfb_chunk *c)
{
	if (!c->ready) {
		pfb_chunk_unlink(c);
		return;
	}
	pfb_chunk_free(c);
}

struct gf2_pfb_file *gf2_pfb_file_new(struct gf2_pfb *b, void *private_data)
{
	struct gf2_pfb_file *f = talloc_zero(b, struct gf2_pfb_file);

	if (f == NULL) {
		return NULL;
	}
	f->b = b;
	f->private_data = private_data;
	f->next = b->files;
	if (b->files != NULL) {
		b->files->prev = f;
	}
	b->files = f;
	return f;
}

void *gf2_pfb_file_private(const struct gf2_pfb_file *f)
{
	return f->private_data;
}

void gf2_pfb_file_free(struct gf2_pfb_file *f)
{
	struct gf2_pfb *b = f->b;

	while (f->first != NULL) {
		pfb_chunk_drop(f->first);
	}
	if (f->prev != NULL) {
		f->prev->next = f->next;
	} else {
		b->files = f->next;
	}
	if (f->next != NULL) {
		f->next->prev = f->prev;
	}
	talloc_free(f);
}

unsigned gf2_pfb_invalidate(struct gf2_pfb_file *f, uint64_t off,
			    uint64_t len)
{
	struct gf2_pfb_chunk *c = NULL;
	struct gf2_pfb_chunk *next = NULL;
	uint64_t end = UINT64_MAX;
	unsigned inflight = 0;

	if (len != 0 && len <= UINT64_MAX - off) {
		end = off + len;
	}
	f->wgen += 1;
	for (c = f->first; c != NULL; c = next) {
		next = c->next;
		if (c->off < end && off < c->off + c->len) {
			f->b->stats.invalidated += c->len;
			if (!c->ready) {
				inflight += 1;
			}
			pfb_chunk_drop(c);
		}
	}
	return inflight;
}

void gf2_pfb_write_begin(struct gf2_pfb_file *f)
{
	f->writes_inflight += 1;
}

void gf2_pfb_write_end(struct gf2_pfb_file *f)
{
	if (f->writes_inflight > 0) {
		f->writes_inflight -= 1;
	}
	f->wgen += 1;
}

unsigned gf2_pfb_writes_inflight(const struct gf2_pfb_file *f)
{
	return f->writes_inflight;
}

void gf2_pfb_expire(struct gf2_pfb *b, uint64_t now_ns, uint64_t max_age_ms)
{
	struct gf2_pfb_file *f = NULL;

	for (f = b->files; f != NULL; f = f->next) {
		struct gf2_pfb_chunk *c = NULL;
		struct gf2_pfb_chunk *next = NULL;

		for (c = f->first; c != NULL; c = next) {
			uint64_t age_ms = UINT64_MAX;

			next = c->next;
			if (!c->ready) {
				continue;
			}
			if (now_ns >= c->issued_ns) {
				age_ms = (now_ns - c->issued_ns) / 1000000;
			}
			if (age_ms > max_age_ms) {
				b->stats.expired += c->got - c->served;
				pfb_chunk_drop(c);
			}
		}
	}
}

static struct gf2_pfb_chunk *pfb_find(const struct gf2_pfb_file *f,
				      uint64_t pos)
{
	struct gf2_pfb_chunk *c = NULL;

	for (c = f->first; c != NULL; c = c->next) {
		if (c->off <= pos && pos < c->off + c->len) {
			return c;
		}
	}
	return NULL;
}

bool gf2_pfb_next(const struct gf2_pfb_file *f, uint64_t *pos, uint64_t end,
		  uint64_t *len)
{
	uint64_t p = *pos;

	while (p < end) {
		const struct gf2_pfb_chunk *c = pfb_find(f, p);
		uint64_t clen;

		if (c != NULL) {
			p = c->off + c->len;
			continue;
		}
		clen = pfb_min(end - p, f->b->chunk);
		/* stop where an existing chunk starts */
		for (c = f->first; c != NULL; c = c->next) {
			if (c->off > p && c->off < p + clen) {
				clen = c->off - p;
			}
		}
		*pos = p;
		*len = clen;
		return true;
	}
	*pos = p;
	return false;
}

struct gf2_pfb_chunk *gf2_pfb_chunk_new(struct gf2_pfb_file *f, uint64_t off,
					uint64_t len, void *owner,
					uint64_t now_ns)
{
	struct gf2_pfb_chunk *c = talloc_zero(f->b, struct gf2_pfb_chunk);

	if (c == NULL) {
		return NULL;
	}
	c->b = f->b;
	c->off = off;
	c->len = len;
	c->gen = f->wgen;
	c->issued_ns = now_ns;
	c->owner = owner;
	pfb_hold(f->b, len);
	pfb_chunk_append(f, c);
	return c;
}

struct gf2_pfb_file *gf2_pfb_chunk_file(const struct gf2_pfb_chunk *c)
{
	return c->f;
}

void gf2_pfb_submitted(struct gf2_pfb_chunk *c)
{
	c->b->stats.issued += c->len;
}

void gf2_pfb_cancel(struct gf2_pfb_chunk *c)
{
	pfb_chunk_free(c);
}

enum gf2_pfb_done gf2_pfb_complete(struct gf2_pfb_chunk *c, ssize_t ret,
				   uint8_t **buf)
{
	struct gf2_pfb_file *f = c->f;

	if (f == NULL) {
		/* Orphaned while the read was in flight. */
		pfb_chunk_free(c);
		return GF2_PFB_ORPHAN;
	}
	if (ret < 0 || c->gen != f->wgen || f->writes_inflight > 0) {
		/* Failed, or the file was written meanwhile: useless. */
		pfb_chunk_free(c);
		return GF2_PFB_REJECTED;
	}
	c->data = talloc_move(c, buf);
	c->got = pfb_min((uint64_t)ret, c->len);
	c->ready = true;
	c->b->stats.completed += c->got;
	return GF2_PFB_READY;
}

enum gf2_pfb_serve gf2_pfb_serve(struct gf2_pfb_file *f, uint8_t *data,
				 uint64_t off, uint64_t n, uint64_t *got)
{
	struct gf2_pfb_chunk *c = NULL;
	struct gf2_pfb_chunk *next = NULL;
	uint64_t pos = off;
	uint64_t end = off + n;
	bool wait = false;
	bool eof = false;

	while (pos < end) {
		c = pfb_find(f, pos);
		if (c == NULL) {
			return GF2_PFB_MISS;
		}
		if (!c->ready) {
			wait = true;
			pos = c->off + c->len;
			continue;
		}
		if (pos >= c->off + c->got) {
			/* EOF inside this chunk */
			eof = true;
			break;
		}
		pos = pfb_min(end, c->off + c->got);
		if (c->got < c->len && pos == c->off + c->got) {
			eof = true;
			break;
		}
	}
	if (wait) {
		return GF2_PFB_WAIT;
	}
	end = eof ? pfb_min(pos, end) : end;

	pos = off;
	while (pos < end) {
		uint64_t take;

		c = pfb_find(f, pos);
		take = pfb_min(end, c->off + c->got) - pos;
		memcpy(data + (pos - off), c->data + (pos - c->off), take);
		c->served += take;
		pos += take;
	}
	*got = end - off;
	f->b->stats.served += *got;

	/* Chunks this read finished are consumed: give the memory back. */
	for (c = f->first; c != NULL; c = next) {
		next = c->next;
		if (c->ready && c->off + c->got <= end &&
		    c->served >= c->got) {
			pfb_chunk_free(c);
		}
	}
	return GF2_PFB_SERVED;
}
