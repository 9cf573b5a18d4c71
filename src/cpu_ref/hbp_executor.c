/*
 * hbp_executor.c -- CPU executor of format hbp, walking the arrays exactly as src/common/device/hbp_kernels.h
 * does (layout: src/common/format_hbp.h, docs/formats/hbp.md), in the matrix's precision:
 *
 *   thread blocks  grid = hbp_launch_grid (the tasks with HBP_P_TASK_BLOCKS, else min(params' grid, tasks)), as
 *                  the kernel is launched; with no more tasks than that,
 *                  block c runs task c; else block c runs the fixed tasks [c*q, (c+1)*q), q = params[HBP_P_FIXED],
 *                  then takes tasks q*grid + ticket++ until they run out; the block that finishes last (done
 *                  counter) resets the ticket and the counter (HBP_A_SCHED), so every call starts from zero;
 *   a task         its x window [lo, lo+len) of the column block in "shared memory" (a column outside the window
 *                  reads NaN here, so a wrong window fails the tests), then one warp per unit; with staged y
 *                  (HBP_T_Y_LEN > 0) a warp group's row with one segment goes to the task's copy of rows
 *                  [y_lo, y_lo + y_len)
 *                  (a row outside it is written NaN in y, so a wrong range fails the tests), and at the task's end
 *                  the rows written there are stored in order;
 *   hot columns    (HBP_NHOT > 0) a column c < 0 reads the block's copy of x at hot[-1 - c] (NaN past nhot);
 *                  with the global copy (HBP_HOT_GLOBAL) x at hot[i] is first copied into HBP_A_HOT_X[i] (the
 *                  GPU's gather kernel) and a column c < 0 reads HBP_A_HOT_X at -1 - c;
 *   a unit         its header (HBP_A_UNIT_INFO): first entry and slot, slot count, the slots' common length (else
 *                  seg_len), outputs from HBP_U_OUT: a narrow unit's row offsets (seg_out) or a wide unit's
 *                  output_hash (wide_out), hbp_slot_output;
 *   a warp group   (2..W slots) lane l sums its segment; at step j the lanes with len > j take the next entries
 *                  in lane order (the kernel counts them with a ballot);
 *   a long unit    (1 slot) lane l sums entries l, l+W, ...; a shuffle-down tree (offsets W/2 .. 1) adds lanes;
 *   output         a row's only segment stores alpha*sum + beta*y; other segments go to their partial (combine 1:
 *                  with few partials, hbp_counted_combine, the writer of a fix row's last one, by HBP_A_FIX_COUNT,
 *                  sums them in column-block order into y and zeroes the count; else a pass after the blocks
 *                  does) or are added with
 *                  atomics after a pass that scales the fix rows by beta (combine 2); the empty rows (the first
 *                  params[HBP_P_NEMPTY] fix rows) are written by the kernel's blocks before their tasks, as the
 *                  passes would write them (by those passes when there is no task).
 * The kernel's pipelining (entries loaded a trip ahead, unit headers a unit ahead) and its barriers change when
 * loads are issued, not which entries a lane adds or in what order, so the sums here are the kernel's.
 * With beta == 0, y is never read (it may hold NaN).
 */
#include <math.h>
#include <stdint.h>

#include "cpu_ref.h"
#include "../common/format_hbp.h"

#ifdef _OPENMP
#define HBP_PRAGMA(x) _Pragma(#x)
#else
#define HBP_PRAGMA(x)
#endif

typedef struct {
    const uint16_t *col16, *seg_len, *seg_out; /* col16 or col32: the local columns, by col_bytes */
    const int32_t *col32;
    const int32_t *unit_info, *wide_out, *task, *fix_row, *part_ptr, *part_fix, *hot;
    void *hot_x; /* the global hot copy (NULL: the copy is each block's) */
    int32_t *sched, *fix_count;
    int32_t ntasks, nfix, nempty, grid, nhot, fixed;
    int W, combine, counted; /* counted: combine 1 by the writer of a row's last partial (hbp_counted_combine) */
} hbp_view;

static hbp_view view_of(const spmvport_format_data *fd)
{
    hbp_view v;
    v.col16 = fd->params[HBP_P_COL_BYTES] == 2 ? fd->arrays[HBP_A_COL].data : NULL;
    v.col32 = fd->params[HBP_P_COL_BYTES] == 4 ? fd->arrays[HBP_A_COL].data : NULL;
    v.seg_len = fd->arrays[HBP_A_SEG_LEN].data;
    v.seg_out = fd->arrays[HBP_A_SEG_OUT].data;
    v.unit_info = fd->arrays[HBP_A_UNIT_INFO].data;
    v.wide_out = fd->arrays[HBP_A_WIDE_OUT].data;
    v.task = fd->arrays[HBP_A_TASK].data;
    v.fix_row = fd->arrays[HBP_A_FIX_ROW].data;
    v.part_ptr = fd->arrays[HBP_A_PART_PTR].data;
    v.sched = fd->arrays[HBP_A_SCHED].data;
    v.part_fix = fd->arrays[HBP_A_PART_FIX].data;
    v.fix_count = fd->arrays[HBP_A_FIX_COUNT].data;
    v.hot = fd->arrays[HBP_A_HOT].data;
    v.nhot = (int32_t)HBP_NHOT(fd);
    v.hot_x = HBP_HOT_GLOBAL(fd) ? fd->arrays[HBP_A_HOT_X].data : NULL;
    v.ntasks = (int32_t)fd->params[HBP_P_NTASKS];
    v.nfix = (int32_t)fd->params[HBP_P_NFIX];
    v.nempty = (int32_t)fd->params[HBP_P_NEMPTY];
    v.grid = (int32_t)hbp_launch_grid(fd->params); /* the launch's */
    v.fixed = (int32_t)fd->params[HBP_P_FIXED];
    v.W = fd->warp_size;
    v.combine = (int)fd->params[HBP_P_COMBINE];
    v.counted = hbp_counted_combine(fd->params, v.W);
    return v;
}

static inline int32_t col_at(const hbp_view *v, int32_t e) { return v->col16 ? v->col16[e] : v->col32[e]; }

/* The task's x: its shared-memory window when staged, else global x, and the hot columns' copy (the kernel's
 * shared memory, or the global copy hot_x, holds x[hot[i]] at i; a column c < 0 reads it at -1 - c). */
typedef struct {
    int32_t xbase, lo, len, nhot;
    const int32_t *hot;
    const void *hot_x;
} hbp_window;

/* ystage_f64 / ystage_f32 (below): a task's staged y, the kernel's shared memory: the sums of rows [lo, lo + len)
 * and whether a unit wrote them, sized for the longest range the builder stages (HBP_Y_STAGE_MAX_ROWS). */

/* One body per precision: REAL is the value and accumulator type, as in the kernels. */
#define DEFINE_HBP_EXECUTOR(REAL, SUFFIX)                                                                        \
    static inline REAL x_at_##SUFFIX(const REAL *x, hbp_window w, int32_t local)                                \
    {                                                                                                          \
        if (local < 0 && -1 - local >= w.nhot) return (REAL)NAN;                                               \
        if (local < 0) return w.hot_x != NULL ? ((const REAL *)w.hot_x)[-1 - local] : x[w.hot[-1 - local]];   \
        if (w.len == 0) return x[w.xbase + local];                                                             \
        return (uint32_t)(local - w.lo) < (uint32_t)w.len ? x[w.xbase + local] : (REAL)NAN;                   \
    }                                                                                                          \
                                                                                                               \
    /* y[r] = alpha * sum + beta * y[r], y not read when beta == 0 (the kernels' hbp_write_row) */              \
    static inline void write_row_##SUFFIX(REAL *y, int32_t r, REAL alpha, REAL sum, REAL beta)                 \
    {                                                                                                          \
        y[r] = beta == (REAL)0 ? alpha * sum : alpha * sum + beta * y[r];                                      \
    }                                                                                                          \
                                                                                                               \
    /* combine 2's scale of a fix row (hbp_scale_row) */                                                      \
    static inline void scale_row_##SUFFIX(REAL *y, int32_t r, REAL beta)                                       \
    {                                                                                                          \
        y[r] = beta == (REAL)0 ? (REAL)0 : beta * y[r];                                                        \
    }                                                                                                          \
                                                                                                               \
    /* the fix row's partials in column-block order */                                                        \
    static void combine_row_##SUFFIX(const hbp_view *v, REAL *y, const REAL *partial, int32_t f, REAL alpha,    \
                                      REAL beta)                                                                \
    {                                                                                                          \
        REAL sum = 0;                                                                                          \
        for (int32_t k = v->part_ptr[f]; k < v->part_ptr[f + 1]; k++) sum += partial[k];                       \
        write_row_##SUFFIX(y, v->fix_row[f], alpha, sum, beta);                                                \
    }                                                                                                          \
                                                                                                               \
    /* partial t; the writer of a fix row's last partial (its count) combines the row and zeroes the count */  \
    static void store_partial_##SUFFIX(const hbp_view *v, REAL *y, REAL *partial, int32_t t, REAL alpha,       \
                                       REAL beta, REAL sum)                                                     \
    {                                                                                                          \
        partial[t] = sum;                                                                                      \
        const int32_t f = v->part_fix[t];                                                                      \
        int32_t done;                                                                                          \
        HBP_PRAGMA(omp atomic capture seq_cst)                                                                 \
        done = v->fix_count[f - v->nempty]++;                                                                  \
        if (done != v->part_ptr[f + 1] - v->part_ptr[f] - 1) return;                                          \
        v->fix_count[f - v->nempty] = 0;                                                                       \
        combine_row_##SUFFIX(v, y, partial, f, alpha, beta);                                                   \
    }                                                                                                          \
                                                                                                               \
    typedef struct {                                                                                           \
        int32_t lo, len; /* len 0: not staged */                                                              \
        REAL sum[HBP_Y_STAGE_MAX_ROWS];                                                                        \
        unsigned char written[HBP_Y_STAGE_MAX_ROWS];                                                           \
    } ystage_##SUFFIX;                                                                                         \
                                                                                                               \
    static inline void store_##SUFFIX(const hbp_view *v, ystage_##SUFFIX *ys, REAL *y, REAL *partial,           \
                                      int32_t out, REAL alpha, REAL beta, REAL sum)                             \
    {                                                                                                          \
        if (out >= 0 && ys != NULL && ys->len > 0) { /* a row outside the range: outside the kernel's array */ \
            if ((uint32_t)(out - ys->lo) >= (uint32_t)ys->len) y[out] = (REAL)NAN;                             \
            else {                                                                                             \
                ys->sum[out - ys->lo] = sum;                                                                   \
                ys->written[out - ys->lo] = 1;                                                                 \
            }                                                                                                  \
        } else if (out >= 0) {                                                                                 \
            write_row_##SUFFIX(y, out, alpha, sum, beta);                                                      \
        } else if (v->counted) {                                                                               \
            store_partial_##SUFFIX(v, y, partial, -1 - out, alpha, beta, sum);                                 \
        } else if (v->combine == HBP_COMBINE_PARTIALS) {                                                       \
            partial[-1 - out] = sum;                                                                           \
        } else {                                                                                               \
            REAL add = alpha * sum;                                                                            \
            HBP_PRAGMA(omp atomic)                                                                             \
            y[-1 - out] += add;                                                                                \
        }                                                                                                      \
    }                                                                                                          \
                                                                                                               \
    static void unit_##SUFFIX(const hbp_view *v, const REAL *val, int32_t u, const REAL *x, hbp_window w,       \
                              ystage_##SUFFIX *ys, REAL *y, REAL *partial, REAL alpha, REAL beta)               \
    {                                                                                                          \
        const int32_t *head = v->unit_info + (int64_t)u * HBP_UNIT_INFO_INTS; /* the kernel's one load */      \
        const int32_t s0 = head[HBP_U_SLOT], lanes = HBP_SHAPE_LANES(head[HBP_U_SHAPE]), p0 = head[HBP_U_PTR];   \
        REAL sum[64];                                                                                          \
        if (lanes == 1) { /* warp-strided segment, then the shuffle-down tree */                               \
            const int32_t len = hbp_slot_len(v->unit_info, v->seg_len, u, s0);                                \
            for (int l = 0; l < v->W; l++) {                                                                   \
                sum[l] = 0;                                                                                    \
                for (int32_t e = l; e < len; e += v->W) sum[l] += val[p0 + e] * x_at_##SUFFIX(x, w, col_at(v, p0 + e)); \
            }                                                                                                  \
            for (int off = v->W / 2; off > 0; off /= 2)                                                        \
                for (int l = 0; l < off; l++) sum[l] += sum[l + off];                                          \
            store_##SUFFIX(v, NULL, y, partial, hbp_slot_output(v->unit_info, v->seg_out, v->wide_out, u, s0, s0),  \
                           alpha, beta, sum[0]); /* long units are never staged */                             \
            return;                                                                                            \
        }                                                                                                      \
        int32_t len[64];                                                                                       \
        for (int32_t l = 0; l < lanes; l++) {                                                                  \
            sum[l] = 0;                                                                                        \
            len[l] = hbp_slot_len(v->unit_info, v->seg_len, u, s0 + l);                                        \
        }                                                                                                      \
        int32_t p = p0; /* column-major: step j holds the j-th entry of each lane with len > j, in lane order */ \
        for (int32_t step = 0;; step++) {                                                                      \
            int32_t active = 0;                                                                                \
            for (int32_t l = 0; l < lanes; l++)                                                                \
                if (len[l] > step) {                                                                           \
                    const int32_t e = p + active++;                                                            \
                    sum[l] += val[e] * x_at_##SUFFIX(x, w, col_at(v, e));                                         \
                }                                                                                              \
            if (active == 0) break;                                                                            \
            p += active;                                                                                       \
        }                                                                                                      \
        for (int32_t l = 0; l < lanes; l++)                                                                    \
            store_##SUFFIX(v, ys, y, partial,                                                                  \
                           hbp_slot_output(v->unit_info, v->seg_out, v->wide_out, u, s0, s0 + l), alpha, beta,  \
                           sum[l]);                                                                            \
    }                                                                                                          \
                                                                                                               \
    static void task_##SUFFIX(const hbp_view *v, const REAL *val, int32_t t, const REAL *x, REAL *y,            \
                              REAL *partial, REAL alpha, REAL beta)                                             \
    {                                                                                                          \
        const int32_t *rec = v->task + (size_t)t * HBP_TASK_INTS;                                              \
        hbp_window w = {rec[HBP_T_XBASE], rec[HBP_T_STAGE_LO], rec[HBP_T_STAGE_LEN], v->nhot, v->hot,           \
                        v->hot_x};                                                                             \
        ystage_##SUFFIX ys; /* the staged y range (88 KiB at most, f64: on the thread's stack) */               \
        ys.lo = rec[HBP_T_Y_LO];                                                                               \
        ys.len = rec[HBP_T_Y_LEN] > 0 && rec[HBP_T_Y_LEN] <= HBP_Y_STAGE_MAX_ROWS ? rec[HBP_T_Y_LEN] : 0;      \
        for (int32_t i = 0; i < ys.len; i++) ys.written[i] = 0;                                                \
        /* the kernel's warps take units begin + warp, + warps, ...: every unit writes its own outputs, so the \
         * order does not change the result */                                                                 \
        for (int32_t u = rec[HBP_T_UNIT_BEGIN]; u < rec[HBP_T_UNIT_END]; u++)                                  \
            unit_##SUFFIX(v, val, u, x, w, &ys, y, partial, alpha, beta);                                      \
        for (int32_t i = 0; i < ys.len; i++)                                                                   \
            if (ys.written[i]) write_row_##SUFFIX(y, ys.lo + i, alpha, ys.sum[i], beta);                       \
    }                                                                                                          \
                                                                                                               \
    static void block_##SUFFIX(const hbp_view *v, const REAL *val, int32_t c, const REAL *x, REAL *y,           \
                               REAL *partial, REAL alpha, REAL beta)                                            \
    {                                                                                                          \
        if (v->ntasks <= v->grid) { /* a task per block */                                                     \
            task_##SUFFIX(v, val, c, x, y, partial, alpha, beta);                                              \
            return;                                                                                            \
        }                                                                                                      \
        const int32_t fixed = v->fixed;                                                                        \
        for (int32_t i = 0; i < fixed; i++) task_##SUFFIX(v, val, c * fixed + i, x, y, partial, alpha, beta);  \
        for (;;) { /* the competitive part */                                                                  \
            int32_t ticket;                                                                                    \
            HBP_PRAGMA(omp atomic capture)                                                                     \
            ticket = v->sched[0]++;                                                                            \
            const int64_t t = (int64_t)fixed * v->grid + ticket;                                               \
            if (t >= v->ntasks) break;                                                                         \
            task_##SUFFIX(v, val, (int32_t)t, x, y, partial, alpha, beta);                                     \
        }                                                                                                      \
        int32_t done;                                                                                          \
        HBP_PRAGMA(omp atomic capture)                                                                         \
        done = v->sched[1]++;                                                                                  \
        if (done == v->grid - 1) { /* every block has taken its last ticket: reset for the next call */        \
            HBP_PRAGMA(omp atomic write)                                                                       \
            v->sched[0] = 0;                                                                                   \
            HBP_PRAGMA(omp atomic write)                                                                       \
            v->sched[1] = 0;                                                                                   \
        }                                                                                                      \
    }                                                                                                          \
                                                                                                               \
    static void run_##SUFFIX(const spmvport_format_data *fd, REAL alpha, const REAL *x, REAL beta, REAL *y)     \
    {                                                                                                          \
        const hbp_view v = view_of(fd);                                                                        \
        const REAL *val = fd->arrays[HBP_A_VAL].data;                                                          \
        REAL *partial = fd->arrays[HBP_A_PARTIAL].data;                                                        \
        /* the scale and combine passes' rows: all fix rows without tasks, else those past the empty rows,     \
         * which the kernel's blocks write before their tasks (as the combine pass writes a row without         \
         * partials, or as the scale pass) */                                                                  \
        const int32_t first = v.ntasks > 0 ? v.nempty : 0;                                                     \
        if (v.combine == HBP_COMBINE_ATOMICS) { /* rows the atomics add into (and empty rows): beta * y */     \
            HBP_PRAGMA(omp parallel for schedule(static))                                                      \
            for (int32_t f = first; f < v.nfix; f++) scale_row_##SUFFIX(y, v.fix_row[f], beta);                \
        }                                                                                                      \
        if (v.ntasks > 0) {                                                                                    \
            REAL *hot_x = v.hot_x; /* the gather kernel's copy */                                             \
            for (int32_t i = 0; hot_x != NULL && i < v.nhot; i++) hot_x[i] = x[v.hot[i]];                     \
            HBP_PRAGMA(omp parallel for schedule(static))                                                      \
            for (int32_t f = 0; f < v.nempty; f++) { /* as the pass of the combine mode would */              \
                if (v.combine == HBP_COMBINE_PARTIALS) write_row_##SUFFIX(y, v.fix_row[f], alpha, (REAL)0, beta); \
                else scale_row_##SUFFIX(y, v.fix_row[f], beta);                                                \
            }                                                                                                  \
            HBP_PRAGMA(omp parallel for schedule(dynamic, 1))                                                  \
            for (int32_t c = 0; c < v.grid; c++) block_##SUFFIX(&v, val, c, x, y, partial, alpha, beta);       \
        }                                                                                                      \
        if (v.combine == HBP_COMBINE_PARTIALS && !v.counted) { /* the combine pass */                         \
            HBP_PRAGMA(omp parallel for schedule(static))                                                      \
            for (int32_t f = first; f < v.nfix; f++) combine_row_##SUFFIX(&v, y, partial, f, alpha, beta);    \
        }                                                                                                      \
    }

DEFINE_HBP_EXECUTOR(float, f32)
DEFINE_HBP_EXECUTOR(double, f64)

void spmvport_cpu_hbp(const spmvport_format_data *fd, double alpha, const void *x, double beta, void *y)
{
    if (fd->precision == SPMV_F32) run_f32(fd, (float)alpha, x, (float)beta, y);
    else run_f64(fd, alpha, x, beta, y);
}
