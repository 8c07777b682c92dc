/*
 * Preloaded into a private smbd by test_copychunk_identity.py: makes one
 * chosen call of change_to_user_and_service_by_fsp() made by the module
 * fail, as smbd's own does when the handle's session or share can no
 * longer be entered.  Calls from smbd itself are passed through.
 *
 * GF2_FAIL_MODULE: the module's file name (glusterfs2.so, ...)
 * GF2_FAIL_CALL:   which call of the module's, counted per process from 1
 *
 * Test code only: never built into the module.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct files_struct;

bool change_to_user_and_service_by_fsp(struct files_struct *fsp)
{
	static bool (*real)(struct files_struct *fsp) = NULL;
	static unsigned calls = 0;
	const char *module = getenv("GF2_FAIL_MODULE");
	const char *nth = getenv("GF2_FAIL_CALL");
	Dl_info info = { 0 };
	const char *base = NULL;

	if (real == NULL) {
		real = (bool (*)(struct files_struct *))dlsym(
			RTLD_NEXT, "change_to_user_and_service_by_fsp");
		if (real == NULL) {
			abort();
		}
	}
	if (module == NULL || nth == NULL ||
	    dladdr(__builtin_return_address(0), &info) == 0 ||
	    info.dli_fname == NULL) {
		return real(fsp);
	}
	base = strrchr(info.dli_fname, '/');
	base = (base != NULL) ? base + 1 : info.dli_fname;
	if (strcmp(base, module) != 0) {
		return real(fsp);
	}
	calls += 1;
	if (calls == (unsigned)atoi(nth)) {
		return false;
	}
	return real(fsp);
}
