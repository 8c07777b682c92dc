/*
 * glusterfs2: when a Gluster read lease may answer smbd's lock checks.
 *
 * Layer: core.
 *
 * The state of one read lease (glusterfs2:lock check = lease,
 * gf2_lease.c), and the decisions made on it: whether a lease that was
 * just granted may be kept, whether a recall must give it back, whether
 * a check may trust it, whether the next grant must wait.  Two threads
 * work on it: smbd's main thread asks for the lease, trusts it and gives
 * it back; gfapi's upcall thread recalls it.  Every function except
 * gf2_ls_trusted is called with the record's mutex held (the caller's);
 * the grant call itself is made without it, so a recall can arrive
 * while it is out.
 *
 * Pure (libc only), unit-tested alone (test/unit/test_leasestate.c).
 */

#ifndef GF2_LEASESTATE_H
#define GF2_LEASESTATE_H

#include <stdbool.h>

struct gf2_leasestate {
	bool held;	/* granted, not recalled, not given back */
	bool taking;	/* a grant call is out */
	bool recalled;	/* a recall came since the last grant call began */
	int trusted;	/* atomic: checks may answer "not locked" */
};

enum gf2_ls_taken {
	GF2_LS_REFUSED,		/* no lease: ask the bricks */
	GF2_LS_HELD,		/* held: probe, then trust */
	GF2_LS_GIVE_BACK,	/* granted but recalled meanwhile: give back */
};

/*
 * Main thread, right before the grant call (after gf2_ls_backoff).
 * False: the lease is held already, nothing to ask.
 */
bool gf2_ls_take_begin(struct gf2_leasestate *s);
/* Main thread: the grant call answered (granted or not). */
enum gf2_ls_taken gf2_ls_take_end(struct gf2_leasestate *s, bool granted);
/*
 * Upcall thread: the bricks recall the lease.  Never trusted from now.
 * True: the lease is held and the caller must give it back.
 */
bool gf2_ls_recall(struct gf2_leasestate *s);
/* Main thread: trust a lease held (and not recalled); false otherwise. */
bool gf2_ls_trust(struct gf2_leasestate *s);
/* Main thread: stop trusting; true when held, to be given back now. */
bool gf2_ls_drop(struct gf2_leasestate *s);
/*
 * Main thread, before a grant: true (once) when a recall came since the
 * last grant call began: the next one waits, so that the call of the
 * other client that caused the recall, or its retry, gets through.
 */
bool gf2_ls_backoff(struct gf2_leasestate *s);
/* Any thread, no mutex: may a check answer "not locked"? */
bool gf2_ls_trusted(const struct gf2_leasestate *s);

#endif
