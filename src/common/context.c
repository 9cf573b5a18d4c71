/*
 * context.c -- contexts, the backend registry and device memory through the context.
 *
 * The CPU backend is compiled in. GPU backends are modules opened with dlopen when a context asks for them, so
 * one build of libspmvport.so runs with no GPU, with NVIDIA only or with AMD only; a missing module, runtime,
 * driver or device is a status code, never a load failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* ---- module loading -------------------------------------------------------------------------------------- */

/* The directory libspmvport.so (or the executable, for a static build) was loaded from. */
static void library_dir(char *dir, size_t len)
{
    Dl_info info;
    dir[0] = '\0';
    char exe[4096];
    if (dladdr((void *)&spmv_context_create, &info) == 0 || info.dli_fname == NULL) return;
    const char *file = info.dli_fname;
    if (strchr(file, '/') == NULL) { /* linked into the executable (static build): use its real path */
        ssize_t len_exe = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (len_exe <= 0) return;
        exe[len_exe] = '\0';
        file = exe;
    }
    const char *slash = strrchr(file, '/');
    if (slash == NULL) return;
    size_t n = (size_t)(slash - file);
    if (n + 1 > len) return;
    memcpy(dir, file, n);
    dir[n] = '\0';
}

/* Try DIR/NAME; on success store the handle and table. */
static int try_module(const char *dir, const char *file, void **handle, const spmvport_backend_ops **ops,
                      char *why, size_t whylen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        spmvport_msg(why, whylen, "%s", e ? e : path);
        return 0;
    }
    spmvport_backend_entry_fn entry;
    *(void **)&entry = dlsym(h, SPMVPORT_BACKEND_ENTRY);
    const spmvport_backend_ops *t = entry ? entry() : NULL;
    if (t == NULL || t->abi != SPMVPORT_BACKEND_ABI) {
        spmvport_msg(why, whylen, "%s: %s", path, t == NULL ? "no backend entry point" : "backend ABI mismatch");
        dlclose(h);
        return 0;
    }
    *handle = h;
    *ops = t;
    return 1;
}

/* Look for the module in SPMVPORT_BACKEND_PATH, then next to the library. */
static spmv_status_t load_module(spmv_backend_t kind, void **handle, const spmvport_backend_ops **ops, char *why,
                                 size_t whylen)
{
    const char *file = kind == SPMV_BACKEND_CUDA ? "libspmvport_cuda.so" : "libspmvport_hip.so";
    const char *env = getenv("SPMVPORT_BACKEND_PATH");
    char dirs[8192] = "";
    char own[4096];
    library_dir(own, sizeof own);
    snprintf(dirs, sizeof dirs, "%s%s%s", env ? env : "", env && *env ? ":" : "", own);
    spmvport_msg(why, whylen, "module %s not found (searched SPMVPORT_BACKEND_PATH and '%s')", file, own);
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
        char last[1024] = "";
        if (try_module(d, file, handle, ops, last, sizeof last)) return SPMV_STATUS_SUCCESS;
        /* a module that exists but fails to load says more than "not found" */
        if (strstr(last, "No such file") == NULL) spmvport_msg(why, whylen, "%s", last);
    }
    return SPMV_STATUS_BACKEND_UNAVAILABLE;
}

/* ---- contexts -------------------------------------------------------------------------------------------- */

static spmv_status_t open_backend(spmv_context_t *ctx, spmv_backend_t kind, int device, char *why, size_t whylen)
{
    const spmvport_backend_ops *ops = spmvport_cpu_backend();
    void *module = NULL;
    if (kind != SPMV_BACKEND_CPU) {
        spmv_status_t st = load_module(kind, &module, &ops, why, whylen);
        if (st != SPMV_STATUS_SUCCESS) return st;
    }
    memset(&ctx->info, 0, sizeof ctx->info);
    spmv_status_t st = ops->open(&ctx->state, device, &ctx->info, why, whylen);
    if (st != SPMV_STATUS_SUCCESS) {
        if (module) dlclose(module);
        return st;
    }
    ctx->info.backend = kind;
    ctx->ops = ops;
    ctx->module = module;
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmv_context_create(spmv_context_t **ctx, spmv_backend_t backend, int device_index)
{
    spmvport_clear_error(NULL);
    if (ctx == NULL) return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_context_create: ctx is NULL");
    *ctx = NULL;
    if (backend < SPMV_BACKEND_AUTO || backend > SPMV_BACKEND_HIP)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_context_create: unknown backend %d",
                             (int)backend);
    if (device_index < 0)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_context_create: device_index %d < 0",
                             device_index);
    spmv_context_t *c = calloc(1, sizeof *c);
    if (c == NULL) return spmvport_fail(NULL, SPMV_STATUS_OUT_OF_MEMORY, "out of host memory for a context");

    char why[SPMVPORT_MSG_LEN] = "";
    spmv_status_t st;
    if (backend != SPMV_BACKEND_AUTO) {
        st = open_backend(c, backend, device_index, why, sizeof why);
        if (st != SPMV_STATUS_SUCCESS) {
            free(c);
            return spmvport_fail(NULL, st, "backend %s unavailable: %s", spmv_backend_name(backend), why);
        }
        *ctx = c;
        return SPMV_STATUS_SUCCESS;
    }
    /* AUTO: the first GPU that works, else the CPU; remember why each GPU backend was passed over. */
    char passed[SPMVPORT_MSG_LEN] = "";
    const spmv_backend_t gpus[2] = {SPMV_BACKEND_CUDA, SPMV_BACKEND_HIP};
    for (int g = 0; g < 2; g++) {
        if (open_backend(c, gpus[g], device_index, why, sizeof why) == SPMV_STATUS_SUCCESS) {
            *ctx = c;
            return SPMV_STATUS_SUCCESS;
        }
        size_t used = strlen(passed);
        snprintf(passed + used, sizeof passed - used, "%s%s: %s", used ? "; " : "", spmv_backend_name(gpus[g]),
                 why);
    }
    st = open_backend(c, SPMV_BACKEND_CPU, 0, why, sizeof why);
    if (st != SPMV_STATUS_SUCCESS) {
        free(c);
        return spmvport_fail(NULL, st, "no backend could be opened: %s; cpu: %s", passed, why);
    }
    spmvport_msg(c->last_error, sizeof c->last_error, "auto chose the CPU backend (%s)", passed);
    *ctx = c;
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmv_context_destroy(spmv_context_t *ctx)
{
    if (ctx == NULL) return SPMV_STATUS_SUCCESS;
    ctx->ops->close(ctx->state);
    if (ctx->module) dlclose(ctx->module);
    free(ctx);
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t spmv_context_get_info(const spmv_context_t *ctx, spmv_device_info_t *info)
{
    if (ctx == NULL || info == NULL)
        return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, "spmv_context_get_info: argument %s is NULL",
                             ctx == NULL ? "ctx" : "info");
    *info = ctx->info;
    return SPMV_STATUS_SUCCESS;
}

/* ---- pass-through calls with a recorded message ------------------------------------------------------------ */

/* Record a backend failure under the name of the public function. */
static spmv_status_t backend_result(spmv_context_t *ctx, spmv_status_t st, const char *fn, const char *msg)
{
    return st == SPMV_STATUS_SUCCESS ? st : spmvport_fail(ctx, st, "%s: %s", fn, msg);
}

#define CHECK_CTX(fn)                                                                                            \
    do {                                                                                                         \
        if (ctx == NULL) return spmvport_fail(NULL, SPMV_STATUS_INVALID_ARGUMENT, fn ": ctx is NULL");           \
        spmvport_clear_error(ctx);                                                                               \
    } while (0)

spmv_status_t spmv_context_set_stream(spmv_context_t *ctx, void *stream)
{
    CHECK_CTX("spmv_context_set_stream");
    char msg[SPMVPORT_MSG_LEN] = "";
    return backend_result(ctx, ctx->ops->set_stream(ctx->state, stream, msg, sizeof msg), "spmv_context_set_stream",
                          msg);
}

spmv_status_t spmv_malloc(spmv_context_t *ctx, void **ptr, size_t bytes)
{
    CHECK_CTX("spmv_malloc");
    if (ptr == NULL) return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "spmv_malloc: ptr is NULL");
    char msg[SPMVPORT_MSG_LEN] = "";
    return backend_result(ctx, ctx->ops->mem_alloc(ctx->state, ptr, bytes, msg, sizeof msg), "spmv_malloc", msg);
}

spmv_status_t spmv_free(spmv_context_t *ctx, void *ptr)
{
    CHECK_CTX("spmv_free");
    if (ptr == NULL) return SPMV_STATUS_SUCCESS;
    char msg[SPMVPORT_MSG_LEN] = "";
    return backend_result(ctx, ctx->ops->mem_free(ctx->state, ptr, msg, sizeof msg), "spmv_free", msg);
}

static spmv_status_t copy(spmv_context_t *ctx, void *dst, const void *src, size_t bytes, spmvport_copy_kind kind,
                          const char *fn)
{
    if (bytes == 0) return SPMV_STATUS_SUCCESS;
    if (dst == NULL || src == NULL)
        return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", fn, dst == NULL ? "dst" : "src");
    char msg[SPMVPORT_MSG_LEN] = "";
    return backend_result(ctx, ctx->ops->mem_copy(ctx->state, dst, src, bytes, kind, msg, sizeof msg), fn, msg);
}

spmv_status_t spmv_copy_to_device(spmv_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    CHECK_CTX("spmv_copy_to_device");
    return copy(ctx, dst, src, bytes, SPMVPORT_COPY_H2D, "spmv_copy_to_device");
}

spmv_status_t spmv_copy_to_host(spmv_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    CHECK_CTX("spmv_copy_to_host");
    return copy(ctx, dst, src, bytes, SPMVPORT_COPY_D2H, "spmv_copy_to_host");
}

spmv_status_t spmv_memset(spmv_context_t *ctx, void *ptr, int byte_value, size_t bytes)
{
    CHECK_CTX("spmv_memset");
    if (bytes == 0) return SPMV_STATUS_SUCCESS;
    if (ptr == NULL) return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "spmv_memset: ptr is NULL");
    char msg[SPMVPORT_MSG_LEN] = "";
    return backend_result(ctx, ctx->ops->mem_set(ctx->state, ptr, byte_value, bytes, msg, sizeof msg),
                          "spmv_memset", msg);
}

spmv_status_t spmv_synchronize(spmv_context_t *ctx)
{
    CHECK_CTX("spmv_synchronize");
    char msg[SPMVPORT_MSG_LEN] = "";
    return backend_result(ctx, ctx->ops->synchronize(ctx->state, msg, sizeof msg), "spmv_synchronize", msg);
}

spmv_status_t spmv_context_read_bandwidth(spmv_context_t *ctx, size_t bytes, int iters, double *gbps)
{
    CHECK_CTX("spmv_context_read_bandwidth");
    if (gbps == NULL || iters <= 0)
        return spmvport_fail(ctx, SPMV_STATUS_INVALID_ARGUMENT, "spmv_context_read_bandwidth: %s",
                             gbps == NULL ? "gbps is NULL" : "iters must be positive");
    char msg[SPMVPORT_MSG_LEN] = "";
    return backend_result(ctx, ctx->ops->read_bandwidth(ctx->state, bytes, iters, gbps, msg, sizeof msg),
                          "spmv_context_read_bandwidth", msg);
}
