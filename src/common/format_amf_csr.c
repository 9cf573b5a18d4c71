/*
 * format_amf_csr.c -- host builder of format amf_csr: adaptive multi-row folding of CSR (Gao et al., ICPADS 2021).
 *
 * The layout is described in format_amf_csr.h and docs/formats/amf_csr.md. The build, in passes:
 *   1. check the CSR and the options; count short rows (< AMF_LONG_MIN entries) and their entries;
 *   2. fold consecutive short rows, at most 4 per fold, while the fold's entries stay <= T_s
 *      (T_s = ceil(4.5 * mean short row length)) and the fold spans at most win_cap aligned windows (the power of
 *      two >= ceil(T_s / AMF_BATCH); amf_fixed_fold = -1: no cap); a fixed fold count k folds k rows whatever
 *      their length;
 *   3. group consecutive folds into sub-blocks (one warp each) while their entries stay <= T_l, with
 *      T_l = clamp(short entries / (waves * resident warps of the device), G * F, 16 * (W / 2) * F) (waves: 2 or
 *      options.amf_waves), F the average fold length and G the folds a warp runs side by side; lanes per fold
 *      per sub-block: the count with the least modelled time (memory round trips of one aligned window of
 *      AMF_BATCH entries per lane, per step) for its fold lengths; options.amf_resident = k instead cuts k x (the
 *      warps resident at once) sub-blocks of equal weight (group_one_wave);
 *      on matrices without long rows, uniform sub-blocks of one step at one lane count instead where they fit in
 *      one wave (launch floor), where T_l is at its floor or where the folds are short (at most AMF_WAVE_WINDOWS
 *      windows) (choose_uniform, options.amf_uniform), whose bounds the kernel derives from the sub-block's index;
 *   4. cut long rows into pieces of AMF_BLOCK * AMF_PIECE_PER_THREAD entries, one thread block each;
 *   5. merge each fold's entries by column (parallel over units) and gather the values through value_map.
 * Every size is checked against int32; nothing is printed; on failure the caller frees fd (which owns every array
 * added so far).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format_amf_csr.h"
#include "format_builders.h"

/* ==================================================================================================== */
/* Small helpers                                                                                        */
/* ==================================================================================================== */

/* Documented defaults when the device figures are unknown (CPU backend): an A100's 108 multiprocessors. */
#define AMF_DEFAULT_MULTIPROCESSORS 108
#define AMF_THREADS_PER_MP 2048 /* resident threads per multiprocessor assumed for the T_l target */
#define AMF_WAVES 2             /* sub-blocks aim at this many waves of resident warps (csr_lb's LB_WAVES) */
#define AMF_MAX_WAVES 64        /* options.amf_waves at most */
#define AMF_MAX_RESIDENT 8      /* options.amf_resident at most */
#define AMF_MAX_PARTS (1 << 24) /* equal sub-blocks at most: weights (< 2^33) x parts stay in int64 */
#define AMF_RESIDENT 0          /* waves of equal sub-blocks when neither amf_resident nor amf_waves is set (0: T_l
                                 * grouping at AMF_WAVES); unmeasured on a GPU yet, hence 0 */
#define AMF_MAX_STEPS 16        /* a sub-block holds at most this many steps of W / 2 folds (the widest step) */
#define AMF_CHAIN 12            /* the lane model's chain before a warp's first add, in quarter round trips */
#define AMF_ENTRY_LOAD 2        /* entries a lane of the one-step kernel by entries takes from an average fold */
#define AMF_WAVE_WINDOWS 128    /* many waves of one-step warps by windows: folds of at most this many windows */
#define AMF_ONE_WAVE_WINDOWS 48 /* ... taken before the one-wave layouts where folds span more than this many */
#define AMF_WAVE_LANE_WINDOWS 3 /* ... at lanes that leave at most this many of an average fold's windows a lane */
#define AMF_OMP_MIN 65536       /* loops shorter than this stay serial: a parallel region costs more */

static int log2_int(int v)
{
    int e = 0;
    while ((1 << (e + 1)) <= v) e++;
    return e;
}

/* log2 of the lanes per fold for folds of `avg` entries: the fewest lanes, a power of two in [2, W], that load
 * such a fold in one window of AMF_BATCH entries per lane (a lane's window is in flight at once, so a fold costs
 * one memory round trip; fewer lanes per fold put more folds side by side in a step). Windows are aligned to
 * AMF_BATCH entries, so a fold of F entries at a random offset spans (F + AMF_BATCH - 1) / AMF_BATCH of them on
 * average. */
static int lanes_log2_for(double avg, int w_log2)
{
    int e = 1;
    while (e < w_log2 && (double)(AMF_BATCH << e) < avg + AMF_BATCH - 1) e++;
    return e;
}

/* Aligned windows of `win` entries that fold u spans (what the kernel loads). */
static int64_t fold_windows_of(const int32_t *fold_ptr, int32_t u, int64_t win)
{
    const int64_t b = fold_ptr[u], e = fold_ptr[u + 1];
    return e > b ? (e + win - 1) / win - b / win : 0;
}

static int64_t fold_windows(const int32_t *fold_ptr, int32_t u) { return fold_windows_of(fold_ptr, u, AMF_BATCH); }

static int32_t row_len(const spmv_matrix_t *A, int32_t r) { return A->row_ptr[r + 1] - A->row_ptr[r]; }

/* Add an array that the caller fills afterwards; *out receives its data (NULL on failure). */
static spmv_status_t add_array(spmvport_format_data *fd, const char *name, size_t count, size_t size, int is_values,
                               void **out)
{
    void *data = spmvport_calloc_array(count, size);
    *out = data;
    spmv_status_t st = spmvport_format_add_array(fd, name, data, count * size, is_values);
    if (st != SPMV_STATUS_SUCCESS) *out = NULL;
    return st;
}

/* Shrink array slot a to `bytes` (its content is a prefix of the old one). */
static void shrink_array(spmvport_format_data *fd, int a, size_t bytes)
{
    void *p = realloc(fd->arrays[a].data, bytes > 0 ? bytes : 1);
    if (p != NULL) fd->arrays[a].data = p;
    fd->arrays[a].bytes = bytes;
}

/* ==================================================================================================== */
/* Pass 1: checks                                                                                       */
/* ==================================================================================================== */

static spmv_status_t check_input(const spmvport_format_data *fd, const spmv_matrix_t *A,
                                 const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
    if (A == NULL || opt == NULL) {
        spmvport_msg(msg, msglen, "amf_csr: %s is NULL", A == NULL ? "the matrix" : "the options");
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    int w = fd->warp_size;
    if (w < 2 || w > 64 || (w & (w - 1)) != 0) {
        spmvport_msg(msg, msglen, "amf_csr: warp size %d is not a power of two in [2, 64]", w);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_fixed_fold < -1 || opt->amf_fixed_fold > AMF_MAX_FOLD) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_fixed_fold = %d; expected 0 (adaptive), -1 (adaptive "
                     "without the window cap) or 1..%d",
                     opt->amf_fixed_fold, AMF_MAX_FOLD);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    const int lanes = opt->amf_lanes;
    if (lanes != 0 && (lanes < 2 || lanes > 64 || (lanes & (lanes - 1)) != 0)) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_lanes = %d; expected 0 (from the fold lengths) or a power "
                     "of two in [2, 64]", lanes);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_waves < 0 || opt->amf_waves > AMF_MAX_WAVES) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_waves = %d; expected 0 (%d) or 1..%d", opt->amf_waves,
                     AMF_WAVES, AMF_MAX_WAVES);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_min_blocks != 0 && opt->amf_min_blocks != 1 && opt->amf_min_blocks != 3 &&
        opt->amf_min_blocks != 4) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_min_blocks = %d; expected 0 (per precision and "
                     "amf_values), 1 (no register cap), 3 or 4", opt->amf_min_blocks);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_values < 0 || opt->amf_values > 3) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_values = %d; expected 0 (per precision), 1 (with the "
                     "columns), 2 (with the gathers) or 3 (after the previous window's adds)", opt->amf_values);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_uniform < -1 || opt->amf_uniform > AMF_MAX_STEPS) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_uniform = %d; expected 0 (automatic), -1 (never) or 1..%d "
                     "(uniform sub-blocks of that many steps)", opt->amf_uniform, AMF_MAX_STEPS);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_one_step < -1 || opt->amf_one_step > 2) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_one_step = %d; expected 0 (automatic: the one-step kernel for "
                     "uniform sub-blocks of one step), -1 (the general kernel), 1 (one-step, windows) or 2 "
                     "(one-step, one entry a lane)", opt->amf_one_step);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_window_cache < -1 || opt->amf_window_cache > 1) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_window_cache = %d; expected 0 (automatic), 1 (cached "
                     "window loads) or -1 (streaming window loads)", opt->amf_window_cache);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_step_window != 0 && opt->amf_step_window != AMF_SMALL_WINDOW && opt->amf_step_window != AMF_BATCH) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_step_window = %d; expected 0 (automatic), %d or %d (entries "
                     "per window of the one-step kernel by windows)", opt->amf_step_window, AMF_SMALL_WINDOW,
                     AMF_BATCH);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_regular != 0 && opt->amf_regular != -1) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_regular = %d; expected 0 (automatic: regular folds where "
                     "the one-step plan's folds are) or -1 (never)", opt->amf_regular);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_vector < -1 || opt->amf_vector > 2) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_vector = %d; expected 0 (automatic: a CSR mapping where "
                     "folding cannot pay), 1 (always CSR-vector's), 2 (always CSR-scalar's: a thread a row) or -1 "
                     "(never)", opt->amf_vector);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->amf_resident < 0 || opt->amf_resident > AMF_MAX_RESIDENT) {
        spmvport_msg(msg, msglen, "amf_csr: options.amf_resident = %d; expected 0 (sub-blocks of T_l entries) or "
                     "1..%d (that many waves of equal sub-blocks, one per resident warp)", opt->amf_resident,
                     AMF_MAX_RESIDENT);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    return spmvport_check_csr_rows(A, "amf_csr", msg, msglen); /* columns: fill_entries */
}

/* ==================================================================================================== */
/* Pass 2: folds                                                                                        */
/* ==================================================================================================== */

typedef struct {
    int w, w_log2;           /* warp size */
    int fixed;               /* fixed fold count, 0: adaptive */
    int64_t win_cap;         /* adaptive folds span at most this many aligned windows (0: no cap) */
    int lanes_log2;          /* options.amf_lanes as log2, capped at W; 0: chosen per sub-block */
    int waves;               /* waves of resident warps the sub-blocks aim at */
    int waves_set;           /* options.amf_waves asked for T_l grouping at that many waves */
    int min_blocks;          /* blocks the kernel is capped for (0: none, 3 or 4): the kernel variant, a param */
    int values;              /* AMF_VALUES_*: when the kernel loads a window's values, a param */
    int resident;            /* options.amf_resident: waves of equal sub-blocks (0: T_l grouping) */
    int32_t parts;           /* one-wave sub-block target (0: grouped by T_l) */
    int64_t step_nnz;        /* entries of one full step of average folds (T_l's floor) */
    double fold_floor;       /* the least a fold weighs when grouped by T_l: AMF_BATCH, or the mean fold if less */
    int64_t t_s, t_l;        /* thresholds */
    int64_t short_rows, short_nnz;
    int32_t units, folds, long_rows, sub_blocks, pieces, multi;
    int32_t uni_k;           /* uniform sub-blocks: units per sub-block (0: sub-blocks as grouped) */
    int uni_lg;              /* uniform sub-blocks: log2 of their lanes per fold */
    int one_step;            /* uniform sub-blocks of one step on the one-step kernel (options.amf_one_step): 1 by
                              * windows, 2 by entries; 0: the general kernel */
    int short_waves;         /* choose_uniform's one-step layout: many waves of the shortest folds (T_l at its
                              * floor), which run by entries (amf_one_step 0) */
    int window_cache;        /* 1: cached window loads (options.amf_window_cache, AMF_CACHE_REREAD_PCT) */
    int wave_layout;         /* choose_uniform took many waves of one-step warps by windows (wave_lanes_log2) */
    int step_window;         /* entries per window of the one-step kernel by windows (AMF_P_STEP_WINDOW) */
    int wave_window;         /* the window the one-step kernel would take on the many-wave layout (its lanes) */
    double x_sectors;        /* spmvport_x_sector_use: distinct x sectors per short-row entry, row groups */
    int scattered;           /* x_sectors >= SPMVPORT_X_SCATTERED: the reads of x are scattered (random columns) */
    double slot_use, window_use; /* slot_stats */
    int fold_max;            /* most rows in one fold */
    int lanes0_log2;         /* lanes per fold from the average fold length */
    int32_t reg_rows, reg_entries; /* regular folds (AMF_P_REGULAR_ROWS, _ENTRIES): 0, or every fold as the first */
    int vector_lanes;        /* the CSR-vector layout (AMF_P_VECTOR_LANES): csr_vector's lanes a row; 0: folds */
} amf_plan;

/* Fold rows into units (fold_row has room for m + 1). An adaptive fold also stops before it would span more than
 * win_cap aligned windows: win_cap is the power of two >= the windows of T_s entries, the lanes that load such a
 * fold in one round; one window more (a fold of T_s entries at an unlucky offset: 7-point stencil, 28 entries,
 * 5 windows for 3 offsets in 8) costs its whole step one more round at any power-of-two lane count. */
static void fold_rows(amf_plan *p, const spmv_matrix_t *A, int32_t *fold_row, int32_t *fold_ptr)
{
    const int cap = p->fixed > 0 ? p->fixed : AMF_MAX_FOLD;
    int32_t u = 0, r = 0;
    p->fold_max = 0;
    while (r < A->m) {
        fold_row[u] = r;
        fold_ptr[u] = A->row_ptr[r];
        int64_t nz = row_len(A, r);
        int32_t start = r++;
        if (nz >= AMF_LONG_MIN) {
            u++;
            p->long_rows++;
            continue;
        }
        while (r < A->m && r - start < cap && row_len(A, r) < AMF_LONG_MIN &&
               (p->fixed > 0 || (nz + row_len(A, r) <= p->t_s &&
                                 (p->win_cap == 0 || (A->row_ptr[r + 1] + (int64_t)AMF_BATCH - 1) / AMF_BATCH -
                                                             fold_ptr[u] / AMF_BATCH <= p->win_cap))))
            nz += row_len(A, r++);
        if (r - start > p->fold_max) p->fold_max = r - start;
        u++;
        p->folds++;
    }
    fold_row[u] = A->m;
    fold_ptr[u] = A->nnz;
    p->units = u;
}

/* ==================================================================================================== */
/* Device figures                                                                                       */
/* ==================================================================================================== */

static int device_mps(const spmv_device_info_t *dev)
{
    return dev != NULL && dev->backend != SPMV_BACKEND_CPU && dev->multiprocessors > 0 ? dev->multiprocessors
                                                                                     : AMF_DEFAULT_MULTIPROCESSORS;
}

static int64_t device_warps(const spmv_device_info_t *dev, int w)
{
    return (int64_t)device_mps(dev) * (AMF_THREADS_PER_MP / w);
}

/* ==================================================================================================== */
/* Pass 2 instead: the CSR-vector layout                                                                */
/* ==================================================================================================== */

#define AMF_VECTOR_MAX_SPREAD 1.0 /* automatic CSR layouts: row lengths spread at most this much (bayer10, most
                                   * rows 2-3 entries and one in 13 of 27, spread 1.05: folds 1.23-1.25x) */
#define AMF_VECTOR_WAVES 2        /* CSR-vector's layout: csr_vector's warps fit in this many waves of resident warps */
#define AMF_VECTOR_F64_MAX_NNZ 8000000 /* or, in f64 with x read locally, at most this many entries */
#define AMF_VECTOR_LONG_AVG 110   /* or rows of more than this many entries on average read locally (FEM blocks of */
#define AMF_VECTOR_LONG_WAVES 4.8 /* 5+ unknowns) whose csr_vector warps fit in this many waves */
#define AMF_SCATTERED_SCALAR_L2 0.8 /* f32 short rows read scattered: CSR-scalar's mapping below this many L2s */

/* options.amf_vector: csr_vector's lanes a row (amf_lanes where set) for the CSR-vector layout, 1 for CSR-scalar's
 * mapping (a thread a row: csr_scalar's kernel), 0 for folds.
 * Automatic (0) only on a GPU and with every other amf_ option at 0 (they tune folds), on regular rows that spread
 * little with no long row: where folding did not pay.
 * - Within two waves (the launch floor and just above it): a warp lasts as long as its serial path, and a warp of
 *   4-row folds carries four times the rows of csr_vector's (a quarter of its grid; H200, session 45). The folds
 *   ran 0.73-0.99x csr_vector on all 34 such matrices of run H4 (H100, session 63: 33 shared and
 *   uniform:200000:2), and 0.76-0.95x on FEM blocks of 1.0-2.5M entries within two waves (H100, session 66, run
 *   K1: fem3d:4:16 f64 / f32 0.76 / 0.86, fem3d:8:12 0.82 / 0.83). Past two waves f32 is mixed (folds 0.90-0.96x
 *   csr_vector on fem3d:3:18, uniform:150000:4, stencil3d:7:60 at 2.1-3.2 waves, 1.02-1.25x on fem3d:3:20,
 *   stencil2d:5:500, :700, stencil3d:7:80 at 2.8-7 waves) and keeps folds, as do the skewed rows at any size
 *   (ca-GrQc 1.29, de2010 1.11-1.13).
 * - Rows of more than 110 entries read locally (FEM blocks of 5-8 unknowns, 120-190 a row) up to 4.8 waves: there
 *   the folds ran 0.81-0.99x csr_vector in f32 (H100, session 70, runs O1-O3: fem3d:8:14 0.81, :7:15 0.87, :6:16
 *   0.89, :5:19 0.92; 1.00-1.02x from 4.8 waves, fem3d:6:19, :7:18, :8:18), where rows of 50-76 (blocks of 2-3,
 *   the 27-point stencils) gained 1.03-1.29x by folding at any size and blocks of 4 (100 a row) were within 3%.
 *   f64 reaches these rows through the 8M rule below. Out of sample, banded rows of 113-260 are a tie: 0.975x the
 *   folds on 10 plans (session 71, runs Q1-Q2, 0.83-1.12x), 0.995x on 10 others (session 72, run R1, 0.94-1.09x);
 *   kept for FEM blocks, the common case of such rows.
 * - f64 with x read locally (stencils, FEM, banded: p->scattered is 0), up to 8M
 *   entries: the folds ran 0.72-1.03x csr_vector (runs K1, K2: stencil3d:7:80 0.74, :7:100 0.81, stencil2d:5:1000
 *   0.82, banded:1500000:1 0.84, fem3d:3:28 0.88; fem3d:3:24 1.03, :4:24 1.01, :8:17 1.00 at 7.5M). Why the f64
 *   folds lose there is not known. Beyond 8M mixed (stencil2d:5:1600 1.11, stencil3d:7:130 1.04, fem3d:3:36
 *   0.99, stencil3d:27:80 0.96); on scattered f64 rows (uniform, lp) 0.92-1.03x, about a tie, and AUTO's
 *   scattered_short_rows takes amf_csr for its folds there.
 * - Short rows (SPMVPORT_SHORT_ROWS_AVG, internal.h) read locally take the mapping spmvport_short_rows_mapping
 *   (matrix.c) gives by where their data sits against the L2: CSR-scalar's under 0.8 L2s and on rows of more than
 *   8, CSR-vector's on f64 and tridiagonal rows near the L2, the folds on f32 rows of 4-8 near it (sessions 67-68,
 *   H100 runs L1 and M1). Scattered rows keep the rule above, f32 below 0.8 L2s excepted (uniform:500000:4 f32:
 *   CSR-scalar's 1.10x the folds; AUTO takes csr_scalar there too). */
static int choose_vector(const spmv_matrix_t *A, const spmv_device_info_t *dev, const spmv_plan_options_t *opt,
                         const amf_plan *p)
{
    const int lanes = p->lanes_log2 > 0 ? 1 << p->lanes_log2 : spmvport_csr_vector_lanes(A->m, A->nnz, p->w);
    if (opt->amf_vector != 0) return opt->amf_vector == 2 ? 1 : opt->amf_vector > 0 ? lanes : 0;
    const int tuned = opt->amf_fixed_fold != 0 || opt->amf_lanes != 0 || opt->amf_waves != 0 ||
                      opt->amf_min_blocks != 0 || opt->amf_values != 0 || opt->amf_resident != 0 ||
                      opt->amf_uniform != 0 || opt->amf_one_step != 0 || opt->amf_window_cache != 0 ||
                      opt->amf_step_window != 0 || opt->amf_regular != 0;
    if (tuned || dev == NULL || dev->backend == SPMV_BACKEND_CPU || dev->multiprocessors <= 0 || A->m == 0 ||
        p->short_rows < A->m || !spmvport_rows_regular(A) || spmvport_rows_spread(A) > AMF_VECTOR_MAX_SPREAD)
        return 0;
    const int f64 = A->precision == SPMV_F64;
    const int64_t warps = ((int64_t)A->m * lanes + p->w - 1) / p->w;
    const double waves = (double)warps / (double)device_warps(dev, p->w);
    const int vector_pays = waves <= AMF_VECTOR_WAVES ||
                            (f64 && A->nnz <= AMF_VECTOR_F64_MAX_NNZ && !p->scattered) ||
                            (!p->scattered && (double)A->nnz > AMF_VECTOR_LONG_AVG * (double)A->m &&
                             waves <= AMF_VECTOR_LONG_WAVES);
    const int other = vector_pays ? lanes : 0; /* rows other than the short ones below: CSR-vector's or folds */
    const spmvport_short_mapping mapping = spmvport_short_rows_mapping(A, dev);
    if (mapping == SPMVPORT_SHORT_NONE) return other;
    if (p->scattered) return !f64 && spmvport_l2_share(A, dev) < AMF_SCATTERED_SCALAR_L2 ? 1 : other;
    return mapping == SPMVPORT_SHORT_SCALAR ? 1 : mapping == SPMVPORT_SHORT_VECTOR ? lanes : other;
}

/* ==================================================================================================== */
/* Pass 3: sub-blocks                                                                                   */
/* ==================================================================================================== */

/* Blocks of the kernel resident per multiprocessor: the register cap (3 or 4), else the uncapped kernels' count on
 * sm_90 (f64: 2; f32: 4 with the values after the adds, 64 registers, else 3). */
static int resident_blocks(const amf_plan *p, int f32)
{
    return p->min_blocks > 0 ? p->min_blocks : !f32 ? 2 : p->values == AMF_VALUES_AFTER ? 4 : 3;
}

/* options.amf_resident = k: k waves of sub-blocks; a wave is what fits on the device at once: multiprocessors x
 * resident blocks x warps per block. Less one per long row (a long row splits a sub-block in two). Resident
 * blocks: the register cap (3 or 4), else the uncapped kernels' count on sm_90 (f64: 2; f32: 4 with the values
 * after the adds, 64 registers, else 3). The long-row pieces are the
 * launch's first blocks and short (16 entries a thread): the sub-block warps they keep waiting start a piece's
 * time late. 0 when long rows would leave fewer than half: then sub-blocks are grouped by T_l. Small matrices get
 * fewer, sub-blocks of at least one full step of folds. */
static int32_t one_wave_parts(const amf_plan *p, const spmv_device_info_t *dev, int f32)
{
    const int64_t warps = (int64_t)p->resident * device_mps(dev) * resident_blocks(p, f32) * (AMF_BLOCK / p->w);
    int64_t parts = warps - p->long_rows;
    if (parts < warps / 2) return 0;
    if (parts > AMF_MAX_PARTS) parts = AMF_MAX_PARTS;
    /* a matrix too small to fill the waves: sub-blocks of at least one full step, as T_l's floor */
    if (p->short_nnz / parts < p->step_nnz) parts = p->short_nnz / p->step_nnz > 1 ? p->short_nnz / p->step_nnz : 1;
    return (int32_t)parts;
}

/* T_l and the typical lanes per fold, from the folds' average length. */
static void choose_t_l(amf_plan *p, const spmv_device_info_t *dev)
{
    const double avg_fold = p->folds > 0 ? (double)p->short_nnz / p->folds : 0.0;
    p->fold_floor = avg_fold < AMF_BATCH ? avg_fold : AMF_BATCH;
    p->lanes0_log2 = lanes_log2_for(avg_fold, p->w_log2);
    int64_t side = (int64_t)(p->w >> p->lanes0_log2);      /* G: folds side by side in a warp */
    int64_t lo = (int64_t)ceil((double)side * avg_fold);   /* one full step */
    if (lo < 1) lo = 1;
    /* at most 16 of the widest steps (2 lanes per fold, W / 2 folds: what the lane model picks for short folds),
     * so that fewer waves (options.amf_waves) lengthen sub-blocks of short folds too */
    int64_t hi = AMF_MAX_STEPS * (int64_t)ceil((double)(p->w / 2) * avg_fold);
    if (hi < lo) hi = lo;
    p->step_nnz = lo;
    const int64_t slots = p->waves * device_warps(dev, p->w);
    int64_t target = (p->short_nnz + slots - 1) / slots;
    p->t_l = target < lo ? lo : target > hi ? hi : target;
}

/* A fold's weight in T_l grouping (below). */
static double fold_weight(const amf_plan *p, const int32_t *fold_ptr, int32_t u)
{
    const double len = (double)(fold_ptr[u + 1] - fold_ptr[u]);
    return len > p->fold_floor ? len : p->fold_floor;
}

/* Group folds into sub-blocks of at most T_l; sub_unit has room for 2 * folds. A fold weighs its entries, but at
 * least one window (AMF_BATCH entries; the mean fold when that is less): its lanes load at least one window each
 * round whatever its length, and a step costs at least one round. By entries alone, runs of empty rows made
 * sub-blocks of AMF_MAX_STEPS steps that ran long after the rest (NotreDame_www: 58% empty rows, runs of up to
 * 5308; its slowest sub-block modelled 23 round trips, now 3.5). */
static void group_folds(amf_plan *p, const int32_t *fold_row, const int32_t *fold_ptr, int32_t *sub_unit)
{
    const int32_t max_units = (int32_t)AMF_MAX_STEPS * (p->w / 2);
    int32_t s = 0, u = 0;
    while (u < p->units) {
        if (amf_unit_is_long(fold_row, fold_ptr, u)) {
            u++;
            continue;
        }
        int32_t b = u;
        double weight = fold_weight(p, fold_ptr, u);
        u++;
        while (u < p->units && u - b < max_units && !amf_unit_is_long(fold_row, fold_ptr, u) &&
               weight + fold_weight(p, fold_ptr, u) <= (double)p->t_l) {
            weight += fold_weight(p, fold_ptr, u);
            u++;
        }
        sub_unit[2 * s] = b;
        sub_unit[2 * s + 1] = u;
        s++;
    }
    p->sub_blocks = s;
}

/* options.amf_resident: cut the short units into at most p->parts sub-blocks (plus one per long row) of about
 * equal weight, in windows (what a lane loads per round) plus one per fold (its reduction and stores; keeps runs of
 * empty rows from piling onto one warp). A sub-block closes once its prefix reaches the next of the parts - 1
 * evenly spaced cut points, or at a long row; sub_unit has room for 2 * folds. */
static void group_one_wave(amf_plan *p, const int32_t *fold_row, const int32_t *fold_ptr, int32_t *sub_unit)
{
    int64_t total = 0, acc = 0, cut = 1, widest = 0;
    for (int32_t u = 0; u < p->units; u++)
        if (!amf_unit_is_long(fold_row, fold_ptr, u)) total += fold_windows(fold_ptr, u) + 1;
    int32_t s = 0, open = -1;
    for (int32_t u = 0; u < p->units; u++) {
        if (amf_unit_is_long(fold_row, fold_ptr, u)) {
            if (open >= 0) {
                sub_unit[2 * s] = open;
                sub_unit[2 * s + 1] = u;
                if (fold_ptr[u] - fold_ptr[open] > widest) widest = fold_ptr[u] - fold_ptr[open];
                s++;
                open = -1;
            }
            continue;
        }
        if (open < 0) open = u;
        acc += fold_windows(fold_ptr, u) + 1; /* acc < 2^33, parts <= 2^24: no overflow */
        if (acc * p->parts >= cut * total || u + 1 == p->units) {
            sub_unit[2 * s] = open;
            sub_unit[2 * s + 1] = u + 1;
            if (fold_ptr[u + 1] - fold_ptr[open] > widest) widest = fold_ptr[u + 1] - fold_ptr[open];
            s++;
            open = -1;
            while (cut * total <= acc * p->parts) cut++;
        }
    }
    p->sub_blocks = s;
    p->t_l = widest; /* T_l stays a bound on a sub-block's entries */
}

/* Rounds of one step, folds [base, end) at `lanes` lanes each: its longest fold's windows over the lanes, at
 * least one. */
static int64_t step_rounds(const int32_t *fold_ptr, int32_t base, int32_t end, int64_t lanes)
{
    int64_t rounds = 1;
    for (int32_t u = base; u < end; u++) {
        const int64_t need = (fold_windows(fold_ptr, u) + lanes - 1) / lanes;
        if (need > rounds) rounds = need;
    }
    return rounds;
}

/* Modelled time of sub-block [b, e) at 2^lg lanes per fold, in quarter memory round trips: each step (W / 2^lg
 * folds side by side) costs as many round trips as its longest fold needs rounds of one aligned window of
 * AMF_BATCH entries per lane (at least one), plus a quarter for its reduction and stores. */
static int64_t sub_block_cost(const int32_t *fold_ptr, int32_t b, int32_t e, int lg, int w)
{
    const int32_t side = w >> lg;
    int64_t cost = 0;
    for (int32_t base = b; base < e; base += side)
        cost += 4 * step_rounds(fold_ptr, base, e - base < side ? e : base + side, (int64_t)1 << lg) + 1;
    return cost;
}

/* Lanes per fold of each sub-block: the count, a power of two in [2, W], with the least modelled time for the
 * sub-block's own fold lengths (ties: fewer lanes). A few long folds among short ones then get enough lanes
 * only where the model says they pay, and a sub-block of few folds spreads them over the whole warp. */
static void choose_lanes(const amf_plan *p, const int32_t *fold_ptr, const int32_t *sub_unit, uint8_t *lanes)
{
#pragma omp parallel for schedule(dynamic, 1024) if (p->sub_blocks > AMF_OMP_MIN)
    for (int32_t s = 0; s < p->sub_blocks; s++) {
        int32_t b = sub_unit[2 * s], e = sub_unit[2 * s + 1];
        if (p->lanes_log2 > 0) {
            lanes[s] = (uint8_t)p->lanes_log2;
            continue;
        }
        int best = 1;
        int64_t best_cost = sub_block_cost(fold_ptr, b, e, 1, p->w);
        for (int lg = 2; lg <= p->w_log2; lg++) {
            int64_t c = sub_block_cost(fold_ptr, b, e, lg, p->w);
            if (c < best_cost) {
                best = lg;
                best_cost = c;
            }
        }
        lanes[s] = (uint8_t)best;
    }
}

/* Uniform sub-blocks of k units at 2^lg lanes: sub-block s is units [s k, min(s k + k, units)), long rows included
 * (only on the one-step kernel by windows, which leaves them to their pieces' blocks). Rewrites sub_unit and lanes
 * (room for 2 x units and units). */
static void set_uniform(amf_plan *p, const int32_t *fold_ptr, int32_t *sub_unit, uint8_t *lanes, int lg, int64_t k)
{
    int64_t widest = 0;
    p->sub_blocks = (int32_t)((p->units + k - 1) / k); /* k >= 1 */
    for (int32_t s = 0; s < p->sub_blocks; s++) {
        const int64_t b = s * k, e = b + k < p->units ? b + k : p->units;
        sub_unit[2 * s] = (int32_t)b;
        sub_unit[2 * s + 1] = (int32_t)e;
        lanes[s] = (uint8_t)lg;
        if (fold_ptr[e] - fold_ptr[b] > widest) widest = fold_ptr[e] - fold_ptr[b];
    }
    p->uni_k = (int32_t)k;
    p->uni_lg = lg;
    p->t_l = widest; /* T_l stays a bound on a sub-block's entries */
}

/* Many-wave one-step layouts (below): the modelled total of the warps at 2^lg lanes per fold, in quarter round
 * trips. A warp of r rounds costs its first round as a step of the general kernel (4 + 1 for the reduction and
 * stores) and 8 for each further one (the one-step kernel loads no window ahead: columns, then x, two round trips),
 * plus the chain before its first add (the folds' bounds, the first windows, their x: AMF_CHAIN), which every
 * sub-block of the grouped layout pays too. Past one wave a warp that starts late takes the slot of one that
 * finished, so totals, not the slowest warp, compare the layouts. */
static int64_t one_step_total(const int32_t *fold_ptr, int32_t folds, int lg, int w)
{
    const int32_t side = w >> lg;
    int64_t total = 0;
    for (int32_t base = 0; base < folds; base += side)
        total += 8 * step_rounds(fold_ptr, base, folds - base < side ? folds : base + side, (int64_t)1 << lg) - 3 +
                 AMF_CHAIN;
    return total;
}

/* The grouped layout's modelled total: every sub-block's steps, its bounds' round trip (+4) and the chain before
 * its first add, summed over warps as one_step_total sums the one-step warps; *slowest: the slowest sub-block's
 * steps (sub_block_cost). */
static int64_t grouped_total(const amf_plan *p, const int32_t *fold_ptr, const int32_t *sub_unit, const uint8_t *lanes,
                             int64_t *slowest)
{
    int64_t total = 0;
    *slowest = 0;
    for (int32_t s = 0; s < p->sub_blocks; s++) {
        const int64_t c = sub_block_cost(fold_ptr, sub_unit[2 * s], sub_unit[2 * s + 1], lanes[s], p->w);
        if (c > *slowest) *slowest = c;
        total += c + 4 + AMF_CHAIN;
    }
    return total;
}

/* The rounds of all one-step warps at 2^lg lanes a fold: a warp's rounds are its longest fold's windows of `win`
 * entries over the lanes (at least one; long units are empty folds there). */
static int64_t wave_rounds(const amf_plan *p, const int32_t *fold_row, const int32_t *fold_ptr, int lg, int64_t win)
{
    const int32_t side = p->w >> lg;
    int64_t rounds = 0;
    for (int32_t b = 0; b < p->units; b += side) {
        int64_t most = 1;
        for (int32_t u = b; u < p->units && u < b + side; u++) {
            const int64_t need =
                amf_unit_is_long(fold_row, fold_ptr, u) ? 0 : (fold_windows_of(fold_ptr, u, win) + (1 << lg) - 1) >> lg;
            if (need > most) most = need;
        }
        rounds += most;
    }
    return rounds;
}

/* The one-step layout's critical path in window slots: its warps' rounds (wave_rounds at the layout's lanes)
 * times the window's entries. Each slot costs a lane its in-fold test and its fused adds whether it holds an entry
 * or not, so where a lane would take more than one 8-entry window, 4-entry windows may take fewer (step_window). */
static int64_t lane_slots(const amf_plan *p, const int32_t *fold_row, const int32_t *fold_ptr, int64_t win)
{
    return wave_rounds(p, fold_row, fold_ptr, p->uni_lg, win) * win;
}

/* The short folds' mean count of aligned windows of `win` entries (long units left out). */
static double mean_fold_windows(const amf_plan *p, const int32_t *fold_row, const int32_t *fold_ptr, int64_t win)
{
    int64_t windows = 0;
    for (int32_t u = 0; u < p->units; u++)
        if (!amf_unit_is_long(fold_row, fold_ptr, u)) windows += fold_windows_of(fold_ptr, u, win);
    return p->folds > 0 ? (double)windows / p->folds : 0.0;
}

/* Many waves of one-step warps by windows (choose_uniform, automatic mode, without amf_waves): log2 of the lanes per
 * fold, or 0 (grouped sub-blocks) where the folds span more than AMF_WAVE_WINDOWS aligned windows on average or
 * the one-step warps at those lanes would not outnumber the warps the device holds at once (multiprocessors x
 * 2048 / W, whatever the kernel variant's registers: the variant options leave the layout alone). Long rows may
 * be among the units (the one-step kernel by windows leaves them to their pieces' blocks). The lanes (unless fixed
 * by amf_lanes): the fewest, a power of two in [4, W], that leave at most AMF_WAVE_LANE_WINDOWS of an average
 * fold's windows a lane, then more while that cuts the warps' rounds in all (wave_rounds: skewed folds). Measured
 * against the grouped layout (H100, session 19, ms f64 / f32; runs ID-IJ, docs/formats/amf_csr.md has the table):
 * stencil3d:7:160 (4.0 windows a fold; 4 lanes) 0.1830 / 0.1139 -> 0.1581 / 0.1027 (2 lanes tie, 8 lanes 0.1980 /
 * 0.1335); fem3d:3:48 (40; 16 lanes) 0.1269 / 0.0852 -> 0.1093 / 0.0747 (8 lanes 0.1178 / 0.0828, 32 lanes 0.1159
 * / 0.0786, 4 lanes 0.1260 / 0.0891: the fewest rounds in all, so rounds alone do not choose); kron:20:16 (7.7,
 * skewed, long rows; 4 lanes cut to 8 by the rounds) 0.2932 / 0.2551 -> 0.2827 / 0.2497 (4 lanes 0.3049 / 0.2608,
 * 16 lanes 0.2912 / 0.2508); circuit:5000000 (3.4, long rows; 4 lanes) 0.2524 / 0.1520 -> 0.2398 / 0.1361 (8 lanes
 * 0.3167 / 0.1814); uniform:2000000:16 (8.0; 4 lanes) 0.3249 / 0.3000 -> 0.3074 / 0.2773; uniform:1000000:3 (2.0)
 * 0.0365 / 0.0311 -> 0.0375 / 0.0301, the one f64 loss. Up to 128 windows a fold (AMF_WAVE_WINDOWS; 48 until session
 * 31, when FEM blocks of 4-6 unknowns, folds of 54-81 windows, went grouped or one-wave at 2-4 lanes: H200, run UH,
 * fem3d:4:36 f32 0.85 -> 1.29x cuSPARSE, fem3d:6:26 0.73 -> 1.25x, fem3d:5:30 0.77 -> 1.19x); beyond: grouped.
 * Where x is read scattered (spmvport_x_sector_use >= SPMVPORT_X_SCATTERED: random columns, every gather its own
 * sector), one window of the kernel's own size (wave_window) a lane instead. Likely (not profiled): such a
 * matrix waits on the warps' chains of dependent gathers, which one round a fold shortens, while along diagonals
 * (stencils, FEM, circuits) the gathers hit the caches and the kernel is bound by its instructions, which more
 * lanes a fold multiply (their reductions). H200, session 21 (runs KA, KB), f64 windows of 4, ms at the old
 * -> the new lanes: lp:2000000:2000000:5 (0.99 sectors an entry) 4 -> 8 lanes 0.0944 -> 0.0857, uniform:2000000:16
 * 4 -> 16 0.2602 -> 0.2481, kron:20:16 8 -> 16 0.2414 -> 0.2362; f32 (windows of 8) uniform:2000000:16 4 -> 8
 * 0.2363 -> 0.2336. stencil2d:5:1400 (0.16) at 8 lanes 0.0625 against 0.0566 at 4, stencil3d:7:160 (0.19) 0.1308
 * against 0.1164, circuit:5000000 (0.34) 0.1993 against 0.1716: scattered x alone chooses. */
static int wave_lanes_log2(const amf_plan *p, const spmv_device_info_t *dev, const int32_t *fold_row,
                           const int32_t *fold_ptr, double *mean_windows)
{
    *mean_windows = 0.0; /* an average fold's windows of AMF_BATCH entries (0: not counted) */
    if (p->waves_set || p->w_log2 < 2) return 0; /* amf_waves asks for T_l grouping */
    const double avg = *mean_windows = mean_fold_windows(p, fold_row, fold_ptr, AMF_BATCH);
    if (avg > AMF_WAVE_WINDOWS) return 0;
    int lg = p->lanes_log2;
    if (lg == 0) { /* the fewest lanes, at least 4, for AMF_WAVE_LANE_WINDOWS windows a lane (scattered x: one
                    * window of the kernel's own size a lane); then more lanes while they cut the warps' rounds in
                    * all (skewed folds) */
        const int64_t win = p->scattered ? p->wave_window : AMF_BATCH;
        const double per_lane = p->scattered ? 1.0 : AMF_WAVE_LANE_WINDOWS;
        const double wavg = win == AMF_BATCH ? avg : mean_fold_windows(p, fold_row, fold_ptr, win);
        lg = 2;
        while (lg < p->w_log2 && per_lane * (1 << lg) < wavg) lg++;
        int64_t rounds = wave_rounds(p, fold_row, fold_ptr, lg, win);
        while (lg < p->w_log2) {
            const int64_t more = wave_rounds(p, fold_row, fold_ptr, lg + 1, win);
            if (more >= rounds) break;
            lg++;
            rounds = more;
        }
    }
    /* more warps than the device holds at once, whatever the kernel's registers (so that the kernel variant
     * options leave the layout alone) */
    const int64_t side = p->w >> lg, most = (int64_t)device_mps(dev) * (AMF_THREADS_PER_MP / p->w);
    return (p->units + side - 1) / side > most ? lg : 0;
}

/* options.amf_uniform: sub-block s = units [s K, min(s K + K, units)) at one lane count, so the kernel takes its
 * bounds from s instead of loading them first (sub_unit, sub_lanes: one dependent memory round trip before the
 * folds' bounds). Modes other than many waves by windows only without long rows. mode k > 0: K = k steps of the lane count that
 * the grouped layout gave most folds (so k near its steps per sub-block compares the two at the same size; a
 * least-total rule would pick the fewest lanes and a few huge sub-blocks). mode 0 (auto): one step per
 * sub-block when those warps fit in one wave of resident warps (launch-floor matrices, where the kernel lasts as
 * long as its slowest warp): the lane count whose slowest step needs the fewest rounds (ties: fewer lanes), kept
 * if that warp (4 quarters a round + 1) is no slower than the grouped layout's slowest sub-block plus its bounds'
 * round trip (+4), times the waves of resident warps the grouped layout needs, and, when it is not faster (its
 * slowest step no shorter than the grouped layout's slowest sub-block, times those waves), if its modelled total
 * (one_step_total) is no more than the grouped layout's (grouped_total); when no lane count fits one wave but T_l
 * is at its floor (the grouped sub-blocks are one step too), the lane count with the least modelled total, kept if
 * no more than the grouped layout's. Before all these, and after them where they found nothing: many waves of
 * one-step warps by windows where wave_lanes_log2 applies (the only layout here with long rows). Rewrites sub_unit
 * and lanes (room for 2 x units and units). */
static void choose_uniform(amf_plan *p, const spmv_device_info_t *dev, int f32, int mode, int one_step,
                           const int32_t *fold_row, const int32_t *fold_ptr, int32_t *sub_unit, uint8_t *lanes)
{
    if (mode < 0 || p->folds == 0 || p->parts > 0) return;
    const int64_t resident = (int64_t)device_mps(dev) * resident_blocks(p, f32) * (AMF_BLOCK / p->w);
    /* many waves by windows (with long rows only on that kernel, which leaves long units to their pieces) */
    double fold_windows = 0.0;
    const int wave = mode == 0 && (p->long_rows == 0 || one_step == 0 || one_step == 1)
                         ? wave_lanes_log2(p, dev, fold_row, fold_ptr, &fold_windows) : 0;
    /* taken first where T_l is above its floor: the one-wave rule below takes only lane counts whose warps fit in
     * one wave, which on mid-size matrices of long folds leaves a lane many windows (fem3d:3:40 on 132
     * multiprocessors: one wave at 2 lanes, 20 windows a lane, 0.0833 / 0.0668 ms f64 / f32; many waves at 16
     * lanes 0.0667 / 0.0454; grouped 0.0736 / 0.0502; H100, session 19, runs II, IJ); with long rows the only one;
     * and, with T_l at its floor, where x is read scattered and the many-wave kernel takes windows of 4 entries
     * (f64): one window a lane beat the one-wave layout's few lanes of several windows on mid-size matrices within
     * L2 (H200, session 22, run LB, us, one-wave -> many waves: lp:300000:300000:5 at 2 -> 8 lanes 16.6 -> 15.4,
     * lp:500000:500000:5 28.6 -> 24.1, uniform:400000:3 2 -> 4 lanes 17.0 -> 13.9, uniform:300000:4 a tie); and,
     * with T_l at its floor, where folds span more than AMF_ONE_WAVE_WINDOWS windows on average (FEM blocks of 4-6
     * unknowns: 4 rows of 108-162 entries), where the one-wave layouts' few lanes walked 14-20 windows each (H200,
     * session 31, run UH: fem3d:4:24 4 lanes, 1728 warps -> 32 lanes, 13824 warps) */
    const int scattered_small = p->scattered && p->wave_window == AMF_SMALL_WINDOW;
    const int long_folds = wave > 0 && fold_windows > AMF_ONE_WAVE_WINDOWS;
    if (p->long_rows > 0 || (wave > 0 && (p->t_l > p->step_nnz || scattered_small || long_folds))) {
        if (wave > 0) set_uniform(p, fold_ptr, sub_unit, lanes, wave, p->w >> wave);
        p->wave_layout = wave > 0;
        return;
    }
    const int lo = p->lanes_log2 > 0 ? p->lanes_log2 : 1, hi = p->lanes_log2 > 0 ? p->lanes_log2 : p->w_log2;
    int best = 0;
    int64_t best_cost = 0, k = 0;
    if (mode > 0) {
        int64_t folds_at[7] = {0};
        for (int32_t s = 0; s < p->sub_blocks; s++) folds_at[lanes[s]] += sub_unit[2 * s + 1] - sub_unit[2 * s];
        best = lo;
        for (int lg = lo + 1; lg <= hi; lg++)
            if (folds_at[lg] > folds_at[best]) best = lg;
        k = (int64_t)mode * (p->w >> best);
    }
    for (int lg = lo; lg <= hi && mode == 0; lg++) {
        const int64_t side = p->w >> lg;
        if ((p->folds + side - 1) / side > resident) continue;
        const int64_t cost = 4 * step_rounds(fold_ptr, 0, p->folds, (int64_t)1 << lg) + 1; /* the slowest step */
        if (best == 0 || cost < best_cost) {
            best = lg;
            best_cost = cost;
            k = side;
        }
    }
    int64_t slowest = 0; /* the grouped layout's slowest sub-block and its total (automatic mode only) */
    const int64_t grouped = mode == 0 ? grouped_total(p, fold_ptr, sub_unit, lanes, &slowest) : 0;
    if (mode == 0 && best > 0) { /* the grouped layout's slowest sub-block, its bounds' round trip, its waves */
        const int64_t waves = (p->sub_blocks + resident - 1) / resident;
        if (best_cost > (slowest + 4) * waves) return;
        /* a tie on the slowest step: the one-step layout must not add work either. wiki-Vote (H200): one 38-entry
         * fold a warp at 32 lanes, 2.6x the grouped total, ran 0.86x the grouped layout (run Z) */
        if (best_cost >= slowest * waves && one_step_total(fold_ptr, p->folds, best, p->w) > grouped) return;
    }
    /* no one-step layout fits one wave, but T_l sub-blocks are one step too (T_l at its floor): many waves of
     * one-step warps when their total is no more than the grouped layout's (NotreDame_www) */
    if (mode == 0 && best == 0 && p->t_l <= p->step_nnz) {
        for (int lg = lo; lg <= hi; lg++) {
            const int64_t total = one_step_total(fold_ptr, p->folds, lg, p->w);
            if (total <= grouped && (best == 0 || total < best_cost)) {
                best = lg;
                best_cost = total;
                k = p->w >> lg;
            }
        }
    }
    p->short_waves = best > 0 && mode == 0 && (p->folds + (p->w >> best) - 1) / (p->w >> best) > resident;
    if (best == 0 && wave > 0) { /* T_l at its floor, but no one-step layout by the models above */
        best = wave;
        k = p->w >> wave;
        p->wave_layout = 1;
    }
    if (best == 0) return;
    set_uniform(p, fold_ptr, sub_unit, lanes, best, k);
}

/* log2 of the lanes per fold of the one-step kernel by entries (AMF_P_ONE_STEP = 2): the fewest, a power of two in
 * [2, W], that leave a fold of average length at most AMF_ENTRY_LOAD entries a lane. NotreDame_www (7.4 entries a
 * fold; H100, session 19, f64 / f32 us): 2 lanes 12.7 / 10.2, 4 lanes 11.5 / 9.8, 8 lanes 12.9 / 11.3. */
static int entry_lanes_log2(const amf_plan *p)
{
    const double avg = p->folds > 0 ? (double)p->short_nnz / p->folds : 0.0;
    int lg = 1;
    while (lg < p->w_log2 && (double)(AMF_ENTRY_LOAD << lg) < avg) lg++;
    return lg;
}

/* ==================================================================================================== */
/* Pass 4: long rows                                                                                    */
/* ==================================================================================================== */

static spmv_status_t cut_long_rows(spmvport_format_data *fd, amf_plan *p, const int32_t *fold_row,
                                   const int32_t *fold_ptr)
{
    const int64_t piece = (int64_t)AMF_BLOCK * AMF_PIECE_PER_THREAD;
    int32_t *long_unit, *long_piece, *owner;
    spmv_status_t st = add_array(fd, "long_unit", (size_t)p->long_rows, sizeof(int32_t), 0, (void **)&long_unit);
    if (st == SPMV_STATUS_SUCCESS)
        st = add_array(fd, "long_piece", (size_t)p->long_rows + 1, sizeof(int32_t), 0, (void **)&long_piece);
    if (st != SPMV_STATUS_SUCCESS) return st;
    int64_t pieces = 0;
    int32_t i = 0;
    for (int32_t u = 0; p->long_rows > 0 && u < p->units; u++) {
        if (!amf_unit_is_long(fold_row, fold_ptr, u)) continue;
        int64_t k = (fold_ptr[u + 1] - fold_ptr[u] + piece - 1) / piece;
        long_unit[i] = u;
        long_piece[i++] = (int32_t)pieces;
        pieces += k;
        if (k > 1) p->multi++;
    }
    long_piece[i] = (int32_t)pieces; /* pieces <= nnz / 1024 + 1: no overflow */
    p->pieces = (int32_t)pieces;
    st = add_array(fd, "piece_owner", (size_t)pieces, sizeof(int32_t), 0, (void **)&owner);
    if (st != SPMV_STATUS_SUCCESS) return st;
    for (int32_t l = 0; l < p->long_rows; l++)
        for (int32_t q = long_piece[l]; q < long_piece[l + 1]; q++) owner[q] = l;
    void *part, *count;
    st = add_array(fd, "long_part", (size_t)pieces, spmvport_value_size(fd->precision), 0, &part);
    if (st != SPMV_STATUS_SUCCESS) return st;
    return add_array(fd, "long_count", (size_t)p->long_rows, sizeof(int32_t), 0, &count); /* zeros */
}

/* ==================================================================================================== */
/* Pass 5: merged entries                                                                               */
/* ==================================================================================================== */

/* Merge the rows of unit u by column (ties: lower local row first): value_map[o] = CSR position of entry o.
 * Returns the CSR position of the first column out of [0, n), or -1. */
static int64_t merge_unit(const spmv_matrix_t *A, const int32_t *fold_row, const int32_t *fold_ptr, int32_t u,
                          int packed, uint32_t *cols, uint8_t *local_row, int32_t *value_map)
{
    const int32_t *col_idx = A->col_idx, n = A->n;
    const int rows = fold_row[u + 1] - fold_row[u];
    const int32_t *rp = A->row_ptr + fold_row[u];
    int32_t head[AMF_MAX_FOLD], end[AMF_MAX_FOLD], hc[AMF_MAX_FOLD]; /* hc: head column, INT32_MAX when done */
    for (int j = 0; j < rows; j++) {
        head[j] = rp[j];
        end[j] = rp[j + 1];
        hc[j] = head[j] < end[j] ? col_idx[head[j]] : INT32_MAX;
        if (head[j] < end[j] && (hc[j] < 0 || hc[j] >= n)) return head[j];
    }
    for (int32_t o = fold_ptr[u]; o < fold_ptr[u + 1]; o++) {
        int best = 0;
        for (int j = 1; j < rows; j++)
            if (hc[j] < hc[best]) best = j;
        const int32_t k = head[best]++, c = hc[best]; /* columns are < n <= INT32_MAX: never the sentinel */
        if (head[best] < end[best]) {
            hc[best] = col_idx[head[best]];
            if (hc[best] < 0 || hc[best] >= n) return head[best];
        } else hc[best] = INT32_MAX;
        value_map[o] = k;
        if (packed) cols[o] = (uint32_t)c << 2 | (uint32_t)best;
        else {
            cols[o] = (uint32_t)c;
            local_row[o] = (uint8_t)best;
        }
    }
    return -1;
}

static spmv_status_t fill_entries(spmvport_format_data *fd, const spmv_matrix_t *A, const amf_plan *p,
                                  const int32_t *fold_row, const int32_t *fold_ptr, int packed, char *msg,
                                  size_t msglen)
{
    const size_t vs = spmvport_value_size(A->precision), nnz = (size_t)A->nnz;
    void *cols, *vals, *local;
    spmv_status_t st = add_array(fd, "cols", nnz, sizeof(uint32_t), 0, &cols);
    if (st == SPMV_STATUS_SUCCESS) st = add_array(fd, "values", nnz, vs, 1, &vals);
    if (st == SPMV_STATUS_SUCCESS)
        st = add_array(fd, "local_row", packed || p->vector_lanes > 0 ? 0 : nnz, 1, 0, &local);
    if (st != SPMV_STATUS_SUCCESS) return st;
    fd->value_slots = A->nnz;
    if (p->vector_lanes > 0) { /* the CSR-vector layout (a unit a row, in row order): the CSR arrays themselves, and
                                * no value_map (the values are in CSR order) */
        st = spmvport_check_csr_ranges(A, "amf_csr", msg, msglen);
        if (st != SPMV_STATUS_SUCCESS) return st;
        spmvport_parallel_copy(cols, A->col_idx, nnz * sizeof(int32_t)); /* checked non-negative: uint32's bits */
        spmvport_parallel_copy(vals, A->values, nnz * vs);
        return SPMV_STATUS_SUCCESS;
    }
    if ((fd->value_map = spmvport_malloc_array(nnz, sizeof(int32_t))) == NULL) return SPMV_STATUS_OUT_OF_MEMORY;
    int32_t *map = fd->value_map;
    int64_t bad = -1;
#pragma omp parallel for schedule(dynamic, 4096) reduction(max : bad) if (p->units > AMF_OMP_MIN)
    for (int32_t u = 0; u < p->units; u++) {
        int64_t b = merge_unit(A, fold_row, fold_ptr, u, packed, cols, local, map);
        if (b > bad) bad = b;
    }
    if (bad >= 0) {
        spmvport_msg(msg, msglen, "amf_csr: column index at CSR position %lld out of range [0, %d)", (long long)bad,
                     A->n);
        return SPMV_STATUS_INVALID_MATRIX;
    }
    if (A->precision == SPMV_F32) {
        const float *src = A->values;
        float *dst = vals;
#pragma omp parallel for schedule(static) if (A->nnz > AMF_OMP_MIN)
        for (int32_t o = 0; o < A->nnz; o++) dst[o] = src[map[o]];
    } else {
        const double *src = A->values;
        double *dst = vals;
#pragma omp parallel for schedule(static) if (A->nnz > AMF_OMP_MIN)
        for (int32_t o = 0; o < A->nnz; o++) dst[o] = src[map[o]];
    }
    return SPMV_STATUS_SUCCESS;
}

/* The CSR-vector layout's arrays: fill_entries copied the CSR columns and values (no value_map: the identity), so
 * fold_ptr is the row pointer; fold_row, local_row and the sub-block and long-row arrays stay
 * empty (long_piece holds its single 0). */
static spmv_status_t vector_layout(spmvport_format_data *fd, amf_plan *p)
{
    void *unused;
    shrink_array(fd, AMF_A_FOLD_ROW, 0);
    p->folds = p->units;
    p->long_rows = p->sub_blocks = p->pieces = p->multi = 0;
    p->fold_max = p->units > 0 ? 1 : 0;
    p->fixed = 0;
    p->step_window = AMF_BATCH;
    p->lanes0_log2 = log2_int(p->vector_lanes);
    spmv_status_t st = add_array(fd, "sub_unit", 0, sizeof(int32_t), 0, &unused);
    if (st == SPMV_STATUS_SUCCESS) st = add_array(fd, "sub_lanes", 0, 1, 0, &unused);
    return st == SPMV_STATUS_SUCCESS ? cut_long_rows(fd, p, NULL, NULL) : st;
}

/* ==================================================================================================== */
/* The builder                                                                                          */
/* ==================================================================================================== */

/* Slot utilisation of the short-row path, walked as the kernel walks it: per step, every lane of the warp runs
 * as many rounds as the step's longest fold needs (at least one), each round one window of AMF_BATCH slots (the
 * one-step kernel by entries: one entry, slot = 1). *slot_use = short entries / slots of all rounds;
 * *window_use = short entries / slots of the windows the folds span (the rest of those windows belongs to
 * neighbouring folds: loaded, masked). 1 when there is nothing. */
static void slot_stats(const amf_plan *p, const int32_t *fold_row, const int32_t *fold_ptr, const int32_t *sub_unit,
                       const uint8_t *lanes, double *slot_use, double *window_use)
{
    int64_t rounds = 0, windows = 0, entries = 0; /* rounds x W x 8 < 2^63: windows <= nnz, rounds <= steps x nnz */
    const int slot = p->one_step == 2 ? 1 : AMF_BATCH;
#pragma omp parallel for schedule(dynamic, 1024) reduction(+ : rounds, windows, entries) if (p->sub_blocks > 4096)
    for (int32_t s = 0; s < p->sub_blocks; s++) {
        const int32_t b = sub_unit[2 * s], e = sub_unit[2 * s + 1], side = p->w >> lanes[s];
        const int64_t l = (int64_t)1 << lanes[s];
        for (int32_t base = b; base < e; base += side) {
            int64_t most = 1;
            for (int32_t u = base; u < e && u < base + side; u++) {
                if (amf_unit_is_long(fold_row, fold_ptr, u)) continue; /* inside uniform sub-blocks: an empty fold */
                const int64_t fw = fold_windows(fold_ptr, u), n = slot == 1 ? fold_ptr[u + 1] - fold_ptr[u] : fw;
                windows += fw;
                entries += fold_ptr[u + 1] - fold_ptr[u];
                if ((n + l - 1) / l > most) most = (n + l - 1) / l;
            }
            rounds += most;
        }
    }
    *slot_use = rounds > 0 ? (double)entries / ((double)rounds * p->w * slot) : 1.0;
    *window_use = windows > 0 ? (double)entries / ((double)windows * AMF_BATCH) : 1.0;
}

/* Regular folds: on a one-step plan without long rows, when every unit u is rows [min(u R, m), min(u R + R, m)) and
 * entries [min(u E, nnz), min(u E + E, nnz)) (R, E: the first fold's), the one-step kernel derives them from u and
 * its warps' chain starts at the entries: fold bounds, entries, x becomes entries, x (csr_vector's chain is row
 * bounds, entries, x). Rows of one length fold so (uniform:M:K, k-regular graphs); a stencil's shorter boundary
 * rows do not. */
static void choose_regular(amf_plan *p, const spmv_matrix_t *A, const int32_t *fold_row, const int32_t *fold_ptr,
                           int mode)
{
    p->reg_rows = p->reg_entries = 0;
    if (mode == -1 || p->one_step == 0 || p->long_rows > 0 || p->units == 0) return;
    const int64_t R = fold_row[1] - fold_row[0], E = fold_ptr[1] - fold_ptr[0];
    if (R < 1 || E < 1 || E % R != 0 || (int64_t)A->nnz != (E / R) * A->m) return;
    for (int64_t u = 1; u <= p->units; u++)
        if (fold_row[u] != (u * R < A->m ? u * R : A->m) || fold_ptr[u] != (u * E < A->nnz ? u * E : A->nnz)) return;
    p->reg_rows = (int32_t)R, p->reg_entries = (int32_t)E;
}

static void write_stats(spmvport_format_data *fd, const amf_plan *p, int packed)
{
    char fold[16], mix[96] = "";
    if (p->vector_lanes > 0) spmvport_msg(fold, sizeof fold, "vector");
    else if (p->fixed > 0) spmvport_msg(fold, sizeof fold, "fixed%d", p->fixed);
    else spmvport_msg(fold, sizeof fold, "adaptive");
    /* sub-blocks per lane count, e.g. "2:15/4:34196": what the lane rule chose */
    int64_t count[7] = {0};
    const uint8_t *lanes = fd->arrays[AMF_A_SUB_LANES].data;
    for (int32_t s = 0; s < p->sub_blocks; s++) count[lanes[s] < 7 ? lanes[s] : 6]++;
    for (int e = 1; e < 7; e++) {
        size_t used = strlen(mix);
        if (count[e] > 0 && used < sizeof mix)
            spmvport_msg(mix + used, sizeof mix - used, "%s%d:%lld", used > 0 ? "/" : "", 1 << e, (long long)count[e]);
    }
    spmvport_msg(fd->stats, sizeof fd->stats,
                 "T_s=%lld;T_l=%lld;folded_rows=%d;avg_rows_per_fold=%.3f;long_rows=%d;sub_blocks=%d;"
                 "long_pieces=%d;long_min=%d;fold=%s;lanes=%d;lanes_rule=%s;sub_lanes=%s;packed=%d;min_blocks=%d;values=%s;resident=%d;"
                 "slot_use=%.3f;window_use=%.3f;win_cap=%lld;uniform=%d;one_step=%d;window_cache=%d;step_window=%d;"
                 "x_sectors=%.3f;regular=%d:%d;vector=%d",
                 (long long)p->t_s, (long long)p->t_l, p->folds,
                 p->folds > 0 ? (double)p->short_rows / p->folds : 0.0, p->long_rows, p->sub_blocks, p->pieces,
                 AMF_LONG_MIN, fold, 1 << (p->lanes_log2 > 0 ? p->lanes_log2 : p->lanes0_log2),
                 p->lanes_log2 > 0 ? "fixed" : "model", mix, packed, p->min_blocks,
                 p->values == AMF_VALUES_AFTER ? "after" : p->values == AMF_VALUES_AHEAD ? "ahead" : "gather",
                 p->parts > 0 ? p->resident : 0, p->slot_use, p->window_use,
                 (long long)p->win_cap, p->uni_k, p->one_step, p->window_cache, p->step_window,
                 p->x_sectors, p->reg_rows, p->reg_entries, p->vector_lanes);
}

static void write_params(spmvport_format_data *fd, const amf_plan *p, int packed)
{
    const int64_t warps_per_block = AMF_BLOCK / p->w;
    fd->params[AMF_P_UNITS] = p->units;
    fd->params[AMF_P_SUB_BLOCKS] = p->sub_blocks;
    fd->params[AMF_P_LONG_ROWS] = p->long_rows;
    fd->params[AMF_P_PIECES] = p->pieces;
    fd->params[AMF_P_PIECE] = (int64_t)AMF_BLOCK * AMF_PIECE_PER_THREAD;
    fd->params[AMF_P_BLOCK] = AMF_BLOCK;
    fd->params[AMF_P_PACKED] = packed;
    fd->params[AMF_P_FOLD_MAX] = p->fold_max;
    fd->params[AMF_P_T_S] = p->t_s;
    fd->params[AMF_P_T_L] = p->t_l;
    fd->params[AMF_P_LONG_MIN] = AMF_LONG_MIN;
    fd->params[AMF_P_MULTI] = p->multi;
    fd->params[AMF_P_GRID] = p->pieces + (p->sub_blocks + warps_per_block - 1) / warps_per_block;
    fd->params[AMF_P_FIXED] = p->fixed;
    fd->params[AMF_P_MIN_BLOCKS] = p->min_blocks;
    fd->params[AMF_P_VALUES] = p->values;
    fd->params[AMF_P_UNIFORM] = p->uni_k;
    fd->params[AMF_P_UNIFORM_LANES] = p->uni_lg;
    fd->params[AMF_P_ONE_STEP] = p->one_step;
    fd->params[AMF_P_WINDOW_CACHE] = p->window_cache;
    fd->params[AMF_P_STEP_WINDOW] = p->step_window;
    fd->params[AMF_P_REGULAR_ROWS] = p->reg_rows;
    fd->params[AMF_P_REGULAR_ENTRIES] = p->reg_entries;
    fd->params[AMF_P_VECTOR_LANES] = p->vector_lanes;
}

spmv_status_t spmvport_build_amf_csr_ex(spmvport_format_data *fd, const spmv_matrix_t *A,
                                        const spmv_device_info_t *dev, const spmv_plan_options_t *opt,
                                        int force_unpacked, char *msg, size_t msglen)
{
    spmv_status_t st = check_input(fd, A, opt, msg, msglen);
    if (st != SPMV_STATUS_SUCCESS) return st;
    amf_plan p;
    memset(&p, 0, sizeof p);
    p.w = fd->warp_size;
    p.w_log2 = log2_int(p.w);
    const int no_cap = opt->amf_fixed_fold < 0; /* -1: adaptive folds without the window cap (round 3's rule) */
    p.fixed = opt->amf_fixed_fold > 0 ? opt->amf_fixed_fold : 0;
    p.lanes_log2 = opt->amf_lanes > 0 ? log2_int(opt->amf_lanes < p.w ? opt->amf_lanes : p.w) : 0;
    p.waves = opt->amf_waves > 0 ? opt->amf_waves : AMF_WAVES;
    p.waves_set = opt->amf_waves > 0;
    /* an explicit amf_waves asks for T_l grouping, an explicit amf_resident for equal sub-blocks */
    p.resident = opt->amf_resident > 0 ? opt->amf_resident : opt->amf_waves > 0 ? 0 : AMF_RESIDENT;
    /* options.amf_values 0: per precision, from the H200 (run 14, circuit:5000000 / stencil3d:7:160): f64 after
     * the adds (0.2017 / 0.1769 ms, against 0.2227 / 0.1942 with the gathers), f32 with the gathers (0.1260 /
     * 0.1213, against 0.1393 / 0.1376 after the adds); 3: after the adds */
    p.values = opt->amf_values == 0 ? (A->precision == SPMV_F32 ? AMF_VALUES_GATHER : AMF_VALUES_AFTER)
               : opt->amf_values == 3 ? AMF_VALUES_AFTER : opt->amf_values;
    p.min_blocks = opt->amf_min_blocks == 1 ? 0 : opt->amf_min_blocks;
    if (opt->amf_min_blocks == 0) /* the most blocks at which the kernel keeps every register (sm_90, packed, 4
                                   * accumulators): after: 80 registers f64, 64 f32; ahead: 106 / 80, uncapped;
                                   * gather: 80 f64 (28 bytes spilled), 72 f32 */
        p.min_blocks = p.values == AMF_VALUES_AHEAD ? 0 : p.values == AMF_VALUES_GATHER || A->precision == SPMV_F64 ? 3 : 4;
    int64_t short_rows = 0, short_nnz = 0;
#pragma omp parallel for schedule(static) reduction(+ : short_rows, short_nnz) if (A->m > AMF_OMP_MIN)
    for (int32_t r = 0; r < A->m; r++) {
        int32_t len = row_len(A, r);
        if (len < AMF_LONG_MIN) {
            short_rows++;
            short_nnz += len;
        }
    }
    p.short_rows = short_rows;
    p.short_nnz = short_nnz;
    /* how scattered the reads of x are: the CSR-vector rule and the folds' lanes (wave_lanes_log2) use it */
    p.x_sectors = spmvport_x_sector_use(A, AMF_LONG_MIN);
    p.scattered = p.x_sectors >= SPMVPORT_X_SCATTERED;
    p.vector_lanes = choose_vector(A, dev, opt, &p);
    if (p.vector_lanes > 0) p.fixed = 1; /* the CSR-vector layout: a unit a row */
    /* T_s = ceil(4.5 x the mean short row length): a 4-row fold of average rows plus 1/8 slack, so that regular
     * matrices whose shorter boundary rows pull the mean under the interior length still fold 4 interior rows */
    p.t_s = p.fixed > 0 || short_rows == 0 ? 0 : (9 * short_nnz + 2 * short_rows - 1) / (2 * short_rows);
    if (p.fixed == 0 && p.t_s < 1) p.t_s = 1;
    if (p.fixed == 0 && !no_cap) { /* the power of two >= ceil(T_s / AMF_BATCH) */
        const int64_t need = (p.t_s + AMF_BATCH - 1) / AMF_BATCH;
        for (p.win_cap = 1; p.win_cap < need;) p.win_cap *= 2;
    }

    const int packed = !force_unpacked && A->n <= AMF_PACK_LIMIT && p.vector_lanes == 0;
    int32_t *fold_row, *fold_ptr, *sub_unit;
    uint8_t *lanes;
    st = add_array(fd, "fold_row", (size_t)A->m + 1, sizeof(int32_t), 0, (void **)&fold_row);
    if (st == SPMV_STATUS_SUCCESS)
        st = add_array(fd, "fold_ptr", (size_t)A->m + 1, sizeof(int32_t), 0, (void **)&fold_ptr);
    if (st != SPMV_STATUS_SUCCESS) goto oom;
    fold_rows(&p, A, fold_row, fold_ptr);
    shrink_array(fd, AMF_A_FOLD_ROW, ((size_t)p.units + 1) * sizeof(int32_t));
    shrink_array(fd, AMF_A_FOLD_PTR, ((size_t)p.units + 1) * sizeof(int32_t));
    fold_row = fd->arrays[AMF_A_FOLD_ROW].data;
    fold_ptr = fd->arrays[AMF_A_FOLD_PTR].data;

    st = fill_entries(fd, A, &p, fold_row, fold_ptr, packed, msg, msglen);
    if (st == SPMV_STATUS_INVALID_MATRIX) return st;
    if (st != SPMV_STATUS_SUCCESS) goto oom;
    if (p.vector_lanes > 0) {
        st = vector_layout(fd, &p);
        if (st != SPMV_STATUS_SUCCESS) goto oom;
        goto arrays_done;
    }

    choose_t_l(&p, dev);
    st = add_array(fd, "sub_unit", 2 * (size_t)p.units, sizeof(int32_t), 0, (void **)&sub_unit);
    if (st != SPMV_STATUS_SUCCESS) goto oom;
    p.parts = p.resident && p.folds > 0 ? one_wave_parts(&p, dev, A->precision == SPMV_F32) : 0;
    if (p.parts > 0) group_one_wave(&p, fold_row, fold_ptr, sub_unit);
    else group_folds(&p, fold_row, fold_ptr, sub_unit);
    st = add_array(fd, "sub_lanes", (size_t)p.units, 1, 0, (void **)&lanes); /* room for either layout */
    if (st != SPMV_STATUS_SUCCESS) goto oom;
    choose_lanes(&p, fold_ptr, sub_unit, lanes);
    /* the window the one-step kernel by windows takes on the many-wave layout (or everywhere, when asked: see
     * step_window below); with p.scattered it sets its lanes (wave_lanes_log2) */
    p.wave_window = opt->amf_step_window != 0 ? opt->amf_step_window
                    : A->precision == SPMV_F64 ? AMF_SMALL_WINDOW : AMF_BATCH;
    choose_uniform(&p, dev, A->precision == SPMV_F32, opt->amf_uniform, opt->amf_one_step, fold_row, fold_ptr, sub_unit,
                   lanes);
    /* one step per warp: the lighter kernel unless asked for the general one (amf_one_step = -1); by windows where
     * the warps fit in one wave (launch floor: each lane's window is one round trip), by entries where they need
     * many waves and the folds are short (amf_one_step 0), or as asked (1, 2). By entries, the lanes follow the
     * fold length (unless fixed by amf_lanes): NotreDame_www (H100, session 19) 13.7 -> 11.5 us f64, 10.4 -> 9.8
     * f32, at 4 lanes instead of windows at 2 */
    if (opt->amf_one_step != -1 && p.uni_k > 0 && p.uni_k == (p.w >> p.uni_lg)) {
        /* by entries only without long rows (the kernel by entries has no long-row blocks); automatic only where
         * an average fold is at most one window of entries (NotreDame_www 7.4); longer folds
         * fill their windows and ran slower by entries (H200, session 21, run KN, ms f64 / f32 by entries -> by
         * windows: stencil2d:5:500 0.0127 / 0.0110 -> 0.0105 / 0.0079, stencil2d:5:700 0.0211 / 0.0171 -> 0.0166
         * / 0.0112, uniform:300000:4 0.0143 / 0.0140 -> 0.0141 / 0.0132, lp:300000:300000:5 0.0172 / 0.0158 ->
         * 0.0172 / 0.0150; NotreDame_www 0.0115 / 0.0098 -> 0.0136 / 0.0103) */
        const int short_folds = p.folds > 0 && p.short_nnz <= (int64_t)AMF_BATCH * p.folds;
        const int entries = p.long_rows == 0 && (opt->amf_one_step == 2 ||
                                                 (opt->amf_one_step == 0 && p.short_waves && short_folds));
        p.one_step = entries ? 2 : 1;
        if (entries && p.lanes_log2 == 0) {
            const int lg = entry_lanes_log2(&p);
            set_uniform(&p, fold_ptr, sub_unit, lanes, lg, p.w >> lg);
        }
    }
    /* the one-step kernel's windows: 4 entries in f64 on the many-wave layouts, where they cut the kernel from 48
     * registers to 40 (6 blocks resident instead of 5; 48 instead of 56 with long rows) and a short fold's lanes
     * read fewer slots outside it. Session 20, f64 ms, 8 -> 4 entries in the same process (H200 run JH / H100 run
     * JI): circuit:5000000 0.1933 -> 0.1716 / 0.2399 -> 0.2200, stencil3d:7:160 0.1408 -> 0.1165 / 0.1582 ->
     * 0.1503, uniform:1000000:3 0.0337 -> 0.0302 / 0.0377 -> 0.0346, uniform:2000000:4 0.0723 -> 0.0688 / 0.0842
     * -> 0.0811, stencil2d:5:1400 0.0601 -> 0.0567 / 0.0690 -> 0.0642, kron:20:16 0.2572 -> 0.2420 (H200);
     * fem3d:3:48 0.0821 -> 0.0794 on the H200 but 0.1092 -> 0.1126 on the H100, and lp:2000000:2000000:5 slower
     * on both, 0.0887 -> 0.0952 / 0.1058 -> 0.1163 (amf_step_window = 8 restores them). f32 keeps 8: 34 registers
     * with 8 entries, 32 with 4, and 4 entries lost 1-4% (run JF). On the one-wave layouts (launch floor and
     * mid-size), in both precisions, 4 entries where they cut a warp's slowest lane's slots by a quarter or more
     * (lane_slots: the 5-point stencil's 4-row folds of 20 entries at 2 lanes, 2 rounds of 8 slots -> 3 of 4).
     * Session 22 (H200, runs LB, LC), us, 8 -> 4 entries, f64 / f32: stencil2d:5:500 10.6 / 8.0 -> 8.4 / 6.5,
     * stencil2d:5:600 14.6 / 9.5 -> 10.2 / 8.2, stencil2d:5:700 16.7 / 11.3 -> 14.4 / 9.3, lp:500000:500000:5 f32
     * 25.3 -> 22.9; the 18 shared matrices that change, each against csr_vector in its process, 1.20x -> 1.31x in
     * geometric mean (two processes each); where the slots tie (uniform:300000:4, 16 aligned entries a fold)
     * windows of 4 were 1-3% slower (run LA) */
    if (p.one_step != 1) p.step_window = AMF_BATCH;
    else if (opt->amf_step_window != 0 || p.wave_layout) p.step_window = p.wave_window;
    else p.step_window = 4 * lane_slots(&p, fold_row, fold_ptr, AMF_SMALL_WINDOW) <=
                                 3 * lane_slots(&p, fold_row, fold_ptr, AMF_BATCH)
                             ? AMF_SMALL_WINDOW : AMF_BATCH;
    shrink_array(fd, AMF_A_SUB_UNIT, 2 * (size_t)p.sub_blocks * sizeof(int32_t));
    shrink_array(fd, AMF_A_SUB_LANES, (size_t)p.sub_blocks);

    st = cut_long_rows(fd, &p, fold_row, fold_ptr);
    if (st != SPMV_STATUS_SUCCESS) goto oom;
arrays_done:
    if (fd->narrays != AMF_A_COUNT) {
        spmvport_msg(msg, msglen, "amf_csr: built %d arrays, expected %d", fd->narrays, AMF_A_COUNT);
        return SPMV_STATUS_INTERNAL_ERROR;
    }
    choose_regular(&p, A, fd->arrays[AMF_A_FOLD_ROW].data, fd->arrays[AMF_A_FOLD_PTR].data, opt->amf_regular);
    slot_stats(&p, fd->arrays[AMF_A_FOLD_ROW].data, fd->arrays[AMF_A_FOLD_PTR].data, fd->arrays[AMF_A_SUB_UNIT].data,
               fd->arrays[AMF_A_SUB_LANES].data, &p.slot_use, &p.window_use);
    /* a window that two folds read, read twice: cached where that is a large share of the reads (the second read
     * then comes from the caches, not DRAM), streamed elsewhere (the matrix stream would evict x). On many waves of
     * one-step warps by windows, streamed also where x is read along diagonals with 8-entry windows (f32) and
     * where it is read scattered with 4-entry windows (f64): measured, not modelled. H100, session 21 (runs KG,
     * KH), ms cached -> streamed: f32 circuit:5000000 0.1360 -> 0.1190, stencil2d:5:1400 0.0459 -> 0.0384
     * (stencil3d:7:160 a tie); f64 lp:2000000:2000000:5 0.1013 -> 0.0964, uniform:1000000:3 0.0344 -> 0.0338;
     * while f64 on diagonals loses streamed (stencil2d 0.0638 -> 0.0770, stencil3d 0.1501 -> 0.1931, circuit
     * 0.2196 -> 0.2403) and f32 scattered is mixed (lp 0.0906 -> 0.0894, uniform:1000000:3 0.0301 -> 0.0311) */
    const int stream = p.one_step == 1 && p.wave_layout &&
                       (p.step_window == AMF_SMALL_WINDOW ? p.scattered : !p.scattered);
    p.window_cache = opt->amf_window_cache != 0 ? opt->amf_window_cache > 0
                     : !stream && p.window_use * (100 + AMF_CACHE_REREAD_PCT) <= 100.0;
    write_params(fd, &p, packed);
    if (fd->params[AMF_P_GRID] > INT32_MAX) {
        spmvport_msg(msg, msglen, "amf_csr: %lld thread blocks exceed the grid limit",
                     (long long)fd->params[AMF_P_GRID]);
        return SPMV_STATUS_OVERFLOW;
    }
    write_stats(fd, &p, packed);
    fd->deterministic = 1; /* long-row pieces are added in piece order (the atomic count only says which block) */
    return SPMV_STATUS_SUCCESS;

oom:
    spmvport_msg(msg, msglen, "amf_csr: out of host memory for %d rows, %d entries", A->m, A->nnz);
    return st == SPMV_STATUS_SUCCESS ? SPMV_STATUS_OUT_OF_MEMORY : st;
}

spmv_status_t spmvport_build_amf_csr(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                     const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
    return spmvport_build_amf_csr_ex(fd, A, dev, opt, 0, msg, msglen);
}
