// aclnnGroupNormalizationGrad: both phases, every status code path, equality with the C++ API.
#include "aclnn_group_normalization_grad.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_inplace_apply_power_sign.h"
#include "nnops/ops/group_normalization_grad.hpp"
#include "src/acl/executor.hpp"
#include "tests/acl/acl_test_util.hpp"
#include "tests/test_util.hpp"

namespace nnops::acl_test {
namespace {

using detail::HostBuffer;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kPhase1 = "aclnnGroupNormalizationGradGetWorkspaceSize";

// Host operands with realistic statistics.
struct Problem {
  HostBuffer x, dy, gamma, mean, rstd;
  Problem(DType t, DType stat_t, std::vector<int64_t> shape, uint64_t seed)
      : x(t, shape),
        dy(t, shape),
        gamma(t, shape),
        mean(stat_t, {shape[0], shape[1]}),
        rstd(stat_t, {shape[0], shape[1]}) {
    std::mt19937_64 rng(seed);
    testing::fill_random(x, rng, -1, 1);
    testing::fill_random(dy, rng, -1, 1);
    testing::fill_random(gamma, rng, -1, 0);
    testing::fill_random(mean, rng, -1, 0);
    for (int64_t i = 0; i < rstd.numel(); ++i) rstd.set(i, 0.5 + 0.25 * static_cast<double>(i % 5));
  }
  // dx from the C++ API, for comparison.
  HostBuffer cpp_dx() const {
    HostBuffer dx(x.dtype(), x.shape());
    EXPECT_TRUE(group_normalization_grad(x.view(), dy.view(), gamma.view(), mean.view(), rstd.view(), dx.view()));
    return dx;
  }
};

// The same problem in device memory.
struct Device {
  DevTensor x, dy, gamma, mean, rstd, dx;
  explicit Device(const Problem& p)
      : x(p.x), dy(p.dy), gamma(p.gamma), mean(p.mean), rstd(p.rstd), dx(acl_dtype(p.x.dtype()), p.x.shape()) {}
  aclnnStatus phase1(uint64_t* ws, aclOpExecutor** e) {
    return aclnnGroupNormalizationGradGetWorkspaceSize(x, dy, gamma, mean, rstd, dx, ws, e);
  }
};

using AclGroupNormalizationGrad = AclTest;

TEST_F(AclGroupNormalizationGrad, MatchesCppApiBitwiseOnAStream) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  struct Case {
    DType t, stat;
    std::vector<int64_t> shape;
    int threads;
  } cases[] = {
      {DType::kFloat32, DType::kFloat32, {2, 4, 128}, 1},
      {DType::kFloat16, DType::kFloat16, {3, 2, 5, 7}, 2},
      {DType::kBFloat16, DType::kFloat32, {2, 3, 100}, 2},
      // Few large groups and 4 threads: the plan splits groups and needs a workspace.
      {DType::kFloat32, DType::kFloat32, {1, 2, 4, 4096}, 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.t)) + " threads=" + std::to_string(c.threads));
    ScopedThreads threads(c.threads);
    Problem p(c.t, c.stat, c.shape, 7);
    Device d(p);
    uint64_t ws = 123;
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(d.phase1(&ws, &e), ACLNN_SUCCESS) << recent_error();
    if (c.threads == 4) {
      EXPECT_EQ(ws, 2u * 8 * 2 * sizeof(double));  // 2 groups x 8 blocks x (s1, S)
    }
    void* workspace = nullptr;
    if (ws > 0) {
      ASSERT_EQ(aclrtMalloc(&workspace, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    }
    ASSERT_EQ(aclnnGroupNormalizationGrad(workspace, ws, e, stream), ACLNN_SUCCESS) << recent_error();
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recent_error();
    EXPECT_EQ(d.dx.read(), host_bytes(p.cpp_dx()));
    if (workspace) {
      EXPECT_EQ(aclrtFree(workspace), ACL_SUCCESS);
    }
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST_F(AclGroupNormalizationGrad, DefaultStreamRunsBeforeReturning) {
  Problem p(DType::kFloat32, DType::kFloat32, {2, 2, 8}, 3);
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(d.phase1(&ws, &e), ACLNN_SUCCESS);
  ASSERT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, nullptr), ACLNN_SUCCESS) << recent_error();
  EXPECT_EQ(d.dx.read(), host_bytes(p.cpp_dx()));
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
}

TEST_F(AclGroupNormalizationGrad, InPlaceDxIsDy) {
  Problem p(DType::kFloat32, DType::kFloat32, {2, 3, 16}, 5);
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(aclnnGroupNormalizationGradGetWorkspaceSize(d.x, d.dy, d.gamma, d.mean, d.rstd, d.dy, &ws, &e),
            ACLNN_SUCCESS)
      << recent_error();
  ASSERT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(d.dy.read(), host_bytes(p.cpp_dx()));
}

TEST_F(AclGroupNormalizationGrad, NullPointerInEachPosition) {
  Problem p(DType::kFloat32, DType::kFloat32, {1, 1, 4}, 1);
  Device d(p);
  uint64_t ws = 9;
  aclOpExecutor* e = reinterpret_cast<aclOpExecutor*>(0x10);
  const char* names[] = {"x", "dy", "gamma", "mean", "rstd", "dx", "workspaceSize", "executor"};
  for (int null_at = 0; null_at < 8; ++null_at) {
    SCOPED_TRACE(names[null_at]);
    aclTensor* t[6] = {d.x, d.dy, d.gamma, d.mean, d.rstd, d.dx};
    if (null_at < 6) t[null_at] = nullptr;
    EXPECT_EQ(aclnnGroupNormalizationGradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5],
                                                          null_at == 6 ? nullptr : &ws, null_at == 7 ? nullptr : &e),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(recent_error(), std::string(kPhase1) + ": " + names[null_at] + " is null");
    if (null_at != 7) {
      EXPECT_EQ(e, nullptr);  // outputs are reset even when the call fails
    }
  }
  EXPECT_EQ(acl::live_executors(), 0u);
}

TEST_F(AclGroupNormalizationGrad, DtypeShapeAndLayoutErrors) {
  Problem p(DType::kFloat32, DType::kFloat32, {2, 4, 8}, 1);
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  auto phase1_with = [&](int slot, aclTensor* t) {
    aclTensor* a[6] = {d.x, d.dy, d.gamma, d.mean, d.rstd, d.dx};
    a[slot] = t;
    return aclnnGroupNormalizationGradGetWorkspaceSize(a[0], a[1], a[2], a[3], a[4], a[5], &ws, &e);
  };
  HostBuffer half_dy(DType::kFloat16, {2, 4, 8});
  DevTensor dy16(half_dy);
  EXPECT_EQ(phase1_with(1, dy16), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("dy has dtype float16; expected float32"));

  DevTensor x_int(ACL_INT32, {2, 4, 8});
  EXPECT_EQ(phase1_with(0, x_int), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr(std::string(kPhase1) + ": x has dtype ACL_INT32 (3); nnops supports"));

  DevTensor mean_bad(ACL_FLOAT, {2, 3});
  EXPECT_EQ(phase1_with(3, mean_bad), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("mean has shape [2, 3]; expected [N, G] = [2, 4]"));

  DevTensor gamma_bad(ACL_FLOAT, {2, 4, 9});
  EXPECT_EQ(phase1_with(2, gamma_bad), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("gamma has shape [2, 4, 9]"));

  DevTensor x2(ACL_FLOAT, {2, 4});
  DevTensor dy2(ACL_FLOAT, {2, 4});
  DevTensor dx2(ACL_FLOAT, {2, 4});
  EXPECT_EQ(aclnnGroupNormalizationGradGetWorkspaceSize(x2, dy2, dy2, d.mean, d.rstd, dx2, &ws, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("expected rank >= 3"));

  // Nine dims: CANN's limit is eight.
  const int64_t nine[] = {1, 1, 1, 1, 1, 1, 1, 1, 2};
  aclTensor* x9 = aclCreateTensor(nine, 9, ACL_FLOAT, nine, 0, ACL_FORMAT_ND, nine, 9, d.x.device());
  EXPECT_EQ(phase1_with(0, x9), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("x has 9 dims"));
  aclDestroyTensor(x9);

  // A view of dx's storage in which elements share memory (stride 0) cannot be an output.
  const int64_t shape[] = {2, 4, 8}, strides[] = {1, 2, 0}, storage[] = {64};
  aclTensor* dx_t = aclCreateTensor(shape, 3, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, d.dx.device());
  EXPECT_EQ(phase1_with(5, dx_t), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("dx has strides [1, 2, 0] for shape [2, 4, 8]: some of its elements share"));
  aclDestroyTensor(dx_t);

  // Views reaching outside their storage, and strides whose reach overflows int64.
  const int64_t dense[] = {32, 8, 1};
  aclTensor* off = aclCreateTensor(shape, 3, ACL_FLOAT, dense, 1, ACL_FORMAT_ND, storage, 1, d.dx.device());
  EXPECT_EQ(phase1_with(5, off), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("reaches elements 1 to 64 of a storage of 64 elements"));
  aclDestroyTensor(off);
  const int64_t huge[] = {INT64_MAX, 8, 1};
  aclTensor* ovf = aclCreateTensor(shape, 3, ACL_FLOAT, huge, 0, ACL_FORMAT_ND, storage, 1, d.dx.device());
  EXPECT_EQ(phase1_with(5, ovf), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("beyond the int64 range"));
  aclDestroyTensor(ovf);
  aclTensor* neg = aclCreateTensor(shape, 3, ACL_FLOAT, dense, -1, ACL_FORMAT_ND, storage, 1, d.dx.device());
  EXPECT_EQ(phase1_with(5, neg), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("offset -1"));
  aclDestroyTensor(neg);

  // A tensor claiming more bytes than its aclrtMalloc block holds (dx's block has 256 bytes).
  const int64_t big[] = {2, 4, 16}, dense16[] = {64, 16, 1};
  aclTensor* over = aclCreateTensor(big, 3, ACL_FLOAT, dense16, 0, ACL_FORMAT_ND, big, 3, d.dx.device());
  DevTensor xb(ACL_FLOAT, {2, 4, 16}), dyb(ACL_FLOAT, {2, 4, 16}), gb(ACL_FLOAT, {2, 4, 16});
  EXPECT_EQ(aclnnGroupNormalizationGradGetWorkspaceSize(xb, dyb, gb, d.mean, d.rstd, over, &ws, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("dx needs 512 bytes at 0x"));
  aclDestroyTensor(over);

  // Private NPU formats.
  aclTensor* nz = aclCreateTensor(shape, 3, ACL_FLOAT, dense, 0, ACL_FORMAT_FRACTAL_NZ, storage, 1, d.dx.device());
  EXPECT_EQ(phase1_with(5, nz), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("ACL_FORMAT_FRACTAL_NZ"));
  aclDestroyTensor(nz);

  // Null data with elements: the operator's null-pointer check.
  aclTensor* nodata = aclCreateTensor(shape, 3, ACL_FLOAT, dense, 0, ACL_FORMAT_ND, storage, 1, nullptr);
  EXPECT_EQ(phase1_with(0, nodata), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_THAT(recent_error(), HasSubstr("x has a null data pointer"));
  aclDestroyTensor(nodata);

  // dx overlapping x (not in place on dy).
  EXPECT_EQ(phase1_with(5, d.x), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("dx and x overlap"));

  EXPECT_EQ(acl::live_executors(), 0u);  // no failed call leaves an executor behind
}

TEST_F(AclGroupNormalizationGrad, EmptyTensorsSucceedWithoutWork) {
  Problem p(DType::kFloat32, DType::kFloat32, {0, 4, 8}, 1);
  Device d(p);
  uint64_t ws = 5;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(d.phase1(&ws, &e), ACLNN_SUCCESS) << recent_error();
  EXPECT_EQ(ws, 0u);
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
}

TEST_F(AclGroupNormalizationGrad, ExecutorRunsOnce) {
  Problem p(DType::kFloat32, DType::kFloat32, {1, 2, 8}, 1);
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(d.phase1(&ws, &e), ACLNN_SUCCESS);
  ASSERT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("aclnnGroupNormalizationGrad: executor has already been launched"));
  // Still recognized after many other executors have come and gone.
  for (int i = 0; i < 100; ++i) {
    aclOpExecutor* other = nullptr;
    ASSERT_EQ(d.phase1(&ws, &other), ACLNN_SUCCESS);
    ASSERT_EQ(aclDestroyAclOpExecutor(other), ACLNN_SUCCESS);
  }
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("runs once"));
}

TEST_F(AclGroupNormalizationGrad, BadExecutorHandles) {
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(recent_error(), "aclnnGroupNormalizationGrad: executor is null");
  int not_an_executor = 0;
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, reinterpret_cast<aclOpExecutor*>(&not_an_executor), nullptr),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("not returned by a GetWorkspaceSize function"));

  // An executor of the other operator.
  float v[4] = {}, m[4] = {}, g[4] = {}, s[4] = {0.1f, 1, 1, 0.5f};
  const int64_t four[] = {4}, one[] = {1};
  aclTensor* tv = aclCreateTensor(four, 1, ACL_FLOAT, one, 0, ACL_FORMAT_ND, four, 1, v);
  aclTensor* tm = aclCreateTensor(four, 1, ACL_FLOAT, one, 0, ACL_FORMAT_ND, four, 1, m);
  aclTensor* tg = aclCreateTensor(four, 1, ACL_FLOAT, one, 0, ACL_FORMAT_ND, four, 1, g);
  aclTensor* ts[4];
  for (int i = 0; i < 4; ++i) ts[i] = aclCreateTensor(one, 1, ACL_FLOAT, one, 0, ACL_FORMAT_ND, one, 1, &s[i]);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(aclnnInplaceApplyPowerSignGetWorkspaceSize(tv, tm, ts[0], ts[1], ts[2], ts[3], tg, false, &ws, &e),
            ACLNN_SUCCESS)
      << recent_error();
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("executor was created by aclnnInplaceApplyPowerSignGetWorkspaceSize; launch "
                                        "it with aclnnInplaceApplyPowerSign"));
  EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyAclOpExecutor(nullptr), ACLNN_ERR_PARAM_NULLPTR);
  for (aclTensor* t : {tv, tm, tg, ts[0], ts[1], ts[2], ts[3]}) aclDestroyTensor(t);
  recent_error();
}

TEST_F(AclGroupNormalizationGrad, WorkspaceMustBeLargeEnough) {
  ScopedThreads threads(4);  // forces the split plan, which needs a workspace, on any machine
  Problem p(DType::kFloat32, DType::kFloat32, {1, 2, 4, 4096}, 11);
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(d.phase1(&ws, &e), ACLNN_SUCCESS);
  ASSERT_GT(ws, 0u);
  void* w = nullptr;
  ASSERT_EQ(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);

  EXPECT_EQ(aclnnGroupNormalizationGrad(w, ws - 1, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("workspaceSize is " + std::to_string(ws - 1) + "; the executor needs " +
                                        std::to_string(ws) + " bytes"));
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, ws, e, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_THAT(recent_error(), HasSubstr("workspace is null but workspaceSize is"));
  EXPECT_EQ(aclnnGroupNormalizationGrad(static_cast<char*>(w) + 4, ws, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("8-byte aligned"));
  // workspaceSize claims enough, but the block behind the pointer is shorter.
  EXPECT_EQ(aclnnGroupNormalizationGrad(static_cast<char*>(w) + 8, ws, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("its block ends sooner"));

  // A failed launch leaves the executor unused: it can still run, once.
  ASSERT_EQ(aclnnGroupNormalizationGrad(w, ws, e, nullptr), ACLNN_SUCCESS) << recent_error();
  EXPECT_EQ(d.dx.read(), host_bytes(p.cpp_dx()));
  EXPECT_EQ(aclrtFree(w), ACL_SUCCESS);
}

TEST_F(AclGroupNormalizationGrad, LaunchNeedsADeviceAndLiveMemory) {
  Problem p(DType::kFloat32, DType::kFloat32, {1, 2, 8}, 1);
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(d.phase1(&ws, &e), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, nullptr), ACLNN_ERR_RUNTIME_ERROR);
  EXPECT_THAT(recent_error(), HasSubstr("no device is set"));
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);

  d.x.free_block();  // between the phases
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("the device memory of x was freed after " + std::string(kPhase1)));
  EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);

  aclrtStream dead = nullptr;
  ASSERT_EQ(aclrtCreateStream(&dead), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(dead), ACL_SUCCESS);
  Device d2(p);
  ASSERT_EQ(d2.phase1(&ws, &e), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, dead), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("stream is not a live stream"));
}

}  // namespace
}  // namespace nnops::acl_test
