// Test helper shared by the GroupNorm family's plan tests (GroupNorm, GroupNormBackward).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "src/core/check.hpp"

namespace nnops::testing {

// For a streamed float32 call beyond overlap_passes' limit whose statistics pass reads `input_bytes`: row-major, the
// plan overlaps its passes exactly where detail::overlap_prefetched_passes says so, and then prefetches; channels-last
// it never does, and prefetches as detail::software_prefetch says.
template <class Args, class MakePlan>
void expect_prefetched_pipeline_row_major_only(Args a, uint64_t input_bytes, const MakePlan& make_plan) {
  a.layout = decltype(a.layout)::kNCHW;
  auto p = make_plan(a);
  const bool prefetched = detail::overlap_prefetched_passes(input_bytes);
  EXPECT_EQ(p.pipeline, prefetched);
  if (prefetched) {
    EXPECT_TRUE(p.prefetch);
  }
  a.layout = decltype(a.layout)::kNHWC;
  p = make_plan(a);
  EXPECT_FALSE(p.pipeline);
  EXPECT_EQ(p.prefetch, detail::software_prefetch(detail::PrefetchLoop::kGroupStatistics));
}

}  // namespace nnops::testing
