// Helpers for the C-layer tests: a fixture that brings the runtime up and down, device tensors that
// clean up after themselves, the recent error message as a std::string.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "nnops/dtype.hpp"
#include "src/acl/tensor.hpp"
#include "src/core/host_buffer.hpp"
#include "src/ops/op_desc.hpp"

namespace nnops::acl_test {

/// aclInit + aclrtSetDevice(0) before each test, aclFinalize after (which also releases whatever a
/// failing test left behind).
class AclTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
};

/// aclGetRecentErrMsg() as a string (and thereby cleared).
std::string recent_error();

/// The aclDataType of an nnops dtype (src/acl/tensor.hpp).
inline aclDataType acl_dtype(DType t) { return acl::to_acl_dtype(t); }

/// A contiguous ND tensor in its own aclrtMalloc block, optionally filled from host bytes.
class DevTensor {
 public:
  DevTensor(aclDataType dtype, std::vector<int64_t> shape, const void* host = nullptr);
  /// Copies a HostBuffer (dtype and shape too).
  explicit DevTensor(const detail::HostBuffer& b);
  ~DevTensor();
  DevTensor(const DevTensor&) = delete;
  DevTensor& operator=(const DevTensor&) = delete;

  aclTensor* get() const { return tensor_; }
  operator aclTensor*() const { return tensor_; }
  void* device() const { return device_; }
  std::size_t bytes() const { return bytes_; }
  /// Device -> host copy of every byte.
  std::vector<unsigned char> read() const;
  /// Frees the block now (the tensor object stays), e.g. to test use-after-free detection.
  void free_block();

 private:
  aclTensor* tensor_ = nullptr;
  void* device_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A problem's tensors on the device (one DevTensor each), with CANN's [N, C, HxW] split of tensor `main`'s shape
/// and the number of groups (the GroupNorm family's scalar arguments).
struct DeviceProblem {
  std::vector<std::unique_ptr<DevTensor>> t;
  int64_t n = 0, c = 0, hw = 1, groups = 0;
  DeviceProblem(const ops::Problem& p, int main, int64_t groups);
  aclTensor* operator[](int i) const { return *t[i]; }
  std::vector<aclTensor*> all() const;
};

/// Phase two: a workspace of `ws` bytes, `launch`, then a stream synchronization; the launch's status.
using LaunchFn = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);
aclnnStatus launch(LaunchFn fn, uint64_t ws, aclOpExecutor* e, aclrtStream stream);

/// Bytes of a HostBuffer.
std::vector<unsigned char> host_bytes(const detail::HostBuffer& b);

/// Sets NNOPS_NUM_THREADS for the scope (the C API plans with the default Context, which reads it), so
/// tests can force a plan that needs a workspace on any machine.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n);
  ~ScopedThreads();

 private:
  std::string old_;
  bool had_ = false;
};

}  // namespace nnops::acl_test
