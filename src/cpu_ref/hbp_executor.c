/*
 * hbp_executor.c -- CPU executor of format hbp (placeholder: the builder refuses every matrix until it lands).
 */
#include "cpu_ref.h"

void spmvport_cpu_hbp(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y)
{
    (void)fd; (void)alpha; (void)x; (void)beta; (void)y;
}
