/*
 * support.h -- what the tests share: the edge-case corpus, the shared matrices, and a checker that runs one
 * format on one backend through the public API and compares every result with the oracle's bound.
 */
#ifndef SPMVPORT_TEST_SUPPORT_H
#define SPMVPORT_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <stdint.h>

#include "spmvport.h"
#include "cpu_ref.h" /* the CPU executors and the layout type (src/cpu_ref, src/common) */

/* The edge-case corpus: empty matrix and rows, 1x1, 1xn, nx1, rectangular, one dense row / column, power-law,
 * unsorted input, duplicates, rows longer than many warps' chunks, small stencils. */
typedef struct {
    const char *name;
    spmv_matrix_t *A;
} support_case;

int support_edge_corpus(spmv_precision_t precision, support_case **cases); /* returns the count */
void support_cases_free(support_case *cases, int count);

/* The shared SuiteSparse matrices: directory (SPMVPORT_MATRIX_DIR overrides the build's path) and the names in
 * MANIFEST.tsv. Returns the count (0 when the folder is missing). With SPMVPORT_TEST_QUICK set in the
 * environment (the sanitizer build in CI), every fourth matrix only. */
const char *support_matrix_dir(void);
int support_shared_names(char ***names);
void support_names_free(char **names, int count);
/* Read one shared matrix by name. */
spmv_matrix_t *support_read_shared(const char *name, spmv_precision_t precision);

/* Open a context on backend or skip the test (cr_skip_test) when it is unavailable. */
spmv_context_t *support_context_or_skip(spmv_backend_t backend);

/* Run y = alpha*A*x + beta*y on ctx with `format` for alpha/beta in {1,0}, {2,0.5}, {-1,1}, random x and y0 (y
 * poisoned with NaN when beta = 0), twice per case (repeated executes must agree, bitwise when the plan says it
 * is deterministic), and assert every result is within the bound. Returns the largest error ratio seen, or -1
 * when the format reports SPMV_STATUS_NOT_SUPPORTED for this matrix and allow_unsupported is set. */
double support_check_format(spmv_context_t *ctx, spmv_format_t format, const spmv_plan_options_t *options,
                            const char *name, const spmv_matrix_t *A, int allow_unsupported);

/* support_check_format on every case of the edge-case corpus / every shared matrix, in precision p. */
void support_check_corpus(spmv_context_t *ctx, spmv_format_t format, const spmv_plan_options_t *options,
                          spmv_precision_t p);
void support_check_shared(spmv_context_t *ctx, spmv_format_t format, const spmv_plan_options_t *options,
                          spmv_precision_t p);

/* Run a CPU-backend plan once on host vectors (alpha 1.5, beta -0.5, random x and y0) and assert the result is
 * within the bound of B, the matrix the plan should now compute (e.g. one created with updated values). */
void support_check_plan_against(spmv_context_t *ctx, spmv_plan_t *plan, const spmv_matrix_t *B, const char *name);

/* Run a CPU executor on a built layout directly (not through a plan: a layout built for a GPU model, say) for
 * alpha/beta in {1,0}, {2,0.5}, {-1,1}, random x and y0 (y NaN when beta = 0), and assert every result is within
 * the bound of A; `what` names the case in a failure. */
void support_check_executor(const spmvport_format_data *fd, spmvport_cpu_executor run, const spmv_matrix_t *A,
                            const char *what);

/* GPU device models for layouts built on the host and run by the CPU executors (builders choose by the device:
 * multiprocessors, warp size, shared memory, L2): an H200, an MI250-like (wave64), an RDNA2-like (wave32) and an
 * Orin-like device (16 SMs, 4 MB of L2). */
#define SUPPORT_GPU_MODELS 4
extern const spmv_device_info_t support_gpu_models[SUPPORT_GPU_MODELS];

/* spmvport_format_build with stdout redirected to a temporary file: *printed receives the bytes the build wrote
 * there (the library must print nothing; METIS once did inside ehyb). */
spmv_status_t support_build_quietly(spmvport_format_data *fd, const spmv_matrix_t *A, spmv_format_t format,
                                    int warp_size, const spmv_device_info_t *dev, const spmv_plan_options_t *opt,
                                    char *msg, size_t msglen, long *printed);

/* The next number of a SplitMix64 sequence whose state is *s. */
uint64_t support_splitmix(uint64_t *s);

/* Fill v (count entries of precision) with values in [-1, 1) from a seed. */
void support_random_vector(void *v, int64_t count, spmv_precision_t precision, uint64_t seed);

/* Build a plan of A in `format` with options o (NULL: defaults), asserting success, and return its info (the plan
 * is destroyed; info.stats is a copy). */
spmv_plan_info_t support_plan_info(spmv_context_t *ctx, spmv_format_t format, const spmv_matrix_t *A,
                                   const spmv_plan_options_t *o);

/* The value of `key` in a plan's stats ("k1=v1;k2=v2;..."), matched as a whole key; asserts it is there. */
double support_stat(const char *stats, const char *key);

/* A scratch path unique to this process: SPMVPORT_TEST_TMPDIR/<pid>-<tag>. */
void support_tmp_path(char *buf, size_t len, const char *tag);

#endif
