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

void ProbeRead3Update2(float* a, float* b, const float* c, size_t n, int threads) {
  detail::parallel_region(threads, [&](int tid, int nt) {
    const hn::ScalableTag<float> d;
    const size_t N = hn::Lanes(d);
    size_t i, e;
    Range(n, nt, tid, &i, &e);
    for (; i + N <= e; i += N) {
      const auto vc = hn::LoadU(d, c + i);
      hn::StoreU(hn::Add(hn::LoadU(d, a + i), vc), d, a + i);
      hn::StoreU(hn::Add(hn::LoadU(d, b + i), vc), d, b + i);
    }
    for (; i < e; ++i) {
      a[i] += c[i];
      b[i] += c[i];
    }
  });
}

void ProbeRead3Write1(const float* a, const float* b, const float* c, float* out, size_t n, int threads,
                      bool streaming) {
  detail::parallel_region(threads, [&](int tid, int nt) {
    const hn::ScalableTag<float> d;
    const size_t N = hn::Lanes(d);
    size_t i, e;
    Range(n, nt, tid, &i, &e);
    // Align the output for Stream (non-temporal stores need aligned addresses).
    for (; i < e && (reinterpret_cast<uintptr_t>(out + i) % (N * sizeof(float))) != 0; ++i) out[i] = a[i] + b[i] + c[i];
    if (streaming) {
      for (; i + N <= e; i += N)
        hn::Stream(hn::Add(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), hn::LoadU(d, c + i)), d, out + i);
    } else {
      for (; i + N <= e; i += N)
        hn::Store(hn::Add(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), hn::LoadU(d, c + i)), d, out + i);
    }
    for (; i < e; ++i) out[i] = a[i] + b[i] + c[i];
    if (streaming) hwy::FlushStream();  // order this thread's non-temporal stores before the join
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace cli
}  // namespace nnops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nnops {
namespace cli {
HWY_EXPORT(ProbeRead3Update2);
HWY_EXPORT(ProbeRead3Write1);

void probe_read3_update2(float* a, float* b, const float* c, size_t n, int threads) {
  HWY_DYNAMIC_DISPATCH(ProbeRead3Update2)(a, b, c, n, threads);
}
void probe_read3_write1(const float* a, const float* b, const float* c, float* d, size_t n, int threads,
                        bool streaming) {
  HWY_DYNAMIC_DISPATCH(ProbeRead3Write1)(a, b, c, d, n, threads, streaming);
}
}  // namespace cli
}  // namespace nnops
#endif
