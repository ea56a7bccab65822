// aclOpExecutor: what phase one of an aclnn call leaves for phase two.
//
// Phase one validates and plans, then packs a kernel closure (the operator's validated Args and Plan,
// copied, so tensors may be destroyed at once) into an Executor. Phase two (launch) checks the workspace,
// pins the device memory the kernel touches and runs the closure on the stream. Executors are handed out
// as opaque handles whose ids are never reused, so a second launch of the same executor is always
// recognized, however many executors were created in between.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"
#include "src/acl/device_memory.hpp"

namespace nnops::acl {

struct Executor {
  /// Phase-two entry point this executor belongs to, e.g. "aclnnGroupNormalizationGrad".
  const char* api = "";
  /// Phase-one entry point, for messages.
  const char* phase_one = "";
  uint64_t workspace_bytes = 0;
  /// aclrtMalloc blocks the kernel reads or writes (tensors in untracked host memory are not listed).
  struct Operand {
    const char* name;
    BlockRef block;
  };
  std::vector<Operand> operands;
  /// The kernel; empty when there is nothing to compute (empty tensors).
  std::function<void(void* workspace)> kernel;
};

/// One pointer argument of a phase-one call, for the null checks that come before anything else.
struct PointerArg {
  const char* name;
  const void* p;
};
/// ACLNN_ERR_PARAM_NULLPTR naming the first null argument ("<api>: dx is null"), else ACLNN_SUCCESS.
aclnnStatus check_not_null(const char* api, std::initializer_list<PointerArg> args) noexcept;

/// Records where the bytes of `view` lie: inside an aclrtMalloc block (appended to `operands`, to be
/// pinned at launch), in untracked host memory (nothing to do), or partly outside a block / in a freed
/// block (an error naming `name`).
Status add_operand(const char* name, const TensorView& view, std::vector<Executor::Operand>* operands);

/// Stores a new executor and returns its handle.
aclOpExecutor* register_executor(std::unique_ptr<Executor> e);

/// Phase two of every operator: validates executor, workspace and stream, then runs the executor on the
/// stream (null stream: now, on the calling thread).
aclnnStatus launch(const char* api, void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                   aclrtStream stream) noexcept;

/// aclFinalize: drops every executor that never ran.
void destroy_all_executors() noexcept;

/// Executors created and neither launched nor destroyed (for tests).
std::size_t live_executors();

}  // namespace nnops::acl
