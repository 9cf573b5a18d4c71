/*
 * test_format_amf_csr.c -- format amf_csr (adaptive multi-row folding of CSR):
 *   (a) the CPU executor against the oracle on the edge-case corpus and every shared matrix, at warp size 32 and
 *       64, f32 and f64 (support_check_format: alpha/beta cases, repeated executes, y poisoned when beta = 0);
 *   (b) the option variants: fixed fold counts 1..4 (the paper's baseline), out-of-range options rejected, the
 *       unpacked local-row fallback (forced through the builder's test hook, and chosen for n > 2^30);
 *   (c) layout invariants through spmvport_format_build: units partition the rows, folds respect the 4-row cap
 *       and T_s, sub-blocks partition the folds and respect T_l, every non-zero stored exactly once (the CSR
 *       rebuilt from the arrays), value_map a permutation, long rows cut into pieces, bytes accounted;
 *   (d) spmv_plan_update_values against a plan made from a matrix with the new values;
 *   (e) the plan info statistics.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ref.h"
#include "format_amf_csr.h"
#include "format_builders.h"
#include "internal.h"
#include "support.h"

/* ==================================================================================================== */
/* Helpers                                                                                              */
/* ==================================================================================================== */

static spmv_plan_options_t options(int warp_size, int fixed)
{
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.warp_size = warp_size;
    opt.amf_fixed_fold = fixed;
    return opt;
}

/* Build the format data directly (as spmvport_format_build does), with the unpacked test hook. */
static void build_direct(spmvport_format_data *fd, const spmv_matrix_t *A, int w, int fixed, int force_unpacked)
{
    spmv_plan_options_t opt = options(w, fixed);
    char msg[SPMVPORT_MSG_LEN] = "";
    memset(fd, 0, sizeof *fd);
    fd->row_perm_array = fd->col_perm_array = -1;
    fd->format = SPMV_FORMAT_AMF_CSR;
    fd->precision = A->precision;
    fd->m = A->m;
    fd->n = A->n;
    fd->nnz = A->nnz;
    fd->warp_size = w;
    fd->deterministic = 1;
    spmv_status_t st = spmvport_build_amf_csr_ex(fd, A, NULL, &opt, force_unpacked, msg, sizeof msg);
    if (st != SPMV_STATUS_SUCCESS) spmvport_format_data_free(fd);
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "build: %s", msg);
}

/* Build through spmvport_format_build with these options; the build must succeed. */
static void build_with(spmvport_format_data *fd, const spmv_matrix_t *A, int w, const spmv_plan_options_t *opt)
{
    char msg[SPMVPORT_MSG_LEN] = "";
    spmv_status_t st = spmvport_format_build(fd, A, SPMV_FORMAT_AMF_CSR, w, NULL, opt, msg, sizeof msg);
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "build: %s", msg);
}

static void build_normal(spmvport_format_data *fd, const spmv_matrix_t *A, int w, int fixed)
{
    spmv_plan_options_t opt = options(w, fixed);
    build_with(fd, A, w, &opt);
}

static double value_at(const spmv_matrix_t *A, const void *v, int64_t k)
{
    return A->precision == SPMV_F32 ? (double)((const float *)v)[k] : ((const double *)v)[k];
}

/* Run the executor on fd directly for the three alpha/beta cases and check each result with the oracle. */
static void check_executor_direct(const spmvport_format_data *fd, const spmv_matrix_t *A, const char *name)
{
    char what[256];
    snprintf(what, sizeof what, "%s (unpacked)", name);
    support_check_executor(fd, spmvport_cpu_amf_csr, A, what);
}

/* ==================================================================================================== */
/* (c) Invariants of one built layout                                                                   */
/* ==================================================================================================== */

#define I32(fd, slot) ((const int32_t *)(fd)->arrays[(slot)].data)

static void check_units(const spmvport_format_data *fd, const spmv_matrix_t *A, const char *name)
{
    const int32_t *fold_row = I32(fd, AMF_A_FOLD_ROW), *fold_ptr = I32(fd, AMF_A_FOLD_PTR);
    const int64_t units = fd->params[AMF_P_UNITS], fixed = fd->params[AMF_P_FIXED], t_s = fd->params[AMF_P_T_S];
    cr_assert_eq(fd->arrays[AMF_A_FOLD_ROW].bytes, ((size_t)units + 1) * sizeof(int32_t), "%s", name);
    cr_assert_eq(fd->arrays[AMF_A_FOLD_PTR].bytes, ((size_t)units + 1) * sizeof(int32_t), "%s", name);
    cr_assert_eq(fold_row[0], 0, "%s", name);
    cr_assert_eq(fold_row[units], A->m, "%s", name);
    int64_t longs = 0, fold_max = 0;
    for (int64_t u = 0; u < units; u++) {
        const int32_t r0 = fold_row[u], rows = fold_row[u + 1] - r0;
        cr_assert(rows >= 1 && rows <= (fixed ? fixed : AMF_MAX_FOLD), "%s: unit %lld has %d rows", name,
                  (long long)u, rows);
        cr_assert_eq(fold_ptr[u], A->row_ptr[r0], "%s: unit %lld", name, (long long)u);
        const int32_t len = fold_ptr[u + 1] - fold_ptr[u];
        const int is_long = rows == 1 && len >= AMF_LONG_MIN;
        for (int32_t j = 0; j < rows; j++) /* long rows are never folded */
            cr_assert(is_long || A->row_ptr[r0 + j + 1] - A->row_ptr[r0 + j] < AMF_LONG_MIN, "%s: row %d", name,
                      r0 + j);
        if (!is_long && !fixed && rows > 1)
            cr_assert(len <= t_s, "%s: fold %lld of %d entries over T_s = %lld", name, (long long)u, len,
                      (long long)t_s);
        if (!is_long && rows > fold_max) fold_max = rows;
        longs += is_long;
    }
    cr_assert_eq(longs, fd->params[AMF_P_LONG_ROWS], "%s", name);
    cr_assert_eq(fold_max, fd->params[AMF_P_FOLD_MAX], "%s", name);
    /* regular folds: only on one-step plans without long rows, and the bounds they derive are the arrays' */
    if (fd->params[AMF_P_REGULAR_ROWS] > 0) {
        cr_assert(fd->params[AMF_P_ONE_STEP] != 0 && longs == 0, "%s: regular folds on this plan", name);
        for (int64_t u = 0; u < units; u++) {
            int64_t r0, rows, fb, fe;
            amf_fold_bounds(fd->params, fold_row, fold_ptr, A->m, A->nnz, u, &r0, &rows, &fb, &fe);
            cr_assert(r0 == fold_row[u] && rows == fold_row[u + 1] - r0 && fb == fold_ptr[u] && fe == fold_ptr[u + 1],
                      "%s: regular fold %lld is not the arrays' (rows %lld + %lld, entries %lld .. %lld)", name,
                      (long long)u, (long long)r0, (long long)rows, (long long)fb, (long long)fe);
        }
    }
}

static void check_sub_blocks(const spmvport_format_data *fd, const char *name)
{
    const int32_t *fold_row = I32(fd, AMF_A_FOLD_ROW), *fold_ptr = I32(fd, AMF_A_FOLD_PTR);
    const int32_t *sub = I32(fd, AMF_A_SUB_UNIT);
    const uint8_t *lanes = fd->arrays[AMF_A_SUB_LANES].data;
    const int64_t subs = fd->params[AMF_P_SUB_BLOCKS], units = fd->params[AMF_P_UNITS];
    const int64_t t_l = fd->params[AMF_P_T_L];
    /* uniform sub-blocks of the one-step kernel by windows may span long units (left to their pieces) */
    const int long_inside = fd->params[AMF_P_UNIFORM] > 0 && fd->params[AMF_P_ONE_STEP] == 1;
    cr_assert_eq(fd->arrays[AMF_A_SUB_UNIT].bytes, 2 * (size_t)subs * sizeof(int32_t), "%s", name);
    cr_assert_eq(fd->arrays[AMF_A_SUB_LANES].bytes, (size_t)subs, "%s", name);
    int64_t u = 0;
    for (int64_t s = 0; s < subs; s++) {
        /* the units skipped before this sub-block are exactly long rows */
        for (; u < sub[2 * s]; u++)
            cr_assert(fold_row[u + 1] - fold_row[u] == 1 && fold_ptr[u + 1] - fold_ptr[u] >= AMF_LONG_MIN,
                      "%s: short unit %lld in no sub-block", name, (long long)u);
        cr_assert(sub[2 * s + 1] > sub[2 * s], "%s: empty sub-block %lld", name, (long long)s);
        int64_t nz = fold_ptr[sub[2 * s + 1]] - fold_ptr[sub[2 * s]];
        cr_assert(nz <= t_l || sub[2 * s + 1] - sub[2 * s] == 1, "%s: sub-block %lld of %lld entries over T_l %lld",
                  name, (long long)s, (long long)nz, (long long)t_l);
        for (; u < sub[2 * s + 1]; u++)
            cr_assert(long_inside || !(fold_row[u + 1] - fold_row[u] == 1 && fold_ptr[u + 1] - fold_ptr[u] >= AMF_LONG_MIN),
                      "%s: long unit %lld inside sub-block %lld", name, (long long)u, (long long)s);
        cr_assert(lanes[s] >= 1 && (1 << lanes[s]) <= fd->warp_size, "%s: sub-block %lld lanes 2^%d", name,
                  (long long)s, lanes[s]);
    }
    for (; u < units; u++)
        cr_assert(fold_row[u + 1] - fold_row[u] == 1 && fold_ptr[u + 1] - fold_ptr[u] >= AMF_LONG_MIN,
                  "%s: trailing short unit %lld in no sub-block", name, (long long)u);
    /* uniform sub-blocks: the arrays hold exactly the bounds and lanes the kernel derives from s */
    const int64_t k = fd->params[AMF_P_UNIFORM], lg = fd->params[AMF_P_UNIFORM_LANES];
    cr_assert(k >= 0, "%s", name);
    if (k == 0) return;
    cr_assert(fd->params[AMF_P_LONG_ROWS] == 0 || fd->params[AMF_P_ONE_STEP] == 1,
              "%s: uniform sub-blocks with long rows off the one-step kernel by windows", name);
    cr_assert(lg >= 1 && (1 << lg) <= fd->warp_size, "%s: uniform lanes 2^%lld", name, (long long)lg);
    cr_assert_eq(k % (fd->warp_size >> lg), 0, "%s: %lld units per sub-block, not whole steps", name, (long long)k);
    cr_assert_eq(subs, (units + k - 1) / k, "%s", name);
    for (int64_t s = 0; s < subs; s++) {
        cr_assert_eq(sub[2 * s], s * k, "%s: uniform sub-block %lld", name, (long long)s);
        cr_assert_eq(sub[2 * s + 1], s * k + k < units ? s * k + k : units, "%s: uniform sub-block %lld", name,
                     (long long)s);
        cr_assert_eq(lanes[s], lg, "%s: uniform sub-block %lld", name, (long long)s);
    }
}

static void check_long_rows(const spmvport_format_data *fd, const char *name)
{
    const int32_t *fold_ptr = I32(fd, AMF_A_FOLD_PTR), *long_unit = I32(fd, AMF_A_LONG_UNIT);
    const int32_t *long_piece = I32(fd, AMF_A_LONG_PIECE), *owner = I32(fd, AMF_A_PIECE_OWNER);
    const int64_t nlong = fd->params[AMF_P_LONG_ROWS], pieces = fd->params[AMF_P_PIECES];
    const int64_t piece = fd->params[AMF_P_PIECE];
    cr_assert_eq(long_piece[0], 0, "%s", name);
    cr_assert_eq(long_piece[nlong], pieces, "%s", name);
    int64_t multi = 0;
    for (int64_t i = 0; i < nlong; i++) {
        const int32_t u = long_unit[i], len = fold_ptr[u + 1] - fold_ptr[u];
        cr_assert(len >= AMF_LONG_MIN, "%s", name);
        cr_assert(i == 0 || long_unit[i - 1] < u, "%s", name);
        cr_assert_eq(long_piece[i + 1] - long_piece[i], (len + piece - 1) / piece, "%s: long row %lld", name,
                     (long long)i);
        multi += long_piece[i + 1] - long_piece[i] > 1;
        for (int32_t q = long_piece[i]; q < long_piece[i + 1]; q++) cr_assert_eq(owner[q], i, "%s", name);
    }
    cr_assert_eq(multi, fd->params[AMF_P_MULTI], "%s", name);
    const int64_t wpb = fd->params[AMF_P_BLOCK] / fd->warp_size;
    cr_assert_eq(fd->params[AMF_P_GRID], pieces + (fd->params[AMF_P_SUB_BLOCKS] + wpb - 1) / wpb, "%s", name);
    cr_assert_eq(fd->arrays[AMF_A_LONG_PART].bytes, (size_t)pieces * spmvport_value_size(fd->precision), "%s", name);
    /* the GPU kernels' piece counts start at zero (and the kernels leave them so) */
    cr_assert_eq(fd->arrays[AMF_A_LONG_COUNT].bytes, (size_t)nlong * sizeof(int32_t), "%s", name);
    for (int64_t i = 0; i < nlong; i++) cr_assert_eq(I32(fd, AMF_A_LONG_COUNT)[i], 0, "%s", name);
}

/* Rebuild the CSR from the merged arrays: every stored entry is a distinct CSR entry of the right row, column
 * and value, entries of a fold are sorted by (column, local row), and value_map is a permutation. */
static void check_entries(const spmvport_format_data *fd, const spmv_matrix_t *A, const char *name)
{
    const int32_t *fold_row = I32(fd, AMF_A_FOLD_ROW), *fold_ptr = I32(fd, AMF_A_FOLD_PTR);
    const uint32_t *cols = fd->arrays[AMF_A_COLS].data;
    const uint8_t *local = fd->arrays[AMF_A_LOCAL_ROW].data;
    const int packed = (int)fd->params[AMF_P_PACKED];
    cr_assert_eq(fd->arrays[AMF_A_LOCAL_ROW].bytes, packed ? 0 : (size_t)A->nnz, "%s", name);
    cr_assert_eq(fd->arrays[AMF_A_COLS].bytes, (size_t)A->nnz * sizeof(uint32_t), "%s", name);
    cr_assert_eq(fd->arrays[AMF_A_VALUES].bytes, (size_t)A->nnz * spmvport_value_size(A->precision), "%s", name);
    cr_assert(fd->arrays[AMF_A_VALUES].is_values, "%s", name);
    for (int a = 0; a < fd->narrays; a++) cr_assert_eq(fd->arrays[a].is_values, a == AMF_A_VALUES, "%s", name);
    cr_assert_eq(fd->value_slots, A->nnz, "%s", name);
    cr_assert(A->nnz == 0 || fd->value_map != NULL, "%s", name);
    char *seen = calloc((size_t)A->nnz + 1, 1);
    cr_assert(seen);
    for (int64_t u = 0; u < fd->params[AMF_P_UNITS]; u++) {
        int64_t prev_key = -1;
        for (int32_t o = fold_ptr[u]; o < fold_ptr[u + 1]; o++) {
            const int32_t col = packed ? (int32_t)(cols[o] >> 2) : (int32_t)cols[o];
            const int lr = packed ? (int)(cols[o] & 3u) : local[o];
            const int32_t row = fold_row[u] + lr, k = fd->value_map[o];
            cr_assert(row < fold_row[u + 1], "%s: entry %d local row %d outside its fold", name, o, lr);
            cr_assert(k >= A->row_ptr[row] && k < A->row_ptr[row + 1], "%s: entry %d maps to %d, not in row %d", name,
                      o, k, row);
            cr_assert(!seen[k], "%s: CSR entry %d stored twice", name, k);
            seen[k] = 1;
            cr_assert_eq(col, A->col_idx[k], "%s: entry %d", name, o);
            cr_assert(value_at(A, fd->arrays[AMF_A_VALUES].data, o) == value_at(A, A->values, k), "%s: entry %d",
                      name, o);
            const int64_t key = (int64_t)col * AMF_MAX_FOLD + lr;
            cr_assert(key > prev_key, "%s: fold %lld not merged by column at entry %d", name, (long long)u, o);
            prev_key = key;
        }
    }
    for (int32_t k = 0; k < A->nnz; k++) cr_assert(seen[k], "%s: CSR entry %d not stored", name, k);
    free(seen);
}

static void check_layout(const spmvport_format_data *fd, const spmv_matrix_t *A, const char *name)
{
    cr_assert_eq(fd->narrays, AMF_A_COUNT, "%s", name);
    cr_assert_eq(fd->deterministic, 1, "%s", name);
    cr_assert_eq(fd->row_perm_array, -1, "%s", name);
    cr_assert_eq(fd->col_perm_array, -1, "%s", name);
    check_units(fd, A, name);
    check_sub_blocks(fd, name);
    check_long_rows(fd, name);
    check_entries(fd, A, name);
}

/* Plan info bytes = the sum of the arrays (the CPU backend uploads exactly fd's arrays). */
static void check_bytes(spmv_context_t *ctx, const spmv_matrix_t *A, int w, int fixed, const char *name)
{
    spmv_plan_options_t opt = options(w, fixed);
    spmv_plan_t *plan;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_AMF_CSR, &opt), SPMV_STATUS_SUCCESS, "%s: %s", name,
                 spmv_last_error(ctx));
    spmv_plan_info_t info;
    spmv_plan_get_info(plan, &info);
    size_t bytes = 0;
    for (int a = 0; a < plan->fd.narrays; a++) bytes += plan->fd.arrays[a].bytes;
    cr_assert_eq(info.device_bytes, bytes, "%s", name);
    cr_assert_eq(info.deterministic, 1, "%s", name);
    cr_assert_eq(info.warp_size, w, "%s", name);
    spmv_plan_destroy(plan);
}

/* ==================================================================================================== */
/* Extra edge cases of this format                                                                      */
/* ==================================================================================================== */

/* Rows around the long-row bound and the piece length: 0, 1023, 1024, 1025, 4095, 4096, 4097, 12289 entries,
 * between short rows, so folds close on both sides of long rows and long rows take 1..4 pieces. */
static spmv_matrix_t *long_row_matrix(spmv_precision_t p)
{
    static const int32_t lens[] = {0, 1023, 1024, 3, 1025, 2, 1, 4095, 4096, 0, 4097, 5, 12289, 7, 1, 1024, 0, 0};
    const int32_t m = (int32_t)(sizeof lens / sizeof lens[0]), n = 13000;
    int32_t *ptr = malloc(((size_t)m + 1) * sizeof *ptr);
    cr_assert(ptr);
    ptr[0] = 0;
    for (int32_t i = 0; i < m; i++) ptr[i + 1] = ptr[i] + lens[i];
    int32_t *col = malloc((size_t)ptr[m] * sizeof *col);
    double *vd = malloc((size_t)ptr[m] * sizeof *vd);
    float *vf = malloc((size_t)ptr[m] * sizeof *vf);
    cr_assert(col && vd && vf);
    for (int32_t i = 0; i < m; i++)
        for (int32_t j = 0; j < lens[i]; j++) {
            int32_t k = ptr[i] + j;
            col[k] = (int32_t)(((int64_t)j * (n - 1)) / (lens[i] > 1 ? lens[i] - 1 : 1)); /* increasing: n > len */
            vd[k] = sin(1.0 + k);
            vf[k] = (float)vd[k];
        }
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, m, n, ptr[m], ptr, col, p == SPMV_F32 ? (void *)vf : (void *)vd, p, 0, 0),
                 SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    free(ptr); free(col); free(vd); free(vf);
    return A;
}

/* A matrix wider than 2^30 columns (a few entries, far columns): the local row cannot be packed. */
static spmv_matrix_t *very_wide_matrix(spmv_precision_t p)
{
    const int32_t m = 9, n = (1 << 30) + 7;
    const int32_t ptr[] = {0, 2, 3, 3, 5, 6, 6, 8, 9, 10};
    const int32_t col[] = {0, (1 << 30) + 6, 5, 1, (1 << 30) + 1, 7, 2, 1 << 30, 3, (1 << 30) - 1};
    const double vd[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    const float vf[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, m, n, 10, ptr, col, p == SPMV_F32 ? (const void *)vf : (const void *)vd,
                                        p, 0, 0), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    return A;
}

/* ==================================================================================================== */
/* (a) the executor against the oracle                                                                  */
/* ==================================================================================================== */

static void corpus(int w, spmv_precision_t p, int fixed)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t opt = options(w, fixed);
    support_check_corpus(ctx, SPMV_FORMAT_AMF_CSR, &opt, p);
    spmv_matrix_t *L = long_row_matrix(p);
    support_check_format(ctx, SPMV_FORMAT_AMF_CSR, &opt, "long rows", L, 0);
    spmv_matrix_destroy(L);
    spmv_context_destroy(ctx);
}

Test(amf_csr, corpus_w32_f64) { corpus(32, SPMV_F64, 0); }
Test(amf_csr, corpus_w64_f64) { corpus(64, SPMV_F64, 0); }
Test(amf_csr, corpus_w32_f32) { corpus(32, SPMV_F32, 0); }
Test(amf_csr, corpus_w64_f32) { corpus(64, SPMV_F32, 0); }

/* Every shared matrix, read once per precision: adaptive at W = 32 and 64, the fixed folds 2 and 4, the CSR-vector
 * layout (amf_vector = 1) at W = 64, and the layout invariants of the adaptive build. */
static void shared(spmv_precision_t p)
{
    char **names;
    int n = support_shared_names(&names);
    cr_assert(n > 0, "no shared matrices in %s", support_matrix_dir());
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    for (int i = 0; i < n; i++) {
        spmv_matrix_t *A = support_read_shared(names[i], p);
        for (int w = 32; w <= 64; w *= 2) {
            spmv_plan_options_t opt = options(w, 0);
            support_check_format(ctx, SPMV_FORMAT_AMF_CSR, &opt, names[i], A, 0);
            spmvport_format_data fd;
            build_normal(&fd, A, w, 0);
            check_layout(&fd, A, names[i]);
            spmvport_format_data_free(&fd);
        }
        spmv_plan_options_t fixed2 = options(32, 2), fixed4 = options(64, 4), vector = options(64, 0);
        vector.amf_vector = 1;
        support_check_format(ctx, SPMV_FORMAT_AMF_CSR, &fixed2, names[i], A, 0);
        support_check_format(ctx, SPMV_FORMAT_AMF_CSR, &fixed4, names[i], A, 0);
        support_check_format(ctx, SPMV_FORMAT_AMF_CSR, &vector, names[i], A, 0);
        spmv_matrix_destroy(A);
    }
    support_names_free(names, n);
    spmv_context_destroy(ctx);
}

Test(amf_csr, shared_f64, .timeout = 600) { shared(SPMV_F64); }
Test(amf_csr, shared_f32, .timeout = 600) { shared(SPMV_F32); }

/* ==================================================================================================== */
/* (b) option variants                                                                                  */
/* ==================================================================================================== */

Test(amf_csr, fixed_fold_1_to_4)
{
    for (int k = 1; k <= AMF_MAX_FOLD; k++) {
        corpus(32, SPMV_F64, k);
        corpus(64, SPMV_F32, k);
    }
}

/* options.amf_lanes: every sub-block gets that many lanes (capped at W), and the results stay right. */
Test(amf_csr, fixed_lanes)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const int lanes[] = {2, 8, 64};
    for (int i = 0; i < 3; i++)
        for (int w = 32; w <= 64; w *= 2) {
            spmv_plan_options_t opt = options(w, 0);
            opt.amf_lanes = lanes[i];
            support_check_corpus(ctx, SPMV_FORMAT_AMF_CSR, &opt, w == 32 ? SPMV_F64 : SPMV_F32);
            spmv_matrix_t *A = NULL;
            cr_assert_eq(spmv_matrix_generate(&A, "kron:10:8", SPMV_F64, 5), SPMV_STATUS_SUCCESS);
            spmvport_format_data fd;
            build_with(&fd, A, w, &opt);
            const int want = lanes[i] < w ? lanes[i] : w;
            const uint8_t *sl = fd.arrays[AMF_A_SUB_LANES].data;
            for (int64_t s = 0; s < fd.params[AMF_P_SUB_BLOCKS]; s++)
                cr_assert_eq(1 << sl[s], want, "sub-block %lld: %d lanes, asked %d", (long long)s, 1 << sl[s], want);
            check_executor_direct(&fd, A, "kron:10:8");
            spmvport_format_data_free(&fd);
            spmv_matrix_destroy(A);
        }
    spmv_context_destroy(ctx);
}

/* options.amf_min_blocks and amf_values select a kernel variant only: the layout is the same, the resolved values
 * go to the params (0 = per precision and amf_values), and the results stay right (the CPU executor walks every
 * variant the same way). */
Test(amf_csr, kernel_variant_options)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    for (int p = 0; p < 2; p++) {
        const spmv_precision_t prec = p ? SPMV_F32 : SPMV_F64;
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, "circuit:100000", prec, 5), SPMV_STATUS_SUCCESS);
        spmvport_format_data base;
        spmv_plan_options_t opt = options(32, 0);
        build_with(&base, A, 32, &opt);
        cr_assert_eq(base.params[AMF_P_MIN_BLOCKS], 3);
        cr_assert_eq(base.params[AMF_P_VALUES], prec == SPMV_F32 ? AMF_VALUES_GATHER : AMF_VALUES_AFTER);
        /* {amf_min_blocks, amf_values} -> {cap, values} in the params */
        const int cases[][4] = {{1, 3, 0, AMF_VALUES_AFTER},  {3, 3, 3, AMF_VALUES_AFTER},
                                {4, 3, 4, AMF_VALUES_AFTER},  {0, 1, 0, AMF_VALUES_AHEAD},
                                {3, 1, 3, AMF_VALUES_AHEAD},  {0, 2, 3, AMF_VALUES_GATHER},
                                {4, 2, 4, AMF_VALUES_GATHER}, {1, 2, 0, AMF_VALUES_GATHER},
                                {0, 3, prec == SPMV_F32 ? 4 : 3, AMF_VALUES_AFTER}};
        for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
            opt.amf_min_blocks = cases[i][0];
            opt.amf_values = cases[i][1];
            support_check_corpus(ctx, SPMV_FORMAT_AMF_CSR, &opt, prec);
            spmvport_format_data fd;
            build_with(&fd, A, 32, &opt);
            cr_assert_eq(fd.params[AMF_P_MIN_BLOCKS], cases[i][2], "case %d", i);
            cr_assert_eq(fd.params[AMF_P_VALUES], cases[i][3], "case %d", i);
            cr_assert_eq(fd.params[AMF_P_SUB_BLOCKS], base.params[AMF_P_SUB_BLOCKS]);
            cr_assert_eq(fd.arrays[AMF_A_COLS].bytes, base.arrays[AMF_A_COLS].bytes);
            cr_assert(memcmp(fd.arrays[AMF_A_COLS].data, base.arrays[AMF_A_COLS].data, fd.arrays[AMF_A_COLS].bytes) ==
                      0);
            check_executor_direct(&fd, A, "circuit:100000");
            spmvport_format_data_free(&fd);
        }
        spmvport_format_data_free(&base);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

Test(amf_csr, waves_option)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "circuit:1000000", SPMV_F64, 5), SPMV_STATUS_SUCCESS);
    const int waves[] = {64, 4, 1};
    int64_t first = 0;
    int64_t prev = -1;
    for (int i = 0; i < 3; i++) {
        spmv_plan_options_t opt = options(32, 0);
        opt.amf_waves = waves[i];
        support_check_corpus(ctx, SPMV_FORMAT_AMF_CSR, &opt, SPMV_F64);
        spmvport_format_data fd;
        build_with(&fd, A, 32, &opt);
        const int64_t subs = fd.params[AMF_P_SUB_BLOCKS];
        if (prev >= 0) cr_assert_leq(subs, prev, "%d waves: %lld sub-blocks, more than %lld", waves[i], (long long)subs,
                                     (long long)prev);
        prev = subs;
        if (i == 0) first = subs;
        check_executor_direct(&fd, A, "circuit:1000000");
        spmvport_format_data_free(&fd);
    }
    cr_assert_lt(prev, first / 2, "1 wave: %lld sub-blocks, 64 waves: %lld", (long long)prev, (long long)first);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* amf_resident = 1: one sub-block per resident warp (CPU backend: 108 multiprocessors; f64's default cap 3 blocks
 * of 256 threads), at most that many less one per long row, balanced, the same results; too many long rows for
 * it: grouped by T_l as without it. */
Test(amf_csr, resident_option)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t opt = options(32, 0);
    opt.amf_resident = 1;
    support_check_corpus(ctx, SPMV_FORMAT_AMF_CSR, &opt, SPMV_F64);
    support_check_corpus(ctx, SPMV_FORMAT_AMF_CSR, &opt, SPMV_F32);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "circuit:1000000", SPMV_F64, 5), SPMV_STATUS_SUCCESS);
    const int ws[] = {32, 64};
    for (int i = 0; i < 2; i++) {
        opt.warp_size = ws[i];
        spmvport_format_data fd;
        build_with(&fd, A, ws[i], &opt);
        const int64_t warps = 108 * 3 * (AMF_BLOCK / ws[i]), subs = fd.params[AMF_P_SUB_BLOCKS];
        cr_assert(strstr(fd.stats, ";resident=1") != NULL, "%s", fd.stats);
        cr_assert(subs <= warps && subs >= warps * 9 / 10, "W = %d: %lld sub-blocks for %lld warps", ws[i],
                  (long long)subs, (long long)warps);
        /* balanced: no sub-block holds more than 1.2 x the mean entries */
        const int64_t mean = (fd.nnz - 5 * AMF_LONG_MIN) / subs;
        cr_assert_leq(fd.params[AMF_P_T_L], mean * 12 / 10 + 4 * AMF_LONG_MIN / 100, "W = %d: widest %lld, mean %lld",
                      ws[i], (long long)fd.params[AMF_P_T_L], (long long)mean);
        check_layout(&fd, A, "circuit:1000000 resident");
        check_executor_direct(&fd, A, "circuit:1000000 resident");
        spmvport_format_data_free(&fd);
    }
    /* 2 waves: twice the sub-blocks (amf_waves set too: amf_resident wins) */
    opt.amf_resident = 2;
    opt.amf_waves = 4;
    opt.warp_size = 32;
    spmvport_format_data fd2;
    build_with(&fd2, A, 32, &opt);
    cr_assert(strstr(fd2.stats, ";resident=2") != NULL, "%s", fd2.stats);
    cr_assert(fd2.params[AMF_P_SUB_BLOCKS] <= 2 * 2592 && fd2.params[AMF_P_SUB_BLOCKS] >= 2 * 2592 * 9 / 10, "%lld",
              (long long)fd2.params[AMF_P_SUB_BLOCKS]);
    check_layout(&fd2, A, "circuit:1000000 resident=2");
    check_executor_direct(&fd2, A, "circuit:1000000 resident=2");
    spmvport_format_data_free(&fd2);
    opt.amf_resident = 1;
    opt.amf_waves = 0;
    spmv_matrix_destroy(A);
    /* 2000 long rows leave fewer than half of the 2592 warps: grouped by T_l */
    cr_assert_eq(spmv_matrix_generate(&A, "uniform:2000:1100", SPMV_F64, 5), SPMV_STATUS_SUCCESS);
    opt.warp_size = 32;
    spmvport_format_data fd;
    build_with(&fd, A, 32, &opt);
    cr_assert(strstr(fd.stats, ";resident=0") != NULL, "%s", fd.stats);
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* T_l grouping weighs a fold at least one window (or the mean fold when shorter): a long run of empty rows, whose
 * folds all take a slot of a step, gets sub-blocks of about T_l / that many folds, not AMF_MAX_STEPS steps of them
 * (NotreDame_www, 58% empty rows: its slowest sub-block had 16 steps). */
Test(amf_csr, empty_row_runs_make_short_sub_blocks)
{
    enum { M = 60000, FULL = 8000, EMPTY = 44000 }; /* rows of 3 entries, a run of empty rows, rows of 3 */
    int32_t *row_ptr = malloc((M + 1) * sizeof *row_ptr), *col = malloc(3 * (M - EMPTY) * sizeof *col);
    double *val = malloc(3 * (M - EMPTY) * sizeof *val);
    cr_assert(row_ptr && col && val);
    int32_t nz = 0;
    row_ptr[0] = 0;
    for (int32_t r = 0; r < M; r++) {
        if (r < FULL || r >= FULL + EMPTY)
            for (int32_t k = 0; k < 3; k++, nz++) {
                col[nz] = (r + 7 * k) % M;
                val[nz] = 1.0 + (nz % 5);
            }
        row_ptr[r + 1] = nz;
    }
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, M, M, nz, row_ptr, col, val, SPMV_F64, 0, SPMV_MATRIX_SORT),
                 SPMV_STATUS_SUCCESS);
    free(row_ptr);
    free(col);
    free(val);
    const int ws[] = {32, 64};
    for (int i = 0; i < 2; i++) {
        spmv_plan_options_t opt = options(ws[i], 0);
        opt.amf_uniform = -1; /* T_l grouping */
        spmvport_format_data fd;
        build_with(&fd, A, ws[i], &opt);
        check_layout(&fd, A, "empty-row run");
        const int32_t *fold_ptr = fd.arrays[AMF_A_FOLD_PTR].data, *sub = fd.arrays[AMF_A_SUB_UNIT].data;
        const int64_t units = fd.params[AMF_P_UNITS], t_l = fd.params[AMF_P_T_L];
        const double mean = (double)A->nnz / (double)units, least = mean < AMF_BATCH ? mean : AMF_BATCH;
        const int64_t most = (int64_t)((double)t_l / least), by_entries = 16 * (ws[i] / 2); /* AMF_MAX_STEPS */
        cr_assert_lt(most, by_entries / 4, "W = %d: the test needs T_l / weight %lld well under %lld", ws[i],
                     (long long)most, (long long)by_entries);
        int64_t widest = 0;
        for (int64_t s = 0; s < fd.params[AMF_P_SUB_BLOCKS]; s++) {
            const int64_t folds = sub[2 * s + 1] - sub[2 * s];
            if (folds > widest) widest = folds;
            cr_assert(folds == 1 || folds <= most, "W = %d: sub-block %lld holds %lld folds, %lld entries (T_l %lld)",
                      ws[i], (long long)s, (long long)folds, (long long)(fold_ptr[sub[2 * s + 1]] - fold_ptr[sub[2 * s]]),
                      (long long)t_l);
        }
        cr_assert_gt(widest, 1, "W = %d: folds are grouped", ws[i]);
        check_executor_direct(&fd, A, "empty-row run");
        spmvport_format_data_free(&fd);
    }
    spmv_matrix_destroy(A);
}

/* The lane model: folds that one round of aligned AMF_BATCH-entry windows covers at 2 lanes keep 2 lanes; a lone
 * long fold gets the whole warp. */
Test(amf_csr, lanes_from_fold_lengths)
{
    spmv_matrix_t *A = NULL;
    /* 4-row folds of 3 entries (12 <= 2 x AMF_BATCH): 2 lanes, 16 folds per step */
    cr_assert_eq(spmv_matrix_generate(&A, "uniform:4000:3", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
    spmvport_format_data fd;
    build_normal(&fd, A, 32, 0);
    const uint8_t *sl = fd.arrays[AMF_A_SUB_LANES].data;
    for (int64_t s = 0; s < fd.params[AMF_P_SUB_BLOCKS]; s++)
        cr_assert_eq(sl[s], 1, "sub-block %lld: 2^%d lanes", (long long)s, sl[s]);
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);
    /* rows of 1000 entries: 4-row folds of 4000, one per sub-block (T_l), taken by the whole warp */
    cr_assert_eq(spmv_matrix_generate(&A, "uniform:2000:1000", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
    build_normal(&fd, A, 32, 0);
    sl = fd.arrays[AMF_A_SUB_LANES].data;
    for (int64_t s = 0; s < fd.params[AMF_P_SUB_BLOCKS]; s++) cr_assert_eq(1 << sl[s], 32);
    spmvport_format_data_free(&fd);
    build_normal(&fd, A, 64, 0);
    sl = fd.arrays[AMF_A_SUB_LANES].data;
    for (int64_t s = 0; s < fd.params[AMF_P_SUB_BLOCKS]; s++) cr_assert_eq(1 << sl[s], 64);
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);
}

Test(amf_csr, bad_options_rejected)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "stencil2d:5:10", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    static const struct {
        const char *name;
        size_t offset;
        int bad[4], count;
    } cases[] = {
        {"amf_fixed_fold", offsetof(spmv_plan_options_t, amf_fixed_fold), {-2, 5, 1000}, 3},
        {"amf_lanes", offsetof(spmv_plan_options_t, amf_lanes), {-2, 1, 3, 128}, 4},
        {"amf_waves", offsetof(spmv_plan_options_t, amf_waves), {-1, 65}, 2},
        {"amf_min_blocks", offsetof(spmv_plan_options_t, amf_min_blocks), {-1, 2, 5}, 3},
        {"amf_values", offsetof(spmv_plan_options_t, amf_values), {-1, 4}, 2},
        {"amf_resident", offsetof(spmv_plan_options_t, amf_resident), {-1, 9}, 2},
        {"amf_uniform", offsetof(spmv_plan_options_t, amf_uniform), {-2, 17}, 2},
        {"amf_one_step", offsetof(spmv_plan_options_t, amf_one_step), {-2, 3}, 2},
        {"amf_window_cache", offsetof(spmv_plan_options_t, amf_window_cache), {-2, 2}, 2},
        {"amf_step_window", offsetof(spmv_plan_options_t, amf_step_window), {-1, 2, 16}, 3},
        {"amf_regular", offsetof(spmv_plan_options_t, amf_regular), {-2, 1}, 2},
        {"amf_vector", offsetof(spmv_plan_options_t, amf_vector), {-2, 3}, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int i = 0; i < cases[c].count; i++) { /* every bad value is refused with a message naming the option */
            spmv_plan_options_t opt = options(0, 0);
            *(int *)(void *)((char *)&opt + cases[c].offset) = cases[c].bad[i];
            spmv_plan_t *plan = NULL;
            cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_AMF_CSR, &opt), SPMV_STATUS_INVALID_ARGUMENT,
                         "%s = %d", cases[c].name, cases[c].bad[i]);
            cr_assert_null(plan);
            cr_assert(strstr(spmv_last_error(ctx), cases[c].name) != NULL, "message: %s", spmv_last_error(ctx));
        }
    /* a warp size the layout cannot take, through the builder */
    spmvport_format_data fd;
    spmv_plan_options_t opt = options(0, 0);
    char msg[256] = "";
    cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_AMF_CSR, 48, NULL, &opt, msg, sizeof msg),
                 SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(msg, "warp size") != NULL, "message: %s", msg);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* The unpacked fallback, forced on the corpus and run by the executor directly. */
static void unpacked(int w, spmv_precision_t p, int fixed)
{
    support_case *cases;
    int n = support_edge_corpus(p, &cases);
    for (int i = 0; i < n; i++) {
        spmvport_format_data fd;
        build_direct(&fd, cases[i].A, w, fixed, 1);
        cr_assert_eq(fd.params[AMF_P_PACKED], 0);
        check_layout(&fd, cases[i].A, cases[i].name);
        check_executor_direct(&fd, cases[i].A, cases[i].name);
        spmvport_format_data_free(&fd);
    }
    support_cases_free(cases, n);
}

Test(amf_csr, unpacked_fallback)
{
    unpacked(32, SPMV_F64, 0);
    unpacked(64, SPMV_F32, 0);
    unpacked(32, SPMV_F32, 3);
}

Test(amf_csr, unpacked_when_columns_reach_2_30)
{
    for (int p = SPMV_F32; p <= SPMV_F64; p++) {
        spmv_matrix_t *A = very_wide_matrix((spmv_precision_t)p);
        for (int w = 32; w <= 64; w *= 2) {
            spmvport_format_data fd;
            build_normal(&fd, A, w, 0);
            cr_assert_eq(fd.params[AMF_P_PACKED], 0, "n = 2^30 + 7 must not pack");
            check_layout(&fd, A, "very wide");
            spmvport_format_data_free(&fd);
        }
        spmv_matrix_destroy(A);
    }
}

/* ==================================================================================================== */
/* (c) invariants on the corpus                                                                         */
/* ==================================================================================================== */

static void invariants(int w, spmv_precision_t p)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    support_case *cases;
    int n = support_edge_corpus(p, &cases);
    for (int i = 0; i < n; i++)
        for (int fixed = 0; fixed <= AMF_MAX_FOLD; fixed++) {
            spmvport_format_data fd;
            build_normal(&fd, cases[i].A, w, fixed);
            check_layout(&fd, cases[i].A, cases[i].name);
            spmvport_format_data_free(&fd);
            check_bytes(ctx, cases[i].A, w, fixed, cases[i].name);
        }
    spmv_matrix_t *L = long_row_matrix(p);
    spmvport_format_data fd;
    build_normal(&fd, L, w, 0);
    check_layout(&fd, L, "long rows");
    cr_assert_eq(fd.params[AMF_P_LONG_ROWS], 7, "rows of 1024 entries and more are long");
    cr_assert_eq(fd.params[AMF_P_MULTI], 2, "rows of 4097 and 12289 entries take several pieces of 4096");
    cr_assert_eq(fd.params[AMF_P_PIECES], 11, "1 + 1 + 1 + 1 + 2 + 4 + 1 pieces");
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(L);
    support_cases_free(cases, n);
    spmv_context_destroy(ctx);
}

Test(amf_csr, invariants_w32) { invariants(32, SPMV_F64); }
Test(amf_csr, invariants_w64) { invariants(64, SPMV_F32); }

/* options.amf_uniform: automatic (0) on small matrices without long rows, never (-1), or forced steps (1..16):
 * the layout invariants (check_sub_blocks checks the implicit bounds against the arrays) and the executor, which
 * takes the bounds from s as the kernel does, against the oracle; long rows keep the grouped sub-blocks.
 * one_step: options.amf_one_step (0 automatic, 1 windows, 2 entries), which a one-step layout then follows;
 * step_window: options.amf_step_window (0 automatic, 4, 8), which the one-step kernel by windows follows. */
static void uniform_case(spmv_context_t *ctx, const spmv_matrix_t *A, int w, int mode, int one_step, int step_window,
                         const char *name)
{
    spmv_plan_options_t opt = options(w, 0);
    opt.amf_uniform = mode;
    opt.amf_one_step = one_step;
    opt.amf_step_window = step_window;
    spmvport_format_data fd;
    build_with(&fd, A, w, &opt);
    check_layout(&fd, A, name);
    if (mode < 0 || fd.params[AMF_P_LONG_ROWS] > 0) cr_assert_eq(fd.params[AMF_P_UNIFORM], 0, "%s", name);
    if (mode > 0 && fd.params[AMF_P_LONG_ROWS] == 0 && fd.params[AMF_P_UNITS] > 0)
        cr_assert_eq(fd.params[AMF_P_UNIFORM], mode * (w >> fd.params[AMF_P_UNIFORM_LANES]), "%s", name);
    /* the one-step kernel exactly for uniform sub-blocks of one step, by windows or entries as asked */
    const int one = fd.params[AMF_P_UNIFORM] > 0 && fd.params[AMF_P_UNIFORM] == (w >> fd.params[AMF_P_UNIFORM_LANES]);
    cr_assert_eq(fd.params[AMF_P_ONE_STEP] != 0, one, "%s", name);
    if (one && one_step > 0) cr_assert_eq(fd.params[AMF_P_ONE_STEP], one_step, "%s", name);
    /* windows of 4 entries exactly where asked for the one-step kernel by windows */
    if (step_window > 0)
        cr_assert_eq(fd.params[AMF_P_STEP_WINDOW], fd.params[AMF_P_ONE_STEP] == 1 ? step_window : AMF_BATCH, "%s",
                     name);
    check_executor_direct(&fd, A, name);
    spmvport_format_data_free(&fd);
    double r = support_check_format(ctx, SPMV_FORMAT_AMF_CSR, &opt, name, A, 1);
    cr_assert(r >= 0, "%s: amf_uniform %d: %s", name, mode, spmv_last_error(ctx));
}

/* The automatic layout (W = 32, CPU builder) of a generated matrix without long rows: its uniform sub-block
 * size, one-step flag, one-step window and (cache >= 0) window loads, then the layout and executor checks.
 * Returns the sub-blocks; *x_sectors (unless NULL): the plan's x_sectors stat. */
static int64_t automatic_layout_in(const char *gen, uint64_t seed, spmv_precision_t precision, int64_t uniform,
                                   int64_t one_step, int64_t window, int64_t cache, double *x_sectors)
{
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, gen, precision, seed), SPMV_STATUS_SUCCESS, "%s", gen);
    spmvport_format_data fd;
    build_normal(&fd, A, 32, 0);
    cr_assert_eq(fd.params[AMF_P_LONG_ROWS], 0, "%s: %s", gen, fd.stats);
    cr_assert_eq(fd.params[AMF_P_UNIFORM], uniform, "%s: %s", gen, fd.stats);
    cr_assert_eq(fd.params[AMF_P_ONE_STEP], one_step, "%s: %s", gen, fd.stats);
    cr_assert_eq(fd.params[AMF_P_STEP_WINDOW], window, "%s: %s", gen, fd.stats);
    if (cache >= 0) cr_assert_eq(fd.params[AMF_P_WINDOW_CACHE], cache, "%s: %s", gen, fd.stats);
    if (x_sectors != NULL) {
        const char *at = strstr(fd.stats, "x_sectors=");
        cr_assert_not_null(at, "%s: %s", gen, fd.stats);
        *x_sectors = strtod(at + strlen("x_sectors="), NULL);
    }
    check_layout(&fd, A, gen);
    check_executor_direct(&fd, A, gen);
    const int64_t subs = fd.params[AMF_P_SUB_BLOCKS];
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);
    return subs;
}

static int64_t automatic_layout(const char *gen, uint64_t seed, int64_t uniform, int64_t one_step, int64_t window)
{
    return automatic_layout_in(gen, seed, SPMV_F64, uniform, one_step, window, -1, NULL);
}

Test(amf_csr, uniform_sub_blocks)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    static const int modes[] = {0, -1, 1, 2, 16};
    for (int p = 0; p < 2; p++) {
        support_case *cases;
        int n = support_edge_corpus(p ? SPMV_F32 : SPMV_F64, &cases);
        for (int i = 0; i < n; i++)
            for (int m = 0; m < 5; m++)
                for (int o = 0; o < 4; o++) /* o = 3: by windows of 4 entries */
                    uniform_case(ctx, cases[i].A, p ? 64 : 32, modes[m], o < 3 ? o : 1, o < 3 ? 0 : 4, cases[i].name);
        support_cases_free(cases, n);
        spmv_matrix_t *L = long_row_matrix(p ? SPMV_F32 : SPMV_F64);
        uniform_case(ctx, L, 32, 1, 2, 0, "long rows");
        spmv_matrix_destroy(L);
    }
    /* a small road-like matrix (launch-floor size): automatic uniform sub-blocks of one step; irregular folds
     * (a few long ones among short ones) too */
    const char *gens[] = {"stencil2d:5:60", "uniform:20000:3", "kron:12:4"};
    for (int i = 0; i < 3; i++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, gens[i], SPMV_F64, 5), SPMV_STATUS_SUCCESS, "%s", gens[i]);
        for (int m = 0; m < 5; m++)
            for (int o = 0; o < 4; o++) uniform_case(ctx, A, 32, modes[m], o < 3 ? o : 1, o < 3 ? 0 : 4, gens[i]);
        spmvport_format_data fd;
        spmv_plan_options_t opt = options(32, 0);
        build_with(&fd, A, 32, &opt);
        if (fd.params[AMF_P_LONG_ROWS] == 0 && i < 2) { /* one wave of one-step warps: by windows */
            cr_assert_eq(fd.params[AMF_P_UNIFORM], 32 >> fd.params[AMF_P_UNIFORM_LANES], "%s: one step", gens[i]);
            cr_assert_eq(fd.params[AMF_P_ONE_STEP], 1, "%s: by windows", gens[i]);
        }
        spmvport_format_data_free(&fd);
        opt.amf_one_step = -1; /* the same layout on the general kernel */
        build_with(&fd, A, 32, &opt);
        cr_assert_eq(fd.params[AMF_P_ONE_STEP], 0, "%s: amf_one_step = -1", gens[i]);
        spmvport_format_data_free(&fd);
        spmv_matrix_destroy(A);
    }
    /* a tie on the slowest step where the one-step layout would add work stays grouped: kron:11:16, a power-law
     * graph as wiki-Vote, would take one fold a warp at 32 lanes (slowest step 17 quarters, as the grouped
     * layout's slowest sub-block) for 1.4x the grouped layout's modelled total */
    automatic_layout("kron:11:16", 42, 0, 0, AMF_BATCH);
    /* a matrix whose one-step sub-blocks would not fit in one wave of resident warps: many waves of one-step warps
     * by windows where they outnumber the warps the device holds at once (108 x 64 here; the 7-point stencil's
     * 4-row folds span 4 windows: 4 lanes, 8 folds a warp, 8434 warps), grouped by T_l where they do not
     * (banded:170000:10: 4-row folds of 84 entries, 11 windows, 4 lanes: 5313 warps); in f64, the many-wave
     * layout's windows are 4 entries */
    cr_assert_gt(automatic_layout("stencil3d:7:64", 5, 8, 1, 4), 2592, "stencil3d:7:64: many waves");
    /* the lanes of the many-wave layout: where x is read scattered (random columns: about one sector an entry),
     * one window of the kernel's own size a lane; else 3 windows of 8 entries a lane. Both matrices have 5
     * entries a row (4-row folds of 20 entries, 5-6 windows of 4): lp, random columns, takes 8 lanes (uniform 4)
     * in f64 and 4 in f32 (3-4 windows of 8); stencil2d, read along its diagonals, keeps 4. Window loads: both
     * read 26-29% of their windows twice (cached by the reread rule), but 4-entry windows on scattered x and
     * 8-entry windows on diagonals stream */
    double lp_x = 0.0, stencil_x = 1.0;
    automatic_layout_in("lp:700000:700000:5", 5, SPMV_F64, 4, 1, 4, 0, &lp_x);
    automatic_layout_in("lp:700000:700000:5", 5, SPMV_F32, 8, 1, AMF_BATCH, 1, NULL);
    automatic_layout_in("stencil2d:5:700", 5, SPMV_F64, 8, 1, 4, 1, &stencil_x);
    automatic_layout_in("stencil2d:5:700", 5, SPMV_F32, 8, 1, AMF_BATCH, 0, NULL);
    cr_assert_geq(lp_x, 0.9);
    cr_assert_leq(stencil_x, 0.3);
    automatic_layout("banded:170000:10", 5, 0, 0, AMF_BATCH);
    /* ... unless T_l is at its floor, so the grouped layout's sub-blocks are one step too (rows of 2: 4-row folds of
     * 8 entries, 3125 one-step warps at 2 lanes, past the CPU builder's 2592 resident): many waves of one-step warps,
     * whose modelled total is less (NotreDame_www), which run by entries at the lanes for 2 entries a lane (4) */
    cr_assert_gt(automatic_layout("uniform:200000:2", 5, 8, 2, AMF_BATCH), 2592, "uniform:200000:2: many waves");
    /* ... but folds longer than a window (the 5-point stencil's 4-row folds of 20 entries) run by windows, at the
     * lanes the one-step model chose (2, 16 folds a warp), and in windows of 4 entries: a lane's 2 rounds of 8
     * slots become 3 of 4 (lane_slots), in f32 too; 4-row folds of 16 aligned entries keep windows of 8 (one
     * round of 8 slots or two of 4) in f32 ... */
    automatic_layout("stencil2d:5:500", 5, 16, 1, AMF_SMALL_WINDOW);
    automatic_layout_in("stencil2d:5:500", 5, SPMV_F32, 16, 1, AMF_SMALL_WINDOW, -1, NULL);
    automatic_layout_in("uniform:300000:4", 5, SPMV_F32, 16, 1, AMF_BATCH, -1, NULL);
    /* ... while in f64, with x read scattered, the many-wave layout comes first even with T_l at its floor, where
     * its warps outnumber the device's (9375 at 4 lanes, one 4-entry window a lane, streamed) */
    automatic_layout_in("uniform:300000:4", 5, SPMV_F64, 8, 1, AMF_SMALL_WINDOW, 0, NULL);
    /* long rows among short folds (a circuit with dense lines): many waves of one-step warps by windows too, whose
     * sub-blocks span the long units; their pieces compute them. amf_one_step = 2 (by entries) or -1 (the general
     * kernel), amf_waves or amf_uniform = -1: grouped by T_l. */
    {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, "circuit:1000000", SPMV_F64, 5), SPMV_STATUS_SUCCESS);
        spmvport_format_data fd;
        build_normal(&fd, A, 32, 0);
        cr_assert_gt(fd.params[AMF_P_LONG_ROWS], 0, "%s", fd.stats);
        cr_assert_eq(fd.params[AMF_P_UNIFORM], 8, "%s", fd.stats);
        cr_assert_eq(fd.params[AMF_P_ONE_STEP], 1, "%s", fd.stats);
        cr_assert_eq(fd.params[AMF_P_STEP_WINDOW], 4, "%s", fd.stats);
        check_layout(&fd, A, "circuit:1000000");
        check_executor_direct(&fd, A, "circuit:1000000");
        spmvport_format_data_free(&fd);
        { /* windows of 8 when asked */
            spmv_plan_options_t opt = options(32, 0);
            opt.amf_step_window = AMF_BATCH;
            build_with(&fd, A, 32, &opt);
            cr_assert_eq(fd.params[AMF_P_ONE_STEP], 1, "%s", fd.stats);
            cr_assert_eq(fd.params[AMF_P_STEP_WINDOW], AMF_BATCH, "%s", fd.stats);
            check_executor_direct(&fd, A, "circuit:1000000, windows of 8");
            spmvport_format_data_free(&fd);
        }
        const int one_step[] = {2, -1, 0, 0}, waves[] = {0, 0, 4, 0}, uniform[] = {0, 0, 0, -1};
        for (int v = 0; v < 4; v++) {
            spmv_plan_options_t opt = options(32, 0);
            opt.amf_one_step = one_step[v];
            opt.amf_waves = waves[v];
            opt.amf_uniform = uniform[v];
            build_with(&fd, A, 32, &opt);
            cr_assert_eq(fd.params[AMF_P_UNIFORM], 0, "variant %d: %s", v, fd.stats);
            cr_assert_eq(fd.params[AMF_P_ONE_STEP], 0, "variant %d: %s", v, fd.stats);
            spmvport_format_data_free(&fd);
        }
        spmv_matrix_destroy(A);
    }
    { /* f32: windows of 8 (4 entries measured 1-4% slower there) */
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, "circuit:1000000", SPMV_F32, 5), SPMV_STATUS_SUCCESS);
        spmvport_format_data fd;
        build_normal(&fd, A, 32, 0);
        cr_assert_eq(fd.params[AMF_P_ONE_STEP], 1, "%s", fd.stats);
        cr_assert_eq(fd.params[AMF_P_STEP_WINDOW], AMF_BATCH, "%s", fd.stats);
        spmvport_format_data_free(&fd);
        spmv_matrix_destroy(A);
    }
    /* fixed lanes stay fixed by entries too */
    {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, "uniform:200000:2", SPMV_F64, 5), SPMV_STATUS_SUCCESS);
        spmv_plan_options_t opt = options(32, 0);
        opt.amf_lanes = 2;
        spmvport_format_data fd;
        build_with(&fd, A, 32, &opt);
        cr_assert_eq(fd.params[AMF_P_ONE_STEP], 2, "%s", fd.stats);
        cr_assert_eq(fd.params[AMF_P_UNIFORM_LANES], 1, "%s", fd.stats);
        check_executor_direct(&fd, A, "uniform:200000:2, 2 lanes by entries");
        spmvport_format_data_free(&fd);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

/* Adaptive folding folds regular short rows 4 at a time and stays within T_s on irregular ones. */
/* Regular folds (options.amf_regular): where every fold of a one-step plan holds the first fold's rows and entries
 * (rows of exactly K entries), the executor derives the bounds as the kernel does. The parameters for generated
 * matrices of K = 1, 3, 4 (m a multiple of 4 or not: a short last fold), W = 32 and 64, both precisions; none for a
 * 5-point stencil (shorter boundary rows) or with amf_regular = -1; the layout checks (check_units compares the
 * derived bounds with the arrays), the executor against the oracle, and bitwise the y of the plan that reads the
 * arrays (the same sums in the same order). */
Test(amf_csr, regular_folds)
{
    static const struct {
        const char *gen;
        int64_t rows, entries;
    } cases[] = {{"uniform:1000:4", 4, 16}, {"uniform:1001:3", 4, 12}, {"uniform:999:1", 4, 4},
                 {"uniform:20000:4", 4, 16}, {"stencil2d:5:40", 0, 0}};
    for (int p = 0; p < 2; p++)
        for (int w = 32; w <= 64; w *= 2)
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                const spmv_precision_t prec = p ? SPMV_F32 : SPMV_F64;
                spmv_matrix_t *A = NULL;
                cr_assert_eq(spmv_matrix_generate(&A, cases[c].gen, prec, 3), SPMV_STATUS_SUCCESS);
                spmvport_format_data fd, arrays;
                spmv_plan_options_t opt = options(w, 0);
                build_with(&fd, A, w, &opt);
                opt.amf_regular = -1;
                build_with(&arrays, A, w, &opt);
                cr_assert_neq(fd.params[AMF_P_ONE_STEP], 0, "%s: not a one-step plan: %s", cases[c].gen, fd.stats);
                cr_assert_eq(fd.params[AMF_P_REGULAR_ROWS], cases[c].rows, "%s W %d: %s", cases[c].gen, w, fd.stats);
                cr_assert_eq(fd.params[AMF_P_REGULAR_ENTRIES], cases[c].entries, "%s W %d: %s", cases[c].gen, w,
                             fd.stats);
                cr_assert_eq(arrays.params[AMF_P_REGULAR_ROWS], 0, "%s: %s", cases[c].gen, arrays.stats);
                check_layout(&fd, A, cases[c].gen);
                check_executor_direct(&fd, A, cases[c].gen);
                const size_t vs = spmvport_value_size(prec);
                void *x = malloc(vs * (size_t)A->n), *y1 = calloc((size_t)A->m, vs), *y2 = calloc((size_t)A->m, vs);
                cr_assert(x && y1 && y2);
                support_random_vector(x, A->n, prec, 9);
                spmvport_cpu_amf_csr(&fd, 1.5, x, 0.0, y1);
                spmvport_cpu_amf_csr(&arrays, 1.5, x, 0.0, y2);
                cr_assert(memcmp(y1, y2, vs * (size_t)A->m) == 0, "%s W %d: regular folds change y", cases[c].gen, w);
                free(x), free(y1), free(y2);
                spmvport_format_data_free(&fd);
                spmvport_format_data_free(&arrays);
                spmv_matrix_destroy(A);
            }
}

Test(amf_csr, adaptive_folding_shape)
{
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "uniform:4000:5", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
    spmvport_format_data fd;
    build_normal(&fd, A, 32, 0);
    cr_assert_eq(fd.params[AMF_P_T_S], 23, "T_s = ceil(4.5 x 5 entries)");
    cr_assert_eq(fd.params[AMF_P_UNITS], 1000, "every fold holds 4 rows of 5");
    spmvport_format_data_free(&fd);
    build_normal(&fd, A, 32, 2);
    cr_assert_eq(fd.params[AMF_P_UNITS], 2000, "fixed fold 2");
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);
}

/* The window cap: an adaptive fold of several rows spans at most win_cap aligned windows, win_cap the power of two
 * >= ceil(T_s / AMF_BATCH); amf_fixed_fold = -1 folds by T_s alone (win_cap 0), and both stay right. 7-point
 * stencil: T_s = 32 (4 rows of 7 and slack), so 4-row folds at 3 offsets in 8 would span 5 windows. */
Test(amf_csr, fold_window_cap)
{
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "stencil3d:7:24", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    spmvport_format_data fd;
    build_normal(&fd, A, 32, 0);
    const int64_t t_s = fd.params[AMF_P_T_S];
    int64_t cap = 1;
    while (cap < (t_s + AMF_BATCH - 1) / AMF_BATCH) cap *= 2;
    cr_assert_eq(cap, 4, "T_s = %lld", (long long)t_s);
    cr_assert(strstr(fd.stats, ";win_cap=4") != NULL, "%s", fd.stats);
    const int32_t *fold_row = fd.arrays[AMF_A_FOLD_ROW].data, *fold_ptr = fd.arrays[AMF_A_FOLD_PTR].data;
    int32_t four_rows = 0;
    for (int64_t u = 0; u < fd.params[AMF_P_UNITS]; u++) {
        const int64_t b = fold_ptr[u], e = fold_ptr[u + 1];
        if (fold_row[u + 1] - fold_row[u] > 1)
            cr_assert_leq((e + AMF_BATCH - 1) / AMF_BATCH - b / AMF_BATCH, cap, "fold %lld", (long long)u);
        four_rows += fold_row[u + 1] - fold_row[u] == 4;
    }
    cr_assert_gt(four_rows, fd.params[AMF_P_UNITS] * 2 / 3, "most folds keep 4 rows: %d of %lld", four_rows,
                 (long long)fd.params[AMF_P_UNITS]);
    const int64_t capped_units = fd.params[AMF_P_UNITS];
    spmvport_format_data_free(&fd);
    build_normal(&fd, A, 32, -1);
    cr_assert(strstr(fd.stats, ";win_cap=0") != NULL && strstr(fd.stats, "fold=adaptive") != NULL, "%s", fd.stats);
    cr_assert_eq(fd.params[AMF_P_T_S], t_s);
    cr_assert_lt(fd.params[AMF_P_UNITS], capped_units, "without the cap, more 4-row folds");
    cr_assert_lt(capped_units, fd.params[AMF_P_UNITS] * 11 / 10, "the cap adds few folds"); /* 7% here, 1% at 160 */
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);
    corpus(32, SPMV_F64, -1);
    corpus(64, SPMV_F32, -1);
}

/* ==================================================================================================== */
/* (d) update_values                                                                                    */
/* ==================================================================================================== */

/* Execute plan once (alpha = 1.5, beta = 0.25) into a host array. */
static void run_once(spmv_context_t *ctx, spmv_plan_t *plan, int32_t m, int32_t n, spmv_precision_t p, void *out)
{
    const size_t vs = p == SPMV_F32 ? sizeof(float) : sizeof(double);
    void *x = malloc(vs * ((size_t)n + 1)), *y = malloc(vs * ((size_t)m + 1));
    cr_assert(x && y);
    support_random_vector(x, n, p, 11);
    support_random_vector(y, m, p, 12);
    cr_assert_eq(spmv_execute(plan, 1.5, x, 0.25, y), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    memcpy(out, y, vs * (size_t)m);
    free(x);
    free(y);
}

/* A plan of A updated with new values must equal, bitwise, a plan built from a matrix with those values. */
static void update_case(spmv_context_t *ctx, const spmv_matrix_t *A, const spmv_plan_options_t *opt, const char *name)
{
    int32_t m, n, nnz;
    spmv_precision_t p;
    const int32_t *ptr, *col;
    const void *val;
    spmv_matrix_get_size(A, &m, &n, &nnz, &p);
    spmv_matrix_get_csr(A, &ptr, &col, &val);
    const size_t vs = p == SPMV_F32 ? sizeof(float) : sizeof(double);
    void *v2 = malloc(vs * ((size_t)nnz + 1)), *y1 = malloc(vs * ((size_t)m + 1)), *y2 = malloc(vs * ((size_t)m + 1));
    cr_assert(v2 && y1 && y2);
    support_random_vector(v2, nnz, p, 77);
    spmv_matrix_t *B = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&B, m, n, nnz, ptr, col, v2, p, 0, 0), SPMV_STATUS_SUCCESS);
    spmv_plan_t *pa, *pb;
    cr_assert_eq(spmv_plan_create(&pa, ctx, A, SPMV_FORMAT_AMF_CSR, opt), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_plan_create(&pb, ctx, B, SPMV_FORMAT_AMF_CSR, opt), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_plan_update_values(pa, v2), SPMV_STATUS_SUCCESS, "%s: %s", name, spmv_last_error(ctx));
    run_once(ctx, pa, m, n, p, y1);
    run_once(ctx, pb, m, n, p, y2);
    cr_assert(memcmp(y1, y2, vs * (size_t)m) == 0, "%s: updated plan differs from a fresh one", name);
    spmv_plan_destroy(pa);
    spmv_plan_destroy(pb);
    spmv_matrix_destroy(B);
    free(v2); free(y1); free(y2);
}

Test(amf_csr, update_values)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    for (int p = SPMV_F32; p <= SPMV_F64; p++) {
        const char *specs[] = {"circuit:20000", "kron:11:8", "stencil2d:5:40", "lp:300:900:7"};
        for (int i = 0; i < 4; i++) {
            spmv_matrix_t *A = NULL;
            cr_assert_eq(spmv_matrix_generate(&A, specs[i], (spmv_precision_t)p, 9), SPMV_STATUS_SUCCESS);
            spmv_plan_options_t adaptive = options(32, 0), fixed3 = options(64, 3), vector = options(32, 0);
            vector.amf_vector = 1;
            update_case(ctx, A, &adaptive, specs[i]);
            update_case(ctx, A, &fixed3, specs[i]);
            update_case(ctx, A, &vector, specs[i]);
            spmv_matrix_destroy(A);
        }
        spmv_matrix_t *L = long_row_matrix((spmv_precision_t)p);
        spmv_plan_options_t adaptive = options(32, 0);
        update_case(ctx, L, &adaptive, "long rows");
        spmv_matrix_destroy(L);
    }
    spmv_context_destroy(ctx);
}

/* Creator order with duplicates: values are summed again into the stored entries before the scatter. */
Test(amf_csr, update_values_with_duplicates)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const int32_t ptr[] = {0, 3, 3, 6, 8};
    const int32_t col[] = {2, 0, 2, 1, 1, 0, 3, 3};
    const double v1[] = {1, 2, 3, 4, 5, 6, 7, 8}, v2[] = {-1, 0.5, 2, 3, -4, 1, 9, 10};
    spmv_matrix_t *A = NULL, *B = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, 4, 4, 8, ptr, col, v1, SPMV_F64, 0, SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_create_csr(&B, 4, 4, 8, ptr, col, v2, SPMV_F64, 0, SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS);
    spmv_plan_t *pa, *pb;
    cr_assert_eq(spmv_plan_create(&pa, ctx, A, SPMV_FORMAT_AMF_CSR, NULL), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_plan_create(&pb, ctx, B, SPMV_FORMAT_AMF_CSR, NULL), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_plan_update_values(pa, v2), SPMV_STATUS_SUCCESS);
    double y1[4], y2[4];
    run_once(ctx, pa, 4, 4, SPMV_F64, y1);
    run_once(ctx, pb, 4, 4, SPMV_F64, y2);
    cr_assert(memcmp(y1, y2, sizeof y1) == 0);
    spmv_plan_destroy(pa); spmv_plan_destroy(pb);
    spmv_matrix_destroy(A); spmv_matrix_destroy(B);
    spmv_context_destroy(ctx);
}

/* ==================================================================================================== */
/* (e) statistics                                                                                       */
/* ==================================================================================================== */

Test(amf_csr, plan_info_stats)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *L = long_row_matrix(SPMV_F64);
    spmv_plan_t *plan;
    cr_assert_eq(spmv_plan_create(&plan, ctx, L, SPMV_FORMAT_AMF_CSR, NULL), SPMV_STATUS_SUCCESS);
    spmv_plan_info_t info;
    spmv_plan_get_info(plan, &info);
    cr_assert_eq(info.format, SPMV_FORMAT_AMF_CSR);
    const char *keys[] = {"T_s", "T_l", "folded_rows", "avg_rows_per_fold", "long_rows", "sub_blocks", "win_cap",
                          "uniform"};
    for (int i = 0; i < 8; i++) support_stat(info.stats, keys[i]);
    /* slot_use <= window_use <= 1: entries over the slots of every round, over the slots of the folds' windows */
    const char *su = strstr(info.stats, ";slot_use="), *wu = strstr(info.stats, ";window_use=");
    cr_assert(su != NULL && wu != NULL, "%s", info.stats);
    const double slot_use = atof(su + 10), window_use = atof(wu + 12);
    cr_assert(slot_use > 0 && slot_use <= window_use && window_use <= 1.0, "%s", info.stats);
    cr_assert_eq(support_stat(info.stats, "long_rows"), 7, "%s", info.stats);
    cr_assert_eq(support_stat(info.stats, "T_s"), plan->fd.params[AMF_P_T_S], "%s", info.stats);
    cr_assert_eq(support_stat(info.stats, "T_l"), plan->fd.params[AMF_P_T_L], "%s", info.stats);
    cr_assert_eq(support_stat(info.stats, "sub_blocks"), plan->fd.params[AMF_P_SUB_BLOCKS], "%s", info.stats);
    cr_assert_eq(support_stat(info.stats, "folded_rows") + 7, plan->fd.params[AMF_P_UNITS], "%s", info.stats);
    cr_assert_eq(support_stat(info.stats, "uniform"), 0, "long rows: grouped sub-blocks: %s", info.stats);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(L);
    spmv_context_destroy(ctx);
}

/* Window caching (AMF_P_WINDOW_CACHE): automatic from the share of window reads that repeat a window a neighbouring
 * fold reads too (window_use <= 100 / (100 + AMF_CACHE_REREAD_PCT)), forced either way by amf_window_cache; the
 * layout is the same whatever the choice (a kernel variant only), and the stats report it. */
static int64_t window_cache_of(const spmv_matrix_t *A, int forced, double *window_use, const spmvport_format_data *same)
{
    spmvport_format_data fd;
    spmv_plan_options_t opt = options(32, 0);
    opt.amf_window_cache = forced;
    build_with(&fd, A, 32, &opt);
    const char *at = strstr(fd.stats, "window_use=");
    cr_assert_not_null(at, "%s", fd.stats);
    *window_use = strtod(at + strlen("window_use="), NULL);
    char want[32];
    snprintf(want, sizeof want, "window_cache=%d", (int)fd.params[AMF_P_WINDOW_CACHE]);
    cr_assert(strstr(fd.stats, want) != NULL, "stats: %s", fd.stats);
    if (same != NULL) /* the same arrays, byte for byte */
        for (int a = 0; a < AMF_A_COUNT; a++) {
            cr_assert_eq(fd.arrays[a].bytes, same->arrays[a].bytes, "array %d", a);
            cr_assert(fd.arrays[a].bytes == 0 || memcmp(fd.arrays[a].data, same->arrays[a].data, fd.arrays[a].bytes) == 0,
                      "array %d differs with amf_window_cache = %d", a, forced);
        }
    const int64_t cache = fd.params[AMF_P_WINDOW_CACHE];
    spmvport_format_data_free(&fd);
    return cache;
}

Test(amf_csr, window_cache_rule)
{
    /* circuit rows (4-row folds of ~22 entries at arbitrary offsets: about a third more window reads than windows)
     * cache; rows of exactly 16 (folds of 64 entries, whole windows) do not */
    static const struct {
        const char *gen;
        int cached;
    } cases[] = {{"circuit:200000", 1}, {"uniform:20000:16", 0}, {"stencil3d:7:40", 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[c].gen, SPMV_F64, 3), SPMV_STATUS_SUCCESS);
        spmvport_format_data base;
        spmv_plan_options_t opt = options(32, 0);
        build_with(&base, A, 32, &opt);
        double use;
        const int64_t automatic = window_cache_of(A, 0, &use, &base);
        cr_assert_eq(automatic, use * (100 + AMF_CACHE_REREAD_PCT) <= 100.0, "%s: window_use %.3f", cases[c].gen, use);
        cr_assert_eq(automatic, cases[c].cached, "%s: window_use %.3f", cases[c].gen, use);
        cr_assert_eq(window_cache_of(A, 1, &use, &base), 1, "%s: forced on", cases[c].gen);
        cr_assert_eq(window_cache_of(A, -1, &use, &base), 0, "%s: forced off", cases[c].gen);
        check_executor_direct(&base, A, cases[c].gen);
        spmvport_format_data_free(&base);
        spmv_matrix_destroy(A);
    }
}

/* ==================================================================================================== */
/* (f) the CSR-vector layout (options.amf_vector)                                                       */
/* ==================================================================================================== */

/* Its arrays are the matrix's CSR (the row pointer in fold_ptr, plain columns, values), every other array empty, no
 * value_map (the values are in CSR order), and its lanes csr_vector's or amf_lanes'. */
static void check_vector_layout(const spmvport_format_data *fd, const spmv_matrix_t *A, int lanes, const char *name)
{
    cr_assert_eq(fd->narrays, AMF_A_COUNT, "%s", name);
    cr_assert_eq(fd->params[AMF_P_VECTOR_LANES], lanes, "%s", name);
    cr_assert_eq(fd->params[AMF_P_UNITS], A->m, "%s", name);
    cr_assert_eq(fd->params[AMF_P_PACKED], 0, "%s", name);
    cr_assert_eq(fd->params[AMF_P_SUB_BLOCKS] + fd->params[AMF_P_LONG_ROWS] + fd->params[AMF_P_PIECES], 0, "%s", name);
    cr_assert_eq(fd->arrays[AMF_A_FOLD_PTR].bytes, ((size_t)A->m + 1) * sizeof(int32_t), "%s", name);
    cr_assert(memcmp(fd->arrays[AMF_A_FOLD_PTR].data, A->row_ptr, ((size_t)A->m + 1) * sizeof(int32_t)) == 0,
              "%s: fold_ptr is not the row pointer", name);
    cr_assert(A->nnz == 0 || memcmp(fd->arrays[AMF_A_COLS].data, A->col_idx, (size_t)A->nnz * sizeof(int32_t)) == 0,
              "%s: cols are not the matrix's columns", name);
    const size_t vs = spmvport_value_size(A->precision);
    cr_assert(A->nnz == 0 || memcmp(fd->arrays[AMF_A_VALUES].data, A->values, (size_t)A->nnz * vs) == 0,
              "%s: values are not the matrix's", name);
    cr_assert(fd->value_map == NULL && fd->value_slots == A->nnz, "%s: value_map", name);
    for (int a = 0; a < AMF_A_COUNT; a++)
        if (a != AMF_A_FOLD_PTR && a != AMF_A_COLS && a != AMF_A_VALUES)
            cr_assert_eq(fd->arrays[a].bytes, a == AMF_A_LONG_PIECE ? sizeof(int32_t) : 0, "%s: array %d", name, a);
}

/* Forced (amf_vector = 1: CSR-vector's, 2: CSR-scalar's): the executor against the oracle on the edge-case corpus
 * (W = 32 and 64, both precisions, the long-row matrix among them), the layout on each, and amf_lanes as
 * CSR-vector's lanes (CSR-scalar's: always 1). */
Test(amf_csr, vector_layout_forced)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    for (int p = 0; p < 2; p++) {
        const spmv_precision_t prec = p ? SPMV_F32 : SPMV_F64;
        support_case *cases;
        const int n = support_edge_corpus(prec, &cases);
        spmv_matrix_t *L = long_row_matrix(prec);
        for (int w = 32; w <= 64; w *= 2)
            for (int v = 0; v < 3; v++) {
                const int lanes = v == 1 ? 8 : 0;
                spmv_plan_options_t opt = options(w, 0);
                opt.amf_vector = v == 2 ? 2 : 1;
                opt.amf_lanes = lanes;
                for (int i = 0; i <= n; i++) {
                    const spmv_matrix_t *A = i < n ? cases[i].A : L;
                    const char *name = i < n ? cases[i].name : "long rows";
                    support_check_format(ctx, SPMV_FORMAT_AMF_CSR, &opt, name, A, 0);
                    spmvport_format_data fd;
                    build_with(&fd, A, w, &opt);
                    check_vector_layout(&fd, A, v == 2 ? 1 : lanes ? lanes : spmvport_csr_vector_lanes(A->m, A->nnz, w),
                                        name);
                    cr_assert(support_stat(fd.stats, "vector") == fd.params[AMF_P_VECTOR_LANES], "%s: %s", name,
                              fd.stats);
                    spmvport_format_data_free(&fd);
                }
            }
        spmv_matrix_destroy(L);
        support_cases_free(cases, n);
    }
    spmv_context_destroy(ctx);
}

/* The automatic rule on a GPU model (132 multiprocessors: 8448 resident warps of 32, 4224 of 64; a 60 MiB L2):
 * regular rows that spread little take a CSR mapping where folding does not pay: short rows read locally (and f32
 * short rows below 0.8 L2s) csr_scalar's below 0.8 L2s (spmvport_l2_share) and above 1.9 (f64; 2.15 before session
 * 69) or 1.75 (f32 rows of at most 3 entries), csr_vector's between; other rows csr_vector's where its warps fit in two waves or, in
 * f64 read locally, up to 8M entries. Skewed, bimodal and larger ones keep folds, as do plans on the CPU, with
 * another amf_ option set, or with amf_vector = -1. */
static spmv_matrix_t *rows_of_2_and_20(int32_t m) /* every fifth row 20 entries, the others 2: spread 1.29 */
{
    int32_t *ptr = malloc(((size_t)m + 1) * sizeof *ptr), *col = malloc((size_t)m * 20 * sizeof *col);
    double *val = malloc((size_t)m * 20 * sizeof *val);
    cr_assert(ptr && col && val);
    ptr[0] = 0;
    for (int32_t i = 0, k = 0; i < m; i++) {
        for (int32_t j = 0; j < (i % 5 == 0 ? 20 : 2); j++, k++) col[k] = (i + j * 37) % m, val[k] = 1.0 + j;
        ptr[i + 1] = k;
    }
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, m, m, ptr[m], ptr, col, val, SPMV_F64, 0, SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS);
    free(ptr), free(col), free(val);
    return A;
}

static int64_t vector_lanes_of(const spmv_matrix_t *A, const spmv_device_info_t *dev, const spmv_plan_options_t *opt)
{
    spmvport_format_data fd;
    char msg[SPMVPORT_MSG_LEN] = "";
    cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_AMF_CSR, dev->warp_size, dev, opt, msg, sizeof msg),
                 SPMV_STATUS_SUCCESS, "%s", msg);
    const int64_t lanes = fd.params[AMF_P_VECTOR_LANES];
    if (lanes > 0) check_vector_layout(&fd, A, (int)lanes, "automatic");
    else check_layout(&fd, A, "automatic (folds)");
    spmvport_format_data_free(&fd);
    return lanes;
}

Test(amf_csr, vector_layout_automatic)
{
    spmv_device_info_t gpu = support_gpu_models[0], wave64 = support_gpu_models[0], cpu = {0};
    gpu.multiprocessors = wave64.multiprocessors = 132;
    wave64.warp_size = 64;
    cpu.backend = SPMV_BACKEND_CPU, cpu.warp_size = 32;
    static const struct {
        const char *spec;
        spmv_precision_t precision;
        int lanes32, lanes64; /* expected, 0: folds */
    } cases[] = {
        {"stencil2d:5:100", SPMV_F64, 4, 4},    /* 10000 rows of 5, fewer than 256 a multiprocessor: 1250 warps */
        {"uniform:200000:2", SPMV_F64, 2, 2},   /* 12500 warps of 32 (1.48 waves), 6250 of 64 (1.48) */
        {"uniform:270000:2", SPMV_F64, 2, 2},   /* 16875 warps: just within two waves */
        {"uniform:271000:2", SPMV_F64, 0, 0},   /* 16938: just past, and x read scattered */
        {"uniform:400000:3", SPMV_F64, 0, 0},   /* 25000 warps: 2.96 waves, scattered */
        {"uniform:400000:3", SPMV_F32, 1, 1},   /* f32 scattered short rows within 0.8 L2s: CSR-scalar's */
        {"stencil3d:27:20", SPMV_F64, 16, 16},  /* 8000 rows of about 27 */
        {"fem3d:3:17", SPMV_F32, 32, 0},        /* 14739 rows of about 72, 1.06M entries: 14739 warps at 32 or 64
                                                 * lanes (W = 64: past 8448, f32 keeps folds there) */
        {"fem3d:3:17", SPMV_F64, 32, 64},       /* f64, x read locally: any number of waves */
        {"stencil2d:5:400", SPMV_F32, 1, 1},    /* 160000 rows of 5 read locally, 0.13 L2s: CSR-scalar's */
        {"stencil2d:5:400", SPMV_F64, 1, 1},
        {"banded:898000:1", SPMV_F64, 1, 1},    /* 0.7993 L2s */
        {"banded:899000:1", SPMV_F64, 2, 2},    /* 0.8002: CSR-vector's */
        {"banded:2134000:1", SPMV_F64, 2, 2},   /* 1.8994 */
        {"banded:2135000:1", SPMV_F64, 1, 1},   /* 1.9003: CSR-scalar's again */
        {"banded:1398000:1", SPMV_F32, 1, 1},   /* f32 tridiagonal: 0.7999 L2s */
        {"banded:1399000:1", SPMV_F32, 2, 2},   /* 0.8005 */
        {"banded:3058000:1", SPMV_F32, 2, 2},   /* 1.7498 */
        {"banded:3059000:1", SPMV_F32, 1, 1},   /* 1.7504 */
        {"stencil2d:5:1000", SPMV_F32, 1, 1},   /* f32 rows of 5 at 0.83 L2s, under 0.86: CSR-scalar's */
        {"stencil2d:5:1100", SPMV_F32, 0, 0},   /* 1.00 L2s: folds (the other edges: the 8 MiB cases below) */
        {"stencil2d:5:1000", SPMV_F64, 4, 4},   /* f64 at 1.27 L2s: CSR-vector's */
        {"stencil2d:9:800", SPMV_F32, 1, 1},    /* rows of 9 (more than 8) at 0.85 / 1.30 L2s: CSR-scalar's */
        {"stencil2d:9:800", SPMV_F64, 1, 1},
        {"stencil3d:27:67", SPMV_F64, 16, 16},  /* longer rows, f64 read locally: 7880599 entries, within
                                                 * AMF_VECTOR_F64_MAX_NNZ */
        {"stencil3d:27:68", SPMV_F64, 0, 0},    /* 8242408: past it */
        {"banded:30000:55", SPMV_F32, 32, 0},   /* f32 rows of 110.9 read locally at 3.55 waves: CSR-vector's (W = 64:
                                                 * 64 lanes, 7.1 waves: folds) */
        {"banded:30000:54", SPMV_F32, 0, 0},    /* 108.9 a row: folds */
        {"banded:40550:60", SPMV_F32, 32, 0},   /* 120.9 a row, 4.8000 waves */
        {"banded:40551:60", SPMV_F32, 0, 0},    /* 4.8001 waves: folds */
        {"uniform:30000:120", SPMV_F32, 0, 0},  /* 120 a row at 3.55 waves, read scattered: folds */
        {"circuit:20000", SPMV_F64, 0, 0},      /* skewed */
        {"kron:12:8", SPMV_F64, 0, 0},          /* skewed */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[c].spec, cases[c].precision, 3), SPMV_STATUS_SUCCESS);
        const char *prec = cases[c].precision == SPMV_F32 ? "f32" : "f64";
        spmv_plan_options_t opt = options(0, 0);
        cr_assert_eq(vector_lanes_of(A, &gpu, &opt), cases[c].lanes32, "%s %s on W = 32", cases[c].spec, prec);
        cr_assert_eq(vector_lanes_of(A, &wave64, &opt), cases[c].lanes64, "%s %s on W = 64", cases[c].spec, prec);
        if (cases[c].lanes32 > 0 && A->nnz <= 3000000) { /* the CPU, another amf_ option, or never: folds */
            cr_assert_eq(vector_lanes_of(A, &cpu, &opt), 0, "%s on the CPU", cases[c].spec);
            for (int k = 0; k < 3; k++) {
                spmv_plan_options_t o = options(0, 0);
                if (k == 0) o.amf_vector = -1;
                if (k == 1) o.amf_regular = -1;
                if (k == 2) o.amf_window_cache = 1;
                cr_assert_eq(vector_lanes_of(A, &gpu, &o), 0, "%s, variant %d", cases[c].spec, k);
            }
        }
        spmv_matrix_destroy(A);
    }
    /* rows of 5 (banded:M:2) on an 8 MiB L2: each edge of spmvport_short_rows_mapping between two sizes (f32 folds
       from 0.86 L2s, both precisions a thread a row again past 0.4 L2s of x and y; f64 CSR-vector's from 0.8) */
    static const struct { const char *spec; spmv_precision_t precision; int lanes; } small_l2[] = {
        {"banded:138500:2", SPMV_F32, 1}, {"banded:139000:2", SPMV_F32, 0}, {"banded:419000:2", SPMV_F32, 0},
        {"banded:419500:2", SPMV_F32, 1}, {"banded:83500:2", SPMV_F64, 1},  {"banded:84000:2", SPMV_F64, 4},
        {"banded:209500:2", SPMV_F64, 4}, {"banded:210000:2", SPMV_F64, 1}};
    spmv_device_info_t small = gpu;
    small.l2_bytes = (size_t)8 << 20;
    for (size_t c = 0; c < sizeof small_l2 / sizeof small_l2[0]; c++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, small_l2[c].spec, small_l2[c].precision, 3), SPMV_STATUS_SUCCESS);
        spmv_plan_options_t opt = options(0, 0);
        cr_assert_eq(vector_lanes_of(A, &small, &opt), small_l2[c].lanes, "%s %s on an 8 MiB L2", small_l2[c].spec,
                     small_l2[c].precision == SPMV_F32 ? "f32" : "f64");
        spmv_matrix_destroy(A);
    }
    spmv_matrix_t *B = rows_of_2_and_20(5000); /* regular (longest 20 <= 2 x 5.6 + 16), spread 1.29: folds */
    spmv_plan_options_t opt = options(0, 0);
    cr_assert_eq(vector_lanes_of(B, &gpu, &opt), 0);
    opt.amf_vector = 1;
    cr_assert_eq(vector_lanes_of(B, &cpu, &opt), 4, "forced, the CPU too");
    spmv_matrix_destroy(B);
}
