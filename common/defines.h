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
 * A name set again replaces the value before it, an option's too when the
 * #define is surely compiled (the compiler keeps the source's value, with a
 * warning); under an #if that is not decided (below) an option keeps its
 * value.  Templates guard their tunables with #ifndef, so there the option
 * wins because the guarded default is skipped.  Comments are ignored.
 * #ifdef, #ifndef, #elifdef, #elifndef and their #else are followed (a
 * name is defined by a build option or an earlier #define of any kind,
 * until its #undef), so "#define WX 1" before a guarded "#define WX 8"
 * keeps 1, as the compiler does; an #if or #elif on an expression is not
 * evaluated and both its ways count.  Macros that are function-like or not
 * integer expressions, and options whose value does not evaluate, are
 * skipped: a name they would have set stays unknown (an option's value
 * stays).  source and options may be NULL (none).  Always succeeds.
 */
void defines_collect(const char *source, const char *options, struct expr_vars *vars);

#endif
