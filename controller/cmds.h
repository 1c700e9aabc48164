/*
 * cmds.h - kctl's subcommands (one file each, like git's builtin/) and the
 * helpers they share.
 */
#ifndef KCTL_CMDS_H
#define KCTL_CMDS_H

#include "store.h"

int cmd_start(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_confirm(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_brief(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_cache(int argc, char **argv);

/* Opens the state database (--state FILE or the default); logs on failure. */
struct store *cmd_open_store(const char *state_path);
/* The same for a command that only reads: store_open_read (store.h). */
struct store *cmd_open_store_read(const char *state_path);

/* -o FORMAT: sets *as_json for "json", clears it for "text"; -1 for others, said. */
int cmd_output_format(const char *arg, int *as_json);

/*
 * The full id of the session that arg names: the id itself, or the one id
 * it is a prefix of (like git's short hashes).  Returns a new string (the
 * caller frees it), or NULL after logging that no session or more than one
 * (listing them) matches.
 */
char *cmd_session_id(struct store *st, const char *arg);

/* kctl status --cluster (cmd-cluster.c): kctl's Jobs in the cluster, by session */
int cmd_status_cluster(int argc, char **argv);

#endif
