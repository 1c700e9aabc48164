/*
 * batch.h - the EvalBatch document (schema "evalpod.batch", version 1).
 *
 * An EvalBatch tells evalpod what problem to run, on which shapes, the
 * reference and baseline sources, the variants to judge, and how to measure
 * and where to put results.  docs/evalbatch.md is the user-facing manual
 * with a full example; this header is the in-memory form.
 *
 * batch_parse() validates the whole document strictly: unknown keys, wrong
 * types, out-of-range numbers, unparsable expressions, dangling names
 * (an argument naming no buffer or scalar), duplicate ids are errors whose
 * message starts with the JSON path at fault, e.g.
 *   "$.problem.launch[0].global[1]: unexpected ')' at column 7"
 */
#ifndef EVALPOD_BATCH_H
#define EVALPOD_BATCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "expr.h"

#define BATCH_SCHEMA    "evalpod.batch"
#define BATCH_VERSION   1
#define BATCH_MAX_BYTES (64u << 20) /* largest batch document accepted */
#define BATCH_ID_MAX    128         /* ids: [A-Za-z0-9._-]{1,128} */

enum elem_type {
	ELEM_FLOAT,  /* "float"  (4 bytes) */
	ELEM_DOUBLE, /* "double" (8) */
	ELEM_INT,    /* "int"    (4, signed) */
	ELEM_UINT,   /* "uint"   (4) */
	ELEM_LONG,   /* "long"   (8, signed) */
	ELEM_ULONG,  /* "ulong"  (8) */
	ELEM_NR
};

/* Returns the OpenCL C name ("float"...) and the element size in bytes. */
const char *elem_type_name(enum elem_type t);
size_t elem_type_size(enum elem_type t);
int elem_type_is_float(enum elem_type t);

enum buf_role {
	ROLE_INPUT,   /* "input": initialised, must be left unchanged */
	ROLE_OUTPUT,  /* "output": poisoned before each run, every element checked */
	ROLE_INOUT,   /* "inout": initialised, compared after the run */
	ROLE_SCRATCH, /* "scratch": zeroed, not compared (workspace) */
};

enum init_dist {
	INIT_ZERO,    /* {"dist":"zero"} */
	INIT_CONST,   /* {"dist":"const","value":v} */
	INIT_UNIFORM, /* {"dist":"uniform","lo":a,"hi":b}  (default -1..1) */
	INIT_NORMAL,  /* {"dist":"normal","mean":m,"std":s} (default 0,1) */
	INIT_INT,     /* {"dist":"int","lo":a,"hi":b} integers in [a, b] */
	INIT_IOTA,    /* {"dist":"iota"} element i = i */
};

struct init_spec {
	enum init_dist dist;
	double a, b; /* lo/hi, mean/std, or value in a */
};

struct buf_spec {
	char *name;
	enum elem_type type;
	char *count; /* element count expression over the shape */
	enum buf_role role;
	struct init_spec init; /* ignored for output and scratch */
};

struct scalar_spec {
	char *name;
	enum elem_type type;
	char *expr;    /* integer types: expression over the shape */
	double fvalue; /* float/double: literal value */
};

enum arg_kind { ARG_BUFFER, ARG_SCALAR, ARG_LOCAL };

struct arg_spec {
	enum arg_kind kind;
	size_t index;      /* into buffers[] or scalars[] */
	char *local_bytes; /* ARG_LOCAL: byte count expression ({"local": "expr"}) */
};

struct launch_spec {
	char *kernel;
	struct arg_spec *args;
	size_t nargs;
	unsigned dims;   /* 1..3 = length of global */
	char *global[3]; /* expressions over shape + the variant's #defines */
	char *local[3];  /* all NULL when "local" is absent or null */
};

struct shape_spec {
	char *name;
	int timed; /* timed: at least one shape of a batch is (the first is the primary) */
	struct expr_vars vars; /* integer values, e.g. M=512 */
};

/* A program: the reference, the baseline or a variant. */
struct source_spec {
	char *id;        /* "reference" for the reference */
	char *parent;    /* may be NULL */
	char *source;    /* OpenCL C text */
	char *options;   /* clBuildProgram options, never NULL ("" if none) */
	char *rationale; /* free text from the proposer, may be NULL */
};

/*
 * How the caches are flushed before a sample (docs/evalbatch.md): auto takes
 * the lines flush where the device's memory is evalpod's own (a CPU device)
 * and flush_bytes is 0, the read flush otherwise; read always takes the read flush.
 */
enum flush_kind { FLUSH_AUTO = 0, FLUSH_READ = 1 };

struct measure_spec {
	int warmup;           /* untimed launches before sampling (default 2) */
	int min_samples;      /* default 10 */
	int max_samples;      /* default 200 */
	double min_time_ms;   /* default 100: total timed time per program */
	double max_time_ms;   /* default 10000 */
	double precision;     /* default 0.01: done once the median is known this well */
	double outclass;      /* default 2: done once this many times slower (0: off) */
	double sample_min_ms; /* a sample repeats the plan until this long (default 1) */
	int flush;            /* flush caches between samples (default 1) */
	int64_t flush_bytes;  /* the read flush's; 0: 2 x the device's global cache size */
	int flush_kind;       /* FLUSH_AUTO or FLUSH_READ (default FLUSH_AUTO) */
	uint64_t order_seed;  /* seeds the interleaving order (default 1) */
	int peak_probe; /* sample the FMA peak in every round beside the programs (default 0) */
};

struct correct_spec {
	double atol, rtol; /* |out - ref| <= atol + rtol * |ref| */
	uint64_t *seeds;   /* at least 3 */
	size_t nseeds;
	int determinism; /* run twice and compare (default 1) */
};

struct limit_spec {
	double compile_timeout_s; /* compile + first launch, per variant (default 120) */
	double run_timeout_s;     /* correctness, per variant (default 120) */
	double time_timeout_s;    /* the whole timing phase (default 900) */
	size_t log_max_bytes;     /* build log kept in results (default 16384) */
	double peak_margin;       /* results above peak * margin are invalid (1.15) */
	size_t memory_mb;         /* resident memory of one worker, MiB (default 8192) */
};

struct device_spec {
	char *platform; /* substring of the platform name, may be NULL */
	char *device;   /* substring of the device name, may be NULL */
	int type;       /* 0 any, 1 gpu, 2 cpu, 3 accelerator */
	int index;      /* among the matching devices (default 0) */
};

/* Per-variant upload targets (presigned PUT URLs). */
struct output_url {
	char *id;     /* variant id */
	char *result; /* URL for the result JSON, may be NULL */
	size_t nart;
	struct {
		char *name;
		char *url;
	} * art; /* artifact name -> URL */
};

struct output_spec {
	char *dir;     /* may be NULL; --out overrides */
	char *summary; /* URL for the batch summary, may be NULL */
	struct output_url *urls;
	size_t nurls;
};

struct batch {
	char *batch_id;
	char *problem_name;
	char *semantics;
	struct buf_spec *buffers;
	size_t nbuffers;
	struct scalar_spec *scalars;
	size_t nscalars;
	struct launch_spec *launch; /* candidates and baseline */
	size_t nlaunch;
	struct launch_spec *ref_launch; /* reference (== launch when not given) */
	size_t nref_launch;
	int ref_launch_owned;
	char *flops; /* expression, may be NULL */
	char *bytes; /* expression, may be NULL */
	struct shape_spec *shapes;
	size_t nshapes;
	size_t timed_shape; /* index into shapes: the primary timed shape (the first timed) */
	struct source_spec reference;
	struct source_spec *baseline; /* may be NULL */
	struct source_spec *variants;
	size_t nvariants;
	struct measure_spec measure;
	struct correct_spec correct;
	struct limit_spec limits;
	struct device_spec device;
	struct output_spec outputs;
	json_t *doc; /* the parsed document (owned) */
};

/*
 * Parses and validates text (len bytes) into b (caller-owned, released with
 * batch_release even on failure).  Returns 0, or KERR_PARSE/KERR_RANGE/
 * KERR_INVALID with msg starting with the JSON path at fault.
 */
int batch_parse(struct batch *b, const char *text, size_t len, char *msg, size_t n);
void batch_release(struct batch *b);

/* Finds a variant by id; NULL if absent. */
const struct source_spec *batch_variant(const struct batch *b, const char *id);

/* A worker's program by id: "reference", the baseline's id or a variant's; NULL if absent. */
const struct source_spec *batch_source(const struct batch *b, const char *id);

/* Finds the upload targets of id; NULL if none. */
const struct output_url *batch_output_url(const struct batch *b, const char *id);

/*
 * An expression of the problem (problem.flops, problem.bytes) evaluated
 * over the timed shape's values into *out.  Returns 0, or -1 when text is
 * NULL or does not evaluate.
 */
int batch_timed_figure(const struct batch *b, const char *text, double *out);

/* The same over the values of shape s (any shape, timed or not). */
int batch_shape_figure(const struct batch *b, size_t s, const char *text, double *out);

/*
 * How many shapes are timed: 1, or more when the batch times several shape
 * buckets (each program is then timed on each; b->timed_shape, the first,
 * stays the primary whose figures are a result's `performance`).
 */
size_t batch_ntimed(const struct batch *b);

/*
 * The values a launch plan's expressions see for program src at shape s:
 * the shape's values, with the program's #defines and -D options merged
 * over them (defines.h), added to vars.
 */
void batch_program_vars(const struct batch *b, const struct source_spec *src, size_t s,
			struct expr_vars *vars);

#endif
