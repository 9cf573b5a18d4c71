/*
 * hbp_kernels.h -- format hbp's kernels (hash-based 2-D partition), written once for CUDA and HIP, every warp
 * size W and precision T. Layout: src/common/format_hbp.h and docs/formats/hbp.md. They walk the arrays as
 * src/cpu_ref/hbp_executor.c does:
 *
 *   hbp_spmv_kernel    HBP_CTA_THREADS threads per block. Block c runs its fixed tasks [c*q, (c+1)*q), then
 *                      takes tasks q*grid + ticket (an atomic on sched[0]) until they run out (q =
 *                      params[HBP_P_FIXED]); with no more
 *                      tasks than blocks, block c runs task c alone (small matrices: the tickets' and the done
 *                      counter's atomics would be most of the time). Per task: the
 *                      block copies the task's x window into shared memory (when the task is staged, between
 *                      two barriers; unstaged tasks have none), then its warps take the task's units in turn,
 *                      each loading the next unit's lengths and outputs ahead:
 *                        a group (2..W slots): lane l sums its segment; at step j the lanes with len > j read the
 *                          next entries in lane order, at p + (active lanes below l) (a ballot), p += active; in a
 *                          uniform group (every segment as long, by the header) at p + l, with no ballot;
 *                        a long unit (1 slot): lane l sums entries l, l+W, ...; a shuffle-down tree adds them;
 *                        both S steps per trip (8, 4 or 2, params[HBP_P_STEPS]), pipelined over the warp's units:
 *                          the next trip's entries (of this unit or the next) are loaded after this trip's x reads
 *                          (products in step order: the same sums as one entry at a time, whatever S);
 *                          lane 0 asks L2 for the entries params[HBP_P_PREFETCH] trips beyond (a hint, sm_90).
 *                      With hot columns (HBP_A_HOT not empty, no task staged) the block first copies x at
 *                      them into shared memory, and a column c < 0 reads that copy at -1 - c; with the global
 *                      copy (HBP_A_HOT_X not empty) hot_gather_kernel has written it before, once per call,
 *                      and a column c < 0 reads HBP_A_HOT_X at -1 - c.
 *                      With staged y (the task's HBP_T_Y_LEN > 0, options.hbp_y_stage) a warp group's row
 *                      with one segment puts its sum into shared memory instead, and after a barrier the block
 *                      writes the task's rows in order (hbp_run_task_y).
 *                      Outputs: the row's only segment stores alpha*sum + beta*y; other segments write their
 *                      partial (combine 1) or atomically add alpha*sum (combine 2). With few partials
 *                      (hbp_counted_combine) the writer of a fix row's last partial sums the row into y
 *                      (hbp_store_partial), so no combine pass runs. The block that finishes last (done counter
 *                      sched[1]) resets both counters: every call starts from zero.
 *                      Before its tasks every block writes a strided share of the empty rows (no segment).
 *   hbp_combine_kernel combine 1, after, when the partials are many: each fix row past the empty ones sums its
 *                      partials in column-block order.
 *   hbp_scale_kernel   combine 2, before: each fix row past the empty ones y = beta*y (0 when beta == 0), for the
 *                      atomics.
 *   Without tasks (no entries) the combine or scale pass writes the empty rows too.
 * With beta == 0, y is never read. Everything has internal linkage (anonymous namespace).
 */
#ifndef SPMVPORT_DEVICE_HBP_KERNELS_H
#define SPMVPORT_DEVICE_HBP_KERNELS_H

#include "port.h"
#include "backend.h"
#include "csr_kernels.h" /* hot_gather_kernel: the global hot copy is gathered as csr_lb's */
#include "format_hbp.h"

namespace {

constexpr int hbp_cta = HBP_CTA_THREADS;

/* The device arrays one call reads and writes. */
template <typename T>
struct hbp_args {
    const void *col; /* uint16 or int32 local columns (col_bytes): the kernel's Col */
    const uint16_t *seg_len, *seg_out; /* seg_out: a narrow unit's 16-bit outputs (format_hbp.h) */
    const T *val;
    const int *unit_info, *wide_out, *task, *hot, *fix_row; /* unit_info: the unit headers (unit_ptr, unit_slot
                                                                are the host's copy) */
    T *partial;
    int *sched;
    const T *x;
    T *y;
    T alpha, beta;
    int combine;
    int prefetch; /* params[HBP_P_PREFETCH]: trips prefetched beyond the loaded one (0: none) */
    int nhot;     /* HBP_NHOT: hot columns, x at them copied into shared memory (0: none) */
    const T *hot_x; /* the global hot copy (HBP_HOT_GLOBAL; NULL: the copy is in shared memory) */
    int nnz;
    int nempty;   /* params[HBP_P_NEMPTY]: empty rows, fix_row[0, nempty), written by the SpMV kernel */
    const int *part_ptr, *part_fix; /* combine 1: a fix row's partials; a partial's fix row (NULL: a combine pass) */
    int *fix_count;                 /* combine 1: partials written per fix row past the empty ones */
};

/* y[r] = alpha * sum + beta * y[r]; y is not read when beta == 0 */
template <typename T>
PORT_DEVICE void hbp_write_row(T *y, int r, T alpha, T sum, T beta)
{
    y[r] = beta == T(0) ? alpha * sum : alpha * sum + beta * y[r];
}

/* combine 1 for fix row f: y[r] = alpha * (sum of its partials, in column-block order) + beta * y[r]. Coherent:
 * other thread blocks of this kernel wrote the partials (the counted combine, hbp_store_partial) */
template <bool Coherent, typename T>
PORT_DEVICE void hbp_combine_row(int f, const int *fix_row, const int *part_ptr, const T *partial, T *y, T alpha,
                                 T beta)
{
    const T sum = port_ordered_sum<Coherent>(partial, port_ldg(part_ptr + f), port_ldg(part_ptr + f + 1), 1);
    hbp_write_row(y, port_ldg(fix_row + f), alpha, sum, beta);
}

/* combine 2, before the atomics, for fix row f: y[r] = beta * y[r] (0 when beta == 0: y is not read) */
template <typename T>
PORT_DEVICE void hbp_scale_row(int f, const int *fix_row, T *y, T beta)
{
    const int r = port_ldg(fix_row + f);
    y[r] = beta == T(0) ? T(0) : beta * y[r];
}

/* Partial t of fix row f. The lane that writes the row's last partial (a count per fix row) sums them into y, so
 * no combine pass waits for the whole kernel: the fence puts each partial before its count, the counts are
 * atomics, and the sum reads the partials from L2. The count goes back to zero for the next call. */
template <typename T>
PORT_DEVICE void hbp_store_partial(const hbp_args<T> &a, int t, T sum)
{
    a.partial[t] = sum;
    port_threadfence();
    const int f = port_ldg(a.part_fix + t);
    const int parts = port_ldg(a.part_ptr + f + 1) - port_ldg(a.part_ptr + f);
    int *count = a.fix_count + (f - a.nempty);
    if (port_atomic_add(count, 1) != parts - 1) return;
    *count = 0;
    port_threadfence();
    hbp_combine_row<true>(f, a.fix_row, a.part_ptr, a.partial, a.y, a.alpha, a.beta);
}

template <typename T>
PORT_DEVICE void hbp_store(const hbp_args<T> &a, int out, T sum)
{
    if (out >= 0) hbp_write_row(a.y, out, a.alpha, sum, a.beta);
    else if (a.part_fix != nullptr) hbp_store_partial(a, -1 - out, sum); /* counted combine 1 */
    else if (a.combine == HBP_COMBINE_PARTIALS) a.partial[-1 - out] = sum;
    else port_atomic_add(a.y + (-1 - out), a.alpha * sum);
}

/* A task's staged y range (HBP_T_Y_LO, HBP_T_Y_LEN) in shared memory: the sums of rows [lo, lo + len) and a
 * byte a row saying a unit wrote it (rows with no segment or several keep their own paths: empty rows, partials,
 * atomics) */
template <typename T>
struct hbp_ystage {
    T *sum;
    unsigned char *written;
    int lo;
};

/* A warp group's output: with staged y (YS) a row's only segment goes to shared memory, the rest as hbp_store.
 * Long units store their rows themselves (one lane each), so the builder can cut tasks among them. */
template <bool YS, typename T>
PORT_DEVICE void hbp_put(const hbp_args<T> &a, hbp_ystage<T> ys, int out, T sum)
{
    if (YS && out >= 0) {
        ys.sum[out - ys.lo] = sum;
        ys.written[out - ys.lo] = 1;
        return;
    }
    hbp_store(a, out, sum);
}

/* The empty rows, a strided share per thread block, as the pass of the combine mode writes them: combine 1 sums
 * their (no) partials, alpha*0 + beta*y; combine 2 scales, beta*y. Written here, before the block's tasks, they
 * need no launch of their own: on a matrix at the launch floor with many empty rows (NotreDame_www: 58%) that
 * launch was the combine kernel's only work. */
template <typename T>
PORT_DEVICE void hbp_empty_rows(const hbp_args<T> &a)
{
    const long long stride = (long long)port_grid_dim() * hbp_cta;
    for (long long f = (long long)port_block_idx() * hbp_cta + port_thread_idx(); f < a.nempty; f += stride) {
        if (a.combine == HBP_COMBINE_PARTIALS) hbp_write_row(a.y, port_ldg(a.fix_row + f), a.alpha, T(0), a.beta);
        else hbp_scale_row((int)f, a.fix_row, a.y, a.beta);
    }
}

/* x as a task sees it: its window in shared memory (local column - lo), or global memory (xbase + local), or
 * with hot columns global memory and, for a column c < 0, the hot copy at -1 - c: in shared memory (HOT) or the
 * global one (HOT_GLOBAL, through the read-only cache). */
enum { HBP_X_GLOBAL = 0, HBP_X_STAGED = 1, HBP_X_HOT = 2, HBP_X_HOT_GLOBAL = 3 };

template <typename T, int Mode>
struct hbp_xview {
    const T *p, *hot; /* p: x + xbase, the window (STAGED), or x itself (HOT_GLOBAL) */
    int off;          /* added to a column: -(window's first column) (STAGED), xbase (HOT_GLOBAL), else 0 */
    PORT_DEVICE T operator()(int local) const
    {
        if (Mode == HBP_X_STAGED) return p[local + off];
        if (Mode == HBP_X_HOT && local < 0) return hot[-1 - local];
        /* one load, its index selected as an int, then one widening multiply-add: with the pointers x + xbase and
         * hot + (-1 - c) the compiler built both 64-bit addresses under predicates and branched around the read
         * (H200 run V1); 3-4% faster in f64, 6-13% in f32 on kron:19:8-20:8 (run W2). Only here: an int index on
         * every read cost 0.5-1% on the plans without the global copy (run W1). */
        if (Mode == HBP_X_HOT_GLOBAL) return port_ldg((local < 0 ? hot : p) + (local < 0 ? -1 - local : local + off));
        return port_ldg(p + local);
    }
};

/* A unit's header (HBP_A_UNIT_INFO, one 16-byte load): first entry, first slot, shape (slot count: 1 a long
 * unit; the slots' common length or -1) and output base (a narrow unit's first row, or -1 - its first wide
 * output). */
struct hbp_head {
    int p0, s0, shape, out;
    PORT_DEVICE int lanes() const { return HBP_SHAPE_LANES(shape); }
    PORT_DEVICE int common() const { return HBP_SHAPE_LEN(shape); }
};

template <typename T>
PORT_DEVICE hbp_head hbp_load_head(const hbp_args<T> &a, int u)
{
    typedef typename port_vec<int, 4>::type ivec;
    const ivec v = port_ldg(reinterpret_cast<const ivec *>(a.unit_info) + u);
    return hbp_head{port_vec_get(v, HBP_U_PTR), port_vec_get(v, HBP_U_SLOT), port_vec_get(v, HBP_U_SHAPE),
                    port_vec_get(v, HBP_U_OUT)};
}

/* What a lane loads a unit ahead for its slot (a long unit's one slot for every lane; in a group the lane's own,
 * none past the unit's slots): seg_len unless the header gives the length, and a narrow unit's 16-bit row offset
 * or a wide unit's output_hash. Only the loaded values themselves: the length and the row (hbp_lane_count,
 * hbp_lane_out) are made from them where they are used, a trip later. A value computed here would wait for its
 * load before the warp's next trip is issued (the loop carries it), one memory round trip a unit: on
 * circuit:5000000, a unit a trip, that made the kernel 3.5% slower (runs DA, DC). Streaming loads: read once. */
struct hbp_lane {
    int len, off;
};

template <int W, typename T>
PORT_DEVICE hbp_lane hbp_load_lane(const hbp_args<T> &a, hbp_head h, int lane)
{
    const int lanes = h.lanes();
    hbp_lane r{0, 0};
    if (lanes != 1 && lane >= lanes) return r;
    const int l = lanes == 1 ? 0 : lane, s = h.s0 + l;
    if (h.common() < 0) r.len = port_ld_stream(a.seg_len + s);
    if (h.out >= 0) r.off = port_ld_stream(a.seg_out + s);
    else r.off = port_ld_stream(a.wide_out + (-1 - h.out + l));
    return r;
}

/* The output_hash of the lane's slot (hbp_slot_output). */
PORT_DEVICE int hbp_lane_out(hbp_head h, hbp_lane l) { return h.out >= 0 ? h.out + l.off : l.off; }

/* Whether a unit is a uniform group (hbp_load_steps): its header gives its slots' common length. */
PORT_DEVICE bool hbp_uniform(hbp_head h) { return h.lanes() != 1 && h.common() >= 0; }

/* The entries a lane sums in a unit: a long unit's lane l takes l, l + W, ... of its segment; a group's lane its
 * segment. */
template <int W>
PORT_DEVICE int hbp_lane_count(hbp_head h, hbp_lane l, int lane)
{
    const int len = h.common() >= 0 ? h.common() : l.len;
    if (h.lanes() != 1) return lane < h.lanes() ? len : 0;
    return lane < len ? (len - lane + W - 1) / W : 0;
}

/* A lane's entries of steps [j, j + S) of a unit into c and v (streaming loads: read once, the caches are
 * left to x). The lane's k-th entry is at
 *   long unit      p0 + lane + k W;
 *   group          p0 + (entries of the steps before k) + (lanes below with an entry at step k): p is the
 *                  group's first entry of step j, advanced past the steps here, one ballot per step;
 *   uniform group  (every lane's segment as long, as the unit's header says: hbp_uniform) the same without
 *                  the ballots: p + (k - j) lanes + lane. The hash's groups mostly are (circuit:5000000: std 0.08
 *                  per warp).
 * The whole warp calls it. */
template <int W, int S, typename T, typename Col>
PORT_DEVICE void hbp_load_steps(const hbp_args<T> &a, hbp_head h, bool uni, int n, int lane,
                                port_lane_mask_t below_or_me, int j, int &p, Col (&c)[S], T (&v)[S])
{
    const Col *col = static_cast<const Col *>(a.col);
    if (h.lanes() == 1) { /* the three cases apart, so that no step tests which one it is */
        /* a long unit: one address a trip, then constant offsets k W, so that no load rebuilds its 64-bit address
         * from the kernel's parameters (H200 run V1: 6 instructions a load). For uniform groups too it ran 1%
         * faster on some kron graphs, 1% slower on others, 13% more instructions on circuit (run W2): not kept. */
        const int e0 = h.p0 + lane + j * W, left = n - j;
        const Col *cp = col + e0;
        const T *vp = a.val + e0;
#pragma unroll
        for (int k = 0; k < S; k++) {
            c[k] = left > k ? port_ld_stream(cp + k * W) : Col(0);
            v[k] = left > k ? port_ld_stream(vp + k * W) : T(0);
        }
        return;
    }
    int e[S];
    if (uni) {
#pragma unroll
        for (int k = 0; k < S; k++) e[k] = p + k * h.lanes() + lane;
        p += S * h.lanes();
    } else {
#pragma unroll
        for (int k = 0; k < S; k++) {
            const port_lane_mask_t act = port_ballot<W>(n > j + k);
            e[k] = p + port_popc(act & below_or_me) - 1;
            p += port_popc(act);
        }
    }
#pragma unroll
    for (int k = 0; k < S; k++) {
        c[k] = n > j + k ? port_ld_stream(col + e[k]) : Col(0);
        v[k] = n > j + k ? port_ld_stream(a.val + e[k]) : T(0);
    }
}

/* Lane 0 asks L2 for the entries [from, from + trips S W) (clipped to the arrays). Called with the entries past
 * the trip whose loads were just issued: when the warp loads them a trip (or more) later they come from L2, not
 * DRAM, as if the lane had 1 + prefetch trips of loads in flight but without their registers. A trip moves at
 * most S W entries and its entries follow the previous trip's, so windows taken every trip leave no gap. What
 * lies past the unit's end is the next units' (other warps', soon): no waste. */
template <int W, int S, typename T, typename Col>
PORT_DEVICE void hbp_prefetch(const hbp_args<T> &a, int from, int trips, int lane)
{
    if (lane != 0 || trips <= 0 || from < 0 || from >= a.nnz) return; /* from < 0: past INT32_MAX, wrapped */
    const int want = trips * S * W;
    const int n = a.nnz - from < want ? a.nnz - from : want;
    port_prefetch_l2(static_cast<const Col *>(a.col) + from, (size_t)n * sizeof(Col));
    port_prefetch_l2(a.val + from, (size_t)n * sizeof(T));
}

/* The block's warps take the task's units in turn (warp w: begin + w, + warps, ...). Every lane sums its entries
 * of a unit in order, S steps per trip (8, 4 or 2), and the trips of the warp's units form one software pipeline: a
 * trip issues its x reads, then the entries of the next trip (of this unit, or the first trip of the warp's next
 * unit), then adds its products in step order, and the unit that ends stores its sums. A lane so has 2 S
 * column/value loads and S x reads in flight, and a trip waits for one load (x) instead of two (column, then x),
 * across unit boundaries too: a warp's time is about its trips (S = 8 halves them, docs/formats/hbp.md). Headers
 * are loaded two units ahead and seg_len/output_hash one unit ahead, so no unit starts with a chain of dependent
 * loads. No barrier: a warp goes on to the next task's units
 * (or the ticket) as soon as its own are done. */
template <int W, int S, typename T, typename Col, int Mode, bool YS = false>
PORT_DEVICE void hbp_task_units(const hbp_args<T> &a, int begin, int end, hbp_xview<T, Mode> xs,
                                hbp_ystage<T> ys = hbp_ystage<T>{nullptr, nullptr, 0})
{
    constexpr int warps = hbp_cta / W;
    const int warp = (int)(port_thread_idx() / W), lane = port_lane<W>();
    const port_lane_mask_t below_or_me = port_lanemask_le<W>(lane);
    int u = begin + warp;
    if (u >= end) return;
    /* A unit past the task's end is never used (the loop ends first): a constant, not the unit before, so that
     * the three header loads issue together. With the unit before as the default, each load waited for the one
     * before it (its value was copied first): a chain of three memory round trips per warp and task, where the
     * profile of kron:18:8 f64 (H200 run X2) sampled 7% of the kernel's stalls. */
    const hbp_head none{0, 0, 0, 0};
    hbp_head h = hbp_load_head(a, u);                                       /* the unit being loaded */
    hbp_head hn = u + warps < end ? hbp_load_head(a, u + warps) : none;     /* the next one */
    hbp_head h2 = u + 2 * warps < end ? hbp_load_head(a, u + 2 * warps) : none; /* the one after */
    hbp_lane l = hbp_load_lane<W>(a, h, lane);
    int n = hbp_lane_count<W>(h, l, lane), p = h.p0, step = 0;
    bool uni = hbp_uniform(h);
    Col c[S];
    T v[S];
    hbp_load_steps<W, S, T, Col>(a, h, uni, n, lane, below_or_me, 0, p, c, v);
    /* prefetch: this unit's trips after the first, then every trip the one `prefetch` trips beyond its loads;
     * and at each unit's start the next unit's first trips */
    hbp_prefetch<W, S, T, Col>(a, h.lanes() == 1 ? h.p0 + S * W : p, a.prefetch, lane);
    if (u + warps < end) hbp_prefetch<W, S, T, Col>(a, hn.p0, a.prefetch, lane);
    hbp_lane ln = u + warps < end ? hbp_load_lane<W>(a, hn, lane) : hbp_lane{0, 0};
    T sum = T(0);
    for (;;) {
        T xv[S], cur[S];
#pragma unroll
        for (int k = 0; k < S; k++) {
            xv[k] = n > step + k ? xs((int)c[k]) : T(0);
            cur[k] = v[k];
        }
        /* this trip's unit */
        const int cur_n = n, cur_step = step, cur_lanes = h.lanes(), cur_out = hbp_lane_out(h, l);
        const bool more = port_ballot<W>(n > step + S) != 0;
        if (more) { /* the unit's next trip */
            step += S;
            hbp_load_steps<W, S, T, Col>(a, h, uni, n, lane, below_or_me, step, p, c, v);
            hbp_prefetch<W, S, T, Col>(a, (h.lanes() == 1 ? h.p0 + (step + S) * W : p) + (a.prefetch - 1) * S * W,
                                       a.prefetch > 0 ? 1 : 0, lane);
        } else {
            u += warps;
            if (u < end) { /* the first trip of the warp's next unit */
                h = hn;
                l = ln;
                hn = h2;
                n = hbp_lane_count<W>(h, l, lane);
                uni = hbp_uniform(h);
                p = h.p0;
                step = 0;
                hbp_load_steps<W, S, T, Col>(a, h, uni, n, lane, below_or_me, 0, p, c, v);
                hbp_prefetch<W, S, T, Col>(a, h.lanes() == 1 ? h.p0 + S * W : p, a.prefetch, lane);
                if (u + warps < end) {
                    hbp_prefetch<W, S, T, Col>(a, hn.p0, a.prefetch, lane);
                    ln = hbp_load_lane<W>(a, hn, lane);
                }
                if (u + 2 * warps < end) h2 = hbp_load_head(a, u + 2 * warps);
            }
        }
#pragma unroll
        for (int k = 0; k < S; k++)
            if (cur_n > cur_step + k) sum += cur[k] * xv[k];
        if (!more) { /* the unit of this trip is done */
            if (cur_lanes == 1) { /* a long unit: shuffle-down tree */
                for (int off = W >> 1; off > 0; off >>= 1) sum += port_shfl_down<W>(sum, off);
                if (lane == 0) hbp_store(a, cur_out, sum); /* one store a unit: never staged */
            } else if (lane < cur_lanes) {
                hbp_put<YS>(a, ys, cur_out, sum);
            }
            sum = T(0);
            if (u >= end) break;
        }
    }
}

/* A task with staged y (one column block: x global, or the global hot copy): the written bytes cleared between
 * two barriers (the first: the previous task's writes of y have read them), the units' rows summed into shared
 * memory, then after a barrier the block writes the range's written rows in order, y read (beta != 0) and written
 * a sector at a time where the units' stores would touch a row here and a row there. */
template <int W, int S, typename T, typename Col>
PORT_DEVICE void hbp_run_task_y(const hbp_args<T> &a, int begin, int end, int xbase, int ylo, int ylen, T *window)
{
    const hbp_ystage<T> ys{window, reinterpret_cast<unsigned char *>(window + ylen), ylo};
    port_block_sync();
    for (int i = (int)port_thread_idx(); i < ylen; i += hbp_cta) ys.written[i] = 0;
    port_block_sync();
    bool done = false;
    if constexpr (Col(-1) < Col(0)) { /* the global hot copy: signed (int) columns only */
        if (a.nhot > 0) {
            hbp_task_units<W, S, T, Col, HBP_X_HOT_GLOBAL, true>(
                a, begin, end, hbp_xview<T, HBP_X_HOT_GLOBAL>{a.x, a.hot_x, xbase}, ys);
            done = true;
        }
    }
    if (!done)
        hbp_task_units<W, S, T, Col, HBP_X_GLOBAL, true>(a, begin, end,
                                                         hbp_xview<T, HBP_X_GLOBAL>{a.x + xbase, window, 0}, ys);
    port_block_sync();
    for (int i = (int)port_thread_idx(); i < ylen; i += hbp_cta)
        if (ys.written[i]) hbp_write_row(a.y, ylo + i, a.alpha, ys.sum[i], a.beta);
}

/* One task. A staged task copies its x window into shared memory between two barriers (the first: every warp
 * is done with the previous window); a task with staged y has three (hbp_run_task_y); others none at all. */
template <int W, int S, typename T, typename Col>
PORT_DEVICE void hbp_run_task(const hbp_args<T> &a, int t, T *window)
{
    const int *rec = a.task + (long long)t * HBP_TASK_INTS;
    const int begin = port_ldg(rec + HBP_T_UNIT_BEGIN), end = port_ldg(rec + HBP_T_UNIT_END);
    const int xbase = port_ldg(rec + HBP_T_XBASE), lo = port_ldg(rec + HBP_T_STAGE_LO);
    const int len = port_ldg(rec + HBP_T_STAGE_LEN), ylen = port_ldg(rec + HBP_T_Y_LEN);
    if (ylen > 0) { /* the same for the whole block, as len */
        hbp_run_task_y<W, S, T, Col>(a, begin, end, xbase, port_ldg(rec + HBP_T_Y_LO), ylen, window);
        return;
    }
    if (len > 0) { /* the same for the whole block: t is */
        port_block_sync();
        for (int i = (int)port_thread_idx(); i < len; i += hbp_cta) window[i] = port_ldg(a.x + xbase + lo + i);
        port_block_sync();
        hbp_task_units<W, S, T, Col, HBP_X_STAGED>(a, begin, end, hbp_xview<T, HBP_X_STAGED>{window, window, -lo});
        return;
    }
    if constexpr (Col(-1) < Col(0)) { /* hot columns: signed (int) columns only */
        if (a.nhot > 0 && a.hot_x != nullptr) {
            hbp_task_units<W, S, T, Col, HBP_X_HOT_GLOBAL>(a, begin, end,
                                                           hbp_xview<T, HBP_X_HOT_GLOBAL>{a.x, a.hot_x, xbase});
            return;
        }
        if (a.nhot > 0) {
            hbp_task_units<W, S, T, Col, HBP_X_HOT>(a, begin, end, hbp_xview<T, HBP_X_HOT>{a.x + xbase, window, 0});
            return;
        }
    }
    hbp_task_units<W, S, T, Col, HBP_X_GLOBAL>(a, begin, end, hbp_xview<T, HBP_X_GLOBAL>{a.x + xbase, window, 0});
}

template <int W, int S, typename T, typename Col, int Ctas>
PORT_KERNEL void PORT_LAUNCH_BOUNDS_MIN(hbp_cta, Ctas)
    hbp_spmv_kernel(hbp_args<T> a, int ntasks, int fixed)
{
    if (!port_warp_matches<W>()) return;
    PORT_SHARED int next_task[2];
    T *window = port_dynamic_shared<T>();
    const int cta = (int)port_block_idx(), grid = (int)port_grid_dim();
    hbp_empty_rows(a);
    if (a.nhot > 0 && a.hot_x == nullptr) { /* the shared hot copy, for every task of the block (none is staged) */
        for (int i = (int)port_thread_idx(); i < a.nhot; i += hbp_cta)
            window[i] = port_ldg(a.x + port_ldg(a.hot + i));
        port_block_sync();
    }
    if (ntasks <= grid) { /* a task per block (the launch's grid is at most ntasks): no ticket, no counter */
        if (cta < ntasks) hbp_run_task<W, S, T, Col>(a, cta, window);
        return;
    }
    for (int i = 0; i < fixed; i++) hbp_run_task<W, S, T, Col>(a, cta * fixed + i, window);
    const int first = fixed * grid; /* the competitive part */
    /* One barrier per ticket, two slots used in turn: thread 0 writes ticket i's slot before barrier i; a warp
     * reads it after barrier i, before barrier i + 1, and thread 0 writes that slot again only after i + 1. */
    for (int k = 0;; k ^= 1) {
        if (port_thread_idx() == 0) next_task[k] = first + port_atomic_add(a.sched, 1);
        port_block_sync();
        const int t = next_task[k];
        if (t >= ntasks) break;
        hbp_run_task<W, S, T, Col>(a, t, window);
    }
    /* Thread 0 took its last ticket before this add (it used the value): when done reaches grid, no block will
     * take a ticket again in this call, so the last one may reset both for the next call. */
    if (port_thread_idx() == 0) port_threadfence(); /* the last ticket add lands before the done add */
    if (port_thread_idx() == 0 && port_atomic_add(a.sched + 1, 1) == grid - 1) {
        a.sched[0] = 0;
        a.sched[1] = 0;
    }
}

/* combine 1 as a pass of its own: many partials (hbp_counted_combine), or no tasks (the empty rows) */
template <typename T>
PORT_KERNEL void PORT_LAUNCH_BOUNDS(hbp_cta)
    hbp_combine_kernel(int nfix, const int *__restrict__ fix_row, const int *__restrict__ part_ptr,
                       const T *__restrict__ partial, T *__restrict__ y, T alpha, T beta)
{
    const long long f = (long long)port_block_idx() * port_block_dim() + port_thread_idx();
    if (f < nfix) hbp_combine_row<false>((int)f, fix_row, part_ptr, partial, y, alpha, beta);
}

/* combine 2: the fix rows (rows the atomics add into, and empty rows) scaled by beta first */
template <typename T>
PORT_KERNEL void PORT_LAUNCH_BOUNDS(hbp_cta)
    hbp_scale_kernel(int nfix, const int *__restrict__ fix_row, T *__restrict__ y, T beta)
{
    const long long f = (long long)port_block_idx() * port_block_dim() + port_thread_idx();
    if (f < nfix) hbp_scale_row((int)f, fix_row, y, beta);
}

/* The layout the launcher relies on; NULL when fd is a usable hbp layout for a device of this warp size. */
inline const char *hbp_layout_problem(const spmvport_format_data *fd, int warp)
{
    const int64_t *prm = fd->params;
    if (fd->narrays != HBP_NARRAYS) return "hbp: wrong number of arrays";
    if (fd->warp_size != warp) return "hbp: layout built for another warp size";
    if (prm[HBP_P_COMBINE] != HBP_COMBINE_PARTIALS && prm[HBP_P_COMBINE] != HBP_COMBINE_ATOMICS)
        return "hbp: unknown combine mode";
    if ((prm[HBP_P_COL_BYTES] != 2 && prm[HBP_P_COL_BYTES] != 4) ||
        fd->arrays[HBP_A_COL].bytes != (size_t)fd->nnz * (size_t)prm[HBP_P_COL_BYTES])
        return "hbp: column array inconsistent with col_bytes";
    if (prm[HBP_P_STEPS] != 2 && prm[HBP_P_STEPS] != 4 && prm[HBP_P_STEPS] != 8)
        return "hbp: steps per trip must be 2, 4 or 8";
    if (!hbp_ctas_compiled((int)prm[HBP_P_STEPS], (int)prm[HBP_P_CTAS]))
        return "hbp: no kernel compiled for this many resident blocks per multiprocessor";
    if (prm[HBP_P_PREFETCH] < 0 || prm[HBP_P_PREFETCH] > HBP_MAX_PREFETCH) return "hbp: prefetch trips out of range";
    if (prm[HBP_P_STAGE_COLS] < 0 || prm[HBP_P_STAGE_COLS] * (int64_t)(fd->precision == SPMV_F32 ? 4 : 8) > HBP_SMEM_DYNAMIC_MAX)
        return "hbp: x window larger than the shared memory of a block without opt-in";
    if (prm[HBP_P_GRID] < 1 || prm[HBP_P_GRID] > INT32_MAX || prm[HBP_P_NTASKS] < 0 || prm[HBP_P_NFIX] < 0 ||
        prm[HBP_P_NEMPTY] < 0 || prm[HBP_P_NEMPTY] > prm[HBP_P_NFIX] || prm[HBP_P_FIXED] < 0 ||
        prm[HBP_P_TASK_BLOCKS] < 0 || prm[HBP_P_TASK_BLOCKS] > 1 ||
        (prm[HBP_P_TASK_BLOCKS] && HBP_NHOT(fd) > 0 && !HBP_HOT_GLOBAL(fd)) ||
        (prm[HBP_P_NTASKS] > prm[HBP_P_GRID] && prm[HBP_P_FIXED] * prm[HBP_P_GRID] > prm[HBP_P_NTASKS]) ||
        fd->arrays[HBP_A_TASK].bytes != (size_t)prm[HBP_P_NTASKS] * HBP_TASK_INTS * sizeof(int32_t) ||
        fd->arrays[HBP_A_UNIT_INFO].bytes != (size_t)prm[HBP_P_NUNITS] * HBP_UNIT_INFO_INTS * sizeof(int32_t) ||
        fd->arrays[HBP_A_SEG_LEN].bytes != (size_t)prm[HBP_P_NSLOTS] * sizeof(uint16_t) ||
        fd->arrays[HBP_A_SEG_OUT].bytes != (size_t)prm[HBP_P_NSLOTS] * sizeof(uint16_t) ||
        fd->arrays[HBP_A_WIDE_OUT].bytes % sizeof(int32_t) != 0 ||
        fd->arrays[HBP_A_FIX_ROW].bytes != (size_t)prm[HBP_P_NFIX] * sizeof(int32_t) ||
        fd->arrays[HBP_A_SCHED].bytes != 2 * sizeof(int32_t) ||
        (prm[HBP_P_COMBINE] == HBP_COMBINE_PARTIALS &&
         (fd->arrays[HBP_A_PART_FIX].bytes != (size_t)prm[HBP_P_NPARTS] * sizeof(int32_t) ||
          fd->arrays[HBP_A_FIX_COUNT].bytes != (size_t)(prm[HBP_P_NFIX] - prm[HBP_P_NEMPTY]) * sizeof(int32_t))))
        return "hbp: task, fix-row or ticket arrays inconsistent with the parameters";
    const int64_t vsize = fd->precision == SPMV_F32 ? 4 : 8;
    if (fd->arrays[HBP_A_HOT_X].bytes != 0 && fd->arrays[HBP_A_HOT_X].bytes != (size_t)(HBP_NHOT(fd) * vsize))
        return "hbp: global hot copy inconsistent with the hot columns";
    if (prm[HBP_P_Y_ROWS] < 0 || HBP_Y_STAGE_BYTES(prm[HBP_P_Y_ROWS], vsize) > HBP_SMEM_DYNAMIC_MAX ||
        (prm[HBP_P_Y_ROWS] > 0 && HBP_NHOT(fd) > 0 && !HBP_HOT_GLOBAL(fd)))
        return "hbp: staged y range larger than the shared memory of a block, or beside a shared hot copy";
    if (HBP_NHOT(fd) > 0 && (prm[HBP_P_COL_BYTES] != 4 || prm[HBP_P_STAGE_COLS] != 0 ||
                             (!HBP_HOT_GLOBAL(fd) && HBP_NHOT(fd) * vsize > HBP_SMEM_DYNAMIC_MAX)))
        return "hbp: hot columns inconsistent with the layout";
    return NULL;
}

/* The SpMV kernel compiled for `ctas` resident blocks per multiprocessor (one of HBP_CTAS_OPTION(S, 0..2)).
 * HIP's launch bounds take no block count, so there one instantiation serves every ctas. */
template <int W, int S, typename T, typename Col>
void launch_hbp_spmv(int ctas, unsigned grid, size_t smem, port_stream_t s, const hbp_args<T> &a, int ntasks,
                     int fixed)
{
    if constexpr (PORT_LAUNCH_MIN_BLOCKS) {
        if (ctas == HBP_CTAS_OPTION(S, 1)) {
            PORT_LAUNCH(grid, hbp_cta, smem, s, hbp_spmv_kernel<W, S, T, Col, HBP_CTAS_OPTION(S, 1)>)(a, ntasks, fixed);
            return;
        }
        if (ctas == HBP_CTAS_OPTION(S, 2)) {
            PORT_LAUNCH(grid, hbp_cta, smem, s, hbp_spmv_kernel<W, S, T, Col, HBP_CTAS_OPTION(S, 2)>)(a, ntasks, fixed);
            return;
        }
    }
    PORT_LAUNCH(grid, hbp_cta, smem, s, hbp_spmv_kernel<W, S, T, Col, HBP_CTAS_OPTION(S, 0)>)(a, ntasks, fixed);
}

template <int W, int S, typename T>
void launch_hbp_cols(bool wide, int ctas, unsigned grid, size_t smem, port_stream_t s, const hbp_args<T> &a,
                     int ntasks, int fixed)
{
    if (wide) launch_hbp_spmv<W, S, T, int>(ctas, grid, smem, s, a, ntasks, fixed);
    else launch_hbp_spmv<W, S, T, uint16_t>(ctas, grid, smem, s, a, ntasks, fixed);
}

/* Launch one execute of an hbp plan: Plan is the backend's plan type (fd and device arrays[] by slot). */
template <int W, typename T, typename Plan>
void launch_hbp(const Plan *p, double alpha_d, const void *xv, double beta_d, void *yv, port_stream_t s)
{
    const spmvport_format_data *fd = p->fd;
    const int64_t *prm = fd->params;
    void *const *d = p->arrays;
    const T alpha = (T)alpha_d, beta = (T)beta_d;
    T *y = (T *)yv;
    const int ntasks = (int)prm[HBP_P_NTASKS], combine = (int)prm[HBP_P_COMBINE];
    /* the fix rows of the scale or combine pass: all of them without tasks, else those past the empty rows
     * (the SpMV kernel writes those) */
    const int first = ntasks > 0 ? (int)prm[HBP_P_NEMPTY] : 0, nfix = (int)prm[HBP_P_NFIX] - first;
    const int *fix_row = (const int *)d[HBP_A_FIX_ROW] + first;
    const unsigned fix_blocks = (unsigned)((nfix + hbp_cta - 1) / hbp_cta);
    /* combine 1 in the SpMV kernel (few partials) or as a pass after it */
    const bool counted = hbp_counted_combine(prm, W);
    if (combine == HBP_COMBINE_ATOMICS && nfix > 0)
        PORT_LAUNCH(fix_blocks, hbp_cta, 0, s, hbp_scale_kernel<T>)(nfix, fix_row, y, beta);
    if (ntasks > 0) {
        hbp_args<T> a;
        a.col = d[HBP_A_COL];
        a.seg_len = (const uint16_t *)d[HBP_A_SEG_LEN];
        a.val = (const T *)d[HBP_A_VAL];
        a.seg_out = (const uint16_t *)d[HBP_A_SEG_OUT];
        a.unit_info = (const int *)d[HBP_A_UNIT_INFO];
        a.wide_out = (const int *)d[HBP_A_WIDE_OUT];
        a.task = (const int *)d[HBP_A_TASK];
        a.hot = (const int *)d[HBP_A_HOT];
        a.fix_row = (const int *)d[HBP_A_FIX_ROW];
        a.nempty = (int)prm[HBP_P_NEMPTY];
        a.part_ptr = (const int *)d[HBP_A_PART_PTR];
        a.part_fix = counted ? (const int *)d[HBP_A_PART_FIX] : nullptr;
        a.fix_count = (int *)d[HBP_A_FIX_COUNT];
        a.nhot = (int)HBP_NHOT(fd);
        a.hot_x = HBP_HOT_GLOBAL(fd) ? (const T *)d[HBP_A_HOT_X] : nullptr;
        a.partial = (T *)d[HBP_A_PARTIAL];
        a.sched = (int *)d[HBP_A_SCHED];
        a.x = (const T *)xv;
        a.y = y;
        a.alpha = alpha;
        a.beta = beta;
        a.combine = combine;
        a.prefetch = (int)prm[HBP_P_PREFETCH];
        a.nnz = fd->nnz;
        const int grid = (int)hbp_launch_grid(prm);
        /* the staged window or the shared hot copy (one of them is 0), or the staged y ranges */
        const size_t smem_x = (size_t)(prm[HBP_P_STAGE_COLS] + (a.hot_x ? 0 : HBP_NHOT(fd))) * sizeof(T);
        const size_t smem_y = HBP_Y_STAGE_BYTES(prm[HBP_P_Y_ROWS], sizeof(T));
        const size_t smem = smem_x > smem_y ? smem_x : smem_y;
        if (a.hot_x) /* the global hot copy, before the kernel that reads it */
            PORT_LAUNCH((unsigned)(((long long)a.nhot + csr_block - 1) / csr_block), csr_block, 0, s,
                        hot_gather_kernel<T>)(a.nhot, a.hot, a.x, (T *)d[HBP_A_HOT_X]);
        const int fixed = ntasks > grid ? (int)prm[HBP_P_FIXED] : 0;
        const bool wide = prm[HBP_P_COL_BYTES] == 4;
        const int ctas = (int)prm[HBP_P_CTAS];
        if (prm[HBP_P_STEPS] == 8) launch_hbp_cols<W, 8, T>(wide, ctas, (unsigned)grid, smem, s, a, ntasks, fixed);
        else if (prm[HBP_P_STEPS] == 2) launch_hbp_cols<W, 2, T>(wide, ctas, (unsigned)grid, smem, s, a, ntasks, fixed);
        else launch_hbp_cols<W, 4, T>(wide, ctas, (unsigned)grid, smem, s, a, ntasks, fixed);
    }
    if (combine == HBP_COMBINE_PARTIALS && nfix > 0 && !counted)
        PORT_LAUNCH(fix_blocks, hbp_cta, 0, s, hbp_combine_kernel<T>)
        (nfix, fix_row, (const int *)d[HBP_A_PART_PTR] + first, (const T *)d[HBP_A_PARTIAL], y, alpha, beta);
}

} /* namespace */

#endif /* SPMVPORT_DEVICE_HBP_KERNELS_H */
