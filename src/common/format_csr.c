/*
 * format_csr.c -- the CSR baselines: csr_scalar, csr_vector, csr_lb and the vendor library share plain CSR.
 *
 * csr_lb adds the nnz split: the non-zeros are cut into chunks of C = nnz_per_warp entries, one warp each.
 * warp_row[w] is the first row whose first entry lies at or after chunk w's start (the rows chunk w "owns";
 * warp_row[nwarps] = m). A row's entries in later chunks are carries: each chunk leaves the partial sum of the row
 * it starts inside of in carry_val/carry_row, and a fix-up pass adds them in chunk order (deterministic).
 */
#include <stdlib.h>
#include <string.h>

#include "format_builders.h"

int spmvport_csr_vector_lanes(int32_t m, int32_t nnz, int warp_size)
{
    double avg = m > 0 ? (double)nnz / m : 0.0;
    int lanes = avg < 4 ? 2 : avg < 8 ? 4 : avg < 16 ? 8 : avg < 32 ? 16 : avg < 64 ? 32 : 64;
    return lanes > warp_size ? warp_size : lanes;
}

/* memcpy in slices over the OpenMP threads: one thread cannot saturate host memory on a large node, and plans of
 * tens of millions of entries copy hundreds of MB. dst may be NULL (a failed allocation, reported by the caller). */
static void parallel_copy(void *dst, const void *src, size_t bytes)
{
    if (dst == NULL || bytes == 0) return;
    const size_t slice = (size_t)1 << 22;
    const long long slices = (long long)((bytes + slice - 1) / slice);
#pragma omp parallel for schedule(static)
    for (long long k = 0; k < slices; k++) {
        size_t off = (size_t)k * slice, len = bytes - off < slice ? bytes - off : slice;
        memcpy((char *)dst + off, (const char *)src + off, len);
    }
}

/* First row r with row_ptr[r] >= target (m if none): binary search over the monotone row pointer. */
static int32_t first_row_at_or_after(const int32_t *row_ptr, int32_t m, int64_t target)
{
    int32_t lo = 0, hi = m;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (row_ptr[mid] >= target) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

static spmv_status_t add_lb_split(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_plan_options_t *opt)
{
    int64_t chunk = opt->nnz_per_warp > 0 ? opt->nnz_per_warp : 8 * (int64_t)fd->warp_size;
    int64_t nwarps = A->nnz > 0 ? (A->nnz + chunk - 1) / chunk : 1;
    int32_t *warp_row = spmvport_malloc_array((size_t)nwarps + 1, sizeof(int32_t));
    spmv_status_t st = spmvport_format_add_array(fd, "warp_row", warp_row, ((size_t)nwarps + 1) * sizeof(int32_t), 0);
    if (st != SPMV_STATUS_SUCCESS) return st;
    warp_row[0] = 0; /* chunk 0 owns every leading empty row too */
    for (int64_t w = 1; w < nwarps; w++) warp_row[w] = first_row_at_or_after(A->row_ptr, A->m, w * chunk);
    warp_row[nwarps] = A->m;
    /* per-chunk carries: written by the kernel on every call, so their content here is irrelevant */
    size_t vsize = spmvport_value_size(A->precision);
    st = spmvport_format_add_array(fd, "carry_val", spmvport_calloc_array((size_t)nwarps, vsize),
                                   (size_t)nwarps * vsize, 0);
    if (st == SPMV_STATUS_SUCCESS)
        st = spmvport_format_add_array(fd, "carry_row", spmvport_calloc_array((size_t)nwarps, sizeof(int32_t)),
                                       (size_t)nwarps * sizeof(int32_t), 0);
    fd->params[SPMVPORT_P_NNZ_PER_WARP] = chunk;
    fd->params[SPMVPORT_P_NWARPS] = nwarps;
    return st;
}

spmv_status_t spmvport_build_csr(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                 const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
    (void)dev;
    size_t vsize = spmvport_value_size(A->precision);
    size_t ptr_bytes = ((size_t)A->m + 1) * sizeof(int32_t);
    size_t col_bytes = (size_t)A->nnz * sizeof(int32_t), val_bytes = (size_t)A->nnz * vsize;
    void *ptr = spmvport_malloc_array((size_t)A->m + 1, sizeof(int32_t));
    void *col = spmvport_malloc_array((size_t)A->nnz, sizeof(int32_t));
    void *val = spmvport_malloc_array((size_t)A->nnz, vsize);
    parallel_copy(ptr, A->row_ptr, ptr_bytes);
    parallel_copy(col, A->col_idx, col_bytes);
    parallel_copy(val, A->values, val_bytes);
    spmv_status_t st = spmvport_format_add_array(fd, "row_ptr", ptr, ptr_bytes, 0);
    if (st == SPMV_STATUS_SUCCESS) st = spmvport_format_add_array(fd, "col_idx", col, col_bytes, 0);
    else free(col);
    if (st == SPMV_STATUS_SUCCESS) st = spmvport_format_add_array(fd, "values", val, val_bytes, 1);
    else free(val);
    if (st == SPMV_STATUS_SUCCESS && fd->format == SPMV_FORMAT_CSR_LB) st = add_lb_split(fd, A, opt);
    if (st != SPMV_STATUS_SUCCESS) {
        spmvport_msg(msg, msglen, "out of host memory building CSR arrays for %d rows, %d entries", A->m, A->nnz);
        return st;
    }
    fd->value_slots = A->nnz;
    if (fd->format == SPMV_FORMAT_CSR_VECTOR) {
        int lanes = opt->lanes_per_row > 0 ? opt->lanes_per_row : spmvport_csr_vector_lanes(A->m, A->nnz,
                                                                                            fd->warp_size);
        fd->params[SPMVPORT_P_LANES] = lanes;
        spmvport_msg(fd->stats, sizeof fd->stats, "lanes_per_row=%d", lanes);
    } else if (fd->format == SPMV_FORMAT_CSR_LB) {
        spmvport_msg(fd->stats, sizeof fd->stats, "nnz_per_warp=%lld;warps=%lld",
                     (long long)fd->params[SPMVPORT_P_NNZ_PER_WARP], (long long)fd->params[SPMVPORT_P_NWARPS]);
    } else if (fd->format == SPMV_FORMAT_VENDOR) {
        fd->params[SPMVPORT_P_VENDOR_ALG] = opt->vendor_alg;
        fd->deterministic = 0; /* cuSPARSE/hipSPARSE give no bitwise guarantee for every algorithm */
        spmvport_msg(fd->stats, sizeof fd->stats, "vendor_alg=%d", opt->vendor_alg);
    }
    return SPMV_STATUS_SUCCESS;
}
