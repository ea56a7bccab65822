// Memory layouts of strided views: the bytes a view touches, whether two views touch a common byte, the
// layouts kernels take directly (dense row-major, channels-last, "dense in some order"), and copies between a
// strided view and a dense row-major buffer (what a kernel that needs a dense layout runs on).
//
// Strides are in elements and non-negative (check_tensor refuses negative ones). A view may address one
// element several times (a stride of 0 broadcasts): that is allowed for inputs and refused for outputs
// (check_output_layout).
#pragma once

#include <cstdint>
#include <vector>

#include "nnops/tensor_view.hpp"

namespace nnops::detail {

/// The bytes a view touches: [lo, hi). Empty views touch nothing (lo == hi == 0).
struct ByteSpan {
  uintptr_t lo = 0, hi = 0;
  bool empty() const { return hi <= lo; }
};

/// Largest element offset a view reaches (sum of (dim - 1) * stride), or -1 when it is empty or the sum
/// overflows int64 (*overflow is set then).
int64_t max_offset(const TensorView& v, bool* overflow = nullptr);

/// The bytes the view touches. Precondition: check_tensor accepted it (no overflow, no wrap).
ByteSpan byte_span(const TensorView& v);

/// No two logical elements share an address and the dims, taken by decreasing stride, nest: each stride is
/// larger than the largest offset the smaller-stride dims reach. (Every layout a framework makes is of this
/// kind; it lets membership be decided greedily.) Size-1 dims are ignored. Empty views qualify.
bool is_nested(const TensorView& v);

/// Nested and touching every element slot of its span: a permutation of a dense row-major layout (dense
/// row-major itself, channels-last, transposes, ...).
bool is_dense(const TensorView& v);

/// [N, C, d2, ..., dk] (rank >= 3) laid out as [N, d2, ..., dk, C]: C innermost, then the spatial dims, then
/// N, densely. Size-1 dims may have any stride. (Rank 2 views have no channels-last form distinct from dense.)
bool is_channels_last(const TensorView& v);

/// The strides (in elements) of a dense channels-last [N, C, d2, ..., dk] (rank >= 2): C innermost, then dk
/// back to d2, then N; zero dims count as 1. A view with them satisfies is_channels_last.
std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& shape);

/// The same shape and the same strides (size-1 dims compare equal whatever their strides).
bool same_layout(const TensorView& a, const TensorView& b);

/// True when the two views touch a common byte. Exact for nested views; a pair it cannot decide cheaply (two
/// non-nested views, or over 2^22 elements to compare one by one) is reported as overlapping.
bool views_overlap(const TensorView& a, const TensorView& b);

/// Element offset (in elements, from data()) of the element with row-major linear index `i`.
int64_t element_offset(const TensorView& v, int64_t i);

/// The elements of a small tensor (gamma, mean, rstd, ...), any strides, in row-major order as doubles (exact),
/// and back (store_from_double's rounding). A view whose elements lie one stride apart in index order (every
/// contiguous or rank-1 view) takes a multiply per element instead of element_offset's division per dimension,
/// which had been a fifth of a small GroupNorm call.
void load_doubles(const TensorView& v, double* out);
/// load_doubles, or `n` copies of `fill` when v is none (an absent gamma or beta).
void load_doubles_or(const TensorView& v, int64_t n, double fill, double* out);
void store_doubles(const double* in, const TensorView& v);

/// Copies every element of `src` (any strides) to `dst` in row-major order (dense). `threads` > 1 splits
/// large copies across threads.
void gather_dense(const TensorView& src, void* dst, int threads = 1);
/// Copies a dense row-major buffer into every element of `dst` (a nested view).
void scatter_dense(const void* src, const TensorView& dst, int threads = 1);

/// Plan of the dense copies a kernel needs (plain data; part of an operator's plan). Each registered view
/// that is not already in a layout the kernel takes gets a dense copy in the workspace: inputs are gathered
/// into it before the kernel runs, outputs scattered from it afterwards (so an output is only written once
/// the kernel has run, and an input that is also written in place is read before any write).
class PackPlan {
 public:
  /// Registers `v`; returns the view the kernel should use: `v` itself when `take_as_is`, else a dense view
  /// of the same shape at a workspace offset (resolved by `resolve`). `read`: gather before the kernel;
  /// `write`: scatter after it.
  int add(const TensorView& v, bool take_as_is, bool read, bool write);
  /// Bytes of workspace the copies need (each 64-byte aligned).
  uint64_t workspace_bytes() const { return bytes_; }
  /// The kernel's view of registered view `id` given the workspace base.
  TensorView resolve(int id, void* workspace) const;
  /// Whether registered view `id` is copied.
  bool packed(int id) const { return entries_[id].packed; }
  /// Gathers the inputs into the workspace.
  void gather(void* workspace, int threads) const;
  /// Scatters the outputs from the workspace.
  void scatter(void* workspace, int threads) const;

 private:
  struct Entry {
    TensorView view;
    bool packed = false, read = false, write = false;
    uint64_t offset = 0;
  };
  std::vector<Entry> entries_;
  uint64_t bytes_ = 0;
};

}  // namespace nnops::detail
