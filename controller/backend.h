/*
 * backend.h - the backend interface: where a round's batch is evaluated.
 *
 * The loop and the round's steps know a backend only through this table,
 * chosen by the spec's evaluator.backend as proposers are chosen by its
 * proposer (propose.h).  round.c decides when to evaluate (the round's
 * lock, the attempts, cancellation between them); a backend runs one
 * attempt: it packs what is still pending (pack.h), runs evalpod on it
 * and brings the results back into the round's folder.
 *
 * "local" (backend-local.c) runs evalpod as a child of kctl (evalrun.h);
 * "kubernetes" (kround.c) runs it in pods of Jobs (kround.h).
 */
#ifndef KCTL_BACKEND_H
#define KCTL_BACKEND_H

#include <stddef.h>

struct session;
struct spec;

struct backend {
	const char *name; /* as evaluator.backend spells it */
	/*
	 * Optional: connects session s to where it evaluates, once its spec
	 * and object storage are loaded.  What it sets up is released by
	 * close, whether it succeeded or not.  Returns 0 or a KERR_* code
	 * with msg.
	 */
	int (*open)(struct session *s, char *msg, size_t n);
	/*
	 * Optional: checks, once the session is set up, that it can evaluate
	 * here (the local evalpod binary sees a device).  Returns 0 or a
	 * KERR_* code with msg.
	 */
	int (*check)(struct session *s, char *msg, size_t n);
	/*
	 * One attempt (0-based; EVALPOD_ATTEMPTS in all) at what is pending in
	 * round (results under dir/results), with the round's lock lockfd
	 * held.  Returns 0 when nothing is left pending, 1 to evaluate again
	 * (msg says why; it stands when this was the last attempt), or a
	 * negative KERR_* code with msg: KERR_CHILD for an interruption or a
	 * cancellation, KERR_INVALID when evalpod refused the batch.
	 */
	int (*evaluate)(struct session *s, int round, const char *dir, int lockfd, int attempt,
			char *msg, size_t n);
	/* Optional: releases what open set up. */
	void (*close)(struct session *s);
	/*
	 * Optional (kctl cancel): stops session id's evaluations where they
	 * run, from its spec alone.  A backend without it needs nothing: its
	 * evalpod is stopped by the cancellation itself.  Returns 0 or a
	 * KERR_* code with msg.
	 */
	int (*cancel)(const struct spec *spec, const char *id, char *msg, size_t n);
	/*
	 * Optional (kctl cancel --force, kctl delete --force): what session id
	 * may have left running when cancel failed, and how to remove it; a
	 * new string.  dir is the session's folder.
	 */
	char *(*leftovers)(const struct spec *spec, const char *id, const char *dir);
};

/* The backends (backend-local.c, kround.c). */
extern const struct backend backend_local;
extern const struct backend backend_kubernetes;

/* The backend spec names (never NULL: an unknown one is the local one). */
const struct backend *backend_of(const struct spec *spec);

/*
 * For the backends: evalpod said the reference ran past its deadline
 * (EVALPOD_EXIT_SLOW, in a child or in pods, as where says): the machine
 * or the limit, not the batch.  Doubles the session's check deadline for
 * the next attempt and says so.  Returns 1 (evaluate again) with msg
 * naming the limit to raise, which stands when this was the last attempt,
 * or KERR_CHILD when the session was cancelled.  tail is what evalpod said.
 */
int backend_reference_slow(struct session *s, int round, int attempt, const char *where,
			   const char *tail, char *msg, size_t n);

#endif
