// aclnnGroupNormBackward: CANN's signature bound to the descriptor's tensors and attributes; the two phases are
// the generic ones (src/acl/adapter.hpp, executor.hpp). What CANN checks beyond the C++ API: outputMask (present,
// three entries), mean, rstd, gamma, gradGammaOut, gradBetaOut all in one dtype, and N, C, HxW consistent with
// gradOut; CANN takes gradOut, input and gradInput by element count, so a contiguous tensor whose dims are not
// [N, C, ...] is read as [N, C, HxW].
#include "aclnnop/aclnn_group_norm_backward.h"

#include <string>

#include "src/acl/adapter.hpp"
#include "src/acl/error.hpp"
#include "src/acl/executor.hpp"
#include "src/acl/tensor.hpp"
#include "src/core/check.hpp"
#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"

namespace {

constexpr const char* kPhase1 = "aclnnGroupNormBackwardGetWorkspaceSize";
constexpr const char* kPhase2 = "aclnnGroupNormBackward";
const char* const kAclNames[] = {"gradOut", "input",     "mean",         "rstd",
                                 "gamma",   "gradInput", "gradGammaOut", "gradBetaOut"};

}  // namespace

extern "C" aclnnStatus aclnnGroupNormBackwardGetWorkspaceSize(const aclTensor* gradOut, const aclTensor* input,
                                                              const aclTensor* mean, const aclTensor* rstd,
                                                              const aclTensor* gamma, int64_t N, int64_t C, int64_t HxW,
                                                              int64_t group, const aclBoolArray* outputMask,
                                                              aclTensor* gradInput, aclTensor* gradGammaOut,
                                                              aclTensor* gradBetaOut, uint64_t* workspaceSize,
                                                              aclOpExecutor** executor) {
  using namespace nnops;
  if (outputMask == nullptr) {
    if (workspaceSize) *workspaceSize = 0;
    if (executor) *executor = nullptr;
    return acl::fail(ACLNN_ERR_PARAM_NULLPTR, kPhase1, "outputMask is null");
  }
  if (outputMask->values.size() != 3) {
    if (workspaceSize) *workspaceSize = 0;
    if (executor) *executor = nullptr;
    return acl::fail(ACLNN_ERR_PARAM_INVALID, kPhase1,
                     "outputMask has " + std::to_string(outputMask->values.size()) +
                         " entries; expected 3 (gradInput, gradGammaOut, gradBetaOut)");
  }
  const std::vector<bool>& mask = outputMask->values;
  ops::Attrs attrs(2);
  attrs[gn_bwd::kNumGroups].i = group;
  attrs[gn_bwd::kOutputMask].mask = mask;
  auto cann_rules = [&](TensorView* v) -> Status {
    // mean's dtype governs rstd, gamma, gradGammaOut and gradBetaOut.
    for (int i : {gn_bwd::kRstd, gn_bwd::kGamma, gn_bwd::kDgamma, gn_bwd::kDbeta}) {
      if (v[i].is_none() || v[i].dtype() == v[gn_bwd::kMean].dtype()) continue;
      if (i >= gn_bwd::kDx && !mask[i - gn_bwd::kDx]) continue;
      return Status(StatusCode::kInvalidArgument, std::string(kAclNames[i]) + " has dtype " + dtype_name(v[i].dtype()) +
                                                      "; expected " + dtype_name(v[gn_bwd::kMean].dtype()) +
                                                      " (the dtype of mean)");
    }
    // N, C and HxW come from the caller: their product is checked for overflow before any use.
    int64_t nc = 0, nchw = 0;
    if (N < 0 || C < 0 || HxW < 0 || __builtin_mul_overflow(N, C, &nc) || __builtin_mul_overflow(nc, HxW, &nchw)) {
      return Status(StatusCode::kInvalidArgument, "N * C * HxW overflows or a factor is negative");
    }
    for (int i : {gn_bwd::kDy, gn_bwd::kX, gn_bwd::kDx}) {
      TensorView& t = v[i];
      if (t.is_none() || (i == gn_bwd::kDx && !mask[0])) continue;
      if (t.numel() != nchw) {
        return Status(StatusCode::kInvalidArgument, std::string(kAclNames[i]) + " has " + std::to_string(t.numel()) +
                                                        " elements; expected N * C * HxW = " + std::to_string(nchw));
      }
      int64_t hw = 0;  // an overflowing product of the trailing dims is not HxW
      const bool nc_dims = gn::trailing_product(t, &hw) && t.rank() >= 2 && t.dim(0) == N && t.dim(1) == C && hw == HxW;
      if (!nc_dims) {
        if (!t.is_contiguous()) {
          return Status(StatusCode::kInvalidArgument, std::string(kAclNames[i]) + " has shape " + t.shape_string() +
                                                          ", not [N, C, ...] = [" + std::to_string(N) + ", " +
                                                          std::to_string(C) + ", ...], and is not contiguous");
        }
        const int64_t dims[3] = {N, C, HxW};
        t = TensorView::contiguous(t.data(), t.dtype(), dims, 3);
      }
    }
    return Status::ok();
  };
  return acl::phase_one(kPhase1, kPhase2, gn_bwd::prepare,
                        {{kAclNames[0], gradOut, true},
                         {kAclNames[1], input, true},
                         {kAclNames[2], mean, true},
                         {kAclNames[3], rstd, true},
                         {kAclNames[4], gamma, false},
                         {kAclNames[5], gradInput, mask[0]},
                         {kAclNames[6], gradGammaOut, mask[1]},
                         {kAclNames[7], gradBetaOut, mask[2]}},
                        attrs, workspaceSize, executor, cann_rules);
}

extern "C" aclnnStatus aclnnGroupNormBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                              aclrtStream stream) {
  return nnops::acl::launch(kPhase2, workspace, workspaceSize, executor, stream);
}
