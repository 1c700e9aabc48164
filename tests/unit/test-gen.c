/*
 * world_gen (evalpod/world-gen.c): a buffer's inputs for a seed, against the
 * recipe docs/evalpod.md gives (splitmix64 from seed x 0x100000001b3 ^
 * (index + 1) x 0xcbf29ce484222325, one draw per element, two for normal),
 * written here one element at a time, for every distribution and element
 * type: the same bytes, so that inputs (and the reference outputs a
 * session caches for them) do not change when the generator is made faster.
 */
#include "batch.h"
#include "splitmix.h"
#include "test.h"
#include "world.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static double u01(uint64_t *s)
{
	return (double)(splitmix_next(s) >> 11) / 9007199254740992.0;
}

static double value(const struct init_spec *in, uint64_t *s, size_t i)
{
	double u1, u2;

	switch (in->dist) {
	case INIT_ZERO: return 0;
	case INIT_CONST: return in->a;
	case INIT_UNIFORM: return in->a + (in->b - in->a) * u01(s);
	case INIT_NORMAL:
		u1 = u01(s);
		u2 = u01(s);
		return in->a + in->b * sqrt(-2.0 * log(u1 < 1e-300 ? 1e-300 : u1)) *
				       cos(6.283185307179586 * u2);
	case INIT_INT: return in->a + floor((in->b - in->a + 1.0) * u01(s));
	case INIT_IOTA: return (double)i;
	}
	return 0;
}

/*
 * Element i stored as the type: floats rounded, integers the floor of the
 * value, unsigned ones 0 below 0 (written byte-wise, as the buffer's bytes).
 */
static void put(void *base, enum elem_type t, size_t i, double v)
{
	const double whole = floor(v), unsig = v < 0 ? 0 : whole;
	union {
		float f;
		double d;
		int32_t i32;
		uint32_t u32;
		int64_t i64;
		uint64_t u64;
	} x = { 0 };

	if (t == ELEM_FLOAT)
		x.f = (float)v;
	else if (t == ELEM_DOUBLE)
		x.d = v;
	else if (t == ELEM_INT)
		x.i32 = (int32_t)whole;
	else if (t == ELEM_UINT)
		x.u32 = (uint32_t)unsig;
	else if (t == ELEM_LONG)
		x.i64 = (int64_t)whole;
	else if (t == ELEM_ULONG)
		x.u64 = (uint64_t)unsig;
	memcpy((unsigned char *)base + i * elem_type_size(t), &x, elem_type_size(t));
}

/* The recipe, one element at a time. */
static void recipe(const struct buf_spec *spec, uint64_t seed, size_t index, void *out,
		   size_t count)
{
	uint64_t s = seed * 0x100000001b3ull ^ (index + 1) * 0xcbf29ce484222325ull;
	struct init_spec zero = { INIT_ZERO, 0, 0 };
	const struct init_spec *in = spec->role == ROLE_SCRATCH ? &zero : &spec->init;

	for (size_t i = 0; i < count; i++)
		put(out, spec->type, i, value(in, &s, i));
}

static const struct init_spec inits[] = {
	{ INIT_ZERO, 0, 0 },     { INIT_CONST, -2.75, 0 },       { INIT_CONST, 3e9, 0 },
	{ INIT_UNIFORM, -1, 1 }, { INIT_UNIFORM, 0.005, 0.015 }, { INIT_UNIFORM, -1e6, 5e5 },
	{ INIT_NORMAL, 0, 1 },   { INIT_NORMAL, 10, 0.5 },       { INIT_INT, 0, 4294967295.0 },
	{ INIT_INT, -5, 5 },     { INIT_INT, 0, 512 },           { INIT_INT, -100000, -7 },
	{ INIT_IOTA, 0, 0 },
};

static const enum elem_type types[] = { ELEM_FLOAT, ELEM_DOUBLE, ELEM_INT,
					ELEM_UINT,  ELEM_LONG,   ELEM_ULONG };

static const size_t counts[] = { 0, 1, 2, 7, 64, 1000, 4099 };

/*
 * Whether every value of the init converts to the type without undefined
 * behaviour (a float outside int32's range does not): the two pairs that
 * do not are left out.
 */
static int fits(const struct init_spec *in, enum elem_type t)
{
	double hi = in->dist == INIT_CONST ? in->a : in->b;

	if (t != ELEM_INT || in->dist == INIT_ZERO || in->dist == INIT_IOTA ||
	    in->dist == INIT_NORMAL)
		return 1;
	return in->a >= -2147483648.0 && hi < 2147483648.0;
}

TEST(same_bytes_as_the_recipe)
{
	enum buf_role roles[] = { ROLE_INPUT, ROLE_INOUT, ROLE_SCRATCH };
	size_t cases = 0, skipped = 0, differ = 0;

	for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++)
		for (size_t d = 0; d < sizeof(inits) / sizeof(inits[0]); d++)
			for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
				for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
					struct buf_spec spec = { .type = types[t],
								 .role = roles[r],
								 .init = inits[d] };
					size_t n = counts[c], bytes = n * elem_type_size(types[t]);
					unsigned char *want = malloc(bytes + 16),
						      *got = malloc(bytes + 16);
					uint64_t seed = 1 + 977 * c + 31 * d;

					if (!fits(&inits[d], types[t])) {
						skipped++;
						free(want);
						free(got);
						continue;
					}
					memset(want, 0xa5, bytes + 16);
					memset(got, 0xa5, bytes + 16);
					recipe(&spec, seed, t + r, want, n);
					world_gen(&spec, seed, t + r, got, n);
					cases++;
					/* The bytes past the buffer too: nothing written there. */
					if (memcmp(want, got, bytes + 16)) {
						differ++;
						fprintf(stderr,
							"role %zu init %zu type %zu count %zu: "
							"bytes differ\n",
							r, d, t, n);
					}
					free(want);
					free(got);
				}
	CHECK(cases + skipped == 3 * 13 * 6 * 7 && skipped == 3 * 2 * 7);
	CHECK(differ == 0);
}

/* The first elements for seed 1 at index 0: a change here changes every input. */
TEST(pinned)
{
	struct buf_spec f = { .type = ELEM_FLOAT,
			      .role = ROLE_INPUT,
			      .init = { INIT_UNIFORM, -1, 1 } };
	struct buf_spec u = { .type = ELEM_UINT,
			      .role = ROLE_INPUT,
			      .init = { INIT_INT, 0, 4294967295.0 } };
	float fv[3];
	uint32_t uv[3], bits[3];

	world_gen(&f, 1, 0, fv, 3);
	world_gen(&u, 1, 0, uv, 3);
	memcpy(bits, fv, sizeof(bits));
	CHECK(bits[0] == 0x3f26eec3u && bits[1] == 0xbef67f78u && bits[2] == 0xbea1813fu);
	CHECK(uv[0] == 3547816257u && uv[1] == 1113596392u && uv[2] == 1470083149u);
	/* Another seed, another buffer index: other values. */
	world_gen(&f, 2, 0, fv, 1);
	memcpy(bits, fv, 4);
	CHECK(bits[0] != 0x3f26eec3u);
	world_gen(&f, 1, 1, fv, 1);
	memcpy(bits, fv, 4);
	CHECK(bits[0] != 0x3f26eec3u);
}

int main(void)
{
	RUN(same_bytes_as_the_recipe);
	RUN(pinned);
	return test_summary();
}
