/*
 * glusterfs2: the one way smbd's main thread waits for work handed to
 * other threads (gfapi's callback threads, the bridge's workers), and
 * never beyond a bound.
 *
 * Layer: core.
 *
 * A gate counts the calls handed out through it.  The thread that made
 * it waits for the count to reach zero, for at most a given time; a
 * call still out when that time is up keeps the gate (and what its
 * release function frees) alive until it answers, so the waiter may go
 * on and let go of the gate at once.  Each gate holds one mutex and one
 * condition variable; no lock is held while release runs.
 */

#ifndef GF2_WAIT_H
#define GF2_WAIT_H

#include <stdbool.h>
#include <stdint.h>

struct gf2_wait;

/*
 * A gate with no call out, held by its caller.  release (may be NULL)
 * is called with arg once the caller has let go (gf2_wait_put) and
 * every call has answered, in whichever thread was last.  NULL: no
 * memory.
 */
struct gf2_wait *gf2_wait_new(void (*release)(void *arg), void *arg);
/* One more call out; it holds the gate until gf2_wait_done. */
void gf2_wait_add(struct gf2_wait *w);
/* Any thread: a call of the gate answered.  May free the gate. */
void gf2_wait_done(struct gf2_wait *w);
/* Calls out now (a snapshot). */
unsigned gf2_wait_pending(struct gf2_wait *w);
/*
 * Wait until no call is out, for at most max_ms (0: do not wait).
 * 0: none is out; ETIMEDOUT: some still are.
 */
int gf2_wait_for(struct gf2_wait *w, uint32_t max_ms);
/* The caller lets go; the gate goes with the last call out. */
void gf2_wait_put(struct gf2_wait *w);

#endif
