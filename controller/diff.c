#include "diff.h"
#include "xalloc.h"

#include <string.h>

/*
 * The LCS table's cells (4 bytes each) for the lines between the common
 * prefix and suffix; past it those lines are shown all removed, then all
 * added: a diff that is right, if not the shortest, at 16 MiB at most.
 */
#define DIFF_MAX_CELLS (4u << 20)
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
		} else if (i < n &&
			   (j == m || t[(i + 1) * (m + 1) + j] >= t[i * (m + 1) + j + 1])) {
			/* removals before additions where either keeps the LCS, as diff -u */
			ops[k++] = '-';
			i++;
		} else {
			ops[k++] = '+';
			j++;
		}
	}
	free(t);
	return k;
}

/*
 * The ops of a against b: the lines both begin and end with are kept
 * without a table (a variant differs from its parent inside its
 * EVOLVE-BLOCK), the rest by lcs_ops when its table fits DIFF_MAX_CELLS,
 * else removed and added whole.
 */
static size_t diff_ops(const struct lines *a, const struct lines *b, char *ops)
{
	size_t pre = 0, suf = 0, k = 0;
	struct lines ma, mb;

	while (pre < a->n && pre < b->n && same(a, pre, b, pre))
		pre++;
	while (suf < a->n - pre && suf < b->n - pre && same(a, a->n - 1 - suf, b, b->n - 1 - suf))
		suf++;
	ma = (struct lines){ a->p + pre, a->len + pre, a->n - pre - suf };
	mb = (struct lines){ b->p + pre, b->len + pre, b->n - pre - suf };
	memset(ops, '=', pre);
	k = pre;
	if ((ma.n + 1) * (mb.n + 1) <= DIFF_MAX_CELLS) {
		k += lcs_ops(&ma, &mb, ops + k);
	} else {
		memset(ops + k, '-', ma.n);
		memset(ops + k + ma.n, '+', mb.n);
		k += ma.n + mb.n;
	}
	memset(ops + k, '=', suf);
	return k + suf;
}

static void emit_hunk(const struct lines *a, const struct lines *b, const char *ops, size_t from,
		      size_t to, size_t ai, size_t bi, struct sbuf *out)
{
	size_t na = 0, nb = 0;

	for (size_t k = from; k < to; k++) {
		na += ops[k] != '+';
		nb += ops[k] != '-';
	}
	/* an empty side names the line before it, as diff -u and patch do */
	sbuf_addf(out, "@@ -%zu,%zu +%zu,%zu @@\n", na ? ai + 1 : ai, na, nb ? bi + 1 : bi, nb);
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
	size_t nops, k = 0, ai = 0, bi = 0, hunks = 0;

	split(a, &la);
	split(b, &lb);
	ops = xmalloc(la.n + lb.n + 1);
	nops = diff_ops(&la, &lb, ops);
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
		if (!hunks++) /* no header for texts with the same lines, as diff -u */
			sbuf_addf(out, "--- %s\n+++ %s\n", a_name, b_name);
		emit_hunk(&la, &lb, ops, start, end, hai, hbi, out);
		for (; k < end; k++) {
			ai += ops[k] != '+';
			bi += ops[k] != '-';
		}
	}
	free(ops);
	free(la.p);
	free(la.len);
	free(lb.p);
	free(lb.len);
}
