/*
 * kround-internal.h - what the parts of the Kubernetes backend share:
 * kround.c (opening, a round's attempts, adoption, cancel), kround-job.c
 * (the Job of a shard range) and kround-watch.c (following the Jobs and
 * their pods).  Not for other modules: their contract is kround.h.
 */
#ifndef KCTL_KROUND_INTERNAL_H
#define KCTL_KROUND_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <time.h>

struct kube;
struct session;

#define KROUND_WATCH_S      300 /* one watch request; the server ends it, kctl resumes */
#define KROUND_DIAG_EVERY_S 30  /* how often pods are looked at while Jobs run */
#define KROUND_LABEL_MAX    40  /* of the session's name in labels, before the hash */
#define KROUND_QUEUE_MAX_S  30  /* the longest pause between looks at Kueue Workloads */

/* What the server can do, from its version. */
struct kround_caps {
	int indexed;   /* completionMode: Indexed (1.22+: beta, on by default) */
	int suspend;   /* spec.suspend, for Kueue (1.22+) */
	int pfp;       /* podFailurePolicy (1.26+) */
	int per_index; /* backoffLimitPerIndex (1.29+) */
};

/* One Job of the round and what became of it. */
struct kjob {
	char *name;
	int first_shard, nshards; /* the shards it runs: [first, first + n) */
	int attempt;
	time_t created; /* its creationTimestamp, from the API; 0: unknown */
	int done, failed;
	int ended_pods;       /* succeeded + failed pods last reported */
	char reason[512];     /* the Job's Failed condition, or why kctl ended it */
	char pod_reason[512]; /* what its pods said */
	unsigned char *slow;  /* slow[i]: shard first_shard + i's evalpod exited 4
				 (EVALPOD_EXIT_SLOW); NULL: none did */
	char uid[64];         /* metadata.uid: its Kueue Workload's owner */
	int suspended;        /* spec.suspend: waiting for Kueue (or a person) */
};

/* One round's evaluation in progress. */
struct kwait {
	struct session *s;
	struct kube *k;
	int round, attempt;
	struct kjob *jobs;
	size_t njobs, left;
	time_t started, next_diag;
	int interrupted, cancelled;
	int failed; /* a Job could not be ended: the round fails with why */
	char why[1400];
	int quiet;      /* finishing Jobs found finished is no news */
	char *selector; /* the session's label selector */
	char rv[64];

	/* Shards not yet submitted: the in-flight limit (kround_pod_limit) holds them back */
	struct kround_caps caps;
	json_t *batches; /* every shard's EvalBatch, published when its Job is created */
	size_t unsent;   /* the last unsent shards of batches wait for a free slot */
	long deadline;   /* the Jobs' activeDeadlineSeconds */

	/* The Kueue Workloads of suspended Jobs (kround-queue.c) */
	time_t next_queue_look;
	int queue_every;      /* seconds to the next look: doubles while nothing changes */
	char queue_state[16]; /* what kctl last recorded (kstate.h): "", "queued", ... */
	char queue_msg[600];
	time_t queue_since;
	int live; /* the live line of a wait is on the terminal (kround_queue_live) */
};

/* --- kround-job.c ---------------------------------------------------------------- */

/* What the server k can do, from its version. */
struct kround_caps kround_caps_of(const struct kube *k);
/* Name of the Job of round, attempt and shard (-1: every shard, Indexed). */
char *kround_job_name(const char *label, int round, int attempt, int shard);
/*
 * The Job running shards [first, first + count) of the round's attempt from
 * their presigned batch URLs (a new object), or NULL with msg.
 */
json_t *kround_job(struct session *s, const struct kround_caps *c, int round, int attempt,
		   int first, int count, const char *const *urls, long deadline, char *msg,
		   size_t n);
/* A Job's creationTimestamp; 0 when it has none. */
time_t kround_created(json_t *job);
/*
 * The most pods the session may have in flight at once, across its Jobs:
 * evaluator.kubernetes.max_pods_in_flight and parallelism (the smaller
 * where both are set); 0 for no limit.
 */
int kround_pod_limit(const struct session *s);
/* Whether an unsent shard may be submitted now without passing the limit. */
int kround_room(const struct kwait *w);
/*
 * Publishes and submits the unsent shards the limit leaves room for (all of
 * them as one Indexed Job where the server has those): their batch URLs are
 * presigned now, so a shard that waited for a slot gets URLs that outlive
 * its own Job.  0, or an error with msg.
 */
int kround_submit_next(struct kwait *w, char *msg, size_t n);
/* Creates job (*created: when, from the server); an AlreadyExists of this session's is adopted. */
int kround_create(struct kube *k, const struct session *s, json_t *job, time_t *created, char *msg,
		  size_t n);

/* --- kround-watch.c -------------------------------------------------------------- */

/* Reads a Job's conditions; finishes it when Complete or Failed. */
void kround_job_state(struct kwait *w, const char *type, json_t *obj);
/* The Job running shard, or NULL. */
struct kjob *kround_job_of_shard(struct kwait *w, int shard);
/* Whether shard's evalpod exited EVALPOD_EXIT_SLOW. */
int kround_is_slow(const struct kjob *j, int shard);
/*
 * Looks at the session's pods: records why failed Jobs' pods failed; with
 * act, ends a Job whose pod is stuck Pending past pending_timeout_s.
 * *refused: the pods whose evalpod refused its batch (exit status 1/2).
 */
int kround_diagnose(struct kwait *w, int act, int *refused, char *msg, size_t n);
/* Seconds between looks at the pods: often enough to honour pending_timeout_s. */
int kround_diag_every(const struct session *s);
/* Whether to stop: kctl interrupted or the session cancelled (k->stop too). */
int kround_stop(void *arg);
/*
 * Follows the Jobs until all are over, kctl is interrupted or the session
 * cancelled (0 then, with w saying which).
 */
int kround_wait(struct kwait *w, char *msg, size_t n);

/* --- kround-queue.c ------------------------------------------------------------- */

/*
 * While Jobs of w are suspended: once in a while (2 s after the first is
 * seen, then at doubling pauses up to KROUND_QUEUE_MAX_S while nothing
 * changes), finds their Kueue Workloads (one list in the namespace) and
 * records what they say for `kctl status` (kstate.h), logging each change:
 * "queued by Kueue: MESSAGE", an eviction, or no Workload at all (Kueue
 * not installed: the API answers 404).  Never fails the round.
 */
void kround_queue_look(struct kwait *w);
/*
 * On a terminal (s->interactive), while every unfinished Job of w waits for
 * Kueue: redraws the line that says so, with its clock, in place on stderr
 * (kctl start's live line); clears it once a Job runs.  Called about once
 * a second.
 */
void kround_queue_live(struct kwait *w);
/* Writes the session's kube.json as the session opens: nothing waits yet. */
void kround_queue_opened(struct session *s);
/* Records that none of w's Jobs waits for Kueue any more (when one did). */
void kround_queue_clear(struct kwait *w);

#endif
