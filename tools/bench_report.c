/*
 * bench_report.c -- what spmvport-bench writes: the aligned table on stdout, the CSV, the JSON record.
 * Figures that could not be measured are NAN in bench_result and come out as empty CSV fields, JSON null and
 * "-" in the table.
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r, gethostname under -std=c99 */

#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#ifndef SPMVPORT_BENCH_BUILD_TYPE
#define SPMVPORT_BENCH_BUILD_TYPE "unknown"
#endif
#ifndef SPMVPORT_BENCH_GIT_REVISION
#define SPMVPORT_BENCH_GIT_REVISION "unknown"
#endif
#if defined(__clang__)
#define BENCH_COMPILER "clang " __VERSION__
#elif defined(__GNUC__)
#define BENCH_COMPILER "gcc " __VERSION__
#elif defined(__VERSION__)
#define BENCH_COMPILER __VERSION__
#else
#define BENCH_COMPILER "unknown"
#endif

static const char *precision_name(spmv_precision_t p) { return p == SPMV_F32 ? "f32" : "f64"; }

/* ==== the table on stdout ========================================================================================== */

static void table_number(FILE *out, int width, const char *fmt, double v)
{
    if (isnan(v)) fprintf(out, " %*s", width, "-");
    else fprintf(out, fmt, width, v);
}

void bench_table_header(FILE *out, const bench_env *env)
{
    fprintf(out, "# device: %s (%s backend)\n", env->info.name, spmv_backend_name(env->info.backend));
    if (isnan(env->ceiling_gbps)) fprintf(out, "# ceiling: read bandwidth not measured\n");
    else fprintf(out, "# ceiling: read bandwidth %.1f GB/s (measured once this run)\n", env->ceiling_gbps);
    fprintf(out, "# GB/s by the compulsory byte model: %s\n", bench_byte_model_text);
    fprintf(out, "# ms: median of %d+ timed launches after %d warm-up (min time %.3g s); x vendor = best of "
                 "vendor ALG1/ALG2 ms / ms\n", env->iters, env->warmup, env->min_time_s);
    fprintf(out, "%-28s %-22s %-4s %-12s %10s %9s %6s %8s %9s\n", "matrix", "format", "prec", "status", "ms", "GB/s",
            "%ceil", "x vendor", "build ms");
}

/* "auto(csr_lb)" for what AUTO chose, "vendor(alg2)" for the vendor ALG that ran, else the format's name;
 * a --variant's settings follow in brackets: "amf_csr[amf_fixed_fold=2]". */
static void format_label(const bench_result *r, char *buf, size_t len)
{
    const char *asked = spmv_format_name(r->format), *built = r->built_format;
    size_t asked_len = strlen(asked);
    if (strncmp(built, asked, asked_len) == 0 && built[asked_len] == '_') built += asked_len + 1;
    if (built[0] != '\0' && strcmp(built, asked) != 0) snprintf(buf, len, "%s(%s)", asked, built);
    else snprintf(buf, len, "%s", asked);
    size_t used = strlen(buf);
    if (r->variant[0] != '\0' && used < len) snprintf(buf + used, len - used, "[%s]", r->variant);
}

void bench_table_row(FILE *out, const bench_result *r)
{
    char label[192];
    format_label(r, label, sizeof label);
    size_t name_len = strlen(r->matrix);
    const char *name = name_len > 28 ? r->matrix + name_len - 28 : r->matrix; /* the end tells matrices apart */
    fprintf(out, "%-28s %-22s %-4s %-12s", name, label, precision_name(r->precision), r->status);
    table_number(out, 10, " %*.4g", r->ms);
    table_number(out, 9, " %*.1f", r->gbps);
    table_number(out, 6, " %*.1f", r->pct_ceiling);
    table_number(out, 8, " %*.3f", r->speedup_vs_vendor);
    table_number(out, 9, " %*.3g", r->build_ms);
    fputc('\n', out);
    fflush(out);
}

void bench_table_summary(FILE *out, const bench_result *results, int count)
{
    int ok = 0, unsupported = 0, failed = 0;
    for (int i = 0; i < count; i++) {
        if (strcmp(results[i].status, "ok") == 0) ok++;
        else if (strcmp(results[i].status, "unsupported") == 0) unsupported++;
        else failed++;
    }
    fprintf(out, "# %d results: %d ok, %d unsupported, %d failed (wrong or error)\n", count, ok, unsupported, failed);
    for (int i = 0; i < count; i++) {
        if (bench_result_passed(&results[i])) continue;
        char label[192];
        format_label(&results[i], label, sizeof label);
        fprintf(out, "# FAILED %s %s %s: %s: %s\n", results[i].matrix, label, precision_name(results[i].precision),
                results[i].status, results[i].message);
    }
}

/* ==== CSV ============================================================================================================== */

/* The 18 fixed columns others parse; extra columns only ever go after them. */
static const char *const csv_columns =
    "matrix,rows,cols,nnz,backend,device,format,precision,status,max_err_ratio,ms,gflops,gbps,pct_ceiling,"
    "speedup_vs_vendor,build_ms,upload_ms,device_bytes";
static const char *const csv_extra_columns =
    "built_format,ms_vendor,ms_vendor_alg1,ms_vendor_alg2,break_even,bytes_per_nnz,model_bytes,l2_regime,launch_bound,ms_min,ms_p90,samples,"
    "err_beta0,err_beta,err_timed,deterministic,message,plan_options,variant";

static void csv_string(FILE *out, const char *s)
{
    if (strpbrk(s, ",\"\n\r") == NULL) { fputs(s, out); return; }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
    }
    fputc('"', out);
}

static void csv_number(FILE *out, const char *fmt, double v)
{
    fputc(',', out);
    if (!isnan(v)) fprintf(out, fmt, v);
}

static void csv_flag(FILE *out, int flag)
{
    fputc(',', out);
    if (flag >= 0) fprintf(out, "%d", flag);
}

void bench_csv_header(FILE *out)
{
    fprintf(out, "%s,%s\n", csv_columns, csv_extra_columns);
    fflush(out);
}

static void csv_break_even(FILE *out, double v)
{
    fputc(',', out);
    if (isinf(v)) fputs("never", out);
    else if (!isnan(v)) fprintf(out, "%.4g", v);
}

void bench_csv_row(FILE *out, const bench_result *r, const bench_env *env)
{
    csv_string(out, r->matrix);
    fprintf(out, ",%d,%d,%d,%s,", r->rows, r->cols, r->nnz, spmv_backend_name(env->info.backend));
    csv_string(out, env->info.name);
    fprintf(out, ",%s,%s,", spmv_format_name(r->format), precision_name(r->precision));
    csv_string(out, r->status);
    csv_number(out, "%.4g", r->max_err_ratio);
    csv_number(out, "%.6g", r->ms);
    csv_number(out, "%.5g", r->gflops);
    csv_number(out, "%.5g", r->gbps);
    csv_number(out, "%.4g", r->pct_ceiling);
    csv_number(out, "%.4g", r->speedup_vs_vendor);
    csv_number(out, "%.5g", r->build_ms);
    csv_number(out, "%.5g", r->upload_ms);
    csv_number(out, "%.0f", r->device_bytes);
    /* extra columns */
    fputc(',', out);
    csv_string(out, r->built_format);
    csv_number(out, "%.6g", r->ms_vendor);
    csv_number(out, "%.6g", r->ms_vendor_alg[0]);
    csv_number(out, "%.6g", r->ms_vendor_alg[1]);
    csv_break_even(out, r->break_even);
    csv_number(out, "%.4g", r->bytes_per_nnz);
    csv_number(out, "%.0f", r->model_bytes);
    fprintf(out, ",%s", r->l2_regime ? r->l2_regime : "");
    csv_flag(out, r->launch_bound);
    csv_number(out, "%.6g", r->ms_min);
    csv_number(out, "%.6g", r->ms_p90);
    csv_number(out, "%.0f", r->samples > 0 ? (double)r->samples : NAN);
    csv_number(out, "%.4g", r->err_beta0);
    csv_number(out, "%.4g", r->err_beta);
    csv_number(out, "%.4g", r->err_timed);
    csv_flag(out, r->deterministic);
    fputc(',', out);
    csv_string(out, r->message);
    fputc(',', out);
    csv_string(out, r->plan_options);
    fputc(',', out);
    csv_string(out, r->variant);
    fputc('\n', out);
    fflush(out); /* a long run that dies still leaves the rows measured so far */
}

/* ==== JSON ================================================================================================================ */

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c < 0x20) fprintf(out, "\\u%04x", c);
        else fputc(c, out);
    }
    fputc('"', out);
}

/* JSON has no NaN or infinity: both become null (the status says why). */
static void json_number(FILE *out, double v)
{
    if (isnan(v) || isinf(v)) fputs("null", out);
    else fprintf(out, "%.10g", v);
}

static void json_key_string(FILE *out, const char *indent, const char *key, const char *value, int comma)
{
    fprintf(out, "%s\"%s\": ", indent, key);
    json_string(out, value);
    fputs(comma ? ",\n" : "\n", out);
}

static void json_key_number(FILE *out, const char *indent, const char *key, double value, int comma)
{
    fprintf(out, "%s\"%s\": ", indent, key);
    json_number(out, value);
    fputs(comma ? ",\n" : "\n", out);
}

static void json_device(FILE *out, const bench_env *env)
{
    const spmv_device_info_t *d = &env->info;
    const char *in = "    ";
    fputs("  \"device\": {\n", out);
    json_key_string(out, in, "backend", spmv_backend_name(d->backend), 1);
    json_key_string(out, in, "name", d->name, 1);
    json_key_number(out, in, "warp_size", d->warp_size, 1);
    json_key_number(out, in, "multiprocessors", d->multiprocessors, 1);
    json_key_number(out, in, "l2_bytes", (double)d->l2_bytes, 1);
    json_key_number(out, in, "global_mem_bytes", (double)d->global_mem_bytes, 1);
    json_key_number(out, in, "shared_mem_per_block", (double)d->shared_mem_per_block, 1);
    json_key_number(out, in, "runtime_version", d->runtime_version, 1);
    json_key_number(out, in, "driver_version", d->driver_version, 1);
    json_key_number(out, in, "compute_capability", d->compute_capability, 1);
    json_key_number(out, in, "read_bandwidth_gbps", env->ceiling_gbps, 0);
    fputs("  },\n", out);
}

static void json_build(FILE *out)
{
    const char *in = "    ";
    char host[256] = "";
    if (gethostname(host, sizeof host) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    fputs("  \"build\": {\n", out);
    json_key_string(out, in, "library_version", spmv_version_string(), 1);
    json_key_string(out, in, "build_type", SPMVPORT_BENCH_BUILD_TYPE, 1);
    json_key_string(out, in, "git_revision_at_configure", SPMVPORT_BENCH_GIT_REVISION, 1);
    json_key_string(out, in, "compiler", BENCH_COMPILER, 1);
    json_key_string(out, in, "compiled", __DATE__ " " __TIME__, 1);
    json_key_string(out, in, "host", host, 0);
    fputs("  },\n", out);
}

static void json_run(FILE *out, const bench_env *env, const bench_options *opt, int argc, char **argv)
{
    char date[64] = "";
    time_t now = time(NULL);
    struct tm utc;
    if (gmtime_r(&now, &utc) != NULL) strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
    json_key_string(out, "  ", "date", date, 1);
    fputs("  \"command_line\": [", out);
    for (int i = 0; i < argc; i++) {
        if (i > 0) fputs(", ", out);
        json_string(out, argv[i]);
    }
    fputs("],\n", out);
    json_key_string(out, "  ", "byte_model", bench_byte_model_text, 1);
    fputs("  \"timing\": {", out);
    fprintf(out, "\"statistic\": \"median\", \"warmup\": %d, \"iters_per_batch\": %d, \"min_time_s\": %g, "
                 "\"seed\": %llu},\n", env->warmup, env->iters, env->min_time_s, (unsigned long long)opt->seed);
    fputs("  \"checks\": \"spmv_reference_check, correct when max_err_ratio <= 1: alpha=1 beta=0 on NaN-poisoned y; "
          "alpha=1.5 beta=-0.5 on random y; the result left by the timed launches\",\n", out);
}

static void json_result(FILE *out, const bench_result *r, const bench_env *env, int comma)
{
    const char *in = "      ";
    fputs("    {\n", out);
    json_key_string(out, in, "matrix", r->matrix, 1);
    json_key_string(out, in, "source", r->source, 1);
    json_key_number(out, in, "rows", r->rows, 1);
    json_key_number(out, in, "cols", r->cols, 1);
    json_key_number(out, in, "nnz", r->nnz, 1);
    json_key_string(out, in, "backend", spmv_backend_name(env->info.backend), 1);
    json_key_string(out, in, "format", spmv_format_name(r->format), 1);
    json_key_string(out, in, "built_format", r->built_format, 1);
    json_key_string(out, in, "precision", r->precision == SPMV_F32 ? "f32" : "f64", 1);
    json_key_string(out, in, "status", r->status, 1);
    json_key_string(out, in, "plan_options", r->plan_options, 1);
    json_key_string(out, in, "variant", r->variant, 1);
    json_key_string(out, in, "message", r->message, 1);
    json_key_number(out, in, "max_err_ratio", r->max_err_ratio, 1);
    json_key_number(out, in, "err_beta0", r->err_beta0, 1);
    json_key_number(out, in, "err_beta", r->err_beta, 1);
    json_key_number(out, in, "err_timed", r->err_timed, 1);
    json_key_number(out, in, "ms", r->ms, 1);
    json_key_number(out, in, "ms_min", r->ms_min, 1);
    json_key_number(out, in, "ms_p90", r->ms_p90, 1);
    json_key_number(out, in, "samples", r->samples, 1);
    json_key_number(out, in, "gflops", r->gflops, 1);
    json_key_number(out, in, "gbps", r->gbps, 1);
    json_key_number(out, in, "pct_ceiling", r->pct_ceiling, 1);
    json_key_number(out, in, "speedup_vs_vendor", r->speedup_vs_vendor, 1);
    json_key_number(out, in, "ms_vendor", r->ms_vendor, 1);
    json_key_number(out, in, "ms_vendor_alg1", r->ms_vendor_alg[0], 1);
    json_key_number(out, in, "ms_vendor_alg2", r->ms_vendor_alg[1], 1);
    if (isinf(r->break_even)) json_key_string(out, in, "break_even", "never", 1);
    else json_key_number(out, in, "break_even", r->break_even, 1);
    json_key_number(out, in, "build_ms", r->build_ms, 1);
    json_key_number(out, in, "upload_ms", r->upload_ms, 1);
    json_key_number(out, in, "device_bytes", r->device_bytes, 1);
    json_key_number(out, in, "bytes_per_nnz", r->bytes_per_nnz, 1);
    json_key_number(out, in, "model_bytes", r->model_bytes, 1);
    json_key_string(out, in, "l2_regime", r->l2_regime ? r->l2_regime : "", 1);
    json_key_number(out, in, "launch_bound", r->launch_bound < 0 ? NAN : (double)r->launch_bound, 1);
    json_key_number(out, in, "deterministic", r->deterministic < 0 ? NAN : (double)r->deterministic, 1);
    json_key_string(out, in, "stats", r->stats, 0);
    fputs(comma ? "    },\n" : "    }\n", out);
}

int bench_json_write(const char *path, const bench_env *env, const bench_options *opt, int argc, char **argv,
                     const bench_result *results, int count)
{
    FILE *out = fopen(path, "w");
    if (out == NULL) return -1;
    fputs("{\n  \"tool\": \"spmvport-bench\",\n", out);
    json_build(out);
    json_device(out, env);
    json_run(out, env, opt, argc, argv);
    fputs("  \"results\": [\n", out);
    for (int i = 0; i < count; i++) json_result(out, &results[i], env, i + 1 < count);
    fputs("  ]\n}\n", out);
    return fclose(out) == 0 ? 0 : -1;
}
