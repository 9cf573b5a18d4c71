/*
 * test_format_csr_lb.c -- csr_lb's split (format_csr.c) on the edge-case corpus at warp sizes 32 and 64 and several
 * chunk sizes; the executor's results are checked against the oracle in test_cpu_executors.c and gpu_suite.h. Also
 * AUTO's rules (format_choose).
 */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "format_builders.h"
#include "lb_split_check.h"

static void check_corpus_split(int warp, int chunk)
{
    support_case *cases = NULL;
    const int count = support_edge_corpus(SPMV_F64, &cases);
    for (int i = 0; i < count; i++) {
        const spmv_matrix_t *A = cases[i].A;
        spmvport_format_data fd;
        spmv_plan_options_t opt;
        char msg[256] = "";
        spmv_plan_options_init(&opt);
        opt.nnz_per_warp = chunk;
        cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_CSR_LB, warp, NULL, &opt, msg, sizeof msg),
                     SPMV_STATUS_SUCCESS, "%s: %s", cases[i].name, msg);
        cr_assert_eq(fd.narrays, SPMVPORT_CSR_LB_NARRAYS, "%s: arrays", cases[i].name);
        check_lb_split(fd.arrays + SPMVPORT_CSR_LB_SPLIT, A->row_ptr, A->m, A->nnz, fd.params[SPMVPORT_P_NNZ_PER_WARP],
                       fd.params[SPMVPORT_P_NWARPS], fd.params[SPMVPORT_P_LB_EMPTY], cases[i].name);
        cr_assert(strstr(fd.stats, "empty_rows=") != NULL, "%s: stats '%s'", cases[i].name, fd.stats);
        spmvport_format_data_free(&fd);
    }
    support_cases_free(cases, count);
}

Test(csr_lb_split, corpus_w32_default) { check_corpus_split(32, 0); }
Test(csr_lb_split, corpus_w64_default) { check_corpus_split(64, 0); }
Test(csr_lb_split, corpus_w32_one_warp_chunks) { check_corpus_split(32, 32); }
Test(csr_lb_split, corpus_w64_long_chunks) { check_corpus_split(64, 1024); }

/* Runs of thousands of empty rows between single entries (NotreDame_www has runs of 5,308): the split lists
 * them, no chunk walks them, and the executor writes y = beta*y there. */
Test(csr_lb_split, empty_row_runs)
{
    const int32_t m = 20000;
    int32_t *ptr = malloc(((size_t)m + 1) * sizeof(int32_t)), *col = malloc(8 * sizeof(int32_t));
    double *val = malloc(8 * sizeof(double));
    int32_t nnz = 0;
    for (int32_t r = 0; r < m; r++) {
        ptr[r] = nnz;
        if (r % 5000 == 4999 && nnz < 8) col[nnz] = r % 7, val[nnz++] = 1.0 + r;
    }
    ptr[m] = nnz;
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, m, 7, nnz, ptr, col, val, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);
    spmvport_format_data fd;
    spmv_plan_options_t opt;
    char msg[256] = "";
    spmv_plan_options_init(&opt);
    cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_CSR_LB, 32, NULL, &opt, msg, sizeof msg),
                 SPMV_STATUS_SUCCESS, "%s", msg);
    cr_assert_eq(fd.params[SPMVPORT_P_LB_EMPTY], m - nnz);
    check_lb_split(fd.arrays + SPMVPORT_CSR_LB_SPLIT, ptr, m, nnz, fd.params[SPMVPORT_P_NNZ_PER_WARP],
                   fd.params[SPMVPORT_P_NWARPS], fd.params[SPMVPORT_P_LB_EMPTY], "empty runs");
    spmvport_format_data_free(&fd);

    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    cr_assert_geq(support_check_format(ctx, SPMV_FORMAT_CSR_LB, NULL, "empty runs", A, 0), 0.0);
    spmv_context_destroy(ctx);
    spmv_matrix_destroy(A);
    free(ptr), free(col), free(val);
}

/* spmvport_x_sector_use on matrices whose answer is known: 64 x 256, one entry a row. Column r (the diagonal):
 * each group of 32 rows reads 32 consecutive x, 8 sectors of 4 doubles or 4 of 8 floats: 0.25 / 0.125. Column
 * 4 r: every entry its own f64 sector (1.0), two f32 entries a sector (0.5). Rows of skip_len or more entries are
 * left out (skip_len 1: all, 0 entries: 0); no entries: 0. */
static double x_sectors_for(int32_t stride, spmv_precision_t precision, int32_t skip_len)
{
    int32_t ptr[65], col[64];
    double val[64];
    for (int32_t r = 0; r <= 64; r++) ptr[r] = r;
    for (int32_t r = 0; r < 64; r++) col[r] = stride * r, val[r] = 1.0;
    spmv_matrix_t *A = NULL, *B = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, 64, 256, 64, ptr, col, val, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);
    if (precision == SPMV_F32) {
        cr_assert_eq(spmv_matrix_convert(&B, A, SPMV_F32), SPMV_STATUS_SUCCESS);
        spmv_matrix_destroy(A);
        A = B;
    }
    const double v = spmvport_x_sector_use(A, skip_len);
    spmv_matrix_destroy(A);
    return v;
}

Test(format_choose, x_sector_use)
{
    cr_assert_float_eq(x_sectors_for(1, SPMV_F64, INT32_MAX), 0.25, 1e-12);
    cr_assert_float_eq(x_sectors_for(1, SPMV_F32, INT32_MAX), 0.125, 1e-12);
    cr_assert_float_eq(x_sectors_for(4, SPMV_F64, INT32_MAX), 1.0, 1e-12);
    cr_assert_float_eq(x_sectors_for(4, SPMV_F32, INT32_MAX), 0.5, 1e-12);
    cr_assert_float_eq(x_sectors_for(4, SPMV_F64, 1), 0.0, 1e-12);
    /* a full group (32 rows of 32 = 1024 entries, the sample's cap), f64: every row the same 32 columns 8 apart
     * (32 sectors: 1/32), or its own 32 columns 4 apart (1024 sectors: 1) */
    for (int shared = 0; shared <= 1; shared++) {
        int32_t gptr[33], *gcol = malloc(1024 * sizeof *gcol);
        double *gval = malloc(1024 * sizeof *gval);
        cr_assert(gcol && gval);
        for (int32_t r = 0; r <= 32; r++) gptr[r] = 32 * r;
        for (int32_t k = 0; k < 1024; k++) gcol[k] = shared ? 8 * (k % 32) : 4 * k, gval[k] = 1.0;
        spmv_matrix_t *G = NULL;
        cr_assert_eq(spmv_matrix_create_csr(&G, 32, 4096, 1024, gptr, gcol, gval, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);
        cr_assert_float_eq(spmvport_x_sector_use(G, INT32_MAX), shared ? 1.0 / 32 : 1.0, 1e-12);
        spmv_matrix_destroy(G);
        free(gcol);
        free(gval);
    }
    spmv_matrix_t *E = NULL;
    int32_t eptr[4] = {0, 0, 0, 0};
    cr_assert_eq(spmv_matrix_create_csr(&E, 3, 3, 0, eptr, NULL, NULL, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);
    cr_assert_float_eq(spmvport_x_sector_use(E, INT32_MAX), 0.0, 1e-12);
    spmv_matrix_destroy(E);
}

/* An H200-like CUDA device (32 lanes, 132 multiprocessors) whose L2 cache holds l2_bytes: 1024 puts every
 * matrix beyond it, 60 MB is the H200's. */
static spmv_device_info_t gpu_with_l2(size_t l2_bytes)
{
    spmv_device_info_t gpu;
    memset(&gpu, 0, sizeof gpu);
    gpu.backend = SPMV_BACKEND_CUDA, gpu.warp_size = 32, gpu.multiprocessors = 132, gpu.l2_bytes = l2_bytes;
    return gpu;
}

/* AUTO on a GPU whose L2 holds l2_bytes (60 MB: the H200's, 50 MiB: the H100's) for each generated case, in its
 * precision. */
typedef struct { const char *spec; int f32; spmv_format_t want; } l2_case;
static void check_choices_in_l2(const l2_case *cases, size_t n, size_t l2_bytes)
{
    const spmv_device_info_t gpu = gpu_with_l2(l2_bytes);
    for (size_t i = 0; i < n; i++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, cases[i].f32 ? SPMV_F32 : SPMV_F64, 42),
                     SPMV_STATUS_SUCCESS);
        const spmv_format_t got = spmvport_format_choose(A, &gpu);
        cr_assert_eq(got, cases[i].want, "%s %s: AUTO chose %s, expected %s", cases[i].spec,
                     cases[i].f32 ? "f32" : "f64", spmv_format_name(got), spmv_format_name(cases[i].want));
        spmv_matrix_destroy(A);
    }
}

/* The same matrix on the CPU backend (with the GPU's L2 figure): short rows keep csr_scalar there. */
static void check_cpu_takes_csr_scalar(const char *spec, spmv_precision_t precision, size_t l2_bytes)
{
    spmv_device_info_t cpu = gpu_with_l2(l2_bytes);
    cpu.backend = SPMV_BACKEND_CPU;
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, spec, precision, 42), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmvport_format_choose(A, &cpu), SPMV_FORMAT_CSR_SCALAR, "%s on the CPU", spec);
    spmv_matrix_destroy(A);
}

/* Regular rows of more than 12 entries within L2: csr_vector, but amf_csr in f32 from 1M entries (fem3d:3:20, 1.76M
 * entries, 14 MB in f32; fem3d:3:16, 0.88M, keeps csr_vector); f64 keeps csr_vector at any size within L2. */
Test(format_choose, f32_regular_rows_in_l2)
{
    static const l2_case cases[] = {
        {"fem3d:3:20", 1, SPMV_FORMAT_AMF_CSR}, {"fem3d:3:20", 0, SPMV_FORMAT_CSR_VECTOR},
        {"fem3d:3:16", 1, SPMV_FORMAT_CSR_VECTOR}, {"fem3d:3:16", 0, SPMV_FORMAT_CSR_VECTOR}};
    check_choices_in_l2(cases, sizeof cases / sizeof cases[0], (size_t)60 << 20);
}

/* Short regular rows with random columns within L2 take amf_csr in f64 from 3M entries (uniform:1000000:3), from 0.9M
 * for more than 4 a row (lp:200000:200000:5, 1M), csr_scalar below (uniform:200000:3, uniform:400000:3 at 1.2M,
 * lp:150000:150000:5 at 0.75M) and in f32; the stencil's short rows (x read along diagonals) keep csr_scalar (from
 * 3M entries tile: f64_stencils_within_l2_from_3m_entries). */
Test(format_choose, scattered_short_rows_in_l2)
{
    static const l2_case cases[] = {
        {"uniform:1000000:3", 0, SPMV_FORMAT_AMF_CSR},      {"uniform:1000000:3", 1, SPMV_FORMAT_CSR_SCALAR},
        {"uniform:200000:3", 0, SPMV_FORMAT_CSR_SCALAR},    {"stencil2d:5:750", 0, SPMV_FORMAT_CSR_SCALAR},
        {"uniform:400000:3", 0, SPMV_FORMAT_CSR_SCALAR},    {"lp:200000:200000:5", 0, SPMV_FORMAT_AMF_CSR},
        {"lp:200000:200000:5", 1, SPMV_FORMAT_CSR_SCALAR},  {"lp:150000:150000:5", 0, SPMV_FORMAT_CSR_SCALAR}};
    check_choices_in_l2(cases, sizeof cases / sizeof cases[0], (size_t)60 << 20);
}

/* The stencil test on hand-made patterns beyond L2 (1 KiB), every row the same offsets (clipped at the matrix's
 * edges; odd rows without their first `holes` offsets): diagonals in runs of at most 7 that lie at least two tile
 * widths apart take tile; a run of 8 adjacent diagonals, runs 28 apart (one tile can hold both: 63 diagonals), 65
 * distinct diagonals and diagonals under 90% full do not. */
static spmv_format_t choose_offsets_holes(const int *off, int noff, int m, int holes)
{
    int32_t *ptr = malloc(((size_t)m + 1) * sizeof *ptr), *col = malloc((size_t)m * noff * sizeof *col);
    double *val = malloc((size_t)m * noff * sizeof *val);
    cr_assert(ptr && col && val);
    int32_t nnz = 0;
    ptr[0] = 0;
    for (int i = 0; i < m; i++) {
        for (int k = (i & 1) ? holes : 0; k < noff; k++) {
            const int c = i + off[k];
            if (c >= 0 && c < m) col[nnz] = c, val[nnz++] = 1.0;
        }
        ptr[i + 1] = nnz;
    }
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, m, m, nnz, ptr, col, val, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);
    const spmv_device_info_t gpu = gpu_with_l2(1024);
    const spmv_format_t f = spmvport_format_choose(A, &gpu);
    spmv_matrix_destroy(A);
    free(ptr), free(col), free(val);
    return f;
}

static spmv_format_t choose_offsets(const int *off, int noff, int m)
{
    return choose_offsets_holes(off, noff, m, 0);
}

Test(format_choose, stencil_diagonals_take_tile)
{
    const int m = 20000; /* the edges clip few entries: 8.7 a row on the 9-point pattern */
    const int nine[] = {-1001, -1000, -999, -1, 0, 1, 999, 1000, 1001};
    cr_assert_eq(choose_offsets(nine, 9, m), SPMV_FORMAT_TILE);
    const int seven_run[] = {-300, -3, -2, -1, 0, 1, 2, 3, 300, 600}; /* a run of 7 and three single diagonals */
    cr_assert_eq(choose_offsets(seven_run, 10, m), SPMV_FORMAT_TILE);
    const int eight_run[] = {-300, -3, -2, -1, 0, 1, 2, 3, 4, 300};
    cr_assert_neq(choose_offsets(eight_run, 10, m), SPMV_FORMAT_TILE, "a run of 8 adjacent diagonals");
    const int near[] = {-31, -30, -29, -1, 0, 1, 29, 30, 31}; /* gaps of 28 < 2 tile widths: one run of 63 */
    cr_assert_neq(choose_offsets(near, 9, m), SPMV_FORMAT_TILE, "runs closer than two tile widths");
    const int apart[] = {-64, -63, -62, -1, 0, 1, 62, 63, 64}; /* gaps of 61 */
    cr_assert_eq(choose_offsets(apart, 9, m), SPMV_FORMAT_TILE);
    int many[65]; /* 65 distinct diagonals, 40 apart: one too many */
    for (int k = 0; k < 65; k++) many[k] = (k - 32) * 40;
    cr_assert_neq(choose_offsets(many, 65, m), SPMV_FORMAT_TILE, "65 diagonals");
    cr_assert_eq(choose_offsets(many, 64, m), SPMV_FORMAT_TILE, "64 diagonals");
    /* the diagonals' fill: odd rows without 1 of the 10 offsets, 95% full; without 3, 85% full (FEM blocks of 2
       unknowns: 63 diagonals in runs of 7, 77-84% full, whose f64 tile plan keeps CSR tiles) */
    cr_assert_eq(choose_offsets_holes(seven_run, 10, m, 1), SPMV_FORMAT_TILE, "95%% full");
    cr_assert_neq(choose_offsets_holes(seven_run, 10, m, 3), SPMV_FORMAT_TILE, "85%% full");
    /* rows of 7 entries take tile in f64 (the 7-point stencil), rows of 5 do not (the 5-point one) */
    const int seven[] = {-1600, -40, -1, 0, 1, 40, 1600}, five[] = {-1000, -1, 0, 1, 1000};
    cr_assert_eq(choose_offsets(seven, 7, m), SPMV_FORMAT_TILE, "7-point pattern");
    cr_assert_eq(choose_offsets(five, 5, m), SPMV_FORMAT_CSR_SCALAR, "5-point pattern");

    /* f64 only: in f32 tile was 0.95-1.21x the other choice (session 33), 0.88-1.14x out of sample on 9- and
       27-point stencils of 5-58M entries (session 55, run C4) */
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "stencil3d:27:36", SPMV_F32, 42), SPMV_STATUS_SUCCESS);
    const spmv_device_info_t gpu = gpu_with_l2(1024);
    cr_assert_eq(spmvport_format_choose(A, &gpu), SPMV_FORMAT_AMF_CSR, "f32 27-point stencil beyond L2");
    spmv_matrix_destroy(A);
}

/* f64 stencils within a 60 MB L2 take tile from AUTO_L2_F64_STENCIL_NNZ (3M) entries (session 57, run D1, H200:
 * tile 1.02-1.03x csr_scalar at stencil3d:7:76, 3.04M entries; 0.95-0.98x at :7:74, 2.80M), 5-point ones too
 * (session 60, H100: 1.21-1.32x csr_scalar at 3.2-4.0M entries; beyond L2 they need more than 6 a row), and rows of
 * more than 20 entries from AUTO_L2_F64_LONG_STENCIL_NNZ (2M: the 27-point stencil, 1.10-1.45x csr_vector at 2.2-2.9M
 * entries; 1.04x at 1.9M); within L2 from 3 entries a row (AUTO_L2_STENCIL_MIN_AVG); not in f32. Tridiagonal rows of
 * 3M entries fitting L2 are near its size, where csr_vector comes first (test below). */
Test(format_choose, f64_stencils_within_l2_from_3m_entries)
{
    static const struct { const char *spec; spmv_precision_t p; spmv_format_t want; } cases[] = {
        {"stencil3d:7:74", SPMV_F64, SPMV_FORMAT_CSR_SCALAR},  {"stencil3d:7:76", SPMV_F64, SPMV_FORMAT_TILE},
        {"stencil3d:7:76", SPMV_F32, SPMV_FORMAT_CSR_SCALAR},  {"stencil2d:5:750", SPMV_F64, SPMV_FORMAT_CSR_SCALAR},
        {"stencil2d:5:800", SPMV_F64, SPMV_FORMAT_TILE},       {"stencil3d:27:42", SPMV_F64, SPMV_FORMAT_CSR_VECTOR},
        {"stencil3d:27:44", SPMV_F64, SPMV_FORMAT_TILE},       {"stencil3d:27:44", SPMV_F32, SPMV_FORMAT_AMF_CSR},
        {"banded:1100000:1", SPMV_F64, SPMV_FORMAT_CSR_VECTOR}}; /* tridiagonal fitting L2: near it (test below) */
    spmv_device_info_t gpu = gpu_with_l2((size_t)60 << 20);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, cases[i].p, 42), SPMV_STATUS_SUCCESS);
        const double bytes = (double)A->nnz * (4 + (cases[i].p == SPMV_F64 ? 8 : 4)) + 4.0 * (A->m + 1);
        cr_assert(bytes <= (double)gpu.l2_bytes, "%s fits the L2", cases[i].spec);
        const spmv_format_t got = spmvport_format_choose(A, &gpu);
        cr_assert_eq(got, cases[i].want, "%s %s: AUTO chose %s, expected %s", cases[i].spec,
                     cases[i].p == SPMV_F64 ? "f64" : "f32", spmv_format_name(got), spmv_format_name(cases[i].want));
        spmv_matrix_destroy(A);
    }
    /* a diagonal of 3.2M entries (one a row: never measured) keeps csr_scalar */
    enum { N = 3200000 };
    int32_t *ptr = malloc(sizeof(int32_t) * (N + 1)), *col = malloc(sizeof(int32_t) * N);
    double *val = malloc(sizeof(double) * N);
    cr_assert(ptr && col && val);
    for (int32_t i = 0; i < N; i++) ptr[i] = col[i] = i, val[i] = 1.0;
    ptr[N] = N;
    spmv_matrix_t *D = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&D, N, N, N, ptr, col, val, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmvport_format_choose(D, &gpu), SPMV_FORMAT_CSR_SCALAR, "diagonal: %s",
                 spmv_format_name(spmvport_format_choose(D, &gpu)));
    spmv_matrix_destroy(D);
    free(ptr), free(col), free(val);
}

/* Tridiagonal rows whose arrays with x and y are 0.8-1.75 L2s (f64: 1.9 since session 69) take csr_vector
 * (sessions 62-63, H100 runs G2, G3, H5: 1.04-1.34x csr_scalar and tile; session 69 run N2: f64 1.04x at 1.82 L2s);
 * just outside the window, and 3 a row read scattered, keep the choice before (on a 50 MiB L2, the H100's:
 * banded:900000:1 f32 is 0.62 L2s, :1100000:1 f32 0.76, :2600000:1 f32 1.79, :700000:1 f64 0.75, :1600000:1 f64
 * 1.71, :1700000:1 f64 1.82, :1800000:1 f64 1.92). */
Test(format_choose, tridiagonal_near_l2_takes_csr_vector)
{
    static const l2_case cases[] = {
        {"banded:900000:1", 1, SPMV_FORMAT_CSR_SCALAR},  {"banded:1300000:1", 1, SPMV_FORMAT_CSR_VECTOR},
        {"banded:2200000:1", 1, SPMV_FORMAT_CSR_VECTOR}, {"banded:2600000:1", 1, SPMV_FORMAT_CSR_SCALAR},
        {"banded:700000:1", 0, SPMV_FORMAT_CSR_SCALAR},  {"banded:800000:1", 0, SPMV_FORMAT_CSR_VECTOR},
        {"banded:1100000:1", 0, SPMV_FORMAT_CSR_VECTOR}, {"banded:1500000:1", 0, SPMV_FORMAT_CSR_VECTOR},
        {"banded:1600000:1", 0, SPMV_FORMAT_CSR_VECTOR}, {"banded:1700000:1", 0, SPMV_FORMAT_CSR_VECTOR},
        {"banded:1800000:1", 0, SPMV_FORMAT_CSR_SCALAR},
        {"banded:1100000:1", 1, SPMV_FORMAT_CSR_SCALAR}, {"uniform:1200000:3", 0, SPMV_FORMAT_AMF_CSR}};
    check_choices_in_l2(cases, sizeof cases / sizeof cases[0], (size_t)50 << 20);
    check_cpu_takes_csr_scalar("banded:1100000:1", SPMV_F64, (size_t)50 << 20); /* the CPU has no such window */
}

/* Rows of 4-8 entries read locally near the L2 take amf_csr (spmvport_short_rows_mapping: its folds in f32, from
 * 0.86 L2s, csr_vector's lanes in f64, from 0.8, while x and y take at most 0.4 L2s; session 68, H100 run M1). On an
 * 8 MiB L2 with 132 multiprocessors banded:M:2 (5 a row) crosses each edge between the two sizes below; rows of 9
 * (the 9-point stencil) keep csr_scalar, tridiagonal rows their own window, and the CPU has none. */
Test(format_choose, short_rows_near_l2_take_amf_csr)
{
    static const l2_case cases[] = {
        {"banded:138500:2", 1, SPMV_FORMAT_CSR_SCALAR}, {"banded:139000:2", 1, SPMV_FORMAT_AMF_CSR},
        {"banded:419000:2", 1, SPMV_FORMAT_AMF_CSR},    {"banded:419500:2", 1, SPMV_FORMAT_CSR_SCALAR},
        {"banded:83500:2", 0, SPMV_FORMAT_CSR_SCALAR},  {"banded:84000:2", 0, SPMV_FORMAT_AMF_CSR},
        {"banded:209500:2", 0, SPMV_FORMAT_AMF_CSR},    {"banded:210000:2", 0, SPMV_FORMAT_CSR_SCALAR},
        {"stencil2d:9:450", 1, SPMV_FORMAT_CSR_SCALAR}, {"banded:300000:1", 1, SPMV_FORMAT_CSR_VECTOR}};
    check_choices_in_l2(cases, sizeof cases / sizeof cases[0], (size_t)8 << 20);
    check_cpu_takes_csr_scalar("banded:200000:2", SPMV_F32, (size_t)8 << 20);
}

/* AUTO's rule (format.c) for a GPU device, on one matrix of each class of the large set, scaled down: with a 1 KiB
 * L2 they are "large" (arrays far beyond the cache), where stencils whose diagonals make band tiles take tile,
 * regular rows of more than 12 entries (FEM blocks, the 27-point stencil too small for band tiles, uniform 16 a row)
 * take amf_csr, and so do regular short rows whose columns are random (lp, uniform 3 a row: x read scattered),
 * while the other stencils' short rows keep csr_scalar; skewed rows take amf_csr
 * where x is read near the diagonal (the circuit) and the vendor library where it is read scattered or the rows
 * average more than 16 entries (the power-law graphs); with a 60 MB L2 every
 * long-row class fits: regular long rows take csr_vector, skewed ones (the circuit's dense rows, the graphs' hubs)
 * amf_csr, short regular rows csr_scalar, but csr_vector where they average more than 4 entries and number fewer than
 * 256 a multiprocessor (stencil3d:7:20, stencil2d:5:100, lp, stencil2d:9:60, banded:3000:4; next test). */
Test(format_choose, gpu_rule_by_class)
{
    static const struct { const char *spec; spmv_format_t large, small; } cases[] = {
        {"stencil3d:7:20", SPMV_FORMAT_CSR_SCALAR, SPMV_FORMAT_CSR_VECTOR}, /* runs 19 apart: no band tiles */
        {"stencil3d:7:40", SPMV_FORMAT_TILE, SPMV_FORMAT_CSR_SCALAR},       /* runs 39 apart: band tiles */
        {"stencil2d:5:100", SPMV_FORMAT_CSR_SCALAR, SPMV_FORMAT_CSR_VECTOR},
        {"lp:20000:20000:5", SPMV_FORMAT_AMF_CSR, SPMV_FORMAT_CSR_VECTOR}, /* short rows, x read scattered */
        {"uniform:20000:3", SPMV_FORMAT_AMF_CSR, SPMV_FORMAT_CSR_SCALAR},
        {"uniform:20000:16", SPMV_FORMAT_AMF_CSR, SPMV_FORMAT_CSR_VECTOR},
        {"stencil3d:27:12", SPMV_FORMAT_AMF_CSR, SPMV_FORMAT_CSR_VECTOR}, /* runs 10 apart: no band tiles */
        {"stencil3d:27:36", SPMV_FORMAT_TILE, SPMV_FORMAT_CSR_VECTOR}, /* runs of 3, 34 apart: band tiles */
        {"stencil2d:9:60", SPMV_FORMAT_TILE, SPMV_FORMAT_CSR_VECTOR},
        {"fem3d:2:20", SPMV_FORMAT_AMF_CSR, SPMV_FORMAT_CSR_VECTOR}, /* runs of 7, 34 apart, 80% full: not a stencil */
        {"banded:3000:4", SPMV_FORMAT_CSR_SCALAR, SPMV_FORMAT_CSR_VECTOR}, /* 9 adjacent diagonals: no band tiles */
        {"banded:3000:16", SPMV_FORMAT_AMF_CSR, SPMV_FORMAT_CSR_VECTOR},
        {"fem3d:3:10", SPMV_FORMAT_AMF_CSR, SPMV_FORMAT_CSR_VECTOR},
        {"circuit:20000", SPMV_FORMAT_AMF_CSR, SPMV_FORMAT_AMF_CSR}, /* skewed, x read near the diagonal */
        {"kron:12:16", SPMV_FORMAT_VENDOR, SPMV_FORMAT_AMF_CSR},
        {"kron:14:4", SPMV_FORMAT_VENDOR, SPMV_FORMAT_AMF_CSR}}; /* power law of 7 a row: x read scattered */
    spmv_device_info_t gpu = gpu_with_l2(1024);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, SPMV_F64, 42), SPMV_STATUS_SUCCESS, "%s", cases[i].spec);
        gpu.l2_bytes = 1024;
        spmv_format_t got = spmvport_format_choose(A, &gpu);
        cr_assert_eq(got, cases[i].large, "%s beyond L2: AUTO chose %s, expected %s", cases[i].spec,
                     spmv_format_name(got), spmv_format_name(cases[i].large));
        gpu.l2_bytes = (size_t)60 << 20;
        got = spmvport_format_choose(A, &gpu);
        cr_assert_eq(got, cases[i].small, "%s within L2: AUTO chose %s, expected %s", cases[i].spec,
                     spmv_format_name(got), spmv_format_name(cases[i].small));
        spmv_matrix_destroy(A);
    }
}

/* Regular rows within L2 averaging more than 4 entries (two of csr_scalar's batches of 4 a thread), fewer than 256 a
 * multiprocessor, take csr_vector (H100, session 63, runs H4 and H6: crack, fe_4elt2, cti, bcsstk21, ... 1.09x and
 * 1.03x csr_scalar in geometric mean); 4 or fewer a row, or more rows, or on the CPU, keep csr_scalar. */
Test(format_choose, few_rows_of_more_than_a_batch_take_csr_vector)
{
    static const struct { const char *spec; spmv_format_t want; } cases[] = {
        {"banded:33000:3", SPMV_FORMAT_CSR_VECTOR},  /* 7 a row, 33000 rows < 132 x 256 = 33792 */
        {"banded:34000:3", SPMV_FORMAT_CSR_SCALAR},  /* 34000 rows */
        {"banded:20000:1", SPMV_FORMAT_CSR_SCALAR},  /* 3 a row */
        {"stencil2d:5:100", SPMV_FORMAT_CSR_VECTOR}, /* 4.96 a row */
        {"uniform:20000:4", SPMV_FORMAT_CSR_SCALAR}}; /* 4 a row */
    spmv_device_info_t gpu = gpu_with_l2((size_t)60 << 20);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, SPMV_F64, 42), SPMV_STATUS_SUCCESS);
        gpu.backend = SPMV_BACKEND_CUDA;
        spmv_format_t got = spmvport_format_choose(A, &gpu);
        cr_assert_eq(got, cases[i].want, "%s: AUTO chose %s, expected %s", cases[i].spec, spmv_format_name(got),
                     spmv_format_name(cases[i].want));
        gpu.backend = SPMV_BACKEND_CPU;
        got = spmvport_format_choose(A, &gpu);
        cr_assert_eq(got, SPMV_FORMAT_CSR_SCALAR, "%s on the CPU: %s", cases[i].spec, spmv_format_name(got));
        spmv_matrix_destroy(A);
    }
}

/* Rows of 2 and 3 entries with every `every`-th row `long_len` long (regular: at most 2 x the average + 16), columns
 * around the diagonal, m rows. */
static spmv_matrix_t *bimodal_rows(int32_t m, int32_t long_len, int32_t every, spmv_precision_t precision)
{
    int32_t *ptr = malloc(((size_t)m + 1) * sizeof(int32_t));
    ptr[0] = 0;
    for (int32_t i = 0; i < m; i++) ptr[i + 1] = ptr[i] + (i % every == 0 ? long_len : 2 + (i & 1));
    int32_t *col = malloc((size_t)ptr[m] * sizeof(int32_t));
    double *val = malloc((size_t)ptr[m] * sizeof(double));
    for (int32_t i = 0; i < m; i++) {
        const int32_t len = ptr[i + 1] - ptr[i];
        int32_t lo = i - len / 2 < 0 ? 0 : i - len / 2;
        if (lo + len > m) lo = m - len;
        for (int32_t k = 0; k < len; k++) col[ptr[i] + k] = lo + k, val[ptr[i] + k] = 1.0 + k;
    }
    spmv_matrix_t *A64 = NULL, *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A64, m, m, ptr[m], ptr, col, val, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);
    if (precision == SPMV_F64)
        A = A64;
    else {
        cr_assert_eq(spmv_matrix_convert(&A, A64, precision), SPMV_STATUS_SUCCESS);
        spmv_matrix_destroy(A64);
    }
    free(ptr), free(col), free(val);
    return A;
}

Test(format_choose, rows_spread)
{
    spmv_matrix_t *A = bimodal_rows(8, 3, 2, SPMV_F64); /* 3, 3, 3, 3, ...: every row 3 long */
    cr_assert_float_eq(spmvport_rows_spread(A), 0.0, 1e-12);
    spmv_matrix_destroy(A);
    A = bimodal_rows(4, 4, 2, SPMV_F64); /* 4, 3, 4, 3: mean 3.5, deviation 0.5 */
    cr_assert_float_eq(spmvport_rows_spread(A), 0.5 / 3.5, 1e-12);
    spmv_matrix_destroy(A);
    int32_t eptr[4] = {0, 0, 0, 0};
    cr_assert_eq(spmv_matrix_create_csr(&A, 3, 3, 0, eptr, NULL, NULL, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);
    cr_assert_float_eq(spmvport_rows_spread(A), 0.0, 1e-12);
    spmv_matrix_destroy(A);
}

/* Bimodal regular rows (rows_spread above 1: every 8th row 26 long, the others 2-3; 5.4 a row, spread 1.4) take
 * amf_csr on a GPU from 2M entries, in f64 within L2 too, in f32 beyond it only (H100, session 64, runs I1-I2);
 * fewer entries, a smaller spread (every 4th row 10 long: 0.75), 4 or fewer a row (every 16th row 22 long: 3.7 a
 * row, spread 1.3), f32 within L2 and the CPU keep csr_scalar. */
Test(format_choose, bimodal_rows_take_amf_csr)
{
    static const struct { int32_t m, long_len, every; int f32; size_t l2; spmv_format_t want; } cases[] = {
        {400000, 26, 8, 0, (size_t)60 << 20, SPMV_FORMAT_AMF_CSR},     /* 2.18M entries, within L2 */
        {350000, 26, 8, 0, (size_t)60 << 20, SPMV_FORMAT_CSR_SCALAR},  /* 1.91M */
        {400000, 26, 8, 1, (size_t)60 << 20, SPMV_FORMAT_CSR_SCALAR},  /* f32 within L2 */
        {400000, 26, 8, 1, 1024, SPMV_FORMAT_AMF_CSR},                 /* f32 beyond L2 */
        {700000, 10, 4, 0, 1024, SPMV_FORMAT_CSR_SCALAR},              /* spread 0.75 */
        {700000, 22, 16, 0, 1024, SPMV_FORMAT_CSR_SCALAR}};            /* 3.7 a row */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const spmv_precision_t precision = cases[i].f32 ? SPMV_F32 : SPMV_F64;
        spmv_matrix_t *A = bimodal_rows(cases[i].m, cases[i].long_len, cases[i].every, precision);
        cr_assert(spmvport_rows_regular(A));
        spmv_device_info_t gpu = gpu_with_l2(cases[i].l2);
        const char *why = NULL;
        spmv_format_t got = spmvport_format_choose_why(A, &gpu, &why);
        cr_assert_eq(got, cases[i].want, "case %zu: AUTO chose %s, expected %s", i, spmv_format_name(got),
                     spmv_format_name(cases[i].want));
        cr_assert_str_eq(why, cases[i].want == SPMV_FORMAT_AMF_CSR ? "bimodal_short_rows" : "short_rows");
        gpu.backend = SPMV_BACKEND_CPU;
        got = spmvport_format_choose(A, &gpu);
        cr_assert_eq(got, SPMV_FORMAT_CSR_SCALAR, "case %zu on the CPU: %s", i, spmv_format_name(got));
        spmv_matrix_destroy(A);
    }
}

/* ---- hot columns (options.lb_hot) ---------------------------------------------------------------------------- */

/* The invariants of a csr_lb layout with hot columns, from A alone: the hot columns are the `want` most read
 * columns read at least twice (ties: the lower column), ascending; their entries' columns are -1 - (index in the
 * copy), every other entry keeps its column; the copy has one value a hot column. Returns the hot count. */
static int64_t check_hot_layout(const spmvport_format_data *fd, const spmv_matrix_t *A, int64_t want,
                                const char *what)
{
    const int64_t nhot = fd->params[SPMVPORT_P_LB_HOT];
    const int32_t *hot = fd->arrays[SPMVPORT_CSR_LB_HOT].data, *col = fd->arrays[SPMVPORT_CSR_COL_IDX].data;
    int64_t *cnt = calloc((size_t)A->n + 1, sizeof(int64_t)), eligible = 0;
    int32_t *index = malloc(((size_t)A->n + 1) * sizeof(int32_t));
    for (int32_t k = 0; k < A->nnz; k++) cnt[A->col_idx[k]]++;
    for (int32_t j = 0; j < A->n; j++) eligible += cnt[j] >= 2, index[j] = -1;
    cr_assert_eq(nhot, want < eligible ? want : eligible, "%s: %lld hot columns, want %lld of %lld read twice", what,
                 (long long)nhot, (long long)want, (long long)eligible);
    cr_assert_eq(fd->arrays[SPMVPORT_CSR_LB_HOT].bytes, (size_t)nhot * sizeof(int32_t), "%s", what);
    cr_assert_eq(fd->arrays[SPMVPORT_CSR_LB_HOT_X].bytes, (size_t)nhot * spmvport_value_size(A->precision), "%s",
                 what);
    int64_t least = INT64_MAX;
    for (int64_t i = 0; i < nhot; i++) {
        cr_assert(hot[i] >= 0 && hot[i] < A->n && (i == 0 || hot[i] > hot[i - 1]), "%s: hot[%lld] = %d", what,
                  (long long)i, hot[i]);
        cr_assert_geq(cnt[hot[i]], 2, "%s: hot column %d read once", what, hot[i]);
        index[hot[i]] = (int32_t)i;
        if (cnt[hot[i]] < least) least = cnt[hot[i]];
    }
    for (int32_t j = 0; j < A->n && nhot > 0; j++) { /* nothing left out reads more; ties went to lower columns */
        if (index[j] >= 0) continue;
        cr_assert_leq(cnt[j], least, "%s: column %d (%lld reads) not hot, a hot one has %lld", what, j,
                      (long long)cnt[j], (long long)least);
        for (int64_t i = 0; i < nhot && cnt[j] == least; i++)
            cr_assert(!(cnt[hot[i]] == least && hot[i] > j), "%s: tie at %lld reads went to column %d over %d",
                      what, (long long)least, hot[i], j);
    }
    for (int32_t k = 0; k < A->nnz; k++) {
        const int32_t c = A->col_idx[k];
        cr_assert_eq(col[k], index[c] >= 0 ? -1 - index[c] : c, "%s: entry %d of column %d stored as %d", what, k, c,
                     col[k]);
    }
    free(cnt);
    free(index);
    return nhot;
}

/* spmvport_column_reads against a plain count, with 1, 2, 3 and 5 threads: per-thread copies where (threads - 1) n
 * <= nnz (kron:12:8, a dense row), one atomic array past that (a 1 x 5000 row of 7 entries, the empty matrix); the
 * columns out of range that hbp's builder counts before it checks them (-1, n) are left out either way. */
Test(csr_lb_hot, column_reads_any_threads)
{
#ifndef _OPENMP
    cr_skip_test("built without OpenMP: one thread only");
#else
    spmv_matrix_t *A[3] = {NULL, NULL, NULL};
    cr_assert_eq(spmv_matrix_generate(&A[0], "kron:12:8", SPMV_F64, 42), SPMV_STATUS_SUCCESS);
    int32_t dense_ptr[3] = {0, 64, 70}, dense_col[70];
    for (int k = 0; k < 70; k++) dense_col[k] = k < 64 ? k : k - 64;
    double val[70] = {0};
    cr_assert_eq(spmv_matrix_create_csr(&A[1], 2, 64, 70, dense_ptr, dense_col, val, SPMV_F64, 0, 0),
                 SPMV_STATUS_SUCCESS);
    int32_t wide_ptr[2] = {0, 7}, wide_col[7] = {0, 9, 99, 999, 1000, 4998, 4999};
    cr_assert_eq(spmv_matrix_create_csr(&A[2], 1, 5000, 7, wide_ptr, wide_col, val, SPMV_F64, 0, 0),
                 SPMV_STATUS_SUCCESS);
    int32_t bad_col[9] = {3, -1, 3, 8, 0, 7, 8, 3, 1}, bad_ptr[2] = {0, 9}; /* n = 8: -1 and 8 are out of range */
    spmv_matrix_t bad = {.m = 1, .n = 8, .nnz = 9, .precision = SPMV_F64, .row_ptr = bad_ptr, .col_idx = bad_col,
                         .values = val};
    spmv_matrix_t empty = {.m = 0, .n = 0, .nnz = 0, .precision = SPMV_F64, .row_ptr = bad_ptr};
    const spmv_matrix_t *cases[] = {A[0], A[1], A[2], &bad, &empty};
    const int threads_before = omp_get_max_threads(), threads[] = {1, 2, 3, 5};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const spmv_matrix_t *M = cases[c];
        uint32_t *want = calloc((size_t)M->n + 1, sizeof(uint32_t));
        for (int32_t k = 0; k < M->nnz; k++)
            if (M->col_idx[k] >= 0 && M->col_idx[k] < M->n) want[M->col_idx[k]]++;
        for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
            omp_set_num_threads(threads[t]);
            uint32_t *got = spmvport_column_reads(M);
            omp_set_num_threads(threads_before);
            cr_assert_not_null(got, "case %zu, %d threads", c, threads[t]);
            for (int32_t j = 0; j < M->n; j++)
                cr_assert_eq(got[j], want[j], "case %zu (%d x %d, %d entries), %d threads: column %d read %u times, "
                             "counted %u", c, M->m, M->n, M->nnz, threads[t], j, want[j], got[j]);
            free(got);
        }
        free(want);
    }
    for (int i = 0; i < 3; i++) spmv_matrix_destroy(A[i]);
#endif
}

/* spmvport_relabel_hot_columns against a plain loop, into a second array and in place: column c stays c where
 * index[c] = -1, else becomes -1 - index[c]; columns 0 and n - 1 and index values 0 and the largest included. */
Test(csr_lb_hot, relabel_hot_columns)
{
    enum { N = 1000, NNZ = 20011 };
    int32_t *index = malloc(N * sizeof(int32_t)), *src = malloc(NNZ * sizeof(int32_t));
    int32_t *dst = malloc(NNZ * sizeof(int32_t)), *want = malloc(NNZ * sizeof(int32_t));
    int32_t hot = 0;
    for (int32_t c = 0; c < N; c++) index[c] = (c % 7 == 0 || c == N - 1) ? hot++ : -1; /* 0 and N - 1 hot */
    uint32_t r = 12345u;
    for (int32_t e = 0; e < NNZ; e++) {
        r = r * 1664525u + 1013904223u;
        src[e] = e < 2 ? (e == 0 ? 0 : N - 1) : (int32_t)(r % N);
        want[e] = index[src[e]] < 0 ? src[e] : -1 - index[src[e]];
    }
    spmvport_relabel_hot_columns(dst, src, NNZ, index);
    for (int32_t e = 0; e < NNZ; e++)
        cr_assert_eq(dst[e], want[e], "entry %d (column %d, index %d): %d, want %d", e, src[e], index[src[e]], dst[e],
                     want[e]);
    cr_assert_eq(dst[1], -hot, "column n - 1 holds the last index: %d", dst[1]);
    spmvport_relabel_hot_columns(src, src, NNZ, index); /* in place, as hbp's build calls it */
    cr_assert_eq(memcmp(src, want, NNZ * sizeof(int32_t)), 0, "in place differs");
    free(index);
    free(src);
    free(dst);
    free(want);
}

static void check_hot_corpus(int warp, spmv_precision_t p, int lb_hot)
{
    support_case *cases = NULL;
    const int count = support_edge_corpus(p, &cases);
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    for (int i = 0; i < count; i++) {
        spmvport_format_data fd;
        spmv_plan_options_t opt;
        char msg[256] = "";
        spmv_plan_options_init(&opt);
        opt.warp_size = warp;
        opt.nnz_per_warp = warp; /* one-warp chunks: rows of hot columns cross chunks */
        opt.lb_hot = lb_hot;
        cr_assert_eq(spmvport_format_build(&fd, cases[i].A, SPMV_FORMAT_CSR_LB, warp, NULL, &opt, msg, sizeof msg),
                     SPMV_STATUS_SUCCESS, "%s: %s", cases[i].name, msg);
        cr_assert_eq(fd.narrays, SPMVPORT_CSR_LB_NARRAYS, "%s: arrays", cases[i].name);
        check_hot_layout(&fd, cases[i].A, lb_hot, cases[i].name);
        spmvport_format_data_free(&fd);
        cr_assert_geq(support_check_format(ctx, SPMV_FORMAT_CSR_LB, &opt, cases[i].name, cases[i].A, 0), 0.0);
    }
    spmv_context_destroy(ctx);
    support_cases_free(cases, count);
}

Test(csr_lb_hot, corpus_w32_f64_three) { check_hot_corpus(32, SPMV_F64, 3); }
Test(csr_lb_hot, corpus_w64_f32_three) { check_hot_corpus(64, SPMV_F32, 3); }
Test(csr_lb_hot, corpus_w32_f32_all) { check_hot_corpus(32, SPMV_F32, 1 << 20); }
Test(csr_lb_hot, corpus_w64_f64_all) { check_hot_corpus(64, SPMV_F64, 1 << 20); }

/* The automatic rule (64 KiB of f64: 8192 columns): a power-law graph of 2M entries takes 8192 columns; a uniform
 * matrix of as many entries (its 8192 most read columns hold a tenth of them) and a small graph take none; lb_hot =
 * -1 none; -2 is refused by name. The graph's plan runs within the bound. */
Test(csr_lb_hot, automatic_rule)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const struct { const char *spec; int64_t hot; } cases[] = {
        {"kron:17:8", 8192}, {"uniform:200000:10", 0}, {"kron:12:8", 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[c].spec, SPMV_F64, 42), SPMV_STATUS_SUCCESS);
        spmvport_format_data fd;
        spmv_plan_options_t opt;
        char msg[256] = "";
        spmv_plan_options_init(&opt);
        cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_CSR_LB, 32, NULL, &opt, msg, sizeof msg),
                     SPMV_STATUS_SUCCESS, "%s: %s", cases[c].spec, msg);
        cr_assert_eq(fd.params[SPMVPORT_P_LB_HOT], cases[c].hot, "%s: %lld hot columns", cases[c].spec,
                     (long long)fd.params[SPMVPORT_P_LB_HOT]);
        if (cases[c].hot > 0) check_hot_layout(&fd, A, cases[c].hot, cases[c].spec);
        cr_assert_eq(support_stat(fd.stats, "hot"), (double)cases[c].hot, "%s: stats '%s'", cases[c].spec, fd.stats);
        spmvport_format_data_free(&fd);
        if (c == 0) {
            cr_assert_geq(support_check_format(ctx, SPMV_FORMAT_CSR_LB, NULL, cases[c].spec, A, 0), 0.0);
            opt.lb_hot = -1;
            cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_CSR_LB, 32, NULL, &opt, msg, sizeof msg),
                         SPMV_STATUS_SUCCESS, "%s", msg);
            cr_assert_eq(fd.params[SPMVPORT_P_LB_HOT], 0);
            cr_assert_eq(memcmp(fd.arrays[SPMVPORT_CSR_COL_IDX].data, A->col_idx, (size_t)A->nnz * sizeof(int32_t)),
                         0, "lb_hot = -1 changed the columns");
            spmvport_format_data_free(&fd);
            opt.lb_hot = -2;
            cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_CSR_LB, 32, NULL, &opt, msg, sizeof msg),
                         SPMV_STATUS_INVALID_ARGUMENT);
            cr_assert(strstr(msg, "lb_hot = -2") != NULL, "message: %s", msg);
        }
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

/* AUTO on a power-law graph of 2M entries (16 a row) that csr_lb gives hot columns: csr_lb in f32, beyond L2 and
 * within; in f64 (under AUTO_HOT_F64_MIN_NNZ entries) the vendor library beyond L2 and, with 131072 rows (from
 * AUTO_L2_F64_GRAPH_ROWS), within; kron:16:16 (65536 rows) keeps amf_csr within L2 in f64. */
Test(format_choose, gpu_rule_hot_columns)
{
    spmv_matrix_t *A = NULL, *B = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "kron:17:8", SPMV_F64, 42), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_convert(&B, A, SPMV_F32), SPMV_STATUS_SUCCESS);
    cr_assert_gt(spmvport_lb_hot_columns(A, 0, NULL, NULL, NULL), 0);
    spmv_device_info_t gpu = gpu_with_l2(1024);
    cr_assert_eq(spmvport_format_choose(B, &gpu), SPMV_FORMAT_CSR_LB, "f32: %s",
                 spmv_format_name(spmvport_format_choose(B, &gpu)));
    cr_assert_eq(spmvport_format_choose(A, &gpu), SPMV_FORMAT_VENDOR, "f64: %s",
                 spmv_format_name(spmvport_format_choose(A, &gpu)));
    gpu.l2_bytes = (size_t)60 << 20;
    cr_assert_eq(spmvport_format_choose(B, &gpu), SPMV_FORMAT_CSR_LB);
    cr_assert_eq(spmvport_format_choose(A, &gpu), SPMV_FORMAT_VENDOR, "f64 within L2: %s",
                 spmv_format_name(spmvport_format_choose(A, &gpu)));
    spmv_matrix_destroy(A);
    spmv_matrix_destroy(B);
    cr_assert_eq(spmv_matrix_generate(&A, "kron:16:16", SPMV_F64, 42), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmvport_format_choose(A, &gpu), SPMV_FORMAT_AMF_CSR, "kron:16:16 f64 within L2: %s",
                 spmv_format_name(spmvport_format_choose(A, &gpu)));
    spmv_matrix_destroy(A);
}

/* AUTO's graph rule keeps the hot columns it counted, and csr_lb's build takes them: the plan is the one csr_lb
 * builds by itself, byte for byte; options that ask for other hot columns leave the kept ones to the caller; a
 * choice other than csr_lb keeps none. */
Test(format_choose, kept_hot_columns_build_the_same_plan)
{
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "kron:17:8", SPMV_F32, 42), SPMV_STATUS_SUCCESS);
    const spmv_device_info_t gpu = gpu_with_l2(1024);
    spmvport_hot_choice hot;
    cr_assert_eq(spmvport_format_choose_keep(A, &gpu, NULL, &hot), SPMV_FORMAT_CSR_LB);
    cr_assert(hot.nhot > 0 && hot.hot != NULL && hot.index != NULL, "nhot %lld", (long long)hot.nhot);
    cr_assert_eq(hot.nhot, spmvport_lb_hot_columns(A, 0, NULL, NULL, NULL));
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    char msg[SPMVPORT_MSG_LEN] = "";
    spmvport_format_data own, taken;
    cr_assert_eq(spmvport_format_build(&own, A, SPMV_FORMAT_CSR_LB, 32, &gpu, &opt, msg, sizeof msg),
                 SPMV_STATUS_SUCCESS, "%s", msg);
    opt.lb_hot = 100; /* not the automatic rule: the build counts its own and leaves the kept arrays */
    cr_assert_eq(spmvport_format_build_chosen(&taken, A, SPMV_FORMAT_CSR_LB, 32, &gpu, &opt, &hot, msg, sizeof msg),
                 SPMV_STATUS_SUCCESS, "%s", msg);
    cr_assert_eq(taken.params[SPMVPORT_P_LB_HOT], 100);
    cr_assert(hot.hot != NULL && hot.index != NULL, "lb_hot = 100 took the automatic hot columns");
    cr_assert_null(taken.auto_hot);
    spmvport_format_data_free(&taken);
    opt.lb_hot = 0;
    cr_assert_eq(spmvport_format_build_chosen(&taken, A, SPMV_FORMAT_CSR_LB, 32, &gpu, &opt, &hot, msg, sizeof msg),
                 SPMV_STATUS_SUCCESS, "%s", msg);
    cr_assert(hot.hot == NULL && hot.index == NULL, "the build left the kept hot columns");
    cr_assert_eq(taken.narrays, own.narrays);
    for (int a = 0; a < own.narrays; a++) {
        cr_assert_eq(taken.arrays[a].bytes, own.arrays[a].bytes, "array %s", own.arrays[a].name);
        if (own.arrays[a].bytes > 0)
            cr_assert_eq(memcmp(taken.arrays[a].data, own.arrays[a].data, own.arrays[a].bytes), 0, "array %s",
                         own.arrays[a].name);
    }
    for (int k = 0; k < SPMVPORT_MAX_PARAMS; k++) cr_assert_eq(taken.params[k], own.params[k], "param %d", k);
    spmvport_format_data_free(&taken);
    spmvport_format_data_free(&own);
    spmvport_hot_choice_free(&hot);
    spmv_matrix_destroy(A);
    cr_assert_eq(spmv_matrix_generate(&A, "stencil2d:5:200", SPMV_F32, 42), SPMV_STATUS_SUCCESS);
    cr_assert_neq(spmvport_format_choose_keep(A, &gpu, NULL, &hot), SPMV_FORMAT_CSR_LB);
    cr_assert(hot.hot == NULL && hot.index == NULL && hot.nhot == 0);
    spmv_matrix_destroy(A);
}
