// GroupNorm through the CANN-compatible C API, in the style of a CANN aclnn sample: init, device memory,
// tensors, the two phases, synchronize, copy back, compare with a float64 reference, clean up. The input is
// channels-last (NHWC memory described by strides, as PyTorch's channels_last tensors are), which CANN's
// operator accepts as a non-contiguous tensor. Prints [PASS] or [FAIL].
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_group_norm.h"

#define CHECK_RET(cond, on_fail) \
  do {                           \
    if (!(cond)) {               \
      on_fail;                   \
    }                            \
  } while (0)

#define LOG_PRINT(...) std::printf(__VA_ARGS__)

// Copies host data into a new device block and wraps it in an ND tensor with the given strides.
static int MakeDeviceTensor(const std::vector<float>& host, const std::vector<int64_t>& shape,
                            const std::vector<int64_t>& strides, void** device, aclTensor** tensor) {
  const size_t bytes = host.size() * sizeof(float);
  aclError ret = aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed: %d %s\n", ret, aclGetRecentErrMsg()); return ret);
  ret = aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed: %d %s\n", ret, aclGetRecentErrMsg()); return ret);
  const int64_t storage[1] = {static_cast<int64_t>(host.size())};
  *tensor = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND, storage, 1,
                            *device);
  CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return 1);
  return 0;
}

int main() {
  const int32_t deviceId = 0;
  aclrtStream stream = nullptr;
  CHECK_RET(aclInit(nullptr) == ACL_SUCCESS, LOG_PRINT("aclInit failed\n"); return 1);
  CHECK_RET(aclrtSetDevice(deviceId) == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed\n"); return 1);
  CHECK_RET(aclrtCreateStream(&stream) == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed\n"); return 1);

  // x: [N, C, H, W] = [2, 64, 8, 8], 32 groups of 2 channels, stored channels-last: element (n, c, h, w) at
  // ((n * H + h) * W + w) * C + c.
  const int64_t N = 2, C = 64, H = 8, W = 8, HxW = H * W, group = 32;
  const double eps = 1e-5;
  const std::vector<int64_t> xShape = {N, C, H, W}, nhwc = {H * W * C, 1, W * C, C};
  const std::vector<int64_t> cShape = {C}, cStride = {1}, statShape = {N, group}, statStride = {group, 1};
  std::vector<float> x(N * C * HxW), gamma(C), beta(C), out(x.size(), 0.0f), mean(N * group), rstd(N * group);
  auto at = [&](int64_t n, int64_t c, int64_t hw) { return (n * HxW + hw) * C + c; };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t hw = 0; hw < HxW; ++hw)
        x[at(n, c, hw)] = static_cast<float>(std::sin(0.1 * static_cast<double>(c * HxW + hw) + n) * (1 + c % 3) + c);
  for (int64_t c = 0; c < C; ++c) {
    gamma[c] = 1.0f + 0.01f * static_cast<float>(c);
    beta[c] = 0.1f * static_cast<float>(c % 5);
  }

  void *xDev = nullptr, *gDev = nullptr, *bDev = nullptr, *oDev = nullptr, *mDev = nullptr, *rDev = nullptr;
  aclTensor *xT = nullptr, *gT = nullptr, *bT = nullptr, *oT = nullptr, *mT = nullptr, *rT = nullptr;
  CHECK_RET(MakeDeviceTensor(x, xShape, nhwc, &xDev, &xT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(gamma, cShape, cStride, &gDev, &gT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(beta, cShape, cStride, &bDev, &bT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(out, xShape, nhwc, &oDev, &oT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(mean, statShape, statStride, &mDev, &mT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(rstd, statShape, statStride, &rDev, &rT) == 0, return 1);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus st =
      aclnnGroupNormGetWorkspaceSize(xT, gT, bT, N, C, HxW, group, eps, oT, mT, rT, &workspaceSize, &executor);
  CHECK_RET(st == ACL_SUCCESS, LOG_PRINT("aclnnGroupNormGetWorkspaceSize failed: %d\n%s\n", st, aclGetRecentErrMsg());
            return 1);
  void* workspace = nullptr;
  if (workspaceSize > 0) {
    CHECK_RET(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS,
              LOG_PRINT("workspace aclrtMalloc failed\n");
              return 1);
  }
  st = aclnnGroupNorm(workspace, workspaceSize, executor, stream);
  CHECK_RET(st == ACL_SUCCESS, LOG_PRINT("aclnnGroupNorm failed: %d\n%s\n", st, aclGetRecentErrMsg()); return 1);
  CHECK_RET(aclrtSynchronizeStream(stream) == ACL_SUCCESS, LOG_PRINT("sync failed: %s\n", aclGetRecentErrMsg());
            return 1);
  aclrtMemcpy(out.data(), out.size() * 4, oDev, out.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
  aclrtMemcpy(mean.data(), mean.size() * 4, mDev, mean.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
  aclrtMemcpy(rstd.data(), rstd.size() * 4, rDev, rstd.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);

  // Float64 reference (two passes); allowed error: one float32 ulp plus 8 * 2^-24 of the terms' size.
  int64_t bad = 0;
  const int64_t cpg = C / group, M = cpg * HxW;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < group; ++g) {
      double s = 0, ss = 0;
      for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c)
        for (int64_t hw = 0; hw < HxW; ++hw) s += x[at(n, c, hw)];
      const double mu = s / M;
      for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c)
        for (int64_t hw = 0; hw < HxW; ++hw) ss += (x[at(n, c, hw)] - mu) * (x[at(n, c, hw)] - mu);
      const double rs = 1.0 / std::sqrt(ss / M + eps);
      bad += std::fabs(mean[n * group + g] - mu) > 1e-6 * std::fabs(mu) + 1e-7;
      bad += std::fabs(rstd[n * group + g] - rs) > 1e-6 * rs;
      for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c) {
        for (int64_t hw = 0; hw < HxW; ++hw) {
          const double t = (x[at(n, c, hw)] - mu) * rs * gamma[c], ref = t + beta[c];
          const double tol = std::ldexp(std::fabs(ref), -23) + 8 * std::ldexp(std::fabs(t) + std::fabs(beta[c]), -24);
          bad += std::fabs(out[at(n, c, hw)] - ref) > tol;
        }
      }
    }
  }
  LOG_PRINT("mean[0] = %.7g, rstd[0] = %.7g, out[0] = %.7g (workspace %llu bytes)\n", mean[0], rstd[0], out[0],
            static_cast<unsigned long long>(workspaceSize));
  LOG_PRINT("%s %lld values outside their bounds\n", bad == 0 ? "[PASS]" : "[FAIL]", static_cast<long long>(bad));

  for (aclTensor* t : {xT, gT, bT, oT, mT, rT}) aclDestroyTensor(t);
  for (void* p : {xDev, gDev, bDev, oDev, mDev, rDev}) aclrtFree(p);
  if (workspace != nullptr) aclrtFree(workspace);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
