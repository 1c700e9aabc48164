/*
 * clrt.h - the OpenCL runtime as evalpod uses it: one device, one context,
 * one in-order profiling queue.
 */
#ifndef EVALPOD_CLRT_H
#define EVALPOD_CLRT_H

#include <CL/cl.h>
#include <jansson.h>
#include <stddef.h>

#include "batch.h"

struct devinfo {
	char platform[256];
	char platform_version[256];
	char name[256];
	char vendor[256];
	char driver[128];
	char version[128];
	char type[16]; /* "gpu", "cpu", "accelerator", "other" */
	unsigned compute_units;
	unsigned max_clock_mhz;
	unsigned long long global_mem;
	unsigned long long local_mem;
	unsigned long long global_cache;
	unsigned long long max_alloc;
	size_t max_wg_size;
	unsigned base_align_bytes; /* CL_DEVICE_MEM_BASE_ADDR_ALIGN / 8 */
};

struct clrt {
	cl_platform_id platform;
	cl_device_id device;
	cl_context ctx;
	cl_command_queue queue;
	struct devinfo info;
};

/*
 * Whether the device is PoCL's: its program caches, linker spawns and
 * per-kernel IR are PoCL's own, and the workers treat it apart.
 */
int clrt_is_pocl(const struct devinfo *info);

/* Returns a static name for an OpenCL error code, e.g. "CL_OUT_OF_RESOURCES". */
const char *clrt_errstr(cl_int err);

/*
 * Opens the device chosen by spec (NULL: the first device of any type).
 * Returns 0, KERR_NODEVICE (msg lists what was found) or KERR_OPENCL.
 * Release with clrt_close, also after a failure.
 */
int clrt_open(struct clrt *rt, const struct device_spec *spec, char *msg, size_t n);
void clrt_close(struct clrt *rt);

/* Fills info for dev/platform (all strings NUL-terminated). */
void clrt_devinfo(cl_platform_id plat, cl_device_id dev, struct devinfo *info);

/* New JSON object describing info. */
json_t *clrt_devinfo_json(const struct devinfo *info);

/* A stable key for caches: platform|device|driver|version, as hex SHA-256 (65 bytes). */
void clrt_device_key(const struct devinfo *info, char key[65]);

/* Milliseconds between the START of first and the END of last. */
double clrt_event_span_ms(cl_event first, cl_event last);

/* Monotonic host clock in milliseconds. */
double clrt_now_ms(void);

#endif
