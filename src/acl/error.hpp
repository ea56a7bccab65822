// Error reporting of the C API: the per-thread message list behind aclGetRecentErrMsg, the mapping of
// nnops::Status onto aclnnStatus, and the guards that keep C++ exceptions from crossing the C boundary.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "acl/acl_base.h"
#include "aclnn/aclnn_base.h"
#include "nnops/status.hpp"

namespace nnops::acl {

/// Adds a message for the calling thread's next aclGetRecentErrMsg (newest first). Never throws: if the
/// message cannot be stored, a fixed "out of memory" message is kept instead.
void push_error(const std::string& message) noexcept;

/// Notes that a message was lost (out of memory); aclGetRecentErrMsg will say so. Never throws.
void note_lost_error() noexcept;

/// Moves the calling thread's pending messages into the string returned by aclGetRecentErrMsg.
const char* take_errors() noexcept;

/// Records "<api>: <what>" and returns code; for one-line failure returns.
template <class Code>
Code fail(Code code, const char* api, const std::string& what) noexcept {
  try {
    push_error(std::string(api) + ": " + what);
  } catch (...) {
    note_lost_error();
  }
  return code;
}

/// kNullPointer -> ACLNN_ERR_PARAM_NULLPTR, kInvalidArgument and kUnsupported -> ACLNN_ERR_PARAM_INVALID,
/// kInternal -> ACLNN_ERR_INNER.
aclnnStatus to_aclnn_status(StatusCode code) noexcept;

/// Records the Status message (prefixed with the API name) and returns its aclnnStatus.
aclnnStatus fail_status(const char* api, const Status& s) noexcept;

/// Runs body() and turns any exception into `on_exception` with a message: the body of every C entry
/// point runs inside one of these.
template <class R, class F>
R guarded(const char* api, R on_bad_alloc, R on_exception, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(on_bad_alloc, api, "out of memory");
  } catch (const std::exception& e) {
    return fail(on_exception, api, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(on_exception, api, "internal error: unknown exception");
  }
}

/// Guards for the two return types.
template <class F>
aclError guard_acl(const char* api, F&& body) noexcept {
  return guarded<aclError>(api, ACL_ERROR_BAD_ALLOC, ACL_ERROR_INTERNAL_ERROR, body);
}
template <class F>
aclnnStatus guard_aclnn(const char* api, F&& body) noexcept {
  return guarded<aclnnStatus>(api, ACLNN_ERR_INNER, ACLNN_ERR_INNER, body);
}

}  // namespace nnops::acl
