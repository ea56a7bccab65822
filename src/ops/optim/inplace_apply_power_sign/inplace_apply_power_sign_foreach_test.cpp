// Tests for inplace_apply_power_sign_foreach: bitwise the result of one single call per entry (mixed dtypes,
// every SIMD target, every thread count, strided entries), all-or-nothing validation with the entry named,
// cross-entry overlap, use_locking.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "nnops/ops/inplace_apply_power_sign.hpp"
#include "tests/test_util.hpp"

namespace nnops {
namespace {

using detail::HostBuffer;

// One entry of a list: var, m, grad of one dtype and shape.
struct Entry {
  HostBuffer var, m, grad;
  Entry(DType t, const std::vector<int64_t>& shape, std::mt19937_64& rng) : var(t, shape), m(t, shape), grad(t, shape) {
    testing::fill_random(var, rng, -2, 1);
    testing::fill_random(m, rng, -3, 0);
    testing::fill_random(grad, rng, -3, 0);
  }
  // Deep copies (HostBuffer's own copy would share the storage).
  Entry(const Entry& o) : var(o.var.clone()), m(o.m.clone()), grad(o.grad.clone()) {}
  Entry& operator=(const Entry&) = delete;
};

struct Hyper {
  double lr, logbase, sign_decay, beta;
};

std::vector<Entry> make_list(const std::vector<std::pair<DType, std::vector<int64_t>>>& spec, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Entry> list;
  list.reserve(spec.size());
  for (const auto& [t, shape] : spec) list.emplace_back(t, shape, rng);
  return list;
}

Status run_foreach(std::vector<Entry>& list, const Hyper& h, bool use_locking = false, const Context& ctx = {}) {
  std::vector<TensorView> v, m, g;
  for (Entry& e : list) {
    v.push_back(e.var.view());
    m.push_back(e.m.view());
    g.push_back(e.grad.view());
  }
  return inplace_apply_power_sign_foreach(v.data(), m.data(), g.data(), list.size(), h.lr, h.logbase, h.sign_decay,
                                          h.beta, use_locking, ctx);
}

// The single call with the scalars stored in the entry's dtype (HostBuffer::set rounds to nearest, ties to
// even), on one thread.
void run_singles(std::vector<Entry>& list, const Hyper& h) {
  for (Entry& e : list) {
    const DType t = e.var.dtype();
    HostBuffer lr(t, {1}), lb(t, {}), sd(t, {1}), beta(t, {});
    lr.set(0, h.lr);
    lb.set(0, h.logbase);
    sd.set(0, h.sign_decay);
    beta.set(0, h.beta);
    ASSERT_TRUE(inplace_apply_power_sign(e.var.view(), e.m.view(), lr.view(), lb.view(), sd.view(), beta.view(),
                                         e.grad.view(), false, Context{1})
                    .is_ok());
  }
}

::testing::AssertionResult same_bits(const std::vector<Entry>& a, const std::vector<Entry>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    for (const auto& [name, x, y] : {std::tuple{"vars", &a[i].var, &b[i].var}, std::tuple{"ms", &a[i].m, &b[i].m}}) {
      if (x->same_bytes(*y)) continue;
      int64_t k = 0;
      while (k < x->numel() && std::memcmp(static_cast<const char*>(x->data()) + k * dtype_size(x->dtype()),
                                           static_cast<const char*>(y->data()) + k * dtype_size(y->dtype()),
                                           dtype_size(x->dtype())) == 0) {
        ++k;
      }
      return ::testing::AssertionFailure() << name << "[" << i << "] differ at element " << k << ": " << x->get(k)
                                           << " vs " << y->get(k);
    }
  }
  return ::testing::AssertionSuccess();
}

// A parameter list of mixed dtypes and sizes: empty and rank-0 entries, sizes around kThreadBlock (256) and
// around the vector widths, and entries large enough to be split over threads.
std::vector<std::pair<DType, std::vector<int64_t>>> mixed_spec() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, bf16 = DType::kBFloat16;
  return {{f32, {64, 3, 3, 3}}, {f32, {64}},     {f16, {}},          {bf16, {0, 5}},      {f32, {255}},
          {bf16, {257}},        {f16, {1000}},   {f32, {40001}},     {bf16, {3, 1001}},   {f16, {17}},
          {f32, {1}},           {bf16, {70000}}, {f16, {2, 16384}},  {f32, {256, 64}},    {bf16, {7}}};
}

// Scalars that are not representable in the half types (so the per-dtype rounding matters).
constexpr Hyper kHyper = {0.1, 1.0, 0.8414709848078965, 0.9};

TEST(PowerSignForeach, BitwiseEqualsOneSingleCallPerEntry) {
  const std::vector<Entry> start = make_list(mixed_spec(), 11);
  // Per target: the half types' results are within one ulp of the float64 result on every target, but only
  // bitwise the same on targets of the same kind (float32 with FMA, or float64; see the kernel's NBs).
  testing::for_each_isa([&](const std::string&) {
    std::vector<Entry> want(start.begin(), start.end());
    run_singles(want, kHyper);
    for (int threads : {1, 2, 3, 7}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      std::vector<Entry> got(start.begin(), start.end());
      ASSERT_TRUE(run_foreach(got, kHyper, false, Context{threads}).is_ok());
      EXPECT_TRUE(same_bits(got, want));
    }
  });
}

// Several steps with a decaying sign_decay (what an optimizer does) stay bitwise on the single calls.
TEST(PowerSignForeach, StepsStayBitwiseOnSingleCalls) {
  std::vector<Entry> got = make_list(mixed_spec(), 12);
  std::vector<Entry> want(got.begin(), got.end());
  for (int step = 0; step < 5; ++step) {
    const Hyper h{0.01, std::log(2.0), 0.5 * (1 + std::cos(M_PI * step / 5.0)), 0.9};
    ASSERT_TRUE(run_foreach(got, h).is_ok());
    run_singles(want, h);
  }
  EXPECT_TRUE(same_bits(got, want));
}

// Strided entries (a transposed one, a padded one) give the bits of their dense copies.
TEST(PowerSignForeach, StridedEntriesMatchDense) {
  std::vector<Entry> dense = make_list({{DType::kFloat32, {6, 50}}, {DType::kBFloat16, {30, 40}}, {DType::kFloat16, {1000}}}, 13);
  const std::vector<Entry> start(dense.begin(), dense.end());
  // Entry 0 transposed-in-memory ([6, 50] with strides [1, 6]) for var only, entry 1 padded rows for all three.
  testing::StridedCopy v0(start[0].var, {1, 6}), m0(start[0].m, {50, 1}), g0(start[0].grad, {1, 6});
  testing::StridedCopy v1(start[1].var, {48, 1}), m1(start[1].m, {48, 1}), g1(start[1].grad, {48, 1});
  std::vector<TensorView> vs = {v0.view(), v1.view(), dense[2].var.view()};
  std::vector<TensorView> ms = {m0.view(), m1.view(), dense[2].m.view()};
  std::vector<TensorView> gs = {g0.view(), g1.view(), dense[2].grad.view()};
  ASSERT_TRUE(inplace_apply_power_sign_foreach(vs.data(), ms.data(), gs.data(), 3, kHyper.lr, kHyper.logbase,
                                               kHyper.sign_decay, kHyper.beta, false, Context{2})
                  .is_ok());
  std::vector<Entry> want(start.begin(), start.end());
  run_singles(want, kHyper);
  EXPECT_TRUE(v0.dense_copy().same_bytes(want[0].var));
  EXPECT_TRUE(m0.dense_copy().same_bytes(want[0].m));
  EXPECT_TRUE(v1.dense_copy().same_bytes(want[1].var));
  EXPECT_TRUE(m1.dense_copy().same_bytes(want[1].m));
  EXPECT_TRUE(dense[2].var.same_bytes(want[2].var));
  EXPECT_TRUE(dense[2].m.same_bytes(want[2].m));
  EXPECT_TRUE(v0.untouched_outside() && m1.untouched_outside() && g1.untouched_outside());
}

// A bad entry anywhere in the list: an error naming it, and no var or m of any entry written.
TEST(PowerSignForeach, AllOrNothingValidation) {
  struct Case {
    const char* what;
    std::function<void(std::vector<TensorView>& v, std::vector<TensorView>& m, std::vector<TensorView>& g,
                       std::vector<Entry>& list)>
        spoil;
    Hyper h;
    std::string expect;
  };
  HostBuffer wrong_shape(DType::kFloat32, {63});
  HostBuffer wrong_dtype(DType::kFloat16, {255});
  const Case cases[] = {
      {"m of entry 1 has another shape",
       [&](auto&, auto& m, auto&, auto&) { m[1] = wrong_shape.view(); }, kHyper, "entry 1 (vars[1], ms[1], grads[1]): m has shape [63]"},
      {"grad of entry 4 has another dtype",
       [&](auto&, auto&, auto& g, auto&) { g[4] = wrong_dtype.view(); }, kHyper, "entry 4 (vars[4], ms[4], grads[4]): grad has dtype"},
      // beta = 0.999 is 1.0 in bfloat16 (invalid) but fine in float32 and float16: entry 3 is the first bfloat16.
      {"beta rounds to 1 in bfloat16", [](auto&, auto&, auto&, auto&) {}, {0.1, 1.0, 1.0, 0.999}, "entry 3 (vars[3], ms[3], grads[3]): beta is 1"},
      {"lr not finite", [](auto&, auto&, auto&, auto&) {}, {INFINITY, 1.0, 1.0, 0.9}, "entry 0 (vars[0], ms[0], grads[0]): lr is inf"},
      {"grads[10] is inside vars[1]",
       [](auto& v, auto&, auto& g, auto&) {
         const int64_t n = 1;
         g[10] = TensorView::contiguous(static_cast<float*>(v[1].data()) + 5, DType::kFloat32, &n, 1);
       },
       kHyper, "vars[1] and grads[10] overlap in memory"},
      {"ms[1] is inside vars[4]",
       [](auto& v, auto& m, auto&, auto&) {
         const int64_t n = 64;
         m[1] = TensorView::contiguous(v[4].data(), DType::kFloat32, &n, 1);
       },
       kHyper, "ms[1] and vars[4] overlap in memory"},
      {"null data", [](auto& v, auto&, auto&, auto&) {
         const int64_t n = 255;
         v[4] = TensorView::contiguous(nullptr, DType::kFloat32, &n, 1);
       }, kHyper, "entry 4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<Entry> list = make_list(mixed_spec(), 14);
    std::vector<TensorView> v, m, g;
    for (Entry& e : list) {
      v.push_back(e.var.view());
      m.push_back(e.m.view());
      g.push_back(e.grad.view());
    }
    c.spoil(v, m, g, list);
    const std::vector<Entry> before(list.begin(), list.end());
    const Status s = inplace_apply_power_sign_foreach(v.data(), m.data(), g.data(), list.size(), c.h.lr, c.h.logbase,
                                                      c.h.sign_decay, c.h.beta, false, Context{2});
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("inplace_apply_power_sign_foreach: "), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << s.message();
    EXPECT_TRUE(same_bits(list, before));
  }
}

// Entries may share a gradient (only read); the results are those of separate copies of it.
TEST(PowerSignForeach, SharedGradIsAllowed) {
  std::vector<Entry> list = make_list({{DType::kFloat32, {300}}, {DType::kFloat32, {300}}}, 15);
  std::vector<Entry> want(list.begin(), list.end());
  std::memcpy(want[1].grad.data(), want[0].grad.data(), want[0].grad.bytes());
  run_singles(want, kHyper);
  std::vector<TensorView> v = {list[0].var.view(), list[1].var.view()}, m = {list[0].m.view(), list[1].m.view()},
                          g = {list[0].grad.view(), list[0].grad.view()};
  ASSERT_TRUE(inplace_apply_power_sign_foreach(v.data(), m.data(), g.data(), 2, kHyper.lr, kHyper.logbase,
                                               kHyper.sign_decay, kHyper.beta)
                  .is_ok());
  EXPECT_TRUE(same_bits(list, want));
}

TEST(PowerSignForeach, EmptyListIsANoOp) {
  EXPECT_TRUE(inplace_apply_power_sign_foreach(nullptr, nullptr, nullptr, 0, 0.1, 1.0, 1.0, 0.9).is_ok());
}

// use_locking: concurrent locked foreach calls over overlapping lists (each var in two lists, in opposite
// orders) neither deadlock nor interleave: the result is that of the two steps one after the other.
TEST(PowerSignForeach, LockingSerializesConcurrentCalls) {
  std::vector<Entry> list = make_list({{DType::kFloat32, {50000}}, {DType::kBFloat16, {30000}}, {DType::kFloat16, {999}}}, 16);
  std::vector<Entry> want(list.begin(), list.end());
  const Hyper h1 = kHyper, h2{0.02, 0.5, 1.0, 0.5};
  // The two steps commute only if applied in some order; both orders are computed and either must match.
  std::vector<Entry> want_21(list.begin(), list.end());
  run_singles(want, h1);
  run_singles(want, h2);
  run_singles(want_21, h2);
  run_singles(want_21, h1);
  std::vector<TensorView> v, m, g;
  for (Entry& e : list) {
    v.push_back(e.var.view());
    m.push_back(e.m.view());
    g.push_back(e.grad.view());
  }
  std::vector<TensorView> rv(v.rbegin(), v.rend()), rm(m.rbegin(), m.rend()), rg(g.rbegin(), g.rend());
  Status s1, s2;
  std::thread a([&] { s1 = inplace_apply_power_sign_foreach(v.data(), m.data(), g.data(), 3, h1.lr, h1.logbase, h1.sign_decay, h1.beta, true, Context{1}); });
  std::thread b([&] { s2 = inplace_apply_power_sign_foreach(rv.data(), rm.data(), rg.data(), 3, h2.lr, h2.logbase, h2.sign_decay, h2.beta, true, Context{1}); });
  a.join();
  b.join();
  ASSERT_TRUE(s1.is_ok() && s2.is_ok());
  EXPECT_TRUE(same_bits(list, want) || same_bits(list, want_21));
}

}  // namespace
}  // namespace nnops
