/*
 * matrix.c -- host matrices: checked creation from CSR arrays, Matrix Market files and generators.
 *
 * A spmv_matrix_t always holds a 0-based CSR with sorted, duplicate-free rows. When the creator's arrays were
 * unsorted or had duplicates (and flags allowed it), src_map remembers where each of the creator's entries went
 * so spmv_plan_update_values can take values in the creator's order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- life cycle ----------------------------------------------------------------------------------------- */

spmv_status_t spmv_matrix_destroy(spmv_matrix_t *A)
{
    if (A == NULL) return SPMV_STATUS_SUCCESS;
    free(A->row_ptr);
    free(A->col_idx);
    free(A->values);
    free(A->src_map);
    free(A);
    return SPMV_STATUS_SUCCESS;
}

/* Allocate an empty matrix with arrays for m rows and nnz entries. */
static spmv_status_t matrix_alloc(spmv_matrix_t **out, int32_t m, int32_t n, int32_t nnz, spmv_precision_t prec)
{
    spmv_matrix_t *A = calloc(1, sizeof *A);
    if (A == NULL) return spmvport_fail(NULL, SPMV_STATUS_OUT_OF_MEMORY, "out of host memory for a matrix");
    A->m = m;
    A->n = n;
    A->nnz = nnz;
    A->src_nnz = nnz;
    A->precision = prec;
    A->row_ptr = spmvport_malloc_array((size_t)m + 1, sizeof(int32_t));
    A->col_idx = spmvport_malloc_array((size_t)nnz, sizeof(int32_t));
    A->values = spmvport_malloc_array((size_t)nnz, spmvport_value_size(prec));
    if (A->row_ptr == NULL || A->col_idx == NULL || A->values == NULL) {
        spmv_matrix_destroy(A);
        return spmvport_fail(NULL, SPMV_STATUS_OUT_OF_MEMORY, "out of host memory for a %d x %d matrix with %d "
                             "entries", m, n, nnz);
    }
    *out = A;
    return SPMV_STATUS_SUCCESS;
}

static double value_at(const void *values, spmv_precision_t prec, int64_t k)
{
    return prec == SPMV_F32 ? (double)((const float *)values)[k] : ((const double *)values)[k];
}

static void value_set(void *values, spmv_precision_t prec, int64_t k, double v)
{
    if (prec == SPMV_F32) ((float *)values)[k] = (float)v;
    else ((double *)values)[k] = v;
}

/* Take a double-valued host CSR (reader, generators) as a matrix of the given precision. */
static spmv_status_t matrix_from_csr(spmv_matrix_t **out, spmvport_csr *C, spmv_precision_t prec)
{
    spmv_matrix_t *A;
    spmv_status_t st = matrix_alloc(&A, C->m, C->n, C->nnz, prec);
    if (st != SPMV_STATUS_SUCCESS) return st;
    memcpy(A->row_ptr, C->row_ptr, ((size_t)C->m + 1) * sizeof(int32_t));
    if (C->nnz > 0) {
        memcpy(A->col_idx, C->col_idx, (size_t)C->nnz * sizeof(int32_t));
        if (prec == SPMV_F64) memcpy(A->values, C->val, (size_t)C->nnz * sizeof(double));
        else for (int64_t k = 0; k < C->nnz; k++) ((float *)A->values)[k] = (float)C->val[k];
    }
    *out = A;
    return SPMV_STATUS_SUCCESS;
}

/* ---- checks of the creator's arrays --------------------------------------------------------------------- */

static spmv_status_t check_arguments(spmv_matrix_t **A, int32_t m, int32_t n, int32_t nnz, const int32_t *row_ptr,
                                     const int32_t *col_idx, const void *values, spmv_precision_t prec,
                                     int base, unsigned flags)
{
    const unsigned known = SPMV_MATRIX_SORT | SPMV_MATRIX_SUM_DUPLICATES | SPMV_MATRIX_ALLOW_NONFINITE;
    spmv_status_t bad = SPMV_STATUS_INVALID_ARGUMENT;
    if (A == NULL) return spmvport_fail(NULL, bad, "spmv_matrix_create_csr: argument A is NULL");
    if (m < 0 || n < 0 || nnz < 0)
        return spmvport_fail(NULL, bad, "spmv_matrix_create_csr: negative size (m=%d, n=%d, nnz=%d)", m, n, nnz);
    if (prec != SPMV_F32 && prec != SPMV_F64)
        return spmvport_fail(NULL, bad, "spmv_matrix_create_csr: precision %d is neither SPMV_F32 nor SPMV_F64",
                             (int)prec);
    if (base != 0 && base != 1)
        return spmvport_fail(NULL, bad, "spmv_matrix_create_csr: index_base %d is neither 0 nor 1", base);
    if (flags & ~known)
        return spmvport_fail(NULL, bad, "spmv_matrix_create_csr: unknown flag bits 0x%x", flags & ~known);
    if (row_ptr == NULL) return spmvport_fail(NULL, bad, "spmv_matrix_create_csr: argument row_ptr is NULL");
    if (nnz > 0 && col_idx == NULL)
        return spmvport_fail(NULL, bad, "spmv_matrix_create_csr: argument col_idx is NULL with nnz=%d", nnz);
    if (nnz > 0 && values == NULL)
        return spmvport_fail(NULL, bad, "spmv_matrix_create_csr: argument values is NULL with nnz=%d", nnz);
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t check_structure(int32_t m, int32_t n, int32_t nnz, const int32_t *row_ptr,
                                     const int32_t *col_idx, const void *values, spmv_precision_t prec, int base,
                                     unsigned flags, int *sorted_unique)
{
    spmv_status_t bad = SPMV_STATUS_INVALID_MATRIX;
    if (row_ptr[0] != base)
        return spmvport_fail(NULL, bad, "row_ptr[0] = %d, expected the index base %d", row_ptr[0], base);
    if ((int64_t)row_ptr[m] != (int64_t)nnz + base)
        return spmvport_fail(NULL, bad, "row_ptr[%d] = %d, expected nnz + index base = %lld", m, row_ptr[m],
                             (long long)nnz + base);
    for (int32_t i = 0; i < m; i++)
        if (row_ptr[i + 1] < row_ptr[i])
            return spmvport_fail(NULL, bad, "row_ptr decreases at row %d: row_ptr[%d] = %d > row_ptr[%d] = %d", i,
                                 i, row_ptr[i], i + 1, row_ptr[i + 1]);
    int ok = 1;
    for (int32_t i = 0; i < m; i++) {
        for (int32_t k = row_ptr[i] - base; k < row_ptr[i + 1] - base; k++) {
            int32_t c = col_idx[k] - base;
            if (c < 0 || c >= n)
                return spmvport_fail(NULL, bad, "col_idx[%d] = %d in row %d is out of range [%d, %d]", k,
                                     col_idx[k], i, base, n - 1 + base);
            if (k > row_ptr[i] - base && col_idx[k] <= col_idx[k - 1]) ok = 0;
            if (!(flags & SPMV_MATRIX_ALLOW_NONFINITE) && !isfinite(value_at(values, prec, k)))
                return spmvport_fail(NULL, bad, "values[%d] (row %d, column %d) is not finite; pass "
                                     "SPMV_MATRIX_ALLOW_NONFINITE to accept it", k, i, col_idx[k]);
        }
    }
    *sorted_unique = ok;
    return SPMV_STATUS_SUCCESS;
}

/* ---- sorting the creator's rows ------------------------------------------------------------------------- */

typedef struct { int32_t col, pos; } col_pos;

static int cmp_col_pos(const void *a, const void *b)
{
    const col_pos *x = a, *y = b;
    if (x->col != y->col) return x->col < y->col ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

/* Sort each row by column; duplicates are summed (flag) or reported. Fills A and A->src_map. */
static spmv_status_t sort_rows(spmv_matrix_t *A, const int32_t *row_ptr, const int32_t *col_idx,
                               const void *values, int base, unsigned flags)
{
    int32_t nnz = A->src_nnz;
    col_pos *buf = spmvport_malloc_array((size_t)nnz, sizeof *buf);
    double *acc = spmvport_malloc_array((size_t)nnz, sizeof *acc);
    A->src_map = spmvport_malloc_array((size_t)nnz, sizeof(int32_t));
    if (buf == NULL || acc == NULL || A->src_map == NULL) {
        free(buf); free(acc);
        return spmvport_fail(NULL, SPMV_STATUS_OUT_OF_MEMORY, "out of host memory sorting %d entries", nnz);
    }
    int32_t out = 0;
    A->row_ptr[0] = 0;
    for (int32_t i = 0; i < A->m; i++) {
        int32_t b = row_ptr[i] - base, e = row_ptr[i + 1] - base;
        for (int32_t k = b; k < e; k++) buf[k] = (col_pos){col_idx[k] - base, k};
        qsort(buf + b, (size_t)(e - b), sizeof *buf, cmp_col_pos);
        for (int32_t k = b; k < e; k++) {
            if (k > b && buf[k].col == buf[k - 1].col) {
                if (!(flags & SPMV_MATRIX_SUM_DUPLICATES)) {
                    spmvport_fail(NULL, SPMV_STATUS_UNSORTED, "row %d has column %d more than once (positions %d "
                                  "and %d); pass SPMV_MATRIX_SUM_DUPLICATES to sum them", i, buf[k].col + base,
                                  buf[k - 1].pos, buf[k].pos);
                    free(buf); free(acc);
                    return SPMV_STATUS_UNSORTED;
                }
                acc[out - 1] += value_at(values, A->precision, buf[k].pos);
            } else {
                A->col_idx[out] = buf[k].col;
                acc[out] = value_at(values, A->precision, buf[k].pos);
                out++;
            }
            A->src_map[buf[k].pos] = out - 1;
        }
        A->row_ptr[i + 1] = out;
    }
    A->nnz = out;
    for (int32_t k = 0; k < out; k++) value_set(A->values, A->precision, k, acc[k]);
    free(buf);
    free(acc);
    return SPMV_STATUS_SUCCESS;
}

/* ---- public constructors -------------------------------------------------------------------------------- */

spmv_status_t spmv_matrix_create_csr(spmv_matrix_t **A, int32_t m, int32_t n, int32_t nnz, const int32_t *row_ptr,
                                     const int32_t *col_idx, const void *values, spmv_precision_t precision,
                                     int index_base, unsigned flags)
{
    spmvport_clear_error(NULL);
    spmv_status_t st = check_arguments(A, m, n, nnz, row_ptr, col_idx, values, precision, index_base, flags);
    if (st != SPMV_STATUS_SUCCESS) return st;
    *A = NULL;
    int sorted_unique = 0;
    st = check_structure(m, n, nnz, row_ptr, col_idx, values, precision, index_base, flags, &sorted_unique);
    if (st != SPMV_STATUS_SUCCESS) return st;
    if (!sorted_unique && !(flags & (SPMV_MATRIX_SORT | SPMV_MATRIX_SUM_DUPLICATES)))
        return spmvport_fail(NULL, SPMV_STATUS_UNSORTED, "the columns of some row are unsorted or repeated; pass "
                             "SPMV_MATRIX_SORT (and SPMV_MATRIX_SUM_DUPLICATES for repeats)");
    spmv_matrix_t *M;
    st = matrix_alloc(&M, m, n, nnz, precision);
    if (st != SPMV_STATUS_SUCCESS) return st;
    if (sorted_unique) {
        for (int32_t i = 0; i <= m; i++) M->row_ptr[i] = row_ptr[i] - index_base;
        for (int32_t k = 0; k < nnz; k++) M->col_idx[k] = col_idx[k] - index_base;
        if (nnz > 0) memcpy(M->values, values, (size_t)nnz * spmvport_value_size(precision));
    } else {
        st = sort_rows(M, row_ptr, col_idx, values, index_base, flags);
        if (st != SPMV_STATUS_SUCCESS) {
            spmv_matrix_destroy(M);
            return st;
        }
    }
    *A = M;
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmv_matrix_read_mtx(spmv_matrix_t **A, const char *path, spmv_precision_t precision)
{
    spmvport_clear_error(NULL);
    if (A == NULL || path == NULL)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_matrix_read_mtx: argument %s is NULL",
                             A == NULL ? "A" : "path");
    *A = NULL;
    if (precision != SPMV_F32 && precision != SPMV_F64)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_matrix_read_mtx: bad precision %d",
                             (int)precision);
    char msg[SPMVPORT_MSG_LEN] = "";
    spmvport_csr C;
    spmv_status_t st = spmvport_mtx_read(path, &C, msg, sizeof msg);
    if (st != SPMV_STATUS_SUCCESS) return spmvport_fail(NULL, st, "%s", msg);
    /* the same NaN policy as spmv_matrix_create_csr: a file with NaN or Inf (or 1e999) is refused */
    for (int32_t i = 0; i < C.m; i++)
        for (int32_t k = C.row_ptr[i]; k < C.row_ptr[i + 1]; k++)
            if (!isfinite(C.val[k]) || (precision == SPMV_F32 && !isfinite((float)C.val[k]))) {
                st = spmvport_fail(NULL, SPMV_STATUS_INVALID_MATRIX, "%s: entry (%d, %d) = %g is not finite%s", path,
                                   i + 1, C.col_idx[k] + 1, C.val[k], isfinite(C.val[k]) ? " in single precision" : "");
                spmvport_csr_free(&C);
                return st;
            }
    st = matrix_from_csr(A, &C, precision);
    spmvport_csr_free(&C);
    return st;
}

spmv_status_t spmv_matrix_generate(spmv_matrix_t **A, const char *spec, spmv_precision_t precision, uint64_t seed)
{
    spmvport_clear_error(NULL);
    if (A == NULL || spec == NULL)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_matrix_generate: argument %s is NULL",
                             A == NULL ? "A" : "spec");
    *A = NULL;
    if (precision != SPMV_F32 && precision != SPMV_F64)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_matrix_generate: bad precision %d",
                             (int)precision);
    char msg[SPMVPORT_MSG_LEN] = "";
    spmvport_csr C;
    spmv_status_t st = spmvport_generate(spec, seed, &C, msg, sizeof msg);
    if (st != SPMV_STATUS_SUCCESS) return spmvport_fail(NULL, st, "%s", msg);
    st = matrix_from_csr(A, &C, precision);
    spmvport_csr_free(&C);
    return st;
}

spmv_status_t spmv_matrix_convert(spmv_matrix_t **B, const spmv_matrix_t *A, spmv_precision_t precision)
{
    spmvport_clear_error(NULL);
    if (B == NULL || A == NULL)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_matrix_convert: argument %s is NULL",
                             B == NULL ? "B" : "A");
    *B = NULL;
    if (precision != SPMV_F32 && precision != SPMV_F64)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_matrix_convert: bad precision %d",
                             (int)precision);
    spmv_matrix_t *M;
    spmv_status_t st = matrix_alloc(&M, A->m, A->n, A->nnz, precision);
    if (st != SPMV_STATUS_SUCCESS) return st;
    memcpy(M->row_ptr, A->row_ptr, ((size_t)A->m + 1) * sizeof(int32_t));
    memcpy(M->col_idx, A->col_idx, (size_t)A->nnz * sizeof(int32_t));
    for (int64_t k = 0; k < A->nnz; k++) value_set(M->values, precision, k, value_at(A->values, A->precision, k));
    if (A->src_map != NULL) {
        M->src_nnz = A->src_nnz;
        M->src_map = spmvport_malloc_array((size_t)A->src_nnz, sizeof(int32_t));
        if (M->src_map == NULL) {
            spmv_matrix_destroy(M);
            return spmvport_fail(NULL, SPMV_STATUS_OUT_OF_MEMORY, "out of host memory converting a matrix");
        }
        memcpy(M->src_map, A->src_map, (size_t)A->src_nnz * sizeof(int32_t));
    }
    *B = M;
    return SPMV_STATUS_SUCCESS;
}

/* ---- access and output ---------------------------------------------------------------------------------- */

spmv_status_t spmv_matrix_get_size(const spmv_matrix_t *A, int32_t *m, int32_t *n, int32_t *nnz,
                                   spmv_precision_t *precision)
{
    if (A == NULL) return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_matrix_get_size: A is NULL");
    if (m) *m = A->m;
    if (n) *n = A->n;
    if (nnz) *nnz = A->nnz;
    if (precision) *precision = A->precision;
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmv_matrix_get_csr(const spmv_matrix_t *A, const int32_t **row_ptr, const int32_t **col_idx,
                                  const void **values)
{
    if (A == NULL) return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_matrix_get_csr: A is NULL");
    if (row_ptr) *row_ptr = A->row_ptr;
    if (col_idx) *col_idx = A->col_idx;
    if (values) *values = A->values;
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmv_matrix_write_mtx(const spmv_matrix_t *A, const char *path)
{
    spmvport_clear_error(NULL);
    if (A == NULL || path == NULL)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_matrix_write_mtx: argument %s is NULL",
                             A == NULL ? "A" : "path");
    spmvport_csr C = {A->m, A->n, A->nnz, A->row_ptr, A->col_idx, NULL};
    C.val = spmvport_malloc_array((size_t)A->nnz, sizeof(double));
    if (C.val == NULL) return spmvport_fail(NULL, SPMV_STATUS_OUT_OF_MEMORY, "out of host memory writing %s", path);
    for (int64_t k = 0; k < A->nnz; k++) C.val[k] = value_at(A->values, A->precision, k);
    char msg[SPMVPORT_MSG_LEN] = "";
    spmv_status_t st = spmvport_mtx_write(path, &C, msg, sizeof msg);
    free(C.val);
    return st == SPMV_STATUS_SUCCESS ? st : spmvport_fail(NULL, st, "%s", msg);
}

/* ==================================================================================================== */
/* Row-length profile                                                                                   */
/* ==================================================================================================== */

int spmvport_rows_regular(const spmv_matrix_t *A)
{
    int32_t longest = 0;
    for (int32_t i = 0; i < A->m; i++)
        if (A->row_ptr[i + 1] - A->row_ptr[i] > longest) longest = A->row_ptr[i + 1] - A->row_ptr[i];
    return A->m == 0 || longest <= 2.0 * A->nnz / A->m + 16.0;
}

double spmvport_rows_spread(const spmv_matrix_t *A)
{
    if (A->m == 0 || A->nnz == 0) return 0.0;
    const double avg = (double)A->nnz / A->m;
    double squares = 0.0;
    for (int32_t i = 0; i < A->m; i++) {
        const double d = (double)(A->row_ptr[i + 1] - A->row_ptr[i]) - avg;
        squares += d * d;
    }
    return sqrt(squares / A->m) / avg;
}

double spmvport_csr_bytes(const spmv_matrix_t *A)
{
    const double vs = (double)spmvport_value_size(A->precision);
    return (double)A->nnz * (sizeof(int32_t) + vs) + ((double)A->m + 1) * sizeof(int32_t);
}

static double vector_bytes(const spmv_matrix_t *A) /* x and y */
{
    return ((double)A->m + A->n) * spmvport_value_size(A->precision);
}

double spmvport_l2_share(const spmv_matrix_t *A, const spmv_device_info_t *dev)
{
    if (dev == NULL || dev->l2_bytes == 0) return 0.0;
    return (spmvport_csr_bytes(A) + vector_bytes(A)) / (double)dev->l2_bytes;
}

/* Short rows read locally (stencils, banded), by where their data sits against the L2 (H100, sessions 67-68;
 * csr_scalar's kernel on amf_csr's arrays runs at csr_scalar's time, csr_vector's at csr_vector's). Shares are
 * spmvport_l2_share's (the CSR arrays, x and y) and the vectors' (x and y alone), in L2s:
 * - below SHORT_L2_LO a thread a row was the fastest of the three mappings within 3% on every matrix (session 67,
 *   run L1), and so it was on rows of more than SHORT_MAPPED_MAX_AVG at any size (9-point stencils, session 68
 *   run M1: the f32 folds 0.90-0.97x, f64 csr_vector's lanes 0.92-0.95x);
 * - tridiagonal rows (at most TRIDIAGONAL_AVG) take csr_vector's lanes up to SHORT_VECTOR_L2_HI_F64 / _F32
 *   (banded, 1.05-1.35x csr_scalar), a thread a row above (banded:4000000:1 f32 1.28x); in f64 the lanes against a
 *   thread a row fall steadily with the share (session 69, runs N1-N2: 1.71 L2s 1.09x, 1.82 1.04x, 1.92 0.99x,
 *   1.98 0.98x, 2.08 0.96x, 2.24 0.94x; the bound was 2.15); AUTO's tridiagonal window is this one;
 * - rows of 4-8 (5- and 7-point stencils, banded of 5 and 7) while x and y take at most SHORT_VECTORS_L2_HI:
 *   csr_vector's lanes in f64 (run M1: 1.00-1.07x csr_scalar; session 67 stencil3d:7:80-100 1.11-1.22x), amf_csr's
 *   folds in f32 from SHORT_FOLDS_L2_LO (run M1: 1.03-1.16x from 0.88 to 3.24 L2s on 18 matrices, 0.95-0.98x at
 *   0.82-0.84); past that vector share a thread a row wins or ties on every class at once (run M1: at 0.40-0.46
 *   of the L2 in vectors f64 stencil2d:5:1150 0.93x, f32 stencil2d:5:1700 0.95x, banded:3000000:2 1.00x,
 *   stencil3d:7:140 1.01x; a bound in L2s of the whole data did not fit both the 5- and the 7-point stencils). */
#define SHORT_L2_LO 0.8
#define SHORT_MAPPED_MAX_AVG 8.0
#define TRIDIAGONAL_AVG 3.0
#define SHORT_VECTOR_L2_HI_F64 1.9
#define SHORT_VECTOR_L2_HI_F32 1.75
#define SHORT_VECTORS_L2_HI 0.4
#define SHORT_FOLDS_L2_LO 0.86
spmvport_short_mapping spmvport_short_rows_mapping(const spmv_matrix_t *A, const spmv_device_info_t *dev)
{
    const double share = spmvport_l2_share(A, dev);
    if (A->m == 0 || share <= 0.0 || dev->multiprocessors <= 0) return SPMVPORT_SHORT_NONE;
    const double avg = (double)A->nnz / A->m;
    const int short_rows = avg <= SPMVPORT_SHORT_ROWS_AVG &&
                           (avg <= SPMVPORT_ONE_BATCH_AVG ||
                            A->m >= (double)dev->multiprocessors * SPMVPORT_SMALL_ROWS_PER_SM);
    if (!short_rows) return SPMVPORT_SHORT_NONE;
    const int f64 = A->precision == SPMV_F64;
    if (share < SHORT_L2_LO || avg > SHORT_MAPPED_MAX_AVG) return SPMVPORT_SHORT_SCALAR;
    if (avg <= TRIDIAGONAL_AVG)
        return share <= (f64 ? SHORT_VECTOR_L2_HI_F64 : SHORT_VECTOR_L2_HI_F32) ? SPMVPORT_SHORT_VECTOR
                                                                                : SPMVPORT_SHORT_SCALAR;
    if (vector_bytes(A) / (double)dev->l2_bytes > SHORT_VECTORS_L2_HI) return SPMVPORT_SHORT_SCALAR;
    if (f64) return SPMVPORT_SHORT_VECTOR;
    return share >= SHORT_FOLDS_L2_LO ? SPMVPORT_SHORT_FOLDS : SPMVPORT_SHORT_SCALAR;
}

/* ==================================================================================================== */
/* How scattered the reads of x are                                                                     */
/* ==================================================================================================== */

#define X_GROUP_ROWS 32     /* distinct x sectors per entry over groups of this many rows (a warp's 4-row folds) */
#define X_GROUPS 1024       /* sampled at this many evenly spaced groups */
#define X_GROUP_ENTRIES 1024 /* of at most this many entries each */
#define X_SECTOR_BYTES 32   /* the memory system's sector */
#define X_OMP_MIN 65536     /* fewer rows stay serial */
#define X_TABLE_BITS 11     /* the distinct count's hash table: 2048 slots, at least twice X_GROUP_ENTRIES */

/* How many distinct values v[0..k) holds (k <= X_GROUP_ENTRIES, values >= 0): linear probing in table (1 <<
 * X_TABLE_BITS slots), which this clears first. Linear time; sorting each group with qsort took most of
 * amf_csr's build on FEM grids (fem3d:4:20: 33 ms, against 3.7 for csr_vector's). */
static int32_t count_distinct(const int32_t *v, int32_t k, int32_t *table)
{
    const uint32_t mask = (1u << X_TABLE_BITS) - 1;
    int32_t distinct = 0;
    memset(table, 0xff, sizeof(int32_t) << X_TABLE_BITS); /* -1: empty */
    for (int32_t i = 0; i < k; i++) {
        uint32_t h = ((uint32_t)v[i] * 2654435761u) >> (32 - X_TABLE_BITS);
        while (table[h] >= 0 && table[h] != v[i]) h = (h + 1) & mask;
        if (table[h] < 0) {
            table[h] = v[i];
            distinct++;
        }
    }
    return distinct;
}

double spmvport_x_sector_use(const spmv_matrix_t *A, int32_t skip_len)
{
    const int64_t per_sector = X_SECTOR_BYTES / (int64_t)spmvport_value_size(A->precision);
    const int64_t groups_all = ((int64_t)A->m + X_GROUP_ROWS - 1) / X_GROUP_ROWS;
    const int64_t groups = groups_all < X_GROUPS ? groups_all : X_GROUPS;
    int64_t sectors = 0, entries = 0;
    int failed = 0;
#pragma omp parallel reduction(+ : sectors, entries, failed) if (groups * X_GROUP_ROWS > X_OMP_MIN)
    {
        int32_t *buf = malloc((X_GROUP_ENTRIES + ((size_t)1 << X_TABLE_BITS)) * sizeof(int32_t));
        if (buf == NULL) failed = 1;
#pragma omp for schedule(static)
        for (int64_t g = 0; g < groups; g++) {
            if (buf == NULL) continue;
            const int64_t first = g * groups_all / groups * X_GROUP_ROWS; /* evenly spaced, a group apart */
            const int64_t last = first + X_GROUP_ROWS < A->m ? first + X_GROUP_ROWS : A->m;
            int32_t k = 0;
            for (int64_t r = first; r < last && k < X_GROUP_ENTRIES; r++) {
                if (A->row_ptr[r + 1] - A->row_ptr[r] >= skip_len) continue;
                for (int32_t j = A->row_ptr[r]; j < A->row_ptr[r + 1] && k < X_GROUP_ENTRIES; j++)
                    buf[k++] = (int32_t)(A->col_idx[j] / per_sector);
            }
            sectors += count_distinct(buf, k, buf + X_GROUP_ENTRIES);
            entries += k;
        }
        free(buf);
    }
    if (failed) return -1.0;
    return entries > 0 ? (double)sectors / (double)entries : 0.0;
}
