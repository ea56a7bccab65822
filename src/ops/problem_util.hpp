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

/// Product of the dimensions from `from` on (1 for none): HxW of an [N, C, *] shape.
int64_t dims_from(const std::vector<int64_t>& shape, std::size_t from);

/// The shape of a view as a vector (empty when its rank is out of range).
std::vector<int64_t> shape_of(const TensorView& v);

/// Group statistics as a forward pass would have saved them: per group of x.numel()/mean.numel() consecutive
/// elements, mean and 1/sqrt(var + eps) in float64 (two passes), rounded to their dtypes.
void fill_group_stats(const detail::HostBuffer& x, detail::HostBuffer& mean, detail::HostBuffer& rstd,
                      double eps = 1e-5);

/// The bytes that the bench's in-cache size classes move a call on this machine: "l2" three quarters of one core's
/// L2, "l3" half the L3 (768 KiB and 16 MiB on a CPU with a 1 MiB L2 and a 32 MiB L3), so that each class is in its
/// cache on every CPU (a fixed 768 KiB was past the L2 of a Zen 2 core, 512 KiB).
double bench_l2_bytes();
double bench_l3_bytes();

/// The benchmark cases of a GroupNorm-family operator that moves `arrays` tensors of x's size: L2- and
/// L3-resident [N, 64, *] (bench_l2_bytes, bench_l3_bytes) and, beyond cache, Stable Diffusion's first GroupNorm shape
/// [N, 320, 64, 64] (groups of 10 channels, 160 KiB in float32: a group fits L2) with N so that a call moves at least 1
/// GiB, row-major and channels-last.
std::vector<BenchCase> group_norm_bench_cases(DType t, int arrays);

/// The value of scalar tensor `i` for this spec: spec.scalars[i] unless absent or NaN, else the default.
double scalar_value(const OpDesc& d, const ProblemSpec& spec, int i);

}  // namespace nnops::ops
