/*
 * spec-evaluator.c - the spec's sections on how and where the variants are
 * evaluated: correctness, measurement, limits and device (handed to evalpod
 * as EvalBatch objects), and the evaluator (local or kubernetes, with its
 * kubernetes and s3 settings), session and batch sections, and the result
 * cache's section.
 *
 * May use: spec-internal.h (the field tables and checks of spec-read.c), yamlx,
 * s3 and common/.  spec.c calls its read_* functions from its table of
 * sections; spec_limit_value() is spec.h's.
 */
#include "spec-internal.h"
#include "err.h"
#include "s3.h"
#include "xalloc.h"
#include "yamlx.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SEEDS 3
#define MAX_SEEDS 64

/* ---- correctness, measurement, limits, device: EvalBatch objects ---- */

static const struct field correct_fields[] = {
	FNUM("atol", 0, DBL_MAX),
	FNUM("rtol", 0, DBL_MAX),
	FCUSTOM("seeds", 0),
	FBOOL("determinism"),
};

static int read_seeds(struct ld *ld, const yaml_node_t *nd, json_t *c)
{
	const char *P = "correctness.seeds";
	char path[YAMLX_PATH_LEN];
	json_t *arr = json_array(), *prev;
	int64_t x = 0;
	size_t j;
	int rc = yamlx_need_list(&ld->y, nd, P, MIN_SEEDS, MAX_SEEDS);

	json_object_set_new(c, "seeds", arr);
	for (size_t i = 0; !rc && i < yamlx_list_size(nd); i++) {
		yamlx_path_idx(path, P, i);
		rc = yamlx_get_int(&ld->y, yamlx_list_item(&ld->y, nd, i), path, 0, INT64_MAX, &x);
		json_array_foreach (arr, j, prev)
			if (!rc && json_integer_value(prev) == x)
				rc = yamlx_fail(&ld->y, yamlx_list_item(&ld->y, nd, i),
						KERR_INVALID, path, "%lld repeats seeds[%zu]",
						(long long)x, j);
		if (!rc)
			json_array_append_new(arr, json_integer(x));
	}
	return rc;
}

int read_correctness(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	const yaml_node_t *seeds;
	int rc = fld_load(ld, nd, path, correct_fields, ARRAY_SIZE(correct_fields),
			  &ld->s->correctness);

	seeds = rc ? NULL : yamlx_map_get(&ld->y, nd, "seeds");
	if (seeds)
		rc = read_seeds(ld, seeds, ld->s->correctness);
	return rc;
}

static const char *const flush_kind_names[] = { "auto", "read", NULL };

static const struct field measure_fields[] = {
	FINT("warmup", 0, 1000),
	FINT("min_samples", 1, 1000000),
	FINT("max_samples", 1, 1000000),
	FNUM("min_time_ms", 0, 3600000),
	FNUM("max_time_ms", 0, 3600000),
	FNUM("precision", 0, 1),
	FNUM("outclass", 0, 1000000),
	FNUM("sample_min_ms", 0, 60000),
	FBOOL("flush"),
	FINT("flush_bytes", 0, 1LL << 40),
	FENUM("flush_kind", 0, flush_kind_names),
	FINT("order_seed", 0, 9000000000000000000LL),
	FBOOL("peak_probe"),
};

/* min_key must not exceed max_key, either given or at its EvalBatch default. */
static int check_order(struct ld *ld, const yaml_node_t *nd, const char *min_key, double min_def,
		       const char *max_key, double max_def)
{
	const json_t *o = ld->s->measurement;
	double lo = fld_num(o, min_key, min_def), hi = fld_num(o, max_key, max_def);
	const yaml_node_t *at = yamlx_map_get(&ld->y, nd, min_key);
	char path[YAMLX_PATH_LEN];

	if (lo <= hi)
		return 0;
	yamlx_path_key(path, "measurement", at ? min_key : max_key);
	if (at)
		return yamlx_fail(&ld->y, at, KERR_RANGE, path, "%g is greater than %s (%g%s)", lo,
				  max_key, hi,
				  yamlx_map_get(&ld->y, nd, max_key) ? "" : ", the default");
	return yamlx_fail(&ld->y, yamlx_map_get(&ld->y, nd, max_key), KERR_RANGE, path,
			  "%g is less than %s (%g, the default)", hi, min_key, lo);
}

int read_measurement(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	int rc = fld_load(ld, nd, path, measure_fields, ARRAY_SIZE(measure_fields),
			  &ld->s->measurement);

	if (!rc)
		rc = check_order(ld, nd, "min_samples", 10, "max_samples", 200);
	if (!rc)
		rc = check_order(ld, nd, "min_time_ms", 100, "max_time_ms", 10000);
	return rc;
}

static const struct field limit_fields[] = {
	FNUM("compile_timeout_s", 0.001, 86400),
	FNUM("run_timeout_s", 0.001, 86400),
	FNUM("time_timeout_s", 0.001, 604800),
	FINT("log_max_bytes", 0, 1 << 26),
	FNUM("peak_margin", 1, 100),
};

int read_limits(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	return fld_load(ld, nd, path, limit_fields, ARRAY_SIZE(limit_fields), &ld->s->limits);
}

int spec_limit_value(const char *key, const char *text, json_t **out, char *msg, size_t n)
{
	char names[256] = "";
	const struct field *f = NULL;
	char *end = NULL;

	*out = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(limit_fields); i++) {
		if (!strcmp(key, limit_fields[i].key))
			f = &limit_fields[i];
		strlcat(names, i ? ", " : "", sizeof(names));
		strlcat(names, limit_fields[i].key, sizeof(names));
	}
	if (!f)
		return kerr_set(msg, n, KERR_INVALID,
				"limits.%s: no such limit (the limits are %s)", key, names);
	errno = 0;
	if (f->kind == F_INT) {
		long long v = strtoll(text, &end, 10);

		if (end == text || *end || errno || v < f->ilo || v > f->ihi)
			return kerr_set(msg, n, KERR_RANGE,
					"limits.%s: '%s' is not an integer from %lld to %lld", key,
					text, (long long)f->ilo, (long long)f->ihi);
		*out = json_integer(v);
	} else {
		double v = strtod(text, &end);

		if (end == text || *end || errno || !isfinite(v) || v < f->lo || v > f->hi)
			return kerr_set(msg, n, KERR_RANGE,
					"limits.%s: '%s' is not a number from %g to %g", key, text,
					f->lo, f->hi);
		*out = json_real(v);
	}
	return 0;
}

static const char *const device_type_names[] = { "any", "gpu", "cpu", "accelerator", NULL };

static const struct field device_fields[] = {
	FTEXT("platform", 0, R_ANY),
	FTEXT("device", 0, R_ANY),
	FENUM("type", 0, device_type_names),
	FINT("index", 0, 1023),
};

int read_device(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	return fld_load(ld, nd, path, device_fields, ARRAY_SIZE(device_fields), &ld->s->device);
}

/* ---- evaluator, session, batch, proposer ---- */

static const char *const backend_names[] = { "local", "kubernetes", NULL };

static const struct field evaluator_fields[] = {
	FENUM("backend", 0, backend_names),
	FPATH("evalpod", 0),
	FINT("jobs", 1, 64),
	FURL("storage"),
	FCUSTOM("s3", 0),
	FCUSTOM("kubernetes", 0),
};

/* Same order as enum s3_addressing. */
static const char *const addressing_names[] = { "auto", "path", "virtual", NULL };

static const struct field s3_fields[] = {
	FTEXT("endpoint", 0, R_TEXT),
	FTEXT("region", 0, R_TEXT),
	FTEXT("profile", 0, R_TEXT),
	FPATH("ca_file", 0),
	FENUM("addressing", 0, addressing_names),
	FINT("url_margin_s", 60, 86400),
};

static const char *const pull_policy_names[] = { "Always", "IfNotPresent", "Never", NULL };

static const struct field kube_fields[] = {
	FPATH("kubeconfig", 0),
	FTEXT("context", 0, R_TEXT),
	FTEXT("namespace", 0, R_TEXT),
	FPATH("job_template", 0),
	FTEXT("image", 0, R_TEXT),
	FENUM("image_pull_policy", 0, pull_policy_names),
	FTEXT("service_account", 0, R_TEXT),
	FTEXT("priority_class", 0, R_TEXT),
	FTEXT("queue", 0, R_TEXT),
	FTEXT("gpu_resource", 0, R_TEXT),
	FINT("gpus", 0, 64),
	FCUSTOM("node_selector", 0),
	FCUSTOM("tolerations", 0),
	FINT("parallelism", 1, 4096),
	FINT("max_pods_in_flight", 1, 4096),
	FTEXT("workload_priority_class", 0, R_TEXT),
	FINT("variants_per_pod", 1, 4096),
	FINT("active_deadline_s", 60, 30 * 86400),
	FINT("backoff_limit", 0, 100),
	FINT("ttl_s", 0, 30 * 86400),
	FINT("pending_timeout_s", 10, 86400),
	FINT("api_retry_s", 0, 86400),
};

/* node_selector: a mapping of strings; tolerations: a list of mappings. */
static int read_kube_structs(struct ld *ld, const yaml_node_t *nd, struct spec_kube *k)
{
	const yaml_node_t *ns = yamlx_map_get(&ld->y, nd, "node_selector");
	const yaml_node_t *tl = yamlx_map_get(&ld->y, nd, "tolerations");
	int rc = 0;

	if (ns) {
		rc = yamlx_need_map(&ld->y, ns, "evaluator.kubernetes.node_selector", 0, 64);
		for (size_t i = 0; !rc && i < yamlx_map_size(ns); i++) {
			const char *t = NULL;
			char kp[YAMLX_PATH_LEN];

			yamlx_path_key(kp, "evaluator.kubernetes.node_selector",
				       yamlx_text(yamlx_map_key(&ld->y, ns, i)));
			rc = yamlx_get_text(&ld->y, yamlx_map_value(&ld->y, ns, i), kp, &t);
		}
		if (!rc)
			rc = yamlx_to_json(&ld->y, ns, "evaluator.kubernetes.node_selector",
					   &k->node_selector);
	}
	if (!rc && tl) {
		rc = yamlx_need_list(&ld->y, tl, "evaluator.kubernetes.tolerations", 0, 64);
		for (size_t i = 0; !rc && i < yamlx_list_size(tl); i++) {
			char ip[YAMLX_PATH_LEN];

			yamlx_path_idx(ip, "evaluator.kubernetes.tolerations", i);
			rc = yamlx_need_map(&ld->y, yamlx_list_item(&ld->y, tl, i), ip, 1, 8);
		}
		if (!rc)
			rc = yamlx_to_json(&ld->y, tl, "evaluator.kubernetes.tolerations",
					   &k->tolerations);
	}
	return rc;
}

static int read_kube(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec_kube *k = &ld->s->kube;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, kube_fields, ARRAY_SIZE(kube_fields), &o);
	static const char *const texts[] = { "kubeconfig",      "context",
					     "namespace",       "job_template",
					     "image",           "image_pull_policy",
					     "service_account", "priority_class",
					     "queue",           "gpu_resource" };
	char **dst[] = { &k->kubeconfig,      &k->context,        &k->namespace,
			 &k->job_template,    &k->image,          &k->image_pull_policy,
			 &k->service_account, &k->priority_class, &k->queue,
			 &k->gpu_resource };

	if (!rc)
		rc = read_kube_structs(ld, nd, k);
	if (!rc) {
		for (size_t i = 0; i < ARRAY_SIZE(texts); i++)
			fld_text(o, texts[i], dst[i]);
		k->gpus = (int)fld_int(o, "gpus", 1);
		k->parallelism = (int)fld_int(o, "parallelism", 0);
		k->max_pods_in_flight = (int)fld_int(o, "max_pods_in_flight", 0);
		fld_text(o, "workload_priority_class", &k->workload_priority_class);
		k->variants_per_pod = (int)fld_int(o, "variants_per_pod", 8);
		k->active_deadline_s = (int)fld_int(o, "active_deadline_s", 0);
		k->backoff_limit = (int)fld_int(o, "backoff_limit", 1);
		k->ttl_s = (int)fld_int(o, "ttl_s", 3600);
		k->pending_timeout_s = (int)fld_int(o, "pending_timeout_s", 600);
		k->api_retry_s = (int)fld_int(o, "api_retry_s", 300);
	}
	json_decref(o);
	return rc;
}

static int read_s3(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec_s3 *c = &ld->s->s3;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, s3_fields, ARRAY_SIZE(s3_fields), &o);
	const char *ep = json_string_value(json_object_get(o, "endpoint"));

	if (!rc && ep && strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8))
		rc = yamlx_fail(&ld->y, yamlx_map_get(&ld->y, nd, "endpoint"), KERR_INVALID,
				"evaluator.s3.endpoint", "'%.80s' is not an http(s):// URL", ep);
	if (!rc) {
		fld_text(o, "endpoint", &c->endpoint);
		fld_text(o, "region", &c->region);
		fld_text(o, "profile", &c->profile);
		fld_text(o, "ca_file", &c->ca_file);
		c->addressing = fld_enum(o, "addressing", addressing_names, 0);
		c->url_margin_s = (int)fld_int(o, "url_margin_s", 900);
	}
	json_decref(o);
	return rc;
}

int read_evaluator(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, evaluator_fields, ARRAY_SIZE(evaluator_fields), &o);

	if (!rc) {
		s->backend = fld_enum(o, "backend", backend_names, BACKEND_LOCAL);
		fld_text(o, "evalpod", &s->evalpod);
		s->jobs = (int)fld_int(o, "jobs", 0);
		fld_text(o, "storage", &s->storage);
	}
	s->s3.url_margin_s = 900;
	if (!rc && yamlx_map_get(&ld->y, nd, "s3"))
		rc = read_s3(ld, yamlx_map_get(&ld->y, nd, "s3"), "evaluator.s3");
	s->kube.gpus = 1;
	s->kube.variants_per_pod = 8;
	s->kube.backoff_limit = 1;
	s->kube.ttl_s = 3600;
	s->kube.pending_timeout_s = 600;
	s->kube.api_retry_s = 300;
	if (!rc && yamlx_map_get(&ld->y, nd, "kubernetes"))
		rc = read_kube(ld, yamlx_map_get(&ld->y, nd, "kubernetes"), "evaluator.kubernetes");
	json_decref(o);
	return rc;
}

static const struct field session_fields[] = {
	FINT("max_rounds", 1, 10000),
	FNUM("target_speedup", 0, 1e6),
	FINT("max_evaluations", 1, 1000000),
	FNUM("max_minutes", 0, 1e6),
	FINT("stagnation_rounds", 1, 1000),
	FPATH("output_dir", 0),
	FINT("confirm_passes", 0, 10),
	FINT("confirm_candidates", 1, 16),
	FCUSTOM("github", 0),
};

static const struct field github_fields[] = {
	FTEXT("repo", 1, R_TEXT), FTEXT("token_env", 0, R_IDENT), FTEXT("api_url", 0, R_TEXT),
	FPATH("ca_file", 0),      FCUSTOM("labels", 0),
};

/* GitHub's owner and repository names: letters, digits, '-', '_' and '.', not "." or "..". */
static int repo_part_ok(const char *p, size_t len)
{
	if (!len || len > 100 || (len == 1 && *p == '.') || (len == 2 && !strncmp(p, "..", 2)))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)p[i]) && !strchr("-_.", p[i]))
			return 0;
	return 1;
}

/* session.github: {repo, token_env, api_url, ca_file, labels} */
static int read_github(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec_github *g = &ld->s->github;
	const yaml_node_t *lv = yamlx_map_get(&ld->y, nd, "labels");
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, github_fields, ARRAY_SIZE(github_fields), &o);
	const char *repo = json_string_value(json_object_get(o, "repo"));
	const char *url = json_string_value(json_object_get(o, "api_url"));
	const char *slash = repo ? strchr(repo, '/') : NULL;

	if (!rc && (!slash || !repo_part_ok(repo, (size_t)(slash - repo)) ||
		    !repo_part_ok(slash + 1, strlen(slash + 1))))
		rc = yamlx_fail(&ld->y, yamlx_map_get(&ld->y, nd, "repo"), KERR_INVALID,
				"session.github.repo", "'%.120s' is not owner/name", repo);
	if (!rc && url && (strncmp(url, "https://", 8) || !url[8]))
		rc = yamlx_fail(&ld->y, yamlx_map_get(&ld->y, nd, "api_url"), KERR_INVALID,
				"session.github.api_url",
				"'%.120s' is not an https:// URL (the token goes there)", url);
	if (!rc) {
		fld_text(o, "repo", &g->repo);
		fld_text(o, "api_url", &g->api_url);
		fld_text(o, "ca_file", &g->ca_file);
		if (json_object_get(o, "token_env"))
			fld_text(o, "token_env", &g->token_env);
		else
			g->token_env = xstrdup("GITHUB_TOKEN");
		g->labels = json_array();
	}
	if (!rc && lv) {
		rc = yamlx_need_list(&ld->y, lv, "session.github.labels", 0, 10);
		for (size_t i = 0; !rc && i < yamlx_list_size(lv); i++) {
			char ip[YAMLX_PATH_LEN];
			const char *t = NULL;

			yamlx_path_idx(ip, "session.github.labels", i);
			rc = yamlx_get_text(&ld->y, yamlx_list_item(&ld->y, lv, i), ip, &t);
			if (!rc &&
			    (!*t || strlen(t) > 50 || strchr(t, ',') || !spec_rule_ok(t, R_TEXT)))
				rc = yamlx_fail(&ld->y, yamlx_list_item(&ld->y, lv, i),
						KERR_INVALID, ip,
						"a label is 1 to 50 characters without a comma");
			if (!rc)
				json_array_append_new(g->labels, json_string(t));
		}
	} else if (!rc) {
		json_array_append_new(g->labels, json_string("kctl"));
	}
	json_decref(o);
	return rc;
}

int read_session(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, session_fields, ARRAY_SIZE(session_fields), &o);

	if (!rc) {
		s->max_rounds = (int)fld_int(o, "max_rounds", s->max_rounds);
		s->target_speedup = fld_num(o, "target_speedup", s->target_speedup);
		s->max_evaluations = (int)fld_int(o, "max_evaluations", s->max_evaluations);
		s->max_minutes = fld_num(o, "max_minutes", s->max_minutes);
		s->stagnation_rounds = (int)fld_int(o, "stagnation_rounds", s->stagnation_rounds);
		fld_text(o, "output_dir", &s->output_dir);
		s->confirm_passes = (int)fld_int(o, "confirm_passes", s->confirm_passes);
		s->confirm_candidates =
			(int)fld_int(o, "confirm_candidates", s->confirm_candidates);
	}
	if (!rc && yamlx_map_get(&ld->y, nd, "github"))
		rc = read_github(ld, yamlx_map_get(&ld->y, nd, "github"), "session.github");
	json_decref(o);
	return rc;
}

static const struct field batch_fields[] = {
	FINT("variants_per_round", 1, 4096),
	FINT("top_k", 1, 64),
	FINT("max_active_lineages", 1, 64),
};

int read_batch(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, batch_fields, ARRAY_SIZE(batch_fields), &o);

	if (!rc) {
		s->variants_per_round =
			(int)fld_int(o, "variants_per_round", s->variants_per_round);
		s->top_k = (int)fld_int(o, "top_k", s->top_k);
		s->max_active_lineages =
			(int)fld_int(o, "max_active_lineages", s->max_active_lineages);
	}
	json_decref(o);
	return rc;
}

static const struct field cache_fields[] = {
	FBOOL("enabled"),
	FNUM("max_age_days", 0, 36500),
	FBOOL("s3"),
};

/* cache: {enabled, max_age_days, s3} (docs/spec.md#cache) */
int read_cache(struct ld *ld, const yaml_node_t *nd, const char *path)
{
	struct spec *s = ld->s;
	json_t *o = NULL;
	int rc = fld_load(ld, nd, path, cache_fields, ARRAY_SIZE(cache_fields), &o);

	if (!rc) {
		const json_t *on = json_object_get(o, "enabled");

		if (json_is_boolean(on))
			s->cache_enabled = json_is_true(on);
		s->cache_max_age_days = fld_num(o, "max_age_days", s->cache_max_age_days);
		s->cache_s3 = json_is_true(json_object_get(o, "s3"));
	}
	/* evaluator comes before cache in spec.c's table of sections */
	if (!rc && s->cache_s3 && !(s->storage && s3_is_url(s->storage)))
		rc = yamlx_fail(&ld->y, yamlx_map_get(&ld->y, nd, "s3"), KERR_INVALID, "cache.s3",
				"the cache is shared through evaluator.storage, which is not an "
				"s3:// URL");
	json_decref(o);
	return rc;
}
