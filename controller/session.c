/*
 * session.c - a session's life outside the rounds: the state database's
 * path, creating a session from its spec (the backend opened and checked,
 * the proposer opened), reopening one (its --set changes and --rounds
 * applied), rewriting a finished session's report, releasing it.  The
 * commands call it (loop.h); it uses the spec, the store, the backends
 * (backend.h), the proposers and the reports (round.h), never the loop
 * that drives rounds (loop.c).
 */
#include "session.h"
#include "cache.h"
#include "round.h"
#include "tracker.h"
#include "loop.h"
#include "backend.h"
#include "handoff.h"
#include "github.h"
#include "s3.h"
#include "err.h"
#include "fileio.h"
#include "log.h"
#include "propose.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *session_state_path(const char *explicit_path)
{
	const char *d = getenv("KCTL_STATE_DIR"), *xdg = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");

	if (explicit_path)
		return xstrdup(explicit_path);
	if (d && *d)
		return xasprintf("%s/kctl.db", d);
	if (xdg && *xdg)
		return xasprintf("%s/kctl/kctl.db", xdg);
	return xasprintf("%s/.local/state/kctl/kctl.db", home && *home ? home : ".");
}

/* What a session is bound to: the spec and the kernels it names. */
static void spec_hash(const struct spec *sp, char out[65])
{
	const char *parts[3] = { sp->text, sp->template_src, sp->reference_src };
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx)
		abort();
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (int i = 0; i < 3; i++)
		EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]) + 1); /* NUL separates */
	EVP_DigestFinal_ex(ctx, md, &len);
	EVP_MD_CTX_free(ctx);
	for (unsigned i = 0; i < len && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

void session_spec_hash(const struct spec *sp, char out[65])
{
	spec_hash(sp, out);
}

/* Loads the spec and everything derived from it into s. */
static int session_prepare(struct session *s, const char *spec_path, char *msg, size_t n)
{
	int rc = spec_load(&s->spec, spec_path, msg, n);

	if (rc)
		return rc;
	if (s->output_root) {
		free(s->spec.output_dir);
		s->spec.output_dir = xstrdup(s->output_root);
	}
	if (s->backend_forced)
		s->spec.backend = s->backend_kind;
	/* file:// is the session folder itself; s3:// is the hand-off of handoff.h */
	if (s->spec.storage && s3_is_url(s->spec.storage) && (rc = handoff_open(s, msg, n)))
		return rc;
	s->backend = backend_of(&s->spec);
	if (s->backend->open && (rc = s->backend->open(s, msg, n)))
		return rc;
	if (s->spec.storage && !s3_is_url(s->spec.storage))
		log_warn("evaluator.storage: the local backend keeps results under "
			 "session.output_dir; '%s' is not used",
			 s->spec.storage);
	if ((rc = blocks_find(s->spec.template_src, s->spec.marker_start, s->spec.marker_end,
			      &s->blocks, msg, n)))
		return rc;
	s->prop = xcalloc(1, sizeof(*s->prop));
	if ((rc = proposer_open(s->prop, &s->spec, msg, n)))
		return rc;
	/* on a cluster evalpod runs in the image, not here: only the local backend checks it */
	return s->backend->check ? s->backend->check(s, msg, n) : 0;
}

int session_create(struct session *s, struct store *st, const char *spec_path, char *msg, size_t n)
{
	char stamp[32], hash[65], *id = NULL;
	time_t now = time(NULL);
	struct tm tm;
	int rc;

	s->st = st;
	if ((rc = session_prepare(s, spec_path, msg, n)))
		return rc;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	/* The random tail keeps apart sessions that other machines start in the
	 * same second from the same spec: their Jobs share a namespace and their
	 * batches a bucket.  The local store is asked too. */
	for (int k = 0; k < 100; k++) {
		json_t *row;

		free(id);
		id = xasprintf("%s-%s-%06x", s->spec.name, stamp,
			       (unsigned)arc4random_uniform(1u << 24));
		row = store_session_get(st, id);
		json_decref(row);
		if (!row)
			break;
	}
	s->id = id;
	s->dir = xasprintf("%s/%s", s->spec.output_dir, id);
	s->rng = s->has_seed ? s->seed : s->spec.seed;
	spec_hash(&s->spec, hash);
	if ((rc = dir_make(s->dir, msg, n)))
		return rc;
	if ((rc = store_begin(st, msg, n)))
		return rc;
	{
		/* Absolute, so that `kctl resume` works from any folder. */
		char *abs = realpath(spec_path, NULL);

		rc = store_session_create(st, id, abs ? abs : spec_path, hash, s->dir, msg, n);
		free(abs);
	}
	if (!rc)
		rc = store_session_set_rng(st, id, s->rng, msg, n);
	if (!rc && s->rounds_cap > 0)
		rc = store_session_set_rounds_cap(st, id, s->rounds_cap, msg, n);
	if (rc) {
		store_rollback(st);
		return rc;
	}
	return store_commit(st, msg, n);
}

static int reopen(struct session *s, struct store *st, const char *id, int confirm, char *msg,
		  size_t n);
static int apply_settings(struct session *s, char *msg, size_t n);

/* A session of kctl eval (its rounds of their own mode) has nothing to go on with. */
static int refuse_eval(struct store *st, const char *id, const char *what, char *msg, size_t n)
{
	json_t *row = store_round_get(st, id, 0);
	const char *mode = json_string_value(json_object_get(row, "mode"));
	int rc = 0;

	if (mode && !strcmp(mode, SESSION_EVAL_MODE))
		rc = kerr_set(msg, n, KERR_INVALID,
			      "session '%s' is an evaluation (kctl eval): there is nothing to %s; "
			      "run kctl eval again, or kctl start for a search",
			      id, what);
	json_decref(row);
	return rc;
}

int session_reopen(struct session *s, struct store *st, const char *id, char *msg, size_t n)
{
	s->st = st;
	if (refuse_eval(st, id, "resume", msg, n))
		return KERR_INVALID;
	return reopen(s, st, id, 0, msg, n);
}

int session_reopen_to_confirm(struct session *s, struct store *st, const char *id, char *msg,
			      size_t n)
{
	s->st = st;
	if (refuse_eval(st, id, "confirm", msg, n))
		return KERR_INVALID;
	return reopen(s, st, id, 1, msg, n);
}

/* The largest report.md read back to see whether it is stale. */
#define REPORT_MAX (64u << 20)

/*
 * Whether dir/report.md fails to say the session is in state: its status
 * block's top-level "state" differs, or there is no readable report; or
 * there is no report.html beside it (a session a kctl before it ended).
 * A folder that is gone (its user cleaned it away) has nothing stale: the
 * state database keeps the session, and no report is made anew there.
 */
static int report_stale(const char *dir, const char *state)
{
	char *path = xasprintf("%s/report.md", dir), *want = NULL, *text = NULL, why[256];
	char *html = xasprintf("%s/report.html", dir);
	struct stat sb;
	int stale = 1;

	if (stat(dir, &sb) && errno == ENOENT)
		stale = 0;
	else if (!access(html, F_OK) &&
		 !file_read(path, REPORT_MAX, &text, NULL, why, sizeof(why))) {
		want = xasprintf("\n  \"state\": \"%s\"", state);
		stale = !strstr(text, want);
	}
	free(text);
	free(want);
	free(html);
	free(path);
	return stale;
}

int session_report_refresh(struct store *st, const char *id, char *msg, size_t n)
{
	json_t *row = store_session_get(st, id);
	const char *state = json_string_value(json_object_get(row, "state"));
	const char *dir = json_string_value(json_object_get(row, "output_dir"));
	struct session s;
	int rc = 0;

	memset(&s, 0, sizeof(s));
	/* a failed or paused session is rewritten by the resume that goes on with it */
	if (state && dir && !strcmp(state, "done") && report_stale(dir, state)) {
		rc = reopen(&s, st, id, 1, msg, n);
		if (!rc)
			rc = learnings_write(&s, msg, n);
		if (!rc)
			rc = report_write(&s, msg, n);
		/* and its tracking issue: what the kctl that ended it did not send */
		if (!rc)
			tracker_start(&s);
		rc = rc ? rc : 1;
		session_release(&s);
	}
	json_decref(row);
	return rc;
}

/*
 * A done session goes on only when --rounds raises its round budget past
 * the rounds it has (the numbers `kctl status` shows: confirmation rounds
 * count); anything else ended it for good.
 */
static int reopen_done(struct session *s, const char *id, char *msg, size_t n)
{
	int last = store_round_last(s->st, id);

	if (s->rounds_cap > last) {
		s->extending = 1;
		return 0;
	}
	return kerr_set(msg, n, KERR_INVALID,
			"session '%s' is done after round %d; to go on, give it a larger round "
			"budget: kctl resume %s --rounds N (N > %d)",
			id, last, id, last);
}

/*
 * The round budget of a reopened session: the --rounds given now
 * (s->rounds_cap), else the one recorded before (row's rounds_cap), else 0
 * (the spec's max_rounds).
 */
static void reopen_rounds_cap(struct session *s, json_t *row)
{
	json_int_t had = json_integer_value(json_object_get(row, "rounds_cap"));

	if (!s->rounds_cap)
		s->rounds_cap = had > 0 && had <= INT_MAX ? (int)had : 0;
}

/* Records a --rounds given to a resume, for the resumes after it. */
static int record_rounds_cap(struct session *s, json_t *row, char *msg, size_t n)
{
	int rc;

	if (!s->rounds_cap ||
	    s->rounds_cap == json_integer_value(json_object_get(row, "rounds_cap")))
		return 0;
	if ((rc = store_begin(s->st, msg, n)))
		return rc;
	if ((rc = store_session_set_rounds_cap(s->st, s->id, s->rounds_cap, msg, n))) {
		store_rollback(s->st);
		return rc;
	}
	return store_commit(s->st, msg, n);
}

static int reopen(struct session *s, struct store *st, const char *id, int confirm, char *msg,
		  size_t n)
{
	json_t *row = store_session_get(st, id);
	const char *path, *want, *state;
	char hash[65];
	int rc;

	s->st = st;
	if (!row && store_check(st, msg, n))
		return KERR_IO;
	if (!row)
		return kerr_set(msg, n, KERR_INVALID, "no session '%s' (see 'kctl status')", id);
	path = json_string_value(json_object_get(row, "spec_path"));
	want = json_string_value(json_object_get(row, "spec_hash"));
	state = json_string_value(json_object_get(row, "state"));
	s->id = xstrdup(id);
	s->dir = xstrdup(json_string_value(json_object_get(row, "output_dir")));
	s->rng = (uint64_t)json_integer_value(json_object_get(row, "rng"));
	rc = session_prepare(s, path, msg, n);
	if (!rc) {
		spec_hash(&s->spec, hash);
		if (strcmp(hash, want))
			rc = kerr_set(msg, n, KERR_INVALID,
				      "the spec '%s' changed since session '%s' began; start a new "
				      "session for the new spec",
				      path, id);
	}
	if (!rc && state && !confirm && !strcmp(state, "done") && report_stale(s->dir, state) &&
	    !learnings_write(s, msg, n) && !report_write(s, msg, n))
		fprintf(stderr,
			"session %s is done; its report was stale and is rewritten: %s/report.md\n",
			id, s->dir);
	reopen_rounds_cap(s, row);
	if (!rc && state && !confirm && !strcmp(state, "done"))
		rc = reopen_done(s, id, msg, n);
	else if (!rc && state && !strcmp(state, "cancelled"))
		rc = kerr_set(msg, n, KERR_INVALID, "session '%s' is %s", id, state);
	if (!rc)
		rc = apply_settings(s, msg, n);
	if (!rc && !confirm)
		rc = record_rounds_cap(s, row, msg, n);
	json_decref(row);
	return rc;
}

/* "limits.KEY" -> KEY, or NULL when key is not of that form. */
static const char *limit_key(const char *key)
{
	return !strncmp(key, "limits.", 7) && key[7] ? key + 7 : NULL;
}

/* What `kctl resume --set` recorded, over the spec just loaded. */
static int apply_settings(struct session *s, char *msg, size_t n)
{
	json_t *rows = store_settings(s->st, s->id), *row;
	size_t i;

	if (!rows)
		return kerr_set(msg, n, KERR_IO, "cannot read the settings of session '%s'", s->id);
	json_array_foreach (rows, i, row) {
		const char *key = limit_key(json_string_value(json_object_get(row, "key")));

		if (!key) /* only limits are ever recorded */
			continue;
		if (!s->spec.limits)
			s->spec.limits = json_object();
		json_object_set(s->spec.limits, key, json_object_get(row, "value"));
	}
	json_decref(rows);
	return 0;
}

/*
 * An assignment's key in *key (malloc'd, also on failure), the limit it
 * names in *lim (inside *key) and its value in *value (a new reference),
 * or KERR_INVALID / KERR_RANGE.
 */
static int set_parse(const char *assignment, char **key, const char **lim, json_t **value,
		     char *msg, size_t n)
{
	const char *eq = strchr(assignment, '=');

	*key = eq ? xstrndup(assignment, (size_t)(eq - assignment)) : xstrdup(assignment);
	*lim = limit_key(*key);
	*value = NULL;
	if (!eq)
		return kerr_set(msg, n, KERR_INVALID, "--set '%s': expected KEY=VALUE", assignment);
	if (!*lim)
		return kerr_set(msg, n, KERR_INVALID,
				"--set '%s': only the spec's limits.* can change in a session "
				"(the rest makes a new session)",
				assignment);
	return spec_limit_value(*lim, eq + 1, value, msg, n);
}

int session_set_check(const char *assignment, char *msg, size_t n)
{
	char *key;
	const char *lim;
	json_t *value;
	int rc = set_parse(assignment, &key, &lim, &value, msg, n);

	json_decref(value);
	free(key);
	return rc;
}

int session_set(struct session *s, const char *assignment, char *msg, size_t n)
{
	char *key;
	const char *lim;
	json_t *value, *was;
	int rc = set_parse(assignment, &key, &lim, &value, msg, n);

	if (!rc) {
		was = json_object_get(s->spec.limits, lim);
		rc = store_setting_add(s->st, s->id, key, value, was, msg, n);
	}
	if (!rc) {
		if (!s->spec.limits)
			s->spec.limits = json_object();
		json_object_set(s->spec.limits, lim, value);
		log_info("session %s: %s set to %s", s->id, key, strchr(assignment, '=') + 1);
	}
	json_decref(value);
	free(key);
	return rc;
}

void session_release(struct session *s)
{
	if (s->prop && s->prop->release)
		proposer_close(s->prop);
	free(s->prop);
	blocks_release(&s->blocks);
	spec_release(&s->spec);
	free(s->id);
	free(s->dir);
	free(s->evalpod);
	s3_free(s->s3);
	github_free(s->gh);
	cache_close(s->cache);
	json_decref(s->evalpod_devices);
	free(s->evalpod_version);
	if (s->backend && s->backend->close)
		s->backend->close(s);
	memset(s, 0, sizeof(*s));
}
