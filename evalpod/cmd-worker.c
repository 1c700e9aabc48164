/*
 * cmd-worker.c - `evalpod __worker MODE WORK ARG [SHAPE]` (internal): the entry of
 * a worker process, started by the parent of `evalpod run` (worker.h).
 */
#include "log.h"
#include "worker.h"

#include <stdlib.h>
#include <string.h>

int cmd_worker(int argc, char **argv)
{
	uint64_t seeds[WORKER_TIMING_SETS];

	if (argc >= 4 && !strcmp(argv[1], "reference") && !worker_parse_seeds(argv[3], seeds))
		return worker_reference(argv[2], seeds);
	if (argc == 3 && !strcmp(argv[1], "frontend"))
		return worker_frontend(argv[2]);
	if (argc >= 4 && !strcmp(argv[1], "check"))
		return worker_check(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "time") && !worker_parse_seeds(argv[3], seeds))
		return worker_time(argv[2], seeds);
	if (argc >= 5 && !strcmp(argv[1], "time") && !worker_parse_seeds(argv[3], seeds)) {
		char *end = NULL;
		long shape = strtol(argv[4], &end, 10);

		if (end != argv[4] && !*end && shape >= 0 && shape < 1024)
			return worker_time_at(argv[2], seeds, shape);
	}
	log_error("usage: evalpod __worker reference|check|time|frontend WORK [ID|SEEDS] [SHAPE] "
		  "(internal)");
	return 2;
}
