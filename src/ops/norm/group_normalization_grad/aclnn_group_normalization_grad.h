/*
 * nnops: CANN-compatible C API of GroupNormalizationGrad (see src/ops/norm/group_normalization_grad/
 * README.md for the formula and the full rules).
 *
 * x, dy, gamma, dx: [N, G, d2, ..., dk] (rank 3 to 8), one dtype: ACL_FLOAT, ACL_FLOAT16 or ACL_BF16.
 * mean, rstd: [N, G], the dtype of x or ACL_FLOAT (both the same). dx may be the very buffer of dy.
 * Contiguous tensors only. Empty tensors succeed and write nothing.
 */
#ifndef NNOPS_ACLNNOP_ACLNN_GROUP_NORMALIZATION_GRAD_H_
#define NNOPS_ACLNNOP_ACLNN_GROUP_NORMALIZATION_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase one: validates and plans. *workspaceSize receives the bytes phase two needs (0 unless the call
 * is split across threads inside groups, then 16 bytes per 2048-element block). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupNormalizationGradGetWorkspaceSize(
    const aclTensor* x, const aclTensor* dy, const aclTensor* gamma, const aclTensor* mean, const aclTensor* rstd,
    aclTensor* dx, uint64_t* workspaceSize, aclOpExecutor** executor);

/* Phase two: launches the executor on the stream (null: runs it now on the calling thread). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupNormalizationGrad(void* workspace, uint64_t workspaceSize,
                                                            aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NNOPS_ACLNNOP_ACLNN_GROUP_NORMALIZATION_GRAD_H_ */
