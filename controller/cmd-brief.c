/*
 * kctl brief SESSION [VARIANT] [--code] [--state FILE]
 *   the profile brief of a variant (default: the session's winner), as the
 *   model proposer sees it in its prompt: figures, bottleneck with its
 *   evidence, IR figures; --code adds its blocks.
 */
#include "cmds.h"
#include "context.h"
#include "log.h"
#include "prompt.h"
#include "session.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_brief(int argc, char **argv)
{
	const char *state = NULL, *pos[2] = { NULL, NULL };
	int code = 0, npos = 0, rc = KCTL_EXIT_OK;
	struct session s;
	struct store *st;
	json_t *row, *v = NULL, *dev, *w = NULL;
	char msg[512];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--code"))
			code = 1;
		else if (!strcmp(argv[i], "--state") && i + 1 < argc)
			state = argv[++i];
		else if (argv[i][0] != '-' && npos < 2)
			pos[npos++] = argv[i];
		else
			npos = 3;
	}
	if (npos < 1 || npos > 2) {
		fputs("usage: kctl brief SESSION [VARIANT] [--code] [--state FILE]\n", stderr);
		return KCTL_EXIT_USAGE;
	}
	if (!(st = cmd_open_store(state)))
		return KCTL_EXIT_INFRA;
	memset(&s, 0, sizeof(s));
	row = store_session_get(st, pos[0]);
	if (!row) {
		log_error("no session '%s'", pos[0]);
		store_close(st);
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
		fputs(text, stdout);
		free(text);
		json_decref(dev);
	}
	json_decref(v);
	json_decref(w);
	json_decref(row);
	spec_release(&s.spec);
	store_close(st);
	return rc;
}
