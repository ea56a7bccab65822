// GroupNormalizationGrad through the CANN-compatible C API, in the style of a CANN aclnn sample: init,
// allocate device memory, copy inputs in, create tensors, the two phases, synchronize, copy the result
// back, compare with a float64 reference, clean up. Prints [PASS] or [FAIL]. Builds unchanged against a
// CANN toolkit (nothing here is nnops-specific).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_group_normalization_grad.h"

#define CHECK_RET(cond, on_fail) \
  do {                           \
    if (!(cond)) {               \
      on_fail;                   \
    }                            \
  } while (0)

#define LOG_PRINT(...) std::printf(__VA_ARGS__)

static int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Copies host data into a new device block and wraps it in a contiguous ND tensor.
template <typename T>
static int MakeDeviceTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dtype,
                            void** device, aclTensor** tensor) {
  const size_t bytes = host.size() * sizeof(T);
  aclError ret = aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed: %d %s\n", ret, aclGetRecentErrMsg()); return ret);
  ret = aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed: %d %s\n", ret, aclGetRecentErrMsg()); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                            shape.size(), *device);
  CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return 1);
  return 0;
}

int main() {
  const int32_t deviceId = 0;
  aclrtStream stream = nullptr;
  aclError ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed: %d\n", ret); return 1);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed: %d\n", ret); return 1);
  ret = aclrtCreateStream(&stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed: %d\n", ret); return 1);

  // N = 2 samples, G = 2 groups, each group 3 x 64 x 64 = 12288 elements: few large groups, so with
  // several threads the call splits groups and asks for a workspace.
  const std::vector<int64_t> xShape = {2, 2, 3, 64, 64};
  const std::vector<int64_t> statShape = {2, 2};
  const int64_t n = Numel(xShape), groups = Numel(statShape), M = n / groups;
  std::vector<float> x(n), dy(n), gamma(n), mean(groups), rstd(groups), dx(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i)) * 3.0 + 0.5);
    dy[i] = static_cast<float>(std::cos(0.003 * static_cast<double>(i)));
    gamma[i] = 1.0f + 0.25f * static_cast<float>(i % 7);
  }
  for (int64_t g = 0; g < groups; ++g) {  // the statistics a forward pass would have produced
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < M; ++i) s += x[g * M + i];
    const double mu = s / M;
    for (int64_t i = 0; i < M; ++i) s2 += (x[g * M + i] - mu) * (x[g * M + i] - mu);
    mean[g] = static_cast<float>(mu);
    rstd[g] = static_cast<float>(1.0 / std::sqrt(s2 / M + 1e-5));
  }

  void *xDev = nullptr, *dyDev = nullptr, *gammaDev = nullptr, *meanDev = nullptr, *rstdDev = nullptr, *dxDev = nullptr;
  aclTensor *xT = nullptr, *dyT = nullptr, *gammaT = nullptr, *meanT = nullptr, *rstdT = nullptr, *dxT = nullptr;
  CHECK_RET(MakeDeviceTensor(x, xShape, ACL_FLOAT, &xDev, &xT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(dy, xShape, ACL_FLOAT, &dyDev, &dyT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(gamma, xShape, ACL_FLOAT, &gammaDev, &gammaT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(mean, statShape, ACL_FLOAT, &meanDev, &meanT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(rstd, statShape, ACL_FLOAT, &rstdDev, &rstdT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(dx, xShape, ACL_FLOAT, &dxDev, &dxT) == 0, return 1);

  // Phase one: validate and plan; phase two: launch on the stream.
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnGroupNormalizationGradGetWorkspaceSize(xT, dyT, gammaT, meanT, rstdT, dxT, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnGroupNormalizationGradGetWorkspaceSize failed: %d\n%s\n", ret, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("workspace aclrtMalloc failed: %d\n", ret); return 1);
  }
  ret = aclnnGroupNormalizationGrad(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGroupNormalizationGrad failed: %d\n%s\n", ret, aclGetRecentErrMsg());
            return 1);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed: %d\n%s\n", ret, aclGetRecentErrMsg());
            return 1);
  ret = aclrtMemcpy(dx.data(), dx.size() * sizeof(float), dxDev, dx.size() * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy back failed: %d\n", ret); return 1);

  // Float64 reference of dx = (rstd/M) * gamma * (M*dy - s1 - xhat*s2). The allowed error follows the size
  // of the terms that cancel (float32 arithmetic: a few units of 2^-24 of the largest term).
  int64_t bad = 0;
  double worst = 0;
  for (int64_t g = 0; g < groups; ++g) {
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < M; ++i) {
      const int64_t k = g * M + i;
      const double xhat = (static_cast<double>(x[k]) - mean[g]) * rstd[g];
      s1 += static_cast<double>(dy[k]) * gamma[k];
      s2 += static_cast<double>(dy[k]) * gamma[k] * xhat;
    }
    for (int64_t i = 0; i < M; ++i) {
      const int64_t k = g * M + i;
      const double xhat = (static_cast<double>(x[k]) - mean[g]) * rstd[g];
      const double c = rstd[g] / static_cast<double>(M);
      const double ref = c * gamma[k] * (M * static_cast<double>(dy[k]) - s1 - xhat * s2);
      const double scale = c * std::fabs(gamma[k]) * (M * std::fabs(dy[k]) + std::fabs(s1) + std::fabs(xhat * s2));
      const double err = std::fabs(dx[k] - ref), tol = 1e-6 * scale + 1e-30;
      if (err > tol) ++bad;
      if (err / tol > worst) worst = err / tol;
    }
  }
  LOG_PRINT("workspaceSize = %llu bytes\n", static_cast<unsigned long long>(workspaceSize));
  LOG_PRINT("dx[0] = %.8g, dx[%lld] = %.8g\n", dx[0], static_cast<long long>(n - 1), dx[n - 1]);
  LOG_PRINT("%s %lld of %lld elements outside the bound (worst error/bound %.3g)\n", bad == 0 ? "[PASS]" : "[FAIL]",
            static_cast<long long>(bad), static_cast<long long>(n), worst);

  aclDestroyTensor(xT);
  aclDestroyTensor(dyT);
  aclDestroyTensor(gammaT);
  aclDestroyTensor(meanT);
  aclDestroyTensor(rstdT);
  aclDestroyTensor(dxT);
  aclrtFree(xDev);
  aclrtFree(dyDev);
  aclrtFree(gammaDev);
  aclrtFree(meanDev);
  aclrtFree(rstdDev);
  aclrtFree(dxDev);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
