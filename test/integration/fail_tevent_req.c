/*
 * Preloaded into a private smbd by test_write_cache.py: makes one
 * tevent_req_create() of a chosen request state fail, as it does when
 * talloc finds no memory.  The module's requests are made through
 * libtevent's exported _tevent_req_create(), called through the PLT, so
 * it can be wrapped here; the module itself is untouched.
 *
 * GF2_FAIL_REQ_ARM: a file.  While it exists, the next call whose state
 * type (tevent_req_create's second argument as a string, such as
 * "struct gf2_rw_state") equals its first line fails: the file is
 * removed first (once per arming) and GF2_FAIL_REQ_ARM.fired created, so
 * that the test knows the fault happened.  Every other call is passed
 * through.  The file is looked at as smbd is at that moment (the
 * request's user).
 *
 * Test code only: never built into the module.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *(*gf2_req_create_fn)(void *mem_ctx, void *pstate,
				   size_t state_size, const char *type,
				   const char *location);

/* True once: the armed type is this one. */
static int gf2_fail_now(const char *type)
{
	const char *arm = getenv("GF2_FAIL_REQ_ARM");
	char line[256];
	char fired[4096];
	FILE *f = NULL;
	int fd;

	if (arm == NULL || type == NULL || access(arm, F_OK) != 0) {
		return 0;
	}
	f = fopen(arm, "r");
	if (f == NULL) {
		return 0;
	}
	if (fgets(line, sizeof(line), f) == NULL) {
		fclose(f);
		return 0;
	}
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	if (strcmp(line, type) != 0 || unlink(arm) != 0) {
		return 0;
	}
	snprintf(fired, sizeof(fired), "%s.fired", arm);
	fd = open(fired, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd != -1) {
		close(fd);
	}
	return 1;
}

void *_tevent_req_create(void *mem_ctx, void *pstate, size_t state_size,
			 const char *type, const char *location)
{
	static gf2_req_create_fn real = NULL;

	if (real == NULL) {
		real = (gf2_req_create_fn)dlsym(RTLD_NEXT,
						"_tevent_req_create");
		if (real == NULL) {
			abort();
		}
	}
	if (gf2_fail_now(type)) {
		return NULL;
	}
	return real(mem_ctx, pstate, state_size, type, location);
}
