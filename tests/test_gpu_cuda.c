/* test_gpu_cuda.c -- the GPU suite on the CUDA backend (skipped when no NVIDIA GPU is usable). */
#define GPU_BACKEND SPMV_BACKEND_CUDA
#define SUITE gpu_cuda
#include "gpu_suite.h"
