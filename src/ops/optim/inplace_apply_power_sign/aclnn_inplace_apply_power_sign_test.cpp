// aclnnInplaceApplyPowerSign: both phases, every status code path, equality with the C++ API.
#include "aclnn_inplace_apply_power_sign.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nnops/ops/inplace_apply_power_sign.hpp"
#include "src/acl/executor.hpp"
#include "tests/acl/acl_test_util.hpp"
#include "tests/test_util.hpp"

namespace nnops::acl_test {
namespace {

using detail::HostBuffer;
using ::testing::HasSubstr;

constexpr const char* kPhase1 = "aclnnInplaceApplyPowerSignGetWorkspaceSize";

struct Problem {
  HostBuffer var, m, grad, lr, logbase, sign_decay, beta;
  Problem(DType t, std::vector<int64_t> shape, uint64_t seed)
      : var(t, shape), m(t, shape), grad(t, shape), lr(t, {1}), logbase(t, {1}), sign_decay(t, {}), beta(t, {1}) {
    std::mt19937_64 rng(seed);
    testing::fill_random(var, rng, -1, 1);
    testing::fill_random(m, rng, -2, 0);
    testing::fill_random(grad, rng, -2, 0);
    lr.set(0, 0.01);
    logbase.set(0, 1.0);
    sign_decay.set(0, 0.99);
    beta.set(0, 0.9);
  }
  // var and m after the C++ API's step.
  std::pair<HostBuffer, HostBuffer> cpp_step(bool use_locking) const {
    HostBuffer v = var.clone(), mm = m.clone();
    EXPECT_TRUE(inplace_apply_power_sign(v.view(), mm.view(), lr.view(), logbase.view(), sign_decay.view(), beta.view(),
                                         grad.view(), use_locking));
    return {std::move(v), std::move(mm)};
  }
};

struct Device {
  DevTensor var, m, grad, lr, logbase, sign_decay, beta;
  explicit Device(const Problem& p)
      : var(p.var), m(p.m), grad(p.grad), lr(p.lr), logbase(p.logbase), sign_decay(p.sign_decay), beta(p.beta) {}
  aclnnStatus phase1(bool use_locking, uint64_t* ws, aclOpExecutor** e) {
    return aclnnInplaceApplyPowerSignGetWorkspaceSize(var, m, lr, logbase, sign_decay, beta, grad, use_locking, ws, e);
  }
};

using AclInplaceApplyPowerSign = AclTest;

TEST_F(AclInplaceApplyPowerSign, MatchesCppApiBitwiseOnAStream) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (bool locking : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (locking ? " locked" : ""));
      Problem p(t, {3, 1000}, 17);
      Device d(p);
      uint64_t ws = 99;
      aclOpExecutor* e = nullptr;
      ASSERT_EQ(d.phase1(locking, &ws, &e), ACLNN_SUCCESS) << recent_error();
      EXPECT_EQ(ws, 0u);
      ASSERT_EQ(aclnnInplaceApplyPowerSign(nullptr, 0, e, stream), ACLNN_SUCCESS) << recent_error();
      ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recent_error();
      const auto [var, m] = p.cpp_step(locking);
      EXPECT_EQ(d.var.read(), host_bytes(var));
      EXPECT_EQ(d.m.read(), host_bytes(m));
    }
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST_F(AclInplaceApplyPowerSign, NullPointerInEachPosition) {
  Problem p(DType::kFloat32, {4}, 1);
  Device d(p);
  const char* names[] = {"varRef", "mRef", "lr", "logbase", "signDecay", "beta", "grad", "workspaceSize", "executor"};
  for (int null_at = 0; null_at < 9; ++null_at) {
    SCOPED_TRACE(names[null_at]);
    aclTensor* t[7] = {d.var, d.m, d.lr, d.logbase, d.sign_decay, d.beta, d.grad};
    if (null_at < 7) t[null_at] = nullptr;
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    EXPECT_EQ(aclnnInplaceApplyPowerSignGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5], t[6], false,
                                                         null_at == 7 ? nullptr : &ws, null_at == 8 ? nullptr : &e),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_EQ(recent_error(), std::string(kPhase1) + ": " + names[null_at] + " is null");
  }
  EXPECT_EQ(acl::live_executors(), 0u);
}

TEST_F(AclInplaceApplyPowerSign, DtypeShapeValueAndOverlapErrors) {
  Problem p(DType::kFloat32, {2, 8}, 1);
  Device d(p);
  const std::vector<unsigned char> var_before = d.var.read(), m_before = d.m.read();
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  auto phase1_with = [&](int slot, aclTensor* t) {
    aclTensor* a[7] = {d.var, d.m, d.lr, d.logbase, d.sign_decay, d.beta, d.grad};
    a[slot] = t;
    return aclnnInplaceApplyPowerSignGetWorkspaceSize(a[0], a[1], a[2], a[3], a[4], a[5], a[6], false, &ws, &e);
  };

  DevTensor grad16(ACL_FLOAT16, {2, 8});
  EXPECT_EQ(phase1_with(6, grad16), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("grad has dtype float16; expected float32"));
  DevTensor var8(ACL_INT8, {2, 8});
  EXPECT_EQ(phase1_with(0, var8), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("varRef has dtype ACL_INT8 (2)"));
  DevTensor lr_d(ACL_DOUBLE, {1});
  EXPECT_EQ(phase1_with(2, lr_d), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("lr has dtype ACL_DOUBLE"));

  DevTensor m_bad(ACL_FLOAT, {2, 9});
  EXPECT_EQ(phase1_with(1, m_bad), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("m has shape [2, 9]; expected the shape of var [2, 8]"));
  DevTensor beta2(ACL_FLOAT, {2});
  EXPECT_EQ(phase1_with(5, beta2), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("beta has shape [2]; expected [] or [1]"));

  const float one = 1.0f, inf = std::numeric_limits<float>::infinity();
  DevTensor beta1(ACL_FLOAT, {1}, &one);
  EXPECT_EQ(phase1_with(5, beta1), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("beta is 1; expected a value in [0, 1)"));
  DevTensor lr_inf(ACL_FLOAT, {1}, &inf);
  EXPECT_EQ(phase1_with(2, lr_inf), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("lr is inf; expected a finite value"));

  EXPECT_EQ(phase1_with(1, d.var), ACLNN_ERR_PARAM_INVALID);  // m is var
  EXPECT_THAT(recent_error(), HasSubstr("var and m overlap"));

  EXPECT_EQ(acl::live_executors(), 0u);
  EXPECT_EQ(d.var.read(), var_before);  // nothing written by rejected calls
  EXPECT_EQ(d.m.read(), m_before);
}

TEST_F(AclInplaceApplyPowerSign, ScalarsAreReadAtPhaseOne) {
  // Documented difference from CANN: the executor keeps the scalar values phase one validated.
  Problem p(DType::kFloat32, {16}, 3);
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(d.phase1(false, &ws, &e), ACLNN_SUCCESS);
  const float other_lr = 100.0f;
  ASSERT_EQ(aclrtMemcpy(d.lr.device(), 4, &other_lr, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclnnInplaceApplyPowerSign(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(d.var.read(), host_bytes(p.cpp_step(false).first));
}

TEST_F(AclInplaceApplyPowerSign, EmptyTensorsSucceed) {
  Problem p(DType::kFloat16, {0, 3}, 1);
  Device d(p);
  uint64_t ws = 1;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(d.phase1(true, &ws, &e), ACLNN_SUCCESS) << recent_error();
  EXPECT_EQ(ws, 0u);
  EXPECT_EQ(aclnnInplaceApplyPowerSign(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
}

}  // namespace
}  // namespace nnops::acl_test
