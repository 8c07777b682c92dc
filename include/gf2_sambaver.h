/*
 * glusterfs2: is the running smbd one the module was compiled for?
 *
 * Layer: core.
 *
 * The module is compiled against the headers of one Samba release: the
 * layouts of smbd's structures (connection_struct, files_struct,
 * vfs_handle_struct, the function table) are those of that release
 * series.  Samba changes them between series (4.19, 4.20 and 4.21 share
 * VFS interface 49, so smbd's own interface check does not tell them
 * apart) and keeps them within one (docs/samba-versions.md, "Release
 * series and Debian revisions").  The module compares the version string
 * of the smbd that loaded it (samba_version_string(), "4.17.12-Debian")
 * with the one it was compiled for, before smbd hands it any of those
 * structures.
 */

#ifndef GF2_SAMBAVER_H
#define GF2_SAMBAVER_H

#include <stdbool.h>

struct gf2_samba_version {
	unsigned major;
	unsigned minor;
	unsigned release;
};

enum gf2_samba_match {
	/* same major.minor.release */
	GF2_SAMBA_SAME = 0,
	/* same series (major.minor), another patch release */
	GF2_SAMBA_SAME_SERIES,
	/* another series: the structures may differ */
	GF2_SAMBA_OTHER_SERIES,
	/* a version string that is not MAJOR.MINOR.RELEASE[suffix] */
	GF2_SAMBA_UNKNOWN,
};

/*
 * Parse "MAJOR.MINOR.RELEASE" followed by nothing or by a suffix that
 * does not start with a digit or a dot ("4.17.12-Debian",
 * "4.25.0rc1").  false: not of that form (or a number too large).
 */
bool gf2_samba_version_parse(const char *s, struct gf2_samba_version *v);

/*
 * How the running smbd's version string relates to the one the module
 * was compiled for.  GF2_SAMBA_UNKNOWN when either does not parse.
 */
enum gf2_samba_match gf2_samba_version_match(const char *built,
					     const char *running);

/* Whether a module compiled for built may serve under running. */
bool gf2_samba_version_usable(enum gf2_samba_match m);

#endif
