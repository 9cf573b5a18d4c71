/*
 * tile_kernels.h -- TileSpMV (format `tile`) kernels, written once for CUDA and HIP, every warp size W and
 * precision T. Layout: src/common/format_tile.h and docs/formats/tile.md. They walk the arrays as
 * src/cpu_ref/tile_executor.c does:
 *
 *   tile_kernel        one warp per task (at most tbalance tiles of one tile row). The warp's lanes form
 *                      G = W / 16 groups of 16 (2 on W = 32, 4 on W = 64); lane l works for row r = l % 16 of
 *                      the tile row in group g = l / 16, and group g takes the task's tiles g, g + G, ..., so G
 *                      tiles are in work at once and one lane walks one tile row, accumulating in a register.
 *                      A group takes its tiles L = tile_inflight (1, 2 or 4) at a time: the 16 lanes load the L
 *                      headers together (broadcasts) one batch ahead; with L > 1 each lane's first entries of
 *                      the L tiles ("leads") and their x entries are loaded together before the tiles are
 *                      summed. x is read through the read-only cache (no staging, no shared memory, no warp
 *                      operation in the loop); each lane adds row r's entries of the tile, in order, whatever
 *                      the tile's format (see the executor). A shuffle-xor butterfly over lanes l ^ 16 (and l ^ 32 on
 *                      W = 64) adds the groups; lanes 0..rowlen-1 write alpha*sum + beta*y, or the task's carry
 *                      slot when its tile row is split over several tasks.
 *                      With x by shuffles (plans of CSR tiles, flag SPMVPORT_TILE_FLAG_CSR_SHUFFLE) the groups
 *                      step together and a CSR tile's x entries come from the group's lanes (tile_csr_shuffled),
 *                      3 or 4 entries a step. With block tasks (flags SPMVPORT_TILE_FLAG_BLOCK_TASKS2 / 4 / 8, BK)
 *                      a tile row's 2, 4 or 8 tasks are consecutive warps of one thread block (tile_threads: 256
 *                      threads for 8 at W = 32): each leaves its 16 sums in shared memory and the row's first warp
 *                      adds them in task order after a block barrier.
 *   tile_inline_kernel tile_kernel with the deferred part inside: the tile row's first task sums it first.
 *   tile_band_items_kernel  band plans with a task per 16-lane group (the default there): each tile's header is
 *                      decoded once, by one lane, into per-diagonal items in shared memory, and the group's lanes
 *                      add their row of each item (a pass with other formats goes tile after tile).
 *   tile_band_tasks_kernel  band batch plans with tile_band_tasks K > 1: K consecutive tasks per warp, each
 *                      summed as tile_kernel sums it; the records and the next task's headers are coalesced loads
 *                      read by shuffle, issued one task ahead, so a stencil task is one memory round trip.
 *   tile_fixup_kernel  one thread per row of a split tile row: adds the row's carries in task order and writes
 *                      alpha*sum + beta*y. No atomics: the result is deterministic.
 *   deferred COO       csr_lb (launch_lb, csr_kernels.h) on the deferred CSR with beta = 1, after the tiled part, and
 *                      its fix-up. Its carries are plan arrays written on every call.
 * With beta == 0, y is never read. Nothing is allocated and no counter survives a call. Everything has internal
 * linkage (anonymous namespace).
 */
#ifndef SPMVPORT_DEVICE_TILE_KERNELS_H
#define SPMVPORT_DEVICE_TILE_KERNELS_H

#include "backend.h"
#include "csr_kernels.h"
#include "format_tile.h"
#include "port.h"

namespace {

/* Threads per block, a multiple of every W. 128 rather than 256: a block's slot on a multiprocessor is freed when
 * its last warp ends, so smaller blocks leave fewer slots waiting on one slow warp; at the same resident warps
 * (the launch bounds below keep the register budgets) fem3d:3:40-56 and the stencils were 1-5% faster on the H200
 * (session 29, runs SG-SH; 64 threads gained the same on FEM, lost 8% on stencil3d:27:100 f32). */
constexpr int tile_block = SPMVPORT_TILE_BLOCK;
/* Resident blocks of tile_block threads that make `threads` threads a multiprocessor (the launch bounds' unit). */
constexpr int tile_blocks_for(int threads) { return threads / tile_block; }
constexpr int tile_dim = SPMVPORT_TILE_DIM;  /* rows and columns of a tile */
/* Threads per block of a kernel with BK block tasks a tile row (1: none): tile_block, or BK warps when more. */
template <int W, int BK> constexpr int tile_threads = BK * W > tile_block ? BK * W : tile_block;

template <typename T>
PORT_DEVICE T tile_store(T alpha, T sum, T beta, const T *y)
{
    return beta == T(0) ? alpha * sum : alpha * sum + beta * *y;
}

/* In-tile index k of a nibble array (two per byte, low nibble first). */
PORT_DEVICE int tile_nibble(const unsigned char *__restrict__ p, int k)
{
    return (port_ld_stream(p + (k >> 1)) >> ((k & 1) * 4)) & 15;
}

/* Rank of bit b in a 16-bit mask: the set bits below it. */
PORT_DEVICE int tile_rank(unsigned mask, int b) { return port_popc((port_lane_mask_t)(mask & ((1u << b) - 1u))); }

/* COO entries [j0, cnt) (a COO tile, or a HYB tail): lane r adds those whose row nibble is r, in order. */
template <typename T>
PORT_DEVICE void tile_coo(T &acc, const unsigned char *__restrict__ idx, const T *__restrict__ val, int j0, int cnt,
                          const T *__restrict__ xc, int r)
{
    for (int j = j0; j < cnt; j++) {
        const int b = port_ld_stream(idx + j);
        const T v = port_ld_stream(val + j); /* loaded with the index: no dependent load */
        if ((b >> 4) == r) acc += v * port_ldg(xc + (b & 15));
    }
}

/* ELL slots k*rowlen + r for k0 <= k < w; zero padding skipped. */
template <typename T>
PORT_DEVICE void tile_ell(T &acc, const unsigned char *__restrict__ nib, const T *__restrict__ val, int k0, int w,
                          int rowlen, const T *__restrict__ xc, int r)
{
    if (r >= rowlen) return;
    for (int k = k0, s = k0 * rowlen + r; k < w; k++, s += rowlen) {
        const T v = port_ld_stream(val + s);
        const T xv = port_ldg(xc + tile_nibble(nib, s)); /* padding's nibble is 0: always a valid x; not
                                                            waiting for v keeps the slots' loads overlapped */
        if (v != T(0)) acc += v * xv;
    }
}

/* DENSE: column-major, ld = rowlen, columns c0.. (structural zeros stored as 0 and skipped). */
template <typename T>
PORT_DEVICE void tile_dense(T &acc, const T *__restrict__ val, int c0, int rowlen, int collen,
                            const T *__restrict__ xc, int r)
{
    if (r < rowlen)
        for (int c = c0; c < collen; c++) {
            const T v = port_ld_stream(val + c * rowlen + r), xv = port_ldg(xc + c); /* x not after v */
            if (v != T(0)) acc += v * xv;
        }
}

/* DENSE_ROW: full rows only (mask in two index bytes), column-major with ld = the number of full rows. */
template <typename T>
PORT_DEVICE void tile_dense_row(T &acc, const unsigned char *__restrict__ idx, const T *__restrict__ val, int collen,
                                const T *__restrict__ xc, int r)
{
    const unsigned mask = port_ld_stream(idx) | (unsigned)port_ld_stream(idx + 1) << 8;
    if (mask >> r & 1) {
        const int nd = port_popc((port_lane_mask_t)mask), d = tile_rank(mask, r);
        for (int c = 0; c < collen; c++) acc += port_ld_stream(val + c * nd + d) * port_ldg(xc + c);
    }
}

/* DENSE_COL: full columns only (mask in two index bytes), column-major with ld = rowlen. */
template <typename T>
PORT_DEVICE void tile_dense_col(T &acc, const unsigned char *__restrict__ idx, const T *__restrict__ val, int rowlen,
                                int collen, const T *__restrict__ xc, int r)
{
    const unsigned mask = port_ld_stream(idx) | (unsigned)port_ld_stream(idx + 1) << 8;
    if (r < rowlen)
        for (int c = 0, q = 0; c < collen; c++)
            if (mask >> c & 1) acc += port_ld_stream(val + (q++) * rowlen + r) * port_ldg(xc + c);
}

/* CSR entries k .. min(k + U, end) - 1 of a row, in order: their values and column nibbles loaded together, then
 * their x entries, so a row of up to 8 entries is 2 dependent round trips (the loop one entry at a time, as
 * the compiler unrolled it by 4, was 2 per 4 entries). */
template <int U, typename T>
PORT_DEVICE void tile_csr_step(T &acc, const unsigned char *__restrict__ nib, const T *__restrict__ val, int k,
                               int end, const T *__restrict__ xc)
{
    T v[U], xv[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        const bool in = k + u < end;
        v[u] = in ? port_ld_stream(val + k + u) : T(0);
        xv[u] = in ? port_ldg(xc + tile_nibble(nib, k + u)) : T(0);
    }
#pragma unroll
    for (int u = 0; u < U; u++)
        if (k + u < end) acc += v[u] * xv[u];
}

/* BAND (nd diagonals from lo, in the format byte): diagonal d = lo + k holds rows max(0, -d) .. re(d) - 1 of
 * the tile, stored one diagonal after another. Every address follows from the header, so each batch of up to 4
 * diagonals issues its value and x loads together: one round trip. */
template <typename T, int NB = 4>
PORT_DEVICE void tile_band(T &acc, int fmt, const T *__restrict__ val, int rowlen, int collen,
                           const T *__restrict__ xc, int r, int k1 = 0)
{
    const int lo = SPMVPORT_TILE_BAND_LO(fmt), nd = SPMVPORT_TILE_BAND_ND(fmt);
    int base = 0;
    for (int k = 0; k < k1; k++) { /* skip diagonals 0..k1-1 */
        const int d = lo + k, rs = d < 0 ? -d : 0, re = rowlen < collen - d ? rowlen : collen - d;
        base += re > rs ? re - rs : 0;
    }
    for (int k0 = k1; k0 < nd; k0 += NB) {
        T v[NB], xv[NB];
#pragma unroll
        for (int i = 0; i < NB; i++) {
            const int d = lo + k0 + i, rs = d < 0 ? -d : 0, re = rowlen < collen - d ? rowlen : collen - d;
            const bool in = k0 + i < nd && r >= rs && r < re;
            v[i] = in ? port_ld_stream(val + base + r - rs) : T(0);
            xv[i] = in ? port_ldg(xc + r + d) : T(0);
            base += re > rs ? re - rs : 0;
        }
#pragma unroll
        for (int i = 0; i < NB; i++)
            if (v[i] != T(0)) acc += v[i] * xv[i];
    }
}

/* One tile alone (tile_inflight = 1): row r's entries in order; ELL / HYB slot r is loaded with the width byte
 * (w >= 1 in every stored ELL / HYB tile), so neither waits for the other. Fewer registers than lead + rest.
 * BAND: band tiles possible (only in the band batch kernel: the branch costs the plain kernel 8 registers).
 * STEPS: CSR rows in steps (tile_csr_step; flag SPMVPORT_TILE_FLAG_CSR_STEPS), else an entry at a time. */
template <typename T, bool BAND, bool STEPS = false>
PORT_DEVICE void tile_apply(T &acc, int fmt, const unsigned char *__restrict__ idx, const T *__restrict__ val, int nv,
                            int rowlen, int collen, const T *__restrict__ xc, int r)
{
    if (BAND && SPMVPORT_TILE_IS_BAND(fmt)) {
        tile_band<T, 2>(acc, fmt, val, rowlen, collen, xc, r);
        return;
    }
    switch (fmt) {
    case SPMVPORT_TILE_ELL:
    case SPMVPORT_TILE_HYB: {
        const int w = port_ld_stream(idx);
        if (r < rowlen) {
            int s = r, k = 0;
            do {
                const T v = port_ld_stream(val + s);
                const T xv = port_ldg(xc + tile_nibble(idx + 1, s)); /* padding: nibble 0, a valid x */
                if (v != T(0)) acc += v * xv;
                s += rowlen;
            } while (++k < w);
        }
        if (fmt == SPMVPORT_TILE_HYB) {
            const int ell = w * rowlen;
            tile_coo(acc, idx + 1 + ((ell + 1) >> 1), val + ell, 0, nv - ell, xc, r);
        }
        break;
    }
    case SPMVPORT_TILE_CSR:
        if (r < rowlen) {
            const int end = r + 1 < rowlen ? port_ld_stream(idx + r + 1) : nv;
            int k = port_ld_stream(idx + r);
            if (!STEPS) { /* 8 registers fewer (sm_90): more resident warps where CSR tiles are few */
                for (; k < end; k++) acc += port_ld_stream(val + k) * port_ldg(xc + tile_nibble(idx + rowlen, k));
            } else {
                for (; k < end - 4; k += 8) tile_csr_step<8>(acc, idx + rowlen, val, k, end, xc); /* > 4 left */
                if (k < end) tile_csr_step<4>(acc, idx + rowlen, val, k, end, xc);
            }
        }
        break;
    case SPMVPORT_TILE_COO: tile_coo(acc, idx, val, 0, nv, xc, r); break;
    case SPMVPORT_TILE_DENSE: tile_dense(acc, val, 0, rowlen, collen, xc, r); break;
    case SPMVPORT_TILE_DENSE_ROW: tile_dense_row(acc, idx, val, collen, xc, r); break;
    default: tile_dense_col(acc, idx, val, rowlen, collen, xc, r); break; /* SPMVPORT_TILE_DENSE_COL */
    }
}

/* A tile's header: column, format (-1: no tile), first value slot, first index byte, value slots. */
struct tile_meta {
    int col, fmt, v0, i0, nv;
};

PORT_DEVICE tile_meta tile_load_meta(const int *__restrict__ tile_col, const unsigned char *__restrict__ tile_fmt,
                                     const int *__restrict__ tile_off, int t)
{
    tile_meta h;
    h.col = port_ldg(tile_col + t);
    h.fmt = port_ldg(tile_fmt + t);
    h.v0 = port_ldg(tile_off + 2 * t);
    h.i0 = port_ldg(tile_off + 2 * t + 1);
    h.nv = port_ldg(tile_off + 2 * t + 2) - h.v0;
    return h;
}

/* Tile t alone, its header read again (from L1): the tile-after-tile path of the band kernels' batches and passes
 * that hold other formats (one copy of tile_apply, not unrolled). */
template <typename T>
PORT_DEVICE void tile_apply_at(T &acc, int t, const int *__restrict__ tile_col, const unsigned char *__restrict__ tile_fmt,
                               const int *__restrict__ tile_off, const unsigned char *__restrict__ tile_idx,
                               const T *__restrict__ tile_val, const T *__restrict__ x, int n, int rowlen, int r)
{
    const tile_meta h = tile_load_meta(tile_col, tile_fmt, tile_off, t);
    const int c0 = h.col * tile_dim, collen = n - c0 < tile_dim ? n - c0 : tile_dim; /* 16 col < n: an int */
    tile_apply<T, true>(acc, h.fmt, tile_idx + h.i0, tile_val + h.v0, h.nv, rowlen, collen, x + c0, r);
}

/* A band format byte's diagonals lo .. lo + nd - 1: SPMVPORT_TILE_BAND_LO / _ND with (b - 16) / 7 as a multiply
 * and a shift, exact for the 217 band bytes (fewer instructions: the stencil kernels are bound by them). */
PORT_DEVICE void tile_band_diagonals(int b, int &lo, int &nd)
{
    const int f = b - 16, q = (f * 2341) >> 14;
    lo = q - 15;
    nd = f - 7 * q + 1;
}

/* Row r's end of a task: its carry slot when the tile row is split over several tasks, else alpha*sum + beta*y
 * (y not read when beta == 0). */
template <typename T>
PORT_DEVICE void tile_write_row(T acc, int r, int slot, long long r0, T *__restrict__ carry, T *__restrict__ y, T alpha,
                                T beta)
{
    if (slot >= 0) carry[(long long)slot * tile_dim + r] = acc;
    else y[r0 + r] = tile_store(alpha, acc, beta, y + r0 + r);
}

/* Lane r's first entry of a tile (its "lead"), loaded before any of the batch's tiles is summed so that the
 * batch's loads are in flight together: ELL / HYB slot r (a = w), Dense slot r (column 0), the first COO entry
 * (every lane; it counts where its row is r); CSR has no lead, but its row's bounds a..b are loaded here.
 * ok: 0 none, 1 add, 2 add unless the value is 0 (padding and Dense zeros are skipped). */
template <typename T>
PORT_DEVICE void tile_lead(const tile_meta &h, const unsigned char *__restrict__ tile_idx,
                           const T *__restrict__ tile_val, int rowlen, int r, T &lv, int &lc, int &ok, int &a, int &b)
{
    const unsigned char *ix = tile_idx + h.i0;
    const T *vl = tile_val + h.v0;
    lv = T(0), lc = 0, ok = 0, a = 0, b = 0;
    switch (h.fmt) {
    case SPMVPORT_TILE_ELL:
    case SPMVPORT_TILE_HYB: /* w >= 1 in every stored ELL / HYB tile: slot r exists */
        a = port_ldg(ix);
        if (r < rowlen) lv = port_ldg(vl + r), lc = tile_nibble(ix + 1, r), ok = 2;
        break;
    case SPMVPORT_TILE_DENSE:
        if (r < rowlen) lv = port_ldg(vl + r), ok = 2;
        break;
    case SPMVPORT_TILE_COO: { /* nv >= 1 */
        const int e = port_ldg(ix);
        lv = port_ldg(vl), lc = e & 15, ok = (e >> 4) == r;
        break;
    }
    case SPMVPORT_TILE_CSR:
        if (r < rowlen) a = port_ldg(ix + r), b = r + 1 < rowlen ? port_ldg(ix + r + 1) : h.nv;
        break;
    default: break;
    }
}

/* The rest of row r's entries of a tile after its lead, in order (a, b from tile_lead). */
template <typename T>
PORT_DEVICE void tile_rest(T &acc, const tile_meta &h, const unsigned char *__restrict__ tile_idx,
                           const T *__restrict__ tile_val, int rowlen, int collen, const T *__restrict__ xc, int r,
                           int a, int b)
{
    const unsigned char *idx = tile_idx + h.i0;
    const T *val = tile_val + h.v0;
    switch (h.fmt) {
    case SPMVPORT_TILE_ELL: tile_ell(acc, idx + 1, val, 1, a, rowlen, xc, r); break;
    case SPMVPORT_TILE_CSR:
        for (int k = a; k < b; k++) acc += port_ld_stream(val + k) * port_ldg(xc + tile_nibble(idx + rowlen, k));
        break;
    case SPMVPORT_TILE_COO: tile_coo(acc, idx, val, 1, h.nv, xc, r); break;
    case SPMVPORT_TILE_HYB: {
        const int ell = a * rowlen;
        tile_ell(acc, idx + 1, val, 1, a, rowlen, xc, r);
        tile_coo(acc, idx + 1 + ((ell + 1) >> 1), val + ell, 0, h.nv - ell, xc, r);
        break;
    }
    case SPMVPORT_TILE_DENSE: tile_dense(acc, val, 1, rowlen, collen, xc, r); break;
    case SPMVPORT_TILE_DENSE_ROW: tile_dense_row(acc, idx, val, collen, xc, r); break;
    case SPMVPORT_TILE_DENSE_COL: tile_dense_col(acc, idx, val, rowlen, collen, xc, r); break;
    default: break;
    }
}

template <int L>
PORT_DEVICE void tile_load_batch(tile_meta (&h)[L], const int *__restrict__ tile_col,
                                 const unsigned char *__restrict__ tile_fmt, const int *__restrict__ tile_off, int b0,
                                 int step, int last)
{
#pragma unroll
    for (int i = 0; i < L; i++) {
        const int t = b0 + i * step;
        if (t < last) h[i] = tile_load_meta(tile_col, tile_fmt, tile_off, t);
        else h[i].col = 0, h[i].fmt = -1, h[i].v0 = 0, h[i].i0 = 0, h[i].nv = 0;
    }
}

/* Sums a batch of L tiles into lane r's accumulator, in tile order: the L leads are loaded together, then the
 * L x entries of the leads, then each tile adds its lead and the rest. */
template <int L, typename T, bool S = false>
struct tile_batch_sum {
    static PORT_DEVICE void run(T &acc, const tile_meta (&h)[L], const unsigned char *__restrict__ tile_idx,
                                const T *__restrict__ tile_val, const T *__restrict__ x, int n, int rowlen, int r)
    {
        T lv[L], xv[L];
        int lc[L], ok[L], la[L], lb[L];
#pragma unroll
        for (int i = 0; i < L; i++)
            tile_lead<T>(h[i], tile_idx, tile_val, rowlen, r, lv[i], lc[i], ok[i], la[i], lb[i]);
#pragma unroll
        for (int i = 0; i < L; i++) {
            if (ok[i] == 2) ok[i] = lv[i] != T(0);
            xv[i] = ok[i] ? port_ldg(x + (long long)h[i].col * tile_dim + lc[i]) : T(0);
        }
#pragma unroll
        for (int i = 0; i < L; i++) {
            if (h[i].fmt < 0) break;
            const long long c0 = (long long)h[i].col * tile_dim;
            const int collen = n - c0 < tile_dim ? (int)(n - c0) : tile_dim;
            if (ok[i]) acc += lv[i] * xv[i];
            tile_rest<T>(acc, h[i], tile_idx, tile_val, rowlen, collen, x + c0, r, la[i], lb[i]);
        }
    }
};

/* The word that holds a step's nibble bytes: unsigned up to 6 entries a step (4 bytes), else unsigned long long (a
 * step of 16 from an odd nibble touches 9 bytes: the ninth's low nibble is put in the word's top after the shift). */
template <bool WIDE> struct tile_nibble_word { using type = unsigned; };
template <> struct tile_nibble_word<true> { using type = unsigned long long; };

/* A CSR tile with x from shuffles (flag SPMVPORT_TILE_FLAG_CSR_SHUFFLE), the warp converged (every group's tile
 * CSR, or none): lane r loads its row's bounds and x entry r of the tile's columns together, then the warp steps
 * through the rows U entries at a time until every lane's row is done; an entry's x comes from lane
 * `column nibble` of the lane's group. The chain a tile is then header -> bounds and x -> entries, where the
 * entry-at-a-time loop waited for each entry's nibble before loading its x. Same sums, same order.
 * U = 3 or 4, the plan's (flag SPMVPORT_TILE_FLAG_CSR_STEP3: the builder's count of lane slots), 6 (two steps
 * of 3 together, flag SPMVPORT_TILE_FLAG_CSR_STEP6: f32 plans past L2, 2-4% faster on fem3d:3:40 and :56 in run RG
 * of session 28) or 9 (three together, SPMVPORT_TILE_FLAG_CSR_STEP9: f32 FEM blocks of 3 unknowns, one step a
 * tile: a lane's whole row of the tile is loaded in one round trip; H200, session 30, runs TB-TC: fem3d:3:40-56
 * 10-12% faster than with 6, fem3d:3:24-36 7-9% faster than with 3). On the H100 (session 23, fem3d:3:40-56) 8 was
 * 1.1-1.4x slower (64 registers in f64) and 2 1-3% slower than 4. A step's shuffles run for all U entries, so a
 * larger U costs instructions wherever the rows are shorter than U.
 * DN (steps of 16 only): the groups' tiles may also be Dense (FEM blocks of 6-7 unknowns: 15-35% of their tiles). A
 * Dense lane walks its row's slots c * rowlen + r in column order, columns k, k + 1, ... in place of nibbles, zeros
 * skipped: tile_dense's sums in tile_dense's order, its x by shuffle. Without it a warp step with a Dense tile in one
 * group sends every group down tile_apply (a CSR entry's x a load after its nibble's). With steps of 4 a Dense row
 * is four round trips where tile_dense's 16 independent loads take about one: 0.90-1.00x on FEM grids of 6-7
 * unknowns (H200, session 39, runs F1 and F4), so steps of 4 keep tile_apply. With steps of 16 (and shuffle_step
 * counting Dense tiles, which gives steps of 16 to more such plans), f32, three processes (run F5, tile time before
 * / after): fem3d:6:30 1.03, :6:22 1.04, :6:26 1.01, :7:23 1.03, :7:24-25 1.01, banded:100000:16 1.02-1.03, but
 * :7:22 0.98; see shuffle_step for the plans that changed steps. */
template <int W, int U, typename T, bool DN = false>
PORT_DEVICE void tile_csr_shuffled(T &acc, const tile_meta &h, const unsigned char *__restrict__ tile_idx,
                                   const T *__restrict__ tile_val, const T *__restrict__ x, int n, int rowlen, int r,
                                   int lane)
{
    const unsigned char *idx = tile_idx + h.i0;
    const T *val = tile_val + h.v0;
    const long long c0 = (long long)h.col * tile_dim;
    const bool dense = DN && h.fmt == SPMVPORT_TILE_DENSE;
    int k = 0, end = 0;
    T xs = T(0);
    if (h.fmt >= 0) {
        if (dense) {
            if (r < rowlen) end = n - c0 < tile_dim ? (int)(n - c0) : tile_dim;
        } else if (r < rowlen) {
            k = port_ld_stream(idx + r), end = r + 1 < rowlen ? port_ld_stream(idx + r + 1) : h.nv;
        }
        if (c0 + r < n) xs = port_ldg(x + c0 + r);
    }
    /* The lane's place in its row as pointers carried from step to step (its next value, the byte of its next
     * column nibble and that nibble's half): a step's loads are then fixed offsets from them, where indexing by k
     * rebuilt each 64-bit address from the kernel's parameters: a step of 3 in f32 went from 74 instructions to
     * 51, the kernel on fem3d:3:40 from 31.4M to 26.1M and 4-11% faster on fem3d in both precisions (H200,
     * session 28, runs RB-RC). */
    const int stride = dense ? rowlen : 1;
    const T *vp = dense ? val + r : val + k;
    const unsigned char *bp = idx + rowlen + (k >> 1);
    int half = k & 1, left = end - k;
    const int group0 = lane - r; /* the group's lane 0 */
    for (; port_ballot<W>(left > 0) != 0; left -= U) {
        constexpr int B = (U + 2) / 2; /* bytes a step can touch: entries half .. half + U - 1 of bp's nibbles */
        using word = typename tile_nibble_word<(B > 4)>::type;
        constexpr int WB = (int)sizeof(word);
        static_assert(B <= WB + 1 && (B <= WB || U == 2 * WB), "a step's nibbles fit one word after the shift");
        word w = 0;
        unsigned last_byte = 0; /* byte WB (steps of 16 from an odd nibble only): its low nibble is entry 15 */
#pragma unroll
        for (int i = 0; i < B; i++) { /* byte i, if its first nibble is one of the step's entries */
            if (!dense && 2 * i - half < left && 2 * i - half < U) {
                const unsigned b = port_ld_stream(bp + i);
                if (i < WB) w |= (word)b << (8 * (i < WB ? i : 0)); /* the guard keeps i = WB's dead shift legal */
                else last_byte = b;
            }
        }
        T v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = u < left ? port_ld_stream(vp + (DN ? u * stride : u)) : T(0);
        w >>= 4 * half;
        if (B > WB) w |= (word)last_byte << (8 * WB - 4); /* 0 unless half: then the byte's high nibble falls off */
        if (dense) w = (word)0xFEDCBA9876543210ull + (word)(end - left) * (word)0x1111111111111111ull;
#pragma unroll
        for (int u = 0; u < U; u++) {
            const T xv = port_shfl_idx<W>(xs, group0 + (int)((w >> (4 * u)) & 15u));
            if (u < left && (!dense || v[u] != T(0))) acc += v[u] * xv;
        }
        vp += DN ? U * stride : U;
        bp += (half + U) >> 1;
        half = (half + U) & 1;
    }
}

/* One tile (tile_inflight = 1): no lead stage, whose registers would cost resident warps for nothing. S: CSR
 * steps. */
template <typename T, bool S>
struct tile_batch_sum<1, T, S> {
    static PORT_DEVICE void run(T &acc, const tile_meta (&h)[1], const unsigned char *__restrict__ tile_idx,
                                const T *__restrict__ tile_val, const T *__restrict__ x, int n, int rowlen, int r)
    {
        const long long c0 = (long long)h[0].col * tile_dim;
        const int collen = n - c0 < tile_dim ? (int)(n - c0) : tile_dim;
        tile_apply<T, false, S>(acc, h[0].fmt, tile_idx + h[0].i0, tile_val + h[0].v0, h[0].nv, rowlen, collen, x + c0,
                                r);
    }
};

/* One band batch of a group (B tiles b0, b0 + G, ..., headers col / fmt / v0 already in registers; fmt -1: no
 * tile). When they are all BAND tiles (a stencil's), lane r's first-diagonal value and x of the B tiles, and
 * diagonals 1 and 2 of the batch's first tile with more than one diagonal (a stencil's tridiagonal tile), are
 * loaded together (their addresses follow from the headers): one payload round trip for the batch instead of
 * one per tile and diagonal. They are then added in the executor's order: tile after tile, each tile's
 * diagonals in order, zeros skipped. The index arithmetic is 32-bit (a tile's first column 16 tc < n, slots <
 * 2^31 at build) and decodes each format byte once: on an H200 the stencil was bound by instructions per tile
 * (f32 no faster than f64), not by bytes. Otherwise (other formats in the batch) tile after tile. */
template <int B, typename T>
PORT_DEVICE void tile_band_batch_sum(T &acc, const int (&col)[B], const int (&fmt)[B], const int (&v0)[B], bool band,
                                     int b0, int G, int last, const int *__restrict__ tile_col,
                                     const unsigned char *__restrict__ tile_fmt, const int *__restrict__ tile_off,
                                     const unsigned char *__restrict__ tile_idx, const T *__restrict__ tile_val,
                                     const T *__restrict__ x, int n, int rowlen, int r)
{
    if (band) {
        T lv[B], lx[B];
        int ie = -1, ec0 = 0, elo = 0, end = 0, eb = 0, ecl = 0; /* the extra diagonals' tile (none: end 0) */
        unsigned more = 0; /* bit i: tile i has diagonals beyond those loaded here (rare) */
#pragma unroll
        for (int i = 0; i < B; i++) { /* diagonal 0 of each tile: rows rs .. re - 1, slots from v0 */
            const bool has = fmt[i] >= 0;
            int lo, nd; /* a missing tile decodes as byte 16 (lo -15, nd 1); its rows are masked below */
            tile_band_diagonals(has ? fmt[i] : 16, lo, nd);
            const int c0 = col[i] * tile_dim, collen = n - c0 < tile_dim ? n - c0 : tile_dim;
            const int rs = lo < 0 ? -lo : 0, re = rowlen < collen - lo ? rowlen : collen - lo;
            const bool in = has && r >= rs && r < re;
            lv[i] = in ? port_ld_stream(tile_val + (v0[i] + r - rs)) : T(0);
            lx[i] = in ? port_ldg(x + (c0 + r + lo)) : T(0);
            const bool first = ie < 0 && has && nd > 1;
            if (first) ie = i, ec0 = c0, elo = lo, end = nd, eb = v0[i] + (re > rs ? re - rs : 0), ecl = collen;
            if (nd > (first ? 3 : 1)) more |= 1u << i;
        }
        T ev[2], ex[2];
#pragma unroll
        for (int k = 1; k < 3; k++) { /* diagonals 1 and 2 of tile ie */
            const int d = elo + k, rs = d < 0 ? -d : 0, re = rowlen < ecl - d ? rowlen : ecl - d;
            const bool in = k < end && r >= rs && r < re;
            ev[k - 1] = in ? port_ld_stream(tile_val + (eb + r - rs)) : T(0);
            ex[k - 1] = in ? port_ldg(x + (ec0 + r + d)) : T(0);
            eb += re > rs ? re - rs : 0;
        }
#pragma unroll
        for (int i = 0; i < B; i++) { /* missing tiles (fmt -1) have lv 0, ie != i, no bit in more */
            if (lv[i] != T(0)) acc += lv[i] * lx[i];
            if (i == ie) {
                if (ev[0] != T(0)) acc += ev[0] * ex[0];
                if (ev[1] != T(0)) acc += ev[1] * ex[1];
            }
            if (more >> i & 1u) { /* the header again (L1), not kept in registers for a rare case */
                const int t = b0 + i * G, f = port_ldg(tile_fmt + t), c0 = port_ldg(tile_col + t) * tile_dim;
                const int collen = n - c0 < tile_dim ? n - c0 : tile_dim;
                tile_band<T, 2>(acc, f, tile_val + port_ldg(tile_off + 2 * t), rowlen, collen, x + c0, r,
                                i == ie ? 3 : 1);
            }
        }
    } else {
        for (int t = b0; t < last && t < b0 + B * G; t += G)
            tile_apply_at(acc, t, tile_col, tile_fmt, tile_off, tile_idx, tile_val, x, n, rowlen, r);
    }
}

/* Band batches (B = 2 or 4 tiles, tile_band_batch) of one task: a group's next B tiles, headers loaded together
 * (one round trip), then tile_band_batch_sum. sm_90 f64: 64 registers with B = 4, 48 with B = 2 (f32: 48 both). */
template <int G, int B, typename T>
PORT_DEVICE void tile_group_batches(T &acc, int b0, int last, const int *__restrict__ tile_col,
                                    const unsigned char *__restrict__ tile_fmt, const int *__restrict__ tile_off,
                                    const unsigned char *__restrict__ tile_idx, const T *__restrict__ tile_val,
                                    const T *__restrict__ x, int n, int rowlen, int r)
{
    for (; b0 < last; b0 += B * G) {
        int col[B], fmt[B], v0[B]; /* the rest of a header is loaded only off the band path: fewer registers */
        bool band = true;
        /* base pointers of the batch: each tile's three loads take an immediate offset and one shared test
         * (indexing by b0 + i G cost ~20 PTX instructions per tile: 3 branches, 3 wide multiplies) */
        const int left = last - b0, *pc = tile_col + b0, *po = tile_off + 2 * b0;
        const unsigned char *pf = tile_fmt + b0;
#pragma unroll
        for (int i = 0; i < B; i++) {
            const bool has = i * G < left;
            col[i] = has ? port_ldg(pc + i * G) : 0;
            fmt[i] = has ? port_ldg(pf + i * G) : -1;
            v0[i] = has ? port_ldg(po + 2 * i * G) : 0;
            band = band && (fmt[i] < 0 || SPMVPORT_TILE_IS_BAND(fmt[i]));
        }
        tile_band_batch_sum<B, T>(acc, col, fmt, v0, band, b0, G, last, tile_col, tile_fmt, tile_off, tile_idx,
                                         tile_val, x, n, rowlen, r);
    }
}

/* Lane-wise header of tile t (one coalesced load across the warp's lanes); fmt -1 past the task's last tile. */
PORT_DEVICE void tile_lane_header(int &col, int &fmt, int &v0, const int *__restrict__ tile_col,
                                  const unsigned char *__restrict__ tile_fmt, const int *__restrict__ tile_off, int t,
                                  int last)
{
    col = t < last ? port_ldg(tile_col + t) : 0;
    fmt = t < last ? port_ldg(tile_fmt + t) : -1;
    v0 = t < last ? port_ldg(tile_off + 2 * t) : 0;
}

/* Band batches, K consecutive tasks per warp (plan parameter SPMVPORT_TILE_P_BAND_TASKS, 2..8). Per task the
 * arithmetic is tile_kernel<W, T, 1, B>'s (same tiles per group, same order), but the memory round trips of a
 * task shrink from 4 (task record -> headers -> payload -> the tridiagonal tile's other diagonals) to 1:
 *  - the K task records (and the next one's first tile) are one coalesced load at warp start, fields by shuffle;
 *  - a task's tile headers are one coalesced load (lane j: tile first + j, 3 registers instead of 3B) issued
 *    during the previous task, and each group's B headers come from shuffles;
 *  - the batch loads diagonals 1 and 2 of its tridiagonal tile with the first diagonals (EX).
 * Shuffles sit only where the warp is converged: the task loop and the batch loop have warp-uniform bounds.
 * Registers: sm_90 with __launch_bounds__(256) alone, ptxas chose 64 (f64) and spilled ~100 bytes; at least 768
 * threads per SM (f64, 80 registers, 24 warps) or 1024 (f32, 64 registers, 32 warps) spill at most 8 bytes. */
template <int W, typename T, int B>
PORT_KERNEL void PORT_LAUNCH_BOUNDS_MIN(tile_block, tile_blocks_for(sizeof(T) == 4 ? 1024 : 768))
    tile_band_tasks_kernel(int m, int n, int ntasks, int K, const int *__restrict__ task,
                           const int *__restrict__ tile_col, const unsigned char *__restrict__ tile_fmt,
                           const int *__restrict__ tile_off, const unsigned char *__restrict__ tile_idx,
                           const T *__restrict__ tile_val, T *__restrict__ carry, const T *__restrict__ x,
                           T *__restrict__ y, T alpha, T beta)
{
    if (!port_warp_matches<W>()) return;
    constexpr int warps = tile_block / W, G = W / tile_dim, F = SPMVPORT_TILE_TASK_FIELDS;
    static_assert(W % (B * G) == 0, "a batch's B * G headers lie in one warp-wide header load");
    const int lane = port_lane<W>();
    const long long w = (long long)port_block_idx() * warps + (int)(port_thread_idx() / W);
    if (w * K >= ntasks) return; /* whole warps only */
    const int k0 = (int)(w * K), nk = ntasks - k0 < K ? ntasks - k0 : K; /* F * nk < W: checked at upload */
    const int r = lane & (tile_dim - 1), g = lane / tile_dim;
    const int rec = lane <= F * nk ? port_ldg(task + (long long)F * k0 + lane) : 0; /* the sentinel's first too */
    int first = port_shfl_idx<W>(rec, SPMVPORT_TILE_TASK_FIRST);
    int last = port_shfl_idx<W>(rec, F + SPMVPORT_TILE_TASK_FIRST);
    int hc, hf, hv;
    tile_lane_header(hc, hf, hv, tile_col, tile_fmt, tile_off, first + lane, last);
    for (int k = 0; k < nk; k++) {
        const long long r0 = (long long)port_shfl_idx<W>(rec, F * k + SPMVPORT_TILE_TASK_ROW) * tile_dim;
        const int slot = port_shfl_idx<W>(rec, F * k + SPMVPORT_TILE_TASK_CARRY);
        const int rowlen = m - r0 < tile_dim ? (int)(m - r0) : tile_dim;
        const int kn = k + 1 < nk ? k + 1 : k; /* the next task (none after the last: an empty range) */
        const int nlast = port_shfl_idx<W>(rec, F * (kn + 1) + SPMVPORT_TILE_TASK_FIRST);
        int nc, nf, nv; /* the next task's headers, in flight during this task */
        tile_lane_header(nc, nf, nv, tile_col, tile_fmt, tile_off, last + lane, k + 1 < nk ? nlast : last);
        T acc = T(0);
        for (int c = first; c < last; c += W) { /* tasks of more than W tiles: further header loads */
            if (c != first) tile_lane_header(hc, hf, hv, tile_col, tile_fmt, tile_off, c + lane, last);
            for (int bb = 0; bb < W && c + bb < last; bb += B * G) {
                int col[B], fmt[B], v0[B];
                bool band = true;
#pragma unroll
                for (int i = 0; i < B; i++) { /* group g's tiles c + bb + g + i G */
                    const int s = bb + g + i * G;
                    col[i] = port_shfl_idx<W>(hc, s), fmt[i] = port_shfl_idx<W>(hf, s), v0[i] = port_shfl_idx<W>(hv, s);
                    band = band && (fmt[i] < 0 || SPMVPORT_TILE_IS_BAND(fmt[i]));
                }
                tile_band_batch_sum<B, T>(acc, col, fmt, v0, band, c + bb + g, G, last, tile_col, tile_fmt,
                                                tile_off, tile_idx, tile_val, x, n, rowlen, r);
            }
        }
        for (int sh = tile_dim; sh < W; sh <<= 1) acc += port_shfl_xor<W>(acc, sh); /* every lane of the warp */
        if (lane < rowlen) tile_write_row(acc, lane, slot, r0, carry, y, alpha, beta);
        first = last, last = nlast, hc = nc, hf = nf, hv = nv;
    }
}

/* The deferred CSR when it runs inside the tile kernel (SPMVPORT_TILE_FLAG_DEFERRED_INLINE); ptr NULL otherwise. */
template <typename T> struct tile_deferred {
    const int *ptr, *col;
    const T *val;
};

/* The tile row's deferred entries (rows r0 .. r0 + rowlen - 1), W at a time across the warp, so a tile row whose
 * entries sit in a few rows keeps every lane busy (FEM blocks: a row per lane would take 4x the steps): lane l
 * multiplies entry base + l; a segmented inclusive scan (Hillis-Steele; the segments are the rows, whose starts
 * the lanes r hold) sums each row's entries of the chunk at its last lane, and lane r of group 0 adds that sum.
 * Chunks in order, so the sums are the executor's. The caller's warp is converged (a warp-uniform branch). */
template <int W, typename T>
PORT_DEVICE void tile_deferred_rows(T &acc, const tile_deferred<T> &def, const T *__restrict__ x, long long r0,
                                    int lane, int rowlen)
{
    const int r = lane & (tile_dim - 1), ro = r < rowlen ? r : rowlen;
    const int rs = port_ldg(def.ptr + r0 + ro), re = port_ldg(def.ptr + r0 + (r < rowlen ? r + 1 : rowlen));
    const int b = port_shfl_idx<W>(rs, 0), e = port_shfl_idx<W>(re, rowlen - 1);
    /* one chunk ahead: the next chunk's value and column are loaded before this chunk's scan and its x entry after
     * it, so a chunk costs about one memory round trip instead of two (column, then x) */
    T val = b + lane < e ? port_ld_stream(def.val + b + lane) : T(0);
    T xv = b + lane < e ? port_ldg(x + port_ld_stream(def.col + b + lane)) : T(0);
    for (int base = b; base < e; base += W) {
        const int kn = base + W + lane;
        const T vn = kn < e ? port_ld_stream(def.val + kn) : T(0);
        const int cn = kn < e ? port_ld_stream(def.col + kn) : 0;
        T v = val * xv; /* 0 past e */
        /* the chunk's row starts as a lane mask, then each lane's segment start */
        port_lane_mask_t starts = rs < re && rs >= base && rs - base < W ? port_lane_mask_t(1) << (rs - base) : 0;
        for (int sh = 1; sh < W; sh <<= 1) starts |= port_shfl_xor<W>(starts, sh);
        const int hi = port_highest_lane(starts & port_lanemask_le<W>(lane)), seg = hi > 0 ? hi : 0;
        for (int d = 1; d < W; d <<= 1) {
            const T up = port_shfl_up<W>(v, d);
            if (lane - d >= seg) v += up;
        }
        const bool has = rs < re && re > base && rs - base < W; /* row r has entries in this chunk */
        const int last = (re - base < W ? re - base : W) - 1;
        const T sum = port_shfl_idx<W>(v, has ? last : 0);
        if (has && lane < tile_dim) acc += sum;
        val = vn, xv = kn < e ? port_ldg(x + cn) : T(0);
    }
}

/* L: tiles a group of 16 lanes has in flight at once (plan parameter SPMVPORT_TILE_P_INFLIGHT: 1, 2 or 4); BB
 * (L = 1 only, SPMVPORT_TILE_P_BAND_BATCH): 0, or band batches of BB tiles (2 or 4); CS (L = 1, BB = 0 only,
 * flag SPMVPORT_TILE_FLAG_CSR_STEPS): CSR tile rows in steps of 8 entries. GT (L = 1, flag
 * SPMVPORT_TILE_FLAG_GROUP_TASKS, BB = 0: band plans with it run tile_band_items_kernel): a task per group instead
 * of per warp (warp w, group g: task w G + g), the group taking all its task's tiles in order; no butterfly, and
 * the per-task work (record loads, rowlen, the y writes) is shared by G tasks. DI (L = 1, BB = 0, no
 * GT; flag SPMVPORT_TILE_FLAG_DEFERRED_INLINE): the deferred part inside (tile_inline_kernel), def its arrays
 * (unused otherwise). One body, two kernels: tile_kernel and tile_inline_kernel differ in their launch bounds. */
template <int W, typename T, int L, int BB, bool CS, bool GT, bool DI, int XU, int BK>
PORT_DEVICE void tile_body(int m, int n, int ntasks, const int *__restrict__ task, const int *__restrict__ tile_col,
                           const unsigned char *__restrict__ tile_fmt, const int *__restrict__ tile_off,
                           const unsigned char *__restrict__ tile_idx, const T *__restrict__ tile_val,
                           T *__restrict__ carry, const T *__restrict__ x, T *__restrict__ y, T alpha, T beta,
                           tile_deferred<T> def)
{
    if (!port_warp_matches<W>()) return;
    constexpr int warps = tile_threads<W, BK> / W, G = W / tile_dim;
    constexpr int S = GT ? 1 : G; /* stride between a group's tiles */
    const int lane = port_lane<W>();
    const int r = lane & (tile_dim - 1), g = lane / tile_dim;
    const long long w = ((long long)port_block_idx() * warps + (int)(port_thread_idx() / W)) * (GT ? G : 1) +
                        (GT ? g : 0); /* this lane's task */
    if (w >= ntasks) { /* whole warps (GT: whole groups, which share no warp operation) only */
        if constexpr (BK > 1) port_block_sync(); /* the block's barrier counts every warp */
        return;
    }
    const int *rec = task + (long long)SPMVPORT_TILE_TASK_FIELDS * w;
    const int first = port_ldg(rec + SPMVPORT_TILE_TASK_FIRST);
    const int last = port_ldg(rec + SPMVPORT_TILE_TASK_FIELDS + SPMVPORT_TILE_TASK_FIRST);
    const int slot = port_ldg(rec + SPMVPORT_TILE_TASK_CARRY);
    const int tr = port_ldg(rec + SPMVPORT_TILE_TASK_ROW);
    const long long r0 = (long long)tr * tile_dim;
    const int rowlen = m - r0 < tile_dim ? (int)(m - r0) : tile_dim;
    /* an inline deferred part: the tile row's first task takes it (w == 0, or the previous task is another tile
     * row's) */
    const bool takes_def = DI && (w == 0 || port_ldg(rec - SPMVPORT_TILE_TASK_FIELDS + SPMVPORT_TILE_TASK_ROW) != tr);

    /* Group g takes tiles first + g, first + g + G, ... (GT: all of its own task's, first, first + 1, ...): BB, 4 at a time (tile_group_batches); else L at a time,
     * the L headers (a broadcast line each) loaded one batch ahead, so their round trip overlaps the previous
     * batch (tile_batch_sum). x is read through the read-only cache (no staging, no shared memory), and no warp
     * operation sits in the loop: the groups run independently until the butterfly. */
    T acc = T(0);
    const int b1 = GT ? first : first + g; /* the group's first tile */
    if (BB) {
        tile_group_batches<S, (BB > 0 ? BB : 1), T>(acc, b1, last, tile_col, tile_fmt, tile_off, tile_idx, tile_val, x,
                                                    n, rowlen, r);
    } else if (XU > 0) { /* L = 1, no GT: the groups step together (warp-uniform bounds), group g on tile bw + g */
        if (takes_def) tile_deferred_rows<W>(acc, def, x, r0, lane, rowlen);
        tile_meta h[1];
        tile_load_batch<1>(h, tile_col, tile_fmt, tile_off, b1, G, last);
        for (int bw = first; bw < last; bw += G) {
            tile_meta hn[1];
            tile_load_batch<1>(hn, tile_col, tile_fmt, tile_off, bw + G + g, G, last);
            if (port_ballot<W>(h[0].fmt > SPMVPORT_TILE_CSR) == 0) /* CSR or no tile (-1) in every group */
                tile_csr_shuffled<W, (XU > 0 ? XU : 1)>(acc, h[0], tile_idx, tile_val, x, n, rowlen, r, lane);
            else if (XU == 16 && port_ballot<W>(h[0].fmt > SPMVPORT_TILE_CSR && h[0].fmt != SPMVPORT_TILE_DENSE) == 0)
                tile_csr_shuffled<W, 16, T, true>(acc, h[0], tile_idx, tile_val, x, n, rowlen, r,
                                                  lane); /* CSR and Dense tiles, steps of 16 (one copy per W, T) */
            else if (h[0].fmt >= 0)
                tile_batch_sum<1, T, false>::run(acc, h, tile_idx, tile_val, x, n, rowlen, r);
            h[0] = hn[0];
        }
    } else {
        if (takes_def) tile_deferred_rows<W>(acc, def, x, r0, lane, rowlen);
        tile_meta h[L];
        tile_load_batch<L>(h, tile_col, tile_fmt, tile_off, b1, S, last);
        for (int b0 = b1; b0 < last; b0 += L * S) {
            tile_meta hn[L];
            tile_load_batch<L>(hn, tile_col, tile_fmt, tile_off, b0 + L * S, S, last);
            tile_batch_sum<L, T, CS>::run(acc, h, tile_idx, tile_val, x, n, rowlen, r);
#pragma unroll
            for (int i = 0; i < L; i++) h[i] = hn[i];
        }
    }
    if (!GT)
        for (int sh = tile_dim; sh < W; sh <<= 1) acc += port_shfl_xor<W>(acc, sh); /* every lane of the warp */
    if constexpr (BK > 1) {
        /* block tasks: the BK warps of a tile row leave their sums here; its first warp adds them in task order
         * (the executor's and the fix-up's order: 0 + s0 + s1 + ...) */
        PORT_SHARED T part[warps][tile_dim];
        const int wb = (int)(port_thread_idx() / W);
        if (lane < tile_dim) part[wb][lane] = acc;
        port_block_sync();
        if (wb % BK == 0 && lane < rowlen) {
            T sum = T(0);
#pragma unroll
            for (int j = 0; j < BK; j++) sum += part[wb + j][lane];
            y[r0 + lane] = tile_store(alpha, sum, beta, y + r0 + lane);
        }
        return;
    }
    if ((GT ? r : lane) < rowlen) tile_write_row(acc, r, slot, r0, carry, y, alpha, beta);
}

template <int W, typename T, int L, int BB, bool CS = false, bool GT = false, int XU = 0, int BK = 1>
PORT_KERNEL void PORT_LAUNCH_BOUNDS((tile_threads<W, BK>))
    tile_kernel(int m, int n, int ntasks, const int *__restrict__ task, const int *__restrict__ tile_col,
                const unsigned char *__restrict__ tile_fmt, const int *__restrict__ tile_off,
                const unsigned char *__restrict__ tile_idx, const T *__restrict__ tile_val, T *__restrict__ carry,
                const T *__restrict__ x, T *__restrict__ y, T alpha, T beta)
{
    tile_body<W, T, L, BB, CS, GT, false, XU, BK>(m, n, ntasks, task, tile_col, tile_fmt, tile_off, tile_idx,
                                                  tile_val, carry, x, y, alpha, beta,
                                                  tile_deferred<T>{nullptr, nullptr, nullptr});
}

/* The plain kernel with the deferred part inside, held to 1536 resident threads an SM (sm_90: 40 registers, no
 * spills; unbounded, ptxas took 48, 1280 threads): on the H200, fem3d:3:48 0.1134 -> 0.1088 ms f64, 0.0800 ->
 * 0.0789 f32, uniform:2000000:16 0.2625 -> 0.2541 f64 (session 12). With x by shuffles (XU > 0) 1280 threads, 48
 * registers: at 1536, f64 spilled 48-52 bytes and measured 1.17x slower on fem3d:3:48 (H100, session 23; f32 fits
 * 40 registers with 3 entries a step, but was slower on fem3d:3:40, faster on :48 and :56, H200). f32 with steps
 * of 6 (its plans past L2) at 1536 threads, 40 registers and no spills: fem3d:3:48 and :56 2-3% faster, :40 the
 * same; with steps of 3 fem3d:3:28 (in L2) was 6% slower there (H200, session 29, run SJ): 1536 for steps of 6 only.
 * f32 with steps of 9 (session 30, run TC): 40 registers at 1536, no spills; 1536 was 2% faster on fem3d:3:40-56
 * (2-6 waves), 18% on fem3d:3:32 (6144 tasks: one wave at 1536, 1.16 at 1280), but 48 registers at 1280 were 7-9%
 * faster where the waves are as many either way and at most 2 (fem3d:3:24, :28, :36): the plan's flag
 * SPMVPORT_TILE_FLAG_REGS48 says which (R48). f64 with steps of 9 (only when asked for): 1280, 24 bytes spilled. */
template <typename T, int XU, bool R48 = false>
constexpr int tile_inline_threads()
{
    return XU == 16 && sizeof(T) == 8 ? SPMVPORT_TILE_THREADS_REGS64
           : XU > 0 && !((XU == 6 || (XU == 9 && !R48)) && sizeof(T) == 4) ? SPMVPORT_TILE_THREADS_REGS48
                                                                             : SPMVPORT_TILE_THREADS_REGS40;
}

template <int W, typename T, bool CS, int XU = 0, bool R48 = false, int BK = 1>
PORT_KERNEL void
PORT_LAUNCH_BOUNDS_MIN((tile_threads<W, BK>), (tile_inline_threads<T, XU, R48>() / tile_threads<W, BK>))
    tile_inline_kernel(int m, int n, int ntasks, const int *__restrict__ task, const int *__restrict__ tile_col,
                       const unsigned char *__restrict__ tile_fmt, const int *__restrict__ tile_off,
                       const unsigned char *__restrict__ tile_idx, const T *__restrict__ tile_val,
                       T *__restrict__ carry, const T *__restrict__ x, T *__restrict__ y, T alpha, T beta,
                       tile_deferred<T> def)
{
    tile_body<W, T, 1, 0, CS, false, true, XU, BK>(m, n, ntasks, task, tile_col, tile_fmt, tile_off, tile_idx,
                                                   tile_val, carry, x, y, alpha, beta, def);
}

/* Band items (band plans with a task per group, SPMVPORT_TILE_FLAG_GROUP_TASKS): a pass covers the next
 * tile_item_tiles tiles of a group's task. Lane j < tile_item_tiles of the group loads tile j's header and decodes
 * it into its diagonals ("items": x base c0 + d, value base v - rs, rows rs .. re - 1); a scan of the diagonal
 * counts over the group's 16 lanes puts them in the group's shared buffer in tile order, diagonals in order. Then
 * an item costs lane r one broadcast shared load, its value and x loads (when rs <= r < re) and an add, U items'
 * loads in flight together: about 10 instructions an item where the band batch spent ~75 per tile decoding
 * each header in every lane (the stencil is issue-bound: ncu, session 14, 3.4 warp instructions per entry in
 * f32). The order is the executor's (tile after tile, each tile's diagonals in order, zeros skipped), so the sums
 * are the band batch's bit for bit. A pass with another format in it is summed tile after tile (tile_apply). */
constexpr int tile_item_tiles = 16;                                 /* tiles per pass: every lane of a group */
constexpr int tile_item_unroll = 8;                                 /* items whose loads are in flight together */
constexpr int tile_item_cap = tile_item_tiles * SPMVPORT_TILE_BAND_MAXND + tile_item_unroll; /* + unroll slack */

template <int W, typename T>
PORT_KERNEL void PORT_LAUNCH_BOUNDS(tile_block)
    tile_band_items_kernel(int m, int n, int ntasks, const int *__restrict__ task, const int *__restrict__ tile_col,
                           const unsigned char *__restrict__ tile_fmt, const int *__restrict__ tile_off,
                           const unsigned char *__restrict__ tile_idx, const T *__restrict__ tile_val,
                           T *__restrict__ carry, const T *__restrict__ x, T *__restrict__ y, T alpha, T beta)
{
    if (!port_warp_matches<W>()) return;
    constexpr int warps = tile_block / W, G = W / tile_dim, U = tile_item_unroll;
    PORT_SHARED int4 items[tile_block / tile_dim][tile_item_cap];
    const int lane = port_lane<W>(), r = lane & (tile_dim - 1), g = lane / tile_dim;
    const long long w0 = ((long long)port_block_idx() * warps + (int)(port_thread_idx() / W)) * G;
    if (w0 >= ntasks) return; /* whole warps: the groups meet in shuffles and warp syncs */
    const long long w = w0 + g; /* this group's task; past the end: an empty one that writes nothing */
    const bool live = w < ntasks;
    const int *rec = task + (long long)SPMVPORT_TILE_TASK_FIELDS * (live ? w : 0);
    const int first = live ? port_ldg(rec + SPMVPORT_TILE_TASK_FIRST) : 0;
    const int last = live ? port_ldg(rec + SPMVPORT_TILE_TASK_FIELDS + SPMVPORT_TILE_TASK_FIRST) : 0;
    const int slot = live ? port_ldg(rec + SPMVPORT_TILE_TASK_CARRY) : -1;
    const long long r0 = (long long)(live ? port_ldg(rec + SPMVPORT_TILE_TASK_ROW) : 0) * tile_dim;
    const int rowlen = m - r0 < tile_dim ? (int)(m - r0) : tile_dim;
    int passes = (last - first + tile_item_tiles - 1) / tile_item_tiles; /* warp-uniform: the most of its groups */
    for (int sh = tile_dim; sh < W; sh <<= 1) {
        const int o = port_shfl_xor<W>(passes, sh);
        passes = o > passes ? o : passes;
    }
    int4 *buf = items[port_thread_idx() / tile_dim];
    const port_lane_mask_t group_mask = (((port_lane_mask_t)1 << tile_dim) - 1) << (g * tile_dim);
    T acc = T(0);
    for (int p = 0; p < passes; p++) {
        const int t0 = first + p * tile_item_tiles, t = t0 + r;
        const bool has = r < tile_item_tiles && t < last;
        const int f = has ? port_ldg(tile_fmt + t) : -1;
        const int c0 = has ? port_ldg(tile_col + t) * tile_dim : 0;
        int v = has ? port_ldg(tile_off + 2 * t) : 0;
        const bool band = (port_ballot<W>(has && !SPMVPORT_TILE_IS_BAND(f)) & group_mask) == 0;
        int lo, nd;
        tile_band_diagonals(f, lo, nd);
        if (!has || !SPMVPORT_TILE_IS_BAND(f)) nd = 0;
        int end = nd; /* inclusive scan of the diagonal counts over the group's lanes */
        for (int d = 1; d < tile_dim; d <<= 1) {
            const int up = port_shfl_up<W>(end, d);
            if (r >= d) end += up;
        }
        const int total = port_shfl_idx<W>(end, g * tile_dim + tile_dim - 1);
        if (band) {
            const int collen = n - c0 < tile_dim ? n - c0 : tile_dim;
            for (int k = 0, at = end - nd; k < nd; k++) {
                const int d = lo + k, rs = d < 0 ? -d : 0, re = rowlen < collen - d ? rowlen : collen - d;
                buf[at + k] = make_int4(c0 + d, v - rs, rs, re);
                v += re > rs ? re - rs : 0;
            }
        }
        port_warp_sync<W>();
        if (band) {
            for (int i = 0; i < total; i += U) {
                T val[U], xv[U];
#pragma unroll
                for (int u = 0; u < U; u++) { /* slots past total (< cap) hold stale items: not used */
                    const int4 it = buf[i + u];
                    const bool in = i + u < total && r >= it.z && r < it.w;
                    val[u] = in ? port_ld_stream(tile_val + (it.y + r)) : T(0);
                    xv[u] = in ? port_ldg(x + (it.x + r)) : T(0);
                }
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (val[u] != T(0)) acc += val[u] * xv[u];
            }
        } else { /* tile after tile (band batches here cost every pass registers and spills) */
            const int t1 = last - t0 < tile_item_tiles ? last : t0 + tile_item_tiles;
            for (int tt = t0; tt < t1; tt++)
                tile_apply_at(acc, tt, tile_col, tile_fmt, tile_off, tile_idx, tile_val, x, n, rowlen, r);
        }
        port_warp_sync<W>(); /* the next pass rewrites the buffer */
    }
    if (live && r < rowlen) tile_write_row(acc, r, slot, r0, carry, y, alpha, beta);
}

/* Rows of split tile rows: their carries, in task order. */
template <typename T>
PORT_KERNEL void PORT_LAUNCH_BOUNDS(tile_block)
    tile_fixup_kernel(int m, int nsplit, const int *__restrict__ split, const T *__restrict__ carry,
                      T *__restrict__ y, T alpha, T beta)
{
    const long long i = (long long)port_block_idx() * port_block_dim() + port_thread_idx();
    if (i >= (long long)nsplit * tile_dim) return;
    const long long s = i / tile_dim;
    const int r = (int)(i % tile_dim);
    const int *rec = split + SPMVPORT_TILE_SPLIT_FIELDS * s;
    const long long row = (long long)rec[SPMVPORT_TILE_SPLIT_ROW] * tile_dim + r;
    if (row >= m) return;
    const int c0 = rec[SPMVPORT_TILE_SPLIT_CARRY], c1 = rec[SPMVPORT_TILE_SPLIT_FIELDS + SPMVPORT_TILE_SPLIT_CARRY];
    const T sum = port_ordered_sum(carry, (long long)c0 * tile_dim + r, (long long)c1 * tile_dim + r, tile_dim);
    y[row] = tile_store(alpha, sum, beta, y + row);
}

/* ---- host side ------------------------------------------------------------------------------------------------ */

/* What the kernels rely on, checked at upload: NULL when fd is a layout they can run, else the reason. */
inline const char *tile_layout_problem(const spmvport_format_data *fd, int warp)
{
    const int64_t *prm = fd->params;
    const size_t vs = fd->precision == SPMV_F32 ? sizeof(float) : sizeof(double), i4 = sizeof(int32_t);
    if (fd->narrays != SPMVPORT_TILE_NARRAYS) return "tile: wrong number of arrays";
    if (fd->warp_size != warp) return "tile: layout built for another warp size";
    if (warp % tile_dim != 0 || ((warp / tile_dim) & (warp / tile_dim - 1)) != 0 || tile_block % warp != 0)
        return "tile: the warp must be a power-of-two multiple of 16 lanes";
    const int64_t tiles = prm[SPMVPORT_TILE_P_TILES], tasks = prm[SPMVPORT_TILE_P_TASKS];
    const int64_t splits = prm[SPMVPORT_TILE_P_SPLITS], carries = prm[SPMVPORT_TILE_P_CARRIES];
    const int64_t dnnz = prm[SPMVPORT_TILE_P_DEF_NNZ], dwarps = prm[SPMVPORT_TILE_P_DEF_WARPS];
    const int64_t chunk = prm[SPMVPORT_TILE_P_DEF_CHUNK], inflight = prm[SPMVPORT_TILE_P_INFLIGHT];
    const spmvport_array *a = fd->arrays;
    if (inflight != 1 && inflight != 2 && inflight != 4) return "tile: tiles in flight per group not 1, 2 or 4";
    const int64_t bb = prm[SPMVPORT_TILE_P_BAND_BATCH];
    if (bb != 0 && ((bb != 2 && bb != 4) || inflight != 1))
        return "tile: band batches of 2 or 4 tiles, with one tile in flight per group";
    const int64_t fl = prm[SPMVPORT_TILE_P_FLAGS];
    if ((fl & ~(int64_t)(SPMVPORT_TILE_FLAG_CSR_STEPS | SPMVPORT_TILE_FLAG_GROUP_TASKS |
                         SPMVPORT_TILE_FLAG_DEFERRED_INLINE | SPMVPORT_TILE_FLAG_CSR_SHUFFLE |
                         SPMVPORT_TILE_FLAG_CSR_STEP3 | SPMVPORT_TILE_FLAG_CSR_STEP6 | SPMVPORT_TILE_FLAG_CSR_STEP9 |
                         SPMVPORT_TILE_FLAG_REGS48 | SPMVPORT_TILE_FLAG_CSR_STEP16 | SPMVPORT_TILE_FLAG_BLOCK_TASKS2 |
                         SPMVPORT_TILE_FLAG_BLOCK_TASKS4 | SPMVPORT_TILE_FLAG_BLOCK_TASKS8)) != 0 ||
        ((fl & SPMVPORT_TILE_FLAG_CSR_STEPS) && (bb != 0 || inflight != 1)))
        return "tile: CSR steps only in the kernel without band tiles, one tile in flight";
    if ((fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) &&
        (bb != 0 || inflight != 1 || (fl & (SPMVPORT_TILE_FLAG_CSR_STEPS | SPMVPORT_TILE_FLAG_GROUP_TASKS))))
        return "tile: x by shuffles only in the kernel without band tiles, one tile in flight, a task per warp and "
               "no CSR steps";
    if ((fl & SPMVPORT_TILE_FLAG_CSR_STEP3) && !(fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE))
        return "tile: steps of 3 entries only with x by shuffles";
    if ((fl & SPMVPORT_TILE_FLAG_CSR_STEP6) && !(fl & SPMVPORT_TILE_FLAG_CSR_STEP3))
        return "tile: steps of 6 entries only as two steps of 3";
    if ((fl & SPMVPORT_TILE_FLAG_CSR_STEP9) &&
        (!(fl & SPMVPORT_TILE_FLAG_CSR_STEP3) || (fl & SPMVPORT_TILE_FLAG_CSR_STEP6)))
        return "tile: steps of 9 entries only as three steps of 3, never with steps of 6";
    if ((fl & SPMVPORT_TILE_FLAG_CSR_STEP16) &&
        ((fl & SPMVPORT_TILE_FLAG_CSR_STEP3) || !(fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE)))
        return "tile: steps of 16 entries only as four steps of 4, with x by shuffles";
    if ((fl & SPMVPORT_TILE_FLAG_REGS48) && !(fl & SPMVPORT_TILE_FLAG_CSR_STEP9))
        return "tile: 48 registers a thread only with steps of 9";
    const int bk = spmvport_tile_block_tasks(fl);
    const int64_t bkf = fl & (SPMVPORT_TILE_FLAG_BLOCK_TASKS2 | SPMVPORT_TILE_FLAG_BLOCK_TASKS4 |
                              SPMVPORT_TILE_FLAG_BLOCK_TASKS8);
    if ((bkf & (bkf - 1)) != 0) return "tile: block tasks of two counts at once";
    if (bk > 1 && (!(fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) || (fl & SPMVPORT_TILE_FLAG_CSR_STEP3) ||
                   bk * warp > SPMVPORT_TILE_BLOCK_TASKS_MAX_THREADS || splits != 0 || carries != 0 ||
                   tasks != bk * prm[SPMVPORT_TILE_P_TILE_ROWS]))
        return "tile: block tasks need x by shuffles in steps of 4 or 16, at most 256 threads (tasks x warp) a tile "
               "row, no split rows, and exactly that many tasks a tile row";
    if (bk > 1 && a[SPMVPORT_TILE_A_TASK].data != NULL) {
        const int *task = (const int *)a[SPMVPORT_TILE_A_TASK].data;
        for (int64_t w = 0; w < tasks; w++) /* the kernel adds warp w's sums into the row of warp w - w % bk */
            if (task[SPMVPORT_TILE_TASK_FIELDS * w + SPMVPORT_TILE_TASK_ROW] != w / bk ||
                task[SPMVPORT_TILE_TASK_FIELDS * w + SPMVPORT_TILE_TASK_CARRY] != -1)
                return "tile: block tasks: a task's tile row is not its index / tasks a tile row, or it has a carry";
    }
    const int64_t bt = prm[SPMVPORT_TILE_P_BAND_TASKS];
    if ((fl & SPMVPORT_TILE_FLAG_GROUP_TASKS) && (inflight != 1 || bt != 1))
        return "tile: a task per group only with one tile in flight and one task per warp";
    if (bt < 1 || bt > SPMVPORT_TILE_MAX_BAND_TASKS || (bt > 1 && bb == 0) ||
        SPMVPORT_TILE_TASK_FIELDS * bt >= warp)
        return "tile: tasks per warp not 1, or 2 .. 8 with band batches";
    if (tiles < 0 || tasks < (fd->m > 0 ? 1 : 0) || tasks >= INT32_MAX / SPMVPORT_TILE_TASK_FIELDS || splits < 0 ||
        carries < 0 || carries > INT32_MAX / tile_dim || a[SPMVPORT_TILE_A_COL].bytes != (size_t)tiles * i4 ||
        a[SPMVPORT_TILE_A_FMT].bytes != (size_t)tiles || a[SPMVPORT_TILE_A_OFF].bytes != 2 * ((size_t)tiles + 1) * i4 ||
        a[SPMVPORT_TILE_A_TASK].bytes != SPMVPORT_TILE_TASK_FIELDS * ((size_t)tasks + 1) * i4 ||
        a[SPMVPORT_TILE_A_SPLIT].bytes != SPMVPORT_TILE_SPLIT_FIELDS * ((size_t)splits + 1) * i4 ||
        a[SPMVPORT_TILE_A_CARRY].bytes != (size_t)carries * tile_dim * vs)
        return "tile: tile, task or carry arrays inconsistent with the parameters";
    if (prm[SPMVPORT_TILE_P_BAND_BATCH] == 0 && fd->arrays[SPMVPORT_TILE_A_FMT].data != NULL) {
        const unsigned char *f = (const unsigned char *)fd->arrays[SPMVPORT_TILE_A_FMT].data;
        for (int64_t t = 0; t < prm[SPMVPORT_TILE_P_TILES]; t++) /* only the band batch kernel reads them */
            if (SPMVPORT_TILE_IS_BAND(f[t])) return "tile: band tiles without band batches";
    }
    const bool dinline = (fl & SPMVPORT_TILE_FLAG_DEFERRED_INLINE) != 0;
    if (dinline && (dnnz <= 0 || dnnz > INT32_MAX - warp || bt != 1 || bb != 0 || inflight != 1 ||
                    (fl & SPMVPORT_TILE_FLAG_GROUP_TASKS) || chunk != 0 || dwarps != 0 ||
                    prm[SPMVPORT_TILE_P_DEF_EMPTY] != 0))
        return "tile: an inline deferred part needs deferred entries, the plain kernel (one tile in flight, no band "
               "batches, one task per warp) and no csr_lb split";
    for (int k = 0; dinline && k < SPMVPORT_LB_NARRAYS; k++)
        if (a[SPMVPORT_TILE_A_DEF_SPLIT + k].bytes != 0) return "tile: an inline deferred part has no csr_lb split";
    if (dnnz < 0 || dnnz > INT32_MAX ||
        (dnnz > 0 && !dinline && (chunk <= 0 || chunk % warp != 0 || chunk > INT32_MAX || dwarps < 1 ||
                                  dwarps > INT32_MAX || dwarps * chunk < dnnz)))
        return "tile: deferred part's csr_lb split inconsistent";
    if (dnnz > 0 && (a[SPMVPORT_TILE_A_DEF_PTR].bytes != ((size_t)fd->m + 1) * i4 ||
                     a[SPMVPORT_TILE_A_DEF_COL].bytes != (size_t)dnnz * i4 ||
                     a[SPMVPORT_TILE_A_DEF_VAL].bytes != (size_t)dnnz * vs))
        return "tile: deferred arrays inconsistent with the parameters";
    if (dnnz > 0 && !dinline)
        return lb_layout_problem(a + SPMVPORT_TILE_A_DEF_SPLIT, dnnz, fd->m, chunk, dwarps,
                                 prm[SPMVPORT_TILE_P_DEF_EMPTY], vs, warp);
    return NULL;
}

/* tile_kernel with one tile in flight: band batches of bb tiles (4 or 2), else CSR steps (cs) or not, with the
 * deferred part inside when def.ptr is set (checked at upload: then bb = 0 and no GT); GT: a task per group. */
template <int W, typename T, bool GT>
void launch_tile_one(int64_t bb, bool cs, int xu, bool r48, unsigned blocks, port_stream_t s, int m, int n,
                     int tasks, const int *task, const int *tcol, const unsigned char *tfmt, const int *toff,
                     const unsigned char *tidx, const T *tval, T *carry, const T *x, T *y, T alpha, T beta,
                     tile_deferred<T> def)
{
    if (bb != 0) {
        if constexpr (GT) /* a task per group on a band plan: band items, whatever bb */
            PORT_LAUNCH(blocks, tile_block, 0, s, tile_band_items_kernel<W, T>)
            (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
        else if (bb == 4)
            PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 1, 4, false, false>)
            (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
        else
            PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 1, 2, false, false>)
            (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
    } else if (def.ptr != nullptr && xu == 3)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_inline_kernel<W, T, false, 3>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
    else if (def.ptr != nullptr && xu == 4)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_inline_kernel<W, T, false, 4>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
    else if (def.ptr != nullptr && xu == 6)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_inline_kernel<W, T, false, 6>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
    else if (def.ptr != nullptr && xu == 9 && r48) /* REGS48: f32 only (an f64 plan takes the kernel below) */
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_inline_kernel<W, T, false, 9, (sizeof(T) == 4)>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
    else if (def.ptr != nullptr && xu == 9)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_inline_kernel<W, T, false, 9>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
    else if (def.ptr != nullptr && xu == 16)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_inline_kernel<W, T, false, 16>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
    else if (def.ptr != nullptr && cs)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_inline_kernel<W, T, true>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
    else if (def.ptr != nullptr)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_inline_kernel<W, T, false>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
    else if (xu == 3 && !GT) /* checked at upload: x by shuffles never with GT */
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 1, 0, false, false, 3>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
    else if (xu == 4 && !GT)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 1, 0, false, false, 4>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
    else if (xu == 6 && !GT)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 1, 0, false, false, 6>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
    else if (xu == 9 && !GT)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 1, 0, false, false, 9>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
    else if (xu == 16 && !GT)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 1, 0, false, false, 16>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
    else if (cs)
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 1, 0, true, GT>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
    else
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 1, 0, false, GT>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
}

/* The shuffled kernels with BK block tasks a tile row (steps of 4 or 16, checked at upload), with the deferred part
 * inside when def.ptr is set; blocks of tile_threads<W, BK> threads. */
template <int W, typename T, int BK>
void launch_block_tasks(int xu, port_stream_t s, int m, int n, int tasks, const int *task, const int *tcol,
                        const unsigned char *tfmt, const int *toff, const unsigned char *tidx, const T *tval,
                        T *carry, const T *x, T *y, T alpha, T beta, tile_deferred<T> def)
{
    constexpr int threads = tile_threads<W, BK>, warps = threads / W;
    const unsigned blocks = (unsigned)((tasks + warps - 1) / warps);
    if (def.ptr != nullptr && xu == 16)
        PORT_LAUNCH(blocks, threads, 0, s, tile_inline_kernel<W, T, false, 16, false, BK>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
    else if (def.ptr != nullptr)
        PORT_LAUNCH(blocks, threads, 0, s, tile_inline_kernel<W, T, false, 4, false, BK>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
    else if (xu == 16)
        PORT_LAUNCH(blocks, threads, 0, s, tile_kernel<W, T, 1, 0, false, false, 16, BK>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
    else
        PORT_LAUNCH(blocks, threads, 0, s, tile_kernel<W, T, 1, 0, false, false, 4, BK>)
        (m, n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
}

/* y = alpha*A*x + beta*y on stream s. Plan: anything with `fd` (the format data) and `arrays` (device copies of
 * fd's arrays, in fd's order; NULL for empty ones), e.g. the backend's gpu_plan. Launches, in stream order:
 * tile_kernel<W, T, L> (L = tile_inflight; ceil(tasks / (tile_block / W)) blocks of tile_block threads, no
 * shared memory; tile_inline_kernel with the deferred part inside; tile_band_items_kernel on band plans with a
 * task per group; tile_band_tasks_kernel with K tasks per warp), tile_fixup_kernel when tile rows are split,
 * then for a deferred part not inside csr_lb (launch_lb) with
 * beta = 1. The caller checks the launch error; m == 0 launches nothing. */
template <int W, typename T, typename Plan>
void launch_tile(const Plan *p, double alpha_d, const void *xv, double beta_d, void *yv, port_stream_t s)
{
    const spmvport_format_data *fd = p->fd;
    const int64_t *prm = fd->params;
    void *const *d = p->arrays;
    const T alpha = (T)alpha_d, beta = (T)beta_d;
    const T *x = (const T *)xv;
    T *y = (T *)yv;
    const int tasks = (int)prm[SPMVPORT_TILE_P_TASKS], splits = (int)prm[SPMVPORT_TILE_P_SPLITS];
    T *carry = (T *)d[SPMVPORT_TILE_A_CARRY];
    if (fd->m == 0 || tasks == 0) return;
    constexpr int warps = tile_block / W;
    const int64_t fl = prm[SPMVPORT_TILE_P_FLAGS];
    const bool gt = (fl & SPMVPORT_TILE_FLAG_GROUP_TASKS) != 0, cs = (fl & SPMVPORT_TILE_FLAG_CSR_STEPS) != 0;
    const int xu = spmvport_tile_shuffle_step(fl);
    const bool r48 = (fl & SPMVPORT_TILE_FLAG_REGS48) != 0;
    const long long per_block = (long long)warps * (gt ? W / tile_dim : 1); /* tasks per block */
    const unsigned blocks = (unsigned)((tasks + per_block - 1) / per_block);
    const int *task = (const int *)d[SPMVPORT_TILE_A_TASK], *tcol = (const int *)d[SPMVPORT_TILE_A_COL];
    const unsigned char *tfmt = (const unsigned char *)d[SPMVPORT_TILE_A_FMT];
    const int *toff = (const int *)d[SPMVPORT_TILE_A_OFF];
    const unsigned char *tidx = (const unsigned char *)d[SPMVPORT_TILE_A_IDX];
    const T *tval = (const T *)d[SPMVPORT_TILE_A_VAL];
    const bool dinline = (fl & SPMVPORT_TILE_FLAG_DEFERRED_INLINE) != 0;
    const tile_deferred<T> def = {dinline ? (const int *)d[SPMVPORT_TILE_A_DEF_PTR] : nullptr,
                                  (const int *)d[SPMVPORT_TILE_A_DEF_COL], (const T *)d[SPMVPORT_TILE_A_DEF_VAL]};
    const int bk = spmvport_tile_block_tasks(fl);
    switch (bk > 1 ? 0 : prm[SPMVPORT_TILE_P_INFLIGHT]) { /* checked at upload: 1, 2 or 4 */
    case 0: /* block tasks (checked at upload: bk x W at most SPMVPORT_TILE_BLOCK_TASKS_MAX_THREADS) */
        if constexpr (8 * W <= SPMVPORT_TILE_BLOCK_TASKS_MAX_THREADS)
            if (bk == 8) {
                launch_block_tasks<W, T, 8>(xu, s, fd->m, fd->n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x,
                                            y, alpha, beta, def);
                break;
            }
        if (bk == 4) {
            launch_block_tasks<W, T, 4>(xu, s, fd->m, fd->n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y,
                                        alpha, beta, def);
            break;
        }
        launch_block_tasks<W, T, 2>(xu, s, fd->m, fd->n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y,
                                    alpha, beta, def);
        break;
    case 4:
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 4, 0>)
        (fd->m, fd->n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
        break;
    case 2:
        PORT_LAUNCH(blocks, tile_block, 0, s, tile_kernel<W, T, 2, 0>)
        (fd->m, fd->n, tasks, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
        break;
    default:
        if (prm[SPMVPORT_TILE_P_BAND_TASKS] > 1) { /* K tasks per warp (checked at upload: band batches) */
            const int K = (int)prm[SPMVPORT_TILE_P_BAND_TASKS];
            const unsigned kb = (unsigned)(((long long)tasks + (long long)K * warps - 1) / ((long long)K * warps));
            if (prm[SPMVPORT_TILE_P_BAND_BATCH] == 4)
                PORT_LAUNCH(kb, tile_block, 0, s, tile_band_tasks_kernel<W, T, 4>)
                (fd->m, fd->n, tasks, K, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
            else
                PORT_LAUNCH(kb, tile_block, 0, s, tile_band_tasks_kernel<W, T, 2>)
                (fd->m, fd->n, tasks, K, task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta);
        } else if (gt)
            launch_tile_one<W, T, true>(prm[SPMVPORT_TILE_P_BAND_BATCH], cs, xu, r48, blocks, s, fd->m, fd->n, tasks,
                                        task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
        else
            launch_tile_one<W, T, false>(prm[SPMVPORT_TILE_P_BAND_BATCH], cs, xu, r48, blocks, s, fd->m, fd->n, tasks,
                                         task, tcol, tfmt, toff, tidx, tval, carry, x, y, alpha, beta, def);
        break;
    }
    if (splits > 0)
        PORT_LAUNCH((unsigned)(((long long)splits * tile_dim + tile_block - 1) / tile_block), tile_block, 0, s,
                    tile_fixup_kernel<T>)
        (fd->m, splits, (const int *)d[SPMVPORT_TILE_A_SPLIT], carry, y, alpha, beta);
    const int dnnz = (int)prm[SPMVPORT_TILE_P_DEF_NNZ];
    if (dnnz == 0 || dinline) return;
    launch_lb<W, T>(lb_split_view<T>(d + SPMVPORT_TILE_A_DEF_SPLIT, dnnz, prm[SPMVPORT_TILE_P_DEF_WARPS],
                                     prm[SPMVPORT_TILE_P_DEF_CHUNK], prm[SPMVPORT_TILE_P_DEF_EMPTY],
                                     d[SPMVPORT_TILE_A_DEF_COL], d[SPMVPORT_TILE_A_DEF_VAL]),
                    x, y, alpha, T(1), s);
}

} /* namespace */

#endif /* SPMVPORT_DEVICE_TILE_KERNELS_H */
