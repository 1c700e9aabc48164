/*
 * world-gen.c - a buffer's inputs for a seed (world_gen, see world.h): its
 * init drawn with splitmix64, one draw per element (two for a normal
 * distribution), as docs/evalpod.md states.  world.c uploads them.
 */
#include "world.h"
#include "splitmix.h"

#include <math.h>
#include <string.h>

static double unit01(uint64_t *s)
{
	return (double)(splitmix_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static double draw(const struct init_spec *in, uint64_t *s, size_t i)
{
	switch (in->dist) {
	case INIT_ZERO: return 0.0;
	case INIT_CONST: return in->a;
	case INIT_UNIFORM: return in->a + (in->b - in->a) * unit01(s);
	case INIT_NORMAL: {
		double u1 = unit01(s), u2 = unit01(s);

		if (u1 < 1e-300)
			u1 = 1e-300;
		return in->a + in->b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
	}
	case INIT_INT: return in->a + floor((in->b - in->a + 1.0) * unit01(s));
	case INIT_IOTA: return (double)i;
	}
	return 0.0;
}

static void store_elem(void *base, enum elem_type t, size_t i, double v)
{
	switch (t) {
	case ELEM_FLOAT: ((float *)base)[i] = (float)v; break;
	case ELEM_DOUBLE: ((double *)base)[i] = v; break;
	case ELEM_INT: ((int32_t *)base)[i] = (int32_t)floor(v); break;
	case ELEM_UINT: ((uint32_t *)base)[i] = (uint32_t)(v < 0 ? 0 : floor(v)); break;
	case ELEM_LONG: ((int64_t *)base)[i] = (int64_t)floor(v); break;
	case ELEM_ULONG: ((uint64_t *)base)[i] = (uint64_t)(v < 0 ? 0 : floor(v)); break;
	case ELEM_NR: break;
	}
}

/*
 * The pairs of distribution and type that inputs mostly are, as loops of
 * their own: the very arithmetic of draw() and store_elem(), so the same
 * bits, without two switches and a call per element (every worker
 * generates its inputs for every seed).  Returns 0 for any other pair.
 */
static int gen_common(void *base, enum elem_type t, const struct init_spec *in, uint64_t *s,
		      size_t count)
{
	const double a = in->a;

	if (in->dist == INIT_UNIFORM) {
		const double w = in->b - in->a;

		if (t == ELEM_FLOAT) {
			float *p = base;

			for (size_t i = 0; i < count; i++)
				p[i] = (float)(a + w * unit01(s));
			return 1;
		}
		if (t == ELEM_DOUBLE) {
			double *p = base;

			for (size_t i = 0; i < count; i++)
				p[i] = a + w * unit01(s);
			return 1;
		}
	} else if (in->dist == INIT_INT) {
		const double w = in->b - in->a + 1.0;

		if (t == ELEM_INT) {
			int32_t *p = base;

			for (size_t i = 0; i < count; i++)
				p[i] = (int32_t)floor(a + floor(w * unit01(s)));
			return 1;
		}
		if (t == ELEM_UINT) {
			uint32_t *p = base;

			for (size_t i = 0; i < count; i++) {
				double v = a + floor(w * unit01(s));

				p[i] = (uint32_t)(v < 0 ? 0 : floor(v));
			}
			return 1;
		}
	}
	return 0;
}

void world_gen(const struct buf_spec *spec, uint64_t seed, size_t index, void *out, size_t count)
{
	uint64_t s = seed * 0x100000001b3ull ^ (index + 1) * 0xcbf29ce484222325ull;
	const struct init_spec *in = &spec->init;

	/* 0.0 stored as any element type is all zero bits. */
	if (spec->role == ROLE_SCRATCH || in->dist == INIT_ZERO) {
		memset(out, 0, count * elem_type_size(spec->type));
		return;
	}
	if (gen_common(out, spec->type, in, &s, count))
		return;
	for (size_t i = 0; i < count; i++)
		store_elem(out, spec->type, i, draw(in, &s, i));
}
