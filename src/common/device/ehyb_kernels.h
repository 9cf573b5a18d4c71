/*
 * ehyb_kernels.h -- format ehyb's kernel, written once for CUDA and HIP, every warp size W and precision T.
 *
 * It walks the arrays of src/common/format_ehyb.h as src/cpu_ref/ehyb_executor.c does. One launch, one thread
 * block per part (SPMVPORT_EHYB_BLOCK_THREADS threads):
 *   1. the block stages its x segment in shared memory (gathered through col_perm unless the plan ordering is
 *      used), then its halo (x entries of other parts that its rows use often), then one zero, the target of
 *      every ELL padding slot;
 *   2. its warps take the part's ELL slices through a shared-memory counter (new each launch); lane l of slice
 *      s sums val[ptr[2s] + k*W + l] * xs[col[...]] for k < width, then the slice's near-ER block,
 *      er_val[ptr[2s+1] + k*W + l] * x[er_col[...]] (column -1: padding). A row without far ER entries is written
 *      at once; a row with far ER entries arrives with its partial sum (below). With a split G > 1 (small
 *      matrices: fewer slices than warps) G warps share a slice, each taking every G-th batch of B entries, and
 *      the partials meet in shared memory in warp order: a lane's dependent chain is G times shorter;
 *   3. every warp then takes far ER work items through the global counter sync[0]: a long-row chunk (lane-strided
 *      sum, shuffle-down tree W/2 .. 1, lane 0 arrives) or an ER slice (lane l sums its row's entries with
 *      stride W and arrives);
 *   4. the last warp to finish resets sync[0] and sync[1] (a finished-warp count) to zero, so the next call
 *      starts clean; the public EHYB code never reset its counter and skipped the ER work from the 2nd call on.
 * arrive(e, slot, v): partial[slot] = v, fence, ticket[e] += 1; the arrival that completes rank e's slot count
 * sums the slots in slot order (ELL partial first), resets the ticket and writes y. Which arrival comes last
 * varies; the sum does not: the result is deterministic, with no float atomics.
 * Latency: every loop loads B entries per lane (the plan's batch) before it uses any, the next slice's ell_ptr
 * entries and the current slice's row_perm / slice_er are requested ahead, and read-once arrays are streamed.
 * y = alpha*sum + beta*y, written through row_perm unless the plan ordering is used; with beta == 0, y is never
 * read. Execute allocates nothing: counters, tickets and partial sums are plan arrays. Everything has internal
 * linkage (anonymous namespace), so the CUDA and HIP modules can be linked into one program.
 */
#ifndef SPMVPORT_DEVICE_EHYB_KERNELS_H
#define SPMVPORT_DEVICE_EHYB_KERNELS_H

#include "port.h"
#include "backend.h"
#include "format_ehyb.h"

namespace {

constexpr int ehyb_block = SPMVPORT_EHYB_BLOCK_THREADS; /* a multiple of every W */
constexpr size_t ehyb_default_smem = 48 * 1024;         /* dynamic shared memory allowed without the opt-in */

template <typename T>
struct ehyb_args {
    const int *row_perm, *col_perm, *part, *ell_ptr;
    const unsigned long long *slice_er;
    const unsigned short *ell_col;
    const T *ell_val;
    const int *er_meta, *er_work, *er_col, *halo;
    const T *er_val;
    T *partial; /* written and read inside the launch: never through the read-only cache */
    int *sync;
    int chunks, er_slices, items, plan_ordering, split, seg_max;
    const T *x;
    T *y;
    T alpha, beta;
};

/* y[out] = alpha*sum + beta*y[out]; out is the row's place in y (row_perm[r] unless plan ordering). */
template <typename T>
PORT_DEVICE void ehyb_put(const ehyb_args<T> &a, int out, T sum)
{
    a.y[out] = a.beta == T(0) ? a.alpha * sum : a.alpha * sum + a.beta * a.y[out];
}

template <typename T>
PORT_DEVICE void ehyb_store(const ehyb_args<T> &a, int r, T sum)
{
    ehyb_put(a, a.plan_ordering ? r : port_ldg(a.row_perm + r), sum);
}

/* One partial sum of rank e lands in its slot; the last of the rank's arrivals adds them all and writes y. */
template <typename T>
PORT_DEVICE void ehyb_arrive(const ehyb_args<T> &a, int e, int slot, T v)
{
    const int base = port_ldg(a.er_meta + 2 * e + 1), count = port_ldg(a.er_meta + 2 * e + 3) - base;
    a.partial[slot] = v;
    port_threadfence(); /* the partial is visible before the ticket counts it */
    if (port_atomic_add(a.sync + 2 + e, 1) != count - 1) return;
    port_threadfence();
    const volatile T *p = a.partial; /* written by other multiprocessors: bypass L1 */
    T sum = p[base];
    for (int s = base + 1; s < base + count; s++) sum += p[s];
    a.sync[2 + e] = 0; /* every arrival of this call has counted: ready for the next call */
    ehyb_store(a, port_ldg(a.er_meta + 2 * e), sum);
}

/* B (the plan's batch, 4 or 8) = entries per lane loaded before any of them is used: a batch's loads are all in
 * flight together, and a width that is not a multiple of B is handled by predicated loads (no rolled remainder,
 * whose every entry would wait a full memory latency). The sums are the same whatever B. Under the two-blocks
 * register bound, B = 4 spills nothing; B = 8 spills 8 (f32) to 24 (f64) bytes but has twice the loads in flight. */

/* Adds entries k < count of one lane, entry k at q + k*W (er_col/er_val; column -1 = padding, skipped), in k
 * order, B at a time: columns and values of a batch, then its x reads, then the products. The batches taken
 * start at entry k0 and step by kstep (a multiple of B): all of them (0, B), or every G-th of a split slice. */
template <int W, typename T, int B>
PORT_DEVICE T ehyb_er_sum(const ehyb_args<T> &a, int q, int count, T sum, int k0 = 0, int kstep = B)
{
    for (int k = k0; k < count; k += kstep) {
        int j[B];
        T v[B], xv[B];
#pragma unroll
        for (int u = 0; u < B; u++) {
            j[u] = k + u < count ? port_ld_stream(a.er_col + q + (k + u) * W) : -1;
            v[u] = k + u < count ? port_ld_stream(a.er_val + q + (k + u) * W) : T(0);
        }
#pragma unroll
        for (int u = 0; u < B; u++) xv[u] = j[u] >= 0 ? port_ldg(a.x + j[u]) : T(0);
#pragma unroll
        for (int u = 0; u < B; u++)
            if (j[u] >= 0) sum += v[u] * xv[u];
    }
    return sum;
}

/* ER work item w < chunks: a chunk of a long row, summed by the whole warp: lane l adds entries first + l + kW in
 * k order, B at a time like every other loop (the former one-entry loop paid a round trip per entry; the chunk
 * of a small matrix's long row can be the last arrival of its row), then the shuffle-down tree. */
template <int W, typename T, int B>
PORT_DEVICE void ehyb_chunk(const ehyb_args<T> &a, int w, int lane)
{
    const int *c = a.er_work + 4 * w;
    const int e = port_ldg(c), piece = port_ldg(c + 1), q = port_ldg(c + 2) + lane, left = port_ldg(c + 3) - q;
    T sum = ehyb_er_sum<W, T, B>(a, q, left > 0 ? (left + W - 1) / W : 0, T(0));
    for (int off = W / 2; off > 0; off >>= 1) sum += port_shfl_down<W>(sum, off);
    if (lane == 0) ehyb_arrive(a, e, port_ldg(a.er_meta + 2 * e + 1) + 1 + piece, sum);
}

/* ER work item chunks + s: ER slice s, one row per lane (rank -1: no row), column-major with stride W. */
template <int W, typename T, int B>
PORT_DEVICE void ehyb_er_slice(const ehyb_args<T> &a, int s, int lane)
{
    const int *sptr = a.er_work + 4 * a.chunks;
    const int *lanes = sptr + a.er_slices + 1 + 2 * (s * W + lane);
    const int e = port_ldg(lanes), len = port_ldg(lanes + 1), off = port_ldg(sptr + s) + lane;
    const T sum = ehyb_er_sum<W, T, B>(a, off, len, T(0));
    if (e >= 0) ehyb_arrive(a, e, port_ldg(a.er_meta + 2 * e + 1) + 1, sum);
}

/* Lane's partial sum of one ELL slice (ELL slots at off, width; near-ER block at noff, nwidth): the load batches
 * i = g, g + G, ... of B entries over its ELL batches followed by its near-ER batches; G = 1 takes them all, in k
 * order. ELL columns are local to the staged x xs (padding: the zero at xs[staged length]). */
template <int W, typename T, int B, bool SPLIT>
PORT_DEVICE T ehyb_slice_part(const ehyb_args<T> &a, const T *xs, int off, int width, int noff, int nwidth, int pad,
                              int lane, int g, int G)
{
    if (!SPLIT) g = 0, G = 1; /* constants: the loops below are then the plain k-order loops */
    const unsigned short *col = a.ell_col + off + lane;
    const T *val = a.ell_val + off + lane;
    const int nb_ell = (width + B - 1) / B;
    T sum = T(0);
    int i = g;
    for (; i < nb_ell; i += G) { /* ELL slots read once: streaming, x stays cached */
        const int k = i * B;
        unsigned short c[B];
        T v[B];
#pragma unroll
        for (int u = 0; u < B; u++) {
            c[u] = k + u < width ? port_ld_stream(col + (k + u) * W) : (unsigned short)pad;
            v[u] = k + u < width ? port_ld_stream(val + (k + u) * W) : T(0);
        }
#pragma unroll
        for (int u = 0; u < B; u++)
            if (k + u < width) sum += v[u] * xs[c[u]];
    }
    /* the slice's near-ER block, x from global memory: the batches after the ELL ones, same round robin */
    return ehyb_er_sum<W, T, B>(a, noff + lane, nwidth, sum, SPLIT ? (i - nb_ell) * B : 0, G * B);
}

/* The end of a slice row: a row with far entries arrives with its partial (ranks of a slice are consecutive:
 * count the far lanes below), any other row is written to out. */
template <int W, typename T>
PORT_DEVICE void ehyb_slice_end(const ehyb_args<T> &a, int gs, int lane, bool valid, bool far,
                                port_lane_mask_t mask, int out, T sum)
{
    if (far) {
        const port_lane_mask_t below = port_lanemask_le<W>(lane) >> 1;
        const int e = (int)port_ldg(a.slice_er + 2 * gs + 1) + port_popc(mask & below);
        ehyb_arrive(a, e, port_ldg(a.er_meta + 2 * e + 1), sum);
    } else if (valid) {
        ehyb_put(a, out, sum);
    }
}

/* What a warp of a split slice needs besides its sums: the slice's ELL and near-ER offsets and widths, and for the
 * slice's warp 0 the far-ER mask and the row's place in y. */
struct ehyb_split_item {
    int off, noff, width, nwidth, out;
    port_lane_mask_t mask;
    bool far;
};

/* Two blocks per multiprocessor, as the segment budget assumes (SPMVPORT_EHYB_BLOCKS_PER_SM): the bound caps the
 * registers so two 1024-thread blocks fit; without it the next-slice prefetch grows the f64 kernel to one block.
 * A split plan (a small matrix: one part per multiprocessor) is bound to one block, so its kernel has 64
 * registers: at 32, the split's prefetched items spilled up to 212 bytes (sm_90). */
template <int W, typename T, int B, bool SPLIT>
PORT_KERNEL void PORT_LAUNCH_BOUNDS_MIN(ehyb_block, SPLIT ? 1 : SPMVPORT_EHYB_BLOCKS_PER_SM)
ehyb_kernel(const ehyb_args<T> a)
{
    if (!port_warp_matches<W>()) return;
    PORT_SHARED int next_slice;
    T *xs = port_dynamic_shared<T>();
    const int lane = port_lane<W>();
    const int *pp = a.part + 4 * (int)port_block_idx();
    const int rb = port_ldg(pp), cb = port_ldg(pp + 1), sb = port_ldg(pp + 2), hb = port_ldg(pp + 3);
    const int rows = port_ldg(pp + 4) - rb, own = port_ldg(pp + 5) - cb, nsl = port_ldg(pp + 6) - sb;
    const int seg = own + port_ldg(pp + 7) - hb; /* staged x: own columns, then the halo */

    /* the part's ELL slices, x from shared memory (nsl is the same for the whole block) */
    if (nsl > 0) {
        /* the row's place in y (row_perm, read once: streaming) */
        auto row_out = [&](long long local, bool far) {
            const int r = rb + (int)local;
            return a.plan_ordering || local >= rows || far ? r : port_ld_stream(a.row_perm + r);
        };
        /* split: this warp's item of the round starting at base, with G warps per slice */
        const int G = SPLIT ? a.split : 1, wid = (int)(port_thread_idx() / W);
        auto split_item = [&](int base) {
            ehyb_split_item it = {0, 0, 0, 0, 0, 0, false};
            const int t = base + wid, s = t / G, gs = sb + s;
            if (s >= nsl) return it;
            if (t % G == 0) {
                const long long local = (long long)s * W + lane;
                it.mask = (port_lane_mask_t)port_ldg(a.slice_er + 2 * gs);
                it.far = local < rows && ((it.mask >> lane) & 1);
                it.out = row_out(local, it.far);
            }
            it.off = port_ldg(a.ell_ptr + 2 * gs);
            it.noff = port_ldg(a.ell_ptr + 2 * gs + 1);
            it.width = (port_ldg(a.ell_ptr + 2 * gs + 2) - it.off) / W;
            it.nwidth = (port_ldg(a.ell_ptr + 2 * gs + 3) - it.noff) / W;
            return it;
        };
        /* the first round's items are requested before the staging, so their latency overlaps it (a small
         * matrix's chain of dependent round trips is most of its time) */
        ehyb_split_item item = {0, 0, 0, 0, 0, 0, false};
        if (SPLIT) item = split_item(0);
        /* staging, B columns per thread at a time: their col_perm or halo entries (read once: streaming), then
         * their x values, so the gather's two dependent reads are paid once per batch */
        const int bd = (int)port_block_dim();
        for (int j0 = (int)port_thread_idx(); j0 < seg; j0 += B * bd) {
            int src[B];
#pragma unroll
            for (int u = 0; u < B; u++) {
                const int j = j0 + u * bd;
                src[u] = j >= seg                ? -1
                         : j >= own              ? port_ld_stream(a.halo + hb + j - own)
                         : a.plan_ordering       ? cb + j
                                                 : port_ld_stream(a.col_perm + cb + j);
            }
            T v[B];
#pragma unroll
            for (int u = 0; u < B; u++) v[u] = src[u] >= 0 ? port_ldg(a.x + src[u]) : T(0);
#pragma unroll
            for (int u = 0; u < B; u++)
                if (j0 + u * bd < seg) xs[j0 + u * bd] = v[u];
        }
        if (port_thread_idx() == 0) {
            xs[seg] = T(0); /* padding slots point here */
            next_slice = 0;
        }
        port_block_sync();
        if (!SPLIT) { /* a kernel of its own: the split's registers would make this loop spill at the bound */
            /* a warp takes its next slice and requests that slice's ell_ptr entries (lane t < 4 holds entry
             * 2s + t) before it works on the current one, so their latency overlaps the current slice's sums */
            auto take = [&]() {
                int t = 0;
                if (lane == 0) t = port_atomic_add(&next_slice, 1);
                return port_shfl_idx<W>(t, 0);
            };
            auto meta = [&](int t) { return t < nsl && lane < 4 ? port_ldg(a.ell_ptr + 2 * (sb + t) + lane) : 0; };
            int s = take(), ms = meta(s);
            while (s < nsl) {
                const int sn = take(), mn = meta(sn);
                const int gs = sb + s, off = port_shfl_idx<W>(ms, 0), noff = port_shfl_idx<W>(ms, 1);
                const int width = (port_shfl_idx<W>(ms, 2) - off) / W, nwidth = (port_shfl_idx<W>(ms, 3) - noff) / W;
                const long long local = (long long)s * W + lane;
                const port_lane_mask_t mask = (port_lane_mask_t)port_ldg(a.slice_er + 2 * gs);
                const bool far = local < rows && ((mask >> lane) & 1);
                const int out = row_out(local, far);
                const T sum = ehyb_slice_part<W, T, B, false>(a, xs, off, width, noff, nwidth, seg, lane, 0, 1);
                ehyb_slice_end<W, T>(a, gs, lane, local < rows, far, mask, out, sum);
                s = sn;
                ms = mn;
            }
        } else {
            /* G = split warps per slice, in rounds of the block's warps (G divides them, so a slice's G warps
             * share a round): warp g of a slice sums every G-th batch, the partials meet in shared memory after
             * the staged x, and warp 0 of the slice adds them in warp order and ends the slice */
            const int nw = (int)(port_block_dim() / W);
            T *ps = xs + a.seg_max + 1;
            for (int base = 0; base < nsl * G; base += nw) {
                const int t = base + wid, s = t / G, g = t % G, gs = sb + s;
                const T part = s < nsl ? ehyb_slice_part<W, T, B, true>(a, xs, item.off, item.width, item.noff,
                                                                        item.nwidth, seg, lane, g, G)
                                       : T(0);
                ps[wid * W + lane] = part;
                port_block_sync();
                if (s < nsl && g == 0) {
                    T sum = part;
                    for (int h = 1; h < G; h++) sum += ps[(wid + h) * W + lane];
                    ehyb_slice_end<W, T>(a, gs, lane, (long long)s * W + lane < rows, item.far, item.mask, item.out,
                                         sum);
                }
                if (base + nw < nsl * G) item = split_item(base + nw);
                port_block_sync(); /* the next round reuses ps */
            }
        }
    }

    /* the ER part, shared by every warp of the grid */
    if (a.items == 0) return; /* nor are the counters touched */
    for (;;) {
        int w = 0;
        if (lane == 0) w = port_atomic_add(a.sync, 1);
        w = port_shfl_idx<W>(w, 0);
        if (w >= a.items) break;
        if (w < a.chunks) ehyb_chunk<W, T, B>(a, w, lane);
        else ehyb_er_slice<W, T, B>(a, w - a.chunks, lane);
    }
    port_threadfence(); /* this warp's last ticket precedes its finish count */
    if (lane == 0) {
        const int warps = (int)(port_grid_dim() * (port_block_dim() / W));
        if (port_atomic_add(a.sync + 1, 1) == warps - 1) { /* every warp has taken its last ticket */
            a.sync[0] = 0;
            a.sync[1] = 0;
        }
    }
}

/* What the kernel relies on in the builder's layout; NULL when fd is usable on a device of this warp size. */
inline const char *ehyb_layout_problem(const spmvport_format_data *fd, int warp)
{
    const int64_t *prm = fd->params;
    if (fd->warp_size != warp) return "ehyb: layout built for another warp size";
    if (fd->narrays != SPMVPORT_EHYB_NARRAYS) return "ehyb: array count differs from the kernel's";
    if (prm[SPMVPORT_EHYB_P_BLOCK] != SPMVPORT_EHYB_BLOCK_THREADS) return "ehyb: block size differs from the kernel's";
    if (fd->m > 0 && prm[SPMVPORT_EHYB_P_PARTS] < 1) return "ehyb: no parts";
    if (prm[SPMVPORT_EHYB_P_BATCH] != 4 && prm[SPMVPORT_EHYB_P_BATCH] != 8) return "ehyb: batch not 4 or 8";
    if (prm[SPMVPORT_EHYB_P_SEG_MAX] > SPMVPORT_EHYB_MAX_SEGMENT)
        return "ehyb: x segment longer than 16-bit columns reach";
    const int64_t split = prm[SPMVPORT_EHYB_P_SPLIT];
    if (split < 1 || split > SPMVPORT_EHYB_BLOCK_THREADS / warp || (split & (split - 1)) != 0)
        return "ehyb: split not a power of two up to the block's warps";
    return NULL;
}

/* The kernel instantiation a plan runs: its batch B (4 or 8) and whether its slices are split. */
template <typename T>
using ehyb_kernel_ptr = void (*)(const ehyb_args<T>);

template <int W, typename T>
ehyb_kernel_ptr<T> ehyb_kernel_for(const spmvport_format_data *fd)
{
    const bool split = fd->params[SPMVPORT_EHYB_P_SPLIT] > 1;
    if (fd->params[SPMVPORT_EHYB_P_BATCH] == 8) return split ? ehyb_kernel<W, T, 8, true> : ehyb_kernel<W, T, 8, false>;
    return split ? ehyb_kernel<W, T, 4, true> : ehyb_kernel<W, T, 4, false>;
}

/* Dynamic shared memory of a launch: the staged x and its padding zero, and with a split the warps' partials. */
inline size_t ehyb_smem_bytes(const spmvport_format_data *fd, size_t vsize)
{
    const int64_t *prm = fd->params;
    return ((size_t)prm[SPMVPORT_EHYB_P_SEG_MAX] + 1 + (prm[SPMVPORT_EHYB_P_SPLIT] > 1 ? ehyb_block : 0)) * vsize;
}

/* At plan upload, on the plan's device (current): a segment above 48 KiB needs the kernel's dynamic shared-memory
 * limit raised. It is raised to the device's opt-in amount less 1 KiB, the same value for every plan, so plans and
 * threads cannot lower it under one another, and execute makes no runtime call but the launch (it used to set
 * the attribute on every call). */
template <int W>
port_error_t ehyb_prepare(const spmvport_format_data *fd, int device)
{
    const size_t vsize = fd->precision == SPMV_F32 ? sizeof(float) : sizeof(double);
    if (ehyb_smem_bytes(fd, vsize) <= ehyb_default_smem) return port_success;
    port_device_props pr;
    const port_error_t e = port_get_device_props(device, &pr);
    if (e != port_success || pr.shared_mem_per_block <= SPMVPORT_EHYB_SMEM_RESERVE) return e; /* launch says */
    /* the limit plus the kernel's static shared memory (a few bytes) must stay within the opt-in amount; every
     * segment fits half of it (the builder's budget) */
    const int most = (int)(pr.shared_mem_per_block - SPMVPORT_EHYB_SMEM_RESERVE);
    return fd->precision == SPMV_F32 ? port_set_max_dynamic_shared(ehyb_kernel_for<W, float>(fd), most)
                                     : port_set_max_dynamic_shared(ehyb_kernel_for<W, double>(fd), most);
}

/* Host side: y = alpha*A*x + beta*y for an ehyb plan. Plan is the backend's device plan (fd + arrays[], the
 * device copies of fd's arrays in slot order); same shape as launch_csr. */
template <int W, typename T, typename Plan>
void launch_ehyb(const Plan *p, double alpha, const void *x, double beta, void *y, port_stream_t stream)
{
    const spmvport_format_data *fd = p->fd;
    const int64_t *prm = fd->params;
    if (fd->m == 0) return;
    ehyb_args<T> a;
    a.row_perm = (const int *)p->arrays[SPMVPORT_EHYB_ROW_PERM];
    a.col_perm = (const int *)p->arrays[SPMVPORT_EHYB_COL_PERM];
    a.part = (const int *)p->arrays[SPMVPORT_EHYB_PART];
    a.ell_ptr = (const int *)p->arrays[SPMVPORT_EHYB_ELL_PTR];
    a.slice_er = (const unsigned long long *)p->arrays[SPMVPORT_EHYB_SLICE_ER];
    a.ell_col = (const unsigned short *)p->arrays[SPMVPORT_EHYB_ELL_COL];
    a.ell_val = (const T *)p->arrays[SPMVPORT_EHYB_ELL_VAL];
    a.er_meta = (const int *)p->arrays[SPMVPORT_EHYB_ER_META];
    a.er_work = (const int *)p->arrays[SPMVPORT_EHYB_ER_WORK];
    a.er_col = (const int *)p->arrays[SPMVPORT_EHYB_ER_COL];
    a.er_val = (const T *)p->arrays[SPMVPORT_EHYB_ER_VAL];
    a.halo = (const int *)p->arrays[SPMVPORT_EHYB_HALO];
    a.partial = (T *)p->arrays[SPMVPORT_EHYB_PARTIAL];
    a.sync = (int *)p->arrays[SPMVPORT_EHYB_SYNC];
    a.chunks = (int)prm[SPMVPORT_EHYB_P_CHUNKS];
    a.er_slices = (int)prm[SPMVPORT_EHYB_P_ER_SLICES];
    a.items = a.chunks + a.er_slices;
    a.plan_ordering = (int)prm[SPMVPORT_EHYB_P_PLAN_ORDERING];
    a.split = (int)prm[SPMVPORT_EHYB_P_SPLIT];
    a.seg_max = (int)prm[SPMVPORT_EHYB_P_SEG_MAX];
    a.x = (const T *)x;
    a.y = (T *)y;
    a.alpha = (T)alpha;
    a.beta = (T)beta;
    const size_t smem = ehyb_smem_bytes(fd, sizeof(T));
    /* above 48 KiB the launch relies on ehyb_prepare, done at upload */
    const ehyb_kernel_ptr<T> kernel = ehyb_kernel_for<W, T>(fd);
    PORT_LAUNCH((unsigned)prm[SPMVPORT_EHYB_P_PARTS], ehyb_block, smem, stream, kernel)(a);
}

} /* namespace */

#endif /* SPMVPORT_DEVICE_EHYB_KERNELS_H */
