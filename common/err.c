#include "err.h"

#include <stdarg.h>
#include <stdio.h>

static const char *const kerr_names[] = {
	[0] = "ok",     [1] = "io",           [2] = "parse",      [3] = "invalid",
	[4] = "range",  [5] = "not-found",    [6] = "limit",      [7] = "http",
	[8] = "opencl", [9] = "no-device",    [10] = "no-memory", [11] = "timeout",
	[12] = "child", [13] = "unsupported", [14] = "later",
};

const char *kerr_str(int code)
{
	size_t i = (size_t)(code < 0 ? -code : code);

	if (i >= sizeof(kerr_names) / sizeof(kerr_names[0]) || !kerr_names[i])
		return "unknown";
	return kerr_names[i];
}

int kerr_set(char *msg, size_t n, int code, const char *fmt, ...)
{
	va_list ap;

	if (msg && n) {
		va_start(ap, fmt);
		vsnprintf(msg, n, fmt, ap);
		va_end(ap);
	}
	return code;
}
