/*
 * spmvport.h -- the public C API of libspmvport.
 *
 * libspmvport computes y = alpha*A*x + beta*y for a sparse matrix A on NVIDIA (CUDA) and AMD (HIP) GPUs and on
 * the CPU, in single or double precision, with several storage formats and a chooser. This header is plain C99
 * and names no CUDA or HIP type: device memory is reached through the context.
 *
 * =====================================================================================================
 * Worked example: a 4x4 matrix
 *
 *         | 1 0 2 0 |        x = (1, 1, 1, 1)      alpha = 1, beta = 0
 *     A = | 0 3 0 0 |
 *         | 4 0 5 6 |        y = A*x = (3, 3, 15, 7)
 *         | 0 0 0 7 |
 *
 *     #include <spmvport.h>
 *
 *     int32_t row_ptr[] = {0, 2, 3, 6, 7};
 *     int32_t col_idx[] = {0, 2, 1, 0, 2, 3, 3};
 *     double  values[]  = {1, 2, 3, 4, 5, 6, 7};
 *     double  x[4] = {1, 1, 1, 1}, y[4];
 *
 *     spmv_context_t *ctx;  spmv_matrix_t *A;  spmv_plan_t *plan;
 *     void *dx, *dy;
 *     if (spmv_context_create(&ctx, SPMV_BACKEND_AUTO, 0) != SPMV_STATUS_SUCCESS) { ... }
 *     spmv_matrix_create_csr(&A, 4, 4, 7, row_ptr, col_idx, values, SPMV_F64, 0, 0);
 *     spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_AUTO, NULL);    // analysis + upload, once
 *     spmv_malloc(ctx, &dx, sizeof x);  spmv_malloc(ctx, &dy, sizeof y);
 *     spmv_copy_to_device(ctx, dx, x, sizeof x);
 *     spmv_execute(plan, 1.0, dx, 0.0, dy);                      // as often as you like
 *     spmv_copy_to_host(ctx, y, dy, sizeof y);                     // y = {3, 3, 15, 7}
 *     spmv_free(ctx, dx); spmv_free(ctx, dy);
 *     spmv_plan_destroy(plan); spmv_matrix_destroy(A); spmv_context_destroy(ctx);
 *
 * Every function returns spmv_status_t. On failure, spmv_last_error(ctx) (or spmv_last_error(NULL) for calls
 * that take no context) gives a message naming the problem: the argument, the index, the file line.
 * No function of the library aborts, exits or prints.
 * =====================================================================================================
 *
 * Threads: a context, and the plans made in it, must be used by one thread at a time. Different contexts may be
 * used from different threads. Error messages are kept per thread and per context.
 */
#ifndef SPMVPORT_H
#define SPMVPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define SPMV_API
#elif defined(__GNUC__)
#define SPMV_API __attribute__((visibility("default")))
#else
#define SPMV_API
#endif

#define SPMVPORT_VERSION_MAJOR 0
#define SPMVPORT_VERSION_MINOR 2
#define SPMVPORT_VERSION_PATCH 0

/* ----------------------------------------------------------------------------------------------------
 * Status codes
 * -------------------------------------------------------------------------------------------------- */
typedef enum spmv_status {
    SPMV_STATUS_SUCCESS = 0,
    SPMV_STATUS_INVALID_ARGUMENT = 1,    /* NULL pointer, negative size, unknown enum, wrong backend's pointer */
    SPMV_STATUS_INVALID_MATRIX = 2,      /* index out of range, row pointer not monotone, NaN/Inf rejected */
    SPMV_STATUS_UNSORTED = 3,            /* columns unsorted or duplicated and no flag asked to fix it */
    SPMV_STATUS_OVERFLOW = 4,            /* a size does not fit the 32-bit indices or size_t */
    SPMV_STATUS_OUT_OF_MEMORY = 5,       /* host allocation failed */
    SPMV_STATUS_DEVICE_OUT_OF_MEMORY = 6,/* device allocation failed; nothing is leaked */
    SPMV_STATUS_IO_ERROR = 7,            /* a file could not be opened, read or written */
    SPMV_STATUS_PARSE_ERROR = 8,         /* malformed Matrix Market input; the message names the line */
    SPMV_STATUS_NOT_SUPPORTED = 9,       /* format/backend/option combination not available in this build */
    SPMV_STATUS_BACKEND_UNAVAILABLE = 10,/* no module, runtime, driver or device for the requested backend */
    SPMV_STATUS_DEVICE_ERROR = 11,       /* the GPU runtime reported an error; the message carries its text */
    SPMV_STATUS_INTERNAL_ERROR = 12      /* a bug in libspmvport: please report it with the message */
} spmv_status_t;

/* A static English name of a status, e.g. "SPMV_STATUS_INVALID_MATRIX". Never NULL. */
SPMV_API const char *spmv_status_string(spmv_status_t status);

/* The library version as "MAJOR.MINOR.PATCH". */
SPMV_API const char *spmv_version_string(void);

/* ----------------------------------------------------------------------------------------------------
 * Contexts and backends
 * -------------------------------------------------------------------------------------------------- */
typedef enum spmv_backend {
    SPMV_BACKEND_AUTO = 0, /* a GPU backend whose module, runtime and device are present, else CPU */
    SPMV_BACKEND_CPU = 1,  /* C99 reference backend, always present; "device" pointers are host pointers */
    SPMV_BACKEND_CUDA = 2, /* NVIDIA, module libspmvport_cuda.so */
    SPMV_BACKEND_HIP = 3   /* AMD, module libspmvport_hip.so */
} spmv_backend_t;

typedef struct spmv_context spmv_context_t;

/* What a context runs on. Figures a backend cannot know are 0 (or "" for strings). */
typedef struct spmv_device_info {
    spmv_backend_t backend;
    char name[128];               /* e.g. "NVIDIA H100 80GB HBM3", or "CPU (2 threads)" */
    int warp_size;                /* 32 on NVIDIA and RDNA, 64 on CDNA; 32 for the CPU backend's executors */
    int multiprocessors;          /* SMs / CUs; CPU: OpenMP threads */
    size_t shared_mem_per_block;  /* bytes a block may use (opt-in maximum) */
    size_t l2_bytes;
    size_t global_mem_bytes;
    int runtime_version;          /* e.g. 13000 for CUDA 13.0 */
    int driver_version;
    int compute_capability;       /* 90 for sm_90; gfx number on AMD (e.g. 0x90a); 0 on CPU */
} spmv_device_info_t;

/* Create a context on `backend`, device `device_index` (0 for the first). With SPMV_BACKEND_AUTO the first GPU
 * backend that works is taken, else the CPU; spmv_last_error(ctx) then says why each GPU backend was passed
 * over. Asking for CUDA or HIP explicitly when it is missing returns SPMV_STATUS_BACKEND_UNAVAILABLE (and
 * *ctx = NULL; the reason is in spmv_last_error(NULL)). GPU modules are looked for in the directory of
 * libspmvport.so and then in each directory of the environment variable SPMVPORT_BACKEND_PATH (':'-separated);
 * the latter wins when set. */
SPMV_API spmv_status_t spmv_context_create(spmv_context_t **ctx, spmv_backend_t backend, int device_index);
SPMV_API spmv_status_t spmv_context_destroy(spmv_context_t *ctx); /* NULL is a no-op */
SPMV_API spmv_status_t spmv_context_get_info(const spmv_context_t *ctx, spmv_device_info_t *info);
/* Name of a backend: "auto", "cpu", "cuda", "hip". */
SPMV_API const char *spmv_backend_name(spmv_backend_t backend);

/* Use the backend's stream (cudaStream_t / hipStream_t passed as void*; NULL = the default stream) for every
 * later copy and execute of this context. A no-op on the CPU backend. */
SPMV_API spmv_status_t spmv_context_set_stream(spmv_context_t *ctx, void *stream);

/* The last error message recorded for this context, or with ctx == NULL the calling thread's last error
 * (every error is recorded there too). "" when there was none. The pointer stays valid until the next call. */
SPMV_API const char *spmv_last_error(const spmv_context_t *ctx);

/* ----------------------------------------------------------------------------------------------------
 * Device memory through the context (host memory on the CPU backend)
 * -------------------------------------------------------------------------------------------------- */
SPMV_API spmv_status_t spmv_malloc(spmv_context_t *ctx, void **ptr, size_t bytes);
SPMV_API spmv_status_t spmv_free(spmv_context_t *ctx, void *ptr); /* NULL is a no-op */
/* Copies are ordered on the context's stream; copy_to_host returns when the data is on the host. */
SPMV_API spmv_status_t spmv_copy_to_device(spmv_context_t *ctx, void *dst, const void *src, size_t bytes);
SPMV_API spmv_status_t spmv_copy_to_host(spmv_context_t *ctx, void *dst, const void *src, size_t bytes);
SPMV_API spmv_status_t spmv_memset(spmv_context_t *ctx, void *ptr, int byte_value, size_t bytes);
SPMV_API spmv_status_t spmv_synchronize(spmv_context_t *ctx);

/* ----------------------------------------------------------------------------------------------------
 * Matrices (host objects; a plan copies what it needs, so a matrix may be destroyed after plan creation)
 * -------------------------------------------------------------------------------------------------- */
typedef enum spmv_precision { SPMV_F32 = 1, SPMV_F64 = 2 } spmv_precision_t;

typedef struct spmv_matrix spmv_matrix_t;

/* Flags of spmv_matrix_create_csr. */
#define SPMV_MATRIX_SORT            1u /* sort the columns of each row instead of rejecting unsorted rows */
#define SPMV_MATRIX_SUM_DUPLICATES  2u /* sum repeated (row, col) entries instead of rejecting them (implies SORT) */
#define SPMV_MATRIX_ALLOW_NONFINITE 4u /* accept NaN and Inf values (rejected by default) */

/* Create a matrix from CSR arrays: m rows, n columns, nnz entries; row_ptr has m+1 entries starting at
 * index_base (0 or 1), col_idx and values nnz entries (values are float for SPMV_F32, double for SPMV_F64);
 * indices are index_base-based. The arrays are copied and checked: negative sizes, NULL pointers (values may
 * not be NULL when nnz > 0; row_ptr never), row_ptr[0] != index_base, row_ptr[m] != nnz + index_base, a row
 * pointer that decreases, a column out of range, NaN/Inf values, unsorted or duplicated columns (unless
 * flags allow them). The message names the first offending row and position. */
SPMV_API spmv_status_t spmv_matrix_create_csr(spmv_matrix_t **A, int32_t m, int32_t n, int32_t nnz,
                                              const int32_t *row_ptr, const int32_t *col_idx, const void *values,
                                              spmv_precision_t precision, int index_base, unsigned flags);

/* Read a Matrix Market file (.mtx, or gzip-compressed .mtx.gz): coordinate format, field real, integer or
 * pattern (pattern entries get value 1), symmetry general, symmetric or skew-symmetric (expanded to both
 * triangles). Duplicate entries are summed. NaN and Inf values are refused (SPMV_STATUS_INVALID_MATRIX), as
 * spmv_matrix_create_csr does by default. Errors name the line: bad banner, unsupported field or format,
 * wrong counts, index 0 or past the size, truncated file, non-numeric fields, sizes beyond int32. */
SPMV_API spmv_status_t spmv_matrix_read_mtx(spmv_matrix_t **A, const char *path, spmv_precision_t precision);

/* Write a matrix as Matrix Market "coordinate real general" (17 significant digits; plain text). */
SPMV_API spmv_status_t spmv_matrix_write_mtx(const spmv_matrix_t *A, const char *path);

/* Generate a matrix, deterministically from `seed`. spec is KIND:PARAMS:
 *   stencil2d:5:N         5-point Laplacian on an N x N grid
 *   stencil3d:7:N         7-point Laplacian on N^3, stencil3d:27:N the 27-point one
 *   fem3d:B:N             N^3 nodes, 27-point node coupling with B x B dense blocks (B = 3: elasticity)
 *   kron:SCALE:EF         R-MAT/Kronecker graph, 2^SCALE vertices, EF edges per vertex, Graph500 parameters
 *                         a = 0.57, b = c = 0.19, random relabelling; undirected as in Graph500 (each edge
 *                         stored both ways, symmetric values), duplicates merged
 *   uniform:M:K           M x M, K random distinct columns per row
 *   circuit:M             M x M, 2..6 entries per row plus a diagonal, and a few dense rows and columns with
 *                         10^4..10^5 entries (fewer on small M)
 *   banded:M:B            M x M, band of half-width B
 *   lp:M:N:K              rectangular M x N, about K entries per row, power-law column popularity
 * Values are random in [-1, 1) (stencils: the usual positive-definite weights, so CG converges on them). */
SPMV_API spmv_status_t spmv_matrix_generate(spmv_matrix_t **A, const char *spec, spmv_precision_t precision,
                                            uint64_t seed);

/* A copy of A in another precision (values converted; f64 -> f32 rounds to nearest). */
SPMV_API spmv_status_t spmv_matrix_convert(spmv_matrix_t **B, const spmv_matrix_t *A, spmv_precision_t precision);

SPMV_API spmv_status_t spmv_matrix_destroy(spmv_matrix_t *A); /* NULL is a no-op */

/* Sizes and precision. Any output pointer may be NULL. */
SPMV_API spmv_status_t spmv_matrix_get_size(const spmv_matrix_t *A, int32_t *m, int32_t *n, int32_t *nnz,
                                            spmv_precision_t *precision);
/* Read-only views of the stored (0-based, sorted, duplicate-free) CSR arrays; valid while A lives. */
SPMV_API spmv_status_t spmv_matrix_get_csr(const spmv_matrix_t *A, const int32_t **row_ptr,
                                           const int32_t **col_idx, const void **values);

/* ----------------------------------------------------------------------------------------------------
 * Formats and plans
 * -------------------------------------------------------------------------------------------------- */
typedef enum spmv_format {
    SPMV_FORMAT_AUTO = 0,       /* the library chooses (see spmv_plan_info_t.format for what it chose) */
    SPMV_FORMAT_CSR_SCALAR = 1, /* one thread per row */
    SPMV_FORMAT_CSR_VECTOR = 2, /* 2..W lanes per row, from the average row length */
    SPMV_FORMAT_CSR_LB = 3,     /* load-balanced: equal non-zeros per warp, segmented reduction */
    SPMV_FORMAT_VENDOR = 4,     /* cuSPARSE / hipSPARSE generic SpMV (GPU backends only) */
    SPMV_FORMAT_TILE = 5,       /* TileSpMV: 16x16 tiles, seven tile formats */
    SPMV_FORMAT_HBP = 6,        /* hash-based 2-D partition */
    SPMV_FORMAT_AMF_CSR = 7,    /* adaptive multi-row folding */
    SPMV_FORMAT_TEB = 8,        /* threshold-exchange-order blocks */
    SPMV_FORMAT_EHYB = 9,       /* explicit-caching hybrid, METIS-partitioned */
    SPMV_FORMAT_COUNT = 10
} spmv_format_t;

/* Short name ("csr_scalar", "csr_vector", "csr_lb", "vendor", "tile", "hbp", "amf_csr", "teb", "ehyb",
 * "auto"), and back (returns SPMV_STATUS_INVALID_ARGUMENT for an unknown name). */
SPMV_API const char *spmv_format_name(spmv_format_t format);
SPMV_API spmv_status_t spmv_format_from_name(const char *name, spmv_format_t *format);

typedef struct spmv_plan spmv_plan_t;

typedef struct spmv_plan_options {
    int warp_size;     /* 0: the device's. The CPU backend accepts 32 or 64 (to test the warp-grouped layouts) */
    int vendor_alg;    /* SPMV_FORMAT_VENDOR: 0 = library default, 1 = CSR_ALG1, 2 = CSR_ALG2 */
    int lanes_per_row; /* SPMV_FORMAT_CSR_VECTOR: 0 = from the average row length, else a power of two <= W */
    int nnz_per_warp;  /* SPMV_FORMAT_CSR_LB: 0 = automatic, else non-zeros one warp handles per call */
    /* SPMV_FORMAT_TILE */
    int tile_variant;            /* 0 = adaptive per-tile formats (ADPT) plus band tiles, 1 = every tile CSR
                                  * (TileSpMV_CSR), 2 = ADPT with the paper's seven formats only */
    int tile_deferred_coo;       /* 0 = automatic (on above tile_deferred_threshold non-zeros), 1 = on, -1 = off */
    int tile_deferred_threshold; /* 0 = 1800000 non-zeros (the paper's) */
    int tile_balance;            /* most tiles of one tile row per task; 0 = 8 (the paper's), but 1.5x the average
                                  * tiles a tile row on band plans (16-32) and, on a GPU, on plans of at least 16
                                  * tile rows a multiprocessor (8-16; FEM blocks 8-64): docs/formats/tile.md */
    int tile_inflight;           /* tiles each 16 lanes of a warp load together (1, 2 or 4); 0 = automatic: band
                                  * tiles and band batches when they are >= half the tiles, else 1. More hides
                                  * more latency per lane but costs registers, hence resident warps */
    int tile_band_batch;         /* tiles per band batch (2 or 4); 0 = 4. 4: one round trip for up to 4 band
                                  * tiles but 64 registers (sm_90 f64); 2: 48 registers, more resident warps */
    int tile_band_tasks;         /* consecutive tasks (tile rows) per warp with band batches, 1 .. 8; 0 = automatic
                                  * (1: measured fastest on the H200). Above 1 the next task's records and
                                  * headers load during this task's payload: 1 memory round trip per task, not 4 */
    int tile_csr_steps;          /* CSR tiles' rows 8 entries at a time (their loads together) in the kernel without
                                  * band tiles: 0 = off (measured slower on FEM blocks: 48 registers instead of
                                  * 40 on sm_90, 40 resident warps per SM instead of 48), 1 = on, -1 = off */
    int tile_group_tasks;        /* a task (tile row) per 16 lanes instead of per warp, W / 16 tasks per warp, with
                                  * one tile in flight and one task per warp: 0 = on for band plans (stencils:
                                  * measured faster) but on a GPU's small mixed band plans (docs/formats/tile.md),
                                  * off otherwise, 1 = on, -1 = off. No butterfly; the task's record loads and y writes serve W / 16
                                  * tile rows at once (fewer warp instructions per tile row) */
    /* SPMV_FORMAT_HBP */
    int hbp_block_rows;          /* rows per block; 0 = automatic: 512 (the paper's), or with at most 64
                                  * column blocks doubled while that saves enough of the warp groups' trips
                                  * (graphs; several column blocks: trips of the rows' segments): up to
                                  * 16384 by 2% when the matrix exceeds the L2 cache, else up to 8192 by 5%;
                                  * at least 4096 in automatic position order (hbp_order, circuits past L2) */
    int hbp_block_cols;          /* columns per block; 0 = from the matrix's density (docs/formats/hbp.md); above
                                  * 65536: 32-bit local columns; 4096 (f64) is the former shared-memory default */
    int hbp_combine;             /* 0 = automatic, 1 = per-column-block partial vectors + combine, 2 = atomics */
    int hbp_grouping;            /* 0 = nonlinear hash (the paper's), 1 = sort by row length (sort2D) */
    int hbp_steps;               /* 0 = automatic: 4, or 8 when hbp_ctas and hbp_hot are 0 too and the automatic
                                  * hot columns would be taken (power-law graphs), or when hbp_ctas and hbp_order
                                  * are 0 and the automatic order is by position (circuits past the L2 cache);
                                  * 2, 4 or 8: steps of a warp per
                                  * kernel trip, the entries a lane loads ahead.
                                  * 8: half the trips of 4 and twice the loads in flight per warp, but more
                                  * registers (2 resident blocks per multiprocessor in f64, 3 in f32; 4: 3 and 4) */
    int hbp_prefetch;            /* trips of entries a warp asks L2 for beyond those it loads: 0 = none (1 trip
                                  * measured slower on every large matrix), 1 .. 4, -1 = none. Meant to make its
                                  * loads wait for L2, not DRAM (CUDA sm_90; elsewhere nothing) */
    int hbp_tails;               /* 0 = automatic (split), 1 = split, 2 = kept: a long row's last piece is cut into
                                  * whole trips of its warp (S W entries) and a tail that joins the warp groups */
    int hbp_ctas;                /* resident blocks of 256 threads per multiprocessor the kernel is compiled for
                                  * (CUDA register cap 65536 / (256 ctas)) and the grid is planned for: 0 =
                                  * automatic (4 steps: 3 f64, 4 f32; 8 steps: 2, 3; 2 steps: 4); else by steps
                                  * per trip 2: 4, 6 or 8; 4: 3, 4 or 6; 8: 2, 3 or 4 (more warps, fewer
                                  * registers: may spill). HIP: the grid only. Other values:
                                  * SPMV_STATUS_INVALID_ARGUMENT */
    int hbp_hot;                 /* hot columns copied into shared memory once per thread block and call (or, with
                                  * hbp_hot_copy, once per call into one global copy; its counts there): 0 =
                                  * automatic (as many as 48 KiB holds, 6112 f64, 12224 f32, of the columns read
                                  * at least 3 times per multiprocessor, when they take at least a third of the
                                  * entries, else none), -1 = as many as fit, -2 = none, k > 0 = at most k; only
                                  * columns read at least once per thread block of the grid, and only with one
                                  * column block of 32-bit columns and no staged task
                                  * (graphs). Their reads leave L2 for shared memory (kron:20:16: 42% of the
                                  * entries, f64). Other values: SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_AMF_CSR */
    int amf_fixed_fold;          /* 0 = adaptive folding (T_s and the window cap); -1 = adaptive by T_s alone, without
                                  * the window cap (the rule until 0.2.x's fourth round); 1..4 = fold exactly this many
                                  * rows (fixed baseline) */
    int amf_lanes;               /* 0 = lanes per fold per sub-block from the fold lengths (a round-trip model;
                                  * on many waves of one-step warps, one window a lane where x is read scattered);
                                  * 2, 4, .. 64 = this many for every sub-block (capped at W), to measure the model */
    int amf_waves;               /* 0 = 2; 1..64 = sub-blocks aim at this many waves of resident warps (fewer: longer
                                  * sub-blocks, set-up paid less often; each still 1..16 steps of folds) */
    int amf_min_blocks;          /* 0 = per precision and amf_values: the most resident blocks of 256 threads at which
                                  * the kernel keeps its registers on CUDA sm_90 (default: 3 in f64, 80 registers,
                                  * 24 warps per multiprocessor; with the values after the adds in f32, 4, 64
                                  * registers, 32 warps; with them ahead no cap; with the gathers 3, so f32's
                                  * default is 3); 1 = no register cap; 3 or 4 = capped at 80 / 64 registers
                                  * (more loads in flight; may spill). HIP: never capped. Other values:
                                  * SPMV_STATUS_INVALID_ARGUMENT */
    int amf_values;              /* when the kernel loads a window's values (its columns come one round ahead):
                                  * 0 = per precision (f64: as 3; f32: as 2, measured faster); 1 = one round ahead
                                  * with the columns (two windows' values live: more registers); 2 = with the
                                  * window's x gathers (the adds wait for memory); 3 = right after the previous
                                  * window's adds (one window's values live). Other values:
                                  * SPMV_STATUS_INVALID_ARGUMENT */
    int amf_resident;            /* 0 = the default: sub-blocks of about T_l entries, several per warp (amf_waves);
                                  * 1..8 = that many waves of equal sub-blocks, a wave being one per warp resident
                                  * at once (multiprocessors x resident blocks x 256 / W), balanced by windows:
                                  * 1 = each warp pays the sub-block start-up chain once (T_l grouping when long
                                  * rows would take over half the sub-blocks). Set with amf_waves: this wins.
                                  * Other values: SPMV_STATUS_INVALID_ARGUMENT */
    int amf_uniform;             /* 0 = automatic: on a matrix without long rows whose one-step sub-blocks fit in
                                  * one wave of resident warps (the launch-floor sizes), uniform sub-blocks of one
                                  * step of W / L folds at one lane count L, when the round-trip model says they
                                  * finish first; the kernel then derives a sub-block's bounds from its index
                                  * (one memory round trip fewer); -1 = never (sub-blocks of T_l entries);
                                  * 1..16 = uniform sub-blocks of this many steps (of the lane count most folds
                                  * get otherwise) whenever there is no long row.
                                  * Ignored with amf_resident. Other values: SPMV_STATUS_INVALID_ARGUMENT */
    int amf_one_step;            /* 0 = uniform sub-blocks of one step (amf_uniform's automatic choice) run on a
                                  * lighter kernel: each warp loads its folds' bounds, entries and x once, with no
                                  * step loop, prefetch or register cap; a lane takes aligned windows of 8
                                  * entries (4 in f64 on many-wave layouts: amf_step_window) where the warps
                                  * fit in one wave of resident warps or the folds are long, single entries
                                  * (lanes per fold from the fold length) where the shortest folds need several
                                  * waves;
                                  * 1 = windows always, 2 = single entries always; -1 = the general kernel for
                                  * them too. Other values: SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_TEB */
    int teb_blocks;              /* 0 = block count by minimal variance; else this many blocks */
    /* SPMV_FORMAT_EHYB */
    int ehyb_plan_ordering;      /* 1 = x and y are in the plan's ordering (spmv_plan_get_permutation) */
    int ehyb_seed;               /* METIS seed; 0 = a fixed default, so plans are reproducible */
    int ehyb_batch;              /* entries each lane of the kernel loads before using them: 0 = 8 for f32 and for
                                  * small matrices, else 4; 8 puts twice as many loads in flight (and spills a few
                                  * registers at two blocks per SM) */
    int ehyb_parts;              /* 0 = part count from the device (docs/formats/ehyb.md); else aim at this many
                                  * parts (thread blocks), raised where a segment would not fit shared memory */
    int ehyb_halo;               /* 0 = a part also stages the columns of other parts that its rows use at least
                                  * twice (its halo), so their entries are ELL entries read from shared memory;
                                  * -1 = no halo; k >= 1 = columns used at least k times */
    int ehyb_split;              /* warps per ELL slice: 0 = from the layout (more than one where a part has
                                  * fewer slices than its block has warps: small matrices); 1 = one; 2, 4, ...
                                  * = that many (a power of two, at most the block's warps) */
    /* SPMV_FORMAT_AUTO */
    int auto_tune;               /* 0 = choose from the row-length profile; 1 = build every candidate format the
                                  * backend runs (all but ehyb, whose METIS step costs seconds), time a few
                                  * executes of each on scratch vectors, keep the fastest (plan creation then
                                  * costs the sum of the candidates' builds; the stats say what was timed) */
    int hbp_unit_trips;          /* SPMV_FORMAT_HBP: most kernel trips (S steps each) one warp unit takes: 0 =
                                  * automatic (no cap, unless the matrix is too small to give every resident
                                  * warp a long chain; then the cap of the best estimated time, docs/formats/
                                  * hbp.md "Small matrices"; 8 on busy plans of one column block, "Busy
                                  * plans" there), -1 = no cap (warp groups of segments up to 4 W
                                  * entries, segments cut every 1024), k > 0 = groups of segments up to k S
                                  * entries, longer ones warp-strided and cut every k S W entries (at most 1024).
                                  * Other values: SPMV_STATUS_INVALID_ARGUMENT */
    int hbp_order;               /* SPMV_FORMAT_HBP: the order of a block's warp groups: 0 = automatic (by
                                  * position when the matrix exceeds the L2 cache and 3/4 of its entries lie
                                  * within 1024 columns of the diagonal, else by bin), 1 = by position (the mean
                                  * row of each group's rows: a thread block's consecutive units cover
                                  * neighbouring rows), 2 = by bin (the paper's hashed order: a task sweeps its
                                  * block once per bin). Other values: SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_TILE, added after 0.2.0 (a reserved slot: the options keep their layout) */
    int tile_deferred_inline;    /* where a deferred part runs: 0 = automatic (in the tile kernel when its rows are
                                  * regular: longest <= 2 x average + 16, else csr_lb), 1 = in the tile kernel
                                  * (each tile row's first task adds its rows' deferred entries: no second launch,
                                  * no fix-up, y written once), -1 = csr_lb after the tile kernel (load-balanced:
                                  * power-law rows) */
    /* SPMV_FORMAT_AMF_CSR, added after 0.2.0 (a reserved slot) */
    int amf_window_cache;        /* how the kernels read the folds' windows of 8 entries: 0 = automatic (cached
                                  * where windows shared by neighbouring folds are at least 14% of the reads, but
                                  * streamed on many waves of one-step warps with 8-entry windows where x is read
                                  * along diagonals and with 4-entry windows where it is read scattered,
                                  * docs/formats/amf_csr.md), 1 = cached loads (a window read by two folds comes
                                  * from the caches the second time), -1 = streaming loads (read once, the caches
                                  * are left to x). Other values: SPMV_STATUS_INVALID_ARGUMENT */
    int amf_step_window;         /* entries per window of amf_csr's one-step kernel by windows: 0 = automatic (4 in
                                  * f64 on the layouts of many waves of one-step warps, where a 4-entry window
                                  * needs 40 registers instead of 48 and more warps stay resident; else 8), 4 or
                                  * 8. Other values: SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_TILE, added after 0.2.0 (a reserved slot) */
    int tile_csr_shuffle;        /* CSR tiles with x from shuffles in the kernel without band tiles: each lane of a
                                  * group loads one x entry of the tile's 16 columns with its row's bounds, and
                                  * every entry takes its x from the group's lanes (no dependent x load an entry;
                                  * the whole warp steps together). 0 = automatic (FEM blocks: at least half the
                                  * tiles CSR, or a third CSR and the rest nearly all Dense), 1 = on, -1 = off;
                                  * 2 = on, and where the plan steps 3 entries at a time two such steps are loaded
                                  * together (automatic: in f32 when the plan is larger than the GPU's L2 cache),
                                  * 3 = on, one step at a time; 4 = on, three steps together (automatic: in f32 on a GPU
                                  * where rows have 3, 6 or 9 entries a tile, FEM blocks of 3 unknowns); 5 = on,
                                  * steps of 4 loaded four at a time, 16 entries, Dense tiles in the same loop
                                  * (automatic: in f32 on a GPU where that takes at most 10-20% more lane slots,
                                  * Dense tiles counted as full rows: FEM blocks of 5-7 unknowns). Other values:
                                  * SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_HBP, added after 0.2.0 (a reserved slot) */
    int hbp_task_blocks;         /* a thread block per task when there are more tasks than the blocks resident at
                                  * once: the hardware starts each block past those as one finishes, instead of
                                  * the planned grid taking those tasks with an atomic ticket (and a done counter
                                  * at the end). 0 = automatic (on: measured faster wherever it applies,
                                  * docs/formats/hbp.md "Thread blocks"), 1 = on, -1 = never (the ticket). Not with
                                  * hot columns in shared memory (each block would copy them). Other values:
                                  * SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_TILE: the per-tile selection rule's thresholds (docs/formats/tile.md "Selection"), 0.3.0 */
    int tile_dense_percent;      /* a tile is Dense when its non-zeros are at least this percent of its area: 0 =
                                  * 75 (the paper's), 1 .. 100, -1 = never by the rule. Other values:
                                  * SPMV_STATUS_INVALID_ARGUMENT */
    int tile_coo_max;            /* a tile of at most this many non-zeros (and not Dense) is COO: 0 = 12 (the
                                  * paper's), but 15 in plans of regular rows that defer COO tiles automatically
                                  * (FEM blocks of 5 and 7 unknowns: their 15-entry fragments are deferred),
                                  * 1 .. 256, -1 = never by the rule. Other values: SPMV_STATUS_INVALID_ARGUMENT */
    int tile_ell_cv_percent;     /* a tile whose row lengths' coefficient of variation (std / mean) is at most
                                  * this percent (and not Dense, COO, DenseRow, DenseCol) is ELL: 0 = 20 (the
                                  * paper's 0.2), 1 .. 1000, -1 = never by the rule. HYB has no threshold: it
                                  * is taken when it is the smallest payload in bytes. Other values:
                                  * SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_TILE, 0.3.0 */
    int tile_block_tasks;        /* each tile row split over this many warps of one thread block, their partial row
                                  * sums added in shared memory in task order (no carries, no fix-up launch): 0 =
                                  * automatic (docs/formats/tile.md "Block tasks"), -1 = never, 2, 4 or 8 (times the
                                  * warp size at most 256: 8 at W = 32, 4 at W = 64); only plans with x by shuffles
                                  * in steps of 4 or 16 (no band tiles). Other values:
                                  * SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_AMF_CSR, 0.3.0 (a reserved slot) */
    int amf_regular;             /* regular folds: where every fold of a one-step plan holds as many rows and entries
                                  * as the first (rows of one length, as a k-regular graph's or a matrix of exactly
                                  * K entries a row), the one-step kernel derives a fold's rows and entries from its
                                  * index instead of loading fold_row and fold_ptr (one memory round trip fewer on
                                  * a warp's chain). 0 = automatic (on where the folds are regular), -1 = never.
                                  * Other values: SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_CSR_LB, 0.3.x (a reserved slot) */
    int lb_hot;                  /* hot columns: the most read columns' x values are copied, in column order, into a
                                  * compact array by a small kernel before the SpMV kernel, and their entries read
                                  * that copy (power-law graphs: a 32-byte sector then serves 4 f64 or 8 f32 hot
                                  * values instead of one). 0 = automatic (64 KiB of them: the 8192 (f64) or 16384
                                  * (f32) most read columns read at least twice, where the matrix has at least 2^20
                                  * entries and 4 times that many columns, and the hot columns hold at least a quarter
                                  * of the entries; else none), -1 = none, k > 0 = the k most read columns read at
                                  * least twice. Other values: SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_HBP, 0.3.x (a reserved slot) */
    int hbp_hot_copy;            /* where hbp's hot columns (hbp_hot) are copied: 0 = automatic (the global copy
                                  * where hbp_hot is 0, the plan has one column block of 32-bit columns, or a cut
                                  * plan of 8 or more that then takes one, at least 6 entries a row and 6M in
                                  * all, and lb_hot's rule finds hot columns; else shared; docs/formats/hbp.md
                                  * "Hot columns in one global copy"), 1 = into shared memory by every thread
                                  * block (at most 48 KiB), 2 = into one compact array in global memory by a small
                                  * kernel before the SpMV kernel, as csr_lb's lb_hot: 64 KiB of them by default
                                  * (8192 f64, 16384 f32) chosen as lb_hot chooses them (hbp_hot: 0 that rule, -1
                                  * 64 KiB without its share test, -2 none, k > 0 the k most read, each read at
                                  * least twice); such plans do not take the shared copy's 8 steps per trip and,
                                  * where the unit-cap rules give none, take at most 16 trips a unit.
                                  * Other values: SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_AMF_CSR, 0.3.x (a reserved slot) */
    int amf_vector;              /* A CSR mapping instead of folds, on amf_csr's own arrays (row pointer, plain
                                  * columns, values), one row a unit: CSR-vector's (csr_vector's lanes a row and its
                                  * kernel) or CSR-scalar's (a thread a row, csr_scalar's kernel). 0 = automatic, on a
                                  * GPU only and only with every other amf_ option at 0: where folding cannot pay,
                                  * i.e. regular rows (longest <= 2 x average + 16) whose lengths spread at most 1
                                  * (standard deviation / mean), none of AMF_LONG_MIN (1024) entries or more, and
                                  * - short rows (at most 12 entries on average; more than 4 only with 256 rows a
                                  *   multiprocessor) read locally (stencils, banded, roads; f32 scattered ones too
                                  *   below 0.8 L2s): CSR-scalar's below 0.8 L2s of data with x and y and above 2.15
                                  *   (f64) or 1.75 (f32, rows of at most 3 entries), CSR-vector's between; f32 rows
                                  *   of more than 3 keep folds from 0.8 L2s (H100, session 67);
                                  * - other rows: CSR-vector's where its warps fit in two waves of the device's
                                  *   resident warps (the launch floor, where the folded warps, four rows a fold, ran
                                  *   0.73-0.99x csr_vector) or, in f64 with x read locally, up to 8M entries (folds
                                  *   0.72-1.03x csr_vector on the H100);
                                  * docs/formats/amf_csr.md "Arrays"; 1 = always CSR-vector's; 2 = always
                                  * CSR-scalar's; -1 = never. Other values: SPMV_STATUS_INVALID_ARGUMENT */
    /* SPMV_FORMAT_HBP, 0.3.x (a reserved slot) */
    int hbp_y_stage;             /* staged y: where the plan has one column block, each task stages the rows of
                                  * the row blocks whose warp groups it holds (at most 48 KiB of shared memory with
                                  * a byte a row), its groups put their rows' sums there and the block writes its
                                  * rows in order at the end, instead of each warp group storing its 32 rows of one
                                  * hashed length, scattered over the block (docs/formats/hbp.md "Staged y"). 0 =
                                  * automatic (off), 1 = on, -1 = off. Other values: SPMV_STATUS_INVALID_ARGUMENT */
    int reserved[10];            /* zero; room for more options without breaking the ABI (64 ints in all since
                                  * 0.3.0; 0.2.0 had 48, 0.1.0 32) */
} spmv_plan_options_t;

/* Fill options with the defaults (all zero). */
SPMV_API spmv_status_t spmv_plan_options_init(spmv_plan_options_t *options);

/* Build `format` for A on the host, upload it to ctx's device and keep every device buffer the plan needs.
 * options may be NULL. Formats not built into this library or not available on the backend return
 * SPMV_STATUS_NOT_SUPPORTED with the reason in spmv_last_error(ctx). The plan keeps its own copies: A may be
 * destroyed afterwards. */
SPMV_API spmv_status_t spmv_plan_create(spmv_plan_t **plan, spmv_context_t *ctx, const spmv_matrix_t *A,
                                        spmv_format_t format, const spmv_plan_options_t *options);
SPMV_API spmv_status_t spmv_plan_destroy(spmv_plan_t *plan); /* NULL is a no-op */

/* y = alpha*A*x + beta*y. x (n entries) and y (m entries) are device pointers of the plan's context (host
 * pointers on the CPU backend), of the matrix's precision; they must not overlap. With beta == 0, y is not read
 * (it may hold NaN). Asynchronous on the context's stream on GPU backends; never allocates. A plan owns scratch
 * that every execute writes (csr_lb's and tile's carries, hbp's partials, ticket and counters, amf_csr's long-row
 * partials and counts; the counters each call leaves at zero for the next), so executes of one plan must not run
 * at the same time: on one stream they are ordered; after spmv_context_set_stream, wait for the executes on the
 * old stream first, and build one plan per stream for concurrent products. */
SPMV_API spmv_status_t spmv_execute(spmv_plan_t *plan, double alpha, const void *x, double beta, void *y);

/* Replace the values, keeping the sparsity pattern: `values` (host memory, the matrix's precision) has one
 * entry per entry of the arrays that created the matrix, in that order (duplicates summed again when the
 * matrix was created with SPMV_MATRIX_SUM_DUPLICATES; for matrices read from a file or generated, the order of
 * spmv_matrix_get_csr). No structure is rebuilt. */
SPMV_API spmv_status_t spmv_plan_update_values(spmv_plan_t *plan, const void *values);

typedef struct spmv_plan_info {
    spmv_format_t format;      /* the format built (what AUTO chose) */
    spmv_backend_t backend;
    spmv_precision_t precision;
    int32_t m, n, nnz;
    int warp_size;             /* the warp size the layout was built for */
    int deterministic;         /* 1: the same inputs give bitwise the same y on every call */
    size_t device_bytes;       /* every device buffer the plan owns */
    double build_ms;           /* host analysis (AUTO's choice included) and construction */
    double upload_ms;          /* allocation and copy to the device */
    char stats[512];           /* format statistics, "key=value" separated by ';', pairs always whole; with
                                * auto_tune the last pair is "auto_tune=fmt:ms,...", and with SPMV_FORMAT_AUTO
                                * otherwise "auto_rule=NAME", the rule that chose the format (e.g. short_rows,
                                * bimodal_short_rows, graph_hot_columns; src/common/format.c); format pairs that
                                * do not fit beside it are dropped from the end */
} spmv_plan_info_t;

SPMV_API spmv_status_t spmv_plan_get_info(const spmv_plan_t *plan, spmv_plan_info_t *info);

/* Reordering formats (ehyb): the plan's row and column permutations, host arrays valid while the plan lives:
 * plan row i is row row_perm[i] of A, plan column j is column col_perm[j] of A. A solver that sets
 * options.ehyb_plan_ordering passes x as x_plan[j] = x[col_perm[j]] and gets y_plan[i] = y[row_perm[i]].
 * Both are NULL for formats that keep A's ordering. */
SPMV_API spmv_status_t spmv_plan_get_permutation(const spmv_plan_t *plan, const int32_t **row_perm,
                                                 const int32_t **col_perm);

/* ----------------------------------------------------------------------------------------------------
 * Measurement (used by spmvport-bench; useful to anyone who tunes)
 * -------------------------------------------------------------------------------------------------- */
/* Run `warmup` untimed executes, then `iters` executes each timed on the device (events on GPUs, a monotonic
 * clock on the CPU); ms[i] receives the time of the i-th in milliseconds. */
SPMV_API spmv_status_t spmv_plan_time(spmv_plan_t *plan, double alpha, const void *x, double beta, void *y,
                                      int warmup, int iters, double *ms);

/* Measure the device's read bandwidth in GB/s (1e9 bytes/s) with a read-only kernel over `bytes` bytes,
 * best of `iters` runs. bytes = 0 picks a size well beyond the last-level cache. */
SPMV_API spmv_status_t spmv_context_read_bandwidth(spmv_context_t *ctx, size_t bytes, int iters, double *gbps);

/* ----------------------------------------------------------------------------------------------------
 * Checking results
 * -------------------------------------------------------------------------------------------------- */
/* The library's oracle. Computes y_ref = alpha*A*x + beta*y_in on the CPU with extended-precision accumulation
 * and compares y_out against it row by row with the rounding-error bound of any summation order:
 *     |y_out_i - y_ref_i| <= bound_i = (g(k_i + 3, u) + g(k_i + 3, u_ref)) * (|beta||y_in_i| + |alpha| sum_j |a_ij x_j|)
 * where k_i is the row's entry count, u the unit roundoff of A's precision (2^-24 or 2^-53), u_ref that of the
 * oracle's accumulator and g(n, u) = n*u / (1 - n*u). *max_err_ratio receives max_i |y_out_i - y_ref_i| / bound_i
 * (0/0 counts as 0, x/0 as infinity; NaN in y_out gives NaN): a result is correct when it is <= 1.
 * x, y_in, y_out are host arrays of A's precision; y_in may be NULL when beta == 0. *worst_row (may be NULL)
 * receives the row of the maximum. */
SPMV_API spmv_status_t spmv_reference_check(const spmv_matrix_t *A, double alpha, const void *x, double beta,
                                            const void *y_in, const void *y_out, double *max_err_ratio,
                                            int32_t *worst_row);

#ifdef __cplusplus
}
#endif

#endif /* SPMVPORT_H */
