/*
 * vendor_spmv.h -- the vendor library's generic SpMV (cuSPARSE / hipSPARSE) as format "vendor", written once.
 * Included by backend_impl.h. The two libraries' generic APIs differ only in their prefixes, so the backend's
 * vendor header (src/backend_cuda/vendor_cusparse.h, src/backend_hip/vendor_hipsparse.h) defines:
 *   VSP(name)      library function/type name: cusparse##name / hipsparse##name
 *   VSP_E(name)    enumerator: CUSPARSE_##name / HIPSPARSE_##name
 *   vsp_data_t, VSP_R_32F, VSP_R_64F    the value type enum
 *   VSP_HAS_PREPROCESS                  1 when the library declares SpMV_preprocess
 *   vsp_status_string(status)           a static string for a status
 *   VSP_BETA0_READS_Y                   1 if the library reads y when beta == 0 (then y is zeroed first, so a
 *                                       NaN in y cannot leak into the result); 0 for cuSPARSE and hipSPARSE
 *
 * Per plan, once: the CSR descriptor, x/y descriptors, the work buffer (allocated once) and the preprocessing
 * (run on scratch vectors, freed at once). Per execute: point the x/y descriptors at the caller's vectors and
 * call SpMV on the context's stream (the handle is bound to it): no allocation.
 */

namespace {

struct vendor_plan {
    VSP(SpMatDescr_t) A;
    VSP(DnVecDescr_t) x, y;
    void *buffer;
    size_t buffer_bytes;
    VSP(SpMVAlg_t) alg;
    vsp_data_t type;
    bool f32;
};

spmv_status_t vsp_fail(VSP(Status_t) s, const char *what, char *msg, size_t len)
{
    say(msg, len, "%s: %s (status %d)", what, vsp_status_string(s), (int)s);
    return s == VSP_E(STATUS_ALLOC_FAILED) ? SPMV_STATUS_DEVICE_OUT_OF_MEMORY : SPMV_STATUS_DEVICE_ERROR;
}

#define VSP_CHECK(call, what)                                                                                  \
    do {                                                                                                       \
        const VSP(Status_t) s_ = (call);                                                                       \
        if (s_ != VSP_E(STATUS_SUCCESS)) return vsp_fail(s_, what, msg, msglen);                               \
    } while (0)

VSP(Handle_t) vsp_handle(const gpu_state *st) { return (VSP(Handle_t))st->vendor; }

/* The handle is made on first use (it costs time and device memory) and bound to the context's stream. */
spmv_status_t vendor_handle(gpu_state *st, char *msg, size_t msglen)
{
    if (st->vendor != NULL) return SPMV_STATUS_SUCCESS;
    VSP(Handle_t) h;
    VSP_CHECK(VSP(Create)(&h), "creating the vendor library handle");
    const VSP(Status_t) s = VSP(SetStream)(h, st->stream);
    if (s != VSP_E(STATUS_SUCCESS)) {
        (void)VSP(Destroy)(h);
        return vsp_fail(s, "binding the vendor library to the stream", msg, msglen);
    }
    st->vendor = (void *)h;
    return SPMV_STATUS_SUCCESS;
}

void vendor_close(gpu_state *st)
{
    if (st->vendor != NULL) (void)VSP(Destroy)(vsp_handle(st));
    st->vendor = NULL;
}

spmv_status_t vendor_set_stream(gpu_state *st, char *msg, size_t msglen)
{
    if (st->vendor != NULL) VSP_CHECK(VSP(SetStream)(vsp_handle(st), st->stream), "binding the vendor library to the stream");
    return SPMV_STATUS_SUCCESS;
}

void vendor_plan_destroy(vendor_plan *v)
{
    if (v->A != NULL) (void)VSP(DestroySpMat)(v->A);
    if (v->x != NULL) (void)VSP(DestroyDnVec)(v->x);
    if (v->y != NULL) (void)VSP(DestroyDnVec)(v->y);
    if (v->buffer != NULL && port_free(v->buffer) != port_success) (void)port_get_last_error();
    free(v);
}

spmv_status_t vendor_matrix(const gpu_plan *p, vendor_plan *v, char *msg, size_t msglen)
{
    const spmvport_format_data *fd = p->fd;
    VSP_CHECK(VSP(CreateCsr)(&v->A, fd->m, fd->n, fd->nnz, p->arrays[SPMVPORT_CSR_ROW_PTR],
                             p->arrays[SPMVPORT_CSR_COL_IDX], p->arrays[SPMVPORT_CSR_VALUES], VSP_E(INDEX_32I),
                             VSP_E(INDEX_32I), VSP_E(INDEX_BASE_ZERO), v->type),
              "creating the vendor CSR descriptor");
    return SPMV_STATUS_SUCCESS;
}

/* Size the buffer (first call) and preprocess, with x and y pointing at zeroed scratch vectors. */
spmv_status_t vendor_analyse(gpu_state *st, const gpu_plan *p, vendor_plan *v, bool size_buffer, char *msg,
                             size_t msglen)
{
    const spmvport_format_data *fd = p->fd;
    const size_t vsize = v->f32 ? sizeof(float) : sizeof(double);
    const size_t scratch_bytes = ((size_t)fd->m + (size_t)fd->n) * vsize;
    void *scratch = NULL;
    port_error_t e = port_malloc(&scratch, scratch_bytes);
    if (e != port_success) return runtime_fail(e, "allocating scratch vectors for the vendor analysis", msg, msglen);
    struct scratch_guard {
        void *p;
        ~scratch_guard()
        {
            if (port_free(p) != port_success) (void)port_get_last_error();
        }
    } guard{scratch};
    GPU_CHECK(port_memset_async(scratch, 0, scratch_bytes, st->stream), "clearing vendor scratch vectors");
    VSP_CHECK(VSP(DnVecSetValues)(v->x, scratch), "pointing the vendor x descriptor");
    VSP_CHECK(VSP(DnVecSetValues)(v->y, (char *)scratch + (size_t)fd->n * vsize), "pointing the vendor y descriptor");
    const float one_f = 1, zero_f = 0;
    const double one_d = 1, zero_d = 0;
    const void *one = v->f32 ? (const void *)&one_f : (const void *)&one_d;
    const void *zero = v->f32 ? (const void *)&zero_f : (const void *)&zero_d;
    const VSP(Handle_t) h = vsp_handle(st);
    if (size_buffer) {
        VSP_CHECK(VSP(SpMV_bufferSize)(h, VSP_E(OPERATION_NON_TRANSPOSE), one, v->A, v->x, zero, v->y, v->type,
                                       v->alg, &v->buffer_bytes),
                  "sizing the vendor SpMV buffer");
        if (v->buffer_bytes > 0) {
            e = port_malloc(&v->buffer, v->buffer_bytes);
            if (e != port_success) {
                v->buffer = NULL;
                return runtime_fail(e, "allocating the vendor SpMV buffer", msg, msglen);
            }
        }
    }
#if VSP_HAS_PREPROCESS
    const VSP(Status_t) s = VSP(SpMV_preprocess)(h, VSP_E(OPERATION_NON_TRANSPOSE), one, v->A, v->x, zero, v->y,
                                                 v->type, v->alg, v->buffer);
    if (s != VSP_E(STATUS_SUCCESS) && s != VSP_E(STATUS_NOT_SUPPORTED))
        return vsp_fail(s, "preprocessing the vendor SpMV", msg, msglen);
#endif
    /* the scratch goes away when we return: wait until the library is done with it */
    GPU_CHECK(port_stream_synchronize(st->stream), "waiting for the vendor analysis");
    return SPMV_STATUS_SUCCESS;
}

spmv_status_t vendor_plan_create(gpu_state *st, gpu_plan *p, size_t *bytes, char *msg, size_t msglen)
{
    const spmvport_format_data *fd = p->fd;
    *bytes = 0;
    if (fd->m == 0 || fd->n == 0 || fd->nnz == 0) return SPMV_STATUS_SUCCESS; /* y = beta*y: the scalar kernel */
    spmv_status_t s = vendor_handle(st, msg, msglen);
    if (s != SPMV_STATUS_SUCCESS) return s;
    vendor_plan *v = (vendor_plan *)calloc(1, sizeof *v);
    if (v == NULL) {
        say(msg, msglen, "out of host memory for a vendor plan");
        return SPMV_STATUS_OUT_OF_MEMORY;
    }
    v->f32 = fd->precision == SPMV_F32;
    v->type = v->f32 ? VSP_R_32F : VSP_R_64F;
    const int64_t alg = fd->params[SPMVPORT_P_VENDOR_ALG];
    v->alg = alg == 1 ? VSP_E(SPMV_CSR_ALG1) : alg == 2 ? VSP_E(SPMV_CSR_ALG2) : VSP_E(SPMV_ALG_DEFAULT);
    s = vendor_matrix(p, v, msg, msglen);
    if (s == SPMV_STATUS_SUCCESS) {
        /* placeholder pointers until the analysis and each execute set the real vectors */
        const VSP(Status_t) vs = VSP(CreateDnVec)(&v->x, fd->n, p->arrays[SPMVPORT_CSR_VALUES], v->type);
        if (vs != VSP_E(STATUS_SUCCESS)) s = vsp_fail(vs, "creating the vendor x descriptor", msg, msglen);
    }
    if (s == SPMV_STATUS_SUCCESS) {
        const VSP(Status_t) vs = VSP(CreateDnVec)(&v->y, fd->m, p->arrays[SPMVPORT_CSR_VALUES], v->type);
        if (vs != VSP_E(STATUS_SUCCESS)) s = vsp_fail(vs, "creating the vendor y descriptor", msg, msglen);
    }
    if (s == SPMV_STATUS_SUCCESS) s = vendor_analyse(st, p, v, true, msg, msglen);
    if (s != SPMV_STATUS_SUCCESS) {
        vendor_plan_destroy(v);
        return s;
    }
    p->vendor = v;
    *bytes = v->buffer_bytes;
    return SPMV_STATUS_SUCCESS;
}

/* New values: a fresh matrix descriptor and a fresh preprocessing into the same buffer, in case the library's
 * analysis looked at the values. */
spmv_status_t vendor_plan_update(gpu_state *st, gpu_plan *p, char *msg, size_t msglen)
{
    vendor_plan *v = p->vendor;
#if VSP_HAS_PREPROCESS
    if (v->A != NULL) (void)VSP(DestroySpMat)(v->A);
    v->A = NULL;
    spmv_status_t s = vendor_matrix(p, v, msg, msglen);
    if (s == SPMV_STATUS_SUCCESS) s = vendor_analyse(st, p, v, false, msg, msglen);
    return s;
#else
    (void)st; (void)v; (void)msg; (void)msglen;
    return SPMV_STATUS_SUCCESS;
#endif
}

spmv_status_t vendor_execute(gpu_state *st, const gpu_plan *p, double alpha, const void *x, double beta, void *y,
                             char *msg, size_t msglen)
{
    vendor_plan *v = p->vendor;
    const float af = (float)alpha, bf = (float)beta;
    const void *a = v->f32 ? (const void *)&af : (const void *)&alpha;
    const void *b = v->f32 ? (const void *)&bf : (const void *)&beta;
#if VSP_BETA0_READS_Y
    const size_t y_bytes = (size_t)p->fd->m * (v->f32 ? sizeof(float) : sizeof(double));
    if (beta == 0) GPU_CHECK(port_memset_async(y, 0, y_bytes, st->stream), "clearing y for beta = 0");
#endif
    VSP_CHECK(VSP(DnVecSetValues)(v->x, (void *)x), "pointing the vendor x descriptor");
    VSP_CHECK(VSP(DnVecSetValues)(v->y, y), "pointing the vendor y descriptor");
    VSP_CHECK(VSP(SpMV)(vsp_handle(st), VSP_E(OPERATION_NON_TRANSPOSE), a, v->A, v->x, b, v->y, v->type, v->alg,
                        v->buffer),
              "vendor SpMV");
    return SPMV_STATUS_SUCCESS;
}

} /* namespace */
