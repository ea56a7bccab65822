// GroupNorm: what the generic sweep (tests/op_sweep_test.cpp) does not cover. Accuracy at larger shapes and
// when |mean| >> std; channels-last, every SIMD target and every thread count giving the same bits on data
// where the summation order matters; gamma/beta absent; group = 1 and group = C; every validation rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/core/check.hpp"
#include "src/core/layout.hpp"
#include "src/ops/norm/group_norm/group_norm_impl.hpp"
#include "src/ops/norm/group_norm/plan_test_util.hpp"
#include "tests/op_test_util.hpp"
#include "tests/test_util.hpp"

namespace nnops {
namespace {

using detail::HostBuffer;
using ::testing::HasSubstr;

const DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

const ops::OpDesc& desc() { return ops::desc_group_norm(); }

ops::Problem problem(DType t, const std::vector<int64_t>& shape, int64_t groups, uint64_t seed, bool stats_like_x) {
  return testing::make_problem(desc(), t, shape, seed, stats_like_x,
                               [&](ops::Attrs& a) { a[gn::kNumGroups].i = groups; });
}

Status call(ops::Problem& p, int threads = 0) {
  const std::vector<TensorView> v = p.views();
  return group_norm(v[gn::kX], v[gn::kGamma], v[gn::kBeta], p.attrs[gn::kNumGroups].i, p.attrs[gn::kEps].f, v[gn::kOut],
                    v[gn::kMean], v[gn::kRstd], Context{threads});
}

// Through the C++ API, against the float64 reference on every target; the worst error/bound ratio.
double expect_matches_reference(const ops::Problem& before) {
  return testing::expect_matches_reference(desc(), before, [](ops::Problem& p) { return call(p); });
}

TEST(GroupNorm, MatchesReferenceOnRealisticShapes) {
  double worst = 0;
  for (DType t : kDTypes) {
    for (bool like_x : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (like_x ? " stats in T" : " stats in float32"));
      worst = std::max(worst, expect_matches_reference(problem(t, {2, 64, 16, 16}, 32, 1, like_x)));  // SD-like
      worst = std::max(worst, expect_matches_reference(problem(t, {1, 6, 1 << 16}, 3, 2, like_x)));   // big groups
      worst = std::max(worst, expect_matches_reference(problem(t, {3, 40, 7, 7}, 8, 3, like_x)));     // HxW = 49
      worst = std::max(worst, expect_matches_reference(problem(t, {2, 8, 1, 2, 3, 1, 2, 5}, 4, 4, like_x)));  // rank 8
    }
  }
  std::printf("worst error/bound ratio: %.3g\n", worst);
}

TEST(GroupNorm, VarianceStaysAccurateWhenTheMeanDominates) {
  // x = 1e4 + N(0, 1) in float32: E[x^2] - E[x]^2 in float32 would lose every digit of the variance (x^2 ~ 1e8
  // has a float32 ulp of 8); float64 sums, certified or redone in a second pass, keep rstd within a few ulps. Groups
  // of 16384 elements (summed unshifted, refused, redone) and of 262144 (shifted by their first element, certified).
  for (auto [offset, hw] : {std::pair<double, int64_t>{1e4, 4096}, {1e6, 4096}, {1e4, 1 << 16}}) {
    ops::Problem p = problem(DType::kFloat32, {2, 8, hw}, 2, 5, false);
    std::mt19937_64 rng(6);
    std::normal_distribution<double> nd(0, 1);
    for (int64_t i = 0; i < p.t[gn::kX].numel(); ++i) p.t[gn::kX].set(i, offset + nd(rng));
    const ops::Problem before = p.clone();
    ASSERT_TRUE(call(p));
    EXPECT_TRUE(gn::verify(before, p, 1).pass());
    // And rstd itself is near 1 (the true spread), not the garbage a one-pass formula gives.
    for (int64_t q = 0; q < p.t[gn::kRstd].numel(); ++q) EXPECT_NEAR(p.t[gn::kRstd].get(q), 1.0, 0.05);
  }
}

// Values spread over sixteen decades with both signs: float64 sums of them round, so a different summation order
// would give different bits (checked below), and equal bits mean the same order.
ops::Problem order_sensitive(DType t, const std::vector<int64_t>& shape, int64_t groups) {
  ops::Problem p = problem(t, shape, groups, 9, false);
  std::mt19937_64 rng(10);
  std::uniform_real_distribution<double> u(-1, 1), e(-8, 8);
  const double span = t == DType::kFloat16 ? 2 : 8;  // float16 stays finite and normal enough
  std::uniform_real_distribution<double> eh(-span, span);
  for (int64_t i = 0; i < p.t[gn::kX].numel(); ++i) {
    p.t[gn::kX].set(i, u(rng) * std::pow(10.0, t == DType::kFloat16 ? eh(rng) : e(rng)));
  }
  return p;
}

// The bits of a call with x and out channels-last.
ops::Problem run_channels_last(const ops::Problem& before, int threads) {
  ops::Problem p = before.clone();
  const std::vector<int64_t> st = testing::channels_last_strides(p.t[gn::kX].shape());
  const testing::StridedCopy x(p.t[gn::kX], st), out(p.t[gn::kOut], st);
  EXPECT_TRUE(detail::is_channels_last(x.view()));
  std::vector<TensorView> v = p.views();
  EXPECT_TRUE(group_norm(x.view(), v[gn::kGamma], v[gn::kBeta], p.attrs[gn::kNumGroups].i, p.attrs[gn::kEps].f,
                         out.view(), v[gn::kMean], v[gn::kRstd], Context{threads}));
  p.t[gn::kOut] = out.dense_copy();
  return p;
}

::testing::AssertionResult same_outputs(const ops::Problem& a, const ops::Problem& b) {
  return testing::same_outputs(desc(), a, b);
}

// The one-pass sums (in index order, not the kernel's, which the certificate's margin does not notice) with the
// kernel's shift (gn::group_shift).
gn::Moments kernel_moments(const std::vector<double>& x) {
  const double m = static_cast<double>(x.size());
  const double k = gn::group_shift(static_cast<int64_t>(x.size()), [&](int64_t j) { return x[j]; });
  double s1 = 0, s2 = 0;
  for (double v : x) {
    s1 += v - k;
    s2 += (v - k) * (v - k);
  }
  return gn::one_pass_moments(k, s1, s2, m);
}

TEST(GroupNorm, OnePassVarianceIsCertifiedOrRedone) {
  // The certificate (gn::one_pass_moments): accepted for ordinary groups, refused when the shift K is far out (an
  // unshifted group whose |mean| >> std, a shifted one whose first element is an outlier), or when rounding leaves no
  // positive variance; a constant group is exact.
  std::mt19937_64 rng(20);
  std::normal_distribution<double> nd(0, 1);
  const size_t small = 1 << 16, large = 1 << 18;  // unshifted (K = 0) and shifted (K = the first element)
  ASSERT_TRUE(gn::unshifted_sums(static_cast<double>(small)));
  ASSERT_FALSE(gn::unshifted_sums(static_cast<double>(large)));
  std::vector<double> ordinary(large), shifted_mean(large);
  for (double& v : ordinary) v = nd(rng);
  EXPECT_TRUE(kernel_moments(ordinary).ok);
  EXPECT_TRUE(kernel_moments(std::vector<double>(ordinary.begin(), ordinary.begin() + small)).ok);
  for (size_t i = 0; i < large; ++i) shifted_mean[i] = 1e4 + ordinary[i];  // |mean| >> std
  EXPECT_TRUE(kernel_moments(shifted_mean).ok);                            // shifted: K removes the mean
  std::vector<double> unshifted_mean(shifted_mean.begin(), shifted_mean.begin() + small);
  EXPECT_FALSE(kernel_moments(unshifted_mean).ok);  // K = 0: refused, redone
  std::vector<double> outlier = shifted_mean;
  outlier[0] = -1e6;  // the shift ~512 standard deviations (of the group, outlier included) away
  EXPECT_FALSE(kernel_moments(outlier).ok);
  // A constant group: unshifted, S2 - S1^2 / M leaves no positive variance, so it is refused (and the second pass,
  // end to end below, finds 0 exactly); a large one is shifted by its first element, S2 = 0, exact.
  EXPECT_FALSE(kernel_moments(std::vector<double>(100, 3.5)).ok);
  EXPECT_TRUE(kernel_moments(std::vector<double>(large, 3.5)).ok);
  EXPECT_EQ(kernel_moments(std::vector<double>(large, 3.5)).var, 0.0);
  EXPECT_FALSE(gn::one_pass_moments(0, 1.0, 0.5, 2.0).ok);  // M var = 0.5 - 0.5 = 0: refused
  // End to end: such groups get the classical second pass and match the reference, in both layouts; so does a
  // constant group of 3.5 (rstd = 1 / sqrt(eps)).
  std::vector<double> constant(small, 3.5);
  for (const std::vector<double>* x : {&unshifted_mean, &outlier, &constant}) {
    SCOPED_TRACE(x->size() == small ? "unshifted" : "shifted");
    ops::Problem p = problem(DType::kFloat32, {1, 4, static_cast<int64_t>(x->size() / 4)}, 1, 21, false);
    for (int64_t i = 0; i < p.t[gn::kX].numel(); ++i) p.t[gn::kX].set(i, (*x)[i]);
    const ops::Problem before = p.clone();
    expect_matches_reference(before);
    ops::Problem q = before.clone();
    EXPECT_TRUE(call(q));
    EXPECT_TRUE(same_outputs(run_channels_last(before, 2), q));
    if (x == &constant) {
      EXPECT_EQ(q.t[gn::kMean].get(0), 3.5);
      EXPECT_EQ(q.t[gn::kRstd].get(0), static_cast<double>(static_cast<float>(1 / std::sqrt(q.attrs[gn::kEps].f))));
    }
  }
}

// K = 0 up to the group size where the certificate accepts any |mean| within 16 standard deviations
// (gn::unshifted_sums): the boundary, and a group at it whose mean is 15.9 standard deviations out is certified.
// Beyond that size, 16 elements spread over the group decide (gn::group_shift): K = 0 for data centred within a few
// standard deviations and for sparse zeros, the first element for a dominant mean, a constant sample or NaN.
TEST(GroupNorm, LargeGroupsTakeTheShiftTheirSampleCalls) {
  const int64_t m = 1 << 19;  // 524,288 elements: K = 0 while F <= ~20 (|mean| up to ~4 deviations)
  ASSERT_FALSE(gn::unshifted_sums(static_cast<double>(m)));
  std::mt19937_64 rng(24);
  std::normal_distribution<double> nd(0, 1);
  std::vector<double> x(m);
  for (double& v : x) v = 1.5 + nd(rng);
  auto shift = [&] { return gn::group_shift(m, [&](int64_t j) { return x[j]; }); };
  EXPECT_EQ(shift(), 0.0);
  for (double& v : x) v += 1e4;
  EXPECT_EQ(shift(), x[0]);
  for (int64_t j = 0; j < m; ++j) x[j] = j % 7 == 3 ? std::abs(nd(rng)) : 0.0;  // ReLU-like, mostly zeros
  EXPECT_EQ(shift(), 0.0);
  std::fill(x.begin(), x.end(), 0.0);
  EXPECT_EQ(shift(), 0.0);
  x.assign(m, 3.5);
  EXPECT_EQ(shift(), 3.5);
  x.assign(m, 1.0);
  x[0] = -2;
  x[m / 32] = std::nan("");
  EXPECT_EQ(shift(), -2.0);
}

TEST(GroupNorm, UnshiftedSumsAcceptMeansWithinSixteenDeviations) {
  const double m = 174018;
  EXPECT_TRUE(gn::unshifted_sums(m));
  EXPECT_FALSE(gn::unshifted_sums(m + 1));
  const double mean = 15.9, var = 1.0;  // the exact sums of such a group
  EXPECT_TRUE(gn::one_pass_moments(0, m * mean, m * (var + mean * mean), m).ok);
  EXPECT_FALSE(gn::one_pass_moments(0, m * 64, m * (var + 64.0 * 64.0), m).ok);  // 64 deviations out: refused
}

TEST(GroupNorm, ChannelsLastTargetsAndThreadsGiveTheSameBitsWhereOrderMatters) {
  for (DType t : kDTypes) {
    // SD-like [2, 320, 8, 8] with 32 groups (10 channels each), odd sizes: 7 channels per group, HxW = 37, and
    // HxW = 143: two whole blocks of rows of the column sums and a partial one.
    for (auto [shape, groups] :
         {std::pair<std::vector<int64_t>, int64_t>{{2, 320, 8, 8}, 32}, {{3, 21, 37}, 3}, {{2, 40, 13, 11}, 4}}) {
      SCOPED_TRACE(std::string(dtype_name(t)));
      const ops::Problem before = order_sensitive(t, shape, groups);
      // The data really is order-sensitive: summing a group's squared deviations (the second pass) in reverse
      // changes the float64 result somewhere. (First-pass sums of float16 values are exact in float64.)
      {
        const HostBuffer& x = before.t[gn::kX];
        const int64_t m = x.numel() / (shape[0] * groups);
        bool differs = false;
        for (int64_t q = 0; q < shape[0] * groups && !differs; ++q) {
          double mu = 0, f = 0, b = 0;
          for (int64_t i = 0; i < m; ++i) mu += x.get(q * m + i) / static_cast<double>(m);
          for (int64_t i = 0; i < m; ++i) f += (x.get(q * m + i) - mu) * (x.get(q * m + i) - mu);
          for (int64_t i = m - 1; i >= 0; --i) b += (x.get(q * m + i) - mu) * (x.get(q * m + i) - mu);
          differs = f != b;
        }
        EXPECT_TRUE(differs);
      }
      ops::Problem want = before.clone();
      ASSERT_TRUE(call(want, 1));
      testing::for_each_isa([&](const std::string&) {
        for (int threads : {1, 2, 3}) {
          ops::Problem dense = before.clone();
          ASSERT_TRUE(call(dense, threads));
          EXPECT_TRUE(same_outputs(dense, want)) << "row-major, " << threads << " threads";
          EXPECT_TRUE(same_outputs(run_channels_last(before, threads), want)) << "channels-last, " << threads;
        }
      });
    }
  }
}

TEST(GroupNorm, NaNsPropagateWhereTheReferenceHasThem) {
  // A NaN in x makes its group NaN; a NaN gamma or beta its channel. gamma and beta in float32 carry NaNs whose low
  // 16 payload bits are all ones, which a bfloat16 rounding without its NaN fix-up would carry into the sign (the
  // kernels make NaN constants canonical first). Rows of 64 and 32 channels (16 groups of 2), so that whole vectors of
  // every width run in both layouts, channels-last bfloat16 rows as pairs.
  const uint32_t payloads[] = {0x7FFFFFFFu, 0xFFBFFFFFu};
  for (DType t : kDTypes) {
    for (bool cl : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (cl ? " channels-last" : " row-major"));
      ops::Problem p = problem(t, {2, 32, 64}, 16, 30, false);
      p.t[gn::kGamma] = HostBuffer(DType::kFloat32, {32});
      p.t[gn::kBeta] = HostBuffer(DType::kFloat32, {32});
      for (int64_t c = 0; c < 32; ++c) {
        p.t[gn::kGamma].set(c, 0.5 + 0.25 * static_cast<double>(c));
        p.t[gn::kBeta].set(c, 0.125 * static_cast<double>(c) - 0.5);
      }
      std::memcpy(static_cast<uint32_t*>(p.t[gn::kGamma].data()) + 2, &payloads[0], 4);  // group 1
      std::memcpy(static_cast<uint32_t*>(p.t[gn::kBeta].data()) + 7, &payloads[1], 4);   // group 3
      p.t[gn::kX].set(5 * 64 + 17, std::numeric_limits<double>::quiet_NaN());            // sample 0, group 2
      const ops::Problem before = p.clone();
      if (!cl) {
        expect_matches_reference(before);
      } else {
        testing::for_each_isa([&](const std::string&) {
          const ops::Problem got = run_channels_last(before, 2);
          EXPECT_TRUE(gn::verify(before, got, 1).pass());
        });
      }
      ops::Problem q = before.clone();
      ASSERT_TRUE(call(q, 1));
      int64_t nans = 0;
      for (int64_t i = 0; i < q.t[gn::kOut].numel(); ++i) nans += std::isnan(q.t[gn::kOut].get(i)) ? 1 : 0;
      // Channel 2 (gamma) and channel 7 (beta) in both samples, and sample 0's group 2 (channels 4, 5): 3 x 128.
      EXPECT_EQ(nans, 3 * 2 * 64);
    }
  }
}

TEST(GroupNorm, AbsentGammaAndBetaAreOneAndZero) {
  for (DType t : kDTypes) {
    ops::Problem with = problem(t, {2, 12, 5, 3}, 4, 11, true);
    for (int64_t c = 0; c < 12; ++c) {
      with.t[gn::kGamma].set(c, 1.0);
      with.t[gn::kBeta].set(c, 0.0);
    }
    ops::Problem without = with.clone();
    ASSERT_TRUE(call(with));
    std::vector<TensorView> v = without.views();
    ASSERT_TRUE(group_norm(v[gn::kX], TensorView::none(), TensorView::none(), 4, 1e-5, v[gn::kOut], v[gn::kMean],
                           v[gn::kRstd]));
    EXPECT_TRUE(same_outputs(with, without)) << dtype_name(t);
    // gamma alone, beta alone.
    ops::Problem g_only = with.clone();
    v = g_only.views();
    ASSERT_TRUE(
        group_norm(v[gn::kX], v[gn::kGamma], TensorView::none(), 4, 1e-5, v[gn::kOut], v[gn::kMean], v[gn::kRstd]));
    EXPECT_TRUE(same_outputs(with, g_only));
  }
}

TEST(GroupNorm, OneGroupAndOneGroupPerChannel) {
  for (DType t : kDTypes) {
    for (int64_t groups : {int64_t{1}, int64_t{24}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " groups " + std::to_string(groups));
      expect_matches_reference(problem(t, {3, 24, 9, 7}, groups, 12, false));
    }
  }
}

TEST(GroupNorm, PlanSplitsWholeGroups) {
  gn::Args a;
  a.n = 2, a.c = 320, a.hw = 4096, a.groups = 32, a.dtype = DType::kFloat32;
  gn::Plan p = gn::make_plan(a, Context{2});
  EXPECT_EQ(p.units, 64);  // one group each
  EXPECT_EQ(p.num_threads, 2);
  a.layout = gn::Layout::kNHWC;
  p = gn::make_plan(a, Context{2});
  // Whole rows: N = 2 feeds both threads with one unit per sample.
  EXPECT_EQ(p.chunk_groups, 32);
  EXPECT_EQ(p.units, 2);
  a.n = 1;  // one sample, two threads: two halves of 160 channels (a multiple of 16)
  p = gn::make_plan(a, Context{2});
  EXPECT_EQ(p.chunk_groups, 16);
  EXPECT_EQ(p.units, 2);
  a.n = 1, a.c = 30, a.groups = 3;  // 3 groups of 10 for 2 threads: 2 (20 channels) and 1
  EXPECT_EQ(gn::make_plan(a, Context{2}).chunk_groups, 2);
  // 80 channels per group (a multiple of 16, so any group count aligns): at most 1024 channels a unit gives
  // 3 chunks, of 11, 11 and 10 groups.
  a.n = 2, a.c = 2560, a.groups = 32;
  p = gn::make_plan(a, Context{1});
  EXPECT_EQ(p.chunk_groups, 11);
  EXPECT_EQ(p.units, 2 * 3);
  // 20 channels per group, 60 groups: 2 chunks of 30, rounded down to 28 (4 groups make 80 channels, a multiple
  // of 16), so 3 units a sample.
  a.c = 60 * 20, a.groups = 60;
  p = gn::make_plan(a, Context{1});
  EXPECT_EQ(p.chunk_groups, 28);
  EXPECT_EQ(p.units, 2 * 3);
  a.n = 1, a.c = 4, a.hw = 4, a.groups = 2;  // tiny: one thread
  EXPECT_EQ(gn::make_plan(a, Context{8}).num_threads, 1);
}

// Outputs are streamed from detail::stream_output_min_bytes(the threads that write them): one L2 a thread on Intel
// CPUs, AMD Zen 2 and AMD Zen 4, one L2 for one thread and half the L3 for more on AMD Zen 5, 64 MiB elsewhere (unless
// NNOPS_STREAM_MIN_BYTES says otherwise).
TEST(GroupNorm, PlanStreamsOutputsBeyondTheWritersCaches) {
  const uint64_t one = detail::stream_output_min_bytes(1), two = detail::stream_output_min_bytes(2);
  if (!std::getenv("NNOPS_STREAM_MIN_BYTES")) {
    switch (detail::cpu_kind()) {
      case detail::CpuKind::kIntel:
      case detail::CpuKind::kAmdZen2:
      case detail::CpuKind::kAmdZen4:
        EXPECT_GE(one, uint64_t{256} << 10);
        EXPECT_EQ(two, 2 * one);
        break;
      case detail::CpuKind::kAmdZen5:
        EXPECT_GE(one, uint64_t{256} << 10);
        EXPECT_GE(two, 2 * one);  // half an L3 shared by the cores, each L2 in it (a victim cache) or beside it
        EXPECT_EQ(two, detail::stream_output_min_bytes(3));
        break;
      default:
        EXPECT_EQ(one, uint64_t{64} << 20);
        EXPECT_EQ(two, one);
    }
  }
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const uint64_t t = threads == 1 ? one : two;
    ASSERT_EQ(t % 256, 0u);
    gn::Args a;
    a.n = 2, a.c = 2, a.groups = 2, a.dtype = DType::kFloat32;
    a.hw = static_cast<int64_t>(t / 16);  // 4 groups (units) of hw floats: t bytes of output
    gn::Plan p = gn::make_plan(a, Context{threads});
    EXPECT_EQ(p.num_threads, threads);
    EXPECT_TRUE(p.stream_output);
    a.hw -= 1;
    EXPECT_FALSE(gn::make_plan(a, Context{threads}).stream_output);
    // Channels-last chunks stream only as whole rows: 2 groups of 16 channels for 2 samples give every thread a
    // whole-row unit; one sample on 2 threads takes half rows, which are not streamed.
    a.c = 32, a.hw = static_cast<int64_t>(t / (4 * 64)), a.layout = gn::Layout::kNHWC;
    EXPECT_TRUE(gn::make_plan(a, Context{threads}).stream_output);
    a.n = 1, a.hw *= 2;
    EXPECT_EQ(gn::make_plan(a, Context{threads}).stream_output, threads == 1);
  }
  // Row-major rows of at most gn::kShortRowBytes are streamed only when every row starts on a line: [N, 1280, 8, 8]
  // float32 (rows of 256 bytes), above either threshold, with the output on a line or 16 bytes past one; rows of 49
  // floats (196 bytes) on no line; rows one float longer than the limit streamed wherever they lie.
  for (int threads : {1, 2}) {
    gn::Args s;
    s.n = static_cast<int64_t>(std::max(one, two) / (1280 * 49 * 4) + 1);  // above either threshold with 49 floats
    s.c = 1280, s.groups = 32, s.dtype = DType::kFloat32, s.hw = 64;
    alignas(64) static unsigned char line[128];
    s.out = line;
    EXPECT_TRUE(gn::make_plan(s, Context{threads}).stream_output);
    s.out = line + 16;
    EXPECT_FALSE(gn::make_plan(s, Context{threads}).stream_output);
    s.out = line, s.hw = 49;
    EXPECT_FALSE(gn::make_plan(s, Context{threads}).stream_output);
    s.out = line + 16, s.hw = static_cast<int64_t>(gn::kShortRowBytes / 4) + 1;
    EXPECT_TRUE(gn::make_plan(s, Context{threads}).stream_output);
  }
  // One group is one unit, written by one thread whatever the Context says: its threshold is one thread's.
  gn::Args a;
  a.n = 1, a.c = 1, a.groups = 1, a.dtype = DType::kFloat32, a.hw = static_cast<int64_t>(one / 4);
  EXPECT_TRUE(gn::make_plan(a, Context{2}).stream_output);
}

// Streamed float32 groups (row-major, or channels-last chunks of whole rows) overlap their passes where
// detail::overlap_passes says so for x's bytes: on Intel at any size, on AMD Zen 4 and Zen 5 while x fits half the L3
// (beyond it on Zen 5 row-major groups with the prefetch on, detail::overlap_prefetched_passes), on AMD Zen 2 row-major
// groups only, with the prefetch, in bursts (detail::overlap_burst_steps, on Zen 4 too), nowhere else (unless
// NNOPS_OVERLAP_PASSES says otherwise).
TEST(GroupNorm, PlanOverlapsStreamedPassesWhereTheCpuGains) {
  const uint64_t one = detail::stream_output_min_bytes(1), max = detail::overlap_passes_max_bytes();
  if (!std::getenv("NNOPS_OVERLAP_PASSES")) {
    const detail::CpuKind kind = detail::cpu_kind();
    EXPECT_EQ(max == 0, kind == detail::CpuKind::kOther || kind == detail::CpuKind::kAmdZen2);
    EXPECT_EQ(max == ~uint64_t{0}, kind == detail::CpuKind::kIntel);
  }
  gn::Args a;
  a.n = 1, a.c = 2, a.groups = 2, a.dtype = DType::kFloat32;
  a.hw = static_cast<int64_t>(std::max<uint64_t>(one, 1 << 16) / 8);  // streamed on one thread
  gn::Plan p = gn::make_plan(a, Context{1});
  ASSERT_TRUE(p.stream_output);
  const uint64_t x_bytes = static_cast<uint64_t>(a.hw) * 8;
  // Row-major: overlapped, or (AMD Zen 2 at every size) overlapped with the prefetch, in the CPU's bursts.
  EXPECT_EQ(p.pipeline, detail::overlap_passes(x_bytes) || detail::overlap_prefetched_passes(x_bytes));
  if (detail::overlap_prefetched_passes(x_bytes)) {
    EXPECT_TRUE(p.prefetch);
  }
  EXPECT_EQ(p.pipeline_burst, detail::overlap_burst_steps());
  a.dtype = DType::kBFloat16, a.hw *= 2;  // the same bytes in a half type: never overlapped
  EXPECT_FALSE(gn::make_plan(a, Context{1}).pipeline);
  // Channels-last whole rows: never the prefetched overlap.
  a.dtype = DType::kFloat32, a.hw /= 2, a.layout = gn::Layout::kNHWC;
  p = gn::make_plan(a, Context{1});
  ASSERT_EQ(p.chunk_groups, a.groups);
  EXPECT_EQ(p.pipeline, detail::overlap_passes(x_bytes));
  a.layout = gn::Layout::kNCHW;
  if (max != 0 && max != ~uint64_t{0} && max >= one) {  // both sides of a size limit
    a.hw = static_cast<int64_t>(max / 8);
    EXPECT_TRUE(gn::make_plan(a, Context{1}).pipeline);
    a.hw += 16;
    p = gn::make_plan(a, Context{1});
    EXPECT_TRUE(p.stream_output);
    // Beyond the limit: overlapped only with the statistics pass's prefetch (Zen 5), and row-major only.
    testing::expect_prefetched_pipeline_row_major_only(a, static_cast<uint64_t>(a.hw) * 8,
                                                       [](const gn::Args& b) { return gn::make_plan(b, Context{1}); });
  }
}

// Runs gn::run by hand with make_plan's plan for 3 threads (its scratch holds every variant below: whole-row chunks
// included) changed by `edit`, on `threads` threads; the output goes `past` bytes (one element unless given) past a
// 64-byte boundary (so streamed stores have a peel, a middle and a tail).
template <class Edit>
ops::Problem run_plan(const ops::Problem& before, gn::Layout layout, int threads, const Edit& edit, size_t past = 0) {
  const DType t = before.t[gn::kX].dtype();
  const std::vector<TensorView> v = before.views();
  gn::Args a;
  EXPECT_TRUE(gn::check(v.data(), before.attrs, &a));
  a.layout = layout;
  const std::vector<int64_t> st = testing::channels_last_strides(before.t[gn::kX].shape());
  const testing::StridedCopy xs(before.t[gn::kX], st);
  if (layout == gn::Layout::kNHWC) a.x = xs.view().data();
  gn::Plan plan = gn::make_plan(a, Context{3});
  plan.num_threads = threads;
  edit(a, plan);
  plan.scratch_bytes = gn::scratch_bytes(static_cast<uint64_t>(a.c));
  plan.workspace_bytes = gn::workspace_bytes(a, 3, plan.scratch_bytes);
  ops::Problem p = before.clone();
  std::vector<unsigned char> raw(p.t[gn::kOut].bytes() + 256, 0xA5);
  // The output `past` bytes after a line (one element by default).
  unsigned char* out = raw.data() + (64 - reinterpret_cast<uintptr_t>(raw.data()) % 64) + (past ? past : dtype_size(t));
  a.out = out;
  a.mean = p.t[gn::kMean].view();
  a.rstd = p.t[gn::kRstd].view();
  HostBuffer ws(DType::kFloat32, {static_cast<int64_t>(plan.workspace_bytes / 4 + 16)});
  gn::run(plan, a, ws.data());
  EXPECT_TRUE(testing::untouched_around(raw, out, p.t[gn::kOut].bytes(), 0xA5));
  if (layout == gn::Layout::kNCHW) {
    std::memcpy(p.t[gn::kOut].data(), out, p.t[gn::kOut].bytes());
  } else {
    const TensorView ov = TensorView::strided(out, t, before.t[gn::kX].shape().data(), st.data(), 4);
    detail::gather_dense(ov, p.t[gn::kOut].data());
  }
  return p;
}

// Every schedule the plan could pick gives the same bits: threads 1-3, streaming stores, software prefetch on and
// off, row-major groups pipelined (each group's output beside the next group's statistics, step by step or in bursts)
// or not, their channels'
// statistics two at a time or one, channels-last chunks of 1 to 3 groups and of whole rows, streamed, with and
// without the output pass's prefetch, units pipelined or not. The output starts one element, 16 or 48 bytes past a line
// (by variant), so streamed rows peel heads of each kind, and channels-last rows of whole lines are joined (JoinedRows)
// across lines split every way. Wide rows run bfloat16's channels-last pairs (ColumnPairsFrom): 64 channels from the
// head's end (rows of 128 bytes, every row the same head) or from column 0 (not streamed); 40 channels streamed (rows
// of 80 bytes whose heads differ) without them. 256 channels over 65 rows: the column sums' blocked walk with its lanes
// padded (detail::canon_column_lane_stride).
TEST(GroupNorm, EveryScheduleGivesTheSameBits) {
  for (DType t : kDTypes) {
    for (auto [shape, groups] : {std::pair<std::vector<int64_t>, int64_t>{{2, 12, 5, 41}, 6},
                                 {{2, 64, 3, 5}, 8},
                                 {{2, 40, 3, 7}, 4},
                                 {{2, 256, 5, 13}, 32}}) {
      const int64_t channels = shape[1];  // (a lambda cannot capture a structured binding in C++17)
      const ops::Problem before = problem(t, shape, groups, 22, false);
      ops::Problem want = before.clone();
      ASSERT_TRUE(call(want, 1));
      testing::for_each_isa([&](const std::string&) {
        for (gn::Layout layout : {gn::Layout::kNCHW, gn::Layout::kNHWC}) {
          for (int variant = 0; variant < 8; ++variant) {
            for (int threads : {1, 2, 3}) {
              SCOPED_TRACE(std::string(dtype_name(t)) + " C " + std::to_string(channels) +
                           (layout == gn::Layout::kNHWC ? " channels-last" : " row-major") + " variant " +
                           std::to_string(variant) + " threads " + std::to_string(threads));
              const ops::Problem p = run_plan(
                  before, layout, threads,
                  [&](const gn::Args& a, gn::Plan& plan) {
                    if (layout == gn::Layout::kNCHW) {
                      plan.stream_output = variant % 2;
                      plan.prefetch = variant / 2 % 2;
                      plan.pipeline = variant / 4;
                      plan.pipeline_burst = 2 * threads - 1;  // the output step by step, or in bursts of 3 or 5 steps
                      plan.pair_rows = threads != 2;          // two channels' statistics at once, or one at a time
                    } else {  // variants 5 to 7: chunks of whole rows, streamed, 6 and 7 with the output pass's
                              // prefetch
                      plan.chunk_groups = variant < 5 ? 1 + variant % 3 : a.groups;
                      plan.units = a.n * ((a.groups + plan.chunk_groups - 1) / plan.chunk_groups);
                      plan.stream_output = variant >= 4;  // variant 4: ignored, the chunk is not whole rows
                      plan.prefetch = variant >= 6;
                      plan.pipeline = variant % 2 == 1;  // each unit's rows beside the next unit's column sums
                      // the column sums' walk: lane by lane or strip by strip; its prefetch none, into L2 or into L1
                      plan.column_walk.by_lane = variant / 2 % 2 == 0;
                      plan.column_walk.prefetch = static_cast<detail::ColumnPrefetch>((variant / 2 + threads) % 3);
                    }
                  },
                  variant % 3 == 0   ? 0
                  : variant % 3 == 1 ? 16
                                     : 48);
              EXPECT_TRUE(same_outputs(p, want));
            }
          }
        }
      });
    }
  }
}

// A pipelined thread's later groups take the classical second pass where the one-pass variance is not certified, in
// both layouts (channels-last: units of one group or of whole rows, a unit's rows written during the redone pass), and
// every schedule gives the same bits, with each shift (see OnePassVarianceIsCertifiedOrRedone). Groups of 16384
// elements (summed unshifted): 0 and 2 centred, certified; 1 and 3 with |mean| >> std, redone. Groups of 180,000
// (the sample decides, gn::group_shift): 0 and 2 centred, unshifted; 1 and 3 with |mean| >> std, shifted by their
// first element, which in group 1 is an outlier, so that group is redone and group 3 is certified.
TEST(GroupNorm, PipelinedGroupsRedoTheVarianceWhereNeeded) {
  for (const int64_t hw : {8192, 90000}) {
    SCOPED_TRACE("groups of " + std::to_string(2 * hw));
    ops::Problem p = problem(DType::kFloat32, {2, 4, hw, 1}, 2, 23, false);
    for (int64_t i = 0; i < p.t[gn::kX].numel(); ++i) {
      const int64_t q = i / (2 * hw);
      p.t[gn::kX].set(i, (q % 2 ? 1e4 : 3.0) + std::sin(0.37 * static_cast<double>(i)));
    }
    const bool large = !gn::unshifted_sums(static_cast<double>(2 * hw));
    if (large) p.t[gn::kX].set(2 * hw, -1e6);
    std::vector<double> g[4];
    for (int q = 0; q < 4; ++q) {
      for (int64_t i = 0; i < 2 * hw; ++i) g[q].push_back(p.t[gn::kX].get(q * 2 * hw + i));
      auto at = [&](int64_t j) { return g[q][j]; };
      ASSERT_EQ(gn::group_shift(2 * hw, at), q % 2 && large ? g[q][0] : 0.0);
      ASSERT_EQ(kernel_moments(g[q]).ok, q % 2 == 0 || (large && q == 3));
    }
    const ops::Problem before = p.clone();
    expect_matches_reference(before);
    ops::Problem want = before.clone();
    ASSERT_TRUE(call(want, 1));
    testing::for_each_isa([&](const std::string&) {
      for (gn::Layout layout : {gn::Layout::kNCHW, gn::Layout::kNHWC}) {
        for (int threads : {1, 2}) {
          for (bool stream : {false, true}) {
            SCOPED_TRACE((layout == gn::Layout::kNHWC ? "channels-last threads " : "threads ") +
                         std::to_string(threads) + (stream ? " streamed" : ""));
            EXPECT_TRUE(same_outputs(run_plan(before, layout, threads,
                                              [&](const gn::Args& a, gn::Plan& plan) {
                                                plan.pipeline = true;
                                                plan.stream_output = stream;
                                                if (layout == gn::Layout::kNHWC) {  // streamed: whole rows
                                                  plan.chunk_groups = stream ? a.groups : 1;
                                                  plan.units = a.n * (a.groups / plan.chunk_groups);
                                                }
                                              }),
                                     want));
          }
        }
      }
    });
  }
}

TEST(GroupNorm, EmptyInputsWriteNothing) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{0, 4, 3}, {2, 4, 0}, {2, 4, 3, 0}}) {
    ops::Problem p = problem(DType::kFloat32, shape, 2, 13, false);
    for (int i : {gn::kOut, gn::kMean, gn::kRstd}) testing::fill_sentinel(p.t[i]);
    const ops::Problem before = p.clone();
    ASSERT_TRUE(call(p));
    EXPECT_TRUE(same_outputs(p, before));
  }
}

TEST(GroupNorm, ValidationErrorsNameTheArgumentAndWriteNothing) {
  const DType f32 = DType::kFloat32;
  ops::Problem p = problem(f32, {2, 6, 5}, 3, 14, false);
  for (int i : {gn::kOut, gn::kMean, gn::kRstd}) testing::fill_sentinel(p.t[i]);
  const ops::Problem before = p.clone();
  const std::vector<TensorView> v = p.views();
  HostBuffer g7(f32, {7}), g2d(f32, {1, 6}), g16(DType::kFloat16, {6}), m23(f32, {2, 2}), m16(DType::kFloat16, {2, 3}),
      x1(f32, {12});
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Bad {
    const char* what;
    TensorView x, gamma, beta, out, mean, rstd;
    int64_t groups;
    double eps;
    const char* needle;
  };
  const TensorView X = v[gn::kX], G = v[gn::kGamma], B = v[gn::kBeta], O = v[gn::kOut], M = v[gn::kMean],
                   R = v[gn::kRstd];
  const std::vector<Bad> cases = {
      {"groups 0", X, G, B, O, M, R, 0, 1e-5, "num_groups is 0; expected a positive divisor of C = 6"},
      {"groups -3", X, G, B, O, M, R, -3, 1e-5, "num_groups is -3"},
      {"groups 4", X, G, B, O, M, R, 4, 1e-5, "num_groups is 4; expected a positive divisor of C = 6"},
      {"eps 0", X, G, B, O, M, R, 3, 0.0, "eps is 0; expected a finite value > 0"},
      {"eps -1", X, G, B, O, M, R, 3, -1.0, "eps is -1"},
      {"eps nan", X, G, B, O, M, R, 3, nan, "eps is nan"},
      {"eps inf", X, G, B, O, M, R, 3, inf, "eps is inf"},
      {"gamma [7]", X, g7.view(), B, O, M, R, 3, 1e-5, "gamma has shape [7]; expected [C] = [6]"},
      {"beta [1, 6]", X, G, g2d.view(), O, M, R, 3, 1e-5, "beta has shape [1, 6]; expected [C] = [6]"},
      {"gamma float16", X, g16.view(), B, O, M, R, 3, 1e-5,
       "gamma has dtype float16; expected float32 (the dtype of x) or float32"},
      {"mean [2, 2]", X, G, B, O, m23.view(), R, 3, 1e-5, "mean has shape [2, 2]; expected [N, num_groups] = [2, 3]"},
      {"rstd dtype", X, G, B, O, M, m16.view(), 3, 1e-5,
       "rstd has dtype float16; expected float32 (the dtype of mean)"},
      {"x rank 1", x1.view(), G, B, O, M, R, 3, 1e-5, "x has shape [12] (rank 1); expected rank 2 to 8"},
      {"out shape", X, G, B, x1.view(), M, R, 3, 1e-5, "out has shape [12]; expected the shape of x [2, 6, 5]"},
      {"out over x", X, G, B, X, M, R, 3, 1e-5, "out and x overlap"},
      {"mean over gamma", X, G, B, O, TensorView(G.data(), f32, {2, 3}), R, 3, 1e-5, "mean and gamma overlap"},
      {"rstd over mean", X, G, B, O, M, M, 3, 1e-5, "mean and rstd overlap"},
      {"null x", TensorView(nullptr, f32, {2, 6, 5}), G, B, O, M, R, 3, 1e-5, "x has a null data pointer"},
      {"null mean", X, G, B, O, TensorView(nullptr, f32, {2, 3}), R, 3, 1e-5, "mean has a null data pointer"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.what);
    const Status s = group_norm(c.x, c.gamma, c.beta, c.groups, c.eps, c.out, c.mean, c.rstd);
    EXPECT_FALSE(s.is_ok());
    EXPECT_THAT(s.message(), HasSubstr(std::string("group_norm: ") + c.needle));
    EXPECT_TRUE(same_outputs(p, before));
  }
  // Mixed precision: x in bfloat16 with gamma, beta, mean and rstd in float32 is fine.
  ops::Problem mixed = problem(DType::kBFloat16, {2, 6, 5}, 3, 15, false);
  EXPECT_EQ(mixed.t[gn::kGamma].dtype(), DType::kFloat32);
  EXPECT_TRUE(call(mixed));
}

}  // namespace
}  // namespace nnops
