/*
 * nnops: CANN-compatible C API of GroupNorm (the operator's README has the formula and every rule).
 *
 * self, out: [N, C, ...] (rank 2 to 8), ACL_FLOAT, ACL_FLOAT16 or ACL_BF16; gamma, beta: [C] or null (1 and 0);
 * meanOut, rstdOut: [N, group]. As in CANN, gamma, beta, out, meanOut and rstdOut have self's dtype; N, C and
 * HxW must describe self's shape; group > 0 divides C; eps > 0. Any strides (non-contiguous tensors are
 * supported). Empty tensors succeed and write nothing (CANN fills meanOut with 0 and rstdOut with NaN).
 */
#ifndef NNOPS_ACLNNOP_ACLNN_GROUP_NORM_H_
#define NNOPS_ACLNNOP_ACLNN_GROUP_NORM_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase one: validates and plans. *workspaceSize receives the bytes phase two needs (per-thread scratch, and
 * dense copies of tensors in layouts other than row-major or channels-last). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupNormGetWorkspaceSize(const aclTensor* self, const aclTensor* gamma,
                                                               const aclTensor* beta, int64_t N, int64_t C, int64_t HxW,
                                                               int64_t group, double eps, aclTensor* out,
                                                               aclTensor* meanOut, aclTensor* rstdOut,
                                                               uint64_t* workspaceSize, aclOpExecutor** executor);

/* Phase two: launches the executor on the stream (null: runs it now on the calling thread). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnGroupNorm(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                               aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* NNOPS_ACLNNOP_ACLNN_GROUP_NORM_H_ */
