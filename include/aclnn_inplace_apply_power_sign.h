/* nnops: the operator header by the folder-less name CANN samples use. */
#ifndef NNOPS_ACLNN_INPLACE_APPLY_POWER_SIGN_H_
#define NNOPS_ACLNN_INPLACE_APPLY_POWER_SIGN_H_
#include "aclnnop/aclnn_inplace_apply_power_sign.h"
#endif /* NNOPS_ACLNN_INPLACE_APPLY_POWER_SIGN_H_ */
