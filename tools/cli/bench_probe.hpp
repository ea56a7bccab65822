// Bandwidth probes for `nnops bench`: plain streaming kernels with the same read/write mix as each
// operator, run with the same threads, so that an operator's GB/s can be stated as a fraction of what
// this machine's memory system delivers for that mix, in the same process.
#pragma once

#include <cstddef>

namespace nnops::cli {

/// a[i] += c[i]; b[i] += c[i]  (read 3 arrays, write 2 of them in place: PowerSign's mix).
void probe_read3_update2(float* a, float* b, const float* c, size_t n, int threads);
/// d[i] = a[i] + b[i] + c[i]  (read 3, write a 4th: GroupNormalizationGrad's mix). `streaming` uses
/// non-temporal stores.
void probe_read3_write1(const float* a, const float* b, const float* c, float* d, size_t n, int threads,
                        bool streaming);

}  // namespace nnops::cli
