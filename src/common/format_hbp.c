/*
 * format_hbp.c -- host builder of format hbp: the hash-based 2-D partition (seed paper 000, "A Nonlinear
 * Hash-based Optimization Method for SpMV on GPUs"). Layout and kernel mapping: format_hbp.h and
 * docs/formats/hbp.md.
 *
 * Passes (each parallel with OpenMP where it pays; all deterministic):
 *   0. width   the column-block width from the matrix's density (one pass over the columns); with one column
 *              block, the block height (the hash grouping's scope) from the trips it saves on sample rows;
 *   1. count   every row's segments (its runs of at most max_seg entries in one column block, a long run's
 *              tail cut off its whole trips: first_piece), checking the input;
 *   2. scatter the segments into column-major block order (a stable counting sort by column block, so rows
 *              stay ascending inside each block) with each segment's output destination;
 *   3. blocks  find the non-empty blocks (runs of one row block inside one column block);
 *   4. sample  the aggregation shift a (and c) from the segment lengths;
 *   5. group   order each block's segments by the nonlinear hash of their length (or by sorting, sort2D);
 *   6. fill    write units (warp groups, column-major; long segments, row-major) and their entries;
 *   7. tasks   pack consecutive units of one column block into tasks with their shared-memory x window;
 *              blocks wider than 65536 columns go back to 16-bit columns relative to each task when they fit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "format_builders.h"
#include "format_hbp.h"

#ifdef _OPENMP
#define HBP_PRAGMA(x) _Pragma(#x)
#else
#define HBP_PRAGMA(x)
#endif

#define HBP_DEFAULT_BLOCK_ROWS 512
#define HBP_POSITION_BLOCK_ROWS 4096     /* the least height in automatic position order (circuits past L2) */
#define HBP_DEFAULT_SMS 108              /* multiprocessors assumed on the CPU backend (an A100) */
#define HBP_DEFAULT_SMEM_SM 166912      /* shared memory per multiprocessor assumed on the CPU backend (A100) */
#define HBP_DEFAULT_L2 (40u << 20)      /* L2 cache assumed on the CPU backend (A100) */
#define HBP_SAMPLE 8192                  /* segment lengths sampled to choose a */
#define HBP_MAX_A 16
#define HBP_MAX_BINS_PER_BUCKET 64
#define HBP_MAX_BINS (HBP_MAX_BINS_PER_BUCKET * (HBP_TOP_BUCKET + 1))
#define HBP_MAX_CHUNKS 64                /* row chunks of the parallel counting sort */
#define HBP_LONG_WARPS 4                 /* segments of 4 W entries or more are warp-strided */
#define HBP_DEFAULT_PREFETCH 0           /* trips a warp prefetches into L2 beyond its loads (hbp_kernels.h): none.
                                          * H200 (run V): 1 trip made every matrix slower, kron:20:16 0.2789 ->
                                          * 0.320 ms f64, circuit 0.2124 -> 0.2436, stencil 0.1312 -> 0.1466 */
#define HBP_HOT_MIN_READS_SM 3          /* options.hbp_hot = 0: a hot column is read at least this many times per
                                         * multiprocessor (hot_min_reads) */
#define HBP_HOT_MIN_SHARE (1.0 / 3.0)   /* options.hbp_hot = 0: hot columns only where they take this share of the
                                          * entries (choose_hot) */
#define HBP_HOT_GLOBAL_MIN_NNZ 4000000 /* options.hbp_hot_copy = 0: one column block takes the global copy from this
                                         * many entries (H200, session 50, run W5, x cuSPARSE f64 / f32: kron:19:4, 4.1M
                                         * entries, 0.90 / 0.93 -> 0.92 / 1.04; kron:18:4 f64, 2M, 0.88 -> 0.83) */
#define HBP_HOT_GLOBAL_CUT_MIN_NNZ 2000000 /* options.hbp_hot_copy = 0: a cut plan gives way to one block with the
                                             * copy from this many entries (run W5: kron:18:4 f32, 2M entries in 4
                                             * blocks, 0.87 -> 0.88x; none smaller was measured) */
#define HBP_HOT_GLOBAL_UNCUT_BLOCKS 4   /* options.hbp_hot_copy = 0: cut plans of this many column blocks or more take
                                         * one column block and the global copy (choose_hot_copy; run W5: kron:18:16
                                         * f32, 4 blocks, 1.02 -> 1.14x; kron:17:16, 2 blocks, 0.89 / 1.04 -> 0.86 /
                                         * 1.03) */
#define HBP_DEFAULT_STEPS 4              /* steps per kernel trip (docs/formats/hbp.md): on the H200, 8 was 3-4% faster
                                          * on kron:20:16 but 2-8% slower on circuit and FEM, so 4 stays */

/* ===========================================================================================================
 * The nonlinear hash
 * ========================================================================================================= */

/* hash(len) = b * min(len >> a, G) + ((len mod 2^a) >> c), in [0, d) with d = b * (G + 1):
 *   aggregation  len >> a: lengths in [k 2^a, (k+1) 2^a) meet in bucket k (a sampled from the matrix);
 *   dispersion   * b: bucket k owns the b bins [k b, (k+1) b) of the block's table (b from the block height);
 *   linear map   (len mod 2^a) >> c spreads a bucket over its b bins (c = a - log2 b when 2^a > b, else 0).
 * Lengths past the top bucket (len >> a > G) go to the top bucket's last bin. Segments of t_long entries or
 * more are not hashed: each is a warp-strided unit of its own. */
typedef struct {
    int a, b, c, d, log2b;
    int32_t t_long;
} hbp_hash;

static inline int hbp_hash_key(int32_t len, const hbp_hash *h)
{
    int32_t bucket = len >> h->a;
    if (bucket > HBP_TOP_BUCKET) return h->b * HBP_TOP_BUCKET + h->b - 1;
    return h->b * bucket + ((len & ((1 << h->a) - 1)) >> h->c);
}

/* ===========================================================================================================
 * Build state
 * ========================================================================================================= */

typedef struct {
    const spmv_matrix_t *A;
    int W, combine, grouping, col_bytes, steps, ctas, prefetch, split_tails, hot_want;
    int task_blocks_want; /* options.hbp_task_blocks */
    int y_stage;          /* tasks stage the rows of their blocks' groups (options.hbp_y_stage, plan_tasks) */
    int y_stage_want;     /* options.hbp_y_stage */
    int32_t y_cap;        /* the longest y range a block's shared memory holds (HBP_Y_STAGE_BYTES) */
    int position_order;   /* warp groups of a block in the order of their rows (options.hbp_order, order_groups) */
    double near;          /* share of the entries near the diagonal (near_share; -1: not counted) */
    int beyond_l2;        /* the CSR arrays exceed the L2 cache (beyond_l2): the block height and the order */
    int unit_trips;       /* most trips of a unit (0: no cap): options.hbp_unit_trips, choose_unit_trips */
    int32_t max_seg;      /* segments are cut every max_seg entries: HBP_MAX_SEG, or unit_trips S W */
    int32_t nhot;
    int hot_global;       /* the hot copy is one global array, gathered per call (options.hbp_hot_copy) */
    int32_t *hot_pre;     /* choose_hot_copy's or graph_steps' hot-column map (NULL: none), reused by the final choice
                           * when hot_pre_done */
    int32_t hot_pre_n;
    int hot_pre_done;
    uint32_t *reads;      /* each column's reads (column_reads: counted once for the hot-column choices) */
    int32_t R, C, nrb, ncb;
    size_t vsize;
    /* per row */
    int32_t *row_nseg;  /* segments of each row */
    int32_t *row_part;  /* combine 1: first partial of each row with >= 2 segments */
    /* the counting sort: one histogram per row chunk */
    int nchunks;
    int32_t *hist;      /* nchunks * hstride, then write positions */
    size_t hstride;     /* a chunk's histogram: ncb and 64 bytes, so no two chunks' counters share a cache line */
    int32_t *cb_off;    /* ncb + 1: segments of column block j are [cb_off[j], cb_off[j+1]) */
    /* segments, sorted by (column block, row) */
    int32_t S;
    int32_t *seg_row, *seg_start, *seg_len, *seg_out;
    int32_t *ord;       /* S: layout slot -> segment, block by block */
    int32_t *slot_out;  /* S: each slot's output_hash, before narrow_outputs splits it into 16-bit and wide */
    /* non-empty blocks in column-major order */
    int32_t NB;
    int32_t *blk_seg;   /* NB + 1 */
    int32_t *blk_cb, *blk_rb, *blk_short, *blk_lo, *blk_hi;
    int32_t *blk_unit;  /* NB + 1 */
    int32_t *blk_ent;   /* NB + 1 */
    int32_t max_block_segs;
    hbp_hash h;
    int32_t nfix, nempty, nparts, nunits, ntasks, nlong, nwide, nuniform; /* nuniform: groups with a common length */
    /* outputs, handed to fd at the end in slot order */
    void *out[HBP_NARRAYS];
    size_t out_bytes[HBP_NARRAYS];
    int32_t *value_map;
} hbp_build;

static const char *const hbp_array_names[HBP_NARRAYS] = {
    "col", "data", "unit_ptr", "unit_slot", "seg_len", "output_hash", "task", "fix_row", "part_ptr", "partial",
    "sched", "hot", "part_fix", "fix_count", "unit_info", "wide_out", "hot_x"};

static void build_free(hbp_build *B)
{
    free(B->row_nseg); free(B->row_part); free(B->hist); free(B->cb_off);
    free(B->seg_row); free(B->seg_start); free(B->seg_len); free(B->seg_out); free(B->ord); free(B->slot_out);
    free(B->blk_seg); free(B->blk_cb); free(B->blk_rb); free(B->blk_short); free(B->blk_lo); free(B->blk_hi);
    free(B->blk_unit); free(B->blk_ent);
    for (int a = 0; a < HBP_NARRAYS; a++) free(B->out[a]);
    free(B->value_map);
    free(B->hot_pre);
    free(B->reads);
}

/* Allocate output array `slot` of count elements of size bytes each (zeroed). */
static int alloc_out(hbp_build *B, int slot, size_t count, size_t size)
{
    B->out[slot] = spmvport_calloc_array(count, size);
    B->out_bytes[slot] = count * size;
    return B->out[slot] != NULL;
}

static spmv_status_t oom(char *msg, size_t msglen, const char *what, const spmv_matrix_t *A)
{
    spmvport_msg(msg, msglen, "hbp: out of host memory for %s (%d x %d, %d entries)", what, A->m, A->n, A->nnz);
    return SPMV_STATUS_OUT_OF_MEMORY;
}

/* ===========================================================================================================
 * Parameters: block sizes, grid, shared memory
 * ========================================================================================================= */

static size_t smem_budget(const spmv_device_info_t *dev)
{
    size_t b = dev != NULL && dev->shared_mem_per_block > 0 ? dev->shared_mem_per_block : HBP_SMEM_DEFAULT;
    return b < HBP_SMEM_DEFAULT ? b : HBP_SMEM_DEFAULT; /* above 48 KiB needs opt-in and starves occupancy */
}

/* Values of x a block's shared memory holds without opt-in, less the kernel's static part: the longest staged
 * window and the hot-column copy. */
static int32_t smem_cols(const spmv_device_info_t *dev, size_t vsize)
{
    return (int32_t)((smem_budget(dev) - HBP_SMEM_RESERVED) / vsize);
}

/* The paper's rule: x segment of 2/3 of the shared memory, rounded down to a power of two (48 KiB, f64: 4096). */
static int32_t default_block_cols(const spmv_device_info_t *dev, size_t vsize)
{
    size_t cols = smem_budget(dev) * 2 / 3 / vsize;
    int32_t c = 1;
    while ((size_t)c * 2 <= cols && c * 2 <= HBP_NARROW_COLS) c *= 2;
    return c;
}

/* The block width from the matrix's density: cutting rows into column blocks costs, per extra segment, its
 * seg_len and output_hash (6 bytes), a fix-row and partial-pointer share (about 6) and the partial's write and
 * re-read (2 values); 16-bit local columns save 2 bytes per entry against 32-bit ones. Candidates: powers of
 * two from the shared-memory width up to 65536 (16-bit columns), and one column block (32-bit columns when n >
 * 65536 and a row spans half of that). The extra segments of every power of two come from one pass: entries k-1 and k of a row fall in
 * different blocks of 2^j columns exactly when the highest set bit of col[k-1] ^ col[k] is j or above. Ties go
 * to the narrower block (x segments stay local at no cost). */
static int high_bit(uint32_t v)
{
#if defined(__GNUC__)
    return 31 - __builtin_clz(v); /* branch-free: the bisection below mispredicts on scattered columns */
#else
    int bit = 0;
    for (int step = 16; step > 0; step >>= 1)
        if (v >> step) {
            v >>= step;
            bit += step;
        }
    return bit;
#endif
}

static int32_t density_block_cols(const spmv_matrix_t *A, int32_t narrowest, size_t vsize)
{
    int64_t hist[33] = {0}, span = 0;
    HBP_PRAGMA(omp parallel)
    {
        int64_t mine[33] = {0}, my_span = 0;
        HBP_PRAGMA(omp for schedule(static))
        for (int32_t r = 0; r < A->m; r++) {
            if (A->row_ptr[r + 1] > A->row_ptr[r]) {
                int64_t d = (int64_t)A->col_idx[A->row_ptr[r + 1] - 1] - A->col_idx[A->row_ptr[r]];
                if (d > my_span) my_span = d;
            }
            for (int32_t k = A->row_ptr[r] + 1; k < A->row_ptr[r + 1]; k++) {
                uint32_t diff = (uint32_t)A->col_idx[k - 1] ^ (uint32_t)A->col_idx[k];
                mine[diff ? high_bit(diff) : 32]++; /* equal columns (invalid, refused later): never cut */
            }
        }
        HBP_PRAGMA(omp critical)
        {
            for (int i = 0; i < 33; i++) hist[i] += mine[i];
            if (my_span > span) span = my_span;
        }
    }
    const double seg_cost = 12.0 + 2.0 * (double)vsize;
    /* one column block: no cut at all; 16-bit columns anyway when n fits, or likely relative to each task
     * (narrow_task_columns) when no row spans more than half of 65536 columns */
    int32_t best = A->n > 0 ? A->n : 1;
    double best_cost = (double)A->nnz * (A->n > HBP_NARROW_COLS && span >= HBP_NARROW_COLS / 2 ? 4 : 2);
    int64_t cut = 0; /* pairs cut by blocks of 2^j columns: bits j..31 */
    for (int j = 31; j >= 0; j--) {
        cut += hist[j];
        int64_t C = (int64_t)1 << j;
        if (C > HBP_NARROW_COLS || C < narrowest) continue;
        if (C >= A->n) { /* as wide as the matrix: the same as one block */
            best = (int32_t)(A->n > 0 ? C : 1);
            continue;
        }
        double cost = (double)A->nnz * 2 + (double)cut * seg_cost;
        if (cost <= best_cost) {
            best = (int32_t)C;
            best_cost = cost;
        }
    }
    return best;
}

/* The device's multiprocessors (HBP_DEFAULT_SMS on the CPU backend or when unknown), at most 2^20 so that counts
 * derived from them fit 32 bits. */
static int32_t device_sms(const spmv_device_info_t *dev)
{
    const int gpu = dev != NULL && dev->backend != SPMV_BACKEND_CPU;
    const int sms = gpu && dev->multiprocessors > 0 ? dev->multiprocessors : HBP_DEFAULT_SMS;
    return sms > (1 << 20) ? 1 << 20 : sms;
}

/* Thread blocks that can be resident at once: multiprocessors x blocks per multiprocessor, limited by the x
 * window (a multiprocessor's shared memory is taken as the per-block maximum, which holds on NVIDIA with opt-in
 * and on AMD) and by threads (at most ctas, the residency the kernel is compiled for). More would leave fixed
 * tasks to blocks that only start when others finish. */
static int32_t planned_grid(const spmv_device_info_t *dev, size_t window_bytes, int ctas)
{
    const int gpu = dev != NULL && dev->backend != SPMV_BACKEND_CPU;
    size_t smem_sm = gpu && dev->shared_mem_per_block > 0 ? dev->shared_mem_per_block : HBP_DEFAULT_SMEM_SM;
    size_t per_sm = smem_sm / (window_bytes + 1024);
    if (per_sm < 1) per_sm = 1;
    if (per_sm > (size_t)ctas) per_sm = (size_t)ctas;
    return device_sms(dev) * (int32_t)per_sm;
}

/* A unit cap of k trips (0: none; options.hbp_unit_trips): segments of t_long entries or more are warp-strided,
 * so a group's lanes hold at most k S entries; and segments are cut every k S W entries (whole trips of a long
 * unit), at most HBP_MAX_SEG. The builder and the cap's estimate both use these. */
static int32_t capped_t_long(int cap, int S, int32_t t_long)
{
    return cap > 0 && (int64_t)cap * S + 1 < t_long ? cap * S + 1 : t_long;
}

static int32_t capped_max_seg(int cap, int S, int W)
{
    const int64_t cut = (int64_t)cap * S * W;
    return cap > 0 && cut < HBP_MAX_SEG ? (int32_t)cut : HBP_MAX_SEG;
}

static int32_t choose_block_rows(const hbp_build *B);
static int choose_hot_copy(hbp_build *B, const spmv_plan_options_t *opt);
static int graph_steps(hbp_build *B, const spmv_plan_options_t *opt, const spmv_device_info_t *dev);
static int choose_unit_trips(const hbp_build *B, const spmv_device_info_t *dev, int requested);

/* The order of the warp groups (options.hbp_order 0). The paper's hashed order lays a block's groups out bin by
 * bin, so the consecutive units a task (one thread block) takes cover the whole block once per bin, and the x
 * and y entries of neighbouring rows are read by the thread blocks of every bin. Where x is read near the
 * diagonal and the matrix does not stay in L2, that sharing costs DRAM reads: position order keeps a task's
 * rows together (order_groups). H200, circuit:5000000 (90% of its off-diagonals within 64 columns): 0.2129 ->
 * 0.1905 ms f64, 0.1290 -> 0.1204 f32; on kron:20:16 (x read at random) it was slower (0.2456 -> 0.2692 f64), as
 * the bins' like lengths keep a task's warps in step; on the small shared matrices it was mixed (runs AG, AH). */
#define HBP_NEAR_COLS 1024               /* "near the diagonal": |column - row n / m| below this */
#define HBP_NEAR_MIN 0.75                /* position order from this share of the entries near the diagonal */

static int beyond_l2(const spmv_matrix_t *A, const spmv_device_info_t *dev)
{
    size_t l2 = dev != NULL && dev->backend != SPMV_BACKEND_CPU && dev->l2_bytes > 0 ? dev->l2_bytes : HBP_DEFAULT_L2;
    double bytes = (double)A->nnz * (sizeof(int32_t) + spmvport_value_size(A->precision));
    return bytes > (double)l2;
}

static double near_share(const spmv_matrix_t *A)
{
    if (A->nnz == 0) return 0;
    const double scale = A->m > 0 ? (double)A->n / A->m : 1;
    int64_t near = 0;
    HBP_PRAGMA(omp parallel for reduction(+ : near) schedule(static))
    for (int32_t r = 0; r < A->m; r++) {
        const double d = r * scale;
        for (int32_t k = A->row_ptr[r]; k < A->row_ptr[r + 1]; k++) near += fabs(A->col_idx[k] - d) < HBP_NEAR_COLS;
    }
    return (double)near / A->nnz;
}

static spmv_status_t check_options(hbp_build *B, const spmv_plan_options_t *opt, const spmv_device_info_t *dev,
                                   char *msg, size_t msglen)
{
    if (B->W < 1 || B->W > 64 || (B->W & (B->W - 1)) != 0) {
        spmvport_msg(msg, msglen, "hbp: warp size %d; expected a power of two up to 64", B->W);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_block_rows < 0) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_block_rows = %d; expected 0 (automatic) or a positive count",
                     opt->hbp_block_rows);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_block_cols < 0) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_block_cols = %d; expected 0 (from the matrix's density) or a "
                     "positive count", opt->hbp_block_cols);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_combine < 0 || opt->hbp_combine > 2) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_combine = %d; expected 0 (auto), 1 (partials) or 2 (atomics)",
                     opt->hbp_combine);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_steps != 0 && opt->hbp_steps != 2 && opt->hbp_steps != 4 && opt->hbp_steps != 8) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_steps = %d; expected 0 (automatic: 4, 8 on power-law graphs and circuits), 2, 4 or 8", opt->hbp_steps);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    int steps = opt->hbp_steps > 0 ? opt->hbp_steps : HBP_DEFAULT_STEPS;
    if (opt->hbp_ctas != 0 && !hbp_ctas_compiled(steps, opt->hbp_ctas)) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_ctas = %d; expected 0 (automatic) or, with %d steps per trip, "
                     "%d, %d or %d", opt->hbp_ctas, steps, HBP_CTAS_OPTION(steps, 0), HBP_CTAS_OPTION(steps, 1),
                     HBP_CTAS_OPTION(steps, 2));
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_tails < 0 || opt->hbp_tails > 2) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_tails = %d; expected 0 (split), 1 (split) or 2 (kept)",
                     opt->hbp_tails);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_prefetch < -1 || opt->hbp_prefetch > HBP_MAX_PREFETCH) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_prefetch = %d; expected 0 (default: %d trips), 1 .. %d trips or -1 "
                     "(none)", opt->hbp_prefetch, HBP_DEFAULT_PREFETCH, HBP_MAX_PREFETCH);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_hot < -2) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_hot = %d; expected 0 (automatic), -1 (as many as fit), -2 (none) "
                     "or a count", opt->hbp_hot);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_hot_copy < 0 || opt->hbp_hot_copy > 2) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_hot_copy = %d; expected 0 (automatic), 1 (shared memory) or 2 "
                     "(one global copy)", opt->hbp_hot_copy);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_unit_trips < -1) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_unit_trips = %d; expected 0 (automatic), -1 (no cap) or a count "
                     "of trips", opt->hbp_unit_trips);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_task_blocks < -1 || opt->hbp_task_blocks > 1) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_task_blocks = %d; expected 0 (automatic), 1 (a thread block per "
                     "task) or -1 (the resident grid and a ticket)", opt->hbp_task_blocks);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_y_stage < -1 || opt->hbp_y_stage > 1) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_y_stage = %d; expected 0 (automatic: off), 1 (staged y) or -1 "
                     "(off)", opt->hbp_y_stage);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_grouping < 0 || opt->hbp_grouping > 1) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_grouping = %d; expected 0 (hash) or 1 (sort)",
                     opt->hbp_grouping);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->hbp_order < 0 || opt->hbp_order > 2) {
        spmvport_msg(msg, msglen, "hbp: options.hbp_order = %d; expected 0 (automatic), 1 (by position) or 2 (by "
                     "bin)", opt->hbp_order);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    B->beyond_l2 = beyond_l2(B->A, dev);
    B->near = -1;
    if (opt->hbp_order == 0) {
        B->near = B->beyond_l2 ? near_share(B->A) : -1;
        B->position_order = B->near >= HBP_NEAR_MIN;
    } else {
        B->position_order = opt->hbp_order == 1;
    }
    /* Fully automatic plans in automatic position order (near the diagonal, past L2: circuits) run 8 steps per
     * trip: most of their rows (3..8 entries) then take one trip. H200, circuit:5000000 with session 10's kernel
     * (run AO): 0.1891 -> 0.1825 ms f64, 0.1145 -> 0.1138 f32; with session 9's per-step branches 8 steps had
     * been slower in f32 (run AJ). */
    if (opt->hbp_order == 0 && B->position_order && opt->hbp_steps == 0 && opt->hbp_ctas == 0) steps = 8;
    B->C = opt->hbp_block_cols > 0 ? opt->hbp_block_cols
                                   : density_block_cols(B->A, default_block_cols(dev, B->vsize), B->vsize);
    B->col_bytes = B->C > HBP_NARROW_COLS ? 4 : 2;
    B->grouping = opt->hbp_grouping;
    B->steps = steps;
    B->ctas = opt->hbp_ctas > 0 ? opt->hbp_ctas : HBP_CTAS_PER_SM((int)B->vsize, steps);
    B->prefetch = opt->hbp_prefetch == 0 ? HBP_DEFAULT_PREFETCH : opt->hbp_prefetch < 0 ? 0 : opt->hbp_prefetch;
    B->split_tails = opt->hbp_tails != 2;
    B->hot_want = opt->hbp_hot;
    B->task_blocks_want = opt->hbp_task_blocks;
    if (!choose_hot_copy(B, opt) || !graph_steps(B, opt, dev)) {
        spmvport_msg(msg, msglen, "hbp: out of memory counting the column reads");
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    /* the height is the grouping's scope (and, cut, the x window's rows), chosen by counting trips */
    B->R = opt->hbp_block_rows > 0 ? opt->hbp_block_rows : choose_block_rows(B);
    if (B->R == 0) {
        spmvport_msg(msg, msglen, "hbp: out of memory choosing the block height");
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    B->ncb = (int32_t)(((int64_t)B->A->n + B->C - 1) / B->C);
    /* staged y: one column block, so a row block's rows are written by its units alone; an automatic height
     * halved until a block's y range fits the shared memory */
    B->y_cap = (int32_t)((smem_budget(dev) - HBP_SMEM_RESERVED) / HBP_Y_STAGE_BYTES(1, B->vsize));
    B->y_stage_want = opt->hbp_y_stage;
    B->y_stage = opt->hbp_y_stage == 1 && B->ncb == 1;
    while (B->y_stage && opt->hbp_block_rows == 0 && B->R > B->y_cap && B->R > 1) B->R /= 2;
    B->nrb = (int32_t)(((int64_t)B->A->m + B->R - 1) / B->R);
    B->unit_trips = choose_unit_trips(B, dev, opt->hbp_unit_trips);
    B->max_seg = capped_max_seg(B->unit_trips, B->steps, B->W);
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * Pass 1: count segments per row and per column block (one histogram per row chunk), checking the input
 * ========================================================================================================= */

/* The first piece of a run of `left` entries of one row in one column block (count_segments and
 * scatter_segments cut alike): pieces of max_seg; then, with split_tails, a rest longer than one trip of a
 * long unit (S W entries, which divides max_seg) is cut into its whole trips and a tail of fewer than
 * HBP_LONG_WARPS W entries. The long unit so has no trip with idle lanes, and the tail, a short segment, joins a
 * warp group of like lengths (kron:20:16: 62.7K long units of 3.65 trips each, ~0.65 of them a partial one). */
static int32_t first_piece(const hbp_build *B, int32_t left)
{
    const int32_t trip = B->steps * B->W;
    if (left > B->max_seg) return B->max_seg;
    if (B->split_tails && left > trip && left % trip != 0 && left % trip < HBP_LONG_WARPS * B->W)
        return left - left % trip;
    return left;
}

static int32_t chunk_first_row(const hbp_build *B, int q) { return (int32_t)((int64_t)B->A->m * q / B->nchunks); }

/* First row whose columns are out of range or not strictly increasing, or -1. */
static int32_t first_bad_row(const spmv_matrix_t *A)
{
    for (int32_t r = 0; r < A->m; r++)
        for (int32_t k = A->row_ptr[r]; k < A->row_ptr[r + 1]; k++)
            if (A->col_idx[k] < 0 || A->col_idx[k] >= A->n || (k > A->row_ptr[r] && A->col_idx[k] <= A->col_idx[k - 1]))
                return r;
    return -1;
}

static spmv_status_t count_segments(hbp_build *B, char *msg, size_t msglen)
{
    const spmv_matrix_t *A = B->A;
    int chunks = 1;
#ifdef _OPENMP
    chunks = omp_get_max_threads();
#endif
    if (chunks > HBP_MAX_CHUNKS) chunks = HBP_MAX_CHUNKS;
    if (chunks > A->m / 4096) chunks = A->m / 4096 > 0 ? A->m / 4096 : 1;
    /* one histogram per chunk: keep them small beside the matrix. Apart by a cache line: a circuit or stencil plan
     * has one column block, and its chunks' single counters in one line made the count no faster on 16 threads
     * than on 1 (session 60) */
    B->hstride = (size_t)B->ncb + 64 / sizeof(int32_t);
    if ((int64_t)chunks * (int64_t)B->hstride > 4 * ((int64_t)A->nnz + A->m) + 65536) chunks = 1;
    B->nchunks = chunks;
    B->row_nseg = spmvport_malloc_array((size_t)A->m, sizeof(int32_t));
    B->hist = spmvport_calloc_array((size_t)chunks * B->hstride, sizeof(int32_t));
    B->cb_off = spmvport_malloc_array((size_t)B->ncb + 1, sizeof(int32_t));
    if (!B->row_nseg || !B->hist || !B->cb_off) return oom(msg, msglen, "segment counts", A);

    int bad = 0;
    HBP_PRAGMA(omp parallel for schedule(static) reduction(|| : bad))
    for (int q = 0; q < chunks; q++) {
        int32_t *hist = B->hist + (size_t)q * B->hstride;
        for (int32_t r = chunk_first_row(B, q); r < chunk_first_row(B, q + 1); r++) {
            int32_t nseg = 0, prev = -1, k = A->row_ptr[r], end = A->row_ptr[r + 1];
            while (k < end && !bad) {
                /* the run [k, e) of the row in one column block, its columns checked */
                int32_t e = k, cb = -1;
                for (; e < end; e++) {
                    int32_t c = A->col_idx[e];
                    if (c <= prev || c >= A->n) {
                        bad = 1;
                        break;
                    }
                    if (e > k && c / B->C != cb) break;
                    cb = c / B->C;
                    prev = c;
                }
                if (bad) break;
                for (int32_t left = e - k; left > 0; left -= first_piece(B, left)) { /* as scatter_segments */
                    nseg++;
                    hist[cb]++;
                }
                k = e;
            }
            B->row_nseg[r] = nseg;
        }
    }
    if (bad) {
        int32_t r = first_bad_row(A);
        spmvport_msg(msg, msglen, "hbp: row %d has a column out of range [0, %d) or columns not strictly increasing",
                     r, A->n);
        return SPMV_STATUS_INVALID_MATRIX;
    }
    /* prefix in (column block, chunk) order: chunk q's segments of block j follow chunk q-1's */
    int64_t pos = 0;
    for (int32_t j = 0; j < B->ncb; j++) {
        B->cb_off[j] = (int32_t)pos;
        for (int q = 0; q < chunks; q++) {
            int32_t c = B->hist[(size_t)q * B->hstride + j];
            B->hist[(size_t)q * B->hstride + j] = (int32_t)pos;
            pos += c;
        }
    }
    if (pos > A->nnz) { /* a segment holds at least one entry */
        spmvport_msg(msg, msglen, "hbp: internal error: %lld segments for %d entries", (long long)pos, A->nnz);
        return SPMV_STATUS_INTERNAL_ERROR;
    }
    B->cb_off[B->ncb] = (int32_t)pos;
    B->S = (int32_t)pos;
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * Fix rows (0 or >= 2 segments), partial offsets and the combine mode
 * ========================================================================================================= */

static int choose_combine(const hbp_build *B, const spmv_device_info_t *dev, int requested)
{
    if (requested != 0) return requested;
    if (B->nparts == 0) return HBP_COMBINE_PARTIALS; /* nothing to combine: no atomics, deterministic */
    /* f64 atomicAdd is a compare-and-swap loop on AMD CDNA2 without -munsafe-fp-atomics */
    if (dev != NULL && dev->backend == SPMV_BACKEND_HIP && B->A->precision == SPMV_F64) return HBP_COMBINE_PARTIALS;
    /* graph-like: most entries sit in rows cut by many column blocks; the partials' write and re-read would
     * cost as much as the matrix */
    return B->nparts > B->A->nnz / 2 ? HBP_COMBINE_ATOMICS : HBP_COMBINE_PARTIALS;
}

static spmv_status_t plan_fix_rows(hbp_build *B, const spmv_device_info_t *dev, int requested, char *msg,
                                   size_t msglen)
{
    const spmv_matrix_t *A = B->A;
    int64_t nfix = 0, nparts = 0, nempty = 0;
    for (int32_t r = 0; r < A->m; r++)
        if (B->row_nseg[r] != 1) {
            nfix++;
            nempty += B->row_nseg[r] == 0;
            nparts += B->row_nseg[r];
        }
    B->nfix = (int32_t)nfix;
    B->nempty = (int32_t)nempty;
    B->nparts = (int32_t)nparts; /* <= S <= nnz */
    B->combine = choose_combine(B, dev, requested);
    int partials = B->combine == HBP_COMBINE_PARTIALS;
    if (!alloc_out(B, HBP_A_FIX_ROW, (size_t)nfix, sizeof(int32_t)) ||
        !alloc_out(B, HBP_A_PART_PTR, partials ? (size_t)nfix + 1 : 0, sizeof(int32_t)) ||
        !alloc_out(B, HBP_A_PARTIAL, partials ? (size_t)nparts : 0, B->vsize) ||
        !alloc_out(B, HBP_A_PART_FIX, partials ? (size_t)nparts : 0, sizeof(int32_t)) ||
        !alloc_out(B, HBP_A_FIX_COUNT, partials ? (size_t)(nfix - nempty) : 0, sizeof(int32_t)))
        return oom(msg, msglen, "fix rows", A);
    if (partials) {
        B->row_part = spmvport_malloc_array((size_t)A->m, sizeof(int32_t));
        if (B->row_part == NULL) return oom(msg, msglen, "partial offsets", A);
    }
    /* empty rows first (the SpMV kernel writes them), then the rows it combines or scales; an empty row has no
     * partial, so the partials are numbered by row either way */
    int32_t *fix = B->out[HBP_A_FIX_ROW], *part_ptr = B->out[HBP_A_PART_PTR], *part_fix = B->out[HBP_A_PART_FIX];
    int32_t f = 0, off = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int32_t r = 0; r < A->m; r++) {
            if (B->row_nseg[r] == 1 || (B->row_nseg[r] == 0) != (pass == 0)) continue;
            fix[f] = r;
            if (partials) {
                part_ptr[f] = off;
                B->row_part[r] = off;
                for (int32_t k = 0; k < B->row_nseg[r]; k++) part_fix[off + k] = f;
            }
            f++;
            off += B->row_nseg[r];
        }
    if (partials) part_ptr[f] = off;
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * Pass 2: scatter the segments into (column block, row) order
 * ========================================================================================================= */

/* Where segment k of row r goes: the row itself when it is the row's only segment, else a partial or (atomics)
 * the row, encoded as -1 - t. */
static inline int32_t segment_out(const hbp_build *B, int32_t r, int32_t k)
{
    if (B->row_nseg[r] == 1) return r;
    return -1 - (B->combine == HBP_COMBINE_PARTIALS ? B->row_part[r] + k : r);
}

static spmv_status_t scatter_segments(hbp_build *B, char *msg, size_t msglen)
{
    const spmv_matrix_t *A = B->A;
    size_t S = (size_t)B->S;
    B->seg_row = spmvport_malloc_array(S, sizeof(int32_t));
    B->seg_start = spmvport_malloc_array(S, sizeof(int32_t));
    B->seg_len = spmvport_malloc_array(S, sizeof(int32_t));
    B->seg_out = spmvport_malloc_array(S, sizeof(int32_t));
    if (!B->seg_row || !B->seg_start || !B->seg_len || !B->seg_out) return oom(msg, msglen, "segments", A);
    HBP_PRAGMA(omp parallel for schedule(static))
    for (int q = 0; q < B->nchunks; q++) {
        int32_t *next = B->hist + (size_t)q * B->hstride;
        for (int32_t r = chunk_first_row(B, q); r < chunk_first_row(B, q + 1); r++) {
            int32_t k = A->row_ptr[r], end = A->row_ptr[r + 1], nth = 0;
            while (k < end) {
                int32_t cb = A->col_idx[k] / B->C, e = k + 1;
                int64_t limit = (int64_t)(cb + 1) * B->C - 1;
                while (e < end && A->col_idx[e] <= limit) e++;
                e = k + first_piece(B, e - k); /* as count_segments */
                int32_t pos = next[cb]++;
                B->seg_row[pos] = r;
                B->seg_start[pos] = k;
                B->seg_len[pos] = e - k;
                B->seg_out[pos] = segment_out(B, r, nth++);
                k = e;
            }
        }
    }
    free(B->hist);
    B->hist = NULL;
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * Pass 3: the non-empty blocks, column block by column block
 * ========================================================================================================= */

static spmv_status_t find_blocks(hbp_build *B, char *msg, size_t msglen)
{
    int32_t *count = spmvport_calloc_array((size_t)B->ncb + 1, sizeof(int32_t));
    if (count == NULL) return oom(msg, msglen, "block counts", B->A);
    HBP_PRAGMA(omp parallel for schedule(dynamic, 16))
    for (int32_t j = 0; j < B->ncb; j++) {
        int32_t prev_rb = -1, c = 0;
        for (int32_t s = B->cb_off[j]; s < B->cb_off[j + 1]; s++) {
            int32_t rb = B->seg_row[s] / B->R;
            if (rb != prev_rb) c++;
            prev_rb = rb;
        }
        count[j + 1] = c;
    }
    for (int32_t j = 0; j < B->ncb; j++) count[j + 1] += count[j]; /* <= S: no overflow */
    B->NB = count[B->ncb];
    size_t nb = (size_t)B->NB;
    B->blk_seg = spmvport_malloc_array(nb + 1, sizeof(int32_t));
    B->blk_cb = spmvport_malloc_array(nb, sizeof(int32_t));
    B->blk_rb = spmvport_malloc_array(nb, sizeof(int32_t));
    B->blk_short = spmvport_malloc_array(nb, sizeof(int32_t));
    B->blk_lo = spmvport_malloc_array(nb, sizeof(int32_t));
    B->blk_hi = spmvport_malloc_array(nb, sizeof(int32_t));
    B->blk_unit = spmvport_malloc_array(nb + 1, sizeof(int32_t));
    B->blk_ent = spmvport_malloc_array(nb + 1, sizeof(int32_t));
    if (!B->blk_seg || !B->blk_cb || !B->blk_rb || !B->blk_short || !B->blk_lo || !B->blk_hi || !B->blk_unit ||
        !B->blk_ent) {
        free(count);
        return oom(msg, msglen, "blocks", B->A);
    }
    HBP_PRAGMA(omp parallel for schedule(dynamic, 16))
    for (int32_t j = 0; j < B->ncb; j++) {
        int32_t prev_rb = -1, b = count[j] - 1;
        for (int32_t s = B->cb_off[j]; s < B->cb_off[j + 1]; s++) {
            int32_t rb = B->seg_row[s] / B->R;
            if (rb != prev_rb) {
                b++;
                B->blk_seg[b] = s;
                B->blk_cb[b] = j;
                B->blk_rb[b] = rb;
            }
            prev_rb = rb;
        }
    }
    B->blk_seg[B->NB] = B->S;
    free(count);
    int32_t most = 0;
    for (int32_t b = 0; b < B->NB; b++)
        if (B->blk_seg[b + 1] - B->blk_seg[b] > most) most = B->blk_seg[b + 1] - B->blk_seg[b];
    B->max_block_segs = most;
    return SPMV_STATUS_SUCCESS;
}

/* ===========================================================================================================
 * Pass 4: the hash parameters. a and c from a sample of the matrix's segment lengths, b and d from the block
 * height (about four bins per warp group of a full block), t_long from a and W.
 * ========================================================================================================= */

/* The aggregation shift a from a histogram of lengths: past[a] = lengths with len >> a past the top bucket. */
static int hash_shift(const int64_t past[HBP_MAX_A + 1], int64_t samples)
{
    /* the smallest shift that keeps all but 5% of the lengths inside the top bucket */
    int a = 0;
    while (a < HBP_MAX_A && past[a] * 20 > samples) a++;
    return a;
}

/* b, c, d and t_long for shift a, block height R and warp size W. */
static hbp_hash hash_for(int a, int32_t R, int W)
{
    hbp_hash h;
    h.a = a;
    int64_t bins = (4 * (int64_t)R + (int64_t)W * (HBP_TOP_BUCKET + 1) - 1) / ((int64_t)W * (HBP_TOP_BUCKET + 1));
    h.b = 1;
    h.log2b = 0;
    while (h.b < bins && h.b < HBP_MAX_BINS_PER_BUCKET) {
        h.b *= 2;
        h.log2b++;
    }
    h.c = h.a > h.log2b ? h.a - h.log2b : 0;
    h.d = h.b * (HBP_TOP_BUCKET + 1);
    /* past the top bucket, and past HBP_LONG_WARPS W entries: a warp group of longer rows would keep its warp for
     * thousands of entries, the tail of the competitive part; warp-strided they finish in a few trips */
    int32_t top = (HBP_TOP_BUCKET + 1) << h.a;
    if (top > HBP_LONG_WARPS * W) top = HBP_LONG_WARPS * W;
    h.t_long = top > W ? top : W;
    return h;
}

static void sample_hash(hbp_build *B)
{
    int32_t stride = B->S > HBP_SAMPLE ? B->S / HBP_SAMPLE : 1;
    int64_t past[HBP_MAX_A + 1] = {0}, samples = 0;
    for (int64_t s = 0; s < B->S; s += stride, samples++)
        for (int a = 0; a <= HBP_MAX_A; a++)
            if ((B->seg_len[s] >> a) > HBP_TOP_BUCKET) past[a]++;
    B->h = hash_for(hash_shift(past, samples), B->R, B->W);
    B->h.t_long = capped_t_long(B->unit_trips, B->steps, B->h.t_long);
}

/* ===========================================================================================================
 * The default block height. With one column block a block is only the scope of the hash grouping, and a warp
 * group's trips are its longest lane's: a scope of 512 rows on a power-law graph (kron) holds ~290 short rows
 * for 72 bins, so a group mixes bins and keeps ~44% of its lanes busy. Taller scopes fill the bins, but spread a
 * group's rows (and their x and y) wider, which costs locality on banded matrices where grouping gains nothing.
 * So the builder counts the groups' trips (sum over groups of ceil(longest lane / S)) on sample windows of the
 * rows for each candidate height, and doubles the height from 512 while that saves enough of them. Past the L2
 * cache: up to 16384 rows while a doubling saves 2% (kron:20:16, windows of 16384 rows: 70.8K, 55.3K, 46.4K,
 * 42.6K, 40.9K, 39.9K sampled trips for 512 .. 16384 -> 16384, where the 5% rule below took 4096: H200 0.2456
 * -> 0.2288 ms f64, 0.2081 -> 0.1956 f32, and 32768 was slower again, 0.2417 / 0.2057; circuit:5000000 136.9K
 * -> 133.4K -> 131.5K -> 1024; stencil, FEM, uniform: no gain -> 512). Within L2 (every shared matrix, where
 * nothing taller was measured): up to 8192 by 5%, the rule of session 5.
 * A cut plan (several column blocks, from the density: power-law graphs of 2^17-2^20 columns) hashes each row's
 * segment in every column block, so a block of 512 rows leaves its bins emptier still; it counts its segments'
 * trips the same way (until session 40 it kept 512 rows). H200, two processes each, x cuSPARSE f64 / f32 before
 * -> after: kron:18:16 0.78 / 0.90 -> 0.96 / 1.02, kron:19:32 0.82 / 0.95 -> 1.08 / 1.18, kron:18:8 0.74 / 0.91
 * -> 0.87 / 1.02, kron:17:16 0.82 / 0.96 -> 0.89 / 1.05 (1.03-1.33x faster on 13 plans; luxembourg_osm, cut in
 * two, keeps 512).
 * ========================================================================================================= */

#define HBP_ROWS_CANDIDATES 6            /* 512, 1024, ..., 16384 (sample windows of the tallest's rows) */
#define HBP_ROWS_WINDOWS 64              /* sample windows, spread evenly over the rows */
#define HBP_ROWS_GAIN 0.98               /* doubling the scope must save 2% of the sampled trips */
#define HBP_ROWS_CANDIDATES_IN_L2 5      /* a matrix that fits the L2 cache: 512 .. 8192, */
#define HBP_ROWS_GAIN_IN_L2 0.95         /* and 5%: the session-5 rule, kept where nothing new was measured */
#define HBP_ROWS_CUT_BLOCKS 64           /* a cut plan of more column blocks keeps 512 rows (no count) */
#define HBP_ROWS_THREADS 8               /* threads counting the windows: each holds a window's segments (a cut
                                          * plan of kron:20:32: 1M entries a window, 16 MB of scratch) */

/* The column block of entry k, or -1 for a column out of range (the height is counted before count_segments
 * checks the columns; it refuses them). */
static inline int32_t entry_block(const spmv_matrix_t *A, int32_t k, int32_t C)
{
    const int32_t c = A->col_idx[k];
    return c >= 0 && c < A->n ? c / C : -1;
}

/* The segments of rows [r0, r1) in blocks of C columns: row r's runs, one per column block it has entries in (with
 * one column block, the row itself), are segments first[r - r0] .. first[r - r0 + 1] - 1 (column block cb[i],
 * length len[i]); empty rows have none. cnt: one int per column block, zero on entry and on return. Returns how
 * many. */
static int32_t row_segments(const spmv_matrix_t *A, int32_t C, int32_t r0, int32_t r1, int32_t *cnt,
                            int32_t *first, int32_t *cb, int32_t *len)
{
    int32_t n = 0;
    for (int32_t r = r0; r < r1; r++) {
        const int32_t k0 = A->row_ptr[r], k1 = A->row_ptr[r + 1];
        first[r - r0] = n;
        if (C >= A->n) { /* one column block: no column to read */
            if (k1 > k0) cb[n] = 0, len[n++] = k1 - k0;
            continue;
        }
        for (int32_t k = k0; k < k1; k++) {
            const int32_t j = entry_block(A, k, C);
            if (j >= 0) cnt[j]++;
        }
        for (int32_t k = k0; k < k1; k++) {
            const int32_t j = entry_block(A, k, C);
            if (j < 0 || cnt[j] == 0) continue; /* out of range, or this block's run was counted at its first entry */
            cb[n] = j;
            len[n++] = cnt[j];
            cnt[j] = 0;
        }
    }
    first[r1 - r0] = n;
    return n;
}

/* Group trips of rows [r0, r1) (their segments from row_segments, ncb column blocks) in blocks of R rows: the
 * kernel's groups, per block and column block, W short segments (< t_long) in hash order, each ceil(longest lane /
 * S). lens: scratch of the window's segments; start: ncb * d + 1 ints. */
static int64_t window_trips(const hbp_build *B, const hbp_hash *h, int32_t r0, int32_t r1, int32_t R, int32_t ncb,
                            const int32_t *first, const int32_t *cb, const int32_t *len, int32_t *lens,
                            int32_t *start)
{
    int64_t trips = 0;
    const int32_t bins = ncb * h->d;
    for (int32_t b0 = r0; b0 < r1; b0 = r1 - b0 > R ? b0 + R : r1) {
        const int32_t b1 = r1 - b0 > R ? b0 + R : r1, s0 = first[b0 - r0], s1 = first[b1 - r0];
        memset(start, 0, (size_t)(bins + 1) * sizeof *start);
        for (int32_t s = s0; s < s1; s++)
            if (len[s] < h->t_long) start[cb[s] * h->d + hbp_hash_key(len[s], h) + 1]++;
        for (int32_t k = 0; k < bins; k++) start[k + 1] += start[k]; /* start[k]: first of bin k */
        for (int32_t s = s0; s < s1; s++) /* bins in column-block order, each in hash order */
            if (len[s] < h->t_long) lens[start[cb[s] * h->d + hbp_hash_key(len[s], h)]++] = len[s];
        for (int32_t j = 0; j < ncb; j++) { /* start[k] is now the end of bin k: a column block's groups */
            const int32_t g0 = j == 0 ? 0 : start[j * h->d - 1], g1 = start[(j + 1) * h->d - 1];
            for (int32_t g = g0; g < g1; g += B->W) {
                int32_t most = 0;
                for (int32_t i = g; i < g + B->W && i < g1; i++)
                    if (lens[i] > most) most = lens[i];
                trips += (most + B->steps - 1) / B->steps;
            }
        }
    }
    return trips;
}

/* The sampled group trips of each candidate height, trips[k] for 512 << k rows (k < cands), in blocks of C
 * columns (ncb of them, at most HBP_ROWS_CUT_BLOCKS) with hash shift a, over up to HBP_ROWS_WINDOWS windows of the
 * tallest height's rows, counted in parallel (integer sums: the same whatever the threads). Returns 0 when out of
 * memory. */
static int height_trips(const hbp_build *B, int a, int32_t ncb, int cands, int64_t *trips)
{
    const spmv_matrix_t *A = B->A;
    const int32_t window = HBP_DEFAULT_BLOCK_ROWS << (cands - 1);
    const int32_t windows = (int32_t)(((int64_t)A->m + window - 1) / window);
    const int32_t wstep = windows > HBP_ROWS_WINDOWS ? windows / HBP_ROWS_WINDOWS : 1;
    int64_t most = 0; /* segments of a window: at most its rows times ncb, and its entries */
    for (int32_t w = 0; w < windows; w += wstep) {
        const int64_t r0 = (int64_t)w * window, r1 = r0 + window < A->m ? r0 + window : A->m;
        const int64_t bound = A->row_ptr[r1] - A->row_ptr[r0] < (r1 - r0) * ncb ? A->row_ptr[r1] - A->row_ptr[r0]
                                                                                 : (r1 - r0) * ncb;
        if (bound > most) most = bound;
    }
    const size_t nseg = (size_t)most + 1;
    for (int k = 0; k < cands; k++) trips[k] = 0;
    int ok = 1, threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads() < HBP_ROWS_THREADS ? omp_get_max_threads() : HBP_ROWS_THREADS;
#endif
    (void)threads;
    HBP_PRAGMA(omp parallel num_threads(threads) reduction(&& : ok))
    {
        int32_t cnt[HBP_ROWS_CUT_BLOCKS] = {0};
        int32_t *lens = spmvport_malloc_array(nseg, sizeof(int32_t));
        int32_t *start = spmvport_malloc_array((size_t)ncb * HBP_MAX_BINS + 1, sizeof(int32_t));
        int32_t *first = spmvport_malloc_array((size_t)window + 1, sizeof(int32_t));
        int32_t *cb = spmvport_malloc_array(nseg, sizeof(int32_t));
        int32_t *len = spmvport_malloc_array(nseg, sizeof(int32_t));
        const int have = lens && start && first && cb && len;
        int64_t mine[HBP_ROWS_CANDIDATES] = {0};
        HBP_PRAGMA(omp for schedule(dynamic, 1))
        for (int32_t w = 0; w < windows; w += wstep) {
            if (!have) continue;
            const int64_t r0 = (int64_t)w * window, r1 = r0 + window < A->m ? r0 + window : A->m;
            row_segments(A, B->C, (int32_t)r0, (int32_t)r1, cnt, first, cb, len);
            for (int k = 0; k < cands; k++) {
                const int32_t R = HBP_DEFAULT_BLOCK_ROWS << k;
                const hbp_hash h = hash_for(a, R, B->W);
                mine[k] += window_trips(B, &h, (int32_t)r0, (int32_t)r1, R, ncb, first, cb, len, lens, start);
            }
        }
        HBP_PRAGMA(omp critical)
        for (int k = 0; k < cands; k++) trips[k] += mine[k];
        free(lens), free(start), free(first), free(cb), free(len);
        ok = have;
    }
    return ok;
}

/* The block height when hbp_block_rows is 0: see above. One column block counts rows, a cut plan (several
 * column blocks, at most HBP_ROWS_CUT_BLOCKS) its rows' segments per column block. Returns 0 when out of memory.
 * In automatic position order (B->near is -1 unless the order is automatic) the groups keep their rows' order
 * whatever the height, so a taller scope costs little locality, and fewer, larger blocks ran faster although the
 * counted trips barely change: at least HBP_POSITION_BLOCK_ROWS there (H200, run PE, three processes each:
 * circuit:5000000 1024 -> 4096 rows 172.8 -> 170.6 us f64, 107.7 -> 105.4 f32; circuit:2000000 69.8 -> 68.0,
 * 46.9 -> 45.6; 8192 within 1% of 4096). */
static int32_t choose_block_rows(const hbp_build *B)
{
    const spmv_matrix_t *A = B->A;
    const int32_t ncb = (int32_t)(((int64_t)A->n + B->C - 1) / B->C);
    /* the position-order floor was measured with one column block; cut plans keep 512 as theirs */
    const int32_t least = ncb == 1 && B->near >= HBP_NEAR_MIN ? HBP_POSITION_BLOCK_ROWS : HBP_DEFAULT_BLOCK_ROWS;
    if (A->m <= HBP_DEFAULT_BLOCK_ROWS || ncb > HBP_ROWS_CUT_BLOCKS) return least;
    const int cands = B->beyond_l2 ? HBP_ROWS_CANDIDATES : HBP_ROWS_CANDIDATES_IN_L2;
    const double gain = B->beyond_l2 ? HBP_ROWS_GAIN : HBP_ROWS_GAIN_IN_L2;
    /* the shift a from the segments' lengths (one column block: the rows'), sampled as sample_hash samples the
     * segments */
    int32_t cnt[HBP_ROWS_CUT_BLOCKS] = {0}, cb[HBP_ROWS_CUT_BLOCKS], len[HBP_ROWS_CUT_BLOCKS], first[2];
    int32_t stride = A->m > HBP_SAMPLE ? A->m / HBP_SAMPLE : 1;
    int64_t past[HBP_MAX_A + 1] = {0}, samples = 0;
    for (int32_t r = 0; r < A->m; r += stride) {
        const int32_t n = row_segments(A, B->C, r, r + 1, cnt, first, cb, len);
        for (int32_t i = 0; i < n; i++, samples++)
            for (int a = 0; a <= HBP_MAX_A; a++)
                if (((len[i] > HBP_MAX_SEG ? HBP_MAX_SEG : len[i]) >> a) > HBP_TOP_BUCKET) past[a]++;
    }
    int64_t trips[HBP_ROWS_CANDIDATES];
    if (!height_trips(B, hash_shift(past, samples), ncb, cands, trips)) return 0;
    int k = 0;
    while (k + 1 < cands && (double)trips[k + 1] < gain * (double)trips[k]) k++;
    const int32_t R = HBP_DEFAULT_BLOCK_ROWS << k;
    return R > least ? R : least;
}

/* ===========================================================================================================
 * The unit cap. A warp's time is its units' trips, each a memory round trip. On a large matrix every warp has
 * many units and the total sets the time; on one too small to give each resident warp more than a few trips,
 * the longest unit does: a group of 32 rows of ~120 entries takes 30 trips while most of the device idles
 * (wiki-Vote, 104K entries: 44 tasks, ~25 us against cuSPARSE's 9). A cap of k trips per unit makes segments of
 * more than k S entries warp-strided (wasting lanes, which are idle anyway) and cuts long ones every k S W. The
 * builder estimates, from the row lengths, each cap's time in trips as longest unit + (trips + 2.5 units) /
 * resident warps, and keeps the largest cap within 5% of the best (fewer units, fewer partials). The 2.5 is
 * measured: on the H200 (f64, 8 shared matrices x 6 caps, run M) time ~ 7.9 us + 0.52 us x longest + 1.31 us x
 * units per warp, a unit costing what 2.5 trips do (its header, lengths and first x read are a chain).
 *
 * Busy plans. That fit is for matrices of a few trips per warp. With one column block and 4-32 trips of work per
 * resident warp (power-law graphs of 2-16M entries on the H200), the estimate prefers no cap or 16 where a cap of 8
 * (at 4 steps, rows of 33-127 entries warp-strided) is faster. H200, session 42, HEAD's library against this rule,
 * two alternating processes (run J3): kron:20:2 1.05-1.07x, kron:20:4 1.03-1.05x, kron:20:8 1.03-1.07x, kron:18:4
 * and kron:21:2 f64 1.06x, kron:19:2 f64 1.03x, kron:22:2 f32 1.02x, the other 8 plans it changes 0.998-1.016x; the
 * circuit, lp, stencil and uniform plans it reaches were within 0.3% at 8 (runs J1-J2). The estimate charges those
 * rows' extra trips and units in full; at this size they cost less than it says (the cause is not isolated). Cut
 * plans (kron:18:16 f64 0.94x at 8), busier ones (kron:21:8, kron:22:2 f64 0.96-0.98x) and rows that 8 would make
 * long strided units (fem3d:3:40, 81 entries a row: 1.6x slower) keep the estimate's choice: the cap is taken only
 * where there are rows it warp-strides (8 S + 1 to 4 W entries) and they hold at most half the entries (kron
 * graphs: 12-34%); where there are none (uniform rows, stencils) it would change little but the tasks' size.
 *
 * Plans with the global hot copy (session 47) take 16 where the rules above give none: at 4 steps, rows of 65-127
 * entries become warp-strided units instead of lanes of up to 32 trips. H200, run U5, x cuSPARSE f64 / f32, none ->
 * 16: kron:20:16 1.08 / 1.21 -> 1.15 / 1.33, kron:20:8 f64 0.99 -> 1.03, kron:19:16 f64 0.99 -> 1.07, kron:21:4 f64
 * 0.97 -> 0.99; where the busy rule gives 8, 16 was 1-5% slower on 4 of 6 (kron:20:4, kron:20:8 f32), so 8 stays.
 * ========================================================================================================= */

#define HBP_UNIT_TRIPS_MAX 16            /* the largest cap tried (then 8, 4, 2, 1) */
#define HBP_UNIT_TRIPS_GAIN 0.95         /* a smaller cap must be 5% faster by the estimate */
#define HBP_UNIT_COST 2.5                /* a unit's start, in trips (fit above) */
#define HBP_UNIT_BUSY_MIN 4              /* busy plans (above): from 4 trips of work per resident warp ... */
#define HBP_UNIT_BUSY_MAX 32             /* ... to 32 */
#define HBP_UNIT_BUSY_CAP 8              /* take this cap in place of none or a larger one ... */
#define HBP_UNIT_BUSY_MOVED 0.5          /* ... where the rows it warp-strides hold some, at most this share, of the
                                          * entries */
#define HBP_UNIT_GLOBAL_CAP 16           /* plans with the global hot copy: this cap where the rules above give none */

/* Estimated time in trips with at most `cap` trips per unit (0: no cap: groups up to HBP_LONG_WARPS W entries,
 * segments of HBP_MAX_SEG), for `warps` resident warps. */
static double unit_trips_estimate(const spmv_matrix_t *A, int S, int W, int cap, double warps)
{
    const int64_t trip = (int64_t)S * W, t_long = capped_t_long(cap, S, HBP_LONG_WARPS * W);
    const int64_t max_seg = capped_max_seg(cap, S, W);
    int64_t lane_trips = 0, short_rows = 0, long_trips = 0, units = 0, longest = 0;
    for (int32_t r = 0; r < A->m; r++) {
        const int64_t len = A->row_ptr[r + 1] - A->row_ptr[r];
        if (len == 0) continue;
        if (len < t_long) { /* a lane of a warp group */
            const int64_t t = (len + S - 1) / S;
            lane_trips += t;
            short_rows++;
            if (t > longest) longest = t;
        } else { /* warp-strided pieces of max_seg */
            const int64_t t = (len + trip - 1) / trip, piece = max_seg / trip, unit = t < piece ? t : piece;
            long_trips += t;
            units += (len + max_seg - 1) / max_seg;
            if (unit > longest) longest = unit;
        }
    }
    units += (short_rows + W - 1) / W;
    const double work = (double)lane_trips / W + (double)long_trips + HBP_UNIT_COST * (double)units;
    return (double)longest + work / warps;
}

/* The share of A's entries in rows of lo..hi-1 entries. */
static double rows_share(const spmv_matrix_t *A, int64_t lo, int64_t hi)
{
    int64_t in = 0;
    for (int32_t r = 0; r < A->m; r++) {
        const int64_t len = A->row_ptr[r + 1] - A->row_ptr[r];
        if (len >= lo && len < hi) in += len;
    }
    return A->nnz > 0 ? (double)in / (double)A->nnz : 0.0;
}

/* options.hbp_unit_trips: -1 none, k > 0 k, 0 automatic (above). Returns the cap, 0 for none. */
static int choose_unit_trips(const hbp_build *B, const spmv_device_info_t *dev, int requested)
{
    if (requested != 0) return requested > 0 ? requested : 0;
    const spmv_matrix_t *A = B->A;
    const int S = B->steps, W = B->W;
    const double warps = (double)planned_grid(dev, 0, B->ctas) * (HBP_CTA_THREADS / W);
    const double busy = (double)A->nnz / (warps * (double)S * W); /* trips of work per resident warp */
    /* where every warp has a full-length group's trips of work or more, no unit is the critical path: no cap */
    const int64_t longest_group = ((int64_t)HBP_LONG_WARPS * W + S - 1) / S;
    int best = 0;
    if (busy < (double)longest_group) {
        double best_t = unit_trips_estimate(A, S, W, 0, warps);
        for (int cap = HBP_UNIT_TRIPS_MAX; cap >= 1; cap /= 2) {
            const double t = unit_trips_estimate(A, S, W, cap, warps);
            if (t < HBP_UNIT_TRIPS_GAIN * best_t) {
                best = cap;
                best_t = t;
            }
        }
    }
    const int busy_plan = B->ncb == 1 && busy >= HBP_UNIT_BUSY_MIN && busy < HBP_UNIT_BUSY_MAX;
    if (busy_plan && (best == 0 || best > HBP_UNIT_BUSY_CAP)) {
        const double moved = rows_share(A, capped_t_long(HBP_UNIT_BUSY_CAP, S, HBP_LONG_WARPS * W), HBP_LONG_WARPS * W);
        if (moved > 0.0 && moved <= HBP_UNIT_BUSY_MOVED) best = HBP_UNIT_BUSY_CAP;
    }
    if (best == 0 && B->hot_global) best = HBP_UNIT_GLOBAL_CAP;
    return best;
}

/* ===========================================================================================================
 * Pass 5: group the segments of each block (hash or sort2D)
 * ========================================================================================================= */

/* Hash: the bins' histogram, its prefix, a stable scatter; long segments after the short ones, in row order.
 * Returns the number of short segments. */
static int32_t group_block_hash(const hbp_build *B, const hbp_hash *h, int32_t s0, int32_t s1, int32_t *ord)
{
    int32_t start[HBP_MAX_BINS];
    memset(start, 0, (size_t)h->d * sizeof *start);
    int32_t nshort = 0;
    for (int32_t s = s0; s < s1; s++)
        if (B->seg_len[s] < h->t_long) {
            start[hbp_hash_key(B->seg_len[s], h)]++;
            nshort++;
        }
    int32_t pos = s0;
    for (int k = 0; k < h->d; k++) {
        int32_t c = start[k];
        start[k] = pos;
        pos += c;
    }
    int32_t nlong = 0;
    for (int32_t s = s0; s < s1; s++) {
        if (B->seg_len[s] < h->t_long) ord[start[hbp_hash_key(B->seg_len[s], h)]++] = s;
        else ord[s0 + nshort + nlong++] = s;
    }
    return nshort;
}

typedef struct {
    int32_t len, seg;
} hbp_pair;

static int compare_pairs(const void *p, const void *q)
{
    const hbp_pair *x = p, *y = q;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->seg < y->seg ? -1 : x->seg > y->seg;
}

/* sort2D: the same grouping by sorting the short segments by length (ties in row order). */
static int32_t group_block_sort(const hbp_build *B, int32_t t_long, int32_t s0, int32_t s1, int32_t *ord,
                                hbp_pair *tmp)
{
    int32_t nshort = 0, nlong = 0;
    for (int32_t s = s0; s < s1; s++)
        if (B->seg_len[s] < t_long) tmp[nshort++] = (hbp_pair){B->seg_len[s], s};
    qsort(tmp, (size_t)nshort, sizeof *tmp, compare_pairs);
    for (int32_t i = 0; i < nshort; i++) ord[s0 + i] = tmp[i].seg;
    for (int32_t s = s0; s < s1; s++)
        if (B->seg_len[s] >= t_long) ord[s0 + nshort + nlong++] = s;
    return nshort;
}

/* Position order: the block's full warp groups (W consecutive short slots; the partial one stays last) in the
 * order of their rows' mean, so that consecutive units, which one task and one thread block take, cover
 * neighbouring rows whatever the block height. In bin order (the paper's), a task covers the whole block once
 * per bin: on a tall block its x and y entries are shared with the tasks (thread blocks) of the other bins.
 * keys: scratch of nshort / W pairs; copy: of nshort ints. */
static void order_groups(const hbp_build *B, int32_t s0, int32_t nshort, int32_t *ord, hbp_pair *keys,
                         int32_t *copy)
{
    const int32_t W = B->W, full = nshort / W;
    if (full < 2) return;
    for (int32_t g = 0; g < full; g++) {
        int64_t sum = 0;
        for (int32_t l = 0; l < W; l++) sum += B->seg_row[ord[s0 + g * W + l]];
        keys[g] = (hbp_pair){(int32_t)(sum / W), g}; /* ties: bin order */
    }
    qsort(keys, (size_t)full, sizeof *keys, compare_pairs);
    memcpy(copy, ord + s0, (size_t)full * W * sizeof *copy);
    for (int32_t g = 0; g < full; g++) memcpy(ord + s0 + g * W, copy + keys[g].seg * W, (size_t)W * sizeof *copy);
}

/* Group every block into ord (and blk_short when `record`); returns the wall time in ms, or -1 when out of
 * memory. */
static double group_blocks(hbp_build *B, int sort, int32_t *ord, int record)
{
    double t0 = spmvport_now_ms();
    int failed = 0;
    HBP_PRAGMA(omp parallel reduction(|| : failed))
    {
        hbp_pair *tmp = NULL;
        int32_t *copy = NULL;
        if (sort || B->position_order) {
            tmp = spmvport_malloc_array((size_t)B->max_block_segs, sizeof *tmp);
            failed = tmp == NULL;
        }
        if (B->position_order) {
            copy = spmvport_malloc_array((size_t)B->max_block_segs, sizeof *copy);
            failed = failed || copy == NULL;
        }
        HBP_PRAGMA(omp for schedule(dynamic, 64))
        for (int32_t b = 0; b < B->NB; b++) {
            if (failed) continue;
            int32_t s0 = B->blk_seg[b], s1 = B->blk_seg[b + 1];
            int32_t nshort = sort ? group_block_sort(B, B->h.t_long, s0, s1, ord, tmp)
                                  : group_block_hash(B, &B->h, s0, s1, ord);
            if (B->position_order) order_groups(B, s0, nshort, ord, tmp, copy);
            if (record) B->blk_short[b] = nshort;
        }
        free(tmp);
        free(copy);
    }
    return failed ? -1.0 : spmvport_now_ms() - t0;
}

/* ===========================================================================================================
 * Pass 6: units and entries
 * ========================================================================================================= */

static spmv_status_t count_units(hbp_build *B, char *msg, size_t msglen)
{
    const spmv_matrix_t *A = B->A;
    int64_t units = 0, ent = 0, nlong = 0;
    for (int32_t b = 0; b < B->NB; b++) {
        int32_t s0 = B->blk_seg[b], s1 = B->blk_seg[b + 1], nshort = B->blk_short[b];
        B->blk_unit[b] = (int32_t)units;
        B->blk_ent[b] = (int32_t)ent;
        units += (nshort + B->W - 1) / B->W + (s1 - s0 - nshort);
        nlong += s1 - s0 - nshort;
        int32_t lo = INT32_MAX, hi = -1, base = B->blk_cb[b] * B->C;
        for (int32_t s = s0; s < s1; s++) {
            int32_t first = A->col_idx[B->seg_start[s]] - base;
            int32_t last = A->col_idx[B->seg_start[s] + B->seg_len[s] - 1] - base;
            if (first < lo) lo = first;
            if (last > hi) hi = last;
            ent += B->seg_len[s];
        }
        B->blk_lo[b] = lo;
        B->blk_hi[b] = hi;
    }
    if (ent != A->nnz) {
        spmvport_msg(msg, msglen, "hbp: internal error: blocks hold %lld entries, the matrix %d", (long long)ent,
                     A->nnz);
        return SPMV_STATUS_INTERNAL_ERROR;
    }
    B->blk_unit[B->NB] = (int32_t)units; /* <= S */
    B->blk_ent[B->NB] = (int32_t)ent;
    B->nunits = (int32_t)units;
    B->nlong = (int32_t)nlong;
    return SPMV_STATUS_SUCCESS;
}

/* Entry e of the layout is CSR entry k of column block cb. */
static inline void put_entry(const hbp_build *B, int32_t e, int32_t k, int32_t base)
{
    if (B->col_bytes == 2) ((uint16_t *)B->out[HBP_A_COL])[e] = (uint16_t)(B->A->col_idx[k] - base);
    else ((int32_t *)B->out[HBP_A_COL])[e] = B->A->col_idx[k] - base;
    if (B->A->precision == SPMV_F32) ((float *)B->out[HBP_A_VAL])[e] = ((const float *)B->A->values)[k];
    else ((double *)B->out[HBP_A_VAL])[e] = ((const double *)B->A->values)[k];
    B->value_map[e] = k;
}

/* One block: its warp groups (W short segments, entries column-major: step j holds the j-th entry of every
 * lane whose segment is longer than j, in lane order), then one unit per long segment (entries in order). */
static void fill_block(const hbp_build *B, int32_t b)
{
    int32_t *unit_ptr = B->out[HBP_A_UNIT_PTR], *unit_slot = B->out[HBP_A_UNIT_SLOT];
    uint16_t *out_len = B->out[HBP_A_SEG_LEN];
    int32_t *out_out = B->slot_out;
    int32_t s0 = B->blk_seg[b], s1 = B->blk_seg[b + 1], nshort = B->blk_short[b];
    int32_t u = B->blk_unit[b], e = B->blk_ent[b], base = B->blk_cb[b] * B->C;
    for (int32_t g = 0; g < nshort; g += B->W) {
        int32_t lanes = nshort - g < B->W ? nshort - g : B->W, start[64], len[64], longest = 0;
        unit_ptr[u] = e;
        unit_slot[u++] = s0 + g;
        for (int32_t l = 0; l < lanes; l++) {
            int32_t slot = s0 + g + l, sg = B->ord[slot];
            start[l] = B->seg_start[sg];
            len[l] = B->seg_len[sg];
            out_len[slot] = (uint16_t)len[l];
            out_out[slot] = B->seg_out[sg];
            if (len[l] > longest) longest = len[l];
        }
        for (int32_t j = 0; j < longest; j++)
            for (int32_t l = 0; l < lanes; l++)
                if (len[l] > j) put_entry(B, e++, start[l] + j, base);
    }
    for (int32_t slot = s0 + nshort; slot < s1; slot++) {
        int32_t sg = B->ord[slot];
        unit_ptr[u] = e;
        unit_slot[u++] = slot;
        out_len[slot] = (uint16_t)B->seg_len[sg];
        out_out[slot] = B->seg_out[sg];
        for (int32_t j = 0; j < B->seg_len[sg]; j++) put_entry(B, e++, B->seg_start[sg] + j, base);
    }
}

/* The unit headers (HBP_A_UNIT_INFO, format_hbp.h) with their outputs and lengths, from the slots' output_hash
 * (slot_out, freed here). A unit is narrow when every slot writes its row directly and its rows lie within
 * HBP_NARROW_ROWS of the smallest: its outputs become 16-bit offsets (seg_out); the other units' output_hash go
 * to wide_out, unit after unit. A unit whose slots hold equally many entries records that count. */
static spmv_status_t narrow_outputs(hbp_build *B, char *msg, size_t msglen)
{
    const int32_t nunits = B->nunits, *unit_slot = B->out[HBP_A_UNIT_SLOT];
    const uint16_t *seg_len = B->out[HBP_A_SEG_LEN];
    int32_t *wide_ptr = spmvport_malloc_array((size_t)nunits, sizeof(int32_t)); /* then its prefix */
    if (wide_ptr == NULL || !alloc_out(B, HBP_A_UNIT_INFO, (size_t)nunits * HBP_UNIT_INFO_INTS, sizeof(int32_t)) ||
        !alloc_out(B, HBP_A_SEG_OUT, (size_t)B->S, sizeof(uint16_t))) {
        free(wide_ptr);
        return oom(msg, msglen, "the unit outputs", B->A);
    }
    int32_t *info = B->out[HBP_A_UNIT_INFO];
    HBP_PRAGMA(omp parallel for schedule(static))
    for (int32_t u = 0; u < nunits; u++) {
        const int32_t s0 = unit_slot[u], s1 = unit_slot[u + 1];
        int32_t lo = INT32_MAX, hi = -1, len = seg_len[s0];
        for (int32_t s = s0; s < s1; s++) {
            const int32_t o = B->slot_out[s];
            if (o < lo) lo = o;
            if (o > hi) hi = o;
            if (seg_len[s] != len) len = -1;
        }
        const int narrow = lo >= 0 && (int64_t)hi - lo <= HBP_NARROW_ROWS;
        int32_t *head = info + (int64_t)u * HBP_UNIT_INFO_INTS;
        head[HBP_U_PTR] = ((const int32_t *)B->out[HBP_A_UNIT_PTR])[u];
        head[HBP_U_SLOT] = s0;
        head[HBP_U_SHAPE] = HBP_SHAPE(s1 - s0, len);
        head[HBP_U_OUT] = narrow ? lo : -1;
        wide_ptr[u] = narrow ? 0 : s1 - s0;
    }
    int32_t nwide = 0, nuniform = 0; /* <= S: the prefix fits */
    for (int32_t u = 0; u < nunits; u++) {
        const int32_t n = wide_ptr[u];
        nuniform += unit_slot[u + 1] - unit_slot[u] > 1 &&
                    HBP_SHAPE_LEN(info[(int64_t)u * HBP_UNIT_INFO_INTS + HBP_U_SHAPE]) >= 0;
        wide_ptr[u] = nwide;
        nwide += n;
    }
    if (!alloc_out(B, HBP_A_WIDE_OUT, (size_t)nwide, sizeof(int32_t))) {
        free(wide_ptr);
        return oom(msg, msglen, "the wide outputs", B->A);
    }
    uint16_t *seg_out = B->out[HBP_A_SEG_OUT];
    int32_t *wide_out = B->out[HBP_A_WIDE_OUT];
    HBP_PRAGMA(omp parallel for schedule(static))
    for (int32_t u = 0; u < nunits; u++) {
        const int32_t s0 = unit_slot[u], s1 = unit_slot[u + 1];
        int32_t *out = info + (int64_t)u * HBP_UNIT_INFO_INTS + HBP_U_OUT;
        if (*out >= 0) {
            for (int32_t s = s0; s < s1; s++) seg_out[s] = (uint16_t)(B->slot_out[s] - *out);
        } else {
            *out = -1 - wide_ptr[u];
            for (int32_t s = s0; s < s1; s++) wide_out[wide_ptr[u] + s - s0] = B->slot_out[s];
        }
    }
    B->nwide = nwide;
    B->nuniform = nuniform;
    free(wide_ptr);
    free(B->slot_out);
    B->slot_out = NULL;
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t fill_units(hbp_build *B, char *msg, size_t msglen)
{
    const spmv_matrix_t *A = B->A;
    size_t nnz = (size_t)A->nnz;
    B->value_map = spmvport_malloc_array(nnz, sizeof(int32_t));
    if (B->value_map == NULL || !alloc_out(B, HBP_A_COL, nnz, (size_t)B->col_bytes) ||
        !alloc_out(B, HBP_A_VAL, nnz, B->vsize) ||
        !alloc_out(B, HBP_A_UNIT_PTR, (size_t)B->nunits + 1, sizeof(int32_t)) ||
        !alloc_out(B, HBP_A_UNIT_SLOT, (size_t)B->nunits + 1, sizeof(int32_t)) ||
        !alloc_out(B, HBP_A_SEG_LEN, (size_t)B->S, sizeof(uint16_t)) ||
        (B->slot_out = spmvport_malloc_array((size_t)B->S, sizeof(int32_t))) == NULL)
        return oom(msg, msglen, "the format's arrays", A);
    /* row block by row block: the CSR rows of a row block stay in cache while all its blocks read them (in
     * column-major order each cache line of the CSR arrays would be fetched once per column block) */
    int32_t *rb_ptr = spmvport_calloc_array((size_t)B->nrb + 1, sizeof(int32_t));
    int32_t *rb_blocks = spmvport_malloc_array((size_t)B->NB, sizeof(int32_t));
    if (rb_ptr == NULL || rb_blocks == NULL) {
        free(rb_ptr);
        free(rb_blocks);
        return oom(msg, msglen, "the row-block order", A);
    }
    for (int32_t b = 0; b < B->NB; b++) rb_ptr[B->blk_rb[b] + 1]++;
    for (int32_t i = 0; i < B->nrb; i++) rb_ptr[i + 1] += rb_ptr[i];
    for (int32_t b = 0; b < B->NB; b++) rb_blocks[rb_ptr[B->blk_rb[b]]++] = b;
    for (int32_t i = B->nrb; i > 0; i--) rb_ptr[i] = rb_ptr[i - 1]; /* back to starts */
    rb_ptr[0] = 0;
    HBP_PRAGMA(omp parallel for schedule(dynamic, 4))
    for (int32_t i = 0; i < B->nrb; i++)
        for (int32_t k = rb_ptr[i]; k < rb_ptr[i + 1]; k++) fill_block(B, rb_blocks[k]);
    free(rb_ptr);
    free(rb_blocks);
    ((int32_t *)B->out[HBP_A_UNIT_PTR])[B->nunits] = A->nnz;
    ((int32_t *)B->out[HBP_A_UNIT_SLOT])[B->nunits] = B->S;
    return narrow_outputs(B, msg, msglen);
}

/* ===========================================================================================================
 * Pass 7: tasks. Consecutive units of one column block, cut at about `target` entries in whole rounds of units
 * over the warps of a thread block. The task's x window is the union of its blocks' column ranges; it is staged
 * in shared memory when it fits and its bytes are at most 16 per entry of the task (else reading x directly
 * through the read-only cache costs less). With staged y (options.hbp_y_stage, one column block) a task's y range
 * is the rows of the blocks whose warp groups it holds, summed in shared memory when it fits; such a task reads x
 * directly. Tasks are cut where they are without it, so a block's groups may lie in two tasks: each stages the
 * block's rows and writes the ones its groups summed (a row is one group's), and a plan of few tall blocks still
 * has a task per resident thread block (session 75: fem3d:3:40 in 1024-row blocks had 188 tasks on 528 resident
 * blocks when groups were kept together). The long units after a block's groups store their rows themselves.
 * ========================================================================================================= */

typedef struct {
    int32_t ntasks, stage_cols, staged;
    int32_t y_rows, y_staged; /* the longest staged y range, and the tasks that stage theirs */
} hbp_task_summary;

/* The task being packed. */
typedef struct {
    int open;
    int32_t cb, first, lo, hi;
    int64_t entries;
    int32_t y_lo, y_hi; /* rows of the blocks whose groups it holds, [y_lo, y_hi); y_lo < 0: none (B->y_stage) */
} hbp_open_task;

/* With staged y: the first of the long units (1 slot) that end block b, after its warp groups */
static int32_t block_tail(const hbp_build *B, int32_t b)
{
    const int32_t *us = B->out[HBP_A_UNIT_SLOT];
    int32_t u = B->blk_unit[b + 1];
    while (u > B->blk_unit[b] && us[u] - us[u - 1] == 1) u--;
    return u;
}

/* The end of block b's row block: its rows are [blk_rb[b] R, end) */
static int32_t block_row_end(const hbp_build *B, int32_t b)
{
    const int64_t end = ((int64_t)B->blk_rb[b] + 1) * B->R;
    return end < B->A->m ? (int32_t)end : B->A->m;
}

static void close_task(const hbp_build *B, hbp_open_task *t, int32_t end, int32_t stage_cap, int32_t *task,
                       hbp_task_summary *sum)
{
    int32_t len = t->hi - t->lo + 1;
    const int32_t y_len = B->y_stage && t->y_lo >= 0 && t->y_hi - t->y_lo <= B->y_cap ? t->y_hi - t->y_lo : 0;
    /* staging reads len values in order; reading x directly costs a cache sector (32 bytes) per missing entry.
     * A staged y range takes the shared memory instead. */
    int staged = y_len == 0 && len <= stage_cap && (int64_t)len * (int64_t)B->vsize <= 16 * t->entries;
    if (task != NULL) {
        int32_t *rec = task + (size_t)sum->ntasks * HBP_TASK_INTS;
        rec[HBP_T_UNIT_BEGIN] = t->first;
        rec[HBP_T_UNIT_END] = end;
        rec[HBP_T_XBASE] = t->cb * B->C;
        rec[HBP_T_STAGE_LO] = t->lo;
        rec[HBP_T_STAGE_LEN] = staged ? len : 0;
        rec[HBP_T_Y_LO] = y_len > 0 ? t->y_lo : 0;
        rec[HBP_T_Y_LEN] = y_len;
    }
    if (staged && len > sum->stage_cols) sum->stage_cols = len;
    if (y_len > sum->y_rows) sum->y_rows = y_len;
    sum->y_staged += y_len > 0;
    sum->staged += staged;
    sum->ntasks++;
    t->open = 0;
}

/* Task sizes: the fixed share of the entries (HBP_FIXED_SHARE) in HBP_FIXED_TASKS tasks per thread block of the
 * grid, the rest (the competitive part) in HBP_TICKET_TASKS tasks per thread block, at least 8 W entries each; with a
 * unit cap (a matrix too small to fill the device) no minimum: a task is then one round of units, so they spread
 * over more thread blocks. The blocks that finish their last ticket early idle while the others end theirs, about
 * half a ticket task on average: small ticket tasks keep that short. */
typedef struct {
    int64_t fixed, ticket; /* target entries of a fixed task and of a ticket task */
    int64_t nfixed;        /* tasks of the fixed size: the first nfixed (whole rounds of the grid) */
} hbp_task_sizes;

static hbp_task_sizes task_sizes(const hbp_build *B, int32_t grid)
{
    const double share = B->position_order ? HBP_FIXED_SHARE_POSITION : HBP_FIXED_SHARE;
    const double kc = B->position_order ? HBP_TICKET_TASKS_POSITION : HBP_TICKET_TASKS;
    const int qf = HBP_FIXED_TASKS;
    const int64_t floor = B->unit_trips == 0 ? 8 * (int64_t)B->W : 0;
    hbp_task_sizes z;
    const double fixed_entries = share * (double)B->A->nnz;
    z.nfixed = (int64_t)qf * grid;
    z.fixed = (int64_t)(fixed_entries / (qf * grid));
    z.ticket = (int64_t)(((double)B->A->nnz - fixed_entries) / (kc * grid));
    if (z.fixed < floor) z.fixed = floor;
    if (z.ticket < floor) z.ticket = floor;
    return z;
}

/* A thread block per task (options.hbp_task_blocks) where there are more tasks than resident blocks: the blocks
 * past those start as others finish, in task order (the fixed-size tasks first), so the hardware's block
 * scheduler does the ticket's work without its atomics: every block of the resident grid adds to one ticket and
 * then to one done counter, the same two words, at least twice per block (grid + 2 more), which at the launch
 * floor is a serial chain of L2 atomics. Never with hot columns: each block copies them from x. Automatic = on:
 * run OA (H100) found it faster on every plan it changes (docs/formats/hbp.md "Thread blocks"). */
static int task_blocks(const hbp_build *B, int32_t grid)
{
    return B->ntasks > grid && (B->nhot == 0 || B->hot_global) && B->task_blocks_want >= 0;
}

/* Shared memory a thread block of the plan needs: its longest x window or staged y range */
static size_t task_smem(const hbp_build *B, hbp_task_summary ts)
{
    const size_t x = (size_t)ts.stage_cols * B->vsize, y = HBP_Y_STAGE_BYTES(ts.y_rows, B->vsize);
    return x > y ? x : y;
}

/* Count the tasks (task == NULL) or write them. */
static hbp_task_summary plan_tasks(const hbp_build *B, hbp_task_sizes z, int32_t stage_cap, int32_t *task)
{
    const int32_t *unit_ptr = B->out[HBP_A_UNIT_PTR];
    hbp_task_summary sum = {0, 0, 0, 0, 0};
    hbp_open_task t = {0, -1, 0, 0, 0, 0, -1, -1};
    for (int32_t b = 0; b < B->NB; b++) {
        const int32_t tail = B->y_stage ? block_tail(B, b) : 0;
        for (int32_t u = B->blk_unit[b]; u < B->blk_unit[b + 1]; u++) {
            /* whole rounds of units over the thread block's warps (one unit for each, two, ...): else some
             * warps idle through the task's last round (big units, e.g. 32 rows of 81 entries, make it show).
             * With staged y also a cut before a block's groups when its y range would pass what shared memory
             * holds */
            const int64_t target = sum.ntasks < z.nfixed ? z.fixed : z.ticket;
            int full = t.entries >= target && (u - t.first) % (HBP_CTA_THREADS / B->W) == 0;
            if (B->y_stage && u == B->blk_unit[b] && u < tail && t.y_lo >= 0 && block_row_end(B, b) - t.y_lo > B->y_cap)
                full = 1;
            if (t.open && (B->blk_cb[b] != t.cb || full)) close_task(B, &t, u, stage_cap, task, &sum);
            if (!t.open) t = (hbp_open_task){1, B->blk_cb[b], u, B->blk_lo[b], B->blk_hi[b], 0, -1, -1};
            if (u < tail) { /* a group of block b: its rows join the task's y range */
                if (t.y_lo < 0) t.y_lo = B->blk_rb[b] * B->R;
                t.y_hi = block_row_end(B, b);
            }
            if (B->blk_lo[b] < t.lo) t.lo = B->blk_lo[b];
            if (B->blk_hi[b] > t.hi) t.hi = B->blk_hi[b];
            t.entries += unit_ptr[u + 1] - unit_ptr[u];
        }
    }
    if (t.open) close_task(B, &t, B->nunits, stage_cap, task, &sum);
    return sum;
}

static int cmp_int32_desc(const void *p, const void *q)
{
    const int32_t x = *(const int32_t *)p, y = *(const int32_t *)q;
    return x > y ? -1 : x < y;
}

/* Hot columns (options.hbp_hot): with one column block, 32-bit columns and no staged task, the shared memory is
 * free, and on a power-law graph a few thousand columns take a large share of the reads (kron:20:16: the top 6112,
 * 48 KiB of f64, 42% of the entries) while lying one per 128-byte line, far more lines than L1 holds. Every
 * thread block copies x at them into shared memory once per call (one L2 sector each) and their entries store
 * -1 - (index in the copy). Taken: the most read columns, at most `cap`, each read at least `min_reads` times
 * (hot_min_reads: its copy costs a read per block), and none unless they take at least `min_share` of the entries
 * (the automatic rule: on the H200 kron:20:16's 42% made it 11% faster, NotreDame_www's 16% and circuit:5000000's
 * 5% slower: the copy and the sign test cost more than the few L2 reads saved). */

/* Each column's reads, counted on the first call (a build may ask twice: choose_hot_copy, then graph_steps); NULL
 * when out of memory. */
static const uint32_t *column_reads(hbp_build *B)
{
    if (B->reads == NULL) B->reads = spmvport_column_reads(B->A);
    return B->reads;
}

/* The hot-column map of A: map[c] = the column's index in the copy, or -1; returns how many (at most cap, each
 * read at least min_reads times) and their entries in *covered, or -1 when out of memory. The caller frees *map. */
static int32_t hot_map(hbp_build *B, int32_t cap, int32_t min_reads, int32_t **map, int64_t *covered)
{
    const spmv_matrix_t *A = B->A;
    const uint32_t *reads = column_reads(B);
    int32_t *deg = spmvport_malloc_array((size_t)A->n, sizeof(int32_t));
    int32_t *cand = spmvport_malloc_array((size_t)A->n + 1, sizeof(int32_t));
    int32_t h = -1;
    *covered = 0;
    if (reads != NULL && deg != NULL && cand != NULL) {
        for (int32_t c = 0; c < A->n; c++) deg[c] = (int32_t)reads[c];
        int32_t nc = 0;
        for (int32_t c = 0; c < A->n; c++)
            if (deg[c] >= min_reads) cand[nc++] = deg[c];
        /* threshold t: the cap-th largest degree (columns of degree t are taken in column order up to cap) */
        int32_t t = min_reads;
        if (nc > cap) {
            qsort(cand, (size_t)nc, sizeof(int32_t), cmp_int32_desc);
            t = cand[cap - 1];
        }
        int32_t above = 0;
        for (int32_t c = 0; c < A->n; c++) above += deg[c] > t;
        int32_t at_t = cap - above; /* columns of degree t still taken */
        h = 0;
        for (int32_t c = 0; c < A->n; c++) {
            const int take = (deg[c] > t || (deg[c] == t && at_t-- > 0)) && h < cap;
            if (take) *covered += deg[c];
            deg[c] = take ? h++ : -1; /* deg becomes the column -> hot index map */
        }
    } else {
        free(deg);
        deg = NULL;
    }
    free(cand);
    *map = deg;
    return h;
}

/* The layout's hot columns from a map (hot_map): the copy's column list, and their entries' columns rewritten.
 * Returns 0 when out of memory. */
static int apply_hot(hbp_build *B, const int32_t *map, int32_t h)
{
    const spmv_matrix_t *A = B->A;
    B->nhot = h;
    int ok = alloc_out(B, HBP_A_HOT, (size_t)h, sizeof(int32_t));
    if (ok && h > 0) {
        int32_t *hot = B->out[HBP_A_HOT], *col = B->out[HBP_A_COL];
        for (int32_t c = 0; c < A->n; c++)
            if (map[c] >= 0) hot[map[c]] = c;
        spmvport_relabel_hot_columns(col, col, A->nnz, map);
    }
    return ok;
}

/* The fewest reads of a hot column: one per thread block of the grid (its copy costs a read per block), and for
 * the automatic rule also HBP_HOT_MIN_READS_SM per multiprocessor. f64 plans with hot columns run 2 blocks per
 * multiprocessor (8 steps), f32 ones 3, so with the grid alone f64 took columns read 2-3 times per multiprocessor
 * that f32 leaves: on the H200 kron:20:4's 6112 f64 columns (44% of the entries, 4760 of them read 302 times) made
 * it 18% slower than none, where f32, at 396 reads, takes none (24% of the entries). With 396 f64 takes none too:
 * 99.1 -> 81.2 us, 0.72 -> 0.885x cuSPARSE (session 41, run H1); kron:19:8 and :19:16 (56 and 1076 columns fewer)
 * within 0.3%. Of the generated kron graphs (2^15-2^22) and the shared matrices no other plan changes. */
static int32_t hot_min_reads(const spmv_device_info_t *dev, int32_t grid, int automatic)
{
    const int32_t reads = HBP_HOT_MIN_READS_SM * device_sms(dev);
    return automatic && reads > grid ? reads : grid;
}

/* hot_map, then apply_hot (none when below min_share). Returns 0 when out of memory. */
static int choose_hot(hbp_build *B, int32_t cap, int32_t min_reads, double min_share)
{
    int32_t *map;
    int64_t covered;
    int32_t h = hot_map(B, cap, min_reads, &map, &covered);
    if (h < 0) return 0;
    if ((double)covered < min_share * (double)B->A->nnz) h = 0; /* too few reads saved: none */
    const int ok = apply_hot(B, map, h);
    free(map);
    return ok;
}

/* The global copy's hot columns (hbp_hot_copy = 2), chosen as csr_lb's lb_hot chooses them (the most read, ties to
 * the lower column, ascending; automatic: 64 KiB of them where they hold a quarter of the entries): into *map as
 * hot_map makes it (NULL when none). Returns their count, or -1 when out of memory. */
static int32_t global_hot_map(hbp_build *B, int hbp_hot, int32_t **map)
{
    const int lb_hot = hbp_hot == 0 ? 0 : hbp_hot > 0 ? hbp_hot : (int)(SPMVPORT_HOT_AUTO_BYTES / B->vsize);
    int32_t *hot;
    const int64_t h = spmvport_lb_hot_columns(B->A, lb_hot, &B->reads, &hot, map); /* *map: NULL when none */
    free(hot);
    return (int32_t)h;
}

/* Where the hot copy goes (options.hbp_hot_copy): 2 global, 1 shared; automatic (0) global where hbp_hot is 0 too,
 * csr_lb's rule finds hot columns (its map is kept for the final choice: one count of the reads) and either the
 * plan has one column block of 32-bit columns and HBP_HOT_GLOBAL_MIN_NNZ entries, or it is a density-chosen cut
 * plan of HBP_HOT_GLOBAL_UNCUT_BLOCKS column blocks or more with HBP_HOT_GLOBAL_CUT_MIN_NNZ entries, which then
 * becomes one column block; else shared, by its own rule. H200, session 47 (run U4, x cuSPARSE f64 / f32,
 * hbp_hot_copy=1 -> automatic): kron:20:4 0.92 / 0.93 -> 0.94 / 1.02, kron:20:8 0.99 / 1.06 -> 0.99 / 1.19,
 * kron:21:4 0.94 / 1.04 -> 0.97 / 1.12, kron:19:32 (cut in 8) 1.09 / 1.18 -> 1.14 / 1.29; the global copy at 8
 * steps was 8-22% slower in f64 (run U1: fewer warps). Session 50 (run W5, after session 49's faster read): the
 * copy now pays at 4 entries a row (kron:21:2 0.90 / 0.93 -> 0.92 / 1.12) and on cut plans of 4 blocks (kron:18:8
 * 0.88 / 1.02 -> 0.89 / 1.07), so those floors went. docs/formats/hbp.md "Hot columns in one global copy". Returns 0
 * when out of memory. */
static int choose_hot_copy(hbp_build *B, const spmv_plan_options_t *opt)
{
    const spmv_matrix_t *A = B->A;
    B->hot_global = opt->hbp_hot_copy == 2;
    /* a cut plan of many column blocks gives way to one block with the copy (the density's width is automatic) */
    const int cut_to_one = B->C < A->n && opt->hbp_block_cols == 0 && A->n > HBP_NARROW_COLS &&
                           ((int64_t)A->n + B->C - 1) / B->C >= HBP_HOT_GLOBAL_UNCUT_BLOCKS;
    if (opt->hbp_hot_copy != 0 || opt->hbp_hot != 0 || (B->C < A->n && !cut_to_one) ||
        (B->C >= A->n && B->col_bytes != 4) ||
        A->nnz < (cut_to_one ? HBP_HOT_GLOBAL_CUT_MIN_NNZ : HBP_HOT_GLOBAL_MIN_NNZ))
        return 1;
    int32_t *map;
    const int32_t h = global_hot_map(B, 0, &map);
    if (h < 0) return 0;
    if (h > 0) {
        if (cut_to_one) B->C = A->n, B->col_bytes = 4;
        B->hot_global = 1;
        B->hot_pre = map;
        B->hot_pre_n = h;
        B->hot_pre_done = 1;
    }
    return 1;
}

/* Fully automatic plans (hbp_steps, hbp_ctas and hbp_hot all 0) of one column block of 32-bit columns whose hot
 * columns would take the share of the entries (a power-law graph) run 8 steps per trip: on the H200 kron:20:16
 * with its hot columns took 0.2496 -> 0.2466 ms f64 and 0.2193 -> 0.2084 f32 (run D), where 8 steps made circuit
 * and FEM slower. Estimated before the layout (which depends on the steps), with the grid of 8 steps and a full
 * copy; the map is kept as the final choice. Returns 0 when out of memory. */
static int graph_steps(hbp_build *B, const spmv_plan_options_t *opt, const spmv_device_info_t *dev)
{
    const spmv_matrix_t *A = B->A;
    if (opt->hbp_steps != 0 || opt->hbp_ctas != 0 || opt->hbp_hot != 0 || B->C < A->n || B->col_bytes != 4 ||
        A->nnz == 0 || B->hot_global)
        return 1;
    const int32_t cap = smem_cols(dev, B->vsize);
    const int ctas = HBP_CTAS_PER_SM((int)B->vsize, 8);
    int32_t *map;
    int64_t covered;
    const int32_t h = hot_map(B, cap, hot_min_reads(dev, planned_grid(dev, (size_t)cap * B->vsize, ctas), 1), &map,
                              &covered);
    if (h < 0) return 0;
    /* kept for the final choice (one degree count per build): with 8 steps its grid is the estimate's (where a
     * multiprocessor holds the 2-3 blocks' 48 KiB copies); with 4 steps the grid is larger, fewer columns
     * qualify and the share stays below the threshold, so none either way */
    B->hot_pre_done = 1;
    if ((double)covered >= HBP_HOT_MIN_SHARE * (double)A->nnz) {
        B->steps = 8;
        B->ctas = ctas;
        B->hot_pre = map;
        B->hot_pre_n = h;
    } else {
        free(map);
    }
    return 1;
}

/* Blocks wider than 65536 columns store 32-bit columns. When every task's columns (entries and window) span
 * fewer than 65536, the columns go back to 16 bits relative to the task: its xbase moves to its first column.
 * A band cut by narrow blocks but narrower than a task's rows plus the band (a 3-D stencil) saves 2 bytes per
 * entry; random columns (graphs) span everything and stay 32-bit. Returns 0 when out of memory. */
static int narrow_task_columns(hbp_build *B)
{
    if (B->col_bytes != 4 || B->ntasks == 0) return 1;
    const int32_t *unit_ptr = B->out[HBP_A_UNIT_PTR], *col32 = B->out[HBP_A_COL];
    int32_t *task = B->out[HBP_A_TASK];
    int32_t *first = spmvport_malloc_array((size_t)B->ntasks, sizeof(int32_t));
    uint16_t *col16 = spmvport_malloc_array((size_t)B->A->nnz, sizeof(uint16_t));
    if (first == NULL || col16 == NULL) {
        free(first);
        free(col16);
        return 0;
    }
    int fits = 1;
    HBP_PRAGMA(omp parallel for schedule(dynamic, 16) reduction(&& : fits))
    for (int32_t t = 0; t < B->ntasks; t++) {
        const int32_t *rec = task + (size_t)t * HBP_TASK_INTS;
        int32_t lo = INT32_MAX, hi = -1;
        if (rec[HBP_T_STAGE_LEN] > 0) {
            lo = rec[HBP_T_STAGE_LO];
            hi = rec[HBP_T_STAGE_LO] + rec[HBP_T_STAGE_LEN] - 1;
        }
        for (int32_t e = unit_ptr[rec[HBP_T_UNIT_BEGIN]]; e < unit_ptr[rec[HBP_T_UNIT_END]]; e++) {
            if (col32[e] < lo) lo = col32[e];
            if (col32[e] > hi) hi = col32[e];
        }
        first[t] = lo;
        fits = fits && (int64_t)hi - lo < HBP_NARROW_COLS;
    }
    if (fits) {
        HBP_PRAGMA(omp parallel for schedule(dynamic, 16))
        for (int32_t t = 0; t < B->ntasks; t++) {
            int32_t *rec = task + (size_t)t * HBP_TASK_INTS;
            for (int32_t e = unit_ptr[rec[HBP_T_UNIT_BEGIN]]; e < unit_ptr[rec[HBP_T_UNIT_END]]; e++)
                col16[e] = (uint16_t)(col32[e] - first[t]);
            rec[HBP_T_XBASE] += first[t];
            rec[HBP_T_STAGE_LO] -= first[t];
        }
        free(B->out[HBP_A_COL]);
        B->out[HBP_A_COL] = col16;
        B->out_bytes[HBP_A_COL] = (size_t)B->A->nnz * sizeof(uint16_t);
        B->col_bytes = 2;
        col16 = NULL;
    }
    free(first);
    free(col16);
    return 1;
}

/* ===========================================================================================================
 * Statistics: the paper's Fig. 6 metric, the standard deviation of the row lengths a warp's lanes get, averaged
 * over the warp groups, over the short segments (the rows the lanes of a group run; empty rows are not stored,
 * long segments are warp-strided): before = W consecutive short segments of a block in row order, after = the
 * kernel's groups (hashed or sorted order).
 * ========================================================================================================= */

typedef struct {
    double sum, sumsq;
    int32_t count;
} hbp_moments;

static void add_length(hbp_moments *g, int32_t len)
{
    g->sum += len;
    g->sumsq += (double)len * len;
    g->count++;
}

/* Population standard deviation of a group; the group is emptied. */
static double take_std(hbp_moments *g)
{
    double mean = g->sum / g->count, var = g->sumsq / g->count - mean * mean;
    *g = (hbp_moments){0, 0, 0};
    return var > 0 ? sqrt(var) : 0.0;
}

static void warp_std(const hbp_build *B, double *before, double *after)
{
    double sb = 0, sa = 0;
    int64_t nb = 0, na = 0;
    HBP_PRAGMA(omp parallel for schedule(dynamic, 64) reduction(+ : sb, sa, nb, na))
    for (int32_t b = 0; b < B->NB; b++) {
        int32_t s0 = B->blk_seg[b], s1 = B->blk_seg[b + 1], nshort = B->blk_short[b];
        hbp_moments g = {0, 0, 0};
        for (int32_t s = s0; s < s1; s++) {
            if (B->seg_len[s] >= B->h.t_long) continue;
            add_length(&g, B->seg_len[s]);
            if (g.count == B->W) {
                sb += take_std(&g);
                nb++;
            }
        }
        if (g.count > 0) {
            sb += take_std(&g);
            nb++;
        }
        for (int32_t p = s0; p < s0 + nshort; p++) {
            add_length(&g, B->seg_len[B->ord[p]]);
            if (g.count == B->W || p == s0 + nshort - 1) {
                sa += take_std(&g);
                na++;
            }
        }
    }
    *before = nb > 0 ? sb / nb : 0.0;
    *after = na > 0 ? sa / na : 0.0;
}

/* ===========================================================================================================
 * The builder
 * ========================================================================================================= */

static spmv_status_t hand_over(hbp_build *B, spmvport_format_data *fd, char *msg, size_t msglen)
{
    spmv_status_t st = SPMV_STATUS_SUCCESS;
    for (int a = 0; a < HBP_NARRAYS; a++) {
        if (st == SPMV_STATUS_SUCCESS)
            st = spmvport_format_add_array(fd, hbp_array_names[a], B->out[a], B->out_bytes[a], a == HBP_A_VAL);
        else free(B->out[a]);
        B->out[a] = NULL;
    }
    if (st != SPMV_STATUS_SUCCESS) {
        spmvport_msg(msg, msglen, "hbp: could not attach the format's arrays (%s)", spmv_status_string(st));
        return st;
    }
    for (int a = 0; a < HBP_NARRAYS; a++) fd->arrays[a].host_only = hbp_host_only(a);
    fd->value_map = B->value_map;
    fd->value_slots = B->A->nnz;
    B->value_map = NULL;
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t build(hbp_build *B, spmvport_format_data *fd, const spmv_device_info_t *dev,
                           const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
    const spmv_matrix_t *A = B->A;
    spmv_status_t st = spmvport_check_csr_rows(A, "hbp", msg, msglen); /* columns: count_segments */
    if (st == SPMV_STATUS_SUCCESS) st = check_options(B, opt, dev, msg, msglen);
    if (st != SPMV_STATUS_SUCCESS) return st;

    double t0 = spmvport_now_ms();
    if ((st = count_segments(B, msg, msglen)) != SPMV_STATUS_SUCCESS) return st;
    if ((st = plan_fix_rows(B, dev, opt->hbp_combine, msg, msglen)) != SPMV_STATUS_SUCCESS) return st;
    if ((st = scatter_segments(B, msg, msglen)) != SPMV_STATUS_SUCCESS) return st;
    if ((st = find_blocks(B, msg, msglen)) != SPMV_STATUS_SUCCESS) return st;
    double count_ms = spmvport_now_ms() - t0;

    sample_hash(B);
    B->ord = spmvport_malloc_array((size_t)B->S, sizeof(int32_t));
    if (B->ord == NULL) return oom(msg, msglen, "the row order", A);
    double hash_ms = -1, sort_ms = -1;
    if (B->grouping == 1) { /* sort2D builds the layout; the hash runs too, into scratch, for the comparison */
        int32_t *scratch = spmvport_malloc_array((size_t)B->S, sizeof(int32_t));
        if (scratch == NULL) return oom(msg, msglen, "the hash comparison", A);
        hash_ms = group_blocks(B, 0, scratch, 0);
        free(scratch);
        sort_ms = group_blocks(B, 1, B->ord, 1);
        if (sort_ms < 0) return oom(msg, msglen, "sorting buffers", A);
    } else {
        hash_ms = group_blocks(B, 0, B->ord, 1);
    }

    if ((st = count_units(B, msg, msglen)) != SPMV_STATUS_SUCCESS) return st;
    if ((st = fill_units(B, msg, msglen)) != SPMV_STATUS_SUCCESS) return st;

    const int32_t stage_cap = smem_cols(dev, B->vsize);
    /* the grid depends on the longest staged window, which depends on the tasks: plan for the widest window,
     * then again for the grid of the window the tasks really stage (no staging: B->ctas) */
    int32_t grid =
        planned_grid(dev, (size_t)(B->C < stage_cap ? B->C : stage_cap) * B->vsize, B->ctas);
    hbp_task_summary ts = plan_tasks(B, task_sizes(B, grid), stage_cap, NULL);
    int32_t staged_grid = planned_grid(dev, task_smem(B, ts), B->ctas);
    if (staged_grid != grid) {
        grid = staged_grid;
        ts = plan_tasks(B, task_sizes(B, grid), stage_cap, NULL);
    }
    if (!alloc_out(B, HBP_A_TASK, (size_t)ts.ntasks * HBP_TASK_INTS, sizeof(int32_t)) ||
        !alloc_out(B, HBP_A_SCHED, 2, sizeof(int32_t)))
        return oom(msg, msglen, "tasks", A);
    const hbp_task_sizes sizes = task_sizes(B, grid);
    plan_tasks(B, sizes, stage_cap, B->out[HBP_A_TASK]);
    B->ntasks = ts.ntasks;
    /* the same, unless the re-plan staged more */
    grid = planned_grid(dev, task_smem(B, ts), B->ctas);
    if (!narrow_task_columns(B)) return oom(msg, msglen, "16-bit columns", A);
    B->nhot = 0;
    /* a shared hot copy would take the staged y's shared memory: with staged y only the global one */
    if (B->hot_want != -2 && B->col_bytes == 4 && B->ncb == 1 && ts.stage_cols == 0 && B->ntasks > 0 &&
        (ts.y_rows == 0 || B->hot_global)) {
        const int32_t cap = B->hot_want > 0 && B->hot_want < stage_cap ? B->hot_want : stage_cap;
        int ok;
        if (B->hot_pre_done) {
            ok = apply_hot(B, B->hot_pre, B->hot_pre_n); /* choose_hot_copy's or graph_steps' map */
        } else if (B->hot_global) {
            int32_t *map;
            const int32_t h = global_hot_map(B, B->hot_want, &map);
            ok = h >= 0 && apply_hot(B, map, h);
            free(map);
        } else {
            ok = choose_hot(B, cap, hot_min_reads(dev, grid, B->hot_want == 0),
                            B->hot_want == 0 ? HBP_HOT_MIN_SHARE : 0.0);
        }
        if (!ok) return oom(msg, msglen, "hot columns", A);
        /* the shared copy sets the blocks a multiprocessor holds; the global one takes no shared memory */
        if (B->nhot > 0 && !B->hot_global) grid = planned_grid(dev, (size_t)B->nhot * B->vsize, B->ctas);
    }
    if (B->out[HBP_A_HOT] == NULL && !alloc_out(B, HBP_A_HOT, 0, sizeof(int32_t)))
        return oom(msg, msglen, "hot columns", A);
    if (!alloc_out(B, HBP_A_HOT_X, B->hot_global ? (size_t)B->nhot : 0, B->vsize))
        return oom(msg, msglen, "hot columns", A);

    double std_before, std_after;
    warp_std(B, &std_before, &std_after);
    /* the kernel's trips (each waits for a memory round trip): a group's longest lane, a long unit's W-strided
     * steps, S steps per trip */
    int64_t trips = 0;
    {
        const int32_t *us = B->out[HBP_A_UNIT_SLOT];
        const uint16_t *sl = B->out[HBP_A_SEG_LEN];
        for (int32_t u = 0; u < B->nunits; u++) {
            int32_t most = 0;
            for (int32_t s = us[u]; s < us[u + 1]; s++)
                if (sl[s] > most) most = sl[s];
            if (us[u + 1] - us[u] == 1) most = (most + B->W - 1) / B->W;
            trips += (most + B->steps - 1) / B->steps;
        }
    }

    int64_t *p = fd->params;
    p[HBP_P_BLOCK_ROWS] = B->R;
    p[HBP_P_BLOCK_COLS] = B->C;
    p[HBP_P_NTASKS] = B->ntasks;
    p[HBP_P_NUNITS] = B->nunits;
    p[HBP_P_NSLOTS] = B->S;
    p[HBP_P_NFIX] = B->nfix;
    p[HBP_P_NPARTS] = B->combine == HBP_COMBINE_PARTIALS ? B->nparts : 0;
    p[HBP_P_COMBINE] = B->combine;
    p[HBP_P_STAGE_COLS] = ts.stage_cols;
    p[HBP_P_GRID] = grid;
    p[HBP_P_NBLOCKS] = B->NB;
    p[HBP_P_COL_BYTES] = B->col_bytes;
    p[HBP_P_STEPS] = B->steps;
    p[HBP_P_PREFETCH] = B->prefetch;
    p[HBP_P_SPLIT_TAILS] = B->split_tails;
    p[HBP_P_CTAS] = B->ctas;
    p[HBP_P_MAX_SEG] = B->max_seg;
    p[HBP_P_NEMPTY] = B->nempty;
    /* the first sizes.nfixed tasks have the fixed size, planned for the grid before hot columns (which may
     * shrink it): whole rounds of this one */
    p[HBP_P_FIXED] = grid > 0 ? (sizes.nfixed < B->ntasks ? sizes.nfixed : B->ntasks) / grid : 0;
    fd->deterministic = B->combine == HBP_COMBINE_PARTIALS || B->nparts == 0;
    p[HBP_P_TASK_BLOCKS] = task_blocks(B, grid);
    p[HBP_P_Y_ROWS] = ts.y_rows;

    size_t bytes = 0;
    for (int a = 0; a < HBP_NARRAYS; a++) bytes += hbp_host_only(a) ? 0 : B->out_bytes[a]; /* device bytes */
    /* staged y's keys only where it was asked for: the stats' 512 bytes are full, and these would push the last
     * pairs out of every plan's */
    char ystats[64] = "";
    if (B->y_stage_want == 1) spmvport_msg(ystats, sizeof ystats, "y_staged=%d;y_rows=%d;", ts.y_staged, ts.y_rows);
    const hbp_hash *h = &B->h;
    spmvport_msg(fd->stats, sizeof fd->stats,
                 "grouping=%s;block_rows=%d;block_cols=%d;row_blocks=%d;col_blocks=%d;blocks=%d;segments=%d;"
                 "units=%d;long_segments=%d;tasks=%d;fixed_tasks=%d;staged_tasks=%d;grid=%d;task_blocks=%d;"
                 "stage_cols=%d;%s"
                 "combine=%s;fix_rows=%d;multi_segments=%d;col_bytes=%d;a=%d;b=%d;c=%d;d=%d;t_long=%d;"
                 "std_before=%.4g;std_after=%.4g;count_ms=%.3f;hash_ms=%.3f;sort_ms=%.3f;bytes_per_nnz=%.2f;steps=%d;prefetch=%d;"
                 "tails=%d;trips=%lld;ctas=%d;hot=%d;hot_copy=%s;unit_trips=%d;max_seg=%d;order=%s;near=%.3f;wide_slots=%d;"
                 "uniform_groups=%d",
                 B->grouping ? "sort" : "hash", B->R, B->C, B->nrb, B->ncb, B->NB, B->S, B->nunits, B->nlong,
                 B->ntasks, (int)(p[HBP_P_FIXED] * grid), ts.staged, grid, (int)p[HBP_P_TASK_BLOCKS], ts.stage_cols, ystats,
                 B->combine == HBP_COMBINE_PARTIALS ? "partials" : "atomics", B->nfix, B->nparts, B->col_bytes,
                 h->a, h->b, h->c,
                 h->d, h->t_long, std_before, std_after, count_ms, hash_ms, sort_ms,
                 A->nnz > 0 ? (double)bytes / A->nnz : 0.0, B->steps, B->prefetch,
                 B->split_tails, (long long)trips, B->ctas, B->nhot,
                 B->nhot == 0 ? "none" : B->hot_global ? "global" : "shared", B->unit_trips, B->max_seg,
                 B->position_order ? "position" : "bin", B->near, B->nwide, B->nuniform);
    return hand_over(B, fd, msg, msglen);
}

spmv_status_t spmvport_build_hbp(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                 const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
    if (fd == NULL || A == NULL || opt == NULL) {
        spmvport_msg(msg, msglen, "hbp: NULL argument");
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    hbp_build B;
    memset(&B, 0, sizeof B);
    B.A = A;
    B.W = fd->warp_size;
    B.vsize = spmvport_value_size(A->precision);
    spmv_status_t st = build(&B, fd, dev, opt, msg, msglen);
    build_free(&B);
    return st;
}
