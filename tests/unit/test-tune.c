#include "propose.h"
#include "err.h"
#include "sbuf.h"
#include "xalloc.h"
#include "test.h"
#include "arraysize.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define START "EVOLVE-BLOCK-START"
#define END   "EVOLVE-BLOCK-END"
#define MAXT  8

static const char tmpl[] = "// tile sizes\n"
			   "__kernel void k(__global float *a)\n"
			   "{\n"
			   "\t// EVOLVE-BLOCK-START tile\n"
			   "\t#define TM 4 // rows per item\n"
			   "\t#ifndef WX\n"
			   "\t#  define WX 8\n"
			   "\t#endif\n"
			   "\ta[0] = TM * WX;\n"
			   "\t// EVOLVE-BLOCK-END\n"
			   "}\n";

/* --- a spec built by hand -------------------------------------------------- */

struct tdef {
	const char *name;
	int64_t values[16];
	size_t n;
};

struct fix {
	struct spec s;
	struct tunable tu[MAXT];
	char *cons[4];
	struct blocks bl;
};

static void fix_init(struct fix *f, const char *src, const struct tdef *td, size_t nt,
		     const char *const *cons, size_t nc, const char *shapes,
		     enum spec_render render)
{
	char msg[256];

	memset(f, 0, sizeof(*f));
	for (size_t j = 0; j < nt; j++) {
		f->tu[j].name = (char *)td[j].name;
		f->tu[j].values = (int64_t *)td[j].values;
		f->tu[j].nvalues = td[j].n;
	}
	for (size_t c = 0; c < nc; c++)
		f->cons[c] = (char *)cons[c];
	f->s.template_src = (char *)src;
	f->s.marker_start = START;
	f->s.marker_end = END;
	f->s.build_options = "";
	f->s.tunables = f->tu;
	f->s.ntunables = nt;
	f->s.constraints = f->cons;
	f->s.nconstraints = nc;
	f->s.render = render;
	f->s.shapes = shapes ? json_loads(shapes, 0, NULL) : NULL;
	f->s.proposer = PROPOSER_TUNE;
	f->s.seed = 1;
	if (blocks_find(src, START, END, &f->bl, msg, sizeof(msg)))
		fprintf(stderr, "fixture template: %s\n", msg);
}

static void fix_release(struct fix *f)
{
	json_decref(f->s.shapes);
	blocks_release(&f->bl);
}

static const struct tdef three[] = {
	{ "TM", { 1, 2, 4, 8 }, 4 },
	{ "WX", { 1, 2, 4, 8, 16 }, 5 },
	{ "VN", { 1, 2, 4 }, 3 },
};

/* --- rendering ----------------------------------------------------------------- */

static const char rendered_define[] = "// tile sizes\n"
				      "__kernel void k(__global float *a)\n"
				      "{\n"
				      "\t// EVOLVE-BLOCK-START tile\n"
				      "\t#define VN 4\n"
				      "\t#define TM 8 // rows per item\n"
				      "\t#ifndef WX\n"
				      "\t#  define WX 2\n"
				      "\t#endif\n"
				      "\ta[0] = TM * WX;\n"
				      "\t// EVOLVE-BLOCK-END\n"
				      "}\n";

TEST(render_define)
{
	struct fix f;
	json_t *params = json_pack("{s:i, s:i, s:i}", "TM", 8, "WX", 2, "VN", 4);
	char *src = NULL, *opt = NULL, msg[256] = "";

	fix_init(&f, tmpl, three, 3, NULL, 0, NULL, RENDER_DEFINE);
	f.s.build_options = "-cl-mad-enable";
	CHECK(spec_render_point(&f.s, &f.bl, params, &src, &opt, msg, sizeof(msg)) == 0);
	CHECK_STR(src, rendered_define);
	CHECK_STR(opt, "-cl-mad-enable");
	CHECK(blocks_verify(tmpl, &f.bl, src, START, END, msg, sizeof(msg)) == 0);
	free(src);
	free(opt);
	json_decref(params);
	fix_release(&f);
}

TEST(render_define_edges)
{
	/* two blocks: the missing tunable goes to the first, a define in any block is set */
	const char *two = "#define WX 99\n"
			  "  // EVOLVE-BLOCK-START a\n"
			  "  x();\n"
			  "  // EVOLVE-BLOCK-END\n"
			  "// EVOLVE-BLOCK-START b\n"
			  "#define WX\t 0x10u /* width */\r\n"
			  "#define WXY 3\n"
			  "#define WX(a) a\n"
			  "// #define WX 5 (a comment, not a directive)\n"
			  "// EVOLVE-BLOCK-END\n";
	const char *want = "#define WX 99\n"
			   "  // EVOLVE-BLOCK-START a\n"
			   "  #define TM 2\n"
			   "  x();\n"
			   "  // EVOLVE-BLOCK-END\n"
			   "// EVOLVE-BLOCK-START b\n"
			   "#define WX\t 16 /* width */\r\n"
			   "#define WXY 3\n"
			   "#define WX(a) a\n"
			   "// #define WX 5 (a comment, not a directive)\n"
			   "// EVOLVE-BLOCK-END\n";
	struct fix f;
	json_t *params = json_pack("{s:i, s:i}", "TM", 2, "WX", 16);
	char *src = NULL, *opt = NULL, msg[256] = "";

	fix_init(&f, two, three, 2, NULL, 0, NULL, RENDER_DEFINE);
	CHECK(spec_render_point(&f.s, &f.bl, params, &src, &opt, msg, sizeof(msg)) == 0);
	CHECK_STR(src, want);
	CHECK_STR(opt, "");
	free(src);
	free(opt);
	json_decref(params);
	fix_release(&f);
}

TEST(render_options)
{
	struct fix f;
	json_t *params = json_pack("{s:i, s:i, s:i}", "VN", 4, "WX", 2, "TM", 8);
	char *src = NULL, *opt = NULL, msg[256] = "";

	fix_init(&f, tmpl, three, 3, NULL, 0, NULL, RENDER_OPTIONS);
	CHECK(spec_render_point(&f.s, &f.bl, params, &src, &opt, msg, sizeof(msg)) == 0);
	CHECK_STR(src, tmpl);
	CHECK_STR(opt, "-DTM=8 -DWX=2 -DVN=4"); /* spec order, not the params' */
	free(src);
	free(opt);
	f.s.build_options = "-cl-mad-enable";
	CHECK(spec_render_point(&f.s, &f.bl, params, &src, &opt, msg, sizeof(msg)) == 0);
	CHECK_STR(opt, "-cl-mad-enable -DTM=8 -DWX=2 -DVN=4");
	free(src);
	free(opt);
	json_decref(params);
	fix_release(&f);
}

struct render_error_case {
	const char *params;
	const char *err;
};

static const struct render_error_case render_errors[] = {
	{ "{\"TM\": 8, \"WX\": 2}", "params: 'VN' is missing" },
	{ "{\"TM\": 8, \"WX\": 2, \"VN\": \"4\"}", "params: 'VN' is not an integer" },
	{ "{\"TM\": 8, \"WX\": 2, \"VN\": 4, \"QQ\": 1}", "params: 'QQ' is not a tunable" },
	{ "[8, 2, 4]", "params: not an object" },
};

TEST(render_errors)
{
	struct fix f;

	fix_init(&f, tmpl, three, 3, NULL, 0, NULL, RENDER_DEFINE);
	for (size_t i = 0; i < ARRAY_SIZE(render_errors); i++) {
		json_t *params = json_loads(render_errors[i].params, 0, NULL);
		char *src = (char *)"x", *opt = (char *)"x", msg[256] = "";

		CHECK(spec_render_point(&f.s, &f.bl, params, &src, &opt, msg, sizeof(msg)) ==
		      KERR_INVALID);
		CHECK(src == NULL && opt == NULL);
		CHECK_CONTAINS(msg, render_errors[i].err);
		json_decref(params);
	}
	fix_release(&f);
}

/* --- a simulated session --------------------------------------------------------- */

struct sim {
	const struct spec *s;
	const struct blocks *bl;
	struct cand *h;
	size_t n;
	const struct cand *par[3];
	size_t npar;
	uint64_t rng;
	int round;
	double (*score)(json_t *params); /* the made-up speedup; NULL: score() */
	int last;                        /* the rounds asked for are the session's last */
	char why[512];                   /* the last propose's message */
};

static void sim_init(struct sim *sm, const struct fix *f, uint64_t seed)
{
	memset(sm, 0, sizeof(*sm));
	sm->s = &f->s;
	sm->bl = &f->bl;
	sm->rng = seed;
}

/* A made-up speedup with a single best point. */
static double score(json_t *params)
{
	const char *key;
	json_t *x;
	double sc = 10;
	int j = 0;

	json_object_foreach (params, key, x) {
		double d = (double)json_integer_value(x) - (double)(2 << (j++ % 3));

		sc -= fabs(d) / 4;
	}
	return sc;
}

static void sim_add(struct sim *sm, const char *source, const char *options, json_t *params,
		    const char *status, const char *fault)
{
	struct cand *c;
	char hash[65];

	sm->h = xreallocarray(sm->h, sm->n + 1, sizeof(*sm->h));
	c = &sm->h[sm->n];
	memset(c, 0, sizeof(*c));
	c->id = xasprintf("r%02d-v%03zu", sm->round, sm->n);
	variant_hash(source, options, hash);
	c->hash = xstrdup(hash);
	c->source = xstrdup(source);
	c->options = xstrdup(options);
	c->params = params ? json_incref(params) : NULL;
	c->status = status;
	c->fault_kind = fault;
	c->speedup = params && status && !strcmp(status, "ok")
			     ? (sm->score ? sm->score(params) : score(params))
			     : NAN;
	c->lineage = -1;
	sm->n++;
}

/* Adds a rendered vector to the history. */
static void sim_add_params(struct sim *sm, json_t *params, const char *status, const char *fault)
{
	char *src = NULL, *opt = NULL, msg[256] = "";

	if (spec_render_point(sm->s, sm->bl, params, &src, &opt, msg, sizeof(msg)))
		fprintf(stderr, "sim_add_params: %s\n", msg);
	else
		sim_add(sm, src, opt, params, status, fault);
	free(src);
	free(opt);
}

/* The parents: the three best "ok" variants, best first. */
static void sim_parents(struct sim *sm)
{
	sm->npar = 0;
	for (size_t i = 0; i < sm->n; i++) {
		const struct cand *c = &sm->h[i];
		size_t at;

		if (!c->status || strcmp(c->status, "ok") || isnan(c->speedup))
			continue;
		for (at = sm->npar; at > 0 && sm->par[at - 1]->speedup < c->speedup; at--)
			;
		if (at >= ARRAY_SIZE(sm->par))
			continue;
		for (size_t k = sm->npar < ARRAY_SIZE(sm->par) ? sm->npar : sm->npar - 1; k > at;
		     k--)
			sm->par[k] = sm->par[k - 1];
		sm->par[at] = c;
		if (sm->npar < ARRAY_SIZE(sm->par))
			sm->npar++;
	}
}

/* Asks p for one round; the proposals go to *out (caller frees). */
static int sim_propose(struct sim *sm, struct proposer *p, enum nav_mode mode, size_t want,
		       size_t budget, struct proposal **out, size_t *n)
{
	struct propose_ctx ctx = { 0 };
	char msg[256] = "";
	int rc;

	sm->round++;
	sim_parents(sm);
	ctx.spec = sm->s;
	ctx.blocks = sm->bl;
	ctx.round = sm->round;
	ctx.mode = mode;
	ctx.history = sm->h;
	ctx.nhistory = sm->n;
	ctx.parents = sm->par;
	ctx.nparents = sm->npar;
	ctx.want = want;
	ctx.budget_left = budget;
	ctx.last = sm->last;
	ctx.rng = &sm->rng;
	rc = p->propose(p, &ctx, out, n, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "propose: %s\n", msg);
	snprintf(sm->why, sizeof(sm->why), "%s", msg);
	return rc;
}

/* Records every proposal as evaluated "ok". */
static void sim_take(struct sim *sm, struct proposal *props, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sim_add(sm, props[i].source, props[i].options, props[i].params, "ok", NULL);
}

static void sim_release(struct sim *sm)
{
	for (size_t i = 0; i < sm->n; i++) {
		free((char *)sm->h[i].id);
		free((char *)sm->h[i].hash);
		free((char *)sm->h[i].source);
		free((char *)sm->h[i].options);
		json_decref(sm->h[i].params);
	}
	free(sm->h);
}

/* --- vectors in the tests ------------------------------------------------------------ */

/* Index vector of params; 0 when a value is not in its list. */
static int vec_of(const struct spec *s, json_t *params, int *v)
{
	for (size_t j = 0; j < s->ntunables; j++) {
		json_t *x = json_object_get(params, s->tunables[j].name);
		size_t i;

		for (i = 0; x && i < s->tunables[j].nvalues; i++)
			if (s->tunables[j].values[i] == json_integer_value(x))
				break;
		if (!x || i == s->tunables[j].nvalues)
			return 0;
		v[j] = (int)i;
	}
	return 1;
}

static int64_t param(json_t *params, const char *name)
{
	return json_integer_value(json_object_get(params, name));
}

static const struct cand *sim_find(const struct sim *sm, const char *id, size_t len)
{
	for (size_t i = 0; i < sm->n; i++)
		if (strlen(sm->h[i].id) == len && !memcmp(sm->h[i].id, id, len))
			return &sm->h[i];
	return NULL;
}

/* Whether params (as a vector) appears in the history or in props[0..n). */
static int sim_has(const struct sim *sm, json_t *params, struct proposal *props, size_t n)
{
	for (size_t i = 0; i < sm->n; i++)
		if (sm->h[i].params && json_equal(sm->h[i].params, params))
			return 1;
	for (size_t i = 0; i < n; i++)
		if (json_equal(props[i].params, params))
			return 1;
	return 0;
}

/* --- constraints ---------------------------------------------------------------- */

static const struct tdef two[] = {
	{ "TM", { 1, 2, 4, 8 }, 4 },
	{ "WX", { 1, 2, 4, 8 }, 4 },
};

static const char two_shapes[] = "[{\"name\": \"big\", \"values\": {\"N\": 16}},"
				 " {\"name\": \"small\", \"values\": {\"N\": 8}}]";

/* Runs exhaustive rounds until the tuner is empty; returns the vectors proposed. */
static size_t drain(struct fix *f, uint64_t seed, size_t want, json_t *all)
{
	struct proposer p;
	struct sim sm;
	char msg[256] = "";
	size_t total = 0;

	CHECK(tune_open(&p, &f->s, msg, sizeof(msg)) == 0);
	sim_init(&sm, f, seed);
	for (int r = 0; r < 100; r++) {
		struct proposal *props = NULL;
		size_t n = 0;

		CHECK(sim_propose(&sm, &p, r % 2 ? NAV_EXPLORE : NAV_EXPLOIT, want, 1000, &props,
				  &n) == 0);
		CHECK(n <= want);
		for (size_t i = 0; i < n; i++) {
			CHECK(!sim_has(&sm, props[i].params, props, i));
			json_array_append(all, props[i].params);
		}
		sim_take(&sm, props, n);
		proposals_free(props, n);
		total += n;
		if (!n)
			break;
	}
	sim_release(&sm);
	proposer_close(&p);
	return total;
}

TEST(constraints_with_shapes)
{
	/* TM * WX <= N at both shapes: the smaller N (8) decides */
	const char *cons[] = { "TM * WX <= N" };
	struct fix f;
	json_t *all = json_array(), *x;
	size_t n, i;

	fix_init(&f, tmpl, two, 2, cons, 1, two_shapes, RENDER_DEFINE);
	n = drain(&f, 7, 3, all);
	CHECK(n == 10); /* (1,1..8) (2,1..4) (4,1..2) (8,1) */
	json_array_foreach (all, i, x)
		CHECK(param(x, "TM") * param(x, "WX") <= 8);
	json_decref(all);
	fix_release(&f);
}

TEST(constraint_errors_make_vectors_invalid)
{
	/* division by zero at TM = 1 rules those out without failing the space */
	const char *cons[] = { "N / (TM - 1) >= 2" };
	struct fix f;
	json_t *all = json_array(), *x;
	size_t n, i;

	fix_init(&f, tmpl, two, 2, cons, 1, two_shapes, RENDER_DEFINE);
	n = drain(&f, 3, 5, all);
	CHECK(n == 8); /* TM 2 and 4 (8 / 7 = 1 fails), any WX */
	json_array_foreach (all, i, x)
		CHECK(param(x, "TM") == 2 || param(x, "TM") == 4);
	json_decref(all);
	fix_release(&f);
}

struct open_error_case {
	const char *cons;
	const char *shapes;
	size_t ntunables;
	const char *err;
};

static const struct open_error_case open_errors[] = {
	{ "TM * QQ <= 4", NULL, 2,
	  "tunables: every combination fails constraint 'TM * QQ <= 4': unknown name 'QQ'" },
	{ "TM * WX <= N",
	  "[{\"name\": \"a\", \"values\": {\"N\": 8}}, {\"name\": \"b\", "
	  "\"values\": {\"M\": 8}}]",
	  2, "fails constraint 'TM * WX <= N': unknown name 'N'" },
	{ "TM > 100", NULL, 2, "tunables: no combination satisfies the constraints" },
	{ NULL, NULL, 0, "no tunables" },
	{ NULL, "[{\"name\": \"a\", \"values\": {\"N\": \"x\"}}]", 2,
	  "shapes[0].values.N: not an integer" },
};

TEST(open_errors)
{
	for (size_t i = 0; i < ARRAY_SIZE(open_errors); i++) {
		const struct open_error_case *c = &open_errors[i];
		const char *cons[] = { c->cons };
		struct proposer p;
		struct fix f;
		char msg[256] = "";

		fix_init(&f, tmpl, two, c->ntunables, cons, c->cons ? 1 : 0, c->shapes,
			 RENDER_DEFINE);
		CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == KERR_INVALID);
		CHECK_CONTAINS(msg, c->err);
		CHECK(p.state == NULL);
		fix_release(&f);
	}
}

/* --- exhaustive mode ------------------------------------------------------------- */

TEST(exhaustive_covers_the_space_once)
{
	const char *cons[] = { "TM * WX * VN <= 32" };
	struct fix f;
	json_t *all = json_array(), *x, *y;
	size_t n, i, k, valid = 0;

	for (size_t a = 0; a < 4; a++)
		for (size_t b = 0; b < 5; b++)
			for (size_t c = 0; c < 3; c++)
				valid += three[0].values[a] * three[1].values[b] *
						 three[2].values[c] <=
					 32;
	fix_init(&f, tmpl, three, 3, cons, 1, NULL, RENDER_OPTIONS);
	n = drain(&f, 11, 4, all);
	CHECK(n == valid);
	CHECK(json_array_size(all) == valid);
	json_array_foreach (all, i, x) {
		CHECK(param(x, "TM") * param(x, "WX") * param(x, "VN") <= 32);
		for (k = i + 1; k < json_array_size(all); k++) {
			y = json_array_get(all, k);
			CHECK(!json_equal(x, y));
		}
	}
	json_decref(all);
	fix_release(&f);
}

TEST(exhaustive_exploit_is_nearest_first)
{
	struct fix f;
	struct proposer p;
	struct sim sm;
	struct proposal *props = NULL;
	json_t *start = json_pack("{s:i, s:i, s:i}", "TM", 2, "WX", 4, "VN", 2);
	char msg[256] = "";
	int pv[MAXT], cv[MAXT];
	size_t n = 0, last = 0;

	fix_init(&f, tmpl, three, 3, NULL, 0, NULL, RENDER_DEFINE);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 5);
	sim_add_params(&sm, start, "ok", NULL);
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 12, 100, &props, &n) == 0);
	CHECK(n == 12);
	vec_of(&f.s, start, pv);
	for (size_t i = 0; i < n; i++) {
		size_t d = 0;

		CHECK(vec_of(&f.s, props[i].params, cv));
		for (size_t j = 0; j < 3; j++)
			d += (size_t)abs(cv[j] - pv[j]);
		CHECK(d >= 1 && d >= last);
		last = d;
		CHECK_STR(props[i].parent, "r00-v000");
		CHECK_CONTAINS(props[i].rationale, "from r00-v000 (exhaustive, 59 left)");
	}
	/* the six single steps come first: a step of TM is one of them */
	CHECK_STR(props[0].rationale, "TM 2->1 from r00-v000 (exhaustive, 59 left)");
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	json_decref(start);
	fix_release(&f);
}

TEST(evolve_template_values_first)
{
	struct fix f;
	struct proposer p;
	struct sim sm;
	struct proposal *props = NULL;
	char msg[256] = "";
	size_t n = 0;

	/* -D options: the template's own values are a variant of their own */
	fix_init(&f, tmpl, three, 2, NULL, 0, NULL, RENDER_OPTIONS);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	CHECK(tune_set_strategy(&p, "evolve", msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 9);
	CHECK(sim_propose(&sm, &p, NAV_EXPLORE, 3, 100, &props, &n) == 0);
	CHECK(n == 3);
	CHECK(n && param(props[0].params, "TM") == 4 && param(props[0].params, "WX") == 8);
	CHECK(n && props[0].parent == NULL);
	CHECK_STR(n ? props[0].options : NULL, "-DTM=4 -DWX=8");
	CHECK_STR(n ? props[0].rationale : NULL, "the template's own values");
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);

	/* #defines: the template is the starting variant, its values are not proposed again */
	fix_init(&f, tmpl, three, 2, NULL, 0, NULL, RENDER_DEFINE);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 9);
	sim_add(&sm, tmpl, "", NULL, "ok", NULL);
	CHECK(sim_propose(&sm, &p, NAV_EXPLORE, 19, 100, &props, &n) == 0);
	CHECK(n == 19); /* the 20 vectors but the template's */
	for (size_t i = 0; i < n; i++)
		CHECK(param(props[i].params, "TM") != 4 || param(props[i].params, "WX") != 8);
	proposals_free(props, n);
	CHECK(sim_propose(&sm, &p, NAV_EXPLORE, 19, 100, &props, &n) == 0);
	CHECK(n == 19);
	sim_take(&sm, props, n);
	proposals_free(props, n);
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 19, 100, &props, &n) == 0);
	CHECK(n == 0);
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
}

TEST(known_hash_is_skipped)
{
	/* a variant without params (another proposer's) that renders like TM=8 */
	static const struct tdef tm[] = { { "TM", { 4, 8 }, 2 } };
	struct fix f;
	struct proposer p;
	struct sim sm;
	struct proposal *props = NULL;
	json_t *eight = json_pack("{s:i}", "TM", 8);
	char *src = NULL, *opt = NULL, msg[256] = "";
	size_t n = 0;

	fix_init(&f, tmpl, tm, 1, NULL, 0, NULL, RENDER_DEFINE);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 1);
	sim_add(&sm, tmpl, "", NULL, "ok", NULL);
	CHECK(spec_render_point(&f.s, &f.bl, eight, &src, &opt, msg, sizeof(msg)) == 0);
	sim_add(&sm, src, opt, NULL, "incorrect", NULL);
	CHECK(sim_propose(&sm, &p, NAV_EXPLORE, 4, 100, &props, &n) == 0);
	CHECK(n == 0);
	proposals_free(props, n);
	free(src);
	free(opt);
	json_decref(eight);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
}

/* --- evolutionary mode ------------------------------------------------------------ */

static const struct tdef six[] = {
	{ "A", { 1, 2, 3, 4, 5, 6, 7, 8 }, 8 }, { "B", { 1, 2, 3, 4, 5, 6, 7, 8 }, 8 },
	{ "C", { 1, 2, 3, 4, 5, 6, 7, 8 }, 8 }, { "D", { 1, 2, 3, 4, 5, 6, 7, 8 }, 8 },
	{ "E", { 1, 2, 3, 4, 5, 6, 7, 8 }, 8 }, { "F", { 1, 2, 3, 4, 5, 6, 7, 8 }, 8 },
};

static const char six_tmpl[] = "// EVOLVE-BLOCK-START\n"
			       "#define A 2\n#define B 4\n#define C 8\n"
			       "#define D 2\n#define E 4\n#define F 8\n"
			       "// EVOLVE-BLOCK-END\n";

/* Checks one child against its declared origin. */
static void check_child(const struct sim *sm, const struct spec *s, struct proposal *c,
			enum nav_mode mode)
{
	int cv[MAXT], pv[MAXT], qv[MAXT];
	const struct cand *par = c->parent ? sim_find(sm, c->parent, strlen(c->parent)) : NULL;
	size_t moved = 0, far = 0, k = s->ntunables;

	CHECK(vec_of(s, c->params, cv));
	if (!strncmp(c->rationale, "crossover of ", 13)) {
		const char *a = c->rationale + 13, *and = strstr(a, " and ");
		const struct cand *pa = and? sim_find(sm, a, (size_t)(and-a)) : NULL;
		const struct cand *pb = and? sim_find(sm, and+5, strlen(and+5)) : NULL;

		CHECK(mode == NAV_EXPLOIT && pa && pb && pa != pb);
		if (!pa || !pb || !vec_of(s, pa->params, pv) || !vec_of(s, pb->params, qv))
			return;
		for (size_t j = 0; j < k; j++)
			CHECK(cv[j] == pv[j] || cv[j] == qv[j]);
		return;
	}
	if (!strcmp(c->rationale, "explore: random point") ||
	    !strncmp(c->rationale, "explore: random point (", 23)) {
		CHECK(c->parent == NULL);
		return;
	}
	CHECK(par != NULL);
	if (!par || !vec_of(s, par->params, pv))
		return;
	for (size_t j = 0; j < k; j++) {
		moved += cv[j] != pv[j];
		far += abs(cv[j] - pv[j]) > 1;
	}
	CHECK(moved >= 1 && moved <= 2);
	if (mode == NAV_EXPLOIT) {
		CHECK(far == 0);
		CHECK(strncmp(c->rationale, "explore", 7) != 0);
	} else {
		CHECK_CONTAINS(c->rationale, "explore: ");
	}
	CHECK_CONTAINS(c->rationale, c->parent);
}

/* Checks a proposal of the model strategy: what it says it is. */
static void check_model(const struct sim *sm, struct proposal *c)
{
	if (!strncmp(c->rationale, "space-filling point ", 20)) {
		CHECK(c->parent == NULL);
		return;
	}
	CHECK_CONTAINS(c->rationale, "model: EI ");
	CHECK_CONTAINS(c->rationale, ", incumbent ");
	CHECK(c->parent == NULL || sim_find(sm, c->parent, strlen(c->parent)) != NULL);
}

/*
 * Runs rounds of a big space with a strategy ("evolve", "tune"); checks
 * every proposal; returns a digest of all rationales.
 */
static char *strategy_run(struct fix *f, const char *strategy, uint64_t seed, int rounds,
			  size_t want)
{
	struct proposer p;
	struct sim sm;
	struct sbuf log = SBUF_INIT;
	char msg[256] = "";

	CHECK(tune_open(&p, &f->s, msg, sizeof(msg)) == 0);
	CHECK(tune_set_strategy(&p, strategy, msg, sizeof(msg)) == 0);
	sim_init(&sm, f, seed);
	for (int r = 0; r < rounds; r++) {
		enum nav_mode mode = r % 3 == 2 ? NAV_EXPLORE : NAV_EXPLOIT;
		struct proposal *props = NULL;
		size_t n = 0;

		CHECK(sim_propose(&sm, &p, mode, want, 20, &props, &n) == 0);
		CHECK(n == want);
		for (size_t i = 0; i < n; i++) {
			char *dump;

			CHECK(!sim_has(&sm, props[i].params, props, i));
			CHECK(param(props[i].params, "A") + param(props[i].params, "B") <= 10);
			CHECK(blocks_verify(f->s.template_src, &f->bl, props[i].source, START, END,
					    msg, sizeof(msg)) == 0);
			if (!strcmp(strategy, "tune"))
				check_model(&sm, &props[i]);
			else if (sm.npar)
				check_child(&sm, &f->s, &props[i], mode);
			dump = json_dumps(props[i].params, JSON_COMPACT);
			sbuf_addf(&log, "%s|%s\n", props[i].rationale, dump);
			free(dump);
		}
		sim_take(&sm, props, n);
		proposals_free(props, n);
	}
	sim_release(&sm);
	proposer_close(&p);
	return sbuf_detach(&log, NULL);
}

static char *evolve_run(struct fix *f, uint64_t seed, int rounds, size_t want)
{
	return strategy_run(f, "evolve", seed, rounds, want);
}

TEST(evolutionary_big_space)
{
	const char *cons[] = { "A + B <= 10" };
	struct fix f;
	char *a;

	/* 8^6 combinations: too many to list, searched by sampling */
	fix_init(&f, six_tmpl, six, 6, cons, 1, NULL, RENDER_DEFINE);
	a = evolve_run(&f, 42, 9, 8);
	CHECK_CONTAINS(a, "the template's own values");
	CHECK_CONTAINS(a, "crossover of ");
	CHECK_CONTAINS(a, "explore: ");
	free(a);
	fix_release(&f);
}

TEST(evolutionary_listed_space_small_budget)
{
	/* 8^4 combinations are listed, but the budget (20) is far smaller */
	const char *cons[] = { "A + B <= 10" };
	struct fix f;
	char *a;

	fix_init(&f, six_tmpl, six, 4, cons, 1, NULL, RENDER_OPTIONS);
	a = evolve_run(&f, 42, 6, 5);
	CHECK(strstr(a, "exhaustive") == NULL);
	free(a);
	fix_release(&f);
}

/*
 * Eight tunables of 16 values whose constraints keep one point in
 * 31 million: uniform draws never meet one, so the points are built a
 * tunable at a time.  The tuner and the evolutionary strategy fill every
 * round with valid, distinct points, round after round (before, the round
 * came back empty and the session ended "exhausted" after its first).
 */
static const struct tdef eight[] = {
	{ "A", { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 }, 16 },
	{ "B", { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 }, 16 },
	{ "C", { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 }, 16 },
	{ "D", { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 }, 16 },
	{ "E", { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 }, 16 },
	{ "F", { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 }, 16 },
	{ "G", { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 }, 16 },
	{ "H", { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 }, 16 },
};

static const char eight_tmpl[] = "// EVOLVE-BLOCK-START\n"
				 "#define A 1\n#define B 1\n#define C 1\n#define D 1\n"
				 "#define E 1\n#define F 1\n#define G 1\n#define H 1\n"
				 "// EVOLVE-BLOCK-END\n";

static int eight_valid(json_t *params)
{
	int64_t a = param(params, "A"), b = param(params, "B"), e = param(params, "E"),
		f = param(params, "F");

	return a + b + param(params, "C") + param(params, "D") <= 6 &&
	       e + f + param(params, "G") + param(params, "H") <= 6 && a * e <= 2 && b * f <= 2;
}

/* The sum of the eight tunables A to H. */
static int64_t eight_sum(json_t *params)
{
	int64_t sum = 0;

	for (size_t i = 0; i < ARRAY_SIZE(eight); i++)
		sum += param(params, eight[i].name);
	return sum;
}

/*
 * A round with nothing to offer says why: every point tried, where the
 * space was listed; where it is too large to list, that no untried valid
 * point was met and that more may exist.  Here 9 points of 16^8 are valid
 * (all ones, or one 2), reached only by walks from the template's.
 */
TEST(nothing_left_says_why)
{
	const char *small[] = { "TM * WX * VN <= 32" };
	const char *sum[] = { "A + B + C + D + E + F + G + H <= 9" };
	struct fix f;
	struct proposer p;
	struct sim sm;
	char msg[256] = "";
	size_t total = 0, n = 0;
	int all_valid = 1;

	fix_init(&f, tmpl, three, 3, small, 1, NULL, RENDER_OPTIONS);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 3);
	for (int r = 0; r < 40; r++) {
		struct proposal *props = NULL;

		CHECK(sim_propose(&sm, &p, NAV_EXPLORE, 8, 1000, &props, &n) == 0);
		sim_take(&sm, props, n);
		proposals_free(props, n);
		if (!n)
			break;
		CHECK(!sm.why[0]);
	}
	CHECK(n == 0);
	CHECK_STR(sm.why, "every valid point of the space (41) was tried");
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);

	fix_init(&f, eight_tmpl, eight, 8, sum, 1, NULL, RENDER_DEFINE);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 5);
	sim_add(&sm, eight_tmpl, "", NULL, "ok", NULL);
	for (int r = 0; r < 40; r++) {
		struct proposal *props = NULL;

		CHECK(sim_propose(&sm, &p, r % 2 ? NAV_EXPLORE : NAV_EXPLOIT, 8, 1000, &props,
				  &n) == 0);
		for (size_t i = 0; i < n; i++)
			all_valid &= eight_sum(props[i].params) <= 9;
		sim_take(&sm, props, n);
		proposals_free(props, n);
		total += n;
		if (!n)
			break;
	}
	CHECK(n == 0 && total <= 8 && all_valid);
	CHECK_CONTAINS(sm.why, "the tuner met no untried valid point");
	CHECK_CONTAINS(sm.why, "too large to list (0 of 1024 random points valid at open), may "
			       "hold more");
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
}

TEST(tight_space_points_are_built)
{
	const char *cons[] = { "A + B + C + D <= 6", "E + F + G + H <= 6", "A * E <= 2",
			       "B * F <= 2" };
	const char *strategies[] = { "tune", "evolve" };

	for (size_t st = 0; st < 2; st++) {
		struct fix f;
		struct proposer p;
		struct sim sm;
		char msg[256] = "";
		size_t total = 0;

		fix_init(&f, eight_tmpl, eight, 8, cons, 4, NULL, RENDER_DEFINE);
		CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
		CHECK(tune_set_strategy(&p, strategies[st], msg, sizeof(msg)) == 0);
		sim_init(&sm, &f, 7);
		for (int r = 0; r < 4; r++) {
			struct proposal *props = NULL;
			size_t n = 0;

			CHECK(sim_propose(&sm, &p, r == 2 ? NAV_EXPLORE : NAV_EXPLOIT, 8, 100,
					  &props, &n) == 0);
			CHECK(n == 8);
			for (size_t i = 0; i < n; i++) {
				CHECK(eight_valid(props[i].params));
				CHECK(!sim_has(&sm, props[i].params, props, i));
			}
			total += n;
			sim_take(&sm, props, n);
			proposals_free(props, n);
		}
		CHECK(total == 32);
		sim_release(&sm);
		proposer_close(&p);
		fix_release(&f);
	}
}

TEST(refused_vectors_never_return)
{
	/* a lone parent whose every one-step neighbour failed in a way that rules it out */
	static const char *const fails[][2] = {
		{ "compile_error", NULL },
		{ "runtime_error", "launch_setup" },
		{ "runtime_error", "bad_geometry" },
		{ "runtime_error", "launch_failed" },
		{ "crash", "signal" },
	};
	static const struct tdef sq[] = {
		{ "A", { 1, 2, 3, 4, 5 }, 5 }, { "B", { 1, 2, 3, 4, 5 }, 5 },
		{ "C", { 1, 2, 3, 4, 5 }, 5 }, { "D", { 1, 2, 3, 4, 5 }, 5 },
		{ "E", { 1, 2, 3, 4, 5 }, 5 }, { "F", { 1, 2, 3, 4, 5 }, 5 },
	};
	struct fix f;
	struct proposer p;
	struct sim sm;
	json_t *bad = json_array(), *x;
	char msg[256] = "";
	size_t i, nf = 0;

	fix_init(&f, six_tmpl, sq, 6, NULL, 0, NULL, RENDER_DEFINE);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 77);
	x = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "A", 3, "B", 3, "C", 3, "D", 3, "E", 3, "F",
		      3);
	sim_add_params(&sm, x, "ok", NULL);
	for (size_t j = 0; j < 6; j++)
		for (int d = -1; d <= 1; d += 2) {
			json_t *y = json_deep_copy(x);
			const char *name = sq[j].name;

			json_object_set_new(y, name, json_integer(3 + d));
			sim_add_params(&sm, y, fails[nf % 5][0], fails[nf % 5][1]);
			json_array_append_new(bad, y);
			nf++;
		}
	json_decref(x);
	for (int r = 0; r < 20; r++) {
		struct proposal *props = NULL;
		size_t n = 0;

		sm.round = 0;
		CHECK(sim_propose(&sm, &p, r % 2 ? NAV_EXPLORE : NAV_EXPLOIT, 6, 50, &props, &n) ==
		      0);
		CHECK(n == 6);
		for (size_t k = 0; k < n; k++) {
			json_array_foreach (bad, i, x)
				CHECK(!json_equal(props[k].params, x));
			/* exploit children are two steps away now */
			if (r % 2 == 0 && props[k].parent)
				CHECK(strchr(props[k].rationale, ',') != NULL);
		}
		proposals_free(props, n);
	}
	json_decref(bad);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
}

/* --- the model strategy (the default) ------------------------------------------------ */

/* The six-tunable space with the template measured (round 0), as a session starts. */
static void model_start(struct fix *f, struct proposer *p, struct sim *sm, uint64_t seed)
{
	const char *cons[] = { "A + B <= 10" };
	json_t *tv = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "A", 2, "B", 4, "C", 8, "D", 2,
			       "E", 4, "F", 8);
	char msg[256] = "";

	fix_init(f, six_tmpl, six, 6, cons, 1, NULL, RENDER_DEFINE);
	CHECK(tune_open(p, &f->s, msg, sizeof(msg)) == 0);
	sim_init(sm, f, seed);
	sim_add_params(sm, tv, "ok", NULL);
	json_decref(tv);
}

TEST(model_first_round_fills_the_space)
{
	struct fix f;
	struct proposer p;
	struct sim sm;
	struct proposal *props = NULL;
	int lo[MAXT], hi[MAXT], v[MAXT];
	size_t n = 0;

	model_start(&f, &p, &sm, 3);
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 8, 100, &props, &n) == 0);
	CHECK(n == 8);
	for (size_t j = 0; j < 6; j++) {
		lo[j] = 8;
		hi[j] = -1;
	}
	for (size_t i = 0; i < n; i++) {
		char want[64];

		snprintf(want, sizeof(want), "space-filling point %zu/8", i + 1);
		CHECK_STR(props[i].rationale, want);
		CHECK(props[i].parent == NULL);
		CHECK(param(props[i].params, "A") + param(props[i].params, "B") <= 10);
		CHECK(!sim_has(&sm, props[i].params, props, i)); /* never the template again */
		CHECK(vec_of(&f.s, props[i].params, v));
		for (size_t j = 0; j < 6; j++) {
			lo[j] = v[j] < lo[j] ? v[j] : lo[j];
			hi[j] = v[j] > hi[j] ? v[j] : hi[j];
		}
	}
	/* every tunable's range is covered, not one neighbourhood of the template */
	for (size_t j = 0; j < 6; j++)
		CHECK(lo[j] <= 2 && hi[j] >= 5);
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
}

TEST(model_measures_the_spec_starts_first)
{
	/* tunables.starts: two points before the space-filling ones, then never again */
	int64_t starts[] = { 7, 1, 3, 6, 7, 2, 5, 5, 5, 5, 5, 5 };
	const char *cons[] = { "A + B <= 10" };
	json_t *tv = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "A", 2, "B", 4, "C", 8, "D", 2,
			       "E", 4, "F", 8);
	struct proposal *props = NULL;
	struct proposer p;
	struct fix f;
	struct sim sm;
	char msg[256] = "";
	size_t n = 0;

	fix_init(&f, six_tmpl, six, 6, cons, 1, NULL, RENDER_DEFINE);
	f.s.starts = starts;
	f.s.nstarts = 2;
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 5);
	sim_add_params(&sm, tv, "ok", NULL);
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 8, 100, &props, &n) == 0);
	CHECK(n == 8);
	for (size_t i = 0; i < 2 && i < n; i++) {
		char want[64];

		snprintf(want, sizeof(want), "start point %zu of 2 (tunables.starts)", i + 1);
		CHECK_STR(props[i].rationale, want);
		CHECK(param(props[i].params, "A") == starts[i * 6] &&
		      param(props[i].params, "F") == starts[i * 6 + 5]);
	}
	for (size_t i = 2; i < n; i++)
		CHECK_CONTAINS(props[i].rationale, "space-filling point");
	sim_take(&sm, props, n);
	proposals_free(props, n);
	props = NULL;
	n = 0;
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 8, 100, &props, &n) == 0);
	for (size_t i = 0; i < n; i++)
		CHECK(!strstr(props[i].rationale, "tunables.starts"));
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	json_decref(tv);
	fix_release(&f);
}

/*
 * Starts outside the space (a value not in its list, a constraint broken)
 * are skipped with a warning naming them, and the tuner opens with the
 * others: a space narrowed for one experiment keeps the spec's starts.
 */
TEST(starts_outside_the_space_are_skipped)
{
	int64_t st[] = { 8, 8, 3, 6, 7, 2, 5, 5, 5, 5, 5, 5, 7, 1, 99, 6, 7, 2 };
	const char *cons[] = { "A + B <= 10" };
	struct proposal *props = NULL;
	struct proposer p;
	struct fix f;
	struct sim sm;
	char msg[256] = "", logged[4096] = "";
	struct test_stderr cap;
	int rc, capturing = test_stderr_begin(&cap);
	size_t n = 0;

	/* the first breaks A + B <= 10; the third has C = 99, not in C's list */
	CHECK(capturing);
	if (!capturing)
		return;
	fix_init(&f, six_tmpl, six, 6, cons, 1, NULL, RENDER_DEFINE);
	f.s.starts = st;
	f.s.nstarts = 3;
	rc = tune_open(&p, &f.s, msg, sizeof(msg));
	test_stderr_end(&cap, logged, sizeof(logged));
	CHECK(rc == 0);
	CHECK_STR(msg, "");
	CHECK_CONTAINS(logged,
		       "tunables.starts[0] skipped: the point does not keep the constraints");
	CHECK_CONTAINS(logged, "tunables.starts[2] skipped: C=99 is not one of tunables.params.C");
	CHECK(!strstr(logged, "starts[1]"));
	if (rc) {
		fix_release(&f);
		return;
	}
	sim_init(&sm, &f, 5);
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 4, 100, &props, &n) == 0);
	CHECK(n == 4);
	/* the one start inside the space, first, under its own number */
	CHECK(n > 0 && !strcmp(props[0].rationale, "start point 2 of 3 (tunables.starts)"));
	CHECK(n > 0 && param(props[0].params, "A") == st[6] &&
	      param(props[0].params, "F") == st[11]);
	for (size_t i = 1; i < n; i++)
		CHECK(!strstr(props[i].rationale, "tunables.starts"));
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
}

/* One smooth peak far from the template (A 2, B 4, C 8, D 2, E 4, F 8). */
static double far_peak(json_t *params)
{
	static const char *const names[] = { "A", "B", "C", "D", "E", "F" };
	static const double peak[] = { 7, 2, 3, 6, 7, 2 };
	double d = 0;

	for (size_t j = 0; j < ARRAY_SIZE(names); j++) {
		double x = ((double)param(params, names[j]) - peak[j]) / 3;

		d += x * x;
	}
	return 1 + 9 * exp(-d / 2);
}

/* The best score found within budget evaluations (round 0 included) by strategy. */
static double best_within(const char *strategy, uint64_t seed, size_t budget)
{
	struct fix f;
	struct proposer p;
	struct sim sm;
	char msg[256] = "";
	double best = -HUGE_VAL;

	model_start(&f, &p, &sm, seed);
	sm.score = far_peak;
	sm.h[0].speedup = far_peak(sm.h[0].params);
	CHECK(tune_set_strategy(&p, strategy, msg, sizeof(msg)) == 0);
	while (sm.n < budget) {
		struct proposal *props = NULL;
		size_t n = 0, want = budget - sm.n < 8 ? budget - sm.n : 8;

		CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, want, budget - sm.n, &props, &n) == 0);
		CHECK(n == want);
		sim_take(&sm, props, n);
		proposals_free(props, n);
		if (!n)
			break;
	}
	for (size_t i = 0; i < sm.n; i++)
		best = sm.h[i].speedup > best ? sm.h[i].speedup : best;
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
	return best;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

TEST(model_beats_random_on_a_smooth_space)
{
	/* one smooth peak; 262144 combinations: sampled, not listed */
	double tune[7], rnd[7];

	for (uint64_t seed = 0; seed < 7; seed++) {
		tune[seed] = best_within("tune", seed + 1, 41);
		rnd[seed] = best_within("random", seed + 1, 41);
	}
	qsort(tune, 7, sizeof(*tune), cmp_dbl);
	qsort(rnd, 7, sizeof(*rnd), cmp_dbl);
	fprintf(stderr, "best of 33, median over 7 seeds: tune %.2f, random %.2f\n", tune[3],
		rnd[3]);
	CHECK(tune[3] > rnd[3] + 0.5);
	CHECK(tune[0] >= rnd[0]);
}

/*
 * A ridge along A * B: the speedup depends on log2(A * B) alone, best at
 * 2^10.  An index-per-tunable model sees a diagonal; with A * B as a
 * feature of its own it sees one dimension.
 */
static double ridge_ab(json_t *params)
{
	double l = log2((double)(param(params, "A") * param(params, "B"))) - 10;

	return 1 + 9 * exp(-l * l / 2);
}

static const struct tdef ridge[] = {
	{ "A", { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 }, 11 },
	{ "B", { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 }, 11 },
	{ "C", { 0, 1, 2, 3, 4, 5, 6, 7 }, 8 },
};

static const char ridge_tmpl[] = "// EVOLVE-BLOCK-START\n"
				 "#define A 1\n#define B 1\n#define C 0\n"
				 "// EVOLVE-BLOCK-END\n";

/*
 * With the columns A = 1, 2 and 4 measured (each holding the ridge at its
 * B = 2^10 / A), how many of 8 proposals lie on the ridge (A * B within a
 * factor 2 of 2^10) in the columns past them, the space constrained by con.
 */
static size_t ridge_proposals(const char *con)
{
	struct fix f;
	struct proposer p;
	struct sim sm;
	struct proposal *props = NULL;
	char msg[256] = "";
	size_t n = 0, on = 0;

	fix_init(&f, ridge_tmpl, ridge, 3, &con, 1, NULL, RENDER_DEFINE);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 7);
	sm.score = ridge_ab;
	for (int a = 1; a <= 4; a *= 2)
		for (int b = 1; b <= 1024; b *= 2) {
			json_t *x = json_pack("{s:i, s:i, s:i}", "A", a, "B", b, "C", (a + b) % 8);

			sim_add_params(&sm, x, "ok", NULL);
			json_decref(x);
		}
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 8, 100, &props, &n) == 0);
	CHECK(n == 8);
	for (size_t i = 0; i < n; i++) {
		int64_t a = param(props[i].params, "A"), b = param(props[i].params, "B");

		on += a > 4 && fabs(log2((double)(a * b)) - 10) <= 1;
	}
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
	return on;
}

TEST(model_learns_the_products_the_constraints_name)
{
	/* both constraints hold everywhere; only the first multiplies A and B */
	size_t with = ridge_proposals("C < 8 && 4 * (A * B) <= 4194304");
	size_t without = ridge_proposals("C < 8 && 4 * (A + B) <= 8192");

	fprintf(stderr,
		"proposals of 8 on the ridge along A * B, past the measured columns: "
		"%zu with the product as a feature, %zu without\n",
		with, without);
	CHECK(with >= 3);
	CHECK(with > without);
}

static double grows_with_a(json_t *params)
{
	return 1 + (double)param(params, "A");
}

/* An 8 x 8 space of A and B, nothing measured yet, where speedup grows with A. */
static void ab_open(struct fix *f, struct proposer *p, struct sim *sm, uint64_t seed)
{
	static const struct tdef ab[] = {
		{ "A", { 0, 1, 2, 3, 4, 5, 6, 7 }, 8 },
		{ "B", { 0, 1, 2, 3, 4, 5, 6, 7 }, 8 },
	};
	static const char ab_tmpl[] = "// EVOLVE-BLOCK-START\n#define A 0\n#define B 0\n"
				      "// EVOLVE-BLOCK-END\n";
	char msg[256] = "";

	fix_init(f, ab_tmpl, ab, 2, NULL, 0, NULL, RENDER_DEFINE);
	CHECK(tune_open(p, &f->s, msg, sizeof(msg)) == 0);
	sim_init(sm, f, seed);
	sm->score = grows_with_a;
}

/*
 * Proposes 6 points of an 8 x 8 space where speedup grows with A and rows
 * A = 0..4 were measured, the row A = 5 failed its check too when
 * with_failures; returns how many proposals have A >= 5.
 */
static size_t proposals_beyond(int with_failures)
{
	struct fix f;
	struct proposer p;
	struct sim sm;
	struct proposal *props = NULL;
	size_t n = 0, high = 0;

	ab_open(&f, &p, &sm, 5);
	for (int a = 0; a <= (with_failures ? 5 : 4); a++)
		for (int b = 0; b < 8; b += a == 5 ? 1 : 3) {
			json_t *x = json_pack("{s:i, s:i}", "A", a, "B", b);

			sim_add_params(&sm, x, a == 5 ? "wrong_answer" : "ok", NULL);
			json_decref(x);
		}
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 6, 10, &props, &n) == 0);
	CHECK(n == 6);
	for (size_t i = 0; i < n; i++) {
		high += param(props[i].params, "A") >= 6;
		CHECK_CONTAINS(props[i].rationale, "model: EI ");
	}
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
	return high;
}

TEST(model_keeps_away_from_failures)
{
	/* the unexplored rows draw the search; behind a row of failures they draw it less */
	size_t open = proposals_beyond(0), walled = proposals_beyond(1);

	fprintf(stderr, "proposals with A >= 5: %zu unexplored, %zu behind failures\n", open,
		walled);
	CHECK(open >= 3);
	CHECK(walled < open);
}

/*
 * Proposes 4 points of an 8 x 8 space where speedup grows with A, rows
 * A = 0..3 measured but for (3, odd B) and, with few, only B = 0 and 4 of
 * them, as the session's last round when last; returns the mean over the
 * proposals of the model's predicted speedup and of its sd, as their
 * rationales say, each rationale checked for want.
 */
static void last_round(int last, int few, const char *want, double *pred, double *sd)
{
	struct fix f;
	struct proposer p;
	struct sim sm;
	struct proposal *props = NULL;
	size_t n = 0, nok = 0;

	ab_open(&f, &p, &sm, 9);
	sm.last = last;
	for (int a = 0; a <= 3; a++)
		for (int b = 0; b < 8; b += few ? 4 : 1) {
			json_t *x = json_pack("{s:i, s:i}", "A", a, "B", b);

			if (a < 3 || b % 2 == 0) {
				sim_add_params(&sm, x, "ok", NULL);
				nok++;
			}
			json_decref(x);
		}
	CHECK(few ? nok < 24 : nok >= 24); /* the model's measurements against TUNE_LAST_MIN */
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 4, 4, &props, &n) == 0);
	CHECK(n == 4);
	*pred = *sd = 0;
	for (size_t i = 0; i < n; i++) {
		const char *at = strstr(props[i].rationale, "predicted ");
		double x = 0, y = 0;

		CHECK_CONTAINS(props[i].rationale, want);
		CHECK(at && sscanf(at, "predicted %lfx (sd %lf", &x, &y) == 2);
		*pred += x / (double)n;
		*sd += y / (double)n;
	}
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
}

TEST(model_last_round_takes_what_the_model_expects_fastest)
{
	double ei_pred, ei_sd, last_pred, last_sd, few_pred, few_sd;

	last_round(0, 0, "model: EI ", &ei_pred, &ei_sd);
	last_round(1, 0, "model, last round: predicted ", &last_pred, &last_sd);
	fprintf(stderr,
		"predicted speedup (sd): by expected improvement %.2f (%.2f), last round "
		"%.2f (%.2f)\n",
		ei_pred, ei_sd, last_pred, last_sd);
	/* no later round to learn for: surer points, expected faster */
	CHECK(last_pred > ei_pred);
	CHECK(last_sd < ei_sd);
	/* with few measurements the model's mean is not trusted over its doubt */
	last_round(1, 1, "model: EI ", &few_pred, &few_sd);
}

static double grows_with_a_and_c(json_t *params)
{
	return 1 + (double)param(params, "A") + 0.5 * (double)param(params, "C");
}

/*
 * The last round of an 8 x 8 x 3 space whose third tunable, C, reads as a
 * category: 32 points measured, every one with C 0 or 1, the best at A = 7,
 * C = 1.  Returns how many of the round's 4 proposals are the incumbent's
 * twin (C changed, nothing else), each such checked to be the first and to
 * say so; *c_two counts proposals with C = 2.
 */
static size_t twins_proposed(int last, size_t *c_two)
{
	static const struct tdef abc[] = {
		{ "A", { 0, 1, 2, 3, 4, 5, 6, 7 }, 8 },
		{ "B", { 0, 1, 2, 3, 4, 5, 6, 7 }, 8 },
		{ "C", { 0, 1, 2 }, 3 },
	};
	static const char abc_tmpl[] =
		"// EVOLVE-BLOCK-START\n#define A 0\n#define B 0\n#define C 0\n"
		"// EVOLVE-BLOCK-END\n";
	struct fix f;
	struct proposer p;
	struct sim sm;
	struct proposal *props = NULL;
	char msg[256] = "";
	size_t n = 0, twins = 0;

	fix_init(&f, abc_tmpl, abc, 3, NULL, 0, NULL, RENDER_DEFINE);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 4);
	sm.score = grows_with_a_and_c;
	sm.last = last;
	for (int a = 0; a < 8; a++)
		for (int b = 0; b < 8; b += 2) {
			json_t *x =
				json_pack("{s:i, s:i, s:i}", "A", a, "B", b, "C", (a + b / 2) % 2);

			sim_add_params(&sm, x, "ok", NULL);
			json_decref(x);
		}
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 4, 4, &props, &n) == 0);
	CHECK(n == 4);
	*c_two = 0;
	for (size_t i = 0; i < n; i++) {
		int a = param(props[i].params, "A"), b = param(props[i].params, "B");
		int c = param(props[i].params, "C");

		*c_two += c == 2;
		if (!strstr(props[i].rationale, "the incumbent's twin"))
			continue;
		twins++;
		CHECK(i == 0);
		/* the best measured: A = 7 with C = 1, at B = 0 or 4 */
		CHECK(a == 7 && (b == 0 || b == 4) && c != 1);
		CHECK_CONTAINS(props[i].rationale, c == 2 ? "C 2 for 1" : "C 0 for 1");
	}
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
	return twins;
}

TEST(model_last_round_measures_the_incumbents_twin)
{
	size_t c_two = 0;

	/* C = 2 was never measured: the model cannot rule it out, so its twin goes first */
	CHECK(twins_proposed(1, &c_two) == 1);
	CHECK(c_two >= 1);
	/* a round with rounds after it learns by expected improvement, twins or not */
	CHECK(twins_proposed(0, &c_two) == 0);
}

TEST(restricted_space)
{
	static const struct {
		const char *points, *err;
	} bad[] = {
		{ "[]", "points: not a non-empty array" },
		{ "[1]", "points[0]: not an object" },
		{ "[{\"TM\": 1, \"WX\": 2}, {\"TM\": 1}]", "points[1].WX: missing" },
		{ "[{\"TM\": 3, \"WX\": 2}]",
		  "points[0].TM: 3 is not one of the tunable's values" },
		{ "[{\"TM\": 8, \"WX\": 8}]", "points[0]: breaks a constraint" },
	};
	const char *cons[] = { "TM * WX <= 32" };
	struct fix f;
	struct proposer p;
	struct sim sm;
	struct proposal *props = NULL;
	json_t *pts = json_loads("[{\"TM\": 1, \"WX\": 2}, {\"TM\": 2, \"WX\": 8},"
				 " {\"TM\": 1, \"WX\": 2}, {\"TM\": 4, \"WX\": 1}]",
				 0, NULL);
	char msg[256] = "";
	size_t n = 0;

	fix_init(&f, tmpl, two, 2, cons, 1, NULL, RENDER_OPTIONS);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		json_t *x = json_loads(bad[i].points, 0, NULL);

		msg[0] = 0;
		CHECK(tune_restrict(&p, x, msg, sizeof(msg)) == KERR_INVALID);
		CHECK_CONTAINS(msg, bad[i].err);
		json_decref(x);
	}
	CHECK(tune_restrict(&p, pts, msg, sizeof(msg)) == 0);
	CHECK(tune_set_strategy(&p, "random", msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 2);
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 8, 100, &props, &n) == 0);
	CHECK(n == 3); /* the three listed points, the repeated one once */
	for (size_t i = 0; i < n; i++) {
		int64_t tm = param(props[i].params, "TM"), wx = param(props[i].params, "WX");

		CHECK((tm == 1 && wx == 2) || (tm == 2 && wx == 8) || (tm == 4 && wx == 1));
		CHECK_CONTAINS(props[i].rationale, "random point ");
	}
	proposals_free(props, n);
	CHECK(tune_set_strategy(&p, "annealing", msg, sizeof(msg)) == KERR_INVALID);
	CHECK_STR(msg, "strategy 'annealing': not one of tune, evolve, random");
	json_decref(pts);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
}

/* --- determinism and the table ----------------------------------------------------- */

TEST(deterministic)
{
	const char *cons[] = { "A + B <= 10" };
	struct fix f;
	char *a, *b, *c;

	fix_init(&f, six_tmpl, six, 6, cons, 1, NULL, RENDER_OPTIONS);
	for (size_t i = 0; i < 2; i++) {
		const char *strategy = i ? "tune" : "evolve";

		a = strategy_run(&f, strategy, 1234, 5, 6);
		b = strategy_run(&f, strategy, 1234, 5, 6);
		c = strategy_run(&f, strategy, 4321, 5, 6);
		CHECK_STR(a, b);
		CHECK(strcmp(a, c) != 0);
		free(a);
		free(b);
		free(c);
	}
	fix_release(&f);
}

TEST(want_zero)
{
	struct fix f;
	struct proposer p;
	struct sim sm;
	struct proposal *props = (struct proposal *)&sm;
	char msg[256] = "";
	size_t n = 99;

	fix_init(&f, tmpl, three, 3, NULL, 0, NULL, RENDER_DEFINE);
	CHECK(tune_open(&p, &f.s, msg, sizeof(msg)) == 0);
	sim_init(&sm, &f, 1);
	CHECK(sim_propose(&sm, &p, NAV_EXPLOIT, 0, 100, &props, &n) == 0);
	CHECK(n == 0);
	proposals_free(props, n);
	sim_release(&sm);
	proposer_close(&p);
	fix_release(&f);
}

TEST(proposer_table)
{
	static const struct {
		enum spec_proposer kind;
		int rc;
		const char *msg;
	} cases[] = {
		{ PROPOSER_TUNE, 0, "" },
		{ PROPOSER_LLM, KERR_INVALID, "proposer.llm.model: no model named" },
		{ PROPOSER_COMMAND, KERR_INVALID, "proposer.command.run: no program to run" },
	};
	struct fix f;

	fix_init(&f, tmpl, three, 3, NULL, 0, NULL, RENDER_DEFINE);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct proposer p;
		char msg[256] = "";

		f.s.proposer = cases[i].kind;
		CHECK(proposer_open(&p, &f.s, msg, sizeof(msg)) == cases[i].rc);
		CHECK_STR(msg, cases[i].msg);
		if (!cases[i].rc)
			CHECK_STR(p.name, "tune");
		proposer_close(&p);
		proposer_close(&p);
	}
	/* a model is always mixed with the tuner */
	{
		struct proposer p;
		char msg[256] = "";
		char *argv[] = { "true", NULL };

		f.s.proposer = PROPOSER_COMMAND;
		f.s.m.argv = argv;
		f.s.m.weight_model = 3;
		f.s.m.weight_tune = 1;
		CHECK(proposer_open(&p, &f.s, msg, sizeof(msg)) == 0);
		CHECK_STR(p.name, "mix");
		CHECK(p.reflect != NULL);
		proposer_close(&p);
		f.s.m.argv = NULL;
	}
	proposals_free(NULL, 0);
	fix_release(&f);
}

int main(void)
{
	RUN(render_define);
	RUN(render_define_edges);
	RUN(render_options);
	RUN(render_errors);
	RUN(constraints_with_shapes);
	RUN(constraint_errors_make_vectors_invalid);
	RUN(open_errors);
	RUN(exhaustive_covers_the_space_once);
	RUN(nothing_left_says_why);
	RUN(exhaustive_exploit_is_nearest_first);
	RUN(evolve_template_values_first);
	RUN(known_hash_is_skipped);
	RUN(evolutionary_big_space);
	RUN(evolutionary_listed_space_small_budget);
	RUN(tight_space_points_are_built);
	RUN(refused_vectors_never_return);
	RUN(model_first_round_fills_the_space);
	RUN(model_measures_the_spec_starts_first);
	RUN(starts_outside_the_space_are_skipped);
	RUN(model_beats_random_on_a_smooth_space);
	RUN(model_learns_the_products_the_constraints_name);
	RUN(model_keeps_away_from_failures);
	RUN(model_last_round_takes_what_the_model_expects_fastest);
	RUN(model_last_round_measures_the_incumbents_twin);
	RUN(restricted_space);
	RUN(deterministic);
	RUN(want_zero);
	RUN(proposer_table);
	return test_summary();
}
