/*
 * nnops: CANN-compatible C API, the header CANN programs include first. See acl_base.h (types, error
 * values) and acl_rt.h (devices, streams, memory).
 */
#ifndef NNOPS_ACL_ACL_H_
#define NNOPS_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Starts the runtime. configPath may be null; a given path is accepted and ignored (nnops has nothing
 * to configure). A second aclInit without aclFinalize returns ACL_ERROR_REPEAT_INITIALIZE. */
ACL_FUNC_VISIBILITY aclError aclInit(const char* configPath);

/* Stops the runtime: waits for and destroys every stream, destroys executors that never ran and frees
 * every block still allocated, like releasing an NPU. aclInit may be called again afterwards. */
ACL_FUNC_VISIBILITY aclError aclFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* NNOPS_ACL_ACL_H_ */
