/*
 * cmdutil.c - what kctl's subcommands share on their command lines: the
 * output format of -o and session ids given by a unique prefix.
 */
#include "cmds.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <stdio.h>
#include <string.h>

int cmd_output_format(const char *arg, int *as_json)
{
	if (!strcmp(arg, "text"))
		*as_json = 0;
	else if (!strcmp(arg, "json"))
		*as_json = 1;
	else {
		log_error("-o takes text or json, not '%s'", arg);
		return -1;
	}
	return 0;
}

/* Candidates listed in an ambiguity error, at most; the rest are counted. */
#define LIST_MAX 10

char *cmd_session_id(struct store *st, const char *arg)
{
	json_t *list = NULL, *row, *exact;
	struct sbuf names = SBUF_INIT;
	const char *only = NULL;
	size_t i, hits = 0, len = strlen(arg);
	char *id = NULL;

	if ((exact = store_session_get(st, arg))) {
		json_decref(exact);
		return xstrdup(arg);
	}
	list = len ? store_session_list(st) : NULL;
	json_array_foreach (list, i, row) {
		const char *one = json_string_value(json_object_get(row, "id"));

		if (!one || strncmp(one, arg, len))
			continue;
		if (hits++ < LIST_MAX)
			sbuf_addf(&names, "\n  %s", one);
		only = one;
	}
	if (hits == 1) {
		id = xstrdup(only);
	} else if (hits) {
		if (hits > LIST_MAX)
			sbuf_addf(&names, "\n  ... and %zu more", hits - LIST_MAX);
		log_error("session id '%s' is ambiguous: %zu sessions start with it:%s", arg, hits,
			  names.buf);
	} else {
		log_error("no session '%s'", arg);
	}
	sbuf_release(&names);
	json_decref(list);
	return id;
}
