/*
 * glusterfs2: the one place where differences between Samba releases
 * live.  Every other file includes this (the glue through gf2_vfs.h)
 * instead of testing SMB_VFS_INTERFACE_VERSION itself.  Include it after
 * "includes.h" and "smbd/smbd.h".
 *
 * Layer: bridge.
 *
 * The VFS interface versions this source is written for; wscript refuses
 * a Samba tree outside them.  47 (4.17), 50 (4.22), 52 (4.24) and 53
 * (4.25) are built and tested against their smbd; 49 (4.19-4.21) and 51
 * (4.23) are compiled against release trees whose smbd does not run here
 * (wscript: --samba-tree-without-smbd); 48 (4.18) is written from the
 * "Version NN" notes of source3/include/vfs.h (docs/samba-versions.md).
 */

#ifndef GF2_COMPAT_H
#define GF2_COMPAT_H

#define GF2_VFS_INTERFACE_MIN 47
#define GF2_VFS_INTERFACE_MAX 53

#if SMB_VFS_INTERFACE_VERSION < GF2_VFS_INTERFACE_MIN || \
	SMB_VFS_INTERFACE_VERSION > GF2_VFS_INTERFACE_MAX
#error "glusterfs2 does not support this SMB_VFS_INTERFACE_VERSION"
#endif

/*
 * fd_load() moved from lib/util/samba_util.h (which includes.h pulls in)
 * to lib/util/util_file.h, which includes.h does not include; exactly
 * when, between 47 and 50, is not known here, so the header's presence
 * decides.
 */
#if defined(__has_include)
#if __has_include("lib/util/util_file.h")
#include "lib/util/util_file.h"
#endif
#endif

/*
 * Version 49: readdir_fn lost its stat argument (smbd no longer takes a
 * stat from a directory listing), seekdir_fn and telldir_fn are gone.
 *   GF2_READDIR_STAT_PARAM  the extra parameter of readdir_fn, if any
 *   GF2_READDIR_STAT        that parameter, or NULL
 *   GF2_DIR_SEEK_FNS        the seekdir/telldir entries of the table
 */
#if SMB_VFS_INTERFACE_VERSION >= 49
#define GF2_READDIR_STAT_PARAM
#define GF2_READDIR_STAT NULL
#define GF2_DIR_SEEK_FNS
#else
#define GF2_READDIR_STAT_PARAM , SMB_STRUCT_STAT *readdir_sbuf
#define GF2_READDIR_STAT readdir_sbuf
#define GF2_DIR_SEEK_FNS \
	.seekdir_fn = gf2_seekdir, \
	.telldir_fn = gf2_telldir,
#endif

/*
 * Version 50: renameat_fn takes a struct vfs_rename_how.  Its only flag,
 * VFS_RENAME_HOW_NO_REPLACE, is asked for by smbd's mkdir through a
 * temporary name ("vfs mkdir use tmp name"); gfapi has no rename that
 * refuses to replace, so the module answers EINVAL, on which smbd falls
 * back to mkdirat of the final name and a plain rename over it, as it
 * does for a kernel without renameat2 (smbd/open.c, mkdir_internal).
 *   GF2_RENAME_HOW_PARAM   the extra parameter, if any
 *   gf2_rename_how_flags(how) its flags; 0 before 50, where the
 *                          argument (then undeclared) is dropped
 */
#if SMB_VFS_INTERFACE_VERSION >= 50
#define GF2_RENAME_HOW_PARAM , const struct vfs_rename_how *how
#define gf2_rename_how_flags(how) ((how) != NULL ? (how)->flags : 0)
#else
#define GF2_RENAME_HOW_PARAM
#define gf2_rename_how_flags(how) 0
#endif

/*
 * struct vfs_open_how.resolve bits the module accepts (openat answers
 * ENOSYS for any other, as vfs_default does for bits it does not know):
 *   VFS_OPEN_HOW_WITH_BACKUP_INTENT (by 50): a create for a backup
 *     application; the access check was smbd's, nothing to do here.
 *   VFS_OPEN_HOW_RESOLVE_NO_XDEV (52): do not cross a mount point; a
 *     Gluster volume has no mount points inside it, so every open
 *     honours it.
 * VFS_OPEN_HOW_RESOLVE_NO_SYMLINKS stays refused (ENOSYS): smbd then
 * walks the path component by component itself.
 */
#ifdef VFS_OPEN_HOW_WITH_BACKUP_INTENT
#define GF2_OPEN_HOW_BACKUP_INTENT VFS_OPEN_HOW_WITH_BACKUP_INTENT
#else
#define GF2_OPEN_HOW_BACKUP_INTENT 0
#endif
#ifdef VFS_OPEN_HOW_RESOLVE_NO_XDEV
#define GF2_OPEN_HOW_NO_XDEV VFS_OPEN_HOW_RESOLVE_NO_XDEV
#else
#define GF2_OPEN_HOW_NO_XDEV 0
#endif
#define GF2_OPEN_HOW_RESOLVE_OK \
	((uint64_t)(GF2_OPEN_HOW_BACKUP_INTENT | GF2_OPEN_HOW_NO_XDEV))

/*
 * Version 50: a POSIX (SMB3 unix extensions) open for append data
 * without write data sets fsp_flags.posix_append and O_APPEND; its writes
 * arrive with offset VFS_PWRITE_APPEND_OFFSET (-1) and go to the end of
 * the file.  gf2_is_append_write(fsp, offset) tells such a write.
 */
#ifdef VFS_PWRITE_APPEND_OFFSET
#define gf2_is_append_write(fsp, offset) \
	((fsp)->fsp_flags.posix_append && \
	 (offset) == VFS_PWRITE_APPEND_OFFSET)
#else
#define gf2_is_append_write(fsp, offset) false
#endif

/*
 * init_strict_lock_struct() lost its lock_flav argument in 51 (the 4.23.11
 * tree has it without; 4.22.11's, interface 50, with).
 */
#if SMB_VFS_INTERFACE_VERSION >= 51
#define gf2_init_strict_lock(fsp, smblctx, start, size, type, plock) \
	init_strict_lock_struct(fsp, smblctx, start, size, type, plock)
#else
#define gf2_init_strict_lock(fsp, smblctx, start, size, type, plock) \
	init_strict_lock_struct(fsp, smblctx, start, size, type, \
				lp_posix_cifsu_locktype(fsp), plock)
#endif

/*
 * Version 53: the file system calls name the share through a handle.
 * disk_free_fn and get_quota_fn take an fsp instead of a name,
 * set_quota_fn gains one, fstatvfs_fn(handle, fsp, buf) replaces
 * statvfs_fn (struct vfs_statvfs_struct moved to lib/util/statvfs.h),
 * getwd_fn is gone, and open_share_root_fn(handle, root_fsp, connectpath)
 * opens the share's root at tree connect (vfs_default stats connectpath
 * and hands the result to vfs_set_share_root()).
 *   GF2_FS_OBJ_PARAM       the object disk_free/get_quota/statvfs name
 *   gf2_fs_obj_fname(o)    its smb_filename
 *   GF2_SET_QUOTA_PARAM    set_quota_fn's extra fsp, if any
 *   GF2_FS_FNS             the table entries that differ
 * durable_reconnect_fn gains the lease (53) too; the module leaves that
 * slot to the next module, as before.
 */
#if SMB_VFS_INTERFACE_VERSION >= 53
#if defined(__has_include)
#if __has_include("lib/util/statvfs.h")
#include "lib/util/statvfs.h"
#endif
#endif
#define GF2_FS_OBJ_PARAM struct files_struct *fs_obj
#define gf2_fs_obj_fname(o) ((o)->fsp_name)
#define GF2_SET_QUOTA_PARAM struct files_struct *fs_obj,
#define GF2_FS_FNS \
	.open_share_root_fn = gf2_open_share_root, \
	.fstatvfs_fn = gf2_statvfs,
#else
#define GF2_FS_OBJ_PARAM const struct smb_filename *fs_obj
#define gf2_fs_obj_fname(o) (o)
#define GF2_SET_QUOTA_PARAM
#define GF2_FS_FNS \
	.statvfs_fn = gf2_statvfs, \
	.getwd_fn = gf2_getwd,
#endif

/*
 * Not needed here, for the record: SMB_VFS_PREAD_RECV / PWRITE_RECV /
 * FSYNC_RECV became macros over smb_vfs_call_*_recv (by 52), which the
 * source uses unchanged; connectpath_fn (dirfsp added in 48, removed in
 * 52), audit_file_fn (removed in 52) and rename_stream_fn (added in 52)
 * are slots the module does not fill, so smbd calls the next module.
 */

/*
 * Per-share profiling (Samba 4.23 on; smbprofile.h has no interface
 * version of its own, so the macros' presence decides: 4.23 has
 * START_PROFILE_X and the async _X calls but no
 * SMBPROFILE_BYTES_ASYNC_STATE_X, which 4.24 adds).  With `smbd
 * profiling share = yes` on a share, the _X family counts a call both in
 * smbd's totals and in the share's own record, which `smbstatus
 * --profile --json` ("Extended Profile") and smb_prometheus_endpoint
 * show.  Before, only the totals exist.
 *   GF2_START_PROFILE(handle, x) ... GF2_END_PROFILE(x)
 *   GF2_START_PROFILE_BYTES(handle, x, n) ... GF2_END_PROFILE_BYTES(x)
 *   GF2_PROFILE_ASYNC_STATE(a)   a member of an async request's state
 *   GF2_PROFILE_ASYNC_START(snum, x, a, n), _SET_IDLE(a), _SET_BUSY(a),
 *   _END(a)   with a that member (state->a); snum the share's number
 */
#if defined(START_PROFILE_X)
#define GF2_START_PROFILE(h, x) START_PROFILE_X(SNUM((h)->conn), x)
#define GF2_END_PROFILE(x) END_PROFILE_X(x)
#define GF2_START_PROFILE_BYTES(h, x, n) \
	START_PROFILE_BYTES_X(SNUM((h)->conn), x, n)
#define GF2_END_PROFILE_BYTES(x) END_PROFILE_BYTES_X(x)
#if defined(SMBPROFILE_BYTES_ASYNC_STATE_X)
#define GF2_PROFILE_ASYNC_STATE(a) SMBPROFILE_BYTES_ASYNC_STATE_X(a, a##_svc)
#else
/* 4.23 has the _X calls but declares the two members one by one */
#define GF2_PROFILE_ASYNC_STATE(a) \
	SMBPROFILE_BYTES_ASYNC_STATE(a) SMBPROFILE_BYTES_ASYNC_STATE(a##_svc)
#endif
#define GF2_PROFILE_ASYNC_START(snum, x, a, n) \
	SMBPROFILE_BYTES_ASYNC_START_X(snum, x, a, a##_svc, n)
#define GF2_PROFILE_ASYNC_SET_IDLE(a) SMBPROFILE_BYTES_ASYNC_SET_IDLE_X(a, a##_svc)
#define GF2_PROFILE_ASYNC_SET_BUSY(a) SMBPROFILE_BYTES_ASYNC_SET_BUSY_X(a, a##_svc)
#define GF2_PROFILE_ASYNC_END(a) SMBPROFILE_BYTES_ASYNC_END_X(a, a##_svc)
#else
#define GF2_START_PROFILE(h, x) START_PROFILE(x)
#define GF2_END_PROFILE(x) END_PROFILE(x)
#define GF2_START_PROFILE_BYTES(h, x, n) START_PROFILE_BYTES(x, n)
#define GF2_END_PROFILE_BYTES(x) END_PROFILE_BYTES(x)
#define GF2_PROFILE_ASYNC_STATE(a) SMBPROFILE_BYTES_ASYNC_STATE(a)
#define GF2_PROFILE_ASYNC_START(snum, x, a, n) \
	SMBPROFILE_BYTES_ASYNC_START(x, profile_p, a, n)
#define GF2_PROFILE_ASYNC_SET_IDLE(a) SMBPROFILE_BYTES_ASYNC_SET_IDLE(a)
#define GF2_PROFILE_ASYNC_SET_BUSY(a) SMBPROFILE_BYTES_ASYNC_SET_BUSY(a)
#define GF2_PROFILE_ASYNC_END(a) SMBPROFILE_BYTES_ASYNC_END(a)
#endif

#endif /* GF2_COMPAT_H */
