/*
 * test_format_hbp.c -- format hbp (hash-based 2-D partition): the CPU executor against the oracle (edge-case
 * corpus and every shared matrix, W = 32 and 64, f32 and f64, through the public API), the option variants
 * (block sizes, combine modes, sort2D grouping), the layout's invariants read straight from the builder's
 * arrays, update_values, the plan statistics, option checking and the per-call reset of the ticket.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "internal.h"
#include "format_builders.h"
#include "cpu_ref.h"
#include "format_hbp.h"

/* ===========================================================================================================
 * Helpers
 * ========================================================================================================= */

static spmv_plan_options_t options(int warp, int rows, int cols, int combine, int grouping)
{
    spmv_plan_options_t o;
    spmv_plan_options_init(&o);
    o.warp_size = warp;
    o.hbp_block_rows = rows;
    o.hbp_block_cols = cols;
    o.hbp_combine = combine;
    o.hbp_grouping = grouping;
    return o;
}

static void corpus(spmv_precision_t p, const spmv_plan_options_t *opt)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    support_check_corpus(ctx, SPMV_FORMAT_HBP, opt, p);
    spmv_context_destroy(ctx);
}

static void shared(int warp, spmv_precision_t p)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t opt = options(warp, 0, 0, 0, 0);
    support_check_shared(ctx, SPMV_FORMAT_HBP, &opt, p);
    spmv_context_destroy(ctx);
}

static spmv_matrix_t *generate(const char *spec, spmv_precision_t p)
{
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, spec, p, 7), SPMV_STATUS_SUCCESS, "%s: %s", spec, spmv_last_error(NULL));
    return A;
}

/* A stats value as a double (NAN when the key is missing). */
static double stat(const char *stats, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "%s=", key);
    for (const char *s = stats; (s = strstr(s, pat)) != NULL; s++)
        if (s == stats || s[-1] == ';') return strtod(s + strlen(pat), NULL);
    return NAN;
}

/* ===========================================================================================================
 * (a) the executor against the oracle
 * ========================================================================================================= */

Test(hbp, corpus_w32_f64) { spmv_plan_options_t o = options(32, 0, 0, 0, 0); corpus(SPMV_F64, &o); }
Test(hbp, corpus_w64_f64) { spmv_plan_options_t o = options(64, 0, 0, 0, 0); corpus(SPMV_F64, &o); }
Test(hbp, corpus_w32_f32) { spmv_plan_options_t o = options(32, 0, 0, 0, 0); corpus(SPMV_F32, &o); }
Test(hbp, corpus_w64_f32) { spmv_plan_options_t o = options(64, 0, 0, 0, 0); corpus(SPMV_F32, &o); }
/* the corpus is small, so the defaults cap the units' trips (hbp_unit_trips); the uncapped layout too */
Test(hbp, corpus_uncapped)
{
    spmv_plan_options_t o = options(32, 0, 0, 0, 0);
    o.hbp_unit_trips = -1;
    corpus(SPMV_F64, &o);
    o.warp_size = 64;
    corpus(SPMV_F32, &o);
}

/* the global hot copy (hbp_hot_copy = 2) on the corpus: one column block of 32-bit columns, so any column read
 * twice or more is a candidate; the executor reads hot columns only through the copy it gathers first */
Test(hbp, corpus_hot_global)
{
    spmv_plan_options_t o = options(32, 0, 70000, 0, 0);
    o.hbp_hot_copy = 2;
    o.hbp_hot = 3;
    corpus(SPMV_F64, &o);
    o.warp_size = 64;
    o.hbp_hot = -1;
    corpus(SPMV_F32, &o);
}

/* warp groups in position order (hbp_order = 1; automatic only past the L2 cache), hash and sort2D grouping */
Test(hbp, corpus_position_order)
{
    for (int grouping = 0; grouping < 2; grouping++) {
        spmv_plan_options_t o = options(grouping ? 64 : 32, 0, 0, 0, grouping);
        o.hbp_order = 1;
        corpus(grouping ? SPMV_F32 : SPMV_F64, &o);
    }
}
/* staged y (hbp_y_stage = 1): each task sums its row blocks' rows in "shared memory" and writes them at its end;
 * the default heights, odd ones (several row blocks a task), both combines, the ticket (several tasks a block) */
Test(hbp, corpus_y_stage)
{
    for (int v = 0; v < 4; v++) {
        spmv_plan_options_t o = options(v % 2 ? 64 : 32, v < 2 ? 0 : 37, 0, v % 3, 0);
        o.hbp_y_stage = 1;
        o.hbp_task_blocks = v == 3 ? -1 : 0;
        corpus(v % 2 ? SPMV_F32 : SPMV_F64, &o);
    }
}
Test(hbp, shared_w32_f64, .timeout = 600) { shared(32, SPMV_F64); }
Test(hbp, shared_w64_f64, .timeout = 600) { shared(64, SPMV_F64); }
Test(hbp, shared_w32_f32, .timeout = 600) { shared(32, SPMV_F32); }
Test(hbp, shared_w64_f32, .timeout = 600) { shared(64, SPMV_F32); }

/* ===========================================================================================================
 * (b) option variants, each through the whole corpus
 * ========================================================================================================= */

/* Odd block sizes: many blocks, rows cut by several column blocks, long segments at W = 32 and 64. */
Test(hbp, odd_blocks)
{
    spmv_plan_options_t o = options(32, 37, 61, 0, 0);
    corpus(SPMV_F64, &o);
    o = options(64, 37, 61, 0, 0);
    corpus(SPMV_F32, &o);
}

/* 1 x 1 blocks: every entry is a segment of its own, every row of 2+ entries is combined. */
Test(hbp, unit_blocks)
{
    spmv_plan_options_t o = options(32, 1, 1, 1, 0);
    corpus(SPMV_F64, &o);
    o = options(64, 1, 1, 2, 0);
    corpus(SPMV_F32, &o);
}

/* The largest blocks: one column block up to 65535 columns, row blocks taller than most matrices. */
Test(hbp, large_blocks)
{
    spmv_plan_options_t o = options(32, 100000, 65535, 0, 0);
    corpus(SPMV_F64, &o);
    o = options(64, 3000, 20000, 0, 1);
    corpus(SPMV_F32, &o);
}

/* Blocks wider than 65536 columns: 32-bit local columns. */
Test(hbp, wide_blocks)
{
    spmv_plan_options_t o = options(32, 0, 70000, 0, 0);
    corpus(SPMV_F64, &o);
    o = options(64, 100, 100000, 2, 1);
    corpus(SPMV_F32, &o);
}

Test(hbp, combine_partials)
{
    spmv_plan_options_t o = options(32, 64, 256, 1, 0);
    corpus(SPMV_F64, &o);
    o = options(64, 0, 0, 1, 0);
    corpus(SPMV_F32, &o);
}

Test(hbp, combine_atomics)
{
    spmv_plan_options_t o = options(32, 64, 256, 2, 0);
    corpus(SPMV_F64, &o);
    o = options(64, 0, 0, 2, 0);
    corpus(SPMV_F32, &o);
}

/* 4 steps per trip (the default): the same sums (the CPU executor walks the same entries) */
Test(hbp, steps4)
{
    spmv_plan_options_t o = options(32, 0, 0, 0, 0);
    o.hbp_steps = 4;
    corpus(SPMV_F64, &o);
    o = options(64, 64, 256, 2, 0);
    o.hbp_steps = 4;
    corpus(SPMV_F32, &o);
}

/* 2 steps per trip and the residency option (hbp_ctas): the same sums; the grid follows the residency */
Test(hbp, steps2_ctas)
{
    spmv_plan_options_t o = options(32, 0, 0, 0, 0);
    o.hbp_steps = 2;
    corpus(SPMV_F64, &o);
    o.hbp_ctas = 8;
    corpus(SPMV_F32, &o);
    o = options(64, 64, 256, 2, 0);
    o.hbp_steps = 2;
    o.hbp_ctas = 6;
    corpus(SPMV_F32, &o);
    o = options(32, 0, 0, 0, 0);
    o.hbp_ctas = 6; /* 4 steps */
    corpus(SPMV_F64, &o);
    o.hbp_steps = 8;
    o.hbp_ctas = 4;
    corpus(SPMV_F64, &o);
}

Test(hbp, grouping_sort)
{
    spmv_plan_options_t o = options(32, 0, 0, 0, 1);
    corpus(SPMV_F64, &o);
    o = options(64, 128, 512, 0, 1);
    corpus(SPMV_F32, &o);
}

/* ===========================================================================================================
 * (c) layout invariants, from spmvport_format_build directly
 * ========================================================================================================= */

typedef struct {
    const spmv_matrix_t *A;
    const spmvport_format_data *fd;
    const char *name;
    int32_t *row_of;    /* CSR entry -> row */
    int32_t *row_nseg;  /* segments of each row (distinct column blocks) */
    int32_t *part_row;  /* partial -> row (combine 1) */
    int32_t *hits;      /* CSR entries seen */
    int32_t *part_hits, *row_direct;
} layout_check;

static const void *arr(const spmvport_format_data *fd, int slot) { return fd->arrays[slot].data; }

/* The row a slot writes, checking its output encoding. */
static int32_t slot_row(layout_check *c, int32_t out)
{
    const spmvport_format_data *fd = c->fd;
    if (out >= 0) {
        cr_assert(out < fd->m && c->row_nseg[out] == 1, "%s: direct output to row %d with %d segments", c->name, out,
                  out < fd->m ? c->row_nseg[out] : -1);
        c->row_direct[out]++;
        return out;
    }
    int32_t t = -1 - out;
    if (fd->params[HBP_P_COMBINE] == HBP_COMBINE_ATOMICS) {
        cr_assert(t < fd->m && c->row_nseg[t] >= 2, "%s: atomic output to row %d", c->name, t);
        return t;
    }
    cr_assert(t < fd->params[HBP_P_NPARTS], "%s: partial %d of %lld", c->name, t,
              (long long)fd->params[HBP_P_NPARTS]);
    c->part_hits[t]++;
    return c->part_row[t];
}

/* Entry e of the layout, read by the slot writing row `row`, in a task with window (xbase, lo, len). */
static void visit(layout_check *c, int32_t e, int32_t row, const int32_t *task)
{
    const spmvport_format_data *fd = c->fd;
    cr_assert(e >= 0 && e < fd->nnz, "%s: entry %d out of range", c->name, e);
    int32_t local = fd->params[HBP_P_COL_BYTES] == 2 ? ((const uint16_t *)arr(fd, HBP_A_COL))[e]
                                                     : ((const int32_t *)arr(fd, HBP_A_COL))[e];
    int32_t k = fd->value_map[e];
    if (local < 0) { /* a hot column: its index in the copy (no task is staged, one column block) */
        cr_assert(-1 - local < HBP_NHOT(fd), "%s: entry %d hot index %d of %lld", c->name, e, -1 - local,
                  (long long)HBP_NHOT(fd));
        cr_assert(task[HBP_T_XBASE] == 0 && task[HBP_T_STAGE_LEN] == 0, "%s: hot column in a staged task", c->name);
        local = ((const int32_t *)arr(fd, HBP_A_HOT))[-1 - local];
    }
    cr_assert(k >= 0 && k < fd->nnz, "%s: value_map[%d] = %d", c->name, e, k);
    c->hits[k]++;
    cr_assert_eq(c->row_of[k], row, "%s: entry %d (CSR %d) is in row %d, the layout writes row %d", c->name, e, k,
                 c->row_of[k], row);
    cr_assert_eq(task[HBP_T_XBASE] + local, c->A->col_idx[k], "%s: entry %d column %d, CSR column %d", c->name, e,
                 task[HBP_T_XBASE] + local, c->A->col_idx[k]);
    if (task[HBP_T_STAGE_LEN] > 0)
        cr_assert(local >= task[HBP_T_STAGE_LO] && local < task[HBP_T_STAGE_LO] + task[HBP_T_STAGE_LEN],
                  "%s: column %d outside the staged window", c->name, local);
    size_t vs = spmvport_value_size(fd->precision);
    cr_assert(memcmp((const char *)arr(fd, HBP_A_VAL) + (size_t)e * vs, (const char *)c->A->values + (size_t)k * vs,
                     vs) == 0, "%s: value of entry %d is not CSR value %d", c->name, e, k);
}

/* Walk every unit as the executor does and check each entry belongs where the layout says. */
static void walk_units(layout_check *c)
{
    const spmvport_format_data *fd = c->fd;
    const int32_t *unit_ptr = arr(fd, HBP_A_UNIT_PTR), *unit_slot = arr(fd, HBP_A_UNIT_SLOT);
    const int32_t *unit_info = arr(fd, HBP_A_UNIT_INFO), *wide_out = arr(fd, HBP_A_WIDE_OUT);
    const int32_t *task = arr(fd, HBP_A_TASK);
    const uint16_t *seg_len = arr(fd, HBP_A_SEG_LEN), *seg_out = arr(fd, HBP_A_SEG_OUT);
    const int32_t ntasks = (int32_t)fd->params[HBP_P_NTASKS], nunits = (int32_t)fd->params[HBP_P_NUNITS];
    const int64_t nwide = (int64_t)(fd->arrays[HBP_A_WIDE_OUT].bytes / sizeof(int32_t));
    int32_t next_unit = 0;
    int64_t wide_next = 0; /* wide units take wide_out in unit order */
    for (int32_t t = 0; t < ntasks; t++) {
        const int32_t *rec = task + (size_t)t * HBP_TASK_INTS;
        cr_assert(rec[HBP_T_UNIT_BEGIN] == next_unit && rec[HBP_T_UNIT_END] > rec[HBP_T_UNIT_BEGIN],
                  "%s: task %d covers units [%d, %d), expected to start at %d", c->name, t, rec[HBP_T_UNIT_BEGIN],
                  rec[HBP_T_UNIT_END], next_unit);
        cr_assert(rec[HBP_T_STAGE_LEN] <= fd->params[HBP_P_STAGE_COLS], "%s: window longer than stage_cols", c->name);
        /* staged y: at most the plan's longest range, not beside a staged window, and every direct output of
         * the task's warp groups in the range (below) */
        const int32_t ylo = rec[HBP_T_Y_LO], ylen = rec[HBP_T_Y_LEN];
        cr_assert(ylen >= 0 && ylen <= fd->params[HBP_P_Y_ROWS] && (ylen == 0 || rec[HBP_T_STAGE_LEN] == 0) &&
                      (ylen > 0 || ylo == 0) && ylo >= 0 && (int64_t)ylo + ylen <= c->A->m,
                  "%s: task %d stages y [%d, +%d) (longest %lld, x window %d)", c->name, t, ylo, ylen,
                  (long long)fd->params[HBP_P_Y_ROWS], rec[HBP_T_STAGE_LEN]);
        next_unit = rec[HBP_T_UNIT_END];
        for (int32_t u = rec[HBP_T_UNIT_BEGIN]; u < rec[HBP_T_UNIT_END]; u++) {
            int32_t s0 = unit_slot[u], lanes = unit_slot[u + 1] - s0, p = unit_ptr[u], total = 0;
            cr_assert(lanes >= 1 && lanes <= fd->warp_size, "%s: unit %d has %d slots", c->name, u, lanes);
            int32_t rows[64], len[64] = {0}, outs[64], lo = INT32_MAX, hi = -1, same = 1;
            const int32_t *head = unit_info + (size_t)u * HBP_UNIT_INFO_INTS;
            const int32_t base = head[HBP_U_OUT], common = HBP_SHAPE_LEN(head[HBP_U_SHAPE]);
            cr_assert(head[HBP_U_PTR] == p && head[HBP_U_SLOT] == s0 && HBP_SHAPE_LANES(head[HBP_U_SHAPE]) == lanes,
                      "%s: unit %d's header (%d, %d, %d) is not unit_ptr, unit_slot (%d, %d, %d)", c->name, u,
                      head[HBP_U_PTR], head[HBP_U_SLOT], HBP_SHAPE_LANES(head[HBP_U_SHAPE]), p, s0, lanes);
            if (base < 0) { /* wide: its outputs next in wide_out */
                cr_assert(-1 - base == wide_next && wide_next + lanes <= nwide, "%s: unit %d's wide outputs at %d, "
                          "expected %lld of %lld", c->name, u, -1 - base, (long long)wide_next, (long long)nwide);
                wide_next += lanes;
            }
            for (int32_t l = 0; l < lanes; l++) {
                len[l] = seg_len[s0 + l];
                cr_assert(len[l] >= 1 && len[l] <= fd->params[HBP_P_MAX_SEG], "%s: segment of %d entries in slot %d", c->name, len[l],
                      s0 + l);
                same &= len[l] == len[0];
                outs[l] = hbp_slot_output(unit_info, seg_out, wide_out, u, s0, s0 + l);
                cr_assert(base < 0 ? seg_out[s0 + l] == 0 : outs[l] == base + seg_out[s0 + l],
                          "%s: slot %d of unit %d: 16-bit output %d with base %d", c->name, s0 + l, u,
                          seg_out[s0 + l], base);
                cr_assert_eq(hbp_slot_len(unit_info, seg_len, u, s0 + l), len[l], "%s: slot %d", c->name, s0 + l);
                if (outs[l] < lo) lo = outs[l];
                if (outs[l] > hi) hi = outs[l];
                if (ylen > 0 && outs[l] >= 0 && lanes > 1) /* a group's direct row (long units store theirs) */
                    cr_assert(outs[l] >= ylo && outs[l] < ylo + ylen, "%s: task %d writes row %d outside its staged y "
                              "[%d, %d)", c->name, t, outs[l], ylo, ylo + ylen);
                rows[l] = slot_row(c, outs[l]);
                total += len[l];
            }
            /* the header's length exactly when the slots agree (the kernel's ballot-free path), and narrow
             * outputs exactly when every slot writes its row and the rows fit 16-bit offsets from the smallest */
            cr_assert_eq(common, same ? len[0] : -1, "%s: unit %d's common length", c->name, u);
            cr_assert_eq(base >= 0, lo >= 0 && (int64_t)hi - lo <= HBP_NARROW_ROWS, "%s: unit %d narrow=%d, outputs "
                         "%d..%d", c->name, u, base >= 0, lo, hi);
            cr_assert(base < 0 || base == lo, "%s: unit %d's base row %d, smallest %d", c->name, u, base, lo);
            cr_assert_eq(unit_ptr[u + 1] - unit_ptr[u], total, "%s: unit %d holds %d entries, its slots %d", c->name,
                         u, unit_ptr[u + 1] - unit_ptr[u], total);
            if (lanes == 1) { /* a warp-strided unit: its entries in order */
                for (int32_t j = 0; j < len[0]; j++) visit(c, p + j, rows[0], rec);
                continue;
            }
            for (int32_t step = 0;; step++) { /* a group: column-major, lanes in order */
                int32_t active = 0;
                for (int32_t l = 0; l < lanes; l++)
                    if (len[l] > step) visit(c, p + active++, rows[l], rec);
                if (active == 0) break;
                p += active;
            }
        }
    }
    cr_assert_eq(next_unit, nunits, "%s: tasks cover %d of %d units", c->name, next_unit, nunits);
    cr_assert_eq(wide_next, nwide, "%s: wide units hold %lld of %lld wide outputs", c->name, (long long)wide_next,
                 (long long)nwide);
}

static void check_layout(const spmv_matrix_t *A, const spmvport_format_data *fd, const char *name)
{
    const int64_t *prm = fd->params;
    const size_t vs = spmvport_value_size(fd->precision);
    const int32_t nfix = (int32_t)prm[HBP_P_NFIX], nparts = (int32_t)prm[HBP_P_NPARTS];
    const int combine = (int)prm[HBP_P_COMBINE];
    cr_assert_eq(fd->narrays, HBP_NARRAYS, "%s", name);
    cr_assert(hbp_ctas_compiled((int)prm[HBP_P_STEPS], (int)prm[HBP_P_CTAS]), "%s: %lld blocks per SM at %lld steps",
              name, (long long)prm[HBP_P_CTAS], (long long)prm[HBP_P_STEPS]);
    const int64_t C64 = prm[HBP_P_BLOCK_COLS];
    /* wider blocks store 32-bit columns, or 16-bit ones relative to each task when every task spans < 65536 */
    cr_assert(prm[HBP_P_COL_BYTES] == 2 || (prm[HBP_P_COL_BYTES] == 4 && C64 > HBP_NARROW_COLS),
              "%s: col_bytes %lld for %lld columns", name, (long long)prm[HBP_P_COL_BYTES], (long long)C64);
    const size_t expect[HBP_NARRAYS] = {
        (size_t)A->nnz * (size_t)prm[HBP_P_COL_BYTES], (size_t)A->nnz * vs, ((size_t)prm[HBP_P_NUNITS] + 1) * 4,
        ((size_t)prm[HBP_P_NUNITS] + 1) * 4, (size_t)prm[HBP_P_NSLOTS] * 2, (size_t)prm[HBP_P_NSLOTS] * 2,
        (size_t)prm[HBP_P_NTASKS] * HBP_TASK_INTS * 4, (size_t)nfix * 4,
        combine == HBP_COMBINE_PARTIALS ? ((size_t)nfix + 1) * 4 : 0, (size_t)nparts * vs, 8,
        (size_t)HBP_NHOT(fd) * 4, combine == HBP_COMBINE_PARTIALS ? (size_t)nparts * 4 : 0,
        combine == HBP_COMBINE_PARTIALS ? (size_t)(nfix - prm[HBP_P_NEMPTY]) * 4 : 0,
        (size_t)prm[HBP_P_NUNITS] * HBP_UNIT_INFO_INTS * 4, fd->arrays[HBP_A_WIDE_OUT].bytes /* walk_units: exact */,
        strstr(fd->stats, "hot_copy=global") ? (size_t)HBP_NHOT(fd) * vs : 0};
    cr_assert(HBP_NHOT(fd) == 0 || (prm[HBP_P_COL_BYTES] == 4 && prm[HBP_P_STAGE_COLS] == 0 && C64 >= A->n),
              "%s: hot columns in a layout that stages x or has several column blocks", name);
    for (int a = 0; a < HBP_NARRAYS; a++) {
        cr_assert_eq(fd->arrays[a].bytes, expect[a], "%s: array %s has %zu bytes, expected %zu", name,
                     fd->arrays[a].name, fd->arrays[a].bytes, expect[a]);
        cr_assert_eq(fd->arrays[a].is_values, a == HBP_A_VAL, "%s: array %s is_values", name, fd->arrays[a].name);
    }
    cr_assert_eq(fd->value_slots, A->nnz, "%s", name);
    cr_assert(fd->value_map != NULL, "%s", name);
    cr_assert(prm[HBP_P_STAGE_COLS] * (int64_t)vs <= 49152 - 256, "%s: window of %lld values", name,
              (long long)prm[HBP_P_STAGE_COLS]);
    cr_assert(HBP_Y_STAGE_BYTES(prm[HBP_P_Y_ROWS], vs) <= HBP_SMEM_DYNAMIC_MAX &&
                  (prm[HBP_P_Y_ROWS] == 0 || HBP_NHOT(fd) == 0 || HBP_HOT_GLOBAL(fd)),
              "%s: staged y of %lld rows (%lld hot columns)", name, (long long)prm[HBP_P_Y_ROWS],
              (long long)HBP_NHOT(fd));
    cr_assert(combine == HBP_COMBINE_PARTIALS || combine == HBP_COMBINE_ATOMICS, "%s", name);
    const int32_t *sched = arr(fd, HBP_A_SCHED);
    cr_assert(sched[0] == 0 && sched[1] == 0, "%s: ticket not zero", name);
    cr_assert(prm[HBP_P_TASK_BLOCKS] == 0 ||
                  (prm[HBP_P_TASK_BLOCKS] == 1 && prm[HBP_P_NTASKS] > prm[HBP_P_GRID] &&
                   (HBP_NHOT(fd) == 0 || HBP_HOT_GLOBAL(fd))),
              "%s: a block per task with %lld tasks, grid %lld, %lld hot columns", name,
              (long long)prm[HBP_P_NTASKS], (long long)prm[HBP_P_GRID], (long long)HBP_NHOT(fd));

    layout_check c = {A, fd, name, NULL, NULL, NULL, NULL, NULL, NULL};
    c.row_of = malloc(((size_t)A->nnz + 1) * sizeof(int32_t));
    c.row_nseg = calloc((size_t)A->m + 1, sizeof(int32_t));
    c.part_row = malloc(((size_t)nparts + 1) * sizeof(int32_t));
    c.hits = calloc((size_t)A->nnz + 1, sizeof(int32_t));
    c.part_hits = calloc((size_t)nparts + 1, sizeof(int32_t));
    c.row_direct = calloc((size_t)A->m + 1, sizeof(int32_t));
    cr_assert(c.row_of && c.row_nseg && c.part_row && c.hits && c.part_hits && c.row_direct);
    const int32_t C = (int32_t)prm[HBP_P_BLOCK_COLS];
    const int32_t trip = (int32_t)prm[HBP_P_STEPS] * fd->warp_size; /* a long unit's entries per trip */
    const int32_t max_seg = (int32_t)prm[HBP_P_MAX_SEG];
    cr_assert(max_seg == HBP_MAX_SEG || (max_seg % trip == 0 && max_seg < HBP_MAX_SEG), "%s: segments cut every %d",
              name, max_seg);
    for (int32_t r = 0; r < A->m; r++)
        for (int32_t k = A->row_ptr[r], e; k < A->row_ptr[r + 1]; k = e) {
            /* a run of the row in one column block: pieces of max_seg, then (split tails) the rest as whole
             * trips plus a tail of fewer than 4 W entries, else the rest whole */
            for (e = k; e < A->row_ptr[r + 1] && A->col_idx[e] / C == A->col_idx[k] / C; e++) c.row_of[e] = r;
            for (int32_t left = e - k; left > 0; c.row_nseg[r]++) {
                int32_t tail = left % trip;
                left -= left > max_seg ? max_seg
                        : prm[HBP_P_SPLIT_TAILS] && left > trip && tail > 0 && tail < 4 * fd->warp_size ? left - tail
                                                                                                      : left;
            }
        }

    int combined = 0; /* some row has >= 2 segments: atomics would run */
    for (int32_t r = 0; r < A->m; r++) combined |= c.row_nseg[r] >= 2;
    cr_assert_eq(fd->deterministic, combine == HBP_COMBINE_PARTIALS || !combined, "%s: deterministic flag", name);

    /* fix rows: exactly the rows with 0 segments (the first nempty, which the kernel writes), then those with
     * >= 2, each part ascending; their partials in ranges */
    const int32_t *fix = arr(fd, HBP_A_FIX_ROW), *part_ptr = arr(fd, HBP_A_PART_PTR);
    int32_t f = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            cr_assert_eq(prm[HBP_P_NEMPTY], f, "%s: %lld empty rows in the parameters, %d in the matrix", name,
                         (long long)prm[HBP_P_NEMPTY], f);
        for (int32_t r = 0; r < A->m; r++)
            if (c.row_nseg[r] != 1 && (c.row_nseg[r] == 0) == (pass == 0)) {
                cr_assert(f < nfix && fix[f] == r, "%s: fix row %d should be row %d", name, f, r);
                if (combine == HBP_COMBINE_PARTIALS) {
                    cr_assert_eq(part_ptr[f + 1] - part_ptr[f], c.row_nseg[r], "%s: row %d partials", name, r);
                    for (int32_t t = part_ptr[f]; t < part_ptr[f + 1]; t++) {
                        c.part_row[t] = r;
                        cr_assert_eq(((const int32_t *)arr(fd, HBP_A_PART_FIX))[t], f, "%s: partial %d's fix row",
                                     name, t);
                    }
                }
                f++;
            }
    }
    cr_assert_eq(f, nfix, "%s: %d fix rows listed, %d expected", name, nfix, f);
    for (int32_t k = 0; combine == HBP_COMBINE_PARTIALS && k < nfix - prm[HBP_P_NEMPTY]; k++)
        cr_assert_eq(((const int32_t *)arr(fd, HBP_A_FIX_COUNT))[k], 0, "%s: fix row count %d not zero", name, k);
    if (combine == HBP_COMBINE_PARTIALS) cr_assert(part_ptr[0] == 0 && part_ptr[nfix] == nparts, "%s", name);

    walk_units(&c);
    for (int32_t k = 0; k < A->nnz; k++) cr_assert_eq(c.hits[k], 1, "%s: CSR entry %d stored %d times", name, k, c.hits[k]);
    for (int32_t t = 0; t < nparts; t++) cr_assert_eq(c.part_hits[t], 1, "%s: partial %d written %d times", name, t,
                                                      c.part_hits[t]);
    for (int32_t r = 0; r < A->m; r++)
        cr_assert_eq(c.row_direct[r], c.row_nseg[r] == 1, "%s: row %d written directly %d times", name, r,
                     c.row_direct[r]);
    free(c.row_of); free(c.row_nseg); free(c.part_row); free(c.hits); free(c.part_hits); free(c.row_direct);
}

static void layouts(int warp, spmv_precision_t p, const spmv_plan_options_t *opt)
{
    spmv_device_info_t dev;
    memset(&dev, 0, sizeof dev);
    dev.backend = SPMV_BACKEND_CPU;
    support_case *cases;
    int n = support_edge_corpus(p, &cases);
    for (int i = 0; i < n; i++) {
        spmvport_format_data fd;
        char msg[SPMVPORT_MSG_LEN] = "";
        spmv_status_t st = spmvport_format_build(&fd, cases[i].A, SPMV_FORMAT_HBP, warp, &dev, opt, msg, sizeof msg);
        cr_assert_eq(st, SPMV_STATUS_SUCCESS, "%s: %s", cases[i].name, msg);
        check_layout(cases[i].A, &fd, cases[i].name);
        spmvport_format_data_free(&fd);
    }
    support_cases_free(cases, n);
}

Test(hbp_layout, default_w32_f64) { spmv_plan_options_t o = options(0, 0, 0, 0, 0); layouts(32, SPMV_F64, &o); }
Test(hbp_layout, default_w64_f32) { spmv_plan_options_t o = options(0, 0, 0, 0, 0); layouts(64, SPMV_F32, &o); }
Test(hbp_layout, odd_blocks_partials)
{
    spmv_plan_options_t o = options(0, 37, 61, 1, 0);
    layouts(32, SPMV_F64, &o);
    layouts(64, SPMV_F64, &o);
}
Test(hbp_layout, odd_blocks_atomics_sort)
{
    spmv_plan_options_t o = options(0, 37, 61, 2, 1);
    layouts(32, SPMV_F32, &o);
    layouts(64, SPMV_F32, &o);
}
Test(hbp_layout, tails_kept_steps8)
{
    spmv_plan_options_t o = options(0, 0, 0, 0, 0);
    o.hbp_tails = 2;
    layouts(32, SPMV_F64, &o);
    o.hbp_tails = 0;
    o.hbp_steps = 8;
    layouts(64, SPMV_F32, &o);
}
Test(hbp_layout, steps2_ctas8)
{
    spmv_plan_options_t o = options(0, 0, 0, 0, 0);
    o.hbp_steps = 2;
    o.hbp_ctas = 8;
    layouts(32, SPMV_F64, &o);
    layouts(64, SPMV_F32, &o);
}
Test(hbp_layout, hot_columns)
{
    spmv_plan_options_t o = options(0, 0, 70000, 0, 0);
    o.hbp_hot = -1;
    layouts(32, SPMV_F64, &o);
    o.hbp_hot = 3;
    layouts(64, SPMV_F32, &o);
}
/* the global copy: any count (past the shared memory's 6112 / 12224 too), the columns ascending */
Test(hbp_layout, hot_columns_global)
{
    spmv_plan_options_t o = options(0, 0, 70000, 0, 0);
    o.hbp_hot_copy = 2;
    o.hbp_hot = -1;
    layouts(32, SPMV_F64, &o);
    o.hbp_hot = 3;
    layouts(64, SPMV_F32, &o);
    o.hbp_hot = 100000;
    layouts(32, SPMV_F32, &o);
}
Test(hbp_layout, unit_trips)
{
    spmv_plan_options_t o = options(0, 0, 0, 0, 0);
    o.hbp_unit_trips = -1;
    layouts(32, SPMV_F64, &o);
    o.hbp_tails = 2;
    layouts(64, SPMV_F32, &o);
    o.hbp_tails = 0;
    o.hbp_unit_trips = 3; /* segments cut every 3 S W entries: not a power of two */
    layouts(32, SPMV_F32, &o);
    o.hbp_steps = 8;
    layouts(64, SPMV_F64, &o);
}
Test(hbp_layout, position_order)
{
    spmv_plan_options_t o = options(0, 0, 0, 0, 0);
    o.hbp_order = 1;
    layouts(32, SPMV_F64, &o);
    layouts(64, SPMV_F32, &o);
    o = options(0, 37, 61, 1, 1); /* sort2D, several column blocks */
    o.hbp_order = 1;
    layouts(32, SPMV_F32, &o);
}
/* staged y (hbp_y_stage = 1): tasks stage the rows of their groups' row blocks; odd heights, both combines, sort2D,
 * the global hot copy; several column blocks take none */
Test(hbp_layout, y_stage)
{
    spmv_plan_options_t o = options(0, 0, 0, 0, 0);
    o.hbp_y_stage = 1;
    layouts(32, SPMV_F64, &o);
    layouts(64, SPMV_F32, &o);
    o = options(0, 37, 0, 2, 1);
    o.hbp_y_stage = 1;
    layouts(32, SPMV_F32, &o);
    o = options(0, 0, 70000, 1, 0);
    o.hbp_y_stage = 1;
    o.hbp_hot_copy = 2;
    o.hbp_hot = -1;
    layouts(64, SPMV_F64, &o);
    o = options(0, 37, 61, 0, 0);
    o.hbp_y_stage = 1;
    layouts(32, SPMV_F64, &o);
}
Test(hbp_layout, wide_blocks) { spmv_plan_options_t o = options(0, 0, 70000, 0, 0); layouts(32, SPMV_F64, &o); }
Test(hbp_layout, unit_blocks) { spmv_plan_options_t o = options(0, 1, 1, 0, 0); layouts(32, SPMV_F64, &o); }

/* device_bytes of a plan = the sum of the format's arrays but the host-only unit_ptr and unit_slot (no kernel reads
 * them), as the layout check expects them */
Test(hbp_layout, bytes_accounted)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("circuit:20000", SPMV_F64);
    spmv_plan_t *plan;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_HBP, NULL), SPMV_STATUS_SUCCESS, "%s",
                 spmv_last_error(ctx));
    spmv_plan_info_t info;
    spmv_plan_get_info(plan, &info);
    size_t sum = 0;
    for (int a = 0; a < plan->fd.narrays; a++) {
        const int host = a == HBP_A_UNIT_PTR || a == HBP_A_UNIT_SLOT;
        cr_assert_eq(plan->fd.arrays[a].host_only, host, "array %s", plan->fd.arrays[a].name);
        if (!host) sum += plan->fd.arrays[a].bytes;
    }
    cr_assert_gt(plan->fd.arrays[HBP_A_UNIT_PTR].bytes, 0);
    cr_assert_eq(info.device_bytes, sum);
    check_layout(A, &plan->fd, "circuit:20000 plan");
    cr_assert(fabs(stat(info.stats, "bytes_per_nnz") - (double)sum / info.nnz) < 0.01, "%s", info.stats);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* ===========================================================================================================
 * (d) update_values: the plan with new values gives what a plan of the new matrix gives
 * ========================================================================================================= */

static void check_update(spmv_context_t *ctx, const spmv_matrix_t *A, const spmv_matrix_t *A2, const void *values2,
                         const spmv_plan_options_t *opt, const char *name)
{
    spmv_plan_t *plan;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_HBP, opt), SPMV_STATUS_SUCCESS, "%s",
                 spmv_last_error(ctx));
    cr_assert_eq(spmv_plan_update_values(plan, values2), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    support_check_plan_against(ctx, plan, A2, name);
    spmv_plan_destroy(plan);
}

Test(hbp, update_values)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const char *specs[] = {"kron:10:8", "circuit:5000", "lp:300:900:7"};
    for (int s = 0; s < 3; s++)
        for (int prec = 0; prec < 2; prec++) {
            spmv_precision_t p = prec ? SPMV_F32 : SPMV_F64;
            spmv_matrix_t *A = generate(specs[s], p), *A2 = NULL;
            int32_t m, n, nnz;
            const int32_t *ptr, *col;
            const void *val;
            spmv_matrix_get_size(A, &m, &n, &nnz, NULL);
            spmv_matrix_get_csr(A, &ptr, &col, &val);
            void *v2 = malloc((p == SPMV_F32 ? sizeof(float) : sizeof(double)) * ((size_t)nnz + 1));
            support_random_vector(v2, nnz, p, 5 + (uint64_t)s);
            cr_assert_eq(spmv_matrix_create_csr(&A2, m, n, nnz, ptr, col, v2, p, 0, 0), SPMV_STATUS_SUCCESS);
            spmv_plan_options_t o = options(0, 64, 128, 1, 0);
            check_update(ctx, A, A2, v2, &o, specs[s]);
            o = options(64, 0, 0, 2, 1);
            check_update(ctx, A, A2, v2, &o, specs[s]);
            free(v2);
            spmv_matrix_destroy(A);
            spmv_matrix_destroy(A2);
        }
    spmv_context_destroy(ctx);
}

/* A matrix made from unsorted, repeated entries: update_values takes the creator's order and sums repeats. */
Test(hbp, update_values_duplicates)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const int32_t ptr[] = {0, 3, 3, 7, 9};
    const int32_t col[] = {5, 1, 5, 0, 9, 0, 3, 2, 2};
    const double v1[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, v2[] = {-1, 0.5, 2, 3, -4, 1, 0.25, 8, -2};
    spmv_matrix_t *A, *A2;
    unsigned flags = SPMV_MATRIX_SUM_DUPLICATES;
    cr_assert_eq(spmv_matrix_create_csr(&A, 4, 10, 9, ptr, col, v1, SPMV_F64, 0, flags), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_create_csr(&A2, 4, 10, 9, ptr, col, v2, SPMV_F64, 0, flags), SPMV_STATUS_SUCCESS);
    spmv_plan_options_t o = options(32, 2, 3, 0, 0);
    check_update(ctx, A, A2, v2, &o, "duplicates");
    spmv_matrix_destroy(A);
    spmv_matrix_destroy(A2);
    spmv_context_destroy(ctx);
}

/* ===========================================================================================================
 * (e) statistics, options, determinism, the ticket reset
 * ========================================================================================================= */

static spmv_plan_t *plan_of(spmv_context_t *ctx, const spmv_matrix_t *A, const spmv_plan_options_t *o)
{
    spmv_plan_t *plan = NULL;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_HBP, o), SPMV_STATUS_SUCCESS, "%s",
                 spmv_last_error(ctx));
    return plan;
}

/* The info of a plan built with these options (the plan itself is destroyed; the stats are a copy). */
static spmv_plan_info_t info_of(spmv_context_t *ctx, const spmv_matrix_t *A, const spmv_plan_options_t *o)
{
    spmv_plan_t *plan = plan_of(ctx, A, o);
    spmv_plan_info_t info;
    spmv_plan_get_info(plan, &info);
    spmv_plan_destroy(plan);
    return info;
}

/* Hot columns (hbp_hot): on a power-law graph with 32-bit columns (n > 65536) the most read columns go to the
 * shared-memory copy; the executor reads them only through it (NaN past it) and matches the oracle. */
Test(hbp, hot_columns, .timeout = 600)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const int want[] = {-1, 100, -1};
    const int warp[] = {32, 64, 32};
    for (int i = 0; i < 3; i++) {
        const spmv_precision_t p = i == 2 ? SPMV_F32 : SPMV_F64;
        spmv_matrix_t *A = generate("kron:17:16", p);
        spmv_plan_options_t o = options(warp[i], 0, 131072, i == 1 ? 2 : 0, 0); /* one column block */
        o.hbp_hot = want[i];
        support_check_format(ctx, SPMV_FORMAT_HBP, &o, "kron:17:16 hot", A, 0);
        spmv_plan_t *plan = plan_of(ctx, A, &o);
        spmv_plan_info_t info;
        spmv_plan_get_info(plan, &info);
        const double hot = stat(info.stats, "hot");
        cr_assert(hot > 0 && hot <= (want[i] > 0 ? want[i] : HBP_SMEM_DYNAMIC_MAX / (p == SPMV_F32 ? 4 : 8)), "%s",
                  info.stats);
        cr_assert_eq(stat(info.stats, "col_bytes"), 4, "%s", info.stats);
        check_layout(A, &plan->fd, "kron:17:16 hot");
        spmv_plan_destroy(plan);
        spmv_matrix_destroy(A);
    }
    /* automatic, in shared memory (hbp_hot_copy = 1): taken on the power-law graph (the hot columns hold over a
     * third of its entries), not on a circuit (a few dense columns only) and never with hbp_hot = -2; the steps
     * per trip follow. Automatic copy (0): the global one on a graph of 4M entries or more (csr_lb's rule), at 4
     * steps (kron:19:8, planned only); kron:17:2 (0.26M entries) and kron:17:16 (3.7M, both under
     * HBP_HOT_GLOBAL_MIN_NNZ) and kron:19:8 with hbp_hot = 100 keep the shared one. */
    const char *gens[] = {"kron:17:16", "circuit:200000", "kron:17:16", "kron:19:8", "kron:17:2", "kron:19:8",
                          "kron:17:16"};
    const int copy[] = {1, 1, 1, 0, 0, 0, 0}, hot[] = {0, 0, -2, 0, 0, 100, 0};
    const char *where[] = {"shared", "none", "none", "global", "none", "shared", "shared"};
    for (int i = 0; i < 7; i++) {
        spmv_matrix_t *A = generate(gens[i], SPMV_F64);
        spmv_plan_options_t o = options(0, 0, 1 << 20, 0, 0); /* one column block */
        o.hbp_hot = hot[i];
        o.hbp_hot_copy = copy[i];
        const spmv_plan_info_t info = info_of(ctx, A, &o);
        cr_assert_eq(stat(info.stats, "col_bytes"), 4, "%s: %s", gens[i], info.stats);
        char want[32];
        snprintf(want, sizeof want, "hot_copy=%s;", where[i]);
        cr_assert(strstr(info.stats, want), "%s: %s expected: %s", gens[i], want, info.stats);
        if (i == 0 || i == 3 || i == 5 || i == 6) cr_assert(stat(info.stats, "hot") > 0, "%s: %s", gens[i], info.stats);
        else cr_assert_eq(stat(info.stats, "hot"), 0, "%s: %s", gens[i], info.stats);
        if (i == 3) cr_assert_eq(stat(info.stats, "hot"), 8192, "%s: %s", gens[i], info.stats);
        /* and a graph that takes them in shared memory runs 8 steps per trip (automatic steps), the others 4 */
        cr_assert_eq(stat(info.stats, "steps"), i == 0 || i == 6 ? 8 : 4, "%s: %s", gens[i], info.stats);
        if (A->nnz < 6000000) support_check_format(ctx, SPMV_FORMAT_HBP, &o, gens[i], A, 0);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

/* The global hot copy (hbp_hot_copy = 2): its automatic rule is csr_lb's (64 KiB of the most read columns where
 * they hold a quarter of the entries: kron:17:16 yes, a circuit no); no shared memory, so the grid is the one
 * without a copy, and a thread block per task is allowed (no block copies anything); executes match the oracle. */
Test(hbp, hot_columns_global, .timeout = 600)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const char *gens[] = {"kron:17:16", "kron:17:16", "circuit:200000"};
    const spmv_precision_t prec[] = {SPMV_F64, SPMV_F32, SPMV_F64};
    for (int i = 0; i < 3; i++) {
        spmv_matrix_t *A = generate(gens[i], prec[i]);
        spmv_plan_options_t o = options(i == 1 ? 64 : 32, 0, 1 << 20, 0, 0); /* one column block */
        o.hbp_hot_copy = 2;
        spmv_plan_t *plan = plan_of(ctx, A, &o);
        spmv_plan_info_t info;
        spmv_plan_get_info(plan, &info);
        const double expect = i == 2 ? 0 : 65536 / (prec[i] == SPMV_F32 ? 4 : 8);
        cr_assert_eq(stat(info.stats, "hot"), expect, "%s: %s", gens[i], info.stats);
        cr_assert(strstr(info.stats, i == 2 ? "hot_copy=none" : "hot_copy=global"), "%s", info.stats);
        const int32_t *hot = plan->fd.arrays[HBP_A_HOT].data;
        for (int64_t k = 1; k < HBP_NHOT(&plan->fd); k++)
            cr_assert_lt(hot[k - 1], hot[k], "%s: hot columns not ascending at %lld", gens[i], (long long)k);
        check_layout(A, &plan->fd, gens[i]);
        spmv_plan_destroy(plan);
        support_check_format(ctx, SPMV_FORMAT_HBP, &o, gens[i], A, 0);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

/* A density-chosen cut plan of 4 or more column blocks and 2M entries or more becomes one column block when the
 * automatic rule takes the global copy: kron:19:16 in f32 is cut into 8 blocks of 65536 columns with the shared
 * copy's rule, one block with the automatic one, and its unit cap is then 16; kron:18:8 (3.9M entries, under the
 * one-block floor of 4M) is cut into 4 and taken whole too; kron:17:16 (2 blocks) keeps its cut. The plans only
 * (the executes of such layouts: hot_columns_global). */
Test(hbp, hot_columns_uncut, .timeout = 600)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    /* cut: the column blocks with the shared copy (hbp_hot_copy = 1); whole: one block with the automatic rule */
    const struct {
        const char *gen;
        spmv_precision_t precision;
        int cut, whole;
    } cases[] = {{"kron:19:16", SPMV_F32, 8, 1}, {"kron:18:8", SPMV_F64, 4, 1}, {"kron:17:16", SPMV_F64, 2, 0}};
    for (int i = 0; i < 3; i++) {
        spmv_matrix_t *A = generate(cases[i].gen, cases[i].precision);
        for (int copy = 0; copy < 2; copy++) {
            spmv_plan_options_t o = options(0, 0, 0, 0, 0);
            o.hbp_hot_copy = copy;
            const spmv_plan_info_t info = info_of(ctx, A, &o);
            const int whole = copy == 0 && cases[i].whole;
            cr_assert_eq(stat(info.stats, "col_blocks"), whole ? 1 : cases[i].cut, "%s: %s", cases[i].gen,
                         info.stats);
            cr_assert(strstr(info.stats, whole ? "hot_copy=global;" : "hot_copy=none;"), "%s: %s", cases[i].gen,
                      info.stats);
            if (i > 0) continue;
            cr_assert(strstr(info.stats, copy ? "hot=0;hot_copy=none;" : "hot=16384;hot_copy=global;"), "%s",
                      info.stats);
            /* the global copy's plans cap units at 16 trips where the unit-cap rules give none */
            cr_assert_eq(stat(info.stats, "unit_trips"), copy ? 0 : 16, "%s", info.stats);
        }
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

/* The grid is planned for the residency asked for: kron's tasks are not staged, so multiprocessors x ctas */
Test(hbp, ctas_grid)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("kron:14:16", SPMV_F64);
    const int steps[] = {4, 4, 2, 8}, ctas[] = {0, 6, 8, 3}, expect[] = {3, 6, 8, 3};
    double grid1 = 0;
    for (int i = 0; i < 4; i++) {
        spmv_plan_options_t o = options(0, 0, 0, 0, 0);
        o.hbp_steps = steps[i];
        o.hbp_ctas = ctas[i];
        const spmv_plan_info_t info = info_of(ctx, A, &o);
        cr_assert_eq(stat(info.stats, "ctas"), expect[i], "%s", info.stats);
        cr_assert_eq(stat(info.stats, "staged_tasks"), 0, "%s", info.stats);
        if (i == 0) grid1 = stat(info.stats, "grid") / expect[0];
        cr_assert_eq(stat(info.stats, "grid"), grid1 * expect[i], "%s", info.stats);
    }
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

Test(hbp, stats_keys)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("kron:14:16", SPMV_F64);
    const char *keys[] = {"grouping", "block_rows", "block_cols", "row_blocks", "col_blocks", "blocks", "units",
                          "col_bytes",
                          "tasks", "combine", "a", "b", "c", "d", "std_before", "std_after", "hash_ms", "sort_ms",
                          "bytes_per_nnz", "steps"};
    for (int grouping = 0; grouping < 2; grouping++) {
        spmv_plan_options_t o = options(0, 0, 0, 0, grouping);
        spmv_plan_t *plan = plan_of(ctx, A, &o);
        spmv_plan_info_t info;
        spmv_plan_get_info(plan, &info);
        cr_assert_eq(info.format, SPMV_FORMAT_HBP);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (strcmp(keys[k], "grouping") && strcmp(keys[k], "combine"))
                cr_assert(!isnan(stat(info.stats, keys[k])), "key %s missing from \"%s\"", keys[k], info.stats);
        cr_assert(strstr(info.stats, grouping ? "grouping=sort" : "grouping=hash"), "%s", info.stats);
        cr_assert(strstr(info.stats, "combine="), "%s", info.stats);
        /* one column block on a power-law graph: the grouping's scope grows past 512 rows (fewer group trips) */
        cr_assert(stat(info.stats, "block_rows") >= 1024 && stat(info.stats, "block_rows") <= 8192, "%s", info.stats);
        /* a random graph: any cut of its rows costs more than it saves, so one column block */
        cr_assert_eq(stat(info.stats, "block_cols"), 16384, "%s", info.stats);
        cr_assert_eq(stat(info.stats, "col_blocks"), 1, "%s", info.stats);
        cr_assert(stat(info.stats, "hash_ms") >= 0, "%s", info.stats);
        cr_assert(grouping ? stat(info.stats, "sort_ms") >= 0 : stat(info.stats, "sort_ms") < 0, "%s", info.stats);
        /* on a power-law graph the hash groups rows of like length: the per-warp spread drops */
        cr_assert(stat(info.stats, "std_after") < stat(info.stats, "std_before"), "%s", info.stats);
        spmv_plan_destroy(plan);
    }
    spmv_matrix_destroy(A);
    A = generate("stencil2d:5:40", SPMV_F32);
    spmv_plan_t *plan = plan_of(ctx, A, NULL);
    spmv_plan_info_t info;
    spmv_plan_get_info(plan, &info);
    cr_assert_eq(stat(info.stats, "block_cols"), 8192, "f32 on 48 KiB: at least 8192 columns, free to stay narrow");
    cr_assert_eq(stat(info.stats, "block_rows"), 512, "like rows: a taller scope saves no trip: %s", info.stats);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* A cut plan (several column blocks) counts its segments' group trips per column block, as one column block counts
 * its rows', to choose the block height: on a power-law graph cut in column blocks the like lengths of 512 rows
 * leave most groups half empty and the height grows; on a stencil's like rows it stays 512. Both plans hold the
 * right sums. */
Test(hbp, cut_plan_block_height)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("kron:15:16", SPMV_F64);
    spmv_plan_options_t o = options(0, 0, 8192, 0, 0);
    spmv_plan_t *plan = plan_of(ctx, A, &o);
    spmv_plan_info_t info;
    spmv_plan_get_info(plan, &info);
    cr_assert_eq(stat(info.stats, "col_blocks"), 4, "%s", info.stats);
    cr_assert(stat(info.stats, "block_rows") >= 1024, "a cut power-law graph: taller blocks, fuller groups: %s",
              info.stats);
    support_check_plan_against(ctx, plan, A, "kron:15:16 cut every 8192 columns");
    spmv_plan_destroy(plan);
    o.hbp_block_rows = 512; /* the former height, for the count */
    spmv_plan_t *short_plan = plan_of(ctx, A, &o);
    spmv_plan_info_t short_info;
    spmv_plan_get_info(short_plan, &short_info);
    cr_assert_lt(stat(info.stats, "trips"), stat(short_info.stats, "trips"), "%s / %s", info.stats, short_info.stats);
    spmv_plan_destroy(short_plan);
    spmv_matrix_destroy(A);
    A = generate("stencil2d:5:200", SPMV_F64);
    o = options(0, 0, 16384, 0, 0);
    plan = plan_of(ctx, A, &o);
    spmv_plan_get_info(plan, &info);
    cr_assert_eq(stat(info.stats, "col_blocks"), 3, "%s", info.stats);
    cr_assert_eq(stat(info.stats, "block_rows"), 512, "a cut stencil: like rows, no trip saved: %s", info.stats);
    support_check_plan_against(ctx, plan, A, "stencil2d:5:200 cut every 16384 columns");
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* The L2 prefetch is a hint: with any distance or none, the plan holds the same layout and the same sums; the
 * stats say how many trips ahead. */
Test(hbp, prefetch_option)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("kron:12:16", SPMV_F64);
    for (int pf = -1; pf <= 4; pf++) {
        spmv_plan_options_t o = options(0, 0, 0, 0, 0);
        o.hbp_prefetch = pf;
        spmv_plan_t *plan = plan_of(ctx, A, &o);
        spmv_plan_info_t info;
        spmv_plan_get_info(plan, &info);
        cr_assert_eq(stat(info.stats, "prefetch"), pf <= 0 ? 0 : pf, "%s", info.stats); /* default: none */
        spmv_plan_destroy(plan);
    }
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
    spmv_plan_options_t o = options(32, 0, 0, 0, 0);
    o.hbp_prefetch = -1;
    corpus(SPMV_F64, &o);
}

/* Long runs kept whole (hbp_tails = 2, the former cut): the same sums; the layout check follows the option. */
Test(hbp, tails_kept)
{
    spmv_plan_options_t o = options(32, 0, 0, 0, 0);
    o.hbp_tails = 2;
    corpus(SPMV_F64, &o);
    o = options(64, 0, 0, 0, 0);
    o.hbp_tails = 2;
    o.hbp_steps = 8;
    corpus(SPMV_F32, &o);
}

Test(hbp, bad_options)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("stencil2d:5:10", SPMV_F64);
    spmv_plan_options_t bad[] = {options(0, -1, 0, 0, 0), options(0, 0, -5, 0, 0), options(0, 0, 0, 3, 0),
                                 options(0, 0, 0, -1, 0), options(0, 0, 0, 0, 2), options(0, 0, 0, 0, 0),
                                 options(0, 0, 0, 0, 0), options(0, 0, 0, 0, 0), options(0, 0, 0, 0, 0),
                                 options(0, 0, 0, 0, 0), options(0, 0, 0, 0, 0), options(0, 0, 0, 0, 0),
                                 options(0, 0, 0, 0, 0), options(0, 0, 0, 0, 0), options(0, 0, 0, 0, 0),
                                 options(0, 0, 0, 0, 0), options(0, 0, 0, 0, 0), options(0, 0, 0, 0, 0),
                                 options(0, 0, 0, 0, 0), options(0, 0, 0, 0, 0), options(0, 0, 0, 0, 0),
                                 options(0, 0, 0, 0, 0)};
    bad[20].hbp_y_stage = 2;
    bad[21].hbp_y_stage = -2;
    bad[18].hbp_hot_copy = 3;
    bad[19].hbp_hot_copy = -1;
    bad[13].hbp_unit_trips = -2;
    bad[16].hbp_task_blocks = 2;
    bad[17].hbp_task_blocks = -2;
    bad[14].hbp_order = 3;
    bad[15].hbp_order = -1;
    bad[5].hbp_steps = 6;
    bad[9].hbp_ctas = 8; /* 4 steps: 3, 4 or 6 */
    bad[10].hbp_ctas = -1;
    bad[12].hbp_hot = -3;
    bad[11].hbp_steps = 2;
    bad[11].hbp_ctas = 3; /* 2 steps: 4, 6 or 8 */
    bad[6].hbp_prefetch = 5;
    bad[7].hbp_prefetch = -2;
    bad[8].hbp_tails = 3;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        spmv_plan_t *plan = NULL;
        cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_HBP, &bad[i]), SPMV_STATUS_INVALID_ARGUMENT,
                     "option set %zu accepted", i);
        cr_assert(plan == NULL);
        cr_assert(strstr(spmv_last_error(ctx), "hbp") != NULL, "%s", spmv_last_error(ctx));
    }
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* Staged y's plans: every task stages (one column block, forced here: the CPU model cuts this circuit into 4,
 * block heights whose y range fits: f64 5432 rows), a task's range is whole row blocks' rows; of 6000-row blocks
 * only the tasks of the short last one stage; off by default, and with several column blocks none stages. */
Test(hbp, y_stage_plans)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("circuit:200000", SPMV_F64);
    for (int v = 0; v < 5; v++) {
        spmv_plan_options_t o = options(0, v == 1 ? 1024 : v == 2 ? 6000 : 0, v == 3 ? 4096 : 1 << 20, 0, 0);
        o.hbp_y_stage = v == 4 ? 0 : 1;
        o.hbp_order = 1;
        const spmv_plan_info_t info = info_of(ctx, A, &o);
        const double tasks = stat(info.stats, "tasks"), staged = stat(info.stats, "y_staged");
        const double R = stat(info.stats, "block_rows"), rows = stat(info.stats, "y_rows");
        if (v == 0 || v == 1) { /* whole row blocks; the tasks of long units only stage nothing */
            cr_assert(staged > 1 && staged <= tasks && rows >= R && fmod(rows, R) == 0 && rows <= 5432, "%s",
                      info.stats);
        } else if (v == 2) { /* 6000-row blocks do not fit, but the last (200000 - 33 x 6000 rows) does, its groups
                                * in a few tasks */
            cr_assert(staged >= 1 && staged < tasks && rows == 2000, "%s", info.stats);
        } else if (v == 3) { /* several column blocks */
            cr_assert(staged == 0 && rows == 0, "%s", info.stats);
        } else { /* off: no keys (the stats' 512 bytes are full) */
            cr_assert(strstr(info.stats, "y_staged=") == NULL && strstr(info.stats, "y_rows=") == NULL, "%s",
                      info.stats);
        }
    }
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* Staged y with few tall blocks: a block's warp groups are cut over several tasks (each stages the block's rows
 * and writes its own), so the plan still has tasks for every resident thread block. Whole blocks as tasks gave
 * fem3d:3:40 in 1024-row blocks 188 tasks on the H100's 528 (session 75). Rows of 7: every unit a warp group. */
Test(hbp, y_stage_split_blocks)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("stencil3d:7:40", SPMV_F64);
    spmv_plan_options_t o = options(0, 1024, 1 << 20, 0, 0);
    o.hbp_y_stage = 1;
    const spmv_plan_info_t info = info_of(ctx, A, &o);
    const double tasks = stat(info.stats, "tasks"), staged = stat(info.stats, "y_staged");
    const double blocks = stat(info.stats, "row_blocks"), rows = stat(info.stats, "y_rows");
    cr_assert(stat(info.stats, "col_blocks") == 1 && tasks > 2 * blocks && staged == tasks && rows == 1024, "%s",
              info.stats);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

Test(hbp, determinism_flag)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("kron:10:8", SPMV_F64);
    spmv_plan_info_t info;
    spmv_plan_options_t o = options(0, 0, 512, 1, 0);
    spmv_plan_t *plan = plan_of(ctx, A, &o);
    spmv_plan_get_info(plan, &info);
    cr_assert_eq(info.deterministic, 1, "partials are deterministic");
    spmv_plan_destroy(plan);
    o = options(0, 0, 512, 2, 0);
    plan = plan_of(ctx, A, &o);
    spmv_plan_get_info(plan, &info);
    cr_assert_eq(info.deterministic, 0, "atomics are not");
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    A = generate("stencil2d:5:20", SPMV_F64); /* one column block: no row is combined */
    o = options(0, 0, 0, 2, 0);
    plan = plan_of(ctx, A, &o);
    spmv_plan_get_info(plan, &info);
    cr_assert_eq(info.deterministic, 1, "atomics that never run: %s", info.stats);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* The default block width follows the matrix: a random graph is one column block (32-bit columns past 65536),
 * a circuit's random entries leave 65536-column blocks (16-bit columns) cheaper, a band is one column block
 * with 16-bit columns relative to each task; rows longer than HBP_MAX_SEG are cut into
 * segments spread over warps. Each layout is checked entry by entry and its product against the oracle. */
Test(hbp, density_block_cols)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_device_info_t dev;
    memset(&dev, 0, sizeof dev);
    dev.backend = SPMV_BACKEND_CPU;
    const struct {
        const char *spec;
        int32_t cols, col_bytes;
    } cases[] = {{"kron:18:4", 262144, 4}, {"circuit:100000", 65536, 2}, {"banded:100000:5", 100000, 2},
                 {"stencil3d:7:50", 125000, 2}, {"fem3d:3:24", 65536, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spmv_matrix_t *A = generate(cases[i].spec, SPMV_F64);
        spmv_plan_options_t o = options(32, 0, 0, 0, 0);
        spmvport_format_data fd;
        char msg[SPMVPORT_MSG_LEN] = "";
        cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_HBP, 32, &dev, &o, msg, sizeof msg),
                     SPMV_STATUS_SUCCESS, "%s: %s", cases[i].spec, msg);
        cr_assert_eq(fd.params[HBP_P_BLOCK_COLS], cases[i].cols, "%s: %s", cases[i].spec, fd.stats);
        cr_assert_eq(fd.params[HBP_P_COL_BYTES], cases[i].col_bytes, "%s: %s", cases[i].spec, fd.stats);
        check_layout(A, &fd, cases[i].spec);
        if (strncmp(cases[i].spec, "circuit", 7) == 0) /* dense rows of 10^4+ entries: cut, combined */
            cr_assert(fd.params[HBP_P_NFIX] > 0 && stat(fd.stats, "long_segments") > 0 &&
                          stat(fd.stats, "wide_slots") > 0 && stat(fd.stats, "uniform_groups") > 0, "%s", fd.stats);
        spmvport_format_data_free(&fd);
        support_check_format(ctx, SPMV_FORMAT_HBP, &o, cases[i].spec, A, 0);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

/* Adjacent full warp groups of one block (one column block) whose keys (the floor of their rows' mean, the
 * builder's) decrease; groups with a lane that writes a partial (a long row's tail) are skipped. */
static int32_t order_inversions(const spmvport_format_data *fd)
{
    const int32_t *unit_slot = arr(fd, HBP_A_UNIT_SLOT), *unit_info = arr(fd, HBP_A_UNIT_INFO);
    const int32_t *wide_out = arr(fd, HBP_A_WIDE_OUT);
    const uint16_t *seg_out = arr(fd, HBP_A_SEG_OUT);
    const int32_t W = fd->warp_size, R = (int32_t)fd->params[HBP_P_BLOCK_ROWS];
    const int32_t nunits = (int32_t)fd->params[HBP_P_NUNITS];
    int32_t inversions = 0, prev_block = -1, prev_key = 0;
    for (int32_t u = 0; u < nunits; u++) {
        int64_t sum = 0;
        int known = unit_slot[u + 1] - unit_slot[u] == W;
        for (int32_t l = 0; known && l < W; l++) {
            const int32_t out = hbp_slot_output(unit_info, seg_out, wide_out, u, unit_slot[u], unit_slot[u] + l);
            known = out >= 0;
            sum += out;
        }
        if (!known) {
            prev_block = -1;
            continue;
        }
        int32_t block = hbp_slot_output(unit_info, seg_out, wide_out, u, unit_slot[u], unit_slot[u]) / R,
                key = (int32_t)(sum / W);
        inversions += block == prev_block && key < prev_key;
        prev_block = block;
        prev_key = key;
    }
    return inversions;
}

/* Build for a simulated device and check the layout. */
static spmvport_format_data build_checked(const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                          const spmv_plan_options_t *o, const char *name)
{
    spmvport_format_data fd;
    char msg[SPMVPORT_MSG_LEN] = "";
    cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_HBP, 32, dev, o, msg, sizeof msg), SPMV_STATUS_SUCCESS,
                 "%s: %s", name, msg);
    check_layout(A, &fd, name);
    return fd;
}

/* build_checked, for a plan of one column block. */
static spmvport_format_data build_on(const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                     const spmv_plan_options_t *o, const char *name)
{
    spmvport_format_data fd = build_checked(A, dev, o, name);
    cr_assert_eq(fd.params[HBP_P_BLOCK_COLS] >= A->n, 1, "%s: one column block expected: %s", name, fd.stats);
    return fd;
}

/* The fewest reads of a hot column on a GPU (hot_min_reads): the automatic rule takes only columns read at least 3
 * times per multiprocessor, though f64 plans of 8 steps run 2 blocks per multiprocessor (a grid of 264 on 132);
 * asked for (hbp_hot = -1), a column read once per block qualifies. kron:17:16 has columns read 264..395 times,
 * so the check can fail. */
static int32_t fewest_hot_reads(const spmv_matrix_t *A, const spmvport_format_data *fd, int64_t *nhot)
{
    int32_t *deg = calloc((size_t)A->n, sizeof(int32_t));
    cr_assert_not_null(deg);
    for (int32_t k = 0; k < A->nnz; k++) deg[A->col_idx[k]]++;
    const int32_t *hot = fd->arrays[HBP_A_HOT].data;
    int32_t fewest = INT32_MAX;
    *nhot = HBP_NHOT(fd);
    for (int64_t i = 0; i < *nhot; i++) fewest = deg[hot[i]] < fewest ? deg[hot[i]] : fewest;
    free(deg);
    return fewest;
}

Test(hbp, hot_columns_min_reads)
{
    spmv_matrix_t *A = generate("kron:17:16", SPMV_F64);
    spmv_device_info_t dev;
    memset(&dev, 0, sizeof dev);
    dev.backend = SPMV_BACKEND_CUDA, dev.warp_size = 32, dev.multiprocessors = 132;
    dev.shared_mem_per_block = 232448, dev.l2_bytes = (size_t)60 << 20;
    const int steps[] = {0, 8, 8}, hot[] = {0, 0, -1};
    for (int i = 0; i < 3; i++) {
        spmv_plan_options_t o = options(32, 0, 1 << 20, 0, 0); /* one column block */
        o.hbp_steps = steps[i];
        o.hbp_hot = hot[i];
        o.hbp_hot_copy = 1; /* the shared copy's rule */
        spmvport_format_data fd = build_on(A, &dev, &o, "kron:17:16, 132 multiprocessors");
        int64_t nhot;
        const int32_t fewest = fewest_hot_reads(A, &fd, &nhot);
        cr_assert_eq(stat(fd.stats, "steps"), 8, "%s", fd.stats);
        cr_assert_eq(stat(fd.stats, "grid"), 2 * 132, "%s", fd.stats);
        cr_assert_gt(nhot, 0, "%s", fd.stats);
        if (hot[i] == 0)
            cr_assert_geq(fewest, 3 * 132, "automatic hot columns, %lld of them, one read %d times: %s",
                          (long long)nhot, fewest, fd.stats);
        else
            cr_assert(fewest >= 2 * 132 && fewest < 3 * 132, "hbp_hot = -1: fewest reads %d: %s", fewest, fd.stats);
        spmvport_format_data_free(&fd);
    }
    spmv_matrix_destroy(A);
}

/* Busy plans (choose_unit_trips): with one column block and 4-32 trips of work per resident warp, the automatic
 * unit cap is 8 where the estimate alone gives none or 16, unless the rows 8 would warp-stride hold more than
 * half the entries. A simulated device of 8 multiprocessors puts small graphs there (kron:16:4 in f64: 20
 * trips a warp, 3 blocks of 8 warps a multiprocessor); the estimate alone gives no cap on both graphs. */
Test(hbp, unit_cap_busy_plans)
{
    spmv_device_info_t dev;
    memset(&dev, 0, sizeof dev);
    dev.backend = SPMV_BACKEND_CUDA, dev.warp_size = 32, dev.multiprocessors = 8;
    dev.shared_mem_per_block = 232448, dev.l2_bytes = (size_t)60 << 20;
    const char *spec[] = {"kron:16:4", "kron:14:8", "fem3d:3:12", "kron:16:4"};
    const int cols[] = {0, 0, 0, 32768}, want[] = {8, 8, 0, 0};
    for (int i = 0; i < 4; i++) {
        spmv_matrix_t *A = generate(spec[i], SPMV_F64);
        spmv_plan_options_t o = options(32, 0, cols[i], 0, 0);
        spmvport_format_data fd = build_checked(A, &dev, &o, spec[i]);
        cr_assert_eq(stat(fd.stats, "col_blocks"), cols[i] ? 2 : 1, "%s: %s", spec[i], fd.stats);
        cr_assert_eq(stat(fd.stats, "unit_trips"), want[i], "%s (%s): %s", spec[i],
                     i == 2 ? "81 entries a row" : cols[i] ? "two column blocks" : "busy", fd.stats);
        spmvport_format_data_free(&fd);
        spmv_matrix_destroy(A);
    }
}

/* Position order keeps a block's warp groups in the order of their rows; the paper's bin order does not (a
 * circuit's rows of 3..7 entries, bin after bin), so the check can fail. Automatic: position order only on a
 * matrix past the L2 cache with most entries near the diagonal (circuit, not kron). */
Test(hbp, group_order)
{
    spmv_matrix_t *A = generate("circuit:100000", SPMV_F64), *K = generate("kron:14:16", SPMV_F64);
    spmv_device_info_t dev;
    memset(&dev, 0, sizeof dev);
    dev.backend = SPMV_BACKEND_CPU;
    spmv_plan_options_t o = options(32, 2048, 100000, 0, 0); /* one column block */
    o.hbp_order = 1;
    spmvport_format_data fd = build_on(A, &dev, &o, "circuit, position");
    cr_assert_eq(order_inversions(&fd), 0, "%s", fd.stats);
    cr_assert(strstr(fd.stats, "order=position") != NULL, "%s", fd.stats);
    cr_assert_eq(stat(fd.stats, "steps"), 4, "%s: a forced order keeps the default steps", fd.stats);
    spmvport_format_data_free(&fd);
    o.hbp_order = 2;
    fd = build_on(A, &dev, &o, "circuit, bins");
    cr_assert_gt(order_inversions(&fd), 0, "%s", fd.stats);
    cr_assert(strstr(fd.stats, "order=bin") != NULL, "%s", fd.stats);
    spmvport_format_data_free(&fd);

    /* automatic, on a device with 1 MiB of L2 (circuit:100000 holds ~7 MB) and with 64 MiB */
    dev.backend = SPMV_BACKEND_CUDA;
    dev.multiprocessors = 132;
    dev.shared_mem_per_block = 232448;
    dev.l2_bytes = (size_t)1 << 20;
    o = options(32, 0, 100000, 0, 0);
    fd = build_on(A, &dev, &o, "circuit, 1 MiB L2");
    cr_assert(strstr(fd.stats, "order=position") != NULL && stat(fd.stats, "near") >= 0.75, "%s", fd.stats);
    cr_assert_eq(order_inversions(&fd), 0, "%s", fd.stats);
    cr_assert_eq(stat(fd.stats, "steps"), 8, "%s: automatic position order runs 8 steps", fd.stats);
    cr_assert_eq(stat(fd.stats, "ctas"), HBP_CTAS_PER_SM(8, 8), "%s", fd.stats);
    cr_assert_eq(stat(fd.stats, "block_rows"), 4096, "%s: automatic position order, blocks of 4096 rows", fd.stats);
    spmvport_format_data_free(&fd);
    o.hbp_block_rows = 1024; /* an explicit height wins */
    fd = build_on(A, &dev, &o, "circuit, 1 MiB L2, 1024 rows");
    cr_assert(strstr(fd.stats, "order=position") != NULL && stat(fd.stats, "block_rows") == 1024, "%s", fd.stats);
    cr_assert_eq(order_inversions(&fd), 0, "%s", fd.stats);
    o.hbp_block_rows = 0;
    spmvport_format_data_free(&fd);
    o.hbp_steps = 4; /* an explicit step count wins */
    fd = build_on(A, &dev, &o, "circuit, 1 MiB L2, 4 steps");
    cr_assert(strstr(fd.stats, "order=position") != NULL && stat(fd.stats, "steps") == 4, "%s", fd.stats);
    o.hbp_steps = 0;
    spmvport_format_data_free(&fd);
    o.hbp_block_cols = 0; /* kron's own choice: one block */
    fd = build_on(K, &dev, &o, "kron, 1 MiB L2");
    cr_assert(strstr(fd.stats, "order=bin") != NULL && stat(fd.stats, "near") < 0.75, "%s", fd.stats);
    spmvport_format_data_free(&fd);
    dev.l2_bytes = (size_t)64 << 20;
    o.hbp_block_cols = 100000;
    fd = build_on(A, &dev, &o, "circuit, 64 MiB L2");
    cr_assert(strstr(fd.stats, "order=bin") != NULL && stat(fd.stats, "near") < 0, "%s", fd.stats);
    cr_assert_eq(stat(fd.stats, "steps"), 4, "%s", fd.stats);
    cr_assert_lt(stat(fd.stats, "block_rows"), 4096, "%s: bin order keeps the counted height", fd.stats);
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);
    spmv_matrix_destroy(K);
}

/* Many executes of a plan with a competitive part and combined rows: the same result each time, the ticket and
 * the fix rows' counts back at zero. Column blocks of 256 cut many rows (a combine pass); one column block cuts
 * circuit:200000's one dense row into a few partials, whose last one's writer combines them
 * (hbp_counted_combine). */
static void repeated_executes(const char *spec, int rows, int cols, int counted)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate(spec, SPMV_F64);
    spmv_plan_options_t o = options(32, rows, cols, 1, 0);
    o.hbp_task_blocks = -1; /* the resident grid and the ticket (the default runs a block per task) */
    spmv_plan_t *plan = plan_of(ctx, A, &o);
    const spmvport_format_data *fd = &plan->fd;
    int32_t ntasks = (int32_t)fd->params[HBP_P_NTASKS], grid = (int32_t)fd->params[HBP_P_GRID];
    const int32_t fixed = (int32_t)fd->params[HBP_P_FIXED];
    cr_assert(fixed >= 0 && ntasks > fixed * grid, "%d columns: no competitive part: %d tasks, %d fixed, grid %d", cols,
              ntasks, fixed, grid);
    const int32_t *sched = fd->arrays[HBP_A_SCHED].data, *count = fd->arrays[HBP_A_FIX_COUNT].data;
    const int32_t combined = (int32_t)(fd->params[HBP_P_NFIX] - fd->params[HBP_P_NEMPTY]);
    cr_assert(fd->params[HBP_P_COMBINE] == HBP_COMBINE_PARTIALS && combined > 0, "%d columns: no row to combine", cols);
    cr_assert_eq(hbp_counted_combine(fd->params, 32), counted, "%d columns, %lld partials", cols,
                 (long long)fd->params[HBP_P_NPARTS]);
    int32_t m, n;
    spmv_matrix_get_size(A, &m, &n, NULL, NULL);
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)m);
    double *first = malloc(sizeof(double) * (size_t)m);
    cr_assert(x && y && first);
    support_random_vector(x, n, SPMV_F64, 3);
    for (int it = 0; it < 10; it++) {
        cr_assert_eq(spmv_execute(plan, 1.0, x, 0.0, y), SPMV_STATUS_SUCCESS);
        cr_assert(sched[0] == 0 && sched[1] == 0, "call %d left ticket %d, done %d", it, sched[0], sched[1]);
        for (int32_t k = 0; k < combined; k++) cr_assert_eq(count[k], 0, "call %d left fix row count %d", it, k);
        if (it == 0) memcpy(first, y, sizeof(double) * (size_t)m);
        else cr_assert(memcmp(first, y, sizeof(double) * (size_t)m) == 0, "call %d differs", it);
    }
    double ratio;
    cr_assert_eq(spmv_reference_check(A, 1.0, x, 0.0, NULL, y, &ratio, NULL), SPMV_STATUS_SUCCESS);
    cr_assert(ratio <= 1.0);
    free(x); free(y); free(first);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

Test(hbp, repeated_executes_reset_ticket) { repeated_executes("circuit:20000", 64, 256, 0); }
Test(hbp, repeated_executes_counted_combine) { repeated_executes("circuit:200000", 0, 200000, 1); }

/* A thread block per task (hbp_task_blocks 0 = on, 1) or the resident grid with the ticket (-1), on a matrix with
 * more tasks than the grid: the flag as asked, the layout otherwise the same, and bitwise the same y (every unit
 * writes its own outputs and partials, whichever block runs its task; the combine order is fixed). With hot
 * columns the flag stays off. */
Test(hbp, task_blocks)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("circuit:20000", SPMV_F64);
    int32_t m, n;
    spmv_matrix_get_size(A, &m, &n, NULL, NULL);
    double *x = malloc(sizeof(double) * (size_t)n), *y[3];
    cr_assert(x != NULL);
    support_random_vector(x, n, SPMV_F64, 5);
    for (int v = 0; v < 3; v++) {
        spmv_plan_options_t o = options(32, 64, 256, 1, 0);
        o.hbp_task_blocks = v - 1;
        spmv_plan_t *plan = plan_of(ctx, A, &o);
        const int64_t *prm = plan->fd.params;
        cr_assert(prm[HBP_P_NTASKS] > prm[HBP_P_GRID], "%lld tasks, grid %lld", (long long)prm[HBP_P_NTASKS],
                  (long long)prm[HBP_P_GRID]);
        cr_assert_eq(prm[HBP_P_TASK_BLOCKS], v > 0, "hbp_task_blocks %d", o.hbp_task_blocks);
        cr_assert_eq(hbp_launch_grid(prm), v > 0 ? prm[HBP_P_NTASKS] : prm[HBP_P_GRID]);
        cr_assert_eq(stat(plan->fd.stats, "task_blocks"), v > 0, "%s", plan->fd.stats);
        y[v] = malloc(sizeof(double) * (size_t)m);
        cr_assert(y[v] != NULL);
        cr_assert_eq(spmv_execute(plan, 1.0, x, 0.0, y[v]), SPMV_STATUS_SUCCESS);
        const int32_t *sched = plan->fd.arrays[HBP_A_SCHED].data;
        cr_assert(sched[0] == 0 && sched[1] == 0);
        spmv_plan_destroy(plan);
    }
    double ratio;
    cr_assert_eq(spmv_reference_check(A, 1.0, x, 0.0, NULL, y[1], &ratio, NULL), SPMV_STATUS_SUCCESS);
    cr_assert(ratio <= 1.0, "error ratio %g", ratio);
    cr_assert(memcmp(y[0], y[1], sizeof(double) * (size_t)m) == 0 && memcmp(y[1], y[2], sizeof(double) * (size_t)m) == 0);
    for (int v = 0; v < 3; v++) free(y[v]);
    free(x);
    spmv_matrix_destroy(A);
    /* hot columns: each block would copy them, so the ticket stays (kron:17:16: more than 65536 columns, 32-bit) */
    spmv_matrix_t *K = generate("kron:17:16", SPMV_F64);
    spmv_plan_options_t o = options(32, 0, 0, 0, 0);
    o.hbp_hot = -1;
    o.hbp_block_cols = 1 << 17;
    o.hbp_task_blocks = 1;
    spmv_plan_t *plan = plan_of(ctx, K, &o);
    cr_assert(HBP_NHOT(&plan->fd) > 0 && plan->fd.params[HBP_P_TASK_BLOCKS] == 0, "%s", plan->fd.stats);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(K);
    spmv_context_destroy(ctx);
}

/* The hash's parameters follow the block height and the warp size. */
Test(hbp, hash_parameters)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = generate("kron:12:16", SPMV_F64);
    for (int w = 32; w <= 64; w *= 2) {
        spmv_plan_options_t o = options(w, 512, 0, 0, 0);
        o.hbp_unit_trips = -1; /* t_long as the hash makes it, no cap */
        spmv_plan_t *plan = plan_of(ctx, A, &o);
        spmv_plan_info_t info;
        spmv_plan_get_info(plan, &info);
        double a = stat(info.stats, "a"), b = stat(info.stats, "b"), c = stat(info.stats, "c");
        cr_assert_eq(b, w == 32 ? 8 : 4, "b = 4 bins per warp group of a 512-row block, bucket by bucket: %s",
                     info.stats);
        cr_assert_eq(stat(info.stats, "d"), 9 * b, "%s", info.stats);
        cr_assert_eq(c, a > log2(b) ? a - log2(b) : 0, "%s", info.stats);
        cr_assert_eq(stat(info.stats, "t_long"), fmax(w, fmin(9 * pow(2, a), 4 * w)), "%s", info.stats);
        spmv_plan_destroy(plan);
    }
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* The builder checks what it reads: columns out of range or not increasing, a broken row pointer. */
/* The unit cap (hbp_unit_trips): automatic on a small power-law graph (its long rows would hold one warp for
 * tens of trips while the device idles), none on rows that all fit a few trips; forced and off as asked. */
Test(hbp, unit_trips)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *graph = generate("kron:12:16", SPMV_F64), *even = generate("uniform:200000:16", SPMV_F64);
    const int want[] = {0, -1, 3};
    for (int i = 0; i < 3; i++) {
        spmv_plan_options_t o = options(32, 0, 0, 0, 0);
        o.hbp_unit_trips = want[i];
        spmv_plan_info_t info = info_of(ctx, graph, &o);
        const double cap = stat(info.stats, "unit_trips"), steps = stat(info.stats, "steps");
        if (want[i] == 0) cr_assert(cap >= 1 && cap <= 16, "automatic: capped on a small graph: %s", info.stats);
        else cr_assert_eq(cap, want[i] > 0 ? want[i] : 0, "%s", info.stats);
        if (cap > 0) {
            cr_assert_eq(stat(info.stats, "max_seg"), fmin(HBP_MAX_SEG, cap * steps * 32), "%s", info.stats);
            cr_assert(stat(info.stats, "t_long") <= cap * steps + 1, "%s", info.stats);
        } else {
            cr_assert_eq(stat(info.stats, "max_seg"), HBP_MAX_SEG, "%s", info.stats);
            cr_assert(stat(info.stats, "t_long") >= 32, "%s", info.stats);
        }
    }
    spmv_plan_options_t o = options(32, 0, 0, 0, 0);
    spmv_plan_info_t info = info_of(ctx, even, &o);
    cr_assert_eq(stat(info.stats, "unit_trips"), 0, "rows of 16 entries take 4 trips anyway: %s", info.stats);
    spmv_matrix_destroy(graph);
    spmv_matrix_destroy(even);
    spmv_context_destroy(ctx);
}

Test(hbp, untrusted_input)
{
    spmv_device_info_t dev;
    memset(&dev, 0, sizeof dev);
    spmv_plan_options_t o = options(0, 2, 2, 0, 0);
    int32_t ptr_ok[] = {0, 2, 3, 4}, ptr_down[] = {0, 3, 2, 4}, ptr_short[] = {0, 2, 3, 3};
    int32_t col_dup[] = {1, 1, 0, 3}, col_far[] = {0, 4, 0, 3}, col_neg[] = {-1, 1, 0, 3}, col_ok[] = {0, 3, 2, 1};
    double val[] = {1, 2, 3, 4};
    struct {
        int32_t *ptr, *col;
        spmv_status_t expect;
    } cases[] = {{ptr_ok, col_ok, SPMV_STATUS_SUCCESS},         {ptr_ok, col_dup, SPMV_STATUS_INVALID_MATRIX},
                 {ptr_ok, col_far, SPMV_STATUS_INVALID_MATRIX}, {ptr_ok, col_neg, SPMV_STATUS_INVALID_MATRIX},
                 {ptr_down, col_ok, SPMV_STATUS_INVALID_MATRIX}, {ptr_short, col_ok, SPMV_STATUS_INVALID_MATRIX}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct spmv_matrix A = {3, 4, 4, SPMV_F64, cases[i].ptr, cases[i].col, val, NULL, 4};
        spmvport_format_data fd;
        char msg[SPMVPORT_MSG_LEN] = "";
        spmv_status_t st = spmvport_format_build(&fd, &A, SPMV_FORMAT_HBP, 32, &dev, &o, msg, sizeof msg);
        cr_assert_eq(st, cases[i].expect, "case %zu: %s (%s)", i, spmv_status_string(st), msg);
        if (st == SPMV_STATUS_SUCCESS) check_layout(&A, &fd, "3x4");
        else cr_assert(strstr(msg, "hbp") != NULL, "%s", msg);
        spmvport_format_data_free(&fd);
    }
}

/* One column block wider than 65536 columns counts every column's reads for the hot columns (graph_steps) before
 * the builder checks the columns: an out-of-range column must not index the counts (ASan would see it). */
Test(hbp, untrusted_input_hot_count)
{
    spmv_device_info_t dev;
    memset(&dev, 0, sizeof dev);
    enum { N = 70000 };
    spmv_plan_options_t o = options(0, 0, N, 0, 0); /* one block of 32-bit columns: the hot-column count runs */
    static int32_t ptr[N + 1], col[N];
    static double val[N];
    const int32_t bad[] = {-5, N, 1 << 30};
    for (size_t i = 0; i <= sizeof bad / sizeof bad[0]; i++) {
        for (int32_t r = 0; r <= N; r++) ptr[r] = r;
        for (int32_t r = 0; r < N; r++) col[r] = r, val[r] = 1.0;
        if (i < sizeof bad / sizeof bad[0]) col[N / 2] = bad[i];
        struct spmv_matrix A = {N, N, N, SPMV_F64, ptr, col, val, NULL, N};
        spmvport_format_data fd;
        char msg[SPMVPORT_MSG_LEN] = "";
        spmv_status_t st = spmvport_format_build(&fd, &A, SPMV_FORMAT_HBP, 32, &dev, &o, msg, sizeof msg);
        if (i < sizeof bad / sizeof bad[0]) {
            cr_assert_eq(st, SPMV_STATUS_INVALID_MATRIX, "column %d: %s (%s)", bad[i], spmv_status_string(st), msg);
            cr_assert(strstr(msg, "hbp") != NULL, "%s", msg);
        } else {
            cr_assert_eq(st, SPMV_STATUS_SUCCESS, "%s", msg); /* the same matrix, valid */
            check_layout(&A, &fd, "70000x70000 one block");
        }
        spmvport_format_data_free(&fd);
    }
}

/* The automatic height of a cut plan counts segments per column block before the builder checks the columns: an
 * out-of-range column must not index its counters (ASan would see it), and the build still says what is wrong. */
Test(hbp, untrusted_input_cut_height)
{
    spmv_device_info_t dev;
    memset(&dev, 0, sizeof dev);
    spmv_plan_options_t o = options(0, 0, 2, 0, 0); /* automatic height, blocks of 2 columns: a cut plan */
    enum { M = 1024 };
    static int32_t ptr[M + 1], col[M];
    static double val[M];
    const int32_t bad[] = {-5, 7, 1 << 30};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int32_t r = 0; r <= M; r++) ptr[r] = r;
        for (int32_t r = 0; r < M; r++) col[r] = r % 4, val[r] = 1.0;
        col[0] = bad[i]; /* row 0 is always sampled */
        struct spmv_matrix A = {M, 4, M, SPMV_F64, ptr, col, val, NULL, 4};
        spmvport_format_data fd;
        char msg[SPMVPORT_MSG_LEN] = "";
        spmv_status_t st = spmvport_format_build(&fd, &A, SPMV_FORMAT_HBP, 32, &dev, &o, msg, sizeof msg);
        cr_assert_eq(st, SPMV_STATUS_INVALID_MATRIX, "column %d: %s (%s)", bad[i], spmv_status_string(st), msg);
        cr_assert(strstr(msg, "hbp") != NULL, "%s", msg);
        spmvport_format_data_free(&fd);
    }
    col[0] = 0; /* the same matrix, valid: a cut plan of two column blocks builds */
    struct spmv_matrix A = {M, 4, M, SPMV_F64, ptr, col, val, NULL, 4};
    spmvport_format_data fd;
    char msg[SPMVPORT_MSG_LEN] = "";
    cr_assert_eq(spmvport_format_build(&fd, &A, SPMV_FORMAT_HBP, 32, &dev, &o, msg, sizeof msg), SPMV_STATUS_SUCCESS,
                 "%s", msg);
    check_layout(&A, &fd, "1024x4 cut");
    spmvport_format_data_free(&fd);
}
