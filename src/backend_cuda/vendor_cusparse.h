/*
 * vendor_cusparse.h -- cuSPARSE's names for the shared vendor glue (src/common/device/vendor_spmv.h).
 * Compiles with CUDA 11.8 and 12.x too: SpMV_preprocess exists from cuSPARSE 12.4 on (CUDA 12.5+), so it is
 * guarded by CUSPARSE_VERSION; older toolkits run SpMV without it.
 */
#ifndef SPMVPORT_VENDOR_CUSPARSE_H
#define SPMVPORT_VENDOR_CUSPARSE_H

#include <cusparse.h>

#define VSP(name) cusparse##name
#define VSP_E(name) CUSPARSE_##name
typedef cudaDataType vsp_data_t;
#define VSP_R_32F CUDA_R_32F
#define VSP_R_64F CUDA_R_64F
/* the library honours beta == 0 without reading y (checked by the GPU tests, which poison y with NaN) */
#define VSP_BETA0_READS_Y 0
#if defined(CUSPARSE_VERSION) && CUSPARSE_VERSION >= 12400
#define VSP_HAS_PREPROCESS 1
#else
#define VSP_HAS_PREPROCESS 0
#endif

static inline const char *vsp_status_string(cusparseStatus_t s) { return cusparseGetErrorString(s); }

#endif
