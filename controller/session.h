/*
 * session.h - one optimisation session: its spec, its state in the store,
 * its folder, and what any layer may read of its recorded state (state.c).
 * The session's services are in services.h, the steps of a round in
 * round.h and pack.h, the loop that drives it in loop.h
 * (docs/architecture.md).
 *
 * Output folder of a session (spec session.output_dir / SESSION-ID):
 *   rounds/rNNN/batch.json      the EvalBatch evalpod ran (retries: batch-N.json)
 *   rounds/rNNN/results/        evalpod's --out (ID.json, summary.json, artifacts)
 *   rounds/rNNN/evalpod.log     evalpod's output
 *   rounds/rNNN/lock            held (flock) by the evalpod of the round while it runs
 *   learnings.md                failure patterns [Fnnn] and successes [Snnn]
 *   best.cl                     the best kernel, its figures in a header comment
 *   report.md                   the status, the best variants, every round's decision
 *   session.lock                held (flock) by the kctl driving the session
 *
 * The state database holds every session: --state FILE, else
 * $KCTL_STATE_DIR/kctl.db, else $XDG_STATE_HOME/kctl/kctl.db, else
 * ~/.local/state/kctl/kctl.db.
 */
#ifndef KCTL_SESSION_H
#define KCTL_SESSION_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "mutate.h"
#include "spec.h"
#include "store.h"

struct backend;
struct cache;
struct github;
struct proposer;

struct session {
	char *id;
	char *dir; /* output folder of this session */
	struct spec spec;
	struct blocks blocks;  /* of the template */
	struct store *st;      /* borrowed */
	struct proposer *prop; /* the spec's proposer (propose.h), owned */
	uint64_t rng;
	double started_ms; /* when this process began driving it */
	int interactive;   /* progress line on a terminal */
	int step;          /* --step: ask before each next round */
	int rounds_cap;    /* --rounds N: 0 = spec's max_rounds */
	int has_seed;      /* start --seed N: the proposer's seed instead of the spec's */
	uint64_t seed;
	double eval_s;     /* seconds of rounds this process drove, and */
	int evals;         /* the evaluations in them: the ETA's measured rate */
	int extending;     /* a done session reopened with a larger --rounds: its
			    * last "stop" does not end it (reopen sets, next_step clears) */
	const char *again; /* options a "go on with: kctl resume ID" hint repeats
			    * (" --state FILE" or ""; borrowed; NULL: none) */
	char *evalpod;     /* the evalpod binary used */
	struct s3 *s3;     /* evaluator.storage when it is s3:// (handoff.h), else NULL */
	const struct backend *backend; /* where rounds are evaluated (backend.h) */
	struct kube *kube; /* the cluster of the kubernetes backend (kround.h), else NULL */
	double deadline_s; /* raised check deadline after a reference ran past it (pack.c) */
	struct github *gh; /* the tracking issue's client (tracker.c), made when first needed */
	/* kctl eval sets these before session_create; they replace the spec's */
	const char *output_root; /* NULL: session.output_dir */
	int backend_forced;      /* backend_kind replaces evaluator.backend */
	enum spec_backend backend_kind;
	/* the result cache (cache-use.h) */
	int no_cache;            /* --no-cache: no lookups, no writes */
	struct cache *cache;     /* opened when first needed (cache-use.c); NULL: off or not yet */
	json_t *evalpod_devices; /* the devices the keys name: `evalpod devices -o json` (local), */
	char *evalpod_version;   /* and `evalpod version`; on Kubernetes from the first result */
};

/* The mode of the one round of a kctl eval session (loop.h, session_eval). */
#define SESSION_EVAL_MODE "eval"

/* Exit statuses of kctl commands. */
enum {
	KCTL_EXIT_OK = 0,
	KCTL_EXIT_FAIL = 1, /* the session failed, or bad input */
	KCTL_EXIT_USAGE = 2,
	KCTL_EXIT_INFRA = 3, /* no device, evalpod missing, state database unusable */
};

/* The rounds the session may run: its --rounds cap, else the spec's max_rounds. */
static inline int session_max_rounds(const struct session *s)
{
	return s->rounds_cap ? s->rounds_cap : s->spec.max_rounds;
}

/* --- its recorded state (state.c) ----------------------------------------- */

/* Folder of round r (malloc'd). */
char *session_round_dir(const struct session *s, int round);

/* Variant id of the k-th proposal of a round: "r03-v002"; round 0: "r00-start". */
char *session_variant_id(int round, size_t k);

/* The incumbent: the session's best variant so far (a new JSON from
 * store_variant_get with its figures), or NULL before any ok result. */
json_t *session_incumbent(struct session *s);

/*
 * session.lock records who holds it: "pid N\nboot ID\nstart TICKS\nhost
 * NAME\npidns pid:[INODE]\n" (the boot id and the process's start time tell
 * a pid reused after a reboot or by another process apart; the host name
 * and the pid namespace tell a kctl in a container or on another machine
 * sharing the state folder, whose pid means nothing here).
 * session_owner_record writes it into the lock file fd just locked;
 * returns 0 or -1 (errno set).
 */
int session_owner_record(int fd);

/* What session.lock's record says of the kctl it names, seen from here. */
enum session_owner {
	SESSION_OWNER_UNKNOWN,   /* no record, or one without a pid */
	SESSION_OWNER_ALIVE,     /* here, and still running */
	SESSION_OWNER_GONE,      /* here (host, boot, pid namespace) and gone, or
				    this host rebooted since */
	SESSION_OWNER_ELSEWHERE, /* another host or pid namespace: cannot tell */
};

struct session_owner_info {
	long pid;
	char host[256];    /* the host name recorded */
	int other_machine; /* ELSEWHERE: another boot id too (else a container here) */
};

/*
 * Reads dir/session.lock (old records without the pidns line too) into o
 * and says what its kctl is from here; see enum session_owner.
 */
enum session_owner session_owner_check(const char *dir, struct session_owner_info *o);

/* The session's status as `kctl status -o json` prints it (new reference). */
json_t *session_status_json(struct store *st, const char *id);

/* The result evalpod wrote for id in round r's folder (new reference), or NULL. */
json_t *session_round_result(struct session *s, int round, const char *id);
/* What round r evaluates: its variants, or the variants a confirmation re-times. */
json_t *round_programs(struct session *s, int round);

/* The spec's hash as sessions record it (spec_hash of the sessions table):
 * SHA-256 of the spec file, the template and the reference, as 64 hex
 * digits and a NUL in out.  kctl export checks a session's spec with it. */
void session_spec_hash(const struct spec *sp, char out[65]);

#endif
