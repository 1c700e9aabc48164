/*
 * state.c - what every step of a session reads of its recorded state: the
 * round folders and results, the programs of a round, the incumbent, who
 * holds session.lock, and the status document.  It sits below the steps
 * (round.c, pack.c, rank.c, confirm.c, report.c, the backends, loop.c),
 * which all call it and which it calls none of; it uses the store.
 */
#include "session.h"
#include "winner.h"
#include "fileio.h"
#include "xalloc.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *session_round_dir(const struct session *s, int round)
{
	return xasprintf("%s/rounds/r%03d", s->dir, round);
}

char *session_variant_id(int round, size_t k)
{
	if (round == 0)
		return xstrdup("r00-start");
	return xasprintf("r%02d-v%03zu", round, k + 1);
}

json_t *session_round_result(struct session *s, int round, const char *id)
{
	char *dir = session_round_dir(s, round), *path = xasprintf("%s/results/%s.json", dir, id);
	char *text = NULL, msg[128];
	json_t *doc = NULL;

	if (id && !file_read(path, 256u << 20, &text, NULL, msg, sizeof(msg)))
		doc = json_loads(text, 0, NULL);
	free(text);
	free(path);
	free(dir);
	return doc;
}

json_t *round_programs(struct session *s, int round)
{
	json_t *row = store_round_get(s->st, s->id, round), *out, *id;
	json_t *ids = json_object_get(json_object_get(row, "confirm"), "programs");
	size_t i;

	if (!json_is_array(ids)) {
		json_decref(row);
		return store_variants(s->st, s->id, round);
	}
	out = json_array();
	json_array_foreach (ids, i, id) {
		json_t *v = store_variant_get(s->st, s->id, json_string_value(id));

		if (v)
			json_array_append_new(out, v);
	}
	json_decref(row);
	return out;
}

/* Start time of process pid in clock ticks after boot (field 22 of its stat), or -1. */
static long long proc_start(long pid)
{
	char *path = xasprintf("/proc/%ld/stat", pid), *text = NULL, *p, why[128];
	long long start = -1;

	if (!file_read(path, 4096, &text, NULL, why, sizeof(why)) && (p = strrchr(text, ')'))) {
		/* after "pid (comm)": field 3 is the state, so 22 is the 20th from here */
		for (int field = 3; p && field <= 22; field++)
			p = strchr(p + 1, ' ');
		if (p)
			start = strtoll(p + 1, NULL, 10);
	}
	free(text);
	free(path);
	return start;
}

/* This boot's id (/proc/sys/kernel/random/boot_id) into buf, "" when unknown. */
static void boot_id(char *buf, size_t n)
{
	char *text = NULL, why[128];

	buf[0] = '\0';
	if (!file_read("/proc/sys/kernel/random/boot_id", 128, &text, NULL, why, sizeof(why)))
		strlcpy(buf, text, n);
	buf[strcspn(buf, "\n")] = '\0';
	free(text);
}

/* This process's pid namespace ("pid:[4026531836]") into buf, "" when unknown. */
static void pid_namespace(char *buf, size_t n)
{
	ssize_t len = readlink("/proc/self/ns/pid", buf, n - 1);

	buf[len > 0 ? len : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0'; /* one line of the record */
}

int session_owner_record(int fd)
{
	char boot[64], host[256] = "", pidns[64], *rec;
	ssize_t len, put;

	boot_id(boot, sizeof(boot));
	pid_namespace(pidns, sizeof(pidns));
	if (gethostname(host, sizeof(host) - 1))
		host[0] = '\0';
	host[strcspn(host, "\n")] = '\0';
	rec = xasprintf("pid %ld\nboot %s\nstart %lld\nhost %s\npidns %s\n", (long)getpid(), boot,
			proc_start((long)getpid()), host, pidns);
	len = (ssize_t)strlen(rec);
	put = ftruncate(fd, 0) ? -1 : pwrite(fd, rec, (size_t)len, 0);
	free(rec);
	return put == len ? 0 : -1;
}

/* The value of "key VALUE" in the owner record text, into buf ("" when absent). */
static void owner_field(const char *text, const char *key, char *buf, size_t n)
{
	size_t klen = strlen(key);
	const char *p = text;

	buf[0] = '\0';
	for (; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == ' ') {
			strlcpy(buf, p + klen + 1, n);
			buf[strcspn(buf, "\n")] = '\0';
			return;
		}
}

/*
 * Whom the record (text) names, seen from here (boot, host, pidns): a pid
 * means something only in the pid namespace of the boot it was written
 * in.  Records from before the pidns line are taken as written in this
 * host's namespace, as they were read then.
 */
static enum session_owner owner_judge(const char *text, const char *boot, const char *host,
				      const char *pidns, struct session_owner_info *o)
{
	char f_pid[32], f_boot[64], f_start[32], f_ns[64];
	int same_host, same_boot, same_ns;
	char *end;

	owner_field(text, "pid", f_pid, sizeof(f_pid));
	owner_field(text, "boot", f_boot, sizeof(f_boot));
	owner_field(text, "start", f_start, sizeof(f_start));
	owner_field(text, "host", o->host, sizeof(o->host));
	owner_field(text, "pidns", f_ns, sizeof(f_ns));
	for (char *c = o->host; *c; c++) /* it is printed: no terminal controls */
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	o->pid = strtol(f_pid, &end, 10);
	if (o->pid <= 0 || *end)
		return SESSION_OWNER_UNKNOWN;
	same_host = !strcmp(o->host, host);
	same_boot = *f_boot && !strcmp(f_boot, boot);
	same_ns = !*f_ns ? same_host : *pidns && !strcmp(f_ns, pidns);
	if (same_host && !same_boot)
		return SESSION_OWNER_GONE; /* this host rebooted since */
	if (!same_host || !same_ns) {
		o->other_machine = !same_boot;
		return SESSION_OWNER_ELSEWHERE;
	}
	return proc_start(o->pid) != strtoll(f_start, NULL, 10) ? SESSION_OWNER_GONE
								: SESSION_OWNER_ALIVE;
}

enum session_owner session_owner_check(const char *dir, struct session_owner_info *o)
{
	char *path = xasprintf("%s/session.lock", dir), *text = NULL, why[128];
	char boot[64], host[256] = "", pidns[64];
	enum session_owner who = SESSION_OWNER_UNKNOWN;

	memset(o, 0, sizeof(*o));
	if (!file_read(path, 4096, &text, NULL, why, sizeof(why))) {
		boot_id(boot, sizeof(boot));
		pid_namespace(pidns, sizeof(pidns));
		if (gethostname(host, sizeof(host) - 1))
			host[0] = '\0';
		host[strcspn(host, "\n")] = '\0';
		who = owner_judge(text, boot, host, pidns, o);
	}
	free(text);
	free(path);
	return who;
}

json_t *session_status_json(struct store *st, const char *id)
{
	json_t *row = store_session_get(st, id), *w, *out;

	if (!row)
		return NULL;
	w = session_winner(st, id);
	out = json_pack("{s:s, s:O?, s:O?, s:O?, s:O?, s:i, s:i}", "session", id, "state",
			json_object_get(row, "state"), "reason", json_object_get(row, "reason"),
			"spec", json_object_get(row, "spec_path"), "output_dir",
			json_object_get(row, "output_dir"), "rounds", store_round_last(st, id),
			"evaluations", store_result_count(st, id));
	json_object_set_new(out, "cached", json_integer(store_result_cached_count(st, id)));
	json_object_set_new(out, "best", w ? w : json_null());
	{
		const char *state = json_string_value(json_object_get(row, "state"));
		const char *dir = json_string_value(json_object_get(row, "output_dir"));
		struct session_owner_info o;
		enum session_owner who = state && dir && !strcmp(state, "running")
						 ? session_owner_check(dir, &o)
						 : SESSION_OWNER_UNKNOWN;

		/* "running" is what a killed kctl leaves behind: say so */
		if (who == SESSION_OWNER_GONE)
			json_object_set_new(out, "interrupted",
					    json_pack("{s:I}", "kctl_pid", (json_int_t)o.pid));
		/* a pid from another namespace or machine says nothing here */
		else if (who == SESSION_OWNER_ELSEWHERE)
			json_object_set_new(out, "elsewhere",
					    json_pack("{s:s, s:I, s:s}", "host", o.host, "kctl_pid",
						      (json_int_t)o.pid, "where",
						      o.other_machine ? "another machine"
								      : "another pid namespace"));
	}
	{
		json_t *t = store_llm_totals(st, id);

		/* only sessions that asked a model have a model part */
		if (t && json_integer_value(json_object_get(t, "calls")))
			json_object_set_new(out, "model", t);
		else
			json_decref(t);
	}
	json_decref(row);
	return out;
}

static json_t *lineage_row(json_t *lins, int number)
{
	size_t i;
	json_t *l;

	json_array_foreach (lins, i, l)
		if (json_integer_value(json_object_get(l, "lineage")) == number)
			return l;
	return NULL;
}

json_t *session_incumbent(struct session *s)
{
	json_t *lins = store_lineages(s->st, s->id), *inc = NULL;
	json_t *row = lineage_row(lins, 0);
	const char *id = json_string_value(json_object_get(row, "best"));

	if (id)
		inc = store_variant_get(s->st, s->id, id);
	json_decref(lins);
	return inc;
}
