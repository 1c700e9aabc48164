/*
 * kctl brief SESSION [VARIANT] [--code] [-o text|json] [--state FILE]
 *   the profile brief of a variant (default: the session's winner), as the
 *   model proposer sees it in its prompt: figures, bottleneck with its
 *   evidence, IR figures; --code adds its blocks.
 */
#include "cmds.h"
#include "context.h"
#include "jsonx.h"
#include "log.h"
#include "prompt.h"
#include "session.h"
#include "winner.h"
#include "xalloc.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char brief_usage[] =
	"usage: kctl brief SESSION [VARIANT] [--code] [-o text|json] [--state FILE]\n";

/* -o json: the brief with what it was made from. */
static void print_json(const char *id, json_t *v, json_t *dev, const char *text)
{
	json_t *out = json_pack("{s:s, s:s?, s:O, s:O?, s:s}", "session", id, "variant",
				json_string_value(json_object_get(v, "id")), "context", v, "device",
				dev, "brief", text);
	char *dump = out ? jx_dump(out) : NULL;

	if (dump)
		fputs(dump, stdout);
	free(dump);
	json_decref(out);
}

int cmd_brief(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "code", no_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL, *pos[2] = { NULL, NULL };
	int code = 0, as_json = 0, rc = KCTL_EXIT_OK, c;
	struct session s;
	struct store *st;
	json_t *row, *v = NULL, *dev, *w = NULL;
	char msg[512], *id;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c == 'c') {
			code = 1;
		} else if (c == 'o' && !cmd_output_format(optarg, &as_json)) {
			continue;
		} else if (c == 'S') {
			state = optarg;
		} else {
			fputs(brief_usage, stderr);
			return KCTL_EXIT_USAGE;
		}
	}
	if (argc - optind < 1 || argc - optind > 2) {
		fputs(brief_usage, stderr);
		return KCTL_EXIT_USAGE;
	}
	pos[1] = argc - optind == 2 ? argv[optind + 1] : NULL;
	if (!(st = cmd_open_store_read(state)))
		return KCTL_EXIT_INFRA;
	if (!(id = cmd_session_id(st, argv[optind]))) {
		store_close(st);
		return KCTL_EXIT_FAIL;
	}
	pos[0] = id;
	memset(&s, 0, sizeof(s));
	row = store_session_get(st, pos[0]);
	if (!row) {
		log_error("no session '%s'", pos[0]);
		store_close(st);
		free(id);
		return KCTL_EXIT_FAIL;
	}
	s.st = st;
	s.id = (char *)pos[0];
	/* the spec says where the blocks are; a spec that moved leaves the defaults */
	if (spec_load(&s.spec, json_string_value(json_object_get(row, "spec_path")), msg,
		      sizeof(msg))) {
		spec_release(&s.spec);
		s.spec.marker_start = xstrdup("EVOLVE-BLOCK-START");
		s.spec.marker_end = xstrdup("EVOLVE-BLOCK-END");
	}
	if (!pos[1]) {
		w = session_winner(st, pos[0]);
		pos[1] = json_string_value(json_object_get(w, "variant"));
	}
	if (!pos[1]) {
		log_error("session '%s' has no winner yet: name a variant (kctl show %s)", pos[0],
			  pos[0]);
		rc = KCTL_EXIT_FAIL;
	} else if (!(v = context_variant(&s, pos[1]))) {
		log_error("no variant '%s' in session '%s'", pos[1], pos[0]);
		rc = KCTL_EXIT_FAIL;
	} else {
		char *text;

		dev = context_device(&s);
		text = prompt_brief(v, dev, code);
		if (as_json)
			print_json(id, v, dev, text);
		else
			fputs(text, stdout);
		free(text);
		json_decref(dev);
	}
	json_decref(v);
	json_decref(w);
	json_decref(row);
	spec_release(&s.spec);
	store_close(st);
	free(id);
	return rc;
}
