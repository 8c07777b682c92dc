/*
 * glusterfs2: how Gluster's socket transport is linked into smbd.
 *
 * Layer: bridge.
 *
 * smbd's libraries export a sys_writev of Samba's (lib/util/sys_rw.c)
 * that retries writev() for as long as it fails with EAGAIN.  Gluster's
 * socket transport (rpc-transport/socket.so, loaded by glfs_init) calls a
 * function of the same name, meant to be libglusterfs' plain writev
 * wrapper: on EAGAIN it keeps the rest of the message queued and lets an
 * event thread send it when the socket drains (POLLOUT).  Loaded the usual
 * way, socket.so binds to the first sys_writev of the process's global
 * scope, Samba's, so a request larger than the free space of the brick
 * socket (the 8 MiB writes of a pipelining client, nearly always) spins
 * in writev() in the calling thread until the brick has read all but
 * the last socket buffer of it.
 *
 * The calling thread is smbd's main loop (glfs_pwrite_async winds down to
 * the socket in the caller's thread; with client io-threads bypassed
 * there is not even an io-threads hop): while it spins it reads no SMB
 * request and sends no reply, so the client's pipeline of writes stalls
 * behind each one, and the spinning takes a core the brick needs to
 * drain the socket.  (The stock module spins the same way, but in an
 * io-threads worker, so its main loop keeps receiving.)
 *
 * The remedy: load socket.so ourselves, before the first glfs_init of
 * the process, with RTLD_DEEPBIND, so that its own dependencies
 * (libglusterfs) come before the global scope; glfs_init's dlopen of the
 * same file then returns that copy.  Nothing else changes: every other
 * symbol socket.so uses resolves to the same object either way (checked
 * for malloc below: a preloaded allocator or a sanitizer runtime would
 * not be seen by a deep-bound library, and AddressSanitizer refuses
 * RTLD_DEEPBIND outright, so then we leave the binding as it is).
 */

#include "includes.h"
#include "gf2_bridge.h"

#include <dlfcn.h>
#include <glob.h>
#include <libgen.h>

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

void gf2_transport_bind(void)
{
	static bool done;
	void *libc = NULL;
	void *libgf = NULL;
	void *own_writev = NULL;
	void *handle = NULL;
	char *dir = NULL;
	char pattern[PATH_MAX];
	glob_t g = { 0 };
	Dl_info info;
	int ret;

	if (done) {
		return;
	}
	done = true;

	libgf = dlopen("libglusterfs.so.0", RTLD_NOW | RTLD_NOLOAD);
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	if (libgf == NULL || libc == NULL) {
		DBG_NOTICE("libglusterfs or libc not found loaded: socket "
			   "transport binding left as it is\n");
		goto out;
	}
	own_writev = dlsym(libgf, "sys_writev");
	if (own_writev == NULL ||
	    own_writev == dlsym(RTLD_DEFAULT, "sys_writev")) {
		/* no other sys_writev in the process: nothing to do */
		goto out;
	}
	if (dlsym(RTLD_DEFAULT, "malloc") != dlsym(libc, "malloc")) {
		DBG_NOTICE("malloc is interposed (sanitizer or preloaded "
			   "allocator): Gluster's socket transport keeps "
			   "Samba's sys_writev, large writes spin in smbd\n");
		goto out;
	}
	if (dladdr(own_writev, &info) == 0 || info.dli_fname == NULL) {
		goto out;
	}
	dir = talloc_strdup(talloc_tos(), info.dli_fname);
	if (dir == NULL) {
		goto out;
	}
	ret = snprintf(pattern, sizeof(pattern),
		       "%s/glusterfs/*/rpc-transport/socket.so", dirname(dir));
	if (ret < 0 || (size_t)ret >= sizeof(pattern)) {
		goto out;
	}
	ret = glob(pattern, 0, NULL, &g);
	if (ret != 0 || g.gl_pathc != 1) {
		DBG_WARNING("%zu matches for %s: Gluster's socket transport "
			    "keeps Samba's sys_writev, large writes spin in "
			    "smbd\n", ret == 0 ? g.gl_pathc : 0, pattern);
		goto out;
	}
	handle = dlopen(g.gl_pathv[0], RTLD_NOW | RTLD_NOLOAD);
	if (handle != NULL) {
		/* an earlier glfs instance of this process loaded it */
		dlclose(handle);
		DBG_NOTICE("%s already loaded: its sys_writev binding stays "
			   "as it is\n", g.gl_pathv[0]);
		goto out;
	}
	handle = dlopen(g.gl_pathv[0], RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (handle == NULL) {
		DBG_WARNING("dlopen(%s, RTLD_DEEPBIND): %s\n", g.gl_pathv[0],
			    dlerror());
		goto out;
	}
	/* kept for the life of the process, as Gluster keeps it */
	DBG_INFO("%s bound to libglusterfs' sys_writev\n", g.gl_pathv[0]);
out:
	globfree(&g);
	TALLOC_FREE(dir);
	if (libc != NULL) {
		dlclose(libc);
	}
	if (libgf != NULL) {
		dlclose(libgf);
	}
}
