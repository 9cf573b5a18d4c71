/*
 * test_generators.c -- the matrix generators through the public API: exact sizes, valid CSR (sorted, unique
 * columns in range), symmetry and diagonal dominance where promised, the character of each random kind,
 * determinism, and strict spec parsing.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The library may use OpenMP while this file is compiled without it: reach the runtime through weak symbols,
 * which stay NULL when no OpenMP runtime is linked. */
#if defined(_OPENMP)
#include <omp.h>
#define HAVE_OPENMP_RUNTIME 1
#elif defined(__GNUC__)
extern void omp_set_num_threads(int) __attribute__((weak));
extern int omp_get_max_threads(void) __attribute__((weak));
#define HAVE_OPENMP_RUNTIME (omp_set_num_threads != NULL && omp_get_max_threads != NULL)
#else
#define HAVE_OPENMP_RUNTIME 0
#endif

#include "spmvport.h"

/* ===========================================================================================================
 * Helpers: a generated matrix and a view of its CSR arrays
 * ========================================================================================================= */

typedef struct csr_view {
    spmv_matrix_t *A;
    int32_t m, n, nnz;
    const int32_t *row_ptr, *col_idx;
    const double *val;
} csr_view;

static csr_view generate(const char *spec, uint64_t seed)
{
    csr_view v;
    const void *values = NULL;
    memset(&v, 0, sizeof v);
    spmv_status_t st = spmv_matrix_generate(&v.A, spec, SPMV_F64, seed);
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "generate %s: %s: %s", spec, spmv_status_string(st), spmv_last_error(NULL));
    cr_assert_eq(spmv_matrix_get_size(v.A, &v.m, &v.n, &v.nnz, NULL), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_get_csr(v.A, &v.row_ptr, &v.col_idx, &values), SPMV_STATUS_SUCCESS);
    v.val = values;
    return v;
}

static void release(csr_view *v)
{
    spmv_matrix_destroy(v->A);
    v->A = NULL;
}

static int32_t row_length(const csr_view *v, int32_t i)
{
    return v->row_ptr[i + 1] - v->row_ptr[i];
}

/* Row pointers consistent, columns in range and strictly increasing in every row, values finite. */
static void assert_valid_csr(const csr_view *v, const char *spec)
{
    cr_assert(v->m > 0 && v->n > 0, "%s: empty matrix %d x %d", spec, v->m, v->n);
    cr_assert_eq(v->row_ptr[0], 0, "%s: row_ptr[0] = %d", spec, v->row_ptr[0]);
    cr_assert_eq(v->row_ptr[v->m], v->nnz, "%s: row_ptr[m] = %d, nnz = %d", spec, v->row_ptr[v->m], v->nnz);
    for (int32_t i = 0; i < v->m; i++) {
        cr_assert(v->row_ptr[i] <= v->row_ptr[i + 1], "%s: row_ptr decreases at row %d", spec, i);
        for (int32_t p = v->row_ptr[i]; p < v->row_ptr[i + 1]; p++) {
            cr_assert(v->col_idx[p] >= 0 && v->col_idx[p] < v->n, "%s: row %d column %d out of range", spec, i,
                      v->col_idx[p]);
            cr_assert(p == v->row_ptr[i] || v->col_idx[p - 1] < v->col_idx[p],
                      "%s: row %d columns %d, %d not strictly increasing", spec, i, v->col_idx[p - 1],
                      v->col_idx[p]);
            cr_assert(isfinite(v->val[p]), "%s: row %d has a non-finite value", spec, i);
        }
    }
}

/* Position of (i, j), or -1. */
static int32_t find_entry(const csr_view *v, int32_t i, int32_t j)
{
    int32_t lo = v->row_ptr[i], hi = v->row_ptr[i + 1] - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (v->col_idx[mid] == j)
            return mid;
        if (v->col_idx[mid] < j)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Pattern and values: a(j, i) exists and equals a(i, j) exactly. */
static void assert_symmetric(const csr_view *v, const char *spec)
{
    cr_assert_eq(v->m, v->n, "%s: not square", spec);
    for (int32_t i = 0; i < v->m; i++)
        for (int32_t p = v->row_ptr[i]; p < v->row_ptr[i + 1]; p++) {
            int32_t q = find_entry(v, v->col_idx[p], i);
            cr_assert(q >= 0, "%s: (%d, %d) present, (%d, %d) missing", spec, i, v->col_idx[p], v->col_idx[p], i);
            cr_assert(v->val[q] == v->val[p], "%s: a(%d,%d) = %g but a(%d,%d) = %g", spec, i, v->col_idx[p],
                      v->val[p], v->col_idx[p], i, v->val[q]);
        }
}

/* Every row has a positive diagonal >= (strict: >) the sum of |off-diagonals|. */
static void assert_diagonally_dominant(const csr_view *v, const char *spec, int strict)
{
    for (int32_t i = 0; i < v->m; i++) {
        int32_t d = find_entry(v, i, i);
        double off = 0.0;
        cr_assert(d >= 0, "%s: row %d has no diagonal", spec, i);
        for (int32_t p = v->row_ptr[i]; p < v->row_ptr[i + 1]; p++)
            if (p != d)
                off += fabs(v->val[p]);
        cr_assert(v->val[d] > 0.0, "%s: diagonal of row %d is %g", spec, i, v->val[d]);
        cr_assert(strict ? v->val[d] > off : v->val[d] >= off, "%s: row %d: diagonal %g, off-diagonal sum %g",
                  spec, i, v->val[d], off);
    }
}

static void assert_values_in_unit_range(const csr_view *v, const char *spec)
{
    for (int32_t p = 0; p < v->nnz; p++)
        cr_assert(v->val[p] >= -1.0 && v->val[p] < 1.0, "%s: value %g outside [-1, 1)", spec, v->val[p]);
}

static int same_matrix(const csr_view *a, const csr_view *b)
{
    return a->m == b->m && a->n == b->n && a->nnz == b->nnz &&
           memcmp(a->row_ptr, b->row_ptr, ((size_t)a->m + 1) * sizeof *a->row_ptr) == 0 &&
           memcmp(a->col_idx, b->col_idx, (size_t)a->nnz * sizeof *a->col_idx) == 0 &&
           memcmp(a->val, b->val, (size_t)a->nnz * sizeof *a->val) == 0;
}

static int32_t max_row_length(const csr_view *v)
{
    int32_t longest = 0;
    for (int32_t i = 0; i < v->m; i++)
        if (row_length(v, i) > longest)
            longest = row_length(v, i);
    return longest;
}

/* Entries per column, caller frees. */
static int32_t *column_counts(const csr_view *v)
{
    int32_t *count = calloc((size_t)v->n, sizeof *count);
    cr_assert_not_null(count);
    for (int32_t p = 0; p < v->nnz; p++)
        count[v->col_idx[p]]++;
    return count;
}

/* ===========================================================================================================
 * Stencils: exact sizes, Laplacian weights, symmetry, weak diagonal dominance
 * ========================================================================================================= */

static void check_stencil(int dims, int points, int64_t n, int64_t expected_nnz)
{
    char spec[64];
    snprintf(spec, sizeof spec, "stencil%dd:%d:%lld", dims, points, (long long)n);
    csr_view v = generate(spec, 1);
    int64_t rows = dims == 2 ? n * n : n * n * n;
    cr_assert_eq(v.m, rows, "%s: m = %d, expected %lld", spec, v.m, (long long)rows);
    cr_assert_eq(v.n, rows, "%s: n = %d", spec, v.n);
    cr_assert_eq(v.nnz, expected_nnz, "%s: nnz = %d, expected %lld", spec, v.nnz, (long long)expected_nnz);
    assert_valid_csr(&v, spec);
    assert_symmetric(&v, spec);
    assert_diagonally_dominant(&v, spec, 0);
    for (int32_t i = 0; i < v.m; i++)
        for (int32_t p = v.row_ptr[i]; p < v.row_ptr[i + 1]; p++) {
            double expected = v.col_idx[p] == i ? points - 1 : -1.0;
            cr_assert_eq(v.val[p], expected, "%s: a(%d,%d) = %g, expected %g", spec, i, v.col_idx[p], v.val[p],
                         expected);
        }
    release(&v);
}

Test(generators, stencil2d_5_point)
{
    for (int64_t n = 1; n <= 20; n += (n < 4 ? 1 : 7))
        check_stencil(2, 5, n, 5 * n * n - 4 * n);
}

Test(generators, stencil2d_9_point)
{
    for (int64_t n = 1; n <= 20; n += (n < 4 ? 1 : 7))
        check_stencil(2, 9, n, (3 * n - 2) * (3 * n - 2));
}

Test(generators, stencil3d_7_point)
{
    for (int64_t n = 1; n <= 12; n += (n < 4 ? 1 : 4))
        check_stencil(3, 7, n, 7 * n * n * n - 6 * n * n);
}

Test(generators, stencil3d_27_point)
{
    for (int64_t n = 1; n <= 12; n += (n < 4 ? 1 : 4))
        check_stencil(3, 27, n, (3 * n - 2) * (3 * n - 2) * (3 * n - 2));
}

/* Rows of the 7-point stencil sum to 0 inside the grid and are positive on the boundary. */
Test(generators, stencil3d_interior_rows_sum_to_zero)
{
    csr_view v = generate("stencil3d:7:6", 1);
    int32_t interior = 0;
    for (int32_t i = 0; i < v.m; i++) {
        double sum = 0.0;
        for (int32_t p = v.row_ptr[i]; p < v.row_ptr[i + 1]; p++)
            sum += v.val[p];
        if (row_length(&v, i) == 7) {
            cr_assert_eq(sum, 0.0, "row %d sums to %g", i, sum);
            interior++;
        } else {
            cr_assert(sum > 0.0, "boundary row %d sums to %g", i, sum);
        }
    }
    cr_assert_eq(interior, 4 * 4 * 4);
    release(&v);
}

/* ===========================================================================================================
 * fem3d: B*N^3 rows, B^2 (3N-2)^3 entries, symmetric, strictly diagonally dominant (SPD)
 * ========================================================================================================= */

Test(generators, fem3d_sizes_symmetry_dominance)
{
    for (int64_t b = 1; b <= 3; b++)
        for (int64_t n = 1; n <= 5; n += 2) {
            char spec[64];
            snprintf(spec, sizeof spec, "fem3d:%lld:%lld", (long long)b, (long long)n);
            csr_view v = generate(spec, 7);
            int64_t reach = 3 * n - 2;
            cr_assert_eq(v.m, b * n * n * n, "%s: m = %d", spec, v.m);
            cr_assert_eq(v.n, v.m);
            cr_assert_eq(v.nnz, b * b * reach * reach * reach, "%s: nnz = %d", spec, v.nnz);
            assert_valid_csr(&v, spec);
            assert_symmetric(&v, spec);
            assert_diagonally_dominant(&v, spec, 1);
            release(&v);
        }
}

/* An interior node of fem3d:3:N couples to 27 nodes x 3 components. */
Test(generators, fem3d_interior_row_length)
{
    csr_view v = generate("fem3d:3:4", 3);
    cr_assert_eq(max_row_length(&v), 81);
    release(&v);
}

/* ===========================================================================================================
 * banded, uniform, lp
 * ========================================================================================================= */

Test(generators, banded_sizes_and_band)
{
    static const int64_t cases[][2] = {{1, 1}, {10, 1}, {10, 3}, {5, 10}, {100, 7}, {37, 36}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t m = cases[c][0], half = cases[c][1], b = half < m - 1 ? half : m - 1;
        char spec[64];
        snprintf(spec, sizeof spec, "banded:%lld:%lld", (long long)m, (long long)half);
        csr_view v = generate(spec, 5);
        cr_assert_eq(v.m, m);
        cr_assert_eq(v.n, m);
        cr_assert_eq(v.nnz, m * (2 * b + 1) - b * (b + 1), "%s: nnz = %d", spec, v.nnz);
        assert_valid_csr(&v, spec);
        assert_values_in_unit_range(&v, spec);
        for (int32_t i = 0; i < v.m; i++) /* with the count right, no entry outside the band means all inside */
            for (int32_t p = v.row_ptr[i]; p < v.row_ptr[i + 1]; p++)
                cr_assert(labs((long)v.col_idx[p] - i) <= half, "%s: (%d, %d) outside the band", spec, i,
                          v.col_idx[p]);
        release(&v);
    }
}

Test(generators, uniform_has_exactly_k_per_row)
{
    static const char *specs[] = {"uniform:1:1", "uniform:1000:7", "uniform:64:64", "uniform:500:100",
                                  "uniform:3000:40"};
    static const int32_t k[] = {1, 7, 64, 100, 40};
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        csr_view v = generate(specs[s], 11);
        cr_assert_eq(v.n, v.m);
        cr_assert_eq(v.nnz, (int64_t)v.m * k[s], "%s: nnz = %d", specs[s], v.nnz);
        assert_valid_csr(&v, specs[s]);
        assert_values_in_unit_range(&v, specs[s]);
        for (int32_t i = 0; i < v.m; i++)
            cr_assert_eq(row_length(&v, i), k[s], "%s: row %d has %d entries", specs[s], i, row_length(&v, i));
        release(&v);
    }
}

/* Columns spread over the whole range: every column of uniform:2000:8 is hit about 8 times. */
Test(generators, uniform_columns_are_spread)
{
    csr_view v = generate("uniform:2000:8", 2);
    int32_t *count = column_counts(&v), empty = 0, most = 0;
    for (int32_t j = 0; j < v.n; j++) {
        empty += count[j] == 0;
        most = count[j] > most ? count[j] : most;
    }
    cr_assert(empty < 10, "%d empty columns (expected ~0.7)", empty);
    cr_assert(most < 30, "a column has %d entries (expected ~8)", most);
    free(count);
    release(&v);
}

Test(generators, lp_is_rectangular_and_skewed)
{
    csr_view v = generate("lp:300:5000:20", 4);
    cr_assert_eq(v.m, 300);
    cr_assert_eq(v.n, 5000);
    cr_assert(v.nnz <= 300 * 20 && v.nnz > 300 * 15, "nnz = %d", v.nnz);
    assert_valid_csr(&v, "lp:300:5000:20");
    assert_values_in_unit_range(&v, "lp:300:5000:20");
    for (int32_t i = 0; i < v.m; i++)
        cr_assert(row_length(&v, i) >= 1 && row_length(&v, i) <= 20, "row %d has %d entries", i, row_length(&v, i));
    int32_t *count = column_counts(&v), most = 0;
    for (int32_t j = 0; j < v.n; j++)
        most = count[j] > most ? count[j] : most;
    double average = (double)v.nnz / v.n;
    cr_assert(most > 20 * average, "most popular column has %d entries, average %.2f", most, average);
    free(count);
    release(&v);

    csr_view tall = generate("lp:5000:300:3", 4);
    cr_assert_eq(tall.m, 5000);
    cr_assert_eq(tall.n, 300);
    assert_valid_csr(&tall, "lp:5000:300:3");
    release(&tall);
}

/* ===========================================================================================================
 * kron and circuit
 * ========================================================================================================= */

Test(generators, kron_sizes_and_degree_skew)
{
    csr_view v = generate("kron:14:16", 1);
    int32_t edges = 16 << 14; /* stored both ways (undirected), duplicates merged */
    cr_assert_eq(v.m, 1 << 14);
    cr_assert_eq(v.n, 1 << 14);
    cr_assert(v.nnz < 2 * edges && v.nnz > edges, "nnz = %d of 2 x %d edges", v.nnz, edges);
    for (int32_t i = 0; i < v.m; i++) /* undirected: the pattern is symmetric */
        for (int32_t k = v.row_ptr[i]; k < v.row_ptr[i + 1]; k++) {
            int32_t j = v.col_idx[k], lo = v.row_ptr[j], hi = v.row_ptr[j + 1] - 1, found = 0;
            while (lo <= hi && !found) {
                int32_t mid = (lo + hi) / 2;
                if (v.col_idx[mid] == i) found = 1;
                else if (v.col_idx[mid] < i) lo = mid + 1;
                else hi = mid - 1;
            }
            cr_assert(found, "kron: (%d,%d) stored but not (%d,%d)", i, j, j, i);
        }
    assert_valid_csr(&v, "kron:14:16");
    assert_values_in_unit_range(&v, "kron:14:16");
    double average = (double)v.nnz / v.m;
    int32_t longest = max_row_length(&v);
    cr_assert(longest > 20 * average, "longest row %d, average %.1f: no skew", longest, average);
    /* relabelling scatters the hubs: the longest row is not vertex 0, as it would be in raw R-MAT */
    cr_assert(row_length(&v, 0) < longest, "vertex 0 is still the hub");
    release(&v);
}

Test(generators, circuit_small_sizes_are_valid_and_dominant)
{
    static const char *specs[] = {"circuit:1", "circuit:2", "circuit:3", "circuit:10", "circuit:1000",
                                  "circuit:20000"};
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        csr_view v = generate(specs[s], 9);
        cr_assert_eq(v.n, v.m);
        cr_assert_eq(v.m, atoi(specs[s] + 8));
        assert_valid_csr(&v, specs[s]);
        assert_diagonally_dominant(&v, specs[s], 1);
        release(&v);
    }
}

Test(generators, circuit_has_dense_rows_and_columns)
{
    csr_view v = generate("circuit:200000", 3);
    cr_assert_eq(v.m, 200000);
    assert_valid_csr(&v, "circuit:200000");
    assert_diagonally_dominant(&v, "circuit:200000", 1);
    int32_t *count = column_counts(&v), widest = 0, short_rows = 0;
    for (int32_t j = 0; j < v.n; j++)
        widest = count[j] > widest ? count[j] : widest;
    for (int32_t i = 0; i < v.m; i++)
        short_rows += row_length(&v, i) <= 7;
    cr_assert(max_row_length(&v) >= 10000, "longest row has %d entries", max_row_length(&v));
    cr_assert(widest >= 10000, "widest column has %d entries", widest);
    cr_assert(short_rows > v.m * 9 / 10, "only %d of %d rows are short", short_rows, v.m);
    cr_assert(v.nnz > 3 * v.m && v.nnz < 8 * v.m, "nnz = %d", v.nnz);
    free(count);
    release(&v);
}

/* ===========================================================================================================
 * Every kind: valid CSR, determinism, seeds matter, thread count does not, f32 agrees with f64
 * ========================================================================================================= */

static const char *const random_specs[] = {"fem3d:2:3",      "kron:10:8", "uniform:700:9",
                                           "circuit:3000",   "banded:300:4", "lp:200:900:12"};
#define RANDOM_SPEC_COUNT (sizeof random_specs / sizeof random_specs[0])

Test(generators, same_seed_gives_identical_matrix)
{
    for (size_t s = 0; s < RANDOM_SPEC_COUNT; s++) {
        csr_view a = generate(random_specs[s], 42), b = generate(random_specs[s], 42);
        assert_valid_csr(&a, random_specs[s]);
        cr_assert(same_matrix(&a, &b), "%s: two generations with seed 42 differ", random_specs[s]);
        release(&a);
        release(&b);
    }
}

Test(generators, different_seeds_give_different_matrices)
{
    for (size_t s = 0; s < RANDOM_SPEC_COUNT; s++) {
        csr_view a = generate(random_specs[s], 1), b = generate(random_specs[s], 2);
        cr_assert(!same_matrix(&a, &b), "%s: seeds 1 and 2 give the same matrix", random_specs[s]);
        release(&a);
        release(&b);
    }
}

Test(generators, result_does_not_depend_on_thread_count)
{
#if defined(_OPENMP) || defined(__GNUC__)
    if (!HAVE_OPENMP_RUNTIME)
        cr_skip_test("no OpenMP runtime linked");
    int threads = omp_get_max_threads();
    for (size_t s = 0; s < RANDOM_SPEC_COUNT; s++) {
        omp_set_num_threads(1);
        csr_view a = generate(random_specs[s], 5);
        omp_set_num_threads(threads > 1 ? threads : 3);
        csr_view b = generate(random_specs[s], 5);
        cr_assert(same_matrix(&a, &b), "%s: 1 thread and %d threads differ", random_specs[s], threads);
        release(&a);
        release(&b);
    }
    omp_set_num_threads(threads);
#else
    cr_skip_test("no OpenMP runtime");
#endif
}

Test(generators, single_precision_rounds_the_same_matrix)
{
    spmv_matrix_t *single = NULL;
    const int32_t *row_ptr, *col_idx;
    const void *values;
    int32_t m, nnz;
    spmv_precision_t precision;
    csr_view v = generate("uniform:300:5", 8);
    cr_assert_eq(spmv_matrix_generate(&single, "uniform:300:5", SPMV_F32, 8), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_get_size(single, &m, NULL, &nnz, &precision), SPMV_STATUS_SUCCESS);
    cr_assert_eq(precision, SPMV_F32);
    cr_assert_eq(nnz, v.nnz);
    cr_assert_eq(spmv_matrix_get_csr(single, &row_ptr, &col_idx, &values), SPMV_STATUS_SUCCESS);
    cr_assert(memcmp(col_idx, v.col_idx, (size_t)nnz * sizeof *col_idx) == 0);
    for (int32_t p = 0; p < nnz; p++)
        cr_assert_eq(((const float *)values)[p], (float)v.val[p]);
    spmv_matrix_destroy(single);
    release(&v);
}

/* ===========================================================================================================
 * Bad specs: the status, A left NULL, and a message naming the spec and the problem
 * ========================================================================================================= */

typedef struct bad_spec {
    const char *spec;
    spmv_status_t status;
    const char *mentions; /* a part of the message that names the problem */
} bad_spec;

static const bad_spec bad_specs[] = {
    {"", SPMV_STATUS_INVALID_ARGUMENT, "empty"},
    {"nope:1", SPMV_STATUS_INVALID_ARGUMENT, "unknown kind \"nope\""},
    {"stencil3d:8:10", SPMV_STATUS_INVALID_ARGUMENT, "POINTS = 8"},
    {"stencil2d:7:10", SPMV_STATUS_INVALID_ARGUMENT, "POINTS = 7"},
    {"stencil3d:7", SPMV_STATUS_INVALID_ARGUMENT, "takes 2 parameters"},
    {"stencil3d:7:10:1", SPMV_STATUS_INVALID_ARGUMENT, "got 3"},
    {"stencil3d:7:", SPMV_STATUS_INVALID_ARGUMENT, "N is empty"},
    {"stencil3d:7:-3", SPMV_STATUS_INVALID_ARGUMENT, "\"-3\""},
    {"stencil3d:7:0", SPMV_STATUS_INVALID_ARGUMENT, "N = 0"},
    {"stencil3d:7:1e3", SPMV_STATUS_INVALID_ARGUMENT, "\"1e3\""},
    {"stencil3d:7: 10", SPMV_STATUS_INVALID_ARGUMENT, "\" 10\""},
    {"Stencil3d:7:10", SPMV_STATUS_INVALID_ARGUMENT, "unknown kind"},
    {"uniform:10:20", SPMV_STATUS_INVALID_ARGUMENT, "K = 20"},
    {"lp:10:5:6", SPMV_STATUS_INVALID_ARGUMENT, "K = 6"},
    {"banded:x:1", SPMV_STATUS_INVALID_ARGUMENT, "\"x\""},
    {"circuit", SPMV_STATUS_INVALID_ARGUMENT, "takes 1 parameter"},
    {"stencil3d:7:123456789012345678901", SPMV_STATUS_INVALID_ARGUMENT, "absurdly large"},
    {"kron:40:16", SPMV_STATUS_OVERFLOW, "INT32_MAX"},
    {"kron:31:1", SPMV_STATUS_OVERFLOW, "vertices"},
    {"kron:28:16", SPMV_STATUS_OVERFLOW, "edges"},
    {"stencil3d:7:2000", SPMV_STATUS_OVERFLOW, "rows"},
    {"stencil3d:27:1000", SPMV_STATUS_OVERFLOW, "non-zeros"},
    {"fem3d:3:500", SPMV_STATUS_OVERFLOW, "non-zeros"},
    {"uniform:100000:100000", SPMV_STATUS_OVERFLOW, "M*K"},
    {"banded:3000000000:1", SPMV_STATUS_OVERFLOW, "rows"},
    {"lp:1000000:1000000:3000", SPMV_STATUS_OVERFLOW, "M*K"},
};

Test(generators, bad_specs_are_rejected_with_a_message)
{
    for (size_t s = 0; s < sizeof bad_specs / sizeof bad_specs[0]; s++) {
        const bad_spec *b = &bad_specs[s];
        spmv_matrix_t *A = (spmv_matrix_t *)&A; /* not NULL, to see it cleared */
        spmv_status_t st = spmv_matrix_generate(&A, b->spec, SPMV_F64, 1);
        const char *message = spmv_last_error(NULL);
        cr_assert_eq(st, b->status, "\"%s\": %s, expected %s (%s)", b->spec, spmv_status_string(st),
                     spmv_status_string(b->status), message);
        cr_assert_null(A, "\"%s\": A not cleared", b->spec);
        cr_assert(strstr(message, b->spec) != NULL, "\"%s\": message does not name the spec: %s", b->spec, message);
        cr_assert(strstr(message, b->mentions) != NULL, "\"%s\": message lacks \"%s\": %s", b->spec, b->mentions,
                  message);
    }
}

Test(generators, null_spec_is_rejected)
{
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, NULL, SPMV_F64, 1), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert_null(A);
    cr_assert(strlen(spmv_last_error(NULL)) > 0);
}

/* ===========================================================================================================
 * One moderately large matrix (7M entries), checked in full; no timing
 * ========================================================================================================= */

Test(generators, large_stencil3d_smoke, .timeout = 120)
{
    csr_view v = generate("stencil3d:7:100", 1);
    cr_assert_eq(v.m, 1000000);
    cr_assert_eq(v.nnz, 7 * 1000000 - 6 * 10000);
    assert_valid_csr(&v, "stencil3d:7:100");
    for (int32_t i = 0; i < v.m; i += 9973) {
        int32_t d = find_entry(&v, i, i);
        cr_assert(d >= 0 && v.val[d] == 6.0, "row %d diagonal", i);
    }
    release(&v);
}
