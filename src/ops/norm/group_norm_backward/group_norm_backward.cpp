// C++ API entry point and prepare: check -> layout -> plan -> kernel closure.
#include "nnops/ops/group_norm_backward.hpp"

#include "src/core/layout.hpp"
#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"

namespace nnops {
namespace gn_bwd {

Status prepare(const TensorView* t, const ops::Attrs& attrs, const Context& ctx, ops::Prepared* out) {
  Args a;
  if (Status s = check(t, attrs, &a); !s) return s;
  out->touched = {kDy, kX, kMean, kRstd, kGamma, kDx, kDgamma, kDbeta};
  if (a.numel() == 0) {
    // Nothing to normalize: dx has no elements, and dgamma and dbeta are sums over nothing.
    if (a.c > 0 && (!a.dgamma.is_none() || !a.dbeta.is_none())) {
      out->run = [a](void*) {
        for (int64_t c = 0; c < a.c; ++c) {
          for (const TensorView* v : {&a.dgamma, &a.dbeta}) {
            if (!v->is_none()) {
              store_from_double(v->data(), v->dtype(), static_cast<size_t>(detail::element_offset(*v, c)), 0.0);
            }
          }
        }
      };
    }
    return Status::ok();
  }
  // dy, x and dx (when computed) all channels-last: the channels-last kernel reads and writes them directly.
  // Otherwise the row-major kernel runs, on dense copies of the tensors that are not dense row-major; the sums
  // are canonical, so the choice never changes a result.
  const bool has_dx = a.dx != nullptr;
  const bool nhwc = detail::is_channels_last(t[kDy]) && detail::is_channels_last(t[kX]) &&
                    (!has_dx || detail::is_channels_last(t[kDx])) && !t[kDy].is_contiguous();
  a.layout = nhwc ? Layout::kNHWC : Layout::kNCHW;
  detail::PackPlan pack;
  const int idy = pack.add(t[kDy], nhwc || t[kDy].is_contiguous(), true, false);
  const int ix = pack.add(t[kX], nhwc || t[kX].is_contiguous(), true, false);
  const int idx = has_dx ? pack.add(t[kDx], nhwc || t[kDx].is_contiguous(), false, true) : -1;
  Args at = a;  // where the kernel writes: a packed dx's copy is at a 64-byte offset of the workspace
  if (idx >= 0 && pack.packed(idx)) at.dx = nullptr;
  const Plan plan = make_plan(at, ctx);
  const uint64_t pack_bytes = pack.workspace_bytes();
  out->workspace_bytes = pack_bytes + plan.workspace_bytes;
  out->run = [plan, a, pack, idy, ix, idx, pack_bytes](void* ws) {
    Args b = a;
    if (pack_bytes) {
      b.dy = pack.resolve(idy, ws).data();
      b.x = pack.resolve(ix, ws).data();
      if (idx >= 0) b.dx = pack.resolve(idx, ws).data();
      pack.gather(ws, plan.num_threads);
    }
    run(plan, b, static_cast<unsigned char*>(ws) + pack_bytes);
    if (pack_bytes) pack.scatter(ws, plan.num_threads);
  };
  return Status::ok();
}

}  // namespace gn_bwd

Status group_norm_backward(const TensorView& dy, const TensorView& x, const TensorView& mean, const TensorView& rstd,
                           const TensorView& gamma, int64_t num_groups, std::array<bool, 3> output_mask,
                           const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta,
                           const Context& ctx) {
  const TensorView t[] = {dy, x, mean, rstd, gamma, dx, dgamma, dbeta};
  ops::Attrs attrs(2);
  attrs[gn_bwd::kNumGroups].i = num_groups;
  attrs[gn_bwd::kOutputMask].mask = {output_mask[0], output_mask[1], output_mask[2]};
  return ops::run_prepared(gn_bwd::kOpName, gn_bwd::prepare, t, attrs, ctx);
}

}  // namespace nnops
