// aclCreateTensor and friends, and aclTensor -> TensorView.
#include "src/acl/tensor.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "src/acl/c_enum.hpp"
#include "src/acl/device_memory.hpp"
#include "src/acl/error.hpp"

namespace nnops::acl {
namespace {

// Dims beyond this are refused at creation (phase one rejects anything above kMaxRank with a message);
// the cap only keeps a garbage count from making aclCreateTensor read or allocate without bound.
constexpr uint64_t kMaxCreateDims = 64;

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

Status invalid(const char* name, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, std::string(name) + " " + what);
}

const char* format_name(int f) {
  switch (f) {
    case ACL_FORMAT_UNDEFINED:
      return "ACL_FORMAT_UNDEFINED";
    case ACL_FORMAT_NCHW:
      return "ACL_FORMAT_NCHW";
    case ACL_FORMAT_NHWC:
      return "ACL_FORMAT_NHWC";
    case ACL_FORMAT_ND:
      return "ACL_FORMAT_ND";
    case ACL_FORMAT_NC1HWC0:
      return "ACL_FORMAT_NC1HWC0";
    case ACL_FORMAT_FRACTAL_Z:
      return "ACL_FORMAT_FRACTAL_Z";
    case ACL_FORMAT_NC1HWC0_C04:
      return "ACL_FORMAT_NC1HWC0_C04";
    case ACL_FORMAT_HWCN:
      return "ACL_FORMAT_HWCN";
    case ACL_FORMAT_NDHWC:
      return "ACL_FORMAT_NDHWC";
    case ACL_FORMAT_FRACTAL_NZ:
      return "ACL_FORMAT_FRACTAL_NZ";
    case ACL_FORMAT_NCDHW:
      return "ACL_FORMAT_NCDHW";
    case ACL_FORMAT_NDC1HWC0:
      return "ACL_FORMAT_NDC1HWC0";
    case ACL_FRACTAL_Z_3D:
      return "ACL_FRACTAL_Z_3D";
    case ACL_FORMAT_NC:
      return "ACL_FORMAT_NC";
    case ACL_FORMAT_NCL:
      return "ACL_FORMAT_NCL";
    case ACL_FORMAT_FRACTAL_NZ_C0_16:
      return "ACL_FORMAT_FRACTAL_NZ_C0_16";
    case ACL_FORMAT_FRACTAL_NZ_C0_32:
      return "ACL_FORMAT_FRACTAL_NZ_C0_32";
    case ACL_FORMAT_FRACTAL_NZ_C0_2:
      return "ACL_FORMAT_FRACTAL_NZ_C0_2";
    case ACL_FORMAT_FRACTAL_NZ_C0_4:
      return "ACL_FORMAT_FRACTAL_NZ_C0_4";
    case ACL_FORMAT_FRACTAL_NZ_C0_8:
      return "ACL_FORMAT_FRACTAL_NZ_C0_8";
  }
  return "unknown";
}

// The "plain" formats only name the axes of a dense layout, which is all nnops reads; the private
// (fractal, C0-blocked) formats describe NPU tilings nnops does not implement.
bool plain_format(int f) {
  switch (f) {
    case ACL_FORMAT_ND:
    case ACL_FORMAT_NCHW:
    case ACL_FORMAT_NHWC:
    case ACL_FORMAT_HWCN:
    case ACL_FORMAT_NDHWC:
    case ACL_FORMAT_NCDHW:
    case ACL_FORMAT_NC:
    case ACL_FORMAT_NCL:
      return true;
    default:
      return false;
  }
}

// The view of `t` (numel > 0, already checked to lie inside its storage) against the aclrtMalloc block that
// holds t->data, if any. The message has the form of add_operand's (executor.cpp) for the same mistake.
Status check_view_in_block(const char* name, const aclTensor* t, std::size_t elem) {
  const Lookup l = memory().find(t->data, 0);
  if (l.where == Lookup::kUntracked) return Status::ok();  // ordinary host memory: the caller's word
  if (l.where == Lookup::kFreed) return invalid(name, "points into a device block that was already freed");
  // Lowest and highest element reached (lo >= 0: the view starts at or after tensorData). No overflow: the
  // caller computed the same sums with checks.
  int64_t lo = t->offset, hi = t->offset;
  for (std::size_t i = 0; i < t->view_dims.size(); ++i) {
    const int64_t reach = (t->view_dims[i] - 1) * t->strides[i];
    (reach < 0 ? lo : hi) += reach;
  }
  const uint64_t start = reinterpret_cast<uintptr_t>(t->data) - l.block.base;  // bytes into the block
  uint64_t end = 0, first = 0;  // from the block's start: one past the last byte reached, the first byte
  const bool overflow =
      __builtin_mul_overflow(static_cast<uint64_t>(hi) + 1, elem, &end) || __builtin_add_overflow(end, start, &end) ||
      __builtin_mul_overflow(static_cast<uint64_t>(lo), elem, &first) || __builtin_add_overflow(first, start, &first);
  if (!overflow && end <= l.block.size) return Status::ok();
  char buf[160];
  std::snprintf(buf, sizeof buf, " needs %llu bytes at 0x%llx, past the end of its %s block (%llu bytes at 0x%llx)",
                static_cast<unsigned long long>(end - first), static_cast<unsigned long long>(l.block.base + first),
                alloc_api_name(l.kind), static_cast<unsigned long long>(l.block.size),
                static_cast<unsigned long long>(l.block.base));
  if (overflow) {
    std::snprintf(buf, sizeof buf,
                  " reaches past the end of the address space from its %s block (%llu bytes at 0x%llx)",
                  alloc_api_name(l.kind), static_cast<unsigned long long>(l.block.size),
                  static_cast<unsigned long long>(l.block.base));
  }
  return Status(StatusCode::kInvalidArgument, std::string(name) + buf);
}

}  // namespace

const char* dtype_name(int t) {
  switch (t) {
    case ACL_DT_UNDEFINED:
      return "ACL_DT_UNDEFINED";
    case ACL_FLOAT:
      return "ACL_FLOAT";
    case ACL_FLOAT16:
      return "ACL_FLOAT16";
    case ACL_INT8:
      return "ACL_INT8";
    case ACL_INT32:
      return "ACL_INT32";
    case ACL_UINT8:
      return "ACL_UINT8";
    case ACL_INT16:
      return "ACL_INT16";
    case ACL_UINT16:
      return "ACL_UINT16";
    case ACL_UINT32:
      return "ACL_UINT32";
    case ACL_INT64:
      return "ACL_INT64";
    case ACL_UINT64:
      return "ACL_UINT64";
    case ACL_DOUBLE:
      return "ACL_DOUBLE";
    case ACL_BOOL:
      return "ACL_BOOL";
    case ACL_STRING:
      return "ACL_STRING";
    case ACL_COMPLEX64:
      return "ACL_COMPLEX64";
    case ACL_COMPLEX128:
      return "ACL_COMPLEX128";
    case ACL_BF16:
      return "ACL_BF16";
    case ACL_INT4:
      return "ACL_INT4";
    case ACL_UINT1:
      return "ACL_UINT1";
    case ACL_COMPLEX32:
      return "ACL_COMPLEX32";
    case ACL_HIFLOAT8:
      return "ACL_HIFLOAT8";
    case ACL_FLOAT8_E5M2:
      return "ACL_FLOAT8_E5M2";
    case ACL_FLOAT8_E4M3FN:
      return "ACL_FLOAT8_E4M3FN";
    case ACL_FLOAT8_E8M0:
      return "ACL_FLOAT8_E8M0";
    case ACL_FLOAT6_E3M2:
      return "ACL_FLOAT6_E3M2";
    case ACL_FLOAT6_E2M3:
      return "ACL_FLOAT6_E2M3";
    case ACL_FLOAT4_E2M1:
      return "ACL_FLOAT4_E2M1";
    case ACL_FLOAT4_E1M2:
      return "ACL_FLOAT4_E1M2";
  }
  return "unknown";
}

bool to_nnops_dtype(int t, DType* out) {
  switch (t) {
    case ACL_FLOAT:
      *out = DType::kFloat32;
      return true;
    case ACL_FLOAT16:
      *out = DType::kFloat16;
      return true;
    case ACL_BF16:
      *out = DType::kBFloat16;
      return true;
    default:
      return false;
  }
}

aclDataType to_acl_dtype(DType t) {
  switch (t) {
    case DType::kFloat32:
      return ACL_FLOAT;
    case DType::kFloat16:
      return ACL_FLOAT16;
    case DType::kBFloat16:
      return ACL_BF16;
  }
  return ACL_DT_UNDEFINED;
}

std::size_t dtype_bytes(int t) {
  switch (t) {
    case ACL_BOOL:
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
      return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16:
      return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32:
      return 4;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64:
      return 8;
    case ACL_COMPLEX128:
      return 16;
    default:
      return 0;  // undefined, string, sub-byte types, unknown values
  }
}

Status to_view(const char* name, const aclTensor* t, TensorView* out) {
  if (t->magic != aclTensor::kMagic) {
    return invalid(name, "is not a live aclTensor (destroyed, or not made by aclCreateTensor)");
  }
  DType dt;
  if (!to_nnops_dtype(t->dtype, &dt)) {
    return invalid(name, std::string("has dtype ") + dtype_name(t->dtype) + " (" + std::to_string(t->dtype) +
                             "); nnops supports ACL_FLOAT, ACL_FLOAT16 and ACL_BF16");
  }
  if (!plain_format(t->format)) {
    return invalid(name, std::string("has format ") + format_name(t->format) + " (" + std::to_string(t->format) +
                             "); nnops supports ACL_FORMAT_ND and the plain formats (NCHW, NHWC, HWCN, NDHWC, "
                             "NCDHW, NC, NCL), not the private NPU formats");
  }
  const std::size_t rank = t->view_dims.size();
  if (rank > static_cast<std::size_t>(kMaxRank)) {
    return invalid(name, "has " + std::to_string(rank) + " dims " + list(t->view_dims) + "; expected at most " +
                             std::to_string(kMaxRank));
  }
  if (t->storage_dims.size() > static_cast<std::size_t>(kMaxRank)) {
    return invalid(name, "has " + std::to_string(t->storage_dims.size()) + " storage dims; expected at most " +
                             std::to_string(kMaxRank));
  }

  // Storage size in elements.
  int64_t storage = 1;
  for (int64_t d : t->storage_dims) {
    if (d < 0 || __builtin_mul_overflow(storage, d, &storage)) {
      return invalid(name, "has storage shape " + list(t->storage_dims) +
                               "; expected non-negative dims whose product fits in int64");
    }
  }
  // View: element count, then the lowest and highest element it addresses.
  int64_t numel = 1;
  for (int64_t d : t->view_dims) {
    if (d < 0 || __builtin_mul_overflow(numel, d, &numel)) {
      return invalid(name,
                     "has shape " + list(t->view_dims) + "; expected non-negative dims whose product fits in int64");
    }
  }
  if (t->offset < 0) return invalid(name, "has offset " + std::to_string(t->offset) + "; expected >= 0");
  // Built only for a message (formatted on every call it was half of phase one: PowerSign's seven tensors took
  // 2.7 us, now 1.5).
  const auto where = [t] {
    return "(shape " + list(t->view_dims) + ", strides " + list(t->strides) + ", offset " + std::to_string(t->offset) +
           ")";
  };
  if (numel > 0) {
    int64_t lo = t->offset, hi = t->offset;
    bool overflow = false;
    for (std::size_t i = 0; i < rank && !overflow; ++i) {
      int64_t reach = 0;
      overflow = __builtin_mul_overflow(t->view_dims[i] - 1, t->strides[i], &reach) ||
                 __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi);
    }
    if (overflow) return invalid(name, where() + " addresses elements beyond the int64 range");
    if (lo < 0 || hi >= storage) {
      return invalid(name, where() + " reaches elements " + std::to_string(lo) + " to " + std::to_string(hi) +
                               " of a storage of " + std::to_string(storage) + " elements (storage shape " +
                               list(t->storage_dims) + ")");
    }
  }
  // The view's first element. A null tensorData stays null so the operator reports it (when it matters).
  void* data = nullptr;
  if (t->data != nullptr) {
    uint64_t skip = 0;
    const uintptr_t base = reinterpret_cast<uintptr_t>(t->data);
    if (__builtin_mul_overflow(static_cast<uint64_t>(t->offset), dtype_size(dt), &skip) || base > UINTPTR_MAX - skip) {
      return invalid(name, where() + " starts past the end of the address space");
    }
    data = reinterpret_cast<void*>(base + skip);
    // NB (issue 6): storageDims are only the caller's claim. When tensorData lies in an aclrtMalloc block,
    // the elements the view reaches must lie in that block too; otherwise an offset could carry the view
    // past the block's end, where it looked like untracked host memory and was read (scalars, phase one)
    // and written (phase two).
    if (numel > 0) {
      if (Status s = check_view_in_block(name, t, dtype_size(dt)); !s) return s;
    }
  }
  *out = TensorView::strided(data, dt, t->view_dims.data(), t->strides.data(), static_cast<int>(rank));
  return Status::ok();
}

}  // namespace nnops::acl

using nnops::acl::fail;
using nnops::acl::guarded;

namespace {

template <class T>
T* create_failed(const char* api, const std::string& what) {
  return fail(static_cast<T*>(nullptr), api, what);
}

template <class Obj>
aclnnStatus destroy(const char* api, const Obj* obj) {
  return nnops::acl::guard_aclnn(api, [&]() -> aclnnStatus {
    delete obj;
    return ACLNN_SUCCESS;
  });
}

// Copies one of the dims arrays CANN getters hand out with new[].
aclnnStatus copy_out(const char* api, const aclTensor* t, const std::vector<int64_t>& v, int64_t** out, uint64_t* n,
                     const char* out_name, const char* n_name) {
  if (t == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, api, "tensor is null");
  if (out == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, api, std::string(out_name) + " is null");
  if (n == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, api, std::string(n_name) + " is null");
  int64_t* a = new (std::nothrow) int64_t[v.empty() ? 1 : v.size()];
  if (a == nullptr) return fail(ACLNN_ERR_INNER_NULLPTR, api, "out of memory");
  std::copy(v.begin(), v.end(), a);
  *out = a;
  *n = v.size();
  return ACLNN_SUCCESS;
}

template <class Array, class T>
Array* create_array(const char* api, const T* value, uint64_t size) {
  return guarded<Array*>(api, nullptr, nullptr, [&]() -> Array* {
    if (value == nullptr && size > 0)
      return create_failed<Array>(api, "value is null but size is " + std::to_string(size));
    auto a = std::make_unique<Array>();
    a->values.assign(value, value + size);
    return a.release();
  });
}

template <class Array>
aclnnStatus array_size(const char* api, const Array* a, uint64_t* size) {
  return nnops::acl::guard_aclnn(api, [&]() -> aclnnStatus {
    if (a == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, api, "array is null");
    if (size == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, api, "size is null");
    *size = a->values.size();
    return ACLNN_SUCCESS;
  });
}

}  // namespace

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t* stride,
                           int64_t offset, aclFormat format, const int64_t* storageDims, uint64_t storageDimsNum,
                           void* tensorData) {
  const char* api = "aclCreateTensor";
  return guarded<aclTensor*>(api, nullptr, nullptr, [&]() -> aclTensor* {
    if (viewDimsNum > nnops::acl::kMaxCreateDims || storageDimsNum > nnops::acl::kMaxCreateDims) {
      return create_failed<aclTensor>(api, "viewDimsNum " + std::to_string(viewDimsNum) + " / storageDimsNum " +
                                               std::to_string(storageDimsNum) + ": nnops supports at most " +
                                               std::to_string(nnops::kMaxRank) + " dims");
    }
    if (viewDims == nullptr && viewDimsNum > 0) return create_failed<aclTensor>(api, "viewDims is null");
    if (stride == nullptr && viewDimsNum > 0) return create_failed<aclTensor>(api, "stride is null");
    if (storageDims == nullptr && storageDimsNum > 0) return create_failed<aclTensor>(api, "storageDims is null");
    auto t = std::make_unique<aclTensor>();
    t->view_dims.assign(viewDims, viewDims + viewDimsNum);
    t->strides.assign(stride, stride + viewDimsNum);
    t->storage_dims.assign(storageDims, storageDims + storageDimsNum);
    t->offset = offset;
    t->dtype = nnops::acl::enum_int(dataType);
    t->format = nnops::acl::enum_int(format);
    t->data = tensorData;
    return t.release();
  });
}

aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
  const char* api = "aclCreateScalar";
  return guarded<aclScalar*>(api, nullptr, nullptr, [&]() -> aclScalar* {
    if (value == nullptr) return create_failed<aclScalar>(api, "value is null");
    const int dt = nnops::acl::enum_int(dataType);
    const size_t n = nnops::acl::dtype_bytes(dt);
    if (n == 0) {
      return create_failed<aclScalar>(
          api, std::string("dtype ") + nnops::acl::dtype_name(dt) + " has no byte size; a scalar needs one");
    }
    auto s = std::make_unique<aclScalar>();
    s->dtype = dt;
    s->bytes.resize(n);
    std::memcpy(s->bytes.data(), value, n);
    return s.release();
  });
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  return create_array<aclIntArray>("aclCreateIntArray", value, size);
}
aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size) {
  return create_array<aclFloatArray>("aclCreateFloatArray", value, size);
}
aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
  return create_array<aclBoolArray>("aclCreateBoolArray", value, size);
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  if (tensor != nullptr && tensor->magic != aclTensor::kMagic) {
    return fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyTensor", "tensor is not a live aclTensor (destroyed twice?)");
  }
  if (tensor != nullptr) const_cast<aclTensor*>(tensor)->magic = 0;  // catches most double destroys
  return destroy("aclDestroyTensor", tensor);
}
aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
  if (scalar != nullptr && scalar->magic != aclScalar::kMagic) {
    return fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyScalar", "scalar is not a live aclScalar (destroyed twice?)");
  }
  if (scalar != nullptr) const_cast<aclScalar*>(scalar)->magic = 0;
  return destroy("aclDestroyScalar", scalar);
}
aclnnStatus aclDestroyIntArray(const aclIntArray* array) { return destroy("aclDestroyIntArray", array); }
aclnnStatus aclDestroyFloatArray(const aclFloatArray* array) { return destroy("aclDestroyFloatArray", array); }
aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) { return destroy("aclDestroyBoolArray", array); }

aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
  const char* api = "aclGetViewShape";
  return nnops::acl::guard_aclnn(api, [&] {
    return copy_out(api, tensor, tensor ? tensor->view_dims : std::vector<int64_t>{}, viewDims, viewDimsNum, "viewDims",
                    "viewDimsNum");
  });
}
aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum) {
  const char* api = "aclGetStorageShape";
  return nnops::acl::guard_aclnn(api, [&] {
    return copy_out(api, tensor, tensor ? tensor->storage_dims : std::vector<int64_t>{}, storageDims, storageDimsNum,
                    "storageDims", "storageDimsNum");
  });
}
aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum) {
  const char* api = "aclGetViewStrides";
  return nnops::acl::guard_aclnn(api, [&] {
    return copy_out(api, tensor, tensor ? tensor->strides : std::vector<int64_t>{}, stridesValue, stridesNum,
                    "stridesValue", "stridesNum");
  });
}

aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
  if (tensor == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset", "tensor is null");
  if (offset == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset", "offset is null");
  *offset = tensor->offset;
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  if (tensor == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat", "tensor is null");
  if (format == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat", "format is null");
  nnops::acl::store_enum(format, tensor->format);
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  if (tensor == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType", "tensor is null");
  if (dataType == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType", "dataType is null");
  nnops::acl::store_enum(dataType, tensor->dtype);
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetRawTensorAddr(const aclTensor* tensor, void** addr) {
  if (tensor == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetRawTensorAddr", "tensor is null");
  if (addr == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetRawTensorAddr", "addr is null");
  *addr = tensor->data;
  return ACLNN_SUCCESS;
}
aclnnStatus aclSetRawTensorAddr(aclTensor* tensor, void* addr) {
  if (tensor == nullptr) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclSetRawTensorAddr", "tensor is null");
  tensor->data = addr;
  return ACLNN_SUCCESS;
}

aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size) {
  return array_size("aclGetIntArraySize", array, size);
}
aclnnStatus aclGetFloatArraySize(const aclFloatArray* array, uint64_t* size) {
  return array_size("aclGetFloatArraySize", array, size);
}
aclnnStatus aclGetBoolArraySize(const aclBoolArray* array, uint64_t* size) {
  return array_size("aclGetBoolArraySize", array, size);
}

size_t aclDataTypeSize(aclDataType dataType) { return nnops::acl::dtype_bytes(nnops::acl::enum_int(dataType)); }

}  // extern "C"
