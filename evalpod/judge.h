/*
 * judge.h - the reference answers, kept where candidate code cannot reach
 * them, and the verdicts on every output a candidate produced.
 *
 * A candidate's kernels run inside its worker process (on a CPU device,
 * in its address space), so nothing a worker holds can be trusted to
 * stay secret or unmodified.  The judge therefore lives in the parent:
 *
 *   - the reference worker writes its outputs into its own directory; the
 *     parent maps each file and unlinks it, so the answers exist only in
 *     the parent's memory (which is not dumpable: no other process of the
 *     same user may read it) before any candidate code runs;
 *   - a check or timing worker copies the outputs of a run into the
 *     shared-memory file it was given (fd POOL_SHM_FD) and sends a
 *     struct judge_req on its channel (fd POOL_CTL_FD); the parent compares
 *     them with the reference and answers with a struct judge_rep;
 *   - the parent keeps its own record of every verdict.  When the results
 *     are built, that record decides: a worker that claims `ok` without
 *     having had every output judged, or after a failed verdict, gets
 *     `invalid`/`unverified` or the failure the judge saw.
 *
 * The messages are fixed-size records on a SOCK_SEQPACKET socket pair, one
 * request answered by one reply; anything else is a protocol error that
 * kills the worker (pool.h).
 */
#ifndef EVALPOD_JUDGE_H
#define EVALPOD_JUDGE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "worker.h"

#define JUDGE_MAGIC 0x6b6a7564u

enum judge_what {
	JUDGE_CHECK = 1, /* a correctness run: shape, seed index, run (0 first, 1 second) */
	JUDGE_TIMED = 2, /* a timed run: input set, program line, sample number */
	JUDGE_AUDIT = 3, /* a run of the audit on new inputs: audit set, program line, sample */
};

enum judge_verdict {
	JUDGE_PASS = 0,
	JUDGE_UNWRITTEN = 1, /* an output element still holds the poison */
	JUDGE_WRONG = 2,     /* outside atol + rtol * |ref| */
	JUDGE_REFUSED = 3,   /* the request itself was malformed or out of order */
};

struct judge_req {
	uint32_t magic;
	uint32_t what;  /* enum judge_what */
	uint32_t shape; /* JUDGE_CHECK: shape index */
	uint32_t seed;  /* JUDGE_CHECK: index into correctness.seeds; else the input set */
	uint32_t run;   /* JUDGE_CHECK: 0 first run (poison A), 1 second run (poison B) */
	uint32_t prog;  /* JUDGE_TIMED, JUDGE_AUDIT: the program's line in ids.txt */
	uint64_t sample;
};

struct judge_rep {
	uint32_t magic;
	int32_t verdict; /* enum judge_verdict */
	char message[1000];
};

/* One reference output: a read-only mapping of an unlinked file. */
struct judge_ref {
	void *p;
	size_t len;
};

/* Per program: what the judge saw.  Owned by struct judge. */
struct judge_record {
	size_t judged, passed;
	int failed;          /* a verdict other than JUDGE_PASS */
	char *status, *kind; /* of the first failure */
	char *message;       /* of the first failure */
	json_t *shapes;      /* correctness figures as the parent computed them */
	void *first;         /* JUDGE_CHECK: the first run's outputs, for bitwise_identical */
};

struct judge {
	const struct batch *b;
	uint64_t tseeds[WORKER_TIMING_SETS];
	struct judge_ref *check;    /* [shape][seed][buffer] */
	struct judge_ref *timed;    /* [shape][set][buffer], mapped at timed shapes only */
	size_t tshape;              /* the shape timing verdicts are for now (judge_time_shape) */
	struct judge_record *recs;  /* checks: one per program (baseline, variants) */
	struct judge_record *trecs; /* timing: one per line of ids.txt */
	size_t nrecs, ntrecs;
};

/*
 * Maps the reference outputs the reference worker wrote under refdir
 * (worker_ref_path names) for every shape and seed and for the timing sets
 * tseeds at every timed shape, and unlinks each file.  Timing verdicts are
 * for the primary timed shape until judge_time_shape says otherwise.  nprogs programs get a check record, and
 * nprogs + 1 timing lines one each.  Returns 0 or KERR_IO (a missing or
 * short file: msg names it).
 */
int judge_open(struct judge *j, const struct batch *b, const char *refdir, const uint64_t *tseeds,
	       size_t nprogs, char *msg, size_t n);
void judge_close(struct judge *j);

/* Forgets the timing records (a timing attempt starts from scratch). */
void judge_reset_timed(struct judge *j);

/*
 * Timed outputs are judged against the reference at timed shape s from now
 * on (a batch with several timed shapes times each in its own pass); forgets
 * the timing records as judge_reset_timed does.
 */
void judge_time_shape(struct judge *j, size_t s);

/* Bytes of buffer i at shape s when it is an output or inout, else 0. */
size_t judge_buf_bytes(const struct batch *b, size_t s, size_t i);

/* Bytes of every output/inout buffer at shape s together (the shared memory a worker needs). */
size_t judge_out_bytes(const struct batch *b, size_t s);

/*
 * A worker's channel: a socket pair and a sealed shared-memory file of
 * bytes, with the parent's mapping.  The job gets ctl_child/shm_child.
 */
struct judge_chan {
	int ctl, ctl_child, shm_child;
	void *shm;
	size_t len;
	struct judge_record *rec; /* checks: the program's record; timing: NULL (by line) */
	struct judge *j;
};
/* An empty channel (no descriptors), safe to close. */
void judge_chan_init(struct judge_chan *c);
int judge_chan_open(struct judge_chan *c, struct judge *j, size_t bytes, char *msg, size_t n);
void judge_chan_close(struct judge_chan *c);

/*
 * Serves one request from c's worker on fd (its channel): reads it, compares the outputs in
 * shared memory with the reference, records the verdict and replies.
 * Returns 0, or -1 for a protocol violation (the caller kills the worker).
 */
int judge_serve(struct judge_chan *c, int fd);

/* Expected JUDGE_CHECK verdicts for a program that passes every check. */
size_t judge_check_expected(const struct batch *b);

/*
 * Applies what the judge saw to a check document: the correctness figures
 * become the parent's, and a status the judge does not support is
 * overturned (see above).
 */
void judge_apply_check(const struct judge_record *rec, const struct batch *b, json_t *doc);

/*
 * Applies the timing verdicts to p's entry in time.json: a failed timed
 * verdict makes it invalid/wrong_when_timed, and an `ok` entry whose
 * samples were not all judged becomes invalid/unverified.
 */
void judge_apply_timed(const struct judge_record *rec, json_t *entry);

#endif
