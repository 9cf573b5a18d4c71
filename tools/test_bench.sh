#!/usr/bin/env bash
# test_bench.sh -- CTest checks of spmvport-bench and plot_bench.py (registered in tools/CMakeLists.txt).
#
#   test_bench.sh csv     BENCH OUTDIR     CPU run, every format, both precisions: exit 0, exact header, statuses
#   test_bench.sh plot    PLOT_PY CSV OUTDIR   PNGs from that CSV (exit 77 = skip when no python3 has matplotlib)
#   test_bench.sh list    BENCH OUTDIR     --list-formats names csr_scalar
#   test_bench.sh badargs BENCH OUTDIR     bad command lines and inputs exit non-zero with a message
#   test_bench.sh variant BENCH OUTDIR     --variant: one more row per variant, its settings in two columns
set -u

fail() { echo "FAIL: $*" >&2; exit 1; }

# The 18 fixed columns, exactly; extra columns may follow.
readonly FIXED_HEADER="matrix,rows,cols,nnz,backend,device,format,precision,status,max_err_ratio,ms,gflops,gbps,pct_ceiling,speedup_vs_vendor,build_ms,upload_ms,device_bytes"
readonly TINY_MATRICES=(gen:stencil3d:7:10 gen:kron:9:8)

# ---- (i) the CSV of a CPU run ---------------------------------------------------------------------------------
check_csv() {
    local bench=$1 dir=$2
    mkdir -p "$dir" || fail "cannot create $dir"
    local csv=$dir/bench.csv json=$dir/bench.json
    rm -f "$csv" "$json"
    "$bench" --backend cpu --format all --precision both --iters 3 --warmup 1 --min-time 0 \
        --csv "$csv" --json "$json" "${TINY_MATRICES[@]}" > "$dir/bench.out" 2> "$dir/bench.err"
    local rc=$?
    cat "$dir/bench.out"
    [ "$rc" -eq 0 ] || { cat "$dir/bench.err" >&2; fail "spmvport-bench exited $rc"; }
    [ -s "$csv" ] || fail "no CSV written"
    [ -s "$json" ] || fail "no JSON written"

    local header
    header=$(head -n 1 "$csv")
    [ "$(printf '%s' "$header" | cut -d, -f1-18)" = "$FIXED_HEADER" ] ||
        fail "header's first 18 columns differ: got '$header'"

    # 2 matrices x 10 formats (auto included) x 2 precisions
    local rows
    rows=$(tail -n +2 "$csv" | wc -l)
    [ "$rows" -eq 40 ] || fail "expected 40 rows, got $rows"

    # fields 1..9 hold no comma here (generator specs, numbers, names), so a plain split is exact enough
    tail -n +2 "$csv" | awk -F, '
        $9 != "ok" && $9 != "unsupported" { print "row " NR ": status " $9 > "/dev/stderr"; bad = 1 }
        $5 != "cpu"                        { print "row " NR ": backend " $5 > "/dev/stderr"; bad = 1 }
        $15 != ""                          { print "row " NR ": speedup_vs_vendor on the CPU: " $15 > "/dev/stderr"; bad = 1 }
        $7 == "csr_scalar" && $9 != "ok"   { print "row " NR ": csr_scalar not ok" > "/dev/stderr"; bad = 1 }
        $9 == "ok" && ($11 == "" || $13 == "" || $10 == "") { print "row " NR ": ok without ms/gbps/err" > "/dev/stderr"; bad = 1 }
        $7 == "vendor" && $9 != "unsupported" { print "row " NR ": vendor on the CPU: " $9 > "/dev/stderr"; bad = 1 }
        END { exit bad }' || fail "bad rows in $csv"
    for prec in f64 f32; do
        grep -q ",csr_scalar,$prec,ok," "$csv" || fail "no ok csr_scalar row in $prec"
    done
    echo "PASS: header, $rows rows, statuses ok/unsupported, no vendor figures on the CPU"
}

# ---- (ii) the plots -----------------------------------------------------------------------------------------------
find_matplotlib_python() {
    local py
    for py in ${PYTHON:-} python3 /usr/bin/python3; do
        if command -v "$py" > /dev/null 2>&1 && "$py" -c 'import matplotlib' > /dev/null 2>&1; then
            echo "$py"
            return 0
        fi
    done
    return 1
}

check_plot() {
    local script=$1 csv=$2 dir=$3 py
    py=$(find_matplotlib_python) || { echo "[SKIP] no python3 with matplotlib (Debian: python3-matplotlib)"; exit 77; }
    [ -s "$csv" ] || fail "no CSV at $csv (bench_cpu_csv makes it)"
    rm -rf "$dir"
    "$py" "$script" "$csv" "$dir" || fail "plot_bench.py failed"
    local pngs
    pngs=$(find "$dir" -name '*.png' -size +0 | wc -l)
    [ "$pngs" -ge 1 ] || fail "no non-empty PNG in $dir"
    [ -s "$dir/gbps.png" ] || fail "figure (a) gbps.png missing"
    echo "PASS: $pngs PNGs in $dir"
}

# ---- (iii) --list-formats -------------------------------------------------------------------------------------------
check_list() {
    local bench=$1 out
    out=$("$bench" --backend cpu --list-formats) || fail "--list-formats exited non-zero"
    echo "$out"
    grep -qx csr_scalar <<< "$out" || fail "--list-formats does not list csr_scalar"
    echo "PASS: --list-formats"
}

# ---- (iv) bad arguments ---------------------------------------------------------------------------------------------
expect_failure() {
    local dir=$1; shift
    "$@" > "$dir/bad.out" 2> "$dir/bad.err"
    local rc=$?
    [ "$rc" -ne 0 ] || fail "exit 0 for: ${*:2}"
    [ "$rc" -lt 128 ] || fail "crashed (exit $rc) for: ${*:2}"
    [ -s "$dir/bad.err" ] || fail "no message on stderr for: ${*:2}"
    echo "ok (exit $rc): ${*:2} -> $(head -n 1 "$dir/bad.err")"
}

check_badargs() {
    local bench=$1 dir=$2
    mkdir -p "$dir" || fail "cannot create $dir"
    local small=gen:stencil3d:7:4
    expect_failure "$dir" "$bench" --backend cpu --format nosuchformat "$small"
    expect_failure "$dir" "$bench" --backend cpu "$dir/no-such-matrix.mtx"
    expect_failure "$dir" "$bench" --backend cpu --precision f16 "$small"
    expect_failure "$dir" "$bench" --backend cpu --iters 0 "$small"
    expect_failure "$dir" "$bench" --backend nosuchbackend "$small"
    expect_failure "$dir" "$bench" --backend cpu --no-such-option "$small"
    expect_failure "$dir" "$bench" --backend cpu --suite shared "$dir/no-such-directory"
    expect_failure "$dir" "$bench" --backend cpu --csv
    expect_failure "$dir" "$bench" --backend cpu --csv "$dir/no-such-directory/x.csv" "$small"
    expect_failure "$dir" "$bench" --backend cpu --variant amf_csr "$small"
    expect_failure "$dir" "$bench" --backend cpu --variant nosuchformat:amf_vector=1 "$small"
    expect_failure "$dir" "$bench" --backend cpu --variant amf_csr:no_such_key=1 "$small"
    expect_failure "$dir" "$bench" --backend cpu --variant vendor:vendor_alg=1 "$small"
    # a generator the library does not know: found at run time, reported as a failed row
    expect_failure "$dir" "$bench" --backend cpu --format csr_scalar gen:nosuchkind:5
    grep -q "nosuchkind" "$dir/bad.out" || fail "the failed generator has no row in the table"
    echo "PASS: bad arguments"
}

# ---- (v) --variant ------------------------------------------------------------------------------------------------
# Two variants of amf_csr beside the plain format, under a --plan-option given after them: per precision one row
# each, in order; plan_options holds both settings, variant only the variant's own.
check_variant() {
    local bench=$1 dir=$2
    mkdir -p "$dir" || fail "cannot create $dir"
    local csv=$dir/variant.csv
    rm -f "$csv"
    "$bench" --backend cpu --format csr_scalar,amf_csr --variant amf_csr:amf_vector=2 \
        --variant amf_csr:amf_fixed_fold=2,amf_vector=-1 --plan-option warp_size=64 --precision both --iters 2 \
        --warmup 1 --min-time 0 --quiet --csv "$csv" gen:stencil3d:7:10 > "$dir/variant.out" 2> "$dir/variant.err" ||
        { cat "$dir/variant.err" >&2; fail "spmvport-bench with --variant exited non-zero"; }
    cat "$dir/variant.out"
    head -n 1 "$csv" | grep -q ',plan_options,variant$' || fail "no plan_options,variant columns last"
    # the last two fields hold no comma (';'-separated settings)
    local got expected
    got=$(tail -n +2 "$csv" | awk -F, '{ print $7 "|" $8 "|" $9 "|" $(NF-1) "|" $NF }')
    expected="csr_scalar|f64|ok|warp_size=64|
amf_csr|f64|ok|warp_size=64|
amf_csr|f64|ok|warp_size=64;amf_vector=2|amf_vector=2
amf_csr|f64|ok|warp_size=64;amf_fixed_fold=2;amf_vector=-1|amf_fixed_fold=2;amf_vector=-1
csr_scalar|f32|ok|warp_size=64|
amf_csr|f32|ok|warp_size=64|
amf_csr|f32|ok|warp_size=64;amf_vector=2|amf_vector=2
amf_csr|f32|ok|warp_size=64;amf_fixed_fold=2;amf_vector=-1|amf_fixed_fold=2;amf_vector=-1"
    [ "$got" = "$expected" ] || fail "variant rows differ: got
$got"
    grep -q 'amf_csr\[amf_fixed_fold=2;amf_vector=-1\]' "$dir/variant.out" || fail "the table does not label the variant"
    echo "PASS: 8 rows, variants after the formats, settings recorded"
}

case "${1:-}" in
    csv) check_csv "$2" "$3" ;;
    plot) check_plot "$2" "$3" "$4" ;;
    list) check_list "$2" ;;
    badargs) check_badargs "$2" "$3" ;;
    variant) check_variant "$2" "$3" ;;
    *) echo "usage: $0 csv|plot|list|badargs|variant ..." >&2; exit 2 ;;
esac
