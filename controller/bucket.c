/*
 * bucket.c - shape buckets: the objective across a session's timed shapes,
 * the ranked figures of store rows made that objective, and the best
 * variant per bucket (bucket.h).
 */
#include "bucket.h"
#include "session.h"
#include "spec.h"
#include "store.h"
#include "jsonx.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

size_t bucket_count(const struct spec *sp)
{
	size_t i, n = 0;
	json_t *sh;

	json_array_foreach (sp->shapes, i, sh)
		n += json_is_true(json_object_get(sh, "timed"));
	return n ? n : 1;
}

json_t *bucket_names(const struct spec *sp)
{
	json_t *names = json_array(), *sh;
	size_t i;

	json_array_foreach (sp->shapes, i, sh)
		if (json_is_true(json_object_get(sh, "timed")))
			json_array_append(names, json_object_get(sh, "name"));
	/* None marked: evalpod times the first. */
	if (!json_array_size(names) && json_array_size(sp->shapes))
		json_array_append(names, json_object_get(json_array_get(sp->shapes, 0), "name"));
	return names;
}

/* performance_by_shape.SHAPE.speedup_vs_<against>.ratio_of_medians of result; NAN if none. */
static double bucket_speedup(json_t *result, const char *shape, const char *against)
{
	json_t *perf = json_object_get(json_object_get(result, "performance_by_shape"), shape);
	char key[32];

	snprintf(key, sizeof(key), "speedup_vs_%s", against);
	return num(json_object_get(perf, key), "ratio_of_medians");
}

double bucket_objective(const struct spec *sp, json_t *result, const char *against)
{
	json_t *names = bucket_names(sp), *nm;
	double logs = 0;
	size_t i;

	json_array_foreach (names, i, nm) {
		double r = bucket_speedup(result, json_string_value(nm), against);

		if (!(r > 0) || !isfinite(r)) {
			logs = NAN;
			break;
		}
		logs += log(r);
	}
	i = json_array_size(names);
	json_decref(names);
	return i && isfinite(logs) ? exp(logs / (double)i) : NAN;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sets key of row to v, or to null when v is not a number. */
static void set_num(json_t *row, const char *key, double v)
{
	json_object_set_new(row, key, isfinite(v) ? json_real(v) : json_null());
}

void bucket_rank_row(struct session *s, json_t *row)
{
	const char *st = json_string_value(json_object_get(row, "status"));
	const char *id = json_string_value(json_object_get(row, "id"));
	json_t *res;

	if (!row || bucket_count(&s->spec) < 2 || !st || strcmp(st, "ok") || !id ||
	    json_object_get(row, "primary_speedup_ref"))
		return;
	res = store_result_get(s->st, s->id, id);
	json_object_set(row, "primary_speedup_ref", json_object_get(row, "speedup_ref"));
	json_object_set(row, "primary_speedup_base", json_object_get(row, "speedup_base"));
	set_num(row, "speedup_ref", bucket_objective(&s->spec, res, "reference"));
	set_num(row, "speedup_base", bucket_objective(&s->spec, res, "baseline"));
	json_decref(res);
}

void bucket_rank_rows(struct session *s, json_t *rows)
{
	json_t *row;
	size_t i;

	if (bucket_count(&s->spec) < 2)
		return;
	json_array_foreach (rows, i, row)
		bucket_rank_row(s, row);
}

/* The entry bucket_bests gives for variant row v at shape, from its result's figures. */
static json_t *best_entry(json_t *v, const char *shape, json_t *perf)
{
	json_t *e = json_object();

	json_object_set_new(e, "bucket", json_string(shape));
	json_object_set(e, "variant", json_object_get(v, "id"));
	json_object_set(e, "round", json_object_get(v, "round"));
	jx_set_real(e, "median_ms", num(perf, "median_ms"));
	jx_set_real(e, "speedup_vs_reference",
		    num(json_object_get(perf, "speedup_vs_reference"), "ratio_of_medians"));
	jx_set_real(e, "robust_cv", num(perf, "robust_cv"));
	json_object_set_new(e, "quality",
			    json_is_string(json_object_get(perf, "quality"))
				    ? json_incref(json_object_get(perf, "quality"))
				    : json_null());
	jx_set_real(e, "gflops", num(perf, "gflops"));
	return e;
}

/* Keeps in bests[shape] the better of what is there and variant v's figures. */
static void best_keep(json_t *bests, json_t *v, const char *shape, json_t *perf)
{
	json_t *cur = json_object_get(bests, shape);
	double r = num(json_object_get(perf, "speedup_vs_reference"), "ratio_of_medians");

	if (!json_is_object(perf) || !(r > 0) || !isfinite(r))
		return;
	/* Ties keep the earlier variant. */
	if (!cur || r > num(cur, "speedup_vs_reference"))
		json_object_set_new(bests, shape, best_entry(v, shape, perf));
}

/* bests (shape -> entry) as bucket_bests' array: the primary first, then by name. */
static json_t *best_list(json_t *bests, const char *primary)
{
	json_t *out = json_array(), *e;
	const char **names = xcalloc(json_object_size(bests) + 1, sizeof(*names)), *key;
	size_t n = 0;

	if (primary && (e = json_object_get(bests, primary))) {
		json_object_set_new(e, "primary", json_true());
		json_array_append(out, e);
	}
	json_object_foreach (bests, key, e)
		if (!primary || strcmp(key, primary))
			names[n++] = key;
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		e = json_object_get(bests, names[i]);
		json_object_set_new(e, "primary", json_false());
		json_array_append(out, e);
	}
	free(names);
	return out;
}

json_t *bucket_bests(struct store *st, const char *id, json_t *rows)
{
	json_t *all = rows ? json_incref(rows) : store_variants_brief(st, id, -1);
	json_t *bests = json_object(), *v, *out = NULL;
	char *primary = NULL;
	size_t i;

	json_array_foreach (all, i, v) {
		const char *status = json_string_value(json_object_get(v, "status")), *shape;
		json_t *res, *by, *perf;

		if (!status || strcmp(status, "ok"))
			continue;
		res = store_result_get(st, id, json_string_value(json_object_get(v, "id")));
		by = json_object_get(res, "performance_by_shape");
		/* Every result of a session has the same buckets: the first ok one tells. */
		if (json_object_size(by) < 2 && !primary) {
			json_decref(res);
			break;
		}
		if (json_object_size(by) > 1 && !primary &&
		    json_is_string(json_object_get(json_object_get(res, "performance"), "shape")))
			primary = xstrdup(json_string_value(
				json_object_get(json_object_get(res, "performance"), "shape")));
		if (json_object_size(by) > 1)
			json_object_foreach (by, shape, perf)
				best_keep(bests, v, shape, perf);
		json_decref(res);
	}
	if (json_object_size(bests) > 1)
		out = best_list(bests, primary);
	free(primary);
	json_decref(bests);
	json_decref(all);
	return out;
}
