/*
 * csr.c -- host CSR in double precision: the common currency of the reader, the generators and the oracle.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void spmvport_csr_free(spmvport_csr *A)
{
    if (A == NULL) return;
    free(A->row_ptr);
    free(A->col_idx);
    free(A->val);
    memset(A, 0, sizeof *A);
}

/* Insertion sort of one row by column, carrying values: rows are short, and long rows come mostly sorted. */
static void sort_row(int32_t *col, double *val, int32_t len)
{
    for (int32_t i = 1; i < len; i++) {
        int32_t c = col[i];
        double v = val[i];
        int32_t j = i - 1;
        while (j >= 0 && col[j] > c) {
            col[j + 1] = col[j];
            val[j + 1] = val[j];
            j--;
        }
        col[j + 1] = c;
        val[j + 1] = v;
    }
}

/* ---- heap sort for long rows (insertion sort is quadratic on a shuffled hub row) ---------------------------- */

static void sift_down(int32_t *col, double *val, int32_t start, int32_t end)
{
    int32_t root = start;
    while (2 * root + 1 < end) {
        int32_t child = 2 * root + 1;
        if (child + 1 < end && col[child + 1] > col[child]) child++;
        if (col[root] >= col[child]) return;
        int32_t tc = col[root]; col[root] = col[child]; col[child] = tc;
        double tv = val[root]; val[root] = val[child]; val[child] = tv;
        root = child;
    }
}

static void heap_sort_row(int32_t *col, double *val, int32_t len)
{
    for (int32_t s = len / 2 - 1; s >= 0; s--) sift_down(col, val, s, len);
    for (int32_t end = len - 1; end > 0; end--) {
        int32_t tc = col[0]; col[0] = col[end]; col[end] = tc;
        double tv = val[0]; val[0] = val[end]; val[end] = tv;
        sift_down(col, val, 0, end);
    }
}

/* Sort each row's columns and merge duplicates in place; returns the compacted nnz. */
static int64_t sort_and_merge_rows(int32_t m, int64_t *ptr, int32_t *col, double *val)
{
    int64_t out = 0;
    for (int32_t i = 0; i < m; i++) {
        int64_t b = ptr[i], e = ptr[i + 1];
        int32_t len = (int32_t)(e - b);
        if (len > 32) heap_sort_row(col + b, val + b, len);
        else sort_row(col + b, val + b, len);
        ptr[i] = out;
        for (int64_t k = b; k < e; k++) {
            if (out > ptr[i] && col[out - 1] == col[k]) {
                val[out - 1] += val[k];
            } else {
                col[out] = col[k];
                val[out] = val[k];
                out++;
            }
        }
    }
    ptr[m] = out;
    return out;
}

spmv_status_t spmvport_csr_from_coo(spmvport_csr *out, int32_t m, int32_t n, int64_t nnz, const int32_t *row,
                                    const int32_t *col, const double *val, char *msg, size_t msglen)
{
    memset(out, 0, sizeof *out);
    if (m < 0 || n < 0 || nnz < 0) {
        spmvport_msg(msg, msglen, "negative size (m=%d, n=%d, nnz=%lld)", m, n, (long long)nnz);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    int64_t *ptr = spmvport_calloc_array((size_t)m + 1, sizeof *ptr);
    int32_t *c = spmvport_malloc_array((size_t)nnz, sizeof *c);
    double *v = spmvport_malloc_array((size_t)nnz, sizeof *v);
    if (ptr == NULL || c == NULL || v == NULL) {
        free(ptr); free(c); free(v);
        spmvport_msg(msg, msglen, "out of host memory for %lld entries", (long long)nnz);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    /* counting sort by row (stable) */
    for (int64_t k = 0; k < nnz; k++) ptr[row[k] + 1]++;
    for (int32_t i = 0; i < m; i++) ptr[i + 1] += ptr[i];
    for (int64_t k = 0; k < nnz; k++) {
        int64_t p = ptr[row[k]]++;
        c[p] = col[k];
        v[p] = val != NULL ? val[k] : 1.0;
    }
    for (int32_t i = m; i > 0; i--) ptr[i] = ptr[i - 1];
    ptr[0] = 0;
    int64_t merged = sort_and_merge_rows(m, ptr, c, v);
    if (merged > INT32_MAX) {
        free(ptr); free(c); free(v);
        spmvport_msg(msg, msglen, "%lld distinct entries exceed the 32-bit index range", (long long)merged);
        return SPMV_STATUS_OVERFLOW;
    }
    int32_t *rp = spmvport_malloc_array((size_t)m + 1, sizeof *rp);
    if (rp == NULL) {
        free(ptr); free(c); free(v);
        spmvport_msg(msg, msglen, "out of host memory for %d rows", m);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    for (int32_t i = 0; i <= m; i++) rp[i] = (int32_t)ptr[i];
    free(ptr);
    out->m = m;
    out->n = n;
    out->nnz = (int32_t)merged;
    out->row_ptr = rp;
    out->col_idx = c; /* may be longer than nnz after merging: harmless */
    out->val = v;
    return SPMV_STATUS_SUCCESS;
}
