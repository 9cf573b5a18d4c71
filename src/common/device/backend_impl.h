/*
 * backend_impl.h -- the GPU backend table (src/common/backend.h), written once on top of port.h: device
 * properties, memory, plans (device copies of the format's arrays), the CSR kernels' launches, event timing
 * and the read-bandwidth probe; vendor_spmv.h adds the vendor library as format "vendor".
 *
 * A backend's translation unit first includes its vendor header (which defines the VSP_* names, see
 * vendor_spmv.h), then this file. The module exports spmvport_backend_entry (C linkage, default visibility) and
 * a tagged spmvport_cuda_backend / spmvport_hip_backend for static builds; everything else has internal linkage.
 * The module calls nothing of the core library (it is dlopen'ed RTLD_LOCAL): messages are formatted here.
 *
 * Rules kept by every function: each runtime call is checked and becomes a status with the runtime's error
 * string in msg; nothing prints, aborts or exits; execute is asynchronous on the context's stream and never
 * allocates (csr_lb's carries are plan arrays, uploaded at plan time).
 */
#ifndef SPMVPORT_DEVICE_BACKEND_IMPL_H
#define SPMVPORT_DEVICE_BACKEND_IMPL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "port.h"
#include "csr_kernels.h"
#include "amf_csr_kernels.h"
#include "hbp_kernels.h"
#include "teb_kernels.h"
#include "tile_kernels.h"
#include "ehyb_kernels.h"

namespace {

/* ---- messages ------------------------------------------------------------------------------------------------- */
__attribute__((format(printf, 3, 4))) void say(char *msg, size_t len, const char *fmt, ...)
{
    if (msg == NULL || len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
}

const char *format_name(spmv_format_t f)
{
    static const char *const names[] = {"auto", "csr_scalar", "csr_vector", "csr_lb", "vendor",
                                        "tile", "hbp", "amf_csr", "teb", "ehyb"};
    return (int)f >= 0 && (int)f < (int)(sizeof names / sizeof names[0]) ? names[f] : "unknown";
}

/* A failed runtime call: the message names the call and carries the runtime's error string. */
spmv_status_t runtime_fail(port_error_t e, const char *what, char *msg, size_t len)
{
    /* a failed call also sets the thread's last error: clear it so the next launch check does not see it */
    (void)port_get_last_error();
    say(msg, len, "%s: %s (%s, %d)", what, port_error_string(e), port_error_name(e), (int)e);
    return port_error_is_oom(e) ? SPMV_STATUS_DEVICE_OUT_OF_MEMORY : SPMV_STATUS_DEVICE_ERROR;
}

#define GPU_CHECK(call, what)                                                                                  \
    do {                                                                                                       \
        const port_error_t e_ = (call);                                                                        \
        if (e_ != port_success) return runtime_fail(e_, what, msg, msglen);                                    \
    } while (0)

/* ---- state and plans ------------------------------------------------------------------------------------------- */
struct gpu_state {
    int device;
    int warp;
    int multiprocessors;
    size_t l2_bytes;
    port_stream_t stream; /* the context's stream (not owned); 0 = the default stream */
    void *vendor;         /* the vendor library's handle, made by the first vendor plan */
};

struct vendor_plan;

struct gpu_plan {
    const spmvport_format_data *fd; /* kept alive by the core until plan_free */
    void *arrays[SPMVPORT_MAX_ARRAYS]; /* device copies, NULL for empty arrays */
    size_t bytes;
    vendor_plan *vendor; /* format vendor; NULL for empty shapes, which the scalar kernel handles */
};

} /* namespace */

/* the vendor library: vendor_plan_create/update/execute/destroy, vendor_close, vendor_set_stream */
#include "vendor_spmv.h"

namespace {

/* ---- context ---------------------------------------------------------------------------------------------------- */
spmv_status_t gpu_open(void **state, int device, spmv_device_info_t *info, char *msg, size_t msglen)
{
    *state = NULL;
    int count = 0;
    port_error_t e = port_get_device_count(&count);
    if (e != port_success) { /* no driver, no device, driver too old: not an error of ours */
        (void)port_get_last_error();
        say(msg, msglen, "%s runtime reports no usable GPU: %s (%s, %d)", PORT_RUNTIME_NAME, port_error_string(e),
            port_error_name(e), (int)e);
        return SPMV_STATUS_BACKEND_UNAVAILABLE;
    }
    if (count <= 0 || device >= count) {
        say(msg, msglen, "%s device %d requested but %d present", PORT_RUNTIME_NAME, device, count);
        return SPMV_STATUS_BACKEND_UNAVAILABLE;
    }
    port_device_props p;
    if ((e = port_set_device(device)) == port_success) e = port_get_device_props(device, &p);
    if (e != port_success) {
        spmv_status_t st = runtime_fail(e, "reading the device's properties", msg, msglen);
        return port_error_is_no_gpu(e) ? SPMV_STATUS_BACKEND_UNAVAILABLE : st;
    }
    if (!port_warp_supported(p.warp_size)) {
        say(msg, msglen, "device %d (%s) has warp size %d, for which this module has no kernels", device, p.name,
            p.warp_size);
        return SPMV_STATUS_BACKEND_UNAVAILABLE;
    }
    gpu_state *st = (gpu_state *)calloc(1, sizeof *st);
    if (st == NULL) {
        say(msg, msglen, "out of host memory for the backend state");
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    st->device = device;
    st->warp = p.warp_size;
    st->multiprocessors = p.multiprocessors;
    st->l2_bytes = p.l2_bytes;
    info->backend = PORT_BACKEND_KIND;
    const size_t name_len = strnlen(p.name, sizeof info->name - 1); /* truncated to the public field */
    memcpy(info->name, p.name, name_len);
    info->name[name_len] = '\0';
    info->warp_size = p.warp_size;
    info->multiprocessors = p.multiprocessors;
    info->shared_mem_per_block = p.shared_mem_per_block;
    info->l2_bytes = p.l2_bytes;
    info->global_mem_bytes = p.global_mem_bytes;
    info->runtime_version = p.runtime_version;
    info->driver_version = p.driver_version;
    info->compute_capability = p.compute_capability;
    *state = st;
    return SPMV_STATUS_SUCCESS;
}

void gpu_close(void *state)
{
    gpu_state *st = (gpu_state *)state;
    if (st == NULL) return;
    if (port_set_device(st->device) != port_success) (void)port_get_last_error();
    vendor_close(st);
    free(st);
}

spmv_status_t gpu_set_stream(void *state, void *stream, char *msg, size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    st->stream = (port_stream_t)stream;
    return vendor_set_stream(st, msg, msglen);
}

/* ---- memory ------------------------------------------------------------------------------------------------------- */
spmv_status_t gpu_alloc(void *state, void **ptr, size_t bytes, char *msg, size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    *ptr = NULL;
    GPU_CHECK(port_set_device(st->device), "selecting the device");
    const port_error_t e = port_malloc(ptr, bytes == 0 ? 1 : bytes); /* a valid pointer even for 0 bytes */
    if (e != port_success) {
        char what[96];
        snprintf(what, sizeof what, "allocating %zu bytes of device memory", bytes);
        *ptr = NULL;
        return runtime_fail(e, what, msg, msglen);
    }
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t gpu_free(void *state, void *ptr, char *msg, size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    GPU_CHECK(port_set_device(st->device), "selecting the device");
    GPU_CHECK(port_free(ptr), "freeing device memory");
    return SPMV_STATUS_SUCCESS;
}

/* Ordered on the stream. Copies touching host memory return when done, so the caller may reuse the buffer. */
spmv_status_t gpu_copy(void *state, void *dst, const void *src, size_t bytes, spmvport_copy_kind kind, char *msg,
                       size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    const port_copy_kind k = kind == SPMVPORT_COPY_H2D ? port_copy_h2d
                             : kind == SPMVPORT_COPY_D2H ? port_copy_d2h : port_copy_d2d;
    GPU_CHECK(port_set_device(st->device), "selecting the device");
    GPU_CHECK(port_memcpy_async(dst, src, bytes, k, st->stream), "copying");
    if (k != port_copy_d2d) GPU_CHECK(port_stream_synchronize(st->stream), "waiting for a copy");
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t gpu_set(void *state, void *ptr, int value, size_t bytes, char *msg, size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    GPU_CHECK(port_set_device(st->device), "selecting the device");
    GPU_CHECK(port_memset_async(ptr, value, bytes, st->stream), "setting device memory");
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t gpu_sync(void *state, char *msg, size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    GPU_CHECK(port_set_device(st->device), "selecting the device");
    GPU_CHECK(port_stream_synchronize(st->stream), "synchronizing the stream");
    return SPMV_STATUS_SUCCESS;
}

/* ---- formats and plans --------------------------------------------------------------------------------------------- */
/* The formats this module runs. To add one whose kernels live in src/common/device/<format>_kernels.h (with
 * <format>_layout_problem(fd, warp) and launch_<format><W, T, Plan>(plan, alpha, x, beta, y, stream)): include
 * the header above, and add a case here, in layout_problem() and in launch_format(). */
bool has_kernels(spmv_format_t f)
{
    return f == SPMV_FORMAT_CSR_SCALAR || f == SPMV_FORMAT_CSR_VECTOR || f == SPMV_FORMAT_CSR_LB ||
           f == SPMV_FORMAT_VENDOR || f == SPMV_FORMAT_AMF_CSR || f == SPMV_FORMAT_HBP || f == SPMV_FORMAT_TEB ||
           f == SPMV_FORMAT_TILE || f == SPMV_FORMAT_EHYB;
}

/* What the CSR kernels rely on in the builder's layout; NULL when fd is usable on a device of this warp size. */
const char *csr_layout_problem(const spmvport_format_data *fd, int warp)
{
    const int64_t *prm = fd->params;
    if (fd->narrays < 3 || fd->arrays[SPMVPORT_CSR_ROW_PTR].bytes != ((size_t)fd->m + 1) * sizeof(int32_t))
        return "CSR arrays missing";
    if (fd->format == SPMV_FORMAT_CSR_VECTOR &&
        (prm[SPMVPORT_P_LANES] < 1 || prm[SPMVPORT_P_LANES] > warp ||
         (prm[SPMVPORT_P_LANES] & (prm[SPMVPORT_P_LANES] - 1)) != 0))
        return "lanes per row not a power of two <= the warp size";
    if (fd->format == SPMV_FORMAT_CSR_LB) {
        const size_t vsize = fd->precision == SPMV_F32 ? sizeof(float) : sizeof(double);
        const int64_t nhot = prm[SPMVPORT_P_LB_HOT];
        if (fd->narrays != SPMVPORT_CSR_LB_NARRAYS) return "csr_lb split arrays missing";
        if (nhot < 0 || nhot > fd->n || fd->arrays[SPMVPORT_CSR_LB_HOT].bytes != (size_t)nhot * sizeof(int32_t) ||
            fd->arrays[SPMVPORT_CSR_LB_HOT_X].bytes != (size_t)nhot * vsize)
            return "csr_lb hot columns inconsistent with their count";
        return lb_layout_problem(fd->arrays + SPMVPORT_CSR_LB_SPLIT, fd->nnz, fd->m, prm[SPMVPORT_P_NNZ_PER_WARP],
                                 prm[SPMVPORT_P_NWARPS], prm[SPMVPORT_P_LB_EMPTY], vsize, warp);
    }
    return NULL;
}

const char *layout_problem(const spmvport_format_data *fd, int warp)
{
    if (fd->warp_size != warp) return "layout built for another warp size";
    switch (fd->format) {
    case SPMV_FORMAT_CSR_SCALAR:
    case SPMV_FORMAT_CSR_VECTOR:
    case SPMV_FORMAT_CSR_LB:
    case SPMV_FORMAT_VENDOR: return csr_layout_problem(fd, warp);
    case SPMV_FORMAT_AMF_CSR: return amf_csr_layout_problem(fd, warp);
    case SPMV_FORMAT_HBP: return hbp_layout_problem(fd, warp);
    case SPMV_FORMAT_TEB: return teb_layout_problem(fd, warp);
    case SPMV_FORMAT_TILE: return tile_layout_problem(fd, warp);
    case SPMV_FORMAT_EHYB: return ehyb_layout_problem(fd, warp);
    default: return "no kernels";
    }
}

spmv_status_t gpu_supports(void *state, spmv_format_t format, spmv_precision_t precision, char *msg, size_t msglen)
{
    (void)state;
    if (precision != SPMV_F32 && precision != SPMV_F64) {
        say(msg, msglen, "unknown precision %d", (int)precision);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    if (has_kernels(format)) return SPMV_STATUS_SUCCESS;
    say(msg, msglen, "format %s is not implemented in this version", format_name(format));
    return SPMV_STATUS_NOT_SUPPORTED;
}

/* The builders make the layout the kernels expect, so a mismatch is a bug of ours. */
spmv_status_t check_layout(const gpu_state *st, const spmvport_format_data *fd, char *msg, size_t msglen)
{
    if (!has_kernels(fd->format)) {
        say(msg, msglen, "format %s is not implemented in this version", format_name(fd->format));
        return SPMV_STATUS_NOT_SUPPORTED;
    }
    const char *bad = layout_problem(fd, st->warp);
    if (bad == NULL) return SPMV_STATUS_SUCCESS;
    say(msg, msglen, "%s: %s (layout warp size %d, device %d)", format_name(fd->format), bad, fd->warp_size,
        st->warp);
    return SPMV_STATUS_INTERNAL_ERROR;
}

void gpu_plan_free(void *state, void *dplan)
{
    gpu_state *st = (gpu_state *)state;
    gpu_plan *p = (gpu_plan *)dplan;
    if (p == NULL) return;
    if (port_set_device(st->device) != port_success) (void)port_get_last_error();
    if (p->vendor != NULL) vendor_plan_destroy(p->vendor);
    for (int a = 0; a < SPMVPORT_MAX_ARRAYS; a++)
        if (p->arrays[a] != NULL && port_free(p->arrays[a]) != port_success) (void)port_get_last_error();
    free(p);
}

spmv_status_t gpu_plan_upload(void *state, const spmvport_format_data *fd, void **dplan, size_t *device_bytes,
                              char *msg, size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    *dplan = NULL;
    *device_bytes = 0;
    spmv_status_t s = check_layout(st, fd, msg, msglen);
    if (s != SPMV_STATUS_SUCCESS) return s;
    GPU_CHECK(port_set_device(st->device), "selecting the device");
    gpu_plan *p = (gpu_plan *)calloc(1, sizeof *p);
    if (p == NULL) {
        say(msg, msglen, "out of host memory for a device plan");
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    p->fd = fd;
    port_error_t e = port_success;
    char what[160] = "";
    for (int a = 0; a < fd->narrays && e == port_success; a++) {
        const spmvport_array *arr = &fd->arrays[a];
        if (arr->bytes == 0 || arr->host_only) continue;
        snprintf(what, sizeof what, "allocating %zu bytes for array %s", arr->bytes, arr->name);
        e = port_malloc(&p->arrays[a], arr->bytes);
        if (e != port_success) {
            p->arrays[a] = NULL;
            break;
        }
        p->bytes += arr->bytes;
        snprintf(what, sizeof what, "uploading array %s", arr->name);
        e = port_memcpy_async(p->arrays[a], arr->data, arr->bytes, port_copy_h2d, st->stream);
    }
    if (e == port_success && fd->format == SPMV_FORMAT_EHYB) {
        snprintf(what, sizeof what, "raising the ehyb kernel's shared-memory limit");
        port_dispatch_warp(st->warp, [&](auto w) { e = ehyb_prepare<decltype(w)::value>(fd, st->device); });
    }
    if (e == port_success) {
        snprintf(what, sizeof what, "waiting for the upload");
        e = port_stream_synchronize(st->stream);
    }
    if (e != port_success) {
        s = runtime_fail(e, what, msg, msglen);
        gpu_plan_free(st, p);
        return s;
    }
    size_t vendor_bytes = 0;
    if (fd->format == SPMV_FORMAT_VENDOR) {
        s = vendor_plan_create(st, p, &vendor_bytes, msg, msglen);
        if (s != SPMV_STATUS_SUCCESS) {
            gpu_plan_free(st, p);
            return s;
        }
    }
    *dplan = p;
    *device_bytes = p->bytes + vendor_bytes;
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t gpu_plan_update_values(void *state, void *dplan, const spmvport_format_data *fd, char *msg,
                                     size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    gpu_plan *p = (gpu_plan *)dplan;
    GPU_CHECK(port_set_device(st->device), "selecting the device");
    for (int a = 0; a < fd->narrays; a++) {
        const spmvport_array *arr = &fd->arrays[a];
        if (!arr->is_values || arr->bytes == 0) continue;
        GPU_CHECK(port_memcpy_async(p->arrays[a], arr->data, arr->bytes, port_copy_h2d, st->stream),
                  "uploading new values");
    }
    GPU_CHECK(port_stream_synchronize(st->stream), "waiting for the new values");
    return p->vendor != NULL ? vendor_plan_update(st, p, msg, msglen) : SPMV_STATUS_SUCCESS;
}

/* ---- execute ----------------------------------------------------------------------------------------------------------- */
unsigned blocks_for(long long threads) { return (unsigned)((threads + csr_block - 1) / csr_block); }

/* csr_vector (lanes_log2 >= 0) or csr_scalar (-1) with index type I (csr_index_unsigned) */
template <int W, typename I, typename T>
void launch_csr_rows(const spmvport_format_data *fd, int lanes_log2, const int *ptr, const int *col, const T *val,
                     const T *x, T *y, T alpha, T beta, port_stream_t s)
{
    if (lanes_log2 >= 0) {
        PORT_LAUNCH(blocks_for((long long)fd->m << lanes_log2), csr_block, 0, s, csr_vector_kernel<W, I, T>)
        (fd->m, lanes_log2, ptr, col, val, x, y, alpha, beta);
    } else {
        PORT_LAUNCH(blocks_for(fd->m), csr_block, 0, s, csr_scalar_kernel<W, I, T>)
        (fd->m, ptr, col, val, x, y, alpha, beta);
    }
}

/* csr_vector at `lanes` lanes a row (a power of two; csr_scalar at 0) on these arrays, with the index type nnz
 * needs */
template <int W, typename T>
void launch_csr_any(const spmvport_format_data *fd, int64_t lanes, const int *ptr, const int *col, const T *val,
                    const T *x, T *y, T alpha, T beta, port_stream_t s)
{
    int lanes_log2 = -1;
    if (lanes > 0)
        for (lanes_log2 = 0; ((int64_t)1 << lanes_log2) < lanes;) lanes_log2++;
    if (csr_index_unsigned<W>(fd->nnz))
        launch_csr_rows<W, unsigned>(fd, lanes_log2, ptr, col, val, x, y, alpha, beta, s);
    else
        launch_csr_rows<W, int>(fd, lanes_log2, ptr, col, val, x, y, alpha, beta, s);
}

/* amf_csr's CSR-vector layout (format_amf_csr.h, options.amf_vector): csr_vector's kernel on its row pointer
 * (fold_ptr), plain columns and values, csr_scalar's at one lane a row; its folds: launch_amf_csr */
template <int W, typename T>
void launch_amf(const gpu_plan *p, double alpha, const void *x, double beta, void *y, port_stream_t s)
{
    const spmvport_format_data *fd = p->fd;
    const int64_t lanes = fd->params[AMF_P_VECTOR_LANES];
    if (lanes == 0) {
        launch_amf_csr<W, T>(p, alpha, x, beta, y, s);
        return;
    }
    launch_csr_any<W, T>(fd, lanes == 1 ? 0 : lanes, (const int *)p->arrays[AMF_A_FOLD_PTR],
                         (const int *)p->arrays[AMF_A_COLS],
                         (const T *)p->arrays[AMF_A_VALUES], (const T *)x, (T *)y, (T)alpha, (T)beta, s);
}

template <int W, typename T>
void launch_csr(const gpu_plan *p, double alpha_d, const void *xv, double beta_d, void *yv, port_stream_t s)
{
    const spmvport_format_data *fd = p->fd;
    const T alpha = (T)alpha_d, beta = (T)beta_d;
    const int *ptr = (const int *)p->arrays[SPMVPORT_CSR_ROW_PTR];
    const int *col = (const int *)p->arrays[SPMVPORT_CSR_COL_IDX];
    const T *val = (const T *)p->arrays[SPMVPORT_CSR_VALUES];
    const T *x = (const T *)xv;
    T *y = (T *)yv;
    switch (fd->format) {
    case SPMV_FORMAT_CSR_LB: {
        lb_split<T> a = lb_split_view<T>(p->arrays + SPMVPORT_CSR_LB_SPLIT, fd->nnz, fd->params[SPMVPORT_P_NWARPS],
                                         fd->params[SPMVPORT_P_NNZ_PER_WARP], fd->params[SPMVPORT_P_LB_EMPTY], col,
                                         val);
        a.nhot = (int)fd->params[SPMVPORT_P_LB_HOT];
        a.hot = (const int *)p->arrays[SPMVPORT_CSR_LB_HOT];
        a.hot_x = (T *)p->arrays[SPMVPORT_CSR_LB_HOT_X];
        launch_lb<W, T>(a, x, y, alpha, beta, s);
        break;
    }
    default: { /* csr_vector; csr_scalar, and vendor plans of empty shapes (y = beta*y) */
        const int64_t lanes = fd->format == SPMV_FORMAT_CSR_VECTOR ? fd->params[SPMVPORT_P_LANES] : 0;
        launch_csr_any<W, T>(fd, lanes, ptr, col, val, x, y, alpha, beta, s);
        break;
    }
    }
}

/* One format's launches on the stream; the caller checks the launch error. */
template <int W, typename T>
void launch_format(const gpu_plan *p, double alpha, const void *x, double beta, void *y, port_stream_t s)
{
    switch (p->fd->format) {
    case SPMV_FORMAT_AMF_CSR: launch_amf<W, T>(p, alpha, x, beta, y, s); break;
    case SPMV_FORMAT_HBP: launch_hbp<W, T>(p, alpha, x, beta, y, s); break;
    case SPMV_FORMAT_TEB: launch_teb<W, T>(p, alpha, x, beta, y, s); break;
    case SPMV_FORMAT_TILE: launch_tile<W, T>(p, alpha, x, beta, y, s); break;
    case SPMV_FORMAT_EHYB: launch_ehyb<W, T>(p, alpha, x, beta, y, s); break;
    default: launch_csr<W, T>(p, alpha, x, beta, y, s); break; /* csr_*, and vendor plans of empty shapes */
    }
}

spmv_status_t gpu_execute(void *state, void *dplan, double alpha, const void *x, double beta, void *y, char *msg,
                          size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    const gpu_plan *p = (const gpu_plan *)dplan;
    const spmvport_format_data *fd = p->fd;
    if (fd->m == 0) return SPMV_STATUS_SUCCESS; /* nothing to write */
    GPU_CHECK(port_set_device(st->device), "selecting the device");
    if (p->vendor != NULL) return vendor_execute(st, p, alpha, x, beta, y, msg, msglen);
    const bool f32 = fd->precision == SPMV_F32;
    const bool launched = port_dispatch_warp(st->warp, [&](auto w) {
        constexpr int W = decltype(w)::value;
        if (f32) launch_format<W, float>(p, alpha, x, beta, y, st->stream);
        else launch_format<W, double>(p, alpha, x, beta, y, st->stream);
    });
    if (!launched) {
        say(msg, msglen, "no kernels for warp size %d", st->warp);
        return SPMV_STATUS_INTERNAL_ERROR;
    }
    char what[64];
    snprintf(what, sizeof what, "launching the %s kernel", format_name(fd->format));
    GPU_CHECK(port_get_last_error(), what);
    return SPMV_STATUS_SUCCESS;
}

/* Events made for one measurement, destroyed on every path. */
struct event_set {
    port_event_t *ev = NULL;
    int count = 0;
    ~event_set()
    {
        for (int i = 0; i < count; i++)
            if (port_event_destroy(ev[i]) != port_success) (void)port_get_last_error();
        free(ev);
    }
    port_error_t make(int n)
    {
        ev = (port_event_t *)calloc((size_t)n, sizeof *ev);
        if (ev == NULL) return port_success; /* caller checks ev */
        for (; count < n; count++) {
            const port_error_t e = port_event_create(&ev[count]);
            if (e != port_success) return e;
        }
        return port_success;
    }
};

/* Back-to-back timed executes: event i before execute i, event i+1 after it. */
spmv_status_t gpu_time_execute(void *state, void *dplan, double alpha, const void *x, double beta, void *y,
                               int warmup, int iters, double *ms, char *msg, size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    GPU_CHECK(port_set_device(st->device), "selecting the device");
    event_set events;
    GPU_CHECK(events.make(iters + 1), "creating timing events");
    if (events.ev == NULL) {
        say(msg, msglen, "out of host memory for %d timing events", iters + 1);
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    for (int i = 0; i < warmup; i++) {
        const spmv_status_t s = gpu_execute(state, dplan, alpha, x, beta, y, msg, msglen);
        if (s != SPMV_STATUS_SUCCESS) return s;
    }
    GPU_CHECK(port_event_record(events.ev[0], st->stream), "recording an event");
    for (int i = 0; i < iters; i++) {
        const spmv_status_t s = gpu_execute(state, dplan, alpha, x, beta, y, msg, msglen);
        if (s != SPMV_STATUS_SUCCESS) return s;
        GPU_CHECK(port_event_record(events.ev[i + 1], st->stream), "recording an event");
    }
    GPU_CHECK(port_event_synchronize(events.ev[iters]), "waiting for the timed executes");
    for (int i = 0; i < iters; i++) {
        float t = 0;
        GPU_CHECK(port_event_elapsed_ms(&t, events.ev[i], events.ev[i + 1]), "reading an event time");
        ms[i] = t;
    }
    return SPMV_STATUS_SUCCESS;
}

/* Read bandwidth: a read-only kernel over a zeroed buffer well beyond the L2 (1 GiB or 8x L2 by default). */
spmv_status_t gpu_read_bandwidth(void *state, size_t bytes, int iters, double *gbps, char *msg, size_t msglen)
{
    gpu_state *st = (gpu_state *)state;
    typedef port_vec<unsigned, 4>::type vec;
    GPU_CHECK(port_set_device(st->device), "selecting the device");
    if (bytes == 0) {
        bytes = (size_t)1 << 30;
        if (bytes < 8 * st->l2_bytes) bytes = 8 * st->l2_bytes;
        size_t free_bytes = 0, total = 0;
        GPU_CHECK(port_mem_get_info(&free_bytes, &total), "reading free device memory");
        if (bytes > free_bytes / 2) bytes = free_bytes / 2;
    }
    const long long n = (long long)(bytes / sizeof(vec));
    if (n <= 0) {
        say(msg, msglen, "read bandwidth: %zu bytes is too small a buffer", bytes);
        return SPMV_STATUS_INVALID_ARGUMENT;
    }
    bytes = (size_t)n * sizeof(vec);
    void *buf = NULL;
    port_error_t e = port_malloc(&buf, bytes);
    if (e != port_success) {
        char what[96];
        snprintf(what, sizeof what, "allocating %zu bytes for the bandwidth probe", bytes);
        return runtime_fail(e, what, msg, msglen);
    }
    struct buffer_guard { /* frees the buffer on every path */
        void *p;
        ~buffer_guard()
        {
            if (port_free(p) != port_success) (void)port_get_last_error();
        }
    } guard{buf};
    GPU_CHECK(port_memset_async(buf, 0, bytes, st->stream), "clearing the bandwidth buffer");
    event_set events;
    GPU_CHECK(events.make(2), "creating timing events");
    if (events.ev == NULL) {
        say(msg, msglen, "out of host memory for timing events");
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    const unsigned blocks = (unsigned)(st->multiprocessors > 0 ? st->multiprocessors : 1) * 8u;
    const vec *p = (const vec *)buf;
    unsigned *sink = (unsigned *)buf; /* never written: the data is zero */
    double best = 0;
    for (int it = -1; it < iters; it++) { /* it = -1: warm-up */
        GPU_CHECK(port_event_record(events.ev[0], st->stream), "recording an event");
        PORT_LAUNCH(blocks, csr_block, 0, st->stream, read_bandwidth_kernel)(p, n, sink);
        GPU_CHECK(port_get_last_error(), "launching the bandwidth kernel");
        GPU_CHECK(port_event_record(events.ev[1], st->stream), "recording an event");
        GPU_CHECK(port_event_synchronize(events.ev[1]), "waiting for the bandwidth kernel");
        float t = 0;
        GPU_CHECK(port_event_elapsed_ms(&t, events.ev[0], events.ev[1]), "reading an event time");
        const double rate = t > 0 ? (double)bytes / ((double)t * 1e6) : 0;
        if (it >= 0 && rate > best) best = rate;
    }
    *gbps = best;
    return SPMV_STATUS_SUCCESS;
}

const spmvport_backend_ops gpu_ops = {SPMVPORT_BACKEND_ABI, PORT_BACKEND_KIND, PORT_BACKEND_NAME,
                                      gpu_open, gpu_close, gpu_set_stream, gpu_alloc, gpu_free, gpu_copy,
                                      gpu_set, gpu_sync, gpu_supports, gpu_plan_upload, gpu_plan_update_values,
                                      gpu_plan_free, gpu_execute, gpu_time_execute, gpu_read_bandwidth};

} /* namespace */

/* For a static build that links the modules in: tagged, so the CUDA and HIP backends can coexist. */
extern "C" const spmvport_backend_ops *PORT_BACKEND_ENTRY_TAGGED(void) { return &gpu_ops; }

#ifndef SPMVPORT_NO_MODULE_ENTRY
/* What the core dlsym's in a module (SPMVPORT_BACKEND_ENTRY). */
extern "C" __attribute__((visibility("default"))) const spmvport_backend_ops *spmvport_backend_entry(void)
{
    return &gpu_ops;
}
#endif

#endif /* SPMVPORT_DEVICE_BACKEND_IMPL_H */
