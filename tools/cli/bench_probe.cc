#include "tools/cli/bench_probe.hpp"

#include <algorithm>
#include <cstdint>

#include "src/core/parallel.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tools/cli/bench_probe.cc"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "src/core/simd_convert-inl.h"

#ifndef NNOPS_BENCH_PROBE_ONCE
#define NNOPS_BENCH_PROBE_ONCE
namespace nnops::cli::probe_detail {
// Read once per call: the compiler cannot fold the in-place probe's (x & zero) away.
inline volatile uint32_t g_zero = 0;
// Lanes per staged block and array (2 KiB: four arrays' blocks stay in a 32 KiB L1 with room to spare).
inline constexpr size_t kStageLanes = 512;
}  // namespace nnops::cli::probe_detail
#endif

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace cli {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Per-thread ranges are multiples of 64 lanes, so no two threads share a cache line.
inline void Range(size_t n, int nt, int tid, size_t* b, size_t* e) {
  const auto [lo, hi] = detail::split_range(static_cast<int64_t>((n + 63) / 64), nt, tid);
  *b = static_cast<size_t>(lo) * 64;
  *e = std::min(n, static_cast<size_t>(hi) * 64);
}

template <class D, class V>
HWY_INLINE void Put(D d, V v, uint32_t* p, bool stream) {
  if (stream) {
    hn::Stream(v, d, p);
  } else {
    hn::StoreU(v, d, p);
  }
}

// kR reads, kW writes, kU (1 or 4) vectors per array and step; the loops over arrays unroll over the
// compile-time counts. The kU vectors are named variables, not an array: SVE vectors are sizeless types,
// which cannot form arrays.
template <int kR, int kW, bool kInPlace, int kU>
HWY_INLINE void Direct(uint32_t* const* in, uint32_t* const* out, size_t i, size_t e, uint32_t zero, bool stream,
                       bool prefetch = false) {
  static_assert(kU == 1 || kU == 4, "Direct: 1 or 4 vectors a step");
  const hn::ScalableTag<uint32_t> d;
  const size_t N = hn::Lanes(d);
  const auto z = hn::Set(d, zero);
  using V = hn::Vec<decltype(d)>;
  for (; i + kU * N <= e; i += kU * N) {
    if (prefetch) {  // the kernels' own prefetch (PrefetchStream), of the inputs and of cached outputs
      for (int r = 0; r < kR; ++r) nnops::HWY_NAMESPACE::PrefetchStream(in[r] + i, kU * N * sizeof(uint32_t));
      for (int k = 0; k < kW && !kInPlace && !stream; ++k) {
        nnops::HWY_NAMESPACE::PrefetchStream(out[k] + i, kU * N * sizeof(uint32_t));
      }
    }
    if constexpr (kInPlace) {
      const uint32_t* src = in[kR - 1] + i;
      const V l0 = hn::And(hn::LoadU(d, src), z);
      V l1 = l0, l2 = l0, l3 = l0;
      if constexpr (kU == 4) {
        l1 = hn::And(hn::LoadU(d, src + N), z);
        l2 = hn::And(hn::LoadU(d, src + 2 * N), z);
        l3 = hn::And(hn::LoadU(d, src + 3 * N), z);
      }
      for (int k = 0; k < kW; ++k) {
        uint32_t* dst = out[k] + i;
        const V v0 = hn::Add(hn::LoadU(d, dst), l0);
        if constexpr (kU == 4) {
          const V v1 = hn::Add(hn::LoadU(d, dst + N), l1);
          const V v2 = hn::Add(hn::LoadU(d, dst + 2 * N), l2);
          const V v3 = hn::Add(hn::LoadU(d, dst + 3 * N), l3);
          Put(d, v0, dst, stream);
          Put(d, v1, dst + N, stream);
          Put(d, v2, dst + 2 * N, stream);
          Put(d, v3, dst + 3 * N, stream);
        } else {
          Put(d, v0, dst, stream);
        }
      }
    } else {
      V s0 = hn::LoadU(d, in[0] + i);
      V s1 = s0, s2 = s0, s3 = s0;
      if constexpr (kU == 4) {
        s1 = hn::LoadU(d, in[0] + i + N);
        s2 = hn::LoadU(d, in[0] + i + 2 * N);
        s3 = hn::LoadU(d, in[0] + i + 3 * N);
      }
      for (int r = 1; r < kR; ++r) {
        const uint32_t* src = in[r] + i;
        s0 = hn::Xor(s0, hn::LoadU(d, src));
        if constexpr (kU == 4) {
          s1 = hn::Xor(s1, hn::LoadU(d, src + N));
          s2 = hn::Xor(s2, hn::LoadU(d, src + 2 * N));
          s3 = hn::Xor(s3, hn::LoadU(d, src + 3 * N));
        }
      }
      for (int k = 0; k < kW; ++k) {
        uint32_t* dst = out[k] + i;
        Put(d, s0, dst, stream);
        if constexpr (kU == 4) {
          Put(d, s1, dst + N, stream);
          Put(d, s2, dst + 2 * N, stream);
          Put(d, s3, dst + 3 * N, stream);
        }
      }
    }
  }
  for (; i < e; ++i) {
    if constexpr (kInPlace) {
      for (int k = 0; k < kW; ++k) out[k][i] += in[kR - 1][i] & zero;
    } else {
      uint32_t s = in[0][i];
      for (int r = 1; r < kR; ++r) s ^= in[r][i];
      for (int k = 0; k < kW; ++k) out[k][i] = s;
    }
  }
}

// One block of at most kStageLanes lanes: inputs copied to buf one array at a time, outputs written one
// array at a time. A multiple of 4 vectors except in the last block.
template <int kR, int kW, bool kInPlace>
HWY_INLINE void StagedBlock(uint32_t* const* in, uint32_t* const* out, size_t i, size_t len, uint32_t zero, bool stream,
                            uint32_t (*buf)[probe_detail::kStageLanes]) {
  const hn::ScalableTag<uint32_t> d;
  const size_t N = hn::Lanes(d);
  const auto z = hn::Set(d, zero);
  const size_t full = len / N * N;
  for (int r = 0; r < kR; ++r) {
    size_t j = 0;
    for (; j < full; j += N) hn::Store(hn::LoadU(d, in[r] + i + j), d, buf[r] + j);
    for (; j < len; ++j) buf[r][j] = in[r][i + j];
  }
  for (int k = 0; k < kW; ++k) {
    size_t j = 0;
    for (; j < full; j += N) {
      hn::Vec<decltype(d)> v;
      if constexpr (kInPlace) {
        v = hn::Add(hn::Load(d, buf[k] + j), hn::And(hn::Load(d, buf[kR - 1] + j), z));
      } else {
        v = hn::Load(d, buf[0] + j);
        for (int r = 1; r < kR; ++r) v = hn::Xor(v, hn::Load(d, buf[r] + j));
      }
      Put(d, v, out[k] + i + j, stream);
    }
    for (; j < len; ++j) {
      uint32_t s;
      if constexpr (kInPlace) {
        s = buf[k][j] + (buf[kR - 1][j] & zero);
      } else {
        s = buf[0][j];
        for (int r = 1; r < kR; ++r) s ^= buf[r][j];
      }
      out[k][i + j] = s;
    }
  }
}

template <int kR, int kW, bool kInPlace>
void Mix(void* const* arrays, size_t n, int threads, ProbeVariant v) {
  const uint32_t zero = probe_detail::g_zero;
  uint32_t* in[kR];
  uint32_t* out[kW > 0 ? kW : 1];
  for (int r = 0; r < kR; ++r) in[r] = static_cast<uint32_t*>(arrays[r]);
  for (int k = 0; k < kW; ++k) out[k] = static_cast<uint32_t*>(arrays[kInPlace ? k : kR + k]);
  const bool stream_wanted = probe_variant_streams(v);
  detail::parallel_region(threads, [&](int tid, int nt) {
    const hn::ScalableTag<uint32_t> d;
    const size_t N = hn::Lanes(d);
    size_t i, e;
    Range(n, nt, tid, &i, &e);
    // Non-temporal stores need vector-aligned addresses and write whole lines best: as the kernels do
    // (StreamHead), the lanes before the first output's first 64-byte boundary take ordinary stores, then the
    // rest streams if every output is aligned there (outputs 16 bytes into their pages, say, all alike).
    size_t head = i;
    if (stream_wanted && kW > 0) {
      const size_t mis = reinterpret_cast<uintptr_t>(out[0] + i) % 64;
      if (mis % sizeof(uint32_t) == 0 && mis != 0) head = std::min(e, i + (64 - mis) / sizeof(uint32_t));
    }
    bool stream = stream_wanted && kW > 0;
    for (int k = 0; k < kW; ++k) {
      stream = stream && reinterpret_cast<uintptr_t>(out[k] + head) % std::max<size_t>(64, N * sizeof(uint32_t)) == 0;
    }
    if (stream && head > i) {
      Direct<kR, kW, kInPlace, 1>(in, out, i, head, zero, false);
      i = head;
    }
    switch (v) {
      case ProbeVariant::kPlain:
        Direct<kR, kW, kInPlace, 1>(in, out, i, e, zero, false);
        break;
      case ProbeVariant::kUnroll:
      case ProbeVariant::kStream:
        Direct<kR, kW, kInPlace, 4>(in, out, i, e, zero, stream);
        break;
      case ProbeVariant::kPrefetch:
        Direct<kR, kW, kInPlace, 1>(in, out, i, e, zero, false, true);
        break;
      case ProbeVariant::kPrefetchStream:
        Direct<kR, kW, kInPlace, 4>(in, out, i, e, zero, stream, true);
        break;
      default: {
        HWY_ALIGN uint32_t buf[kR][probe_detail::kStageLanes];
        for (; i < e; i += probe_detail::kStageLanes) {
          StagedBlock<kR, kW, kInPlace>(in, out, i, std::min(probe_detail::kStageLanes, e - i), zero, stream, buf);
        }
      }
    }
    if (stream) hwy::FlushStream();  // order this thread's non-temporal stores before the join
  });
}

template <int kR, bool kInPlace>
void MixR(void* const* a, int writes, size_t n, int threads, ProbeVariant v) {
  switch (writes) {
    case 0:
      return Mix<kR, 0, kInPlace>(a, n, threads, v);
    case 1:
      return Mix<kR, 1, kInPlace>(a, n, threads, v);
    case 2:
      return Mix<kR, 2, kInPlace>(a, n, threads, v);
    default:
      return Mix<kR, 3, kInPlace>(a, n, threads, v);
  }
}

template <bool kInPlace>
void MixAll(void* const* a, int reads, int writes, size_t n, int threads, ProbeVariant v) {
  switch (reads) {
    case 1:
      return MixR<1, kInPlace>(a, writes, n, threads, v);
    case 2:
      return MixR<2, kInPlace>(a, writes, n, threads, v);
    case 3:
      return MixR<3, kInPlace>(a, writes, n, threads, v);
    default:
      return MixR<4, kInPlace>(a, writes, n, threads, v);
  }
}

void ProbeMix(void* const* a, int reads, int writes, bool in_place, size_t n, int threads, ProbeVariant v) {
  if (in_place) return MixAll<true>(a, reads, writes, n, threads, v);
  MixAll<false>(a, reads, writes, n, threads, v);
}

}  // namespace HWY_NAMESPACE
}  // namespace cli
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nnops {
namespace cli {
HWY_EXPORT(ProbeMix);

const char* probe_variant_name(ProbeVariant v) {
  switch (v) {
    case ProbeVariant::kPlain:
      return "plain";
    case ProbeVariant::kUnroll:
      return "unroll4";
    case ProbeVariant::kStream:
      return "nt";
    case ProbeVariant::kStaged:
      return "staged";
    case ProbeVariant::kStagedStream:
      return "staged-nt";
    case ProbeVariant::kPrefetch:
      return "prefetch";
    case ProbeVariant::kPrefetchStream:
      return "prefetch-nt";
    default:
      return "?";
  }
}

bool probe_variant_applies(ProbeVariant v, int writes) {
  if (probe_variant_streams(v)) return writes > 0;
  return v != ProbeVariant::kCount;
}

void probe_mix(void* const* arrays, int reads, int writes, bool in_place, std::size_t n, int threads, ProbeVariant v) {
  HWY_DYNAMIC_DISPATCH(ProbeMix)(arrays, reads, writes, in_place, n, threads, v);
}
}  // namespace cli
}  // namespace nnops
#endif
