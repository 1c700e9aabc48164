/*
 * timing-audit.c - the timing worker's audit on new inputs: after the
 * rounds, the fastest programs are timed again, side by side with samples
 * on the timing sets, on inputs they have never met, one run of them
 * judged (docs/evalpod.md, "The audit on new inputs").  A kernel that
 * recognises inputs it has met and replays its answers is fast on the
 * timing sets only.
 *
 * May use: timing-internal.h (the timer, its sampling and verification),
 * world, splitmix, worker and common/.  timing.c calls audit_programs().
 */
#include "timing-internal.h"
#include "splitmix.h"
#include "worker.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * The audit (audit_programs): the fastest programs timed again on inputs
 * they have never met, fastest first, until AUDIT_PASSES have passed it,
 * AUDIT_MAX audited at most; AUDIT_SAMPLES samples an attempt, up to
 * AUDIT_ATTEMPTS attempts.  A sample's new input sets take at most
 * AUDIT_FRESH_BYTES of host memory, or one set when a set is larger (the
 * audit's samples then have fewer runs than the rounds', both kinds alike).
 */
#define AUDIT_PASSES      1
#define AUDIT_MAX         6
#define AUDIT_SAMPLES     3
#define AUDIT_ATTEMPTS    3
#define AUDIT_RATIO       1.5
#define AUDIT_FLOOR_MS    0.05
#define AUDIT_FRESH_BYTES ((size_t)256 << 20)

/*
 * New inputs for one audit sample: n sets (each every initialised buffer,
 * one after another) generated from seeds no program in this process met,
 * the session's secret timing seeds in the mix, so that the batch alone
 * does not tell them.  They are made before the sample starts, so that no
 * generating runs beside a timed run.
 */
static char **audit_fresh(struct timer *t, size_t n, size_t bytes)
{
	char **fresh = xcalloc(n, sizeof(*fresh));

	for (size_t k = 0; k < n; k++) {
		uint64_t st = timing_rand(t) ^ t->tseeds[WORKER_ROTATING_SETS];
		size_t off = 0;

		world_generate(&t->w, splitmix_next(&st));
		fresh[k] = xmalloc(bytes ? bytes : 1);
		for (size_t i = 0; i < t->b.nbuffers; i++) {
			struct wbuf *wb = &t->w.bufs[i];

			if (wb->init) {
				memcpy(fresh[k] + off, wb->init, wb->bytes);
				off += wb->bytes;
			}
		}
	}
	return fresh;
}

/*
 * One audit sample of p (audit_program): reps runs on new inputs fresh[0..
 * reps), one set a run; with vset < WORKER_TIMING_SETS one run, picked at
 * random, on audit set vset instead, its outputs verified.  Returns 0, or
 * -1 when the plan failed (p is marked failed).
 */
static int audit_sample(struct timer *t, struct tprog *p, char **fresh, int reps, unsigned vset,
			size_t sample, double *ms)
{
	struct audit_inputs a = { fresh, -1, vset };
	double host = 0;
	int rc;

	if (vset < WORKER_TIMING_SETS)
		a.vrun = (int)(timing_rand(t) % (uint64_t)reps);
	rc = timing_sample(t, p, reps, ms, &host, 0, &a);
	if (!rc && a.vrun >= 0)
		timing_verify_outputs(t, p, sample, 1);
	if (!p->failed)
		timing_verify_memory(t, p, sample, 0);
	else
		world_paint_guards(&t->w, t->msg, sizeof(t->msg));
	return p->failed ? -1 : 0;
}

/*
 * Audits p on inputs new to it: AUDIT_SAMPLES pairs of samples, first one
 * on the timing sets, as in the rounds, then one on inputs it has never
 * met, one run of the first attempt's new inputs on audit set vset
 * (>= WORKER_TIMING_SETS: none) judged against the reference.  It passes
 * when its fastest sample on new inputs is within AUDIT_RATIO x its fastest
 * on the timing sets + AUDIT_FLOOR_MS; else another attempt, up to
 * AUDIT_ATTEMPTS.  The samples of both kinds are taken side by side, so a
 * machine that slows down slows both, and the first is taken before p has
 * met any new input, so p cannot tell it from the rounds' samples.  A
 * kernel that recognises inputs it has met (a memo in the local memory
 * PoCL keeps from launch to launch, or anywhere else) and replays its
 * answers is fast on the timing sets only: on new inputs it is as slow as
 * its work, and it is invalid (slower_on_new_inputs).  One that answers
 * inputs it has not met with anything but the work is caught by the judged
 * run, which it cannot tell from the others.
 */
static void audit_program(struct timer *t, struct tprog *p, unsigned vset)
{
	json_t *fresh = json_array(), *met = json_array();
	double best_new = INFINITY, best_met = INFINITY, ms = 0, host = 0;
	size_t n = 0, bytes = 0;
	int attempt = 0, passed = 0, reps = p->reps, rc;
	char msg[640], **sets;

	for (size_t i = 0; i < t->b.nbuffers; i++)
		bytes += t->w.bufs[i].init ? t->w.bufs[i].bytes : 0;
	if (bytes && (size_t)reps > AUDIT_FRESH_BYTES / bytes)
		reps = AUDIT_FRESH_BYTES / bytes > 1 ? (int)(AUDIT_FRESH_BYTES / bytes) : 1;
	while (attempt < AUDIT_ATTEMPTS && !p->failed && !passed) {
		size_t judged = (size_t)(timing_rand(t) % AUDIT_SAMPLES);

		for (size_t i = 0; i < AUDIT_SAMPLES && !p->failed; i++) {
			unsigned set = attempt == 0 && i == judged ? vset : WORKER_TIMING_SETS;

			if (timing_sample(t, p, reps, &ms, &host, 0, NULL))
				break;
			timing_verify_outputs(t, p, p->nsamples + ++n, 0);
			json_array_append_new(met, json_real(ms));
			best_met = ms < best_met ? ms : best_met;
			if (p->failed)
				break;
			sets = audit_fresh(t, (size_t)reps, bytes);
			rc = audit_sample(t, p, sets, reps, set, n, &ms);
			for (int k = 0; k < reps; k++)
				free(sets[k]);
			free(sets);
			if (rc)
				break;
			json_array_append_new(fresh, json_real(ms));
			best_new = ms < best_new ? ms : best_new;
		}
		passed = best_new <= AUDIT_RATIO * best_met + AUDIT_FLOOR_MS;
		attempt++;
	}
	json_object_set_new(p->doc, "audit",
			    json_pack("{s:o, s:o, s:i, s:b, s:b}", "new_inputs_ms", fresh,
				      "timing_sets_ms", met, "attempts", attempt, "judged_run",
				      vset < WORKER_TIMING_SETS, "passed", passed && !p->failed));
	if (p->failed || passed)
		return;
	snprintf(msg, sizeof(msg),
		 "on inputs it had never met it took %.4g ms at the fastest of %zu samples, "
		 "against %.4g ms on the timing sets it met again and again, side by side "
		 "(allowed: %.2f x + %.2f ms): its speed came from recognising its inputs",
		 best_new, n, best_met, AUDIT_RATIO, AUDIT_FLOOR_MS);
	timing_fail(p, "invalid", "candidate", "slower_on_new_inputs", msg);
}

static int by_median(const void *a, const void *b)
{
	const struct tprog *const *x = a, *const *y = b;

	if ((*x)->median != (*y)->median)
		return (*x)->median < (*y)->median ? -1 : 1;
	return (*x)->line < (*y)->line ? -1 : (*x)->line > (*y)->line;
}

/*
 * After the rounds: audits the fastest programs (not the reference, the
 * batch author's), fastest first, until AUDIT_PASSES have passed or
 * AUDIT_MAX were audited.  The first audits each have an audit set of their
 * own for their judged run, so no program meets one another met before.
 */
void audit_programs(struct timer *t)
{
	struct tprog **order = xcalloc(t->nprogs + 1, sizeof(*order));
	size_t n = 0, audited = 0, passed = 0;

	for (size_t i = 0; i < t->nprogs; i++)
		if (!t->progs[i].failed && t->progs[i].nsamples &&
		    strcmp(t->progs[i].id, "reference"))
			order[n++] = &t->progs[i];
	qsort(order, n, sizeof(*order), by_median);
	for (size_t i = 0; i < n && passed < AUDIT_PASSES && audited < AUDIT_MAX && !t->lost; i++) {
		unsigned vset = WORKER_ROTATING_SETS + (unsigned)audited;

		worker_progress(t->dir, order[i]->id);
		audit_program(t, order[i], vset < WORKER_TIMING_SETS ? vset : WORKER_TIMING_SETS);
		audited++;
		passed += !order[i]->failed;
	}
	free(order);
}
