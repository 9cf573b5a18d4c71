/* The header's worked example, built against an installed libspmvport: exits 0 when y = (3, 3, 15, 7). */
#include <stdio.h>
#include <spmvport.h>

int main(void)
{
    int32_t row_ptr[] = {0, 2, 3, 6, 7}, col_idx[] = {0, 2, 1, 0, 2, 3, 3};
    double values[] = {1, 2, 3, 4, 5, 6, 7}, x[4] = {1, 1, 1, 1}, y[4] = {0};
    spmv_context_t *ctx;
    spmv_matrix_t *A;
    spmv_plan_t *plan;
    void *dx, *dy;
    if (spmv_context_create(&ctx, SPMV_BACKEND_CPU, 0) != SPMV_STATUS_SUCCESS) return 1;
    if (spmv_matrix_create_csr(&A, 4, 4, 7, row_ptr, col_idx, values, SPMV_F64, 0, 0) != SPMV_STATUS_SUCCESS) return 1;
    if (spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_AUTO, NULL) != SPMV_STATUS_SUCCESS) return 1;
    spmv_malloc(ctx, &dx, sizeof x);
    spmv_malloc(ctx, &dy, sizeof y);
    spmv_copy_to_device(ctx, dx, x, sizeof x);
    if (spmv_execute(plan, 1.0, dx, 0.0, dy) != SPMV_STATUS_SUCCESS) return 1;
    spmv_copy_to_host(ctx, y, dy, sizeof y);
    printf("libspmvport %s: y = %g %g %g %g\n", spmv_version_string(), y[0], y[1], y[2], y[3]);
    spmv_free(ctx, dx);
    spmv_free(ctx, dy);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
    return y[0] == 3 && y[1] == 3 && y[2] == 15 && y[3] == 7 ? 0 : 1;
}
