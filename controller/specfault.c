/*
 * specfault.c - when a round's outcome shows the spec itself is wrong, so
 * the session stops with the cause named instead of spending its budget.
 */
#include "session.h"
#include "round.h"
#include "err.h"
#include "sbuf.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Whether line (1-based) of src lies outside every EVOLVE-BLOCK body. */
static int outside_blocks(struct session *s, const char *src, long line)
{
	struct blocks bl = { 0 };
	char m[256];
	size_t off = 0;
	long l = 1;
	int outside = 1;

	if (!src || line < 1 ||
	    blocks_find(src, s->spec.marker_start, s->spec.marker_end, &bl, m, sizeof(m)))
		return 0;
	for (; src[off] && l < line; off++)
		l += src[off] == '\n';
	for (size_t i = 0; i < bl.n; i++)
		if (off >= bl.b[i].start && off < bl.b[i].end)
			outside = 0;
	blocks_release(&bl);
	return outside;
}

/* The line of the first "program.cl:LINE:" in a compiler message, or 0. */
static long error_line(const char *m)
{
	const char *p = m ? strstr(m, "program.cl:") : NULL;

	return p ? strtol(p + 11, NULL, 10) : 0;
}

/* m with "program.cl:LINE:COL: " dropped, so messages of different sources compare. */
static void strip_positions(const char *m, struct sbuf *b)
{
	while (m && *m) {
		const char *p = strstr(m, "program.cl:");

		if (!p) {
			sbuf_adds(b, m);
			break;
		}
		sbuf_add(b, m, (size_t)(p - m));
		p += 11;
		while ((*p >= '0' && *p <= '9') || *p == ':')
			p++;
		m = p + (*p == ' ');
	}
}

/* "compile_error/refused: MESSAGE" of a stored result, positions replaced by the template's path. */
static void describe_fault(struct session *s, json_t *res, struct sbuf *b)
{
	json_t *f = json_object_get(res, "fault");
	const char *kind = json_string_value(json_object_get(f, "kind"));
	const char *m = json_string_value(json_object_get(f, "message"));
	char *path = xasprintf("%s:", s->spec.template_path);

	sbuf_addf(b, "%s%s%s", json_string_value(json_object_get(res, "status")), kind ? "/" : "",
		  kind ? kind : "");
	if (m) {
		sbuf_adds(b, ": ");
		while (*m && b->len < 1500) {
			const char *p = strstr(m, "program.cl:");
			size_t len = p ? (size_t)(p - m) : strlen(m);

			sbuf_add(b, m, len);
			if (!p)
				break;
			sbuf_adds(b, path);
			m = p + 11;
		}
	}
	free(path);
}

/*
 * Whether round r's outcome shows the spec is wrong: the starting template
 * failed its own evaluation (round 0), or every variant of a search round
 * (two or more) failed with one fault in a part no proposal changes: the
 * build options refused, the same launch setup or geometry error, or a
 * compile error outside the EVOLVE-BLOCKs.  Returns KERR_INVALID with msg
 * naming the cause, or 0.
 */
int spec_fault(struct session *s, int round, char *msg, size_t n)
{
	json_t *row = store_round_get(s->st, s->id, round), *vars = NULL, *v, *res = NULL;
	struct sbuf first = SBUF_INIT, what = SBUF_INIT;
	const char *kind = NULL, *status = NULL;
	size_t i;
	int same = 1, rc = 0;

	if (!row || json_is_object(json_object_get(row, "confirm")))
		goto out;
	vars = store_variants_brief(s->st, s->id, round);
	json_array_foreach (vars, i, v) {
		const char *st = json_string_value(json_object_get(v, "status"));
		struct sbuf sig = SBUF_INIT;
		json_t *r;

		if (!st || !strcmp(st, "ok") || !strcmp(st, "infra_error")) {
			same = 0;
			break;
		}
		r = store_result_get(s->st, s->id, json_string_value(json_object_get(v, "id")));
		sbuf_addf(&sig, "%s/%s: ", st,
			  json_string_value(json_object_get(json_object_get(r, "fault"), "kind")));
		strip_positions(
			json_string_value(json_object_get(json_object_get(r, "fault"), "message")),
			&sig);
		if (!res) {
			res = json_incref(r);
			sbuf_adds(&first, sig.buf);
		} else if (strcmp(first.buf, sig.buf)) {
			same = 0;
		}
		/* a compile error inside the blocks is the variant's, not the spec's */
		if (same && round > 0 && !strcmp(st, "compile_error") &&
		    !strcmp(json_string_value(json_object_get(json_object_get(r, "fault"), "kind")),
			    "compile_error")) {
			json_t *full = store_variant_get(
				s->st, s->id, json_string_value(json_object_get(v, "id")));

			same = outside_blocks(s, json_string_value(json_object_get(full, "source")),
					      error_line(json_string_value(json_object_get(
						      json_object_get(r, "fault"), "message"))));
			json_decref(full);
		}
		json_decref(r);
		sbuf_release(&sig);
		if (!same)
			break;
	}
	if (!same || !res || (round > 0 && json_array_size(vars) < 2))
		goto out;
	status = json_string_value(json_object_get(res, "status"));
	kind = json_string_value(json_object_get(json_object_get(res, "fault"), "kind"));
	if (round > 0 &&
	    !(kind && (!strcmp(kind, "refused") || !strcmp(kind, "bad_geometry") ||
		       !strcmp(kind, "launch_setup") || !strcmp(kind, "compile_error"))))
		goto out;
	describe_fault(s, res, &what);
	if (round == 0)
		rc = kerr_set(
			msg, n, KERR_INVALID,
			"the starting template failed its own evaluation in round 0, so nothing "
			"the search finds could be trusted: %s. %s (evalpod's result: "
			"%s/rounds/r000/results/r00-start.json)",
			what.buf,
			!strcmp(status, "incorrect")
				? "The template and the reference disagree: one of kernel.template "
				  "and kernel.reference is wrong"
			: !strcmp(status, "compile_error")
				? "Fix kernel.template or kernel.build_options"
			: kind && (!strcmp(kind, "bad_geometry") || !strcmp(kind, "launch_setup"))
				? "Check problem.launch against the template"
				: "Fix kernel.template",
			s->dir);
	else
		rc = kerr_set(msg, n, KERR_INVALID,
			      "every variant of round %d (%zu) failed with the same fault, in a "
			      "part of the kernel the search does not change: %s. The spec is at "
			      "fault: check %s",
			      round, json_array_size(vars), what.buf,
			      !strcmp(kind, "refused") ? "kernel.build_options"
			      : !strcmp(kind, "compile_error")
				      ? "kernel.template outside the blocks"
				      : "problem.launch");
out:
	sbuf_release(&first);
	sbuf_release(&what);
	json_decref(res);
	json_decref(vars);
	json_decref(row);
	return rc;
}
