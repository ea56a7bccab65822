// InplaceApplyPowerSign (CANN OpType InplaceApplyPowerSign): one step of the PowerSign optimizer
// (Bello et al. 2017), TensorFlow's ApplyPowerSign semantics, updating var and m in place:
//
//   m_new   = beta * m + (1 - beta) * grad
//   sign_gm = sign(m_new) * sign(grad)
//   var_new = var - lr * exp(logbase * sign_decay * sign_gm) * grad
//
// float32: the per-element update is computed in float64 and rounded once, so every output is the float64
// result correctly rounded. float16/bfloat16: on SIMD targets with fused multiply-add, in float32 with a
// per-element check that sends doubtful elements (cancellation, non-finite, near overflow) to the float64
// path; every output is within one ulp of the float64 result (docs/semantics.md), most are correctly rounded.
#pragma once

#include <cstddef>

#include "nnops/context.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"

namespace nnops {

/// Updates var and m in place. All seven tensors share one dtype (float32, float16 or bfloat16); var, m
/// and grad share one shape (any rank, including 0) and must not overlap; lr, logbase, sign_decay and
/// beta hold one element each (shape [] or [1]). Checked before anything is written: beta in [0, 1),
/// lr/logbase/sign_decay finite. use_locking = true serializes concurrent calls on the same var buffer
/// (calls that pass false take no lock, as in TensorFlow). On error var and m are unchanged.
Status inplace_apply_power_sign(const TensorView& var, const TensorView& m, const TensorView& lr,
                                const TensorView& logbase, const TensorView& sign_decay, const TensorView& beta,
                                const TensorView& grad, bool use_locking = false, const Context& ctx = {});

/// The multi-tensor step (an optimizer's whole parameter list in one call): for each i < count, the step
/// above on (vars[i], ms[i], grads[i]) with the same lr, logbase, sign_decay and beta, all in ONE parallel
/// region that splits the total element count across threads. Entry i has its own dtype T_i (var, m and grad
/// of one entry share it; entries may differ) and the scalars are rounded to T_i (to nearest, ties to even)
/// exactly as the single call's T-typed scalars are, so the result is bitwise that of count single calls.
/// Every entry is checked as the single call checks it, and no write of one entry may touch memory another
/// entry reads or writes (grads may be shared), all before anything is written: on error no var or m has
/// changed and the message names the entry ("vars[3]"). With use_locking the locks of every var are held
/// throughout. count = 0 is a no-op; vars, ms and grads may then be null.
Status inplace_apply_power_sign_foreach(const TensorView* vars, const TensorView* ms, const TensorView* grads,
                                        size_t count, double lr, double logbase, double sign_decay, double beta,
                                        bool use_locking = false, const Context& ctx = {});

}  // namespace nnops
