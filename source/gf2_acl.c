/*
 * glusterfs2: POSIX ACLs through Gluster's ACL xattrs.
 *
 * Layer: glue.
 *
 * Gluster keeps a file's POSIX ACLs in the xattrs system.posix_acl_access
 * and system.posix_acl_default (its access-control translator enforces
 * them on the bricks, and the bricks' file systems store them).  smbd
 * maps NT ACLs to POSIX ACLs (smbd/posix_acls.c) and asks the VFS for
 * them as SMB_ACL_T; this file converts between the two through the
 * neutral entries of gf2_acl_xattr.c, which does the byte format.
 *
 * The xattrs are read and written through this module's own xattr
 * functions (smb_vfs_call_* with our handle: the call starts at
 * glusterfs2, not at the top of the share's module stack), which choose
 * between the open glfs_fd of a file opened for I/O and a path-based call
 * for path-only handles and directories.
 *
 * What is answered when a file has no ACL xattr is what Linux's libacl
 * answers (and so vfs_posixacl on a local file system): an access ACL
 * built from the mode; for the default ACL of a directory, an empty ACL
 * (smbd's free_empty_sys_acl then treats the directory as having no
 * inheritable entries), for a non-directory EACCES.  Removing a default
 * ACL that does not exist succeeds.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "gf2_acl_xattr.h"
#include "gf2_acl.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

/* First guess at the size of an ACL xattr: 16 entries, 132 bytes. */
#define GF2_ACL_GUESS_ENTRIES 16

/* The largest xattr value Linux stores (XATTR_SIZE_MAX). */
#define GF2_ACL_XATTR_SIZE_MAX 65536

static const char *gf2_acl_xattr_name(SMB_ACL_TYPE_T type)
{
	switch (type) {
	case SMB_ACL_TYPE_ACCESS:
		return GF2_ACL_XATTR_ACCESS;
	case SMB_ACL_TYPE_DEFAULT:
		return GF2_ACL_XATTR_DEFAULT;
	default:
		return NULL;
	}
}

static bool gf2_acl_no_xattr(int err)
{
	return err == ENOATTR || err == ENODATA;
}

/*
 * Read the xattr name of fsp into a buffer of mem_ctx.  Returns 0 with
 * *pbuf and *plen set, or -1 with errno.
 */
static int gf2_acl_read(struct vfs_handle_struct *handle,
			struct files_struct *fsp,
			const char *name,
			TALLOC_CTX *mem_ctx,
			uint8_t **pbuf,
			size_t *plen)
{
	size_t size = gf2_acl_xattr_size(GF2_ACL_GUESS_ENTRIES);
	uint8_t *buf = NULL;
	ssize_t ret;
	int tries;

	/* The value may grow between asking its size and reading it. */
	for (tries = 0; tries < 3; tries++) {
		buf = talloc_array(mem_ctx, uint8_t, size);
		if (buf == NULL) {
			errno = ENOMEM;
			return -1;
		}
		ret = smb_vfs_call_fgetxattr(handle, fsp, name, buf, size);
		if (ret >= 0) {
			*pbuf = buf;
			*plen = ret;
			return 0;
		}
		TALLOC_FREE(buf);
		if (errno != ERANGE) {
			return -1;
		}
		ret = smb_vfs_call_fgetxattr(handle, fsp, name, NULL, 0);
		if (ret == -1) {
			return -1;
		}
		if (ret > GF2_ACL_XATTR_SIZE_MAX) {
			errno = E2BIG;
			return -1;
		}
		size = MAX((size_t)ret, 1);
	}
	errno = ERANGE;
	return -1;
}

static bool gf2_acl_tag_to_smb(uint16_t tag, SMB_ACL_TAG_T *out)
{
	switch (tag) {
	case GF2_ACL_USER_OBJ:
		*out = SMB_ACL_USER_OBJ;
		return true;
	case GF2_ACL_USER:
		*out = SMB_ACL_USER;
		return true;
	case GF2_ACL_GROUP_OBJ:
		*out = SMB_ACL_GROUP_OBJ;
		return true;
	case GF2_ACL_GROUP:
		*out = SMB_ACL_GROUP;
		return true;
	case GF2_ACL_MASK:
		*out = SMB_ACL_MASK;
		return true;
	case GF2_ACL_OTHER:
		*out = SMB_ACL_OTHER;
		return true;
	default:
		return false;
	}
}

static bool gf2_acl_tag_from_smb(SMB_ACL_TAG_T tag, uint16_t *out)
{
	switch (tag) {
	case SMB_ACL_USER_OBJ:
		*out = GF2_ACL_USER_OBJ;
		return true;
	case SMB_ACL_USER:
		*out = GF2_ACL_USER;
		return true;
	case SMB_ACL_GROUP_OBJ:
		*out = GF2_ACL_GROUP_OBJ;
		return true;
	case SMB_ACL_GROUP:
		*out = GF2_ACL_GROUP;
		return true;
	case SMB_ACL_MASK:
		*out = GF2_ACL_MASK;
		return true;
	case SMB_ACL_OTHER:
		*out = GF2_ACL_OTHER;
		return true;
	default:
		return false;
	}
}

/* Entries to a new SMB_ACL_T on mem_ctx, or NULL with errno. */
static SMB_ACL_T gf2_acl_to_smb(const struct gf2_acl_entry *entries,
				size_t count,
				TALLOC_CTX *mem_ctx)
{
	SMB_ACL_T acl = NULL;
	size_t i;

	acl = sys_acl_init(mem_ctx);
	if (acl == NULL) {
		return NULL;
	}
	for (i = 0; i < count; i++) {
		SMB_ACL_ENTRY_T e = NULL;
		SMB_ACL_TAG_T tag;
		SMB_ACL_PERM_T perm = entries[i].perm;
		uint32_t id = entries[i].id;
		int ret;

		if (!gf2_acl_tag_to_smb(entries[i].tag, &tag)) {
			errno = EINVAL;
			goto fail;
		}
		ret = sys_acl_create_entry(&acl, &e);
		if (ret == 0) {
			ret = sys_acl_set_tag_type(e, tag);
		}
		if (ret == 0 && tag == SMB_ACL_USER) {
			uid_t uid = id;

			ret = sys_acl_set_qualifier(e, &uid);
		}
		if (ret == 0 && tag == SMB_ACL_GROUP) {
			gid_t gid = id;

			ret = sys_acl_set_qualifier(e, &gid);
		}
		if (ret == 0) {
			ret = sys_acl_set_permset(e, &perm);
		}
		if (ret != 0) {
			goto fail;
		}
	}
	return acl;

fail:
	{
		int err = errno;

		TALLOC_FREE(acl);
		errno = err;
	}
	return NULL;
}

/*
 * SMB_ACL_T to entries on mem_ctx.  Returns 0, or an errno value.
 */
static int gf2_acl_from_smb(SMB_ACL_T acl,
			    TALLOC_CTX *mem_ctx,
			    struct gf2_acl_entry **pentries,
			    size_t *pcount)
{
	struct gf2_acl_entry *entries = NULL;
	SMB_ACL_ENTRY_T e = NULL;
	size_t n = 0;
	int entry_id = SMB_ACL_FIRST_ENTRY;
	int ret;

	if (acl->count < 0) {
		return EINVAL;
	}
	if ((size_t)acl->count > GF2_ACL_MAX_ENTRIES) {
		return E2BIG;
	}
	entries = talloc_array(mem_ctx, struct gf2_acl_entry, acl->count);
	if (entries == NULL) {
		return ENOMEM;
	}

	while ((ret = sys_acl_get_entry(acl, entry_id, &e)) == 1) {
		SMB_ACL_TAG_T tag;
		SMB_ACL_PERMSET_T permset = NULL;
		struct gf2_acl_entry *out = NULL;

		entry_id = SMB_ACL_NEXT_ENTRY;
		if (n >= (size_t)acl->count) {
			return EINVAL;
		}
		out = &entries[n];
		if (sys_acl_get_tag_type(e, &tag) != 0 ||
		    !gf2_acl_tag_from_smb(tag, &out->tag)) {
			DBG_NOTICE("entry %zu: tag %d not in a POSIX ACL\n", n,
				   (int)tag);
			return EINVAL;
		}
		out->id = GF2_ACL_UNDEFINED_ID;
		if (tag == SMB_ACL_USER || tag == SMB_ACL_GROUP) {
			void *q = sys_acl_get_qualifier(e);

			if (q == NULL) {
				return EINVAL;
			}
			out->id = (tag == SMB_ACL_USER) ? *(uid_t *)q
							 : *(gid_t *)q;
		}
		if (sys_acl_get_permset(e, &permset) != 0 ||
		    (*permset & ~GF2_ACL_PERMS) != 0) {
			return EINVAL;
		}
		out->perm = *permset;
		n++;
	}
	if (ret != 0) {
		return errno;
	}
	*pentries = entries;
	*pcount = n;
	return 0;
}

/* What a file without the ACL xattr has (see the top of this file). */
static SMB_ACL_T gf2_acl_absent(struct vfs_handle_struct *handle,
				struct files_struct *fsp,
				SMB_ACL_TYPE_T type,
				TALLOC_CTX *mem_ctx)
{
	struct gf2_acl_entry entries[3];
	SMB_STRUCT_STAT sbuf;
	size_t n;

	if (type == SMB_ACL_TYPE_DEFAULT) {
		if (!fsp->fsp_flags.is_directory) {
			errno = EACCES;
			return NULL;
		}
		return sys_acl_init(mem_ctx);
	}
	if (smb_vfs_call_fstat(handle, fsp, &sbuf) != 0) {
		return NULL;
	}
	n = gf2_acl_from_mode(sbuf.st_ex_mode, entries);
	return gf2_acl_to_smb(entries, n, mem_ctx);
}

SMB_ACL_T gf2_sys_acl_get_fd(struct vfs_handle_struct *handle,
			     struct files_struct *fsp,
			     SMB_ACL_TYPE_T type,
			     TALLOC_CTX *mem_ctx)
{
	const char *name = gf2_acl_xattr_name(type);
	TALLOC_CTX *frame = NULL;
	struct gf2_acl_entry *entries = NULL;
	SMB_ACL_T result = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	size_t n = 0;
	int saved_errno = 0;
	int err;

	if (name == NULL) {
		errno = EINVAL;
		return NULL;
	}
	frame = talloc_stackframe();

	if (gf2_acl_read(handle, fsp, name, frame, &buf, &len) != 0) {
		saved_errno = errno;
		if (gf2_acl_no_xattr(saved_errno)) {
			result = gf2_acl_absent(handle, fsp, type, mem_ctx);
			saved_errno = errno;
		} else {
			DBG_DEBUG("%s of %s: %s\n", name, fsp_str_dbg(fsp),
				  strerror(saved_errno));
		}
		goto out;
	}
	if (len == 0) {
		/* An empty value: no ACL, as libacl reads it. */
		result = gf2_acl_absent(handle, fsp, type, mem_ctx);
		saved_errno = errno;
		goto out;
	}

	err = gf2_acl_xattr_count(buf, len, &n);
	if (err == 0) {
		entries = talloc_array(frame, struct gf2_acl_entry,
				       MAX(n, 1));
		if (entries == NULL) {
			err = ENOMEM;
		}
	}
	if (err == 0) {
		err = gf2_acl_xattr_decode(buf, len, entries, n, &n);
	}
	if (err != 0) {
		DBG_NOTICE("%s of %s: %zu bytes that are not a POSIX ACL: "
			   "%s\n", name, fsp_str_dbg(fsp), len, strerror(err));
		saved_errno = err;
		goto out;
	}
	result = gf2_acl_to_smb(entries, n, mem_ctx);
	saved_errno = errno;

out:
	TALLOC_FREE(frame);
	if (result == NULL) {
		errno = saved_errno;
	}
	return result;
}

int gf2_sys_acl_set_fd(struct vfs_handle_struct *handle,
		       struct files_struct *fsp,
		       SMB_ACL_TYPE_T type,
		       SMB_ACL_T theacl)
{
	const char *name = gf2_acl_xattr_name(type);
	TALLOC_CTX *frame = NULL;
	struct gf2_acl_entry *entries = NULL;
	uint8_t *buf = NULL;
	size_t n = 0;
	size_t len;
	int ret = -1;
	int err;

	if (name == NULL || theacl == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (type == SMB_ACL_TYPE_DEFAULT && theacl->count == 0) {
		/* No inheritable entries: no default ACL. */
		return gf2_sys_acl_delete_def_fd(handle, fsp);
	}
	frame = talloc_stackframe();

	err = gf2_acl_from_smb(theacl, frame, &entries, &n);
	if (err != 0) {
		goto out;
	}
	len = gf2_acl_xattr_size(n);
	buf = talloc_array(frame, uint8_t, len);
	if (buf == NULL) {
		err = ENOMEM;
		goto out;
	}
	err = gf2_acl_xattr_encode(entries, n, buf, len);
	if (err != 0) {
		DBG_NOTICE("%s of %s: %zu entries that are not a valid POSIX "
			   "ACL: %s\n", name, fsp_str_dbg(fsp), n,
			   strerror(err));
		goto out;
	}
	ret = smb_vfs_call_fsetxattr(handle, fsp, name, buf, len, 0);
	err = (ret == 0) ? 0 : errno;
	if (ret != 0) {
		DBG_DEBUG("%s of %s: %s\n", name, fsp_str_dbg(fsp),
			  strerror(err));
	}

out:
	TALLOC_FREE(frame);
	if (err != 0) {
		errno = err;
		return -1;
	}
	return 0;
}

int gf2_sys_acl_delete_def_fd(struct vfs_handle_struct *handle,
			      struct files_struct *fsp)
{
	int ret;

	ret = smb_vfs_call_fremovexattr(handle, fsp, GF2_ACL_XATTR_DEFAULT);
	if (ret == -1 && (gf2_acl_no_xattr(errno) || errno == ENOTSUP)) {
		/* Nothing to remove (libacl's acl_delete_def_file too). */
		return 0;
	}
	return ret;
}
