// aclnnGroupNormalizationGrad: CANN's signature bound to the descriptor's tensors; the two phases are the
// generic ones (src/acl/adapter.hpp, executor.hpp).
#include "aclnnop/aclnn_group_normalization_grad.h"

#include "src/acl/adapter.hpp"
#include "src/acl/executor.hpp"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"

namespace {
constexpr const char* kPhase1 = "aclnnGroupNormalizationGradGetWorkspaceSize";
constexpr const char* kPhase2 = "aclnnGroupNormalizationGrad";
}  // namespace

extern "C" aclnnStatus aclnnGroupNormalizationGradGetWorkspaceSize(const aclTensor* x, const aclTensor* dy,
                                                                   const aclTensor* gamma, const aclTensor* mean,
                                                                   const aclTensor* rstd, aclTensor* dx,
                                                                   uint64_t* workspaceSize, aclOpExecutor** executor) {
  return nnops::acl::phase_one(kPhase1, kPhase2, nnops::gn_grad::prepare,
                               {{"x", x, true},
                                {"dy", dy, true},
                                {"gamma", gamma, true},
                                {"mean", mean, true},
                                {"rstd", rstd, true},
                                {"dx", dx, true}},
                               {}, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnGroupNormalizationGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream) {
  return nnops::acl::launch(kPhase2, workspace, workspaceSize, executor, stream);
}
