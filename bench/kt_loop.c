/*
 * kt_loop.c - what one long-lived tuning process pays per configuration,
 * measured rather than estimated (prints figures; not a test).
 *
 *   kt_loop BATCH [RUNS]
 *
 * Kernel Tuner evaluates a configuration in the process that tunes: it
 * compiles the configuration's source, runs the kernel a fixed number of
 * times at one problem size on arguments it allocated once, and checks
 * the answer of one run.  This does the same with evalpod's own parts, so
 * the cost is counted on the same device with the same compiler: one
 * process opens the device, makes the buffers of BATCH's timed shape and
 * fills them once, then for every variant in turn builds the source (with
 * the options evalpod's checks use), binds the launch plan and runs it RUNS
 * times (default 9: Kernel Tuner's warm-up, its seven timed iterations and
 * its answer check), waiting for each run.  Nothing is checked, flushed,
 * sandboxed or judged, and there is no Python: the figure is a floor under
 * a real tuner's cost, which is what evalpod's wall per evaluation is
 * compared with (bench/harness.sh).
 *
 * One line per variant (build, first run, the other runs, all), then the
 * mean; the first build in the process carries the parse of PoCL's kernel
 * library, as the first configuration of a tuning process does.  Set
 * POCL_CACHE_DIR to an empty directory: a program found in PoCL's cache
 * would cost nothing to build.
 */
#include "batch.h"
#include "clrt.h"
#include "expr.h"
#include "fileio.h"
#include "prog.h"
#include "screen.h"
#include "world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cost {
	double build_ms, first_ms, rest_ms;
};

static int run_plan(struct clrt *rt, struct plan *p, char *msg, size_t n)
{
	cl_int err = plan_enqueue(p, rt->queue, NULL, msg, n);

	if (err == CL_SUCCESS)
		err = clFinish(rt->queue);
	if (err != CL_SUCCESS) {
		snprintf(msg, n, "running the plan: %s", clrt_errstr(err));
		return -1;
	}
	return 0;
}

/* Builds src, binds its plan to w and runs it runs times; fills *c. */
static int evaluate(struct clrt *rt, const struct batch *b, struct world *w,
		    const struct source_spec *src, int runs, struct cost *c, char *msg, size_t n)
{
	struct expr_vars vars = EXPR_VARS_INIT;
	struct plan p = { NULL, 0 };
	struct prog pg;
	char *opts = screen_build_options(src->options);
	double t0 = clrt_now_ms(), t1, t2;
	int rc;

	memset(&pg, 0, sizeof(pg));
	rc = prog_build_source(&pg, rt, src->source, opts, 1 << 16, msg, n);
	free(opts);
	t1 = clrt_now_ms();
	batch_program_vars(b, src, b->timed_shape, &vars);
	if (!rc)
		rc = plan_bind(&p, w, pg.program, b->launch, b->nlaunch, &vars, msg, n);
	if (!rc)
		rc = run_plan(rt, &p, msg, n);
	t2 = clrt_now_ms();
	for (int i = 1; i < runs && !rc; i++)
		rc = run_plan(rt, &p, msg, n);
	c->build_ms = t1 - t0;
	c->first_ms = t2 - t1;
	c->rest_ms = clrt_now_ms() - t2;
	plan_release(&p);
	prog_release(&pg);
	expr_vars_release(&vars);
	return rc;
}

int main(int argc, char **argv)
{
	struct batch b;
	struct clrt rt;
	struct world w;
	char msg[4096], *text = NULL;
	size_t len = 0;
	int runs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 9, rc = 1;
	double sum_build = 0, sum_first = 0, sum_rest = 0;

	if (argc < 2 || runs < 1) {
		fprintf(stderr, "usage: kt_loop BATCH [RUNS]\n");
		return 2;
	}
	memset(&b, 0, sizeof(b));
	memset(&rt, 0, sizeof(rt));
	memset(&w, 0, sizeof(w));
	if (file_read(argv[1], 1u << 28, &text, &len, msg, sizeof(msg)) ||
	    batch_parse(&b, text, len, msg, sizeof(msg)) ||
	    clrt_open(&rt, &b.device, msg, sizeof(msg)) ||
	    world_open(&w, &rt, &b, b.timed_shape, msg, sizeof(msg)) ||
	    world_fill(&w, 1, POISON_A, msg, sizeof(msg))) {
		fprintf(stderr, "kt_loop: %s\n", msg);
		goto out;
	}
	printf("%-48s %9s %9s %9s %9s\n", "variant", "build_ms", "first_ms", "rest_ms", "all_ms");
	for (size_t i = 0; i < b.nvariants; i++) {
		const struct source_spec *src = &b.variants[i];
		struct cost c;

		if (evaluate(&rt, &b, &w, src, runs, &c, msg, sizeof(msg))) {
			fprintf(stderr, "kt_loop: %s: %s\n", src->id, msg);
			goto out;
		}
		printf("%-48.48s %9.1f %9.1f %9.1f %9.1f\n", src->id, c.build_ms, c.first_ms,
		       c.rest_ms, c.build_ms + c.first_ms + c.rest_ms);
		sum_build += c.build_ms;
		sum_first += c.first_ms;
		sum_rest += c.rest_ms;
	}
	if (b.nvariants) {
		double nv = (double)b.nvariants;

		printf("mean over %zu variants: build %.1f ms, first run %.1f ms, %d more runs "
		       "%.1f ms; %.3f s per configuration\n",
		       b.nvariants, sum_build / nv, sum_first / nv, runs - 1, sum_rest / nv,
		       (sum_build + sum_first + sum_rest) / nv / 1e3);
	}
	rc = 0;
out:
	world_close(&w);
	clrt_close(&rt);
	batch_release(&b);
	free(text);
	return rc;
}
