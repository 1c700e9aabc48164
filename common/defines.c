/*
 * defines.c - a program's integer #defines and -D build options (see
 * defines.h).
 *
 * Not a preprocessor: it reads the source line by line with comments
 * blanked, which is what launch geometry needs (templates define their
 * sizes as plain integer macros) and cannot be led astray by code it does
 * not understand, since anything it cannot evaluate is skipped.  It
 * follows the conditionals it can decide without evaluating anything,
 * #ifdef, #ifndef, #elifdef, #elifndef and #else after them, because a
 * program that sets a tunable before the template's guarded default
 * ("#define WX 1" then "#ifndef WX / #define WX 8 / #endif", as kctl's
 * best.cl does) compiles with the first value; an #if or #elif on an
 * expression is followed as if true, both ways.
 */
#include "defines.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 128 /* longer names are not taken */
#define WHY_LEN      256

static int is_ident_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

/* Length of the C identifier at the start of s (0 if none). */
static size_t ident_len(const char *s)
{
	size_t i = 0;

	while (is_ident_char(s[i], i == 0))
		i++;
	return i;
}

/* Returns a copy of src with comments blanked (newlines kept); caller frees. */
static char *strip_comments(const char *src)
{
	enum { CODE, LINE, BLOCK, STRING } st = CODE;
	char *out = xstrdup(src), quote = 0;

	for (size_t i = 0; src[i]; i++) {
		char c = src[i], next = src[i + 1];

		switch (st) {
		case CODE:
			if (c == '/' && (next == '/' || next == '*')) {
				st = next == '/' ? LINE : BLOCK;
				out[i] = out[i + 1] = ' ';
				i++;
			} else if (c == '"' || c == '\'') {
				st = STRING;
				quote = c;
			}
			break;
		case LINE:
		case BLOCK:
			if (st == BLOCK && c == '*' && next == '/') {
				st = CODE;
				out[i] = out[i + 1] = ' ';
				i++;
			} else if (c == '\n') {
				st = st == LINE ? CODE : BLOCK;
			} else {
				out[i] = ' ';
			}
			break;
		case STRING:
			if (c == '\\' && next)
				i++;
			else if (c == quote || c == '\n')
				st = CODE;
			break;
		}
	}
	return out;
}

static const char ws[] = " \t\r\f\v";

/*
 * If line is a preprocessing directive, returns its name (what follows the
 * '#' and any blanks), else NULL.
 */
static char *directive_name(char *line)
{
	char *p = line + strspn(line, ws);

	return *p == '#' ? p + 1 + strspn(p + 1, ws) : NULL;
}

/* If the directive named at p is "word ARG", returns ARG (after its blanks), else NULL. */
static const char *directive_arg(const char *p, const char *word)
{
	size_t wl = strlen(word);

	if (!p || strncmp(p, word, wl) || !p[wl] || !strchr(ws, p[wl]))
		return NULL;
	return p + wl + strspn(p + wl, ws);
}

/*
 * If the directive named at dir (in a NUL-terminated line, modified) is an
 * object-like "#define NAME body", points *name and *body into it and
 * returns 1.
 */
static int define_split(char *dir, char **name, char **body)
{
	char *p = (char *)directive_arg(dir, "define");
	size_t nl, bl;

	if (!p)
		return 0;
	nl = ident_len(p);
	if (!nl || nl > NAME_MAX_LEN || (p[nl] && !strchr(ws, p[nl])))
		return 0; /* no name, function-like "NAME(", or junk */
	*name = p;
	p += nl;
	if (*p)
		*p++ = '\0';
	*body = p + strspn(p, ws);
	bl = strlen(*body);
	while (bl && strchr(ws, (*body)[bl - 1]))
		(*body)[--bl] = '\0';
	return 1;
}

/* Conditionals nested deeper than this are followed as if true. */
#define COND_MAX 64

/* One open conditional: how its current branch was decided. */
enum cond {
	COND_TAKEN,   /* decided, and this branch is the one compiled */
	COND_SKIPPED, /* decided, and this branch is not compiled */
	COND_UNKNOWN, /* an expression: followed as if compiled */
};

struct conds {
	enum cond c[COND_MAX];
	char taken[COND_MAX]; /* an earlier branch was compiled */
	size_t depth;         /* may pass COND_MAX: those levels are unknown */
};

/*
 * How the lines at this point are compiled: COND_SKIPPED when a decided
 * branch around them is not compiled, COND_UNKNOWN when an undecided
 * conditional (or one nested past COND_MAX) encloses them, followed as if
 * compiled, else COND_TAKEN: surely compiled.
 */
static enum cond conds_state(const struct conds *cs)
{
	size_t n = cs->depth < COND_MAX ? cs->depth : COND_MAX;
	enum cond st = cs->depth > COND_MAX ? COND_UNKNOWN : COND_TAKEN;

	for (size_t i = 0; i < n; i++) {
		if (cs->c[i] == COND_SKIPPED)
			return COND_SKIPPED;
		if (cs->c[i] == COND_UNKNOWN)
			st = COND_UNKNOWN;
	}
	return st;
}

/* The conditional directives, by how they open, continue or close a conditional. */
enum dir { DIR_NONE, DIR_IF, DIR_ELIF, DIR_ELSE, DIR_ENDIF };

/*
 * The directive at p (after the '#'), and whether its condition can be
 * decided: *known set, and *holds to whether it holds, for the #ifdef
 * forms, whose name is defined when macros holds it with a value of 1.
 */
static enum dir directive(const char *p, const struct expr_vars *macros, int *known, int *holds)
{
	static const struct {
		const char *name;
		enum dir dir;
		int test; /* 0: an expression; 1: the name is defined; -1: it is not */
	} dirs[] = {
		{ "if", DIR_IF, 0 },     { "ifdef", DIR_IF, 1 },     { "ifndef", DIR_IF, -1 },
		{ "elif", DIR_ELIF, 0 }, { "elifdef", DIR_ELIF, 1 }, { "elifndef", DIR_ELIF, -1 },
		{ "else", DIR_ELSE, 0 }, { "endif", DIR_ENDIF, 0 },
	};
	size_t dl = ident_len(p), nl;
	const char *arg = p + dl + strspn(p + dl, ws);
	char name[NAME_MAX_LEN + 1];
	int64_t v = 0;

	*known = *holds = 0;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (strlen(dirs[i].name) != dl || strncmp(p, dirs[i].name, dl))
			continue;
		nl = ident_len(arg);
		if (dirs[i].test && nl && nl <= NAME_MAX_LEN) {
			memcpy(name, arg, nl);
			name[nl] = '\0';
			*known = 1;
			*holds = (!expr_vars_get(macros, name, &v) && v) == (dirs[i].test > 0);
		}
		return dirs[i].dir;
	}
	return DIR_NONE;
}

/*
 * If the directive named at p is a conditional, updates cs and returns 1.
 * macros holds every name defined as a macro at this point (value 1; 0
 * after #undef).
 */
static int conds_line(struct conds *cs, const char *p, const struct expr_vars *macros)
{
	size_t top = cs->depth - 1;
	int known, holds;
	enum dir d = directive(p, macros, &known, &holds);

	if (d == DIR_NONE)
		return 0;
	if (d == DIR_IF) {
		if (++cs->depth <= COND_MAX) {
			cs->c[cs->depth - 1] = !known  ? COND_UNKNOWN
					       : holds ? COND_TAKEN
						       : COND_SKIPPED;
			cs->taken[cs->depth - 1] = cs->c[cs->depth - 1] == COND_TAKEN;
		}
		return 1;
	}
	if (!cs->depth) /* a stray one: the compiler refuses it */
		return 1;
	if (d == DIR_ENDIF) {
		cs->depth--;
		return 1;
	}
	/* an undecided conditional's later branches are not decided either */
	if (top >= COND_MAX || cs->c[top] == COND_UNKNOWN)
		return 1;
	if (cs->taken[top])
		cs->c[top] = COND_SKIPPED;
	else if (d == DIR_ELSE || known)
		cs->c[top] = d == DIR_ELSE || holds ? COND_TAKEN : COND_SKIPPED;
	else
		cs->c[top] = COND_UNKNOWN;
	cs->taken[top] |= cs->c[top] == COND_TAKEN;
	return 1;
}

/* If the directive named at dir is "#undef NAME", marks NAME undefined in macros. */
static void undef_line(const char *dir, struct expr_vars *macros)
{
	const char *p = directive_arg(dir, "undef");
	char name[NAME_MAX_LEN + 1];
	size_t nl = p ? ident_len(p) : 0;

	if (!nl || nl > NAME_MAX_LEN)
		return;
	memcpy(name, p, nl);
	name[nl] = '\0';
	expr_vars_set(macros, name, 0);
}

/* Evaluates and sets one option definition "NAME" or "NAME=VALUE"; marks it in given. */
static void option_define(const char *def, struct expr_vars *vars, struct expr_vars *given)
{
	char name[NAME_MAX_LEN + 1], why[WHY_LEN];
	size_t nl = ident_len(def);
	int64_t v = 1;

	if (!nl || nl > NAME_MAX_LEN || (def[nl] && def[nl] != '='))
		return;
	memcpy(name, def, nl);
	name[nl] = '\0';
	if (def[nl] == '=' && expr_eval(def + nl + 1, expr_vars_lookup, vars, &v, why, sizeof(why)))
		return;
	expr_vars_set(vars, name, v);
	expr_vars_set(given, name, 1);
}

/* "-DNAME[=VALUE]" and "-D NAME[=VALUE]", as clBuildProgram reads them. */
static void collect_options(const char *options, struct expr_vars *vars, struct expr_vars *given)
{
	char *copy = xstrdup(options), *save = NULL, *tok;
	int want_def = 0;

	for (tok = strtok_r(copy, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (want_def)
			option_define(tok, vars, given);
		else if (!strncmp(tok, "-D", 2) && tok[2])
			option_define(tok + 2, vars, given);
		want_def = !strcmp(tok, "-D") && !want_def;
	}
	free(copy);
}

/*
 * Build options are read first: "-DTM=8" is what a later "#define ROWS
 * (TM * 2)" sees, and a template's "#ifndef TM" guard skips its default.
 * A #define of an option's name replaces its value where the compiler
 * surely compiles it (as the compiler does, with a warning); under an
 * undecided #if the option keeps its value, since the compiler may skip
 * that #define.
 */
void defines_collect(const char *source, const char *options, struct expr_vars *vars)
{
	struct expr_vars given = EXPR_VARS_INIT, macros = EXPR_VARS_INIT;
	struct conds cs = { .depth = 0 };
	char *text = strip_comments(source ? source : ""), *save = NULL, *line, *dir, *name, *body;
	char why[WHY_LEN];
	enum cond st;
	int64_t v;

	collect_options(options ? options : "", vars, &given);
	for (size_t i = 0; i < given.nr; i++)
		expr_vars_set(&macros, given.v[i].name, 1);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* only directives define anything; each is parsed from its name once */
		dir = directive_name(line);
		if (!dir || conds_line(&cs, dir, &macros) ||
		    (st = conds_state(&cs)) == COND_SKIPPED)
			continue;
		undef_line(dir, &macros);
		if (!define_split(dir, &name, &body))
			continue;
		expr_vars_set(&macros, name, 1);
		if (!expr_vars_get(&given, name, &v) && st != COND_TAKEN)
			continue;
		if (!expr_eval(body, expr_vars_lookup, vars, &v, why, sizeof(why)))
			expr_vars_set(vars, name, v);
	}
	expr_vars_release(&macros);
	expr_vars_release(&given);
	free(text);
}
