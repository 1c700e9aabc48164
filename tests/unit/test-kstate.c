/*
 * test-kstate.c - unit tests for controller/kstate.c (the session folder's
 * kube.json: saved, loaded, refused when it is no JSON object, and the line
 * that says what a session waits for) and for what kround-queue.c reads of
 * a Kueue Workload (kround_workload_of, kround_workload_says).
 */
#include "err.h"
#include "fileio.h"
#include "kround.h"
#include "kstate.h"
#include "sbuf.h"
#include "xalloc.h"

#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test-kstate.XXXXXX";
static char msg[1024];

TEST(line_per_state)
{
	static const struct {
		const char *rec;  /* JSON */
		const char *want; /* NULL: nothing to say */
	} cases[] = {
		{ "{\"state\": \"queued\", \"message\": \"insufficient quota\", \"queue\": \"q\", "
		  "\"since\": 940}",
		  "queued by Kueue: insufficient quota (queue q, for 1 min 00 s)" },
		{ "{\"state\": \"evicted\", \"message\": \"Preempted: by a higher priority\", "
		  "\"since\": 1000}",
		  "evicted by Kueue: Preempted: by a higher priority (for 0 s)" },
		{ "{\"state\": \"no-kueue\", \"message\": \"no Kueue Workload found\", \"queue\": "
		  "\"lq\", \"since\": 995}",
		  "suspended; no Kueue Workload found (queue lq, for 5 s)" },
		{ "{\"state\": \"unknown\", \"message\": \"403 Forbidden\", \"since\": 1000}",
		  "suspended; Kueue's Workloads could not be read: 403 Forbidden (for 0 s)" },
		{ "{\"state\": \"queued\"}", "queued by Kueue: no message (for -)" },
		{ "{\"state\": \"\", \"message\": \"admitted\"}", NULL },
		{ "{\"state\": \"running\"}", NULL }, /* a state kctl never writes */
		{ "{}", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *rec = json_loads(cases[i].rec, 0, NULL);
		struct sbuf b = SBUF_INIT;
		int said = kstate_line(&b, rec, 1000);

		CHECK(rec != NULL);
		CHECK(said == (cases[i].want != NULL));
		if (cases[i].want)
			CHECK_STR(b.buf, cases[i].want);
		sbuf_release(&b);
		json_decref(rec);
	}
	CHECK(kstate_line(NULL, NULL, 0) == 0);
}

TEST(saved_and_loaded)
{
	json_t *rec = json_pack("{s:s, s:s, s:I}", "state", "queued", "namespace", "team-a",
				"since", (json_int_t)42),
	       *back;

	CHECK(kstate_load(tmpdir) == NULL); /* no file yet */
	CHECK(kstate_save(tmpdir, rec, msg, sizeof(msg)) == 0);
	back = kstate_load(tmpdir);
	CHECK(back && json_equal(back, rec));
	json_decref(back);
	json_decref(rec);
}

TEST(refused_unless_an_object)
{
	static const char *const bad[] = { "[1, 2]", "not json", "\"queued\"", "" };
	char *path = xasprintf("%s/%s", tmpdir, KSTATE_FILE);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(file_write_atomic(path, bad[i], strlen(bad[i]), msg, sizeof(msg)) == 0);
		CHECK(kstate_load(tmpdir) == NULL);
	}
	unlink(path);
	CHECK(symlink("/etc/hostname", path) == 0); /* a link is not the session's file */
	CHECK(kstate_load(tmpdir) == NULL);
	unlink(path);
	free(path);
}

TEST(workload_found_by_label_or_owner)
{
	json_t *items = json_loads(
		"[{\"metadata\": {\"name\": \"a\", \"labels\": {\"kueue.x-k8s.io/job-uid\": "
		"\"u1\"}}},"
		" {\"metadata\": {\"name\": \"b\", \"ownerReferences\": [{\"kind\": \"Job\", "
		"\"uid\": \"u2\"}]}},"
		" {\"metadata\": {\"name\": \"c\"}}]",
		0, NULL);

	CHECK(items != NULL);
	CHECK_STR(json_string_value(json_object_get(
			  json_object_get(kround_workload_of(items, "u1"), "metadata"), "name")),
		  "a");
	CHECK_STR(json_string_value(json_object_get(
			  json_object_get(kround_workload_of(items, "u2"), "metadata"), "name")),
		  "b");
	CHECK(kround_workload_of(items, "u3") == NULL);
	CHECK(kround_workload_of(NULL, "u1") == NULL);
	json_decref(items);
}

TEST(what_a_workload_says)
{
	static const struct {
		const char *conditions; /* JSON array */
		const char *state, *text;
	} cases[] = {
		{ "[{\"type\": \"QuotaReserved\", \"status\": \"False\", \"reason\": \"Pending\", "
		  "\"message\": \"couldn't assign flavors to pod set main: insufficient unused "
		  "quota "
		  "for nvidia.com/gpu in flavor f, 1 more needed\"}]",
		  "queued",
		  "couldn't assign flavors to pod set main: insufficient unused quota for "
		  "nvidia.com/gpu in flavor f, 1 more needed" },
		{ "[{\"type\": \"QuotaReserved\", \"status\": \"True\", \"message\": \"Quota "
		  "reserved in ClusterQueue cq\"}, {\"type\": \"Admitted\", \"status\": \"True\"}]",
		  "", "admitted" },
		{ "[{\"type\": \"QuotaReserved\", \"status\": \"True\", \"message\": \"Quota "
		  "reserved in ClusterQueue cq\"}]",
		  "queued", "Quota reserved in ClusterQueue cq; waiting for its admission checks" },
		{ "[{\"type\": \"Admitted\", \"status\": \"True\"}, {\"type\": \"Evicted\", "
		  "\"status\": \"True\", \"reason\": \"Preempted\", \"message\": \"Preempted to "
		  "accommodate a higher priority Workload\"}]",
		  "evicted", "Preempted: Preempted to accommodate a higher priority Workload" },
		{ "[{\"type\": \"QuotaReserved\", \"status\": \"False\", \"reason\": "
		  "\"Inadmissible\"}]",
		  "queued", "Inadmissible" },
		{ "[]", "queued", "Kueue has not considered the Workload yet" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *wl = json_pack("{s:{s:o}}", "status", "conditions",
				       json_loads(cases[i].conditions, 0, NULL));
		char state[16], text[700];

		kround_workload_says(wl, state, sizeof(state), text, sizeof(text));
		CHECK_STR(state, cases[i].state);
		CHECK_STR(text, cases[i].text);
		json_decref(wl);
	}
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(line_per_state);
	RUN(saved_and_loaded);
	RUN(refused_unless_an_object);
	RUN(workload_found_by_label_or_owner);
	RUN(what_a_workload_says);
	dir_remove_tree(tmpdir);
	return test_summary();
}
