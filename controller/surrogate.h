/*
 * surrogate.h - the tuner's model of a search space: a Gaussian process.
 *
 * Points are feature vectors in [0, 1]^d (the tuner's index vectors,
 * each index divided by its list's last index).  Observations are
 * log(speedup).  The model standardises them, uses a Matern 5/2 kernel
 * with one length scale per feature and a noise term (nugget), and picks
 * those from small grids by the marginal likelihood: one shared length
 * scale first, then one sweep over the features scaling each alone.
 * Everything is deterministic: the same points give the same model.
 *
 * Cost: a fit is some 50 Cholesky factorisations of an n x n matrix;
 * n of a few hundred takes well under a second.
 */
#ifndef KCTL_SURROGATE_H
#define KCTL_SURROGATE_H

#include <stddef.h>

struct surrogate {
	size_t n, d;
	double *x;     /* n * d features, copied */
	double *ell;   /* d length scales */
	double noise;  /* nugget, in standardised units (signal variance 1) */
	double *chol;  /* lower Cholesky factor of K + noise I, n * n */
	double *alpha; /* (K + noise I)^-1 (y - ymean) / ystd */
	double ymean, ystd;
	double lml; /* log marginal likelihood of the chosen hyperparameters */
};

/*
 * Fits the model to n >= 1 points x (n * d, each feature in [0, 1]) with
 * observations y.  m is caller-owned; release it with surrogate_release.
 * Returns 0, or KERR_INVALID when n is 0 or a y is not finite (m then
 * holds nothing).
 */
int surrogate_fit(struct surrogate *m, const double *x, const double *y, size_t n, size_t d);

/* The posterior mean of y at x and the sd of that mean (noise excluded). */
void surrogate_predict(const struct surrogate *m, const double *x, double *mean, double *sd);

/* The kernel's correlation of a and b, in [0, 1]: 1 at the same point. */
double surrogate_corr(const struct surrogate *m, const double *a, const double *b);

/* Expected improvement of N(mean, sd^2) over best + xi (0 when sd is 0 and mean <= best + xi). */
double surrogate_ei(double mean, double sd, double best, double xi);

void surrogate_release(struct surrogate *m);

#endif
