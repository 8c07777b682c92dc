/*
 * glusterfs2: a Samba VFS module serving GlusterFS volumes through
 * libgfapi.
 *
 * This file is the VFS glue: registration, the function table, connect
 * and disconnect, option handling and the metadata operations.  The
 * asynchronous data path lives in gf2_async.c, the per-process volume
 * cache in gf2_volume.c and the option parsers in gf2_options.c.
 *
 * Paths.  Every Gluster call is made with an absolute path inside the
 * volume (or with a glfs_fd): relative names from smbd are resolved
 * against the working directory this module tracks for the tree connect
 * (chdir_fn), never against the glfs instance's own cwd, which all tree
 * connects of the process share.
 *
 * Handles.  Path-only handles (smbd's O_PATH "pathref" fsps) and
 * directories open nothing on Gluster: a lookup checks that the object
 * exists and has the right type, and operations on them go by path.
 * Only regular files opened for I/O get a glfs_fd.  Directory listings
 * open a directory stream with glfs_opendir and close it in closedir, so
 * the bricks release every descriptor they hand out (a directory opened
 * through glfs_open is never released by the posix translator).
 */

#include "includes.h"
#include <malloc.h>
#include "smbd/smbd.h"
#include "smbprofile.h"
#include "lib/global_contexts.h"
#include "lib/util/tevent_unix.h"
#include "gf2_private.h"
#include "gf2_acl.h"
#include "gf2_offload.h"
#include "gf2_mdcache.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

#define GF2_MODULE_NAME "glusterfs2"

/*
 * The name smbd loads and registers the module under (vfs objects = NAME,
 * MODULESDIR/vfs/NAME.so).  A sanitizer build installed beside the normal
 * one gets another name from wscript (--module-name); its options keep
 * the glusterfs2: prefix, so a share's settings are the same for both.
 */
#ifndef GF2_REGISTER_NAME
#define GF2_REGISTER_NAME GF2_MODULE_NAME
#endif

/* Returned to smbd as the "fd" of every handle: never a real descriptor. */
#define GF2_FAKE_FD 0x2f2f2f2f

/* One fixed block size, so that stat results are stable between calls. */
#define GF2_BLKSIZE 4096

/*
 * A directory stream.  Entries are read from gfapi GF2_DIR_BATCH at a time
 * (readdirplus: name and stat) ahead of smbd, so that when smbd asks for
 * the xattr list of the entry it just got, the lists of the entries it
 * will get next can be fetched in the same parallel batch (gf2_xlist.c).
 * Each buffered entry remembers the gfapi offset after it, for telldir.
 */
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

static struct gf2_conn *gf2_conn_of(struct vfs_handle_struct *handle)
{
	struct gf2_conn *c = NULL;

	SMB_VFS_HANDLE_GET_DATA(handle, c, struct gf2_conn,
				smb_panic("glusterfs2: no connection data"));
	return c;
}

/*
 * Join name to base and drop "." components and duplicate slashes.
 * ".." is left for Gluster to resolve.
 */
static char *gf2_join(TALLOC_CTX *mem_ctx, const char *base, const char *name)
{
	char *out = NULL;
	const char *p = NULL;
	size_t len;

	if (name != NULL && name[0] == '/') {
		out = talloc_strdup(mem_ctx, "/");
	} else {
		out = talloc_strdup(mem_ctx, base != NULL ? base : "/");
	}
	if (out == NULL || name == NULL) {
		return out;
	}

	p = name;
	while (*p != '\0') {
		const char *slash = strchr(p, '/');
		size_t clen = slash != NULL ? (size_t)(slash - p) : strlen(p);

		if (clen == 0 || (clen == 1 && p[0] == '.')) {
			/* skip */
		} else {
			len = talloc_get_size(out) - 1;
			if (len > 0 && out[len - 1] != '/') {
				out = talloc_strdup_append_buffer(out, "/");
			}
			if (out == NULL) {
				return NULL;
			}
			out = talloc_strndup_append_buffer(out, p, clen);
			if (out == NULL) {
				return NULL;
			}
		}
		if (slash == NULL) {
			break;
		}
		p = slash + 1;
	}
	return out;
}

/* A name relative to the tracked working directory, made absolute. */
static char *gf2_path(TALLOC_CTX *mem_ctx, struct gf2_conn *c,
		      const char *name)
{
	char *path = gf2_join(mem_ctx, c->cwd, name);

	if (path == NULL) {
		errno = ENOMEM;
	}
	return path;
}

static char *gf2_at_path(TALLOC_CTX *mem_ctx, struct gf2_conn *c,
			 const struct files_struct *dirfsp,
			 const struct smb_filename *smb_fname)
{
	struct smb_filename *full = NULL;
	char *path = NULL;

	if (dirfsp == NULL || fsp_get_pathref_fd(dirfsp) == AT_FDCWD) {
		return gf2_path(mem_ctx, c, smb_fname->base_name);
	}
	full = full_path_from_dirfsp_atname(talloc_tos(), dirfsp, smb_fname);
	if (full == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	path = gf2_path(mem_ctx, c, full->base_name);
	TALLOC_FREE(full);
	return path;
}

static char *gf2_fsp_path(TALLOC_CTX *mem_ctx, struct gf2_conn *c,
			  const struct files_struct *fsp)
{
	return gf2_path(mem_ctx, c, fsp->fsp_name->base_name);
}

/*
 * Metadata kept after listings (gf2_mdcache.c, filled in gf2_dir_fill and
 * gf2_xlist.c).  Coherence: every change made through this process drops
 * what is kept of the changed path and of its parent directory (renames
 * and removals: of everything below it too) before the change is sent;
 * a Gluster upcall drops the changed inode; anything else is served for
 * at most 1 s after it was fetched (md-cache's own default timeout).
 */
static void gf2_meta_changed(struct gf2_conn *c, const char *path)
{
	if (path != NULL) {
		gf2_md_changed(gf2_meta_cache(), c->fs, path);
	}
}

static void gf2_meta_changed_tree(struct gf2_conn *c, const char *path)
{
	if (path != NULL) {
		gf2_md_changed_tree(gf2_meta_cache(), c->fs, path);
	}
}

static void gf2_meta_changed_fsp(struct gf2_conn *c,
				 const struct files_struct *fsp)
{
	struct gf2_md_cache *md = gf2_meta_cache();
	char *path = NULL;

	if (md == NULL || gf2_md_count(md) == 0) {
		return;
	}
	path = gf2_fsp_path(talloc_tos(), c, fsp);
	gf2_meta_changed(c, path);
	TALLOC_FREE(path);
}

/*
 * The xattrs whose values are kept (smbd reads them at every open, create
 * and listing): besides what a listing fetches, the value a getxattr of
 * this process got, and the value a setxattr or removexattr of this
 * process made, are kept under the same rules as above.
 */
static bool gf2_meta_kept_name(const char *name)
{
	return strcmp(name, "user.DOSATTRIB") == 0 ||
	       strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0 ||
	       strcmp(name, "security.NTACL") == 0;
}

/*
 * Keep what a getxattr of name on path (fsp's) answered (ret, with errno
 * err): a value or "no such attribute".  at: when it was asked.
 */
static void gf2_meta_keep_xattr(struct gf2_conn *c,
				const struct files_struct *fsp,
				const char *path, const char *name,
				const void *value, size_t size, ssize_t ret,
				int err, uint64_t at)
{
	struct gf2_md_cache *md = gf2_meta_cache();

	/* paths are kept as followed: never a symlink's own xattrs */
	if (md == NULL || path == NULL || !gf2_meta_kept_name(name) ||
	    S_ISLNK(fsp->fsp_name->st.st_ex_mode)) {
		return;
	}
	if (ret >= 0 && size > 0) {
		gf2_md_put_xattr(md, c->fs, path, name, value, ret, at);
	} else if (ret == -1 && (err == ENODATA || err == ENOATTR)) {
		gf2_md_put_xattr(md, c->fs, path, name, NULL, -1, at);
	}
}

/*
 * path was just created by this process (O_CREAT|O_EXCL, mkdir): it has
 * no DOS attributes and no NT ACL yet, and no POSIX ACL either when its
 * directory is known to have no default ACL (the only source of one).
 */
static void gf2_meta_created(struct gf2_conn *c, const char *path,
			     bool is_dir, uint64_t at)
{
	struct gf2_md_cache *md = gf2_meta_cache();
	const char *slash = strrchr(path, '/');
	char *parent = NULL;
	ssize_t ret = 0;
	int err = 0;

	if (md == NULL || slash == NULL) {
		return;
	}
	gf2_md_put_xattr(md, c->fs, path, "user.DOSATTRIB", NULL, -1, at);
	gf2_md_put_xattr(md, c->fs, path, "security.NTACL", NULL, -1, at);
	parent = talloc_strndup(talloc_tos(), path,
				slash == path ? 1 : (size_t)(slash - path));
	if (parent == NULL) {
		return;
	}
	if (gf2_md_get_xattr(md, c->fs, parent, "system.posix_acl_default",
			     gf2_now_ns(), NULL, 0, &ret, &err) &&
	    ret == -1 && err == ENODATA) {
		gf2_md_put_xattr(md, c->fs, path, "system.posix_acl_access",
				 NULL, -1, at);
		if (is_dir) {
			gf2_md_put_xattr(md, c->fs, path,
					 "system.posix_acl_default", NULL, -1,
					 at);
		}
	}
	TALLOC_FREE(parent);
}

static struct gf2_fh *gf2_fh_of(struct vfs_handle_struct *handle,
				const struct files_struct *fsp)
{
	struct gf2_fh **pfh = NULL;

	pfh = (struct gf2_fh **)VFS_FETCH_FSP_EXTENSION(handle, fsp);
	if (pfh == NULL) {
		return NULL;
	}
	return *pfh;
}

/*
 * fsp's data or times changed: its kept stat goes, its xattrs stay.  On
 * the write path: once a handle's write has dropped the stat, later
 * writes name no path until a listing keeps a stat again.
 */
static void gf2_meta_changed_stat_fsp(struct vfs_handle_struct *handle,
				      const struct files_struct *fsp)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	struct gf2_md_cache *md = gf2_meta_cache();
	uint64_t puts;
	char *path = NULL;

	if (md == NULL || gf2_md_count(md) == 0) {
		return;
	}
	puts = gf2_md_stat_puts(md);
	if (fh != NULL && fh->md_stat_puts == puts) {
		return;
	}
	path = gf2_fsp_path(talloc_tos(), c, fsp);
	if (path == NULL) {
		return;
	}
	gf2_md_changed_stat(md, c->fs, path);
	TALLOC_FREE(path);
	if (fh != NULL) {
		fh->md_stat_puts = puts;
	}
}

/* The glfs_fd of an fsp opened for I/O, or NULL with errno set. */
static glfs_fd_t *gf2_io_fd(struct vfs_handle_struct *handle,
			    const struct files_struct *fsp)
{
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);

	if (fh == NULL) {
		errno = EBADF;
		return NULL;
	}
	if (fh->fd == NULL) {
		errno = fh->is_dir ? EISDIR : EBADF;
		return NULL;
	}
	return fh->fd;
}

static void gf2_stat_ex(struct vfs_handle_struct *handle,
			struct stat_ex *dst, const struct stat *src)
{
	init_stat_ex_from_stat(dst, src,
			       lp_fake_directory_create_times(
				       SNUM(handle->conn)));
	dst->st_ex_blksize = GF2_BLKSIZE;
}

/* The handle holds a read-caching oplock or lease. */
static bool gf2_read_caching(const struct files_struct *fsp)
{
	switch (fsp->oplock_type) {
	case EXCLUSIVE_OPLOCK:
	case BATCH_OPLOCK:
	case LEVEL_II_OPLOCK:
		return true;
	case LEASE_OPLOCK:
		return fsp->lease != NULL &&
		       (fsp->lease->lease.lease_state & SMB2_LEASE_READ);
	default:
		return false;
	}
}

/*
 * The prefetch state of the file behind fsp, shared by all its handles in
 * this process; NULL when prefetch is off for the share.
 */
static struct gf2_pf_file *gf2_fh_pf(struct gf2_conn *c,
				     const struct files_struct *fsp,
				     struct gf2_fh *fh)
{
	if (fh == NULL || fh->fd == NULL || !c->pf->enabled) {
		return NULL;
	}
	if (fh->pf == NULL) {
		fh->pf = gf2_pf_file_get(&fsp->file_id);
	}
	return fh->pf;
}

/*
 * Options.  Each is read and validated once per tree connect; a bad value
 * is logged with the share and option name, and either replaced by the
 * documented default or, where no safe default exists, the tree connect
 * is refused.
 */
static int gf2_option_loglevel(int snum, const char *service)
{
	const char *s = lp_parm_const_string(snum, GF2_MODULE_NAME,
					     "loglevel", NULL);
	char err[GF2_ERRLEN];
	int64_t v;

	if (s == NULL) {
		return GF2_DEFAULT_LOGLEVEL;
	}
	if (gf2_parse_int(s, 0, 9, &v, err, sizeof(err)) != 0) {
		DBG_ERR("share [%s]: glusterfs2:loglevel: %s; using %d\n",
			service, err, GF2_DEFAULT_LOGLEVEL);
		return GF2_DEFAULT_LOGLEVEL;
	}
	return (int)v;
}

/*
 * Prefetch options, spelled as smb.conf spells its own ("glusterfs2:
 * prefetch max memory = 64M").  Every bad value is logged with the share,
 * the option and the reason, and the default is used.
 */
#define GF2_PF_DEFAULT_INIT (256 * 1024ULL)
#define GF2_PF_DEFAULT_MAX (8 * 1024 * 1024ULL)
#define GF2_PF_DEFAULT_MEMORY (64 * 1024 * 1024ULL)
#define GF2_PF_DEFAULT_AGE_MS 250
#define GF2_LOCK_CACHE_DEFAULT_MS 250
#define GF2_PF_DEFAULT_STREAMS 4

static uint64_t gf2_opt_size(int snum, const char *service, const char *name,
			     uint64_t def, uint64_t min, uint64_t max)
{
	const char *s = lp_parm_const_string(snum, GF2_MODULE_NAME, name,
					     NULL);
	char err[GF2_ERRLEN];
	uint64_t v;

	if (s == NULL) {
		return def;
	}
	if (gf2_parse_size(s, min, max, &v, err, sizeof(err)) != 0) {
		DBG_ERR("share [%s]: glusterfs2:%s = '%s': %s; using %" PRIu64
			"\n", service, name, s, err, def);
		return def;
	}
	return v;
}

static int64_t gf2_opt_int(int snum, const char *service, const char *name,
			   int64_t def, int64_t min, int64_t max)
{
	const char *s = lp_parm_const_string(snum, GF2_MODULE_NAME, name,
					     NULL);
	char err[GF2_ERRLEN];
	int64_t v;

	if (s == NULL) {
		return def;
	}
	if (gf2_parse_int(s, min, max, &v, err, sizeof(err)) != 0) {
		DBG_ERR("share [%s]: glusterfs2:%s = '%s': %s; using %" PRId64
			"\n", service, name, s, err, def);
		return def;
	}
	return v;
}

static bool gf2_opt_bool(int snum, const char *service, const char *name,
			 bool def)
{
	const char *s = lp_parm_const_string(snum, GF2_MODULE_NAME, name,
					     NULL);
	char err[GF2_ERRLEN];
	bool v;

	if (s == NULL) {
		return def;
	}
	if (gf2_parse_bool(s, &v, err, sizeof(err)) != 0) {
		DBG_ERR("share [%s]: glusterfs2:%s = '%s': %s; using %s\n",
			service, name, s, err, def ? "yes" : "no");
		return def;
	}
	return v;
}

static void gf2_load_prefetch_config(int snum, const char *service,
				     struct gf2_pf_config *pf)
{
	const char *mode = NULL;

	pf->enabled = gf2_opt_bool(snum, service, "prefetch", true);
	pf->ra.init_window = gf2_opt_size(snum, service,
					  "prefetch initial window",
					  GF2_PF_DEFAULT_INIT, 4096,
					  256ULL << 20);
	pf->ra.max_window = gf2_opt_size(snum, service,
					 "prefetch max window",
					 GF2_PF_DEFAULT_MAX, 64 * 1024,
					 256ULL << 20);
	if (pf->ra.init_window > pf->ra.max_window) {
		DBG_ERR("share [%s]: glusterfs2:prefetch initial window is "
			"larger than glusterfs2:prefetch max window; using "
			"the max window for both\n", service);
		pf->ra.init_window = pf->ra.max_window;
	}
	pf->ra.min_window = MIN(64 * 1024, pf->ra.init_window);
	pf->ra.streams = gf2_opt_int(snum, service, "prefetch streams",
				     GF2_PF_DEFAULT_STREAMS, 1,
				     GF2_RA_MAX_STREAMS);
	pf->max_memory = gf2_opt_size(snum, service, "prefetch max memory",
				      GF2_PF_DEFAULT_MEMORY, 1ULL << 20,
				      16ULL << 30);
	pf->max_age_ms = gf2_opt_int(snum, service, "prefetch max age",
				     GF2_PF_DEFAULT_AGE_MS, 1, 3600 * 1000);

	mode = lp_parm_const_string(snum, GF2_MODULE_NAME,
				    "prefetch coherence", NULL);
	if (mode == NULL || strequal(mode, "age")) {
		pf->strict = false;
	} else if (strequal(mode, "strict")) {
		pf->strict = true;
	} else {
		DBG_ERR("share [%s]: glusterfs2:prefetch coherence = '%s': "
			"unknown mode (age or strict); using age\n",
			service, mode);
		pf->strict = false;
	}
	/*
	 * Read ahead no further than a stream consumes in half the age
	 * bound, so that prefetched data is served before it expires.
	 */
	pf->ra.max_lead_ms = MAX(pf->max_age_ms / 2, 1);
	gf2_ra_config_sanitize(&pf->ra);
	if (pf->enabled) {
		gf2_pf_set_cap(pf->max_memory);
	}
}

/*
 * Large I/O buffers (1 MiB reads, 1 MiB prefetch chunks, gfapi's iobufs
 * for them) are above glibc's dynamic mmap threshold, so every one of them
 * was a fresh mmap: 256 page faults and zeroing per MiB, then munmap, in
 * smbd's thread and in gfapi's.  Keep buffers up to 16 MiB in the heap
 * for reuse, and trim the heap only when 32 MiB are free at its top.
 * Once per smbd process (each serves one client).  Measured: 1 MiB reads
 * without prefetch used 2-3x the smbd CPU per GiB before this.
 */
static void gf2_tune_malloc(void)
{
	static bool done;

	if (done) {
		return;
	}
	done = true;
	if (mallopt(M_MMAP_THRESHOLD, 16 * 1024 * 1024) != 1 ||
	    mallopt(M_TRIM_THRESHOLD, 32 * 1024 * 1024) != 1) {
		DBG_NOTICE("mallopt failed: large buffers stay mmapped\n");
	}
}

static int gf2_connect(struct vfs_handle_struct *handle,
		       const char *service, const char *user)
{
	const struct loadparm_substitution *lp_sub =
		loadparm_s3_global_substitution();
	int snum = SNUM(handle->conn);
	struct gf2_volfile_server servers[GF2_MAX_VOLFILE_SERVERS];
	struct gf2_volume_params params = { 0 };
	struct gf2_conn *c = NULL;
	TALLOC_CTX *frame = talloc_stackframe();
	const char *volname = NULL;
	char *spec = NULL;
	char *logfile = NULL;
	char err[GF2_ERRLEN];
	size_t num_servers = 0;
	int ret;

	ret = SMB_VFS_NEXT_CONNECT(handle, service, user);
	if (ret < 0) {
		TALLOC_FREE(frame);
		return ret;
	}

	volname = lp_parm_const_string(snum, GF2_MODULE_NAME, "volume",
				       service);
	if (!gf2_valid_volume_name(volname, err, sizeof(err))) {
		DBG_ERR("share [%s]: glusterfs2:volume: %s; refusing the "
			"tree connect\n", service, err);
		TALLOC_FREE(frame);
		errno = EINVAL;
		return -1;
	}

	spec = lp_parm_substituted_string(frame, lp_sub, snum,
					  GF2_MODULE_NAME, "volfile_server",
					  GF2_DEFAULT_VOLFILE_SERVER);
	if (spec == NULL) {
		TALLOC_FREE(frame);
		errno = ENOMEM;
		return -1;
	}
	ret = gf2_parse_volfile_servers(spec, servers,
					ARRAY_SIZE(servers), &num_servers,
					err, sizeof(err));
	if (ret != 0) {
		DBG_ERR("share [%s]: glusterfs2:volfile_server '%s': %s; "
			"refusing the tree connect\n", service, spec, err);
		TALLOC_FREE(frame);
		errno = EINVAL;
		return -1;
	}

	logfile = lp_parm_substituted_string(frame, lp_sub, snum,
					     GF2_MODULE_NAME, "logfile", NULL);
	if (logfile != NULL && logfile[0] == '\0') {
		logfile = NULL;
	}

	gf2_tune_malloc();
	params.volname = volname;
	params.servers = servers;
	params.num_servers = num_servers;
	params.logfile = logfile;
	params.loglevel = gf2_option_loglevel(snum, service);
	params.connectpath = handle->conn->connectpath;
	params.client_io_threads_off = !gf2_opt_bool(snum, service,
						    "client io-threads",
						    false);

	c = talloc_zero(handle->conn, struct gf2_conn);
	if (c == NULL) {
		TALLOC_FREE(frame);
		errno = ENOMEM;
		return -1;
	}
	c->cwd = talloc_strdup(c, "/");
	c->pf = talloc_zero(c, struct gf2_pf_config);
	if (c->cwd == NULL || c->pf == NULL) {
		TALLOC_FREE(c);
		TALLOC_FREE(frame);
		errno = ENOMEM;
		return -1;
	}

	c->vol = gf2_volume_get(&params);
	if (c->vol == NULL) {
		int saved_errno = errno;

		/* gf2_volume_get logged volume and servers */
		TALLOC_FREE(c);
		TALLOC_FREE(frame);
		errno = saved_errno != 0 ? saved_errno : EIO;
		return -1;
	}
	c->fs = c->vol->fs;
	gf2_load_prefetch_config(snum, service, c->pf);
	c->lock_cache_ms = gf2_opt_int(snum, service, "posix lock cache",
				       GF2_LOCK_CACHE_DEFAULT_MS, 0, 60000);

	SMB_VFS_HANDLE_SET_DATA(handle, c, NULL, struct gf2_conn,
				{
					gf2_volume_put(c->vol);
					TALLOC_FREE(c);
					TALLOC_FREE(frame);
					errno = ENOMEM;
					return -1;
				});

	/*
	 * Gluster is not mounted locally: tell shadow_copy2 where the
	 * snapshots' mount point is, and keep dosmode queries synchronous
	 * (getxattrat_send is not implemented here).
	 */
	lp_do_parameter(snum, "shadow:mountpoint", "/");
	lp_do_parameter(snum, "smbd async dosmode", "false");

	c->st = gf2_stats_get(service);
	gf2_stats_connect(global_event_context());

	DBG_NOTICE("share [%s] on volume %s (servers %s)\n", service,
		   volname, c->vol->servers);
	TALLOC_FREE(frame);
	return 0;
}

static void gf2_disconnect(struct vfs_handle_struct *handle)
{
	struct gf2_conn *c = gf2_conn_of(handle);

	gf2_volume_put(c->vol);
	c->vol = NULL;
	c->fs = NULL;
	gf2_stats_disconnect();
	SMB_VFS_NEXT_DISCONNECT(handle);
}

static int gf2_statvfs(struct vfs_handle_struct *handle,
		       const struct smb_filename *smb_fname,
		       struct vfs_statvfs_struct *out)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct statvfs st = { 0 };
	char *path = gf2_path(talloc_tos(), c, smb_fname->base_name);
	int ret;

	if (path == NULL) {
		return -1;
	}
	ret = glfs_statvfs(c->fs, path, &st);
	TALLOC_FREE(path);
	if (ret < 0) {
		return -1;
	}
	ZERO_STRUCTP(out);
	out->OptimalTransferSize = st.f_frsize;
	out->BlockSize = st.f_bsize;
	out->TotalBlocks = st.f_blocks;
	out->BlocksAvail = st.f_bfree;
	out->UserBlocksAvail = st.f_bavail;
	out->TotalFileNodes = st.f_files;
	out->FreeFileNodes = st.f_ffree;
	out->FsIdentifier = st.f_fsid;
	out->FsCapabilities = FILE_CASE_SENSITIVE_SEARCH |
			      FILE_CASE_PRESERVED_NAMES;
	return 0;
}

static uint64_t gf2_disk_free(struct vfs_handle_struct *handle,
			      const struct smb_filename *smb_fname,
			      uint64_t *bsize, uint64_t *dfree,
			      uint64_t *dsize)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct statvfs st = { 0 };
	char *path = gf2_path(talloc_tos(), c, smb_fname->base_name);
	int ret;

	if (path == NULL) {
		return (uint64_t)-1;
	}
	ret = glfs_statvfs(c->fs, path, &st);
	TALLOC_FREE(path);
	if (ret < 0) {
		return (uint64_t)-1;
	}
	*bsize = st.f_bsize;
	*dfree = st.f_bavail;
	*dsize = st.f_blocks;
	return *dfree;
}

static int gf2_get_quota(struct vfs_handle_struct *handle,
			 const struct smb_filename *smb_fname,
			 enum SMB_QUOTA_TYPE qtype, unid_t id,
			 SMB_DISK_QUOTA *qt)
{
	errno = ENOSYS;
	return -1;
}

static int gf2_set_quota(struct vfs_handle_struct *handle,
			 enum SMB_QUOTA_TYPE qtype, unid_t id,
			 SMB_DISK_QUOTA *qt)
{
	errno = ENOSYS;
	return -1;
}

static uint32_t gf2_fs_capabilities(struct vfs_handle_struct *handle,
				    enum timestamp_set_resolution *p_ts_res)
{
	*p_ts_res = TIMESTAMP_SET_NT_OR_BETTER;
	return FILE_CASE_SENSITIVE_SEARCH | FILE_CASE_PRESERVED_NAMES |
	       FILE_SUPPORTS_SPARSE_FILES;
}

/* Directories */

static int gf2_dir_destructor(struct gf2_dir *d)
{
	DLIST_REMOVE(gf2_dirs, d);
	if (d->fd != NULL) {
		glfs_closedir(d->fd);
		d->fd = NULL;
	}
	return 0;
}

static DIR *gf2_fdopendir(struct vfs_handle_struct *handle,
			  files_struct *fsp, const char *mask,
			  uint32_t attributes)
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
	START_PROFILE(syscall_fdopendir);
	d->fd = glfs_opendir(c->fs, d->path);
	END_PROFILE(syscall_fdopendir);
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

/* Keep the stat readdirplus gave for the entry (not "." or ".."). */
static void gf2_dir_keep_stat(struct gf2_dir *d, const struct gf2_dirent *e,
			      uint64_t now)
{
	struct gf2_md_cache *md = gf2_meta_cache();
	char path[PATH_MAX];
	int n;

	if (md == NULL || ISDOT(e->de.d_name) || ISDOTDOT(e->de.d_name) ||
	    e->st.st_ino == 0 || e->st.st_mode == 0) {
		return;
	}
	n = snprintf(path, sizeof(path), "%s/%s",
		     strcmp(d->path, "/") == 0 ? "" : d->path, e->de.d_name);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		return;
	}
	gf2_md_put_stat(md, d->fs, path, &e->st, now);
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
		gf2_dir_keep_stat(d, e, now);
	}
	return 0;
}

static struct dirent *gf2_readdir(struct vfs_handle_struct *handle,
				  struct files_struct *dirfsp,
				  DIR *dirp, SMB_STRUCT_STAT *sbuf)
{
	struct gf2_dir *d = (struct gf2_dir *)dirp;
	struct gf2_dirent *e = NULL;

	START_PROFILE(syscall_readdir);
	if (d->pos == d->n) {
		int err = d->eof ? 0 : gf2_dir_fill(d);

		if (err != 0) {
			END_PROFILE(syscall_readdir);
			errno = err;
			return NULL;
		}
	}
	END_PROFILE(syscall_readdir);
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

static long gf2_telldir(struct vfs_handle_struct *handle, DIR *dirp)
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

static void gf2_seekdir(struct vfs_handle_struct *handle, DIR *dirp,
			long offset)
{
	struct gf2_dir *d = (struct gf2_dir *)dirp;

	d->n = d->pos = 0;
	d->eof = false;
	glfs_seekdir(d->fd, offset);
}

static void gf2_rewind_dir(struct vfs_handle_struct *handle, DIR *dirp)
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
static void gf2_dir_xlist_batch(glfs_t *fs, const char *path, bool nofollow)
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
		gf2_xlist_fetch(fs, paths, values, np, nofollow);
		TALLOC_FREE(frame);
		return;
	}
}

static int gf2_closedir(struct vfs_handle_struct *handle, DIR *dirp)
{
	struct gf2_dir *d = (struct gf2_dir *)dirp;
	int ret = 0;

	START_PROFILE(syscall_closedir);
	if (d->fd != NULL) {
		ret = glfs_closedir(d->fd);
		d->fd = NULL;
	}
	TALLOC_FREE(d);
	END_PROFILE(syscall_closedir);
	return ret;
}

static int gf2_mkdirat(struct vfs_handle_struct *handle,
		       struct files_struct *dirfsp,
		       const struct smb_filename *smb_fname,
		       mode_t mode)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	uint64_t at;
	int ret;

	if (path == NULL) {
		return -1;
	}
	gf2_meta_changed(c, path);
	at = gf2_now_ns();
	START_PROFILE(syscall_mkdirat);
	ret = glfs_mkdir(c->fs, path, mode);
	END_PROFILE(syscall_mkdirat);
	if (ret == 0) {
		gf2_meta_created(c, path, true, at);
	}
	TALLOC_FREE(path);
	return ret;
}

/* Files */

static void gf2_fh_ext_destroy(void *p_data)
{
	struct gf2_fh **pfh = (struct gf2_fh **)p_data;

	if (*pfh != NULL) {
		gf2_fh_close(*pfh);
		*pfh = NULL;
	}
}

static int gf2_lookup(struct gf2_conn *c, const char *path, bool nofollow,
		      struct stat *st)
{
	struct gf2_md_cache *md = gf2_meta_cache();

	/* kept stats are never symlinks: lstat and stat agree */
	gf2_upcall_drain();
	if (md != NULL &&
	    gf2_md_get_stat(md, c->fs, path, gf2_now_ns(), st)) {
		return 0;
	}
	if (nofollow) {
		return glfs_lstat(c->fs, path, st);
	}
	return glfs_stat(c->fs, path, st);
}

static int gf2_openat(struct vfs_handle_struct *handle,
		      const struct files_struct *dirfsp,
		      const struct smb_filename *smb_fname,
		      files_struct *fsp,
		      const struct vfs_open_how *how)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh **pfh = NULL;
	struct gf2_fh *fh = NULL;
	int flags = how->flags;
	bool nofollow = (flags & O_NOFOLLOW) != 0;
	bool is_dir = false;
	bool exists = false;
	char *path = NULL;
	struct stat st;
	int ret;

	if (how->resolve != 0) {
		errno = ENOSYS;
		return -1;
	}

	path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	if (path == NULL) {
		return -1;
	}

	START_PROFILE(syscall_openat);

	fh = talloc_zero(NULL, struct gf2_fh);
	if (fh == NULL) {
		errno = ENOMEM;
		goto fail;
	}
	fh->vol = c->vol;
	fh->st = c->st;
	fh->nofollow = nofollow;

	/*
	 * What is there?  A path-only handle needs nothing else; so do
	 * directories.  Use smbd's stat if it has one.
	 */
	if (fsp->fsp_flags.is_pathref || (flags & O_CREAT) == 0) {
		if (VALID_STAT(smb_fname->st) && !fsp->fsp_flags.is_pathref) {
			st.st_mode = smb_fname->st.st_ex_mode;
			ret = 0;
		} else {
			ret = gf2_lookup(c, path, nofollow, &st);
		}
		if (ret != 0) {
			goto fail;
		}
		exists = true;
		is_dir = S_ISDIR(st.st_mode);
		if ((flags & O_DIRECTORY) && !is_dir) {
			errno = ENOTDIR;
			goto fail;
		}
	}

	if (fsp->fsp_flags.is_pathref) {
		fh->is_dir = is_dir;
		goto done;
	}

	if (exists && S_ISLNK(st.st_mode)) {
		/* O_NOFOLLOW on a symlink */
		errno = ELOOP;
		goto fail;
	}

	if (exists && is_dir) {
		if ((flags & O_ACCMODE) != O_RDONLY) {
			errno = EISDIR;
			goto fail;
		}
		fh->is_dir = true;
		goto done;
	}

	if (flags & (O_CREAT | O_TRUNC)) {
		gf2_meta_changed(c, path);
	}
	if (flags & O_CREAT) {
		uint64_t at = gf2_now_ns();

		fh->fd = glfs_creat(c->fs, path, flags & ~O_NOFOLLOW,
				    how->mode);
		if (fh->fd != NULL && (flags & O_EXCL)) {
			gf2_meta_created(c, path, false, at);
		}
		if (fh->fd == NULL && errno == EISDIR &&
		    (flags & O_EXCL) == 0 &&
		    (flags & O_ACCMODE) == O_RDONLY) {
			fh->is_dir = true;
			goto done;
		}
	} else {
		fh->fd = glfs_open(c->fs, path, flags & ~O_NOFOLLOW);
	}
	if (fh->fd == NULL) {
		goto fail;
	}

done:
	pfh = VFS_ADD_FSP_EXTENSION(handle, fsp, struct gf2_fh *,
				    gf2_fh_ext_destroy);
	if (pfh == NULL) {
		errno = ENOMEM;
		goto fail;
	}
	*pfh = fh;
	fsp->fsp_flags.have_proc_fds = false;
	END_PROFILE(syscall_openat);
	TALLOC_FREE(path);
	return GF2_FAKE_FD;

fail:
	{
		int saved_errno = errno;

		if (fh != NULL) {
			gf2_fh_close(fh);
		}
		END_PROFILE(syscall_openat);
		TALLOC_FREE(path);
		errno = saved_errno;
	}
	return -1;
}

static int gf2_close(struct vfs_handle_struct *handle, files_struct *fsp)
{
	struct gf2_fh **pfh = NULL;
	struct gf2_fh *fh = NULL;
	int ret;

	pfh = (struct gf2_fh **)VFS_FETCH_FSP_EXTENSION(handle, fsp);
	if (pfh == NULL || *pfh == NULL) {
		errno = EBADF;
		return -1;
	}
	START_PROFILE(syscall_close);
	fh = *pfh;
	*pfh = NULL;
	ret = gf2_fh_close(fh);
	VFS_REMOVE_FSP_EXTENSION(handle, fsp);
	END_PROFILE(syscall_close);
	return ret;
}

static ssize_t gf2_pread(struct vfs_handle_struct *handle,
			 files_struct *fsp, void *data, size_t n,
			 off_t offset)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	ssize_t ret;

	if (fd == NULL) {
		return -1;
	}
	START_PROFILE_BYTES(syscall_pread, n);
	ret = glfs_pread(fd, data, n, offset, 0, NULL);
	END_PROFILE_BYTES(syscall_pread);
	return ret;
}

static ssize_t gf2_pwrite(struct vfs_handle_struct *handle,
			  files_struct *fsp, const void *data, size_t n,
			  off_t offset)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct gf2_pf_file *pf = NULL;
	ssize_t ret;

	if (fd == NULL) {
		return -1;
	}
	pf = gf2_fh_pf(gf2_conn_of(handle), fsp, gf2_fh_of(handle, fsp));
	if (pf != NULL) {
		gf2_pf_write_begin(pf, offset, n);
	}
	gf2_meta_changed_stat_fsp(handle, fsp);
	START_PROFILE_BYTES(syscall_pwrite, n);
	ret = glfs_pwrite(fd, data, n, offset, 0, NULL, NULL);
	END_PROFILE_BYTES(syscall_pwrite);
	if (pf != NULL) {
		gf2_pf_write_end(pf);
	}
	return ret;
}

static struct tevent_req *gf2_pread_send_fn(struct vfs_handle_struct *handle,
					    TALLOC_CTX *mem_ctx,
					    struct tevent_context *ev,
					    struct files_struct *fsp,
					    void *data, size_t n,
					    off_t offset)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	struct gf2_pf_file *pf = gf2_fh_pf(c, fsp, fh);

	if (pf != NULL && c->pf->strict && !gf2_read_caching(fsp)) {
		/*
		 * Strict mode without a read lease or oplock: nothing
		 * prefetched may be served, and nothing is read ahead.
		 */
		gf2_pf_invalidate(pf, 0, 0);
		pf = NULL;
	}
	return gf2_pf_read_send(mem_ctx, ev, fh, pf, c->pf, data, n, offset,
				fsp->fsp_name->st.st_ex_size);
}

static struct tevent_req *gf2_pwrite_send_fn(struct vfs_handle_struct *handle,
					     TALLOC_CTX *mem_ctx,
					     struct tevent_context *ev,
					     struct files_struct *fsp,
					     const void *data, size_t n,
					     off_t offset)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);

	gf2_meta_changed_stat_fsp(handle, fsp);
	return gf2_pwrite_send(mem_ctx, ev, fh, gf2_fh_pf(c, fsp, fh), data,
			       n, offset);
}

static struct tevent_req *gf2_fsync_send_fn(struct vfs_handle_struct *handle,
					    TALLOC_CTX *mem_ctx,
					    struct tevent_context *ev,
					    struct files_struct *fsp)
{
	return gf2_fsync_send(mem_ctx, ev, gf2_fh_of(handle, fsp));
}

static off_t gf2_lseek(struct vfs_handle_struct *handle,
		       files_struct *fsp, off_t offset, int whence)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);

	if (fd == NULL) {
		return -1;
	}
	return glfs_lseek(fd, offset, whence);
}

static ssize_t gf2_sendfile(struct vfs_handle_struct *handle, int tofd,
			    files_struct *fromfsp, const DATA_BLOB *hdr,
			    off_t offset, size_t n)
{
	errno = ENOTSUP;
	return -1;
}

static ssize_t gf2_recvfile(struct vfs_handle_struct *handle, int fromfd,
			    files_struct *tofsp, off_t offset, size_t n)
{
	errno = ENOTSUP;
	return -1;
}

static int gf2_renameat(struct vfs_handle_struct *handle,
			struct files_struct *srcdir_fsp,
			const struct smb_filename *smb_fname_src,
			struct files_struct *dstdir_fsp,
			const struct smb_filename *smb_fname_dst)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *src = NULL;
	char *dst = NULL;
	int ret = -1;

	gf2_xlist_invalidate_all();

	src = gf2_at_path(talloc_tos(), c, srcdir_fsp, smb_fname_src);
	dst = gf2_at_path(talloc_tos(), c, dstdir_fsp, smb_fname_dst);
	gf2_meta_changed_tree(c, src);
	gf2_meta_changed_tree(c, dst);
	if (src != NULL && dst != NULL) {
		START_PROFILE(syscall_renameat);
		ret = glfs_rename(c->fs, src, dst);
		END_PROFILE(syscall_renameat);
	}
	TALLOC_FREE(src);
	TALLOC_FREE(dst);
	return ret;
}

/* stat family */

static int gf2_stat_path(struct vfs_handle_struct *handle,
			 struct smb_filename *smb_fname, bool nofollow)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_path(talloc_tos(), c, smb_fname->base_name);
	struct stat st;
	int ret;

	if (path == NULL) {
		return -1;
	}
	ret = gf2_lookup(c, path, nofollow, &st);
	TALLOC_FREE(path);
	if (ret == 0) {
		gf2_stat_ex(handle, &smb_fname->st, &st);
	}
	return ret;
}

static int gf2_stat(struct vfs_handle_struct *handle,
		    struct smb_filename *smb_fname)
{
	int ret;

	START_PROFILE(syscall_stat);
	ret = gf2_stat_path(handle, smb_fname, false);
	END_PROFILE(syscall_stat);
	return ret;
}

static int gf2_lstat(struct vfs_handle_struct *handle,
		     struct smb_filename *smb_fname)
{
	int ret;

	START_PROFILE(syscall_lstat);
	ret = gf2_stat_path(handle, smb_fname, true);
	END_PROFILE(syscall_lstat);
	return ret;
}

static int gf2_fstat(struct vfs_handle_struct *handle,
		     files_struct *fsp, SMB_STRUCT_STAT *sbuf)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	struct stat st;
	int ret;

	START_PROFILE(syscall_fstat);
	if (fh != NULL && fh->fd != NULL) {
		ret = glfs_fstat(fh->fd, &st);
	} else {
		char *path = gf2_fsp_path(talloc_tos(), c, fsp);

		if (path == NULL) {
			END_PROFILE(syscall_fstat);
			return -1;
		}
		ret = gf2_lookup(c, path, fh != NULL && fh->nofollow, &st);
		TALLOC_FREE(path);
	}
	END_PROFILE(syscall_fstat);
	if (ret == 0) {
		gf2_stat_ex(handle, sbuf, &st);
	}
	return ret;
}

static int gf2_fstatat(struct vfs_handle_struct *handle,
		       const struct files_struct *dirfsp,
		       const struct smb_filename *smb_fname,
		       SMB_STRUCT_STAT *sbuf, int flags)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	struct stat st;
	int ret;

	if (path == NULL) {
		return -1;
	}
	START_PROFILE(syscall_fstatat);
	ret = gf2_lookup(c, path, (flags & AT_SYMLINK_NOFOLLOW) != 0, &st);
	END_PROFILE(syscall_fstatat);
	TALLOC_FREE(path);
	if (ret == 0) {
		gf2_stat_ex(handle, sbuf, &st);
	}
	return ret;
}

static uint64_t gf2_get_alloc_size(struct vfs_handle_struct *handle,
				   files_struct *fsp,
				   const SMB_STRUCT_STAT *sbuf)
{
	if (S_ISDIR(sbuf->st_ex_mode)) {
		return 0;
	}
	return sbuf->st_ex_blocks * 512;
}

static int gf2_unlinkat(struct vfs_handle_struct *handle,
			struct files_struct *dirfsp,
			const struct smb_filename *smb_fname,
			int flags)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	int ret;

	gf2_xlist_invalidate_all();

	if (path == NULL) {
		return -1;
	}
	gf2_meta_changed_tree(c, path);
	START_PROFILE(syscall_unlinkat);
	if (flags & AT_REMOVEDIR) {
		ret = glfs_rmdir(c->fs, path);
	} else {
		ret = glfs_unlink(c->fs, path);
	}
	END_PROFILE(syscall_unlinkat);
	TALLOC_FREE(path);
	return ret;
}

static int gf2_fchmod(struct vfs_handle_struct *handle,
		      files_struct *fsp, mode_t mode)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	char *path = NULL;
	int ret;

	gf2_meta_changed_fsp(gf2_conn_of(handle), fsp);
	START_PROFILE(syscall_fchmod);
	if (fh != NULL && fh->fd != NULL) {
		ret = glfs_fchmod(fh->fd, mode);
	} else {
		path = gf2_fsp_path(talloc_tos(), c, fsp);
		ret = path != NULL ? glfs_chmod(c->fs, path, mode) : -1;
		TALLOC_FREE(path);
	}
	END_PROFILE(syscall_fchmod);
	return ret;
}

static int gf2_fchown(struct vfs_handle_struct *handle,
		      files_struct *fsp, uid_t uid, gid_t gid)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	char *path = NULL;
	int ret;

	gf2_meta_changed_fsp(gf2_conn_of(handle), fsp);
	START_PROFILE(syscall_fchown);
	if (fh != NULL && fh->fd != NULL) {
		ret = glfs_fchown(fh->fd, uid, gid);
	} else {
		path = gf2_fsp_path(talloc_tos(), c, fsp);
		if (path == NULL) {
			ret = -1;
		} else if (fh != NULL && fh->nofollow) {
			ret = glfs_lchown(c->fs, path, uid, gid);
		} else {
			ret = glfs_chown(c->fs, path, uid, gid);
		}
		TALLOC_FREE(path);
	}
	END_PROFILE(syscall_fchown);
	return ret;
}

static int gf2_lchown(struct vfs_handle_struct *handle,
		      const struct smb_filename *smb_fname,
		      uid_t uid, gid_t gid)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_path(talloc_tos(), c, smb_fname->base_name);
	int ret;

	if (path == NULL) {
		return -1;
	}
	gf2_meta_changed(c, path);
	START_PROFILE(syscall_lchown);
	ret = glfs_lchown(c->fs, path, uid, gid);
	END_PROFILE(syscall_lchown);
	TALLOC_FREE(path);
	return ret;
}

static int gf2_chdir(struct vfs_handle_struct *handle,
		     const struct smb_filename *smb_fname)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_path(c, c, smb_fname->base_name);
	struct stat st;
	int ret;

	if (path == NULL) {
		return -1;
	}
	START_PROFILE(syscall_chdir);
	ret = glfs_stat(c->fs, path, &st);
	END_PROFILE(syscall_chdir);
	if (ret != 0) {
		TALLOC_FREE(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		TALLOC_FREE(path);
		errno = ENOTDIR;
		return -1;
	}
	TALLOC_FREE(c->cwd);
	c->cwd = path;
	return 0;
}

static struct smb_filename *gf2_getwd(struct vfs_handle_struct *handle,
				      TALLOC_CTX *mem_ctx)
{
	struct gf2_conn *c = gf2_conn_of(handle);

	return synthetic_smb_fname(mem_ctx, c->cwd, NULL, NULL, 0, 0);
}

static int gf2_fntimes(struct vfs_handle_struct *handle,
		       files_struct *fsp, struct smb_file_time *ft)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	struct timespec times[2];
	char *path = NULL;
	int ret;

	if (!is_omit_timespec(&ft->create_time)) {
		/*
		 * As Samba's default VFS: the create time lives in the
		 * DOS attribute xattr (user.DOSATTRIB), written through
		 * our fsetxattr; without it a client's new create time
		 * would be dropped (smbtorture smb2.timestamps).
		 */
		(void)set_create_timespec_ea(fsp, ft->create_time);
	}

	times[0] = ft->atime;
	times[1] = ft->mtime;
	if (is_omit_timespec(&times[0])) {
		times[0].tv_sec = 0;
		times[0].tv_nsec = UTIME_OMIT;
	}
	if (is_omit_timespec(&times[1])) {
		times[1].tv_sec = 0;
		times[1].tv_nsec = UTIME_OMIT;
	}
	if (times[0].tv_nsec == UTIME_OMIT &&
	    times[1].tv_nsec == UTIME_OMIT) {
		return 0;
	}

	gf2_meta_changed_stat_fsp(handle, fsp);
	START_PROFILE(syscall_fntimes);
	if (fh != NULL && fh->fd != NULL) {
		ret = glfs_futimens(fh->fd, times);
	} else {
		path = gf2_fsp_path(talloc_tos(), c, fsp);
		if (path == NULL) {
			ret = -1;
		} else if (fh != NULL && fh->nofollow) {
			ret = glfs_lutimens(c->fs, path, times);
		} else {
			ret = glfs_utimens(c->fs, path, times);
		}
		TALLOC_FREE(path);
	}
	END_PROFILE(syscall_fntimes);
	return ret;
}

static int gf2_ftruncate(struct vfs_handle_struct *handle,
			 files_struct *fsp, off_t len)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct gf2_pf_file *pf = NULL;
	int ret;

	if (fd == NULL) {
		return -1;
	}
	pf = gf2_fh_pf(gf2_conn_of(handle), fsp, gf2_fh_of(handle, fsp));
	if (pf != NULL) {
		gf2_pf_write_begin(pf, 0, 0);
	}
	gf2_meta_changed_stat_fsp(handle, fsp);
	START_PROFILE(syscall_ftruncate);
	ret = glfs_ftruncate(fd, len, NULL, NULL);
	END_PROFILE(syscall_ftruncate);
	if (pf != NULL) {
		gf2_pf_write_end(pf);
	}
	return ret;
}

static int gf2_fallocate(struct vfs_handle_struct *handle,
			 struct files_struct *fsp, uint32_t mode,
			 off_t offset, off_t len)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct gf2_pf_file *pf = NULL;
	int keep_size = mode & VFS_FALLOCATE_FL_KEEP_SIZE;
	int punch_hole = mode & VFS_FALLOCATE_FL_PUNCH_HOLE;
	int ret;

	if (fd == NULL) {
		return -1;
	}
	mode &= ~(VFS_FALLOCATE_FL_KEEP_SIZE | VFS_FALLOCATE_FL_PUNCH_HOLE);
	if (mode != 0) {
		errno = ENOTSUP;
		return -1;
	}
	pf = gf2_fh_pf(gf2_conn_of(handle), fsp, gf2_fh_of(handle, fsp));
	if (pf != NULL) {
		gf2_pf_write_begin(pf, 0, 0);
	}
	gf2_meta_changed_stat_fsp(handle, fsp);
	START_PROFILE(syscall_fallocate);
	if (punch_hole) {
		ret = glfs_discard(fd, offset, len);
	} else {
		ret = glfs_fallocate(fd, keep_size, offset, len);
	}
	END_PROFILE(syscall_fallocate);
	if (pf != NULL) {
		gf2_pf_write_end(pf);
	}
	return ret;
}

static bool gf2_lock(struct vfs_handle_struct *handle, files_struct *fsp,
		     int op, off_t offset, off_t count, int type)
{
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct flock fl = { 0 };
	int ret;

	if (fd == NULL) {
		return false;
	}
	START_PROFILE(syscall_fcntl_lock);
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = offset;
	fl.l_len = count;
	fl.l_pid = 0;
	ret = glfs_posix_lock(fd, op, &fl);
	END_PROFILE(syscall_fcntl_lock);

	if (op == F_GETLK) {
		/* lock query: true if there is a conflicting lock */
		if (ret == -1) {
			return false;
		}
		if (fl.l_type != F_UNLCK && fl.l_pid != 0 &&
		    fl.l_pid != getpid()) {
			return true;
		}
		return false;
	}
	return ret != -1;
}

/*
 * smbd asks whether another process holds a POSIX lock on the range of
 * every read and write of a handle without a lease (strict locking =
 * auto, posix locking = yes): on Gluster a synchronous round trip to the
 * brick, on smbd's main loop, per request.  SMB clients' own locks are in
 * smbd's lock database and checked before this; what this finds are
 * locks of other Gluster clients (FUSE, NFS).  With a lock cache of N ms
 * the module asks once for the whole file; when no other owner holds a
 * lock anywhere in it, the answer "not locked" is given for N ms without
 * asking again.  A lock another client takes meanwhile is seen at most N
 * ms late; smbd's check-then-read already lets a lock taken between check
 * and read pass.  0: every check asks Gluster (the stock behaviour).
 */
static bool gf2_getlock_probe(glfs_fd_t *fd, struct flock *fl)
{
	int ret;

	START_PROFILE(syscall_fcntl_getlock);
	ret = glfs_posix_lock(fd, F_GETLK, fl);
	END_PROFILE(syscall_fcntl_getlock);
	return ret != -1;
}

static bool gf2_getlock(struct vfs_handle_struct *handle,
			files_struct *fsp, off_t *poffset, off_t *pcount,
			int *ptype, pid_t *ppid)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	glfs_fd_t *fd = gf2_io_fd(handle, fsp);
	struct flock fl = { 0 };
	uint64_t now;

	if (fd == NULL) {
		return false;
	}
	if (c != NULL && c->lock_cache_ms > 0 && fh != NULL) {
		now = gf2_now_ms();
		if (now < fh->nolocks_until) {
			*ptype = F_UNLCK;
			return true;
		}
		/* any lock of another owner anywhere in the file? */
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		fl.l_start = 0;
		fl.l_len = 0;
		if (gf2_getlock_probe(fd, &fl) && fl.l_type == F_UNLCK) {
			fh->nolocks_until = now + c->lock_cache_ms;
			*ptype = F_UNLCK;
			return true;
		}
		ZERO_STRUCT(fl);
	}
	fl.l_type = *ptype;
	fl.l_whence = SEEK_SET;
	fl.l_start = *poffset;
	fl.l_len = *pcount;
	fl.l_pid = 0;
	if (!gf2_getlock_probe(fd, &fl)) {
		return false;
	}
	*ptype = fl.l_type;
	*poffset = fl.l_start;
	*pcount = fl.l_len;
	*ppid = fl.l_pid;
	return true;
}

static int gf2_filesystem_sharemode(struct vfs_handle_struct *handle,
				    struct files_struct *fsp,
				    uint32_t share_access,
				    uint32_t access_mask)
{
	errno = ENOSYS;
	return -1;
}

static int gf2_fcntl(struct vfs_handle_struct *handle,
		     struct files_struct *fsp, int cmd, va_list cmd_arg)
{
	/*
	 * smbd only asks for and clears O_NONBLOCK; there is no kernel
	 * descriptor behind our handles.
	 */
	if (cmd == F_GETFL) {
		return 0;
	}
	if (cmd == F_SETFL) {
		va_list ap;
		int flags;

		va_copy(ap, cmd_arg);
		flags = va_arg(ap, int);
		va_end(ap);
		if (flags == 0) {
			return 0;
		}
		DBG_ERR("unexpected fcntl F_SETFL(%d)\n", flags);
	} else {
		DBG_ERR("unexpected fcntl %d\n", cmd);
	}
	errno = EINVAL;
	return -1;
}

static int gf2_linux_setlease(struct vfs_handle_struct *handle,
			      struct files_struct *fsp, int leasetype)
{
	errno = ENOSYS;
	return -1;
}

static int gf2_symlinkat(struct vfs_handle_struct *handle,
			 const struct smb_filename *link_contents,
			 struct files_struct *dirfsp,
			 const struct smb_filename *new_smb_fname)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, new_smb_fname);
	int ret;

	if (path == NULL) {
		return -1;
	}
	gf2_meta_changed(c, path);
	START_PROFILE(syscall_symlinkat);
	ret = glfs_symlink(c->fs, link_contents->base_name, path);
	END_PROFILE(syscall_symlinkat);
	TALLOC_FREE(path);
	return ret;
}

static int gf2_readlinkat(struct vfs_handle_struct *handle,
			  const struct files_struct *dirfsp,
			  const struct smb_filename *smb_fname,
			  char *buf, size_t bufsiz)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	int ret;

	if (path == NULL) {
		return -1;
	}
	START_PROFILE(syscall_readlinkat);
	ret = glfs_readlink(c->fs, path, buf, bufsiz);
	END_PROFILE(syscall_readlinkat);
	TALLOC_FREE(path);
	return ret;
}

static int gf2_linkat(struct vfs_handle_struct *handle,
		      struct files_struct *srcfsp,
		      const struct smb_filename *old_smb_fname,
		      struct files_struct *dstfsp,
		      const struct smb_filename *new_smb_fname,
		      int flags)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *src = gf2_at_path(talloc_tos(), c, srcfsp, old_smb_fname);
	char *dst = gf2_at_path(talloc_tos(), c, dstfsp, new_smb_fname);
	int ret = -1;

	if (src != NULL && dst != NULL) {
		gf2_meta_changed(c, src);
		gf2_meta_changed(c, dst);
		START_PROFILE(syscall_linkat);
		ret = glfs_link(c->fs, src, dst);
		END_PROFILE(syscall_linkat);
	}
	TALLOC_FREE(src);
	TALLOC_FREE(dst);
	return ret;
}

static int gf2_mknodat(struct vfs_handle_struct *handle,
		       struct files_struct *dirfsp,
		       const struct smb_filename *smb_fname,
		       mode_t mode, SMB_DEV_T dev)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char *path = gf2_at_path(talloc_tos(), c, dirfsp, smb_fname);
	int ret;

	if (path == NULL) {
		return -1;
	}
	gf2_meta_changed(c, path);
	START_PROFILE(syscall_mknodat);
	ret = glfs_mknod(c->fs, path, mode, dev);
	END_PROFILE(syscall_mknodat);
	TALLOC_FREE(path);
	return ret;
}

static struct smb_filename *gf2_realpath(struct vfs_handle_struct *handle,
					 TALLOC_CTX *ctx,
					 const struct smb_filename *smb_fname)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct smb_filename *result = NULL;
	char *path = gf2_path(talloc_tos(), c, smb_fname->base_name);
	char *resolved = NULL;
	char *ret = NULL;

	if (path == NULL) {
		return NULL;
	}
	resolved = talloc_zero_size(talloc_tos(), PATH_MAX + 1);
	if (resolved == NULL) {
		TALLOC_FREE(path);
		errno = ENOMEM;
		return NULL;
	}
	START_PROFILE(syscall_realpath);
	ret = glfs_realpath(c->fs, path, resolved);
	END_PROFILE(syscall_realpath);
	if (ret != NULL) {
		result = synthetic_smb_fname(ctx, ret, NULL, NULL, 0, 0);
	}
	TALLOC_FREE(path);
	TALLOC_FREE(resolved);
	return result;
}

static int gf2_fchflags(struct vfs_handle_struct *handle,
			struct files_struct *fsp, unsigned int flags)
{
	errno = ENOSYS;
	return -1;
}

/*
 * Case-insensitive lookup: Gluster's DHT answers the virtual xattr
 * "glusterfs.get_real_filename:NAME" on a directory with the name as it
 * is stored, in one round trip instead of a directory scan.
 *
 * An xattr name is at most XATTR_NAME_MAX (255) bytes, so names longer
 * than 227 bytes cannot be asked that way (gfapi fails the call, and
 * smbd would refuse a valid 228-255 byte name as OBJECT_NAME_INVALID):
 * for those, NT_STATUS_NOT_SUPPORTED sends smbd to its directory scan.
 */
#define GF2_REAL_FILENAME_KEY "glusterfs.get_real_filename:"
#define GF2_XATTR_NAME_MAX 255

static NTSTATUS gf2_get_real_filename_at(struct vfs_handle_struct *handle,
					 struct files_struct *dirfsp,
					 const char *name,
					 TALLOC_CTX *mem_ctx,
					 char **found_name)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	char key[NAME_MAX + 64];
	char val[NAME_MAX + 1];
	char *path = NULL;
	const unsigned char *p = NULL;
	ssize_t ret;
	int n;

	/*
	 * Gluster compares names with strcasecmp(3): ASCII only.  A name
	 * with any other character (fullwidth letters, accented ones)
	 * goes to smbd's directory scan, which folds case as Windows does
	 * (smbtorture smb2.charset "Testing wide-a").
	 */
	for (p = (const unsigned char *)name; *p != '\0'; p++) {
		if (*p >= 0x80) {
			return NT_STATUS_NOT_SUPPORTED;
		}
	}

	n = snprintf(key, sizeof(key), GF2_REAL_FILENAME_KEY "%s", name);
	if (n < 0) {
		return NT_STATUS_OBJECT_NAME_INVALID;
	}
	if ((size_t)n >= sizeof(key) || n > GF2_XATTR_NAME_MAX) {
		return NT_STATUS_NOT_SUPPORTED;
	}
	path = gf2_fsp_path(talloc_tos(), c, dirfsp);
	if (path == NULL) {
		return NT_STATUS_NO_MEMORY;
	}
	ret = glfs_getxattr(c->fs, path, key, val, sizeof(val) - 1);
	TALLOC_FREE(path);
	if (ret == -1) {
		if (errno == ENOATTR || errno == ENODATA) {
			errno = ENOENT;
		}
		return map_nt_error_from_unix(errno);
	}
	val[ret] = '\0';
	*found_name = talloc_strdup(mem_ctx, val);
	if (*found_name == NULL) {
		return NT_STATUS_NO_MEMORY;
	}
	return NT_STATUS_OK;
}

/* Extended attributes */

static ssize_t gf2_fgetxattr(struct vfs_handle_struct *handle,
			     struct files_struct *fsp, const char *name,
			     void *value, size_t size)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	struct gf2_md_cache *md = gf2_meta_cache();
	char *path = NULL;
	uint64_t at;
	ssize_t ret;
	int err;

	gf2_upcall_drain();
	if (md != NULL && gf2_md_count(md) > 0) {
		bool found;

		path = gf2_fsp_path(talloc_tos(), c, fsp);
		if (path == NULL) {
			return -1;
		}
		found = gf2_md_get_xattr(md, c->fs, path, name,
					 gf2_now_ns(), value, size, &ret,
					 &err);
		if (found) {
			TALLOC_FREE(path);
			if (ret == -1) {
				errno = err;
			}
			return ret;
		}
	}
	if (path == NULL &&
	    (gf2_meta_kept_name(name) || fh == NULL || fh->fd == NULL)) {
		path = gf2_fsp_path(talloc_tos(), c, fsp);
		if (path == NULL && (fh == NULL || fh->fd == NULL)) {
			return -1;
		}
	}
	at = gf2_now_ns();
	if (fh != NULL && fh->fd != NULL) {
		ret = glfs_fgetxattr(fh->fd, name, value, size);
	} else if (fh != NULL && fh->nofollow) {
		ret = glfs_lgetxattr(c->fs, path, name, value, size);
	} else {
		ret = glfs_getxattr(c->fs, path, name, value, size);
	}
	err = errno;
	gf2_meta_keep_xattr(c, fsp, path, name, value, size, ret, err, at);
	TALLOC_FREE(path);
	errno = err;
	return ret;
}

static ssize_t gf2_flistxattr(struct vfs_handle_struct *handle,
			      struct files_struct *fsp, char *list,
			      size_t size)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	bool nofollow = fh != NULL && fh->nofollow;
	char *path = NULL;
	ssize_t ret;

	path = gf2_fsp_path(talloc_tos(), c, fsp);
	if (path == NULL && (fh == NULL || fh->fd == NULL)) {
		return -1;
	}
	/*
	 * An open handle is on what the path leads to: a list fetched
	 * following it, or one of an entry that is no symlink, serves.
	 */
	if (path != NULL &&
	    gf2_xlist_lookup(path,
			     (fh != NULL && fh->fd != NULL) ? false : nofollow,
			     list, size, &ret)) {
		TALLOC_FREE(path);
		return ret;
	}
	if (fh != NULL && fh->fd != NULL) {
		TALLOC_FREE(path);
		return glfs_flistxattr(fh->fd, list, size);
	}
	gf2_dir_xlist_batch(c->fs, path, nofollow);
	if (gf2_xlist_lookup(path, nofollow, list, size, &ret)) {
		TALLOC_FREE(path);
		return ret;
	}
	if (nofollow) {
		ret = glfs_llistxattr(c->fs, path, list, size);
	} else {
		ret = glfs_listxattr(c->fs, path, list, size);
	}
	TALLOC_FREE(path);
	return ret;
}

static int gf2_fremovexattr(struct vfs_handle_struct *handle,
			    struct files_struct *fsp, const char *name)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	char *path = NULL;
	uint64_t at;
	int ret;

	/* kept xattr lists and values may now be wrong */
	gf2_xlist_invalidate_all();
	path = gf2_fsp_path(talloc_tos(), c, fsp);
	gf2_meta_changed(c, path);
	if (path == NULL && (fh == NULL || fh->fd == NULL)) {
		return -1;
	}
	at = gf2_now_ns();
	if (fh != NULL && fh->fd != NULL) {
		ret = glfs_fremovexattr(fh->fd, name);
	} else if (fh != NULL && fh->nofollow) {
		ret = glfs_lremovexattr(c->fs, path, name);
	} else {
		ret = glfs_removexattr(c->fs, path, name);
	}
	if (ret == 0) {
		/* what this process did is what is there now */
		gf2_meta_keep_xattr(c, fsp, path, name, NULL, 0, -1, ENODATA, at);
	}
	TALLOC_FREE(path);
	return ret;
}

static int gf2_fsetxattr(struct vfs_handle_struct *handle,
			 struct files_struct *fsp, const char *name,
			 const void *value, size_t size, int flags)
{
	struct gf2_conn *c = gf2_conn_of(handle);
	struct gf2_fh *fh = gf2_fh_of(handle, fsp);
	char *path = NULL;
	uint64_t at;
	int ret;

	/* kept xattr lists and values may now be wrong */
	gf2_xlist_invalidate_all();
	path = gf2_fsp_path(talloc_tos(), c, fsp);
	gf2_meta_changed(c, path);
	if (path == NULL && (fh == NULL || fh->fd == NULL)) {
		return -1;
	}
	at = gf2_now_ns();
	if (fh != NULL && fh->fd != NULL) {
		ret = glfs_fsetxattr(fh->fd, name, value, size, flags);
	} else if (fh != NULL && fh->nofollow) {
		ret = glfs_lsetxattr(c->fs, path, name, value, size, flags);
	} else {
		ret = glfs_setxattr(c->fs, path, name, value, size, flags);
	}
	if (ret == 0 && size > 0) {
		/* what this process wrote is what is there now */
		gf2_meta_keep_xattr(c, fsp, path, name, value, size, size, 0, at);
	}
	TALLOC_FREE(path);
	return ret;
}

/*
 * No forcing: with smbd's default "aio read size = 1" every non-empty read
 * and write is already asynchronous, and a forced zero-length read would
 * make smbd allocate an empty buffer and fail with NT_STATUS_NO_MEMORY.
 */
static bool gf2_aio_force(struct vfs_handle_struct *handle,
			  struct files_struct *fsp)
{
	return false;
}

static ssize_t gf2_pread_recv_fn(struct tevent_req *req,
				 struct vfs_aio_state *aio_state)
{
	return gf2_pf_read_recv(req, aio_state);
}

static ssize_t gf2_pwrite_recv_fn(struct tevent_req *req,
				  struct vfs_aio_state *aio_state)
{
	return gf2_pwrite_recv(req, aio_state);
}

static int gf2_fsync_recv_fn(struct tevent_req *req,
			     struct vfs_aio_state *aio_state)
{
	return gf2_fsync_recv(req, aio_state);
}

static struct vfs_fn_pointers gf2_fns = {
	/* Disk operations */
	.connect_fn = gf2_connect,
	.disconnect_fn = gf2_disconnect,
	.disk_free_fn = gf2_disk_free,
	.get_quota_fn = gf2_get_quota,
	.set_quota_fn = gf2_set_quota,
	.statvfs_fn = gf2_statvfs,
	.fs_capabilities_fn = gf2_fs_capabilities,
	.create_dfs_pathat_fn = vfs_not_implemented_create_dfs_pathat,
	.read_dfs_pathat_fn = vfs_not_implemented_read_dfs_pathat,

	/* Directory operations */
	.fdopendir_fn = gf2_fdopendir,
	.readdir_fn = gf2_readdir,
	.seekdir_fn = gf2_seekdir,
	.telldir_fn = gf2_telldir,
	.rewind_dir_fn = gf2_rewind_dir,
	.mkdirat_fn = gf2_mkdirat,
	.closedir_fn = gf2_closedir,

	/* File operations */
	.openat_fn = gf2_openat,
	.close_fn = gf2_close,
	.pread_fn = gf2_pread,
	.pread_send_fn = gf2_pread_send_fn,
	.pread_recv_fn = gf2_pread_recv_fn,
	.pwrite_fn = gf2_pwrite,
	.pwrite_send_fn = gf2_pwrite_send_fn,
	.pwrite_recv_fn = gf2_pwrite_recv_fn,
	.lseek_fn = gf2_lseek,
	.sendfile_fn = gf2_sendfile,
	.recvfile_fn = gf2_recvfile,
	/* server-side copy (FSCTL_SRV_COPYCHUNK), gf2_offload.c */
	.offload_read_send_fn = gf2_offload_read_send,
	.offload_read_recv_fn = gf2_offload_read_recv,
	.offload_write_send_fn = gf2_offload_write_send,
	.offload_write_recv_fn = gf2_offload_write_recv,
	.renameat_fn = gf2_renameat,
	.fsync_send_fn = gf2_fsync_send_fn,
	.fsync_recv_fn = gf2_fsync_recv_fn,
	.stat_fn = gf2_stat,
	.fstat_fn = gf2_fstat,
	.fstatat_fn = gf2_fstatat,
	.lstat_fn = gf2_lstat,
	.get_alloc_size_fn = gf2_get_alloc_size,
	.unlinkat_fn = gf2_unlinkat,
	.fchmod_fn = gf2_fchmod,
	.fchown_fn = gf2_fchown,
	.lchown_fn = gf2_lchown,
	.chdir_fn = gf2_chdir,
	.getwd_fn = gf2_getwd,
	.fntimes_fn = gf2_fntimes,
	.ftruncate_fn = gf2_ftruncate,
	.fallocate_fn = gf2_fallocate,
	.lock_fn = gf2_lock,
	.filesystem_sharemode_fn = gf2_filesystem_sharemode,
	.fcntl_fn = gf2_fcntl,
	.linux_setlease_fn = gf2_linux_setlease,
	.getlock_fn = gf2_getlock,
	.symlinkat_fn = gf2_symlinkat,
	.readlinkat_fn = gf2_readlinkat,
	.linkat_fn = gf2_linkat,
	.mknodat_fn = gf2_mknodat,
	.realpath_fn = gf2_realpath,
	.fchflags_fn = gf2_fchflags,
	.get_real_filename_at_fn = gf2_get_real_filename_at,

	/* POSIX ACLs in Gluster's ACL xattrs (gf2_acl.c) */
	.sys_acl_get_fd_fn = gf2_sys_acl_get_fd,
	.sys_acl_blob_get_fd_fn = posix_sys_acl_blob_get_fd,
	.sys_acl_set_fd_fn = gf2_sys_acl_set_fd,
	.sys_acl_delete_def_fd_fn = gf2_sys_acl_delete_def_fd,

	/* EA operations */
	.getxattrat_send_fn = vfs_not_implemented_getxattrat_send,
	.getxattrat_recv_fn = vfs_not_implemented_getxattrat_recv,
	.fgetxattr_fn = gf2_fgetxattr,
	.flistxattr_fn = gf2_flistxattr,
	.fremovexattr_fn = gf2_fremovexattr,
	.fsetxattr_fn = gf2_fsetxattr,

	/* aio operations */
	.aio_force_fn = gf2_aio_force,
};

static_decl_vfs;
NTSTATUS vfs_glusterfs2_init(TALLOC_CTX *ctx);
NTSTATUS vfs_glusterfs2_init(TALLOC_CTX *ctx)
{
	return smb_register_vfs(SMB_VFS_INTERFACE_VERSION, GF2_REGISTER_NAME,
				&gf2_fns);
}

/* The entry point smbd looks for in a shared module. */
NTSTATUS samba_init_module(TALLOC_CTX *ctx);
NTSTATUS samba_init_module(TALLOC_CTX *ctx)
{
	return vfs_glusterfs2_init(ctx);
}
