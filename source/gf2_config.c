/*
 * glusterfs2: per-share configuration, read and validated once per tree
 * connect.
 *
 * Layer: glue.
 *
 * The options with a safe default come from the table of gf2_options.c:
 * a bad value is logged with the share, the option and the reason, and
 * the default is used.  The volume and its volfile servers have no safe
 * default: a bad value refuses the tree connect.
 */

#include "includes.h"
#include "smbd/smbd.h"
#include "gf2_vfs.h"

#undef DBGC_CLASS
#define DBGC_CLASS DBGC_VFS

static void gf2_config_table(int snum, const char *service,
			     struct gf2_share_options *o)
{
	char err[GF2_ERRLEN];
	char def[64];
	size_t i;

	gf2_share_options_default(o);
	for (i = 0; i < gf2_share_nopts; i++) {
		const struct gf2_opt_def *d = &gf2_share_opts[i];
		const char *s = lp_parm_const_string(snum, GF2_MODULE_NAME,
						     d->name, NULL);

		if (s == NULL) {
			continue;
		}
		if (gf2_share_option_set(o, d, s, err, sizeof(err)) != 0) {
			gf2_opt_format_default(d, def, sizeof(def));
			DBG_ERR("share [%s]: glusterfs2:%s = '%s': %s; "
				"using %s\n", service, d->name, s, err, def);
		}
	}
	if (gf2_share_options_check(o, err, sizeof(err)) != 0) {
		DBG_ERR("share [%s]: %s\n", service, err);
	}
}

int gf2_config_load(TALLOC_CTX *mem_ctx, int snum, const char *service,
		    struct gf2_share_config *cfg)
{
	const struct loadparm_substitution *lp_sub =
		loadparm_s3_global_substitution();
	char err[GF2_ERRLEN];
	char *spec = NULL;
	int ret;

	cfg->volname = lp_parm_const_string(snum, GF2_MODULE_NAME, "volume",
					    service);
	if (!gf2_valid_volume_name(cfg->volname, err, sizeof(err))) {
		DBG_ERR("share [%s]: glusterfs2:volume: %s; refusing the "
			"tree connect\n", service, err);
		errno = EINVAL;
		return -1;
	}

	spec = lp_parm_substituted_string(mem_ctx, lp_sub, snum,
					  GF2_MODULE_NAME, "volfile_server",
					  GF2_DEFAULT_VOLFILE_SERVER);
	if (spec == NULL) {
		errno = ENOMEM;
		return -1;
	}
	ret = gf2_parse_volfile_servers(spec, cfg->servers,
					ARRAY_SIZE(cfg->servers),
					&cfg->num_servers, err, sizeof(err));
	if (ret != 0) {
		DBG_ERR("share [%s]: glusterfs2:volfile_server '%s': %s; "
			"refusing the tree connect\n", service, spec, err);
		errno = EINVAL;
		return -1;
	}

	cfg->logfile = lp_parm_substituted_string(mem_ctx, lp_sub, snum,
						  GF2_MODULE_NAME, "logfile",
						  NULL);
	if (cfg->logfile != NULL && cfg->logfile[0] == '\0') {
		cfg->logfile = NULL;
	}

	gf2_config_table(snum, service, &cfg->o);
	return 0;
}

/* The prefetch part of a share's options, as the data cache takes it. */
void gf2_config_prefetch(const struct gf2_share_options *o,
			 struct gf2_pf_config *pf)
{
	pf->enabled = o->prefetch;
	pf->strict = o->pf_coherence == GF2_COHERENCE_STRICT;
	pf->max_memory = o->pf_max_memory;
	pf->max_age_ms = o->pf_max_age_ms;
	pf->ra.init_window = o->pf_init_window;
	pf->ra.max_window = o->pf_max_window;
	pf->ra.direct_min = o->pf_direct_size;
	pf->ra.min_window = MIN(GF2_RA_DEFAULT_MIN, pf->ra.init_window);
	pf->ra.streams = o->pf_streams;
	/*
	 * Read ahead no further than a stream consumes in half the age
	 * bound, so that prefetched data is served before it expires.
	 */
	pf->ra.max_lead_ms = MAX(pf->max_age_ms / 2, 1);
	gf2_ra_config_sanitize(&pf->ra);
}
