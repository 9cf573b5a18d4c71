/*
 * spmvport_cuda.cu -- the CUDA backend module (libspmvport_cuda.so): the shared device sources compiled by
 * nvcc, with cuSPARSE as the vendor library. Everything lives in src/common/device.
 */
#include "vendor_cusparse.h"
#include "device/backend_impl.h"
