/*
 * format_ehyb.h -- the layout contract of format ehyb, shared by the host builder (format_ehyb.c), the CPU
 * executor (cpu_ref/ehyb_executor.c) and the kernels (device/ehyb_kernels.h). Plain C: no CUDA or HIP types.
 *
 * Vocabulary. Rows and columns are renumbered ("plan order") part by part; part p owns plan rows
 * [row_begin(p), row_begin(p+1)) and plan columns [col_begin(p), col_begin(p+1)), its "x segment", which one
 * thread block caches in shared memory, followed by the part's "halo": columns of other parts that its rows use
 * at least halo_min_refs times, as far as shared memory allows. A row's entries whose column is staged (own part
 * or halo) go to the sliced ELL part (16-bit column local to the staged x); the others (and the tail of a row
 * too long for its slice) are extra-rows (ER) entries with 32-bit columns and x read from global memory. The
 * first of them (up to the
 * slice's near width) sit in the slice's "near-ER" block, summed by the same lane right after its ELL entries;
 * the rest are "far": a row with far entries has a "rank" e (ranks follow plan row order), its far entries sit
 * in ER slices (or chunks, for long rows) that any warp takes from a global counter, and its partial sums meet
 * in slots of the partial array, where the last of them to arrive (a per-rank ticket) writes y.
 */
#ifndef SPMVPORT_FORMAT_EHYB_H
#define SPMVPORT_FORMAT_EHYB_H

/* Threads per block of the kernel (a multiple of every warp size): 32 warps of 32 or 16 warps of 64. */
#define SPMVPORT_EHYB_BLOCK_THREADS 1024
/* Blocks meant to be resident per multiprocessor: the x segment budget is the device's shared memory per
 * block divided by this (minus SPMVPORT_EHYB_SMEM_RESERVE), so two blocks overlap each other's staging. */
#define SPMVPORT_EHYB_BLOCKS_PER_SM 2
#define SPMVPORT_EHYB_SMEM_RESERVE 1024
/* An ER row longer than LONG_PER_LANE * W entries is "long": cut into chunks of CHUNK_PER_LANE * W entries,
 * each summed by a whole warp (lane-strided, then a shuffle-down tree). */
#define SPMVPORT_EHYB_LONG_PER_LANE 2
#define SPMVPORT_EHYB_CHUNK_PER_LANE 8
/* Largest x segment: local column indices and the padding index (= the segment length) fit 16 bits. */
#define SPMVPORT_EHYB_MAX_SEGMENT 65535

/* Array slots (fd->arrays[]). int32 unless said otherwise. */
enum {
    SPMVPORT_EHYB_ROW_PERM = 0,  /* [m]  plan row -> A's row (fd->row_perm_array) */
    SPMVPORT_EHYB_COL_PERM = 1,  /* [n]  plan column -> A's column (fd->col_perm_array) */
    SPMVPORT_EHYB_PART = 2,      /* [4*(parts+1)] per part: first plan row, first plan column, first ELL slice,
                                  * first halo entry */
    SPMVPORT_EHYB_ELL_PTR = 3,   /* [2*(slices+1)] per ELL slice: its first ELL slot, and the first slot of its
                                  * near-ER block in er_col/er_val; widths = (next - this) / W */
    SPMVPORT_EHYB_SLICE_ER = 4,  /* uint64 [2*slices] per ELL slice: lane mask of rows with far entries, and
                                  * the rank of the first of them (ranks of the slice are consecutive) */
    SPMVPORT_EHYB_ELL_COL = 5,   /* uint16 [ell slots] column local to the part's staged x: below the part's own
                                  * column count c, plan column col_begin + l; from c on, halo entry l - c;
                                  * padding = own + halo length, which the kernel stages as 0 after them */
    SPMVPORT_EHYB_ELL_VAL = 6,   /* T [ell slots] (values; padding 0) */
    SPMVPORT_EHYB_ER_META = 7,   /* [2*(er_rows+1)] per rank: plan row, first partial slot; the sentinel's
                                  * second entry is the slot count. Slots of rank e: ELL partial, then pieces */
    SPMVPORT_EHYB_ER_WORK = 8,   /* the ER work items: [4*chunks] long-row chunks (rank, piece, first entry,
                                  * end entry), then [er_slices+1] ER slice slot offsets, then
                                  * [2*W*er_slices] per slice lane: rank (-1 none), entry count */
    SPMVPORT_EHYB_ER_COL = 9,    /* [er slots] x index: A's column, or the plan column with plan ordering;
                                  * -1 on padding. Near-ER blocks first, then long rows, then ER slices */
    SPMVPORT_EHYB_ER_VAL = 10,   /* T [er slots] (values; padding 0) */
    SPMVPORT_EHYB_PARTIAL = 11,  /* T [partial slots] scratch written by every call */
    SPMVPORT_EHYB_SYNC = 12,     /* [2+er_rows] ER work counter, finished-warp counter, one ticket per rank:
                                  * zero between calls (each call's last user resets them) */
    SPMVPORT_EHYB_HALO = 13,     /* [halo entries] per part, the x indices staged after its own columns (A's
                                  * column, or the plan column with plan ordering): columns of other parts that
                                  * the part's rows use often enough (halo_min_refs); their entries are ELL */
    SPMVPORT_EHYB_NARRAYS = 14
};

/* Parameter slots (fd->params[]). */
enum {
    SPMVPORT_EHYB_P_PARTS = 0,      /* thread blocks of the kernel (>= 1) */
    SPMVPORT_EHYB_P_SLICES = 1,     /* ELL slices */
    SPMVPORT_EHYB_P_ER_ROWS = 2,    /* ranks (rows with far ER entries) */
    SPMVPORT_EHYB_P_CHUNKS = 3,     /* long-row chunks: ER work items [0, chunks) */
    SPMVPORT_EHYB_P_ER_SLICES = 4,  /* ER slices: ER work items [chunks, chunks + er_slices) */
    SPMVPORT_EHYB_P_SEG_MAX = 5,    /* longest staged x (own columns + halo); dynamic shared memory =
                                     * (seg_max + 1 + (split > 1 ? block threads : 0)) * sizeof(T) */
    SPMVPORT_EHYB_P_PLAN_ORDERING = 6, /* 1: x and y are in plan order (no gather / scatter) */
    SPMVPORT_EHYB_P_BLOCK = 7,      /* threads per block the layout assumes (SPMVPORT_EHYB_BLOCK_THREADS) */
    SPMVPORT_EHYB_P_ELL_SLOTS = 8,
    SPMVPORT_EHYB_P_ER_SLOTS = 9,
    SPMVPORT_EHYB_P_LONG_ROWS = 10,
    SPMVPORT_EHYB_P_NEAR_SLOTS = 11, /* er slots [0, near_slots) are the slices' near-ER blocks */
    SPMVPORT_EHYB_P_BATCH = 12,     /* entries a lane loads before using them (4 or 8); the sums do not depend on it */
    SPMVPORT_EHYB_P_SPLIT = 13,     /* G, warps per ELL slice (1, 2, 4, ... up to the block's warps): with G > 1 the
                                     * G warps of a slice take its load batches round robin (ELL then near-ER,
                                     * batch i to warp i mod G), their partial sums meet in shared memory in
                                     * warp order; a small matrix's block has more warps than slices */
    SPMVPORT_EHYB_P_HALO = 14       /* halo entries in all (the halo array's length) */
};

#endif /* SPMVPORT_FORMAT_EHYB_H */
