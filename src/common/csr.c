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

/* Merge repeated columns of each (sorted) row in place; returns the compacted nnz. */
static int64_t merge_rows(int32_t m, int64_t *ptr, int32_t *col, double *val)
{
    int64_t out = 0;
    for (int32_t i = 0; i < m; i++) {
        int64_t b = ptr[i], e = ptr[i + 1];
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
    /* Two stable counting sorts, by column then by row, leave every row sorted by column: O(nnz + m + n). */
    int64_t *cptr = spmvport_calloc_array((size_t)n + 1, sizeof *cptr);
    int32_t *tmp_row = spmvport_malloc_array((size_t)nnz, sizeof *tmp_row);
    int32_t *tmp_col = spmvport_malloc_array((size_t)nnz, sizeof *tmp_col);
    double *tmp_val = spmvport_malloc_array((size_t)nnz, sizeof *tmp_val);
    if (cptr == NULL || tmp_row == NULL || tmp_col == NULL || tmp_val == NULL) {
        free(ptr); free(c); free(v); free(cptr); free(tmp_row); free(tmp_col); free(tmp_val);
        spmvport_msg(msg, msglen, "out of host memory for %lld entries", (long long)nnz);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    for (int64_t k = 0; k < nnz; k++) cptr[col[k] + 1]++;
    for (int32_t j = 0; j < n; j++) cptr[j + 1] += cptr[j];
    for (int64_t k = 0; k < nnz; k++) {
        int64_t p = cptr[col[k]]++;
        tmp_row[p] = row[k];
        tmp_col[p] = col[k];
        tmp_val[p] = val != NULL ? val[k] : 1.0;
    }
    free(cptr);
    for (int64_t k = 0; k < nnz; k++) ptr[tmp_row[k] + 1]++;
    for (int32_t i = 0; i < m; i++) ptr[i + 1] += ptr[i];
    for (int64_t k = 0; k < nnz; k++) {
        int64_t p = ptr[tmp_row[k]]++;
        c[p] = tmp_col[k];
        v[p] = tmp_val[k];
    }
    free(tmp_row); free(tmp_col); free(tmp_val);
    for (int32_t i = m; i > 0; i--) ptr[i] = ptr[i - 1];
    ptr[0] = 0;
    int64_t merged = merge_rows(m, ptr, c, v);
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
