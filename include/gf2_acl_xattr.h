/*
 * glusterfs2: the Linux POSIX ACL extended attribute format.
 *
 * Layer: core.
 *
 * Pure code: bytes in, entries out (and back).  No Samba, gfapi or
 * allocation; unit-tested alone (test/unit/test_acl_xattr.c).  The VFS
 * glue (source/gf2_acl.c) converts entries to and from smbd's SMB_ACL_T.
 *
 * Gluster stores POSIX ACLs in the xattrs "system.posix_acl_access" and
 * "system.posix_acl_default" of the brick file systems, in the format of
 * the Linux kernel (include/uapi/linux/posix_acl_xattr.h), all fields
 * little-endian:
 *
 *   offset 0   u32 version (2)
 *   offset 4   entries, 8 bytes each:
 *              u16 tag   (USER_OBJ 0x01, USER 0x02, GROUP_OBJ 0x04,
 *                         GROUP 0x08, MASK 0x10, OTHER 0x20)
 *              u16 perm  (READ 4, WRITE 2, EXECUTE 1)
 *              u32 id    (uid or gid for USER and GROUP, else
 *                         0xffffffff)
 *
 * A valid ACL (what the kernel accepts, and so what a brick stores) has
 * exactly one USER_OBJ, GROUP_OBJ and OTHER entry, at most one MASK, a
 * MASK whenever there is a USER or GROUP entry, no two USER or GROUP
 * entries with the same id, and its entries sorted by tag, then id.
 */

#ifndef GF2_ACL_XATTR_H
#define GF2_ACL_XATTR_H

#include <stddef.h>
#include <stdint.h>

#define GF2_ACL_XATTR_ACCESS "system.posix_acl_access"
#define GF2_ACL_XATTR_DEFAULT "system.posix_acl_default"

#define GF2_ACL_XATTR_VERSION 2
#define GF2_ACL_XATTR_HEADER_SIZE 4
#define GF2_ACL_XATTR_ENTRY_SIZE 8

/* Tags, with the values of the xattr format. */
#define GF2_ACL_USER_OBJ 0x01
#define GF2_ACL_USER 0x02
#define GF2_ACL_GROUP_OBJ 0x04
#define GF2_ACL_GROUP 0x08
#define GF2_ACL_MASK 0x10
#define GF2_ACL_OTHER 0x20

/* Permission bits (the same values as SMB_ACL_READ/WRITE/EXECUTE). */
#define GF2_ACL_READ 0x04
#define GF2_ACL_WRITE 0x02
#define GF2_ACL_EXECUTE 0x01
#define GF2_ACL_PERMS (GF2_ACL_READ | GF2_ACL_WRITE | GF2_ACL_EXECUTE)

/* The id of entries that have none (USER_OBJ, GROUP_OBJ, MASK, OTHER). */
#define GF2_ACL_UNDEFINED_ID 0xffffffffU

/*
 * The most entries one xattr value can hold: Linux caps a value at
 * XATTR_SIZE_MAX (64 KiB).  Brick file systems may hold fewer (ext4 keeps
 * all xattrs of an inode in one block); they say so with an error.
 */
#define GF2_ACL_MAX_ENTRIES \
	((65536 - GF2_ACL_XATTR_HEADER_SIZE) / GF2_ACL_XATTR_ENTRY_SIZE)

struct gf2_acl_entry {
	uint16_t tag;		/* GF2_ACL_USER_OBJ ... GF2_ACL_OTHER */
	uint16_t perm;		/* GF2_ACL_READ | WRITE | EXECUTE */
	uint32_t id;		/* uid (USER), gid (GROUP) or UNDEFINED_ID */
};

/* Size of the xattr value of an ACL with count entries. */
size_t gf2_acl_xattr_size(size_t count);

/*
 * The number of entries an xattr value holds, checking only its frame.
 * Returns 0, or EINVAL (shorter than the header, not a whole number of
 * entries, version other than 2) or E2BIG (more than
 * GF2_ACL_MAX_ENTRIES).
 */
int gf2_acl_xattr_count(const void *buf, size_t len, size_t *count);

/*
 * Decode an xattr value into entries[0 .. *count), in the order stored.
 * Returns 0, an error of gf2_acl_xattr_count, ERANGE (more than max
 * entries), or EINVAL (an unknown tag, permission bits other than rwx, a
 * USER or GROUP entry with the undefined id).  The ids of entries without
 * one are returned as GF2_ACL_UNDEFINED_ID whatever is stored.  Nothing
 * else is checked: a value the kernel would refuse still decodes, so
 * that smbd can show what is there.
 */
int gf2_acl_xattr_decode(const void *buf, size_t len,
			 struct gf2_acl_entry *entries, size_t max,
			 size_t *count);

/* Sort entries into the kernel's order: by tag, then by id. */
void gf2_acl_sort(struct gf2_acl_entry *entries, size_t count);

/*
 * 0 if sorted entries form a valid ACL (see the top of this file), else
 * EINVAL.  An empty ACL is not valid (remove the xattr instead).
 */
int gf2_acl_valid(const struct gf2_acl_entry *entries, size_t count);

/*
 * Encode entries as an xattr value of gf2_acl_xattr_size(count) bytes.
 * The entries are sorted in place first, then checked with
 * gf2_acl_valid.  Returns 0, EINVAL (not a valid ACL), E2BIG (more than
 * GF2_ACL_MAX_ENTRIES) or ERANGE (buflen too small); buf is written only
 * on success.
 */
int gf2_acl_xattr_encode(struct gf2_acl_entry *entries, size_t count,
			 void *buf, size_t buflen);

/*
 * The three-entry ACL equivalent to the permission bits of mode (what a
 * file without an access ACL has): USER_OBJ, GROUP_OBJ, OTHER.
 * Returns 3.
 */
size_t gf2_acl_from_mode(uint32_t mode, struct gf2_acl_entry entries[3]);

#endif /* GF2_ACL_XATTR_H */
