// The SIMD float16/bfloat16 conversions agree bit-for-bit with the scalar definitions on every target.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/simd_convert_test.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/core/simd_convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {

// Widens n storage values to float and narrows them again, in full vectors plus one partial tail.
template <typename T>
void RoundTrip(const uint16_t* in, float* wide, uint16_t* out, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const T* src = reinterpret_cast<const T*>(in);
  T* dst = reinterpret_cast<T*>(out);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(LoadF32(df, src + i), df, wide + i);
  if (i < n) StoreF32N(df, LoadF32N(df, src + i, n - i), wide + i, n - i);
  for (i = 0; i + N <= n; i += N) StoreF32(df, hn::LoadU(df, wide + i), dst + i);
  if (i < n) StoreF32N(df, LoadF32N(df, wide + i, n - i), dst + i, n - i);
}
void HalfRoundTrip(const uint16_t* in, float* wide, uint16_t* out, size_t n) {
  RoundTrip<hwy::float16_t>(in, wide, out, n);
}
// Narrows floats to storage type T.
template <typename T>
void Narrow(const float* in, uint16_t* out, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  T* dst = reinterpret_cast<T*>(out);
  for (; i + N <= n; i += N) StoreF32(df, hn::LoadU(df, in + i), dst + i);
  if (i < n) StoreF32N(df, LoadF32N(df, in + i, n - i), dst + i, n - i);
}
void NarrowHalf(const float* in, uint16_t* out, size_t n) { Narrow<hwy::float16_t>(in, out, n); }
void NarrowBf16(const float* in, uint16_t* out, size_t n) { Narrow<hwy::bfloat16_t>(in, out, n); }

}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>

#include <cmath>

#include "nnops/dtype.hpp"
#include "tests/test_util.hpp"

namespace nnops {
HWY_EXPORT(HalfRoundTrip);
HWY_EXPORT(NarrowHalf);
HWY_EXPORT(NarrowBf16);
namespace {

TEST(SimdConvert, HalfAllPatternsEveryTarget) {
  std::vector<uint16_t> in(65536 + 3), out(in.size());
  std::vector<float> wide(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint16_t>(i);
  testing::for_each_isa([&](const std::string&) {
    HWY_DYNAMIC_DISPATCH(HalfRoundTrip)(in.data(), wide.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      const float want = half_bits_to_float(in[i]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(wide[i])) << i;
        ASSERT_TRUE(std::isnan(half_bits_to_float(out[i]))) << i;
        continue;
      }
      uint32_t a, b;
      std::memcpy(&a, &wide[i], 4);
      std::memcpy(&b, &want, 4);
      ASSERT_EQ(a, b) << "widen " << i;
      ASSERT_EQ(out[i], in[i]) << "narrow " << i;
    }
  });
}

TEST(SimdConvert, NarrowingMatchesScalarEveryTarget) {
  std::mt19937_64 rng(3);
  std::vector<float> in;
  // Random bit patterns cover every exponent; the hand-picked values hit ties, overflow and subnormals.
  for (int i = 0; i < 100000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &bits, 4);
    in.push_back(f);
  }
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e-8f, 2.98023224e-8f, 5.96046448e-8f, 1.0009765625f,
                  1.00048828125f, 3.3895314e38f, -3.4028235e38f, INFINITY, -INFINITY, NAN})
    in.push_back(f);
  std::vector<uint16_t> out(in.size());
  testing::for_each_isa([&](const std::string&) {
    HWY_DYNAMIC_DISPATCH(NarrowHalf)(in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (std::isnan(in[i])) {
        ASSERT_TRUE(std::isnan(half_bits_to_float(out[i])));
        continue;
      }
      ASSERT_EQ(out[i], float_to_half_bits(in[i])) << "half " << in[i];
    }
    HWY_DYNAMIC_DISPATCH(NarrowBf16)(in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (std::isnan(in[i])) {
        ASSERT_TRUE(std::isnan(bf16_bits_to_float(out[i])));
        continue;
      }
      ASSERT_EQ(out[i], float_to_bf16_bits(in[i])) << "bf16 " << in[i];
    }
  });
}

}  // namespace
}  // namespace nnops
#endif  // HWY_ONCE
