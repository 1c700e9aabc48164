/*
 * screen.c - the rules of the source screen: which preprocessing directives,
 * pragmas, attributes, builtins and identifiers a candidate source may use,
 * the allowlist of build options, and the guard options.  The tokens come
 * from the lexer in screen-lex.c (translation phases 1-3), through
 * screen-internal.h.
 */
#include "screen.h"
#include "screen-internal.h"
#include "err.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct refusal {
	const char *name;
	const char *why;
	const char *what; /* what the name is, for "inline assembly ('asm')" */
};

static const struct {
	const char *name;
	enum dir_kind kind;
	const char *why; /* DIR_REFUSED */
} directives[] = {
	{ .name = "define", .kind = DIR_DEFINE },
	{ .name = "undef", .kind = DIR_UNDEF },
	{ .name = "if", .kind = DIR_PLAIN },
	{ .name = "ifdef", .kind = DIR_PLAIN },
	{ .name = "ifndef", .kind = DIR_PLAIN },
	{ .name = "elif", .kind = DIR_PLAIN },
	{ .name = "elifdef", .kind = DIR_PLAIN },
	{ .name = "elifndef", .kind = DIR_PLAIN },
	{ .name = "else", .kind = DIR_PLAIN },
	{ .name = "endif", .kind = DIR_PLAIN },
	{ .name = "line", .kind = DIR_PLAIN },
	{ .name = "pragma", .kind = DIR_PRAGMA },
	{ .name = "error", .kind = DIR_TEXT },
	{ .name = "warning", .kind = DIR_TEXT },
	{ .name = "include", .kind = DIR_REFUSED, .why = "a kernel is one self-contained source" },
	{ .name = "include_next",
	  .kind = DIR_REFUSED,
	  .why = "a kernel is one self-contained source" },
	{ .name = "import", .kind = DIR_REFUSED, .why = "a kernel is one self-contained source" },
	{ .name = "embed", .kind = DIR_REFUSED, .why = "a kernel is one self-contained source" },
};

static const char allowed_directives[] = "define, undef, if, ifdef, ifndef, elif, elifdef, "
					 "elifndef, else, endif, line, error, warning, pragma";

#define ASM_WHY       "kernel code may not run host instructions"
#define PRAGMA_OP_WHY "it builds pragmas from macro text"

#define PROBE_WHY "it probes files on the host"

static const struct refusal idents[] = {
	{ .name = "asm", .why = ASM_WHY, .what = "inline assembly" },
	{ .name = "__asm", .why = ASM_WHY, .what = "inline assembly" },
	{ .name = "__asm__", .why = ASM_WHY, .what = "inline assembly" },
	{ .name = "__pragma", .why = PRAGMA_OP_WHY },
	{ .name = "__has_include", .why = PROBE_WHY },
	{ .name = "__has_include_next", .why = PROBE_WHY },
	{ .name = "__has_embed", .why = PROBE_WHY },
};

static const char *const allowed_builtins[] = {
	"__builtin_expect",
	"__builtin_assume",
	"__builtin_unreachable",
	"__builtin_assume_aligned",
	"__builtin_nontemporal_load",
	"__builtin_nontemporal_store",
	"__builtin_prefetch",
	"__builtin_isnan",
	"__builtin_isinf",
	"__builtin_isfinite",
	"__builtin_fabsf",
	"__builtin_popcount",
	"__builtin_clz",
	"__builtin_ctz",
	"__builtin_convertvector",
	"__builtin_shufflevector",
};

/* Attributes that run code at load time or change linkage or placement. */
static const char *const load_attrs[] = {
	"constructor", "destructor",    "section",      "alias",        "ifunc",  "weak",
	"weakref",     "visibility",    "naked",        "used",         "retain", "init_priority",
	"target",      "target_clones", "cpu_dispatch", "cpu_specific",
};

/* Names evalpod defines or may remap; the kernel may not define or undefine them. */
static const char *const reserved_macros[] = {
	"asm",
	"__asm",
	"__asm__",
	"get_global_id",
	"get_local_id",
	"get_group_id",
	"get_num_groups",
	"get_global_size",
	"get_local_size",
	"get_global_offset",
	"get_enqueued_local_size",
};

static const struct refusal pragmas[] = {
	{ .name = "push_macro", .why = "it can undo evalpod's definitions" },
	{ .name = "pop_macro", .why = "it can undo evalpod's definitions" },
	{ .name = "include_alias", .why = "it names host files" },
	{ .name = "dependency", .why = "it probes files on the host" },
	{ .name = "system_header", .why = "it hides diagnostics" },
	{ .name = "comment", .why = "it passes text to the linker" },
	{ .name = "__debug", .why = "it runs compiler debugging actions" },
	{ .name = "module", .why = "it loads compiler modules" },
	{ .name = "redefine_extname", .why = "it renames linker symbols" },
	{ .name = "weak", .why = "it changes linkage" },
	{ .name = "visibility", .why = "it changes linkage" },
	{ .name = "section", .why = "it places code in sections" },
	{ .name = "code_seg", .why = "it places code in sections" },
	{ .name = "data_seg", .why = "it places code in sections" },
	{ .name = "bss_seg", .why = "it places code in sections" },
	{ .name = "const_seg", .why = "it places code in sections" },
	{ .name = "init_seg", .why = "it places code in sections" },
};

static int in_list(const struct screen *s, const struct token *tok, const char *const *list,
		   size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (screen__tok_is(s, tok, list[i]))
			return 1;
	return 0;
}

static const struct refusal *find_refusal(const struct screen *s, const struct token *tok,
					  const struct refusal *list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (screen__tok_is(s, tok, list[i].name))
			return &list[i];
	return NULL;
}

/* --- directives --- */

static int begin_directive(struct screen *s, const struct token *hash)
{
	struct token name;
	int err = screen__lex(s, &name);

	if (err)
		return err;
	s->saved = s->nest;
	s->nest = (struct nesting){ .attr_depth = -1 };
	s->dir_words = 0;
	s->pragma_ns = 0;
	if (name.kind == TK_NEWLINE || name.kind == TK_EOF) {
		s->pos = name.start; /* the null directive; the newline ends it */
		s->dir = DIR_PLAIN;
		return 0;
	}
	for (size_t i = 0; name.kind == TK_IDENT && i < ARRAY_SIZE(directives); i++) {
		if (!screen__tok_is(s, &name, directives[i].name))
			continue;
		if (directives[i].kind == DIR_REFUSED)
			return screen__refuse(s, hash->line, "'#%s' is not allowed: %s",
					      directives[i].name, directives[i].why);
		s->dir = directives[i].kind;
		return 0;
	}
	return screen__refuse(
		s, hash->line, "'#%.*s' is not an allowed preprocessing directive (allowed: %s)",
		(int)(name.len > 40 ? 40 : name.len), s->t.c + name.start, allowed_directives);
}

static void end_directive(struct screen *s)
{
	if (s->dir == DIR_NONE)
		return;
	s->dir = DIR_NONE;
	s->nest = s->saved;
}

/* The name after #define or #undef. */
static int screen_macro_name(struct screen *s, const struct token *tok)
{
	const char *verb = s->dir == DIR_DEFINE ? "define" : "undef";
	int reserved = in_list(s, tok, reserved_macros, ARRAY_SIZE(reserved_macros));

	if (tok->kind != TK_IDENT)
		return 0; /* clang refuses it */
	if (reserved || (tok->len >= 8 && !memcmp(s->t.c + tok->start, "EVALPOD_", 8)))
		return screen__refuse(
			s, tok->line,
			"'#%s %.*s' is not allowed: evalpod defines or remaps that name", verb,
			(int)tok->len, s->t.c + tok->start);
	return 0;
}

/* The first words after #pragma: "#pragma push_macro", "#pragma clang system_header". */
static int screen_pragma_word(struct screen *s, const struct token *tok)
{
	const struct refusal *r;

	if (tok->kind != TK_IDENT || s->dir_words > 1 || (s->dir_words == 1 && !s->pragma_ns))
		return 0;
	if (s->dir_words == 0 && (screen__tok_is(s, tok, "clang") || screen__tok_is(s, tok, "GCC")))
		s->pragma_ns = 1;
	r = find_refusal(s, tok, pragmas, ARRAY_SIZE(pragmas));
	if (r)
		return screen__refuse(s, tok->line, "'#pragma %s' is not allowed: %s", r->name,
				      r->why);
	return 0;
}

/* --- tokens --- */

static int is_load_attr(const struct screen *s, const struct token *tok)
{
	const char *p = s->t.c + tok->start;
	struct token inner = *tok;

	if (in_list(s, tok, load_attrs, ARRAY_SIZE(load_attrs)))
		return 1;
	if (tok->len <= 4 || memcmp(p, "__", 2) || memcmp(p + tok->len - 2, "__", 2))
		return 0;
	inner.start += 2;
	inner.len -= 4;
	return in_list(s, &inner, load_attrs, ARRAY_SIZE(load_attrs));
}

static int screen_attr_name(struct screen *s, const struct token *tok)
{
	int body = (s->dir == DIR_DEFINE && s->dir_words > 0) || s->dir == DIR_PRAGMA;

	if (!is_load_attr(s, tok))
		return 0;
	if (s->nest.attr_depth >= 0 || body)
		return screen__refuse(
			s, tok->line,
			"attribute '%.*s' is not allowed: it runs code at load time or "
			"changes linkage",
			(int)tok->len, s->t.c + tok->start);
	if (!s->loose_attr.line)
		s->loose_attr = *tok; /* a plain name, unless a macro hides __attribute__ */
	return 0;
}

static int screen_text(struct screen *s, const char *src, size_t len);
static void screen_init(struct screen *s, char *msg, size_t n);

/*
 * _Pragma("text") is read as the line "#pragma text".  The real kernels use
 * it for "unroll" inside macros, where #pragma cannot stand; the argument
 * must be a plain string literal, so that no macro can build the pragma.
 */
static int screen_pragma_op(struct screen *s, const struct token *op)
{
	struct token open, str, close;
	struct screen inner;
	char why[512], *text;
	const char *w = why;
	size_t len = 0;
	int err;

	if ((err = screen__lex(s, &open)) || (err = screen__lex(s, &str)) ||
	    (err = screen__lex(s, &close)))
		return err;
	if (open.kind != TK_PUNCT || open.punct != '(' || str.kind != TK_LITERAL ||
	    s->t.c[str.start] != '"' || close.kind != TK_PUNCT || close.punct != ')')
		return screen__refuse(
			s, op->line,
			"'_Pragma' must be followed by (\"...\"): a pragma built from macro "
			"text cannot be screened");
	text = xmalloc(str.len + 16);
	len = (size_t)snprintf(text, 16, "#pragma ");
	for (size_t i = str.start + 1; i + 1 < str.start + str.len; i++) {
		if (s->t.c[i] == '\\' && (s->t.c[i + 1] == '\\' || s->t.c[i + 1] == '"'))
			i++; /* destringize: \\ and \" */
		text[len++] = s->t.c[i];
	}
	text[len++] = '\n';
	screen_init(&inner, why, sizeof(why));
	err = screen_text(&inner, text, len);
	free(text);
	if (!err)
		return 0;
	if (!strncmp(w, "line 1: ", 8))
		w += 8;
	return screen__refuse(s, op->line, "in '_Pragma': %s", w);
}

static int screen_ident(struct screen *s, const struct token *tok)
{
	const struct refusal *r = find_refusal(s, tok, idents, ARRAY_SIZE(idents));
	const char *p = s->t.c + tok->start;

	if (r && r->what)
		return screen__refuse(s, tok->line, "%s ('%s') is not allowed: %s", r->what,
				      r->name, r->why);
	if (r)
		return screen__refuse(s, tok->line, "'%s' is not allowed: %s", r->name, r->why);
	if (screen__tok_is(s, tok, "_Pragma"))
		return screen_pragma_op(s, tok);
	if (tok->len >= 10 && !memcmp(p, "__builtin_", 10) &&
	    !in_list(s, tok, allowed_builtins, ARRAY_SIZE(allowed_builtins)))
		return screen__refuse(
			s, tok->line,
			"'%.*s' is not allowed: builtins outside a short list can leak host "
			"addresses or reach into the host",
			(int)(tok->len > 64 ? 64 : tok->len), p);
	if (screen__tok_is(s, tok, "__attribute__") || screen__tok_is(s, tok, "__attribute")) {
		if (s->dir == DIR_DEFINE && s->dir_words > 0 && !s->attr_macro_line)
			s->attr_macro_line = tok->line;
		s->nest.attr_want = 2;
		s->nest.attr_start = s->nest.depth;
	}
	return screen_attr_name(s, tok);
}

/* Follows ( and [ so that the screen knows when it is inside an attribute. */
static void screen_punct(struct screen *s, const struct token *tok)
{
	struct nesting *n = &s->nest;
	int p = tok->punct;

	if (p == '(' && n->attr_want > 0 && --n->attr_want == 0 && n->attr_depth < 0)
		n->attr_depth = n->attr_start;
	if (p == '[' && n->prev == '[' && n->attr_depth < 0)
		n->attr_depth = n->depth - 1; /* [[...]] */
	if (p == '(' || p == '[')
		n->depth++;
	if (p == ')' || p == ']') {
		n->depth--;
		if (n->attr_depth >= 0 && n->depth <= n->attr_depth)
			n->attr_depth = -1;
	}
	n->prev = p;
}

static int screen_token(struct screen *s, const struct token *tok)
{
	int is_paren = tok->kind == TK_PUNCT && tok->punct == '(';
	int err = 0;

	if (s->nest.attr_want > 0 && !is_paren) {
		if (s->dir != DIR_DEFINE)
			return screen__refuse(
				s, tok->line,
				"'__attribute__' must be followed by '((' in a kernel source");
		s->nest.attr_want = 0;
	}
	if (s->dir == DIR_PRAGMA)
		err = screen_pragma_word(s, tok);
	if (!err && tok->kind == TK_IDENT)
		err = screen_ident(s, tok);
	if (!err && (s->dir == DIR_DEFINE || s->dir == DIR_UNDEF) && s->dir_words == 0)
		err = screen_macro_name(s, tok);
	if (tok->kind == TK_PUNCT)
		screen_punct(s, tok);
	else
		s->nest.prev = 0;
	s->dir_words++;
	return err;
}

static int scan(struct screen *s)
{
	struct token tok;
	int err;

	s->bol = 1;
	while (!(err = screen__lex(s, &tok)) && tok.kind != TK_EOF) {
		if (tok.kind == TK_NEWLINE) {
			end_directive(s);
			s->bol = 1;
		} else if (s->dir == DIR_NONE && s->bol && tok.kind == TK_PUNCT &&
			   tok.punct == '#') {
			s->bol = 0;
			err = begin_directive(s, &tok);
		} else {
			s->bol = 0;
			err = screen_token(s, &tok);
		}
		if (err)
			return err;
	}
	if (!err && s->attr_macro_line && s->loose_attr.line)
		err = screen__refuse(
			s, s->loose_attr.line,
			"'%.*s' is not allowed in a source that hides '__attribute__' in a "
			"macro (line %u): it could name a load-time attribute",
			(int)s->loose_attr.len, s->t.c + s->loose_attr.start, s->attr_macro_line);
	return err;
}

static void screen_init(struct screen *s, char *msg, size_t n)
{
	memset(s, 0, sizeof(*s));
	s->nest.attr_depth = -1;
	s->msg = msg;
	s->n = n;
}

static int screen_text(struct screen *s, const char *src, size_t len)
{
	int err = screen__text_load(s, src, len);

	if (!err)
		err = scan(s);
	screen__text_free(s);
	return err;
}

int screen_source(const char *src, size_t len, char *msg, size_t n)
{
	struct screen s;

	screen_init(&s, msg, n);
	return screen_text(&s, src, len);
}

/* --- build options --- */

#define OPTION_SPACE " \t\r\n\v\f"

static const char *const option_flags[] = {
	"-cl-std=CL1.0",
	"-cl-std=CL1.1",
	"-cl-std=CL1.2",
	"-cl-std=CL3.0",
	"-cl-single-precision-constant",
	"-cl-denorms-are-zero",
	"-cl-fp32-correctly-rounded-divide-sqrt",
	"-cl-opt-disable",
	"-cl-mad-enable",
	"-cl-no-signed-zeros",
	"-cl-unsafe-math-optimizations",
	"-cl-finite-math-only",
	"-cl-fast-relaxed-math",
	"-cl-uniform-work-group-size",
	"-cl-no-subgroup-ifp",
	"-cl-kernel-arg-info",
	"-cl-strict-aliasing",
	"-w",
	"-Werror",
};

static int is_value_char(int c)
{
	return (screen__is_ident_char(c) && c != '$') || (c && strchr(".+*/%()<>=!&|^~,-", c));
}

/* NAME and VALUE of a -D: screened as the line "#define NAME VALUE" would be. */
static int screen_define_text(const char *def, size_t namelen, const char *value, char *why,
			      size_t whylen)
{
	char *text = xasprintf("#define %.*s %s\n", (int)namelen, def, value);
	struct screen s;
	int err;

	screen_init(&s, why, whylen);
	err = screen_text(&s, text, strlen(text));
	if (!err && s.attr_macro_line)
		err = kerr_set(why, whylen, KERR_INVALID,
			       "'__attribute__' is not allowed in a macro value");
	free(text);
	return err;
}

static int screen_define(const char *opt, size_t optlen, const char *def, size_t deflen, char *msg,
			 size_t n)
{
	const char *eq = memchr(def, '=', deflen);
	size_t namelen = eq ? (size_t)(eq - def) : deflen;
	char why[512], *value = xstrndup(eq ? eq + 1 : "", eq ? deflen - namelen - 1 : 0);
	const char *w = why;
	int err = 0;

	for (size_t i = 0; i < namelen && !err; i++)
		if (!screen__is_ident_char(def[i]) || def[i] == '$' ||
		    (i == 0 && screen__is_digit(def[0])))
			err = kerr_set(why, sizeof(why), KERR_INVALID, "'%.*s' is not a macro name",
				       (int)namelen, def);
	if (!namelen)
		err = kerr_set(why, sizeof(why), KERR_INVALID, "a macro name is missing");
	for (size_t i = 0; value[i] && !err; i++)
		if (!is_value_char((unsigned char)value[i]))
			err = kerr_set(why, sizeof(why), KERR_INVALID,
				       "character '%c' is not allowed in a macro value", value[i]);
	if (!err)
		err = screen_define_text(def, namelen, value, why, sizeof(why));
	free(value);
	if (!err)
		return 0;
	if (!strncmp(w, "line 1: ", 8))
		w += 8;
	return kerr_set(msg, n, KERR_INVALID, "build option '%.*s': %s", (int)optlen, opt, w);
}

/* One option token; *rest is moved past the argument of a separate "-D NAME". */
static int screen_option(const char *tok, size_t len, const char **rest, char *msg, size_t n)
{
	const char *def;
	size_t deflen;

	if (len == 2 && !memcmp(tok, "-D", 2)) {
		def = *rest + strspn(*rest, OPTION_SPACE);
		deflen = strcspn(def, OPTION_SPACE);
		if (!deflen)
			return kerr_set(msg, n, KERR_INVALID,
					"build option '-D' needs a macro name");
		*rest = def + deflen;
		return screen_define(tok, (size_t)(*rest - tok), def, deflen, msg, n);
	}
	if (len > 2 && !memcmp(tok, "-D", 2))
		return screen_define(tok, len, tok + 2, len - 2, msg, n);
	for (size_t i = 0; i < ARRAY_SIZE(option_flags); i++)
		if (strlen(option_flags[i]) == len && !memcmp(tok, option_flags[i], len))
			return 0;
	/*
	 * PoCL reports no size for them (CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE
	 * is 0), so the only sure way to keep them out is to refuse the standard.
	 */
	if (len == 13 && !memcmp(tok, "-cl-std=CL2.0", 13))
		return kerr_set(msg, n, KERR_INVALID,
				"build option '-cl-std=CL2.0' is not allowed: OpenCL C 2.0 allows "
				"program-scope global variables, which keep state from one launch "
				"to the next (use -cl-std=CL3.0)");
	return kerr_set(msg, n, KERR_INVALID,
			"build option '%.*s' is not allowed (allowed: -D NAME[=VALUE], -cl-..., "
			"-w, -Werror)",
			(int)(len > 200 ? 200 : len), tok);
}

int screen_options(const char *opts, char *msg, size_t n)
{
	const char *p = opts ? opts : "", *tok;
	size_t len;
	int err;

	if (strpbrk(p, "\"'\\"))
		return kerr_set(msg, n, KERR_INVALID,
				"build options may not contain quotes or backslashes: no quoting "
				"is supported");
	for (;;) {
		p += strspn(p, OPTION_SPACE);
		if (!*p)
			return 0;
		tok = p;
		len = strcspn(p, OPTION_SPACE);
		p += len;
		if ((err = screen_option(tok, len, &p, msg, n)))
			return err;
	}
}

/* --- guards --- */

#define GUARD(name, what) "-D" name "=EVALPOD_REFUSED_" what " "

/*
 * Tested on PoCL 3.1 (clang 15): defining the asm keywords and builtin names
 * as macros draws no warning, so candidates built with -Werror still build,
 * and a name that a##b pastes together is rescanned and replaced.  _Pragma
 * and __has_include are left out: redefining them warns "redefining builtin
 * macro", which -Werror turns into an error, and PoCL refuses
 * -Wno-builtin-macro-redefined.
 */
static const char guard_options[] = GUARD("asm", "asm") GUARD("__asm", "asm") GUARD(
	"__asm__", "asm") GUARD("__builtin_frame_address",
				"builtin") GUARD("__builtin_return_address",
						 "builtin") GUARD("__builtin_extract_return_addr",
								  "builtin") GUARD("__builtin_frob_"
										   "return_addr",
										   "builtin")
	GUARD("__builtin_dwarf_cfa", "builtin") GUARD("__builtin_sponentry", "builtin") GUARD(
		"__builtin_readcyclecounter",
		"builtin") GUARD("__builtin_thread_pointer",
				 "builtin") GUARD("__builtin_setjmp",
						  "builtin") GUARD("__builtin_longjmp", "builtin")
		GUARD("__builtin_unwind_init", "builtin") GUARD(
			"__builtin_eh_return",
			"builtin") GUARD("__builtin_ia32_rdtsc",
					 "builtin") GUARD("__builtin_ia32_rdtscp",
							  "builtin") GUARD("__builtin_ia32_rdpmc",
									   "builtin")
			GUARD("__builtin_ia32_rdrand16_step", "builtin") GUARD(
				"__builtin_ia32_rdrand32_step",
				"builtin") GUARD("__builtin_ia32_rdrand64_step",
						 "builtin") GUARD("__builtin_ia32_rdseed16_step",
								  "builtin") GUARD("__builtin_ia32_"
										   "rdseed32_step",
										   "builtin")
				GUARD("__builtin_ia32_rdseed64_step", "builtin") GUARD(
					"__builtin_ia32_rdfsbase32",
					"builtin") GUARD("__builtin_ia32_rdfsbase64", "builtin")
					GUARD("__builtin_ia32_rdgsbase32", "builtin") GUARD(
						"__builtin_ia32_rdgsbase64",
						"builtin") GUARD("__builtin_ia32_wrfsbase32",
								 "builtin") GUARD("__builtin_ia32_"
										  "wrfsbase64",
										  "builtin")
						GUARD("__builtin_ia32_wrgsbase32", "builtin") GUARD(
							"__builtin_ia32_wrgsbase64", "builtin")
							GUARD("__builtin_ia32_readeflags_u64",
							      "builtin") GUARD("__builtin_ia32_"
									       "writeeflags_u64",
									       "builtin");

const char *screen_guard_options(void)
{
	return guard_options;
}

char *screen_build_options(const char *options)
{
	return xasprintf("%s %s", options ? options : "", guard_options);
}
