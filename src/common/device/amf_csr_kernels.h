/*
 * amf_csr_kernels.h -- the kernels of format amf_csr (adaptive multi-row folding of CSR), written once for CUDA
 * and HIP, every warp size W and precision T. The layout is in ../format_amf_csr.h; the CPU executor
 * (src/cpu_ref/amf_csr_executor.c) walks the arrays the same way:
 *
 *   amf_csr_kernel     one launch, two kinds of blocks (the kind is uniform over a block):
 *     blocks [0, pieces)   one long-row piece each: thread t takes entries t, t + B, ... of the piece,
 *                          AMF_BATCH loads in flight; a shuffle-down tree per warp (offsets W/2 .. 1); thread 0
 *                          adds the warp sums in warp order and writes y (a one-piece row) or long_part[piece];
 *                          the block that writes a row's last partial (an atomic count per long row) adds the
 *                          row's partials in piece order and writes y, so no fix-up launch follows;
 *     the other blocks     B / W warps, one sub-block each: with L = 2^sub_lanes lanes per fold the warp runs
 *                          G = W / L folds side by side, step by step over the sub-block's units; lane l of a
 *                          group takes the aligned windows of AMF_BATCH entries l, l + L, ... of its fold
 *                          (16-byte streaming loads; a lane's next window, of this fold or of the next step's,
 *                          is loaded while this window's x gathers are in flight), and adds each product into the
 *                          accumulator of the entry's local row (registers, selected without branching); then
 *                          a transposing butterfly over
 *                          the group leaves each row's sum in its own lane (the pairs of a shuffle-down tree with
 *                          offsets L/2 .. 1) and those lanes write the step's rows with one store.
 *   amf_csr_step_kernel  the one-step sub-blocks (below), with the same long-row blocks first.
 *
 * One launch. The only atomics count a long row's pieces (long_count, reset to 0 by the block that sums the row:
 * zero between calls; concurrent executes of one plan share it, as they share long_part); the sums themselves
 * are added in a fixed order, so the results are deterministic. No dynamic shared memory, no implicit lockstep:
 * the warp reductions are shuffles, the block's is a shared array behind a block barrier. With beta == 0, y is
 * never read (it may hold NaN). Everything has internal linkage (anonymous namespace).
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

/* ---- long rows: one block per piece --------------------------------------------------------------------------- */

/* Piece q of long row i (pieces [first, first + count), count > 1), its block sum s in lane 0 of the block's warp 0
 * (the warp runs this, converged). The fence puts the partial before its count; the warp of the block that counts
 * the row's last piece reads the partials from L2 (coherent loads, W at a time) and adds them in piece order (lane
 * j's by shuffle), as a separate pass did: one launch, not two (brainpc2 f64 8.9-10.2 -> 7.7 us, circuit:5000000
 * f32 0.1186 -> 0.1135 ms, H100 run LG); then it resets the count for the next call. Out of line (the piece code
 * too) and one partial a lane: inlined, with port_ordered_sum's 8 loads in flight, the one-step kernel took 4-8
 * more registers (circuit f32 40 -> 48, 3.5% slower, H200 run LF). */
template <int W, typename T>
PORT_DEVICE_NOINLINE void amf_long_row_sum(int q, T s, int i, int first, int count, int row, T *long_part,
                                           int *long_count, T *y, T alpha, T beta)
{
    const int lane = port_lane<W>();
    int last = 0;
    if (lane == 0) {
        long_part[q] = s;
        port_threadfence();
        last = port_atomic_add(long_count + i, 1) == count - 1;
    }
    if (!port_shfl_idx<W>(last, 0)) return;
    if (lane == 0) long_count[i] = 0;
    port_threadfence();
    T sum = T(0);
    for (int b = first; b < first + count; b += W) {
        const T v = b + lane < first + count ? *(const volatile T *)(long_part + b + lane) : T(0);
        for (int j = 0; j < W && b + j < first + count; j++) sum += port_shfl_idx<W>(v, j);
    }
    if (lane == 0) amf_store(y, row, alpha, sum, beta);
}

template <int W, typename T, bool PACKED>
PORT_DEVICE_NOINLINE void amf_long_piece(int q, int piece_len, const int *__restrict__ fold_row,
                                const int *__restrict__ fold_ptr, const unsigned *__restrict__ cols,
                                const T *__restrict__ val, const int *__restrict__ long_unit,
                                const int *__restrict__ long_piece, const int *__restrict__ piece_owner,
                                T *__restrict__ long_part, int *__restrict__ long_count, T *warp_sum,
                                const T *__restrict__ x, T *__restrict__ y, T alpha, T beta)
{
    constexpr int B = AMF_BATCH;
    const int tid = (int)port_thread_idx();
    const int i = port_ldg(piece_owner + q), u = port_ldg(long_unit + i);
    const int first = port_ldg(long_piece + i), count = port_ldg(long_piece + i + 1) - first;
    const long long kb = port_ldg(fold_ptr + u) + (long long)(q - first) * piece_len;
    const long long row_end = port_ldg(fold_ptr + u + 1);
    const long long ke = kb + piece_len < row_end ? kb + piece_len : row_end;
    T sum = T(0);
    /* B entries (t, t + block, ...) loaded before any is used: B independent loads in flight per thread, added
     * in the same order as one entry at a time */
    for (long long k0 = kb + tid; k0 < ke; k0 += (long long)B * amf_block) {
        unsigned c[B];
        T v[B], xv[B];
#pragma unroll
        for (int j = 0; j < B; j++) {
            const long long k = k0 + (long long)j * amf_block;
            c[j] = k < ke ? port_ld_stream(cols + k) : 0u; /* read once: leave the caches to x */
            v[j] = k < ke ? port_ld_stream(val + k) : T(0);
        }
#pragma unroll
        for (int j = 0; j < B; j++)
            xv[j] = k0 + (long long)j * amf_block < ke ? port_ldg(x + (PACKED ? c[j] >> 2 : c[j])) : T(0);
#pragma unroll
        for (int j = 0; j < B; j++) sum += v[j] * xv[j]; /* past the piece: + 0 * 0, no change */
    }
    for (int off = W >> 1; off > 0; off >>= 1) sum += port_shfl_down<W>(sum, off);
    if (port_lane<W>() == 0) warp_sum[tid / W] = sum;
    port_block_sync();
    if (tid >= W) return; /* warp 0 finishes the piece, converged (its shuffles below) */
    T s = T(0);
    if (tid == 0)
        for (int w = 0; w < amf_block / W; w++) s += warp_sum[w];
    if (count == 1) {
        if (tid == 0) amf_store(y, port_ldg(fold_row + u), alpha, s, beta);
        return;
    }
    amf_long_row_sum<W, T>(q, s, i, first, count, port_ldg(fold_row + u), long_part, long_count, y, alpha, beta);
}

/* ---- folds: one warp per sub-block ----------------------------------------------------------------------------
 *
 * A lane's entries come in aligned windows of AMF_BATCH = 8 entries (window w = entries [8w, 8w + 8)): whole
 * windows are read with 16-byte vector loads (2 for the packed columns, 4 double2 or 2 float4 for the values,
 * instead of 16 scalar loads), streaming or cached as the plan says (amf_ld_window). A window may reach
 * into the neighbouring folds; those slots are masked (their x is not loaded and their product is +0). */
/* A window's load: streaming (evict-first: read once, the caches are left to x), or with CACHE
 * (AMF_P_WINDOW_CACHE, options.amf_window_cache) a plain cached load. A window that reaches past either end of
 * its fold is read again by the neighbouring fold's lane, often in another round or step; streamed, that second read
 * comes from DRAM again (circuit:5000000 at L = 2: a third more window reads than windows; ncu, H100, f64: 661 MB
 * read streamed, 543 MB cached). Caching only those windows was measured too: half the gain (an L2 line holds two
 * f64 windows, and the streamed neighbour's evict-first hint covers the line). */
template <bool CACHE, typename T> PORT_DEVICE T amf_ld_window(const T *p) { return CACHE ? port_ldg(p) : port_ld_stream(p); }

template <typename T, int N = AMF_BATCH> /* N: AMF_BATCH, or AMF_SMALL_WINDOW (amf_small_window) */
struct amf_window {
    unsigned c[N];
    T v[N];
    int lr[N]; /* local rows, unpacked layout only (packed: the low 2 bits of c; lr stays unused) */
};

template <typename T, bool PACKED, bool CACHE>
PORT_DEVICE void amf_load_cols(unsigned *c, int *lr, unsigned k0, unsigned nnz, const unsigned *__restrict__ cols,
                               const unsigned char *__restrict__ local)
{
    constexpr int B = AMF_BATCH;
    typedef typename port_vec<int, 4>::type cvec;
    static_assert(B % 4 == 0, "a window is whole vectors");
    if (k0 + B <= nnz) { /* k0 is a multiple of B: the vectors are aligned */
#pragma unroll
        for (int i = 0; i < B / 4; i++) {
            const cvec v = amf_ld_window<CACHE>(reinterpret_cast<const cvec *>(cols + k0) + i);
#pragma unroll
            for (int j = 0; j < 4; j++) c[i * 4 + j] = (unsigned)port_vec_get(v, j);
        }
    } else { /* the array's last, partial window */
#pragma unroll
        for (int j = 0; j < B; j++) c[j] = k0 + j < nnz ? amf_ld_window<CACHE>(cols + k0 + j) : 0u;
    }
    if (!PACKED) {
#pragma unroll
        for (int j = 0; j < B; j++) lr[j] = k0 + j < nnz ? (int)amf_ld_window<CACHE>(local + k0 + j) : 0;
    }
}

template <typename T, bool CACHE>
PORT_DEVICE void amf_load_vals(T *v, unsigned k0, unsigned nnz, const T *__restrict__ val)
{
    constexpr int B = AMF_BATCH, V = 16 / (int)sizeof(T); /* values per 16-byte vector */
    typedef typename port_vec<T, V>::type tvec;
    static_assert(B % V == 0, "a window is whole vectors");
    if (k0 + B <= nnz) {
#pragma unroll
        for (int i = 0; i < B / V; i++) {
            const tvec t = amf_ld_window<CACHE>(reinterpret_cast<const tvec *>(val + k0) + i);
#pragma unroll
            for (int j = 0; j < V; j++) v[i * V + j] = port_vec_get(t, j);
        }
    } else {
#pragma unroll
        for (int j = 0; j < B; j++) v[j] = k0 + j < nnz ? amf_ld_window<CACHE>(val + k0 + j) : T(0);
    }
}

template <typename T, bool PACKED, bool CACHE, int N = AMF_BATCH>
PORT_DEVICE void amf_load_window(amf_window<T, N> &r, unsigned k0, unsigned nnz, const unsigned *__restrict__ cols,
                                 const unsigned char *__restrict__ local, const T *__restrict__ val)
{
    constexpr int B = N, V = 16 / (int)sizeof(T); /* values per 16-byte vector */
    typedef typename port_vec<int, 4>::type cvec;
    typedef typename port_vec<T, V>::type tvec;
    static_assert(B % 4 == 0 && B % V == 0, "a window is whole vectors");
    if (k0 + B <= nnz) { /* k0 is a multiple of B: the vectors are aligned */
#pragma unroll
        for (int i = 0; i < B / 4; i++) {
            const cvec c = amf_ld_window<CACHE>(reinterpret_cast<const cvec *>(cols + k0) + i);
#pragma unroll
            for (int j = 0; j < 4; j++) r.c[i * 4 + j] = (unsigned)port_vec_get(c, j);
        }
#pragma unroll
        for (int i = 0; i < B / V; i++) {
            const tvec v = amf_ld_window<CACHE>(reinterpret_cast<const tvec *>(val + k0) + i);
#pragma unroll
            for (int j = 0; j < V; j++) r.v[i * V + j] = port_vec_get(v, j);
        }
    } else { /* the array's last, partial window */
#pragma unroll
        for (int j = 0; j < B; j++) {
            r.c[j] = k0 + j < nnz ? amf_ld_window<CACHE>(cols + k0 + j) : 0u;
            r.v[j] = k0 + j < nnz ? amf_ld_window<CACHE>(val + k0 + j) : T(0);
        }
    }
    if (!PACKED) {
#pragma unroll
        for (int j = 0; j < B; j++) r.lr[j] = k0 + j < nnz ? (int)amf_ld_window<CACHE>(local + k0 + j) : 0;
    }
}

/* The x entries of window k0's slots inside the fold [fb, fe) (the others read nothing), then each product into
 * the accumulator of its local row (a select, not a branch: no divergence on the local row). */
template <typename T, bool PACKED, int N = AMF_BATCH>
PORT_DEVICE void amf_gather(T *xv, const unsigned *c, unsigned k0, unsigned fb, unsigned fe, const T *__restrict__ x)
{
#pragma unroll
    for (int j = 0; j < N; j++)
        xv[j] = k0 + j >= fb && k0 + j < fe ? port_ldg(x + (PACKED ? c[j] >> 2 : c[j])) : T(0);
}

/* the window's local rows, 2 bits per slot in one register */
template <bool PACKED>
PORT_DEVICE unsigned amf_pack_rows(const unsigned *c, const int *lr)
{
    unsigned bits = 0u;
#pragma unroll
    for (int j = 0; j < AMF_BATCH; j++) bits |= (PACKED ? c[j] & 3u : (unsigned)lr[j] & 3u) << (2 * j);
    return bits;
}

/* BITS: the local rows come from amf_pack_rows (rows); otherwise from the window's columns (c) or lr.
 * SKIP: a slot outside the fold takes local row ACC, so no accumulator adds it; otherwise its product is a
 * selected +0, which changes no sum (a sum that starts at +0 never is -0). Without the select between them the
 * compiler fuses each product into its add (one rounding instead of two; the order of the adds is the same).
 * The general kernel takes SKIP in f32 (session 18, same processes: H200 circuit:5000000, fem3d:3:48,
 * stencil3d:7:160, kron:20:16 2-4% faster; H100 0.5-2.5%), not in f64, where at its 80-register cap it spilled
 * 24 bytes (3-10% slower on the H200), nor the one-step kernel (NotreDame_www f32 4% slower). */
template <typename T, bool PACKED, int ACC, bool BITS, bool SKIP = false>
PORT_DEVICE void amf_add(T *a, const T *v, const T *xv, const unsigned *c, const int *lr, unsigned rows, unsigned k0,
                         unsigned fb, unsigned fe)
{
#pragma unroll
    for (int j = 0; j < AMF_BATCH; j++) {
        const bool in = k0 + j >= fb && k0 + j < fe;
        const T p = SKIP || in ? v[j] * xv[j] : T(0);
        const int r = SKIP && !in ? ACC : BITS ? (int)((rows >> (2 * j)) & 3u) : PACKED ? (int)(c[j] & 3u) : lr[j];
        /* only the entry's own accumulator adds (a predicated add: no select of a zero, 2 instructions fewer per
         * accumulator and slot in f64); the others would add +0, which changes no sum that is never -0 */
#pragma unroll
        for (int i = 0; i < ACC; i++)
            if (r == i) a[i] += p;
    }
}

/* The transposing butterfly over a group of `lanes` lanes (warp-uniform, so are the shuffles): while a lane holds
 * several rows, at xor offset span / 2 the lower half keeps the first half of its rows and receives its partner's
 * copies of them, the upper half the others; plain xor levels finish. Leaves rows [rb, rb + held) of the fold in
 * a[0 .. held) of the lanes with (l & (span - 1)) == 0. */
template <int W, typename T, int ACC>
PORT_DEVICE void amf_butterfly(T *a, int lanes, int l, int &rb, int &held, int &span)
{
    rb = 0;
    held = ACC;
    span = lanes;
#pragma unroll
    for (int n = ACC; n > 1; n >>= 1) { /* n: rows a lane holds, a constant after unrolling */
        if (span >= 2) { /* once a group is down to one lane per row set, it stays there */
            span >>= 1;
            const bool up = (l & span) != 0;
#pragma unroll
            for (int i = 0; i < n / 2; i++) {
                const T keep = up ? a[i + n / 2] : a[i], send = up ? a[i] : a[i + n / 2];
                a[i] = keep + port_shfl_xor<W>(send, span);
            }
            rb += up ? n / 2 : 0;
            held = n / 2;
        }
    }
    for (int off = span >> 1; off > 0; off >>= 1) a[0] += port_shfl_xor<W>(a[0], off);
}

/* VALS: when a window's values are loaded (options.amf_values, format_amf_csr.h; the layout is the same):
 *   AMF_VALUES_AFTER   (default) right after the previous window's adds: issued about when its columns are, so
 *                      they arrive during its gathers, and one window's values are live at a time (no copy of
 *                      the current window while the next one loads): 80 registers f64, 64 f32 without spills;
 *   AMF_VALUES_AHEAD   with its columns, one round ahead (2 x 8 values live while the next window loads);
 *   AMF_VALUES_GATHER  with its x gathers (the adds then wait for memory instead of x, mostly from L2). */

/* ACC accumulators per lane (the power of two >= fold_max). Per step, group g's fold spans windows
 * [fb / 8, ceil(fe / 8)); lane l of the group takes windows fb / 8 + l, + L, ... The bounds of a step's folds
 * are loaded two steps ahead, and a lane's windows form one stream over the steps: right after a window's x
 * gathers are issued, the lane loads its next window's columns (of this fold, else its first of the next step's
 * fold), so that load's latency overlaps the gathers, and each round of windows waits for one memory round trip,
 * not two (entries, then x); the values follow VALS (above). The reduction is a transposing
 * butterfly: at offset L/2 the lower half of the group keeps rows [0, ACC/2) and receives its partner's copies
 * of them, the upper half keeps the other rows, and so on while a lane holds more than one row; plain xor levels
 * finish. Each sum has exactly the pairs of a shuffle-down tree (offsets L/2 .. 1), and the rows of a step end in
 * different lanes, so one store instruction writes them all: with 4-row folds and L = 4, lane l writes row l of
 * its fold, and the warp's stores cover consecutive rows. */
template <int W, typename T, bool PACKED, int ACC, int VALS, bool CACHE>
PORT_DEVICE void amf_sub_block(int s, unsigned nnz, int units, int uni_k, int uni_lg, const int *__restrict__ fold_row,
                               const int *__restrict__ fold_ptr, const unsigned *__restrict__ cols,
                               const unsigned char *__restrict__ local, const T *__restrict__ val,
                               const int *__restrict__ sub_unit, const unsigned char *__restrict__ sub_lanes,
                               const T *__restrict__ x, T *__restrict__ y, T alpha, T beta)
{
    constexpr int B = AMF_BATCH;
    const int lane = port_lane<W>();
    /* uniform sub-blocks (uni_k > 0, launch-uniform): the bounds follow from s, so the folds' bounds are the
     * warp's first loads; otherwise they wait for sub_unit and sub_lanes */
    int lg, ub, ue;
    if (uni_k > 0) { /* s < ceil(units / uni_k): s * uni_k < units, no overflow */
        lg = uni_lg;
        ub = s * uni_k;
        ue = units - ub > uni_k ? ub + uni_k : units;
    } else {
        lg = port_ldg(sub_lanes + s);
        ub = port_ldg(sub_unit + 2 * s);
        ue = port_ldg(sub_unit + 2 * s + 1);
    }
    /* lane 0's copies (the values are warp-uniform already): opaque to the compiler, which otherwise schedules
     * the rest for the computed bounds and spills 24 bytes at the f64 kernel's 80 registers; ~3 shuffles of
     * latency against the memory round trip the uniform bounds save */
    lg = port_shfl_idx<W>(lg, 0);
    ub = port_shfl_idx<W>(ub, 0);
    ue = port_shfl_idx<W>(ue, 0);
    const int lanes = 1 << lg, side = W >> lg;
    const int g = lane >> lg, l = lane & (lanes - 1);
    /* the group's fold of a step: entries [b, e), first row r (its rows end where the next unit's begin: the
     * store takes that from the next group's lane); units past the sub-block are empty, at its end */
    struct bounds {
        unsigned b, e;
        int r;
    };
    auto load_bounds = [&](int u) {
        const int v = u < ue ? u : ue, w = u < ue ? u + 1 : ue;
        const bounds f = {(unsigned)port_ldg(fold_ptr + v), (unsigned)port_ldg(fold_ptr + w), port_ldg(fold_row + v)};
        return f;
    };
    /* the lane's first window of fold f (entry k0), when the fold reaches it */
    auto first_of = [&](const bounds &f, unsigned &k0) {
        const unsigned w0 = (f.b / B) + (unsigned)l;
        k0 = w0 * B;
        return f.b < f.e && w0 < (f.e + B - 1) / B;
    };
    bounds cur = load_bounds(ub + g), nxt = load_bounds(ub + side + g);
    amf_window<T> ent = {}; /* the lane's current window (AHEAD: the next one, once the gathers are issued) */
    {
        unsigned k0;
        if (first_of(cur, k0)) {
            if (VALS == AMF_VALUES_GATHER) amf_load_cols<T, PACKED, CACHE>(ent.c, ent.lr, k0, nnz, cols, local);
            else amf_load_window<T, PACKED, CACHE>(ent, k0, nnz, cols, local, val);
        }
    }
    for (int base = ub; base < ue; base += side) { /* warp-uniform: every lane runs every step */
        const bool active = base + g < ue;
        const bounds later = load_bounds(base + 2 * side + g);
        T a[ACC]; /* one accumulator per local row */
#pragma unroll
        for (int i = 0; i < ACC; i++) a[i] = T(0);
        /* the lane's windows k, k + 8L, ... (one for a fold of at most L windows); each window's successor (or
         * the next step's first window) is loaded while its x gathers are in flight. k < 2^31 + 8W: no wrap. */
        for (unsigned k = (cur.b / B + (unsigned)l) * B;;) {
            T xv[B], v[B];
            if (VALS == AMF_VALUES_GATHER) { /* the lane has no values to read past its fold's windows */
                if (k < cur.e) amf_load_vals<T, CACHE>(v, k, nnz, val);
                else {
#pragma unroll
                    for (int j = 0; j < B; j++) v[j] = T(0);
                }
            }
            amf_gather<T, PACKED>(xv, ent.c, k, cur.b, cur.e, x);
            /* AHEAD: the window's values and local rows stay live while the next window loads; otherwise only
             * its local rows, 2 bits each in one register */
            const amf_window<T> now = ent;
            const unsigned rows = VALS == AMF_VALUES_AHEAD ? 0u : amf_pack_rows<PACKED>(ent.c, ent.lr);
            unsigned kn = k + (unsigned)(B << lg);
            const bool more = kn < cur.e;
            const bool next = more || first_of(nxt, kn); /* kn: the next window's first entry */
            if (next) {
                if (VALS == AMF_VALUES_AHEAD) amf_load_window<T, PACKED, CACHE>(ent, kn, nnz, cols, local, val);
                else amf_load_cols<T, PACKED, CACHE>(ent.c, ent.lr, kn, nnz, cols, local);
            }
            if (VALS == AMF_VALUES_AHEAD)
                amf_add<T, PACKED, ACC, false, sizeof(T) == 4>(a, now.v, xv, now.c, now.lr, 0u, k, cur.b, cur.e);
            else amf_add<T, PACKED, ACC, true, sizeof(T) == 4>(a, VALS == AMF_VALUES_GATHER ? v : ent.v, xv, now.c,
                                                                now.lr, rows, k, cur.b, cur.e);
            /* AFTER: the next window's values, now that this window's are used */
            if (VALS == AMF_VALUES_AFTER && next) amf_load_vals<T, CACHE>(ent.v, kn, nnz, val);
            if (!more) break;
            k = kn;
        }
        int rb, held, span;
        amf_butterfly<W, T, ACC>(a, lanes, l, rb, held, span);
        /* the fold's row end: the next group's first row, for the last group the next step's first */
        const int src = (lane + lanes) & (W - 1);
        const int r_next = port_shfl_idx<W>(cur.r, src), r_step = port_shfl_idx<W>(nxt.r, src);
        if (active && (l & (span - 1)) == 0) {
            const int rows = (g == side - 1 ? r_step : r_next) - cur.r;
#pragma unroll
            for (int i = 0; i < ACC; i++)
                if (i < held && rb + i < rows) amf_store(y, cur.r + rb + i, alpha, a[i], beta);
        }
        cur = nxt;
        nxt = later;
    }
}

/* MINB = 0: no register cap; MINB = 3 or 4 (options.amf_min_blocks): at least MINB blocks of 256 threads resident
 * on CUDA (at most 80 or 64 registers: 24 or 32 warps per multiprocessor keep that many more loads in flight).
 * VALS: when a window's values are loaded (see amf_sub_block). (MINB = 0 keeps the plain launch bounds:
 * __launch_bounds__(256, 1) alone costs registers.) */
template <int W, typename T, bool PACKED, int ACC, int MINB, int VALS, bool CACHE>
PORT_KERNEL void PORT_LAUNCH_BOUNDS_MIN(amf_block, MINB)
    amf_csr_kernel(int pieces, int subs, int piece_len, unsigned nnz, int units, int uni_k, int uni_lg,
                   const int *__restrict__ fold_row,
                   const int *__restrict__ fold_ptr, const unsigned *__restrict__ cols,
                   const unsigned char *__restrict__ local, const T *__restrict__ val,
                   const int *__restrict__ sub_unit, const unsigned char *__restrict__ sub_lanes,
                   const int *__restrict__ long_unit, const int *__restrict__ long_piece,
                   const int *__restrict__ piece_owner, T *__restrict__ long_part, int *__restrict__ long_count,
                   const T *__restrict__ x, T *__restrict__ y, T alpha, T beta)
{
    if (!port_warp_matches<W>()) return;
    PORT_SHARED T warp_sum[amf_block / W];
    const int b = (int)port_block_idx();
    if (b < pieces) { /* block-uniform branch: the block barrier inside is reached by every thread */
        amf_long_piece<W, T, PACKED>(b, piece_len, fold_row, fold_ptr, cols, val, long_unit, long_piece, piece_owner,
                                     long_part, long_count, warp_sum, x, y, alpha, beta);
        return;
    }
    const long long s = (long long)(b - pieces) * (amf_block / W) + port_thread_idx() / W;
    if (s >= subs) return; /* whole warps only */
    amf_sub_block<W, T, PACKED, ACC, VALS, CACHE>((int)s, nnz, units, uni_k, uni_lg, fold_row, fold_ptr, cols, local,
                                                  val, sub_unit, sub_lanes, x, y, alpha, beta);
}

/* One small window of AMF_SMALL_WINDOW entries [k, k + H) of the fold [b, e) (the one-step kernel with
 * AMF_P_STEP_WINDOW = AMF_SMALL_WINDOW): its columns, values and (packed) local rows, then the x of its slots
 * inside the fold, each product fused into its row's accumulator (a slot outside the fold takes local row ACC: no
 * accumulator). Written with the skip and the fused add: with a select of +0 instead, nvcc turned the per-row adds
 * into an indexed accumulator array in local memory (32 bytes of stack in f64, 1.7-2x slower; session 20). The
 * local rows are taken before the gathers: after them (with the column words kept live), the long-row variant of
 * the kernel needed 56 registers instead of 48 in f64 (circuit:5000000 0.1888 against 0.1718 ms). */
template <typename T, bool PACKED, int ACC, bool CACHE>
PORT_DEVICE void amf_small_window(T *a, unsigned k, unsigned b, unsigned e, unsigned nnz,
                                  const unsigned *__restrict__ cols, const unsigned char *__restrict__ local,
                                  const T *__restrict__ val, const T *__restrict__ x)
{
    constexpr int H = AMF_SMALL_WINDOW;
    amf_window<T, H> w;
    T xv[H];
    amf_load_window<T, PACKED, CACHE, H>(w, k, nnz, cols, local, val);
#pragma unroll
    for (int j = 0; j < H && PACKED; j++) w.lr[j] = (int)(w.c[j] & 3u);
    amf_gather<T, PACKED, H>(xv, w.c, k, b, e, x);
#pragma unroll
    for (int j = 0; j < H; j++) {
        const int r = k + j >= b && k + j < e ? w.lr[j] : ACC;
#pragma unroll
        for (int i = 0; i < ACC; i++)
            if (r == i) a[i] = fma(w.v[j], xv[j], a[i]);
    }
}

/* Uniform sub-blocks of one step (AMF_P_ONE_STEP, options.amf_one_step): warp s takes units [s G, s G + G),
 * G = W / L, one fold per group of L lanes, and nothing else: its folds' bounds (and row ends, loaded, not
 * shuffled; with regular folds, AMF_P_REGULAR_ROWS, computed from the unit's index: no load), then its entries
 * (columns and values in one round trip), then their x, the adds, the butterfly and the stores. That is
 * CSR-vector's chain of three round trips (two with regular folds), without the general kernel's step loop, bounds
 * two steps ahead, next-window loads, lane-0 shuffles and register cap: at the launch floor a warp lasts as long
 * as that serial path. Lane l takes, in the order of the CPU executor:
 *   BY_ENTRY false (AMF_P_ONE_STEP = 1)  windows l, l + L, ... of its fold (one where every fold spans at most L
 *                                        windows, what the builder picks for one wave of warps), as the general
 *                                        kernel does; windows of WB = AMF_P_STEP_WINDOW entries: 8 (AMF_BATCH),
 *                                        or 4 (amf_small_window), which in f64 needs 40 registers instead of 48
 *                                        (6 resident blocks instead of 5) and on short folds reads fewer slots
 *                                        outside the fold;
 *   BY_ENTRY true (AMF_P_ONE_STEP = 2)   entries l, l + L, ... of its fold, one at a time, each product fused into
 *                                        its row's accumulator. A window's slots cost their in-fold tests and one
 *                                        add per accumulator whether they hold an entry of the fold or not; on
 *                                        short, uneven folds (NotreDame_www: 7.4 entries, 2.6 rows) most of them do
 *                                        not (ncu, session 18: 501 warp instructions a warp of 16 folds against
 *                                        csr_vector's 98 a warp of 16 rows). By entry, a lane executes only the
 *                                        fold's own entries (the builder picks L for about 2 a lane): 13.7 -> 11.5
 *                                        us f64 there (H100, session 19), where the warps need many waves.
 * LONG (a plan with long rows, many waves of one-step warps by windows): blocks [0, pieces) take the long rows'
 * pieces as amf_csr_kernel's do, the others the sub-blocks, whose long units (one row of >= AMF_LONG_MIN entries)
 * are empty folds here. */
template <int W, typename T, bool PACKED, int ACC, bool CACHE, bool BY_ENTRY, bool LONG, int WB>
PORT_KERNEL void PORT_LAUNCH_BOUNDS(amf_block)
    amf_csr_step_kernel(int pieces, int piece_len, int subs, unsigned nnz, int units, int lg, int m, int reg_rows,
                        unsigned reg_entries, const int *__restrict__ fold_row, const int *__restrict__ fold_ptr,
                        const unsigned *__restrict__ cols, const unsigned char *__restrict__ local,
                        const T *__restrict__ val, const int *__restrict__ long_unit,
                        const int *__restrict__ long_piece, const int *__restrict__ piece_owner,
                        T *__restrict__ long_part, int *__restrict__ long_count, const T *__restrict__ x,
                        T *__restrict__ y, T alpha, T beta)
{
    constexpr int B = AMF_BATCH;
    if (!port_warp_matches<W>()) return;
    int blk = (int)port_block_idx();
    if (LONG) {
        PORT_SHARED T warp_sum[amf_block / W];
        if (blk < pieces) { /* block-uniform branch: the block barrier inside is reached by every thread */
            amf_long_piece<W, T, PACKED>(blk, piece_len, fold_row, fold_ptr, cols, val, long_unit, long_piece,
                                         piece_owner, long_part, long_count, warp_sum, x, y, alpha, beta);
            return;
        }
        blk -= pieces;
    }
    const long long s = (long long)blk * (amf_block / W) + port_thread_idx() / W;
    if (s >= subs) return; /* whole warps only: the shuffles below see the whole warp */
    const int lane = port_lane<W>();
    const int lanes = 1 << lg, l = lane & (lanes - 1);
    const long long u = s * (W >> lg) + (lane >> lg);
    const bool active = u < units;
    const int v = active ? (int)u : units; /* past the last unit: an empty fold */
    unsigned b, e0;
    int r0, rows0;
    if (reg_rows > 0) { /* regular folds (AMF_P_REGULAR_ROWS): bounds from v, no load; v <= units < 2^31 */
        const unsigned long long vb = (unsigned long long)v * reg_entries, vr = (unsigned long long)v * reg_rows;
        b = vb < nnz ? (unsigned)vb : nnz;
        e0 = active ? (nnz - b > reg_entries ? b + reg_entries : nnz) : b;
        r0 = vr < (unsigned long long)m ? (int)vr : m;
        rows0 = active ? (m - r0 > reg_rows ? reg_rows : m - r0) : 0;
    } else {
        b = (unsigned)port_ldg(fold_ptr + v), e0 = active ? (unsigned)port_ldg(fold_ptr + v + 1) : b;
        r0 = port_ldg(fold_row + v), rows0 = active ? port_ldg(fold_row + v + 1) - r0 : 0;
    }
    const bool long_unit_here = LONG && rows0 == 1 && e0 - b >= (unsigned)AMF_LONG_MIN; /* its pieces compute it */
    const unsigned e = long_unit_here ? b : e0;
    const int rows = long_unit_here ? 0 : rows0;
    T a[ACC];
#pragma unroll
    for (int i = 0; i < ACC; i++) a[i] = T(0);
    if (BY_ENTRY) { /* k < 2^31 + W: no wrap */
        for (unsigned k = b + (unsigned)l; k < e; k += (unsigned)lanes) {
            const unsigned c = amf_ld_window<CACHE>(cols + k);
            const T v = amf_ld_window<CACHE>(val + k);
            const int r = PACKED ? (int)(c & 3u) : (int)amf_ld_window<CACHE>(local + k);
            const T xv = port_ldg(x + (PACKED ? c >> 2 : c));
#pragma unroll
            for (int i = 0; i < ACC; i++)
                if (r == i) a[i] += v * xv;
        }
    }
    /* k < 2^31 + 8W: no wrap */
    for (unsigned k = (b / WB + (unsigned)l) * WB; !BY_ENTRY && b < e && k < e; k += (unsigned)(WB << lg)) {
        if (WB == AMF_SMALL_WINDOW) {
            amf_small_window<T, PACKED, ACC, CACHE>(a, k, b, e, nnz, cols, local, val, x);
            continue;
        }
        amf_window<T> w;
        T xv[B];
        amf_load_window<T, PACKED, CACHE>(w, k, nnz, cols, local, val);
        amf_gather<T, PACKED>(xv, w.c, k, b, e, x);
        amf_add<T, PACKED, ACC, false>(a, w.v, xv, w.c, w.lr, 0u, k, b, e);
    }
    int rb, held, span;
    amf_butterfly<W, T, ACC>(a, lanes, l, rb, held, span);
    if (active && (l & (span - 1)) == 0) {
#pragma unroll
        for (int i = 0; i < ACC; i++)
            if (i < held && rb + i < rows) amf_store(y, r0 + rb + i, alpha, a[i], beta);
    }
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
    if (prm[AMF_P_MIN_BLOCKS] != 0 && prm[AMF_P_MIN_BLOCKS] != 3 && prm[AMF_P_MIN_BLOCKS] != 4)
        return "min_blocks out of range";
    if (prm[AMF_P_VALUES] < AMF_VALUES_AFTER || prm[AMF_P_VALUES] > AMF_VALUES_GATHER) return "values out of range";
    if (prm[AMF_P_WINDOW_CACHE] != 0 && prm[AMF_P_WINDOW_CACHE] != 1) return "window_cache out of range";
    if (prm[AMF_P_VECTOR_LANES] != 0) { /* the CSR-vector layout: the row pointer, columns and values alone */
        const int64_t L = prm[AMF_P_VECTOR_LANES];
        if (L < 1 || L > warp || (L & (L - 1)) != 0 || prm[AMF_P_PACKED] != 0 || prm[AMF_P_UNITS] != fd->m ||
            prm[AMF_P_SUB_BLOCKS] != 0 || prm[AMF_P_LONG_ROWS] != 0 || prm[AMF_P_PIECES] != 0 ||
            fd->arrays[AMF_A_FOLD_PTR].bytes != ((size_t)fd->m + 1) * sizeof(int32_t) ||
            fd->arrays[AMF_A_COLS].bytes != nnz * sizeof(uint32_t) || fd->arrays[AMF_A_VALUES].bytes != nnz * vs)
            return "CSR-vector layout inconsistent with its parameters";
        return NULL;
    }
    if (prm[AMF_P_UNIFORM] < 0 || prm[AMF_P_UNIFORM] > INT32_MAX ||
        (prm[AMF_P_UNIFORM] > 0 && ((prm[AMF_P_LONG_ROWS] != 0 && prm[AMF_P_ONE_STEP] != 1) ||
                                    prm[AMF_P_UNIFORM_LANES] < 1 ||
                                    prm[AMF_P_UNIFORM_LANES] > 6 || (1 << prm[AMF_P_UNIFORM_LANES]) > warp ||
                                    prm[AMF_P_SUB_BLOCKS] != (prm[AMF_P_UNITS] + prm[AMF_P_UNIFORM] - 1) /
                                                                prm[AMF_P_UNIFORM])))
        return "uniform sub-blocks inconsistent with the layout";
    if (prm[AMF_P_STEP_WINDOW] != AMF_BATCH && (prm[AMF_P_STEP_WINDOW] != AMF_SMALL_WINDOW || prm[AMF_P_ONE_STEP] != 1))
        return "step window out of range";
    if (prm[AMF_P_REGULAR_ROWS] != 0 &&
        (prm[AMF_P_ONE_STEP] == 0 || prm[AMF_P_LONG_ROWS] != 0 || prm[AMF_P_REGULAR_ROWS] < 1 ||
         prm[AMF_P_REGULAR_ROWS] > AMF_MAX_FOLD || prm[AMF_P_REGULAR_ENTRIES] < 1 ||
         prm[AMF_P_REGULAR_ENTRIES] % prm[AMF_P_REGULAR_ROWS] != 0 ||
         (int64_t)fd->nnz != prm[AMF_P_REGULAR_ENTRIES] / prm[AMF_P_REGULAR_ROWS] * (int64_t)fd->m ||
         prm[AMF_P_UNITS] != ((int64_t)fd->m + prm[AMF_P_REGULAR_ROWS] - 1) / prm[AMF_P_REGULAR_ROWS]))
        return "regular folds inconsistent with the layout";
    if (prm[AMF_P_ONE_STEP] != 0 && (prm[AMF_P_ONE_STEP] < 0 || prm[AMF_P_ONE_STEP] > 2 ||
                                     prm[AMF_P_UNIFORM] != (warp >> prm[AMF_P_UNIFORM_LANES])))
        return "one-step kernel without one-step uniform sub-blocks";
    if (fd->arrays[AMF_A_FOLD_ROW].bytes != ((size_t)prm[AMF_P_UNITS] + 1) * sizeof(int32_t) ||
        fd->arrays[AMF_A_FOLD_PTR].bytes != ((size_t)prm[AMF_P_UNITS] + 1) * sizeof(int32_t) ||
        fd->arrays[AMF_A_COLS].bytes != nnz * sizeof(uint32_t) || fd->arrays[AMF_A_VALUES].bytes != nnz * vs ||
        fd->arrays[AMF_A_LOCAL_ROW].bytes != (prm[AMF_P_PACKED] ? 0 : nnz) ||
        fd->arrays[AMF_A_SUB_UNIT].bytes != 2 * (size_t)prm[AMF_P_SUB_BLOCKS] * sizeof(int32_t) ||
        fd->arrays[AMF_A_SUB_LANES].bytes != (size_t)prm[AMF_P_SUB_BLOCKS] ||
        fd->arrays[AMF_A_LONG_UNIT].bytes != (size_t)prm[AMF_P_LONG_ROWS] * sizeof(int32_t) ||
        fd->arrays[AMF_A_LONG_PIECE].bytes != ((size_t)prm[AMF_P_LONG_ROWS] + 1) * sizeof(int32_t) ||
        fd->arrays[AMF_A_PIECE_OWNER].bytes != (size_t)prm[AMF_P_PIECES] * sizeof(int32_t) ||
        fd->arrays[AMF_A_LONG_PART].bytes != (size_t)prm[AMF_P_PIECES] * vs ||
        fd->arrays[AMF_A_LONG_COUNT].bytes != (size_t)prm[AMF_P_LONG_ROWS] * sizeof(int32_t))
        return "amf_csr array sizes inconsistent with its parameters";
    return NULL;
}

/* y = alpha*A*x + beta*y on stream s. Plan: anything with `fd` (the format data) and `arrays` (device copies of
 * fd's arrays, in fd's order; NULL for empty ones), e.g. the backend's gpu_plan. Launches the main kernel (grid
 * AMF_P_GRID blocks of amf_block threads, no dynamic shared memory), one launch. The caller checks the launch
 * error. */
template <int W, typename T, typename Plan>
void launch_amf_csr(const Plan *p, double alpha_d, const void *xv, double beta_d, void *yv, port_stream_t s)
{
    const spmvport_format_data *fd = p->fd;
    const int64_t *prm = fd->params;
    const T alpha = (T)alpha_d, beta = (T)beta_d;
    const int pieces = (int)prm[AMF_P_PIECES], subs = (int)prm[AMF_P_SUB_BLOCKS];
    const int piece_len = (int)prm[AMF_P_PIECE], fold_max = (int)prm[AMF_P_FOLD_MAX];
    const int units = (int)prm[AMF_P_UNITS];
    const int uni_k = (int)prm[AMF_P_UNIFORM], uni_lg = (int)prm[AMF_P_UNIFORM_LANES];
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
    int *long_count = (int *)p->arrays[AMF_A_LONG_COUNT];
    const T *x = (const T *)xv;
    T *y = (T *)yv;
    if (grid == 0) return; /* m == 0 */
    /* one instantiation per (packed, accumulators, register cap, value loads, window cache): ACC = the power of two
     * >= fold_max; the cache mode is a template parameter, not a runtime flag, because the flag's two loads cost
     * fem3d:3:48 f32 2.5% where it streams (H100, session 14) */
    const int64_t min_blocks = prm[AMF_P_MIN_BLOCKS], values = prm[AMF_P_VALUES];
    const bool cache = prm[AMF_P_WINDOW_CACHE] != 0;
    auto launch_main = [&](auto packed, auto acc, auto cached) {
        constexpr bool P = decltype(packed)::value, C = decltype(cached)::value;
        constexpr int A = decltype(acc)::value;
        auto go = [&](auto minb, auto vals) {
            PORT_LAUNCH(grid, amf_block, 0, s,
                        amf_csr_kernel<W, T, P, A, decltype(minb)::value, decltype(vals)::value, C>)
            (pieces, subs, piece_len, (unsigned)fd->nnz, units, uni_k, uni_lg, fold_row, fold_ptr, cols, local, val,
             sub_unit, sub_lanes, long_unit, long_piece, piece_owner, long_part, long_count, x, y, alpha, beta);
        };
        auto by_vals = [&](auto minb) {
            if (values == AMF_VALUES_AHEAD) go(minb, std::integral_constant<int, AMF_VALUES_AHEAD>());
            else if (values == AMF_VALUES_GATHER) go(minb, std::integral_constant<int, AMF_VALUES_GATHER>());
            else go(minb, std::integral_constant<int, AMF_VALUES_AFTER>());
        };
        if (min_blocks == 3) by_vals(std::integral_constant<int, 3>());
        else if (min_blocks == 4) by_vals(std::integral_constant<int, 4>());
        else by_vals(std::integral_constant<int, 0>());
    };
    auto launch_step = [&](auto packed, auto acc, auto cached) { /* one-step uniform plans (long rows: see LONG) */
        auto go = [&](auto by_entry, auto with_long, auto wb) {
            PORT_LAUNCH(grid, amf_block, 0, s,
                        amf_csr_step_kernel<W, T, decltype(packed)::value, decltype(acc)::value,
                                            decltype(cached)::value, decltype(by_entry)::value,
                                            decltype(with_long)::value, decltype(wb)::value>)
            (pieces, piece_len, subs, (unsigned)fd->nnz, units, uni_lg, (int)fd->m, (int)prm[AMF_P_REGULAR_ROWS],
             (unsigned)prm[AMF_P_REGULAR_ENTRIES], fold_row, fold_ptr, cols, local, val,
             long_unit, long_piece, piece_owner, long_part, long_count, x, y, alpha, beta);
        };
        auto by_window = [&](auto with_long) {
            if (prm[AMF_P_STEP_WINDOW] == AMF_SMALL_WINDOW)
                go(std::false_type(), with_long, std::integral_constant<int, AMF_SMALL_WINDOW>());
            else go(std::false_type(), with_long, std::integral_constant<int, AMF_BATCH>());
        };
        /* by entries only without long rows (the builder's rule); by windows with or without */
        if (prm[AMF_P_ONE_STEP] == 2) go(std::true_type(), std::false_type(), std::integral_constant<int, AMF_BATCH>());
        else if (pieces > 0) by_window(std::true_type());
        else by_window(std::false_type());
    };
    auto by_kernel = [&](auto packed, auto acc, auto cached) {
        if (prm[AMF_P_ONE_STEP]) launch_step(packed, acc, cached);
        else launch_main(packed, acc, cached);
    };
    auto pick = [&](auto packed, auto acc) {
        if (cache) by_kernel(packed, acc, std::true_type());
        else by_kernel(packed, acc, std::false_type());
    };
    auto by_acc = [&](auto packed) {
        if (fold_max <= 1) pick(packed, std::integral_constant<int, 1>());
        else if (fold_max == 2) pick(packed, std::integral_constant<int, 2>());
        else pick(packed, std::integral_constant<int, AMF_MAX_FOLD>());
    };
    if (prm[AMF_P_PACKED]) by_acc(std::true_type());
    else by_acc(std::false_type());
}

} /* namespace */

#endif /* SPMVPORT_DEVICE_AMF_CSR_KERNELS_H */
