// nnops::Status: the result of every nnops call.
//
// A call either succeeds (code kOk) or fails with a code and a message that names the operator, the
// argument, what was expected and what was given. No nnops call throws across its API or aborts on
// bad input.
#pragma once

#include <string>
#include <utility>

namespace nnops {

/// Error categories. The numeric values are stable; the C API maps them onto aclnnStatus codes.
enum class StatusCode : int {
  kOk = 0,
  kNullPointer = 1,      ///< A required pointer (tensor data, output) was null.
  kInvalidArgument = 2,  ///< A dtype, shape, value or memory layout is not accepted.
  kUnsupported = 3,      ///< Valid request that this build cannot serve.
  kInternal = 4,         ///< A bug or a resource failure inside nnops.
};

/// Human-readable name of a code ("ok", "null pointer", ...).
const char* status_code_name(StatusCode code) noexcept;

/// Outcome of a call: a code plus, on failure, a precise message.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool is_ok() const noexcept { return code_ == StatusCode::kOk; }
  explicit operator bool() const noexcept { return is_ok(); }
  StatusCode code() const noexcept { return code_; }
  /// Empty on success.
  const std::string& message() const noexcept { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace nnops
