// C++ API of InplaceApplyPowerSign and its prepare: check -> plan -> kernel closure.
#include "nnops/ops/inplace_apply_power_sign.hpp"

#include "src/core/layout.hpp"
#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"

namespace nnops {
namespace power_sign {

Status prepare(const TensorView* t, const ops::Attrs& attrs, const Context& ctx, ops::Prepared* out) {
  const bool use_locking = !attrs.empty() && attrs[0].b;
  Args a;
  if (Status s = check(t[kVar], t[kM], t[kLr], t[kLogbase], t[kSignDecay], t[kBeta], t[kGrad], use_locking, &a); !s) {
    return s;
  }
  // Empty tensors are fully validated above (scalars included) and then leave everything untouched.
  if (a.numel == 0) return Status::ok();
  const Plan plan = make_plan(a, ctx);
  // The scalars were read by check (the plan keeps their values): only var, m and grad are touched later.
  out->touched = {kVar, kM, kGrad};
  // The update is elementwise: var, m and grad in one dense layout (any order of the dims) pair up element by
  // element in memory, so the kernel runs over them as flat arrays from their lowest address (data(), as
  // strides are non-negative). Any other layout is updated through dense copies.
  const bool flat = detail::same_layout(t[kVar], t[kM]) && detail::same_layout(t[kVar], t[kGrad]) &&
                    detail::is_dense(t[kVar]);
  detail::PackPlan pack;
  const int v = pack.add(t[kVar], flat, true, true), m = pack.add(t[kM], flat, true, true),
            g = pack.add(t[kGrad], flat, true, false);
  out->workspace_bytes = pack.workspace_bytes();
  out->run = [plan, a, pack, v, m, g](void* ws) {
    std::unique_lock<std::mutex> hold;
    if (a.use_locking) hold = std::unique_lock<std::mutex>(var_lock(a.var));
    if (pack.workspace_bytes() == 0) return run(plan, a);
    Args b = a;
    b.var = pack.resolve(v, ws).data();
    b.m = pack.resolve(m, ws).data();
    b.grad = pack.resolve(g, ws).data();
    pack.gather(ws, plan.num_threads);
    run(plan, b);
    pack.scatter(ws, plan.num_threads);
  };
  return Status::ok();
}

}  // namespace power_sign

Status inplace_apply_power_sign(const TensorView& var, const TensorView& m, const TensorView& lr,
                                const TensorView& logbase, const TensorView& sign_decay, const TensorView& beta,
                                const TensorView& grad, bool use_locking, const Context& ctx) {
  const TensorView t[] = {var, m, lr, logbase, sign_decay, beta, grad};
  ops::Attrs attrs(1);
  attrs[0].b = use_locking;
  return ops::run_prepared(power_sign::kOpName, power_sign::prepare, t, attrs, ctx);
}

}  // namespace nnops
