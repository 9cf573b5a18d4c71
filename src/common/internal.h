/*
 * internal.h -- libspmvport's core objects and helpers shared by src/common and src/cpu_ref (not installed).
 */
#ifndef SPMVPORT_INTERNAL_H
#define SPMVPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "spmvport.h"

#define SPMVPORT_MSG_LEN 1024

/* ---- errors ------------------------------------------------------------------------------------------- */

/* Record a message for ctx (may be NULL) and for the calling thread; returns status so callers can write
 * `return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "A is NULL");`. */
spmv_status_t spmvport_fail(spmv_context_t *ctx, spmv_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Forget the thread's last message (called at the start of public functions that can fail). */
void spmvport_clear_error(spmv_context_t *ctx);
/* snprintf into a caller's buffer, tolerating len == 0. */
void spmvport_msg(char *msg, size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Copy the "key=value;..." pairs of src (a buffer of src_cap bytes) into dst (cap bytes) followed by tail
 * (";"-joined; tail may be NULL). Pairs are kept whole: when they do not all fit, pairs are dropped from the
 * end of src so that tail always fits (a tail longer than dst is dropped instead). */
void spmvport_stats_fit(char *dst, size_t cap, const char *src, size_t src_cap, const char *tail);

/* ---- host CSR (double values) used by the reader, the generators and the oracle ----------------------- */

typedef struct spmvport_csr {
    int32_t m, n, nnz;
    int32_t *row_ptr; /* m + 1, 0-based */
    int32_t *col_idx; /* nnz, sorted within each row, no duplicates */
    double *val;      /* nnz */
} spmvport_csr;

void spmvport_csr_free(spmvport_csr *A);
/* Build a sorted, duplicate-summed CSR from COO triplets (0-based; indices already checked in range).
 * val may be NULL (every entry 1). Two stable counting sorts: O(nnz + m + n). */
spmv_status_t spmvport_csr_from_coo(spmvport_csr *out, int32_t m, int32_t n, int64_t nnz, const int32_t *row,
                                    const int32_t *col, const double *val, char *msg, size_t msglen);

/* Matrix Market (src/common/mmio.c). On a parse error the message starts with "PATH:LINE: ". */
spmv_status_t spmvport_mtx_read(const char *path, spmvport_csr *out, char *msg, size_t msglen);
spmv_status_t spmvport_mtx_write(const char *path, const spmvport_csr *A, char *msg, size_t msglen);

/* Generators (src/common/generators.c): spec as documented at spmv_matrix_generate. */
spmv_status_t spmvport_generate(const char *spec, uint64_t seed, spmvport_csr *out, char *msg, size_t msglen);

/* ---- objects ------------------------------------------------------------------------------------------ */

struct spmv_context {
    const spmvport_backend_ops *ops;
    void *state;
    void *module; /* dlopen handle, NULL for the CPU backend */
    spmv_device_info_t info;
    char last_error[SPMVPORT_MSG_LEN];
};

struct spmv_matrix {
    int32_t m, n, nnz;
    spmv_precision_t precision;
    int32_t *row_ptr; /* m + 1, 0-based */
    int32_t *col_idx; /* nnz, sorted, unique per row */
    void *values;     /* nnz of float or double */
    /* update_values: position p of the creator's arrays adds into stored entry src_map[p]. NULL: identity. */
    int32_t *src_map;
    int32_t src_nnz;  /* entries the creator passed */
};

struct spmv_plan {
    spmv_context_t *ctx;
    spmvport_format_data fd;
    int32_t *src_map;  /* the matrix's creator-order map (NULL: identity); see struct spmv_matrix */
    int32_t src_nnz;
    int32_t nnz;       /* stored CSR entries */
    double *csr_scratch; /* nnz doubles, made by the first update_values, which assembles CSR values here */
    void *dplan;
    spmv_plan_info_t info;
};

/* ---- small helpers ------------------------------------------------------------------------------------ */

static inline size_t spmvport_value_size(spmv_precision_t p) { return p == SPMV_F32 ? sizeof(float) : sizeof(double); }
/* Checked allocations: NULL when count*size overflows or malloc fails (count 0 returns a 1-byte block). */
void *spmvport_malloc_array(size_t count, size_t size);
void *spmvport_calloc_array(size_t count, size_t size);
double spmvport_now_ms(void);
/* Sort n indices ascending (insertion sort up to 32, qsort beyond); drop repeats from a sorted array, returning
 * the count kept (src/common/util.c). */
void spmvport_sort_int32(int32_t *a, int32_t n);
int32_t spmvport_unique_sorted(int32_t *a, int32_t n);
/* qsort / bsearch comparator of int32_t values, ascending. */
int spmvport_compare_int32(const void *a, const void *b);

/* Format data life cycle (src/common/format.c): add an array (takes ownership of data) or allocate one. */
void spmvport_format_data_free(spmvport_format_data *fd);
spmv_status_t spmvport_format_add_array(spmvport_format_data *fd, const char *name, void *data, size_t bytes,
                                        int is_values);
/* The options every format's builder relies on, against the warp size: lanes_per_row 0 or a power of two <= it;
 * nnz_per_warp 0 or a positive multiple of it. SUCCESS, or INVALID_ARGUMENT and msg naming the option. (The warp
 * size itself each builder checks: amf_csr answers INVALID_ARGUMENT, ehyb NOT_SUPPORTED; their tests hold that.) */
spmv_status_t spmvport_check_generic_options(const spmv_plan_options_t *opt, int warp_size, char *msg,
                                             size_t msglen);
/* Build the format data of `format` from a validated matrix; checks the generic options first (a direct caller,
 * e.g. a test, gets their status instead of a builder's out-of-range access). */
spmv_status_t spmvport_format_build(spmvport_format_data *fd, const spmv_matrix_t *A, spmv_format_t format,
                                    int warp_size, const spmv_device_info_t *dev, const spmv_plan_options_t *opt,
                                    char *msg, size_t msglen);
/* Choose a format for SPMV_FORMAT_AUTO; the _why form also names the rule that chose it (a static string of
 * letters, digits and '_': "short_rows", "bimodal_short_rows", ...; why may be NULL). */
spmv_format_t spmvport_format_choose(const spmv_matrix_t *A, const spmv_device_info_t *dev);
spmv_format_t spmvport_format_choose_why(const spmv_matrix_t *A, const spmv_device_info_t *dev, const char **why);
/* csr_lb's automatic hot columns (options.lb_hot = 0) as AUTO's graph rule found them: nhot of them, ascending in
 * hot, and index (n entries) each column's index among them, -1 for the others; both NULL when none were kept. A
 * graph's column counts cost about what csr_lb's copy of the matrix does (kron:20:16, 2-core host): counted once,
 * AUTO's plan takes them to the build. */
typedef struct spmvport_hot_choice {
    int64_t nhot;
    int32_t *hot, *index;
} spmvport_hot_choice;
/* spmvport_format_choose_why that keeps, in *keep (zeroed first), the hot columns behind a csr_lb choice */
spmv_format_t spmvport_format_choose_keep(const spmv_matrix_t *A, const spmv_device_info_t *dev, const char **why,
                                          spmvport_hot_choice *keep);
/* spmvport_format_build for a plan whose format AUTO chose: csr_lb takes hot's arrays (sets them NULL) when its
 * options ask for the automatic hot columns; hot may be NULL. The caller frees what is left
 * (spmvport_hot_choice_free). */
spmv_status_t spmvport_format_build_chosen(spmvport_format_data *fd, const spmv_matrix_t *A, spmv_format_t format,
                                           int warp_size, const spmv_device_info_t *dev,
                                           const spmv_plan_options_t *opt, spmvport_hot_choice *hot, char *msg,
                                           size_t msglen);
void spmvport_hot_choice_free(spmvport_hot_choice *hot);
/* How scattered A's reads of x are (src/common/matrix.c): distinct 32-byte x sectors per entry over groups of 32
 * consecutive rows (what a warp of 4-row folds or csr_scalar's 32 rows gathers), sampled at up to 1024 evenly
 * spaced groups of at most 1024 entries, rows of skip_len or more entries left out (INT32_MAX: none). 1: every
 * entry its own sector (random columns: uniform, lp, kron 0.97-1.0); stencils 0.16-0.19 (f64), fem3d 0.04,
 * circuit:5000000 0.34 (its diagonal and dense columns); 0 without entries; -1 when a buffer could not be
 * allocated. At least SPMVPORT_X_SCATTERED: scattered (amf_csr's lanes, the automatic format choice). */
double spmvport_x_sector_use(const spmv_matrix_t *A, int32_t skip_len);
#define SPMVPORT_X_SCATTERED 0.6
/* Whether A's rows are regular: the longest at most 2 x the average + 16 (src/common/matrix.c; 1 without rows).
 * The automatic format choice's split between regular and skewed rows, and tile's deferral rule. */
int spmvport_rows_regular(const spmv_matrix_t *A);
/* The spread of A's row lengths: their standard deviation over their mean (0 without entries). Regular rows can
 * still be bimodal (bayer10: most rows of 2-3 entries, one in 13 of 27; 1.05), where csr_scalar's warps wait for
 * their longest row; the stencils and meshes 0.0-0.5. */
double spmvport_rows_spread(const spmv_matrix_t *A);
/* Bytes of A's CSR arrays (row pointer, columns, values): the automatic choice's "fits in the L2" test. */
double spmvport_csr_bytes(const spmv_matrix_t *A);
/* Those with x and y, in L2s of the device (0 when its L2 is unknown): where short rows sit against the cache (the
 * automatic choice's tridiagonal window, amf_csr's CSR mappings). */
double spmvport_l2_share(const spmv_matrix_t *A, const spmv_device_info_t *dev);
/* Short regular rows (csr_scalar's, AUTO's short_rows; amf_csr's CSR-scalar mapping): at most this many entries a
 * row on average, and more than SPMVPORT_ONE_BATCH_AVG (csr_scalar's batch: such rows take two or more a thread)
 * only with at least SPMVPORT_SMALL_ROWS_PER_SM rows a multiprocessor (fewer: csr_vector's lanes, sessions 63-64) */
#define SPMVPORT_SHORT_ROWS_AVG 12.0
#define SPMVPORT_ONE_BATCH_AVG 4.0
#define SPMVPORT_SMALL_ROWS_PER_SM 256
/* Such rows, read locally: which mapping their L2 share (spmvport_l2_share) favours. Measured on the H100 (50 MiB
 * of L2), sessions 67-68; the thresholds and what they rest on are in matrix.c. */
typedef enum spmvport_short_mapping {
    SPMVPORT_SHORT_NONE = 0, /* not short rows, or the device's L2 is unknown: the callers' other rules */
    SPMVPORT_SHORT_SCALAR,   /* a thread a row (csr_scalar; amf_csr's CSR-scalar mapping) */
    SPMVPORT_SHORT_VECTOR,   /* csr_vector's lanes a row (amf_csr's CSR-vector layout) */
    SPMVPORT_SHORT_FOLDS     /* amf_csr's folds */
} spmvport_short_mapping;
spmvport_short_mapping spmvport_short_rows_mapping(const spmv_matrix_t *A, const spmv_device_info_t *dev);

#endif /* SPMVPORT_INTERNAL_H */
