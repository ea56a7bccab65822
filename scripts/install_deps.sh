#!/usr/bin/env bash
# Installs every build and test dependency of nnops: Debian packages, and numpy + ml_dtypes from PyPI for
# the NumPy interoperability test. Idempotent: when everything is present it only checks (well under a
# second) and exits.
#   --sanitizers   also the clang toolchain of the asan, tsan and fuzz presets (docs/reliability.md):
#                  clang-14, its sanitizer and libFuzzer runtimes, LLVM's OpenMP (with the Archer TSan
#                  tool) and llvm-symbolizer. .ci/run passes it.
#   --cross-arm    also g++-aarch64-linux-gnu, for scripts/check_cross_arm.sh.
#   --arm          the aarch64 test build (preset arm64; scripts/run_arm_tests.sh, .ci/run passes it): adds
#                  the dpkg architecture arm64, then the cross compilers, qemu-user-static (qemu 7.2: NEON,
#                  SVE, SVE2, settable vector length) and the arm64 multiarch libraries the build links and
#                  the emulated programs load (libhwy-dev:arm64, libgtest-dev:arm64, libgmock-dev:arm64,
#                  libgomp1:arm64; libc6:arm64 and libstdc++6:arm64 come with them). Multi-Arch: same
#                  packages must match their amd64 versions, which one apt-get install call settles.
set -euo pipefail

PKGS=(cmake ninja-build g++ make pkg-config libhwy-dev libgtest-dev libgmock-dev googletest
      libbenchmark-dev libomp-dev libcli11-dev python3)
for arg in "$@"; do
  case "$arg" in
    --sanitizers) PKGS+=(clang-14 libclang-rt-14-dev libomp-14-dev llvm-14) ;;
    --cross-arm) PKGS+=(g++-aarch64-linux-gnu) ;;
    --arm) ARM=1
           PKGS+=(g++-aarch64-linux-gnu gcc-aarch64-linux-gnu qemu-user-static
                  libhwy-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64 libgomp1:arm64) ;;
    *) echo "install_deps: unknown option $arg (known: --sanitizers, --cross-arm, --arm)" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# The arm64 packages need the architecture in dpkg and its package lists (a fresh apt-get update).
need_update=0
if [ "${ARM:-0}" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "install_deps: adding the dpkg architecture arm64"
  $SUDO dpkg --add-architecture arm64
  need_update=1
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ] || [ "$need_update" = 1 ]; then
  echo "install_deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# NumPy and ml_dtypes (PyPI) for the .npy interoperability test, tests/cli/npy_interop.py. They go to the
# python3 first on PATH, the interpreter CMake resolves for the CLI tests. Optional: where pip cannot
# install (offline, or a distribution Python marked externally managed) that one test reports "skipped".
if ! python3 -c "import numpy, ml_dtypes" >/dev/null 2>&1; then
  echo "install_deps: installing numpy and ml_dtypes with $(command -v python3) -m pip"
  if ! PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check numpy ml_dtypes; then
    echo "install_deps: warning: could not install numpy and ml_dtypes; the NumPy interop test will be skipped"
  fi
fi
