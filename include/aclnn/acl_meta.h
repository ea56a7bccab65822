/* nnops: CANN-compatible C API. CANN declares the aclnn objects in acl_meta.h; nnops keeps them in
 * aclnn_base.h and offers this name for code that includes it directly. */
#ifndef NNOPS_ACLNN_ACL_META_H_
#define NNOPS_ACLNN_ACL_META_H_
#include "aclnn/aclnn_base.h"
#endif /* NNOPS_ACLNN_ACL_META_H_ */
