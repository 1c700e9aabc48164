/*
 * spec.c - loading and validating the YAML problem spec (see spec.h and
 * docs/spec.md).
 *
 * yamlx (common/yamlx.h) loads the file, checks the tree's shape (mapping
 * keys are unique scalars, strings are valid UTF-8 without NUL bytes,
 * nesting and size are bounded, aliases included) and types its scalars;
 * here one reader per top-level section validates its keys through field
 * tables and either builds the EvalBatch-form JSON the section maps to or
 * fills struct spec.  Every message names the node at fault by its start
 * mark (1-based line and column) and its key path.
 *
 * This file is the top of the loader: the load, the table of sections and
 * the kernel and tunables sections; the problem and shapes are
 * spec-problem.c, the sections on evaluation spec-evaluator.c, the proposer
 * spec-proposer.c, and spec-read.c below them all the field tables and
 * checks every section uses (spec-internal.h).  May use those, spec-exprs.c,
 * yamlx, mutate and common/; none of them calls back into this file.
 */
#include "spec.h"
#include "spec-internal.h"
#include "err.h"
#include "initdist.h"
#include "fileio.h"
#include "mutate.h"
#include "sbuf.h"
#include "xalloc.h"
#include "yamlx.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_MAX_BYTES   (1u << 20) /* the spec file */
#define SOURCE_MAX_BYTES (4u << 20) /* template and reference */

#define MAX_TUNABLES       64
#define MAX_TUNABLE_VALUES 4096
#define MAX_CONSTRAINTS    256
#define MAX_STARTS         64

#define SPEC_ROOT "a mapping with kernel, problem and shapes" /* what the document is */

/* ---- kernel ---- */

static const struct field kernel_fields[] = {
	FTEXT("name", 1, R_NAME),
	FPATH("template", 1),
	FPATH("reference", 1),
	FCUSTOM("markers", 0),
	FTEXT("build_options", 0, R_ANY),
};

static const struct field marker_fields[] = {
	FTEXT("start", 0, R_MARKER),
	FTEXT("end", 0, R_MARKER),
};

static int read_markers(struct ld *ld, const yaml_node_t *nd)
{
	const char *P = "kernel.markers";
	json_t *o = NULL;
	int rc = fld_load(ld, nd, P, marker_fields, ARRAY_SIZE(marker_fields), &o);

	if (!rc) {
		fld_text(o, "start", &ld->s->marker_start);
		fld_text(o, "end", &ld->s->marker_end);
	}
	if (!rc && !strcmp(ld->s->marker_start, ld->s->marker_end))
		rc = yamlx_fail(&ld->y, nd, KERR_INVALID, P, "start and end are both '%.40s'",
				ld->s->marker_start);
	json_decref(o);
	return rc;
}

/* Reads file (named by node nd at path) into *out; an empty file is an error. */
static int load_source(struct ld *ld, const yaml_node_t *nd, const char *path, const char *file,
		       char **out)
{
	char why[WHY_LEN];
	size_t len = 0;

	if (file_read(file, SOURCE_MAX_BYTES, out, &len, why, sizeof(why)))
		return yamlx_fail(&ld->y, nd, KERR_IO, path, "%s", why);
	if (!len)
		return yamlx_fail(&ld->y, nd, KERR_INVALID, path, "'%s' is empty", file);
	return 0;
}

static int check_blocks(struct ld *ld, const yaml_node_t *nd)
{
	struct spec *s = ld->s;
	struct blocks bl = { NULL, 0 };
	char why[WHY_LEN];
	int rc = 0;

	if (blocks_find(s->template_src, s->marker_start, s->marker_end, &bl, why, sizeof(why)))
		rc = yamlx_fail(&ld->y, nd, KERR_PARSE, "kernel.template", "%s: %s", yamlx_text(nd),
				why);
	else if (!bl.n)
		rc = yamlx_fail(&ld->y, nd, KERR_PARSE, "kernel.template", "%s: no %s marker",
				yamlx_text(nd), s->marker_start);
	blocks_release(&bl);
	return rc;
}

static int read_kernel(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	const yaml_node_t *markers;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, kernel_fields, ARRAY_SIZE(kernel_fields), &o);

	if (!rc) {
		fld_text(o, "name", &s->name);
		fld_text(o, "template", &s->template_path);
		fld_text(o, "reference", &s->reference_path);
		fld_text(o, "build_options", &s->build_options);
		markers = yamlx_map_get(&ld->y, nd, "markers");
		if (markers)
			rc = read_markers(ld, markers);
	}
	if (!rc)
		rc = load_source(ld, yamlx_map_get(&ld->y, nd, "template"), "kernel.template",
				 s->template_path, &s->template_src);
	if (!rc)
		rc = check_blocks(ld, yamlx_map_get(&ld->y, nd, "template"));
	if (!rc)
		rc = load_source(ld, yamlx_map_get(&ld->y, nd, "reference"), "kernel.reference",
				 s->reference_path, &s->reference_src);
	json_decref(o);
	return rc;
}

/* ---- tunables ---- */

static const char *const render_names[] = { "define", "options", NULL };

static const struct field tunable_fields[] = {
	FCUSTOM("params", 1),
	FCUSTOM("constraints", 0),
	FCUSTOM("starts", 0),
	FENUM("render", 0, render_names),
};

static int read_param(struct ld *ld, const yaml_node_t *nd, const char *path, struct tunable *t)
{
	char ipath[YAMLX_PATH_LEN];
	int rc = yamlx_need_list(&ld->y, nd, path, 1, MAX_TUNABLE_VALUES);

	if (rc)
		return rc;
	t->values = xcalloc(yamlx_list_size(nd), sizeof(*t->values));
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		yamlx_path_idx(ipath, path, i);
		rc = yamlx_get_int(&ld->y, yamlx_list_item(&ld->y, nd, i), ipath, INT64_MIN,
				   INT64_MAX, &t->values[i]);
		for (size_t j = 0; !rc && j < i; j++)
			if (t->values[j] == t->values[i])
				rc = yamlx_fail(&ld->y, yamlx_list_item(&ld->y, nd, i),
						KERR_INVALID, ipath, "%lld repeats %s[%zu]",
						(long long)t->values[i], t->name, j);
		t->nvalues = i + 1;
	}
	return rc;
}

static int read_params(struct ld *ld, const yaml_node_t *nd)
{
	const char *P = "tunables.params";
	struct spec *s = ld->s;
	char path[YAMLX_PATH_LEN];
	int rc = yamlx_need_map(&ld->y, nd, P, 1, MAX_TUNABLES);

	if (rc)
		return rc;
	s->tunables = xcalloc(yamlx_map_size(nd), sizeof(*s->tunables));
	for (size_t i = 0; !rc && i < yamlx_map_size(nd); i++) {
		const yaml_node_t *k = yamlx_map_key(&ld->y, nd, i);
		struct tunable *t = &s->tunables[s->ntunables];

		yamlx_path_key(path, P, yamlx_text(k));
		rc = spec_check_rule(ld, k, path, yamlx_text(k), R_IDENT);
		if (rc)
			break;
		t->name = xstrdup(yamlx_text(k));
		s->ntunables++;
		rc = read_param(ld, yamlx_map_value(&ld->y, nd, i), path, t);
	}
	return rc;
}

static int read_constraints(struct ld *ld, const yaml_node_t *nd)
{
	const char *P = "tunables.constraints";
	struct spec *s = ld->s;
	char path[YAMLX_PATH_LEN];
	json_t *e = NULL;
	int rc = yamlx_need_list(&ld->y, nd, P, 0, MAX_CONSTRAINTS);

	if (rc)
		return rc;
	s->constraints = xcalloc(yamlx_list_size(nd), sizeof(*s->constraints));
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		yamlx_path_idx(path, P, i);
		rc = read_expr(ld, yamlx_list_item(&ld->y, nd, i), path, 1, &e);
		if (!rc)
			s->constraints[s->nconstraints++] = xstrdup(json_string_value(e));
		json_decref(e);
		e = NULL;
	}
	return rc;
}

/*
 * tunables.starts: points the tuner measures first, each a mapping that
 * names every tunable once with a value from its list.  Whether a point
 * keeps the constraints is checked when the tuner opens (tune.c).
 */
static int read_starts(struct ld *ld, const yaml_node_t *nd)
{
	const char *P = "tunables.starts";
	struct spec *s = ld->s;
	char path[YAMLX_PATH_LEN], kpath[YAMLX_PATH_LEN];
	int rc = yamlx_need_list(&ld->y, nd, P, 0, MAX_STARTS);

	if (rc)
		return rc;
	s->starts = xcalloc(yamlx_list_size(nd) * s->ntunables + 1, sizeof(*s->starts));
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		const yaml_node_t *pt = yamlx_list_item(&ld->y, nd, i);
		int64_t *vals = s->starts + i * s->ntunables;
		char *have = xcalloc(s->ntunables + 1, 1);

		yamlx_path_idx(path, P, i);
		rc = yamlx_need_map(&ld->y, pt, path, 1, MAX_TUNABLES);
		/*
		 * A value its list lacks is not an error here: the tuner skips
		 * that start with a warning (tune_starts), so that narrowing a
		 * parameter's list does not mean editing the starts.
		 */
		for (size_t j = 0; !rc && j < yamlx_map_size(pt); j++) {
			const yaml_node_t *k = yamlx_map_key(&ld->y, pt, j);
			const char *name = yamlx_text(k);
			int t = spec_tunable_index(s, name, strlen(name));

			yamlx_path_key(kpath, path, name);
			/* a key given twice is refused by the YAML reader already */
			if (t < 0) {
				rc = yamlx_fail(&ld->y, k, KERR_INVALID, kpath,
						"'%s' is not in tunables.params", name);
				break;
			}
			have[t] = 1;
			rc = yamlx_get_int(&ld->y, yamlx_map_value(&ld->y, pt, j), kpath, INT64_MIN,
					   INT64_MAX, &vals[t]);
		}
		for (size_t t = 0; !rc && t < s->ntunables; t++)
			if (!have[t])
				rc = yamlx_fail(&ld->y, pt, KERR_INVALID, path, "no value for %s",
						s->tunables[t].name);
		free(have);
		if (!rc)
			s->nstarts++;
	}
	return rc;
}

static int read_tunables(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	const yaml_node_t *c;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, tunable_fields, ARRAY_SIZE(tunable_fields), &o);

	if (!rc)
		ld->s->render = fld_enum(o, "render", render_names, RENDER_DEFINE);
	if (!rc)
		rc = read_params(ld, yamlx_map_get(&ld->y, nd, "params"));
	c = rc ? NULL : yamlx_map_get(&ld->y, nd, "constraints");
	if (c)
		rc = read_constraints(ld, c);
	c = rc ? NULL : yamlx_map_get(&ld->y, nd, "starts");
	if (c)
		rc = read_starts(ld, c);
	json_decref(o);
	return rc;
}

/* ---- the document ---- */

static const struct section {
	const char *key;
	int required;
	int (*read)(struct ld *ld, const yaml_node_t *nd, const char *path);
} sections[] = {
	/* In this order: problem needs kernel.name, session's default needs it too. */
	{ "kernel", 1, read_kernel },
	{ "problem", 1, read_problem },
	{ "shapes", 1, read_shapes },
	{ "tunables", 0, read_tunables },
	{ "correctness", 0, read_correctness },
	{ "measurement", 0, read_measurement },
	{ "limits", 0, read_limits },
	{ "device", 0, read_device },
	{ "evaluator", 0, read_evaluator },
	{ "session", 0, read_session },
	{ "batch", 0, read_batch },
	{ "proposer", 0, read_proposer },
	{ "cache", 0, read_cache },
};

static int read_document(struct ld *ld, const yaml_node_t *root)
{
	struct field keys[ARRAY_SIZE(sections)];
	int rc;

	for (size_t i = 0; i < ARRAY_SIZE(sections); i++)
		keys[i] = (struct field)FCUSTOM(sections[i].key, sections[i].required);
	if (root->type != YAML_MAPPING_NODE)
		return yamlx_want(&ld->y, root, "", SPEC_ROOT);
	rc = yamlx_check(&ld->y, root);
	if (!rc)
		rc = fld_known(ld, root, "", keys, ARRAY_SIZE(keys));
	if (!rc)
		rc = fld_read(ld, root, "", keys, ARRAY_SIZE(keys), NULL);
	for (size_t i = 0; !rc && i < ARRAY_SIZE(sections); i++) {
		const yaml_node_t *v = yamlx_map_get(&ld->y, root, sections[i].key);

		if (v)
			rc = sections[i].read(ld, v, sections[i].key);
	}
	if (!rc)
		rc = check_exprs(ld);
	if (!rc && !ld->s->output_dir)
		ld->s->output_dir = xasprintf("%s/runs/%s", ld->s->dir, ld->s->name);
	return rc;
}

/* s->dir: the absolute folder of the spec file. */
static int spec_dir(struct spec *s, const char *path, char *msg, size_t n)
{
	const char *slash = strrchr(path, '/');
	char *d = !slash          ? xstrdup(".")
		  : slash == path ? xstrdup("/")
				  : xstrndup(path, (size_t)(slash - path));
	int rc = 0;

	s->dir = realpath(d, NULL);
	if (!s->dir)
		rc = kerr_set(msg, n, KERR_IO, "%s:1:1: document: cannot resolve '%s': %s", path, d,
			      strerror(errno));
	free(d);
	return rc;
}

static void spec_defaults(struct spec *s)
{
	s->marker_start = xstrdup("EVOLVE-BLOCK-START");
	s->marker_end = xstrdup("EVOLVE-BLOCK-END");
	s->build_options = xstrdup("");
	s->render = RENDER_DEFINE;
	s->backend = BACKEND_LOCAL;
	s->max_rounds = 10;
	s->max_evaluations = 200;
	s->stagnation_rounds = 3;
	s->confirm_passes = 3;
	s->confirm_candidates = 4;
	s->cache_enabled = 1;
	s->cache_max_age_days = 30;
	s->variants_per_round = 8;
	s->top_k = 3;
	s->max_active_lineages = 4;
	s->proposer = PROPOSER_TUNE;
	s->seed = 1;
	s->proposer_conf = json_pack("{s:s, s:i}", "kind", "tune", "seed", 1);
	proposer_defaults(s);
}

int spec_load(struct spec *s, const char *path, char *msg, size_t n)
{
	struct ld ld = { .s = s };
	char why[WHY_LEN];
	size_t len = 0;
	int rc;

	memset(s, 0, sizeof(*s));
	yamlx_init(&ld.y, path, msg, n);
	spec_defaults(s);
	s->path = xstrdup(path);
	if (file_read(path, SPEC_MAX_BYTES, &s->text, &len, why, sizeof(why)))
		return kerr_set(msg, n, KERR_IO, "%s:1:1: document: %s", path, why);
	rc = spec_dir(s, path, msg, n);
	if (rc)
		return rc;
	rc = yamlx_load(&ld.y, s->text, len, "a spec", SPEC_ROOT);
	if (!rc)
		rc = read_document(&ld, yamlx_root(&ld.y));
	marks_release(&ld);
	yamlx_release(&ld.y);
	return rc;
}

void spec_release(struct spec *s)
{
	char **strs[] = {
		&s->path,
		&s->dir,
		&s->text,
		&s->name,
		&s->template_path,
		&s->template_src,
		&s->reference_path,
		&s->reference_src,
		&s->marker_start,
		&s->marker_end,
		&s->build_options,
		&s->semantics,
		&s->evalpod,
		&s->storage,
		&s->output_dir,
		&s->s3.endpoint,
		&s->s3.region,
		&s->s3.profile,
		&s->s3.ca_file,
		&s->kube.kubeconfig,
		&s->kube.context,
		&s->kube.namespace,
		&s->kube.job_template,
		&s->kube.image,
		&s->kube.image_pull_policy,
		&s->kube.service_account,
		&s->kube.priority_class,
		&s->kube.queue,
		&s->kube.gpu_resource,
		&s->kube.workload_priority_class,
		&s->github.repo,
		&s->github.token_env,
		&s->github.api_url,
		&s->github.ca_file,
	};
	json_t **objs[] = { &s->problem,          &s->shapes,
			    &s->correctness,      &s->measurement,
			    &s->limits,           &s->device,
			    &s->proposer_conf,    &s->kube.node_selector,
			    &s->kube.tolerations, &s->github.labels };

	for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
		free(*strs[i]);
	for (size_t i = 0; i < ARRAY_SIZE(objs); i++)
		json_decref(*objs[i]);
	for (size_t i = 0; i < s->ntunables; i++) {
		free(s->tunables[i].name);
		free(s->tunables[i].values);
	}
	free(s->tunables);
	for (size_t i = 0; i < s->nconstraints; i++)
		free(s->constraints[i]);
	free(s->constraints);
	free(s->starts);
	proposer_release(s);
	memset(s, 0, sizeof(*s));
}
