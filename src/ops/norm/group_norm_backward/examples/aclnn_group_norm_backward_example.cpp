// GroupNorm forward then GroupNormBackward through the CANN-compatible C API, as a training step does it: the
// forward's meanOut and rstdOut feed the backward, which computes gradInput, gradGammaOut and gradBetaOut.
// Compared with a float64 reference of the true gradient. Prints [PASS] or [FAIL].
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_group_norm.h"
#include "aclnnop/aclnn_group_norm_backward.h"

#define CHECK_RET(cond, on_fail) \
  do {                           \
    if (!(cond)) {               \
      on_fail;                   \
    }                            \
  } while (0)

#define LOG_PRINT(...) std::printf(__VA_ARGS__)

// A contiguous float32 ND tensor in a new device block, filled from host data.
static aclTensor* DeviceTensor(const std::vector<float>& host, const std::vector<int64_t>& shape, void** device) {
  const size_t bytes = host.size() * sizeof(float);
  if (aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return nullptr;
  if (aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) return nullptr;
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                         shape.size(), *device);
}

static std::vector<float> Read(void* device, size_t n) {
  std::vector<float> v(n);
  aclrtMemcpy(v.data(), n * sizeof(float), device, n * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
  return v;
}

// Both phases of one aclnn call with its own workspace, on the stream.
template <class PhaseOne, class PhaseTwo>
static int RunOp(const char* name, PhaseOne one, PhaseTwo two, aclrtStream stream) {
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  aclnnStatus st = one(&ws, &e);
  CHECK_RET(st == ACL_SUCCESS, LOG_PRINT("%s phase one failed: %d\n%s\n", name, st, aclGetRecentErrMsg()); return 1);
  void* w = nullptr;
  if (ws > 0) CHECK_RET(aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, return 1);
  st = two(w, ws, e, stream);
  CHECK_RET(st == ACL_SUCCESS, LOG_PRINT("%s failed: %d\n%s\n", name, st, aclGetRecentErrMsg()); return 1);
  CHECK_RET(aclrtSynchronizeStream(stream) == ACL_SUCCESS, LOG_PRINT("%s: %s\n", name, aclGetRecentErrMsg()); return 1);
  if (w) aclrtFree(w);
  return 0;
}

int main() {
  aclrtStream stream = nullptr;
  CHECK_RET(aclInit(nullptr) == ACL_SUCCESS && aclrtSetDevice(0) == ACL_SUCCESS, return 1);
  CHECK_RET(aclrtCreateStream(&stream) == ACL_SUCCESS, return 1);

  const int64_t N = 2, C = 32, HxW = 100, group = 8, cpg = C / group, M = cpg * HxW;
  const std::vector<int64_t> xShape = {N, C, 10, 10}, cShape = {C}, sShape = {N, group};
  std::vector<float> x(N * C * HxW), dy(x.size()), gamma(C), beta(C), zeros(x.size()), zc(C), zs(N * group);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 2 + 0.01 * static_cast<double>(i % 97));
    dy[i] = static_cast<float>(std::cos(0.11 * static_cast<double>(i)));
  }
  for (int64_t c = 0; c < C; ++c) {
    gamma[c] = 0.5f + 0.05f * static_cast<float>(c);
    beta[c] = -0.1f * static_cast<float>(c % 3);
  }
  void *xD, *gD, *bD, *oD, *mD, *rD, *dyD, *dxD, *dgD, *dbD;
  aclTensor* xT = DeviceTensor(x, xShape, &xD);
  aclTensor* gT = DeviceTensor(gamma, cShape, &gD);
  aclTensor* bT = DeviceTensor(beta, cShape, &bD);
  aclTensor* oT = DeviceTensor(zeros, xShape, &oD);
  aclTensor* mT = DeviceTensor(zs, sShape, &mD);
  aclTensor* rT = DeviceTensor(zs, sShape, &rD);
  aclTensor* dyT = DeviceTensor(dy, xShape, &dyD);
  aclTensor* dxT = DeviceTensor(zeros, xShape, &dxD);
  aclTensor* dgT = DeviceTensor(zc, cShape, &dgD);
  aclTensor* dbT = DeviceTensor(zc, cShape, &dbD);
  CHECK_RET(xT && gT && bT && oT && mT && rT && dyT && dxT && dgT && dbT, LOG_PRINT("tensors failed\n"); return 1);

  auto fwd1 = [&](uint64_t* ws, aclOpExecutor** e) {
    return aclnnGroupNormGetWorkspaceSize(xT, gT, bT, N, C, HxW, group, 1e-5, oT, mT, rT, ws, e);
  };
  CHECK_RET(RunOp("aclnnGroupNorm", fwd1, aclnnGroupNorm, stream) == 0, return 1);
  const bool maskData[3] = {true, true, true};
  aclBoolArray* mask = aclCreateBoolArray(maskData, 3);
  auto bwd1 = [&](uint64_t* ws, aclOpExecutor** e) {
    return aclnnGroupNormBackwardGetWorkspaceSize(dyT, xT, mT, rT, gT, N, C, HxW, group, mask, dxT, dgT, dbT, ws, e);
  };
  CHECK_RET(RunOp("aclnnGroupNormBackward", bwd1, aclnnGroupNormBackward, stream) == 0, return 1);
  const std::vector<float> mean = Read(mD, N * group), rstd = Read(rD, N * group), dx = Read(dxD, x.size()),
                           dg = Read(dgD, C), db = Read(dbD, C);

  // Float64 reference of the true gradient with the forward's (float32) statistics.
  int64_t bad = 0;
  std::vector<double> rdg(C, 0), rdb(C, 0), sdg(C, 0), sdb(C, 0);
  for (int64_t q = 0; q < N * group; ++q) {
    const int64_t g = q % group;
    double a = 0, b = 0;
    for (int64_t i = 0; i < M; ++i) {
      const int64_t k = q * M + i, c = g * cpg + i / HxW;
      const double xhat = (x[k] - static_cast<double>(mean[q])) * rstd[q];
      a += dy[k] * static_cast<double>(gamma[c]);
      b += dy[k] * static_cast<double>(gamma[c]) * xhat;
      rdg[c] += dy[k] * xhat;
      sdg[c] += std::fabs(dy[k] * xhat);
      rdb[c] += dy[k];
      sdb[c] += std::fabs(dy[k]);
    }
    for (int64_t i = 0; i < M; ++i) {
      const int64_t k = q * M + i, c = g * cpg + i / HxW;
      const double xhat = (x[k] - static_cast<double>(mean[q])) * rstd[q];
      const double ref = rstd[q] * (gamma[c] * dy[k] - (a + xhat * b) / M);
      const double scale = rstd[q] * (std::fabs(gamma[c] * dy[k]) + std::fabs(a) / M + std::fabs(xhat * b) / M);
      bad += std::fabs(dx[k] - ref) > std::ldexp(std::fabs(ref), -23) + 8 * std::ldexp(scale, -24);
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    bad += std::fabs(dg[c] - rdg[c]) > std::ldexp(std::fabs(rdg[c]), -23) + 8 * std::ldexp(sdg[c], -24);
    bad += std::fabs(db[c] - rdb[c]) > std::ldexp(std::fabs(rdb[c]), -23) + 8 * std::ldexp(sdb[c], -24);
  }
  LOG_PRINT("gradInput[0] = %.7g, gradGammaOut[0] = %.7g, gradBetaOut[0] = %.7g\n", dx[0], dg[0], db[0]);
  LOG_PRINT("%s %lld values outside their bounds\n", bad == 0 ? "[PASS]" : "[FAIL]", static_cast<long long>(bad));

  aclDestroyBoolArray(mask);
  for (aclTensor* t : {xT, gT, bT, oT, mT, rT, dyT, dxT, dgT, dbT}) aclDestroyTensor(t);
  for (void* p : {xD, gD, bD, oD, mD, rD, dyD, dxD, dgD, dbD}) aclrtFree(p);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  return bad == 0 ? 0 : 1;
}
