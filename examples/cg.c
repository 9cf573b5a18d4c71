/*
 * cg.c -- conjugate gradient with libspmvport: solve A x = b for a symmetric positive-definite A.
 *
 *   cg [--backend auto|cpu|cuda|hip] [--format NAME] [--tol T] [--maxit N] [--every K] [N | gen:SPEC | FILE.mtx]
 *
 * N (default 32): the 7-point Laplacian on an N^3 grid (generator stencil3d:7:N), which is SPD, so CG converges.
 * gen:SPEC: any generator of spmv_matrix_generate; FILE.mtx / FILE.mtx.gz: a Matrix Market file, which must be
 * SPD for CG to converge (symmetric files are expanded by the reader).
 *
 * The right-hand side is b = A x_true for a random x_true, so the final error can be reported too.
 * Exit status: 0 when ||b - A x|| / ||b|| <= tol within maxit iterations, 1 otherwise, 2 for a bad command line.
 *
 * What this example shows: the matrix is uploaded once into a plan; every iteration runs spmv_execute on
 * vectors that live in the context's device memory (spmv_malloc). The public API has no BLAS-1, so for
 * illustration the dot products and axpys run on the host, on vectors copied back each iteration. A real GPU
 * solver keeps every vector on the device and uses cuBLAS / hipBLAS (or its own kernels) for those: the copies
 * here cost more than the SpMV on a GPU, which is why the time per SpMV is measured on its own.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c99 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spmvport.h>

/* ==== command line ========================================================================================== */

typedef struct cg_options {
    spmv_backend_t backend;
    spmv_format_t format;
    double tol;
    int maxit, every;
    const char *matrix; /* "gen:...", a file, or NULL for stencil3d:7:grid */
    int grid;
} cg_options;

static int usage(void)
{
    fprintf(stderr, "usage: cg [--backend auto|cpu|cuda|hip] [--format NAME] [--tol T] [--maxit N] [--every K]\n"
                    "          [N | gen:KIND:PARAMS | FILE.mtx]   (default: the 7-point Laplacian on 32^3)\n");
    return 2;
}

static int parse_backend(const char *s, spmv_backend_t *b)
{
    static const spmv_backend_t all[] = {SPMV_BACKEND_AUTO, SPMV_BACKEND_CPU, SPMV_BACKEND_CUDA, SPMV_BACKEND_HIP};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, spmv_backend_name(all[i])) == 0) { *b = all[i]; return 0; }
    return -1;
}

static int parse_args(int argc, char **argv, cg_options *o)
{
    *o = (cg_options){SPMV_BACKEND_AUTO, SPMV_FORMAT_AUTO, 1e-8, 2000, 10, NULL, 32};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return -1;
        if (a[0] != '-') {
            char *end;
            long n = strtol(a, &end, 10);
            if (*end == '\0' && n >= 2 && n <= 1000) o->grid = (int)n;
            else o->matrix = a;
            continue;
        }
        if (v == NULL) bad = 1;
        else if (strcmp(a, "--backend") == 0) bad = parse_backend(v, &o->backend);
        else if (strcmp(a, "--format") == 0) bad = spmv_format_from_name(v, &o->format) != SPMV_STATUS_SUCCESS;
        else if (strcmp(a, "--tol") == 0) bad = !((o->tol = atof(v)) > 0);
        else if (strcmp(a, "--maxit") == 0) bad = (o->maxit = atoi(v)) < 1;
        else if (strcmp(a, "--every") == 0) bad = (o->every = atoi(v)) < 1;
        else bad = 1;
        if (bad) {
            fprintf(stderr, "cg: bad option or value: %s %s\n", a, v ? v : "");
            return -1;
        }
        i++;
    }
    return 0;
}

/* ==== host BLAS-1 (illustration only: a GPU solver would use cuBLAS / hipBLAS on device vectors) ================= */

static double dot(const double *a, const double *b, int32_t n)
{
    double s = 0;
    for (int32_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static void axpy(double alpha, const double *x, double *y, int32_t n) /* y += alpha x */
{
    for (int32_t i = 0; i < n; i++) y[i] += alpha * x[i];
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* ==== the solver state ============================================================================================ */

typedef struct cg_state {
    spmv_context_t *ctx;
    spmv_plan_t *plan;
    int32_t n;
    double *x, *r, *p, *q, *b, *x_true; /* host */
    void *dp, *dq;                       /* device: the SpMV's input and output */
    double spmv_ms;                      /* wall time of the SpMVs (execute + synchronize), copies excluded */
    int spmvs;
    spmv_status_t error;                 /* the first failure of apply_matrix */
} cg_state;

/* q = A p on the device: copy p in, execute, copy q out. Only the execute is timed. */
static spmv_status_t apply_matrix(cg_state *s, const double *in, double *out)
{
    size_t bytes = (size_t)s->n * sizeof(double);
    spmv_status_t st = spmv_copy_to_device(s->ctx, s->dp, in, bytes);
    if (st != SPMV_STATUS_SUCCESS) return st;
    double t0 = now_ms();
    st = spmv_execute(s->plan, 1.0, s->dp, 0.0, s->dq);
    if (st == SPMV_STATUS_SUCCESS) st = spmv_synchronize(s->ctx);
    s->spmv_ms += now_ms() - t0;
    s->spmvs++;
    if (st == SPMV_STATUS_SUCCESS) st = spmv_copy_to_host(s->ctx, out, s->dq, bytes);
    if (st != SPMV_STATUS_SUCCESS && s->error == SPMV_STATUS_SUCCESS) s->error = st;
    return st;
}

static spmv_status_t load_matrix(const cg_options *o, spmv_matrix_t **A)
{
    char spec[64];
    if (o->matrix == NULL) {
        snprintf(spec, sizeof spec, "stencil3d:7:%d", o->grid);
        return spmv_matrix_generate(A, spec, SPMV_F64, 1);
    }
    if (strncmp(o->matrix, "gen:", 4) == 0) return spmv_matrix_generate(A, o->matrix + 4, SPMV_F64, 1);
    return spmv_matrix_read_mtx(A, o->matrix, SPMV_F64);
}

static int alloc_state(cg_state *s, int32_t n)
{
    s->n = n;
    double **host[] = {&s->x, &s->r, &s->p, &s->q, &s->b, &s->x_true};
    for (int i = 0; i < 6; i++)
        if ((*host[i] = calloc((size_t)n + 1, sizeof(double))) == NULL) return -1;
    if (spmv_malloc(s->ctx, &s->dp, (size_t)n * sizeof(double)) != SPMV_STATUS_SUCCESS) return -1;
    if (spmv_malloc(s->ctx, &s->dq, (size_t)n * sizeof(double)) != SPMV_STATUS_SUCCESS) return -1;
    return 0;
}

static void free_state(cg_state *s)
{
    free(s->x); free(s->r); free(s->p); free(s->q); free(s->b); free(s->x_true);
    if (s->ctx != NULL) {
        spmv_free(s->ctx, s->dp);
        spmv_free(s->ctx, s->dq);
    }
    spmv_plan_destroy(s->plan);
    spmv_context_destroy(s->ctx);
}

/* ==== conjugate gradient ================================================================================================ */

/* x_true random in [0, 1) (fixed seed), b = A x_true, x = 0. */
static spmv_status_t setup_problem(cg_state *s)
{
    uint64_t seed = 12345;
    for (int32_t i = 0; i < s->n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        s->x_true[i] = (double)(seed >> 11) * 0x1.0p-53;
    }
    return apply_matrix(s, s->x_true, s->b);
}

/* Returns the iteration count, or -1 on an error; *rel_res receives ||r|| / ||b||. */
static int solve(cg_state *s, const cg_options *o, double *rel_res)
{
    int32_t n = s->n;
    double bnorm = sqrt(dot(s->b, s->b, n));
    if (bnorm == 0) bnorm = 1;
    memcpy(s->r, s->b, (size_t)n * sizeof(double)); /* x = 0: r = b */
    memcpy(s->p, s->r, (size_t)n * sizeof(double));
    double rr = dot(s->r, s->r, n);
    *rel_res = sqrt(rr) / bnorm;
    printf("iter %5d  ||r||/||b|| = %.3e\n", 0, *rel_res);
    int it = 0;
    while (it < o->maxit && *rel_res > o->tol) {
        if (apply_matrix(s, s->p, s->q) != SPMV_STATUS_SUCCESS) return -1;
        double pq = dot(s->p, s->q, n);
        if (!(pq > 0)) {
            fprintf(stderr, "cg: p'Ap = %g at iteration %d: the matrix is not positive definite\n", pq, it + 1);
            return it;
        }
        double alpha = rr / pq;
        axpy(alpha, s->p, s->x, n);
        axpy(-alpha, s->q, s->r, n);
        double rr_new = dot(s->r, s->r, n);
        for (int32_t i = 0; i < n; i++) s->p[i] = s->r[i] + (rr_new / rr) * s->p[i];
        rr = rr_new;
        *rel_res = sqrt(rr) / bnorm;
        it++;
        if (it % o->every == 0) printf("iter %5d  ||r||/||b|| = %.3e\n", it, *rel_res);
    }
    if (it % o->every != 0) printf("iter %5d  ||r||/||b|| = %.3e\n", it, *rel_res); /* the last one */
    return it;
}

/* The recurrence's residual drifts from the true one; recompute ||b - A x|| and the error against x_true. */
static int report_solution(cg_state *s, double *true_res)
{
    if (apply_matrix(s, s->x, s->q) != SPMV_STATUS_SUCCESS) return -1;
    double rr = 0, bb = dot(s->b, s->b, s->n), ee = 0, xx = dot(s->x_true, s->x_true, s->n);
    for (int32_t i = 0; i < s->n; i++) {
        double ri = s->b[i] - s->q[i], ei = s->x[i] - s->x_true[i];
        rr += ri * ri;
        ee += ei * ei;
    }
    *true_res = sqrt(rr / (bb > 0 ? bb : 1));
    printf("true residual ||b - Ax||/||b|| = %.3e, error ||x - x_true||/||x_true|| = %.3e\n", *true_res,
           sqrt(ee / (xx > 0 ? xx : 1)));
    return 0;
}

/* spmv_plan_time: device-timed SpMVs (events on a GPU), median; the figure to compare with spmvport-bench. */
static void report_spmv_time(cg_state *s)
{
    enum { WARMUP = 10, ITERS = 50 };
    double ms[ITERS];
    if (spmv_plan_time(s->plan, 1.0, s->dp, 0.0, s->dq, WARMUP, ITERS, ms) != SPMV_STATUS_SUCCESS) return;
    for (int i = 1; i < ITERS; i++) /* insertion sort: 50 numbers */
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) { double t = ms[j]; ms[j] = ms[j - 1]; ms[j - 1] = t; }
    printf("time per SpMV: %.4f ms in the solve (execute + synchronize, %d calls), %.4f ms median of %d "
           "spmv_plan_time launches\n", s->spmv_ms / s->spmvs, s->spmvs, 0.5 * (ms[ITERS / 2 - 1] + ms[ITERS / 2]),
           ITERS);
}

/* ==== main ================================================================================================================== */

static int fail(const char *what, spmv_status_t st, const spmv_context_t *ctx)
{
    fprintf(stderr, "cg: %s: %s: %s\n", what, spmv_status_string(st), spmv_last_error(ctx));
    return 1;
}

/* The plan is made once; the matrix is not needed after that. */
static int make_plan(cg_state *s, const cg_options *o)
{
    spmv_matrix_t *A = NULL;
    spmv_status_t st = load_matrix(o, &A);
    if (st != SPMV_STATUS_SUCCESS) return fail("matrix", st, NULL);
    int32_t m, n, nnz;
    spmv_matrix_get_size(A, &m, &n, &nnz, NULL);
    if (m != n) {
        fprintf(stderr, "cg: the matrix is %d x %d; CG needs a square one\n", m, n);
        spmv_matrix_destroy(A);
        return 1;
    }
    st = spmv_plan_create(&s->plan, s->ctx, A, o->format, NULL);
    spmv_matrix_destroy(A);
    if (st != SPMV_STATUS_SUCCESS) return fail("plan", st, s->ctx);
    spmv_device_info_t dev;
    spmv_plan_info_t info;
    spmv_context_get_info(s->ctx, &dev);
    spmv_plan_get_info(s->plan, &info);
    printf("CG on %d x %d, %d non-zeros; %s; format %s (build %.2f ms, upload %.2f ms)\n", m, n, nnz, dev.name,
           spmv_format_name(info.format), info.build_ms, info.upload_ms);
    return alloc_state(s, n) == 0 ? 0 : fail("allocation", SPMV_STATUS_OUT_OF_MEMORY, s->ctx);
}

static int run(cg_state *s, const cg_options *o)
{
    spmv_status_t st = spmv_context_create(&s->ctx, o->backend, 0);
    if (st != SPMV_STATUS_SUCCESS) return fail("context", st, NULL);
    if (make_plan(s, o) != 0) return 1;
    if ((st = setup_problem(s)) != SPMV_STATUS_SUCCESS) return fail("b = A x_true", st, s->ctx);
    double rel_res, true_res;
    int iters = solve(s, o, &rel_res);
    if (iters < 0 || report_solution(s, &true_res) != 0) return fail("SpMV", s->error, s->ctx);
    int converged = rel_res <= o->tol && true_res <= 10 * o->tol; /* the true residual may drift a little */
    printf("%s after %d iterations (tol %.1e)\n", converged ? "converged" : "NOT converged", iters, o->tol);
    report_spmv_time(s);
    return converged ? 0 : 1;
}

int main(int argc, char **argv)
{
    cg_options o;
    if (parse_args(argc, argv, &o) != 0) return usage();
    cg_state s;
    memset(&s, 0, sizeof s);
    int rc = run(&s, &o);
    free_state(&s);
    return rc;
}
