// The generic phase one of every aclnn operator call. An operator's aclnn_<op>.cpp only binds its CANN
// signature to its descriptor's tensors and attributes and calls phase_one(); phase two is acl::launch
// (executor.hpp) for every operator.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>

#include "aclnn/aclnn_base.h"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"
#include "src/ops/op_desc.hpp"

namespace nnops::acl {

/// One tensor argument of a CANN signature, in the descriptor's order. `name` is CANN's ("gradOut").
/// `required`: a null pointer is ACLNN_ERR_PARAM_NULLPTR; otherwise null means absent (TensorView{}).
struct TensorArg {
  const char* name;
  const aclTensor* t;
  bool required;
};

/// Phase one: null checks (the required tensors, then workspaceSize and executor), the aclTensor checks
/// (to_view), `binding_check` (rules of the C API beyond the C++ API's, e.g. CANN's N/C/HxW arguments; it may
/// also reshape a view, as CANN takes some tensors by element count),
/// then the operator's prepare (check and plan) with the default Context. On success *executor holds the
/// closure and *workspaceSize its workspace; on failure both are zeroed, a message is recorded and the CANN
/// status returned. Never throws.
aclnnStatus phase_one(const char* phase1, const char* phase2, ops::PrepareFn prepare,
                      std::initializer_list<TensorArg> tensors, const ops::Attrs& attrs, uint64_t* workspace_size,
                      aclOpExecutor** executor,
                      const std::function<Status(TensorView* views)>& binding_check = nullptr) noexcept;

}  // namespace nnops::acl
