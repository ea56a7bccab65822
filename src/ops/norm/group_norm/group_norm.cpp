// C++ API entry point and prepare: check -> layout -> plan -> kernel closure.
#include "nnops/ops/group_norm.hpp"

#include "src/core/layout.hpp"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"

namespace nnops {
namespace gn {

Status prepare(const TensorView* t, const ops::Attrs& attrs, const Context& ctx, ops::Prepared* out) {
  Args a;
  if (Status s = check(t, attrs, &a); !s) return s;
  if (a.numel() == 0) return Status::ok();  // nothing is written, mean/rstd included (docs/semantics.md)
  out->touched = {kX, kGamma, kBeta, kOut, kMean, kRstd};
  // x and out both dense row-major, or both channels-last: the kernels read and write them directly. Any
  // other combination runs the row-major kernel on dense copies; the sums are canonical (the same bits in
  // every layout), so the choice never changes a result.
  detail::PackPlan pack;
  int ix, iout;
  if (detail::is_channels_last(t[kX]) && detail::is_channels_last(t[kOut]) && !t[kX].is_contiguous()) {
    a.layout = Layout::kNHWC;
    ix = pack.add(t[kX], true, true, false);
    iout = pack.add(t[kOut], true, false, true);
  } else {
    a.layout = Layout::kNCHW;
    ix = pack.add(t[kX], t[kX].is_contiguous(), true, false);
    iout = pack.add(t[kOut], t[kOut].is_contiguous(), false, true);
  }
  Args at = a;  // where the kernel writes: a packed output's copy is at a 64-byte offset of the workspace
  if (pack.packed(iout)) at.out = nullptr;
  const Plan plan = make_plan(at, ctx);
  const uint64_t pack_bytes = pack.workspace_bytes();
  out->workspace_bytes = pack_bytes + plan.workspace_bytes;
  out->run = [plan, a, pack, ix, iout, pack_bytes](void* ws) {
    Args b = a;
    if (pack_bytes) {
      b.x = pack.resolve(ix, ws).data();
      b.out = pack.resolve(iout, ws).data();
      pack.gather(ws, plan.num_threads);
    }
    run(plan, b, static_cast<unsigned char*>(ws) + pack_bytes);
    if (pack_bytes) pack.scatter(ws, plan.num_threads);
  };
  return Status::ok();
}

}  // namespace gn

Status group_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta, int64_t num_groups, double eps,
                  const TensorView& out, const TensorView& mean, const TensorView& rstd, const Context& ctx) {
  const TensorView t[] = {x, gamma, beta, out, mean, rstd};
  ops::Attrs attrs(2);
  attrs[gn::kNumGroups].i = num_groups;
  attrs[gn::kEps].f = eps;
  return ops::run_prepared(gn::kOpName, gn::prepare, t, attrs, ctx);
}

}  // namespace nnops
