// aclnnGroupNorm: both phases, the C API's own rules (CANN's dtype rule, N/C/HxW), null and optional
// arguments, strided tensors, and equality with the C++ API.
#include "aclnnop/aclnn_group_norm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nnops/ops/group_norm.hpp"
#include "src/acl/executor.hpp"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"
#include "tests/acl/acl_test_util.hpp"
#include "tests/op_test_util.hpp"
#include "tests/test_util.hpp"

namespace nnops::acl_test {
namespace {

using detail::HostBuffer;
using ::testing::HasSubstr;

constexpr const char* kPhase1 = "aclnnGroupNormGetWorkspaceSize";

// A problem with every tensor in x's dtype (CANN's rule).
ops::Problem problem(DType t, const std::vector<int64_t>& shape, int64_t groups) {
  return testing::make_problem(ops::desc_group_norm(), t, shape, 1, true,
                               [&](ops::Attrs& a) { a[gn::kNumGroups].i = groups; });
}

struct Device : DeviceProblem {
  explicit Device(const ops::Problem& p) : DeviceProblem(p, gn::kX, p.attrs[gn::kNumGroups].i) {}
  aclnnStatus phase1(uint64_t* ws, aclOpExecutor** e, double eps = 1e-5) const {
    return aclnnGroupNormGetWorkspaceSize((*this)[0], (*this)[1], (*this)[2], n, c, hw, groups, eps, (*this)[3],
                                          (*this)[4], (*this)[5], ws, e);
  }
};

// Both phases on `stream`; returns the status of the first that failed.
aclnnStatus run(const Device& d, aclrtStream stream) {
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  if (aclnnStatus st = d.phase1(&ws, &e); st != ACLNN_SUCCESS) return st;
  return launch(aclnnGroupNorm, ws, e, stream);
}

using AclGroupNorm = AclTest;

TEST_F(AclGroupNorm, MatchesCppApiBitwiseOnAStream) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    ops::Problem p = problem(t, {2, 64, 6, 7}, 32);
    Device d(p);
    ASSERT_EQ(run(d, stream), ACLNN_SUCCESS) << recent_error();
    const std::vector<TensorView> v = p.views();
    ASSERT_TRUE(group_norm(v[0], v[1], v[2], 32, 1e-5, v[3], v[4], v[5]));
    for (int i : {gn::kOut, gn::kMean, gn::kRstd}) EXPECT_EQ(d.t[i]->read(), host_bytes(p.t[i]));
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

TEST_F(AclGroupNorm, NullPointersAndOptionalGammaBeta) {
  ops::Problem p = problem(DType::kFloat32, {2, 4, 5}, 2);
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  const char* names[] = {"self", "gamma", "beta", "out", "meanOut", "rstdOut"};
  for (int slot : {0, 3, 4, 5}) {
    aclTensor* a[6] = {d[0], d[1], d[2], d[3], d[4], d[5]};
    a[slot] = nullptr;
    EXPECT_EQ(aclnnGroupNormGetWorkspaceSize(a[0], a[1], a[2], 2, 4, 5, 2, 1e-5, a[3], a[4], a[5], &ws, &e),
              ACLNN_ERR_PARAM_NULLPTR);
    EXPECT_THAT(recent_error(), HasSubstr(std::string(kPhase1) + ": " + names[slot] + " is null"));
    EXPECT_EQ(e, nullptr);
  }
  EXPECT_EQ(d.phase1(nullptr, &e), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_THAT(recent_error(), HasSubstr("workspaceSize is null"));
  // gamma and beta may be null: 1 and 0, as in CANN.
  ASSERT_EQ(aclnnGroupNormGetWorkspaceSize(d[0], nullptr, nullptr, 2, 4, 5, 2, 1e-5, d[3], d[4], d[5], &ws, &e),
            ACLNN_SUCCESS)
      << recent_error();
  std::vector<unsigned char> w(ws + 64);
  ASSERT_EQ(
      aclnnGroupNorm(ws ? w.data() + (64 - reinterpret_cast<uintptr_t>(w.data()) % 64) % 64 : nullptr, ws, e, nullptr),
      ACLNN_SUCCESS);
  const std::vector<TensorView> v = p.views();
  ASSERT_TRUE(group_norm(v[0], TensorView::none(), TensorView::none(), 2, 1e-5, v[3], v[4], v[5]));
  EXPECT_EQ(d.t[gn::kOut]->read(), host_bytes(p.t[gn::kOut]));
}

TEST_F(AclGroupNorm, CannRulesBeyondTheCppApi) {
  ops::Problem p = problem(DType::kFloat16, {2, 4, 5}, 2);
  Device d(p);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  // gamma in float32 with a float16 self: the C++ API takes it, CANN's C API does not.
  HostBuffer g32(DType::kFloat32, {4});
  DevTensor gamma32(g32);
  EXPECT_EQ(aclnnGroupNormGetWorkspaceSize(d[0], gamma32, d[2], 2, 4, 5, 2, 1e-5, d[3], d[4], d[5], &ws, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("gamma has dtype float32; expected float16 (the dtype of self)"));
  for (auto [n, c, hw, want] :
       {std::tuple<int64_t, int64_t, int64_t, const char*>{3, 4, 5, "N is 3; expected self's dim 0 (2)"},
        {2, 8, 5, "C is 8; expected self's dim 1 (4)"},
        {2, 4, 6, "HxW is 6; expected the product of self's dims after C (5)"}}) {
    EXPECT_EQ(aclnnGroupNormGetWorkspaceSize(d[0], d[1], d[2], n, c, hw, 2, 1e-5, d[3], d[4], d[5], &ws, &e),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_THAT(recent_error(), HasSubstr(want));
  }
  EXPECT_EQ(aclnnGroupNormGetWorkspaceSize(d[0], d[1], d[2], 2, 4, 5, 3, 1e-5, d[3], d[4], d[5], &ws, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("num_groups is 3; expected a positive divisor of C = 4"));
  EXPECT_EQ(d.phase1(&ws, &e, 0.0), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("eps is 0"));
  EXPECT_EQ(acl::live_executors(), 0u);
}

TEST_F(AclGroupNorm, StridedTensorsGiveTheDenseBits) {
  // self and out transposed in their last two dims ([N, C, W, H] memory for an [N, C, H, W] view), meanOut
  // transposed too: the call copies through the workspace and matches the dense call.
  ops::Problem p = problem(DType::kFloat32, {2, 8, 3, 5}, 4);
  Device dense(p);
  ASSERT_EQ(run(dense, nullptr), ACLNN_SUCCESS) << recent_error();
  std::vector<float> xt(2 * 8 * 3 * 5);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 8; ++c)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t w = 0; w < 5; ++w)
          xt[((n * 8 + c) * 5 + w) * 3 + h] = static_cast<float>(p.t[gn::kX].get(((n * 8 + c) * 3 + h) * 5 + w));
  DevTensor xs(ACL_FLOAT, {240}, xt.data()), os(ACL_FLOAT, {240}), ms(ACL_FLOAT, {8});
  const int64_t shape[] = {2, 8, 3, 5}, strides[] = {120, 15, 1, 3}, storage[] = {240};
  const int64_t mshape[] = {2, 4}, mstrides[] = {1, 2}, mstorage[] = {8};
  aclTensor* x = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, xs.device());
  aclTensor* o = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, os.device());
  aclTensor* m = aclCreateTensor(mshape, 2, ACL_FLOAT, mstrides, 0, ACL_FORMAT_ND, mstorage, 1, ms.device());
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(aclnnGroupNormGetWorkspaceSize(x, dense[1], dense[2], 2, 8, 15, 4, 1e-5, o, m, dense[5], &ws, &e),
            ACLNN_SUCCESS)
      << recent_error();
  EXPECT_GT(ws, 0u);  // the dense copies of self and out
  void* w = nullptr;
  ASSERT_EQ(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclnnGroupNorm(w, ws, e, nullptr), ACLNN_SUCCESS) << recent_error();
  const std::vector<unsigned char> got = os.read(), want = dense.t[gn::kOut]->read();
  const float* g = reinterpret_cast<const float*>(got.data());
  const float* r = reinterpret_cast<const float*>(want.data());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 8; ++c)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t wi = 0; wi < 5; ++wi)
          ASSERT_EQ(g[((n * 8 + c) * 5 + wi) * 3 + h], r[((n * 8 + c) * 3 + h) * 5 + wi]);
  const std::vector<unsigned char> gm = ms.read(), wm = dense.t[gn::kMean]->read();
  const float* gmf = reinterpret_cast<const float*>(gm.data());
  const float* wmf = reinterpret_cast<const float*>(wm.data());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t q = 0; q < 4; ++q) EXPECT_EQ(gmf[q * 2 + n], wmf[n * 4 + q]);
  aclrtFree(w);
  for (aclTensor* t : {x, o, m}) aclDestroyTensor(t);
}

TEST_F(AclGroupNorm, EmptySelfSucceedsWithoutWork) {
  ops::Problem p = problem(DType::kFloat32, {2, 4, 0}, 2);
  Device d(p);
  uint64_t ws = 1;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(d.phase1(&ws, &e), ACLNN_SUCCESS) << recent_error();
  EXPECT_EQ(ws, 0u);
  EXPECT_EQ(aclnnGroupNorm(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
}

}  // namespace
}  // namespace nnops::acl_test
