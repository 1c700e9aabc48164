/*
 * answer-internal.h - what the parser (answer.c) and the applying of a
 * direction (answer-apply.c) share: two helpers for the answer's text.  Not
 * for use outside them; answer.h is the public interface.
 */
#ifndef KCTL_ANSWER_INTERNAL_H
#define KCTL_ANSWER_INTERNAL_H

#include "answer.h"

#include <stddef.h>
#include <stdint.h>

/* Whether c is a space or a tab. */
int answer_blank(char c);

/*
 * Reads a decimal integer, optionally negative, at s (len bytes); *used is
 * its length.  Returns 0 when there is none, it overflows, or a letter or
 * digit sticks to it ("4u", "0x10").
 */
int answer_parse_int(const char *s, size_t len, size_t *used, int64_t *v);

#endif
