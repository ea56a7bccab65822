// Validation for GroupNormalizationGrad, in CANN's order: per-tensor (null, rank, strides), dtypes, shapes,
// memory overlap. Nothing here reads tensor data.
#include <string>

#include "src/core/check.hpp"
#include "src/core/layout.hpp"
#include "src/ops/norm/group_normalization_grad/group_normalization_grad_impl.hpp"

namespace nnops::gn_grad {

Status check(const TensorView& x, const TensorView& dy, const TensorView& gamma, const TensorView& mean,
             const TensorView& rstd, const TensorView& dx, Args* out) {
  const char* op = kOpName;
  const struct {
    const char* name;
    const TensorView* t;
  } all[] = {{"x", &x}, {"dy", &dy}, {"gamma", &gamma}, {"mean", &mean}, {"rstd", &rstd}, {"dx", &dx}};
  for (const auto& [name, view] : all) {
    int64_t numel;
    Status s = detail::check_tensor(op, name, *view, &numel);
    if (!s) return s;
  }

  const DType t = x.dtype();
  for (const auto& [name, view] : {std::pair{"dy", &dy}, std::pair{"gamma", &gamma}, std::pair{"dx", &dx}}) {
    Status s = detail::check_dtype(op, name, *view, t, "(the dtype of x)");
    if (!s) return s;
  }
  if (mean.dtype() != t && mean.dtype() != DType::kFloat32) {
    return detail::invalid_arg(op, std::string("mean has dtype ") + dtype_name(mean.dtype()) + "; expected " +
                                       dtype_name(t) + " (the dtype of x) or float32");
  }
  if (Status s = detail::check_dtype(op, "rstd", rstd, mean.dtype(), "(the dtype of mean)"); !s) return s;

  if (x.rank() < 3) {
    return detail::invalid_arg(op, "x has shape " + x.shape_string() + " (rank " + std::to_string(x.rank()) +
                                       "); expected rank >= 3: [N, G, d2, ...]");
  }
  for (const auto& [name, view] : {std::pair{"dy", &dy}, std::pair{"gamma", &gamma}, std::pair{"dx", &dx}}) {
    Status s = detail::check_same_shape(op, name, *view, "x", x);
    if (!s) return s;
  }
  const int64_t n = x.dim(0), g = x.dim(1);
  const std::string ng = "[" + std::to_string(n) + ", " + std::to_string(g) + "]";
  for (const auto& [name, view] : {std::pair{"mean", &mean}, std::pair{"rstd", &rstd}}) {
    if (view->rank() != 2 || view->dim(0) != n || view->dim(1) != g) {
      return detail::invalid_arg(
          op, std::string(name) + " has shape " + view->shape_string() + "; expected [N, G] = " + ng);
    }
  }

  if (Status s = detail::check_output_layout(op, "dx", dx); !s) return s;
  // dx may alias dy exactly (in place: the same memory in the same layout); any other overlap of the output
  // with an input is an error.
  const bool dx_is_dy = dx.data() == dy.data() && detail::same_layout(dx, dy);
  if (!dx_is_dy && detail::overlaps(dx, dy)) return detail::overlap_error(op, "dx", "dy");
  for (const auto& [name, view] :
       {std::pair{"x", &x}, std::pair{"gamma", &gamma}, std::pair{"mean", &mean}, std::pair{"rstd", &rstd}}) {
    if (detail::overlaps(dx, *view)) return detail::overlap_error(op, "dx", name);
  }

  Args a;
  a.x = x.data();
  a.dy = dy.data();
  a.gamma = gamma.data();
  a.mean = mean.data();
  a.rstd = rstd.data();
  a.dx = dx.data();
  a.dtype = t;
  a.stat_dtype = mean.dtype();
  a.n = n;
  a.g = g;
  // M alone can overflow even when numel is 0 (N or G = 0), so it gets its own check.
  int64_t m = 1;
  for (int i = 2; i < x.rank(); ++i) {
    if (__builtin_mul_overflow(m, x.dim(i), &m)) {
      return detail::invalid_arg(op, "x has shape " + x.shape_string() + "; its group size M overflows int64");
    }
  }
  a.m = m;
  *out = a;
  return Status::ok();
}

}  // namespace nnops::gn_grad
