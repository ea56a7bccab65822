// GroupNormalizationGrad (CANN OpType GroupNormalizationGrad): the input gradient of group
// normalization, exactly as CANN ops-nn defines it.
//
// Layout: x, dy, gamma and dx are [N, G, d2, ..., dk] (rank >= 3); each of the N*G groups is an
// independent row of M = d2*...*dk elements. mean and rstd are [N, G]. Per group:
//
//   xhat_i = (x_i - mean) * rstd
//   s1     = sum_i dy_i * gamma_i
//   s2     = sum_i dy_i * gamma_i * xhat_i
//   dx_i   = (rstd / M) * gamma_i * (M * dy_i - s1 - xhat_i * s2)
//
// NOTE: this is the true gradient of GroupNorm only when gamma is all ones. With a general gamma the
// true input gradient is (rstd/M) * (M*dy_i*gamma_i - s1 - xhat_i*s2); nnops computes CANN's formula
// because nnops reproduces CANN.
#pragma once

#include "nnops/context.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"

namespace nnops {

/// Computes dx. x, dy, gamma, dx: one dtype T (float32, float16 or bfloat16) and one shape of rank >= 3.
/// mean, rstd: shape [N, G], dtype T or float32 (both the same). dx may be the very buffer of dy (in
/// place); any other overlap of dx with an input is an error. Empty tensors succeed without writing.
/// Sums are accumulated in float64 in an order fixed by the shape, so dx is bitwise identical for every
/// thread count. On error nothing is written and the Status names the argument.
Status group_normalization_grad(const TensorView& x, const TensorView& dy, const TensorView& gamma,
                                const TensorView& mean, const TensorView& rstd, const TensorView& dx,
                                const Context& ctx = {});

}  // namespace nnops
