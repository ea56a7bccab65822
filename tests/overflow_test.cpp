// Sizes that cannot overflow, and views that cannot reach outside their memory (issue 6, items 3 and 4).
//
// Every size nnops derives from caller input (element counts, byte counts, stride spans, offsets,
// workspace sizes, the .npy header) is computed with checked 64-bit arithmetic; an overflow is an error
// (kInvalidArgument / ACLNN_ERR_PARAM_INVALID), never a wrapped size. The "huge view" tests put a view of
// more than 2^31 (or 2^62) elements over a few hundred bytes: only validation can stop the call before a
// byte is touched, and ASan (preset asan) would report any access past the small region.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "aclnn_group_normalization_grad.h"
#include "aclnn_inplace_apply_power_sign.h"
#include "nnops/nnops.hpp"
#include "src/acl/executor.hpp"
#include "src/core/check.hpp"
#include "src/ops/op_desc.hpp"
#include "tests/acl/acl_test_util.hpp"
#include "tools/cli/npy.hpp"

namespace nnops {
namespace {

using ::testing::HasSubstr;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2p31 = int64_t{1} << 31;

// ---- C++ API: TensorView products and spans --------------------------------------------------------

TEST(OverflowCpp, NumelOverflowIsMinusOneNotAWrappedCount) {
  float buf[4] = {};
  // 2^32 * 2^32 = 2^64 wraps to 0 in uint64: a wrapped product would look empty and succeed.
  EXPECT_EQ(TensorView(buf, DType::kFloat32, {int64_t{1} << 32, int64_t{1} << 32}).numel(), -1);
  EXPECT_EQ(TensorView(buf, DType::kFloat32, {kMax, 2}).numel(), -1);
  EXPECT_EQ(TensorView(buf, DType::kFloat32, {3, 0, kMax, kMax}).numel(), 0);  // a 0 dim is empty, not overflow
  EXPECT_EQ(TensorView(buf, DType::kFloat32, {kMax}).numel(), kMax);
  EXPECT_EQ(TensorView(buf, DType::kFloat32, {-1, 4}).numel(), -1);
}

TEST(OverflowCpp, ByteCountOverflowIsRejected) {
  float buf[4] = {};
  int64_t n = 0;
  // kMax elements fit int64, their bytes do not.
  Status s = detail::check_tensor("op", "x", TensorView(buf, DType::kFloat32, {kMax}), &n);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("overflows 64-bit byte counts"));
  s = detail::check_tensor("op", "x", TensorView(buf, DType::kFloat32, {int64_t{1} << 62}), &n);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  // A product that wraps to exactly 0 or to a small positive number.
  s = detail::check_tensor("op", "x", TensorView(buf, DType::kFloat32, {int64_t{1} << 32, int64_t{1} << 32}), &n);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  s = detail::check_tensor("op", "x", TensorView(buf, DType::kFloat32, {(int64_t{1} << 62) + 1, 4}), &n);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
}

TEST(OverflowCpp, SpanPastTheEndOfTheAddressSpaceIsRejected) {
  int64_t n = 0;
  void* top = reinterpret_cast<void*>(UINTPTR_MAX - 15);
  Status s = detail::check_tensor("op", "x", TensorView(top, DType::kFloat32, {8}), &n);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("past the end of the address space"));
}

TEST(OverflowCpp, OverlapTestDoesNotWrap) {
  // Two views near the top of the address space; a wrapped end address would make them look disjoint.
  char* top = reinterpret_cast<char*>(UINTPTR_MAX - 4095);
  TensorView a(top, DType::kFloat32, {512}), b(top + 64, DType::kFloat32, {16});
  EXPECT_TRUE(detail::overlaps(a, b));
}

TEST(OverflowCpp, HugeGroupNormViewOverASmallBufferIsRejectedBeforeAccess) {
  std::vector<float> small(64, 1.0f), out(64, 7.0f);
  // [1, 1, 2^31 + 8]: more than 2^31 elements (an int32 count would wrap negative) over 256 bytes. The
  // C++ API trusts the pointer (it cannot see the allocation), so make the shapes inconsistent in a way that
  // only 64-bit arithmetic notices: dy's count equals x's only modulo 2^32.
  TensorView x(small.data(), DType::kFloat32, {1, 1, k2p31 + 8});
  TensorView dy(small.data(), DType::kFloat32, {1, 1, 8});
  TensorView st(small.data(), DType::kFloat32, {1, 1});
  TensorView dx(out.data(), DType::kFloat32, {1, 1, k2p31 + 8});
  Status s = group_normalization_grad(x, dy, dy, st, st, dx);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("dy has shape [1, 1, 8]; expected the shape of x [1, 1, 2147483656]"));
  for (float v : out) EXPECT_EQ(v, 7.0f);
}

TEST(OverflowCpp, PowerSignShapesWhoseProductOverflows) {
  std::vector<float> var(8, 1.0f), m(8, 0.0f), grad(8, 0.5f);
  float lr = 0.1f, lb = 1.0f, sd = 1.0f, beta = 0.5f;
  const int64_t big = int64_t{1} << 33;
  TensorView sc_lr(&lr, DType::kFloat32, {1}), sc_lb(&lb, DType::kFloat32, {1}), sc_sd(&sd, DType::kFloat32, {1}),
      sc_b(&beta, DType::kFloat32, {1});
  // [2^33, 2^33, 2^33]: the product wraps; [2^33, 2^31]: 2^64 wraps to exactly 0 (would look empty).
  for (std::initializer_list<int64_t> shape : {std::initializer_list<int64_t>{big, big, big}, {big, k2p31}}) {
    TensorView v(var.data(), DType::kFloat32, shape), mm(m.data(), DType::kFloat32, shape),
        g(grad.data(), DType::kFloat32, shape);
    Status s = inplace_apply_power_sign(v, mm, sc_lr, sc_lb, sc_sd, sc_b, g);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    EXPECT_THAT(s.message(), HasSubstr("var has shape"));
  }
  for (float x : var) EXPECT_EQ(x, 1.0f);
  for (float x : m) EXPECT_EQ(x, 0.0f);
}

TEST(OverflowCpp, MisalignedDataIsRejected) {
  // Found by fuzz_aclnn: a float32 tensor at an odd address was read through a float pointer (UB).
  alignas(8) unsigned char buf[64] = {};
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    int64_t n = 0;
    Status s = detail::check_tensor("op", "x", TensorView(buf + 1, t, {4}), &n);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("-byte element size"));
    EXPECT_TRUE(detail::check_tensor("op", "x", TensorView(buf + dtype_size(t), t, {4}), &n).is_ok());
  }
  int64_t n = 0;
  EXPECT_EQ(detail::check_tensor("op", "x", TensorView(buf + 2, DType::kFloat32, {4}), &n).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(detail::check_tensor("op", "x", TensorView(buf + 1, DType::kFloat32, {0}), &n).is_ok());  // empty
}

// Every operator of the descriptor list: a main shape whose element count overflows int64, over a small
// buffer, and misaligned data in each tensor position: rejected before a byte is touched.
TEST(OverflowCpp, EveryOperatorRejectsOverflowingShapesAndMisalignedData) {
  for (const ops::OpDesc* d : ops::all_ops()) {
    SCOPED_TRACE(d->name);
    const int rank = std::max(d->min_rank, 3);
    const std::vector<int64_t> huge(rank, int64_t{1} << 33);
    alignas(64) unsigned char buf[4096];
    std::memset(buf, 0x5A, sizeof buf);
    const std::vector<std::vector<int64_t>> shapes = d->shapes(huge, d->attrs_for(huge));
    std::vector<TensorView> v;
    for (std::size_t i = 0; i < d->tensors.size(); ++i) {
      const DType t = DType::kFloat32;
      v.push_back(TensorView::contiguous(buf + 64 * i, t, shapes[i].data(), static_cast<int>(shapes[i].size())));
    }
    Status s = ops::run_prepared(d->name, d->prepare, v.data(), d->attrs_for(huge), Context{});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    EXPECT_THAT(s.message(), HasSubstr("overflows"));
    for (unsigned char c : buf) ASSERT_EQ(c, 0x5A);

    // A valid small call, then each tensor one byte off its alignment.
    ops::ProblemSpec spec;
    spec.shape = d->test_shapes.back();
    spec.attrs = d->attrs_for(spec.shape);
    ops::Problem p = d->make_problem(spec);
    const ops::Problem before = p.clone();
    for (std::size_t i = 0; i < d->tensors.size(); ++i) {
      if (p.t[i].numel() == 0) continue;
      std::vector<TensorView> w = p.views();
      w[i] = TensorView::contiguous(static_cast<unsigned char*>(p.t[i].data()) + 1, p.t[i].dtype(),
                                    p.t[i].shape().data(), static_cast<int>(p.t[i].shape().size()));
      s = ops::run_prepared(d->name, d->prepare, w.data(), p.attrs, Context{});
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << d->tensors[i].name;
      EXPECT_THAT(s.message(), HasSubstr(std::string(d->tensors[i].name) + " has data pointer"));
      for (std::size_t k = 0; k < p.t.size(); ++k) EXPECT_TRUE(p.t[k].same_bytes(before.t[k]));
    }
  }
}

// ---- C API: storage spans, blocks, workspace --------------------------------------------------------

using acl_test::AclTest;
using acl_test::recent_error;
using OverflowAcl = AclTest;

aclTensor* make(const std::vector<int64_t>& view, const std::vector<int64_t>& strides, int64_t offset,
                const std::vector<int64_t>& storage, void* data, aclDataType dt = ACL_FLOAT) {
  return aclCreateTensor(view.data(), view.size(), dt, strides.data(), offset, ACL_FORMAT_ND, storage.data(),
                         storage.size(), data);
}

std::vector<int64_t> dense(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

// A block of device memory holding a small PowerSign problem: var, m, grad (n each), then lr, logbase,
// sign_decay, beta.
struct PsBlock {
  static constexpr int64_t n = 16;
  void* block = nullptr;
  float* f = nullptr;
  std::vector<float> before;
  PsBlock() {
    EXPECT_EQ(aclrtMalloc(&block, bytes(), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::vector<float> host(3 * n + 4);
    for (int64_t i = 0; i < 3 * n; ++i) host[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
    host[3 * n] = 0.01f, host[3 * n + 1] = 1.0f, host[3 * n + 2] = 0.99f, host[3 * n + 3] = 0.9f;
    EXPECT_EQ(aclrtMemcpy(block, bytes(), host.data(), bytes(), ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    f = static_cast<float*>(block);
    before = host;
  }
  static std::size_t bytes() { return (3 * n + 4) * sizeof(float); }
  bool unchanged() const { return std::memcmp(block, before.data(), bytes()) == 0; }
  aclTensor* vec(int64_t at, int64_t count) { return make({count}, {1}, 0, {count}, f + at); }
  aclTensor* scalar(int k) { return make({1}, {1}, 0, {1}, f + 3 * n + k); }
};

aclnnStatus ps_phase1(aclTensor* var, aclTensor* m, aclTensor* lr, aclTensor* lb, aclTensor* sd, aclTensor* beta,
                      aclTensor* grad, aclOpExecutor** e) {
  uint64_t ws = 0;
  return aclnnInplaceApplyPowerSignGetWorkspaceSize(var, m, lr, lb, sd, beta, grad, false, &ws, e);
}

TEST_F(OverflowAcl, StorageShapeWhoseProductOverflowsIsRejected) {
  float buf[8] = {};
  aclTensor* t = make({2}, {1}, 0, {int64_t{1} << 32, int64_t{1} << 32}, buf);  // 2^64 wraps to 0
  ASSERT_NE(t, nullptr);
  PsBlock b;
  aclTensor *m = b.vec(PsBlock::n, 2), *g = b.vec(2 * PsBlock::n, 2);
  aclTensor *lr = b.scalar(0), *lb = b.scalar(1), *sd = b.scalar(2), *beta = b.scalar(3);
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(ps_phase1(t, m, lr, lb, sd, beta, g, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("varRef has storage shape [4294967296, 4294967296]"));
  EXPECT_EQ(e, nullptr);
  for (aclTensor* x : {t, m, g, lr, lb, sd, beta}) aclDestroyTensor(x);
}

TEST_F(OverflowAcl, StrideSpanOverflowIsRejected) {
  PsBlock b;
  aclTensor *m = b.vec(PsBlock::n, 2), *g = b.vec(2 * PsBlock::n, 2);
  aclTensor *lr = b.scalar(0), *lb = b.scalar(1), *sd = b.scalar(2), *beta = b.scalar(3);
  const std::vector<int64_t> cases[][2] = {
      {{2}, {kMax}},        // (2 - 1) * kMax fits, offset + it does not
      {{3}, {kMax}},        // (3 - 1) * kMax overflows
      {{2}, {-kMax}},       // reaches below element 0
      {{kMax, 2}, {2, 1}},  // product of dims fits, the span does not
  };
  for (const auto& c : cases) {
    aclTensor* v = make(c[0], c[1], 1, {16}, b.f);
    ASSERT_NE(v, nullptr);
    aclOpExecutor* e = nullptr;
    EXPECT_EQ(ps_phase1(v, m, lr, lb, sd, beta, g, &e), ACLNN_ERR_PARAM_INVALID);
    const std::string msg = recent_error();
    EXPECT_THAT(msg, HasSubstr("varRef")) << msg;
    EXPECT_EQ(e, nullptr);
    aclDestroyTensor(v);
  }
  EXPECT_TRUE(b.unchanged());
  for (aclTensor* x : {m, g, lr, lb, sd, beta}) aclDestroyTensor(x);
}

TEST_F(OverflowAcl, HugeViewOverASmallBlockIsRejectedBeforeAccess) {
  // More than 2^31 elements (and 2^62) claimed over a 208-byte aclrtMalloc block, with storage dims that
  // agree with the view: only the block's real size can refuse it.
  PsBlock b;
  aclTensor *lr = b.scalar(0), *lb = b.scalar(1), *sd = b.scalar(2), *beta = b.scalar(3);
  for (int64_t n : {k2p31 + 1, int64_t{1} << 62}) {
    aclTensor* var = make({n}, {1}, 0, {n}, b.f);
    aclTensor* m = make({n}, {1}, 0, {n}, b.f + PsBlock::n);
    aclTensor* g = make({n}, {1}, 0, {n}, b.f + 2 * PsBlock::n);
    aclOpExecutor* e = nullptr;
    const aclnnStatus st = ps_phase1(var, m, lr, lb, sd, beta, g, &e);
    EXPECT_EQ(st, ACLNN_ERR_PARAM_INVALID);
    const std::string msg = recent_error();
    // 2^62 float32 elements are more bytes than the address space has.
    EXPECT_THAT(msg, HasSubstr(n == k2p31 + 1 ? "varRef needs 8589934596 bytes at 0x"
                                              : "varRef reaches past the end of the address space"))
        << msg;
    EXPECT_THAT(msg, HasSubstr("aclrtMalloc block (208 bytes at 0x")) << msg;
    EXPECT_EQ(e, nullptr);
    for (aclTensor* x : {var, m, g}) aclDestroyTensor(x);
  }
  // GroupNormalizationGrad: x = [1, 1, 2^31 + 1] over the block.
  const std::vector<int64_t> big = {1, 1, k2p31 + 1}, ng = {1, 1};
  aclTensor* x = make(big, dense(big), 0, big, b.f);
  aclTensor* dx = make(big, dense(big), 0, big, b.f + PsBlock::n);
  aclTensor* st = make(ng, dense(ng), 0, ng, b.f + 3 * PsBlock::n);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnGroupNormalizationGradGetWorkspaceSize(x, x, x, st, st, dx, &ws, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("x needs 8589934596 bytes at 0x"));
  EXPECT_EQ(e, nullptr);
  EXPECT_TRUE(b.unchanged());
  for (aclTensor* t : {x, dx, st, lr, lb, sd, beta}) aclDestroyTensor(t);
}

// Regression (found while fuzzing the C API): tensorData inside an aclrtMalloc block with an offset (and
// storage dims) that move the view past the block's end. The view's first element then lies outside every
// block, looked like ordinary host memory, and was read in phase one (the scalars) and written in phase two.
TEST_F(OverflowAcl, OffsetThatLeavesTheBlockIsRejected) {
  PsBlock b;
  aclTensor *m = b.vec(PsBlock::n, PsBlock::n), *g = b.vec(2 * PsBlock::n, PsBlock::n);
  aclTensor *lr = b.scalar(0), *lb = b.scalar(1), *sd = b.scalar(2), *beta = b.scalar(3);
  const int64_t past = 3 * PsBlock::n + 4 + 16;  // 16 elements beyond the end of the block
  // var: 16 elements starting past the block.
  aclTensor* var = make({PsBlock::n}, {1}, past, {past + PsBlock::n}, b.f);
  // beta: a scalar read in phase one, past the block.
  aclTensor* beta_out = make({1}, {1}, past, {past + 1}, b.f);
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(ps_phase1(var, m, lr, lb, sd, beta, g, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("varRef needs 64 bytes at 0x"));
  EXPECT_EQ(e, nullptr);
  aclTensor* var_ok = b.vec(0, PsBlock::n);
  EXPECT_EQ(ps_phase1(var_ok, m, lr, lb, sd, beta_out, g, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("beta needs 4 bytes at 0x"));
  EXPECT_EQ(e, nullptr);
  // A view that starts inside the block and ends past it (offset 40 of 52 elements, 16 long).
  aclTensor* var_tail = make({PsBlock::n}, {1}, 40, {40 + PsBlock::n}, b.f);
  EXPECT_EQ(ps_phase1(var_tail, m, lr, lb, sd, beta, g, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("varRef needs 64 bytes at 0x"));
  EXPECT_EQ(e, nullptr);
  EXPECT_TRUE(b.unchanged());
  for (aclTensor* x : {var, beta_out, var_ok, var_tail, m, g, lr, lb, sd, beta}) aclDestroyTensor(x);
  EXPECT_EQ(acl::live_executors(), 0u);
}

TEST_F(OverflowAcl, MisalignedTensorDataIsRejected) {
  PsBlock b;
  aclTensor *m = b.vec(PsBlock::n, 4), *g = b.vec(2 * PsBlock::n, 4);
  aclTensor *lr = b.scalar(0), *lb = b.scalar(1), *sd = b.scalar(2), *beta = b.scalar(3);
  aclTensor* var = make({4}, {1}, 0, {4}, static_cast<char*>(b.block) + 2);
  aclTensor* beta_odd = make({1}, {1}, 0, {1}, reinterpret_cast<char*>(b.f + 3 * PsBlock::n + 3) - 1);
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(ps_phase1(var, m, lr, lb, sd, beta, g, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("var has data pointer"));
  aclTensor* var_ok = b.vec(0, 4);
  EXPECT_EQ(ps_phase1(var_ok, m, lr, lb, sd, beta_odd, g, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("beta has data pointer"));
  EXPECT_TRUE(b.unchanged());
  for (aclTensor* x : {var, var_ok, beta_odd, m, g, lr, lb, sd, beta}) aclDestroyTensor(x);
}

TEST_F(OverflowAcl, WorkspaceSizeIsCheckedAgainstTheBlock) {
  // A GroupNormalizationGrad plan that needs a workspace (threads share groups), launched with a workspace
  // size that claims more than its block holds.
  acl_test::ScopedThreads threads(2);
  const std::vector<int64_t> shape = {1, 1, 1 << 16}, ng = {1, 1};
  acl_test::DevTensor x(ACL_FLOAT, shape), dy(ACL_FLOAT, shape), gamma(ACL_FLOAT, shape), dx(ACL_FLOAT, shape);
  acl_test::DevTensor mean(ACL_FLOAT, ng), rstd(ACL_FLOAT, ng);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(aclnnGroupNormalizationGradGetWorkspaceSize(x, dy, gamma, mean, rstd, dx, &ws, &e), ACLNN_SUCCESS)
      << recent_error();
  ASSERT_GT(ws, 0u);
  void* small = nullptr;
  ASSERT_EQ(aclrtMalloc(&small, ws / 2, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclnnGroupNormalizationGrad(small, ws, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("workspace does not hold"));
  EXPECT_EQ(aclnnGroupNormalizationGrad(small, UINT64_MAX, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("workspace does not hold"));
  EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
  aclrtFree(small);
}

TEST_F(OverflowAcl, ViewsOutsideStorageAreRejected) {
  PsBlock b;
  aclTensor *m = b.vec(PsBlock::n, 4), *g = b.vec(2 * PsBlock::n, 4);
  aclTensor *lr = b.scalar(0), *lb = b.scalar(1), *sd = b.scalar(2), *beta = b.scalar(3);
  struct Case {
    std::vector<int64_t> view, strides;
    int64_t offset;
    std::vector<int64_t> storage;
    const char* why;
  } cases[] = {
      {{4}, {1}, 1, {4}, "reaches elements 1 to 4 of a storage of 4"},
      {{4}, {1}, -1, {8}, "offset -1"},
      {{4}, {-1}, 0, {8}, "reaches elements -3 to 0"},
      {{4}, {1}, 0, {3}, "of a storage of 3"},
      {{4}, {1}, 0, {-4}, "storage shape [-4]"},
      {{4}, {1}, 0, {}, "of a storage of 1"},  // rank-0 storage: one element
  };
  for (const Case& c : cases) {
    aclTensor* v = make(c.view, c.strides, c.offset, c.storage, b.f);
    ASSERT_NE(v, nullptr);
    aclOpExecutor* e = nullptr;
    EXPECT_EQ(ps_phase1(v, m, lr, lb, sd, beta, g, &e), ACLNN_ERR_PARAM_INVALID) << c.why;
    EXPECT_THAT(recent_error(), HasSubstr(c.why));
    aclDestroyTensor(v);
  }
  EXPECT_TRUE(b.unchanged());
  for (aclTensor* x : {m, g, lr, lb, sd, beta}) aclDestroyTensor(x);
}

TEST_F(OverflowAcl, OverlapRulesFollowTheSpec) {
  // GroupNormalizationGrad: dx may be dy exactly; partial overlap with dy, or any overlap with x, gamma,
  // mean, rstd is an error. PowerSign: var, m, grad pairwise disjoint. Inputs may overlap each other.
  void* blk = nullptr;
  ASSERT_EQ(aclrtMalloc(&blk, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(blk, 4096, 0, 4096), ACL_SUCCESS);
  float* f = static_cast<float*>(blk);
  const std::vector<int64_t> s = {1, 2, 8}, ng = {1, 2};
  auto t = [&](int64_t at) { return make(s, dense(s), 0, s, f + at); };
  aclTensor *x = t(0), *dy = t(32), *gamma = t(0) /* = x: inputs may alias */, *dx_shift = t(36), *dx_x = t(8);
  aclTensor* st = make(ng, dense(ng), 0, ng, f + 900);
  aclTensor* dx_st = t(895);
  aclTensor* dx_dy = t(32);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnGroupNormalizationGradGetWorkspaceSize(x, dy, gamma, st, st, dx_dy, &ws, &e), ACLNN_SUCCESS)
      << recent_error();
  EXPECT_EQ(aclnnGroupNormalizationGrad(nullptr, 0, e, nullptr), ACLNN_SUCCESS) << recent_error();
  EXPECT_EQ(aclnnGroupNormalizationGradGetWorkspaceSize(x, dy, gamma, st, st, dx_shift, &ws, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("dx and dy overlap"));
  EXPECT_EQ(aclnnGroupNormalizationGradGetWorkspaceSize(x, dy, gamma, st, st, dx_x, &ws, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("dx and x overlap"));
  EXPECT_EQ(aclnnGroupNormalizationGradGetWorkspaceSize(x, dy, gamma, st, st, dx_st, &ws, &e), ACLNN_ERR_PARAM_INVALID);
  EXPECT_THAT(recent_error(), HasSubstr("dx and mean overlap"));
  for (aclTensor* a : {x, dy, gamma, dx_shift, dx_x, st, dx_st, dx_dy}) aclDestroyTensor(a);
  aclrtFree(blk);
}

// ---- .npy header -----------------------------------------------------------------------------------

std::vector<uint8_t> npy_file(const std::string& dict, std::size_t data_bytes = 0) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::vector<uint8_t> f = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(h.size() & 0xff), static_cast<uint8_t>(h.size() >> 8)};
  f.insert(f.end(), h.begin(), h.end());
  f.resize(f.size() + data_bytes, 0);
  return f;
}

TEST(OverflowNpy, ElementAndByteCountsAreChecked) {
  cli::NpyArray a;
  auto parse = [&](const std::string& dict, std::size_t data = 0) {
    const std::vector<uint8_t> f = npy_file(dict, data);
    return cli::parse_npy(f.data(), f.size(), &a);
  };
  // 2^32 * 2^32 elements: wraps to 0 (an empty array) in unchecked arithmetic.
  Status s = parse("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }");
  EXPECT_THAT(s.message(), HasSubstr("more elements than fit in 64 bits"));
  // 2^62 elements fit int64; their float32 bytes do not (2^64 wraps to 0).
  s = parse("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }");
  EXPECT_THAT(s.message(), HasSubstr("more bytes than fit in 64 bits"));
  // A dimension above int64.
  s = parse("{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,), }");
  EXPECT_THAT(s.message(), HasSubstr("does not fit in 64 bits"));
  // 2^31 + 1 elements claimed over 8 bytes of data: refused before any allocation of that size.
  s = parse("{'descr': '<f2', 'fortran_order': True, 'shape': (2147483649,), }", 8);
  EXPECT_THAT(s.message(), HasSubstr("truncated data"));
  // Zero-size arrays with huge other dims are fine.
  s = parse("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9223372036854775807), }");
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(a.numel, 0);
  // A 2.0 header length of 4 GiB - 1 is refused, not read.
  std::vector<uint8_t> v2 = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff};
  s = cli::parse_npy(v2.data(), v2.size(), &a);
  EXPECT_THAT(s.message(), HasSubstr("accepts at most"));
}

}  // namespace
}  // namespace nnops
