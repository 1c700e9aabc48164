/*
 * progress.c - how far a round has got, and its lines; the contract is in
 * progress.h.
 */
#include "progress.h"
#include "err.h"
#include "fileio.h"
#include "sbuf.h"
#include "store.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How much of the end of evalpod.log is read: its progress lines are short. */
#define PROGRESS_LOG_TAIL (1u << 20)
/* A result document larger than this is not read for its status. */
#define PROGRESS_RESULT_MAX (16u << 20)
/* The bar never gets wider than this, however wide the terminal. */
#define PROGRESS_BAR_MAX 30

#define SGR_GREEN "\033[32m"
#define SGR_RED   "\033[31m"
#define SGR_RESET "\033[0m"

/* What one program has got to. */
struct prog {
	const char *id; /* borrowed from the programs array */
	int done, failed;
};

/* What the current evalpod run says in its log (the part after its note). */
struct runlog {
	const char *phase; /* NULL: nothing said yet */
};

/* --- time -------------------------------------------------------------------- */

/* Seconds since the epoch of an ISO-8601 UTC timestamp of the store, or NAN. */
static double iso_seconds(const char *iso)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!iso || !strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm))
		return NAN;
	return (double)timegm(&tm);
}

/* Modification time of path in seconds since the epoch, or NAN. */
static double mtime_of(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return NAN;
	return (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9;
}

double progress_eta(int done, int total, double elapsed_s)
{
	if (done >= total && total >= 0)
		return 0;
	if (done <= 0 || !(elapsed_s >= 0))
		return NAN;
	return elapsed_s / done * (double)(total - done);
}

/* --- the round's folder ------------------------------------------------------- */

/*
 * The last PROGRESS_LOG_TAIL bytes of path (a regular file, opened without
 * blocking and without following a link), NUL-terminated; NULL when it
 * cannot be read.  The caller frees it.
 */
static char *log_tail(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	char *text = NULL;
	off_t from;
	size_t len = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto out;
	from = st.st_size > (off_t)PROGRESS_LOG_TAIL ? st.st_size - (off_t)PROGRESS_LOG_TAIL : 0;
	text = xmalloc(PROGRESS_LOG_TAIL + 1);
	while (len < PROGRESS_LOG_TAIL) {
		ssize_t got = pread(fd, text + len, PROGRESS_LOG_TAIL - len, from + (off_t)len);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	text[len] = '\0';
out:
	close(fd);
	return text;
}

static struct prog *prog_find(struct prog *progs, size_t nprogs, const char *id, size_t len)
{
	for (size_t i = 0; i < nprogs; i++)
		if (strlen(progs[i].id) == len && !strncmp(progs[i].id, id, len))
			return &progs[i];
	return NULL;
}

/*
 * One line of evalpod's log: "evalpod: checked ID (k of n, s)" ends a
 * program's checks, "evalpod: ID failed its checks: ..." fails it, and
 * "evalpod: checking ..." / "evalpod: timing ..." name the phase.
 */
static void log_line(const char *line, size_t len, struct prog *progs, size_t nprogs,
		     struct runlog *rl)
{
	static const char pre[] = "evalpod: ";
	const char *p = line + strlen(pre), *end = line + len;
	struct prog *pr;

	if (len <= strlen(pre) || strncmp(line, pre, strlen(pre)))
		return;
	if (!strncmp(p, "checking ", 9)) {
		rl->phase = "checking";
	} else if (!strncmp(p, "timing ", 7)) {
		rl->phase = "timing";
	} else if (!strncmp(p, "checked ", 8)) {
		const char *id = p + 8, *stop = id;

		while (stop < end && *stop != ' ')
			stop++;
		if ((pr = prog_find(progs, nprogs, id, (size_t)(stop - id))))
			pr->done = 1;
	} else {
		const char *stop = p;

		while (stop < end && *stop != ' ')
			stop++;
		if ((size_t)(end - stop) >= 18 && !strncmp(stop, " failed its checks", 18) &&
		    (pr = prog_find(progs, nprogs, p, (size_t)(stop - p)))) {
			pr->done = 1;
			pr->failed = 1;
		}
	}
}

/* Reads dir/evalpod.log from its last "kctl: evalpod run" note on. */
static void read_log(const char *dir, struct prog *progs, size_t nprogs, struct runlog *rl)
{
	static const char note[] = "kctl: evalpod run ";
	char *path = xasprintf("%s/evalpod.log", dir), *text = log_tail(path);
	const char *p, *last;

	free(path);
	if (!text)
		return;
	/* the tail may begin inside a line: the first whole line is after a newline */
	for (p = last = text; (p = strstr(p, note)); p++)
		if (p == text || p[-1] == '\n')
			last = p;
	while (*last) {
		size_t len = strcspn(last, "\n");

		if (last[len] == '\n') /* a line still being written is read next time */
			log_line(last, len, progs, nprogs, rl);
		last += len + (last[len] == '\n');
	}
	free(text);
}

/* Whether results/ID.json of the round's folder dir is in; *failed: its status is not ok. */
static int result_in(const char *dir, const char *id, int *failed)
{
	char *path = xasprintf("%s/results/%s.json", dir, id), *text = NULL, why[256];
	json_t *doc = NULL;
	int in = 0;

	if (!file_read_untrusted(path, PROGRESS_RESULT_MAX, &text, NULL, why, sizeof(why)))
		doc = json_loads(text, 0, NULL);
	if (json_is_string(json_object_get(doc, "status"))) {
		in = 1;
		*failed = strcmp(json_string_value(json_object_get(doc, "status")), "ok") != 0;
	}
	json_decref(doc);
	free(text);
	free(path);
	return in;
}

/* --- the round ----------------------------------------------------------------- */

/* The ids the round evaluates: a confirmation's programs, else its variants (new array). */
static json_t *round_ids(struct store *st, const char *id, int round, json_t *row,
			 json_t **variants)
{
	json_t *ids = json_object_get(json_object_get(row, "confirm"), "programs"), *out, *v;
	size_t i;

	*variants = NULL;
	if (json_is_array(ids))
		return json_incref(ids);
	out = json_array();
	*variants = store_variants_brief(st, id, round);
	json_array_foreach (*variants, i, v)
		if (json_is_string(json_object_get(v, "id")))
			json_array_append(out, json_object_get(v, "id"));
	return out;
}

/* Marks what is done: from the store once collected, else from the round's folder. */
static void count(struct progress *p, struct prog *progs, size_t nprogs, json_t *variants,
		  const char *rdir)
{
	struct runlog rl = { NULL };

	if (p->state >= ROUND_COLLECTED && !p->confirm) {
		for (size_t i = 0; i < nprogs; i++) {
			const char *status = json_string_value(
				json_object_get(json_array_get(variants, i), "status"));

			progs[i].done = 1;
			progs[i].failed = !status || strcmp(status, "ok");
		}
	} else {
		if (p->state == ROUND_RUNNING)
			read_log(rdir, progs, nprogs, &rl);
		for (size_t i = 0; i < nprogs; i++) {
			int failed = 0;

			if (result_in(rdir, progs[i].id, &failed)) {
				progs[i].done = 1;
				progs[i].failed = failed;
			}
		}
	}
	for (size_t i = 0; i < nprogs; i++) {
		p->done += progs[i].done;
		p->failed += progs[i].done && progs[i].failed;
	}
	/* on Kubernetes a round stays packed while its Jobs run */
	p->phase = p->state >= ROUND_DONE        ? "done"
		   : p->state >= ROUND_COLLECTED ? "ranking"
		   : p->state < ROUND_PACKED     ? "starting"
		   : rl.phase                    ? rl.phase
						 : "evaluating";
}

int progress_read(struct store *st, const char *id, const char *dir, int round, double now,
		  struct progress *p, char *msg, size_t n)
{
	json_t *row = store_round_get(st, id, round), *variants = NULL, *ids;
	char *rdir = xasprintf("%s/rounds/r%03d", dir, round), *batch;
	struct prog *progs;
	size_t nprogs, i;
	double start, end;
	json_t *v;

	memset(p, 0, sizeof(*p));
	p->round = round;
	p->eta_s = NAN;
	if (!row) {
		free(rdir);
		if (store_check(st, msg, n))
			return KERR_IO;
		return kerr_set(msg, n, KERR_NOTFOUND, "session %s has no round %d", id, round);
	}
	p->state = (int)json_integer_value(json_object_get(row, "state"));
	p->confirm = json_is_object(json_object_get(row, "confirm"));
	ids = round_ids(st, id, round, row, &variants);
	nprogs = json_array_size(ids);
	progs = xcalloc(nprogs + 1, sizeof(*progs));
	json_array_foreach (ids, i, v)
		progs[i].id = json_string_value(v) ? json_string_value(v) : "";
	count(p, progs, nprogs, variants, rdir);
	p->total = (int)nprogs;
	batch = xasprintf("%s/batch.json", rdir);
	start = mtime_of(batch);
	if (!isfinite(start))
		start = iso_seconds(json_string_value(json_object_get(row, "started")));
	end = p->state >= ROUND_DONE
		      ? iso_seconds(json_string_value(json_object_get(row, "finished")))
		      : now;
	p->elapsed_s = isfinite(start) && isfinite(end) && end > start ? end - start : 0;
	p->eta_s = progress_eta(p->done, p->total, p->elapsed_s);
	free(batch);
	free(progs);
	json_decref(ids);
	json_decref(variants);
	json_decref(row);
	free(rdir);
	return store_check(st, msg, n) ? KERR_IO : 0;
}

/* --- the lines ------------------------------------------------------------------- */

void progress_bar(struct sbuf *b, int done, int total, int cells)
{
	int fill = 0;

	if (cells < 0)
		cells = 0;
	if (total > 0) {
		long long d = done < 0 ? 0 : done > total ? total : done;

		fill = (int)(d * cells / total);
	}
	sbuf_addch(b, '[');
	for (int i = 0; i < cells; i++)
		sbuf_addch(b, i < fill ? '#' : '.');
	sbuf_addch(b, ']');
}

void progress_duration(struct sbuf *b, double s)
{
	long long t;

	if (!(s >= 0) || s > 1e12) {
		sbuf_addch(b, '-');
		return;
	}
	t = (long long)(s + 0.5);
	if (t < 60)
		sbuf_addf(b, "%lld s", t);
	else if (t < 3600)
		sbuf_addf(b, "%lld min %02lld s", t / 60, t % 60);
	else
		sbuf_addf(b, "%lld h %02lld min", t / 3600, t % 3600 / 60);
}

/* "round 3", "round 4 (confirmation)" */
static void round_name(struct sbuf *b, const struct progress *p)
{
	sbuf_addf(b, "round %d%s", p->round, p->confirm ? " (confirmation)" : "");
}

/* ", took 52 s" for a finished round, else ", ETA 32 s". */
static void time_words(struct sbuf *b, const struct progress *p)
{
	if (p->state >= ROUND_DONE) {
		sbuf_adds(b, ", took ");
		progress_duration(b, p->elapsed_s);
		return;
	}
	sbuf_adds(b, ", ETA ");
	progress_duration(b, p->eta_s);
}

void progress_plain(struct sbuf *b, const struct progress *p)
{
	round_name(b, p);
	sbuf_addf(b, ": %d/%d evaluated, %d failed", p->done, p->total, p->failed);
	time_words(b, p);
}

void progress_line(struct sbuf *b, const struct progress *p, int width, int color)
{
	struct sbuf head = SBUF_INIT, tail = SBUF_INIT, failed = SBUF_INIT;
	size_t words;
	int cells;

	if (width < 20)
		width = 20;
	round_name(&head, p);
	sbuf_addf(&head, " %s ", p->phase ? p->phase : "");
	sbuf_addf(&failed, "%d failed", p->failed);
	sbuf_addf(&tail, ", ");
	if (p->state < ROUND_DONE) {
		progress_duration(&tail, p->elapsed_s);
		sbuf_adds(&tail, ", ETA ");
		progress_duration(&tail, p->eta_s);
	} else {
		sbuf_adds(&tail, "took ");
		progress_duration(&tail, p->elapsed_s);
	}
	words = head.len + failed.len + tail.len +
		(size_t)snprintf(NULL, 0, " %d/%d evaluated, ", p->done, p->total);
	cells = (int)((size_t)width - 1 > words + 2 ? (size_t)width - 1 - words - 2 : 0);
	if (cells > PROGRESS_BAR_MAX)
		cells = PROGRESS_BAR_MAX;
	if (cells < 5) { /* no room for a bar worth the name: the words, cut to fit */
		struct sbuf all = SBUF_INIT;

		sbuf_addf(&all, "%s%d/%d evaluated, %s%s", head.buf, p->done, p->total, failed.buf,
			  tail.buf);
		sbuf_add(b, all.buf, all.len < (size_t)width - 1 ? all.len : (size_t)width - 1);
		sbuf_release(&all);
	} else {
		struct sbuf bar = SBUF_INIT;
		size_t fill;

		progress_bar(&bar, p->done, p->total, cells);
		fill = strspn(bar.buf + 1, "#");
		sbuf_adds(b, head.buf);
		if (color && fill)
			sbuf_addf(b, "[" SGR_GREEN "%.*s" SGR_RESET "%s", (int)fill, bar.buf + 1,
				  bar.buf + 1 + fill);
		else
			sbuf_adds(b, bar.buf);
		sbuf_addf(b, " %d/%d evaluated, ", p->done, p->total);
		if (color && p->failed)
			sbuf_addf(b, SGR_RED "%s" SGR_RESET, failed.buf);
		else
			sbuf_adds(b, failed.buf);
		sbuf_adds(b, tail.buf);
		sbuf_release(&bar);
	}
	sbuf_release(&head);
	sbuf_release(&tail);
	sbuf_release(&failed);
}

void progress_incumbent(struct sbuf *b, json_t *winner)
{
	const char *v = json_string_value(json_object_get(winner, "variant"));
	json_t *x = json_object_get(winner, "speedup_vs_reference");

	if (!v) {
		sbuf_adds(b, "no incumbent yet");
		return;
	}
	sbuf_addf(b, "incumbent %s", v);
	if (json_is_number(x))
		sbuf_addf(b, " %.2fx", json_number_value(x));
}

size_t progress_visible(const char *s)
{
	size_t n = 0;

	while (*s) {
		if (s[0] == '\033' && s[1] == '[') {
			s += 2;
			while (*s && *s != 'm')
				s++;
			s += *s == 'm';
			continue;
		}
		n++;
		s++;
	}
	return n;
}

/* --- the terminal ---------------------------------------------------------------- */

/* A positive number from the environment variable name, or 0. */
static int env_size(const char *name)
{
	const char *v = getenv(name);
	char *end = NULL;
	long x = v ? strtol(v, &end, 10) : 0;

	return v && end != v && !*end && x > 0 && x < 100000 ? (int)x : 0;
}

int progress_columns(int fd)
{
	struct winsize ws;

	if (!ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		return ws.ws_col;
	return env_size("COLUMNS") ? env_size("COLUMNS") : 80;
}

int progress_rows(int fd)
{
	struct winsize ws;

	if (!ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_row > 0)
		return ws.ws_row;
	return env_size("LINES") ? env_size("LINES") : 24;
}

int progress_color(int fd)
{
	const char *no = getenv("NO_COLOR");

	return isatty(fd) && !(no && *no);
}
