/*
 * glusterfs2: a Samba VFS module serving GlusterFS volumes through
 * libgfapi.
 *
 * Layer: glue.
 *
 * This file registers the module: its function table, connect and
 * disconnect, and the operations it refuses.  The layers and their files:
 * docs/design.md, "Layers".
 */

#include "includes.h"
#include <malloc.h>
#include "smbd/smbd.h"
#include "lib/global_contexts.h"
#include "gf2_vfs.h"
#include "gf2_acl.h"
#include "gf2_offload.h"
#include "gf2_sambaver.h"
#include "gf2_shmcache.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/*
 * The name smbd loads and registers the module under (vfs objects = NAME,
 * MODULESDIR/vfs/NAME.so).  A sanitizer build installed beside the normal
 * one gets another name from wscript (--module-name); its options keep
 * the glusterfs2: prefix, so a share's settings are the same for both.
 */
#ifndef GF2_REGISTER_NAME
#define GF2_REGISTER_NAME GF2_MODULE_NAME
#endif

/*
 * Large I/O buffers (1 MiB reads, gfapi's iobufs for them) are above
 * glibc's dynamic mmap threshold, so each would be a fresh mmap, with its
 * page faults and zeroing, then a munmap, in smbd's thread and in
 * gfapi's.  Keep buffers up to 16 MiB in the heap for reuse, and trim the
 * heap only when 32 MiB are free at its top.  Once per smbd process (each
 * serves one client).
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

/*
 * glusterfs2:shared read cache: the node's segment of the volume, or
 * NULL (logged).  Its blocks are kept coherent with other clients and
 * heads by Gluster's upcalls (features.cache-invalidation on the
 * volume, seen here as md-cache's cache-invalidation in the client
 * volfile, which Gluster's samba option group turns on with it) and by
 * the check of every open: without upcalls it is not used at all.
 */
static struct gf2_shr *gf2_connect_shared(const char *service,
					  const struct gf2_volume *vol,
					  const struct gf2_share_options *o)
{
	struct gf2_shc_stats n;
	struct gf2_shr *shr = NULL;

	if (!vol->upcalls || !vol->md_invalidation) {
		DBG_ERR("share [%s]: glusterfs2:shared read cache is not "
			"used: volume %s %s (set features.cache-invalidation "
			"and performance.cache-invalidation on, or Gluster's "
			"samba option group)\n", service, vol->volname,
			!vol->upcalls ? "gives this client no upcall events"
				      : "has performance.cache-invalidation "
					"off");
		return NULL;
	}
	shr = gf2_shr_get(vol->volname, o->shr_size, (uint32_t)o->shr_block);
	if (shr == NULL) {
		return NULL;	/* logged */
	}
	gf2_shr_stats(shr, &n);
	DBG_NOTICE("share [%s]: shared read cache %s: %" PRIu64 " bytes, %"
		   PRIu32 " blocks of %" PRIu32 " bytes; node-wide %" PRIu64
		   " block hits, %" PRIu64 " misses, %" PRIu64 " stale, %"
		   PRIu64 " fills, %" PRIu64 " evictions, %" PRIu64
		   " invalidations\n", service, gf2_shr_path(shr),
		   o->shr_size, n.n_blocks, gf2_shr_block_size(shr), n.hits,
		   n.misses, n.stale_reads + n.stale_fills, n.inserts,
		   n.evictions, n.invalidations);
	return shr;
}

static int gf2_connect(struct vfs_handle_struct *handle,
		       const char *service, const char *user)
{
	int snum = SNUM(handle->conn);
	struct gf2_share_config *cfg = NULL;
	struct gf2_volume_params params = { 0 };
	struct gf2_conn *c = NULL;
	TALLOC_CTX *frame = talloc_stackframe();
	int ret;

	ret = SMB_VFS_NEXT_CONNECT(handle, service, user);
	if (ret < 0) {
		TALLOC_FREE(frame);
		return ret;
	}

	cfg = talloc_zero(frame, struct gf2_share_config);
	if (cfg == NULL) {
		TALLOC_FREE(frame);
		errno = ENOMEM;
		return -1;
	}
	if (gf2_config_load(frame, snum, service, cfg) != 0) {
		int saved_errno = errno;

		TALLOC_FREE(frame);
		errno = saved_errno;
		return -1;
	}

	gf2_tune_malloc();
	params.volname = cfg->volname;
	params.servers = cfg->servers;
	params.num_servers = cfg->num_servers;
	params.logfile = cfg->logfile;
	params.loglevel = cfg->o.loglevel;
	params.connectpath = handle->conn->connectpath;
	params.client_io_threads_off = !cfg->o.client_io_threads;
	params.event_threads = (int)cfg->o.event_threads;

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
	gf2_meta_volume_ttl(c->vol);
	gf2_config_prefetch(&cfg->o, c->pf);
	if (c->pf->enabled || cfg->o.write_cache) {
		/* one budget: prefetch and the write cache */
		gf2_pf_set_cap(c->pf->max_memory);
	}
	c->lock_cache_ms = cfg->o.lock_cache_ms;
	/*
	 * glusterfs2:lock check = lease is accepted and answered as getlk.
	 * The bricks drop a client's leases when its connection to them
	 * breaks (a brick restart, a network blip), without a recall, and
	 * gfapi 10.3 gives its application no event of that disconnect
	 * and no property of a descriptor that shows it: a lease trusted
	 * across one would miss every lock taken after it for as long as
	 * the handle stays open (docs/design.md, posix locking).
	 */
	if (cfg->o.lock_check == GF2_LOCK_CHECK_LEASE) {
		DBG_ERR("volume %s: glusterfs2:lock check = lease now "
			"behaves as getlk (every check asks the bricks): "
			"Gluster drops a read lease on a disconnect "
			"without telling its client\n", c->vol->volname);
	}
	/*
	 * The write cache makes another process's open wait for this
	 * process's queue through a registry of this node (a local tdb):
	 * a CTDB head elsewhere does not wait for it, and no VFS call
	 * comes before smbd sends a lease break to the holder, so another
	 * head's open could read bytes older than those acknowledged here.
	 * On a clustered Samba the option is answered as "no".
	 */
	c->write_cache = cfg->o.write_cache;
	if (c->write_cache && lp_clustering()) {
		DBG_ERR("volume %s: glusterfs2:write cache = yes is off on a "
			"clustered Samba (clustering = yes): another node's "
			"open would not wait for this node's queued writes\n",
			c->vol->volname);
		c->write_cache = false;
	}
	c->wc_max_wait_ms = cfg->o.wc_max_wait_ms;
	if (cfg->o.shr_size != 0) {
		c->shr = gf2_connect_shared(service, c->vol, &cfg->o);
	}

	SMB_VFS_HANDLE_SET_DATA(handle, c, NULL, struct gf2_conn,
				{
					gf2_volume_put(c->vol);
					TALLOC_FREE(c);
					TALLOC_FREE(frame);
					errno = ENOMEM;
					return -1;
				});

	/*
	 * Gluster is not mounted locally: unless the admin said where the
	 * snapshots' mount point is, tell shadow_copy2 it is the volume's
	 * root.  Keep dosmode queries synchronous (getxattrat_send is not
	 * implemented here).
	 */
	if (lp_parm_const_string(snum, "shadow", "mountpoint", NULL) == NULL) {
		lp_do_parameter(snum, "shadow:mountpoint", "/");
	}
	lp_do_parameter(snum, "smbd async dosmode", "false");

	c->st = gf2_stats_get(service);
	gf2_stats_connect(global_event_context());

	DBG_NOTICE("share [%s] on volume %s (servers %s)\n", service,
		   cfg->volname, c->vol->servers);
	TALLOC_FREE(frame);
	return 0;
}

static void gf2_disconnect(struct vfs_handle_struct *handle)
{
	struct gf2_conn *c = gf2_conn_of(handle);

	/* before the glfs instance can go and its address be reused */
	gf2_cache_forget_volume(c->fs);
	gf2_volume_put(c->vol);
	c->vol = NULL;
	c->fs = NULL;
	gf2_stats_disconnect();
	SMB_VFS_NEXT_DISCONNECT(handle);
}

/* What Gluster has no equivalent for, and what smbd may ask anyway. */

static int gf2_get_quota(struct vfs_handle_struct *handle, GF2_FS_OBJ_PARAM,
			 enum SMB_QUOTA_TYPE qtype, unid_t id,
			 SMB_DISK_QUOTA *qt)
{
	errno = ENOSYS;
	return -1;
}

static int gf2_set_quota(struct vfs_handle_struct *handle,
			 GF2_SET_QUOTA_PARAM
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

static uint64_t gf2_get_alloc_size(struct vfs_handle_struct *handle,
				   files_struct *fsp,
				   const SMB_STRUCT_STAT *sbuf)
{
	uint64_t size;

	if (S_ISDIR(sbuf->st_ex_mode)) {
		return 0;
	}
	/*
	 * What the bricks hold, but at least what the client asked to
	 * allocate (an AllocationSize create context, or
	 * FileAllocationInformation, which smbd keeps on the handle), in
	 * the share's allocation units: as a local share answers.
	 */
	size = (uint64_t)sbuf->st_ex_blocks * 512;
	if (fsp != NULL) {
		size = MAX(size, fsp->initial_allocation_size);
	}
	return smb_roundup(handle->conn, size);
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

static int gf2_fchflags(struct vfs_handle_struct *handle,
			struct files_struct *fsp, unsigned int flags)
{
	errno = ENOSYS;
	return -1;
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

static struct vfs_fn_pointers gf2_fns = {
	/* Disk operations */
	.connect_fn = gf2_connect,
	.disconnect_fn = gf2_disconnect,
	.disk_free_fn = gf2_disk_free,
	.get_quota_fn = gf2_get_quota,
	.set_quota_fn = gf2_set_quota,
	GF2_FS_FNS
	.fs_capabilities_fn = gf2_fs_capabilities,
	.create_dfs_pathat_fn = vfs_not_implemented_create_dfs_pathat,
	.read_dfs_pathat_fn = vfs_not_implemented_read_dfs_pathat,

	/* Directory operations */
	.fdopendir_fn = gf2_fdopendir,
	.readdir_fn = gf2_readdir,
	GF2_DIR_SEEK_FNS
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

/*
 * The Samba release whose headers the module was compiled with (wscript:
 * the source tree's VERSION; a test build may claim another with
 * --samba-version-override).
 */
#ifndef GF2_SAMBA_BUILT_VERSION
#error "GF2_SAMBA_BUILT_VERSION comes from wscript"
#endif

/*
 * Whether this smbd is of the release series the module was compiled
 * for.  Runs before the module registers, so before smbd hands it any
 * structure whose layout depends on the release: only the version
 * string of the public libsmbconf is read.  Another series (or an
 * unreadable version) fails the module's initialisation: smbd then
 * refuses the tree connect of each share that loads it
 * (NT_STATUS_BAD_NETWORK_NAME) and serves the others.  smbd's own check
 * of the VFS interface number follows in smb_register_vfs; the interface
 * changes only with the series (docs/samba-versions.md).
 */
static bool gf2_samba_release_ok(void)
{
	const char *running = samba_version_string();
	enum gf2_samba_match m;

	m = gf2_samba_version_match(GF2_SAMBA_BUILT_VERSION, running);
	if (gf2_samba_version_usable(m)) {
		if (m == GF2_SAMBA_SAME_SERIES) {
			DBG_NOTICE("%s compiled for Samba %s, running in "
				   "Samba %s: same release series\n",
				   GF2_REGISTER_NAME, GF2_SAMBA_BUILT_VERSION,
				   running);
		}
		return true;
	}
	DBG_ERR("%s was compiled for Samba %s (VFS interface %d) but this "
		"smbd is Samba %s: not loading it, shares using it are "
		"refused; rebuild it against this smbd's Samba "
		"(scripts/build-deb, or ./waf configure && ./waf install; "
		"README, Upgrading Samba)\n",
		GF2_REGISTER_NAME, GF2_SAMBA_BUILT_VERSION,
		SMB_VFS_INTERFACE_VERSION,
		running != NULL ? running : "(unknown)");
	return false;
}

static_decl_vfs;
NTSTATUS vfs_glusterfs2_init(TALLOC_CTX *ctx);
NTSTATUS vfs_glusterfs2_init(TALLOC_CTX *ctx)
{
	if (!gf2_samba_release_ok()) {
		return NT_STATUS_REVISION_MISMATCH;
	}
	return smb_register_vfs(SMB_VFS_INTERFACE_VERSION, GF2_REGISTER_NAME,
				&gf2_fns);
}

/* The entry point smbd looks for in a shared module. */
NTSTATUS samba_init_module(TALLOC_CTX *ctx);
NTSTATUS samba_init_module(TALLOC_CTX *ctx)
{
	return vfs_glusterfs2_init(ctx);
}
