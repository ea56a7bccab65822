// C++ API of InplaceApplyPowerSign: check -> plan -> run.
#include "nnops/ops/inplace_apply_power_sign.hpp"

#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"

namespace nnops {

Status inplace_apply_power_sign(const TensorView& var, const TensorView& m, const TensorView& lr,
                                const TensorView& logbase, const TensorView& sign_decay, const TensorView& beta,
                                const TensorView& grad, bool use_locking, const Context& ctx) {
  power_sign::Args args;
  if (Status st = power_sign::check(var, m, lr, logbase, sign_decay, beta, grad, use_locking, &args); !st) return st;
  // Empty tensors are fully validated above (scalars included) and then leave everything untouched.
  if (args.numel == 0) return Status::ok();
  power_sign::run(power_sign::make_plan(args, ctx), args);
  return Status::ok();
}

}  // namespace nnops
