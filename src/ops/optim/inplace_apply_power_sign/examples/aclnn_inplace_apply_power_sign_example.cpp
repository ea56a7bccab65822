// InplaceApplyPowerSign through the CANN-compatible C API, in the style of a CANN aclnn sample, with
// float16 parameters: init, device memory, tensors, the two phases for three optimizer steps on one
// stream, synchronize, copy back, compare with a float64 reference, clean up. Prints [PASS] or [FAIL].
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_inplace_apply_power_sign.h"

#define CHECK_RET(cond, on_fail) \
  do {                           \
    if (!(cond)) {               \
      on_fail;                   \
    }                            \
  } while (0)

#define LOG_PRINT(...) std::printf(__VA_ARGS__)

// Copies host data into a new device block and wraps it in a contiguous ND tensor.
static int MakeDeviceTensor(const std::vector<aclFloat16>& host, const std::vector<int64_t>& shape, void** device,
                            aclTensor** tensor) {
  const size_t bytes = host.size() * sizeof(aclFloat16);
  aclError ret = aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed: %d %s\n", ret, aclGetRecentErrMsg()); return ret);
  ret = aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed: %d %s\n", ret, aclGetRecentErrMsg()); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT16, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                            shape.size(), *device);
  CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return 1);
  return 0;
}

static double Sign(double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }

int main() {
  const int32_t deviceId = 0;
  aclrtStream stream = nullptr;
  aclError ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed: %d\n", ret); return 1);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed: %d\n", ret); return 1);
  ret = aclrtCreateStream(&stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed: %d\n", ret); return 1);

  const std::vector<int64_t> shape = {64, 512};
  const std::vector<int64_t> one = {1};
  const int64_t n = shape[0] * shape[1];
  const int kSteps = 3;
  std::vector<aclFloat16> var(n), m(n);
  std::vector<std::vector<aclFloat16>> grads(kSteps, std::vector<aclFloat16>(n));
  for (int64_t i = 0; i < n; ++i) {
    var[i] = aclFloatToFloat16(static_cast<float>(std::sin(0.01 * static_cast<double>(i))));
    m[i] = aclFloatToFloat16(static_cast<float>(0.1 * std::cos(0.02 * static_cast<double>(i))));
    for (int s = 0; s < kSteps; ++s) {
      grads[s][i] = aclFloatToFloat16(static_cast<float>(std::sin(0.05 * static_cast<double>(i) + s)));
    }
  }
  const std::vector<aclFloat16> lr = {aclFloatToFloat16(0.01f)}, logbase = {aclFloatToFloat16(1.0f)},
                                signDecay = {aclFloatToFloat16(0.5f)}, beta = {aclFloatToFloat16(0.9f)};

  void *varDev = nullptr, *mDev = nullptr, *lrDev = nullptr, *logbaseDev = nullptr, *signDecayDev = nullptr,
       *betaDev = nullptr;
  aclTensor *varT = nullptr, *mT = nullptr, *lrT = nullptr, *logbaseT = nullptr, *signDecayT = nullptr,
            *betaT = nullptr;
  CHECK_RET(MakeDeviceTensor(var, shape, &varDev, &varT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(m, shape, &mDev, &mT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(lr, one, &lrDev, &lrT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(logbase, one, &logbaseDev, &logbaseT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(signDecay, one, &signDecayDev, &signDecayT) == 0, return 1);
  CHECK_RET(MakeDeviceTensor(beta, one, &betaDev, &betaT) == 0, return 1);
  std::vector<void*> gradDev(kSteps, nullptr);
  std::vector<aclTensor*> gradT(kSteps, nullptr);
  for (int s = 0; s < kSteps; ++s) CHECK_RET(MakeDeviceTensor(grads[s], shape, &gradDev[s], &gradT[s]) == 0, return 1);

  // Three steps, each its own two phases, queued on one stream: they run in order.
  for (int s = 0; s < kSteps; ++s) {
    uint64_t workspaceSize = 0;
    aclOpExecutor* executor = nullptr;
    ret = aclnnInplaceApplyPowerSignGetWorkspaceSize(varT, mT, lrT, logbaseT, signDecayT, betaT, gradT[s], false,
                                                     &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("aclnnInplaceApplyPowerSignGetWorkspaceSize failed: %d\n%s\n", ret, aclGetRecentErrMsg());
              return 1);
    ret = aclnnInplaceApplyPowerSign(nullptr, workspaceSize, executor, stream);  // PowerSign needs no workspace
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnInplaceApplyPowerSign failed: %d\n%s\n", ret, aclGetRecentErrMsg());
              return 1);
  }
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed: %d\n%s\n", ret, aclGetRecentErrMsg());
            return 1);
  std::vector<aclFloat16> varOut(n), mOut(n);
  ret = aclrtMemcpy(varOut.data(), n * sizeof(aclFloat16), varDev, n * sizeof(aclFloat16), ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy back failed: %d\n", ret); return 1);
  ret = aclrtMemcpy(mOut.data(), n * sizeof(aclFloat16), mDev, n * sizeof(aclFloat16), ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy back failed: %d\n", ret); return 1);

  // Float64 reference of the three steps, rounding var and m to float16 after each step as the device
  // does. Each output may differ from it by float16 rounding: allow 2^-10 relative (one ulp) plus the
  // smallest subnormal.
  const double l = aclFloat16ToFloat(lr[0]), lb = aclFloat16ToFloat(logbase[0]), sd = aclFloat16ToFloat(signDecay[0]),
               b = aclFloat16ToFloat(beta[0]);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = aclFloat16ToFloat(var[i]), mm = aclFloat16ToFloat(m[i]);
    for (int s = 0; s < kSteps; ++s) {
      const double g = aclFloat16ToFloat(grads[s][i]);
      const double mNew = b * mm + (1.0 - b) * g;
      const double vNew = v - l * std::exp(lb * sd * Sign(mNew) * Sign(g)) * g;
      mm = aclFloat16ToFloat(aclFloatToFloat16(static_cast<float>(mNew)));
      v = aclFloat16ToFloat(aclFloatToFloat16(static_cast<float>(vNew)));
    }
    const double tolV = std::ldexp(std::fabs(v), -10) + std::ldexp(1.0, -24);
    const double tolM = std::ldexp(std::fabs(mm), -10) + std::ldexp(1.0, -24);
    if (std::fabs(aclFloat16ToFloat(varOut[i]) - v) > tolV || std::fabs(aclFloat16ToFloat(mOut[i]) - mm) > tolM) ++bad;
  }
  LOG_PRINT("var[0] = %.6g, m[0] = %.6g after %d steps\n", aclFloat16ToFloat(varOut[0]), aclFloat16ToFloat(mOut[0]),
            kSteps);
  LOG_PRINT("%s %lld of %lld elements outside one float16 ulp of the reference\n", bad == 0 ? "[PASS]" : "[FAIL]",
            static_cast<long long>(bad), static_cast<long long>(n));

  for (aclTensor* t : {varT, mT, lrT, logbaseT, signDecayT, betaT}) aclDestroyTensor(t);
  for (void* p : {varDev, mDev, lrDev, logbaseDev, signDecayDev, betaDev}) aclrtFree(p);
  for (int s = 0; s < kSteps; ++s) {
    aclDestroyTensor(gradT[s]);
    aclrtFree(gradDev[s]);
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
