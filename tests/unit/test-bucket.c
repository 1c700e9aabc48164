/*
 * test-bucket.c - shape buckets (controller/bucket.c): which shapes are
 * buckets, and the objective across them, a table of result documents and
 * the geometric means they must give.
 */
#include "test.h"
#include "bucket.h"
#include "spec.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

/* A spec with only its shapes set, from JSON text. */
static void spec_with(struct spec *sp, const char *shapes)
{
	memset(sp, 0, sizeof(*sp));
	sp->shapes = json_loads(shapes, 0, NULL);
}

TEST(count_and_names)
{
	static const struct {
		const char *shapes;
		size_t count;
		const char *names;
	} cases[] = {
		{ "[{\"name\": \"a\"}, {\"name\": \"b\"}]", 1, "[\"a\"]" },
		{ "[{\"name\": \"a\"}, {\"name\": \"b\", \"timed\": true}]", 1, "[\"b\"]" },
		{ "[{\"name\": \"a\", \"timed\": true}, {\"name\": \"b\"}, "
		  "{\"name\": \"c\", \"timed\": true}]",
		  2, "[\"a\", \"c\"]" },
		{ "[{\"name\": \"a\", \"timed\": false}, {\"name\": \"b\", \"timed\": true}, "
		  "{\"name\": \"c\", \"timed\": true}, {\"name\": \"d\", \"timed\": true}]",
		  3, "[\"b\", \"c\", \"d\"]" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct spec sp;
		json_t *names, *want = json_loads(cases[i].names, 0, NULL);

		spec_with(&sp, cases[i].shapes);
		names = bucket_names(&sp);
		CHECK(bucket_count(&sp) == cases[i].count);
		CHECK(json_equal(names, want));
		json_decref(names);
		json_decref(want);
		json_decref(sp.shapes);
	}
}

/* A result with speedups vs the reference (r) and the baseline (b) at a and c. */
static json_t *result(double ra, double rc, double ba, double bc)
{
	json_t *by = json_object();
	double r[2] = { ra, rc }, b[2] = { ba, bc };
	const char *names[2] = { "a", "c" };

	for (int i = 0; i < 2; i++) {
		json_t *perf = json_object();

		if (r[i] >= 0)
			json_object_set_new(perf, "speedup_vs_reference",
					    json_pack("{s:f}", "ratio_of_medians", r[i]));
		if (b[i] >= 0)
			json_object_set_new(perf, "speedup_vs_baseline",
					    json_pack("{s:f}", "ratio_of_medians", b[i]));
		json_object_set_new(by, names[i], perf);
	}
	return json_pack("{s:s, s:o}", "status", "ok", "performance_by_shape", by);
}

TEST(objective)
{
	static const struct {
		double ra, rc, ba, bc; /* -1: the figure is absent */
		double want_ref, want_base;
	} cases[] = {
		{ 2, 8, 1, 1, 4, 1 },       /* sqrt(2 * 8) */
		{ 1, 1, 0.5, 2, 1, 1 },     /* a loss at one bucket, a gain at the other */
		{ 3, 3, 1.5, 1.5, 3, 1.5 }, /* equal buckets: the bucket's figure */
		{ 2, -1, 1, 1, NAN, 1 },    /* a bucket without a figure: not ranked */
		{ 2, 0, 1, -1, NAN, NAN },  /* not positive, absent */
		{ 0.25, 4, 4, 0.25, 1, 1 },
	};
	struct spec sp;

	spec_with(&sp, "[{\"name\": \"a\", \"timed\": true}, {\"name\": \"b\"}, "
		       "{\"name\": \"c\", \"timed\": true}]");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *res = result(cases[i].ra, cases[i].rc, cases[i].ba, cases[i].bc);
		double r = bucket_objective(&sp, res, "reference");
		double b = bucket_objective(&sp, res, "baseline");

		if (isnan(cases[i].want_ref))
			CHECK(isnan(r));
		else
			CHECK(fabs(r - cases[i].want_ref) < 1e-12);
		if (isnan(cases[i].want_base))
			CHECK(isnan(b));
		else
			CHECK(fabs(b - cases[i].want_base) < 1e-12);
		json_decref(res);
	}
	/* A result of a single-bucket batch (no performance_by_shape) has no objective. */
	{
		json_t *plain = json_pack("{s:s, s:{}}", "status", "ok", "performance");

		CHECK(isnan(bucket_objective(&sp, plain, "reference")));
		json_decref(plain);
	}
	json_decref(sp.shapes);
}

int main(void)
{
	RUN(count_and_names);
	RUN(objective);
	return test_summary();
}
