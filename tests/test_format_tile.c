/*
 * test_format_tile.c -- TileSpMV (format `tile`): the CPU executor against the oracle on the edge-case corpus
 * and every shared matrix (warp size 32 and 64, f32 and f64, alpha/beta cases, repeats); the option variants
 * (all-CSR tiles, the paper's seven formats without band tiles, deferred COO on / off / automatic (and its COO-tile rule), split tile rows, one-warp deferred
 * chunks, the deferred part inside the tile kernel forced, refused and automatic); the format's invariants read back from the arrays (every non-zero stored exactly once, value map,
 * tasks, bytes);
 * spmv_plan_update_values; the plan statistics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_tile.h"
#include "internal.h"
#include "lb_split_check.h"
#include "support.h"

#define TD SPMVPORT_TILE_DIM

static spmv_plan_options_t tile_options(int warp_size, int variant, int deferred, int balance)
{
    spmv_plan_options_t opt;
    spmv_plan_options_init(&opt);
    opt.warp_size = warp_size;
    opt.tile_variant = variant;
    opt.tile_deferred_coo = deferred;
    opt.tile_balance = balance;
    return opt;
}

/* A CUDA GPU of `sms` SMs with 60 MB of L2 (an H200 has 132), for the builder rules that depend on the device. */
static spmv_device_info_t model_gpu(int sms)
{
    spmv_device_info_t gpu;
    memset(&gpu, 0, sizeof gpu);
    gpu.backend = SPMV_BACKEND_CUDA, gpu.l2_bytes = (size_t)60 << 20, gpu.multiprocessors = sms;
    gpu.shared_mem_per_block = 48 * 1024;
    return gpu;
}

/* ---- a matrix that selects every one of the eight tile formats (and has edge tiles) ------------------------ */

typedef struct {
    int32_t *r, *c;
    double *v;
    int32_t n, cap;
} coo_list;

static void push(coo_list *t, int32_t r, int32_t c, double v)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->r = realloc(t->r, (size_t)t->cap * sizeof *t->r);
        t->c = realloc(t->c, (size_t)t->cap * sizeof *t->c);
        t->v = realloc(t->v, (size_t)t->cap * sizeof *t->v);
        cr_assert(t->r && t->c && t->v);
    }
    t->r[t->n] = r, t->c[t->n] = c, t->v[t->n] = v, t->n++;
}

/* Tile (ti, tj) of a 16*8+5 square matrix, one pattern per tile column; returns the matrix from COO (values
 * from the seed; repeated entries summed when dup is set, which gives the matrix a creator-order map). */
static spmv_matrix_t *crafted(spmv_precision_t p, uint64_t seed, int dup)
{
    const int32_t size = 8 * TD + 5;
    coo_list t = {0};
    uint64_t s = seed * 2654435761u + 1;
#define RND() ((double)((s = s * 6364136223846793005ull + 1442695040888963407ull) >> 11) * 0x1.0p-53 * 2 - 1)
    for (int ti = 0; ti * TD < size; ti++) {
        const int32_t r0 = ti * TD;
        for (int32_t i = r0; i < r0 + TD && i < size; i++) {
            const int li = i - r0;
            /* tile column 0: dense; 1: COO (a few entries); 2: DenseRow (rows 3 and 9 full) */
            for (int j = 0; j < TD; j++) if ((li * 7 + j) % 8 != 0) push(&t, i, 0 * TD + j, RND());
            if (li % 5 == 1) push(&t, i, 1 * TD + li % TD, RND());
            if (li == 3 || li == 9) for (int j = 0; j < TD; j++) push(&t, i, 2 * TD + j, RND());
            /* 3: DenseCol (column 6 full); 4: ELL (two per row); 5: CSR (irregular rows) */
            push(&t, i, 3 * TD + 6, RND());
            push(&t, i, 4 * TD + li % TD, RND());
            push(&t, i, 4 * TD + (li + 5) % TD, RND());
            for (int j = 0; j < (li % 4 == 0 ? 9 : li % 4 == 1 ? 1 : 0); j++)
                push(&t, i, 5 * TD + (li + 3 * j) % TD, RND());
            /* 6: HYB (three per row, row 7 has ten); 7 (columns 112..132, an edge tile past 128): CSR / COO mix */
            for (int j = 0; j < (li == 7 ? 10 : 3); j++) push(&t, i, 6 * TD + (li + j) % TD, RND());
            if (ti == 4) /* band tiles (variant 0): tridiagonal here, an identity shifted by 2 in tile row 2 */
                for (int j = li - 1; j <= li + 1; j++) { if (j >= 0 && j < TD) push(&t, i, 7 * TD + j, RND()); }
            else if (ti == 2) { if (li + 2 < TD) push(&t, i, 7 * TD + li + 2, RND()); }
            else if (li % 3 == 0) push(&t, i, 7 * TD + li % 7, RND());
            if (li % 2 == 0) push(&t, i, 8 * TD + li % 5, RND());
            if (dup && li % 4 == 2) push(&t, i, 4 * TD + li % TD, RND()); /* a repeat of an ELL entry */
        }
    }
#undef RND
    /* to CSR in the given order (rows grouped; columns unsorted: the matrix sorts) */
    int32_t *ptr = calloc((size_t)size + 1, sizeof *ptr), *col = malloc((size_t)t.n * sizeof *col);
    double *val = malloc((size_t)t.n * sizeof *val);
    float *valf = malloc((size_t)t.n * sizeof *valf);
    cr_assert(ptr && col && val && valf);
    for (int32_t k = 0; k < t.n; k++) ptr[t.r[k] + 1]++;
    for (int32_t i = 0; i < size; i++) ptr[i + 1] += ptr[i];
    for (int32_t k = 0; k < t.n; k++) { /* triplets are pushed row by row: the order is already grouped */
        col[k] = t.c[k];
        val[k] = t.v[k];
        valf[k] = (float)t.v[k];
    }
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, size, size, t.n, ptr, col, p == SPMV_F32 ? (void *)valf : (void *)val, p,
                                        0, SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    free(ptr), free(col), free(val), free(valf), free(t.r), free(t.c), free(t.v);
    return A;
}

/* ---- (a), (b): the executor against the oracle ----------------------------------------------------------- */

static void check_corpus(const spmv_plan_options_t *opt, spmv_precision_t p)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    support_check_corpus(ctx, SPMV_FORMAT_TILE, opt, p);
    for (int dup = 0; dup < 2; dup++) {
        spmv_matrix_t *A = crafted(p, 5, dup);
        support_check_format(ctx, SPMV_FORMAT_TILE, opt, dup ? "crafted with repeats" : "crafted", A, 0);
        spmv_matrix_destroy(A);
    }
    spmv_context_destroy(ctx);
}

static void check_invariants(const spmv_matrix_t *A, const spmv_plan_options_t *opt, const char *what);
static void check_tasks(const spmvport_format_data *fd, const char *what);

/* Every shared matrix, read once per precision: default options at W = 32 and 64, then `variant`; the format's
 * invariants on every third matrix. */
static void check_shared(spmv_precision_t p, const spmv_plan_options_t *variant)
{
    char **names;
    int n = support_shared_names(&names);
    cr_assert(n > 0, "no shared matrices in %s", support_matrix_dir());
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_options_t w32 = tile_options(32, 0, 0, 0), w64 = tile_options(64, 0, 0, 0);
    for (int i = 0; i < n; i++) {
        spmv_matrix_t *A = support_read_shared(names[i], p);
        support_check_format(ctx, SPMV_FORMAT_TILE, &w32, names[i], A, 0);
        support_check_format(ctx, SPMV_FORMAT_TILE, &w64, names[i], A, 0);
        support_check_format(ctx, SPMV_FORMAT_TILE, variant, names[i], A, 0);
        if (i % 3 == 0) check_invariants(A, variant, names[i]);
        spmv_matrix_destroy(A);
    }
    support_names_free(names, n);
    spmv_context_destroy(ctx);
}

Test(tile_cpu, shared_f64, .timeout = 900)
{
    spmv_plan_options_t v = tile_options(64, 0, 1, 2); /* deferred COO on, tile rows split beyond 2 tiles */
    check_shared(SPMV_F64, &v);
}

Test(tile_cpu, shared_f32, .timeout = 900)
{
    spmv_plan_options_t v = tile_options(32, 1, -1, 3); /* all-CSR tiles, split beyond 3 tiles */
    check_shared(SPMV_F32, &v);
}

#define CORPUS_TEST(W, PREC, SUFFIX)                                                                            \
    Test(tile_cpu, corpus_##SUFFIX)                                                                             \
    {                                                                                                           \
        spmv_plan_options_t o = tile_options(W, 0, 0, 0);                                                       \
        check_corpus(&o, PREC);                                                                                 \
    }

CORPUS_TEST(32, SPMV_F64, w32_f64)
CORPUS_TEST(64, SPMV_F64, w64_f64)
CORPUS_TEST(32, SPMV_F32, w32_f32)
CORPUS_TEST(64, SPMV_F32, w64_f32)

/* Option variants, each over the corpus at both warp sizes (one precision each, alternating). */
Test(tile_variants, all_csr_tiles)
{
    spmv_plan_options_t a = tile_options(32, 1, 0, 0), b = tile_options(64, 1, 1, 0);
    check_corpus(&a, SPMV_F64);
    check_corpus(&b, SPMV_F32);
}

Test(tile_variants, seven_formats_no_band)
{
    spmv_plan_options_t a = tile_options(32, 2, -1, 0), b = tile_options(64, 2, 1, 0);
    check_corpus(&a, SPMV_F32);
    check_corpus(&b, SPMV_F64);
}

Test(tile_variants, deferred_coo_on)
{
    spmv_plan_options_t a = tile_options(32, 0, 1, 0), b = tile_options(64, 0, 1, 0);
    check_corpus(&a, SPMV_F32);
    check_corpus(&b, SPMV_F64);
}

/* The deferred part in the tile kernel (a warp's chunks of W entries, segmented scans), forced on every corpus
 * matrix (the one dense row spans many chunks), with split tile rows (carries), all-CSR tiles with CSR steps, the
 * seven formats; and forced to csr_lb. */
Test(tile_variants, deferred_inline)
{
    spmv_plan_options_t a = tile_options(32, 0, 1, 2), b = tile_options(64, 0, 1, 0), c = tile_options(32, 1, 1, 0);
    spmv_plan_options_t d = tile_options(64, 2, 1, 3), e = tile_options(32, 0, 1, 0);
    a.tile_deferred_inline = b.tile_deferred_inline = c.tile_deferred_inline = d.tile_deferred_inline = 1;
    c.tile_csr_steps = 1;
    e.tile_deferred_inline = -1;
    check_corpus(&a, SPMV_F64);
    check_corpus(&b, SPMV_F32);
    check_corpus(&c, SPMV_F32);
    check_corpus(&d, SPMV_F64);
    check_corpus(&e, SPMV_F64);
}

Test(tile_variants, deferred_coo_off)
{
    spmv_plan_options_t a = tile_options(32, 0, -1, 0), b = tile_options(64, 0, -1, 0);
    check_corpus(&a, SPMV_F64);
    check_corpus(&b, SPMV_F32);
}

Test(tile_variants, deferred_coo_automatic_threshold)
{
    spmv_plan_options_t a = tile_options(32, 0, 0, 0), b = tile_options(64, 0, 0, 0);
    a.tile_deferred_threshold = b.tile_deferred_threshold = 1000; /* larger matrices with many COO tiles defer */
    check_corpus(&a, SPMV_F64);
    check_corpus(&b, SPMV_F32);
}

/* A CSR matrix from triplets pushed row by row. */
static spmv_matrix_t *from_list(coo_list *t, int32_t m, int32_t n)
{
    int32_t *ptr = calloc((size_t)m + 1, sizeof *ptr);
    cr_assert(ptr != NULL);
    for (int32_t k = 0; k < t->n; k++) ptr[t->r[k] + 1]++;
    for (int32_t i = 0; i < m; i++) ptr[i + 1] += ptr[i];
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, m, n, t->n, ptr, t->c, t->v, SPMV_F64, 0, SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    free(ptr), free(t->r), free(t->c), free(t->v);
    return A;
}

/* The tile layout of A at warp size w with options o on device dev (NULL: a device with no properties), asserted
 * to build. */
static void build_layout(spmvport_format_data *fd, const spmv_matrix_t *A, int w, const spmv_plan_options_t *o,
                         const spmv_device_info_t *dev)
{
    spmv_device_info_t none;
    memset(&none, 0, sizeof none);
    char msg[SPMVPORT_MSG_LEN] = "";
    cr_assert_eq(spmvport_format_build(fd, A, SPMV_FORMAT_TILE, w, dev ? dev : &none, o, msg, sizeof msg),
                 SPMV_STATUS_SUCCESS, "%s", msg);
}

/* Automatic deferred COO (above the threshold) only with many COO tiles per tile row on average: a stencil
 * pattern (its plan a band plan) keeps them, a scattered graph pattern defers them. */
Test(tile_variants, deferred_automatic_needs_many_coo_tiles)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const int32_t m = 64 * TD, nx = 10 * TD;
    coo_list st = {0}, gr = {0}, hv = {0}; /* hv: the graph pattern and one long row */
    uint64_t s = 12345;
    for (int32_t i = 0; i < m; i++) {
        const int32_t cs[5] = {i - nx, i - 1, i, i + 1, i + nx};
        for (int k = 0; k < 5; k++)
            if (cs[k] >= 0 && cs[k] < m) push(&st, i, cs[k], 1.0 + k);
        int32_t prev = -1;
        for (int k = 0; k < 6; k++) { /* increasing scattered columns, one per sixth of the matrix */
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            const int32_t c = (int32_t)(k * (m / 6) + (int32_t)((s >> 33) % (uint64_t)(m / 6)));
            if (c > prev) push(&gr, i, c, 0.5 + k), push(&hv, i, c, 0.5 + k), prev = c;
        }
        if (i == m / 2) /* every other column: COO tiles of 8 (deferred); repeats of the scattered entries sum */
            for (int32_t j = 0; j < m; j += 2) push(&hv, i, j, 1.0);
    }
    spmv_matrix_t *S = from_list(&st, m, m), *G = from_list(&gr, m, m);
    /* the graph pattern's deferred rows are regular: automatic inline; with one row of m / 2 deferred entries (a
     * tile row far above the average) csr_lb; forced either way, the layout holds and the results are right */
    {
        spmv_matrix_t *H = from_list(&hv, m, m);
        const spmv_matrix_t *which[2] = {G, H};
        for (int k = 0; k < 2; k++)
            for (int force = -1; force <= 1; force++) {
                spmv_plan_options_t o = tile_options(k ? 64 : 32, 0, 1, 0);
                o.tile_deferred_inline = force;
                const spmv_plan_info_t info = support_plan_info(ctx, SPMV_FORMAT_TILE, which[k], &o);
                const int want = force ? force == 1 : k == 0;
                cr_assert_eq(support_stat(info.stats, "deferred_inline"), want, "%s, option %d: %s",
                             k ? "one long row" : "graph", force, info.stats);
                check_invariants(which[k], &o, k ? "one long row" : "graph");
                support_check_format(ctx, SPMV_FORMAT_TILE, &o, k ? "one long row" : "graph", which[k], 0);
            }
        spmv_matrix_destroy(H);
    }
    spmv_plan_options_t o = tile_options(32, 0, 0, 0);
    o.tile_deferred_threshold = 1; /* above the threshold: the COO tiles decide */
    const spmv_matrix_t *mats[2] = {S, G};
    for (int k = 0; k < 2; k++) {
        const spmv_plan_info_t info = support_plan_info(ctx, SPMV_FORMAT_TILE, mats[k], &o);
        cr_assert_eq(support_stat(info.stats, "deferred"), k, "%s: %s", k ? "graph" : "stencil", info.stats);
        check_invariants(mats[k], &o, k ? "graph, automatic" : "stencil, automatic");
    }
    /* FEM blocks: their 3-entry corner tiles (many a tile row) are band candidates with holes, but the plan is no
     * band plan (13% of the non-zeros), so they are COO tiles, and deferred: the deferral is decided after the
     * band choice */
    spmv_matrix_t *F = NULL;
    cr_assert_eq(spmv_matrix_generate(&F, "fem3d:3:12", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
    const spmv_plan_info_t info = support_plan_info(ctx, SPMV_FORMAT_TILE, F, &o);
    cr_assert(support_stat(info.stats, "deferred") == 1 && support_stat(info.stats, "band_batch") == 0 &&
                  support_stat(info.stats, "band_tiles") == 0,
              "fem3d:3:12, automatic: %s", info.stats);
    check_invariants(F, &o, "fem, automatic");
    spmv_matrix_destroy(F);
    spmv_matrix_destroy(S);
    spmv_matrix_destroy(G);
    spmv_context_destroy(ctx);
}

/* Regular rows defer their COO tiles from 2 a tile row on average (their deferred part runs in the tile kernel),
 * other rows from 4: FEM blocks of 6 unknowns on a 9-point grid side (3.1 COO tiles a tile row) defer; the same
 * matrix with one row of 320 adjacent entries (longer than 2 x the average + 16; its 20 tiles are no COO tiles)
 * keeps them. */
Test(tile_variants, deferred_automatic_regular_rows_from_two_coo_tiles)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *F = NULL;
    cr_assert_eq(spmv_matrix_generate(&F, "fem3d:6:9", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
    coo_list lr = {0};
    const double *val = F->values;
    for (int32_t i = 0; i < F->m; i++) {
        for (int32_t k = F->row_ptr[i]; k < F->row_ptr[i + 1]; k++) push(&lr, i, F->col_idx[k], val[k]);
        if (i == F->m / 2)
            for (int32_t j = 0; j < 320; j++) push(&lr, i, j, 1.0); /* the FEM row's own columns lie far off */
    }
    spmv_matrix_t *L = from_list(&lr, F->m, F->n);
    spmv_plan_options_t o = tile_options(32, 0, 0, 0);
    o.tile_deferred_threshold = 1; /* above the threshold: the COO tiles decide */
    const spmv_matrix_t *mats[2] = {F, L};
    for (int k = 0; k < 2; k++) {
        const spmv_plan_options_t none = tile_options(32, 0, -1, 0);
        const spmv_plan_info_t kept = support_plan_info(ctx, SPMV_FORMAT_TILE, mats[k], &none);
        const double coo = support_stat(kept.stats, "coo_tiles"), rows = support_stat(kept.stats, "tile_rows");
        cr_assert(coo >= 2 * rows && coo < 4 * rows, "%s: %g COO tiles in %g tile rows", k ? "long row" : "fem",
                  coo, rows);
        const spmv_plan_info_t info = support_plan_info(ctx, SPMV_FORMAT_TILE, mats[k], &o);
        cr_assert_eq(support_stat(info.stats, "deferred"), k == 0, "%s: %s", k ? "long row" : "fem", info.stats);
        check_invariants(mats[k], &o, k ? "long row, automatic" : "fem3d:6:9, automatic");
        support_check_format(ctx, SPMV_FORMAT_TILE, &o, k ? "long row" : "fem3d:6:9", mats[k], 0);
    }
    spmv_matrix_destroy(L);
    spmv_matrix_destroy(F);
    spmv_context_destroy(ctx);
}

/* Regular rows also defer where their COO tiles are at least a tenth of the tiles (each a warp step of a tile row's
 * serial chain), in plans without band tiles: FEM blocks of 2 unknowns at sizes 2 mod 4 (fem3d:2:18: 1.78 two-by-two
 * fragments a tile row, 10.1% of the tiles) and fem3d:3:9 (1.77, 12%) defer; fem3d:3:11 (1.42, 8.1%) keeps them.
 * On a GPU (132 SMs, where their small band plans are dropped), above the threshold (set to 1) and under it
 * (small_deferral_pays), f64 and f32. */
Test(tile_variants, deferred_regular_rows_a_tenth_of_the_tiles)
{
    const struct {
        const char *spec;
        int deferred;
    } cases[] = {{"fem3d:2:18", 1}, {"fem3d:3:9", 1}, {"fem3d:3:11", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int p = 0; p < 2; p++) {
            spmv_matrix_t *A = NULL;
            cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, p ? SPMV_F32 : SPMV_F64, 5), SPMV_STATUS_SUCCESS);
            const spmv_device_info_t dev = model_gpu(132);
            spmvport_format_data kept;
            const spmv_plan_options_t none = tile_options(32, 0, -1, 0);
            build_layout(&kept, A, 32, &none, &dev);
            const int64_t coo = support_stat(kept.stats, "coo_tiles"), tiles = kept.params[SPMVPORT_TILE_P_TILES];
            const int64_t rows = kept.params[SPMVPORT_TILE_P_TILE_ROWS];
            cr_assert(coo < 2 * rows && (10 * coo >= tiles) == cases[i].deferred &&
                          support_stat(kept.stats, "band_tiles") == 0,
                      "%s: not the plan the test is for: %s", cases[i].spec, kept.stats);
            spmvport_format_data_free(&kept);
            for (int above = 0; above < 2; above++) {
                spmv_plan_options_t o = tile_options(32, 0, 0, 0);
                if (above) o.tile_deferred_threshold = 1; /* above the threshold: the COO tiles decide */
                spmvport_format_data fd;
                build_layout(&fd, A, 32, &o, &dev);
                cr_assert_eq(support_stat(fd.stats, "deferred"), cases[i].deferred, "%s, %s: %s", cases[i].spec,
                             above ? "threshold 1" : "under the threshold", fd.stats);
                check_tasks(&fd, "a tenth of the tiles");
                spmvport_format_data_free(&fd);
                check_invariants(A, &o, cases[i].spec);
            }
            spmv_matrix_destroy(A);
        }
}

/* Regular rows that defer automatically take COO tiles up to 15 entries: FEM blocks of 5 unknowns' 3 x 5 and 5 x 3
 * fragments (15 entries) leave the tiled part; blocks of 6 (no tile of 13-15 entries) keep the same tiles; an
 * explicit tile_coo_max, a forced deferral, or rows that are not regular (a circuit) keep the bound they have. */
Test(tile_variants, deferred_regular_rows_take_coo_up_to_15)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *F5 = NULL, *F6 = NULL, *C = NULL;
    cr_assert_eq(spmv_matrix_generate(&F5, "fem3d:5:10", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_generate(&F6, "fem3d:6:9", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_generate(&C, "circuit:20000", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
    spmv_plan_options_t o = tile_options(32, 0, 0, 0), o12, forced = tile_options(32, 0, 1, 0);
    o.tile_deferred_threshold = 1; /* above the threshold: the COO tiles decide */
    o12 = o, o12.tile_coo_max = 12;
    const spmv_matrix_t *fem[2] = {F5, F6};
    for (int k = 0; k < 2; k++) {
        const char *what = k ? "fem3d:6:9" : "fem3d:5:10";
        const spmv_plan_info_t a = support_plan_info(ctx, SPMV_FORMAT_TILE, fem[k], &o);
        const spmv_plan_info_t b = support_plan_info(ctx, SPMV_FORMAT_TILE, fem[k], &o12);
        cr_assert(support_stat(a.stats, "deferred") == 1 && strstr(a.stats, "select=75/15/20;") != NULL, "%s: %s",
                  what, a.stats);
        cr_assert(support_stat(b.stats, "deferred") == 1 && strstr(b.stats, "select=75/12/20;") != NULL, "%s: %s",
                  what, b.stats);
        const double tiles[2] = {support_stat(a.stats, "tiles"), support_stat(b.stats, "tiles")};
        const double coo[2] = {support_stat(a.stats, "coo_tiles"), support_stat(b.stats, "coo_tiles")};
        if (k == 0)
            cr_assert(tiles[0] < tiles[1] && coo[0] > coo[1] &&
                          support_stat(a.stats, "deferred_nnz") > support_stat(b.stats, "deferred_nnz"),
                      "%s: 15 -> 12: %s / %s", what, a.stats, b.stats);
        else
            cr_assert(tiles[0] == tiles[1] && coo[0] == coo[1], "%s: 15 -> 12: %s / %s", what, a.stats, b.stats);
        check_invariants(fem[k], &o, what);
        support_check_format(ctx, SPMV_FORMAT_TILE, &o, what, fem[k], 0);
    }
    const spmv_plan_info_t f = support_plan_info(ctx, SPMV_FORMAT_TILE, F5, &forced);
    const spmv_plan_info_t c = support_plan_info(ctx, SPMV_FORMAT_TILE, C, &o);
    cr_assert(strstr(f.stats, "select=75/12/20;") != NULL, "fem3d:5:10, forced: %s", f.stats);
    cr_assert(support_stat(c.stats, "deferred") == 1 && strstr(c.stats, "select=75/12/20;") != NULL,
              "circuit:20000: %s", c.stats);
    spmv_plan_options_t w64 = o;
    w64.warp_size = 64;
    spmv_matrix_t *F5f = NULL;
    cr_assert_eq(spmv_matrix_generate(&F5f, "fem3d:5:10", SPMV_F32, 3), SPMV_STATUS_SUCCESS);
    check_invariants(F5f, &w64, "fem3d:5:10 f32, W = 64");
    support_check_format(ctx, SPMV_FORMAT_TILE, &w64, "fem3d:5:10 f32, W = 64", F5f, 0);
    spmv_matrix_destroy(F5f);
    spmv_matrix_destroy(C);
    spmv_matrix_destroy(F6);
    spmv_matrix_destroy(F5);
    spmv_context_destroy(ctx);
}

/* Block tasks (tile_block_tasks 2, 4 or 8): every tile row split over that many warps of one thread block, their
 * sums added in task order, no carries. Over the corpus at both warp sizes (with the deferred part inline and not),
 * on FEM blocks of 5 (the sub-wave grids it is for: x by shuffles, steps of 4), and where a plan cannot have them. */
Test(tile_variants, block_tasks)
{
    spmv_plan_options_t a = tile_options(32, 0, 0, 0), b = tile_options(64, 0, 1, 0), c = tile_options(32, 1, 1, 0);
    spmv_plan_options_t e = tile_options(32, 0, 1, 0), f = tile_options(64, 0, 0, 0);
    a.tile_block_tasks = 4, b.tile_block_tasks = 2, c.tile_block_tasks = 2, e.tile_block_tasks = 8;
    f.tile_block_tasks = 4; /* blocks of 256 threads: 8 warps of 32, 4 of 64 */
    /* x by shuffles wherever there is no band */
    a.tile_csr_shuffle = b.tile_csr_shuffle = c.tile_csr_shuffle = e.tile_csr_shuffle = f.tile_csr_shuffle = 1;
    b.tile_deferred_inline = e.tile_deferred_inline = 1;
    check_corpus(&a, SPMV_F64);
    check_corpus(&b, SPMV_F32);
    check_corpus(&c, SPMV_F64);
    check_corpus(&e, SPMV_F32);
    check_corpus(&f, SPMV_F64);
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    for (int p = 0; p < 2; p++) {
        const spmv_precision_t prec = p ? SPMV_F32 : SPMV_F64;
        spmv_matrix_t *F = NULL, *S = NULL, *F3 = NULL;
        cr_assert_eq(spmv_matrix_generate(&F, "fem3d:5:10", prec, 3), SPMV_STATUS_SUCCESS);
        cr_assert_eq(spmv_matrix_generate(&S, "stencil3d:7:20", prec, 3), SPMV_STATUS_SUCCESS);
        cr_assert_eq(spmv_matrix_generate(&F3, "fem3d:3:12", prec, 3), SPMV_STATUS_SUCCESS);
        for (int k = 0; k < 5; k++) {
            spmv_plan_options_t o = tile_options(k == 2 || k == 4 ? 64 : 32, 0, 0, 0);
            o.tile_deferred_threshold = 1; /* FEM: deferred, inline */
            o.tile_block_tasks = k == 3 ? 8 : k == 1 || k == 4 ? 4 : 2;
            spmvport_format_data fd;
            build_layout(&fd, F, o.warp_size, &o, NULL);
            const int64_t fl = fd.params[SPMVPORT_TILE_P_FLAGS];
            cr_assert(spmvport_tile_block_tasks(fl) == o.tile_block_tasks && (fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) &&
                          (fl & SPMVPORT_TILE_FLAG_DEFERRED_INLINE) && !(fl & SPMVPORT_TILE_FLAG_CSR_STEP3),
                      "fem3d:5:10, %d a tile row: %s", o.tile_block_tasks, fd.stats);
            cr_assert(fd.params[SPMVPORT_TILE_P_TASKS] == o.tile_block_tasks * fd.params[SPMVPORT_TILE_P_TILE_ROWS] &&
                          fd.params[SPMVPORT_TILE_P_SPLITS] == 0 && fd.arrays[SPMVPORT_TILE_A_CARRY].bytes == 0,
                      "fem3d:5:10: %s", fd.stats);
            char key[32];
            snprintf(key, sizeof key, "block_tasks=%d;", o.tile_block_tasks);
            cr_assert(strstr(fd.stats, key) != NULL, "%s", fd.stats);
            spmvport_format_data_free(&fd);
            check_invariants(F, &o, "fem3d:5:10, block tasks");
            support_check_format(ctx, SPMV_FORMAT_TILE, &o, "fem3d:5:10, block tasks", F, 0);
            /* steps of 3 are not among the block tasks' kernels: a plan that would take them takes 4 */
            build_layout(&fd, F3, o.warp_size, &o, NULL);
            cr_assert(spmvport_tile_block_tasks(fd.params[SPMVPORT_TILE_P_FLAGS]) == o.tile_block_tasks &&
                          strstr(fd.stats, "csr_shuffle=4;") != NULL, "fem3d:3:12: %s", fd.stats);
            spmvport_format_data_free(&fd);
            support_check_format(ctx, SPMV_FORMAT_TILE, &o, "fem3d:3:12, block tasks", F3, 0);
            /* a band plan has no x by shuffles, so no block tasks: the option changes nothing */
            spmv_plan_options_t d = tile_options(o.warp_size, 0, 0, 0);
            spmvport_format_data bd, dd;
            build_layout(&bd, S, o.warp_size, &o, NULL);
            build_layout(&dd, S, o.warp_size, &d, NULL);
            cr_assert(spmvport_tile_block_tasks(bd.params[SPMVPORT_TILE_P_FLAGS]) == 1 &&
                          strcmp(bd.stats, dd.stats) == 0, "stencil: %s / %s", bd.stats, dd.stats);
            spmvport_format_data_free(&bd);
            spmvport_format_data_free(&dd);
        }
        spmv_matrix_destroy(F3);
        spmv_matrix_destroy(S);
        spmv_matrix_destroy(F);
    }
    spmv_context_destroy(ctx);
}

Test(tile_variants, every_multi_tile_row_split)
{
    /* tbalance 1: every tile row with two or more tiles is split, one tile per task, carries everywhere */
    spmv_plan_options_t a = tile_options(32, 0, -1, 1), b = tile_options(64, 0, 1, 1), c = tile_options(32, 1, 1, 2);
    check_corpus(&a, SPMV_F64);
    check_corpus(&b, SPMV_F32);
    check_corpus(&c, SPMV_F32);
}

/* tbalance: the paper's 8 by default; on band plans that run the band items kernel (a task per group) 1.5x the
 * average tiles of a tile row, 16 to 32 (a 7-point stencil: 16; a 27-point one on a grid of 30, 27576 tiles in
 * 1688 tile rows: 25); the option either way. */
Test(tile_variants, default_balance_by_kernel)
{
    spmv_matrix_t *S = NULL, *F = NULL, *S27 = NULL;
    cr_assert_eq(spmv_matrix_generate(&S, "stencil3d:7:24", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_generate(&F, "fem3d:3:8", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_generate(&S27, "stencil3d:27:30", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    const struct { const spmv_matrix_t *A; int balance, group_tasks, want; } cases[] = {
        {S, 0, 0, 16}, {S, 8, 0, 8}, {S, 0, -1, 8}, {S, 12, 0, 12}, {S27, 0, 0, 25}, {F, 0, 0, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spmv_plan_options_t o = tile_options(32, 0, 0, cases[i].balance);
        o.tile_group_tasks = cases[i].group_tasks;
        spmvport_format_data fd;
        build_layout(&fd, cases[i].A, 32, &o, NULL);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_BATCH] > 0, i < 5, "case %zu: band plan", i);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BALANCE], cases[i].want, "case %zu", i);
        check_tasks(&fd, "default balance");
        spmvport_format_data_free(&fd);
        check_invariants(cases[i].A, &o, "default balance");
    }
    spmv_matrix_destroy(S);
    spmv_matrix_destroy(F);
    spmv_matrix_destroy(S27);
}

/* Plans without band tiles take 1.5x their average tiles a tile row (8 to 16, or 32: below) only on a GPU and when
 * their tile rows are at least a quarter of a wave of warps (16 an SM); otherwise, or when the SMs are unknown, the
 * paper's 8. */
Test(tile_variants, wide_plans_balance_by_tiles)
{
    spmv_matrix_t *F = NULL;
    cr_assert_eq(spmv_matrix_generate(&F, "fem3d:3:16", SPMV_F64, 1), SPMV_STATUS_SUCCESS); /* 768 tile rows */
    const struct { spmv_backend_t backend; int sms, balance, wide; } cases[] = {
        {SPMV_BACKEND_CUDA, 0, 0, 0}, {SPMV_BACKEND_CUDA, 1, 0, 1}, {SPMV_BACKEND_HIP, 48, 0, 1},
        {SPMV_BACKEND_CUDA, 49, 0, 0}, {SPMV_BACKEND_CUDA, 1, 9, 0}, {SPMV_BACKEND_CPU, 1, 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spmv_plan_options_t o = tile_options(32, 0, 1, cases[i].balance); /* deferred COO, as above 1.8M */
        o.tile_block_tasks = -1; /* whole tile rows split by the balance (block_tasks_rule has the rest) */
        spmvport_format_data fd;
        spmv_device_info_t dev;
        memset(&dev, 0, sizeof dev);
        dev.backend = cases[i].backend;
        dev.multiprocessors = cases[i].sms;
        build_layout(&fd, F, 32, &o, &dev);
        const int64_t rows = (F->m + TD - 1) / TD, tiles = fd.params[SPMVPORT_TILE_P_TILES];
        const int64_t avg15 = (3 * tiles + 2 * rows - 1) / (2 * rows);
        cr_assert(avg15 > 8 && avg15 < 16, "FEM blocks: between the bounds (%lld)", (long long)avg15);
        const int64_t want = cases[i].balance > 0 ? cases[i].balance : cases[i].wide ? avg15 : 8;
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_BATCH], 0, "case %zu: not a band plan", i);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BALANCE], want, "case %zu", i);
        check_tasks(&fd, "wide balance");
        spmvport_format_data_free(&fd);
    }
    spmv_matrix_destroy(F);
}

/* Wide plans of mostly CSR tiles go up to 32 tiles a task, others stay at 16: fem3d:3:14 (515 tile rows of ~19
 * tiles, 75% CSR) takes its 1.5x average, 30; uniform:3000:12 (188 tile rows of ~120 COO tiles) 16. */
Test(tile_variants, wide_csr_plans_balance_to_32)
{
    spmv_matrix_t *F = NULL, *U = NULL;
    cr_assert_eq(spmv_matrix_generate(&F, "fem3d:3:14", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_matrix_generate(&U, "uniform:3000:12", SPMV_F64, 1), SPMV_STATUS_SUCCESS);
    for (int i = 0; i < 2; i++) {
        spmv_plan_options_t o = tile_options(32, 0, i == 0 ? 1 : -1, 0);
        spmvport_format_data fd;
        spmv_device_info_t dev;
        memset(&dev, 0, sizeof dev);
        dev.backend = SPMV_BACKEND_CUDA, dev.multiprocessors = 1;
        build_layout(&fd, i == 0 ? F : U, 32, &o, &dev);
        const int64_t rows = fd.params[SPMVPORT_TILE_P_TILE_ROWS], tiles = fd.params[SPMVPORT_TILE_P_TILES];
        const int64_t avg15 = (3 * tiles + 2 * rows - 1) / (2 * rows), csr = support_stat(fd.stats, "csr_tiles");
        cr_assert(fd.params[SPMVPORT_TILE_P_BAND_BATCH] == 0 && (2 * csr >= tiles) == (i == 0) &&
                      (i == 0 ? avg15 > 16 && avg15 <= 32 : avg15 > 32),
                  "case %d: not the plan the test is for: %s", i, fd.stats);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BALANCE], i == 0 ? avg15 : 16, "case %d: %s", i, fd.stats);
        check_tasks(&fd, "wide CSR balance");
        spmvport_format_data_free(&fd);
    }
    spmv_matrix_destroy(F);
    spmv_matrix_destroy(U);
}

Test(tile_variants, deferred_one_warp_chunks)
{
    spmv_plan_options_t a = tile_options(32, 0, 1, 3), b = tile_options(64, 0, 1, 0);
    a.nnz_per_warp = 32;
    b.nnz_per_warp = 64;
    check_corpus(&a, SPMV_F64);
    check_corpus(&b, SPMV_F64);
}

Test(tile_variants, bad_options_rejected)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = crafted(SPMV_F64, 1, 0);
    spmv_plan_options_t bad[31];
    for (int i = 0; i < 31; i++) bad[i] = tile_options(0, 0, 0, 0);
    bad[0].tile_variant = 3;
    bad[1].tile_deferred_coo = 3;
    bad[2].tile_deferred_threshold = -5;
    bad[3].tile_balance = -1;
    bad[4].tile_inflight = 3;
    bad[5].tile_inflight = -1;
    bad[6].tile_band_batch = 3;
    bad[7].tile_band_tasks = SPMVPORT_TILE_MAX_BAND_TASKS + 1;
    bad[8].tile_band_tasks = -1;
    bad[9].tile_csr_steps = 2;
    bad[10].tile_csr_steps = -2;
    bad[11].tile_group_tasks = 2;
    bad[12].tile_group_tasks = -2;
    bad[13].tile_deferred_inline = 2;
    bad[14].tile_deferred_inline = -2;
    bad[15].tile_deferred_inline = 1, bad[15].tile_band_tasks = 2; /* the K-task kernel has no inline path */
    bad[16].tile_deferred_inline = 1, bad[16].tile_group_tasks = 1;
    bad[17].tile_deferred_inline = 1, bad[17].tile_inflight = 2; /* only the plain kernel has it */
    bad[18].tile_csr_shuffle = 6;
    bad[19].tile_csr_shuffle = -2;
    bad[20].tile_dense_percent = 101;
    bad[21].tile_dense_percent = -2;
    bad[22].tile_coo_max = 257;
    bad[23].tile_coo_max = -2;
    bad[24].tile_ell_cv_percent = 1001;
    bad[25].tile_ell_cv_percent = -2;
    bad[26].tile_block_tasks = 3;
    bad[27].tile_block_tasks = 1;
    bad[28].tile_block_tasks = -2;
    bad[29].tile_block_tasks = 8, bad[29].warp_size = 64; /* blocks of at most 256 threads: 4 warps of 64 */
    bad[30].tile_block_tasks = 16;
    for (int i = 0; i < 31; i++) {
        spmv_plan_t *plan = NULL;
        cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_TILE, &bad[i]), SPMV_STATUS_INVALID_ARGUMENT,
                     "bad option set %d accepted", i);
        cr_assert(strstr(spmv_last_error(ctx), "tile") != NULL, "message: %s", spmv_last_error(ctx));
        cr_assert_null(plan);
    }
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* ---- (c): invariants, read back from the arrays -------------------------------------------------------------- */

static double value_at(const void *arr, spmv_precision_t p, int64_t i)
{
    return p == SPMV_F32 ? (double)((const float *)arr)[i] : ((const double *)arr)[i];
}

static int nib(const uint8_t *b, int64_t k) { return (b[k >> 1] >> ((k & 1) * 4)) & 15; }

/* Decoded entry (row, col) in value slot `slot`: it must be the CSR entry value_map[slot], seen once. */
static void claim(const spmvport_format_data *fd, const spmv_matrix_t *A, int32_t *seen, int64_t slot, int64_t row,
                  int64_t col, const void *vals, int64_t local, const char *what)
{
    cr_assert(slot >= 0 && slot < fd->value_slots, "%s: slot %lld out of range", what, (long long)slot);
    int32_t pos = fd->value_map[slot];
    cr_assert(pos >= 0 && pos < A->nnz, "%s: slot %lld maps to %d", what, (long long)slot, pos);
    cr_assert(row < A->m && A->row_ptr[row] <= pos && pos < A->row_ptr[row + 1] && A->col_idx[pos] == col,
              "%s: slot %lld decodes to (%lld, %lld) but maps to entry %d", what, (long long)slot, (long long)row,
              (long long)col, pos);
    cr_assert(value_at(vals, A->precision, local) == value_at(A->values, A->precision, pos),
              "%s: value of slot %lld differs from entry %d", what, (long long)slot, pos);
    cr_assert_eq(seen[pos]++, 0, "%s: entry %d stored twice", what, pos);
}

/* A padding slot: value 0 and no entry. */
static void padding(const spmvport_format_data *fd, int64_t slot, const void *vals, int64_t local, const char *what)
{
    cr_assert_eq(fd->value_map[slot], -1, "%s: slot %lld is padding but maps to %d", what, (long long)slot,
                 fd->value_map[slot]);
    cr_assert(value_at(vals, fd->precision, local) == 0.0, "%s: padding slot %lld is not 0", what, (long long)slot);
}

static int popc16(unsigned v) { int c = 0; for (; v; v &= v - 1) c++; return c; }

/* Decode tile t (of tile row tr) and claim every entry; returns the tile's non-zero count. */
static int64_t decode_tile(const spmvport_format_data *fd, const spmv_matrix_t *A, int32_t *seen, int32_t tr,
                           int64_t t, const char *what)
{
    const int32_t *tcol = fd->arrays[SPMVPORT_TILE_A_COL].data, *off = fd->arrays[SPMVPORT_TILE_A_OFF].data;
    const uint8_t *fmt = fd->arrays[SPMVPORT_TILE_A_FMT].data;
    const uint8_t *idx = (const uint8_t *)fd->arrays[SPMVPORT_TILE_A_IDX].data + off[2 * t + 1];
    const void *vals = fd->arrays[SPMVPORT_TILE_A_VAL].data;
    const int64_t s0 = off[2 * t], nv = off[2 * t + 2] - s0, nb = off[2 * t + 3] - off[2 * t + 1];
    const int64_t r0 = (int64_t)tr * TD, c0 = (int64_t)tcol[t] * TD;
    const int rows = A->m - r0 < TD ? (int)(A->m - r0) : TD, cols = A->n - c0 < TD ? (int)(A->n - c0) : TD;
    int64_t count = 0;
    cr_assert(nv >= 0 && nb >= 0 && cols > 0, "%s: tile %lld has bad offsets or column", what, (long long)t);
#define CLAIM(S, R, C) (claim(fd, A, seen, (S), r0 + (R), c0 + (C), vals, (S), what), count++)
    if (SPMVPORT_TILE_IS_BAND(fmt[t])) { /* nd diagonals from lo, each with its rows inside the tile */
        const int lo = SPMVPORT_TILE_BAND_LO(fmt[t]), nd = SPMVPORT_TILE_BAND_ND(fmt[t]);
        cr_assert(lo >= -(TD - 1) && nd >= 1 && nd <= SPMVPORT_TILE_BAND_MAXND && lo + nd - 1 <= TD - 1 && nb == 0,
                  "%s: band tile %lld byte %d", what, (long long)t, fmt[t]);
        int64_t slot = s0;
        for (int d = lo; d < lo + nd; d++)
            for (int r = 0; r < rows; r++) {
                if (r + d < 0 || r + d >= cols) continue;
                if (fd->value_map[slot] < 0) padding(fd, slot, vals, slot, what);
                else CLAIM(slot, r, r + d);
                slot++;
            }
        cr_assert_eq(slot, s0 + nv, "%s: band tile %lld value slots", what, (long long)t);
        return count;
    }
    switch (fmt[t]) {
    case SPMVPORT_TILE_CSR:
        cr_assert_eq(nb, rows + (nv + 1) / 2, "%s: CSR tile %lld index bytes", what, (long long)t);
        for (int r = 0; r < rows; r++) {
            int end = r + 1 < rows ? idx[r + 1] : (int)nv;
            cr_assert(idx[r] <= end, "%s: CSR tile row pointer decreases", what);
            for (int k = idx[r]; k < end; k++) CLAIM(s0 + k, r, nib(idx + rows, k));
        }
        break;
    case SPMVPORT_TILE_COO:
        cr_assert_eq(nb, nv, "%s: COO tile index bytes", what);
        for (int k = 0; k < nv; k++) CLAIM(s0 + k, idx[k] >> 4, idx[k] & 15);
        break;
    case SPMVPORT_TILE_ELL:
    case SPMVPORT_TILE_HYB: {
        const int w = idx[0];
        const int64_t ell = (int64_t)w * rows, tail = nv - ell;
        cr_assert(w >= 1 && w <= TD && tail >= 0, "%s: ELL/HYB tile width %d", what, w);
        cr_assert(fmt[t] == SPMVPORT_TILE_HYB || tail == 0, "%s: ELL tile with a tail", what);
        cr_assert_eq(nb, 1 + (ell + 1) / 2 + tail, "%s: ELL/HYB tile index bytes", what);
        for (int64_t s = 0; s < ell; s++) {
            if (fd->value_map[s0 + s] < 0) padding(fd, s0 + s, vals, s0 + s, what);
            else CLAIM(s0 + s, s % rows, nib(idx + 1, s));
        }
        for (int64_t k = 0; k < tail; k++) {
            uint8_t b = idx[1 + (ell + 1) / 2 + k];
            CLAIM(s0 + ell + k, b >> 4, b & 15);
        }
        break;
    }
    case SPMVPORT_TILE_DENSE:
        cr_assert(nv == (int64_t)rows * cols && nb == 0, "%s: Dense tile sizes", what);
        for (int64_t s = 0; s < nv; s++) {
            if (fd->value_map[s0 + s] < 0) padding(fd, s0 + s, vals, s0 + s, what);
            else CLAIM(s0 + s, s % rows, s / rows);
        }
        break;
    case SPMVPORT_TILE_DENSE_ROW: {
        const unsigned mask = idx[0] | (unsigned)idx[1] << 8;
        const int nd = popc16(mask);
        cr_assert(nb == 2 && nv == (int64_t)nd * cols && nd > 0 && mask >> rows == 0, "%s: DenseRow sizes", what);
        for (int r = 0, d = 0; r < rows; r++)
            if (mask >> r & 1) {
                for (int c = 0; c < cols; c++) CLAIM(s0 + (int64_t)c * nd + d, r, c);
                d++;
            }
        break;
    }
    case SPMVPORT_TILE_DENSE_COL: {
        const unsigned mask = idx[0] | (unsigned)idx[1] << 8;
        const int nc = popc16(mask);
        cr_assert(nb == 2 && nv == (int64_t)nc * rows && nc > 0 && mask >> cols == 0, "%s: DenseCol sizes", what);
        for (int c = 0, q = 0; c < cols; c++)
            if (mask >> c & 1) {
                for (int r = 0; r < rows; r++) CLAIM(s0 + (int64_t)q * rows + r, r, c);
                q++;
            }
        break;
    }
    default: cr_assert_fail("%s: tile %lld has format byte %d", what, (long long)t, fmt[t]);
    }
#undef CLAIM
    return count;
}

/* Tasks cover every tile once, in order, at most tbalance tiles each; every tile row has a task; carries and
 * split records agree. */
static void check_tasks(const spmvport_format_data *fd, const char *what)
{
    const int32_t *ptr = fd->arrays[SPMVPORT_TILE_A_PTR].data, *task = fd->arrays[SPMVPORT_TILE_A_TASK].data;
    const int32_t *split = fd->arrays[SPMVPORT_TILE_A_SPLIT].data;
    const int64_t tile_rows = fd->params[SPMVPORT_TILE_P_TILE_ROWS], tasks = fd->params[SPMVPORT_TILE_P_TASKS];
    const int64_t balance = fd->params[SPMVPORT_TILE_P_BALANCE];
    const int bk = spmvport_tile_block_tasks(fd->params[SPMVPORT_TILE_P_FLAGS]); /* 1: no block tasks */
    int64_t w = 0, s = 0, carry = 0;
    cr_assert_eq(fd->arrays[SPMVPORT_TILE_A_TASK].bytes, (size_t)(3 * (tasks + 1)) * sizeof(int32_t), "%s", what);
    for (int64_t tr = 0; tr < tile_rows; tr++) {
        int64_t w0 = w;
        cr_assert(w < tasks && task[3 * w] == ptr[tr], "%s: tile row %lld has no first task", what, (long long)tr);
        while (w < tasks && task[3 * w + 1] == tr) {
            int64_t k = task[3 * (w + 1)] - task[3 * w];
            cr_assert(k >= 0 && k <= balance, "%s: task %lld has %lld tiles", what, (long long)w, (long long)k);
            w++;
        }
        cr_assert_eq(task[3 * w], ptr[tr + 1], "%s: tasks of tile row %lld end wrong", what, (long long)tr);
        cr_assert(bk == 1 || w - w0 == bk, "%s: tile row %lld has %lld tasks, not %d", what, (long long)tr,
                  (long long)(w - w0), bk);
        const int split_row = w - w0 > 1 && bk == 1; /* block tasks add their sums in shared memory */
        if (split_row) {
            cr_assert(split[2 * s] == tr && split[2 * s + 1] == carry, "%s: split record %lld", what, (long long)s);
            s++;
        }
        for (int64_t v = w0; v < w; v++)
            cr_assert_eq(task[3 * v + 2], split_row ? carry++ : -1, "%s: carry slot of task %lld", what, (long long)v);
    }
    cr_assert_eq(w, tasks, "%s", what);
    cr_assert(s == fd->params[SPMVPORT_TILE_P_SPLITS] && split[2 * s + 1] == carry &&
              carry == fd->params[SPMVPORT_TILE_P_CARRIES], "%s: split totals", what);
    cr_assert_eq(fd->arrays[SPMVPORT_TILE_A_CARRY].bytes, (size_t)(TD * carry) * spmvport_value_size(fd->precision));
}

/* The invariants of the layout built for gpu (NULL: the CPU backend's, whose plan must also report the arrays'
 * bytes as its device bytes). */
static void check_invariants_on(const spmv_matrix_t *A, const spmv_plan_options_t *opt, const spmv_device_info_t *gpu,
                                const char *what)
{
    spmvport_format_data fd;
    spmv_device_info_t dev;
    memset(&dev, 0, sizeof dev);
    if (gpu != NULL) dev = *gpu;
    char msg[SPMVPORT_MSG_LEN] = "";
    int W = opt->warp_size ? opt->warp_size : 32;
    cr_assert_eq(spmvport_format_build(&fd, A, SPMV_FORMAT_TILE, W, &dev, opt, msg, sizeof msg), SPMV_STATUS_SUCCESS,
                 "%s: %s", what, msg);
    cr_assert_eq(fd.narrays, SPMVPORT_TILE_NARRAYS, "%s", what);
    cr_assert(fd.row_perm_array == -1 && fd.col_perm_array == -1, "%s: tile keeps A's ordering", what);
    cr_assert(fd.deterministic == 1, "%s", what);
    const int64_t tiles = fd.params[SPMVPORT_TILE_P_TILES], tile_rows = fd.params[SPMVPORT_TILE_P_TILE_ROWS];
    const int64_t def_nnz = fd.params[SPMVPORT_TILE_P_DEF_NNZ];
    const size_t vs = spmvport_value_size(A->precision);
    const int32_t *ptr = fd.arrays[SPMVPORT_TILE_A_PTR].data, *tcol = fd.arrays[SPMVPORT_TILE_A_COL].data;
    const int32_t *off = fd.arrays[SPMVPORT_TILE_A_OFF].data;
    cr_assert_eq(tile_rows, ((int64_t)A->m + TD - 1) / TD, "%s", what);
    cr_assert(ptr[0] == 0 && ptr[tile_rows] == tiles, "%s: tile pointer ends", what);
    cr_assert(off[0] == 0 && off[1] == 0, "%s", what);
    cr_assert_eq(fd.arrays[SPMVPORT_TILE_A_VAL].bytes, (size_t)off[2 * tiles] * vs, "%s: value bytes", what);
    cr_assert_eq(fd.arrays[SPMVPORT_TILE_A_IDX].bytes, (size_t)off[2 * tiles + 1], "%s: index bytes", what);
    cr_assert_eq(fd.value_slots, (int64_t)off[2 * tiles] + def_nnz, "%s: value slots", what);
    /* is_values arrays are exactly the tile values and the deferred values, in that order */
    for (int a = 0; a < fd.narrays; a++)
        cr_assert_eq(fd.arrays[a].is_values, a == SPMVPORT_TILE_A_VAL || a == SPMVPORT_TILE_A_DEF_VAL, "%s", what);

    int32_t *seen = calloc((size_t)A->nnz + 1, sizeof *seen);
    cr_assert(seen);
    int64_t stored = 0;
    for (int32_t tr = 0; tr < tile_rows; tr++) {
        cr_assert(ptr[tr] <= ptr[tr + 1], "%s: tile pointer decreases", what);
        for (int64_t t = ptr[tr]; t < ptr[tr + 1]; t++) {
            const uint8_t *fmt = fd.arrays[SPMVPORT_TILE_A_FMT].data; /* grouped by format, then by column */
            const int k0 = t > ptr[tr] ? SPMVPORT_TILE_KIND(fmt[t - 1]) : 0, k1 = SPMVPORT_TILE_KIND(fmt[t]);
            cr_assert(t == ptr[tr] || k1 > k0 || (k1 == k0 && tcol[t] > tcol[t - 1]),
                      "%s: tiles of tile row %d not ordered by format and column", what, tr);
            cr_assert(off[2 * t] <= off[2 * t + 2] && off[2 * t + 1] <= off[2 * t + 3], "%s: offsets", what);
            int64_t k = decode_tile(&fd, A, seen, tr, t, what);
            cr_assert(k > 0, "%s: tile %lld stores nothing", what, (long long)t);
            stored += k;
        }
    }
    /* the deferred CSR: sorted rows whose entries are A's, value slots after the tiles' */
    if (def_nnz > 0) {
        const int32_t *dptr = fd.arrays[SPMVPORT_TILE_A_DEF_PTR].data, *dcol = fd.arrays[SPMVPORT_TILE_A_DEF_COL].data;
        const void *dval = fd.arrays[SPMVPORT_TILE_A_DEF_VAL].data;
        const int64_t chunk = fd.params[SPMVPORT_TILE_P_DEF_CHUNK], warps = fd.params[SPMVPORT_TILE_P_DEF_WARPS];
        cr_assert(dptr[0] == 0 && dptr[A->m] == def_nnz, "%s: deferred row pointer", what);
        for (int32_t r = 0; r < A->m; r++)
            for (int32_t k = dptr[r]; k < dptr[r + 1]; k++) {
                cr_assert(k == dptr[r] || dcol[k] > dcol[k - 1], "%s: deferred row %d unsorted", what, r);
                claim(&fd, A, seen, off[2 * tiles] + k, r, dcol[k], dval, k, what);
                stored++;
            }
        if (fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_DEFERRED_INLINE) { /* no csr_lb split */
            cr_assert(chunk == 0 && warps == 0 && fd.params[SPMVPORT_TILE_P_BAND_TASKS] == 1, "%s: inline", what);
            for (int k = 0; k < SPMVPORT_LB_NARRAYS; k++)
                cr_assert_eq(fd.arrays[SPMVPORT_TILE_A_DEF_SPLIT + k].bytes, 0, "%s: inline, split array %d", what, k);
        } else {
            cr_assert(chunk % W == 0 && warps == (def_nnz + chunk - 1) / chunk, "%s: deferred chunks", what);
            check_lb_split(fd.arrays + SPMVPORT_TILE_A_DEF_SPLIT, dptr, A->m, def_nnz, chunk, warps,
                           fd.params[SPMVPORT_TILE_P_DEF_EMPTY], what);
        }
    } else {
        cr_assert((fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_DEFERRED_INLINE) == 0,
                  "%s: inline flag without a deferred part", what);
        cr_assert(fd.arrays[SPMVPORT_TILE_A_DEF_PTR].bytes == 0 && fd.arrays[SPMVPORT_TILE_A_DEF_COL].bytes == 0,
                  "%s: empty deferred part", what);
    }
    cr_assert_eq(stored, A->nnz, "%s: %lld of %d non-zeros stored", what, (long long)stored, A->nnz);
    for (int32_t k = 0; k < A->nnz; k++) cr_assert_eq(seen[k], 1, "%s: entry %d stored %d times", what, k, seen[k]);
    free(seen);
    check_tasks(&fd, what);

    if (gpu != NULL) { /* the executor walks the GPU's layout too */
        support_check_executor(&fd, spmvport_cpu_tile, A, what);
        spmvport_format_data_free(&fd);
        return;
    }
    /* bytes: the plan's device bytes are the sum of the arrays */
    size_t bytes = 0;
    for (int a = 0; a < fd.narrays; a++) bytes += fd.arrays[a].bytes;
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_plan_t *plan = NULL;
    spmv_plan_info_t info;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, SPMV_FORMAT_TILE, opt), SPMV_STATUS_SUCCESS, "%s",
                 spmv_last_error(ctx));
    cr_assert_eq(spmv_plan_get_info(plan, &info), SPMV_STATUS_SUCCESS);
    cr_assert_eq(info.device_bytes, bytes, "%s: device bytes %zu, arrays %zu", what, info.device_bytes, bytes);
    const int32_t *rp = (const int32_t *)1, *cp = (const int32_t *)1;
    cr_assert_eq(spmv_plan_get_permutation(plan, &rp, &cp), SPMV_STATUS_SUCCESS);
    cr_assert(rp == NULL && cp == NULL, "%s: tile has no permutation", what);
    spmv_plan_destroy(plan);
    spmv_context_destroy(ctx);
    spmvport_format_data_free(&fd);
}

static void check_invariants(const spmv_matrix_t *A, const spmv_plan_options_t *opt, const char *what)
{
    check_invariants_on(A, opt, NULL, what);
}

static void invariants_over_corpus(const spmv_plan_options_t *opt, spmv_precision_t p)
{
    support_case *cases;
    int n = support_edge_corpus(p, &cases);
    for (int i = 0; i < n; i++) check_invariants(cases[i].A, opt, cases[i].name);
    support_cases_free(cases, n);
    for (int dup = 0; dup < 2; dup++) {
        spmv_matrix_t *A = crafted(p, 9, dup);
        check_invariants(A, opt, "crafted");
        spmv_matrix_destroy(A);
    }
}

Test(tile_invariants, corpus_every_variant)
{
    const int set[][4] = {{32, 0, -1, 0}, {64, 0, -1, 0}, {32, 0, 1, 0}, {64, 0, 1, 1},
                          {32, 1, -1, 0}, {64, 1, 1, 2}, {32, 0, 1, 3}, {32, 2, -1, 0}, {64, 2, 1, 0}};
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
        spmv_plan_options_t o = tile_options(set[i][0], set[i][1], set[i][2], set[i][3]);
        invariants_over_corpus(&o, i % 2 ? SPMV_F32 : SPMV_F64);
    }
}

/* Every one of the seven formats is selected on the crafted matrix, with f32 and f64 values (its few band
 * candidates are under half its tiles: no band tiles, band_batch = 0), and with variant 2. */
Test(tile_invariants, crafted_selects_every_format)
{
    for (int prec = 0; prec < 2; prec++) {
        spmv_matrix_t *A = crafted(prec ? SPMV_F64 : SPMV_F32, 3, 0);
        spmvport_format_data fd;
        spmv_plan_options_t o = tile_options(32, 0, -1, 0);
        build_layout(&fd, A, 32, &o, NULL);
        int count[SPMVPORT_TILE_NFORMATS] = {0};
        const uint8_t *fmt = fd.arrays[SPMVPORT_TILE_A_FMT].data;
        for (int64_t t = 0; t < fd.params[SPMVPORT_TILE_P_TILES]; t++) count[SPMVPORT_TILE_KIND(fmt[t])]++;
        for (int f = 0; f < SPMVPORT_TILE_NFORMATS; f++)
            cr_assert((count[f] > 0) == (f != SPMVPORT_TILE_BAND), "format %d (%s)", f, fd.stats);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_BATCH], 0, "%s", fd.stats);
        spmvport_format_data_free(&fd);
        o.tile_variant = 2;
        build_layout(&fd, A, 32, &o, NULL);
        fmt = fd.arrays[SPMVPORT_TILE_A_FMT].data;
        memset(count, 0, sizeof count);
        for (int64_t t = 0; t < fd.params[SPMVPORT_TILE_P_TILES]; t++) count[SPMVPORT_TILE_KIND(fmt[t])]++;
        for (int f = 0; f < SPMVPORT_TILE_NFORMATS; f++)
            cr_assert((count[f] > 0) == (f != SPMVPORT_TILE_BAND), "variant 2, format %d (%s)", f, fd.stats);
        spmvport_format_data_free(&fd);
        spmv_matrix_destroy(A);
    }
}

/* The selection rule's thresholds are options: the paper's values by default (the same plan when set
 * explicitly), each rule off with -1, and a larger COO bound or a smaller dense share moves tiles the way the
 * rule says; the executor against the oracle and the invariants with changed thresholds. */
static void tile_histogram(const spmv_matrix_t *A, const spmv_plan_options_t *o, int count[SPMVPORT_TILE_NFORMATS],
                           char *stats, size_t len)
{
    spmvport_format_data fd;
    build_layout(&fd, A, o->warp_size, o, NULL);
    const uint8_t *fmt = fd.arrays[SPMVPORT_TILE_A_FMT].data;
    memset(count, 0, SPMVPORT_TILE_NFORMATS * sizeof count[0]);
    for (int64_t t = 0; t < fd.params[SPMVPORT_TILE_P_TILES]; t++) count[SPMVPORT_TILE_KIND(fmt[t])]++;
    snprintf(stats, len, "%s", fd.stats);
    spmvport_format_data_free(&fd);
}

Test(tile_variants, selection_thresholds_are_options)
{
    spmv_matrix_t *A = crafted(SPMV_F64, 3, 0);
    int def[SPMVPORT_TILE_NFORMATS], c[SPMVPORT_TILE_NFORMATS];
    char sdef[1024], st[1024];
    spmv_plan_options_t o = tile_options(32, 0, -1, 0);
    tile_histogram(A, &o, def, sdef, sizeof sdef);
    cr_assert(strstr(sdef, "select=75/12/20;") != NULL, "%s", sdef);
    o.tile_dense_percent = 75, o.tile_coo_max = 12, o.tile_ell_cv_percent = 20;
    tile_histogram(A, &o, c, st, sizeof st);
    cr_assert_str_eq(st, sdef);
    cr_assert_arr_eq(c, def, sizeof def);
    const int kinds[3] = {SPMVPORT_TILE_DENSE, SPMVPORT_TILE_COO, SPMVPORT_TILE_ELL};
    for (int k = 0; k < 3; k++) {
        o = tile_options(32, 0, -1, 0);
        *(k == 0 ? &o.tile_dense_percent : k == 1 ? &o.tile_coo_max : &o.tile_ell_cv_percent) = -1;
        tile_histogram(A, &o, c, st, sizeof st);
        cr_assert(def[kinds[k]] > 0 && c[kinds[k]] == 0, "rule %d off: %d -> %d tiles (%s)", k, def[kinds[k]],
                  c[kinds[k]], st);
    }
    o = tile_options(32, 0, -1, 0);
    o.tile_coo_max = 256; /* every tile short of Dense is COO, or HYB where that is smaller */
    tile_histogram(A, &o, c, st, sizeof st);
    cr_assert(c[SPMVPORT_TILE_COO] > def[SPMVPORT_TILE_COO] && c[SPMVPORT_TILE_CSR] == 0 &&
              c[SPMVPORT_TILE_ELL] == 0 && c[SPMVPORT_TILE_DENSE_ROW] == 0 && c[SPMVPORT_TILE_DENSE_COL] == 0, "%s", st);
    o = tile_options(32, 0, -1, 0);
    o.tile_dense_percent = 10; /* the CSR tiles (about 35 entries of 256) become Dense */
    tile_histogram(A, &o, c, st, sizeof st);
    cr_assert_gt(c[SPMVPORT_TILE_DENSE], def[SPMVPORT_TILE_DENSE], "%s", st);
    spmv_matrix_destroy(A);

    spmv_plan_options_t a = tile_options(64, 0, 1, 0), b = tile_options(32, 2, -1, 0), n = tile_options(32, 0, 0, 0);
    a.tile_coo_max = 256, a.tile_dense_percent = 30, a.tile_ell_cv_percent = 100;
    b.tile_coo_max = 4, b.tile_dense_percent = 100, b.tile_ell_cv_percent = 1000;
    n.tile_coo_max = n.tile_dense_percent = n.tile_ell_cv_percent = -1;
    check_corpus(&a, SPMV_F32);
    check_corpus(&b, SPMV_F64);
    check_corpus(&n, SPMV_F64);
    invariants_over_corpus(&a, SPMV_F64);
    invariants_over_corpus(&n, SPMV_F32);
}

/* A 5-point stencil (rows not a multiple of 16, an x line of 160): every tile is a band tile (identity tiles,
 * tridiagonal tiles, one-entry corner tiles), so band batches run; the executor against the oracle at both warp
 * sizes and precisions, the invariants, and the plain kernel's layout with tile_inflight = 1 (no band tiles). */
static spmv_matrix_t *stencil5(spmv_precision_t p)
{
    const int32_t m = 64 * TD + 7, nx = 10 * TD;
    int32_t *ptr = malloc(((size_t)m + 1) * sizeof *ptr), *col = malloc(5 * (size_t)m * sizeof *col);
    double *val = malloc(5 * (size_t)m * sizeof *val);
    float *valf = malloc(5 * (size_t)m * sizeof *valf);
    cr_assert(ptr && col && val && valf);
    int32_t nnz = 0;
    ptr[0] = 0;
    for (int32_t i = 0; i < m; i++) {
        const int32_t cs[5] = {i - nx, i - 1, i, i + 1, i + nx};
        for (int k = 0; k < 5; k++)
            if (cs[k] >= 0 && cs[k] < m) {
                col[nnz] = cs[k];
                val[nnz] = 1.0 + k + (double)(i % 7) / 8;
                valf[nnz] = (float)val[nnz];
                nnz++;
            }
        ptr[i + 1] = nnz;
    }
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, m, m, nnz, ptr, col, p == SPMV_F32 ? (void *)valf : (void *)val, p, 0,
                                        SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    free(ptr), free(col), free(val), free(valf);
    return A;
}

/* Band tiles with holes (a stencil's tiles at the grid's faces): a tile whose COO choice has at most half of its
 * band's slots empty is a band tile, one with more stays COO. Every diagonal tile is an identity (a band plan);
 * tile (0, 5): diagonal 3 over rows 0..12 but rows 2 and 5 (11 entries in 13 slots): band; tile (1, 7): (0, 0) and
 * (15, 15) (2 entries in 16 slots): COO; tile (2, 9): diagonals 0..2 over rows 0..3 but (1, 2) (11 entries in
 * the band's 45 slots): COO; tile (5, 20): (0, 0) and (0, 15), 16 diagonals, COO whatever its holes, so the plan
 * keeps other tiles and the pass that makes every tile within 7 diagonals band is undone. Then the executor
 * against the oracle. */
Test(tile_invariants, band_tiles_with_holes)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    const int32_t m = 40 * TD;
    coo_list t = {0};
    for (int32_t i = 0; i < m; i++) {
        if (i == 5 * TD) push(&t, i, 20 * TD, 2.0), push(&t, i, 20 * TD + 15, -2.0);
        if (i < 13 && i != 2 && i != 5) push(&t, i, 5 * TD + i + 3, 0.5 + i);
        if (i == TD || i == 2 * TD - 1) push(&t, i, 7 * TD + i - TD, -1.5);
        for (int d = 0; d < 3 && i >= 2 * TD && i < 2 * TD + 4; d++)
            if (!(i == 2 * TD + 1 && d == 1)) push(&t, i, 9 * TD + i - 2 * TD + d, 0.25 * d - 1);
        push(&t, i, i, 4.0);
    }
    spmv_matrix_t *A = from_list(&t, m, m);
    for (int w = 32; w <= 64; w *= 2) {
        spmv_plan_options_t o = tile_options(w, 0, 0, 0);
        spmvport_format_data fd;
        build_layout(&fd, A, w, &o, NULL);
        const int32_t *ptr = fd.arrays[SPMVPORT_TILE_A_PTR].data, *col = fd.arrays[SPMVPORT_TILE_A_COL].data;
        const uint8_t *fmt = fd.arrays[SPMVPORT_TILE_A_FMT].data;
        const struct { int32_t tr, tc; int band; } want[] = {{0, 5, 1}, {1, 7, 0}, {2, 9, 0}, {3, 3, 1}, {5, 20, 0}};
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
            int found = -1;
            for (int32_t q = ptr[want[k].tr]; q < ptr[want[k].tr + 1]; q++)
                if (col[q] == want[k].tc) found = fmt[q];
            cr_assert(found >= 0, "tile (%d, %d) missing", want[k].tr, want[k].tc);
            cr_assert_eq(SPMVPORT_TILE_IS_BAND(found), want[k].band, "tile (%d, %d): format byte %d (%s)", want[k].tr,
                         want[k].tc, found, fd.stats);
            if (!want[k].band)
                cr_assert_eq(found, SPMVPORT_TILE_COO, "tile (%d, %d) format %d", want[k].tr, want[k].tc, found);
        }
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_BATCH], 4, "a band plan (%s)", fd.stats);
        spmvport_format_data_free(&fd);
        check_invariants(A, &o, "band tiles with holes");
        cr_assert(support_check_format(ctx, SPMV_FORMAT_TILE, &o, "band tiles with holes", A, 0) >= 0);
    }
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
}

/* A band plan whose other tiles all lie within 7 diagonals makes every tile band when that adds at most a tenth to
 * the value slots: stencil3d:27:34 (grid lines 34 apart, so the grid's faces cut diagonals inside tiles: 264 of
 * its 44819 tiles had too many holes for a band tile by the COO / CSR byte rule) is all band at 2.5% more slots;
 * the same stencil with one scattered entry in every 8th row (a one-entry tile, 16 slots, each) would grow the
 * slots by far more than a tenth, so those tiles stay COO (and with them the faces' CSR / COO tiles). The executor
 * against the oracle on both, W = 32 and 64. */
Test(tile_invariants, band_plan_makes_every_near_tile_band)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *S = NULL;
    cr_assert_eq(spmv_matrix_generate(&S, "stencil3d:27:34", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
    int32_t m, n;
    spmv_matrix_get_size(S, &m, &n, NULL, NULL);
    const int32_t *sp, *sc;
    const void *sv;
    cr_assert_eq(spmv_matrix_get_csr(S, &sp, &sc, &sv), SPMV_STATUS_SUCCESS);
    coo_list t = {0};
    for (int32_t i = 0; i < m; i++) {
        for (int32_t k = sp[i]; k < sp[i + 1]; k++) push(&t, i, sc[k], ((const double *)sv)[k]);
        if (i % 8 == 0) push(&t, i, (int32_t)(((int64_t)i * 7919 + m / 2) % m), 0.5); /* may fall in the band */
    }
    spmv_matrix_t *X = from_list(&t, m, n); /* sums an entry that lands on a stencil entry */
    for (int w = 32; w <= 64; w *= 2) {
        spmv_plan_options_t o = tile_options(w, 0, 0, 0);
        spmvport_format_data fd;
        build_layout(&fd, S, w, &o, NULL);
        cr_assert_eq(support_stat(fd.stats, "band_tiles"), fd.params[SPMVPORT_TILE_P_TILES], "%s", fd.stats);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_BATCH], 4, "a band plan (%s)", fd.stats);
        spmvport_format_data_free(&fd);
        build_layout(&fd, X, w, &o, NULL);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_BATCH], 4, "a band plan (%s)", fd.stats);
        cr_assert_gt(support_stat(fd.stats, "coo_tiles"), m / 16, "scattered entries stay COO (%s)", fd.stats);
        spmvport_format_data_free(&fd);
        check_invariants(S, &o, "stencil3d:27:34, every tile band");
        check_invariants(X, &o, "stencil3d:27:34 + scattered");
        cr_assert(support_check_format(ctx, SPMV_FORMAT_TILE, &o, "stencil3d:27:34", S, 0) >= 0);
        cr_assert(support_check_format(ctx, SPMV_FORMAT_TILE, &o, "stencil3d:27:34 + scattered", X, 0) >= 0);
    }
    spmv_matrix_destroy(X);
    spmv_matrix_destroy(S);
    spmv_context_destroy(ctx);
}

/* A band plan needs band tiles to be at least half the tiles and to hold at least half the non-zeros: dense
 * diagonal tiles with two one-entry corner tiles (band candidates: one slot each) a tile row are 2/3 band tiles by
 * count but 2/258 by non-zeros, so the plan has no band tiles (as fem3d:3:48, whose 3-entry corner tiles are band
 * candidates). */
Test(tile_invariants, band_plan_needs_band_nonzeros)
{
    const int32_t m = 32 * TD;
    coo_list t = {0};
    for (int32_t i = 0; i < m; i++) {
        const int32_t tc = i / TD;
        for (int32_t c = tc * TD; c < tc * TD + TD; c++) push(&t, i, c, c == i ? 20.0 : -0.25);
        if (i % TD == 0) push(&t, i, (tc * TD + 5 * TD) % m + 15, 1.0); /* diagonal +15: one band slot */
        if (i % TD == 15) push(&t, i, (tc * TD + 11 * TD) % m, -2.0);    /* diagonal -15 */
    }
    spmv_matrix_t *A = from_list(&t, m, m);
    spmv_plan_options_t o = tile_options(32, 0, 0, 0);
    spmvport_format_data fd;
    build_layout(&fd, A, 32, &o, NULL);
    cr_assert_eq(fd.params[SPMVPORT_TILE_P_TILES], 3 * 32, "%s", fd.stats);
    cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_BATCH], 0, "not a band plan (%s)", fd.stats);
    cr_assert_eq(support_stat(fd.stats, "band_tiles"), 0, "%s", fd.stats);
    cr_assert_eq(support_stat(fd.stats, "dns_tiles"), 32, "%s", fd.stats);
    spmvport_format_data_free(&fd);
    check_invariants(A, &o, "band candidates without the non-zeros");
    spmv_matrix_destroy(A);
}

/* x by shuffles (SPMVPORT_TILE_FLAG_CSR_SHUFFLE): by default on plans of at least half CSR tiles (FEM blocks),
 * not on the band plan of a stencil nor on a plan of mostly other formats; option 1 forces it wherever the kernel
 * has it, -1 turns it off; never with CSR steps or a task per group. */
Test(tile_invariants, csr_shuffle_flag)
{
    spmv_matrix_t *F = NULL, *S = stencil5(SPMV_F64), *C = crafted(SPMV_F64, 1, 0);
    cr_assert_eq(spmv_matrix_generate(&F, "fem3d:3:12", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
    /* matrix, tile_csr_shuffle, tile_csr_steps, tile_group_tasks, whether the plan has the flag */
    const struct {
        const spmv_matrix_t *A;
        int shuffle, steps, group, on;
        const char *what;
    } cases[] = {{F, 0, 0, 0, 1, "FEM blocks (69% CSR tiles), default"},
                 {F, -1, 0, 0, 0, "FEM blocks, -1"},
                 {F, 1, 1, 0, 0, "FEM blocks, forced, with CSR steps"},
                 {F, 1, 0, 1, 0, "FEM blocks, forced, with a task per group"},
                 {S, 0, 0, 0, 0, "band plan, default"},
                 {S, 1, 0, 0, 0, "band plan, forced"},
                 {C, 0, 0, 0, 0, "mixed formats, default"},
                 {C, 1, 0, 0, 1, "mixed formats, forced"}};
    for (int w = 32; w <= 64; w *= 2)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            spmvport_format_data fd;
            spmv_plan_options_t o = tile_options(w, 0, 0, 0);
            o.tile_csr_shuffle = cases[i].shuffle, o.tile_csr_steps = cases[i].steps;
            o.tile_group_tasks = cases[i].group;
            build_layout(&fd, cases[i].A, w, &o, NULL);
            const int on = (fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) != 0;
            cr_assert_eq(on, cases[i].on, "W %d, %s: %s", w, cases[i].what, fd.stats);
            cr_assert_eq(support_stat(fd.stats, "csr_shuffle"),
                         !on ? 0 : (fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_STEP3) ? 3 : 4, "%s",
                         fd.stats); /* no device here: never steps of 6 */
            cr_assert(on || !(fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_STEP3), "%s", fd.stats);
            if (i == 0 || i == 6) /* the default's rule: at least half the stored tiles CSR */
                cr_assert_eq(2 * support_stat(fd.stats, "csr_tiles") >= fd.params[SPMVPORT_TILE_P_TILES], i == 0, "%s",
                             fd.stats);
            spmvport_format_data_free(&fd);
        }
    spmv_matrix_destroy(F);
    spmv_matrix_destroy(S);
    spmv_matrix_destroy(C);
}

/* Rows of exactly 6 entries, all in one tile column (a tile's 16 rows on 6 of its 16 columns, shifting with the
 * row), every tile CSR (option tile_variant 1): steps of 3 (6 lane slots a step against 8 at 4, as many steps),
 * but 9 entries a step would take 1.5x the slots. */
static spmv_matrix_t *six_a_row(spmv_precision_t p)
{
    const int32_t m = 256 * TD, per = 6;
    int32_t *ptr = malloc(sizeof(int32_t) * (m + 1)), *col = malloc(sizeof(int32_t) * m * per);
    double *val = malloc(sizeof(double) * m * per);
    float *valf = malloc(sizeof(float) * m * per);
    cr_assert(ptr && col && val && valf);
    for (int32_t i = 0; i <= m; i++) ptr[i] = i * per;
    for (int32_t i = 0, e = 0; i < m; i++) /* row i: the 6 columns from i % 16 on, cyclic in its tile, in order */
        for (int c = 0; c < TD; c++)
            if ((c - i % TD + TD) % TD < per) {
                col[e] = (i / TD) * TD + c;
                val[e] = valf[e] = (float)(1 + (i + c) % 7);
                e++;
            }
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_create_csr(&A, m, m, m * per, ptr, col, p == SPMV_F32 ? (void *)valf : (void *)val, p,
                                        0, SPMV_MATRIX_SUM_DUPLICATES),
                 SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
    free(ptr), free(col), free(val), free(valf);
    return A;
}

/* Steps of 3 loaded together: three at a time (CSR_STEP9) automatically in f32 on a GPU where that takes at most 5%
 * more lane slots (fem3d:3:13: rows of 3, 6 or 9 entries a tile), within the L2 cache or not; else two at a time
 * (CSR_STEP6) in f32 on a GPU whose L2 cache the plan exceeds (six_a_row: 9 a step would take 1.5x the slots).
 * Option 2 forces 6, 3 groups none, 4 forces 9, in either precision. REGS48 (f32 with 9) exactly when the plan's
 * tasks take as many waves of warps at 1280 threads an SM as at 1536, and at most 2: fem3d:3:13 has 1135 tasks
 * (412 on 25 or fewer SMs, whose tile rows are then kept whole), so 132 SMs give 1 and 1 wave, 26 SMs 2 and 1, 20
 * SMs 1 and 1, 10 SMs 2 and 1, 7 SMs 2 and 2, 4 SMs 3 and 3 (tile_balance 32 keeps them whole: on 7-10 SMs the
 * 412 tile rows would be 1-1.5 waves, whose rows short_last_wave splits). */
Test(tile_invariants, csr_step_rule)
{
    spmv_device_info_t small, large, cpu, sm26, sm20, sm10, sm7, sm4;
    memset(&small, 0, sizeof small);
    small.backend = SPMV_BACKEND_CUDA, small.l2_bytes = 4096, small.multiprocessors = 132;
    small.shared_mem_per_block = 48 * 1024;
    large = small, large.l2_bytes = (size_t)1 << 40;
    cpu = small, cpu.backend = SPMV_BACKEND_CPU;
    sm26 = small, sm26.multiprocessors = 26;
    sm20 = small, sm20.multiprocessors = 20;
    sm10 = small, sm10.multiprocessors = 10;
    sm7 = small, sm7.multiprocessors = 7;
    sm4 = small, sm4.multiprocessors = 4;
    const struct {
        const spmv_device_info_t *dev;
        int f32, fem, option, step, regs48;
        const char *what;
        int tasks; /* the plan's (0: any) */
    } cases[] = {{&small, 1, 1, 0, 9, 1, "FEM, f32 past L2, automatic", 0},
                 {&large, 1, 1, 0, 9, 1, "FEM, f32 within L2, automatic", 0},
                 {&small, 0, 1, 0, 3, 0, "FEM, f64 past L2, automatic", 0},
                 {&cpu, 1, 1, 0, 3, 0, "FEM, f32, CPU backend", 0},
                 {&small, 1, 1, 1, 9, 1, "FEM, f32 past L2, on", 0},
                 {&small, 1, 1, 2, 6, 0, "FEM, f32, option 2", 0},
                 {&small, 1, 1, 3, 3, 0, "FEM, f32, option 3", 0},
                 {&large, 0, 1, 4, 9, 0, "FEM, f64, option 4", 0},
                 {&cpu, 0, 1, 4, 9, 0, "FEM, f64, CPU backend, option 4", 0},
                 {&large, 0, 1, 2, 6, 0, "FEM, f64 within L2, option 2", 0},
                 {&sm26, 1, 1, 0, 9, 0, "FEM, f32, 26 SMs: 2 waves at 1280, 1 at 1536", 1135},
                 {&sm20, 1, 1, 0, 9, 1, "FEM, f32, 20 SMs: 1 wave either way", 412},
                 {&sm10, 1, 1, 0, 9, 0, "FEM, f32, 10 SMs: 2 waves at 1280, 1 at 1536", 412},
                 {&sm7, 1, 1, 0, 9, 1, "FEM, f32, 7 SMs: 2 waves either way", 412},
                 {&sm4, 1, 1, 0, 9, 0, "FEM, f32, 4 SMs: 3 waves either way", 412},
                 {&small, 1, 0, 0, 6, 0, "6 a row, f32 past L2, automatic", 0},
                 {&large, 1, 0, 0, 3, 0, "6 a row, f32 within L2, automatic", 0},
                 {&small, 1, 0, 4, 9, 1, "6 a row, f32, option 4", 0}};
    for (int p = 0; p < 2; p++) {
        spmv_matrix_t *F = NULL, *X = six_a_row(p ? SPMV_F32 : SPMV_F64);
        cr_assert_eq(spmv_matrix_generate(&F, "fem3d:3:13", p ? SPMV_F32 : SPMV_F64, 5), SPMV_STATUS_SUCCESS);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (cases[i].f32 != p) continue;
            spmvport_format_data fd;
            spmv_plan_options_t o = tile_options(32, 0, 0, 0);
            o.tile_csr_shuffle = cases[i].option;
            o.tile_block_tasks = -1; /* block tasks take steps of 4 or 16 (tile_invariants/block_tasks_rule) */
            o.tile_deferred_threshold = 1800000; /* its COO tiles kept, as written (small_regular_deferral) */
            if (cases[i].tasks == 412) o.tile_balance = 32; /* whole tile rows, also where 1-1.5 waves would split */
            if (!cases[i].fem) o.tile_variant = 1;
            build_layout(&fd, cases[i].fem ? F : X, 32, &o, cases[i].dev);
            const int64_t fl = fd.params[SPMVPORT_TILE_P_FLAGS];
            cr_assert((fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) && (fl & SPMVPORT_TILE_FLAG_CSR_STEP3) &&
                          (cases[i].tasks == 0 || fd.params[SPMVPORT_TILE_P_TASKS] == cases[i].tasks),
                      "%s: not the plan the test is for (steps of 3): %s", cases[i].what, fd.stats);
            cr_assert_eq(spmvport_tile_shuffle_step(fl), cases[i].step, "%s: %s", cases[i].what, fd.stats);
            cr_assert_eq(support_stat(fd.stats, "csr_shuffle"), cases[i].step, "%s: %s", cases[i].what, fd.stats);
            cr_assert_eq((fl & SPMVPORT_TILE_FLAG_REGS48) != 0, cases[i].regs48, "%s: %s", cases[i].what, fd.stats);
            cr_assert_eq(support_stat(fd.stats, "regs48"), cases[i].regs48, "%s: %s", cases[i].what, fd.stats);
            cr_assert(!((fl & SPMVPORT_TILE_FLAG_CSR_STEP6) && (fl & SPMVPORT_TILE_FLAG_CSR_STEP9)), "%s", fd.stats);
            spmvport_format_data_free(&fd);
        }
        spmv_matrix_destroy(F);
        spmv_matrix_destroy(X);
    }
}

/* Wide plans of long CSR tile rows whose whole rows take more than one wave of the warps resident at 1280 threads an
 * SM and at most 1.5 split every tile row into at most 3 tasks (tbalance a third of the longest row): fem3d:4:12,
 * 432 tile rows of 8-27 tiles (18.7 on average), 40 warps an SM: 10 SMs 1.08 waves (split), 11 SMs 0.98, 7 SMs
 * 1.54, both whole; and never on the CPU backend or with an explicit tile_balance. */
Test(tile_invariants, short_last_wave_splits_rows)
{
    spmv_device_info_t dev = model_gpu(0);
    const struct {
        int sms, cpu, balance, split;
    } cases[] = {{10, 0, 0, 1}, {11, 0, 0, 0}, {7, 0, 0, 0}, {10, 1, 0, 0}, {10, 0, 32, 0}};
    for (int p = 0; p < 2; p++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, "fem3d:4:12", p ? SPMV_F32 : SPMV_F64, 5), SPMV_STATUS_SUCCESS);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            dev.multiprocessors = cases[i].sms;
            dev.backend = cases[i].cpu ? SPMV_BACKEND_CPU : SPMV_BACKEND_CUDA;
            spmvport_format_data fd;
            spmv_plan_options_t o = tile_options(32, 0, 0, cases[i].balance);
            o.tile_block_tasks = -1; /* the split with carries, where block tasks are off */
            build_layout(&fd, A, 32, &o, &dev);
            const int64_t rows = fd.params[SPMVPORT_TILE_P_TILE_ROWS], tasks = fd.params[SPMVPORT_TILE_P_TASKS];
            const int32_t *ptr = fd.arrays[SPMVPORT_TILE_A_PTR].data;
            int64_t longest = 0;
            for (int64_t tr = 0; tr < rows; tr++)
                if (ptr[tr + 1] - ptr[tr] > longest) longest = ptr[tr + 1] - ptr[tr];
            cr_assert(rows == 432 && longest == 27 && support_stat(fd.stats, "csr_shuffle") > 0,
                      "not the plan the test is for: %s", fd.stats);
            if (cases[i].split) {
                cr_assert_eq(support_stat(fd.stats, "tbalance"), 9, "case %zu: %s", i, fd.stats);
                cr_assert(tasks > 2 * rows && tasks <= 3 * rows, "case %zu: %s", i, fd.stats);
            } else if (!cases[i].cpu) {
                cr_assert_eq(tasks, rows, "case %zu: whole tile rows expected: %s", i, fd.stats);
            } else {
                cr_assert_eq(support_stat(fd.stats, "tbalance"), 8, "case %zu: the CPU's default: %s", i, fd.stats);
            }
            spmvport_format_data_free(&fd);
        }
        spmv_matrix_destroy(A);
    }
}

/* Steps of 4 loaded four at a time (CSR_STEP16): automatically in f32 on a GPU where that takes at most 10% more
 * lane slots than steps of 4 (fem3d:5:11: rows of up to 15 entries a tile), not in f64 nor on the CPU backend nor
 * where rows have 4, 8 or 12 entries a tile (fem3d:4:10: 16 a step would take about 1.6x the slots); option 5 forces
 * it in either precision, also on a plan whose steps are 3 (fem3d:3:13), option 3 never groups steps. Dense tiles
 * count as rows of their columns (the shuffled loop takes them with steps of 16): fem3d:7:10 (1599 Dense tiles beside
 * CSR ones of rows of 7 and 14 entries) takes 16 in f32 (its CSR tiles alone: over 1.1x the slots). A plan with fewer
 * than an eighth of its warp steps on a Dense tile takes 16 up to 1.15x the slots: fem3d:5:12 in f32 (1.1-1.15x);
 * with more, up to 1.2x where it has no block tasks or under a quarter of its steps are Dense, else 1.1x:
 * fem3d:7:11 (about 1.13x, a third of its steps Dense) takes 16 without block tasks and 4 with its automatic 8 a tile
 * row; fem3d:6:12 (1.12x, a sixth Dense) takes 16 with its 8. */
/* The automatic block tasks: fem3d:4:12 (432 tile rows of up to 27 tiles, all CSR) takes 4 tasks a tile row when
 * its tile rows fit 2/3 of a wave of the warps the GPU holds at 1280 threads an SM (17 SMs: 680 at W = 32), none
 * between 2/3 and 1 wave (11 SMs: 440), 2 from 1 to 1.5 waves (10 SMs: 400) and, its tiles all CSR, beyond (7: 280);
 * none on the CPU, with a balance asked for, or with the option at -1; at W = 64 a block holds 2 warps, so 2 under
 * 2/3 of a wave too. 8 instead of 4 where 8 a tile row fit one wave (W = 32 only: 256 threads a block; 87 SMs hold
 * 3480 warps for 3456, 86 hold 3440). Forced counts stand anywhere a plan has x by shuffles. fem3d:6:10 (375 tile
 * rows, a tenth of its tiles not CSR) takes none beyond 1.5 waves (6 SMs: 240). */
Test(tile_invariants, block_tasks_rule)
{
    const struct {
        int sms, warp, cpu, balance, option, bk;
    } cases[] = {{17, 32, 0, 0, 0, 4}, {11, 32, 0, 0, 0, 1}, {10, 32, 0, 0, 0, 2}, {7, 32, 0, 0, 0, 2},
                 {17, 32, 1, 0, 0, 1}, {17, 32, 0, 9, 0, 1}, {17, 32, 0, 0, -1, 1}, {7, 32, 0, 0, 4, 4},
                 {7, 32, 1, 0, 2, 2},  {34, 64, 0, 0, 0, 2}, {22, 64, 0, 0, 0, 1}, {20, 64, 0, 0, 0, 2},
                 {14, 64, 0, 0, 0, 2}, {87, 32, 0, 0, 0, 8}, {86, 32, 0, 0, 0, 4}, {87, 64, 0, 0, 0, 2},
                 {7, 32, 0, 0, 8, 8}};
    for (int p = 0; p < 2; p++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, "fem3d:4:12", p ? SPMV_F32 : SPMV_F64, 5), SPMV_STATUS_SUCCESS);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            spmv_device_info_t dev = model_gpu(cases[i].sms);
            if (cases[i].cpu) dev.backend = SPMV_BACKEND_CPU;
            spmvport_format_data fd;
            spmv_plan_options_t o = tile_options(cases[i].warp, 0, 0, cases[i].balance);
            o.tile_block_tasks = cases[i].option;
            build_layout(&fd, A, cases[i].warp, &o, &dev);
            const int64_t rows = fd.params[SPMVPORT_TILE_P_TILE_ROWS], fl = fd.params[SPMVPORT_TILE_P_FLAGS];
            cr_assert(rows == 432 && (fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE), "not the plan the test is for: %s",
                      fd.stats);
            cr_assert_eq(spmvport_tile_block_tasks(fl), cases[i].bk, "case %zu: %s", i, fd.stats);
            if (cases[i].bk > 1)
                cr_assert(fd.params[SPMVPORT_TILE_P_TASKS] == cases[i].bk * rows &&
                              fd.params[SPMVPORT_TILE_P_SPLITS] == 0 && !(fl & SPMVPORT_TILE_FLAG_CSR_STEP3),
                          "case %zu: %s", i, fd.stats);
            check_tasks(&fd, "block tasks rule");
            spmvport_format_data_free(&fd);
        }
        spmv_matrix_destroy(A);
        cr_assert_eq(spmv_matrix_generate(&A, "fem3d:6:10", p ? SPMV_F32 : SPMV_F64, 5), SPMV_STATUS_SUCCESS);
        const spmv_device_info_t dev = model_gpu(6);
        spmvport_format_data fd;
        spmv_plan_options_t o = tile_options(32, 0, 0, 0);
        build_layout(&fd, A, 32, &o, &dev);
        const int64_t rows = fd.params[SPMVPORT_TILE_P_TILE_ROWS], tiles = fd.params[SPMVPORT_TILE_P_TILES];
        const int64_t csr = support_stat(fd.stats, "csr_tiles");
        cr_assert(rows == 375 && tiles >= 18 * rows && 2 * csr >= tiles && 20 * csr < 19 * tiles &&
                      (fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_SHUFFLE),
                  "fem3d:6:10: not the plan the test is for: %s", fd.stats);
        cr_assert_eq(spmvport_tile_block_tasks(fd.params[SPMVPORT_TILE_P_FLAGS]), 1, "fem3d:6:10: %s", fd.stats);
        spmvport_format_data_free(&fd);
        spmv_matrix_destroy(A);
    }
}

/* FEM blocks that are not mostly CSR (FEM blocks of 8 unknowns at odd sizes: 42% CSR tiles, 49% Dense) take 4 block
 * tasks a tile row where their tile rows are fewer than 16 an SM and 4 a tile row fit one wave of warps (1280 threads
 * an SM), in place of the paper's balance of 8 with carries, and 8 where 8 fit (W = 32): fem3d:8:9 (365 tile rows) on
 * 73 SMs (2920 warps for 2920) and more takes 8, on 72 and on 37 (1460 for 1480) 4, on 36 (1440) none (split with
 * carries), nor at W = 64 (2 warps a block of 128 threads) or on the CPU backend. */
Test(tile_invariants, fem_blocks_of_8_block_tasks)
{
    const struct {
        int sms, warp, cpu, bk;
    } cases[] = {{37, 32, 0, 4}, {132, 32, 0, 8}, {73, 32, 0, 8}, {72, 32, 0, 4}, {36, 32, 0, 1}, {132, 64, 0, 1},
                 {132, 32, 1, 1}};
    for (int p = 0; p < 2; p++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, "fem3d:8:9", p ? SPMV_F32 : SPMV_F64, 5), SPMV_STATUS_SUCCESS);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            spmv_device_info_t dev = model_gpu(cases[i].sms);
            if (cases[i].cpu) dev.backend = SPMV_BACKEND_CPU;
            spmvport_format_data fd;
            spmv_plan_options_t o = tile_options(cases[i].warp, 0, 0, 0);
            build_layout(&fd, A, cases[i].warp, &o, &dev);
            const int64_t rows = fd.params[SPMVPORT_TILE_P_TILE_ROWS], fl = fd.params[SPMVPORT_TILE_P_FLAGS];
            const int64_t csr = support_stat(fd.stats, "csr_tiles"), tiles = fd.params[SPMVPORT_TILE_P_TILES];
            cr_assert(rows == 365 && 2 * csr < tiles && 3 * csr >= tiles && (fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE),
                      "not the plan the test is for: %s", fd.stats);
            cr_assert_eq(spmvport_tile_block_tasks(fl), cases[i].bk, "case %zu: %s", i, fd.stats);
            if (cases[i].bk > 1)
                cr_assert(fd.params[SPMVPORT_TILE_P_TASKS] == cases[i].bk * rows &&
                              fd.params[SPMVPORT_TILE_P_SPLITS] == 0,
                          "case %zu: %s", i, fd.stats);
            else if (!cases[i].cpu)
                cr_assert(fd.params[SPMVPORT_TILE_P_SPLITS] > 0, "case %zu: carries expected: %s", i, fd.stats);
            check_tasks(&fd, "FEM blocks of 8, block tasks");
            spmvport_format_data_free(&fd);
        }
        spmv_matrix_destroy(A);
    }
}

/* 8 block tasks instead of 4 (W = 32, blocks of 256 threads) where 8 a tile row fit one wave of the warps held at 1280
 * threads an SM and the tile rows hold at least 10 tiles: fem3d:2:13 (275 tile rows of 13.8 tiles) takes 8 on 55 SMs
 * (2200 warps for 2200) and 4 on 54; stencil3d:7:17 (308 tile rows of 8.6 tiles) keeps 4 on 132; fem3d:3:16 (768
 * tile rows: 6144 warps for 5280) keeps 4 on 132; at W = 64 neither takes 8 (a block of 256 threads holds 4 waves). */
Test(tile_invariants, eight_block_tasks_rule)
{
    const struct {
        const char *spec;
        int sms, warp, bk;
    } cases[] = {{"fem3d:2:13", 55, 32, 8},   {"fem3d:2:13", 54, 32, 4}, {"fem3d:2:13", 132, 64, 2},
                 {"stencil3d:7:17", 132, 32, 4}, {"fem3d:3:16", 132, 32, 4}};
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            spmv_matrix_t *A = NULL;
            cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, p ? SPMV_F32 : SPMV_F64, 5), SPMV_STATUS_SUCCESS);
            const spmv_device_info_t dev = model_gpu(cases[i].sms);
            spmvport_format_data fd;
            spmv_plan_options_t o = tile_options(cases[i].warp, 0, 0, 0);
            build_layout(&fd, A, cases[i].warp, &o, &dev);
            const int64_t fl = fd.params[SPMVPORT_TILE_P_FLAGS], rows = fd.params[SPMVPORT_TILE_P_TILE_ROWS];
            cr_assert_eq(spmvport_tile_block_tasks(fl), cases[i].bk, "%s case %zu: %s", cases[i].spec, i, fd.stats);
            cr_assert(fd.params[SPMVPORT_TILE_P_TASKS] == cases[i].bk * rows && fd.params[SPMVPORT_TILE_P_SPLITS] == 0,
                      "%s case %zu: %s", cases[i].spec, i, fd.stats);
            check_tasks(&fd, "eight block tasks rule");
            spmvport_format_data_free(&fd);
            if (cases[i].bk == 8) check_invariants_on(A, &o, &dev, "fem3d:2:13, 8 block tasks");
            spmv_matrix_destroy(A);
        }
}

/* On a GPU, plans of regular rows defer their COO tiles under the 1.8M threshold too, unless more than a quarter of
 * the entries would go or the plan would not be mostly CSR; and tile rows under 16 an SM that are shorter than 18
 * tiles take block tasks: 4 where 4 a tile row fit one wave of warps (1280 threads an SM), else 2. fem3d:3:16 (768
 * tile rows, 11% of its entries in COO tiles) on 132 SMs: deferred, 4; on 49: 2 (3072 warps > 1960); on 48 (768 =
 * 16 x 48): none; at W = 64: 2 (2 warps a block). The CPU backend, a threshold set, tile_deferred_coo = -1, and
 * matrices whose deferral would move too much (uniform:20000:4, random columns: nearly all COO) or leave the plan
 * not mostly CSR (fem3d:2:9) keep the plan they had without the rule. */
Test(tile_invariants, small_regular_deferral)
{
    const spmv_device_info_t gpu = model_gpu(132);
    const struct {
        const char *spec;
        int sms, warp, cpu, threshold, coo, deferred, bk;
    } cases[] = {{"fem3d:3:16", 132, 32, 0, 0, 0, 1, 4},       {"fem3d:3:16", 49, 32, 0, 0, 0, 1, 2},
                 {"fem3d:3:16", 48, 32, 0, 0, 0, 1, 1},        {"fem3d:3:16", 132, 64, 0, 0, 0, 1, 2},
                 {"fem3d:3:16", 132, 32, 1, 0, 0, 0, 1},       {"fem3d:3:16", 132, 32, 0, 1800000, 0, 0, 1},
                 {"fem3d:3:16", 132, 32, 0, 0, -1, 0, 1},      {"uniform:20000:4", 132, 32, 0, 0, 0, 0, 1},
                 {"fem3d:2:9", 132, 32, 0, 0, 0, 0, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, SPMV_F64, 5), SPMV_STATUS_SUCCESS);
        spmv_device_info_t dev = gpu;
        dev.multiprocessors = cases[i].sms;
        if (cases[i].cpu) dev.backend = SPMV_BACKEND_CPU;
        spmv_plan_options_t o = tile_options(cases[i].warp, 0, cases[i].coo, 0);
        o.tile_deferred_threshold = cases[i].threshold;
        spmvport_format_data fd, ref;
        build_layout(&fd, A, cases[i].warp, &o, &dev);
        const int64_t fl = fd.params[SPMVPORT_TILE_P_FLAGS], def = fd.params[SPMVPORT_TILE_P_DEF_NNZ];
        cr_assert_eq(support_stat(fd.stats, "deferred"), cases[i].deferred, "case %zu: %s", i, fd.stats);
        cr_assert_eq(spmvport_tile_block_tasks(fl), cases[i].bk, "case %zu: %s", i, fd.stats);
        if (cases[i].deferred)
            cr_assert(def > 0 && 4 * def <= A->nnz && (fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) &&
                          (fl & SPMVPORT_TILE_FLAG_DEFERRED_INLINE) && strstr(fd.stats, "select=75/15/20;") != NULL,
                      "case %zu: %s", i, fd.stats);
        if (cases[i].bk > 1)
            cr_assert(fd.params[SPMVPORT_TILE_P_TASKS] == cases[i].bk * fd.params[SPMVPORT_TILE_P_TILE_ROWS] &&
                          fd.params[SPMVPORT_TILE_P_SPLITS] == 0,
                      "case %zu: %s", i, fd.stats);
        /* undone or not taken: the plan is the one the threshold keeps (same tiles, tasks and deferred part) */
        if (!cases[i].deferred && !cases[i].cpu && cases[i].coo == 0) {
            o.tile_deferred_threshold = 1800000;
            build_layout(&ref, A, cases[i].warp, &o, &dev);
            cr_assert(strcmp(fd.stats, ref.stats) == 0, "case %zu: %s / %s", i, fd.stats, ref.stats);
            spmvport_format_data_free(&ref);
        }
        /* the GPU plan is the one these options give any device, which the CPU executor then checks */
        if (i == 0) {
            spmv_plan_options_t f = tile_options(32, 0, 0, 0);
            f.tile_deferred_threshold = 1, f.tile_block_tasks = 4;
            spmv_device_info_t cpu = gpu;
            cpu.backend = SPMV_BACKEND_CPU;
            build_layout(&ref, A, 32, &f, &cpu);
            cr_assert(strcmp(fd.stats, ref.stats) == 0, "forced: %s / %s", fd.stats, ref.stats);
            spmvport_format_data_free(&ref);
            spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
            support_check_format(ctx, SPMV_FORMAT_TILE, &f, cases[i].spec, A, 0);
            spmv_context_destroy(ctx);
        }
        check_tasks(&fd, "small regular deferral");
        spmvport_format_data_free(&fd);
        check_invariants(A, &o, cases[i].spec);
        spmv_matrix_destroy(A);
    }
}

/* fd has the tiles, tasks and flags of the plan built with options o but tile_variant = variant */
static void same_plan_as_variant(const spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_plan_options_t *o,
                                 const spmv_device_info_t *dev, int variant)
{
    spmv_plan_options_t v = *o;
    v.tile_variant = variant;
    spmvport_format_data ref;
    build_layout(&ref, A, 32, &v, dev);
    cr_assert(ref.params[SPMVPORT_TILE_P_TILES] == fd->params[SPMVPORT_TILE_P_TILES] &&
                  ref.params[SPMVPORT_TILE_P_TASKS] == fd->params[SPMVPORT_TILE_P_TASKS] &&
                  ref.params[SPMVPORT_TILE_P_FLAGS] == fd->params[SPMVPORT_TILE_P_FLAGS],
              "variant %d: %s / %s", variant, ref.stats, fd->stats);
    spmvport_format_data_free(&ref);
}

/* On a GPU a band plan of fewer than 16 tile rows an SM with under 90% band tiles, or with at least 16 tiles a tile
 * row, is built again without band tiles, and kept so where that plan is mostly CSR: stencil3d:27:24 (864 tile rows,
 * its band plan 73% band tiles) on 132 SMs becomes a plan of CSR tiles with x by shuffles and block tasks, as does
 * fem3d:2:17 in f32 (615 tile rows of 19 band tiles; in f64 its band plan is mixed); on 54 SMs (864 = 16 x 54) and on
 * the CPU backend the stencil stays a band plan. Where the plan without band tiles is not mostly CSR, the band plan
 * stays (stencil3d:7:20 and :7:24, no tile row split; stencil3d:27:32, all band without holes) unless it runs badly
 * (band_plan_runs_badly): then every tile is CSR, as tile_variant 1 builds it (stencil3d:27:20, :7:29, :7:30, most
 * tile rows split; fem3d:2:16, all band with 15% holes). Small mixed plans that stay band run a warp a task (no group
 * tasks) unless tile_group_tasks asks; the others keep a task per group of 16 lanes. The plans without band tiles
 * are the ones tile_variant 2 builds. */
Test(tile_invariants, small_band_plans)
{
    const spmv_device_info_t gpu = model_gpu(132);
    enum { NONE, MIXED, ALL, CSR }; /* CSR: every tile CSR (band_plan_runs_badly) */
    const struct {
        const char *spec;
        int f32; /* -1: both precisions */
        int sms, cpu, band, group, group_option;
    } cases[] = {{"stencil3d:27:24", -1, 132, 0, NONE, 0, 0}, {"stencil3d:27:24", -1, 54, 0, MIXED, 1, 0},
                 {"stencil3d:27:24", -1, 132, 1, MIXED, 1, 0}, {"stencil3d:27:20", -1, 132, 0, CSR, 0, 0},
                 {"stencil3d:7:30", -1, 132, 0, CSR, 0, 0},    {"stencil3d:7:30", -1, 132, 0, MIXED, 1, 1},
                 {"fem3d:2:17", 1, 132, 0, NONE, 0, 0},        {"fem3d:2:17", 0, 132, 0, NONE, 0, 0},
                 {"fem3d:2:17", 1, 32, 0, ALL, 1, 0},          {"fem3d:2:16", -1, 132, 0, CSR, 0, 0},
                 {"fem3d:2:16", -1, 132, 0, ALL, 1, 1},        {"stencil3d:27:32", -1, 132, 0, ALL, 1, 0},
                 {"stencil3d:7:29", -1, 132, 0, CSR, 0, 0},    {"stencil3d:7:20", -1, 132, 0, MIXED, 0, 0},
                 {"stencil3d:7:24", 0, 132, 0, MIXED, 0, 0}};
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (cases[i].f32 >= 0 && cases[i].f32 != p) continue;
            spmv_matrix_t *A = NULL;
            cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, p ? SPMV_F32 : SPMV_F64, 5), SPMV_STATUS_SUCCESS);
            spmv_device_info_t dev = gpu;
            dev.multiprocessors = cases[i].sms;
            if (cases[i].cpu) dev.backend = SPMV_BACKEND_CPU;
            spmv_plan_options_t o = tile_options(32, 0, 0, 0);
            o.tile_group_tasks = cases[i].group_option;
            spmvport_format_data fd;
            build_layout(&fd, A, 32, &o, &dev);
            const int64_t fl = fd.params[SPMVPORT_TILE_P_FLAGS];
            const double band = support_stat(fd.stats, "band_tiles"), tiles = support_stat(fd.stats, "tiles");
            cr_assert_eq(!!(fl & SPMVPORT_TILE_FLAG_GROUP_TASKS), cases[i].group, "%s %s case %zu: %s", cases[i].spec,
                         p ? "f32" : "f64", i, fd.stats);
            if (cases[i].band == MIXED) {
                cr_assert(band > 0 && 10 * band < 9 * tiles, "%s case %zu: %s", cases[i].spec, i, fd.stats);
            } else if (cases[i].band == ALL) {
                cr_assert(band == tiles, "%s case %zu: %s", cases[i].spec, i, fd.stats);
            } else if (cases[i].band == CSR) {
                cr_assert(fd.params[SPMVPORT_TILE_P_VARIANT] == 1 && support_stat(fd.stats, "csr_tiles") == tiles &&
                              (fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) && spmvport_tile_block_tasks(fl) > 1,
                          "%s %s case %zu: %s", cases[i].spec, p ? "f32" : "f64", i, fd.stats);
                same_plan_as_variant(&fd, A, &o, &dev, 1); /* the plan tile_variant 1 (every tile CSR) asks for */
            } else {
                cr_assert(band == 0 && (fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) && spmvport_tile_block_tasks(fl) > 1,
                          "%s %s case %zu: %s", cases[i].spec, p ? "f32" : "f64", i, fd.stats);
                same_plan_as_variant(&fd, A, &o, &dev, 2); /* every tile but band asked for (tile_variant 2) */
            }
            check_tasks(&fd, "small band plans");
            spmvport_format_data_free(&fd);
            spmv_matrix_destroy(A);
        }
}

/* Plans whose first pass runs again (goto pass1: a small band plan tried without band tiles and back, a small
 * deferral undone) count each row's deferred entries from 0 every pass. They were added on top of the previous
 * pass's prefix sums: on a GPU stencil3d:27:31 (a band plan tried without band tiles, its deferral counted twice)
 * failed with "4787461717 value slots exceed the 32-bit range" (SPMV_STATUS_OVERFLOW) in both precisions. The
 * layouts built for an H200-like GPU at W = 32 and 64, checked as the CPU's are and run by the executor against the
 * oracle. */
Test(tile_invariants, passes_begun_again_count_from_zero, .timeout = 300)
{
    const spmv_device_info_t gpu = model_gpu(132);
    const char *specs[] = {"stencil3d:27:31", "stencil3d:27:20", "stencil3d:27:21", "fem3d:2:16"};
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
            spmv_matrix_t *A = NULL;
            cr_assert_eq(spmv_matrix_generate(&A, specs[i], p ? SPMV_F32 : SPMV_F64, 42), SPMV_STATUS_SUCCESS);
            for (int w = 32; w <= 64; w *= 2) {
                spmv_plan_options_t o = tile_options(w, 0, 0, 0);
                char what[64];
                snprintf(what, sizeof what, "%s %s, H200-like, W = %d", specs[i], p ? "f32" : "f64", w);
                check_invariants_on(A, &o, &gpu, what);
            }
            spmv_matrix_destroy(A);
        }
}

Test(tile_invariants, csr_step16_rule)
{
    spmv_device_info_t gpu = model_gpu(132), cpu = gpu;
    cpu.backend = SPMV_BACKEND_CPU;
    const struct {
        const char *spec;
        const spmv_device_info_t *dev;
        int f32, option, step, bk; /* bk: the block tasks the plan must have (0: none, block tasks off) */
    } cases[] = {{"fem3d:5:11", &gpu, 1, 0, 16, 0}, {"fem3d:5:11", &gpu, 0, 0, 4, 0}, {"fem3d:5:11", &cpu, 1, 0, 4, 0},
                 {"fem3d:5:11", &gpu, 1, 3, 4, 0}, {"fem3d:5:11", &gpu, 0, 5, 16, 0}, {"fem3d:4:10", &gpu, 1, 0, 4, 0},
                 {"fem3d:4:10", &gpu, 1, 5, 16, 0}, {"fem3d:3:13", &gpu, 1, 5, 16, 0}, {"fem3d:3:13", &gpu, 1, 0, 9, 0},
                 {"fem3d:7:10", &gpu, 1, 0, 16, 0}, {"fem3d:7:10", &gpu, 0, 0, 4, 0}, {"fem3d:7:11", &gpu, 1, 0, 16, 0},
                 {"fem3d:7:11", &gpu, 1, 0, 4, 8}, {"fem3d:6:12", &gpu, 1, 0, 16, 8}, {"fem3d:6:12", &gpu, 0, 0, 4, 8},
                 {"fem3d:5:12", &gpu, 1, 0, 16, 0}, {"fem3d:5:12", &gpu, 0, 0, 4, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spmv_matrix_t *A = NULL;
        cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, cases[i].f32 ? SPMV_F32 : SPMV_F64, 5),
                     SPMV_STATUS_SUCCESS);
        spmvport_format_data fd;
        spmv_plan_options_t o = tile_options(32, 0, 0, 0);
        o.tile_csr_shuffle = cases[i].option;
        /* these small grids would take block tasks, which never take steps of 9: off but where a case asks */
        o.tile_block_tasks = cases[i].bk > 0 ? 0 : -1;
        build_layout(&fd, A, 32, &o, cases[i].dev);
        const int64_t fl = fd.params[SPMVPORT_TILE_P_FLAGS];
        cr_assert_eq(spmvport_tile_block_tasks(fl), cases[i].bk > 0 ? cases[i].bk : 1, "%s case %zu: %s", cases[i].spec,
                     i, fd.stats);
        cr_assert(fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE, "%s case %zu: no x by shuffles: %s", cases[i].spec, i, fd.stats);
        cr_assert_eq(spmvport_tile_shuffle_step(fl), cases[i].step, "%s case %zu: %s", cases[i].spec, i, fd.stats);
        cr_assert_eq(support_stat(fd.stats, "csr_shuffle"), cases[i].step, "%s case %zu: %s", cases[i].spec, i, fd.stats);
        cr_assert(!(fl & SPMVPORT_TILE_FLAG_CSR_STEP16) || !(fl & SPMVPORT_TILE_FLAG_CSR_STEP3), "%s", fd.stats);
        spmvport_format_data_free(&fd);
        spmv_matrix_destroy(A);
    }
}

/* Wide plans of FEM blocks (tile rows for at least 16 warps an SM) take 1.5x the average tile row as their balance up
 * to 64 tiles a task, graphs of COO tiles up to 16, and FEM blocks of 8 unknowns whose tile rows cut their blocks
 * (42-45% CSR tiles, the rest nearly all Dense) run x by shuffles. On 8 SMs: fem3d:7:12 (70 of its 756 tile rows
 * longer than 32 tiles, split at the former 32) keeps whole tile rows; on 16, fem3d:8:9 (365 tile rows) runs x by
 * shuffles with whole tile rows (before: no shuffles, 227 rows split at 16); kron:14:16 (no CSR tile) keeps 16 and
 * no shuffles. */
Test(tile_invariants, wide_fem_plans)
{
    const struct {
        const char *spec;
        int sms, shuffle;
        int64_t balance_max, tile_rows;
    } cases[] = {{"fem3d:7:12", 8, 1, 64, 756}, {"fem3d:8:9", 16, 1, 64, 365}, {"kron:14:16", 8, 0, 16, 1024}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int p = 0; p < 2; p++) {
            spmv_matrix_t *A = NULL;
            cr_assert_eq(spmv_matrix_generate(&A, cases[i].spec, p ? SPMV_F32 : SPMV_F64, 5), SPMV_STATUS_SUCCESS);
            const spmv_device_info_t dev = model_gpu(cases[i].sms);
            spmvport_format_data fd;
            spmv_plan_options_t o = tile_options(32, 0, 0, 0);
            build_layout(&fd, A, 32, &o, &dev);
            const int64_t rows = fd.params[SPMVPORT_TILE_P_TILE_ROWS], fl = fd.params[SPMVPORT_TILE_P_FLAGS];
            const int64_t balance = support_stat(fd.stats, "tbalance");
            cr_assert_eq(rows, cases[i].tile_rows, "%s: not the plan the test is for: %s", cases[i].spec, fd.stats);
            cr_assert_eq(spmvport_tile_block_tasks(fl), 1, "%s: %s", cases[i].spec, fd.stats);
            cr_assert_eq(!!(fl & SPMVPORT_TILE_FLAG_CSR_SHUFFLE), cases[i].shuffle, "%s: %s", cases[i].spec, fd.stats);
            if (cases[i].balance_max == 64)
                cr_assert(balance > 16 && balance <= 64 && fd.params[SPMVPORT_TILE_P_TASKS] == rows &&
                              fd.params[SPMVPORT_TILE_P_SPLITS] == 0,
                          "%s: whole tile rows expected: %s", cases[i].spec, fd.stats);
            else
                cr_assert_eq(balance, 16, "%s: %s", cases[i].spec, fd.stats);
            check_tasks(&fd, "wide FEM plans");
            spmvport_format_data_free(&fd);
            spmv_matrix_destroy(A);
        }
}

/* A plan with x by shuffles (ADPT) stores the tiles its rule makes ELL as CSR: FEM blocks of 4 unknowns (fem3d:4:10,
 * whose uniform rows make ELL tiles otherwise) have none, with W = 32 and 64; without x by shuffles
 * (`tile_csr_shuffle=-1`) or with the paper's seven formats (`tile_variant=2`) they keep them. The entries are the
 * same either way (check_invariants). */
Test(tile_invariants, shuffled_plans_store_ell_as_csr)
{
    spmv_matrix_t *F = NULL;
    cr_assert_eq(spmv_matrix_generate(&F, "fem3d:4:10", SPMV_F64, 2), SPMV_STATUS_SUCCESS);
    for (int w = 32; w <= 64; w *= 2)
        for (int v = 0; v < 3; v++) {
            spmvport_format_data fd;
            spmv_plan_options_t o = tile_options(w, v == 2 ? 2 : 0, 0, 0);
            if (v == 1) o.tile_csr_shuffle = -1;
            build_layout(&fd, F, w, &o, NULL);
            const int shuffled = (fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) != 0;
            cr_assert_eq(shuffled, v != 1, "W %d, case %d: %s", w, v, fd.stats);
            cr_assert_eq(support_stat(fd.stats, "ell_tiles") > 0, v != 0, "W %d, case %d: %s", w, v, fd.stats);
            spmvport_format_data_free(&fd);
            check_invariants(F, &o, "fem3d:4:10, ELL as CSR");
        }
    spmv_matrix_destroy(F);
}

/* The shuffled loop's entries a step: 3 on FEM blocks whose rows have 3, 6 or 9 entries a tile in nearly every warp
 * step (fem3d:3:13: a quarter fewer lane slots, no more steps than 4), else 4 (bcsstk15: fewer slots at 3 but 18%
 * more steps). */
Test(tile_invariants, csr_shuffle_step)
{
    for (int i = 0; i < 2; i++) {
        spmv_matrix_t *A = NULL;
        if (i == 0) cr_assert_eq(spmv_matrix_generate(&A, "fem3d:3:13", SPMV_F64, 3), SPMV_STATUS_SUCCESS);
        else A = support_read_shared("bcsstk15", SPMV_F64);
        for (int w = 32; w <= 64; w *= 2) {
            spmvport_format_data fd;
            spmv_plan_options_t o = tile_options(w, 0, 0, 0);
            build_layout(&fd, A, w, &o, NULL);
            cr_assert_eq(support_stat(fd.stats, "csr_shuffle"), i == 0 ? 3 : 4, "%s, W %d: %s",
                         i == 0 ? "fem3d:3:13" : "bcsstk15", w, fd.stats);
            spmvport_format_data_free(&fd);
        }
        spmv_matrix_destroy(A);
    }
}

Test(tile_invariants, stencil_band_tiles)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *S = stencil5(SPMV_F64);
    for (int w = 32; w <= 64; w *= 2) {
        spmv_plan_options_t o = tile_options(w, 0, 0, 0);
        spmvport_format_data fd;
        build_layout(&fd, S, w, &o, NULL);
        const uint8_t *fmt = fd.arrays[SPMVPORT_TILE_A_FMT].data;
        for (int64_t t = 0; t < fd.params[SPMVPORT_TILE_P_TILES]; t++)
            cr_assert(SPMVPORT_TILE_IS_BAND(fmt[t]), "tile %lld format %d (%s)", (long long)t, fmt[t], fd.stats);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_BATCH], 4, "%s", fd.stats);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_TASKS], 1, "small plan: one task per warp (%s)", fd.stats);
        spmvport_format_data_free(&fd);
        o.tile_band_tasks = 8; /* 3 K < W: W = 32 takes at most 8 */
        build_layout(&fd, S, w, &o, NULL);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_TASKS], 8, "%s", fd.stats);
        spmvport_format_data_free(&fd);
        o.tile_band_tasks = 0;
        o.tile_inflight = 1; /* explicit: the tile-by-tile kernel, so no band tiles */
        build_layout(&fd, S, w, &o, NULL);
        fmt = fd.arrays[SPMVPORT_TILE_A_FMT].data;
        for (int64_t t = 0; t < fd.params[SPMVPORT_TILE_P_TILES]; t++)
            cr_assert(!SPMVPORT_TILE_IS_BAND(fmt[t]), "inflight 1: band tile %lld", (long long)t);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_BATCH], 0, "%s", fd.stats);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_BAND_TASKS], 1, "no band batches: one task per warp");
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_STEPS, 0,
                     "no CSR tiles, no CSR steps (%s)", fd.stats);
        spmvport_format_data_free(&fd);
        o.tile_variant = 1; /* every tile CSR: CSR steps only when asked (measured slower); never with band batches */
        build_layout(&fd, S, w, &o, NULL);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_STEPS, 0,
                     "all-CSR tiles, default: no CSR steps (%s)", fd.stats);
        spmvport_format_data_free(&fd);
        o.tile_csr_steps = 1;
        build_layout(&fd, S, w, &o, NULL);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_STEPS, 1,
                     "all-CSR tiles, tile_csr_steps 1 (%s)", fd.stats);
        spmvport_format_data_free(&fd);
        o.tile_csr_steps = -1;
        build_layout(&fd, S, w, &o, NULL);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_STEPS, 0,
                     "tile_csr_steps -1 (%s)", fd.stats);
        spmvport_format_data_free(&fd);
        o = tile_options(w, 0, 0, 0);
        o.tile_csr_steps = 1; /* band batches: no CSR steps whatever the option */
        build_layout(&fd, S, w, &o, NULL);
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_STEPS, 0,
                     "band batches (%s)", fd.stats);
        spmvport_format_data_free(&fd);
    }
    for (int k = 0; k < 6; k++) {
        spmv_plan_options_t o = tile_options(k % 2 ? 64 : 32, 0, k == 2 || k == 3 ? 1 : 0, k == 3 ? 2 : 0);
        o.tile_band_batch = k >= 4 ? 2 : 0; /* the executor's order depends on neither */
        o.tile_band_tasks = k == 1 || k == 3 ? 3 : 0;
        spmv_matrix_t *A = k % 2 ? stencil5(SPMV_F32) : S;
        support_check_format(ctx, SPMV_FORMAT_TILE, &o, "stencil", A, 0);
        check_invariants(A, &o, "stencil, band tiles");
        if (A != S) spmv_matrix_destroy(A);
    }
    spmv_matrix_destroy(S);
    spmv_context_destroy(ctx);
}

/* ---- (d): update_values ------------------------------------------------------------------------------------- */

/* A plan of A updated with the values of B (same pattern, B made from the same creator arrays) must give
 * bitwise what a plan of B gives (the layout depends on the pattern only), and pass the oracle for B. */
static void check_update(spmv_context_t *ctx, const spmv_matrix_t *A, const spmv_matrix_t *B,
                         const void *creator_values, const spmv_plan_options_t *opt, const char *what)
{
    int32_t m, n;
    spmv_precision_t p;
    spmv_matrix_get_size(A, &m, &n, NULL, &p);
    const size_t vs = p == SPMV_F32 ? sizeof(float) : sizeof(double);
    spmv_plan_t *pa = NULL, *pb = NULL;
    cr_assert_eq(spmv_plan_create(&pa, ctx, A, SPMV_FORMAT_TILE, opt), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    cr_assert_eq(spmv_plan_create(&pb, ctx, B, SPMV_FORMAT_TILE, opt), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    cr_assert_eq(spmv_plan_update_values(pa, creator_values), SPMV_STATUS_SUCCESS, "%s: %s", what,
                 spmv_last_error(ctx));
    void *x = malloc(vs * (size_t)(n + 1)), *y0 = malloc(vs * (size_t)(m + 1));
    void *ya = malloc(vs * (size_t)(m + 1)), *yb = malloc(vs * (size_t)(m + 1));
    cr_assert(x && y0 && ya && yb);
    support_random_vector(x, n, p, 11);
    support_random_vector(y0, m, p, 12);
    memcpy(ya, y0, vs * (size_t)m);
    memcpy(yb, y0, vs * (size_t)m);
    cr_assert_eq(spmv_execute(pa, 1.5, x, -0.5, ya), SPMV_STATUS_SUCCESS);
    cr_assert_eq(spmv_execute(pb, 1.5, x, -0.5, yb), SPMV_STATUS_SUCCESS);
    cr_assert(memcmp(ya, yb, vs * (size_t)m) == 0, "%s: updated plan differs from a fresh plan", what);
    double ratio;
    int32_t row;
    cr_assert_eq(spmv_reference_check(B, 1.5, x, -0.5, y0, ya, &ratio, &row), SPMV_STATUS_SUCCESS);
    cr_assert(ratio <= 1.0, "%s: updated plan off at row %d by %g x the bound", what, row, ratio);
    free(x), free(y0), free(ya), free(yb);
    spmv_plan_destroy(pa);
    spmv_plan_destroy(pb);
}

Test(tile_update, values_identity_order)
{
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    for (int prec = 0; prec < 2; prec++) {
        spmv_precision_t p = prec ? SPMV_F64 : SPMV_F32;
        support_case *cases;
        int n = support_edge_corpus(p, &cases);
        for (int i = 0; i < n; i++) {
            int32_t m, nc, nnz;
            const int32_t *rp, *ci;
            const void *v;
            if (cases[i].A->src_map != NULL) continue; /* creator order differs: values_with_repeated_entries */
            spmv_matrix_get_size(cases[i].A, &m, &nc, &nnz, NULL);
            spmv_matrix_get_csr(cases[i].A, &rp, &ci, &v);
            void *nv = malloc((nnz + 1) * (p == SPMV_F32 ? sizeof(float) : sizeof(double)));
            cr_assert(nv);
            support_random_vector(nv, nnz, p, 77 + (uint64_t)i);
            spmv_matrix_t *B = NULL;
            cr_assert_eq(spmv_matrix_create_csr(&B, m, nc, nnz, rp, ci, nv, p, 0, 0), SPMV_STATUS_SUCCESS);
            for (int d = -1; d <= 1; d += 2) {
                spmv_plan_options_t o = tile_options(d < 0 ? 32 : 64, 0, d, d > 0 ? 2 : 0);
                check_update(ctx, cases[i].A, B, nv, &o, cases[i].name);
            }
            spmv_matrix_destroy(B);
            free(nv);
        }
        support_cases_free(cases, n);
    }
    spmv_context_destroy(ctx);
}

Test(tile_update, values_with_repeated_entries)
{
    /* the crafted matrix with repeats: update_values takes creator-order values and sums repeats again */
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    for (int prec = 0; prec < 2; prec++) {
        spmv_precision_t p = prec ? SPMV_F64 : SPMV_F32;
        spmv_matrix_t *A = crafted(p, 21, 1);
        const int32_t src_nnz = A->src_nnz;
        cr_assert(A->src_map != NULL && src_nnz > A->nnz, "the crafted matrix should have repeats");
        void *nv = malloc((size_t)src_nnz * spmvport_value_size(p)); /* new creator-order values */
        cr_assert(nv);
        support_random_vector(nv, src_nnz, p, 5);
        /* B2: A's pattern with creator values nv, built by summing through A's own map */
        double *sum = calloc((size_t)A->nnz + 1, sizeof *sum);
        cr_assert(sum);
        for (int32_t k = 0; k < src_nnz; k++)
            sum[A->src_map[k]] += p == SPMV_F32 ? (double)((float *)nv)[k] : ((double *)nv)[k];
        void *sv = malloc(((size_t)A->nnz + 1) * spmvport_value_size(p));
        cr_assert(sv);
        for (int32_t k = 0; k < A->nnz; k++) {
            if (p == SPMV_F32) ((float *)sv)[k] = (float)sum[k];
            else ((double *)sv)[k] = sum[k];
        }
        spmv_matrix_t *B2 = NULL;
        cr_assert_eq(spmv_matrix_create_csr(&B2, A->m, A->n, A->nnz, A->row_ptr, A->col_idx, sv, p, 0,
                                            SPMV_MATRIX_ALLOW_NONFINITE),
                     SPMV_STATUS_SUCCESS, "%s", spmv_last_error(NULL));
        for (int d = -1; d <= 1; d += 2) {
            spmv_plan_options_t o = tile_options(32, 0, d, 0);
            check_update(ctx, A, B2, nv, &o, "crafted with repeats");
        }
        free(sum), free(sv), free(nv);
        spmv_matrix_destroy(A), spmv_matrix_destroy(B2);
    }
    spmv_context_destroy(ctx);
}

/* ---- (e): plan statistics -------------------------------------------------------------------------------------- */

Test(tile_stats, histogram_tiles_deferred_index_bytes)
{
    static const char *const names[] = {"csr", "coo", "ell", "hyb", "dns", "dnsrow", "dnscol", "band"};
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    spmv_matrix_t *A = crafted(SPMV_F64, 4, 0);
    for (int d = -1; d <= 1; d += 2) {
        spmv_plan_options_t o = tile_options(32, 0, d, 0);
        const spmv_plan_info_t info = support_plan_info(ctx, SPMV_FORMAT_TILE, A, &o);
        cr_assert(info.deterministic == 1 && info.format == SPMV_FORMAT_TILE);
        long long tiles = 0, nnz = 0, coo_tiles = support_stat(info.stats, "coo_tiles"),
                  hyb_tiles = support_stat(info.stats, "hyb_tiles");
        for (int f = 0; f < 8; f++) {
            char key[32];
            snprintf(key, sizeof key, "%s_tiles", names[f]);
            tiles += support_stat(info.stats, key);
            snprintf(key, sizeof key, "%s_nnz", names[f]);
            nnz += support_stat(info.stats, key);
        }
        cr_assert_eq(nnz, info.nnz, "histogram non-zeros: %s", info.stats);
        /* with deferred COO the COO tiles leave the tiled part; the histogram still counts the selection */
        cr_assert_eq(support_stat(info.stats, "tiles"), d > 0 ? tiles - coo_tiles : tiles, "%s", info.stats);
        long long deferred = support_stat(info.stats, "deferred_nnz");
        cr_assert(d > 0 ? deferred >= support_stat(info.stats, "coo_nnz") + hyb_tiles : deferred == 0, "%s", info.stats);
        cr_assert(strstr(info.stats, "index_bytes_per_nnz=") != NULL, "%s", info.stats);
        double ib = atof(strstr(info.stats, "index_bytes_per_nnz=") + strlen("index_bytes_per_nnz="));
        cr_assert(ib > 0 && ib < 4.0, "index bytes per non-zero %g should be below CSR's 4 here: %s", ib, info.stats);
    }
    spmv_matrix_destroy(A);
    spmv_context_destroy(ctx);
    /* the whole histogram within plan info's 512 bytes on a long stats string: fem3d:2:17 on a 132-SM GPU (a
     * deferred part, x by shuffles, block tasks: about 530 characters in all; the last pairs are the two ratios) */
    const spmv_device_info_t gpu = model_gpu(132);
    cr_assert_eq(spmv_matrix_generate(&A, "fem3d:2:17", SPMV_F64, 5), SPMV_STATUS_SUCCESS);
    spmv_plan_options_t o = tile_options(32, 0, 0, 0);
    spmvport_format_data fd;
    build_layout(&fd, A, 32, &o, &gpu);
    spmv_plan_info_t info;
    cr_assert(strlen(fd.stats) >= sizeof info.stats, "not the long stats the test is for: %s", fd.stats);
    spmvport_stats_fit(info.stats, sizeof info.stats, fd.stats, sizeof fd.stats, NULL);
    long long nnz = 0;
    for (int f = 0; f < 8; f++) {
        char key[32];
        snprintf(key, sizeof key, "%s_tiles", names[f]);
        cr_assert(support_stat(info.stats, key) >= 0);
        snprintf(key, sizeof key, "%s_nnz", names[f]);
        nnz += support_stat(info.stats, key);
    }
    cr_assert_eq(nnz, A->nnz, "histogram non-zeros: %s", info.stats);
    spmvport_format_data_free(&fd);
    spmv_matrix_destroy(A);
}

/* A task per group of 16 lanes (tile_group_tasks): band batches (W = 32, 64), the tile-by-tile kernel with
 * CSR steps and split rows, and its flag only where the kernel has it (not with 3 tasks per warp), by default on
 * a band plan. */
Test(tile_variants, group_tasks)
{
    spmv_plan_options_t a = tile_options(32, 0, 0, 0), b = tile_options(64, 0, -1, 2), c = tile_options(64, 1, 1, 3);
    a.tile_group_tasks = b.tile_group_tasks = c.tile_group_tasks = 1;
    c.tile_csr_steps = 1;
    check_corpus(&a, SPMV_F64);
    check_corpus(&b, SPMV_F32);
    check_corpus(&c, SPMV_F64);
    invariants_over_corpus(&b, SPMV_F64);
    spmv_matrix_t *A = stencil5(SPMV_F64); /* band tiles: band batches, and with band_tasks 3 the K-task kernel */
    spmv_plan_options_t o[4] = {a, a, a, a};
    o[1].tile_band_tasks = 3, o[2].tile_group_tasks = -1, o[3].tile_group_tasks = 0; /* 0: on for band plans */
    char want[32];
    for (int k = 0; k < 4; k++) {
        spmvport_format_data fd;
        build_layout(&fd, A, 32, &o[k], NULL);
        cr_assert(k != 3 || fd.params[SPMVPORT_TILE_P_BAND_BATCH] > 0, "the stencil is a band plan");
        const int on = k == 0 || k == 3; /* not with K tasks per warp, not when off */
        cr_assert_eq(fd.params[SPMVPORT_TILE_P_FLAGS], on ? SPMVPORT_TILE_FLAG_GROUP_TASKS : 0, "set %d (%s)", k,
                     fd.stats);
        snprintf(want, sizeof want, "group_tasks=%d;", on);
        cr_assert(strstr(fd.stats, want) != NULL, "set %d: %s", k, fd.stats);
        spmvport_format_data_free(&fd);
    }
    spmv_context_t *ctx = support_context_or_skip(SPMV_BACKEND_CPU);
    support_check_format(ctx, SPMV_FORMAT_TILE, &a, "stencil, group tasks W = 32", A, 0);
    support_check_format(ctx, SPMV_FORMAT_TILE, &b, "stencil, group tasks W = 64, split", A, 0);
    spmv_context_destroy(ctx);
    spmv_matrix_destroy(A);
}
