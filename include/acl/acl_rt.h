/*
 * nnops: CANN-compatible C API, runtime calls (aclrt*) on a host "device".
 *
 * nnops has one device, id 0: the host CPU. "Device memory" is host memory that nnops tracks, so copies
 * and kernels can check bounds and catch frees of memory still in use. A stream is a real in-order
 * queue served by its own worker thread; tasks on different streams run concurrently. The null stream
 * (the default stream) runs each task synchronously on the calling thread.
 */
#ifndef NNOPS_ACL_ACL_RT_H_
#define NNOPS_ACL_ACL_RT_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aclrtMemMallocPolicy {
  ACL_MEM_MALLOC_HUGE_FIRST = 0,
  ACL_MEM_MALLOC_HUGE_ONLY = 1,
  ACL_MEM_MALLOC_NORMAL_ONLY = 2,
  ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
  ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
  ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
  ACL_MEM_MALLOC_HUGE1G_ONLY = 6,
  ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7,
  ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
  ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000,
  ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000
} aclrtMemMallocPolicy;

typedef enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST = 0,
  ACL_MEMCPY_HOST_TO_DEVICE = 1,
  ACL_MEMCPY_DEVICE_TO_HOST = 2,
  ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
  ACL_MEMCPY_DEFAULT = 4,
  ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5,
  ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6,
  ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7
} aclrtMemcpyKind;

/* Devices. Only device 0 exists. aclrtSetDevice needs aclInit first and counts references;
 * aclrtResetDevice drops one, and the last one waits for and destroys every stream still alive. */
ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t* deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t* count);

/* Streams. Creating one starts a worker thread; destroying one waits for its tasks and joins it (and
 * returns a failure of a task that nobody synchronized for). aclrtSynchronizeStream waits for every task
 * enqueued before the call and returns ACL_ERROR_RT_AICORE_EXCEPTION if one of them failed (the reason
 * goes to aclGetRecentErrMsg). The null stream has nothing pending: its tasks ran when launched. */
ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream* stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void);

/* Memory. Blocks are 64-byte aligned and uninitialized; size 0 is an error (as in CANN). aclrtFree takes
 * only aclrtMalloc blocks and aclrtFreeHost only aclrtMallocHost blocks (wrong or double frees are
 * errors, not crashes). A block freed while a launched task still uses it stays allocated until that
 * task is done, and the task then fails instead of touching it. */
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void** hostPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFree(void* devPtr);
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void* hostPtr);

/* Synchronous copy of count bytes; count > destMax is an error. The kind must match the memory: "device"
 * sides must lie inside an aclrtMalloc block, "host" sides outside any (ACL_MEMCPY_DEFAULT accepts
 * both). Not ordered with stream tasks: synchronize the stream first, as on an NPU. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                                         aclrtMemcpyKind kind);
/* Sets count bytes to (unsigned char)value; count > maxCount is an error. */
ACL_FUNC_VISIBILITY aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* NNOPS_ACL_ACL_RT_H_ */
