/*
 * envlist.h - the environment a child process gets: the entries of env that
 * a predicate lets through, then extra (which replaces any entry of env of
 * the same name).  Used for evalpod's workers (evalpod/sandbox.c) and for
 * evalpod itself under kctl (controller/evalrun.c): each passes its own
 * allowlist, so a secret reaches no child that does not need it.
 */
#ifndef KCTL_ENVLIST_H
#define KCTL_ENVLIST_H

/*
 * A malloc'd NULL-terminated array: every "NAME=value" of env (may be
 * NULL) for which allowed(entry) is nonzero and no entry of extra has the
 * same NAME, then every entry of extra (may be NULL).  Free with
 * envlist_free.
 */
char **envlist_build(char *const *env, int (*allowed)(const char *entry), const char *const *extra);

void envlist_free(char **envp);

#endif
