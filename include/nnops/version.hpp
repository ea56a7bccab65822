#pragma once

#define NNOPS_VERSION_MAJOR 0
#define NNOPS_VERSION_MINOR 1
#define NNOPS_VERSION_PATCH 0

namespace nnops {
/// "0.1.0".
const char* version() noexcept;
}  // namespace nnops
