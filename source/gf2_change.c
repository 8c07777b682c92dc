/*
 * glusterfs2: the change rules (see include/gf2_change.h).
 *
 * Layer: core.
 */

#include "gf2_change.h"

unsigned gf2_change_drops(enum gf2_change_kind kind)
{
	switch (kind) {
	case GF2_CHANGE_DATA:
		return GF2_DROP_DATA | GF2_DROP_STAT;
	case GF2_CHANGE_TIMES:
		return GF2_DROP_STAT;
	case GF2_CHANGE_ATTRS:
	case GF2_CHANGE_NAME:
		return GF2_DROP_PATH;
	case GF2_CHANGE_XATTR:
		return GF2_DROP_PATH | GF2_DROP_LISTS;
	case GF2_CHANGE_TREE:
		return GF2_DROP_TREE | GF2_DROP_LISTS;
	}
	/* a kind this table does not know: everything of the path */
	return GF2_DROP_TREE | GF2_DROP_LISTS;
}
