/*
 * emit.c - storing and printing a batch's results: every program's result
 * document and artifacts, and the summary, into the output folder and/or
 * through the presigned PUT URLs the batch names; the table on stdout.
 */
#include "run-internal.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "xalloc.h"

#include <dirent.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * PUTs data (or, with data NULL, the file at path, streamed) to url; logs
 * and returns nonzero on failure.
 */
static int upload(struct run *r, const char *url, const char *what, const void *data, size_t len,
		  const char *path, const char *type)
{
	const char *hdr[] = { type, NULL };
	struct http_opts o = r->http;
	struct http_response resp = { 0 };
	char msg[1024];
	int rc;

	o.headers = hdr;
	o.body_path = data ? NULL : path;
	rc = http_request("PUT", url, data, data ? len : 0, &o, &resp, msg, sizeof(msg));
	if (rc)
		log_error("uploading %s: %s", what, msg);
	http_response_release(&resp);
	return rc;
}

/* The presigned URL for artifact name of program ou, or NULL. */
static const char *artifact_url(const struct output_url *ou, const char *name)
{
	for (size_t i = 0; ou && i < ou->nart; i++)
		if (!strcmp(ou->art[i].name, name))
			return ou->art[i].url;
	return NULL;
}

/* Whether path is a plain file with one name (workers are untrusted: no links, no FIFOs). */
static int plain_file(const char *path)
{
	struct stat st;

	return !lstat(path, &st) && S_ISREG(st.st_mode) && st.st_nlink == 1;
}

/* Copies or uploads the artifacts of id found in src; records them in arts. */
static int emit_dir(struct run *r, const char *id, const char *src, json_t *arts)
{
	const struct output_url *ou = batch_output_url(&r->b, id);
	char *dst = r->out_dir ? xasprintf("%s/%s", r->out_dir, id) : NULL;
	DIR *d = opendir(src);
	struct dirent *de;
	int failed = 0;

	while (d && (de = readdir(d))) {
		char *path, *text = NULL, *to, msg[512];
		const char *url = artifact_url(ou, de->d_name);
		size_t len = 0;

		if (de->d_name[0] == '.')
			continue;
		path = xasprintf("%s/%s", src, de->d_name);
		if (!plain_file(path)) {
			free(path);
			continue;
		}
		if (url)
			failed |= upload(r, url, de->d_name, NULL, 0, path,
					 "Content-Type: application/octet-stream") != 0;
		if (dst) {
			to = xasprintf("%s/%s", dst, de->d_name);
			if (file_read_untrusted(path, 256u << 20, &text, &len, msg, sizeof(msg)) ||
			    dir_make(dst, msg, sizeof(msg)) ||
			    file_write_atomic(to, text, len, msg, sizeof(msg))) {
				log_error("%s", msg);
				failed = 1;
			}
			free(to);
		}
		json_object_set_new(arts, de->d_name, json_string(de->d_name));
		free(text);
		free(path);
	}
	if (d)
		closedir(d);
	free(dst);
	return failed;
}

/*
 * Copies or uploads the artifacts of id (its check worker's and the timing
 * worker's); records where they went in result.
 */
static int emit_artifacts(struct run *r, const char *id, json_t *result)
{
	char *check = strcmp(id, "reference") ? xasprintf("%s/w/p-%s/art", r->work, id)
					      : xasprintf("%s/w/reference/art", r->work);
	char *timed = xasprintf("%s/w/time/art/%s", r->work, id);
	json_t *arts = json_object();
	int failed = emit_dir(r, id, check, arts) | emit_dir(r, id, timed, arts);

	json_object_set_new(result, "artifacts", arts);
	free(check);
	free(timed);
	return failed;
}

static int emit_doc(struct run *r, const char *name, const char *url, json_t *doc)
{
	char *text = jx_dump(doc), *path;
	int failed = 0;

	if (url)
		failed |= upload(r, url, name, text, strlen(text), NULL,
				 "Content-Type: application/json") != 0;
	if (r->out_dir) {
		path = xasprintf("%s/%s.json", r->out_dir, name);
		if (file_write_atomic(path, text, strlen(text), r->msg, sizeof(r->msg))) {
			log_error("%s", r->msg);
			failed = 1;
		}
		free(path);
	}
	free(text);
	return failed;
}

static double jget(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(json_object_get(o, a), b);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static double jnum1(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Formats v with prec decimals into buf, or "-" when v is not a number. */
static const char *cell(char *buf, size_t n, int prec, double v)
{
	if (isfinite(v))
		snprintf(buf, n, "%.*f", prec, v);
	else
		snprintf(buf, n, "-");
	return buf;
}

static void print_row(const char *id, json_t *res)
{
	json_t *perf = json_object_get(res, "performance");
	const char *st = json_string_value(json_object_get(res, "status"));
	const char *bn =
		json_string_value(json_object_get(json_object_get(res, "roofline"), "bottleneck"));
	char a[32], b[32], c[32], d[32];

	printf("%-24s %-14s %10s %8s %8s %9s  %s\n", id, st ? st : "?",
	       cell(a, sizeof(a), 4, jget(res, "performance", "median_ms")),
	       cell(b, sizeof(b), 2, jget(perf, "speedup_vs_reference", "ratio_of_medians")),
	       cell(c, sizeof(c), 2, jget(perf, "speedup_vs_baseline", "ratio_of_medians")),
	       cell(d, sizeof(d), 2, jget(res, "roofline", "gflops")), bn ? bn : "-");
}

/* A result whose timings were perturbed must never pass for a real one. */
static void mark_noise(const struct run *r, json_t *res)
{
	json_t *warn = json_object_get(json_object_get(res, "performance"), "warnings"), *perf;
	const char *shape;

	if (r->noise.on && json_is_array(warn))
		json_array_append_new(warn, noise_warning(&r->noise));
	json_object_foreach (json_object_get(res, "performance_by_shape"), shape, perf)
		if (r->noise.on && json_is_array(warn = json_object_get(perf, "warnings")))
			json_array_append_new(warn, noise_warning(&r->noise));
}

/* Per shape: its time document when it was timed (docs[timed_shape] is r->tdoc); taken by free. */
static json_t **shape_docs(const struct run *r)
{
	json_t **docs = xcalloc(r->b.nshapes + 1, sizeof(*docs));

	for (size_t s = 0; s < r->b.nshapes; s++)
		docs[s] = s == r->b.timed_shape ? r->tdoc : r->sdocs ? r->sdocs[s] : NULL;
	return docs;
}

/* The reference's timing entry at every timed shape, when the batch times several. */
static void reference_by_shape(const struct run *r, json_t *ref, json_t *const *docs)
{
	json_t *by = json_object(), *anchors = json_object(), *e;

	for (size_t s = 0; s < r->b.nshapes; s++) {
		e = json_object_get(json_object_get(docs[s], "programs"), "reference");
		if (json_is_object(e))
			json_object_set(by, r->b.shapes[s].name, e);
		e = json_object_get(docs[s], "reference_anchor");
		if (json_is_object(e))
			json_object_set(anchors, r->b.shapes[s].name, e);
	}
	if (batch_ntimed(&r->b) > 1 && json_object_size(by))
		json_object_set(ref, "performance_by_shape", by);
	if (batch_ntimed(&r->b) > 1 && json_object_size(anchors))
		json_object_set(ref, "anchor_by_shape", anchors);
	json_decref(anchors);
	json_decref(by);
}

/* The table's rows of the other timed shapes: "ID@SHAPE", the same columns. */
static void print_shape_rows(const struct run *r, const char *id, json_t *res)
{
	json_t *by = json_object_get(res, "performance_by_shape");

	for (size_t s = 0; s < r->b.nshapes; s++) {
		json_t *perf = json_object_get(by, r->b.shapes[s].name);
		char name[300], a[32], b[32], c[32], d[32];

		if (s == r->b.timed_shape || !json_is_object(perf))
			continue;
		snprintf(name, sizeof(name), "%s@%s", id, r->b.shapes[s].name);
		printf("%-24s %-14s %10s %8s %8s %9s  %s\n", name, "ok",
		       cell(a, sizeof(a), 4, jnum1(perf, "median_ms")),
		       cell(b, sizeof(b), 2,
			    jget(perf, "speedup_vs_reference", "ratio_of_medians")),
		       cell(c, sizeof(c), 2, jget(perf, "speedup_vs_baseline", "ratio_of_medians")),
		       cell(d, sizeof(d), 2, jnum1(perf, "gflops")), "-");
	}
}

static json_t *summary_new(struct run *r)
{
	json_t *s = json_pack("{s:s, s:i, s:s, s:[]}", "schema", SUMMARY_SCHEMA, "version",
			      RESULT_VERSION, "batch_id", r->b.batch_id, "results");
	json_t *rt =
		r->tdoc ? json_object_get(json_object_get(r->tdoc, "programs"), "reference") : NULL;

	if (r->tdoc) {
		json_object_set(s, "device", json_object_get(r->tdoc, "device"));
		json_object_set(s, "peaks", json_object_get(r->tdoc, "peaks"));
		json_t *timing = json_pack("{s:O, s:O, s:O, s:O}", "rounds",
					   json_object_get(r->tdoc, "rounds"), "wall_ms",
					   json_object_get(r->tdoc, "wall_ms"), "flush_bytes",
					   json_object_get(r->tdoc, "flush_bytes"), "timing_seeds",
					   json_object_get(r->tdoc, "timing_seeds"));

		if (json_is_integer(json_object_get(r->tdoc, "flushes")))
			json_object_set(timing, "flushes", json_object_get(r->tdoc, "flushes"));

		if (json_is_string(json_object_get(r->tdoc, "flush")))
			json_object_set(timing, "flush", json_object_get(r->tdoc, "flush"));
		if (json_is_string(json_object_get(r->tdoc, "flush_built_from")))
			json_object_set(timing, "flush_built_from",
					json_object_get(r->tdoc, "flush_built_from"));
		if (json_is_object(json_object_get(r->tdoc, "peak_probe")))
			json_object_set(timing, "peak_probe",
					json_object_get(r->tdoc, "peak_probe"));
		json_object_set_new(s, "timing", timing);
	}
	json_object_set_new(s, "reference",
			    json_pack("{s:O, s:O, s:b}", "compile",
				      json_object_get(r->ref.check, "compile")
					      ? json_object_get(r->ref.check, "compile")
					      : json_null(),
				      "performance", rt ? rt : json_null(), "outputs_cached",
				      r->ref_cached));
	if (r->tdoc && json_is_object(json_object_get(r->tdoc, "reference_anchor")))
		json_object_set(json_object_get(s, "reference"), "anchor",
				json_object_get(r->tdoc, "reference_anchor"));
	if (r->noise.on)
		json_object_set_new(s, "test_noise", noise_json(&r->noise));
	if (r->tdoc) {
		json_t **docs = shape_docs(r);

		reference_by_shape(r, json_object_get(s, "reference"), docs);
		free(docs);
	}
	return s;
}

int emit_all(struct run *r, double wall_ms)
{
	json_t *sum = summary_new(r), *list = json_object_get(sum, "results");
	struct outcome *base = r->b.baseline ? &r->progs[0] : NULL;
	json_t *progs = r->tdoc ? json_object_get(r->tdoc, "programs") : NULL;
	json_t **docs = shape_docs(r);
	int failed = 0, several = batch_ntimed(&r->b) > 1;

	if (r->out_dir && dir_make(r->out_dir, r->msg, sizeof(r->msg))) {
		json_decref(sum);
		free(docs);
		return RUN_EXIT_INFRA;
	}
	r->ref.time = progs ? json_object_get(progs, "reference") : NULL;
	printf("%-24s %-14s %10s %8s %8s %9s  %s\n", "id", "status", "median_ms", "vs_ref",
	       "vs_base", "GFLOP/s", "bottleneck");
	{
		char a[32];

		printf("%-24s %-14s %10s %8s %8s %9s  %s\n", "reference", "ok",
		       cell(a, sizeof(a), 4, jget(r->ref.time, "stats", "median")), "1.00", "-",
		       "-", "-");
	}
	for (size_t i = 0; i < r->nprogs; i++) {
		struct outcome *o = &r->progs[i];
		const struct output_url *ou = batch_output_url(&r->b, o->src->id);
		json_t *res;

		o->time = progs ? json_object_get(progs, o->src->id) : NULL;
		res = result_build(&r->b, o, &r->ref, base, r->tdoc);
		if (several)
			result_by_shape(&r->b, res, o->src->id, base ? base->src->id : NULL, docs);
		mark_noise(r, res);
		failed |= emit_artifacts(r, o->src->id, res);
		failed |= emit_doc(r, o->src->id, ou ? ou->result : NULL, res);
		print_row(o->src->id, res);
		print_shape_rows(r, o->src->id, res);
		json_array_append_new(list,
				      json_pack("{s:s, s:O, s:O*, s:O*}", "id", o->src->id,
						"status", json_object_get(res, "status"),
						"performance", json_object_get(res, "performance"),
						"fault", json_object_get(res, "fault")));
		if (json_object_get(res, "performance_by_shape"))
			json_object_set(json_array_get(list, json_array_size(list) - 1),
					"performance_by_shape",
					json_object_get(res, "performance_by_shape"));
		json_decref(res);
	}
	{
		json_t *ref = json_object_get(sum, "reference");

		failed |= emit_artifacts(r, "reference", ref);
	}
	json_object_set_new(sum, "wall_ms", json_real(wall_ms));
	failed |= emit_doc(r, "summary", r->b.outputs.summary, sum);
	json_decref(sum);
	free(docs);
	if (failed)
		snprintf(r->msg, sizeof(r->msg), "some results could not be stored (see above)");
	return failed ? RUN_EXIT_INFRA : RUN_EXIT_OK;
}
