# Cross build for 64-bit Arm Linux on a Debian x86-64 host (preset arm64; docs/reliability.md, "ARM").
# Compiler: Debian's g++-aarch64-linux-gnu. Libraries and CMake packages: the arm64 multiarch packages
# installed under / (libhwy-dev:arm64, libgtest-dev:arm64, ...; scripts/install_deps.sh --arm), found in
# /usr/lib/aarch64-linux-gnu through CMAKE_LIBRARY_ARCHITECTURE. Programs (python3, sh) come from the
# host. Tests run through qemu-user: CMAKE_CROSSCOMPILING_EMULATOR is scripts/qemu-aarch64.sh, so plain
# `ctest` runs the aarch64 binaries, and environment variables pick the emulated CPU (see that script).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_FIND_ROOT_PATH /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

get_filename_component(_nnops_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
set(CMAKE_CROSSCOMPILING_EMULATOR "${_nnops_root}/scripts/qemu-aarch64.sh" CACHE FILEPATH
    "Runs aarch64 programs on the host (qemu-user)")
