// aclnnGroupNormalizationGrad: the two CANN phases over the C++ API's check -> make_plan -> run.
#include "aclnnop/aclnn_group_normalization_grad.h"

#include <memory>
#include <new>

#include "nnops/context.hpp"
#include "src/acl/error.hpp"
#include "src/acl/executor.hpp"
#include "src/acl/tensor.hpp"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"

namespace {
constexpr const char* kPhase1 = "aclnnGroupNormalizationGradGetWorkspaceSize";
constexpr const char* kPhase2 = "aclnnGroupNormalizationGrad";
}  // namespace

extern "C" aclnnStatus aclnnGroupNormalizationGradGetWorkspaceSize(const aclTensor* x, const aclTensor* dy,
                                                                   const aclTensor* gamma, const aclTensor* mean,
                                                                   const aclTensor* rstd, aclTensor* dx,
                                                                   uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace nnops;
  using namespace nnops::acl;
  return guard_aclnn(kPhase1, [&]() -> aclnnStatus {
    if (workspaceSize != nullptr) *workspaceSize = 0;
    if (executor != nullptr) *executor = nullptr;
    if (aclnnStatus st = check_not_null(kPhase1, {{"x", x},
                                                  {"dy", dy},
                                                  {"gamma", gamma},
                                                  {"mean", mean},
                                                  {"rstd", rstd},
                                                  {"dx", dx},
                                                  {"workspaceSize", workspaceSize},
                                                  {"executor", executor}})) {
      return st;
    }
    const struct {
      const char* name;
      const aclTensor* t;
    } tensors[] = {{"x", x}, {"dy", dy}, {"gamma", gamma}, {"mean", mean}, {"rstd", rstd}, {"dx", dx}};
    TensorView v[6];
    for (int i = 0; i < 6; ++i) {
      if (Status s = to_view(tensors[i].name, tensors[i].t, &v[i]); !s) return fail_status(kPhase1, s);
    }
    gn_grad::Args args;
    if (Status s = gn_grad::check(v[0], v[1], v[2], v[3], v[4], v[5], &args); !s) return fail_status(kPhase1, s);

    std::unique_ptr<Executor> e(new (std::nothrow) Executor);
    if (!e) return fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, kPhase1, "out of memory creating the executor");
    e->api = kPhase2;
    e->phase_one = kPhase1;
    for (int i = 0; i < 6; ++i) {
      if (Status s = add_operand(tensors[i].name, v[i], &e->operands); !s) return fail_status(kPhase1, s);
    }
    if (args.numel() > 0) {  // empty tensors: validated, nothing to compute (as the C++ API)
      const gn_grad::Plan plan = gn_grad::make_plan(args, Context{});
      e->workspace_bytes = plan.workspace_bytes;
      e->kernel = [plan, args](void* workspace) { gn_grad::run(plan, args, workspace); };
    }
    *workspaceSize = e->workspace_bytes;
    *executor = register_executor(std::move(e));
    return ACLNN_SUCCESS;
  });
}

extern "C" aclnnStatus aclnnGroupNormalizationGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream) {
  return nnops::acl::launch(kPhase2, workspace, workspaceSize, executor, stream);
}
