/*
 * kctl export SESSION... [--format json|c] [--out FILE] [--state FILE]
 * kctl export --merge FILE.json... [--format json|c] [--out FILE]
 *
 * Writes a tuned table (tuned.h): the best parameters per (kernel,
 * device, dtype, shape bucket) of the sessions named, or of the tables
 * merged, as JSON (schema kctl.tuned) or as a C header.  Every input is
 * read and checked before anything is written; one bad input fails the
 * whole command and writes nothing.
 */
#include "cmds.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "session.h"
#include "tuned.h"
#include "xalloc.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char export_usage[] =
	"usage: kctl export SESSION... [--format json|c] [--out FILE] [--state FILE]\n"
	"       kctl export --merge FILE.json... [--format json|c] [--out FILE]\n";

struct export_opts {
	int c_header; /* --format c */
	int merge;
	const char *out, *state;
};

/* The table of file path, checked, in *doc; KCTL_EXIT_* with the reason logged. */
static int read_table(const char *path, json_t **doc)
{
	char msg[2048], *text = NULL;
	json_error_t jerr;
	size_t len = 0;
	int rc;

	if ((rc = file_read(path, TUNED_MAX_BYTES, &text, &len, msg, sizeof(msg)))) {
		log_error("%s", msg);
		return KCTL_EXIT_FAIL;
	}
	*doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!*doc) {
		log_error("%s:%d:%d: not a JSON document: %s", path, jerr.line, jerr.column,
			  jerr.text);
		return KCTL_EXIT_FAIL;
	}
	if (tuned_check(*doc, path, msg, sizeof(msg))) {
		log_error("%s", msg);
		json_decref(*doc);
		*doc = NULL;
		return KCTL_EXIT_FAIL;
	}
	return 0;
}

/* The tables of the files named, merged into table. */
static int merge_files(int argc, char **argv, json_t *table)
{
	char msg[2048];

	for (int i = 0; i < argc; i++) {
		json_t *doc = NULL;
		int rc = read_table(argv[i], &doc);

		if (!rc && tuned_merge(table, doc, argv[i], msg, sizeof(msg))) {
			log_error("%s", msg);
			rc = KCTL_EXIT_FAIL;
		}
		json_decref(doc);
		if (rc)
			return rc;
	}
	return 0;
}

/* The tables of the sessions named (any unique prefix), merged into table. */
static int merge_sessions(int argc, char **argv, const char *state, json_t *table)
{
	struct store *st = cmd_open_store_read(state);
	char msg[2048];
	int rc = 0;

	if (!st)
		return KCTL_EXIT_INFRA;
	for (int i = 0; i < argc && !rc; i++) {
		char *id = cmd_session_id(st, argv[i]);
		json_t *doc = NULL;

		if (!id) {
			rc = store_check(st, msg, sizeof(msg)) ? KCTL_EXIT_INFRA : KCTL_EXIT_FAIL;
		} else if (tuned_from_session(st, id, &doc, msg, sizeof(msg)) ||
			   tuned_merge(table, doc, id, msg, sizeof(msg))) {
			rc = KCTL_EXIT_FAIL;
		}
		if (rc && id)
			log_error("%s", msg);
		json_decref(doc);
		free(id);
	}
	/* a table drawn from a failed read would mislead: say so instead */
	if (!rc && store_check(st, msg, sizeof(msg))) {
		log_error("%s", msg);
		rc = KCTL_EXIT_INFRA;
	}
	store_close(st);
	return rc;
}

/* table in the chosen format to --out or stdout. */
static int write_table(json_t *table, const struct export_opts *o)
{
	struct sbuf b = SBUF_INIT;
	char msg[2048];
	int rc = 0;

	if (o->c_header) {
		rc = tuned_render_c(table, &b, msg, sizeof(msg));
	} else {
		char *text = jx_dump(table);

		sbuf_adds(&b, text);
		free(text);
	}
	if (rc) {
		log_error("%s", msg);
		rc = KCTL_EXIT_FAIL;
	} else if (o->out &&
		   file_write_atomic(o->out, b.buf ? b.buf : "", b.len, msg, sizeof(msg))) {
		log_error("%s", msg);
		rc = KCTL_EXIT_FAIL;
	} else if (!o->out &&
		   (fwrite(b.buf ? b.buf : "", 1, b.len, stdout) != b.len || fflush(stdout))) {
		log_error("kctl export: writing the table to stdout failed");
		rc = KCTL_EXIT_FAIL;
	}
	sbuf_release(&b);
	return rc;
}

/* The options into o; optind left at the first operand.  0, or KCTL_EXIT_USAGE. */
static int parse_opts(int argc, char **argv, struct export_opts *o)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "out", required_argument, NULL, 'O' },
		{ "state", required_argument, NULL, 'S' },
		{ "merge", no_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'f' && (!strcmp(optarg, "json") || !strcmp(optarg, "c"))) {
			o->c_header = !strcmp(optarg, "c");
		} else if (c == 'O' && *optarg) {
			o->out = optarg;
		} else if (c == 'S') {
			o->state = optarg;
		} else if (c == 'm') {
			o->merge = 1;
		} else {
			if (c == 'f')
				fprintf(stderr, "kctl export: --format takes json or c, not '%s'\n",
					optarg);
			return KCTL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "kctl export: name at least one %s\n",
			o->merge ? "table to merge" : "session");
		return KCTL_EXIT_USAGE;
	}
	if (o->merge && o->state) {
		fputs("kctl export: --merge reads tables, not the state database: drop --state\n",
		      stderr);
		return KCTL_EXIT_USAGE;
	}
	return 0;
}

int cmd_export(int argc, char **argv)
{
	struct export_opts o = { 0 };
	json_t *table;
	int rc;

	if ((rc = parse_opts(argc, argv, &o))) {
		fputs(export_usage, stderr);
		return rc;
	}
	table = tuned_new();
	if (o.merge)
		rc = merge_files(argc - optind, argv + optind, table);
	else
		rc = merge_sessions(argc - optind, argv + optind, o.state, table);
	if (!rc)
		rc = write_table(table, &o);
	json_decref(table);
	return rc;
}
