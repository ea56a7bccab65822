#!/bin/sh
# Runs an aarch64 Linux program on this x86-64 host under qemu-user: the CMAKE_CROSSCOMPILING_EMULATOR of
# the arm64 preset (cmake/toolchains/aarch64-linux-gnu.cmake), so ctest, gtest discovery and the CLI
# tests run the aarch64 binaries through it. scripts/run_arm_tests.sh sets the variables per
# configuration.
#   NNOPS_QEMU_CPU   qemu's -cpu argument (default "max": NEON, SVE and SVE2 at qemu's default vector
#                    length, 512 bits), e.g. "max,sve=off" (NEON only) or "max,sve-default-vector-length=256"
#                    (the length in BYTES: 16, 32, 64, 256 = 128, 256, 512, 2048 bits).
#   NNOPS_QEMU       the qemu binary (default qemu-aarch64-static).
# -L / : the dynamic loader and libraries are the arm64 multiarch ones installed under / (libc6:arm64,
# libstdc++6:arm64, libgomp1:arm64, libhwy1:arm64). Do not point -L at the cross toolchain's
# /usr/aarch64-linux-gnu: that mixes two glibc builds, and then every pthread_create spins forever.
exec "${NNOPS_QEMU:-qemu-aarch64-static}" -L / -cpu "${NNOPS_QEMU_CPU:-max}" "$@"
