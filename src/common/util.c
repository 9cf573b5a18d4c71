/*
 * util.c -- error recording, checked allocation, clocks, sorting small index arrays, status and enum names.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* ---- errors --------------------------------------------------------------------------------------------- */

/* Every error is recorded for the calling thread so that functions without a context can report too. */
static _Thread_local char thread_last_error[SPMVPORT_MSG_LEN];

void spmvport_msg(char *msg, size_t len, const char *fmt, ...)
{
    if (msg == NULL || len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
}

void spmvport_stats_fit(char *dst, size_t cap, const char *src, size_t src_cap, const char *tail)
{
    if (dst == NULL || cap == 0) return;
    size_t keep = strlen(src), tail_len = tail != NULL ? strlen(tail) : 0;
    if (tail_len + 1 > cap) tail_len = 0; /* a tail that cannot fit at all is the part dropped */
    /* a source that filled its buffer may end in a cut pair: drop it */
    if (keep + 1 >= src_cap)
        while (keep > 0 && src[keep - 1] != ';') keep--;
    size_t room = cap - 1 - tail_len; /* characters left for src and the ';' */
    if (keep > 0 && tail_len > 0) room = room > 0 ? room - 1 : 0;
    while (keep > room) { /* whole pairs only: cut back to the previous ';' */
        keep--;
        while (keep > 0 && src[keep] != ';') keep--;
    }
    while (keep > 0 && src[keep - 1] == ';') keep--;
    memcpy(dst, src, keep);
    size_t used = keep;
    if (tail_len > 0) {
        if (used > 0) dst[used++] = ';';
        memcpy(dst + used, tail, tail_len);
        used += tail_len;
    }
    dst[used] = '\0';
}

spmv_status_t spmvport_fail(spmv_context_t *ctx, spmv_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(thread_last_error, sizeof thread_last_error, fmt, ap);
    va_end(ap);
    if (ctx != NULL) memcpy(ctx->last_error, thread_last_error, sizeof ctx->last_error);
    return status;
}

void spmvport_clear_error(spmv_context_t *ctx)
{
    thread_last_error[0] = '\0';
    if (ctx != NULL) ctx->last_error[0] = '\0';
}

const char *spmv_last_error(const spmv_context_t *ctx)
{
    return ctx != NULL ? ctx->last_error : thread_last_error;
}

const char *spmv_status_string(spmv_status_t status)
{
    switch (status) {
    case SPMV_STATUS_SUCCESS: return "SPMV_STATUS_SUCCESS";
    case SPMV_STATUS_INVALID_ARGUMENT: return "SPMV_STATUS_INVALID_ARGUMENT";
    case SPMV_STATUS_INVALID_MATRIX: return "SPMV_STATUS_INVALID_MATRIX";
    case SPMV_STATUS_UNSORTED: return "SPMV_STATUS_UNSORTED";
    case SPMV_STATUS_OVERFLOW: return "SPMV_STATUS_OVERFLOW";
    case SPMV_STATUS_OUT_OF_MEMORY: return "SPMV_STATUS_OUT_OF_MEMORY";
    case SPMV_STATUS_DEVICE_OUT_OF_MEMORY: return "SPMV_STATUS_DEVICE_OUT_OF_MEMORY";
    case SPMV_STATUS_IO_ERROR: return "SPMV_STATUS_IO_ERROR";
    case SPMV_STATUS_PARSE_ERROR: return "SPMV_STATUS_PARSE_ERROR";
    case SPMV_STATUS_NOT_SUPPORTED: return "SPMV_STATUS_NOT_SUPPORTED";
    case SPMV_STATUS_BACKEND_UNAVAILABLE: return "SPMV_STATUS_BACKEND_UNAVAILABLE";
    case SPMV_STATUS_DEVICE_ERROR: return "SPMV_STATUS_DEVICE_ERROR";
    case SPMV_STATUS_INTERNAL_ERROR: return "SPMV_STATUS_INTERNAL_ERROR";
    }
    return "SPMV_STATUS_UNKNOWN";
}

const char *spmv_version_string(void) { return "0.3.0"; }

/* ---- enum names ------------------------------------------------------------------------------------------ */

static const char *const format_names[SPMV_FORMAT_COUNT] = {
    "auto", "csr_scalar", "csr_vector", "csr_lb", "vendor", "tile", "hbp", "amf_csr", "teb", "ehyb"};

const char *spmv_format_name(spmv_format_t format)
{
    if ((int)format < 0 || format >= SPMV_FORMAT_COUNT) return "unknown";
    return format_names[format];
}

spmv_status_t spmv_format_from_name(const char *name, spmv_format_t *format)
{
    if (name == NULL || format == NULL)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_format_from_name: NULL argument");
    for (int f = 0; f < SPMV_FORMAT_COUNT; f++) {
        if (strcmp(name, format_names[f]) == 0) {
            *format = (spmv_format_t)f;
            return SPMV_STATUS_SUCCESS;
        }
    }
    return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "unknown format name '%s'", name);
}

const char *spmv_backend_name(spmv_backend_t backend)
{
    switch (backend) {
    case SPMV_BACKEND_AUTO: return "auto";
    case SPMV_BACKEND_CPU: return "cpu";
    case SPMV_BACKEND_CUDA: return "cuda";
    case SPMV_BACKEND_HIP: return "hip";
    }
    return "unknown";
}

/* ---- memory and time ------------------------------------------------------------------------------------- */

void *spmvport_malloc_array(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    size_t bytes = count * size;
    return malloc(bytes == 0 ? 1 : bytes);
}

void *spmvport_calloc_array(size_t count, size_t size)
{
    if (count == 0 || size == 0) return calloc(1, 1);
    return calloc(count, size); /* calloc checks the product itself */
}

double spmvport_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- sorting index arrays ------------------------------------------------------------------------------- */

int spmvport_compare_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void spmvport_sort_int32(int32_t *a, int32_t n)
{
    if (n > 32) {
        qsort(a, (size_t)n, sizeof *a, spmvport_compare_int32);
        return;
    }
    for (int32_t i = 1; i < n; i++) { /* rows are short: insertion sort beats qsort's call overhead */
        int32_t v = a[i], j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

int32_t spmvport_unique_sorted(int32_t *a, int32_t n)
{
    int32_t kept = 0;
    for (int32_t i = 0; i < n; i++)
        if (kept == 0 || a[i] != a[kept - 1])
            a[kept++] = a[i];
    return kept;
}
