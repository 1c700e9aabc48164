/*
 * batch.c - parsing and validating EvalBatch documents (see batch.h and
 * docs/evalbatch.md).
 *
 * The parser is a table of stages, one per top-level section, each reading
 * its keys through jsonx so that every message starts with the JSON path at
 * fault.  Every count in struct batch is set right after its array is
 * allocated zeroed, so batch_release() can free a half-filled struct.
 *
 * This file holds the document and every section but one; the problem
 * section (buffers, scalars, launch plans) is batch-problem.c, and the typed
 * readers all sections use are batch-read.c (batch-internal.h).  May use
 * those two, common/ (jsonx, err, xalloc) and expr.h.
 */
#include "batch-internal.h"
#include "defines.h"
#include "err.h"
#include "jsonx.h"
#include "xalloc.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MAX_SHAPES       64
#define MAX_SHAPE_VALUES 256
#define MAX_VARIANTS     4096
#define MIN_SEEDS        3
#define MAX_SEEDS        64
#define MAX_ARTIFACTS    64

/* ---- device types ---- */

static const char *const device_type_names[] = { "any", "gpu", "cpu", "accelerator" };

/* ---- measurement ---- */

/* In enum flush_kind's order. */
static const char *const flush_kind_names[] = { "auto", "read" };

/* ---- shapes ---- */

static int parse_shape_values(json_t *o, const char *path, struct shape_spec *s, char *msg,
			      size_t n)
{
	char vpath[PATH_LEN], kpath[PATH_LEN];
	const char *key;
	json_t *values, *v;
	int64_t x = 0;
	int rc = jx_obj(o, path, "values", JX_REQUIRED, &values, msg, n);

	if (rc)
		return rc;
	if (json_object_size(values) > MAX_SHAPE_VALUES)
		return kerr_set(msg, n, KERR_RANGE, "%s.values: has %zu names, at most %d", path,
				json_object_size(values), MAX_SHAPE_VALUES);
	path_fmt(vpath, "%s.values", path);
	json_object_foreach (values, key, v) {
		path_fmt(kpath, "%s.%s", vpath, key);
		rc = check_name(key, NK_IDENT, kpath, msg, n);
		if (!rc)
			rc = jx_int(values, vpath, key, JX_REQUIRED, INT64_MIN, INT64_MAX, &x, msg,
				    n);
		if (rc)
			return rc;
		expr_vars_set(&s->vars, key, x);
	}
	return 0;
}

static int parse_shape(struct batch *b, size_t i, json_t *o, const char *path, char *msg, size_t n)
{
	static const char *const keys[] = { "name", "values", "timed", NULL };
	struct shape_spec *s = &b->shapes[i];
	int rc = need_object(o, path, msg, n);

	if (!rc)
		rc = jx_known_keys(o, path, keys, msg, n);
	if (!rc)
		rc = get_str(o, path, "name", JX_REQUIRED, NK_ID, &s->name, msg, n);
	for (size_t j = 0; j < i && !rc; j++)
		if (!strcmp(b->shapes[j].name, s->name))
			rc = kerr_set(msg, n, KERR_INVALID,
				      "%s.name: '%s' is also the name of $.shapes[%zu]", path,
				      s->name, j);
	if (!rc)
		rc = parse_shape_values(o, path, s, msg, n);
	if (!rc)
		rc = jx_bool(o, path, "timed", JX_OPTIONAL, &s->timed, msg, n);
	return rc;
}

static int parse_shapes(struct batch *b, json_t *root, char *msg, size_t n)
{
	char path[PATH_LEN];
	json_t *arr, *v;
	size_t i, timed = SIZE_MAX;
	int rc = get_arr(root, "$", "shapes", JX_REQUIRED, 1, MAX_SHAPES, &arr, msg, n);

	if (rc)
		return rc;
	b->shapes = xcalloc(json_array_size(arr), sizeof(*b->shapes));
	b->nshapes = json_array_size(arr);
	json_array_foreach (arr, i, v) {
		path_fmt(path, "$.shapes[%zu]", i);
		rc = parse_shape(b, i, v, path, msg, n);
		if (rc)
			return rc;
		/* The first timed shape is the primary: `performance` in a result is its. */
		if (b->shapes[i].timed && timed == SIZE_MAX)
			timed = i;
	}
	b->timed_shape = timed == SIZE_MAX ? 0 : timed;
	b->shapes[b->timed_shape].timed = 1;
	return 0;
}

/* ---- programs: reference, baseline, variants ---- */

/*
 * Reads one program object; keys lists what this kind of program may carry.
 * def_id is the id when the document gives none (NULL: id is required).
 */
static int parse_program(json_t *o, const char *path, const char *const *keys, const char *def_id,
			 struct source_spec *s, char *msg, size_t n)
{
	int rc = need_object(o, path, msg, n);

	if (!rc)
		rc = jx_known_keys(o, path, keys, msg, n);
	if (!rc)
		rc = get_str(o, path, "id", def_id ? JX_OPTIONAL : JX_REQUIRED, NK_ID, &s->id, msg,
			     n);
	if (!rc && !s->id)
		s->id = xstrdup(def_id);
	if (!rc)
		rc = get_str(o, path, "parent", GS_NULLABLE, NK_ID, &s->parent, msg, n);
	if (!rc)
		rc = get_str(o, path, "source", JX_REQUIRED, NK_TEXT, &s->source, msg, n);
	if (!rc)
		rc = get_str(o, path, "build_options", JX_OPTIONAL, NK_ANY, &s->options, msg, n);
	if (!rc && !s->options)
		s->options = xstrdup("");
	if (!rc)
		rc = get_str(o, path, "rationale", GS_NULLABLE, NK_ANY, &s->rationale, msg, n);
	return rc;
}

/* Records id (found at path) in seen; fails when reserved or already there. */
static int claim_id(json_t *seen, const char *id, const char *path, char *msg, size_t n)
{
	json_t *other = json_object_get(seen, id);

	/* "reference" names the reference; "summary" would collide with summary.json. */
	if (!strcmp(id, "reference") || !strcmp(id, "summary"))
		return kerr_set(msg, n, KERR_INVALID, "%s.id: '%s' is reserved", path, id);
	if (other)
		return kerr_set(msg, n, KERR_INVALID, "%s.id: '%s' is also the id of %s", path, id,
				json_string_value(other));
	json_object_set_new(seen, id, json_string(path));
	return 0;
}

static int parse_variants(struct batch *b, json_t *root, json_t *seen, char *msg, size_t n)
{
	static const char *const keys[] = { "id",        "parent", "source", "build_options",
					    "rationale", NULL };
	char path[PATH_LEN];
	json_t *arr, *v;
	size_t i;
	int rc = get_arr(root, "$", "variants", JX_OPTIONAL, 0, MAX_VARIANTS, &arr, msg, n);

	if (rc || !arr)
		return rc;
	b->variants = xcalloc(json_array_size(arr), sizeof(*b->variants));
	b->nvariants = json_array_size(arr);
	json_array_foreach (arr, i, v) {
		path_fmt(path, "$.variants[%zu]", i);
		rc = parse_program(v, path, keys, NULL, &b->variants[i], msg, n);
		if (!rc)
			rc = claim_id(seen, b->variants[i].id, path, msg, n);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_programs(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const ref_keys[] = { "source", "build_options", NULL };
	static const char *const base_keys[] = { "id", "source", "build_options", "parent", NULL };
	json_t *o, *seen = json_object();
	int rc = jx_obj(root, "$", "reference", JX_REQUIRED, &o, msg, n);

	if (!rc)
		rc = parse_program(o, "$.reference", ref_keys, "reference", &b->reference, msg, n);
	if (!rc)
		rc = jx_obj(root, "$", "baseline", JX_OPTIONAL, &o, msg, n);
	if (!rc && o) {
		b->baseline = xcalloc(1, sizeof(*b->baseline));
		rc = parse_program(o, "$.baseline", base_keys, "baseline", b->baseline, msg, n);
		if (!rc)
			rc = claim_id(seen, b->baseline->id, "$.baseline", msg, n);
	}
	if (!rc)
		rc = parse_variants(b, root, seen, msg, n);
	json_decref(seen);
	return rc;
}

/* ---- measurement, correctness, limits, device ---- */

#define MF(key, kind, member, lo, hi)                                                              \
	{                                                                                          \
		key, kind, offsetof(struct measure_spec, member), lo, hi                           \
	}

static const struct field measure_fields[] = {
	MF("warmup", FK_INT, warmup, 0, 1000),
	MF("min_samples", FK_INT, min_samples, 1, 1000000),
	MF("max_samples", FK_INT, max_samples, 1, 1000000),
	MF("min_time_ms", FK_NUM, min_time_ms, 0, 3600000),
	MF("max_time_ms", FK_NUM, max_time_ms, 0, 3600000),
	MF("precision", FK_NUM, precision, 0, 1),
	MF("outclass", FK_NUM, outclass, 0, 1000000),
	MF("sample_min_ms", FK_NUM, sample_min_ms, 0, 60000),
	MF("flush", FK_BOOL, flush, 0, 1),
	MF("flush_bytes", FK_I64, flush_bytes, 0, 1099511627776.0),
	MF("order_seed", FK_U64, order_seed, 0, 9e18),
	MF("peak_probe", FK_BOOL, peak_probe, 0, 1),
};

static int parse_measure(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const extra[] = { "flush_kind", NULL };
	const char *P = "$.measurement";
	struct measure_spec *m = &b->measure;
	json_t *o;
	int rc = jx_obj(root, "$", "measurement", JX_OPTIONAL, &o, msg, n);

	if (rc || !o)
		return rc;
	rc = fields_known(o, P, measure_fields, ARRAY_SIZE(measure_fields), extra, msg, n);
	if (!rc)
		rc = fields_read(o, P, measure_fields, ARRAY_SIZE(measure_fields), m, msg, n);
	if (!rc)
		rc = get_enum(o, P, "flush_kind", JX_OPTIONAL, flush_kind_names,
			      ARRAY_SIZE(flush_kind_names), &m->flush_kind, msg, n);
	if (!rc && m->min_samples > m->max_samples)
		rc = kerr_set(msg, n, KERR_RANGE,
			      "%s.min_samples: %d is greater than max_samples (%d)", P,
			      m->min_samples, m->max_samples);
	if (!rc && m->min_time_ms > m->max_time_ms)
		rc = kerr_set(msg, n, KERR_RANGE,
			      "%s.min_time_ms: %g is greater than max_time_ms (%g)", P,
			      m->min_time_ms, m->max_time_ms);
	return rc;
}

static const struct field correct_fields[] = {
	{ "atol", FK_NUM, offsetof(struct correct_spec, atol), 0, DBL_MAX },
	{ "rtol", FK_NUM, offsetof(struct correct_spec, rtol), 0, DBL_MAX },
	{ "determinism", FK_BOOL, offsetof(struct correct_spec, determinism), 0, 1 },
};

static int parse_seeds(struct correct_spec *c, json_t *o, const char *path, char *msg, size_t n)
{
	json_t *arr, *v;
	size_t i;
	int rc = get_arr(o, path, "seeds", JX_OPTIONAL, MIN_SEEDS, MAX_SEEDS, &arr, msg, n);

	if (rc || !arr)
		return rc;
	free(c->seeds);
	c->seeds = xcalloc(json_array_size(arr), sizeof(*c->seeds));
	c->nseeds = 0;
	json_array_foreach (arr, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return kerr_set(msg, n, KERR_PARSE,
					"%s.seeds[%zu]: expected a non-negative integer", path, i);
		c->seeds[i] = (uint64_t)json_integer_value(v);
		for (size_t j = 0; j < i; j++)
			if (c->seeds[j] == c->seeds[i])
				return kerr_set(msg, n, KERR_INVALID,
						"%s.seeds[%zu]: %llu repeats seeds[%zu]", path, i,
						(unsigned long long)c->seeds[i], j);
		c->nseeds = i + 1;
	}
	return 0;
}

static int parse_correct(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const extra[] = { "seeds", NULL };
	const char *P = "$.correctness";
	json_t *o;
	int rc = jx_obj(root, "$", "correctness", JX_OPTIONAL, &o, msg, n);

	if (!rc && o)
		rc = fields_known(o, P, correct_fields, ARRAY_SIZE(correct_fields), extra, msg, n);
	if (!rc && o)
		rc = fields_read(o, P, correct_fields, ARRAY_SIZE(correct_fields), &b->correct, msg,
				 n);
	if (!rc && o)
		rc = parse_seeds(&b->correct, o, P, msg, n);
	if (!rc && !b->correct.seeds) {
		b->correct.seeds = xcalloc(MIN_SEEDS, sizeof(*b->correct.seeds));
		for (size_t i = 0; i < MIN_SEEDS; i++)
			b->correct.seeds[i] = i + 1;
		b->correct.nseeds = MIN_SEEDS;
	}
	return rc;
}

static const struct field limit_fields[] = {
	{ "compile_timeout_s", FK_NUM, offsetof(struct limit_spec, compile_timeout_s), 0.001,
	  86400 },
	{ "run_timeout_s", FK_NUM, offsetof(struct limit_spec, run_timeout_s), 0.001, 86400 },
	{ "time_timeout_s", FK_NUM, offsetof(struct limit_spec, time_timeout_s), 0.001, 604800 },
	{ "log_max_bytes", FK_SIZE, offsetof(struct limit_spec, log_max_bytes), 0, 1 << 26 },
	{ "peak_margin", FK_NUM, offsetof(struct limit_spec, peak_margin), 1, 100 },
	{ "memory_mb", FK_SIZE, offsetof(struct limit_spec, memory_mb), 64, 1 << 24 },
};

static int parse_limits(struct batch *b, json_t *root, char *msg, size_t n)
{
	json_t *o;
	int rc = jx_obj(root, "$", "limits", JX_OPTIONAL, &o, msg, n);

	if (!rc && o)
		rc = fields_known(o, "$.limits", limit_fields, ARRAY_SIZE(limit_fields), NULL, msg,
				  n);
	if (!rc && o)
		rc = fields_read(o, "$.limits", limit_fields, ARRAY_SIZE(limit_fields), &b->limits,
				 msg, n);
	return rc;
}

static const struct field device_fields[] = {
	{ "index", FK_INT, offsetof(struct device_spec, index), 0, 1023 },
};

/* Reads an optional substring filter; "" means no filter (NULL). */
static int device_filter(json_t *o, const char *key, char **out, char *msg, size_t n)
{
	const char *s = NULL;
	int rc = jx_str(o, "$.device", key, JX_OPTIONAL, &s, msg, n);

	if (!rc && s && *s)
		*out = xstrdup(s);
	return rc;
}

static int parse_device(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const extra[] = { "platform", "device", "type", NULL };
	const char *P = "$.device";
	json_t *o;
	int rc = jx_obj(root, "$", "device", JX_OPTIONAL, &o, msg, n);

	if (rc || !o)
		return rc;
	rc = fields_known(o, P, device_fields, ARRAY_SIZE(device_fields), extra, msg, n);
	if (!rc)
		rc = fields_read(o, P, device_fields, ARRAY_SIZE(device_fields), &b->device, msg,
				 n);
	if (!rc)
		rc = device_filter(o, "platform", &b->device.platform, msg, n);
	if (!rc)
		rc = device_filter(o, "device", &b->device.device, msg, n);
	if (!rc)
		rc = get_enum(o, P, "type", JX_OPTIONAL, device_type_names,
			      ARRAY_SIZE(device_type_names), &b->device.type, msg, n);
	return rc;
}

/* ---- outputs ---- */

/* Presigned URLs carry signatures, so messages never quote them. */
static int check_url(const char *u, const char *path, char *msg, size_t n)
{
	size_t skip = !strncasecmp(u, "https://", 8) ? 8 : !strncasecmp(u, "http://", 7) ? 7 : 0;

	if (!skip || !u[skip] || u[skip] == '/')
		return kerr_set(msg, n, KERR_INVALID, "%s: expected an http:// or https:// URL",
				path);
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return kerr_set(msg, n, KERR_INVALID,
					"%s: URL contains a space or control character", path);
	return 0;
}

/* Reads obj.key (at path.key) as a URL into *out (a copy). */
static int get_url(json_t *obj, const char *path, const char *key, char **out, char *msg, size_t n)
{
	char kpath[PATH_LEN];
	const char *s = NULL;
	int rc = jx_str(obj, path, key, JX_REQUIRED, &s, msg, n);

	if (rc)
		return rc;
	path_fmt(kpath, "%s.%s", path, key);
	rc = check_url(s, kpath, msg, n);
	if (!rc)
		*out = xstrdup(s);
	return rc;
}

/* True when id names a program of the batch (the reference included). */
static int known_program(const struct batch *b, const char *id)
{
	return !strcmp(id, "reference") || (b->baseline && !strcmp(b->baseline->id, id)) ||
	       batch_variant(b, id);
}

/* Finds or appends the targets of id (space is reserved by the caller). */
static struct output_url *output_slot(struct output_spec *o, const char *id)
{
	for (size_t i = 0; i < o->nurls; i++)
		if (!strcmp(o->urls[i].id, id))
			return &o->urls[i];
	o->urls[o->nurls].id = xstrdup(id);
	return &o->urls[o->nurls++];
}

static int check_output_id(const struct batch *b, const char *id, const char *path, char *msg,
			   size_t n)
{
	if (known_program(b, id))
		return 0;
	return kerr_set(msg, n, KERR_INVALID, "%s.%s: '%.40s' is not a program of this batch", path,
			id, id);
}

static int parse_artifacts(struct output_url *u, json_t *o, const char *path, char *msg, size_t n)
{
	char kpath[PATH_LEN];
	const char *name;
	json_t *v;
	int rc = 0;

	if (json_object_size(o) > MAX_ARTIFACTS)
		return kerr_set(msg, n, KERR_RANGE, "%s: has %zu artifacts, at most %d", path,
				json_object_size(o), MAX_ARTIFACTS);
	u->art = xcalloc(json_object_size(o), sizeof(*u->art));
	json_object_foreach (o, name, v) {
		path_fmt(kpath, "%s.%s", path, name);
		rc = check_name(name, NK_ID, kpath, msg, n);
		if (!rc)
			rc = get_url(o, path, name, &u->art[u->nart].url, msg, n);
		if (rc)
			return rc;
		u->art[u->nart++].name = xstrdup(name);
	}
	return 0;
}

static int parse_output_urls(struct batch *b, json_t *results, json_t *artifacts, char *msg,
			     size_t n)
{
	const char *RP = "$.outputs.results", *AP = "$.outputs.artifacts";
	struct output_spec *out = &b->outputs;
	char path[PATH_LEN];
	const char *id;
	json_t *v, *arts;
	int rc = 0;

	out->urls = xcalloc(json_object_size(results) + json_object_size(artifacts),
			    sizeof(*out->urls));
	json_object_foreach (results, id, v) {
		rc = check_output_id(b, id, RP, msg, n);
		if (!rc)
			rc = get_url(results, RP, id, &output_slot(out, id)->result, msg, n);
		if (rc)
			return rc;
	}
	json_object_foreach (artifacts, id, v) {
		path_fmt(path, "%s.%s", AP, id);
		rc = check_output_id(b, id, AP, msg, n);
		if (!rc)
			rc = jx_obj(artifacts, AP, id, JX_REQUIRED, &arts, msg, n);
		if (!rc)
			rc = parse_artifacts(output_slot(out, id), arts, path, msg, n);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_outputs(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const keys[] = { "dir", "summary", "results", "artifacts", NULL };
	const char *P = "$.outputs";
	json_t *o, *results = NULL, *artifacts = NULL;
	int rc = jx_obj(root, "$", "outputs", JX_OPTIONAL, &o, msg, n);

	if (rc || !o)
		return rc;
	rc = jx_known_keys(o, P, keys, msg, n);
	if (!rc)
		rc = get_str(o, P, "dir", GS_NULLABLE, NK_TEXT, &b->outputs.dir, msg, n);
	if (!rc && json_object_get(o, "summary") && !json_is_null(json_object_get(o, "summary")))
		rc = get_url(o, P, "summary", &b->outputs.summary, msg, n);
	if (!rc)
		rc = jx_obj(o, P, "results", JX_OPTIONAL, &results, msg, n);
	if (!rc)
		rc = jx_obj(o, P, "artifacts", JX_OPTIONAL, &artifacts, msg, n);
	if (!rc)
		rc = parse_output_urls(b, results, artifacts, msg, n);
	return rc;
}

/* ---- the document ---- */

static int parse_header(struct batch *b, json_t *root, char *msg, size_t n)
{
	static const char *const keys[] = {
		"schema",    "version",  "batch_id", "problem",     "shapes",
		"reference", "baseline", "variants", "measurement", "correctness",
		"limits",    "device",   "outputs",  NULL,
	};
	const char *schema = NULL;
	int64_t version = 0;
	int rc = jx_known_keys(root, "$", keys, msg, n);

	if (!rc)
		rc = jx_str(root, "$", "schema", JX_REQUIRED, &schema, msg, n);
	if (!rc && strcmp(schema, BATCH_SCHEMA))
		rc = kerr_set(msg, n, KERR_INVALID, "$.schema: '%.40s' is not '%s'", schema,
			      BATCH_SCHEMA);
	if (!rc)
		rc = jx_int(root, "$", "version", JX_REQUIRED, INT64_MIN, INT64_MAX, &version, msg,
			    n);
	if (!rc && version != BATCH_VERSION)
		rc = kerr_set(msg, n, KERR_INVALID,
			      "$.version: version %lld is not supported (this reader knows %d)",
			      (long long)version, BATCH_VERSION);
	if (!rc)
		rc = get_str(root, "$", "batch_id", JX_REQUIRED, NK_ID, &b->batch_id, msg, n);
	return rc;
}

/*
 * Refuses a batch whose buffers at some shape take more than
 * limits.memory_mb: every worker would be killed for its memory, the
 * reference's first, in every attempt.  Runs after the limits are read.
 */

static int check_fit(struct batch *b, json_t *root, char *msg, size_t n)
{
	const double mib = 1024.0 * 1024.0;

	(void)root;
	for (size_t s = 0; s < b->nshapes; s++) {
		double total = 0, largest = 0, count;
		size_t which = 0;

		for (size_t i = 0; i < b->nbuffers; i++) {
			double bytes;

			/* a count that needs the program's #defines is left out: a lower bound */
			if (batch_shape_figure(b, s, b->buffers[i].count, &count) || count <= 0)
				continue;
			bytes = count * (double)elem_type_size(b->buffers[i].type);
			total += bytes;
			if (bytes > largest) {
				largest = bytes;
				which = i;
			}
		}
		if (total > (double)b->limits.memory_mb * mib)
			return kerr_set(
				msg, n, KERR_INVALID,
				"$.shapes[%zu] ('%s'): its buffers take %.0f MiB (the largest, "
				"'%s', %.0f MiB), more than limits.memory_mb (%zu MiB) lets a "
				"worker hold: every program would be killed",
				s, b->shapes[s].name, ceil(total / mib), b->buffers[which].name,
				ceil(largest / mib), b->limits.memory_mb);
	}
	return 0;
}

typedef int (*parse_stage_fn)(struct batch *b, json_t *root, char *msg, size_t n);

/* In document order; outputs last because it refers to the programs. */
static const parse_stage_fn parse_stages[] = {
	parse_header,  parse_problem, parse_shapes, parse_programs, parse_measure,
	parse_correct, parse_limits,  check_fit,    parse_device,   parse_outputs,
};

static void batch_defaults(struct batch *b)
{
	memset(b, 0, sizeof(*b));
	b->measure = (struct measure_spec){
		.warmup = 2,
		.min_samples = 10,
		.max_samples = 200,
		.min_time_ms = 100,
		.max_time_ms = 10000,
		.precision = 0.01,
		.outclass = 2,
		.sample_min_ms = 1,
		.flush = 1,
		.flush_bytes = 0,
		.order_seed = 1,
	};
	b->correct.atol = 1e-4;
	b->correct.rtol = 1e-4;
	b->correct.determinism = 1;
	b->limits = (struct limit_spec){
		.compile_timeout_s = 120,
		.run_timeout_s = 120,
		.time_timeout_s = 900,
		.log_max_bytes = 16384,
		.peak_margin = 1.15,
		.memory_mb = 8192,
	};
}

int batch_parse(struct batch *b, const char *text, size_t len, char *msg, size_t n)
{
	json_error_t je;
	int rc = 0;

	batch_defaults(b);
	b->doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!b->doc)
		return kerr_set(msg, n, KERR_PARSE, "$: not valid JSON: line %d, column %d: %s",
				je.line, je.column, je.text);
	if (!json_is_object(b->doc))
		return kerr_set(msg, n, KERR_PARSE, "$: expected an object, got %s",
				jx_type_name(b->doc));
	for (size_t i = 0; i < ARRAY_SIZE(parse_stages) && !rc; i++)
		rc = parse_stages[i](b, b->doc, msg, n);
	return rc;
}

/* ---- release ---- */

static void launch_free(struct launch_spec *l, size_t nr)
{
	for (size_t i = 0; l && i < nr; i++) {
		for (size_t j = 0; j < l[i].nargs; j++)
			free(l[i].args[j].local_bytes);
		free(l[i].args);
		free(l[i].kernel);
		for (size_t d = 0; d < 3; d++) {
			free(l[i].global[d]);
			free(l[i].local[d]);
		}
	}
	free(l);
}

static void source_release(struct source_spec *s)
{
	free(s->id);
	free(s->parent);
	free(s->source);
	free(s->options);
	free(s->rationale);
}

static void outputs_release(struct output_spec *o)
{
	for (size_t i = 0; i < o->nurls; i++) {
		for (size_t j = 0; j < o->urls[i].nart; j++) {
			free(o->urls[i].art[j].name);
			free(o->urls[i].art[j].url);
		}
		free(o->urls[i].art);
		free(o->urls[i].id);
		free(o->urls[i].result);
	}
	free(o->urls);
	free(o->dir);
	free(o->summary);
}

void batch_release(struct batch *b)
{
	for (size_t i = 0; i < b->nbuffers; i++) {
		free(b->buffers[i].name);
		free(b->buffers[i].count);
	}
	for (size_t i = 0; i < b->nscalars; i++) {
		free(b->scalars[i].name);
		free(b->scalars[i].expr);
	}
	for (size_t i = 0; i < b->nshapes; i++) {
		free(b->shapes[i].name);
		expr_vars_release(&b->shapes[i].vars);
	}
	for (size_t i = 0; i < b->nvariants; i++)
		source_release(&b->variants[i]);
	if (b->baseline)
		source_release(b->baseline);
	if (b->ref_launch_owned)
		launch_free(b->ref_launch, b->nref_launch);
	launch_free(b->launch, b->nlaunch);
	source_release(&b->reference);
	outputs_release(&b->outputs);
	free(b->batch_id);
	free(b->problem_name);
	free(b->semantics);
	free(b->buffers);
	free(b->scalars);
	free(b->flops);
	free(b->bytes);
	free(b->shapes);
	free(b->baseline);
	free(b->variants);
	free(b->correct.seeds);
	free(b->device.platform);
	free(b->device.device);
	json_decref(b->doc);
	memset(b, 0, sizeof(*b));
}

/* ---- lookups ---- */

const struct source_spec *batch_variant(const struct batch *b, const char *id)
{
	for (size_t i = 0; i < b->nvariants; i++)
		if (b->variants[i].id && !strcmp(b->variants[i].id, id))
			return &b->variants[i];
	return NULL;
}

const struct source_spec *batch_source(const struct batch *b, const char *id)
{
	if (!strcmp(id, "reference"))
		return &b->reference;
	if (b->baseline && !strcmp(id, b->baseline->id))
		return b->baseline;
	return batch_variant(b, id);
}

const struct output_url *batch_output_url(const struct batch *b, const char *id)
{
	for (size_t i = 0; i < b->outputs.nurls; i++)
		if (!strcmp(b->outputs.urls[i].id, id))
			return &b->outputs.urls[i];
	return NULL;
}

int batch_timed_figure(const struct batch *b, const char *text, double *out)
{
	return batch_shape_figure(b, b->timed_shape, text, out);
}

int batch_shape_figure(const struct batch *b, size_t s, const char *text, double *out)
{
	int64_t v = 0;
	char msg[256];

	if (!text || s >= b->nshapes ||
	    expr_eval(text, expr_vars_lookup, (void *)&b->shapes[s].vars, &v, msg, sizeof(msg)))
		return -1;
	*out = (double)v;
	return 0;
}

size_t batch_ntimed(const struct batch *b)
{
	size_t n = 0;

	for (size_t s = 0; s < b->nshapes; s++)
		n += b->shapes[s].timed != 0;
	return n;
}

void batch_program_vars(const struct batch *b, const struct source_spec *src, size_t s,
			struct expr_vars *vars)
{
	const struct expr_vars *sv = &b->shapes[s].vars;

	for (size_t i = 0; i < sv->nr; i++)
		expr_vars_set(vars, sv->v[i].name, sv->v[i].value);
	defines_collect(src->source, src->options, vars);
}
