/*
 * format_ehyb.c -- host builder of format ehyb: explicit caching hybrid (Chen, "Explicit caching HYB"), with
 * METIS partitioning, 16-bit local column indices in a sliced ELL part and an extra-rows (ER) part.
 *
 * Steps (the layout itself is described in format_ehyb.h and docs/formats/ehyb.md):
 *  1. part count: K x P parts (P multiprocessors, K the smallest integer with n * sizeof(value) / (K * P) below
 *     the shared-memory budget of a block, but at least the blocks resident per multiprocessor); a small matrix
 *     (fewer rows than those blocks' threads) gets at most one part per multiprocessor of >= 4 slices, and
 *     enough that each block's slices take one round of its warps; every x segment fits the budget and 16 bits;
 *  2. partition of the symmetrised pattern (vertex v = row v and column v; no self loops, weight 1 + the row's
 *     entries) with METIS k-way and a fixed seed; oversized parts are cut, empty ones dropped;
 *  3. renumbering by part, rows sorted by descending in-part count inside each part (symmetric for square A);
 *  4. sliced ELL of W-row slices (width from a byte-cost model, see slice_width); the rest of each row is extra-
 *     rows (ER) work: up to the slice's near width in the slice's own near-ER block (near_width), the remainder
 *     "far": short far rows as ER slices sorted by length, long ones cut into warp-sized chunks;
 *  5. conversion: values, indices and the value map, every row in parallel.
 * Rectangular matrices are supported: the graph has max(m, n) vertices; a vertex below m is a row, below n a
 * column, so a part owns rows and columns alike.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "format_builders.h"
#include "format_ehyb.h"

#ifdef SPMVPORT_HAVE_METIS
#include <metis.h>
#endif

#ifdef _OPENMP
#define EHYB_OMP(directive) _Pragma(directive)
#else
#define EHYB_OMP(directive)
#endif

/* Device figures assumed on the CPU backend (an A100-like GPU without the shared-memory opt-in). */
#define EHYB_DEFAULT_SMS 108
#define EHYB_DEFAULT_SHARED ((size_t)48 * 1024)
#define EHYB_DEFAULT_SEED 20240611
/* Fixed cost, in bytes, of moving a row's tail to the ER part (rank metadata, two partial slots, a ticket). */
#define EHYB_ER_ROW_BYTES 64.0
/* Cost, in bytes moved, of a row in the far ER part: its fences, ticket and partial sums (H200: ~800). On a small
 * matrix the far phase is a chain of round trips (counter, entries, fence, ticket, partials) after the slices,
 * on few busy warps, and every warp of the grid takes two tickets of one counter: there a row goes far only to
 * save a great deal of near-ER padding (a far phase with no work is skipped). */
#define EHYB_FAR_ROW_BYTES 768.0
#define EHYB_FAR_ROW_BYTES_SMALL 65536.0
/* Fewest slices of W rows in a part of a small matrix (see choose_part_count). */
#define EHYB_MIN_PART_SLICES 4
/* A column of another part joins a part's halo when the part's rows use it at least this often (part_halo). */
#define EHYB_HALO_MIN_USES 2
/* METIS is asked for parts of at least this many vertices on average (metis_partition). */
#define EHYB_METIS_MIN_PART_VERTICES 12

/* ==================================================================================================
 * Build state: every temporary lives here and is freed by build_free on every path.
 * ================================================================================================== */

typedef struct {
    /* inputs */
    const spmv_matrix_t *A;
    int W, plan_ordering, seed, batch, parts_option, halo_min, split_option;
    size_t vsize;
    int32_t nv; /* vertices: max(m, n) */
    /* step 1 */
    int P;
    int64_t K, target_parts, cap;
    int small; /* fewer rows than the threads of K x P blocks: the part count of a small matrix */
    int split_room; /* cap leaves room for the split's partial sums (one value per block thread) */
    size_t budget;
    /* step 2-3 */
    int32_t *part;    /* [nv] part of each vertex */
    int32_t nparts;
    double graph_ms, metis_ms, halo_ms, reorder_ms, convert_ms;
    /* "metis", "metis_unit_weights", "metis_cut" (cut_metis_parts) or "blocks" (METIS failed or was not needed) */
    const char *partitioner;
    /* step 2b */
    int32_t *halo_ptr;  /* [nparts+1] */
    int32_t *halo_v;    /* [halo_ptr[nparts]] per part, its halo vertices (columns of other parts), ascending */
    /* step 3 */
    int32_t *cnt_in;  /* [m] A row's entries whose column is in the row's part (0 if the segment > 16 bits) */
    int32_t *row_perm, *col_perm, *col_inv; /* [m], [n], [n] */
    int32_t *part_ptr;                      /* [4*(nparts+1)] */
    int32_t *halo;                          /* [halo_ptr[nparts]] staged x index of each halo entry */
    unsigned char *seg_fits;                /* [nparts] */
    int32_t seg_max;
    /* step 4 */
    int32_t nslices;
    int32_t *ell_ptr;   /* [2*(nslices+1)] first ELL slot, first near-ER slot */
    int32_t *ell_len;   /* [m] per plan row: entries in the ELL slice */
    int32_t *near_len;  /* [m] per plan row: entries in the slice's near-ER block */
    int32_t *er_len;    /* [m] per plan row: entries in the far ER part */
    int64_t ell_nnz, near_nnz;
    int32_t width_min, width_max, near_width_max, near_slots, split;
    int32_t *rank_of;   /* [m] per plan row, -1 without ER entries */
    int32_t n_er, n_long, n_chunks, n_er_slices;
    int32_t *er_meta;   /* [2*(n_er+1)] */
    int32_t *pos_base, *pos_stride; /* [n_er] where rank e's t-th ER entry lies: base + t*stride */
    int32_t *er_work;   /* [4*chunks + er_slices+1 + 2*W*er_slices] */
    int64_t er_work_len;
    int32_t ell_slots, er_slots, partial_slots;
    /* step 5 */
    uint64_t *slice_er;
    uint16_t *ell_col;
    void *ell_val, *er_val, *partial;
    int32_t *er_col, *sync, *value_map;
} ehyb_build;

/* Everything up to the builder needs METIS: without it the builder only refuses (no unused code is compiled). */
#ifdef SPMVPORT_HAVE_METIS

static void build_free(ehyb_build *b)
{
    void *owned[] = {b->part, b->halo_ptr, b->halo_v, b->halo, b->cnt_in, b->row_perm, b->col_perm, b->col_inv,
                     b->part_ptr, b->seg_fits, b->ell_ptr, b->ell_len, b->near_len, b->er_len, b->rank_of, b->er_meta,
                     b->pos_base, b->pos_stride, b->er_work, b->slice_er, b->ell_col, b->ell_val, b->er_val,
                     b->partial, b->er_col, b->sync, b->value_map};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++) free(owned[i]);
    memset(b, 0, sizeof *b);
}

static spmv_status_t out_of_memory(const char *what, char *msg, size_t msglen)
{
    spmvport_msg(msg, msglen, "ehyb: out of host memory for %s", what);
    return SPMV_STATUS_OUT_OF_MEMORY;
}

static spmv_status_t too_large(const char *what, int64_t count, char *msg, size_t msglen)
{
    spmvport_msg(msg, msglen, "ehyb: %s (%lld) does not fit the format's 32-bit offsets", what, (long long)count);
    return SPMV_STATUS_OVERFLOW;
}

static inline int32_t row_nnz(const spmv_matrix_t *A, int32_t i) { return A->row_ptr[i + 1] - A->row_ptr[i]; }

/* ==================================================================================================
 * Step 1: how many parts
 * ================================================================================================== */

static void choose_part_count(ehyb_build *b, const spmv_device_info_t *dev)
{
    const int gpu = dev != NULL && dev->shared_mem_per_block > 0 && dev->multiprocessors > 0;
    b->P = gpu ? dev->multiprocessors : EHYB_DEFAULT_SMS;
    size_t shm = gpu ? dev->shared_mem_per_block : EHYB_DEFAULT_SHARED;
    if (shm > ((size_t)1 << 32)) shm = (size_t)1 << 32; /* keeps the products below in 64 bits */
    size_t budget = shm / SPMVPORT_EHYB_BLOCKS_PER_SM;
    budget = budget > 2 * SPMVPORT_EHYB_SMEM_RESERVE ? budget - SPMVPORT_EHYB_SMEM_RESERVE : budget / 2;
    b->budget = budget;
    int64_t cap = (int64_t)(budget / b->vsize) - 1; /* one slot stays for the padding zero */
    if (cap > SPMVPORT_EHYB_MAX_SEGMENT) cap = SPMVPORT_EHYB_MAX_SEGMENT;
    if (cap < 1) cap = 1;
    b->cap = cap;

    /* the paper's rule: K = the smallest integer with n * sizeof(value) / (K * P) < budget */
    const uint64_t x_bytes = (uint64_t)b->A->n * b->vsize, per_k = (uint64_t)b->P * (budget > 0 ? budget : 1);
    b->K = (int64_t)(x_bytes / per_k) + 1;
    /* and at least the blocks resident per multiprocessor, so one block's staging overlaps another's work */
    if (b->K < SPMVPORT_EHYB_BLOCKS_PER_SM) b->K = SPMVPORT_EHYB_BLOCKS_PER_SM;
    /* and whole waves of resident blocks: K = 3 ran 1.5 waves, the last on half the GPU (H200, f64
     * stencil3d:7:160: 396 parts 0.1656 ms, 528 parts 0.1504, 792 parts 0.1594) */
    b->K = (b->K + SPMVPORT_EHYB_BLOCKS_PER_SM - 1) / SPMVPORT_EHYB_BLOCKS_PER_SM * SPMVPORT_EHYB_BLOCKS_PER_SM;
    const int64_t nv = b->nv;
    int64_t parts = b->K > nv / b->P + 1 ? nv : b->K * b->P;
    if (nv < parts * SPMVPORT_EHYB_BLOCK_THREADS) {
        /* a small matrix: fewer rows than the threads of K x P blocks. Busy warps per multiprocessor, not blocks,
         * set the speed: two blocks on one multiprocessor keep no more warps busy than one block with both their
         * slices. So one part per multiprocessor: its few slices are split over the block's warps (step 4) and
         * the entries its cut leaves out are mostly halo entries, staged too (H200, ehyb_parts = 132 against
         * the former parts of at least 4 slices: bcsstk13 0.0099 -> 0.0077 ms, bcsstk33 0.0111 -> 0.0099).
         * Without the split (options.ehyb_split = 1), parts of at least EHYB_MIN_PART_SLICES slices, as measured
         * before the split existed. Then enough parts that a block's warps take all its slices in one round
         * (room for METIS's imbalance), not two (the former cap of one slice per warp left 8 blocks of 34
         * slices, 2 rounds, on bcsstk33's 8.7k rows and 124 idle multiprocessors) */
        const int64_t min_rows = (int64_t)EHYB_MIN_PART_SLICES * b->W, warps = SPMVPORT_EHYB_BLOCK_THREADS / b->W;
        int64_t small = b->split_option != 1 || nv / min_rows > b->P ? b->P : nv / min_rows;
        const int64_t one_round = (nv + (warps - 2) * b->W - 1) / ((warps - 2) * b->W);
        if (small < one_round) small = one_round;
        if (small < parts) parts = small;
        b->small = 1;
    }
    if (b->parts_option > 0) parts = b->parts_option; /* options.ehyb_parts: measured choices */
    /* a block that splits its slices over several warps (step 4) adds their partial sums, one value per thread,
     * in shared memory after the staged x: the staged x of such a plan is that much shorter */
    if (((b->small && b->split_option != 1) || b->split_option > 1) && cap > 2 * SPMVPORT_EHYB_BLOCK_THREADS) {
        cap -= SPMVPORT_EHYB_BLOCK_THREADS;
        b->cap = cap;
        b->split_room = 1;
    }
    /* but enough parts for every segment to fit, with room for METIS's 3% imbalance */
    const int64_t fill = cap * 9 / 10 > 0 ? cap * 9 / 10 : 1;
    const int64_t need = ((int64_t)b->A->n + fill - 1) / fill;
    if (parts < need) parts = need;
    if (parts > nv) parts = nv;
    if (parts < 1) parts = 1;
    b->target_parts = parts;
}

/* ==================================================================================================
 * Step 2: partition
 * ================================================================================================== */

/* Neighbours of vertex v: the union of A's row v and column v (both sorted), without v; written to out when it is
 * not NULL. Returns the count. */
static int32_t merge_neighbours(int32_t v, const int32_t *a, int32_t alen, const int32_t *c, int32_t clen,
                                int32_t *out)
{
    int32_t i = 0, j = 0, count = 0, last = -1;
    while (i < alen || j < clen) {
        int32_t u = (j >= clen || (i < alen && a[i] <= c[j])) ? a[i++] : c[j++];
        if (u == v || u == last) continue;
        if (out != NULL) out[count] = u;
        count++;
        last = u;
    }
    return count;
}

/* Contiguous blocks of vertices: the partition without METIS (no edges, or METIS absent from tests' view). */
static void partition_blocks(int32_t *part, int32_t nv, int64_t parts)
{
    for (int32_t v = 0; v < nv; v++) part[v] = (int32_t)((int64_t)v * parts / nv);
}

/* More parts than METIS was asked for (metis_parts of them in b->part, some maybe empty): each non-empty METIS part
 * is cut into runs of its vertices in index order, one run plus its share of the e = target - (non-empty parts)
 * extra runs by its vertices beyond the first (cumulative rounding: e t_q / T, t_q such vertices ahead of it, T in
 * all), so bigger parts are cut more, no part into more runs than vertices, no run spans two METIS parts, and the
 * runs number exactly target. */
static spmv_status_t cut_metis_parts(ehyb_build *b, int64_t metis_parts, char *msg, size_t msglen)
{
    const int32_t nv = b->nv;
    int64_t *start = spmvport_calloc_array((size_t)metis_parts + 1, sizeof *start);
    int64_t *first = spmvport_malloc_array((size_t)metis_parts + 1, sizeof *first);
    int64_t *seen = spmvport_calloc_array((size_t)metis_parts, sizeof *seen);
    if (start == NULL || first == NULL || seen == NULL) {
        free(start), free(first), free(seen);
        return out_of_memory("the METIS parts' cut", msg, msglen);
    }
    for (int32_t v = 0; v < nv; v++) start[b->part[v] + 1]++;
    int64_t nonempty = 0;
    for (int64_t q = 0; q < metis_parts; q++) nonempty += start[q + 1] > 0;
    for (int64_t q = 0; q < metis_parts; q++) start[q + 1] += start[q];
    const int64_t extra = b->target_parts - nonempty, beyond = nv - nonempty; /* extra <= beyond: target <= nv */
    for (int64_t q = 0, before = 0; q <= metis_parts; q++) { /* first[q]: the runs ahead of part q */
        first[q] = before + (beyond > 0 ? extra * (start[q] - before) / beyond : 0);
        if (q < metis_parts) before += start[q + 1] > start[q];
    }
    for (int32_t v = 0; v < nv; v++) {
        const int32_t q = b->part[v];
        b->part[v] = (int32_t)(first[q] + seen[q]++ * (first[q + 1] - first[q]) / (start[q + 1] - start[q]));
    }
    free(start), free(first), free(seen);
    b->partitioner = "metis_cut";
    return SPMV_STATUS_SUCCESS;
}

/* The symmetrised pattern as METIS's CSR graph (xadj, adjncy), through A's transpose. *edges = adjncy length. */
static spmv_status_t symmetrised_graph(const ehyb_build *b, idx_t **xadj_out, idx_t **adj_out, int64_t *edges,
                                       char *msg, size_t msglen)
{
    const spmv_matrix_t *A = b->A;
    const int32_t m = A->m, n = A->n, nv = b->nv;
    int32_t *tptr = spmvport_calloc_array((size_t)n + 1, sizeof *tptr);
    int32_t *tidx = spmvport_malloc_array((size_t)A->nnz, sizeof *tidx);
    int32_t *deg = spmvport_malloc_array((size_t)nv, sizeof *deg);
    idx_t *xadj = spmvport_malloc_array((size_t)nv + 1, sizeof *xadj);
    idx_t *adj = NULL;
    int32_t *nbr = NULL;
    spmv_status_t st = SPMV_STATUS_SUCCESS;
    if (!tptr || !tidx || !deg || !xadj) {
        st = out_of_memory("the symmetrised graph", msg, msglen);
        goto done;
    }
    /* transpose by counting sort: rows of A^T come out sorted */
    for (int32_t k = 0; k < A->nnz; k++) tptr[A->col_idx[k] + 1]++;
    for (int32_t j = 0; j < n; j++) tptr[j + 1] += tptr[j];
    for (int32_t i = 0; i < m; i++)
        for (int32_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) tidx[tptr[A->col_idx[k]]++] = i;
    for (int32_t j = n; j > 0; j--) tptr[j] = tptr[j - 1];
    tptr[0] = 0;

    EHYB_OMP("omp parallel for schedule(dynamic, 1024) if(A->nnz > 100000)")
    for (int32_t v = 0; v < nv; v++) {
        const int32_t *a = v < m ? A->col_idx + A->row_ptr[v] : NULL, *c = v < n ? tidx + tptr[v] : NULL;
        deg[v] = merge_neighbours(v, a, v < m ? row_nnz(A, v) : 0, c, v < n ? tptr[v + 1] - tptr[v] : 0, NULL);
    }
    int64_t total = 0;
    xadj[0] = 0;
    for (int32_t v = 0; v < nv; v++) {
        total += deg[v];
        if (total > (int64_t)INT32_MAX) break;
        xadj[v + 1] = (idx_t)total;
    }
    if (total > (int64_t)INT32_MAX) {
        spmvport_msg(msg, msglen, "ehyb: the symmetrised graph has more than %d edges, beyond METIS's 32-bit "
                     "indices", INT32_MAX);
        st = SPMV_STATUS_OVERFLOW;
        goto done;
    }
    adj = spmvport_malloc_array((size_t)total, sizeof *adj);
    nbr = sizeof(idx_t) == sizeof(int32_t) ? NULL : spmvport_malloc_array((size_t)total, sizeof *nbr);
    if (!adj || (sizeof(idx_t) != sizeof(int32_t) && !nbr)) {
        st = out_of_memory("the symmetrised graph", msg, msglen);
        goto done;
    }
    int32_t *dst = nbr != NULL ? nbr : (int32_t *)(void *)adj;
    EHYB_OMP("omp parallel for schedule(dynamic, 1024) if(A->nnz > 100000)")
    for (int32_t v = 0; v < nv; v++) {
        const int32_t *a = v < m ? A->col_idx + A->row_ptr[v] : NULL, *c = v < n ? tidx + tptr[v] : NULL;
        merge_neighbours(v, a, v < m ? row_nnz(A, v) : 0, c, v < n ? tptr[v + 1] - tptr[v] : 0, dst + xadj[v]);
    }
    if (nbr != NULL)
        for (int64_t e = 0; e < total; e++) adj[e] = nbr[e];
    *edges = total;
done:
    free(tptr);
    free(tidx);
    free(deg);
    free(nbr);
    if (st != SPMV_STATUS_SUCCESS) {
        free(xadj);
        free(adj);
        xadj = adj = NULL;
    }
    *xadj_out = xadj;
    *adj_out = adj;
    return st;
}

static spmv_status_t metis_partition(ehyb_build *b, char *msg, size_t msglen)
{
    idx_t *xadj = NULL, *adj = NULL;
    int64_t edges = 0;
    /* METIS is asked for parts of at least EHYB_METIS_MIN_PART_VERTICES vertices on average: with smaller ones its
     * recursive bisection meets empty subgraphs on graphs with hubs and says so on stdout ("Cannot bisect a graph
     * with 0 vertices!"; found by a fuzzer: a graph of 2912 vertices with dense rows at options.ehyb_parts = 1456,
     * others up to nv / 8 parts, and the automatic count of a 21 x 40 matrix with a dense row (40 parts); none of
     * 623 random graphs at nv / 12). More parts than that are cut from METIS's parts (cut_metis_parts): small
     * matrices, whose automatic count is up to one part a vertex, and options.ehyb_parts. */
    const int64_t metis_parts = b->target_parts * EHYB_METIS_MIN_PART_VERTICES <= b->nv
                                    ? b->target_parts : b->nv / EHYB_METIS_MIN_PART_VERTICES;
    if (metis_parts < 2) {
        b->partitioner = "blocks";
        partition_blocks(b->part, b->nv, b->target_parts);
        return SPMV_STATUS_SUCCESS;
    }
    double t0 = spmvport_now_ms();
    spmv_status_t st = symmetrised_graph(b, &xadj, &adj, &edges, msg, msglen);
    double t1 = spmvport_now_ms();
    b->graph_ms = t1 - t0;
    if (st != SPMV_STATUS_SUCCESS) return st;
    if (edges == 0) { /* nothing to cut: any balanced split is optimal */
        partition_blocks(b->part, b->nv, b->target_parts);
        free(xadj);
        free(adj);
        return SPMV_STATUS_SUCCESS;
    }
    idx_t *mpart = spmvport_malloc_array((size_t)b->nv, sizeof *mpart);
    if (mpart == NULL) {
        free(xadj);
        free(adj);
        return out_of_memory("the METIS partition", msg, msglen);
    }
    idx_t nvtxs = b->nv, ncon = 1, nparts = (idx_t)metis_parts, objval = 0;
    /* weight = 1 + the row's entries: parts balance work (hub rows), not only segment lengths; unit weights when
     * the total would pass METIS's 32-bit sums */
    idx_t *vwgt = NULL;
    if ((int64_t)b->nv + b->A->nnz <= (int64_t)INT32_MAX) {
        vwgt = spmvport_malloc_array((size_t)b->nv, sizeof *vwgt);
        if (vwgt == NULL) {
            free(mpart);
            free(xadj);
            free(adj);
            return out_of_memory("the METIS vertex weights", msg, msglen);
        }
        /* no vertex heavier than a quarter of a part: METIS cannot balance (and complains on stdout about)
         * a vertex that outweighs a whole part */
        const int64_t cap = ((int64_t)b->nv + b->A->nnz) / (4 * metis_parts) + 1;
        for (int32_t v = 0; v < b->nv; v++) {
            const int64_t w = 1 + (v < b->A->m ? row_nnz(b->A, v) : 0);
            vwgt[v] = (idx_t)(w < cap ? w : cap);
        }
    }
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = b->seed;
    options[METIS_OPTION_NUMBERING] = 0;
    b->partitioner = "metis";
    int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj, adj, vwgt, NULL, NULL, &nparts, NULL, NULL, options, &objval,
                                 mpart);
    if (rc == METIS_ERROR && vwgt != NULL) {
        /* METIS 5.1 gives up on some weighted power-law graphs (seen on kron:20:16): unit weights next */
        b->partitioner = "metis_unit_weights";
        rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj, adj, NULL, NULL, NULL, &nparts, NULL, NULL, options, &objval,
                                 mpart);
    }
    free(vwgt);
    b->metis_ms = spmvport_now_ms() - t1;
    free(xadj);
    free(adj);
    if (rc == METIS_ERROR_MEMORY) {
        free(mpart);
        spmvport_msg(msg, msglen, "ehyb: METIS_PartGraphKway ran out of memory for %d vertices, %lld edges, %lld "
                     "parts", b->nv, (long long)edges, (long long)b->target_parts);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    int valid = rc == METIS_OK;
    for (int32_t v = 0; valid && v < b->nv; v++) valid = mpart[v] >= 0 && mpart[v] < nparts;
    if (!valid) { /* a worse cut is still a correct plan: contiguous blocks, said in the stats */
        b->partitioner = "blocks";
        partition_blocks(b->part, b->nv, b->target_parts);
    } else {
        for (int32_t v = 0; v < b->nv; v++) b->part[v] = (int32_t)mpart[v];
        if (metis_parts < b->target_parts) st = cut_metis_parts(b, metis_parts, msg, msglen);
    }
    free(mpart);
    return st;
}

/* Cut parts whose segment exceeds the cap into pieces of cap columns (in vertex order) and drop empty parts. */
static spmv_status_t refine_parts(ehyb_build *b, char *msg, size_t msglen)
{
    const int64_t np = b->target_parts, cap = b->cap;
    int64_t *cols = spmvport_calloc_array((size_t)np, sizeof *cols);
    int64_t *verts = spmvport_calloc_array((size_t)np, sizeof *verts);
    int64_t *first = spmvport_malloc_array((size_t)np, sizeof *first);
    int64_t *pieces = spmvport_malloc_array((size_t)np, sizeof *pieces);
    if (!cols || !verts || !first || !pieces) {
        free(cols); free(verts); free(first); free(pieces);
        return out_of_memory("the part table", msg, msglen);
    }
    for (int32_t v = 0; v < b->nv; v++) {
        verts[b->part[v]]++;
        if (v < b->A->n) cols[b->part[v]]++;
    }
    int64_t total = 0;
    for (int64_t p = 0; p < np; p++) {
        pieces[p] = verts[p] == 0 ? 0 : cols[p] > cap ? (cols[p] + cap - 1) / cap : 1;
        first[p] = total;
        total += pieces[p];
        cols[p] = 0; /* from here: columns of p seen so far */
    }
    for (int32_t v = 0; v < b->nv; v++) {
        const int32_t p = b->part[v];
        int64_t sub = cols[p] / cap;
        if (sub > pieces[p] - 1) sub = pieces[p] - 1;
        b->part[v] = (int32_t)(first[p] + sub);
        if (v < b->A->n) cols[p]++;
    }
    free(cols); free(verts); free(first); free(pieces);
    b->nparts = total > 0 ? (int32_t)total : 1; /* an empty matrix keeps one (empty) part */
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t partition(ehyb_build *b, char *msg, size_t msglen)
{
    b->part = spmvport_calloc_array((size_t)b->nv, sizeof *b->part);
    if (b->part == NULL) return out_of_memory("the partition", msg, msglen);
    if (b->target_parts > 1) {
        spmv_status_t st = metis_partition(b, msg, msglen);
        if (st != SPMV_STATUS_SUCCESS) return st;
    }
    return refine_parts(b, msg, msglen);
}

typedef struct {
    int32_t key, v;
} keyed_vertex;

/* ==================================================================================================
 * Step 2b: halos
 * ================================================================================================== */

static int by_vertex(const void *pa, const void *pb)
{
    const keyed_vertex *a = pa, *b = pb;
    return (a->v > b->v) - (a->v < b->v);
}

/* Descending key (here: uses), then ascending vertex: a total order, so the plan is reproducible. */
static int by_count_desc(const void *pa, const void *pb)
{
    const keyed_vertex *a = pa, *b = pb;
    if (a->key != b->key) return a->key > b->key ? -1 : 1;
    return (a->v > b->v) - (a->v < b->v);
}

/* Whether column vertex v is in part p's halo. */
static int in_halo(const ehyb_build *b, int32_t p, int32_t v)
{
    const int32_t count = b->halo_ptr[p + 1] - b->halo_ptr[p];
    if (count == 0) return 0; /* halo_v is NULL without halos: bsearch must not see it */
    const int32_t *h = b->halo_v + b->halo_ptr[p];
    return bsearch(&v, h, (size_t)count, sizeof *h, spmvport_compare_int32) != NULL;
}

/* Part p's halo: the columns of other parts that p's rows use at least halo_min times, most used first while the
 * staged x (own columns + halo) fits the cap; ascending vertex in *out (malloc'd), count returned, -1 if out of
 * memory. A column used k times as a near-ER entry moves k x reads from global memory (and 2 bytes of index per
 * entry) into shared memory for one staged read: worth it from k = 2. */
static int32_t part_halo(const ehyb_build *b, const int32_t *rows, int32_t nrows, int32_t p, int64_t room,
                         int32_t **out)
{
    const spmv_matrix_t *A = b->A;
    *out = NULL;
    int64_t total = 0;
    for (int32_t t = 0; t < nrows; t++)
        for (int32_t k = A->row_ptr[rows[t]]; k < A->row_ptr[rows[t] + 1]; k++) total += b->part[A->col_idx[k]] != p;
    if (total == 0 || room <= 0) return 0;
    int32_t *cols = spmvport_malloc_array((size_t)total, sizeof *cols);
    keyed_vertex *use = spmvport_malloc_array((size_t)total, sizeof *use);
    if (!cols || !use) {
        free(cols);
        free(use);
        return -1;
    }
    int64_t c = 0;
    for (int32_t t = 0; t < nrows; t++)
        for (int32_t k = A->row_ptr[rows[t]]; k < A->row_ptr[rows[t] + 1]; k++)
            if (b->part[A->col_idx[k]] != p) cols[c++] = A->col_idx[k];
    qsort(cols, (size_t)total, sizeof *cols, spmvport_compare_int32);
    int64_t kept = 0;
    for (int64_t i = 0, j; i < total; i = j) {
        for (j = i + 1; j < total && cols[j] == cols[i];) j++;
        if (j - i >= b->halo_min) use[kept++] = (keyed_vertex){(int32_t)(j - i), cols[i]};
    }
    if (kept > room) { /* the most used columns first */
        qsort(use, (size_t)kept, sizeof *use, by_count_desc);
        kept = room;
        qsort(use, (size_t)kept, sizeof *use, by_vertex);
    }
    for (int64_t i = 0; i < kept; i++) cols[i] = use[i].v;
    free(use);
    *out = cols;
    return (int32_t)kept;
}

/* Every part's halo (halo_ptr, halo_v); none when options.ehyb_halo = -1 or there is one part. */
static spmv_status_t select_halos(ehyb_build *b, char *msg, size_t msglen)
{
    const spmv_matrix_t *A = b->A;
    const int32_t m = A->m, np = b->nparts;
    b->halo_ptr = spmvport_calloc_array((size_t)np + 1, sizeof *b->halo_ptr);
    if (b->halo_ptr == NULL) return out_of_memory("the halos", msg, msglen);
    if (b->halo_min <= 0 || np < 2 || A->nnz == 0) return SPMV_STATUS_SUCCESS;
    int32_t *start = spmvport_calloc_array((size_t)np + 1, sizeof *start);
    int32_t *rows = spmvport_malloc_array((size_t)m + 1, sizeof *rows);
    int64_t *own = spmvport_calloc_array((size_t)np, sizeof *own);
    int32_t **lists = spmvport_calloc_array((size_t)np, sizeof *lists);
    int failed = !start || !rows || !own || !lists;
    if (!failed) {
        for (int32_t v = 0; v < A->n; v++) own[b->part[v]]++;
        for (int32_t i = 0; i < m; i++) start[b->part[i] + 1]++;
        for (int32_t p = 0; p < np; p++) start[p + 1] += start[p];
        for (int32_t i = 0; i < m; i++) rows[start[b->part[i]]++] = i;
        for (int32_t p = np; p > 0; p--) start[p] = start[p - 1];
        start[0] = 0;
        EHYB_OMP("omp parallel for schedule(dynamic, 1) if(A->nnz > 100000)")
        for (int32_t p = 0; p < np; p++) {
            const int32_t count = part_halo(b, rows + start[p], start[p + 1] - start[p], p, b->cap - own[p],
                                            &lists[p]);
            if (count < 0) {
                EHYB_OMP("omp atomic write")
                failed = 1;
            } else {
                b->halo_ptr[p + 1] = count;
            }
        }
    }
    int64_t total = 0;
    for (int32_t p = 0; !failed && p < np; p++) {
        total += b->halo_ptr[p + 1];
        if (total > INT32_MAX) {
            for (int32_t q = 0; q < np; q++) free(lists[q]);
            free(start); free(rows); free(own); free(lists);
            return too_large("halo entries", total, msg, msglen);
        }
        b->halo_ptr[p + 1] = (int32_t)total;
    }
    if (!failed) b->halo_v = spmvport_malloc_array((size_t)total + 1, sizeof *b->halo_v);
    failed = failed || b->halo_v == NULL;
    for (int32_t p = 0; p < np && lists != NULL; p++) {
        if (!failed && lists[p] != NULL)
            memcpy(b->halo_v + b->halo_ptr[p], lists[p],
                   (size_t)(b->halo_ptr[p + 1] - b->halo_ptr[p]) * sizeof(int32_t));
        free(lists[p]);
    }
    free(start); free(rows); free(own); free(lists);
    if (failed) return out_of_memory("the halos", msg, msglen);
    return SPMV_STATUS_SUCCESS;
}

/* ==================================================================================================
 * Step 3: renumbering
 * ================================================================================================== */

static spmv_status_t renumber(ehyb_build *b, char *msg, size_t msglen)
{
    const spmv_matrix_t *A = b->A;
    const int32_t m = A->m, n = A->n, nv = b->nv, np = b->nparts;
    int32_t *start = spmvport_calloc_array((size_t)np + 1, sizeof *start);
    int32_t *cols = spmvport_calloc_array((size_t)np, sizeof *cols);
    keyed_vertex *items = spmvport_malloc_array((size_t)nv, sizeof *items);
    b->seg_fits = spmvport_malloc_array((size_t)np, 1);
    b->cnt_in = spmvport_malloc_array((size_t)m, sizeof *b->cnt_in);
    b->row_perm = spmvport_malloc_array((size_t)m, sizeof *b->row_perm);
    b->col_perm = spmvport_malloc_array((size_t)n, sizeof *b->col_perm);
    b->col_inv = spmvport_malloc_array((size_t)n, sizeof *b->col_inv);
    b->part_ptr = spmvport_malloc_array(4 * ((size_t)np + 1), sizeof *b->part_ptr);
    b->halo = spmvport_malloc_array((size_t)b->halo_ptr[np] + 1, sizeof *b->halo);
    if (!start || !cols || !items || !b->seg_fits || !b->cnt_in || !b->row_perm || !b->col_perm || !b->col_inv ||
        !b->part_ptr || !b->halo) {
        free(start); free(cols); free(items);
        return out_of_memory("the renumbering", msg, msglen);
    }
    for (int32_t v = 0; v < n; v++) cols[b->part[v]]++;
    for (int32_t p = 0; p < np; p++) b->seg_fits[p] = cols[p] <= SPMVPORT_EHYB_MAX_SEGMENT;
    const int32_t *part = b->part;
    const unsigned char *fits = b->seg_fits;
    EHYB_OMP("omp parallel for schedule(dynamic, 1024) if(A->nnz > 100000)")
    for (int32_t i = 0; i < m; i++) {
        int32_t count = 0;
        const int32_t p = part[i];
        if (fits[p])
            for (int32_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++)
                count += part[A->col_idx[k]] == p || in_halo(b, p, A->col_idx[k]);
        b->cnt_in[i] = count;
    }
    /* bucket the vertices by part (ascending vertex inside), then sort each part by in-part count */
    for (int32_t v = 0; v < nv; v++) start[part[v] + 1]++;
    for (int32_t p = 0; p < np; p++) start[p + 1] += start[p];
    for (int32_t v = 0; v < nv; v++) {
        keyed_vertex *it = &items[start[part[v]]++];
        it->key = v < m ? b->cnt_in[v] : -1; /* column-only vertices last */
        it->v = v;
    }
    for (int32_t p = np; p > 0; p--) start[p] = start[p - 1];
    start[0] = 0;
    EHYB_OMP("omp parallel for schedule(dynamic, 1) if(A->nnz > 100000)")
    for (int32_t p = 0; p < np; p++)
        qsort(items + start[p], (size_t)(start[p + 1] - start[p]), sizeof *items, by_count_desc);

    int32_t r = 0, c = 0;
    b->seg_max = 0;
    for (int32_t p = 0; p < np; p++) {
        b->part_ptr[4 * p] = r;
        b->part_ptr[4 * p + 1] = c;
        b->part_ptr[4 * p + 3] = b->halo_ptr[p];
        for (int32_t k = start[p]; k < start[p + 1]; k++) {
            const int32_t v = items[k].v;
            if (v < m) b->row_perm[r++] = v;
            if (v < n) {
                b->col_inv[v] = c;
                b->col_perm[c++] = v;
            }
        }
        const int32_t staged = cols[p] + b->halo_ptr[p + 1] - b->halo_ptr[p]; /* <= cap */
        if (staged > b->seg_max) b->seg_max = staged;
    }
    b->part_ptr[4 * np] = r;
    b->part_ptr[4 * np + 1] = c;
    b->part_ptr[4 * np + 3] = b->halo_ptr[np];
    /* what the kernel stages after a part's own columns: A's column, or the plan column with plan ordering */
    for (int32_t h = 0; h < b->halo_ptr[np]; h++)
        b->halo[h] = b->plan_ordering ? b->col_inv[b->halo_v[h]] : b->halo_v[h];
    free(start); free(cols); free(items);
    return SPMV_STATUS_SUCCESS;
}

/* ==================================================================================================
 * Step 4: the ELL and ER layouts
 * ================================================================================================== */

/* Width of one ELL slice whose in-part row lengths L[0] >= L[1] >= ... (nr rows): w = L[k] for the k that
 * minimises the bytes moved, W * w ELL slots of (value + 16-bit column) plus, for the k longer rows, their
 * excess entries in the ER part (value, 32-bit column, an x read from global memory) and a fixed cost per row.
 * Equal lengths (FEM) give the paper's width, the longest row; a lone hub row goes to the ER part instead of
 * padding W - 1 rows to its length. */
static int32_t slice_width(const int32_t *cnt_in, const int32_t *rows, int32_t nr, int W, size_t vsize)
{
    const double ell_slot = (double)vsize + 2.0, er_entry = 2.0 * (double)vsize + 4.0;
    double best = 0, excess = 0;
    int32_t width = 0;
    for (int32_t k = 0; k <= nr; k++) {
        const int32_t w = k < nr ? cnt_in[rows[k]] : 0;
        const double cost = (double)W * w * ell_slot + (excess - (double)k * w) * er_entry + k * EHYB_ER_ROW_BYTES;
        if (k == 0 || cost < best) {
            best = cost;
            width = w;
        }
        if (k < nr) excess += w;
    }
    return width;
}

/* Width of a slice's near-ER block from its rows' ER counts E (nr <= W values, sorted here): the same trade as
 * slice_width, W * w near slots (value, 32-bit column) against moving the excess of the k longest rows to the far
 * ER part, which costs a rank, two partial-sum slots and a ticket per row (far_row_bytes). */
static int32_t near_width(int32_t *E, int32_t nr, int W, size_t vsize, double far_row_bytes)
{
    for (int32_t i = 1; i < nr; i++) /* insertion sort, descending: nr <= 64 */
        for (int32_t j = i; j > 0 && E[j] > E[j - 1]; j--) {
            const int32_t t = E[j];
            E[j] = E[j - 1];
            E[j - 1] = t;
        }
    const double slot = (double)vsize + 4.0;
    double best = 0, excess = 0;
    int32_t width = 0;
    for (int32_t k = 0; k <= nr; k++) {
        const int32_t w = k < nr ? E[k] : 0;
        const double cost = (double)W * w * slot + (excess - (double)k * w) * slot + k * far_row_bytes;
        if (k == 0 || cost < best) {
            best = cost;
            width = w;
        }
        if (k < nr) excess += w;
    }
    return width;
}

/* Slot offsets from per-slice widths: ptr[2s + which] = sum of W * width over earlier slices. */
static spmv_status_t slice_offsets(ehyb_build *b, const int32_t *width, int which, int64_t *total, char *msg,
                                   size_t msglen)
{
    int64_t slots = 0;
    for (int32_t s = 0; s < b->nslices; s++) {
        b->ell_ptr[2 * s + which] = (int32_t)slots;
        slots += (int64_t)b->W * width[s];
        if (slots > INT32_MAX) return too_large(which ? "near-ER slots" : "ELL slots", slots, msg, msglen);
    }
    b->ell_ptr[2 * b->nslices + which] = (int32_t)slots;
    *total = slots;
    return SPMV_STATUS_SUCCESS;
}

/* ELL and near-ER widths of every slice; per plan row: ELL, near-ER and far-ER (er_len) counts. */
static spmv_status_t ell_layout(ehyb_build *b, char *msg, size_t msglen)
{
    const spmv_matrix_t *A = b->A;
    const int32_t np = b->nparts, W = b->W;
    int64_t slices = 0;
    for (int32_t p = 0; p < np; p++) {
        b->part_ptr[4 * p + 2] = (int32_t)slices;
        slices += (b->part_ptr[4 * p + 4] - b->part_ptr[4 * p] + W - 1) / W;
    }
    b->part_ptr[4 * np + 2] = (int32_t)slices; /* <= m */
    b->nslices = (int32_t)slices;
    b->ell_ptr = spmvport_malloc_array(2 * ((size_t)slices + 1), sizeof *b->ell_ptr);
    b->ell_len = spmvport_malloc_array((size_t)A->m, sizeof *b->ell_len);
    b->near_len = spmvport_malloc_array((size_t)A->m, sizeof *b->near_len);
    b->er_len = spmvport_malloc_array((size_t)A->m, sizeof *b->er_len);
    int32_t *width = spmvport_malloc_array((size_t)slices, sizeof *width);
    int32_t *nwidth = spmvport_malloc_array((size_t)slices, sizeof *nwidth);
    if (!b->ell_ptr || !b->ell_len || !b->near_len || !b->er_len || !width || !nwidth) {
        free(width);
        free(nwidth);
        return out_of_memory("the ELL slices", msg, msglen);
    }
    const int32_t *cnt_in = b->cnt_in, *row_perm = b->row_perm, *part_ptr = b->part_ptr;
    EHYB_OMP("omp parallel for schedule(dynamic, 16) if(A->nnz > 100000)")
    for (int32_t p = 0; p < np; p++) {
        const int32_t rb = part_ptr[4 * p], re = part_ptr[4 * p + 4];
        int32_t E[64];
        for (int32_t s = part_ptr[4 * p + 2], r0 = rb; r0 < re; s++, r0 += W) {
            const int32_t nr = re - r0 < W ? re - r0 : W;
            width[s] = slice_width(cnt_in, row_perm + r0, nr, W, b->vsize);
            for (int32_t r = r0; r < r0 + nr; r++) {
                const int32_t i = row_perm[r], in = cnt_in[i];
                b->ell_len[r] = in < width[s] ? in : width[s];
                E[r - r0] = row_nnz(A, i) - b->ell_len[r];
            }
            for (int32_t r = r0; r < r0 + nr; r++) b->er_len[r] = E[r - r0]; /* near_width sorts E */
            nwidth[s] = near_width(E, nr, W, b->vsize, b->small ? EHYB_FAR_ROW_BYTES_SMALL : EHYB_FAR_ROW_BYTES);
            for (int32_t r = r0; r < r0 + nr; r++) {
                b->near_len[r] = b->er_len[r] < nwidth[s] ? b->er_len[r] : nwidth[s];
                b->er_len[r] -= b->near_len[r];
            }
        }
    }
    int64_t ell_slots = 0, near_slots = 0;
    spmv_status_t st = slice_offsets(b, width, 0, &ell_slots, msg, msglen);
    if (st == SPMV_STATUS_SUCCESS) st = slice_offsets(b, nwidth, 1, &near_slots, msg, msglen);
    b->width_min = slices > 0 ? INT32_MAX : 0;
    b->width_max = b->near_width_max = 0;
    for (int32_t s = 0; s < slices; s++) {
        if (width[s] < b->width_min) b->width_min = width[s];
        if (width[s] > b->width_max) b->width_max = width[s];
        if (nwidth[s] > b->near_width_max) b->near_width_max = nwidth[s];
    }
    free(width);
    free(nwidth);
    if (st != SPMV_STATUS_SUCCESS) return st;
    b->ell_slots = (int32_t)ell_slots;
    b->near_slots = (int32_t)near_slots;
    b->ell_nnz = b->near_nnz = 0;
    for (int32_t r = 0; r < A->m; r++) {
        b->ell_nnz += b->ell_len[r];
        b->near_nnz += b->near_len[r];
    }
    return SPMV_STATUS_SUCCESS;
}

/* G, the warps per ELL slice: options.ehyb_split, else the largest power of two with which every part's slices
 * take one round of its block's warps (a part with fewer slices than warps, i.e. a small matrix: each lane's
 * chain of width / B dependent loads is cut G-fold), else 1. G > 1 needs the room reserved in step 1. */
static void choose_split(ehyb_build *b)
{
    const int32_t warps = SPMVPORT_EHYB_BLOCK_THREADS / b->W;
    int32_t most = 1;
    for (int32_t p = 0; p < b->nparts; p++) {
        const int32_t sl = b->part_ptr[4 * p + 6] - b->part_ptr[4 * p + 2];
        if (sl > most) most = sl;
    }
    b->split = 1;
    if (!b->split_room) return;
    if (b->split_option > 0) {
        b->split = b->split_option;
        return;
    }
    if (b->small)
        while (2 * b->split * most <= warps) b->split *= 2;
}

/* B, the entries a lane loads before it uses them, unless options.ehyb_batch says: 8 where measured faster, 4
 * elsewhere. H200, halos on: f32 takes 8 (fem3d:3:48 0.0669 ms either way, stencil3d:7:160 0.1032 -> 0.0866);
 * f64 takes 8 for wide slices (fem3d, mean ELL width 77: 0.1023 -> 0.0903 ms) and for small matrices (few busy
 * warps, each waiting on a chain of width / B round trips), 4 for narrow ones (stencil, width 7: 0.1656 ms
 * against 0.1747 with 8, whose loads past the width are wasted and whose kernel spills at the register bound). */
static void choose_batch(ehyb_build *b)
{
    if (b->batch != 0) return;
    const double width_avg = b->nslices > 0 ? (double)b->ell_slots / ((double)b->nslices * b->W) : 0.0;
    b->batch = b->vsize == sizeof(float) || b->small || width_avg >= 16.0 ? 8 : 4;
}

typedef struct {
    int32_t len, e;
} keyed_rank;

static int by_len_desc(const void *pa, const void *pb)
{
    const keyed_rank *a = pa, *b = pb;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return (a->e > b->e) - (a->e < b->e);
}

/* The far ER part: ranks, partial slots, long-row chunks and ER slices; where every rank's far entries go
 * (pos_base + t * pos_stride). */
static spmv_status_t er_layout(ehyb_build *b, char *msg, size_t msglen)
{
    const int32_t m = b->A->m, W = b->W;
    const int32_t long_min = SPMVPORT_EHYB_LONG_PER_LANE * W, chunk = SPMVPORT_EHYB_CHUNK_PER_LANE * W;
    b->rank_of = spmvport_malloc_array((size_t)m, sizeof *b->rank_of);
    if (b->rank_of == NULL) return out_of_memory("the ER ranks", msg, msglen);
    int32_t n_er = 0, n_long = 0;
    for (int32_t r = 0; r < m; r++) {
        b->rank_of[r] = b->er_len[r] > 0 ? n_er++ : -1;
        n_long += b->er_len[r] > long_min;
    }
    b->n_er = n_er;
    b->n_long = n_long;
    b->er_meta = spmvport_malloc_array(2 * ((size_t)n_er + 1), sizeof *b->er_meta);
    b->pos_base = spmvport_malloc_array((size_t)n_er, sizeof *b->pos_base);
    b->pos_stride = spmvport_malloc_array((size_t)n_er, sizeof *b->pos_stride);
    keyed_rank *order = spmvport_malloc_array((size_t)n_er, sizeof *order);
    if (!b->er_meta || !b->pos_base || !b->pos_stride || !order) {
        free(order);
        return out_of_memory("the ER rows", msg, msglen);
    }
    /* slots: the ELL partial, then one per piece (one for a short row, one per chunk for a long row) */
    int64_t slots = 0, chunks = 0;
    for (int32_t r = 0; r < m; r++) {
        const int32_t e = b->rank_of[r];
        if (e < 0) continue;
        const int32_t L = b->er_len[r];
        const int64_t pieces = L > long_min ? (L + (int64_t)chunk - 1) / chunk : 1;
        b->er_meta[2 * e] = r;
        b->er_meta[2 * e + 1] = (int32_t)slots;
        slots += 1 + pieces;
        if (L > long_min) chunks += pieces;
        if (slots > INT32_MAX) {
            free(order);
            return too_large("partial-sum slots", slots, msg, msglen);
        }
    }
    b->er_meta[2 * n_er] = -1;
    b->er_meta[2 * n_er + 1] = (int32_t)slots;
    b->partial_slots = (int32_t)slots;
    b->n_chunks = (int32_t)chunks; /* <= slots */

    /* long rows first (longest first), then short rows longest first, stable by rank */
    for (int32_t e = 0; e < n_er; e++) order[e] = (keyed_rank){b->er_len[b->er_meta[2 * e]], e};
    qsort(order, (size_t)n_er, sizeof *order, by_len_desc);
    const int32_t n_short = n_er - n_long;
    b->n_er_slices = (n_short + W - 1) / W;
    const int64_t work = 4 * (int64_t)chunks + (int64_t)b->n_er_slices + 1 + 2 * (int64_t)W * b->n_er_slices;
    if (work > INT32_MAX) {
        free(order);
        return too_large("ER work items", work, msg, msglen);
    }
    b->er_work_len = work;
    b->er_work = spmvport_malloc_array((size_t)work, sizeof *b->er_work);
    if (b->er_work == NULL) {
        free(order);
        return out_of_memory("the ER work items", msg, msglen);
    }
    int32_t *chunk_tab = b->er_work, *sptr = b->er_work + 4 * chunks, *lanes = sptr + b->n_er_slices + 1;
    int64_t entries = b->near_slots, c = 0; /* the near-ER blocks come first */
    for (int32_t k = 0; k < n_long; k++) { /* long rows: contiguous entries, cut into chunks */
        const int32_t e = order[k].e, L = order[k].len;
        b->pos_base[e] = (int32_t)entries;
        b->pos_stride[e] = 1;
        for (int32_t piece = 0; (int64_t)piece * chunk < L; piece++, c++) {
            const int64_t begin = (int64_t)piece * chunk, end = begin + chunk < L ? begin + chunk : L;
            chunk_tab[4 * c] = e;
            chunk_tab[4 * c + 1] = piece;
            chunk_tab[4 * c + 2] = (int32_t)(entries + begin);
            chunk_tab[4 * c + 3] = (int32_t)(entries + end);
        }
        entries += L; /* <= nnz */
    }
    for (int32_t s = 0; s < b->n_er_slices; s++) { /* short rows: sliced ELL, width = the slice's first row */
        sptr[s] = (int32_t)entries;
        for (int32_t l = 0; l < W; l++) {
            const int32_t k = n_long + s * W + l;
            lanes[2 * ((int64_t)s * W + l)] = k < n_er ? order[k].e : -1;
            lanes[2 * ((int64_t)s * W + l) + 1] = k < n_er ? order[k].len : 0;
            if (k < n_er) {
                b->pos_base[order[k].e] = (int32_t)entries + l;
                b->pos_stride[order[k].e] = W;
            }
        }
        entries += (int64_t)W * order[n_long + s * W].len;
        if (entries > INT32_MAX) {
            free(order);
            return too_large("ER slots", entries, msg, msglen);
        }
    }
    sptr[b->n_er_slices] = (int32_t)entries;
    b->er_slots = (int32_t)entries;
    free(order);
    return SPMV_STATUS_SUCCESS;
}

/* ==================================================================================================
 * Step 5: conversion
 * ================================================================================================== */

static spmv_status_t convert(ehyb_build *b, char *msg, size_t msglen)
{
    const spmv_matrix_t *A = b->A;
    const int32_t np = b->nparts, W = b->W;
    const size_t vs = b->vsize;
    const int64_t slots = (int64_t)b->ell_slots + b->er_slots;
    b->slice_er = spmvport_calloc_array(2 * (size_t)b->nslices, sizeof *b->slice_er);
    b->ell_col = spmvport_malloc_array((size_t)b->ell_slots, sizeof *b->ell_col);
    b->ell_val = spmvport_calloc_array((size_t)b->ell_slots, vs);
    b->er_col = spmvport_malloc_array((size_t)b->er_slots, sizeof *b->er_col);
    b->er_val = spmvport_calloc_array((size_t)b->er_slots, vs);
    b->partial = spmvport_calloc_array((size_t)b->partial_slots, vs);
    b->sync = spmvport_calloc_array(2 + (size_t)b->n_er, sizeof *b->sync);
    b->value_map = spmvport_malloc_array((size_t)slots, sizeof *b->value_map);
    if (!b->slice_er || !b->ell_col || !b->ell_val || !b->er_col || !b->er_val || !b->partial || !b->sync ||
        !b->value_map)
        return out_of_memory("the ehyb arrays", msg, msglen);
    for (int64_t q = 0; q < slots; q++) b->value_map[q] = -1;
    for (int64_t q = 0; q < b->er_slots; q++) b->er_col[q] = -1; /* ER padding: the kernel skips column -1 */
    int32_t *ell_map = b->value_map, *er_map = b->value_map + b->ell_slots;
    const int f32 = A->precision == SPMV_F32;

    EHYB_OMP("omp parallel for schedule(dynamic, 4) if(A->nnz > 100000)")
    for (int32_t p = 0; p < np; p++) {
        const int32_t rb = b->part_ptr[4 * p], re = b->part_ptr[4 * p + 4];
        const int32_t cb = b->part_ptr[4 * p + 1], ce = b->part_ptr[4 * p + 5];
        const int32_t hb = b->part_ptr[4 * p + 3], hl = b->part_ptr[4 * p + 7] - hb;
        const int fits = b->seg_fits[p];
        /* ELL padding points at the zero the kernel stages after the own columns and the halo */
        for (int32_t q = b->ell_ptr[2 * b->part_ptr[4 * p + 2]]; q < b->ell_ptr[2 * b->part_ptr[4 * p + 6]]; q++)
            b->ell_col[q] = (uint16_t)(fits ? ce - cb + hl : 0);
        for (int32_t r = rb; r < re; r++) {
            const int32_t i = b->row_perm[r], s = b->part_ptr[4 * p + 2] + (r - rb) / W, lane = (r - rb) % W;
            const int32_t e = b->rank_of[r];
            if (e >= 0) { /* ranks follow plan rows: the slice's first far-ER row carries the base rank */
                if (b->slice_er[2 * s] == 0) b->slice_er[2 * s + 1] = (uint64_t)e;
                b->slice_er[2 * s] |= (uint64_t)1 << lane;
            }
            int32_t in_ell = 0, out = 0; /* entries placed in the ELL slice, and outside it */
            for (int32_t k = A->row_ptr[i]; k < A->row_ptr[i + 1]; k++) {
                const int32_t j = A->col_idx[k], pj = b->col_inv[j];
                int64_t q;
                /* staged: an own column (local pj - cb) or a halo column (local own count + its halo place) */
                const int32_t *h = fits && (pj < cb || pj >= ce) && hl > 0
                                       ? bsearch(&j, b->halo_v + hb, (size_t)hl, sizeof *h, spmvport_compare_int32)
                                       : NULL;
                if (fits && ((pj >= cb && pj < ce) || h != NULL) && in_ell < b->ell_len[r]) {
                    q = b->ell_ptr[2 * s] + (int64_t)in_ell++ * W + lane;
                    b->ell_col[q] = (uint16_t)(h != NULL ? ce - cb + (h - (b->halo_v + hb)) : pj - cb);
                    ell_map[q] = k;
                    if (f32) ((float *)b->ell_val)[q] = ((const float *)A->values)[k];
                    else ((double *)b->ell_val)[q] = ((const double *)A->values)[k];
                    continue;
                }
                if (out < b->near_len[r]) q = b->ell_ptr[2 * s + 1] + (int64_t)out * W + lane;
                else q = b->pos_base[e] + (int64_t)(out - b->near_len[r]) * b->pos_stride[e];
                out++;
                b->er_col[q] = b->plan_ordering ? pj : j;
                er_map[q] = k;
                if (f32) ((float *)b->er_val)[q] = ((const float *)A->values)[k];
                else ((double *)b->er_val)[q] = ((const double *)A->values)[k];
            }
        }
    }
    return SPMV_STATUS_SUCCESS;
}

/* ==================================================================================================
 * Hand-over to the format data
 * ================================================================================================== */

static spmv_status_t hand_over(spmvport_format_data *fd, ehyb_build *b, char *msg, size_t msglen)
{
    const spmv_matrix_t *A = b->A;
    const size_t vs = b->vsize, i4 = sizeof(int32_t);
    /* in slot order (format_ehyb.h); from here on the table owns the arrays, then the format data */
    struct {
        const char *name;
        void *data;
        size_t bytes;
        int is_values;
    } arrays[SPMVPORT_EHYB_NARRAYS] = {
        {"row_perm", b->row_perm, (size_t)A->m * i4, 0},
        {"col_perm", b->col_perm, (size_t)A->n * i4, 0},
        {"part", b->part_ptr, 4 * ((size_t)b->nparts + 1) * i4, 0},
        {"ell_ptr", b->ell_ptr, 2 * ((size_t)b->nslices + 1) * i4, 0},
        {"slice_er", b->slice_er, 2 * (size_t)b->nslices * sizeof(uint64_t), 0},
        {"ell_col", b->ell_col, (size_t)b->ell_slots * sizeof(uint16_t), 0},
        {"ell_val", b->ell_val, (size_t)b->ell_slots * vs, 1},
        {"er_meta", b->er_meta, 2 * ((size_t)b->n_er + 1) * i4, 0},
        {"er_work", b->er_work, (size_t)b->er_work_len * i4, 0},
        {"er_col", b->er_col, (size_t)b->er_slots * i4, 0},
        {"er_val", b->er_val, (size_t)b->er_slots * vs, 1},
        {"partial", b->partial, (size_t)b->partial_slots * vs, 0},
        {"sync", b->sync, (2 + (size_t)b->n_er) * i4, 0},
        {"halo", b->halo, (size_t)b->halo_ptr[b->nparts] * i4, 0},
    };
    b->row_perm = b->col_perm = b->part_ptr = b->ell_ptr = b->er_meta = b->er_work = b->er_col = b->sync = NULL;
    b->halo = NULL;
    b->slice_er = NULL;
    b->ell_col = NULL;
    b->ell_val = b->er_val = b->partial = NULL;
    for (int a = 0; a < SPMVPORT_EHYB_NARRAYS; a++) {
        spmv_status_t st = fd->narrays == a ? spmvport_format_add_array(fd, arrays[a].name, arrays[a].data,
                                                                        arrays[a].bytes, arrays[a].is_values)
                                            : SPMV_STATUS_INTERNAL_ERROR; /* slots must match format_ehyb.h */
        if (st != SPMV_STATUS_SUCCESS) {
            if (st == SPMV_STATUS_INTERNAL_ERROR) free(arrays[a].data); /* add_array frees it otherwise */
            for (int rest = a + 1; rest < SPMVPORT_EHYB_NARRAYS; rest++) free(arrays[rest].data);
            if (st == SPMV_STATUS_OUT_OF_MEMORY) return out_of_memory(arrays[a].name, msg, msglen);
            spmvport_msg(msg, msglen, "ehyb: array %s does not land in its slot %d", arrays[a].name, a);
            return st;
        }
    }
    fd->row_perm_array = SPMVPORT_EHYB_ROW_PERM;
    fd->col_perm_array = SPMVPORT_EHYB_COL_PERM;
    fd->value_map = b->value_map;
    b->value_map = NULL;
    fd->value_slots = (int64_t)b->ell_slots + b->er_slots;
    fd->deterministic = 1; /* partial sums meet in fixed slot order; the tickets only pick who adds them */
    int64_t *prm = fd->params;
    prm[SPMVPORT_EHYB_P_PARTS] = b->nparts;
    prm[SPMVPORT_EHYB_P_SLICES] = b->nslices;
    prm[SPMVPORT_EHYB_P_ER_ROWS] = b->n_er;
    prm[SPMVPORT_EHYB_P_CHUNKS] = b->n_chunks;
    prm[SPMVPORT_EHYB_P_ER_SLICES] = b->n_er_slices;
    prm[SPMVPORT_EHYB_P_SEG_MAX] = b->seg_max;
    prm[SPMVPORT_EHYB_P_PLAN_ORDERING] = b->plan_ordering;
    prm[SPMVPORT_EHYB_P_BLOCK] = SPMVPORT_EHYB_BLOCK_THREADS;
    prm[SPMVPORT_EHYB_P_ELL_SLOTS] = b->ell_slots;
    prm[SPMVPORT_EHYB_P_ER_SLOTS] = b->er_slots;
    prm[SPMVPORT_EHYB_P_LONG_ROWS] = b->n_long;
    prm[SPMVPORT_EHYB_P_NEAR_SLOTS] = b->near_slots;
    prm[SPMVPORT_EHYB_P_BATCH] = b->batch;
    prm[SPMVPORT_EHYB_P_SPLIT] = b->split;
    prm[SPMVPORT_EHYB_P_HALO] = b->halo_ptr[b->nparts];
    return SPMV_STATUS_SUCCESS;
}

static void write_stats(spmvport_format_data *fd, const ehyb_build *b)
{
    const double nnz = b->A->nnz > 0 ? (double)b->A->nnz : 1.0;
    const double width_avg = b->nslices > 0 ? (double)b->ell_slots / ((double)b->nslices * b->W) : 0.0;
    const double padding = ((double)b->ell_slots + b->er_slots - b->A->nnz) / nnz;
    const int64_t far = b->A->nnz - b->ell_nnz - b->near_nnz;
    spmvport_msg(fd->stats, sizeof fd->stats,
                 "partitioner=%s;K=%lld;P=%d;small=%d;parts=%d;seg_max=%d;seg_budget=%zu;slices=%d;"
                 "ell_width_min=%d;ell_width_avg=%.2f;ell_width_max=%d;near_width_max=%d;ell_nnz_frac=%.4f;er_nnz_frac=%.4f;far_nnz_frac=%.4f;"
                 "far_rows=%d;long_rows=%d;chunks=%d;er_slices=%d;padding_ratio=%.4f;ordering=%s;seed=%d;batch=%d;"
                 "halo=%d;halo_min=%d;split=%d;graph_ms=%.2f;metis_ms=%.2f;halo_ms=%.2f;reorder_ms=%.2f;"
                 "convert_ms=%.2f",
                 b->partitioner ? b->partitioner : "none", (long long)b->K, b->P, b->small, b->nparts, b->seg_max,
                 b->budget, b->nslices, b->width_min, width_avg,
                 b->width_max, b->near_width_max, (double)b->ell_nnz / nnz, (double)(b->A->nnz - b->ell_nnz) / nnz,
                 (double)far / nnz, b->n_er, b->n_long, b->n_chunks, b->n_er_slices, padding,
                 b->plan_ordering ? "plan" : "user", b->seed, b->batch, b->halo_ptr[b->nparts], b->halo_min, b->split,
                 b->graph_ms, b->metis_ms, b->halo_ms, b->reorder_ms, b->convert_ms);
}

#endif /* SPMVPORT_HAVE_METIS */

/* ==================================================================================================
 * The builder
 * ================================================================================================== */

spmv_status_t spmvport_build_ehyb(spmvport_format_data *fd, const spmv_matrix_t *A, const spmv_device_info_t *dev,
                                  const spmv_plan_options_t *opt, char *msg, size_t msglen)
{
#ifndef SPMVPORT_HAVE_METIS
    (void)fd; (void)A; (void)dev; (void)opt;
    spmvport_msg(msg, msglen, "format ehyb needs METIS (Debian libmetis-dev), which was not found when "
                 "libspmvport was built");
    return SPMV_STATUS_NOT_SUPPORTED;
#else
    if (fd->warp_size != 32 && fd->warp_size != 64) {
        spmvport_msg(msg, msglen, "ehyb: warp size %d; the layout is defined for 32 and 64", fd->warp_size);
        return SPMV_STATUS_NOT_SUPPORTED;
    }
    if (opt->ehyb_plan_ordering != 0 && opt->ehyb_plan_ordering != 1) {
        spmvport_msg(msg, msglen, "ehyb: options.ehyb_plan_ordering = %d; expected 0 (user ordering) or 1 (plan "
                     "ordering)", opt->ehyb_plan_ordering);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    /* the partition and the layouts index by column: an internal caller's unchecked matrix stops here */
    spmv_status_t bad = spmvport_check_csr_ranges(A, "ehyb", msg, msglen);
    if (bad != SPMV_STATUS_SUCCESS) return bad;
    if (opt->ehyb_batch != 0 && opt->ehyb_batch != 4 && opt->ehyb_batch != 8) {
        spmvport_msg(msg, msglen, "ehyb: options.ehyb_batch = %d; expected 0 (default), 4 or 8", opt->ehyb_batch);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->ehyb_parts < 0) {
        spmvport_msg(msg, msglen, "ehyb: options.ehyb_parts = %d; expected 0 (default) or a part count",
                     opt->ehyb_parts);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (opt->ehyb_halo < -1) {
        spmvport_msg(msg, msglen, "ehyb: options.ehyb_halo = %d; expected 0 (default), -1 (no halo) or a least "
                     "use count >= 1", opt->ehyb_halo);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    const int warps = SPMVPORT_EHYB_BLOCK_THREADS / fd->warp_size;
    if (opt->ehyb_split < 0 || opt->ehyb_split > warps || (opt->ehyb_split & (opt->ehyb_split - 1)) != 0) {
        spmvport_msg(msg, msglen, "ehyb: options.ehyb_split = %d; expected 0 (default) or a power of two up to the "
                     "block's %d warps", opt->ehyb_split, warps);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    ehyb_build b;
    memset(&b, 0, sizeof b);
    b.A = A;
    b.W = fd->warp_size;
    b.plan_ordering = opt->ehyb_plan_ordering;
    b.seed = opt->ehyb_seed != 0 ? opt->ehyb_seed : EHYB_DEFAULT_SEED;
    b.parts_option = opt->ehyb_parts;
    b.halo_min = opt->ehyb_halo == 0 ? EHYB_HALO_MIN_USES : opt->ehyb_halo < 0 ? 0 : opt->ehyb_halo;
    b.split_option = opt->ehyb_split;
    b.vsize = spmvport_value_size(A->precision);
    b.nv = A->m > A->n ? A->m : A->n;
    choose_part_count(&b, dev);
    b.batch = opt->ehyb_batch; /* 0: chosen from the layout (choose_batch) */

    spmv_status_t st = partition(&b, msg, msglen);
    double t0 = spmvport_now_ms();
    if (st == SPMV_STATUS_SUCCESS) st = select_halos(&b, msg, msglen);
    b.halo_ms = spmvport_now_ms() - t0;
    t0 = spmvport_now_ms();
    if (st == SPMV_STATUS_SUCCESS) st = renumber(&b, msg, msglen);
    double t1 = spmvport_now_ms();
    if (st == SPMV_STATUS_SUCCESS) st = ell_layout(&b, msg, msglen);
    if (st == SPMV_STATUS_SUCCESS) {
        choose_split(&b);
        choose_batch(&b);
    }
    if (st == SPMV_STATUS_SUCCESS) st = er_layout(&b, msg, msglen);
    if (st == SPMV_STATUS_SUCCESS) st = convert(&b, msg, msglen);
    b.reorder_ms = t1 - t0;
    b.convert_ms = spmvport_now_ms() - t1;
    if (st == SPMV_STATUS_SUCCESS) {
        write_stats(fd, &b);
        st = hand_over(fd, &b, msg, msglen);
    }
    build_free(&b);
    return st;
#endif
}
