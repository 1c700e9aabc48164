/*
 * fuzz-spec.c - the spec reader (controller/spec*.c) on any bytes, written
 * to spec.yaml in the harness's folder.  Next to it lie affine.cl and
 * affine_ref.cl (tests/data/kctl's kernels), so that a spec naming them
 * (as the corpus does) gets past the files to the problem, its
 * expressions and their resolution at every shape.
 */
#include "fuzz.h"
#include "spec.h"

#include <stdlib.h>
#include <string.h>

static const char fuzz_template[] =
	"// y = 2x + 1, U elements per work-item, LS work-items per group.\n"
	"// EVOLVE-BLOCK-START\n"
	"#ifndef LS\n"
	"#define LS 64\n"
	"#endif\n"
	"#ifndef U\n"
	"#define U 1\n"
	"#endif\n"
	"__kernel void affine(__global const float *x, __global float *y, int n)\n"
	"{\n"
	"\tint base = get_global_id(0) * U;\n"
	"\n"
	"\tfor (int j = 0; j < U; j++)\n"
	"\t\tif (base + j < n)\n"
	"\t\t\ty[base + j] = fma(x[base + j], 2.0f, 1.0f);\n"
	"}\n"
	"// EVOLVE-BLOCK-END\n";

static const char fuzz_reference[] =
	"__kernel void affine_ref(__global const float *x, __global float *y, int n)\n"
	"{\n"
	"\tint i = get_global_id(0);\n"
	"\n"
	"\tif (i < n)\n"
	"\t\ty[i] = 2.0f * x[i] + 1.0f;\n"
	"}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int files;
	struct spec s;
	char *path, msg[2048];

	if (!files) {
		files = 1;
		free(fuzz_write("affine.cl", fuzz_template, strlen(fuzz_template)));
		free(fuzz_write("affine_ref.cl", fuzz_reference, strlen(fuzz_reference)));
	}
	path = fuzz_write("spec.yaml", data, size);
	memset(&s, 0, sizeof(s));
	spec_load(&s, path, msg, sizeof(msg));
	spec_release(&s);
	free(path);
	return 0;
}
