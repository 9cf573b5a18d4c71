/*
 * bench.h -- shared types of spmvport-bench: options, one measured result, the run environment.
 *
 * The tool is split in three files: spmvport-bench.c (options, matrix sets, the main loop), bench_measure.c
 * (one format on one matrix: plan, oracle checks, timing, derived figures) and bench_report.c (table, CSV,
 * JSON). Only the public API of libspmvport is used.
 */
#ifndef SPMVPORT_BENCH_H
#define SPMVPORT_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <spmvport.h>

/* ---- options ------------------------------------------------------------------------------------------------ */

#define BENCH_MAX_VARIANTS 16

/* --variant FORMAT:KEY=VALUE[,KEY=VALUE...]: one more plan of FORMAT, measured after the --format list on the same
 * matrix and vectors in the same process, so that settings compare without a second run's noise. */
typedef struct bench_variant {
    spmv_format_t format;
    char keys[128];                   /* as given after the colon, ';'-separated: the CSV "variant" column */
    spmv_plan_options_t plan_options; /* --plan-option's settings, then keys */
    char plan_options_text[256];      /* both, for the "plan_options" column */
} bench_variant;

typedef struct bench_options {
    spmv_backend_t backend;
    int device;
    spmv_format_t formats[SPMV_FORMAT_COUNT]; /* in the order they are measured */
    int nformats;
    spmv_precision_t precisions[2];
    int nprecisions;
    const char *csv_path;
    const char *json_path;
    int iters;         /* timed launches per batch; -1: the backend's default */
    int warmup;        /* untimed launches before timing; -1: the backend's default */
    double min_time_s; /* keep timing until this much was timed; -1: the backend's default */
    uint64_t seed;
    int list_formats;
    int quiet;
    char **matrices;   /* specs "gen:KIND:PARAMS" and paths, owned (strdup'd) */
    int nmatrices;
    int use_default_set; /* no MATRIX and no other suite, or --suite default: sized for the backend */
    spmv_plan_options_t plan_options; /* --plan-option KEY=VALUE, for every format but the vendor baseline */
    char plan_options_text[256];      /* the same as given, for the CSV/JSON "plan_options" column */
    bench_variant variants[BENCH_MAX_VARIANTS]; /* measured after the formats, in the order given */
    int nvariants;
} bench_options;

/* ---- one result: matrix x format x precision ------------------------------------------------------------------ */

typedef struct bench_result {
    char matrix[256];        /* the spec "gen:..." or the file's base name without .mtx / .mtx.gz */
    char source[1024];       /* the spec or the path as given */
    int32_t rows, cols, nnz;
    spmv_format_t format;    /* as requested */
    char built_format[32];   /* what was built: AUTO's choice, "vendor_alg1" / "vendor_alg2" */
    spmv_precision_t precision;
    char status[48];         /* ok, wrong, unsupported, or an error name */
    char message[512];       /* the library's message for errors and unsupported, else "" */
    char plan_options[256];  /* --plan-option settings this result was built with, "KEY=VALUE;...", or "" */
    char variant[128];       /* a --variant's own settings "KEY=VALUE;...", or "" for a --format entry */
    /* figures; NAN where not measurable (written as an empty field) */
    double max_err_ratio;    /* worst of the three checks below */
    double err_beta0, err_beta, err_timed;
    double ms, ms_min, ms_p90;
    int samples;
    double gflops, gbps, pct_ceiling, speedup_vs_vendor, ms_vendor;
    double ms_vendor_alg[2]; /* the vendor library's ALG1 and ALG2 on this matrix and precision (NAN: not ok) */
    double build_ms, upload_ms;
    double device_bytes, bytes_per_nnz, model_bytes;
    double break_even;       /* SpMVs of the vendor library; NAN: no vendor; INFINITY: never */
    const char *l2_regime;   /* in_l2, mixed, dram, unknown; NULL when not measured */
    int launch_bound;        /* -1 unknown (CPU), 0 or 1 */
    int deterministic;       /* -1 unknown, 0 or 1 */
    char stats[512];         /* the plan's format statistics */
} bench_result;

/* ---- the run environment --------------------------------------------------------------------------------------- */

typedef struct bench_env {
    spmv_context_t *ctx;
    spmv_device_info_t info;
    double ceiling_gbps;     /* read bandwidth measured once this run; NAN when it failed */
    int warmup, iters;       /* resolved defaults */
    double min_time_s;
    int quiet;
} bench_env;

/* Host and device vectors of one matrix in one precision: x random, y0 random (for the beta != 0 check),
 * ynan poisoned (for the beta = 0 check), yout the copy back. */
typedef struct bench_vectors {
    int32_t m, n;
    size_t value_size;
    void *x, *y0, *ynan, *yout; /* host */
    void *dx, *dy;              /* device, through the context */
} bench_vectors;

/* ---- bench_measure.c ------------------------------------------------------------------------------------------- */

/* Fill v for A (host vectors seeded from seed) and allocate the device copies of x and y. */
spmv_status_t bench_vectors_create(bench_vectors *v, const bench_env *env, const spmv_matrix_t *A, uint64_t seed);
void bench_vectors_destroy(bench_vectors *v, const bench_env *env);

/* The identity of a result (matrix, sizes, format, precision); every figure NAN. */
void bench_result_init(bench_result *r, const char *matrix, const char *source, const spmv_matrix_t *A,
                       spmv_format_t format, spmv_precision_t precision);

/* Build `format` (options may be NULL), check it three times against the oracle and time it. Fills status,
 * errors, times and the plan's info; derived figures are left for bench_derive. */
void bench_measure(const bench_env *env, const spmv_matrix_t *A, const bench_vectors *v, spmv_format_t format,
                   const spmv_plan_options_t *options, bench_result *r);

/* GFLOPS, GB/s by the byte model, % of the ceiling, speedup and break-even against vendor_ms (NAN: none), the
 * L2 regime. */
void bench_derive(bench_result *r, const bench_env *env, double vendor_ms);

/* The compulsory byte model of docs/benchmarking.md, beta = 0. */
double bench_model_bytes(int32_t m, int32_t n, int32_t nnz, spmv_precision_t precision);

/* "ok", "unsupported" or the status name lowercased without its prefix ("device_out_of_memory"). */
void bench_status_name(spmv_status_t st, char *buf, size_t len);

/* 1 when the result ran and is correct or did not run for a reason that is not a failure. */
int bench_result_passed(const bench_result *r);

/* ---- bench_report.c -------------------------------------------------------------------------------------------- */

void bench_table_header(FILE *out, const bench_env *env);
void bench_table_row(FILE *out, const bench_result *r);
void bench_table_summary(FILE *out, const bench_result *results, int count);

void bench_csv_header(FILE *out);
void bench_csv_row(FILE *out, const bench_result *r, const bench_env *env);

/* The whole run as JSON: environment, options, results. Returns 0 on success. */
int bench_json_write(const char *path, const bench_env *env, const bench_options *opt, int argc, char **argv,
                     const bench_result *results, int count);

extern const char *const bench_byte_model_text;

#endif /* SPMVPORT_BENCH_H */
