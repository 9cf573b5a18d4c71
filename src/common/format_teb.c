/*
 * format_teb.c -- host builder of format teb (placeholder until the format lands).
 */
#include "format_builders.h"

spmv_status_t spmvport_build_teb(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                 const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
    (void)fd; (void)A; (void)dev; (void)opt;
    spmvport_msg(msg, msglen, "format teb is not implemented in this version of libspmvport");
    return SPMV_STATUS_NOT_SUPPORTED;
}
