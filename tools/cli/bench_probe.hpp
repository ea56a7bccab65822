// Bandwidth probes for `nnops bench`: plain streaming kernels with the same read/write mix as an operator
// (the descriptor's ProbeMix), run with the same threads (the same OpenMP pool through parallel_region),
// so that an operator's GB/s can be stated as a fraction of what this machine's memory system delivers for
// that mix, in the same process and, since they leave the operator's data as it was (see below), on the
// operator's own buffers.
//
// The probes move 32-bit integer lanes, whatever the data: no float arithmetic, so no denormal or NaN
// slow paths whatever bits they meet. In place, each written array gets a[k] = a[k] + (a[last] & zero) with
// a zero that the compiler cannot see: the bytes are stored back unchanged. Not in place, each output gets
// the exclusive or of the inputs (outputs are the operator's to overwrite: it writes every byte of them on
// every call). Bytes past the last whole lane are not touched.
#pragma once

#include <cstddef>

namespace nnops::cli {

/// Probe kernels; `nnops bench` times each one that applies and keeps the fastest.
enum class ProbeVariant : int {
  kPlain,           ///< one vector per array per step: load every input, then store every output
  kUnroll,          ///< four vectors per array per step, the loads of each array back to back
  kStream,          ///< kUnroll with non-temporal stores
  kStaged,          ///< blocks of 2 KiB per array: each input block copied into an L1 buffer one array at a
                    ///< time, then the outputs written one array at a time from the buffers
  kStagedStream,    ///< kStaged with non-temporal stores
  kPrefetch,        ///< kPlain with a software prefetch 2 KiB ahead in every array (PrefetchStream, as the kernels)
  kPrefetchStream,  ///< kStream with PrefetchStream ahead in every input
  kCount,
};

const char* probe_variant_name(ProbeVariant v);
/// The variants with non-temporal stores.
inline bool probe_variant_streams(ProbeVariant v) {
  return v == ProbeVariant::kStream || v == ProbeVariant::kStagedStream || v == ProbeVariant::kPrefetchStream;
}
/// Every variant applies to every mix with at least one write; without writes the store variants are
/// the same as their plain ones and are skipped.
bool probe_variant_applies(ProbeVariant v, int writes);

/// Reads `reads` arrays and writes `writes` arrays of n 32-bit lanes. `in_place`: the writes go to the
/// first `writes` read arrays and leave them unchanged; otherwise `arrays` holds reads + writes arrays and
/// each output gets the exclusive or of the inputs. 1 <= reads <= 4, writes <= 3. Arrays should be 64-byte
/// aligned (non-temporal stores start at the first vector-aligned lane of the first output).
void probe_mix(void* const* arrays, int reads, int writes, bool in_place, std::size_t n, int threads, ProbeVariant v);

}  // namespace nnops::cli
