/*
 * diff.h - a line diff for `kctl show` (variant against its parent).
 */
#ifndef KCTL_DIFF_H
#define KCTL_DIFF_H

#include "sbuf.h"

/*
 * Appends to out a unified diff (3 lines of context) of text a (named
 * a_name) against text b.  Longest-common-subsequence over lines: meant
 * for kernel sources (it refuses inputs over 20000 lines, saying so).
 */
void diff_unified(const char *a_name, const char *a, const char *b_name, const char *b,
		  struct sbuf *out);

#endif
