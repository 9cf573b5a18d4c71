/*
 * test_api.c -- the public API's contract: argument checks with messages, matrix validation, contexts and
 * backends, plans (info, update_values, unsupported formats), device memory helpers and the worked example.
 */
#include <math.h>
#include <string.h>

#include "internal.h" /* spmvport_stats_fit, the stats truncation rule */
#include "support.h"

/* The worked example of spmvport.h. */
static const int32_t ex_ptr[] = {0, 2, 3, 6, 7}, ex_col[] = {0, 2, 1, 0, 2, 3, 3};
static const double ex_val[] = {1, 2, 3, 4, 5, 6, 7};

static spmv_matrix_t *example(void)
{
    spmv_matrix_t *A;
    cr_assert_eq(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, ex_col, ex_val, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);
    return A;
}

#define ASSERT_FAILS(call, status, word)                                                                         \
    do {                                                                                                       \
        spmv_status_t st_ = (call);                                                                            \
        cr_assert_eq(st_, status, "%s returned %s: %s", #call, spmv_status_string(st_), spmv_last_error(NULL)); \
        cr_assert(strstr(spmv_last_error(NULL), word) != NULL, "message '%s' lacks '%s'", spmv_last_error(NULL), \
                  word);                                                                                       \
    } while (0)

Test(api, worked_example_gives_documented_y)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = example();
    spmv_plan_t *plan;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_AUTO, NULL), SPMV_STATUS_SUCCESS);
    double x[4] = {1, 1, 1, 1}, y[4] = {NAN, NAN, NAN, NAN};
    cr_assert_eq(spmv_execute(plan, 1.0, x, 0.0, y), SPMV_STATUS_SUCCESS);
    const double want[4] = {3, 3, 15, 7};
    for (int i = 0; i < 4; i++) cr_assert_eq(y[i], want[i], "y[%d] = %g", i, y[i]);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

Test(api, status_strings_and_names)
{
    for (int s = 0; s <= SPMV_STATUS_INTERNAL_ERROR; s++)
        cr_assert(strncmp(spmv_status_string((spmv_status_t)s), "SPMV_STATUS_", 12) == 0);
    cr_assert_str_eq(spmv_status_string((spmv_status_t)999), "SPMV_STATUS_UNKNOWN");
    for (int f = 0; f < SPMV_FORMAT_COUNT; f++) {
        spmv_format_t back;
        cr_assert_eq(spmv_format_from_name(spmv_format_name((spmv_format_t)f), &back), SPMV_STATUS_SUCCESS);
        cr_assert_eq(back, f);
    }
    spmv_format_t f;
    ASSERT_FAILS(spmv_format_from_name("csr_fancy", &f), SPMV_STATUS_INVALID_ARGUMENT, "csr_fancy");
    cr_assert_str_eq(spmv_backend_name(SPMV_BACKEND_HIP), "hip");
}

/* ---- matrix validation ------------------------------------------------------------------------------------ */

Test(matrix, rejects_null_and_negative_arguments)
{
    spmv_matrix_t *A;
    ASSERT_FAILS(spmv_matrix_create_csr(NULL, 4, 4, 7, ex_ptr, ex_col, ex_val, SPMV_F64, 0, 0),
                 SPMV_STATUS_INVALID_ARGUMENT, "A is NULL");
    ASSERT_FAILS(spmv_matrix_create_csr(&A, -1, 4, 7, ex_ptr, ex_col, ex_val, SPMV_F64, 0, 0),
                 SPMV_STATUS_INVALID_ARGUMENT, "negative");
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, NULL, ex_col, ex_val, SPMV_F64, 0, 0),
                 SPMV_STATUS_INVALID_ARGUMENT, "row_ptr");
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, NULL, ex_val, SPMV_F64, 0, 0),
                 SPMV_STATUS_INVALID_ARGUMENT, "col_idx");
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, ex_col, NULL, SPMV_F64, 0, 0),
                 SPMV_STATUS_INVALID_ARGUMENT, "values");
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, ex_col, ex_val, (spmv_precision_t)7, 0, 0),
                 SPMV_STATUS_INVALID_ARGUMENT, "precision");
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, ex_col, ex_val, SPMV_F64, 2, 0),
                 SPMV_STATUS_INVALID_ARGUMENT, "index_base");
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, ex_col, ex_val, SPMV_F64, 0, 0x100),
                 SPMV_STATUS_INVALID_ARGUMENT, "flag");
}

Test(matrix, rejects_bad_structure_naming_the_index)
{
    spmv_matrix_t *A;
    int32_t ptr[] = {0, 2, 1, 6, 7};
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ptr, ex_col, ex_val, SPMV_F64, 0, 0), SPMV_STATUS_INVALID_MATRIX,
                 "row 1");
    int32_t ptr_end[] = {0, 2, 3, 6, 6};
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ptr_end, ex_col, ex_val, SPMV_F64, 0, 0),
                 SPMV_STATUS_INVALID_MATRIX, "row_ptr[4]");
    int32_t ptr_start[] = {1, 2, 3, 6, 7};
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ptr_start, ex_col, ex_val, SPMV_F64, 0, 0),
                 SPMV_STATUS_INVALID_MATRIX, "row_ptr[0]");
    int32_t col[] = {0, 2, 1, 0, 2, 4, 3};
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, col, ex_val, SPMV_F64, 0, 0), SPMV_STATUS_INVALID_MATRIX,
                 "col_idx[5] = 4");
    int32_t neg[] = {0, -1, 1, 0, 2, 3, 3};
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, neg, ex_val, SPMV_F64, 0, 0), SPMV_STATUS_INVALID_MATRIX,
                 "out of range");
    /* 1-based: index 0 is out of range */
    int32_t ptr1[] = {1, 3, 4, 7, 8}, col1[] = {1, 3, 2, 1, 3, 4, 0};
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ptr1, col1, ex_val, SPMV_F64, 1, 0), SPMV_STATUS_INVALID_MATRIX,
                 "col_idx[6] = 0");
}

Test(matrix, nonfinite_values_rejected_unless_allowed)
{
    spmv_matrix_t *A;
    double val[] = {1, 2, 3, NAN, 5, 6, 7};
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, ex_col, val, SPMV_F64, 0, 0), SPMV_STATUS_INVALID_MATRIX,
                 "values[3]");
    float valf[] = {1, 2, 3, 4, INFINITY, 6, 7};
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, ex_col, valf, SPMV_F32, 0, 0), SPMV_STATUS_INVALID_MATRIX,
                 "not finite");
    cr_assert_eq(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, ex_col, val, SPMV_F64, 0, SPMV_MATRIX_ALLOW_NONFINITE),
                 SPMV_STATUS_SUCCESS);
    spmv_matrix_destroy(A);
}

Test(matrix, unsorted_and_duplicates_by_flag)
{
    spmv_matrix_t *A;
    int32_t col_unsorted[] = {2, 0, 1, 3, 2, 0, 3};
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, col_unsorted, ex_val, SPMV_F64, 0, 0),
                 SPMV_STATUS_UNSORTED, "SPMV_MATRIX_SORT");
    cr_assert_eq(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, col_unsorted, ex_val, SPMV_F64, 0, SPMV_MATRIX_SORT),
                 SPMV_STATUS_SUCCESS);
    const int32_t *ptr, *col;
    const void *v;
    spmv_matrix_get_csr(A, &ptr, &col, &v);
    cr_assert_eq(col[0], 0);
    cr_assert_eq(((const double *)v)[0], 2.0); /* the value travelled with its column */
    cr_assert_eq(col[1], 2);
    spmv_matrix_destroy(A);

    int32_t col_dup[] = {0, 0, 1, 0, 2, 3, 3};
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, col_dup, ex_val, SPMV_F64, 0, 0), SPMV_STATUS_UNSORTED,
                 "");
    ASSERT_FAILS(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, col_dup, ex_val, SPMV_F64, 0, SPMV_MATRIX_SORT),
                 SPMV_STATUS_UNSORTED, "row 0 has column 0 more than once");
    cr_assert_eq(spmv_matrix_create_csr(&A, 4, 4, 7, ex_ptr, col_dup, ex_val, SPMV_F64, 0,
                                        SPMV_MATRIX_SUM_DUPLICATES), SPMV_STATUS_SUCCESS);
    int32_t nnz;
    spmv_matrix_get_size(A, NULL, NULL, &nnz, NULL);
    cr_assert_eq(nnz, 6);
    spmv_matrix_get_csr(A, &ptr, &col, &v);
    cr_assert_eq(((const double *)v)[0], 3.0); /* 1 + 2 */
    spmv_matrix_destroy(A);
}

Test(matrix, one_based_input_and_convert)
{
    int32_t ptr1[] = {1, 3, 4, 7, 8}, col1[] = {1, 3, 2, 1, 3, 4, 4};
    spmv_matrix_t *A, *B;
    cr_assert_eq(spmv_matrix_create_csr(&A, 4, 4, 7, ptr1, col1, ex_val, SPMV_F64, 1, 0), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_convert(&B, A, SPMV_F32), SPMV_STATUS_SUCCESS);
    const int32_t *ptr, *col;
    const void *v;
    spmv_matrix_get_csr(B, &ptr, &col, &v);
    cr_assert_eq(ptr[4], 7);
    cr_assert_eq(col[6], 3);
    cr_assert_eq(((const float *)v)[6], 7.0f);
    spmv_precision_t p;
    spmv_matrix_get_size(B, NULL, NULL, NULL, &p);
    cr_assert_eq(p, SPMV_F32);
    spmv_matrix_destroy(A);
    spmv_matrix_destroy(B);
    cr_assert_eq(spmv_matrix_destroy(NULL), SPMV_STATUS_SUCCESS);
}

/* ---- contexts -------------------------------------------------------------------------------------------- */

Test(context, cpu_always_opens_and_reports_itself)
{
    spmv_context_t *ctx;
    cr_assert_eq(spmv_context_create(&ctx, SPMV_BACKEND_CPU, 0), SPMV_STATUS_SUCCESS);
    spmv_device_info_t info;
    cr_assert_eq(spmv_context_get_info(ctx, &info), SPMV_STATUS_SUCCESS);
    cr_assert_eq(info.backend, SPMV_BACKEND_CPU);
    cr_assert_eq(info.warp_size, 32);
    cr_assert(strstr(info.name, "CPU") != NULL);
    cr_assert_eq(spmv_context_set_stream(ctx, NULL), SPMV_STATUS_SUCCESS);
    spmv_context_destroy(ctx);
    cr_assert_eq(spmv_context_destroy(NULL), SPMV_STATUS_SUCCESS);
}

Test(context, bad_arguments)
{
    spmv_context_t *ctx;
    ASSERT_FAILS(spmv_context_create(NULL, SPMV_BACKEND_CPU, 0), SPMV_STATUS_INVALID_ARGUMENT, "ctx");
    ASSERT_FAILS(spmv_context_create(&ctx, (spmv_backend_t)9, 0), SPMV_STATUS_INVALID_ARGUMENT, "backend 9");
    ASSERT_FAILS(spmv_context_create(&ctx, SPMV_BACKEND_CPU, -2), SPMV_STATUS_INVALID_ARGUMENT, "device_index");
    ASSERT_FAILS(spmv_context_create(&ctx, SPMV_BACKEND_CPU, 3), SPMV_STATUS_BACKEND_UNAVAILABLE, "device");
    cr_assert_null(ctx);
}

Test(context, missing_gpu_module_is_a_status_and_auto_falls_back)
{
    /* point the module search at an empty folder: no module can be found, so CUDA and HIP are unavailable */
    setenv("SPMVPORT_BACKEND_PATH", SPMVPORT_TEST_TMPDIR, 1);
    spmv_context_t *ctx;
    ASSERT_FAILS(spmv_context_create(&ctx, SPMV_BACKEND_CUDA, 0), SPMV_STATUS_BACKEND_UNAVAILABLE, "cuda");
    ASSERT_FAILS(spmv_context_create(&ctx, SPMV_BACKEND_HIP, 0), SPMV_STATUS_BACKEND_UNAVAILABLE, "hip");
    cr_assert_eq(spmv_context_create(&ctx, SPMV_BACKEND_AUTO, 0), SPMV_STATUS_SUCCESS);
    spmv_device_info_t info;
    spmv_context_get_info(ctx, &info);
    cr_assert_eq(info.backend, SPMV_BACKEND_CPU);
    cr_assert(strstr(spmv_last_error(ctx), "cuda") != NULL, "auto says why: '%s'", spmv_last_error(ctx));
    spmv_context_destroy(ctx);
}

Test(context, memory_helpers_round_trip)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    double h[5] = {1, 2, 3, 4, 5}, back[5] = {0};
    void *d;
    cr_assert_eq(spmv_malloc(ctx, &d, sizeof h), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_copy_to_device(ctx, d, h, sizeof h), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_copy_to_host(ctx, back, d, sizeof h), SPMV_STATUS_SUCCESS);
    cr_assert_arr_eq(h, back, sizeof h);
    cr_assert_eq(spmv_memset(ctx, d, 0, sizeof h), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_copy_to_host(ctx, back, d, sizeof h), SPMV_STATUS_SUCCESS);
    cr_assert_eq(back[4], 0.0);
    cr_assert_eq(spmv_synchronize(ctx), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_copy_to_device(ctx, NULL, h, 8), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(spmv_last_error(ctx), "dst") != NULL);
    cr_assert_eq(spmv_malloc(ctx, NULL, 8), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(spmv_free(ctx, d), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_free(ctx, NULL), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_malloc(NULL, &d, 8), SPMV_STATUS_INVALID_ARGUMENT);
    double gbps = 0;
    cr_assert_eq(spmv_context_read_bandwidth(ctx, 1 << 20, 2, &gbps), SPMV_STATUS_SUCCESS);
    cr_assert(gbps > 0);
    spmv_context_destroy(ctx);
}

/* ---- plans ------------------------------------------------------------------------------------------------ */

Test(plan, info_reports_format_bytes_and_times)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = example();
    spmv_plan_t *plan;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_CSR_SCALAR, NULL), SPMV_STATUS_SUCCESS);
    spmv_plan_info_t info;
    cr_assert_eq(spmv_plan_get_info(plan, &info), SPMV_STATUS_SUCCESS);
    cr_assert_eq(info.format, SPMV_FORMAT_CSR_SCALAR);
    cr_assert_eq(info.nnz, 7);
    cr_assert_eq(info.device_bytes, 5 * 4 + 7 * 4 + 7 * 8); /* row_ptr + col_idx + values */
    cr_assert(info.build_ms >= 0 && info.upload_ms >= 0);
    cr_assert_eq(info.deterministic, 1);
    spmv_plan_destroy(plan);
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_AUTO, NULL), SPMV_STATUS_SUCCESS);
    spmv_plan_get_info(plan, &info);
    cr_assert_neq(info.format, SPMV_FORMAT_AUTO, "AUTO reports what it chose");
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

Test(plan, unsupported_formats_say_so)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = example();
    spmv_plan_t *plan = (spmv_plan_t *)1;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_VENDOR, NULL), SPMV_STATUS_NOT_SUPPORTED);
    cr_assert(strstr(spmv_last_error(ctx), "vendor") != NULL);
    cr_assert_null(plan);
    for (int f = SPMV_FORMAT_TILE; f < SPMV_FORMAT_COUNT; f++) {
        spmv_status_t st = spmv_plan_create(&plan, ctx, A, (spmv_format_t)f, NULL);
        if (st == SPMV_STATUS_SUCCESS) { spmv_plan_destroy(plan); continue; } /* a format that has landed */
        cr_assert_eq(st, SPMV_STATUS_NOT_SUPPORTED, "%s", spmv_format_name((spmv_format_t)f));
        cr_assert(strstr(spmv_last_error(ctx), spmv_format_name((spmv_format_t)f)) != NULL);
    }
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, (spmv_format_t)42, NULL), SPMV_STATUS_INVALID_ARGUMENT);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

Test(plan, bad_options_are_named)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = example();
    spmv_plan_t *plan;
    spmv_plan_options_t o;
    spmv_plan_options_init(&o);
    o.warp_size = 48;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_CSR_VECTOR, &o), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(spmv_last_error(ctx), "warp_size") != NULL);
    spmv_plan_options_init(&o);
    o.lanes_per_row = 3;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_CSR_VECTOR, &o), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(spmv_last_error(ctx), "lanes_per_row") != NULL);
    spmv_plan_options_init(&o);
    o.nnz_per_warp = 33;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_CSR_LB, &o), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(spmv_last_error(ctx), "nnz_per_warp") != NULL);
    spmv_plan_options_init(&o);
    o.vendor_alg = 5;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_CSR_LB, &o), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(spmv_plan_create(&plan, ctx, NULL, SPMV_FORMAT_CSR_LB, NULL), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(spmv_plan_create(&plan, NULL, A, SPMV_FORMAT_CSR_LB, NULL), SPMV_STATUS_INVALID_ARGUMENT);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

Test(plan, execute_checks_vectors)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = example();
    spmv_plan_t *plan;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_CSR_LB, NULL), SPMV_STATUS_SUCCESS);
    double x[4] = {1, 1, 1, 1}, y[4];
    cr_assert_eq(spmv_execute(plan, 1, NULL, 0, y), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(spmv_last_error(ctx), "x is NULL") != NULL);
    cr_assert_eq(spmv_execute(plan, 1, x, 0, NULL), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(spmv_execute(plan, 1, x, 0, x), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(spmv_execute(NULL, 1, x, 0, y), SPMV_STATUS_INVALID_ARGUMENT);
    double ms[3];
    cr_assert_eq(spmv_plan_time(plan, 1, x, 0, y, 1, 3, ms), SPMV_STATUS_SUCCESS);
    cr_assert(ms[0] >= 0);
    cr_assert_eq(spmv_plan_time(plan, 1, x, 0, y, 1, 0, ms), SPMV_STATUS_INVALID_ARGUMENT);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* update_values with creator-order values (unsorted, duplicated input) on every CSR format */
Test(plan, update_values_follows_the_creators_order)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    int32_t ptr[] = {0, 3, 4, 7, 8}, col[] = {2, 0, 0, 1, 3, 0, 2, 3}; /* row 0: unsorted with a duplicate */
    double v1[] = {1, 2, 3, 4, 5, 6, 7, 8}, v2[] = {10, 20, 30, 40, 50, 60, 70, 80};
    spmv_matrix_t *A, *B;
    cr_assert_eq(spmv_matrix_create_csr(&A, 4, 4, 8, ptr, col, v1, SPMV_F64, 0, SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_create_csr(&B, 4, 4, 8, ptr, col, v2, SPMV_F64, 0, SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS);
    for (int f = SPMV_FORMAT_CSR_SCALAR; f <= SPMV_FORMAT_CSR_LB; f++) {
        spmv_plan_t *plan;
        cr_assert_eq(spmv_plan_create(&plan, ctx, A, (spmv_format_t)f, NULL), SPMV_STATUS_SUCCESS);
        cr_assert_eq(spmv_plan_update_values(plan, v2), SPMV_STATUS_SUCCESS);
        double x[4] = {1, -2, 3, 0.5}, y[4], ratio;
        cr_assert_eq(spmv_execute(plan, 1, x, 0, y), SPMV_STATUS_SUCCESS);
        cr_assert_eq(spmv_reference_check(B, 1, x, 0, NULL, y, &ratio, NULL), SPMV_STATUS_SUCCESS);
        cr_assert(ratio <= 1, "%s: updated values not used (ratio %g)", spmv_format_name((spmv_format_t)f), ratio);
        cr_assert_eq(y[0], 20 + 30 + 3 * 10, "row 0 = (20+30)*x0 + 10*x2");
        cr_assert_eq(spmv_plan_update_values(plan, NULL), SPMV_STATUS_INVALID_ARGUMENT);
        spmv_plan_destroy(plan);
    }
    spmv_matrix_destroy(A);
    spmv_matrix_destroy(B);
    spmv_context_destroy(ctx);
}

/* ---- the oracle itself: it must catch a wrong answer ------------------------------------------------------ */

Test(oracle, catches_one_ulp_too_many_and_nan)
{
    spmv_matrix_t *A = example();
    double x[4] = {1, 1, 1, 1}, y[4] = {3, 3, 15, 7}, ratio;
    int32_t row;
    cr_assert_eq(spmv_reference_check(A, 1, x, 0, NULL, y, &ratio, &row), SPMV_STATUS_SUCCESS);
    cr_assert_eq(ratio, 0.0);
    y[2] = 15.001;
    spmv_reference_check(A, 1, x, 0, NULL, y, &ratio, &row);
    cr_assert(ratio > 1 && row == 2, "ratio %g row %d", ratio, row);
    y[2] = NAN;
    spmv_reference_check(A, 1, x, 0, NULL, y, &ratio, &row);
    cr_assert(isnan(ratio) && row == 2);
    cr_assert_eq(spmv_reference_check(A, 1, x, 1, NULL, y, &ratio, NULL), SPMV_STATUS_INVALID_ARGUMENT);
    spmv_matrix_destroy(A);
}

/* Stats reach the caller as whole pairs and the auto_tune timings always fit: CI once saw a tile or hbp plan
 * (about 450 characters of pairs) win the search and the timings cut off mid-number. */
Test(plan, stats_keep_whole_pairs_and_the_tail)
{
    char src[64], dst[24];
    strcpy(src, "a=1;bb=22;ccc=333");
    spmvport_stats_fit(dst, sizeof dst, src, sizeof src, NULL);
    cr_assert_str_eq(dst, "a=1;bb=22;ccc=333");
    spmvport_stats_fit(dst, sizeof dst, src, sizeof src, "t=0.12,x:9");
    cr_assert_str_eq(dst, "a=1;bb=22;t=0.12,x:9", "'%s'", dst); /* 23 characters at most: ccc gives way */
    spmvport_stats_fit(dst, sizeof dst, src, sizeof src, "t=0.12,x:9,y:88");
    cr_assert_str_eq(dst, "a=1;t=0.12,x:9,y:88", "'%s'", dst);
    spmvport_stats_fit(dst, sizeof dst, src, sizeof src, "tail=0123456789abcdefg");
    cr_assert_str_eq(dst, "tail=0123456789abcdefg", "'%s'", dst); /* no pair fits beside it */
    spmvport_stats_fit(dst, sizeof dst, src, sizeof src, "tail=0123456789abcdefgh-too-long");
    cr_assert_str_eq(dst, "a=1;bb=22;ccc=333", "'%s'", dst); /* a tail that cannot fit is the one dropped */
    spmvport_stats_fit(dst, 10, src, sizeof src, NULL);
    cr_assert_str_eq(dst, "a=1;bb=22", "'%s'", dst);
    spmvport_stats_fit(dst, 9, src, sizeof src, NULL);
    cr_assert_str_eq(dst, "a=1", "'%s'", dst);
    char full[14] = "a=1;bb=22;ccc"; /* a source that filled its buffer: "ccc=333" was cut */
    spmvport_stats_fit(dst, sizeof dst, full, sizeof full, NULL);
    cr_assert_str_eq(dst, "a=1;bb=22", "'%s'", dst);
    spmvport_stats_fit(dst, sizeof dst, "", 1, "t=1");
    cr_assert_str_eq(dst, "t=1");
}

/* AUTO names the rule that chose the format in the plan's stats, as their last pair; a format asked for by name has
 * no such pair (the CPU's rules: short regular rows csr_scalar, skewed rows csr_lb) */
Test(plan, auto_names_its_rule_in_the_stats)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    static const struct { const char *spec; spmv_format_t format, want; const char *tail; } cases[] = {
        {"stencil2d:5:50", SPMV_FORMAT_AUTO, SPMV_FORMAT_CSR_SCALAR, "auto_rule=short_rows"},
        {"circuit:20000", SPMV_FORMAT_AUTO, SPMV_FORMAT_CSR_LB, "auto_rule=cpu_skewed_rows"},
        {"circuit:20000", SPMV_FORMAT_CSR_LB, SPMV_FORMAT_CSR_LB, NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spmv_matrix_t *A;
        cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, SPMV_F64, 3), SPMV_STATUS_SUCCESS);
        spmv_plan_t *plan;
        cr_assert_eq(spmv_plan_create(&plan, ctx, A, cases[i].format, NULL), SPMV_STATUS_SUCCESS, "%s",
                     spmv_last_error(ctx));
        spmv_plan_info_t info;
        spmv_plan_get_info(plan, &info);
        cr_assert_eq(info.format, cases[i].want, "%s: %s", cases[i].spec, spmv_format_name(info.format));
        const char *rule = strstr(info.stats, "auto_rule=");
        if (cases[i].tail == NULL)
            cr_assert_null(rule, "%s by name: '%s'", cases[i].spec, info.stats);
        else
            cr_assert(rule != NULL && strcmp(rule, cases[i].tail) == 0 && (rule == info.stats || rule[-1] == ';'),
                      "%s: '%s'", cases[i].spec, info.stats);
        spmv_plan_destroy(plan);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

/* AUTO by measurement: every candidate is timed, the fastest kept; the result must be as correct as any plan */
Test(plan, auto_tune_picks_a_timed_candidate_and_stays_correct, .timeout = 300)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.auto_tune = 1;
    support_check_corpus(ctx, SPMV_FORMAT_AUTO, &opt, SPMV_F64);
    spmv_matrix_t *A;
    cr_assert_eq(spmv_matrix_generate(&A, "circuit:20000", SPMV_F32, 3), SPMV_STATUS_SUCCESS);
    spmv_plan_t *plan;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_AUTO, &opt), SPMV_STATUS_SUCCESS, "%s",
                 spmv_last_error(ctx));
    spmv_plan_info_t info;
    spmv_plan_get_info(plan, &info);
    cr_assert_neq(info.format, SPMV_FORMAT_AUTO);
    cr_assert_neq(info.format, SPMV_FORMAT_EHYB, "ehyb is not a candidate");
    const char *tuned = strstr(info.stats, "auto_tune=");
    cr_assert(tuned != NULL, "stats name the timed candidates: '%s'", info.stats);
    cr_assert(strstr(tuned, spmv_format_name(info.format)) != NULL, "the chosen format was timed: '%s'", tuned);
    cr_assert(strstr(tuned, "csr_scalar:") != NULL && strstr(tuned, "teb:") != NULL, "'%s'", tuned);
    cr_assert_null(strstr(info.stats, "auto_rule="), "measured, not chosen by rule: '%s'", info.stats);
    cr_assert_str_eq(spmv_last_error(ctx), "");
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}
