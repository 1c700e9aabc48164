/*
 * world_compare and world_suspects (evalpod/world.c): every figure of
 * world_compare against a plain per-element judge written here, on buffers
 * of every element type with NaNs, infinities, poison and values on both
 * sides of the tolerance, across the block boundaries of its loop; and the
 * judge's quick look, world_suspects, never passing what world_compare
 * fails.
 */
#include "batch.h"
#include "splitmix.h"
#include "test.h"
#include "world.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* world.c's patterns (the judge's poison); a change there shows up here as unwritten == 0. */
static const uint32_t poison32[2] = { 0x7fe5a5a5u, 0x7fd3c3c3u };
static const uint64_t poison64[2] = { 0x7ffa5a5a5a5a5a5aull, 0x7ff9c3c3c3c3c3c3ull };

static const double ATOL = 1e-3, RTOL = 1e-4;

static double elem(const void *base, enum elem_type t, size_t i)
{
	switch (t) {
	case ELEM_FLOAT: return ((const float *)base)[i];
	case ELEM_DOUBLE: return ((const double *)base)[i];
	case ELEM_INT: return ((const int32_t *)base)[i];
	case ELEM_UINT: return ((const uint32_t *)base)[i];
	case ELEM_LONG: return (double)((const int64_t *)base)[i];
	case ELEM_ULONG: return (double)((const uint64_t *)base)[i];
	default: return 0;
	}
}

static int poisoned(const void *base, size_t esize, size_t i, enum poison p)
{
	const void *pattern = esize == 8 ? (const void *)&poison64[p] : (const void *)&poison32[p];

	return !memcmp((const char *)base + i * esize, pattern, esize);
}

/*
 * The contract, one element at a time: |got - ref| <= atol + rtol * |ref|,
 * a non-finite ref matched only by the same NaN-ness or infinity, got
 * non-finite against a finite ref a mismatch; the worst element the first
 * with the largest (error / tolerance).  *bad gets how many elements are
 * mismatched or unwritten.
 */
static void oracle(const struct wbuf *wb, const void *got, const void *ref, int pc, enum poison p,
		   struct cmp_stats *s, size_t *bad)
{
	double sum_abs = 0, sum_d2 = 0, sum_r2 = 0, worst = -1;

	memset(s, 0, sizeof(*s));
	s->count = wb->count;
	*bad = 0;
	for (size_t i = 0; i < wb->count; i++) {
		double g = elem(got, wb->spec->type, i), r = elem(ref, wb->spec->type, i);
		double d = fabs(g - r), tol = ATOL + RTOL * fabs(r), score;
		int unw = pc && poisoned(got, wb->esize, i, p), mis;

		if (unw && !s->unwritten++)
			s->first_unwritten = i;
		if (!isfinite(g) && isfinite(r)) {
			s->nonfinite++;
			d = INFINITY;
		} else if (!isfinite(r)) {
			d = (isnan(r) ? isnan(g) : g == r) ? 0.0 : INFINITY;
			tol = ATOL;
		}
		mis = !(d <= tol);
		s->mismatches += (size_t)mis;
		*bad += (size_t)(mis || unw);
		score = isfinite(d) ? d / (tol > 0 ? tol : 1e-300) : HUGE_VAL;
		if (score > worst) {
			worst = score;
			s->worst = i;
			s->worst_got = g;
			s->worst_ref = r;
		}
		if (d > s->max_abs)
			s->max_abs = d;
		if (isfinite(d)) {
			sum_abs += d;
			sum_d2 += d * d;
		}
		if (isfinite(r))
			sum_r2 += r * r;
	}
	s->mean_abs = wb->count ? sum_abs / (double)wb->count : 0;
	s->rel_l2 = sum_r2 > 0 ? sqrt(sum_d2 / sum_r2) : sqrt(sum_d2);
	if (s->nonfinite || !isfinite(s->max_abs))
		s->rel_l2 = INFINITY;
}

static int same(double a, double b)
{
	return a == b || (isnan(a) && isnan(b));
}

static void put(void *base, enum elem_type t, size_t i, double v)
{
	switch (t) {
	case ELEM_FLOAT: ((float *)base)[i] = (float)v; break;
	case ELEM_DOUBLE: ((double *)base)[i] = v; break;
	case ELEM_INT: ((int32_t *)base)[i] = (int32_t)v; break;
	case ELEM_UINT: ((uint32_t *)base)[i] = (uint32_t)v; break;
	case ELEM_LONG: ((int64_t *)base)[i] = (int64_t)v; break;
	case ELEM_ULONG: ((uint64_t *)base)[i] = (uint64_t)v; break;
	default: break;
	}
}

/*
 * ref drawn per element, got a copy with some elements moved: inside or
 * just outside the tolerance, far off, NaN or infinite (float types), the
 * poison, or ref itself NaN or infinite.  mix 0: nothing moved outside it
 * (integers not moved at all: a truncated move can land outside).
 */
static void fill(enum elem_type t, size_t esize, size_t n, void *got, void *ref, uint64_t *rng,
		 int mix)
{
	int fl = elem_type_is_float(t);

	for (size_t i = 0; i < n; i++) {
		uint64_t x = splitmix_next(rng);
		double r =
			fl ? (double)(int64_t)(x % 2000001) / 997.0 - 1000.0 : (double)(x % 100000);
		double tol = ATOL + RTOL * fabs(r), g = r;
		int what = mix ? (int)((x >> 32) % 40) : fl ? (int)((x >> 32) % 3) : 0;

		if (what == 1 || what == 2) /* anywhere inside: each a new worst, or not */
			g = r + ((double)((x >> 8) % 1901) / 1000.0 - 0.95) * tol;
		else if (what == 3)
			g = r + 3 * tol;
		else if (what == 4)
			g = r + 1000;
		put(ref, t, i, r);
		put(got, t, i, g);
		if (what == 5 && fl)
			put(got, t, i, NAN);
		if (what == 6 && fl)
			put(got, t, i, (x & 1) ? INFINITY : -INFINITY);
		if (what == 7 && fl) {
			put(ref, t, i, (x & 1) ? INFINITY : NAN);
			put(got, t, i, (x & 2) ? elem(ref, t, i) : 1.0);
		}
		if (what == 8 && fl) {
			put(ref, t, i, NAN);
			put(got, t, i, NAN);
		}
		if (what == 9) {
			if (esize == 8)
				memcpy((char *)got + i * 8, &poison64[x & 1], 8);
			else
				memcpy((char *)got + i * 4, &poison32[x & 1], 4);
		}
	}
}

TEST(matches_the_contract)
{
	static const enum elem_type types[] = { ELEM_FLOAT, ELEM_DOUBLE, ELEM_INT,
						ELEM_UINT,  ELEM_LONG,   ELEM_ULONG };
	static const size_t sizes[] = { 0, 1, 255, 256, 257, 1000, 4099 };
	uint64_t rng = 0x5eed;
	size_t cases = 0, failing = 0, caught = 0;

	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		struct buf_spec spec = { .name = "out", .type = types[ti], .role = ROLE_OUTPUT };
		struct wbuf wb = { .spec = &spec, .esize = elem_type_size(types[ti]) };

		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			for (int mix = 0; mix < 2; mix++) {
				size_t bytes = sizes[si] * wb.esize + 8, bad = 0, sus;
				void *got = malloc(bytes), *ref = malloc(bytes);
				struct cmp_stats a, b;

				wb.count = sizes[si];
				wb.bytes = sizes[si] * wb.esize;
				fill(types[ti], wb.esize, wb.count, got, ref, &rng, mix);
				for (int pc = 0; pc < 2; pc++) {
					for (int p = 0; p < 2; p++) {
						world_compare(&wb, got, ref, ATOL, RTOL, pc, p, &a);
						oracle(&wb, got, ref, pc, p, &b, &bad);
						sus = world_suspects(&wb, got, ref, ATOL, RTOL, pc,
								     p);
						cases++;
						CHECK(a.count == b.count);
						CHECK(a.mismatches == b.mismatches);
						CHECK(a.unwritten == b.unwritten);
						CHECK(a.first_unwritten == b.first_unwritten);
						CHECK(a.nonfinite == b.nonfinite);
						CHECK(a.worst == b.worst);
						CHECK(same(a.worst_got, b.worst_got));
						CHECK(same(a.worst_ref, b.worst_ref));
						CHECK(same(a.max_abs, b.max_abs));
						CHECK(same(a.mean_abs, b.mean_abs));
						CHECK(same(a.rel_l2, b.rel_l2));
						/* never a pass where the full judge fails */
						CHECK(sus >= bad);
						if (!mix)
							CHECK(sus == 0 && bad == 0);
						failing += bad > 0;
						caught += bad > 0 && sus > 0;
					}
				}
				/* element by element: a suspect wherever one is mismatched or unwritten */
				for (size_t i = 0; mix && i < wb.count; i++) {
					struct wbuf one = wb;
					const char *g1 = (const char *)got + i * wb.esize;
					const char *r1 = (const char *)ref + i * wb.esize;

					one.count = 1;
					one.bytes = wb.esize;
					oracle(&one, g1, r1, 1, POISON_A, &b, &bad);
					sus = world_suspects(&one, g1, r1, ATOL, RTOL, 1, POISON_A);
					CHECK(sus == 1 || !bad);
					CHECK(sus <= 1);
				}
				free(got);
				free(ref);
			}
		}
	}
	/* the mixes did hold failures of every kind above, and they were caught */
	CHECK(cases == 6 * 7 * 2 * 4);
	CHECK(failing > 50);
	CHECK(caught == failing);
}

TEST(infinite_reference)
{
	struct buf_spec spec = { .name = "out", .type = ELEM_FLOAT, .role = ROLE_OUTPUT };
	struct wbuf wb = { .spec = &spec, .count = 4, .esize = 4, .bytes = 16 };
	float ref[4] = { INFINITY, -INFINITY, NAN, 2.0f };
	float got[4] = { INFINITY, -INFINITY, NAN, 2.0f };
	struct cmp_stats s;

	world_compare(&wb, got, ref, ATOL, RTOL, 1, POISON_A, &s);
	CHECK(s.mismatches == 0 && s.nonfinite == 0);
	/* every error 0: the worst is the first element, whatever its reference */
	CHECK(s.worst == 0 && s.worst_got == INFINITY && s.worst_ref == INFINITY);
	ref[0] = got[0] = NAN;
	world_compare(&wb, got, ref, ATOL, RTOL, 1, POISON_A, &s);
	CHECK(s.mismatches == 0 && s.worst == 0 && isnan(s.worst_got) && isnan(s.worst_ref));
	ref[0] = got[0] = INFINITY;
	/* a finite value where the reference is infinite: atol + rtol * inf let it pass once */
	got[0] = 1e30f;
	got[2] = 0.0f;
	world_compare(&wb, got, ref, ATOL, RTOL, 1, POISON_A, &s);
	CHECK(s.mismatches == 2);
	CHECK(world_suspects(&wb, got, ref, ATOL, RTOL, 1, POISON_A) >= 2);
	/* the opposite infinity, and an infinity for a finite reference */
	got[0] = INFINITY;
	got[2] = NAN;
	got[1] = INFINITY;
	got[3] = INFINITY;
	world_compare(&wb, got, ref, ATOL, RTOL, 1, POISON_A, &s);
	CHECK(s.mismatches == 2);
	CHECK(s.nonfinite == 1);
	CHECK(s.rel_l2 == INFINITY);
	/* an infinite reference matched adds nothing to the norm of the reference */
	ref[2] = 3.0f;
	got[1] = -INFINITY;
	got[2] = 3.0f;
	got[3] = 2.5f;
	world_compare(&wb, got, ref, ATOL, RTOL, 1, POISON_A, &s);
	CHECK(s.mismatches == 1 && s.nonfinite == 0);
	CHECK(fabs(s.rel_l2 - 0.5 / sqrt(13.0)) < 1e-12);
}

/*
 * An integer output whose right answer happens to be the poison's bits: the
 * tolerance cannot tell it was never written, only the poison check can,
 * and the quick look has to make the same call.
 */
TEST(poison_equal_to_reference)
{
	static const enum elem_type types[] = { ELEM_INT, ELEM_UINT, ELEM_LONG, ELEM_ULONG };

	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		struct buf_spec spec = { .name = "out", .type = types[ti], .role = ROLE_OUTPUT };
		struct wbuf wb = { .spec = &spec,
				   .count = 300,
				   .esize = elem_type_size(types[ti]) };
		unsigned char got[300 * 8], ref[300 * 8];
		struct cmp_stats s;

		wb.bytes = wb.count * wb.esize;
		for (size_t i = 0; i < wb.count; i++) {
			if (wb.esize == 8)
				memcpy(ref + i * 8, &poison64[POISON_B], 8);
			else
				memcpy(ref + i * 4, &poison32[POISON_B], 4);
		}
		memcpy(got, ref, wb.bytes);
		world_compare(&wb, got, ref, ATOL, RTOL, 1, POISON_A, &s);
		CHECK(s.unwritten == 0 && s.mismatches == 0);
		CHECK(world_suspects(&wb, got, ref, ATOL, RTOL, 1, POISON_A) == 0);
		world_compare(&wb, got, ref, ATOL, RTOL, 1, POISON_B, &s);
		CHECK(s.unwritten == 300 && s.first_unwritten == 0 && s.mismatches == 0);
		CHECK(world_suspects(&wb, got, ref, ATOL, RTOL, 1, POISON_B) == 300);
		CHECK(world_suspects(&wb, got, ref, ATOL, RTOL, 0, POISON_B) == 0);
	}
}

int main(void)
{
	RUN(matches_the_contract);
	RUN(infinite_reference);
	RUN(poison_equal_to_reference);
	return test_summary();
}
