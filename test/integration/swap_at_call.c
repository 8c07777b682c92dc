/*
 * Preloaded into a private smbd by test_symlink_swap.py: another client's
 * change of the file system, made at an exact moment of smbd's work:
 * after smbd opened (and checked) the directory of an entry and before
 * its VFS call that creates, opens, deletes or renames the entry.  smbd
 * reaches the VFS through smb_vfs_call_openat/unlinkat/mkdirat/renameat,
 * exported by its library and called through the PLT, so they can be
 * wrapped here; the module's own calls are untouched.
 *
 * GF2_SWAP_ARM: a file.  When it exists and a wrapped call names an entry
 * (last component) equal to the first word of its first line, its other
 * lines are run, in order, and the file is removed (once per arming).  A
 * second word, a number, limits it to the openat calls whose flags hold
 * all of those bits (O_RDWR: an open for writing, not smbd's lookups
 * before it); "*" then stands for any name (smbd reopens a handle of a
 * local file system through /proc/self/fd/N).  The other lines:
 *     unlink PATH | rmdir PATH | symlink TARGET PATH | sleep MS
 * They run as smbd is at that moment (the request's user).  A line that
 * fails is written to the file GF2_SWAP_ARM.err.
 *
 * Test code only: never built into the module.
 */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The head of smbd's struct smb_filename (source3/include/vfs.h). */
struct gf2_swap_fname {
	char *base_name;
};

static void gf2_swap_note(const char *arm, const char *line)
{
	char err[4096];
	FILE *f = NULL;

	snprintf(err, sizeof(err), "%s.err", arm);
	f = fopen(err, "a");
	if (f != NULL) {
		fprintf(f, "%s: %s\n", line, strerror(errno));
		fclose(f);
	}
}

static void gf2_swap_run(const char *arm, char *line)
{
	char *a = strtok(line, " \n");
	char *b = strtok(NULL, " \n");
	char *c = strtok(NULL, " \n");
	int ret = 0;

	if (a == NULL || b == NULL) {
		return;
	}
	if (strcmp(a, "unlink") == 0) {
		ret = unlink(b);
	} else if (strcmp(a, "rmdir") == 0) {
		ret = rmdir(b);
	} else if (strcmp(a, "symlink") == 0 && c != NULL) {
		ret = symlink(b, c);
	} else if (strcmp(a, "sleep") == 0) {
		struct timespec ts = { .tv_sec = atoi(b) / 1000,
				       .tv_nsec = (atoi(b) % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (ret != 0) {
		gf2_swap_note(arm, a);
	}
}

/* The head of smbd's struct vfs_open_how. */
struct gf2_swap_how {
	int flags;
};

static void gf2_swap_maybe(const struct gf2_swap_fname *name,
			   const struct gf2_swap_how *how)
{
	const char *arm = getenv("GF2_SWAP_ARM");
	const char *base = NULL;
	char line[4096];
	char *bits = NULL;
	FILE *f = NULL;

	if (arm == NULL || name == NULL || name->base_name == NULL) {
		return;
	}
	f = fopen(arm, "r");
	if (f == NULL) {
		return;
	}
	base = strrchr(name->base_name, '/');
	base = (base != NULL) ? base + 1 : name->base_name;
	if (fgets(line, sizeof(line), f) == NULL) {
		fclose(f);
		return;
	}
	line[strcspn(line, "\n")] = '\0';
	bits = strchr(line, ' ');
	if (bits != NULL) {
		*bits++ = '\0';
	}
	if (strcmp(line, "*") != 0 && strcmp(line, base) != 0) {
		fclose(f);
		return;
	}
	if (bits != NULL &&
	    (how == NULL || (how->flags & atoi(bits)) != atoi(bits))) {
		fclose(f);
		return;
	}
	unlink(arm);
	while (fgets(line, sizeof(line), f) != NULL) {
		gf2_swap_run(arm, line);
	}
	fclose(f);
}

#define GF2_SWAP_REAL(fn, type) \
	static type real = NULL; \
	if (real == NULL) { \
		real = (type)dlsym(RTLD_NEXT, fn); \
		if (real == NULL) { \
			abort(); \
		} \
	}

typedef int (*gf2_openat_fn)(void *, const void *,
			     const struct gf2_swap_fname *, void *,
			     const struct gf2_swap_how *);
typedef int (*gf2_unlinkat_fn)(void *, void *,
			       const struct gf2_swap_fname *, int);
typedef int (*gf2_mkdirat_fn)(void *, void *,
			      const struct gf2_swap_fname *, unsigned);
typedef int (*gf2_renameat_fn)(void *, void *,
			       const struct gf2_swap_fname *, void *,
			       const struct gf2_swap_fname *);

int smb_vfs_call_openat(void *handle, const void *dirfsp,
			const struct gf2_swap_fname *smb_fname, void *fsp,
			const struct gf2_swap_how *how)
{
	GF2_SWAP_REAL("smb_vfs_call_openat", gf2_openat_fn);
	gf2_swap_maybe(smb_fname, how);
	return real(handle, dirfsp, smb_fname, fsp, how);
}

int smb_vfs_call_unlinkat(void *handle, void *dirfsp,
			  const struct gf2_swap_fname *smb_fname, int flags)
{
	GF2_SWAP_REAL("smb_vfs_call_unlinkat", gf2_unlinkat_fn);
	gf2_swap_maybe(smb_fname, NULL);
	return real(handle, dirfsp, smb_fname, flags);
}

int smb_vfs_call_mkdirat(void *handle, void *dirfsp,
			 const struct gf2_swap_fname *smb_fname,
			 unsigned mode)
{
	GF2_SWAP_REAL("smb_vfs_call_mkdirat", gf2_mkdirat_fn);
	gf2_swap_maybe(smb_fname, NULL);
	return real(handle, dirfsp, smb_fname, mode);
}

int smb_vfs_call_renameat(void *handle, void *srcfsp,
			  const struct gf2_swap_fname *src, void *dstfsp,
			  const struct gf2_swap_fname *dst)
{
	GF2_SWAP_REAL("smb_vfs_call_renameat", gf2_renameat_fn);
	gf2_swap_maybe(src, NULL);
	return real(handle, srcfsp, src, dstfsp, dst);
}
