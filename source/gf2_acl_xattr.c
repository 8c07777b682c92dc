/*
 * glusterfs2: the Linux POSIX ACL xattr format (pure C).
 * See include/gf2_acl_xattr.h for the layout and the validity rules.
 *
 * Layer: core.
 */

#include "gf2_acl_xattr.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) |
	       ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = v >> 24;
}

static bool tag_is_named(uint16_t tag)
{
	return tag == GF2_ACL_USER || tag == GF2_ACL_GROUP;
}

static bool tag_is_known(uint16_t tag)
{
	switch (tag) {
	case GF2_ACL_USER_OBJ:
	case GF2_ACL_USER:
	case GF2_ACL_GROUP_OBJ:
	case GF2_ACL_GROUP:
	case GF2_ACL_MASK:
	case GF2_ACL_OTHER:
		return true;
	default:
		return false;
	}
}

size_t gf2_acl_xattr_size(size_t count)
{
	return GF2_ACL_XATTR_HEADER_SIZE + count * GF2_ACL_XATTR_ENTRY_SIZE;
}

int gf2_acl_xattr_count(const void *buf, size_t len, size_t *count)
{
	size_t n;

	if (buf == NULL || len < GF2_ACL_XATTR_HEADER_SIZE) {
		return EINVAL;
	}
	if ((len - GF2_ACL_XATTR_HEADER_SIZE) % GF2_ACL_XATTR_ENTRY_SIZE != 0) {
		return EINVAL;
	}
	if (get_le32(buf) != GF2_ACL_XATTR_VERSION) {
		return EINVAL;
	}
	n = (len - GF2_ACL_XATTR_HEADER_SIZE) / GF2_ACL_XATTR_ENTRY_SIZE;
	if (n > GF2_ACL_MAX_ENTRIES) {
		return E2BIG;
	}
	*count = n;
	return 0;
}

int gf2_acl_xattr_decode(const void *buf, size_t len,
			 struct gf2_acl_entry *entries, size_t max,
			 size_t *count)
{
	const uint8_t *p = NULL;
	size_t n = 0;
	size_t i;
	int err;

	err = gf2_acl_xattr_count(buf, len, &n);
	if (err != 0) {
		return err;
	}
	if (n > max) {
		return ERANGE;
	}

	p = (const uint8_t *)buf + GF2_ACL_XATTR_HEADER_SIZE;
	for (i = 0; i < n; i++, p += GF2_ACL_XATTR_ENTRY_SIZE) {
		struct gf2_acl_entry e = {
			.tag = get_le16(p),
			.perm = get_le16(p + 2),
			.id = get_le32(p + 4),
		};

		if (!tag_is_known(e.tag)) {
			return EINVAL;
		}
		if ((e.perm & ~GF2_ACL_PERMS) != 0) {
			return EINVAL;
		}
		if (!tag_is_named(e.tag)) {
			e.id = GF2_ACL_UNDEFINED_ID;
		} else if (e.id == GF2_ACL_UNDEFINED_ID) {
			return EINVAL;
		}
		entries[i] = e;
	}
	*count = n;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct gf2_acl_entry *x = a;
	const struct gf2_acl_entry *y = b;

	if (x->tag != y->tag) {
		return x->tag < y->tag ? -1 : 1;
	}
	if (x->id != y->id) {
		return x->id < y->id ? -1 : 1;
	}
	return 0;
}

void gf2_acl_sort(struct gf2_acl_entry *entries, size_t count)
{
	if (count > 1) {
		qsort(entries, count, sizeof(entries[0]), entry_cmp);
	}
}

int gf2_acl_valid(const struct gf2_acl_entry *entries, size_t count)
{
	size_t n_user_obj = 0, n_group_obj = 0, n_other = 0, n_mask = 0;
	size_t n_named = 0;
	size_t i;

	if (count == 0 || count > GF2_ACL_MAX_ENTRIES) {
		return EINVAL;
	}
	for (i = 0; i < count; i++) {
		const struct gf2_acl_entry *e = &entries[i];

		if (i > 0 && entry_cmp(&entries[i - 1], e) >= 0) {
			/* unsorted, or a repeated (tag, id) */
			return EINVAL;
		}
		if ((e->perm & ~GF2_ACL_PERMS) != 0) {
			return EINVAL;
		}
		switch (e->tag) {
		case GF2_ACL_USER_OBJ:
			n_user_obj++;
			break;
		case GF2_ACL_GROUP_OBJ:
			n_group_obj++;
			break;
		case GF2_ACL_OTHER:
			n_other++;
			break;
		case GF2_ACL_MASK:
			n_mask++;
			break;
		case GF2_ACL_USER:
		case GF2_ACL_GROUP:
			if (e->id == GF2_ACL_UNDEFINED_ID) {
				return EINVAL;
			}
			n_named++;
			break;
		default:
			return EINVAL;
		}
		if (!tag_is_named(e->tag) && e->id != GF2_ACL_UNDEFINED_ID) {
			return EINVAL;
		}
	}
	if (n_user_obj != 1 || n_group_obj != 1 || n_other != 1 ||
	    n_mask > 1) {
		return EINVAL;
	}
	if (n_named > 0 && n_mask == 0) {
		return EINVAL;
	}
	return 0;
}

int gf2_acl_xattr_encode(struct gf2_acl_entry *entries, size_t count,
			 void *buf, size_t buflen)
{
	uint8_t *p = NULL;
	size_t i;
	int err;

	if (count > GF2_ACL_MAX_ENTRIES) {
		return E2BIG;
	}
	if (buf == NULL || buflen < gf2_acl_xattr_size(count)) {
		return ERANGE;
	}
	for (i = 0; i < count; i++) {
		/* Whatever the caller left in the id of an unnamed entry. */
		if (!tag_is_named(entries[i].tag)) {
			entries[i].id = GF2_ACL_UNDEFINED_ID;
		}
	}
	gf2_acl_sort(entries, count);
	err = gf2_acl_valid(entries, count);
	if (err != 0) {
		return err;
	}

	p = buf;
	put_le32(p, GF2_ACL_XATTR_VERSION);
	p += GF2_ACL_XATTR_HEADER_SIZE;
	for (i = 0; i < count; i++, p += GF2_ACL_XATTR_ENTRY_SIZE) {
		put_le16(p, entries[i].tag);
		put_le16(p + 2, entries[i].perm);
		put_le32(p + 4, entries[i].id);
	}
	return 0;
}

size_t gf2_acl_from_mode(uint32_t mode, struct gf2_acl_entry entries[3])
{
	entries[0] = (struct gf2_acl_entry) {
		.tag = GF2_ACL_USER_OBJ,
		.perm = (mode >> 6) & GF2_ACL_PERMS,
		.id = GF2_ACL_UNDEFINED_ID,
	};
	entries[1] = (struct gf2_acl_entry) {
		.tag = GF2_ACL_GROUP_OBJ,
		.perm = (mode >> 3) & GF2_ACL_PERMS,
		.id = GF2_ACL_UNDEFINED_ID,
	};
	entries[2] = (struct gf2_acl_entry) {
		.tag = GF2_ACL_OTHER,
		.perm = mode & GF2_ACL_PERMS,
		.id = GF2_ACL_UNDEFINED_ID,
	};
	return 3;
}
