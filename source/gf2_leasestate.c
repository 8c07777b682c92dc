/*
 * glusterfs2: when a Gluster read lease may answer smbd's lock checks
 * (include/gf2_leasestate.h).
 *
 * Layer: core.
 */

#include "gf2_leasestate.h"

static void gf2_ls_set_trusted(struct gf2_leasestate *s, int v)
{
	__atomic_store_n(&s->trusted, v, __ATOMIC_SEQ_CST);
}

bool gf2_ls_take_begin(struct gf2_leasestate *s)
{
	if (s->held) {
		return false;
	}
	s->taking = true;
	s->recalled = false;
	return true;
}

enum gf2_ls_taken gf2_ls_take_end(struct gf2_leasestate *s, bool granted)
{
	s->taking = false;
	if (!granted) {
		return GF2_LS_REFUSED;
	}
	if (s->recalled) {
		/*
		 * The recall came while the grant was out: it found nothing
		 * held, so it gave nothing back.  This grant is what it
		 * recalled.
		 */
		return GF2_LS_GIVE_BACK;
	}
	s->held = true;
	return GF2_LS_HELD;
}

bool gf2_ls_recall(struct gf2_leasestate *s)
{
	gf2_ls_set_trusted(s, 0);
	if (s->taking) {
		s->recalled = true;	/* for gf2_ls_take_end */
		return false;
	}
	if (!s->held) {
		return false;
	}
	s->held = false;
	s->recalled = true;
	return true;
}

bool gf2_ls_trust(struct gf2_leasestate *s)
{
	if (!s->held) {
		return false;
	}
	gf2_ls_set_trusted(s, 1);
	return true;
}

bool gf2_ls_drop(struct gf2_leasestate *s)
{
	bool held = s->held;

	gf2_ls_set_trusted(s, 0);
	s->held = false;
	return held;
}

bool gf2_ls_backoff(struct gf2_leasestate *s)
{
	bool recalled = s->recalled;

	s->recalled = false;
	return recalled;
}

bool gf2_ls_trusted(const struct gf2_leasestate *s)
{
	return __atomic_load_n(&s->trusted, __ATOMIC_SEQ_CST) != 0;
}
