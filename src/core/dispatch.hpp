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

// The dispatch-table index of the AVX2 target in this build, or 0 (the table's initializer entry, never a target's)
// where there is no AVX2 entry or no AVX-512 entry above it to move from.
#if HWY_ARCH_X86 && (HWY_TARGETS & HWY_AVX2) && (HWY_TARGETS & (HWY_AVX3 | HWY_AVX3_DL))
constexpr size_t lowest_bit_index(uint64_t x) { return (x & 1) ? 0 : 1 + lowest_bit_index(x >> 1); }
inline constexpr size_t kAvx2DispatchIndex = lowest_bit_index(static_cast<uint64_t>(HWY_CHOSEN_TARGET_SHIFT(HWY_AVX2)));
#else
inline constexpr size_t kAvx2DispatchIndex = 0;
#endif

// Where float32 goes given the index `chosen` of the target HWY_DYNAMIC_DISPATCH would call: AVX2's index in place
// of a better target's (a lower index; on x86 only the AVX-512 ones) when `on_avx2` and the target is not pinned
// (`forced`: a test of every target then runs the AVX-512 kernels too). Index 0 (dispatch not initialized, or reset
// by a cap changed on another thread meanwhile) stays 0, Highway's initializer, which chooses afresh. AVX2 is there
// whenever AVX-512 is: Highway's AVX-512 targets require every AVX2 feature, and a cap (NNOPS_MAX_CPU_ISA) only
// removes targets above the one it names, so a cap below AVX2 makes `chosen` larger than AVX2's index.
constexpr size_t float32_dispatch_index(size_t chosen, DType dtype, bool on_avx2, bool forced, size_t avx2) {
  return dtype == DType::kFloat32 && on_avx2 && !forced && avx2 != 0 && chosen != 0 && chosen < avx2 ? avx2 : chosen;
}

// The entry of an HWY_EXPORT table to call for `dtype`: the chosen target's (chosen first where nothing has chosen
// it yet, as Highway's own first call does), moved by float32_dispatch_index.
inline size_t dispatch_index(DType dtype) {
  hwy::ChosenTarget& chosen = hwy::GetChosenTarget();
  if (!chosen.IsInitialized()) chosen.Update(hwy::SupportedTargets());
  return float32_dispatch_index(chosen.GetIndex(), dtype, float32_on_avx2(), isa_forced(), kAvx2DispatchIndex);
}

}  // namespace nnops::detail

// Where Highway builds no table of targets (one target, an IDE's parse, MSVC 2017) its own dispatch is the only one.
#if HWY_IDE || ((HWY_TARGETS & (HWY_TARGETS - 1)) == 0) || HWY_DISPATCH_WORKAROUND
#define NNOPS_DYNAMIC_DISPATCH(FUNC, DTYPE) HWY_DYNAMIC_DISPATCH(FUNC)
#else
#define NNOPS_DYNAMIC_DISPATCH(FUNC, DTYPE) (HWY_DISPATCH_TABLE(FUNC)[::nnops::detail::dispatch_index(DTYPE)])
#endif
