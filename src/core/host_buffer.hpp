// An owning, 64-byte-aligned host tensor for tools, tests and benchmarks (the library API itself only
// takes views). Not part of the public API. Throws std::bad_alloc when memory runs out.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include "nnops/dtype.hpp"
#include "nnops/tensor_view.hpp"

namespace nnops::detail {

class HostBuffer {
 public:
  HostBuffer() = default;
  /// `zero`: fill with zero bytes (false: leave the contents undefined, for workspaces).
  HostBuffer(DType dtype, std::vector<int64_t> shape, bool zero = true) : dtype_(dtype), shape_(std::move(shape)) {
    numel_ = 1;
    for (int64_t d : shape_) numel_ *= d;
    // Large buffers are 2 MiB aligned and asked to use transparent huge pages: fewer TLB misses make
    // streaming benchmarks measure memory, not page walks.
    const std::size_t align = numel_ * dtype_size(dtype_) >= (std::size_t{4} << 20) ? (std::size_t{2} << 20) : 64;
    const std::size_t bytes = (static_cast<std::size_t>(numel_) * dtype_size(dtype_) + align - 1) / align * align;
    data_.reset(static_cast<unsigned char*>(std::aligned_alloc(align, bytes ? bytes : align)));
    if (!data_) throw std::bad_alloc();
#ifdef __linux__
    if (align > 64 && data_) madvise(data_.get(), bytes, MADV_HUGEPAGE);
#endif
    if (bytes && zero) std::memset(data_.get(), 0, bytes);
  }

  DType dtype() const { return dtype_; }
  int64_t numel() const { return numel_; }
  std::size_t bytes() const { return static_cast<std::size_t>(numel_) * dtype_size(dtype_); }
  const std::vector<int64_t>& shape() const { return shape_; }
  void* data() const { return data_.get(); }

  TensorView view() const {
    return TensorView::contiguous(data_.get(), dtype_, shape_.data(), static_cast<int>(shape_.size()));
  }

  double get(int64_t i) const { return load_as_double(data_.get(), dtype_, static_cast<std::size_t>(i)); }
  /// Stores v rounded to the dtype.
  void set(int64_t i, double v) { store_from_double(data_.get(), dtype_, static_cast<std::size_t>(i), v); }

  /// Same dtype, shape and bytes.
  HostBuffer clone() const {
    HostBuffer b(dtype_, shape_);
    if (bytes()) std::memcpy(b.data(), data(), bytes());
    return b;
  }
  bool same_bytes(const HostBuffer& o) const {
    return bytes() == o.bytes() && (bytes() == 0 || std::memcmp(data(), o.data(), bytes()) == 0);
  }

 private:
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::unique_ptr<unsigned char, Free> data_;
};

}  // namespace nnops::detail
