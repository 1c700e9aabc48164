/*
 * exchange.c - one exchange with the proposer model: the answer recorded
 * for the same prompt when there is one (a resume), else asked of the API
 * or the command, or read from a replayed session's folder; then written
 * to rounds/rNNN/llm/ and committed to the store's llm_calls on its own.
 * And the budgets the exchanges spend.
 */
#include "session.h"
#include "model-internal.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "prompt.h"
#include "xalloc.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void model_sha256_hex(const char *a, const char *b, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(c, a, strlen(a) + 1) || !EVP_DigestUpdate(c, b, strlen(b)) ||
	    !EVP_DigestFinal_ex(c, md, &len))
		abort();
	EVP_MD_CTX_free(c);
	for (unsigned i = 0; i < len && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* --- budgets ------------------------------------------------------------ */

int model_budget_spent(struct session *s, char *why, size_t n)
{
	const struct spec_model *m = &s->spec.m;
	json_t *t;
	double tokens, cost;
	int spent = 0;

	if (s->spec.proposer == PROPOSER_TUNE || (!m->max_tokens && !(m->max_cost > 0)))
		return 0;
	t = store_llm_totals(s->st, s->id);
	tokens = json_number_value(json_object_get(t, "input_tokens")) +
		 json_number_value(json_object_get(t, "output_tokens"));
	cost = json_number_value(json_object_get(t, "cost"));
	if (m->max_tokens && tokens >= (double)m->max_tokens) {
		snprintf(why, n, "the model's token budget is spent (%.0f of %lld tokens)", tokens,
			 (long long)m->max_tokens);
		spent = 1;
	} else if (m->max_cost > 0 && cost >= m->max_cost) {
		snprintf(why, n, "the model's cost budget is spent (%.4g of %.4g)", cost,
			 m->max_cost);
		spent = 1;
	}
	json_decref(t);
	return spent;
}

/* --- one exchange --------------------------------------------------------------- */

static char *llm_dir(struct session *s, int round)
{
	char *rd = session_round_dir(s, round), *d = xasprintf("%s/llm", rd);

	free(rd);
	return d;
}

/* The record's files: NNN-prompt.txt, NNN-answer.txt, NNN.json. */
static int write_files(struct session *s, int round, json_t *rec, int meta_only, char *msg,
		       size_t n)
{
	char *dir = llm_dir(s, round), *path, *text;
	int seq = (int)json_integer_value(json_object_get(rec, "seq"));
	const char *prompt = json_string_value(json_object_get(rec, "prompt"));
	const char *answer = json_string_value(json_object_get(rec, "answer"));
	json_t *meta = json_deep_copy(rec);
	int rc = dir_make(dir, msg, n);

	json_object_del(meta, "prompt");
	json_object_del(meta, "answer");
	if (!rc && !meta_only) {
		path = xasprintf("%s/%03d-prompt.txt", dir, seq);
		rc = file_write_atomic(path, prompt, strlen(prompt), msg, n);
		free(path);
	}
	if (!rc && answer && !meta_only) {
		path = xasprintf("%s/%03d-answer.txt", dir, seq);
		rc = file_write_atomic(path, answer, strlen(answer), msg, n);
		free(path);
	}
	if (!rc) {
		path = xasprintf("%s/%03d.json", dir, seq);
		text = jx_dump(meta);
		rc = file_write_atomic(path, text, strlen(text), msg, n);
		free(text);
		free(path);
	}
	json_decref(meta);
	free(dir);
	return rc;
}

/* Writes rec to the folder and commits it to the store on its own; with
 * meta_only, only its meta (NNN.json and the row's meta column). */
static int record(struct session *s, int round, json_t *rec, int meta_only, char *msg, size_t n)
{
	int rc = write_files(s, round, rec, meta_only, msg, n);

	if (!rc)
		rc = store_begin(s->st, msg, n);
	if (!rc) {
		rc = meta_only ? store_llm_call_set_meta(
					 s->st, s->id, round,
					 (int)json_integer_value(json_object_get(rec, "seq")),
					 json_object_get(rec, "meta"), msg, n)
			       : store_llm_call_put(s->st, s->id, rec, msg, n);
		if (rc)
			store_rollback(s->st);
		else
			rc = store_commit(s->st, msg, n);
	}
	return rc;
}

/* What the command reads besides its prompt: the context document. */
static int ask_command(struct model *m, struct session *s, int round, int seq, const char *prompt,
		       json_t *context, json_t *rec, char **answer, char *msg, size_t n)
{
	char *dir = llm_dir(s, round), *path = xasprintf("%s/%03d-context.json", dir, seq);
	char *text = jx_dump(context), *input;
	struct llmcmd_out o = { 0 };
	int rc = dir_make(dir, msg, n);

	if (!rc)
		rc = file_write_atomic(path, text, strlen(text), msg, n);
	input = xasprintf("%s\n\n%s", prompt_system(), prompt);
	if (!rc)
		rc = llmcmd_run(&m->cmd, input, path, &o, msg, n);
	jx_set_real(rec, "ms", o.ms);
	json_object_set_new(rec, "attempts", json_integer(1));
	if (!rc && o.err && *o.err)
		json_object_set_new(json_object_get(rec, "meta"), "stderr", json_string(o.err));
	if (!rc)
		*answer = xstrdup(o.out ? o.out : "");
	llmcmd_out_release(&o);
	free(input);
	free(text);
	free(path);
	free(dir);
	return rc;
}

static int ask_llm(struct model *m, const char *prompt, json_t *rec, char **answer, char *msg,
		   size_t n)
{
	struct llm_reply r = { 0 };
	int rc = llm_complete(&m->llm, prompt_system(), prompt, &r, msg, n);
	const struct spec_model *sm = &m->sp->m;

	jx_set_real(rec, "ms", r.ms);
	json_object_set_new(rec, "attempts", json_integer(r.attempts));
	if (r.input_tokens >= 0)
		json_object_set_new(rec, "input_tokens", json_integer(r.input_tokens));
	if (r.output_tokens >= 0)
		json_object_set_new(rec, "output_tokens", json_integer(r.output_tokens));
	if (!isnan(sm->price_in) && r.input_tokens >= 0 && r.output_tokens >= 0)
		jx_set_real(rec, "cost",
			    (r.input_tokens * sm->price_in + r.output_tokens * sm->price_out) /
				    1e6);
	if (r.finish)
		json_object_set_new(json_object_get(rec, "meta"), "finish", json_string(r.finish));
	if (r.model)
		json_object_set_new(json_object_get(rec, "meta"), "model", json_string(r.model));
	if (!rc)
		*answer = xstrdup(r.text ? r.text : "");
	llm_reply_release(&r);
	return rc;
}

/* The recorded exchange seq of round r of the replayed session: its answer and meta. */
static int ask_replay(struct model *m, int round, int seq, json_t *rec, char **answer, char *msg,
		      size_t n)
{
	char *path = xasprintf("%s/rounds/r%03d/llm/%03d-answer.txt", m->sp->m.replay, round, seq);
	int rc = file_read(path, REPLAY_ANSWER_MAX, answer, NULL, msg, n);

	if (rc)
		kerr_set(msg, n, KERR_NOTFOUND,
			 "replay: %s has no answer for exchange %d of round %d (%s)",
			 m->sp->m.replay, seq, round, path);
	json_object_set_new(rec, "attempts", json_integer(0));
	free(path);
	return rc;
}

/* The meta of exchange seq of round r of the replayed session (new), or NULL. */
json_t *model_replay_meta(struct model *m, int round, int seq)
{
	char *path = xasprintf("%s/rounds/r%03d/llm/%03d.json", m->sp->m.replay, round, seq);
	json_t *doc = json_load_file(path, 0, NULL),
	       *meta = json_incref(json_object_get(doc, "meta"));

	if (meta)
		json_object_set(meta, "purpose", json_object_get(doc, "purpose"));
	json_decref(doc);
	free(path);
	return meta;
}

/*
 * Exchange number seq of ctx's round: the answer recorded for this very
 * prompt when there is one, else a new answer (asked, or replayed),
 * recorded before it is returned.  *answer is malloc'd.
 */
int model_exchange(struct model *m, const struct propose_ctx *ctx, int seq, const char *purpose,
		   const char *prompt, json_t *context, json_t *meta, char **answer, char *msg,
		   size_t n)
{
	struct session *s = ctx->session;
	json_t *old = store_llm_call_get(s->st, s->id, ctx->round, seq), *rec;
	char sha[65], why[512];
	double t0 = now_ms();
	int rc;

	*answer = NULL;
	model_sha256_hex(prompt_system(), prompt, sha);
	if (old && !strcmp(json_string_value(json_object_get(old, "status")), "ok") &&
	    !strcmp(json_string_value(json_object_get(old, "prompt_sha")), sha) &&
	    json_is_string(json_object_get(old, "answer"))) {
		*answer = xstrdup(json_string_value(json_object_get(old, "answer")));
		log_info("round %d: exchange %d was answered before kctl stopped: using the "
			 "recorded answer",
			 ctx->round, seq);
		json_decref(old);
		return 0;
	}
	json_decref(old);
	if (m->how != ASK_REPLAY && model_budget_spent(s, why, sizeof(why)))
		return kerr_set(msg, n, KERR_LIMIT, "%s", why);
	rec = json_pack("{s:i, s:i, s:s, s:s, s:s, s:s, s:O}", "round", ctx->round, "seq", seq,
			"purpose", purpose, "asked", m->label, "prompt_sha", sha, "prompt", prompt,
			"meta", meta);
	switch (m->how) {
	case ASK_LLM: rc = ask_llm(m, prompt, rec, answer, msg, n); break;
	case ASK_COMMAND:
		rc = ask_command(m, s, ctx->round, seq, prompt, context, rec, answer, msg, n);
		break;
	default: rc = ask_replay(m, ctx->round, seq, rec, answer, msg, n); break;
	}
	if (!json_object_get(rec, "ms"))
		jx_set_real(rec, "ms", now_ms() - t0);
	json_object_set_new(rec, "status", json_string(rc ? "error" : "ok"));
	if (rc)
		json_object_set_new(rec, "error", json_string(msg));
	else
		json_object_set_new(rec, "answer", json_string(*answer));
	{
		char m2[512];
		int rc2 = record(s, ctx->round, rec, 0, m2, sizeof(m2));

		if (rc2 && !rc) {
			snprintf(msg, n, "%s", m2);
			rc = rc2;
		}
	}
	json_decref(rec);
	if (rc) {
		free(*answer);
		*answer = NULL;
	}
	return rc;
}

/* Adds what the answer of exchange seq came to, to its record. */
void model_record_outcome(struct session *s, int round, int seq, json_t *outcomes,
			  const char *errors)
{
	json_t *rec = store_llm_call_get(s->st, s->id, round, seq), *meta;
	char msg[512];

	if (!rec)
		return;
	meta = json_object_get(rec, "meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(rec, "meta", meta);
	}
	json_object_set(meta, "outcomes", outcomes);
	if (errors && *errors)
		json_object_set_new(meta, "errors", json_string(errors));
	if (record(s, round, rec, 1, msg, sizeof(msg)))
		log_warn("round %d: recording what exchange %d came to: %s", round, seq, msg);
	json_decref(rec);
}
