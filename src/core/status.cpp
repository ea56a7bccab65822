#include "nnops/status.hpp"

#include "nnops/version.hpp"

namespace nnops {

const char* status_code_name(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kNullPointer:
      return "null pointer";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

const char* version() noexcept { return "0.1.0"; }

}  // namespace nnops
