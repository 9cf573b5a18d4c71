/*
 * bench_measure.c -- one format on one matrix: build the plan, check it against the oracle, time it, and derive
 * the figures of docs/benchmarking.md. Only the public API of libspmvport is used.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Timing stops growing the sample set here even when --min-time asks for more (memory and patience). */
#define BENCH_MAX_SAMPLES 200000

/* Launches with fewer non-zeros than this are dominated by launch overhead on a GPU (benchmarking.md). */
#define BENCH_LAUNCH_BOUND_NNZ 100000

const char *const bench_byte_model_text =
    "bytes = nnz*(sizeof(value)+sizeof(index)) + (m+1)*sizeof(index) + n*sizeof(value) + m*sizeof(value) "
    "(beta = 0 in timed runs; index = 4 bytes)";

/* ==== status names ============================================================================================== */

void bench_status_name(spmv_status_t st, char *buf, size_t len)
{
    if (st == SPMV_STATUS_SUCCESS) { snprintf(buf, len, "ok"); return; }
    if (st == SPMV_STATUS_NOT_SUPPORTED) { snprintf(buf, len, "unsupported"); return; }
    const char *name = spmv_status_string(st);
    const char *prefix = "SPMV_STATUS_";
    if (strncmp(name, prefix, strlen(prefix)) == 0) name += strlen(prefix);
    size_t i = 0;
    for (; name[i] != '\0' && i + 1 < len; i++) buf[i] = (char)tolower((unsigned char)name[i]);
    buf[i] = '\0';
}

int bench_result_passed(const bench_result *r)
{
    return strcmp(r->status, "ok") == 0 || strcmp(r->status, "unsupported") == 0;
}

/* ==== vectors ===================================================================================================== */

/* splitmix64: a small seeded generator, so that x and y are the same in every run with the same --seed. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1): random signs make cancellation happen, which a constant vector would hide. */
static void fill_random(void *v, size_t count, spmv_precision_t p, uint64_t seed)
{
    uint64_t state = seed;
    for (size_t i = 0; i < count; i++) {
        double r = (double)(next_random(&state) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
        if (p == SPMV_F32) ((float *)v)[i] = (float)r;
        else ((double *)v)[i] = r;
    }
}

static void fill_nan(void *v, size_t count, spmv_precision_t p)
{
    for (size_t i = 0; i < count; i++) {
        if (p == SPMV_F32) ((float *)v)[i] = NAN;
        else ((double *)v)[i] = NAN;
    }
}

spmv_status_t bench_vectors_create(bench_vectors *v, const bench_env *env, const spmv_matrix_t *A, uint64_t seed)
{
    spmv_precision_t p;
    memset(v, 0, sizeof *v);
    spmv_matrix_get_size(A, &v->m, &v->n, NULL, &p);
    v->value_size = p == SPMV_F32 ? sizeof(float) : sizeof(double);
    size_t xb = (size_t)v->n * v->value_size, yb = (size_t)v->m * v->value_size;
    /* +1: malloc(0) may return NULL on an empty matrix */
    v->x = malloc(xb + 1);
    v->y0 = malloc(yb + 1);
    v->ynan = malloc(yb + 1);
    v->yout = malloc(yb + 1);
    if (!v->x || !v->y0 || !v->ynan || !v->yout) {
        bench_vectors_destroy(v, env);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    fill_random(v->x, (size_t)v->n, p, seed);
    fill_random(v->y0, (size_t)v->m, p, seed ^ 0x5DEECE66Dull);
    fill_nan(v->ynan, (size_t)v->m, p);
    spmv_status_t st = spmv_malloc(env->ctx, &v->dx, xb);
    if (st == SPMV_STATUS_SUCCESS) st = spmv_malloc(env->ctx, &v->dy, yb);
    if (st == SPMV_STATUS_SUCCESS) st = spmv_copy_to_device(env->ctx, v->dx, v->x, xb);
    if (st != SPMV_STATUS_SUCCESS) bench_vectors_destroy(v, env);
    return st;
}

void bench_vectors_destroy(bench_vectors *v, const bench_env *env)
{
    spmv_free(env->ctx, v->dx);
    spmv_free(env->ctx, v->dy);
    free(v->x);
    free(v->y0);
    free(v->ynan);
    free(v->yout);
    memset(v, 0, sizeof *v);
}

/* ==== results ===================================================================================================== */

void bench_result_init(bench_result *r, const char *matrix, const char *source, const spmv_matrix_t *A,
                       spmv_format_t format, spmv_precision_t precision)
{
    memset(r, 0, sizeof *r);
    snprintf(r->matrix, sizeof r->matrix, "%s", matrix);
    snprintf(r->source, sizeof r->source, "%s", source);
    if (A != NULL) spmv_matrix_get_size(A, &r->rows, &r->cols, &r->nnz, NULL);
    r->format = format;
    r->precision = precision;
    snprintf(r->status, sizeof r->status, "not_run");
    r->max_err_ratio = r->err_beta0 = r->err_beta = r->err_timed = NAN;
    r->ms = r->ms_min = r->ms_p90 = NAN;
    r->gflops = r->gbps = r->pct_ceiling = r->speedup_vs_vendor = r->ms_vendor = NAN;
    r->ms_vendor_alg[0] = r->ms_vendor_alg[1] = NAN;
    r->build_ms = r->upload_ms = r->device_bytes = r->bytes_per_nnz = r->model_bytes = NAN;
    r->break_even = NAN;
    r->l2_regime = NULL;
    r->launch_bound = -1;
    r->deterministic = -1;
}

static void set_error(bench_result *r, spmv_status_t st, const bench_env *env)
{
    bench_status_name(st, r->status, sizeof r->status);
    snprintf(r->message, sizeof r->message, "%s", spmv_last_error(env->ctx));
}

/* ==== checks against the oracle ====================================================================================== */

/* One checked run: y starts as y_start (NaN poison when beta = 0), y = alpha*A*x + beta*y on the device, then the
 * oracle compares the copy back. */
static spmv_status_t checked_run(const bench_env *env, spmv_plan_t *plan, const spmv_matrix_t *A,
                                 const bench_vectors *v, double alpha, double beta, double *ratio)
{
    size_t yb = (size_t)v->m * v->value_size;
    const void *y_start = beta != 0 ? v->y0 : v->ynan;
    spmv_status_t st = spmv_copy_to_device(env->ctx, v->dy, y_start, yb);
    if (st == SPMV_STATUS_SUCCESS) st = spmv_execute(plan, alpha, v->dx, beta, v->dy);
    if (st == SPMV_STATUS_SUCCESS) st = spmv_copy_to_host(env->ctx, v->yout, v->dy, yb);
    if (st == SPMV_STATUS_SUCCESS)
        st = spmv_reference_check(A, alpha, v->x, beta, beta != 0 ? v->y0 : NULL, v->yout, ratio, NULL);
    return st;
}

/* The result after the timed launches (alpha = 1, beta = 0): catches races that only show when calls repeat. */
static spmv_status_t check_timed_result(const bench_env *env, const spmv_matrix_t *A, const bench_vectors *v,
                                        double *ratio)
{
    spmv_status_t st = spmv_copy_to_host(env->ctx, v->yout, v->dy, (size_t)v->m * v->value_size);
    if (st == SPMV_STATUS_SUCCESS) st = spmv_reference_check(A, 1.0, v->x, 0.0, NULL, v->yout, ratio, NULL);
    return st;
}

static int correct(double ratio) { return ratio <= 1.0; } /* false for NaN */

static double worst_of(double a, double b)
{
    if (isnan(a) || isnan(b)) return NAN;
    return a > b ? a : b;
}

/* ==== timing ========================================================================================================== */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Timed launches in batches until --min-time is reached: warm-up once, then spmv_plan_time's per-launch times.
 * Median, minimum and 90th percentile of all samples. */
static spmv_status_t time_plan(const bench_env *env, spmv_plan_t *plan, const bench_vectors *v, bench_result *r)
{
    int count = 0, batch = env->iters, warmup = env->warmup;
    double *ms = malloc((size_t)batch * sizeof *ms), total = 0;
    if (ms == NULL) return SPMV_STATUS_OUT_OF_MEMORY;
    spmv_status_t st = SPMV_STATUS_SUCCESS;
    for (;;) {
        st = spmv_plan_time(plan, 1.0, v->dx, 0.0, v->dy, warmup, batch, ms + count);
        if (st != SPMV_STATUS_SUCCESS) break;
        for (int i = 0; i < batch; i++) total += ms[count + i];
        count += batch;
        warmup = 0;
        double goal_ms = env->min_time_s * 1e3;
        if (total >= goal_ms || count >= BENCH_MAX_SAMPLES) break;
        double per_call = total > 0 ? total / count : 1e-3;
        double need = ceil((goal_ms - total) / per_call);
        batch = need < 1 ? 1 : (need > BENCH_MAX_SAMPLES - count ? BENCH_MAX_SAMPLES - count : (int)need);
        double *grown = realloc(ms, (size_t)(count + batch) * sizeof *ms);
        if (grown == NULL) { st = SPMV_STATUS_OUT_OF_MEMORY; break; }
        ms = grown;
    }
    if (st == SPMV_STATUS_SUCCESS) {
        qsort(ms, (size_t)count, sizeof *ms, compare_doubles);
        r->ms = count % 2 ? ms[count / 2] : 0.5 * (ms[count / 2 - 1] + ms[count / 2]);
        r->ms_min = ms[0];
        r->ms_p90 = ms[(int)(0.9 * (count - 1))];
        r->samples = count;
    }
    free(ms);
    return st;
}

/* ==== one format ======================================================================================================== */

static void record_plan_info(bench_result *r, const spmv_plan_t *plan)
{
    spmv_plan_info_t info;
    if (spmv_plan_get_info(plan, &info) != SPMV_STATUS_SUCCESS) return;
    r->build_ms = info.build_ms;
    r->upload_ms = info.upload_ms;
    r->device_bytes = (double)info.device_bytes;
    r->bytes_per_nnz = info.nnz > 0 ? (double)info.device_bytes / info.nnz : NAN;
    r->deterministic = info.deterministic;
    snprintf(r->stats, sizeof r->stats, "%s", info.stats);
    if (r->built_format[0] == '\0') snprintf(r->built_format, sizeof r->built_format, "%s", spmv_format_name(info.format));
}

/* The two oracle checks before timing; sets status "wrong" and returns 0 when one fails. */
static int check_before_timing(const bench_env *env, spmv_plan_t *plan, const spmv_matrix_t *A,
                               const bench_vectors *v, bench_result *r)
{
    spmv_status_t st = checked_run(env, plan, A, v, 1.0, 0.0, &r->err_beta0);
    if (st == SPMV_STATUS_SUCCESS) st = checked_run(env, plan, A, v, 1.5, -0.5, &r->err_beta);
    if (st != SPMV_STATUS_SUCCESS) { set_error(r, st, env); return 0; }
    r->max_err_ratio = worst_of(r->err_beta0, r->err_beta);
    if (!correct(r->max_err_ratio)) {
        snprintf(r->status, sizeof r->status, "wrong");
        snprintf(r->message, sizeof r->message, "max_err_ratio %g (beta = 0: %g, alpha = 1.5, beta = -0.5: %g)",
                 r->max_err_ratio, r->err_beta0, r->err_beta);
        return 0;
    }
    return 1;
}

/* A plan that works in its own ordering (ehyb with ehyb_plan_ordering) computes y_p = B x_p with
 * B = P_r A P_c^T: B's row i is A's row row_perm[i], B's column j is A's column col_perm[j]. The oracle then
 * checks against B, with the same random vectors taken as plan-ordered. NULL when the plan keeps A's ordering
 * or the options do not ask for the plan's. */
static spmv_matrix_t *plan_ordered_matrix(const spmv_matrix_t *A, spmv_plan_t *plan,
                                          const spmv_plan_options_t *options)
{
    const int32_t *rp = NULL, *cp = NULL, *ptr, *col;
    const void *val;
    int32_t m, n, nnz;
    spmv_precision_t prec;
    if (options == NULL || !options->ehyb_plan_ordering) return NULL;
    spmv_plan_get_permutation(plan, &rp, &cp);
    if (rp == NULL || cp == NULL) return NULL;
    spmv_matrix_get_size(A, &m, &n, &nnz, &prec);
    spmv_matrix_get_csr(A, &ptr, &col, &val);
    size_t vs = prec == SPMV_F32 ? sizeof(float) : sizeof(double);
    int32_t *bptr = malloc(((size_t)m + 1) * sizeof *bptr), *bcol = malloc(((size_t)nnz + 1) * sizeof *bcol);
    int32_t *inv = malloc(((size_t)n + 1) * sizeof *inv);
    char *bval = malloc(((size_t)nnz + 1) * vs);
    spmv_matrix_t *B = NULL;
    if (bptr && bcol && inv && bval) {
        for (int32_t j = 0; j < n; j++) inv[cp[j]] = j;
        bptr[0] = 0;
        for (int32_t i = 0; i < m; i++) {
            int32_t len = ptr[rp[i] + 1] - ptr[rp[i]], at = bptr[i];
            for (int32_t k = 0; k < len; k++) {
                bcol[at + k] = inv[col[ptr[rp[i]] + k]];
                memcpy(bval + (size_t)(at + k) * vs, (const char *)val + (size_t)(ptr[rp[i]] + k) * vs, vs);
            }
            bptr[i + 1] = at + len;
        }
        if (spmv_matrix_create_csr(&B, m, n, nnz, bptr, bcol, bval, prec, 0, SPMV_MATRIX_SORT) != SPMV_STATUS_SUCCESS)
            B = NULL;
    }
    free(bptr); free(bcol); free(inv); free(bval);
    return B;
}

void bench_measure(const bench_env *env, const spmv_matrix_t *A, const bench_vectors *v, spmv_format_t format,
                   const spmv_plan_options_t *options, bench_result *r)
{
    spmv_plan_t *plan = NULL;
    spmv_status_t st = spmv_plan_create(&plan, env->ctx, A, format, options);
    if (st != SPMV_STATUS_SUCCESS) { set_error(r, st, env); return; }
    record_plan_info(r, plan);
    spmv_matrix_t *B = plan_ordered_matrix(A, plan, options);
    if (B != NULL) A = B; /* check in the plan's ordering */
    if (check_before_timing(env, plan, A, v, r)) {
        st = time_plan(env, plan, v, r);
        if (st == SPMV_STATUS_SUCCESS) st = check_timed_result(env, A, v, &r->err_timed);
        if (st != SPMV_STATUS_SUCCESS) {
            set_error(r, st, env);
        } else {
            r->max_err_ratio = worst_of(r->max_err_ratio, r->err_timed);
            snprintf(r->status, sizeof r->status, correct(r->max_err_ratio) ? "ok" : "wrong");
            if (!correct(r->max_err_ratio))
                snprintf(r->message, sizeof r->message, "the result after %d timed launches has max_err_ratio %g",
                         r->samples, r->err_timed);
        }
        /* a wrong answer is a failure, never a time */
        if (strcmp(r->status, "ok") != 0) r->ms = r->ms_min = r->ms_p90 = NAN;
    }
    spmv_plan_destroy(plan);
    spmv_matrix_destroy(B);
}

/* ==== derived figures ==================================================================================================== */

double bench_model_bytes(int32_t m, int32_t n, int32_t nnz, spmv_precision_t precision)
{
    double val = precision == SPMV_F32 ? 4.0 : 8.0, idx = 4.0;
    return (double)nnz * (val + idx) + ((double)m + 1) * idx + (double)n * val + (double)m * val;
}

/* in_l2: the data fits, the figure measures the cache; dram: at least 3x the L2, streamed from memory. */
static const char *l2_regime(double bytes, size_t l2_bytes)
{
    if (l2_bytes == 0) return "unknown";
    if (bytes <= (double)l2_bytes) return "in_l2";
    return bytes < 3.0 * (double)l2_bytes ? "mixed" : "dram";
}

void bench_derive(bench_result *r, const bench_env *env, double vendor_ms)
{
    r->model_bytes = bench_model_bytes(r->rows, r->cols, r->nnz, r->precision);
    r->l2_regime = l2_regime(r->model_bytes, env->info.l2_bytes);
    r->launch_bound = env->info.backend == SPMV_BACKEND_CPU ? -1 : r->nnz < BENCH_LAUNCH_BOUND_NNZ;
    r->ms_vendor = vendor_ms;
    if (!(r->ms > 0)) return; /* not timed (or NaN): nothing more to derive */
    r->gflops = 2.0 * r->nnz / (r->ms * 1e6);
    r->gbps = r->model_bytes / (r->ms * 1e6);
    if (env->ceiling_gbps > 0) r->pct_ceiling = 100.0 * r->gbps / env->ceiling_gbps;
    if (vendor_ms > 0) {
        r->speedup_vs_vendor = vendor_ms / r->ms;
        double prep = r->build_ms + r->upload_ms;
        if (r->format == SPMV_FORMAT_VENDOR) r->break_even = NAN; /* the baseline against itself */
        else r->break_even = r->ms < vendor_ms ? prep / (vendor_ms - r->ms) : INFINITY;
    }
}
