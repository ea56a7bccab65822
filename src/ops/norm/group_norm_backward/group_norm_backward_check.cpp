// Validation for GroupNormBackward, in CANN's order: per tensor (null, rank, strides), dtypes, attributes,
// shapes, memory overlap. Only the outputs output_mask selects are checked (and later written). Nothing here
// reads tensor data.
#include <string>

#include "src/core/check.hpp"
#include "src/core/layout.hpp"
#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"

namespace nnops::gn_bwd {
namespace {

const char* const kNames[kNumTensors] = {"dy", "x", "mean", "rstd", "gamma", "dx", "dgamma", "dbeta"};

Status check_count(const char* name, const TensorView& t, int64_t want, const char* what) {
  if (t.numel() == want) return Status::ok();
  return detail::invalid_arg(kOpName, std::string(name) + " has shape " + t.shape_string() + " (" +
                                          std::to_string(t.numel()) + " elements); expected " + what + " = " +
                                          std::to_string(want) + " elements");
}

}  // namespace

Status check(const TensorView* t, const ops::Attrs& attrs, Args* out) {
  const char* op = kOpName;
  const std::vector<bool>& mask = attrs[kOutputMask].mask;
  if (mask.size() != 3) {
    return detail::invalid_arg(
        op, "output_mask has " + std::to_string(mask.size()) + " entries; expected 3 (dx, dgamma, dbeta)");
  }
  bool used[kNumTensors];
  for (int i = 0; i < kNumTensors; ++i) used[i] = i < kDx ? (i != kGamma || !t[kGamma].is_none()) : mask[i - kDx];
  for (int i = kDx; i < kNumTensors; ++i) {
    if (used[i] && t[i].is_none()) {
      return Status(StatusCode::kNullPointer,
                    std::string(op) + ": " + kNames[i] + " is selected by output_mask but was not given");
    }
  }
  for (int i = 0; i < kNumTensors; ++i) {
    if (!used[i]) continue;
    int64_t numel;
    if (Status s = detail::check_tensor(op, kNames[i], t[i], &numel); !s) return s;
  }

  const TensorView &dy = t[kDy], &x = t[kX];
  const DType dt = dy.dtype();
  if (Status s = detail::check_dtype(op, "x", x, dt, "(the dtype of dy)"); !s) return s;
  if (used[kDx]) {
    if (Status s = detail::check_dtype(op, "dx", t[kDx], dt, "(the dtype of dy)"); !s) return s;
  }
  for (int i : {kMean, kGamma, kDgamma}) {
    if (!used[i] || t[i].dtype() == dt || t[i].dtype() == DType::kFloat32) continue;
    return detail::invalid_arg(op, std::string(kNames[i]) + " has dtype " + dtype_name(t[i].dtype()) + "; expected " +
                                       dtype_name(dt) + " (the dtype of dy) or float32");
  }
  if (Status s = detail::check_dtype(op, "rstd", t[kRstd], t[kMean].dtype(), "(the dtype of mean)"); !s) return s;
  if (used[kDgamma] && used[kDbeta]) {
    if (Status s = detail::check_dtype(op, "dbeta", t[kDbeta], t[kDgamma].dtype(), "(the dtype of dgamma)"); !s) {
      return s;
    }
  } else if (used[kDbeta] && t[kDbeta].dtype() != dt && t[kDbeta].dtype() != DType::kFloat32) {
    return detail::invalid_arg(op, "dbeta has dtype " + std::string(dtype_name(t[kDbeta].dtype())) + "; expected " +
                                       dtype_name(dt) + " (the dtype of dy) or float32");
  }

  if (dy.rank() < 2) {
    return detail::invalid_arg(op, "dy has shape " + dy.shape_string() + " (rank " + std::to_string(dy.rank()) +
                                       "); expected rank 2 to 8: [N, C, ...]");
  }
  if (Status s = detail::check_same_shape(op, "x", x, "dy", dy); !s) return s;
  const int64_t n = dy.dim(0), c = dy.dim(1);
  const int64_t groups = attrs[kNumGroups].i;
  if (groups <= 0 || c % groups != 0) {
    return detail::invalid_arg(
        op, "num_groups is " + std::to_string(groups) + "; expected a positive divisor of C = " + std::to_string(c));
  }
  if (used[kDx]) {
    if (Status s = detail::check_same_shape(op, "dx", t[kDx], "dy", dy); !s) return s;
  }
  if (Status s = check_count("mean", t[kMean], n * groups, "N * num_groups"); !s) return s;
  if (Status s = check_count("rstd", t[kRstd], n * groups, "N * num_groups"); !s) return s;
  for (int i : {kGamma, kDgamma, kDbeta}) {
    if (!used[i]) continue;
    if (Status s = check_count(kNames[i], t[i], c, "C"); !s) return s;
  }

  // Outputs: each element its own address; dx may be exactly dy (in place), nothing else may share memory.
  for (int o = kDx; o < kNumTensors; ++o) {
    if (!used[o]) continue;
    if (Status s = detail::check_output_layout(op, kNames[o], t[o]); !s) return s;
    for (int i = 0; i < kNumTensors; ++i) {
      if (i == o || !used[i] || (i > o && i >= kDx)) continue;  // each pair of outputs once
      if (o == kDx && i == kDy && t[kDx].data() == dy.data() && detail::same_layout(t[kDx], dy)) continue;
      if (detail::overlaps(t[o], t[i])) return detail::overlap_error(op, kNames[o], kNames[i]);
    }
  }

  Args a;
  a.dy = dy.data();
  a.x = x.data();
  a.dx = used[kDx] ? t[kDx].data() : nullptr;
  a.dtype = dt;
  a.n = n;
  a.c = c;
  int64_t hw = 1;
  for (int i = 2; i < dy.rank(); ++i) hw *= dy.dim(i);  // no overflow: check_tensor bounded dy's element count
  a.hw = hw;
  a.groups = groups;
  a.mean = t[kMean];
  a.rstd = t[kRstd];
  a.gamma = used[kGamma] ? t[kGamma] : TensorView::none();
  a.dgamma = used[kDgamma] ? t[kDgamma] : TensorView::none();
  a.dbeta = used[kDbeta] ? t[kDbeta] : TensorView::none();
  *out = a;
  return Status::ok();
}

}  // namespace nnops::gn_bwd
