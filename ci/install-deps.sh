#!/usr/bin/env bash
# Install what building and testing libspmvport needs on a fresh Debian 12 machine (see docs/toolchain notes in
# README.md). CUDA 13 is expected at /usr/local/cuda on the project's machines; without it the CUDA module is
# simply not built (SPMVPORT_CUDA=AUTO). Safe to run again.
set -euo pipefail
pkgs=(cmake ninja-build gcc g++ make pkg-config zlib1g-dev libcriterion-dev libmetis-dev python3 python3-matplotlib
      hipcc libamdhip64-dev rocm-device-libs libhipsparse-dev librocsparse-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd=sudo
  echo "install-deps: installing ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install-deps: ready"
