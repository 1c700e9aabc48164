/*
 * kpod.c - what a pod's status says; the contract is in kpod.h.
 */
#include "kpod.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Waiting reasons that do not pass by themselves. */
static const char *const kpod_stuck_reasons[] = {
	"ImagePullBackOff",           "ErrImagePull",         "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError", "ErrImageNeverPull",
};

int kpod_shard(json_t *pod)
{
	json_t *md = json_object_get(pod, "metadata");
	const char *idx = json_string_value(json_object_get(
		json_object_get(md, "annotations"), "batch.kubernetes.io/job-completion-index"));
	const char *sh =
		json_string_value(json_object_get(json_object_get(md, "labels"), "kctl.dev/shard"));

	if (idx)
		return (int)strtol(idx, NULL, 10);
	return sh && isdigit((unsigned char)sh[0]) ? (int)strtol(sh, NULL, 10) : -1;
}

time_t kpod_time(const char *rfc3339)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!rfc3339 || !strptime(rfc3339, "%Y-%m-%dT%H:%M:%S", &tm))
		return 0;
	return timegm(&tm);
}

void kpod_diagnose(json_t *pod, char *why, size_t n, int *stuck)
{
	json_t *st = json_object_get(pod, "status"), *cs, *c;
	const char *phase = json_string_value(json_object_get(st, "phase"));
	const char *reason = json_string_value(json_object_get(st, "reason"));
	size_t i;

	why[0] = '\0';
	*stuck = 0;
	if (reason && (!strcmp(reason, "Evicted") || !strcmp(reason, "DeadlineExceeded"))) {
		snprintf(why, n, "%s: %.300s", reason,
			 json_string_value(json_object_get(st, "message"))
				 ? json_string_value(json_object_get(st, "message"))
				 : "");
		return;
	}
	json_array_foreach (json_object_get(st, "containerStatuses"), i, cs) {
		json_t *term = json_object_get(json_object_get(cs, "state"), "terminated");
		json_t *wait = json_object_get(json_object_get(cs, "state"), "waiting");
		const char *tr = json_string_value(json_object_get(term, "reason"));
		const char *wr = json_string_value(json_object_get(wait, "reason"));

		if (term && phase && !strcmp(phase, "Failed")) {
			snprintf(why, n, "%s (exit status %lld)", tr ? tr : "Error",
				 (long long)json_integer_value(json_object_get(term, "exitCode")));
			return;
		}
		for (size_t r = 0; wr && r < sizeof(kpod_stuck_reasons) / sizeof(char *); r++)
			if (!strcmp(wr, kpod_stuck_reasons[r])) {
				snprintf(why, n, "%s: %.300s", wr,
					 json_string_value(json_object_get(wait, "message"))
						 ? json_string_value(
							   json_object_get(wait, "message"))
						 : "");
				*stuck = 1;
				return;
			}
	}
	json_array_foreach (json_object_get(st, "conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *r = json_string_value(json_object_get(c, "reason"));

		if (t && r && !strcmp(t, "PodScheduled") && !strcmp(r, "Unschedulable")) {
			snprintf(why, n, "Unschedulable: %.300s",
				 json_string_value(json_object_get(c, "message"))
					 ? json_string_value(json_object_get(c, "message"))
					 : "");
			*stuck = 1;
			return;
		}
	}
}

int kpod_exit_status(json_t *pod)
{
	json_t *st = json_object_get(pod, "status"), *cs, *term;
	const char *phase = json_string_value(json_object_get(st, "phase"));
	json_int_t code = -1;
	size_t i;

	if (!phase || strcmp(phase, "Failed"))
		return -1;
	json_array_foreach (json_object_get(st, "containerStatuses"), i, cs) {
		const char *name = json_string_value(json_object_get(cs, "name"));
		json_t *ec;

		term = json_object_get(json_object_get(cs, "state"), "terminated");
		ec = json_object_get(term, "exitCode");
		if (!json_is_integer(ec))
			continue;
		if (name && !strcmp(name, "evalpod"))
			return json_integer_value(ec) >= 0 && json_integer_value(ec) <= 255
				       ? (int)json_integer_value(ec)
				       : -1;
		if (code < 0)
			code = json_integer_value(ec);
	}
	return code >= 0 && code <= 255 ? (int)code : -1;
}
