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

#endif
