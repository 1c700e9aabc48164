/*
 * kctl show SESSION [VARIANT] [-o text|json] [--state FILE]
 *   without VARIANT: every variant of the session, one line each (with
 *   several shape buckets, then the best of each bucket);
 *   with VARIANT: its figures, its source and its diff from its parent.
 */
#include "cmds.h"
#include "bucket.h"
#include "diff.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "session.h"
#include "loop.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* v with prec decimals into buf, or "-" where there is no figure (NaN). */
static const char *cell(char *buf, size_t n, double v, int prec)
{
	if (isnan(v))
		return "-";
	snprintf(buf, n, "%.*f", prec, v);
	return buf;
}

/* "cached": the result cache's key, on each variant whose result came from it. */
static void mark_cached(struct store *st, const char *id, json_t *vars)
{
	json_t *keys = store_result_cached(st, id), *v;
	size_t i;

	json_array_foreach (vars, i, v) {
		json_t *key = json_object_get(keys, json_string_value(json_object_get(v, "id")));

		if (key)
			json_object_set(v, "cached", key);
	}
	json_decref(keys);
}

static void show_list(json_t *vars)
{
	size_t i;
	json_t *v;

	printf("%-12s %-12s %4s %-14s %9s %9s %9s %6s %-8s  %s\n", "variant", "parent", "line",
	       "status", "vs_ref", "vs_best", "GFLOP/s", "cv%", "quality", "rationale");
	json_array_foreach (vars, i, v) {
		json_t *l = json_object_get(v, "lineage");

		char status[64], ref[32], best[32], gf[32], cv[32];

		snprintf(status, sizeof(status), "%s%s", str(v, "status"),
			 json_object_get(v, "cached") ? " (cached)" : "");
		printf("%-12s %-12s %4lld %-14s %9s %9s %9s %6s %-8s  %s\n", str(v, "id"),
		       str(v, "parent"), json_is_integer(l) ? (long long)json_integer_value(l) : -1,
		       status, cell(ref, sizeof(ref), num(v, "speedup_ref"), 2),
		       cell(best, sizeof(best), num(v, "speedup_base"), 3),
		       cell(gf, sizeof(gf), num(v, "gflops"), 2),
		       cell(cv, sizeof(cv), num(v, "robust_cv") * 100, 1), str(v, "quality"),
		       str(v, "rationale"));
	}
}

/*
 * A session with several shape buckets: the best variant of each, from the
 * recorded figures (only the overall winner goes through the confirmation).
 */
static void show_bests(json_t *bests)
{
	size_t i;
	json_t *b;

	if (!bests)
		return;
	printf("\nbest per shape bucket (recorded figures; the confirmation re-times only the "
	       "overall winner):\n");
	printf("%-16s %-12s %5s %10s %9s %9s %6s %-8s\n", "bucket", "variant", "round", "median_ms",
	       "vs_ref", "GFLOP/s", "cv%", "quality");
	json_array_foreach (bests, i, b) {
		char name[64];

		snprintf(name, sizeof(name), "%s%s", str(b, "bucket"),
			 json_is_true(json_object_get(b, "primary")) ? " (primary)" : "");
		printf("%-16s %-12s %5lld %10.4f %9.2f %9.2f %6.1f %-8s\n", name, str(b, "variant"),
		       (long long)json_integer_value(json_object_get(b, "round")),
		       num(b, "median_ms"), num(b, "speedup_vs_reference"), num(b, "gflops"),
		       num(b, "robust_cv") * 100, str(b, "quality"));
	}
}

/* -o json of a multi-bucket session: each variant row names the buckets it is the best of. */
static void mark_bests(json_t *vars, json_t *bests)
{
	size_t i, k;
	json_t *v, *b;

	if (!bests)
		return;
	json_array_foreach (vars, i, v) {
		json_t *in = json_array();

		json_array_foreach (bests, k, b)
			if (!strcmp(str(b, "variant"), str(v, "id")))
				json_array_append(in, json_object_get(b, "bucket"));
		json_object_set_new(v, "best_in_buckets", in);
	}
}

/* The figures of every bucket of a multi-bucket result, one line each. */
static void show_buckets(json_t *res)
{
	json_t *by = json_object_get(res, "performance_by_shape"), *perf;
	const char *shape;

	json_object_foreach (by, shape, perf)
		printf("bucket    %s: %.4f ms (robust CV %.1f%%), %.2fx vs reference, %.2f "
		       "GFLOP/s\n",
		       shape, num(perf, "median_ms"), num(perf, "robust_cv") * 100,
		       num(json_object_get(perf, "speedup_vs_reference"), "ratio_of_medians"),
		       num(perf, "gflops"));
}

static void show_variant(struct store *st, const char *session, json_t *v)
{
	json_t *res = store_result_get(st, session, str(v, "id"));
	json_t *perf = json_object_get(res, "performance"), *fault = json_object_get(res, "fault");
	json_t *parent = NULL;
	struct sbuf d = SBUF_INIT;

	printf("variant   %s (round %lld, parent %s, lineage %lld)\n", str(v, "id"),
	       (long long)json_integer_value(json_object_get(v, "round")), str(v, "parent"),
	       (long long)json_integer_value(json_object_get(v, "lineage")));
	printf("rationale %s\noptions   %s\nstatus    %s\n", str(v, "rationale"), str(v, "options"),
	       res ? str(res, "status") : "not evaluated yet");
	if (json_is_object(json_object_get(res, "cache"))) {
		json_t *c = json_object_get(res, "cache");

		printf("cached    from the result cache: key %s, session %s, batch %s, stored %s\n",
		       str(c, "key"), str(c, "session"), str(c, "batch"), str(c, "stored"));
	}
	if (json_is_object(fault))
		printf("fault     %s/%s: %s\n", str(fault, "origin"), str(fault, "kind"),
		       str(fault, "message"));
	if (json_is_object(perf)) {
		double base = num(json_object_get(perf, "speedup_vs_baseline"), "ratio_of_medians");

		printf("median    %.4f ms (robust CV %.1f%%, %s), %.2fx vs reference",
		       num(perf, "median_ms"), num(perf, "robust_cv") * 100, str(perf, "quality"),
		       num(json_object_get(perf, "speedup_vs_reference"), "ratio_of_medians"));
		/* round 0 has no incumbent: the start is timed against the reference only */
		if (isnan(base))
			printf("\n");
		else
			printf(", %.3fx vs the incumbent of its round\n", base);
	}
	if (json_is_object(json_object_get(res, "roofline")))
		printf("roofline  %.2f GFLOP/s, %.2f GB/s, bottleneck %s\n",
		       num(json_object_get(res, "roofline"), "gflops"),
		       num(json_object_get(res, "roofline"), "gbs"),
		       str(json_object_get(res, "roofline"), "bottleneck"));
	show_buckets(res);
	if (strcmp(str(v, "parent"), "-"))
		parent = store_variant_get(st, session, str(v, "parent"));
	if (parent) {
		if (strcmp(str(parent, "options"), str(v, "options")))
			printf("\noptions: %s -> %s\n", str(parent, "options"), str(v, "options"));
		diff_unified(str(parent, "id"), str(parent, "source"), str(v, "id"),
			     str(v, "source"), &d);
		printf("\n%s", d.len > strlen(str(parent, "id")) + strlen(str(v, "id")) + 10
				       ? d.buf
				       : "(source identical to the parent's)\n");
	}
	printf("\n%s", str(v, "source"));
	sbuf_release(&d);
	json_decref(parent);
	json_decref(res);
}

/* -o json: the variant with its result and its parent's id, as recorded. */
static void show_variant_json(struct store *st, const char *session, json_t *v)
{
	json_t *out = json_deep_copy(v);
	json_t *res = store_result_get(st, session, str(v, "id"));
	char *text;

	json_object_set_new(out, "result", res ? res : json_null());
	text = jx_dump(out);
	fputs(text, stdout);
	free(text);
	json_decref(out);
}

static void show_list_json(json_t *vars)
{
	char *text = jx_dump(vars);

	fputs(text, stdout);
	free(text);
}

static const char show_usage[] =
	"usage: kctl show SESSION [VARIANT] [-o text|json] [--state FILE]\n";

int cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL, *variant;
	char msg[2048];
	struct store *st;
	json_t *vars = NULL, *v;
	int c, as_json = 0, rc = KCTL_EXIT_OK;
	char *id;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c == 'o' && !cmd_output_format(optarg, &as_json)) {
			continue;
		} else if (c == 'S') {
			state = optarg;
		} else {
			fputs(show_usage, stderr);
			return KCTL_EXIT_USAGE;
		}
	}
	if (argc - optind < 1 || argc - optind > 2) {
		fputs(show_usage, stderr);
		return KCTL_EXIT_USAGE;
	}
	variant = argc - optind == 2 ? argv[optind + 1] : NULL;
	if (!(st = cmd_open_store_read(state)))
		return KCTL_EXIT_INFRA;
	if (!(id = cmd_session_id(st, argv[optind]))) {
		rc = KCTL_EXIT_FAIL;
		if (store_check(st, msg, sizeof(msg))) {
			log_error("%s", msg);
			rc = KCTL_EXIT_INFRA;
		}
		store_close(st);
		return rc;
	}
	if (session_report_refresh(st, id, msg, sizeof(msg)) < 0)
		log_warn("session %s: its report.md is stale and cannot be rewritten: %s", id, msg);
	if (store_check(st, msg, sizeof(msg))) {
		log_error("%s", msg);
		rc = KCTL_EXIT_INFRA;
	} else if (!variant) {
		json_t *bests;

		if (!(vars = store_variants_brief(st, id, -1)))
			vars = json_array();
		bests = bucket_bests(st, id, vars);
		mark_cached(st, id, vars);
		mark_bests(vars, bests);
		if (as_json) {
			show_list_json(vars);
		} else {
			show_list(vars);
			show_bests(bests);
		}
		json_decref(bests);
	} else if (!(v = store_variant_get(st, id, variant))) {
		log_error("no variant '%s' in session '%s'", variant, id);
		rc = KCTL_EXIT_FAIL;
	} else {
		if (as_json)
			show_variant_json(st, id, v);
		else
			show_variant(st, id, v);
		json_decref(v);
	}
	if (!rc && store_check(st, msg, sizeof(msg))) {
		log_error("%s", msg);
		rc = KCTL_EXIT_INFRA;
	}
	json_decref(vars);
	store_close(st);
	free(id);
	return rc;
}
