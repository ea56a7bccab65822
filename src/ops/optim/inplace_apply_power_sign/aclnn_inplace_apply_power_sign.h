/*
 * nnops: CANN-compatible C API of InplaceApplyPowerSign (see src/ops/optim/inplace_apply_power_sign/ for
 * the formula and the full rules).
 *
 * varRef, mRef, grad: one shape; lr, logbase, signDecay, beta: one element each ([] or [1]); all seven
 * one dtype: ACL_FLOAT, ACL_FLOAT16 or ACL_BF16. beta in [0, 1); lr, logbase, signDecay finite.
 * varRef, mRef and grad must not overlap. Contiguous tensors only.
 *
 * NB: phase one reads lr, logbase, signDecay and beta to validate them, and the executor uses those
 * values; write them before calling phase one (CANN reads them when the kernel runs).
 */
#ifndef NNOPS_ACLNNOP_ACLNN_INPLACE_APPLY_POWER_SIGN_H_
#define NNOPS_ACLNNOP_ACLNN_INPLACE_APPLY_POWER_SIGN_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase one: validates and plans. *workspaceSize is always 0. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnInplaceApplyPowerSignGetWorkspaceSize(
    aclTensor* varRef, aclTensor* mRef, const aclTensor* lr, const aclTensor* logbase, const aclTensor* signDecay,
    const aclTensor* beta, const aclTensor* grad, bool useLocking, uint64_t* workspaceSize, aclOpExecutor** executor);

/* Phase two: launches the executor on the stream (null: runs it now on the calling thread). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnInplaceApplyPowerSign(void* workspace, uint64_t workspaceSize,
                                                           aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NNOPS_ACLNNOP_ACLNN_INPLACE_APPLY_POWER_SIGN_H_ */
