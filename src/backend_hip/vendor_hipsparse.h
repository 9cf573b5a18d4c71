/*
 * vendor_hipsparse.h -- hipSPARSE's names for the shared vendor glue (src/common/device/vendor_spmv.h).
 * hipSPARSE 2.3 (ROCm 5.2) declares SpMV_preprocess; a NOT_SUPPORTED answer from it is tolerated. It has no
 * status-string function, hence the table below.
 */
#ifndef SPMVPORT_VENDOR_HIPSPARSE_H
#define SPMVPORT_VENDOR_HIPSPARSE_H

#include <hipsparse/hipsparse.h>

#define VSP(name) hipsparse##name
#define VSP_E(name) HIPSPARSE_##name
typedef hipDataType vsp_data_t;
#define VSP_R_32F HIP_R_32F
#define VSP_R_64F HIP_R_64F
/* the library honours beta == 0 without reading y (checked by the GPU tests, which poison y with NaN) */
#define VSP_BETA0_READS_Y 0
#define VSP_HAS_PREPROCESS 1

static inline const char *vsp_status_string(hipsparseStatus_t s)
{
    switch (s) {
    case HIPSPARSE_STATUS_SUCCESS: return "success";
    case HIPSPARSE_STATUS_NOT_INITIALIZED: return "not initialized";
    case HIPSPARSE_STATUS_ALLOC_FAILED: return "allocation failed";
    case HIPSPARSE_STATUS_INVALID_VALUE: return "invalid value";
    case HIPSPARSE_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case HIPSPARSE_STATUS_MAPPING_ERROR: return "mapping error";
    case HIPSPARSE_STATUS_EXECUTION_FAILED: return "execution failed";
    case HIPSPARSE_STATUS_INTERNAL_ERROR: return "internal error";
    case HIPSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED: return "matrix type not supported";
    case HIPSPARSE_STATUS_ZERO_PIVOT: return "zero pivot";
    case HIPSPARSE_STATUS_NOT_SUPPORTED: return "not supported";
    case HIPSPARSE_STATUS_INSUFFICIENT_RESOURCES: return "insufficient resources";
    default: return "unknown hipSPARSE status";
    }
}

#endif
