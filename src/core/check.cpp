#include "src/core/check.hpp"

#include <cstdint>

#include "src/core/layout.hpp"

namespace nnops::detail {

std::string strides_string(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank(); ++i) s += (i ? ", " : "") + std::to_string(t.stride(i));
  return s + "]";
}

Status invalid_arg(const char* op, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, std::string(op) + ": " + what);
}

Status check_tensor(const char* op, const char* name, const TensorView& t, int64_t* numel) {
  const std::string n(name);
  if (!t.rank_ok()) {
    return invalid_arg(op,
                       n + " has rank " + std::to_string(t.rank()) + "; expected at most " + std::to_string(kMaxRank));
  }
  for (int i = 0; i < t.rank(); ++i) {
    if (t.dim(i) < 0) {
      return invalid_arg(op, n + " has shape " + t.shape_string() + "; expected non-negative dims");
    }
  }
  const int64_t count = t.numel();
  int64_t bytes = 0;
  if (count < 0 || __builtin_mul_overflow(count, static_cast<int64_t>(dtype_size(t.dtype())), &bytes)) {
    return invalid_arg(op, n + " has shape " + t.shape_string() + "; its size overflows 64-bit byte counts");
  }
  for (int i = 0; i < t.rank(); ++i) {
    if (t.stride(i) < 0) {
      return invalid_arg(op, n + " has strides " + strides_string(t) + " for shape " + t.shape_string() +
                                 "; expected non-negative strides");
    }
  }
  // The span of a strided view: the element one past the largest offset it reaches.
  bool span_overflow = false;
  const int64_t reach = max_offset(t, &span_overflow);
  int64_t span_bytes = 0;
  if (span_overflow || (reach >= 0 && __builtin_mul_overflow(reach + 1, static_cast<int64_t>(dtype_size(t.dtype())),
                                                            &span_bytes))) {
    return invalid_arg(op, n + " has strides " + strides_string(t) + " for shape " + t.shape_string() +
                               "; the memory it spans overflows 64-bit byte counts");
  }
  if (count > 0 && t.data() == nullptr) {
    return Status(StatusCode::kNullPointer,
                  std::string(op) + ": " + n + " has a null data pointer and shape " + t.shape_string());
  }
  // NB (issue 6): kernels and the scalar reads load T through typed pointers; a pointer that is not a
  // multiple of sizeof(T) is undefined behaviour there (UBSan reports it), so it is refused here.
  if (count > 0 && reinterpret_cast<uintptr_t>(t.data()) % dtype_size(t.dtype()) != 0) {
    return invalid_arg(op, n + " has data pointer " + std::to_string(reinterpret_cast<uintptr_t>(t.data())) +
                               ", not a multiple of its " + std::to_string(dtype_size(t.dtype())) +
                               "-byte element size");
  }
  // The last byte must be addressable without wrapping around the address space.
  if (count > 0 && reinterpret_cast<uintptr_t>(t.data()) > UINTPTR_MAX - static_cast<uintptr_t>(span_bytes)) {
    return invalid_arg(op, n + " spans past the end of the address space");
  }
  *numel = count;
  return Status::ok();
}

Status check_dtype(const char* op, const char* name, const TensorView& t, DType want, const char* want_why) {
  if (t.dtype() == want) return Status::ok();
  return invalid_arg(op, std::string(name) + " has dtype " + dtype_name(t.dtype()) + "; expected " + dtype_name(want) +
                             " " + want_why);
}

Status check_same_shape(const char* op, const char* name, const TensorView& t, const char* ref_name,
                        const TensorView& ref) {
  bool same = t.rank() == ref.rank();
  for (int i = 0; same && i < t.rank(); ++i) same = t.dim(i) == ref.dim(i);
  if (same) return Status::ok();
  return invalid_arg(op, std::string(name) + " has shape " + t.shape_string() + "; expected the shape of " + ref_name +
                             " " + ref.shape_string());
}

bool overlaps(const TensorView& a, const TensorView& b) { return views_overlap(a, b); }

Status check_output_layout(const char* op, const char* name, const TensorView& t) {
  if (is_nested(t)) return Status::ok();
  return invalid_arg(op, std::string(name) + " has strides " + strides_string(t) + " for shape " + t.shape_string() +
                             ": some of its elements share memory; an output needs a distinct address per element");
}

Status overlap_error(const char* op, const char* a, const char* b) {
  return invalid_arg(op, std::string(a) + " and " + b + " overlap in memory; expected disjoint buffers");
}

}  // namespace nnops::detail
