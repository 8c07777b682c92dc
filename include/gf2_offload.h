/*
 * glusterfs2: server-side copy, FSCTL_SRV_COPYCHUNK (source/gf2_offload.c).
 * Included only by files built against smbd's headers.
 *
 * Layer: glue.
 */

#ifndef GF2_OFFLOAD_H
#define GF2_OFFLOAD_H

struct tevent_req *gf2_offload_read_send(TALLOC_CTX *mem_ctx,
					 struct tevent_context *ev,
					 struct vfs_handle_struct *handle,
					 struct files_struct *fsp,
					 uint32_t fsctl,
					 uint32_t ttl,
					 off_t offset,
					 size_t to_copy);
NTSTATUS gf2_offload_read_recv(struct tevent_req *req,
			       struct vfs_handle_struct *handle,
			       TALLOC_CTX *mem_ctx,
			       uint32_t *flags,
			       uint64_t *xferlen,
			       DATA_BLOB *token);
struct tevent_req *gf2_offload_write_send(struct vfs_handle_struct *handle,
					  TALLOC_CTX *mem_ctx,
					  struct tevent_context *ev,
					  uint32_t fsctl,
					  DATA_BLOB *token,
					  off_t transfer_offset,
					  struct files_struct *dest_fsp,
					  off_t dest_off,
					  off_t to_copy);
NTSTATUS gf2_offload_write_recv(struct vfs_handle_struct *handle,
				struct tevent_req *req,
				off_t *copied);

#endif /* GF2_OFFLOAD_H */
