/*
 * ehyb_kernels.h -- format ehyb's kernel, written once for CUDA and HIP, every warp size W and precision T.
 *
 * It walks the arrays of src/common/format_ehyb.h as src/cpu_ref/ehyb_executor.c does. One launch, one thread
 * block per part (SPMVPORT_EHYB_BLOCK_THREADS threads):
 *   1. the block stages its x segment in shared memory (gathered through col_perm unless the plan ordering is
 *      used) followed by one zero, the target of every ELL padding slot;
 *   2. its warps take the part's ELL slices through a shared-memory counter (new each launch); lane l of slice
 *      s sums val[ptr[2s] + k*W + l] * xs[col[...]] for k < width, then the slice's near-ER block,
 *      er_val[ptr[2s+1] + k*W + l] * x[er_col[...]] (column -1: padding). A row without far ER entries is written
 *      at once; a row with far ER entries arrives with its partial sum (below);
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
    const int *er_meta, *er_work, *er_col;
    const T *er_val;
    T *partial; /* written and read inside the launch: never through the read-only cache */
    int *sync;
    int chunks, er_slices, items, plan_ordering;
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

/* Adds count entries of one lane, entry k at q + k*W (er_col/er_val; column -1 = padding, skipped), in k order,
 * B at a time: columns and values of a batch, then its x reads, then the products. */
template <int W, typename T, int B>
PORT_DEVICE T ehyb_er_sum(const ehyb_args<T> &a, int q, int count, T sum)
{
    for (int k = 0; k < count; k += B) {
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

/* Two blocks per multiprocessor, as the segment budget assumes (SPMVPORT_EHYB_BLOCKS_PER_SM): the bound caps the
 * registers so two 1024-thread blocks fit; without it the next-slice prefetch grows the f64 kernel to one block. */
template <int W, typename T, int B>
PORT_KERNEL void PORT_LAUNCH_BOUNDS_MIN(ehyb_block, SPMVPORT_EHYB_BLOCKS_PER_SM) ehyb_kernel(const ehyb_args<T> a)
{
    if (!port_warp_matches<W>()) return;
    PORT_SHARED int next_slice;
    T *xs = port_dynamic_shared<T>();
    const int lane = port_lane<W>();
    const int *pp = a.part + 3 * (int)port_block_idx();
    const int rb = port_ldg(pp), cb = port_ldg(pp + 1), sb = port_ldg(pp + 2);
    const int rows = port_ldg(pp + 3) - rb, seg = port_ldg(pp + 4) - cb, nsl = port_ldg(pp + 5) - sb;

    /* the part's ELL slices, x from shared memory (nsl is the same for the whole block) */
    if (nsl > 0) {
        /* staging, B columns per thread at a time: their col_perm entries (read once: streaming), then
         * their x values, so the gather's two dependent reads are paid once per batch */
        const int bd = (int)port_block_dim();
        for (int j0 = (int)port_thread_idx(); j0 < seg; j0 += B * bd) {
            int src[B];
#pragma unroll
            for (int u = 0; u < B; u++) {
                const int j = j0 + u * bd;
                src[u] = j >= seg ? -1 : a.plan_ordering ? cb + j : port_ld_stream(a.col_perm + cb + j);
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
        /* a warp takes its next slice and requests that slice's ell_ptr entries (lane t < 4 holds entry 2s + t)
         * before it works on the current one, so their latency overlaps the current slice's sums */
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
            const int r = rb + (int)local;
            /* everything the end of the slice needs is requested now, so its latency overlaps the sums: the far-ER
             * mask and the row's place in y (row_perm, read once: streaming) */
            const port_lane_mask_t mask = (port_lane_mask_t)port_ldg(a.slice_er + 2 * gs);
            const bool far = local < rows && ((mask >> lane) & 1);
            const int out = a.plan_ordering || local >= rows || far ? r : port_ld_stream(a.row_perm + r);
            const unsigned short *col = a.ell_col + off + lane;
            const T *val = a.ell_val + off + lane;
            T sum = T(0);
            for (int k = 0; k < width; k += B) { /* ELL slots read once: streaming, x stays cached */
                unsigned short c[B];
                T v[B];
#pragma unroll
                for (int u = 0; u < B; u++) {
                    c[u] = k + u < width ? port_ld_stream(col + (k + u) * W) : (unsigned short)seg;
                    v[u] = k + u < width ? port_ld_stream(val + (k + u) * W) : T(0);
                }
#pragma unroll
                for (int u = 0; u < B; u++)
                    if (k + u < width) sum += v[u] * xs[c[u]];
            }
            sum = ehyb_er_sum<W, T, B>(a, noff + lane, nwidth, sum); /* the slice's near-ER block: x from global */
            if (far) { /* ranks of a slice are consecutive: count lanes below */
                const port_lane_mask_t below = port_lanemask_le<W>(lane) >> 1;
                const int e = (int)port_ldg(a.slice_er + 2 * gs + 1) + port_popc(mask & below);
                ehyb_arrive(a, e, port_ldg(a.er_meta + 2 * e + 1), sum);
            } else if (local < rows) {
                ehyb_put(a, out, sum);
            }
            s = sn;
            ms = mn;
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
    if (prm[SPMVPORT_EHYB_P_SEG_MAX] > SPMVPORT_EHYB_MAX_SEGMENT) return "ehyb: x segment longer than 16-bit columns reach";
    return NULL;
}

/* At plan upload, on the plan's device (current): a segment above 48 KiB needs the kernel's dynamic shared-memory
 * limit raised. It is raised to the device's opt-in amount less 1 KiB, the same value for every plan, so plans and
 * threads cannot lower it under one another, and execute makes no runtime call but the launch (it used to set
 * the attribute on every call). */
template <int W>
port_error_t ehyb_prepare(const spmvport_format_data *fd, int device)
{
    const size_t vsize = fd->precision == SPMV_F32 ? sizeof(float) : sizeof(double);
    if (((size_t)fd->params[SPMVPORT_EHYB_P_SEG_MAX] + 1) * vsize <= ehyb_default_smem) return port_success;
    port_device_props pr;
    const port_error_t e = port_get_device_props(device, &pr);
    if (e != port_success || pr.shared_mem_per_block <= SPMVPORT_EHYB_SMEM_RESERVE) return e; /* launch says */
    /* the limit plus the kernel's static shared memory (a few bytes) must stay within the opt-in amount; every
     * segment fits half of it (the builder's budget) */
    const int most = (int)(pr.shared_mem_per_block - SPMVPORT_EHYB_SMEM_RESERVE);
    if (fd->params[SPMVPORT_EHYB_P_BATCH] == 8)
        return fd->precision == SPMV_F32 ? port_set_max_dynamic_shared(ehyb_kernel<W, float, 8>, most)
                                         : port_set_max_dynamic_shared(ehyb_kernel<W, double, 8>, most);
    return fd->precision == SPMV_F32 ? port_set_max_dynamic_shared(ehyb_kernel<W, float, 4>, most)
                                     : port_set_max_dynamic_shared(ehyb_kernel<W, double, 4>, most);
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
    a.partial = (T *)p->arrays[SPMVPORT_EHYB_PARTIAL];
    a.sync = (int *)p->arrays[SPMVPORT_EHYB_SYNC];
    a.chunks = (int)prm[SPMVPORT_EHYB_P_CHUNKS];
    a.er_slices = (int)prm[SPMVPORT_EHYB_P_ER_SLICES];
    a.items = a.chunks + a.er_slices;
    a.plan_ordering = (int)prm[SPMVPORT_EHYB_P_PLAN_ORDERING];
    a.x = (const T *)x;
    a.y = (T *)y;
    a.alpha = (T)alpha;
    a.beta = (T)beta;
    const size_t smem = ((size_t)prm[SPMVPORT_EHYB_P_SEG_MAX] + 1) * sizeof(T);
    /* above 48 KiB the launch relies on ehyb_prepare, done at upload */
    if (prm[SPMVPORT_EHYB_P_BATCH] == 8)
        PORT_LAUNCH((unsigned)prm[SPMVPORT_EHYB_P_PARTS], ehyb_block, smem, stream, ehyb_kernel<W, T, 8>)(a);
    else
        PORT_LAUNCH((unsigned)prm[SPMVPORT_EHYB_P_PARTS], ehyb_block, smem, stream, ehyb_kernel<W, T, 4>)(a);
}

} /* namespace */

#endif /* SPMVPORT_DEVICE_EHYB_KERNELS_H */
