/*
 * judge.c - the parent's side of judging outputs; see judge.h.
 */
#include "judge.h"
#include "err.h"
#include "expr.h"
#include "jsonx.h"
#include "world.h"
#include "xalloc.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Elements of buffer i at shape s; 0 when the count does not evaluate. */
static size_t buf_count(const struct batch *b, size_t s, size_t i)
{
	char why[256];
	int64_t v = 0;

	if (expr_eval(b->buffers[i].count, expr_vars_lookup, (void *)&b->shapes[s].vars, &v, why,
		      sizeof(why)) ||
	    v <= 0)
		return 0;
	return (size_t)v;
}

static int is_out(const struct buf_spec *bs)
{
	return bs->role == ROLE_OUTPUT || bs->role == ROLE_INOUT;
}

size_t judge_buf_bytes(const struct batch *b, size_t s, size_t i)
{
	return is_out(&b->buffers[i]) ? buf_count(b, s, i) * elem_type_size(b->buffers[i].type) : 0;
}

size_t judge_out_bytes(const struct batch *b, size_t s)
{
	size_t total = 0;

	for (size_t i = 0; i < b->nbuffers; i++)
		if (is_out(&b->buffers[i]))
			total += buf_count(b, s, i) * elem_type_size(b->buffers[i].type);
	return total;
}

size_t judge_check_expected(const struct batch *b)
{
	return b->nshapes * b->correct.nseeds * (b->correct.determinism ? 2 : 1);
}

/* Maps refdir's file for (shape, seed, buffer) and unlinks it. */
static int map_ref(struct judge_ref *r, const char *refdir, size_t s, uint64_t seed, size_t i,
		   size_t bytes, char *msg, size_t n)
{
	char *path = worker_ref_path(refdir, s, seed, i);
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), rc = 0;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size != bytes) {
		rc = kerr_set(msg, n, KERR_IO, "reference output '%s' is missing or not %zu bytes",
			      path, bytes);
	} else {
		r->p = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
		r->len = bytes;
		if (r->p == MAP_FAILED) {
			r->p = NULL;
			rc = kerr_set(msg, n, KERR_IO, "cannot map '%s': %s", path,
				      strerror(errno));
		}
	}
	/* From here on the answer has no name any process could open. */
	unlink(path);
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

int judge_open(struct judge *j, const struct batch *b, const char *refdir, const uint64_t *tseeds,
	       size_t nprogs, char *msg, size_t n)
{
	size_t nb = b->nbuffers, ns = b->correct.nseeds;
	int rc = 0;

	memset(j, 0, sizeof(*j));
	j->b = b;
	memcpy(j->tseeds, tseeds, sizeof(j->tseeds));
	j->check = xcalloc(b->nshapes * ns * nb + 1, sizeof(*j->check));
	j->timed = xcalloc(b->nshapes * WORKER_TIMING_SETS * nb + 1, sizeof(*j->timed));
	j->tshape = b->timed_shape;
	j->recs = xcalloc(nprogs + 1, sizeof(*j->recs));
	j->nrecs = nprogs;
	j->trecs = xcalloc(nprogs + 2, sizeof(*j->trecs));
	j->ntrecs = nprogs + 1;
	for (size_t s = 0; s < b->nshapes && !rc; s++)
		for (size_t k = 0; k < ns && !rc; k++)
			for (size_t i = 0; i < nb && !rc; i++)
				if (is_out(&b->buffers[i]))
					rc = map_ref(&j->check[(s * ns + k) * nb + i], refdir, s,
						     b->correct.seeds[k], i,
						     buf_count(b, s, i) *
							     elem_type_size(b->buffers[i].type),
						     msg, n);
	for (size_t s = 0; s < b->nshapes && !rc; s++)
		for (size_t k = 0; k < WORKER_TIMING_SETS && b->shapes[s].timed && !rc; k++)
			for (size_t i = 0; i < nb && !rc; i++)
				if (is_out(&b->buffers[i]))
					rc = map_ref(
						&j->timed[(s * WORKER_TIMING_SETS + k) * nb + i],
						refdir, s, tseeds[k], i,
						buf_count(b, s, i) *
							elem_type_size(b->buffers[i].type),
						msg, n);
	for (size_t p = 0; p < nprogs; p++)
		j->recs[p].shapes = json_array();
	return rc;
}

static void record_release(struct judge_record *r)
{
	free(r->status);
	free(r->kind);
	free(r->message);
	free(r->first);
	json_decref(r->shapes);
	memset(r, 0, sizeof(*r));
}

void judge_time_shape(struct judge *j, size_t s)
{
	assert(s < j->b->nshapes && j->b->shapes[s].timed);
	j->tshape = s;
	judge_reset_timed(j);
}

void judge_reset_timed(struct judge *j)
{
	for (size_t p = 0; p < j->ntrecs; p++)
		record_release(&j->trecs[p]);
}

static void unmap_all(struct judge_ref *r, size_t count)
{
	for (size_t i = 0; r && i < count; i++)
		if (r[i].p)
			munmap(r[i].p, r[i].len);
	free(r);
}

void judge_close(struct judge *j)
{
	if (!j->b)
		return;
	unmap_all(j->check, j->b->nshapes * j->b->correct.nseeds * j->b->nbuffers);
	unmap_all(j->timed, j->b->nshapes * WORKER_TIMING_SETS * j->b->nbuffers);
	for (size_t p = 0; p < j->nrecs; p++)
		record_release(&j->recs[p]);
	judge_reset_timed(j);
	free(j->recs);
	free(j->trecs);
	memset(j, 0, sizeof(*j));
}

void judge_chan_init(struct judge_chan *c)
{
	memset(c, 0, sizeof(*c));
	c->ctl = c->ctl_child = c->shm_child = -1;
}

int judge_chan_open(struct judge_chan *c, struct judge *j, size_t bytes, char *msg, size_t n)
{
	int sv[2], fd;

	judge_chan_init(c);
	c->j = j;
	c->len = bytes ? bytes : 1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return kerr_set(msg, n, KERR_IO, "socketpair: %s", strerror(errno));
	c->ctl = sv[0];
	c->ctl_child = sv[1];
	fd = memfd_create("evalpod-outputs", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)c->len) ||
	    /* the worker can neither shrink it (SIGBUS in the parent) nor grow it */
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		if (fd >= 0)
			close(fd);
		return kerr_set(msg, n, KERR_IO, "shared memory for outputs: %s", strerror(errno));
	}
	c->shm = mmap(NULL, c->len, PROT_READ, MAP_SHARED, fd, 0);
	if (c->shm == MAP_FAILED) {
		c->shm = NULL;
		close(fd);
		return kerr_set(msg, n, KERR_IO, "mapping shared memory: %s", strerror(errno));
	}
	c->shm_child = fd;
	return 0;
}

void judge_chan_close(struct judge_chan *c)
{
	if (c->shm)
		munmap(c->shm, c->len);
	if (c->ctl >= 0)
		close(c->ctl);
	if (c->ctl_child >= 0)
		close(c->ctl_child);
	if (c->shm_child >= 0)
		close(c->shm_child);
	judge_chan_init(c);
}

static json_t *stats_json(const char *name, const struct cmp_stats *s)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "buffer", name, "count",
			      (json_int_t)s->count, "mismatches", (json_int_t)s->mismatches,
			      "unwritten", (json_int_t)s->unwritten, "nonfinite",
			      (json_int_t)s->nonfinite, "worst_index", (json_int_t)s->worst);

	jx_set_real(o, "max_abs", s->max_abs);
	jx_set_real(o, "mean_abs", s->mean_abs);
	jx_set_real(o, "rel_l2", s->rel_l2);
	jx_set_real(o, "worst_got", s->worst_got);
	jx_set_real(o, "worst_ref", s->worst_ref);
	return o;
}

/*
 * Compares the outputs in shared memory (at shape s) with refs[]; appends
 * per-buffer figures to figs (may be NULL).  Returns a verdict with
 * rep->message set on failure.
 */
static int compare(struct judge_chan *c, size_t s, const struct judge_ref *refs, enum poison p,
		   json_t *figs, struct judge_rep *rep)
{
	const struct batch *b = c->j->b;
	size_t off = 0;
	int verdict = JUDGE_PASS;

	for (size_t i = 0; i < b->nbuffers; i++) {
		struct wbuf wb = { .spec = &b->buffers[i] };
		struct cmp_stats st;
		const char *got;

		if (!is_out(wb.spec))
			continue;
		wb.count = buf_count(b, s, i);
		wb.esize = elem_type_size(wb.spec->type);
		wb.bytes = wb.count * wb.esize;
		if (off + wb.bytes > c->len || refs[i].len != wb.bytes) {
			snprintf(rep->message, sizeof(rep->message), "outputs do not fit");
			return JUDGE_REFUSED;
		}
		got = (const char *)c->shm + off;
		off += wb.bytes;
		/* Without figures to keep, a buffer with nothing suspect has passed. */
		if (!figs && !world_suspects(&wb, got, refs[i].p, b->correct.atol, b->correct.rtol,
					     wb.spec->role == ROLE_OUTPUT, p))
			continue;
		world_compare(&wb, got, refs[i].p, b->correct.atol, b->correct.rtol,
			      wb.spec->role == ROLE_OUTPUT, p, &st);
		if (figs)
			json_array_append_new(figs, stats_json(wb.spec->name, &st));
		if (verdict != JUDGE_PASS)
			continue;
		if (st.unwritten) {
			verdict = JUDGE_UNWRITTEN;
			snprintf(rep->message, sizeof(rep->message),
				 "left %zu of %zu elements of '%s' unwritten (first at index %zu)",
				 st.unwritten, st.count, wb.spec->name, st.first_unwritten);
		} else if (st.mismatches) {
			verdict = JUDGE_WRONG;
			snprintf(rep->message, sizeof(rep->message),
				 "'%s' differs from the reference in %zu of %zu elements; worst at "
				 "index %zu: got %.9g, expected %.9g (max abs error %.3g)",
				 wb.spec->name, st.mismatches, st.count, st.worst, st.worst_got,
				 st.worst_ref, st.max_abs);
		}
	}
	return verdict;
}

static void record_failure(struct judge_record *r, const char *status, const char *kind,
			   const char *message)
{
	if (r->failed)
		return;
	r->failed = 1;
	r->status = xstrdup(status);
	r->kind = xstrdup(kind);
	r->message = xstrdup(message);
}

/* The parent's correctness figures for (shape s, seed k): found or added. */
static json_t *seed_entry(struct judge_record *r, const struct batch *b, size_t s, size_t k)
{
	json_t *sh, *seeds, *e;

	while (json_array_size(r->shapes) <= s)
		json_array_append_new(r->shapes, json_null());
	if (!json_is_object(sh = json_array_get(r->shapes, s))) {
		sh = json_pack("{s:s, s:[]}", "shape", b->shapes[s].name, "seeds");
		json_array_set_new(r->shapes, s, sh);
	}
	seeds = json_object_get(sh, "seeds");
	while (json_array_size(seeds) <= k)
		json_array_append_new(seeds, json_null());
	e = json_array_get(seeds, k);
	if (!json_is_object(e)) {
		e = json_pack("{s:I}", "seed", (json_int_t)b->correct.seeds[k]);
		json_array_set_new(seeds, k, e);
	}
	return e;
}

static int serve_check(struct judge_chan *c, const struct judge_req *q, struct judge_rep *rep)
{
	const struct batch *b = c->j->b;
	size_t ns = b->correct.nseeds, nb = b->nbuffers;
	struct judge_record *r = c->rec;
	json_t *e, *figs = json_array();
	int v;

	if (!r || q->shape >= b->nshapes || q->seed >= ns || q->run > 1) {
		json_decref(figs);
		return -1;
	}
	e = seed_entry(r, b, q->shape, q->seed);
	json_object_set_new(e, q->run ? "rerun" : "buffers", figs);
	v = compare(c, q->shape, &c->j->check[(q->shape * ns + q->seed) * nb],
		    q->run ? POISON_B : POISON_A, figs, rep);
	if (v == JUDGE_REFUSED)
		return -1;
	r->judged++;
	if (v == JUDGE_PASS && q->run == 0) {
		size_t bytes = judge_out_bytes(b, q->shape);

		free(r->first);
		r->first = xmalloc(bytes + 1);
		memcpy(r->first, c->shm, bytes);
	} else if (v == JUDGE_PASS && r->first) {
		json_object_set_new(
			e, "bitwise_identical",
			json_boolean(!memcmp(r->first, c->shm, judge_out_bytes(b, q->shape))));
	}
	if (v == JUDGE_PASS) {
		r->passed++;
	} else if (q->run) {
		char why[sizeof(rep->message)];

		strlcpy(why, rep->message, sizeof(why));
		snprintf(
			rep->message, sizeof(rep->message),
			"the second run (other poison; work-groups reversed where the plan allows) "
			"differs: %s",
			why);
		record_failure(r, "incorrect", "nondeterministic", rep->message);
	} else {
		record_failure(r, "incorrect",
			       v == JUDGE_UNWRITTEN ? "unwritten_output" : "wrong_values",
			       rep->message);
	}
	return v;
}

static int serve_timed(struct judge_chan *c, const struct judge_req *q, struct judge_rep *rep)
{
	const struct batch *b = c->j->b;
	struct judge_record *r;
	int v;

	/* A sample rotates through the first sets; an audit run meets one of the others. */
	if (q->prog >= c->j->ntrecs || q->seed >= WORKER_TIMING_SETS ||
	    (q->what == JUDGE_AUDIT) != (q->seed >= WORKER_ROTATING_SETS))
		return -1;
	r = &c->j->trecs[q->prog];
	/* The shape is the parent's (judge_time_shape), never the worker's word. */
	v = compare(c, c->j->tshape,
		    &c->j->timed[(c->j->tshape * WORKER_TIMING_SETS + q->seed) * b->nbuffers],
		    POISON_A, NULL, rep);
	if (v == JUDGE_REFUSED)
		return -1;
	r->judged++;
	if (v == JUDGE_PASS) {
		r->passed++;
	} else {
		char why[sizeof(rep->message)];

		strlcpy(why, rep->message, sizeof(why));
		snprintf(rep->message, sizeof(rep->message), "%s %llu: %s",
			 q->what == JUDGE_AUDIT ? "audit on inputs new to it, sample"
						: "timed sample",
			 (unsigned long long)q->sample, why);
		record_failure(r, "invalid", "wrong_when_timed", rep->message);
	}
	return v;
}

int judge_serve(struct judge_chan *c, int fd)
{
	struct judge_req q;
	struct judge_rep rep;
	ssize_t got;
	int v;

	memset(&rep, 0, sizeof(rep));
	got = recv(fd, &q, sizeof(q), MSG_DONTWAIT);
	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (got == 0)
		return 0; /* the worker closed its end */
	if (got != (ssize_t)sizeof(q) || q.magic != JUDGE_MAGIC)
		return -1;
	if (q.what == JUDGE_CHECK)
		v = serve_check(c, &q, &rep);
	else if (q.what == JUDGE_TIMED || q.what == JUDGE_AUDIT)
		v = serve_timed(c, &q, &rep);
	else
		v = -1;
	if (v < 0)
		return -1;
	rep.magic = JUDGE_MAGIC;
	rep.verdict = v;
	/* A worker that died after asking must not take the parent with it (SIGPIPE). */
	if (send(fd, &rep, sizeof(rep), MSG_NOSIGNAL) != (ssize_t)sizeof(rep))
		return -1;
	return 0;
}

/* Copies the worker's own figures (first_run_host_ms) into the parent's shapes. */
static void keep_worker_figures(json_t *mine, json_t *theirs)
{
	size_t s, k;
	json_t *sh, *e;

	json_array_foreach (mine, s, sh) {
		json_t *tseeds = json_object_get(json_array_get(theirs, s), "seeds");

		json_array_foreach (json_object_get(sh, "seeds"), k, e) {
			json_t *v = json_object_get(json_array_get(tseeds, k), "first_run_host_ms");

			if (json_is_object(e) && json_is_number(v))
				json_object_set(e, "first_run_host_ms", v);
		}
	}
}

static void set_fault(json_t *doc, const char *status, const char *kind, const char *message)
{
	json_object_set_new(doc, "status", json_string(status));
	json_object_set_new(doc, "fault",
			    json_pack("{s:s, s:s, s:s}", "origin", "candidate", "kind", kind,
				      "message", message));
}

void judge_apply_check(const struct judge_record *rec, const struct batch *b, json_t *doc)
{
	json_t *corr = json_object_get(doc, "correctness");
	const char *st = json_string_value(json_object_get(doc, "status"));
	size_t want = judge_check_expected(b);

	if (json_is_object(corr)) {
		json_t *mine = json_deep_copy(rec->shapes);

		keep_worker_figures(mine, json_object_get(corr, "shapes"));
		json_object_set_new(corr, "shapes", mine);
		json_object_set_new(corr, "judged", json_integer((json_int_t)rec->judged));
	}
	if (rec->failed) {
		/* What the judge saw outranks what the worker says, except an earlier fault. */
		if (!st || !strcmp(st, "ok") || !strcmp(st, "incorrect") || !strcmp(st, "running"))
			set_fault(doc, rec->status, rec->kind, rec->message);
		if (json_is_object(corr))
			json_object_set_new(corr, "passed", json_false());
	} else if (st && !strcmp(st, "ok") && rec->passed < want) {
		char message[256];

		snprintf(message, sizeof(message),
			 "the worker reported its checks passed, but only %zu of the %zu outputs "
			 "were judged",
			 rec->passed, want);
		set_fault(doc, "invalid", "unverified", message);
	}
}

void judge_apply_timed(const struct judge_record *rec, json_t *entry)
{
	const char *st = json_string_value(json_object_get(entry, "status"));
	size_t samples = json_array_size(json_object_get(entry, "samples_ms"));

	json_object_set_new(entry, "judged", json_integer((json_int_t)rec->judged));
	if (rec->failed) {
		set_fault(entry, rec->status, rec->kind, rec->message);
	} else if (st && !strcmp(st, "ok") && rec->passed < samples) {
		char message[256];

		snprintf(message, sizeof(message),
			 "the timing worker reported %zu samples, but only %zu outputs were judged",
			 samples, rec->passed);
		set_fault(entry, "invalid", "unverified", message);
	}
}
