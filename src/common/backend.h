/*
 * backend.h -- the runtime backend table: the contract between libspmvport's core and a backend.
 *
 * The core builds every format on the host into a spmvport_format_data (named arrays plus scalar parameters);
 * a backend uploads those arrays as they are and runs the format's kernel on them. The CPU backend is compiled
 * into the core; the CUDA and HIP backends are loadable modules (libspmvport_cuda.so, libspmvport_hip.so) that
 * export one C symbol, SPMVPORT_BACKEND_ENTRY, returning their table. Plain C99: modules include it too.
 */
#ifndef SPMVPORT_BACKEND_H
#define SPMVPORT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "spmvport.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bump when the table or spmvport_format_data changes; the core refuses a module of another version. */
#define SPMVPORT_BACKEND_ABI 4
#define SPMVPORT_BACKEND_ENTRY "spmvport_backend_entry"

/* ---- host-built format data ---------------------------------------------------------------------- */

#define SPMVPORT_MAX_ARRAYS 24
#define SPMVPORT_MAX_PARAMS 24

/* One array of a format, in host memory, uploaded verbatim. */
typedef struct spmvport_array {
    const char *name; /* static string, for messages and statistics */
    void *data;       /* host copy, owned by the format data (malloc) */
    size_t bytes;
    int is_values;    /* holds matrix values (re-uploaded by update_values) */
    int host_only;    /* the builder's and the tests' copy only: no kernel reads it, so it is never uploaded and
                       * not counted in device bytes (its device pointer stays NULL) */
} spmvport_array;

/* Array slots of the CSR-based formats (csr_scalar, csr_vector, csr_lb, vendor). */
enum { SPMVPORT_CSR_ROW_PTR = 0, SPMVPORT_CSR_COL_IDX = 1, SPMVPORT_CSR_VALUES = 2,
       SPMVPORT_CSR_LB_SPLIT = 3 /* csr_lb: the SPMVPORT_LB_NARRAYS arrays of its split, from here */ };
/* The load-balanced split's arrays, as offsets from where spmvport_lb_add_arrays put them (csr_lb, and the
 * deferred part of tile). Rows are counted among the non-empty rows only ("compact rows"). */
enum { SPMVPORT_LB_CHUNK_ROW = 0,  /* int32 [chunks]: compact row holding the entry before the chunk (-1: none) */
       SPMVPORT_LB_CARRY_VAL = 1,  /* T [chunks]: the chunk's carry (scratch, written every call) */
       SPMVPORT_LB_CARRY_ROW = 2,  /* int32 [chunks]: the carry's row or -1 (scratch) */
       SPMVPORT_LB_START_BITS = 3, /* uint8 [(nnz + 7) / 8, padded to 16]: bit e = entry e starts its row */
       SPMVPORT_LB_ROW_MAP = 4,    /* int32 [compact rows]: matrix row of each compact row; 0 bytes if none empty */
       SPMVPORT_LB_EMPTY_ROWS = 5, /* int32 [empty rows]: rows with no entry (y = beta*y) */
       SPMVPORT_LB_NARRAYS = 6 };
/* csr_lb's hot columns (options.lb_hot), after its split. A csr_lb plan always has both arrays (empty without hot
 * columns); an entry of hot column hot[i] is stored in col_idx as -1 - i and reads hot_x[i], which a gather kernel
 * (the CPU executor: a loop) fills with x[hot[i]] before the SpMV kernel on every call. */
enum { SPMVPORT_CSR_LB_HOT = SPMVPORT_CSR_LB_SPLIT + SPMVPORT_LB_NARRAYS, /* int32 [nhot]: hot columns, ascending */
       SPMVPORT_CSR_LB_HOT_X = SPMVPORT_CSR_LB_HOT + 1,                   /* T [nhot]: x at them (scratch) */
       SPMVPORT_CSR_LB_NARRAYS = SPMVPORT_CSR_LB_HOT_X + 1 };
/* Parameter slots of the CSR-based formats. */
enum { SPMVPORT_P_LANES = 0,        /* csr_vector: lanes per row */
       SPMVPORT_P_NNZ_PER_WARP = 1, /* csr_lb: non-zeros per warp chunk */
       SPMVPORT_P_NWARPS = 2,       /* csr_lb: number of chunks */
       SPMVPORT_P_VENDOR_ALG = 3,   /* vendor: 0 default, 1 ALG1, 2 ALG2 */
       SPMVPORT_P_LB_EMPTY = 4,     /* csr_lb: number of empty rows */
       SPMVPORT_P_LB_HOT = 5 };     /* csr_lb: number of hot columns (0: none) */

typedef struct spmvport_format_data {
    spmv_format_t format;
    spmv_precision_t precision;
    int32_t m, n, nnz;
    int warp_size;                      /* the layout was built for this warp size */
    int deterministic;
    int narrays;
    spmvport_array arrays[SPMVPORT_MAX_ARRAYS];
    int64_t params[SPMVPORT_MAX_PARAMS];
    /* update_values: value slot s (over the is_values arrays, concatenated in array order) takes CSR value
     * value_map[s] (-1: padding, stays 0). NULL means the value arrays are the CSR values in CSR order. */
    int32_t *value_map;
    int64_t value_slots;
    char stats[1024];                   /* "key=value;..." (whole pairs reach spmv_plan_info_t.stats) */
    /* reordering formats: index into arrays[] of the int32 row / column permutation (plan index -> A's
     * index), -1 when the format keeps A's ordering */
    int row_perm_array, col_perm_array;
    /* During the build only (NULL after it): csr_lb's automatic hot columns as AUTO's graph rule found them
     * (spmvport_format_build_chosen, internal.h), so that a graph's columns are counted once */
    struct spmvport_hot_choice *auto_hot;
} spmvport_format_data;

/* ---- the table ------------------------------------------------------------------------------------ */

typedef enum { SPMVPORT_COPY_H2D = 0, SPMVPORT_COPY_D2H = 1, SPMVPORT_COPY_D2D = 2 } spmvport_copy_kind;

/* Every function returns a status and, on failure, writes a message into msg (msglen bytes, may be 0). */
typedef struct spmvport_backend_ops {
    int abi;                 /* SPMVPORT_BACKEND_ABI */
    spmv_backend_t kind;
    const char *name;        /* "cpu", "cuda", "hip" */

    /* Open device `device`; fill *info. Returns SPMV_STATUS_BACKEND_UNAVAILABLE when there is no driver, no
     * runtime or no such device. */
    spmv_status_t (*open)(void **state, int device, spmv_device_info_t *info, char *msg, size_t msglen);
    void (*close)(void *state);
    spmv_status_t (*set_stream)(void *state, void *stream, char *msg, size_t msglen);

    spmv_status_t (*mem_alloc)(void *state, void **ptr, size_t bytes, char *msg, size_t msglen);
    spmv_status_t (*mem_free)(void *state, void *ptr, char *msg, size_t msglen);
    spmv_status_t (*mem_copy)(void *state, void *dst, const void *src, size_t bytes, spmvport_copy_kind kind,
                              char *msg, size_t msglen);
    spmv_status_t (*mem_set)(void *state, void *ptr, int value, size_t bytes, char *msg, size_t msglen);
    spmv_status_t (*synchronize)(void *state, char *msg, size_t msglen);

    /* Whether this backend has a kernel for the format (NOT_SUPPORTED with a reason otherwise). */
    spmv_status_t (*supports)(void *state, spmv_format_t format, spmv_precision_t precision, char *msg,
                              size_t msglen);
    /* Upload fd's arrays and make whatever the format's execute needs (vendor descriptors, buffers). The
     * backend may keep a pointer to fd: the core keeps it alive until plan_free. *device_bytes: all device
     * memory owned. On failure nothing is left allocated. */
    spmv_status_t (*plan_upload)(void *state, const spmvport_format_data *fd, void **dplan, size_t *device_bytes,
                                 char *msg, size_t msglen);
    /* fd's is_values arrays changed on the host: copy them again. */
    spmv_status_t (*plan_update_values)(void *state, void *dplan, const spmvport_format_data *fd, char *msg,
                                        size_t msglen);
    void (*plan_free)(void *state, void *dplan);
    spmv_status_t (*execute)(void *state, void *dplan, double alpha, const void *x, double beta, void *y,
                             char *msg, size_t msglen);
    /* warmup untimed executes then iters timed ones, ms[i] each. */
    spmv_status_t (*time_execute)(void *state, void *dplan, double alpha, const void *x, double beta, void *y,
                                  int warmup, int iters, double *ms, char *msg, size_t msglen);
    spmv_status_t (*read_bandwidth)(void *state, size_t bytes, int iters, double *gbps, char *msg, size_t msglen);
} spmvport_backend_ops;

typedef const spmvport_backend_ops *(*spmvport_backend_entry_fn)(void);

/* The CPU backend, part of the core. */
const spmvport_backend_ops *spmvport_cpu_backend(void);

#ifdef __cplusplus
}
#endif

#endif /* SPMVPORT_BACKEND_H */
