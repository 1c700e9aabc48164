/*
 * surrogate.c - a small Gaussian process for the tuner (see surrogate.h).
 */
#include "surrogate.h"
#include "err.h"
#include "xalloc.h"
#include "arraysize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Shared length scales tried first, in feature units. */
static const double shared_ell[] = { 0.2, 0.3, 0.5, 0.8, 1.2, 2.0, 3.0 };
/* Nuggets tried with them: from nearly exact to noisy measurements. */
static const double nuggets[] = { 0.002, 0.01, 0.05, 0.2 };
/* Factors one feature's length scale is tried at in the sweep (4: nearly irrelevant). */
static const double ell_factors[] = { 0.5, 2.0, 4.0 };

/*
 * A log-normal prior on each length scale, centred on PRIOR_ELL * sqrt(d):
 * with a handful of points in many dimensions the likelihood alone is flat
 * or favours extremes.  Replays (kctl simulate) chose these.
 */
#define PRIOR_ELL    0.15
#define PRIOR_SPREAD 1.0
/* The per-feature sweep needs some points per feature to mean anything. */
#define SURROGATE_ARD_MIN_PER_FEATURE 2

static double matern52(const double *a, const double *b, const double *ell, size_t d)
{
	double r2 = 0, r;

	for (size_t j = 0; j < d; j++) {
		double t = (a[j] - b[j]) / ell[j];

		r2 += t * t;
	}
	r = sqrt(5.0 * r2);
	return (1.0 + r + r * r / 3.0) * exp(-r);
}

/*
 * Factors K + noise I of the standardised points into L (n * n) and
 * solves for alpha.  Returns the log marginal likelihood, or -HUGE_VAL
 * when the matrix is not positive definite.
 */
static double factor(const double *x, const double *ys, size_t n, size_t d, const double *ell,
		     double noise, double *L, double *alpha)
{
	double lml = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j <= i; j++)
			L[i * n + j] =
				matern52(x + i * d, x + j * d, ell, d) + (i == j ? noise : 0);
	for (size_t j = 0; j < n; j++) {
		double s = L[j * n + j];

		for (size_t k = 0; k < j; k++)
			s -= L[j * n + k] * L[j * n + k];
		if (!(s > 0))
			return -HUGE_VAL;
		L[j * n + j] = sqrt(s);
		for (size_t i = j + 1; i < n; i++) {
			double t = L[i * n + j];

			for (size_t k = 0; k < j; k++)
				t -= L[i * n + k] * L[j * n + k];
			L[i * n + j] = t / L[j * n + j];
		}
	}
	/* alpha = L^-T L^-1 ys */
	for (size_t i = 0; i < n; i++) {
		double t = ys[i];

		for (size_t k = 0; k < i; k++)
			t -= L[i * n + k] * alpha[k];
		alpha[i] = t / L[i * n + i];
	}
	for (size_t i = 0; i < n; i++)
		lml -= 0.5 * alpha[i] * alpha[i] + log(L[i * n + i]);
	for (size_t i = n; i-- > 0;) {
		double t = alpha[i];

		for (size_t k = i + 1; k < n; k++)
			t -= L[k * n + i] * alpha[k];
		alpha[i] = t / L[i * n + i];
	}
	return lml - 0.5 * (double)n * log(2 * 3.14159265358979323846);
}

struct fit {
	const double *x, *ys;
	size_t n, d;
	double *L, *alpha;
	double *ell, noise, lml; /* the best so far */
	double *try_ell;
};

/* Tries ell/noise; keeps them when the likelihood is higher. */
static void fit_try(struct fit *f, const double *ell, double noise)
{
	double lml = factor(f->x, f->ys, f->n, f->d, ell, noise, f->L, f->alpha);
	double ell0 = PRIOR_ELL * sqrt((double)f->d);

	for (size_t j = 0; j < f->d; j++)
		lml -= 0.5 * pow(log(ell[j] / ell0) / PRIOR_SPREAD, 2);

	if (lml > f->lml) {
		f->lml = lml;
		f->noise = noise;
		memcpy(f->ell, ell, f->d * sizeof(*ell));
	}
}

static void fit_search(struct fit *f)
{
	for (size_t a = 0; a < ARRAY_SIZE(shared_ell); a++)
		for (size_t b = 0; b < ARRAY_SIZE(nuggets); b++) {
			for (size_t j = 0; j < f->d; j++)
				f->try_ell[j] = shared_ell[a];
			fit_try(f, f->try_ell, nuggets[b]);
		}
	if (f->n < SURROGATE_ARD_MIN_PER_FEATURE * f->d || f->lml == -HUGE_VAL)
		return;
	for (size_t j = 0; j < f->d; j++) {
		double base = f->ell[j];

		memcpy(f->try_ell, f->ell, f->d * sizeof(*f->ell));
		for (size_t c = 0; c < ARRAY_SIZE(ell_factors); c++) {
			f->try_ell[j] = base * ell_factors[c];
			fit_try(f, f->try_ell, f->noise);
		}
	}
}

int surrogate_fit(struct surrogate *m, const double *x, const double *y, size_t n, size_t d)
{
	struct fit f = { .x = x, .n = n, .d = d, .lml = -HUGE_VAL };
	double *ys = NULL, var = 0;

	memset(m, 0, sizeof(*m));
	if (!n || !d)
		return KERR_INVALID;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(y[i]))
			return KERR_INVALID;
		m->ymean += y[i] / (double)n;
	}
	for (size_t i = 0; i < n; i++)
		var += (y[i] - m->ymean) * (y[i] - m->ymean) / (double)n;
	m->ystd = var > 1e-12 ? sqrt(var) : 1.0;
	ys = xcalloc(n, sizeof(*ys));
	for (size_t i = 0; i < n; i++)
		ys[i] = (y[i] - m->ymean) / m->ystd;
	f.ys = ys;
	f.L = xcalloc(n * n, sizeof(*f.L));
	f.alpha = xcalloc(n, sizeof(*f.alpha));
	f.ell = xcalloc(d, sizeof(*f.ell));
	f.try_ell = xcalloc(d, sizeof(*f.try_ell));
	for (size_t j = 0; j < d; j++)
		f.ell[j] = 1.0;
	f.noise = nuggets[ARRAY_SIZE(nuggets) - 1];
	fit_search(&f);
	if (f.lml == -HUGE_VAL) /* only when points repeat exactly: a large nugget always works */
		f.noise = 1.0;
	m->n = n;
	m->d = d;
	m->x = xcalloc(n * d, sizeof(*m->x));
	memcpy(m->x, x, n * d * sizeof(*x));
	m->ell = f.ell;
	m->noise = f.noise;
	m->chol = f.L;
	m->alpha = f.alpha;
	m->lml = factor(x, ys, n, d, m->ell, m->noise, m->chol, m->alpha);
	free(f.try_ell);
	free(ys);
	return 0;
}

void surrogate_predict(const struct surrogate *m, const double *x, double *mean, double *sd)
{
	double *v = xcalloc(m->n, sizeof(*v)), mu = 0, var = 1;

	for (size_t i = 0; i < m->n; i++) {
		v[i] = matern52(x, m->x + i * m->d, m->ell, m->d);
		mu += v[i] * m->alpha[i];
	}
	/* v = L^-1 k*, var = k(x, x) - v.v */
	for (size_t i = 0; i < m->n; i++) {
		double t = v[i];

		for (size_t k = 0; k < i; k++)
			t -= m->chol[i * m->n + k] * v[k];
		v[i] = t / m->chol[i * m->n + i];
		var -= v[i] * v[i];
	}
	*mean = m->ymean + m->ystd * mu;
	*sd = var > 1e-12 ? m->ystd * sqrt(var) : 0;
	free(v);
}

double surrogate_corr(const struct surrogate *m, const double *a, const double *b)
{
	return matern52(a, b, m->ell, m->d);
}

double surrogate_ei(double mean, double sd, double best, double xi)
{
	double diff = mean - best - xi, z;

	if (!(sd > 0))
		return diff > 0 ? diff : 0;
	z = diff / sd;
	return diff * 0.5 * erfc(-z * 0.70710678118654752440) +
	       sd * exp(-0.5 * z * z) / sqrt(2 * 3.14159265358979323846);
}

void surrogate_release(struct surrogate *m)
{
	free(m->x);
	free(m->ell);
	free(m->chol);
	free(m->alpha);
	memset(m, 0, sizeof(*m));
}
