#include "log.h"
#include "err.h"
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int log_level_current = LOG_WARN;
static const char *log_prog = "kctl";

static const char *const log_names[] = {
	[LOG_ERROR] = "error",
	[LOG_WARN] = "warning",
	[LOG_INFO] = "info",
	[LOG_DEBUG] = "debug",
};

void log_set_prog(const char *prog)
{
	log_prog = prog;
}

int log_set_level_name(const char *name)
{
	static const char *const short_names[] = { "error", "warn", "info", "debug" };

	for (int i = 0; i < 4; i++) {
		if (!strcmp(name, short_names[i])) {
			log_level_current = i;
			return 0;
		}
	}
	return KERR_INVALID;
}

void log_write(enum log_level lvl, const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* messages quote servers, compilers and models: none may drive the terminal */
	text_defang(line);
	fprintf(stderr, "%s: %s: %s\n", log_prog, log_names[lvl], line);
}
