/*
 * test-eval-out.c - unit tests for controller/eval-out.c: GitHub's escaping
 * of workflow commands, the annotations of build logs in both the forms
 * compilers print, the Markdown summary with hostile file names and
 * messages, $GITHUB_OUTPUT's delimited values, and the verdicts' words and
 * exit statuses.  The expected texts are the golden ones, exactly.
 */
#include "eval-out.h"
#include "sbuf.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

/* What fn wrote to a FILE, as a new string. */
static char *capture(void (*fn)(FILE *, const struct eval_report *), const struct eval_report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fn(f, r);
	fclose(f);
	return buf;
}

static json_t *failed(const char *status, const char *kind, const char *message, const char *log)
{
	return json_pack("{s:s, s:{s:s, s:s, s:s}, s:{s:b, s:s}}", "status", status, "fault",
			 "kind", kind, "origin", "candidate", "message", message, "compile", "ok",
			 0, "log", log);
}

static json_t *timed(double ms, double gflops)
{
	return json_pack("{s:s, s:{s:f, s:f}, s:{s:f, s:f, s:s}, s:{s:s, s:s}}", "status", "ok",
			 "performance", "median_ms", ms, "robust_cv", 0.01, "roofline", "gflops",
			 gflops, "fraction_of_peak_flops", 0.5, "bottleneck", "compute", "device",
			 "name", "pthread-test", "driver", "3.1");
}

static struct eval_kernel kernel(const char *file, const char *id, json_t *res)
{
	struct eval_kernel k;

	memset(&k, 0, sizeof(k));
	k.file = file;
	k.id = id;
	k.res = res;
	k.status = json_string_value(json_object_get(res, "status"));
	k.speedup = k.lo = k.hi = k.allowed = NAN;
	return k;
}

static void release(struct eval_report *r)
{
	for (size_t i = 0; i < r->nk; i++)
		json_decref(r->k[i].res);
	json_decref(r->base_res);
}

TEST(escapes_data_and_properties_as_github_reads_them)
{
	struct sbuf b = SBUF_INIT;

	eval_gh_escape(&b, "50% done:: a,b\r\nnext", 0);
	CHECK_STR(b.buf, "50%25 done:: a,b%0D%0Anext");
	sbuf_reset(&b);
	eval_gh_escape(&b, "dir,x/a:b%.cl", 1);
	CHECK_STR(b.buf, "dir%2Cx/a%3Ab%25.cl");
	sbuf_release(&b);
}

TEST(verdicts_have_their_words_and_exit_statuses)
{
	CHECK_STR(eval_verdict_name(EVAL_PASS), "pass");
	CHECK_STR(eval_verdict_name(EVAL_INCORRECT), "incorrect");
	CHECK_STR(eval_verdict_name(EVAL_REGRESSION), "regression");
	CHECK_STR(eval_verdict_name(EVAL_INFRA), "infra_error");
	CHECK(eval_exit_status(EVAL_PASS) == 0);
	CHECK(eval_exit_status(EVAL_INCORRECT) == 1);
	CHECK(eval_exit_status(EVAL_REGRESSION) == 2);
	CHECK(eval_exit_status(EVAL_INFRA) == 3);
}

TEST(annotations_locate_compile_errors_in_both_log_forms)
{
	struct eval_kernel k[3];
	struct eval_report r = { .k = k, .nk = 3, .threshold = 0.05, .verdict = EVAL_INCORRECT };
	char *got;

	/* PoCL's form, clang's form with a column and without, a warning left out */
	k[0] = kernel("src/a,b.cl", "kernel-1",
		      failed("compile_error", "compile_error", "CL_BUILD_PROGRAM_FAILURE",
			     "error: program.cl:11:45: expected ';' at end of declaration\n"
			     "program.cl:3:2: warning: unused\n"
			     "program.cl:7:1: error: 50% of '::' here\n"
			     "program.cl:9: fatal error: no col\n"));
	/* an incorrect kernel's message, with a line break in it, at file level */
	k[1] = kernel("b.cl", "kernel-2",
		      failed("incorrect", "wrong_values", "'y' differs\nat 3: 100%", ""));
	/* the static screen's refusal names its line in the message */
	k[2] = kernel("c.cl", "kernel-3",
		      failed("compile_error", "refused", "inline assembly (line 4): refused", ""));
	got = capture(eval_annotations, &r);
	CHECK_STR(got,
		  "::error file=src/a%2Cb.cl,line=11,col=45,title=kctl eval%3A compile "
		  "error::expected ';' at end of declaration\n"
		  "::error file=src/a%2Cb.cl,line=7,col=1,title=kctl eval%3A compile "
		  "error::50%25 of '::' here\n"
		  "::error file=src/a%2Cb.cl,line=9,title=kctl eval%3A compile error::no col\n"
		  "::error file=b.cl,title=kctl eval%3A incorrect::'y' differs%0Aat 3: 100%25\n"
		  "::error file=c.cl,line=4,title=kctl eval%3A compile_error::inline assembly "
		  "(line 4): refused\n");
	free(got);
	release(&r);
}

TEST(annotations_stop_at_ten_per_kernel)
{
	struct sbuf log = SBUF_INIT;
	struct eval_kernel k[1];
	struct eval_report r = { .k = k, .nk = 1, .verdict = EVAL_INCORRECT };
	char *got, *p;
	int lines = 0;

	for (int i = 1; i <= 25; i++)
		sbuf_addf(&log, "program.cl:%d:1: error: e%d\n", i, i);
	k[0] = kernel("a.cl", "kernel-1", failed("compile_error", "compile_error", "x", log.buf));
	got = capture(eval_annotations, &r);
	for (p = got; (p = strchr(p, '\n')); p++)
		lines++;
	CHECK(lines == EVAL_MAX_ANNOTATIONS);
	CHECK_CONTAINS(got, "line=10,col=1,title=kctl eval%3A compile error::e10\n");
	CHECK(!strstr(got, "e11"));
	free(got);
	sbuf_release(&log);
	release(&r);
}

TEST(a_regression_is_annotated_with_its_interval)
{
	struct eval_kernel k[2];
	struct eval_report r = { .k = k, .nk = 2, .threshold = 0.05, .verdict = EVAL_REGRESSION };
	char *got;

	k[0] = kernel("slow.cl", "kernel-1", timed(2.0, 50));
	k[0].speedup = 0.8;
	k[0].lo = 0.78;
	k[0].hi = 0.83;
	k[0].pairs = 20;
	k[0].allowed = 0.05;
	k[0].regression = 1;
	k[1] = kernel("fine.cl", "kernel-2", timed(1.0, 100));
	k[1].speedup = 0.99;
	k[1].allowed = 0.05;
	got = capture(eval_annotations, &r);
	CHECK_STR(got, "::error file=slow.cl,title=kctl eval%3A regression::slower than the "
		       "baseline: -20.0%25 (95%25 CI -22.0%25 to -17.0%25, 20 paired samples), "
		       "more than the 5.0%25 allowed\n");
	free(got);
	release(&r);
}

TEST(markdown_escapes_what_could_break_the_table_or_the_page)
{
	struct eval_kernel k[2];
	struct eval_report r = { .spec = "spec|x.yaml",
				 .session = "s-1",
				 .results = "out/s-1/rounds/r000/results",
				 .k = k,
				 .nk = 2,
				 .threshold = 0.05,
				 .verdict = EVAL_INCORRECT };
	struct sbuf b = SBUF_INIT;

	/* as on a machine that is not a GitHub runner: no link to a run */
	unsetenv("GITHUB_SERVER_URL");
	unsetenv("GITHUB_REPOSITORY");
	unsetenv("GITHUB_RUN_ID");
	r.base_res = timed(1.0, 100);
	k[0] = kernel("a|<script>`x`</script>.cl", "kernel-1", timed(0.5, 200));
	k[0].speedup = 2.0;
	k[0].lo = 1.9;
	k[0].hi = 2.1;
	k[0].pairs = 30;
	k[0].allowed = 0.05;
	k[1] = kernel("b.cl", "kernel-2",
		      failed("incorrect", "wrong_values", "bad | value\n<b>&amp;</b> *x*", ""));
	eval_markdown(&b, &r);
	CHECK_STR(b.buf,
		  "### kctl eval: incorrect\n\n"
		  "incorrect: 1 of 2 kernels failed their checks\n\n"
		  "Spec spec\\|x.yaml, baseline the spec's template, device pthread-test (3.1), "
		  "session s-1.\n\n"
		  "| kernel | status | vs baseline [95% CI] | GFLOP/s | of peak | vs reference | "
		  "bottleneck | verdict |\n"
		  "|---|---|---|---:|---:|---:|---|---|\n"
		  "| a\\|&lt;script&gt;&#96;x&#96;&lt;/script&gt;.cl | ok | 2.000x \\[1.900, "
		  "2.100\\] | 200.00 | 0.50 | - | compute | ok |\n"
		  "| b.cl | incorrect | - | - | - | - | - | failed |\n\n"
		  "**Failures**\n\n"
		  "- b.cl: incorrect: bad \\| value &lt;b&gt;&amp;amp;&lt;/b&gt; \\*x\\*\n\n"
		  "A kernel regresses when its paired speedup over the baseline is below 1 by more "
		  "than 5.0% or the half-width of its 95% interval, whichever is larger. Result "
		  "documents, traces and IR: out/s-1/rounds/r000/results.\n");
	/* on GitHub Actions, the run's page (which lists its artifacts) is linked */
	setenv("GITHUB_SERVER_URL", "https://github.com", 1);
	setenv("GITHUB_REPOSITORY", "org/repo.x", 1);
	setenv("GITHUB_RUN_ID", "12345", 1);
	sbuf_reset(&b);
	eval_markdown(&b, &r);
	CHECK_CONTAINS(b.buf, "out/s-1/rounds/r000/results (the run's artifacts: "
			      "https://github.com/org/repo.x/actions/runs/12345).\n");
	/* values GitHub would not set make no link, so nothing can be injected */
	setenv("GITHUB_REPOSITORY", "org/repo)[x](javascript:1", 1);
	sbuf_reset(&b);
	eval_markdown(&b, &r);
	CHECK(!strstr(b.buf, "artifacts:"));
	setenv("GITHUB_REPOSITORY", "org/repo", 1);
	setenv("GITHUB_SERVER_URL", "http://github.com", 1);
	sbuf_reset(&b);
	eval_markdown(&b, &r);
	CHECK(!strstr(b.buf, "artifacts:"));
	unsetenv("GITHUB_SERVER_URL");
	unsetenv("GITHUB_REPOSITORY");
	unsetenv("GITHUB_RUN_ID");
	sbuf_release(&b);
	release(&r);
}

TEST(github_output_values_are_delimited)
{
	char path[] = "/tmp/test-eval-out-XXXXXX";
	struct eval_kernel k[2];
	struct eval_report r = { .k = k, .nk = 2, .verdict = EVAL_PASS };
	char msg[256], delim[64], line[256];
	int fd = mkstemp(path), n = 0;
	FILE *f;

	close(fd);
	k[0] = kernel("a.cl", "kernel-1", timed(1.0, 123.456));
	k[0].speedup = 1.02;
	k[1] = kernel("b.cl", "kernel-2", timed(1.0, 99));
	k[1].speedup = 0.97;
	CHECK(eval_github_output(path, &r, "out/summary.md", msg, sizeof(msg)) == 0);
	f = fopen(path, "r");
	/* every NAME<<DELIM is followed by one value line and the delimiter */
	while (f && fgets(line, sizeof(line), f)) {
		char *lt = strstr(line, "<<"), val[256];

		CHECK(lt != NULL);
		if (!lt)
			break;
		snprintf(delim, sizeof(delim), "%s", lt + 2);
		CHECK(fgets(val, sizeof(val), f) != NULL);
		CHECK(fgets(line, sizeof(line), f) != NULL);
		CHECK_STR(line, delim);
		CHECK(!strncmp(delim, "ghadelimiter_", 13));
		if (n == 0)
			CHECK_STR(val, "pass\n");
		if (n == 1)
			CHECK_STR(val, "2\n");
		if (n == 2)
			CHECK_STR(val, "0.9700\n");
		if (n == 3)
			CHECK_STR(val, "123.46\n");
		if (n == 4)
			CHECK_STR(val, "out/summary.md\n");
		n++;
	}
	CHECK(n == 5);
	if (f)
		fclose(f);
	unlink(path);
	release(&r);
}

int main(void)
{
	RUN(escapes_data_and_properties_as_github_reads_them);
	RUN(verdicts_have_their_words_and_exit_statuses);
	RUN(annotations_locate_compile_errors_in_both_log_forms);
	RUN(annotations_stop_at_ten_per_kernel);
	RUN(a_regression_is_annotated_with_its_interval);
	RUN(markdown_escapes_what_could_break_the_table_or_the_page);
	RUN(github_output_values_are_delimited);
	return test_summary();
}
