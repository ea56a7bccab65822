// C++ API entry point: check -> plan -> run.
#include "nnops/ops/group_normalization_grad.hpp"

#include <new>
#include <vector>

#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"

namespace nnops {

Status group_normalization_grad(const TensorView& x, const TensorView& dy, const TensorView& gamma,
                                const TensorView& mean, const TensorView& rstd, const TensorView& dx,
                                const Context& ctx) {
  gn_grad::Args a;
  if (Status s = gn_grad::check(x, dy, gamma, mean, rstd, dx, &a); !s) return s;
  if (a.numel() == 0) return Status::ok();
  const gn_grad::Plan plan = gn_grad::make_plan(a, ctx);
  try {
    // Small: two doubles per 2048-element block, and only when threads share groups.
    std::vector<double> workspace(plan.workspace_bytes / sizeof(double));
    gn_grad::run(plan, a, workspace.data());
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kInternal, std::string(gn_grad::kOpName) + ": out of memory for the " +
                                             std::to_string(plan.workspace_bytes) + "-byte workspace");
  }
  return Status::ok();
}

}  // namespace nnops
