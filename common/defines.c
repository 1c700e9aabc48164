/*
 * defines.c - a program's integer #defines and -D build options (see
 * defines.h).
 *
 * Not a preprocessor: it reads the source line by line with comments
 * blanked, which is what launch geometry needs (templates define their
 * sizes as plain integer macros) and cannot be led astray by code it does
 * not understand, since anything it cannot evaluate is skipped.
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

/*
 * If line (NUL-terminated, modified) is an object-like "#define NAME body",
 * points *name and *body into it and returns 1.
 */
static int define_split(char *line, char **name, char **body)
{
	static const char ws[] = " \t\r\f\v";
	char *p = line + strspn(line, ws);
	size_t nl, bl;

	if (*p++ != '#')
		return 0;
	p += strspn(p, ws);
	if (strncmp(p, "define", 6) || !p[6] || !strchr(ws, p[6]))
		return 0;
	p += 6;
	p += strspn(p, ws);
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
 * Build options are read first and win: a template guards its tunables
 * with #ifndef, so "-DTM=8" both replaces "#define TM 4" and is what the
 * later "#define ROWS (TM * 2)" sees.
 */
void defines_collect(const char *source, const char *options, struct expr_vars *vars)
{
	struct expr_vars given = EXPR_VARS_INIT;
	char *text = strip_comments(source ? source : ""), *save = NULL, *line, *name, *body;
	char why[WHY_LEN];
	int64_t v;

	collect_options(options ? options : "", vars, &given);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!define_split(line, &name, &body) || !expr_vars_get(&given, name, &v))
			continue;
		if (!expr_eval(body, expr_vars_lookup, vars, &v, why, sizeof(why)))
			expr_vars_set(vars, name, v);
	}
	expr_vars_release(&given);
	free(text);
}
