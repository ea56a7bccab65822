// aclTensor, aclScalar and the arrays: creation, getters, destruction.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "aclnn/aclnn_base.h"
#include "tests/acl/acl_test_util.hpp"

namespace nnops::acl_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(AclTensor, CreateKeepsWhatItWasGiven) {
  const int64_t view[] = {2, 3}, strides[] = {1, 2}, storage[] = {8};
  float data[8] = {};
  aclTensor* t = aclCreateTensor(view, 2, ACL_BF16, strides, 1, ACL_FORMAT_NCL, storage, 1, data);
  ASSERT_NE(t, nullptr);

  int64_t* dims = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(aclGetViewShape(t, &dims, &n), ACLNN_SUCCESS);
  EXPECT_THAT(std::vector<int64_t>(dims, dims + n), ElementsAre(2, 3));
  delete[] dims;  // as CANN documents
  ASSERT_EQ(aclGetViewStrides(t, &dims, &n), ACLNN_SUCCESS);
  EXPECT_THAT(std::vector<int64_t>(dims, dims + n), ElementsAre(1, 2));
  delete[] dims;
  ASSERT_EQ(aclGetStorageShape(t, &dims, &n), ACLNN_SUCCESS);
  EXPECT_THAT(std::vector<int64_t>(dims, dims + n), ElementsAre(8));
  delete[] dims;
  int64_t offset = 0;
  ASSERT_EQ(aclGetViewOffset(t, &offset), ACLNN_SUCCESS);
  EXPECT_EQ(offset, 1);
  aclFormat f = ACL_FORMAT_UNDEFINED;
  ASSERT_EQ(aclGetFormat(t, &f), ACLNN_SUCCESS);
  EXPECT_EQ(f, ACL_FORMAT_NCL);
  aclDataType dt = ACL_DT_UNDEFINED;
  ASSERT_EQ(aclGetDataType(t, &dt), ACLNN_SUCCESS);
  EXPECT_EQ(dt, ACL_BF16);
  void* addr = nullptr;
  ASSERT_EQ(aclGetRawTensorAddr(t, &addr), ACLNN_SUCCESS);
  EXPECT_EQ(addr, data);
  ASSERT_EQ(aclSetRawTensorAddr(t, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclGetRawTensorAddr(t, &addr), ACLNN_SUCCESS);
  EXPECT_EQ(addr, nullptr);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(AclTensor, ScalarTensorHasNoDims) {
  float v = 2;
  aclTensor* t = aclCreateTensor(nullptr, 0, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, &v);
  ASSERT_NE(t, nullptr);
  int64_t* dims = nullptr;
  uint64_t n = 7;
  ASSERT_EQ(aclGetViewShape(t, &dims, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 0u);
  delete[] dims;
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(AclTensor, CreateFailsOnlyOnArraysItCannotRead) {
  const int64_t dims[] = {2};
  recent_error();
  EXPECT_EQ(aclCreateTensor(nullptr, 1, ACL_FLOAT, dims, 0, ACL_FORMAT_ND, dims, 1, nullptr), nullptr);
  EXPECT_THAT(recent_error(), HasSubstr("aclCreateTensor: viewDims is null"));
  EXPECT_EQ(aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, nullptr), nullptr);
  EXPECT_THAT(recent_error(), HasSubstr("stride is null"));
  EXPECT_EQ(aclCreateTensor(dims, 1, ACL_FLOAT, dims, 0, ACL_FORMAT_ND, nullptr, 1, nullptr), nullptr);
  EXPECT_THAT(recent_error(), HasSubstr("storageDims is null"));
  EXPECT_EQ(aclCreateTensor(dims, 1000, ACL_FLOAT, dims, 0, ACL_FORMAT_ND, dims, 1, nullptr), nullptr);
  EXPECT_THAT(recent_error(), HasSubstr("at most 8 dims"));
  // Everything else is the operator's business (phase one names the argument).
  aclTensor* t = aclCreateTensor(dims, 1, ACL_INT32, dims, -5, ACL_FORMAT_FRACTAL_NZ, dims, 1, nullptr);
  EXPECT_NE(t, nullptr);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(AclTensor, GettersRejectNullPointers) {
  const int64_t dims[] = {2};
  aclTensor* t = aclCreateTensor(dims, 1, ACL_FLOAT, dims, 0, ACL_FORMAT_ND, dims, 1, nullptr);
  int64_t* out = nullptr;
  uint64_t n = 0;
  EXPECT_EQ(aclGetViewShape(nullptr, &out, &n), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetViewShape(t, nullptr, &n), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetViewShape(t, &out, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_THAT(recent_error(), HasSubstr("aclGetViewShape: viewDimsNum is null"));
  EXPECT_EQ(aclGetDataType(t, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetFormat(nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetViewOffset(t, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_SUCCESS);
  recent_error();
}

TEST(AclScalar, CopiesTheValue) {
  double v = 1.5;
  aclScalar* s = aclCreateScalar(&v, ACL_DOUBLE);
  ASSERT_NE(s, nullptr);
  v = 0;
  EXPECT_EQ(aclDestroyScalar(s), ACLNN_SUCCESS);
  EXPECT_EQ(aclCreateScalar(nullptr, ACL_FLOAT), nullptr);
  EXPECT_THAT(recent_error(), HasSubstr("value is null"));
  EXPECT_EQ(aclCreateScalar(&v, ACL_STRING), nullptr);
  EXPECT_THAT(recent_error(), HasSubstr("ACL_STRING has no byte size"));
  EXPECT_EQ(aclDestroyScalar(nullptr), ACLNN_SUCCESS);
}

TEST(AclArrays, CreateSizeDestroy) {
  const int64_t ints[] = {1, 2, 3};
  const float floats[] = {0.5f};
  const bool bools[] = {true, false};
  aclIntArray* ia = aclCreateIntArray(ints, 3);
  aclFloatArray* fa = aclCreateFloatArray(floats, 1);
  aclBoolArray* ba = aclCreateBoolArray(bools, 2);
  aclIntArray* empty = aclCreateIntArray(nullptr, 0);
  ASSERT_TRUE(ia && fa && ba && empty);
  uint64_t n = 0;
  EXPECT_EQ(aclGetIntArraySize(ia, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(aclGetFloatArraySize(fa, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(aclGetBoolArraySize(ba, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(aclGetIntArraySize(empty, &n), ACLNN_SUCCESS);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(aclGetIntArraySize(nullptr, &n), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetIntArraySize(ia, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclCreateFloatArray(nullptr, 4), nullptr);
  EXPECT_THAT(recent_error(), HasSubstr("value is null but size is 4"));
  EXPECT_EQ(aclDestroyIntArray(ia), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyFloatArray(fa), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(empty), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyBoolArray(nullptr), ACLNN_SUCCESS);
  recent_error();
}

}  // namespace
}  // namespace nnops::acl_test
