/*
 * round.c - the steps of one round that change the world: choose the
 * variants (through the session's proposer), evaluate them (the round's
 * lock and attempts here; each attempt through the session's backend,
 * backend.h), record the results.  Each step is committed to the store
 * before the next begins, and each can be run again after a crash without
 * repeating work that was recorded.  Uses the proposers, the backends, the
 * batch (pack.h), the store and the session's services; never the loop.
 */
#include "session.h"
#include "services.h"
#include "pack.h"
#include "round.h"
#include "bucket.h"
#include "backend.h"
#include "cache-use.h"
#include "err.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "sbuf.h"
#include "propose.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* --- propose ---------------------------------------------------------- */

static double jnumber(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void fill_cand(struct cand *c, json_t *v)
{
	json_t *lin = json_object_get(v, "lineage");

	memset(c, 0, sizeof(*c));
	c->id = json_string_value(json_object_get(v, "id"));
	c->hash = json_string_value(json_object_get(v, "hash"));
	c->source = json_string_value(json_object_get(v, "source"));
	c->options = json_string_value(json_object_get(v, "options"));
	c->parent = json_string_value(json_object_get(v, "parent"));
	c->params = json_object_get(v, "params");
	if (json_is_null(c->params))
		c->params = NULL;
	c->status = json_string_value(json_object_get(v, "status"));
	c->fault_kind = json_string_value(json_object_get(v, "fault_kind"));
	c->speedup = jnumber(v, "speedup_ref");
	c->lineage = json_is_integer(lin) ? (int)json_integer_value(lin) : -1;
	c->round = (int)json_integer_value(json_object_get(v, "round"));
	c->origin = json_string_value(json_object_get(v, "origin"));
	c->tunables = json_object_get(v, "tunables");
	if (!json_is_array(c->tunables))
		c->tunables = NULL;
}

/* The active lineages' bests (or the incumbent), best first, as candidates. */
static size_t gather_parents(struct session *s, json_t *history, struct cand *all,
			     const struct cand **parents, size_t max)
{
	json_t *lins = store_lineages(s->st, s->id), *l;
	size_t i, np = 0;

	json_array_foreach (lins, i, l) {
		const char *best = json_string_value(json_object_get(l, "best"));

		/* lineage 0 is the incumbent's line, not a search lineage */
		if (!json_is_true(json_object_get(l, "active")) || !best ||
		    json_integer_value(json_object_get(l, "lineage")) == 0)
			continue;
		for (size_t k = 0; k < json_array_size(history) && np < max; k++)
			if (all[k].id && !strcmp(all[k].id, best))
				parents[np++] = &all[k];
	}
	json_decref(lins);
	if (!np) {
		json_t *inc = session_incumbent(s);
		const char *id = json_string_value(json_object_get(inc, "id"));

		for (size_t k = 0; id && k < json_array_size(history); k++)
			if (!strcmp(all[k].id, id))
				parents[np++] = &all[k];
		json_decref(inc);
	}
	/* best first */
	for (size_t a = 0; a < np; a++)
		for (size_t b = a + 1; b < np; b++)
			if (parents[b]->speedup > parents[a]->speedup) {
				const struct cand *t = parents[a];

				parents[a] = parents[b];
				parents[b] = t;
			}
	return np;
}

static int parent_lineage(const struct cand *all, size_t n, const char *parent)
{
	for (size_t i = 0; parent && i < n; i++)
		if (!strcmp(all[i].id, parent))
			return all[i].lineage;
	return -1;
}

/*
 * The line of the first control character in src other than tab, line and
 * page breaks (a source has no use for the others: they would only reach
 * the user's terminal through kctl show and the compiler's messages), or 0.
 */
static size_t control_line(const char *src)
{
	size_t line = 1;

	for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
		if (*p == '\n')
			line++;
		else if ((*p < 0x20 && !strchr("\t\v\f\r", *p)) || *p == 0x7f)
			return line;
	}
	return 0;
}

/* Checks a proposal and records it as variant k of the round; 1 if skipped. */
static int admit(struct session *s, int round, size_t *k, struct proposal *p,
		 const struct cand *all, size_t nall, json_t *seen, char *msg, size_t n)
{
	char hash[65], why[512];
	size_t bad;
	char *id;
	json_t *v;
	int rc;

	if (blocks_verify(s->spec.template_src, &s->blocks, p->source, s->spec.marker_start,
			  s->spec.marker_end, why, sizeof(why))) {
		log_warn("round %d: a proposal was rejected before evaluation: %s", round, why);
		return 1;
	}
	/* the template's own are the user's: only a proposer's are refused */
	if ((bad = control_line(p->source)) && !control_line(s->spec.template_src)) {
		log_warn("round %d: a proposal was rejected before evaluation: line %zu of its "
			 "source holds a control character",
			 round, bad);
		return 1;
	}
	/* a model's words: kept and shown, so never a terminal's escape sequence */
	text_defang(p->rationale);
	variant_hash(p->source, p->options, hash);
	if (json_object_get(seen, hash) || store_variant_has_hash(s->st, s->id, hash))
		return 1;
	json_object_set_new(seen, hash, json_true());
	id = session_variant_id(round, (*k)++);
	v = json_pack("{s:s, s:s, s:i, s:s?, s:i, s:s, s:s, s:O?, s:s?, s:s?, s:O?}", "id", id,
		      "hash", hash, "round", round, "parent", p->parent, "lineage",
		      parent_lineage(all, nall, p->parent), "source", p->source, "options",
		      p->options, "params", p->params, "rationale", p->rationale, "origin",
		      p->origin, "tunables", p->tunables);
	rc = store_variant_add(s->st, s->id, v, msg, n);
	json_decref(v);
	free(id);
	return rc;
}

static int propose_start(struct session *s, char *msg, size_t n)
{
	json_t *v;
	char hash[65];
	int rc;

	variant_hash(s->spec.template_src, s->spec.build_options, hash);
	v = json_pack("{s:s, s:s, s:i, s:i, s:s, s:s, s:s, s:s}", "id", "r00-start", "hash", hash,
		      "round", 0, "lineage", -1, "source", s->spec.template_src, "options",
		      s->spec.build_options, "rationale", "the starting template", "origin",
		      "start");
	rc = store_variant_add(s->st, s->id, v, msg, n);
	json_decref(v);
	return rc;
}

/* What the proposers offered for a round, before any of it is recorded. */
struct offer {
	json_t *history; /* store_variants_brief: what all[] points into */
	struct cand *all;
	size_t nall;
	struct proposal *props;
	size_t nprops;
	json_t *plan; /* how the mix shared the round, may be NULL */
};

static void offer_release(struct offer *o)
{
	proposals_free(o->props, o->nprops);
	free(o->all);
	json_decref(o->history);
	json_decref(o->plan);
	memset(o, 0, sizeof(*o));
}

/*
 * Asks the proposer for the round's variants, outside any transaction: a
 * model's exchanges are committed one by one as they happen (model.c), so
 * that a kctl killed while it waits for an answer never asks again for
 * what was answered.  Returns 0 or an error.
 */
static int propose_gather(struct session *s, int round, enum nav_mode mode, int finish,
			  struct offer *o, char *msg, size_t n)
{
	size_t nh, np;
	const struct cand **parents;
	struct propose_ctx ctx;
	char *learnings = NULL;
	int rc;

	memset(o, 0, sizeof(*o));
	o->history = store_variants_brief(s->st, s->id, -1);
	/* Several shape buckets: the proposers search the objective across them. */
	bucket_rank_rows(s, o->history);
	nh = json_array_size(o->history);
	o->all = xcalloc(nh + 1, sizeof(*o->all));
	o->nall = nh;
	parents = xcalloc(nh + 1, sizeof(*parents));
	for (size_t i = 0; i < nh; i++)
		fill_cand(&o->all[i], json_array_get(o->history, i));
	np = gather_parents(s, o->history, o->all, parents, nh);
	memset(&ctx, 0, sizeof(ctx));
	ctx.spec = &s->spec;
	ctx.blocks = &s->blocks;
	ctx.round = round;
	ctx.mode = mode;
	ctx.history = o->all;
	ctx.nhistory = nh;
	ctx.parents = parents;
	ctx.nparents = np;
	ctx.budget_left =
		s->spec.max_evaluations > (int)nh ? (size_t)(s->spec.max_evaluations - (int)nh) : 0;
	ctx.want = (size_t)s->spec.variants_per_round < ctx.budget_left
			   ? (size_t)s->spec.variants_per_round
			   : ctx.budget_left;
	ctx.last = finish || ctx.budget_left <= ctx.want || round >= session_max_rounds(s);
	ctx.rng = &s->rng;
	ctx.session = s;
	ctx.plan = json_object();
	{
		char *path = xasprintf("%s/learnings.md", s->dir), m[128];

		if (file_read(path, 1u << 20, &learnings, NULL, m, sizeof(m)))
			learnings = NULL;
		ctx.learnings = learnings;
		free(path);
	}
	if (n)
		*msg = '\0'; /* the proposer's reason when it offers nothing */
	rc = ctx.want ? s->prop->propose(s->prop, &ctx, &o->props, &o->nprops, msg, n) : 0;
	if (json_object_size(ctx.plan))
		o->plan = json_incref(ctx.plan);
	json_decref(ctx.plan);
	free(learnings);
	free(parents);
	return rc;
}

/*
 * Records what was offered; 1 when nothing new was (nothing recorded), with
 * msg saying why: the proposer's reason, or that what it offered was all
 * had or refused.
 */
static int propose_admit(struct session *s, int round, struct offer *o, char *msg, size_t n)
{
	json_t *seen = json_object();
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; i < o->nprops && rc == 0; i++)
		rc = admit(s, round, &k, &o->props[i], o->all, o->nall, seen, msg, n) < 0 ? -1 : 0;
	if (rc < 0 && !*msg)
		kerr_set(msg, n, KERR_INVALID, "recording the proposals of round %d failed", round);
	if (rc == 0 && k == 0) {
		rc = 1;
		if (o->nprops)
			snprintf(
				msg, n,
				"each of the %zu variants proposed was one the session has, or was "
				"refused",
				o->nprops);
		else if (!*msg)
			snprintf(msg, n, "the proposer offered no new variant");
	}
	if (rc == 0 && o->plan)
		rc = store_round_set_plan(s->st, s->id, round, o->plan, msg, n);
	json_decref(seen);
	return rc;
}

int round_propose(struct session *s, int round, const char *mode, char *msg, size_t n)
{
	struct offer o = { 0 };
	int rc = 0;

	if (round > 1 && s->prop->reflect) {
		/* the last round's lessons, before the prompts that read them */
		json_t *prev = store_round_get(s->st, s->id, round - 1);
		const char *pm = json_string_value(json_object_get(prev, "mode"));

		if (pm &&
		    (!strcmp(pm, "explore") || !strcmp(pm, "exploit") || !strcmp(pm, NAV_FINISH)))
			rc = s->prop->reflect(s->prop, s, round - 1, msg, n);
		if (!rc && pm)
			rc = learnings_write(s, msg, n);
		json_decref(prev);
	}
	if (round > 0 && !rc)
		rc = propose_gather(s, round, strcmp(mode, "explore") ? NAV_EXPLOIT : NAV_EXPLORE,
				    !strcmp(mode, NAV_FINISH), &o, msg, n);
	if (rc) {
		offer_release(&o);
		return rc;
	}
	if ((rc = store_begin(s->st, msg, n))) {
		offer_release(&o);
		return rc;
	}
	rc = store_round_create(s->st, s->id, round, mode, msg, n);
	if (!rc)
		rc = round == 0 ? propose_start(s, msg, n) : propose_admit(s, round, &o, msg, n);
	if (!rc)
		rc = store_session_set_rng(s->st, s->id, s->rng, msg, n);
	offer_release(&o);
	return round_step_end(s, round, ROUND_PROPOSED, "proposed", rc, msg, n);
}

/* --- evaluate -------------------------------------------------------------- */

static int open_round_lock(const char *dir, int round, char *msg, size_t n)
{
	char *path = xasprintf("%s/lock", dir);
	int fd = open(path, O_RDWR | O_CREAT, 0644);

	if (fd < 0) {
		kerr_set(msg, n, KERR_IO, "cannot open '%s': %s", path, strerror(errno));
	} else if (flock(fd, LOCK_EX | LOCK_NB)) {
		log_warn("round %d: an evalpod started before is still evaluating it; waiting for "
			 "it",
			 round);
		while (flock(fd, LOCK_EX) && errno == EINTR && !round_interrupted())
			;
		if (round_interrupted()) {
			close(fd);
			fd = -1;
			kerr_set(msg, n, KERR_CHILD, "interrupted");
		}
	}
	free(path);
	return fd;
}

int round_evaluate(struct session *s, int round, char *msg, size_t n)
{
	char *dir = session_round_dir(s, round), *res = xasprintf("%s/results", dir);
	struct sigaction sa, old_int, old_term;
	int fd, rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = session_note_signal;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if ((rc = dir_make(res, msg, n)))
		goto out;
	fd = open_round_lock(dir, round, msg, n);
	if (fd < 0) {
		rc = round_interrupted() ? KERR_CHILD : KERR_IO;
		goto out;
	}
	cache_use_fill(s, round, dir); /* what the cache has is not packed */
	for (int attempt = 0; attempt < EVALPOD_ATTEMPTS; attempt++) {
		if (session_cancelled(s)) {
			rc = kerr_set(msg, n, KERR_CHILD, "cancelled");
			break;
		}
		rc = s->backend->evaluate(s, round, dir, fd, attempt, msg, n);
		if (rc != 1)
			break;
	}
	if (rc == 1) {
		json_t *todo = round_pending(s, round, dir);

		/* Out of attempts: infrastructure results stand, nothing is lost. */
		rc = json_array_size(todo) ? KERR_CHILD : 0;
		json_decref(todo);
	}
	close(fd);
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	free(res);
	free(dir);
	return rc;
}

/* --- collect --------------------------------------------------------------- */

static int collect_one(struct session *s, const char *dir, json_t *v, char *msg, size_t n)
{
	const char *id = json_string_value(json_object_get(v, "id"));
	char *path = xasprintf("%s/results/%s.json", dir, id), *text = NULL;
	json_error_t jerr;
	json_t *res = NULL;
	size_t len = 0;
	int rc;

	if (!json_is_null(json_object_get(v, "status")) && json_object_get(v, "status")) {
		free(path);
		return 0; /* recorded before */
	}
	rc = file_read(path, 256u << 20, &text, &len, msg, n);
	if (!rc && !len)
		rc = kerr_set(msg, n, KERR_PARSE,
			      "variant '%s': result file '%s' is empty (0 bytes)", id, path);
	if (!rc && !(res = json_loads(text, 0, &jerr)))
		rc = kerr_set(msg, n, KERR_PARSE, "%s:%d:%d: %s", path, jerr.line, jerr.column,
			      jerr.text);
	if (!rc)
		rc = store_result_add(s->st, s->id, id, res, msg, n);
	json_decref(res);
	free(text);
	free(path);
	return rc;
}

int round_collect(struct session *s, int round, char *msg, size_t n)
{
	char *dir = session_round_dir(s, round);
	/* a confirmation's results stay in its folder: they re-time variants
	 * that have their result already (confirm.c reads them from there) */
	json_t *vars = store_variants(s->st, s->id, round), *v;
	size_t i;
	int rc = store_begin(s->st, msg, n);

	json_array_foreach (vars, i, v) {
		if (rc)
			break;
		rc = collect_one(s, dir, v, msg, n);
	}
	rc = round_step_end(s, round, ROUND_COLLECTED, "collected", rc, msg, n);
	if (!rc)
		cache_use_record(s, round);
	json_decref(vars);
	free(dir);
	return rc;
}
