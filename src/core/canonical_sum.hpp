// The layout of CanonColumnSums' lane accumulators (src/core/canonical_sum-inl.h), for the plans that size the
// workspace and the kernels that carve it.
#pragma once

#include <cstddef>

namespace nnops::detail {

/// Doubles from one lane's accumulators to the next lane's for `cols` columns. NB: cols, one cache line more where
/// cols is a multiple of 256 (a lane 2 KiB or a multiple of 4 KiB long): the 16 lanes of a column would otherwise fall
/// in the same few L1 sets, with the rows they add (AMD Zen 2 harness, 256 rows in L2, the two GroupNorm sums: 512
/// columns 0.256 -> 0.21 ns/element, 1024 columns 0.333 -> 0.265, 256 columns 0.221 -> 0.203; 128 and 640 columns,
/// not padded, measured no faster padded). The sums do not depend on it.
inline size_t canon_column_lane_stride(size_t cols) { return cols % 256 == 0 ? cols + 8 : cols; }

/// The doubles CanonColumnSums' `acc` holds for up to `cols` columns: two statistics x 16 lanes, each with room for the
/// padding (a buffer sized for a unit's most columns also holds a narrower unit's padded lanes).
inline size_t canon_column_acc_doubles(size_t cols) { return 2 * 16 * (cols + 8); }

}  // namespace nnops::detail
