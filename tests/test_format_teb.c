/*
 * test_format_teb.c -- format teb (threshold-exchange-order blocks):
 *   (a) the CPU executor against the oracle on the edge-case corpus and every shared matrix, at warp size 32 and
 *       64, f32 and f64, alpha/beta cases, repeated executes;
 *   (b) the option teb_blocks (fixed block counts, from one block to more blocks than rows) through the corpus;
 *   (c) format invariants from spmvport_format_build: every non-zero stored once (the CSR rebuilt from the arrays),
 *       row_orig a permutation, blocks and tiers well formed, bytes accounted, value_map consistent, the block
 *       statistics equal to those of the histogram search, which itself agrees with a plain two-pointer merge;
 *   (d) spmv_plan_update_values against a matrix created with the new values;
 *   (e) the plan info stats keys.
 */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "internal.h"
#include "format_builders.h"
#include "format_teb.h"

/* ---- (a), (b): against the oracle ------------------------------------------------------------------------------ */

static void corpus(int warp_size, spmv_precision_t p, int teb_blocks)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.warp_size = warp_size;
    opt.teb_blocks = teb_blocks;
    support_check_corpus(ctx, SPMV_FORMAT_TEB, &opt, p);
    spmv_context_destroy(ctx);
}

static void shared(int warp_size, spmv_precision_t p)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.warp_size = warp_size;
    support_check_shared(ctx, SPMV_FORMAT_TEB, &opt, p);
    spmv_context_destroy(ctx);
}

Test(teb, corpus_w32_f64) { corpus(32, SPMV_F64, 0); }
Test(teb, corpus_w64_f64) { corpus(64, SPMV_F64, 0); }
Test(teb, corpus_w32_f32) { corpus(32, SPMV_F32, 0); }
Test(teb, corpus_w64_f32) { corpus(64, SPMV_F32, 0); }
Test(teb, shared_w32_f64, .timeout = 600) { shared(32, SPMV_F64); }
Test(teb, shared_w64_f64, .timeout = 600) { shared(64, SPMV_F64); }
Test(teb, shared_w32_f32, .timeout = 600) { shared(32, SPMV_F32); }
Test(teb, shared_w64_f32, .timeout = 600) { shared(64, SPMV_F32); }

Test(teb, fixed_block_counts)
{
    /* one block (the whole matrix in one thread block), two, a prime, and more blocks than rows (clamped) */
    static const int counts[] = {1, 2, 7, 1000000};
    for (int i = 0; i < 4; i++) {
        corpus(32, SPMV_F64, counts[i]);
        corpus(64, SPMV_F32, counts[i]);
    }
}

Test(teb, negative_block_count_rejected)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "stencil2d:5:10", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.teb_blocks = -3;
    spmv_plan_t *plan = NULL;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_TEB, &opt), SPMV_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(spmv_last_error(ctx), "teb_blocks") != NULL, "message: %s", spmv_last_error(ctx));
    cr_assert_null(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* ---- (c): invariants ------------------------------------------------------------------------------------------ */

static const int32_t *arr32(const spmvport_format_data *fd, int slot) { return fd->arrays[slot].data; }
static int64_t count_of(const spmvport_format_data *fd, int slot) { return (int64_t)(fd->arrays[slot].bytes / 4); }

/* The plain two-pointer merge of Algorithm 2 on lengths sorted longest first. */
static void naive_merge(const int64_t *len, int64_t R, int64_t nnz, int64_t bln, int64_t tf, spmvport_teb_sim *o)
{
    memset(o, 0, sizeof *o);
    const double avg = (double)nnz / (double)bln;
    int64_t begin = 0, end = R - 1, blk = 0;
    for (; blk < bln && begin <= end; blk++) {
        int64_t sum = 0;
        if (blk < bln - 1) {
            sum = len[begin++];
            while (begin <= end && sum + len[end] <= tf) sum += len[end--];
        } else {
            while (begin <= end) sum += len[begin++];
        }
        o->sq_dev += ((double)sum - avg) * ((double)sum - avg);
        if (sum > o->max_nnz) o->max_nnz = sum;
        o->nonempty++;
    }
    o->sq_dev += (double)(bln - blk) * avg * avg;
}

static void assert_sim_equal(const spmvport_teb_sim *a, const spmvport_teb_sim *b, const char *what)
{
    cr_assert_eq(a->max_nnz, b->max_nnz, "%s: max %lld vs %lld", what, (long long)a->max_nnz, (long long)b->max_nnz);
    cr_assert_eq(a->nonempty, b->nonempty, "%s: nonempty %lld vs %lld", what, (long long)a->nonempty,
                 (long long)b->nonempty);
    cr_assert(fabs(a->sq_dev - b->sq_dev) <= 1e-9 * fmax(1.0, fabs(b->sq_dev)), "%s: sq_dev %.17g vs %.17g", what,
              a->sq_dev, b->sq_dev);
}

/* Histogram of the non-empty lengths of A (ascending) and the lengths sorted longest first. */
typedef struct {
    int64_t *len, *count, *sorted, R, nnz;
    spmvport_teb_hist h;
} test_hist;

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void hist_from_lengths(test_hist *t, const int64_t *lengths, int64_t m)
{
    memset(t, 0, sizeof *t);
    t->sorted = malloc(((size_t)m + 1) * sizeof(int64_t));
    t->len = malloc(((size_t)m + 1) * sizeof(int64_t));
    t->count = malloc(((size_t)m + 1) * sizeof(int64_t));
    cr_assert(t->sorted && t->len && t->count);
    for (int64_t i = 0; i < m; i++)
        if (lengths[i] > 0) t->sorted[t->R++] = lengths[i], t->nnz += lengths[i];
    qsort(t->sorted, (size_t)t->R, sizeof(int64_t), cmp_desc);
    int32_t D = 0;
    for (int64_t i = t->R - 1; i >= 0; i--) {
        if (D > 0 && t->len[D - 1] == t->sorted[i]) t->count[D - 1]++;
        else t->len[D] = t->sorted[i], t->count[D++] = 1;
    }
    t->h = (spmvport_teb_hist){D, t->len, t->count, t->R, t->nnz};
}

static void hist_free(test_hist *t)
{
    free(t->sorted), free(t->len), free(t->count);
}

static uint64_t rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

Test(teb, histogram_search_equals_plain_merge)
{
    uint64_t s = 7;
    int64_t lengths[3000];
    for (int trial = 0; trial < 60; trial++) {
        int64_t m = 1 + (int64_t)(rng(&s) % 3000);
        for (int64_t i = 0; i < m; i++) {
            switch (trial % 5) {
            case 0: lengths[i] = 7; break;                                             /* regular */
            case 1: lengths[i] = 1 + (int64_t)(rng(&s) % 4); break;                    /* few lengths */
            case 2: lengths[i] = (int64_t)(rng(&s) % 30); break;                       /* with empty rows */
            case 3: lengths[i] = 1 + (int64_t)(1000.0 / (1.0 + (double)(rng(&s) % 997))); break; /* power law */
            default: lengths[i] = rng(&s) % 50 == 0 ? 500 + (int64_t)(rng(&s) % 5000) : 1 + (int64_t)(rng(&s) % 6);
            }
        }
        test_hist t;
        hist_from_lengths(&t, lengths, m);
        if (t.R == 0) {
            hist_free(&t);
            continue;
        }
        int64_t *rem = malloc((size_t)t.h.D * sizeof(int64_t));
        cr_assert(rem);
        for (int q = 0; q < 40; q++) {
            int64_t bln = 1 + (int64_t)(rng(&s) % (uint64_t)(t.R + 3));
            static const int kmil[] = {1000, 1005, 1010, 1030, 1200, 700};
            int64_t tf = q % 7 == 6 ? (int64_t)(rng(&s) % (uint64_t)(t.nnz + 2)) : t.nnz * kmil[q % 6] / (1000 * bln);
            spmvport_teb_sim a, b;
            spmvport_teb_simulate(&t.h, bln, tf, rem, &a);
            naive_merge(t.sorted, t.R, t.nnz, bln, tf, &b);
            char what[128];
            snprintf(what, sizeof what, "trial %d m=%lld bln=%lld tf=%lld", trial, (long long)m, (long long)bln,
                     (long long)tf);
            assert_sim_equal(&a, &b, what);
        }
        free(rem);
        hist_free(&t);
    }
}

/* Every invariant of the layout of format_teb.h for one matrix and warp size. */
static void check_invariants(const char *name, const spmv_matrix_t *A, int W, int teb_blocks)
{
    int32_t m, n, nnz;
    spmv_precision_t prec;
    const int32_t *rp, *ci;
    const void *av;
    spmv_matrix_get_size(A, &m, &n, &nnz, &prec);
    spmv_matrix_get_csr(A, &rp, &ci, &av);
    spmv_device_info_t dev;
    memset(&dev, 0, sizeof dev);
    dev.backend = SPMV_BACKEND_CPU;
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.teb_blocks = teb_blocks;
    spmvport_format_data fd;
    char msg[512] = "";
    cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_TEB, W, &dev, &opt, msg, sizeof msg), SPMV_STATUS_SUCCESS,
                 "%s: %s", name, msg);
    const size_t vs = prec == SPMV_F32 ? sizeof(float) : sizeof(double);
    cr_assert_eq(fd.narrays, SPMVPORT_TEB_NARRAYS, "%s", name);
    cr_assert(fd.deterministic, "%s: no atomics, so deterministic", name);
    cr_assert_eq(fd.row_perm_array, -1, "%s: x and y stay in A's ordering", name);
    const int64_t nb = fd.params[SPMVPORT_TEB_P_BLOCKS], B = fd.params[SPMVPORT_TEB_P_THREADS];
    const int32_t *ptr = arr32(&fd, SPMVPORT_TEB_ROW_PTR), *col = arr32(&fd, SPMVPORT_TEB_COL_IDX);
    const int32_t *blo = arr32(&fd, SPMVPORT_TEB_BLO_IDX), *orig = arr32(&fd, SPMVPORT_TEB_ROW_ORIG);
    const int32_t *tier = arr32(&fd, SPMVPORT_TEB_BLO_TIER);
    const char *val = fd.arrays[SPMVPORT_TEB_VALUES].data;
    cr_assert(B % W == 0 && B <= SPMVPORT_TEB_MAX_THREADS && B / W <= W, "%s: threads %lld", name, (long long)B);

    /* bytes: every array has the size of the layout, and their sum is what the plan reports */
    cr_assert_eq(fd.arrays[SPMVPORT_TEB_VALUES].bytes, (size_t)nnz * vs, "%s", name);
    cr_assert(fd.arrays[SPMVPORT_TEB_VALUES].is_values, "%s", name);
    cr_assert_eq(count_of(&fd, SPMVPORT_TEB_COL_IDX), nnz, "%s", name);
    cr_assert_eq(count_of(&fd, SPMVPORT_TEB_ROW_PTR), (int64_t)m + 1, "%s", name);
    cr_assert_eq(count_of(&fd, SPMVPORT_TEB_BLO_IDX), nb + 1, "%s", name);
    cr_assert_eq(count_of(&fd, SPMVPORT_TEB_ROW_ORIG), m, "%s", name);
    cr_assert_eq(count_of(&fd, SPMVPORT_TEB_BLO_TIER), nb * SPMVPORT_TEB_TIER_FIELDS, "%s", name);
    size_t bytes = 0;
    for (int a = 0; a < fd.narrays; a++) bytes += fd.arrays[a].bytes;
    cr_assert_eq(bytes, (size_t)nnz * (vs + 4) + (size_t)(2 * (int64_t)m + 1) * 4 + (size_t)(nb + 1) * 4 +
                            (size_t)nb * SPMVPORT_TEB_TIER_FIELDS * 4, "%s: bytes", name);

    /* row_orig is a permutation; each new row is A's row row_orig[i], entries in order (the CSR rebuilt) */
    char *seen = calloc((size_t)m + 1, 1);
    int32_t *hit = calloc((size_t)nnz + 1, sizeof(int32_t));
    cr_assert(seen && hit);
    cr_assert_eq(ptr[0], 0, "%s", name);
    cr_assert_eq(ptr[m], nnz, "%s", name);
    cr_assert_eq(fd.value_slots, nnz, "%s", name);
    cr_assert(nnz == 0 || fd.value_map != NULL, "%s", name);
    for (int32_t i = 0; i < m; i++) {
        int32_t r = orig[i];
        cr_assert(r >= 0 && r < m && !seen[r], "%s: row_orig[%d] = %d is not a permutation", name, i, r);
        seen[r] = 1;
        cr_assert_eq(ptr[i + 1] - ptr[i], rp[r + 1] - rp[r], "%s: new row %d has the length of row %d", name, i, r);
        for (int32_t j = 0; j < ptr[i + 1] - ptr[i]; j++) {
            int32_t s = ptr[i] + j, k = rp[r] + j;
            cr_assert_eq(col[s], ci[k], "%s: entry %d of row %d", name, j, r);
            cr_assert(memcmp(val + (size_t)s * vs, (const char *)av + (size_t)k * vs, vs) == 0, "%s: value", name);
            cr_assert_eq(fd.value_map[s], k, "%s: value_map[%d]", name, s);
            hit[k]++;
        }
    }
    for (int32_t k = 0; k < nnz; k++) cr_assert_eq(hit[k], 1, "%s: entry %d stored %d times", name, k, hit[k]);

    /* blocks: contiguous, non-empty, rows longest first, tiers in order and by the rules of format_teb.h */
    cr_assert_eq(blo[0], 0, "%s", name);
    cr_assert_eq(blo[nb], m, "%s", name);
    cr_assert(m == 0 || nb >= 1, "%s", name);
    int64_t bln = fd.params[SPMVPORT_TEB_P_BLN], tf = fd.params[SPMVPORT_TEB_P_THRESHOLD];
    double sq = 0, avg = (double)nnz / (double)bln;
    int64_t max_nnz = 0, nonempty_blocks = 0;
    for (int64_t b = 0; b < nb; b++) {
        const int32_t r0 = blo[b], r1 = blo[b + 1], *t = tier + b * SPMVPORT_TEB_TIER_FIELDS;
        const int32_t wb = t[SPMVPORT_TEB_TIER_WARP], gb = t[SPMVPORT_TEB_TIER_GROUP], eb = t[SPMVPORT_TEB_TIER_EMPTY];
        const int lg = t[SPMVPORT_TEB_TIER_LANES_LOG2];
        cr_assert(r0 < r1, "%s: block %lld is empty", name, (long long)b);
        cr_assert(r0 <= wb && wb <= gb && gb <= eb && eb <= r1, "%s: tiers of block %lld", name, (long long)b);
        cr_assert(lg >= 0 && (1 << lg) <= W / 2, "%s: lanes_log2 %d", name, lg);
        for (int32_t i = r0; i < r1; i++) {
            int32_t len = ptr[i + 1] - ptr[i];
            cr_assert_eq(len > 0, i < eb, "%s: row %d: non-empty rows first, then empty ones", name, i);
            if (i > r0 && i < eb) cr_assert(len <= ptr[i] - ptr[i - 1], "%s: block %lld not longest first", name,
                                            (long long)b);
            if (i < wb) cr_assert(len >= B, "%s: a block row of %d entries", name, len);
            if (i >= gb && i < eb) cr_assert(len < W, "%s: a group row of %d >= W entries", name, len);
        }
        int64_t bsum = ptr[r1] - ptr[r0];
        /* Algorithm 2: a block made by the loop holds its head and more only while the sum stays <= tf */
        if (bsum > 0 && (nonempty_blocks < bln - 1) && eb - r0 > 1)
            cr_assert(bsum <= tf, "%s: block %lld has %lld > threshold %lld", name, (long long)b, (long long)bsum,
                      (long long)tf);
        nonempty_blocks += bsum > 0;
        sq += ((double)bsum - avg) * ((double)bsum - avg);
        if (bsum > max_nnz) max_nnz = bsum;
    }
    if (nnz > 0) {
        sq += (double)(bln - nonempty_blocks) * avg * avg;
        /* the statistics of the arrays are those the histogram search predicted */
        int64_t *lengths = malloc(((size_t)m + 1) * sizeof(int64_t));
        cr_assert(lengths);
        for (int32_t i = 0; i < m; i++) lengths[i] = rp[i + 1] - rp[i];
        test_hist t;
        hist_from_lengths(&t, lengths, m);
        int64_t *rem = malloc((size_t)t.h.D * sizeof(int64_t) + 8);
        spmvport_teb_sim sim, from_arrays = {sq, max_nnz, nonempty_blocks};
        spmvport_teb_simulate(&t.h, bln, tf, rem, &sim);
        assert_sim_equal(&from_arrays, &sim, name);
        double var = support_stat(fd.stats, "variance");
        cr_assert(fabs(var - sq / (double)bln) <= 1e-5 * fmax(1.0, var), "%s: variance %g vs %g", name, var,
                  sq / (double)bln);
        cr_assert_eq((int64_t)support_stat(fd.stats, "block_nnz_max"), max_nnz, "%s", name);
        free(rem);
        free(lengths);
        hist_free(&t);
    }
    if (teb_blocks > 0 && nnz > 0) {
        int64_t R = 0;
        for (int32_t i = 0; i < m; i++) R += rp[i + 1] > rp[i];
        cr_assert_eq(bln, teb_blocks < R ? teb_blocks : R, "%s: teb_blocks %d", name, teb_blocks);
    }
    free(seen);
    free(hit);
    spmvport_format_data_free(&fd);
}

Test(teb, invariants_corpus)
{
    for (int pi = 0; pi < 2; pi++) {
        spmv_precision_t p = pi ? SPMV_F32 : SPMV_F64;
        support_case *cases;
        int n = support_edge_corpus(p, &cases);
        for (int i = 0; i < n; i++)
            for (int W = 32; W <= 64; W *= 2) {
                check_invariants(cases[i].name, cases[i].A, W, 0);
                check_invariants(cases[i].name, cases[i].A, W, 5);
            }
        support_cases_free(cases, n);
    }
}

Test(teb, invariants_shared, .timeout = 600)
{
    char **names;
    int n = support_shared_names(&names);
    cr_assert(n > 0, "no shared matrices in %s", support_matrix_dir());
    for (int i = 0; i < n; i++) {
        spmv_matrix_t *A = support_read_shared(names[i], SPMV_F64);
        check_invariants(names[i], A, 32, 0);
        check_invariants(names[i], A, 64, 0);
        spmv_matrix_destroy(A);
    }
    support_names_free(names, n);
}

Test(teb, long_rows_leave_the_thread)
{
    /* one row far longer than a block: the whole thread block takes it; power-law rows get warps */
    static const struct { const char *spec; const char *key; } cases[] = {
        {"circuit:20000", "block_rows"}, {"kron:12:16", "warp_rows"}, {"lp:2000:20000:40", "warp_rows"}};
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    for (int i = 0; i < 3; i++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, SPMV_F64, 3), SPMV_STATUS_SUCCESS);
        spmv_plan_t *plan = NULL;
        cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_TEB, NULL), SPMV_STATUS_SUCCESS, "%s",
                     spmv_last_error(ctx));
        spmv_plan_info_t info;
        spmv_plan_get_info(plan, &info);
        cr_assert(support_stat(info.stats, cases[i].key) > 0, "%s: %s", cases[i].spec, info.stats);
        spmv_plan_destroy(plan);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

/* ---- (d): update_values ---------------------------------------------------------------------------------------- */


static void update_generated(const char *spec, spmv_precision_t p, int W)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = NULL, *A2 = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, spec, p, 5), SPMV_STATUS_SUCCESS);
    int32_t m, n, nnz;
    const int32_t *rp, *ci;
    const void *v;
    spmv_matrix_get_size(A, &m, &n, &nnz, NULL);
    spmv_matrix_get_csr(A, &rp, &ci, &v);
    size_t vs = p == SPMV_F32 ? sizeof(float) : sizeof(double);
    void *v2 = malloc(vs * ((size_t)nnz + 1));
    cr_assert(v2);
    support_random_vector(v2, nnz, p, 77);
    cr_assert_eq(spmv_matrix_create_csr(&A2, m, n, nnz, rp, ci, v2, p, 0, 0), SPMV_STATUS_SUCCESS);
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.warp_size = W;
    spmv_plan_t *plan = NULL;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_TEB, &opt), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_plan_update_values(plan, v2), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    support_check_plan_against(ctx, plan, A2, spec);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_matrix_destroy(A2);
    free(v2);
    spmv_context_destroy(ctx);
}

Test(teb, update_values_generated)
{
    update_generated("kron:10:8", SPMV_F64, 32);
    update_generated("circuit:5000", SPMV_F32, 64);
    update_generated("stencil2d:5:30", SPMV_F64, 64);
}

Test(teb, update_values_with_duplicates)
{
    /* creator order: unsorted rows with repeated entries, summed into the stored matrix (src_map path) */
    enum { M = 300, PER = 9 };
    int32_t ptr[M + 1], col[M * PER];
    double v1[M * PER], v2[M * PER];
    uint64_t s = 3;
    for (int32_t i = 0; i <= M; i++) ptr[i] = i * PER;
    for (int32_t k = 0; k < M * PER; k++) {
        col[k] = (int32_t)(rng(&s) % 40) * 7 % M;
        v1[k] = (double)(rng(&s) % 1000) / 500.0 - 1.0;
        v2[k] = (double)(rng(&s) % 1000) / 250.0 - 2.0;
    }
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = NULL, *A2 = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, M, M, M * PER, ptr, col, v1, SPMV_F64, 0, SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    cr_assert_eq(spmv_matrix_create_csr(&A2, M, M, M * PER, ptr, col, v2, SPMV_F64, 0, SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS);
    spmv_plan_t *plan = NULL;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_TEB, NULL), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_plan_update_values(plan, v2), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    support_check_plan_against(ctx, plan, A2, "duplicates");
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_matrix_destroy(A2);
    spmv_context_destroy(ctx);
}

/* ---- (e): plan info ------------------------------------------------------------------------------------------- */

Test(teb, plan_info_stats)
{
    static const char *keys[] = {"blocks", "bln", "threshold", "k", "critical_blocks", "variance", "block_nnz_mean",
                                 "block_nnz_max", "max_over_mean", "threshold_ms", "merge_ms"};
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, "kron:12:8", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    spmv_plan_t *plan = NULL;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_TEB, NULL), SPMV_STATUS_SUCCESS);
    spmv_plan_info_t info;
    cr_assert_eq(spmv_plan_get_info(plan, &info), SPMV_STATUS_SUCCESS);
    cr_assert_eq(info.format, SPMV_FORMAT_TEB);
    cr_assert(info.deterministic);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) support_stat(info.stats, keys[i]);
    double k = support_stat(info.stats, "k");
    cr_assert(k == 1.005 || k == 1.01 || k == 1.03, "k = %g", k);
    cr_assert(support_stat(info.stats, "blocks") >= 2, "%s", info.stats);
    cr_assert(support_stat(info.stats, "max_over_mean") >= 1.0, "%s", info.stats);
    /* device bytes: values, column indices, row_ptr, row_orig, blocks + 1 starts, 4 tier fields per block */
    int64_t blocks = (int64_t)support_stat(info.stats, "blocks");
    size_t expect = (size_t)info.nnz * 12 + (size_t)(2 * (int64_t)info.m + 1) * 4 + (size_t)(blocks + 1) * 4 +
                    (size_t)blocks * 16;
    cr_assert_eq(info.device_bytes, expect, "device_bytes %zu vs %zu", info.device_bytes, expect);
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}
