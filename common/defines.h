/*
 * defines.h - the integer names a program defines for itself.
 *
 * Launch geometry and local memory sizes are expressions over the shape's
 * values and the names the program gives itself: its object-like integer
 * #defines and its -D build options.  evalpod resolves them when it runs a
 * program, kctl when it checks a spec and exports a program's geometry;
 * both read them here, so a name means the same thing to both.
 */
#ifndef KCTL_DEFINES_H
#define KCTL_DEFINES_H

#include "expr.h"

/*
 * Adds to vars (which holds the shape's values) the -DNAME=VALUE and
 * -DNAME (meaning 1) build options of options, then every object-like
 * "#define NAME body" of source whose body evaluates as an integer
 * expression, in source order, each over the names set before it.
 *
 * A build option wins over a #define of the same name (templates guard
 * their tunables with #ifndef), and a name set again replaces the value
 * before it.  Comments are ignored.  #ifdef, #ifndef, #elifdef, #elifndef
 * and their #else are followed (a name is defined by a build option or an
 * earlier #define of any kind, until its #undef), so "#define WX 1" before
 * a guarded "#define WX 8" keeps 1, as the compiler does; an #if or #elif
 * on an expression is not evaluated and both its ways count.  Macros that
 * are function-like or not integer
 * expressions, and options whose value does not evaluate, are skipped:
 * a name they would have set stays unknown.  source and options may be
 * NULL (none).  Always succeeds.
 */
void defines_collect(const char *source, const char *options, struct expr_vars *vars);

#endif
