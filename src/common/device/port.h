/*
 * port.h -- the portability layer: the ONLY file of libspmvport that knows CUDA from HIP.
 *
 * Everything else in src/common/device is written once against the names below and compiled by nvcc (CUDA
 * backend) and by clang's HIP mode (HIP backend). Kernels take the warp size W as a template parameter: 32 on
 * NVIDIA, 64 on AMD CDNA (gfx9), 32 on AMD RDNA (gfx10+). Which W to launch is a run-time choice of the host
 * (port_dispatch_warp, fed with the device's reported warp size), because the host compiler pass cannot know
 * the target: clang's __AMDGCN_WAVEFRONT_SIZE is 64 in the host pass whatever the offload targets are.
 *
 * HIP builds one code object per offload target (e.g. gfx90a and gfx1030) and instantiates both W = 32 and
 * W = 64 in each. A kernel instantiated for the other wave size compiles (the shuffles take the width as an
 * argument) but its body is dropped by port_warp_matches<W>() in the device pass, so a wave32-only target such
 * as gfx1030 carries an empty W = 64 stub and the host never launches it there.
 *
 * Runtime calls return port_error_t; port_success means success. Nothing here prints or aborts.
 */
#ifndef SPMVPORT_DEVICE_PORT_H
#define SPMVPORT_DEVICE_PORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <type_traits>

#if defined(__HIP__) || defined(__HIPCC__)
#define PORT_HIP 1
#include <hip/hip_runtime.h>
#elif defined(__CUDACC__)
#define PORT_CUDA 1
#include <cuda_runtime.h>
#else
#error "port.h must be compiled by nvcc or by clang in HIP mode"
#endif

/* ---- backend identity ------------------------------------------------------------------------------------ */
#if PORT_HIP
#define PORT_BACKEND_NAME "hip"
#define PORT_BACKEND_KIND SPMV_BACKEND_HIP
#define PORT_RUNTIME_NAME "HIP"
#define PORT_BACKEND_ENTRY_TAGGED spmvport_hip_backend
#else
#define PORT_BACKEND_NAME "cuda"
#define PORT_BACKEND_KIND SPMV_BACKEND_CUDA
#define PORT_RUNTIME_NAME "CUDA"
#define PORT_BACKEND_ENTRY_TAGGED spmvport_cuda_backend
#endif

/* ---- qualifiers -------------------------------------------------------------------------------------------- */
#define PORT_KERNEL __global__
#define PORT_DEVICE __device__ __forceinline__
/* a rare path kept out of line, so that its registers do not raise the kernel's (both runtimes spell it so) */
#define PORT_DEVICE_NOINLINE __device__ __noinline__
#define PORT_HOST_DEVICE __host__ __device__ __forceinline__
#define PORT_SHARED __shared__
#define PORT_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
/* Also at least `blocks` resident blocks per multiprocessor: caps the registers on CUDA (65536 / (threads blocks)).
 * HIP's second argument means something else (waves per execution unit): there, threads only. */
#if PORT_HIP
#define PORT_LAUNCH_BOUNDS_MIN(threads, blocks) __launch_bounds__(threads)
#define PORT_LAUNCH_MIN_BLOCKS 0 /* the block count changes nothing: one instantiation serves every count */
#else
/* The resident threads an SM holds on the architecture of this device pass (sm_75 1024, sm_86/87/89 and sm_120
 * 1536, the others 2048). A block count that does not fit there is left out (ptxas ignored it anyway, with a
 * warning for each kernel): the kernel compiles with its thread bound alone. Capping the count instead spilled
 * (hbp's 8-block option on sm_86: 40 registers, 1.3 KB). An ignored count and an absent one are not compiled
 * quite alike: 5 kernels changed registers (sm_75: tile's inline kernel with CSR steps, 1536 threads, 72 -> 64
 * and 63 -> 64, and hbp's 6-block options; sm_86: hbp's 8-block option, 24 bytes spilled); sm_90 is unchanged.
 * None of this is measured (no such GPU here). */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700 && __CUDA_ARCH__ < 750 || __CUDA_ARCH__ == 800 || \
    __CUDA_ARCH__ == 900 || __CUDA_ARCH__ >= 1000 && __CUDA_ARCH__ < 1200
#define PORT_SM_THREADS 2048
#elif __CUDA_ARCH__ == 750
#define PORT_SM_THREADS 1024
#else
#define PORT_SM_THREADS 1536
#endif
constexpr int port_min_blocks(int threads, int blocks)
{
    return blocks * threads <= PORT_SM_THREADS ? blocks : 0; /* 0: no .minnctapersm */
}
#define PORT_LAUNCH_BOUNDS_MIN(threads, blocks) __launch_bounds__(threads, port_min_blocks(threads, blocks))
#define PORT_LAUNCH_MIN_BLOCKS 1
#endif
/* Kernel launch with dynamic shared memory on a stream: PORT_LAUNCH(grid, block, smem, stream, kernel)(args...);
 * the kernel comes last because its template arguments contain commas. */
#define PORT_LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<(grid), (block), (smem), (stream)>>>

/* ---- warp size and lane masks ------------------------------------------------------------------------------ */
#if PORT_HIP
typedef uint64_t port_lane_mask_t; /* __ballot is 64 bits on every AMD target (upper half zero on wave32) */
#define PORT_MAX_WARP 64
#else
typedef uint32_t port_lane_mask_t;
#define PORT_MAX_WARP 32
#endif
#define PORT_WARP_SMALL 32 /* NVIDIA, AMD RDNA */
#define PORT_WARP_LARGE 64 /* AMD CDNA */

/* The wave size of the code being generated, in a device pass only. */
#if defined(__HIP_DEVICE_COMPILE__)
#define PORT_DEVICE_PASS_WARP __AMDGCN_WAVEFRONT_SIZE
#elif defined(__CUDA_ARCH__)
#define PORT_DEVICE_PASS_WARP 32
#endif

/* Whether the W instantiation is real code for the target being compiled (always true in the host pass). */
template <int W>
PORT_HOST_DEVICE constexpr bool port_warp_matches()
{
#ifdef PORT_DEVICE_PASS_WARP
    return W == PORT_DEVICE_PASS_WARP;
#else
    return true;
#endif
}

/* Whether the host can launch kernels for a device reporting this warp size. */
inline bool port_warp_supported(int warp)
{
#if PORT_HIP
    return warp == PORT_WARP_SMALL || warp == PORT_WARP_LARGE;
#else
    return warp == PORT_WARP_SMALL;
#endif
}

/* Call f(std::integral_constant<int, W>{}) with the W matching `warp`; false when no instantiation exists.
 * CUDA instantiates W = 32 only; HIP both. */
template <typename F>
inline bool port_dispatch_warp(int warp, F &&f)
{
    if (warp == PORT_WARP_SMALL) {
        f(std::integral_constant<int, PORT_WARP_SMALL>());
        return true;
    }
#if PORT_HIP
    if (warp == PORT_WARP_LARGE) {
        f(std::integral_constant<int, PORT_WARP_LARGE>());
        return true;
    }
#endif
    return false;
}

template <int W>
PORT_DEVICE constexpr port_lane_mask_t port_full_mask()
{
    return W == PORT_MAX_WARP ? ~port_lane_mask_t(0) : ((port_lane_mask_t(1) << (W % PORT_MAX_WARP)) - 1);
}

/* ---- thread indices ---------------------------------------------------------------------------------------- */
PORT_DEVICE unsigned port_thread_idx() { return threadIdx.x; }
PORT_DEVICE unsigned port_block_idx() { return blockIdx.x; }
PORT_DEVICE unsigned port_block_dim() { return blockDim.x; }
PORT_DEVICE unsigned port_grid_dim() { return gridDim.x; }
/* Lane within the warp (blocks are multiples of W). */
template <int W>
PORT_DEVICE int port_lane()
{
    return (int)(threadIdx.x & (W - 1));
}
/* Lanes strictly below / at or below `lane`. */
template <int W>
PORT_DEVICE port_lane_mask_t port_lanemask_le(int lane)
{
    return (port_lane_mask_t(2) << lane) - 1; /* wraps to all ones for the top lane */
}

/* ---- warp operations --------------------------------------------------------------------------------------- */
#if PORT_HIP
template <int W, typename T> PORT_DEVICE T port_shfl_down(T v, int delta) { return __shfl_down(v, delta, W); }
template <int W, typename T> PORT_DEVICE T port_shfl_up(T v, int delta) { return __shfl_up(v, delta, W); }
template <int W, typename T> PORT_DEVICE T port_shfl_xor(T v, int mask) { return __shfl_xor(v, mask, W); }
template <int W, typename T> PORT_DEVICE T port_shfl_idx(T v, int src) { return __shfl(v, src, W); }
template <int W> PORT_DEVICE port_lane_mask_t port_ballot(bool p) { return (port_lane_mask_t)__ballot(p); }
PORT_DEVICE int port_popc(port_lane_mask_t m) { return __popcll(m); }
/* Index of the highest set lane; m != 0. */
PORT_DEVICE int port_highest_lane(port_lane_mask_t m) { return 63 - __clzll((long long)m); }
/* HIP 5.2 has no __syncwarp: order LDS traffic across the wave, then a scheduling barrier. */
template <int W>
PORT_DEVICE void port_warp_sync()
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#else
template <int W, typename T> PORT_DEVICE T port_shfl_down(T v, int delta) { return __shfl_down_sync(port_full_mask<W>(), v, delta, W); }
template <int W, typename T> PORT_DEVICE T port_shfl_up(T v, int delta) { return __shfl_up_sync(port_full_mask<W>(), v, delta, W); }
template <int W, typename T> PORT_DEVICE T port_shfl_xor(T v, int mask) { return __shfl_xor_sync(port_full_mask<W>(), v, mask, W); }
template <int W, typename T> PORT_DEVICE T port_shfl_idx(T v, int src) { return __shfl_sync(port_full_mask<W>(), v, src, W); }
template <int W> PORT_DEVICE port_lane_mask_t port_ballot(bool p) { return __ballot_sync(port_full_mask<W>(), p); }
PORT_DEVICE int port_popc(port_lane_mask_t m) { return __popc(m); }
PORT_DEVICE int port_highest_lane(port_lane_mask_t m) { return 31 - __clz((int)m); }
template <int W> PORT_DEVICE void port_warp_sync() { __syncwarp(port_full_mask<W>()); }
#endif

PORT_DEVICE void port_block_sync() { __syncthreads(); }

/* ---- memory ------------------------------------------------------------------------------------------------ */
/* Read-only (non-coherent cache) load; for data that no thread of the kernel writes. */
template <typename T> PORT_DEVICE T port_ldg(const T *p) { return __ldg(p); }
/* Read-only load of data read once (evict first): leaves the caches to data that is reused, like x. HIP: a plain
 * read-only load. */
#ifdef PORT_HIP
template <typename T> PORT_DEVICE T port_ld_stream(const T *p) { return __ldg(p); }
#else
template <typename T> PORT_DEVICE T port_ld_stream(const T *p) { return __ldcs(p); }
#endif

/* A hint: bring [p, p + bytes) of global memory into L2 ahead of its loads, holding no register. CUDA sm_90 and
 * later: one bulk prefetch of the 16-byte granules inside the range (so never past it); other targets: nothing. */
PORT_DEVICE void port_prefetch_l2(const void *p, size_t bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const size_t g = __cvta_generic_to_global(p);
    const size_t lo = (g + 15) & ~(size_t)15, hi = (g + bytes) & ~(size_t)15;
    if (hi > lo) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(lo), "r"((unsigned)(hi - lo)));
#else
    (void)p;
    (void)bytes;
#endif
}

/* 16- and 8-byte vectors for coalesced loads: port_vec<T, N>::type (T in int, float, double). */
template <typename T, int N> struct port_vec;
template <> struct port_vec<int, 2> { typedef int2 type; };
template <> struct port_vec<int, 4> { typedef int4 type; };
template <> struct port_vec<float, 4> { typedef float4 type; };
template <> struct port_vec<double, 2> { typedef double2 type; };
template <> struct port_vec<unsigned, 4> { typedef uint4 type; };
/* Component j (a compile-time constant after unrolling) of such a vector. */
PORT_DEVICE int port_vec_get(const int2 &v, int j) { return j == 0 ? v.x : v.y; }
PORT_DEVICE int port_vec_get(const int4 &v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }
PORT_DEVICE float port_vec_get(const float4 &v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }
PORT_DEVICE double port_vec_get(const double2 &v, int j) { return j == 0 ? v.x : v.y; }

/* p[b] + p[b + stride] + ... (indices below e), added in that order from T(0) with 8 loads in flight: the bits of
 * one load at a time without one dependent round trip per term (the combine passes: a dense row cut into ~100
 * partials waited for ~100 of them). Plain loads when the terms were written by an earlier kernel; Coherent
 * (volatile: from L2, past the multiprocessor's L1) when other thread blocks of this kernel wrote them. */
template <bool Coherent = false, typename T>
PORT_DEVICE T port_ordered_sum(const T *p, long long b, long long e, long long stride)
{
    constexpr int inflight = 8;
    T sum = T(0);
    for (long long k = b; k < e; k += inflight * stride) {
        T v[inflight];
#pragma unroll
        for (int i = 0; i < inflight; i++) {
            const long long j = k + i * stride;
            v[i] = j < e ? (Coherent ? *(const volatile T *)(p + j) : p[j]) : T(0);
        }
#pragma unroll
        for (int i = 0; i < inflight; i++)
            if (k + i * stride < e) sum += v[i];
    }
    return sum;
}

/* Dynamic shared memory of the launch, as T[]. One extern array for every instantiation. */
template <typename T>
PORT_DEVICE T *port_dynamic_shared()
{
    extern __shared__ __attribute__((aligned(16))) unsigned char port_dynamic_smem[];
    return reinterpret_cast<T *>(port_dynamic_smem);
}

/* Order this thread's earlier global writes and atomics before its later ones, device-wide (both runtimes
 * spell it __threadfence). */
PORT_DEVICE void port_threadfence() { __threadfence(); }

/* ---- atomics ----------------------------------------------------------------------------------------------- */
/* f64 atomicAdd on gfx90a is a CAS loop unless built with -munsafe-fp-atomics (device memory only); the CSR
 * kernels use none: their carries are added by a deterministic second pass. */
PORT_DEVICE float port_atomic_add(float *p, float v) { return atomicAdd(p, v); }
PORT_DEVICE double port_atomic_add(double *p, double v) { return atomicAdd(p, v); }
PORT_DEVICE int port_atomic_add(int *p, int v) { return atomicAdd(p, v); } /* tickets */
PORT_DEVICE unsigned port_atomic_add(unsigned *p, unsigned v) { return atomicAdd(p, v); }

/* ---- runtime API ------------------------------------------------------------------------------------------- */
#if PORT_HIP
typedef hipError_t port_error_t;
typedef hipStream_t port_stream_t;
typedef hipEvent_t port_event_t;
#define port_success hipSuccess
#define PORT_RT(name) hip##name
#define PORT_MEMCPY_H2D hipMemcpyHostToDevice
#define PORT_MEMCPY_D2H hipMemcpyDeviceToHost
#define PORT_MEMCPY_D2D hipMemcpyDeviceToDevice
#else
typedef cudaError_t port_error_t;
typedef cudaStream_t port_stream_t;
typedef cudaEvent_t port_event_t;
#define port_success cudaSuccess
#define PORT_RT(name) cuda##name
#define PORT_MEMCPY_H2D cudaMemcpyHostToDevice
#define PORT_MEMCPY_D2H cudaMemcpyDeviceToHost
#define PORT_MEMCPY_D2D cudaMemcpyDeviceToDevice
#endif

typedef enum { port_copy_h2d = 0, port_copy_d2h = 1, port_copy_d2d = 2 } port_copy_kind;

inline port_error_t port_malloc(void **p, size_t bytes) { return PORT_RT(Malloc)(p, bytes); }
inline port_error_t port_free(void *p) { return PORT_RT(Free)(p); }
inline port_error_t port_memcpy_async(void *dst, const void *src, size_t bytes, port_copy_kind kind,
                                      port_stream_t s)
{
    return PORT_RT(MemcpyAsync)(dst, src, bytes,
                                kind == port_copy_h2d ? PORT_MEMCPY_H2D
                                : kind == port_copy_d2h ? PORT_MEMCPY_D2H : PORT_MEMCPY_D2D, s);
}
inline port_error_t port_memset_async(void *p, int value, size_t bytes, port_stream_t s)
{
    return PORT_RT(MemsetAsync)(p, value, bytes, s);
}
inline port_error_t port_mem_get_info(size_t *free_bytes, size_t *total) { return PORT_RT(MemGetInfo)(free_bytes, total); }
inline port_error_t port_stream_synchronize(port_stream_t s) { return PORT_RT(StreamSynchronize)(s); }
inline port_error_t port_event_create(port_event_t *e) { return PORT_RT(EventCreate)(e); }
inline port_error_t port_event_destroy(port_event_t e) { return PORT_RT(EventDestroy)(e); }
inline port_error_t port_event_record(port_event_t e, port_stream_t s) { return PORT_RT(EventRecord)(e, s); }
inline port_error_t port_event_synchronize(port_event_t e) { return PORT_RT(EventSynchronize)(e); }
inline port_error_t port_event_elapsed_ms(float *ms, port_event_t a, port_event_t b)
{
    return PORT_RT(EventElapsedTime)(ms, a, b);
}
inline port_error_t port_get_device_count(int *n) { return PORT_RT(GetDeviceCount)(n); }
inline port_error_t port_set_device(int d) { return PORT_RT(SetDevice)(d); }
inline port_error_t port_runtime_version(int *v) { return PORT_RT(RuntimeGetVersion)(v); }
inline port_error_t port_driver_version(int *v) { return PORT_RT(DriverGetVersion)(v); }
/* Error of the last launch (and clears the non-sticky error state). */
inline port_error_t port_get_last_error() { return PORT_RT(GetLastError)(); }
inline const char *port_error_string(port_error_t e) { return PORT_RT(GetErrorString)(e); }
inline const char *port_error_name(port_error_t e) { return PORT_RT(GetErrorName)(e); }
/* Raise a kernel's dynamic shared memory limit above the default 48 KB (opt-in). */
template <typename K>
inline port_error_t port_set_max_dynamic_shared(K kernel, int bytes)
{
#if PORT_HIP
    return hipFuncSetAttribute(reinterpret_cast<const void *>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize,
                               bytes);
#else
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
#endif
}

/* Error classes the backend turns into statuses. */
inline bool port_error_is_oom(port_error_t e)
{
#if PORT_HIP
    return e == hipErrorOutOfMemory;
#else
    return e == cudaErrorMemoryAllocation;
#endif
}
/* No driver, no device, no usable runtime: CUDA 35 / 100 (and stub, mismatch, compat); HIP 35 / 100 / 101. */
inline bool port_error_is_no_gpu(port_error_t e)
{
#if PORT_HIP
    return e == hipErrorInsufficientDriver || e == hipErrorNoDevice || e == hipErrorInvalidDevice;
#else
    return e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e == cudaErrorStubLibrary ||
           e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice ||
           e == cudaErrorInvalidDevice;
#endif
}

/* Everything spmv_device_info_t needs, read off the device. */
typedef struct port_device_props {
    char name[256];
    int warp_size;
    int multiprocessors;
    size_t shared_mem_per_block; /* opt-in maximum where the runtime has one */
    size_t l2_bytes;
    size_t global_mem_bytes;
    int runtime_version, driver_version;
    int compute_capability; /* 90 for sm_90; the gfx number on AMD (0x90a) */
} port_device_props;

inline port_error_t port_get_device_props(int device, port_device_props *p)
{
    memset(p, 0, sizeof *p);
    port_error_t e;
    int v = 0;
#if PORT_HIP
    hipDeviceProp_t prop;
    if ((e = hipGetDeviceProperties(&prop, device)) != hipSuccess) return e;
    if ((e = hipDeviceGetAttribute(&p->warp_size, hipDeviceAttributeWarpSize, device)) != hipSuccess) return e;
    if ((e = hipDeviceGetAttribute(&p->multiprocessors, hipDeviceAttributeMultiprocessorCount, device)) != hipSuccess)
        return e;
    if ((e = hipDeviceGetAttribute(&v, hipDeviceAttributeL2CacheSize, device)) != hipSuccess) return e;
    p->l2_bytes = (size_t)v;
    /* the opt-in attribute is CUDA-only in HIP 5.2; AMD's limit is the plain per-block one */
    if ((e = hipDeviceGetAttribute(&v, hipDeviceAttributeMaxSharedMemoryPerBlock, device)) != hipSuccess) return e;
    p->shared_mem_per_block = (size_t)v;
    /* "gfx90a:sramecc+:xnack-" -> 0x90a */
    const char *g = strncmp(prop.gcnArchName, "gfx", 3) == 0 ? prop.gcnArchName + 3 : "";
    for (; *g && *g != ':'; g++) {
        int d = *g >= '0' && *g <= '9' ? *g - '0' : *g >= 'a' && *g <= 'f' ? *g - 'a' + 10 : -1;
        if (d < 0) break;
        p->compute_capability = p->compute_capability * 16 + d;
    }
#else
    cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) return e;
    if ((e = cudaDeviceGetAttribute(&p->warp_size, cudaDevAttrWarpSize, device)) != cudaSuccess) return e;
    if ((e = cudaDeviceGetAttribute(&p->multiprocessors, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess)
        return e;
    if ((e = cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, device)) != cudaSuccess) return e;
    p->l2_bytes = (size_t)v;
    if ((e = cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device)) != cudaSuccess) return e;
    p->shared_mem_per_block = (size_t)v;
    p->compute_capability = prop.major * 10 + prop.minor;
#endif
    snprintf(p->name, sizeof p->name, "%s", prop.name);
    p->global_mem_bytes = prop.totalGlobalMem;
    if ((e = port_runtime_version(&p->runtime_version)) != port_success) return e;
    if ((e = port_driver_version(&p->driver_version)) != port_success) return e;
    return port_success;
}

#endif /* SPMVPORT_DEVICE_PORT_H */
