// GroupNormBackward (CANN aclnnGroupNormBackward): the true gradient of GroupNorm (what PyTorch's
// native_group_norm_backward computes), with per-channel gamma. Semantics and bounds: docs/semantics.md.
//
// With xhat = (x - mean) * rstd and, per group (n, g) of M = (C/num_groups)*HxW elements,
// a = sum(dy * gamma[c]) and b = sum(dy * gamma[c] * xhat):
//
//   dx        = rstd * (gamma[c] * dy - (a + xhat * b) / M)
//   dgamma[c] = sum over n and HxW of dy * xhat
//   dbeta[c]  = sum over n and HxW of dy
//
// Sums are accumulated in float64 in an order that depends on the shape alone; dgamma and dbeta reduce over N
// in index order. Results are bitwise identical for every thread count, every SIMD target and for dense and
// strided layouts of the same values.
#pragma once

#include <array>
#include <cstdint>

#include "nnops/context.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"

namespace nnops {

/// Computes the outputs output_mask selects: {dx, dgamma, dbeta}. dy, x, dx: one dtype T (float32, float16 or
/// bfloat16) and one shape [N, C, *] (rank 2 to 8). mean, rstd: N*num_groups elements (e.g. [N, num_groups]),
/// both in T or both in float32. gamma: C elements in T or float32, or TensorView::none() (all ones).
/// dgamma, dbeta: C elements, both in T or both in float32. An output left out by the mask may be
/// TensorView::none() and is not written. dx may be the very buffer of dy (in place); any other overlap of an
/// output with an input or another output is an error. Any strides. num_groups > 0 divides C. Empty inputs
/// succeed: dx has no elements and dgamma, dbeta (sums over nothing) are written as zeros.
/// On error nothing is written and the Status names the argument.
Status group_norm_backward(const TensorView& dy, const TensorView& x, const TensorView& mean, const TensorView& rstd,
                           const TensorView& gamma, int64_t num_groups, std::array<bool, 3> output_mask,
                           const TensorView& dx, const TensorView& dgamma, const TensorView& dbeta,
                           const Context& ctx = {});

}  // namespace nnops
