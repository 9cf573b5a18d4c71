/*
 * format_csr.c -- the CSR baselines: csr_scalar, csr_vector, csr_lb and the vendor library share plain CSR.
 *
 * csr_lb adds the nnz split: the non-zeros are cut into chunks of C = nnz_per_warp entries, one warp each. A
 * chunk writes the rows that start in it; the row it opens inside of (started in an earlier chunk) is its carry:
 * it leaves that row's partial sum in carry_val/carry_row, and a fix-up pass adds the carries in chunk order
 * (deterministic). The arrays are described at spmvport_lb_add_arrays below and in backend.h.
 */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "format_builders.h"

int spmvport_csr_vector_lanes(int32_t m, int32_t nnz, int warp_size)
{
    double avg = m > 0 ? (double)nnz / m : 0.0;
    int lanes = avg < 4 ? 2 : avg < 8 ? 4 : avg < 16 ? 8 : avg < 32 ? 16 : avg < 64 ? 32 : 64;
    return lanes > warp_size ? warp_size : lanes;
}

/* memcpy in slices over the OpenMP threads (format_builders.h) */
void spmvport_parallel_copy(void *dst, const void *src, size_t bytes)
{
    if (dst == NULL || bytes == 0) return;
    const size_t slice = (size_t)1 << 22;
    const long long slices = (long long)((bytes + slice - 1) / slice);
#pragma omp parallel for schedule(static)
    for (long long k = 0; k < slices; k++) {
        size_t off = (size_t)k * slice, len = bytes - off < slice ? bytes - off : slice;
        memcpy((char *)dst + off, (const char *)src + off, len);
    }
}

/* ---- the load-balanced split (csr_lb, and tile's deferred part) ------------------------------------------------
 * Rows are numbered among the non-empty rows ("compact rows"), so no chunk ever walks an empty row: a bit per entry
 * says where a row starts, and a warp finds the row of every entry by counting bits (popcount and a warp scan),
 * never by searching the row pointer. Empty rows are listed and written y = beta*y by a pass of their own. */
spmv_status_t spmvport_lb_add_arrays(spmvport_format_data *fd, const int32_t *row_ptr, int32_t m, int64_t nnz,
                                     int64_t chunk, size_t vsize, int64_t *nwarps_out, int64_t *nempty_out)
{
    const int64_t nwarps = nnz > 0 ? (nnz + chunk - 1) / chunk : 1;
    int64_t nempty = 0;
    for (int32_t r = 0; r < m; r++) nempty += row_ptr[r + 1] == row_ptr[r];
    const size_t bits_bytes = (((size_t)nnz + 7) / 8 + 15) / 16 * 16 + 16; /* 16-byte multiple, never empty */
    const size_t ncompact = nempty > 0 ? (size_t)(m - nempty) : 0;
    int32_t *chunk_row = spmvport_malloc_array((size_t)nwarps, sizeof(int32_t));
    uint8_t *bits = spmvport_calloc_array(bits_bytes, 1);
    int32_t *row_map = spmvport_malloc_array(ncompact, sizeof(int32_t));
    int32_t *empty_rows = spmvport_malloc_array((size_t)nempty, sizeof(int32_t));
    /* add_array takes ownership (and frees on failure), so every array is handed over before any is checked */
    spmv_status_t st[SPMVPORT_LB_NARRAYS];
    st[SPMVPORT_LB_CHUNK_ROW] = spmvport_format_add_array(fd, "lb_chunk_row", chunk_row,
                                                          (size_t)nwarps * sizeof(int32_t), 0);
    st[SPMVPORT_LB_CARRY_VAL] = spmvport_format_add_array(fd, "lb_carry_val",
                                                          spmvport_calloc_array((size_t)nwarps, vsize),
                                                          (size_t)nwarps * vsize, 0);
    st[SPMVPORT_LB_CARRY_ROW] = spmvport_format_add_array(fd, "lb_carry_row",
                                                          spmvport_calloc_array((size_t)nwarps, sizeof(int32_t)),
                                                          (size_t)nwarps * sizeof(int32_t), 0);
    st[SPMVPORT_LB_START_BITS] = spmvport_format_add_array(fd, "lb_start_bits", bits, bits_bytes, 0);
    st[SPMVPORT_LB_ROW_MAP] = spmvport_format_add_array(fd, "lb_row_map", row_map, ncompact * sizeof(int32_t), 0);
    st[SPMVPORT_LB_EMPTY_ROWS] = spmvport_format_add_array(fd, "lb_empty_rows", empty_rows,
                                                           (size_t)nempty * sizeof(int32_t), 0);
    for (int k = 0; k < SPMVPORT_LB_NARRAYS; k++)
        if (st[k] != SPMV_STATUS_SUCCESS) return st[k];

    /* start bits, row map, empty list; and chunk_row: chunk w (w >= 1) opens inside the compact row holding
     * entry w*chunk - 1, found by walking the rows and the chunk starts together */
    int64_t w = 1, compact = 0, ne = 0;
    chunk_row[0] = -1;
    for (int32_t r = 0; r < m; r++) {
        const int64_t start = row_ptr[r], stop = row_ptr[r + 1];
        if (stop == start) {
            empty_rows[ne++] = r;
            continue;
        }
        bits[start >> 3] |= (uint8_t)(1u << (start & 7));
        if (ncompact > 0) row_map[compact] = r;
        while (w < nwarps && w * chunk - 1 < stop) chunk_row[w++] = (int32_t)compact;
        compact++;
    }
    *nwarps_out = nwarps;
    *nempty_out = nempty;
    return SPMV_STATUS_SUCCESS;
}

/* The default chunk. On a GPU: as long as still gives every warp slot of the device LB_WAVES chunks (resident warps
 * estimated as 2048 threads per multiprocessor), between one tile (8W) and 64W entries, a multiple of 8W: fewer,
 * longer chunks pay the per-chunk set-up and the carry less often (H200, f64: circuit 0.77x -> 0.94x cuSPARSE from
 * 256 to 2048 entries), and the cap keeps a few long chunks from ending last. On the CPU: one tile. */
#define LB_WAVES 2
int64_t spmvport_lb_default_chunk(int64_t nnz, const spmv_device_info_t *dev, int warp)
{
    const int64_t tile = 8 * (int64_t)warp;
    if (dev == NULL || dev->backend == SPMV_BACKEND_CPU || dev->multiprocessors <= 0) return tile;
    const int64_t slots = (int64_t)dev->multiprocessors * (2048 / warp) * LB_WAVES;
    int64_t chunk = (nnz / slots + tile - 1) / tile * tile;
    return chunk < tile ? tile : chunk > 8 * tile ? 8 * tile : chunk;
}

static spmv_status_t add_lb_split(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                  const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
    const int64_t chunk =
        opt->nnz_per_warp > 0 ? opt->nnz_per_warp : spmvport_lb_default_chunk(A->nnz, dev, fd->warp_size);
    /* plan.c has checked that an explicit chunk is a multiple of the warp size, hence of 8 (whole bit bytes) */
    int64_t nwarps = 0, nempty = 0;
    spmv_status_t st = spmvport_lb_add_arrays(fd, A->row_ptr, A->m, A->nnz, chunk,
                                              spmvport_value_size(A->precision), &nwarps, &nempty);
    fd->params[SPMVPORT_P_NNZ_PER_WARP] = chunk;
    fd->params[SPMVPORT_P_NWARPS] = nwarps;
    fd->params[SPMVPORT_P_LB_EMPTY] = nempty;
    if (st != SPMV_STATUS_SUCCESS)
        spmvport_msg(msg, msglen, "out of host memory building the csr_lb split of %d rows, %d entries", A->m,
                     A->nnz);
    return st;
}

/* ---- csr_lb's hot columns (options.lb_hot) ----------------------------------------------------------------------
 * A power-law graph reads a few columns very often, but they lie spread over x: every read of one costs a 32-byte
 * sector of L2 traffic for 8 (f64) or 4 (f32) useful bytes, and L1 cannot keep them (kron:20:16's 6112 most read
 * columns lie in 5845 different 128-byte lines, docs/formats/hbp.md). Copied into a compact array at the start of
 * every call (a gather of nhot values), 4 or 8 of them share a sector. The columns are chosen by read count (ties:
 * the lower column), stored in ascending order, and their entries' columns become -1 - (index in the copy). The
 * automatic rule and its measurements: docs/formats/csr.md "Hot columns". */
#define LB_HOT_MIN_NNZ (1 << 20)   /* below this the gather's launch costs more than the sectors save */
#define LB_HOT_MIN_SHARE 4         /* the automatic rule wants the hot columns to hold >= 1/4 of the entries */
#define LB_HOT_COUNT_CAP (1 << 16) /* read counts are bucketed up to this; more share the last bucket */

/* spmv_matrix_create_csr checks every matrix the public API makes; builders reached through the internal
 * spmvport_format_build check again what they index by before they do (see format_builders.h). */
spmv_status_t spmvport_check_csr_rows(const spmv_matrix_t *A, const char *who, char *msg, size_t msglen)
{
    if (A->m < 0 || A->n < 0 || A->nnz < 0 || A->row_ptr == NULL ||
        (A->nnz > 0 && (A->col_idx == NULL || A->values == NULL))) {
        spmvport_msg(msg, msglen, "%s: invalid matrix (m=%d n=%d nnz=%d, or a NULL array)", who, A->m, A->n, A->nnz);
        return SPMV_STATUS_INVALID_MATRIX;
    }
    if (A->row_ptr[0] != 0 || A->row_ptr[A->m] != A->nnz) {
        spmvport_msg(msg, msglen, "%s: row_ptr[0] = %d, row_ptr[m] = %d; expected 0 and nnz = %d", who, A->row_ptr[0],
                     A->row_ptr[A->m], A->nnz);
        return SPMV_STATUS_INVALID_MATRIX;
    }
    for (int32_t i = 0; i < A->m; i++)
        if (A->row_ptr[i + 1] < A->row_ptr[i]) {
            spmvport_msg(msg, msglen, "%s: row_ptr decreases at row %d", who, i);
            return SPMV_STATUS_INVALID_MATRIX;
        }
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmvport_check_csr_ranges(const spmv_matrix_t *A, const char *who, char *msg, size_t msglen)
{
    const spmv_status_t rows = spmvport_check_csr_rows(A, who, msg, msglen);
    if (rows != SPMV_STATUS_SUCCESS) return rows;
    int64_t bad = -1;
#pragma omp parallel for schedule(static) reduction(max : bad)
    for (int32_t k = 0; k < A->nnz; k++)
        if (A->col_idx[k] < 0 || A->col_idx[k] >= A->n) bad = k > bad ? k : bad;
    if (bad >= 0) {
        spmvport_msg(msg, msglen, "%s: column index %d at entry %lld is outside 0..%d", who, A->col_idx[bad],
                     (long long)bad, A->n - 1);
        return SPMV_STATUS_INVALID_MATRIX;
    }
    return SPMV_STATUS_SUCCESS;
}

/* Each column's read count, parallel (csr_lb's hot columns, hbp's: format_builders.h). Each thread counts its
 * slice of the entries into a copy of its own with plain increments, and the copies are summed by column: 3.4x
 * faster than atomic increments into one array on kron:20:16 (61 -> 18 ms, 2 threads). The copies are allowed as
 * many counts as the matrix has entries, (threads - 1) n <= nnz; past that one array is counted atomically. */
uint32_t *spmvport_column_reads(const spmv_matrix_t *A)
{
    const int64_t n = A->n, nnz = A->nnz;
    int copies = 1;
#ifdef _OPENMP
    copies = omp_get_max_threads();
    if (copies > 1 && (int64_t)(copies - 1) * n > nnz) copies = 1;
#endif
    uint32_t *count = spmvport_calloc_array((size_t)copies * (size_t)n, sizeof(uint32_t));
    if (count == NULL) return NULL;
    const uint32_t un = (uint32_t)n;
    if (copies == 1) {
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < nnz; k++) {
            const uint32_t c = (uint32_t)A->col_idx[k];
            if (c < un) { /* hbp counts before its builder checks the columns: out-of-range ones are refused there */
#pragma omp atomic
                count[c]++;
            }
        }
        return count;
    }
    int team = 1; /* the threads the runtime gave (at most copies) */
#pragma omp parallel num_threads(copies)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#pragma omp single
        team = omp_get_num_threads(); /* single ends in a barrier: every thread sees team below */
#endif
        uint32_t *mine = count + (size_t)t * (size_t)n;
        for (int64_t k = nnz * t / team, end = nnz * (t + 1) / team; k < end; k++) {
            const uint32_t c = (uint32_t)A->col_idx[k];
            if (c < un) mine[c]++;
        }
#pragma omp barrier
#pragma omp for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            uint32_t sum = count[j];
            for (int u = 1; u < team; u++) sum += count[(size_t)u * (size_t)n + (size_t)j];
            count[j] = sum;
        }
    }
    uint32_t *fit = realloc(count, (size_t)(n > 0 ? n : 1) * sizeof(uint32_t)); /* the copies are spent */
    return fit != NULL ? fit : count;
}

/* The hot columns options.lb_hot asks for (0: the automatic rule), chosen from A's read counts: returns their count
 * (0: none), or -1 when out of host memory. With hot_out, *hot_out receives them ascending and *index_out (n
 * entries) each column's index among them, -1 for the others (the caller frees both; NULL when none).
 * reads: NULL, or the caller's cache of spmvport_column_reads(A) (used when set, set when the rule counts). */
int64_t spmvport_lb_hot_columns(const spmv_matrix_t *A, int lb_hot, uint32_t **reads, int32_t **hot_out,
                                int32_t **index_out)
{
    const int64_t n = A->n, nnz = A->nnz, automatic = SPMVPORT_HOT_AUTO_BYTES / (int64_t)spmvport_value_size(A->precision);
    int64_t want = lb_hot > 0 ? lb_hot : lb_hot == 0 ? automatic : 0;
    if (lb_hot == 0 && (nnz < LB_HOT_MIN_NNZ || n < 4 * automatic)) want = 0;
    if (want > n) want = n;
    if (hot_out) *hot_out = NULL, *index_out = NULL;
    if (want <= 0) return 0;
    if (reads != NULL && *reads == NULL && (*reads = spmvport_column_reads(A)) == NULL) return -1;
    /* count becomes the index map below: a copy of the caller's reads */
    uint32_t *count = reads ? spmvport_malloc_array((size_t)n, sizeof(uint32_t)) : spmvport_column_reads(A);
    uint32_t *hist = spmvport_calloc_array(LB_HOT_COUNT_CAP + 1, sizeof(uint32_t));
    int32_t *hot = NULL;
    int64_t nhot = 0, hot_entries = 0;
    if (count == NULL || hist == NULL) goto oom;
    if (reads) memcpy(count, *reads, (size_t)n * sizeof(uint32_t));
    for (int64_t j = 0; j < n; j++) hist[count[j] < LB_HOT_COUNT_CAP ? count[j] : LB_HOT_COUNT_CAP]++;
    /* the smallest t >= 2 with at most `want` columns read t times or more; then columns read t - 1 times (t - 1 >=
     * 2), lowest first, while room is left */
    int64_t t = LB_HOT_COUNT_CAP + 1, above = 0; /* counts at or past the cap share the last bucket */
    while (t > 2 && above + hist[t - 1] <= want) above += hist[--t];
    int64_t extra = t - 1 >= 2 ? want - above : 0;
    if (above + extra > 0 && (hot = spmvport_malloc_array((size_t)(above + extra), sizeof(int32_t))) == NULL) goto oom;
    int32_t *index = (int32_t *)count; /* count[j] becomes column j's index among the hot columns, or -1 */
    for (int64_t j = 0; j < n; j++) {
        const uint32_t c = count[j];
        const int64_t b = c < LB_HOT_COUNT_CAP ? c : LB_HOT_COUNT_CAP;
        const int take = b >= t || (b == t - 1 && extra > 0 && extra--);
        if (take) hot_entries += c, hot[nhot] = (int32_t)j;
        index[j] = take ? (int32_t)nhot++ : -1;
    }
    if (lb_hot == 0 && hot_entries * LB_HOT_MIN_SHARE < nnz) nhot = 0; /* too few reads to pay */
    free(hist);
    if (hot_out && nhot > 0) {
        *hot_out = hot, *index_out = index;
    } else {
        free(hot);
        free(count);
    }
    return nhot;
oom:
    free(count);
    free(hist);
    free(hot);
    return -1;
}

void spmvport_relabel_hot_columns(int32_t *dst, const int32_t *src, int64_t nnz, const int32_t *index)
{
#pragma omp parallel for schedule(static)
    for (int64_t e = 0; e < nnz; e++) {
        const int32_t c = src[e], h = index[c], cold = h >> 31; /* all ones where h = -1 */
        dst[e] = (c & cold) | ((-1 - h) & ~cold);
    }
}

/* csr_lb's hot-column arrays: hot holds nhot >= 0 columns (taken over; NULL when none), whose entries the copy of
 * the columns has relabelled (spmvport_build_csr) */
static spmv_status_t add_lb_hot(spmvport_format_data *fd, const spmv_matrix_t *A, int64_t nhot, int32_t *hot,
                                char *msg, size_t msglen)
{
    fd->params[SPMVPORT_P_LB_HOT] = nhot;
    const size_t vsize = spmvport_value_size(A->precision);
    /* both arrays, empty without hot columns */
    if (nhot == 0) hot = spmvport_malloc_array(0, sizeof(int32_t));
    spmv_status_t st = spmvport_format_add_array(fd, "lb_hot", hot, (size_t)nhot * sizeof(int32_t), 0);
    if (st == SPMV_STATUS_SUCCESS)
        st = spmvport_format_add_array(fd, "lb_hot_x", spmvport_calloc_array((size_t)nhot, vsize),
                                       (size_t)nhot * vsize, 0);
    if (st != SPMV_STATUS_SUCCESS)
        spmvport_msg(msg, msglen, "out of host memory for csr_lb's hot columns (%lld of %d columns)", (long long)nhot,
                     A->n);
    return st;
}

spmv_status_t spmvport_build_csr(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                 const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
    spmv_status_t bad = spmvport_check_csr_ranges(A, spmv_format_name(fd->format), msg, msglen);
    if (bad != SPMV_STATUS_SUCCESS) return bad; /* the kernels read x at these columns */
    const int lb = fd->format == SPMV_FORMAT_CSR_LB;
    if (lb && opt->lb_hot < -1) {
        spmvport_msg(msg, msglen, "csr_lb: options.lb_hot = %d; expected 0 (automatic), -1 (none) or k > 0 (at most k "
                     "hot columns)", opt->lb_hot);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    /* csr_lb chooses its hot columns first, so that the copy of the columns relabels their entries in its one pass */
    int32_t *hot = NULL, *index = NULL;
    int64_t nhot = 0;
    spmvport_hot_choice *chosen = fd->auto_hot; /* AUTO counted them already: the same rule, lb_hot = 0 */
    if (lb && opt->lb_hot == 0 && chosen != NULL && chosen->hot != NULL) {
        nhot = chosen->nhot, hot = chosen->hot, index = chosen->index;
        chosen->hot = chosen->index = NULL;
    } else if (lb) {
        nhot = spmvport_lb_hot_columns(A, opt->lb_hot, NULL, &hot, &index);
    }
    if (nhot < 0) {
        spmvport_msg(msg, msglen, "out of host memory choosing csr_lb's hot columns (%d columns, %d entries)", A->n,
                     A->nnz);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    size_t vsize = spmvport_value_size(A->precision);
    size_t ptr_bytes = ((size_t)A->m + 1) * sizeof(int32_t);
    size_t col_bytes = (size_t)A->nnz * sizeof(int32_t), val_bytes = (size_t)A->nnz * vsize;
    void *ptr = spmvport_malloc_array((size_t)A->m + 1, sizeof(int32_t));
    int32_t *col = spmvport_malloc_array((size_t)A->nnz, sizeof(int32_t));
    void *val = spmvport_malloc_array((size_t)A->nnz, vsize);
    spmvport_parallel_copy(ptr, A->row_ptr, ptr_bytes);
    if (index != NULL && col != NULL)
        spmvport_relabel_hot_columns(col, A->col_idx, A->nnz, index);
    else
        spmvport_parallel_copy(col, A->col_idx, col_bytes);
    free(index);
    spmvport_parallel_copy(val, A->values, val_bytes);
    spmv_status_t st = spmvport_format_add_array(fd, "row_ptr", ptr, ptr_bytes, 0);
    if (st == SPMV_STATUS_SUCCESS) st = spmvport_format_add_array(fd, "col_idx", col, col_bytes, 0);
    else free(col);
    if (st == SPMV_STATUS_SUCCESS) st = spmvport_format_add_array(fd, "values", val, val_bytes, 1);
    else free(val);
    if (st != SPMV_STATUS_SUCCESS) {
        free(hot);
        spmvport_msg(msg, msglen, "out of host memory building CSR arrays for %d rows, %d entries", A->m, A->nnz);
        return st;
    }
    fd->value_slots = A->nnz;
    if (lb) {
        if ((st = add_lb_split(fd, A, dev, opt, msg, msglen)) != SPMV_STATUS_SUCCESS) {
            free(hot);
            return st;
        }
        if ((st = add_lb_hot(fd, A, nhot, hot, msg, msglen)) != SPMV_STATUS_SUCCESS) return st;
    }
    if (fd->format == SPMV_FORMAT_CSR_VECTOR) {
        int lanes = opt->lanes_per_row > 0 ? opt->lanes_per_row : spmvport_csr_vector_lanes(A->m, A->nnz,
                                                                                            fd->warp_size);
        fd->params[SPMVPORT_P_LANES] = lanes;
        spmvport_msg(fd->stats, sizeof fd->stats, "lanes_per_row=%d", lanes);
    } else if (fd->format == SPMV_FORMAT_CSR_LB) {
        spmvport_msg(fd->stats, sizeof fd->stats, "nnz_per_warp=%lld;warps=%lld;empty_rows=%lld;hot=%lld",
                     (long long)fd->params[SPMVPORT_P_NNZ_PER_WARP], (long long)fd->params[SPMVPORT_P_NWARPS],
                     (long long)fd->params[SPMVPORT_P_LB_EMPTY], (long long)fd->params[SPMVPORT_P_LB_HOT]);
    } else if (fd->format == SPMV_FORMAT_VENDOR) {
        fd->params[SPMVPORT_P_VENDOR_ALG] = opt->vendor_alg;
        fd->deterministic = 0; /* cuSPARSE/hipSPARSE give no bitwise guarantee for every algorithm */
        spmvport_msg(fd->stats, sizeof fd->stats, "vendor_alg=%d", opt->vendor_alg);
    }
    return SPMV_STATUS_SUCCESS;
}
