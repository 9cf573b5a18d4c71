/*
 * format_builders.h -- one host builder per format (src/common/format_<name>.c).
 *
 * A builder fills fd (format, sizes, warp size and deterministic are set by the caller) from a validated matrix:
 * arrays (spmvport_format_add_array), params, value_map, stats. It checks every size it computes and returns a
 * status with a message; on failure the caller frees fd.
 */
#ifndef SPMVPORT_FORMAT_BUILDERS_H
#define SPMVPORT_FORMAT_BUILDERS_H

#include "internal.h"

/* dev: the device the plan is for (shared memory, multiprocessors, ...); on the CPU backend those figures are 0
 * and a builder uses the defaults it documents. */
typedef spmv_status_t (*spmvport_format_builder)(spmvport_format_data *fd, const spmv_matrix_t *A,
                                                 const spmv_device_info_t *dev, const spmv_plan_options_t *opt,
                                                 char *msg, size_t msglen);

/* csr_scalar, csr_vector, csr_lb, vendor (format_csr.c) */
spmv_status_t spmvport_build_csr(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                 const spmv_plan_options_t *opt, char *msg, size_t msglen);
/* the research formats, one file each: format_tile.c, format_hbp.c, format_amf_csr.c, format_teb.c,
 * format_ehyb.c */
spmv_status_t spmvport_build_tile(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                  const spmv_plan_options_t *opt, char *msg, size_t msglen);
spmv_status_t spmvport_build_hbp(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                 const spmv_plan_options_t *opt, char *msg, size_t msglen);
spmv_status_t spmvport_build_amf_csr(spmvport_format_data *fd, const spmv_matrix_t *A,
                                     const spmv_device_info_t *dev, const spmv_plan_options_t *opt, char *msg,
                                     size_t msglen);
spmv_status_t spmvport_build_teb(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                 const spmv_plan_options_t *opt, char *msg, size_t msglen);
spmv_status_t spmvport_build_ehyb(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                  const spmv_plan_options_t *opt, char *msg, size_t msglen);
/* csr_lb's split of a CSR (row_ptr of m rows, nnz entries) into chunks of `chunk` entries (a multiple of 8): appends
 * the SPMVPORT_LB_NARRAYS arrays of backend.h to fd, in that order, and returns the chunk and empty-row counts.
 * Used by csr_lb and by tile's deferred part. */
spmv_status_t spmvport_lb_add_arrays(spmvport_format_data *fd, const int32_t *row_ptr, int32_t m, int64_t nnz,
                                     int64_t chunk, size_t vsize, int64_t *nwarps_out, int64_t *nempty_out);
/* csr_lb's default chunk for nnz entries on device dev (one tile, 8W, on the CPU). */
int64_t spmvport_lb_default_chunk(int64_t nnz, const spmv_device_info_t *dev, int warp);
/* The automatic size of a global hot copy (csr_lb's lb_hot, hbp's hbp_hot_copy = 2): 8192 f64 or 16384 f32 columns
 * (H100, session 46: 4096-65536 measured; 128 KiB 1-11% slower on 8 of 9 graphs in f64, 1-6% in f32) */
#define SPMVPORT_HOT_AUTO_BYTES 65536
/* A's sizes and arrays, row_ptr[0] = 0, row_ptr[m] = nnz and row pointers that never decrease (_rows), and columns
 * in [0, n) too (_ranges); else INVALID_MATRIX with a message naming the row or the entry, prefixed by `who`.
 * Matrices of the public API were checked when made; the builders check again before they index by A's arrays
 * (internal callers; hbp and amf_csr check their columns in their own first pass). */
spmv_status_t spmvport_check_csr_rows(const spmv_matrix_t *A, const char *who, char *msg, size_t msglen);
spmv_status_t spmvport_check_csr_ranges(const spmv_matrix_t *A, const char *who, char *msg, size_t msglen);
/* memcpy in slices over the OpenMP threads: one thread cannot saturate host memory on a large node, and plans of
 * tens of millions of entries copy hundreds of MB. dst may be NULL (a failed allocation, reported by the caller). */
void spmvport_parallel_copy(void *dst, const void *src, size_t bytes);
/* How often each column of A is read (n counts, columns out of range not counted; NULL when out of host memory;
 * the caller frees it). */
uint32_t *spmvport_column_reads(const spmv_matrix_t *A);
/* csr_lb's hot columns for options.lb_hot (0: the automatic rule; format_csr.c): their count, 0 for none, -1 out of
 * host memory; with hot_out, the columns (ascending) and each column's index among them (-1: not hot). reads: NULL,
 * or a cache of spmvport_column_reads(A) the caller frees: used when set, set when the rule counts. */
int64_t spmvport_lb_hot_columns(const spmv_matrix_t *A, int lb_hot, uint32_t **reads, int32_t **hot_out,
                                int32_t **index_out);
/* dst[e] = src[e], or -1 - index[src[e]] where that column is hot (index >= 0): the relabelling csr_lb's and hbp's
 * hot copies read. Parallel, and without a branch (a graph's hot entries are about half of them, in no order: 2.4-
 * 3.0x faster than a branch on kron:19:8 and :20:16, 2 threads). dst may be src. */
void spmvport_relabel_hot_columns(int32_t *dst, const int32_t *src, int64_t nnz, const int32_t *index);
/* Lanes per row of CSR-vector from the average row length (rocSPARSE's rule), capped at the warp size. */
int spmvport_csr_vector_lanes(int32_t m, int32_t nnz, int warp_size);

#endif
