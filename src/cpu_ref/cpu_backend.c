/*
 * cpu_backend.c -- the CPU backend: "device" memory is host memory and a plan is its format data, run by the
 * CPU executors. Always present; AUTO falls back to it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_ref.h"

static spmvport_cpu_executor executor_of(spmv_format_t f)
{
    switch (f) {
    case SPMV_FORMAT_CSR_SCALAR: return spmvport_cpu_csr_scalar;
    case SPMV_FORMAT_CSR_VECTOR: return spmvport_cpu_csr_vector;
    case SPMV_FORMAT_CSR_LB: return spmvport_cpu_csr_lb;
    case SPMV_FORMAT_TILE: return spmvport_cpu_tile;
    case SPMV_FORMAT_HBP: return spmvport_cpu_hbp;
    case SPMV_FORMAT_AMF_CSR: return spmvport_cpu_amf_csr;
    case SPMV_FORMAT_TEB: return spmvport_cpu_teb;
    case SPMV_FORMAT_EHYB: return spmvport_cpu_ehyb;
    default: return NULL;
    }
}

static spmv_status_t cpu_open(void **state, int device, spmv_device_info_t *info, char *msg, size_t msglen)
{
    if (device != 0) {
        spmvport_msg(msg, msglen, "the CPU backend has one device (0), not %d", device);
        return SPMV_STATUS_BACKEND_UNAVAILABLE;
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    *state = NULL;
    info->backend = SPMV_BACKEND_CPU;
    snprintf(info->name, sizeof info->name, "CPU (%d thread%s)", threads, threads == 1 ? "" : "s");
    info->warp_size = 32;
    info->multiprocessors = threads;
    return SPMV_STATUS_SUCCESS;
}

static void cpu_close(void *state) { (void)state; }

static spmv_status_t cpu_set_stream(void *state, void *stream, char *msg, size_t msglen)
{
    (void)state; (void)stream; (void)msg; (void)msglen;
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t cpu_alloc(void *state, void **ptr, size_t bytes, char *msg, size_t msglen)
{
    (void)state;
    *ptr = malloc(bytes == 0 ? 1 : bytes);
    if (*ptr != NULL) return SPMV_STATUS_SUCCESS;
    spmvport_msg(msg, msglen, "out of host memory for %zu bytes", bytes);
    return SPMV_STATUS_DEVICE_OUT_OF_MEMORY;
}

static spmv_status_t cpu_free(void *state, void *ptr, char *msg, size_t msglen)
{
    (void)state; (void)msg; (void)msglen;
    free(ptr);
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t cpu_copy(void *state, void *dst, const void *src, size_t bytes, spmvport_copy_kind kind,
                              char *msg, size_t msglen)
{
    (void)state; (void)kind; (void)msg; (void)msglen;
    memmove(dst, src, bytes);
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t cpu_set(void *state, void *ptr, int value, size_t bytes, char *msg, size_t msglen)
{
    (void)state; (void)msg; (void)msglen;
    memset(ptr, value, bytes);
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t cpu_sync(void *state, char *msg, size_t msglen)
{
    (void)state; (void)msg; (void)msglen;
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t cpu_supports(void *state, spmv_format_t format, spmv_precision_t precision, char *msg,
                                  size_t msglen)
{
    (void)state; (void)precision;
    if (executor_of(format) != NULL) return SPMV_STATUS_SUCCESS;
    if (format == SPMV_FORMAT_VENDOR) spmvport_msg(msg, msglen, "there is no vendor library on the CPU backend");
    else spmvport_msg(msg, msglen, "format %s is not implemented in this version", spmv_format_name(format));
    return SPMV_STATUS_NOT_SUPPORTED;
}

/* The plan is the format data itself: the core keeps it alive until plan_free. */
static spmv_status_t cpu_upload(void *state, const spmvport_format_data *fd, void **dplan, size_t *device_bytes,
                                char *msg, size_t msglen)
{
    (void)state; (void)msg; (void)msglen;
    size_t bytes = 0;
    for (int a = 0; a < fd->narrays; a++) bytes += fd->arrays[a].host_only ? 0 : fd->arrays[a].bytes;
    *dplan = (void *)fd;
    *device_bytes = bytes;
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t cpu_update(void *state, void *dplan, const spmvport_format_data *fd, char *msg, size_t msglen)
{
    (void)state; (void)dplan; (void)fd; (void)msg; (void)msglen; /* the plan's arrays are fd's: nothing to copy */
    return SPMV_STATUS_SUCCESS;
}

static void cpu_plan_free(void *state, void *dplan) { (void)state; (void)dplan; }

static spmv_status_t cpu_execute(void *state, void *dplan, double alpha, const void *x, double beta, void *y,
                                 char *msg, size_t msglen)
{
    (void)state;
    const spmvport_format_data *fd = dplan;
    spmvport_cpu_executor run = executor_of(fd->format);
    if (run == NULL) {
        spmvport_msg(msg, msglen, "no CPU executor for format %s", spmv_format_name(fd->format));
        return SPMV_STATUS_NOT_SUPPORTED;
    }
    run(fd, alpha, x, beta, y);
    return SPMV_STATUS_SUCCESS;
}

static spmv_status_t cpu_time(void *state, void *dplan, double alpha, const void *x, double beta, void *y,
                              int warmup, int iters, double *ms, char *msg, size_t msglen)
{
    for (int i = 0; i < warmup + iters; i++) {
        double t0 = spmvport_now_ms();
        spmv_status_t st = cpu_execute(state, dplan, alpha, x, beta, y, msg, msglen);
        if (st != SPMV_STATUS_SUCCESS) return st;
        if (i >= warmup) ms[i - warmup] = spmvport_now_ms() - t0;
    }
    return SPMV_STATUS_SUCCESS;
}

/* Read bandwidth of the host: sum a large array with every thread, best of iters. */
static spmv_status_t cpu_bandwidth(void *state, size_t bytes, int iters, double *gbps, char *msg, size_t msglen)
{
    (void)state;
    if (bytes == 0) bytes = (size_t)256 << 20;
    size_t count = bytes / sizeof(double);
    double *a = malloc(count * sizeof *a);
    if (a == NULL) {
        spmvport_msg(msg, msglen, "out of host memory for %zu bytes", bytes);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < count; i++) a[i] = (double)(i & 7);
    double best = 0, sink = 0;
    for (int it = 0; it < iters; it++) {
        double t0 = spmvport_now_ms(), sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
        for (size_t i = 0; i < count; i++) sum += a[i];
        double dt = spmvport_now_ms() - t0;
        sink += sum;
        double rate = dt > 0 ? (double)(count * sizeof *a) / (dt * 1e6) : 0;
        if (rate > best) best = rate;
    }
    free(a);
    *gbps = sink >= 0 ? best : best; /* sink keeps the loop alive */
    return SPMV_STATUS_SUCCESS;
}

static const spmvport_backend_ops cpu_ops = {
    SPMVPORT_BACKEND_ABI, SPMV_BACKEND_CPU, "cpu", cpu_open, cpu_close, cpu_set_stream, cpu_alloc, cpu_free,
    cpu_copy, cpu_set, cpu_sync, cpu_supports, cpu_upload, cpu_update, cpu_plan_free, cpu_execute, cpu_time,
    cpu_bandwidth};

const spmvport_backend_ops *spmvport_cpu_backend(void) { return &cpu_ops; }
