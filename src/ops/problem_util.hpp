// Helpers for the descriptors' problem generators (src/ops/*/*/*_desc.cpp) and for tools: deterministic
// random fills and problem assembly.
#pragma once

#include <cstdint>
#include <vector>

#include "src/core/host_buffer.hpp"
#include "src/ops/op_desc.hpp"

namespace nnops::ops {

/// Fills b with uniform values in [lo, hi), rounded to b's dtype; deterministic for a seed whatever the thread
/// count (each element's value depends on the seed and its index alone), parallel.
void fill_uniform(detail::HostBuffer& b, uint64_t seed, float lo, float hi);

/// Value number `i` of the stream `seed`, uniform in [0, 1) (what fill_uniform uses).
double uniform01(uint64_t seed, uint64_t i);

/// A problem with zero-filled tensors: shapes from d.shapes(spec.shape, attrs), dtypes from each tensor's
/// rule (kTOrF32 tensors in T when spec.aux_like_t, else float32), attrs = spec.attrs or d.attrs_for(shape).
/// Optional tensors are present.
Problem empty_problem(const OpDesc& d, const ProblemSpec& spec);

/// The value of scalar tensor `i` for this spec: spec.scalars[i] unless absent or NaN, else the default.
double scalar_value(const OpDesc& d, const ProblemSpec& spec, int i);

}  // namespace nnops::ops
