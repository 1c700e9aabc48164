/*
 * propose.h - the proposer interface: where new kernel variants come from.
 *
 * A proposer gets the session so far (every variant with its outcome, the
 * lineages' bests, the navigator's mode, the learnings text) and returns
 * up to ctx->want proposals, each a complete source (the template with
 * some EVOLVE-BLOCK bodies replaced) plus build options, a parent and a
 * short rationale.  The loop then checks every proposal (code outside the
 * blocks byte-identical to the template, not evaluated before) before it
 * is evaluated, so a proposer cannot smuggle changes past the blocks.
 *
 * "tune" is built in (tune.c); a model ("llm" or "command", model.c) is
 * always mixed with the tuner (mix.c), which proposer_open sets up.
 */
#ifndef KCTL_PROPOSE_H
#define KCTL_PROPOSE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "mutate.h"
#include "spec.h"

/*
 * The navigator's decision that makes the next round the session's last
 * search round (rank.c): its proposers work in exploit mode with
 * propose_ctx.last set.
 */
#define NAV_FINISH "finish"

enum nav_mode {
	NAV_EXPLOIT, /* refine the lineages' bests: small moves */
	NAV_EXPLORE, /* new directions: wide moves, fresh starting points */
};

/* One variant the session has seen (evaluated or not yet). */
struct cand {
	const char *id;   /* session-unique, e.g. "r03-v002" */
	const char *hash; /* variant_hash() */
	const char *source, *options;
	const char *parent;     /* may be NULL */
	json_t *params;         /* the tuner's parameter vector {"TM": 4, ...}; may be NULL */
	const char *status;     /* evalpod status, NULL while not evaluated */
	const char *fault_kind; /* may be NULL */
	double speedup;         /* vs the reference; NAN unless status is "ok" */
	int lineage;            /* lineage number, -1 for none */
	int round;
	const char *origin; /* "start", "tune", "sweep", "model"; NULL for older sessions */
	json_t *tunables;   /* a model variant's own [{name, values}], may be NULL */
};

struct session;

struct propose_ctx {
	const struct spec *spec;
	const struct blocks *blocks; /* of spec->template_src */
	int round;                   /* 1-based */
	enum nav_mode mode;
	const struct cand *history; /* every variant of the session, oldest first */
	size_t nhistory;
	const struct cand *const *parents; /* the active search lineages' bests, best
					      first; the incumbent when there are none */
	size_t nparents;
	size_t want;             /* propose at most this many */
	size_t budget_left;      /* evaluations left in the session */
	int last;                /* the session's last search round, as its budgets stand */
	uint64_t *rng;           /* the session's random state (advance it) */
	const char *learnings;   /* the learnings file's text, may be NULL */
	struct session *session; /* for the model proposer's context and records */
	json_t *plan; /* the mix records here how it shared the round (owned by the caller) */
};

struct proposal {
	char *source;       /* full source */
	char *options;      /* build options (never NULL) */
	char *parent;       /* id of the parent variant, may be NULL */
	char *rationale;    /* one line for humans */
	json_t *params;     /* owned reference, may be NULL */
	const char *origin; /* static: "tune", "sweep" or "model" */
	json_t *tunables;   /* owned reference, may be NULL: a model variant's own */
};

struct proposer {
	const char *name;
	/*
	 * Fills *out with a malloc'd array of *n proposals (n <= ctx->want;
	 * 0 means the proposer has nothing new to offer, and msg may then say
	 * why, e.g. "every valid point of the space (12) was tried").
	 * Returns 0 or a KERR_* code with msg.
	 */
	int (*propose)(struct proposer *p, const struct propose_ctx *ctx, struct proposal **out,
		       size_t *n, char *msg, size_t mlen);
	void (*release)(struct proposer *p);
	/*
	 * Optional: turns round's evidence into learnings ([Mnnn]), once per
	 * round however often it is called (a resume calls it again).
	 * Returns 0 or a KERR_* code with msg.
	 */
	int (*reflect)(struct proposer *p, struct session *s, int round, char *msg, size_t n);
	void *state;
};

/* Opens the proposer the spec names.  Returns 0 or KERR_UNSUPPORTED/... */
int proposer_open(struct proposer *p, const struct spec *s, char *msg, size_t n);
void proposer_close(struct proposer *p);

/* Frees what one proposal holds; proposals_free frees n of them and the array. */
void proposal_release(struct proposal *p);
void proposals_free(struct proposal *p, size_t n);

/* The built-in tuner (tune.c). */
int tune_open(struct proposer *p, const struct spec *s, char *msg, size_t n);

/* How the tuner picks points in a space too large to walk whole. */
enum tune_strategy {
	TUNE_MODEL,  /* space-filling first round, then a Gaussian process and expected
			improvement (the default) */
	TUNE_EVOLVE, /* moves and crossovers around the lineages' bests (the old tuner) */
	TUNE_RANDOM, /* uniform random valid points: the baseline */
};

/*
 * Sets an open tuner's strategy by name ("tune", "evolve", "random").
 * Returns 0, or KERR_INVALID with msg for another name.
 */
int tune_set_strategy(struct proposer *p, const char *name, char *msg, size_t n);

/*
 * Restricts an open tuner's space to the listed points (a JSON array of
 * params objects {"TM": 4, ...}, one value per tunable), as when a space
 * was recorded once and is replayed (`kctl simulate`).  Repeated points
 * count once.  Returns 0, or KERR_INVALID with msg naming the first point
 * that is not an object, lacks a tunable, holds a value outside its list
 * or breaks a constraint; the space is then unchanged.
 */
int tune_restrict(struct proposer *p, json_t *points, char *msg, size_t n);

/* The template's own params as a new object, or NULL when it has none. */
json_t *tune_template_params(const struct proposer *p);
/* The language model or the command, live or replayed (model.c). */
int model_open(struct proposer *p, const struct spec *s, char *msg, size_t n);
/*
 * The mix (mix.c): the model, the tuner on the spec's tunables and the
 * sweep of the model's own tunables, sharing each round's slots as the
 * navigator decides from what was measured.  Opens the others itself.
 */
int mix_open(struct proposer *p, const struct spec *s, char *msg, size_t n);

/* Whether the model's budget (proposer.max_tokens, max_cost) is spent;
 * why says so when it is. */
int model_budget_spent(struct session *s, char *why, size_t n);

#endif
