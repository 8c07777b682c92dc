/*
 * Preloaded into a private smbd by test_write_cache.py: makes one chosen
 * call of tdb_delete() made by the module fail, as it does when the tdb
 * cannot be changed (a full or failing disk, a lock error), and leaves
 * the record in place.  Calls from smbd itself are passed through.
 *
 * GF2_FAIL_MODULE:     the module's file name (glusterfs2.so, ...)
 * GF2_FAIL_TDB_DELETE: which call of the module's, counted per process
 *                      from 1
 * GF2_FAIL_MARK:       a file created when a call was made to fail, so
 *                      that the test knows the fault happened
 *
 * Test code only: never built into the module.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tdb_context;

typedef struct TDB_DATA {
	unsigned char *dptr;
	size_t dsize;
} TDB_DATA;

int tdb_delete(struct tdb_context *tdb, TDB_DATA key)
{
	static int (*real)(struct tdb_context *tdb, TDB_DATA key) = NULL;
	static unsigned calls = 0;
	const char *module = getenv("GF2_FAIL_MODULE");
	const char *nth = getenv("GF2_FAIL_TDB_DELETE");
	const char *mark = getenv("GF2_FAIL_MARK");
	Dl_info info = { 0 };
	const char *base = NULL;
	int fd;

	if (real == NULL) {
		real = (int (*)(struct tdb_context *, TDB_DATA))dlsym(
			RTLD_NEXT, "tdb_delete");
		if (real == NULL) {
			abort();
		}
	}
	if (module == NULL || nth == NULL ||
	    dladdr(__builtin_return_address(0), &info) == 0 ||
	    info.dli_fname == NULL) {
		return real(tdb, key);
	}
	base = strrchr(info.dli_fname, '/');
	base = (base != NULL) ? base + 1 : info.dli_fname;
	if (strcmp(base, module) != 0) {
		return real(tdb, key);
	}
	calls += 1;
	if (calls != (unsigned)atoi(nth)) {
		return real(tdb, key);
	}
	if (mark != NULL) {
		fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd != -1) {
			close(fd);
		}
	}
	return -1;
}
