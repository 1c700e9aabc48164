#include "expr-internal.h"
#include "err.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * A recursive-descent parser that evaluates as it parses.  Each parse
 * function takes a "live" flag: when it is 0 the text is only parsed,
 * names are not resolved and no arithmetic is done (the value is a
 * placeholder).  expr_check runs the whole text that way; expr_eval
 * turns it off for the operand C would not evaluate (the right side of
 * a short-circuited && or ||, the untaken arm of ?:), so that guards
 * like "N > 0 ? M / N : 0" work and names there need not exist.
 *
 * Everything knowable from the text alone (syntax, literals, function
 * names and argument counts, the limits) is checked in both modes, so an
 * expression expr_check accepts can only fail expr_eval on a name or on
 * arithmetic.
 */

static const struct {
	char text[3];
	int kind;
} two_char_ops[] = {
	{ "==", TK_EQ }, { "!=", TK_NE },  { "<=", TK_LE },
	{ ">=", TK_GE }, { "&&", TK_AND }, { "||", TK_OR },
};

static const char one_char_ops[] = "()?:,+-*/%!<>";

/* Binary operators from loosest to tightest; each list ends with 0. */
static const struct binary_level {
	int ops[7];
} binary_levels[] = {
	{ { TK_OR } },    { { TK_AND } },        { { TK_EQ, TK_NE, '<', TK_LE, '>', TK_GE } },
	{ { '+', '-' } }, { { '*', '/', '%' } },
};

#define NR_LEVELS (sizeof(binary_levels) / sizeof(binary_levels[0]))

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_name_char(char c)
{
	return is_name_start(c) || is_digit(c);
}

static int digit_value(char c, int base)
{
	if (is_digit(c))
		return c - '0';
	if (base == 16 && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (base == 16 && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int is_u(char c)
{
	return c == 'u' || c == 'U';
}

static int is_l(char c)
{
	return c == 'l' || c == 'L';
}

/* C's integer suffixes: u, l, ll, ul, ull, lu, llu in either case, LL not mixed. */
static int suffix_ok(const char *s, size_t len)
{
	size_t i = 0;
	int u = 0;

	if (i < len && is_u(s[i])) {
		u = 1;
		i++;
	}
	if (i < len && is_l(s[i])) {
		char l = s[i++];

		if (i < len && s[i] == l)
			i++;
	}
	if (!u && i < len && is_u(s[i]))
		i++;
	return i == len;
}

/* Scans the literal at p->pos into p->tok; the whole alphanumeric run is the token. */
static int lex_number(struct parser *p)
{
	const char *t = p->text;
	size_t start = p->pos, i = start, digits = 0, suffix;
	int base = 10, overflow = 0, d;
	int64_t v = 0;

	if (t[i] == '0' && (t[i + 1] == 'x' || t[i + 1] == 'X')) {
		base = 16;
		i += 2;
	}
	for (; (d = digit_value(t[i], base)) >= 0; i++, digits++)
		if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v))
			overflow = 1;
	suffix = i;
	while (is_name_char(t[i]))
		i++;
	p->tok = (struct token){ .kind = TK_NUM, .start = start, .len = i - start, .value = v };
	p->pos = i;

	if (!digits)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"invalid integer literal '%.*s' at column %zu", (int)p->tok.len,
				t + start, expr__col(&p->tok));
	if (base == 10 && t[start] == '0' && digits > 1)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"octal literal '%.*s' not supported at column %zu", (int)p->tok.len,
				t + start, expr__col(&p->tok));
	if (!suffix_ok(t + suffix, i - suffix))
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"invalid suffix on integer literal '%.*s' at column %zu",
				(int)p->tok.len, t + start, expr__col(&p->tok));
	if (overflow)
		return kerr_set(p->msg, p->n, KERR_RANGE,
				"integer literal '%.*s' out of range at column %zu",
				(int)p->tok.len, t + start, expr__col(&p->tok));
	return 0;
}

/* Returns the operator kind at s and its length, or 0 if s starts no operator. */
static int op_kind(const char *s, size_t *len)
{
	for (size_t i = 0; i < sizeof(two_char_ops) / sizeof(two_char_ops[0]); i++) {
		if (s[0] == two_char_ops[i].text[0] && s[1] == two_char_ops[i].text[1]) {
			*len = 2;
			return two_char_ops[i].kind;
		}
	}
	if (s[0] && strchr(one_char_ops, s[0])) {
		*len = 1;
		return (unsigned char)s[0];
	}
	return 0;
}

/* Moves p->tok to the next token. */
static int advance(struct parser *p)
{
	const char *t = p->text;
	size_t i = p->pos, len = 0;
	int kind;

	while (is_space(t[i]))
		i++;
	p->pos = i;
	if (is_digit(t[i]))
		return lex_number(p);
	if (!t[i]) {
		kind = TK_END;
	} else if (is_name_start(t[i])) {
		while (is_name_char(t[i + len]))
			len++;
		kind = TK_NAME;
	} else if (!(kind = op_kind(t + i, &len))) {
		unsigned char c = (unsigned char)t[i];

		if (c >= 0x20 && c < 0x7f)
			return kerr_set(p->msg, p->n, KERR_PARSE, "unexpected '%c' at column %zu",
					c, i + 1);
		return kerr_set(p->msg, p->n, KERR_PARSE, "unexpected byte 0x%02x at column %zu", c,
				i + 1);
	}
	p->tok = (struct token){ .kind = kind, .start = i, .len = len };
	p->pos = i + len;
	return 0;
}

static int unexpected(struct parser *p)
{
	if (p->tok.kind == TK_END)
		return kerr_set(p->msg, p->n, KERR_PARSE,
				"unexpected end of expression at column %zu", expr__col(&p->tok));
	return kerr_set(p->msg, p->n, KERR_PARSE, "unexpected '%.*s' at column %zu",
			(int)p->tok.len, p->text + p->tok.start, expr__col(&p->tok));
}

/* Consumes a one-character token, or fails naming what was expected. */
static int expect(struct parser *p, char c)
{
	if (p->tok.kind != c)
		return kerr_set(p->msg, p->n, KERR_PARSE, "expected '%c' at column %zu", c,
				expr__col(&p->tok));
	return advance(p);
}

/* Counts one level of nesting; the caller undoes it with p->depth-- whatever the result. */
static int enter(struct parser *p)
{
	if (++p->depth > EXPR_MAX_DEPTH)
		return kerr_set(p->msg, p->n, KERR_LIMIT,
				"expression nested deeper than %d at column %zu", EXPR_MAX_DEPTH,
				expr__col(&p->tok));
	return 0;
}

/* ---- compiled programs ---- */

/*
 * expr_compile runs the parser with live off and p->prog set: each parse
 * function then also appends the node of what it parsed and hands back
 * its index.  Tokens are kept whole so that a compiled program's errors
 * name the same text and column as expr_eval's.  A chain of one
 * precedence level ("a + b - c") is one node with a list of links, walked
 * in a loop as parse_binary walks it, so a long chain costs no recursion.
 */
enum node_kind { NODE_NUM, NODE_NAME, NODE_UNARY, NODE_CHAIN, NODE_COND, NODE_CALL };

#define NODE_NONE UINT32_MAX

struct node {
	enum node_kind kind;
	struct token tok; /* the literal, the name, the operator or the function's name */
	const struct func *f;
	uint32_t a; /* NUM: -; NAME: its index in names; UNARY: the operand; CHAIN: the
		       first operand; COND: the condition; CALL: its first argument in args */
	uint32_t b; /* CHAIN: its first link; COND: the taken arm; CALL: the argument count */
	uint32_t c; /* COND: the other arm */
};

struct link {
	struct token op;
	uint32_t rhs, next; /* next: the chain's next link, or NODE_NONE */
};

struct expr_prog {
	char *text;
	struct node *node;
	size_t nnode, anode;
	struct link *link;
	size_t nlink, alink;
	uint32_t *arg;
	size_t narg, aarg;
	char **name;
	size_t nname, aname;
	uint32_t root;
};

static uint32_t node_add(struct parser *p, struct node nd)
{
	struct expr_prog *g = p->prog;

	if (!g)
		return NODE_NONE;
	if (g->nnode == g->anode) {
		g->anode = g->anode ? 2 * g->anode : 16;
		g->node = xreallocarray(g->node, g->anode, sizeof(*g->node));
	}
	g->node[g->nnode] = nd;
	return (uint32_t)g->nnode++;
}

/* Appends op and rhs to the chain whose last link is *last (first link: *first). */
static void link_add(struct parser *p, const struct token *op, uint32_t rhs, uint32_t *first,
		     uint32_t *last)
{
	struct expr_prog *g = p->prog;

	if (!g)
		return;
	if (g->nlink == g->alink) {
		g->alink = g->alink ? 2 * g->alink : 8;
		g->link = xreallocarray(g->link, g->alink, sizeof(*g->link));
	}
	g->link[g->nlink] = (struct link){ .op = *op, .rhs = rhs, .next = NODE_NONE };
	if (*last == NODE_NONE)
		*first = (uint32_t)g->nlink;
	else
		g->link[*last].next = (uint32_t)g->nlink;
	*last = (uint32_t)g->nlink++;
}

/* The index of the name tok spells in p->prog's names, added if new. */
static uint32_t name_index(struct parser *p, const struct token *tok)
{
	struct expr_prog *g = p->prog;
	const char *s = p->text + tok->start;

	for (size_t i = 0; i < g->nname; i++)
		if (!strncmp(g->name[i], s, tok->len) && !g->name[i][tok->len])
			return (uint32_t)i;
	if (g->nname == g->aname) {
		g->aname = g->aname ? 2 * g->aname : 8;
		g->name = xreallocarray(g->name, g->aname, sizeof(*g->name));
	}
	g->name[g->nname] = xstrndup(s, tok->len);
	return (uint32_t)g->nname++;
}

/* ---- grammar ---- */

static int parse_expr(struct parser *p, int live, int64_t *out, uint32_t *nd);

/* Parses the arguments after NAME '(' and calls the function when live. */
static int parse_call(struct parser *p, const struct token *name, int live, int64_t *out,
		      uint32_t *nd)
{
	const struct func *f = expr__find_func(p->text + name->start, name->len);
	int64_t args[EXPR_MAX_ARGS] = { 0 };
	uint32_t argn[EXPR_MAX_ARGS];
	size_t nr = 0;
	int err;

	if (!f)
		return kerr_set(p->msg, p->n, KERR_PARSE, "unknown function '%.*s' at column %zu",
				(int)name->len, p->text + name->start, expr__col(name));
	err = advance(p);
	while (!err) {
		if (nr == EXPR_MAX_ARGS)
			return kerr_set(p->msg, p->n, KERR_LIMIT,
					"more than %d arguments to '%s' at column %zu",
					EXPR_MAX_ARGS, f->name, expr__col(name));
		err = parse_expr(p, live, &args[nr], &argn[nr]);
		nr++;
		if (err || p->tok.kind != ',')
			break;
		err = advance(p);
	}
	if (!err)
		err = expect(p, ')');
	if (!err && (nr < f->min_args || nr > f->max_args))
		err = kerr_set(p->msg, p->n, KERR_PARSE,
			       "'%s' takes %s%zu argument%s, got %zu at column %zu", f->name,
			       f->min_args == f->max_args ? "" : "at least ", f->min_args,
			       f->min_args == 1 ? "" : "s", nr, expr__col(name));
	if (!err && live)
		err = f->fn(p, name, args, nr, out);
	else if (!err)
		*out = 0;
	if (!err && p->prog) {
		struct expr_prog *g = p->prog;

		if (g->narg + nr > g->aarg) {
			g->aarg = 2 * (g->aarg + nr);
			g->arg = xreallocarray(g->arg, g->aarg, sizeof(*g->arg));
		}
		memcpy(g->arg + g->narg, argn, nr * sizeof(*argn));
		*nd = node_add(p, (struct node){ .kind = NODE_CALL,
						 .tok = *name,
						 .f = f,
						 .a = (uint32_t)g->narg,
						 .b = (uint32_t)nr });
		g->narg += nr;
	}
	return err;
}

static int parse_name(struct parser *p, int live, int64_t *out, uint32_t *nd)
{
	struct token name = p->tok;
	int err = advance(p);

	if (err)
		return err;
	if (p->tok.kind == '(')
		return parse_call(p, &name, live, out, nd);
	*out = 0;
	if (live && (!p->lookup || p->lookup(p->ctx, p->text + name.start, name.len, out)))
		return kerr_set(p->msg, p->n, KERR_NOTFOUND, "unknown name '%.*s' at column %zu",
				(int)name.len, p->text + name.start, expr__col(&name));
	if (p->prog)
		*nd = node_add(
			p,
			(struct node){ .kind = NODE_NAME, .tok = name, .a = name_index(p, &name) });
	return 0;
}

static int parse_primary(struct parser *p, int live, int64_t *out, uint32_t *nd)
{
	int err;

	switch (p->tok.kind) {
	case TK_NUM:
		*out = p->tok.value;
		*nd = node_add(p, (struct node){ .kind = NODE_NUM, .tok = p->tok });
		return advance(p);
	case TK_NAME: return parse_name(p, live, out, nd);
	case '(':
		err = advance(p);
		if (!err)
			err = parse_expr(p, live, out, nd);
		if (!err)
			err = expect(p, ')');
		return err;
	default: return unexpected(p);
	}
}

static int parse_unary(struct parser *p, int live, int64_t *out, uint32_t *nd)
{
	struct token op = p->tok;
	int64_t v = 0;
	uint32_t operand = NODE_NONE;
	int err;

	if (op.kind != '-' && op.kind != '+' && op.kind != '!')
		return parse_primary(p, live, out, nd);
	err = enter(p);
	if (!err)
		err = advance(p);
	if (!err)
		err = parse_unary(p, live, &v, &operand);
	if (!err && live)
		err = expr__apply_unary(p, &op, v, out);
	else if (!err)
		*out = 0;
	if (!err)
		*nd = node_add(p, (struct node){ .kind = NODE_UNARY, .tok = op, .a = operand });
	p->depth--;
	return err;
}

static int level_has(const struct binary_level *l, int kind)
{
	for (size_t i = 0; l->ops[i]; i++)
		if (l->ops[i] == kind)
			return 1;
	return 0;
}

/* Parses a left-associative chain of the operators at binary_levels[level]. */
static int parse_binary(struct parser *p, size_t level, int live, int64_t *out, uint32_t *nd)
{
	int64_t lhs = 0, rhs = 0;
	uint32_t first = NODE_NONE, last = NODE_NONE, lhs_nd = NODE_NONE;
	int err;

	if (level == NR_LEVELS)
		return parse_unary(p, live, out, nd);
	err = parse_binary(p, level + 1, live, &lhs, &lhs_nd);
	while (!err && level_has(&binary_levels[level], p->tok.kind)) {
		struct token op = p->tok;
		int rhs_live = live && !(op.kind == TK_AND && !lhs) && !(op.kind == TK_OR && lhs);
		uint32_t rhs_nd = NODE_NONE;

		err = advance(p);
		if (!err)
			err = parse_binary(p, level + 1, rhs_live, &rhs, &rhs_nd);
		if (!err && live)
			err = expr__apply_binary(p, &op, lhs, rhs, &lhs);
		if (!err)
			link_add(p, &op, rhs_nd, &first, &last);
	}
	if (!err)
		*out = lhs;
	if (!err && p->prog)
		*nd = first == NODE_NONE
			      ? lhs_nd
			      : node_add(p, (struct node){
						    .kind = NODE_CHAIN, .a = lhs_nd, .b = first });
	return err;
}

static int parse_expr(struct parser *p, int live, int64_t *out, uint32_t *nd)
{
	int64_t c = 0, a = 0, b = 0;
	uint32_t cn = NODE_NONE, an = NODE_NONE, bn = NODE_NONE;
	int err = enter(p);

	if (!err)
		err = parse_binary(p, 0, live, &c, &cn);
	if (!err && p->tok.kind == '?') {
		err = advance(p);
		if (!err)
			err = parse_expr(p, live && c, &a, &an);
		if (!err)
			err = expect(p, ':');
		if (!err)
			err = parse_expr(p, live && !c, &b, &bn);
		c = c ? a : b;
		if (!err)
			cn = node_add(
				p, (struct node){ .kind = NODE_COND, .a = cn, .b = an, .c = bn });
	}
	if (!err)
		*out = c;
	if (!err && p->prog)
		*nd = cn;
	p->depth--;
	return err;
}

static int expr_run(const char *text, expr_lookup_fn lookup, void *ctx, int live, int64_t *out,
		    char *msg, size_t n, struct expr_prog *prog)
{
	struct parser p = {
		.text = text, .lookup = lookup, .ctx = ctx, .msg = msg, .n = n, .prog = prog
	};
	uint32_t root = NODE_NONE;
	int64_t v = 0;
	int err;

	if (strnlen(text, EXPR_MAX_LEN + 1) > EXPR_MAX_LEN)
		return kerr_set(msg, n, KERR_LIMIT, "expression longer than %d bytes",
				EXPR_MAX_LEN);
	err = advance(&p);
	if (!err)
		err = parse_expr(&p, live, &v, &root);
	if (!err && p.tok.kind != TK_END)
		err = unexpected(&p);
	if (!err && out)
		*out = v;
	if (prog)
		prog->root = root;
	return err;
}

int expr_eval(const char *text, expr_lookup_fn lookup, void *ctx, int64_t *out, char *msg, size_t n)
{
	return expr_run(text, lookup, ctx, 1, out, msg, n, NULL);
}

int expr_check(const char *text, char *msg, size_t n)
{
	/* A literal out of range or a limit is as fatal as bad syntax; one code keeps the contract. */
	return expr_run(text, NULL, NULL, 0, NULL, msg, n, NULL) ? KERR_PARSE : 0;
}

int expr_compile(const char *text, struct expr_prog **out, char *msg, size_t n)
{
	struct expr_prog *g = xcalloc(1, sizeof(*g));
	int err;

	*out = NULL;
	g->text = xstrndup(text, strnlen(text, EXPR_MAX_LEN + 1));
	err = expr_run(g->text, NULL, NULL, 0, NULL, msg, n, g);
	if (err) {
		expr_prog_free(g);
		return err;
	}
	*out = g;
	return 0;
}

size_t expr_prog_names(const struct expr_prog *g)
{
	return g->nname;
}

const char *expr_prog_name(const struct expr_prog *g, size_t i)
{
	return i < g->nname ? g->name[i] : NULL;
}

/* What one evaluation of a compiled program reads. */
struct prog_run {
	const struct expr_prog *g;
	const int64_t *vals;
	const unsigned char *known;
	struct parser p; /* text, msg and n, for the messages that expr_eval writes */
};

/* Evaluates node i, in the order and with the short cuts expr_eval takes. */
static int node_run(struct prog_run *r, uint32_t i, int64_t *out)
{
	const struct node *nd = &r->g->node[i];
	int64_t args[EXPR_MAX_ARGS], v = 0;
	int err = 0;

	switch (nd->kind) {
	case NODE_NUM: *out = nd->tok.value; return 0;
	case NODE_NAME:
		if (r->known && !r->known[nd->a])
			return kerr_set(r->p.msg, r->p.n, KERR_NOTFOUND,
					"unknown name '%.*s' at column %zu", (int)nd->tok.len,
					r->p.text + nd->tok.start, expr__col(&nd->tok));
		*out = r->vals[nd->a];
		return 0;
	case NODE_UNARY:
		err = node_run(r, nd->a, &v);
		return err ? err : expr__apply_unary(&r->p, &nd->tok, v, out);
	case NODE_CHAIN:
		err = node_run(r, nd->a, &v);
		for (uint32_t l = nd->b; !err && l != NODE_NONE; l = r->g->link[l].next) {
			const struct link *k = &r->g->link[l];
			int64_t rhs = 0;

			/* The untaken side stays 0, as it does when expr_eval skips it. */
			if (!(k->op.kind == TK_AND && !v) && !(k->op.kind == TK_OR && v))
				err = node_run(r, k->rhs, &rhs);
			if (!err)
				err = expr__apply_binary(&r->p, &k->op, v, rhs, &v);
		}
		break;
	case NODE_COND:
		err = node_run(r, nd->a, &v);
		if (!err)
			err = node_run(r, v ? nd->b : nd->c, &v);
		break;
	case NODE_CALL:
		for (uint32_t a = 0; !err && a < nd->b; a++)
			err = node_run(r, r->g->arg[nd->a + a], &args[a]);
		return err ? err : nd->f->fn(&r->p, &nd->tok, args, nd->b, out);
	}
	if (!err)
		*out = v;
	return err;
}

int expr_prog_eval(const struct expr_prog *g, const int64_t *vals, const unsigned char *known,
		   int64_t *out, char *msg, size_t n)
{
	struct prog_run r = { .g = g, .vals = vals, .known = known };
	int64_t v = 0;
	int err;

	r.p = (struct parser){ .text = g->text, .msg = msg, .n = n };
	err = node_run(&r, g->root, &v);
	if (!err && out)
		*out = v;
	return err;
}

void expr_prog_free(struct expr_prog *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nname; i++)
		free(g->name[i]);
	free(g->name);
	free(g->node);
	free(g->link);
	free(g->arg);
	free(g->text);
	free(g);
}
