// The aclnn objects (aclTensor, aclScalar, arrays) and the conversion of an aclTensor into the
// TensorView the operators' check() takes.
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"

// The opaque C types, completed here (global namespace, as the C headers declare them). A magic word lets
// phase one reject a destroyed or foreign object with a message in the common cases.
struct aclTensor {
  static constexpr uint64_t kMagic = 0x6e6e6f7073546e73ull;  // "nnopsTns"
  uint64_t magic = kMagic;
  std::vector<int64_t> view_dims, strides, storage_dims;
  int64_t offset = 0;
  int dtype = ACL_DT_UNDEFINED;  // ints: callers may pass values outside the enums (see c_enum.hpp)
  int format = ACL_FORMAT_UNDEFINED;
  void* data = nullptr;
};

struct aclScalar {
  static constexpr uint64_t kMagic = 0x6e6e6f70735363ull;
  uint64_t magic = kMagic;
  int dtype = ACL_DT_UNDEFINED;
  std::vector<unsigned char> bytes;
};

struct aclIntArray {
  std::vector<int64_t> values;
};
struct aclFloatArray {
  std::vector<float> values;
};
struct aclBoolArray {
  std::vector<bool> values;
};

namespace nnops::acl {

/// "ACL_FLOAT", "ACL_BF16", ... ("unknown" for values CANN does not define). Takes the aclDataType value.
const char* dtype_name(int t);

/// The nnops dtype of ACL_FLOAT, ACL_FLOAT16, ACL_BF16; false for any other.
bool to_nnops_dtype(int t, DType* out);

/// The aclDataType of an nnops dtype (the inverse of to_nnops_dtype).
aclDataType to_acl_dtype(DType t);

/// aclDataTypeSize of a raw aclDataType value.
std::size_t dtype_bytes(int t);

/// Checks what the operators cannot see in a TensorView (the object itself, dtype, format, rank, that the
/// view stays inside its storage, all in 64-bit arithmetic with overflow treated as invalid) and builds
/// the view: data = tensorData + offset elements, shape and strides as given. Contiguity and everything
/// operator-specific is left to the operator's check(). Messages name the argument.
Status to_view(const char* name, const aclTensor* t, TensorView* out);

}  // namespace nnops::acl
