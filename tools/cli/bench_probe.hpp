// Bandwidth probes for `nnops bench`: plain streaming kernels with the same read/write mix as an operator
// (the descriptor's ProbeMix), run with the same threads, so that an operator's GB/s can be stated as a
// fraction of what this machine's memory system delivers for that mix, in the same process.
#pragma once

#include <cstddef>

namespace nnops::cli {

/// Reads `reads` float arrays and writes `writes` arrays of n floats. `in_place`: the writes update the first
/// `writes` read arrays (a[k] += a[reads - 1]); otherwise `arrays` holds reads + writes arrays and each output
/// is the sum of the inputs. `streaming`: non-temporal stores (not in place). 1 <= reads <= 4, writes <= 3.
void probe_mix(float* const* arrays, int reads, int writes, bool in_place, std::size_t n, int threads,
               bool streaming);

}  // namespace nnops::cli
