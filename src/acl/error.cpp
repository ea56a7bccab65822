#include "src/acl/error.hpp"

#include <deque>

namespace nnops::acl {
namespace {

// NB: thread-local, as CANN does by default: each thread sees the failures of its own calls. Failures
// of stream tasks are pushed by the thread that synchronizes the stream, not by the worker.
struct ThreadErrors {
  std::deque<std::string> pending;  // newest first
  std::string returned;             // what the last aclGetRecentErrMsg handed out
  bool lost = false;                // a message could not be stored
};

thread_local ThreadErrors t_errors;

// A program that never reads its messages must not grow without bound.
constexpr std::size_t kMaxPending = 32;

}  // namespace

void push_error(const std::string& message) noexcept {
  try {
    t_errors.pending.push_front(message);
    if (t_errors.pending.size() > kMaxPending) t_errors.pending.pop_back();
  } catch (...) {
    t_errors.lost = true;
  }
}

void note_lost_error() noexcept { t_errors.lost = true; }

const char* take_errors() noexcept {
  ThreadErrors& e = t_errors;
  try {
    std::string out;
    if (e.lost) out = "(an error message was lost: out of memory)";
    for (const std::string& m : e.pending) {
      if (!out.empty()) out += '\n';
      out += m;
    }
    e.returned.swap(out);
  } catch (...) {
    e.returned.clear();  // clear() never allocates
  }
  e.pending.clear();
  e.lost = false;
  return e.returned.c_str();
}

aclnnStatus to_aclnn_status(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk:
      return ACLNN_SUCCESS;
    case StatusCode::kNullPointer:
      return ACLNN_ERR_PARAM_NULLPTR;
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnsupported:
      return ACLNN_ERR_PARAM_INVALID;
    case StatusCode::kInternal:
      return ACLNN_ERR_INNER;
  }
  return ACLNN_ERR_INNER;
}

aclnnStatus fail_status(const char* api, const Status& s) noexcept {
  return fail(to_aclnn_status(s.code()), api, s.message());
}

}  // namespace nnops::acl

extern "C" const char* aclGetRecentErrMsg(void) { return nnops::acl::take_errors(); }
