/*
 * kctl report SESSION [-o html|md|json] [--out FILE] [--state FILE]
 *
 * Prints a session's report, drawn from the state database as it is now:
 * the page kctl writes as report.html after every round (html, the
 * default), report.md (md), or the data both are drawn from (json, schema
 * "kctl.report").  --out writes FILE atomically instead of stdout.  Reading
 * takes no lock, so it works beside the kctl that drives the session.
 */
#include "cmds.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "report.h"
#include "session.h"
#include "xalloc.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char report_usage[] =
	"usage: kctl report SESSION [-o html|md|json] [--out FILE] [--state FILE]\n";

enum report_format { FORMAT_HTML, FORMAT_MD, FORMAT_JSON };

static int parse_format(const char *arg, enum report_format *f)
{
	static const struct {
		const char *name;
		enum report_format f;
	} formats[] = { { "html", FORMAT_HTML }, { "md", FORMAT_MD }, { "json", FORMAT_JSON } };

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(arg, formats[i].name)) {
			*f = formats[i].f;
			return 0;
		}
	return -1;
}

/*
 * Whether a page written to out (NULL: stdout) sits in the session folder
 * dir, where the links to traces and IR files are relative; elsewhere the
 * page links them by their absolute paths.
 */
static int beside_session(const char *out, const char *dir)
{
	char *copy, *slash, a[PATH_MAX], b[PATH_MAX];
	int same;

	if (!out || !dir)
		return 0;
	copy = xstrdup(out);
	slash = strrchr(copy, '/');
	if (slash)
		*slash = '\0';
	same = realpath(slash ? (*copy ? copy : "/") : ".", a) && realpath(dir, b) && !strcmp(a, b);
	free(copy);
	return same;
}

/* The report of session id in format f, into b; 0 or KCTL_EXIT_* with the reason logged. */
static int build(struct store *st, const char *id, enum report_format f, const char *out,
		 struct sbuf *b)
{
	json_t *row = store_session_get(st, id), *m;
	const char *dir = json_string_value(json_object_get(row, "output_dir"));
	char *text;

	if (f == FORMAT_MD) {
		struct session s;

		memset(&s, 0, sizeof(s));
		s.id = (char *)id;
		s.dir = (char *)(dir ? dir : ".");
		s.st = st;
		s.spec.path =
			(char *)(json_string_value(json_object_get(row, "spec_path"))
					 ? json_string_value(json_object_get(row, "spec_path"))
					 : "?");
		report_md(&s, b);
		json_decref(row);
		return 0;
	}
	if (!(m = report_model(st, id, dir))) {
		json_decref(row);
		log_error("session '%s': not in the state database", id);
		return KCTL_EXIT_FAIL;
	}
	if (f == FORMAT_JSON) {
		text = jx_dump(m);
		sbuf_adds(b, text);
		free(text);
	} else {
		if (dir && !beside_session(out, dir)) {
			char *base = xasprintf("%s/", dir);

			json_object_set_new(m, "link_base", json_string(base));
			free(base);
		}
		report_html(m, b);
	}
	json_decref(m);
	json_decref(row);
	return 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "out", required_argument, NULL, 'O' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL, *out = NULL;
	enum report_format f = FORMAT_HTML;
	struct sbuf b = SBUF_INIT;
	struct store *st;
	char msg[2048], *id;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c == 'o' && !parse_format(optarg, &f)) {
			continue;
		} else if (c == 'O' && *optarg) {
			out = optarg;
		} else if (c == 'S') {
			state = optarg;
		} else {
			if (c == 'o')
				fprintf(stderr,
					"kctl report: -o takes html, md or json, not '%s'\n",
					optarg);
			fputs(report_usage, stderr);
			return KCTL_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fputs(report_usage, stderr);
		return KCTL_EXIT_USAGE;
	}
	if (!(st = cmd_open_store_read(state)))
		return KCTL_EXIT_INFRA;
	if (!(id = cmd_session_id(st, argv[optind]))) {
		rc = store_check(st, msg, sizeof(msg)) ? KCTL_EXIT_INFRA : KCTL_EXIT_FAIL;
		if (rc == KCTL_EXIT_INFRA)
			log_error("%s", msg);
		store_close(st);
		return rc;
	}
	rc = build(st, id, f, out, &b);
	/* a report drawn from a failed read would mislead: say so instead */
	if (!rc && store_check(st, msg, sizeof(msg))) {
		log_error("%s", msg);
		rc = KCTL_EXIT_INFRA;
	}
	if (!rc && out && file_write_atomic(out, b.buf ? b.buf : "", b.len, msg, sizeof(msg))) {
		log_error("%s", msg);
		rc = KCTL_EXIT_FAIL;
	} else if (!rc && !out &&
		   (fwrite(b.buf ? b.buf : "", 1, b.len, stdout) != b.len || fflush(stdout))) {
		log_error("kctl report: writing the report to stdout failed");
		rc = KCTL_EXIT_FAIL;
	}
	sbuf_release(&b);
	store_close(st);
	free(id);
	return rc;
}
