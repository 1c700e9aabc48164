/*
 * err.h - the project's error codes.
 *
 * Fallible functions return 0 or one of these (negative).  The list is
 * append-only: codes travel in result documents and logs, so a code's
 * meaning never changes once released.  Detail goes into a caller-supplied
 * message buffer ("what failed 'subject': reason").
 */
#ifndef KCTL_ERR_H
#define KCTL_ERR_H

#include <stddef.h>

enum kerr {
	KERR_OK = 0,
	KERR_IO = -1,       /* reading or writing a file or pipe */
	KERR_PARSE = -2,    /* malformed document or expression */
	KERR_INVALID = -3,  /* well-formed but semantically wrong input */
	KERR_RANGE = -4,    /* a value out of range, overflow, division by zero */
	KERR_NOTFOUND = -5, /* a named thing does not exist */
	KERR_LIMIT = -6,    /* a size limit was exceeded */
	KERR_HTTP = -7,     /* transport failure or HTTP error status */
	KERR_OPENCL = -8,   /* an OpenCL call failed */
	KERR_NODEVICE = -9, /* no usable OpenCL device */
	KERR_NOMEM = -10,   /* a device or host allocation failed (not malloc) */
	KERR_TIMEOUT = -11, /* something did not finish in time */
	KERR_CHILD = -12,   /* a worker process failed */
	KERR_UNSUPPORTED = -13,
	KERR_LATER = -14, /* a service asked to be called again later (a rate limit) */
};

/* Returns a short static name for code, e.g. "parse"; never NULL. */
const char *kerr_str(int code);

/*
 * Formats into msg (size n) with printf semantics and returns code, so that
 * error paths read: return kerr_set(msg, n, KERR_PARSE, "...", ...);
 * msg may be NULL, in which case only code is returned.
 */
int kerr_set(char *msg, size_t n, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
