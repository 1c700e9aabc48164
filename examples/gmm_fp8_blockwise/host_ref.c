/*
 * host_ref.c - the host reference of gmm_fp8_blockwise (see host_ref.h).
 * Written from the definitions, independently of the OpenCL sources.
 */
#include "host_ref.h"

#include <math.h>
#include <stdlib.h>

double e4m3_ref_decode(unsigned code)
{
	unsigned s = (code >> 7) & 1u, e = (code >> 3) & 15u, m = code & 7u;
	double v;

	if (e == 15u && m == 7u)
		return NAN;
	if (e > 0)
		v = ldexp(1.0 + m / 8.0, (int)e - 7);
	else
		v = ldexp(m / 8.0, -6);
	return s ? -v : v;
}

unsigned e4m3_ref_sanitize(unsigned code)
{
	code &= 0xFFu;
	return code == 0x7Fu || code == 0xFFu ? 0u : code;
}

unsigned fp8_ref_byte(const uint32_t *p, size_t i)
{
	return (unsigned)(p[i / 4] >> (8 * (i % 4))) & 0xFFu;
}

void gmm_fp8_ref_bounds(const int32_t *group_sizes, int G, int M, int *start)
{
	long long s = 0;

	for (int g = 0; g < G; g++) {
		start[g] = (int)(s < M ? s : M);
		s += group_sizes[g] > 0 ? group_sizes[g] : 0;
	}
	start[G] = M;
}

static double load(const uint32_t *p, size_t i)
{
	return e4m3_ref_decode(e4m3_ref_sanitize(fp8_ref_byte(p, i)));
}

void gmm_fp8_host_ref(const uint32_t *lhs, const float *lhs_scale, const uint32_t *rhs,
		      const float *rhs_scale, const int32_t *group_sizes, float *out, int M, int K,
		      int N, int G)
{
	int KB = (K + 127) / 128, NB = (N + 127) / 128;
	int *start = malloc(((size_t)G + 1) * sizeof(*start));

	if (!start)
		abort();
	gmm_fp8_ref_bounds(group_sizes, G, M, start);
	for (int g = 0; g < G; g++) {
		for (int m = start[g]; m < start[g + 1]; m++) {
			for (int n = 0; n < N; n++) {
				double sum = 0.0;

				for (int k = 0; k < K; k++) {
					double a = load(lhs, (size_t)m * K + k) *
						   lhs_scale[(size_t)(m / 128) * KB + k / 128];
					double b = load(rhs, ((size_t)g * K + k) * N + n) *
						   rhs_scale[((size_t)g * KB + k / 128) * NB +
							     n / 128];

					sum += a * b;
				}
				out[(size_t)m * N + n] = (float)sum;
			}
		}
	}
	free(start);
}
