// GroupNormBackward: the float64 reference is the true gradient (central finite differences of GroupNorm's
// forward), the kernel matches the reference on every target, channels-last / targets / thread counts give the
// same bits where the order matters, in place over dy, every output mask, absent gamma, empty inputs, and every
// validation rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/core/check.hpp"
#include "src/core/layout.hpp"
#include "src/ops/norm/group_norm/plan_test_util.hpp"
#include "src/ops/norm/group_norm_backward/group_norm_backward_impl.hpp"
#include "tests/op_test_util.hpp"
#include "tests/test_util.hpp"

namespace nnops {
namespace {

using detail::HostBuffer;
using ::testing::HasSubstr;

const DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

const ops::OpDesc& desc() { return ops::desc_group_norm_backward(); }

ops::Problem problem(DType t, const std::vector<int64_t>& shape, int64_t groups, uint64_t seed, bool like_t) {
  return testing::make_problem(desc(), t, shape, seed, like_t,
                               [&](ops::Attrs& a) { a[gn_bwd::kNumGroups].i = groups; });
}

std::array<bool, 3> mask_of(const ops::Problem& p) {
  const std::vector<bool>& m = p.attrs[gn_bwd::kOutputMask].mask;
  return {m[0], m[1], m[2]};
}

Status call(ops::Problem& p, int threads = 0) {
  const std::vector<TensorView> v = p.views();
  return group_norm_backward(v[gn_bwd::kDy], v[gn_bwd::kX], v[gn_bwd::kMean], v[gn_bwd::kRstd], v[gn_bwd::kGamma],
                             p.attrs[gn_bwd::kNumGroups].i, mask_of(p), v[gn_bwd::kDx], v[gn_bwd::kDgamma],
                             v[gn_bwd::kDbeta], Context{threads});
}

::testing::AssertionResult same_outputs(const ops::Problem& a, const ops::Problem& b) {
  return testing::same_outputs(desc(), a, b);
}

// GroupNorm's forward in float64 and the loss sum(out * w).
double loss(const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta,
            const std::vector<double>& w, int64_t n, int64_t c, int64_t hw, int64_t groups, double eps) {
  const int64_t cpg = c / groups, m = cpg * hw;
  double l = 0;
  for (int64_t q = 0; q < n * groups; ++q) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < m; ++i) s += x[q * m + i];
    const double mu = s / m;
    for (int64_t i = 0; i < m; ++i) ss += (x[q * m + i] - mu) * (x[q * m + i] - mu);
    const double rs = 1 / std::sqrt(ss / m + eps);
    for (int64_t i = 0; i < m; ++i) {
      const int64_t ch = (q % groups) * cpg + i / hw;
      l += ((x[q * m + i] - mu) * rs * gamma[ch] + beta[ch]) * w[q * m + i];
    }
  }
  return l;
}

TEST(GroupNormBackward, ReferenceIsTheTrueGradientOfTheForward) {
  // d(sum(out * dy)) / d(x, gamma, beta) by central differences of the float64 forward, against the float64
  // reference of the backward (given the forward's own mean and rstd). Step 1e-5 on O(1) values: truncation
  // and rounding errors of the difference quotient stay below 1e-6 relative to the gradient's scale.
  const int64_t n = 2, c = 6, hw = 5, groups = 3;
  const double eps = 1e-5, h = 1e-5;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> x(n * c * hw), dy(x.size()), gamma(c), beta(c);
  for (double& v : x) v = 2 * u(rng) + 0.5;
  for (double& v : dy) v = u(rng);
  for (double& v : gamma) v = 1.5 * u(rng);
  for (double& v : beta) v = 0.5 * u(rng);
  const int64_t cpg = c / groups, m = cpg * hw;
  std::vector<double> mean(n * groups), rstd(n * groups);
  for (int64_t q = 0; q < n * groups; ++q) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < m; ++i) s += x[q * m + i];
    mean[q] = s / m;
    for (int64_t i = 0; i < m; ++i) ss += (x[q * m + i] - mean[q]) * (x[q * m + i] - mean[q]);
    rstd[q] = 1 / std::sqrt(ss / m + eps);
  }
  const gn_bwd::Reference ref =
      gn_bwd::reference(dy.data(), x.data(), mean.data(), rstd.data(), gamma.data(), n, c, hw, groups);
  auto fd = [&](std::vector<double>& v, std::size_t i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = loss(x, gamma, beta, dy, n, c, hw, groups, eps);
    v[i] = keep - h;
    const double down = loss(x, gamma, beta, dy, n, c, hw, groups, eps);
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(ref.dx[i], fd(x, i), 1e-6 * (1 + ref.dx_scale[i])) << i;
  for (int64_t ch = 0; ch < c; ++ch) {
    EXPECT_NEAR(ref.dgamma[ch], fd(gamma, ch), 1e-6 * (1 + ref.dgamma_scale[ch])) << ch;
    EXPECT_NEAR(ref.dbeta[ch], fd(beta, ch), 1e-6 * (1 + ref.dbeta_scale[ch])) << ch;
  }
}

// Through the C++ API, against the float64 reference on every target; the worst error/bound ratio.
double expect_matches_reference(const ops::Problem& before) {
  return testing::expect_matches_reference(desc(), before, [](ops::Problem& p) { return call(p); });
}

TEST(GroupNormBackward, MatchesReferenceOnRealisticShapes) {
  double worst = 0;
  for (DType t : kDTypes) {
    for (bool like_t : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (like_t ? " stats in T" : " stats in float32"));
      worst = std::max(worst, expect_matches_reference(problem(t, {2, 64, 16, 16}, 32, 1, like_t)));
      worst = std::max(worst, expect_matches_reference(problem(t, {1, 6, 1 << 15}, 3, 2, like_t)));
      worst = std::max(worst, expect_matches_reference(problem(t, {3, 40, 7, 7}, 8, 3, like_t)));
      worst = std::max(worst, expect_matches_reference(problem(t, {4, 24}, 24, 4, like_t)));  // rank 2, group = C
    }
  }
  std::printf("worst error/bound ratio: %.3g\n", worst);
}

// x and dy over sixteen decades (float16: four), so that float64 sums round.
ops::Problem order_sensitive(DType t, const std::vector<int64_t>& shape, int64_t groups) {
  ops::Problem p = problem(t, shape, groups, 9, false);
  std::mt19937_64 rng(10);
  std::uniform_real_distribution<double> u(-1, 1), e(t == DType::kFloat16 ? -2 : -8, t == DType::kFloat16 ? 2 : 8);
  for (int i : {gn_bwd::kX, gn_bwd::kDy}) {
    for (int64_t k = 0; k < p.t[i].numel(); ++k) p.t[i].set(k, u(rng) * std::pow(10.0, e(rng)));
  }
  return p;
}

ops::Problem run_channels_last(const ops::Problem& before, int threads, bool in_place) {
  ops::Problem p = before.clone();
  const std::vector<int64_t> st = testing::channels_last_strides(p.t[gn_bwd::kDy].shape());
  const testing::StridedCopy dy(p.t[gn_bwd::kDy], st), x(p.t[gn_bwd::kX], st), dx(p.t[gn_bwd::kDx], st);
  const std::vector<TensorView> v = p.views();
  const TensorView& dxv = in_place ? dy.view() : dx.view();
  EXPECT_TRUE(group_norm_backward(dy.view(), x.view(), v[gn_bwd::kMean], v[gn_bwd::kRstd], v[gn_bwd::kGamma],
                                  p.attrs[gn_bwd::kNumGroups].i, mask_of(p), dxv, v[gn_bwd::kDgamma], v[gn_bwd::kDbeta],
                                  Context{threads}));
  p.t[gn_bwd::kDx] = in_place ? dy.dense_copy() : dx.dense_copy();
  return p;
}

TEST(GroupNormBackward, ChannelsLastTargetsThreadsAndInPlaceGiveTheSameBits) {
  for (DType t : kDTypes) {
    for (auto [shape, groups] :
         {std::pair<std::vector<int64_t>, int64_t>{{2, 320, 8, 8}, 32}, {{3, 21, 37}, 3}, {{2, 40, 13, 11}, 4}}) {
      SCOPED_TRACE(std::string(dtype_name(t)));
      const ops::Problem before = order_sensitive(t, shape, groups);
      const int64_t ng = groups;  // (a structured binding cannot be captured in C++17)
      ops::Problem want = before.clone();
      ASSERT_TRUE(call(want, 1));
      testing::for_each_isa([&](const std::string&) {
        for (int threads : {1, 2, 3}) {
          ops::Problem dense = before.clone();
          ASSERT_TRUE(call(dense, threads));
          EXPECT_TRUE(same_outputs(dense, want)) << "row-major, " << threads << " threads";
          EXPECT_TRUE(same_outputs(run_channels_last(before, threads, false), want)) << "channels-last";
          EXPECT_TRUE(same_outputs(run_channels_last(before, threads, true), want)) << "channels-last in place";
          // Row-major in place: dx written over dy.
          ops::Problem ip = before.clone();
          std::vector<TensorView> v = ip.views();
          ASSERT_TRUE(group_norm_backward(v[0], v[1], v[2], v[3], v[4], ng, {true, true, true}, v[0], v[6], v[7],
                                          Context{threads}));
          ip.t[gn_bwd::kDx] = ip.t[gn_bwd::kDy].clone();
          EXPECT_TRUE(same_outputs(ip, want)) << "in place";
        }
      });
    }
  }
}

// Every schedule the plan could pick gives the same bits, in place too: threads 1-3, dx streamed one element past
// a 64-byte boundary (the peel, the streamed middle and the tail), software prefetch on and off, channels-last chunks
// of 1 to 3 groups and of whole rows, streamed, with and without the output pass's prefetch.
TEST(GroupNormBackward, NaNsPropagateWhereTheReferenceHasThem) {
  // A NaN gamma makes its group's dx NaN (through a = sum gamma * sum dy), a NaN rstd its (n, g). Both in float32
  // with all-ones low payload bits, which a bfloat16 rounding without its NaN fix-up would carry into the sign
  // (the kernels make NaN constants canonical first). Rows of 64 and 32 channels (16 groups of 2), so that whole
  // vectors of every width run in both layouts, channels-last bfloat16 rows as pairs.
  const uint32_t payloads[] = {0x7FFFFFFFu, 0xFFBFFFFFu};
  for (DType t : kDTypes) {
    for (bool cl : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (cl ? " channels-last" : " row-major"));
      ops::Problem p = problem(t, {2, 32, 64}, 16, 31, false);
      p.t[gn_bwd::kGamma] = HostBuffer(DType::kFloat32, {32});
      for (int64_t c = 0; c < 32; ++c) p.t[gn_bwd::kGamma].set(c, 0.5 + 0.25 * static_cast<double>(c));
      std::memcpy(static_cast<uint32_t*>(p.t[gn_bwd::kGamma].data()) + 2, &payloads[0], 4);  // group 1
      ASSERT_EQ(p.t[gn_bwd::kRstd].dtype(), DType::kFloat32);
      std::memcpy(static_cast<uint32_t*>(p.t[gn_bwd::kRstd].data()) + 16 + 3, &payloads[1], 4);  // sample 1, group 3
      const ops::Problem before = p.clone();
      if (!cl) {
        expect_matches_reference(before);
      } else {
        testing::for_each_isa([&](const std::string&) {
          EXPECT_TRUE(desc().verify(before, run_channels_last(before, 2, false), 1).pass());
        });
      }
      ops::Problem q = before.clone();
      ASSERT_TRUE(call(q, 1));
      int64_t nans = 0;
      for (int64_t i = 0; i < q.t[gn_bwd::kDx].numel(); ++i) nans += std::isnan(q.t[gn_bwd::kDx].get(i)) ? 1 : 0;
      // Group 1 (channels 2, 3) in both samples and sample 1's group 3 (channels 6, 7): 3 x 128.
      EXPECT_EQ(nans, 3 * 2 * 64);
    }
  }
}

// As GroupNorm's test of the name: wide rows run bfloat16's channels-last pairs from the stream head, from column 0, or
// (40 channels streamed: rows whose heads differ) not at all; in place too.
TEST(GroupNormBackward, EveryScheduleGivesTheSameBits) {
  for (DType t : kDTypes) {
    for (auto [shape, groups] : {std::pair<std::vector<int64_t>, int64_t>{{2, 12, 5, 41}, 6},
                                 {{2, 64, 3, 5}, 8},
                                 {{2, 40, 3, 7}, 4},
                                 {{2, 256, 5, 13}, 32}}) {
      const int64_t channels = shape[1];  // (a lambda cannot capture a structured binding in C++17)
      const ops::Problem before = problem(t, shape, groups, 22, false);
      ops::Problem want = before.clone();
      ASSERT_TRUE(call(want, 1));
      const std::vector<TensorView> v = before.views();
      const std::vector<int64_t> st = testing::channels_last_strides(before.t[gn_bwd::kDy].shape());
      const testing::StridedCopy dys(before.t[gn_bwd::kDy], st), xs(before.t[gn_bwd::kX], st);
      const size_t bytes = before.t[gn_bwd::kDx].bytes();
      testing::for_each_isa([&](const std::string&) {
        for (gn_bwd::Layout layout : {gn_bwd::Layout::kNCHW, gn_bwd::Layout::kNHWC}) {
          const bool cl = layout == gn_bwd::Layout::kNHWC;
          for (bool in_place : {false, true}) {
            for (int variant = 0; variant < 8; ++variant) {
              for (int threads : {1, 2, 3}) {
                SCOPED_TRACE(std::string(dtype_name(t)) + " C " + std::to_string(channels) +
                             (cl ? " channels-last" : " row-major") + (in_place ? " in place" : "") + " variant " +
                             std::to_string(variant) + " threads " + std::to_string(threads));
                gn_bwd::Args a;
                ASSERT_TRUE(gn_bwd::check(v.data(), before.attrs, &a));
                a.layout = layout;
                if (cl) a.dy = dys.view().data(), a.x = xs.view().data();
                gn_bwd::Plan plan = gn_bwd::make_plan(a, Context{3});
                plan.num_threads = threads;
                if (!cl) {
                  plan.stream_output = variant % 2;
                  plan.prefetch = variant / 2 % 2;
                  plan.pipeline = variant / 4;            // each group's dx beside the next group's pass 1
                  plan.pipeline_burst = 2 * threads - 1;  // step by step, or in bursts of 3 or 5 steps
                  // pass 1's accumulations on both pipe kinds (float32 only) or not, whatever this CPU's default
                  plan.split_sum_pipes = t == DType::kFloat32 && (variant + threads) % 2 == 1;
                } else {  // variants 5 to 7: chunks of whole rows, streamed, 6 and 7 with the output pass's prefetch
                  plan.chunk_groups = variant < 5 ? 1 + variant % 3 : a.groups;
                  plan.units = a.n * ((a.groups + plan.chunk_groups - 1) / plan.chunk_groups);
                  plan.stream_output = variant >= 4;  // variant 4: ignored, the chunk is not whole rows
                  plan.prefetch = variant >= 6;
                  // the column sums' walk: lane by lane or strip by strip; its prefetch none, into L2 or into L1
                  plan.column_walk.by_lane = variant % 2 == 0;
                  plan.column_walk.prefetch = static_cast<detail::ColumnPrefetch>((variant + threads) % 3);
                }
                // Scratch for whole-row chunks and 3 threads.
                plan.scratch_bytes = gn_bwd::scratch_bytes(static_cast<uint64_t>(a.c));
                plan.workspace_bytes = gn_bwd::workspace_bytes(a, 3, plan.scratch_bytes);
                ops::Problem p = before.clone();
                std::vector<unsigned char> raw(bytes + 256, 0xA5);
                // dx one element, 16 or 48 bytes past a line: heads of each kind, joined rows split every way
                const size_t past = variant % 3 == 0 ? dtype_size(t) : variant % 3 == 1 ? 16 : 48;
                unsigned char* out = raw.data() + (64 - reinterpret_cast<uintptr_t>(raw.data()) % 64) + past;
                if (in_place) {
                  std::memcpy(out, cl ? dys.view().data() : before.t[gn_bwd::kDy].data(), bytes);
                  a.dy = out;
                }
                a.dx = out;
                a.dgamma = p.t[gn_bwd::kDgamma].view();
                a.dbeta = p.t[gn_bwd::kDbeta].view();
                HostBuffer ws(DType::kFloat32, {static_cast<int64_t>(plan.workspace_bytes / 4 + 16)});
                gn_bwd::run(plan, a, ws.data());
                EXPECT_TRUE(testing::untouched_around(raw, out, bytes, 0xA5));
                if (!cl) {
                  std::memcpy(p.t[gn_bwd::kDx].data(), out, bytes);
                } else {
                  const TensorView ov = TensorView::strided(out, t, before.t[gn_bwd::kDy].shape().data(), st.data(), 4);
                  detail::gather_dense(ov, p.t[gn_bwd::kDx].data());
                }
                EXPECT_TRUE(same_outputs(p, want));
              }
            }
          }
        }
      });
    }
  }
}

// Short row-major rows (gn::kShortRowBytes) are streamed by where dx lies, not dy or x: rows of 64 floats above
// either stream threshold.
TEST(GroupNormBackward, PlanJudgesShortRowsByWhereDxLies) {
  const uint64_t big = std::max(detail::stream_output_min_bytes(1), detail::stream_output_min_bytes(2));
  alignas(64) static unsigned char line[128];
  gn_bwd::Args a;
  a.n = static_cast<int64_t>(big / (1280 * 64 * 4) + 1), a.c = 1280, a.groups = 32, a.dtype = DType::kFloat32;
  a.hw = 64;
  for (int threads : {1, 2}) {
    a.dy = line + 16, a.x = line + 16, a.dx = line;
    EXPECT_TRUE(gn_bwd::make_plan(a, Context{threads}).stream_output);
    a.dy = line, a.x = line, a.dx = line + 16;
    EXPECT_FALSE(gn_bwd::make_plan(a, Context{threads}).stream_output);
  }
}

// Pass 1 reads x and dy: detail::overlap_passes judges their bytes together, twice the output's.
TEST(GroupNormBackward, PlanOverlapsPassesByBothInputs) {
  const uint64_t max = detail::overlap_passes_max_bytes(), one = detail::stream_output_min_bytes(1);
  if (max == 0 || max == ~uint64_t{0} || max < one) GTEST_SKIP() << "no size limit on overlapped passes on this CPU";
  gn_bwd::Args a;
  a.n = 1, a.c = 2, a.groups = 2, a.dtype = DType::kFloat32;
  a.hw = static_cast<int64_t>(max / 8);  // x is `max` bytes: x and dy twice that
  gn_bwd::Plan p = gn_bwd::make_plan(a, Context{1});
  EXPECT_TRUE(p.stream_output);
  // Beyond the limit only with the statistics pass's prefetch (detail::overlap_prefetched_passes), row-major only.
  testing::expect_prefetched_pipeline_row_major_only(
      a, static_cast<uint64_t>(a.hw) * 16, [](const gn_bwd::Args& b) { return gn_bwd::make_plan(b, Context{1}); });
  a.hw /= 2;
  EXPECT_EQ(gn_bwd::make_plan(a, Context{1}).pipeline, static_cast<uint64_t>(a.hw) * 8 >= one);
}

TEST(GroupNormBackward, EveryOutputMaskWritesExactlyItsOutputs) {
  const ops::Problem before = problem(DType::kFloat32, {2, 12, 5, 3}, 4, 11, false);
  ops::Problem all = before.clone();
  ASSERT_TRUE(call(all));
  for (int bits = 0; bits < 8; ++bits) {
    SCOPED_TRACE("mask " + std::to_string(bits));
    const std::array<bool, 3> mask = {(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
    ops::Problem p = before.clone();
    for (int i : {gn_bwd::kDx, gn_bwd::kDgamma, gn_bwd::kDbeta}) testing::fill_sentinel(p.t[i]);
    const ops::Problem sentinel = p.clone();
    std::vector<TensorView> v = p.views();
    // An unselected output may be absent.
    for (int k = 0; k < 3; ++k) {
      if (!mask[k] && k != 1) v[gn_bwd::kDx + k] = TensorView::none();
    }
    ASSERT_TRUE(group_norm_backward(v[0], v[1], v[2], v[3], v[4], 4, mask, v[5], v[6], v[7]));
    for (int k = 0; k < 3; ++k) {
      const int i = gn_bwd::kDx + k;
      EXPECT_TRUE(p.t[i].same_bytes(mask[k] ? all.t[i] : sentinel.t[i])) << desc().tensors[i].name;
    }
  }
}

TEST(GroupNormBackward, AbsentGammaIsOnes) {
  for (DType t : kDTypes) {
    ops::Problem with = problem(t, {2, 12, 5, 3}, 4, 12, true);
    for (int64_t c = 0; c < 12; ++c) with.t[gn_bwd::kGamma].set(c, 1.0);
    ops::Problem without = with.clone();
    ASSERT_TRUE(call(with));
    std::vector<TensorView> v = without.views();
    ASSERT_TRUE(
        group_norm_backward(v[0], v[1], v[2], v[3], TensorView::none(), 4, {true, true, true}, v[5], v[6], v[7]));
    EXPECT_TRUE(same_outputs(with, without)) << dtype_name(t);
  }
}

TEST(GroupNormBackward, AgreesWithGroupNormalizationGradWhenGammaIsOne) {
  // CANN's GroupNormalizationGrad formula is the true input gradient exactly when gamma is all ones: both
  // operators then compute the same dx (each within its own bound of the same float64 value).
  const ops::Problem before = problem(DType::kFloat32, {2, 8, 6, 6}, 4, 13, false);
  ops::Problem p = before.clone();
  for (int64_t c = 0; c < 8; ++c) p.t[gn_bwd::kGamma].set(c, 1.0);
  ASSERT_TRUE(call(p));
  // GroupNormalizationGrad takes [N, G, M] with gamma broadcast.
  HostBuffer ones(DType::kFloat32, {2, 4, 72}), dx(DType::kFloat32, {2, 4, 72});
  for (int64_t i = 0; i < ones.numel(); ++i) ones.set(i, 1.0);
  const int64_t sh[] = {2, 4, 72};
  const TensorView x = TensorView::contiguous(p.t[gn_bwd::kX].data(), DType::kFloat32, sh, 3);
  const TensorView dy = TensorView::contiguous(p.t[gn_bwd::kDy].data(), DType::kFloat32, sh, 3);
  ASSERT_TRUE(
      group_normalization_grad(x, dy, ones.view(), p.t[gn_bwd::kMean].view(), p.t[gn_bwd::kRstd].view(), dx.view()));
  for (int64_t i = 0; i < dx.numel(); ++i) {
    const double a = dx.get(i), b = p.t[gn_bwd::kDx].get(i);
    EXPECT_NEAR(a, b, 16 * std::ldexp(1.0, -24) * (1 + std::fabs(a))) << i;
  }
}

TEST(GroupNormBackward, EmptyInputsZeroTheParameterGradients) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{0, 4, 3}, {2, 4, 0}}) {
    ops::Problem p = problem(DType::kFloat32, shape, 2, 14, false);
    for (int i : {gn_bwd::kDx, gn_bwd::kDgamma, gn_bwd::kDbeta}) testing::fill_sentinel(p.t[i]);
    ASSERT_TRUE(call(p));
    for (int i : {gn_bwd::kDgamma, gn_bwd::kDbeta}) {
      for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(p.t[i].get(c), 0.0);
    }
  }
}

TEST(GroupNormBackward, ValidationErrorsNameTheArgumentAndWriteNothing) {
  const DType f32 = DType::kFloat32;
  ops::Problem p = problem(f32, {2, 6, 5}, 3, 15, false);
  for (int i : {gn_bwd::kDx, gn_bwd::kDgamma, gn_bwd::kDbeta}) testing::fill_sentinel(p.t[i]);
  const ops::Problem before = p.clone();
  const std::vector<TensorView> v = p.views();
  HostBuffer m5(f32, {5}), g7(f32, {7}), d16(DType::kFloat16, {2, 6, 5}), m16(DType::kFloat16, {2, 3}),
      x2(f32, {2, 6, 4});
  struct Bad {
    const char* what;
    std::vector<TensorView> t;
    int64_t groups;
    std::array<bool, 3> mask;
    const char* needle;
  };
  auto with = [&](int i, const TensorView& t) {
    std::vector<TensorView> w = v;
    w[i] = t;
    return w;
  };
  const std::vector<Bad> cases = {
      {"groups 4", v, 4, {true, true, true}, "num_groups is 4; expected a positive divisor of C = 6"},
      {"mean count",
       with(gn_bwd::kMean, m5.view()),
       3,
       {true, true, true},
       "mean has shape [5] (5 elements); expected N * num_groups = 6 elements"},
      {"gamma count", with(gn_bwd::kGamma, g7.view()), 3, {true, true, true}, "gamma has shape [7] (7 elements)"},
      {"x dtype", with(gn_bwd::kX, d16.view()), 3, {true, true, true}, "x has dtype float16; expected float32"},
      {"rstd dtype", with(gn_bwd::kRstd, m16.view()), 3, {true, true, true}, "rstd has dtype float16"},
      {"x shape",
       with(gn_bwd::kX, x2.view()),
       3,
       {true, true, true},
       "x has shape [2, 6, 4]; expected the shape of dy"},
      {"dx absent",
       with(gn_bwd::kDx, TensorView::none()),
       3,
       {true, false, false},
       "dx is selected by output_mask but was not given"},
      {"dx over x", with(gn_bwd::kDx, v[gn_bwd::kX]), 3, {true, true, true}, "dx and x overlap"},
      {"dbeta over dgamma",
       with(gn_bwd::kDbeta, v[gn_bwd::kDgamma]),
       3,
       {true, true, true},
       "dbeta and dgamma overlap"},
      {"dgamma over gamma",
       with(gn_bwd::kDgamma, v[gn_bwd::kGamma]),
       3,
       {true, true, true},
       "dgamma and gamma overlap"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.what);
    const Status s =
        group_norm_backward(c.t[0], c.t[1], c.t[2], c.t[3], c.t[4], c.groups, c.mask, c.t[5], c.t[6], c.t[7]);
    EXPECT_FALSE(s.is_ok());
    EXPECT_THAT(s.message(), HasSubstr(std::string("group_norm_backward: ") + c.needle));
    EXPECT_TRUE(same_outputs(p, before));
  }
  // dx partially over dy (shifted by one element): not the in-place case.
  std::vector<float> shared(2 * 6 * 5 + 1);
  const TensorView dy_s(shared.data(), f32, {2, 6, 5}), dx_s(shared.data() + 1, f32, {2, 6, 5});
  const Status s = group_norm_backward(dy_s, v[1], v[2], v[3], v[4], 3, {true, true, true}, dx_s, v[6], v[7]);
  EXPECT_THAT(s.message(), HasSubstr("dx and dy overlap"));
  // A mask of the wrong length, through the generic entry point.
  ops::Attrs attrs = desc().default_attrs();
  attrs[gn_bwd::kNumGroups].i = 3;
  attrs[gn_bwd::kOutputMask].mask = {true, true};
  EXPECT_THAT(ops::run_prepared("group_norm_backward", gn_bwd::prepare, v.data(), attrs, Context{}).message(),
              HasSubstr("output_mask has 2 entries; expected 3"));
}

}  // namespace
}  // namespace nnops
