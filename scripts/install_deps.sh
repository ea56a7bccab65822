#!/usr/bin/env bash
# Installs every build and test dependency of nnops from Debian packages.
# Idempotent: when everything is present it only checks (well under a second) and exits.
set -euo pipefail

PKGS=(cmake ninja-build g++ make pkg-config libhwy-dev libgtest-dev libgmock-dev googletest
      libbenchmark-dev libomp-dev libcli11-dev python3)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
