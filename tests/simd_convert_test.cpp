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

// LoadF32N of the n elements at src into all the lanes of one vector (stored to lanes), and StoreF32N of that vector
// to dst, for storage type `dtype` (0 float32, 1 float16, 2 bfloat16) and vectors of tag `tag` (0 ScalableTag<float>,
// then CappedTag<float, 8, 4, 2>: the partial vectors of the canonical sums' tails, CanonF, are among them). Returns
// Lanes of the tag.
template <class DF, typename T>
void PartialMoves(DF df, const void* src, float* lanes, void* dst, size_t n) {
  const auto v = LoadF32N(df, static_cast<const T*>(src), n);
  hn::StoreU(v, df, lanes);
  StoreF32N(df, v, static_cast<T*>(dst), n);
}
template <class DF>
size_t PartialMovesOfTag(DF df, int dtype, const void* src, float* lanes, void* dst, size_t n) {
  if (dtype == 0) PartialMoves<DF, float>(df, src, lanes, dst, n);
  if (dtype == 1) PartialMoves<DF, hwy::float16_t>(df, src, lanes, dst, n);
  if (dtype == 2) PartialMoves<DF, hwy::bfloat16_t>(df, src, lanes, dst, n);
  return hn::Lanes(df);
}
size_t PartialMovesOf(int tag, int dtype, const void* src, float* lanes, void* dst, size_t n) {
  switch (tag) {
    case 0:
      return PartialMovesOfTag(hn::ScalableTag<float>(), dtype, src, lanes, dst, n);
    case 1:
      return PartialMovesOfTag(hn::CappedTag<float, 8>(), dtype, src, lanes, dst, n);
    case 2:
      return PartialMovesOfTag(hn::CappedTag<float, 4>(), dtype, src, lanes, dst, n);
    default:
      return PartialMovesOfTag(hn::CappedTag<float, 2>(), dtype, src, lanes, dst, n);
  }
}
}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "nnops/dtype.hpp"
#include "tests/test_util.hpp"

namespace nnops {
HWY_EXPORT(HalfRoundTrip);
HWY_EXPORT(NarrowHalf);
HWY_EXPORT(NarrowBf16);
HWY_EXPORT(PartialMovesOf);
namespace {

// Two pages, the second inaccessible: n elements placed at the end of the first can be read or written only within
// [page_end - n, page_end), so a tail move that touches a lane past its n faults.
class GuardedPage {
 public:
  GuardedPage() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    base_ = static_cast<unsigned char*>(p);
    EXPECT_EQ(mprotect(base_ + page_, page_, PROT_NONE), 0);
  }
  ~GuardedPage() { munmap(base_, 2 * page_); }
  unsigned char* end() const { return base_ + page_; }
  unsigned char* begin() const { return base_; }

 private:
  size_t page_ = 0;
  unsigned char* base_ = nullptr;
};

// The tails of every elementwise pass and canonical sum: the first n lanes loaded (the rest +0.0) and stored, nothing
// read or written past them (a guard page after the last element) or before them (sentinel bytes), on every target,
// for whole and partial vectors (the canonical sums' tails are half vectors on AVX2 and AVX-512) and for every n below
// a vector and for a whole one (MapHead moves whole vectors through them too), with the element at page end (masked
// moves on AVX-512 and SVE, AVX2's loads; AVX2's stores in pieces of halving widths; a buffer elsewhere).
TEST(SimdConvert, PartialVectorsTouchOnlyTheirLanesEveryTarget) {
  GuardedPage in, out;
  std::vector<float> lanes(64);  // the most float lanes of any target (2048-bit SVE)
  testing::for_each_isa([&](const std::string& isa) {
    for (int tag = 0; tag < 4; ++tag) {
      for (int dtype = 0; dtype < 3; ++dtype) {
        const size_t size = dtype == 0 ? 4 : 2;
        const size_t lanes_n = HWY_DYNAMIC_DISPATCH(PartialMovesOf)(tag, dtype, in.end(), lanes.data(), out.end(), 0);
        for (size_t n = 1; n <= lanes_n; ++n) {
          const std::string where =
              isa + " tag " + std::to_string(tag) + " dtype " + std::to_string(dtype) + " n " + std::to_string(n);
          unsigned char* src = in.end() - n * size;
          unsigned char* dst = out.end() - n * size;
          std::vector<float> want(n);
          for (size_t k = 0; k < n; ++k) {
            want[k] = static_cast<float>(k + 1) * (k % 2 ? -0.75f : 1.5f);  // exact in every storage type
            if (dtype == 0) std::memcpy(src + 4 * k, &want[k], 4);
            const uint16_t bits = dtype == 1 ? float_to_half_bits(want[k]) : float_to_bf16_bits(want[k]);
            if (dtype != 0) std::memcpy(src + 2 * k, &bits, 2);
          }
          std::memset(out.begin(), 0xA5, static_cast<size_t>(out.end() - out.begin()));
          std::fill(lanes.begin(), lanes.end(), -1.0f);
          HWY_DYNAMIC_DISPATCH(PartialMovesOf)(tag, dtype, src, lanes.data(), dst, n);
          for (size_t k = 0; k < lanes_n; ++k) {
            const float expect = k < n ? want[k] : 0.0f;
            uint32_t a, b;
            std::memcpy(&a, &lanes[k], 4);
            std::memcpy(&b, &expect, 4);
            ASSERT_EQ(a, b) << where << " lane " << k;
          }
          ASSERT_EQ(std::memcmp(dst, src, n * size), 0) << where;
          for (const unsigned char* q = out.begin(); q < dst; ++q) {
            ASSERT_EQ(*q, 0xA5) << where << ": wrote " << (dst - q) << " bytes early";
          }
        }
      }
    }
  });
}

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
