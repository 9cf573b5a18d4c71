/*
 * amf_csr_kernels.h -- the kernels of format amf_csr (adaptive multi-row folding of CSR), written once for CUDA
 * and HIP, every warp size W and precision T. The layout is in ../format_amf_csr.h; the CPU executor
 * (src/cpu_ref/amf_csr_executor.c) walks the arrays the same way:
 *
 *   amf_csr_kernel     one launch, two kinds of blocks (the kind is uniform over a block):
 *     blocks [0, pieces)   one long-row piece each: thread t takes entries t, t + B, ... of the piece; a
 *                          shuffle-down tree per warp (offsets W/2 .. 1); thread 0 adds the warp sums in warp
 *                          order and writes y (a one-piece row) or long_part[piece];
 *     the other blocks     B / W warps, one sub-block each: with L = 2^sub_lanes lanes per fold the warp runs
 *                          G = W / L folds side by side, step by step over the sub-block's units; lane l of a
 *                          group takes entries l, l + L, ... of its fold and adds each product into the
 *                          accumulator of the entry's local row (four registers); then per local row j <
 *                          fold_max a shuffle-down tree over the group (offsets L/2 .. 1), and the group's lane 0
 *                          writes row j of its fold.
 *   amf_csr_fixup_kernel one thread per long row of several pieces: adds its partials in piece order, writes y.
 *
 * No atomics, no counters (nothing to reset between calls), no dynamic shared memory, no implicit lockstep: the
 * warp reductions are shuffles, the block's is a shared array behind a block barrier. With beta == 0, y is never
 * read (it may hold NaN). Everything has internal linkage (anonymous namespace).
 */
#ifndef SPMVPORT_DEVICE_AMF_CSR_KERNELS_H
#define SPMVPORT_DEVICE_AMF_CSR_KERNELS_H

#include "format_amf_csr.h" /* src/common, on the include path as backend.h is */
#include "backend.h"
#include "port.h"

namespace {

constexpr int amf_block = AMF_BLOCK; /* threads per block of both kernels: a multiple of every W */

template <typename T>
PORT_DEVICE void amf_store(T *__restrict__ y, int r, T alpha, T sum, T beta)
{
    y[r] = beta == T(0) ? alpha * sum : alpha * sum + beta * y[r];
}

/* Column of entry k (packed: col << 2 | local row). */
template <bool PACKED>
PORT_DEVICE int amf_col(const unsigned *__restrict__ cols, long long k)
{
    const unsigned c = port_ldg(cols + k);
    return PACKED ? (int)(c >> 2) : (int)c;
}

/* ---- long rows: one block per piece --------------------------------------------------------------------------- */
template <int W, typename T, bool PACKED>
PORT_DEVICE void amf_long_piece(int q, int piece_len, const int *__restrict__ fold_row,
                                const int *__restrict__ fold_ptr, const unsigned *__restrict__ cols,
                                const T *__restrict__ val, const int *__restrict__ long_unit,
                                const int *__restrict__ long_piece, const int *__restrict__ piece_owner,
                                T *__restrict__ long_part, T *warp_sum, const T *__restrict__ x,
                                T *__restrict__ y, T alpha, T beta)
{
    const int tid = (int)port_thread_idx();
    const int i = port_ldg(piece_owner + q), u = port_ldg(long_unit + i);
    const int first = port_ldg(long_piece + i), count = port_ldg(long_piece + i + 1) - first;
    const long long kb = port_ldg(fold_ptr + u) + (long long)(q - first) * piece_len;
    const long long row_end = port_ldg(fold_ptr + u + 1);
    const long long ke = kb + piece_len < row_end ? kb + piece_len : row_end;
    T sum = T(0);
    for (long long k = kb + tid; k < ke; k += amf_block)
        sum += port_ldg(val + k) * port_ldg(x + amf_col<PACKED>(cols, k));
    for (int off = W >> 1; off > 0; off >>= 1) sum += port_shfl_down<W>(sum, off);
    if (port_lane<W>() == 0) warp_sum[tid / W] = sum;
    port_block_sync();
    if (tid != 0) return;
    T s = T(0);
    for (int w = 0; w < amf_block / W; w++) s += warp_sum[w];
    if (count == 1) amf_store(y, port_ldg(fold_row + u), alpha, s, beta);
    else long_part[q] = s;
}

/* ---- folds: one warp per sub-block ---------------------------------------------------------------------------- */
template <int W, typename T, bool PACKED>
PORT_DEVICE void amf_sub_block(int s, int fold_max, const int *__restrict__ fold_row, const int *__restrict__ fold_ptr,
                               const unsigned *__restrict__ cols, const unsigned char *__restrict__ local,
                               const T *__restrict__ val, const int *__restrict__ sub_unit,
                               const unsigned char *__restrict__ sub_lanes, const T *__restrict__ x,
                               T *__restrict__ y, T alpha, T beta)
{
    const int lane = port_lane<W>();
    const int lg = port_ldg(sub_lanes + s), lanes = 1 << lg, side = W >> lg;
    const int g = lane >> lg, l = lane & (lanes - 1);
    const int ub = port_ldg(sub_unit + 2 * s), ue = port_ldg(sub_unit + 2 * s + 1);
    for (int base = ub; base < ue; base += side) { /* warp-uniform: every lane runs every step */
        const int u = base + g;
        const bool active = u < ue;
        T a0 = T(0), a1 = T(0), a2 = T(0), a3 = T(0); /* one accumulator per local row */
        int r0 = 0, rows = 0;
        if (active) {
            r0 = port_ldg(fold_row + u);
            rows = port_ldg(fold_row + u + 1) - r0;
            const long long e = port_ldg(fold_ptr + u + 1);
            for (long long k = port_ldg(fold_ptr + u) + l; k < e; k += lanes) {
                const unsigned c = port_ldg(cols + k);
                const int col = PACKED ? (int)(c >> 2) : (int)c;
                const int lr = PACKED ? (int)(c & 3u) : (int)port_ldg(local + k);
                const T p = port_ldg(val + k) * port_ldg(x + col);
                if (lr == 0) a0 += p;
                else if (lr == 1) a1 += p;
                else if (lr == 2) a2 += p;
                else a3 += p;
            }
        }
        for (int j = 0; j < fold_max; j++) { /* fold_max is uniform: the shuffles see the whole warp */
            T v = j == 0 ? a0 : j == 1 ? a1 : j == 2 ? a2 : a3;
            for (int off = lanes >> 1; off > 0; off >>= 1) v += port_shfl_down<W>(v, off);
            if (active && l == 0 && j < rows) amf_store(y, r0 + j, alpha, v, beta);
        }
    }
}

template <int W, typename T, bool PACKED>
PORT_KERNEL void PORT_LAUNCH_BOUNDS(amf_block)
    amf_csr_kernel(int pieces, int subs, int piece_len, int fold_max, const int *__restrict__ fold_row,
                   const int *__restrict__ fold_ptr, const unsigned *__restrict__ cols,
                   const unsigned char *__restrict__ local, const T *__restrict__ val,
                   const int *__restrict__ sub_unit, const unsigned char *__restrict__ sub_lanes,
                   const int *__restrict__ long_unit, const int *__restrict__ long_piece,
                   const int *__restrict__ piece_owner, T *__restrict__ long_part, const T *__restrict__ x,
                   T *__restrict__ y, T alpha, T beta)
{
    if (!port_warp_matches<W>()) return;
    PORT_SHARED T warp_sum[amf_block / W];
    const int b = (int)port_block_idx();
    if (b < pieces) { /* block-uniform branch: the block barrier inside is reached by every thread */
        amf_long_piece<W, T, PACKED>(b, piece_len, fold_row, fold_ptr, cols, val, long_unit, long_piece, piece_owner,
                                     long_part, warp_sum, x, y, alpha, beta);
        return;
    }
    const long long s = (long long)(b - pieces) * (amf_block / W) + port_thread_idx() / W;
    if (s >= subs) return; /* whole warps only */
    amf_sub_block<W, T, PACKED>((int)s, fold_max, fold_row, fold_ptr, cols, local, val, sub_unit, sub_lanes, x, y,
                                alpha, beta);
}

/* Long rows of several pieces: the partials in piece order (deterministic, no atomics). */
template <typename T>
PORT_KERNEL void PORT_LAUNCH_BOUNDS(amf_block)
    amf_csr_fixup_kernel(int nlong, const int *__restrict__ fold_row, const int *__restrict__ long_unit,
                         const int *__restrict__ long_piece, const T *__restrict__ long_part, T *__restrict__ y,
                         T alpha, T beta)
{
    const long long i = (long long)port_block_idx() * port_block_dim() + port_thread_idx();
    if (i >= nlong) return;
    const int first = long_piece[i], end = long_piece[i + 1];
    if (end - first < 2) return; /* written by its block */
    T s = T(0);
    for (int q = first; q < end; q++) s += long_part[q];
    amf_store(y, fold_row[long_unit[i]], alpha, s, beta);
}

/* ---- host side ------------------------------------------------------------------------------------------------ */

/* What the kernels rely on, checked at upload: NULL when fd is a layout they can run, else the reason. */
inline const char *amf_csr_layout_problem(const spmvport_format_data *fd, int warp)
{
    const int64_t *prm = fd->params;
    const size_t vs = fd->precision == SPMV_F32 ? sizeof(float) : sizeof(double);
    const size_t nnz = (size_t)fd->nnz;
    if (fd->narrays != AMF_A_COUNT) return "amf_csr arrays missing";
    if (fd->warp_size != warp) return "layout built for another warp size";
    if (prm[AMF_P_BLOCK] != amf_block || amf_block % warp != 0) return "block size mismatch";
    if (prm[AMF_P_GRID] < 0 || prm[AMF_P_GRID] > INT32_MAX || prm[AMF_P_PIECE] <= 0 || prm[AMF_P_PIECE] > INT32_MAX)
        return "grid or piece length out of range";
    if (prm[AMF_P_FOLD_MAX] < 0 || prm[AMF_P_FOLD_MAX] > AMF_MAX_FOLD) return "fold_max out of range";
    if (fd->arrays[AMF_A_FOLD_ROW].bytes != ((size_t)prm[AMF_P_UNITS] + 1) * sizeof(int32_t) ||
        fd->arrays[AMF_A_FOLD_PTR].bytes != ((size_t)prm[AMF_P_UNITS] + 1) * sizeof(int32_t) ||
        fd->arrays[AMF_A_COLS].bytes != nnz * sizeof(uint32_t) || fd->arrays[AMF_A_VALUES].bytes != nnz * vs ||
        fd->arrays[AMF_A_LOCAL_ROW].bytes != (prm[AMF_P_PACKED] ? 0 : nnz) ||
        fd->arrays[AMF_A_SUB_UNIT].bytes != 2 * (size_t)prm[AMF_P_SUB_BLOCKS] * sizeof(int32_t) ||
        fd->arrays[AMF_A_SUB_LANES].bytes != (size_t)prm[AMF_P_SUB_BLOCKS] ||
        fd->arrays[AMF_A_LONG_UNIT].bytes != (size_t)prm[AMF_P_LONG_ROWS] * sizeof(int32_t) ||
        fd->arrays[AMF_A_LONG_PIECE].bytes != ((size_t)prm[AMF_P_LONG_ROWS] + 1) * sizeof(int32_t) ||
        fd->arrays[AMF_A_PIECE_OWNER].bytes != (size_t)prm[AMF_P_PIECES] * sizeof(int32_t) ||
        fd->arrays[AMF_A_LONG_PART].bytes != (size_t)prm[AMF_P_PIECES] * vs)
        return "amf_csr array sizes inconsistent with its parameters";
    return NULL;
}

/* y = alpha*A*x + beta*y on stream s. Plan: anything with `fd` (the format data) and `arrays` (device copies of
 * fd's arrays, in fd's order; NULL for empty ones), e.g. the backend's gpu_plan. Launches the main kernel (grid
 * AMF_P_GRID blocks of amf_block threads, no dynamic shared memory) and, when a long row has several pieces, the
 * fix-up kernel. The caller checks the launch error. */
template <int W, typename T, typename Plan>
void launch_amf_csr(const Plan *p, double alpha_d, const void *xv, double beta_d, void *yv, port_stream_t s)
{
    const spmvport_format_data *fd = p->fd;
    const int64_t *prm = fd->params;
    const T alpha = (T)alpha_d, beta = (T)beta_d;
    const int pieces = (int)prm[AMF_P_PIECES], subs = (int)prm[AMF_P_SUB_BLOCKS];
    const int piece_len = (int)prm[AMF_P_PIECE], fold_max = (int)prm[AMF_P_FOLD_MAX];
    const int nlong = (int)prm[AMF_P_LONG_ROWS];
    const unsigned grid = (unsigned)prm[AMF_P_GRID];
    const int *fold_row = (const int *)p->arrays[AMF_A_FOLD_ROW];
    const int *fold_ptr = (const int *)p->arrays[AMF_A_FOLD_PTR];
    const unsigned *cols = (const unsigned *)p->arrays[AMF_A_COLS];
    const unsigned char *local = (const unsigned char *)p->arrays[AMF_A_LOCAL_ROW];
    const T *val = (const T *)p->arrays[AMF_A_VALUES];
    const int *sub_unit = (const int *)p->arrays[AMF_A_SUB_UNIT];
    const unsigned char *sub_lanes = (const unsigned char *)p->arrays[AMF_A_SUB_LANES];
    const int *long_unit = (const int *)p->arrays[AMF_A_LONG_UNIT];
    const int *long_piece = (const int *)p->arrays[AMF_A_LONG_PIECE];
    const int *piece_owner = (const int *)p->arrays[AMF_A_PIECE_OWNER];
    T *long_part = (T *)p->arrays[AMF_A_LONG_PART];
    const T *x = (const T *)xv;
    T *y = (T *)yv;
    if (grid == 0) return; /* m == 0 */
    if (prm[AMF_P_PACKED])
        PORT_LAUNCH(grid, amf_block, 0, s, amf_csr_kernel<W, T, true>)
        (pieces, subs, piece_len, fold_max, fold_row, fold_ptr, cols, local, val, sub_unit, sub_lanes, long_unit,
         long_piece, piece_owner, long_part, x, y, alpha, beta);
    else
        PORT_LAUNCH(grid, amf_block, 0, s, amf_csr_kernel<W, T, false>)
        (pieces, subs, piece_len, fold_max, fold_row, fold_ptr, cols, local, val, sub_unit, sub_lanes, long_unit,
         long_piece, piece_owner, long_part, x, y, alpha, beta);
    if (prm[AMF_P_MULTI] > 0)
        PORT_LAUNCH((unsigned)((nlong + amf_block - 1) / amf_block), amf_block, 0, s, amf_csr_fixup_kernel<T>)
        (nlong, fold_row, long_unit, long_piece, long_part, y, alpha, beta);
}

} /* namespace */

#endif /* SPMVPORT_DEVICE_AMF_CSR_KERNELS_H */
