/*
 * state.c - what every step of a session reads of its recorded state: the
 * round folders and results, the programs of a round, the incumbent, the
 * end of a step's transaction, cancellation, interruption, the crash hook
 * and the status document.  It sits below the steps (round.c, pack.c,
 * rank.c, confirm.c, report.c, kround.c, loop.c), which all call it and
 * which it calls none of.
 */
#include "session.h"
#include "fileio.h"
#include "xalloc.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t interrupted_by;

int round_interrupted(void)
{
	return interrupted_by;
}

void session_note_signal(int sig)
{
	interrupted_by = sig;
}

char *session_round_dir(const struct session *s, int round)
{
	return xasprintf("%s/rounds/r%03d", s->dir, round);
}

char *session_variant_id(int round, size_t k)
{
	if (round == 0)
		return xstrdup("r00-start");
	return xasprintf("r%02d-v%03zu", round, k + 1);
}

json_t *session_round_result(struct session *s, int round, const char *id)
{
	char *dir = session_round_dir(s, round), *path = xasprintf("%s/results/%s.json", dir, id);
	char *text = NULL, msg[128];
	json_t *doc = NULL;

	if (id && !file_read(path, 256u << 20, &text, NULL, msg, sizeof(msg)))
		doc = json_loads(text, 0, NULL);
	free(text);
	free(path);
	free(dir);
	return doc;
}

json_t *round_programs(struct session *s, int round)
{
	json_t *row = store_round_get(s->st, s->id, round), *out, *id;
	json_t *ids = json_object_get(json_object_get(row, "confirm"), "programs");
	size_t i;

	if (!json_is_array(ids)) {
		json_decref(row);
		return store_variants(s->st, s->id, round);
	}
	out = json_array();
	json_array_foreach (ids, i, id) {
		json_t *v = store_variant_get(s->st, s->id, json_string_value(id));

		if (v)
			json_array_append_new(out, v);
	}
	json_decref(row);
	return out;
}

int round_step_end(struct session *s, int round, enum round_state state, const char *point, int rc,
		   char *msg, size_t n)
{
	if (!rc)
		rc = store_round_set_state(s->st, s->id, round, state, msg, n);
	if (rc)
		store_rollback(s->st);
	else
		rc = store_commit(s->st, msg, n);
	if (!rc)
		crash_point(point, round);
	return rc;
}

void crash_point(const char *point, int round)
{
	const char *want = getenv("KCTL_TEST_CRASH_AT");
	char here[64];

	if (!want || !*want)
		return;
	snprintf(here, sizeof(here), "%s:%d", point, round);
	if (!strcmp(want, point) || !strcmp(want, here))
		kill(getpid(), SIGKILL);
}

int session_cancelled(struct session *s)
{
	json_t *row = store_session_get(s->st, s->id);
	const char *st = json_string_value(json_object_get(row, "state"));
	int c = st && !strcmp(st, "cancelled");

	json_decref(row);
	return c;
}

json_t *session_status_json(struct store *st, const char *id)
{
	json_t *row = store_session_get(st, id), *w, *out;

	if (!row)
		return NULL;
	w = session_winner(st, id);
	out = json_pack("{s:s, s:O?, s:O?, s:O?, s:O?, s:i, s:i}", "session", id, "state",
			json_object_get(row, "state"), "reason", json_object_get(row, "reason"),
			"spec", json_object_get(row, "spec_path"), "output_dir",
			json_object_get(row, "output_dir"), "rounds", store_round_last(st, id),
			"evaluations", store_result_count(st, id));
	json_object_set_new(out, "best", w ? w : json_null());
	{
		json_t *t = store_llm_totals(st, id);

		/* only sessions that asked a model have a model part */
		if (t && json_integer_value(json_object_get(t, "calls")))
			json_object_set_new(out, "model", t);
		else
			json_decref(t);
	}
	json_decref(row);
	return out;
}

static json_t *lineage_row(json_t *lins, int number)
{
	size_t i;
	json_t *l;

	json_array_foreach (lins, i, l)
		if (json_integer_value(json_object_get(l, "lineage")) == number)
			return l;
	return NULL;
}

json_t *session_incumbent(struct session *s)
{
	json_t *lins = store_lineages(s->st, s->id), *inc = NULL;
	json_t *row = lineage_row(lins, 0);
	const char *id = json_string_value(json_object_get(row, "best"));

	if (id)
		inc = store_variant_get(s->st, s->id, id);
	json_decref(lins);
	return inc;
}
