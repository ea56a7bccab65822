// NNOPS_DYNAMIC_DISPATCH(FUNC, dtype): HWY_DYNAMIC_DISPATCH(FUNC) with one exception, float32 data on a CPU where
// detail::float32_on_avx2() says AVX2 is the faster target than AVX-512 (AMD Zen 4). Include it after
// hwy/highway.h in a kernel's translation unit, inside `#if HWY_ONCE`, beside HWY_EXPORT(FUNC): the index it
// computes belongs to that unit's dispatch table (HWY_CHOSEN_TARGET_MASK_TARGETS is the unit's compiled targets).
#pragma once

#include <cstddef>

#include "hwy/highway.h"
#include "nnops/tensor_view.hpp"
#include "src/core/check.hpp"

namespace nnops::detail {

// The entry of an HWY_EXPORT table to call for `dtype`: the one HWY_DYNAMIC_DISPATCH would call (its target chosen
// first where nothing has chosen it yet, as Highway's own first call does), or AVX2's in its place where that is an
// AVX-512 target, the data float32 and float32_on_avx2() holds, unless force_isa_for_testing pinned the target (a
// test of every target then runs the AVX-512 kernels too). AVX2 is there whenever AVX-512 is: a cap
// (NNOPS_MAX_CPU_ISA) only removes targets above the one it names.
inline size_t dispatch_index(DType dtype) {
  hwy::ChosenTarget& chosen = hwy::GetChosenTarget();
  if (!chosen.IsInitialized()) chosen.Update(hwy::SupportedTargets());
  size_t index = chosen.GetIndex();
#if HWY_ARCH_X86 && (HWY_TARGETS & HWY_AVX2) && (HWY_TARGETS & (HWY_AVX3 | HWY_AVX3_DL))
  if (dtype == DType::kFloat32 && float32_on_avx2() && !isa_forced()) {
    const size_t avx2 = hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(HWY_CHOSEN_TARGET_SHIFT(HWY_AVX2)));
    if (index < avx2) index = avx2;  // a lower index is a better target: AVX-512's
  }
#else
  (void)dtype;
#endif
  return index;
}

}  // namespace nnops::detail

#define NNOPS_DYNAMIC_DISPATCH(FUNC, DTYPE) (HWY_DISPATCH_TABLE(FUNC)[::nnops::detail::dispatch_index(DTYPE)])
