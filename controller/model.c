/*
 * model.c - the model proposer: a language model (llm.c) or an external
 * command (llmcmd.c) rewrites the EVOLVE-BLOCK code, live or replayed
 * from a recorded session.
 *
 * One round asks one request per parent (the lineages' bests, best first)
 * for up to proposer.directions directions each.  A request is one or
 * more exchanges: the prompt (prompt.c, from context.c's document), the
 * answer, parsed strictly (answer.c); what cannot be used (a malformed
 * answer, an edit that does not apply, a change outside the blocks, a
 * duplicate) is counted and asked again with the precise errors, at most
 * proposer.answer_retries times.
 *
 * Every exchange is written to rounds/rNNN/llm/ (NNN-prompt.txt,
 * NNN-answer.txt, NNN.json) and to the store's llm_calls, each committed
 * on its own as soon as the answer is in: the round's proposals are
 * recorded later, so a kctl killed in between finds the answer on resume
 * (same round, same number, same prompt) and does not ask again.
 * Replaying reads the answers of another session's folder in the same
 * order, with no network, and records them as this session's own.
 */
#include "session.h"
#include "model-internal.h"
#include "answer.h"
#include "context.h"
#include "llm.h"
#include "prompt.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "xalloc.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Other lineages' bests shown to the model with its parent. */
#define INSPIRATIONS_MAX 3

/* What a round has accepted so far, across requests. */
struct take {
	struct proposal *p;
	size_t n;
	char (*hash)[65];
};

/* --- answers into proposals ----------------------------------------------------- */

static const struct cand *cand_by_id(const struct propose_ctx *ctx, const char *id)
{
	for (size_t i = 0; id && i < ctx->nhistory; i++)
		if (!strcmp(ctx->history[i].id, id))
			return &ctx->history[i];
	return NULL;
}

/* The id of a known variant (or a proposal of this round) with this hash. */
static const char *known_hash(const struct propose_ctx *ctx, const struct take *t, const char *hash)
{
	for (size_t i = 0; i < ctx->nhistory; i++)
		if (ctx->history[i].hash && !strcmp(ctx->history[i].hash, hash))
			return ctx->history[i].id;
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->hash[i], hash))
			return "another direction of this round";
	return NULL;
}

static void count(json_t *outcomes, const char *what)
{
	json_object_set_new(outcomes, what,
			    json_integer(json_integer_value(json_object_get(outcomes, what)) + 1));
}

static json_t *tunables_json(const struct direction *d)
{
	json_t *a = json_array();

	for (size_t i = 0; i < d->ntunables; i++) {
		json_t *vals = json_array();

		for (size_t j = 0; j < d->tunables[i].nvalues; j++)
			json_array_append_new(vals, json_integer(d->tunables[i].values[j]));
		json_array_append_new(
			a, json_pack("{s:s, s:o}", "name", d->tunables[i].name, "values", vals));
	}
	return a;
}

/* The first of d's TUNABLE names that is one of the spec's tunables, or NULL. */
static const char *spec_tunable_of(const struct spec *sp, const struct direction *d)
{
	for (size_t i = 0; i < d->ntunables; i++)
		for (size_t k = 0; k < sp->ntunables; k++)
			if (!strcmp(d->tunables[i].name, sp->tunables[k].name))
				return d->tunables[i].name;
	return NULL;
}

/*
 * Turns an answer into proposals appended to t: parent is the request's
 * parent, offered the ids a direction may name as its own.  Counts every
 * direction's outcome in outcomes and says what went wrong in errors.
 * Returns the number accepted.
 */
static size_t digest(struct model *m, const struct propose_ctx *ctx, const char *answer,
		     const char *parent, json_t *offered, size_t want, struct take *t,
		     json_t *outcomes, struct sbuf *errors)
{
	const struct spec *sp = m->sp;
	struct answer a = { 0 };
	char why[1024];
	size_t got = 0;

	if (answer_parse(answer, want, &a, why, sizeof(why))) {
		count(outcomes, "malformed");
		sbuf_addf(errors, "the answer could not be parsed: %s\n", why);
		answer_release(&a);
		return 0;
	}
	for (size_t i = 0; i < a.n; i++) {
		const struct direction *d = &a.d[i];
		const char *from = parent, *dup;
		json_t *pv;
		char *src, hash[65];
		const char *opts, *clash;
		int ok_parent = !d->parent;

		for (size_t k = 0; d->parent && k < json_array_size(offered); k++)
			ok_parent |=
				!strcmp(json_string_value(json_array_get(offered, k)), d->parent);
		if (!ok_parent) {
			count(outcomes, "not_applied");
			sbuf_addf(errors,
				  "direction %zu (line %zu): PARENT %s is not one of the variants "
				  "offered\n",
				  i + 1, d->line, d->parent);
			continue;
		}
		if ((clash = spec_tunable_of(sp, d))) {
			count(outcomes, "not_applied");
			sbuf_addf(errors,
				  "direction %zu (line %zu): TUNABLE %s is one of the spec's "
				  "tunables, which the tuner sweeps already%s; declare only names "
				  "the spec does not have\n",
				  i + 1, d->line, clash,
				  sp->render == RENDER_OPTIONS
					  ? " as -D options (they override the #define)"
					  : "");
			continue;
		}
		if (d->parent)
			from = d->parent;
		pv = from ? store_variant_get(ctx->session->st, ctx->session->id, from) : NULL;
		src = answer_apply(
			d, pv ? json_string_value(json_object_get(pv, "source")) : sp->template_src,
			sp->marker_start, sp->marker_end, why, sizeof(why));
		if (!src) {
			count(outcomes, "not_applied");
			sbuf_addf(errors, "direction %zu (line %zu): %s\n", i + 1, d->line, why);
			json_decref(pv);
			continue;
		}
		if (blocks_verify(sp->template_src, ctx->blocks, src, sp->marker_start,
				  sp->marker_end, why, sizeof(why))) {
			count(outcomes, "outside_blocks");
			sbuf_addf(errors,
				  "direction %zu (line %zu): it changes code outside the "
				  "blocks: %s\n",
				  i + 1, d->line, why);
			free(src);
			json_decref(pv);
			continue;
		}
		opts = pv ? json_string_value(json_object_get(pv, "options")) : NULL;
		if (!opts)
			opts = sp->build_options ? sp->build_options : "";
		variant_hash(src, opts, hash);
		if ((dup = known_hash(ctx, t, hash))) {
			count(outcomes, "duplicate");
			sbuf_addf(
				errors,
				"direction %zu (line %zu): the result is identical to %s; propose "
				"something that has not been tried\n",
				i + 1, d->line, dup);
			free(src);
			json_decref(pv);
			continue;
		}
		count(outcomes, "accepted");
		t->p = xreallocarray(t->p, t->n + 1, sizeof(*t->p));
		t->hash = xreallocarray(t->hash, t->n + 1, sizeof(*t->hash));
		memcpy(t->hash[t->n], hash, sizeof(hash));
		t->p[t->n++] = (struct proposal){
			.source = src,
			.options = xstrdup(opts),
			.parent = from ? xstrdup(from) : NULL,
			.rationale = xasprintf("model: %s", d->rationale),
			.origin = "model",
			.tunables = d->ntunables ? tunables_json(d) : NULL,
		};
		got++;
		json_decref(pv);
	}
	answer_release(&a);
	return got;
}

/* The prompt that asks again: the first prompt, the answer, what was wrong. */
static char *retry_prompt(const char *prompt, const char *answer, const char *errors, size_t want)
{
	char *r = prompt_retry(errors);
	char *p = xasprintf("%s\n\n=== YOUR PREVIOUS ANSWER\n%s\n=== END OF YOUR PREVIOUS "
			    "ANSWER\n\n%s\nGive %zu direction%s now.\n",
			    prompt, answer, r, want, want == 1 ? "" : "s");

	free(r);
	return p;
}

/* --- requests --------------------------------------------------------------------- */

/*
 * One request: the parent and up to want directions, asked again while
 * answers cannot be used.  Returns 0 or an error (a provider that failed,
 * the budget, a recording that failed).
 */
static int request(struct model *m, const struct propose_ctx *ctx, const struct cand *parent,
		   size_t want, struct take *t, char *msg, size_t n)
{
	const char *insp[INSPIRATIONS_MAX];
	size_t ninsp = 0;
	json_t *offered = json_array(), *doc, *trimmed = NULL;
	struct prompt_opts po = { .max_bytes = (size_t)m->sp->m.max_prompt_bytes };
	char *prompt0, *prompt;
	int rc = 0;

	for (size_t i = 0; i < ctx->nparents && ninsp < INSPIRATIONS_MAX; i++)
		if (ctx->parents[i] != parent)
			insp[ninsp++] = ctx->parents[i]->id;
	if (parent)
		json_array_append_new(offered, json_string(parent->id));
	for (size_t i = 0; i < ninsp; i++)
		json_array_append_new(offered, json_string(insp[i]));
	doc = context_build(ctx, parent ? parent->id : NULL, insp, ninsp, want);
	prompt0 = prompt_build(doc, &po, &trimmed, msg, n);
	if (!prompt0) {
		json_decref(doc);
		json_decref(offered);
		return KERR_LIMIT;
	}
	if (t->n) {
		/* another request of this round came first: not the same ideas again */
		struct sbuf b = SBUF_INIT;

		sbuf_adds(&b, prompt0);
		sbuf_adds(&b, "\n\n## Directions already taken this round\n\nOther requests of "
			      "this round took these; propose different ones:\n");
		for (size_t i = 0; i < t->n; i++)
			sbuf_addf(&b, "- %s (from %s)\n", t->p[i].rationale,
				  t->p[i].parent ? t->p[i].parent : "the template");
		free(prompt0);
		prompt0 = sbuf_detach(&b, NULL);
	}
	prompt = xstrdup(prompt0);
	for (int attempt = 0; attempt <= m->sp->m.answer_retries && want; attempt++) {
		json_t *meta = json_pack("{s:s?, s:I, s:O, s:i}", "parent",
					 parent ? parent->id : NULL, "directions", (json_int_t)want,
					 "offered", offered, "attempt", attempt);
		json_t *outcomes = json_object();
		struct sbuf errors = SBUF_INIT;
		char *answer = NULL;
		int seq = ++m->seq;
		size_t got;

		if (json_array_size(trimmed))
			json_object_set(meta, "trimmed", trimmed);
		rc = model_exchange(m, ctx, seq, attempt ? "retry" : "propose", prompt, doc, meta,
				    &answer, msg, n);
		json_decref(meta);
		if (rc) {
			json_decref(outcomes);
			break;
		}
		got = digest(m, ctx, answer, parent ? parent->id : NULL, offered, want, t, outcomes,
			     &errors);
		model_record_outcome(ctx->session, ctx->round, seq, outcomes, errors.buf);
		log_info("round %d: %s answered exchange %d (%s, %zu direction%s asked): %zu "
			 "accepted%s (rounds/r%03d/llm/%03d.json has %s)",
			 ctx->round, m->label, seq, parent ? parent->id : "the template", want,
			 want == 1 ? "" : "s", got,
			 !errors.len ? ""
			 : got < want && attempt < m->sp->m.answer_retries
				 ? "; asking again"
				 : "; the rest could not be used",
			 ctx->round, seq, errors.len ? "the errors" : "the record");
		want -= got < want ? got : want;
		if (errors.len && want && attempt < m->sp->m.answer_retries) {
			char *next = retry_prompt(prompt0, answer, errors.buf, want);

			free(prompt);
			prompt = next;
		} else {
			want = 0;
		}
		sbuf_release(&errors);
		json_decref(outcomes);
		free(answer);
	}
	free(prompt);
	free(prompt0);
	json_decref(trimmed);
	json_decref(doc);
	json_decref(offered);
	return rc;
}

/* Replays the recorded requests of ctx's round, in their order. */
static int replay_round(struct model *m, const struct propose_ctx *ctx, struct take *t, char *msg,
			size_t n)
{
	int rc = 0;

	for (;;) {
		int seq = m->seq + 1;
		json_t *meta = model_replay_meta(m, ctx->round, seq), *outcomes;
		const char *pid = json_string_value(json_object_get(meta, "parent"));
		const struct cand *parent = cand_by_id(ctx, pid);
		size_t want = (size_t)json_integer_value(json_object_get(meta, "directions"));
		struct sbuf errors = SBUF_INIT;
		char *answer = NULL;
		json_t *clean;

		if (!meta)
			break;
		if (pid && !parent) {
			json_decref(meta);
			return kerr_set(
				msg, n, KERR_INVALID,
				"replay: exchange %d of round %d answered for %s, which this "
				"session does not have (the replayed session went another way)",
				seq, ctx->round, pid);
		}
		m->seq = seq;
		clean = json_pack("{s:s?, s:I, s:O}", "parent", pid, "directions", (json_int_t)want,
				  "offered", json_object_get(meta, "offered"));
		rc = model_exchange(m, ctx, seq,
				    json_string_value(json_object_get(meta, "purpose"))
					    ? json_string_value(json_object_get(meta, "purpose"))
					    : "propose",
				    "(replayed)", NULL, clean, &answer, msg, n);
		json_decref(clean);
		if (rc) {
			json_decref(meta);
			break;
		}
		outcomes = json_object();
		digest(m, ctx, answer, pid, json_object_get(meta, "offered"), want, t, outcomes,
		       &errors);
		model_record_outcome(ctx->session, ctx->round, seq, outcomes, errors.buf);
		sbuf_release(&errors);
		json_decref(outcomes);
		json_decref(meta);
		free(answer);
	}
	return rc;
}

static int model_propose(struct proposer *p, const struct propose_ctx *ctx, struct proposal **out,
			 size_t *n, char *msg, size_t mlen)
{
	struct model *m = p->state;
	struct take t = { 0 };
	size_t per = (size_t)m->sp->m.directions, nreq;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (m->round != ctx->round) {
		m->round = ctx->round;
		m->seq = 0;
	}
	if (m->how == ASK_REPLAY) {
		rc = replay_round(m, ctx, &t, msg, mlen);
	} else {
		nreq = (ctx->want + per - 1) / per;
		for (size_t r = 0; r < nreq && t.n < ctx->want && !rc; r++) {
			const struct cand *parent =
				ctx->nparents ? ctx->parents[r % ctx->nparents] : NULL;
			size_t want = ctx->want - t.n < per ? ctx->want - t.n : per;

			rc = request(m, ctx, parent, want, &t, msg, mlen);
		}
		/* a spent budget ends the asking, not the round */
		if (rc == KERR_LIMIT && strstr(msg, "budget is spent")) {
			log_info("round %d: %s", ctx->round, msg);
			rc = 0;
		}
	}
	free(t.hash);
	if (rc) {
		proposals_free(t.p, t.n);
		return rc;
	}
	*out = t.p;
	*n = t.n;
	return 0;
}

/* --- reflection ---------------------------------------------------------------- */

/* The ids of every variant of the session (a new array). */
static json_t *session_ids(struct session *s)
{
	json_t *vars = store_variants_brief(s->st, s->id, -1), *ids = json_array(), *v;
	size_t i;

	json_array_foreach (vars, i, v)
		json_array_append(ids, json_object_get(v, "id"));
	json_decref(vars);
	return ids;
}

static int model_reflect(struct proposer *p, struct session *s, int round, char *msg, size_t n)
{
	struct model *m = p->state;
	json_t *calls, *c, *doc, *known, *got, *l, *outcomes, *meta;
	struct propose_ctx ctx;
	char *prompt, *answer = NULL, *learnings = NULL, *path, m2[128];
	size_t i, dropped = 0;
	int seq = 0, rc;

	if (!m->sp->m.reflect)
		return 0;
	calls = store_llm_calls(s->st, s->id, round);
	json_array_foreach (calls, i, c) {
		if (!strcmp(json_string_value(json_object_get(c, "purpose")), "reflect")) {
			if (json_object_get(json_object_get(c, "meta"), "outcomes")) {
				json_decref(calls);
				return 0; /* reflected and merged already */
			}
			seq = (int)json_integer_value(json_object_get(c, "seq"));
			break;
		}
		if (json_integer_value(json_object_get(c, "seq")) > seq)
			seq = (int)json_integer_value(json_object_get(c, "seq"));
	}
	if (i == json_array_size(calls))
		seq++;
	json_decref(calls);
	path = xasprintf("%s/learnings.md", s->dir);
	if (file_read(path, 1u << 20, &learnings, NULL, m2, sizeof(m2)))
		learnings = NULL;
	free(path);
	doc = context_reflect(s, round, learnings);
	free(learnings);
	prompt = prompt_reflect(doc, (size_t)m->sp->m.max_prompt_bytes);
	memset(&ctx, 0, sizeof(ctx));
	ctx.session = s;
	ctx.round = round;
	meta = json_object();
	rc = model_exchange(m, &ctx, seq, "reflect", prompt, doc, meta, &answer, msg, n);
	json_decref(meta);
	free(prompt);
	json_decref(doc);
	if (rc == KERR_LIMIT && strstr(msg, "budget is spent"))
		return 0;
	if (rc)
		return rc;
	known = session_ids(s);
	got = prompt_parse_reflection(answer, known, &dropped);
	json_decref(known);
	free(answer);
	rc = store_begin(s->st, msg, n);
	json_array_foreach (got, i, l) {
		struct sbuf text = SBUF_INIT;
		json_t *id;
		size_t k;
		char key[65];

		sbuf_adds(&text, json_string_value(json_object_get(l, "text")));
		sbuf_adds(&text, " [");
		json_array_foreach (json_object_get(l, "cites"), k, id)
			sbuf_addf(&text, "%s%s", k ? ", " : "", json_string_value(id));
		sbuf_adds(&text, "]");
		model_sha256_hex("reflection", text.buf, key);
		if (!rc)
			rc = store_learning_add(s->st, s->id, 'M', key, NULL, text.buf, round, msg,
						n) < 0
				     ? -1
				     : 0;
		sbuf_release(&text);
	}
	if (rc < 0)
		store_rollback(s->st);
	else if (!rc)
		rc = store_commit(s->st, msg, n);
	outcomes = json_pack("{s:I, s:I}", "reflected", (json_int_t)json_array_size(got),
			     "reflection_dropped", (json_int_t)dropped);
	if (!rc) {
		model_record_outcome(s, round, seq, outcomes, NULL);
		log_info("round %d: the model's reflection gave %zu learning%s (%zu dropped: they "
			 "cite no variant of the session)",
			 round, json_array_size(got), json_array_size(got) == 1 ? "" : "s",
			 dropped);
	}
	json_decref(outcomes);
	json_decref(got);
	return rc < 0 ? KERR_IO : rc;
}

/* --- opening ----------------------------------------------------------------------- */

static void model_release(struct proposer *p)
{
	struct model *m = p->state;

	if (!m)
		return;
	if (m->key) {
		/* the key leaves no copy behind in freed memory */
		OPENSSL_cleanse(m->key, strlen(m->key));
		free(m->key);
	}
	free(m->label);
	free(m);
	p->state = NULL;
}

int model_open(struct proposer *p, const struct spec *s, char *msg, size_t n)
{
	const struct spec_model *sm = &s->m;
	struct model *m = xcalloc(1, sizeof(*m));

	memset(p, 0, sizeof(*p));
	m->sp = s;
	if (sm->replay) {
		char *probe = xasprintf("%s/rounds", sm->replay);
		int ok = access(probe, F_OK) == 0;

		free(probe);
		if (!ok) {
			free(m);
			return kerr_set(msg, n, KERR_NOTFOUND,
					"proposer.replay: '%s' is not a session folder (it has no "
					"rounds/)",
					sm->replay);
		}
		m->how = ASK_REPLAY;
		m->label = xasprintf("replay %s", sm->replay);
	} else if (s->proposer == PROPOSER_COMMAND && !sm->argv) {
		free(m);
		return kerr_set(msg, n, KERR_INVALID, "proposer.command.run: no program to run");
	} else if (s->proposer == PROPOSER_LLM && !sm->model) {
		free(m);
		return kerr_set(msg, n, KERR_INVALID, "proposer.llm.model: no model named");
	} else if (s->proposer == PROPOSER_COMMAND) {
		struct sbuf b = SBUF_INIT;

		for (size_t i = 0; sm->argv[i]; i++)
			sbuf_addf(&b, "%s%s", i ? " " : "", sm->argv[i]);
		m->how = ASK_COMMAND;
		m->label = xasprintf("proposer command '%s'", b.buf);
		sbuf_release(&b);
		m->cmd.argv = (const char *const *)sm->argv;
		m->cmd.label = m->label;
		m->cmd.timeout_ms = sm->command_timeout_s * 1000L;
		m->cmd.pass_env = (const char *const *)sm->pass_env;
	} else {
		m->how = ASK_LLM;
		if (sm->api_key_env) {
			const char *k = getenv(sm->api_key_env);

			if (!k || !*k) {
				free(m);
				return kerr_set(
					msg, n, KERR_INVALID,
					"proposer.llm.api_key_env: the environment variable "
					"%s is not set",
					sm->api_key_env);
			}
			m->key = xstrdup(k);
		}
		m->label = xasprintf("%s %s", llm_provider_name((enum llm_provider)sm->provider),
				     sm->model);
		m->llm.provider = (enum llm_provider)sm->provider;
		m->llm.model = sm->model;
		m->llm.base_url = sm->base_url;
		m->llm.api_key = m->key;
		m->llm.ca_file = sm->ca_file;
		m->llm.stream = sm->stream;
		m->llm.temperature = sm->temperature;
		m->llm.top_p = sm->top_p;
		m->llm.max_output_tokens = sm->max_output_tokens;
		m->llm.timeout_ms = sm->timeout_s * 1000L;
		m->llm.max_attempts = sm->attempts;
	}
	p->name = "model";
	p->propose = model_propose;
	p->reflect = model_reflect;
	p->release = model_release;
	p->state = m;
	return 0;
}
