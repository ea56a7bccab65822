// C++ API entry point and prepare: check -> plan -> kernel closure.
#include "nnops/ops/group_normalization_grad.hpp"

#include "src/core/layout.hpp"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"

namespace nnops {
namespace gn_grad {

Status prepare(const TensorView* t, const ops::Attrs&, const Context& ctx, ops::Prepared* out) {
  Args a;
  if (Status s = check(t[kX], t[kDy], t[kGamma], t[kMean], t[kRstd], t[kDx], &a); !s) return s;
  if (a.numel() == 0) return Status::ok();
  const Plan plan = make_plan(a, ctx);
  // The kernel reads and writes dense row-major buffers; other layouts go through dense copies.
  detail::PackPlan pack;
  int id[kNumTensors];
  for (int i = 0; i < kNumTensors; ++i) id[i] = pack.add(t[i], t[i].is_contiguous(), i != kDx, i == kDx);
  out->touched = {kX, kDy, kGamma, kMean, kRstd, kDx};
  const uint64_t pack_bytes = pack.workspace_bytes();
  out->workspace_bytes = pack_bytes + plan.workspace_bytes;
  if (pack_bytes == 0) {
    out->run = [plan, a](void* ws) { run(plan, a, ws); };
    return Status::ok();
  }
  out->run = [plan, a, pack, id, pack_bytes](void* ws) {
    Args b = a;
    b.x = pack.resolve(id[kX], ws).data();
    b.dy = pack.resolve(id[kDy], ws).data();
    b.gamma = pack.resolve(id[kGamma], ws).data();
    b.mean = pack.resolve(id[kMean], ws).data();
    b.rstd = pack.resolve(id[kRstd], ws).data();
    b.dx = pack.resolve(id[kDx], ws).data();
    pack.gather(ws, plan.num_threads);
    run(plan, b, static_cast<unsigned char*>(ws) + pack_bytes);
    pack.scatter(ws, plan.num_threads);
  };
  return Status::ok();
}

}  // namespace gn_grad

Status group_normalization_grad(const TensorView& x, const TensorView& dy, const TensorView& gamma,
                                const TensorView& mean, const TensorView& rstd, const TensorView& dx,
                                const Context& ctx) {
  const TensorView t[] = {x, dy, gamma, mean, rstd, dx};
  return ops::run_prepared(gn_grad::kOpName, gn_grad::prepare, t, {}, ctx);
}

}  // namespace nnops
