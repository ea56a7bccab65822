/*
 * nnops: CANN-compatible C API of GroupNormBackward (the operator's README has the formula and every rule).
 *
 * gradOut, input, gradInput: N*C*HxW elements ([N, C, ...] as CANN's samples give them; a contiguous tensor of
 * another shape with that many elements is read as [N, C, HxW]), ACL_FLOAT, ACL_FLOAT16 or ACL_BF16. mean, rstd:
 * N*group elements in gradOut's dtype or ACL_FLOAT; gamma (or null: ones), gradGammaOut, gradBetaOut: C elements
 * in mean's dtype. outputMask: 3 bools selecting gradInput, gradGammaOut, gradBetaOut; an unselected output may
 * be null. gradInput may be gradOut itself. Any strides. Empty inputs succeed (gradGammaOut and gradBetaOut,
 * sums over nothing, are zeros).
 */
#ifndef NNOPS_ACLNNOP_ACLNN_GROUP_NORM_BACKWARD_H_
#define NNOPS_ACLNNOP_ACLNN_GROUP_NORM_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
/* CANN's own header reaches <array> through its C++ includes, and CANN's sample for this operator uses
 * std::array without including it: the same here, so that the sample builds unchanged. */
#include <array>
extern "C" {
#endif

/* Phase one: validates and plans. *workspaceSize receives the bytes phase two needs (per-(n, c) partial sums,
 * per-thread scratch, dense copies of tensors in layouts other than row-major or channels-last). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupNormBackwardGetWorkspaceSize(
    const aclTensor* gradOut, const aclTensor* input, const aclTensor* mean, const aclTensor* rstd,
    const aclTensor* gamma, int64_t N, int64_t C, int64_t HxW, int64_t group, const aclBoolArray* outputMask,
    aclTensor* gradInput, aclTensor* gradGammaOut, aclTensor* gradBetaOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/* Phase two: launches the executor on the stream (null: runs it now on the calling thread). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupNormBackward(void* workspace, uint64_t workspaceSize,
                                                       aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NNOPS_ACLNNOP_ACLNN_GROUP_NORM_BACKWARD_H_ */
