/*
 * csr_executors.c -- CPU executors of the CSR baselines, in the matrix's precision, following the GPU kernels:
 *   csr_scalar  one "thread" per row, entries in order;
 *   csr_vector  L lanes per row, lane l takes entries l, l+L, ...; then a shuffle-down tree (offsets L/2 .. 1);
 *   csr_lb      chunks of C entries; each chunk finds its rows by the row-start bits, writes the rows that start
 *               in it and leaves one carry (the partial sum of the row it starts inside of); a fix-up pass adds
 *               the carries of each row in chunk order, and the empty rows are written y = beta*y apart. With
 *               hot columns (options.lb_hot) x at them is copied first and their entries read the copy.
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
    /* A chunk walks its entries with the row-start bits, the compact row advancing at each set bit; a row is  \
     * written when the next one starts or the chunk ends. The row open when the chunk starts (chunk_row) is the \
     * chunk's carry if its first entry does not start a row, and is not the chunk's to write otherwise. */      \
    static void lb_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta, REAL *y)     \
    {                                                                                                        \
        const int32_t *col = COL_IDX(fd);                                                                    \
        const REAL *val = fd->arrays[SPMVPORT_CSR_VALUES].data;                                              \
        const spmvport_array *lb = fd->arrays + SPMVPORT_CSR_LB_SPLIT;                                       \
        const int32_t *chunk_row = lb[SPMVPORT_LB_CHUNK_ROW].data;                                           \
        REAL *carry_val = lb[SPMVPORT_LB_CARRY_VAL].data;                                                    \
        int32_t *carry_row = lb[SPMVPORT_LB_CARRY_ROW].data;                                                 \
        const uint8_t *bits = lb[SPMVPORT_LB_START_BITS].data;                                               \
        const int32_t *row_map = lb[SPMVPORT_LB_ROW_MAP].bytes > 0 ? lb[SPMVPORT_LB_ROW_MAP].data : NULL;    \
        const int32_t *empty_rows = lb[SPMVPORT_LB_EMPTY_ROWS].data;                                         \
        const int64_t chunk = fd->params[SPMVPORT_P_NNZ_PER_WARP], nwarps = fd->params[SPMVPORT_P_NWARPS];   \
        const int64_t nempty = fd->params[SPMVPORT_P_LB_EMPTY];                                              \
        /* hot columns: x at them copied first (the GPU's gather kernel); column -1 - i reads copy i */       \
        const int64_t nhot = fd->params[SPMVPORT_P_LB_HOT];                                                  \
        REAL *hot_x = nhot > 0 ? fd->arrays[SPMVPORT_CSR_LB_HOT_X].data : NULL;                              \
        const int32_t *hot = nhot > 0 ? fd->arrays[SPMVPORT_CSR_LB_HOT].data : NULL;                          \
        for (int64_t i = 0; i < nhot; i++) hot_x[i] = x[hot[i]];                                             \
        _Pragma("omp parallel for schedule(static)")                                                         \
        for (int64_t w = 0; w < nwarps; w++) {                                                               \
            const int64_t begin = w * chunk, end = begin + chunk < fd->nnz ? begin + chunk : fd->nnz;        \
            const int32_t base = chunk_row[w];                                                               \
            const int carried = begin > 0 && begin < end && !(bits[begin >> 3] & 1);                         \
            carry_row[w] = carried ? (row_map ? row_map[base] : base) : -1;                                  \
            carry_val[w] = 0;                                                                                \
            int32_t row = base;                                                                              \
            REAL sum = 0;                                                                                    \
            for (int64_t e = begin; e <= end; e++) {                                                         \
                if (e == end || (bits[e >> 3] >> (e & 7) & 1)) { /* the row open so far ends */              \
                    if (row != base) store_##SUFFIX(y, row_map ? row_map[row] : row, alpha, sum, beta);      \
                    else if (carried) carry_val[w] = sum;                                                    \
                    if (e == end) break;                                                                     \
                    row++;                                                                                   \
                    sum = 0;                                                                                 \
                }                                                                                            \
                sum += val[e] * (col[e] < 0 ? hot_x[-1 - (int64_t)col[e]] : x[col[e]]);                     \
            }                                                                                                \
        }                                                                                                    \
        for (int64_t k = 0; k < nempty; k++) {                                                               \
            const int32_t r = empty_rows[k];                                                                 \
            y[r] = beta == (REAL)0 ? (REAL)0 : beta * y[r];                                                  \
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
