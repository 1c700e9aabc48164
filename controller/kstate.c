/*
 * kstate.c - the session folder's kube.json (the contract is in kstate.h).
 * Uses the file helpers and progress.h's durations; nothing above the
 * session layer.
 */
#include "kstate.h"
#include "fileio.h"
#include "jsonx.h"
#include "progress.h"
#include "sbuf.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kstate_save(const char *dir, const json_t *rec, char *msg, size_t n)
{
	char *path = xasprintf("%s/%s", dir, KSTATE_FILE), *text = jx_dump(rec);
	int rc = file_write_atomic(path, text, strlen(text), msg, n);

	free(text);
	free(path);
	return rc;
}

json_t *kstate_load(const char *dir)
{
	char *path = xasprintf("%s/%s", dir, KSTATE_FILE), *text = NULL, msg[256];
	json_t *rec = NULL;
	size_t len = 0;

	if (!file_read_untrusted(path, KSTATE_MAX, &text, &len, msg, sizeof(msg)))
		rec = json_loadb(text, len, 0, NULL);
	if (rec && !json_is_object(rec)) {
		json_decref(rec);
		rec = NULL;
	}
	free(text);
	free(path);
	return rec;
}

/* How each state reads: its words, then the message. */
static const struct {
	const char *state, *words;
} kstate_lines[] = {
	{ "queued", "queued by Kueue: " },
	{ "evicted", "evicted by Kueue: " },
	{ "no-kueue", "suspended; " },
	{ "unknown", "suspended; Kueue's Workloads could not be read: " },
};

int kstate_line(struct sbuf *b, const json_t *rec, double now)
{
	const char *state = json_string_value(json_object_get(rec, "state"));
	const char *text = json_string_value(json_object_get(rec, "message"));
	const char *queue = json_string_value(json_object_get(rec, "queue"));
	json_t *since = json_object_get(rec, "since");

	for (size_t i = 0; state && i < sizeof(kstate_lines) / sizeof(kstate_lines[0]); i++) {
		if (strcmp(state, kstate_lines[i].state))
			continue;
		sbuf_adds(b, kstate_lines[i].words);
		sbuf_adds(b, text && *text ? text : "no message");
		sbuf_adds(b, " (");
		if (queue)
			sbuf_addf(b, "queue %s, ", queue);
		sbuf_adds(b, "for ");
		progress_duration(b, json_is_number(since) ? now - json_number_value(since) : -1);
		sbuf_adds(b, ")");
		return 1;
	}
	return 0;
}
