// aclnnGroupNormBackward: both phases, outputMask handling, CANN's rules beyond the C++ API (one dtype for mean,
// rstd, gamma and the parameter gradients; N/C/HxW; tensors taken by element count), and equality with the C++
// API.
#include "aclnnop/aclnn_group_norm_backward.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "nnops/ops/group_norm_backward.hpp"
#include "src/acl/executor.hpp"
#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"
#include "tests/acl/acl_test_util.hpp"
#include "tests/op_test_util.hpp"
#include "tests/test_util.hpp"

namespace nnops::acl_test {
namespace {

using detail::HostBuffer;
using ::testing::HasSubstr;

constexpr const char* kPhase1 = "aclnnGroupNormBackwardGetWorkspaceSize";

ops::Problem problem(DType t, const std::vector<int64_t>& shape, int64_t groups, bool like_t) {
  return testing::make_problem(ops::desc_group_norm_backward(), t, shape, 1, like_t,
                               [&](ops::Attrs& a) { a[gn_bwd::kNumGroups].i = groups; });
}

struct Device : DeviceProblem {
  explicit Device(const ops::Problem& p) : DeviceProblem(p, gn_bwd::kDy, p.attrs[gn_bwd::kNumGroups].i) {}
};

aclnnStatus phase1(const Device& d, const std::vector<aclTensor*>& a, const std::vector<bool>& mask, uint64_t* ws,
                   aclOpExecutor** e, bool null_mask = false) {
  bool m[8] = {};
  for (std::size_t k = 0; k < mask.size(); ++k) m[k] = mask[k];
  aclBoolArray* om = null_mask ? nullptr : aclCreateBoolArray(m, mask.size());
  const aclnnStatus st = aclnnGroupNormBackwardGetWorkspaceSize(a[0], a[1], a[2], a[3], a[4], d.n, d.c, d.hw, d.groups,
                                                                om, a[5], a[6], a[7], ws, e);
  if (om) aclDestroyBoolArray(om);
  return st;
}

std::vector<aclTensor*> all(const Device& d) { return d.all(); }

aclnnStatus launch(uint64_t ws, aclOpExecutor* e, aclrtStream stream) {
  return acl_test::launch(aclnnGroupNormBackward, ws, e, stream);
}

using AclGroupNormBackward = AclTest;

TEST_F(AclGroupNormBackward, MatchesCppApiBitwiseOnAStream) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (bool like_t : {true, false}) {  // mean in T, and mixed precision with float32 statistics
      SCOPED_TRACE(std::string(dtype_name(t)) + (like_t ? "" : " float32 statistics"));
      ops::Problem p = problem(t, {2, 64, 6, 7}, 32, like_t);
      Device d(p);
      uint64_t ws = 0;
      aclOpExecutor* e = nullptr;
      ASSERT_EQ(phase1(d, all(d), {true, true, true}, &ws, &e), ACLNN_SUCCESS) << recent_error();
      ASSERT_EQ(launch(ws, e, stream), ACLNN_SUCCESS) << recent_error();
      const std::vector<TensorView> v = p.views();
      ASSERT_TRUE(group_norm_backward(v[0], v[1], v[2], v[3], v[4], 32, {true, true, true}, v[5], v[6], v[7]));
      for (int i : {gn_bwd::kDx, gn_bwd::kDgamma, gn_bwd::kDbeta}) EXPECT_EQ(d.t[i]->read(), host_bytes(p.t[i]));
    }
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST_F(AclGroupNormBackward, OutputMaskAndNullPointers) {
  ops::Problem p = problem(DType::kFloat32, {2, 4, 5}, 2, true);
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(phase1(d, all(d), {true, true, true}, &ws, &e, /*null_mask=*/true), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_THAT(recent_error(), HasSubstr(std::string(kPhase1) + ": outputMask is null"));
  EXPECT_EQ(phase1(d, all(d), {true, true}, &ws, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("outputMask has 2 entries; expected 3"));
  const char* names[] = {"gradOut", "input", "mean", "rstd", "gamma", "gradInput", "gradGammaOut", "gradBetaOut"};
  for (int slot : {0, 1, 2, 3, 5, 6, 7}) {
    std::vector<aclTensor*> a = all(d);
    a[slot] = nullptr;
    EXPECT_EQ(phase1(d, a, {true, true, true}, &ws, &e), ACLNN_ERR_PARAM_NULLPTR) << names[slot];
    EXPECT_THAT(recent_error(), HasSubstr(std::string(names[slot]) + " is null"));
    EXPECT_EQ(e, nullptr);
  }
  // An unselected output may be null; gamma may be null (ones).
  std::vector<aclTensor*> a = all(d);
  a[gn_bwd::kGamma] = nullptr;
  a[gn_bwd::kDx] = nullptr;
  a[gn_bwd::kDbeta] = nullptr;
  ASSERT_EQ(phase1(d, a, {false, true, false}, &ws, &e), ACLNN_SUCCESS) << recent_error();
  ASSERT_EQ(launch(ws, e, nullptr), ACLNN_SUCCESS);
  const std::vector<TensorView> v = p.views();
  ASSERT_TRUE(group_norm_backward(v[0], v[1], v[2], v[3], TensorView::none(), 2, {false, true, false},
                                  TensorView::none(), v[6], TensorView::none()));
  EXPECT_EQ(d.t[gn_bwd::kDgamma]->read(), host_bytes(p.t[gn_bwd::kDgamma]));
}

TEST_F(AclGroupNormBackward, CannRulesBeyondTheCppApi) {
  ops::Problem p = problem(DType::kFloat16, {2, 4, 5}, 2, false);  // mean, rstd, gamma, ... float32
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(phase1(d, all(d), {true, true, true}, &ws, &e), ACLNN_SUCCESS) << recent_error();
  ASSERT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
  // gamma in float16 while mean is float32: fine in C++, refused by CANN's rule.
  HostBuffer g16(DType::kFloat16, {4});
  DevTensor gamma16(g16);
  std::vector<aclTensor*> a = all(d);
  a[gn_bwd::kGamma] = gamma16;
  EXPECT_EQ(phase1(d, a, {true, true, true}, &ws, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("gamma has dtype float16; expected float32 (the dtype of mean)"));
  // N * C * HxW must be gradOut's element count.
  Device wrong(p);
  wrong.hw = 6;
  EXPECT_EQ(phase1(wrong, all(wrong), {true, true, true}, &ws, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("gradOut has 40 elements; expected N * C * HxW = 48"));
  EXPECT_EQ(acl::live_executors(), 0u);
}

TEST_F(AclGroupNormBackward, FlatTensorsAreReadAsNCHxW) {
  // CANN takes gradOut, input and gradInput by element count: [40] tensors for N = 2, C = 4, HxW = 5.
  ops::Problem p = problem(DType::kFloat32, {2, 4, 5}, 2, true);
  Device d(p);
  DevTensor dy(ACL_FLOAT, {40}, p.t[gn_bwd::kDy].data()), x(ACL_FLOAT, {40}, p.t[gn_bwd::kX].data()),
      dx(ACL_FLOAT, {40});
  std::vector<aclTensor*> a = all(d);
  a[gn_bwd::kDy] = dy;
  a[gn_bwd::kX] = x;
  a[gn_bwd::kDx] = dx;
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(phase1(d, a, {true, true, true}, &ws, &e), ACLNN_SUCCESS) << recent_error();
  ASSERT_EQ(launch(ws, e, nullptr), ACLNN_SUCCESS);
  const std::vector<TensorView> v = p.views();
  ASSERT_TRUE(group_norm_backward(v[0], v[1], v[2], v[3], v[4], 2, {true, true, true}, v[5], v[6], v[7]));
  EXPECT_EQ(dx.read(), host_bytes(p.t[gn_bwd::kDx]));
}

}  // namespace
}  // namespace nnops::acl_test
