// A non-owning view of a tensor: data pointer, dtype, shape and strides (in elements).
//
// Views never allocate or free. The caller keeps the memory alive for the duration of a call. Every operator
// accepts any non-negative strides (dense row-major, channels-last, transposed, padded, broadcast inputs with
// stride 0, ...) and gives exactly the bits it gives for a dense copy; an output must give each element its
// own address. Dense row-major and (for the GroupNorm family) channels-last are the fast paths; other
// layouts are copied to dense buffers first (see the operators' READMEs).
//
// An optional argument (GroupNorm's gamma and beta, an output that an output mask leaves out) is absent when
// passed as TensorView::none() (= TensorView{}: null data, rank 0).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "nnops/dtype.hpp"

namespace nnops {

/// Highest rank a view can carry (CANN's limit as well).
constexpr int kMaxRank = 8;

class TensorView {
 public:
  /// An empty rank-0 float32 view with a null data pointer: "no tensor" for optional arguments.
  TensorView() = default;
  static TensorView none() { return TensorView(); }
  /// True for TensorView::none() (null data and rank 0).
  bool is_none() const noexcept { return data_ == nullptr && rank_ == 0; }

  /// Contiguous view; `shape` lists the dims outermost first. A rank above kMaxRank gives a view that
  /// every operator rejects with a message (rank() then reports the requested rank).
  TensorView(void* data, DType dtype, std::initializer_list<int64_t> shape);
  static TensorView contiguous(void* data, DType dtype, const int64_t* shape, int rank);
  /// View with explicit strides (in elements, may be any value; validity is checked by operators).
  static TensorView strided(void* data, DType dtype, const int64_t* shape, const int64_t* strides, int rank);

  void* data() const noexcept { return data_; }
  DType dtype() const noexcept { return dtype_; }
  int rank() const noexcept { return rank_; }
  /// True when rank() is in [0, kMaxRank] (the dims are stored).
  bool rank_ok() const noexcept { return rank_ >= 0 && rank_ <= kMaxRank; }
  int64_t dim(int i) const noexcept { return shape_[i]; }
  int64_t stride(int i) const noexcept { return strides_[i]; }
  const int64_t* shape() const noexcept { return shape_; }
  const int64_t* strides() const noexcept { return strides_; }

  /// True when every dim is >= 0 and the strides are the dense row-major ones (dims of size 1 may have
  /// any stride, as in PyTorch).
  bool is_contiguous() const noexcept;

  /// Product of the dims, or -1 if a dim is negative or the product overflows int64.
  int64_t numel() const noexcept;

  /// "[2, 3, 4]".
  std::string shape_string() const;

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::kFloat32;
  int rank_ = 0;
  int64_t shape_[kMaxRank] = {};
  int64_t strides_[kMaxRank] = {};
};

}  // namespace nnops
