/*
 * glusterfs2: how far this process's own writes reached (see
 * include/gf2_written.h).
 *
 * Layer: core.
 */

#include <stddef.h>
#include <string.h>
#include "gf2_written.h"

void gf2_written_init(struct gf2_written *t)
{
	memset(t, 0, sizeof(*t));
}

static struct gf2_written_slot *gf2_written_find(
	const struct gf2_written *t, uint64_t ino)
{
	size_t i;

	if (ino == 0) {
		return NULL;
	}
	for (i = 0; i < GF2_WRITTEN_SLOTS; i++) {
		if (t->slot[i].ino == ino) {
			return (struct gf2_written_slot *)&t->slot[i];
		}
	}
	return NULL;
}

void gf2_written_note(struct gf2_written *t, uint64_t ino, uint64_t end)
{
	struct gf2_written_slot *s = NULL;
	size_t i;

	if (ino == 0 || end == 0) {
		return;
	}
	t->tick += 1;
	s = gf2_written_find(t, ino);
	if (s == NULL) {
		/* a free slot, else the one written longest ago */
		s = &t->slot[0];
		for (i = 0; i < GF2_WRITTEN_SLOTS; i++) {
			if (t->slot[i].ino == 0) {
				s = &t->slot[i];
				break;
			}
			if (t->slot[i].used < s->used) {
				s = &t->slot[i];
			}
		}
		if (s->ino != 0) {
			t->replaced += 1;
		}
		s->ino = ino;
		s->end = 0;
	}
	if (end > s->end) {
		s->end = end;
	}
	s->used = t->tick;
}

uint64_t gf2_written_end(const struct gf2_written *t, uint64_t ino)
{
	const struct gf2_written_slot *s = gf2_written_find(t, ino);

	return s != NULL ? s->end : 0;
}

bool gf2_written_stale(const struct gf2_written *t, uint64_t ino,
		       uint64_t size)
{
	return size < gf2_written_end(t, ino);
}

void gf2_written_forget(struct gf2_written *t, uint64_t ino)
{
	struct gf2_written_slot *s = gf2_written_find(t, ino);

	if (s != NULL) {
		memset(s, 0, sizeof(*s));
	}
}
