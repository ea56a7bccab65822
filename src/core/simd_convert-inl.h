// Per-target helpers: load float32/float16/bfloat16 storage as float32 vectors and store back with
// round-to-nearest-even. Include after hwy/highway.h inside a HWY_TARGET_INCLUDE'd file.
//
// NB: Highway 1.0.3 (Debian 12) truncates in DemoteTo(bfloat16) on every target, and its float16
// conversions without F16C (SSSE3, SSE4, EMU128) truncate and mishandle Inf/NaN. We therefore use the
// hardware conversion only where it is exact (F16C on AVX2/AVX-512) and exact integer sequences
// elsewhere. simd_convert_test checks all 65536 float16 patterns and a float32 sweep on every target.

// Per-target include guard.
#if defined(NNOPS_CORE_SIMD_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NNOPS_CORE_SIMD_CONVERT_INL_H_
#undef NNOPS_CORE_SIMD_CONVERT_INL_H_
#else
#define NNOPS_CORE_SIMD_CONVERT_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "hwy/highway.h"

// Lambdas handed to the maps below (and to row_map-inl.h's pieces) are forced inline where they are written with it.
#ifndef NNOPS_LAMBDA_INLINE
#define NNOPS_LAMBDA_INLINE __attribute__((always_inline))
#endif

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef NNOPS_NATIVE_F16
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define NNOPS_NATIVE_F16 1
#else
#define NNOPS_NATIVE_F16 0
#endif

// Upper bound of float32 lanes in one vector of any target (for tail buffers).
constexpr size_t kMaxF32Lanes = HWY_MAX_BYTES / sizeof(float);

// ---- loads -----------------------------------------------------------------------------------------

template <class DF>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const float* HWY_RESTRICT p) {
  return hn::LoadU(df, p);
}

// The float32 values of a vector of half-type storage bits (Lanes(df) uint16 lanes): LoadF32's widening, also
// under the masked loads of LoadF32N.
template <class DF>
HWY_INLINE hn::Vec<DF> WidenBits(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> h16, const hwy::float16_t*) {
#if NNOPS_NATIVE_F16
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::BitCast(dh, h16));
#else
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto h = hn::PromoteTo(du, h16);
  // Exact widening: move exponent and mantissa into place and rebias; Inf/NaN get the float32 maximum
  // exponent, zero/subnormal inputs are renormalised by one float subtraction (exact).
  const auto o = hn::ShiftLeft<13>(hn::And(h, hn::Set(du, 0x7FFFu)));
  const auto exp = hn::And(o, hn::Set(du, 0x0F800000u));
  const auto normal = hn::Add(o, hn::Set(du, 112u << 23));
  const auto infnan = hn::Add(normal, hn::Set(du, 112u << 23));
  const auto sub = hn::BitCast(
      du, hn::Sub(hn::BitCast(df, hn::Add(normal, hn::Set(du, 1u << 23))), hn::BitCast(df, hn::Set(du, 113u << 23))));
  const auto is_infnan = hn::RebindMask(du, hn::Eq(hn::BitCast(di, exp), hn::Set(di, 0x0F800000)));
  const auto is_sub = hn::RebindMask(du, hn::Eq(hn::BitCast(di, exp), hn::Zero(di)));
  auto bits = hn::IfThenElse(is_infnan, infnan, hn::IfThenElse(is_sub, sub, normal));
  bits = hn::Or(bits, hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u))));
  return hn::BitCast(df, bits);
#endif
}

template <class DF>
HWY_INLINE hn::Vec<DF> WidenBits(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> h16, const hwy::bfloat16_t*) {
  const hn::RebindToUnsigned<DF> du;
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, h16)));
}

template <class DF, typename T>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const T* HWY_RESTRICT p) {
  static_assert(std::is_same_v<T, hwy::float16_t> || std::is_same_v<T, hwy::bfloat16_t>, "a half type");
  const hn::Rebind<uint16_t, DF> du16;
  return WidenBits(df, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)), p);
}

// Two float32 vectors of the 2 Lanes(df) elements from p: *lo = p[0, N), *hi = p[N, 2 N), as two LoadF32 give. A
// bfloat16 pair whose bits fill one 128-bit block (AVX2's four-lane halves of the canonical sums) is one load
// widened by interleaving zeros below each element, one operation a vector instead of PromoteTo's two (zero-extend,
// shift): on AMD Zen 2 the row statistics' loop 14.7 -> 12.1 cycles per 16 elements, GroupNormBackward's sums 19.3
// -> 15.6. Interleaving works within 128-bit blocks, hence that condition; elsewhere it is the two LoadF32.
template <class DF, typename T>
HWY_INLINE void LoadF32Pair(DF df, const T* HWY_RESTRICT p, hn::Vec<DF>* lo, hn::Vec<DF>* hi) {
#if !HWY_HAVE_SCALABLE && HWY_TARGET != HWY_SCALAR
  if constexpr (std::is_same_v<T, hwy::bfloat16_t> && hn::MaxLanes(df) * 4 == 16) {
    const hn::Twice<hn::Rebind<uint16_t, DF>> d16;
    const hn::RebindToUnsigned<DF> du;
    const auto bits = hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p));
    const auto zero = hn::Zero(d16);
    *lo = hn::BitCast(df, hn::ZipLower(du, zero, bits));
    *hi = hn::BitCast(df, hn::ZipUpper(du, zero, bits));
    return;
  }
#endif
  *lo = LoadF32(df, p);
  *hi = LoadF32(df, p + hn::Lanes(df));
}

// ---- stores ----------------------------------------------------------------------------------------

template <class DF>
HWY_INLINE void StoreF32(DF df, hn::Vec<DF> v, float* HWY_RESTRICT p) {
  hn::StoreU(v, df, p);
}

// float32 -> storage bits of a half type, round-to-nearest-even.
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> ToStorageBits(DF df, hn::Vec<DF> v, const hwy::float16_t*) {
  const hn::Rebind<uint16_t, DF> du16;
#if NNOPS_NATIVE_F16
  const hn::Rebind<hwy::float16_t, DF> dh;
  (void)df;
  return hn::BitCast(du16, hn::DemoteTo(dh, v));
#else
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::BitCast(du, v);
  const auto sign = hn::And(bits, hn::Set(du, 0x80000000u));
  const auto x = hn::Xor(bits, sign);  // |v|, as integer; < 2^31 so signed compares are safe
  const auto xi = hn::BitCast(di, x);
  // NaN keeps its top payload bits and becomes quiet; |v| >= 2^16 overflows to Inf.
  const auto nan = hn::Or(hn::Set(du, 0x7E00u), hn::And(hn::ShiftRight<13>(x), hn::Set(du, 0x3FFu)));
  const auto big = hn::IfThenElse(hn::RebindMask(du, hn::Gt(xi, hn::Set(di, 0x7F800000))), nan, hn::Set(du, 0x7C00u));
  // |v| < 2^-14: adding 0.5f rounds to the f16 subnormal spacing 2^-24 with ties-to-even.
  const auto half = hn::Set(df, 0.5f);
  const auto sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, x), half)), hn::BitCast(du, half));
  // Normal range: rebias and round half to even on bit 13.
  const auto odd = hn::And(hn::ShiftRight<13>(x), hn::Set(du, 1u));
  const auto norm = hn::ShiftRight<13>(hn::Add(hn::Add(x, hn::Set(du, 0xC8000FFFu)), odd));
  auto o = hn::IfThenElse(hn::RebindMask(du, hn::Lt(xi, hn::Set(di, 0x38800000))), sub, norm);
  o = hn::IfThenElse(hn::RebindMask(du, hn::Gt(xi, hn::Set(di, 0x477FFFFF))), big, o);
  o = hn::Or(o, hn::ShiftRight<16>(sign));
  return hn::DemoteTo(du16, hn::BitCast(di, o));
#endif
}

// float32 -> bfloat16 round-to-nearest-even (NaN made quiet), the result in the upper half of each uint32
// lane.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> Bf16RoundedBits(DF /*df*/, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::BitCast(du, v);
  const auto rounded = hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFu)), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u)));
  return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), hn::Or(bits, hn::Set(du, 0x00400000u)), rounded);
}

// Bf16RoundedBits without its NaN fix-up (3 operations fewer per vector), for values whose NaNs all have
// zero low 16 bits: NaNs widened from bfloat16, the default NaN, float32 NaN constants with zero low halves
// (e.g. std::numeric_limits<float>::quiet_NaN()), and any NaN arithmetic makes from these (it only sets the
// quiet bit, bit 22). Rounding adds at most 0x8000 to the bits, which then cannot carry out of such a NaN's
// low half, so the upper half stays that NaN. Inf and overflow round as in Bf16RoundedBits.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> Bf16RoundedBitsShortNaN(DF /*df*/, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::BitCast(du, v);
  return hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFu)), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u)));
}

template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> ToStorageBits(DF df, hn::Vec<DF> v, const hwy::bfloat16_t*) {
  const hn::Rebind<uint16_t, DF> du16;
  const hn::RebindToSigned<DF> di;
  return hn::DemoteTo(du16, hn::BitCast(di, hn::ShiftRight<16>(Bf16RoundedBits(df, v))));
}

template <class DF, typename T>
HWY_INLINE void StoreF32(DF df, hn::Vec<DF> v, T* HWY_RESTRICT p) {
  const hn::Rebind<uint16_t, DF> du16;
  hn::StoreU(ToStorageBits(df, v, p), du16, reinterpret_cast<uint16_t*>(p));
}

// Non-temporal store (bypasses the caches: for outputs far larger than the last-level cache, it saves
// the read-for-ownership of every destination line). `p` must be aligned to kStreamAlign bytes. Where
// the target's half-type vector is narrower than 16 bytes (SSE4 and older with 4 float lanes), Highway's
// Stream would write 16 bytes, so those fall back to an ordinary store.
constexpr size_t kStreamAlign = 64;

// The elements of a row of n from `out` that come before its first kStreamAlign boundary, where the row is `stream`ed
// (they are written with ordinary stores, the rest aligned); 0 otherwise.
template <typename T>
HWY_INLINE size_t StreamHead(const T* out, size_t n, bool stream) {
  if (!stream) return 0;
  const size_t mis = (reinterpret_cast<uintptr_t>(out) % kStreamAlign) / sizeof(T);
  return std::min(n, mis ? (kStreamAlign / sizeof(T) - mis) : 0);
}

// Where a streamed stretch [i, n) of a row from `out` stops streaming: at the last kStreamAlign boundary, so that
// non-temporal stores only ever write whole lines; the elements after it take ordinary stores. A line written partly
// by streamed and partly by ordinary stores (a row's last vector and its tail, or the next row's head) cost AMD Zen 2
// an order of magnitude: rows of 60 float32 written at 2.5 ns an element against 0.16 with whole lines only (a loop
// of plain intrinsics, 2560 rows); GroupNorm [2, 1280, 60] float32 streamed, one thread, 490-525 -> 122-129 us a call
// (with StorePieces), 106 cached.
template <typename T>
HWY_INLINE size_t StreamEnd(const T* out, size_t i, size_t n) {
  const uintptr_t end = reinterpret_cast<uintptr_t>(out + n) / kStreamAlign * kStreamAlign;
  const uintptr_t at = reinterpret_cast<uintptr_t>(out + i);
  return end <= at ? i : i + (end - at) / sizeof(T);
}

template <class DF>
HWY_INLINE void StreamF32(DF df, hn::Vec<DF> v, float* HWY_RESTRICT p) {
  hn::Stream(v, df, p);
}

template <class DF, typename T>
HWY_INLINE void StreamF32(DF df, hn::Vec<DF> v, T* HWY_RESTRICT p) {
  const hn::Rebind<uint16_t, DF> du16;
  if (HWY_TARGET == HWY_EMU128 || HWY_TARGET == HWY_SCALAR || hn::Lanes(df) * sizeof(uint16_t) < 16) {
    hn::StoreU(ToStorageBits(df, v, p), du16, reinterpret_cast<uint16_t*>(p));
  } else {
    hn::Stream(ToStorageBits(df, v, p), du16, reinterpret_cast<uint16_t*>(p));
  }
}

// Software prefetch for a loop that streams p: the lines kStreamPrefetchBytes beyond [p, p + bytes), into L1,
// called once per step of `bytes` (detail::software_prefetch and detail::overlap_prefetched_passes say where it
// pays). 4 KiB: on AMD Zen 5 the pipelined GroupNorm family from memory gains with it and not with 2 KiB (GroupNorm
// [103, 320, 64, 64] float32, one thread, ratio 0.69-0.76 at 2 KiB, 0.81-0.93 at 4 KiB; docs/performance.md, "Zen 5,
// 2026-12-04"); on the Intel Xeon 1, 2 and 4 KiB were within 0.02 of each other for PowerSign and within the
// noise for the pipelined statistics pass.
constexpr size_t kStreamPrefetchBytes = 4096;
HWY_INLINE void PrefetchStream(const void* p, size_t bytes) {
  const unsigned char* q = static_cast<const unsigned char*>(p) + kStreamPrefetchBytes;
  for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(q + b, 0, 3);
}

// out[k..k + N) = f(k) for whole vectors of N = Lanes(df) elements from i, two vectors a step (an elementwise
// pass is a few operations per vector, and the loop's control was a third of them). Both vectors are computed
// before either is stored, so out may be an input of f (in place). Returns where it stopped; the caller
// finishes the tail. `stream`: non-temporal stores up to StreamEnd, out aligned to kStreamAlign at i.
template <class DF, typename T, class F>
HWY_INLINE size_t F32Map(DF df, T* out, size_t i, size_t n, bool stream, const F& f) {
  const size_t N = hn::Lanes(df);
  if (stream) {
    // Where a step of two vectors is whole lines (float32 on AVX2, float32 and the half types on AVX-512), every step
    // from the aligned i is, and only single vectors need ordinary stores; StreamEnd's bound elsewhere. (Computing
    // it per call cost the pipelined row-major GroupNorm 5%: [2, 1280, 8, 8] float32, one thread, on Zen 2.)
    const size_t e = 2 * N * sizeof(T) % kStreamAlign == 0 ? n : StreamEnd(out, i, n);
    for (; i + 2 * N <= e; i += 2 * N) {
      const auto v0 = f(i), v1 = f(i + N);
      StreamF32(df, v0, out + i);
      StreamF32(df, v1, out + i + N);
    }
    if (N * sizeof(T) % kStreamAlign == 0) {
      for (; i + N <= e; i += N) StreamF32(df, f(i), out + i);
    }
    for (; i + N <= n; i += N) StoreF32(df, f(i), out + i);  // what is left of the last line: less than a line
  } else {
    for (; i + 2 * N <= n; i += 2 * N) {
      const auto v0 = f(i), v1 = f(i + N);
      StoreF32(df, v0, out + i);
      StoreF32(df, v1, out + i + N);
    }
    for (; i + N <= n; i += N) StoreF32(df, f(i), out + i);
  }
  return i;
}

// ---- bfloat16 as uint32 pairs -----------------------------------------------------------------------
// A full vector of bfloat16 bits viewed as uint32 lanes holds element 2j in the low half of lane j and
// element 2j + 1 in the high half. Kernels whose arithmetic is elementwise widen the even and the odd
// elements separately (one integer operation per float vector instead of a widening and a shift) and join
// the rounded results back with one blend.
#if HWY_TARGET != HWY_SCALAR
template <class DU>
HWY_INLINE hn::Vec<hn::RebindToFloat<DU>> Bf16Even(DU /*du*/, hn::Vec<DU> v) {
  return hn::BitCast(hn::RebindToFloat<DU>(), hn::ShiftLeft<16>(v));
}
template <class DU>
HWY_INLINE hn::Vec<hn::RebindToFloat<DU>> Bf16Odd(DU du, hn::Vec<DU> v) {
  return hn::BitCast(hn::RebindToFloat<DU>(), hn::And(v, hn::Set(du, 0xFFFF0000u)));
}
// The bfloat16 bits in the upper halves of `odd` and `even` (uint32 lanes), back in element order.
template <class D16, class VU>
HWY_INLINE hn::Vec<D16> Bf16JoinHigh(D16 d16, VU odd, VU even) {
  return hn::OddEven(hn::BitCast(d16, odd), hn::BitCast(d16, hn::ShiftRight<16>(even)));
}

// out[k] = f(in0[k], in1[k], ...) for k in [i, n), in whole bfloat16 vectors (2 Lanes(df) elements each), as
// even/odd pairs: one integer operation widens each float vector and one blend joins the results, instead of a
// widening, a shift and a narrowing per vector. Returns where it stopped; the caller finishes the tail. g(k, v...)
// takes one float vector per input and returns one, elementwise; k says which elements they are, for operations
// whose constants differ from column to column: the pair's even elements come with k = its first index and its odd
// ones with k + Lanes(df), so constants put in Bf16PairLayout's order are loaded from index k. Every input is read
// before out is written, so out may be one of them. Rounds without the NaN fix-up (Bf16RoundedBitsShortNaN), so
// every NaN that g returns must have zero low 16 bits (NaNs widened from bfloat16, the default NaN, NaN constants made
// canonical). `stream`: non-temporal stores up to StreamEnd, out aligned to kStreamAlign at i.
template <class DF, class G, class... In>
HWY_INLINE size_t Bf16PairMapAt(DF df, hwy::bfloat16_t* out, size_t i, size_t n, bool stream, const G& g,
                                const In*... in) {
  static_assert((std::is_same_v<In, hwy::bfloat16_t> && ...), "bfloat16 inputs");
  const hn::RebindToUnsigned<DF> du;
  const hn::Repartition<uint16_t, DF> du16;
  const size_t N = hn::Lanes(df), N16 = hn::Lanes(du16);
  auto bits = [&](const hwy::bfloat16_t* p)
                  HWY_ATTR { return hn::BitCast(du, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p))); };
  auto pair = [&](size_t k) HWY_ATTR {
    const auto even = Bf16RoundedBitsShortNaN(df, g(k, Bf16Even(du, bits(in + k))...));
    const auto odd = Bf16RoundedBitsShortNaN(df, g(k + N, Bf16Odd(du, bits(in + k))...));
    return Bf16JoinHigh(du16, odd, even);
  };
  uint16_t* o = reinterpret_cast<uint16_t*>(out);
  if (stream && HWY_TARGET != HWY_EMU128) {
    const size_t e = StreamEnd(out, i, n);
    for (; i + N16 <= e; i += N16) hn::Stream(pair(i), du16, o + i);
  }
  for (; i + N16 <= n; i += N16) hn::StoreU(pair(i), du16, o + i);
  return i;
}

// Bf16PairMapAt for f(v...), the same at every element.
template <class DF, class F, class... In>
HWY_INLINE size_t Bf16PairMap(DF df, hwy::bfloat16_t* out, size_t i, size_t n, bool stream, const F& f,
                              const In*... in) {
  return Bf16PairMapAt(
      df, out, i, n, stream, [&](size_t, auto... v) HWY_ATTR NNOPS_LAMBDA_INLINE { return f(v...); }, in...);
}

// Per-column constants k[0, n) put in the order Bf16PairMapAt loads them for pairs that start at `from`: each whole
// block of 2 Lanes(df) columns from there holds its even columns, then its odd ones (columns before `from` and after
// the last whole block stay where they are).
template <class DF>
HWY_INLINE void Bf16PairLayout(DF df, float* k, size_t from, size_t n) {
  const size_t N = hn::Lanes(df);
  float t[2 * kMaxF32Lanes];
  for (size_t c = from; c + 2 * N <= n; c += 2 * N) {
    for (size_t j = 0; j < 2 * N; ++j) t[j] = k[c + j];
    for (size_t j = 0; j < N; ++j) k[c + j] = t[2 * j], k[c + N + j] = t[2 * j + 1];
  }
}
#endif

// A NaN float32 constant as the canonical quiet NaN (zero low 16 bits: see Bf16PairMap); others unchanged.
HWY_INLINE float CanonicalNaN(float f) { return f != f ? std::numeric_limits<float>::quiet_NaN() : f; }

// ---- partial vectors (tails) -----------------------------------------------------------------------
// The first n lanes of a vector from or to memory, touching nothing past them; padding lanes read as +0.0 in every
// storage type.
//
// NB: why masked moves where the target has them. A row's tail through a zero-filled buffer is a variable-length
// memcpy in and a vector load of what it just stored (a store-forwarding stall): ~75-150 cycles a row on the Intel
// Xeon VM, more than the rest of a row of 4 or 12 elements (GroupNorm [1, 64, 4] float32 took twice [1, 64, 16]).
// Native masked loads and stores (AVX-512 for every lane size, AVX2 for 32-bit lanes, SVE's predicated ld1/st1)
// neither fault on nor write to the lanes outside the mask, so they replace the buffer there; AVX2 moves a half
// type's pairs of elements as 32-bit lanes and its odd last element alone, and stores in pieces (StorePieces). Highway
// emulates masked moves elsewhere with a whole-vector load or store, which could read or write past the row: those
// targets keep the buffer.
enum class TailMoves { kBuffer, kMasked, kMaskedPairs };
template <typename T>
constexpr TailMoves kTailMoves =
#if HWY_ARCH_X86
    HWY_TARGET <= HWY_AVX3   ? TailMoves::kMasked
    : HWY_TARGET == HWY_AVX2 ? (sizeof(T) == 4 ? TailMoves::kMasked : TailMoves::kMaskedPairs)
                             : TailMoves::kBuffer;
#elif HWY_TARGET == HWY_SVE || HWY_TARGET == HWY_SVE2 || HWY_TARGET == HWY_SVE_256 || HWY_TARGET == HWY_SVE2_128
    TailMoves::kMasked;
#else
    TailMoves::kBuffer;
#endif

// The first k lanes of a vector of tag d from or to p, through the target's masked moves (where kTailMoves says they
// are native). On AVX2 a load narrower than 16 bytes is made on its whole 128-bit register with the mask built
// there: Highway 1.0.3's FirstN of such a partial vector leaves the lanes past it set (its Iota loads them as 0, and
// 0 < k), and vpmaskmov would read them (ASan caught the read on a bfloat16 row tail). AVX2's stores go in pieces
// (StorePieces).
template <class D>
HWY_INLINE hn::Vec<D> LoadFirst(D d, const hn::TFromD<D>* HWY_RESTRICT p, size_t k) {
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
  if constexpr (hn::MaxLanes(D()) * sizeof(hn::TFromD<D>) < 16) {
    const hn::Full128<hn::TFromD<D>> dw;
    return hn::Vec<D>{hn::MaskedLoad(hn::FirstN(dw, k), dw, p).raw};
  }
#endif
  return hn::MaskedLoad(hn::FirstN(d, k), d, p);
}

// The x86 targets below AVX-512 with vectors (AVX2, where StoreFirst is used; SSE4 and SSSE3 move tails through a
// buffer). Evaluated per target pass (HWY_TARGET changes from one to the next); fixed-size vectors only (MaxLanes is
// exact there, and only an upper bound on SVE).
#define NNOPS_STORE_PIECES \
  (HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128)
#if NNOPS_STORE_PIECES
// The first k lanes of v to p as at most log2(lanes) + 1 ordinary stores of halving widths (the whole vector, its lower
// half, then the upper half's pieces). AVX2's masked store (vmaskmov) is microcoded on AMD Zen: on Zen 2, rows of 60
// or 64 float32 with masked heads and tails ran 14-50% slower than with these pieces (a loop of plain intrinsics, 2560
// rows, cached and streamed), and the masked stores beside streamed lines cost most. Inlined: as a call, made from the
// heads and tails of GroupNormalizationGrad's streamed rows 16 bytes past a line, it cost that operator 2.6 times
// ([2, 640, 16, 16] float32, one thread, the bench's malloc layout: 170 -> 434 us), while inlined it costs the
// pipelined GroupNorm 4% where no row has a tail ([2, 1280, 8, 8]: 99.6 -> 103-105 us).
template <class D>
HWY_INLINE void StorePieces(D d, hn::Vec<D> v, hn::TFromD<D>* HWY_RESTRICT p, size_t k) {
  constexpr size_t kN = hn::MaxLanes(D());
  if (k >= kN) return hn::StoreU(v, d, p);
  if constexpr (kN > 1) {
    const hn::Half<D> dh;
    if (k >= kN / 2) {
      hn::StoreU(hn::LowerHalf(dh, v), dh, p);
      StorePieces(dh, hn::UpperHalf(dh, v), p + kN / 2, k - kN / 2);
    } else {
      StorePieces(dh, hn::LowerHalf(dh, v), p, k);
    }
  }
}
#endif

template <class D>
HWY_INLINE void StoreFirst(D d, hn::Vec<D> v, hn::TFromD<D>* HWY_RESTRICT p, size_t k) {
#if NNOPS_STORE_PIECES
  return StorePieces(d, v, p, k);
#else
  hn::BlendedStore(v, hn::FirstN(d, k), d, p);
#endif
}

template <class DF, typename T>
HWY_INLINE hn::Vec<DF> LoadF32N(DF df, const T* HWY_RESTRICT p, size_t n) {
  if constexpr (kTailMoves<T> == TailMoves::kMasked && std::is_same_v<T, float>) {
    return LoadFirst(df, p, n);
  } else if constexpr (kTailMoves<T> == TailMoves::kMasked) {
    const hn::Rebind<uint16_t, DF> du16;
    return WidenBits(df, LoadFirst(du16, reinterpret_cast<const uint16_t*>(p), n), p);
  } else if constexpr (kTailMoves<T> == TailMoves::kMaskedPairs) {
    const hn::Rebind<uint16_t, DF> du16;
    const hn::Repartition<uint32_t, decltype(du16)> du32;
    auto bits = hn::BitCast(du16, LoadFirst(du32, reinterpret_cast<const uint32_t*>(p), n / 2));
    if (n % 2) {
      uint16_t last;
      std::memcpy(&last, p + n - 1, 2);
      bits = hn::IfThenElse(hn::AndNot(hn::FirstN(du16, n - 1), hn::FirstN(du16, n)), hn::Set(du16, last), bits);
    }
    return WidenBits(df, bits, p);
  } else {
    alignas(64) T buf[kMaxF32Lanes] = {};
    std::memcpy(buf, p, n * sizeof(T));
    return LoadF32(df, buf);
  }
}

template <class DF, typename T>
HWY_INLINE void StoreF32N(DF df, hn::Vec<DF> v, T* HWY_RESTRICT p, size_t n) {
  if constexpr (kTailMoves<T> == TailMoves::kMasked && std::is_same_v<T, float>) {
    StoreFirst(df, v, p, n);
  } else if constexpr (kTailMoves<T> == TailMoves::kMasked) {
    const hn::Rebind<uint16_t, DF> du16;
    StoreFirst(du16, ToStorageBits(df, v, p), reinterpret_cast<uint16_t*>(p), n);
  } else if constexpr (kTailMoves<T> == TailMoves::kMaskedPairs) {
    const hn::Rebind<uint16_t, DF> du16;
    const hn::Repartition<uint32_t, decltype(du16)> du32;
    const auto bits = ToStorageBits(df, v, p);
    StoreFirst(du32, hn::BitCast(du32, bits), reinterpret_cast<uint32_t*>(p), n / 2);
    if (n % 2) {
      const uint16_t last = hn::ExtractLane(bits, n - 1);
      std::memcpy(p + n - 1, &last, 2);
    }
  } else {
    alignas(64) T buf[kMaxF32Lanes];
    StoreF32(df, v, buf);
    std::memcpy(p, buf, n * sizeof(T));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#endif  // NNOPS_CORE_SIMD_CONVERT_INL_H_
