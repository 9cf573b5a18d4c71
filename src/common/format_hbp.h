/*
 * format_hbp.h -- format hbp (hash-based 2-D partition): array and parameter slots shared by the host builder
 * (format_hbp.c), the CPU executor (cpu_ref/hbp_executor.c) and the GPU kernels (device/hbp_kernels.h).
 *
 * Plain C, no CUDA or HIP type: it is included from .c, .cu and .hip translation units. docs/formats/hbp.md
 * describes the layout in full; in short:
 *
 *   The matrix is cut into blocks of block_rows x block_cols. A row segment is the part of one row inside one
 *   block, cut every params[HBP_P_MAX_SEG] entries, the last piece of a long one into whole warp trips and a short tail
 *   (empty segments are not stored). Inside a block the short segments are
 *   put in the order of the nonlinear hash of their length and cut into warp groups of W segments (one lane
 *   each, entries stored column-major: the first entries of the group's rows, then the second ones, ...); each
 *   long segment is a unit of its own that the whole warp strides over. Units of the same column block are
 *   packed into tasks; one thread block (HBP_CTA_THREADS threads) runs a task with the task's x window in shared
 *   memory (when it is dense enough to pay) or reading x through the read-only cache, one warp per unit.
 */
#ifndef SPMVPORT_FORMAT_HBP_H
#define SPMVPORT_FORMAT_HBP_H

#include <stdint.h>

/* ===========================================================================================================
 * Array slots (fd->arrays[...])
 * ========================================================================================================= */
enum {
    HBP_A_COL = 0,       /* uint16 [nnz] (col_bytes 2) or int32 [nnz] (col_bytes 4, blocks wider than 65536):
                            column - column_block * block_cols, in layout order */
    HBP_A_VAL = 1,       /* T [nnz]          values in layout order (the only is_values array) */
    HBP_A_UNIT_PTR = 2,  /* int32 [nunits+1] first entry of each unit (the paper's begin_nnz, per unit); the
                            kernels and the executor read it from HBP_A_UNIT_INFO */
    HBP_A_UNIT_SLOT = 3, /* int32 [nunits+1] first slot of each unit; 1 slot: warp-strided unit, 2..W: a group
                            (also in HBP_A_UNIT_INFO) */
    HBP_A_SEG_LEN = 4,   /* uint16 [nslots]  entries of the slot's row segment (replaces add_sign/zero_row);
                            not read for a unit whose header gives the length (HBP_U_SHAPE) */
    HBP_A_SEG_OUT = 5,   /* uint16 [nslots]  a narrow unit's output_hash: its row is HBP_U_OUT + this (0 in the
                            slots of wide units); see hbp_slot_output */
    HBP_A_TASK = 6,      /* int32 [HBP_TASK_INTS * ntasks]: see HBP_T_* */
    HBP_A_FIX_ROW = 7,   /* int32 [nfix]     rows with 0 segments (the first params[HBP_P_NEMPTY]), then rows
                            with >= 2 segments, each part ascending */
    HBP_A_PART_PTR = 8,  /* int32 [nfix+1]   combine 1: partials of fix row f are [part_ptr[f], part_ptr[f+1]) */
    HBP_A_PARTIAL = 9,   /* T [nparts]       combine 1: per-segment partial sums, written by every execute; a fix
                            row's partials are consecutive, in column-block order */
    HBP_A_SCHED = 10,    /* int32 [2]        ticket and done counter of the competitive part; zero between
                            calls (the last thread block of every call resets them) */
    HBP_A_HOT = 11,      /* int32 [nhot]     hot columns: every thread block copies x[hot[i]] into shared memory
                            once per call (or a gather kernel into HBP_A_HOT_X, ascending columns); an int32
                            column c < 0 reads that copy at -1 - c. nhot = bytes / 4;
                            non-zero only with 32-bit columns, one column block and no staged task, so x's
                            shared-memory copy is the hot one alone */
    HBP_A_PART_FIX = 12, /* int32 [nparts]   combine 1: the fix row f (index into fix_row) of each partial */
    HBP_A_FIX_COUNT = 13, /* int32 [nfix - nempty] combine 1: partials written so far in this call, per fix row
                            past the empty ones; the segment that writes a row's last partial sums them into y
                            and puts the count back to zero for the next call */
    HBP_A_UNIT_INFO = 14, /* int32 [HBP_UNIT_INFO_INTS * nunits] each unit's header, one 16-byte load: HBP_U_* */
    HBP_A_WIDE_OUT = 15, /* int32 [wide slots] the output_hash of the wide units' slots, unit after unit: >= 0 the
                            row, written directly (its only segment); < 0: -1 - t, t a partial index (combine 1) or
                            a row (combine 2, atomics) */
    HBP_A_HOT_X = 16,    /* T [nhot or 0]    the global hot copy (options.hbp_hot_copy = 2): x[hot[i]] at i,
                            written by a gather kernel before the SpMV kernel every call; empty when the copy is
                            in shared memory (or there is none) */
    HBP_NARRAYS = 17
};

/* A unit's header in HBP_A_UNIT_INFO: what the kernel needs to start the unit, in one 16-byte load (three loads
 * of unit_slot and unit_ptr before session 13). Narrow units (every slot writes its row directly, the rows
 * within 65535 of the smallest: every group of a block of at most 65536 rows without a cut row) keep their
 * outputs in 16 bits (seg_out); the rest are wide (wide_out, 32 bits). A unit whose slots all hold as many
 * entries (a uniform group, or a long unit) gives that count, so the kernel reads no seg_len for it and needs no
 * shuffle and ballot to find that it is uniform. circuit:5000000: 18 of the 280 MB a call read (f32). */
enum {
    HBP_U_PTR = 0,   /* first entry (unit_ptr[u]) */
    HBP_U_SLOT = 1,  /* first slot s0 (unit_slot[u]) */
    HBP_U_SHAPE = 2, /* slots (1..64) | (common length + 1) << 8: the length every slot has, or -1 when they differ
                        (read seg_len); HBP_SHAPE_LANES, HBP_SHAPE_LEN */
    HBP_U_OUT = 3,   /* >= 0: narrow, slot s writes row HBP_U_OUT + seg_out[s]; < 0: wide, slot s0 + l's
                        output_hash is wide_out[-1 - HBP_U_OUT + l] */
    HBP_UNIT_INFO_INTS = 4
};
#define HBP_SHAPE(lanes, len) ((int32_t)(lanes) | ((int32_t)(len) + 1) << 8)
#define HBP_SHAPE_LANES(shape) ((shape) & 0xff)
#define HBP_SHAPE_LEN(shape) (((shape) >> 8) - 1)

/* Arrays the builder and the tests keep on the host only (spmvport_array.host_only): no kernel nor the executor
 * reads them since the unit headers (HBP_A_UNIT_INFO) carry their values. */
static inline int hbp_host_only(int slot) { return slot == HBP_A_UNIT_PTR || slot == HBP_A_UNIT_SLOT; }

/* The output_hash of slot s of unit u (first slot s0): what the kernel and the CPU executor store to. */
static inline int32_t hbp_slot_output(const int32_t *unit_info, const uint16_t *seg_out, const int32_t *wide_out,
                                      int32_t u, int32_t s0, int32_t s)
{
    const int32_t base = unit_info[(int64_t)u * HBP_UNIT_INFO_INTS + HBP_U_OUT];
    return base >= 0 ? base + (int32_t)seg_out[s] : wide_out[-1 - base + (s - s0)];
}

/* The entries of slot s of unit u. */
static inline int32_t hbp_slot_len(const int32_t *unit_info, const uint16_t *seg_len, int32_t u, int32_t s)
{
    const int32_t len = HBP_SHAPE_LEN(unit_info[(int64_t)u * HBP_UNIT_INFO_INTS + HBP_U_SHAPE]);
    return len >= 0 ? len : (int32_t)seg_len[s];
}

/* A task's record in HBP_A_TASK. */
enum {
    HBP_T_UNIT_BEGIN = 0, /* units [unit_begin, unit_end) */
    HBP_T_UNIT_END = 1,
    HBP_T_XBASE = 2,      /* first column of the task's column block */
    HBP_T_STAGE_LO = 3,   /* shared-memory window: local columns [lo, lo + len) */
    HBP_T_STAGE_LEN = 4,  /* 0: not staged, x is read from global memory */
    HBP_T_Y_LO = 5,       /* staged y (options.hbp_y_stage): rows [y_lo, y_lo + y_len) summed in shared memory ... */
    HBP_T_Y_LEN = 6,      /* ... and written in order at the task's end; 0: not staged, each row stored directly */
    HBP_TASK_INTS = 7
};

/* ===========================================================================================================
 * Parameter slots (fd->params[...])
 * ========================================================================================================= */
enum {
    HBP_P_BLOCK_ROWS = 0,
    HBP_P_BLOCK_COLS = 1,
    HBP_P_NTASKS = 2,
    HBP_P_NUNITS = 3,
    HBP_P_NSLOTS = 4,
    HBP_P_NFIX = 5,
    HBP_P_NPARTS = 6,
    HBP_P_COMBINE = 7,     /* 1: partial vectors + combine pass (deterministic); 2: atomics */
    HBP_P_STAGE_COLS = 8,  /* longest staged window: dynamic shared memory = stage_cols * sizeof(T) */
    HBP_P_GRID = 9,        /* thread blocks the layout was planned for (any grid is correct) */
    HBP_P_NBLOCKS = 10,    /* non-empty matrix blocks */
    HBP_P_COL_BYTES = 11,  /* 2: HBP_A_COL is uint16 (block_cols <= 65536); 4: int32 (wider blocks) */
    HBP_P_STEPS = 12,      /* 2, 4 or 8: steps of a warp group per kernel loop trip (entries a lane loads ahead) */
    HBP_P_PREFETCH = 13,   /* trips (0 .. HBP_MAX_PREFETCH) a warp prefetches into L2 beyond the trip it loads */
    HBP_P_SPLIT_TAILS = 14, /* 1: long runs' last pieces are cut into whole trips and a tail (format_hbp.c) */
    HBP_P_CTAS = 15,       /* resident blocks per multiprocessor the kernel is compiled for (CUDA launch bounds)
                              and the grid is planned for: one of HBP_CTAS_OPTION(steps, 0..2). The hot column
                              count is HBP_A_HOT's length */
    HBP_P_MAX_SEG = 16,    /* a row's run in a block is cut every max_seg entries: HBP_MAX_SEG, or whole trips
                              of a long unit (k S W, options.hbp_unit_trips) on matrices too small to fill the
                              device, where the longest unit sets the time */
    HBP_P_NEMPTY = 17,     /* empty rows (no segment), fix rows [0, nempty): with tasks, the SpMV kernel's blocks
                              write them before their tasks, so they need no pass of their own */
    HBP_P_FIXED = 18,      /* fixed tasks per thread block when there are more tasks than blocks: block c runs
                              tasks [c * fixed, (c + 1) * fixed), the rest are taken with the ticket */
    HBP_P_TASK_BLOCKS = 19, /* 1: a thread block per task (the launch's grid is the task count, block c runs task
                              c; the hardware hands out the blocks past the resident ones, no ticket); 0: the
                              grid is HBP_P_GRID (at most the tasks) and the tasks past it are ticketed.
                              options.hbp_task_blocks */
    HBP_P_Y_ROWS = 20      /* longest staged y range (HBP_T_Y_LEN; 0: none): dynamic shared memory of
                              HBP_Y_STAGE_BYTES(y_rows, sizeof(T)) */
};

/* The SpMV kernel's grid (prm: fd->params): a block per task, or the planned resident grid, at most the tasks */
static inline int64_t hbp_launch_grid(const int64_t *prm)
{
    const int64_t ntasks = prm[HBP_P_NTASKS];
    return prm[HBP_P_TASK_BLOCKS] || prm[HBP_P_GRID] > ntasks ? ntasks : prm[HBP_P_GRID];
}

/* Hot columns of a layout (fd: a spmvport_format_data *): HBP_A_HOT's length */
#define HBP_NHOT(fd) ((int64_t)((fd)->arrays[HBP_A_HOT].bytes / sizeof(int32_t)))
/* Whether the hot copy is the global one (HBP_A_HOT_X), read through the caches, rather than each thread block's
 * in shared memory */
#define HBP_HOT_GLOBAL(fd) (HBP_NHOT(fd) > 0 && (fd)->arrays[HBP_A_HOT_X].bytes > 0)

#define HBP_CTA_THREADS 256 /* threads per thread block of the SpMV kernel: a multiple of every W */
/* Thread blocks per multiprocessor the kernel is compiled for (CUDA launch bounds) and the grid is planned for
 * (more would start late), by value size and steps per trip: 4 steps 3 in f64, 4 in f32 (at most 85 and 64
 * registers, what the pipeline needs without spilling); 8 steps (twice the entries in flight per lane) 2 in f64,
 * 3 in f32 (at most 128 and 85 registers); 2 steps 4 (64 registers). */
#define HBP_CTAS_PER_SM(value_bytes, steps)                                                                        \
    ((steps) == 8 ? ((value_bytes) == 8 ? 2 : 3) : (steps) == 4 ? ((value_bytes) == 8 ? 3 : 4) : 4)
/* The residencies options.hbp_ctas may ask for, i = 0..2, per steps per trip (each is a kernel instantiation,
 * so only three a step count: the ones around its register need). The default is always one of them. */
#define HBP_CTAS_OPTION(steps, i)                                                                                  \
    ((steps) == 8 ? 2 + (i) : (steps) == 4 ? ((i) == 2 ? 6 : 3 + (i)) : ((i) == 0 ? 4 : (i) == 1 ? 6 : 8))
static inline int hbp_ctas_compiled(int steps, int ctas)
{
    return ctas == HBP_CTAS_OPTION(steps, 0) || ctas == HBP_CTAS_OPTION(steps, 1) || ctas == HBP_CTAS_OPTION(steps, 2);
}
#define HBP_SMEM_DEFAULT 49152 /* shared memory per thread block without opt-in (and on the CPU) */
#define HBP_SMEM_RESERVED 256  /* static shared memory of the kernel */
#define HBP_SMEM_DYNAMIC_MAX (HBP_SMEM_DEFAULT - HBP_SMEM_RESERVED) /* the most a block's x window, hot copy or
                                                                      staged y may take */
/* A staged y range of `rows` rows in shared memory: the sums (T), then a byte a row saying it was written */
#define HBP_Y_STAGE_BYTES(rows, value_bytes) ((size_t)(rows) * ((size_t)(value_bytes) + 1))
/* The longest staged y range any plan holds (f32: 5 bytes a row) */
#define HBP_Y_STAGE_MAX_ROWS (HBP_SMEM_DYNAMIC_MAX / 5)
#define HBP_TOP_BUCKET 8    /* aggregation maps most row lengths into buckets 0..8 (the paper's range) */
#define HBP_NARROW_COLS 65536 /* widest column block with 16-bit local columns */
#define HBP_NARROW_ROWS 65535 /* largest row offset of a narrow unit's 16-bit outputs (HBP_U_OUT) */
#define HBP_MAX_SEG 1024    /* a row's run in a block is cut into segments of at most this many entries, so one
                               dense row is spread over several warps (and segment lengths fit 16 bits); the
                               default of params[HBP_P_MAX_SEG] */
#define HBP_MAX_PREFETCH 4  /* most trips of prefetch ahead (options.hbp_prefetch) */
#define HBP_COMBINE_PARTIALS 1
#define HBP_COMBINE_ATOMICS 2

/* Combine 1 inside the SpMV kernel (the writer of a fix row's last partial sums the row, HBP_A_FIX_COUNT) when
 * there are tasks and the partials are at most one per resident warp of the planned grid: each costs its writer a
 * memory fence, which on kron:20:16 (21860 partials, ~10 per warp) made the kernel 11% slower; else a combine pass
 * after the kernel. prm: fd->params. */
static inline int hbp_counted_combine(const int64_t *prm, int warp)
{
    const int64_t nparts = prm[HBP_P_NPARTS];
    return prm[HBP_P_COMBINE] == HBP_COMBINE_PARTIALS && prm[HBP_P_NTASKS] > 0 && nparts > 0 && warp > 0 &&
           nparts <= prm[HBP_P_GRID] * (HBP_CTA_THREADS / warp);
}

/* Task sizes (format_hbp.c, task_sizes): this share of the entries is the fixed part, in this many tasks per
 * thread block; the competitive part is cut into this many tasks per thread block. Position-order plans
 * (circuits past L2) cut half of the entries into 2 tasks per block and the other half into 6: with the ticket
 * (session 11, H200) smaller ticket tasks had made circuit:5000000 2% slower, where they made fem3d:3:48 7% and
 * kron:20:16 2-3% faster; with a thread block per task (session 25, H100, run OF) 6 instead of 2 made it 1.1%
 * faster in both precisions (4: f64 2.6% faster, f32 0.6% slower; 8 and 14 slower than 6). Plans in bin order
 * keep 8: 16 made stencil3d:7:160 2-4% slower (run OE). */
#define HBP_FIXED_SHARE 0.6
#define HBP_FIXED_TASKS 2
#define HBP_TICKET_TASKS 8
#define HBP_FIXED_SHARE_POSITION 0.5
#define HBP_TICKET_TASKS_POSITION 6

#endif /* SPMVPORT_FORMAT_HBP_H */
