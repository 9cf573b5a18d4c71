/*
 * amf_csr_executor.c -- CPU executor of format amf_csr, walking the arrays as the GPU kernels do
 * (src/common/device/amf_csr_kernels.h), in the matrix's precision:
 *
 *   sub-blocks  one warp of W lanes each. With L = 2^sub_lanes[s] lanes per fold, the warp runs G = W / L folds
 *               side by side: step by step over the sub-block's units, group g takes unit base + g; lane l of
 *               the group takes the aligned windows of AMF_BATCH entries (w = k / AMF_BATCH) fb / B + l,
 *               fb / B + l + L, ... of the fold [fb, fe), clipped to the fold, in entry order, and adds each
 *               product into the accumulator of the entry's local row (up to 4 per lane). Then, for each local
 *               row j < FOLD_MAX, the tree over the group's lanes with offsets L/2 .. 1: the kernel's
 *               transposing butterfly adds exactly these pairs (the row's sum just ends in another lane), so
 *               the sums are the same, bit for bit. Uniform sub-blocks (AMF_P_UNIFORM = K > 0): sub-block s is
 *               units [s K, min(s K + K, units)) at 2^AMF_P_UNIFORM_LANES lanes, taken from s as the kernel does.
 *               The one-step kernel by entries (AMF_P_ONE_STEP = 2): lane l takes entries fb + l, fb + l + L, ...
 *               instead of windows; the one-step kernel by windows (AMF_P_ONE_STEP = 1) takes windows of
 *               AMF_P_STEP_WINDOW entries (8 or 4). Regular folds (AMF_P_REGULAR_ROWS > 0): a fold's rows and
 *               entries derived from its index, as the one-step kernel derives them (amf_fold_bounds). The 4-entry windows fuse each product into its add (one
 *               rounding instead of two): the same order, sums within the same bound.
 *   long rows   one block of B threads per piece: thread t takes entries t, t + B, ... of the piece; a
 *               shuffle-down tree per warp (offsets W/2 .. 1); thread 0 adds the warp sums in warp order and
 *               writes y (a one-piece row) or the piece's partial; a fix-up pass adds a row's partials in piece
 *               order and writes y.
 *   CSR-vector  (AMF_P_VECTOR_LANES = L > 0) csr_vector's executor on fold_ptr (the row pointer), cols (plain
 *   layout      columns) and values, at L lanes a row, as the GPU runs csr_vector's kernel on them; at L = 1 (the
 *               CSR-scalar mapping, csr_scalar's kernel on the GPU) that is csr_scalar's walk, entries in order.
 * With beta == 0, y is never read (it may hold NaN).
 */
#include <stdlib.h>

#include "../common/format_amf_csr.h"
#include "cpu_ref.h"

#define ARR(fd, slot, type) ((type)(fd)->arrays[(slot)].data)

/* Column and local row of entry k, packed (col << 2 | local row) or not. */
static inline int32_t amf_col(const uint32_t *cols, int packed, int64_t k)
{
    return packed ? (int32_t)(cols[k] >> 2) : (int32_t)cols[k];
}
static inline int amf_local(const uint32_t *cols, const uint8_t *local, int packed, int64_t k)
{
    return packed ? (int)(cols[k] & 3u) : (int)local[k];
}

#define DEFINE_AMF_EXECUTOR(REAL, SUFFIX)                                                                             \
    static inline void store_##SUFFIX(REAL *y, int32_t r, REAL alpha, REAL sum, REAL beta)                            \
    {                                                                                                                 \
        y[r] = beta == (REAL)0 ? alpha * sum : alpha * sum + beta * y[r];                                             \
    }                                                                                                                 \
                                                                                                                      \
    /* One step of one group: L lanes over unit u, per-row accumulators, one tree per local row. */                   \
    static void fold_##SUFFIX(const spmvport_format_data *fd, int32_t u, int lanes, const REAL *x, REAL *y,           \
                              REAL alpha, REAL beta)                                                                  \
    {                                                                                                                 \
        const int32_t *fold_row = ARR(fd, AMF_A_FOLD_ROW, const int32_t *);                                           \
        const int32_t *fold_ptr = ARR(fd, AMF_A_FOLD_PTR, const int32_t *);                                           \
        const uint32_t *cols = ARR(fd, AMF_A_COLS, const uint32_t *);                                                 \
        const uint8_t *local = ARR(fd, AMF_A_LOCAL_ROW, const uint8_t *);                                             \
        const REAL *val = ARR(fd, AMF_A_VALUES, const REAL *);                                                        \
        const int packed = (int)fd->params[AMF_P_PACKED], fold_max = (int)fd->params[AMF_P_FOLD_MAX];                 \
        const int by_entry = fd->params[AMF_P_ONE_STEP] == 2;                                                         \
        const int64_t B = fd->params[AMF_P_ONE_STEP] == 1 ? fd->params[AMF_P_STEP_WINDOW] : AMF_BATCH;              \
        int64_t r0, rows, fb, fe; /* regular folds: derived, as the one-step kernel does (the arrays not read) */   \
        amf_fold_bounds(fd->params, fold_row, fold_ptr, fd->m, fd->nnz, u, &r0, &rows, &fb, &fe);                     \
        REAL acc[64][AMF_MAX_FOLD];                                                                                   \
        for (int l = 0; l < lanes; l++) {                                                                             \
            for (int j = 0; j < AMF_MAX_FOLD; j++) acc[l][j] = 0;                                                     \
            if (by_entry) /* the lane's entries fb + l, + L, ... */                                                  \
                for (int64_t k = fb + l; k < fe; k += lanes)                                                          \
                    acc[l][amf_local(cols, local, packed, k)] += val[k] * x[amf_col(cols, packed, k)];                \
            /* the lane's aligned windows of B entries: fb / B + l, + L, ..., clipped to the fold */                 \
            for (int64_t w = fb / B + l; !by_entry && w * B < fe; w += lanes) {                                       \
                const int64_t kb = w * B > fb ? w * B : fb;                                                           \
                const int64_t ke = (w + 1) * B < fe ? (w + 1) * B : fe;                                               \
                for (int64_t k = kb; k < ke; k++)                                                                     \
                    acc[l][amf_local(cols, local, packed, k)] += val[k] * x[amf_col(cols, packed, k)];                \
            }                                                                                                         \
        }                                                                                                             \
        for (int j = 0; j < fold_max; j++) {                                                                          \
            for (int off = lanes / 2; off > 0; off /= 2)                                                              \
                for (int l = 0; l < off; l++) acc[l][j] += acc[l + off][j];                                           \
            if (j < rows) store_##SUFFIX(y, (int32_t)(r0 + j), alpha, acc[0][j], beta);                              \
        }                                                                                                             \
    }                                                                                                                 \
                                                                                                                      \
    static void folds_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta, REAL *y)         \
    {                                                                                                                 \
        const int32_t *sub_unit = ARR(fd, AMF_A_SUB_UNIT, const int32_t *);                                           \
        const uint8_t *sub_lanes = ARR(fd, AMF_A_SUB_LANES, const uint8_t *);                                         \
        const int64_t subs = fd->params[AMF_P_SUB_BLOCKS], units = fd->params[AMF_P_UNITS];                           \
        const int64_t uni_k = fd->params[AMF_P_UNIFORM];                                                              \
        const int32_t *fold_row = ARR(fd, AMF_A_FOLD_ROW, const int32_t *);                                           \
        const int32_t *fold_ptr = ARR(fd, AMF_A_FOLD_PTR, const int32_t *);                                           \
        const int w = fd->warp_size;                                                                                  \
        _Pragma("omp parallel for schedule(dynamic, 64) if (subs > 512)")                                             \
        for (int64_t s = 0; s < subs; s++) {                                                                          \
            /* uniform sub-blocks: bounds and lanes from s, as the kernel takes them (the arrays are not read) */     \
            const int64_t ub = uni_k > 0 ? s * uni_k : sub_unit[2 * s];                                               \
            const int64_t ue = uni_k > 0 ? (ub + uni_k < units ? ub + uni_k : units) : sub_unit[2 * s + 1];           \
            const int lanes = 1 << (uni_k > 0 ? (int)fd->params[AMF_P_UNIFORM_LANES] : sub_lanes[s]);                 \
            const int side = w / lanes;                                                                               \
            for (int64_t base = ub; base < ue; base += side)                                                          \
                for (int g = 0; g < side && base + g < ue; g++) /* a long unit there: its pieces' */                  \
                    if (fd->params[AMF_P_LONG_ROWS] == 0 || !amf_unit_is_long(fold_row, fold_ptr, base + g))          \
                        fold_##SUFFIX(fd, (int32_t)(base + g), lanes, x, y, alpha, beta);                             \
        }                                                                                                             \
    }                                                                                                                 \
                                                                                                                      \
    static void long_rows_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta,              \
                                   REAL *y)                                                                           \
    {                                                                                                                 \
        const int32_t *fold_row = ARR(fd, AMF_A_FOLD_ROW, const int32_t *);                                           \
        const int32_t *fold_ptr = ARR(fd, AMF_A_FOLD_PTR, const int32_t *);                                           \
        const uint32_t *cols = ARR(fd, AMF_A_COLS, const uint32_t *);                                                 \
        const REAL *val = ARR(fd, AMF_A_VALUES, const REAL *);                                                        \
        const int32_t *long_unit = ARR(fd, AMF_A_LONG_UNIT, const int32_t *);                                         \
        const int32_t *long_piece = ARR(fd, AMF_A_LONG_PIECE, const int32_t *);                                       \
        const int32_t *owner = ARR(fd, AMF_A_PIECE_OWNER, const int32_t *);                                           \
        REAL *part = ARR(fd, AMF_A_LONG_PART, REAL *);                                                                \
        const int packed = (int)fd->params[AMF_P_PACKED], w = fd->warp_size;                                          \
        const int block = (int)fd->params[AMF_P_BLOCK];                                                               \
        const int64_t pieces = fd->params[AMF_P_PIECES], piece = fd->params[AMF_P_PIECE];                             \
        _Pragma("omp parallel for schedule(dynamic, 1) if (pieces > 4)")                                              \
        for (int64_t q = 0; q < pieces; q++) {                                                                        \
            REAL t_sum[AMF_BLOCK];                                                                                    \
            const int32_t i = owner[q], u = long_unit[i];                                                             \
            const int64_t kb = fold_ptr[u] + (q - long_piece[i]) * piece;                                             \
            const int64_t ke = kb + piece < fold_ptr[u + 1] ? kb + piece : fold_ptr[u + 1];                           \
            for (int t = 0; t < block; t++) {                                                                         \
                t_sum[t] = 0;                                                                                         \
                for (int64_t k = kb + t; k < ke; k += block) t_sum[t] += val[k] * x[amf_col(cols, packed, k)];        \
            }                                                                                                         \
            REAL s = 0;                                                                                               \
            for (int wb = 0; wb < block; wb += w) { /* each warp's tree, then the warp sums in order */               \
                for (int off = w / 2; off > 0; off /= 2)                                                              \
                    for (int l = 0; l < off; l++) t_sum[wb + l] += t_sum[wb + l + off];                               \
                s += t_sum[wb];                                                                                       \
            }                                                                                                         \
            if (long_piece[i + 1] - long_piece[i] == 1) store_##SUFFIX(y, fold_row[u], alpha, s, beta);               \
            else part[q] = s;                                                                                         \
        }                                                                                                             \
        /* fix-up: rows of several pieces add their partials in piece order */                                        \
        if (fd->params[AMF_P_MULTI] == 0) return;                                                                     \
        for (int64_t i = 0; i < fd->params[AMF_P_LONG_ROWS]; i++) {                                                   \
            if (long_piece[i + 1] - long_piece[i] < 2) continue;                                                      \
            REAL s = 0;                                                                                               \
            for (int32_t q = long_piece[i]; q < long_piece[i + 1]; q++) s += part[q];                                 \
            store_##SUFFIX(y, fold_row[long_unit[i]], alpha, s, beta);                                                \
        }                                                                                                             \
    }                                                                                                                 \
                                                                                                                      \
    static void amf_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta, REAL *y)           \
    {                                                                                                                 \
        folds_##SUFFIX(fd, alpha, x, beta, y);                                                                        \
        long_rows_##SUFFIX(fd, alpha, x, beta, y);                                                                    \
    }

DEFINE_AMF_EXECUTOR(float, f32)
DEFINE_AMF_EXECUTOR(double, f64)

void spmvport_cpu_amf_csr(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y)
{
    if (fd->params[AMF_P_VECTOR_LANES] > 0) { /* the CSR-vector layout: csr_vector's walk of the same arrays */
        spmvport_format_data view = *fd;
        view.arrays[SPMVPORT_CSR_ROW_PTR] = fd->arrays[AMF_A_FOLD_PTR];
        view.arrays[SPMVPORT_CSR_COL_IDX] = fd->arrays[AMF_A_COLS];
        view.arrays[SPMVPORT_CSR_VALUES] = fd->arrays[AMF_A_VALUES];
        view.params[SPMVPORT_P_LANES] = fd->params[AMF_P_VECTOR_LANES];
        spmvport_cpu_csr_vector(&view, alpha, x, beta, y);
    } else if (fd->precision == SPMV_F32) amf_f32(fd, (float)alpha, x, (float)beta, y);
    else amf_f64(fd, alpha, x, beta, y);
}
