#include "diff.h"
#include "xalloc.h"

#include <string.h>

#define DIFF_MAX_LINES 20000
#define CONTEXT        3

struct lines {
	const char **p;
	size_t *len;
	size_t n;
};

static void split(const char *s, struct lines *l)
{
	size_t cap = 16;

	l->p = xcalloc(cap, sizeof(*l->p));
	l->len = xcalloc(cap, sizeof(*l->len));
	l->n = 0;
	while (*s) {
		size_t len = strcspn(s, "\n");

		if (l->n == cap) {
			cap *= 2;
			l->p = xreallocarray(l->p, cap, sizeof(*l->p));
			l->len = xreallocarray(l->len, cap, sizeof(*l->len));
		}
		l->p[l->n] = s;
		l->len[l->n++] = len;
		s += len + (s[len] == '\n');
	}
}

static int same(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
	return a->len[i] == b->len[j] && !memcmp(a->p[i], b->p[j], a->len[i]);
}

/* ops: '=' keep, '-' from a, '+' from b; returns the count. */
static size_t lcs_ops(const struct lines *a, const struct lines *b, char *ops)
{
	size_t n = a->n, m = b->n, k = 0;
	unsigned *t = xcalloc((n + 1) * (m + 1), sizeof(*t));
	size_t i = 0, j = 0;

	for (size_t x = n; x-- > 0;)
		for (size_t y = m; y-- > 0;)
			t[x * (m + 1) + y] = same(a, x, b, y) ? t[(x + 1) * (m + 1) + y + 1] + 1
					     : t[(x + 1) * (m + 1) + y] > t[x * (m + 1) + y + 1]
						     ? t[(x + 1) * (m + 1) + y]
						     : t[x * (m + 1) + y + 1];
	while (i < n || j < m) {
		if (i < n && j < m && same(a, i, b, j)) {
			ops[k++] = '=';
			i++;
			j++;
		} else if (j < m &&
			   (i == n || t[i * (m + 1) + j + 1] >= t[(i + 1) * (m + 1) + j])) {
			ops[k++] = '+';
			j++;
		} else {
			ops[k++] = '-';
			i++;
		}
	}
	free(t);
	return k;
}

static void emit_hunk(const struct lines *a, const struct lines *b, const char *ops, size_t from,
		      size_t to, size_t ai, size_t bi, struct sbuf *out)
{
	size_t na = 0, nb = 0;

	for (size_t k = from; k < to; k++) {
		na += ops[k] != '+';
		nb += ops[k] != '-';
	}
	sbuf_addf(out, "@@ -%zu,%zu +%zu,%zu @@\n", ai + 1, na, bi + 1, nb);
	for (size_t k = from; k < to; k++) {
		const struct lines *src = ops[k] == '+' ? b : a;
		size_t idx = ops[k] == '+' ? bi : ai;

		sbuf_addch(out, ops[k] == '=' ? ' ' : ops[k]);
		sbuf_add(out, src->p[idx], src->len[idx]);
		sbuf_addch(out, '\n');
		ai += ops[k] != '+';
		bi += ops[k] != '-';
	}
}

void diff_unified(const char *a_name, const char *a, const char *b_name, const char *b,
		  struct sbuf *out)
{
	struct lines la, lb;
	char *ops;
	size_t nops, k = 0, ai = 0, bi = 0;

	split(a, &la);
	split(b, &lb);
	if (la.n > DIFF_MAX_LINES || lb.n > DIFF_MAX_LINES) {
		sbuf_addf(out, "(sources over %d lines: no diff shown)\n", DIFF_MAX_LINES);
		goto out;
	}
	ops = xmalloc(la.n + lb.n + 1);
	nops = lcs_ops(&la, &lb, ops);
	sbuf_addf(out, "--- %s\n+++ %s\n", a_name, b_name);
	while (k < nops) {
		size_t start, end, hai, hbi;

		while (k < nops && ops[k] == '=') {
			k++;
			ai++;
			bi++;
		}
		if (k == nops)
			break;
		start = k > CONTEXT ? k - CONTEXT : 0;
		hai = ai - (k - start);
		hbi = bi - (k - start);
		/* The hunk ends CONTEXT lines after its last change that is not
		 * followed by more than 2*CONTEXT unchanged lines. */
		{
			size_t q = k, run = 0, last = k;

			for (; q < nops; q++) {
				if (ops[q] != '=') {
					run = 0;
					last = q;
				} else if (++run > 2 * CONTEXT) {
					break;
				}
			}
			end = last + 1 + CONTEXT < nops ? last + 1 + CONTEXT : nops;
		}
		emit_hunk(&la, &lb, ops, start, end, hai, hbi, out);
		for (; k < end; k++) {
			ai += ops[k] != '+';
			bi += ops[k] != '-';
		}
	}
	free(ops);
out:
	free(la.p);
	free(la.len);
	free(lb.p);
	free(lb.len);
}
