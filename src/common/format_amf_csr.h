/*
 * format_amf_csr.h -- array and parameter slots of format amf_csr (adaptive multi-row folding of CSR), shared by
 * the host builder (format_amf_csr.c), the CPU executor (cpu_ref/amf_csr_executor.c) and the kernels
 * (device/amf_csr_kernels.h). Plain C: included from C, CUDA and HIP translation units alike.
 *
 * The layout (docs/formats/amf_csr.md has the whole story):
 *   units       every row belongs to exactly one unit; a unit is either a FOLD of 1..4 consecutive short rows or
 *               ONE long row (>= AMF_LONG_MIN entries). Unit u covers rows [fold_row[u], fold_row[u+1]) and
 *               entries [fold_ptr[u], fold_ptr[u+1]) of cols/values.
 *   entries     a fold's entries merged by column over its rows (ties: lower local row first); the local row
 *               (0..3) rides in the low 2 bits of cols (cols = col << 2 | local row, uint32) when every column
 *               is < 2^30, else cols holds the plain column and local_row (uint8) the local row.
 *   sub-blocks  consecutive folds (never a long row) of about T_l entries, one warp each: sub_unit[2s] and
 *               sub_unit[2s+1] are the first and one-past-last unit, sub_lanes[s] = log2 of the lanes per fold.
 *               Uniform sub-blocks (AMF_P_UNIFORM = K > 0): sub-block s is units [s K, min(s K + K, units)) at
 *               2^AMF_P_UNIFORM_LANES lanes; the arrays still hold the same bounds, the kernels do not read them.
 *               With long rows (only on the one-step kernel by windows, AMF_P_ONE_STEP = 1) such a sub-block may
 *               span long units, which it leaves to their pieces (an empty fold there).
 *   long rows   long_unit[i] is the unit of long row i; it is cut into pieces of AMF_P_PIECE entries, one thread
 *               block each: pieces [long_piece[i], long_piece[i+1]), piece_owner[q] = i. A long row of one piece
 *               is written by its block; the others leave one partial per piece in long_part, added in piece
 *               order by a fix-up pass (no atomics: deterministic).
 *   CSR-vector  (AMF_P_VECTOR_LANES = L > 0; options.amf_vector) where folding cannot pay: every row a unit of its
 *   layout      own, fold_ptr the CSR row pointer, cols the plain columns in row order, values in CSR order, every
 *               other array empty (fold_row too); run by csr_vector's kernel and executor at L lanes a row, and at
 *               L = 1 (the CSR-scalar mapping, options.amf_vector = 2) by csr_scalar's kernel, a thread a row.
 */
#ifndef SPMVPORT_FORMAT_AMF_CSR_H
#define SPMVPORT_FORMAT_AMF_CSR_H

/* Array slots (indices into spmvport_format_data.arrays). AMF_A_LOCAL_ROW is a 1-byte placeholder when the
 * local row is packed into cols. */
enum {
    AMF_A_FOLD_ROW = 0,    /* int32[units + 1]: first row of each unit; fold_row[units] = m */
    AMF_A_FOLD_PTR = 1,    /* int32[units + 1]: first entry of each unit; fold_ptr[units] = nnz */
    AMF_A_COLS = 2,        /* uint32[nnz] packed (col << 2 | local row) or int32[nnz] plain columns */
    AMF_A_VALUES = 3,      /* T[nnz], the matrix values in the merged order (is_values) */
    AMF_A_LOCAL_ROW = 4,   /* uint8[nnz] local rows when not packed, else empty */
    AMF_A_SUB_UNIT = 5,    /* int32[2 * sub_blocks]: (first unit, end unit) of each sub-block */
    AMF_A_SUB_LANES = 6,   /* uint8[sub_blocks]: log2 of the lanes per fold in the sub-block, 1..log2(W) */
    AMF_A_LONG_UNIT = 7,   /* int32[long rows]: the unit of each long row */
    AMF_A_LONG_PIECE = 8,  /* int32[long rows + 1]: first piece of each long row */
    AMF_A_PIECE_OWNER = 9, /* int32[pieces]: the long row (index into long_unit) of each piece */
    AMF_A_LONG_PART = 10,  /* T[pieces]: per-piece partial sums, written by every execute (scratch) */
    AMF_A_LONG_COUNT = 11, /* int32[long rows]: pieces of each long row summed so far in this execute (GPU kernels;
                            * zero between calls: the block that adds a row's last piece sums the row and resets it) */
    AMF_A_COUNT = 12
};

/* Parameter slots (spmvport_format_data.params). */
enum {
    AMF_P_UNITS = 0,      /* units (folds + long rows) */
    AMF_P_SUB_BLOCKS = 1, /* sub-blocks (one warp each) */
    AMF_P_LONG_ROWS = 2,  /* long rows */
    AMF_P_PIECES = 3,     /* long-row pieces (one thread block each) */
    AMF_P_PIECE = 4,      /* entries per long-row piece (the last piece of a row may be shorter) */
    AMF_P_BLOCK = 5,      /* threads per block of the kernels (a multiple of W) */
    AMF_P_PACKED = 6,     /* 1: local row packed into cols; 0: separate local_row array */
    AMF_P_FOLD_MAX = 7,   /* the most rows any fold holds (1..4): the number of accumulators reduced */
    AMF_P_T_S = 8,        /* the fold threshold (0 with a fixed fold count) */
    AMF_P_T_L = 9,        /* the sub-block threshold */
    AMF_P_LONG_MIN = 10,  /* rows with at least this many entries are long */
    AMF_P_MULTI = 11,     /* long rows of more than one piece (their partials summed by the last piece's block) */
    AMF_P_GRID = 12,      /* blocks of the main kernel: pieces + ceil(sub_blocks / (block / W)) */
    AMF_P_FIXED = 13,     /* the fixed fold count of the option amf_fixed_fold (0: adaptive) */
    AMF_P_MIN_BLOCKS = 14, /* resident blocks the kernel is capped for: 0 (no cap), 3 or 4 (no effect on the layout) */
    AMF_P_VALUES = 15,     /* when the kernel loads a window's values: AMF_VALUES_AFTER, _AHEAD or _GATHER */
    AMF_P_UNIFORM = 16,    /* units per sub-block when every sub-block s is units [s K, min(s K + K, units)) at
                            * one lane count (no long rows): the kernel then derives its bounds from s and loads
                            * neither sub_unit nor sub_lanes (one memory round trip fewer); 0: read the arrays */
    AMF_P_UNIFORM_LANES = 17, /* log2 of the lanes per fold of every sub-block when AMF_P_UNIFORM > 0 */
    AMF_P_ONE_STEP = 18,      /* uniform sub-blocks of one step (AMF_P_UNIFORM = W >> AMF_P_UNIFORM_LANES) run on
                               * the one-step kernel (options.amf_one_step): 1 by windows (lane l of a fold's L
                               * takes its aligned windows l, l + L, ...), 2 by entries (its entries l, l + L,
                               * ...); 0: the general kernel */
    AMF_P_WINDOW_CACHE = 19,  /* 1: windows are read with plain (cached) loads, 0: streaming (evict-first) loads
                               * (options.amf_window_cache; no effect on the layout) */
    AMF_P_STEP_WINDOW = 20,   /* entries per window of the one-step kernel by windows (AMF_P_ONE_STEP = 1):
                               * AMF_BATCH, or AMF_SMALL_WINDOW (options.amf_step_window; automatic in f64 on the
                               * many-wave layouts); the other kernels take windows of AMF_BATCH whatever it says */
    AMF_P_REGULAR_ROWS = 21,  /* regular folds (options.amf_regular; one-step plans without long rows): R > 0 when
                               * unit u is rows [min(u R, m), min(u R + R, m)) and entries [min(u E, nnz),
                               * min(u E + E, nnz)), E = AMF_P_REGULAR_ENTRIES: the one-step kernel derives them
                               * and reads neither fold_row nor fold_ptr (which still hold the same bounds); 0:
                               * read the arrays */
    AMF_P_REGULAR_ENTRIES = 22, /* E, the entries of a regular fold (a multiple of R: every row has E / R) */
    AMF_P_VECTOR_LANES = 23     /* > 0: the CSR-vector layout (options.amf_vector), csr_vector's lanes per row (1:
                                 * CSR-scalar's mapping, csr_scalar's kernel); 0: folds */
};

#define AMF_MAX_FOLD 4          /* rows per fold: the local row has 2 bits */
#define AMF_LONG_MIN 1024       /* rows this long are never folded (the public code's bound) */
#define AMF_BLOCK 256           /* threads per block: a multiple of both warp sizes */
#define AMF_PIECE_PER_THREAD 16 /* a long-row piece is AMF_BLOCK * this many entries */
#define AMF_PACK_LIMIT (1 << 30) /* columns below this pack the local row into their low 2 bits */
#define AMF_BATCH 8             /* entries per lane loaded together (before any is used) by the kernels */
#define AMF_SMALL_WINDOW 4      /* the one-step kernel's small windows (AMF_P_STEP_WINDOW, options.amf_step_window) */
/* Automatic window caching (options.amf_window_cache = 0): the folds' windows are read with cached loads when the
 * windows they span hold at least 14% more slots than their entries (window_use <= 100/114), i.e. when that share
 * of window reads repeats a window a neighbouring fold reads too. H100 (session 14): circuit:5000000 (34%) and
 * stencil3d:7:160 (16%) 8-20% faster cached; kron:20:16 (12%), fem3d:3:48 (3%), uniform:2000000:16 (0%) 2-5%
 * slower cached (the matrix stream then evicts x from L2). */
#define AMF_CACHE_REREAD_PCT 14

/* options.amf_values, AMF_P_VALUES: when the fold kernel loads a window's values (its columns always come one round
 * ahead, with the previous window's gathers): right after the previous window's adds (the default), one round
 * ahead with the columns, or with the window's own x gathers. */
#define AMF_VALUES_AFTER 0
#define AMF_VALUES_AHEAD 1
#define AMF_VALUES_GATHER 2

#ifndef __CUDACC__
#if !defined(__HIP__) && !defined(__HIPCC__)
#include "format_builders.h"

/* The builder with a test hook: force_unpacked = 1 stores the local rows in their own array even when the
 * columns would pack (so the fallback is tested on ordinary matrices). spmvport_build_amf_csr calls it with 0. */
spmv_status_t spmvport_build_amf_csr_ex(spmvport_format_data *fd, const spmv_matrix_t *A,
                                        const spmv_device_info_t *dev, const spmv_plan_options_t *opt,
                                        int force_unpacked, char *msg, size_t msglen);

/* Rows [*r0, *r0 + *rows) and entries [*fb, *fe) of unit u: derived for regular folds (AMF_P_REGULAR_ROWS > 0) as
 * the one-step kernel derives them, else read from fold_row and fold_ptr. CPU executor and tests. */
static inline void amf_fold_bounds(const int64_t *prm, const int32_t *fold_row, const int32_t *fold_ptr, int64_t m,
                                   int64_t nnz, int64_t u, int64_t *r0, int64_t *rows, int64_t *fb, int64_t *fe)
{
    const int64_t R = prm[AMF_P_REGULAR_ROWS], E = prm[AMF_P_REGULAR_ENTRIES];
    if (R > 0) {
        *r0 = u * R < m ? u * R : m;
        *rows = (*r0 + R < m ? *r0 + R : m) - *r0;
        *fb = u * E < nnz ? u * E : nnz;
        *fe = *fb + E < nnz ? *fb + E : nnz;
    } else {
        *r0 = fold_row[u], *rows = fold_row[u + 1] - fold_row[u];
        *fb = fold_ptr[u], *fe = fold_ptr[u + 1];
    }
}

/* Unit u is a long row (one row of >= AMF_LONG_MIN entries), computed by its pieces, never as a fold (uniform
 * sub-blocks of the one-step kernel by windows may span it). Builder and CPU executor; the kernel tests the same
 * on the values it loaded. */
static inline int amf_unit_is_long(const int32_t *fold_row, const int32_t *fold_ptr, int64_t u)
{
    return fold_row[u + 1] - fold_row[u] == 1 && fold_ptr[u + 1] - fold_ptr[u] >= AMF_LONG_MIN;
}
#endif
#endif

#endif /* SPMVPORT_FORMAT_AMF_CSR_H */
