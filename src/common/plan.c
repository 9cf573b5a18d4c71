/*
 * plan.c -- plans: build a format on the host, upload it through the backend, execute, update values.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The options keep their size when a field is added (a reserved slot is taken): the ABI of spmv_plan_options_t.
 * 0.1.0 had 32 ints; 0.2.0 (the soname follows major.minor before 1.0) grew it to 48 when the reserved slots ran
 * out, 0.3.0 to 64 (tile's three selection thresholds took the last three). C99 has no static assertion; a
 * negative array size stops the build. */
typedef char spmvport_options_abi_check[sizeof(spmv_plan_options_t) == 64 * sizeof(int) ? 1 : -1];

spmv_status_t spmv_plan_options_init(spmv_plan_options_t *options)
{
    if (options == NULL)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_plan_options_init: options is NULL");
    memset(options, 0, sizeof *options);
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t check_options(spmv_context_t *ctx, const spmv_plan_options_t *o, int *warp_size)
{
    spmv_status_t bad = SPMV_STATUS_INVALID_ARGUMENT;
    *warp_size = ctx->info.warp_size;
    if (o->warp_size != 0) {
        int cpu = ctx->info.backend == SPMV_BACKEND_CPU;
        if (cpu && o->warp_size != 32 && o->warp_size != 64)
            return spmvport_fail(ctx, bad, "spmv_plan_create: options.warp_size = %d; the CPU backend takes 0, 32 "
                                 "or 64", o->warp_size);
        if (!cpu && o->warp_size != ctx->info.warp_size)
            return spmvport_fail(ctx, bad, "spmv_plan_create: options.warp_size = %d but the device's is %d",
                                 o->warp_size, ctx->info.warp_size);
        *warp_size = o->warp_size;
    }
    if (o->vendor_alg < 0 || o->vendor_alg > 2)
        return spmvport_fail(ctx, bad, "spmv_plan_create: options.vendor_alg = %d; expected 0, 1 or 2",
                             o->vendor_alg);
    char msg[SPMVPORT_MSG_LEN] = "";
    if (spmvport_check_generic_options(o, *warp_size, msg, sizeof msg) != SPMV_STATUS_SUCCESS)
        return spmvport_fail(ctx, bad, "spmv_plan_create: %s", msg);
    return SPMV_STATUS_SUCCESS;
}

static void plan_release(spmv_plan_t *p)
{
    if (p->dplan != NULL) p->ctx->ops->plan_free(p->ctx->state, p->dplan);
    spmvport_format_data_free(&p->fd);
    free(p->src_map);
    free(p->csr_scratch);
    free(p);
}

static spmv_status_t plan_auto_tune(spmv_plan_t **plan, spmv_context_t *ctx, const spmv_matrix_t *A,
                                    const spmv_plan_options_t *opt);

spmv_status_t spmv_plan_create(spmv_plan_t **plan, spmv_context_t *ctx, const spmv_matrix_t *A,
                               spmv_format_t format, const spmv_plan_options_t *options)
{
    if (ctx == NULL) return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_plan_create: ctx is NULL");
    spmvport_clear_error(ctx);
    if (plan == NULL || A == NULL)
        return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "spmv_plan_create: argument %s is NULL",
                             plan == NULL ? "plan" : "A");
    *plan = NULL;
    if ((int)format < 0 || format >= SPMV_FORMAT_COUNT)
        return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "spmv_plan_create: unknown format %d", (int)format);
    spmv_plan_options_t defaults;
    spmv_plan_options_init(&defaults);
    const spmv_plan_options_t *opt = options ? options : &defaults;
    int warp_size;
    spmv_status_t st = check_options(ctx, opt, &warp_size);
    if (st != SPMV_STATUS_SUCCESS) return st;
    if (format == SPMV_FORMAT_AUTO && opt->auto_tune) return plan_auto_tune(plan, ctx, A, opt);
    spmv_plan_t *p = calloc(1, sizeof *p);
    if (p == NULL) return spmvport_fail(ctx, SPMV_STATUS_OUT_OF_MEMORY, "out of host memory for a plan");
    p->ctx = ctx;
    p->nnz = A->nnz;
    p->src_nnz = A->src_nnz;
    if (A->src_map != NULL) p->src_map = spmvport_malloc_array((size_t)A->src_nnz, sizeof(int32_t));
    if (A->src_map != NULL && p->src_map == NULL) {
        plan_release(p);
        return spmvport_fail(ctx, SPMV_STATUS_OUT_OF_MEMORY, "out of host memory for a plan of %d entries", A->nnz);
    }
    if (A->src_map != NULL) memcpy(p->src_map, A->src_map, (size_t)A->src_nnz * sizeof(int32_t));

    const char *rule = NULL;       /* AUTO's rule, the stats' last pair */
    spmvport_hot_choice hot = {0}; /* csr_lb's hot columns if AUTO's graph rule counted them */
    const double t0 = spmvport_now_ms(); /* build_ms counts AUTO's choice: it reads the whole matrix too */
    if (format == SPMV_FORMAT_AUTO) format = spmvport_format_choose_keep(A, &ctx->info, &rule, &hot);
    char msg[SPMVPORT_MSG_LEN] = "";
    st = ctx->ops->supports(ctx->state, format, A->precision, msg, sizeof msg);
    if (st != SPMV_STATUS_SUCCESS) {
        spmvport_hot_choice_free(&hot);
        plan_release(p);
        return spmvport_fail(ctx, st, "format %s on backend %s: %s", spmv_format_name(format), ctx->ops->name, msg);
    }
    st = spmvport_format_build_chosen(&p->fd, A, format, warp_size, &ctx->info, opt, &hot, msg, sizeof msg);
    double t1 = spmvport_now_ms();
    spmvport_hot_choice_free(&hot); /* left when the build took another format or other hot columns */
    size_t device_bytes = 0;
    if (st == SPMV_STATUS_SUCCESS)
        st = ctx->ops->plan_upload(ctx->state, &p->fd, &p->dplan, &device_bytes, msg, sizeof msg);
    double t2 = spmvport_now_ms();
    if (st != SPMV_STATUS_SUCCESS) {
        p->dplan = NULL;
        plan_release(p);
        return spmvport_fail(ctx, st, "spmv_plan_create (%s): %s", spmv_format_name(format), msg);
    }
    spmv_plan_info_t *in = &p->info;
    in->format = format;
    in->backend = ctx->info.backend;
    in->precision = A->precision;
    in->m = A->m;
    in->n = A->n;
    in->nnz = A->nnz;
    in->warp_size = warp_size;
    in->deterministic = p->fd.deterministic;
    in->device_bytes = device_bytes;
    in->build_ms = t1 - t0;
    in->upload_ms = t2 - t1;
    char tail[64] = "";
    if (rule != NULL) snprintf(tail, sizeof tail, "auto_rule=%s", rule);
    spmvport_stats_fit(in->stats, sizeof in->stats, p->fd.stats, sizeof p->fd.stats, rule != NULL ? tail : NULL);
    *plan = p;
    return SPMV_STATUS_SUCCESS;
}

/* ---- AUTO by measurement ---------------------------------------------------------------------------------- */

/* Build each candidate through spmv_plan_create, time it on scratch vectors (beta = 0, so y is never read; x is
 * a finite byte pattern), keep the fastest by its median. Candidates the backend does not run are skipped. */
static spmv_status_t plan_auto_tune(spmv_plan_t **plan, spmv_context_t *ctx, const spmv_matrix_t *A,
                                    const spmv_plan_options_t *opt)
{
    enum { WARMUP = 2, ITERS = 7 };
    const size_t vs = spmvport_value_size(A->precision);
    spmv_plan_options_t o = *opt;
    o.auto_tune = 0;
    void *x = NULL, *y = NULL;
    spmv_status_t st = spmv_malloc(ctx, &x, (size_t)A->n * vs);
    if (st == SPMV_STATUS_SUCCESS) st = spmv_malloc(ctx, &y, (size_t)A->m * vs);
    if (st == SPMV_STATUS_SUCCESS) st = spmv_memset(ctx, x, 0x3c, (size_t)A->n * vs);
    spmv_plan_t *best = NULL;
    double best_ms = 0, t0 = spmvport_now_ms();
    char tried[256] = "";
    for (int f = SPMV_FORMAT_CSR_SCALAR; st == SPMV_STATUS_SUCCESS && f < SPMV_FORMAT_COUNT; f++) {
        if (f == SPMV_FORMAT_EHYB) continue;
        spmv_plan_t *cand = NULL;
        spmv_status_t cs = spmv_plan_create(&cand, ctx, A, (spmv_format_t)f, &o);
        /* a format that cannot hold this matrix (or this backend lacks) is no candidate; anything else stops */
        if (cs == SPMV_STATUS_NOT_SUPPORTED || cs == SPMV_STATUS_OVERFLOW || cs == SPMV_STATUS_INVALID_ARGUMENT)
            continue;
        if (cs != SPMV_STATUS_SUCCESS) { st = cs; break; }
        double ms[ITERS];
        cs = spmv_plan_time(cand, 1.0, x, 0.0, y, WARMUP, ITERS, ms);
        if (cs != SPMV_STATUS_SUCCESS) { spmv_plan_destroy(cand); st = cs; break; }
        for (int i = 1; i < ITERS; i++) /* insertion sort: the median is ms[ITERS / 2] */
            for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) { double t = ms[j]; ms[j] = ms[j - 1]; ms[j - 1] = t; }
        size_t used = strlen(tried);
        snprintf(tried + used, sizeof tried - used, "%s%s:%.4g", used ? "," : "", spmv_format_name((spmv_format_t)f),
                 ms[ITERS / 2]);
        if (best == NULL || ms[ITERS / 2] < best_ms) {
            spmv_plan_destroy(best);
            best = cand;
            best_ms = ms[ITERS / 2];
        } else {
            spmv_plan_destroy(cand);
        }
    }
    spmv_free(ctx, x);
    spmv_free(ctx, y);
    if (st != SPMV_STATUS_SUCCESS || best == NULL) {
        spmv_plan_destroy(best);
        if (st == SPMV_STATUS_SUCCESS) st = SPMV_STATUS_NOT_SUPPORTED;
        return spmvport_fail(ctx, st, "spmv_plan_create (auto_tune): %s", spmv_last_error(ctx));
    }
    /* the plan's build time is the whole search; the stats name every timed candidate (median ms) */
    best->info.build_ms = spmvport_now_ms() - t0 - best->info.upload_ms;
    spmvport_clear_error(ctx); /* skipped candidates' messages are not this call's error */
    char section[sizeof tried + 16];
    snprintf(section, sizeof section, "auto_tune=%s", tried);
    /* the timings always reach the caller: format pairs give way from the end when both do not fit */
    spmvport_stats_fit(best->info.stats, sizeof best->info.stats, best->fd.stats, sizeof best->fd.stats, section);
    *plan = best;
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmv_plan_destroy(spmv_plan_t *plan)
{
    if (plan != NULL) plan_release(plan);
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmv_plan_get_info(const spmv_plan_t *plan, spmv_plan_info_t *info)
{
    if (plan == NULL || info == NULL)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_plan_get_info: argument %s is NULL",
                             plan == NULL ? "plan" : "info");
    *info = plan->info;
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmv_plan_get_permutation(const spmv_plan_t *plan, const int32_t **row_perm, const int32_t **col_perm)
{
    if (plan == NULL)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_plan_get_permutation: plan is NULL");
    const spmvport_format_data *fd = &plan->fd;
    if (row_perm) *row_perm = fd->row_perm_array >= 0 ? fd->arrays[fd->row_perm_array].data : NULL;
    if (col_perm) *col_perm = fd->col_perm_array >= 0 ? fd->arrays[fd->col_perm_array].data : NULL;
    return SPMV_STATUS_SUCCESS;
}

/* ---- execute ---------------------------------------------------------------------------------------------- */

static spmv_status_t check_vectors(spmv_plan_t *plan, const void *x, const void *y, const char *fn)
{
    if (plan == NULL) return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "%s: plan is NULL", fn);
    spmv_context_t *ctx = plan->ctx;
    spmvport_clear_error(ctx);
    if (x == NULL && plan->info.n > 0) return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "%s: x is NULL", fn);
    if (y == NULL && plan->info.m > 0) return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "%s: y is NULL", fn);
    if (x != NULL && x == (const void *)y)
        return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "%s: x and y are the same array", fn);
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmv_execute(spmv_plan_t *plan, double alpha, const void *x, double beta, void *y)
{
    spmv_status_t st = check_vectors(plan, x, y, "spmv_execute");
    if (st != SPMV_STATUS_SUCCESS) return st;
    spmv_context_t *ctx = plan->ctx;
    char msg[SPMVPORT_MSG_LEN] = "";
    st = ctx->ops->execute(ctx->state, plan->dplan, alpha, x, beta, y, msg, sizeof msg);
    return st == SPMV_STATUS_SUCCESS ? st : spmvport_fail(ctx, st, "spmv_execute: %s", msg);
}

spmv_status_t spmv_plan_time(spmv_plan_t *plan, double alpha, const void *x, double beta, void *y, int warmup,
                             int iters, double *ms)
{
    spmv_status_t st = check_vectors(plan, x, y, "spmv_plan_time");
    if (st != SPMV_STATUS_SUCCESS) return st;
    spmv_context_t *ctx = plan->ctx;
    if (warmup < 0 || iters <= 0 || ms == NULL)
        return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "spmv_plan_time: need warmup >= 0, iters > 0 and ms");
    char msg[SPMVPORT_MSG_LEN] = "";
    st = ctx->ops->time_execute(ctx->state, plan->dplan, alpha, x, beta, y, warmup, iters, ms, msg, sizeof msg);
    return st == SPMV_STATUS_SUCCESS ? st : spmvport_fail(ctx, st, "spmv_plan_time: %s", msg);
}

/* ---- update_values ------------------------------------------------------------------------------------------ */

/* Write CSR values (double) into the format's value arrays through its value map. */
static void scatter_values(spmvport_format_data *fd, const double *csr)
{
    int64_t slot = 0;
    for (int a = 0; a < fd->narrays; a++) {
        spmvport_array *arr = &fd->arrays[a];
        if (!arr->is_values) continue;
        size_t count = arr->bytes / spmvport_value_size(fd->precision);
        for (size_t i = 0; i < count; i++, slot++) {
            int64_t src = fd->value_map ? fd->value_map[slot] : slot;
            double v = src >= 0 ? csr[src] : 0.0;
            if (fd->precision == SPMV_F32) ((float *)arr->data)[i] = (float)v;
            else ((double *)arr->data)[i] = v;
        }
    }
}

spmv_status_t spmv_plan_update_values(spmv_plan_t *plan, const void *values)
{
    if (plan == NULL) return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_plan_update_values: plan is NULL");
    spmv_context_t *ctx = plan->ctx;
    spmvport_clear_error(ctx);
    if (values == NULL && plan->src_nnz > 0)
        return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "spmv_plan_update_values: values is NULL");
    /* the scratch is made on the first update: most plans are never updated, and it is nnz doubles */
    if (plan->csr_scratch == NULL) plan->csr_scratch = spmvport_malloc_array((size_t)plan->nnz, sizeof(double));
    if (plan->csr_scratch == NULL)
        return spmvport_fail(ctx, SPMV_STATUS_OUT_OF_MEMORY, "spmv_plan_update_values: out of host memory for %d "
                             "values", plan->nnz);
    int f32 = plan->fd.precision == SPMV_F32;
    double *csr = plan->csr_scratch;
    if (plan->src_map == NULL) {
        for (int32_t k = 0; k < plan->nnz; k++) csr[k] = f32 ? ((const float *)values)[k] : ((const double *)values)[k];
    } else {
        memset(csr, 0, (size_t)plan->nnz * sizeof *csr);
        for (int32_t p = 0; p < plan->src_nnz; p++)
            csr[plan->src_map[p]] += f32 ? ((const float *)values)[p] : ((const double *)values)[p];
    }
    scatter_values(&plan->fd, csr);
    char msg[SPMVPORT_MSG_LEN] = "";
    spmv_status_t st = ctx->ops->plan_update_values(ctx->state, plan->dplan, &plan->fd, msg, sizeof msg);
    return st == SPMV_STATUS_SUCCESS ? st : spmvport_fail(ctx, st, "spmv_plan_update_values: %s", msg);
}
