/*
 * format.c -- format data life cycle, the builder table and the automatic choice.
 */
#include <stdlib.h>
#include <string.h>

#include "format_builders.h"
#include "format_tile.h"
#include "internal.h"

void spmvport_format_data_free(spmvport_format_data *fd)
{
    if (fd == NULL) return;
    for (int a = 0; a < fd->narrays; a++) free(fd->arrays[a].data);
    free(fd->value_map);
    memset(fd, 0, sizeof *fd);
}

spmv_status_t spmvport_format_add_array(spmvport_format_data *fd, const char *name, void *data, size_t bytes,
                                        int is_values)
{
    if (data == NULL || fd->narrays >= SPMVPORT_MAX_ARRAYS) {
        free(data);
        return data == NULL ? SPMV_STATUS_OUT_OF_MEMORY : SPMV_STATUS_INTERNAL_ERROR;
    }
    fd->arrays[fd->narrays++] = (spmvport_array){name, data, bytes, is_values, 0}; /* uploaded unless marked host_only */
    return SPMV_STATUS_SUCCESS;
}

/* Builders by format; NULL: not in this version of the library. */
static spmvport_format_builder builder_of(spmv_format_t f)
{
    switch (f) {
    case SPMV_FORMAT_CSR_SCALAR:
    case SPMV_FORMAT_CSR_VECTOR:
    case SPMV_FORMAT_CSR_LB:
    case SPMV_FORMAT_VENDOR: return spmvport_build_csr;
    case SPMV_FORMAT_TILE: return spmvport_build_tile;
    case SPMV_FORMAT_HBP: return spmvport_build_hbp;
    case SPMV_FORMAT_AMF_CSR: return spmvport_build_amf_csr;
    case SPMV_FORMAT_TEB: return spmvport_build_teb;
    case SPMV_FORMAT_EHYB: return spmvport_build_ehyb;
    default: return NULL;
    }
}

spmv_status_t spmvport_check_generic_options(const spmv_plan_options_t *opt, int warp_size, char *msg, size_t msglen)
{
    const int l = opt->lanes_per_row;
    if (l < 0 || l > warp_size || (l & (l - 1)) != 0) {
        spmvport_msg(msg, msglen, "options.lanes_per_row = %d; expected 0 or a power of two <= the warp size %d", l,
                     warp_size);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->nnz_per_warp < 0 || opt->nnz_per_warp % warp_size != 0) {
        spmvport_msg(msg, msglen, "options.nnz_per_warp = %d; expected 0 or a positive multiple of the warp size %d",
                     opt->nnz_per_warp, warp_size);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmvport_format_build(spmvport_format_data *fd, const spmv_matrix_t *A, spmv_format_t format,
                                    int warp_size, const spmv_device_info_t *dev, const spmv_plan_options_t *opt,
                                    char *msg, size_t msglen)
{
    return spmvport_format_build_chosen(fd, A, format, warp_size, dev, opt, NULL, msg, msglen);
}

void spmvport_hot_choice_free(spmvport_hot_choice *hot)
{
    free(hot->hot);
    free(hot->index);
    hot->hot = hot->index = NULL;
    hot->nhot = 0;
}

spmv_status_t spmvport_format_build_chosen(spmvport_format_data *fd, const spmv_matrix_t *A, spmv_format_t format,
                                           int warp_size, const spmv_device_info_t *dev,
                                           const spmv_plan_options_t *opt, spmvport_hot_choice *hot, char *msg,
                                           size_t msglen)
{
    memset(fd, 0, sizeof *fd);
    fd->row_perm_array = fd->col_perm_array = -1;
    const spmv_status_t bad = spmvport_check_generic_options(opt, warp_size, msg, msglen);
    if (bad != SPMV_STATUS_SUCCESS) return bad;
    spmvport_format_builder build = builder_of(format);
    if (build == NULL) {
        spmvport_msg(msg, msglen, "format %s is not implemented in this version of libspmvport",
                     spmv_format_name(format));
        return SPMV_STATUS_NOT_SUPPORTED;
    }
    fd->format = format;
    fd->precision = A->precision;
    fd->m = A->m;
    fd->n = A->n;
    fd->nnz = A->nnz;
    fd->warp_size = warp_size;
    fd->deterministic = 1;
    fd->auto_hot = hot;
    spmv_status_t st = build(fd, A, dev, opt, msg, msglen);
    fd->auto_hot = NULL;
    if (st != SPMV_STATUS_SUCCESS) spmvport_format_data_free(fd);
    return st;
}

/* The automatic choice, from the row-length profile and the measurements in docs/performance.md (H200; the
 * beyond-L2 rule for regular rows also on the H100, session 20):
 *   GPU, regular rows, average <= 12, beyond L2, x read         amf_csr     (one-step warps at one window a lane:
 *     scattered (spmvport_x_sector_use >= SPMVPORT_X_SCATTERED)             lp, uniform:2000000:4, uniform:1000000:3
 *                                                                             1.02-1.12x csr_scalar f64; session 21)
 *   GPU, regular rows of 2.5-3 entries on average (tridiagonal)  csr_vector  (H100 runs G2, G3, H5, sessions 62-63:
 *     read near the diagonal, whose arrays with x and y are from              tridiagonal of 2.4-4.8M entries in f64,
 *     0.8 to 1.75 (f64: 1.9) times the L2 (spmvport_short_rows_mapping's     3.9-6.6M in f32: 1.04-1.34x the choice
 *     window; before tile and csr_scalar)                                     below; at 0.75-0.76 L2s and 1.79-1.92
 *                                                                             0.92-1.01x; H200 G1 agrees at 3.3M)
 *   GPU, f64 regular rows, average > 6 beyond L2; within it     tile        (its band plan, every tile band since
 *     from AUTO_L2_F64_STENCIL_NNZ entries (from AUTO_L2_F64_
 *     LONG_STENCIL_NNZ for more than 20 a row); entries on a few
 *     diagonals in tight runs, at least 90% full                              session 32: 9- and 27-point stencils
 *     (stencil_diagonals: every tile a band tile without many                 1.00-1.27x the choice below in f64,
 *     holes)                                                                  sessions 32-33; f32 not taken: 0.95-
 *                                                                             1.21x then, 0.88-1.14x in session 55;
 *                                                                             FEM blocks of 2, 83% full: amf_csr,
 *                                                                             session 44, 0.95-1.33x tile; 7-point
 *                                                                             stencils since session 55, runs C3-C4:
 *                                                                             stencil3d:7:90-200 f64 0.99-1.30x
 *                                                                             csr_scalar; 5-point 0.84-0.86x; within
 *                                                                             L2 from 3M entries since session 57,
 *                                                                             run D1: 1.02-1.38x the choice below on
 *                                                                             10 grids of 3.0-5.1M entries, 7-, 9- and
 *                                                                             27-point; under 3M 0.88-0.98x on two of
 *                                                                             six, the 27-point ones 1.07-1.30x;
 *                                                                             session 60, H100: 27-point from 2M and
 *                                                                             5-point within L2 from 3M, 1.10-1.45x
 *                                                                             and 1.21-1.32x the former choice)
 *   GPU, f64 regular rows, average <= 12, within L2, x read      amf_csr     (uniform and lp of 3-4.5M entries
 *     scattered, at least 3M entries (0.9M, more than 4 a row)               1.01-1.15x csr_scalar; f32 0.97-1.06x:
 *                                                                             kept; session 32, runs VD, VF; more
 *                                                                             than 4 a row, session 64, H100 runs
 *                                                                             I1, I4: lp:200000-600000 1.05-1.12x,
 *                                                                             0.5M 0.93x; 3 a row 0.97-1.02x; run
 *                                                                             I5, 10 others of 5-12 a row, 1.2-2.4M:
 *                                                                             1.06-1.22x)
 *   GPU, regular rows, average 4-12, bimodal (lengths' standard  amf_csr     (H100 runs I1-I2, session 64: 5
 *     deviation over mean above AUTO_BIMODAL_SPREAD), at least                generated shapes, 10-14% of rows of
 *     AUTO_BIMODAL_NNZ entries; f32 beyond L2 only                            16-27 entries among rows of 2-3, from
 *                                                                             2.3M entries: 1.03-1.25x csr_scalar
 *                                                                             f64, 1.05-1.15x f32 beyond L2, 0.84-
 *                                                                             0.97x within; at 0.6-1.2M f64 0.82-
 *                                                                             1.23x; no shared matrix: bayer10's
 *                                                                             spread is 1.05, at 95k entries)
 *   GPU, regular rows of 4-8 entries read locally (5- and 7-    amf_csr     (H100 run M1, session 68: f32 folds
 *     point stencils, banded) whose data is about the L2's size                1.03-1.16x csr_scalar on 18 matrices,
 *     (spmvport_short_rows_mapping: from 0.86 L2s in f32, 0.8 in               f64 csr_vector's lanes 1.01-1.07x on 7;
 *     f64, while x and y take at most 0.4 L2s)                                 the edges in matrix.c)
 *   GPU, regular rows of more than 4 entries on average, within   csr_vector  (H100 runs H4, H6, session 63: 12
 *     L2, fewer than SPMVPORT_SMALL_ROWS_PER_SM rows a                        shared matrices of 2.5-17k rows
 *     multiprocessor (csr_scalar's threads fill less than a block             averaging 4.9-8.8, 1.09x and 1.03x
 *     on each)                                                                csr_scalar in geometric mean, worst
 *                                                                             0.96x; at 4-7 us, within the launch
 *                                                                             floor's noise per matrix; 4 or fewer a
 *                                                                             row: 0.89-1.02x, kept)
 *   other regular rows (longest <= 2 x average + 16), avg <= 12  csr_scalar  (5-point stencil: 1.42-1.49x cuSPARSE f64)
 *   GPU, the matrix's arrays fit in the L2 cache, regular rows   csr_vector  (one launch, where csr_lb needs two;
 *                                                                             bcsstk33 1.30x)
 *     but f32 with at least 1M entries                           amf_csr     (fem3d:3:20-28, :4:20-24, :5:20,
 *                                                                             :6:20, stencil3d:27:50-64, banded,
 *                                                                             uniform: 1.18-1.44x where csr_vector
 *                                                                             gave 0.73-1.31x; f64 kept: csr_vector
 *                                                                             ahead on 7 of 8; session 31, run UJ)
 *   GPU, the matrix's arrays fit in the L2 cache, skewed rows    amf_csr     (folds balance the lanes: Groebner,
 *     (but f64 power-law graphs of AUTO_L2_F64_GRAPH_ROWS rows              mbeacxc, ca-GrQc 1.35-1.64x csr_vector
 *     or more: the vendor library, below)                                     f64, session 7 run U; circuit_1 12x)
 *   GPU, regular rows of > 12 entries beyond L2                  amf_csr     (many waves of one-step warps: FEM
 *                                                                             1.24-1.29x, 27-point stencil 1.19-1.25x,
 *                                                                             where csr_lb gave 1.02-1.19x and
 *                                                                             csr_vector 0.78-0.91x; session 20)
 *   GPU, skewed rows averaging more than 16, or whose reads of   csr_lb      (its hot columns, options.lb_hot, on
 *     x are scattered (power-law graphs), where csr_lb takes hot              the Kronecker graphs of 4-31M entries:
 *     columns, within L2 or beyond: f32; f64 from                             f32 1.01-1.56x cuSPARSE; f64 1.02-1.18x
 *     AUTO_HOT_F64_MIN_AVG entries a row and AUTO_HOT_F64_MIN_NNZ             from 16 a row and 7.6M entries,
 *     entries                                                                 0.86-1.03x below; H100, session 46,
 *                                                                             run T3)
 *   GPU, the other skewed rows averaging more than 16, or whose  vendor      (Kronecker: csr_lb 0.95x; kron:20:4
 *     reads of x are scattered, beyond L2; in f64 within L2 too               and :8 0.90-0.97x, amf_csr 0.74-0.97x;
 *     from AUTO_L2_F64_GRAPH_ROWS rows                                        within L2, f64, kron of 2^17-2^20
 *                                                                             rows: amf_csr 0.58-0.98x, hbp
 *                                                                             0.81-0.92x, csr_lb 0.77-0.98x;
 *                                                                             session 50, run W7, H200)
 *   GPU, other skewed rows (circuits: x read near the diagonal)  amf_csr     (circuit:1000000-5000000 1.07-1.14x,
 *                                                                             csr_lb 0.82-1.17x; session 26, H200)
 *   CPU, longer rows                                             csr_vector
 *   CPU, skewed rows                                             csr_lb      (row-split starves on hub rows) */
#define AUTO_L2_F32_FOLD_NNZ 1000000      /* f32 regular rows within L2 from this many entries: amf_csr */
#define AUTO_L2_F64_SCATTERED_NNZ 3000000 /* f64 short regular rows within L2, x read scattered: amf_csr from here */
#define AUTO_L2_F64_SCATTERED_LONG_NNZ 900000 /* and from here for more than SPMVPORT_ONE_BATCH_AVG a row (lp: 5) */
#define AUTO_L2_F64_STENCIL_NNZ 3000000   /* f64 stencils within L2: tile from here (stencil3d:7:74, 2.8M: 0.95-0.99x) */
#define AUTO_L2_F64_LONG_STENCIL_NNZ 2000000 /* and from here for rows of more than AUTO_LONG_STENCIL_AVG entries */
#define AUTO_LONG_STENCIL_AVG 20.0        /* (27-point stencils of 2.2-2.9M: 1.10-1.45x csr_vector; session 60) */
#define AUTO_STENCIL_MIN_AVG 6.0          /* band plans beyond L2 from 7 entries a row (5-point stencils: 0.84-0.86x) */
#define AUTO_L2_STENCIL_MIN_AVG 2.5       /* within L2 from 3 (tridiagonal: csr_vector first, AUTO_NEAR_L2_*) */
/* SPMVPORT_SMALL_ROWS_PER_SM (internal.h): regular rows of more than one batch, fewer than this many a
 * multiprocessor: csr_vector (csr_scalar's threads would not fill a block on each). SPMVPORT_ONE_BATCH_AVG:
 * csr_scalar's batch; the small-rows, scattered and bimodal rules start above it (sessions 63-64). */
#define AUTO_NEAR_L2_MAX_AVG 3.0          /* rows of at most 3 entries (tridiagonal; 1 or 2 a row never measured):
                                           * csr_vector in spmvport_short_rows_mapping's window, 0.8-1.75 L2s of
                                           * arrays, x and y in f32, to 1.9 in f64 (edges measured: 0.76-0.85,
                                           * 1.71-1.79 f32, 1.82-1.92 f64) */
#define AUTO_STENCIL_DIAGONALS 64         /* at most this many distinct diagonals (27-point stencil: 27) */
#define AUTO_STENCIL_MIN_FILL 0.9         /* and this full (stencils 0.93-1.0, FEM blocks of 2 unknowns 0.77-0.84) */
#define AUTO_HOT_F64_MIN_AVG 12.0         /* f64 power-law graphs take csr_lb's hot columns from this many */
#define AUTO_HOT_F64_MIN_NNZ 6000000      /* entries a row and this many entries (kron:18:8 f64, 4.2M: 0.89x) */
#define AUTO_BIMODAL_SPREAD 1.0           /* regular rows whose lengths spread more than this (rows_spread), */
#define AUTO_BIMODAL_NNZ 2000000          /* more than one batch a row (rows of 1-2 and 12: 0.94-0.97x), from this
                                           * many entries (f32 beyond L2 only): amf_csr */
#define AUTO_L2_F64_GRAPH_ROWS 100000     /* f64 power-law graphs within L2 from this many rows: the vendor library
                                           * (H200, session 50, run W7: amf_csr 0.58-0.98x cuSPARSE on kron of 2^17
                                           * to 2^20 rows, 0.97-1.13x on 2^15-2^16) */

/* Put d into the ascending set (n of AUTO_STENCIL_DIAGONALS): its position, or -1 when the set is full without it. */
static int offset_insert(int64_t *set, int *n, int64_t d)
{
    int lo = 0, hi = *n; /* first offset >= d */
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (set[mid] < d) lo = mid + 1;
        else hi = mid;
    }
    if (lo < *n && set[lo] == d) return lo;
    if (*n == AUTO_STENCIL_DIAGONALS) return -1;
    memmove(set + lo + 1, set + lo, (size_t)(*n - lo) * sizeof *set);
    set[lo] = d, (*n)++;
    return lo;
}

/* Whether every entry lies on one of at most AUTO_STENCIL_DIAGONALS diagonals (offset c - r) and the offsets closer
 * than two tile widths to each other span at most SPMVPORT_TILE_BAND_MAXND adjacent diagonals: then every 16x16 tile
 * holds a run of at most that many diagonals, which tile stores as a band tile (values only, no index bytes) and
 * runs as a band plan: a structured grid's stencil. Each thread collects its rows' offsets (a short sorted list),
 * the lists are merged, and the scan stops as soon as one list overflows. The diagonals must also be at least
 * AUTO_STENCIL_MIN_FILL full (the stencils 0.93-1.0 from 20 points a side): FEM blocks of 2 unknowns lie on 63
 * diagonals in runs of 7, 77-84% full. In f64 past L2 amf_csr was 1.18-1.33x faster than tile on them where tile
 * keeps CSR tiles (fem3d:2:38, :2:44, :2:50: band tiles with holes cost 8 bytes a hole), 0.95-1.04x where the grid
 * is a multiple of 8 points and tile's plan is all band (fem3d:2:40-64); the stencils stay with tile (amf_csr
 * 0.85-0.90x). H200, session 44, run E4. */
static int stencil_diagonals(const spmv_matrix_t *A)
{
    int64_t all[AUTO_STENCIL_DIAGONALS];
    int nall = 0, over = 0;
#ifdef _OPENMP
#pragma omp parallel
#endif
    {
        int64_t mine[AUTO_STENCIL_DIAGONALS];
        int n = 0;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int32_t i = 0; i < A->m; i++) {
            int stop;
#ifdef _OPENMP
#pragma omp atomic read
#endif
            stop = over;
            if (stop) continue; /* a thread overflowed: the answer is known */
            for (int32_t k = A->row_ptr[i], next = 0; k < A->row_ptr[i + 1]; k++) {
                const int64_t d = (int64_t)A->col_idx[k] - i;
                if (next < n && mine[next] == d) { /* a row's offsets ascend, and rows repeat their pattern */
                    next++;
                    continue;
                }
                const int at = offset_insert(mine, &n, d);
                if (at < 0) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
                    over = 1;
                    break; /* the next row reads the flag */
                }
                next = at + 1;
            }
        }
#ifdef _OPENMP
#pragma omp critical(spmvport_stencil_diagonals)
#endif
        {
            int stop;
#ifdef _OPENMP
#pragma omp atomic read
#endif
            stop = over;
            for (int j = 0; j < n && !stop; j++) stop = offset_insert(all, &nall, mine[j]) < 0;
            if (stop) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
                over = 1;
            }
        }
    }
    if (over || nall == 0) return 0;
    double slots = 0; /* the diagonals' entries: rows r with 0 <= r + d < n */
    for (int j = 0, first = 0; j < nall; j++) { /* runs: offsets closer than two tiles belong together */
        if (j > 0 && all[j] - all[j - 1] >= 2 * SPMVPORT_TILE_DIM) first = j;
        if (all[j] - all[first] + 1 > SPMVPORT_TILE_BAND_MAXND) return 0;
        const int64_t lo = all[j] < 0 ? -all[j] : 0, hi = (int64_t)A->n - all[j] < A->m ? A->n - all[j] : A->m;
        slots += (double)(hi > lo ? hi - lo : 0);
    }
    return (double)A->nnz >= AUTO_STENCIL_MIN_FILL * slots;
}

/* The choice and the name of the rule that made it (plan stats: auto_rule) */
static spmv_format_t chosen(spmv_format_t format, const char *rule, const char **why)
{
    if (why != NULL) *why = rule;
    return format;
}

spmv_format_t spmvport_format_choose(const spmv_matrix_t *A, const spmv_device_info_t *dev)
{
    return spmvport_format_choose_why(A, dev, NULL);
}

spmv_format_t spmvport_format_choose_why(const spmv_matrix_t *A, const spmv_device_info_t *dev, const char **why)
{
    return spmvport_format_choose_keep(A, dev, why, NULL);
}

/* csr_lb's automatic hot columns for the graph rule: their count, and with keep the columns themselves */
static int64_t graph_hot_columns(const spmv_matrix_t *A, spmvport_hot_choice *keep)
{
    if (keep == NULL) return spmvport_lb_hot_columns(A, 0, NULL, NULL, NULL);
    return keep->nhot = spmvport_lb_hot_columns(A, 0, NULL, &keep->hot, &keep->index);
}

spmv_format_t spmvport_format_choose_keep(const spmv_matrix_t *A, const spmv_device_info_t *dev, const char **why,
                                          spmvport_hot_choice *keep)
{
    if (keep != NULL) memset(keep, 0, sizeof *keep);
    if (A->m == 0 || A->nnz == 0) return chosen(SPMV_FORMAT_CSR_SCALAR, "empty", why);
    const double avg = (double)A->nnz / A->m;
    const int regular = spmvport_rows_regular(A), gpu = dev->backend != SPMV_BACKEND_CPU;
    const int in_l2 = dev->l2_bytes > 0 && spmvport_csr_bytes(A) <= (double)dev->l2_bytes;
    const double l2_stencil_nnz = avg > AUTO_LONG_STENCIL_AVG ? AUTO_L2_F64_LONG_STENCIL_NNZ : AUTO_L2_F64_STENCIL_NNZ;
    const int stencil_size =
        in_l2 ? A->nnz >= l2_stencil_nnz && avg > AUTO_L2_STENCIL_MIN_AVG : avg > AUTO_STENCIL_MIN_AVG;
    /* tridiagonal rows whose data is about the L2's size: csr_vector was 1.04-1.34x csr_scalar and tile on the H100
     * and H200; below the window csr_scalar wins or ties (csr_vector 0.79-1.01x), above it 0.81-1.00x. Why is not
     * known. */
    if (gpu && regular && avg > AUTO_L2_STENCIL_MIN_AVG && avg <= AUTO_NEAR_L2_MAX_AVG &&
        spmvport_short_rows_mapping(A, dev) == SPMVPORT_SHORT_VECTOR &&
        spmvport_x_sector_use(A, INT32_MAX) < SPMVPORT_X_SCATTERED)
        return chosen(SPMV_FORMAT_CSR_VECTOR, "tridiagonal_near_l2", why);
    if (gpu && A->precision == SPMV_F64 && regular && stencil_size && stencil_diagonals(A))
        return chosen(SPMV_FORMAT_TILE, "stencil_diagonals", why);
    if (regular && avg <= SPMVPORT_SHORT_ROWS_AVG) {
        const double scattered_nnz = avg > SPMVPORT_ONE_BATCH_AVG ? AUTO_L2_F64_SCATTERED_LONG_NNZ
                                                              : AUTO_L2_F64_SCATTERED_NNZ;
        const int big_f64 = A->precision == SPMV_F64 && A->nnz >= scattered_nnz;
        const int scattered = gpu && (!in_l2 || big_f64) &&
                              spmvport_x_sector_use(A, INT32_MAX) >= SPMVPORT_X_SCATTERED;
        /* bimodal rows (most short, a few many times longer): csr_scalar's warps wait for their longest row,
         * amf_csr's folds balance them */
        const int bimodal = gpu && A->nnz >= AUTO_BIMODAL_NNZ && avg > SPMVPORT_ONE_BATCH_AVG &&
                            (A->precision == SPMV_F64 || !in_l2) && spmvport_rows_spread(A) > AUTO_BIMODAL_SPREAD;
        if (scattered) return chosen(SPMV_FORMAT_AMF_CSR, "scattered_short_rows", why);
        if (bimodal) return chosen(SPMV_FORMAT_AMF_CSR, "bimodal_short_rows", why);
        /* rows of more than 3 entries read locally whose data is about the L2's size: amf_csr's CSR-vector mapping
         * (f64) or its folds (f32) beat a thread a row there (spmvport_short_rows_mapping); tridiagonal rows keep
         * the window above */
        if (gpu && avg > AUTO_NEAR_L2_MAX_AVG && spmvport_rows_spread(A) <= AUTO_BIMODAL_SPREAD &&
            spmvport_short_rows_mapping(A, dev) > SPMVPORT_SHORT_SCALAR &&
            spmvport_x_sector_use(A, INT32_MAX) < SPMVPORT_X_SCATTERED)
            return chosen(SPMV_FORMAT_AMF_CSR, "short_rows_near_l2", why);
        /* too few rows to give every multiprocessor a block of csr_scalar's threads, each of which waits for two
         * batches of 4 entries in turn: csr_vector's lanes take one batch each */
        const int few_rows = gpu && in_l2 && dev->multiprocessors > 0 &&
                             (double)A->m < (double)dev->multiprocessors * SPMVPORT_SMALL_ROWS_PER_SM;
        if (few_rows && avg > SPMVPORT_ONE_BATCH_AVG) return chosen(SPMV_FORMAT_CSR_VECTOR, "few_short_rows", why);
        return chosen(SPMV_FORMAT_CSR_SCALAR, "short_rows", why);
    }
    if (gpu) {
        /* power-law graphs (skewed rows, more than 16 a row or x read scattered), tested once and only where a rule
         * below asks: csr_lb's hot columns come before the L2 rule, which would take amf_csr for f32 graphs of
         * 1-6M entries (kron:18:8, kron:20:2 f32: amf_csr 0.78-0.97x cuSPARSE, csr_lb 1.01-1.12x) */
        const int hot_pays = A->precision == SPMV_F32 || (avg >= AUTO_HOT_F64_MIN_AVG && A->nnz >= AUTO_HOT_F64_MIN_NNZ);
        const int tall_f64_l2 = in_l2 && A->precision == SPMV_F64 && A->m >= AUTO_L2_F64_GRAPH_ROWS;
        const int graph = !regular && (hot_pays || !in_l2 || tall_f64_l2) &&
                          (avg > 16 || spmvport_x_sector_use(A, INT32_MAX) >= SPMVPORT_X_SCATTERED);
        if (graph && hot_pays && graph_hot_columns(A, keep) > 0)
            return chosen(SPMV_FORMAT_CSR_LB, "graph_hot_columns", why);
        if (graph && tall_f64_l2) return chosen(SPMV_FORMAT_VENDOR, "f64_graph_in_l2", why);
        if (in_l2 && !regular) return chosen(SPMV_FORMAT_AMF_CSR, "skewed_rows_in_l2", why);
        if (in_l2 && A->precision == SPMV_F32 && A->nnz >= AUTO_L2_F32_FOLD_NNZ)
            return chosen(SPMV_FORMAT_AMF_CSR, "f32_long_rows_in_l2", why);
        if (in_l2) return chosen(SPMV_FORMAT_CSR_VECTOR, "long_rows_in_l2", why);
        if (regular) return chosen(SPMV_FORMAT_AMF_CSR, "long_rows", why);
        if (graph) return chosen(SPMV_FORMAT_VENDOR, "graph", why);
        return chosen(SPMV_FORMAT_AMF_CSR, "skewed_rows", why);
    }
    if (regular) return chosen(SPMV_FORMAT_CSR_VECTOR, "cpu_long_rows", why);
    return chosen(SPMV_FORMAT_CSR_LB, "cpu_skewed_rows", why);
}
