/*
 * test_format_ehyb.c -- format ehyb (explicit caching hybrid, METIS-partitioned):
 *   (a) the CPU executor against the oracle on the edge-case corpus and every shared matrix, at warp size 32 and
 *       64, f32 and f64 (support_check_format: alpha/beta cases, repeated executes, y poisoned when beta = 0);
 *   (b) the option variants: plan ordering (x and y permuted by the test through spmv_plan_get_permutation),
 *       another METIS seed, out-of-range options; device variants through the builder (tiny shared memory: many
 *       parts and cut parts; H100- and MI250-like figures);
 *   (c) layout invariants through spmvport_format_build: permutations are permutations, parts and slices tile the
 *       rows and columns, every non-zero stored exactly once at its row and column (the CSR rebuilt from the
 *       arrays through value_map), padding inert, ER ranks and slots consistent, counters zero between calls,
 *       bytes accounted, plans reproducible;
 *   (d) spmv_plan_update_values against a plan made from a matrix with the new values;
 *   (e) the plan info statistics; many repeated executes (the counters are reset inside every call).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ref.h"
#include "format_builders.h"
#include "format_ehyb.h"
#include "internal.h"
#include "support.h"

/* ==================================================================================================== */
/* Helpers                                                                                              */
/* ==================================================================================================== */

static spmv_plan_options_t options(int warp_size, int plan_ordering, int seed)
{
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.warp_size = warp_size;
    opt.ehyb_plan_ordering = plan_ordering;
    opt.ehyb_seed = seed;
    return opt;
}

static void build(spmvport_format_data *fd, const spmv_matrix_t *A, int w, const spmv_device_info_t *dev,
                  const spmv_plan_options_t *opt)
{
    char msg[SPMVPORT_MSG_LEN] = "";
    spmv_status_t st = spmvport_format_build(fd, A, SPMV_FORMAT_EHYB, w, dev, opt, msg, sizeof msg);
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "build: %s", msg);
}

#define ARR(fd, slot, type) ((type)(fd)->arrays[(slot)].data)

static size_t vsize(spmv_precision_t p) { return p == SPMV_F32 ? sizeof(float) : sizeof(double); }

static double value_at(const void *v, spmv_precision_t p, int64_t k)
{
    return p == SPMV_F32 ? (double)((const float *)v)[k] : ((const double *)v)[k];
}

static void check_permutation(const int32_t *perm, int32_t count, const char *what, const char *name)
{
    char *seen = calloc((size_t)count + 1, 1);
    cr_assert(seen);
    for (int32_t i = 0; i < count; i++) {
        cr_assert(perm[i] >= 0 && perm[i] < count, "%s: %s[%d] = %d out of range", name, what, i, perm[i]);
        cr_assert(!seen[perm[i]], "%s: %s repeats %d", name, what, perm[i]);
        seen[perm[i]] = 1;
    }
    free(seen);
}

/* The layout invariants of format_ehyb.h. */
static void check_invariants(const spmvport_format_data *fd, const spmv_matrix_t *A, const char *name)
{
    const int W = fd->warp_size;
    const int64_t *prm = fd->params;
    const int32_t m = A->m, n = A->n, nnz = A->nnz;
    const int32_t parts = (int32_t)prm[SPMVPORT_EHYB_P_PARTS], slices = (int32_t)prm[SPMVPORT_EHYB_P_SLICES];
    const int32_t n_er = (int32_t)prm[SPMVPORT_EHYB_P_ER_ROWS], chunks = (int32_t)prm[SPMVPORT_EHYB_P_CHUNKS];
    const int32_t er_slices = (int32_t)prm[SPMVPORT_EHYB_P_ER_SLICES];
    const int32_t ell_slots = (int32_t)prm[SPMVPORT_EHYB_P_ELL_SLOTS];
    const int32_t er_slots = (int32_t)prm[SPMVPORT_EHYB_P_ER_SLOTS];
    const int ordering = (int)prm[SPMVPORT_EHYB_P_PLAN_ORDERING];
    const size_t vs = vsize(A->precision);

    cr_assert_eq(fd->narrays, SPMVPORT_EHYB_NARRAYS, "%s", name);
    cr_assert_eq(fd->row_perm_array, SPMVPORT_EHYB_ROW_PERM);
    cr_assert_eq(fd->col_perm_array, SPMVPORT_EHYB_COL_PERM);
    cr_assert(parts >= 1 && prm[SPMVPORT_EHYB_P_BLOCK] == SPMVPORT_EHYB_BLOCK_THREADS, "%s", name);
    cr_assert(prm[SPMVPORT_EHYB_P_SEG_MAX] <= SPMVPORT_EHYB_MAX_SEGMENT, "%s", name);
    cr_assert_eq(fd->value_slots, (int64_t)ell_slots + er_slots, "%s", name);
    cr_assert_eq(fd->arrays[SPMVPORT_EHYB_ELL_VAL].bytes, (size_t)ell_slots * vs, "%s", name);
    cr_assert_eq(fd->arrays[SPMVPORT_EHYB_ER_VAL].bytes, (size_t)er_slots * vs, "%s", name);
    cr_assert_eq(fd->arrays[SPMVPORT_EHYB_ELL_COL].bytes, (size_t)ell_slots * sizeof(uint16_t), "%s", name);
    cr_assert_eq(fd->arrays[SPMVPORT_EHYB_SYNC].bytes, (2 + (size_t)n_er) * sizeof(int32_t), "%s", name);
    for (int a = 0; a < fd->narrays; a++)
        cr_assert_eq(fd->arrays[a].is_values, a == SPMVPORT_EHYB_ELL_VAL || a == SPMVPORT_EHYB_ER_VAL, "%s", name);

    const int32_t *row_perm = ARR(fd, SPMVPORT_EHYB_ROW_PERM, const int32_t *);
    const int32_t *col_perm = ARR(fd, SPMVPORT_EHYB_COL_PERM, const int32_t *);
    check_permutation(row_perm, m, "row_perm", name);
    check_permutation(col_perm, n, "col_perm", name);
    if (m == n)
        cr_assert(m == 0 || memcmp(row_perm, col_perm, (size_t)m * sizeof *row_perm) == 0,
                  "%s: square matrix renumbered unsymmetrically", name);
    int32_t *col_inv = malloc(((size_t)n + 1) * sizeof *col_inv), *row_of = malloc(((size_t)nnz + 1) * sizeof *row_of);
    int32_t *seen = calloc((size_t)nnz + 1, sizeof *seen), *rank_row = malloc(((size_t)m + 1) * sizeof *rank_row);
    cr_assert(col_inv && row_of && seen && rank_row);
    for (int32_t j = 0; j < n; j++) col_inv[col_perm[j]] = j;
    for (int32_t i = 0; i < m; i++)
        for (int32_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) row_of[k] = i;

    /* parts tile the plan rows, columns and slices */
    const int32_t *part = ARR(fd, SPMVPORT_EHYB_PART, const int32_t *);
    const int32_t *halo = ARR(fd, SPMVPORT_EHYB_HALO, const int32_t *);
    const int32_t halo_len = (int32_t)prm[SPMVPORT_EHYB_P_HALO];
    cr_assert(part[0] == 0 && part[1] == 0 && part[2] == 0 && part[3] == 0, "%s", name);
    cr_assert(part[4 * parts] == m && part[4 * parts + 1] == n && part[4 * parts + 2] == slices &&
              part[4 * parts + 3] == halo_len, "%s", name);
    cr_assert_eq(fd->arrays[SPMVPORT_EHYB_HALO].bytes, (size_t)halo_len * sizeof(int32_t), "%s", name);
    const int64_t split = prm[SPMVPORT_EHYB_P_SPLIT];
    cr_assert(split >= 1 && split <= SPMVPORT_EHYB_BLOCK_THREADS / W && (split & (split - 1)) == 0, "%s", name);
    const int32_t *ell_ptr = ARR(fd, SPMVPORT_EHYB_ELL_PTR, const int32_t *);
    const uint64_t *slice_er = ARR(fd, SPMVPORT_EHYB_SLICE_ER, const uint64_t *);
    const uint16_t *ell_col = ARR(fd, SPMVPORT_EHYB_ELL_COL, const uint16_t *);
    const void *ell_val = fd->arrays[SPMVPORT_EHYB_ELL_VAL].data, *er_val = fd->arrays[SPMVPORT_EHYB_ER_VAL].data;
    const int32_t *er_meta = ARR(fd, SPMVPORT_EHYB_ER_META, const int32_t *);
    const int32_t near_slots = (int32_t)prm[SPMVPORT_EHYB_P_NEAR_SLOTS];
    cr_assert(ell_ptr[0] == 0 && ell_ptr[2 * slices] == ell_slots, "%s", name);
    cr_assert(ell_ptr[1] == 0 && ell_ptr[2 * slices + 1] == near_slots && near_slots <= er_slots, "%s", name);
    const int32_t *er_col = ARR(fd, SPMVPORT_EHYB_ER_COL, const int32_t *);
    const int32_t *er_map = fd->value_map + ell_slots;
    int64_t covered = 0;
    for (int32_t r = 0; r < m; r++) rank_row[r] = -1;
    for (int32_t e = 0; e < n_er; e++) {
        cr_assert(er_meta[2 * e] >= 0 && er_meta[2 * e] < m && (e == 0 || er_meta[2 * e] > er_meta[2 * e - 2]),
                  "%s: ranks must follow plan rows", name);
        cr_assert(er_meta[2 * e + 3] - er_meta[2 * e + 1] >= 2, "%s: rank %d has fewer than two slots", name, e);
        rank_row[er_meta[2 * e]] = e;
    }
    cr_assert_eq(er_meta[2 * n_er + 1] * vs, fd->arrays[SPMVPORT_EHYB_PARTIAL].bytes, "%s", name);

    for (int32_t p = 0; p < parts; p++) {
        const int32_t rb = part[4 * p], cb = part[4 * p + 1], sb = part[4 * p + 2], hb = part[4 * p + 3];
        const int32_t re = part[4 * p + 4], ce = part[4 * p + 5], se = part[4 * p + 6], he = part[4 * p + 7];
        cr_assert(rb <= re && cb <= ce && sb <= se && hb <= he, "%s: part %d not monotone", name, p);
        const int32_t own = ce - cb, staged = own + he - hb;
        cr_assert(staged <= prm[SPMVPORT_EHYB_P_SEG_MAX], "%s: part %d staged x past seg_max", name, p);
        for (int32_t h = hb, last = -1; h < he; h++) { /* halo: other parts' columns, by ascending A column */
            const int32_t pc = ordering ? halo[h] : (halo[h] >= 0 && halo[h] < n ? col_inv[halo[h]] : -1);
            cr_assert(pc >= 0 && pc < n && (pc < cb || pc >= ce), "%s: part %d halo entry %d", name, p, h);
            cr_assert(col_perm[pc] > last, "%s: part %d halo not ascending (or repeated)", name, p);
            last = col_perm[pc];
        }
        cr_assert_eq(se - sb, (re - rb + W - 1) / W, "%s: part %d slices", name, p);
        for (int32_t s = sb; s < se; s++) {
            const int32_t off = ell_ptr[2 * s], noff = ell_ptr[2 * s + 1];
            cr_assert((ell_ptr[2 * s + 2] - off) % W == 0 && ell_ptr[2 * s + 2] >= off, "%s", name);
            cr_assert((ell_ptr[2 * s + 3] - noff) % W == 0 && ell_ptr[2 * s + 3] >= noff, "%s", name);
            const int32_t width = (ell_ptr[2 * s + 2] - off) / W, nwidth = (ell_ptr[2 * s + 3] - noff) / W;
            int32_t expect_rank = (int32_t)slice_er[2 * s + 1];
            for (int lane = 0; lane < W; lane++) {
                const int32_t r = rb + (s - sb) * W + lane;
                const int has = (int)((slice_er[2 * s] >> lane) & 1u);
                cr_assert(r < re || !has, "%s: ER bit on a missing row", name);
                if (r < re) {
                    cr_assert_eq(has, rank_row[r] >= 0, "%s: slice %d lane %d ER bit", name, s, lane);
                    if (has) cr_assert_eq(rank_row[r], expect_rank++, "%s: slice %d lane %d rank", name, s, lane);
                }
                for (int32_t k = 0; k < nwidth; k++) { /* the near-ER block */
                    const int32_t q = noff + k * W + lane, src = er_map[q];
                    if (src < 0) {
                        cr_assert(er_col[q] == -1 && value_at(er_val, A->precision, q) == 0.0,
                                  "%s: near padding slot %d not inert", name, q);
                        continue;
                    }
                    cr_assert(r < re && src < nnz && row_of[src] == row_perm[r], "%s: near slot %d row", name, q);
                    cr_assert_eq(er_col[q], ordering ? col_inv[A->col_idx[src]] : A->col_idx[src], "%s", name);
                    cr_assert(value_at(er_val, A->precision, q) == value_at(A->values, A->precision, src), "%s", name);
                    seen[src]++;
                    covered++;
                }
                for (int32_t k = 0; k < width; k++) {
                    const int32_t q = off + k * W + lane, src = fd->value_map[q];
                    if (src < 0) {
                        cr_assert(ell_col[q] == staged && value_at(ell_val, A->precision, q) == 0.0,
                                  "%s: ELL padding slot %d not inert", name, q);
                        continue;
                    }
                    cr_assert(r < re && src < nnz && row_of[src] == row_perm[r], "%s: ELL slot %d row", name, q);
                    const int32_t l = ell_col[q];
                    const int32_t a_col = l < own ? col_perm[cb + l]
                                          : l < staged ? (ordering ? col_perm[halo[hb + l - own]] : halo[hb + l - own])
                                                       : -1;
                    cr_assert(a_col == A->col_idx[src], "%s: ELL slot %d column", name, q);
                    cr_assert(value_at(ell_val, A->precision, q) == value_at(A->values, A->precision, src), "%s", name);
                    seen[src]++;
                }
            }
        }
    }
    /* the ER part: chunks, then slices */
    const int32_t *work = ARR(fd, SPMVPORT_EHYB_ER_WORK, const int32_t *);
#define CHECK_ER_SLOT(q, e)                                                                                        \
    do {                                                                                                           \
        const int32_t src_ = er_map[(q)];                                                                          \
        cr_assert(src_ >= 0 && src_ < nnz && row_of[src_] == row_perm[er_meta[2 * (e)]], "%s: ER slot %d row",     \
                  name, (int)(q));                                                                                 \
        cr_assert_eq(er_col[(q)], ordering ? col_inv[A->col_idx[src_]] : A->col_idx[src_], "%s: ER col", name);   \
        cr_assert(value_at(er_val, A->precision, (q)) == value_at(A->values, A->precision, src_), "%s", name);     \
        seen[src_]++;                                                                                              \
        covered++;                                                                                                 \
    } while (0)
    for (int32_t c = 0; c < chunks; c++) {
        const int32_t *ch = work + 4 * c, e = ch[0];
        cr_assert(e >= 0 && e < n_er && ch[1] >= 0 && ch[2] >= near_slots && ch[2] <= ch[3], "%s: chunk %d", name, c);
        cr_assert(er_meta[2 * e + 1] + 1 + ch[1] < er_meta[2 * e + 3], "%s: chunk %d slot", name, c);
        for (int32_t q = ch[2]; q < ch[3]; q++) CHECK_ER_SLOT(q, e);
    }
    const int32_t *sptr = work + 4 * chunks, *lanes = sptr + er_slices + 1;
    cr_assert(sptr[er_slices] == er_slots && (er_slices == 0 || sptr[0] >= near_slots), "%s", name);
    for (int32_t s = 0; s < er_slices; s++)
        for (int lane = 0; lane < W; lane++) {
            const int32_t e = lanes[2 * (s * W + lane)], len = lanes[2 * (s * W + lane) + 1];
            cr_assert(e >= -1 && e < n_er && len >= 0 && sptr[s] + len * W <= sptr[s + 1], "%s", name);
            if (e >= 0) cr_assert_eq(er_meta[2 * e + 3] - er_meta[2 * e + 1], 2, "%s: short rank slots", name);
            for (int32_t k = 0; k < len; k++) CHECK_ER_SLOT(sptr[s] + k * W + lane, e);
        }
#undef CHECK_ER_SLOT
    int64_t mapped = 0;
    for (int32_t q = 0; q < er_slots; q++) mapped += er_map[q] >= 0;
    cr_assert_eq(mapped, covered, "%s: ER entries outside every work item", name);
    for (int32_t k = 0; k < nnz; k++) cr_assert_eq(seen[k], 1, "%s: entry %d stored %d times", name, k, seen[k]);
    const int32_t *sync = ARR(fd, SPMVPORT_EHYB_SYNC, const int32_t *);
    for (int32_t i = 0; i < 2 + n_er; i++) cr_assert_eq(sync[i], 0, "%s: counter %d is %d", name, i, sync[i]);
    free(col_inv); free(row_of); free(seen); free(rank_row);
}

/* Run the CPU executor on fd directly (user ordering) for the three alpha/beta cases, twice each, and check. */
static void run_direct(const spmvport_format_data *fd, const spmv_matrix_t *A, const char *name)
{
    static const double cases[3][2] = {{1, 0}, {2, 0.5}, {-1, 1}};
    const size_t vs = vsize(A->precision);
    void *x = malloc(vs * ((size_t)A->n + 1)), *y0 = malloc(vs * ((size_t)A->m + 1));
    void *y1 = malloc(vs * ((size_t)A->m + 1)), *y2 = malloc(vs * ((size_t)A->m + 1));
    cr_assert(x && y0 && y1 && y2);
    support_random_vector(x, A->n, A->precision, 11);
    for (int c = 0; c < 3; c++) {
        support_random_vector(y0, A->m, A->precision, 12 + (uint64_t)c);
        memcpy(y1, y0, vs * (size_t)A->m);
        memcpy(y2, y0, vs * (size_t)A->m);
        spmvport_cpu_ehyb(fd, cases[c][0], x, cases[c][1], y1);
        spmvport_cpu_ehyb(fd, cases[c][0], x, cases[c][1], y2);
        double ratio;
        int32_t row;
        cr_assert_eq(spmv_reference_check(A, cases[c][0], x, cases[c][1], y0, y1, &ratio, &row), SPMV_STATUS_SUCCESS);
        cr_assert(ratio <= 1.0, "%s: row %d off by %g x the bound", name, row, ratio);
        cr_assert(memcmp(y1, y2, vs * (size_t)A->m) == 0, "%s: repeated execute differs", name);
    }
    free(x); free(y0); free(y1); free(y2);
}

/* ==================================================================================================== */
/* (a) the executor against the oracle                                                                   */
/* ==================================================================================================== */

static void corpus(int warp_size, spmv_precision_t p, int plan_ordering, int seed)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t opt = options(warp_size, plan_ordering, seed);
    support_check_corpus(ctx, SPMV_FORMAT_EHYB, &opt, p);
    spmv_context_destroy(ctx);
}

static void shared(int warp_size, spmv_precision_t p)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t opt = options(warp_size, 0, 0);
    support_check_shared(ctx, SPMV_FORMAT_EHYB, &opt, p);
    spmv_context_destroy(ctx);
}

Test(ehyb, corpus_w32_f64) { corpus(32, SPMV_F64, 0, 0); }
Test(ehyb, corpus_w64_f64) { corpus(64, SPMV_F64, 0, 0); }
Test(ehyb, corpus_w32_f32) { corpus(32, SPMV_F32, 0, 0); }
Test(ehyb, corpus_w64_f32) { corpus(64, SPMV_F32, 0, 0); }
Test(ehyb, shared_w32_f64, .timeout = 600) { shared(32, SPMV_F64); }
Test(ehyb, shared_w64_f64, .timeout = 600) { shared(64, SPMV_F64); }
Test(ehyb, shared_w32_f32, .timeout = 600) { shared(32, SPMV_F32); }
Test(ehyb, shared_w64_f32, .timeout = 600) { shared(64, SPMV_F32); }

/* ==================================================================================================== */
/* (b) option and device variants                                                                        */
/* ==================================================================================================== */

Test(ehyb, other_seed) { corpus(32, SPMV_F64, 0, 7); }

/* Plan ordering: the test permutes x and y0 into the plan's order and y back, through the public API. */
static void plan_ordering_case(spmv_context_t *ctx, const spmv_matrix_t *A, int w, const char *name)
{
    int32_t m, n;
    spmv_precision_t p;
    spmv_matrix_get_size(A, &m, &n, NULL, &p);
    const size_t vs = vsize(p);
    spmv_plan_options_t opt_user = options(w, 0, 0), opt_plan = options(w, 1, 0);
    spmv_plan_t *plan = NULL, *user = NULL;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_EHYB, &opt_plan), SPMV_STATUS_SUCCESS, "%s: %s", name,
                 spmv_last_error(ctx));
    cr_assert_eq(spmv_plan_create(&user, ctx, A, SPMV_FORMAT_EHYB, &opt_user), SPMV_STATUS_SUCCESS);
    const int32_t *rp, *cp, *rp_user, *cp_user;
    cr_assert_eq(spmv_plan_get_permutation(plan, &rp, &cp), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_plan_get_permutation(user, &rp_user, &cp_user), SPMV_STATUS_SUCCESS);
    cr_assert(rp && cp && rp_user && cp_user, "%s: ehyb must expose its permutations", name);
    check_permutation(rp, m, "row_perm", name);
    check_permutation(cp, n, "col_perm", name);
    cr_assert(memcmp(rp, rp_user, (size_t)m * sizeof *rp) == 0 && memcmp(cp, cp_user, (size_t)n * sizeof *cp) == 0,
              "%s: the ordering option must not change the permutation", name);

    char *x = malloc(vs * ((size_t)n + 1)), *xp = malloc(vs * ((size_t)n + 1)), *y0 = malloc(vs * ((size_t)m + 1));
    char *yp = malloc(vs * ((size_t)m + 1)), *y = malloc(vs * ((size_t)m + 1));
    cr_assert(x && xp && y0 && yp && y);
    support_random_vector(x, n, p, 21);
    support_random_vector(y0, m, p, 22);
    for (int32_t j = 0; j < n; j++) memcpy(xp + (size_t)j * vs, x + (size_t)cp[j] * vs, vs);
    static const double cases[3][2] = {{1, 0}, {2, 0.5}, {-1, 1}};
    for (int c = 0; c < 3; c++) {
        for (int32_t i = 0; i < m; i++) memcpy(yp + (size_t)i * vs, y0 + (size_t)rp[i] * vs, vs);
        for (int rep = 0; rep < 2; rep++) { /* the second call must find the counters reset */
            if (rep == 1)
                for (int32_t i = 0; i < m; i++) memcpy(yp + (size_t)i * vs, y0 + (size_t)rp[i] * vs, vs);
            cr_assert_eq(spmv_execute(plan, cases[c][0], xp, cases[c][1], yp), SPMV_STATUS_SUCCESS);
            for (int32_t i = 0; i < m; i++) memcpy(y + (size_t)rp[i] * vs, yp + (size_t)i * vs, vs);
            double ratio;
            int32_t row;
            cr_assert_eq(spmv_reference_check(A, cases[c][0], x, cases[c][1], y0, y, &ratio, &row),
                         SPMV_STATUS_SUCCESS);
            cr_assert(ratio <= 1.0, "%s plan ordering: row %d off by %g x the bound", name, row, ratio);
        }
    }
    free(x); free(xp); free(y0); free(yp); free(y);
    spmv_plan_destroy(plan);
    spmv_plan_destroy(user);
}

static void plan_ordering(int w, spmv_precision_t p)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    support_case *cases;
    int n = support_edge_corpus(p, &cases);
    for (int i = 0; i < n; i++) plan_ordering_case(ctx, cases[i].A, w, cases[i].name);
    support_cases_free(cases, n);
    const char *few[] = {"bcsstk13", "abtaha1", "lp_ship04l"};
    for (int i = 0; i < 3; i++) {
        spmv_matrix_t *A = support_read_shared(few[i], p);
        plan_ordering_case(ctx, A, w, few[i]);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

Test(ehyb, plan_ordering_w32_f64) { plan_ordering(32, SPMV_F64); }
Test(ehyb, plan_ordering_w64_f32) { plan_ordering(64, SPMV_F32); }

/* An H100's figures (132 multiprocessors, 227 KiB of shared memory per block with the opt-in). */
static const spmv_device_info_t h100 = {.backend = SPMV_BACKEND_CUDA, .warp_size = 32, .multiprocessors = 132,
                                        .shared_mem_per_block = 232448};

/* The edge corpus built for device figures dev with options opt (warp size opt->warp_size): layouts, invariants
 * and results (user ordering), and the plan's checks of the caller, if any. */
static void corpus_on(const spmv_device_info_t *dev, spmv_precision_t p, const spmv_plan_options_t *opt,
                      void (*also)(const spmvport_format_data *, const char *))
{
    support_case *cases;
    int n = support_edge_corpus(p, &cases);
    for (int i = 0; i < n; i++) {
        spmvport_format_data fd;
        build(&fd, cases[i].A, opt->warp_size, dev, opt);
        check_invariants(&fd, cases[i].A, cases[i].name);
        if (also != NULL) also(&fd, cases[i].name);
        if (!opt->ehyb_plan_ordering) run_direct(&fd, cases[i].A, cases[i].name);
        check_invariants(&fd, cases[i].A, cases[i].name); /* counters back to zero after the calls */
        spmvport_format_data_free(&fd);
    }
    support_cases_free(cases, n);
}

/* Device figures other than the CPU defaults, through the builder. */
static void device_variant(const spmv_device_info_t *dev, int w, spmv_precision_t p, int plan_ord)
{
    spmv_plan_options_t opt = options(w, plan_ord, 0);
    corpus_on(dev, p, &opt, NULL);
}

Test(ehyb, device_tiny_shared_memory)
{
    /* 4 KiB of shared memory: segments of at most 127 (f64) or 255 (f32) columns, so METIS makes many parts and
     * parts past the cap are cut */
    spmv_device_info_t dev = {.backend = SPMV_BACKEND_CUDA, .warp_size = 32, .multiprocessors = 4,
                              .shared_mem_per_block = 4096};
    device_variant(&dev, 32, SPMV_F64, 0);
    device_variant(&dev, 64, SPMV_F32, 0);
    device_variant(&dev, 32, SPMV_F32, 1);
}

Test(ehyb, device_h100_and_mi250)
{
    spmv_device_info_t mi250 = {.backend = SPMV_BACKEND_HIP, .warp_size = 64, .multiprocessors = 110,
                                .shared_mem_per_block = 65536};
    device_variant(&h100, 32, SPMV_F64, 0);
    device_variant(&mi250, 64, SPMV_F64, 0);
}

/* options.ehyb_parts: few and many parts (past the rows of the small cases too) walk correctly */
Test(ehyb, parts_option)
{
    static const int counts[] = {1, 3, 37};
    for (int c = 0; c < 3; c++) {
        spmv_plan_options_t opt = options(32, 0, 0);
        opt.ehyb_parts = counts[c];
        corpus_on(&h100, SPMV_F64, &opt, NULL);
    }
}

/* Graphs with hubs where METIS, asked for parts of 1-2 vertices, printed "Cannot bisect a graph with 0 vertices!"
 * on stdout (both found by a fuzzer): options.ehyb_parts = 1456 on 2912 rows of 0-2 random columns, every 31st of
 * up to 2912; and the automatic 40 parts of a 21 x 40 pattern with a dense row (the fuzzer's matrix, reduced).
 * Now METIS gets parts of 12 vertices, cut further (partitioner=metis_cut) into the parts asked for; nothing is
 * printed, and the plans are correct. */
Test(ehyb, many_parts_on_hubs_print_nothing)
{
    const int32_t n = 2912;
    int32_t *rp = malloc(sizeof(int32_t) * (n + 1)), *ci = malloc(sizeof(int32_t) * (size_t)n * 40);
    char *used = calloc((size_t)n, 1);
    cr_assert(rp && ci && used);
    uint64_t r = 12345;
    int64_t nnz = 0;
    rp[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        const int32_t len = i % 31 == 0 ? (int32_t)((r >> 33) % n) : (int32_t)((r >> 33) % 3);
        for (int32_t k = 0; k < len; k++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            used[(r >> 33) % n] = 1;
        }
        for (int32_t j = 0; j < n; j++) /* the marked columns, ascending */
            if (used[j] && nnz < (int64_t)n * 40) ci[nnz++] = j, used[j] = 0;
        rp[i + 1] = (int32_t)nnz;
    }
    double *v = malloc(sizeof(double) * (size_t)(nnz + 1));
    cr_assert(v);
    for (int64_t e = 0; e < nnz; e++) v[e] = 1.0 + (double)(e % 7) / 8;
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, n, n, (int32_t)nnz, rp, ci, v, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);

    spmv_plan_options_t opt = options(32, 0, 0);
    opt.ehyb_parts = n / 2;
    spmvport_format_data fd;
    char msg[SPMVPORT_MSG_LEN] = "";
    long printed = 0;
    cr_assert_eq(support_build_quietly(&fd, A, SPMV_FORMAT_EHYB, 32, &h100, &opt, msg, sizeof msg, &printed),
                 SPMV_STATUS_SUCCESS, "build: %s", msg);
    cr_assert_eq(printed, 0, "the build printed %ld bytes on stdout", printed);
    cr_assert(strstr(fd.stats, "partitioner=metis_cut;") != NULL, "%s", fd.stats);
    cr_assert(strstr(fd.stats, ";parts=1456;") != NULL, "every part asked for: %s", fd.stats);
    check_invariants(&fd, A, "hubs");
    run_direct(&fd, A, "hubs");
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);

    /* the 21 x 40 pattern: each row's columns as runs "a-b" and single columns */
    static const char *small_rows[21] = {"", "", "", "", "14 25", "", "5", "", "11-13 23 25-30 32 34 37", "", "",
                                         "31-34 37-38", "2-3 20 24", "0 6 12 14 16 18 21 26 34",
                                         "3 7-8 10 12 22 27 30 35-36", "9 13 20-22 24 33 37", "24 26",
                                         "2 18 29-30 34", "1-2 4 11 14 18 24 28 31 33-34 39", "0-39",
                                         "0 2 7 9-10 12 14 24"};
    nnz = 0;
    for (int32_t i = 0; i < 21; i++) {
        for (const char *c = small_rows[i]; *c != 0;) {
            char *end;
            const long lo = strtol(c, &end, 10), hi = *end == '-' ? strtol(end + 1, &end, 10) : lo;
            for (long j = lo; j <= hi; j++) ci[nnz++] = (int32_t)j;
            c = end;
            while (*c == ' ') c++;
        }
        rp[i + 1] = (int32_t)nnz;
    }
    cr_assert_eq(spmv_matrix_create_csr(&A, 21, 40, (int32_t)nnz, rp, ci, v, SPMV_F64, 0, 0), SPMV_STATUS_SUCCESS);
    const spmv_device_info_t cpu = {.backend = SPMV_BACKEND_CPU, .warp_size = 32};
    opt.ehyb_parts = 0;
    cr_assert_eq(support_build_quietly(&fd, A, SPMV_FORMAT_EHYB, 32, &cpu, &opt, msg, sizeof msg, &printed),
                 SPMV_STATUS_SUCCESS, "build: %s", msg);
    cr_assert_eq(printed, 0, "the build printed %ld bytes on stdout", printed);
    cr_assert(strstr(fd.stats, "partitioner=metis_cut;") != NULL, "%s", fd.stats);
    check_invariants(&fd, A, "21 x 40");
    run_direct(&fd, A, "21 x 40");
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);
    free(rp), free(ci), free(used), free(v);
}

/* The default batch: 4 for narrow f64 slices of a matrix that is not small, 8 for wide ones and for f32. A 2-SM
 * device makes an 8000-row matrix large (4 parts of 1024 threads). */
Test(ehyb, batch_from_width)
{
    spmv_device_info_t two = {.backend = SPMV_BACKEND_CUDA, .warp_size = 32, .multiprocessors = 2,
                              .shared_mem_per_block = 232448};
    static const struct { const char *gen; spmv_precision_t p; int batch; } cases[] = {
        {"stencil3d:7:20", SPMV_F64, 4}, {"fem3d:3:12", SPMV_F64, 8}, {"stencil3d:7:20", SPMV_F32, 8}};
    for (int c = 0; c < 3; c++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[c].gen, cases[c].p, 1), SPMV_STATUS_SUCCESS);
        spmv_plan_options_t opt = options(32, 0, 0);
        spmvport_format_data fd;
        build(&fd, A, 32, &two, &opt);
        cr_assert(strstr(fd.stats, "small=0;") != NULL, "%s: %s", cases[c].gen, fd.stats);
        cr_assert_eq(fd.params[SPMVPORT_EHYB_P_BATCH], cases[c].batch, "%s: %s", cases[c].gen, fd.stats);
        run_direct(&fd, A, cases[c].gen);
        spmvport_format_data_free(&fd);
        spmv_matrix_destroy(A);
    }
}

/* options.ehyb_halo and ehyb_split: no halo, every column used once, a halo of columns used 3 times; one warp
 * per slice, 8 and the block's all (32 of 32 lanes, 16 of 64), on both warp sizes and precisions */
static int expected_split, expected_no_halo;

/* halo_and_split_options: the split asked for, and no halo entries when the halo is off */
static void split_and_halo_as_asked(const spmvport_format_data *fd, const char *name)
{
    cr_assert_eq(fd->params[SPMVPORT_EHYB_P_SPLIT], expected_split, "%s", name);
    if (expected_no_halo) cr_assert_eq(fd->params[SPMVPORT_EHYB_P_HALO], 0, "%s", name);
}

Test(ehyb, halo_and_split_options)
{
    static const struct { int halo, split, w; spmv_precision_t p; } vars[] = {
        {-1, 1, 32, SPMV_F64}, {1, 8, 32, SPMV_F64}, {3, 32, 32, SPMV_F32}, {1, 16, 64, SPMV_F32},
        {-1, 2, 64, SPMV_F64}};
    for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++) {
        spmv_plan_options_t opt = options(vars[v].w, 0, 0);
        opt.ehyb_halo = vars[v].halo;
        opt.ehyb_split = vars[v].split;
        expected_split = vars[v].split;
        expected_no_halo = vars[v].halo < 0;
        corpus_on(&h100, vars[v].p, &opt, split_and_halo_as_asked);
    }
}

/* A small matrix on a 132-multiprocessor device: one part per multiprocessor (8000 rows: 132 parts, not the
 * former 7 or 62), batch 8 in f64 too, several warps per slice */
Test(ehyb, small_matrix_parts)
{
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "stencil3d:7:20", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    spmv_plan_options_t opt = options(32, 0, 0);
    spmvport_format_data fd;
    build(&fd, A, 32, &h100, &opt);
    check_invariants(&fd, A, "stencil3d:7:20");
    run_direct(&fd, A, "stencil3d:7:20");
    const char *st = fd.stats;
    cr_assert(strstr(st, "small=1;") != NULL && strstr(st, "batch=8;") != NULL, "%s", st);
    cr_assert(fd.params[SPMVPORT_EHYB_P_SPLIT] > 1, "a small matrix splits its slices: %s", st);
    const char *pp = strstr(st, ";parts=");
    cr_assert(pp != NULL);
    const int parts = atoi(pp + 7);
    cr_assert(parts >= 120 && parts <= 132, "parts %d: one per multiprocessor", parts);
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);
}

Test(ehyb, bad_options)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "stencil2d:5:8", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    spmv_plan_options_t opt = options(0, 2, 0);
    spmv_plan_t *plan = NULL;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_EHYB, &opt), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(spmv_last_error(ctx), "ehyb_plan_ordering") != NULL, "%s", spmv_last_error(ctx));
    cr_assert_null(plan);
    opt = options(0, 0, 0);
    opt.ehyb_batch = 3;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_EHYB, &opt), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(spmv_last_error(ctx), "ehyb_batch") != NULL, "%s", spmv_last_error(ctx));
    cr_assert_null(plan);
    opt = options(0, 0, 0);
    opt.ehyb_parts = -1;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_EHYB, &opt), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(spmv_last_error(ctx), "ehyb_parts") != NULL, "%s", spmv_last_error(ctx));
    cr_assert_null(plan);
    opt = options(0, 0, 0);
    opt.ehyb_halo = -2;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_EHYB, &opt), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(spmv_last_error(ctx), "ehyb_halo") != NULL, "%s", spmv_last_error(ctx));
    cr_assert_null(plan);
    static const int bad_split[] = {-1, 3, 64};
    for (int k = 0; k < 3; k++) {
        opt = options(0, 0, 0);
        opt.ehyb_split = bad_split[k];
        cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_EHYB, &opt), SPMV_STATUS_INVALID_ARGUMENT);
        cr_assert(strstr(spmv_last_error(ctx), "ehyb_split") != NULL, "%s", spmv_last_error(ctx));
        cr_assert_null(plan);
    }
    spmvport_format_data fd;
    char msg[SPMVPORT_MSG_LEN] = "";
    opt = options(16, 0, 0);
    cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_EHYB, 16, NULL, &opt, msg, sizeof msg),
                 SPMV_STATUS_NOT_SUPPORTED, "%s", msg);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* ==================================================================================================== */
/* (c) invariants                                                                                        */
/* ==================================================================================================== */

Test(ehyb, invariants_corpus)
{
    for (int w = 32; w <= 64; w *= 2)
        for (int ord = 0; ord <= 1; ord++) {
            support_case *cases;
            int n = support_edge_corpus(w == 32 ? SPMV_F64 : SPMV_F32, &cases);
            spmv_plan_options_t opt = options(w, ord, 0);
            for (int i = 0; i < n; i++) {
                spmvport_format_data fd;
                build(&fd, cases[i].A, w, NULL, &opt);
                check_invariants(&fd, cases[i].A, cases[i].name);
                spmvport_format_data_free(&fd);
            }
            support_cases_free(cases, n);
        }
}

Test(ehyb, invariants_shared, .timeout = 600)
{
    char **names;
    int n = support_shared_names(&names);
    spmv_plan_options_t opt = options(32, 0, 0);
    for (int i = 0; i < n; i += 3) { /* a third of them: the executor tests cover the rest */
        spmv_matrix_t *A = support_read_shared(names[i], SPMV_F64);
        spmvport_format_data fd;
        build(&fd, A, 32, NULL, &opt);
        check_invariants(&fd, A, names[i]);
        spmvport_format_data_free(&fd);
        spmv_matrix_destroy(A);
    }
    support_names_free(names, n);
}

Test(ehyb, long_rows_take_the_chunk_path)
{
    support_case *cases;
    int n = support_edge_corpus(SPMV_F64, &cases);
    spmv_plan_options_t opt = options(32, 0, 0);
    int found = 0;
    for (int i = 0; i < n; i++) {
        if (strstr(cases[i].name, "row of 70000") == NULL && strstr(cases[i].name, "one dense row") == NULL)
            continue;
        spmvport_format_data fd;
        build(&fd, cases[i].A, 32, NULL, &opt);
        cr_assert(fd.params[SPMVPORT_EHYB_P_LONG_ROWS] >= 1 && fd.params[SPMVPORT_EHYB_P_CHUNKS] > 1,
                  "%s: %s", cases[i].name, fd.stats);
        /* the hub row does not widen its ELL slice to its length: padding stays below the non-zeros */
        const int64_t slots = fd.params[SPMVPORT_EHYB_P_ELL_SLOTS] + fd.params[SPMVPORT_EHYB_P_ER_SLOTS];
        cr_assert(slots < 2 * (int64_t)cases[i].A->nnz, "%s: %s", cases[i].name, fd.stats);
        spmvport_format_data_free(&fd);
        found++;
    }
    cr_assert_eq(found, 2);
    support_cases_free(cases, n);
}

Test(ehyb, bytes_accounted_and_plans_reproducible)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_device_info_t info;
    spmv_context_get_info(ctx, &info);
    const char *specs[] = {"fem3d:3:6", "circuit:20000", "lp:300:900:7"};
    for (int s = 0; s < 3; s++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, specs[s], SPMV_F64, 3), SPMV_STATUS_SUCCESS);
        spmv_plan_options_t opt = options(0, 0, 0);
        spmv_plan_t *plan = NULL;
        cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_EHYB, &opt), SPMV_STATUS_SUCCESS);
        spmv_plan_info_t pi;
        spmv_plan_get_info(plan, &pi);
        spmvport_format_data a, b;
        build(&a, A, pi.warp_size, &info, &opt);
        build(&b, A, pi.warp_size, &info, &opt);
        size_t bytes = 0;
        cr_assert_eq(a.narrays, b.narrays);
        for (int k = 0; k < a.narrays; k++) {
            bytes += a.arrays[k].bytes;
            cr_assert(a.arrays[k].bytes == b.arrays[k].bytes &&
                      memcmp(a.arrays[k].data, b.arrays[k].data, a.arrays[k].bytes) == 0,
                      "%s: array %s differs between two builds", specs[s], a.arrays[k].name);
        }
        cr_assert_eq(pi.device_bytes, bytes, "%s: device_bytes %zu, arrays %zu", specs[s], pi.device_bytes, bytes);
        cr_assert_eq(pi.deterministic, 1);
        spmvport_format_data_free(&a);
        spmvport_format_data_free(&b);
        spmv_plan_destroy(plan);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

/* ==================================================================================================== */
/* (d) update_values                                                                                     */
/* ==================================================================================================== */

static void update_values_case(spmv_context_t *ctx, const spmv_matrix_t *A, int w, const char *name)
{
    int32_t m, n, nnz;
    spmv_precision_t p;
    spmv_matrix_get_size(A, &m, &n, &nnz, &p);
    const size_t vs = vsize(p);
    const int32_t *ptr, *col;
    const void *val;
    spmv_matrix_get_csr(A, &ptr, &col, &val);
    void *v2 = malloc(vs * ((size_t)nnz + 1));
    cr_assert(v2);
    support_random_vector(v2, nnz, p, 31);
    spmv_matrix_t *B = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&B, m, n, nnz, ptr, col, v2, p, 0, 0), SPMV_STATUS_SUCCESS);
    spmv_plan_options_t opt = options(w, 0, 0);
    spmv_plan_t *pa = NULL, *pb = NULL;
    cr_assert_eq(spmv_plan_create(&pa, ctx, A, SPMV_FORMAT_EHYB, &opt), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_plan_create(&pb, ctx, B, SPMV_FORMAT_EHYB, &opt), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_plan_update_values(pa, v2), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    void *x = malloc(vs * ((size_t)n + 1)), *y0 = malloc(vs * ((size_t)m + 1));
    void *ya = malloc(vs * ((size_t)m + 1)), *yb = malloc(vs * ((size_t)m + 1));
    cr_assert(x && y0 && ya && yb);
    support_random_vector(x, n, p, 32);
    support_random_vector(y0, m, p, 33);
    memcpy(ya, y0, vs * (size_t)m);
    memcpy(yb, y0, vs * (size_t)m);
    cr_assert_eq(spmv_execute(pa, 1.5, x, 0.5, ya), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_execute(pb, 1.5, x, 0.5, yb), SPMV_STATUS_SUCCESS);
    cr_assert(memcmp(ya, yb, vs * (size_t)m) == 0, "%s: updated plan differs from a plan of the new values", name);
    double ratio;
    cr_assert_eq(spmv_reference_check(B, 1.5, x, 0.5, y0, ya, &ratio, NULL), SPMV_STATUS_SUCCESS);
    cr_assert(ratio <= 1.0, "%s: updated values off by %g x the bound", name, ratio);
    free(v2); free(x); free(y0); free(ya); free(yb);
    spmv_plan_destroy(pa);
    spmv_plan_destroy(pb);
    spmv_matrix_destroy(B);
}

Test(ehyb, update_values)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const char *specs[] = {"fem3d:3:5", "circuit:20000", "lp:300:900:7", "kron:11:8"};
    for (int s = 0; s < 4; s++)
        for (int pr = 0; pr < 2; pr++) {
            spmv_matrix_t *A = NULL;
            cr_assert_eq(spmv_matrix_generate(&A, specs[s], pr ? SPMV_F32 : SPMV_F64, 5), SPMV_STATUS_SUCCESS);
            update_values_case(ctx, A, pr ? 64 : 32, specs[s]);
            spmv_matrix_destroy(A);
        }
    spmv_context_destroy(ctx);
}

/* ==================================================================================================== */
/* (e) statistics and repeated executes                                                                  */
/* ==================================================================================================== */

Test(ehyb, stats_keys)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "fem3d:3:8", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    spmv_plan_t *plan = NULL;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_EHYB, NULL), SPMV_STATUS_SUCCESS);
    spmv_plan_info_t info;
    spmv_plan_get_info(plan, &info);
    const char *keys[] = {"K=", "P=", "parts=", "ell_width_min=", "ell_width_avg=", "ell_width_max=",
                          "near_width_max=", "er_nnz_frac=", "far_nnz_frac=", "padding_ratio=", "graph_ms=",
                          "metis_ms=", "reorder_ms=", "convert_ms=", "seed="};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        cr_assert(strstr(info.stats, keys[k]) != NULL, "stats lack %s: %s", keys[k], info.stats);
    cr_assert(strstr(info.stats, "P=108;") != NULL, "CPU default P: %s", info.stats);
    cr_assert_eq(info.format, SPMV_FORMAT_EHYB);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

Test(ehyb, many_repeated_executes)
{
    /* the public code never reset its ER counter: from the second call on it skipped the ER work */
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const char *specs[] = {"circuit:20000", "kron:11:8"};
    for (int s = 0; s < 2; s++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, specs[s], SPMV_F64, 9), SPMV_STATUS_SUCCESS);
        spmv_plan_t *plan = NULL;
        cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_EHYB, NULL), SPMV_STATUS_SUCCESS);
        int32_t m, n;
        spmv_matrix_get_size(A, &m, &n, NULL, NULL);
        double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)m);
        double *first = malloc(sizeof(double) * (size_t)m);
        cr_assert(x && y && first);
        support_random_vector(x, n, SPMV_F64, 41);
        for (int call = 0; call < 25; call++) {
            for (int32_t i = 0; i < m; i++) y[i] = NAN;
            cr_assert_eq(spmv_execute(plan, 1.0, x, 0.0, y), SPMV_STATUS_SUCCESS);
            if (call == 0) {
                double ratio;
                cr_assert_eq(spmv_reference_check(A, 1.0, x, 0.0, NULL, y, &ratio, NULL), SPMV_STATUS_SUCCESS);
                cr_assert(ratio <= 1.0, "%s: off by %g x the bound", specs[s], ratio);
                memcpy(first, y, sizeof(double) * (size_t)m);
            } else {
                cr_assert(memcmp(first, y, sizeof(double) * (size_t)m) == 0, "%s: call %d differs", specs[s], call);
            }
        }
        spmvport_format_data fd;
        build(&fd, A, 32, NULL, &(spmv_plan_options_t){0});
        cr_assert(fd.params[SPMVPORT_EHYB_P_ER_ROWS] > 0, "%s: the test needs ER rows", specs[s]);
        spmvport_format_data_free(&fd);
        free(x); free(y); free(first);
        spmv_plan_destroy(plan);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}
