/*
 * spmvport-bench -- the command-line benchmark of libspmvport.
 *
 *   spmvport-bench [options] [MATRIX ...]
 *
 * For every matrix x format x precision: build the plan, check it against the library's oracle, time it (median
 * of event-timed launches after warm-up), and report GFLOPS, GB/s by the compulsory byte model, % of the read
 * bandwidth measured in the same run, and speedup against the best of vendor ALG1/ALG2 measured in the same
 * process on the same matrix and vectors. How speed is measured: docs/benchmarking.md (shared docs); how to use
 * this tool and what each column means: docs/benchmark.md.
 *
 * Exit status: 0 when every result that ran is correct (unsupported is not a failure), 1 when a result is wrong
 * or a call failed, 2 for a bad command line.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r, clock_gettime, opendir under -std=c99 */

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#if defined(__GNUC__)
#define BENCH_PRINTF(fmt, first) __attribute__((format(printf, fmt, first)))
#else
#define BENCH_PRINTF(fmt, first)
#endif

#define EXIT_FAILED 1
#define EXIT_USAGE 2

/* ==== the embedded matrix sets ========================================================================================= */

/* FEM, stencil, graph, circuit, uniform. CPU: a few seconds in all. GPU: about a minute with every format. */
static const char *const default_set_cpu[] = {"gen:fem3d:3:12", "gen:stencil3d:7:40", "gen:kron:14:16",
                                              "gen:circuit:100000", "gen:uniform:50000:16"};
static const char *const default_set_gpu[] = {"gen:fem3d:3:30", "gen:stencil3d:7:120", "gen:kron:18:16",
                                              "gen:circuit:2000000", "gen:uniform:1000000:16"};
/* 26M..32M non-zeros: the data is 3.5x..7x a 60 MB L2 (f32..f64), so these measure memory, not cache. */
static const char *const large_set[] = {"gen:stencil3d:7:160", "gen:fem3d:3:48", "gen:kron:20:16",
                                        "gen:uniform:2000000:16", "gen:circuit:5000000"};
#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ==== usage ============================================================================================================= */

static void usage(FILE *out)
{
    fprintf(out,
        "usage: spmvport-bench [options] [MATRIX ...]\n"
        "\n"
        "MATRIX is a Matrix Market file (.mtx or .mtx.gz) or a generator spec gen:KIND:PARAMS, e.g.\n"
        "  gen:stencil3d:7:160  gen:fem3d:3:46  gen:kron:20:16  gen:uniform:2000000:16  gen:circuit:1000000\n"
        "(see spmv_matrix_generate in spmvport.h). No MATRIX and no --suite: the embedded default set.\n"
        "\n"
        "options:\n"
        "  --backend auto|cpu|cuda|hip   backend (default auto: a GPU when one works, else the CPU)\n"
        "  --device N                    device index (default 0)\n"
        "  --format all|NAME[,NAME...]   formats: csr_scalar csr_vector csr_lb vendor tile hbp amf_csr teb ehyb\n"
        "                                auto (default all)\n"
        "  --precision f64|f32|both      (default f64)\n"
        "  --suite default|large|shared DIR\n"
        "                                default: the embedded set sized for the backend; large: 26M..32M nnz\n"
        "                                generated matrices; shared DIR: every .mtx/.mtx.gz in DIR\n"
        "  --csv FILE                    one row per matrix x format x precision (columns: docs/benchmark.md)\n"
        "  --json FILE                   device, versions, build, date, options and every result\n"
        "  --iters N                     timed launches per batch (default 100 on GPU, 10 on CPU)\n"
        "  --warmup N                    untimed launches first (default 20 on GPU, 2 on CPU)\n"
        "  --plan-option KEY=VALUE       set a field of spmv_plan_options_t for every format but the vendor\n"
        "                                baseline (repeatable), e.g. nnz_per_warp=512, amf_fixed_fold=4, hbp_combine=2\n"
        "  --variant FORMAT:KEY=VALUE[,KEY=VALUE...]\n"
        "                                one more plan of FORMAT with these settings (on top of --plan-option),\n"
        "                                measured after the --format list on the same matrix and vectors\n"
        "                                (repeatable, at most 16), e.g. --variant amf_csr:amf_fixed_fold=2\n"
        "  --min-time SEC                keep timing until SEC were timed (default 0.1 on GPU, 0 on CPU)\n"
        "  --seed N                      seed of the generators and of x and y (default 42)\n"
        "  --list-formats                print the formats this build has on the backend, one a line\n"
        "  -q, --quiet                   no progress lines on stderr\n"
        "  -h, --help                    this text\n"
        "\n"
        "Every result is checked against the library's oracle (max_err_ratio <= 1 is correct). Exit status:\n"
        "0 when every result that ran is correct, 1 when one is wrong or failed, 2 for a bad command line.\n");
}

/* ==== option parsing ======================================================================================================= */

static int fail_usage(const char *fmt, ...) BENCH_PRINTF(1, 2);

/* A bad command line: say what is wrong, where the options are listed, and return -1. */
static int fail_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "spmvport-bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(spmvport-bench --help lists the options)\n");
    va_end(ap);
    return -1;
}

static int add_matrix(bench_options *opt, const char *spec)
{
    char **grown = realloc(opt->matrices, (size_t)(opt->nmatrices + 1) * sizeof *grown);
    if (grown == NULL) return fail_usage("out of memory");
    opt->matrices = grown;
    opt->matrices[opt->nmatrices] = strdup(spec);
    if (opt->matrices[opt->nmatrices] == NULL) return fail_usage("out of memory");
    opt->nmatrices++;
    return 0;
}

static void free_options(bench_options *opt)
{
    for (int i = 0; i < opt->nmatrices; i++) free(opt->matrices[i]);
    free(opt->matrices);
    opt->matrices = NULL;
    opt->nmatrices = 0;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_backend(bench_options *opt, const char *s)
{
    static const spmv_backend_t all[] = {SPMV_BACKEND_AUTO, SPMV_BACKEND_CPU, SPMV_BACKEND_CUDA, SPMV_BACKEND_HIP};
    for (int i = 0; i < COUNT_OF(all); i++)
        if (strcmp(s, spmv_backend_name(all[i])) == 0) { opt->backend = all[i]; return 0; }
    return fail_usage("unknown backend '%s' (auto, cpu, cuda or hip)", s);
}

static void add_format(bench_options *opt, spmv_format_t f)
{
    for (int i = 0; i < opt->nformats; i++)
        if (opt->formats[i] == f) return;
    opt->formats[opt->nformats++] = f;
}

/* "all" is every format of the enum, AUTO last. */
static int parse_formats(bench_options *opt, const char *s)
{
    opt->nformats = 0;
    if (strcmp(s, "all") == 0) {
        for (int f = 1; f < SPMV_FORMAT_COUNT; f++) add_format(opt, (spmv_format_t)f);
        add_format(opt, SPMV_FORMAT_AUTO);
        return 0;
    }
    char *copy = strdup(s);
    if (copy == NULL) return fail_usage("out of memory");
    int rc = 0;
    for (char *save = NULL, *name = strtok_r(copy, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save)) {
        spmv_format_t f;
        if (spmv_format_from_name(name, &f) != SPMV_STATUS_SUCCESS) {
            rc = fail_usage("unknown format '%s' (spmvport-bench --list-formats shows this build's)", name);
            break;
        }
        add_format(opt, f);
    }
    free(copy);
    if (rc == 0 && opt->nformats == 0) rc = fail_usage("--format '%s' names no format", s);
    return rc;
}

static int parse_precision(bench_options *opt, const char *s)
{
    opt->nprecisions = 0;
    if (strcmp(s, "f64") == 0 || strcmp(s, "both") == 0) opt->precisions[opt->nprecisions++] = SPMV_F64;
    if (strcmp(s, "f32") == 0 || strcmp(s, "both") == 0) opt->precisions[opt->nprecisions++] = SPMV_F32;
    return opt->nprecisions > 0 ? 0 : fail_usage("unknown precision '%s' (f64, f32 or both)", s);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every .mtx and .mtx.gz of dir, sorted by name so runs compare row by row. */
static int add_shared_dir(bench_options *opt, const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) return fail_usage("cannot open the --suite shared directory '%s'", dir);
    int first = opt->nmatrices, rc = 0;
    for (struct dirent *e = readdir(d); e != NULL && rc == 0; e = readdir(d)) {
        if (!has_suffix(e->d_name, ".mtx") && !has_suffix(e->d_name, ".mtx.gz")) continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = malloc(len);
        if (path == NULL) { rc = fail_usage("out of memory"); break; }
        snprintf(path, len, "%s/%s", dir, e->d_name);
        rc = add_matrix(opt, path);
        free(path);
    }
    closedir(d);
    if (rc == 0 && opt->nmatrices == first) return fail_usage("no .mtx or .mtx.gz file in '%s'", dir);
    qsort(opt->matrices + first, (size_t)(opt->nmatrices - first), sizeof *opt->matrices, compare_strings);
    return rc;
}

/* --suite NAME [DIR]; returns the number of extra arguments it took, or -1. */
static int parse_suite(bench_options *opt, const char *name, const char *dir)
{
    if (strcmp(name, "default") == 0) { opt->use_default_set = 1; return 0; }
    if (strcmp(name, "large") == 0) {
        for (int i = 0; i < COUNT_OF(large_set); i++)
            if (add_matrix(opt, large_set[i]) != 0) return -1;
        return 0;
    }
    if (strcmp(name, "shared") == 0) {
        if (dir == NULL) return fail_usage("--suite shared needs a directory");
        return add_shared_dir(opt, dir) == 0 ? 1 : -1;
    }
    return fail_usage("unknown suite '%s' (default, large or shared DIR)", name);
}

/* A file must be readable now: a typo should fail before minutes of measuring, not after. */
static int parse_matrix(bench_options *opt, const char *arg)
{
    if (strncmp(arg, "gen:", 4) == 0) {
        if (arg[4] == '\0') return fail_usage("generator spec '%s' names no generator (gen:KIND:PARAMS)", arg);
        return add_matrix(opt, arg);
    }
    FILE *f = fopen(arg, "rb");
    if (f == NULL) {
        fprintf(stderr, "spmvport-bench: cannot open matrix file '%s': %s\n", arg, strerror(errno));
        return -1;
    }
    fclose(f);
    return add_matrix(opt, arg);
}

static void default_options(bench_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->backend = SPMV_BACKEND_AUTO;
    parse_formats(opt, "all");
    opt->precisions[0] = SPMV_F64;
    opt->nprecisions = 1;
    opt->iters = opt->warmup = -1;
    opt->min_time_s = -1;
    opt->seed = 42;
}

/* One field of spmv_plan_options_t by its name: "KEY=VALUE" set in *o and appended to text (';'-separated).
 * `what` names the command-line argument in messages (--plan-option or --variant). */
static int set_plan_option(spmv_plan_options_t *o, char *text, size_t text_len, const char *kv, const char *what)
{
    static const struct { const char *key; size_t offset; } fields[] = {
#define FIELD(f) {#f, offsetof(spmv_plan_options_t, f)}
        FIELD(warp_size), FIELD(lanes_per_row), FIELD(nnz_per_warp), FIELD(tile_variant), FIELD(tile_deferred_coo),
        FIELD(tile_deferred_threshold), FIELD(tile_balance), FIELD(tile_inflight), FIELD(tile_band_batch),
        FIELD(tile_band_tasks), FIELD(tile_csr_steps), FIELD(tile_group_tasks), FIELD(tile_deferred_inline), FIELD(tile_csr_shuffle),
        FIELD(tile_dense_percent), FIELD(tile_coo_max), FIELD(tile_ell_cv_percent), FIELD(tile_block_tasks),
        FIELD(hbp_block_rows), FIELD(hbp_block_cols),
        FIELD(hbp_combine), FIELD(hbp_grouping), FIELD(hbp_steps), FIELD(hbp_prefetch), FIELD(hbp_tails),
        FIELD(hbp_ctas), FIELD(hbp_hot), FIELD(hbp_unit_trips), FIELD(hbp_order), FIELD(hbp_task_blocks), FIELD(amf_fixed_fold), FIELD(amf_lanes), FIELD(amf_waves),
        FIELD(amf_min_blocks), FIELD(amf_values), FIELD(amf_resident), FIELD(amf_uniform), FIELD(amf_one_step), FIELD(amf_window_cache), FIELD(amf_step_window), FIELD(amf_regular), FIELD(amf_vector), FIELD(lb_hot), FIELD(hbp_hot_copy), FIELD(hbp_y_stage),
        FIELD(teb_blocks), FIELD(ehyb_plan_ordering), FIELD(ehyb_seed), FIELD(ehyb_batch), FIELD(ehyb_parts),
        FIELD(ehyb_halo), FIELD(ehyb_split), FIELD(auto_tune),
#undef FIELD
    };
    const char *eq = strchr(kv, '=');
    long value;
    if (eq == NULL || parse_int(eq + 1, -1000000000, 1000000000, &value) != 0)
        return fail_usage("%s: '%s': expected KEY=INTEGER", what, kv);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (strlen(fields[i].key) != (size_t)(eq - kv) || strncmp(fields[i].key, kv, (size_t)(eq - kv)) != 0)
            continue;
        *(int *)((char *)o + fields[i].offset) = (int)value;
        size_t used = strlen(text);
        if (used + strlen(kv) + 2 > text_len) return fail_usage("%s: '%s': too many settings", what, kv);
        snprintf(text + used, text_len - used, "%s%s", used ? ";" : "", kv);
        return 0;
    }
    return fail_usage("%s: '%s': unknown key (see spmv_plan_options_t in spmvport.h)", what, kv);
}

/* --plan-option KEY=VALUE (repeatable): for every format but the vendor baseline, variants included. */
static int parse_plan_option(bench_options *opt, const char *text)
{
    char what[300];
    snprintf(what, sizeof what, "--plan-option '%s'", text);
    return set_plan_option(&opt->plan_options, opt->plan_options_text, sizeof opt->plan_options_text, text, what);
}

/* --variant FORMAT:KEY=VALUE[,KEY=VALUE...]: checked now, its options resolved by finish_variants once every
 * --plan-option is known. */
static int parse_variant(bench_options *opt, const char *text)
{
    char what[300], name[64];
    snprintf(what, sizeof what, "--variant '%s'", text);
    const char *colon = strchr(text, ':');
    if (colon == NULL || colon[1] == '\0' || (size_t)(colon - text) >= sizeof name)
        return fail_usage("%s: expected FORMAT:KEY=VALUE[,KEY=VALUE...]", what);
    if (opt->nvariants == BENCH_MAX_VARIANTS) return fail_usage("%s: at most %d variants", what, BENCH_MAX_VARIANTS);
    memcpy(name, text, (size_t)(colon - text));
    name[colon - text] = '\0';
    bench_variant *v = &opt->variants[opt->nvariants];
    memset(v, 0, sizeof *v);
    if (spmv_format_from_name(name, &v->format) != SPMV_STATUS_SUCCESS)
        return fail_usage("%s: unknown format '%s' (spmvport-bench --list-formats shows this build's)", what, name);
    if (v->format == SPMV_FORMAT_VENDOR) return fail_usage("%s: the vendor baseline takes no plan options", what);
    char *keys = strdup(colon + 1);
    if (keys == NULL) return fail_usage("out of memory");
    spmv_plan_options_t scratch; /* every key checked here, applied again in finish_variants */
    spmv_plan_options_init(&scratch);
    int rc = 0;
    for (char *save = NULL, *kv = strtok_r(keys, ",", &save); kv != NULL && rc == 0; kv = strtok_r(NULL, ",", &save))
        rc = set_plan_option(&scratch, v->keys, sizeof v->keys, kv, what);
    free(keys);
    if (rc == 0 && v->keys[0] == '\0') rc = fail_usage("%s: expected FORMAT:KEY=VALUE[,KEY=VALUE...]", what);
    if (rc == 0) opt->nvariants++;
    return rc;
}

/* Each variant's options: --plan-option's settings, then its own keys (the later setting wins). */
static int finish_variants(bench_options *opt)
{
    for (int i = 0; i < opt->nvariants; i++) {
        bench_variant *v = &opt->variants[i];
        v->plan_options = opt->plan_options;
        snprintf(v->plan_options_text, sizeof v->plan_options_text, "%s", opt->plan_options_text);
        char keys[sizeof v->keys];
        snprintf(keys, sizeof keys, "%s", v->keys);
        for (char *save = NULL, *kv = strtok_r(keys, ";", &save); kv != NULL; kv = strtok_r(NULL, ";", &save))
            if (set_plan_option(&v->plan_options, v->plan_options_text, sizeof v->plan_options_text, kv,
                                "--variant") != 0)
                return -1;
    }
    return 0;
}

/* The value of an option: "--opt=value" or "--opt value". NULL (after a message) when it is missing. */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
    size_t len = strlen(name);
    if (argv[*i][len] == '=') return argv[*i] + len + 1;
    if (*i + 1 >= argc) {
        fail_usage("option %s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

static int is_option(const char *arg, const char *name)
{
    size_t len = strlen(name);
    return strncmp(arg, name, len) == 0 && (arg[len] == '\0' || arg[len] == '=');
}

/* One option with a value; returns 0, or -1 after a message. */
static int parse_valued_option(bench_options *opt, const char *name, const char *value)
{
    long n;
    if (strcmp(name, "--backend") == 0) return parse_backend(opt, value);
    if (strcmp(name, "--format") == 0) return parse_formats(opt, value);
    if (strcmp(name, "--precision") == 0) return parse_precision(opt, value);
    if (strcmp(name, "--csv") == 0) { opt->csv_path = value; return 0; }
    if (strcmp(name, "--json") == 0) { opt->json_path = value; return 0; }
    if (strcmp(name, "--device") == 0) {
        if (parse_int(value, 0, 1 << 20, &n) != 0) return fail_usage("--device '%s': expected an index >= 0", value);
        opt->device = (int)n;
        return 0;
    }
    if (strcmp(name, "--iters") == 0) {
        if (parse_int(value, 1, 10000000, &n) != 0) return fail_usage("--iters '%s': expected an integer >= 1", value);
        opt->iters = (int)n;
        return 0;
    }
    if (strcmp(name, "--warmup") == 0) {
        if (parse_int(value, 0, 10000000, &n) != 0) return fail_usage("--warmup '%s': expected an integer >= 0", value);
        opt->warmup = (int)n;
        return 0;
    }
    if (strcmp(name, "--min-time") == 0) {
        char *end;
        double t = strtod(value, &end);
        if (end == value || *end != '\0' || !(t >= 0) || t > 3600)
            return fail_usage("--min-time '%s': expected seconds in [0, 3600]", value);
        opt->min_time_s = t;
        return 0;
    }
    if (strcmp(name, "--plan-option") == 0) return parse_plan_option(opt, value);
    if (strcmp(name, "--variant") == 0) return parse_variant(opt, value);
    if (strcmp(name, "--seed") == 0) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(value, &end, 0);
        if (errno != 0 || end == value || *end != '\0' || value[0] == '-')
            return fail_usage("--seed '%s': expected an unsigned integer", value);
        opt->seed = (uint64_t)s;
        return 0;
    }
    return fail_usage("unknown option '%s'", name);
}

/* Returns 0 to run, 1 after --help, -1 after a message about a bad command line. */
static int parse_options(bench_options *opt, int argc, char **argv)
{
    static const char *const valued[] = {"--backend", "--format", "--precision", "--csv", "--json", "--device",
                                         "--iters", "--warmup", "--min-time", "--seed", "--plan-option",
                                         "--variant"};
    int only_matrices = 0, suite_named = 0;
    default_options(opt);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int handled = 0;
        if (only_matrices || arg[0] != '-' || arg[1] == '\0') {
            if (parse_matrix(opt, arg) != 0) return -1;
            continue;
        }
        if (strcmp(arg, "--") == 0) { only_matrices = 1; continue; }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) { usage(stdout); return 1; }
        if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) { opt->quiet = 1; continue; }
        if (strcmp(arg, "--list-formats") == 0) { opt->list_formats = 1; continue; }
        if (is_option(arg, "--suite")) {
            const char *name = option_value(argc, argv, &i, "--suite");
            if (name == NULL) return -1;
            int took = parse_suite(opt, name, i + 1 < argc ? argv[i + 1] : NULL);
            if (took < 0) return -1;
            i += took;
            suite_named = 1;
            continue;
        }
        for (int k = 0; k < COUNT_OF(valued) && !handled; k++) {
            if (!is_option(arg, valued[k])) continue;
            const char *value = option_value(argc, argv, &i, valued[k]);
            if (value == NULL || parse_valued_option(opt, valued[k], value) != 0) return -1;
            handled = 1;
        }
        if (!handled) return fail_usage("unknown option '%s'", arg);
    }
    if (opt->nmatrices == 0 && !suite_named) opt->use_default_set = 1;
    return finish_variants(opt);
}

/* ==== the run ========================================================================================================== */

typedef struct bench_run {
    bench_env env;
    const bench_options *opt;
    FILE *csv;
    bench_result *results;
    int nresults, capacity;
    int failures;  /* wrong results and errors, including a failed vendor baseline */
} bench_run;

static void progress(const bench_run *run, const char *fmt, ...) BENCH_PRINTF(2, 3);

/* A progress line on stderr (stdout keeps the table), unless --quiet. */
static void progress(const bench_run *run, const char *fmt, ...)
{
    if (run->env.quiet) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[spmvport-bench] ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Keep a result for the JSON record, which is written at the end. */
static int keep_result(bench_run *run, const bench_result *r)
{
    if (run->nresults == run->capacity) {
        int cap = run->capacity ? 2 * run->capacity : 64;
        bench_result *grown = realloc(run->results, (size_t)cap * sizeof *grown);
        if (grown == NULL) return -1;
        run->results = grown;
        run->capacity = cap;
    }
    run->results[run->nresults++] = *r;
    return 0;
}

/* Report one result everywhere: stderr when it failed, the table, the CSV, the JSON record. */
static void emit_result(bench_run *run, const bench_result *r)
{
    if (!bench_result_passed(r)) {
        run->failures++;
        fprintf(stderr, "spmvport-bench: %s %s%s%s%s %s: %s: %s\n", r->matrix, spmv_format_name(r->format),
                r->variant[0] ? " [" : "", r->variant, r->variant[0] ? "]" : "", r->precision == SPMV_F32 ? "f32" : "f64",
                r->status, r->message);
    }
    bench_table_row(stdout, r);
    if (run->csv != NULL) bench_csv_row(run->csv, r, &run->env);
    if (keep_result(run, r) != 0) {
        run->failures++;
        fprintf(stderr, "spmvport-bench: out of host memory: the summary and --json miss %s %s\n", r->matrix,
                spmv_format_name(r->format));
    }
}

/* The name shown for a matrix: the spec, or the file's base name without .mtx / .mtx.gz. */
static void matrix_name(const char *source, char *name, size_t len)
{
    if (strncmp(source, "gen:", 4) == 0) { snprintf(name, len, "%s", source); return; }
    const char *base = strrchr(source, '/');
    snprintf(name, len, "%s", base ? base + 1 : source);
    if (has_suffix(name, ".gz")) name[strlen(name) - 3] = '\0';
    if (has_suffix(name, ".mtx")) name[strlen(name) - 4] = '\0';
}

/* ---- vendor baseline ------------------------------------------------------------------------------------------------- */

/* Vendor ALG1 and ALG2 on the same matrix and vectors. The baseline is the faster correct one; a failure of either
 * is what the vendor row shows, so that it is not hidden behind the other. */
static void measure_vendor(bench_run *run, const spmv_matrix_t *A, const bench_vectors *v, const char *name,
                           const char *source, spmv_precision_t prec, bench_result *best, double alg_ms[2])
{
    bench_result alg[2];
    for (int a = 0; a < 2; a++) {
        spmv_plan_options_t po;
        spmv_plan_options_init(&po);
        po.vendor_alg = a + 1;
        bench_result_init(&alg[a], name, source, A, SPMV_FORMAT_VENDOR, prec);
        bench_measure(&run->env, A, v, SPMV_FORMAT_VENDOR, &po, &alg[a]);
        if (strcmp(alg[a].status, "unsupported") != 0) /* which ALG ran (or failed) */
            snprintf(alg[a].built_format, sizeof alg[a].built_format, "vendor_alg%d", a + 1);
        alg_ms[a] = strcmp(alg[a].status, "ok") == 0 ? alg[a].ms : NAN;
    }
    int ok0 = strcmp(alg[0].status, "ok") == 0, ok1 = strcmp(alg[1].status, "ok") == 0;
    if (!bench_result_passed(&alg[0])) *best = alg[0];
    else if (!bench_result_passed(&alg[1])) *best = alg[1];
    else if (ok0 && ok1) *best = alg[1].ms < alg[0].ms ? alg[1] : alg[0];
    else *best = ok1 ? alg[1] : alg[0];
}

static int format_requested(const bench_options *opt, spmv_format_t f)
{
    for (int i = 0; i < opt->nformats; i++)
        if (opt->formats[i] == f) return 1;
    return 0;
}

/* ---- one matrix in one precision --------------------------------------------------------------------------------------- */

/* Rows for every requested format with one status, when the matrix or its vectors could not be made. */
static void emit_all_failed(bench_run *run, const char *name, const char *source, const spmv_matrix_t *A,
                            spmv_precision_t prec, spmv_status_t st, const char *message)
{
    for (int f = 0; f < run->opt->nformats + run->opt->nvariants; f++) {
        const bench_variant *var = f < run->opt->nformats ? NULL : &run->opt->variants[f - run->opt->nformats];
        bench_result r;
        bench_result_init(&r, name, source, A, var ? var->format : run->opt->formats[f], prec);
        if (var != NULL) snprintf(r.variant, sizeof r.variant, "%s", var->keys);
        bench_status_name(st, r.status, sizeof r.status);
        snprintf(r.message, sizeof r.message, "%s", message);
        emit_result(run, &r);
    }
}

/* The vendor figures and the derived ones, then the result is reported. */
static void finish_result(bench_run *run, bench_result *r, double vendor_ms, const double alg_ms[2])
{
    bench_derive(r, &run->env, vendor_ms);
    r->ms_vendor_alg[0] = alg_ms[0];
    r->ms_vendor_alg[1] = alg_ms[1];
    emit_result(run, r);
}

static void bench_matrix_precision(bench_run *run, const spmv_matrix_t *A, const char *name, const char *source,
                                   spmv_precision_t prec)
{
    const char *pname = prec == SPMV_F32 ? "f32" : "f64";
    bench_vectors v;
    spmv_status_t st = bench_vectors_create(&v, &run->env, A, run->opt->seed);
    if (st != SPMV_STATUS_SUCCESS) {
        emit_all_failed(run, name, source, A, prec, st, spmv_last_error(run->env.ctx));
        return;
    }
    if (run->env.info.backend != SPMV_BACKEND_CPU) progress(run, "%s %s: vendor baseline (ALG1, ALG2)", name, pname);
    bench_result vendor;
    double alg_ms[2];
    measure_vendor(run, A, &v, name, source, prec, &vendor, alg_ms);
    double vendor_ms = strcmp(vendor.status, "ok") == 0 ? vendor.ms : NAN;
    if (!bench_result_passed(&vendor) && !format_requested(run->opt, SPMV_FORMAT_VENDOR)) {
        run->failures++; /* not a row of its own, but a failure all the same */
        fprintf(stderr, "spmvport-bench: %s %s: vendor baseline %s: %s: %s\n", name, pname, vendor.built_format,
                vendor.status, vendor.message);
    }
    for (int f = 0; f < run->opt->nformats; f++) {
        spmv_format_t format = run->opt->formats[f];
        bench_result r;
        if (format == SPMV_FORMAT_VENDOR) {
            r = vendor;
        } else {
            progress(run, "%s %s: %s", name, pname, spmv_format_name(format));
            bench_result_init(&r, name, source, A, format, prec);
            bench_measure(&run->env, A, &v, format, &run->opt->plan_options, &r);
            snprintf(r.plan_options, sizeof r.plan_options, "%s", run->opt->plan_options_text);
        }
        finish_result(run, &r, vendor_ms, alg_ms);
    }
    for (int i = 0; i < run->opt->nvariants; i++) {
        const bench_variant *var = &run->opt->variants[i];
        bench_result r;
        progress(run, "%s %s: %s [%s]", name, pname, spmv_format_name(var->format), var->keys);
        bench_result_init(&r, name, source, A, var->format, prec);
        bench_measure(&run->env, A, &v, var->format, &var->plan_options, &r);
        snprintf(r.plan_options, sizeof r.plan_options, "%s", var->plan_options_text);
        snprintf(r.variant, sizeof r.variant, "%s", var->keys);
        finish_result(run, &r, vendor_ms, alg_ms);
    }
    bench_vectors_destroy(&v, &run->env);
}

/* ---- one matrix --------------------------------------------------------------------------------------------------------- */

static spmv_status_t load_matrix(bench_run *run, const char *source, spmv_matrix_t **A)
{
    progress(run, "%s %s", strncmp(source, "gen:", 4) == 0 ? "generating" : "reading", source);
    double t0 = now_s();
    spmv_status_t st = strncmp(source, "gen:", 4) == 0
                           ? spmv_matrix_generate(A, source + 4, SPMV_F64, run->opt->seed)
                           : spmv_matrix_read_mtx(A, source, SPMV_F64);
    if (st == SPMV_STATUS_SUCCESS && !run->env.quiet) {
        int32_t m, n, nnz;
        spmv_matrix_get_size(*A, &m, &n, &nnz, NULL);
        fprintf(stderr, "[spmvport-bench] %s: %d x %d, %d non-zeros, %.2f s\n", source, m, n, nnz, now_s() - t0);
    }
    return st;
}

static void bench_matrix(bench_run *run, const char *source)
{
    char name[256];
    matrix_name(source, name, sizeof name);
    spmv_matrix_t *A64 = NULL;
    spmv_status_t st = load_matrix(run, source, &A64);
    char message[512];
    if (st != SPMV_STATUS_SUCCESS) {
        snprintf(message, sizeof message, "%s", spmv_last_error(NULL));
        for (int p = 0; p < run->opt->nprecisions; p++)
            emit_all_failed(run, name, source, NULL, run->opt->precisions[p], st, message);
        return;
    }
    for (int p = 0; p < run->opt->nprecisions; p++) {
        spmv_precision_t prec = run->opt->precisions[p];
        spmv_matrix_t *A = A64, *A32 = NULL;
        if (prec == SPMV_F32) {
            st = spmv_matrix_convert(&A32, A64, SPMV_F32);
            if (st != SPMV_STATUS_SUCCESS) {
                snprintf(message, sizeof message, "%s", spmv_last_error(NULL));
                emit_all_failed(run, name, source, A64, prec, st, message);
                continue;
            }
            A = A32;
        }
        bench_matrix_precision(run, A, name, source, prec);
        spmv_matrix_destroy(A32);
    }
    spmv_matrix_destroy(A64);
}

/* ==== setup ================================================================================================================ */

static void resolve_defaults(bench_env *env, const bench_options *opt)
{
    int gpu = env->info.backend != SPMV_BACKEND_CPU;
    env->warmup = opt->warmup >= 0 ? opt->warmup : (gpu ? 20 : 2);
    env->iters = opt->iters > 0 ? opt->iters : (gpu ? 100 : 10);
    env->min_time_s = opt->min_time_s >= 0 ? opt->min_time_s : (gpu ? 0.1 : 0.0);
    env->quiet = opt->quiet;
}

static int add_default_set(bench_options *opt, const spmv_device_info_t *info)
{
    int gpu = info->backend != SPMV_BACKEND_CPU;
    const char *const *set = gpu ? default_set_gpu : default_set_cpu;
    int count = gpu ? COUNT_OF(default_set_gpu) : COUNT_OF(default_set_cpu);
    for (int i = 0; i < count; i++)
        if (add_matrix(opt, set[i]) != 0) return -1;
    return 0;
}

/* The read bandwidth, once per run: the ceiling every % is relative to. */
static void measure_ceiling(bench_run *run)
{
    progress(run, "measuring the read bandwidth of %s", run->env.info.name);
    double gbps = NAN;
    int iters = run->env.info.backend == SPMV_BACKEND_CPU ? 3 : 10;
    if (spmv_context_read_bandwidth(run->env.ctx, 0, iters, &gbps) != SPMV_STATUS_SUCCESS) {
        fprintf(stderr, "spmvport-bench: read bandwidth not measured (%%ceil left empty): %s\n",
                spmv_last_error(run->env.ctx));
        gbps = NAN;
    }
    run->env.ceiling_gbps = gbps;
}

/* A 4x4 matrix is enough to ask each format whether this build and backend have it. */
static int list_formats(spmv_context_t *ctx)
{
    int32_t row_ptr[] = {0, 2, 3, 6, 7};
    int32_t col_idx[] = {0, 2, 1, 0, 2, 3, 3};
    double values[] = {1, 2, 3, 4, 5, 6, 7};
    spmv_matrix_t *A = NULL;
    if (spmv_matrix_create_csr(&A, 4, 4, 7, row_ptr, col_idx, values, SPMV_F64, 0, 0) != SPMV_STATUS_SUCCESS) {
        fprintf(stderr, "spmvport-bench: cannot create the probe matrix: %s\n", spmv_last_error(NULL));
        return EXIT_FAILED;
    }
    for (int i = 1; i <= SPMV_FORMAT_COUNT; i++) {
        spmv_format_t f = (spmv_format_t)(i % SPMV_FORMAT_COUNT); /* AUTO last */
        spmv_plan_t *plan = NULL;
        spmv_status_t st = spmv_plan_create(&plan, ctx, A, f, NULL);
        if (st != SPMV_STATUS_NOT_SUPPORTED) printf("%s\n", spmv_format_name(f));
        spmv_plan_destroy(plan);
    }
    spmv_matrix_destroy(A);
    return EXIT_SUCCESS;
}

static int open_context(bench_env *env, const bench_options *opt)
{
    memset(env, 0, sizeof *env);
    spmv_status_t st = spmv_context_create(&env->ctx, opt->backend, opt->device);
    if (st != SPMV_STATUS_SUCCESS) {
        fprintf(stderr, "spmvport-bench: no context on backend %s, device %d: %s: %s\n",
                spmv_backend_name(opt->backend), opt->device, spmv_status_string(st), spmv_last_error(NULL));
        return -1;
    }
    spmv_context_get_info(env->ctx, &env->info);
    return 0;
}

/* ==== main ================================================================================================================== */

static int run_benchmark(bench_run *run, bench_options *opt, int argc, char **argv)
{
    if (opt->csv_path != NULL) {
        run->csv = fopen(opt->csv_path, "w");
        if (run->csv == NULL) {
            fprintf(stderr, "spmvport-bench: cannot write --csv '%s': %s\n", opt->csv_path, strerror(errno));
            return EXIT_USAGE;
        }
        bench_csv_header(run->csv);
    }
    measure_ceiling(run);
    bench_table_header(stdout, &run->env);
    for (int i = 0; i < opt->nmatrices; i++) bench_matrix(run, opt->matrices[i]);
    bench_table_summary(stdout, run->results, run->nresults);
    int rc = run->failures > 0 ? EXIT_FAILED : EXIT_SUCCESS;
    if (run->csv != NULL && fclose(run->csv) != 0) {
        fprintf(stderr, "spmvport-bench: error writing --csv '%s'\n", opt->csv_path);
        rc = EXIT_FAILED;
    }
    run->csv = NULL;
    if (opt->json_path != NULL &&
        bench_json_write(opt->json_path, &run->env, opt, argc, argv, run->results, run->nresults) != 0) {
        fprintf(stderr, "spmvport-bench: cannot write --json '%s': %s\n", opt->json_path, strerror(errno));
        rc = EXIT_FAILED;
    }
    return rc;
}

int main(int argc, char **argv)
{
    bench_options opt;
    int parsed = parse_options(&opt, argc, argv);
    if (parsed != 0) {
        free_options(&opt);
        return parsed > 0 ? EXIT_SUCCESS : EXIT_USAGE;
    }
    bench_run run;
    memset(&run, 0, sizeof run);
    run.opt = &opt;
    if (open_context(&run.env, &opt) != 0) {
        free_options(&opt);
        return EXIT_FAILED;
    }
    int rc;
    if (opt.list_formats) {
        rc = list_formats(run.env.ctx);
    } else if (opt.use_default_set && add_default_set(&opt, &run.env.info) != 0) {
        rc = EXIT_FAILED;
    } else {
        resolve_defaults(&run.env, &opt);
        rc = run_benchmark(&run, &opt, argc, argv);
    }
    free(run.results);
    spmv_context_destroy(run.env.ctx);
    free_options(&opt);
    return rc;
}
