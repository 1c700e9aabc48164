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

/* Opens the state database (--state FILE or the default); logs on failure. */
struct store *cmd_open_store(const char *state_path);

#endif
