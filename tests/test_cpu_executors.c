/*
 * test_cpu_executors.c -- every CPU executor against the oracle: the edge-case corpus and every shared matrix,
 * at warp size 32 and 64, f32 and f64, alpha/beta in {1,0}, {2,0.5}, {-1,1}; plus option sweeps that stress the
 * warp-grouped layouts (every lanes-per-row of csr_vector, one-warp chunks of csr_lb).
 */
#include "support.h"

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
