#!/usr/bin/env bash
# Compiles every library source and the SIMD conversion test for 64-bit Arm with Debian's cross compiler
# (g++-aarch64-linux-gnu; install_deps.sh --cross-arm installs it). Highway builds NEON, SVE and SVE2 kernels
# there. Nothing runs: this catches code that only builds on x86, e.g. SVE's sizeless vectors used as struct
# members. CI no longer calls it: its step "arm" (scripts/run_arm_tests.sh) builds everything for aarch64
# with warnings as errors and runs the suite under qemu. This stays as a one-minute local check.
set -euo pipefail
cd "$(dirname "$0")/.."
CXX="${NNOPS_CXX_ARM:-aarch64-linux-gnu-g++}"
out=build/cross-arm
mkdir -p "$out"
git ls-files 'src/*.cc' 'src/*.cpp' tests/simd_convert_test.cpp |
  xargs -P "$(nproc)" -I{} sh -c '
    obj="$2/$(printf %s "$1" | tr / _).o"
    "$0" -std=c++17 -O1 -ffp-contract=off -fopenmp -Wall -Wextra -Werror -I. -Iinclude -c "$1" -o "$obj" ||
      { echo "check_cross_arm: $1 does not build for aarch64" >&2; exit 255; }' "$CXX" {} "$out"
echo "check_cross_arm: $(git ls-files 'src/*.cc' 'src/*.cpp' tests/simd_convert_test.cpp | wc -l) sources build for aarch64"
