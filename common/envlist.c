/*
 * envlist.c - a child's environment from an allowlist (see envlist.h).
 */
#include "envlist.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

/* 1 when extra holds a variable of the same name as entry. */
static int overridden(const char *entry, const char *const *extra)
{
	size_t len = strcspn(entry, "=");

	for (size_t i = 0; extra && extra[i]; i++)
		if (strcspn(extra[i], "=") == len && !strncmp(extra[i], entry, len))
			return 1;
	return 0;
}

char **envlist_build(char *const *env, int (*allowed)(const char *entry), const char *const *extra)
{
	size_t cap = 1, n = 0;
	char **out;

	for (size_t i = 0; env && env[i]; i++)
		cap++;
	for (size_t i = 0; extra && extra[i]; i++)
		cap++;
	out = xcalloc(cap, sizeof(*out));
	for (size_t i = 0; env && env[i]; i++)
		if (allowed(env[i]) && !overridden(env[i], extra))
			out[n++] = xstrdup(env[i]);
	for (size_t i = 0; extra && extra[i]; i++)
		out[n++] = xstrdup(extra[i]);
	out[n] = NULL;
	return out;
}

void envlist_free(char **envp)
{
	for (size_t i = 0; envp && envp[i]; i++)
		free(envp[i]);
	free(envp);
}
