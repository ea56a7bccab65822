#include "nnops/tensor_view.hpp"

#include <algorithm>

namespace nnops {

TensorView::TensorView(void* data, DType dtype, std::initializer_list<int64_t> shape) {
  const int64_t* dims = shape.begin();
  *this = contiguous(data, dtype, dims, static_cast<int>(shape.size()));
}

TensorView TensorView::contiguous(void* data, DType dtype, const int64_t* shape, int rank) {
  TensorView v;
  v.data_ = data;
  v.dtype_ = dtype;
  v.rank_ = rank;
  if (!v.rank_ok()) return v;
  std::copy(shape, shape + rank, v.shape_);
  // Dense row-major strides; computed with wrap-around so that absurd shapes give a view that the
  // operators reject through numel() instead of undefined behaviour here.
  uint64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    v.strides_[i] = static_cast<int64_t>(s);
    s *= static_cast<uint64_t>(shape[i] > 0 ? shape[i] : 1);
  }
  return v;
}

TensorView TensorView::strided(void* data, DType dtype, const int64_t* shape, const int64_t* strides, int rank) {
  TensorView v = contiguous(data, dtype, shape, rank);
  if (v.rank_ok()) std::copy(strides, strides + rank, v.strides_);
  return v;
}

int64_t TensorView::numel() const noexcept {
  if (!rank_ok()) return -1;
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) {
    if (shape_[i] < 0) return -1;
    if (__builtin_mul_overflow(n, shape_[i], &n)) return -1;
  }
  return n;
}

bool TensorView::is_contiguous() const noexcept {
  if (!rank_ok()) return false;
  for (int i = 0; i < rank_; ++i) {
    if (shape_[i] < 0) return false;
    if (shape_[i] == 0) return true;  // no element is addressed: any strides describe it (as in PyTorch)
  }
  int64_t expected = 1;  // every dim is >= 1 here
  for (int i = rank_ - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    if (__builtin_mul_overflow(expected, shape_[i], &expected)) return false;
  }
  return true;
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  const int r = rank_ok() ? rank_ : 0;
  for (int i = 0; i < r; ++i) {
    if (i) s += ", ";
    s += std::to_string(shape_[i]);
  }
  return s + "]";
}

}  // namespace nnops
