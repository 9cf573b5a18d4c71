#!/usr/bin/env bash
# The README's main job: install dependencies, build (Release, every backend whose toolchain is present) and run
# spmvport-bench on its embedded default set on the best backend present (a GPU if one works, else the CPU).
# Extra arguments go to spmvport-bench, e.g. `bash ci/bench.sh --precision both --csv bench.csv`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SPMVPORT_BUILD_DIR:-$root/build}
bash "$root/ci/install-deps.sh"
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" --target spmvport-bench
exec "$build/bin/spmvport-bench" "$@"
