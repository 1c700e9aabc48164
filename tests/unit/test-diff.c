/*
 * test-diff.c - controller/diff.c: every diff applied to its first text
 * gives the second (a patch reader below follows diff -u's hunks), hunks
 * keep their three lines of context, and large sources get a diff too.
 */
#include "diff.h"
#include "test.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct text {
	char **line;
	size_t n;
};

static void text_split(const char *s, struct text *t)
{
	t->line = NULL;
	t->n = 0;
	while (*s) {
		size_t len = strcspn(s, "\n");

		t->line = xreallocarray(t->line, t->n + 1, sizeof(*t->line));
		t->line[t->n++] = xstrndup(s, len);
		s += len + (s[len] == '\n');
	}
}

static void text_free(struct text *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->line[i]);
	free(t->line);
}

/* The text of n lines, each line[i] and a newline. */
static char *text_join(char **line, size_t n)
{
	struct sbuf b = SBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		sbuf_adds(&b, line[i]);
		sbuf_addch(&b, '\n');
	}
	return b.buf ? b.buf : xstrdup("");
}

/*
 * Applies unified diff d to a as patch would, checking every context and
 * removed line against a; returns the result (malloc'd), or NULL with why.
 */
static char *apply(const char *a, const char *d, char *why, size_t n)
{
	struct text ta, td;
	struct sbuf out = SBUF_INIT;
	size_t ai = 0, k = 0;
	char *res = NULL;
	int ok = 1;

	text_split(a, &ta);
	text_split(d, &td);
	if (td.n &&
	    (strncmp(td.line[0], "--- ", 4) || td.n < 2 || strncmp(td.line[1], "+++ ", 4))) {
		snprintf(why, n, "no ---/+++ header: %s", td.line[0]);
		ok = 0;
	}
	k = td.n ? 2 : 0;
	while (ok && k < td.n) {
		size_t sa, na, sb, nb, from, ga = 0, gb = 0;

		if (sscanf(td.line[k], "@@ -%zu,%zu +%zu,%zu @@", &sa, &na, &sb, &nb) != 4) {
			snprintf(why, n, "line %zu is not a hunk header: %s", k + 1, td.line[k]);
			ok = 0;
			break;
		}
		from = na ? sa - 1 : sa;
		if (from < ai || from > ta.n) {
			snprintf(why, n, "hunk at %zu before %zu or past the end", from, ai);
			ok = 0;
			break;
		}
		for (; ai < from; ai++) {
			sbuf_adds(&out, ta.line[ai]);
			sbuf_addch(&out, '\n');
		}
		for (k++; ok && k < td.n && strncmp(td.line[k], "@@ ", 3); k++) {
			char op = td.line[k][0];
			const char *rest = td.line[k] + 1;

			if (op == ' ' || op == '-') {
				ok = ai < ta.n && !strcmp(ta.line[ai], rest);
				if (!ok)
					snprintf(why, n,
						 "line %zu of the diff does not match line %zu",
						 k + 1, ai + 1);
				ai++;
				ga++;
			}
			if (ok && (op == ' ' || op == '+')) {
				sbuf_adds(&out, rest);
				sbuf_addch(&out, '\n');
				gb++;
			}
			if (op != ' ' && op != '-' && op != '+') {
				snprintf(why, n, "line %zu of the diff: %s", k + 1, td.line[k]);
				ok = 0;
			}
		}
		if (ok && (ga != na || gb != nb)) {
			snprintf(why, n, "hunk -%zu,%zu +%zu,%zu holds %zu and %zu lines", sa, na,
				 sb, nb, ga, gb);
			ok = 0;
		}
	}
	for (; ok && ai < ta.n; ai++) {
		sbuf_adds(&out, ta.line[ai]);
		sbuf_addch(&out, '\n');
	}
	if (ok)
		res = out.buf ? out.buf : xstrdup("");
	else
		sbuf_release(&out);
	text_free(&ta);
	text_free(&td);
	return res;
}

/* a's diff against b applies to a and gives b; the diff in *d when wanted. */
static int round_trip(const char *what, const char *a, const char *b, struct sbuf *keep)
{
	struct sbuf d = SBUF_INIT;
	char why[256] = "", *got;
	int ok;

	diff_unified("a", a, "b", b, &d);
	got = apply(a, d.buf ? d.buf : "", why, sizeof(why));
	ok = got && !strcmp(got, b);
	if (!ok)
		fprintf(stderr, "%s: %s\n%.2000s\n", what, got ? "applied, but not b" : why,
			d.buf ? d.buf : "");
	free(got);
	if (keep)
		*keep = d;
	else
		sbuf_release(&d);
	return ok;
}

/* n lines "PREFIX I;" for I from 0. */
static char **numbered(size_t n, const char *prefix)
{
	char **l = xcalloc(n ? n : 1, sizeof(*l));

	for (size_t i = 0; i < n; i++)
		l[i] = xasprintf("%s%zu;", prefix, i);
	return l;
}

static void lines_free(char **l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

TEST(same_text_no_hunk)
{
	struct sbuf d = SBUF_INIT;

	CHECK(round_trip("same", "a\nb\n", "a\nb\n", &d));
	CHECK(d.len == 0); /* nothing, not even the header, as diff -u */
	sbuf_release(&d);
}

TEST(one_line_changed_three_of_context)
{
	char **l = numbered(30, "line "), *a = text_join(l, 30), *b;
	struct sbuf d = SBUF_INIT;

	free(l[14]);
	l[14] = xstrdup("changed");
	b = text_join(l, 30);
	CHECK(round_trip("one line", a, b, &d));
	CHECK(d.buf && strstr(d.buf, "@@ -12,7 +12,7 @@\n line 11;\n") &&
	      strstr(d.buf, "-line 14;\n+changed\n line 15;\n"));
	CHECK(d.buf && !strstr(strstr(d.buf, "\n@@ ") + 1, "\n@@ ")); /* one hunk */
	sbuf_release(&d);
	lines_free(l, 30);
	free(a);
	free(b);
}

TEST(edges)
{
	CHECK(round_trip("to empty", "a\nb\n", "", NULL));
	CHECK(round_trip("from empty", "", "a\nb\n", NULL));
	CHECK(round_trip("head", "b\nc\n", "a\nb\nc\n", NULL));
	CHECK(round_trip("tail", "a\nb\n", "a\nb\nc\n", NULL));
	CHECK(round_trip("repeated lines", "x\nx\nx\ny\nx\n", "x\ny\nx\nx\nx\nx\n", NULL));
}

/* Random edits of texts drawn from few distinct lines (many equal ones). */
TEST(random_edits)
{
	unsigned seed = 12345;
	int ok = 1;

	for (int round = 0; round < 300 && ok; round++) {
		size_t na = (seed = seed * 1103515245u + 12345u) >> 16 & 31, nb;
		char **la = xcalloc(na + 1, sizeof(*la)), **lb = xcalloc(2 * na + 8, sizeof(*lb));
		char *a, *b, what[32];

		for (size_t i = 0; i < na; i++)
			la[i] = xasprintf("%u", (seed = seed * 1103515245u + 12345u) >> 16 & 3);
		nb = 0;
		for (size_t i = 0; i <= na; i++) {
			unsigned r = (seed = seed * 1103515245u + 12345u) >> 16 & 7;

			if (r == 0)
				lb[nb++] = xasprintf("new %u", seed >> 20 & 3);
			if (i < na && r != 1)
				lb[nb++] = xstrdup(la[i]);
		}
		a = text_join(la, na);
		b = text_join(lb, nb);
		snprintf(what, sizeof(what), "random %d", round);
		ok = round_trip(what, a, b, NULL);
		lines_free(la, na);
		lines_free(lb, nb);
		free(a);
		free(b);
	}
	CHECK(ok);
}

/*
 * Sources of 30,000 lines with one changed: one small hunk (this said "no
 * diff shown" past 20,000 lines, and a table for 20,000 took 1.6 GB);
 * 3,000 different lines in a 30,000-line source: right, removed and added.
 */
TEST(large_sources)
{
	enum { N = 30000, MID = 3000 };
	char **l = numbered(N, "int x"), *a = text_join(l, N), *b, *c;
	struct sbuf d = SBUF_INIT;

	free(l[N / 2]);
	l[N / 2] = xstrdup("int changed;");
	b = text_join(l, N);
	CHECK(round_trip("one of 30,000", a, b, &d));
	CHECK(d.len < 300);
	sbuf_release(&d);
	for (size_t i = N / 2 - MID / 2; i < N / 2 + MID / 2; i++) {
		free(l[i]);
		l[i] = xasprintf("float y%zu;", i);
	}
	c = text_join(l, N);
	CHECK(round_trip("3,000 of 30,000", a, c, &d));
	CHECK(d.buf && strstr(d.buf, "@@ -13498,3006 +13498,3006 @@\n"));
	sbuf_release(&d);
	lines_free(l, N);
	free(a);
	free(b);
	free(c);
}

int main(void)
{
	RUN(same_text_no_hunk);
	RUN(one_line_changed_three_of_context);
	RUN(edges);
	RUN(random_edits);
	RUN(large_sources);
	return test_summary();
}
