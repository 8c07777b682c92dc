/*
 * glusterfs2: the Samba release check (include/gf2_sambaver.h).
 *
 * Layer: core.
 */


#include <stddef.h>

#include "gf2_sambaver.h"

/* One decimal number of at most 6 digits at *s; *s moves past it. */
static bool parse_number(const char **s, unsigned *out)
{
	const char *p = *s;
	unsigned v = 0;
	int digits = 0;

	while (*p >= '0' && *p <= '9') {
		if (digits == 6) {
			return false;
		}
		v = v * 10 + (unsigned)(*p - '0');
		digits++;
		p++;
	}
	if (digits == 0) {
		return false;
	}
	*out = v;
	*s = p;
	return true;
}

bool gf2_samba_version_parse(const char *s, struct gf2_samba_version *v)
{
	struct gf2_samba_version r = { 0 };
	const char *p = s;

	if (s == NULL || v == NULL) {
		return false;
	}
	if (!parse_number(&p, &r.major) || *p++ != '.') {
		return false;
	}
	if (!parse_number(&p, &r.minor) || *p++ != '.') {
		return false;
	}
	if (!parse_number(&p, &r.release)) {
		return false;
	}
	/* "4.17.12.1" or "4.17.12x" with a digit after are not ours */
	if (*p == '.' || (*p >= '0' && *p <= '9')) {
		return false;
	}
	*v = r;
	return true;
}

enum gf2_samba_match gf2_samba_version_match(const char *built,
					     const char *running)
{
	struct gf2_samba_version b;
	struct gf2_samba_version r;

	if (!gf2_samba_version_parse(built, &b) ||
	    !gf2_samba_version_parse(running, &r)) {
		return GF2_SAMBA_UNKNOWN;
	}
	if (b.major != r.major || b.minor != r.minor) {
		return GF2_SAMBA_OTHER_SERIES;
	}
	if (b.release != r.release) {
		return GF2_SAMBA_SAME_SERIES;
	}
	return GF2_SAMBA_SAME;
}

bool gf2_samba_version_usable(enum gf2_samba_match m)
{
	return m == GF2_SAMBA_SAME || m == GF2_SAMBA_SAME_SERIES;
}
