/*
 * support.c -- shared test machinery; see support.h.
 */
#define _GNU_SOURCE
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- device models ------------------------------------------------------------------------------------ */

const spmv_device_info_t support_gpu_models[SUPPORT_GPU_MODELS] = {
    {.backend = SPMV_BACKEND_CUDA, .name = "H200", .warp_size = 32, .multiprocessors = 132,
     .shared_mem_per_block = 232448, .l2_bytes = (size_t)60 << 20, .compute_capability = 90},
    {.backend = SPMV_BACKEND_HIP, .name = "MI250-like", .warp_size = 64, .multiprocessors = 110,
     .shared_mem_per_block = 65536, .l2_bytes = (size_t)8 << 20, .compute_capability = 0x90a},
    {.backend = SPMV_BACKEND_HIP, .name = "RDNA2-like", .warp_size = 32, .multiprocessors = 40,
     .shared_mem_per_block = 65536, .l2_bytes = (size_t)4 << 20, .compute_capability = 0x1030},
    {.backend = SPMV_BACKEND_CUDA, .name = "Orin-like", .warp_size = 32, .multiprocessors = 16,
     .shared_mem_per_block = 166912, .l2_bytes = (size_t)4 << 20, .compute_capability = 87}};

/* ---- builds ------------------------------------------------------------------------------------------ */

spmv_status_t support_build_quietly(spmvport_format_data *fd, const spmv_matrix_t *A, spmv_format_t format,
                                    int warp_size, const spmv_device_info_t *dev, const spmv_plan_options_t *opt,
                                    char *msg, size_t msglen, long *printed)
{
    fflush(stdout);
    FILE *out = tmpfile();
    cr_assert(out != NULL);
    const int saved = dup(1);
    cr_assert(saved >= 0 && dup2(fileno(out), 1) >= 0);
    const spmv_status_t st = spmvport_format_build(fd, A, format, warp_size, dev, opt, msg, msglen);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    *printed = (fseek(out, 0, SEEK_END), ftell(out));
    fclose(out);
    return st;
}

/* ---- random numbers ------------------------------------------------------------------------------------ */

uint64_t support_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { return (double)(support_splitmix(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0; }

void support_random_vector(void *v, int64_t count, spmv_precision_t precision, uint64_t seed)
{
    uint64_t s = seed * 7919u + 17u;
    for (int64_t i = 0; i < count; i++) {
        double r = uniform(&s);
        if (precision == SPMV_F32) ((float *)v)[i] = (float)r;
        else ((double *)v)[i] = r;
    }
}

void support_tmp_path(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "%s/%ld-%s", SPMVPORT_TEST_TMPDIR, (long)getpid(), tag);
}

/* ---- the edge-case corpus ---------------------------------------------------------------------------------- */

/* A matrix from COO triplets (may be unsorted or repeated: flags decide). */
static spmv_matrix_t *from_coo(int32_t m, int32_t n, int32_t nnz, const int32_t *ri, const int32_t *ci,
                               const double *v, spmv_precision_t p, unsigned flags)
{
    int32_t *ptr = calloc((size_t)m + 1, sizeof *ptr);
    int32_t *col = malloc(((size_t)nnz + 1) * sizeof *col);
    double *val = malloc(((size_t)nnz + 1) * sizeof *val);
    float *valf = malloc(((size_t)nnz + 1) * sizeof *valf);
    int32_t *fill = calloc((size_t)m + 1, sizeof *fill);
    cr_assert(ptr && col && val && valf && fill);
    for (int32_t k = 0; k < nnz; k++) ptr[ri[k] + 1]++;
    for (int32_t i = 0; i < m; i++) ptr[i + 1] += ptr[i];
    for (int32_t k = 0; k < nnz; k++) { /* keep the given order inside each row */
        int32_t pos = ptr[ri[k]] + fill[ri[k]]++;
        col[pos] = ci[k];
        val[pos] = v[k];
        valf[pos] = (float)v[k];
    }
    spmv_matrix_t *A = NULL;
    spmv_status_t st = spmv_matrix_create_csr(&A, m, n, nnz, ptr, col, p == SPMV_F32 ? (void *)valf : (void *)val,
                                              p, 0, flags);
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "corpus matrix: %s", spmv_last_error(NULL));
    free(ptr); free(col); free(val); free(valf); free(fill);
    return A;
}

/* Builder state for triplet lists. */
typedef struct { int32_t *r, *c; double *v; int32_t n, cap; } triplets;

static void push(triplets *t, int32_t r, int32_t c, double v)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->r = realloc(t->r, (size_t)t->cap * sizeof *t->r);
        t->c = realloc(t->c, (size_t)t->cap * sizeof *t->c);
        t->v = realloc(t->v, (size_t)t->cap * sizeof *t->v);
        cr_assert(t->r && t->c && t->v);
    }
    t->r[t->n] = r; t->c[t->n] = c; t->v[t->n] = v; t->n++;
}

static spmv_matrix_t *take(triplets *t, int32_t m, int32_t n, spmv_precision_t p, unsigned flags)
{
    /* unsorted rows and repeats are summed unless a case asks for stricter flags: the sorted input takes the
     * identity path either way */
    spmv_matrix_t *A = from_coo(m, n, t->n, t->r, t->c, t->v, p, flags ? flags : SPMV_MATRIX_SUM_DUPLICATES);
    free(t->r); free(t->c); free(t->v);
    memset(t, 0, sizeof *t);
    return A;
}

static spmv_matrix_t *generated(const char *spec, spmv_precision_t p)
{
    spmv_matrix_t *A = NULL;
    cr_assert_eq(spmv_matrix_generate(&A, spec, p, 42), SPMV_STATUS_SUCCESS, "%s: %s", spec, spmv_last_error(NULL));
    return A;
}

int support_edge_corpus(spmv_precision_t p, support_case **out)
{
    enum { MAX_CASES = 24 };
    support_case *c = calloc(MAX_CASES, sizeof *c);
    cr_assert(c);
    int k = 0;
    uint64_t s = 99;
    triplets t = {0};
    c[k++] = (support_case){"empty 0x0", take(&t, 0, 0, p, 0)};
    c[k++] = (support_case){"no entries 5x7", take(&t, 5, 7, p, 0)};
    push(&t, 0, 0, 3.5);
    c[k++] = (support_case){"1x1", take(&t, 1, 1, p, 0)};
    for (int32_t j = 0; j < 300; j += 2) push(&t, 0, j, uniform(&s));
    c[k++] = (support_case){"1x300", take(&t, 1, 300, p, 0)};
    for (int32_t i = 0; i < 300; i += 3) push(&t, i, 0, uniform(&s));
    c[k++] = (support_case){"300x1", take(&t, 300, 1, p, 0)};
    for (int32_t i = 0; i < 400; i++) /* empty rows: leading, trailing, and runs in between */
        if (i >= 7 && i < 380 && (i % 5 == 0 || (i > 100 && i < 170)) == 0)
            for (int32_t j = 0; j < 1 + i % 9; j++) push(&t, i, (i * 7 + j * 13) % 400, uniform(&s));
    c[k++] = (support_case){"empty rows 400x400", take(&t, 400, 400, p, SPMV_MATRIX_SUM_DUPLICATES)};
    for (int32_t i = 0; i < 200; i++)
        for (int32_t j = 0; j < 3; j++) push(&t, i, (i * 31 + j * 977) % 5000, uniform(&s));
    c[k++] = (support_case){"wide 200x5000", take(&t, 200, 5000, p, SPMV_MATRIX_SORT)};
    for (int32_t i = 0; i < 5000; i++) push(&t, i, i % 37, uniform(&s));
    c[k++] = (support_case){"tall 5000x37", take(&t, 5000, 37, p, 0)};
    for (int32_t i = 0; i < 3000; i++) push(&t, i, i, 2.0);
    for (int32_t j = 0; j < 3000; j++) if (j != 17) push(&t, 17, j, uniform(&s));
    c[k++] = (support_case){"one dense row 3000", take(&t, 3000, 3000, p, 0)};
    for (int32_t i = 0; i < 3000; i++) {
        if (i != 5) push(&t, i, i, 2.0);
        push(&t, i, 5, uniform(&s));
    }
    c[k++] = (support_case){"one dense column 3000", take(&t, 3000, 3000, p, SPMV_MATRIX_SORT)};
    for (int32_t j = 0; j < 70000; j++) push(&t, 1, j, uniform(&s)); /* one row longer than a whole block */
    push(&t, 2, 3, 1.0);
    c[k++] = (support_case){"row of 70000 in 4x70000", take(&t, 4, 70000, p, 0)};
    for (int32_t i = 0; i < 500; i++)
        for (int32_t j = 0; j < 6; j++) push(&t, i, (int32_t)((support_splitmix(&s) >> 33) % 500), uniform(&s));
    c[k++] = (support_case){"unsorted with duplicates 500", take(&t, 500, 500, p, SPMV_MATRIX_SUM_DUPLICATES)};
    for (int32_t i = 0; i < 500; i++)
        for (int32_t j = 5; j >= 0; j--) push(&t, i, (i + j * 83) % 500, uniform(&s));
    c[k++] = (support_case){"unsorted 500", take(&t, 500, 500, p, SPMV_MATRIX_SORT)};
    c[k++] = (support_case){"power-law kron:11:8", generated("kron:11:8", p)};
    c[k++] = (support_case){"circuit:20000", generated("circuit:20000", p)};
    c[k++] = (support_case){"stencil2d:5:40", generated("stencil2d:5:40", p)};
    c[k++] = (support_case){"fem3d:3:5", generated("fem3d:3:5", p)};
    c[k++] = (support_case){"lp:300:900:7", generated("lp:300:900:7", p)};
    cr_assert(k <= MAX_CASES);
    *out = c;
    return k;
}

void support_cases_free(support_case *cases, int count)
{
    for (int i = 0; i < count; i++) spmv_matrix_destroy(cases[i].A);
    free(cases);
}

/* ---- shared matrices ---------------------------------------------------------------------------------------- */

const char *support_matrix_dir(void)
{
    const char *env = getenv("SPMVPORT_MATRIX_DIR");
    return env && *env ? env : SPMVPORT_SHARED_MATRICES;
}

int support_shared_names(char ***names)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST.tsv", support_matrix_dir());
    FILE *f = fopen(path, "r");
    *names = NULL;
    if (f == NULL) return 0;
    char line[4096];
    int count = 0, cap = 0, row = 0;
    /* SPMVPORT_TEST_QUICK (the sanitizer build): every fourth matrix, so slow instrumented runs stay short */
    int stride = getenv("SPMVPORT_TEST_QUICK") ? 4 : 1;
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (tab == NULL || strncmp(line, "name\t", 5) == 0) continue;
        if (row++ % stride != 0) continue;
        *tab = '\0';
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            *names = realloc(*names, (size_t)cap * sizeof **names);
        }
        (*names)[count++] = strdup(line);
    }
    fclose(f);
    return count;
}

void support_names_free(char **names, int count)
{
    for (int i = 0; i < count; i++) free(names[i]);
    free(names);
}

spmv_matrix_t *support_read_shared(const char *name, spmv_precision_t precision)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.mtx.gz", support_matrix_dir(), name);
    spmv_matrix_t *A = NULL;
    spmv_status_t st = spmv_matrix_read_mtx(&A, path, precision);
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "reading %s: %s", path, spmv_last_error(NULL));
    return A;
}

/* ---- contexts and the checker ------------------------------------------------------------------------------- */

spmv_context_t *support_context_or_skip(spmv_backend_t backend)
{
    spmv_context_t *ctx = NULL;
    spmv_status_t st = spmv_context_create(&ctx, backend, 0);
    if (st == SPMV_STATUS_BACKEND_UNAVAILABLE) cr_skip_test("%s", spmv_last_error(NULL));
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "context: %s", spmv_last_error(NULL));
    return ctx;
}

static void *device_copy(spmv_context_t *ctx, const void *host, size_t bytes)
{
    void *d = NULL;
    cr_assert_eq(spmv_malloc(ctx, &d, bytes), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    cr_assert_eq(spmv_copy_to_device(ctx, d, host, bytes), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    return d;
}

double support_check_format(spmv_context_t *ctx, spmv_format_t format, const spmv_plan_options_t *options,
                            const char *name, const spmv_matrix_t *A, int allow_unsupported)
{
    static const double cases[3][2] = {{1, 0}, {2, 0.5}, {-1, 1}};
    int32_t m, n;
    spmv_precision_t p;
    spmv_matrix_get_size(A, &m, &n, NULL, &p);
    size_t vs = p == SPMV_F32 ? sizeof(float) : sizeof(double);
    spmv_plan_t *plan = NULL;
    spmv_status_t st = spmv_plan_create(&plan, ctx, A, format, options);
    if (st == SPMV_STATUS_NOT_SUPPORTED && allow_unsupported) return -1;
    cr_assert_eq(st, SPMV_STATUS_SUCCESS, "%s/%s: plan: %s", name, spmv_format_name(format), spmv_last_error(ctx));
    spmv_plan_info_t info;
    cr_assert_eq(spmv_plan_get_info(plan, &info), SPMV_STATUS_SUCCESS);

    void *x = malloc(vs * (size_t)(n + 1)), *y0 = malloc(vs * (size_t)(m + 1));
    void *y1 = malloc(vs * (size_t)(m + 1)), *y2 = malloc(vs * (size_t)(m + 1));
    cr_assert(x && y0 && y1 && y2);
    support_random_vector(x, n, p, 1);
    double worst = 0;
    for (int c = 0; c < 3; c++) {
        double alpha = cases[c][0], beta = cases[c][1];
        support_random_vector(y0, m, p, 2 + (uint64_t)c);
        if (beta == 0) /* poison: a kernel that reads y when beta = 0 turns it into NaN */
            for (int32_t i = 0; i < m; i++) {
                if (p == SPMV_F32) ((float *)y0)[i] = NAN;
                else ((double *)y0)[i] = NAN;
            }
        void *dx = device_copy(ctx, x, vs * (size_t)n), *dy = device_copy(ctx, y0, vs * (size_t)m);
        cr_assert_eq(spmv_execute(plan, alpha, dx, beta, dy), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
        cr_assert_eq(spmv_copy_to_host(ctx, y1, dy, vs * (size_t)m), SPMV_STATUS_SUCCESS);
        /* repeat from the same y0: the second call must give the same answer */
        cr_assert_eq(spmv_copy_to_device(ctx, dy, y0, vs * (size_t)m), SPMV_STATUS_SUCCESS);
        cr_assert_eq(spmv_execute(plan, alpha, dx, beta, dy), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
        cr_assert_eq(spmv_copy_to_host(ctx, y2, dy, vs * (size_t)m), SPMV_STATUS_SUCCESS);
        spmv_free(ctx, dx);
        spmv_free(ctx, dy);
        double ratio;
        int32_t row;
        cr_assert_eq(spmv_reference_check(A, alpha, x, beta, y0, y1, &ratio, &row), SPMV_STATUS_SUCCESS);
        cr_assert(ratio <= 1.0, "%s/%s/%s alpha=%g beta=%g: row %d off by %g x the bound", name,
                  spmv_format_name(info.format), p == SPMV_F32 ? "f32" : "f64", alpha, beta, row, ratio);
        if (info.deterministic)
            cr_assert(memcmp(y1, y2, vs * (size_t)m) == 0, "%s/%s: repeated execute differs bitwise", name,
                      spmv_format_name(info.format));
        cr_assert_eq(spmv_reference_check(A, alpha, x, beta, y0, y2, &ratio, &row), SPMV_STATUS_SUCCESS);
        cr_assert(ratio <= 1.0, "%s/%s repeated execute: row %d off by %g x the bound", name,
                  spmv_format_name(info.format), row, ratio);
        if (ratio > worst) worst = ratio;
    }
    free(x); free(y0); free(y1); free(y2);
    spmv_plan_destroy(plan);
    return worst;
}

void support_check_corpus(spmv_context_t *ctx, spmv_format_t format, const spmv_plan_options_t *options,
                          spmv_precision_t p)
{
    support_case *cases;
    int n = support_edge_corpus(p, &cases);
    for (int i = 0; i < n; i++) support_check_format(ctx, format, options, cases[i].name, cases[i].A, 0);
    support_cases_free(cases, n);
}

void support_check_shared(spmv_context_t *ctx, spmv_format_t format, const spmv_plan_options_t *options,
                          spmv_precision_t p)
{
    char **names;
    int n = support_shared_names(&names);
    cr_assert(n > 0, "no shared matrices in %s", support_matrix_dir());
    for (int i = 0; i < n; i++) {
        spmv_matrix_t *A = support_read_shared(names[i], p);
        support_check_format(ctx, format, options, names[i], A, 0);
        spmv_matrix_destroy(A);
    }
    support_names_free(names, n);
}

void support_check_plan_against(spmv_context_t *ctx, spmv_plan_t *plan, const spmv_matrix_t *B, const char *name)
{
    int32_t m, n;
    spmv_precision_t p;
    spmv_matrix_get_size(B, &m, &n, NULL, &p);
    size_t vs = p == SPMV_F32 ? sizeof(float) : sizeof(double);
    void *x = malloc(vs * ((size_t)n + 1)), *y0 = malloc(vs * ((size_t)m + 1)), *y = malloc(vs * ((size_t)m + 1));
    cr_assert(x && y0 && y);
    support_random_vector(x, n, p, 11);
    support_random_vector(y0, m, p, 12);
    memcpy(y, y0, vs * (size_t)m);
    cr_assert_eq(spmv_execute(plan, 1.5, x, -0.5, y), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    double ratio;
    int32_t row;
    cr_assert_eq(spmv_reference_check(B, 1.5, x, -0.5, y0, y, &ratio, &row), SPMV_STATUS_SUCCESS);
    cr_assert(ratio <= 1.0, "%s: after update_values, row %d off by %g x the bound", name, row, ratio);
    free(x);
    free(y0);
    free(y);
}

double support_stat(const char *stats, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "%s=", key);
    const char *at = stats;
    while ((at = strstr(at, pat)) != NULL) {
        if (at == stats || at[-1] == ';') return strtod(at + strlen(pat), NULL);
        at++;
    }
    cr_assert_fail("stats lack %s: %s", key, stats);
    return -1;
}

spmv_plan_info_t support_plan_info(spmv_context_t *ctx, spmv_format_t format, const spmv_matrix_t *A,
                                   const spmv_plan_options_t *o)
{
    spmv_plan_t *plan = NULL;
    spmv_plan_info_t info;
    cr_assert_eq(spmv_plan_create(&plan, ctx, A, format, o), SPMV_STATUS_SUCCESS, "%s", spmv_last_error(ctx));
    cr_assert_eq(spmv_plan_get_info(plan, &info), SPMV_STATUS_SUCCESS);
    spmv_plan_destroy(plan);
    return info;
}

void support_check_executor(const spmvport_format_data *fd, spmvport_cpu_executor run, const spmv_matrix_t *A,
                            const char *what)
{
    static const double cases[3][2] = {{1, 0}, {2, 0.5}, {-1, 1}};
    const size_t vs = spmvport_value_size(A->precision);
    void *x = malloc(vs * ((size_t)A->n + 1)), *y0 = malloc(vs * ((size_t)A->m + 1)), *y = malloc(vs * ((size_t)A->m + 1));
    cr_assert(x && y0 && y);
    support_random_vector(x, A->n, A->precision, 11);
    for (int c = 0; c < 3; c++) {
        support_random_vector(y0, A->m, A->precision, 12 + (uint64_t)c);
        for (int32_t i = 0; cases[c][1] == 0 && i < A->m; i++) { /* beta = 0: y is never read */
            if (A->precision == SPMV_F32) ((float *)y0)[i] = NAN;
            else ((double *)y0)[i] = NAN;
        }
        memcpy(y, y0, vs * (size_t)A->m);
        run(fd, cases[c][0], x, cases[c][1], y);
        double ratio;
        int32_t row;
        cr_assert_eq(spmv_reference_check(A, cases[c][0], x, cases[c][1], y0, y, &ratio, &row), SPMV_STATUS_SUCCESS);
        cr_assert(ratio <= 1.0, "%s alpha=%g beta=%g: row %d off by %g x the bound", what, cases[c][0], cases[c][1],
                  row, ratio);
    }
    free(x), free(y0), free(y);
}
