/* test_gpu_hip.c -- the GPU suite on the HIP backend (skipped when no AMD GPU is usable). */
#define GPU_BACKEND SPMV_BACKEND_HIP
#define SUITE gpu_hip
#include "gpu_suite.h"
