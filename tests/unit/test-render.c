/*
 * test-render.c - controller/render.c: placeholders substituted in parsed
 * YAML (typed, quoted, interpolated, optional, in keys), values that try to
 * change the document's structure, errors with their places, and the YAML
 * writer reading back what it wrote.
 */
#include "err.h"
#include "render.h"
#include "sbuf.h"
#include "test.h"
#include "arraysize.h"

#include <stdlib.h>
#include <string.h>

static const char vars_json[] = "{\"name\": \"job-1\", \"n\": 3, \"on\": true, \"none\": null,"
				" \"sel\": {\"gpu\": \"a100\"}, \"list\": [1, 2],"
				" \"evil\": \"x\\nkind: Pod\\nspec: {}\", \"colon\": \"a: b\", "
				"\"res\": \"nvidia.com/gpu\"}";

static const struct {
	const char *tmpl;
	const char *want; /* compact JSON, or NULL for an error */
	int code;
	const char *msg; /* part of the error */
} cases[] = {
	{ "a: ${n}", "{\"a\":3}", 0, NULL },
	{ "a: \"${n}\"", "{\"a\":\"3\"}", 0, NULL },
	{ "a: '${on}'", "{\"a\":\"true\"}", 0, NULL },
	{ "a: ${on}", "{\"a\":true}", 0, NULL },
	{ "a: ${sel}", "{\"a\":{\"gpu\":\"a100\"}}", 0, NULL },
	{ "a:\n  - x\n  - ${list}", "{\"a\":[\"x\",[1,2]]}", 0, NULL },
	{ "a: pre-${name}-${n}", "{\"a\":\"pre-job-1-3\"}", 0, NULL },
	{ "a: ${none?}\nb: 1", "{\"b\":1}", 0, NULL },
	{ "a: [1, \"${missing?}\", 2]", "{\"a\":[1,2]}", 0, NULL },
	{ "a: x-${missing?}", "{}", 0, NULL },
	{ "\"${res}\": 1", "{\"nvidia.com/gpu\":1}", 0, NULL },
	{ "\"${missing?}\": 1\nb: 2", "{\"b\":2}", 0, NULL },
	{ "a: $${literal}", "{\"a\":\"${literal}\"}", 0, NULL },
	{ "a: ${evil}", "{\"a\":\"x\\nkind: Pod\\nspec: {}\"}", 0, NULL },
	{ "a: \"${colon}\"", "{\"a\":\"a: b\"}", 0, NULL },
	{ "a: 1\nb: plain text", "{\"a\":1,\"b\":\"plain text\"}", 0, NULL },
	{ "a:\n  b: ${missing}", NULL, KERR_INVALID,
	  "t.yaml:2:6: a.b: placeholder ${missing} has no value" },
	{ "a: ${none}", NULL, KERR_INVALID, "has no value" },
	{ "a: x-${sel}", NULL, KERR_INVALID, "cannot go inside a string" },
	{ "a: x-${1bad}", NULL, KERR_PARSE, "malformed placeholder at column 3" },
	{ "a: ${unclosed", NULL, KERR_PARSE, "malformed placeholder" },
	{ "\"${sel}\": 1", NULL, KERR_INVALID, "where a string is wanted" },
	{ "\"${name}\": 1\njob-1: 2", NULL, KERR_INVALID, "appears twice" },
	{ "${none?}", NULL, KERR_INVALID, "must render to a mapping" },
	{ "- 1", NULL, KERR_INVALID, "must render to a mapping" },
	{ "a: [1", NULL, KERR_PARSE, "t.yaml:" },
};

TEST(templates)
{
	json_t *vars = json_loads(vars_json, 0, NULL);

	CHECK(vars != NULL);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		json_t *out = NULL;
		char msg[512] = "";
		int rc = render_template("t.yaml", cases[i].tmpl, strlen(cases[i].tmpl), vars, &out,
					 msg, sizeof(msg));

		if (cases[i].want) {
			char *got =
				out ? json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

			CHECK(rc == 0);
			CHECK_STR(got, cases[i].want);
			if (rc)
				fprintf(stderr, "case %zu: %s\n", i, msg);
			free(got);
		} else {
			CHECK(rc == cases[i].code);
			CHECK(out == NULL);
			CHECK_CONTAINS(msg, cases[i].msg);
		}
		json_decref(out);
	}
	json_decref(vars);
}

/* What render_yaml writes reads back as the same document. */
TEST(yaml_round_trip)
{
	static const char *const docs[] = {
		"{\"a\":1,\"b\":[{\"c\":\"x\\ny\",\"d\":[]},{}],\"true\":\"no\",\"e\":{\"f\":null},"
		"\"g\":[[1,2],\"3\"],\"h\":1.5,\"k:v\":\"# not a comment\",\"-x\":false}",
		"{\"apiVersion\":\"batch/v1\",\"spec\":{\"template\":{\"spec\":{\"containers\":[{"
		"\"name\":\"evalpod\",\"env\":[{\"name\":\"A\",\"value\":\"https://h/"
		"k?X-Amz-a=1&b=2\"}]"
		"}]}}}}",
	};

	for (size_t i = 0; i < ARRAY_SIZE(docs); i++) {
		json_t *want = json_loads(docs[i], 0, NULL), *back = NULL;
		struct sbuf b = SBUF_INIT;
		char msg[512];

		render_yaml(&b, want);
		sbuf_addch(&b, '\0');
		CHECK(render_template("out.yaml", b.buf, strlen(b.buf), NULL, &back, msg,
				      sizeof(msg)) == 0);
		CHECK(back && json_equal(want, back));
		if (!back || !json_equal(want, back))
			fprintf(stderr, "doc %zu wrote:\n%s\n", i, b.buf);
		json_decref(back);
		json_decref(want);
		sbuf_release(&b);
	}
}

int main(void)
{
	RUN(templates);
	RUN(yaml_round_trip);
	return test_summary();
}
