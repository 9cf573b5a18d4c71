/*
 * format_teb.c -- host builder of format teb: threshold-exchange-order blocks (Wang, Zhang, He, Xu, Cui, "TEB:
 * efficient SpMV storage format for matrix decomposition and reconstruction on GPU"; docs/formats/teb.md).
 *
 * =====================================================================================================
 * Two phases, timed separately (plan info stats threshold_ms and merge_ms):
 *
 * 1. Threshold selection (Algorithm 1 and the block-count search of section 3.1.2). Everything runs on the
 *    histogram of the non-empty row lengths (D distinct lengths): spmvport_teb_simulate replays the merge for
 *    one block count bLN and threshold in O(D) by counting runs of identical blocks at once. For every bLN in
 *    [2, hi] it gives the block variance at k = 1, 1.005, 1.01 and 1.03 (in parallel):
 *      - the critical block count is the first bLN where k = 1.01 beats k = 1 (formula 7);
 *      - k(bLN) follows the decision tree of Fig. 11: 1.005 if AVG_bLN > AVG_critical, 1.01 if
 *        AVG_bLN > AVG_critical / 2, else 1.03; Threshold = nnz / bLN * k (formula 3);
 *      - bLN is the count of minimal variance (formula 5) among the candidates [lo, hi], scanning upward and
 *        stopping at the first bLN whose longest row exceeds 2 * Threshold (formula 10); ties go to the larger
 *        count.
 *    The paper scans bLN from 2. On a GPU a count below one wave of resident thread blocks leaves
 *    multiprocessors idle, and plain variance favours ever smaller blocks, so the candidates are a device
 *    window: lo = one wave (2048 / B blocks per multiprocessor), the top = 4 waves, both at most nnz / (2 B)
 *    (two non-zeros per thread) and the non-empty rows; formula 10 cuts the top, but lo is always a candidate
 *    (when even lo breaks formula 10 the longest rows cannot be balanced, and fewer blocks would only idle the
 *    device). The critical count is searched over [2, hi] as in Algorithm 1.
 *    Cost O(m + longest + hi * D) with hi <= max(lo, 2.06 nnz / longest) and D <= min(longest, sqrt(2 nnz)):
 *    hi * D <= 2.06 nnz + lo * sqrt(2 nnz), linear in the matrix, never quadratic in the row count.
 * 2. Row merging (Algorithm 2): rows sorted by length, longest first (a stable counting sort, O(m + longest));
 *    each of the first bLN - 1 blocks takes the longest remaining row and then the shortest remaining rows while
 *    the block's sum stays <= Threshold; the last block takes what remains. Empty rows hold no work: they are
 *    left out of the merge and spread evenly over the blocks. Then each block's rows are split into the tiers
 *    of format_teb.h (block, warp, group, empty rows) so that long rows never serialise on one thread.
 * =====================================================================================================
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format_builders.h"
#include "format_teb.h"

/* Defaults where the device says nothing (the CPU backend): an A100's 108 multiprocessors. */
#define TEB_DEFAULT_MULTIPROCESSORS 108
#define TEB_RESIDENT_THREADS 2048 /* threads one multiprocessor keeps resident (sm_80/sm_90, CDNA) */
#define TEB_WAVES 4               /* the search stops at this many waves of resident blocks */
#define TEB_MIN_NNZ_PER_THREAD 2  /* ... and at blocks of fewer non-zeros than this per thread */

/* k of the decision tree, in thousandths: 1, 1.005, 1.01, 1.03 (index into the search's variance table). */
static const int teb_kmil[4] = {1000, 1005, 1010, 1030};
enum { K_ONE = 0, K_SMALL = 1, K_MID = 2, K_LARGE = 3 };

/* ---- the merge on the length histogram -------------------------------------------------------------------- */

static void sim_add(spmvport_teb_sim *o, double avg, int64_t block_nnz, int64_t repeat)
{
    double d = (double)block_nnz - avg;
    o->sq_dev += (double)repeat * d * d;
    if (block_nnz > o->max_nnz) o->max_nnz = block_nnz;
    if (block_nnz > 0) o->nonempty += repeat;
}

void spmvport_teb_simulate(const spmvport_teb_hist *h, int64_t bln, int64_t tf, int64_t *rem, spmvport_teb_sim *out)
{
    const double avg = (double)h->nnz / (double)bln;
    memset(out, 0, sizeof *out);
    for (int32_t d = 0; d < h->D; d++) rem[d] = h->count[d];
    int32_t lo = 0, hi = h->D - 1; /* the remaining rows lie in buckets lo..hi */
    int64_t blk = 0, left = h->rows, used = 0;
    while (blk < bln - 1 && left > 0) {
        while (rem[hi] == 0) hi--;
        const int32_t head = hi; /* the longest remaining row */
        int64_t sum = h->len[head], taken = 1;
        rem[head]--;
        int32_t first = -1; /* the bucket the shortest rows came from, when only one */
        int64_t q_first = 0;
        int crossed = 0;
        for (;;) { /* the shortest remaining rows while the sum stays <= tf */
            while (lo <= hi && rem[lo] == 0) lo++;
            if (lo > hi) break;
            const int64_t v = h->len[lo];
            const int64_t fit = sum < tf ? (tf - sum) / v : 0;
            const int64_t q = fit < rem[lo] ? fit : rem[lo];
            if (q > 0) {
                if (first < 0) first = lo, q_first = q;
                else crossed = 1;
            }
            sum += q * v;
            rem[lo] -= q;
            taken += q;
            if (rem[lo] > 0) break; /* the next shortest row does not fit */
        }
        left -= taken;
        used += sum;
        blk++;
        sim_add(out, avg, sum, 1);
        /* The next blocks repeat this one while the same head bucket and the same shortest bucket remain and
         * the shortest bucket is not used up inside a block. */
        if (crossed || left == 0 || blk >= bln - 1 || lo > hi || (first >= 0 && first != lo)) continue;
        int64_t r = bln - 1 - blk;
        if (head != lo) {
            if (rem[head] < r) r = rem[head];
            if (q_first > 0 && (rem[lo] - 1) / q_first < r) r = (rem[lo] - 1) / q_first;
        } else if (q_first > 0 && (rem[lo] - 1) / (1 + q_first) < r) {
            r = (rem[lo] - 1) / (1 + q_first);
        } else if (q_first == 0 && rem[lo] < r) {
            r = rem[lo];
        }
        if (r <= 0) continue;
        rem[head] -= r;
        rem[lo] -= r * q_first;
        left -= r * (1 + q_first);
        used += r * sum;
        blk += r;
        sim_add(out, avg, sum, r);
    }
    if (left > 0) { /* blk == bln - 1: the last block takes every remaining row */
        sim_add(out, avg, h->nnz - used, 1);
        blk++;
    }
    if (blk < bln) sim_add(out, avg, 0, bln - blk);
}

/* ---- row lengths ------------------------------------------------------------------------------------------ */

typedef struct {
    int64_t longest, rows, empty; /* non-empty rows, empty rows */
    int32_t *by_len;              /* rows of each length 0..longest */
    int64_t *len, *count;         /* the histogram of the non-empty lengths, ascending */
    spmvport_teb_hist hist;
} teb_lengths;

static void lengths_free(teb_lengths *L)
{
    free(L->by_len);
    free(L->len);
    free(L->count);
}

static spmv_status_t build_lengths(const spmv_matrix_t *A, teb_lengths *L, char *msg, size_t msglen)
{
    memset(L, 0, sizeof *L);
    for (int32_t i = 0; i < A->m; i++) {
        int64_t l = A->row_ptr[i + 1] - A->row_ptr[i];
        if (l > L->longest) L->longest = l;
        if (l > 0) L->rows++;
        else L->empty++;
    }
    L->by_len = spmvport_calloc_array((size_t)L->longest + 1, sizeof(int32_t));
    if (L->by_len == NULL) goto oom;
    for (int32_t i = 0; i < A->m; i++) L->by_len[A->row_ptr[i + 1] - A->row_ptr[i]]++;
    int32_t D = 0;
    for (int64_t l = 1; l <= L->longest; l++) D += L->by_len[l] > 0;
    L->len = spmvport_malloc_array((size_t)D, sizeof(int64_t));
    L->count = spmvport_malloc_array((size_t)D, sizeof(int64_t));
    if (L->len == NULL || L->count == NULL) goto oom;
    D = 0;
    for (int64_t l = 1; l <= L->longest; l++)
        if (L->by_len[l] > 0) L->len[D] = l, L->count[D++] = L->by_len[l];
    L->hist = (spmvport_teb_hist){D, L->len, L->count, L->rows, A->nnz};
    return SPMV_STATUS_SUCCESS;
oom:
    lengths_free(L);
    spmvport_msg(msg, msglen, "teb: out of host memory for the row-length histogram (longest row %lld)",
                 (long long)L->longest);
    return SPMV_STATUS_OUT_OF_MEMORY;
}

/* ---- phase 1: the critical block count, k and the block count ----------------------------------------------- */

typedef struct {
    int64_t bln, critical, tf, candidates;
    int kmil;
    double threshold;
} teb_choice;

/* The decision tree of Fig. 11: AVG_bLN > AVG_critical <=> bln < critical (both are nnz / count). */
static int kmil_of(int64_t bln, int64_t critical)
{
    return bln < critical ? teb_kmil[K_SMALL] : bln < 2 * critical ? teb_kmil[K_MID] : teb_kmil[K_LARGE];
}

static int k_index(int kmil)
{
    for (int j = 0; j < 4; j++)
        if (teb_kmil[j] == kmil) return j;
    return K_ONE;
}

/* floor(nnz * k / bln) exactly (k in thousandths): an integer block sum is <= nnz*k/bln iff it is <= this. */
static int64_t threshold_floor(int64_t nnz, int kmil, int64_t bln) { return nnz * kmil / (1000 * bln); }

/* The device's window of block counts (see the file's banner): lo = one wave of resident blocks, cap = TEB_WAVES
 * waves, both at most the blocks that still give every thread TEB_MIN_NNZ_PER_THREAD non-zeros. */
typedef struct {
    int64_t lo, cap;
} teb_window;

static teb_window block_window(const spmv_device_info_t *dev, int threads, int64_t nnz)
{
    int64_t sms = dev == NULL || dev->backend == SPMV_BACKEND_CPU || dev->multiprocessors <= 0
                      ? TEB_DEFAULT_MULTIPROCESSORS
                      : dev->multiprocessors;
    int64_t wave = (int64_t)(TEB_RESIDENT_THREADS / threads) * sms;
    int64_t work = nnz / ((int64_t)TEB_MIN_NNZ_PER_THREAD * threads);
    teb_window w = {wave < work ? wave : work, TEB_WAVES * wave < work ? TEB_WAVES * wave : work};
    if (w.lo < 2) w.lo = 2;
    if (w.cap < 2) w.cap = 2;
    return w;
}

/* Variances at the four k of every bln in [2, hi]: sq[j * (hi + 1) + bln]. */
static spmv_status_t variance_table(const spmvport_teb_hist *h, int64_t hi, double *sq, char *msg, size_t msglen)
{
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel
#endif
    {
        int64_t *rem = spmvport_malloc_array((size_t)h->D, sizeof(int64_t));
        if (rem == NULL) {
#ifdef _OPENMP
#pragma omp atomic write
#endif
            failed = 1;
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
        for (int64_t b = 2; b <= hi; b++) {
            if (rem == NULL) continue;
            for (int j = 0; j < 4; j++) {
                spmvport_teb_sim s;
                spmvport_teb_simulate(h, b, threshold_floor(h->nnz, teb_kmil[j], b), rem, &s);
                sq[j * (hi + 1) + b] = s.sq_dev;
            }
        }
        free(rem);
    }
    if (failed) {
        spmvport_msg(msg, msglen, "teb: out of host memory for the block-count search");
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t choose_blocks(const teb_lengths *L, int64_t forced, teb_window win, teb_choice *c, char *msg,
                                   size_t msglen)
{
    const spmvport_teb_hist *h = &L->hist;
    memset(c, 0, sizeof *c);
    /* candidates [lo, hi]: the device's window, cut by the rows and by formula 10 at the largest k (the scan
     * below stops at the exact bound); lo is looked at even when formula 10 already holds there */
    int64_t cap = L->rows < win.cap ? L->rows : win.cap, lo = L->rows < win.lo ? L->rows : win.lo;
    int64_t hi = cap;
    if (L->longest > 0) {
        int64_t stop = 2 * teb_kmil[K_LARGE] * h->nnz / (1000 * L->longest);
        if (stop < hi) hi = stop;
    }
    if (hi < lo) hi = lo;
    if (L->rows < 2) lo = hi = 1;
    c->critical = hi + 1; /* none found: every candidate takes k = 1.005 */
    int64_t best = 1;
    if (hi >= 2) {
        double *sq = spmvport_malloc_array(4 * ((size_t)hi + 1), sizeof(double));
        if (sq == NULL) {
            spmvport_msg(msg, msglen, "teb: out of host memory for the block-count search");
            return SPMV_STATUS_OUT_OF_MEMORY;
        }
        spmv_status_t st = variance_table(h, hi, sq, msg, msglen);
        if (st != SPMV_STATUS_SUCCESS) {
            free(sq);
            return st;
        }
        for (int64_t b = 2; b <= hi; b++) /* formula 7, scanning from 2 as Algorithm 1 does */
            if (sq[K_ONE * (hi + 1) + b] > sq[K_MID * (hi + 1) + b]) {
                c->critical = b;
                break;
            }
        double best_var = INFINITY;
        for (int64_t b = lo; b <= hi; b++) {
            int kmil = kmil_of(b, c->critical);
            if (b > lo && (double)L->longest * (double)b * 1000.0 > 2.0 * (double)h->nnz * kmil) break; /* (10) */
            double var = sq[k_index(kmil) * (hi + 1) + b] / (double)b;
            c->candidates++;
            if (var <= best_var) best_var = var, best = b;
        }
        free(sq);
    }
    c->bln = forced > 0 ? (forced < L->rows ? forced : (L->rows > 0 ? L->rows : 1)) : best;
    c->kmil = kmil_of(c->bln, c->critical);
    c->tf = threshold_floor(h->nnz, c->kmil, c->bln);
    c->threshold = (double)h->nnz * c->kmil / 1000.0 / (double)c->bln;
    return SPMV_STATUS_SUCCESS;
}

/* ---- phase 2: the merge and the tiers ---------------------------------------------------------------------- */

typedef struct {
    int64_t blocks;                 /* emitted blocks */
    int32_t *blo;                   /* blocks + 1 */
    int64_t max_nnz;                /* largest block */
    double sq_dev;                  /* over the bLN blocks of the paper, empty ones included */
    int64_t block_rows, warp_rows, group_rows, empty_rows;
} teb_layout;

static inline int64_t row_len(const spmv_matrix_t *A, int32_t r) { return A->row_ptr[r + 1] - A->row_ptr[r]; }

/* Algorithm 2 on the rows themselves; writes row_orig (the new order) and the block starts. */
static spmv_status_t merge_rows(const spmv_matrix_t *A, const teb_lengths *L, const teb_choice *c, int32_t *row_orig,
                                teb_layout *out, char *msg, size_t msglen)
{
    const int64_t R = L->rows, E = L->empty, bln = c->bln, tf = c->tf;
    const int64_t nb_max = (R < bln ? R : bln) + 1;
    int64_t *start = spmvport_malloc_array((size_t)L->longest + 1, sizeof(int64_t));
    int32_t *sorted = spmvport_malloc_array((size_t)R, sizeof(int32_t));
    int32_t *empty = spmvport_malloc_array((size_t)E, sizeof(int32_t));
    int32_t *order = spmvport_malloc_array((size_t)R, sizeof(int32_t));
    int64_t *bstart = spmvport_malloc_array((size_t)nb_max + 1, sizeof(int64_t));
    out->blo = spmvport_malloc_array((size_t)nb_max + 1, sizeof(int32_t));
    if (!start || !sorted || !empty || !order || !bstart || !out->blo) {
        free(start), free(sorted), free(empty), free(order), free(bstart), free(out->blo);
        out->blo = NULL;
        spmvport_msg(msg, msglen, "teb: out of host memory merging %lld rows", (long long)A->m);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    /* stable counting sort, longest first */
    int64_t pos = 0;
    for (int64_t l = L->longest; l >= 1; l--) start[l] = pos, pos += L->by_len[l];
    int64_t ne = 0;
    for (int32_t i = 0; i < A->m; i++) {
        int64_t l = row_len(A, i);
        if (l == 0) empty[ne++] = i;
        else sorted[start[l]++] = i;
    }
    /* the largest remaining row, then the smallest while the sum stays <= tf; the last block takes the rest */
    int64_t begin = 0, end = R - 1, op = 0, nb = 0;
    const double avg = (double)A->nnz / (double)bln;
    out->sq_dev = 0;
    out->max_nnz = 0;
    for (int64_t blk = 0; blk < bln && begin <= end; blk++) {
        bstart[nb] = op;
        int64_t sum = 0;
        if (blk < bln - 1) {
            order[op++] = sorted[begin];
            sum = row_len(A, sorted[begin++]);
            const int64_t old_end = end;
            while (begin <= end && sum + row_len(A, sorted[end]) <= tf) sum += row_len(A, sorted[end--]);
            for (int64_t p = end + 1; p <= old_end; p++) order[op++] = sorted[p]; /* longest first */
        } else {
            for (int64_t p = begin; p <= end; p++) order[op++] = sorted[p], sum += row_len(A, sorted[p]);
            begin = end + 1;
        }
        out->sq_dev += ((double)sum - avg) * ((double)sum - avg);
        if (sum > out->max_nnz) out->max_nnz = sum;
        nb++;
    }
    bstart[nb] = op;
    out->sq_dev += (double)(bln - nb) * avg * avg; /* the blocks the rows did not reach */
    /* the new order: each block's rows, then its share of the empty rows */
    out->blocks = nb > 0 ? nb : (A->m > 0 ? 1 : 0);
    int64_t r = 0;
    for (int64_t b = 0; b < out->blocks; b++) {
        out->blo[b] = (int32_t)r;
        if (b < nb)
            for (int64_t p = bstart[b]; p < bstart[b + 1]; p++) row_orig[r++] = order[p];
        for (int64_t e = b * E / out->blocks; e < (b + 1) * E / out->blocks; e++) row_orig[r++] = empty[e];
    }
    out->blo[out->blocks] = (int32_t)r;
    free(start), free(sorted), free(empty), free(order), free(bstart);
    if (r != A->m) { /* cannot happen: every row is placed once */
        free(out->blo);
        out->blo = NULL;
        spmvport_msg(msg, msglen, "teb: internal error: the merge placed %lld of %d rows", (long long)r, A->m);
        return SPMV_STATUS_INTERNAL_ERROR;
    }
    return SPMV_STATUS_SUCCESS;
}

/* Lanes per group row: the largest power of two G <= avg / 2 (1 below 4 entries: the paper's thread per row),
 * at most W / 2 (longer rows are warp rows). */
static int group_lanes(int64_t sum, int64_t count, int W)
{
    int G = 1;
    while (2 * G <= W / 2 && 4 * (int64_t)G * count <= sum) G *= 2;
    return G;
}

static int log2_int(int v)
{
    int l = 0;
    while ((1 << (l + 1)) <= v) l++;
    return l;
}

/* Split block [r0, r1) (non-empty rows [r0, e), longest first) into the tiers of format_teb.h:
 *  - block rows: a row of at least B entries that alone outweighs a warp's share of the block's rows of W or
 *    more entries (row * B/W > their sum): the whole block shares it;
 *  - warp rows: the other rows of W or more entries;
 *  - group rows: the rest, G lanes each from their average length; a row that would take a group more than
 *    twice a lane's fair share (len / G > 2 max(1, sum / B)) is promoted to a warp row. */
static void block_tiers(const int32_t *ptr, int32_t r0, int32_t e, int W, int B, int32_t *tier)
{
    const int64_t nw = B / W;
    int64_t long_sum = 0;
    for (int32_t i = r0; i < e && ptr[i + 1] - ptr[i] >= W; i++) long_sum += ptr[i + 1] - ptr[i];
    int32_t i = r0;
    while (i < e) {
        int64_t l = ptr[i + 1] - ptr[i];
        if (l < B || l * nw <= long_sum) break;
        long_sum -= l;
        i++;
    }
    tier[SPMVPORT_TEB_TIER_WARP] = i;
    while (i < e && ptr[i + 1] - ptr[i] >= W) i++;
    int64_t sum = ptr[e] - ptr[i], count = e - i;
    int G = 1;
    while (count > 0) {
        G = group_lanes(sum, count, W);
        double fair = (double)sum / B > 1.0 ? (double)sum / B : 1.0;
        int64_t l = ptr[i + 1] - ptr[i];
        if ((double)l <= 2.0 * G * fair) break;
        sum -= l, count--, i++;
    }
    if (count == 0) G = 1;
    tier[SPMVPORT_TEB_TIER_GROUP] = i;
    tier[SPMVPORT_TEB_TIER_EMPTY] = e;
    tier[SPMVPORT_TEB_TIER_LANES_LOG2] = log2_int(G);
}

/* The arrays of format_teb.h from the new order. */
static spmv_status_t emit_arrays(spmvport_format_data *fd, const spmv_matrix_t *A, int32_t *row_orig,
                                 teb_layout *lay, char *msg, size_t msglen)
{
    const size_t vs = spmvport_value_size(A->precision);
    const size_t m = (size_t)A->m, nnz = (size_t)A->nnz, nb = (size_t)lay->blocks;
    void *val = spmvport_malloc_array(nnz, vs);
    int32_t *col = spmvport_malloc_array(nnz, sizeof(int32_t));
    int32_t *ptr = spmvport_malloc_array(m + 1, sizeof(int32_t));
    int32_t *tier = spmvport_malloc_array(nb * SPMVPORT_TEB_TIER_FIELDS, sizeof(int32_t));
    /* add in slot order; each call takes ownership, even on failure */
    spmv_status_t st = spmvport_format_add_array(fd, "values", val, nnz * vs, 1);
    if (st == SPMV_STATUS_SUCCESS) st = spmvport_format_add_array(fd, "col_idx", col, nnz * sizeof(int32_t), 0);
    else free(col);
    if (st == SPMV_STATUS_SUCCESS) st = spmvport_format_add_array(fd, "row_ptr", ptr, (m + 1) * sizeof(int32_t), 0);
    else free(ptr);
    int32_t *blo = lay->blo;
    lay->blo = NULL; /* owned by fd from here on */
    if (st == SPMV_STATUS_SUCCESS) st = spmvport_format_add_array(fd, "blo_idx", blo, (nb + 1) * sizeof(int32_t), 0);
    else free(blo);
    if (st == SPMV_STATUS_SUCCESS) st = spmvport_format_add_array(fd, "row_orig", row_orig, m * sizeof(int32_t), 0);
    else free(row_orig);
    if (st == SPMV_STATUS_SUCCESS)
        st = spmvport_format_add_array(fd, "blo_tier", tier, nb * SPMVPORT_TEB_TIER_FIELDS * sizeof(int32_t), 0);
    else free(tier);
    if (st == SPMV_STATUS_SUCCESS) {
        fd->value_map = spmvport_malloc_array(nnz, sizeof(int32_t));
        if (fd->value_map == NULL) st = SPMV_STATUS_OUT_OF_MEMORY;
    }
    if (st != SPMV_STATUS_SUCCESS) {
        spmvport_msg(msg, msglen, "teb: out of host memory for the arrays of %d rows, %d entries", A->m, A->nnz);
        return st;
    }
    fd->value_slots = A->nnz;
    ptr[0] = 0;
    for (size_t i = 0; i < m; i++) ptr[i + 1] = ptr[i] + (int32_t)row_len(A, row_orig[i]);
    int32_t *vmap = fd->value_map;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1024)
#endif
    for (int32_t i = 0; i < A->m; i++) {
        const int32_t src = A->row_ptr[row_orig[i]], dst = ptr[i], len = ptr[i + 1] - ptr[i];
        memcpy(col + dst, A->col_idx + src, (size_t)len * sizeof(int32_t));
        memcpy((char *)val + (size_t)dst * vs, (const char *)A->values + (size_t)src * vs, (size_t)len * vs);
        for (int32_t j = 0; j < len; j++) vmap[dst + j] = src + j;
    }
    const int W = fd->warp_size, B = (int)fd->params[SPMVPORT_TEB_P_THREADS];
    int64_t nblock = 0, nwarp = 0, ngroup = 0, nempty = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : nblock, nwarp, ngroup, nempty)
#endif
    for (int64_t b = 0; b < lay->blocks; b++) {
        int32_t r0 = blo[b], r1 = blo[b + 1], e = r0;
        while (e < r1 && ptr[e + 1] > ptr[e]) e++; /* empty rows close the block */
        int32_t *t = tier + b * SPMVPORT_TEB_TIER_FIELDS;
        block_tiers(ptr, r0, e, W, B, t);
        nblock += t[SPMVPORT_TEB_TIER_WARP] - r0;
        nwarp += t[SPMVPORT_TEB_TIER_GROUP] - t[SPMVPORT_TEB_TIER_WARP];
        ngroup += e - t[SPMVPORT_TEB_TIER_GROUP];
        nempty += r1 - e;
    }
    lay->block_rows = nblock, lay->warp_rows = nwarp, lay->group_rows = ngroup, lay->empty_rows = nempty;
    return SPMV_STATUS_SUCCESS;
}

/* ---- the builder ------------------------------------------------------------------------------------------- */

spmv_status_t spmvport_build_teb(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                 const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
    const int W = fd->warp_size, B = SPMVPORT_TEB_THREADS;
    if (opt != NULL && opt->teb_blocks < 0) {
        spmvport_msg(msg, msglen, "teb: options.teb_blocks = %d; expected 0 (by variance) or a block count",
                     opt->teb_blocks);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (W < 1 || W > B || (W & (W - 1)) != 0 || W * W < B) { /* warp 0 folds the B / W warp sums */
        spmvport_msg(msg, msglen, "teb: warp size %d: expected a power of two w with w <= %d <= w * w", W, B);
        return SPMV_STATUS_NOT_SUPPORTED;
    }
    spmv_status_t st = spmvport_check_csr_ranges(A, "teb", msg, msglen);
    if (st != SPMV_STATUS_SUCCESS) return st;

    /* phase 1: threshold selection */
    double t0 = spmvport_now_ms();
    teb_lengths L;
    st = build_lengths(A, &L, msg, msglen);
    if (st != SPMV_STATUS_SUCCESS) return st;
    teb_choice c;
    st = choose_blocks(&L, opt ? opt->teb_blocks : 0, block_window(dev, B, A->nnz), &c, msg, msglen);
    if (st != SPMV_STATUS_SUCCESS) {
        lengths_free(&L);
        return st;
    }
    double t1 = spmvport_now_ms();

    /* phase 2: row merging, tiers, arrays */
    teb_layout lay;
    memset(&lay, 0, sizeof lay);
    int32_t *row_orig = spmvport_malloc_array((size_t)A->m, sizeof(int32_t));
    if (row_orig == NULL) {
        lengths_free(&L);
        spmvport_msg(msg, msglen, "teb: out of host memory for the row order of %d rows", A->m);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    st = merge_rows(A, &L, &c, row_orig, &lay, msg, msglen);
    lengths_free(&L);
    if (st != SPMV_STATUS_SUCCESS) {
        free(row_orig);
        return st;
    }
    fd->params[SPMVPORT_TEB_P_BLOCKS] = lay.blocks;
    fd->params[SPMVPORT_TEB_P_THREADS] = B;
    fd->params[SPMVPORT_TEB_P_BLN] = c.bln;
    fd->params[SPMVPORT_TEB_P_THRESHOLD] = c.tf;
    fd->params[SPMVPORT_TEB_P_KMIL] = c.kmil;
    st = emit_arrays(fd, A, row_orig, &lay, msg, msglen); /* owns row_orig and lay.blo from here */
    if (st != SPMV_STATUS_SUCCESS) return st;
    double t2 = spmvport_now_ms();

    const double mean = c.bln > 0 ? (double)A->nnz / (double)c.bln : 0.0;
    spmvport_msg(fd->stats, sizeof fd->stats,
                 "blocks=%lld;bln=%lld;threads=%d;k=%.3f;threshold=%.2f;critical_blocks=%lld;candidates=%lld;"
                 "variance=%.6g;block_nnz_mean=%.2f;block_nnz_max=%lld;max_over_mean=%.4f;block_rows=%lld;"
                 "warp_rows=%lld;group_rows=%lld;empty_rows=%lld;threshold_ms=%.3f;merge_ms=%.3f",
                 (long long)lay.blocks, (long long)c.bln, B, c.kmil / 1000.0, c.threshold, (long long)c.critical,
                 (long long)c.candidates, c.bln > 0 ? lay.sq_dev / (double)c.bln : 0.0, mean,
                 (long long)lay.max_nnz, mean > 0 ? (double)lay.max_nnz / mean : 0.0, (long long)lay.block_rows,
                 (long long)lay.warp_rows, (long long)lay.group_rows, (long long)lay.empty_rows, t1 - t0, t2 - t1);
    return SPMV_STATUS_SUCCESS;
}
