/*
 * teb_executor.c -- CPU executor of format teb, walking the arrays exactly as the kernel (device/teb_kernels.h)
 * does, in the matrix's precision. One thread block per block b of B threads (W lanes per warp, B / W warps):
 *
 *   block rows  [blo_idx[b], warp):  thread t sums entries t, t + B, ...; each warp folds its lanes with a
 *                                    shuffle-down tree (offsets W/2 .. 1); warp 0 folds the warp sums, padded with
 *                                    zeros to W lanes, with the same tree; one row after the other;
 *   warp rows   [warp, group):       warp w takes rows warp + w, warp + w + B/W, ...; lane l sums entries
 *                                    l, l + W, ...; shuffle-down tree over W;
 *   group rows  [group, empty):      G = 2^lanes_log2 lanes per row: group g = t / G takes rows group + g,
 *                                    group + g + B/G, ...; lane j sums entries j, j + G, ...; tree over G
 *                                    (G = 1: the paper's thread per row, entries in order);
 *   empty rows  [empty, blo_idx[b+1]): thread t takes rows empty + t, empty + t + B, ...
 *
 * Every row r is written once, to y[row_orig[r]], as alpha*sum + beta*y (with beta == 0, y is never read).
 */
#include "cpu_ref.h"
#include "../common/format_teb.h"

#define TEB_ARR(fd, slot) ((const int32_t *)(fd)->arrays[slot].data)

#define DEFINE_TEB_EXECUTOR(REAL, SUFFIX)                                                                        \
    static inline void store_##SUFFIX(REAL *y, int32_t r, REAL alpha, REAL sum, REAL beta)                    \
    {                                                                                                        \
        y[r] = beta == (REAL)0 ? alpha * sum : alpha * sum + beta * y[r];                                    \
    }                                                                                                        \
                                                                                                             \
    /* lane 0's value after a shuffle-down tree over `lanes` lanes of p (offsets lanes/2 .. 1) */            \
    static inline REAL tree_##SUFFIX(REAL *p, int lanes)                                                     \
    {                                                                                                        \
        for (int off = lanes / 2; off > 0; off /= 2)                                                         \
            for (int l = 0; l < off; l++) p[l] += p[l + off];                                                \
        return p[0];                                                                                         \
    }                                                                                                        \
                                                                                                             \
    /* lane j of `lanes` sums entries j, j + lanes, ... of row r; then the tree */                           \
    static inline REAL lanes_row_##SUFFIX(const int32_t *ptr, const int32_t *col, const REAL *val,           \
                                          const REAL *x, int32_t r, int lanes, REAL *p)                      \
    {                                                                                                        \
        for (int j = 0; j < lanes; j++) {                                                                    \
            p[j] = 0;                                                                                        \
            for (int64_t k = (int64_t)ptr[r] + j; k < ptr[r + 1]; k += lanes) p[j] += val[k] * x[col[k]];    \
        }                                                                                                    \
        return tree_##SUFFIX(p, lanes);                                                                      \
    }                                                                                                        \
                                                                                                             \
    /* the whole block on row r: per-thread sums, per-warp trees, then warp 0's tree over the warp sums */   \
    static inline REAL block_row_##SUFFIX(const int32_t *ptr, const int32_t *col, const REAL *val,           \
                                          const REAL *x, int32_t r, int B, int W, REAL *p)                   \
    {                                                                                                        \
        REAL warp_sum[SPMVPORT_TEB_MAX_THREADS];                                                             \
        for (int j = 0; j < B; j++) {                                                                        \
            p[j] = 0;                                                                                        \
            for (int64_t k = (int64_t)ptr[r] + j; k < ptr[r + 1]; k += B) p[j] += val[k] * x[col[k]];        \
        }                                                                                                    \
        for (int w = 0; w < B / W; w++) warp_sum[w] = tree_##SUFFIX(p + w * W, W);                           \
        for (int l = B / W; l < W; l++) warp_sum[l] = 0;                                                     \
        return tree_##SUFFIX(warp_sum, W);                                                                   \
    }                                                                                                        \
                                                                                                             \
    static void teb_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta, REAL *y)   \
    {                                                                                                        \
        const REAL *val = fd->arrays[SPMVPORT_TEB_VALUES].data;                                              \
        const int32_t *col = TEB_ARR(fd, SPMVPORT_TEB_COL_IDX), *ptr = TEB_ARR(fd, SPMVPORT_TEB_ROW_PTR);    \
        const int32_t *blo = TEB_ARR(fd, SPMVPORT_TEB_BLO_IDX), *orig = TEB_ARR(fd, SPMVPORT_TEB_ROW_ORIG);  \
        const int32_t *tier = TEB_ARR(fd, SPMVPORT_TEB_BLO_TIER);                                            \
        const int64_t nb = fd->params[SPMVPORT_TEB_P_BLOCKS];                                                \
        const int B = (int)fd->params[SPMVPORT_TEB_P_THREADS], W = fd->warp_size;                            \
        _Pragma("omp parallel for schedule(dynamic, 4)")                                                     \
        for (int64_t b = 0; b < nb; b++) {                                                                   \
            REAL p[SPMVPORT_TEB_MAX_THREADS];                                                                \
            const int32_t *t = tier + b * SPMVPORT_TEB_TIER_FIELDS;                                          \
            const int32_t wb = t[SPMVPORT_TEB_TIER_WARP], gb = t[SPMVPORT_TEB_TIER_GROUP];                   \
            const int32_t eb = t[SPMVPORT_TEB_TIER_EMPTY], G = 1 << t[SPMVPORT_TEB_TIER_LANES_LOG2];         \
            for (int32_t r = blo[b]; r < wb; r++)                                                            \
                store_##SUFFIX(y, orig[r], alpha, block_row_##SUFFIX(ptr, col, val, x, r, B, W, p), beta);   \
            for (int64_t base = wb; base < gb; base += B / W)                                                \
                for (int w = 0; w < B / W && base + w < gb; w++) {                                           \
                    const int32_t r = (int32_t)(base + w);                                                   \
                    store_##SUFFIX(y, orig[r], alpha, lanes_row_##SUFFIX(ptr, col, val, x, r, W, p), beta);  \
                }                                                                                            \
            for (int64_t base = gb; base < eb; base += B / G)                                                \
                for (int g = 0; g < B / G && base + g < eb; g++) {                                           \
                    const int32_t r = (int32_t)(base + g);                                                   \
                    store_##SUFFIX(y, orig[r], alpha, lanes_row_##SUFFIX(ptr, col, val, x, r, G, p), beta);  \
                }                                                                                            \
            for (int32_t r = eb; r < blo[b + 1]; r++) store_##SUFFIX(y, orig[r], alpha, (REAL)0, beta);      \
        }                                                                                                    \
    }

DEFINE_TEB_EXECUTOR(float, f32)
DEFINE_TEB_EXECUTOR(double, f64)

void spmvport_cpu_teb(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y)
{
    if (fd->precision == SPMV_F32) teb_f32(fd, (float)alpha, x, (float)beta, y);
    else teb_f64(fd, alpha, x, beta, y);
}
