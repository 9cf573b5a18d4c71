#!/usr/bin/env bash
# Kernel code is written once for warp sizes 32 and 64: outside src/common/device/port.h it must not name the
# number 32, an all-ones 32- or 64-bit lane mask, or warpSize. Comments are exempt. Exit 1 with the offending
# lines.
set -u
root=${1:-$(dirname "$0")/..}
dir=$root/src/common/device
[ -d "$dir" ] || { echo "lint-kernels: no $dir, nothing to check"; exit 0; }
pattern='(^|[^0-9A-Za-z_.])32([^0-9A-Za-z_.]|$)|0x[fF]{8}([^0-9a-fA-F]|$)|0x[fF]{16}|\bwarpSize\b|~0u?ll|~0ull'
hits=$(grep -rnE "$pattern" "$dir" --include='*' | grep -v '/port\.h:' | grep -vE '^\S+:[0-9]+:\s*(//|\*|/\*)')
if [ -n "$hits" ]; then
  echo "lint-kernels: kernel code names a warp size or lane mask literally (use the port.h macros):"
  echo "$hits"
  exit 1
fi
echo "lint-kernels: clean ($(find "$dir" -type f | wc -l) files)"
