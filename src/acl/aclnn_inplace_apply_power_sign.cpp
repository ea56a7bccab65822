// aclnnInplaceApplyPowerSign: the two CANN phases over the C++ API's check -> make_plan -> run.
#include "aclnnop/aclnn_inplace_apply_power_sign.h"

#include <memory>
#include <new>

#include "nnops/context.hpp"
#include "src/acl/error.hpp"
#include "src/acl/executor.hpp"
#include "src/acl/tensor.hpp"
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
  using namespace nnops;
  using namespace nnops::acl;
  return guard_aclnn(kPhase1, [&]() -> aclnnStatus {
    if (workspaceSize != nullptr) *workspaceSize = 0;
    if (executor != nullptr) *executor = nullptr;
    if (aclnnStatus st = check_not_null(kPhase1, {{"varRef", varRef},
                                                  {"mRef", mRef},
                                                  {"lr", lr},
                                                  {"logbase", logbase},
                                                  {"signDecay", signDecay},
                                                  {"beta", beta},
                                                  {"grad", grad},
                                                  {"workspaceSize", workspaceSize},
                                                  {"executor", executor}})) {
      return st;
    }
    const struct {
      const char* name;
      const aclTensor* t;
    } tensors[] = {{"varRef", varRef},       {"mRef", mRef}, {"lr", lr},    {"logbase", logbase},
                   {"signDecay", signDecay}, {"beta", beta}, {"grad", grad}};
    TensorView v[7];
    for (int i = 0; i < 7; ++i) {
      if (Status s = to_view(tensors[i].name, tensors[i].t, &v[i]); !s) return fail_status(kPhase1, s);
    }
    // NB: check() reads the four scalars (to validate beta's range and finiteness); the plan keeps those
    // values, so the executor runs with what the tensors held now.
    power_sign::Args args;
    if (Status s = power_sign::check(v[0], v[1], v[2], v[3], v[4], v[5], v[6], useLocking, &args); !s) {
      return fail_status(kPhase1, s);
    }

    std::unique_ptr<Executor> e(new (std::nothrow) Executor);
    if (!e) return fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, kPhase1, "out of memory creating the executor");
    e->api = kPhase2;
    e->phase_one = kPhase1;
    // Only the tensors the kernel touches are pinned: the scalars were read above.
    for (int i : {0, 1, 6}) {
      if (Status s = add_operand(tensors[i].name, v[i], &e->operands); !s) return fail_status(kPhase1, s);
    }
    if (args.numel > 0) {
      const power_sign::Plan plan = power_sign::make_plan(args, Context{});
      e->kernel = [plan, args](void*) { power_sign::run(plan, args); };
    }
    *workspaceSize = 0;
    *executor = register_executor(std::move(e));
    return ACLNN_SUCCESS;
  });
}

extern "C" aclnnStatus aclnnInplaceApplyPowerSign(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                  aclrtStream stream) {
  return nnops::acl::launch(kPhase2, workspace, workspaceSize, executor, stream);
}
