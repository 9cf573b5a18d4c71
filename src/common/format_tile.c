/*
 * format_tile.c -- host builder of TileSpMV (format `tile`; Niu et al., IPDPS 2021; docs/formats/tile.md).
 *
 * The matrix is cut into 16 x 16 tiles. Each non-empty tile gets one of seven payloads (CSR, COO, ELL, HYB,
 * Dense, DenseRow, DenseCol; layouts in format_tile.h) chosen by the rules of docs/formats.md, with the real
 * rowlen x collen of edge tiles, and HYB when it is strictly the smallest in bytes; then this library's Band
 * (diagonals in the format byte, no index payload) when it is no larger, kept only where Band tiles are at least
 * half the tiles (they need the band batch kernel). A warp task covers at most
 * tbalance tiles of one tile row; a tile row with more tiles is split over several tasks, whose partial row sums
 * go to carry slots that a fix-up pass adds in task order (deterministic: no atomics). With deferred COO, the
 * entries of COO tiles and of HYB tails move to a CSR of m rows laid out for the csr_lb traversal.
 *
 * Two passes over the tile rows (OpenMP): the first chooses formats and counts, the second writes at offsets
 * from prefix sums. Both walk a tile row with 16 row cursors, so the build is O(nnz + 16 * tiles) and needs no
 * scratch of the matrix's width.
 */
#include <stdlib.h>
#include <string.h>

#include "format_builders.h"
#include "format_tile.h"

#define TD SPMVPORT_TILE_DIM

/* ---- selection thresholds (the public code's defaults; options tile_dense_percent, tile_coo_max, -------------
 * tile_ell_cv_percent override them) */
#define TILE_DENSE_PERCENT 75  /* Dense when nnz >= 75% of rowlen * collen */
#define TILE_COO_MAX 12        /* COO when nnz <= 12 */
#define TILE_ELL_CV_PERCENT 20 /* ELL when the row lengths' coefficient of variation (std / mean) <= 0.2 */
#define TILE_MAX_COO_MAX (TD * TD)
#define TILE_MAX_ELL_CV_PERCENT 1000
#define TILE_DEFAULT_BALANCE 8
#define TILE_BAND_BALANCE_MIN 16 /* the default for band plans with a task per group (the band items kernel): */
#define TILE_BAND_BALANCE_MAX 32 /* 1.5x the average tiles of a tile row, within these bounds */
#define TILE_WIDE_BALANCE_MAX 16  /* plans without band tiles with a tile row for a quarter of the warps the */
#define TILE_WIDE_ROWS_PER_SM 16  /* GPU holds (16 an SM): 1.5x the average tiles of a tile row, 8 to 16, */
#define TILE_WIDE_FEM_BALANCE_MAX 64 /* or to 64 for FEM blocks (fem_blocks) */
#define TILE_TAIL_SPLIT_MIN_TILES 18 /* tiles a tile row from which a short last wave splits rows (short_last_wave) */
#define TILE_TAIL_SPLIT_PARTS 3      /* into this many tasks */
#define TILE_MAX_BALANCE (1 << 20)
/* Band batch plans of at least this many tasks take TILE_DEFAULT_BAND_TASKS tasks per warp; smaller ones keep one
 * task per warp, for parallelism. Measured on the H200 (stencil3d:7:160): 4 tasks per warp 0.230 ms f64 / 0.194 f32,
 * 1 task 0.200 / 0.172, so the default is 1 and tile_band_tasks = 2..8 is an option. */
#define TILE_BAND_TASKS_MIN_TASKS 65536
#define TILE_DEFAULT_BAND_TASKS 1
/* Automatic inline deferred part: no tile row's deferred entries more than SKEW x their average per tile row +
 * SLACK warps' worth (a warp walks its tile row's alone) */
#define TILE_INLINE_SKEW 4
#define TILE_INLINE_SLACK 2
#define TILE_DEFAULT_INFLIGHT 1 /* the fewest registers: most resident warps (docs/formats/tile.md) */
#define TILE_DEFAULT_DEFERRED_THRESHOLD 1800000
/* Automatic deferred COO also needs at least this many COO tiles per tile row on average: the deferred pass
 * costs ~20 bytes per matrix row whatever it holds (row pointer, y read and written, with beta = 1), ~320 bytes
 * per tile row, while a COO tile left in place costs one tile step (a 13-byte header, its entries, a lane loop
 * step), so a stencil's 2 one-entry COO tiles per tile row stay, a graph's dozens go. Regular rows (longest <=
 * 2 x average + 16) defer from 2: their deferred part runs in the tile kernel (no second launch, y written once),
 * and each COO tile left in place is a warp step of a tile row's serial chain. H200 (session 33, run WC, on / off,
 * f64 / f32 x cuSPARSE): FEM blocks of 5-6 unknowns with 3-3.7 COO tiles a tile row fem3d:5:22 0.88 / 1.06 ->
 * 0.98 / 1.18, :5:24 (2.2) 0.95 / 1.06 -> 1.06 / 1.19, :6:20 0.93 / 1.02 -> 1.02 / 1.23; with the rule (runs WD, WE)
 * 21 other FEM grids of 2-3.9 a tile row all 1.02-1.20x faster in f64; in f32 17 of them 1.03-1.19x, fem3d:6:27
 * a tie, fem3d:7:30 and :7:34 (2.1 a tile row) 0.93x and 0.98x. */
#define TILE_DEFERRED_COO_PER_TILE_ROW 4
#define TILE_DEFERRED_COO_PER_TILE_ROW_REGULAR 2
/* Regular rows in plans without band tiles also defer where their COO tiles are at least 1 / this many of the tiles:
 * what a COO tile costs is a step of its tile row's chain, so short tile rows pay at fewer COO tiles a row. FEM
 * blocks of 2 unknowns at sizes 2 mod 4 have 1.78-1.92 two-by-two fragments a tile row of 18 tiles (10.1-10.4%),
 * fem3d:3:9 1.77 (12%), bcsstk14, fidapex6 and s3rmt3m3 1.1-1.7 (13-17%). H200 (session 44, run E2, three
 * alternating processes, tile time kept / deferred, f64 / f32): fem3d:2:30 f64 1.18x (0.88 -> 1.04x cuSPARSE),
 * fem3d:2:18-50 f64 1.03-1.08x but fem3d:2:38 0.94x (1.03 -> 0.96x), fem3d:2:18 / :2:22 f32 0.98-1.05 / 0.97,
 * fem3d:3:9 1.27 / 1.03, fem3d:5:8 1.19 / 1.27, the three shared matrices 1.10-1.37. In band plans the COO tiles
 * are the band's leftovers, decided after the band choice (fem3d:1:30 keeps its later deferral). Blocks of 7 at 7%
 * (fem3d:7:14, :7:18: 1.8-1.9 a tile row of 25) are not measured deferred and keep their tiles. */
#define TILE_DEFERRED_COO_SHARE_REGULAR 10
/* Plans of regular rows that defer automatically take COO tiles (so defer them) up to 15 entries, unless
 * tile_coo_max is set: FEM blocks of 5 and 7 unknowns cut by the tile grid leave 3 x 5 and 5 x 3 fragments of 15
 * entries, each a CSR tile step of a tile row's serial chain; deferred they join their rows' in-kernel CSR part.
 * 15, not 16: a 16-entry tile in a FEM plan is a 4 x 4 piece (blocks of 4 whole, of 6 cut), and those lost 2-40%
 * deferred (session 34, run X2); blocks of 2, 4 and 6 have no tile of 13-15 entries, so their plans do not change
 * (blocks of 3 have some at a few odd grid sizes: fem3d:3:21, :27, :37, 6% of the tiles). H200 (session 35, run
 * A1, x cuSPARSE 12 -> 15, f64 / f32): 14 grids of blocks of 5 and 7, geometric mean 1.012x faster, fem3d:5:38
 * 1.00 / 0.98 -> 1.03 / 1.00-1.01, :5:42 1.02 / 1.00 -> 1.04-1.05 / 1.03, :5:35 f32 0.95 -> 0.98-0.99; slowest
 * fem3d:5:29 f32 0.98x. */
#define TILE_COO_MAX_DEFERRED_REGULAR 15
/* On a GPU, plans of regular rows under the deferral threshold defer too (the same rule: at least 2 COO tiles a tile
 * row), where that moves at most 1 / TILE_SMALL_DEFERRED_PART of the entries and leaves the plan mostly CSR
 * (small_deferral_pays). See small_deferral_pays for why and what it measured. */
#define TILE_SMALL_DEFERRED_PART 4
/* Band plans under 16 tile rows an SM with fewer band tiles than this percent, or with at least TILE_SMALL_BAND_ROW_TILES
 * tiles a tile row: tried without (small_band_plan_to_try) */
#define TILE_SMALL_BAND_PERCENT 90
#define TILE_SMALL_BAND_ROW_TILES 16

static const char *const tile_format_names[SPMVPORT_TILE_NFORMATS] = {"csr", "coo", "ell", "hyb",
                                                                      "dns", "dnsrow", "dnscol", "band"};

/* ==============================================================================================================
 * Walking a tile row
 * ============================================================================================================ */

/* One tile as CSR positions: row i's entries in the tile are [start[i], start[i] + cnt[i]); mask has bit i set
 * where cnt[i] > 0, so the loops over a sparse tile (a graph's tiles hold 1-2 entries) visit its rows only. cnt[i]
 * is 0 outside the mask and start[i] is set inside it only: cursor_next touches the rows of the tile it leaves and of
 * the one it finds, not all 16 (with a vectorized mask, kron:20:16's build 1.4x faster, session 58). */
typedef struct {
    int32_t tc;     /* tile column */
    int rowlen, collen, nnz;
    unsigned mask;
    int32_t start[TD];
    int cnt[TD];
} tile_view;

/* Row cursors of one tile row: row i's next entry is at cur[i] (done when cur[i] == end[i]), in tile column
 * next_tc[i] (INT32_MAX when done, and for the rows past the matrix in the last tile row). */
typedef struct {
    const int32_t *col;
    int32_t n;
    int rowlen;
    int32_t cur[TD], end[TD], next_tc[TD];
} tile_cursor;

/* The index of the lowest set bit of b (b != 0). */
static int lowest_bit(unsigned b)
{
#if defined(__GNUC__)
    return __builtin_ctz(b);
#else
    int i = 0;
    for (; !(b & 1u); b >>= 1) i++;
    return i;
#endif
}

static void cursor_init(tile_cursor *c, const spmv_matrix_t *A, int32_t tr, tile_view *v)
{
    memset(v->cnt, 0, sizeof v->cnt);
    v->mask = 0;
    int64_t r0 = (int64_t)tr * TD;
    c->col = A->col_idx;
    c->n = A->n;
    c->rowlen = (int)(A->m - r0 < TD ? A->m - r0 : TD);
    for (int i = 0; i < TD; i++) {
        c->cur[i] = i < c->rowlen ? A->row_ptr[r0 + i] : 0;
        c->end[i] = i < c->rowlen ? A->row_ptr[r0 + i + 1] : 0;
        c->next_tc[i] = c->cur[i] < c->end[i] ? c->col[c->cur[i]] >> SPMVPORT_TILE_LOG2 : INT32_MAX;
    }
}

/* The next non-empty tile of the row, in column order; 0 when none is left. Columns are sorted per row. The
 * minimum and the mask are branch-free loops over the 16 cursors; only the rows in the tile advance. */
static int cursor_next(tile_cursor *c, tile_view *v)
{
    int32_t tc = INT32_MAX;
    for (int i = 0; i < TD; i++) tc = c->next_tc[i] < tc ? c->next_tc[i] : tc;
    if (tc == INT32_MAX) return 0;
    const int64_t limit = ((int64_t)tc + 1) * TD, first_col = (int64_t)tc * TD;
    static const unsigned bit[TD] = {1u, 2u, 4u, 8u, 16u, 32u, 64u, 128u, 256u, 512u, 1024u, 2048u, 4096u, 8192u,
                                     16384u, 32768u};
    unsigned mask = 0;
    for (int i = 0; i < TD; i++) mask |= bit[i] & (0u - (unsigned)(c->next_tc[i] == tc)); /* vectorizes */
    for (unsigned b = v->mask; b != 0; b &= b - 1) v->cnt[lowest_bit(b)] = 0; /* the last tile's rows */
    v->tc = tc;
    v->rowlen = c->rowlen;
    v->collen = (int)(c->n - first_col < TD ? c->n - first_col : TD);
    v->mask = mask;
    v->nnz = 0;
    for (unsigned b = mask; b != 0; b &= b - 1) {
        const int i = lowest_bit(b);
        int32_t p = c->cur[i];
        v->start[i] = p;
        while (p < c->end[i] && c->col[p] < limit) p++;
        v->cnt[i] = (int)(p - c->cur[i]);
        v->nnz += v->cnt[i];
        c->cur[i] = p;
        c->next_tc[i] = p < c->end[i] ? c->col[p] >> SPMVPORT_TILE_LOG2 : INT32_MAX;
    }
    return 1;
}

/* ==============================================================================================================
 * Choosing a tile's format
 * ============================================================================================================ */

typedef struct {
    int variant;  /* 0 ADPT with band tiles, 1 all CSR, 2 ADPT with the paper's seven formats only */
    int deferred; /* COO tiles and HYB tails go to the deferred CSR */
    int64_t vs;   /* bytes of a value */
    int band;     /* BAND tiles (variant 0, tile_inflight automatic): then the kernel runs band batches */
    int no_ell;   /* a tile the rule makes ELL is CSR (plans with x by shuffles: see the builder) */
    int band_all; /* band plans: every tile within SPMVPORT_TILE_BAND_MAXND diagonals is BAND, holes or not */
    int dense_percent, coo_max, ell_cv_percent; /* the rule's thresholds (the options'); -1: that rule never */
} tile_cfg;

typedef struct {
    int fmt;
    int width;         /* ELL / HYB */
    int lo, nd;        /* BAND: diagonals lo .. lo + nd - 1 */
    int32_t slots;     /* value slots kept in the tile */
    int32_t idx_bytes; /* index payload bytes */
    int deferred;      /* entries moved to the deferred CSR */
    int stored;        /* the tile stays in the tiled part */
    int rule_fmt;      /* the choice before a BAND replacement: the format of a plan without band tiles */
    uint16_t row_mask, col_mask; /* full rows / full columns (DenseRow / DenseCol) */
} tile_choice;

static int popcount16(unsigned v)
{
    int c = 0;
    for (; v != 0; v &= v - 1) c++;
    return c;
}

/* Rows of diagonal d (c = r + d) inside a rows x cols tile: max(0, -d) .. band_end - 1. */
static int band_first(int d) { return d < 0 ? -d : 0; }
static int band_len(int rows, int cols, int d)
{
    const int e = rows < cols - d ? rows : cols - d, b = band_first(d);
    return e > b ? e - b : 0;
}

static int64_t ell_bytes(int64_t slots, int64_t vs) { return slots * vs + 1 + (slots + 1) / 2; }

/* Bytes of the HYB payload with ELL width w and `tail` entries beyond it. */
static int64_t hyb_bytes(int rows, int w, int64_t tail, int64_t vs)
{
    return ell_bytes((int64_t)rows * w, vs) + tail * (vs + 1);
}

/* What the rule reads of a tile, whatever the thresholds: its row lengths, full rows and columns. */
typedef struct {
    int maxrow, full_rows, rows_ok, cols_ok;
    unsigned row_mask, col_mask; /* full rows; full columns (cols_ok) */
    int64_t sum2;                /* the sum of squared row lengths */
    int rows_of_len[TD + 1];     /* non-empty rows per length (when maxrow >= 2 and variant != 1) */
} tile_shape;

static void shape_of(const tile_view *v, const int32_t *col, int variant, tile_shape *sh)
{
    const int rows = v->rowlen, cols = v->collen;
    /* every column is empty or full exactly when every row has the same column set: none empty, all equal */
    int maxrow = 0, full_rows = 0, rows_ok = 1, cols_ok = popcount16(v->mask) == rows;
    unsigned row_mask = 0, cols0 = 0; /* full rows; the first row's column set */
    int64_t sum2 = 0;
    for (unsigned b = v->mask; b != 0; b &= b - 1) { /* the non-empty rows */
        const int i = lowest_bit(b), c = v->cnt[i];
        maxrow = c > maxrow ? c : maxrow;
        sum2 += (int64_t)c * c;
        if (c == cols) full_rows++, row_mask |= 1u << i;
        else rows_ok = 0;
        if (variant == 1 || !cols_ok) continue;
        unsigned set = 0;
        for (int k = 0; k < c; k++) set |= 1u << (col[v->start[i] + k] - v->tc * TD);
        if (i == 0) cols0 = set;
        else if (set != cols0) cols_ok = 0;
    }
    sh->maxrow = maxrow, sh->full_rows = full_rows, sh->rows_ok = rows_ok, sh->cols_ok = cols_ok;
    sh->row_mask = row_mask, sh->col_mask = cols_ok ? cols0 : 0;
    sh->sum2 = sum2;
    if (variant == 1 || maxrow < 2) return;
    memset(sh->rows_of_len, 0, sizeof sh->rows_of_len);
    for (unsigned b = v->mask; b != 0; b &= b - 1) sh->rows_of_len[v->cnt[lowest_bit(b)]]++;
}

/* The tile's format under cfg, from its shape (shape_of with cfg's variant). */
static void choose_shaped(const tile_view *v, const tile_shape *sh, const int32_t *col, const tile_cfg *cfg,
                          tile_choice *ch)
{
    const int rows = v->rowlen, cols = v->collen, nnz = v->nnz;
    const int64_t vs = cfg->vs, area = (int64_t)rows * cols;
    const int maxrow = sh->maxrow, full_rows = sh->full_rows, rows_ok = sh->rows_ok, cols_ok = sh->cols_ok;
    const unsigned row_mask = sh->row_mask, col_mask = sh->col_mask;
    const int64_t sum2 = sh->sum2;
    const int full_cols = popcount16(col_mask);
    memset(ch, 0, sizeof *ch);
    ch->row_mask = (uint16_t)row_mask;
    ch->col_mask = (uint16_t)col_mask;
    int fmt = SPMVPORT_TILE_CSR, width = maxrow;
    if (cfg->variant != 1) {
        /* in integers, so the choice is exact: cv <= p / 100 is 10^4 (rows sum2 - nnz^2) <= p^2 nnz^2 */
        const int64_t p = cfg->ell_cv_percent, nnz2 = (int64_t)nnz * nnz;
        if (cfg->dense_percent > 0 && 100 * (int64_t)nnz >= (int64_t)cfg->dense_percent * area)
            fmt = SPMVPORT_TILE_DENSE;
        else if (nnz <= cfg->coo_max) fmt = SPMVPORT_TILE_COO; /* -1: never (a tile has an entry) */
        else if (rows_ok) fmt = SPMVPORT_TILE_DENSE_ROW;
        else if (cols_ok) fmt = SPMVPORT_TILE_DENSE_COL;
        else if (p > 0 && 10000 * (rows * sum2 - nnz2) <= p * p * nnz2) fmt = SPMVPORT_TILE_ELL;
        /* HYB replaces the rule's choice when it is strictly the smallest of every applicable payload */
        int64_t best_other = (int64_t)nnz * vs + rows + (nnz + 1) / 2;                 /* CSR */
        int64_t b = (int64_t)nnz * (vs + 1);                                           /* COO */
        best_other = b < best_other ? b : best_other;
        b = ell_bytes((int64_t)rows * maxrow, vs);                                     /* ELL */
        best_other = b < best_other ? b : best_other;
        best_other = area * vs < best_other ? area * vs : best_other;                  /* Dense */
        if (rows_ok && (b = (int64_t)full_rows * cols * vs + 2) < best_other) best_other = b;
        if (cols_ok && (b = (int64_t)full_cols * rows * vs + 2) < best_other) best_other = b;
        int64_t best_hyb = best_other, tail = 0;
        int longer = 0; /* rows longer than w */
        for (int w = maxrow - 1; w >= 1; w--) {
            longer += sh->rows_of_len[w + 1];
            tail += longer;
            b = hyb_bytes(rows, w, tail, vs);
            /* a tail entry kept in the tile is a loop step of every lane (ELL and CSR take maxrow steps in
             * all): then HYB only when its steps w + tail are no more than maxrow, e.g. one long row, not a
             * stencil's 14 short ones. A deferred tail leaves the tile. */
            if (b < best_hyb && (cfg->deferred || w + tail <= maxrow))
                best_hyb = b, width = w, fmt = SPMVPORT_TILE_HYB;
        }
    }
    if (cfg->no_ell && fmt == SPMVPORT_TILE_ELL) fmt = SPMVPORT_TILE_CSR;
    ch->fmt = fmt;
    ch->rule_fmt = fmt;
    ch->stored = 1;
    switch (fmt) {
    case SPMVPORT_TILE_CSR: ch->slots = nnz; ch->idx_bytes = rows + (nnz + 1) / 2; break;
    case SPMVPORT_TILE_COO:
        if (cfg->deferred) ch->stored = 0, ch->deferred = nnz;
        else ch->slots = nnz, ch->idx_bytes = nnz;
        break;
    case SPMVPORT_TILE_ELL:
        ch->width = width;
        ch->slots = rows * width;
        ch->idx_bytes = 1 + (ch->slots + 1) / 2;
        break;
    case SPMVPORT_TILE_HYB: {
        int tail = 0;
        for (int i = 0; i < rows; i++) tail += v->cnt[i] > width ? v->cnt[i] - width : 0;
        ch->width = width;
        ch->slots = rows * width;
        ch->idx_bytes = 1 + (ch->slots + 1) / 2;
        if (cfg->deferred) ch->deferred = tail;
        else ch->slots += tail, ch->idx_bytes += tail;
        break;
    }
    case SPMVPORT_TILE_DENSE: ch->slots = (int32_t)area; break;
    case SPMVPORT_TILE_DENSE_ROW: ch->slots = full_rows * cols; ch->idx_bytes = 2; break;
    default: ch->slots = full_cols * rows; ch->idx_bytes = 2; break;
    }
    /* BAND (variant 0) replaces a stored, undeferred choice when all entries lie on at most 7 adjacent
     * diagonals and its payload (values only) is no larger: a lane's value and x addresses then follow from
     * the tile header alone (one round trip instead of index then x), e.g. a stencil's identity tiles (16
     * slots, no index bytes; ELL had 9 more), tridiagonal tiles (46 slots; ELL had 48 and 25 index bytes) and
     * the one-entry corner tiles of its +-1 neighbours (1 slot; COO had 1 index byte). A COO tile when at most
     * half of the band's slots are holes (padding values), so a stencil's tiles at the grid's faces (a
     * diagonal cut where a grid line ends) are band too, while graphs' scattered COO tiles stay COO (and
     * deferrable): a COO tile in a band pass sends the whole pass tile after tile. On stencil3d:27:100 (28608
     * COO tiles, 0.46 a tile row, when no hole was allowed; 0 now, 1.006 value slots a non-zero) that was the
     * difference between 0.86x and 1.31x cuSPARSE f64 (H200, session 16). */
    if (!cfg->band || !ch->stored || ch->deferred > 0 || nnz == 0) return;
    int lo = TD, hi = -TD;
    for (unsigned b = v->mask; b != 0; b &= b - 1)
        for (int i = lowest_bit(b), k = 0; k < v->cnt[i]; k++) {
            const int d = col[v->start[i] + k] - v->tc * TD - i;
            lo = d < lo ? d : lo;
            hi = d > hi ? d : hi;
        }
    if (hi - lo + 1 > SPMVPORT_TILE_BAND_MAXND) return;
    int64_t band = 0;
    for (int d = lo; d <= hi; d++) band += band_len(rows, cols, d);
    if (!cfg->band_all &&
        (fmt == SPMVPORT_TILE_COO ? band > 2 * (int64_t)nnz : band * vs > (int64_t)ch->slots * vs + ch->idx_bytes))
        return;
    const int rule_fmt = ch->fmt;
    memset(ch, 0, sizeof *ch);
    ch->fmt = SPMVPORT_TILE_BAND;
    ch->rule_fmt = rule_fmt;
    ch->stored = 1;
    ch->lo = lo, ch->nd = hi - lo + 1;
    ch->slots = (int32_t)band;
}

static void choose(const tile_view *v, const int32_t *col, const tile_cfg *cfg, tile_choice *ch)
{
    tile_shape sh;
    shape_of(v, col, cfg->variant, &sh);
    choose_shaped(v, &sh, col, cfg, ch);
}

/* ==============================================================================================================
 * Pass 1: choose and count, per tile row
 * ============================================================================================================ */

/* Pass 1's counts under one configuration: per tile row its stored tiles, value slots, index bytes and formats (a
 * bit per format), per matrix row its deferred entries (at def_ptr[r + 1]; cfg.deferred), and the histograms. */
typedef struct {
    tile_cfg cfg;
    int64_t *tiles, *slots, *bytes; /* tile_rows + 1 each, one allocation at tiles */
    uint8_t *formats;               /* tile_rows + 1 */
    int32_t *def_ptr;               /* m + 1 where the configuration may defer, else NULL */
    int64_t hist_tiles[SPMVPORT_TILE_NFORMATS], hist_nnz[SPMVPORT_TILE_NFORMATS];
    int64_t rule_coo; /* tiles chosen COO before any BAND replacement */
} pass_counts;

/* Counts of tile row tr under each of the n (1 or 2) configurations of pc, in one walk: a second configuration
 * costs a second choice per tile (from the same shape), not a second walk. Histograms: NFORMATS per configuration. */
static void count_tile_row(const spmv_matrix_t *A, int32_t tr, const pass_counts *pc, int n, int64_t *hist_tiles,
                           int64_t *hist_nnz, int64_t *rule_coo)
{
    tile_cursor cur;
    tile_view v;
    tile_choice ch;
    int64_t tiles[2] = {0}, slots[2] = {0}, bytes[2] = {0};
    unsigned formats[2] = {0};
    cursor_init(&cur, A, tr, &v);
    while (cursor_next(&cur, &v)) {
        tile_shape sh;
        shape_of(&v, A->col_idx, pc[0].cfg.variant, &sh);
        for (int k = 0; k < n; k++) {
            choose_shaped(&v, &sh, A->col_idx, &pc[k].cfg, &ch);
            hist_tiles[k * SPMVPORT_TILE_NFORMATS + ch.fmt]++;
            hist_nnz[k * SPMVPORT_TILE_NFORMATS + ch.fmt] += v.nnz;
            rule_coo[k] += ch.rule_fmt == SPMVPORT_TILE_COO;
            tiles[k] += ch.stored;
            if (ch.stored) formats[k] |= 1u << ch.fmt;
            slots[k] += ch.slots;
            bytes[k] += ch.idx_bytes;
            if (ch.deferred == 0 || pc[k].def_ptr == NULL) continue;
            int32_t *def_count = pc[k].def_ptr + 1 + (int64_t)tr * TD;
            for (unsigned b = v.mask; b != 0; b &= b - 1) {
                const int i = lowest_bit(b), keep = ch.fmt == SPMVPORT_TILE_HYB ? ch.width : 0;
                def_count[i] += v.cnt[i] > keep ? v.cnt[i] - keep : 0;
            }
        }
    }
    for (int k = 0; k < n; k++) {
        pc[k].tiles[tr] = tiles[k];
        pc[k].slots[tr] = slots[k];
        pc[k].bytes[tr] = bytes[k];
        pc[k].formats[tr] = (uint8_t)formats[k];
    }
}

/* ==============================================================================================================
 * Pass 2: write the payloads
 * ============================================================================================================ */

typedef struct {
    const spmv_matrix_t *A;
    int32_t *tile_col, *off;
    uint8_t *fmt, *idx;
    void *val;
    int32_t *vmap;          /* value map of the tile values */
    int32_t *def_col;
    void *def_val;
    int32_t *def_vmap;      /* value map of the deferred values */
} tile_out;

static void put_value(const spmv_matrix_t *A, void *dst, int64_t slot, int32_t pos)
{
    if (A->precision == SPMV_F32) ((float *)dst)[slot] = pos >= 0 ? ((const float *)A->values)[pos] : 0.0f;
    else ((double *)dst)[slot] = pos >= 0 ? ((const double *)A->values)[pos] : 0.0;
}

static void put_slot(const tile_out *o, int64_t slot, int32_t pos)
{
    o->vmap[slot] = pos;
    put_value(o->A, o->val, slot, pos);
}

static void put_nibble(uint8_t *base, int64_t k, int value)
{
    base[k >> 1] |= (uint8_t)((value & 15) << ((k & 1) * 4));
}

/* Move entry pos to the deferred CSR at *cursor. */
static void put_deferred(const tile_out *o, int32_t *cursor, int32_t pos)
{
    o->def_col[*cursor] = o->A->col_idx[pos];
    put_value(o->A, o->def_val, *cursor, pos);
    o->def_vmap[*cursor] = pos;
    (*cursor)++;
}

/* The ELL part of width w: slot k*rowlen + i holds row i's k-th entry or padding. */
static void write_ell(const tile_out *o, const tile_view *v, int w, int64_t s0, uint8_t *idx)
{
    const int32_t *col = o->A->col_idx;
    idx[0] = (uint8_t)w;
    for (int k = 0; k < w; k++)
        for (int i = 0; i < v->rowlen; i++) {
            int64_t s = (int64_t)k * v->rowlen + i;
            int32_t pos = k < v->cnt[i] ? v->start[i] + k : -1;
            put_slot(o, s0 + s, pos);
            if (pos >= 0) put_nibble(idx + 1, s, col[pos] - v->tc * TD);
        }
}

/* Row-major COO entries of row i from its k0-th on, as (row << 4 | col) bytes; returns the count written. */
static int write_coo_rows(const tile_out *o, const tile_view *v, int k0, int64_t s0, uint8_t *idx)
{
    const int32_t *col = o->A->col_idx;
    int q = 0;
    for (int i = 0; i < v->rowlen; i++)
        for (int k = k0; k < v->cnt[i]; k++, q++) {
            int32_t pos = v->start[i] + k;
            put_slot(o, s0 + q, pos);
            idx[q] = (uint8_t)(i << 4 | (col[pos] - v->tc * TD));
        }
    return q;
}

/* The deferred entries of a tile (a deferred COO tile's, a HYB tail), appended to their rows' deferred CSR. */
static void write_deferred(const tile_out *o, const tile_view *v, const tile_choice *ch, int32_t *def_cursor)
{
    const int keep = ch->fmt == SPMVPORT_TILE_HYB ? ch->width : 0;
    for (unsigned b = v->mask; b != 0; b &= b - 1)
        for (int i = lowest_bit(b), k = keep; k < v->cnt[i]; k++) put_deferred(o, &def_cursor[i], v->start[i] + k);
}

/* The payload of a stored tile. */
static void write_tile(const tile_out *o, const tile_view *v, const tile_choice *ch, int64_t s0, uint8_t *idx)
{
    const int32_t *col = o->A->col_idx;
    const int rows = v->rowlen, cols = v->collen;
    int32_t pos_of[TD][TD]; /* CSR position of (row, col) in the tile, -1 for none (dense payloads) */
    if (ch->fmt >= SPMVPORT_TILE_DENSE) { /* Dense, DenseRow, DenseCol, Band */
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) pos_of[i][j] = -1;
            for (int k = 0; k < v->cnt[i]; k++) pos_of[i][col[v->start[i] + k] - v->tc * TD] = v->start[i] + k;
        }
    }
    switch (ch->fmt) {
    case SPMVPORT_TILE_CSR: {
        int p = 0;
        for (int i = 0; i < rows; i++) {
            idx[i] = (uint8_t)p; /* <= 15 * 16 = 240: a byte holds every row start but the end */
            for (int k = 0; k < v->cnt[i]; k++, p++) {
                put_slot(o, s0 + p, v->start[i] + k);
                put_nibble(idx + rows, p, col[v->start[i] + k] - v->tc * TD);
            }
        }
        break;
    }
    case SPMVPORT_TILE_COO: write_coo_rows(o, v, 0, s0, idx); break;
    case SPMVPORT_TILE_ELL: write_ell(o, v, ch->width, s0, idx); break;
    case SPMVPORT_TILE_HYB: {
        const int w = ch->width;
        const int64_t ell_slots = (int64_t)rows * w;
        write_ell(o, v, w, s0, idx);
        if (ch->deferred == 0) write_coo_rows(o, v, w, s0 + ell_slots, idx + 1 + (ell_slots + 1) / 2);
        break;
    }
    case SPMVPORT_TILE_DENSE:
        for (int j = 0; j < cols; j++)
            for (int i = 0; i < rows; i++) put_slot(o, s0 + (int64_t)j * rows + i, pos_of[i][j]);
        break;
    case SPMVPORT_TILE_DENSE_ROW: {
        const int nd = popcount16(ch->row_mask);
        idx[0] = (uint8_t)(ch->row_mask & 255);
        idx[1] = (uint8_t)(ch->row_mask >> 8);
        for (int j = 0; j < cols; j++)
            for (int i = 0, d = 0; i < rows; i++)
                if (ch->row_mask >> i & 1) put_slot(o, s0 + (int64_t)j * nd + d++, pos_of[i][j]);
        break;
    }
    case SPMVPORT_TILE_BAND: { /* diagonal after diagonal, rows inside the tile only; holes are padding */
        int64_t s = s0;
        for (int d = ch->lo; d < ch->lo + ch->nd; d++)
            for (int i = band_first(d), e = i + band_len(rows, cols, d); i < e; i++) put_slot(o, s++, pos_of[i][i + d]);
        break;
    }
    default: /* DENSE_COL */
        idx[0] = (uint8_t)(ch->col_mask & 255);
        idx[1] = (uint8_t)(ch->col_mask >> 8);
        for (int j = 0, q = 0; j < cols; j++) {
            if (!(ch->col_mask >> j & 1)) continue;
            for (int i = 0; i < rows; i++) put_slot(o, s0 + (int64_t)q * rows + i, pos_of[i][j]);
            q++;
        }
        break;
    }
}

/* Write tile row tr: its tiles start at tile t0, value slot s0, index byte b0; deferred rows at def_ptr.
 * The stored tiles are grouped by format (formats in code order, columns in order within a format), so the
 * lane groups of a warp, which take consecutive tiles, mostly run the same format at once; `formats` is the
 * tile row's set of stored formats from pass 1. A row of several formats is walked twice: first to count each
 * format's tiles, slots and bytes, then to write each stored tile at its format's next offsets. The deferred
 * entries are appended in column order. */
static void write_tile_row(const tile_out *o, int32_t tr, const tile_cfg *cfg, int64_t t0, int64_t s0, int64_t b0,
                           const int32_t *def_ptr, unsigned formats)
{
    tile_cursor cur;
    tile_view v;
    tile_choice ch;
    int64_t t[SPMVPORT_TILE_NFORMATS] = {0}, s[SPMVPORT_TILE_NFORMATS] = {0}, b[SPMVPORT_TILE_NFORMATS] = {0};
    if (formats & (formats - 1)) {
        cursor_init(&cur, o->A, tr, &v);
        while (cursor_next(&cur, &v)) {
            choose(&v, o->A->col_idx, cfg, &ch);
            if (ch.stored) t[ch.fmt]++, s[ch.fmt] += ch.slots, b[ch.fmt] += ch.idx_bytes;
        }
    }
    for (int f = 0; f < SPMVPORT_TILE_NFORMATS; f++) { /* counts -> each format's first tile, slot and byte */
        const int64_t tf = t[f], sf = s[f], bf = b[f];
        t[f] = t0, s[f] = s0, b[f] = b0;
        t0 += tf, s0 += sf, b0 += bf;
    }
    int32_t def_cursor[TD] = {0};
    cursor_init(&cur, o->A, tr, &v);
    for (int i = 0; def_ptr != NULL && i < cur.rowlen; i++) def_cursor[i] = def_ptr[(int64_t)tr * TD + i];
    while (cursor_next(&cur, &v)) {
        choose(&v, o->A->col_idx, cfg, &ch);
        if (ch.deferred > 0) write_deferred(o, &v, &ch, def_cursor);
        if (!ch.stored) continue;
        const int f = ch.fmt;
        o->tile_col[t[f]] = v.tc;
        o->fmt[t[f]] = (uint8_t)(f == SPMVPORT_TILE_BAND ? SPMVPORT_TILE_BAND_BYTE(ch.lo, ch.nd) : f);
        o->off[2 * t[f]] = (int32_t)s[f];
        o->off[2 * t[f] + 1] = (int32_t)b[f];
        write_tile(o, &v, &ch, s[f], o->idx + b[f]);
        t[f]++, s[f] += ch.slots, b[f] += ch.idx_bytes;
    }
}

/* ==============================================================================================================
 * Checks, tasks, the deferred part's csr_lb split
 * ============================================================================================================ */

/* The matrix object is validated at creation; check again what the walk relies on (cheap next to the build). */
static spmv_status_t check_matrix(const spmv_matrix_t *A, char *msg, size_t msglen)
{
    if (A->m < 0 || A->n < 0 || A->nnz < 0 || A->row_ptr == NULL || (A->nnz > 0 && A->col_idx == NULL) ||
        (A->nnz > 0 && A->values == NULL) || A->row_ptr[0] != 0 || A->row_ptr[A->m] != A->nnz) {
        spmvport_msg(msg, msglen, "tile: inconsistent matrix (m=%d, n=%d, nnz=%d)", A->m, A->n, A->nnz);
        return SPMV_STATUS_INVALID_MATRIX;
    }
    int32_t bad = -1;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(max : bad)
#endif
    for (int32_t r = 0; r < A->m; r++) {
        int32_t b = A->row_ptr[r], e = A->row_ptr[r + 1];
        int ok = b <= e && b >= 0 && e <= A->nnz;
        for (int32_t k = b; ok && k < e; k++)
            ok = A->col_idx[k] >= 0 && A->col_idx[k] < A->n && (k == b || A->col_idx[k] > A->col_idx[k - 1]);
        if (!ok && r > bad) bad = r;
    }
    if (bad >= 0) {
        spmvport_msg(msg, msglen, "tile: row %d has a bad row pointer or unsorted / out-of-range columns", bad);
        return SPMV_STATUS_INVALID_MATRIX;
    }
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t check_options(const spmv_plan_options_t *opt, int warp_size, char *msg, size_t msglen)
{
    if (warp_size != 32 && warp_size != 64) {
        spmvport_msg(msg, msglen, "tile: warp size %d; the tile kernels take 32 or 64", warp_size);
        return SPMV_STATUS_NOT_SUPPORTED;
    }
    if (opt->tile_variant < 0 || opt->tile_variant > 2) {
        spmvport_msg(msg, msglen,
                     "tile: options.tile_variant = %d; expected 0 (ADPT + band), 1 (all CSR) or 2 (seven formats)",
                     opt->tile_variant);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_deferred_coo < -1 || opt->tile_deferred_coo > 1) {
        spmvport_msg(msg, msglen, "tile: options.tile_deferred_coo = %d; expected -1 (off), 0 (auto) or 1 (on)",
                     opt->tile_deferred_coo);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_deferred_threshold < 0) {
        spmvport_msg(msg, msglen, "tile: options.tile_deferred_threshold = %d; expected >= 0",
                     opt->tile_deferred_threshold);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_dense_percent < -1 || opt->tile_dense_percent > 100) {
        spmvport_msg(msg, msglen, "tile: options.tile_dense_percent = %d; expected 0 (%d), 1 .. 100 or -1 (never)",
                     opt->tile_dense_percent, TILE_DENSE_PERCENT);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_coo_max < -1 || opt->tile_coo_max > TILE_MAX_COO_MAX) {
        spmvport_msg(msg, msglen, "tile: options.tile_coo_max = %d; expected 0 (%d), 1 .. %d or -1 (never)",
                     opt->tile_coo_max, TILE_COO_MAX, TILE_MAX_COO_MAX);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_ell_cv_percent < -1 || opt->tile_ell_cv_percent > TILE_MAX_ELL_CV_PERCENT) {
        spmvport_msg(msg, msglen, "tile: options.tile_ell_cv_percent = %d; expected 0 (%d), 1 .. %d or -1 (never)",
                     opt->tile_ell_cv_percent, TILE_ELL_CV_PERCENT, TILE_MAX_ELL_CV_PERCENT);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_balance < 0 || opt->tile_balance > TILE_MAX_BALANCE) {
        spmvport_msg(msg, msglen, "tile: options.tile_balance = %d; expected 0 (8) .. %d", opt->tile_balance,
                     TILE_MAX_BALANCE);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_band_batch != 0 && opt->tile_band_batch != 2 && opt->tile_band_batch != 4) {
        spmvport_msg(msg, msglen, "tile: options.tile_band_batch = %d; expected 0 (4), 2 or 4", opt->tile_band_batch);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_band_tasks < 0 || opt->tile_band_tasks > SPMVPORT_TILE_MAX_BAND_TASKS) {
        spmvport_msg(msg, msglen, "tile: options.tile_band_tasks = %d; expected 0 (automatic) .. %d",
                     opt->tile_band_tasks, SPMVPORT_TILE_MAX_BAND_TASKS);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_csr_steps < -1 || opt->tile_csr_steps > 1) {
        spmvport_msg(msg, msglen, "tile: options.tile_csr_steps = %d; expected 0 (default: off), 1 (on) or -1 (off)",
                     opt->tile_csr_steps);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_csr_shuffle < -1 || opt->tile_csr_shuffle > 5) {
        spmvport_msg(msg, msglen, "tile: options.tile_csr_shuffle = %d; expected 0 (automatic), 1 (on), 2 (on, steps "
                     "of 3 loaded two at a time), 3 (on, one at a time), 4 (on, three at a time), 5 (on, steps of 4 "
                     "loaded four at a time) or -1 (off)",
                     opt->tile_csr_shuffle);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_group_tasks < -1 || opt->tile_group_tasks > 1) {
        spmvport_msg(msg, msglen, "tile: options.tile_group_tasks = %d; expected 0 (default: on for band plans), 1 (on) or -1 (off)",
                     opt->tile_group_tasks);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_deferred_inline < -1 || opt->tile_deferred_inline > 1) {
        spmvport_msg(msg, msglen,
                     "tile: options.tile_deferred_inline = %d; expected 0 (automatic), 1 (in the tile kernel) or -1 (csr_lb)",
                     opt->tile_deferred_inline);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_deferred_inline == 1 &&
        (opt->tile_inflight > 1 || opt->tile_band_tasks > 1 || opt->tile_group_tasks == 1)) {
        spmvport_msg(msg, msglen,
                     "tile: options.tile_deferred_inline = 1 needs the plain kernel; options.tile_inflight = %d, "
                     "tile_band_tasks = %d, tile_group_tasks = %d (expected <= 1, <= 1, not 1)",
                     opt->tile_inflight, opt->tile_band_tasks, opt->tile_group_tasks);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    const int bk = opt->tile_block_tasks; /* 2, 4 or 8 warps of a thread block */
    if (bk != 0 && bk != -1 &&
        ((bk != 2 && bk != 4 && bk != 8) || bk * warp_size > SPMVPORT_TILE_BLOCK_TASKS_MAX_THREADS)) {
        spmvport_msg(msg, msglen, "tile: options.tile_block_tasks = %d; expected 0 (automatic), -1 (never), 2, 4 or 8 "
                     "(at most %d at warp size %d: blocks of at most %d threads)",
                     opt->tile_block_tasks, SPMVPORT_TILE_BLOCK_TASKS_MAX_THREADS / warp_size, warp_size,
                     SPMVPORT_TILE_BLOCK_TASKS_MAX_THREADS);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->tile_inflight != 0 && opt->tile_inflight != 1 && opt->tile_inflight != 2 && opt->tile_inflight != 4) {
        spmvport_msg(msg, msglen, "tile: options.tile_inflight = %d; expected 0 (1), 1, 2 or 4", opt->tile_inflight);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    return SPMV_STATUS_SUCCESS;
}

static int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Tasks of a tile row of k tiles: ceil(k / balance), at least one (an empty tile row still writes y). */
static int64_t tasks_of(int64_t k, int64_t balance) { return k <= balance ? 1 : (k + balance - 1) / balance; }

/* The task records (and split records: tile rows of several tasks that combine through carries). */
static void fill_tasks(int32_t *task, int32_t *split, const int32_t *tile_ptr, int32_t tile_rows, int64_t balance)
{
    int64_t w = 0, s = 0, carry = 0;
    for (int32_t tr = 0; tr < tile_rows; tr++) {
        const int64_t first = tile_ptr[tr], k = tile_ptr[tr + 1] - first, nt = tasks_of(k, balance);
        if (nt > 1) {
            split[2 * s + SPMVPORT_TILE_SPLIT_ROW] = tr;
            split[2 * s + SPMVPORT_TILE_SPLIT_CARRY] = (int32_t)carry;
            s++;
        }
        for (int64_t j = 0; j < nt; j++, w++) { /* even shares: each <= ceil(k / nt) <= balance */
            task[3 * w + SPMVPORT_TILE_TASK_FIRST] = (int32_t)(first + k * j / nt);
            task[3 * w + SPMVPORT_TILE_TASK_ROW] = tr;
            task[3 * w + SPMVPORT_TILE_TASK_CARRY] = nt > 1 ? (int32_t)carry++ : -1;
        }
    }
    task[3 * w + SPMVPORT_TILE_TASK_FIRST] = tile_ptr[tile_rows];
    task[3 * w + SPMVPORT_TILE_TASK_ROW] = tile_rows;
    task[3 * w + SPMVPORT_TILE_TASK_CARRY] = -1;
    split[2 * s + SPMVPORT_TILE_SPLIT_ROW] = tile_rows;
    split[2 * s + SPMVPORT_TILE_SPLIT_CARRY] = (int32_t)carry;
}

/* Per-tile work of a block task beyond its value slots (header, row bounds, x, the format's branch), in slots. */
#define TILE_BLOCK_TASK_TILE_SLOTS 64

/* Block tasks: tile row tr's bk tasks (warps of one thread block, no carries) split its work evenly, counted as
 * value slots (a tile's, plus TILE_BLOCK_TASK_TILE_SLOTS; the inline deferred entries, which the row's first task
 * adds, one each). Not by tiles: within a tile row the tiles are grouped by format, so even tile counts gave the
 * last task all of a FEM row's Dense tiles (blocks of 6 and 7 unknowns: 14-26% of the tiles, 2-3x a CSR tile's
 * slots) while the other warps waited at the barrier. Returns the most tiles of a task (the stats' tbalance). */
static int64_t fill_block_tasks(int32_t *task, int32_t *split, const int32_t *tile_ptr, const int32_t *off,
                                const int32_t *def_ptr, int64_t m, int32_t tile_rows, int bk)
{
    int64_t w = 0, most = 0;
    for (int32_t tr = 0; tr < tile_rows; tr++) {
        const int64_t first = tile_ptr[tr], last = tile_ptr[tr + 1];
        const int64_t r0 = (int64_t)tr * TD, r1 = m - r0 < TD ? m : r0 + TD;
        const int64_t def = def_ptr ? def_ptr[r1] - def_ptr[r0] : 0;
        const int64_t total = def + (off[2 * last] - off[2 * first]) + TILE_BLOCK_TASK_TILE_SLOTS * (last - first);
        int64_t t = first, done = def, prev = first; /* task j starts where j / bk of the work is done */
        for (int j = 0; j < bk; j++, w++) {
            while (j > 0 && t < last && done * bk < j * total)
                done += off[2 * t + 2] - off[2 * t] + TILE_BLOCK_TASK_TILE_SLOTS, t++;
            task[3 * w + SPMVPORT_TILE_TASK_FIRST] = (int32_t)t;
            task[3 * w + SPMVPORT_TILE_TASK_ROW] = tr;
            task[3 * w + SPMVPORT_TILE_TASK_CARRY] = -1;
            if (j > 0 && t - prev > most) most = t - prev;
            prev = t;
        }
        if (last - prev > most) most = last - prev;
    }
    task[3 * w + SPMVPORT_TILE_TASK_FIRST] = tile_ptr[tile_rows];
    task[3 * w + SPMVPORT_TILE_TASK_ROW] = tile_rows;
    task[3 * w + SPMVPORT_TILE_TASK_CARRY] = -1;
    split[SPMVPORT_TILE_SPLIT_ROW] = tile_rows;
    split[SPMVPORT_TILE_SPLIT_CARRY] = 0;
    return most;
}

/* ==============================================================================================================
 * The builder
 * ============================================================================================================ */

typedef struct {
    int64_t tile_rows, tiles, slots, bytes, tasks, splits, carries, def_nnz, def_warps, def_chunk;
    int def_inline; /* the deferred part runs in the tile kernel (SPMVPORT_TILE_FLAG_DEFERRED_INLINE) */
    int64_t hist_tiles[SPMVPORT_TILE_NFORMATS], hist_nnz[SPMVPORT_TILE_NFORMATS];
    int64_t rule_coo; /* tiles chosen COO before BAND replacements: a plan without band tiles has as many COO */
} tile_sizes;

/* A GPU whose multiprocessors are known: the rules by waves of resident warps apply (not on the CPU backend, whose
 * "multiprocessors" are threads). */
static int known_gpu(const spmv_device_info_t *dev)
{
    return dev != NULL && dev->backend != SPMV_BACKEND_CPU && dev->multiprocessors > 0;
}

/* Warps the GPU holds at `threads` threads an SM (the tile kernels' launch bounds: SPMVPORT_TILE_THREADS_REGS48 for
 * the wave counts of the task rules). */
static int64_t resident_warps(const spmv_device_info_t *dev, int threads, int warp_size)
{
    return (int64_t)dev->multiprocessors * (threads / warp_size);
}

/* Tile rows fewer than 16 an SM on a GPU (a quarter of the warps it holds): the wide-plan balance leaves such plans at
 * the paper's 8, and the small-plan rules (block tasks for short tile rows, small mixed band plans) apply. */
static int few_tile_rows(const tile_sizes *z, const spmv_device_info_t *dev)
{
    return z->tile_rows < TILE_WIDE_ROWS_PER_SM * (int64_t)dev->multiprocessors;
}

/* At least half the stored tiles CSR: x by shuffles by default, and wide plans unsplit up to 32 tiles a task. */
static int mostly_csr(const tile_sizes *z)
{
    return z->tiles > 0 && 2 * z->hist_tiles[SPMVPORT_TILE_CSR] >= z->tiles;
}

/* FEM blocks: at least half the stored tiles CSR, or a third CSR and nine in ten CSR or Dense (FEM blocks of 8
 * unknowns at odd sizes, whose 16-row tile rows cut their 8 x 8 blocks: 42-45% CSR, the rest nearly all Dense).
 * They run x by shuffles (shuffles) and, in wide plans, up to 64 tiles a task (the balance, in the builder).
 * Before session 43 the second kind ran neither (no shuffles, split at 16 tiles with carries and the fix-up
 * launch). H200, session 43 (run K4, HEAD's host library against this one, two alternating processes, tile time
 * before / after, f32 / f64; x cuSPARSE after): fem3d:8:17 1.23 / 1.14 (1.39 / 1.12; f32 19-24 us by process, run
 * K7), :8:21 1.29 / 1.46 (1.31 / 1.42), :8:25 1.05 / 1.21, :8:29 1.17 / 1.13, :8:33 1.15 / 1.17, :8:37 1.14 / 1.18
 * (1.49 / 1.50), the small :8:9-15 1.05-1.24 (fem3d:8:9 0.79 / 0.66 -> 0.87 / 0.82x, 12 us). */
static int fem_blocks(const tile_sizes *z)
{
    const int64_t csr = z->hist_tiles[SPMVPORT_TILE_CSR];
    const int64_t dense = z->hist_tiles[SPMVPORT_TILE_DENSE] + z->hist_tiles[SPMVPORT_TILE_DENSE_ROW] +
                          z->hist_tiles[SPMVPORT_TILE_DENSE_COL];
    return mostly_csr(z) || (z->tiles > 0 && 3 * csr >= z->tiles && 10 * (csr + dense) >= 9 * z->tiles);
}

/* Wide plans of long CSR tile rows (at least 18 tiles a tile row: FEM blocks of 4-6 unknowns) whose whole tile rows
 * take one wave of the warps the GPU holds at 1280 threads an SM (the shuffled kernels' usual count) and at most
 * half another: each tile row is split into 3 tasks (TILE_TAIL_SPLIT_PARTS: tbalance a third of the longest). With
 * equal tasks the second wave is a whole task's time for a few warps an SM; with tasks a third as long the last
 * wave is a third as long, for the carries and a fix-up pass.
 * H200 (session 31, run UE, 3 tasks a tile row against whole ones, f64 / f32, time ratio): fem3d:6:26 (6591 tile
 * rows, 1.25 waves) 0.876 / 0.951, fem3d:5:28 (1.30) 0.934 / 0.942, fem3d:4:30 (1.28) 0.911 / 0.966, fem3d:4:28
 * (1.04) 0.951 / 0.993, fem3d:5:26 (1.04) 0.991 / 1.026; past 1.5 waves it cost: fem3d:6:28 (2.0) 1.065 / 1.067,
 * fem3d:4:36 (2.2) 0.971 / 1.019; and on FEM blocks of 3 unknowns (9-16 tiles a tile row, tasks of 3-5 tiles)
 * 3 tasks were up to 24% slower (fem3d:3:32-40). */
static int short_last_wave(const tile_sizes *z, const spmv_device_info_t *dev, int warp_size)
{
    const int64_t resident = resident_warps(dev, SPMVPORT_TILE_THREADS_REGS48, warp_size);
    return mostly_csr(z) && z->tiles >= TILE_TAIL_SPLIT_MIN_TILES * z->tile_rows && z->tile_rows > resident &&
           2 * z->tile_rows <= 3 * resident;
}

/* The balance that splits the longest tile row into 3 tasks (and no tile row into more). */
static int64_t third_of_longest(const int32_t *tile_ptr, int64_t tile_rows)
{
    int64_t longest = 1;
    for (int64_t tr = 0; tr < tile_rows; tr++)
        if (tile_ptr[tr + 1] - tile_ptr[tr] > longest) longest = tile_ptr[tr + 1] - tile_ptr[tr];
    return (longest + TILE_TAIL_SPLIT_PARTS - 1) / TILE_TAIL_SPLIT_PARTS;
}

/* Block tasks automatically (option tile_block_tasks 0), on a GPU, for the plans short_last_wave is about (x by
 * shuffles, mostly CSR tiles, at least 18 tiles a tile row: FEM blocks of 4-7 unknowns; blocks of 8 below), by the
 * waves their whole tile rows take of the warps the GPU holds at 1280 threads an SM: up to 2/3 of a wave 4 tasks a tile
 * row (2 at W = 64: the warps of a block), from 1 to 1.5 waves 2 (in place of 3 tasks with carries and a fix-up
 * launch). Under a wave a tile row's warp was one long serial chain with much of the GPU idle, and a split with carries
 * cost the fix-up launch (run WB); block tasks add their sums in shared memory. H200, session 36 (x cuSPARSE f64 / f32,
 * block tasks off -> on; runs C2, E): 4 tasks: fem3d:5:19 (0.41 waves) 0.93-1.00 / 0.89-0.92 -> 1.11-1.12 / 1.03, :5:20
 * 0.96-0.98 / 1.05-1.06 -> 1.14-1.15 / 1.13-1.15, :4:20 0.96 / 0.90-0.92 -> 1.01 / 1.06, :6:20 1.00 / 1.21 -> 1.12 /
 * 1.27, :7:20 f32 0.89 -> 1.00, but :5:22 f32 1.19 -> 1.13; between 2/3 and 1 wave they were 2-8% slower (fem3d:5:25
 * 0.92 waves, :6:23, :7:21, :7:22), so those plans keep whole tile rows. 2 tasks: :5:26 (1.04) 0.95 -> 1.08 in f32,
 * :5:29 (1.44) 0.97 / 0.89 -> 1.06 / 0.98, :7:24 1.07 / 1.00 -> 1.13 / 1.10, :4:28 1.02 / 1.01 -> 1.10 / 1.09, but
 * :6:26 f64 1.10 -> 1.05 and :7:25 f64 1.11 -> 1.09. Past 1.5 waves 2 tasks only where (nearly) every stored tile is
 * CSR (FEM blocks of 4 and 5 unknowns; runs G, H): fem3d:4:32 0.99 / 0.94 -> 1.09 / 1.05-1.06, :4:36 0.98-0.99 / 1.01
 * -> 1.10-1.11 / 1.05, :5:32 f32 0.93-0.94 -> 0.99, :4:38-44 1-5% faster, :5:36-42 within 2%; blocks of 6 and 7 (Dense
 * tiles: a tenth to a third of them) were up to 6% slower there (fem3d:6:29, :6:30, :7:27-30). */
static int auto_block_tasks(const tile_sizes *z, const spmv_device_info_t *dev, int warp_size, int regular)
{
    if (!known_gpu(dev) || !fem_blocks(z)) return 1;
    const int64_t resident = resident_warps(dev, SPMVPORT_TILE_THREADS_REGS48, warp_size);
    const int warps = SPMVPORT_TILE_BLOCK / warp_size;
    /* FEM blocks that are not mostly CSR (blocks of 8 unknowns at odd sizes: 42-45% CSR tiles, the rest Dense) take
     * 4 tasks only where their tile rows are under 16 an SM (the paper's balance of 8 split them with carries and a
     * fix-up launch) and 4 a tile row fit one wave. H200 (session 44, runs E1-E2, split with carries -> 4 block tasks,
     * f64 / f32): fem3d:8:9 (365 tile rows) 1.05 / 1.27x faster (0.93 / 0.78 -> 0.98 / 0.99x cuSPARSE), :8:11 1.11 /
     * 1.23 (1.12 / 1.14x), :8:13 1.11 / 1.17 (1.32 / 1.23x); fem3d:8:15 (1688 tile rows, 6752 warps for 5280) was
     * 0.85 / 1.17x with them (run E1), so keeps the split. */
    if (!mostly_csr(z)) return few_tile_rows(z, dev) && warps >= 4 && 4 * z->tile_rows <= resident ? 4 : 1;
    /* Tile rows of fewer than 18 tiles (FEM blocks of 2-3 unknowns, small structural matrices, and FEM blocks of
     * 4-7 whose COO fragments are deferred) take block tasks where the rows are regular and the tile rows fewer than
     * 16 an SM, where the wide-plan rule does not keep them whole and the paper's balance of 8 split them with
     * carries and a fix-up launch: 4 a tile row where 4 fit one wave, else 2. H200, session 37: fem3d:3:20 (1500 tile
     * rows, 0.28 waves) 4 tasks 1.02-1.05x cuSPARSE, 2 tasks 1.07-1.11x; fem3d:3:18 (0.21) 4 tasks 1.11-1.22x, 2
     * 1.01-1.05x; fem3d:3:23 and :3:24 (2282 and 2592 tile rows: whole, steps of 9 in f32) 2 tasks were 3-5% slower
     * in f32, so plans of 16 tile rows an SM or more keep their whole rows. With the deferral above (its numbers
     * there); bcsstk14, bcsstk21, fidapex6, mhd4800b and s3rmt3m3 (no COO tiles to defer) 1.03-1.54x faster. */
    if (z->tiles < TILE_TAIL_SPLIT_MIN_TILES * z->tile_rows) {
        if (!regular || !few_tile_rows(z, dev)) return 1;
        if (warps >= 4 && 4 * z->tile_rows <= resident) return 4;
        return 2 * z->tile_rows <= resident ? 2 : 1;
    }
    if (3 * z->tile_rows <= 2 * resident) return warps >= 4 ? 4 : 2;
    if (z->tile_rows > resident && 2 * z->tile_rows <= 3 * resident) return 2;
    return z->tile_rows > resident && 20 * z->hist_tiles[SPMVPORT_TILE_CSR] >= 19 * z->tiles ? 2 : 1;
}

/* 8 block tasks instead of 4 (W = 32: blocks of 256 threads) where 8 a tile row still fit one wave and tile rows
 * hold at least TILE_EIGHT_TASKS_MIN_TILES tiles: twice the warps of a grid that leaves most of the GPU idle, each
 * with half the serial chain. H200 (session 54, tile time 4 -> 8 tasks, f64 / f32). Run A2 (three processes each,
 * best): fem3d:8:9 1.21 / 1.33x faster (0.93 / 0.99 -> 1.13 / 1.31x cuSPARSE), :3:11 1.29 / 1.25 (0.77 -> 0.98x
 * f64), :6:9 1.19 / 1.16, :5:9 1.13 / 1.10, :7:9 1.10 / 1.08, :4:10 1.13 / 1.02, :8:10 1.06 / 1.06, :5:12 1.05 /
 * 1.01, :2:16 1.09 / 1.00, :6:12 0.99 / 0.99; past one wave 8 lost up to 23% (fem3d:3:16, :3:18, :2:20, :5:19,
 * :6:16, :8:13, :8:14; fem3d:7:16 gained 1.10-1.20). Run A5 (40 plans of under 16 tiles a tile row, five alternating
 * processes each, median of the per-round ratios): from 10 tiles a tile row 24 plans 1.01-1.23x in f64 and 23 of
 * them 1.01-1.23x in f32 (stencil3d:27:18 f32 0.97, its rounds 0.91-1.30); under 10 the 7- and 27-point stencils
 * (7-9 tiles) 0.89-1.03 and bcsstk21, bcsstk26 (5-7) 0.91-0.97, while the other structural matrices gained. */
#define TILE_EIGHT_TASKS_MIN_TILES 10
static int eight_block_tasks(const tile_sizes *z, const spmv_device_info_t *dev, int warp_size, int bk)
{
    const int64_t resident = resident_warps(dev, SPMVPORT_TILE_THREADS_REGS48, warp_size);
    return bk == 4 && 8 * warp_size <= SPMVPORT_TILE_BLOCK_TASKS_MAX_THREADS && 8 * z->tile_rows <= resident &&
                   z->tiles >= TILE_EIGHT_TASKS_MIN_TILES * z->tile_rows
               ? 8
               : bk;
}

/* A deferral under the threshold (GPU, regular rows) is kept when it moves at most a quarter of the entries and the
 * plan stays mostly CSR: then it is FEM-like (the COO tiles are the fragments of blocks cut by the tile grid, 3-18%
 * of the entries of the shared structural matrices, 2-16% of fem3d's), and its tile rows, now shorter, take block
 * tasks (auto_block_tasks). Graphs and 2-D meshes with regular rows would move 31-96% (their tiles mostly COO), and
 * fem3d:2:9 kept too few CSR tiles for x by shuffles (2-14% slower deferred). Before (session 36) these plans kept
 * their COO tiles in the tile kernel, split their tile rows at 8 tiles with carries and a fix-up launch, or (43%
 * CSR tiles, fem3d:3:16) ran without shuffles. H200, session 37 (runs 2-3, tile time before / after, three
 * alternating processes each, x cuSPARSE f64 / f32 after): fem3d:3:16 1.63-1.80x / 1.52-1.58x faster (1.11 / 1.14),
 * :3:18 1.27-1.31 / 1.24-1.26 (1.11 / 1.16), :3:20 1.37-1.41 / 1.28-1.32 (1.09 / 1.07-1.12), :3:22 1.19-1.20 /
 * 1.17-1.22 (1.03-1.05 / 1.06-1.10), :3:9-21 1.09-1.44, fem3d:4:8-10, :5:10-14, :6:9-12, :7:8-10 1.10-1.67, fem3d:2
 * f64 1.22-1.97 (f32: band plans but :2:12, unchanged); the 11 shared structural matrices it changes 0.97-1.87x
 * (bcsstk13-33, fidapex6, fidapm08, mhd4800b, rbsa480, s3rmt3m3; at the 5-13 us launch floor, 1.20-1.87x but
 * mhd4800b f64, 0.97-1.17x). */
static int small_deferral_pays(const tile_sizes *z, int64_t nnz)
{
    return TILE_SMALL_DEFERRED_PART * z->def_nnz <= nnz && mostly_csr(z);
}

/* The automatic deferral's condition: COO tiles many per tile row (see the builder), fewer for regular rows, or
 * for regular rows without band tiles a tenth of the tiles (TILE_DEFERRED_COO_SHARE_REGULAR). */
static int many_coo_tiles(int64_t coo_tiles, const tile_sizes *z, int regular)
{
    if (regular && z->hist_tiles[SPMVPORT_TILE_BAND] == 0 && TILE_DEFERRED_COO_SHARE_REGULAR * coo_tiles >= z->tiles)
        return 1;
    return coo_tiles >=
           (regular ? TILE_DEFERRED_COO_PER_TILE_ROW_REGULAR : TILE_DEFERRED_COO_PER_TILE_ROW) * z->tile_rows;
}

/* The automatic deferral taken: regular rows' plans take COO tiles up to TILE_COO_MAX_DEFERRED_REGULAR entries
 * unless the option sets the bound (the count pass that follows applies it). */
static void defer_automatically(tile_cfg *cfg, int regular, const spmv_plan_options_t *opt)
{
    cfg->deferred = 1;
    if (regular && opt->tile_coo_max == 0) cfg->coo_max = TILE_COO_MAX_DEFERRED_REGULAR;
}

/* Entries a step of the shuffled CSR loop (tile_csr_shuffled): 3 where that takes fewer lane slots (steps x
 * entries: instructions) and at most 5% more steps (each about a memory round trip) over the plan's warp steps,
 * else 4. A warp step is the G = W / 16 tiles its groups take together, and it lasts as long as the longest of
 * their CSR rows: rows of 9 entries (FEM blocks of 3 unknowns) are 3 steps of 3 or 3 of 4, rows of 8 are 3 of 3
 * or 2 of 4. fem3d:3:28-56: 25% fewer slots, 0-4% more steps; the 14 shared FEM matrices with x by shuffles: 4-34%
 * fewer slots (3 of them more) but 18-100% more steps. On the H200 (session 23, run ML) 3 entries took fem3d:3:48
 * from 0.0873 to 0.0802 ms f64 (0.0698 -> 0.0636 f32) and fem3d:3:56 from 0.1666 to 0.1476 (0.1376 -> 0.1210),
 * and made the 14 shared matrices 6% slower in geometric mean.
 * Steps of 16 (sixteen) count a Dense tile as rows of its columns: the shuffled loop takes Dense tiles with steps of
 * 16 (tile_csr_shuffled's DN), one step a row, and with steps of 4 sends their warp steps down tile_apply; FEM
 * blocks of 6-7 unknowns (15-35% of their tiles Dense, CSR rows of 7 and 14 entries) whose CSR tiles alone took
 * 11-19% more slots at 16 take 16 where, Dense tiles counted, that is at most 10%. H200, session 39 (run F5, f32, three
 * processes, tile time before / after; x cuSPARSE after): fem3d:6:14 1.04-1.06, :6:21 1.03 (out of sample), :6:25
 * 1.04 (0.98 -> 1.01), :7:19 1.07, :7:26 1.05, :7:29 1.03 (out of sample), :7:30 1.09 (0.96 -> 1.04), :7:31 1.05
 * (out of sample), but :7:28 0.99 (0.98 -> 0.97). Run F4 (steps of 16 forced, with DN) had fem3d:6:32 (34% more
 * slots with its Dense tiles) 0.92 and :7:14 (13%) 0.93, which keep 4, and run F7 a bound of 20% where an eighth of
 * the warp steps hold a Dense tile: blocks of 6 1.00-1.07, fem3d:7:21, :7:27, :7:32 1.02-1.09, but fem3d:7:12-20
 * 0.91-0.97. Those four are the run's only plans with block tasks and a third of their steps Dense (FEM blocks of
 * 6: a sixth), so (session 43) plans with block tasks and a quarter or more keep 10% and the others take 20%: run
 * K1 (f32, HEAD's host library against this one, three alternating processes, tile time before / after; x cuSPARSE
 * after) fem3d:6:9-39 1.01-1.05 (:6:11 1.00; :6:27 1.01, :6:31 1.04, :6:9 1.01), :7:21 1.07 (0.99), :7:27 1.05
 * (1.01), :7:32 1.03, but :7:37 0.975 (1.10 -> 1.07; out of sample).
 * Plans with fewer Dense warp steps (FEM blocks of 5: none, or one Dense tile) take 16 up to 15% more slots: f32,
 * three processes (runs F8-F9, tile time before / after; x cuSPARSE after): fem3d:5:19 1.06-1.07 (1.07-1.09),
 * :5:22 1.05-1.07, :5:29 1.05 (0.99 -> 1.03), :5:35 1.06-1.07 (0.97 -> 1.03-1.04), :5:45 1.06 (0.96 -> 1.01-1.02),
 * :5:9-15 1.02-1.09 (out of sample); fem3d:5:32 (16% more) was 0.97-0.98 with 16 and keeps 4. */
static int shuffle_step(const spmvport_format_data *fd, int64_t tasks, int block_tasks, int *nine, int *sixteen)
{
    const int32_t *task = fd->arrays[SPMVPORT_TILE_A_TASK].data, *off = fd->arrays[SPMVPORT_TILE_A_OFF].data;
    const uint8_t *fmt = fd->arrays[SPMVPORT_TILE_A_FMT].data, *idx = fd->arrays[SPMVPORT_TILE_A_IDX].data;
    const int32_t *col = fd->arrays[SPMVPORT_TILE_A_COL].data;
    const int G = fd->warp_size / TD;
    int64_t slots3 = 0, slots4 = 0, slots9 = 0, steps3 = 0, steps4 = 0;
    int64_t slots4d = 0, slots16d = 0; /* the slots of steps of 4 and 16 with Dense tiles as rows of their columns */
    int64_t warp_steps = 0, dense_steps = 0; /* warp steps, and those with a Dense tile */
    for (int64_t w = 0; w < tasks; w++) {
        const int64_t first = task[SPMVPORT_TILE_TASK_FIELDS * w + SPMVPORT_TILE_TASK_FIRST];
        const int64_t last = task[SPMVPORT_TILE_TASK_FIELDS * (w + 1) + SPMVPORT_TILE_TASK_FIRST];
        const int64_t r0 = (int64_t)task[SPMVPORT_TILE_TASK_FIELDS * w + SPMVPORT_TILE_TASK_ROW] * TD;
        const int rowlen = fd->m - r0 < TD ? (int)(fd->m - r0) : TD;
        for (int64_t bw = first; bw < last; bw += G) {
            int longest = 0, dense = 0;
            for (int64_t t = bw; t < bw + G && t < last; t++) {
                if (fmt[t] == SPMVPORT_TILE_DENSE) {
                    const int64_t collen = fd->n - (int64_t)col[t] * TD;
                    if (collen > dense) dense = collen < TD ? (int)collen : TD;
                }
                if (fmt[t] != SPMVPORT_TILE_CSR) continue;
                const int nv = off[2 * t + 2] - off[2 * t];
                const uint8_t *start = idx + off[2 * t + 1];
                for (int r = 0; r < rowlen; r++) {
                    const int len = (r + 1 < rowlen ? start[r + 1] : nv) - start[r];
                    if (len > longest) longest = len;
                }
            }
            slots3 += (longest + 2) / 3 * 3;
            slots4 += (longest + 3) / 4 * 4;
            slots9 += (longest + 8) / 9 * 9;
            steps3 += (longest + 2) / 3;
            steps4 += (longest + 3) / 4;
            const int with_dense = dense > longest ? dense : longest;
            warp_steps++;
            if (dense > 0) dense_steps++;
            slots4d += (with_dense + 3) / 4 * 4;
            slots16d += (with_dense + 15) / 16 * 16;
        }
    }
    *nine = 20 * slots9 <= 21 * slots3; /* steps of 9: at most 5% more lane slots than steps of 3 */
    /* steps of 16: at most 15% more lane slots than steps of 4 where fewer than an eighth of the warp steps hold a
     * Dense tile; where more do, 20% if the plan has no block tasks or under a quarter of the steps are Dense,
     * else 10% (above) */
    const int percent = 8 * dense_steps < warp_steps                       ? 15
                        : block_tasks == 1 || 4 * dense_steps < warp_steps ? 20
                                                                           : 10;
    *sixteen = 100 * slots16d <= (100 + percent) * slots4d;
    return slots3 < slots4 && 20 * steps3 <= 21 * steps4 ? 3 : 4;
}

/* The automatic step grouping's precondition: f32, on a GPU backend. */
static int f32_on_gpu(const spmv_matrix_t *A, const spmv_device_info_t *dev)
{
    return A->precision == SPMV_F32 && dev != NULL && dev->backend != SPMV_BACKEND_CPU;
}

/* Steps of 3 loaded two or three at a time: the flags for a plan with steps of 3 (nine: the lane slots allow 9).
 * CSR_STEP9 (9 entries a lane a step, one wait for all): option 4 forces it; automatically in f32 on a GPU where
 * it takes at most 5% more lane slots (FEM blocks of 3 unknowns: one step a tile instead of three). On the H200
 * (session 30, runs TB-TC) it took f32 fem3d:3:40 from 0.0477 to 0.0423 ms, :48 0.0568 -> 0.0526, :56 0.1053 ->
 * 0.0923 (against steps of 6), :24 0.0145 -> 0.0135, :28 0.0182 -> 0.0166, :32 0.0235 -> 0.0181, :36 0.0358 ->
 * 0.0319 (against steps of 3); in f64 (forced; 24 bytes spilled) it was 4% faster on fem3d:3:40, 3% slower on :48,
 * and within 2% elsewhere, so f64 keeps steps of 3. REGS48 with it in f32 (see the flag) when the tasks take as many
 * waves of resident warps at 1280 threads an SM as at 1536, and at most 2.
 * CSR_STEP6 (6 entries a step): option 2 forces it, 3 never groups steps; automatically in f32 on a GPU when the
 * plan's arrays are larger than its L2 cache and steps of 9 do not apply. On the H200 (session 28, run RG, two
 * alternating processes) it took f32 fem3d:3:40 from 0.0499 to 0.0481 ms, :48 0.0591 -> 0.0587, :56 0.1112 ->
 * 0.1087, but fem3d:3:28 (its 26 MB plan in L2) 0.0207 -> 0.0211, and in f64 (twice the registers for the values)
 * was 1-2% slower on three of the four. */
static int64_t grouped_steps(const spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                             int option, int nine, int64_t tasks)
{
    const int f32_gpu = f32_on_gpu(A, dev);
    if (option == 4 || (option <= 1 && f32_gpu && nine)) {
        int64_t fl = SPMVPORT_TILE_FLAG_CSR_STEP9;
        if (A->precision == SPMV_F32 && dev != NULL && dev->multiprocessors > 0) {
            const int64_t w48 = resident_warps(dev, SPMVPORT_TILE_THREADS_REGS48, fd->warp_size);
            const int64_t w40 = resident_warps(dev, SPMVPORT_TILE_THREADS_REGS40, fd->warp_size);
            const int64_t waves48 = (tasks + w48 - 1) / w48, waves40 = (tasks + w40 - 1) / w40;
            if (waves48 <= 2 && waves48 == waves40) fl |= SPMVPORT_TILE_FLAG_REGS48;
        }
        return fl;
    }
    if (option == 2) return SPMVPORT_TILE_FLAG_CSR_STEP6;
    if (option == 3 || !f32_gpu || dev->l2_bytes == 0) return 0;
    size_t bytes = 0;
    for (int i = 0; i < fd->narrays; i++)
        if (!fd->arrays[i].host_only) bytes += fd->arrays[i].bytes;
    return bytes > dev->l2_bytes ? SPMVPORT_TILE_FLAG_CSR_STEP6 : 0;
}

/* Steps of 4 loaded four at a time (CSR_STEP16): option 5 forces it; automatically in f32 on a GPU where it takes at
 * most 10-20% more lane slots than steps of 4 (sixteen: see shuffle_step). */
static int64_t grouped_steps4(const spmv_matrix_t *A, const spmv_device_info_t *dev, int option, int sixteen)
{
    return option == 5 || (option <= 1 && f32_on_gpu(A, dev) && sixteen) ? SPMVPORT_TILE_FLAG_CSR_STEP16 : 0;
}

static void write_stats(spmvport_format_data *fd, const tile_cfg *cfg, const tile_sizes *z, int64_t balance)
{
    size_t index_bytes = 0; /* every array but values and per-call scratch */
    for (int a = 0; a < fd->narrays; a++)
        if (!fd->arrays[a].is_values && a != SPMVPORT_TILE_A_CARRY && a != SPMVPORT_TILE_A_DEF_SPLIT + SPMVPORT_LB_CARRY_VAL &&
            a != SPMVPORT_TILE_A_DEF_SPLIT + SPMVPORT_LB_CARRY_ROW)
            index_bytes += fd->arrays[a].bytes;
    const double nnz = fd->nnz > 0 ? (double)fd->nnz : 1.0;
    /* block_tasks=K only where the plan has them, and the payload and padding ratios after the histogram: the
     * histogram must fit plan info's 512 bytes (fem3d:3:48's pairs take 523, its band pairs were cut) */
    const int bk = spmvport_tile_block_tasks(fd->params[SPMVPORT_TILE_P_FLAGS]);
    char *s = fd->stats;
    size_t cap = sizeof fd->stats, len;
    spmvport_msg(s, cap, "variant=%s;select=%d/%d/%d;deferred=%d;deferred_inline=%d;tbalance=%lld;inflight=%lld;band_batch=%lld;band_tasks=%lld;csr_steps=%lld;group_tasks=%lld;csr_shuffle=%d;regs48=%d;%stiles=%lld;tile_rows=%lld;tasks=%lld;"
                 "split_rows=%lld;deferred_nnz=%lld;index_bytes_per_nnz=%.3f",
                 cfg->variant == 1 ? "csr" : cfg->variant == 2 ? "adpt7" : "adpt", cfg->dense_percent, cfg->coo_max,
                 cfg->ell_cv_percent, cfg->deferred, z->def_inline,
                 (long long)balance,
                 (long long)fd->params[SPMVPORT_TILE_P_INFLIGHT], (long long)fd->params[SPMVPORT_TILE_P_BAND_BATCH],
                 (long long)fd->params[SPMVPORT_TILE_P_BAND_TASKS],
                 (long long)(fd->params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_STEPS),
                 (long long)((fd->params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_GROUP_TASKS) != 0),
                 spmvport_tile_shuffle_step(fd->params[SPMVPORT_TILE_P_FLAGS]),
                 (fd->params[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_REGS48) != 0,
                 bk == 8 ? "block_tasks=8;" : bk == 4 ? "block_tasks=4;" : bk == 2 ? "block_tasks=2;" : "",
                 (long long)z->tiles,
                 (long long)z->tile_rows, (long long)z->tasks, (long long)z->splits, (long long)z->def_nnz,
                 (double)index_bytes / nnz);
    for (int f = 0; f < SPMVPORT_TILE_NFORMATS; f++) {
        len = strlen(s);
        spmvport_msg(s + len, cap - len, ";%s_tiles=%lld;%s_nnz=%lld", tile_format_names[f],
                     (long long)z->hist_tiles[f], tile_format_names[f], (long long)z->hist_nnz[f]);
    }
    len = strlen(s);
    spmvport_msg(s + len, cap - len, ";payload_bytes_per_nnz=%.3f;value_slots_per_nnz=%.3f", (double)z->bytes / nnz,
                 (double)(z->slots + z->def_nnz) / nnz);
}

/* The warp tasks, split tile rows and carry slots of tile_ptr's rows at `balance` tiles a task (fill_tasks' count). */
static spmv_status_t count_tasks(tile_sizes *z, const int32_t *tile_ptr, int64_t balance, int bk, char *msg,
                                 size_t msglen)
{
    z->tasks = z->splits = z->carries = 0;
    for (int64_t tr = 0; tr < z->tile_rows; tr++) {
        /* block tasks: exactly bk a tile row (some empty when it has fewer tiles), no carries */
        const int64_t nt = bk > 1 ? bk : tasks_of(tile_ptr[tr + 1] - tile_ptr[tr], balance);
        z->tasks += nt;
        if (nt > 1 && bk == 1) z->splits++, z->carries += nt;
    }
    if (z->tasks + 1 > INT32_MAX / SPMVPORT_TILE_TASK_FIELDS || z->carries > INT32_MAX / TD) {
        spmvport_msg(msg, msglen, "tile: %lld warp tasks (%lld carry slots) exceed the 32-bit indices",
                     (long long)z->tasks, (long long)z->carries);
        return SPMV_STATUS_OVERFLOW;
    }
    return SPMV_STATUS_SUCCESS;
}

/* Band tiles are kept where there are some, they are at least half the stored tiles and they hold at least half
 * the non-zeros: the band kernels have more registers (64 instead of 40 on sm_90, f64), so fewer resident warps
 * for the other tiles' chains, and a band items pass with another format in it runs tile after tile. fem3d:3:48
 * has 64% band tiles (its 3-entry corner tiles, with holes) but 13% of its non-zeros in them: as a band plan it
 * ran at 0.83x / 0.65x cuSPARSE (H200, session 16) where it is 1.0x without. Otherwise pass 1 is redone without
 * them (band tiles take no deferred entries, so a deferral stands). */
static int band_plan(const tile_sizes *z)
{
    int64_t all_nnz = 0;
    for (int f = 0; f < SPMVPORT_TILE_NFORMATS; f++) all_nnz += z->hist_nnz[f];
    return z->hist_tiles[SPMVPORT_TILE_BAND] > 0 && 2 * z->hist_tiles[SPMVPORT_TILE_BAND] >= z->tiles &&
           2 * z->hist_nnz[SPMVPORT_TILE_BAND] >= all_nnz;
}

/* Fewer band tiles than TILE_SMALL_BAND_PERCENT of the tiles: a band plan with other formats in its passes. */
static int mixed_band_plan(const tile_sizes *z)
{
    return 100 * z->hist_tiles[SPMVPORT_TILE_BAND] < TILE_SMALL_BAND_PERCENT * z->tiles;
}

/* A band plan on a GPU whose tile rows are fewer than 16 an SM and whose tiles are under TILE_SMALL_BAND_PERCENT band
 * tiles: the builder tries it without band tiles and keeps that where it is mostly CSR (x by shuffles, and block
 * tasks at these sizes), else the band plan. A band pass with another format in it runs tile after tile, and under
 * 16 tile rows an SM a task per group leaves most of the GPU idle. H200, session 37 (runs D6, D7: time before /
 * after, three alternating processes each, f64 / f32; x cuSPARSE after): stencil3d:27:21-30 1.62-2.12 / 1.87-2.40
 * (0.94-1.77 / 1.03-1.74; they were 0.48-0.89), fem3d:2:14 and :2:15 in f32 3.73-4.60 (1.11-1.74; 0.28-0.46 before),
 * lns_3937 1.51-1.68 / 1.48-1.69, t2dal_bci 1.74-1.89 / 1.71-1.89; :27:21, 23, 25, 27 and 29 out of sample. Where the
 * plan without band tiles was not mostly CSR it was mostly slower (runs D5, D6: stencil3d:7:17-30 0.75-0.99 but :7:28
 * f32 1.08-1.10, their other tiles COO and ELL; stencil3d:27:20 f64 0.99-1.01), so those keep the band plan, as
 * brainpc2 does though it was 1.57-2.54x faster without (no rule told it apart); all-band plans lost without band
 * tiles (run D5: stencil2d:5:150-180 0.61-0.84, dw8192 0.75-0.82) and are not tried, but for those of at least
 * TILE_SMALL_BAND_ROW_TILES tiles a tile row (session 38, run E1): each such row is one group's serial chain of 16
 * or more band tiles, and FEM blocks of 2 in f32 at sizes not a multiple of 8 (fem3d:2:17-23, :25; 19-20 tiles a
 * tile row, all band) ran 1.27-1.62x faster without band tiles (:18, :20, :22 out of sample); fem3d:2:16 and :2:24
 * are tried too and keep their band plans (without, COO and ELL tiles: not mostly CSR). */
static int small_band_plan_to_try(const tile_sizes *z, const spmv_device_info_t *dev)
{
    return few_tile_rows(z, dev) && (mixed_band_plan(z) || z->tiles >= TILE_SMALL_BAND_ROW_TILES * z->tile_rows);
}

/* ceil(1.5 x the average tiles of a tile row): the balance of band plans with a task per group (16 to 32) and of
 * wide plans without band tiles (8 to 16, FEM blocks 8 to 64) */
static int64_t avg15_tiles(const tile_sizes *z)
{
    return z->tile_rows > 0 ? (3 * z->tiles + 2 * z->tile_rows - 1) / (2 * z->tile_rows) : 0;
}

/* A small band plan that is not mostly CSR without its band tiles (small_band_plan_to_try) takes every tile CSR
 * instead (x by shuffles and block tasks, as the mostly-CSR plans there) where its band plan runs badly: it would
 * split a quarter or more of its tile rows (each split row's tasks add carries, and the fix-up launch follows), or
 * a tenth or more of its band slots are holes. tile_ptr holds the band plan's tile rows; its balance is the one the
 * builder gives it below (a warp a task on mixed plans: the paper's 8; a task per group on all-band ones: 1.5x the
 * average, 16 to 32). H200, session 53 (run Z2, the HEAD host library against this one, three alternating processes,
 * best times): the 7-point stencils of 17-31 points but 20, 24, 28 (their tile rows split) 1.48-2.05x faster in
 * both precisions (stencil3d:7:29 11.2 -> 6.9 us f64), stencil3d:27:20 1.80 / 2.09x, fem3d:2:16 (all band, 15%
 * holes) 1.47 / 1.50x (9.95 -> 6.75 us f64), fem3d:2:24 1.05 / 1.18x; the plans it leaves within the processes'
 * spread (0.91-1.06x: stencil3d:7:20, :7:24, :7:28, :27:24, :27:32, brainpc2). Every tile CSR where neither holds
 * was slower in run Z1: stencil3d:27:32 (all band, no holes) 7.0 -> 10.1 us, stencil3d:7:20 (no row split) 6.6 ->
 * 7.9 f64, brainpc2 (1 split) 16.0 -> 17.9. */
static int band_plan_runs_badly(const tile_sizes *z, const int32_t *tile_ptr, const spmv_plan_options_t *opt)
{
    const int64_t balance = opt->tile_balance > 0 ? opt->tile_balance
                            : mixed_band_plan(z)
                                ? TILE_DEFAULT_BALANCE
                                : clamp_i64(avg15_tiles(z), TILE_BAND_BALANCE_MIN, TILE_BAND_BALANCE_MAX);
    tile_sizes split = *z; /* count_tasks' split rows at that balance, on a copy */
    char msg[8];
    if (count_tasks(&split, tile_ptr, balance, 1, msg, sizeof msg) != SPMV_STATUS_SUCCESS) return 0;
    int64_t nnz = 0;
    for (int f = 0; f < SPMVPORT_TILE_NFORMATS; f++) nnz += z->hist_nnz[f];
    return 4 * split.splits >= z->tile_rows || 10 * z->slots >= 11 * nnz;
}

/* The sizes of a plan not counted yet (a pass 1 begun again). */
static void reset_sizes(tile_sizes *z)
{
    const int64_t tile_rows = z->tile_rows;
    memset(z, 0, sizeof *z);
    z->tile_rows = tile_rows;
}

/* The same configuration, every field. */
static int same_cfg(const tile_cfg *a, const tile_cfg *b)
{
    return a->variant == b->variant && a->deferred == b->deferred && a->vs == b->vs && a->band == b->band &&
           a->no_ell == b->no_ell && a->band_all == b->band_all && a->dense_percent == b->dense_percent &&
           a->coo_max == b->coo_max && a->ell_cv_percent == b->ell_cv_percent;
}

/* Pass 1 under cfg into pc[0], then prefix sums and sizes (pc[0]'s slots and bytes become exclusive offsets, its
 * tile counts tile_ptr). With spec (and pc[1]'s buffers), the same walk also counts under spec into pc[1] and sets
 * *have_spec: a later pass under that configuration takes those counts without a walk. The builder's second pass is
 * mostly known before its first (the band tiles dropped, the deferral taken), and a second choice per tile costs less
 * than a walk: kron:20:16 f64 (2 threads) took 500 + 370 ms for the two passes, 700-760 ms for one with both. */
static spmv_status_t count_all(const spmv_matrix_t *A, const tile_cfg *cfg, const tile_cfg *spec, pass_counts *pc,
                               int *have_spec, tile_sizes *z, int32_t *tile_ptr, char *msg, size_t msglen)
{
    const int32_t tile_rows = (int32_t)z->tile_rows;
    if (*have_spec && same_cfg(cfg, &pc[1].cfg)) {
        const pass_counts t = pc[0];
        pc[0] = pc[1], pc[1] = t;
        *have_spec = 0; /* pc[1] now holds the last pass's offsets */
    } else {
        enum { NF = SPMVPORT_TILE_NFORMATS };
        const int n = spec != NULL && spec->variant == cfg->variant && pc[1].tiles != NULL &&
                              (!spec->deferred || pc[1].def_ptr != NULL)
                          ? 2
                          : 1;
        int64_t ht[2 * NF] = {0}, hn[2 * NF] = {0}, rule_coo[2] = {0};
        pc[0].cfg = *cfg;
        if (n == 2) pc[1].cfg = *spec, *have_spec = 1;
        /* the rows' deferred counts are added up from 0 on every pass: a pass begun again (goto pass1) after a
         * deferral once added them on top of the last pass's prefix sums (stencil3d:27:31 on a GPU: 4.8G value slots,
         * OVERFLOW) */
        for (int k = 0; k < n; k++)
            if (pc[k].cfg.deferred) memset(pc[k].def_ptr, 0, ((size_t)A->m + 1) * sizeof *pc[k].def_ptr);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : ht[:2 * NF], hn[:2 * NF], rule_coo[:2])
#endif
        for (int32_t tr = 0; tr < tile_rows; tr++) count_tile_row(A, tr, pc, n, ht, hn, rule_coo);
        for (int k = 0; k < n; k++) {
            memcpy(pc[k].hist_tiles, ht + k * NF, sizeof pc[k].hist_tiles);
            memcpy(pc[k].hist_nnz, hn + k * NF, sizeof pc[k].hist_nnz);
            pc[k].rule_coo = rule_coo[k];
        }
    }
    memcpy(z->hist_tiles, pc[0].hist_tiles, sizeof z->hist_tiles);
    memcpy(z->hist_nnz, pc[0].hist_nnz, sizeof z->hist_nnz);
    z->rule_coo = pc[0].rule_coo;
    int64_t *row_slots = pc[0].slots, *row_bytes = pc[0].bytes;
    int64_t t = 0, s = 0, b = 0;
    for (int32_t tr = 0; tr < tile_rows; tr++) {
        int64_t k = pc[0].tiles[tr], sl = row_slots[tr], by = row_bytes[tr];
        tile_ptr[tr] = (int32_t)t; /* checked below: t only grows */
        row_slots[tr] = s;
        row_bytes[tr] = b;
        t += k, s += sl, b += by;
        if (t > INT32_MAX || s > INT32_MAX || b > INT32_MAX) {
            spmvport_msg(msg, msglen, "tile: %s of the tiled part exceed the 32-bit offsets at tile row %d",
                         t > INT32_MAX ? "tiles" : s > INT32_MAX ? "value slots" : "index bytes", tr);
            return SPMV_STATUS_OVERFLOW;
        }
    }
    tile_ptr[tile_rows] = (int32_t)t;
    z->tiles = t, z->slots = s, z->bytes = b;
    if (cfg->deferred) {
        int32_t *def_ptr = pc[0].def_ptr;
        int64_t d = 0;
        for (int32_t r = 0; r < A->m; r++) d += def_ptr[r + 1], def_ptr[r + 1] = (int32_t)d; /* d <= nnz */
        z->def_nnz = d;
    }
    if (s + z->def_nnz > INT32_MAX) { /* the value map and the plan's value slots stay within int32 */
        spmvport_msg(msg, msglen, "tile: %lld value slots exceed the 32-bit range", (long long)(s + z->def_nnz));
        return SPMV_STATUS_OVERFLOW;
    }
    return SPMV_STATUS_SUCCESS;
}

/* Whether a sample of 64 tile rows, spread over the matrix, makes a band plan under cfg (band_plan on their counts):
 * then pass 1 most likely keeps its band tiles, and counting the configuration without them in the same walk would
 * be wasted (stencils: 5% slower builds). Only the build's speed depends on this guess, never the plan. */
static int band_plan_likely(const spmv_matrix_t *A, const tile_cfg *cfg, int64_t tile_rows)
{
    tile_sizes z;
    memset(&z, 0, sizeof z);
    for (int64_t tr = 0; tr < tile_rows; tr += tile_rows / 64 + 1) {
        tile_cursor cur;
        tile_view v;
        tile_choice ch;
        cursor_init(&cur, A, (int32_t)tr, &v);
        while (cursor_next(&cur, &v)) {
            choose(&v, A->col_idx, cfg, &ch);
            z.hist_tiles[ch.fmt]++;
            z.hist_nnz[ch.fmt] += v.nnz;
            z.tiles += ch.stored;
        }
    }
    return band_plan(&z);
}

static void free_counts(pass_counts *pc, int k)
{
    free(pc[k].tiles), free(pc[k].formats), free(pc[k].def_ptr);
    memset(&pc[k], 0, sizeof pc[k]);
}

/* Pass 1's buffers: pc[0] always (def_ptr where the plan may defer), pc[1] (for a speculative configuration) where
 * spec_defer is not -1 (its def_ptr where it is 1). Returns 0 when pc[0]'s fail; pc[1]'s failing leaves it empty:
 * no speculation, not an error. */
static int alloc_counts(pass_counts *pc, int64_t tile_rows, int64_t m, int may_defer, int spec_defer)
{
    memset(pc, 0, 2 * sizeof *pc);
    for (int k = 0; k < (spec_defer < 0 ? 1 : 2); k++) {
        const int defer = k == 0 ? may_defer : spec_defer;
        pc[k].tiles = spmvport_malloc_array(3 * ((size_t)tile_rows + 1), sizeof(int64_t));
        pc[k].formats = spmvport_malloc_array((size_t)tile_rows + 1, 1);
        if (defer) pc[k].def_ptr = spmvport_calloc_array((size_t)m + 1, sizeof(int32_t));
        if (pc[k].tiles == NULL || pc[k].formats == NULL || (defer && pc[k].def_ptr == NULL)) {
            free_counts(pc, k);
            return k == 1;
        }
        pc[k].slots = pc[k].tiles + tile_rows + 1;
        pc[k].bytes = pc[k].tiles + 2 * (tile_rows + 1);
    }
    return 1;
}

/* Add an array of count elements of size bytes each (zeroed when zero is set); NULL data frees nothing. */
static spmv_status_t add(spmvport_format_data *fd, const char *name, int64_t count, size_t size, int zero,
                         int is_values)
{
    void *p = zero ? spmvport_calloc_array((size_t)count, size) : spmvport_malloc_array((size_t)count, size);
    return spmvport_format_add_array(fd, name, p, (size_t)count * size, is_values);
}

/* Whether the plan runs x by shuffles (SPMVPORT_TILE_FLAG_CSR_SHUFFLE): only the kernel with one tile in flight, a
 * task per warp and no CSR steps has it; by default on FEM blocks (fem_blocks: at least half the stored tiles CSR,
 * or a third CSR and nearly all the rest Dense). On the H100
 * (session 23, runs MA, MD) it took fem3d:3:48 from 0.1198 to 0.0974 ms f64 (0.0797 -> 0.0715 f32) and fem3d:3:56
 * from 0.2129 to 0.1735 (0.1510 -> 0.1387), and the 14 shared FEM matrices of 57-85% CSR tiles 1.19x in geometric
 * mean (1.01-1.53x); it made circuit:5000000 (13% CSR tiles, the rest HYB: the warp takes them format by format) 7%
 * slower, and fem3d:3:20 (65%, its COO tiles not deferred) f32 5% slower, f64 the same. */
static int shuffles(const spmv_plan_options_t *opt, const tile_cfg *cfg, const tile_sizes *z)
{
    const int inflight = opt->tile_inflight > 0 ? opt->tile_inflight : TILE_DEFAULT_INFLIGHT;
    return (opt->tile_csr_shuffle >= 1 || (opt->tile_csr_shuffle == 0 && fem_blocks(z))) &&
           !cfg->band && inflight == 1 && opt->tile_csr_steps != 1 && opt->tile_group_tasks != 1;
}

spmv_status_t spmvport_build_tile(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                  const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
    /* the tile kernels use no shared memory; the device's size sets only the deferred part's chunk, its
     * multiprocessors the tbalance of wide plans */
    spmv_status_t st = check_options(opt, fd->warp_size, msg, msglen);
    if (st == SPMV_STATUS_SUCCESS) st = check_matrix(A, msg, msglen);
    if (st != SPMV_STATUS_SUCCESS) return st;

    int64_t balance = opt->tile_balance > 0 ? opt->tile_balance : TILE_DEFAULT_BALANCE;
    const int64_t threshold = opt->tile_deferred_threshold > 0 ? opt->tile_deferred_threshold
                                                               : TILE_DEFAULT_DEFERRED_THRESHOLD;
    tile_cfg cfg = {opt->tile_variant, 0, (int64_t)spmvport_value_size(A->precision),
                    opt->tile_variant == 0 && opt->tile_inflight == 0 && opt->tile_deferred_inline != 1, 0, 0,
                    opt->tile_dense_percent ? opt->tile_dense_percent : TILE_DENSE_PERCENT,
                    opt->tile_coo_max ? opt->tile_coo_max : TILE_COO_MAX,
                    opt->tile_ell_cv_percent ? opt->tile_ell_cv_percent : TILE_ELL_CV_PERCENT};
    const int on_gpu = known_gpu(dev);
    const int regular = spmvport_rows_regular(A);
    /* decided after pass 1; on a GPU, regular rows also under the threshold unless one is asked for (small_deferral) */
    const int auto_deferred0 = opt->tile_deferred_coo == 0 &&
                               (A->nnz > threshold || (on_gpu && regular && opt->tile_deferred_threshold == 0));
    int auto_deferred = auto_deferred0;
    tile_cfg cfg_pass1 = cfg; /* what pass 1 starts from, again if a choice below is undone */
    int band_dropped = 0;     /* a small band plan (small_band_plan_to_try): 1 tried without band tiles, 2 back,
                               * 3 every tile CSR */
    int band_bad = 0;         /* that band plan runs badly (band_plan_runs_badly): every tile CSR instead of back */
    cfg.deferred = opt->tile_deferred_coo == 1;
    tile_sizes z;
    memset(&z, 0, sizeof z);
    z.tile_rows = ((int64_t)A->m + TD - 1) / TD;

    /* scratch: pass 1's counts (pc[0]; pc[1] for the speculative configuration below, where pass 1 may take band
     * tiles and so may be done again without them) and the tile row pointer */
    pass_counts pc[2];
    tile_cfg spec; /* the configuration pass 1 also counts (count_all) */
    int have_spec = 0;
    const int speculate = cfg.band && !cfg.deferred && !band_plan_likely(A, &cfg, z.tile_rows);
    int32_t *tile_ptr = spmvport_malloc_array((size_t)z.tile_rows + 1, sizeof(int32_t));
    if (!alloc_counts(pc, z.tile_rows, A->m, cfg.deferred || auto_deferred, speculate ? auto_deferred : -1) ||
        tile_ptr == NULL) {
        free_counts(pc, 0), free_counts(pc, 1), free(tile_ptr);
        spmvport_msg(msg, msglen, "tile: out of host memory for %lld tile rows", (long long)z.tile_rows);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    /* Pass 1, then again whenever a choice below changes it: band tiles kept or not (band_plan), the deferral, and
     * after a deferral the band choice once more; from here again when a small plan's deferral is undone or its band
     * tiles are tried without (each at most once). */
pass1:
    /* counted in the same walk: the pass that follows where the band tiles are dropped (band_plan), with the
     * deferral where the plan may take it (that pass's choice) */
    spec = cfg;
    spec.band = 0;
    if (auto_deferred) defer_automatically(&spec, regular, opt);
    st = count_all(A, &cfg, speculate && cfg.band && !cfg.deferred ? &spec : NULL, pc, &have_spec, &z, tile_ptr, msg,
                   msglen);
    for (;;) { /* at most twice: the deferral is set once */
        if (st == SPMV_STATUS_SUCCESS && cfg.band && !band_plan(&z)) {
            cfg.band = 0;
            /* the automatic deferral below, decided now from this pass's COO choices before BAND replacements
             * (the same tiles a pass without band tiles chooses COO): one pass fewer on plans that defer (FEM
             * blocks: three passes over the matrix, was four) */
            if (auto_deferred && many_coo_tiles(z.rule_coo, &z, regular)) defer_automatically(&cfg, regular, opt);
            st = count_all(A, &cfg, NULL, pc, &have_spec, &z, tile_ptr, msg, msglen);
        }
        /* automatic: defer when the COO tiles are many per tile row (or the tiled part alone overflows); the
         * selection does not depend on deferral, so pass 1 is redone with the COO tiles moved out. Decided after
         * the band choice: a band candidate (a corner tile with holes) that ends up COO counts as COO here
         * (fem3d:3:48's 15.6 corner tiles a tile row: deferred, as before band tiles with holes). */
        const int many_coo = many_coo_tiles(z.hist_tiles[SPMVPORT_TILE_COO], &z, regular);
        if (!auto_deferred || cfg.deferred ||
            !(st == SPMV_STATUS_OVERFLOW || (st == SPMV_STATUS_SUCCESS && many_coo)))
            break;
        defer_automatically(&cfg, regular, opt);
        st = count_all(A, &cfg, NULL, pc, &have_spec, &z, tile_ptr, msg, msglen);
    }
    if (st == SPMV_STATUS_SUCCESS && auto_deferred && A->nnz <= threshold && cfg.deferred &&
        !small_deferral_pays(&z, A->nnz)) { /* undone: pass 1 again, as without the deferral */
        auto_deferred = 0, cfg = cfg_pass1;
        reset_sizes(&z);
        goto pass1;
    }
    /* A band plan whose other tiles all lie within 7 diagonals makes them band tiles too, however many of their
     * slots are holes, when that adds at most a tenth to the value slots: a CSR or COO tile in a band pass runs the
     * pass tile after tile. On the 27-point stencil whose grid lines are not a multiple of 16 apart, a few hundred
     * tiles at the grid's faces, where a diagonal is cut, held 29 or 5 entries in a band of 42 slots and stayed CSR
     * or COO (stencil3d:27:70: 482 of 0.4M tiles, in 157 of 21438 tile rows); all band, 0.2% more slots, it ran
     * 1.33x / 1.46x faster (f64 / f32; 0.84 -> 1.23x cuSPARSE in f32), :90 1.18 / 1.26x, :110 1.10 / 1.15x, dw8192
     * (8% more slots) 1.69 / 1.53x (H200, session 32, run VH). Where other tiles stay, the pass is undone: t2dal_bci
     * (239 CSR tiles left) ran 2-9% slower with band tiles taken where they fit. Scattered one-entry COO tiles (16
     * slots for one entry) usually fail the tenth and stay COO. */
    if (st == SPMV_STATUS_SUCCESS && cfg.band && z.hist_tiles[SPMVPORT_TILE_BAND] < z.tiles) {
        const int64_t slots_before = z.slots;
        for (int all = 1; all >= 0; all--) {
            cfg.band_all = all;
            st = count_all(A, &cfg, NULL, pc, &have_spec, &z, tile_ptr, msg, msglen);
            if (st != SPMV_STATUS_SUCCESS ||
                (z.hist_tiles[SPMVPORT_TILE_BAND] == z.tiles && z.slots * 10 <= slots_before * 11))
                break;
        }
    }
    /* A band plan of few tile rows with other tiles in it or long tile rows is built again without band tiles, and
     * kept so where that plan is mostly CSR (small_band_plan_to_try); else with every tile CSR where the band plan
     * runs badly (band_plan_runs_badly), else as the band plan; not when the band kernels' task shape is asked for */
    if (st == SPMV_STATUS_SUCCESS && band_dropped == 0 && cfg.band && opt->tile_group_tasks == 0 && on_gpu &&
        small_band_plan_to_try(&z, dev)) {
        band_bad = opt->tile_variant == 0 && band_plan_runs_badly(&z, tile_ptr, opt);
        band_dropped = 1, cfg_pass1.band = 0, cfg = cfg_pass1;
        reset_sizes(&z);
        goto pass1;
    }
    if (st == SPMV_STATUS_SUCCESS && band_dropped == 1 && !mostly_csr(&z)) {
        if (band_bad) /* every tile CSR: no COO tile, so nothing to defer */
            band_dropped = 3, cfg_pass1.variant = 1, cfg = cfg_pass1, auto_deferred = 0;
        else
            band_dropped = 2, cfg_pass1.band = 1, cfg = cfg_pass1, auto_deferred = auto_deferred0;
        reset_sizes(&z);
        goto pass1;
    }
    /* a task per group of 16 lanes (tile_group_tasks): by default on band plans, but a warp a task on small mixed ones
     * that kept their band tiles (tried without them, not mostly CSR then): their band passes run tile after tile
     * where another format sits in them, and a group's serial chain of tiles is what sets the time at these sizes.
     * H200, session 38 (run E3, three alternating processes, tile time before / after): brainpc2 1.90-2.50x,
     * stencil3d:27:20 1.36-1.57x, the 7-point stencils of 17-31 points 0.91-1.29x (1.2-1.3x at multiples of 4
     * points; :29 and :31 0.91-1.00x), geometric mean 1.11x; all-band plans lost with a warp a task (run E2:
     * fem3d:2:8, :2:12, :2:24 0.72-0.82x), so they keep groups */
    const int group_tasks = opt->tile_group_tasks != 0 ? opt->tile_group_tasks
                            : cfg.band && !(band_dropped == 2 && mixed_band_plan(&z)) ? 1 : -1;
    /* A plan with x by shuffles stores its ELL tiles as CSR (ADPT only): the shuffled loop takes a warp step only
     * where every group's tile is CSR, and an ELL tile beside a CSR one sends the whole warp down the formats' own
     * paths, an entry's x a load after its nibble's. FEM blocks of 4 unknowns (fem3d:4:36: 36% of the tiles, 85% of
     * the entries ELL) ran at 0.85x / 0.66x cuSPARSE, 0.99x / 1.02x with every tile CSR (H200, session 30, run TJ);
     * blocks of 3 have few ELL tiles (fem3d:3:46: 531 of 299885). */
    if (st == SPMV_STATUS_SUCCESS && opt->tile_variant == 0 && z.hist_tiles[SPMVPORT_TILE_ELL] > 0 &&
        shuffles(opt, &cfg, &z)) {
        cfg.no_ell = 1;
        st = count_all(A, &cfg, NULL, pc, &have_spec, &z, tile_ptr, msg, msglen);
    }
    /* band plans that run the band items kernel (a task per group: their default) take 1.5x their average tiles a
     * tile row, 16 to 32: that kernel adds a pass of 16 tiles with all their items in flight, so the paper's bound
     * of a warp's serial tile chain (8 tiles, one at a time) is not what a split would buy there, while each split
     * costs carries, a fix-up pass and the task's record and header round trips again; but a tile row far above the
     * average (a long row) is still split. H100 (session 15, runs FL, FM): stencil3d:7:200 (9 tiles a tile row)
     * 0.923x / 0.750x cuSPARSE at 8, 1.211x / 1.043x at 16; stencil3d:7:100 0.897x / 0.862x -> 1.238x / 1.081x;
     * stencil2d:9:2000 0.902x / 0.752x -> 1.356x / 1.182x. Session 16: stencil3d:27:100 (21 tiles) 1.007x / 1.014x
     * at 16, 1.306x / 1.271x at 32 (H200); brainpc2 (4.6 tiles a tile row, a few long rows) 53.6 us at 32, 30.2 at
     * 12 (H100). */
    const int64_t avg15 = avg15_tiles(&z);
    if (st == SPMV_STATUS_SUCCESS && opt->tile_balance == 0 && opt->tile_inflight <= 1) {
        if (cfg.band && group_tasks != -1 && opt->tile_band_tasks <= 1)
            balance = clamp_i64(avg15, TILE_BAND_BALANCE_MIN, TILE_BAND_BALANCE_MAX);
        /* Plans without band tiles with tile rows for at least a quarter of the warps the GPU holds (16 an SM of
         * its 64) take the same 1.5x, 8 to 16: a split costs carries and the fix-up pass, which cost more than the
         * warps it adds once the unsplit tasks fill a quarter of the slots. H100 (session 17, runs GO, GP):
         * fem3d:3:48 (8.75 tiles a tile row, 20736 tile rows, 19044 of them split at 8) 1.018 / 1.009x cuSPARSE ->
         * 1.047 / 1.033x at 14, fem3d:3:56 0.781 / 0.793x -> 0.907 / 0.814x at 16, fem3d:3:40 (12000 tile rows)
         * 0.978 / 0.833x -> 1.007 / 0.859x at 16; NotreDame_www 3% slower f64 at 10. The bound was a whole wave (64
         * an SM) until session 29, when (H200, run SC, tile_balance 16 against 8, f64 / f32) fem3d:3:28 (4116 tile
         * rows, 31 an SM) took 27.1 / 20.5 us -> 24.3 / 17.8, t60k (3751) 12.1 / 11.6 -> 9.4 / 9.2, bfly (3072)
         * 13.1 / 12.5 -> 11.7 / 11.0, fem3d:3:24 (2592) 0-4% faster, while below 16 an SM splits still pay:
         * fem3d:3:20 (1500) 2-13% and fem3d:3:16 (768) 25-29% slower at 16, Dubcova1 (1009) 22-27%, cti (1053)
         * 10-14%. Plans of mostly CSR tiles (the kernel with x by shuffles) go up to 32: FEM grids whose size is
         * not a multiple of 4 have 16-17 tiles a tile row, and at 16 nearly half their tile rows were split into
         * a task of 16 tiles and one of 1 (fem3d:3:46: 15708 of 18251). H200 (session 30, run TG, 16 -> 1.5x the
         * average, 24-25, f64 / f32 x cuSPARSE): fem3d:3:26 0.93 / 0.88 -> 1.28 / 1.20, :30 0.93 / 1.05 -> 1.20 /
         * 1.31, :34 0.99 / 0.91 -> 1.03 / 1.09, :38 1.00 / 0.95 -> 1.16 / 1.14, :42 1.03 / 0.98 -> 1.13 / 1.06,
         * :46 1.05 / 1.02 -> 1.12 / 1.13, :50 1.07 / 1.04 -> 1.15 / 1.15; but on graphs of COO tiles, where a
         * tile's chain is longer and the split tasks are the parallelism, 32 made cage11 1.34x / 1.14x and nh2010
         * 1.06x / 1.10x slower, so they keep 16. Since session 43 FEM blocks (fem_blocks) go up to 64: at 32 the
         * FEM blocks of 7 whose tile rows reach past 32 tiles (fem3d:7:28, :7:36, :7:44: an eighth of them) were
         * split with carries and the fix-up launch; whole (H200, runs K3-K4, tile time before / after, f32 / f64)
         * 1.035-1.055 / 1.008-1.036 (fem3d:7:28 f32 0.96-0.97 -> 1.01-1.02x cuSPARSE). On FEM blocks of 8 with x
         * by shuffles 64 against 16 (run K4): f32 1.00-1.21x faster, f64 0.92-1.13x (fem3d:8:17, :8:25, :8:29
         * 2-8% slower; :8:21 1.13x faster). */
        else if (!cfg.band && on_gpu && !few_tile_rows(&z, dev)) {
            balance = clamp_i64(avg15, TILE_DEFAULT_BALANCE,
                                fem_blocks(&z) ? TILE_WIDE_FEM_BALANCE_MAX : TILE_WIDE_BALANCE_MAX);
            if (short_last_wave(&z, dev, fd->warp_size)) balance = third_of_longest(tile_ptr, z.tile_rows);
        }
    }
    /* block tasks: only in the shuffled kernels with steps of 4 or 16 (below); automatically where long tile rows
     * take at most 2/3 of a wave or 1 to 1.5 waves, or regular short ones fewer than 16 an SM (auto_block_tasks;
     * 8, not 4, where 8 fit one wave: eight_block_tasks), unless a balance is asked for */
    int bk = 1;
    if (st == SPMV_STATUS_SUCCESS && shuffles(opt, &cfg, &z)) {
        if (opt->tile_block_tasks > 0) bk = opt->tile_block_tasks;
        else if (opt->tile_block_tasks == 0 && opt->tile_balance == 0)
            bk = eight_block_tasks(&z, dev, fd->warp_size, auto_block_tasks(&z, dev, fd->warp_size, regular));
    }
    if (st == SPMV_STATUS_SUCCESS) st = count_tasks(&z, tile_ptr, balance, bk, msg, msglen);
    /* the last pass's counts: pc[0]; its row pointer of the deferred part goes to the plan */
    free_counts(pc, 1);
    int32_t *def_ptr = cfg.deferred ? pc[0].def_ptr : NULL;
    if (!cfg.deferred) free(pc[0].def_ptr);
    pc[0].def_ptr = NULL;
    if (st != SPMV_STATUS_SUCCESS) {
        free_counts(pc, 0), free(tile_ptr), free(def_ptr);
        return st;
    }
    if (z.def_nnz == 0) { /* deferred on, nothing to defer: no deferred part */
        free(def_ptr);
        def_ptr = NULL;
    } else {
        /* where it runs: in the tile kernel when its rows are regular (FEM blocks: ~10 entries in every row), so
         * no second launch, fix-up or second pass over y; csr_lb when they are skewed (graphs, circuits' dense
         * rows), where one warp would walk a whole hub's tile row. */
        int64_t longest = 0; /* the most deferred entries of a tile row */
        for (int64_t r0 = 0; r0 < A->m; r0 += TD) {
            const int64_t r1 = A->m - r0 < TD ? A->m : r0 + TD;
            if (def_ptr[r1] - def_ptr[r0] > longest) longest = def_ptr[r1] - def_ptr[r0];
        }
        /* only the plain kernel has it: no band tiles, one tile in flight, one task per warp (options checked) */
        z.def_inline = !cfg.band && opt->tile_inflight <= 1 && opt->tile_group_tasks != 1 &&
                       z.def_nnz <= INT32_MAX - fd->warp_size && /* a chunk's end stays in int */
                       (opt->tile_deferred_inline == 1 ||
                        (opt->tile_deferred_inline == 0 &&
                         longest * z.tile_rows <=
                             TILE_INLINE_SKEW * z.def_nnz + TILE_INLINE_SLACK * (int64_t)fd->warp_size * z.tile_rows));
        if (!z.def_inline) {
            z.def_chunk = opt->nnz_per_warp > 0 ? opt->nnz_per_warp
                                                : spmvport_lb_default_chunk(z.def_nnz, dev, fd->warp_size);
            z.def_warps = (z.def_nnz + z.def_chunk - 1) / z.def_chunk;
        }
    }

    /* the arrays, in slot order (format_tile.h); add_array owns each buffer from here on */
    const size_t vs = (size_t)cfg.vs;
    const int64_t def_rows = def_ptr ? (int64_t)A->m + 1 : 0;
    st = spmvport_format_add_array(fd, "tile_ptr", tile_ptr, ((size_t)z.tile_rows + 1) * sizeof(int32_t), 0);
    tile_ptr = NULL;
    if (st == SPMV_STATUS_SUCCESS) st = add(fd, "tile_col", z.tiles, sizeof(int32_t), 0, 0);
    if (st == SPMV_STATUS_SUCCESS) st = add(fd, "tile_fmt", z.tiles, 1, 0, 0);
    if (st == SPMV_STATUS_SUCCESS) st = add(fd, "tile_off", 2 * (z.tiles + 1), sizeof(int32_t), 0, 0);
    if (st == SPMV_STATUS_SUCCESS) st = add(fd, "tile_idx", z.bytes, 1, 1, 0);
    if (st == SPMV_STATUS_SUCCESS) st = add(fd, "tile_val", z.slots, vs, 0, 1);
    if (st == SPMV_STATUS_SUCCESS)
        st = add(fd, "tile_task", SPMVPORT_TILE_TASK_FIELDS * (z.tasks + 1), sizeof(int32_t), 0, 0);
    if (st == SPMV_STATUS_SUCCESS)
        st = add(fd, "tile_split", SPMVPORT_TILE_SPLIT_FIELDS * (z.splits + 1), sizeof(int32_t), 0, 0);
    if (st == SPMV_STATUS_SUCCESS) st = add(fd, "tile_carry", TD * z.carries, vs, 1, 0);
    if (st == SPMV_STATUS_SUCCESS) {
        st = spmvport_format_add_array(fd, "def_ptr", def_ptr ? def_ptr : malloc(1), (size_t)def_rows * sizeof(int32_t),
                                       0);
        def_ptr = NULL;
    }
    if (st == SPMV_STATUS_SUCCESS) st = add(fd, "def_col", z.def_nnz, sizeof(int32_t), 0, 0);
    if (st == SPMV_STATUS_SUCCESS) st = add(fd, "def_val", z.def_nnz, vs, 0, 1);
    /* the deferred part's csr_lb split (from def_ptr, complete after pass 1); empty slots without one */
    int64_t def_empty = 0;
    if (st == SPMV_STATUS_SUCCESS && z.def_nnz > 0 && !z.def_inline)
        st = spmvport_lb_add_arrays(fd, fd->arrays[SPMVPORT_TILE_A_DEF_PTR].data, A->m, z.def_nnz, z.def_chunk, vs,
                                    &z.def_warps, &def_empty);
    for (int k = 0; st == SPMV_STATUS_SUCCESS && (z.def_nnz == 0 || z.def_inline) && k < SPMVPORT_LB_NARRAYS; k++)
        st = add(fd, "def_lb", 0, 1, 0, 0);
    if (st == SPMV_STATUS_SUCCESS) {
        fd->value_slots = z.slots + z.def_nnz;
        fd->value_map = spmvport_malloc_array((size_t)fd->value_slots, sizeof(int32_t));
        if (fd->value_map == NULL) st = SPMV_STATUS_OUT_OF_MEMORY;
    }
    free(def_ptr);
    if (st != SPMV_STATUS_SUCCESS) {
        free(tile_ptr), free_counts(pc, 0);
        spmvport_msg(msg, msglen, "tile: out of host memory for %lld tiles, %lld value slots, %lld index bytes",
                     (long long)z.tiles, (long long)z.slots, (long long)z.bytes);
        return st == SPMV_STATUS_INTERNAL_ERROR ? st : SPMV_STATUS_OUT_OF_MEMORY;
    }

    /* pass 2: payloads */
    spmvport_array *arr = fd->arrays;
    const int32_t *ptr = arr[SPMVPORT_TILE_A_PTR].data;
    tile_out o = {A, arr[SPMVPORT_TILE_A_COL].data, arr[SPMVPORT_TILE_A_OFF].data, arr[SPMVPORT_TILE_A_FMT].data,
                  arr[SPMVPORT_TILE_A_IDX].data, arr[SPMVPORT_TILE_A_VAL].data, fd->value_map,
                  arr[SPMVPORT_TILE_A_DEF_COL].data, arr[SPMVPORT_TILE_A_DEF_VAL].data, fd->value_map + z.slots};
    const int32_t *dptr = z.def_nnz > 0 ? arr[SPMVPORT_TILE_A_DEF_PTR].data : NULL;
    const int32_t tile_rows = (int32_t)z.tile_rows;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64)
#endif
    for (int32_t tr = 0; tr < tile_rows; tr++)
        write_tile_row(&o, tr, &cfg, ptr[tr], pc[0].slots[tr], pc[0].bytes[tr], dptr, pc[0].formats[tr]);
    o.off[2 * z.tiles] = (int32_t)z.slots;
    o.off[2 * z.tiles + 1] = (int32_t)z.bytes;
    free_counts(pc, 0);

    /* tasks, splits, and the deferred part's chunk rows */
    if (bk > 1)
        balance = fill_block_tasks(arr[SPMVPORT_TILE_A_TASK].data, arr[SPMVPORT_TILE_A_SPLIT].data, ptr, o.off,
                                   z.def_inline ? dptr : NULL, A->m, tile_rows, bk);
    else
        fill_tasks(arr[SPMVPORT_TILE_A_TASK].data, arr[SPMVPORT_TILE_A_SPLIT].data, ptr, tile_rows, balance);

    int64_t *p = fd->params;
    p[SPMVPORT_TILE_P_TILE_ROWS] = z.tile_rows;
    p[SPMVPORT_TILE_P_TILES] = z.tiles;
    p[SPMVPORT_TILE_P_TASKS] = z.tasks;
    p[SPMVPORT_TILE_P_SPLITS] = z.splits;
    p[SPMVPORT_TILE_P_CARRIES] = z.carries;
    p[SPMVPORT_TILE_P_DEF_NNZ] = z.def_nnz;
    p[SPMVPORT_TILE_P_DEF_WARPS] = z.def_warps;
    p[SPMVPORT_TILE_P_DEF_CHUNK] = z.def_chunk;
    p[SPMVPORT_TILE_P_DEF_EMPTY] = def_empty;
    p[SPMVPORT_TILE_P_VARIANT] = cfg.variant;
    p[SPMVPORT_TILE_P_BALANCE] = balance;
    p[SPMVPORT_TILE_P_DEFERRED] = cfg.deferred;
    p[SPMVPORT_TILE_P_INFLIGHT] = opt->tile_inflight > 0 ? opt->tile_inflight : TILE_DEFAULT_INFLIGHT;
    /* band tiles exist only with the band batch kernel */
    p[SPMVPORT_TILE_P_BAND_BATCH] = cfg.band ? (opt->tile_band_batch > 0 ? opt->tile_band_batch : 4) : 0;
    /* tasks per warp: only the band batch kernel has the K-task variant; 3 K < W (the records' one load) */
    {
        int64_t k = opt->tile_band_tasks > 0 ? opt->tile_band_tasks
                                             : (z.tasks >= TILE_BAND_TASKS_MIN_TASKS ? TILE_DEFAULT_BAND_TASKS : 1);
        while (k > 1 && SPMVPORT_TILE_TASK_FIELDS * k >= fd->warp_size) k--;
        p[SPMVPORT_TILE_P_BAND_TASKS] = cfg.band ? k : 1;
    }
    /* CSR steps: only the kernel without band tiles and one tile in flight has them, and only when asked: on the
     * H200 (run V) they made FEM blocks slower, fem3d:3:48 0.1345 -> 0.1459 ms f64, 0.0866 -> 0.0974 f32 (their 8
     * registers cost more resident warps than the batched loads gained) */
    p[SPMVPORT_TILE_P_FLAGS] = !cfg.band && p[SPMVPORT_TILE_P_INFLIGHT] == 1 && opt->tile_csr_steps == 1
                                   ? SPMVPORT_TILE_FLAG_CSR_STEPS : 0;
    /* a task per group of 16 lanes: only with one tile in flight and one task per warp; by default on band plans
     * only: on the H200 (session 4, run A) it took stencil3d:7:160 from 0.1681 to 0.1397 ms f64 (0.1442 -> 0.1245
     * f32), and made fem3d:3:48, not a band plan, slower (0.1326 -> 0.1450 f64: its tile rows are 9 CSR tiles
     * whose tasks then run one per 16 lanes, twice the chain per warp) */
    if (group_tasks == 1 && p[SPMVPORT_TILE_P_INFLIGHT] == 1 && p[SPMVPORT_TILE_P_BAND_TASKS] == 1)
        p[SPMVPORT_TILE_P_FLAGS] |= SPMVPORT_TILE_FLAG_GROUP_TASKS; /* never with def_inline (no band, not asked) */
    if (z.def_inline) p[SPMVPORT_TILE_P_FLAGS] |= SPMVPORT_TILE_FLAG_DEFERRED_INLINE;
    if (shuffles(opt, &cfg, &z)) p[SPMVPORT_TILE_P_FLAGS] |= SPMVPORT_TILE_FLAG_CSR_SHUFFLE; /* x by shuffles */
    int nine = 0, sixteen = 0;
    if (p[SPMVPORT_TILE_P_FLAGS] & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) { /* option 5: steps of 4, whatever the count */
        if (shuffle_step(fd, z.tasks, bk, &nine, &sixteen) == 3 && opt->tile_csr_shuffle != 5 && bk == 1)
            p[SPMVPORT_TILE_P_FLAGS] |= SPMVPORT_TILE_FLAG_CSR_STEP3 |
                                        grouped_steps(fd, A, dev, opt->tile_csr_shuffle, nine, z.tasks);
        else
            p[SPMVPORT_TILE_P_FLAGS] |= grouped_steps4(A, dev, opt->tile_csr_shuffle, sixteen);
    }
    if (bk > 1)
        p[SPMVPORT_TILE_P_FLAGS] |= bk == 8   ? SPMVPORT_TILE_FLAG_BLOCK_TASKS8
                                    : bk == 4 ? SPMVPORT_TILE_FLAG_BLOCK_TASKS4
                                              : SPMVPORT_TILE_FLAG_BLOCK_TASKS2;
    fd->deterministic = 1; /* split rows and the deferred part combine through ordered carries, no atomics */
    write_stats(fd, &cfg, &z, balance);
    return SPMV_STATUS_SUCCESS;
}
