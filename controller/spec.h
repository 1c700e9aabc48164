/*
 * spec.h - the problem spec: one YAML file that says which kernel to
 * optimize, how to launch and judge it, how to search and where to run.
 * docs/spec.md is the manual (every key, type, default, example).
 *
 * spec_load() is strict: unknown keys, wrong types, out-of-range numbers,
 * missing files, unparsable expressions and unbalanced EVOLVE-BLOCK
 * markers are errors, and every message starts with FILE:LINE:COLUMN and
 * the key path, e.g.
 *   examples/matmul.yaml:14:12: problem.buffers.A.count: unexpected ')' at column 4
 * Relative paths in the spec resolve against the spec file's folder.
 *
 * The problem part (buffers, scalars, launch plans, flops, bytes, shapes,
 * correctness, measurement, limits, device) has the meaning of the same
 * keys in docs/evalbatch.md: the spec holds them as a JSON object in the
 * EvalBatch's own form, so kctl copies them into every batch unchanged.
 */
#ifndef KCTL_SPEC_H
#define KCTL_SPEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

enum spec_render {
	RENDER_DEFINE,  /* tunables become "#define NAME VALUE" lines in the block */
	RENDER_OPTIONS, /* tunables become "-DNAME=VALUE" build options */
};

enum spec_backend { BACKEND_LOCAL, BACKEND_KUBERNETES };
enum spec_proposer { PROPOSER_TUNE, PROPOSER_LLM, PROPOSER_COMMAND };

struct tunable {
	char *name;      /* a C identifier */
	int64_t *values; /* at least one, in the order given */
	size_t nvalues;
};

struct spec {
	char *path; /* the spec file as given */
	char *dir;  /* its folder (absolute), for relative paths */
	char *text; /* the file's bytes, for hashing into the session */

	/* kernel */
	char *name;           /* kernel.name: names sessions and files */
	char *template_path;  /* kernel.template, resolved */
	char *template_src;   /* its contents */
	char *reference_path; /* kernel.reference, resolved */
	char *reference_src;
	char *marker_start;  /* kernel.markers.start, default "EVOLVE-BLOCK-START" */
	char *marker_end;    /* kernel.markers.end, default "EVOLVE-BLOCK-END" */
	char *build_options; /* kernel.build_options, default "" (every program) */
	char *semantics;     /* problem.semantics, may be NULL */

	/*
	 * The EvalBatch "problem" object (buffers, scalars, launch,
	 * reference_launch, flops, bytes; name = kernel.name) and the
	 * "shapes", "correctness", "measurement", "limits" and "device"
	 * objects, already in EvalBatch form (owned; may be NULL when the
	 * spec leaves them to evalpod's defaults, except problem and shapes).
	 */
	json_t *problem, *shapes, *correctness, *measurement, *limits, *device;

	/* tunables */
	struct tunable *tunables;
	size_t ntunables;
	char **constraints; /* integer expressions that must be nonzero */
	size_t nconstraints;
	/* tunables.starts: nstarts points, ntunables values each, in params order */
	int64_t *starts;
	size_t nstarts;
	enum spec_render render;

	/* evaluator */
	enum spec_backend backend;
	char *evalpod; /* evaluator.evalpod: path of the binary, NULL = find it */
	int jobs;      /* evaluator.jobs: evalpod --jobs, 0 = its default */
	char *storage; /* evaluator.storage URL; NULL = file:// under output_dir */
	struct spec_s3 {
		char *endpoint;   /* evaluator.s3.endpoint; NULL = the AWS conventions */
		char *region;     /* NULL = the AWS conventions */
		char *profile;    /* NULL = AWS_PROFILE or "default" */
		char *ca_file;    /* NULL = the system store */
		int addressing;   /* enum s3_addressing: 0 auto, 1 path, 2 virtual */
		int url_margin_s; /* presigned URLs outlive the batch's deadline by this */
	} s3;
	struct spec_kube {
		char *kubeconfig; /* evaluator.kubernetes.kubeconfig; NULL = KUBECONFIG, ~/.kube/config, in-cluster */
		char *context;      /* NULL = current-context */
		char *namespace;    /* NULL = the context's, else "default" */
		char *job_template; /* path; NULL = manifests/eval-job.yaml built into kctl */
		char *image;        /* the evalpod image (required for this backend) */
		char *image_pull_policy;
		char *service_account, *priority_class, *queue;
		char *gpu_resource; /* default nvidia.com/gpu */
		int gpus;           /* per pod, default 1; 0 = no GPU limit */
		json_t *node_selector, *tolerations;
		int parallelism;       /* 0 = every shard at once */
		int variants_per_pod;  /* default 8 */
		int active_deadline_s; /* 0 = from the batch's limits */
		int backoff_limit;     /* default 1 */
		int ttl_s;             /* ttlSecondsAfterFinished, default 3600 */
		int pending_timeout_s; /* a pod pending this long for a reason that will not pass fails its shard; default 600 */
		int api_retry_s; /* the API server may fail (restart, outage) this long in a row; default 300 */

		/* pods of the session at once, across its Jobs (with parallelism, the smaller); 0 = no limit */
		int max_pods_in_flight;
		/* Kueue's WorkloadPriorityClass: the Job's label kueue.x-k8s.io/priority-class */
		char *workload_priority_class;
	} kube;

	/* session */
	int max_rounds;         /* default 10 */
	double target_speedup;  /* vs the reference; 0 = none */
	int max_evaluations;    /* default 200 */
	double max_minutes;     /* wall-clock budget; 0 = none */
	int stagnation_rounds;  /* stop when every lineage is this stagnant (default 3) */
	char *output_dir;       /* resolved; default <spec dir>/runs/<name> */
	int confirm_passes;     /* session.confirm.passes: 0 = no confirmation (default 3) */
	int confirm_candidates; /* session.confirm.candidates: re-timed together (default 4) */
	/* session.github: the session's tracking issue (tracker.c); repo NULL: none */
	struct spec_github {
		char *repo;      /* "owner/name" */
		char *token_env; /* the NAME of the variable holding the token (GITHUB_TOKEN) */
		char *api_url;   /* NULL: $GITHUB_API_URL, else https://api.github.com */
		char *ca_file;   /* resolved; NULL: the system store */
		json_t *labels;  /* the labels, an array of strings (["kctl"]) */
	} github;

	/* cache: the result cache (cache-use.h) */
	int cache_enabled; /* cache.enabled, default 1 */
	double cache_max_age_days; /* cache.max_age_days: older entries are not used; default 30, 0 = no expiry */
	int cache_s3; /* cache.s3: entries also under the s3:// storage's cache/ */

	/* batch */
	int variants_per_round;  /* default 8 */
	int top_k;               /* default 3 */
	int max_active_lineages; /* default 4 */

	/* proposer */
	enum spec_proposer proposer;
	uint64_t seed;         /* proposer.seed, default 1 */
	json_t *proposer_conf; /* the whole proposer object as written */
	struct spec_model {
		/* proposer.llm */
		int provider;      /* enum llm_provider (llm-provider.h) */
		char *model;       /* required for kind llm (unless replaying) */
		char *base_url;    /* NULL: the provider's */
		char *api_key_env; /* the NAME of the variable holding the key; NULL: no key */
		char *ca_file;     /* resolved; NULL: the system store */
		int stream;        /* default 1 */
		double temperature, top_p;  /* NAN: not sent */
		long max_output_tokens;     /* default 8192 */
		int timeout_s;              /* one request, default 600 */
		int attempts;               /* default 5 */
		double price_in, price_out; /* per million tokens; NAN: no price table */
		/* proposer.command */
		char **argv;           /* NULL-terminated; NULL when none */
		int command_timeout_s; /* default 600 */
		char **pass_env;       /* NULL-terminated names; NULL when none */
		/* both */
		int directions;        /* asked per request, default 4 */
		int answer_retries;    /* re-asks of one request, default 2 */
		long max_prompt_bytes; /* default 60000 */
		int reflect;           /* ask for learnings after each round, default 0 */
		int64_t max_tokens;    /* budget (in + out); 0: none */
		double max_cost;       /* budget in the price table's unit; 0: none */
		char *replay;          /* a recorded session's folder (resolved); NULL: ask */
		double weight_model, weight_tune; /* proposer.mix */
	} m;
};

/*
 * Loads and validates the spec at path into s (caller-owned; release with
 * spec_release in every case).  Returns 0, or KERR_PARSE/KERR_INVALID/
 * KERR_RANGE/KERR_IO with msg starting "FILE:LINE:COLUMN: key.path: ".
 * Also checks: template and reference files exist and are readable, the
 * template's markers balance (at least one block), every expression parses,
 * the tunables' names are identifiers and each constraint parses.
 *
 * Last, the problem's expressions are resolved at every shape as evalpod
 * resolves them: counts, integer scalars, flops and bytes over the shape's
 * values; reference_launch (or launch, when there is none) for the
 * reference; launch for the template as written and for the tunables'
 * settings, rendered as the tuner renders them (the starting values, all
 * first values, and each tunable through its values).  An unknown name
 * anywhere is KERR_INVALID; any other failure (division by zero,
 * overflow, a size that is not positive, an int scalar out of range) is
 * KERR_RANGE, except at a tunable setting, which the constraints may
 * exclude.  The message names the shape, e.g.
 *   spec.yaml:18:16: problem.launch[0].global[0]: unknown name 'VTP' at column 13 at shape 'big' (known: n, LS, U)
 */
int spec_load(struct spec *s, const char *path, char *msg, size_t n);
void spec_release(struct spec *s);

/*
 * The value of the limit key (a key of the spec's limits, without "limits.")
 * read from text and checked against the spec's range for it, as a new JSON
 * number in *out; or KERR_INVALID (no such limit, the message lists them) or
 * KERR_RANGE with msg.  For kctl resume --set.
 */
int spec_limit_value(const char *key, const char *text, json_t **out, char *msg, size_t n);

/*
 * The launch geometry of a program (source and build options; either may
 * be NULL): at every shape, the problem's "launch" plan resolved as evalpod
 * resolves it (the program's #defines after its -D options, then the
 * shape's values; common/defines.h).  Returns a new object the caller
 * decrefs, keyed by shape name in the spec's order:
 *   {"big": [{"kernel": "mm", "global": [256, 64], "local": [16, 1]}, ...], ...}
 * ("local" is null where the plan leaves it to the driver), or NULL with
 * msg naming the shape and expression, e.g.
 *   shape 'big': problem.launch[0].global[0] 'ceil_div(N, VTP)': unknown name 'VTP' at column 13 (known: N, WX)
 * A size that is not positive fails too, as it does in evalpod.
 */
json_t *spec_launch_geometry(const struct spec *s, const char *source, const char *options,
			     char *msg, size_t n);

struct blocks;

/*
 * Renders a point of the tunable space (params: one integer per tunable,
 * by name) into a variant of the template the way the spec says (#define
 * lines in the blocks bl, or -D options), so that every caller (the tuner,
 * the spec's expression check, tests, `kctl show`) renders exactly alike
 * (spec-render.c).  *source and *options are malloc'd.  Returns 0 or
 * KERR_INVALID (msg says why).
 */
int spec_render_point(const struct spec *s, const struct blocks *bl, json_t *params, char **source,
		      char **options, char *msg, size_t n);

/* The index of the tunable named name[0..len) in s, or -1. */
int spec_tunable_index(const struct spec *s, const char *name, size_t len);

#endif
