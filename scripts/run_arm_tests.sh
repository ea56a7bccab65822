#!/usr/bin/env bash
# The test suite on 64-bit Arm, under qemu-user (docs/reliability.md, "ARM"). Builds the preset arm64 once
# (g++-aarch64-linux-gnu, the arm64 multiarch libraries; scripts/install_deps.sh --arm installs them), then
# runs ctest once per configuration of the matrix below. ctest runs every aarch64 program through
# scripts/qemu-aarch64.sh, which reads the emulated CPU from NNOPS_QEMU_CPU. Every configuration runs the
# whole suite with the same bounds as x86, except the deny-list below. Any failing test, any configuration
# whose CPU or vector length is not the one asked for, and any broken cross-ISA promise
# (scripts/cross_isa_report.py --check) fails the script. .ci/run calls it (step "arm").
#
# Environment: NNOPS_ARM_CONFIGS  names of the configurations to run (default: all), e.g. "neon sve-512"
#              NNOPS_ARM_JOBS     ctest -j (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."

# The configuration matrix, one line each:
#   name | qemu -cpu | NNOPS_TEST_ISAS | target the dispatch must pick by itself | SVE vector bits | CLI e2e
# NNOPS_TEST_ISAS is what every numerical test (tests/test_util.hpp: for_each_isa) loops over, each target
# forced in turn (and nnops_isa_hashes runs them): at each length the SVE targets that the dispatch picks on
# some CPU of that length. A 128-bit SVE2 CPU gets sve2_128 and one without SVE2 gets sve, so the generic
# sve2 code does not run at 128 bits; every 256-bit CPU gets sve_256, so neither generic target runs at 256
# bits (only a user's NNOPS_MAX_CPU_ISA cap could choose them there). The generic sve and sve2 code runs at
# 128 (sve), 512 and 2048 bits. Each SVE target costs about 40 s in nnops_isa_hashes alone and a few minutes
# of the suite under qemu on the Intel VM, which is why the unreachable pairs are left out. NEON, whose code
# does not depend on the SVE length, runs once. The other tests (C API,
# streams, concurrency, CLI, examples) run on the target the dispatch picks. qemu's
# sve-default-vector-length is in bytes. CLI e2e "no": the Python end-to-end tests of the nnops binary
# (DENY_CLI) are left out there, see below.
MATRIX=(
  "neon     max,sve=off                        neon               neon      -     yes"
  "sve-128  max,sve-default-vector-length=16   sve2_128,sve       sve2_128  128   yes"
  "sve-256  max,sve-default-vector-length=32   sve_256            sve_256   256   no"
  "sve-512  max,sve-default-vector-length=64   sve2,sve           sve2      512   no"
  "sve-2048 max,sve-default-vector-length=256  sve2,sve           sve2      2048  yes"
)

# Deny-list: tests that ctest does not run on ARM, with the reason. Keep it short.
#   cross_isa_hashes   this script runs nnops_isa_hashes itself, in every configuration, and keeps its
#                      output for the cross-ISA comparison (the same program and checks).
DENY='^(cross_isa_hashes)$'
# In the configurations marked "no" also the Python end-to-end tests of the CLI (tests/cli/*.py, through
# the emulator: about 45 s of CPU per configuration). They test file handling, .npy parsing, error
# messages and atomic updates, which do not depend on the SIMD target, and the numbers, which come from the
# kernels that the unit tests check in every configuration; they run on NEON, 128-bit and 2048-bit SVE.
DENY_CLI='^(cross_isa_hashes|cli_e2e_[a-z]+|cli_npy_interop)$'
# Reduced form: NNOPS_TEST_QUICK=1 (tests/test_util.hpp: quick_mode): GroupNormalizationGrad's groups of
# 2^20 elements run as 2 groups (one drawn, one a copy that must give the same bits) instead of 64, and its
# thread-count test takes 2^18 for 2^20; same dtypes and targets. Under qemu on the Intel VM (256-bit SVE)
# the two largest of them took 300 s and 216 s, side by side, of the configuration's 430 s.
export NNOPS_TEST_QUICK=1

JOBS="${NNOPS_ARM_JOBS:-2}"
BUILD=build/arm64
OUT="$BUILD/arm-runs"
t0=$SECONDS
say() { printf '\n---- [%4ds] arm: %s\n' "$((SECONDS - t0))" "$*"; }
# CPU seconds (user + system) used so far by this script's finished children, into $CPU: unlike the wall
# time, it does not grow when other work shares the machine. (Not as $(child_cpu): `times` in a subshell
# sees none of this shell's children.)
child_cpu() {
  times >"$OUT/.times"
  CPU=$(awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); s += a[1] * 60 + a[2] }
                       printf "%d", s }' "$OUT/.times")
}

command -v qemu-aarch64-static >/dev/null || { echo "run_arm_tests: qemu-aarch64-static missing (scripts/install_deps.sh --arm)" >&2; exit 1; }
say "configure and build (preset arm64)"
cmake --preset arm64 >/dev/null
cmake --build --preset arm64
rm -rf "$OUT" && mkdir -p "$OUT"

summary=()
hash_files=()
fail=0
for line in "${MATRIX[@]}"; do
  read -r name cpu isas best bits cli <<<"$line"
  if [ -n "${NNOPS_ARM_CONFIGS:-}" ] && [[ " $NNOPS_ARM_CONFIGS " != *" $name "* ]]; then continue; fi
  export NNOPS_QEMU_CPU="$cpu" NNOPS_TEST_ISAS="$isas"
  say "$name: qemu -cpu $cpu, targets $isas"
  c0=$SECONDS
  child_cpu
  cpu0=$CPU

  # The emulated CPU is the one asked for: the dispatch picks $best by itself, and every SVE target runs
  # at $bits bits (nnops_isa_hashes prints each target's vector length).
  info="$(scripts/qemu-aarch64.sh "$BUILD/nnops" info)"
  printf '%s\n' "$info" | sed -n 's/^/  /; /SIMD targets\|selected\|threads/p'
  if ! printf '%s\n' "$info" | grep -qE "^selected: +$best\$"; then
    echo "run_arm_tests: $name: the dispatch should pick $best" >&2
    fail=1
  fi
  if ! scripts/qemu-aarch64.sh "$BUILD/nnops_isa_hashes" >"$OUT/$name.hashes"; then
    echo "run_arm_tests: $name: nnops_isa_hashes failed" >&2
    fail=1
  fi
  hash_files+=("arm-$name=$OUT/$name.hashes")
  if [ "$bits" != - ] && awk -v b="$bits" '$4 ~ /^sve/ && $5 != b { bad = 1 } END { exit !bad }' "$OUT/$name.hashes"; then
    echo "run_arm_tests: $name: an SVE target does not run at $bits bits:" >&2
    awk '{ print "  " $4, $5 }' "$OUT/$name.hashes" | sort -u >&2
    fail=1
  fi

  deny="$DENY"
  [ "$cli" = yes ] || deny="$DENY_CLI"
  rc=0
  ctest --test-dir "$BUILD" -j "$JOBS" --output-on-failure --no-tests=error --timeout 1800 -E "$deny" \
    >"$OUT/$name.log" 2>&1 || rc=$?
  grep -E '^[0-9]+% tests passed|tests failed|Failed|\*\*\*|Timeout|Not Run' "$OUT/$name.log" | tail -n 40 || true
  count="$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$OUT/$name.log" | tail -n 1)"
  if [ "$rc" -ne 0 ]; then
    echo "run_arm_tests: $name FAILED (ctest exit $rc); the log is $OUT/$name.log" >&2
    fail=1
  fi
  child_cpu
  summary+=("$(printf '%-9s %-36s %-18s %4s tests %5ds wall %5ds CPU  %s' "$name" "$cpu" "$isas" "${count:-?}" \
    "$((SECONDS - c0))" "$((CPU - cpu0))" "$([ "$rc" -eq 0 ] && echo passed || echo FAILED)")")
done
unset NNOPS_QEMU_CPU NNOPS_TEST_ISAS

# Cross-ISA agreement: the same hashes from the x86 build of `make test` (build/release), when there is one.
if [ -x build/release/nnops_isa_hashes ]; then
  build/release/nnops_isa_hashes >"$OUT/x86.hashes" && hash_files=("x86=$OUT/x86.hashes" "${hash_files[@]}")
fi
if [ ${#hash_files[@]} -gt 0 ]; then
  say "cross-ISA agreement (scripts/cross_isa_report.py)"
  python3 scripts/cross_isa_report.py --check "${hash_files[@]}" | tee "$OUT/cross_isa_report.txt" || fail=1
fi

say "summary (logs in $OUT/)"
printf '  %s\n' "${summary[@]}"
child_cpu
echo "  total: $((SECONDS - t0))s wall, ${CPU}s CPU (build included)"
if [ "$fail" -ne 0 ]; then
  echo "run_arm_tests: FAILED" >&2
  exit 1
fi
echo "run_arm_tests: all configurations passed in $((SECONDS - t0))s"
