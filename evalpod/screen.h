/*
 * screen.h - refusing dangerous constructs in candidate sources and build options.
 *
 * A candidate kernel is untrusted text.  Before evalpod compiles it, the
 * screen reads it the way clang's preprocessor does (translation phases 1-3:
 * trigraphs, line splices, comments, literals, pp-tokens, directives) and
 * refuses what could reach the host: inline assembly, file inclusion and
 * file probes (#include, __has_include, #pragma GCC dependency), pragmas that
 * rewrite the macro table, load-time attributes, builtins outside a short
 * allowlist, and redefinitions of the names evalpod itself defines.  Line
 * numbers in messages are those of the original text.
 *
 * A lexical screen cannot see identifiers that token pasting builds
 * (a##b); screen_guard_options() closes that for inline assembly and the
 * dangerous builtins by defining those names as macros, so a pasted name is
 * replaced when it is rescanned and the build fails.
 *
 * Files: screen-lex.c reads the text (phases 1-3), screen.c holds the rules
 * and the option allowlist; they share screen-internal.h.
 */
#ifndef EVALPOD_SCREEN_H
#define EVALPOD_SCREEN_H

#include <stddef.h>

/*
 * Screens the OpenCL C source src (len bytes, need not be NUL-terminated).
 * Returns 0, or KERR_INVALID with msg (size n) naming the line and the
 * construct, e.g. "line 3: '#include' is not allowed: a kernel is one
 * self-contained source".  msg may be NULL.
 */
int screen_source(const char *src, size_t len, char *msg, size_t n);

/*
 * Screens build options against an allowlist: -D NAME[=VALUE] (also -DNAME),
 * -cl-std=CL1.0|CL1.1|CL1.2|CL2.0|CL3.0, the -cl-* optimisation and
 * math flags, -w and -Werror.  Tokens are separated by white space; quotes
 * and backslashes are refused.  NAME and VALUE get the same checks as a
 * #define in the source.  opts may be NULL (no options).  Returns 0 or
 * KERR_INVALID with msg, e.g. "build option '-I/etc' is not allowed
 * (allowed: -D NAME[=VALUE], -cl-..., -w, -Werror)".
 */
int screen_options(const char *opts, char *msg, size_t n);

/*
 * Options to append to every candidate build, after the candidate's own:
 * -D definitions that turn asm keywords and dangerous builtins produced by
 * token pasting into a compile error.  A static string; do not free.
 */
const char *screen_guard_options(void);

/*
 * A candidate's build options as every build of candidate code uses them
 * (the check, front-end and timing workers): its own, then the guards.
 * PoCL keys its cache on the options, so the front end's builds are
 * adopted only when they are the same text.  Malloc'd.
 */
char *screen_build_options(const char *options);

#endif
