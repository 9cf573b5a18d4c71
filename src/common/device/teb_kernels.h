/*
 * teb_kernels.h -- the kernel of format teb (threshold-exchange-order blocks), written once for CUDA and HIP, every
 * warp size W and precision T. The layout is in ../format_teb.h; the CPU executor (src/cpu_ref/teb_executor.c)
 * walks the arrays the same way. One thread block of teb_block threads per TEB block b, whose rows
 * [blo_idx[b], blo_idx[b+1]) (longest first) are split by blo_tier into four runs, done one after the other:
 *
 *   block rows  the whole block on each row: thread t takes entries t, t + B, ...; a shuffle-down tree per warp
 *               (offsets W/2 .. 1); warp 0 folds the B/W warp sums (padded with zeros to W lanes) with the same
 *               tree and writes the row. A block barrier before and after the shared warp sums.
 *   warp rows   warp w takes rows warp + w, warp + w + B/W, ...: lane l takes entries l, l + W, ...; tree over W.
 *   group rows  G = 2^lanes_log2 lanes per row (G = 1: the paper's thread per row): group g = t / G takes rows
 *               group + g, group + g + B/G, ...; lane j takes entries j, j + G, ...; tree over G (offsets G/2 .. 1).
 *               Every lane runs every step of the loop (block-uniform bounds), so the shuffles see whole warps.
 *   empty rows  thread t takes rows empty + t, empty + t + B, ...: y = beta*y (0 when beta == 0).
 *
 * Each row is written once, to y[row_orig[r]] (A's order). No atomics, no counters (nothing to reset between
 * calls), no dynamic shared memory, no implicit warp lockstep. With beta == 0, y is never read. Everything has
 * internal linkage (anonymous namespace).
 */
#ifndef SPMVPORT_DEVICE_TEB_KERNELS_H
#define SPMVPORT_DEVICE_TEB_KERNELS_H

#include "../format_teb.h"
#include "backend.h"
#include "port.h"

namespace {

constexpr int teb_block = SPMVPORT_TEB_THREADS; /* threads per block: a multiple of every W, at most W * W */

template <typename T>
PORT_DEVICE void teb_store(T *__restrict__ y, int r, T alpha, T sum, T beta)
{
    y[r] = beta == T(0) ? alpha * sum : alpha * sum + beta * y[r];
}

/* Shuffle-down tree over aligned groups of `lanes` lanes (a power of two <= W): each group's first lane ends with
 * the group's sum. Every lane of the warp must call it. */
template <int W, typename T>
PORT_DEVICE T teb_tree(T v, int lanes)
{
    for (int off = lanes >> 1; off > 0; off >>= 1) v += port_shfl_down<W>(v, off);
    return v;
}

/* Entries first, first + step, ... of the row ending at end: this lane's partial sum. Unsigned indices: a row may
 * end near INT32_MAX and the step must not overflow. */
template <typename T>
PORT_DEVICE T teb_partial(unsigned first, unsigned end, unsigned step, const int *__restrict__ col,
                          const T *__restrict__ val, const T *__restrict__ x)
{
    T sum = T(0);
    for (unsigned k = first; k < end; k += step) sum += port_ldg(val + k) * port_ldg(x + port_ldg(col + k));
    return sum;
}

template <int W, typename T>
PORT_KERNEL void PORT_LAUNCH_BOUNDS(teb_block)
    teb_kernel(const int *__restrict__ ptr, const int *__restrict__ col, const T *__restrict__ val,
               const int *__restrict__ blo, const int *__restrict__ orig, const int *__restrict__ tier,
               const T *__restrict__ x, T *__restrict__ y, T alpha, T beta)
{
    if (!port_warp_matches<W>()) return;
    constexpr int B = teb_block, NW = teb_block / W;
    static_assert(B % W == 0 && NW <= W, "teb: the block must be whole warps, and warp 0 must fold their sums");
    PORT_SHARED T warp_sum[NW];
    const int b = (int)port_block_idx(), t = (int)port_thread_idx(), lane = port_lane<W>(), wid = t / W;
    const int *tb = tier + (long long)b * SPMVPORT_TEB_TIER_FIELDS;
    const unsigned r0 = (unsigned)port_ldg(blo + b), r1 = (unsigned)port_ldg(blo + b + 1);
    const unsigned wb = (unsigned)port_ldg(tb + SPMVPORT_TEB_TIER_WARP);
    const unsigned gb = (unsigned)port_ldg(tb + SPMVPORT_TEB_TIER_GROUP);
    const unsigned eb = (unsigned)port_ldg(tb + SPMVPORT_TEB_TIER_EMPTY);
    const int lg = port_ldg(tb + SPMVPORT_TEB_TIER_LANES_LOG2);

    /* block rows: the loop bounds are block-uniform, so every thread reaches both barriers */
    for (unsigned r = r0; r < wb; r++) {
        T v = teb_partial<T>((unsigned)port_ldg(ptr + r) + (unsigned)t, (unsigned)port_ldg(ptr + r + 1), B, col,
                             val, x);
        v = teb_tree<W>(v, W);
        if (lane == 0) warp_sum[wid] = v;
        port_block_sync();
        if (wid == 0) {
            T s = lane < NW ? warp_sum[lane] : T(0);
            s = teb_tree<W>(s, W);
            if (lane == 0) teb_store(y, port_ldg(orig + r), alpha, s, beta);
        }
        port_block_sync(); /* warp 0 has read the sums before the next row overwrites them */
    }

    /* warp rows: r depends on the warp only, so the branch is warp-uniform */
    for (unsigned base = wb; base < gb; base += NW) {
        const unsigned r = base + (unsigned)wid;
        if (r < gb) {
            T v = teb_partial<T>((unsigned)port_ldg(ptr + r) + (unsigned)lane, (unsigned)port_ldg(ptr + r + 1), W,
                                 col, val, x);
            v = teb_tree<W>(v, W);
            if (lane == 0) teb_store(y, port_ldg(orig + r), alpha, v, beta);
        }
    }

    /* group rows: G lanes per row; lanes past the block's last row add nothing but still shuffle */
    const int G = 1 << lg, j = t & (G - 1);
    const unsigned groups = (unsigned)(B >> lg), g = (unsigned)(t >> lg);
    for (unsigned base = gb; base < eb; base += groups) {
        const unsigned r = base + g;
        T v = T(0);
        if (r < eb)
            v = teb_partial<T>((unsigned)port_ldg(ptr + r) + (unsigned)j, (unsigned)port_ldg(ptr + r + 1),
                               (unsigned)G, col, val, x);
        v = teb_tree<W>(v, G);
        if (j == 0 && r < eb) teb_store(y, port_ldg(orig + r), alpha, v, beta);
    }

    /* empty rows */
    for (unsigned r = eb + (unsigned)t; r < r1; r += B) teb_store(y, port_ldg(orig + r), alpha, T(0), beta);
}

/* ---- host side ------------------------------------------------------------------------------------------------------ */

/* What the kernel relies on, checked at upload: NULL when fd is a layout it can run on a device of this warp size,
 * else the reason. */
inline const char *teb_layout_problem(const spmvport_format_data *fd, int warp)
{
    const int64_t *prm = fd->params;
    const size_t vs = fd->precision == SPMV_F32 ? sizeof(float) : sizeof(double);
    const size_t nnz = (size_t)fd->nnz, m = (size_t)fd->m, nb = (size_t)prm[SPMVPORT_TEB_P_BLOCKS];
    if (fd->narrays != SPMVPORT_TEB_NARRAYS) return "teb: wrong number of arrays";
    if (fd->warp_size != warp) return "teb: layout built for another warp size";
    if (prm[SPMVPORT_TEB_P_THREADS] != teb_block || teb_block % warp != 0 || teb_block / warp > warp)
        return "teb: threads per block do not match the kernel's";
    if (prm[SPMVPORT_TEB_P_BLOCKS] < 0 || prm[SPMVPORT_TEB_P_BLOCKS] > INT32_MAX ||
        (fd->m > 0 && prm[SPMVPORT_TEB_P_BLOCKS] == 0))
        return "teb: block count out of range";
    if (fd->arrays[SPMVPORT_TEB_VALUES].bytes != nnz * vs ||
        fd->arrays[SPMVPORT_TEB_COL_IDX].bytes != nnz * sizeof(int32_t) ||
        fd->arrays[SPMVPORT_TEB_ROW_PTR].bytes != (m + 1) * sizeof(int32_t) ||
        fd->arrays[SPMVPORT_TEB_BLO_IDX].bytes != (nb + 1) * sizeof(int32_t) ||
        fd->arrays[SPMVPORT_TEB_ROW_ORIG].bytes != m * sizeof(int32_t) ||
        fd->arrays[SPMVPORT_TEB_BLO_TIER].bytes != nb * SPMVPORT_TEB_TIER_FIELDS * sizeof(int32_t))
        return "teb: array sizes inconsistent with the parameters";
    return NULL;
}

/* y = alpha*A*x + beta*y on stream s. Plan: anything with `fd` (the format data) and `arrays` (device copies of
 * fd's arrays, in fd's order; NULL for empty ones), e.g. the backend's gpu_plan. One launch: grid
 * SPMVPORT_TEB_P_BLOCKS blocks of teb_block threads, no dynamic shared memory (teb_block / W values of static
 * shared memory). Nothing to reset between calls. The caller checks the launch error. */
template <int W, typename T, typename Plan>
void launch_teb(const Plan *p, double alpha_d, const void *xv, double beta_d, void *yv, port_stream_t s)
{
    const spmvport_format_data *fd = p->fd;
    const unsigned grid = (unsigned)fd->params[SPMVPORT_TEB_P_BLOCKS];
    if (grid == 0) return; /* m == 0 */
    void *const *d = p->arrays;
    PORT_LAUNCH(grid, teb_block, 0, s, teb_kernel<W, T>)
    ((const int *)d[SPMVPORT_TEB_ROW_PTR], (const int *)d[SPMVPORT_TEB_COL_IDX], (const T *)d[SPMVPORT_TEB_VALUES],
     (const int *)d[SPMVPORT_TEB_BLO_IDX], (const int *)d[SPMVPORT_TEB_ROW_ORIG],
     (const int *)d[SPMVPORT_TEB_BLO_TIER], (const T *)xv, (T *)yv, (T)alpha_d, (T)beta_d);
}

} /* namespace */

#endif /* SPMVPORT_DEVICE_TEB_KERNELS_H */
