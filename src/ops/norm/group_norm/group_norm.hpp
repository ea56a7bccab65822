// GroupNorm (CANN aclnnGroupNorm): group normalization, forward. Semantics and bounds: docs/semantics.md.
//
// x is [N, C, *] (rank 2 to 8; HxW = the product of the dims after C, 1 if none), split into num_groups groups
// of C/num_groups channels. For each (n, g), over its M = (C/num_groups)*HxW elements:
//
//   mean  = sum(x) / M
//   var   = sum((x - mean)^2) / M              (biased, as CANN and PyTorch)
//   rstd  = 1 / sqrt(var + eps)
//   out   = (x - mean) * rstd * gamma[c] + beta[c]
//
// Sums are accumulated in float64, the variance in one pass (sums of x - K and (x - K)^2, K = 0 or the group's first
// element) certified within 2^-30, or else in two passes (never an uncertified E[x^2] - E[x]^2; docs/semantics.md),
// in an order that depends on the shape alone: results are
// bitwise identical for every thread count, every SIMD target and for dense and strided layouts of the same values.
#pragma once

#include <cstdint>

#include "nnops/context.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"

namespace nnops {

/// Computes out, mean and rstd. x, out: one dtype T (float32, float16 or bfloat16) and one shape [N, C, *].
/// gamma, beta: [C] in T or float32, or TensorView::none() (gamma = 1, beta = 0). mean, rstd: [N, num_groups],
/// both in T or both in float32 (what a backward pass should keep for half types). num_groups > 0 divides C;
/// eps > 0 and finite. Any strides; out must not overlap an input. Empty tensors succeed and write nothing.
/// On error nothing is written and the Status names the argument.
Status group_norm(const TensorView& x, const TensorView& gamma, const TensorView& beta, int64_t num_groups, double eps,
                  const TensorView& out, const TensorView& mean, const TensorView& rstd, const Context& ctx = {});

}  // namespace nnops
