/*
 * kctl cache stats|prune|clear [--older-than DAYS] [-o text|json]
 *
 * The result cache's file (cache.h): how many entries, how big, how old;
 * prune removes the entries older than DAYS (default 30, the spec's
 * cache.max_age_days default), clear every entry.
 */
#include "cmds.h"
#include "cache.h"
#include "err.h"
#include "log.h"
#include "session.h"
#include "xalloc.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char usage[] = "usage: kctl cache stats|prune|clear [--older-than DAYS] "
			    "[-o text|json]\n";

#define CACHE_PRUNE_DAYS 30

struct cache_opts {
	double days; /* --older-than; NAN when not given */
	int json;
};

static int parse(int argc, char **argv, struct cache_opts *o)
{
	static const struct option opts[] = {
		{ "older-than", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->days = NAN;
	o->json = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		char *end = NULL;

		if (c == 'd') {
			o->days = strtod(optarg, &end);
			if (end == optarg || *end || !(o->days >= 0) || o->days > 36500) {
				log_error("--older-than wants a number of days from 0 to 36500, "
					  "not '%s'",
					  optarg);
				return -1;
			}
		} else if (c != 'o' || cmd_output_format(optarg, &o->json)) {
			fputs(usage, stderr);
			return -1;
		}
	}
	if (optind != argc - 1) {
		fputs(usage, stderr);
		return -1;
	}
	return 0;
}

static void when(const json_t *t, char *out, size_t n)
{
	time_t s = (time_t)json_number_value(t);
	struct tm tm;

	if (!json_is_number(t)) {
		snprintf(out, n, "-");
		return;
	}
	gmtime_r(&s, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int print_stats(struct cache *c, int as_json)
{
	char msg[1024], oldest[32], newest[32];
	json_t *st = NULL;

	if (cache_stats(c, &st, msg, sizeof(msg))) {
		log_error("%s", msg);
		return KCTL_EXIT_INFRA;
	}
	if (as_json) {
		char *text = json_dumps(st, JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("%s\n", text);
		free(text);
	} else {
		when(json_object_get(st, "oldest"), oldest, sizeof(oldest));
		when(json_object_get(st, "newest"), newest, sizeof(newest));
		printf("file     %s\nentries  %lld\nbytes    %lld\noldest   %s\nnewest   %s\n",
		       json_string_value(json_object_get(st, "file")),
		       (long long)json_integer_value(json_object_get(st, "entries")),
		       (long long)json_integer_value(json_object_get(st, "bytes")), oldest, newest);
	}
	json_decref(st);
	return KCTL_EXIT_OK;
}

/* What stats, prune and clear say where there is no cache file yet. */
static int print_none(const char *path, const char *what, int as_json)
{
	json_t *st = json_pack("{s:s, s:i, s:i, s:n, s:n}", "file", path, "entries", 0, "bytes", 0,
			       "oldest", "newest");
	char *text = json_dumps(st, JSON_INDENT(2) | JSON_SORT_KEYS);

	if (strcmp(what, "stats"))
		printf(as_json ? "{\"removed\": 0}\n" : "removed 0 entries: no cache at %s\n",
		       path);
	else if (as_json)
		printf("%s\n", text);
	else
		printf("file     %s (none yet)\nentries  0\nbytes    0\noldest   -\nnewest   -\n",
		       path);
	free(text);
	json_decref(st);
	return KCTL_EXIT_OK;
}

static int remove_entries(struct cache *c, double days, int as_json)
{
	char msg[1024];
	int64_t removed = 0;

	if (cache_prune(c, days, &removed, msg, sizeof(msg))) {
		log_error("%s", msg);
		return KCTL_EXIT_INFRA;
	}
	if (as_json)
		printf("{\"removed\": %lld}\n", (long long)removed);
	else
		printf("removed %lld entries from %s\n", (long long)removed, cache_file(c));
	return KCTL_EXIT_OK;
}

int cmd_cache(int argc, char **argv)
{
	struct cache_opts o;
	struct cache *c = NULL;
	const char *what;
	char msg[1024], *path;
	struct stat sb;
	int rc;

	if (parse(argc, argv, &o))
		return KCTL_EXIT_USAGE;
	what = argv[optind];
	if (strcmp(what, "stats") && strcmp(what, "prune") && strcmp(what, "clear")) {
		log_error("kctl cache: '%s' is not stats, prune or clear", what);
		fputs(usage, stderr);
		return KCTL_EXIT_USAGE;
	}
	if (!isnan(o.days) && strcmp(what, "prune")) {
		log_error("kctl cache %s: --older-than is for prune", what);
		return KCTL_EXIT_USAGE;
	}
	path = cache_default_path();
	/* stats only reads; none of the three makes a cache that is not there */
	if (!strcmp(what, "stats"))
		rc = cache_open_ro(path, &c, msg, sizeof(msg));
	else if (stat(path, &sb) && errno == ENOENT)
		rc = KERR_NOTFOUND;
	else
		rc = cache_open(path, &c, msg, sizeof(msg));
	if (rc == KERR_NOTFOUND) {
		rc = print_none(path, what, o.json);
		free(path);
		return rc;
	}
	free(path);
	if (rc) {
		log_error("%s", msg);
		return KCTL_EXIT_INFRA;
	}
	if (!strcmp(what, "stats"))
		rc = print_stats(c, o.json);
	else
		rc = remove_entries(c,
				    !strcmp(what, "clear") ? -1
				    : isnan(o.days)        ? CACHE_PRUNE_DAYS
							   : o.days,
				    o.json);
	cache_close(c);
	return rc;
}
