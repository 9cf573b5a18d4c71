/*
 * tile_executor.c -- CPU executor of TileSpMV (format `tile`), walking the arrays exactly as
 * src/common/device/tile_kernels.h does (see format_tile.h for the payloads, docs/formats/tile.md for the design).
 *
 * One warp of W lanes per task (at most tbalance tiles of one tile row; tile_band_tasks_kernel gives a warp K
 * consecutive tasks, each summed exactly as here, so K changes the schedule, not the order). The lanes form G = W / 16 groups of 16
 * (2 on W = 32, 4 on W = 64): lane l works for tile row r = l % 16 in group g = l / 16, and group g takes the
 * task's tiles g, g + G, ... (G tiles in work at once). Per tile, lane r of the tile's group adds row r's entries
 * of the tile, in order (the kernel loads a batch of tiles' first entries early, but adds them in this order):
 *   CSR        entries start .. end of row r
 *   COO        the tile's entries whose row nibble is r (a lane scans them all, as on the GPU)
 *   ELL        slots k*rowlen + r for k < w (zero padding skipped)
 *   HYB        the ELL part, then the tail as COO
 *   DENSE      slots c*rowlen + r for c < collen (zeros skipped)
 *   DENSE_ROW  when row r is full: slots c*nd + rank(r)
 *   DENSE_COL  full columns c: slot rank(c)*rowlen + r
 *   BAND       (nd diagonals from lo, in the format byte) diagonal d = lo + k in order: its slot for row r,
 *              column r + d, when both are inside the tile (diagonals stored one after another; zeros skipped)
 * With the GROUP_TASKS flag a task belongs to one group of 16 lanes instead (W / 16 tasks per warp): its
 * tiles all go to that group, in order, and there is no butterfly. The CSR_SHUFFLE flag changes where a CSR
 * entry's x comes from (a shuffle, not a load), not the order: nothing here depends on it.
 * After the task's tiles, a butterfly over lanes l ^ 16, l ^ 32 (shuffle xor) adds the G groups of each row;
 * lanes 0..rowlen-1 write y = alpha*sum + beta*y, or the row's carry slot when the tile row is split. A fix-up
 * adds each split row's carries in task order (with block tasks, SPMVPORT_TILE_FLAG_BLOCK_TASKS2 / 4 / 8, a tile
 * row's tasks are warps of one thread block, and its first warp adds their sums in task order instead: the same sum);
 * then the deferred CSR, if any, adds alpha * its products through the csr_lb traversal with beta = 1; inline
 * (SPMVPORT_TILE_FLAG_DEFERRED_INLINE), each tile row's first task has added its rows' entries before its tiles
 * instead. Everything accumulates in the matrix's precision; beta == 0 never reads y.
 */
#include <string.h>

#include "../common/format_tile.h"
#include "cpu_ref.h"

#define TD SPMVPORT_TILE_DIM
#define MAX_WARP 64

static inline int nibble(const uint8_t *p, int k) { return (p[k >> 1] >> ((k & 1) * 4)) & 15; }

static inline int popcount16(unsigned v)
{
    int c = 0;
    for (; v != 0; v &= v - 1) c++;
    return c;
}

#define DEFINE_TILE_EXECUTOR(REAL, SUFFIX)                                                                       \
    static inline REAL store_##SUFFIX(REAL alpha, REAL sum, REAL beta, const REAL *y)                          \
    {                                                                                                        \
        return beta == (REAL)0 ? alpha * sum : alpha * sum + beta * *y;                                      \
    }                                                                                                        \
                                                                                                             \
    /* COO entries [0, cnt): entry j goes to the lane of its row. */                                     \
    static void coo_##SUFFIX(REAL *acc, const uint8_t *idx, const REAL *val, int cnt, const REAL *xs)         \
    {                                                                                                        \
        for (int j = 0; j < cnt; j++) acc[idx[j] >> 4] += val[j] * xs[idx[j] & 15];                         \
    }                                                                                                        \
                                                                                                             \
    /* ELL slots k*rowlen + r: lane r, k in order; zero padding skipped. */                                 \
    static void ell_##SUFFIX(REAL *acc, const uint8_t *nib, const REAL *val, int w, int rowlen, const REAL *xs) \
    {                                                                                                        \
        for (int k = 0; k < w; k++)                                                                          \
            for (int r = 0; r < rowlen; r++) {                                                               \
                const int s = k * rowlen + r;                                                                \
                const REAL v = val[s];                                                                       \
                if (v != (REAL)0) acc[r] += v * xs[nibble(nib, s)];                                          \
            }                                                                                                \
    }                                                                                                        \
                                                                                                             \
    /* One tile's contribution to its group's 16 lanes: lane r adds row r's entries in the kernel's order    \
     * (the loops below visit each row's entries in that order; rows are independent). */                   \
    static void tile_##SUFFIX(REAL *acc, int fmt, const uint8_t *idx, const REAL *val, int nv, int rowlen,    \
                              int collen, const REAL *xs)                                                    \
    {                                                                                                        \
        if (SPMVPORT_TILE_IS_BAND(fmt)) { /* diagonals lo.., each with its rows inside the tile only */   \
            const int lo = SPMVPORT_TILE_BAND_LO(fmt), nd = SPMVPORT_TILE_BAND_ND(fmt);                      \
            for (int k = 0, base = 0; k < nd; k++) {                                                         \
                const int d = lo + k, rs = d < 0 ? -d : 0, re = rowlen < collen - d ? rowlen : collen - d;   \
                for (int r = rs; r < re; r++) {                                                              \
                    const REAL v = val[base + r - rs];                                                       \
                    if (v != (REAL)0) acc[r] += v * xs[r + d];                                               \
                }                                                                                            \
                base += re > rs ? re - rs : 0;                                                               \
            }                                                                                                \
            return;                                                                                          \
        }                                                                                                    \
        switch (fmt) {                                                                                       \
        case SPMVPORT_TILE_CSR:                                                                              \
            for (int r = 0; r < rowlen; r++) {                                                               \
                const int end = r + 1 < rowlen ? idx[r + 1] : nv;                                            \
                for (int k = idx[r]; k < end; k++) acc[r] += val[k] * xs[nibble(idx + rowlen, k)];           \
            }                                                                                                \
            break;                                                                                           \
        case SPMVPORT_TILE_COO: coo_##SUFFIX(acc, idx, val, nv, xs); break;                                  \
        case SPMVPORT_TILE_ELL: ell_##SUFFIX(acc, idx + 1, val, idx[0], rowlen, xs); break;                  \
        case SPMVPORT_TILE_HYB: {                                                                            \
            const int w = idx[0], ell = w * rowlen;                                                          \
            ell_##SUFFIX(acc, idx + 1, val, w, rowlen, xs);                                                  \
            coo_##SUFFIX(acc, idx + 1 + (ell + 1) / 2, val + ell, nv - ell, xs);                             \
            break;                                                                                           \
        }                                                                                                    \
        case SPMVPORT_TILE_DENSE: /* zeros skipped */                                                        \
            for (int c = 0; c < collen; c++)                                                                 \
                for (int r = 0; r < rowlen; r++) {                                                           \
                    const REAL v = val[c * rowlen + r];                                                      \
                    if (v != (REAL)0) acc[r] += v * xs[c];                                                   \
                }                                                                                            \
            break;                                                                                           \
        case SPMVPORT_TILE_DENSE_ROW: {                                                                      \
            const unsigned mask = idx[0] | (unsigned)idx[1] << 8;                                            \
            const int nd = popcount16(mask);                                                                 \
            for (int c = 0; c < collen; c++)                                                                 \
                for (int r = 0, d = 0; r < rowlen; r++)                                                      \
                    if (mask >> r & 1) acc[r] += val[c * nd + d++] * xs[c];                                  \
            break;                                                                                           \
        }                                                                                                    \
        default: { /* DENSE_COL */                                                                           \
            const unsigned mask = idx[0] | (unsigned)idx[1] << 8;                                            \
            for (int c = 0, q = 0; c < collen; c++) {                                                        \
                if (!(mask >> c & 1)) continue;                                                              \
                for (int r = 0; r < rowlen; r++) acc[r] += val[q * rowlen + r] * xs[c];                      \
                q++;                                                                                         \
            }                                                                                                \
            break;                                                                                           \
        }                                                                                                    \
        }                                                                                                    \
    }                                                                                                        \
                                                                                                             \
    /* An inline deferred part (the tile row's first task, before its tiles): chunks of W entries, lane l     \
     * multiplies entry base + l, a segmented Hillis-Steele scan (segments: the rows) leaves each row's sum  \
     * of the chunk at its last lane, and lane r (group 0) adds it: the kernel's tile_deferred_rows. */      \
    static void deferred_##SUFFIX(const spmvport_format_data *fd, REAL *acc, const REAL *x, int64_t r0,      \
                                  int rowlen)                                                                \
    {                                                                                                        \
        const int W = fd->warp_size;                                                                         \
        const int32_t *dp = (const int32_t *)fd->arrays[SPMVPORT_TILE_A_DEF_PTR].data + r0;                  \
        const int32_t *dc = fd->arrays[SPMVPORT_TILE_A_DEF_COL].data;                                        \
        const REAL *dv = fd->arrays[SPMVPORT_TILE_A_DEF_VAL].data;                                           \
        for (int32_t base = dp[0]; base < dp[rowlen]; base += W) {                                           \
            REAL v[MAX_WARP], next[MAX_WARP];                                                                \
            int seg[MAX_WARP];                                                                               \
            for (int l = 0, r = 0; l < W; l++) {                                                             \
                const int32_t k = base + l;                                                                  \
                v[l] = k < dp[rowlen] ? dv[k] * x[dc[k]] : 0;                                                \
                while (r < rowlen && dp[r + 1] <= k) r++; /* entry k's row (rowlen past the end: unused) */ \
                seg[l] = r < rowlen && dp[r] > base ? dp[r] - base : 0; /* its first lane in the chunk */     \
            }                                                                                                \
            for (int d = 1; d < W; d *= 2) {                                                                 \
                for (int l = 0; l < W; l++) next[l] = l - d >= seg[l] ? v[l] + v[l - d] : v[l];              \
                memcpy(v, next, sizeof(REAL) * (size_t)W);                                                   \
            }                                                                                                \
            for (int r = 0; r < rowlen; r++)                                                                 \
                if (dp[r] < dp[r + 1] && dp[r + 1] > base && dp[r] - base < W)                               \
                    acc[r] += v[(dp[r + 1] - base < W ? dp[r + 1] - base : W) - 1];                          \
        }                                                                                                    \
    }                                                                                                        \
                                                                                                             \
    /* One warp task: its tiles and the butterfly; sum[r] (r < TD) gets row r's sum. */                     \
    static void task_sum_##SUFFIX(const spmvport_format_data *fd, int64_t w, const REAL *x, REAL *sum)       \
    {                                                                                                        \
        const int W = fd->warp_size;                                                                         \
        const int32_t *task = fd->arrays[SPMVPORT_TILE_A_TASK].data;                                         \
        const int32_t *tcol = fd->arrays[SPMVPORT_TILE_A_COL].data;                                          \
        const uint8_t *tfmt = fd->arrays[SPMVPORT_TILE_A_FMT].data;                                          \
        const int32_t *off = fd->arrays[SPMVPORT_TILE_A_OFF].data;                                           \
        const uint8_t *idx = fd->arrays[SPMVPORT_TILE_A_IDX].data;                                           \
        const REAL *val = fd->arrays[SPMVPORT_TILE_A_VAL].data;                                              \
        const int32_t *rec = task + SPMVPORT_TILE_TASK_FIELDS * w;                                           \
        const int32_t first = rec[SPMVPORT_TILE_TASK_FIRST];                                                 \
        const int32_t last = rec[SPMVPORT_TILE_TASK_FIELDS + SPMVPORT_TILE_TASK_FIRST];                      \
        const int32_t tr = rec[SPMVPORT_TILE_TASK_ROW];                                                      \
        const int64_t r0 = (int64_t)tr * TD;                                                                 \
        const int rowlen = fd->m - r0 < TD ? (int)(fd->m - r0) : TD;                                         \
        /* GROUP_TASKS: one group of 16 lanes takes the whole task (every tile in group 0), no butterfly */ \
        const int G = fd->params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_GROUP_TASKS ? 1 : W / TD;       \
        REAL acc[MAX_WARP], xs[TD];                                                                          \
        for (int l = 0; l < MAX_WARP; l++) acc[l] = 0;                                                       \
        if ((fd->params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_DEFERRED_INLINE) &&                      \
            (w == 0 || rec[SPMVPORT_TILE_TASK_ROW - SPMVPORT_TILE_TASK_FIELDS] != tr))                       \
            deferred_##SUFFIX(fd, acc, x, r0, rowlen);                                                       \
        for (int32_t t = first; t < last; t++) {                                                             \
            const int64_t c0 = (int64_t)tcol[t] * TD;                                                        \
            const int collen = fd->n - c0 < TD ? (int)(fd->n - c0) : TD;                                     \
            for (int c = 0; c < collen; c++) xs[c] = x[c0 + c]; /* the tile's slice of x */                  \
            REAL *group = acc + ((t - first) % G) * TD; /* group g takes tiles g, g + G, ... */              \
            tile_##SUFFIX(group, tfmt[t], idx + off[2 * t + 1], val + off[2 * t], off[2 * t + 2] - off[2 * t], \
                          rowlen, collen, xs);                                                               \
        }                                                                                                    \
        for (int sh = TD; G > 1 && sh < W; sh *= 2) { /* butterfly: every lane gets acc[l] + acc[l ^ sh] */ \
            REAL next[MAX_WARP];                                                                             \
            for (int l = 0; l < W; l++) next[l] = acc[l] + acc[l ^ sh];                                      \
            memcpy(acc, next, sizeof(REAL) * (size_t)W);                                                     \
        }                                                                                                    \
        memcpy(sum, acc, sizeof(REAL) * TD);                                                                 \
    }                                                                                                        \
                                                                                                             \
    /* One warp task's row writes: its carry slot when the tile row is split, else y. */                    \
    static void task_##SUFFIX(const spmvport_format_data *fd, int64_t w, REAL alpha, const REAL *x, REAL beta, \
                              REAL *y)                                                                       \
    {                                                                                                        \
        const int32_t *rec = (const int32_t *)fd->arrays[SPMVPORT_TILE_A_TASK].data + SPMVPORT_TILE_TASK_FIELDS * w; \
        const int32_t slot = rec[SPMVPORT_TILE_TASK_CARRY];                                                  \
        const int64_t r0 = (int64_t)rec[SPMVPORT_TILE_TASK_ROW] * TD;                                        \
        const int rowlen = fd->m - r0 < TD ? (int)(fd->m - r0) : TD;                                         \
        REAL *carry = fd->arrays[SPMVPORT_TILE_A_CARRY].data, sum[TD];                                       \
        task_sum_##SUFFIX(fd, w, x, sum);                                                                    \
        for (int r = 0; r < rowlen; r++) {                                                                   \
            if (slot >= 0) carry[(int64_t)slot * TD + r] = sum[r];                                           \
            else y[r0 + r] = store_##SUFFIX(alpha, sum[r], beta, y + r0 + r);                                \
        }                                                                                                    \
    }                                                                                                        \
                                                                                                             \
    /* Block tasks (BLOCK_TASKS2 / 4 / 8): tile row tr's bk tasks tr*bk .. tr*bk + bk - 1, their sums added  \
     * in task order by the row's first warp (0 + s0 + s1 + ..., the kernel's shared-memory sum) */          \
    static void block_row_##SUFFIX(const spmvport_format_data *fd, int64_t tr, int bk, REAL alpha, const REAL *x, \
                                   REAL beta, REAL *y)                                                       \
    {                                                                                                        \
        const int64_t r0 = tr * TD;                                                                          \
        const int rowlen = fd->m - r0 < TD ? (int)(fd->m - r0) : TD;                                         \
        REAL part[8][TD]; /* bk <= 8 (SPMVPORT_TILE_BLOCK_TASKS_MAX_THREADS / 32) */                         \
        for (int j = 0; j < bk; j++) task_sum_##SUFFIX(fd, tr * bk + j, x, part[j]);                         \
        for (int r = 0; r < rowlen; r++) {                                                                   \
            REAL sum = 0;                                                                                    \
            for (int j = 0; j < bk; j++) sum += part[j][r];                                                  \
            y[r0 + r] = store_##SUFFIX(alpha, sum, beta, y + r0 + r);                                        \
        }                                                                                                    \
    }                                                                                                        \
                                                                                                             \
    static void run_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta, REAL *y)   \
    {                                                                                                        \
        const int64_t tasks = fd->params[SPMVPORT_TILE_P_TASKS];                                             \
        const int bk = spmvport_tile_block_tasks(fd->params[SPMVPORT_TILE_P_FLAGS]);                         \
        if (bk > 1) {                                                                                        \
            _Pragma("omp parallel for schedule(dynamic, 16)")                                                \
            for (int64_t tr = 0; tr < tasks / bk; tr++) block_row_##SUFFIX(fd, tr, bk, alpha, x, beta, y);   \
            return; /* no split rows; a deferred part runs inline (or below, by run_deferred) */             \
        }                                                                                                    \
        _Pragma("omp parallel for schedule(dynamic, 16)")                                                    \
        for (int64_t w = 0; w < tasks; w++) task_##SUFFIX(fd, w, alpha, x, beta, y);                         \
        /* fix-up of split tile rows: carries of each row added in task order */                            \
        const int32_t *split = fd->arrays[SPMVPORT_TILE_A_SPLIT].data;                                       \
        const REAL *carry = fd->arrays[SPMVPORT_TILE_A_CARRY].data;                                          \
        const int64_t splits = fd->params[SPMVPORT_TILE_P_SPLITS];                                           \
        _Pragma("omp parallel for schedule(static)")                                                         \
        for (int64_t s = 0; s < splits; s++) {                                                               \
            const int32_t *rec = split + SPMVPORT_TILE_SPLIT_FIELDS * s;                                     \
            const int64_t r0 = (int64_t)rec[SPMVPORT_TILE_SPLIT_ROW] * TD;                                   \
            const int32_t c0 = rec[SPMVPORT_TILE_SPLIT_CARRY];                                               \
            const int32_t c1 = rec[SPMVPORT_TILE_SPLIT_FIELDS + SPMVPORT_TILE_SPLIT_CARRY];                  \
            const int rowlen = fd->m - r0 < TD ? (int)(fd->m - r0) : TD;                                     \
            for (int r = 0; r < rowlen; r++) {                                                               \
                REAL sum = 0;                                                                                \
                for (int32_t c = c0; c < c1; c++) sum += carry[(int64_t)c * TD + r];                         \
                y[r0 + r] = store_##SUFFIX(alpha, sum, beta, y + r0 + r);                                    \
            }                                                                                                \
        }                                                                                                    \
    }

DEFINE_TILE_EXECUTOR(float, f32)
DEFINE_TILE_EXECUTOR(double, f64)

/* The deferred part is csr_lb's data under other array slots: run csr_lb's own traversal on a view of it,
 * adding to the y the tiled part wrote (beta = 1). */
static void run_deferred(const spmvport_format_data *fd, double alpha, const void *x, void *y)
{
    spmvport_format_data view;
    memset(&view, 0, sizeof view);
    view.format = SPMV_FORMAT_CSR_LB;
    view.precision = fd->precision;
    view.m = fd->m;
    view.n = fd->n;
    view.nnz = (int32_t)fd->params[SPMVPORT_TILE_P_DEF_NNZ];
    view.warp_size = fd->warp_size;
    view.narrays = SPMVPORT_CSR_LB_SPLIT + SPMVPORT_LB_NARRAYS;
    view.arrays[SPMVPORT_CSR_ROW_PTR] = fd->arrays[SPMVPORT_TILE_A_DEF_PTR];
    view.arrays[SPMVPORT_CSR_COL_IDX] = fd->arrays[SPMVPORT_TILE_A_DEF_COL];
    view.arrays[SPMVPORT_CSR_VALUES] = fd->arrays[SPMVPORT_TILE_A_DEF_VAL];
    for (int k = 0; k < SPMVPORT_LB_NARRAYS; k++)
        view.arrays[SPMVPORT_CSR_LB_SPLIT + k] = fd->arrays[SPMVPORT_TILE_A_DEF_SPLIT + k];
    view.params[SPMVPORT_P_NNZ_PER_WARP] = fd->params[SPMVPORT_TILE_P_DEF_CHUNK];
    view.params[SPMVPORT_P_NWARPS] = fd->params[SPMVPORT_TILE_P_DEF_WARPS];
    view.params[SPMVPORT_P_LB_EMPTY] = fd->params[SPMVPORT_TILE_P_DEF_EMPTY];
    spmvport_cpu_csr_lb(&view, alpha, x, 1.0, y);
}

void spmvport_cpu_tile(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y)
{
    if (fd->precision == SPMV_F32) run_f32(fd, (float)alpha, x, (float)beta, y);
    else run_f64(fd, alpha, x, beta, y);
    const int inline_part = (fd->params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_DEFERRED_INLINE) != 0;
    if (fd->params[SPMVPORT_TILE_P_DEF_NNZ] > 0 && !inline_part) run_deferred(fd, alpha, x, y);
}
