/*
 * ehyb_without_metis.c -- built instead of test_format_ehyb.c when libspmvport is configured without METIS
 * (SPMVPORT_METIS=OFF or no libmetis-dev): ehyb must refuse with SPMV_STATUS_NOT_SUPPORTED and say why, on every
 * path a user can reach it by, and leave every other format working.
 */
#include <string.h>

#include "support.h"

Test(ehyb_without_metis, plan_create_is_not_supported_with_the_reason)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "stencil2d:5:16", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    spmv_plan_t *plan = NULL;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_EHYB, NULL), SPMV_STATUS_NOT_SUPPORTED);
    cr_assert_null(plan);
    cr_assert(strstr(spmv_last_error(ctx), "METIS") != NULL, "message: '%s'", spmv_last_error(ctx));
    /* the other formats are unaffected, AUTO with measurement too (it never times ehyb) */
    cr_assert_geq(support_check_format(ctx, SPMV_FORMAT_CSR_LB, NULL, "stencil2d:5:16", A, 0), 0.0);
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.auto_tune = 1;
    cr_assert_geq(support_check_format(ctx, SPMV_FORMAT_AUTO, &opt, "stencil2d:5:16", A, 0), 0.0);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}
