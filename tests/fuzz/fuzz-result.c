/*
 * fuzz-result.c - evalpod result documents as kctl reads them (round.c's
 * collect_one: JSON text up to its first NUL, then store_result_add),
 * recorded into a state database and read back, and the figures the
 * controller takes from them (winner_figures, rank_margin, pairs_add).
 * Each input's writes are rolled back, so every input meets the same
 * database: one session "s" with a variant "v1" in round 1.
 */
#include "fuzz.h"
#include "pairs.h"
#include "session.h"
#include "round.h"
#include "winner.h"
#include "store.h"
#include "xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct store *fuzz_store;

static void fuzz_store_close(void)
{
	store_close(fuzz_store);
	fuzz_store = NULL;
}

static void fuzz_store_open(void)
{
	char *path = NULL, msg[1024];
	json_t *v = json_pack("{s:s, s:s, s:i, s:s}", "id", "v1", "hash", "h1", "round", 1,
			      "source", "__kernel void k(void) {}");
	int rc;

	path = xasprintf("%s/state.db", fuzz_dir());
	rc = store_open(path, &fuzz_store, msg, sizeof(msg));
	if (!rc)
		rc = store_begin(fuzz_store, msg, sizeof(msg));
	if (!rc)
		rc = store_session_create(fuzz_store, "s", "spec.yaml", "0", ".", msg, sizeof(msg));
	if (!rc)
		rc = store_round_create(fuzz_store, "s", 1, "search", msg, sizeof(msg));
	if (!rc)
		rc = store_variant_add(fuzz_store, "s", v, msg, sizeof(msg));
	if (!rc)
		rc = store_commit(fuzz_store, msg, sizeof(msg));
	if (rc) {
		fprintf(stderr, "fuzz-result: %s\n", msg);
		abort();
	}
	atexit(fuzz_store_close);
	json_decref(v);
	free(path);
}

static void fuzz_result_figures(json_t *doc)
{
	struct pairs p = { NULL, 0, 0 };

	json_decref(winner_figures(doc));
	rank_margin(doc, doc);
	pairs_add(&p, doc, doc);
	if (p.n)
		pairs_verdict(&p);
	pairs_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *nul = memchr(text, '\0', size);
	json_t *doc, *back;
	char msg[1024];

	if (!fuzz_store)
		fuzz_store_open();
	doc = json_loadb(text, nul ? (size_t)(nul - text) : size, 0, NULL);
	if (!doc)
		return 0;
	fuzz_result_figures(doc);
	if (!store_begin(fuzz_store, msg, sizeof(msg))) {
		if (!store_result_add(fuzz_store, "s", "v1", doc, msg, sizeof(msg))) {
			back = store_result_get(fuzz_store, "s", "v1");
			fuzz_result_figures(back);
			json_decref(back);
		}
		store_rollback(fuzz_store);
	}
	json_decref(doc);
	return 0;
}
