/* nnops: CANN's GroupNormalizationGrad sample includes its header by this name, without a folder. */
#ifndef NNOPS_ACLNN_GROUP_NORMALIZATION_GRAD_H_
#define NNOPS_ACLNN_GROUP_NORMALIZATION_GRAD_H_
#include "aclnnop/aclnn_group_normalization_grad.h"
#endif /* NNOPS_ACLNN_GROUP_NORMALIZATION_GRAD_H_ */
