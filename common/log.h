/*
 * log.h - leveled logging to stderr.
 *
 * The level is tested before any formatting happens.  Output goes to stderr
 * only; stdout carries command output.  Never pass secrets here: the HTTP
 * layer redacts credentials before it logs.
 */
#ifndef KCTL_LOG_H
#define KCTL_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

extern int log_level_current;

/* Sets the program name printed in front of every line (not copied). */
void log_set_prog(const char *prog);
/* Parses "error|warn|info|debug"; returns 0 or KERR_INVALID. */
int log_set_level_name(const char *name);
void log_write(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_AT(lvl, ...)                                                                           \
	do {                                                                                       \
		if ((int)(lvl) <= log_level_current)                                               \
			log_write((lvl), __VA_ARGS__);                                             \
	} while (0)
#define log_error(...) LOG_AT(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  LOG_AT(LOG_WARN, __VA_ARGS__)
#define log_info(...)  LOG_AT(LOG_INFO, __VA_ARGS__)
#define log_debug(...) LOG_AT(LOG_DEBUG, __VA_ARGS__)

#endif
