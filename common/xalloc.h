/*
 * xalloc.h - allocation that aborts on exhaustion.
 *
 * Running out of host memory is not a condition this program can report
 * usefully, so these wrappers print and abort instead of returning NULL.
 * Sizes are checked for multiplication overflow.
 */
#ifndef KCTL_XALLOC_H
#define KCTL_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
/* xreallocarray: realloc to count*size bytes, aborting on overflow. */
void *xreallocarray(void *p, size_t count, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Returns a malloc'd string formatted like printf; caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
