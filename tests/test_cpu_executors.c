/*
 * test_cpu_executors.c -- every CPU executor against the oracle: the edge-case corpus and every shared matrix,
 * at warp size 32 and 64, f32 and f64, alpha/beta in {1,0}, {2,0.5}, {-1,1}; plus option sweeps that stress the
 * warp-grouped layouts (every lanes-per-row of csr_vector, one-warp chunks of csr_lb); and the layouts the builders
 * make for four GPU models, run by the CPU executors (the CPU backend builds for the CPU, and some builder paths
 * exist only for a GPU); and every builder's plan the same with 1 and 3 OpenMP threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "support.h" /* with cpu_ref.h: the executors and the builders' internals */

static void corpus(spmv_format_t format, int warp_size, spmv_precision_t p, int lanes, int nnz_per_warp)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.warp_size = warp_size;
    opt.lanes_per_row = lanes;
    opt.nnz_per_warp = nnz_per_warp;
    support_check_corpus(ctx, format, &opt, p);
    spmv_context_destroy(ctx);
}

static void shared(spmv_format_t format, int warp_size, spmv_precision_t p)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.warp_size = warp_size;
    support_check_shared(ctx, format, &opt, p);
    spmv_context_destroy(ctx);
}

#define EXECUTOR_TESTS(FMT, NAME)                                                                              \
    Test(NAME, corpus_w32_f64) { corpus(FMT, 32, SPMV_F64, 0, 0); }                                             \
    Test(NAME, corpus_w64_f64) { corpus(FMT, 64, SPMV_F64, 0, 0); }                                             \
    Test(NAME, corpus_w32_f32) { corpus(FMT, 32, SPMV_F32, 0, 0); }                                             \
    Test(NAME, corpus_w64_f32) { corpus(FMT, 64, SPMV_F32, 0, 0); }                                             \
    Test(NAME, shared_w32_f64, .timeout = 600) { shared(FMT, 32, SPMV_F64); }                                   \
    Test(NAME, shared_w64_f64, .timeout = 600) { shared(FMT, 64, SPMV_F64); }                                   \
    Test(NAME, shared_w32_f32, .timeout = 600) { shared(FMT, 32, SPMV_F32); }                                   \
    Test(NAME, shared_w64_f32, .timeout = 600) { shared(FMT, 64, SPMV_F32); }

EXECUTOR_TESTS(SPMV_FORMAT_CSR_SCALAR, cpu_csr_scalar)
EXECUTOR_TESTS(SPMV_FORMAT_CSR_VECTOR, cpu_csr_vector)
EXECUTOR_TESTS(SPMV_FORMAT_CSR_LB, cpu_csr_lb)
EXECUTOR_TESTS(SPMV_FORMAT_AUTO, cpu_auto)

Test(cpu_csr_vector, every_lane_count)
{
    for (int w = 32; w <= 64; w *= 2)
        for (int lanes = 1; lanes <= w; lanes *= 2) corpus(SPMV_FORMAT_CSR_VECTOR, w, SPMV_F64, lanes, 0);
}

Test(cpu_csr_lb, one_warp_chunks)
{
    /* chunks of W entries: long rows span hundreds of chunks, so carries chain across many warps */
    corpus(SPMV_FORMAT_CSR_LB, 32, SPMV_F64, 0, 32);
    corpus(SPMV_FORMAT_CSR_LB, 64, SPMV_F32, 0, 64);
}

/* ---- layouts built for a GPU, run on the host ------------------------------------------------------------------
 * Builders choose by the device (multiprocessors, warp size, shared memory, L2): small band plans, block tasks, hot
 * columns, one-wave layouts... The CPU backend's plans never take those paths, and the GPU suite runs only on a GPU;
 * here every format but ehyb (METIS; its own tests use an H100 model) is built for an H200, an MI250-like device
 * (wave64), an RDNA2-like one (wave32) and an Orin-like one (16 SMs, 4 MB of L2; since session 56), and its executor
 * checked against the oracle. Session 53 found a tile
 * builder bug this way (stencil3d:27:31: OVERFLOW on a GPU only). */
static void gpu_layouts(spmv_precision_t p)
{
    static const struct { spmv_format_t format; spmvport_cpu_executor run; } formats[] = {
        {SPMV_FORMAT_CSR_SCALAR, spmvport_cpu_csr_scalar}, {SPMV_FORMAT_CSR_VECTOR, spmvport_cpu_csr_vector},
        {SPMV_FORMAT_CSR_LB, spmvport_cpu_csr_lb},         {SPMV_FORMAT_TILE, spmvport_cpu_tile},
        {SPMV_FORMAT_HBP, spmvport_cpu_hbp},               {SPMV_FORMAT_AMF_CSR, spmvport_cpu_amf_csr},
        {SPMV_FORMAT_TEB, spmvport_cpu_teb}};
    /* generated matrices that take device-only paths on these models (small band plans, block tasks, hot columns,
     * uniform one-step layouts, long-row pieces) */
    static const char *specs[] = {"stencil3d:27:31", "stencil3d:7:29", "fem3d:2:16", "fem3d:8:9", "fem3d:3:16",
                                  "kron:14:16",      "circuit:20000",  "uniform:20000:3", "lp:5000:10000:4"};
    support_case *corpus_cases;
    const int ncorpus = support_edge_corpus(p, &corpus_cases);
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    spmv_matrix_t **gen = calloc((size_t)nspecs, sizeof *gen);
    cr_assert(gen);
    for (int i = 0; i < nspecs; i++)
        cr_assert_eq(spmv_matrix_generate(&gen[i], specs[i], p, 7), SPMV_STATUS_SUCCESS, "%s", specs[i]);
    /* SPMVPORT_TEST_QUICK (the sanitizer build): the H200 model only */
    const spmv_device_info_t *models = support_gpu_models;
    const size_t nmodels = getenv("SPMVPORT_TEST_QUICK") ? 1 : SUPPORT_GPU_MODELS;
    for (size_t d = 0; d < nmodels; d++)
        for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
            for (int i = 0; i < ncorpus + nspecs; i++) {
                const spmv_matrix_t *A = i < ncorpus ? corpus_cases[i].A : gen[i - ncorpus];
                char what[160];
                snprintf(what, sizeof what, "%s on %s, %s, %s", spmv_format_name(formats[f].format), models[d].name,
                         p == SPMV_F32 ? "f32" : "f64", i < ncorpus ? corpus_cases[i].name : specs[i - ncorpus]);
                spmv_plan_options_t opt;
                spmv_plan_options_init(&opt);
                spmvport_format_data fd;
                char msg[SPMVPORT_MSG_LEN] = "";
                cr_assert_eq(spmvport_format_build(&fd, A, formats[f].format, models[d].warp_size, &models[d], &opt,
                                                   msg, sizeof msg),
                             SPMV_STATUS_SUCCESS, "%s: %s", what, msg);
                support_check_executor(&fd, formats[f].run, A, what);
                spmvport_format_data_free(&fd);
            }
    for (int i = 0; i < nspecs; i++) spmv_matrix_destroy(gen[i]);
    free(gen);
    support_cases_free(corpus_cases, ncorpus);
}

Test(cpu_gpu_layouts, gpu_device_models_f64, .timeout = 900) { gpu_layouts(SPMV_F64); }
Test(cpu_gpu_layouts, gpu_device_models_f32, .timeout = 900) { gpu_layouts(SPMV_F32); }

/* Every format the builders make (ehyb refuses without METIS). */
static const spmv_format_t every_format[] = {SPMV_FORMAT_CSR_SCALAR, SPMV_FORMAT_CSR_VECTOR, SPMV_FORMAT_CSR_LB,
                                             SPMV_FORMAT_TILE,       SPMV_FORMAT_HBP,        SPMV_FORMAT_AMF_CSR,
                                             SPMV_FORMAT_TEB,        SPMV_FORMAT_EHYB};

/* ---- plans do not depend on the host's thread count -------------------------------------------------------------
 * The builders run OpenMP loops (the GPU machine's host has 16 cores, CI 2); a plan built with 1 thread and with 3
 * (odd, so no loop splits evenly) must be the same byte for byte: every array, parameter and value map (not the
 * statistics, some of which are times). A difference would make results differ from machine to machine, however
 * deterministic each plan's kernels are. Every format, on the H200 model and the CPU, f64. */
static void assert_same_plan(const spmvport_format_data *a, const spmvport_format_data *b, const char *what)
{
    cr_assert_eq(a->narrays, b->narrays, "%s: array count", what);
    for (int i = 0; i < a->narrays; i++) {
        cr_assert_eq(a->arrays[i].bytes, b->arrays[i].bytes, "%s: size of %s", what, a->arrays[i].name);
        cr_assert(a->arrays[i].bytes == 0 || memcmp(a->arrays[i].data, b->arrays[i].data, a->arrays[i].bytes) == 0,
                  "%s: array %s differs", what, a->arrays[i].name);
    }
    cr_assert(memcmp(a->params, b->params, sizeof a->params) == 0, "%s: parameters differ", what);
    cr_assert_eq(a->value_slots, b->value_slots, "%s: value slots", what);
    cr_assert_eq(a->value_map == NULL, b->value_map == NULL, "%s: value map", what);
    cr_assert(a->value_map == NULL ||
                  memcmp(a->value_map, b->value_map, (size_t)a->value_slots * sizeof *a->value_map) == 0,
              "%s: value map differs", what);
    cr_assert_eq(a->deterministic, b->deterministic, "%s: deterministic flag", what);
}

Test(cpu_gpu_layouts, plans_do_not_depend_on_the_thread_count, .timeout = 900)
{
#ifndef _OPENMP
    cr_skip_test("built without OpenMP: one thread only");
#else
    static const char *specs[] = {"kron:14:16",      "circuit:20000", "stencil3d:27:31", "fem3d:3:16",
                                  "uniform:20000:3", "lp:5000:10000:4", "banded:20000:40"};
    const spmv_device_info_t cpu = {.backend = SPMV_BACKEND_CPU, .name = "cpu", .warp_size = 32};
    const spmv_device_info_t *devices[] = {&support_gpu_models[0], &cpu};
    const int threads_before = omp_get_max_threads();
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        spmv_matrix_t *A;
        cr_assert_eq(spmv_matrix_generate(&A, specs[i], SPMV_F64, 7), SPMV_STATUS_SUCCESS, "%s", specs[i]);
        for (size_t d = 0; d < 2; d++)
            for (size_t f = 0; f < sizeof every_format / sizeof every_format[0]; f++) {
                char what[160];
                snprintf(what, sizeof what, "%s on %s, %s", spmv_format_name(every_format[f]), devices[d]->name,
                         specs[i]);
                spmv_plan_options_t opt;
                spmv_plan_options_init(&opt);
                spmvport_format_data fd[2];
                spmv_status_t st[2];
                char msg[SPMVPORT_MSG_LEN] = "";
                for (int k = 0; k < 2; k++) {
                    omp_set_num_threads(k == 0 ? 1 : 3);
                    st[k] = spmvport_format_build(&fd[k], A, every_format[f], 32, devices[d], &opt, msg, sizeof msg);
                }
                omp_set_num_threads(threads_before);
                cr_assert_eq(st[0], st[1], "%s: status %d with 1 thread, %d with 3", what, st[0], st[1]);
                if (st[0] != SPMV_STATUS_SUCCESS) { /* ehyb without METIS: refused either way */
                    cr_assert(every_format[f] == SPMV_FORMAT_EHYB && st[0] == SPMV_STATUS_NOT_SUPPORTED, "%s: %s",
                              what, msg);
                    continue;
                }
                assert_same_plan(&fd[0], &fd[1], what);
                spmvport_format_data_free(&fd[0]);
                spmvport_format_data_free(&fd[1]);
            }
        spmv_matrix_destroy(A);
    }
#endif
}

/* ---- the generic options at the builders' door ----------------------------------------------------------------
 * spmv_plan_create checks them; spmvport_format_build (which the tests above call directly) checks them too, so a
 * direct caller gets a status naming the option, not a builder reading past its lane tables (session 56's fuzzer
 * crashed on lanes_per_row = 3 passed this way). */
Test(cpu_gpu_layouts, direct_build_checks_the_generic_options)
{
    static const struct { int warp, lanes, nnz_per_warp; const char *named; } bad[] = {
        {32, 3, 0, "lanes_per_row"},  {32, 64, 0, "lanes_per_row"}, {64, -2, 0, "lanes_per_row"},
        {32, 0, 33, "nnz_per_warp"}, {64, 0, -64, "nnz_per_warp"}};
    spmv_matrix_t *A;
    cr_assert_eq(spmv_matrix_generate(&A, "stencil2d:5:20", SPMV_F64, 7), SPMV_STATUS_SUCCESS);
    for (size_t f = 0; f < sizeof every_format / sizeof every_format[0]; f++)
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            spmv_plan_options_t opt;
            spmv_plan_options_init(&opt);
            opt.lanes_per_row = bad[k].lanes;
            opt.nnz_per_warp = bad[k].nnz_per_warp;
            spmvport_format_data fd;
            char msg[SPMVPORT_MSG_LEN] = "";
            cr_assert_eq(spmvport_format_build(&fd, A, every_format[f], bad[k].warp, &support_gpu_models[0], &opt,
                                               msg, sizeof msg),
                         SPMV_STATUS_INVALID_ARGUMENT, "%s, case %zu", spmv_format_name(every_format[f]), k);
            cr_assert(strstr(msg, bad[k].named) != NULL, "%s: '%s'", spmv_format_name(every_format[f]), msg);
            cr_assert_eq(fd.narrays, 0, "nothing allocated");
        }
    spmv_matrix_destroy(A);
}

/* ---- matrices the public API never makes, at the builders' door -----------------------------------------------
 * spmv_matrix_create_csr and the readers check every matrix they make; a direct caller of spmvport_format_build
 * can pass anything, and every builder checks what it indexes by before it does. Before session 59 the CSR
 * builders and ehyb built plans from out-of-range columns (ehyb crashed at 2^30) and hbp's column-read count wrote
 * out of bounds. One column of a 70000 x 70000 matrix out of range, or a row pointer that goes down:
 * INVALID_MATRIX naming the format and the row or entry, on the H200 model and the CPU. */
Test(cpu_gpu_layouts, direct_build_refuses_unchecked_matrices)
{
    enum { N = 70000, PER = 4 };
    static int32_t ptr[N + 1], col[N * PER];
    static double val[N * PER];
    const int32_t bad[] = {-5, N, 1 << 30, INT32_MIN, 0 /* 0: row N/2's pointer goes down instead */};
    const spmv_device_info_t cpu = {.backend = SPMV_BACKEND_CPU, .name = "cpu", .warp_size = 32};
    const spmv_device_info_t *devices[] = {&support_gpu_models[0], &cpu};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        for (int32_t r = 0; r <= N; r++) ptr[r] = r * PER;
        for (int32_t r = 0; r < N; r++) /* entry j of row r in the j-th quarter of the columns: sorted, in range */
            for (int32_t j = 0; j < PER; j++) col[r * PER + j] = j * (N / PER) + r / PER, val[r * PER + j] = 1.0;
        if (b + 1 < sizeof bad / sizeof bad[0]) col[(N / 2) * PER + 1] = bad[b];
        else ptr[N / 2] = ptr[N / 2 + 1] + 1;
        struct spmv_matrix A = {N, N, N * PER, SPMV_F64, ptr, col, val, NULL, N * PER};
        for (size_t d = 0; d < 2; d++)
            for (size_t f = 0; f < sizeof every_format / sizeof every_format[0]; f++) {
                const char *name = spmv_format_name(every_format[f]);
                spmv_plan_options_t opt;
                spmv_plan_options_init(&opt);
                spmvport_format_data fd;
                char msg[SPMVPORT_MSG_LEN] = "";
                spmv_status_t st = spmvport_format_build(&fd, &A, every_format[f], 32, devices[d], &opt, msg,
                                                         sizeof msg);
                if (every_format[f] == SPMV_FORMAT_EHYB && st == SPMV_STATUS_NOT_SUPPORTED) continue; /* no METIS */
                cr_assert_eq(st, SPMV_STATUS_INVALID_MATRIX, "%s on %s, case %zu: %s (%s)", name, devices[d]->name, b,
                             spmv_status_string(st), msg);
                cr_assert(strstr(msg, name) != NULL &&
                              (strstr(msg, "row") != NULL || strstr(msg, "entry") != NULL ||
                               strstr(msg, "position") != NULL),
                          "%s: '%s'", name, msg);
                cr_assert_eq(fd.narrays, 0, "%s: nothing kept", name);
            }
    }
}
