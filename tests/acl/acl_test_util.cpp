#include "tests/acl/acl_test_util.hpp"

#include <cstdlib>
#include <cstring>

namespace nnops::acl_test {

void AclTest::SetUp() {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << recent_error();
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << recent_error();
  recent_error();  // start every test with no pending message
}

void AclTest::TearDown() {
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS) << recent_error();
  recent_error();
}

std::string recent_error() {
  const char* m = aclGetRecentErrMsg();
  return m ? m : "";
}

DevTensor::DevTensor(aclDataType dtype, std::vector<int64_t> shape, const void* host) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  bytes_ = static_cast<std::size_t>(n) * aclDataTypeSize(dtype);
  if (bytes_ > 0) {
    EXPECT_EQ(aclrtMalloc(&device_, bytes_, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << recent_error();
    if (host != nullptr) {
      EXPECT_EQ(aclrtMemcpy(device_, bytes_, host, bytes_, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS) << recent_error();
    } else {
      EXPECT_EQ(aclrtMemset(device_, bytes_, 0, bytes_), ACL_SUCCESS) << recent_error();
    }
  }
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  tensor_ = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                            shape.size(), device_);
  EXPECT_NE(tensor_, nullptr) << recent_error();
}

DevTensor::DevTensor(const detail::HostBuffer& b)
    : DevTensor(acl_dtype(b.dtype()), b.shape(), b.bytes() ? b.data() : nullptr) {}

DevTensor::~DevTensor() {
  aclDestroyTensor(tensor_);
  if (device_ != nullptr) aclrtFree(device_);
}

std::vector<unsigned char> DevTensor::read() const {
  std::vector<unsigned char> out(bytes_);
  if (bytes_ > 0) {
    EXPECT_EQ(aclrtMemcpy(out.data(), out.size(), device_, bytes_, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS)
        << recent_error();
  }
  return out;
}

void DevTensor::free_block() {
  EXPECT_EQ(aclrtFree(device_), ACL_SUCCESS) << recent_error();
  device_ = nullptr;
}

DeviceProblem::DeviceProblem(const ops::Problem& p, int main, int64_t g) : groups(g) {
  for (const detail::HostBuffer& b : p.t) t.push_back(std::make_unique<DevTensor>(b));
  const std::vector<int64_t>& s = p.t[main].shape();
  n = s.size() > 0 ? s[0] : 0;
  c = s.size() > 1 ? s[1] : 0;
  for (std::size_t i = 2; i < s.size(); ++i) hw *= s[i];
}

std::vector<aclTensor*> DeviceProblem::all() const {
  std::vector<aclTensor*> a;
  for (const auto& d : t) a.push_back(*d);
  return a;
}

aclnnStatus launch(LaunchFn fn, uint64_t ws, aclOpExecutor* e, aclrtStream stream) {
  void* w = nullptr;
  if (ws > 0 && aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return ACLNN_ERR_INNER;
  const aclnnStatus st = fn(w, ws, e, stream);
  if (aclrtSynchronizeStream(stream) != ACL_SUCCESS) ADD_FAILURE() << recent_error();
  if (w) aclrtFree(w);
  return st;
}

std::vector<unsigned char> host_bytes(const detail::HostBuffer& b) {
  const auto* p = static_cast<const unsigned char*>(b.data());
  return std::vector<unsigned char>(p, p + b.bytes());
}

ScopedThreads::ScopedThreads(int n) {
  if (const char* v = std::getenv("NNOPS_NUM_THREADS")) {
    had_ = true;
    old_ = v;
  }
  setenv("NNOPS_NUM_THREADS", std::to_string(n).c_str(), 1);
}

ScopedThreads::~ScopedThreads() {
  if (had_) {
    setenv("NNOPS_NUM_THREADS", old_.c_str(), 1);
  } else {
    unsetenv("NNOPS_NUM_THREADS");
  }
}

}  // namespace nnops::acl_test
