/*
 * format_teb.h -- format teb (threshold-exchange-order blocks): the array and parameter slots shared by the host
 * builder (format_teb.c), the CPU executor (cpu_ref/teb_executor.c) and the kernels (device/teb_kernels.h).
 *
 * Plain C, no CUDA or HIP type: it is included from .c, .cu and .hip translation units. See docs/formats/teb.md.
 *
 * =====================================================================================================
 * Layout (rows renumbered: "new row" i is row row_orig[i] of A)
 *
 *   values[nnz], col_idx[nnz]   the entries, row after row in the new order (each row's columns stay sorted)
 *   row_ptr[m + 1]              RowNNZ_Sum of the paper: start of each new row in values / col_idx
 *   blo_idx[blocks + 1]         Blo_Idx of the paper: first new row of each block; one GPU thread block per block
 *   row_orig[m]                 the original row of each new row (a permutation of 0..m-1): y[row_orig[i]]
 *   blo_tier[4 * blocks]        how block b's rows [blo_idx[b], blo_idx[b+1]) are shared by its threads:
 *                                 [blo_idx[b], warp)   block rows: the whole thread block on each, one by one
 *                                 [warp, group)        warp rows: one warp each
 *                                 [group, empty)       group rows: 2^lanes_log2 lanes each (1 = the paper)
 *                                 [empty, blo_idx[b+1]) empty rows: one thread each (y = beta*y)
 *                               Inside a block the non-empty rows are sorted by length, longest first.
 * =====================================================================================================
 */
#ifndef SPMVPORT_FORMAT_TEB_H
#define SPMVPORT_FORMAT_TEB_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Array slots (fd->arrays[]). */
enum {
    SPMVPORT_TEB_VALUES = 0,   /* T[nnz], is_values */
    SPMVPORT_TEB_COL_IDX = 1,  /* int32[nnz] */
    SPMVPORT_TEB_ROW_PTR = 2,  /* int32[m + 1] (RowNNZ_Sum) */
    SPMVPORT_TEB_BLO_IDX = 3,  /* int32[blocks + 1] (Blo_Idx) */
    SPMVPORT_TEB_ROW_ORIG = 4, /* int32[m] */
    SPMVPORT_TEB_BLO_TIER = 5, /* int32[4 * blocks] */
    SPMVPORT_TEB_NARRAYS = 6
};

/* Fields of one block's entry in blo_tier. */
enum {
    SPMVPORT_TEB_TIER_WARP = 0,       /* first warp row (absolute new-row index) */
    SPMVPORT_TEB_TIER_GROUP = 1,      /* first group row */
    SPMVPORT_TEB_TIER_EMPTY = 2,      /* first empty row */
    SPMVPORT_TEB_TIER_LANES_LOG2 = 3, /* log2 of the lanes per group row */
    SPMVPORT_TEB_TIER_FIELDS = 4
};

/* Parameter slots (fd->params[]). */
enum {
    SPMVPORT_TEB_P_BLOCKS = 0,    /* thread blocks to launch (blocks holding at least one row) */
    SPMVPORT_TEB_P_THREADS = 1,   /* threads per block, a multiple of the warp size */
    SPMVPORT_TEB_P_BLN = 2,       /* the paper's block count bLN (blocks left empty by the merge are dropped) */
    SPMVPORT_TEB_P_THRESHOLD = 3, /* the integer merge threshold floor(nnz * k / bLN) */
    SPMVPORT_TEB_P_KMIL = 4       /* k in thousandths (1005, 1010 or 1030) */
};

#define SPMVPORT_TEB_THREADS 256      /* threads per block of the kernel */
#define SPMVPORT_TEB_MAX_THREADS 1024 /* the executor's and kernel's upper bound on the threads per block */

/* ---- the block-count search (exposed for the tests) -------------------------------------------------------- */

/* The non-empty row lengths as a histogram: D distinct lengths len[0] < len[1] < ... with count[d] rows each. */
typedef struct spmvport_teb_hist {
    int32_t D;
    const int64_t *len;
    const int64_t *count;
    int64_t rows; /* sum of count */
    int64_t nnz;  /* sum of len * count */
} spmvport_teb_hist;

/* Block non-zero statistics of the paper's merge (Algorithm 2) for bln blocks and threshold tf. */
typedef struct spmvport_teb_sim {
    double sq_dev;    /* sum over the bln blocks of (nnz_i - nnz / bln)^2; the variance is sq_dev / bln */
    int64_t max_nnz;  /* the largest block */
    int64_t nonempty; /* blocks holding at least one row */
} spmvport_teb_sim;

/* Run the merge of the paper on the histogram: each of the first bln - 1 blocks takes the longest remaining row,
 * then the shortest remaining rows while the block's sum stays <= tf; the last block takes what remains; blocks
 * past the last row are empty. Runs of identical blocks are counted at once, so the cost is O(D) whatever the
 * row count. rem: scratch of D entries. */
void spmvport_teb_simulate(const spmvport_teb_hist *h, int64_t bln, int64_t tf, int64_t *rem, spmvport_teb_sim *out);

#ifdef __cplusplus
}
#endif

#endif /* SPMVPORT_FORMAT_TEB_H */
