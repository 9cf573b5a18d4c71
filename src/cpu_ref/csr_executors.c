/*
 * csr_executors.c -- CPU executors of the CSR baselines, in the matrix's precision, following the GPU kernels:
 *   csr_scalar  one "thread" per row, entries in order;
 *   csr_vector  L lanes per row, lane l takes entries l, l+L, ...; then a shuffle-down tree (offsets L/2 .. 1);
 *   csr_lb      chunks of C entries; each chunk writes the rows it owns and leaves one carry (the partial sum of
 *               the row it starts inside of); a fix-up pass adds the carries of each row in chunk order.
 * With beta == 0, y is never read (it may hold NaN).
 */
#include <stdlib.h>

#include "cpu_ref.h"

#define ROW_PTR(fd) ((const int32_t *)(fd)->arrays[SPMVPORT_CSR_ROW_PTR].data)
#define COL_IDX(fd) ((const int32_t *)(fd)->arrays[SPMVPORT_CSR_COL_IDX].data)

/* One body per precision: REAL is the value and accumulator type, as in the kernels. */
#define DEFINE_CSR_EXECUTORS(REAL, SUFFIX)                                                                       \
    static inline void store_##SUFFIX(REAL *y, int32_t r, REAL alpha, REAL sum, REAL beta)                    \
    {                                                                                                        \
        y[r] = beta == (REAL)0 ? alpha * sum : alpha * sum + beta * y[r];                                    \
    }                                                                                                        \
                                                                                                             \
    static void scalar_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta, REAL *y) \
    {                                                                                                        \
        const int32_t *ptr = ROW_PTR(fd), *col = COL_IDX(fd);                                                \
        const REAL *val = fd->arrays[SPMVPORT_CSR_VALUES].data;                                              \
        _Pragma("omp parallel for schedule(static)")                                                         \
        for (int32_t r = 0; r < fd->m; r++) {                                                                \
            REAL sum = 0;                                                                                    \
            for (int32_t k = ptr[r]; k < ptr[r + 1]; k++) sum += val[k] * x[col[k]];                         \
            store_##SUFFIX(y, r, alpha, sum, beta);                                                          \
        }                                                                                                    \
    }                                                                                                        \
                                                                                                             \
    static void vector_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta, REAL *y) \
    {                                                                                                        \
        const int32_t *ptr = ROW_PTR(fd), *col = COL_IDX(fd);                                                \
        const REAL *val = fd->arrays[SPMVPORT_CSR_VALUES].data;                                              \
        const int lanes = (int)fd->params[SPMVPORT_P_LANES];                                                 \
        _Pragma("omp parallel for schedule(static)")                                                         \
        for (int32_t r = 0; r < fd->m; r++) {                                                                \
            REAL part[64];                                                                                   \
            for (int l = 0; l < lanes; l++) {                                                                \
                part[l] = 0;                                                                                 \
                for (int32_t k = ptr[r] + l; k < ptr[r + 1]; k += lanes) part[l] += val[k] * x[col[k]];      \
            }                                                                                                \
            for (int off = lanes / 2; off > 0; off /= 2)                                                     \
                for (int l = 0; l < off; l++) part[l] += part[l + off];                                      \
            store_##SUFFIX(y, r, alpha, part[0], beta);                                                      \
        }                                                                                                    \
    }                                                                                                        \
                                                                                                             \
    static void lb_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta, REAL *y)     \
    {                                                                                                        \
        const int32_t *ptr = ROW_PTR(fd), *col = COL_IDX(fd);                                                \
        const REAL *val = fd->arrays[SPMVPORT_CSR_VALUES].data;                                              \
        const int32_t *warp_row = fd->arrays[SPMVPORT_CSR_LB_WARP_ROW].data;                                 \
        REAL *carry_val = fd->arrays[SPMVPORT_CSR_LB_WARP_ROW + 1].data;                                     \
        int32_t *carry_row = fd->arrays[SPMVPORT_CSR_LB_WARP_ROW + 2].data;                                  \
        const int64_t chunk = fd->params[SPMVPORT_P_NNZ_PER_WARP], nwarps = fd->params[SPMVPORT_P_NWARPS];   \
        _Pragma("omp parallel for schedule(static)")                                                         \
        for (int64_t w = 0; w < nwarps; w++) {                                                               \
            int64_t begin = w * chunk, end = begin + chunk < fd->nnz ? begin + chunk : fd->nnz;              \
            int32_t first = warp_row[w], last = warp_row[w + 1];                                             \
            /* the carry: entries of the row this chunk starts inside of */                                  \
            int64_t carry_end = first < fd->m && ptr[first] < end ? ptr[first] : end;                        \
            REAL carry = 0;                                                                                  \
            for (int64_t k = begin; k < carry_end; k++) carry += val[k] * x[col[k]];                         \
            carry_row[w] = carry_end > begin ? first - 1 : -1;                                               \
            carry_val[w] = carry;                                                                            \
            for (int32_t r = first; r < last; r++) {                                                         \
                int64_t row_end = ptr[r + 1] < end ? ptr[r + 1] : end;                                       \
                REAL sum = 0;                                                                                \
                for (int64_t k = ptr[r]; k < row_end; k++) sum += val[k] * x[col[k]];                        \
                store_##SUFFIX(y, r, alpha, sum, beta);                                                      \
            }                                                                                                \
        }                                                                                                    \
        /* fix-up: the first chunk of each run of equal carry rows adds the run's carries in order */        \
        for (int64_t w = 0; w < nwarps; w++) {                                                               \
            int32_t r = carry_row[w];                                                                        \
            if (r < 0 || (w > 0 && carry_row[w - 1] == r)) continue;                                         \
            REAL sum = 0;                                                                                    \
            for (int64_t v = w; v < nwarps && carry_row[v] == r; v++) sum += carry_val[v];                   \
            y[r] += alpha * sum;                                                                             \
        }                                                                                                    \
    }

DEFINE_CSR_EXECUTORS(float, f32)
DEFINE_CSR_EXECUTORS(double, f64)

#define DISPATCH(NAME)                                                                                           \
    void spmvport_cpu_csr_##NAME(const spmvport_format_data *fd, double alpha, const void *x, double beta,      \
                                 void *y)                                                                      \
    {                                                                                                          \
        if (fd->precision == SPMV_F32) NAME##_f32(fd, (float)alpha, x, (float)beta, y);                        \
        else NAME##_f64(fd, alpha, x, beta, y);                                                                \
    }

DISPATCH(scalar)
DISPATCH(vector)
DISPATCH(lb)
