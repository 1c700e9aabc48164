/*
 * kctl status [SESSION] [-o text|json] [--state FILE]
 */
#include "cmds.h"
#include "jsonx.h"
#include "log.h"
#include "session.h"
#include "winner.h"
#include "loop.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double jnum(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* "model: 12 exchanges (1 failed), 45100 tokens in, 12300 out, cost 0.42; answers: ..." */
static void print_model(json_t *m)
{
	const char *key;
	json_t *v;
	const char *sep = "";

	if (!json_is_object(m))
		return;
	printf("  model: %lld exchange%s",
	       (long long)json_integer_value(json_object_get(m, "calls")),
	       json_integer_value(json_object_get(m, "calls")) == 1 ? "" : "s");
	if (json_integer_value(json_object_get(m, "errors")))
		printf(" (%lld failed)",
		       (long long)json_integer_value(json_object_get(m, "errors")));
	if (json_integer_value(json_object_get(m, "input_tokens")) ||
	    json_integer_value(json_object_get(m, "output_tokens")))
		printf(", %lld tokens in, %lld out",
		       (long long)json_integer_value(json_object_get(m, "input_tokens")),
		       (long long)json_integer_value(json_object_get(m, "output_tokens")));
	if (jnum(m, "cost") > 0)
		printf(", cost %.4g", jnum(m, "cost"));
	printf(", %.1f s waiting", jnum(m, "ms") / 1e3);
	if (json_object_size(json_object_get(m, "outcomes")))
		printf("; directions:");
	json_object_foreach (json_object_get(m, "outcomes"), key, v) {
		printf("%s%lld %s", *sep ? sep : " ", (long long)json_integer_value(v), key);
		sep = ", ";
	}
	putchar('\n');
}

/* state_opt: the --state given, repeated in the command that goes on (or NULL). */
static void print_one(json_t *st, const char *state_opt)
{
	json_t *best = json_object_get(st, "best");

	printf("%-40s %-10s rounds %-3lld evaluations %-5lld",
	       json_string_value(json_object_get(st, "session")),
	       json_is_object(json_object_get(st, "interrupted"))
		       ? "interrupted"
		       : json_string_value(json_object_get(st, "state")),
	       (long long)json_integer_value(json_object_get(st, "rounds")),
	       (long long)json_integer_value(json_object_get(st, "evaluations")));
	if (json_is_object(best)) {
		char noise[64];

		winner_noise(best, noise, sizeof(noise));
		printf(" best %s %.2fx vs reference, %.1f GFLOP/s (%s), %s, %s",
		       json_string_value(json_object_get(best, "variant")),
		       jnum(best, "speedup_vs_reference"), jnum(best, "gflops"),
		       json_string_value(json_object_get(best, "bottleneck"))
			       ? json_string_value(json_object_get(best, "bottleneck"))
			       : "-",
		       noise,
		       json_is_true(json_object_get(best, "settled")) ? "confirmed"
		       : json_is_false(json_object_get(best, "settled"))
			       ? "not settled within noise"
			       : "not confirmed");
	}
	putchar('\n');
	if (json_is_object(json_object_get(st, "interrupted")))
		printf("  interrupted (kctl pid %lld gone); go on with: kctl resume %s%s%s\n",
		       (long long)json_integer_value(
			       json_object_get(json_object_get(st, "interrupted"), "kctl_pid")),
		       json_string_value(json_object_get(st, "session")),
		       state_opt ? " --state " : "", state_opt ? state_opt : "");
	if (json_is_object(json_object_get(st, "elsewhere"))) {
		json_t *e = json_object_get(st, "elsewhere");
		const char *where = json_string_value(json_object_get(e, "where"));

		printf("  running on %s (kctl pid %lld %s %s)\n",
		       json_string_value(json_object_get(e, "host")),
		       (long long)json_integer_value(json_object_get(e, "kctl_pid")),
		       where && !strcmp(where, "another machine") ? "on" : "in",
		       where ? where : "?");
	}
	if (json_string_value(json_object_get(st, "reason")))
		printf("  %s\n", json_string_value(json_object_get(st, "reason")));
	print_model(json_object_get(st, "model"));
}

/*
 * A finished session whose report.md still says otherwise (kctl was killed
 * between the two) gets it rewritten; a failure to do so is only a warning.
 */
static void refresh_report(struct store *st, const char *id)
{
	char msg[2048];
	int rc = session_report_refresh(st, id, msg, sizeof(msg));

	if (rc < 0)
		log_warn("session %s: its report.md is stale and cannot be rewritten: %s", id, msg);
	else if (rc > 0)
		fprintf(stderr, "session %s: report.md was stale; rewritten\n", id);
}

int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "state", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	const char *state = NULL;
	char msg[2048];
	int c, as_json = 0, rc = KCTL_EXIT_OK;
	struct store *st;
	json_t *out;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c == 'o' && !cmd_output_format(optarg, &as_json)) {
			continue;
		} else if (c == 'S') {
			state = optarg;
		} else {
			fputs("usage: kctl status [SESSION] [-o text|json] [--state FILE]\n",
			      stderr);
			return KCTL_EXIT_USAGE;
		}
	}
	if (optind < argc - 1) {
		fputs("usage: kctl status [SESSION] [-o text|json] [--state FILE]\n", stderr);
		return KCTL_EXIT_USAGE;
	}
	if (!(st = cmd_open_store(state)))
		return KCTL_EXIT_INFRA;
	if (optind == argc - 1) {
		char *id = cmd_session_id(st, argv[optind]);

		if (id)
			refresh_report(st, id);
		out = id ? session_status_json(st, id) : NULL;
		if (!out && store_check(st, msg, sizeof(msg))) {
			log_error("%s", msg);
			free(id);
			store_close(st);
			return KCTL_EXIT_INFRA;
		}
		if (id && !out)
			log_error("no session '%s'", id);
		free(id);
		if (!out) {
			store_close(st);
			return KCTL_EXIT_FAIL;
		}
	} else {
		json_t *list = store_session_list(st), *row;
		size_t i;

		out = json_array();
		json_array_foreach (list, i, row)
			refresh_report(st, json_string_value(json_object_get(row, "id")));
		json_array_foreach (list, i, row)
			json_array_append_new(
				out, session_status_json(
					     st, json_string_value(json_object_get(row, "id"))));
		json_decref(list);
	}
	/* a read that failed is never shown as "no sessions" or a partial list */
	if (store_check(st, msg, sizeof(msg))) {
		log_error("%s", msg);
		json_decref(out);
		store_close(st);
		return KCTL_EXIT_INFRA;
	}
	if (as_json) {
		char *text = jx_dump(out);

		fputs(text, stdout);
		free(text);
	} else if (json_is_array(out)) {
		size_t i;
		json_t *one;

		if (!json_array_size(out))
			printf("no sessions yet: kctl start SPEC\n");
		json_array_foreach (out, i, one)
			print_one(one, state);
	} else {
		print_one(out, state);
	}
	json_decref(out);
	store_close(st);
	return rc;
}
