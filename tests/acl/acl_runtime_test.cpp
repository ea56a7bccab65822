// The acl runtime on the host device: init/finalize, devices, memory, copies, conversions, error
// messages, the CANN numeric values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <thread>

#include "acl/acl.h"
#include "aclnn_group_normalization_grad.h"
#include "aclnnop/aclnn_inplace_apply_power_sign.h"
#include "src/acl/device_memory.hpp"
#include "src/acl/error.hpp"
#include "src/acl/executor.hpp"
#include "tests/acl/acl_test_util.hpp"

namespace nnops::acl_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The values CANN programs compare against (CANN's documentation; a mismatch would silently change
// the meaning of a status code).
static_assert(ACL_FLOAT == 0 && ACL_FLOAT16 == 1 && ACL_INT8 == 2 && ACL_INT32 == 3 && ACL_UINT8 == 4 &&
                  ACL_INT16 == 6 && ACL_UINT16 == 7 && ACL_UINT32 == 8 && ACL_INT64 == 9 && ACL_UINT64 == 10 &&
                  ACL_DOUBLE == 11 && ACL_BOOL == 12 && ACL_STRING == 13 && ACL_COMPLEX64 == 16 &&
                  ACL_COMPLEX128 == 17 && ACL_BF16 == 27 && ACL_DT_UNDEFINED == -1,
              "aclDataType");
static_assert(ACL_FORMAT_NCHW == 0 && ACL_FORMAT_NHWC == 1 && ACL_FORMAT_ND == 2 && ACL_FORMAT_NC1HWC0 == 3 &&
                  ACL_FORMAT_FRACTAL_NZ == 29 && ACL_FORMAT_NCDHW == 30 && ACL_FORMAT_NC == 35 && ACL_FORMAT_NCL == 47,
              "aclFormat");
static_assert(ACL_MEMCPY_HOST_TO_HOST == 0 && ACL_MEMCPY_HOST_TO_DEVICE == 1 && ACL_MEMCPY_DEVICE_TO_HOST == 2 &&
                  ACL_MEMCPY_DEVICE_TO_DEVICE == 3 && ACL_MEMCPY_DEFAULT == 4,
              "aclrtMemcpyKind");
static_assert(ACL_MEM_MALLOC_HUGE_FIRST == 0 && ACL_MEM_MALLOC_HUGE_ONLY == 1 && ACL_MEM_MALLOC_NORMAL_ONLY == 2,
              "aclrtMemMallocPolicy");
static_assert(ACLNN_SUCCESS == 0 && ACLNN_ERR_PARAM_NULLPTR == 161001 && ACLNN_ERR_PARAM_INVALID == 161002 &&
                  ACLNN_ERR_RUNTIME_ERROR == 361001 && ACLNN_ERR_INNER == 561000 &&
                  ACLNN_ERR_INNER_CREATE_EXECUTOR == 561101 && ACLNN_ERR_INNER_NULLPTR == 561103,
              "aclnnStatus");
static_assert(sizeof(aclFloat16) == 2, "aclFloat16");

TEST(AclValues, ErrorCodes) {
  EXPECT_EQ(ACL_SUCCESS, 0);
  EXPECT_EQ(ACL_ERROR_INVALID_PARAM, 100000);
  EXPECT_EQ(ACL_ERROR_UNINITIALIZE, 100001);
  EXPECT_EQ(ACL_ERROR_REPEAT_INITIALIZE, 100002);
  EXPECT_EQ(ACL_ERROR_REPEAT_FINALIZE, 100037);
  EXPECT_EQ(ACL_ERROR_BAD_ALLOC, 200000);
  EXPECT_EQ(ACL_ERROR_INTERNAL_ERROR, 500000);
  EXPECT_EQ(ACL_ERROR_RT_INVALID_DEVICEID, 107001);
  EXPECT_EQ(ACL_ERROR_RT_CONTEXT_NULL, 107002);
  EXPECT_EQ(ACL_ERROR_RT_MEMORY_ALLOCATION, 207001);
  EXPECT_EQ(ACL_ERROR_RT_AICORE_EXCEPTION, 507015);
}

TEST(AclInit, InitAndFinalizeAreNotRepeatable) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_THAT(recent_error(), HasSubstr("aclInit: already initialized"));
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_THAT(recent_error(), HasSubstr("aclFinalize: not initialized"));
  // Unlike on an NPU, the runtime can start again (tests rely on it); a config path is accepted.
  ASSERT_EQ(aclInit("/no/such/acl.json"), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST(AclInit, DevicesAndMemoryNeedInitAndSetDevice) {
  EXPECT_EQ(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
  EXPECT_THAT(recent_error(), HasSubstr("aclInit has not been called"));
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_UNINITIALIZE);
  EXPECT_EQ(p, nullptr);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  aclrtStream s = nullptr;
  EXPECT_EQ(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_THAT(recent_error(), HasSubstr("aclrtSetDevice"));
  int32_t dev = -1;
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_THAT(recent_error(), HasSubstr("device 1 does not exist"));
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 0);
  uint32_t count = 0;
  EXPECT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

using AclMemory = AclTest;

TEST_F(AclMemory, MallocAndFreeRules) {
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(aclrtMalloc(nullptr, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  void* q = nullptr;
  EXPECT_EQ(aclrtMalloc(&q, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("size is 0"));
  EXPECT_EQ(aclrtMalloc(&q, 8, static_cast<aclrtMemMallocPolicy>(77)), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("not an aclrtMemMallocPolicy"));
  EXPECT_EQ(aclrtMalloc(&q, std::numeric_limits<size_t>::max(), ACL_MEM_MALLOC_HUGE_FIRST),
            ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(q, nullptr);

  EXPECT_EQ(aclrtFree(static_cast<char*>(p) + 8), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("points 8 bytes into a block"));
  EXPECT_EQ(aclrtFreeHost(p), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("free it with aclrtFree"));
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("already freed"));
  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);

  void* h = nullptr;
  ASSERT_EQ(aclrtMallocHost(&h, 32), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(h), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("free it with aclrtFreeHost"));
  EXPECT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
}

TEST_F(AclMemory, MemcpyChecksSizesAndKinds) {
  void* d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  unsigned char host[32], back[32] = {};
  for (int i = 0; i < 32; ++i) host[i] = static_cast<unsigned char>(i + 1);

  EXPECT_EQ(aclrtMemcpy(d, 8, host, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("aclrtMemcpy: count 16 exceeds destMax 8"));
  // destMax claims 32 bytes but the block holds 16: caught at the block boundary.
  EXPECT_EQ(aclrtMemcpy(d, 32, host, 32, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("runs past the end of its aclrtMalloc block (16 bytes"));
  EXPECT_EQ(aclrtMemcpy(back, 32, d, 32, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  // Kinds must match the memory.
  EXPECT_EQ(aclrtMemcpy(back, 16, host, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("dst is not device memory"));
  EXPECT_EQ(aclrtMemcpy(d, 16, host, 16, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("dst is device memory"));
  EXPECT_EQ(aclrtMemcpy(d, 16, host, 16, static_cast<aclrtMemcpyKind>(42)), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("kind 42"));
  EXPECT_EQ(aclrtMemcpy(nullptr, 16, host, 16, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(back, 16, nullptr, 16, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);

  ASSERT_EQ(aclrtMemcpy(d, 16, host, 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(static_cast<char*>(d) + 8, 8, d, 8, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(back, 16, d, 16, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(back[i], host[i % 8]) << i;
  EXPECT_EQ(aclrtMemcpy(back, 0, host, 0, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);  // nothing to copy
  EXPECT_EQ(aclrtFree(d), ACL_SUCCESS);
}

TEST_F(AclMemory, MemsetChecksMaxCountAndBlock) {
  void* d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemset(d, 8, 0, 16), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("count 16 exceeds maxCount 8"));
  EXPECT_EQ(aclrtMemset(d, 32, 0, 32), ACL_ERROR_INVALID_PARAM);
  ASSERT_EQ(aclrtMemset(d, 16, 0x7f, 16), ACL_SUCCESS);
  unsigned char back[16];
  ASSERT_EQ(aclrtMemcpy(back, 16, d, 16, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  for (unsigned char c : back) EXPECT_EQ(c, 0x7f);
  EXPECT_EQ(aclrtFree(d), ACL_SUCCESS);
}

TEST_F(AclMemory, FinalizeReleasesEverything) {
  void* d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  float v = 1, m = 0, lr = 0.1f, lb = 1, sd = 1, beta = 0.5f, g = 1;
  const int64_t one[] = {1};
  auto t = [&](float* p) { return aclCreateTensor(one, 1, ACL_FLOAT, one, 0, ACL_FORMAT_ND, one, 1, p); };
  aclTensor* ts[] = {t(&v), t(&m), t(&lr), t(&lb), t(&sd), t(&beta), t(&g)};
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(aclnnInplaceApplyPowerSignGetWorkspaceSize(ts[0], ts[1], ts[2], ts[3], ts[4], ts[5], ts[6], false, &ws, &e),
            ACLNN_SUCCESS);
  for (aclTensor* x : ts) aclDestroyTensor(x);
  EXPECT_EQ(acl::live_executors(), 1u);
  EXPECT_EQ(acl::memory().live_blocks(), 1u);

  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(acl::live_executors(), 0u);
  EXPECT_EQ(acl::memory().live_blocks(), 0u);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);  // for TearDown
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM);
  EXPECT_THAT(recent_error(), HasSubstr("not a live stream"));
  EXPECT_EQ(aclnnInplaceApplyPowerSign(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("already been launched or destroyed"));
  EXPECT_EQ(aclrtFree(d), ACL_ERROR_INVALID_PARAM);  // released by aclFinalize
}

TEST(AclFloat16, ConversionsRoundToNearestEven) {
  EXPECT_EQ(aclFloatToFloat16(1.0f), 0x3C00);
  EXPECT_EQ(aclFloat16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(aclFloatToFloat16(-2.0f), 0xC000);
  EXPECT_EQ(aclFloatToFloat16(65504.0f), 0x7BFF);
  EXPECT_EQ(aclFloatToFloat16(65520.0f), 0x7C00);             // rounds up to infinity
  EXPECT_EQ(aclFloatToFloat16(1.0f + 0x1p-11f), 0x3C00);      // tie: to even
  EXPECT_EQ(aclFloatToFloat16(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie: to even (up)
  EXPECT_EQ(aclFloat16ToFloat(0x0001), 0x1p-24f);             // smallest subnormal, exact
  EXPECT_TRUE(std::isnan(aclFloat16ToFloat(aclFloatToFloat16(std::nanf("")))));
}

TEST(AclDataType, Sizes) {
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_BF16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_BOOL), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_COMPLEX128), 16u);
  EXPECT_EQ(aclDataTypeSize(ACL_STRING), 0u);
  EXPECT_EQ(aclDataTypeSize(static_cast<aclDataType>(999)), 0u);
}

TEST(AclErrorMapping, StatusCodesAndGuards) {
  // nnops::Status -> aclnnStatus, as documented.
  EXPECT_EQ(acl::to_aclnn_status(StatusCode::kOk), ACLNN_SUCCESS);
  EXPECT_EQ(acl::to_aclnn_status(StatusCode::kNullPointer), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(acl::to_aclnn_status(StatusCode::kInvalidArgument), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(acl::to_aclnn_status(StatusCode::kUnsupported), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(acl::to_aclnn_status(StatusCode::kInternal), ACLNN_ERR_INNER);
  recent_error();
  EXPECT_EQ(acl::fail_status("aclnnX", Status(StatusCode::kInternal, "op: broken")), ACLNN_ERR_INNER);
  EXPECT_EQ(recent_error(), "aclnnX: op: broken");
  // Every entry point runs inside a guard: exceptions become codes and messages, never cross into C.
  EXPECT_EQ(acl::guard_aclnn("aclnnX", []() -> aclnnStatus { throw std::runtime_error("boom"); }), ACLNN_ERR_INNER);
  EXPECT_EQ(recent_error(), "aclnnX: internal error: boom");
  EXPECT_EQ(acl::guard_aclnn("aclnnX", []() -> aclnnStatus { throw std::bad_alloc(); }), ACLNN_ERR_INNER);
  EXPECT_EQ(recent_error(), "aclnnX: out of memory");
  EXPECT_EQ(acl::guard_acl("aclrtX", []() -> aclError { throw 42; }), ACL_ERROR_INTERNAL_ERROR);
  EXPECT_EQ(recent_error(), "aclrtX: internal error: unknown exception");
  EXPECT_EQ(acl::guard_acl("aclrtX", []() -> aclError { throw std::bad_alloc(); }), ACL_ERROR_BAD_ALLOC);
  EXPECT_EQ(recent_error(), "aclrtX: out of memory");
}

TEST(AclErrorMessage, PerThreadNewestFirstAndClearedOnRead) {
  recent_error();
  EXPECT_STREQ(aclGetRecentErrMsg(), "");
  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(nullptr, 0, nullptr, 0, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
  std::string other_thread;
  std::thread([&] { other_thread = recent_error(); }).join();
  EXPECT_EQ(other_thread, "");  // failures belong to the thread that made them
  const std::string both = recent_error();
  EXPECT_THAT(both, StartsWith("aclrtMemcpy: dst is null\naclrtFree: the pointer is null"));
  EXPECT_EQ(recent_error(), "");
}

}  // namespace
}  // namespace nnops::acl_test
