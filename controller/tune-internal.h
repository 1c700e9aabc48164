/*
 * tune-internal.h - what the parts of the tuner share, in layers that call
 * only downwards:
 *
 *   tune.c        the proposer, one round's set-up, the exhaustive and
 *                 evolutionary strategies (the top; nothing calls back)
 *   tune-model.c  the space-filling start and the Gaussian process
 *   tune-run.c    what both strategy files do with a round: a candidate's
 *                 vector, freshness, random draws, offering a vector
 *   tune-space.c  the space, its vectors and their rendering (the bottom)
 *
 * Not for use outside them; propose.h is the public interface.
 */
#ifndef KCTL_TUNE_INTERNAL_H
#define KCTL_TUNE_INTERNAL_H

#include "propose.h"
#include "expr.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Random draws allowed per wanted proposal before giving up on random points. */
#define TUNE_DRAWS 256
/*
 * When TUNE_DRAWS uniform draws met no fresh valid point of a large space,
 * up to TUNE_BUILDS times: a vector built one tunable at a time
 * (tune_build, each tunable trying at most TUNE_BUILD_SCAN of its values),
 * and a random walk of TUNE_WALK_STEPS steps per tunable from a valid
 * point the session has (a constraint over several tunables, "A + B + C +
 * D <= 6", defeats the first: the first three are drawn blind).  A space of
 * 64 tunables whose chained constraints keep 1 point in 735 gave uniform
 * draws nothing: the session ended after its first round, "exhausted".
 */
#define TUNE_BUILDS     16
#define TUNE_BUILD_SCAN 256
#define TUNE_WALK_STEPS 4

/* --- sets of vectors (open addressing over a flat array), tune-space.c --- */

struct vset {
	size_t k;    /* entries per vector */
	uint32_t *v; /* n vectors of k entries, in insertion order */
	size_t n, alloc;
	size_t *slot; /* 0 = empty, else index + 1 */
	size_t nslot; /* a power of two, or 0 */
};

/* --- the tuner's state ---------------------------------------------------- */

struct tune {
	const struct spec *s;
	size_t k;        /* number of tunables */
	size_t nenv;     /* number of shapes (1 when there are none) */
	int enumerated;  /* the space was small enough to list */
	uint32_t *space; /* then: its valid vectors, in enumeration order */
	size_t nspace;
	size_t probed, probed_ok; /* else: random points checked at open, and the valid ones */
	uint32_t *defaults;       /* the template's own vector, or NULL */
	enum tune_strategy strategy;
	struct vset listed; /* a restricted space (tune_restrict): its points; else empty */
	uint32_t *starts;   /* the tunables.starts inside the space, as vectors */
	size_t nstarts;
	size_t *start_at; /* each one's index in tunables.starts */
	/*
	 * The model's features past the k indices: the products of tunables
	 * that the constraints multiply ("TM * TN * VN <= 256"), each as
	 * log2(1 + |product|) scaled to [0, 1] by its least and greatest.
	 */
	struct tune_product {
		size_t *idx; /* the tunables multiplied */
		size_t n;
		double lo, hi; /* log2(1 + |product|) at its least and greatest */
	} * prod;
	size_t nprod;
	size_t nf;       /* features per vector: k + nprod */
	uint64_t *cmask; /* per constraint: the tunables it names, as bits */
	/*
	 * The constraints, compiled once (tune_compile): a spec may have 256,
	 * and parsing each again for every point checked was most of a
	 * session's time at that size.
	 */
	struct tune_cons {
		struct expr_prog *prog;
		int *tun;             /* per name: the tunable it is, or -1 */
		int64_t *vals;        /* per shape, per name: the shape's value */
		unsigned char *known; /* per shape, per name: whether it has one */
	} * cons;
};

struct parent {
	const char *id;
	const uint32_t *v;
};

struct run {
	struct tune *t;
	const struct propose_ctx *ctx;
	uint64_t *rng;
	struct vset seen;    /* the history's vectors and this round's proposals */
	struct vset refused; /* vectors the device turned down */
	struct parent *par;  /* the parents that have a vector, best first */
	uint32_t *parvec;    /* their vectors */
	size_t npar;
	size_t *fresh; /* enumerated spaces: the untried valid vectors */
	size_t nfresh;
	int uniform_dry;    /* uniform draws met no fresh point: build them (tune_build) */
	char (*hashes)[65]; /* of out[] */
	struct proposal *out;
	size_t n;
	char *msg;
	size_t mlen;
};

/* --- the space, tune-space.c ---------------------------------------------- */

/* Uniform in [0, n), n > 0, without modulo bias. */
size_t tune_rng_below(uint64_t *s, size_t n);

/* Shuffles the n elements of size bytes (at most 64) at base. */
void tune_shuffle(uint64_t *rng, void *base, size_t n, size_t size);

/* Whether v is in s; vset_add adds it (a copy), vset_release frees s. */
int vset_has(const struct vset *s, const uint32_t *v);

void vset_add(struct vset *s, const uint32_t *v);

void vset_release(struct vset *s);

/* Sum of the index distances: how many one-position steps apart a and b are. */
size_t tune_vec_dist(const uint32_t *a, const uint32_t *b, size_t k);

/*
 * Returns 1 when v satisfies every constraint at every shape.  A constraint
 * that does not evaluate makes v invalid; the first such message is kept in
 * err when err is given and still empty.
 */
int tune_vec_valid(struct tune *t, const uint32_t *v, char *err, size_t errlen);

/*
 * Compiles the constraints (t->cons) and binds their names: a tunable's
 * name to its index, any other to each shape's value of it; sets t->nenv.
 * Fails on a shape whose values are not integers or a constraint that
 * does not compile.
 */
int tune_compile(struct tune *t, char *msg, size_t n);

/* Frees t->cons. */
void tune_cons_free(struct tune *t);

/*
 * Lists the space's valid vectors when it is small enough, else probes it;
 * fails when no combination satisfies the constraints.
 */
int tune_space(struct tune *t, char *msg, size_t n);

/* Sets *out to value's index in tu's list; returns 0 when not there. */
int tune_value_index(const struct tunable *tu, int64_t value, uint32_t *out);

/*
 * Turns the tunables.starts inside the space into vectors (t->starts).  A
 * start with a value its parameter's list lacks, or that breaks a
 * constraint at some shape, is skipped with a warning naming it: starts
 * are hints from other devices, and a space narrowed for one device or
 * experiment must not need them edited.
 */
void tune_starts(struct tune *t);

/*
 * Notes which tunables each constraint names (t->cmask), for tune_build and
 * tune_vec_valid_after; from the compiled constraints (after tune_compile).
 */
void tune_masks(struct tune *t);

/*
 * tune_vec_valid for v that was valid until its tunable j changed: only the
 * constraints that name j can have changed, so only they are checked (all
 * of them where t->k > 64).  A walk's step checks a few instead of all.
 */
int tune_vec_valid_after(struct tune *t, const uint32_t *v, size_t j);

/*
 * A random vector of a large space built one tunable at a time, in random
 * order: each takes a random value (of at most TUNE_BUILD_SCAN tried) that
 * keeps every constraint whose tunables are then all set.  For spaces whose
 * constraints leave too few points for uniform draws to meet one.  Returns
 * 0 when a tunable found no such value (v is then unfinished); a vector
 * built is not yet checked against constraints that name no tunable.
 */
int tune_build(struct tune *t, uint64_t *rng, uint32_t *v);

/*
 * Finds the products of two or more tunables in the constraints (t->prod),
 * at most TUNE_PRODUCTS, and sets t->nf.
 */
void tune_products(struct tune *t);
/*
 * v as model features in [0, 1], the first d (k <= d <= t->nf) of: the
 * indices, each over its list's last index, then the products.
 */
void tune_features(const struct tune *t, const uint32_t *v, double *x, size_t d);
/* v as a new {"NAME": value, ...} object (caller decrefs). */
json_t *tune_params_of(const struct tune *t, const uint32_t *v);

/*
 * The template's own vector: the first "#define NAME value" of each
 * tunable, when every one has a value from its list.
 */
void tune_defaults(struct tune *t);

/* --- one round's helpers, tune-run.c ------------------------------------- */

/*
 * Fills v with c's vector.  A variant without params that is the template
 * itself (the starting point) has the template's own vector.  Returns 0
 * when c has no vector in the space.
 */
int tune_vec_of_cand(const struct tune *t, const struct cand *c, uint32_t *v);

/* Valid, and neither tried nor refused before. */
int tune_fresh(struct run *r, const uint32_t *v);

/*
 * Proposes v unless the round is full, v is not fresh, or it renders to a
 * variant the session already has.  Takes ownership of why.  Returns 1
 * when v was taken, 0 when skipped, or an error from rendering.
 */
int tune_offer(struct run *r, const uint32_t *v, const char *parent, char *why);

/* One random vector: an untried valid one of a listed space, any of a large one. */
int tune_draw(struct run *r, uint32_t *v);

/*
 * A fresh vector of a large space, built (tune_build) or walked to from a
 * valid one, for when uniform draws met none: 0 when TUNE_BUILDS tries of
 * each found none (or the space is listed).
 */
int tune_build_fresh(struct run *r, uint32_t *v);

/* --- the model strategy, tune-model.c ------------------------------------ */

/*
 * Fills the round with random points, each the farthest from everything
 * tried and proposed of ndraws fresh draws (1: uniform random sampling).
 */
int tune_fill(struct run *r, size_t ndraws, const char *label);

/* The "tune" strategy's round: space-filling points, then the model's picks. */
int tune_propose_model(struct run *r);

#endif
