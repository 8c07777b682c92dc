/*
 * glusterfs2: Gluster upcall (cache invalidation) events.
 *
 * Layer: bridge.
 *
 * With features.cache-invalidation on, the bricks tell every client that
 * recently looked at an inode when another client changes it.  gfapi
 * delivers those events by calling gf2_upcall_cbk on one of its own
 * threads.  That thread must not touch smbd's data (talloc, the caches),
 * so it only records the inode number in a small queue under a mutex.
 * smbd's main thread takes the queue (gf2_upcall_take, through
 * gf2_cache_sync) before it answers anything from a cache, and the caches
 * drop what they hold of those files: a call that starts after the event
 * was delivered never sees kept data older than the change.
 *
 * The queue is per process and bounded (GF2_UPCALL_QUEUE inodes).  When it
 * overflows, or an event names no inode, the caches drop everything
 * they hold in the process: always safe, just slower.
 *
 * Files are matched by inode number: gfapi reports st_ino as the low 64
 * bits of the GFID, as does gfid_to_ino() in Gluster, and smbd's file_id
 * is built from that st_ino.
 */

#include "includes.h"
#include "gf2_bridge.h"

#include <glusterfs/api/glfs-handles.h>
#include <pthread.h>

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

static pthread_mutex_t gf2_up_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t gf2_up_ino[GF2_UPCALL_QUEUE];
static unsigned gf2_up_n;
static bool gf2_up_overflow;
/* Non-zero while the queue holds something: the drain's fast path. */
static unsigned gf2_up_pending;
/* Events taken by the main loop (an overflow counts as one). */
static uint64_t gf2_up_taken;

static uint64_t gf2_gfid_to_ino(const unsigned char gfid[16])
{
	uint64_t ino = 0;
	int i;

	for (i = 8; i < 16; i++) {
		ino = (ino << 8) | gfid[i];
	}
	return ino;
}

/* The file id an upcall's object names, as the caches key it. */
static bool gf2_upcall_ino(struct glfs_object *obj, uint64_t *ino)
{
	unsigned char gfid[GFAPI_HANDLE_LENGTH];

	if (obj == NULL ||
	    glfs_h_extract_handle(obj, gfid, sizeof(gfid)) !=
	    (int)sizeof(gfid)) {
		return false;
	}
	*ino = gf2_gfid_to_ino(gfid);
	return true;
}

/* gfapi's thread: record, nothing else. */
static void gf2_upcall_cbk(struct glfs_upcall *up, void *data)
{
	struct glfs_upcall_inode *in = NULL;
	bool known = false;
	uint64_t ino = 0;

	if (glfs_upcall_get_reason(up) != GLFS_UPCALL_INODE_INVALIDATE) {
		glfs_free(up);
		return;
	}
	in = glfs_upcall_get_event(up);
	if (in != NULL) {
		known = gf2_upcall_ino(glfs_upcall_inode_get_object(in), &ino);
	}
	glfs_free(up);

	pthread_mutex_lock(&gf2_up_lock);
	if (!known || gf2_up_n == GF2_UPCALL_QUEUE) {
		gf2_up_overflow = true;
	} else {
		gf2_up_ino[gf2_up_n++] = ino;
	}
	__atomic_store_n(&gf2_up_pending, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&gf2_up_lock);
}

unsigned gf2_upcall_take(uint64_t inos[GF2_UPCALL_QUEUE], bool *all)
{
	unsigned n;

	*all = false;
	if (__atomic_load_n(&gf2_up_pending, __ATOMIC_ACQUIRE) == 0) {
		return 0;
	}
	pthread_mutex_lock(&gf2_up_lock);
	n = gf2_up_n;
	memcpy(inos, gf2_up_ino, n * sizeof(inos[0]));
	*all = gf2_up_overflow;
	gf2_up_n = 0;
	gf2_up_overflow = false;
	__atomic_store_n(&gf2_up_pending, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&gf2_up_lock);
	gf2_up_taken += n + (*all ? 1 : 0);
	return n;
}

uint64_t gf2_upcall_count(void)
{
	return gf2_up_taken;
}

bool gf2_upcall_register(struct gf2_volume *vol)
{
	int ret;

	ret = glfs_upcall_register(vol->fs, GLFS_EVENT_INODE_INVALIDATE,
				   gf2_upcall_cbk, NULL);
	if (ret <= 0 || (ret & GLFS_EVENT_INODE_INVALIDATE) == 0) {
		DBG_NOTICE("volume %s: no upcall events (%s): prefetched "
			   "data follows changes from other clients only "
			   "within glusterfs2:prefetch max age\n",
			   vol->volname, ret < 0 ? strerror(errno) : "refused");
		return false;
	}
	return true;
}

void gf2_upcall_unregister(struct gf2_volume *vol)
{
	if (glfs_upcall_unregister(vol->fs, GLFS_EVENT_ANY) < 0) {
		DBG_DEBUG("volume %s: glfs_upcall_unregister: %s\n",
			  vol->volname, strerror(errno));
	}
}
