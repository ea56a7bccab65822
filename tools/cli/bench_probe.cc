#include "tools/cli/bench_probe.hpp"

#include <algorithm>
#include <cstdint>

#include "src/core/parallel.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tools/cli/bench_probe.cc"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace nnops {
namespace cli {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Per-thread ranges are multiples of 64 floats, so no two threads share a cache line.
inline void Range(size_t n, int nt, int tid, size_t* b, size_t* e) {
  const auto [lo, hi] = detail::split_range(static_cast<int64_t>((n + 63) / 64), nt, tid);
  *b = static_cast<size_t>(lo) * 64;
  *e = std::min(n, static_cast<size_t>(hi) * 64);
}

// kR reads, kW writes; the loops are unrolled by the compiler over the compile-time counts.
template <int kR, int kW, bool kInPlace>
void Mix(float* const* a, size_t n, int threads, bool streaming) {
  detail::parallel_region(threads, [&](int tid, int nt) {
    const hn::ScalableTag<float> d;
    const size_t N = hn::Lanes(d);
    size_t i, e;
    Range(n, nt, tid, &i, &e);
    float* out[kW > 0 ? kW : 1];
    for (int k = 0; k < kW; ++k) out[k] = kInPlace ? a[k] : a[kR + k];
    auto scalar = [&](size_t j) {
      if (kInPlace) {
        for (int k = 0; k < kW; ++k) out[k][j] += a[kR - 1][j];
      } else {
        float s = 0;
        for (int r = 0; r < kR; ++r) s += a[r][j];
        for (int k = 0; k < kW; ++k) out[k][j] = s;
      }
    };
    // Align the first output for Stream (non-temporal stores need aligned addresses).
    for (; i < e && kW > 0 && (reinterpret_cast<uintptr_t>(out[0] + i) % (N * sizeof(float))) != 0; ++i) scalar(i);
    for (; i + N <= e; i += N) {
      if (kInPlace) {
        const auto last = hn::LoadU(d, a[kR - 1] + i);
        for (int k = 0; k < kW; ++k) hn::StoreU(hn::Add(hn::LoadU(d, out[k] + i), last), d, out[k] + i);
      } else {
        auto s = hn::LoadU(d, a[0] + i);
        for (int r = 1; r < kR; ++r) s = hn::Add(s, hn::LoadU(d, a[r] + i));
        for (int k = 0; k < kW; ++k) {
          if (streaming) {
            hn::Stream(s, d, out[k] + i);
          } else {
            hn::StoreU(s, d, out[k] + i);
          }
        }
      }
    }
    for (; i < e; ++i) scalar(i);
    if (streaming) hwy::FlushStream();  // order this thread's non-temporal stores before the join
  });
}

template <int kR, bool kInPlace>
void MixR(float* const* a, int writes, size_t n, int threads, bool streaming) {
  switch (writes) {
    case 0:
      return Mix<kR, 0, kInPlace>(a, n, threads, streaming);
    case 1:
      return Mix<kR, 1, kInPlace>(a, n, threads, streaming);
    case 2:
      return Mix<kR, 2, kInPlace>(a, n, threads, streaming);
    default:
      return Mix<kR, 3, kInPlace>(a, n, threads, streaming);
  }
}

template <bool kInPlace>
void MixAll(float* const* a, int reads, int writes, size_t n, int threads, bool streaming) {
  switch (reads) {
    case 1:
      return MixR<1, kInPlace>(a, writes, n, threads, streaming);
    case 2:
      return MixR<2, kInPlace>(a, writes, n, threads, streaming);
    case 3:
      return MixR<3, kInPlace>(a, writes, n, threads, streaming);
    default:
      return MixR<4, kInPlace>(a, writes, n, threads, streaming);
  }
}

void ProbeMix(float* const* a, int reads, int writes, bool in_place, size_t n, int threads, bool streaming) {
  if (in_place) return MixAll<true>(a, reads, writes, n, threads, false);
  MixAll<false>(a, reads, writes, n, threads, streaming);
}

}  // namespace HWY_NAMESPACE
}  // namespace cli
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nnops {
namespace cli {
HWY_EXPORT(ProbeMix);

void probe_mix(float* const* arrays, int reads, int writes, bool in_place, std::size_t n, int threads,
               bool streaming) {
  HWY_DYNAMIC_DISPATCH(ProbeMix)(arrays, reads, writes, in_place, n, threads, streaming);
}
}  // namespace cli
}  // namespace nnops
#endif
