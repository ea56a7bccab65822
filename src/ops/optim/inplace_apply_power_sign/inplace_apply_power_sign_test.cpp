// Tests for InplaceApplyPowerSign: results against the float64 reference on every SIMD target, every
// validation error, special values, empty tensors, thread-count independence and use_locking.
#include "nnops/ops/inplace_apply_power_sign.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "src/ops/optim/inplace_apply_power_sign/inplace_apply_power_sign_impl.hpp"
#include "tests/test_util.hpp"

namespace nnops {
namespace {

using detail::HostBuffer;
using power_sign::Scalars;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr DType kAllDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// One call's tensors. Scalars are stored in T, so the values the operator sees are the T-rounded ones;
// scalars() reads them back exactly.
struct Problem {
  HostBuffer var, m, grad, lr, logbase, sign_decay, beta;

  Problem(DType t, const std::vector<int64_t>& shape, const Scalars& s, const std::vector<int64_t>& scalar_shape = {})
      : var(t, shape),
        m(t, shape),
        grad(t, shape),
        lr(t, scalar_shape),
        logbase(t, scalar_shape),
        sign_decay(t, scalar_shape),
        beta(t, scalar_shape) {
    lr.set(0, s.lr);
    logbase.set(0, s.logbase);
    sign_decay.set(0, s.sign_decay);
    beta.set(0, s.beta);
  }

  Scalars scalars() const { return {lr.get(0), logbase.get(0), sign_decay.get(0), beta.get(0)}; }

  Status run(bool use_locking = false, const Context& ctx = {}) const {
    return inplace_apply_power_sign(var.view(), m.view(), lr.view(), logbase.view(), sign_decay.view(), beta.view(),
                                    grad.view(), use_locking, ctx);
  }
};

// Exact agreement: every output is the float64 reference correctly rounded to T (value and sign of zero;
// any NaN matches any NaN). float32 always gets this (the kernel does the reference's float64 operations
// and rounds once). float16/bfloat16 get it on the float64 path: on targets without fused multiply-add,
// and for every element the float32 path's certificate rejects (cancellation, non-finite values, results
// near overflow, tiny bfloat16 gradients); elsewhere they are within the one ulp of docs/semantics.md, which verify()
// checks. See the NBs in inplace_apply_power_sign_cpu.cc.
::testing::AssertionResult outputs_exact(const Scalars& s, const HostBuffer& var0, const HostBuffer& m0,
                                         const HostBuffer& grad, const HostBuffer& var1, const HostBuffer& m1) {
  const DType t = var1.dtype();
  int64_t bad = 0;
  std::string first;
  auto same = [](double got, double want) {
    return std::isnan(want) ? std::isnan(got) : (got == want && std::signbit(got) == std::signbit(want));
  };
  for (int64_t i = 0; i < var1.numel(); ++i) {
    double vr, mr;
    power_sign::reference(s, var0.get(i), m0.get(i), grad.get(i), &vr, &mr);
    const double vw = round_to_dtype(vr, t), mw = round_to_dtype(mr, t);
    if (same(var1.get(i), vw) && same(m1.get(i), mw)) continue;
    if (bad++ == 0) {
      char buf[400];
      std::snprintf(buf, sizeof buf,
                    "i=%lld var=%.17g m=%.17g grad=%.17g: var_new=%.17g want %.17g (ref %.17g), m_new=%.17g want "
                    "%.17g (ref %.17g)",
                    static_cast<long long>(i), var0.get(i), m0.get(i), grad.get(i), var1.get(i), vw, vr, m1.get(i), mw,
                    mr);
      first = buf;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << var1.numel() << " elements differ from round(ref) in "
                                       << dtype_name(t) << "; first: " << first;
}

// Runs p, then checks the outputs against the docs/semantics.md bound and, for float32 or when `exact`, exactly.
void run_and_compare(const Problem& p, bool exact = false) {
  const HostBuffer var0 = p.var.clone(), m0 = p.m.clone();
  ASSERT_TRUE(p.run().is_ok());
  if (exact || p.var.dtype() == DType::kFloat32) {
    EXPECT_TRUE(outputs_exact(p.scalars(), var0, m0, p.grad, p.var, p.m));
  }
  // docs/semantics.md: round_to_dtype(ref) or one ulp of T from it; NaN meets NaN, infinities match exactly.
  const detail::VerifyReport r = power_sign::verify(p.scalars(), var0, m0, p.grad, p.var, p.m, 1);
  EXPECT_EQ(r.checked, 2 * p.var.numel());
  EXPECT_TRUE(r.pass()) << r.failures << " failures, worst |err|/bound " << r.worst_ratio;
}

std::string shape_name(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// ---- results -------------------------------------------------------------------------------------

class PowerSignDtypeTest : public ::testing::TestWithParam<DType> {};

INSTANTIATE_TEST_SUITE_P(PowerSign, PowerSignDtypeTest, ::testing::ValuesIn(kAllDtypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return dtype_name(info.param); });

// Sizes around every vector width (1 lane to 16 float lanes: n mod N hits every tail), ranks 0, 1 and 4,
// random data over a sweep of magnitudes that stays inside T's range (float16 tops out at 65504).
TEST_P(PowerSignDtypeTest, RandomSweepMatchesReference) {
  const DType t = GetParam();
  struct Range {
    double lo, hi;
  };
  const std::vector<Range> ranges = t == DType::kFloat16 ? std::vector<Range>{{0, 0}, {-3, 3}, {-7, 4}}
                                                         : std::vector<Range>{{0, 0}, {-3, 3}, {-30, 30}};
  const std::vector<std::vector<int64_t>> shapes = {{},   {1},    {2},          {7},          {15},        {16},
                                                    {17}, {1000}, {2, 3, 5, 7}, {1, 4, 1, 9}, {3, 1, 1, 1}};
  const Scalars scalar_sets[] = {{0.01, std::log(2.0), 1.0, 0.9},
                                 {0.5, 1.0, 0.37, 0.0},
                                 {1.7, 2.3, 0.99, 0.5},
                                 {1e-4, 0.25, -3.0, 0.99}};  // 0.999 would be 1.0 in bfloat16
  testing::for_each_isa([&](const std::string&) {
    std::mt19937_64 rng(1234);
    for (const auto& shape : shapes) {
      for (const Range& rv : ranges) {
        for (const Range& rg : ranges) {
          for (const Scalars& s : scalar_sets) {
            SCOPED_TRACE("shape " + shape_name(shape) + " var/m 10^[" + std::to_string(rv.lo) + "," +
                         std::to_string(rv.hi) + "] grad 10^[" + std::to_string(rg.lo) + "," + std::to_string(rg.hi) +
                         "] beta " + std::to_string(s.beta));
            Problem p(t, shape, s, shape.size() % 2 ? std::vector<int64_t>{1} : std::vector<int64_t>{});
            testing::fill_random(p.var, rng, rv.lo, rv.hi);
            testing::fill_random(p.m, rng, rv.lo, rv.hi);
            testing::fill_random(p.grad, rng, rg.lo, rg.hi);
            run_and_compare(p);
          }
        }
      }
    }
  });
}

// A size that is split over threads and ends in a partial vector.
TEST_P(PowerSignDtypeTest, LargeMatchesReference) {
  const DType t = GetParam();
  const int64_t n = (int64_t{1} << 20) + 13;
  testing::for_each_isa([&](const std::string&) {
    std::mt19937_64 rng(77);
    Problem p(t, {n}, {0.003, 0.7, 0.9, 0.95});
    testing::fill_random(p.var, rng, -2, 2);
    testing::fill_random(p.m, rng, -2, 2);
    testing::fill_random(p.grad, rng, -3, 1);
    run_and_compare(p);
  });
}

// var ~= lr * e * grad: the result is a small difference of nearly equal numbers. A float32 evaluation
// of var - (coef * grad) rounds the product first and the subtraction then exposes that error in full;
// the float64 kernel must still return round(ref).
TEST_P(PowerSignDtypeTest, CancellationStaysCorrectlyRounded) {
  const DType t = GetParam();
  const int64_t n = 4099;
  testing::for_each_isa([&](const std::string&) {
    std::mt19937_64 rng(99);
    Problem p(t, {n}, {0.0137, 0.693, 0.77, 0.8});
    const Scalars s = p.scalars();
    // m = grad makes m_new have grad's sign, so sign_gm = +1 and the coefficient is lr * exp(logbase * decay).
    const double coef = s.lr * std::exp(s.logbase * s.sign_decay);
    testing::fill_random(p.grad, rng, -2, 2);
    for (int64_t i = 0; i < n; ++i) {
      p.m.set(i, p.grad.get(i));
      p.var.set(i, coef * p.grad.get(i));  // rounded to T: var and the update agree in their leading bits
    }
    const HostBuffer var0 = p.var.clone(), m0 = p.m.clone();
    ASSERT_TRUE(p.run().is_ok());
    EXPECT_TRUE(outputs_exact(s, var0, m0, p.grad, p.var, p.m));
    EXPECT_TRUE(power_sign::verify(s, var0, m0, p.grad, p.var, p.m, 1).pass());
    if (t == DType::kFloat32) {
      // The case really is hard: plain float32 arithmetic misses the bound on many elements.
      int64_t float32_misses = 0;
      for (int64_t i = 0; i < n; ++i) {
        double vr, mr;
        power_sign::reference(s, var0.get(i), m0.get(i), p.grad.get(i), &vr, &mr);
        const float naive =
            static_cast<float>(var0.get(i)) - static_cast<float>(coef) * static_cast<float>(p.grad.get(i));
        const double want = round_to_dtype(vr, t);
        if (std::fabs(naive - want) > ulp_of(want, t)) ++float32_misses;
      }
      EXPECT_GT(float32_misses, n / 10);
    }
  });
}

// float16/bfloat16 where var_new is a tiny fraction of var: coef = lr * exp(d) with d = logbase * sign_decay
// = 2^-16 (float16) or 2^-20 (bfloat16), grad = +-2^k, var = lr * 2^k = round(coef * grad), so var_new =
// -var * (e^d - 1) ~ -2^-16 or -2^-20 of var, far below float32's resolution of coef * grad (lr is chosen
// so that float(coef) is ~2^-24 off: 8 resp. 16 ulps of T in var_new). The half
// types' float32 formula, fma(-float(coef), grad, var), misses the one-ulp bound on these, so its certificate must
// reject them and the float64 path must return round(ref) exactly.
TEST(PowerSignCancellation, DeepCancellationInHalfTypesTakesTheFloat64Path) {
  struct Case {
    DType t;
    Scalars s;
    int k_lo, k_hi;
  };
  const Case cases[] = {{DType::kFloat16, {0.501953125, 0x1p-8, 0x1p-8, 0.5}, 0, 10},
                        {DType::kBFloat16, {0.53125, 0x1p-10, 0x1p-10, 0.5}, -40, 40}};
  for (const Case& c : cases) {
    SCOPED_TRACE(dtype_name(c.t));
    const int64_t n = 2 * (c.k_hi - c.k_lo + 1);
    testing::for_each_isa([&](const std::string&) {
      Problem p(c.t, {n}, c.s);
      const Scalars s = p.scalars();
      ASSERT_EQ(s.lr, c.s.lr);  // all four scalars are exact in T
      for (int64_t i = 0; i < n; ++i) {
        const double g = std::ldexp(i % 2 ? -1.0 : 1.0, c.k_lo + static_cast<int>(i / 2));
        p.grad.set(i, g);
        p.m.set(i, g);  // sign_gm = +1
        p.var.set(i, s.lr * g);
      }
      const HostBuffer var0 = p.var.clone(), m0 = p.m.clone();
      ASSERT_TRUE(p.run().is_ok());
      EXPECT_TRUE(outputs_exact(s, var0, m0, p.grad, p.var, p.m));
      const float coef32 = static_cast<float>(s.lr * std::exp(s.logbase * s.sign_decay));
      int64_t fast_misses = 0;
      for (int64_t i = 0; i < n; ++i) {
        double vr, mr;
        power_sign::reference(s, var0.get(i), m0.get(i), p.grad.get(i), &vr, &mr);
        const float v = static_cast<float>(var0.get(i)), g = static_cast<float>(p.grad.get(i));
        const double fast = round_to_dtype(std::fma(-coef32, g, v), c.t);
        const double want = round_to_dtype(vr, c.t);
        if (std::fabs(fast - want) > ulp_of(want, c.t)) ++fast_misses;
      }
      EXPECT_GT(fast_misses, n / 2) << fast_misses << " of " << n;
    });
  }
}

// NaN, +-Inf, -0.0, subnormals, the largest finite value, in every combination for var, m and grad, under
// scalar sets that include beta = 0, lr = 0 and an exp() that overflows.
TEST_P(PowerSignDtypeTest, SpecialValuesFollowReference) {
  const DType t = GetParam();
  const double min_sub = t == DType::kFloat32 ? 0x1p-149 : t == DType::kFloat16 ? 0x1p-24 : 0x1p-133;
  const double max_fin = t == DType::kFloat32   ? 3.4028234663852886e38
                         : t == DType::kFloat16 ? 65504.0
                                                : 3.3895313892515355e38;
  const double specials[] = {0.0,     -0.0,     1.0,  -1.5,  min_sub, -min_sub, 3 * min_sub,
                             max_fin, -max_fin, kInf, -kInf, kNaN,    0.3};
  const size_t k = std::size(specials);
  const Scalars scalar_sets[] = {{0.1, 0.693, 1.0, 0.9}, {0.1, 0.693, 1.0, 0.0}, {0.0, 0.693, 1.0, 0.5},
                                 {2.0, 40.0, 30.0, 0.5}, {1.0, -1.0, 0.5, 0.0},  {0.1, 0.0, 0.0, 0.9}};
  testing::for_each_isa([&](const std::string&) {
    for (const Scalars& s : scalar_sets) {
      SCOPED_TRACE("lr " + std::to_string(s.lr) + " logbase " + std::to_string(s.logbase) + " beta " +
                   std::to_string(s.beta));
      Problem p(t, {static_cast<int64_t>(k * k * k)}, s);
      for (size_t a = 0; a < k; ++a)
        for (size_t b = 0; b < k; ++b)
          for (size_t c = 0; c < k; ++c) {
            const int64_t i = static_cast<int64_t>((a * k + b) * k + c);
            p.var.set(i, specials[a]);
            p.m.set(i, specials[b]);
            p.grad.set(i, specials[c]);
          }
      // verify() requires NaN where the reference is NaN and the very same infinity where it is infinite.
      run_and_compare(p);
    }
  });
}

// Coefficients that overflow: logbase * sign_decay = -+1200 makes coef[0] or coef[2] infinite (and the other
// +0). Where m = +-Inf and grad = +-0, prod = m_new * grad is NaN while the reference's sign_gm is 0
// (coefficient lr, var_new = var): a coefficient chosen from the sign bit of that NaN would be the infinite
// one on some targets (x86's default NaN is negative, Arm's positive), and Inf * 0 is NaN. The float64
// path must then compare (see the NB at UpdateF64); this fails if it reads the sign bit regardless.
TEST_P(PowerSignDtypeTest, InfiniteCoefficientWithInfiniteMomentAndZeroGrad) {
  const DType t = GetParam();
  const double var_values[] = {1.5, -0.0, 0.0, -3.0};
  const double m_values[] = {kInf, -kInf};
  const double grad_values[] = {0.0, -0.0};
  for (const Scalars s : {Scalars{2.0, -40.0, 30.0, 0.5}, Scalars{2.0, 40.0, 30.0, 0.5}}) {
    SCOPED_TRACE("logbase " + std::to_string(s.logbase));
    testing::for_each_isa([&](const std::string&) {
      // 37 elements: full vectors on every target and a tail; the special lanes repeat at every position.
      Problem p(t, {37}, s);
      for (int64_t i = 0; i < 37; ++i) {
        p.var.set(i, var_values[i % 4]);
        p.m.set(i, m_values[(i / 4) % 2]);
        p.grad.set(i, grad_values[(i / 8) % 2]);
      }
      p.grad.set(36, 0.25);  // one ordinary lane: the infinite coefficient of its sign_gm gives +-Inf
      power_sign::Args a{};
      a.dtype = t;
      a.numel = 37;
      a.s = p.scalars();
      const power_sign::Plan plan = power_sign::make_plan(a, Context{1});
      ASSERT_TRUE(std::isinf(plan.coef[0]) || std::isinf(plan.coef[2]));
      run_and_compare(p, /*exact=*/true);
      for (int64_t i = 0; i < 36; ++i) ASSERT_EQ(p.var.get(i), var_values[i % 4]) << i;
    });
  }
}

// float32 with a beta whose 1 - beta has more than 29 significant bits (0x1.000002p-10: 33 bits), so that
// (1 - beta) * grad is rounded in float64 and the reference's m_new (two roundings) can differ from a fused
// multiply-add (one): the kernel must not fuse there (see the NB at OmbFitsFma). The inputs were found by a
// search for m_new values whose float64 roundings straddle a float32 rounding boundary; the test checks that
// the fused value would round differently, so the case stays hard.
TEST(PowerSignFloat32, MomentIsFusedOnlyWhereExact) {
  const float beta = 0x1.000002p-10f;
  const uint32_t pairs[][2] = {{0x3fe5c8e7, 0xb80b9a36}, {0x3f8e7d88, 0xb76dc608}, {0x3fc976e8, 0x37e992ec},
                               {0x3f9acf77, 0xb8a1f297}, {0x3f9a3637, 0xb8f1f2e3}, {0x3ff871e7, 0xb63878e0}};
  const int64_t n = 2 * static_cast<int64_t>(std::size(pairs)) + 5;  // each pair twice, then a tail
  auto bits_to_float = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  };
  testing::for_each_isa([&](const std::string&) {
    Problem p(DType::kFloat32, {n}, {0.01, 0.5, 1.0, beta});
    const Scalars s = p.scalars();
    ASSERT_EQ(s.beta, static_cast<double>(beta));
    for (int64_t i = 0; i < n; ++i) {
      const auto& pr = pairs[i % std::size(pairs)];
      p.grad.set(i, bits_to_float(pr[0]));
      p.m.set(i, bits_to_float(pr[1]));
      p.var.set(i, 1.0);
    }
    for (int64_t i = 0; i < n; ++i) {
      double vr, mr;
      power_sign::reference(s, p.var.get(i), p.m.get(i), p.grad.get(i), &vr, &mr);
      const double fused = std::fma(1.0 - s.beta, p.grad.get(i), s.beta * p.m.get(i));
      ASSERT_NE(static_cast<float>(fused), static_cast<float>(mr)) << i;
    }
    run_and_compare(p);
  });
}

TEST_P(PowerSignDtypeTest, BetaZeroCopiesGradAndLrZeroKeepsVar) {
  const DType t = GetParam();
  testing::for_each_isa([&](const std::string&) {
    std::mt19937_64 rng(5);
    Problem p(t, {257}, {0.0, 0.693, 1.0, 0.0});
    testing::fill_random(p.var, rng, -3, 3);
    testing::fill_random(p.m, rng, -3, 3);
    testing::fill_random(p.grad, rng, -3, 3);
    const HostBuffer var0 = p.var.clone();
    ASSERT_TRUE(p.run().is_ok());
    EXPECT_TRUE(p.m.same_bytes(p.grad));                                                    // m_new = 0 * m + 1 * grad
    for (int64_t i = 0; i < p.var.numel(); ++i) ASSERT_EQ(p.var.get(i), var0.get(i)) << i;  // var - 0 * grad
  });
}

// An element's result depends on its own inputs only, not on where it sits in a vector or what its
// neighbours are (the half types' float32 path decides per lane whether the float64 path recomputes it):
// a whole array gives the same bytes as each element updated on its own. Most elements sit beside a
// midpoint of T (as in NormalResultsNearMidpointsStayWithinOneUlp), where the two paths often differ by
// an ulp; every 7th must take the float64 path (deep cancellation, NaN, two NaNs, Inf, tiny gradient).
TEST_P(PowerSignDtypeTest, EachElementDependsOnlyOnItsOwnInputs) {
  const DType t = GetParam();
  const int64_t n = 300;
  const Scalars s{0.5, 0x1p-10, 0x1p-11, 0.5};
  const double unit = t == DType::kFloat16 ? 0x1p-10 : t == DType::kBFloat16 ? 0x1p-7 : 0x1p-23;
  const double var_unit0 = t == DType::kFloat16 ? 1500 : t == DType::kBFloat16 ? 200 : 6e6;
  testing::for_each_isa([&](const std::string&) {
    Problem whole(t, {n}, s);
    for (int64_t i = 0; i < n; ++i) {
      whole.var.set(i, (var_unit0 + static_cast<double>(i % 21) - 10) * unit);
      whole.grad.set(i, static_cast<double>(1 + i % 3) * unit);
      whole.m.set(i, static_cast<double>(1 + i % 3) * unit);
    }
    const Scalars st = whole.scalars();
    for (int64_t i = 0; i < n; i += 7) {
      switch ((i / 7) % 5) {
        case 0:  // deep cancellation: var = lr * grad, var_new ~ -2^-21 var
          whole.grad.set(i, 4.0);
          whole.m.set(i, 4.0);
          whole.var.set(i, st.lr * 4.0);
          break;
        case 1:
          whole.m.set(i, kNaN);
          break;
        case 2:
          whole.var.set(i, -kInf);
          break;
        case 3:  // two NaNs of opposite signs meet in coef * grad
          whole.m.set(i, -kNaN);
          whole.grad.set(i, kNaN);
          break;
        default:
          whole.grad.set(i, t == DType::kFloat16 ? 0x1p-24 : 0x1p-60);
      }
    }
    Problem alone(t, {1}, s);
    const HostBuffer var0 = whole.var.clone(), m0 = whole.m.clone();
    ASSERT_TRUE(whole.run().is_ok());
    for (int64_t i = 0; i < n; ++i) {
      alone.var.set(0, var0.get(i));
      alone.m.set(0, m0.get(i));
      alone.grad.set(0, whole.grad.get(i));
      ASSERT_TRUE(alone.run().is_ok());
      // Same bytes, except that a NaN only has to meet a NaN: which input NaN's sign and payload a vector
      // multiply passes on may differ between the full-step and tail copies of a kernel (clang's EMU128
      // does this for float32). Thread ranges never split a step, so thread counts still give equal bytes.
      const size_t es = dtype_size(t);
      auto same = [&](const HostBuffer& one, const HostBuffer& all) {
        if (std::isnan(one.get(0)) && std::isnan(all.get(i))) return true;
        return std::memcmp(one.data(), static_cast<const char*>(all.data()) + i * es, es) == 0;
      };
      ASSERT_TRUE(same(alone.var, whole.var)) << i << ": " << alone.var.get(0) << " vs " << whole.var.get(i);
      ASSERT_TRUE(same(alone.m, whole.m)) << i << ": " << alone.m.get(0) << " vs " << whole.m.get(i);
    }
  });
}

// Same input, thread counts 1, 2, 3 and 8 (ranges split at different places), and the software prefetch (on where
// detail::software_prefetch says it pays) off and on: identical bytes.
TEST_P(PowerSignDtypeTest, BitwiseIndependentOfThreadCountAndPrefetch) {
  const DType t = GetParam();
  const int64_t n = (int64_t{1} << 19) + 77;
  std::mt19937_64 rng(11);
  Problem p(t, {n}, {0.01, 0.693, 1.0, 0.9});
  testing::fill_random(p.var, rng, -3, 3);
  testing::fill_random(p.m, rng, -3, 3);
  testing::fill_random(p.grad, rng, -3, 3);
  const HostBuffer var0 = p.var.clone(), m0 = p.m.clone();
  testing::for_each_isa([&](const std::string&) {
    HostBuffer var_ref, m_ref;
    for (int threads : {1, 2, 3, 8}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      std::memcpy(p.var.data(), var0.data(), var0.bytes());
      std::memcpy(p.m.data(), m0.data(), m0.bytes());
      ASSERT_TRUE(p.run(false, Context{threads}).is_ok());
      if (threads == 1) {
        var_ref = p.var.clone();
        m_ref = p.m.clone();
        EXPECT_FALSE(var_ref.same_bytes(var0));  // the update did run
      } else {
        EXPECT_TRUE(p.var.same_bytes(var_ref));
        EXPECT_TRUE(p.m.same_bytes(m_ref));
      }
    }
    for (bool prefetch : {false, true}) {
      SCOPED_TRACE(prefetch ? "prefetch" : "no prefetch");
      std::memcpy(p.var.data(), var0.data(), var0.bytes());
      std::memcpy(p.m.data(), m0.data(), m0.bytes());
      power_sign::Args a{};
      a.var = p.var.data(), a.m = p.m.data(), a.grad = p.grad.data();
      a.dtype = t, a.numel = n, a.s = p.scalars();
      power_sign::Plan plan = power_sign::make_plan(a, Context{1});
      plan.prefetch = prefetch;
      power_sign::run(plan, a);
      EXPECT_TRUE(p.var.same_bytes(var_ref));
      EXPECT_TRUE(p.m.same_bytes(m_ref));
    }
  });
}

// 8 threads each make K locked calls on the same var/m. With beta = 0 every call sets m to grad and
// subtracts the same coefficient * grad from var, so the calls commute and the result must be exactly
// that of 8 * K calls in a row; a lost update (two calls reading the same var) would show.
TEST(PowerSignLocking, ConcurrentLockedCallsSerialize) {
  constexpr int kThreads = 8, kCalls = 40;
  testing::for_each_isa([&](const std::string&) {
    std::mt19937_64 rng(21);
    Problem p(DType::kFloat32, {6000}, {0.001, 0.693, 1.0, 0.0});
    testing::fill_random(p.var, rng, 0, 0);
    testing::fill_random(p.m, rng, 0, 0);
    testing::fill_random(p.grad, rng, -1, 0);
    Problem seq(DType::kFloat32, {6000}, p.scalars());
    std::memcpy(seq.var.data(), p.var.data(), p.var.bytes());
    std::memcpy(seq.m.data(), p.m.data(), p.m.bytes());
    std::memcpy(seq.grad.data(), p.grad.data(), p.grad.bytes());
    for (int c = 0; c < kThreads * kCalls; ++c) ASSERT_TRUE(seq.run(true, Context{1}).is_ok());

    std::vector<std::thread> workers;
    std::vector<int> failures(kThreads, 0);
    for (int w = 0; w < kThreads; ++w) {
      workers.emplace_back([&, w] {
        for (int c = 0; c < kCalls; ++c) failures[w] += p.run(true, Context{1}).is_ok() ? 0 : 1;
      });
    }
    for (std::thread& th : workers) th.join();
    for (int f : failures) EXPECT_EQ(f, 0);
    EXPECT_TRUE(p.var.same_bytes(seq.var));
    EXPECT_TRUE(p.m.same_bytes(seq.m));
  });
}

// ---- rounding to float16 / bfloat16 ---------------------------------------------------------------
// Results that sit just beside a midpoint of T, where rounding float64 -> float32 -> T (two nearest-even
// steps) would land on the midpoint and then tie the wrong way. Each test also checks that the naive
// double rounding really fails on its data, so the case stays covered.

double naive_double_rounding(double x, DType t) {
  const float f = static_cast<float>(x);
  return t == DType::kFloat16 ? half_bits_to_float(float_to_half_bits(f)) : bf16_bits_to_float(float_to_bf16_bits(f));
}

// lr * exp(logbase * sign_decay) = lr * (1 + ~2^-21) with m = grad (sign_gm = +1): an update of lr units
// of T's spacing plus a sliver far below float32's resolution.
// exact: every output must be round(ref) (the float64 path's promise); otherwise within the one ulp of
// docs/semantics.md.
void expect_near_midpoints(DType t, double unit, const std::vector<double>& lrs, double decay,
                           const std::vector<double>& var_units, bool exact) {
  testing::for_each_isa([&](const std::string&) {
    for (double lr : lrs) {
      SCOPED_TRACE("lr " + std::to_string(lr));
      Problem p(t, {static_cast<int64_t>(var_units.size() * 3)}, {lr, 0x1p-10, decay, 0.5});
      for (size_t i = 0; i < var_units.size(); ++i)
        for (int k = 1; k <= 3; ++k) {
          const int64_t j = static_cast<int64_t>(i * 3 + k - 1);
          p.var.set(j, var_units[i] * unit);
          p.grad.set(j, k * unit);
          p.m.set(j, k * unit);
        }
      const HostBuffer var0 = p.var.clone(), m0 = p.m.clone();
      ASSERT_TRUE(p.run().is_ok());
      if (exact) {
        EXPECT_TRUE(outputs_exact(p.scalars(), var0, m0, p.grad, p.var, p.m));
      }
      const detail::VerifyReport r = power_sign::verify(p.scalars(), var0, m0, p.grad, p.var, p.m, 1);
      EXPECT_TRUE(r.pass()) << r.failures << " failures, worst |err|/bound " << r.worst_ratio;
      int64_t naive_wrong = 0;
      for (int64_t j = 0; j < p.var.numel(); ++j) {
        double vr, mr;
        power_sign::reference(p.scalars(), var0.get(j), m0.get(j), p.grad.get(j), &vr, &mr);
        if (naive_double_rounding(vr, t) != round_to_dtype(vr, t)) ++naive_wrong;
      }
      EXPECT_GT(naive_wrong, 0);
    }
  });
}

TEST(PowerSignRounding, Bfloat16SubnormalResultsAreCorrectlyRounded) {
  // Below 2^-126 bfloat16's spacing is 2^-133 while float32's is only 2^-149: the sliver is lost in float32.
  std::vector<double> var_units;
  for (int j = -10; j <= 10; ++j) var_units.push_back(j);
  // The gradients (< 2^-40) send every lane to the float64 path, which rounds correctly.
  expect_near_midpoints(DType::kBFloat16, 0x1p-133, {0.5, 2.5}, 0x1p-11, var_units, true);
}

// Normal results beside a midpoint take the float32 path on targets with fused multiply-add: docs/semantics.md's one
// ulp, not correct rounding, is the promise there.
TEST(PowerSignRounding, NormalResultsNearMidpointsStayWithinOneUlp) {
  // var in [128, 256) units of 2^-7 is bfloat16's binade [1, 2) (spacing 2^-7); [1024, 2048) units of 2^-10
  // is float16's. float32 resolves only 2^-16 resp. 2^-13 of a unit there, the sliver is ~2^-21 of one.
  std::vector<double> bf16_units, f16_units;
  for (int j = -10; j <= 10; ++j) {
    bf16_units.push_back(200 + j);
    f16_units.push_back(1500 + j);
  }
  expect_near_midpoints(DType::kBFloat16, 0x1p-7, {0.5, 2.5}, 0x1p-11, bf16_units, false);
  expect_near_midpoints(DType::kFloat16, 0x1p-10, {0.5, 2.5}, 0x1p-11, f16_units, false);
}

TEST(PowerSignRounding, Float16JustBelowOverflowStaysFinite) {
  // 65504 + 16 * (1 - ~2^-21) is just below the overflow threshold 65520: the answer is 65504. float32
  // rounds it to 65520.0 exactly, which float16 then ties up to Inf.
  testing::for_each_isa([&](const std::string&) {
    Problem p(DType::kFloat16, {3}, {1.0, 0x1p-10, -0x1p-11, 0.0});
    for (int64_t i = 0; i < 3; ++i) {
      p.var.set(i, 65504.0);
      p.grad.set(i, -16.0);
      p.m.set(i, -16.0);
    }
    p.var.set(2, -65504.0);
    p.grad.set(2, 16.0);
    p.m.set(2, 16.0);
    const HostBuffer var0 = p.var.clone(), m0 = p.m.clone();
    ASSERT_TRUE(p.run().is_ok());
    EXPECT_TRUE(outputs_exact(p.scalars(), var0, m0, p.grad, p.var, p.m));
    EXPECT_EQ(p.var.get(0), 65504.0);
    EXPECT_EQ(p.var.get(2), -65504.0);
    double vr, mr;
    power_sign::reference(p.scalars(), 65504.0, -16.0, -16.0, &vr, &mr);
    EXPECT_TRUE(std::isinf(naive_double_rounding(vr, DType::kFloat16)));
  });
}

// ---- empty tensors ---------------------------------------------------------------------------------

TEST(PowerSignEmpty, ValidatesThenWritesNothing) {
  for (DType t : kAllDtypes) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{0}, std::vector<int64_t>{3, 0}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + shape_name(shape));
      // Real buffers behind the empty views: any write would change the sentinel bytes.
      HostBuffer var(t, {8}), m(t, {8}), grad(t, {8});
      testing::fill_sentinel(var);
      testing::fill_sentinel(m);
      const HostBuffer var0 = var.clone(), m0 = m.clone();
      Problem p(t, {}, {0.1, 0.693, 1.0, 0.9});
      const auto view = [&](const HostBuffer& b) {
        return TensorView::contiguous(b.data(), t, shape.data(), static_cast<int>(shape.size()));
      };
      testing::for_each_isa([&](const std::string&) {
        EXPECT_TRUE(inplace_apply_power_sign(view(var), view(m), p.lr.view(), p.logbase.view(), p.sign_decay.view(),
                                             p.beta.view(), view(grad))
                        .is_ok());
        EXPECT_TRUE(var.same_bytes(var0));
        EXPECT_TRUE(m.same_bytes(m0));
      });
      // Null data is fine when there are no elements.
      const TensorView null_view = TensorView::contiguous(nullptr, t, shape.data(), static_cast<int>(shape.size()));
      EXPECT_TRUE(inplace_apply_power_sign(null_view, null_view, p.lr.view(), p.logbase.view(), p.sign_decay.view(),
                                           p.beta.view(), null_view)
                      .is_ok());
      // The scalars are still validated.
      p.beta.set(0, 1.0);
      const Status st = inplace_apply_power_sign(view(var), view(m), p.lr.view(), p.logbase.view(), p.sign_decay.view(),
                                                 p.beta.view(), view(grad));
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(st.message().find("beta"), std::string::npos) << st.message();
    }
  }
}

// ---- validation ------------------------------------------------------------------------------------

enum Arg { kVar, kM, kLr, kLogbase, kSignDecay, kBeta, kGrad, kNumArgs };
const char* const kArgNames[] = {"var", "m", "lr", "logbase", "sign_decay", "beta", "grad"};

// A valid float32 problem whose var and m hold random data; each test breaks one thing and checks the
// code, the message, and that var and m kept every byte.
class PowerSignValidation : public ::testing::Test {
 protected:
  PowerSignValidation() : p_(DType::kFloat32, {2, 4}, {0.1, 0.693, 1.0, 0.9}) {
    std::mt19937_64 rng(3);
    testing::fill_random(p_.var, rng);
    testing::fill_random(p_.m, rng);
    testing::fill_random(p_.grad, rng);
    var0_ = p_.var.clone();
    m0_ = p_.m.clone();
    views_ = {p_.var.view(),        p_.m.view(),    p_.lr.view(),  p_.logbase.view(),
              p_.sign_decay.view(), p_.beta.view(), p_.grad.view()};
  }

  Status call() const {
    return inplace_apply_power_sign(views_[kVar], views_[kM], views_[kLr], views_[kLogbase], views_[kSignDecay],
                                    views_[kBeta], views_[kGrad]);
  }

  void expect_error(StatusCode code, const std::string& needle) {
    const Status st = call();
    EXPECT_EQ(st.code(), code) << st.message();
    EXPECT_EQ(st.message().rfind("inplace_apply_power_sign: ", 0), 0u) << st.message();
    EXPECT_NE(st.message().find(needle), std::string::npos) << "'" << needle << "' not in: " << st.message();
    EXPECT_TRUE(p_.var.same_bytes(var0_)) << "var written";
    EXPECT_TRUE(p_.m.same_bytes(m0_)) << "m written";
  }

  Problem p_;
  HostBuffer var0_, m0_;
  std::vector<TensorView> views_;
};

TEST_F(PowerSignValidation, ValidCallSucceeds) {
  EXPECT_TRUE(call().is_ok());
  EXPECT_FALSE(p_.var.same_bytes(var0_));
}

TEST_F(PowerSignValidation, NullPointerInEachPosition) {
  for (int a = 0; a < kNumArgs; ++a) {
    SCOPED_TRACE(kArgNames[a]);
    const TensorView saved = views_[a];
    views_[a] = TensorView::contiguous(nullptr, saved.dtype(), saved.shape(), saved.rank());
    expect_error(StatusCode::kNullPointer, std::string(kArgNames[a]) + " has a null data pointer");
    views_[a] = saved;
  }
}

TEST_F(PowerSignValidation, DtypeMismatchInEachPosition) {
  HostBuffer half(DType::kFloat16, {2, 4});
  for (int a = kM; a < kNumArgs; ++a) {
    SCOPED_TRACE(kArgNames[a]);
    const TensorView saved = views_[a];
    views_[a] = TensorView::contiguous(half.data(), DType::kFloat16, saved.shape(), saved.rank());
    expect_error(StatusCode::kInvalidArgument,
                 std::string(kArgNames[a]) + " has dtype float16; expected float32 (the dtype of var)");
    views_[a] = saved;
  }
  // var decides the dtype; the first other tensor that disagrees is named.
  views_[kVar] = TensorView::contiguous(half.data(), DType::kFloat16, views_[kVar].shape(), 2);
  expect_error(StatusCode::kInvalidArgument, "m has dtype float32; expected float16");
}

TEST_F(PowerSignValidation, UnsupportedDtypeCode) {
  views_[kVar] = TensorView::contiguous(p_.var.data(), static_cast<DType>(7), views_[kVar].shape(), 2);
  expect_error(StatusCode::kInvalidArgument, "var has dtype code 7");
}

TEST_F(PowerSignValidation, ShapeMismatch) {
  HostBuffer other(DType::kFloat32, {2, 4});
  const int64_t s23[] = {2, 3}, s8[] = {8};
  views_[kM] = TensorView::contiguous(other.data(), DType::kFloat32, s23, 2);
  expect_error(StatusCode::kInvalidArgument, "m has shape [2, 3]; expected the shape of var [2, 4]");
  views_[kM] = p_.m.view();
  views_[kGrad] = TensorView::contiguous(other.data(), DType::kFloat32, s8, 1);
  expect_error(StatusCode::kInvalidArgument, "grad has shape [8]; expected the shape of var [2, 4]");
}

TEST_F(PowerSignValidation, ScalarShapes) {
  HostBuffer two(DType::kFloat32, {2});
  two.set(0, 0.5);
  two.set(1, 0.5);
  const int64_t s2[] = {2}, s11[] = {1, 1}, s0[] = {0};
  const struct {
    Arg arg;
    const int64_t* shape;
    int rank;
    const char* want;
  } cases[] = {{kLr, s2, 1, "lr has shape [2]; expected [] or [1]"},
               {kLogbase, s11, 2, "logbase has shape [1, 1]; expected [] or [1]"},
               {kSignDecay, s0, 1, "sign_decay has shape [0]; expected [] or [1]"},
               {kBeta, s2, 1, "beta has shape [2]; expected [] or [1]"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(kArgNames[c.arg]);
    const TensorView saved = views_[c.arg];
    views_[c.arg] = TensorView::contiguous(two.data(), DType::kFloat32, c.shape, c.rank);
    expect_error(StatusCode::kInvalidArgument, c.want);
    views_[c.arg] = saved;
  }
}

TEST_F(PowerSignValidation, ScalarValues) {
  const struct {
    Arg arg;
    double value;
    const char* want;
  } cases[] = {{kBeta, 1.0, "beta is 1; expected a value in [0, 1)"},
               {kBeta, -0.1, "beta is -0.100000001; expected a value in [0, 1)"},
               {kBeta, kNaN, "beta is nan; expected a value in [0, 1)"},
               {kBeta, kInf, "beta is inf"},
               {kLr, kInf, "lr is inf; expected a finite value"},
               {kLr, kNaN, "lr is nan; expected a finite value"},
               {kLogbase, kInf, "logbase is inf; expected a finite value"},
               {kLogbase, -kInf, "logbase is -inf"},
               {kSignDecay, kNaN, "sign_decay is nan; expected a finite value"}};
  HostBuffer* const buffers[] = {nullptr, nullptr, &p_.lr, &p_.logbase, &p_.sign_decay, &p_.beta};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(kArgNames[c.arg]) + " = " + std::to_string(c.value));
    HostBuffer* b = buffers[c.arg];
    const double saved = b->get(0);
    b->set(0, c.value);
    expect_error(StatusCode::kInvalidArgument, c.want);
    b->set(0, saved);
  }
}

TEST(PowerSignValidationDtype, BetaRoundingToOneInFloat16IsRejected) {
  // 0.9999 is 1.0 in float16: the operator sees the stored value, which is out of range.
  Problem p(DType::kFloat16, {4}, {0.1, 0.693, 1.0, 0.9999});
  testing::fill_sentinel(p.var);
  const HostBuffer var0 = p.var.clone();
  const Status st = p.run();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("beta is 1;"), std::string::npos) << st.message();
  EXPECT_TRUE(p.var.same_bytes(var0));
}

TEST_F(PowerSignValidation, Overlap) {
  HostBuffer big(DType::kFloat32, {64});
  auto at = [&](int64_t offset) {
    return TensorView::contiguous(static_cast<float*>(big.data()) + offset, DType::kFloat32, views_[kVar].shape(), 2);
  };
  // var and m share one element; grad elsewhere. var0_/m0_ are snapshots of p_, so compare `big` instead.
  const struct {
    int64_t var, m, grad;
    const char* want;
  } cases[] = {{0, 7, 32, "var and m overlap in memory"},
               {0, 16, 4, "var and grad overlap in memory"},
               {40, 16, 20, "m and grad overlap in memory"},
               {0, 0, 16, "var and m overlap"}};
  std::mt19937_64 rng(8);
  testing::fill_random(big, rng);
  const HostBuffer big0 = big.clone();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.want);
    views_[kVar] = at(c.var);
    views_[kM] = at(c.m);
    views_[kGrad] = at(c.grad);
    expect_error(StatusCode::kInvalidArgument, c.want);
    EXPECT_TRUE(big.same_bytes(big0));
  }
  // Adjacent but disjoint is fine.
  views_[kVar] = at(0);
  views_[kM] = at(8);
  views_[kGrad] = at(16);
  EXPECT_TRUE(call().is_ok());
}

TEST_F(PowerSignValidation, NegativeStridesAndSelfOverlappingOutputs) {
  HostBuffer big(DType::kFloat32, {16});
  const int64_t shape[] = {2, 4}, negative[] = {8, -2}, broadcast[] = {0, 2};
  for (Arg a : {kVar, kM, kGrad}) {
    SCOPED_TRACE(kArgNames[a]);
    const TensorView saved = views_[a];
    views_[a] = TensorView::strided(static_cast<float*>(big.data()) + 8, DType::kFloat32, shape, negative, 2);
    expect_error(StatusCode::kInvalidArgument, std::string(kArgNames[a]) +
                                                   " has strides [8, -2] for shape [2, 4]; "
                                                   "expected non-negative strides");
    views_[a] = saved;
  }
  // var and m are written: two elements at one address would make the result depend on the order.
  for (Arg a : {kVar, kM}) {
    SCOPED_TRACE(kArgNames[a]);
    const TensorView saved = views_[a];
    views_[a] = TensorView::strided(big.data(), DType::kFloat32, shape, broadcast, 2);
    expect_error(StatusCode::kInvalidArgument, std::string(kArgNames[a]) +
                                                   " has strides [0, 2] for shape [2, 4]: "
                                                   "some of its elements share memory");
    views_[a] = saved;
  }
}

// ---- check / plan / reference / verify ------------------------------------------------------------

TEST(PowerSignCheck, ReadsScalarsAsStoredAndAcceptsBothScalarShapes) {
  for (const std::vector<int64_t>& sshape : {std::vector<int64_t>{}, std::vector<int64_t>{1}}) {
    Problem p(DType::kFloat16, {3, 5}, {0.1, 0.693, 0.3, 0.9}, sshape);
    power_sign::Args a{};
    ASSERT_TRUE(power_sign::check(p.var.view(), p.m.view(), p.lr.view(), p.logbase.view(), p.sign_decay.view(),
                                  p.beta.view(), p.grad.view(), true, &a)
                    .is_ok());
    EXPECT_EQ(a.numel, 15);
    EXPECT_EQ(a.dtype, DType::kFloat16);
    EXPECT_TRUE(a.use_locking);
    EXPECT_EQ(a.var, p.var.data());
    EXPECT_EQ(a.s.lr, round_to_dtype(0.1, DType::kFloat16));
    EXPECT_EQ(a.s.logbase, round_to_dtype(0.693, DType::kFloat16));
    EXPECT_EQ(a.s.sign_decay, round_to_dtype(0.3, DType::kFloat16));
    EXPECT_EQ(a.s.beta, round_to_dtype(0.9, DType::kFloat16));
  }
}

TEST(PowerSignPlan, CoefficientsAndThreads) {
  power_sign::Args a{};
  a.dtype = DType::kFloat32;
  a.s = {0.01, 0.6931471805599453, 0.75, 0.9};
  a.numel = 1000;
  power_sign::Plan p = power_sign::make_plan(a, Context{8});
  // The three values exp() can take, once per call: sign_gm = -1, 0, +1.
  EXPECT_EQ(p.coef[0], 0.01 * std::exp(-(0.6931471805599453 * 0.75)));
  EXPECT_EQ(p.coef[1], 0.01);
  EXPECT_EQ(p.coef[2], 0.01 * std::exp(0.6931471805599453 * 0.75));
  EXPECT_EQ(p.beta, 0.9);
  EXPECT_EQ(p.one_minus_beta, 1.0 - 0.9);
  EXPECT_EQ(p.num_threads, 1);  // too small to be worth a thread start
  a.numel = 40000;
  EXPECT_EQ(power_sign::make_plan(a, Context{8}).num_threads, 2);
  a.numel = int64_t{1} << 20;
  EXPECT_EQ(power_sign::make_plan(a, Context{8}).num_threads, 8);
  EXPECT_EQ(power_sign::make_plan(a, Context{3}).num_threads, 3);
  EXPECT_GE(power_sign::make_plan(a, Context{}).num_threads, 1);
}

TEST(PowerSignReference, Formula) {
  const Scalars s{0.5, std::log(2.0), 1.0, 0.5};
  double v, m;
  power_sign::reference(s, 1.0, 2.0, 4.0, &v, &m);  // m_new = 3, same signs: var - 0.5 * 2 * 4
  EXPECT_EQ(m, 3.0);
  EXPECT_DOUBLE_EQ(v, -3.0);
  power_sign::reference(s, 1.0, -20.0, 4.0, &v, &m);  // m_new = -8, opposite signs: var - 0.5 / 2 * 4
  EXPECT_EQ(m, -8.0);
  EXPECT_NEAR(v, 0.0, 1e-15);
  power_sign::reference(s, 1.0, 2.0, 0.0, &v, &m);  // grad 0: nothing to subtract
  EXPECT_EQ(v, 1.0);
  power_sign::reference(s, 1.0, kNaN, 0.0, &v, &m);  // sign(NaN) is NaN: var_new is NaN even with grad 0
  EXPECT_TRUE(std::isnan(v));
}

TEST(PowerSignVerify, AcceptsOneUlpRejectsTwoAndNonFiniteMismatch) {
  const Scalars s{0.1, 0.693, 1.0, 0.9};
  HostBuffer var0(DType::kFloat32, {4}), m0(DType::kFloat32, {4}), grad(DType::kFloat32, {4});
  for (int i = 0; i < 4; ++i) {
    var0.set(i, 1.0 + i);
    m0.set(i, 0.5);
    grad.set(i, 0.25 * (i + 1));
  }
  HostBuffer var1 = var0.clone(), m1 = m0.clone();
  for (int i = 0; i < 4; ++i) {
    double v, m;
    power_sign::reference(s, var0.get(i), m0.get(i), grad.get(i), &v, &m);
    var1.set(i, v);
    m1.set(i, m);
  }
  EXPECT_TRUE(power_sign::verify(s, var0, m0, grad, var1, m1, 1).pass());
  EXPECT_EQ(power_sign::verify(s, var0, m0, grad, var1, m1, 3).checked, 4);  // elements 0 and 3, two outputs
  const double v0 = var1.get(0), u = ulp_of(v0, DType::kFloat32);
  var1.set(0, v0 + u);
  EXPECT_TRUE(power_sign::verify(s, var0, m0, grad, var1, m1, 1).pass());
  var1.set(0, v0 - u);
  EXPECT_TRUE(power_sign::verify(s, var0, m0, grad, var1, m1, 1).pass());
  var1.set(0, v0 + 2 * u);
  EXPECT_EQ(power_sign::verify(s, var0, m0, grad, var1, m1, 1).failures, 1);
  var1.set(0, kNaN);
  EXPECT_EQ(power_sign::verify(s, var0, m0, grad, var1, m1, 1).failures, 1);
  var1.set(0, kInf);
  EXPECT_EQ(power_sign::verify(s, var0, m0, grad, var1, m1, 1).failures, 1);
}

}  // namespace
}  // namespace nnops
