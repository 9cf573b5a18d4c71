/*
 * format_tile.h -- TileSpMV (format `tile`): array slots, parameter slots and the tile format codes shared by
 * the host builder (format_tile.c), the CPU executor (cpu_ref/tile_executor.c) and the device kernels
 * (device/tile_kernels.h). Plain C: no CUDA or HIP type; included from .c, .cu and .hip translation units.
 *
 * The matrix is cut into 16 x 16 tiles. Level 1 is a CSR of tiles; level 2 is one payload per tile in one of
 * seven formats. Values live in one array (tile after tile, padding included); in-tile indices are 4-bit
 * nibbles packed two per byte (low nibble first), in one byte array. See docs/formats/tile.md.
 *
 * Per-tile payloads (rowlen x collen = the tile's real size, < 16 only on the last tile row / column;
 * nv = value slots of the tile, from tile_off):
 *   CSR        idx: rowlen bytes of row starts, then nv column nibbles;          values: row-major
 *   COO        idx: nv bytes (row << 4 | col);                                   values: row-major
 *   ELL        idx: 1 byte width w, then rowlen*w column nibbles, slot k*rowlen+r;  values: same slots
 *                   (padding: value 0, nibble 0; the kernels skip zero values)
 *   HYB        ELL part as ELL (width w), then (nv - rowlen*w) tail bytes (row << 4 | col); values: ELL
 *                   slots, then the tail row-major. Deferred COO moves the tail out (nv == rowlen*w).
 *   DENSE      idx: nothing;                                                     values: column-major,
 *                   slot c*rowlen+r (structural zeros stored as 0 and skipped)
 *   DENSE_ROW  idx: 2 bytes, mask of the full rows (bit r);  values: slot c*nd+d, d = rank of row r in the mask
 *   DENSE_COL  idx: 2 bytes, mask of the full columns;       values: slot q*rowlen+r, q = rank of column c
 *   BAND       idx: nothing; the diagonals lo .. lo+nd-1 (d = c - r, -15 <= lo, lo+nd-1 <= 15, nd <= 7) are in
 *                   the tile_fmt byte itself; values: diagonal after diagonal, each holding only its rows inside
 *                   the tile (rows max(0,-d) .. min(rowlen, collen-d)-1), 0 where the entry is absent (skipped).
 *                   Lane r's loads need only the tile header: value and x addresses without an index round trip.
 */
#ifndef SPMVPORT_FORMAT_TILE_H
#define SPMVPORT_FORMAT_TILE_H

#include "backend.h" /* SPMVPORT_LB_NARRAYS: the deferred part is csr_lb's split */

#define SPMVPORT_TILE_DIM 16     /* rows and columns of a tile; in-tile indices are 4 bits */
#define SPMVPORT_TILE_LOG2 4

/* Tile format codes (tile_fmt bytes). */
enum {
    SPMVPORT_TILE_CSR = 0,
    SPMVPORT_TILE_COO = 1,
    SPMVPORT_TILE_ELL = 2,
    SPMVPORT_TILE_HYB = 3,
    SPMVPORT_TILE_DENSE = 4,
    SPMVPORT_TILE_DENSE_ROW = 5,
    SPMVPORT_TILE_DENSE_COL = 6,
    SPMVPORT_TILE_BAND = 7, /* selection code; the stored byte is SPMVPORT_TILE_BAND_BYTE(lo, hi) >= 16 */
    SPMVPORT_TILE_NFORMATS = 8
};

/* A band tile's tile_fmt byte: nd diagonals from lo, -15 <= lo, lo + nd - 1 <= 15, 1 <= nd <= 7 (bytes 16..232). */
#define SPMVPORT_TILE_BAND_MAXND 7
#define SPMVPORT_TILE_BAND_BYTE(lo, nd) (16 + ((lo) + 15) * 7 + (nd) - 1)
#define SPMVPORT_TILE_BAND_LO(b) (((b) - 16) / 7 - 15)
#define SPMVPORT_TILE_BAND_ND(b) (((b) - 16) % 7 + 1)
#define SPMVPORT_TILE_IS_BAND(b) ((b) >= 16)
/* Selection code of a tile_fmt byte (tiles of a tile row are grouped by it). */
#define SPMVPORT_TILE_KIND(b) (SPMVPORT_TILE_IS_BAND(b) ? SPMVPORT_TILE_BAND : (b))

/* Array slots of format tile (spmvport_format_data.arrays[]); every slot exists, possibly with 0 bytes. */
enum {
    SPMVPORT_TILE_A_PTR = 0,       /* int32 [tile_rows + 1]: first tile of each tile row */
    SPMVPORT_TILE_A_COL = 1,       /* int32 [tiles]: tile column */
    SPMVPORT_TILE_A_FMT = 2,       /* uint8 [tiles]: tile format code (band tiles: SPMVPORT_TILE_BAND_BYTE) */
    SPMVPORT_TILE_A_OFF = 3,       /* int32 [2 * (tiles + 1)]: {value offset, index byte offset} per tile */
    SPMVPORT_TILE_A_IDX = 4,       /* uint8 [index bytes]: per-tile index payloads */
    SPMVPORT_TILE_A_VAL = 5,       /* T [value slots]: per-tile values (is_values) */
    SPMVPORT_TILE_A_TASK = 6,      /* int32 [3 * (tasks + 1)]: {first tile, tile row, carry slot or -1} per
                                      warp task; the sentinel's first tile ends the last task */
    SPMVPORT_TILE_A_SPLIT = 7,     /* int32 [2 * (splits + 1)]: {tile row, first carry slot} per split tile row;
                                      the sentinel's carry slot ends the last one */
    SPMVPORT_TILE_A_CARRY = 8,     /* T [16 * carry slots]: partial row sums of split tile rows (scratch) */
    /* deferred COO: a CSR of the extracted entries (m rows), run by the csr_lb traversal with beta = 1, or inside
       the tile kernel (SPMVPORT_TILE_FLAG_DEFERRED_INLINE) */
    SPMVPORT_TILE_A_DEF_PTR = 9,   /* int32 [m + 1] (0 bytes when there is no deferred part) */
    SPMVPORT_TILE_A_DEF_COL = 10,  /* int32 [deferred nnz] */
    SPMVPORT_TILE_A_DEF_VAL = 11,  /* T [deferred nnz] (is_values) */
    SPMVPORT_TILE_A_DEF_SPLIT = 12, /* the deferred CSR's csr_lb split: SPMVPORT_LB_NARRAYS arrays (backend.h),
                                       0 bytes each when there is no deferred part or it runs inline */
    SPMVPORT_TILE_NARRAYS = 12 + SPMVPORT_LB_NARRAYS
};

/* Parameter slots of format tile (spmvport_format_data.params[]). */
enum {
    SPMVPORT_TILE_P_TILE_ROWS = 0, /* ceil(m / 16) */
    SPMVPORT_TILE_P_TILES = 1,     /* tiles stored */
    SPMVPORT_TILE_P_TASKS = 2,     /* warp tasks of the tile kernel (>= tile rows) */
    SPMVPORT_TILE_P_SPLITS = 3,    /* tile rows split over several tasks */
    SPMVPORT_TILE_P_CARRIES = 4,   /* carry slots (tasks of split rows) */
    SPMVPORT_TILE_P_DEF_NNZ = 5,   /* deferred non-zeros (0: no deferred part) */
    SPMVPORT_TILE_P_DEF_WARPS = 6, /* csr_lb chunks of the deferred part */
    SPMVPORT_TILE_P_DEF_CHUNK = 7, /* csr_lb non-zeros per chunk */
    SPMVPORT_TILE_P_VARIANT = 8,   /* 0 ADPT with band tiles, 1 all-CSR, 2 the paper's seven formats */
    SPMVPORT_TILE_P_BALANCE = 9,   /* most tiles per task */
    SPMVPORT_TILE_P_DEFERRED = 10, /* 1 when deferred COO is on */
    SPMVPORT_TILE_P_DEF_EMPTY = 11, /* rows without deferred entries (the split's empty rows) */
    SPMVPORT_TILE_P_INFLIGHT = 12,  /* tiles a group of 16 lanes loads together: 1, 2 or 4 */
    SPMVPORT_TILE_P_BAND_BATCH = 13, /* 0, or 2 / 4: the kernel takes a group's tiles that many at a time, band
                                       tiles' loads together (inflight automatic, at least half the tiles band) */
    SPMVPORT_TILE_P_BAND_TASKS = 14, /* 1, or 2 .. SPMVPORT_TILE_MAX_BAND_TASKS with band batches: consecutive
                                       tasks one warp takes (tile_band_tasks_kernel); the layout is the same */
    SPMVPORT_TILE_P_FLAGS = 15      /* kernel flags (SPMVPORT_TILE_FLAG_*) */
};
/* Flags in SPMVPORT_TILE_P_FLAGS. CSR_STEPS: the kernel without band tiles (inflight 1) sums CSR tile rows in
 * steps of 8 entries (same order), else one entry at a time. GROUP_TASKS (inflight 1, one task per warp): each
 * group of 16 lanes takes a whole task (tiles in order, no butterfly), W / 16 tasks per warp. DEFERRED_INLINE
 * (one task per warp, no GROUP_TASKS): the deferred CSR runs in the tile kernel, not by csr_lb: the first task
 * of each tile row adds, before its tiles, the deferred entries of its rows, W at a time across the warp (a
 * segmented scan per chunk, tile_deferred_rows); the csr_lb split arrays are then empty. */
#define SPMVPORT_TILE_FLAG_CSR_STEPS 1
#define SPMVPORT_TILE_FLAG_GROUP_TASKS 2
#define SPMVPORT_TILE_FLAG_DEFERRED_INLINE 4
/* CSR_SHUFFLE (the kernel without band tiles, one tile in flight, one task per warp, no CSR steps): the groups
 * step through their tiles together; where every group's tile is CSR, lane r loads x entry r of the tile's
 * columns with its row's bounds, and each entry's x comes from the group's lanes by a shuffle, not a load that
 * waits for the entry's column nibble. Same sums in the same order. */
#define SPMVPORT_TILE_FLAG_CSR_SHUFFLE 8
/* CSR_STEP3 (with CSR_SHUFFLE): the shuffled CSR loop takes 3 entries a step instead of 4, where the builder counts
 * fewer lane slots (steps x entries) over the plan's warp steps that way (FEM blocks of 3 unknowns: rows of 3, 6
 * or 9 entries a tile). */
#define SPMVPORT_TILE_FLAG_CSR_STEP3 16
/* CSR_STEP6 (with CSR_STEP3): two steps of 3 loaded together, 6 entries a lane a step (the builder's
 * doubled_steps: f32 plans larger than the L2 cache). */
#define SPMVPORT_TILE_FLAG_CSR_STEP6 32
/* CSR_STEP9 (with CSR_STEP3, never with CSR_STEP6): three steps of 3 loaded together, 9 entries a lane a step, where
 * that takes (almost) no more lane slots than steps of 3: FEM blocks of 3 unknowns, whose rows have 3, 6 or 9
 * entries a tile, then take one step a tile instead of three. */
#define SPMVPORT_TILE_FLAG_CSR_STEP9 64
/* REGS48 (with CSR_STEP9 in f32): the kernel with the deferred part inside is held to 1280 threads an SM (48
 * registers a thread) instead of 1536 (40), where the plan's tasks take as many waves of warps either way and at
 * most 2: the loads get more registers and no wave is added. */
#define SPMVPORT_TILE_FLAG_REGS48 128
/* CSR_STEP16 (with CSR_SHUFFLE, without CSR_STEP3): four steps of 4 loaded together, 16 entries a lane a step,
 * where that takes (almost) no more lane slots than steps of 4: FEM blocks of 5 unknowns, whose rows have up to 15
 * entries a tile, then take one step a tile. */
#define SPMVPORT_TILE_FLAG_CSR_STEP16 256
/* Threads per block of the tile kernels (tile_block in tile_kernels.h: why 128 is there). */
#define SPMVPORT_TILE_BLOCK 128
/* BLOCK_TASKS2 / 4 / 8 (with CSR_SHUFFLE in steps of 4 or 16, without CSR_STEP3, GROUP_TASKS, band tiles; at most
 * one of them): every tile row has exactly 2 (4, 8) tasks, consecutive, run by consecutive warps of one thread block
 * (blocks of SPMVPORT_TILE_BLOCK threads, or of bk x W when that is more: 8 tasks at W = 32 and 4 at W = 64 take
 * blocks of 256); each warp leaves its 16 row sums in shared memory, and after a block barrier the row's first warp
 * adds them in task order and writes y. No carry slot, no split record, no fix-up launch. */
#define SPMVPORT_TILE_FLAG_BLOCK_TASKS2 512
#define SPMVPORT_TILE_FLAG_BLOCK_TASKS4 1024
#define SPMVPORT_TILE_FLAG_BLOCK_TASKS8 2048
#define SPMVPORT_TILE_BLOCK_TASKS_MAX_THREADS 256 /* bk x W at most this */
/* Tasks a tile row has under BLOCK_TASKS2 / 4 / 8: 1 without them. */
static inline int spmvport_tile_block_tasks(int64_t flags)
{
    return (flags & SPMVPORT_TILE_FLAG_BLOCK_TASKS8)   ? 8
           : (flags & SPMVPORT_TILE_FLAG_BLOCK_TASKS4) ? 4
           : (flags & SPMVPORT_TILE_FLAG_BLOCK_TASKS2) ? 2
                                                       : 1;
}
/* Resident threads an SM the inline kernel with x by shuffles is compiled for: 48, 40 or 64 registers a thread. */
#define SPMVPORT_TILE_THREADS_REGS48 1280
#define SPMVPORT_TILE_THREADS_REGS40 1536
#define SPMVPORT_TILE_THREADS_REGS64 1024 /* f64 with steps of 16 (32 registers of values) */

/* Entries a step of the shuffled CSR loop from a plan's flags: 0 without x by shuffles, else 3, 4, 6, 9 or 16. */
static inline int spmvport_tile_shuffle_step(int64_t flags)
{
    return !(flags & SPMVPORT_TILE_FLAG_CSR_SHUFFLE) ? 0
           : !(flags & SPMVPORT_TILE_FLAG_CSR_STEP3) ? ((flags & SPMVPORT_TILE_FLAG_CSR_STEP16) ? 16 : 4)
           : (flags & SPMVPORT_TILE_FLAG_CSR_STEP9)  ? 9
           : (flags & SPMVPORT_TILE_FLAG_CSR_STEP6)  ? 6
                                                     : 3;
}
#define SPMVPORT_TILE_MAX_BAND_TASKS 8

/* Fields of a task record and of a split record. */
enum { SPMVPORT_TILE_TASK_FIRST = 0, SPMVPORT_TILE_TASK_ROW = 1, SPMVPORT_TILE_TASK_CARRY = 2,
       SPMVPORT_TILE_TASK_FIELDS = 3 };
enum { SPMVPORT_TILE_SPLIT_ROW = 0, SPMVPORT_TILE_SPLIT_CARRY = 1, SPMVPORT_TILE_SPLIT_FIELDS = 2 };

#endif /* SPMVPORT_FORMAT_TILE_H */
