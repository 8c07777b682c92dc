/*
 * glusterfs2: directory streams.
 *
 * Layer: glue.
 *
 * Directory listings open a stream with glfs_opendir and close it in
 * closedir, so the bricks release every descriptor they hand out (a
 * directory opened through glfs_open is never released by the posix
 * translator).  Entries are read from gfapi GF2_DIR_BATCH at a time
 * (readdirplus: name and stat) ahead of smbd; the stats go to the
 * metadata cache, and when smbd asks for the xattr list of the entry it
 * just got, the lists of the entries it will get next are fetched in the
 * same parallel batch (gf2_dir_fetch_lists).  Each buffered entry
 * remembers the gfapi offset after it, for telldir.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "smbprofile.h"
#include "lib/util/dlinklist.h"
#include "gf2_vfs.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

#define GF2_DIR_BATCH 128

struct gf2_dirent {
	struct stat st;
	long off_after;
	struct dirent de;	/* d_name holds NAME_MAX + 1 */
};

struct gf2_dir {
	struct gf2_dir *prev, *next;	/* open streams of the process */
	glfs_fd_t *fd;
	glfs_t *fs;
	char *path;			/* absolute path of the directory */
	struct gf2_dirent *ents[GF2_DIR_BATCH];
	size_t n;			/* buffered */
	size_t pos;			/* next to return */
	long off_start;			/* gfapi offset before ents[0] */
	bool eof;
};

static struct gf2_dir *gf2_dirs;

static int gf2_dir_destructor(struct gf2_dir *d)
{
	DLIST_REMOVE(gf2_dirs, d);
	if (d->fd != NULL) {
		glfs_closedir(d->fd);
		d->fd = NULL;
	}
	return 0;
}

DIR *gf2_fdopendir(struct vfs_handle_struct *handle, files_struct *fsp,
		   const char *mask, uint32_t attributes)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_dir *d = NULL;

	d = talloc_zero(NULL, struct gf2_dir);
	if (d == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	d->path = gf2_fsp_path(d, c, fsp);
	if (d->path == NULL) {
		TALLOC_FREE(d);
		errno = ENOMEM;
		return NULL;
	}
	d->fs = c->fs;
	GF2_START_PROFILE(handle, syscall_fdopendir);
	d->fd = glfs_opendir(c->fs, d->path);
	GF2_END_PROFILE(syscall_fdopendir);
	if (d->fd == NULL) {
		int saved_errno = errno;

		TALLOC_FREE(d);
		errno = saved_errno;
		return NULL;
	}
	DLIST_ADD(gf2_dirs, d);
	talloc_set_destructor(d, gf2_dir_destructor);
	return (DIR *)d;
}

/* Refill the buffer; returns 0, or an errno if nothing could be read. */
static int gf2_dir_fill(struct gf2_dir *d)
{
	uint64_t now = gf2_now_ns();

	d->n = 0;
	d->pos = 0;
	d->off_start = glfs_telldir(d->fd);
	while (d->n < GF2_DIR_BATCH) {
		struct gf2_dirent *e = d->ents[d->n];
		struct dirent *result = NULL;
		int ret;

		if (e == NULL) {
			e = talloc_zero_size(d, sizeof(struct gf2_dirent) +
					     NAME_MAX + 1);
			if (e == NULL) {
				return d->n > 0 ? 0 : ENOMEM;
			}
			d->ents[d->n] = e;
		}
		ret = glfs_readdirplus_r(d->fd, &e->st, &e->de, &result);
		if (ret != 0) {
			/* report it when nothing is buffered */
			return d->n > 0 ? 0 : (ret > 0 ? ret : errno);
		}
		if (result == NULL) {
			d->eof = true;
			break;
		}
		e->off_after = glfs_telldir(d->fd);
		d->n += 1;
		gf2_meta_keep_listed(d->fs, d->path, e->de.d_name, &e->st,
				     now);
	}
	return 0;
}

struct dirent *gf2_readdir(struct vfs_handle_struct *handle,
			   struct files_struct *dirfsp, DIR *dirp
			   GF2_READDIR_STAT_PARAM)
{
	SMB_STRUCT_STAT *sbuf = GF2_READDIR_STAT;
	struct gf2_dir *d = (struct gf2_dir *)dirp;
	struct gf2_dirent *e = NULL;

	GF2_START_PROFILE(handle, syscall_readdir);
	if (d->pos == d->n) {
		int err = d->eof ? 0 : gf2_dir_fill(d);

		if (err != 0) {
			GF2_END_PROFILE(syscall_readdir);
			errno = err;
			return NULL;
		}
	}
	GF2_END_PROFILE(syscall_readdir);
	if (d->pos == d->n) {
		return NULL;	/* end of the directory */
	}
	e = d->ents[d->pos++];
	if (sbuf != NULL) {
		SET_STAT_INVALID(*sbuf);
		if (!S_ISLNK(e->st.st_mode)) {
			gf2_stat_ex(handle, sbuf, &e->st);
		}
	}
	return &e->de;
}

long gf2_telldir(struct vfs_handle_struct *handle, DIR *dirp)
{
	struct gf2_dir *d = (struct gf2_dir *)dirp;

	if (d->pos > 0) {
		return d->ents[d->pos - 1]->off_after;
	}
	if (d->n > 0) {
		return d->off_start;
	}
	return glfs_telldir(d->fd);
}

void gf2_seekdir(struct vfs_handle_struct *handle, DIR *dirp, long offset)
{
	struct gf2_dir *d = (struct gf2_dir *)dirp;

	d->n = d->pos = 0;
	d->eof = false;
	glfs_seekdir(d->fd, offset);
}

void gf2_rewind_dir(struct vfs_handle_struct *handle, DIR *dirp)
{
	struct gf2_dir *d = (struct gf2_dir *)dirp;

	d->n = d->pos = 0;
	d->eof = false;
	glfs_seekdir(d->fd, 0);
}

/*
 * smbd asks for the xattr list of path: if path is the entry a directory
 * stream of this process just returned, fetch the lists of it and of the
 * entries buffered after it in one parallel batch.
 */
void gf2_dir_fetch_lists(glfs_t *fs, const char *path, bool nofollow)
{
	const char *slash = strrchr(path, '/');
	struct gf2_dir *d = NULL;
	size_t dirlen;

	if (slash == NULL) {
		return;
	}
	dirlen = slash == path ? 1 : (size_t)(slash - path);
	for (d = gf2_dirs; d != NULL; d = d->next) {
		const char *parent = d->path;
		size_t plen = strlen(parent);
		TALLOC_CTX *frame = NULL;
		const char **paths = NULL;
		bool *values = NULL;
		size_t i;
		size_t np = 0;

		/* "/" is the root's path; its entries are "/name" */
		if (d->fs != fs || d->pos == 0 ||
		    !((plen == dirlen && strncmp(parent, path, plen) == 0) ||
		      (plen == 1 && dirlen == 1))) {
			continue;
		}
		if (strcmp(d->ents[d->pos - 1]->de.d_name, slash + 1) != 0) {
			continue;
		}
		frame = talloc_stackframe();
		paths = talloc_array(frame, const char *, d->n - d->pos + 1);
		values = talloc_array(frame, bool, d->n - d->pos + 1);
		if (paths == NULL || values == NULL) {
			TALLOC_FREE(frame);
			return;
		}
		for (i = d->pos - 1; i < d->n; i++) {
			const char *name = d->ents[i]->de.d_name;

			if (ISDOT(name) || ISDOTDOT(name)) {
				continue;
			}
			paths[np] = talloc_asprintf(paths, "%s/%s",
						    plen == 1 ? "" : parent,
						    name);
			if (paths[np] == NULL) {
				break;
			}
			/* values, and a list that serves both ways, only
			 * for what is known not to be a symlink */
			values[np] = S_ISREG(d->ents[i]->st.st_mode) ||
				     S_ISDIR(d->ents[i]->st.st_mode);
			np += 1;
		}
		gf2_meta_fetch_lists(fs, paths, values, np, nofollow);
		TALLOC_FREE(frame);
		return;
	}
}

int gf2_closedir(struct vfs_handle_struct *handle, DIR *dirp)
{
	struct gf2_dir *d = (struct gf2_dir *)dirp;
	int ret = 0;

	GF2_START_PROFILE(handle, syscall_closedir);
	if (d->fd != NULL) {
		ret = glfs_closedir(d->fd);
		d->fd = NULL;
	}
	TALLOC_FREE(d);
	GF2_END_PROFILE(syscall_closedir);
	return ret;
}
