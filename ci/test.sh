#!/usr/bin/env bash
# The README's test command: install dependencies, build every backend whose toolchain is present, run the whole
# test suite with CTest, then an AddressSanitizer + UBSan build of the C core and its tests. Ends with CTest's
# summary line. Usage: bash ci/test.sh [BUILD_DIR]   (default build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
bash "$root/ci/install-deps.sh"
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
jobs=$(nproc)

echo "== configure and build ($build)"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
grep -E '^-- spmvport' "$build.configure.log" || true
cmake --build "$build" -j"$jobs"

echo "== ASan + UBSan build of the C core and tests ($build-asan)"
cmake -S "$root" -B "$build-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSPMVPORT_SANITIZE=ON -DSPMVPORT_CUDA=OFF \
  -DSPMVPORT_HIP=OFF >"$build-asan.configure.log" 2>&1 || { cat "$build-asan.configure.log"; exit 1; }
cmake --build "$build-asan" -j"$jobs"
# leaks are errors too; OpenMP's runtime keeps thread pools alive on purpose, which LeakSanitizer does not flag
SPMVPORT_TEST_QUICK=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$build-asan" --output-on-failure -j"$jobs" -E 'install_consumer|lint_kernels' \
  --timeout 2400 >"$build-asan.ctest.log" 2>&1 || { tail -n 60 "$build-asan.ctest.log"; exit 1; }
grep -E 'tests passed|tests failed' "$build-asan.ctest.log" | sed 's/^/asan: /' 

echo "== build without METIS ($build-nometis): ehyb refuses with a status, everything else works"
cmake -S "$root" -B "$build-nometis" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPMVPORT_CUDA=OFF -DSPMVPORT_HIP=OFF \
  -DSPMVPORT_METIS=OFF >"$build-nometis.configure.log" 2>&1 || { cat "$build-nometis.configure.log"; exit 1; }
cmake --build "$build-nometis" -j"$jobs" --target test_api ehyb_without_metis spmvport-bench
ctest --test-dir "$build-nometis" --output-on-failure -R '^(test_api|ehyb_without_metis|bench_cpu_csv)$' \
  >"$build-nometis.ctest.log" 2>&1 || { tail -n 60 "$build-nometis.ctest.log"; exit 1; }
grep -E 'tests passed|tests failed' "$build-nometis.ctest.log" | sed 's/^/no-metis: /'

echo "== tests ($build)"
rc=0
ctest --test-dir "$build" --output-on-failure -j"$jobs" --timeout 2400 2>&1 | tee "$build.ctest.log" || rc=$?
# end with CTest's summary line (the list of skipped GPU suites would otherwise come last)
grep -E '^[0-9]+% tests passed' "$build.ctest.log" | tail -n 1
exit $rc
