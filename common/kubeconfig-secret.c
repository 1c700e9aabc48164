/*
 * kubeconfig-secret.c - the text that may hold a credential: wiping it,
 * trimming and checking it, reading token files and decoding base64 PEM.
 * The lowest file of the kubeconfig module: kubeconfig.c and
 * kubeconfig-exec.c both use it, and it uses neither.  Declared, with the
 * contracts, in kubeconfig-internal.h.
 *
 * May use: err, fileio, xalloc; nothing else of the module.
 */
#include "kubeconfig-internal.h"
#include "err.h"
#include "fileio.h"
#include "xalloc.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KC_MAX_SMALL (1u << 20) /* a token or namespace file */

void kubeconfig__wipe(char **s)
{
	if (*s) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

void kubeconfig__wipe_list(char ***list)
{
	for (char **p = *list; p && *p; p++)
		kubeconfig__wipe(p);
	free(*list);
	*list = NULL;
}

char *kubeconfig__trim(char *s)
{
	size_t len = strlen(s), lead = 0;

	while (len && isspace((unsigned char)s[len - 1]))
		s[--len] = '\0';
	while (isspace((unsigned char)s[lead]))
		lead++;
	memmove(s, s + lead, len - lead + 1);
	memset(s + len - lead + 1, 0, lead); /* no stray copy of a token's tail */
	return s;
}

/* Reads a small file, trimmed, into *out (malloc'd, wiped by the caller). */
int kubeconfig__read_small(const char *path, const char *what, char **out, char *msg, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	int rc = file_read(path, KC_MAX_SMALL, &text, &len, msg, n);

	*out = NULL;
	if (rc)
		return rc;
	kubeconfig__trim(text);
	if (!*text) {
		free(text);
		return kerr_set(msg, n, KERR_IO, "%s '%s' is empty", what, path);
	}
	*out = text;
	return 0;
}

int kubeconfig__printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || *s == 0x7f)
			return 0;
	return 1;
}

/* Reads token file path into *tok, wiping what *tok held; *tok is kept on failure. */
int kubeconfig__read_token(const char *path, char **tok, char *msg, size_t n)
{
	char *fresh = NULL;
	int rc = kubeconfig__read_small(path, "token file", &fresh, msg, n);

	if (rc)
		return rc;
	if (!kubeconfig__printable(fresh)) {
		kubeconfig__wipe(&fresh);
		return kerr_set(msg, n, KERR_INVALID, "token file '%s' holds control characters",
				path);
	}
	kubeconfig__wipe(tok);
	*tok = fresh;
	return 0;
}

static int kc_b64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/*
 * Decodes standard base64 (white space skipped, padding optional) into a
 * malloc'd NUL-terminated *out.  Returns 0, or -1 for bad input or a result
 * that holds a NUL byte (the fields decoded here are PEM text).
 */
int kubeconfig__b64_decode(const char *s, char **out)
{
	size_t len = strlen(s), o = 0, q = 0, pad = 0;
	unsigned char *buf = xmalloc(len / 4 * 3 + 4);
	uint32_t acc = 0;
	int bits = 0;

	*out = NULL;
	for (const char *p = s; *p; p++) {
		int v = kc_b64_value((unsigned char)*p);

		if (isspace((unsigned char)*p))
			continue;
		if (*p == '=' && ++pad <= 2)
			continue;
		if (v < 0 || pad)
			goto bad;
		q++;
		acc = (acc << 6 | (uint32_t)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (unsigned char)(acc >> bits);
		}
	}
	if (q % 4 == 1 || (pad && (q + pad) % 4) || memchr(buf, 0, o))
		goto bad;
	buf[o] = '\0';
	*out = (char *)buf;
	return 0;
bad:
	explicit_bzero(buf, len / 4 * 3 + 4);
	free(buf);
	return -1;
}
