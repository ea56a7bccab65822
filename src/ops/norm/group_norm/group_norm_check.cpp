// Validation for GroupNorm, in CANN's order: per tensor (null, rank, strides), dtypes, attributes, shapes,
// memory overlap. Nothing here reads tensor data.
#include <cmath>
#include <cstdio>
#include <string>

#include "src/core/check.hpp"
#include "src/core/layout.hpp"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"

namespace nnops::gn {
namespace {

const char* const kNames[kNumTensors] = {"x", "gamma", "beta", "out", "mean", "rstd"};

std::string dims(std::initializer_list<int64_t> v) {
  std::string s = "[";
  for (int64_t d : v) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
  return s + "]";
}

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

Status check(const TensorView* t, const ops::Attrs& attrs, Args* out) {
  const char* op = kOpName;
  const bool has_gamma = !t[kGamma].is_none(), has_beta = !t[kBeta].is_none();
  for (int i = 0; i < kNumTensors; ++i) {
    if ((i == kGamma && !has_gamma) || (i == kBeta && !has_beta)) continue;
    int64_t numel;
    if (Status s = detail::check_tensor(op, kNames[i], t[i], &numel); !s) return s;
  }

  const TensorView &x = t[kX], &mean = t[kMean], &rstd = t[kRstd];
  const DType dt = x.dtype();
  if (Status s = detail::check_dtype(op, "out", t[kOut], dt, "(the dtype of x)"); !s) return s;
  for (int i : {kGamma, kBeta, kMean}) {
    if (t[i].is_none() || t[i].dtype() == dt || t[i].dtype() == DType::kFloat32) continue;
    return detail::invalid_arg(op, std::string(kNames[i]) + " has dtype " + dtype_name(t[i].dtype()) + "; expected " +
                                       dtype_name(dt) + " (the dtype of x) or float32");
  }
  if (Status s = detail::check_dtype(op, "rstd", rstd, mean.dtype(), "(the dtype of mean)"); !s) return s;

  if (x.rank() < 2) {
    return detail::invalid_arg(op, "x has shape " + x.shape_string() + " (rank " + std::to_string(x.rank()) +
                                       "); expected rank 2 to 8: [N, C, ...]");
  }
  const int64_t n = x.dim(0), c = x.dim(1);
  const int64_t groups = attrs[kNumGroups].i;
  const double eps = attrs[kEps].f;
  if (groups <= 0 || c % groups != 0) {
    return detail::invalid_arg(
        op, "num_groups is " + std::to_string(groups) + "; expected a positive divisor of C = " + std::to_string(c));
  }
  if (!(eps > 0) || !std::isfinite(eps)) {
    return detail::invalid_arg(op, "eps is " + format_value(eps) + "; expected a finite value > 0");
  }

  if (Status s = detail::check_same_shape(op, "out", t[kOut], "x", x); !s) return s;
  for (int i : {kGamma, kBeta}) {
    if (t[i].is_none()) continue;
    if (t[i].rank() != 1 || t[i].dim(0) != c) {
      return detail::invalid_arg(
          op, std::string(kNames[i]) + " has shape " + t[i].shape_string() + "; expected [C] = " + dims({c}));
    }
  }
  for (int i : {kMean, kRstd}) {
    if (t[i].rank() != 2 || t[i].dim(0) != n || t[i].dim(1) != groups) {
      return detail::invalid_arg(op, std::string(kNames[i]) + " has shape " + t[i].shape_string() +
                                         "; expected [N, num_groups] = " + dims({n, groups}));
    }
  }

  // Outputs: each element its own address, and no byte shared with an input or another output.
  for (int o : {kOut, kMean, kRstd}) {
    if (Status s = detail::check_output_layout(op, kNames[o], t[o]); !s) return s;
    for (int i = 0; i < kNumTensors; ++i) {
      if (i == o || (i == kOut && o != kOut) || t[i].is_none()) continue;
      if (detail::overlaps(t[o], t[i])) return detail::overlap_error(op, kNames[o], kNames[i]);
    }
  }

  Args a;
  a.x = x.data();
  a.out = t[kOut].data();
  a.dtype = dt;
  a.n = n;
  a.c = c;
  int64_t hw = 1;
  for (int i = 2; i < x.rank(); ++i) hw *= x.dim(i);  // no overflow: check_tensor bounded x's element count
  a.hw = hw;
  a.groups = groups;
  a.eps = eps;
  a.gamma = t[kGamma];
  a.beta = t[kBeta];
  a.mean = mean;
  a.rstd = rstd;
  *out = a;
  return Status::ok();
}

}  // namespace nnops::gn
