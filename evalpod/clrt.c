#include "clrt.h"
#include "err.h"
#include "sbuf.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ERRNAME(x) [-(x)] = #x
static const char *const cl_err_names[] = {
	ERRNAME(CL_DEVICE_NOT_FOUND),
	ERRNAME(CL_DEVICE_NOT_AVAILABLE),
	ERRNAME(CL_COMPILER_NOT_AVAILABLE),
	ERRNAME(CL_MEM_OBJECT_ALLOCATION_FAILURE),
	ERRNAME(CL_OUT_OF_RESOURCES),
	ERRNAME(CL_OUT_OF_HOST_MEMORY),
	ERRNAME(CL_PROFILING_INFO_NOT_AVAILABLE),
	ERRNAME(CL_MEM_COPY_OVERLAP),
	ERRNAME(CL_IMAGE_FORMAT_MISMATCH),
	ERRNAME(CL_IMAGE_FORMAT_NOT_SUPPORTED),
	ERRNAME(CL_BUILD_PROGRAM_FAILURE),
	ERRNAME(CL_MAP_FAILURE),
	ERRNAME(CL_MISALIGNED_SUB_BUFFER_OFFSET),
	ERRNAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
	ERRNAME(CL_COMPILE_PROGRAM_FAILURE),
	ERRNAME(CL_LINKER_NOT_AVAILABLE),
	ERRNAME(CL_LINK_PROGRAM_FAILURE),
	ERRNAME(CL_DEVICE_PARTITION_FAILED),
	ERRNAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE),
	ERRNAME(CL_INVALID_VALUE),
	ERRNAME(CL_INVALID_DEVICE_TYPE),
	ERRNAME(CL_INVALID_PLATFORM),
	ERRNAME(CL_INVALID_DEVICE),
	ERRNAME(CL_INVALID_CONTEXT),
	ERRNAME(CL_INVALID_QUEUE_PROPERTIES),
	ERRNAME(CL_INVALID_COMMAND_QUEUE),
	ERRNAME(CL_INVALID_HOST_PTR),
	ERRNAME(CL_INVALID_MEM_OBJECT),
	ERRNAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR),
	ERRNAME(CL_INVALID_IMAGE_SIZE),
	ERRNAME(CL_INVALID_SAMPLER),
	ERRNAME(CL_INVALID_BINARY),
	ERRNAME(CL_INVALID_BUILD_OPTIONS),
	ERRNAME(CL_INVALID_PROGRAM),
	ERRNAME(CL_INVALID_PROGRAM_EXECUTABLE),
	ERRNAME(CL_INVALID_KERNEL_NAME),
	ERRNAME(CL_INVALID_KERNEL_DEFINITION),
	ERRNAME(CL_INVALID_KERNEL),
	ERRNAME(CL_INVALID_ARG_INDEX),
	ERRNAME(CL_INVALID_ARG_VALUE),
	ERRNAME(CL_INVALID_ARG_SIZE),
	ERRNAME(CL_INVALID_KERNEL_ARGS),
	ERRNAME(CL_INVALID_WORK_DIMENSION),
	ERRNAME(CL_INVALID_WORK_GROUP_SIZE),
	ERRNAME(CL_INVALID_WORK_ITEM_SIZE),
	ERRNAME(CL_INVALID_GLOBAL_OFFSET),
	ERRNAME(CL_INVALID_EVENT_WAIT_LIST),
	ERRNAME(CL_INVALID_EVENT),
	ERRNAME(CL_INVALID_OPERATION),
	ERRNAME(CL_INVALID_GL_OBJECT),
	ERRNAME(CL_INVALID_BUFFER_SIZE),
	ERRNAME(CL_INVALID_MIP_LEVEL),
	ERRNAME(CL_INVALID_GLOBAL_WORK_SIZE),
	ERRNAME(CL_INVALID_PROPERTY),
	ERRNAME(CL_INVALID_IMAGE_DESCRIPTOR),
	ERRNAME(CL_INVALID_COMPILER_OPTIONS),
	ERRNAME(CL_INVALID_LINKER_OPTIONS),
	ERRNAME(CL_INVALID_DEVICE_PARTITION_COUNT),
};

int clrt_is_pocl(const struct devinfo *info)
{
	return strstr(info->platform, "Portable Computing Language") != NULL;
}

const char *clrt_errstr(cl_int err)
{
	size_t i = (size_t)(err < 0 ? -err : err);

	if (err == CL_SUCCESS)
		return "CL_SUCCESS";
	if (err > 0 || i >= sizeof(cl_err_names) / sizeof(cl_err_names[0]) || !cl_err_names[i])
		return "CL_UNKNOWN_ERROR";
	return cl_err_names[i];
}

static void dev_str(cl_device_id dev, cl_device_info what, char *out, size_t n)
{
	out[0] = '\0';
	if (clGetDeviceInfo(dev, what, n, out, NULL) != CL_SUCCESS)
		out[0] = '\0';
	out[n - 1] = '\0';
}

static unsigned long long dev_ulong(cl_device_id dev, cl_device_info what, size_t size)
{
	unsigned long long v = 0;
	cl_uint u = 0;
	size_t s = 0;

	if (size == sizeof(cl_uint)) {
		clGetDeviceInfo(dev, what, sizeof(u), &u, NULL);
		return u;
	}
	if (size == sizeof(size_t) && what == CL_DEVICE_MAX_WORK_GROUP_SIZE) {
		clGetDeviceInfo(dev, what, sizeof(s), &s, NULL);
		return s;
	}
	clGetDeviceInfo(dev, what, sizeof(v), &v, NULL);
	return v;
}

void clrt_devinfo(cl_platform_id plat, cl_device_id dev, struct devinfo *info)
{
	cl_device_type t = 0;

	memset(info, 0, sizeof(*info));
	clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof(info->platform), info->platform, NULL);
	clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof(info->platform_version),
			  info->platform_version, NULL);
	info->platform[sizeof(info->platform) - 1] = '\0';
	info->platform_version[sizeof(info->platform_version) - 1] = '\0';
	dev_str(dev, CL_DEVICE_NAME, info->name, sizeof(info->name));
	dev_str(dev, CL_DEVICE_VENDOR, info->vendor, sizeof(info->vendor));
	dev_str(dev, CL_DRIVER_VERSION, info->driver, sizeof(info->driver));
	dev_str(dev, CL_DEVICE_VERSION, info->version, sizeof(info->version));
	clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(t), &t, NULL);
	strlcpy(info->type,
		(t & CL_DEVICE_TYPE_GPU)           ? "gpu"
		: (t & CL_DEVICE_TYPE_CPU)         ? "cpu"
		: (t & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator"
						   : "other",
		sizeof(info->type));
	info->compute_units = (unsigned)dev_ulong(dev, CL_DEVICE_MAX_COMPUTE_UNITS, 4);
	info->max_clock_mhz = (unsigned)dev_ulong(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, 4);
	info->global_mem = dev_ulong(dev, CL_DEVICE_GLOBAL_MEM_SIZE, 8);
	info->local_mem = dev_ulong(dev, CL_DEVICE_LOCAL_MEM_SIZE, 8);
	info->global_cache = dev_ulong(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, 8);
	info->max_alloc = dev_ulong(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, 8);
	info->max_wg_size = (size_t)dev_ulong(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(size_t));
	info->base_align_bytes = (unsigned)dev_ulong(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, 4) / 8;
	if (info->base_align_bytes < 16)
		info->base_align_bytes = 16;
}

json_t *clrt_devinfo_json(const struct devinfo *d)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			 "platform", d->platform, "platform_version", d->platform_version, "name",
			 d->name, "vendor", d->vendor, "driver", d->driver, "version", d->version,
			 "type", d->type, "compute_units", (json_int_t)d->compute_units,
			 "max_clock_mhz", (json_int_t)d->max_clock_mhz, "global_mem_bytes",
			 (json_int_t)d->global_mem, "local_mem_bytes", (json_int_t)d->local_mem,
			 "global_cache_bytes", (json_int_t)d->global_cache, "max_alloc_bytes",
			 (json_int_t)d->max_alloc, "max_work_group_size",
			 (json_int_t)d->max_wg_size);
}

void clrt_device_key(const struct devinfo *info, char key[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	struct sbuf b = SBUF_INIT;

	sbuf_addf(&b, "%s|%s|%s|%s|%s", info->platform, info->platform_version, info->name,
		  info->driver, info->version);
	SHA256((const unsigned char *)b.buf, b.len, md);
	for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
		snprintf(key + 2 * i, 3, "%02x", md[i]);
	sbuf_release(&b);
}

static const cl_device_type dev_types[] = {
	CL_DEVICE_TYPE_ALL,
	CL_DEVICE_TYPE_GPU,
	CL_DEVICE_TYPE_CPU,
	CL_DEVICE_TYPE_ACCELERATOR,
};

static int dev_matches(const struct device_spec *spec, const struct devinfo *info)
{
	if (!spec)
		return 1;
	if (spec->platform && *spec->platform && !strstr(info->platform, spec->platform))
		return 0;
	if (spec->device && *spec->device && !strstr(info->name, spec->device))
		return 0;
	return 1;
}

/* Picks platform/device; appends what it saw to seen. */
static int clrt_pick(struct clrt *rt, const struct device_spec *spec, struct sbuf *seen)
{
	cl_platform_id plats[16];
	cl_uint nplat = 0;
	int want = spec ? spec->index : 0;

	if (clGetPlatformIDs(16, plats, &nplat) != CL_SUCCESS)
		nplat = 0;
	for (cl_uint p = 0; p < nplat && p < 16; p++) {
		cl_device_id devs[16];
		cl_uint ndev = 0;
		cl_device_type t = dev_types[spec ? spec->type : 0];

		if (clGetDeviceIDs(plats[p], t, 16, devs, &ndev) != CL_SUCCESS)
			continue;
		for (cl_uint d = 0; d < ndev && d < 16; d++) {
			struct devinfo info;

			clrt_devinfo(plats[p], devs[d], &info);
			sbuf_addf(seen, "%s'%s' on '%s'", seen->len ? ", " : "", info.name,
				  info.platform);
			if (!dev_matches(spec, &info) || want-- > 0)
				continue;
			rt->platform = plats[p];
			rt->device = devs[d];
			rt->info = info;
			return 0;
		}
	}
	return KERR_NODEVICE;
}

int clrt_open(struct clrt *rt, const struct device_spec *spec, char *msg, size_t n)
{
	cl_queue_properties props[] = { CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0 };
	struct sbuf seen = SBUF_INIT;
	cl_int err = CL_SUCCESS;
	int rc = 0;

	memset(rt, 0, sizeof(*rt));
	if (clrt_pick(rt, spec, &seen)) {
		rc = kerr_set(msg, n, KERR_NODEVICE,
			      "no OpenCL device matches the batch's device selection (found: %s)",
			      seen.len ? seen.buf : "no platforms; is an ICD installed?");
		goto out;
	}
	rt->ctx = clCreateContext(NULL, 1, &rt->device, NULL, NULL, &err);
	if (err != CL_SUCCESS) {
		rc = kerr_set(msg, n, KERR_OPENCL, "clCreateContext on '%s': %s", rt->info.name,
			      clrt_errstr(err));
		goto out;
	}
	rt->queue = clCreateCommandQueueWithProperties(rt->ctx, rt->device, props, &err);
	if (err != CL_SUCCESS)
		rc = kerr_set(msg, n, KERR_OPENCL, "clCreateCommandQueue on '%s': %s",
			      rt->info.name, clrt_errstr(err));
out:
	sbuf_release(&seen);
	return rc;
}

void clrt_close(struct clrt *rt)
{
	if (rt->queue) {
		clFinish(rt->queue);
		clReleaseCommandQueue(rt->queue);
	}
	if (rt->ctx)
		clReleaseContext(rt->ctx);
	memset(rt, 0, sizeof(*rt));
}

double clrt_event_span_ms(cl_event first, cl_event last)
{
	cl_ulong start = 0, end = 0;

	clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof(start), &start, NULL);
	clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof(end), &end, NULL);
	return end > start ? (double)(end - start) / 1e6 : 0.0;
}

double clrt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
