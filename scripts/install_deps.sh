#!/usr/bin/env bash
# Installs every build and test dependency of nnops: Debian packages, and the Python packages (PyPI) of the
# Python package and its tests. Idempotent: when everything is present it only checks (well under a
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

# Python packages (PyPI), for the python3 first on PATH (the interpreter CMake resolves for the CLI tests and
# `make test` builds the Python package for):
#   numpy, ml_dtypes              the .npy interoperability test (tests/cli/npy_interop.py) and the package
#   nanobind, scikit-build-core   build the extension (pip install --no-build-isolation .)
#   pytest, torch, torchvision,   the Python tests, nnops.torch, the example and the optimizer benchmark
#   scikit-learn, tqdm
#   tensorflow-cpu                optional: the optimizer test against tf.raw_ops.ResourceApplyPowerSign
# PyPI's torch wheel for Linux is the CUDA build (~5 GiB with its nvidia-* packages, ~3 minutes here; nnops only
# uses its CPU part); tensorflow-cpu adds ~1.3 GiB and ~35 s. The check below is an import lookup (no import),
# so it stays well under a second when everything is there. Where pip cannot install (offline, or a distribution
# Python marked externally managed) the tests that need a package report "skipped" with the reason, and
# building the package fails without nanobind and scikit-build-core.
py_missing() {
  python3 - "$@" <<'PY'
import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))
PY
}
pip_install() {
  echo "install_deps: installing $* with $(command -v python3) -m pip"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check "$@"
}
# module name -> PyPI name
declare -A PYPI=([numpy]=numpy [ml_dtypes]=ml_dtypes [nanobind]=nanobind [scikit_build_core]=scikit-build-core
                 [pytest]=pytest [torch]=torch [torchvision]=torchvision [sklearn]=scikit-learn [tqdm]=tqdm)
read -r -a missing_py <<< "$(py_missing "${!PYPI[@]}")"
if [ ${#missing_py[@]} -gt 0 ]; then
  pkgs=()
  for m in "${missing_py[@]}"; do pkgs+=("${PYPI[$m]}"); done
  if ! pip_install "${pkgs[@]}"; then
    echo "install_deps: warning: could not install ${pkgs[*]}; the tests that need them will be skipped"
  fi
fi
if [ -n "$(py_missing tensorflow)" ]; then
  if ! pip_install tensorflow-cpu; then
    echo "install_deps: warning: could not install tensorflow-cpu; the TensorFlow comparison will be skipped"
  fi
fi
