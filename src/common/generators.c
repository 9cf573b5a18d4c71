/*
 * generators.c -- synthetic sparse matrices for tests and benchmarks: spmvport_generate(spec, seed, ...).
 *
 * The spec grammar is documented at spmv_matrix_generate in include/spmvport.h. Every kind except kron is built
 * row by row: each row is a pure function of (seed, row), drawn from a counter-based random generator, so rows
 * are generated independently (in parallel with OpenMP) and the result is bitwise the same for any thread
 * count. Values of random kinds are a hash of (seed, row, column), which makes them independent of the order in
 * which columns were drawn and lets symmetric kinds hash (min, max).
 *
 * What each kind produces (m x n, nnz):
 *   stencil2d:5:N   N^2 x N^2, 5N^2 - 4N          diag 4, neighbours -1 (Dirichlet: edge rows are shorter)
 *   stencil2d:9:N   N^2 x N^2, (3N-2)^2           diag 8, neighbours -1
 *   stencil3d:7:N   N^3 x N^3, 7N^3 - 6N^2        diag 6, neighbours -1
 *   stencil3d:27:N  N^3 x N^3, (3N-2)^3           diag 26, neighbours -1
 *   fem3d:B:N       BN^3 x BN^3, B^2 (3N-2)^3     27-point node coupling, dense B x B blocks; symmetric values
 *                                                 in [-1, 1), diagonal = 1 + sum of |off-diagonals| (SPD)
 *   banded:M:B      M x M, M(2b+1) - b(b+1) with b = min(B, M-1); every |i-j| <= B
 *   uniform:M:K     M x M, exactly M*K: K distinct uniformly random columns per row
 *   lp:M:N:K        M x N, <= M*K: K draws per row of column floor(N u^3) (power-law popularity) through a
 *                   seeded permutation of the columns, duplicates merged
 *   circuit:M       M x M, <= 7M + dense lines: a diagonal, 2..6 off-diagonals per row (90% within distance
 *                   64 of the diagonal, 10% anywhere), and max(1, M/200000) dense rows and as many dense
 *                   columns of 10^4..10^5 entries each (capped at M; none when M = 1); diagonal = 1 + sum of
 *                   |off-diagonals| (strictly diagonally dominant, so non-singular)
 *   kron:SCALE:EF   2^SCALE x 2^SCALE, < 2 EF 2^SCALE: EF 2^SCALE R-MAT edges with a = 0.57, b = c = 0.19,
 *                   d = 0.05, vertices relabelled by a seeded permutation, undirected as in Graph500 (each
 *                   edge stored both ways, symmetric values), self loops kept, duplicate edges merged
 * Values are random in [-1, 1) unless stated. Sizes: m, n and the number of entries generated (before
 * duplicates are merged) must fit in int32, else SPMV_STATUS_OVERFLOW.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ===========================================================================================================
 * Random numbers: splitmix64 as a hash, so any (seed, purpose, index) opens an independent stream
 * ========================================================================================================= */

#define GOLDEN_GAMMA 0x9e3779b97f4a7c15ULL

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Purposes of random streams: one key per (seed, purpose) keeps the streams of one matrix unrelated. */
enum {
    PURPOSE_VALUES = 1,
    PURPOSE_ROWS = 2,
    PURPOSE_PERMUTATION = 3,
    PURPOSE_DENSE = 4,
    PURPOSE_EDGES = 5
};

static uint64_t stream_key(uint64_t seed, uint64_t purpose)
{
    return mix64(mix64(seed) ^ (purpose * 0xd1b54a32d192ed03ULL));
}

typedef struct rng {
    uint64_t state;
} rng;

static rng rng_stream(uint64_t key, uint64_t index)
{
    rng r;
    r.state = mix64(key ^ mix64(index + GOLDEN_GAMMA));
    return r;
}

static uint64_t rng_next(rng *r)
{
    r->state += GOLDEN_GAMMA;
    return mix64(r->state);
}

/* Uniform in [0, bound) for bound <= 2^32 (multiply-shift; the bias of at most bound/2^32 does not matter). */
static uint32_t rng_below(rng *r, uint64_t bound)
{
    return (uint32_t)(((rng_next(r) >> 32) * bound) >> 32);
}

/* Uniform in [0, 1) with 53 random bits. */
static double unit_interval(uint64_t bits)
{
    return (double)(bits >> 11) * 0x1.0p-53;
}

/* The value of entry (row, col): uniform in [-1, 1), a pure function of the key and the position. */
static double entry_value(uint64_t key, int32_t row, int32_t col)
{
    uint64_t position = ((uint64_t)(uint32_t)row << 32) | (uint32_t)col;
    return 2.0 * unit_interval(mix64(key ^ mix64(position))) - 1.0;
}

/* ===========================================================================================================
 * Seeded permutation of [0, n) without a table: a 4-round Feistel network on the smallest even power of two
 * >= n, cycle-walking until the image falls inside [0, n) (at most 4 steps expected)
 * ========================================================================================================= */

typedef struct index_permutation {
    uint64_t key;
    uint32_t n;
    unsigned half_bits;
    uint32_t half_mask;
} index_permutation;

static index_permutation permutation_make(uint64_t key, uint32_t n)
{
    index_permutation p;
    unsigned bits = 0;
    while (bits < 32 && (1ULL << bits) < n)
        bits++;
    p.key = key;
    p.n = n;
    p.half_bits = (bits + 1) / 2;
    p.half_mask = (uint32_t)((1ULL << p.half_bits) - 1);
    return p;
}

static uint32_t feistel(const index_permutation *p, uint32_t x)
{
    uint32_t left = x >> p->half_bits, right = x & p->half_mask;
    for (unsigned round = 0; round < 4; round++) {
        uint32_t f = (uint32_t)mix64(p->key + round * GOLDEN_GAMMA + right) & p->half_mask;
        uint32_t next_right = left ^ f;
        left = right;
        right = next_right;
    }
    return (uint32_t)(((uint64_t)left << p->half_bits) | right);
}

static uint32_t permutation_apply(const index_permutation *p, uint32_t x)
{
    do {
        x = feistel(p, x);
    } while (x >= p->n);
    return x;
}

/* ===========================================================================================================
 * Sorting and sampling column indices
 * ========================================================================================================= */

/* k distinct values of [0, range), sorted, uniformly among all k-subsets. Dense draws (k > range/8) walk the
 * range once (selection sampling); sparse draws draw with repetition, then redraw what duplicates removed
 * (the procedure treats all labels alike, so every subset is equally likely). */
static void sample_distinct(rng *r, int32_t range, int32_t k, int32_t *out)
{
    if ((int64_t)k * 8 > range) {
        int32_t chosen = 0;
        for (int32_t t = 0; t < range && chosen < k; t++)
            if ((uint64_t)rng_below(r, (uint64_t)(range - t)) < (uint64_t)(k - chosen))
                out[chosen++] = t;
        return;
    }
    int32_t have = 0;
    while (have < k) {
        for (int32_t i = have; i < k; i++)
            out[i] = (int32_t)rng_below(r, (uint64_t)range);
        spmvport_sort_int32(out, k);
        have = spmvport_unique_sorted(out, k);
    }
}

/* ===========================================================================================================
 * The generator: parsed spec, sizes, and the per-row callbacks of the row-wise kinds
 * ========================================================================================================= */

#define MAX_PARAMS 3

typedef struct generator generator;
struct generator {
    const char *spec;
    uint64_t seed;
    int64_t param[MAX_PARAMS];
    int32_t m, n;
    /* row-wise kinds: an upper bound of the row's length (exact when bound_is_exact) and the row itself
     * (sorted, unique columns, at most bound entries; returns the length) */
    int32_t (*row_bound)(const generator *g, int32_t row);
    int32_t (*row_fill)(const generator *g, int32_t row, int32_t *col, double *val);
    int bound_is_exact;
    /* kinds that do not build row by row */
    spmv_status_t (*build)(generator *g, spmvport_csr *out, char *msg, size_t msglen);
    uint64_t value_key, row_key;
    index_permutation permutation;
    /* stencils and fem3d */
    int32_t grid, block, diag_weight;
    int box; /* 1: every neighbour in the box (9, 27 points); 0: axis neighbours only (5, 7 points) */
    int dims;
    /* circuit: dense rows (sorted) with their lengths, and the dense-column entries of each row */
    int32_t dense_count;
    int32_t *dense_rows, *dense_row_length;
    int32_t *extra_ptr, *extra_col;
};

static void generator_release(generator *g)
{
    free(g->dense_rows);
    free(g->dense_row_length);
    free(g->extra_ptr);
    free(g->extra_col);
}

/* A failure message "generate "SPEC": DETAIL". */
static spmv_status_t generator_fail(const generator *g, char *msg, size_t msglen, spmv_status_t status,
                                    const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static spmv_status_t generator_fail(const generator *g, char *msg, size_t msglen, spmv_status_t status,
                                    const char *fmt, ...)
{
    char detail[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    spmvport_msg(msg, msglen, "generate \"%.200s\": %s", g->spec, detail);
    return status;
}

/* Sizes are checked in double: exact below 2^53, and anything larger is far beyond INT32_MAX anyway. */
static spmv_status_t check_fits_int32(const generator *g, double value, const char *what, char *msg,
                                      size_t msglen)
{
    if (value <= (double)INT32_MAX)
        return SPMV_STATUS_SUCCESS;
    return generator_fail(g, msg, msglen, SPMV_STATUS_OVERFLOW, "%s = %.4g exceeds INT32_MAX (%d)", what, value,
                          INT32_MAX);
}

/* ===========================================================================================================
 * Row-wise driver: bounds, prefix sum, parallel fill into each row's slot, compaction when rows came out
 * shorter than their bound (duplicates merged)
 * ========================================================================================================= */

static spmv_status_t prefix_bounds(const generator *g, int32_t *row_ptr, char *msg, size_t msglen)
{
    int32_t m = g->m;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int32_t i = 0; i < m; i++)
        row_ptr[i + 1] = g->row_bound(g, i);
    int64_t total = 0;
    row_ptr[0] = 0;
    for (int32_t i = 0; i < m; i++) {
        total += row_ptr[i + 1];
        if (total > INT32_MAX)
            return generator_fail(g, msg, msglen, SPMV_STATUS_OVERFLOW,
                                  "more than INT32_MAX (%d) entries by row %d", INT32_MAX, (int)i);
        row_ptr[i + 1] = (int32_t)total;
    }
    return SPMV_STATUS_SUCCESS;
}

/* Fill every row at its bound offset; used[i] gets its real length. Returns the rows longer than allowed
 * (a bug: 0 expected) or, for exact kinds, of another length. */
static int64_t fill_rows(const generator *g, const int32_t *row_ptr, int32_t *col, double *val, int32_t *used)
{
    int64_t bad_rows = 0;
    int32_t m = g->m;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 256) reduction(+ : bad_rows)
#endif
    for (int32_t i = 0; i < m; i++) {
        int32_t bound = row_ptr[i + 1] - row_ptr[i];
        int32_t length = g->row_fill(g, i, col + row_ptr[i], val + row_ptr[i]);
        if (length > bound || (g->bound_is_exact && length != bound))
            bad_rows++;
        if (used)
            used[i] = length;
    }
    return bad_rows;
}

/* Move the rows together (in place, front to back: a row never moves right) and shrink the arrays. */
static void compact_rows(spmvport_csr *A, const int32_t *used)
{
    int32_t write = 0;
    for (int32_t i = 0; i < A->m; i++) {
        int32_t start = A->row_ptr[i];
        if (start != write) {
            memmove(A->col_idx + write, A->col_idx + start, (size_t)used[i] * sizeof *A->col_idx);
            memmove(A->val + write, A->val + start, (size_t)used[i] * sizeof *A->val);
        }
        A->row_ptr[i] = write;
        write += used[i];
    }
    A->row_ptr[A->m] = write;
    A->nnz = write;
    /* a failed shrink keeps the larger block, which is still valid */
    int32_t *col = realloc(A->col_idx, (size_t)(write ? write : 1) * sizeof *col);
    if (col)
        A->col_idx = col;
    double *val = realloc(A->val, (size_t)(write ? write : 1) * sizeof *val);
    if (val)
        A->val = val;
}

static spmv_status_t build_rows(generator *g, spmvport_csr *out, char *msg, size_t msglen)
{
    spmvport_csr A = {0};
    int32_t *used = NULL;
    spmv_status_t status = SPMV_STATUS_OUT_OF_MEMORY;
    A.m = g->m;
    A.n = g->n;
    A.row_ptr = spmvport_malloc_array((size_t)A.m + 1, sizeof *A.row_ptr);
    if (!A.row_ptr)
        goto fail_memory;
    status = prefix_bounds(g, A.row_ptr, msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        goto fail;
    A.nnz = A.row_ptr[A.m];
    A.col_idx = spmvport_malloc_array((size_t)A.nnz, sizeof *A.col_idx);
    A.val = spmvport_malloc_array((size_t)A.nnz, sizeof *A.val);
    if (!g->bound_is_exact)
        used = spmvport_malloc_array((size_t)A.m, sizeof *used);
    if (!A.col_idx || !A.val || (!g->bound_is_exact && !used))
        goto fail_memory;
    if (fill_rows(g, A.row_ptr, A.col_idx, A.val, used) != 0) {
        status = generator_fail(g, msg, msglen, SPMV_STATUS_INTERNAL_ERROR, "a row disagrees with its bound");
        goto fail;
    }
    if (used)
        compact_rows(&A, used);
    free(used);
    *out = A;
    return SPMV_STATUS_SUCCESS;

fail_memory:
    status = generator_fail(g, msg, msglen, SPMV_STATUS_OUT_OF_MEMORY, "out of host memory for %d rows",
                            (int)g->m);
fail:
    free(used);
    spmvport_csr_free(&A);
    return status;
}

/* ===========================================================================================================
 * Stencils (stencil2d, stencil3d) and fem3d: a grid of N^dims nodes with a star or box neighbourhood.
 * Neighbours are visited with z, then y, then x, slowest first, so columns come out sorted.
 * ========================================================================================================= */

/* Neighbour offsets in [lo, hi] of coordinate c on an axis of n points. */
static void axis_range(int32_t c, int32_t n, int *lo, int *hi)
{
    *lo = c > 0 ? -1 : 0;
    *hi = c < n - 1 ? 1 : 0;
}

static void node_coordinates(const generator *g, int32_t node, int32_t xyz[3])
{
    int32_t n = g->grid;
    xyz[0] = node % n;
    xyz[1] = g->dims >= 2 ? (node / n) % n : 0;
    xyz[2] = g->dims >= 3 ? node / n / n : 0;
}

static int32_t grid_neighbour_count(const generator *g, int32_t node)
{
    int32_t xyz[3], count = 1;
    node_coordinates(g, node, xyz);
    for (int axis = 0; axis < g->dims; axis++) {
        int lo, hi;
        axis_range(xyz[axis], g->grid, &lo, &hi);
        if (g->box)
            count *= hi - lo + 1;
        else
            count += hi - lo;
    }
    return count;
}

/* The neighbours of a node, sorted; returns how many. */
static int32_t grid_neighbours(const generator *g, int32_t node, int32_t *neighbour)
{
    int32_t xyz[3], n = g->grid, count = 0;
    int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    node_coordinates(g, node, xyz);
    for (int axis = 0; axis < g->dims; axis++)
        axis_range(xyz[axis], n, &lo[axis], &hi[axis]);
    if (!g->box) { /* star: -z, -y, -x, centre, +x, +y, +z is already sorted */
        const int32_t stride[3] = {1, n, n * n};
        for (int axis = g->dims - 1; axis >= 0; axis--)
            if (lo[axis] < 0)
                neighbour[count++] = node - stride[axis];
        neighbour[count++] = node;
        for (int axis = 0; axis < g->dims; axis++)
            if (hi[axis] > 0)
                neighbour[count++] = node + stride[axis];
        return count;
    }
    for (int dz = lo[2]; dz <= hi[2]; dz++)
        for (int dy = lo[1]; dy <= hi[1]; dy++)
            for (int dx = lo[0]; dx <= hi[0]; dx++)
                neighbour[count++] = node + (dz * n + dy) * n + dx;
    return count;
}

static int32_t stencil_bound(const generator *g, int32_t row)
{
    return grid_neighbour_count(g, row);
}

static int32_t stencil_fill(const generator *g, int32_t row, int32_t *col, double *val)
{
    int32_t count = grid_neighbours(g, row, col);
    for (int32_t k = 0; k < count; k++)
        val[k] = col[k] == row ? (double)g->diag_weight : -1.0;
    return count;
}

static int32_t fem_bound(const generator *g, int32_t row)
{
    return grid_neighbour_count(g, row / g->block) * g->block;
}

/* Row (node, component): every component of every neighbour node. Off-diagonal values hash (min, max) so the
 * matrix is symmetric; the diagonal exceeds the row's absolute sum, which makes it SPD. */
static int32_t fem_fill(const generator *g, int32_t row, int32_t *col, double *val)
{
    int32_t node[27], b = g->block;
    int32_t nodes = grid_neighbours(g, row / b, node);
    int32_t count = 0, diag = 0;
    double off_sum = 0.0;
    for (int32_t k = 0; k < nodes; k++)
        for (int32_t c = 0; c < b; c++) {
            int32_t j = node[k] * b + c;
            col[count] = j;
            if (j == row) {
                diag = count;
            } else {
                val[count] = row < j ? entry_value(g->value_key, row, j) : entry_value(g->value_key, j, row);
                off_sum += fabs(val[count]);
            }
            count++;
        }
    val[diag] = off_sum + 1.0;
    return count;
}

static spmv_status_t setup_grid(generator *g, int dims, char *msg, size_t msglen)
{
    int64_t points = g->param[0], n = g->param[1];
    int star = dims == 2 ? 5 : 7, box = dims == 2 ? 9 : 27;
    if (points != star && points != box)
        return generator_fail(g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT,
                              "POINTS = %lld: stencil%dd takes %d or %d", (long long)points, dims, star, box);
    double side = (double)n, nodes = pow(side, dims), reach = 3.0 * side - 2.0;
    double nnz = points == box ? pow(reach, dims) : (2.0 * dims + 1.0) * nodes - 2.0 * dims * pow(side, dims - 1);
    spmv_status_t status = check_fits_int32(g, nodes, "rows N^dims", msg, msglen);
    if (status == SPMV_STATUS_SUCCESS)
        status = check_fits_int32(g, nnz, "non-zeros", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    g->m = g->n = (int32_t)nodes;
    g->grid = (int32_t)n;
    g->dims = dims;
    g->box = points == box;
    g->diag_weight = (int32_t)points - 1;
    g->row_bound = stencil_bound;
    g->row_fill = stencil_fill;
    g->bound_is_exact = 1;
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t setup_stencil2d(generator *g, char *msg, size_t msglen)
{
    return setup_grid(g, 2, msg, msglen);
}

static spmv_status_t setup_stencil3d(generator *g, char *msg, size_t msglen)
{
    return setup_grid(g, 3, msg, msglen);
}

static spmv_status_t setup_fem3d(generator *g, char *msg, size_t msglen)
{
    double b = (double)g->param[0], n = (double)g->param[1];
    double rows = b * n * n * n, nnz = b * b * pow(3.0 * n - 2.0, 3);
    spmv_status_t status = check_fits_int32(g, rows, "rows B*N^3", msg, msglen);
    if (status == SPMV_STATUS_SUCCESS)
        status = check_fits_int32(g, nnz, "non-zeros B^2*(3N-2)^3", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    g->m = g->n = (int32_t)rows;
    g->grid = (int32_t)g->param[1];
    g->block = (int32_t)g->param[0];
    g->dims = 3;
    g->box = 1;
    g->row_bound = fem_bound;
    g->row_fill = fem_fill;
    g->bound_is_exact = 1;
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * banded:M:B
 * ========================================================================================================= */

static void band_limits(const generator *g, int32_t row, int32_t *first, int32_t *last)
{
    int64_t half = g->param[1];
    *first = (int32_t)(row - half < 0 ? 0 : row - half);
    *last = (int32_t)(row + half > g->m - 1 ? g->m - 1 : row + half);
}

static int32_t banded_bound(const generator *g, int32_t row)
{
    int32_t first, last;
    band_limits(g, row, &first, &last);
    return last - first + 1;
}

static int32_t banded_fill(const generator *g, int32_t row, int32_t *col, double *val)
{
    int32_t first, last, count = 0;
    band_limits(g, row, &first, &last);
    for (int32_t j = first; j <= last; j++, count++) {
        col[count] = j;
        val[count] = entry_value(g->value_key, row, j);
    }
    return count;
}

static spmv_status_t setup_banded(generator *g, char *msg, size_t msglen)
{
    double m = (double)g->param[0];
    spmv_status_t status = check_fits_int32(g, m, "rows M", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    double b = fmin((double)g->param[1], m - 1.0);
    status = check_fits_int32(g, m * (2.0 * b + 1.0) - b * (b + 1.0), "non-zeros", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    g->m = g->n = (int32_t)m;
    g->row_bound = banded_bound;
    g->row_fill = banded_fill;
    g->bound_is_exact = 1;
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * uniform:M:K and lp:M:N:K
 * ========================================================================================================= */

static void fill_random_values(const generator *g, int32_t row, const int32_t *col, double *val, int32_t count)
{
    for (int32_t k = 0; k < count; k++)
        val[k] = entry_value(g->value_key, row, col[k]);
}

static int32_t uniform_bound(const generator *g, int32_t row)
{
    (void)row;
    return (int32_t)g->param[1];
}

static int32_t uniform_fill(const generator *g, int32_t row, int32_t *col, double *val)
{
    int32_t k = (int32_t)g->param[1];
    rng r = rng_stream(g->row_key, (uint64_t)row);
    sample_distinct(&r, g->n, k, col);
    fill_random_values(g, row, col, val, k);
    return k;
}

static spmv_status_t setup_uniform(generator *g, char *msg, size_t msglen)
{
    int64_t m = g->param[0], k = g->param[1];
    spmv_status_t status = check_fits_int32(g, (double)m, "rows M", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    if (k > m)
        return generator_fail(g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT,
                              "K = %lld distinct columns per row cannot exceed M = %lld", (long long)k,
                              (long long)m);
    status = check_fits_int32(g, (double)m * (double)k, "non-zeros M*K", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    g->m = g->n = (int32_t)m;
    g->row_bound = uniform_bound;
    g->row_fill = uniform_fill;
    g->bound_is_exact = 1;
    return SPMV_STATUS_SUCCESS;
}

static int32_t lp_bound(const generator *g, int32_t row)
{
    (void)row;
    return (int32_t)g->param[2];
}

/* Column floor(N u^3) puts most draws on few columns (power law); the permutation scatters the popular ones. */
static int32_t lp_fill(const generator *g, int32_t row, int32_t *col, double *val)
{
    int32_t k = (int32_t)g->param[2];
    rng r = rng_stream(g->row_key, (uint64_t)row);
    for (int32_t t = 0; t < k; t++) {
        double u = unit_interval(rng_next(&r));
        int32_t popular = (int32_t)((double)g->n * u * u * u);
        if (popular >= g->n)
            popular = g->n - 1;
        col[t] = (int32_t)permutation_apply(&g->permutation, (uint32_t)popular);
    }
    spmvport_sort_int32(col, k);
    k = spmvport_unique_sorted(col, k);
    fill_random_values(g, row, col, val, k);
    return k;
}

static spmv_status_t setup_lp(generator *g, char *msg, size_t msglen)
{
    int64_t m = g->param[0], n = g->param[1], k = g->param[2];
    spmv_status_t status = check_fits_int32(g, (double)m, "rows M", msg, msglen);
    if (status == SPMV_STATUS_SUCCESS)
        status = check_fits_int32(g, (double)n, "columns N", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    if (k > n)
        return generator_fail(g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT,
                              "K = %lld entries per row cannot exceed N = %lld columns", (long long)k,
                              (long long)n);
    status = check_fits_int32(g, (double)m * (double)k, "entries drawn M*K", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    g->m = (int32_t)m;
    g->n = (int32_t)n;
    g->permutation = permutation_make(stream_key(g->seed, PURPOSE_PERMUTATION), (uint32_t)n);
    g->row_bound = lp_bound;
    g->row_fill = lp_fill;
    g->bound_is_exact = 0;
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * circuit:M
 * ========================================================================================================= */

#define CIRCUIT_MAX_LOCAL 6       /* off-diagonals drawn per row: 2..6 */
#define CIRCUIT_REACH 64          /* "near the diagonal" */
#define CIRCUIT_ROWS_PER_DENSE 200000
#define CIRCUIT_DENSE_MIN 10000
#define CIRCUIT_DENSE_MAX 100000

/* Index of row in the sorted dense rows, or -1. */
static int32_t circuit_dense_index(const generator *g, int32_t row)
{
    int32_t lo = 0, hi = g->dense_count - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (g->dense_rows[mid] == row)
            return mid;
        if (g->dense_rows[mid] < row)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static int32_t circuit_bound(const generator *g, int32_t row)
{
    int32_t dense = circuit_dense_index(g, row);
    int32_t bound = 1 + CIRCUIT_MAX_LOCAL + (g->extra_ptr[row + 1] - g->extra_ptr[row]);
    return bound + (dense >= 0 ? g->dense_row_length[dense] : 0);
}

/* An off-diagonal column: 90% within CIRCUIT_REACH of the diagonal, else anywhere. Needs m >= 2. */
static int32_t circuit_neighbour(const generator *g, rng *r, int32_t row)
{
    int32_t m = g->m;
    if (rng_below(r, 10) < 9) {
        int32_t reach = m - 1 < CIRCUIT_REACH ? m - 1 : CIRCUIT_REACH;
        int32_t distance = 1 + (int32_t)rng_below(r, (uint64_t)reach);
        int32_t j = rng_below(r, 2) ? row + distance : row - distance;
        if (j < 0 || j >= m) /* off the edge: the other side, or wrap when neither side fits */
            j = j < 0 ? row + distance : row - distance;
        if (j < 0 || j >= m)
            j = (int32_t)(((int64_t)row + distance) % m);
        return j;
    }
    int32_t j = (int32_t)rng_below(r, (uint64_t)(m - 1));
    return j >= row ? j + 1 : j;
}

static int32_t circuit_fill(const generator *g, int32_t row, int32_t *col, double *val)
{
    rng r = rng_stream(g->row_key, (uint64_t)row);
    int32_t count = 0, dense = circuit_dense_index(g, row);
    col[count++] = row;
    if (g->m > 1) {
        int32_t local = 2 + (int32_t)rng_below(&r, CIRCUIT_MAX_LOCAL - 1);
        for (int32_t t = 0; t < local; t++)
            col[count++] = circuit_neighbour(g, &r, row);
    }
    for (int32_t e = g->extra_ptr[row]; e < g->extra_ptr[row + 1]; e++)
        col[count++] = g->extra_col[e];
    if (dense >= 0) {
        rng dense_rng = rng_stream(stream_key(g->seed, PURPOSE_DENSE), (uint64_t)dense);
        sample_distinct(&dense_rng, g->n, g->dense_row_length[dense], col + count);
        count += g->dense_row_length[dense];
    }
    spmvport_sort_int32(col, count);
    count = spmvport_unique_sorted(col, count);
    double off_sum = 0.0;
    int32_t diag = 0;
    for (int32_t k = 0; k < count; k++) {
        if (col[k] == row) {
            diag = k;
            continue;
        }
        val[k] = entry_value(g->value_key, row, col[k]);
        off_sum += fabs(val[k]);
    }
    val[diag] = off_sum + 1.0;
    return count;
}

/* Dense line k: length 10^4..10^5 capped at m; lines 0..d-1 are rows, d..2d-1 columns. */
static int32_t circuit_dense_length(const generator *g, int32_t line)
{
    rng r = rng_stream(stream_key(g->seed, PURPOSE_DENSE), (uint64_t)line + 0x100000000ULL);
    int32_t length = CIRCUIT_DENSE_MIN + (int32_t)rng_below(&r, CIRCUIT_DENSE_MAX - CIRCUIT_DENSE_MIN + 1);
    return length < g->m ? length : g->m;
}

/* Which rows each dense column reaches, stored per row (counting sort) so rows stay independent. */
static spmv_status_t circuit_dense_columns(generator *g)
{
    int32_t d = g->dense_count, m = g->m;
    int64_t total = 0;
    for (int32_t k = 0; k < d; k++)
        total += circuit_dense_length(g, d + k);
    int32_t *rows = spmvport_malloc_array((size_t)(total ? total : 1), sizeof *rows);
    g->extra_ptr = spmvport_calloc_array((size_t)m + 1, sizeof *g->extra_ptr);
    g->extra_col = spmvport_malloc_array((size_t)(total ? total : 1), sizeof *g->extra_col);
    if (!rows || !g->extra_ptr || !g->extra_col) {
        free(rows);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    int64_t offset = 0;
    for (int32_t k = 0; k < d; k++) {
        int32_t length = circuit_dense_length(g, d + k);
        rng r = rng_stream(stream_key(g->seed, PURPOSE_DENSE), (uint64_t)(d + k));
        sample_distinct(&r, m, length, rows + offset);
        for (int32_t t = 0; t < length; t++)
            g->extra_ptr[rows[offset + t] + 1]++;
        offset += length;
    }
    for (int32_t i = 0; i < m; i++)
        g->extra_ptr[i + 1] += g->extra_ptr[i];
    offset = 0;
    for (int32_t k = 0; k < d; k++) { /* extra_ptr[i] walks to row i's end, then is restored below */
        int32_t length = circuit_dense_length(g, d + k);
        int32_t column = (int32_t)permutation_apply(&g->permutation, (uint32_t)(d + k));
        for (int32_t t = 0; t < length; t++)
            g->extra_col[g->extra_ptr[rows[offset + t]]++] = column;
        offset += length;
    }
    for (int32_t i = m; i > 0; i--)
        g->extra_ptr[i] = g->extra_ptr[i - 1];
    g->extra_ptr[0] = 0;
    free(rows);
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t circuit_dense_rows(generator *g)
{
    int32_t d = g->dense_count;
    g->dense_rows = spmvport_malloc_array((size_t)(d ? d : 1), sizeof *g->dense_rows);
    g->dense_row_length = spmvport_malloc_array((size_t)(d ? d : 1), sizeof *g->dense_row_length);
    if (!g->dense_rows || !g->dense_row_length)
        return SPMV_STATUS_OUT_OF_MEMORY;
    for (int32_t k = 0; k < d; k++)
        g->dense_rows[k] = (int32_t)permutation_apply(&g->permutation, (uint32_t)k);
    spmvport_sort_int32(g->dense_rows, d);
    /* lengths follow the sorted order, so circuit_fill's binary search finds a row's length and stream */
    for (int32_t k = 0; k < d; k++)
        g->dense_row_length[k] = circuit_dense_length(g, k);
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t setup_circuit(generator *g, char *msg, size_t msglen)
{
    int64_t m = g->param[0];
    spmv_status_t status = check_fits_int32(g, (double)m, "rows M", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    g->m = g->n = (int32_t)m;
    g->dense_count = m < 2 ? 0 : (m / CIRCUIT_ROWS_PER_DENSE > 1 ? (int32_t)(m / CIRCUIT_ROWS_PER_DENSE) : 1);
    double entries = (double)m * (1 + CIRCUIT_MAX_LOCAL) + 2.0 * g->dense_count * CIRCUIT_DENSE_MAX;
    status = check_fits_int32(g, entries, "entries generated (7M + dense lines)", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    g->permutation = permutation_make(stream_key(g->seed, PURPOSE_PERMUTATION), (uint32_t)m);
    if (circuit_dense_rows(g) != SPMV_STATUS_SUCCESS || circuit_dense_columns(g) != SPMV_STATUS_SUCCESS)
        return generator_fail(g, msg, msglen, SPMV_STATUS_OUT_OF_MEMORY, "out of host memory for dense lines");
    g->row_bound = circuit_bound;
    g->row_fill = circuit_fill;
    g->bound_is_exact = 0;
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * kron:SCALE:EF -- R-MAT edges as COO, relabelled, merged by spmvport_csr_from_coo, then fresh values
 * ========================================================================================================= */

/* One edge: at each of SCALE levels a quadrant with probabilities a, b, c, d (32 random bits per level).
 * threshold[] holds a, a+b, a+b+c scaled to 2^32. */
static void kron_edge(uint64_t key, unsigned scale, int64_t edge, const uint32_t threshold[3], uint32_t *src,
                      uint32_t *dst)
{
    rng r = rng_stream(key, (uint64_t)edge);
    uint32_t s = 0, d = 0;
    uint64_t bits = 0;
    for (unsigned level = 0; level < scale; level++) {
        if (level % 2 == 0)
            bits = rng_next(&r);
        uint32_t u = (uint32_t)bits;
        bits >>= 32;
        /* branch-free (random branches mispredict): quadrant a = (0,0), b = (0,1), c = (1,0), d = (1,1) */
        uint32_t past_a = u >= threshold[0], past_b = u >= threshold[1], past_c = u >= threshold[2];
        s = (s << 1) | past_b;
        d = (d << 1) | (past_a ^ past_b ^ past_c);
    }
    *src = s;
    *dst = d;
}

static spmv_status_t kron_edges(const generator *g, int32_t *row, int32_t *col)
{
    unsigned scale = (unsigned)g->param[0];
    int64_t edges = g->param[1] << scale;
    int32_t vertices = g->m;
    const uint32_t threshold[3] = {(uint32_t)(0.57 * 4294967296.0), (uint32_t)(0.76 * 4294967296.0),
                                   (uint32_t)(0.95 * 4294967296.0)};
    int32_t *label = spmvport_malloc_array((size_t)vertices, sizeof *label);
    if (!label)
        return SPMV_STATUS_OUT_OF_MEMORY;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int32_t v = 0; v < vertices; v++)
        label[v] = (int32_t)permutation_apply(&g->permutation, (uint32_t)v);
    uint64_t key = stream_key(g->seed, PURPOSE_EDGES);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t e = 0; e < edges; e++) {
        uint32_t s, d;
        kron_edge(key, scale, e, threshold, &s, &d);
        row[e] = col[edges + e] = label[s]; /* both directions: Graph500 graphs are undirected */
        col[e] = row[edges + e] = label[d];
    }
    free(label);
    return SPMV_STATUS_SUCCESS;
}

static void kron_values(const generator *g, spmvport_csr *A)
{
    int32_t m = A->m;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int32_t i = 0; i < m; i++)
        for (int32_t p = A->row_ptr[i]; p < A->row_ptr[i + 1]; p++)
            A->val[p] = entry_value(g->value_key, i < A->col_idx[p] ? i : A->col_idx[p],
                                    i < A->col_idx[p] ? A->col_idx[p] : i); /* symmetric values */
}

static spmv_status_t kron_build(generator *g, spmvport_csr *out, char *msg, size_t msglen)
{
    int64_t edges = 2 * (g->param[1] << g->param[0]); /* each R-MAT edge and its reverse */
    int32_t *row = spmvport_malloc_array((size_t)edges, sizeof *row);
    int32_t *col = spmvport_malloc_array((size_t)edges, sizeof *col);
    spmv_status_t status = SPMV_STATUS_OUT_OF_MEMORY;
    if (row && col)
        status = kron_edges(g, row, col);
    /* no values: csr_from_coo counts edges as 1, and kron_values replaces the sums */
    if (status == SPMV_STATUS_SUCCESS) {
        char detail[256] = "";
        status = spmvport_csr_from_coo(out, g->m, g->n, edges, row, col, NULL, detail, sizeof detail);
        if (status != SPMV_STATUS_SUCCESS)
            generator_fail(g, msg, msglen, status, "merging edges: %s", detail);
    } else {
        generator_fail(g, msg, msglen, status, "out of host memory for %lld edges", (long long)edges);
    }
    free(row);
    free(col);
    if (status == SPMV_STATUS_SUCCESS)
        kron_values(g, out);
    return status;
}

static spmv_status_t setup_kron(generator *g, char *msg, size_t msglen)
{
    int64_t scale = g->param[0], edge_factor = g->param[1];
    double vertices = ldexp(1.0, scale > 1000 ? 1000 : (int)scale);
    spmv_status_t status = check_fits_int32(g, vertices, "vertices 2^SCALE", msg, msglen);
    if (status == SPMV_STATUS_SUCCESS)
        status = check_fits_int32(g, 2.0 * vertices * (double)edge_factor, "edges 2*EF*2^SCALE", msg, msglen);
    if (status != SPMV_STATUS_SUCCESS)
        return status;
    g->m = g->n = (int32_t)vertices;
    g->permutation = permutation_make(stream_key(g->seed, PURPOSE_PERMUTATION), (uint32_t)g->m);
    g->build = kron_build;
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * Spec parsing: KIND:P1:P2..., every parameter a positive decimal integer
 * ========================================================================================================= */

typedef struct kind_description {
    const char *name;
    int param_count;
    const char *param_name[MAX_PARAMS];
    spmv_status_t (*setup)(generator *g, char *msg, size_t msglen);
} kind_description;

static const kind_description kinds[] = {
    {"stencil2d", 2, {"POINTS", "N", NULL}, setup_stencil2d},
    {"stencil3d", 2, {"POINTS", "N", NULL}, setup_stencil3d},
    {"fem3d", 2, {"B", "N", NULL}, setup_fem3d},
    {"kron", 2, {"SCALE", "EF", NULL}, setup_kron},
    {"uniform", 2, {"M", "K", NULL}, setup_uniform},
    {"circuit", 1, {"M", NULL, NULL}, setup_circuit},
    {"banded", 2, {"M", "B", NULL}, setup_banded},
    {"lp", 3, {"M", "N", "K"}, setup_lp},
};

#define KIND_COUNT ((int)(sizeof kinds / sizeof kinds[0]))
#define MAX_DIGITS 18 /* below INT64_MAX; anything longer is absurd for a 32-bit-indexed matrix */

static void kind_usage(const kind_description *kind, char *buf, size_t len)
{
    int used = snprintf(buf, len, "%s", kind->name);
    for (int p = 0; p < kind->param_count && used > 0 && (size_t)used < len; p++)
        used += snprintf(buf + used, len - (size_t)used, ":%s", kind->param_name[p]);
}

static const kind_description *find_kind(const char *name, size_t length)
{
    for (int k = 0; k < KIND_COUNT; k++)
        if (strlen(kinds[k].name) == length && strncmp(kinds[k].name, name, length) == 0)
            return &kinds[k];
    return NULL;
}

/* One parameter: the text between separators, [text, end). */
static spmv_status_t parse_param(const generator *g, const char *name, const char *text, const char *end,
                                 int64_t *value, char *msg, size_t msglen)
{
    int length = (int)(end - text);
    int64_t v = 0;
    if (length == 0)
        return generator_fail(g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT, "parameter %s is empty", name);
    for (const char *c = text; c < end; c++)
        if (*c < '0' || *c > '9')
            return generator_fail(g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT,
                                  "parameter %s = \"%.*s\" is not a positive integer", name, length, text);
    if (length > MAX_DIGITS)
        return generator_fail(g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT,
                              "parameter %s = \"%.*s\" is absurdly large", name, length, text);
    for (const char *c = text; c < end; c++)
        v = v * 10 + (*c - '0');
    if (v == 0)
        return generator_fail(g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT, "parameter %s = 0 must be positive",
                              name);
    *value = v;
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t parse_spec(generator *g, const kind_description **kind_out, char *msg, size_t msglen)
{
    const char *spec = g->spec, *colon = strchr(spec, ':');
    size_t name_length = colon ? (size_t)(colon - spec) : strlen(spec);
    char usage[128];
    if (*spec == '\0')
        return generator_fail(g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT,
                              "empty spec; expected KIND:PARAMS, e.g. stencil3d:7:100");
    const kind_description *kind = find_kind(spec, name_length);
    if (!kind)
        return generator_fail(g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT,
                              "unknown kind \"%.*s\" (known: stencil2d, stencil3d, fem3d, kron, uniform, circuit, "
                              "banded, lp)",
                              (int)(name_length > 64 ? 64 : name_length), spec);
    kind_usage(kind, usage, sizeof usage);
    int given = 0;
    for (const char *c = spec; *c; c++)
        given += *c == ':';
    if (given != kind->param_count)
        return generator_fail(g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT,
                              "%s takes %d parameter%s (%s), got %d", kind->name, kind->param_count,
                              kind->param_count == 1 ? "" : "s", usage, given);
    const char *text = colon + 1;
    for (int p = 0; p < kind->param_count; p++) {
        const char *end = strchr(text, ':');
        if (!end)
            end = text + strlen(text);
        spmv_status_t status = parse_param(g, kind->param_name[p], text, end, &g->param[p], msg, msglen);
        if (status != SPMV_STATUS_SUCCESS)
            return status;
        text = end + 1;
    }
    *kind_out = kind;
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * Entry point
 * ========================================================================================================= */

spmv_status_t spmvport_generate(const char *spec, uint64_t seed, spmvport_csr *out, char *msg, size_t msglen)
{
    generator g;
    const kind_description *kind = NULL;
    memset(&g, 0, sizeof g);
    g.spec = spec ? spec : "(null)";
    if (!spec || !out)
        return generator_fail(&g, msg, msglen, SPMV_STATUS_INVALID_ARGUMENT, "%s is NULL", spec ? "out" : "spec");
    memset(out, 0, sizeof *out);
    g.seed = seed;
    g.value_key = stream_key(seed, PURPOSE_VALUES);
    g.row_key = stream_key(seed, PURPOSE_ROWS);
    spmv_status_t status = parse_spec(&g, &kind, msg, msglen);
    if (status == SPMV_STATUS_SUCCESS)
        status = kind->setup(&g, msg, msglen);
    if (status == SPMV_STATUS_SUCCESS)
        status = g.build ? g.build(&g, out, msg, msglen) : build_rows(&g, out, msg, msglen);
    generator_release(&g);
    return status;
}
