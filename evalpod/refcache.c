/*
 * refcache.c - the reference's outputs kept across a session's batches;
 * the contract is in refcache.h.
 */
#include "refcache.h"
#include "err.h"
#include "fileio.h"
#include "flush.h"
#include "jsonx.h"
#include "judge.h"
#include "log.h"
#include "sbuf.h"
#include "sigv4.h"
#include "xalloc.h"
#include "arraysize.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REFCACHE_MAGIC "evalpod-refcache 1\n"
/* The header: magic, "key HEX\n", "bytes N\n", "sha256 HEX\n". */
#define REFCACHE_HEADER_MAX 256

/* The binaries the reference worker leaves in its directory for the timing worker. */
static const struct {
	const char *what; /* in the entry's key */
	const char *file; /* in the reference worker's directory */
	const char *name; /* in messages */
} binaries[] = {
	{ "binary", "bin.bin", "reference binary" },
	{ "flush binary", FLUSH_BINARY, "cache flush binary" },
};

/* What the reference's outputs depend on, beyond the shape, seed and buffer. */
static int batch_digest(struct refcache *c, const char *exe, const struct batch *b, char *msg,
			size_t n)
{
	static const char *const keys[] = { "schema", "version", "problem", "reference", "device" };
	struct sbuf s = SBUF_INIT;
	char exe_hex[65], *id = NULL;
	unsigned long long size = 0;
	size_t idlen = 0;
	int rc;

	if ((rc = sigv4_sha256_file(exe, exe_hex, &size, msg, n)))
		return rc;
	sbuf_addf(&s, "evalpod %s\n", exe_hex);
	/* The device is picked by the workers: the machine and the selector name it. */
	if (!file_read("/etc/machine-id", 4096, &id, &idlen, msg, n))
		sbuf_addf(&s, "machine %s", id);
	free(id);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(b->doc, keys[i]);
		char *text =
			v ? json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

		sbuf_addf(&s, "\n%s %s", keys[i], text ? text : "null");
		free(text);
	}
	sigv4_sha256_hex(s.buf, s.len, c->digest);
	sbuf_release(&s);
	return 0;
}

int refcache_open(struct refcache *c, const char *dir, const char *exe, const struct batch *b,
		  char *msg, size_t n)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->dir = xstrdup(dir);
	if ((rc = dir_make(dir, msg, n)))
		return rc;
	if (chmod(dir, 0700))
		return kerr_set(msg, n, KERR_IO, "cannot restrict the reference cache '%s': %s",
				dir, strerror(errno));
	return batch_digest(c, exe, b, msg, n);
}

void refcache_close(struct refcache *c)
{
	free(c->dir);
	c->dir = NULL;
}

/* The hex key of one entry: what (e.g. "out 0 17 2" or "binary") under this batch's digest. */
static void entry_key(const struct refcache *c, const struct batch *b, const char *what,
		      size_t shape, char key[65])
{
	json_t *shapes = json_object_get(b->doc, "shapes");
	json_t *values = json_object_get(json_array_get(shapes, shape), "values");
	char *vt = values ? json_dumps(values, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
	char *text = xasprintf("%s\n%s\nshape %s", c->digest, what, vt ? vt : "null");

	sigv4_sha256_hex(text, strlen(text), key);
	free(text);
	free(vt);
}

static char *entry_path(const struct refcache *c, const char *key)
{
	return xasprintf("%s/%s.bin", c->dir, key);
}

/*
 * Parses an entry's header into key, bytes and sum; returns the header's
 * length, or -1 when it is not one.  The payload's bytes are never parsed.
 */
static int header_parse(const char *text, size_t len, char key[65], unsigned long long *bytes,
			char sum[65])
{
	char head[REFCACHE_HEADER_MAX + 1];
	const char *p = text, *end = text + (len < REFCACHE_HEADER_MAX ? len : REFCACHE_HEADER_MAX);
	size_t hlen;

	for (int lines = 0; lines < 4; lines++) {
		p = memchr(p, '\n', (size_t)(end - p));
		if (!p++)
			return -1;
	}
	hlen = (size_t)(p - text);
	memcpy(head, text, hlen);
	head[hlen] = '\0';
	if (strncmp(head, REFCACHE_MAGIC, strlen(REFCACHE_MAGIC)) ||
	    sscanf(head + strlen(REFCACHE_MAGIC), "key %64[0-9a-f] bytes %llu sha256 %64[0-9a-f]",
		   key, bytes, sum) != 3 ||
	    strlen(key) != 64 || strlen(sum) != 64)
		return -1;
	return (int)hlen;
}

/*
 * Reads the entry named key, expecting want bytes (0: any).  Returns 0
 * with *data (caller frees) and *len, 1 when absent, -1 when present but
 * not this entry intact (removed; msg says why).
 */
static int entry_load(const struct refcache *c, const char *key, size_t want, char **data,
		      size_t *len, char *msg, size_t n)
{
	char *path = entry_path(c, key), *text = NULL, hkey[65], hsum[65], sum[65];
	size_t tlen = 0, max = want ? want + REFCACHE_HEADER_MAX : (size_t)256 << 20;
	unsigned long long bytes = 0;
	int used = 0, rc = -1;

	if (access(path, F_OK) && errno == ENOENT) {
		free(path);
		return 1;
	}
	if (file_read(path, max, &text, &tlen, msg, n))
		goto out;
	if ((used = header_parse(text, tlen, hkey, &bytes, hsum)) < 0) {
		snprintf(msg, n, "no valid header");
		goto out;
	}
	if (strcmp(hkey, key)) {
		snprintf(msg, n, "it holds entry %.12s", hkey);
		goto out;
	}
	if (bytes != tlen - (size_t)used || (want && bytes != want)) {
		snprintf(msg, n, "%zu bytes where %llu were expected", tlen - (size_t)used,
			 want ? (unsigned long long)want : bytes);
		goto out;
	}
	sigv4_sha256_hex(text + used, (size_t)bytes, sum);
	if (strcmp(sum, hsum)) {
		snprintf(msg, n, "SHA-256 mismatch");
		goto out;
	}
	*len = (size_t)bytes;
	*data = xmalloc(*len + 1);
	memcpy(*data, text + used, *len);
	rc = 0;
out:
	if (rc)
		unlink(path);
	free(text);
	free(path);
	return rc;
}

static int entry_save(const struct refcache *c, const char *key, const char *data, size_t len,
		      char *msg, size_t n)
{
	char *path = entry_path(c, key), sum[65];
	struct sbuf s = SBUF_INIT;
	int rc;

	sigv4_sha256_hex(data, len, sum);
	sbuf_addf(&s, "%skey %s\nbytes %zu\nsha256 %s\n", REFCACHE_MAGIC, key, len, sum);
	sbuf_add(&s, data, len);
	rc = file_write_atomic(path, s.buf, s.len, msg, n);
	sbuf_release(&s);
	free(path);
	return rc;
}

/* Calls fn for every output the reference provides: (shape, seed, buffer, bytes). */
typedef int entry_fn(struct refcache *c, const struct batch *b, const char *refdir, size_t s,
		     uint64_t seed, size_t i, size_t bytes);

static int each_output(struct refcache *c, const struct batch *b, const uint64_t *tseeds,
		       const char *refdir, entry_fn *fn)
{
	int rc = 0;

	for (size_t s = 0; s < b->nshapes; s++) {
		size_t nseeds = b->correct.nseeds + (b->shapes[s].timed ? WORKER_TIMING_SETS : 0);

		for (size_t k = 0; k < nseeds; k++) {
			uint64_t seed = k < b->correct.nseeds ? b->correct.seeds[k]
							      : tseeds[k - b->correct.nseeds];

			for (size_t i = 0; i < b->nbuffers; i++) {
				size_t bytes = judge_buf_bytes(b, s, i);

				if (bytes && (rc = fn(c, b, refdir, s, seed, i, bytes)))
					return rc;
			}
		}
	}
	return 0;
}

static void output_key(const struct refcache *c, const struct batch *b, size_t s, uint64_t seed,
		       size_t i, char key[65])
{
	char what[96];

	snprintf(what, sizeof(what), "output seed %" PRIu64 " buffer %zu", seed, i);
	entry_key(c, b, what, s, key);
}

static int restore_one(struct refcache *c, const struct batch *b, const char *refdir, size_t s,
		       uint64_t seed, size_t i, size_t bytes)
{
	char key[65], msg[512], *data = NULL, *path;
	size_t len = 0;
	int rc;

	output_key(c, b, s, seed, i, key);
	rc = entry_load(c, key, bytes, &data, &len, msg, sizeof(msg));
	if (rc < 0) {
		c->rejected++;
		log_warn("reference cache entry '%s' rejected and removed (%s): recomputed", key,
			 msg);
	}
	if (rc)
		return 1;
	path = worker_ref_path(refdir, s, seed, i);
	rc = file_write_atomic(path, data, len, msg, sizeof(msg));
	if (rc)
		log_warn("%s", msg);
	free(path);
	free(data);
	return rc ? 1 : 0;
}

int refcache_restore(struct refcache *c, const struct batch *b, const uint64_t *tseeds,
		     const char *refdir)
{
	char key[65], msg[512], *data = NULL, *path;
	size_t len = 0;

	c->rejected = 0;
	if (each_output(c, b, tseeds, refdir, restore_one))
		return 0;
	/* The binaries only spare the timing worker a build: without them, it builds the source. */
	for (size_t i = 0; i < ARRAY_SIZE(binaries); i++) {
		entry_key(c, b, binaries[i].what, b->timed_shape, key);
		if (entry_load(c, key, 0, &data, &len, msg, sizeof(msg)) < 0)
			log_warn("reference cache entry '%s' rejected and removed (%s)", key, msg);
		if (data) {
			path = xasprintf("%s/%s", refdir, binaries[i].file);
			if (file_write_atomic(path, data, len, msg, sizeof(msg)))
				log_warn("%s", msg);
			free(path);
		}
		free(data);
		data = NULL;
	}
	return 1;
}

static int store_one(struct refcache *c, const struct batch *b, const char *refdir, size_t s,
		     uint64_t seed, size_t i, size_t bytes)
{
	char key[65], msg[512], *data = NULL, *path = worker_ref_path(refdir, s, seed, i);
	size_t len = 0;
	int rc;

	output_key(c, b, s, seed, i, key);
	rc = file_read(path, bytes, &data, &len, msg, sizeof(msg));
	if (!rc && len != bytes)
		rc = kerr_set(msg, sizeof(msg), KERR_IO, "'%s' holds %zu bytes, not %zu", path, len,
			      bytes);
	if (!rc)
		rc = entry_save(c, key, data, len, msg, sizeof(msg));
	if (rc)
		log_warn("reference outputs not cached: %s", msg);
	free(data);
	free(path);
	return rc;
}

void refcache_store(struct refcache *c, const struct batch *b, const uint64_t *tseeds,
		    const char *refdir)
{
	char key[65], msg[512], *data = NULL, *path;
	size_t len = 0;

	if (each_output(c, b, tseeds, refdir, store_one))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(binaries); i++) {
		path = xasprintf("%s/%s", refdir, binaries[i].file);
		if (!file_read(path, (size_t)256 << 20, &data, &len, msg, sizeof(msg))) {
			entry_key(c, b, binaries[i].what, b->timed_shape, key);
			if (entry_save(c, key, data, len, msg, sizeof(msg)))
				log_warn("%s not cached: %s", binaries[i].name, msg);
		}
		free(data);
		data = NULL;
		free(path);
	}
}

/* Whether seeds[0..WORKER_TIMING_SETS) are usable timing seeds for b: distinct, none a correctness seed. */
static int seeds_ok(const struct batch *b, const uint64_t *seeds)
{
	for (unsigned k = 0; k < WORKER_TIMING_SETS; k++) {
		for (unsigned j = 0; j < k; j++)
			if (seeds[j] == seeds[k])
				return 0;
		for (size_t i = 0; i < b->correct.nseeds; i++)
			if (b->correct.seeds[i] == seeds[k])
				return 0;
	}
	return 1;
}

void refcache_seeds(struct refcache *c, const struct batch *b, uint64_t *seeds)
{
	char *path = xasprintf("%s/timing-seeds", c->dir), *text = NULL, msg[512];
	size_t len = 0;

	if (!file_read(path, 256, &text, &len, msg, sizeof(msg)) &&
	    !worker_parse_seeds(text, seeds) && seeds_ok(b, seeds)) {
		log_info("timing seeds: the session's, from the reference cache");
	} else {
		char *line;

		worker_draw_seeds(b, seeds);
		line = worker_seeds_text(seeds);
		if (file_write_atomic(path, line, strlen(line), msg, sizeof(msg)))
			log_warn("timing seeds not kept for the session: %s", msg);
		else
			log_info(
				"timing seeds: drawn for the session, kept in the reference cache");
		free(line);
	}
	free(text);
	free(path);
}

static void entry_drop(const struct refcache *c, const char *key)
{
	char *path = entry_path(c, key);

	unlink(path);
	free(path);
}

/*
 * The key of program p's anchor at shape s: what it depends on beyond the
 * batch's digest (its source and build options, what one sample is: the
 * cache flush and the runs per sample; and the timing seeds), hashed into
 * the entry's name.  How many samples are taken, and in what order, change
 * how well a speedup is known, not what it is: a confirmation that only
 * takes more samples shares its anchors with the rounds.
 */
static void anchor_key(const struct refcache *c, const struct batch *b, const uint64_t *tseeds,
		       size_t s, const struct source_spec *p, char key[65])
{
	const struct measure_spec *m = &b->measure;
	char sum[65], what[80];
	struct sbuf t = SBUF_INIT;

	sbuf_addf(&t, "source %zu\n", strlen(p->source));
	sbuf_adds(&t, p->source);
	sbuf_addf(&t, "\noptions %zu\n", strlen(p->options));
	sbuf_adds(&t, p->options);
	sbuf_addf(&t, "\nflush %d %" PRId64 " %d\nsample_min_ms %.17g", m->flush, m->flush_bytes,
		  m->flush_kind, m->sample_min_ms);
	sbuf_adds(&t, "\nseeds");
	for (unsigned k = 0; k < WORKER_TIMING_SETS; k++)
		sbuf_addf(&t, " %" PRIu64, tseeds[k]);
	sigv4_sha256_hex(t.buf, t.len, sum);
	snprintf(what, sizeof(what), "anchor %s", sum);
	entry_key(c, b, what, s, key);
	sbuf_release(&t);
}

static int anchor_ok(const struct ref_anchor *a)
{
	return a->ratio > 0 && a->ratio < 1e300 && a->links >= 0 &&
	       a->links <= REFCACHE_ANCHOR_LINKS;
}

/* The anchor in entry key: 0 with *a set, 1 when there is none (a bad one logged, removed). */
static int anchor_load(struct refcache *c, const char *key, struct ref_anchor *a)
{
	char msg[512], *data = NULL, end;
	size_t len = 0;
	int rc = entry_load(c, key, 0, &data, &len, msg, sizeof(msg));

	if (!rc) {
		data[len] = '\0';
		if (sscanf(data, "speedup_vs_reference %lf\nlinks %d\n%c", &a->ratio, &a->links,
			   &end) != 2 ||
		    !anchor_ok(a)) {
			snprintf(msg, sizeof(msg), "not an anchor");
			entry_drop(c, key);
			rc = -1;
		}
	}
	if (rc < 0)
		log_warn("reference cache entry '%s' rejected and removed (%s): the reference "
			 "is timed",
			 key, msg);
	free(data);
	return rc ? 1 : 0;
}

int refcache_anchor_get(struct refcache *c, const struct batch *b, const uint64_t *tseeds, size_t s,
			const struct source_spec *p, struct ref_anchor *a)
{
	char key[65];

	anchor_key(c, b, tseeds, s, p, key);
	return anchor_load(c, key, a);
}

void refcache_anchor_put(struct refcache *c, const struct batch *b, const uint64_t *tseeds,
			 size_t s, const struct source_spec *p, const struct ref_anchor *a)
{
	struct ref_anchor old;
	char key[65], msg[512], text[96];

	if (!anchor_ok(a))
		return;
	anchor_key(c, b, tseeds, s, p, key);
	if (!anchor_load(c, key, &old) && old.links < a->links)
		return;
	snprintf(text, sizeof(text), "speedup_vs_reference %.17g\nlinks %d\n", a->ratio, a->links);
	if (entry_save(c, key, text, strlen(text), msg, sizeof(msg)))
		log_warn("anchor of '%s' not cached: %s", p->id, msg);
}
