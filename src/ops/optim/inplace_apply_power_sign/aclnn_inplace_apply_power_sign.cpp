// aclnnInplaceApplyPowerSign: CANN's signature bound to the descriptor's tensors; the two phases are the
// generic ones (src/acl/adapter.hpp, executor.hpp).
#include "aclnnop/aclnn_inplace_apply_power_sign.h"

#include "src/acl/adapter.hpp"
#include "src/acl/executor.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"

namespace {
constexpr const char* kPhase1 = "aclnnInplaceApplyPowerSignGetWorkspaceSize";
constexpr const char* kPhase2 = "aclnnInplaceApplyPowerSign";
}  // namespace

extern "C" aclnnStatus aclnnInplaceApplyPowerSignGetWorkspaceSize(aclTensor* varRef, aclTensor* mRef,
                                                                  const aclTensor* lr, const aclTensor* logbase,
                                                                  const aclTensor* signDecay, const aclTensor* beta,
                                                                  const aclTensor* grad, bool useLocking,
                                                                  uint64_t* workspaceSize, aclOpExecutor** executor) {
  // NB: prepare reads the four scalars (to validate beta's range and finiteness); the plan keeps those
  // values, so the executor runs with what the tensors held now.
  nnops::ops::Attrs attrs(1);
  attrs[0].b = useLocking;
  return nnops::acl::phase_one(kPhase1, kPhase2, nnops::power_sign::prepare,
                               {{"varRef", varRef, true},
                                {"mRef", mRef, true},
                                {"lr", lr, true},
                                {"logbase", logbase, true},
                                {"signDecay", signDecay, true},
                                {"beta", beta, true},
                                {"grad", grad, true}},
                               attrs, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnInplaceApplyPowerSign(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                  aclrtStream stream) {
  return nnops::acl::launch(kPhase2, workspace, workspaceSize, executor, stream);
}
