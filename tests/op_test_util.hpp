// Test helpers over the operator descriptors, shared by the generic sweep and the operators' own tests: seeded
// problems, calls, bitwise comparison of outputs, the reference check on every SIMD target.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "src/ops/op_desc.hpp"

namespace nnops::testing {

/// A seeded problem of `d` with this dtype and main shape: attributes from d.attrs_for(shape), then `edit`.
ops::Problem make_problem(const ops::OpDesc& d, DType t, const std::vector<int64_t>& shape, uint64_t seed,
                          bool aux_like_t, const std::function<void(ops::Attrs&)>& edit = nullptr);

/// Runs the views through the descriptor's prepare (the path of both APIs).
Status run(const ops::OpDesc& d, const std::vector<TensorView>& v, const ops::Attrs& a, int threads = 0);
Status run(const ops::OpDesc& d, ops::Problem& p, int threads = 0);

/// The same bytes in every tensor the operator writes (outputs and in-place arguments).
::testing::AssertionResult same_outputs(const ops::OpDesc& d, const ops::Problem& a, const ops::Problem& b);

/// Runs `call` on a copy of `before` on every SIMD target and checks the result against the float64 reference
/// (d.verify; a target whose outputs have the bits of a target already checked is that target's result); returns
/// the worst error/bound ratio.
double expect_matches_reference(const ops::OpDesc& d, const ops::Problem& before,
                                const std::function<Status(ops::Problem&)>& call);

}  // namespace nnops::testing
