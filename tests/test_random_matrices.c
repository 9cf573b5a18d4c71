/*
 * test_random_matrices.c -- random matrices, device models and options against the oracle (a fixed-seed fuzzer):
 *   each seed draws a matrix (a small generated one, or random rows: constant, uniform, power-law or mostly short
 *   with dense rows; columns uniform, near the diagonal, in shared runs or on a few hot columns; empty rows, a dense
 *   row, a dense column; values over 12 orders of magnitude), then four builds of a random format for a random
 *   device model (four GPUs, the CPU at warp size 32 and 64) with up to four random options of that format.
 *   A build either succeeds, prints nothing on stdout and its CPU executor matches the oracle's bound
 *   (support_check_executor: three alpha/beta cases, y poisoned when beta = 0), or refuses with
 *   SPMV_STATUS_INVALID_ARGUMENT / NOT_SUPPORTED and a message. The session-56 fuzzer that this test keeps found
 *   METIS printing on stdout from inside ehyb (test_format_ehyb.c: many_parts_on_hubs_print_nothing).
 *   broken_matrices (session 60): the same matrices with one thing broken, given to every builder directly.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* ---- the seed's numbers (support.c's SplitMix64) ------------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rng_next(void) { return support_splitmix(&rng_state); }
static int rng_int(int lo, int hi) { return lo + (int)(rng_next() % (uint64_t)(hi - lo + 1)); } /* [lo, hi] */
static double rng_unit(void) { return (double)(rng_next() >> 11) / 9007199254740992.0; }     /* [0, 1) */

/* ---- random matrices ------------------------------------------------------------------------------------------ */

static spmv_matrix_t *generated_matrix(spmv_precision_t p, char *desc, size_t len)
{
    char spec[64];
    switch (rng_int(0, 3)) {
    case 0:
        if (rng_int(0, 2) < 2) snprintf(spec, sizeof spec, "stencil2d:%d:%d", rng_int(0, 1) ? 5 : 9, rng_int(1, 90));
        else snprintf(spec, sizeof spec, "stencil3d:%d:%d", rng_int(0, 1) ? 7 : 27, rng_int(1, 24));
        break;
    case 1: snprintf(spec, sizeof spec, "fem3d:%d:%d", rng_int(1, 9), rng_int(1, 12)); break;
    case 2:
        const int rows = rng_int(1, 30000), cols = rng_int(1, 12000); /* uniform's and lp's K are at most M, N */
        switch (rng_int(0, 3)) {
        case 0: snprintf(spec, sizeof spec, "kron:%d:%d", rng_int(2, 13), rng_int(1, 20)); break;
        case 1: snprintf(spec, sizeof spec, "circuit:%d", rng_int(1, 40000)); break;
        case 2: snprintf(spec, sizeof spec, "uniform:%d:%d", rows, rng_int(1, rows < 12 ? rows : 12)); break;
        default: snprintf(spec, sizeof spec, "lp:%d:%d:%d", rows % 5000 + 1, cols, rng_int(1, cols < 12 ? cols : 12));
        }
        break;
    default: snprintf(spec, sizeof spec, "banded:%d:%d", rng_int(1, 30000), rng_int(1, 40));
    }
    snprintf(desc, len, "%s", spec);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, spec, p, rng_next() % 1000), SPMV_STATUS_SUCCESS, "%s", spec);
    return A;
}

static int compare_int32(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Random rows; columns sorted and unique per row. */
static spmv_matrix_t *random_rows(spmv_precision_t p, char *desc, size_t len)
{
    const int m = rng_int(0, 1) ? rng_int(1, 40) : rng_int(1, 6000);
    const int n = rng_int(0, 3) == 0 ? rng_int(1, 40) : rng_int(0, 1) ? m : rng_int(1, 6000);
    const int lengths = rng_int(0, 3), columns = rng_int(0, 3), kmax = rng_int(0, 1) ? rng_int(0, 8) : rng_int(0, 64);
    const double empty = rng_int(0, 2) == 0 ? 0.6 * rng_unit() : 0;
    const int dense_row = rng_int(0, 5) == 0 ? rng_int(0, m - 1) : -1;
    const int dense_col = rng_int(0, 5) == 0 ? rng_int(0, n - 1) : -1;
    const int band = rng_int(1, 40), hot = rng_int(1, 64), group = rng_int(1, 16);
    int32_t *row_ptr = malloc(sizeof(int32_t) * ((size_t)m + 1)), *row = malloc(sizeof(int32_t) * ((size_t)n + 1));
    int64_t cap = 1 << 16, nnz = 0;
    int32_t *col = malloc(sizeof(int32_t) * (size_t)cap);
    cr_assert(row_ptr && row && col);
    row_ptr[0] = 0;
    for (int i = 0; i < m; i++) {
        int k = lengths == 0   ? kmax
                : lengths == 1 ? rng_int(0, kmax)
                : lengths == 2 ? (int)(1.0 / pow(rng_unit() + 1e-6, 0.7)) /* power law */
                : rng_int(0, 30) == 0 ? rng_int(0, n) : rng_int(0, 2); /* short rows, some dense */
        if (rng_unit() < empty) k = 0;
        if (i == dense_row || k > n) k = n;
        int c = 0;
        if (k == n) {
            for (int j = 0; j < n; j++) row[c++] = j;
        } else if (columns == 2) { /* rows of one group share a run of k columns */
            const int first = (int)(((int64_t)(i / group) * 7919) % (n - k + 1));
            for (int j = 0; j < k; j++) row[c++] = first + j;
        } else {
            for (int t = 0; t < k; t++)
                row[c++] = columns == 0 ? rng_int(0, n - 1)
                           : columns == 1 ? (int)((((int64_t)i * n / m + rng_int(-band, band)) % n + n) % n)
                           : rng_int(0, 1) ? rng_int(0, (hot < n ? hot : n) - 1) : rng_int(0, n - 1);
            qsort(row, (size_t)c, sizeof *row, compare_int32);
            int u = 0;
            for (int t = 0; t < c; t++)
                if (u == 0 || row[u - 1] != row[t]) row[u++] = row[t];
            c = u;
        }
        if (dense_col >= 0 && c < n) {
            int has = 0;
            for (int t = 0; t < c; t++) has |= row[t] == dense_col;
            if (!has) row[c++] = dense_col, qsort(row, (size_t)c, sizeof *row, compare_int32);
        }
        while (nnz + c > cap) cap *= 2, col = realloc(col, sizeof(int32_t) * (size_t)cap);
        cr_assert(col);
        memcpy(col + nnz, row, sizeof(int32_t) * (size_t)c);
        nnz += c;
        row_ptr[i + 1] = (int32_t)nnz;
    }
    const size_t vs = p == SPMV_F32 ? sizeof(float) : sizeof(double);
    void *val = malloc(vs * ((size_t)nnz + 1));
    cr_assert(val);
    for (int64_t e = 0; e < nnz; e++) {
        const double x = (2 * rng_unit() - 1) * (rng_int(0, 20) == 0 ? 1e6 : 1);
        if (p == SPMV_F32) ((float *)val)[e] = (float)x;
        else ((double *)val)[e] = x;
    }
    snprintf(desc, len, "random m=%d n=%d nnz=%lld lengths=%d columns=%d kmax=%d empty=%.2f dense row %d col %d", m, n,
             (long long)nnz, lengths, columns, kmax, empty, dense_row, dense_col);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, m, n, (int32_t)nnz, row_ptr, col, val, p, 0, 0), SPMV_STATUS_SUCCESS,
                 "%s", desc);
    free(row_ptr), free(row), free(col), free(val);
    return A;
}

/* ---- formats, their options, device models ------------------------------------------------------------------ */

typedef struct {
    const char *name;
    size_t offset;
} option_field;
#define OPTION(f) {#f, offsetof(spmv_plan_options_t, f)}

static const option_field tile_options[] = {
    OPTION(tile_variant),     OPTION(tile_deferred_coo),  OPTION(tile_deferred_threshold), OPTION(tile_balance),
    OPTION(tile_inflight),    OPTION(tile_band_batch),    OPTION(tile_band_tasks),         OPTION(tile_csr_steps),
    OPTION(tile_group_tasks), OPTION(tile_deferred_inline), OPTION(tile_csr_shuffle),      OPTION(tile_dense_percent),
    OPTION(tile_coo_max),     OPTION(tile_ell_cv_percent), OPTION(tile_block_tasks),       {NULL, 0}};
static const option_field hbp_options[] = {
    OPTION(hbp_block_rows), OPTION(hbp_block_cols), OPTION(hbp_combine),    OPTION(hbp_grouping), OPTION(hbp_steps),
    OPTION(hbp_prefetch),   OPTION(hbp_tails),      OPTION(hbp_ctas),       OPTION(hbp_hot),
    OPTION(hbp_unit_trips),
    OPTION(hbp_order),      OPTION(hbp_task_blocks), OPTION(hbp_hot_copy), OPTION(hbp_y_stage), {NULL, 0}};
static const option_field amf_options[] = {
    OPTION(amf_fixed_fold), OPTION(amf_lanes),    OPTION(amf_waves),        OPTION(amf_min_blocks),
    OPTION(amf_values),     OPTION(amf_resident), OPTION(amf_uniform),      OPTION(amf_one_step),
    OPTION(amf_window_cache), OPTION(amf_step_window), OPTION(amf_regular), OPTION(amf_vector),
    {NULL, 0}};
static const option_field csr_options[] = {OPTION(lb_hot), {NULL, 0}};
static const option_field teb_options[] = {OPTION(teb_blocks), {NULL, 0}};
static const option_field ehyb_options[] = {OPTION(ehyb_batch), OPTION(ehyb_parts), OPTION(ehyb_halo),
                                            OPTION(ehyb_split), {NULL, 0}};

static const struct {
    spmv_format_t format;
    spmvport_cpu_executor run;
    const option_field *options;
} formats[] = {{SPMV_FORMAT_CSR_SCALAR, spmvport_cpu_csr_scalar, csr_options},
               {SPMV_FORMAT_CSR_VECTOR, spmvport_cpu_csr_vector, csr_options},
               {SPMV_FORMAT_CSR_LB, spmvport_cpu_csr_lb, csr_options},
               {SPMV_FORMAT_TILE, spmvport_cpu_tile, tile_options},
               {SPMV_FORMAT_HBP, spmvport_cpu_hbp, hbp_options},
               {SPMV_FORMAT_AMF_CSR, spmvport_cpu_amf_csr, amf_options},
               {SPMV_FORMAT_TEB, spmvport_cpu_teb, teb_options},
               {SPMV_FORMAT_EHYB, spmvport_cpu_ehyb, ehyb_options}};

/* The GPU models of support.c, then the CPU at warp size 32 and 64. */
static const spmv_device_info_t cpu_models[] = {{.backend = SPMV_BACKEND_CPU, .name = "CPU w32", .warp_size = 32},
                                                {.backend = SPMV_BACKEND_CPU, .name = "CPU w64", .warp_size = 64}};

/* Values an option is drawn from: in range, at the edges and out of range. */
static const int option_values[] = {-2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 24, 32, 33, 64, 100, 128,
                                    256, 512, 1000, 4096, 1 << 20};

/* ---- one build -------------------------------------------------------------------------------------------------- */

static void one_build(const spmv_matrix_t *A, const char *desc, uint64_t seed)
{
    const int f = rng_int(0, (int)(sizeof formats / sizeof formats[0]) - 1);
    const int d = rng_int(0, SUPPORT_GPU_MODELS + 1);
    const spmv_device_info_t *dev =
        d < SUPPORT_GPU_MODELS ? &support_gpu_models[d] : &cpu_models[d - SUPPORT_GPU_MODELS];
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    char what[512];
    int used = snprintf(what, sizeof what, "seed %llu: %s on %s, %s, %s", (unsigned long long)seed,
                        spmv_format_name(formats[f].format), dev->name, A->precision == SPMV_F32 ? "f32" : "f64", desc);
    int count = 0;
    while (formats[f].options[count].name != NULL) count++;
    for (int k = rng_int(0, 1) ? rng_int(1, 4) : 0; k > 0; k--) {
        const option_field *o = &formats[f].options[rng_int(0, count - 1)];
        const int v = option_values[rng_int(0, (int)(sizeof option_values / sizeof option_values[0]) - 1)];
        *(int *)(void *)((char *)&opt + o->offset) = v;
        if (used > 0 && (size_t)used < sizeof what) used += snprintf(what + used, sizeof what - (size_t)used, " %s=%d",
                                                                     o->name, v);
    }
    /* the options spmv_plan_create checks before any builder: valid values only */
    if (rng_int(0, 3) == 0) opt.lanes_per_row = 1 << rng_int(0, dev->warp_size == 64 ? 6 : 5);
    if (rng_int(0, 3) == 0) opt.nnz_per_warp = dev->warp_size * rng_int(1, 16);
    spmvport_format_data fd;
    char msg[SPMVPORT_MSG_LEN] = "";
    long printed = 0;
    const spmv_status_t st =
        support_build_quietly(&fd, A, formats[f].format, dev->warp_size, dev, &opt, msg, sizeof msg, &printed);
    cr_assert_eq(printed, 0, "%s: the build printed %ld bytes on stdout", what, printed);
    if (st != SPMV_STATUS_SUCCESS) {
        cr_assert(st == SPMV_STATUS_INVALID_ARGUMENT || st == SPMV_STATUS_NOT_SUPPORTED, "%s: status %s (%s)", what,
                  spmv_status_string(st), msg);
        cr_assert(msg[0] != 0, "%s: refused (%s) without a message", what, spmv_status_string(st));
        return;
    }
    support_check_executor(&fd, formats[f].run, A, what);
    spmvport_format_data_free(&fd);
}

/* Seeds [first, first + count); SPMVPORT_TEST_QUICK (the sanitizer build): a quarter of them. */
static void random_matrices(uint64_t first, uint64_t count)
{
    if (getenv("SPMVPORT_TEST_QUICK")) count /= 4;
    for (uint64_t seed = first; seed < first + count; seed++) {
        rng_state = seed;
        const spmv_precision_t p = rng_int(0, 1) ? SPMV_F32 : SPMV_F64;
        char desc[160];
        spmv_matrix_t *A =
            rng_int(0, 9) < 6 ? random_rows(p, desc, sizeof desc) : generated_matrix(p, desc, sizeof desc);
        for (int b = 0; b < 4; b++) one_build(A, desc, seed);
        spmv_matrix_destroy(A);
    }
}

Test(random_matrices, seeds_1_to_200, .timeout = 900) { random_matrices(1, 200); }
Test(random_matrices, seeds_201_to_400, .timeout = 900) { random_matrices(201, 200); }
Test(random_matrices, seeds_401_to_600, .timeout = 900) { random_matrices(401, 200); }

/* ---- broken matrices ---------------------------------------------------------------------------------------------
 * spmv_matrix_create_csr and the readers make every matrix valid (columns in range, sorted and unique in a row); a
 * direct caller of spmvport_format_build can pass anything. Each seed draws a matrix, copies its arrays, breaks one
 * thing and builds every format for a random device model:
 *   out of range (a column below 0 or at n and beyond, a row pointer going down, not starting at 0 or not ending at
 *   nnz): INVALID_MATRIX with a message naming the format, nothing kept;
 *   in range (two columns of a row swapped, or one repeated): refused with a message, or the plan computes what the
 *   oracle computes from the same arrays (it sums every entry it is given). The sanitizer build catches reads out
 *   of bounds. */

typedef enum { BREAK_COLUMN_LOW, BREAK_COLUMN_HIGH, BREAK_ROW_DOWN, BREAK_FIRST_ROW, BREAK_LAST_ROW, BREAK_SWAP,
               BREAK_REPEAT, BREAK_KINDS } break_kind;

static const char *const break_names[] = {"column < 0", "column >= n", "row pointer down", "row_ptr[0] != 0",
                                          "row_ptr[m] != nnz", "two columns swapped", "a column repeated"};

/* Breaks a copy of A's arrays (B's three, which the caller frees); 0 where A has nothing this kind can break. */
static int break_matrix(const spmv_matrix_t *A, break_kind kind, struct spmv_matrix *B, char *what, size_t len)
{
    *B = *A;
    const size_t vs = spmvport_value_size(A->precision);
    B->row_ptr = malloc(sizeof(int32_t) * ((size_t)A->m + 1));
    B->col_idx = malloc(sizeof(int32_t) * ((size_t)A->nnz + 1));
    B->values = malloc(vs * ((size_t)A->nnz + 1));
    B->src_map = NULL;
    cr_assert(B->row_ptr && B->col_idx && B->values);
    memcpy(B->row_ptr, A->row_ptr, sizeof(int32_t) * ((size_t)A->m + 1));
    memcpy(B->col_idx, A->col_idx, sizeof(int32_t) * (size_t)A->nnz);
    memcpy(B->values, A->values, vs * (size_t)A->nnz);
    int32_t two = -1; /* a row of two entries or more, for the in-range kinds */
    for (int t = 0; t < 8 && two < 0; t++) {
        const int32_t i = rng_int(0, A->m - 1);
        if (A->row_ptr[i + 1] - A->row_ptr[i] >= 2) two = i;
    }
    for (int32_t i = 0; i < A->m && two < 0; i++)
        if (A->row_ptr[i + 1] - A->row_ptr[i] >= 2) two = i;
    const int32_t e = A->nnz > 0 ? rng_int(0, A->nnz - 1) : -1;
    switch (kind) {
    case BREAK_COLUMN_LOW:
        if (e < 0) return 0;
        B->col_idx[e] = rng_int(0, 1) ? -1 : rng_int(0, 1) ? INT32_MIN : -rng_int(2, 1 << 30);
        snprintf(what, len, "entry %d's column %d", e, B->col_idx[e]);
        return 1;
    case BREAK_COLUMN_HIGH:
        if (e < 0) return 0;
        B->col_idx[e] = rng_int(0, 1) ? A->n : rng_int(0, 1) ? INT32_MAX : A->n + rng_int(1, 1 << 30);
        snprintf(what, len, "entry %d's column %d", e, B->col_idx[e]);
        return 1;
    case BREAK_ROW_DOWN: { /* row r - 1 ends before it starts (r < m: row_ptr[m] stays nnz) */
        if (A->m < 2) return 0;
        const int32_t r = rng_int(1, A->m - 1);
        B->row_ptr[r] = B->row_ptr[r - 1] - 1 - rng_int(0, 3);
        snprintf(what, len, "row_ptr[%d] = %d below row_ptr[%d]", r, B->row_ptr[r], r - 1);
        return 1;
    }
    case BREAK_FIRST_ROW:
        B->row_ptr[0] = rng_int(0, 1) ? -rng_int(1, 100) : B->row_ptr[1] + 1;
        snprintf(what, len, "row_ptr[0] = %d", B->row_ptr[0]);
        return 1;
    case BREAK_LAST_ROW:
        B->row_ptr[A->m] = A->nnz + (rng_int(0, 1) ? 1 : -1);
        snprintf(what, len, "row_ptr[m] = %d for %d entries", B->row_ptr[A->m], A->nnz);
        return 1;
    case BREAK_SWAP: {
        if (two < 0) return 0;
        const int32_t k = rng_int(A->row_ptr[two], A->row_ptr[two + 1] - 2);
        const int32_t c = B->col_idx[k];
        B->col_idx[k] = B->col_idx[k + 1], B->col_idx[k + 1] = c;
        snprintf(what, len, "row %d's entries %d and %d swapped", two, k, k + 1);
        return 1;
    }
    default: { /* BREAK_REPEAT */
        if (two < 0) return 0;
        const int32_t k = rng_int(A->row_ptr[two], A->row_ptr[two + 1] - 2);
        B->col_idx[k + 1] = B->col_idx[k];
        snprintf(what, len, "row %d's column %d repeated at entry %d", two, B->col_idx[k], k + 1);
        return 1;
    }
    }
}

static void broken_matrices(uint64_t first, uint64_t count)
{
    if (getenv("SPMVPORT_TEST_QUICK")) count /= 4;
    for (uint64_t seed = first; seed < first + count; seed++) {
        rng_state = seed;
        const spmv_precision_t p = rng_int(0, 1) ? SPMV_F32 : SPMV_F64;
        char desc[160], broke[96];
        spmv_matrix_t *A =
            rng_int(0, 9) < 6 ? random_rows(p, desc, sizeof desc) : generated_matrix(p, desc, sizeof desc);
        const break_kind kind = (break_kind)rng_int(0, BREAK_KINDS - 1);
        struct spmv_matrix B;
        if (A->m == 0 || !break_matrix(A, kind, &B, broke, sizeof broke)) {
            if (A->m > 0) free(B.row_ptr), free(B.col_idx), free(B.values);
            spmv_matrix_destroy(A);
            continue;
        }
        const int d = rng_int(0, SUPPORT_GPU_MODELS + 1);
        const spmv_device_info_t *dev =
            d < SUPPORT_GPU_MODELS ? &support_gpu_models[d] : &cpu_models[d - SUPPORT_GPU_MODELS];
        for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
            const char *name = spmv_format_name(formats[f].format);
            char what[512];
            snprintf(what, sizeof what, "seed %llu: %s on %s, %s, %s; broken: %s (%s)", (unsigned long long)seed, name,
                     dev->name, p == SPMV_F32 ? "f32" : "f64", desc, break_names[kind], broke);
            spmv_plan_options_t opt;
            spmv_plan_options_init(&opt);
            spmvport_format_data fd;
            char msg[SPMVPORT_MSG_LEN] = "";
            long printed = 0;
            const spmv_status_t st = support_build_quietly(&fd, &B, formats[f].format, dev->warp_size, dev, &opt, msg,
                                                           sizeof msg, &printed);
            cr_assert_eq(printed, 0, "%s: the build printed %ld bytes on stdout", what, printed);
            if (formats[f].format == SPMV_FORMAT_EHYB && st == SPMV_STATUS_NOT_SUPPORTED) continue; /* no METIS */
            if (kind < BREAK_SWAP || st != SPMV_STATUS_SUCCESS) {
                cr_assert_eq(st, SPMV_STATUS_INVALID_MATRIX, "%s: %s (%s)", what, spmv_status_string(st), msg);
                cr_assert(strstr(msg, name) != NULL, "%s: the message '%s' names no format", what, msg);
                cr_assert_eq(fd.narrays, 0, "%s: nothing kept", what);
                continue;
            }
            support_check_executor(&fd, formats[f].run, &B, what);
            spmvport_format_data_free(&fd);
        }
        free(B.row_ptr), free(B.col_idx), free(B.values);
        spmv_matrix_destroy(A);
    }
}

Test(broken_matrices, seeds_1_to_300, .timeout = 900) { broken_matrices(1, 300); }
