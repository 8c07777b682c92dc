/*
 * glusterfs2: POSIX ACLs through Gluster's ACL xattrs (source/gf2_acl.c).
 * Included only by files built against smbd's headers.
 *
 * Layer: glue.
 */

#ifndef GF2_ACL_H
#define GF2_ACL_H

SMB_ACL_T gf2_sys_acl_get_fd(struct vfs_handle_struct *handle,
			     struct files_struct *fsp,
			     SMB_ACL_TYPE_T type,
			     TALLOC_CTX *mem_ctx);
int gf2_sys_acl_set_fd(struct vfs_handle_struct *handle,
		       struct files_struct *fsp,
		       SMB_ACL_TYPE_T type,
		       SMB_ACL_T theacl);
int gf2_sys_acl_delete_def_fd(struct vfs_handle_struct *handle,
			      struct files_struct *fsp);

#endif /* GF2_ACL_H */
