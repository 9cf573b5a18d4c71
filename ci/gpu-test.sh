#!/usr/bin/env bash
# gpu-test.sh -- the GPU test run of libspmvport, in two halves.
#
#   bash ci/gpu-test.sh prepare [BUILD_DIR]      on the development machine (no GPU needed)
#       Configures (if BUILD_DIR has no CMakeCache.txt; default /tmp/spmvport-build-device: CUDA on, HIP off,
#       sm_90) and builds, bundles the build with shared/tools/device-bundle into .device-bundle/ (dropping the
#       CUDA toolkit libraries the GPU machine has: cuSPARSE and nvJitLink alone are 250 MB, over the 64 MiB a
#       device run may carry), and copies the shared matrices into .device-matrices/. The checkout (its docs/data
#       included) and those two folders together pass 64 MiB, so both also go, xz-compressed, into .device-pack/
#       (about 24 MiB), the one folder a device call carries; 'run' unpacks it. Prints the device call.
#
#   bash ci/gpu-test.sh [run] [STAGE ...]        on the GPU machine, in the repository root
#       STAGEs: tests memcheck racecheck bench variants shared (default: the first four, in that order). Logs and a summary go to $OUT
#       (default /tmp/spmvport-gpu-test): summary.txt tests.log memcheck.log racecheck.log bench.log bench.csv.
#       tests      every test binary of the bundle, SPMVPORT_BACKEND_PATH at the bundled modules and
#                  SPMVPORT_MATRIX_DIR at the copied matrices
#       memcheck   compute-sanitizer --tool memcheck on the CUDA GPU tests (filters below), child processes too
#       racecheck  compute-sanitizer --tool racecheck on the GPU tests whose kernels use shared memory
#       bench      spmvport-bench --backend cuda --suite large --precision both, if the build has it
#       variants   the format variants the issues compare (f64), rows in variants.csv
#       shared     the four largest shared matrices, every format, both precisions, rows in shared.csv
#     Each stage runs under a time limit so that one device call (10 minutes) holds them all:
#       GPU_TEST_TIME_TESTS=200 GPU_TEST_TIME_MEMCHECK=140 GPU_TEST_TIME_RACECHECK=60 GPU_TEST_TIME_BENCH=170
#     GPU_TEST_BENCH_FORMATS: the bench stage's --format list (default every format but ehyb, whose METIS builds
#     of the large set take longer than the stage's limit; the shared stage runs it on four matrices).
#     GPU_TEST_BINARIES: the test binaries the tests stage runs (names; default all); GPU_TEST_GPU_FILTER: a
#     Criterion --filter for test_gpu_cuda there; GPU_TEST_VARIANTS: the variants stage's runs (see run_variants).
#     GPU_TEST_MEMCHECK_FILTERS / GPU_TEST_RACECHECK_FILTERS: space-separated Criterion --filter patterns
#     (extglob: gpu_cuda/@(csr_lb|vendor)_corpus_*); tests left out by a filter print "[SKIP] ... disabled".
#     SPMVPORT_TEST_HUGE=1 (exported) adds test_gpu_cuda's entries_up_to_int32_max to the tests stage: a matrix of
#     INT32_MAX entries, about 40 GB of host and 18 GB of device memory, 40 s on an H100 (give the stage the time).
#     Exit status 0 when every stage that ran passed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-run}
[ $# -gt 0 ] && shift

# ---- prepare (development machine) ------------------------------------------------------------------------------
if [ "$mode" = prepare ]; then
  set -e
  build=${1:-/tmp/spmvport-build-device}
  shared=${SPMVPORT_SHARED:-$root/../shared}
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSPMVPORT_CUDA=ON -DSPMVPORT_HIP=OFF \
          -DCMAKE_CUDA_ARCHITECTURES=90
  fi
  cmake --build "$build" -j"$(nproc)"
  (cd "$root" && "$shared/tools/device-bundle" "$build" .device-bundle)
  # The GPU machine's CUDA 13 provides these; carrying them would exceed the device run's 64 MiB. The HIP
  # module cannot run there: drop it and its libraries (rocSPARSE alone is hundreds of MB) if the build has it.
  (cd "$root/.device-bundle" && rm -f lib/libcusparse.so* lib/libnvJitLink.so* lib/libcublas*.so* lib/libcudart.so* \
     build/lib/libspmvport_hip.so lib/libhipsparse.so* lib/librocsparse.so* lib/libamd_comgr.so* lib/libhsa*.so* \
     lib/libamdhip64.so* lib/librocprofiler-register.so*)
  big=$(find "$root/.device-bundle" -type f -size +8M)
  [ -n "$big" ] && echo "gpu-test: warning: large files in the bundle (64 MiB per device run): $big"
  rm -rf "$root/.device-matrices"
  cp -r "$shared/matrices" "$root/.device-matrices"
  echo "gpu-test: bundle $(du -sh "$root/.device-bundle" | cut -f1), matrices $(du -sh "$root/.device-matrices" | cut -f1)"
  # the pack: the bundle as it is, the matrices as plain .mtx under xz (about half their gzip size)
  pack=$root/.device-pack
  rm -rf "$pack" && mkdir -p "$pack"
  (cd "$root" && tar cf - .device-bundle | xz -6 -T0 > "$pack/bundle.tar.xz")
  tmp=$(mktemp -d)
  cp "$shared/matrices"/* "$tmp/" && gunzip -q "$tmp"/*.gz
  tar cf - -C "$tmp" . | xz -6 -T0 > "$pack/matrices.tar.xz"
  rm -rf "$tmp"
  echo "gpu-test: pack $(du -sh "$pack" | cut -f1) (checkout without .git: $(du -sh --exclude=.git --exclude=.device-bundle \
    --exclude=.device-matrices --exclude=.device-pack "$root" | cut -f1); a device call carries 64 MiB in all)"
  for d in .device-bundle .device-matrices .device-pack; do
    git -C "$root" check-ignore -q "$d" || echo "gpu-test: $d is not ignored: echo /$d/ >> .git/info/exclude"
  done
  echo "gpu-test: now, with the device tool:"
  echo "  run(command=\"bash ci/gpu-test.sh run\", carry=[\".device-pack\"], timeout_s=600)"
  exit 0
fi
if [ "$mode" != run ]; then
  echo "usage: ci/gpu-test.sh prepare [BUILD_DIR] | ci/gpu-test.sh [run] [tests|memcheck|racecheck|bench ...]" >&2
  exit 2
fi

# ---- run (GPU machine) --------------------------------------------------------------------------------------------
stages=${*:-tests memcheck racecheck bench}
OUT=${OUT:-/tmp/spmvport-gpu-test}
mkdir -p "$OUT"
bundle=$root/.device-bundle
bin=$bundle/build/bin
# a carried .device-pack (from 'prepare') replaces the bundle and the matrices
if [ -f "$root/.device-pack/bundle.tar.xz" ]; then
  rm -rf "$bundle" && tar xJf "$root/.device-pack/bundle.tar.xz" -C "$root"
fi
if [ -f "$root/.device-pack/matrices.tar.xz" ]; then
  rm -rf "$root/.device-matrices" && mkdir -p "$root/.device-matrices"
  tar xJf "$root/.device-pack/matrices.tar.xz" -C "$root/.device-matrices" && gzip -1 "$root/.device-matrices"/*.mtx
fi
summary=$OUT/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

if [ ! -d "$bin" ]; then
  note "gpu-test: no $bin: run 'bash ci/gpu-test.sh prepare' on the development machine and carry .device-bundle"
  exit 1
fi
# the bundle first; then the machine's own CUDA libraries (cuSPARSE is not carried)
export LD_LIBRARY_PATH="$bundle/lib:$bundle/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib"
export SPMVPORT_BACKEND_PATH=$bundle/build/lib
export SPMVPORT_MATRIX_DIR=${SPMVPORT_MATRIX_DIR:-$root/.device-matrices}
[ -d "$SPMVPORT_MATRIX_DIR" ] || note "gpu-test: warning: no matrices at $SPMVPORT_MATRIX_DIR (carry .device-pack, or .device-matrices)"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
jobs=$(nproc 2>/dev/null || echo 4)
[ "$jobs" -gt 8 ] && jobs=8

note "gpu-test: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), stages: $stages"
if command -v nvidia-smi >/dev/null; then
  note "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
else
  note "device: no nvidia-smi"
fi
note "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
note "compute-sanitizer: ${sanitizer:-not found}"
failed=0

# The tests' scratch directory is the build machine's path, compiled in: create it here.
for t in "$bin"/test_*; do
  d=$(grep -aoE '/[[:alnum:]_./-]*/test-tmp' "$t" 2>/dev/null | head -1)
  [ -n "$d" ] && mkdir -p "$d" 2>/dev/null
done

# Run "$@" with at most $1 seconds; 124/137 mean it was stopped.
limited() { local secs=$1; shift; timeout --kill-after=10 "$secs" "$@"; }

run_tests() {
  local log=$OUT/tests.log limit=${GPU_TEST_TIME_TESTS:-200} start=$SECONDS rc t left before
  : >"$log"
  # the GPU suite first: the time limit, if it bites, cuts CPU tests that CI runs anyway
  for t in "$bin"/test_gpu_cuda $(ls "$bin"/test_* | grep -v '/test_gpu_cuda$'); do
    [ -x "$t" ] || continue
    if [ -n "${GPU_TEST_BINARIES:-}" ] && ! [[ " $GPU_TEST_BINARIES " == *" $(basename "$t") "* ]]; then continue; fi
    left=$((limit - (SECONDS - start)))
    if [ $left -le 5 ]; then note "tests: time limit reached before $(basename "$t")"; failed=1; break; fi
    echo "==== $(basename "$t")" >>"$log"
    before=$(wc -l <"$log")
    if [ "$(basename "$t")" = test_gpu_cuda ] && [ -n "${GPU_TEST_GPU_FILTER:-}" ]; then
      limited "$left" "$t" --filter="$GPU_TEST_GPU_FILTER" --verbose -j"$jobs" >>"$log" 2>&1
    else
      limited "$left" "$t" --verbose -j"$jobs" >>"$log" 2>&1
    fi
    rc=$?
    note "tests: $(basename "$t"): rc=$rc $(tail -n +"$((before + 1))" "$log" | grep -m1 'Synthesis' |
          sed 's/.*Synthesis: //')"
    [ $rc -ne 0 ] && failed=1
  done
}

# compute-sanitizer on the CUDA GPU test binary, one Criterion filter at a time. A stage fails on sanitizer
# errors (its ERROR SUMMARY lines) or a time-out; failing assertions are the tests stage's business.
run_sanitizer() {
  local tool=$1 filters=$2 limit=$3 log=$OUT/$1.log t=$bin/test_gpu_cuda f rc errors before left start=$SECONDS
  local -
  set -f # the filters are Criterion patterns, not file names
  : >"$log"
  if [ -z "$sanitizer" ] || [ ! -x "$t" ]; then
    note "$tool: skipped (no compute-sanitizer or no test_gpu_cuda)"
    return
  fi
  for f in $filters; do
    left=$((limit - (SECONDS - start)))
    if [ $left -le 5 ]; then note "$tool: time limit reached before $f (incomplete)"; failed=1; break; fi
    echo "==== $tool --filter $f" >>"$log"
    before=$(wc -l <"$log")
    limited "$left" "$sanitizer" --tool "$tool" --target-processes all --report-api-errors no --print-limit 20 \
      --error-exitcode 99 "$t" --filter="$f" --verbose -j"$jobs" >>"$log" 2>&1
    rc=$?
    errors=$(tail -n +"$((before + 1))" "$log" | grep -oE 'ERROR SUMMARY: [0-9]+' | awk '{s += $3} END {print s + 0}')
    note "$tool: $f: rc=$rc sanitizer errors=$errors; $(tail -n +"$((before + 1))" "$log" | grep -m1 'Synthesis' |
          sed 's/.*Synthesis: //')"
    if [ "$errors" != 0 ] || [ $rc -eq 99 ] || [ $rc -eq 124 ] || [ $rc -eq 137 ]; then failed=1; fi
  done
}

run_bench() {
  local b=$bin/spmvport-bench rc
  if [ ! -x "$b" ]; then
    note "bench: skipped (no spmvport-bench in the build)"
    return
  fi
  limited "${GPU_TEST_TIME_BENCH:-170}" "$b" --backend cuda --suite large --precision both \
    --format "${GPU_TEST_BENCH_FORMATS:-csr_scalar,csr_vector,csr_lb,vendor,tile,hbp,amf_csr,teb,auto}" \
    --csv "$OUT/bench.csv" >"$OUT/bench.log" 2>&1
  rc=$?
  local rows=0
  [ -f "$OUT/bench.csv" ] && rows=$(($(wc -l <"$OUT/bench.csv") - 1))
  note "bench: rc=$rc, $rows result rows in bench.csv (log: bench.log)"
  [ $rc -ne 0 ] && failed=1
}

# The comparisons the format issues ask for, f64, one bench call per variant, rows appended to variants.csv:
# csr_lb chunk sizes, AMF-CSR fixed folding, HBP atomics, sort2D grouping and the paper's 4096-column blocks,
# TileSpMV all-CSR tiles, no / forced deferred COO and 2 / 4 tiles in flight per 16 lanes, EHYB in the plan's
# ordering.
run_variants() {
  local b=$bin/spmvport-bench start=$SECONDS limit=${GPU_TEST_TIME_VARIANTS:-120} left rc
  [ -x "$b" ] || { note "variants: skipped (no spmvport-bench)"; return; }
  local graphs="gen:kron:20:16 gen:circuit:5000000" meshes="gen:stencil3d:7:160 gen:fem3d:3:48"
  local -a runs=(
    "csr_lb nnz_per_warp=512 $graphs" "csr_lb nnz_per_warp=1024 $graphs"
    "amf_csr amf_fixed_fold=2 $graphs $meshes" "amf_csr amf_fixed_fold=4 $graphs $meshes"
    "hbp hbp_combine=2 $graphs" "hbp hbp_grouping=1 $graphs" "hbp hbp_block_cols=4096 $graphs $meshes"
    "tile tile_variant=1 $meshes gen:kron:20:16" "tile tile_deferred_coo=-1 $meshes gen:kron:20:16"
    "tile tile_inflight=2 $meshes" "tile tile_inflight=4 $meshes" "tile tile_deferred_coo=1 $meshes"
    "ehyb ehyb_plan_ordering=1 $meshes")
  # GPU_TEST_VARIANTS replaces the list: runs separated by ';', each "FORMAT[,FORMAT] OPTION[,OPTION]|- MATRIX..."
  # (a MATRIX "@DIR/name" is a shared matrix), precision GPU_TEST_VARIANT_PRECISION (default f64)
  if [ -n "${GPU_TEST_VARIANTS:-}" ]; then
    IFS=';' read -r -a runs <<<"$GPU_TEST_VARIANTS"
  fi
  local r fmt popt mats first=1 o
  for r in "${runs[@]}"; do
    read -r fmt popt mats <<<"$r"
    [ -n "$fmt" ] || continue
    left=$((limit - (SECONDS - start)))
    if [ $left -le 5 ]; then note "variants: time limit reached before $fmt $popt"; break; fi
    local -a po=()
    if [ "$popt" != - ]; then for o in ${popt//,/ }; do po+=(--plan-option "$o"); done; fi
    mats=${mats//@/$SPMVPORT_MATRIX_DIR/}
    # shellcheck disable=SC2086
    limited "$left" "$b" --backend cuda --format "$fmt" "${po[@]}" --precision "${GPU_TEST_VARIANT_PRECISION:-f64}" \
      --quiet --csv "$OUT/variant.csv" $mats >>"$OUT/variants.log" 2>&1
    rc=$?
    if [ -f "$OUT/variant.csv" ]; then
      if [ $first -eq 1 ]; then cat "$OUT/variant.csv" >"$OUT/variants.csv"; first=0
      else tail -n +2 "$OUT/variant.csv" >>"$OUT/variants.csv"; fi
      rm -f "$OUT/variant.csv"
    fi
    note "variants: $fmt $popt: rc=$rc"
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && failed=1
  done
}

# The largest shared SuiteSparse matrices, every format, both precisions.
run_shared() {
  local b=$bin/spmvport-bench d=$SPMVPORT_MATRIX_DIR rc
  [ -x "$b" ] || { note "shared: skipped (no spmvport-bench)"; return; }
  limited "${GPU_TEST_TIME_SHARED:-90}" "$b" --backend cuda --precision both --quiet --csv "$OUT/shared.csv" \
    "$d/NotreDame_www.mtx.gz" "$d/cage11.mtx.gz" "$d/bcsstk33.mtx.gz" "$d/Groebner_id2003_aug.mtx.gz" \
    >"$OUT/shared.log" 2>&1
  rc=$?
  note "shared: rc=$rc, $(($(wc -l <"$OUT/shared.csv" 2>/dev/null || echo 1) - 1)) rows in shared.csv"
  [ $rc -ne 0 ] && failed=1
}

for s in $stages; do
  case $s in
  tests) run_tests ;;
  memcheck)
    run_sanitizer memcheck "${GPU_TEST_MEMCHECK_FILTERS:-gpu_cuda/@(csr_scalar|csr_vector|csr_lb|vendor)_corpus_* \
gpu_cuda/@(update_values_on_device|impossible_allocation_is_a_status|plan_info_reports_device_bytes) \
gpu_cuda/@(tile|hbp|amf_csr|teb|ehyb)_corpus_*}" "${GPU_TEST_TIME_MEMCHECK:-140}" ;;
  racecheck)
    run_sanitizer racecheck "${GPU_TEST_RACECHECK_FILTERS:-gpu_cuda/csr_lb_corpus_* \
gpu_cuda/@(tile|hbp|amf_csr|teb|ehyb)_corpus_f64}" "${GPU_TEST_TIME_RACECHECK:-60}" ;;
  bench) run_bench ;;
  variants) run_variants ;;
  shared) run_shared ;;
  *) note "gpu-test: unknown stage '$s'"; failed=1 ;;
  esac
done
note "gpu-test: $([ $failed -eq 0 ] && echo PASS || echo FAIL)"
exit $failed
