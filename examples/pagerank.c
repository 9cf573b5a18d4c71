/*
 * pagerank.c -- PageRank by power iteration with libspmvport.
 *
 *   pagerank [--backend auto|cpu|cuda|hip] [--format NAME] [--damping D] [--tol T] [--maxit N] [--every K]
 *            [SCALE | gen:SPEC | FILE.mtx]
 *
 * SCALE (default 14): a Kronecker (R-MAT, Graph500) graph of 2^SCALE vertices and 16 edges per vertex
 * (generator kron:SCALE:16). FILE.mtx / .mtx.gz or gen:SPEC: any square matrix, read as a graph with an edge
 * i -> j for every stored entry (i, j); values are ignored.
 *
 * The iteration: r <- d * (P r + (dangling mass) / n) + (1 - d) / n, where P = A^T with column i scaled by
 * 1 / outdeg(i) (column-stochastic), and the dangling mass is the rank of vertices with no out-edge, spread
 * evenly. It stops when ||r_new - r||_1 <= tol. Exit status: 0 when it converged within maxit iterations, 1
 * otherwise, 2 for a bad command line.
 *
 * What this example shows: building your own matrix from CSR arrays (spmv_matrix_create_csr), a plan made
 * once, and spmv_execute on vectors in the context's device memory. The public API has no BLAS-1, so for
 * illustration the vector updates run on the host on copies; a real GPU code keeps r on the device and uses
 * cuBLAS / hipBLAS or its own kernels for them.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c99 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spmvport.h>

/* ==== command line ========================================================================================== */

typedef struct pr_options {
    spmv_backend_t backend;
    spmv_format_t format;
    double damping, tol;
    int maxit, every;
    const char *matrix; /* "gen:...", a file, or NULL for kron:scale:16 */
    int scale;
} pr_options;

static int usage(void)
{
    fprintf(stderr, "usage: pagerank [--backend auto|cpu|cuda|hip] [--format NAME] [--damping D] [--tol T]\n"
                    "                [--maxit N] [--every K] [SCALE | gen:KIND:PARAMS | FILE.mtx]\n"
                    "                (default: a Kronecker graph, scale 14, 16 edges per vertex)\n");
    return 2;
}

static int parse_backend(const char *s, spmv_backend_t *b)
{
    static const spmv_backend_t all[] = {SPMV_BACKEND_AUTO, SPMV_BACKEND_CPU, SPMV_BACKEND_CUDA, SPMV_BACKEND_HIP};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, spmv_backend_name(all[i])) == 0) { *b = all[i]; return 0; }
    return -1;
}

static int parse_args(int argc, char **argv, pr_options *o)
{
    *o = (pr_options){SPMV_BACKEND_AUTO, SPMV_FORMAT_AUTO, 0.85, 1e-10, 500, 5, NULL, 14};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return -1;
        if (a[0] != '-') {
            char *end;
            long n = strtol(a, &end, 10);
            if (*end == '\0' && n >= 1 && n <= 30) o->scale = (int)n;
            else o->matrix = a;
            continue;
        }
        if (v == NULL) bad = 1;
        else if (strcmp(a, "--backend") == 0) bad = parse_backend(v, &o->backend);
        else if (strcmp(a, "--format") == 0) bad = spmv_format_from_name(v, &o->format) != SPMV_STATUS_SUCCESS;
        else if (strcmp(a, "--damping") == 0) bad = !((o->damping = atof(v)) > 0 && o->damping < 1);
        else if (strcmp(a, "--tol") == 0) bad = !((o->tol = atof(v)) > 0);
        else if (strcmp(a, "--maxit") == 0) bad = (o->maxit = atoi(v)) < 1;
        else if (strcmp(a, "--every") == 0) bad = (o->every = atoi(v)) < 1;
        else bad = 1;
        if (bad) {
            fprintf(stderr, "pagerank: bad option or value: %s %s\n", a, v ? v : "");
            return -1;
        }
        i++;
    }
    return 0;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* ==== the graph: A (edges i -> j) to P = A^T scaled by out-degree ===================================================== */

static spmv_status_t load_graph(const pr_options *o, spmv_matrix_t **A)
{
    char spec[64];
    if (o->matrix == NULL) {
        snprintf(spec, sizeof spec, "kron:%d:16", o->scale);
        return spmv_matrix_generate(A, spec, SPMV_F64, 1);
    }
    if (strncmp(o->matrix, "gen:", 4) == 0) return spmv_matrix_generate(A, o->matrix + 4, SPMV_F64, 1);
    return spmv_matrix_read_mtx(A, o->matrix, SPMV_F64);
}

/* P(j, i) = 1 / outdeg(i) for every edge i -> j: a counting-sort transpose. Sources are visited in increasing
 * order, so the columns of each row of P come out sorted, as spmv_matrix_create_csr wants. *dangling receives 1
 * for the vertices with no out-edge (their column of P is empty). */
static spmv_status_t build_transition(const spmv_matrix_t *A, spmv_matrix_t **P, unsigned char *dangling)
{
    int32_t n, nnz;
    const int32_t *row_ptr, *col_idx;
    const void *values;
    spmv_matrix_get_size(A, &n, NULL, &nnz, NULL);
    spmv_matrix_get_csr(A, &row_ptr, &col_idx, &values);
    int32_t *pt_ptr = calloc((size_t)n + 1, sizeof *pt_ptr), *pt_col = malloc(((size_t)nnz + 1) * sizeof *pt_col);
    int32_t *fill = malloc(((size_t)n + 1) * sizeof *fill);
    double *pt_val = malloc(((size_t)nnz + 1) * sizeof *pt_val);
    spmv_status_t st = SPMV_STATUS_OUT_OF_MEMORY;
    if (pt_ptr && pt_col && fill && pt_val) {
        for (int32_t k = 0; k < nnz; k++) pt_ptr[col_idx[k] + 1]++;          /* in-degree of each target */
        for (int32_t j = 0; j < n; j++) pt_ptr[j + 1] += pt_ptr[j];
        memcpy(fill, pt_ptr, (size_t)n * sizeof *fill);
        for (int32_t i = 0; i < n; i++) {
            int32_t outdeg = row_ptr[i + 1] - row_ptr[i];
            dangling[i] = outdeg == 0;
            for (int32_t k = row_ptr[i]; k < row_ptr[i + 1]; k++) {
                int32_t slot = fill[col_idx[k]]++;
                pt_col[slot] = i;
                pt_val[slot] = 1.0 / outdeg;
            }
        }
        st = spmv_matrix_create_csr(P, n, n, nnz, pt_ptr, pt_col, pt_val, SPMV_F64, 0, 0);
    }
    free(pt_ptr);
    free(pt_col);
    free(fill);
    free(pt_val);
    return st;
}

/* ==== power iteration ======================================================================================================= */

typedef struct pr_state {
    spmv_context_t *ctx;
    spmv_plan_t *plan;
    int32_t n;
    unsigned char *dangling;
    double *rank, *next;  /* host */
    void *d_rank, *d_next; /* device */
    double spmv_ms;        /* wall time of the SpMVs (execute + synchronize), copies excluded */
    int spmvs;
    spmv_status_t error;
} pr_state;

/* next = P rank on the device; only the execute is timed. */
static spmv_status_t apply_transition(pr_state *s)
{
    size_t bytes = (size_t)s->n * sizeof(double);
    spmv_status_t st = spmv_copy_to_device(s->ctx, s->d_rank, s->rank, bytes);
    if (st == SPMV_STATUS_SUCCESS) {
        double t0 = now_ms();
        st = spmv_execute(s->plan, 1.0, s->d_rank, 0.0, s->d_next);
        if (st == SPMV_STATUS_SUCCESS) st = spmv_synchronize(s->ctx);
        s->spmv_ms += now_ms() - t0;
        s->spmvs++;
    }
    if (st == SPMV_STATUS_SUCCESS) st = spmv_copy_to_host(s->ctx, s->next, s->d_next, bytes);
    if (st != SPMV_STATUS_SUCCESS) s->error = st;
    return st;
}

/* One step on the host (illustration: a GPU code does this in a kernel); returns ||next - rank||_1 and makes
 * next the new rank. */
static double update_rank(pr_state *s, double damping)
{
    double lost = 0;
    for (int32_t i = 0; i < s->n; i++)
        if (s->dangling[i]) lost += s->rank[i];
    double teleport = (damping * lost + (1.0 - damping)) / s->n, diff = 0;
    for (int32_t i = 0; i < s->n; i++) {
        double v = damping * s->next[i] + teleport;
        diff += fabs(v - s->rank[i]);
        s->rank[i] = v;
    }
    return diff;
}

/* Returns the iteration count, or -1 on an error; *diff receives the last L1 change. */
static int iterate(pr_state *s, const pr_options *o, double *diff)
{
    for (int32_t i = 0; i < s->n; i++) s->rank[i] = 1.0 / s->n;
    *diff = INFINITY;
    int it = 0;
    while (it < o->maxit && *diff > o->tol) {
        if (apply_transition(s) != SPMV_STATUS_SUCCESS) return -1;
        *diff = update_rank(s, o->damping);
        it++;
        if (it % o->every == 0) printf("iter %4d  ||r_new - r||_1 = %.3e\n", it, *diff);
    }
    if (it % o->every != 0) printf("iter %4d  ||r_new - r||_1 = %.3e\n", it, *diff); /* the last one */
    return it;
}

static void print_top5(const pr_state *s)
{
    int32_t top[5] = {-1, -1, -1, -1, -1};
    for (int32_t i = 0; i < s->n; i++) { /* keep the 5 best, sorted, by insertion */
        int k = 5;
        while (k > 0 && (top[k - 1] < 0 || s->rank[i] > s->rank[top[k - 1]])) k--;
        if (k >= 5) continue;
        memmove(top + k + 1, top + k, (size_t)(4 - k) * sizeof *top);
        top[k] = i;
    }
    double sum = 0;
    for (int32_t i = 0; i < s->n; i++) sum += s->rank[i];
    printf("sum of ranks %.12f; top 5:\n", sum);
    for (int k = 0; k < 5 && top[k] >= 0; k++) printf("  %d. vertex %d  rank %.6e\n", k + 1, top[k], s->rank[top[k]]);
}

/* ==== main ===================================================================================================================== */

static int fail(const char *what, spmv_status_t st, const spmv_context_t *ctx)
{
    fprintf(stderr, "pagerank: %s: %s: %s\n", what, spmv_status_string(st), spmv_last_error(ctx));
    return 1;
}

/* Graph -> transition matrix -> plan; the matrices are not needed after that. */
static int make_plan(pr_state *s, const pr_options *o)
{
    spmv_matrix_t *A = NULL, *P = NULL;
    spmv_status_t st = load_graph(o, &A);
    if (st != SPMV_STATUS_SUCCESS) return fail("graph", st, NULL);
    int32_t m, n, nnz;
    spmv_matrix_get_size(A, &m, &n, &nnz, NULL);
    if (m != n) {
        fprintf(stderr, "pagerank: the matrix is %d x %d; a graph's adjacency matrix is square\n", m, n);
        spmv_matrix_destroy(A);
        return 1;
    }
    s->n = n;
    s->dangling = malloc((size_t)n + 1);
    st = s->dangling ? build_transition(A, &P, s->dangling) : SPMV_STATUS_OUT_OF_MEMORY;
    spmv_matrix_destroy(A);
    if (st != SPMV_STATUS_SUCCESS) return fail("transition matrix", st, NULL);
    st = spmv_plan_create(&s->plan, s->ctx, P, o->format, NULL);
    spmv_matrix_destroy(P);
    if (st != SPMV_STATUS_SUCCESS) return fail("plan", st, s->ctx);
    int32_t dangling = 0;
    for (int32_t i = 0; i < n; i++) dangling += s->dangling[i];
    spmv_device_info_t dev;
    spmv_plan_info_t info;
    spmv_context_get_info(s->ctx, &dev);
    spmv_plan_get_info(s->plan, &info);
    printf("PageRank on %d vertices, %d edges (%d dangling); %s; format %s (build %.2f ms, upload %.2f ms)\n", n,
           nnz, dangling, dev.name, spmv_format_name(info.format), info.build_ms, info.upload_ms);
    return 0;
}

static int alloc_vectors(pr_state *s)
{
    size_t bytes = (size_t)s->n * sizeof(double);
    s->rank = malloc(bytes + 1);
    s->next = malloc(bytes + 1);
    if (s->rank == NULL || s->next == NULL) return fail("vectors", SPMV_STATUS_OUT_OF_MEMORY, NULL);
    spmv_status_t st = spmv_malloc(s->ctx, &s->d_rank, bytes);
    if (st == SPMV_STATUS_SUCCESS) st = spmv_malloc(s->ctx, &s->d_next, bytes);
    return st == SPMV_STATUS_SUCCESS ? 0 : fail("device vectors", st, s->ctx);
}

static int run(pr_state *s, const pr_options *o)
{
    spmv_status_t st = spmv_context_create(&s->ctx, o->backend, 0);
    if (st != SPMV_STATUS_SUCCESS) return fail("context", st, NULL);
    if (make_plan(s, o) != 0 || alloc_vectors(s) != 0) return 1;
    double diff;
    int iters = iterate(s, o, &diff);
    if (iters < 0) return fail("SpMV", s->error, s->ctx);
    int converged = diff <= o->tol;
    printf("%s after %d iterations (||r_new - r||_1 = %.3e, tol %.1e, damping %.2f)\n",
           converged ? "converged" : "NOT converged", iters, diff, o->tol, o->damping);
    printf("time per SpMV: %.4f ms (execute + synchronize, %d calls)\n", s->spmv_ms / s->spmvs, s->spmvs);
    print_top5(s);
    return converged ? 0 : 1;
}

int main(int argc, char **argv)
{
    pr_options o;
    if (parse_args(argc, argv, &o) != 0) return usage();
    pr_state s;
    memset(&s, 0, sizeof s);
    int rc = run(&s, &o);
    if (s.ctx != NULL) {
        spmv_free(s.ctx, s.d_rank);
        spmv_free(s.ctx, s.d_next);
    }
    free(s.rank);
    free(s.next);
    free(s.dangling);
    spmv_plan_destroy(s.plan);
    spmv_context_destroy(s.ctx);
    return rc;
}
