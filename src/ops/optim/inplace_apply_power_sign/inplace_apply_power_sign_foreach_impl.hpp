// InplaceApplyPowerSign, multi-tensor step: what inplace_apply_power_sign_foreach.cpp hands the kernel
// (RunPowerSignForeach in inplace_apply_power_sign_cpu.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"

namespace nnops::power_sign {

/// Entries 0..count-1, each a flat (var, m, grad) of plans[i].numel elements updated under plans[i] (its own
/// dtype and coefficients). first_block[i] is the number of kThreadBlock-element blocks of the entries before
/// i (first_block[count] = the total): threads split the total block sequence into contiguous ranges.
struct ForeachBatch {
  const Plan* plans;
  void* const* var;
  void* const* m;
  const void* const* grad;
  const int64_t* first_block;
  size_t count;
  int num_threads;
};

/// The kernel over every entry in one parallel region. No validation, no lock.
void run_foreach(const ForeachBatch& b);

}  // namespace nnops::power_sign
