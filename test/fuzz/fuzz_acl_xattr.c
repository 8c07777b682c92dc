/*
 * Fuzz harness: the POSIX ACL xattr codec (source/gf2_acl_xattr.c).
 *
 * Input, read two ways:
 *   1. as an xattr value: decoding it never crashes; a decoded value has
 *      exactly (len - 4) / 8 entries of known tags, rwx permissions and
 *      ids only where the tag has one; once sorted and valid, encoding it
 *      and decoding the result gives the same entries (decode(encode(x))
 *      == x); gf2_acl_xattr_count agrees with decode;
 *   2. as an array of entries (byte 0: how many, then 8 bytes each, with
 *      tags and ids folded onto the interesting values): if encode
 *      accepts them, decode(encode(x)) == sort(x) and the result is
 *      valid; encode into a buffer one byte short fails with ERANGE and
 *      writes nothing;
 *   3. as a mode: gf2_acl_from_mode gives a valid three-entry ACL with
 *      the mode's bits, which round-trips.
 */

#include <errno.h>
#include <stdbool.h>

#include "gf2_acl_xattr.h"
#include "fuzz.h"

static const uint16_t tags[] = {
	GF2_ACL_USER_OBJ, GF2_ACL_USER, GF2_ACL_GROUP_OBJ, GF2_ACL_GROUP,
	GF2_ACL_MASK, GF2_ACL_OTHER, 0, 0x40,
};

static bool named(uint16_t tag)
{
	return tag == GF2_ACL_USER || tag == GF2_ACL_GROUP;
}

static bool known(uint16_t tag)
{
	size_t i;

	for (i = 0; i < 6; i++) {
		if (tags[i] == tag) {
			return true;
		}
	}
	return false;
}

static bool same(const struct gf2_acl_entry *a,
		 const struct gf2_acl_entry *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (a[i].tag != b[i].tag || a[i].perm != b[i].perm ||
		    a[i].id != b[i].id) {
			return false;
		}
	}
	return true;
}

/* encode, then decode the result: must give back entries[] (sorted). */
static void roundtrip(struct gf2_acl_entry *e, size_t n)
{
	size_t len = gf2_acl_xattr_size(n);
	uint8_t *buf = malloc(len);
	uint8_t *shortbuf = malloc(len);
	struct gf2_acl_entry *back = calloc(n + 1, sizeof(*back));
	size_t count = 0;
	int ret;

	FUZZ_CHECK(buf != NULL && shortbuf != NULL && back != NULL);
	ret = gf2_acl_xattr_encode(e, n, buf, len);
	if (ret == 0) {
		/* e is sorted in place now */
		FUZZ_CHECK(gf2_acl_valid(e, n) == 0);
		ret = gf2_acl_xattr_decode(buf, len, back, n, &count);
		FUZZ_CHECK(ret == 0);
		FUZZ_CHECK(count == n);
		FUZZ_CHECK(same(e, back, n));
		/* one byte short: ERANGE, nothing written */
		memset(shortbuf, 0xa5, len);
		ret = gf2_acl_xattr_encode(e, n, shortbuf, len - 1);
		FUZZ_CHECK(ret == ERANGE);
		for (size_t i = 0; i < len; i++) {
			FUZZ_CHECK(shortbuf[i] == 0xa5);
		}
	} else {
		FUZZ_CHECK(ret == EINVAL || ret == E2BIG);
	}
	free(buf);
	free(shortbuf);
	free(back);
}

static void as_xattr(const uint8_t *data, size_t size, size_t max)
{
	struct gf2_acl_entry *e = calloc(max + 1, sizeof(*e));
	size_t count = 12345;
	size_t count2 = 0;
	size_t i;
	int ret;
	int cret;

	FUZZ_CHECK(e != NULL);
	ret = gf2_acl_xattr_decode(data, size, e, max, &count);
	cret = gf2_acl_xattr_count(data, size, &count2);
	if (ret != 0) {
		FUZZ_CHECK(ret == EINVAL || ret == E2BIG || ret == ERANGE);
		if (cret == 0) {
			/* the frame is fine: too many for max, or bad entries */
			FUZZ_CHECK(ret == ERANGE || ret == EINVAL);
			if (ret == ERANGE) {
				FUZZ_CHECK(count2 > max);
			}
		}
		free(e);
		return;
	}
	FUZZ_CHECK(cret == 0);
	FUZZ_CHECK(size >= 4 && (size - 4) % 8 == 0);
	FUZZ_CHECK(count == (size - 4) / 8);
	FUZZ_CHECK(count == count2);
	FUZZ_CHECK(count <= max);
	for (i = 0; i < count; i++) {
		FUZZ_CHECK(known(e[i].tag));
		FUZZ_CHECK((e[i].perm & ~GF2_ACL_PERMS) == 0);
		if (named(e[i].tag)) {
			FUZZ_CHECK(e[i].id != GF2_ACL_UNDEFINED_ID);
		} else {
			FUZZ_CHECK(e[i].id == GF2_ACL_UNDEFINED_ID);
		}
	}
	gf2_acl_sort(e, count);
	for (i = 1; i < count; i++) {
		FUZZ_CHECK(e[i - 1].tag < e[i].tag ||
			   (e[i - 1].tag == e[i].tag &&
			    e[i - 1].id <= e[i].id));
	}
	if (count > 0 && gf2_acl_valid(e, count) == 0) {
		roundtrip(e, count);
	}
	free(e);
}

static void as_entries(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	size_t n = fuzz_u8(&in) % 24;
	struct gf2_acl_entry e[24];
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t t = fuzz_u8(&in);
		uint8_t p = fuzz_u8(&in);
		uint8_t idsel = fuzz_u8(&in);

		e[i].tag = tags[t % 8];
		e[i].perm = (p & 0x80) ? p : (p & GF2_ACL_PERMS);
		switch (idsel % 4) {
		case 0:
			e[i].id = GF2_ACL_UNDEFINED_ID;
			break;
		case 1:
			e[i].id = idsel >> 2;		/* small, collisions */
			break;
		default:
			e[i].id = fuzz_u32(&in);
			break;
		}
	}
	roundtrip(e, n);
}

/* The ACL of a mode: three valid entries carrying the mode's bits. */
static void from_mode(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint32_t mode = fuzz_u32(&in);
	struct gf2_acl_entry e[3];

	FUZZ_CHECK(gf2_acl_from_mode(mode, e) == 3);
	FUZZ_CHECK(e[0].perm == ((mode >> 6) & 7));
	FUZZ_CHECK(e[1].perm == ((mode >> 3) & 7));
	FUZZ_CHECK(e[2].perm == (mode & 7));
	FUZZ_CHECK(gf2_acl_valid(e, 3) == 0);
	roundtrip(e, 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = NULL;
	size_t max;

	/* exact-size heap copy: ASan catches any read past the end */
	copy = malloc(size > 0 ? size : 1);
	if (copy == NULL) {
		return 0;
	}
	memcpy(copy, data, size);
	max = size > 0 ? (data[size - 1] & 0x80 ? data[size - 1] & 0x1f :
			  GF2_ACL_MAX_ENTRIES) : GF2_ACL_MAX_ENTRIES;
	as_xattr(copy, size, max);
	as_entries(copy, size);
	from_mode(copy, size);
	free(copy);
	return 0;
}
