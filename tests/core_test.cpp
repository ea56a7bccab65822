// Core: dtype conversions, views, status, thread-count resolution, ISA control.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "nnops/nnops.hpp"
#include "src/core/check.hpp"
#include "src/core/dispatch.hpp"
#include "src/core/parallel.hpp"
#include "src/ops/op_desc.hpp"
#include "tests/test_util.hpp"

namespace nnops {
namespace {

// Every float16 value widens exactly and narrows back to the same bits (NaNs stay NaN).
TEST(DType, HalfRoundTripsAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_bits_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) << h;
      EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(f))));
      continue;
    }
    ASSERT_EQ(float_to_half_bits(f), h) << h;
    // The double path agrees with the float one for representable values.
    EXPECT_EQ(round_to_dtype(f, DType::kFloat16), static_cast<double>(f));
  }
}

TEST(DType, HalfKnownValues) {
  EXPECT_EQ(half_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(float_to_half_bits(65519.0f), 0x7BFF);                          // below the midpoint to 2^16
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);                          // midpoint rounds to even = Inf
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie to even (down)
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie to even (up)
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);             // half of the smallest subnormal: even
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -25)), 0x0002);             // 1.5 subnormal ulps: up to even
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7C00);
}

// Rounding float32 to bfloat16 agrees with the double-precision definition on a broad sweep.
TEST(DType, BFloat16MatchesDoubleRounding) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    const double want = round_to_dtype(f, DType::kBFloat16);
    EXPECT_EQ(static_cast<double>(bf16_bits_to_float(float_to_bf16_bits(f))), want) << f;
    const double want16 = round_to_dtype(f, DType::kFloat16);
    EXPECT_EQ(static_cast<double>(half_bits_to_float(float_to_half_bits(f))), want16) << f;
  }
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DType, UlpAndParse) {
  EXPECT_EQ(ulp_of(1.0, DType::kFloat32), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp_of(1.5, DType::kFloat16), std::ldexp(1.0, -10));
  EXPECT_EQ(ulp_of(0.0, DType::kBFloat16), std::ldexp(1.0, -133));
  EXPECT_EQ(parse_dtype("bf16"), DType::kBFloat16);
  EXPECT_FALSE(parse_dtype("int8").has_value());
  EXPECT_STREQ(dtype_name(DType::kFloat16), "float16");
}

TEST(TensorView, ContiguityAndNumel) {
  float buf[24];
  TensorView v(buf, DType::kFloat32, {2, 3, 4});
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.numel(), 24);
  EXPECT_EQ(v.stride(0), 12);
  EXPECT_EQ(v.shape_string(), "[2, 3, 4]");
  const int64_t shape[2] = {3, 4}, strides[2] = {1, 3};
  EXPECT_FALSE(TensorView::strided(buf, DType::kFloat32, shape, strides, 2).is_contiguous());
  const int64_t huge[3] = {int64_t{1} << 40, int64_t{1} << 40, 4};
  EXPECT_EQ(TensorView::contiguous(buf, DType::kFloat32, huge, 3).numel(), -1);
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_FALSE(TensorView::contiguous(buf, DType::kFloat32, nine, 9).rank_ok());
  TensorView scalar(buf, DType::kFloat32, {});
  EXPECT_EQ(scalar.numel(), 1);
}

TEST(Check, MessagesNameTheArgument) {
  const int64_t shape[2] = {3, 4}, strides[2] = {1, 3}, negative[2] = {4, -1}, broadcast[2] = {0, 1};
  float buf[12];
  int64_t n = 0;
  // Any non-negative strides are accepted (a transposed view here).
  EXPECT_TRUE(detail::check_tensor("op", "x", TensorView::strided(buf, DType::kFloat32, shape, strides, 2), &n));
  EXPECT_EQ(n, 12);
  Status s = detail::check_tensor("op", "x", TensorView::strided(buf + 3, DType::kFloat32, shape, negative, 2), &n);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("op: x has strides [4, -1] for shape [3, 4]; expected non-negative strides"),
            std::string::npos)
      << s.message();
  // A broadcast (stride 0) view is a valid input but not a valid output.
  const TensorView b = TensorView::strided(buf, DType::kFloat32, shape, broadcast, 2);
  EXPECT_TRUE(detail::check_tensor("op", "g", b, &n));
  s = detail::check_output_layout("op", "out", b);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("op: out has strides [0, 1] for shape [3, 4]: some of its elements share memory"),
            std::string::npos)
      << s.message();
  s = detail::check_tensor("op", "dy", TensorView(nullptr, DType::kFloat32, {2}), &n);
  EXPECT_EQ(s.code(), StatusCode::kNullPointer);
  EXPECT_NE(s.message().find("dy"), std::string::npos);
  EXPECT_TRUE(detail::check_tensor("op", "e", TensorView(nullptr, DType::kFloat32, {0, 5}), &n).is_ok());
  EXPECT_EQ(n, 0);
}

TEST(Check, Overlap) {
  float buf[16];
  TensorView a(buf, DType::kFloat32, {8}), b(buf + 7, DType::kFloat32, {8}), c(buf + 8, DType::kFloat32, {8});
  EXPECT_TRUE(detail::overlaps(a, b));
  EXPECT_FALSE(detail::overlaps(a, c));
  EXPECT_FALSE(detail::overlaps(a, TensorView(buf, DType::kFloat32, {0})));
}

TEST(Context, ThreadResolution) {
  EXPECT_EQ(resolve_num_threads(Context{3}), 3);
  setenv("NNOPS_NUM_THREADS", "5", 1);
  EXPECT_EQ(resolve_num_threads(Context{}), 5);
  setenv("NNOPS_NUM_THREADS", "junk", 1);
  EXPECT_GE(resolve_num_threads(Context{}), 1);
  unsetenv("NNOPS_NUM_THREADS");
}

TEST(Parallel, SplitRangeCoversExactlyOnce) {
  for (int64_t total : {0, 1, 7, 100}) {
    for (int parts : {1, 2, 3, 8}) {
      int64_t next = 0;
      for (int p = 0; p < parts; ++p) {
        auto [b, e] = detail::split_range(total, parts, p);
        EXPECT_EQ(b, next);
        EXPECT_GE(e, b);
        next = e;
      }
      EXPECT_EQ(next, total);
    }
  }
}

// The best target the CPU can run, whatever the cap.
std::string best_supported() {
  for (const CpuIsa& isa : compiled_isas())
    if (isa.supported) return isa.name;
  return "";
}

// Back to the cap of NNOPS_MAX_CPU_ISA (none when unset), as the process started.
Status restore_env_cap() {
  const char* env = std::getenv("NNOPS_MAX_CPU_ISA");
  return set_max_isa(env && *env ? env : "native");
}

TEST(Isa, ForceAndCap) {
  const auto isas = testing::runnable_isas();
  ASSERT_FALSE(isas.empty());
  for (const CpuIsa& isa : isas) {
    ASSERT_TRUE(force_isa_for_testing(isa.bits).is_ok());
    EXPECT_EQ(current_isa(), isa.name);
  }
  ASSERT_TRUE(force_isa_for_testing(0).is_ok());
  EXPECT_EQ(current_isa(), isas.front().name);
  // Capping at the worst runnable target dispatches to it; lifting the cap restores the best the CPU has;
  // the cap the process started with (NNOPS_MAX_CPU_ISA) is put back for the tests that follow.
  ASSERT_TRUE(set_max_isa(isas.back().name).is_ok());
  EXPECT_EQ(current_isa(), isas.back().name);
  ASSERT_TRUE(set_max_isa("native").is_ok());
  EXPECT_EQ(current_isa(), best_supported());
  ASSERT_TRUE(restore_env_cap().is_ok());
  EXPECT_EQ(current_isa(), isas.front().name);
  Status bad = set_max_isa("avx9000");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("avx9000"), std::string::npos);
}

// float32_dispatch_index on table indices as x86 numbers them (0 the initializer, 8 AVX3_DL, 9 AVX3, 10 AVX2, 12
// SSSE3, 16 the scalar fallback): only float32 leaves an AVX-512 index, for AVX2's, when the CPU kind asks and no test
// pinned the target; an uninitialized 0 and every target at or below AVX2 stay; a build without the move (avx2 = 0)
// never moves.
TEST(Isa, Float32DispatchIndexMovesOnlyAvx512ToAvx2) {
  constexpr size_t kAvx2 = 10;
  for (size_t chosen : {size_t{0}, size_t{8}, size_t{9}, size_t{10}, size_t{11}, size_t{12}, size_t{16}}) {
    for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (int on = 0; on < 2; ++on) {
        for (int forced = 0; forced < 2; ++forced) {
          SCOPED_TRACE("chosen " + std::to_string(chosen) + " " + dtype_name(d) + " on " + std::to_string(on) +
                       " forced " + std::to_string(forced));
          const bool moves = d == DType::kFloat32 && on && !forced && (chosen == 8 || chosen == 9);
          EXPECT_EQ(detail::float32_dispatch_index(chosen, d, on, forced, kAvx2), moves ? kAvx2 : chosen);
          EXPECT_EQ(detail::float32_dispatch_index(chosen, d, on, forced, 0), chosen);
        }
      }
    }
  }
}

// NNOPS_DYNAMIC_DISPATCH's table entry in this process: the chosen target's, but AVX2's for float32 where the CPU runs
// AVX-512 and float32_on_avx2() holds (AMD Zen 4 with AVX-512, or NNOPS_FLOAT32_AVX2=1), unless a test pinned the
// target.
TEST(Isa, Float32MovesToAvx2OnlyWhereChosen) {
  ASSERT_TRUE(force_isa_for_testing(0).is_ok());
  (void)current_isa();  // the first dispatch chooses the target
  const size_t chosen = hwy::GetChosenTarget().GetIndex();
  auto index_of = [](int64_t target) {  // the scalar targets sit past the dynamic ones, in their own bit
    const int64_t bit =
        HWY_CHOSEN_TARGET_SHIFT(target) != 0 ? HWY_CHOSEN_TARGET_SHIFT(target) : HWY_CHOSEN_TARGET_MASK_SCALAR;
    return hwy::Num0BitsBelowLS1Bit_Nonzero64(static_cast<uint64_t>(bit));
  };
  for (DType d : {DType::kFloat16, DType::kBFloat16}) EXPECT_EQ(detail::dispatch_index(d), chosen);
  const bool moves =
      detail::kAvx2DispatchIndex != 0 && detail::float32_on_avx2() && current_isa().rfind("avx3", 0) == 0;
  EXPECT_EQ(detail::dispatch_index(DType::kFloat32), moves ? index_of(HWY_AVX2) : chosen);
  for (const CpuIsa& isa : testing::runnable_isas()) {
    SCOPED_TRACE(isa.name);
    ASSERT_TRUE(force_isa_for_testing(isa.bits).is_ok());
    EXPECT_EQ(detail::dispatch_index(DType::kFloat32), index_of(isa.bits));  // pinned: every dtype on it
    EXPECT_EQ(detail::dispatch_index(DType::kFloat16), index_of(isa.bits));
  }
  ASSERT_TRUE(force_isa_for_testing(0).is_ok());
}

// Regression, found by the aarch64 suite under qemu with 128- and 256-bit SVE: Highway 1.0.3's
// SupportedTargets() resets the dispatch choice without the targets that need one vector length (SVE2_128,
// SVE_256), which it then reports as supported. Listing the targets before the first kernel call (as
// `nnops info` does) made dispatch pick sve2 instead of sve2_128 or sve_256.
TEST(Isa, ListingTheTargetsKeepsTheBestOne) {
  ASSERT_TRUE(force_isa_for_testing(0).is_ok());  // normal dispatch
  const auto isas = testing::runnable_isas();     // compiled_isas(), which asks Highway what is supported
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(current_isa(), isas.front().name);
  ASSERT_TRUE(set_max_isa("native").is_ok());
  (void)compiled_isas();
  EXPECT_EQ(current_isa(), best_supported());
  ASSERT_TRUE(restore_env_cap().is_ok());
}

// ops::run_prepared's workspaces: the calling thread keeps one small buffer from call to call (no allocation per
// small call), a call made from inside another call's run gets a buffer of its own, another thread has its own, and a
// workspace beyond the kept size is still served.
uint64_t g_ws_bytes = 0;
std::vector<unsigned char*> g_ws_seen;

Status inner_prepare(const TensorView*, const ops::Attrs&, const Context&, ops::Prepared* p) {
  p->workspace_bytes = g_ws_bytes;
  p->run = [](void* w) {
    g_ws_seen.push_back(static_cast<unsigned char*>(w));
    std::memset(w, 0x22, g_ws_bytes);
  };
  return Status::ok();
}

Status outer_prepare(const TensorView*, const ops::Attrs&, const Context&, ops::Prepared* p) {
  p->workspace_bytes = g_ws_bytes;
  p->run = [](void* w) {
    auto* b = static_cast<unsigned char*>(w);
    std::memset(b, 0x11, g_ws_bytes);
    g_ws_seen.push_back(b);
    EXPECT_TRUE(ops::run_prepared("inner", inner_prepare, nullptr, {}, Context{}).is_ok());
    uint64_t changed = 0;
    for (uint64_t i = 0; i < g_ws_bytes; ++i) changed += b[i] != 0x11;
    EXPECT_EQ(changed, 0u) << "the nested call wrote into the outer call's workspace";
  };
  return Status::ok();
}

TEST(RunPrepared, ThreadKeepsItsSmallWorkspaceAndNestedCallsGetTheirOwn) {
  for (uint64_t bytes : {uint64_t{100}, uint64_t{4096}, uint64_t{300000}, uint64_t{3} << 20}) {
    SCOPED_TRACE("workspace bytes " + std::to_string(bytes));
    g_ws_bytes = bytes;
    g_ws_seen.clear();
    ASSERT_TRUE(ops::run_prepared("inner", inner_prepare, nullptr, {}, Context{}).is_ok());
    // A block of the same size held between the calls: a workspace freed after the first call would be handed out
    // here, and the second call would get another one.
    void* held = std::malloc(bytes);
    ASSERT_TRUE(ops::run_prepared("inner", inner_prepare, nullptr, {}, Context{}).is_ok());
    std::free(held);
    ASSERT_EQ(g_ws_seen.size(), 2u);
    for (unsigned char* w : g_ws_seen) EXPECT_EQ(reinterpret_cast<uintptr_t>(w) % 64, 0u);
    if (bytes <= (uint64_t{1} << 20)) {
      EXPECT_EQ(g_ws_seen[0], g_ws_seen[1]) << "a small workspace is kept";
    }
    g_ws_seen.clear();
    ASSERT_TRUE(ops::run_prepared("outer", outer_prepare, nullptr, {}, Context{}).is_ok());
    ASSERT_EQ(g_ws_seen.size(), 2u);
    EXPECT_NE(g_ws_seen[0], g_ws_seen[1]);
    ASSERT_TRUE(ops::run_prepared("inner", inner_prepare, nullptr, {}, Context{}).is_ok());
    unsigned char* const mine = g_ws_seen.back();
    std::thread other([] { EXPECT_TRUE(ops::run_prepared("inner", inner_prepare, nullptr, {}, Context{}).is_ok()); });
    other.join();
    if (bytes <= (uint64_t{1} << 20)) {
      EXPECT_NE(g_ws_seen.back(), mine) << "each thread keeps its own";
    }
  }
}

}  // namespace
}  // namespace nnops
