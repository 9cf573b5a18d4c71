#!/usr/bin/env bash
# Install a build into a scratch prefix, then build the tiny consumer in tests/install against it both ways
# (find_package(spmvport) and pkg-config) and run each. Usage: test-install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d) work=$(mktemp -d)
trap 'rm -rf "$prefix" "$work"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libspmvport.so' | head -n 1)")

echo "-- find_package(spmvport)"
cmake -S "$src/tests/install" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
LD_LIBRARY_PATH=$libdir "$work/cmake/consumer"

echo "-- pkg-config spmvport"
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c99 "$src/tests/install/consumer.c" $(pkg-config --cflags --libs spmvport) -o "$work/consumer_pc"
LD_LIBRARY_PATH=$libdir "$work/consumer_pc"
echo "install test passed"
