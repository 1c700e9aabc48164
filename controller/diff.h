/*
 * diff.h - a line diff for `kctl show` (a variant against its parent) and the
 * report (the top variants against the template).
 */
#ifndef KCTL_DIFF_H
#define KCTL_DIFF_H

#include "sbuf.h"

/*
 * Appends to out a unified diff (3 lines of context) of text a (named
 * a_name) against text b.  The lines both texts begin and end with are
 * matched first; the rest by longest common subsequence when its table
 * takes at most 16 MiB, else shown removed and added whole (a larger diff,
 * never a wrong one).
 */
void diff_unified(const char *a_name, const char *a, const char *b_name, const char *b,
		  struct sbuf *out);

#endif
