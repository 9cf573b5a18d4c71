/*
 * ehyb_executor.c -- CPU executor of format ehyb, walking the arrays as device/ehyb_kernels.h does:
 *
 *  block p (one per part): stages x segment [col_begin(p), col_begin(p+1)), then its halo entries, then a zero
 *    (the padding target); its warps take the part's ELL slices (a block-local counter); lane l of slice s sums
 *    val[ptr[2s] + k*W + l] * xs[col[...]] for k < width, in k order, then its near-ER entries
 *    er_val[ptr[2s+1] + k*W + l] * x[er_col[...]] (column -1: padding, skipped); with a split G > 1, G warps
 *    share a slice, each summing every G-th batch of B entries, and their sums meet in warp order. A row without
 *    far ER entries is written y = alpha*sum + beta*y at once; a row with far entries (lane bit set in
 *    slice_er) "arrives".
 *  then every warp takes ER work items from the global counter: a long-row chunk (lane-strided sum over the
 *    chunk, shuffle-down tree W/2 .. 1, lane 0 arrives) or an ER slice (lane l sums its row's len entries with
 *    stride W, then arrives).
 *  arrive(e, slot, v): partial[slot] = v; ticket[e] += 1; the arrival that completes the rank's slot count sums
 *    the slots in order (ELL partial first), resets the ticket and writes y.
 *  the global counter and the finished-warp counter are reset by the last warp, so every call starts at zero.
 * The order in which arrivals happen does not change any result: the sum is always taken in slot order.
 * With beta == 0, y is never read. Accumulation is in the matrix's precision.
 */
#include "cpu_ref.h"
#include "../common/format_ehyb.h"

#define ARR(fd, slot, type) ((type)(fd)->arrays[(slot)].data)

#define DEFINE_EHYB_EXECUTOR(REAL, SUFFIX)                                                                      \
    typedef struct {                                                                                          \
        const int32_t *row_perm, *er_meta;                                                                    \
        REAL *partial, *y;                                                                                    \
        int32_t *ticket;                                                                                      \
        int plan_ordering;                                                                                    \
        REAL alpha, beta;                                                                                     \
    } ctx_##SUFFIX;                                                                                           \
                                                                                                              \
    static void store_##SUFFIX(const ctx_##SUFFIX *c, int32_t r, REAL sum)                                     \
    {                                                                                                         \
        const int32_t out = c->plan_ordering ? r : c->row_perm[r];                                            \
        c->y[out] = c->beta == (REAL)0 ? c->alpha * sum : c->alpha * sum + c->beta * c->y[out];               \
    }                                                                                                         \
                                                                                                              \
    static void arrive_##SUFFIX(const ctx_##SUFFIX *c, int32_t e, int32_t slot, REAL v)                        \
    {                                                                                                         \
        const int32_t base = c->er_meta[2 * e + 1], count = c->er_meta[2 * e + 3] - base;                     \
        int32_t t;                                                                                            \
        c->partial[slot] = v;                                                                                 \
        _Pragma("omp atomic capture seq_cst")                                                                 \
        t = c->ticket[e]++;                                                                                   \
        if (t != count - 1) return;                                                                           \
        REAL sum = c->partial[base];                                                                          \
        for (int32_t s = base + 1; s < base + count; s++) sum += c->partial[s];                               \
        c->ticket[e] = 0;                                                                                     \
        store_##SUFFIX(c, c->er_meta[2 * e], sum);                                                            \
    }                                                                                                         \
                                                                                                              \
    /* One block: the part's ELL slices. xs(l) stands for the staged x: own column l, then halo entry l - own,  \
     * then 0 (the padding target). G = split warps share a slice: warp g adds the load batches i = g, g + G, ... \
     * of the lane's ELL batches followed by its near-ER batches (B entries each, in k order), and the G partial   \
     * sums are added in warp order (G = 1: one sum in k order, ELL then near). */                               \
    static REAL staged_##SUFFIX(const spmvport_format_data *fd, const ctx_##SUFFIX *c, const REAL *x,            \
                                const int32_t *pp, int32_t l)                                                 \
    {                                                                                                         \
        const int32_t *col_perm = ARR(fd, SPMVPORT_EHYB_COL_PERM, const int32_t *);                           \
        const int32_t *halo = ARR(fd, SPMVPORT_EHYB_HALO, const int32_t *);                                   \
        const int32_t cb = pp[1], own = pp[5] - cb, hl = pp[7] - pp[3];                                       \
        if (l < own) return x[c->plan_ordering ? cb + l : col_perm[cb + l]];                                  \
        return l < own + hl ? x[halo[pp[3] + l - own]] : (REAL)0;                                             \
    }                                                                                                         \
                                                                                                              \
    static void ell_part_##SUFFIX(const spmvport_format_data *fd, const ctx_##SUFFIX *c, const REAL *x,         \
                                  int32_t p)                                                                  \
    {                                                                                                         \
        const int W = fd->warp_size, G = (int)fd->params[SPMVPORT_EHYB_P_SPLIT];                              \
        const int B = (int)fd->params[SPMVPORT_EHYB_P_BATCH];                                                 \
        const int32_t *pp = ARR(fd, SPMVPORT_EHYB_PART, const int32_t *) + 4 * (int64_t)p;                    \
        const int32_t *ell_ptr = ARR(fd, SPMVPORT_EHYB_ELL_PTR, const int32_t *);                             \
        const uint64_t *slice_er = ARR(fd, SPMVPORT_EHYB_SLICE_ER, const uint64_t *);                         \
        const uint16_t *col = ARR(fd, SPMVPORT_EHYB_ELL_COL, const uint16_t *);                               \
        const REAL *val = ARR(fd, SPMVPORT_EHYB_ELL_VAL, const REAL *);                                       \
        const int32_t *er_col = ARR(fd, SPMVPORT_EHYB_ER_COL, const int32_t *);                               \
        const REAL *er_val = ARR(fd, SPMVPORT_EHYB_ER_VAL, const REAL *);                                     \
        const int32_t rb = pp[0], sb = pp[2], re = pp[4], nsl = pp[6] - sb;                                   \
        for (int32_t s = 0; s < nsl; s++) {                                                                   \
            const int32_t gs = sb + s, off = ell_ptr[2 * gs], width = (ell_ptr[2 * gs + 2] - off) / W;        \
            const int32_t noff = ell_ptr[2 * gs + 1], nwidth = (ell_ptr[2 * gs + 3] - noff) / W;              \
            const int32_t nb_ell = (width + B - 1) / B, nb = nb_ell + (nwidth + B - 1) / B;                   \
            const uint64_t mask = slice_er[2 * gs];                                                           \
            int32_t rank = (int32_t)slice_er[2 * gs + 1];                                                     \
            for (int lane = 0; lane < W; lane++) {                                                            \
                REAL sum = 0;                                                                                 \
                for (int g = 0; g < G; g++) {                                                                 \
                    REAL part = 0;                                                                            \
                    for (int32_t i = g; i < nb; i += G)                                                       \
                        for (int32_t k = (i < nb_ell ? i : i - nb_ell) * B, u = 0; u < B; u++, k++) {         \
                            if (i < nb_ell && k < width) {                                                    \
                                const int32_t q = off + k * W + lane;                                         \
                                part += val[q] * staged_##SUFFIX(fd, c, x, pp, col[q]);                       \
                            } else if (i >= nb_ell && k < nwidth) { /* near-ER: x from global memory */        \
                                const int32_t q = noff + k * W + lane, j = er_col[q];                         \
                                if (j >= 0) part += er_val[q] * x[j];                                         \
                            }                                                                                 \
                        }                                                                                     \
                    sum = g == 0 ? part : sum + part;                                                         \
                }                                                                                             \
                const int32_t r = rb + s * W + lane;                                                          \
                if (r >= re) continue;                                                                        \
                if ((mask >> lane) & 1u) {                                                                    \
                    const int32_t e = rank++;                                                                 \
                    arrive_##SUFFIX(c, e, c->er_meta[2 * e + 1], sum);                                        \
                } else {                                                                                      \
                    store_##SUFFIX(c, r, sum);                                                                \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
    }                                                                                                         \
                                                                                                              \
    /* One ER work item, as one warp runs it. */                                                              \
    static void er_item_##SUFFIX(const spmvport_format_data *fd, const ctx_##SUFFIX *c, const REAL *x,          \
                                 int32_t w)                                                                   \
    {                                                                                                         \
        const int W = fd->warp_size;                                                                          \
        const int32_t chunks = (int32_t)fd->params[SPMVPORT_EHYB_P_CHUNKS];                                   \
        const int32_t er_slices = (int32_t)fd->params[SPMVPORT_EHYB_P_ER_SLICES];                             \
        const int32_t *work = ARR(fd, SPMVPORT_EHYB_ER_WORK, const int32_t *);                                \
        const int32_t *col = ARR(fd, SPMVPORT_EHYB_ER_COL, const int32_t *);                                  \
        const REAL *val = ARR(fd, SPMVPORT_EHYB_ER_VAL, const REAL *);                                        \
        REAL lane_sum[64];                                                                                    \
        if (w < chunks) {                                                                                     \
            const int32_t *ch = work + 4 * (int64_t)w;                                                        \
            for (int lane = 0; lane < W; lane++) {                                                            \
                lane_sum[lane] = 0;                                                                           \
                for (int32_t q = ch[2] + lane; q < ch[3]; q += W) lane_sum[lane] += val[q] * x[col[q]];       \
            }                                                                                                 \
            for (int off = W / 2; off > 0; off /= 2)                                                          \
                for (int lane = 0; lane < off; lane++) lane_sum[lane] += lane_sum[lane + off];                \
            arrive_##SUFFIX(c, ch[0], c->er_meta[2 * ch[0] + 1] + 1 + ch[1], lane_sum[0]);                    \
            return;                                                                                           \
        }                                                                                                     \
        const int32_t s = w - chunks, *sptr = work + 4 * (int64_t)chunks;                                     \
        const int32_t *lanes = sptr + er_slices + 1, off = sptr[s];                                           \
        for (int lane = 0; lane < W; lane++) {                                                                \
            const int32_t e = lanes[2 * ((int64_t)s * W + lane)], len = lanes[2 * ((int64_t)s * W + lane) + 1]; \
            REAL sum = 0;                                                                                     \
            for (int32_t k = 0; k < len; k++) sum += val[off + k * W + lane] * x[col[off + k * W + lane]];    \
            if (e >= 0) arrive_##SUFFIX(c, e, c->er_meta[2 * e + 1] + 1, sum);                                \
        }                                                                                                     \
    }                                                                                                         \
                                                                                                              \
    static void run_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta, REAL *y)     \
    {                                                                                                         \
        if (fd->m == 0) return; /* as the backend: nothing is launched */                                     \
        int32_t *sync = ARR(fd, SPMVPORT_EHYB_SYNC, int32_t *);                                               \
        const ctx_##SUFFIX c = {ARR(fd, SPMVPORT_EHYB_ROW_PERM, const int32_t *),                              \
                                ARR(fd, SPMVPORT_EHYB_ER_META, const int32_t *),                              \
                                ARR(fd, SPMVPORT_EHYB_PARTIAL, REAL *), y, sync + 2,                          \
                                (int)fd->params[SPMVPORT_EHYB_P_PLAN_ORDERING], alpha, beta};                 \
        const int32_t parts = (int32_t)fd->params[SPMVPORT_EHYB_P_PARTS];                                     \
        const int32_t chunks = (int32_t)fd->params[SPMVPORT_EHYB_P_CHUNKS];                                   \
        const int32_t items = chunks + (int32_t)fd->params[SPMVPORT_EHYB_P_ER_SLICES];                        \
        _Pragma("omp parallel for schedule(dynamic, 1) if(fd->nnz > 100000)")                                 \
        for (int32_t p = 0; p < parts; p++) ell_part_##SUFFIX(fd, &c, x, p);                                  \
        if (items == 0) return; /* the kernel skips the ER phase and its counters */                          \
        /* the global counter hands out items [sync[0], items): 0 unless a previous call failed to reset */   \
        const int32_t first = sync[0] < items ? sync[0] : items;                                              \
        const int32_t *work = ARR(fd, SPMVPORT_EHYB_ER_WORK, const int32_t *);                                \
        /* chunks of one long row run in order on one thread (they are consecutive items); slices freely */   \
        _Pragma("omp parallel for schedule(dynamic, 1) if(fd->nnz > 100000)")                                 \
        for (int32_t w = first; w < items; w++) {                                                             \
            if (w < chunks && w > first && work[4 * (int64_t)w] == work[4 * (int64_t)(w - 1)]) continue;      \
            er_item_##SUFFIX(fd, &c, x, w);                                                                   \
            for (int32_t v = w + 1; w < chunks && v < chunks && work[4 * (int64_t)v] == work[4 * (int64_t)w]; \
                 v++)                                                                                         \
                er_item_##SUFFIX(fd, &c, x, v);                                                               \
        }                                                                                                     \
        /* every warp then takes one failing ticket and counts itself finished; the last one resets both */    \
        const int64_t warps = (int64_t)parts * (SPMVPORT_EHYB_BLOCK_THREADS / fd->warp_size);                 \
        sync[0] = items;                                                                                      \
        sync[1] += (int32_t)(warps - 1);                                                                      \
        if (sync[1]++ == warps - 1) sync[0] = sync[1] = 0;                                                    \
    }

DEFINE_EHYB_EXECUTOR(float, f32)
DEFINE_EHYB_EXECUTOR(double, f64)

void spmvport_cpu_ehyb(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y)
{
    if (fd->precision == SPMV_F32) run_f32(fd, (float)alpha, x, (float)beta, y);
    else run_f64(fd, alpha, x, beta, y);
}
