/*
 * oracle.c -- the reference SpMV every result is checked against (spmv_reference_check).
 *
 * Plain CSR with long double accumulation, and the per-row bound of design.md: for a row with k entries, any
 * summation order in the matrix's precision errs by at most g(k + 3, u) * (|beta||y0| + |alpha| sum |a||x|)
 * (k products and k - 1 additions, alpha's and beta's rounding to the working precision, the two scalings and
 * the final add), and the oracle itself by at most g(k + 3, u_ref) times the same.
 */
#include <float.h>
#include <math.h>

#include "cpu_ref.h"

static double gamma_n(double n, double u)
{
    double nu = n * u;
    return nu < 1 ? nu / (1 - nu) : INFINITY;
}

static double get(const void *v, spmv_precision_t p, int64_t i)
{
    return p == SPMV_F32 ? (double)((const float *)v)[i] : ((const double *)v)[i];
}

spmv_status_t spmv_reference_check(const spmv_matrix_t *A, double alpha, const void *x, double beta,
                                   const void *y_in, const void *y_out, double *max_err_ratio, int32_t *worst_row)
{
    spmvport_clear_error(NULL);
    if (A == NULL || max_err_ratio == NULL || (x == NULL && A->n > 0) || (y_out == NULL && A->m > 0) ||
        (y_in == NULL && beta != 0 && A->m > 0))
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_reference_check: a required argument is NULL "
                             "(A, x, y_out, max_err_ratio, and y_in when beta != 0)");
    const spmv_precision_t p = A->precision;
    const double u = p == SPMV_F32 ? ldexp(1.0, -24) : ldexp(1.0, -53);
    const double u_ref = LDBL_EPSILON / 2;
    double worst = 0;
    int32_t worst_i = A->m > 0 ? 0 : -1;
    for (int32_t i = 0; i < A->m; i++) {
        long double sum = 0, mag = 0;
        for (int32_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
            long double t = (long double)get(A->values, p, k) * get(x, p, A->col_idx[k]);
            sum += t;
            mag += fabsl(t);
        }
        long double y0 = beta != 0 ? get(y_in, p, i) : 0;
        long double ref = (long double)alpha * sum + (long double)beta * y0;
        double scale = (double)(fabsl((long double)beta * y0) + fabsl((long double)alpha) * mag);
        double k = (double)(A->row_ptr[i + 1] - A->row_ptr[i]) + 3;
        double bound = (gamma_n(k, u) + gamma_n(k, u_ref)) * scale;
        double err = fabs((double)((long double)get(y_out, p, i) - ref));
        double ratio = err == 0 ? 0 : (bound > 0 ? err / bound : INFINITY);
        if (isnan(err)) ratio = NAN;
        if (isnan(ratio) || ratio > worst) {
            worst = ratio;
            worst_i = i;
            if (isnan(ratio)) break;
        }
    }
    *max_err_ratio = worst;
    if (worst_row) *worst_row = worst_i;
    return SPMV_STATUS_SUCCESS;
}
