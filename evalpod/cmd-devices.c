/*
 * cmd-devices.c - `evalpod devices [-o json] [--measure]`: the OpenCL
 * platforms and devices, like a short clinfo, with the device peaks
 * evalpod has measured (from its cache; --measure measures them now).
 */
#include "run.h"
#include "clrt.h"
#include "err.h"
#include "jsonx.h"
#include "log.h"
#include "peaks.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * index: how many devices of the same name come before this one on its
 * platform, so that two identical GPUs are told apart.
 */
static json_t *device_entry(cl_platform_id plat, cl_device_id dev, int index, int measure,
			    const char *cache)
{
	struct devinfo info;
	struct peaks pk;
	json_t *o;
	char msg[512];

	clrt_devinfo(plat, dev, &info);
	o = clrt_devinfo_json(&info);
	memset(&pk, 0, sizeof(pk));
	if (measure) {
		struct device_spec spec = { info.platform, info.name, 0, index };
		struct clrt rt;

		/* --measure measures now and raises the cache where it was low. */
		if (!clrt_open(&rt, &spec, msg, sizeof(msg)) &&
		    !peaks_get(&rt, cache, &pk, 0, msg, sizeof(msg))) {
			json_object_set_new(o, "peaks", peaks_json(&pk));
		} else
			json_object_set_new(o, "peaks_error", json_string(msg));
		clrt_close(&rt);
	} else if (!peaks_read_cache(&info, cache, &pk)) {
		json_object_set_new(o, "peaks", peaks_json(&pk));
	} else {
		json_object_set_new(o, "peaks", json_null());
	}
	return o;
}

static int same_name_before(const cl_device_id *devs, cl_uint d)
{
	char name[256] = "", other[256] = "";
	int count = 0;

	clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof(name) - 1, name, NULL);
	for (cl_uint i = 0; i < d; i++) {
		memset(other, 0, sizeof(other));
		clGetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof(other) - 1, other, NULL);
		count += !strcmp(name, other);
	}
	return count;
}

static void print_text(json_t *plats)
{
	size_t i, j;
	json_t *p, *d;

	json_array_foreach (plats, i, p) {
		printf("platform %zu: %s (%s)\n", i, json_string_value(json_object_get(p, "name")),
		       json_string_value(json_object_get(p, "version")));
		json_array_foreach (json_object_get(p, "devices"), j, d) {
			json_t *pk = json_object_get(d, "peaks");

			printf("  device %zu: %s [%s]\n", j,
			       json_string_value(json_object_get(d, "name")),
			       json_string_value(json_object_get(d, "type")));
			printf("    driver %s, %s\n",
			       json_string_value(json_object_get(d, "driver")),
			       json_string_value(json_object_get(d, "version")));
			printf("    %lld compute units at %lld MHz, %.1f GiB global, %lld KiB "
			       "local, "
			       "%lld KiB cache\n",
			       (long long)json_integer_value(json_object_get(d, "compute_units")),
			       (long long)json_integer_value(json_object_get(d, "max_clock_mhz")),
			       (double)json_integer_value(json_object_get(d, "global_mem_bytes")) /
				       (1 << 30),
			       (long long)json_integer_value(
				       json_object_get(d, "local_mem_bytes")) /
				       1024,
			       (long long)json_integer_value(
				       json_object_get(d, "global_cache_bytes")) /
				       1024);
			if (json_is_object(pk))
				printf("    measured peaks: %.1f GFLOP/s fp32, %.1f GB/s, launch "
				       "%.1f us\n",
				       json_real_value(json_object_get(pk, "gflops")),
				       json_real_value(json_object_get(pk, "gbs")),
				       json_real_value(json_object_get(pk, "launch_us")));
			else
				printf("    measured peaks: not yet (evalpod devices --measure)\n");
		}
	}
}

int cmd_devices(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "measure", no_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	cl_platform_id plats[16];
	cl_uint nplat = 0;
	json_t *out = json_array();
	int c, as_json = 0, measure = 0;
	char buf[PATH_MAX];
	const char *cache = peaks_cache_dir(buf, sizeof(buf));

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c == 'o' && !strcmp(optarg, "json")) {
			as_json = 1;
		} else if (c == 'm') {
			measure = 1;
		} else {
			if (c == 'o')
				log_error("-o takes json (text is the default), not '%s'", optarg);
			fputs("usage: evalpod devices [-o json] [--measure]\n", stderr);
			json_decref(out);
			return 2;
		}
	}
	if (clGetPlatformIDs(16, plats, &nplat) != CL_SUCCESS || nplat == 0) {
		log_error("no OpenCL platform found: is an ICD (e.g. pocl-opencl-icd) installed?");
		json_decref(out);
		return 3;
	}
	for (cl_uint p = 0; p < nplat && p < 16; p++) {
		cl_device_id devs[16];
		cl_uint ndev = 0;
		char name[256] = "", ver[256] = "";
		json_t *devices = json_array();

		clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof(name) - 1, name, NULL);
		clGetPlatformInfo(plats[p], CL_PLATFORM_VERSION, sizeof(ver) - 1, ver, NULL);
		if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &ndev) != CL_SUCCESS)
			ndev = 0;
		for (cl_uint d = 0; d < ndev && d < 16; d++)
			json_array_append_new(devices, device_entry(plats[p], devs[d],
								    same_name_before(devs, d),
								    measure, cache));
		json_array_append_new(out, json_pack("{s:s, s:s, s:o}", "name", name, "version",
						     ver, "devices", devices));
	}
	if (as_json) {
		char *text = jx_dump(out);

		fputs(text, stdout);
		free(text);
	} else {
		print_text(out);
	}
	json_decref(out);
	return 0;
}
