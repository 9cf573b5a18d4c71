/*
 * spmvport_hip.hip -- the HIP backend module (libspmvport_hip.so): the shared device sources compiled by clang's
 * HIP mode, with hipSPARSE as the vendor library. Everything lives in src/common/device.
 */
#include "vendor_hipsparse.h"
#include "device/backend_impl.h"
