/*
 * glusterfs2: the one place where differences between Samba releases
 * live.  Every other file includes this (through gf2_vfs.h) instead of
 * testing SMB_VFS_INTERFACE_VERSION itself.
 *
 * The VFS interface versions this source is written for; wscript refuses
 * a Samba tree outside them.
 */

#ifndef GF2_COMPAT_H
#define GF2_COMPAT_H

#define GF2_VFS_INTERFACE_MIN 47
#define GF2_VFS_INTERFACE_MAX 47

#if SMB_VFS_INTERFACE_VERSION < GF2_VFS_INTERFACE_MIN || \
	SMB_VFS_INTERFACE_VERSION > GF2_VFS_INTERFACE_MAX
#error "glusterfs2 does not support this SMB_VFS_INTERFACE_VERSION"
#endif

#endif /* GF2_COMPAT_H */
